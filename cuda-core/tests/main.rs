//! cuda-core's integration tests: one binary, one module per area. GPU tests are
//! `#[ignore = "needs a CUDA GPU"]` (two-GPU ones `"needs two CUDA GPUs"`), so a machine
//! without one reports them as ignored; run them with `--include-ignored`. A test that needs a
//! process of its own (a sticky error, a process-wide count, a first load) runs its body in a
//! child of this binary: see `common::alone`.

/// The generated accessor table (`cargo xtask regenerate-bindings`), kept out of rustfmt's
/// reach so that `check-bindings` compares it as generated.
mod attribute_codes {
    include!("generated/attribute_codes.rs");
}
mod common;

mod cache;
mod checkpoint;
mod completion;
mod composition;
mod contexts;
mod copies;
mod coredump;
mod default_resource;
mod device;
mod diagnostics;
mod dlpack;
mod door;
mod driver_info_example;
#[cfg(all(feature = "half", feature = "bytemuck"))]
mod ecosystem;
#[cfg(feature = "float4")]
mod fp4;
#[cfg(feature = "float8")]
mod fp8;
mod globals;
mod graph_conditional;
mod graph_nodes;
mod graph_params;
mod graphs;
mod green_context;
mod hot_path_allocations;
mod inputs;
mod interop;
#[cfg(feature = "fd-passing")]
mod ipc;
mod kernel_effects;
mod launch;
mod linker;
mod managed;
mod memory;
mod model;
mod multi_device;
#[cfg(feature = "nccl")]
mod nccl;
mod nvrtc_preload;
#[cfg(feature = "nvtx")]
mod nvtx;
mod pools;
mod program;
mod program_cache;
mod recycling;
mod replay;
mod samples;
mod sanitizer_clean;
mod slices;
mod sticky_error;
mod stream_event;
#[cfg(feature = "nvml")]
mod system;
mod tensor_map;
mod textures;
mod views;
mod virtual_memory;
