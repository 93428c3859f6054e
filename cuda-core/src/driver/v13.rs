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

    fn device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]> {
        let mut uuid = cuda_sys13::CUuuid::default();
        call!(self.cuDeviceGetUuid(&mut uuid, device))?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    fn mem_pool_create(&self, device: DeviceHandle, max_size: usize) -> Result<PoolHandle> {
        use cuda_sys13::*;
        let mut props = CUmemPoolProps {
            allocType: CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location: CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id: device },
            },
            maxSize: max_size,
            ..Default::default()
        };
        let mut pool = std::ptr::null_mut();
        call!(self.cuMemPoolCreate(&mut pool, &mut props))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn mem_pool_set_access(
        &self,
        pool: PoolHandle,
        device: DeviceHandle,
        read_write: bool,
    ) -> Result<()> {
        use cuda_sys13::*;
        let desc = CUmemAccessDesc {
            location: CUmemLocation {
                type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id: device },
            },
            flags: if read_write {
                CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            } else {
                CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE
            },
        };
        call!(self.cuMemPoolSetAccess(pool.0.cast(), &desc, 1))
    }

    fn mem_pool_get_access(&self, pool: PoolHandle, device: DeviceHandle) -> Result<bool> {
        use cuda_sys13::*;
        let mut location = CUmemLocation {
            type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id: device },
        };
        let mut flags = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        call!(self.cuMemPoolGetAccess(&mut flags, pool.0.cast(), &mut location))?;
        Ok(flags == CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    }

    fn sm_resource_info(&self, r: &DevResource) -> SmInfo {
        // SAFETY: an SM resource's union holds its `sm` member.
        let sm = unsafe { resource(r).__bindgen_anon_1.sm };
        SmInfo {
            sm_count: sm.smCount,
            min_partition_size: Some(sm.minSmPartitionSize),
            coscheduled_alignment: Some(sm.smCoscheduledAlignment),
        }
    }
});
