//! `copy_single_1000`, `copy_batch_1000` and `copy_batch_1000_build`.

use super::*;

/// Copies of the copy-batch cases, and the bytes of each.
pub(super) const BATCH_COPIES: usize = 1000;
pub(super) const BATCH_COPY_BYTES: usize = 64;

/// `copy_single_1000`, `copy_batch_1000` and `copy_batch_1000_build`: 1000 copies of 64 bytes
/// between 1000 pairs of buffers of the default pool (each variant its own), then the stream
/// synchronised. Skipped on drivers without `cuMemcpyBatchAsync` (before 12.8).
pub(super) fn copy_batch_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
) {
    if !d.has_memcpy_batch() {
        println!("overhead: the driver has no cuMemcpyBatchAsync; the copy batch cases skipped");
        return;
    }
    let allocate = || -> Vec<Buffer> {
        (0..BATCH_COPIES)
            .map(|_| {
                core.memory
                    .allocate(BATCH_COPY_BYTES, &core.stream)
                    .unwrap()
            })
            .collect()
    };
    let sources = allocate();
    let mut targets = allocate();
    let raw_buffers = || -> Vec<u64> {
        (0..BATCH_COPIES)
            .map(|_| {
                let mut ptr = 0;
                // SAFETY: a writable out-pointer, the pool and stream of `raw_setup`.
                let status = unsafe {
                    d.cuMemAllocFromPoolAsync(&mut ptr, BATCH_COPY_BYTES, raw.pool, raw.stream)
                };
                check(status, "cuMemAllocFromPoolAsync");
                ptr
            })
            .collect()
    };
    let (mut raw_srcs, mut raw_dsts) = (raw_buffers(), raw_buffers());
    let mut raw_sizes = vec![BATCH_COPY_BYTES; BATCH_COPIES];
    raw_sync(d, raw.stream);
    core.stream.sync().unwrap();

    Case::new("copy_single_1000")
        .variant("raw", |b| {
            b.iter(|| {
                for (&dst, &src) in raw_dsts.iter().zip(&raw_srcs) {
                    // SAFETY: two live 64-byte allocations of the raw pool.
                    let status = unsafe { d.cuMemcpyAsync(dst, src, BATCH_COPY_BYTES, raw.stream) };
                    check(status, "cuMemcpyAsync");
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                for (src, dst) in sources.iter().zip(targets.iter_mut()) {
                    src.copy_to(dst, &core.stream).unwrap();
                }
                core.stream.sync().unwrap();
            });
        })
        .run(c);

    let mut prebuilt = CopyBatch::with_capacity(&core.stream, BATCH_COPIES);
    for (src, dst) in sources.iter().zip(targets.iter_mut()) {
        prebuilt.copy_whole(src, dst).unwrap();
    }
    Case::new("copy_batch_1000")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: 1000 entries in each array, live allocations of the raw pool.
                let status = unsafe {
                    d.cuMemcpyBatchAsync(
                        raw_dsts.as_mut_ptr(),
                        raw_srcs.as_mut_ptr(),
                        raw_sizes.as_mut_ptr(),
                        BATCH_COPIES,
                        raw.stream,
                    )
                };
                check(status, "cuMemcpyBatchAsync");
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                prebuilt.submit().unwrap();
                core.stream.sync().unwrap();
            });
        })
        .run(c);
    drop(prebuilt);

    let (mut dsts, mut srcs, mut sizes) = (
        vec![0u64; BATCH_COPIES],
        vec![0u64; BATCH_COPIES],
        vec![0usize; BATCH_COPIES],
    );
    Case::new("copy_batch_1000_build")
        .variant("raw", |b| {
            b.iter(|| {
                for i in 0..BATCH_COPIES {
                    dsts[i] = black_box(raw_dsts[i]);
                    srcs[i] = black_box(raw_srcs[i]);
                    sizes[i] = black_box(BATCH_COPY_BYTES);
                }
                // SAFETY: as in `copy_batch_1000`.
                let status = unsafe {
                    d.cuMemcpyBatchAsync(
                        dsts.as_mut_ptr(),
                        srcs.as_mut_ptr(),
                        sizes.as_mut_ptr(),
                        BATCH_COPIES,
                        raw.stream,
                    )
                };
                check(status, "cuMemcpyBatchAsync");
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                let mut batch = CopyBatch::with_capacity(&core.stream, BATCH_COPIES);
                for (src, dst) in sources.iter().zip(targets.iter_mut()) {
                    batch.copy_whole(src, dst).unwrap();
                }
                batch.submit().unwrap();
                core.stream.sync().unwrap();
            });
        })
        .run(c);

    for ptr in raw_srcs.iter().chain(&raw_dsts) {
        // SAFETY: allocations of the raw pool, freed once, after the last copy.
        check(
            unsafe { d.cuMemFreeAsync(*ptr, raw.stream) },
            "cuMemFreeAsync",
        );
    }
    raw_sync(d, raw.stream);
}
