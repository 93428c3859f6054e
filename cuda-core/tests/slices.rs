//! Sub-buffers: slices of buffers as kernel arguments, copy ends, fill targets, views and graph
//! memory, in their buffers' stream order; timed host copies.

use crate::common;
use crate::common::standin;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuda_core::memory::{BufferSlice, BufferSliceMut};
use cuda_core::{
    launch, Allocate, BuildGraph, CaptureMode, CodeType, Device, DevicePtr, Error, Graph,
    GraphOptions, Kernel, LaunchConfig, ObjectCode, Program, ProgramOptions, Stream,
};

const ADD_ONE: &str = r#"
extern "C" __global__ void add_one(unsigned* p, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1;
}
"#;

fn add_one() -> (ObjectCode, Kernel) {
    let code = Program::new(ADD_ONE, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = code.get_kernel("add_one").unwrap();
    (code, kernel)
}

fn invalid_name(error: &Error) -> &'static str {
    match error {
        Error::InvalidArgument { name, .. } => name,
        other => panic!("not an invalid argument: {other}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_slice_is_a_kernel_argument_at_its_first_byte() {
    let device = common::device();
    let stream = common::stream(device);
    let (_code, kernel) = add_one();
    let memory = device.memory_resource().unwrap();
    let mut buffer = memory.allocate(1024 * 4, &stream).unwrap();
    buffer.fill(10u32, &stream).unwrap();
    // `d + 256` in CUDA C: elements 256..512 only. Catches a slice passed as its buffer's
    // address (elements 0..256 would change) and one passed by its own host address (a fault).
    let part = buffer.slice_of::<u32>(256..512).unwrap();
    let n = 256u32;
    // SAFETY: the kernel adds one to `n` elements of a slice of `n` elements.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(256, 128),
            &kernel,
            &[&part, &n],
        )
    }
    .unwrap();
    // Through a mutable slice and an `Arc<Buffer>` as well.
    let mut tail = buffer.slice_of_mut::<u32>(1000..1024).unwrap();
    let m = 24u32;
    // SAFETY: as above, for 24 elements.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(24, 32),
            &kernel,
            &[&tail, &m],
        )
    }
    .unwrap();
    tail.fill(7u32, &stream).unwrap();
    let shared = Arc::new(buffer);
    // SAFETY: the kernel adds one to the first 4 elements of a 1024-element buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(4, 32),
            &kernel,
            &[&shared, &4u32],
        )
    }
    .unwrap();
    let slice = shared.shared_slice(4 * 512..4 * 516).unwrap();
    // SAFETY: 4 elements of a 4-element slice.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(4, 32),
            &kernel,
            &[&slice, &4u32],
        )
    }
    .unwrap();
    let values = shared.to_vec::<u32>(&stream).unwrap();
    for (i, &v) in values.iter().enumerate() {
        let expected = match i {
            0..4 => 11,
            256..512 => 11,
            512..516 => 11,
            1000.. => 7,
            _ => 10,
        };
        assert_eq!(v, expected, "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn parts_of_buffers_copy_between_devices_buffers_and_the_host() {
    let device = common::device();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let data = common::random_u32(7, 4096);
    let mut a = memory.allocate(4096 * 4, &stream).unwrap();
    let mut b = memory.allocate(4096 * 4, &stream).unwrap();
    a.copy_from_host(&data, &stream).unwrap();
    b.fill(0u32, &stream).unwrap();
    // Device to device, part to part: a[100..200] -> b[1000..1100]. Catches an offset applied
    // to one end only, and a whole-buffer copy.
    a.slice_of::<u32>(100..200)
        .unwrap()
        .copy_to(b.slice_of_mut::<u32>(1000..1100).unwrap(), &stream)
        .unwrap();
    // The other direction, into a buffer from a slice of the right size.
    let mut small = memory.allocate(16 * 4, &stream).unwrap();
    small
        .copy_from(a.slice_of::<u32>(4080..4096).unwrap(), &stream)
        .unwrap();
    assert_eq!(small.to_vec::<u32>(&stream).unwrap(), &data[4080..4096]);
    let back = b.to_vec::<u32>(&stream).unwrap();
    assert_eq!(&back[1000..1100], &data[100..200]);
    assert!(back[..1000].iter().chain(&back[1100..]).all(|&x| x == 0));
    // Host reads and writes of a part: `cudaMemcpy(h, d + s, ...)`.
    let mut head = [0u32; 5];
    a.slice_of::<u32>(10..15)
        .unwrap()
        .copy_to_host(&mut head, &stream)
        .unwrap();
    assert_eq!(head, data[10..15]);
    b.slice_of_mut::<u32>(1..3)
        .unwrap()
        .copy_from_host(&[5u32, 6], &stream)
        .unwrap();
    let back = b
        .slice_of::<u32>(0..4)
        .unwrap()
        .to_vec::<u32>(&stream)
        .unwrap();
    assert_eq!(back, [0, 5, 6, 0]);
    // A slice of a slice is offset from the slice (catches offsets taken from the buffer).
    let outer = a.slice_of::<u32>(1000..2000).unwrap();
    let inner = outer.slice(8..16).unwrap();
    assert_eq!(inner.offset(), 4008);
    assert_eq!(inner.to_vec::<u32>(&stream).unwrap(), &data[1002..1004]);
    // A mismatch of sizes names the side that differs.
    let e = outer
        .copy_to(b.slice_mut(0..8).unwrap(), &stream)
        .unwrap_err();
    assert_eq!(invalid_name(&e), "dst", "{e}");
    let e = b.copy_from(outer, &stream).unwrap_err();
    assert_eq!(invalid_name(&e), "src", "{e}");
    // Host memory slices: pinned memory's parts copy too.
    let pinned = cuda_core::memory::PinnedMemoryResource::new(device).unwrap();
    let mut host = pinned.allocate(64, &stream).unwrap();
    host.fill(0u8, &stream).unwrap();
    host.slice_mut(32..40)
        .unwrap()
        .copy_from(a.slice(0..8).unwrap(), &stream)
        .unwrap();
    let bytes = host.to_vec::<u8>(&stream).unwrap();
    let first: Vec<u8> = data[..2].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(&bytes[32..40], &first[..]);
    assert!(bytes[..32].iter().chain(&bytes[40..]).all(|&x| x == 0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_fill_of_a_range_fills_that_range_alone() {
    let device = common::device();
    let stream = common::stream(device);
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(256, &stream)
        .unwrap();
    buffer.fill(0u8, &stream).unwrap();
    buffer
        .slice_mut(3..7)
        .unwrap()
        .fill(0xAAu8, &stream)
        .unwrap();
    buffer
        .slice_mut(16..32)
        .unwrap()
        .fill(0xBBCCu16, &stream)
        .unwrap();
    buffer
        .slice_mut(64..128)
        .unwrap()
        .fill(0x0102_0304u32, &stream)
        .unwrap();
    let bytes = buffer.to_vec::<u8>(&stream).unwrap();
    for (i, &b) in bytes.iter().enumerate() {
        let expected = match i {
            3..7 => 0xAA,
            16..32 if i % 2 == 0 => 0xCC,
            16..32 => 0xBB,
            64..128 => [4, 3, 2, 1][i % 4],
            _ => 0,
        };
        assert_eq!(b, expected, "byte {i}");
    }
    // A 4-byte pattern at a 2-byte aligned address, and one that does not tile the range.
    let e = buffer
        .slice_mut(2..10)
        .unwrap()
        .fill(1u32, &stream)
        .unwrap_err();
    assert_eq!(invalid_name(&e), "value", "{e}");
    let e = buffer
        .slice_mut(0..6)
        .unwrap()
        .fill(1u32, &stream)
        .unwrap_err();
    assert_eq!(invalid_name(&e), "value", "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_slices_reach_within_the_slice_only() {
    let device = common::device();
    let stream = common::stream(device);
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(64 * 4, &stream)
        .unwrap();
    let values: Vec<f32> = (0..64).map(|i| i as f32).collect();
    buffer.copy_from_host(&values, &stream).unwrap();
    let slice = buffer.slice_of::<f32>(16..32).unwrap();
    let view = slice.view::<f32>(&[4, 4], None).unwrap();
    // The view starts at the slice (catches a view from the buffer's first byte).
    assert_eq!(view.ptr(), slice.ptr());
    // 17 elements do not fit in 16: refused, though the buffer has room for them.
    let e = slice.view::<f32>(&[17], None).unwrap_err();
    assert_eq!(invalid_name(&e), "shape", "{e}");
    assert_eq!(view.to_vec(&stream).unwrap(), &values[16..32]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shared_slices_are_graph_memory_kept_by_the_graph() {
    let device = common::device();
    let stream = common::stream(device);
    let (_code, kernel) = add_one();
    let a = common::shared_buffer(device, &stream, 1024 * 4);
    let b = common::shared_buffer(device, &stream, 1024 * 4);
    let mut graph = Graph::new(device).unwrap();
    let whole_a = a.shared_slice(..).unwrap();
    let a_mid = a.shared_slice(4 * 100..4 * 200).unwrap();
    let b_mid = b.shared_slice(4 * 300..4 * 400).unwrap();
    let zero_a = graph.add_fill(&[], &whole_a, 0u32).unwrap();
    let zero_b = graph.add_fill(&[], &b, 0u32).unwrap();
    let fill = graph.add_fill(&[zero_a], &a_mid, 41u32).unwrap();
    // SAFETY: the kernel adds one to 100 elements of a 100-element slice.
    let bump = unsafe {
        graph.add_kernel(
            &[fill],
            &LaunchConfig::for_elements(100, 128),
            &kernel,
            &[&a_mid, &100u32],
        )
    }
    .unwrap();
    graph.add_copy(&[bump, zero_b], &a_mid, &b_mid).unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    // The graph keeps the buffers: catches a graph that holds the slices' addresses only.
    drop((whole_a, a_mid, b_mid, graph));
    let b_weak = Arc::downgrade(&b);
    drop(a);
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    let b = b_weak.upgrade().expect("b is kept by the caller");
    let values = b.to_vec::<u32>(&stream).unwrap();
    for (i, &v) in values.iter().enumerate() {
        let expected = if (300..400).contains(&i) { 42 } else { 0 };
        assert_eq!(v, expected, "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn slices_in_a_capture_replay_at_their_offsets() {
    let device = common::device();
    let stream = common::stream(device);
    let (_code, kernel) = add_one();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(512 * 4, &stream)
        .unwrap();
    buffer.fill(0u32, &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: the capture records a fill and a launch over the buffer, kept alive below
    // until the graph has run.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    buffer
        .slice_of_mut::<u32>(0..128)
        .unwrap()
        .fill(5u32, &stream)
        .unwrap();
    let part = buffer.slice_of::<u32>(64..192).unwrap();
    // SAFETY: 128 elements of a 128-element slice.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(128, 128),
            &kernel,
            &[&part, &128u32],
        )
    }
    .unwrap();
    let graph = stream.end_capture().unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    let values = buffer.to_vec::<u32>(&stream).unwrap();
    for (i, &v) in values.iter().enumerate() {
        let expected = match i {
            0..64 => 5,
            64..128 => 6,
            128..192 => 2,
            _ => 0,
        };
        assert_eq!(v, expected, "element {i}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_timed_host_copy_times_out_behind_held_work_and_returns_when_it_ends() {
    // In a process of its own: it holds a stream at a gate, and in the shared test
    // process a held stream holds up the other tests' module loads and context-wide
    // waits until its gate opens (the stalls of the whole-suite runs).
    common::alone(
        module_path!(),
        "a_timed_host_copy_times_out_behind_held_work_and_returns_when_it_ends",
        a_timed_host_copy_times_out_behind_held_work_and_returns_when_it_ends_alone,
    );
}

fn a_timed_host_copy_times_out_behind_held_work_and_returns_when_it_ends_alone() {
    let device = common::device();
    let stream = common::stream(device);
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    buffer.fill(3u32, &stream).unwrap();
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "timed host copies");
    assert_eq!(
        buffer
            .to_vec_timeout::<u32>(&stream, Duration::from_secs(10))
            .unwrap(),
        [3; 1024]
    );
    let gate = common::Gate::close_for(&stream, Duration::from_secs(60));
    let start = Instant::now();
    let e = buffer
        .slice(0..64)
        .unwrap()
        .to_vec_timeout::<u32>(&stream, Duration::from_millis(50))
        .unwrap_err();
    // Catches a copy that blocks until the gate opens (a copy into pageable memory queued
    // behind the gate returns only once it ran), and one that returns before its time.
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    gate.open();
    assert_eq!(
        buffer
            .slice(0..8)
            .unwrap()
            .to_vec_timeout::<u32>(&stream, Duration::from_secs(30))
            .unwrap(),
        [3, 3]
    );
}

/// The stream-order rules against the stand-in, which logs every call: a new stream and its
/// name in the log (after the strict model's thread number, where it writes one).
fn stream_of(device: Device) -> (Stream, String) {
    let stream = common::stream(device);
    let name = standin::calls("cuStreamCreate")
        .pop()
        .expect("a stream was made")
        .split_whitespace()
        .skip_while(|word| *word != "cuStreamCreate")
        .nth(1)
        .expect("its handle")
        .to_owned();
    (stream, name)
}

#[test]
fn slices_on_another_stream_keep_their_buffers_stream_order() {
    standin::run(
        module_path!(),
        "slices_on_another_stream_keep_their_buffers_stream_order",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let (home, home_name) = stream_of(device);
            let (other, other_name) = stream_of(device);
            let memory = device.memory_resource().unwrap();
            let mut a = memory.allocate(4096, &home).unwrap();
            let b = memory.allocate(4096, &home).unwrap();
            let kernel = ObjectCode::from_cubin(standin::cubin())
                .get_kernel("k1")
                .unwrap();
            for step in 0..3 {
                standin::clear_log();
                let slice = b.slice(1024..2048).unwrap();
                match step {
                    0 => slice
                        .copy_to(a.slice_mut(0..1024).unwrap(), &other)
                        .unwrap(),
                    1 => a.slice_mut(8..16).unwrap().fill(1u8, &other).unwrap(),
                    _ => {
                        // SAFETY: the stand-in runs no kernel.
                        unsafe {
                            launch(
                                &other,
                                &LaunchConfig::for_elements(1, 1),
                                &kernel,
                                &[&slice],
                            )
                        }
                        .unwrap()
                    }
                }
                let log = standin::log();
                let lines: Vec<&str> = log.lines().collect();
                let work = lines
                    .iter()
                    .position(|l| {
                        (l.contains("cuMemcpyAsync")
                            || l.contains("cuMemsetD8Async")
                            || l.contains("cuLaunchKernel"))
                            && l.contains(&other_name)
                    })
                    .unwrap_or_else(|| panic!("step {step}: no work on the other stream:\n{log}"));
                // Catches a slice whose home is not its buffer's stream: the other stream
                // waits for the home before the work, and the home for the other stream
                // after it (so the buffer's free cannot overtake it).
                let waits_before = lines[..work]
                    .iter()
                    .any(|l| l.contains(&format!("cuStreamWaitEvent {other_name} waits")));
                let waits_after = lines[work..]
                    .iter()
                    .any(|l| l.contains(&format!("cuStreamWaitEvent {home_name} waits")));
                assert!(waits_before && waits_after, "step {step}:\n{log}");
                // The address is the slice's (1024 bytes in), not the buffer's.
                if step == 0 {
                    let expected = format!("<- {:#x}", b.ptr().0 + 1024);
                    assert!(lines[work].contains(&expected), "{}", lines[work]);
                }
            }
        },
    );
}

/// Copies to and from raw device pointers: in the buffer's stream order on another stream, at
/// the slice's address; null, wrapping and overlapping pointers refused before the driver.
#[test]
fn raw_pointer_copies_keep_their_buffers_stream_order_and_refuse_bad_pointers() {
    standin::run(
        module_path!(),
        "raw_pointer_copies_keep_their_buffers_stream_order_and_refuse_bad_pointers",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let (home, home_name) = stream_of(device);
            let (other, other_name) = stream_of(device);
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(4096, &home).unwrap();
            let foreign = memory.allocate(4096, &home).unwrap();
            let raw = foreign.ptr();
            for into_buffer in [true, false] {
                standin::clear_log();
                // SAFETY: the stand-in copies nothing; `foreign` outlives the calls.
                unsafe {
                    if into_buffer {
                        buffer
                            .slice_mut(1024..2048)
                            .unwrap()
                            .copy_from_device_ptr(raw, &other)
                    } else {
                        buffer
                            .slice(1024..2048)
                            .unwrap()
                            .copy_to_device_ptr(raw, &other)
                    }
                }
                .unwrap();
                let log = standin::log();
                let lines: Vec<&str> = log.lines().collect();
                let work = lines
                    .iter()
                    .position(|l| l.contains("cuMemcpyAsync") && l.contains(&other_name))
                    .unwrap_or_else(|| panic!("no copy on the other stream:\n{log}"));
                // Catches a raw copy that skips the buffer's stream order.
                let waits_before = lines[..work]
                    .iter()
                    .any(|l| l.contains(&format!("cuStreamWaitEvent {other_name} waits")));
                let waits_after = lines[work..]
                    .iter()
                    .any(|l| l.contains(&format!("cuStreamWaitEvent {home_name} waits")));
                assert!(waits_before && waits_after, "{log}");
                // The slice's address on its side, the pointer on the other, in the direction
                // asked (catches swapped ends and offsets lost).
                let slice = buffer.ptr().0 + 1024;
                let expected = if into_buffer {
                    format!("cuMemcpyAsync {slice:#x} <- {:#x} size=1024", raw.0)
                } else {
                    format!("cuMemcpyAsync {:#x} <- {slice:#x} size=1024", raw.0)
                };
                assert!(lines[work].contains(&expected), "{}", lines[work]);
            }
            standin::clear_log();
            // SAFETY: each call is refused before any copy is queued.
            unsafe {
                let e = buffer
                    .copy_from_device_ptr(DevicePtr(0), &home)
                    .unwrap_err();
                assert_eq!(invalid_name(&e), "src", "{e}");
                let e = buffer
                    .copy_to_device_ptr(DevicePtr(u64::MAX - 100), &home)
                    .unwrap_err();
                assert_eq!(invalid_name(&e), "dst", "{e}");
                // Into itself, 1 byte apart: the driver's result would be undefined.
                let e = buffer
                    .copy_from_device_ptr(DevicePtr(buffer.ptr().0 + 1), &home)
                    .unwrap_err();
                assert_eq!(invalid_name(&e), "src", "{e}");
                // Adjacent is not overlapping.
                buffer
                    .slice(0..16)
                    .unwrap()
                    .copy_to_device_ptr(DevicePtr(buffer.ptr().0 + 16), &home)
                    .unwrap();
            }
            let log = standin::log();
            assert_eq!(log.matches("cuMemcpyAsync").count(), 1, "{log}");
        },
    );
}

#[test]
fn slices_out_of_range_and_misaligned_are_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "slices_out_of_range_and_misaligned_are_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(100, &stream)
                .unwrap();
            let shared = common::shared_buffer(device, &stream, 100);
            let a = shared.shared_slice(0..32).unwrap();
            let b = shared.shared_slice(16..48).unwrap();
            // Adjacent ranges do not overlap.
            let c = shared.shared_slice(32..64).unwrap();
            a.copy_to(&c, &stream).unwrap();
            standin::clear_log();
            for e in [
                buffer.slice(0..101).unwrap_err(),
                buffer.slice(101..).unwrap_err(),
                buffer.slice_mut(..=100).unwrap_err(),
                buffer.slice_of::<u32>(0..26).unwrap_err(),
                shared.shared_slice(50..101).unwrap_err(),
            ] {
                assert_eq!(invalid_name(&e), "range", "{e}");
            }
            // Elements of u64 from byte 4: not aligned for u64 (a slice of bytes is).
            let e = buffer
                .slice(4..)
                .unwrap()
                .view::<u64>(&[2], None)
                .unwrap_err();
            assert_eq!(invalid_name(&e), "byte_offset", "{e}");
            let e = buffer
                .slice(0..6)
                .unwrap()
                .to_vec::<u32>(&stream)
                .unwrap_err();
            assert_eq!(invalid_name(&e), "T", "{e}");
            let mut short = [0u8; 3];
            let e = buffer
                .slice(0..4)
                .unwrap()
                .copy_to_host(&mut short, &stream)
                .unwrap_err();
            assert_eq!(invalid_name(&e), "dst", "{e}");
            let e = buffer
                .slice_mut(0..4)
                .unwrap()
                .copy_from_host(&[0u8; 5], &stream)
                .unwrap_err();
            assert_eq!(invalid_name(&e), "src", "{e}");
            // Overlapping copies: two slices of one shared buffer, and a buffer into itself
            // (the driver's result would be undefined). Catches a check of sizes alone.
            assert_eq!(invalid_name(&a.copy_to(&b, &stream).unwrap_err()), "dst");
            assert_eq!(
                invalid_name(&shared.copy_to(&shared, &stream).unwrap_err()),
                "dst"
            );
            // Empty slices are slices (of no bytes), at the end too.
            assert_eq!(buffer.slice(100..).unwrap().size(), 0);
            let log = standin::log();
            assert!(
                !log.contains("cuMemcpy") && !log.contains("cuMemset"),
                "a refused call reached the driver:\n{log}"
            );
            // A slice's debug output names its place in the buffer.
            let slice: BufferSlice<'_> = buffer.slice(8..24).unwrap();
            let text = format!("{slice:?}");
            assert!(
                text.contains("offset: 8") && text.contains("size: 16"),
                "{text}"
            );
            // Bytes 4..12 hold one u64 (a host copy needs no alignment on the device).
            let one = buffer.slice(4..12).unwrap().to_vec::<u64>(&stream);
            assert!(one.is_ok_and(|v| v.len() == 1));
        },
    );
}

/// `Buffer::split_at_mut` and its kin: two halves at the cut, covering the buffer, refused past
/// the end before the driver.
#[test]
fn a_split_gives_two_halves_at_the_cut_and_refuses_a_cut_past_the_end() {
    standin::run(
        module_path!(),
        "a_split_gives_two_halves_at_the_cut_and_refuses_a_cut_past_the_end",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(100, &stream).unwrap();
            let base = buffer.ptr().0;
            standin::clear_log();
            // (address, size, offset) of each half.
            let place = |s: &BufferSliceMut<'_>| (s.ptr().0, s.size(), s.offset());
            {
                let (front, back) = buffer.split_at_mut(40).unwrap();
                // Catches a second half that starts at the buffer's start, sizes swapped or
                // not summing to the buffer's, and a cut taken from the end.
                assert_eq!(place(&front), (base, 40, 0));
                assert_eq!(place(&back), (base + 40, 60, 40));
            }
            // Cuts at either end: one half empty, at the cut's address (as `slice(100..)`).
            // Catches a refusal of `mid == size` (an off-by-one) or of `mid == 0`.
            {
                let (front, back) = buffer.split_at_mut(0).unwrap();
                assert_eq!(
                    (place(&front), place(&back)),
                    ((base, 0, 0), (base, 100, 0))
                );
            }
            {
                let (front, back) = buffer.split_at_mut(100).unwrap();
                assert_eq!(
                    (place(&front), place(&back)),
                    ((base, 100, 0), (base + 100, 0, 100))
                );
            }
            // Recursive splits: `mid` counts from the slice's start, not the buffer's (catches
            // a cut of a slice made at the buffer's byte `mid`).
            {
                let (_front, mut back) = buffer.split_at_mut(40).unwrap();
                let (b1, b2) = back.split_at_mut(10).unwrap();
                assert_eq!(
                    (place(&b1), place(&b2)),
                    ((base + 40, 10, 40), (base + 50, 50, 50))
                );
            }
            {
                let whole = buffer.slice_mut(20..).unwrap();
                let (a, b) = whole.into_split_at_mut(30).unwrap();
                assert_eq!(
                    (place(&a), place(&b)),
                    ((base + 20, 30, 20), (base + 50, 50, 50))
                );
            }
            // Shared halves, of a buffer and of a slice.
            let (head, tail) = buffer.split_at(64).unwrap();
            assert_eq!(
                (head.size(), tail.ptr().0, tail.size()),
                (64, base + 64, 36)
            );
            let (head, tail) = buffer.slice(10..90).unwrap().split_at(5).unwrap();
            assert_eq!(
                (head.offset(), head.size(), tail.offset(), tail.size()),
                (10, 5, 15, 75)
            );
            // Typed: `mid` in elements (catches it taken as bytes: 3, not 12).
            {
                let (front, back) = buffer.split_at_of_mut::<u32>(3).unwrap();
                assert_eq!(
                    (place(&front), place(&back)),
                    ((base, 12, 0), (base + 12, 88, 12))
                );
            }
            let (head, tail) = buffer.split_at_of::<u32>(25).unwrap();
            assert_eq!((head.size(), tail.size()), (100, 0));
            // Past the end, in bytes and in elements (and a byte count that overflows):
            // refused as `mid`, not clamped (catches a cut clamped to the end, and `mid * 4`
            // wrapping round to a small cut).
            for e in [
                buffer.split_at_mut(101).unwrap_err(),
                buffer.split_at(usize::MAX).unwrap_err(),
                buffer.slice(0..50).unwrap().split_at(51).unwrap_err(),
                buffer
                    .slice_mut(0..50)
                    .unwrap()
                    .split_at_mut(51)
                    .unwrap_err(),
                buffer
                    .slice_mut(0..50)
                    .unwrap()
                    .into_split_at_mut(51)
                    .unwrap_err(),
                buffer.split_at_of_mut::<u32>(26).unwrap_err(),
                buffer.split_at_of::<u32>(usize::MAX / 2 + 1).unwrap_err(),
            ] {
                assert_eq!(invalid_name(&e), "mid", "{e}");
            }
            // 100 bytes are not a whole number of u64: the second half would not be either.
            let e = buffer.split_at_of_mut::<u64>(1).unwrap_err();
            assert_eq!(invalid_name(&e), "T", "{e}");
            let e = buffer.split_at_of::<[u8; 0]>(0).unwrap_err();
            assert_eq!(invalid_name(&e), "T", "{e}");
            // A split is no driver call.
            let log = standin::log();
            assert!(
                !log.contains("cuMem") && !log.contains("cuLaunch"),
                "a split reached the driver:\n{log}"
            );
        },
    );
}

/// Both halves of a split in one launch (the stand-in logs every parameter) and as the two
/// ends of one copy, each at its own address.
#[test]
fn both_halves_of_a_split_go_in_one_launch_and_one_copy() {
    standin::run(
        module_path!(),
        "both_halves_of_a_split_go_in_one_launch_and_one_copy",
        &[],
        &[("STANDIN_LOG_ARGS", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(256, &stream).unwrap();
            let base = buffer.ptr().0;
            let k4 = ObjectCode::from_cubin(standin::cubin())
                .get_kernel("k4")
                .unwrap();
            let (mut front, mut back) = buffer.split_at_mut(64).unwrap();
            standin::clear_log();
            // SAFETY: the stand-in runs no kernel.
            unsafe {
                launch(
                    &stream,
                    &LaunchConfig::for_elements(1, 1),
                    &k4,
                    &[&front, &back, &7u64, &back],
                )
            }
            .unwrap();
            // Both halves at once, from one `&mut Buffer`: one into the other (they share no
            // byte, so the overlap check lets it through), then each filled.
            back.slice_mut(..64)
                .unwrap()
                .copy_from(&front, &stream)
                .unwrap();
            front.fill(1u8, &stream).unwrap();
            back.fill(2u8, &stream).unwrap();
            let log = standin::log();
            // Catches a half passed as the buffer's address (the second would read `base`),
            // the halves swapped, and a half passed by its host address.
            let args = format!(
                "cuLaunchKernel-args k4 args={base:#x},{:#x},0x7,{:#x}",
                base + 64,
                base + 64
            );
            assert!(log.contains(&args), "{args} in:\n{log}");
            // The copy from the first half into the second's first 64 bytes, and each fill
            // over its own half alone.
            let copy = format!("cuMemcpyAsync {:#x} <- {base:#x} size=64", base + 64);
            assert!(log.contains(&copy), "{copy} in:\n{log}");
            let fills: Vec<&str> = log
                .lines()
                .filter(|l| l.starts_with("cuMemsetD8Async"))
                .collect();
            assert_eq!(fills.len(), 2, "{log}");
            assert!(
                fills[0].contains(&format!("{base:#x}")) && fills[0].contains("64"),
                "{}",
                fills[0]
            );
            assert!(
                fills[1].contains(&format!("{:#x}", base + 64)) && fills[1].contains("192"),
                "{}",
                fills[1]
            );
        },
    );
}

/// The log's lines without the launch parameters' lines and the model's thread numbers.
fn work_lines() -> Vec<String> {
    standin::log()
        .lines()
        .filter(|l| !l.contains("cuLaunchKernel-args"))
        .map(str::to_owned)
        .collect()
}

/// A half of a split is ordered with its buffer's stream exactly as the same range through
/// `slice_mut` is, in the strict model: the same calls, in the same order, for a fill, a
/// launch and a host copy on another stream; and a copy between the halves on another stream
/// waits for the buffer's stream before and is waited for after.
#[test]
fn halves_of_a_split_keep_their_buffers_stream_order_as_slices_do() {
    standin::run(
        module_path!(),
        "halves_of_a_split_keep_their_buffers_stream_order_as_slices_do",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            let device = Device::new(0).unwrap();
            let (home, home_name) = stream_of(device);
            let (other, other_name) = stream_of(device);
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(4096, &home).unwrap();
            let kernel = ObjectCode::from_cubin(standin::cubin())
                .get_kernel("k1")
                .unwrap();
            let config = LaunchConfig::for_elements(1, 1);
            for step in 0..3 {
                let run = |part: &mut BufferSliceMut<'_>| match step {
                    0 => part.fill(1u8, &other).unwrap(),
                    1 => {
                        // SAFETY: the stand-in runs no kernel.
                        unsafe { launch(&other, &config, &kernel, &[&*part]) }.unwrap()
                    }
                    _ => part.copy_from_host(&[3u8; 3072], &other).unwrap(),
                };
                // Once first, so that both runs below find the door's events made.
                run(&mut buffer.slice_mut(1024..).unwrap());
                standin::clear_log();
                run(&mut buffer.slice_mut(1024..).unwrap());
                let through_slice = work_lines();
                standin::clear_log();
                run(&mut buffer.split_at_mut(1024).unwrap().1);
                let through_half = work_lines();
                // Catches a half that skips the door or orders with another stream than its
                // buffer's (a different wait, or none).
                assert_eq!(through_half, through_slice, "step {step}");
                assert!(
                    through_half
                        .iter()
                        .any(|l| l.contains(&format!("cuStreamWaitEvent {other_name} waits"))),
                    "step {step}: {through_half:#?}"
                );
            }
            // Both halves as the ends of one copy on the other stream.
            standin::clear_log();
            let (front, mut back) = buffer.split_at_mut(2048).unwrap();
            back.copy_from(&front, &other).unwrap();
            let lines = work_lines();
            let work = lines
                .iter()
                .position(|l| l.contains("cuMemcpyAsync") && l.contains(&other_name))
                .unwrap_or_else(|| panic!("no copy on the other stream: {lines:#?}"));
            // Catches a copy of halves that is not ordered with the buffer's stream: the
            // other stream waits for it before, and it for the other stream after (so the
            // buffer's free cannot overtake the copy).
            let waits_before = lines[..work]
                .iter()
                .any(|l| l.contains(&format!("cuStreamWaitEvent {other_name} waits")));
            let waits_after = lines[work..]
                .iter()
                .any(|l| l.contains(&format!("cuStreamWaitEvent {home_name} waits")));
            assert!(waits_before && waits_after, "{lines:#?}");
            let expected = format!(
                "cuMemcpyAsync {:#x} <- {:#x}",
                buffer.ptr().0 + 2048,
                buffer.ptr().0
            );
            assert!(lines[work].contains(&expected), "{}", lines[work]);
            // Nothing stale or refused in the strict model.
            assert!(
                !lines.iter().any(|l| l.contains(" !")),
                "the model refused a call: {lines:#?}"
            );
            drop(buffer);
            home.sync().unwrap();
        },
    );
}

const SPLIT_WRITE: &str = r#"
extern "C" __global__ void split_write(unsigned* a, unsigned na, unsigned* b, unsigned nb) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < na) a[i] = i;
    if (i < nb) b[i] = 1000000u + i;
}
"#;

