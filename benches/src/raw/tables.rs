//! The two implementations of [`RawDriver`]: [`Driver12`] and [`Driver13`], one macro
//! (`raw_driver!`) expanded for each sys crate's table, and the table fields
//! [`load`](super::load) checks once so that no call checks them again.

use std::ffi::{c_char, c_void};

use libloading::Library;

use super::{Handle, RawDriver, NOT_FOUND, NOT_SUPPORTED, SUCCESS};

/// Every table field the trait calls, checked once by [`load`](super::load):
/// `$m!($table; fields...)`.
macro_rules! used_fields {
    ($m:ident, $table:expr) => {
        $m!(
            $table;
            cuInit,
            cuDriverGetVersion,
            cuDeviceGetCount,
            cuDeviceGet,
            cuDeviceGetAttribute,
            cuDevicePrimaryCtxRetain,
            cuCtxSetCurrent,
            cuCtxGetCurrent,
            cuCtxGetDevice,
            cuStreamCreate,
            cuStreamDestroy,
            cuStreamSynchronize,
            cuEventCreate,
            cuEventDestroy,
            cuEventRecord,
            cuEventQuery,
            cuEventSynchronize,
            cuEventElapsedTime,
            cuStreamWaitEvent,
            cuLibraryLoadData,
            cuLibraryGetKernel,
            cuLibraryUnload,
            cuLaunchKernel,
            cuLaunchKernelEx,
            cuDeviceGetDefaultMemPool,
            cuMemAllocFromPoolAsync,
            cuMemFreeAsync,
            cuMemcpyHtoDAsync,
            cuMemcpyDtoHAsync,
            cuMemcpyAsync,
            cuMemPoolImportPointer,
            cuGraphLaunch,
            cuGraphInstantiateWithFlags,
            cuGraphExecDestroy,
            cuGraphCreate,
            cuGraphDestroy,
            cuGraphAddEmptyNode,
            cuGraphAddKernelNode,
            cuGraphExecKernelNodeSetParams
        )
    };
}

/// The names of the given fields that `$table` lacks.
macro_rules! missing_fields {
    ($table:expr; $($field:ident),*) => {{
        let mut missing: Vec<&'static str> = Vec::new();
        $(if $table.$field.is_none() {
            missing.push(stringify!($field));
        })*
        missing
    }};
}

/// A kernel node's parameters (`CUDA_KERNEL_NODE_PARAMS_v2`) for a `CUkernel` in a context.
macro_rules! kernel_node_params {
    ($sys:ident, $kernel:expr, $context:expr, $grid:expr, $block:expr, $params:expr) => {
        $sys::CUDA_KERNEL_NODE_PARAMS {
            func: std::ptr::null_mut(),
            gridDimX: $grid[0],
            gridDimY: $grid[1],
            gridDimZ: $grid[2],
            blockDimX: $block[0],
            blockDimY: $block[1],
            blockDimZ: $block[2],
            sharedMemBytes: 0,
            kernelParams: $params,
            extra: std::ptr::null_mut(),
            kern: $kernel.cast(),
            ctx: $context.cast(),
        }
    };
}

/// Calls a table field. Only for fields listed in `used_fields!`, which [`load`](super::load)
/// checked.
macro_rules! call {
    ($self:ident . $name:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: `load` checked that this field is filled (it is in `used_fields!`); the
        // pointer has the header's signature, and the caller vouches for the arguments.
        unsafe { $self.table.$name.unwrap_unchecked()($($arg),*).0 }
    }};
}

