//! Streams (creation and queries; synchronisation is a hot path).

use std::ffi::c_void;

use crate::driver::handles::{ContextHandle, EventHandle, StreamHandle};
use crate::error::Result;

/// Stream management.
pub(crate) trait StreamApi {
    /// `cuStreamCreate` in the current context, or `cuStreamCreateWithPriority` when a
    /// priority is given (a plain stream is cheaper to make and to use: seen on the H200).
    fn stream_create(&self, flags: u32, priority: Option<i32>) -> Result<StreamHandle>;
    /// `cuStreamDestroy`.
    fn stream_destroy(&self, stream: StreamHandle) -> Result<()>;
    /// `cuStreamQuery`: `false` for `CUDA_ERROR_NOT_READY`.
    fn stream_query(&self, stream: StreamHandle) -> Result<bool>;
    /// `cuStreamWaitEvent`.
    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()>;
    /// `cuStreamGetPriority`.
    fn stream_get_priority(&self, stream: StreamHandle) -> Result<i32>;
    /// `cuStreamGetFlags`.
    fn stream_get_flags(&self, stream: StreamHandle) -> Result<u32>;
    /// `cuStreamGetCtx`.
    fn stream_get_ctx(&self, stream: StreamHandle) -> Result<ContextHandle>;
    /// `cuLaunchHostFunc`: runs `f(data)` on a driver thread once the stream reaches it.
    fn launch_host_func(
        &self,
        stream: StreamHandle,
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<()>;
}
