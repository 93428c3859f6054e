//! Batched copies (`CopyBatch`, `cuMemcpyBatchAsync`) and pitched memory with its 2D and 3D
//! copies: what reaches the driver under each ABI (the stand-in), the checks before it, and on
//! the GPU that the copies move the bytes they name.

use crate::common;
use crate::common::stream;
use crate::common::{standin, Gate};

use std::time::Duration;

use cuda_core::memory::{copy_2d, copy_3d, CopyAttributes, CopyBatch, CopyRegion, SrcAccessOrder};
use cuda_core::{
    info::{driver_info, Abi},
    memory::{ManagedMemoryResource, MemoryLocation, PitchedBuffer, PitchedDst, PitchedSrc},
    Allocate, Buffer, CaptureMode, Device, DeviceMemoryResource, DeviceMemoryResourceOptions,
    Error, Stream, StreamOptions,
};

/// The reason of an [`Error::InvalidArgument`] named `name`, or a panic saying what came.
fn refused<T: std::fmt::Debug>(result: cuda_core::Result<T>, name: &str) -> String {
    match result {
        Err(Error::InvalidArgument { name: n, reason }) if n == name => reason,
        other => panic!("expected InvalidArgument `{name}`, got {other:?}"),
    }
}

/// The handle a logged creation made (`cuStreamCreate s3 ...` gives `s3`).
fn made(verb: &str) -> String {
    let line = standin::calls(verb).pop().expect("a call was logged");
    line.split_whitespace().nth(1).expect("a handle").to_owned()
}

/// The index of the first logged line at or after `from` containing every needle.
fn find(log: &[&str], from: usize, needles: &[&str]) -> usize {
    (from..log.len())
        .find(|&i| needles.iter().all(|n| log[i].contains(n)))
        .unwrap_or_else(|| {
            panic!(
                "no line with {needles:?} after line {from} in:\n{}",
                log.join("\n")
            )
        })
}

/// The batch call the ABI in use makes: the 13 header's `_v2` export or the 12 header's.
fn batch_call() -> &'static str {
    match driver_info().unwrap().abi {
        Abi::Cuda12 => "cuMemcpyBatchAsync count",
        _ => "cuMemcpyBatchAsync_v2 count",
    }
}

/// Runs a stand-in test under both ABIs (the stand-in reports a 13.0 driver).
fn under_both_abis(function: &str, defines: &[&str], body: fn()) {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            function,
            defines,
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            body,
        );
    }
}

#[test]
fn a_batch_reaches_the_driver_as_its_copies_and_runs_of_attributes() {
    under_both_abis(
        "a_batch_reaches_the_driver_as_its_copies_and_runs_of_attributes",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            let memory = device.memory_resource().unwrap();
            let src = memory.allocate(1 << 20, &stream).unwrap();
            let mut dst = memory.allocate(1 << 20, &stream).unwrap();
            let (s, d) = (src.ptr().0, dst.ptr().0);
            let hinted = CopyAttributes::default()
                .with_prefer_overlap_with_compute(true)
                .with_dst_location_hint(MemoryLocation::Device(Device::new(1).unwrap()));
            let mut batch = CopyBatch::new(&stream);
            let dst = batch.destination(&mut dst);
            batch.copy(&src, 0, dst, 4096, 64).unwrap();
            batch.copy(&src, 64, dst, 8192, 32).unwrap();
            batch.set_attributes(hinted).unwrap();
            batch.copy(&src, 128, dst, 0, 16).unwrap();
            // The same attributes again: no new run.
            batch.set_attributes(hinted).unwrap();
            batch.copy(&src, 1000, dst, 20000, 8).unwrap();
            batch
                .set_attributes(
                    CopyAttributes::default()
                        .with_src_location_hint(MemoryLocation::HostNuma(3))
                        .with_src_access_order(SrcAccessOrder::Stream),
                )
                .unwrap();
            batch.copy(&src, 2000, dst, 30000, 1).unwrap();
            assert_eq!((batch.len(), batch.attribute_runs()), (5, 3));

            standin::clear_log();
            batch.submit().unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(&log, 0, &[batch_call(), "=5 runs=3"]);
            let runs = [
                "run from 0: order=1 src=0:0 dst=0:0 flags=0",
                "run from 2: order=1 src=0:0 dst=1:1 flags=1",
                "run from 4: order=1 src=3:3 dst=0:0 flags=0",
            ];
            for (i, run) in runs.iter().enumerate() {
                assert!(log[at + 1 + i].ends_with(run), "{text}");
            }
            let copies = [
                (d + 4096, s, 64),
                (d + 8192, s + 64, 32),
                (d, s + 128, 16),
                (d + 20000, s + 1000, 8),
                (d + 30000, s + 2000, 1),
            ];
            for (i, (to, from, size)) in copies.iter().enumerate() {
                let line = format!("copy {i}: {to:#x} <- {from:#x} size={size}");
                assert!(log[at + 4 + i].ends_with(&line), "{line} in\n{text}");
            }
            // Device memory only: the call returns without waiting.
            assert!(standin::calls("cuStreamSynchronize").is_empty(), "{text}");

            // Submitted again, as built: one more call, and nothing else queued.
            standin::clear_log();
            batch.submit().unwrap();
            assert_eq!(standin::calls(batch_call()).len(), 1);
            assert!(standin::calls("cuEvent").is_empty(), "{}", standin::log());
        },
    );
}

