//! [`ContextApi`](crate::driver::api::ContextApi) for both ABIs.

use super::*;

impl crate::driver::api::ContextApi for Drv {
    fn ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        self.abi_ctx_create(flags, device)
    }

    fn ctx_destroy(&self, ctx: ContextHandle) -> Result<()> {
        call!(self.cuCtxDestroy(ctx.0.cast()))
    }

    fn ctx_get_current(&self) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxGetCurrent(&mut ctx))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn ctx_set_current(&self, ctx: ContextHandle) -> Result<()> {
        call!(self.cuCtxSetCurrent(ctx.0.cast()))
    }

    fn ctx_push_current(&self, ctx: ContextHandle) -> Result<()> {
        call!(self.cuCtxPushCurrent(ctx.0.cast()))
    }

    fn ctx_pop_current(&self) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxPopCurrent(&mut ctx))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn ctx_get_device(&self) -> Result<Option<DeviceHandle>> {
        let f = crate::driver::shared::function!(self.cuCtxGetDevice);
        let mut device = 0;
        // SAFETY: a writable out-pointer.
        let status = unsafe { f(&mut device) };
        match status {
            CUresult::CUDA_SUCCESS => Ok(Some(device)),
            CUresult::CUDA_ERROR_INVALID_CONTEXT => Ok(None),
            _ => Err(self.error(status, "cuCtxGetDevice")),
        }
    }

    fn ctx_synchronize(&self) -> Result<()> {
        call!(self.cuCtxSynchronize())
    }

    fn ctx_get_stream_priority_range(&self) -> Result<(i32, i32)> {
        let (mut least, mut greatest) = (0, 0);
        call!(self.cuCtxGetStreamPriorityRange(&mut least, &mut greatest))?;
        Ok((least, greatest))
    }

    fn ctx_set_limit(&self, limit: u32, value: usize) -> Result<()> {
        call!(self.cuCtxSetLimit(sys::CUlimit(limit), value))
    }

    fn ctx_get_limit(&self, limit: u32) -> Result<usize> {
        let mut value = 0;
        call!(self.cuCtxGetLimit(&mut value, sys::CUlimit(limit)))?;
        Ok(value)
    }

    fn ctx_set_cache_config(&self, config: u32) -> Result<()> {
        call!(self.cuCtxSetCacheConfig(sys::CUfunc_cache(config)))
    }

    fn ctx_get_cache_config(&self) -> Result<u32> {
        let mut config = sys::CUfunc_cache(0);
        call!(self.cuCtxGetCacheConfig(&mut config))?;
        Ok(config.0)
    }

    fn ctx_set_flags(&self, flags: u32) -> Result<()> {
        call!(self.cuCtxSetFlags(flags))
    }

    fn ctx_get_flags(&self) -> Result<u32> {
        let mut flags = 0;
        call!(self.cuCtxGetFlags(&mut flags))?;
        Ok(flags)
    }
}
