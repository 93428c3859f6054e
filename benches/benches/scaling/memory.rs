//! `alloc_free_live_n{1,100,100000}` and `alloc_churn_live_n{1,100,100000}`: allocating and
//! freeing one more 1 KiB buffer, stream-ordered, while that many are live (batched).
//!
//! - **raw**: `cuMemAllocFromPoolAsync` from the device's default pool and `cuMemFreeAsync`,
//!   on raw's stream, while raw holds that many allocations of its own from the same pool on
//!   the same stream.
//! - **cuda-core** (`alloc_free_live`): the default pool wrapped with
//!   `DeviceMemoryResource::from_raw`, which keeps no small buffers: the driver work raw does.
//! - **cuda-core** (`alloc_churn_live`): the device's default resource, whose stream keeps the
//!   freed buffer for the next allocation of its size (no driver call; faster than raw by
//!   design).
//!
//! cuda-core holds its live buffers as `Buffer`s from the default resource on its own stream.
//! Each variant's live set is there while the other runs too, so the pool holds twice the size.

use benches::raw::{check, RawDriver};
use criterion::Criterion;
use cuda_core::{Allocate, Buffer, Device, DeviceMemoryResource, StreamOptions};

use crate::common::{batched, Case};
use crate::{raw_sync, scaled, RawState, RawStream};

/// The sizes, in live buffers.
pub(crate) const SIZES: [usize; 3] = [1, 100, 100_000];
/// Bytes of every buffer, live or measured.
const ALLOC_BYTES: usize = 1024;

pub(crate) fn memory_cases<R: RawDriver>(c: &mut Criterion, d: &R, device: Device, raw: &RawState) {
    let stream = device
        .create_stream(StreamOptions::default())
        .expect("a stream");
    let memory = device.memory_resource().expect("the default resource");
    let default = DeviceMemoryResource::default_pool(device).expect("the default pool");
    // SAFETY: the device's default pool, alive for the whole process.
    let wrapped =
        unsafe { DeviceMemoryResource::from_raw(default.as_raw(), device) }.expect("the pool");
    let raw_stream = RawStream::new(d);
    let pool = raw.pool.0;
    let raw_alloc = |ptr: &mut u64| {
        // SAFETY: a writable out-pointer, the default pool and a live stream.
        check(
            unsafe { d.cuMemAllocFromPoolAsync(ptr, ALLOC_BYTES, pool, raw_stream.handle) },
            "cuMemAllocFromPoolAsync",
        );
    };
    let raw_free = |ptr: u64| {
        // SAFETY: an allocation of the pool, freed once, in order on the stream it was made on.
        check(
            unsafe { d.cuMemFreeAsync(ptr, raw_stream.handle) },
            "cuMemFreeAsync",
        );
    };
    let raw_alloc_free = |b: &mut criterion::Bencher<'_>| {
        batched(
            b,
            || {
                let mut ptr = 0;
                raw_alloc(&mut ptr);
                raw_free(ptr);
            },
            || raw_sync(d, raw_stream.handle),
        );
    };

    let mut raw_live: Vec<u64> = Vec::new();
    let mut core_live: Vec<Buffer> = Vec::new();
    for size in SIZES {
        while raw_live.len() < size {
            let mut ptr = 0;
            raw_alloc(&mut ptr);
            raw_live.push(ptr);
        }
        while core_live.len() < size {
            core_live.push(
                memory
                    .allocate(ALLOC_BYTES, &stream)
                    .expect("a live buffer"),
            );
        }
        raw_sync(d, raw_stream.handle);
        stream.sync().expect("synchronising");

        Case::new(scaled("alloc_free_live", size))
            .variant("raw", raw_alloc_free)
            .variant("cuda-core", |b| {
                batched(
                    b,
                    || drop(wrapped.allocate(ALLOC_BYTES, &stream).unwrap()),
                    || stream.sync().unwrap(),
                );
            })
            .run(c);
        Case::new(scaled("alloc_churn_live", size))
            .variant("raw", raw_alloc_free)
            .variant("cuda-core", |b| {
                batched(
                    b,
                    || drop(memory.allocate(ALLOC_BYTES, &stream).unwrap()),
                    || stream.sync().unwrap(),
                );
            })
            .run(c);
    }
    for ptr in raw_live {
        raw_free(ptr);
    }
    drop(core_live);
    raw_sync(d, raw_stream.handle);
    stream.sync().expect("synchronising");
}
