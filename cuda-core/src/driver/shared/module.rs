//! [`ModuleApi`](crate::driver::api::ModuleApi) for both ABIs.

use super::*;

impl crate::driver::api::ModuleApi for Drv {
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
        let mut attributes = launch_attributes(params);
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
        use sys::CUjit_option as O;
        const LOG: usize = 1 << 16;
        let mut info = vec![0u8; LOG];
        let mut error = vec![0u8; LOG];
        // Where the driver reports the wall time: the cuda.h text says it overwrites
        // the option's value slot with a float, so the slot starts as a pointer to
        // this float, and whichever of the two changed is read (either way no write
        // goes anywhere but memory of ours). NaN: not written.
        let mut wall_ms = f32::NAN;
        let wall_ptr: *mut std::ffi::c_void = (&raw mut wall_ms).cast();
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
            std::ptr::without_provenance_mut(LOG),
            error.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(LOG),
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
            values.push(wall_ptr);
            values.len() - 1
        });
        let mut state = std::ptr::null_mut();
        call!(self.cuLinkCreate(
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state
        ))?;
        let text = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        };
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
