//! Virtual memory management: address reservations, physical allocations, mappings, access,
//! and shareable handles of allocations (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, ...).

use crate::driver::handles::{DeviceHandle, DevicePtr};
use crate::error::Result;

/// A `CUmemGenericAllocationHandle`: a physical allocation.
pub(crate) type AllocationHandle = u64;

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`, as a bit of `requestedHandleTypes`.
pub(crate) const HANDLE_TYPE_POSIX_FD: u32 = 1;

/// A physical allocation's properties (`CUmemAllocationProp` of pinned device memory), in
/// neutral form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AllocationSpec {
    /// The device the memory is on.
    pub(crate) device: DeviceHandle,
    /// `requestedHandleTypes`: `CUmemAllocationHandleType` bits (0: not exportable).
    pub(crate) handle_types: u32,
    /// `allocFlags.gpuDirectRDMACapable`.
    pub(crate) gpu_direct_rdma: bool,
    /// `allocFlags.compressionType` is `CU_MEM_ALLOCATION_COMP_GENERIC`.
    pub(crate) compressible: bool,
}

/// Virtual memory management. Every call is the one it names.
pub(crate) trait VmmApi {
    /// `cuMemGetAllocationGranularity`: the minimum, or with `recommended` the recommended,
    /// granularity of allocations of `spec`.
    fn mem_get_allocation_granularity(
        &self,
        spec: &AllocationSpec,
        recommended: bool,
    ) -> Result<usize>;
    /// `cuMemAddressReserve` of `size` bytes aligned to `alignment` (0: the driver's choice).
    fn mem_address_reserve(&self, size: usize, alignment: usize) -> Result<DevicePtr>;
    /// `cuMemAddressFree`.
    fn mem_address_free(&self, ptr: DevicePtr, size: usize) -> Result<()>;
    /// `cuMemCreate` of `size` bytes of pinned device memory.
    fn mem_create(&self, size: usize, spec: &AllocationSpec) -> Result<AllocationHandle>;
    /// `cuMemRelease`.
    fn mem_release(&self, handle: AllocationHandle) -> Result<()>;
    /// `cuMemMap` of `size` bytes of `handle` from byte `offset` at `ptr`.
    fn mem_map(
        &self,
        ptr: DevicePtr,
        size: usize,
        offset: usize,
        handle: AllocationHandle,
    ) -> Result<()>;
    /// `cuMemUnmap`.
    fn mem_unmap(&self, ptr: DevicePtr, size: usize) -> Result<()>;
    /// `cuMemSetAccess` for each `(device, CUmemAccess_flags)`.
    fn mem_set_access(
        &self,
        ptr: DevicePtr,
        size: usize,
        access: &[(DeviceHandle, u32)],
    ) -> Result<()>;
    /// `cuMemGetAccess` from `device`: its `CUmemAccess_flags`.
    fn mem_get_access(&self, device: DeviceHandle, ptr: DevicePtr) -> Result<u32>;
    /// `cuMemExportToShareableHandle` as a POSIX file descriptor, which the caller owns.
    fn mem_export_to_fd(&self, handle: AllocationHandle) -> Result<i32>;
    /// `cuMemImportFromShareableHandle` of a POSIX file descriptor (which stays the caller's).
    fn mem_import_from_fd(&self, fd: i32) -> Result<AllocationHandle>;
    /// `cuMemGetAllocationPropertiesFromHandle`.
    fn mem_get_allocation_properties(&self, handle: AllocationHandle) -> Result<AllocationSpec>;
    /// `cuMemRetainAllocationHandle` of the allocation mapped at `ptr`.
    fn mem_retain_allocation_handle(&self, ptr: DevicePtr) -> Result<AllocationHandle>;
}
