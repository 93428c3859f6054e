//! [`MemoryApi`](crate::driver::api::MemoryApi) for both ABIs. A device's `CUmemLocation`
//! comes from the ABI file's `device_location`: the one place the two headers spell it apart.

use super::*;

impl crate::driver::api::MemoryApi for Drv {
    fn device_get_default_mem_pool(&self, device: DeviceHandle) -> Result<PoolHandle> {
        let mut pool = std::ptr::null_mut();
        call!(self.cuDeviceGetDefaultMemPool(&mut pool, device))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn mem_pool_create(&self, device: DeviceHandle, max_size: usize) -> Result<PoolHandle> {
        let mut props = sys::CUmemPoolProps {
            allocType: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location: device_location(device),
            maxSize: max_size,
            ..Default::default()
        };
        let mut pool = std::ptr::null_mut();
        call!(self.cuMemPoolCreate(&mut pool, &mut props))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn mem_pool_destroy(&self, pool: PoolHandle) -> Result<()> {
        call!(self.cuMemPoolDestroy(pool.0.cast()))
    }

    fn mem_pool_set_access(
        &self,
        pool: PoolHandle,
        device: DeviceHandle,
        read_write: bool,
    ) -> Result<()> {
        use sys::CUmemAccess_flags as Flags;
        let desc = sys::CUmemAccessDesc {
            location: device_location(device),
            flags: if read_write {
                Flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            } else {
                Flags::CU_MEM_ACCESS_FLAGS_PROT_NONE
            },
        };
        call!(self.cuMemPoolSetAccess(pool.0.cast(), &desc, 1))
    }

    fn mem_pool_get_access(&self, pool: PoolHandle, device: DeviceHandle) -> Result<bool> {
        use sys::CUmemAccess_flags as Flags;
        let mut location = device_location(device);
        let mut flags = Flags::CU_MEM_ACCESS_FLAGS_PROT_NONE;
        call!(self.cuMemPoolGetAccess(&mut flags, pool.0.cast(), &mut location))?;
        Ok(flags == Flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    }

    fn mem_pool_set_u64(&self, pool: PoolHandle, attribute: i32, value: u64) -> Result<()> {
        let mut value = value;
        let attribute = sys::CUmemPool_attribute(attribute as _);
        call!(self.cuMemPoolSetAttribute(pool.0.cast(), attribute, (&mut value as *mut u64).cast()))
    }

    fn mem_pool_get_u64(&self, pool: PoolHandle, attribute: i32) -> Result<u64> {
        let mut value = 0u64;
        let attribute = sys::CUmemPool_attribute(attribute as _);
        call!(self.cuMemPoolGetAttribute(
            pool.0.cast(),
            attribute,
            (&mut value as *mut u64).cast()
        ))?;
        Ok(value)
    }

    fn mem_alloc(&self, size: usize) -> Result<DevicePtr> {
        let mut ptr = 0;
        call!(self.cuMemAlloc(&mut ptr, size))?;
        Ok(ptr)
    }

    fn mem_free(&self, ptr: DevicePtr) -> Result<()> {
        call!(self.cuMemFree(ptr))
    }

    fn mem_host_alloc(&self, size: usize, flags: u32) -> Result<*mut std::ffi::c_void> {
        let mut ptr = std::ptr::null_mut();
        call!(self.cuMemHostAlloc(&mut ptr, size, flags))?;
        Ok(ptr)
    }

    fn mem_free_host(&self, ptr: *mut std::ffi::c_void) -> Result<()> {
        call!(self.cuMemFreeHost(ptr))
    }

    fn mem_host_register(&self, ptr: *mut std::ffi::c_void, size: usize, flags: u32) -> Result<()> {
        call!(self.cuMemHostRegister(ptr, size, flags))
    }

    fn mem_host_unregister(&self, ptr: *mut std::ffi::c_void) -> Result<()> {
        call!(self.cuMemHostUnregister(ptr))
    }

    fn mem_host_get_device_pointer(&self, ptr: *mut std::ffi::c_void) -> Result<DevicePtr> {
        let mut device = 0;
        call!(self.cuMemHostGetDevicePointer(&mut device, ptr, 0))?;
        Ok(device)
    }

    fn mem_alloc_managed(&self, size: usize, flags: u32) -> Result<DevicePtr> {
        let mut ptr = 0;
        call!(self.cuMemAllocManaged(&mut ptr, size, flags))?;
        Ok(ptr)
    }

    fn mem_get_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0, 0);
        call!(self.cuMemGetInfo(&mut free, &mut total))?;
        Ok((free, total))
    }

    fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemsetD8Async(dst, value, count, stream.0.cast()))
    }

    fn memset_2d_async(
        &self,
        dst: DevicePtr,
        pitch: usize,
        (value, value_bytes): (u32, usize),
        (width, height): (usize, usize),
        stream: StreamHandle,
    ) -> Result<()> {
        let stream = stream.0.cast();
        match value_bytes {
            1 => call!(self.cuMemsetD2D8Async(dst, pitch, value as u8, width, height, stream)),
            2 => call!(self.cuMemsetD2D16Async(dst, pitch, value as u16, width, height, stream)),
            _ => call!(self.cuMemsetD2D32Async(dst, pitch, value, width, height, stream)),
        }
    }

    fn memset_d16_async(
        &self,
        dst: DevicePtr,
        value: u16,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemsetD16Async(dst, value, count, stream.0.cast()))
    }

    fn memset_d32_async(
        &self,
        dst: DevicePtr,
        value: u32,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemsetD32Async(dst, value, count, stream.0.cast()))
    }
}
