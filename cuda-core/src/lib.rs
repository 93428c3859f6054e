//! Safe CUDA driver API for Rust, at the driver's own speed, with one binary for CUDA 12 and
//! CUDA 13 drivers.
//!
//! The driver library (`libcuda.so.1`) is loaded at run time, the first time it is needed. Its
//! version picks the function table: the CUDA 13 header's for 13.x drivers, the CUDA 12.9
//! header's for 12.x. `CUDA_CORE_DRIVER_ABI=12` or `13` forces one (12 works on a 13 driver).
//! Nothing needs a CUDA toolkit at build time; NVRTC is found at run time too.
//!
//! ```no_run
//! use cuda_core::{info::driver_info, Device};
//!
//! let info = driver_info()?;
//! println!("driver {} through the {} ABI ({})", info.version, info.abi, info.abi_choice);
//! for device in Device::all()? {
//!     let (major, minor) = device.compute_capability()?;
//!     println!("device {}: {}, compute {major}.{minor}", device.ordinal(), device.name()?);
//! }
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! Without a driver every call returns [`Error::DriverNotFound`], listing the names tried.
//!
//! A program is made of a few objects: a [`Device`] and its [`Context`], [`Stream`]s and
//! [`Event`]s, [`Buffer`]s from a [`MemoryResource`], a [`Program`] compiled into
//! [`ObjectCode`], and [`Kernel`]s run with [`launch()`] or in a [`Graph`]. The [`guide`]
//! explains them beyond one type at a time: [`guide::concepts`] says what the crate does that
//! the CUDA APIs leave to you (stream order across streams, what keeps what alive, recycled
//! handles, captures, the driver ABI, errors), and three chapters port existing code:
//! [`guide::from_cuda_runtime`] (the CUDA runtime API, call by call),
//! [`guide::from_cuda_core_python`] (NVIDIA's Python `cuda.core`) and [`guide::from_cudarc`]
//! (cudarc, and both crates in one program). [`guide::threat_model`] says what the crate
//! trusts.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod args;
pub mod cache;
pub mod checkpoint;
mod completion;
mod context;
pub mod coredump;
mod device;
mod driver;
mod ecosystem;
mod error;
mod event;
// The fuzz targets' way in (`cargo fuzz` builds with `--cfg fuzzing`); no other build has it.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod global;
mod graph;
pub mod guide;
mod image;
pub mod info;
pub mod interop;
pub mod ipc;
mod kernel;
mod launch;
mod lifetime;
mod linker;
pub mod memory;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub mod nccl;
#[cfg(feature = "nvtx")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvtx")))]
pub mod nvtx;
mod object_code;
mod options;
mod order;
pub mod profiler;
mod program;
mod sm_resources;
mod stream;
#[cfg(feature = "nvml")]
#[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
pub mod system;
pub mod tensor_map;
pub mod texture;
mod trust;
mod view;
mod wait;

pub use view::dlpack;

// One public path per item: the core objects a program is made of at the root, each area's
// items in its module only (`cache`, `checkpoint`, `coredump`, `dlpack`, `info`, `ipc`, `memory`, `nccl`,
// `nvtx`, `profiler`, `system`, `tensor_map`, `texture`).
pub use args::{DeviceRepr, GraphArg, KernelArg};
pub use completion::{EventCompletion, StreamCompletion};
pub use context::{
    CacheConfig, Context, ContextFlags, ContextLimit, ContextOptions, Workqueue, WorkqueueResource,
};
pub use device::{Device, DeviceProperties, Uuid};
pub use error::{Cause, DriverCode, Error, Result};
pub use event::{Event, EventOptions};
pub use global::Global;
pub use graph::{
    graph_releases, wait_for_graph_releases, BuildGraph, CaptureMode, CaptureStatus,
    CapturedAllocation, ConditionalHandle, ConditionalKind, ConditionalNode, CopyEnd,
    CopyNodeParams, DeviceGraphExec, DotOptions, FillNodeParams, Graph, GraphAllocation,
    GraphAllocationRange, GraphBody, GraphExec, GraphNode, GraphOptions, KernelNodeParams,
    NodeKind, NodeMemory, Replay, ReplayRecorder, ReplayStats,
};
pub use kernel::{Kernel, KernelAttribute, KernelAttributes, ParamInfo};
pub use launch::{
    launch, launch_recording, AccessPolicyWindow, AccessProperty, ClusterSchedulingPolicy,
    EventTrigger, LaunchAttributes, LaunchConfig, MemorySyncDomain,
};
pub use linker::{nvjitlink_version, Linker, LinkerBackend, LinkerOptions};
pub use memory::buffer::{Buffer, FillPattern, Pod};
pub use memory::device_pool::{DeviceMemoryResource, DeviceMemoryResourceOptions};
pub use memory::device_ptr::DevicePtr;
pub use memory::resource::{Allocate, MemoryResource};
pub use object_code::{CodeType, JitOptions, ObjectCode, PchStatus};
pub use program::{
    nvrtc_version, pch_heap_size, preload_nvrtc, set_pch_heap_size, FastCompile, NvvmModule,
    Program, ProgramKind, ProgramOptions,
};
pub use sm_resources::{
    DeviceResources, SmGroupFlags, SmResource, SmSplit, SmSplitOptions, WorkqueueConfig,
    WorkqueueSharing,
};
pub use stream::{Stream, StreamOptions};
pub use view::{StridedView, ViewMemory};

/// What this crate's macros name (`device_repr!`'s bound); not part of the API.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "bytemuck")]
    pub use bytemuck;
}
// The unit tests' rule for what they cannot run (`CUDA_CORE_TEST_REQUIRE`): the integration
// tests' file, so that both read the same names the same way.
#[cfg(test)]
#[path = "../tests/common/require.rs"]
pub(crate) mod test_support;

/// The crate's README (its page on crates.io), compiled as doctests so that any sample in it
/// stays true. The repository's README is compiled by `benches`, since this crate's package
/// does not carry it.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