#[test]
fn a_batch_with_host_memory_waits_where_the_driver_may_use_it_after_the_call() {
    under_both_abis(
        "a_batch_with_host_memory_waits_where_the_driver_may_use_it_after_the_call",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            let s = made("cuStreamCreate");
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(4096, &stream)
                .unwrap();
            let ptr = buffer.ptr().0;
            let input = vec![3u32; 256];
            let mut output = vec![0u16; 100];
            let synced = || {
                standin::calls("cuStreamSynchronize")
                    .iter()
                    .any(|l| l.ends_with(&format!(" {s}")))
            };

            // A host source read in stream order: the driver may read it after the call.
            let mut batch = CopyBatch::new(&stream);
            let to = batch.destination(&mut buffer);
            batch.copy_from_host(&input, to, 0).unwrap();
            standin::clear_log();
            batch.submit().unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(&log, 0, &[batch_call(), "=1 runs=1"]);
            find(&log, at, &["cuStreamSynchronize", &s]);
            assert!(
                log[at + 2].ends_with(&format!(
                    "copy 0: {:#x} <- {:#x} size=1024",
                    ptr,
                    input.as_ptr() as u64
                )),
                "{text}"
            );
            drop(batch);

            // Read during the call: no wait.
            let mut batch = CopyBatch::new(&stream);
            batch
                .set_attributes(
                    CopyAttributes::default().with_src_access_order(SrcAccessOrder::DuringCall),
                )
                .unwrap();
            let to = batch.destination(&mut buffer);
            batch.copy_from_host(&input, to, 1024).unwrap();
            standin::clear_log();
            batch.submit().unwrap();
            assert!(standin::log().contains("order=2"), "{}", standin::log());
            assert!(!synced(), "{}", standin::log());
            drop(batch);

            // A host destination: always waited for.
            let mut batch = CopyBatch::new(&stream);
            batch
                .set_attributes(
                    CopyAttributes::default().with_src_access_order(SrcAccessOrder::Stream),
                )
                .unwrap();
            batch.copy_to_host(&buffer, 2048, &mut output).unwrap();
            standin::clear_log();
            batch.submit().unwrap();
            assert!(synced(), "{}", standin::log());
            assert!(standin::log().contains("size=200"), "{}", standin::log());
        },
    );
}

#[test]
fn a_batch_on_another_stream_is_ordered_after_and_before_its_buffers_streams() {
    standin::run(
        module_path!(),
        "a_batch_on_another_stream_is_ordered_after_and_before_its_buffers_streams",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let (s1, home1) = (stream(device), made("cuStreamCreate"));
            let (s2, home2) = (stream(device), made("cuStreamCreate"));
            let (s3, other) = (stream(device), made("cuStreamCreate"));
            let memory = device.memory_resource().unwrap();
            let a = memory.allocate(1 << 20, &s1).unwrap();
            let mut b = memory.allocate(1 << 20, &s1).unwrap();
            let mut c = memory.allocate(1 << 20, &s2).unwrap();
            let mut batch = CopyBatch::new(&s3);
            let (b, c) = (batch.destination(&mut b), batch.destination(&mut c));
            batch.copy(&a, 0, b, 0, 64).unwrap();
            batch.copy(&a, 64, c, 0, 64).unwrap();
            batch.copy_within(b, 128, c, 128, 64).unwrap();
            standin::clear_log();
            batch.submit().unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(&log, 0, &[batch_call(), &format!("on {other}")]);
            // The batch's stream waits once for each home stream, before the batch.
            let waits: Vec<usize> = (0..at)
                .filter(|&i| log[i].contains(&format!("cuStreamWaitEvent {other} waits")))
                .collect();
            assert_eq!(waits.len(), 2, "{text}");
            for home in [&home1, &home2] {
                let record = find(&log, 0, &["cuEventRecord", &format!("on {home}")]);
                let event = log[record].split_whitespace().nth(1).unwrap();
                find(&log, record, &[&format!("{other} waits for {event}")]);
                assert!(record < at);
            }
            // And each home waits for the batch after it.
            let record = find(&log, at, &["cuEventRecord", &format!("on {other}")]);
            let event = log[record].split_whitespace().nth(1).unwrap();
            for home in [&home1, &home2] {
                find(&log, record, &[&format!("{home} waits for {event}")]);
            }
        },
    );
}

