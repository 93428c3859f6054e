//! The driver through the CUDA 13 header's table (`cuda-sys13`).
//!
//! Where its signatures differ from 12's: `cuCtxCreate` is `cuCtxCreate_v4(pctx, params, flags,
//! dev)`, called here without execution-affinity or CIG parameters.

super::abi::driver_impl!(Driver13, cuda_sys13, Abi::Cuda13, {
    fn ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, std::ptr::null_mut(), flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }
});
