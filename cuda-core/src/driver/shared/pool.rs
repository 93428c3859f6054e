//! [`PoolApi`](crate::driver::api::PoolApi) for both ABIs. The ABI files supply
//! `pool_location` (the 13 header puts `CUmemLocation`'s `id` in a union) and
//! `managed_allocation_type` (only the 13 header has `CU_MEM_ALLOCATION_TYPE_MANAGED`).

use super::*;

impl crate::driver::api::PoolApi for Drv {
    fn pool_create(&self, spec: &crate::driver::api::PoolSpec) -> Result<PoolHandle> {
        use sys::CUmemAllocationHandleType as Handles;
        let alloc_type = if spec.managed {
            match managed_allocation_type() {
                Some(managed) => managed,
                None => {
                    return Err(self.missing(
                        "cuMemPoolCreate of managed memory (CU_MEM_ALLOCATION_TYPE_MANAGED: \
                         the CUDA 13 ABI, drivers 13.0 and newer)",
                    ))
                }
            }
        } else {
            sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED
        };
        let (kind, id) = spec.location.code();
        let mut props = sys::CUmemPoolProps {
            allocType: alloc_type,
            handleTypes: if spec.posix_fd {
                Handles::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            } else {
                Handles::CU_MEM_HANDLE_TYPE_NONE
            },
            location: pool_location(kind, id),
            maxSize: spec.max_size,
            ..Default::default()
        };
        let mut pool = std::ptr::null_mut();
        call!(self.cuMemPoolCreate(&mut pool, &mut props))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn pool_set_i32(&self, pool: PoolHandle, attribute: i32, value: i32) -> Result<()> {
        let mut value = value;
        let attribute = sys::CUmemPool_attribute(attribute as _);
        call!(self.cuMemPoolSetAttribute(pool.0.cast(), attribute, (&mut value as *mut i32).cast()))
    }

    fn pool_get_i32(&self, pool: PoolHandle, attribute: i32) -> Result<i32> {
        // Room for eight bytes, zeroed: the driver writes an `int` into the first four.
        let mut value = 0u64;
        let attribute = sys::CUmemPool_attribute(attribute as _);
        call!(self.cuMemPoolGetAttribute(
            pool.0.cast(),
            attribute,
            (&mut value as *mut u64).cast()
        ))?;
        Ok(u32::from_ne_bytes(value.to_ne_bytes()[..4].try_into().unwrap_or([0; 4])) as i32)
    }

    fn pool_trim_to(&self, pool: PoolHandle, keep: usize) -> Result<()> {
        call!(self.cuMemPoolTrimTo(pool.0.cast(), keep))
    }

    fn pool_current(
        &self,
        location: crate::driver::api::PoolLocation,
        managed: bool,
    ) -> Result<PoolHandle> {
        if let (crate::driver::api::PoolLocation::Device(device), false) = (location, managed) {
            let mut pool = std::ptr::null_mut();
            call!(self.cuDeviceGetMemPool(&mut pool, device))?;
            return Ok(PoolHandle(pool.cast()));
        }
        self.abi_mem_get_mem_pool(location, managed)
    }

    fn pool_set_current(
        &self,
        location: crate::driver::api::PoolLocation,
        managed: bool,
        pool: PoolHandle,
    ) -> Result<()> {
        if let (crate::driver::api::PoolLocation::Device(device), false) = (location, managed) {
            return call!(self.cuDeviceSetMemPool(device, pool.0.cast()));
        }
        self.abi_mem_set_mem_pool(location, managed, pool)
    }

    fn ipc_pool_export_fd(&self, pool: PoolHandle) -> Result<i32> {
        let mut fd: std::ffi::c_int = -1;
        call!(self.cuMemPoolExportToShareableHandle(
            (&mut fd as *mut std::ffi::c_int).cast(),
            pool.0.cast(),
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        ))?;
        Ok(fd)
    }

    fn ipc_pool_import_fd(&self, fd: i32) -> Result<PoolHandle> {
        let mut pool = std::ptr::null_mut();
        // The POSIX handle is passed as the pointer's value, not through it.
        let handle = std::ptr::without_provenance_mut::<std::ffi::c_void>(fd as usize);
        call!(self.cuMemPoolImportFromShareableHandle(
            &mut pool,
            handle,
            sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            0
        ))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn ipc_pool_export_pointer(&self, ptr: DevicePtr) -> Result<[u8; 64]> {
        let mut data = sys::CUmemPoolPtrExportData::default();
        call!(self.cuMemPoolExportPointer(&mut data, ptr))?;
        Ok(data.reserved)
    }

    fn ipc_pool_import_pointer(&self, pool: PoolHandle, data: &[u8; 64]) -> Result<DevicePtr> {
        let mut data = sys::CUmemPoolPtrExportData { reserved: *data };
        let mut ptr = 0;
        call!(self.cuMemPoolImportPointer(&mut ptr, pool.0.cast(), &mut data))?;
        Ok(ptr)
    }

    fn ipc_pointer_range(&self, ptr: DevicePtr) -> Result<crate::driver::api::PointerRange> {
        use sys::CUpointer_attribute as Attribute;
        let mut attributes = [
            Attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            Attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
            Attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            Attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            Attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            Attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
        ];
        let mut start: sys::CUdeviceptr = 0;
        let mut bytes: usize = 0;
        // `CUmemorytype` and `int`, as the driver writes them.
        let mut memory_type: std::ffi::c_uint = 0;
        let mut device_ordinal: std::ffi::c_int = -1;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // `unsigned int`, as the driver writes it.
        let mut is_managed: std::ffi::c_uint = 0;
        let mut data: [*mut std::ffi::c_void; 6] = [
            (&mut start as *mut sys::CUdeviceptr).cast(),
            (&mut bytes as *mut usize).cast(),
            (&mut memory_type as *mut std::ffi::c_uint).cast(),
            (&mut device_ordinal as *mut std::ffi::c_int).cast(),
            (&mut pool as *mut sys::CUmemoryPool).cast(),
            (&mut is_managed as *mut std::ffi::c_uint).cast(),
        ];
        call!(self.cuPointerGetAttributes(
            attributes.len() as std::ffi::c_uint,
            attributes.as_mut_ptr(),
            data.as_mut_ptr(),
            ptr
        ))?;
        Ok(crate::driver::api::PointerRange {
            start,
            bytes,
            memory_type,
            device_ordinal,
            pool: PoolHandle(pool.cast()),
            is_managed: is_managed != 0,
        })
    }

    fn ipc_get_event_handle(&self, event: EventHandle) -> Result<[u8; 64]> {
        let mut handle = sys::CUipcEventHandle::default();
        call!(self.cuIpcGetEventHandle(&mut handle, event.0.cast()))?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_event_handle(&self, handle: &[u8; 64]) -> Result<EventHandle> {
        let handle = sys::CUipcEventHandle {
            reserved: handle.map(|b| b as std::ffi::c_char),
        };
        let mut event = std::ptr::null_mut();
        call!(self.cuIpcOpenEventHandle(&mut event, handle))?;
        Ok(EventHandle(event.cast()))
    }

    fn ipc_get_mem_handle(&self, ptr: DevicePtr) -> Result<[u8; 64]> {
        let mut handle = sys::CUipcMemHandle::default();
        call!(self.cuIpcGetMemHandle(&mut handle, ptr))?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    fn ipc_open_mem_handle(&self, handle: &[u8; 64]) -> Result<DevicePtr> {
        let handle = sys::CUipcMemHandle {
            reserved: handle.map(|b| b as std::ffi::c_char),
        };
        let mut ptr = 0;
        let lazy = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.0;
        call!(self.cuIpcOpenMemHandle(&mut ptr, handle, lazy))?;
        Ok(ptr)
    }

    fn ipc_close_mem_handle(&self, ptr: DevicePtr) -> Result<()> {
        call!(self.cuIpcCloseMemHandle(ptr))
    }
}