#[test]
fn bad_batches_are_refused_before_the_driver_naming_the_copy() {
    standin::run(
        module_path!(),
        "bad_batches_are_refused_before_the_driver_naming_the_copy",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            let memory = device.memory_resource().unwrap();
            let a = memory.allocate(4096, &stream).unwrap();
            let mut b = memory.allocate(4096, &stream).unwrap();
            let mut c = memory.allocate(4096, &stream).unwrap();
            let mut small = memory.allocate(100, &stream).unwrap();
            let (empty, large) = ([0u8; 0], [0u8; 101]);
            standin::clear_log();

            // Room for more copies than memory holds is a hint not taken, not a panic.
            assert!(CopyBatch::with_capacity(&stream, usize::MAX).is_empty());
            {
                let mut batch = CopyBatch::new(&stream);
                let r = refused(batch.submit(), "self");
                assert!(r.contains("no copy"), "{r}");
                let to_b = batch.destination(&mut b);
                let r = refused(batch.copy(&a, 0, to_b, 0, 0).map(|_| ()), "bytes");
                assert!(r.contains("copy 0") && r.contains("zero bytes"), "{r}");
                batch.copy(&a, 0, to_b, 0, 64).unwrap();
                let r = refused(batch.copy(&a, 4000, to_b, 0, 97).map(|_| ()), "src");
                assert!(
                    r.contains("copy 1") && r.contains("4096-byte buffer"),
                    "{r}"
                );
                let r = refused(batch.copy(&a, 0, to_b, usize::MAX, 2).map(|_| ()), "dst");
                assert!(r.contains("copy 1"), "{r}");
                let r = refused(batch.copy_whole(&a, &mut small).map(|_| ()), "dst");
                assert!(r.contains("copy 1") && r.contains("equal sizes"), "{r}");
                let r = refused(batch.copy_from_host(&empty, to_b, 0).map(|_| ()), "src");
                assert!(r.contains("copy 1") && r.contains("empty"), "{r}");
                // A destination of another batch names another buffer: refused.
                let mut other = CopyBatch::new(&stream);
                let to_c = other.destination(&mut c);
                let r = refused(batch.copy(&a, 0, to_c, 0, 8).map(|_| ()), "dst");
                assert!(r.contains("copy 1") && r.contains("another batch"), "{r}");
                assert_eq!(batch.len(), 1, "refused copies are not added");

                // Copy 1 reads what copy 0 writes: the copies run in no order.
                batch.copy_within(to_b, 32, to_b, 1000, 8).unwrap();
                let r = refused(batch.submit(), "copies");
                assert!(
                    r.contains("copy 0's destination overlaps copy 1's source"),
                    "{r}"
                );
                // A copy onto itself.
                let mut batch = CopyBatch::new(&stream);
                let to_c = batch.destination(&mut c);
                batch.copy_within(to_c, 0, to_c, 32, 64).unwrap();
                let r = refused(batch.submit(), "copies");
                assert!(r.contains("copy 0's source and destination overlap"), "{r}");
            }
            let r = {
                let mut batch = CopyBatch::new(&stream);
                let to_small = batch.destination(&mut small);
                refused(batch.copy_from_host(&large, to_small, 0).map(|_| ()), "dst")
            };
            assert!(r.contains("copy 0") && r.contains("100-byte"), "{r}");

            // A buffer source read out of stream order, by safe code.
            let mut batch = CopyBatch::new(&stream);
            let to_b = batch.destination(&mut b);
            batch.copy(&a, 0, to_b, 0, 8).unwrap();
            batch
                .set_attributes(
                    CopyAttributes::default().with_src_access_order(SrcAccessOrder::Any),
                )
                .unwrap();
            batch.copy(&a, 8, to_b, 8, 8).unwrap();
            let r = refused(batch.submit(), "attributes");
            assert!(
                r.contains("copy 1 reads a buffer out of stream order"),
                "{r}"
            );
            let r = refused(
                CopyBatch::new(&stream)
                    .set_attributes(
                        CopyAttributes::default()
                            .with_src_location_hint(MemoryLocation::HostNuma(u32::MAX)),
                    )
                    .map(|_| ()),
                "attributes.src_location_hint",
            );
            assert!(r.contains("NUMA node"), "{r}");

            // The legacy default stream, and a capturing stream.
            let legacy = device.default_stream().unwrap();
            let mut batch = CopyBatch::new(&legacy);
            let to_b = batch.destination(&mut b);
            batch.copy(&a, 0, to_b, 0, 8).unwrap();
            let r = refused(batch.submit(), "stream");
            assert!(r.contains("legacy default stream"), "{r}");
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let mut batch = CopyBatch::new(&stream);
            let to_b = batch.destination(&mut b);
            batch.copy(&a, 0, to_b, 0, 8).unwrap();
            let r = refused(batch.submit(), "stream");
            assert!(r.contains("capturing"), "{r}");
            drop(batch);
            drop(stream.end_capture());

            assert!(
                standin::calls("cuMemcpyBatchAsync").is_empty(),
                "{}",
                standin::log()
            );

            // Out of stream order on the caller's word: it reaches the driver.
            let mut batch = CopyBatch::new(&stream);
            batch
                .set_attributes(
                    CopyAttributes::default().with_src_access_order(SrcAccessOrder::DuringCall),
                )
                .unwrap();
            let to_b = batch.destination(&mut b);
            batch.copy(&a, 0, to_b, 0, 8).unwrap();
            // SAFETY: the stand-in moves no bytes.
            unsafe { batch.submit_async() }.unwrap();
            assert_eq!(standin::calls("cuMemcpyBatchAsync").len(), 1);
        },
    );
}

#[test]
fn a_failed_batch_is_the_drivers_error_and_its_host_memory_is_waited_for() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "a_failed_batch_is_the_drivers_error_and_its_host_memory_is_waited_for",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi), ("STANDIN_BATCH_FAIL", "1")],
            || {
                let device = Device::new(0).unwrap();
                let stream = stream(device);
                let s = made("cuStreamCreate");
                let memory = device.memory_resource().unwrap();
                let a = memory.allocate(4096, &stream).unwrap();
                let mut out = [0u8; 16];
                let mut batch = CopyBatch::new(&stream);
                batch.copy_to_host(&a, 0, &mut out[..]).unwrap();
                standin::clear_log();
                match batch.submit() {
                    Err(e @ Error::Driver { .. }) => {
                        let text = e.to_string();
                        assert!(text.starts_with("cuMemcpyBatchAsync failed"), "{text}");
                        assert_eq!(e.driver_code(), Some(cuda_core::DriverCode(1)));
                    }
                    other => panic!("{other:?}"),
                }
                let text = standin::log();
                let log: Vec<&str> = text.lines().collect();
                let at = find(&log, 0, &[batch_call()]);
                find(&log, at, &["cuStreamSynchronize", &s]);
            },
        );
    }
}

#[test]
fn pitched_memory_reaches_the_driver_with_its_layout() {
    under_both_abis(
        "pitched_memory_reaches_the_driver_with_its_layout",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            let s = made("cuStreamCreate");
            standin::clear_log();
            let mut p = PitchedBuffer::new(&stream, 100, 10, 4).unwrap();
            let line = standin::calls("cuMemAllocPitch").pop().unwrap();
            assert!(
                line.ends_with("width=100 height=10 element=4 pitch=512"),
                "{line}"
            );
            assert_eq!(
                (p.pitch(), p.width(), p.height(), p.depth()),
                (512, 100, 10, 1)
            );
            assert_eq!((p.size(), p.device()), (5120, device));
            let ptr = p.ptr().0;

            // Whole rows from packed host memory, through the 3D call, waited for.
            standin::clear_log();
            p.copy_from_host(&[7u8; 1000], &stream).unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(
                &log,
                0,
                &[&format!(
                    "cuMemcpy3DAsync host at 0,0,0 pitch=100 height=10 -> {ptr:#x} at 0,0,0 \
                 pitch=512 height=10: 100 x 10 x 1 on {s}"
                )],
            );
            find(&log, at, &["cuStreamSynchronize", &s]);

            // Part of it to the host, 2D, with origins on both sides.
            let mut part = vec![0u8; 50 * 10];
            standin::clear_log();
            copy_2d(
                PitchedSrc::from(&p),
                PitchedDst::host(&mut part, 50, 10),
                &CopyRegion::new(30, 10)
                    .with_src_origin([8, 0, 0])
                    .with_dst_origin([5, 0, 0]),
                &stream,
            )
            .unwrap();
            let line = standin::calls("cuMemcpy2DAsync").pop().unwrap();
            assert!(
                line.ends_with(&format!(
                    "{ptr:#x} x=8 y=0 pitch=512 -> host x=5 y=0 pitch=50: 30 x 10 on {s}"
                )),
                "{line}"
            );

            // 3D: a box of slices of a 3D pitched buffer into a buffer seen as rows of 128 bytes,
            // 4 rows to a slice, on another stream: ordered with both homes.
            let q = PitchedBuffer::new_3d(&stream, 100, 10, 3, 8).unwrap();
            let line = standin::calls("cuMemAllocPitch").pop().unwrap();
            assert!(
                line.ends_with("width=100 height=30 element=8 pitch=512"),
                "{line}"
            );
            assert_eq!(q.size(), 512 * 30);
            let (other, o) = (stream_of(device), made("cuStreamCreate"));
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(128 * 4 * 2, &stream)
                .unwrap();
            standin::clear_log();
            copy_3d(
                PitchedSrc::from(&q),
                PitchedDst::buffer(&mut buffer, 128, 4),
                &CopyRegion::new_3d(16, 4, 2)
                    .with_src_origin([4, 6, 1])
                    .with_dst_origin([100, 0, 0]),
                &other,
            )
            .unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(
                &log,
                0,
                &[&format!(
                    "cuMemcpy3DAsync {:#x} at 4,6,1 pitch=512 height=10 -> {:#x} at 100,0,0 \
                 pitch=128 height=4: 16 x 4 x 2 on {o}",
                    q.ptr().0,
                    buffer.ptr().0
                )],
            );
            let waited = (0..at)
                .filter(|&i| log[i].contains(&format!("cuStreamWaitEvent {o} waits")))
                .count();
            assert_eq!(
                waited, 1,
                "one home (both are {s}), waited for once: {text}"
            );
            find(&log, at, &["cuStreamWaitEvent", &format!("{s} waits for")]);
            assert!(
                standin::calls("cuStreamSynchronize").is_empty(),
                "device memory only: no wait: {text}"
            );

            // Dropped: its stream is synchronised, then the memory freed.
            standin::clear_log();
            drop(p);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = find(&log, 0, &["cuStreamSynchronize", &s]);
            find(&log, at, &[&format!("cuMemFree {ptr:#x}")]);
        },
    );
}

