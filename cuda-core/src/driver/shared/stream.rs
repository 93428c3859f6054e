//! [`StreamApi`](crate::driver::api::StreamApi) for both ABIs.

use super::*;

impl crate::driver::api::StreamApi for Drv {
    fn stream_create(&self, flags: u32, priority: Option<i32>) -> Result<StreamHandle> {
        let mut stream = std::ptr::null_mut();
        match priority {
            Some(priority) => call!(self.cuStreamCreateWithPriority(&mut stream, flags, priority))?,
            None => call!(self.cuStreamCreate(&mut stream, flags))?,
        }
        Ok(StreamHandle(stream.cast()))
    }

    fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
        call!(self.cuStreamDestroy(stream.0.cast()))
    }

    fn stream_query(&self, stream: StreamHandle) -> Result<bool> {
        let f = crate::driver::shared::function!(self.cuStreamQuery);
        // SAFETY: the handle is passed by value; the driver validates it.
        let status = unsafe { f(stream.0.cast()) };
        match ready(status) {
            Some(done) => Ok(done),
            None => Err(self.error(status, "cuStreamQuery")),
        }
    }

    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()> {
        call!(self.cuStreamWaitEvent(stream.0.cast(), event.0.cast(), 0))
    }

    fn stream_get_priority(&self, stream: StreamHandle) -> Result<i32> {
        let mut priority = 0;
        call!(self.cuStreamGetPriority(stream.0.cast(), &mut priority))?;
        Ok(priority)
    }

    fn stream_get_flags(&self, stream: StreamHandle) -> Result<u32> {
        let mut flags = 0;
        call!(self.cuStreamGetFlags(stream.0.cast(), &mut flags))?;
        Ok(flags)
    }

    fn stream_get_ctx(&self, stream: StreamHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuStreamGetCtx(stream.0.cast(), &mut ctx))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn launch_host_func(
        &self,
        stream: StreamHandle,
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        data: *mut std::ffi::c_void,
    ) -> Result<()> {
        call!(self.cuLaunchHostFunc(stream.0.cast(), Some(f), data))
    }
}
