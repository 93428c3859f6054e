//! The seam between the safe API and the two driver ABIs.
//!
//! This module is the only code in the workspace that names a sys crate. The process loads
//! `libcuda.so.1` once, reads `cuDriverGetVersion`, and picks the CUDA 13 table for 13.x (and
//! newer) drivers and the CUDA 12 table for 12.x; `CUDA_CORE_DRIVER_ABI=12|13` forces one. Code
//! above speaks the version-neutral [`Driver`] trait and the handle types, and nothing else.
//!
//! | file | what it holds |
//! | --- | --- |
//! | `load.rs` | loading `libcuda.so.1`, the version probe, the process's one driver |
//! | `logs.rs` | the driver's log lines, kept per thread for its next driver error |
//! | `handles.rs` | the neutral handle types and the structures both ABIs read |
//! | `api/` | the [`Driver`] trait, one supertrait per area of the driver API |
//! | `shared/` | the implementation of every area, written once, expanded per ABI |
//! | `v12.rs`, `v13.rs` | only what the two headers spell differently |
//! | `nvrtc.rs`, `nvjitlink.rs`, `nvvm.rs` | the glue to NVRTC, nvJitLink and libNVVM |
//! | `nccl/` | the glue to NCCL (feature `nccl`): its generated types and table, its loading |
//! | `nvtx.rs` | the glue to an NVTX tool (feature `nvtx`): NVTX's loader and its slots |
//!
//! NVRTC, nvJitLink and libNVVM are not the driver, yet their glue lives here for two reasons: it is
//! glue to a sys crate (`cuda-nvrtc-sys`), and this module is the only one that names sys
//! crates, so their raw types and status codes end here as they do for the driver's; and which
//! major of them to prefer follows the driver ABI the probe chose, which only this module
//! knows. Above it, `program.rs` and `linker.rs` see compiled bytes, logs and crate errors.
//! NCCL's glue is here for the first reason: its raw types and status codes end here, and the
//! `nccl` module above sees neutral handles, addresses and codes. NVTX's loader is here because
//! it is foreign glue of the same kind: the tool's function pointers and the C layouts it reads
//! end here, and the `nvtx` module above speaks `&str` and neutral handles.

mod api;
#[cfg(test)]
mod enum_codes;
pub(crate) mod handles;
mod load;
pub(crate) mod logs;
#[cfg(feature = "nccl")]
pub(crate) mod nccl;
mod nvjitlink;
mod nvrtc;
#[cfg(feature = "nvtx")]
pub(crate) mod nvtx;
mod nvvm;
mod shared;
mod v12;
mod v13;

#[cfg(test)]
mod tests;

pub(crate) use self::api::copy::{
    MemLocation, MemcpyAttributes, PitchedCopy, PitchedMemory, PitchedSide,
};
pub(crate) use self::api::interop::{
    EXTERNAL_MEMORY_OPAQUE_FD, EXTERNAL_SEMAPHORE_OPAQUE_FD, EXTERNAL_SEMAPHORE_TIMELINE_FD,
};
pub(crate) use self::api::Driver;
pub(crate) use self::api::{AllocationHandle, AllocationSpec, HANDLE_TYPE_POSIX_FD};
pub(crate) use self::api::{
    ArrayHandle, ArraySpec, Copy3dSpec, CopyEnd, CopySide, Im2colSpec, Im2colWideSpec,
    MipmappedArrayHandle, ResourceSpec, TensorMapBytes, TensorSpec, TextureSpec,
};
pub(crate) use self::api::{PointerRange, PoolLocation, PoolSpec};
pub(crate) use self::handles::{
    AccessWindow, ContextHandle, CopyNodeInfo, CopySpec, DevResource, DeviceHandle, EventHandle,
    ExternalMemoryHandle, ExternalSemaphoreHandle, FunctionHandle, GraphExecHandle, GraphHandle,
    GraphNodeHandle, GraphicsHandle, GreenContextHandle, KernelHandle, KernelNodeSpec,
    LaunchExtras, LaunchParams, LibraryHandle, LinkInput, LinkOptions, MemsetSpec, PoolHandle,
    SmInfo, StreamHandle, UpdateResult, UserObjectHandle, WorkqueueInfo,
};
pub(crate) use self::load::{driver, loaded};
pub(crate) use self::nvjitlink::{
    device_runtime_path, jit_link, linker_identity, nvjitlink_info, nvjitlink_links_in_steps,
    JitInput, JitOutput,
};
pub(crate) use self::nvrtc::{
    compile, nvrtc, nvrtc_identity, nvrtc_version, pch_heap_size, set_pch_heap_size,
    toolkit_include_dirs, NvrtcJob, NvrtcOutput, PchCreate, PchOutcome,
};
pub(crate) use self::nvvm::{libdevice, nvvm_compile, nvvm_identity, nvvm_info, NvvmInput};
