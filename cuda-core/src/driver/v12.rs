//! The driver through the CUDA 12.9 header's table (`cuda-sys12`).
//!
//! Where its signatures differ from 13's: `cuCtxCreate` is `cuCtxCreate_v2(pctx, flags, dev)`.
//! `cuEventElapsedTime` is the original export (13 maps the name to `cuEventElapsedTime_v2`).

super::abi::driver_impl!(Driver12, cuda_sys12, Abi::Cuda12, {
    fn ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }
});
