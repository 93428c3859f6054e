//! The [`Driver`] trait: every driver function the safe layer calls, in version-neutral types,
//! one trait per area of the driver API, gathered under [`Driver`]. One implementation per ABI
//! (`v12.rs`, `v13.rs`, from the shared code in `shared/`); where the two headers differ, the
//! difference is settled there.
//!
//! Every method makes exactly the driver call it names and nothing else. Callers hold a
//! `&'static dyn Driver`; the supertraits' methods are callable on it without importing them.
//!
//! [`HotPath`] comes first among the supertraits on purpose: a trait object's table lists the
//! first supertrait's entries first, so the calls of the hot paths share its first cache lines,
//! fewer to reload after a driver call has evicted them (measured on the evicting stand-in: see
//! the benches' README).

mod checkpoint;
mod context;
pub(crate) mod copy;
mod coredump;
mod device;
mod event;
mod graph;
mod green;
mod hot;
pub(crate) mod interop;
pub(crate) mod managed;
mod memory;
mod module;
mod pool;
mod profiler;
mod stream;
mod tensor_map;
mod texture;
mod vmm;

pub(crate) use self::checkpoint::CheckpointApi;
pub(crate) use self::context::ContextApi;
pub(crate) use self::copy::CopyApi;
pub(crate) use self::coredump::CoredumpApi;
pub(crate) use self::device::DeviceApi;
pub(crate) use self::event::EventApi;
pub(crate) use self::graph::GraphApi;
pub(crate) use self::green::GreenContextApi;
pub(crate) use self::hot::HotPath;
pub(crate) use self::interop::InteropApi;
pub(crate) use self::managed::ManagedApi;
pub(crate) use self::memory::MemoryApi;
pub(crate) use self::module::ModuleApi;
pub(crate) use self::pool::{PointerRange, PoolApi, PoolLocation, PoolSpec};
pub(crate) use self::profiler::ProfilerApi;
pub(crate) use self::stream::StreamApi;
pub(crate) use self::tensor_map::{
    Im2colSpec, Im2colWideSpec, TensorMapApi, TensorMapBytes, TensorSpec,
};
pub(crate) use self::texture::{
    ArrayHandle, ArraySpec, Copy3dSpec, CopyEnd, CopySide, MipmappedArrayHandle, ResourceSpec,
    TextureApi, TextureSpec,
};
pub(crate) use self::vmm::{AllocationHandle, AllocationSpec, VmmApi, HANDLE_TYPE_POSIX_FD};

use crate::info::types::{Abi, DriverVersion};

/// The whole driver, through one ABI's function table.
pub(crate) trait Driver:
    HotPath
    + DeviceApi
    + ContextApi
    + StreamApi
    + EventApi
    + MemoryApi
    + ModuleApi
    + GreenContextApi
    + CheckpointApi
    + GraphApi
    + VmmApi
    + CopyApi
    + ManagedApi
    + PoolApi
    + TensorMapApi
    + TextureApi
    + ProfilerApi
    + CoredumpApi
    + InteropApi
    + Send
    + Sync
{
    /// The ABI this table speaks.
    fn abi(&self) -> Abi;
    /// The running driver's version.
    fn version(&self) -> DriverVersion;
    /// `(loaded, declared)`: how many of the header's functions the driver exports.
    fn functions_loaded(&self) -> (usize, usize);
}