/// One kernel writes both halves of a split at once, through the two halves in one launch.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_writes_both_halves_of_a_split_in_one_launch() {
    let device = common::device();
    let stream = common::stream(device);
    let code = Program::new(SPLIT_WRITE, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = code.get_kernel("split_write").unwrap();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(1000 * 4, &stream)
        .unwrap();
    buffer.fill(0xdead_beefu32, &stream).unwrap();
    // An uneven cut: 300 elements and 700.
    let (front, back) = buffer.split_at_of_mut::<u32>(300).unwrap();
    let (na, nb) = (300u32, 700u32);
    // SAFETY: the kernel writes `na` elements of the 300-element first half and `nb` of the
    // 700-element second.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(700, 128),
            &kernel,
            &[&front, &na, &back, &nb],
        )
    }
    .unwrap();
    let values = buffer.to_vec::<u32>(&stream).unwrap();
    // Catches a second half passed at the buffer's start (the front would read 1000000..),
    // a cut in bytes rather than elements (the back would start at element 75), and a half
    // left unwritten (0xdeadbeef).
    for (i, &v) in values.iter().enumerate() {
        let expected = if i < 300 {
            i as u32
        } else {
            1_000_000 + (i as u32 - 300)
        };
        assert_eq!(v, expected, "element {i}");
    }
}
