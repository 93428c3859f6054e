//! cuda-nvrtc-sys's integration tests: one binary, one module per area. Discovery is tested
//! over temporary directory layouts; the real NVRTC and nvJitLink of each major where they are
//! installed (`CUDA_CORE_REQUIRE_NVRTC` / `CUDA_CORE_REQUIRE_NVJITLINK` make a missing one fail).

mod common;

mod discovery;
mod environment;
mod nvjitlink_discovery;
mod nvjitlink_env;
mod real_nvjitlink;
mod real_nvrtc;
