//! Memory pools of every kind (device, pinned host, managed), their attributes, and sharing
//! them and their allocations, events and `cuMemAlloc` memory between processes.

use crate::driver::handles::{DevicePtr, EventHandle, PoolHandle};
use crate::error::Result;

/// Where a pool's memory lives (`CUmemLocation`), in neutral form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolLocation {
    /// `CU_MEM_LOCATION_TYPE_NONE` (managed pools only: no preferred location).
    Unspecified,
    /// `CU_MEM_LOCATION_TYPE_DEVICE` and the ordinal.
    Device(i32),
    /// `CU_MEM_LOCATION_TYPE_HOST`.
    Host,
    /// `CU_MEM_LOCATION_TYPE_HOST_NUMA` and the NUMA node.
    HostNuma(i32),
}

impl PoolLocation {
    /// The `CUmemLocationType` code and the id (0 where the driver ignores it).
    pub(crate) fn code(self) -> (u32, i32) {
        match self {
            PoolLocation::Unspecified => (0, 0),
            PoolLocation::Device(ordinal) => (1, ordinal),
            PoolLocation::Host => (2, 0),
            PoolLocation::HostNuma(node) => (3, node),
        }
    }
}

/// What `cuMemPoolCreate` is asked for (`CUmemPoolProps`), in neutral form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolSpec {
    /// `CU_MEM_ALLOCATION_TYPE_MANAGED` rather than `_PINNED`.
    pub(crate) managed: bool,
    pub(crate) location: PoolLocation,
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` rather than `_NONE`.
    pub(crate) posix_fd: bool,
    /// 0: the driver's default.
    pub(crate) max_size: usize,
}

/// What `cuPointerGetAttributes` says of an address another process's memory was imported
/// or opened at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PointerRange {
    /// `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`: where the allocation that holds it starts.
    pub(crate) start: DevicePtr,
    /// `CU_POINTER_ATTRIBUTE_RANGE_SIZE`: the allocation's size in bytes.
    pub(crate) bytes: usize,
    /// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE` (`CUmemorytype`: 1 host, 2 device; 0 where the
    /// driver does not say).
    pub(crate) memory_type: u32,
    /// `CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`: for device memory, the device that holds it.
    pub(crate) device_ordinal: i32,
    /// `CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE`: the pool the allocation is of (null where none).
    pub(crate) pool: PoolHandle,
    /// `CU_POINTER_ATTRIBUTE_IS_MANAGED`: managed memory.
    pub(crate) is_managed: bool,
}

impl PointerRange {
    /// `CU_MEMORYTYPE_DEVICE`.
    pub(crate) const DEVICE_MEMORY: u32 = 2;
}

/// Pools beyond the device's default one, their attributes, and interprocess sharing.
///
/// Every method is prefixed `pool_` or `ipc_`, so that none meets a name of another area's
/// trait on `dyn Driver`.
pub(crate) trait PoolApi {
    /// `cuMemPoolCreate` with `spec`. A managed pool through an ABI whose header lacks
    /// `CU_MEM_ALLOCATION_TYPE_MANAGED` (12.9) is `NotSupported`, without a call.
    fn pool_create(&self, spec: &PoolSpec) -> Result<PoolHandle>;
    /// `cuMemPoolSetAttribute` of an `int` attribute (the reuse policies).
    fn pool_set_i32(&self, pool: PoolHandle, attribute: i32, value: i32) -> Result<()>;
    /// `cuMemPoolGetAttribute` of an `int` attribute.
    fn pool_get_i32(&self, pool: PoolHandle, attribute: i32) -> Result<i32>;
    /// `cuMemPoolTrimTo`.
    fn pool_trim_to(&self, pool: PoolHandle, keep: usize) -> Result<()>;
    /// The current pool of `location` for pinned (`managed` false) or managed memory: a
    /// device's pinned memory through `cuDeviceGetMemPool` (both ABIs), the others through
    /// `cuMemGetMemPool` (the 13 ABI; `NotSupported` through the 12, without a call).
    fn pool_current(&self, location: PoolLocation, managed: bool) -> Result<PoolHandle>;
    /// Makes `pool` that current pool: `cuDeviceSetMemPool`, else `cuMemSetMemPool`.
    fn pool_set_current(
        &self,
        location: PoolLocation,
        managed: bool,
        pool: PoolHandle,
    ) -> Result<()>;
    /// `cuMemPoolExportToShareableHandle` as a POSIX file descriptor, which the caller owns.
    fn ipc_pool_export_fd(&self, pool: PoolHandle) -> Result<i32>;
    /// `cuMemPoolImportFromShareableHandle` of a POSIX file descriptor (which the driver does
    /// not keep: the caller closes it).
    fn ipc_pool_import_fd(&self, fd: i32) -> Result<PoolHandle>;
    /// `cuMemPoolExportPointer`: the 64 bytes of `CUmemPoolPtrExportData`.
    fn ipc_pool_export_pointer(&self, ptr: DevicePtr) -> Result<[u8; 64]>;
    /// `cuMemPoolImportPointer`.
    fn ipc_pool_import_pointer(&self, pool: PoolHandle, data: &[u8; 64]) -> Result<DevicePtr>;
    /// `cuPointerGetAttributes` of `CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`, `_RANGE_SIZE`,
    /// `_MEMORY_TYPE`, `_DEVICE_ORDINAL`, `_MEMPOOL_HANDLE` and `_IS_MANAGED`: the allocation
    /// that holds `ptr`, its kind and its pool.
    fn ipc_pointer_range(&self, ptr: DevicePtr) -> Result<PointerRange>;
    /// `cuIpcGetEventHandle`.
    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; 64]>;
    /// `cuIpcOpenEventHandle` in the current context.
    fn ipc_open_event_handle(&self, handle: &[u8; 64]) -> Result<EventHandle>;
    /// `cuIpcGetMemHandle`.
    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; 64]>;
    /// `cuIpcOpenMemHandle` in the current context, with `CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS`
    /// (the one flag the driver takes).
    fn ipc_open_mem_handle(&self, handle: &[u8; 64]) -> Result<DevicePtr>;
    /// `cuIpcCloseMemHandle`.
    fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()>;
}
