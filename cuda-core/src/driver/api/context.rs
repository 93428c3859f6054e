//! Contexts and the calling thread's current context.

use crate::driver::handles::{ContextHandle, DeviceHandle};
use crate::error::Result;

/// Context creation and the current-context stack.
pub(crate) trait ContextApi {
    /// `cuCtxCreate` (12: `cuCtxCreate_v2`; 13: `cuCtxCreate_v4` without parameters): the
    /// new context, which the driver also pushes current on the calling thread.
    fn ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle>;
    /// `cuCtxDestroy`.
    fn ctx_destroy(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxGetCurrent`.
    fn ctx_get_current(&self) -> Result<ContextHandle>;
    /// `cuCtxSetCurrent`.
    fn ctx_set_current(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxPushCurrent`.
    fn ctx_push_current(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxPopCurrent`.
    fn ctx_pop_current(&self) -> Result<ContextHandle>;
    /// `cuCtxGetDevice` of the current context; `None` when no context is current (the
    /// driver's `CUDA_ERROR_INVALID_CONTEXT`, answered without building an error).
    fn ctx_get_device(&self) -> Result<Option<DeviceHandle>>;
    /// `cuCtxSynchronize` of the current context.
    fn ctx_synchronize(&self) -> Result<()>;
    /// `cuCtxGetStreamPriorityRange` of the current context: `(least, greatest)`.
    fn ctx_get_stream_priority_range(&self) -> Result<(i32, i32)>;
    /// `cuCtxSetLimit` of the current context (`limit`: a `CUlimit`).
    fn ctx_set_limit(&self, limit: u32, value: usize) -> Result<()>;
    /// `cuCtxGetLimit` of the current context.
    fn ctx_get_limit(&self, limit: u32) -> Result<usize>;
    /// `cuCtxSetCacheConfig` of the current context (`config`: a `CUfunc_cache`).
    fn ctx_set_cache_config(&self, config: u32) -> Result<()>;
    /// `cuCtxGetCacheConfig` of the current context: a `CUfunc_cache`.
    fn ctx_get_cache_config(&self) -> Result<u32>;
    /// `cuCtxSetFlags` of the current context (12.1 and newer drivers).
    fn ctx_set_flags(&self, flags: u32) -> Result<()>;
    /// `cuCtxGetFlags` of the current context.
    fn ctx_get_flags(&self) -> Result<u32>;
}
