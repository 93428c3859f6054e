//! The driver through the CUDA 13 header's table (`cuda-sys13`): only what differs from 12.
//!
//! `cuCtxCreate` is `cuCtxCreate_v4(pctx, params, flags, dev)`, called here without
//! execution-affinity or CIG parameters; the UUID comes from `cuDeviceGetUuid` (the 13 header
//! maps nothing over it); `cuKernelGetParamCount` exists (13.1+ drivers export it);
//! `CUmemLocation` puts its `id` in a union; an SM resource also reports
//! its smallest partition and its co-scheduling alignment.

use cuda_sys13::{
    CUdevSmResource, CUmemLocation, CUmemLocationType, CUmemLocation_st__bindgen_ty_1,
};

super::shared::driver_impl!(Driver13, cuda_sys13, Abi::Cuda13);

impl Driver13 {
    fn abi_ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, std::ptr::null_mut(), flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn abi_kernel_get_param_count(&self, kernel: KernelHandle) -> Result<usize> {
        let mut count = 0;
        call!(self.cuKernelGetParamCount(kernel.0.cast(), &mut count))?;
        Ok(count)
    }

    fn abi_device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]> {
        let mut uuid = cuda_sys13::CUuuid::default();
        call!(self.cuDeviceGetUuid(&mut uuid, device))?;
        Ok(uuid.bytes.map(|b| b as u8))
    }
}

/// A device as a memory location.
fn device_location(device: DeviceHandle) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id: device },
    }
}

/// An SM resource's fields.
fn sm_info(sm: &CUdevSmResource) -> SmInfo {
    SmInfo {
        sm_count: sm.smCount,
        min_partition_size: Some(sm.minSmPartitionSize),
        coscheduled_alignment: Some(sm.smCoscheduledAlignment),
    }
}
