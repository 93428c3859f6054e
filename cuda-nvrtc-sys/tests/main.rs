//! cuda-nvrtc-sys's integration tests: one binary, one module per area. Discovery is tested
//! over temporary directory layouts; the real NVRTC, nvJitLink and libNVVM of each major where they are
//! installed (`CUDA_CORE_TEST_REQUIRE` makes a missing one fail); the device runtime archive's
//! search likewise over temporary layouts.

mod common;

mod devrt;
mod discovery;
mod environment;
mod headers;
mod nvjitlink_discovery;
mod nvjitlink_env;
mod nvvm;
mod real_nvjitlink;
mod real_nvrtc;
