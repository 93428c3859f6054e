//! [`VmmApi`](crate::driver::api::VmmApi) for both ABIs. The two headers lay the structures
//! out alike; only `CUmemLocation`'s `id` is spelled apart (a union member in 13), which
//! `device_location` of the ABI file writes and `location_id` below reads as the two `int`s
//! both layouts are.

use super::*;

impl Drv {
    /// A `CUmemAllocationProp` of pinned device memory.
    fn allocation_prop(spec: &crate::driver::api::AllocationSpec) -> sys::CUmemAllocationProp {
        let mut prop = sys::CUmemAllocationProp {
            type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: sys::CUmemAllocationHandleType(spec.handle_types),
            location: device_location(spec.device),
            ..Default::default()
        };
        prop.allocFlags.gpuDirectRDMACapable = u8::from(spec.gpu_direct_rdma);
        if spec.compressible {
            prop.allocFlags.compressionType =
                sys::CUmemAllocationCompType::CU_MEM_ALLOCATION_COMP_GENERIC.0 as u8;
        }
        prop
    }

    /// The `id` of a `CUmemLocation`.
    fn location_id(location: sys::CUmemLocation) -> i32 {
        // SAFETY: both headers lay `CUmemLocation` out as two 4-byte integers, the
        // type and then the id (the 13 header's union of the id and a two-byte
        // `localized` starts at the same offset; bindgen asserts the 8 bytes), and any
        // bits are valid integers.
        let [_type, id]: [i32; 2] = unsafe { std::mem::transmute(location) };
        id
    }
}

impl crate::driver::api::VmmApi for Drv {
    fn mem_get_allocation_granularity(
        &self,
        spec: &crate::driver::api::AllocationSpec,
        recommended: bool,
    ) -> Result<usize> {
        use sys::CUmemAllocationGranularity_flags as Flags;
        let prop = Self::allocation_prop(spec);
        let option = if recommended {
            Flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
        } else {
            Flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM
        };
        let mut granularity = 0;
        call!(self.cuMemGetAllocationGranularity(&mut granularity, &prop, option))?;
        Ok(granularity)
    }

    fn mem_address_reserve(&self, size: usize, alignment: usize) -> Result<DevicePtr> {
        let mut ptr = 0;
        call!(self.cuMemAddressReserve(&mut ptr, size, alignment, 0, 0))?;
        Ok(ptr)
    }

    fn mem_address_free(&self, ptr: DevicePtr, size: usize) -> Result<()> {
        call!(self.cuMemAddressFree(ptr, size))
    }

    fn mem_create(&self, size: usize, spec: &crate::driver::api::AllocationSpec) -> Result<u64> {
        let prop = Self::allocation_prop(spec);
        let mut handle = 0;
        call!(self.cuMemCreate(&mut handle, size, &prop, 0))?;
        Ok(handle)
    }

    fn mem_release(&self, handle: u64) -> Result<()> {
        call!(self.cuMemRelease(handle))
    }

    fn mem_map(&self, ptr: DevicePtr, size: usize, offset: usize, handle: u64) -> Result<()> {
        call!(self.cuMemMap(ptr, size, offset, handle, 0))
    }

    fn mem_unmap(&self, ptr: DevicePtr, size: usize) -> Result<()> {
        call!(self.cuMemUnmap(ptr, size))
    }

    fn mem_set_access(
        &self,
        ptr: DevicePtr,
        size: usize,
        access: &[(DeviceHandle, u32)],
    ) -> Result<()> {
        let descs: Vec<sys::CUmemAccessDesc> = access
            .iter()
            .map(|&(device, flags)| sys::CUmemAccessDesc {
                location: device_location(device),
                flags: sys::CUmemAccess_flags(flags),
            })
            .collect();
        call!(self.cuMemSetAccess(ptr, size, descs.as_ptr(), descs.len()))
    }

    fn mem_get_access(&self, device: DeviceHandle, ptr: DevicePtr) -> Result<u32> {
        let location = device_location(device);
        let mut flags = 0;
        call!(self.cuMemGetAccess(&mut flags, &location, ptr))?;
        Ok(u32::try_from(flags).unwrap_or(u32::MAX))
    }

    fn mem_export_to_fd(&self, handle: u64) -> Result<i32> {
        let mut fd: std::ffi::c_int = -1;
        call!(self.cuMemExportToShareableHandle(
            (&mut fd as *mut std::ffi::c_int).cast(),
            handle,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        ))?;
        Ok(fd)
    }

    fn mem_import_from_fd(&self, fd: i32) -> Result<u64> {
        let mut handle = 0;
        // A POSIX file descriptor is passed as the pointer's value.
        call!(self.cuMemImportFromShareableHandle(
            &mut handle,
            fd as isize as *mut std::ffi::c_void,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        ))?;
        Ok(handle)
    }

    fn mem_get_allocation_properties(
        &self,
        handle: u64,
    ) -> Result<crate::driver::api::AllocationSpec> {
        let mut prop = sys::CUmemAllocationProp::default();
        call!(self.cuMemGetAllocationPropertiesFromHandle(&mut prop, handle))?;
        Ok(crate::driver::api::AllocationSpec {
            device: Self::location_id(prop.location),
            handle_types: prop.requestedHandleTypes.0,
            gpu_direct_rdma: prop.allocFlags.gpuDirectRDMACapable != 0,
            compressible: prop.allocFlags.compressionType != 0,
        })
    }

    fn mem_retain_allocation_handle(&self, ptr: DevicePtr) -> Result<u64> {
        let mut handle = 0;
        call!(self.cuMemRetainAllocationHandle(&mut handle, ptr as *mut std::ffi::c_void))?;
        Ok(handle)
    }
}
