//! The calls of the hot paths (record, query, sync, launch, stream-ordered allocation and
//! copies, and the current-context read they depend on), kept together at the front of the
//! trait object's table: see the parent module.

use std::ffi::c_void;

use crate::driver::handles::{
    ContextHandle, DevicePtr, EventHandle, KernelHandle, LaunchParams, PoolHandle, StreamHandle,
};
use crate::error::Result;

/// The hot paths' driver calls.
pub(crate) trait HotPath {
    /// `cuCtxGetCurrent` for hot paths: `None` where the call failed (then
    /// [`ContextApi::ctx_get_current`](super::ContextApi::ctx_get_current) gives the error).
    /// Returned in registers, where a `Result` (with its large error) goes through memory: this
    /// is what `set_current` and `with_current` call on every use.
    fn ctx_current_or_none(&self) -> Option<ContextHandle>;

    /// `cuEventCreate` in the current context.
    fn event_create(&self, flags: u32) -> Result<EventHandle>;
    /// `cuEventDestroy`.
    fn event_destroy(&self, event: EventHandle) -> Result<()>;
    /// `cuEventRecord`.
    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()>;
    /// `cuEventQuery`: `false` for `CUDA_ERROR_NOT_READY`.
    fn event_query(&self, event: EventHandle) -> Result<bool>;
    /// `cuStreamSynchronize`.
    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()>;
    /// `cuLaunchKernel` of a `CUkernel` (the driver accepts it as a `CUfunction`).
    ///
    /// # Safety
    ///
    /// `args` points to one pointer per kernel parameter, each to a value of that parameter's
    /// size, valid for the call.
    unsafe fn launch_kernel(
        &self,
        kernel: KernelHandle,
        params: &LaunchParams,
        args: *mut *mut c_void,
    ) -> Result<()>;
    /// `cuLaunchKernelEx` with the cluster and cooperative attributes of `params`.
    ///
    /// # Safety
    ///
    /// As for `launch_kernel`.
    unsafe fn launch_kernel_ex(
        &self,
        kernel: KernelHandle,
        params: &LaunchParams,
        args: *mut *mut c_void,
    ) -> Result<()>;
    /// `cuMemAllocFromPoolAsync`.
    fn mem_alloc_from_pool_async(
        &self,
        size: usize,
        pool: PoolHandle,
        stream: StreamHandle,
    ) -> Result<DevicePtr>;
    /// `cuMemFreeAsync`.
    fn mem_free_async(&self, ptr: DevicePtr, stream: StreamHandle) -> Result<()>;
    /// `cuMemcpyHtoDAsync`.
    fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemcpyDtoHAsync`.
    fn memcpy_dtoh_async(
        &self,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemcpyAsync` (unified addressing).
    fn memcpy_async(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;
}