fn stream_of(device: Device) -> Stream {
    stream(device)
}

#[test]
fn bad_pitched_copies_are_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "bad_pitched_copies_are_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            for (w, h, d, e, name) in [
                (100, 10, 1, 3, "element_bytes"),
                (0, 10, 1, 4, "width"),
                (100, 0, 1, 4, "height"),
                (100, 10, 0, 4, "depth"),
                (1 << 31, 1, 1, 4, "width"),
                (4096, usize::MAX, 2, 4, "depth"),
                (1 << 20, 1 << 20, 1, 4, "height"),
            ] {
                refused(PitchedBuffer::new_3d(&stream, w, h, d, e), name);
            }
            // A capturing stream: the synchronous allocation is not a call a capture takes.
            standin::clear_log();
            // SAFETY: nothing is queued on the stream while it captures.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let r = refused(PitchedBuffer::new(&stream, 100, 10, 4), "stream");
            assert!(r.contains("capturing"), "{r}");
            stream.end_capture().unwrap();
            assert!(
                standin::calls("cuMemAllocPitch").is_empty(),
                "{}",
                standin::log()
            );
            let mut p = PitchedBuffer::new(&stream, 100, 10, 4).unwrap();
            let q = PitchedBuffer::new_3d(&stream, 100, 10, 3, 4).unwrap();
            let mut host = vec![0u8; 1000];
            standin::clear_log();
            let attempt = |src: PitchedSrc<'_>, dst: PitchedDst<'_>, region: CopyRegion| {
                copy_2d(src, dst, &region, &stream)
            };
            let r = refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 10),
                    CopyRegion::new(41, 1).with_src_origin([60, 0, 0]),
                ),
                "src",
            );
            assert!(r.contains("beyond a row's 100 bytes"), "{r}");
            let r = refused(
                attempt(
                    PitchedSrc::host(&[0u8; 1000], 100, 10),
                    PitchedDst::from(&mut p),
                    CopyRegion::new(10, 3).with_dst_origin([0, 8, 0]),
                ),
                "dst",
            );
            assert!(r.contains("beyond a slice's 10 rows"), "{r}");
            // A 2D copy sees all 30 rows of a 3D buffer, but no more.
            attempt(
                PitchedSrc::from(&q),
                PitchedDst::host(&mut host, 10, 100),
                CopyRegion::new(10, 10).with_src_origin([0, 20, 0]),
            )
            .unwrap();
            refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 10, 100),
                    CopyRegion::new(10, 10).with_src_origin([0, 21, 0]),
                ),
                "src",
            );
            let r = refused(
                attempt(
                    PitchedSrc::host(&[0u8; 999], 100, 10),
                    PitchedDst::from(&mut p),
                    CopyRegion::new(100, 10),
                ),
                "src",
            );
            assert!(r.contains("beyond its 999 bytes"), "{r}");
            let r = refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 10),
                    CopyRegion::new_3d(10, 1, 2),
                ),
                "region",
            );
            assert!(r.contains("use copy_3d"), "{r}");
            refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 10),
                    CopyRegion::new(10, 1).with_src_origin([0, 0, 1]),
                ),
                "region",
            );
            refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 10),
                    CopyRegion::new(0, 1),
                ),
                "region",
            );
            let r = refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 0, 10),
                    CopyRegion::new(1, 1),
                ),
                "dst",
            );
            assert!(r.contains("hold nothing"), "{r}");
            let r = refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 1 << 31, 1),
                    CopyRegion::new(1, 1),
                ),
                "dst",
            );
            assert!(r.contains("more than the device's copies take"), "{r}");
            // 3D: slices bounded by the memory.
            let r = refused(
                copy_3d(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 5),
                    &CopyRegion::new_3d(100, 5, 3),
                    &stream,
                ),
                "dst",
            );
            assert!(r.contains("beyond its 1000 bytes"), "{r}");
            refused(
                copy_3d(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 5),
                    &CopyRegion::new_3d(100, 5, 1).with_src_origin([0, 0, 3]),
                    &stream,
                ),
                "src",
            );
            // A copy with the host on a capturing stream: it would be waited for, which a
            // capture does not allow.
            // SAFETY: nothing reaches the capture.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let r = refused(
                attempt(
                    PitchedSrc::from(&q),
                    PitchedDst::host(&mut host, 100, 10),
                    CopyRegion::new(10, 1),
                ),
                "stream",
            );
            assert!(r.contains("capturing"), "{r}");
            refused(p.copy_from_host(&[0u8; 1000], &stream), "stream");
            stream.end_capture().unwrap();
            // Whole copies need the packed size.
            refused(p.copy_from_host(&[0u8; 999], &stream), "src");
            refused(p.copy_to_host(&mut [0u32; 250 + 1], &stream), "dst");
            refused(q.to_vec::<[u8; 3]>(&stream), "T");
            let calls = standin::log();
            assert!(
                calls.lines().filter(|l| l.contains("cuMemcpy")).count() == 1,
                "only the one good copy reached the driver: {calls}"
            );
        },
    );
}

