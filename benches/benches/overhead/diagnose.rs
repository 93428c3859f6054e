//! `CUDA_CORE_BENCH_DIAGNOSE`: where cuda-core's extra time goes, and the raw helpers it shares with the cases.

use super::*;

/// With `CUDA_CORE_BENCH_DIAGNOSE` set, instead of the cases: where does cuda-core's extra
/// time in `launch_*`, `event_create_destroy`, `event_record`, `tensor_map_encode` and
/// `copy_dtoh_4k` go? Each launch case crosses the variants with the streams
/// (`raw@core-stream`: the raw call on cuda-core's stream; `cuda-core@raw-stream`: cuda-core
/// on the raw stream, wrapped), event creation adds a raw variant that also reads the current
/// context first, as cuda-core does, the record runs the raw call on cuda-core's handles and
/// with the record count cuda-core keeps, the encoding the raw call with the context read
/// cuda-core makes and without a current context, the replay the hand-written loop on
/// cuda-core's kernel and stream, the copy runs the raw call on cuda-core's memory, then on
/// its memory and stream, and the pool's allocation and free the raw pair with and without
/// context reads (and once with no context current).
pub(super) fn diagnose<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    raw_stream: &Stream,
    host: &mut [Box<HostPage>; 3],
) {
    // Is `copy_dtoh_4k`'s gap the memory or the stream each variant uses rather than the
    // call? `raw@core-memory` is the raw call on cuda-core's host page and device buffer,
    // `raw@core-memory+stream` that on cuda-core's stream too, and `raw+get-current@...` that
    // after the current-context read cuda-core makes.
    // Raw pointers: two variants write cuda-core's page; they run one at a time.
    let [raw_page, core_page, _] = host.each_mut().map(|page| page.0.as_mut_ptr());
    let core_stream = core.stream.as_raw();
    let raw_dtoh = |host, device_ptr, stream| {
        // SAFETY: for each call below, `HostPage`s and device buffers alive for the run, each
        // page written by one variant at a time, on streams of the primary context.
        unsafe { raw_dtoh(d, host, device_ptr, stream) }
    };
    Case::new("diag_copy_dtoh_4k")
        .variant("raw", |b| {
            b.iter(|| raw_dtoh(raw_page, raw.copy, raw.stream))
        })
        .variant("raw@core-memory", |b| {
            b.iter(|| raw_dtoh(core_page, core.copy.ptr().0, raw.stream))
        })
        .variant("raw@core-memory+stream", |b| {
            b.iter(|| raw_dtoh(core_page, core.copy.ptr().0, core_stream))
        })
        // cuda-core reads the current context before a copy (one `cuCtxGetCurrent`).
        .variant("raw+get-current@core-memory+stream", |b| {
            b.iter(|| {
                let mut current = null_mut();
                // SAFETY: a writable out-pointer.
                check(
                    unsafe { d.cuCtxGetCurrent(&mut current) },
                    "cuCtxGetCurrent",
                );
                black_box(current);
                raw_dtoh(core_page, core.copy.ptr().0, core_stream)
            })
        })
        .variant("cuda-core", |b| {
            // SAFETY: as above; no other reference to the page is in use meanwhile.
            let page = unsafe { std::slice::from_raw_parts_mut(core_page, BUFFER_BYTES) };
            b.iter(|| core.copy.copy_to_host(page, &core.stream).unwrap());
        })
        .run(c);

    // Is `event_record`'s gap the handles cuda-core's event and stream are (`raw@core-handles`:
    // the raw call on them), the record count it keeps for recycling (`raw+count`: the raw
    // call and one atomic increment), or its stream (`cuda-core@raw-stream`)?
    let core_event = core.record.as_raw();
    let records = std::sync::atomic::AtomicU32::new(0);
    let raw_record = |event: Handle, stream: Handle| {
        // SAFETY: events and streams of the primary context, alive for the run.
        check(unsafe { d.cuEventRecord(event, stream) }, "cuEventRecord");
    };
    Case::new("diag_event_record")
        .variant("raw", |b| {
            batched(
                b,
                || raw_record(raw.record, raw.stream),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-handles", |b| {
            batched(
                b,
                || raw_record(core_event, core_stream),
                || raw_sync(d, core_stream),
            );
        })
        .variant("raw+count", |b| {
            batched(
                b,
                || {
                    raw_record(raw.record, raw.stream);
                    records.fetch_add(1, std::sync::atomic::Ordering::Release);
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                || core.stream.record(&core.record).unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                || raw_stream.record(&core.record).unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);
    black_box(records.into_inner());

    tensor_map_diagnose(c, d, core);
    replay_diagnose(c, d, core, raw);
    alloc_diagnose(c, d, core, raw);

    Case::new("diag_event_create_destroy")
        .variant("raw", |b| b.iter(|| raw_event_create_destroy(d, false)))
        .variant("raw+get-current", |b| {
            b.iter(|| raw_event_create_destroy(d, true))
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_event(EventOptions::default()).unwrap()));
        })
        .run(c);

    let (Some(core_k), Some(raw_k)) = (&core.kernels, &raw.kernels) else {
        return;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    let n = 1024i32;
    let raw_launch = |kernel: Handle, stream: Handle, params: &mut [*mut c_void]| {
        // SAFETY: as in `launch_cases`.
        let status = unsafe {
            d.cuLaunchKernel(
                kernel,
                GRID[0],
                GRID[1],
                GRID[2],
                BLOCK[0],
                BLOCK[1],
                BLOCK[2],
                0,
                stream,
                params.as_mut_ptr(),
                null_mut(),
            )
        };
        check(status, "cuLaunchKernel");
    };
    let [p0, p1, p2, _] = &raw.args;
    let [b0, b1, b2, _] = &core.args;
    Case::new("diag_launch_4")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        raw_k[1],
                        raw.stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    )
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-stream", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        raw_k[1],
                        core_stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    )
                },
                || raw_sync(d, core_stream),
            );
        })
        .variant("raw-kernel@core-kernel", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        core_k[1].as_raw(),
                        raw.stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    );
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel; the buffers outlive the run.
                || unsafe { launch(&core.stream, &config, &core_k[1], &[b0, b1, b2, &n]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                // SAFETY: as above.
                || unsafe { launch(raw_stream, &config, &core_k[1], &[b0, b1, b2, &n]) }.unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);

    let cluster = [2, 1, 1];
    let clustered = LaunchConfig::new(cluster, BLOCK).with_cluster(cluster);
    let raw_cluster = |kernel: Handle, stream: Handle| {
        // SAFETY: an empty kernel of no parameters, two blocks in one cluster.
        let status = unsafe {
            d.cuLaunchKernelEx_cluster(kernel, cluster, BLOCK, cluster, stream, null_mut())
        };
        check(status, "cuLaunchKernelEx");
    };
    Case::new("diag_launch_cluster")
        .variant("raw", |b| {
            batched(
                b,
                || raw_cluster(raw_k[0], raw.stream),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-stream", |b| {
            batched(
                b,
                || raw_cluster(raw_k[0], core_stream),
                || raw_sync(d, core_stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &clustered, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                // SAFETY: as above.
                || unsafe { launch(raw_stream, &clustered, &core_k[0], &[]) }.unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);

    // Is `launch_attrs`' gap (1.09-1.11 on the GPU, +36 ns on the stand-in) the kernel or the
    // stream each side launches on? The attributes are those of the case: programmatic
    // serialization and the highest priority (compute capability 9.0 and newer).
    if !matches!(core.device.compute_capability(), Ok((major, _)) if major >= 9) {
        return;
    }
    let (_, priority) = core
        .device
        .stream_priority_range()
        .expect("the priority range");
    let attributed = LaunchConfig::new(GRID, BLOCK)
        .with_programmatic_serialization(true)
        .with_priority(priority);
    let raw_attrs = |kernel: Handle, stream: Handle| {
        // SAFETY: an empty kernel of no parameters, on a live stream.
        let status = unsafe {
            d.cuLaunchKernelEx_pdl(kernel, GRID, BLOCK, Some(priority), stream, null_mut())
        };
        check(status, "cuLaunchKernelEx");
    };
    Case::new("diag_launch_attrs")
        .variant("raw", |b| {
            batched(
                b,
                || raw_attrs(raw_k[0], raw.stream),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-stream", |b| {
            batched(
                b,
                || raw_attrs(raw_k[0], core_stream),
                || raw_sync(d, core_stream),
            );
        })
        .variant("raw@core-kernel+stream", |b| {
            batched(
                b,
                || raw_attrs(core_k[0].as_raw(), core_stream),
                || raw_sync(d, core_stream),
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
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                // SAFETY: as above.
                || unsafe { launch(raw_stream, &attributed, &core_k[0], &[]) }.unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);
}

/// A raw event without timing, made and destroyed; `read_current` first reads the current
/// context, as cuda-core does to make sure of the event's context.
#[inline(always)]
pub(super) fn raw_event_create_destroy<R: RawDriver>(d: &R, read_current: bool) {
    let (mut event, mut context) = (null_mut(), null_mut());
    // SAFETY: writable out-pointers, then the event just made.
    unsafe {
        if read_current {
            check(d.cuCtxGetCurrent(&mut context), "cuCtxGetCurrent");
            black_box(context);
        }
        check(
            d.cuEventCreate(&mut event, EVENT_DISABLE_TIMING),
            "cuEventCreate",
        );
        check(d.cuEventDestroy(event), "cuEventDestroy");
    }
}

/// `cuStreamSynchronize`, checked.
#[inline(always)]
/// The raw `copy_dtoh_4k`: 4 KiB from `device_ptr` into `host` on `stream`, then a synchronise.
///
/// # Safety
///
/// `host` is 4 KiB of writable memory that nothing else uses meanwhile, `device_ptr` a live
/// device buffer of 4 KiB, and `stream` a live stream of the current context.
pub(super) unsafe fn raw_dtoh<R: RawDriver>(d: &R, host: *mut u8, device_ptr: u64, stream: Handle) {
    // SAFETY: as the caller promises; the synchronise ends the copy before returning.
    let status = unsafe { d.cuMemcpyDtoHAsync(host.cast(), device_ptr, BUFFER_BYTES, stream) };
    check(status, "cuMemcpyDtoHAsync");
    raw_sync(d, stream);
}

pub(super) fn raw_sync<R: RawDriver>(d: &R, stream: Handle) {
    // SAFETY: a stream made in `raw_setup`, alive for the whole run.
    let status = unsafe { d.cuStreamSynchronize(stream) };
    check(status, "cuStreamSynchronize");
}

/// `diag_alloc_free_1k`: `alloc_free_1k` through the pool wrapped as raw uses it, beside the
/// raw pair with the two reference counts a buffer keeps (`raw+arcs`), the raw pair with a
/// current-context read before each call (`raw+get-current`: what the pair
/// would cost if it made the context current, as cuda-core's pools do not on streams they
/// made), and whether the driver allocates and frees from the pool on a stream with no
/// context current (printed once: the GPU's side of the pools' making no context calls).
fn alloc_diagnose<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    let alloc_free = |read: bool| {
        let mut ptr = 0;
        let mut current = null_mut();
        // SAFETY: writable out-pointers, the default pool and a live stream; the allocation
        // is freed once, in order on the same stream.
        unsafe {
            if read {
                check(d.cuCtxGetCurrent(&mut current), "cuCtxGetCurrent");
            }
            check(
                d.cuMemAllocFromPoolAsync(&mut ptr, ALLOC_BYTES, raw.pool, raw.stream),
                "cuMemAllocFromPoolAsync",
            );
            if read {
                check(d.cuCtxGetCurrent(&mut current), "cuCtxGetCurrent");
            }
            check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
        }
        black_box(current);
    };
    let mut context = null_mut();
    // SAFETY: a writable out-pointer; then, for the probe, no context current for the two
    // calls, then the one that was.
    let (alloc_status, free_status) = unsafe {
        check(d.cuCtxGetCurrent(&mut context), "cuCtxGetCurrent");
        check(d.cuCtxSetCurrent(null_mut()), "cuCtxSetCurrent");
        let mut ptr = 0;
        let alloc = d.cuMemAllocFromPoolAsync(&mut ptr, ALLOC_BYTES, raw.pool, raw.stream);
        let free = if alloc == SUCCESS {
            d.cuMemFreeAsync(ptr, raw.stream)
        } else {
            SUCCESS
        };
        check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        (alloc, free)
    };
    raw_sync(d, raw.stream);
    println!(
        "diag_alloc_free_1k: with no context current the pool's allocation returns \
         {alloc_status} and its free {free_status}"
    );
    let default = cuda_core::DeviceMemoryResource::default_pool(core.device).expect("the pool");
    // SAFETY: the device's default pool, alive for the whole process.
    let wrapped =
        unsafe { cuda_core::DeviceMemoryResource::from_raw(default.as_raw(), core.device) }
            .expect("the wrapped pool");
    Case::new("diag_alloc_free_1k")
        .variant("raw", |b| {
            batched(b, || alloc_free(false), || raw_sync(d, raw.stream))
        })
        .variant("raw+get-current", |b| {
            batched(b, || alloc_free(true), || raw_sync(d, raw.stream))
        })
        .variant("raw+arcs", |b| {
            // What a buffer holds beyond raw's pointer: its resource and its stream, each
            // by reference count (two atomic increments at the allocation, two decrements
            // at the free).
            let (resource, stream) = (Arc::new(0u64), Arc::new(0u64));
            batched(
                b,
                || {
                    let held = (
                        black_box(Arc::clone(&resource)),
                        black_box(Arc::clone(&stream)),
                    );
                    alloc_free(false);
                    drop(black_box(held));
                },
                || raw_sync(d, raw.stream),
            )
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                || drop(wrapped.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                || core.stream.sync().unwrap(),
            );
        })
        .run(c);
}
