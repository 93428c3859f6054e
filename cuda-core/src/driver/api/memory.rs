//! Memory: pools, synchronous allocation, fills (stream-ordered allocation and copies are hot
//! paths).

use std::ffi::c_void;

use crate::driver::handles::{DeviceHandle, DevicePtr, PoolHandle, StreamHandle};
use crate::error::Result;

/// Memory management.
pub(crate) trait MemoryApi {
    /// `cuDeviceGetDefaultMemPool`.
    fn device_get_default_mem_pool(&self, device: DeviceHandle) -> Result<PoolHandle>;
    /// `cuMemPoolCreate` of pinned device memory on `device`; `max_size` 0 is the default.
    fn mem_pool_create(&self, device: DeviceHandle, max_size: usize) -> Result<PoolHandle>;
    /// `cuMemPoolDestroy`.
    fn mem_pool_destroy(&self, pool: PoolHandle) -> Result<()>;
    /// `cuMemPoolSetAccess` for one device: read-write access, or none.
    fn mem_pool_set_access(
        &self,
        pool: PoolHandle,
        device: DeviceHandle,
        read_write: bool,
    ) -> Result<()>;
    /// `cuMemPoolGetAccess` from one device: whether it has read-write access.
    fn mem_pool_get_access(&self, pool: PoolHandle, device: DeviceHandle) -> Result<bool>;
    /// `cuMemPoolSetAttribute` of a 64-bit attribute.
    fn mem_pool_set_u64(&self, pool: PoolHandle, attribute: i32, value: u64) -> Result<()>;
    /// `cuMemPoolGetAttribute` of a 64-bit attribute.
    fn mem_pool_get_u64(&self, pool: PoolHandle, attribute: i32) -> Result<u64>;
    /// `cuMemAlloc` in the current context.
    fn mem_alloc(&self, size: usize) -> Result<DevicePtr>;
    /// `cuMemFree`.
    fn mem_free(&self, ptr: DevicePtr) -> Result<()>;
    /// `cuMemHostAlloc` in the current context.
    fn mem_host_alloc(&self, size: usize, flags: u32) -> Result<*mut c_void>;
    /// `cuMemFreeHost`.
    fn mem_free_host(&self, ptr: *mut c_void) -> Result<()>;
    /// `cuMemHostRegister` of `size` bytes at `ptr` in the current context, with `flags`
    /// (`CU_MEMHOSTREGISTER_*`).
    fn mem_host_register(&self, ptr: *mut c_void, size: usize, flags: u32) -> Result<()>;
    /// `cuMemHostUnregister` of memory registered at `ptr`.
    fn mem_host_unregister(&self, ptr: *mut c_void) -> Result<()>;
    /// `cuMemHostGetDevicePointer` of registered or mapped host memory at `ptr`.
    fn mem_host_get_device_pointer(&self, ptr: *mut c_void) -> Result<DevicePtr>;
    /// `cuMemAllocManaged` in the current context.
    fn mem_alloc_managed(&self, size: usize, flags: u32) -> Result<DevicePtr>;
    /// `cuMemGetInfo` of the current context's device: `(free, total)`.
    fn mem_get_info(&self) -> Result<(usize, usize)>;
    /// `cuMemsetD2D8Async`, `cuMemsetD2D16Async` or `cuMemsetD2D32Async` by the value's width
    /// (`value`: its bits and its bytes, 1, 2 or 4): `extent` is `(width, height)`, rows of
    /// `width` values, `pitch` bytes apart.
    fn memset_2d_async(
        &self,
        dst: DevicePtr,
        pitch: usize,
        value: (u32, usize),
        extent: (usize, usize),
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemsetD8Async`.
    fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemsetD16Async`.
    fn memset_d16_async(
        &self,
        dst: DevicePtr,
        value: u16,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemsetD32Async`.
    fn memset_d32_async(
        &self,
        dst: DevicePtr,
        value: u32,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;
}