// ---- on the GPU ----------------------------------------------------------------------------

/// Bytes of a seed, for copies of arbitrary sizes.
fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    common::random_u32(seed, n.div_ceil(4))
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .take(n)
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_batch_of_1000_small_copies_matches_1000_single_copies() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    // 1000 pairs of buffers of 4 to 256 bytes.
    let sizes: Vec<usize> = (0..1000).map(|i| 4 + (i * 37) % 253).collect();
    let data: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| random_bytes(i as u64 + 1, n))
        .collect();
    let mut sources = Vec::new();
    let (mut batched, mut single) = (Vec::new(), Vec::new());
    for (bytes, &n) in data.iter().zip(&sizes) {
        let mut src = memory.allocate(n, &stream).unwrap();
        src.copy_from_host(bytes, &stream).unwrap();
        sources.push(src);
        let mut a = memory.allocate(n, &stream).unwrap();
        a.fill(0xAAu8, &stream).unwrap();
        batched.push(a);
        let mut b = memory.allocate(n, &stream).unwrap();
        b.fill(0x55u8, &stream).unwrap();
        single.push(b);
    }
    let mut batch = CopyBatch::with_capacity(&stream, 1000);
    for (src, dst) in sources.iter().zip(&mut batched) {
        batch.copy_whole(src, dst).unwrap();
    }
    assert_eq!((batch.len(), batch.attribute_runs()), (1000, 1));
    batch.submit().unwrap();
    drop(batch);
    for (src, dst) in sources.iter().zip(&mut single) {
        src.copy_to(dst, &stream).unwrap();
    }
    for (i, (a, b)) in batched.iter().zip(&single).enumerate() {
        let (a, b) = (
            a.to_vec::<u8>(&stream).unwrap(),
            b.to_vec::<u8>(&stream).unwrap(),
        );
        assert_eq!(a, data[i], "batched copy {i}");
        assert_eq!(b, data[i], "single copy {i}");
    }

    // 1000 ranges of one buffer into a permutation of another's, then back to 1000 host
    // slices in one more batch: every byte where the copies put it.
    const N: usize = 1000;
    const PIECE: usize = 64;
    let bytes = random_bytes(99, N * PIECE);
    let mut src = memory.allocate(N * PIECE, &stream).unwrap();
    src.copy_from_host(&bytes, &stream).unwrap();
    let mut dst = memory.allocate(N * PIECE, &stream).unwrap();
    dst.fill(0u8, &stream).unwrap();
    let to = |i: usize| (i * 7 + 3) % N;
    let mut batch = CopyBatch::with_capacity(&stream, N);
    let into = batch.destination(&mut dst);
    for i in 0..N {
        batch
            .copy(&src, i * PIECE, into, to(i) * PIECE, PIECE)
            .unwrap();
    }
    batch.submit().unwrap();
    drop(batch);
    let mut expected = vec![0u8; N * PIECE];
    for i in 0..N {
        expected[to(i) * PIECE..][..PIECE].copy_from_slice(&bytes[i * PIECE..][..PIECE]);
    }
    assert_eq!(dst.to_vec::<u8>(&stream).unwrap(), expected);
    let mut pieces = vec![[0u8; PIECE]; N];
    let mut batch = CopyBatch::with_capacity(&stream, N);
    for (i, piece) in pieces.iter_mut().enumerate() {
        batch.copy_to_host(&dst, to(i) * PIECE, piece).unwrap();
    }
    batch.submit().unwrap();
    drop(batch);
    for (i, piece) in pieces.iter().enumerate() {
        assert_eq!(&piece[..], &bytes[i * PIECE..][..PIECE], "piece {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn batch_attributes_and_location_hints_are_taken_by_the_driver() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let managed = ManagedMemoryResource::new(device).unwrap();
    let memory = device.memory_resource().unwrap();
    let bytes = random_bytes(5, 4096);
    let mut src = managed.allocate(4096, &stream).unwrap();
    src.copy_from_host(&bytes, &stream).unwrap();
    let mut dst = memory.allocate(4096, &stream).unwrap();
    dst.fill(0u8, &stream).unwrap();
    let host_data = random_bytes(6, 512);
    let mut back = vec![0u8; 1024];
    let mut batch = CopyBatch::new(&stream);
    let into = batch.destination(&mut dst);
    batch.copy(&src, 0, into, 0, 1024).unwrap();
    batch
        .set_attributes(
            CopyAttributes::default()
                .with_src_location_hint(MemoryLocation::Device(device))
                .with_dst_location_hint(MemoryLocation::Device(device))
                .with_prefer_overlap_with_compute(true),
        )
        .unwrap();
    batch.copy(&src, 1024, into, 1024, 1024).unwrap();
    batch
        .set_attributes(
            CopyAttributes::default()
                .with_src_location_hint(MemoryLocation::Host)
                .with_src_access_order(SrcAccessOrder::DuringCall),
        )
        .unwrap();
    batch.copy_from_host(&host_data, into, 2048).unwrap();
    batch
        .set_attributes(CopyAttributes::default().with_dst_location_hint(MemoryLocation::Host))
        .unwrap();
    batch.copy_to_host(&src, 3072, &mut back).unwrap();
    assert_eq!(batch.attribute_runs(), 4);
    batch.submit().unwrap();
    drop(batch);
    let out = dst.to_vec::<u8>(&stream).unwrap();
    assert_eq!(&out[..2048], &bytes[..2048]);
    assert_eq!(&out[2048..2560], &host_data[..]);
    assert!(
        out[2560..].iter().all(|&b| b == 0),
        "nothing else was written"
    );
    assert_eq!(&back[..], &bytes[3072..]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_batch_on_another_stream_waits_for_its_buffers_stream() {
    // In a process of its own: a stream held at a gate while this test calls the driver
    // deadlocked beside other tests' module loads and frees, which wait for every stream of
    // the context (a minute, until the gate opened by itself, on the H200).
    common::alone(
        module_path!(),
        "a_batch_on_another_stream_waits_for_its_buffers_stream",
        || {
            let _watchdog =
                common::Watchdog::new(Duration::from_secs(120), "the batch ordering test");
            let device = common::device();
            let (s1, s2) = (
                device.create_stream(StreamOptions::default()).unwrap(),
                device.create_stream(StreamOptions::default()).unwrap(),
            );
            let memory = device.memory_resource().unwrap();
            let mut src = memory.allocate(1 << 20, &s1).unwrap();
            let mut dst = memory.allocate(1 << 20, &s1).unwrap();
            src.fill(1u8, &s1).unwrap();
            dst.fill(0u8, &s1).unwrap();
            s1.sync().unwrap();
            // s1 held at a host function, a fill of the source queued behind it.
            let gate = Gate::close(&s1);
            src.fill(9u8, &s1).unwrap();
            let mut batch = CopyBatch::new(&s2);
            batch.copy_whole(&src, &mut dst).unwrap();
            batch.submit().unwrap();
            drop(batch);
            assert!(
                !s2.is_done().unwrap(),
                "the batch waits for the source's stream, which is held"
            );
            gate.open();
            assert!(dst.to_vec::<u8>(&s2).unwrap().iter().all(|&b| b == 9));
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_batches_are_refused_and_nothing_leaks() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
    {
        let a = pool.allocate(4096, &stream).unwrap();
        let mut b = pool.allocate(4096, &stream).unwrap();
        let mut batch = CopyBatch::new(&stream);
        let to_b = batch.destination(&mut b);
        refused(batch.copy(&a, 4095, to_b, 0, 2).map(|_| ()), "src");
        refused(batch.submit(), "self");
        batch.copy(&a, 0, to_b, 0, 4096).unwrap();
        batch.copy(&a, 0, to_b, 100, 1).unwrap();
        let r = refused(batch.submit(), "copies");
        assert!(
            r.contains("copy 0's destination overlaps copy 1's destination"),
            "{r}"
        );
        let legacy = device.default_stream().unwrap();
        let mut batch = CopyBatch::new(&legacy);
        batch.copy_whole(&a, &mut b).unwrap();
        refused(batch.submit(), "stream");
        // The per-thread default stream is a stream of the driver's: it takes a batch.
        let per_thread = Stream::per_thread_default(device).unwrap();
        let mut batch = CopyBatch::new(&per_thread);
        batch.copy_whole(&a, &mut b).unwrap();
        batch.submit().unwrap();
        per_thread.sync().unwrap();
    }
    stream.sync().unwrap();
    assert_eq!(
        pool.usage().unwrap().used_current,
        0,
        "every buffer was freed"
    );
}

/// Runs `op`, a safe copy into host memory on `stream` (held at a gate meanwhile), while another
/// thread has a stream capturing in [`CaptureMode::Global`] (which makes the driver refuse some
/// calls from every thread, synchronisations among them), and checks that `op` did not return
/// while its copy could still run: had it, the host memory it was lent would be free again with
/// the driver still to write it. The gate is opened from another thread after two seconds, and
/// the capture ended after three (deadlines, not orderings: however long they are, `op` must
/// not return before the gate opens; the crate waits out a refused synchronisation until the
/// capture ends). An error of the copy call itself (the driver refusing it, so nothing was
/// queued) is allowed.
fn returns_only_after_its_copy(
    what: &str,
    stream: &Stream,
    op: impl FnOnce() -> cuda_core::Result<()>,
    queue_call: &str,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    let device = stream.device();
    let gate = Gate::close(stream);
    let capturing = device.create_stream(StreamOptions::default()).unwrap();
    let (begun_tx, begun_rx) = mpsc::channel();
    let capturer = std::thread::spawn(move || {
        // SAFETY: nothing is captured: the capture is begun and ended, with no work between.
        let begun = unsafe { capturing.begin_capture(CaptureMode::Global) };
        begun_tx.send(begun.is_ok()).unwrap();
        std::thread::sleep(Duration::from_secs(3));
        if begun.is_ok() {
            // Possibly invalidated by what the other thread did meanwhile: either is fine.
            let _ = capturing.end_capture();
        }
    });
    assert!(
        begun_rx.recv().unwrap(),
        "{what}: the capture did not begin"
    );
    let opened = Arc::new(AtomicBool::new(false));
    let opener = {
        let opened = Arc::clone(&opened);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(2));
            opened.store(true, Ordering::SeqCst);
            gate.open();
        })
    };
    let result = op();
    let open_at_return = opened.load(Ordering::SeqCst);
    capturer.join().unwrap();
    opener.join().unwrap();
    stream.sync().unwrap();
    match result {
        Err(e) if e.to_string().starts_with(&format!("{queue_call} failed")) => {
            println!("{what}: refused during the capture, nothing queued ({e})");
        }
        Err(e) => assert!(
            open_at_return,
            "{what} returned {e:?} while its copy was held at the gate: the host memory it \
             was lent would be freed under the driver"
        ),
        Ok(()) => assert!(open_at_return, "{what} returned before its copy could run"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_copies_do_not_return_while_their_copy_may_run_during_another_threads_capture() {
    // In a process of its own: a capture in global mode makes the driver refuse unsafe calls
    // of every thread of the process, which failed 70 other tests running beside it.
    common::alone(
        module_path!(),
        "host_copies_do_not_return_while_their_copy_may_run_during_another_threads_capture",
        || {
            let _watchdog =
                common::Watchdog::new(Duration::from_secs(120), "the global capture test");
            let device = common::device();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // Allocated before the captures: stream-ordered allocation is refused during them.
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(4096, &stream)
                .unwrap();
            buffer.fill(7u8, &stream).unwrap();
            stream.sync().unwrap();

            let mut host = vec![0u8; 4096];
            returns_only_after_its_copy(
                "CopyBatch::submit",
                &stream,
                || {
                    let mut batch = CopyBatch::new(&stream);
                    batch.copy_to_host(&buffer, 0, &mut host)?;
                    batch.submit()
                },
                "cuMemcpyBatchAsync",
            );
            assert!(
                host.iter().all(|&b| b == 7) || host.iter().all(|&b| b == 0),
                "the batch wrote all or nothing"
            );

            let mut rows = vec![0u8; 4096];
            returns_only_after_its_copy(
                "copy_2d",
                &stream,
                || {
                    copy_2d(
                        PitchedSrc::buffer(&buffer, 64, 64),
                        PitchedDst::host(&mut rows, 64, 64),
                        &CopyRegion::new(64, 64),
                        &stream,
                    )
                },
                "cuMemcpy2DAsync",
            );
        },
    );
}

/// The bytes of `region` of a packed `pitch` x `height` x slices block, as a 3D copy reads it.
fn reference_copy(
    src: &[u8],
    (src_pitch, src_height): (usize, usize),
    dst: &mut [u8],
    (dst_pitch, dst_height): (usize, usize),
    region: &CopyRegion,
) {
    let [sx, sy, sz] = region.src_origin;
    let [dx, dy, dz] = region.dst_origin;
    let [w, h, d] = region.extent;
    for z in 0..d {
        for y in 0..h {
            let s = ((sz + z) * src_height + sy + y) * src_pitch + sx;
            let t = ((dz + z) * dst_height + dy + y) * dst_pitch + dx;
            dst[t..t + w].copy_from_slice(&src[s..s + w]);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pitched_buffers_copy_rows_to_and_from_buffers_and_the_host_in_2d_and_3d() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let (w, h) = (100usize, 37usize);
    let mut p = PitchedBuffer::new(&stream, w, h, 4).unwrap();
    assert!(p.pitch() >= w, "{p:?}");
    assert_eq!(p.size(), p.pitch() * h);
    let data = random_bytes(11, w * h);
    p.copy_from_host(&data, &stream).unwrap();
    assert_eq!(p.to_vec::<u8>(&stream).unwrap(), data);

    // A rectangle into a host block of another pitch, around what was there.
    let mut out = vec![0xEEu8; 50 * 10];
    let region = CopyRegion::new(30, 10)
        .with_src_origin([7, 20, 0])
        .with_dst_origin([5, 0, 0]);
    copy_2d(
        PitchedSrc::from(&p),
        PitchedDst::host(&mut out, 50, 10),
        &region,
        &stream,
    )
    .unwrap();
    let mut expected = vec![0xEEu8; 50 * 10];
    reference_copy(&data, (w, h), &mut expected, (50, 10), &region);
    assert_eq!(out, expected);

    // Device to device: into a buffer laid out with the pitch the driver gave, and back
    // into another pitched buffer.
    let pitch = p.pitch();
    let memory = device.memory_resource().unwrap();
    let mut flat = memory.allocate(pitch * h, &stream).unwrap();
    flat.fill(0u8, &stream).unwrap();
    copy_2d(
        PitchedSrc::from(&p),
        PitchedDst::buffer(&mut flat, pitch, h),
        &CopyRegion::new(w, h),
        &stream,
    )
    .unwrap();
    let rows = flat.to_vec::<u8>(&stream).unwrap();
    for (y, row) in rows.chunks(pitch).enumerate() {
        assert_eq!(&row[..w], &data[y * w..][..w], "row {y}");
        assert!(
            row[w..].iter().all(|&b| b == 0),
            "row {y}'s padding is untouched"
        );
    }
    let mut again = PitchedBuffer::new(&stream, w, h, 4).unwrap();
    assert_eq!(again.pitch(), pitch, "the same shape gets the same pitch");
    copy_2d(
        PitchedSrc::buffer(&flat, pitch, h),
        PitchedDst::from(&mut again),
        &CopyRegion::new(w, h),
        &stream,
    )
    .unwrap();
    assert_eq!(again.to_vec::<u8>(&stream).unwrap(), data);

    // 3D: 6 slices of 5 rows of 24 bytes; a box of it out, through a buffer, and back.
    let (w3, h3, d3) = (24usize, 5usize, 6usize);
    let mut cube = PitchedBuffer::new_3d(&stream, w3, h3, d3, 8).unwrap();
    assert_eq!(cube.size(), cube.pitch() * h3 * d3);
    let data3 = random_bytes(12, w3 * h3 * d3);
    cube.copy_from_host(&data3, &stream).unwrap();
    assert_eq!(cube.to_vec::<u8>(&stream).unwrap(), data3);
    let region = CopyRegion::new_3d(8, 2, 3)
        .with_src_origin([16, 3, 2])
        .with_dst_origin([4, 1, 0]);
    let mut boxed = vec![0u8; 16 * 4 * 3];
    copy_3d(
        PitchedSrc::from(&cube),
        PitchedDst::host(&mut boxed, 16, 4),
        &region,
        &stream,
    )
    .unwrap();
    let mut expected = vec![0u8; 16 * 4 * 3];
    reference_copy(&data3, (w3, h3), &mut expected, (16, 4), &region);
    assert_eq!(boxed, expected);
    // Host to a buffer in slices of 4 rows of 32 bytes, then into the cube's corner.
    // (Device-to-device, the buffer takes the pitch the driver gave the cube: the driver may
    // refuse others there.)
    let slab_pitch = cube.pitch();
    let mut slab = memory.allocate(slab_pitch * 4 * 3, &stream).unwrap();
    slab.fill(0u8, &stream).unwrap();
    copy_3d(
        PitchedSrc::host(&boxed, 16, 4),
        PitchedDst::buffer(&mut slab, slab_pitch, 4),
        &CopyRegion::new_3d(16, 4, 3),
        &stream,
    )
    .unwrap();
    let mut slab_expected = vec![0u8; slab_pitch * 4 * 3];
    reference_copy(
        &boxed,
        (16, 4),
        &mut slab_expected,
        (slab_pitch, 4),
        &CopyRegion::new_3d(16, 4, 3),
    );
    assert_eq!(slab.to_vec::<u8>(&stream).unwrap(), slab_expected);
    let corner = CopyRegion::new_3d(16, 4, 3).with_dst_origin([0, 1, 3]);
    copy_3d(
        PitchedSrc::buffer(&slab, slab_pitch, 4),
        PitchedDst::from(&mut cube),
        &corner,
        &stream,
    )
    .unwrap();
    let mut cube_expected = data3.clone();
    reference_copy(
        &slab_expected,
        (slab_pitch, 4),
        &mut cube_expected,
        (w3, h3),
        &corner,
    );
    assert_eq!(cube.to_vec::<u8>(&stream).unwrap(), cube_expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn pitched_copies_on_another_stream_wait_for_their_buffers_streams() {
    // In a process of its own: a stream held at a gate while this test calls the driver
    // deadlocked beside other tests' module loads and frees, which wait for every stream of
    // the context (a minute, until the gate opened by itself, on the H200).
    common::alone(
        module_path!(),
        "pitched_copies_on_another_stream_wait_for_their_buffers_streams",
        || {
            let _watchdog =
                common::Watchdog::new(Duration::from_secs(120), "the pitched ordering test");
            let device = common::device();
            let (s1, s2) = (
                device.create_stream(StreamOptions::default()).unwrap(),
                device.create_stream(StreamOptions::default()).unwrap(),
            );
            let mut p = PitchedBuffer::new(&s1, 64, 16, 4).unwrap();
            p.copy_from_host(&[1u8; 64 * 16], &s1).unwrap();
            // Laid out with the pitched buffer's pitch (the driver may refuse others device to device).
            let pitch = p.pitch();
            let mut source: Buffer = device
                .memory_resource()
                .unwrap()
                .allocate(pitch * 16, &s1)
                .unwrap();
            source.fill(1u8, &s1).unwrap();
            s1.sync().unwrap();
            let gate = Gate::close(&s1);
            source.fill(8u8, &s1).unwrap();
            copy_2d(
                PitchedSrc::buffer(&source, pitch, 16),
                PitchedDst::from(&mut p),
                &CopyRegion::new(64, 16),
                &s2,
            )
            .unwrap();
            assert!(!s2.is_done().unwrap(), "the copy waits for the held stream");
            gate.open();
            assert!(p.to_vec::<u8>(&s2).unwrap().iter().all(|&b| b == 8));
        },
    );
}

/// Pitched memory as CUDA C uses it: filled by a 2D memset (`cudaMemset2DAsync`), written by a
/// kernel that takes its pointer and pitch, and read through a texture bound to its rows.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pitched_memory_is_a_memset_target_a_kernel_argument_and_a_texture_source() {
    use cuda_core::texture::{ArrayFormat, Texture, TextureOptions};
    use cuda_core::{launch, CodeType, LaunchConfig, Program, ProgramOptions};
    use std::sync::Arc;

    let device = common::device();
    let stream = stream(device);
    let (cols, rows) = (100usize, 37usize);
    let mut image = PitchedBuffer::new(&stream, cols * 4, rows, 4).unwrap();
    // The rows are padded: a memset over the packed size would land in the padding.
    assert!(image.pitch() > cols * 4, "pitch {}", image.pitch());
    image.fill(0x3F80_0000u32, &stream).unwrap(); // 1.0f
                                                  // Catches a fill of the first `width * height` bytes as one run (rows past the first
                                                  // would be left unset, and padding written).
    assert!(image
        .to_vec::<f32>(&stream)
        .unwrap()
        .iter()
        .all(|&x| x == 1.0));
    image.fill(0u16, &stream).unwrap();
    assert!(image
        .to_vec::<u32>(&stream)
        .unwrap()
        .iter()
        .all(|&x| x == 0));
    let mut odd = PitchedBuffer::new(&stream, 6, 4, 4).unwrap();
    let e = odd.fill(7u32, &stream).unwrap_err();
    assert!(e.to_string().contains("does not tile"), "{e}");

    let code = Program::new(
        r#"extern "C" __global__ void number(float* rows, unsigned long long pitch,
                                            unsigned cols, unsigned n_rows) {
            unsigned c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
            if (c >= cols || r >= n_rows) return;
            float* row = (float*)((char*)rows + r * pitch);
            row[c] = r * 1000.0f + c;
        }
        extern "C" __global__ void fetch(cudaTextureObject_t t, float* out, unsigned cols,
                                         unsigned n_rows) {
            unsigned c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
            if (c >= cols || r >= n_rows) return;
            out[r * cols + c] = tex2D<float>(t, c + 0.5f, r + 0.5f);
        }"#,
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let config = LaunchConfig::new([1, rows as u32, 1], [128, 1, 1]);
    let (c32, r32) = (cols as u32, rows as u32);
    // SAFETY: the kernel writes `rows` rows of `cols` floats, each row `pitch` bytes apart.
    unsafe {
        launch(
            &stream,
            &config,
            &code.get_kernel("number").unwrap(),
            &[&image, &(image.pitch() as u64), &c32, &r32],
        )
    }
    .unwrap();
    let expected: Vec<f32> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| r as f32 * 1000.0 + c as f32))
        .collect();
    // Catches the buffer passed as anything but its first row's address.
    assert_eq!(image.to_vec::<f32>(&stream).unwrap(), expected);

    let image = Arc::new(image);
    let texture =
        Texture::from_pitched(&image, ArrayFormat::F32, 1, &TextureOptions::default()).unwrap();
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(cols * rows * 4, &stream)
        .unwrap();
    // SAFETY: the kernel writes `rows * cols` floats of `out`.
    unsafe {
        launch(
            &stream,
            &config,
            &code.get_kernel("fetch").unwrap(),
            &[&texture, &out, &c32, &r32],
        )
    }
    .unwrap();
    // Catches a texture bound with the packed width as its pitch (rows would shear).
    assert_eq!(out.to_vec::<f32>(&stream).unwrap(), expected);
    // Rows of 6 bytes hold no whole number of 4-byte elements: refused before the driver.
    let e = Texture::from_pitched(
        &Arc::new(odd),
        ArrayFormat::F32,
        1,
        &TextureOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("whole"), "{e}");
}
