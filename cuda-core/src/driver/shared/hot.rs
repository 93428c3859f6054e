//! [`HotPath`](crate::driver::api::HotPath) for both ABIs, and the launch-configuration helpers
//! that `cuLaunchKernelEx` and `cuOccupancyMaxActiveClusters` share.

macro_rules! impl_hot_path {
    ($name:ident, $sys:ident) => {
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

        impl $crate::driver::api::HotPath for $name {
            #[inline]
            fn ctx_current_or_none(&self) -> Option<ContextHandle> {
                let f = self.table.cuCtxGetCurrent?;
                let mut ctx = std::ptr::null_mut();
                // SAFETY: a writable out-pointer.
                let status = unsafe { f(&mut ctx) };
                (status == CUresult::CUDA_SUCCESS).then_some(ContextHandle(ctx.cast()))
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

            fn event_query(&self, event: EventHandle) -> Result<bool> {
                let f = $crate::driver::shared::function!(self.cuEventQuery);
                // SAFETY: the handle is passed by value; the driver validates it.
                let status = unsafe { f(event.0.cast()) };
                match ready(status) {
                    Some(done) => Ok(done),
                    None => Err(self.error(status, "cuEventQuery")),
                }
            }

            fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
                call!(self.cuStreamSynchronize(stream.0.cast()))
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

            fn mem_alloc_from_pool_async(
                &self,
                size: usize,
                pool: PoolHandle,
                stream: StreamHandle,
            ) -> Result<DevicePtr> {
                let mut ptr = 0;
                call!(self.cuMemAllocFromPoolAsync(
                    &mut ptr,
                    size,
                    pool.0.cast(),
                    stream.0.cast()
                ))?;
                Ok(ptr)
            }

            fn mem_free_async(&self, ptr: DevicePtr, stream: StreamHandle) -> Result<()> {
                call!(self.cuMemFreeAsync(ptr, stream.0.cast()))
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

            fn memcpy_async(
                &self,
                dst: DevicePtr,
                src: DevicePtr,
                size: usize,
                stream: StreamHandle,
            ) -> Result<()> {
                call!(self.cuMemcpyAsync(dst, src, size, stream.0.cast()))
            }
        }
    };
}
pub(in crate::driver) use impl_hot_path;
