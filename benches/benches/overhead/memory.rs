//! `alloc_free_1k`, `alloc_churn` and the 4 KiB copies.

use super::*;

/// Raw's batched allocation and free of `ALLOC_BYTES` from the default pool (both allocation
/// cases: `alloc_churn` measures cuda-core's stream cache against the same raw calls).
pub(super) fn raw_alloc_free<R: RawDriver>(b: &mut Bencher<'_>, d: &R, raw: &RawState) {
    batched(
        b,
        || {
            let mut ptr = 0;
            // SAFETY: a writable out-pointer, the default pool and a live stream; the
            // allocation is freed once, in order on the same stream.
            unsafe {
                check(
                    d.cuMemAllocFromPoolAsync(&mut ptr, ALLOC_BYTES, raw.pool, raw.stream),
                    "cuMemAllocFromPoolAsync",
                );
                check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
            }
        },
        || raw_sync(d, raw.stream),
    );
}

/// cudarc's batched allocation and free of `ALLOC_BYTES`.
pub(super) fn cudarc_alloc_free(b: &mut Bencher<'_>, rc: &Rc) {
    batched(
        b,
        // SAFETY: the memory is never read (cudarc marks `alloc` unsafe for that).
        || drop(unsafe { rc.stream.alloc::<u8>(ALLOC_BYTES) }.unwrap()),
        || rc.stream.synchronize().unwrap(),
    );
}

pub(super) fn memory_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &mut Core,
    raw: &RawState,
    rc: &mut Rc,
    host: &mut [Box<HostPage>; 3],
) {
    let [raw_host, core_host, rc_host] = host.each_mut().map(|page| &mut page.0);
    // The default pool wrapped by `from_raw`, which keeps no small buffers: the same driver
    // work as raw's.
    let default = cuda_core::DeviceMemoryResource::default_pool(core.device).expect("the pool");
    // SAFETY: the device's default pool, alive for the whole process.
    let wrapped =
        unsafe { cuda_core::DeviceMemoryResource::from_raw(default.as_raw(), core.device) }
            .expect("the wrapped pool");
    Case::new("alloc_free_1k")
        .variant("raw", |b| raw_alloc_free(b, d, raw))
        .variant("cuda-core", |b| {
            batched(
                b,
                || drop(wrapped.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| cudarc_alloc_free(b, rc))
        .run(c);

    Case::new("alloc_churn")
        .variant("raw", |b| raw_alloc_free(b, d, raw))
        .variant("cuda-core", |b| {
            batched(
                b,
                || drop(core.memory.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| cudarc_alloc_free(b, rc))
        .run(c);

    Case::new("copy_htod_4k")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: 4 KiB of host memory alive across the synchronise, into a 4 KiB buffer.
                unsafe {
                    check(
                        d.cuMemcpyHtoDAsync(
                            raw.copy,
                            raw_host.as_ptr().cast(),
                            BUFFER_BYTES,
                            raw.stream,
                        ),
                        "cuMemcpyHtoDAsync",
                    );
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_from_host(core_host, &core.stream).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.stream.memcpy_htod(rc_host, &mut rc.copy).unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);

    Case::new("copy_htod_4k_other_stream")
        .variant("raw", |b| {
            b.iter(|| {
                let [before, after] = raw.order;
                // SAFETY: handles made in setup; 4 KiB of host memory alive across the
                // synchronise, into a 4 KiB buffer of `raw.stream`, ordered after its work
                // and before its later work.
                unsafe {
                    check(d.cuEventRecord(before, raw.stream), "cuEventRecord");
                    check(d.cuStreamWaitEvent(raw.other, before), "cuStreamWaitEvent");
                    check(
                        d.cuMemcpyHtoDAsync(
                            raw.copy,
                            raw_host.as_ptr().cast(),
                            BUFFER_BYTES,
                            raw.other,
                        ),
                        "cuMemcpyHtoDAsync",
                    );
                    check(d.cuEventRecord(after, raw.other), "cuEventRecord");
                    check(d.cuStreamWaitEvent(raw.stream, after), "cuStreamWaitEvent");
                }
                raw_sync(d, raw.other);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_from_host(core_host, &core.other).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.other.memcpy_htod(rc_host, &mut rc.copy).unwrap();
                rc.other.synchronize().unwrap();
            });
        })
        .run(c);
    Case::new("copy_dtoh_4k")
        .variant("raw", |b| {
            // SAFETY: the variant's own page and the raw buffer, alive for the run, on the raw
            // stream.
            b.iter(|| unsafe { raw_dtoh(d, raw_host.as_mut_ptr(), raw.copy, raw.stream) });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_to_host(core_host, &core.stream).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.stream.memcpy_dtoh(&rc.copy, rc_host).unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);
}
