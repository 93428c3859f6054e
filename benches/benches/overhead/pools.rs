//! `alloc_free_1k` of each pool kind.

use super::*;

/// `alloc_free_1k` of each pool kind the device and driver have: cuda-core's allocation and
/// drop against raw's `cuMemAllocFromPoolAsync` and `cuMemFreeAsync` on the same pool.
pub(super) fn pool_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    use cuda_core::{
        memory::{
            ManagedMemoryPool, ManagedMemoryPoolOptions, PinnedMemoryPool, PinnedMemoryPoolOptions,
        },
        DeviceMemoryResource, DeviceMemoryResourceOptions,
    };
    let device = core.device;
    let mut kinds: Vec<(&'static str, Arc<dyn MemoryResource>, Handle)> = Vec::new();
    match DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()) {
        Ok(pool) => {
            pool.set_release_threshold(u64::MAX)
                .expect("the release threshold");
            let handle = pool.as_raw();
            kinds.push(("alloc_free_1k_device_pool", pool, handle));
        }
        Err(e) => println!("overhead: alloc_free_1k_device_pool skipped ({e})"),
    }
    for (name, options) in [
        (
            "alloc_free_1k_pinned_pool",
            PinnedMemoryPoolOptions::default(),
        ),
        (
            "alloc_free_1k_pinned_numa_pool",
            PinnedMemoryPoolOptions::default().with_numa_node(0),
        ),
    ] {
        match PinnedMemoryPool::new(device, options) {
            Ok(pool) => {
                pool.set_release_threshold(u64::MAX)
                    .expect("the release threshold");
                let handle = pool.as_raw();
                kinds.push((name, pool, handle));
            }
            Err(e) => println!("overhead: {name} skipped ({e})"),
        }
    }
    match ManagedMemoryPool::new(device, ManagedMemoryPoolOptions::default()) {
        Ok(pool) => {
            pool.set_release_threshold(u64::MAX)
                .expect("the release threshold");
            let handle = pool.as_raw();
            kinds.push(("alloc_free_1k_managed_pool", pool, handle));
        }
        Err(e) => println!("overhead: alloc_free_1k_managed_pool skipped ({e})"),
    }
    for (name, pool, handle) in &kinds {
        let handle = *handle;
        Case::new(name)
            .variant("raw", |b| {
                batched(
                    b,
                    || {
                        let mut ptr = 0;
                        // SAFETY: a writable out-pointer, a live pool whose memory the raw
                        // stream's device may use, and a live stream; the allocation is freed
                        // once, in order on the same stream.
                        unsafe {
                            check(
                                d.cuMemAllocFromPoolAsync(
                                    &mut ptr,
                                    ALLOC_BYTES,
                                    handle,
                                    raw.stream,
                                ),
                                "cuMemAllocFromPoolAsync",
                            );
                            check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
                        }
                    },
                    || raw_sync(d, raw.stream),
                );
            })
            .variant("cuda-core", |b| {
                batched(
                    b,
                    || drop(pool.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                    || core.stream.sync().unwrap(),
                );
            })
            .run(c);
    }
}
