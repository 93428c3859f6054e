//! [`GreenContextApi`](crate::driver::api::GreenContextApi) for both ABIs, and the views of the
//! neutral [`DevResource`](crate::driver::handles::DevResource) as each header's struct.

use super::*;

const _: () = assert!(
    std::mem::size_of::<sys::CUdevResource>() <= std::mem::size_of::<DevResource>()
        && std::mem::align_of::<sys::CUdevResource>() <= std::mem::align_of::<DevResource>()
);

/// The header's view of a neutral resource.
pub(super) fn resource(r: &DevResource) -> &sys::CUdevResource {
    // SAFETY: `DevResource` is at least as large and as aligned (asserted above), and
    // every bit pattern is a valid `CUdevResource` (integers, a union of integers and
    // bytes, and in 13 a raw pointer).
    unsafe { &*(r as *const DevResource).cast::<sys::CUdevResource>() }
}

/// The header's mutable view of a neutral resource.
pub(super) fn resource_mut(r: &mut DevResource) -> &mut sys::CUdevResource {
    // SAFETY: as in `resource`.
    unsafe { &mut *(r as *mut DevResource).cast::<sys::CUdevResource>() }
}

impl crate::driver::api::GreenContextApi for Drv {
    fn sm_resource_info(&self, r: &DevResource) -> SmInfo {
        // SAFETY: an SM resource's union holds its `sm` member.
        sm_info(unsafe { &resource(r).__bindgen_anon_1.sm })
    }

    fn device_get_sm_resource(&self, device: DeviceHandle) -> Result<DevResource> {
        let mut out = DevResource::ZERO;
        call!(self.cuDeviceGetDevResource(
            device,
            resource_mut(&mut out),
            sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
        ))?;
        Ok(out)
    }

    fn ctx_get_sm_resource(&self, ctx: ContextHandle) -> Result<DevResource> {
        let mut out = DevResource::ZERO;
        call!(self.cuCtxGetDevResource(
            ctx.0.cast(),
            resource_mut(&mut out),
            sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
        ))?;
        Ok(out)
    }

    fn sm_resource_split_by_count(
        &self,
        input: &DevResource,
        groups: &mut [DevResource],
        flags: u32,
        min_count: u32,
    ) -> Result<(usize, DevResource)> {
        // The driver writes an array of its own struct: build one, then copy out.
        let mut raw: Vec<sys::CUdevResource> = (0..groups.len())
            .map(|_| *resource(&DevResource::ZERO))
            .collect();
        let mut count = u32::try_from(groups.len()).unwrap_or(u32::MAX);
        let mut remaining = DevResource::ZERO;
        call!(self.cuDevSmResourceSplitByCount(
            raw.as_mut_ptr(),
            &mut count,
            resource(input),
            resource_mut(&mut remaining),
            flags,
            min_count
        ))?;
        let count = (count as usize).min(groups.len());
        for (slot, value) in groups.iter_mut().zip(&raw[..count]) {
            *resource_mut(slot) = *value;
        }
        Ok((count, remaining))
    }

    fn green_ctx_create(
        &self,
        resources: &[DevResource],
        device: DeviceHandle,
    ) -> Result<(GreenContextHandle, ContextHandle)> {
        let mut raw: Vec<sys::CUdevResource> = resources.iter().map(|r| *resource(r)).collect();
        let count = u32::try_from(raw.len()).unwrap_or(u32::MAX);
        let mut desc = std::ptr::null_mut();
        call!(self.cuDevResourceGenerateDesc(&mut desc, raw.as_mut_ptr(), count))?;
        let mut green = std::ptr::null_mut();
        let flags = sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0;
        call!(self.cuGreenCtxCreate(&mut green, desc, device, flags))?;
        let mut ctx = std::ptr::null_mut();
        if let Err(e) = call!(self.cuCtxFromGreenCtx(&mut ctx, green)) {
            let _ = call!(self.cuGreenCtxDestroy(green));
            return Err(e);
        }
        Ok((GreenContextHandle(green.cast()), ContextHandle(ctx.cast())))
    }

    fn device_get_workqueue_config(&self, device: DeviceHandle) -> Result<WorkqueueInfo> {
        self.abi_workqueue_config(device)
    }

    fn ctx_get_workqueue(&self, ctx: ContextHandle) -> Result<DevResource> {
        self.abi_ctx_workqueue(ctx)
    }

    fn workqueue_config_resource(&self, info: WorkqueueInfo) -> Result<DevResource> {
        self.abi_workqueue_config_resource(info)
    }

    fn green_ctx_destroy(&self, green: GreenContextHandle) -> Result<()> {
        call!(self.cuGreenCtxDestroy(green.0.cast()))
    }

    fn green_ctx_stream_create(
        &self,
        green: GreenContextHandle,
        flags: u32,
        priority: i32,
    ) -> Result<StreamHandle> {
        let mut stream = std::ptr::null_mut();
        call!(self.cuGreenCtxStreamCreate(&mut stream, green.0.cast(), flags, priority))?;
        Ok(StreamHandle(stream.cast()))
    }
}
