//! [`ModuleApi`](crate::driver::api::ModuleApi) for both ABIs.

use super::*;

impl crate::driver::api::ModuleApi for Drv {
    fn library_load_data(
        &self,
        image: &[u8],
        options: &LinkOptions,
    ) -> (Result<LibraryHandle>, JitLogs) {
        let mut info = vec![0u8; JIT_LOG_BYTES];
        let mut error = vec![0u8; JIT_LOG_BYTES];
        let options = LinkOptions {
            wall_time: false,
            ..*options
        };
        let mut jit = JitArrays::new(&options, &mut info, &mut error, std::ptr::null_mut());
        let mut library = std::ptr::null_mut();
        let result = (|| {
            call!(self.cuLibraryLoadData(
                &mut library,
                image.as_ptr().cast(),
                jit.options.as_mut_ptr(),
                jit.values.as_mut_ptr(),
                jit.options.len() as u32,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0
            ))
        })();
        let logs = JitLogs {
            info: log_text(&info),
            error: log_text(&error),
        };
        (result.map(|()| LibraryHandle(library.cast())), logs)
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

    fn library_get_variable(
        &self,
        library: LibraryHandle,
        name: &std::ffi::CStr,
        managed: bool,
    ) -> Result<(DevicePtr, usize)> {
        let mut ptr = 0;
        let mut bytes = 0;
        if managed {
            call!(self.cuLibraryGetManaged(&mut ptr, &mut bytes, library.0.cast(), name.as_ptr()))?;
        } else {
            call!(self.cuLibraryGetGlobal(&mut ptr, &mut bytes, library.0.cast(), name.as_ptr()))?;
        }
        Ok((ptr, bytes))
    }

    fn library_kernels(&self, library: LibraryHandle) -> Result<Vec<KernelHandle>> {
        let mut count = 0;
        call!(self.cuLibraryGetKernelCount(&mut count, library.0.cast()))?;
        let mut kernels = vec![std::ptr::null_mut(); count as usize];
        call!(self.cuLibraryEnumerateKernels(kernels.as_mut_ptr(), count, library.0.cast()))?;
        Ok(kernels
            .into_iter()
            .map(|k| KernelHandle(k.cast()))
            .collect())
    }

    fn kernel_get_attribute(
        &self,
        attribute: i32,
        kernel: KernelHandle,
        device: DeviceHandle,
    ) -> Result<i32> {
        let mut value = 0;
        let attribute = sys::CUfunction_attribute(attribute as _);
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
        let attribute = sys::CUfunction_attribute(attribute as _);
        call!(self.cuKernelSetAttribute(attribute, value, kernel.0.cast(), device))
    }

    fn kernel_get_param_info(
        &self,
        kernel: KernelHandle,
        index: usize,
    ) -> Result<Option<(usize, usize)>> {
        let f = crate::driver::shared::function!(self.cuKernelGetParamInfo);
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

    fn kernel_get_name(&self, kernel: KernelHandle) -> Result<String> {
        let mut name: *const c_char = std::ptr::null();
        call!(self.cuKernelGetName(&mut name, kernel.0.cast()))?;
        if name.is_null() {
            return Ok(String::new());
        }
        // SAFETY: the driver hands out a NUL-terminated name that lives with the kernel.
        Ok(unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned())
    }

    fn kernel_get_param_count(&self, kernel: KernelHandle) -> Result<usize> {
        self.abi_kernel_get_param_count(kernel)
    }

    fn kernel_get_function(&self, kernel: KernelHandle) -> Result<FunctionHandle> {
        let mut function = std::ptr::null_mut();
        call!(self.cuKernelGetFunction(&mut function, kernel.0.cast()))?;
        Ok(FunctionHandle(function.cast()))
    }

    fn library_get_module(&self, library: LibraryHandle) -> Result<ModuleHandle> {
        let mut module = std::ptr::null_mut();
        call!(self.cuLibraryGetModule(&mut module, library.0.cast()))?;
        Ok(ModuleHandle(module.cast()))
    }

    fn kernel_set_cache_config(
        &self,
        kernel: KernelHandle,
        config: u32,
        device: DeviceHandle,
    ) -> Result<()> {
        call!(self.cuKernelSetCacheConfig(kernel.0.cast(), sys::CUfunc_cache(config), device))
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
        let mut attributes = NO_ATTRIBUTES;
        let config = launch_config(params, &mut attributes);
        let mut clusters = 0;
        call!(self.cuOccupancyMaxActiveClusters(&mut clusters, function.0.cast(), &config))?;
        Ok(clusters)
    }

    fn occupancy_available_dynamic_smem(
        &self,
        function: FunctionHandle,
        num_blocks: i32,
        block_size: i32,
    ) -> Result<usize> {
        let mut bytes = 0;
        call!(self.cuOccupancyAvailableDynamicSMemPerBlock(
            &mut bytes,
            function.0.cast(),
            num_blocks,
            block_size
        ))?;
        Ok(bytes)
    }

    fn occupancy_max_potential_cluster_size(
        &self,
        function: FunctionHandle,
        params: &LaunchParams,
    ) -> Result<i32> {
        let mut attributes = NO_ATTRIBUTES;
        let config = launch_config(params, &mut attributes);
        let mut size = 0;
        call!(self.cuOccupancyMaxPotentialClusterSize(&mut size, function.0.cast(), &config))?;
        Ok(size)
    }

    fn link(
        &self,
        inputs: &[LinkInput<'_>],
        link_options: &LinkOptions,
    ) -> Result<(Vec<u8>, String)> {
        let mut info = vec![0u8; JIT_LOG_BYTES];
        let mut error = vec![0u8; JIT_LOG_BYTES];
        // Where the driver reports the wall time: the cuda.h text says it overwrites
        // the option's value slot with a float, so the slot starts as a pointer to
        // this float, and whichever of the two changed is read (either way no write
        // goes anywhere but memory of ours). NaN: not written.
        let mut wall_ms = f32::NAN;
        let wall_ptr: *mut std::ffi::c_void = (&raw mut wall_ms).cast();
        let JitArrays {
            mut options,
            mut values,
            wall_slot,
        } = JitArrays::new(link_options, &mut info, &mut error, wall_ptr);
        let mut state = std::ptr::null_mut();
        call!(self.cuLinkCreate(
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state
        ))?;
        let text = log_text;
        let mut result = Ok(());
        for input in inputs {
            result = call!(self.cuLinkAddData(
                state,
                sys::CUjitInputType(input.kind as _),
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
                let linked = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), size) };
                cubin = linked.to_vec();
            }
        }
        let destroyed = call!(self.cuLinkDestroy(state));
        let mut log = text(&info);
        if let Some(slot) = wall_slot {
            let written = values[slot];
            let ms = if written == wall_ptr {
                wall_ms
            } else {
                // The float the driver put in the slot: its low 32 bits (the slot's
                // first bytes on a little-endian machine).
                f32::from_bits(written.addr() as u32)
            };
            if !ms.is_nan() {
                if !log.is_empty() && !log.ends_with('\n') {
                    log.push('\n');
                }
                log.push_str(&format!("cuLinkComplete wall time: {ms} ms\n"));
            }
        }
        match result.and(destroyed) {
            Ok(()) => Ok((cubin, log)),
            Err(e) => {
                let log = text(&error);
                Err(Error::Link {
                    log: if log.is_empty() {
                        e.to_string()
                    } else {
                        format!("{e}\n{log}")
                    },
                })
            }
        }
    }
}

/// The size of each JIT log buffer handed to the driver.
const JIT_LOG_BYTES: usize = 1 << 16;

/// A log buffer's text, up to its first NUL.
fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The `CUjit_option` array of a link or a load and its pointer-sized value slots: first the
/// info and error log buffers with their sizes, then each option set in `LinkOptions`, in a
/// fixed order.
struct JitArrays {
    options: Vec<sys::CUjit_option>,
    values: Vec<*mut std::ffi::c_void>,
    /// The slot of `CU_JIT_WALL_TIME`, where asked for.
    wall_slot: Option<usize>,
}

impl JitArrays {
    /// The arrays for `link_options`, writing the logs to `info` and `error` (their lengths
    /// are the sizes given) and, with `wall_time`, the wall time where `wall` points.
    fn new(
        link_options: &LinkOptions,
        info: &mut [u8],
        error: &mut [u8],
        wall: *mut std::ffi::c_void,
    ) -> JitArrays {
        use sys::CUjit_option as O;
        let mut options = vec![
            O::CU_JIT_INFO_LOG_BUFFER,
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_ERROR_LOG_BUFFER,
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // Sizes and integers travel in the pointer-sized value slots, as the driver
        // API specifies.
        let mut values: Vec<*mut std::ffi::c_void> = vec![
            info.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(info.len()),
            error.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(error.len()),
        ];
        let mut int = |option, value: u32| {
            options.push(option);
            values.push(std::ptr::without_provenance_mut(value as usize));
        };
        if let Some(level) = link_options.optimization_level {
            int(O::CU_JIT_OPTIMIZATION_LEVEL, level);
        }
        if let Some(count) = link_options.max_registers {
            int(O::CU_JIT_MAX_REGISTERS, count);
        }
        if link_options.debug {
            int(O::CU_JIT_GENERATE_DEBUG_INFO, 1);
        }
        if link_options.line_info {
            int(O::CU_JIT_GENERATE_LINE_INFO, 1);
        }
        if link_options.verbose {
            int(O::CU_JIT_LOG_VERBOSE, 1);
        }
        let wall_slot = link_options.wall_time.then(|| {
            options.push(O::CU_JIT_WALL_TIME);
            values.push(wall);
            values.len() - 1
        });
        JitArrays {
            options,
            values,
            wall_slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each option is its own `CUjit_option` with its value in the slot beside it, after the
    /// two log buffers and their sizes (bugs caught: an option given another's code, a value
    /// in the wrong slot, the arrays of different lengths, a log size that is not the
    /// buffer's, an unset option passed anyway, the wall time asked of a load).
    #[test]
    fn every_jit_option_has_its_code_and_value_beside_it() {
        let (mut info, mut error) = (vec![0u8; 100], vec![0u8; 200]);
        let options = LinkOptions {
            optimization_level: Some(2),
            max_registers: Some(32),
            debug: true,
            line_info: true,
            verbose: true,
            wall_time: false,
        };
        let jit = JitArrays::new(&options, &mut info, &mut error, std::ptr::null_mut());
        let codes: Vec<u32> = jit.options.iter().map(|o| o.0).collect();
        // INFO_LOG_BUFFER 3, its size 4, ERROR_LOG_BUFFER 5, its size 6, OPTIMIZATION_LEVEL 7,
        // MAX_REGISTERS 0, GENERATE_DEBUG_INFO 11, GENERATE_LINE_INFO 13, LOG_VERBOSE 12.
        assert_eq!(codes, [3, 4, 5, 6, 7, 0, 11, 13, 12]);
        let addrs: Vec<usize> = jit.values.iter().map(|v| v.addr()).collect();
        assert_eq!(
            addrs,
            [
                info.as_ptr().addr(),
                100,
                error.as_ptr().addr(),
                200,
                2,
                32,
                1,
                1,
                1
            ]
        );
        assert_eq!(jit.wall_slot, None);
        // Nothing set: the logs alone.
        let (mut info, mut error) = (vec![0u8; 8], vec![0u8; 8]);
        let bare = JitArrays::new(
            &LinkOptions::default(),
            &mut info,
            &mut error,
            std::ptr::null_mut(),
        );
        assert_eq!(bare.options.len(), 4);
        assert_eq!(bare.values.len(), 4);
        // The wall time: its code (2) last, its slot pointing at the float.
        let mut wall = 0f32;
        let wall_ptr: *mut std::ffi::c_void = (&raw mut wall).cast();
        let timed = JitArrays::new(
            &LinkOptions {
                wall_time: true,
                ..LinkOptions::default()
            },
            &mut info,
            &mut error,
            wall_ptr,
        );
        assert_eq!(timed.options.last().map(|o| o.0), Some(2));
        assert_eq!(timed.wall_slot, Some(4));
        assert_eq!(timed.values[4], wall_ptr);
    }

    /// A log is its text up to the first NUL, or all of it without one (bugs caught: the
    /// buffer's zero tail kept, a log that fills the buffer dropped).
    #[test]
    fn a_log_ends_at_its_nul() {
        assert_eq!(log_text(b"ptxas info\0\0\0"), "ptxas info");
        assert_eq!(log_text(b"full"), "full");
        assert_eq!(log_text(b"\0junk"), "");
    }
}
