//! What the two ABI implementations share, written once: `driver_impl!` expands to the struct,
//! its error helpers and every trait method whose C signature is the same in both headers;
//! `v12.rs` and `v13.rs` add the methods whose signatures differ.

/// Takes a function out of the table, or returns `NotSupported` naming it.
macro_rules! function {
    ($self:ident . $name:ident) => {
        match $self.table.$name {
            Some(f) => f,
            None => return Err($self.missing(stringify!($name))),
        }
    };
}
pub(super) use function;

/// Calls a table function and turns its `CUresult` into a `Result`.
macro_rules! call {
    ($self:ident . $name:ident ( $($arg:expr),* $(,)? )) => {{
        let f = $crate::driver::abi::function!($self.$name);
        // SAFETY: the pointer was loaded by the exact export its header declares, with that
        // signature; each call site passes arguments valid for the call.
        let status = unsafe { f($($arg),*) };
        $self.check(status, stringify!($name))
    }};
}
pub(super) use call;

/// Expands to an ABI's driver struct and its `Driver` impl; `$specific` holds the methods
/// whose C signatures differ between the headers.
macro_rules! driver_impl {
    ($name:ident, $sys:ident, $abi:expr, { $($specific:tt)* }) => {
        use std::ffi::{c_char, CStr};

        use $sys::{CUresult, DriverTable};
        use $crate::driver::abi::call;
        #[allow(unused_imports)]
        use $crate::driver::{
            Abi, ContextHandle, DevResource, DeviceHandle, DevicePtr, Driver, EventHandle,
            FunctionHandle, GreenContextHandle, KernelHandle, LaunchParams, LibraryHandle,
            LinkInput, PoolHandle, SmInfo, StreamHandle,
        };

        const _: () = assert!(
            std::mem::size_of::<$sys::CUdevResource>() <= std::mem::size_of::<DevResource>()
                && std::mem::align_of::<$sys::CUdevResource>()
                    <= std::mem::align_of::<DevResource>()
        );

        /// The header's view of a neutral resource.
        fn resource(r: &DevResource) -> &$sys::CUdevResource {
            // SAFETY: `DevResource` is at least as large and as aligned (asserted above), and
            // every bit pattern is a valid `CUdevResource` (integers, a union of integers and
            // bytes, and in 13 a raw pointer).
            unsafe { &*(r as *const DevResource).cast::<$sys::CUdevResource>() }
        }

        /// The header's mutable view of a neutral resource.
        fn resource_mut(r: &mut DevResource) -> &mut $sys::CUdevResource {
            // SAFETY: as in `resource`.
            unsafe { &mut *(r as *mut DevResource).cast::<$sys::CUdevResource>() }
        }

        /// The launch attributes a launch asks for: cluster dimensions, cooperative.
        fn launch_attributes(p: &LaunchParams) -> [$sys::CUlaunchAttribute; 2] {
            // SAFETY: the attribute struct is integers and a union of plain data; all-zero is a
            // valid (ignored) value.
            let mut attributes: [$sys::CUlaunchAttribute; 2] = unsafe { std::mem::zeroed() };
            if let Some([x, y, z]) = p.cluster {
                attributes[0].id = $sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
                attributes[0].value.clusterDim.x = x;
                attributes[0].value.clusterDim.y = y;
                attributes[0].value.clusterDim.z = z;
            }
            attributes[1].id = $sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attributes[1].value.cooperative = i32::from(p.cooperative);
            attributes
        }

        /// The `CUlaunchConfig` of a launch, pointing at `attributes`.
        fn launch_config(
            p: &LaunchParams,
            attributes: &mut [$sys::CUlaunchAttribute; 2],
        ) -> $sys::CUlaunchConfig {
            let (first, count) = match (p.cluster.is_some(), p.cooperative) {
                (true, true) => (0, 2),
                (true, false) => (0, 1),
                (false, true) => (1, 1),
                (false, false) => (0, 0),
            };
            $sys::CUlaunchConfig {
                gridDimX: p.grid[0],
                gridDimY: p.grid[1],
                gridDimZ: p.grid[2],
                blockDimX: p.block[0],
                blockDimY: p.block[1],
                blockDimZ: p.block[2],
                sharedMemBytes: p.shared_mem_bytes,
                hStream: p.stream.0.cast(),
                attrs: attributes[first..].as_mut_ptr(),
                numAttrs: count,
            }
        }

        /// Answers `Ok(false)` for `CUDA_ERROR_NOT_READY`, the usual meaning otherwise.
        #[inline]
        fn ready(status: CUresult) -> Option<bool> {
            match status {
                CUresult::CUDA_SUCCESS => Some(true),
                CUresult::CUDA_ERROR_NOT_READY => Some(false),
                _ => None,
            }
        }
        use $crate::error::{DriverVersion, Error, Result};

        /// The driver through this ABI's function table.
        pub(crate) struct $name {
            table: DriverTable,
            version: DriverVersion,
            loaded: usize,
        }

        impl $name {
            /// Fills the table from the driver library, which stays loaded for the rest of the
            /// process: the table's pointers and the driver's error strings point into it.
            pub(crate) fn new(library: libloading::Library, version: DriverVersion) -> Self {
                let library: &'static libloading::Library = Box::leak(Box::new(library));
                // SAFETY: the library is the CUDA driver (it answered cuDriverGetVersion) and
                // is never unloaded.
                let table = unsafe { DriverTable::load(library) };
                let loaded = table.symbols().iter().filter(|s| s.address.is_some()).count();
                Self { table, version, loaded }
            }

            #[inline]
            fn check(&self, status: CUresult, call: &'static str) -> Result<()> {
                if status == CUresult::CUDA_SUCCESS {
                    Ok(())
                } else {
                    Err(self.error(status, call))
                }
            }

            #[cold]
            #[inline(never)]
            fn error(&self, status: CUresult, call: &'static str) -> Error {
                let mut name: *const c_char = std::ptr::null();
                let mut description: *const c_char = std::ptr::null();
                if let Some(get_name) = self.table.cuGetErrorName {
                    // SAFETY: the out-pointer is writable; an unknown code leaves it null.
                    unsafe { get_name(status, &mut name) };
                }
                if let Some(get_string) = self.table.cuGetErrorString {
                    // SAFETY: as above.
                    unsafe { get_string(status, &mut description) };
                }
                Error::Driver {
                    call,
                    code: status.0 as i32,
                    // SAFETY: the driver's error strings are static data of the library, which
                    // this process never unloads.
                    name: unsafe { static_str(name) }.unwrap_or("CUDA_ERROR_UNRECOGNIZED"),
                    // SAFETY: as above.
                    description: unsafe { static_str(description) }
                        .unwrap_or("the driver has no description for this code"),
                }
            }

            #[cold]
            #[inline(never)]
            fn missing(&self, function: &'static str) -> Error {
                Error::NotSupported {
                    function,
                    driver: self.version,
                    abi: $abi.major(),
                }
            }

            /// The raw table, for tests that compare it with the library's exports.
            #[cfg(test)]
            pub(crate) fn table(&self) -> &DriverTable {
                &self.table
            }
        }

        /// A NUL-terminated string that lives as long as the process.
        ///
        /// # Safety
        ///
        /// `p` is null or points to a NUL-terminated string that is never freed.
        unsafe fn static_str(p: *const c_char) -> Option<&'static str> {
            if p.is_null() {
                return None;
            }
            // SAFETY: the caller vouches for the pointer and its lifetime.
            unsafe { CStr::from_ptr(p) }.to_str().ok()
        }

        impl Driver for $name {
            fn abi(&self) -> Abi {
                $abi
            }

            fn version(&self) -> DriverVersion {
                self.version
            }

            fn functions_loaded(&self) -> (usize, usize) {
                (self.loaded, DriverTable::LEN)
            }

            fn init(&self, flags: u32) -> Result<()> {
                call!(self.cuInit(flags))
            }

            fn device_get_count(&self) -> Result<i32> {
                let mut count = 0;
                call!(self.cuDeviceGetCount(&mut count))?;
                Ok(count)
            }

            fn device_get(&self, ordinal: i32) -> Result<DeviceHandle> {
                let mut device = 0;
                call!(self.cuDeviceGet(&mut device, ordinal))?;
                Ok(device)
            }

            fn device_get_name(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize> {
                let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
                call!(self.cuDeviceGetName(buf.as_mut_ptr().cast(), len, device))?;
                Ok(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()))
            }

            fn device_get_attribute(&self, attribute: i32, device: DeviceHandle) -> Result<i32> {
                let mut value = 0;
                let attribute = $sys::CUdevice_attribute(attribute as _);
                call!(self.cuDeviceGetAttribute(&mut value, attribute, device))?;
                Ok(value)
            }

            fn ctx_destroy(&self, ctx: ContextHandle) -> Result<()> {
                call!(self.cuCtxDestroy(ctx.0.cast()))
            }

            fn ctx_get_current(&self) -> Result<ContextHandle> {
                let mut ctx = std::ptr::null_mut();
                call!(self.cuCtxGetCurrent(&mut ctx))?;
                Ok(ContextHandle(ctx.cast()))
            }

            #[inline]
            fn ctx_current_or_none(&self) -> Option<ContextHandle> {
                let f = self.table.cuCtxGetCurrent?;
                let mut ctx = std::ptr::null_mut();
                // SAFETY: a writable out-pointer.
                let status = unsafe { f(&mut ctx) };
                (status == CUresult::CUDA_SUCCESS).then_some(ContextHandle(ctx.cast()))
            }

            fn ctx_set_current(&self, ctx: ContextHandle) -> Result<()> {
                call!(self.cuCtxSetCurrent(ctx.0.cast()))
            }

            fn ctx_get_device(&self) -> Result<Option<DeviceHandle>> {
                let f = $crate::driver::abi::function!(self.cuCtxGetDevice);
                let mut device = 0;
                // SAFETY: a writable out-pointer.
                let status = unsafe { f(&mut device) };
                match status {
                    CUresult::CUDA_SUCCESS => Ok(Some(device)),
                    CUresult::CUDA_ERROR_INVALID_CONTEXT => Ok(None),
                    _ => Err(self.error(status, "cuCtxGetDevice")),
                }
            }

            fn stream_create(&self, flags: u32, priority: Option<i32>) -> Result<StreamHandle> {
                let mut stream = std::ptr::null_mut();
                match priority {
                    Some(priority) => {
                        call!(self.cuStreamCreateWithPriority(&mut stream, flags, priority))?
                    }
                    None => call!(self.cuStreamCreate(&mut stream, flags))?,
                }
                Ok(StreamHandle(stream.cast()))
            }

            fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
                call!(self.cuStreamDestroy(stream.0.cast()))
            }

            fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
                call!(self.cuStreamSynchronize(stream.0.cast()))
            }

            fn launch_host_func(
                &self,
                stream: StreamHandle,
                f: unsafe extern "C" fn(*mut std::ffi::c_void),
                data: *mut std::ffi::c_void,
            ) -> Result<()> {
                call!(self.cuLaunchHostFunc(stream.0.cast(), Some(f), data))
            }

            fn event_create(&self, flags: u32) -> Result<EventHandle> {
                let mut event = std::ptr::null_mut();
                call!(self.cuEventCreate(&mut event, flags))?;
                Ok(EventHandle(event.cast()))
            }

            fn event_destroy(&self, event: EventHandle) -> Result<()> {
                call!(self.cuEventDestroy(event.0.cast()))
            }

            fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()> {
                call!(self.cuEventRecord(event.0.cast(), stream.0.cast()))
            }

            fn event_synchronize(&self, event: EventHandle) -> Result<()> {
                call!(self.cuEventSynchronize(event.0.cast()))
            }

            fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
                let mut ms = 0.0f32;
                call!(self.cuEventElapsedTime(&mut ms, start.0.cast(), end.0.cast()))?;
                Ok(ms)
            }

            fn device_get_pci_bus_id(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize> {
                let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
                call!(self.cuDeviceGetPCIBusId(buf.as_mut_ptr().cast(), len, device))?;
                Ok(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()))
            }

            fn device_total_mem(&self, device: DeviceHandle) -> Result<usize> {
                let mut bytes = 0;
                call!(self.cuDeviceTotalMem(&mut bytes, device))?;
                Ok(bytes)
            }

            fn device_can_access_peer(&self, device: DeviceHandle, peer: DeviceHandle) -> Result<bool> {
                let mut can = 0;
                call!(self.cuDeviceCanAccessPeer(&mut can, device, peer))?;
                Ok(can != 0)
            }

            fn device_primary_ctx_retain(&self, device: DeviceHandle) -> Result<ContextHandle> {
                let mut ctx = std::ptr::null_mut();
                call!(self.cuDevicePrimaryCtxRetain(&mut ctx, device))?;
                Ok(ContextHandle(ctx.cast()))
            }

            fn device_primary_ctx_release(&self, device: DeviceHandle) -> Result<()> {
                call!(self.cuDevicePrimaryCtxRelease(device))
            }

            fn ctx_push_current(&self, ctx: ContextHandle) -> Result<()> {
                call!(self.cuCtxPushCurrent(ctx.0.cast()))
            }

            fn ctx_pop_current(&self) -> Result<ContextHandle> {
                let mut ctx = std::ptr::null_mut();
                call!(self.cuCtxPopCurrent(&mut ctx))?;
                Ok(ContextHandle(ctx.cast()))
            }

            fn ctx_synchronize(&self) -> Result<()> {
                call!(self.cuCtxSynchronize())
            }

            fn ctx_get_stream_priority_range(&self) -> Result<(i32, i32)> {
                let (mut least, mut greatest) = (0, 0);
                call!(self.cuCtxGetStreamPriorityRange(&mut least, &mut greatest))?;
                Ok((least, greatest))
            }

            fn stream_query(&self, stream: StreamHandle) -> Result<bool> {
                let f = $crate::driver::abi::function!(self.cuStreamQuery);
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

            fn event_query(&self, event: EventHandle) -> Result<bool> {
                let f = $crate::driver::abi::function!(self.cuEventQuery);
                // SAFETY: the handle is passed by value; the driver validates it.
                let status = unsafe { f(event.0.cast()) };
                match ready(status) {
                    Some(done) => Ok(done),
                    None => Err(self.error(status, "cuEventQuery")),
                }
            }

            fn device_get_default_mem_pool(&self, device: DeviceHandle) -> Result<PoolHandle> {
                let mut pool = std::ptr::null_mut();
                call!(self.cuDeviceGetDefaultMemPool(&mut pool, device))?;
                Ok(PoolHandle(pool.cast()))
            }

            fn mem_pool_destroy(&self, pool: PoolHandle) -> Result<()> {
                call!(self.cuMemPoolDestroy(pool.0.cast()))
            }

            fn mem_pool_set_u64(&self, pool: PoolHandle, attribute: i32, value: u64) -> Result<()> {
                let mut value = value;
                let attribute = $sys::CUmemPool_attribute(attribute as _);
                call!(self.cuMemPoolSetAttribute(
                    pool.0.cast(),
                    attribute,
                    (&mut value as *mut u64).cast()
                ))
            }

            fn mem_pool_get_u64(&self, pool: PoolHandle, attribute: i32) -> Result<u64> {
                let mut value = 0u64;
                let attribute = $sys::CUmemPool_attribute(attribute as _);
                call!(self.cuMemPoolGetAttribute(
                    pool.0.cast(),
                    attribute,
                    (&mut value as *mut u64).cast()
                ))?;
                Ok(value)
            }

            fn mem_alloc_from_pool_async(
                &self,
                size: usize,
                pool: PoolHandle,
                stream: StreamHandle,
            ) -> Result<DevicePtr> {
                let mut ptr = 0;
                call!(self.cuMemAllocFromPoolAsync(&mut ptr, size, pool.0.cast(), stream.0.cast()))?;
                Ok(ptr)
            }

            fn mem_free_async(&self, ptr: DevicePtr, stream: StreamHandle) -> Result<()> {
                call!(self.cuMemFreeAsync(ptr, stream.0.cast()))
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

            fn memcpy_async(
                &self,
                dst: DevicePtr,
                src: DevicePtr,
                size: usize,
                stream: StreamHandle,
            ) -> Result<()> {
                call!(self.cuMemcpyAsync(dst, src, size, stream.0.cast()))
            }

            fn memcpy_htod_async(
                &self,
                dst: DevicePtr,
                src: *const std::ffi::c_void,
                size: usize,
                stream: StreamHandle,
            ) -> Result<()> {
                call!(self.cuMemcpyHtoDAsync(dst, src, size, stream.0.cast()))
            }

            fn memcpy_dtoh_async(
                &self,
                dst: *mut std::ffi::c_void,
                src: DevicePtr,
                size: usize,
                stream: StreamHandle,
            ) -> Result<()> {
                call!(self.cuMemcpyDtoHAsync(dst, src, size, stream.0.cast()))
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

            fn device_get_sm_resource(&self, device: DeviceHandle) -> Result<DevResource> {
                let mut out = DevResource::ZERO;
                call!(self.cuDeviceGetDevResource(
                    device,
                    resource_mut(&mut out),
                    $sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
                ))?;
                Ok(out)
            }

            fn ctx_get_sm_resource(&self, ctx: ContextHandle) -> Result<DevResource> {
                let mut out = DevResource::ZERO;
                call!(self.cuCtxGetDevResource(
                    ctx.0.cast(),
                    resource_mut(&mut out),
                    $sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
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
                let mut raw: Vec<$sys::CUdevResource> = (0..groups.len())
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
                let mut raw: Vec<$sys::CUdevResource> =
                    resources.iter().map(|r| *resource(r)).collect();
                let count = u32::try_from(raw.len()).unwrap_or(u32::MAX);
                let mut desc = std::ptr::null_mut();
                call!(self.cuDevResourceGenerateDesc(&mut desc, raw.as_mut_ptr(), count))?;
                let mut green = std::ptr::null_mut();
                let flags = $sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0 as u32;
                call!(self.cuGreenCtxCreate(&mut green, desc, device, flags))?;
                let mut ctx = std::ptr::null_mut();
                if let Err(e) = call!(self.cuCtxFromGreenCtx(&mut ctx, green)) {
                    let _ = call!(self.cuGreenCtxDestroy(green));
                    return Err(e);
                }
                Ok((GreenContextHandle(green.cast()), ContextHandle(ctx.cast())))
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

            fn library_load_data(&self, image: &[u8]) -> Result<LibraryHandle> {
                let mut library = std::ptr::null_mut();
                call!(self.cuLibraryLoadData(
                    &mut library,
                    image.as_ptr().cast(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0
                ))?;
                Ok(LibraryHandle(library.cast()))
            }

            fn library_unload(&self, library: LibraryHandle) -> Result<()> {
                call!(self.cuLibraryUnload(library.0.cast()))
            }

            fn library_get_kernel(
                &self,
                library: LibraryHandle,
                name: &std::ffi::CStr,
            ) -> Result<KernelHandle> {
                let mut kernel = std::ptr::null_mut();
                call!(self.cuLibraryGetKernel(&mut kernel, library.0.cast(), name.as_ptr()))?;
                Ok(KernelHandle(kernel.cast()))
            }

            fn kernel_get_attribute(
                &self,
                attribute: i32,
                kernel: KernelHandle,
                device: DeviceHandle,
            ) -> Result<i32> {
                let mut value = 0;
                let attribute = $sys::CUfunction_attribute(attribute as _);
                call!(self.cuKernelGetAttribute(&mut value, attribute, kernel.0.cast(), device))?;
                Ok(value)
            }

            fn kernel_set_attribute(
                &self,
                attribute: i32,
                value: i32,
                kernel: KernelHandle,
                device: DeviceHandle,
            ) -> Result<()> {
                let attribute = $sys::CUfunction_attribute(attribute as _);
                call!(self.cuKernelSetAttribute(attribute, value, kernel.0.cast(), device))
            }

            fn kernel_get_param_info(
                &self,
                kernel: KernelHandle,
                index: usize,
            ) -> Result<Option<(usize, usize)>> {
                let f = $crate::driver::abi::function!(self.cuKernelGetParamInfo);
                let (mut offset, mut size) = (0, 0);
                // SAFETY: both out-pointers are writable; the handle is passed by value.
                let status = unsafe { f(kernel.0.cast(), index, &mut offset, &mut size) };
                match status {
                    CUresult::CUDA_SUCCESS => Ok(Some((offset, size))),
                    // Past the last parameter.
                    CUresult::CUDA_ERROR_INVALID_VALUE => Ok(None),
                    _ => Err(self.error(status, "cuKernelGetParamInfo")),
                }
            }

            fn kernel_get_function(&self, kernel: KernelHandle) -> Result<FunctionHandle> {
                let mut function = std::ptr::null_mut();
                call!(self.cuKernelGetFunction(&mut function, kernel.0.cast()))?;
                Ok(FunctionHandle(function.cast()))
            }

            fn occupancy_max_active_blocks(
                &self,
                function: FunctionHandle,
                block_size: i32,
                dynamic_smem: usize,
            ) -> Result<i32> {
                let mut blocks = 0;
                call!(self.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut blocks,
                    function.0.cast(),
                    block_size,
                    dynamic_smem
                ))?;
                Ok(blocks)
            }

            fn occupancy_max_potential_block_size(
                &self,
                function: FunctionHandle,
                dynamic_smem: usize,
                block_size_limit: i32,
            ) -> Result<(i32, i32)> {
                let (mut grid, mut block) = (0, 0);
                call!(self.cuOccupancyMaxPotentialBlockSize(
                    &mut grid,
                    &mut block,
                    function.0.cast(),
                    None,
                    dynamic_smem,
                    block_size_limit
                ))?;
                Ok((grid, block))
            }

            fn occupancy_max_active_clusters(
                &self,
                function: FunctionHandle,
                params: &LaunchParams,
            ) -> Result<i32> {
                let mut attributes = launch_attributes(params);
                let config = launch_config(params, &mut attributes);
                let mut clusters = 0;
                call!(self.cuOccupancyMaxActiveClusters(&mut clusters, function.0.cast(), &config))?;
                Ok(clusters)
            }

            unsafe fn launch_kernel(
                &self,
                kernel: KernelHandle,
                p: &LaunchParams,
                args: *mut *mut std::ffi::c_void,
            ) -> Result<()> {
                call!(self.cuLaunchKernel(
                    kernel.0.cast(),
                    p.grid[0],
                    p.grid[1],
                    p.grid[2],
                    p.block[0],
                    p.block[1],
                    p.block[2],
                    p.shared_mem_bytes,
                    p.stream.0.cast(),
                    args,
                    std::ptr::null_mut()
                ))
            }

            unsafe fn launch_kernel_ex(
                &self,
                kernel: KernelHandle,
                params: &LaunchParams,
                args: *mut *mut std::ffi::c_void,
            ) -> Result<()> {
                let mut attributes = launch_attributes(params);
                let config = launch_config(params, &mut attributes);
                call!(self.cuLaunchKernelEx(&config, kernel.0.cast(), args, std::ptr::null_mut()))
            }

            fn link(&self, inputs: &[LinkInput<'_>]) -> Result<(Vec<u8>, String)> {
                use $sys::CUjit_option as O;
                const LOG: usize = 1 << 16;
                let mut info = vec![0u8; LOG];
                let mut error = vec![0u8; LOG];
                let mut options = [
                    O::CU_JIT_INFO_LOG_BUFFER,
                    O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                    O::CU_JIT_ERROR_LOG_BUFFER,
                    O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                ];
                // Sizes travel in the pointer-sized value slots, as the driver API specifies.
                let mut values: [*mut std::ffi::c_void; 4] = [
                    info.as_mut_ptr().cast(),
                    std::ptr::without_provenance_mut(LOG),
                    error.as_mut_ptr().cast(),
                    std::ptr::without_provenance_mut(LOG),
                ];
                let mut state = std::ptr::null_mut();
                call!(self.cuLinkCreate(4, options.as_mut_ptr(), values.as_mut_ptr(), &mut state))?;
                let text = |buf: &[u8]| {
                    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                    String::from_utf8_lossy(&buf[..end]).into_owned()
                };
                let mut result = Ok(());
                for input in inputs {
                    result = call!(self.cuLinkAddData(
                        state,
                        $sys::CUjitInputType(input.kind as _),
                        input.data.as_ptr() as *mut std::ffi::c_void,
                        input.data.len(),
                        input.name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut()
                    ));
                    if result.is_err() {
                        break;
                    }
                }
                let mut cubin = Vec::new();
                if result.is_ok() {
                    let (mut out, mut size) = (std::ptr::null_mut(), 0usize);
                    result = call!(self.cuLinkComplete(state, &mut out, &mut size));
                    if result.is_ok() && !out.is_null() {
                        // SAFETY: the driver owns `size` bytes at `out` until cuLinkDestroy.
                        cubin = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), size) }.to_vec();
                    }
                }
                let destroyed = call!(self.cuLinkDestroy(state));
                match result.and(destroyed) {
                    Ok(()) => Ok((cubin, text(&info))),
                    Err(e) => {
                        let log = text(&error);
                        Err(Error::Link {
                            log: if log.is_empty() { e.to_string() } else { format!("{e}\n{log}") },
                        })
                    }
                }
            }

            $($specific)*
        }
    };
}
pub(super) use driver_impl;
