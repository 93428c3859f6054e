//! `launch_attrs`, `pdl_chain` and `pdl_chain_plain`.

use super::*;

/// The producer and consumer of [`PDL_KERNELS`], for cuda-core and as raw `CUkernel`s of a
/// library of the same cubin, with the device's highest launch priority; `None` (the PDL
/// cases skipped) before compute capability 9.0.
pub(super) struct Pdl {
    core: [Kernel; 2],
    raw: [Handle; 2],
    priority: i32,
}

pub(super) fn pdl_setup<R: RawDriver>(d: &R, device: Device) -> Option<Pdl> {
    match device.compute_capability() {
        Ok((major, _)) if major >= 9 => {}
        other => {
            println!("overhead: launch_attrs and pdl_chain need compute capability 9.0 ({other:?}); skipped");
            return None;
        }
    }
    let code = match Program::new(PDL_KERNELS, ProgramOptions::default())
        .with_name("pdl.cu")
        .compile(CodeType::Cubin, &[])
    {
        Ok(code) => code,
        Err(e) => {
            println!("overhead: cannot compile the PDL kernels ({e}); skipped");
            return None;
        }
    };
    let names = [PDL_PRODUCER, PDL_CONSUMER];
    let core = names.map(|name| code.get_kernel(name).expect("a PDL kernel"));
    let mut library = null_mut();
    let mut raw = [null_mut(); 2];
    // SAFETY: writable out-pointers; the image is a cubin, alive for the call; the library is
    // kept loaded for the run.
    unsafe {
        check(
            d.cuLibraryLoadData(&mut library, code.code().as_ptr().cast()),
            "cuLibraryLoadData",
        );
        for (kernel, name) in raw.iter_mut().zip(names) {
            let name = CString::new(name).expect("a kernel name");
            check(
                d.cuLibraryGetKernel(kernel, library, name.as_ptr()),
                "cuLibraryGetKernel",
            );
        }
    }
    let (_, priority) = device.stream_priority_range().expect("the priority range");
    Some(Pdl {
        core,
        raw,
        priority,
    })
}

/// `launch_attrs` (a launch with programmatic serialization and priority attributes), and
/// `pdl_chain` / `pdl_chain_plain` (a producer and its consumer launched, then the stream
/// synchronised: with and without programmatic dependent launch).
pub(super) fn pdl_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    pdl: &Pdl,
) {
    let (Some(core_k), Some(raw_k)) = (&core.kernels, &raw.kernels) else {
        return;
    };
    let attributed = LaunchConfig::new(GRID, BLOCK)
        .with_programmatic_serialization(true)
        .with_priority(pdl.priority);
    Case::new("launch_attrs")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: an empty kernel of no parameters, on a live stream.
                    let status = unsafe {
                        d.cuLaunchKernelEx_pdl(
                            raw_k[0],
                            GRID,
                            BLOCK,
                            Some(pdl.priority),
                            raw.stream,
                            null_mut(),
                        )
                    };
                    check(status, "cuLaunchKernelEx");
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &attributed, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        // cudarc: no equivalent (its launch builder has no cuLaunchKernelEx or attributes).
        .run(c);

    // 8 blocks of 128 threads over the 1024 u32s of two 4 KiB argument buffers.
    let (grid, block, n) = ([8, 1, 1], [128, 1, 1], 1024u32);
    let chain_config = LaunchConfig::new(grid, block);
    for programmatic in [true, false] {
        let name = if programmatic {
            "pdl_chain"
        } else {
            "pdl_chain_plain"
        };
        let consumer_config = chain_config.with_programmatic_serialization(programmatic);
        Case::new(name)
            .variant("raw", |b| {
                let [data, out, _, _] = &raw.args;
                b.iter(|| {
                    // SAFETY: 1024 u32s in each buffer, alive for the run, on a live stream.
                    unsafe {
                        let mut first = [arg(data), arg(&n)];
                        check(
                            d.cuLaunchKernel(
                                pdl.raw[0],
                                grid[0],
                                grid[1],
                                grid[2],
                                block[0],
                                block[1],
                                block[2],
                                0,
                                raw.stream,
                                first.as_mut_ptr(),
                                null_mut(),
                            ),
                            "cuLaunchKernel",
                        );
                        let mut second = [arg(data), arg(out), arg(&n)];
                        let status = if programmatic {
                            d.cuLaunchKernelEx_pdl(
                                pdl.raw[1],
                                grid,
                                block,
                                None,
                                raw.stream,
                                second.as_mut_ptr(),
                            )
                        } else {
                            d.cuLaunchKernel(
                                pdl.raw[1],
                                grid[0],
                                grid[1],
                                grid[2],
                                block[0],
                                block[1],
                                block[2],
                                0,
                                raw.stream,
                                second.as_mut_ptr(),
                                null_mut(),
                            )
                        };
                        check(status, "cuLaunchKernel(Ex)");
                    }
                    raw_sync(d, raw.stream);
                });
            })
            .variant("cuda-core", |b| {
                let [data, out, _, _] = &core.args;
                b.iter(|| {
                    // SAFETY: 1024 u32s in each buffer, alive for the run.
                    unsafe {
                        launch(&core.stream, &chain_config, &pdl.core[0], &[data, &n]).unwrap();
                        launch(
                            &core.stream,
                            &consumer_config,
                            &pdl.core[1],
                            &[data, out, &n],
                        )
                        .unwrap();
                    }
                    core.stream.sync().unwrap();
                });
            })
            // cudarc: no equivalent (no programmatic dependent launch).
            .run(c);
    }
}