/// Expands to an ABI's driver struct and its `RawDriver` impl.
macro_rules! raw_driver {
    ($name:ident, $sys:ident, $abi:literal $(, $batch_fail_index:expr)?) => {
        #[doc = concat!("The raw driver through `", stringify!($sys), "`'s table.")]
        pub struct $name {
            table: $sys::DriverTable,
            version: i32,
            // The table points into the library: it stays loaded as long as this value.
            _library: Library,
        }

        impl $name {
            /// Fills the table from the loaded driver and checks every field the trait uses.
            pub(super) fn new(library: Library, version: i32) -> Result<Self, String> {
                // SAFETY: `library` is the CUDA driver (it answered cuDriverGetVersion) and
                // moves into the returned value with the table.
                let table = unsafe { $sys::DriverTable::load(&library) };
                let missing = used_fields!(missing_fields, table);
                if !missing.is_empty() {
                    return Err(format!(
                        "the driver lacks {} (CUDA {} header)",
                        missing.join(", "),
                        $abi
                    ));
                }
                Ok($name {
                    table,
                    version,
                    _library: library,
                })
            }

            /// `cuInit(0)`, then `cuDeviceGetCount`: fails when the driver cannot start or
            /// sees no device.
            pub(super) fn start(&self) -> Result<(), String> {
                let status = call!(self.cuInit(0));
                if status != SUCCESS {
                    return Err(format!("cuInit failed with CUDA error {status}"));
                }
                let mut count = 0;
                let status = call!(self.cuDeviceGetCount(&mut count));
                if status != SUCCESS {
                    return Err(format!("cuDeviceGetCount failed with CUDA error {status}"));
                }
                if count < 1 {
                    return Err("the driver sees no device".to_owned());
                }
                Ok(())
            }
        }

        impl RawDriver for $name {
            fn abi(&self) -> u32 {
                $abi
            }

            fn version(&self) -> i32 {
                self.version
            }

            #[inline(always)]
            unsafe fn cuDeviceGet(&self, device: *mut i32, ordinal: i32) -> u32 {
                call!(self.cuDeviceGet(device, ordinal))
            }

            #[inline(always)]
            unsafe fn cuDeviceGetAttribute(
                &self,
                value: *mut i32,
                attribute: u32,
                device: i32,
            ) -> u32 {
                call!(self.cuDeviceGetAttribute(value, $sys::CUdevice_attribute(attribute), device))
            }

            #[inline(always)]
            unsafe fn cuDevicePrimaryCtxRetain(&self, context: *mut Handle, device: i32) -> u32 {
                call!(self.cuDevicePrimaryCtxRetain(context.cast(), device))
            }

            #[inline(always)]
            unsafe fn cuCtxSetCurrent(&self, context: Handle) -> u32 {
                call!(self.cuCtxSetCurrent(context.cast()))
            }

            #[inline(always)]
            unsafe fn cuCtxGetCurrent(&self, context: *mut Handle) -> u32 {
                call!(self.cuCtxGetCurrent(context.cast()))
            }

            #[inline(always)]
            unsafe fn cuCtxGetDevice(&self, device: *mut i32) -> u32 {
                call!(self.cuCtxGetDevice(device))
            }

            #[inline(always)]
            unsafe fn cuStreamCreate(&self, stream: *mut Handle, flags: u32) -> u32 {
                call!(self.cuStreamCreate(stream.cast(), flags))
            }

            #[inline(always)]
            unsafe fn cuStreamDestroy(&self, stream: Handle) -> u32 {
                call!(self.cuStreamDestroy(stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuStreamSynchronize(&self, stream: Handle) -> u32 {
                call!(self.cuStreamSynchronize(stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuEventCreate(&self, event: *mut Handle, flags: u32) -> u32 {
                call!(self.cuEventCreate(event.cast(), flags))
            }

            #[inline(always)]
            unsafe fn cuEventDestroy(&self, event: Handle) -> u32 {
                call!(self.cuEventDestroy(event.cast()))
            }

            #[inline(always)]
            unsafe fn cuEventRecord(&self, event: Handle, stream: Handle) -> u32 {
                call!(self.cuEventRecord(event.cast(), stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuEventQuery(&self, event: Handle) -> u32 {
                call!(self.cuEventQuery(event.cast()))
            }

            #[inline(always)]
            unsafe fn cuEventSynchronize(&self, event: Handle) -> u32 {
                call!(self.cuEventSynchronize(event.cast()))
            }

            #[inline(always)]
            unsafe fn cuEventElapsedTime(&self, ms: *mut f32, start: Handle, end: Handle) -> u32 {
                call!(self.cuEventElapsedTime(ms, start.cast(), end.cast()))
            }

            #[inline(always)]
            unsafe fn cuStreamWaitEvent(&self, stream: Handle, event: Handle) -> u32 {
                call!(self.cuStreamWaitEvent(stream.cast(), event.cast(), 0))
            }

            #[inline(always)]
            unsafe fn cuLibraryLoadData(&self, library: *mut Handle, image: *const c_void) -> u32 {
                call!(self.cuLibraryLoadData(
                    library.cast(),
                    image,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    0
                ))
            }

            #[inline(always)]
            unsafe fn cuLibraryGetKernel(
                &self,
                kernel: *mut Handle,
                library: Handle,
                name: *const c_char,
            ) -> u32 {
                call!(self.cuLibraryGetKernel(kernel.cast(), library.cast(), name))
            }

            #[inline(always)]
            unsafe fn cuLibraryUnload(&self, library: Handle) -> u32 {
                call!(self.cuLibraryUnload(library.cast()))
            }

            #[inline(always)]
            unsafe fn cuLaunchKernel(
                &self,
                function: Handle,
                grid_x: u32,
                grid_y: u32,
                grid_z: u32,
                block_x: u32,
                block_y: u32,
                block_z: u32,
                shared_memory_bytes: u32,
                stream: Handle,
                params: *mut *mut c_void,
                extra: *mut *mut c_void,
            ) -> u32 {
                call!(self.cuLaunchKernel(
                    function.cast(),
                    grid_x,
                    grid_y,
                    grid_z,
                    block_x,
                    block_y,
                    block_z,
                    shared_memory_bytes,
                    stream.cast(),
                    params,
                    extra
                ))
            }

            #[inline(always)]
            unsafe fn cuLaunchKernelEx_cluster(
                &self,
                function: Handle,
                grid: [u32; 3],
                block: [u32; 3],
                cluster: [u32; 3],
                stream: Handle,
                params: *mut *mut c_void,
            ) -> u32 {
                let mut attribute = $sys::CUlaunchAttribute::default();
                attribute.id = $sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
                attribute.value.clusterDim.x = cluster[0];
                attribute.value.clusterDim.y = cluster[1];
                attribute.value.clusterDim.z = cluster[2];
                let config = $sys::CUlaunchConfig {
                    gridDimX: grid[0],
                    gridDimY: grid[1],
                    gridDimZ: grid[2],
                    blockDimX: block[0],
                    blockDimY: block[1],
                    blockDimZ: block[2],
                    sharedMemBytes: 0,
                    hStream: stream.cast(),
                    attrs: &mut attribute,
                    numAttrs: 1,
                };
                call!(self.cuLaunchKernelEx(&config, function.cast(), params, std::ptr::null_mut()))
            }

            #[inline(always)]
            unsafe fn cuLaunchKernelEx_pdl(
                &self,
                function: Handle,
                grid: [u32; 3],
                block: [u32; 3],
                priority: Option<i32>,
                stream: Handle,
                params: *mut *mut c_void,
            ) -> u32 {
                use $sys::CUlaunchAttributeID as Id;
                let mut attributes = [$sys::CUlaunchAttribute::default(); 2];
                attributes[0].id = Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
                attributes[0].value.programmaticStreamSerializationAllowed = 1;
                let mut count = 1;
                if let Some(priority) = priority {
                    attributes[1].id = Id::CU_LAUNCH_ATTRIBUTE_PRIORITY;
                    attributes[1].value.priority = priority;
                    count = 2;
                }
                let config = $sys::CUlaunchConfig {
                    gridDimX: grid[0],
                    gridDimY: grid[1],
                    gridDimZ: grid[2],
                    blockDimX: block[0],
                    blockDimY: block[1],
                    blockDimZ: block[2],
                    sharedMemBytes: 0,
                    hStream: stream.cast(),
                    attrs: attributes.as_mut_ptr(),
                    numAttrs: count,
                };
                call!(self.cuLaunchKernelEx(&config, function.cast(), params, std::ptr::null_mut()))
            }

            #[inline(always)]
            unsafe fn cuGraphLaunch(&self, exec: Handle, stream: Handle) -> u32 {
                call!(self.cuGraphLaunch(exec.cast(), stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuGraphInstantiate(&self, exec: *mut Handle, graph: Handle) -> u32 {
                call!(self.cuGraphInstantiateWithFlags(exec.cast(), graph.cast(), 0))
            }

            #[inline(always)]
            unsafe fn cuGraphExecDestroy(&self, exec: Handle) -> u32 {
                call!(self.cuGraphExecDestroy(exec.cast()))
            }

            #[inline(always)]
            unsafe fn cuGraphCreate(&self, graph: *mut Handle) -> u32 {
                call!(self.cuGraphCreate(graph.cast(), 0))
            }

            #[inline(always)]
            unsafe fn cuGraphDestroy(&self, graph: Handle) -> u32 {
                call!(self.cuGraphDestroy(graph.cast()))
            }

            #[inline(always)]
            unsafe fn cuGraphAddEmptyNode(
                &self,
                node: *mut Handle,
                graph: Handle,
                deps: &[Handle],
            ) -> u32 {
                call!(self.cuGraphAddEmptyNode(
                    node.cast(),
                    graph.cast(),
                    deps.as_ptr().cast(),
                    deps.len()
                ))
            }

            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
    unsafe fn cuGraphAddKernelNode(
                &self,
                node: *mut Handle,
                graph: Handle,
                deps: &[Handle],
                kernel: Handle,
                context: Handle,
                grid: [u32; 3],
                block: [u32; 3],
                params: *mut *mut c_void,
            ) -> u32 {
                let params = kernel_node_params!($sys, kernel, context, grid, block, params);
                call!(self.cuGraphAddKernelNode(
                    node.cast(),
                    graph.cast(),
                    deps.as_ptr().cast(),
                    deps.len(),
                    &params
                ))
            }

            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
    unsafe fn cuGraphExecKernelNodeSetParams(
                &self,
                exec: Handle,
                node: Handle,
                kernel: Handle,
                context: Handle,
                grid: [u32; 3],
                block: [u32; 3],
                params: *mut *mut c_void,
            ) -> u32 {
                let params = kernel_node_params!($sys, kernel, context, grid, block, params);
                call!(self.cuGraphExecKernelNodeSetParams(exec.cast(), node.cast(), &params))
            }

            #[inline(always)]
            unsafe fn cuDeviceGetDefaultMemPool(&self, pool: *mut Handle, device: i32) -> u32 {
                call!(self.cuDeviceGetDefaultMemPool(pool.cast(), device))
            }

            #[inline(always)]
            unsafe fn cuMemAllocFromPoolAsync(
                &self,
                ptr: *mut u64,
                size: usize,
                pool: Handle,
                stream: Handle,
            ) -> u32 {
                call!(self.cuMemAllocFromPoolAsync(ptr, size, pool.cast(), stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuMemFreeAsync(&self, ptr: u64, stream: Handle) -> u32 {
                call!(self.cuMemFreeAsync(ptr, stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuMemcpyHtoDAsync(
                &self,
                dst: u64,
                src: *const c_void,
                bytes: usize,
                stream: Handle,
            ) -> u32 {
                call!(self.cuMemcpyHtoDAsync(dst, src, bytes, stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuMemcpyDtoHAsync(
                &self,
                dst: *mut c_void,
                src: u64,
                bytes: usize,
                stream: Handle,
            ) -> u32 {
                call!(self.cuMemcpyDtoHAsync(dst, src, bytes, stream.cast()))
            }

            #[inline(always)]
            unsafe fn cuMemcpyAsync(&self, dst: u64, src: u64, bytes: usize, stream: Handle) -> u32 {
                call!(self.cuMemcpyAsync(dst, src, bytes, stream.cast()))
            }

            fn has_memcpy_batch(&self) -> bool {
                self.table.cuMemcpyBatchAsync.is_some()
            }

            #[inline(always)]
            unsafe fn cuMemcpyBatchAsync(
                &self,
                dsts: *mut u64,
                srcs: *mut u64,
                sizes: *mut usize,
                count: usize,
                stream: Handle,
            ) -> u32 {
                // Not among the fields `load` checks (drivers before 12.8 lack it).
                let Some(f) = self.table.cuMemcpyBatchAsync else {
                    return NOT_SUPPORTED;
                };
                let mut attributes = $sys::CUmemcpyAttributes {
                    srcAccessOrder:
                        $sys::CUmemcpySrcAccessOrder::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
                    ..Default::default()
                };
                let mut first = 0usize;
                // SAFETY: the header's signature; the caller vouches for the arrays, the one
                // attribute applies from copy 0.
                unsafe {
                    f(
                        dsts,
                        srcs,
                        sizes,
                        count,
                        &mut attributes,
                        &mut first,
                        1,
                        $($batch_fail_index,)?
                        stream.cast(),
                    )
                    .0
                }
            }

            #[inline(always)]
            unsafe fn cuMemPoolImportPointer(
                &self,
                ptr: *mut u64,
                pool: Handle,
                data: *mut u8,
            ) -> u32 {
                call!(self.cuMemPoolImportPointer(ptr, pool.cast(), data.cast()))
            }

            #[inline(always)]
            unsafe fn cuTensorMapEncodeTiled(
                &self,
                map: *mut c_void,
                data_type: u32,
                rank: u32,
                address: *mut c_void,
                dims: *const u64,
                strides: *const u64,
                box_dims: *const u32,
                element_strides: *const u32,
                interleave: u32,
                swizzle: u32,
                l2_promotion: u32,
                oob_fill: u32,
            ) -> u32 {
                let Some(encode) = self.table.cuTensorMapEncodeTiled else {
                    return NOT_FOUND;
                };
                // SAFETY: the header's signature; the caller vouches for the arguments.
                unsafe {
                    encode(
                        map.cast(),
                        $sys::CUtensorMapDataType(data_type),
                        rank,
                        address,
                        dims,
                        strides,
                        box_dims,
                        element_strides,
                        $sys::CUtensorMapInterleave(interleave),
                        $sys::CUtensorMapSwizzle(swizzle),
                        $sys::CUtensorMapL2promotion(l2_promotion),
                        $sys::CUtensorMapFloatOOBfill(oob_fill),
                    )
                }
                .0
            }
        }
    };
}

raw_driver!(Driver12, cuda_sys12, 12, &mut 0usize);
raw_driver!(Driver13, cuda_sys13, 13);
