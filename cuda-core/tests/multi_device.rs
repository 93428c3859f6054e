//! Two devices in one process: each device's objects stay with their device, and the library
//! says so when they are mixed up; one loaded program runs on both devices, also from two
//! threads at once; work on one device can wait for work on the other and copy its memory; a
//! thread with one device current can use the other device's objects without losing its
//! context; and green contexts work on the second device. Pool memory is used across devices
//! only where the pool grants access (`DeviceMemoryResource::set_peer_access`), and is refused
//! with a clear error otherwise (the driver refused it, and crashed with no context current);
//! `cuMemAlloc` memory is copied across devices as the driver allows.
//!
//! Every test needs two devices. On a machine with fewer, each prints
//! `not run: needs two CUDA devices (found N)`, and fails where `CUDA_CORE_TEST_REQUIRE` names
//! `two-gpus`.

use crate::common;

use std::sync::{Arc, OnceLock};

use crate::common::Gate;
use cuda_core::{
    launch, memory::SyncMemoryResource, Allocate, CodeType, ContextOptions, Device,
    DeviceMemoryResource, DeviceMemoryResourceOptions, Error, EventOptions, Kernel, LaunchConfig,
    MemoryResource, ObjectCode, Program, ProgramOptions, SmSplitOptions, Stream, StreamOptions,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// Devices 0 and 1, or `None` (after saying so) when the machine has fewer than two.
fn two_devices() -> Option<(Device, Device)> {
    match Device::count() {
        Ok(count) if count >= 2 => Some((Device::new(0).unwrap(), Device::new(1).unwrap())),
        Ok(count) => {
            common::not_run(
                "two-gpus",
                &format!("needs two CUDA devices (found {count})"),
            );
            None
        }
        Err(e) => {
            common::not_run(
                "two-gpus",
                &format!("needs two CUDA devices (found 0: {e})"),
            );
            None
        }
    }
}

/// The SAXPY kernel, compiled once per process. The architecture is named rather than taken
/// from the current device, so no context is made current: a cubin when both devices share
/// one architecture, else PTX for the older one, which the driver compiles for each device.
/// The library is loaded context-independently (`cuLibraryLoadData`), so one kernel serves
/// both devices.
fn saxpy_kernel(d0: Device, d1: Device) -> Kernel {
    static CODE: OnceLock<ObjectCode> = OnceLock::new();
    CODE.get_or_init(|| {
        let (cc0, cc1) = (
            d0.compute_capability().unwrap(),
            d1.compute_capability().unwrap(),
        );
        let (major, minor) = cc0.min(cc1);
        let target = if cc0 == cc1 {
            CodeType::Cubin
        } else {
            CodeType::Ptx
        };
        let options = ProgramOptions::default().with_arch(format!("{major}{minor}"));
        Program::new(SOURCE, options)
            .with_name("multi_device.cu")
            .compile(target, &[])
            .unwrap()
    })
    .get_kernel("saxpy")
    .unwrap()
}

fn random_floats(seed: u64, n: usize) -> Vec<f32> {
    common::random_u32(seed, n)
        .into_iter()
        .map(|r| (r >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0)
        .collect()
}

/// Runs SAXPY on 1M floats on `stream`, with buffers from `memory` (of the stream's device),
/// and checks every element against the CPU.
fn saxpy_on(stream: &Stream, kernel: &Kernel, memory: &Arc<dyn MemoryResource>, seed: u64) {
    let device = stream.device();
    let n = 1usize << 20;
    let (x, y) = (random_floats(seed, n), random_floats(seed + 1, n));
    let a = 1.5f32 + device.ordinal() as f32;
    let mut dx = memory.allocate(4 * n, stream).unwrap();
    let mut dy = memory.allocate(4 * n, stream).unwrap();
    assert_eq!(dx.device(), Some(device));
    dx.copy_from_host(&x, stream).unwrap();
    dy.copy_from_host(&y, stream).unwrap();
    let config = LaunchConfig::for_elements(n as u64, 256);
    // SAFETY: n floats in each buffer, both of the stream's device; the kernel reads x and
    // updates y within n, and the buffers outlive the copy back, which waits for it.
    unsafe { launch(stream, &config, kernel, &[&a, &dx, &dy, &(n as u32)]) }.unwrap();
    let out = dy.to_vec::<f32>(stream).unwrap();
    // Without the kernel, out would be y: a * x + y differs wherever x is not 0.
    let wrong = (0..n)
        .filter(|&i| out[i] != a.mul_add(x[i], y[i]) && out[i] != a * x[i] + y[i])
        .count();
    assert_eq!(
        wrong,
        0,
        "device {}: elements differ from the CPU's",
        device.ordinal()
    );
}

/// The error is `InvalidArgument` for `name`, and its reason names both devices.
fn assert_names_both_devices(err: &Error, name: &str) {
    assert!(
        matches!(err, Error::InvalidArgument { name: n, reason }
            if *n == name && reason.contains("device 0") && reason.contains("device 1")),
        "{err}"
    );
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn devices_are_distinct() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    assert_ne!(d0, d1);
    assert_eq!((d0.ordinal(), d1.ordinal()), (0, 1));
    let all = Device::all().unwrap();
    assert!(all.len() >= 2 && all[0] == d0 && all[1] == d1, "{all:?}");
    assert_ne!(d0.uuid().unwrap(), d1.uuid().unwrap());
    assert_ne!(d0.pci_bus_id().unwrap(), d1.pci_bus_id().unwrap());
    // Each primary context is its own and knows its device.
    let (c0, c1) = (d0.primary_context().unwrap(), d1.primary_context().unwrap());
    assert_ne!(c0, c1);
    assert_eq!((c0.device(), c1.device()), (d0, d1));
    // Peer access is a question the driver answers, either way, in both directions.
    let there = d0.can_access_peer(&d1).unwrap();
    let back = d1.can_access_peer(&d0).unwrap();
    println!(
        "{} ({}) and {} ({}); peer access 0->1 {there}, 1->0 {back}",
        d0.name().unwrap(),
        d0.pci_bus_id().unwrap(),
        d1.name().unwrap(),
        d1.pci_bus_id().unwrap()
    );
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn set_current_switches_device() {
    if let Some((d0, d1)) = two_devices() {
        set_current_switches_device_on(d0, d1);
    }
}

fn set_current_switches_device_on(d0: Device, d1: Device) {
    // A new thread, so that the contexts set here stay here.
    std::thread::spawn(move || {
        // Device 1 first: with no context current, `current` would already say device 0.
        d1.set_current().unwrap();
        assert_eq!(Device::current().unwrap(), d1);
        assert!(d1.primary_context().unwrap().is_current().unwrap());
        d0.set_current().unwrap();
        assert_eq!(Device::current().unwrap(), d0);
        assert!(!d1.primary_context().unwrap().is_current().unwrap());
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn event_of_another_device_is_refused() {
    if let Some((d0, d1)) = two_devices() {
        event_of_another_device_is_refused_on(d0, d1);
    }
}

fn event_of_another_device_is_refused_on(d0: Device, d1: Device) {
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    let e0 = d0.create_event(EventOptions::default()).unwrap();
    assert_eq!(e0.device(), d0);
    // Recording needs an event of the stream's own context: refused before the driver.
    let err = s1.record(&e0).unwrap_err();
    assert_names_both_devices(&err, "event");
    // The event still works where it belongs, and waiting on it from device 1 is allowed.
    s0.record(&e0).unwrap();
    s1.wait(&e0).unwrap();
    s1.sync().unwrap();
    // record_new makes the event in the stream's context: device 1's.
    let e1 = s1.record_new(EventOptions::default()).unwrap();
    assert_eq!(e1.device(), d1);
    assert_eq!(e1.context(), &d1.primary_context().unwrap());
    e1.sync().unwrap();
    assert!(e1.is_done().unwrap());
    // And the other way round.
    let err = s0.record(&e1).unwrap_err();
    assert_names_both_devices(&err, "event");
    // Timing across devices is refused by name; within a device it works.
    let t0 = s0.record_new(EventOptions::timing()).unwrap();
    let t1 = s1.record_new(EventOptions::timing()).unwrap();
    let t0_end = s0.record_new(EventOptions::timing()).unwrap();
    t1.sync().unwrap();
    t0_end.sync().unwrap();
    assert_names_both_devices(&t1.elapsed_since(&t0).unwrap_err(), "start");
    assert!(t0_end.elapsed_since(&t0).is_ok());
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn allocation_on_a_stream_of_another_device_is_refused() {
    if let Some((d0, d1)) = two_devices() {
        allocation_on_a_stream_of_another_device_is_refused_on(d0, d1);
    }
}

fn allocation_on_a_stream_of_another_device_is_refused_on(d0: Device, d1: Device) {
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    // The default resource (a memory pool on these devices), and cuMemAlloc's resource.
    let resources: [Arc<dyn MemoryResource>; 2] = [
        d0.memory_resource().unwrap(),
        SyncMemoryResource::new(d0).unwrap(),
    ];
    for memory in resources {
        let err = memory.allocate(1024, &s1).unwrap_err();
        assert_names_both_devices(&err, "stream");
        // The same request on device 0's stream is fine.
        let buffer = memory.allocate(1024, &s0).unwrap();
        assert_eq!(buffer.device(), Some(d0), "{memory:?}");
    }
    s0.sync().unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn stream_from_raw_of_another_device_is_refused() {
    if let Some((d0, d1)) = two_devices() {
        stream_from_raw_of_another_device_is_refused_on(d0, d1);
    }
}

fn stream_from_raw_of_another_device_is_refused_on(d0: Device, d1: Device) {
    // `s1` owns the stream and lives to the end of the test.
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    // SAFETY: a valid stream, alive while used; it is of device 1, which is what is refused.
    let err = unsafe { Stream::from_raw(s1.as_raw(), d0) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "handle", reason } if reason.contains("device 0")),
        "{err}"
    );
    // Named with its own device, it is accepted.
    // SAFETY: as above, and `s1` outlives `wrapped`.
    let wrapped = unsafe { Stream::from_raw(s1.as_raw(), d1) }.unwrap();
    assert_eq!(wrapped.device(), d1);
    assert_eq!(wrapped, s1);
    wrapped.sync().unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn kernel_runs_on_each_device() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    let saxpy = saxpy_kernel(d0, d1);
    // Attributes are per device, each compiled for its device's architecture.
    for device in [d0, d1] {
        let attributes = saxpy.attributes(device).unwrap();
        let (major, minor) = device.compute_capability().unwrap();
        assert!(
            attributes.max_threads_per_block > 0 && attributes.max_threads_per_block <= 1024,
            "device {}: {attributes:?}",
            device.ordinal()
        );
        assert_eq!(attributes.binary_version, major * 10 + minor);
    }
    // One device after the other...
    for (seed, device) in [(1, d0), (3, d1)] {
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        saxpy_on(&stream, &saxpy, &device.memory_resource().unwrap(), seed);
    }
    // ...then both at once, one thread per device.
    let threads: Vec<_> = [(5, d0), (7, d1)]
        .into_iter()
        .map(|(seed, device)| {
            let saxpy = saxpy.clone();
            std::thread::spawn(move || {
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                saxpy_on(&stream, &saxpy, &device.memory_resource().unwrap(), seed);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn copy_between_devices_in_stream_order() {
    // In a process of its own: it holds a stream at a gate (see `common::Gate`).
    common::alone(
        module_path!(),
        "copy_between_devices_in_stream_order",
        copy_between_devices_in_stream_order_alone,
    );
}

fn copy_between_devices_in_stream_order_alone() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    // cuMemAlloc memory, which the driver copies between devices as it is.
    let sync: [Arc<dyn MemoryResource>; 2] = [
        SyncMemoryResource::new(d0).unwrap(),
        SyncMemoryResource::new(d1).unwrap(),
    ];
    copy_round_trip(d0, d1, &sync);
    // Pools of their own, each granting the other device access.
    let pools = [d0, d1].map(|d| DeviceMemoryResource::new(d, Default::default()).unwrap());
    pools[0].set_peer_access(&[d1]).unwrap();
    pools[1].set_peer_access(&[d0]).unwrap();
    assert_eq!(pools[0].peer_access().unwrap(), [d1]);
    assert_eq!(pools[1].peer_access().unwrap(), [d0]);
    let pools: [Arc<dyn MemoryResource>; 2] = pools.map(|p| p as Arc<dyn MemoryResource>);
    copy_round_trip(d0, d1, &pools);
}

/// Copies 4 MiB from device 0 to device 1 on a device-1 stream that waits for device 0's
/// work, and back on a device-0 stream, with buffers of `memory[0]` (device 0) and
/// `memory[1]` (device 1); checks every value.
fn copy_round_trip(d0: Device, d1: Device, memory: &[Arc<dyn MemoryResource>; 2]) {
    let n = 1usize << 20; // 4 MiB of u32
    let data = common::random_u32(11, n);
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    let (m0, m1) = (&memory[0], &memory[1]);
    let mut source = m0.allocate(4 * n, &s0).unwrap();
    source.copy_from_host(&data, &s0).unwrap();
    // `staged` (device 0) and `target` (device 1) start with other values, in place before
    // the gated work below.
    let mut staged = m0.allocate(4 * n, &s0).unwrap();
    staged.fill(0xDEAD_BEEFu32, &s0).unwrap();
    s0.sync().unwrap();
    let mut target = m1.allocate(4 * n, &s1).unwrap();
    target.fill(0x0BAD_F00Du32, &s1).unwrap();
    s1.sync().unwrap();
    // Held back on s0: the data reaches `staged` only when the gate opens.
    let _watchdog = crate::common::Watchdog::new(
        std::time::Duration::from_secs(60),
        "a stream held at a gate",
    );
    let gate = Gate::close(&s0);
    source.copy_to(&mut staged, &s0).unwrap();
    let ready = s0.record_new(EventOptions::default()).unwrap();
    // s1 (device 1) waits for s0's event (device 0), then copies across devices.
    s1.wait(&ready).unwrap();
    target.copy_from(&staged, &s1).unwrap();
    // Nothing on s1 can finish while s0 is held.
    assert!(!s1.is_done().unwrap());
    assert!(!ready.is_done().unwrap());
    gate.open();
    let out = target.to_vec::<u32>(&s1).unwrap();
    // Had the copy run before the gated one, it would hold 0xDEADBEEF.
    let wrong = out.iter().zip(&data).filter(|(a, b)| a != b).count();
    assert_eq!(
        wrong, 0,
        "{m0:?}: of {n} values copied from device 0 to device 1"
    );
    assert_eq!(target.device(), Some(d1));
    // And back: device 1's memory into a fresh device 0 buffer, on s0.
    let mut back = m0.allocate(4 * n, &s0).unwrap();
    back.fill(0u32, &s0).unwrap();
    s0.wait_stream(&s1).unwrap();
    target.copy_to(&mut back, &s0).unwrap();
    let out = back.to_vec::<u32>(&s0).unwrap();
    let wrong = out.iter().zip(&data).filter(|(a, b)| a != b).count();
    assert_eq!(
        wrong, 0,
        "{m0:?}: of {n} values copied back from device 1 to device 0"
    );
    // Free on each buffer's own stream, after the reads above (each to_vec waited).
    s0.sync().unwrap();
    s1.sync().unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn pool_memory_of_another_device_needs_access() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    // A thread with no context current: where the driver crashed (SIGSEGV in cuMemcpyAsync)
    // when asked to copy another device's pool memory.
    std::thread::spawn(move || {
        assert!(!d0.primary_context().unwrap().is_current().unwrap());
        assert!(!d1.primary_context().unwrap().is_current().unwrap());
        let pool = DeviceMemoryResource::new(d0, DeviceMemoryResourceOptions::default()).unwrap();
        assert_eq!(pool.peer_access().unwrap(), []);
        assert!(!pool.is_accessible_from(d1).unwrap());
        let s0 = d0.create_stream(StreamOptions::default()).unwrap();
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let mut a0 = pool.allocate(1 << 20, &s0).unwrap();
        a0.fill(7u8, &s0).unwrap();
        s0.sync().unwrap();
        let mut b1 = d1
            .memory_resource()
            .unwrap()
            .allocate(1 << 20, &s1)
            .unwrap();

        // Without access: refused before any driver call, naming the buffer and both devices.
        let refused = |b1: &mut cuda_core::Buffer, a0: &mut cuda_core::Buffer| {
            assert_names_both_devices(&b1.copy_from(&*a0, &s1).unwrap_err(), "src");
            assert_names_both_devices(&a0.copy_to(&mut *b1, &s1).unwrap_err(), "self");
            assert_names_both_devices(&a0.to_vec::<u8>(&s1).unwrap_err(), "self");
            assert_names_both_devices(&a0.fill(1u8, &s1).unwrap_err(), "self");
        };
        refused(&mut b1, &mut a0);

        // With access granted to device 1: the copy, a read and a fill on device 1's stream.
        pool.set_peer_access(&[d1]).unwrap();
        assert_eq!(pool.peer_access().unwrap(), [d1]);
        assert!(pool.is_accessible_from(d1).unwrap());
        b1.copy_from(&a0, &s1).unwrap();
        assert!(b1.to_vec::<u8>(&s1).unwrap().iter().all(|&v| v == 7));
        a0.fill(9u8, &s1).unwrap();
        assert!(a0.to_vec::<u8>(&s1).unwrap().iter().all(|&v| v == 9));

        // Revoked: refused again.
        pool.set_peer_access(&[]).unwrap();
        assert_eq!(pool.peer_access().unwrap(), []);
        refused(&mut b1, &mut a0);

        // cuMemAlloc memory: copied across devices, but not filled from another device.
        let sync0 = SyncMemoryResource::new(d0).unwrap();
        let mut c0 = sync0.allocate(1 << 20, &s0).unwrap();
        c0.fill(5u8, &s0).unwrap();
        s0.sync().unwrap();
        b1.copy_from(&c0, &s1).unwrap();
        assert!(b1.to_vec::<u8>(&s1).unwrap().iter().all(|&v| v == 5));
        assert_names_both_devices(&c0.fill(1u8, &s1).unwrap_err(), "self");
        s1.sync().unwrap();
        // Nothing was left current by the library.
        assert!(!d0.primary_context().unwrap().is_current().unwrap());
        assert!(!d1.primary_context().unwrap().is_current().unwrap());
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn objects_of_device_1_work_with_device_0_current() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    let saxpy = saxpy_kernel(d0, d1);
    // A new thread, so that setting device 0 current stays here.
    std::thread::spawn(move || {
        d0.set_current().unwrap();
        let stream = d1.create_stream(StreamOptions::default()).unwrap();
        assert_eq!(stream.device(), d1);
        // Device 1's default pool: the driver refuses copies of pool memory with another
        // device's context current (CUDA_ERROR_INVALID_VALUE), so the library makes the
        // stream's context current around copies.
        let memory = d1.memory_resource().unwrap();
        let mut buffer = memory.allocate(4 << 20, &stream).unwrap();
        buffer.fill(0x1234_5678u32, &stream).unwrap();
        assert!(buffer
            .to_vec::<u32>(&stream)
            .unwrap()
            .iter()
            .all(|&v| v == 0x1234_5678));
        let event = stream.record_new(EventOptions::default()).unwrap();
        assert_eq!(event.device(), d1);
        event.sync().unwrap();
        // A launch on device 1's stream runs in device 1's context.
        saxpy_on(&stream, &saxpy, &memory, 21);
        drop(buffer);
        stream.sync().unwrap();
        // The library made device 1's context current only around its calls.
        assert_eq!(Device::current().unwrap(), d0);
        assert!(d0.primary_context().unwrap().is_current().unwrap());
        assert!(!d1.primary_context().unwrap().is_current().unwrap());
    })
    .join()
    .unwrap();
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn green_contexts_on_device_1() {
    let _green = common::green_contexts();
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    let saxpy = saxpy_kernel(d0, d1);
    let sms = d1.resources().sm().unwrap();
    assert_eq!(sms.device(), d1);
    let align = sms.coscheduled_alignment().unwrap_or(8).max(1);
    let half = sms.sm_count() / 2 / align * align;
    let split = sms
        .split(SmSplitOptions::groups_of(half).with_groups(2))
        .unwrap();
    assert_eq!(split.groups.len(), 2);
    assert!(split.groups.iter().all(|g| g.device() == d1));
    // Device 0 cannot make a context of device 1's SMs: refused before the driver.
    let err = d0
        .create_context(ContextOptions::default().with_resources(vec![split.groups[1].clone()]))
        .unwrap_err();
    assert_names_both_devices(&err, "options.resources");
    // Device 1 can: a green context of one group, whose stream runs the kernel.
    let want = split.groups[0].sm_count();
    let green = d1
        .create_context(ContextOptions::default().with_resources(vec![split.groups[0].clone()]))
        .unwrap();
    assert!(green.is_green());
    assert_eq!(green.device(), d1);
    assert_eq!(green.sm_count().unwrap(), want);
    let stream = green.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(stream.device(), d1);
    assert_eq!(stream.context(), &green);
    saxpy_on(&stream, &saxpy, &d1.memory_resource().unwrap(), 31);
    // Its events are the green context's: device 0's streams refuse them, device 1's primary
    // context's streams too (another context), but may wait on them.
    let marker = stream.record_new(EventOptions::default()).unwrap();
    assert_eq!(marker.device(), d1);
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    assert_names_both_devices(&s0.record(&marker).unwrap_err(), "event");
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    let err = s1.record(&marker).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "event", reason } if reason.contains("another context")),
        "{err}"
    );
    s0.wait(&marker).unwrap();
    s0.sync().unwrap();
    green.sync().unwrap();
}

/// Recycled events and streams stay with their device: a handle of device 0 dropped is never
/// handed out for device 1 (the event or stream made there is device 1's, and works on device
/// 1's streams), and device 0 still gets its own handle back.
#[test]
#[ignore = "needs two CUDA GPUs"]
fn recycled_events_and_streams_stay_with_their_device() {
    if let Some((d0, d1)) = two_devices() {
        recycled_events_and_streams_stay_with_their_device_on(d0, d1);
    }
}

fn recycled_events_and_streams_stay_with_their_device_on(d0: Device, d1: Device) {
    use crate::recycling::handle_of;
    // A thread of its own: recycling is per thread, so no other test's handles mix in.
    std::thread::spawn(move || {
        let s1 = d1.create_stream(StreamOptions::default()).unwrap();
        let first = d0.create_event(EventOptions::default()).unwrap();
        let event_handle = handle_of(&first);
        drop(first);
        let theirs = d1.create_event(EventOptions::default()).unwrap();
        assert_ne!(
            handle_of(&theirs),
            event_handle,
            "device 0's event went to device 1"
        );
        assert_eq!(theirs.device(), d1);
        // The crate refuses another device's event here, and the driver would refuse a
        // device 0 handle: a record on device 1's stream shows it is device 1's.
        s1.record(&theirs).unwrap();
        theirs.sync().unwrap();
        let again = d0.create_event(EventOptions::default()).unwrap();
        assert_eq!(
            handle_of(&again),
            event_handle,
            "device 0 lost its recycled event"
        );
        assert_eq!(again.device(), d0);

        let first = d0.create_stream(StreamOptions::default()).unwrap();
        let stream_handle = handle_of(&first);
        drop(first);
        let theirs = d1.create_stream(StreamOptions::default()).unwrap();
        assert_ne!(
            handle_of(&theirs),
            stream_handle,
            "device 0's stream went to device 1"
        );
        assert_eq!(theirs.device(), d1);
        let marker = d1.create_event(EventOptions::default()).unwrap();
        theirs.record(&marker).unwrap();
        theirs.sync().unwrap();
        let again = d0.create_stream(StreamOptions::default()).unwrap();
        assert_eq!(
            handle_of(&again),
            stream_handle,
            "device 0 lost its recycled stream"
        );
        assert_eq!(again.device(), d0);
    })
    .join()
    .unwrap();
}

/// The rules above that need no real work, on the stand-in driver's two devices, so that a
/// machine with one GPU (or none) still runs them: `Device::current` follows the thread's
/// context (not "always device 0"), and objects of one device are refused on the other.
#[test]
fn cross_device_rules_hold_on_two_stand_in_devices() {
    common::standin::run(
        module_path!(),
        "cross_device_rules_hold_on_two_stand_in_devices",
        &[],
        &[("STANDIN_DEVICES", "2")],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            assert_eq!(Device::count().unwrap(), 2);
            set_current_switches_device_on(d0, d1);
            event_of_another_device_is_refused_on(d0, d1);
            allocation_on_a_stream_of_another_device_is_refused_on(d0, d1);
            stream_from_raw_of_another_device_is_refused_on(d0, d1);
            recycled_events_and_streams_stay_with_their_device_on(d0, d1);
        },
    );
}

/// An executable graph runs on streams of its own device only: a captured graph of device 0
/// launched (or uploaded) on device 1's stream is refused before the driver, naming both
/// devices, and runs on device 0's stream; a graph built on device 1 copies between device 1
/// buffers and refuses a device 0 buffer that device 1 cannot reach.
#[test]
#[ignore = "needs two CUDA GPUs"]
fn a_graph_runs_on_its_own_devices_streams_only() {
    if let Some((d0, d1)) = two_devices() {
        a_graph_runs_on_its_own_devices_streams_only_on(d0, d1);
    }
}

fn a_graph_runs_on_its_own_devices_streams_only_on(d0: Device, d1: Device) {
    use cuda_core::{BuildGraph, CaptureMode, Graph, GraphOptions};
    let s0 = d0.create_stream(StreamOptions::default()).unwrap();
    let s1 = d1.create_stream(StreamOptions::default()).unwrap();
    let mut buffer = d0.memory_resource().unwrap().allocate(4096, &s0).unwrap();
    buffer.fill(0u32, &s0).unwrap();
    // SAFETY: nothing is allocated or freed on s0 while it captures; the buffer outlives the
    // graph's launches.
    unsafe { s0.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    buffer.fill(7u32, &s0).unwrap();
    let graph = s0.end_capture().unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    assert_names_both_devices(&exec.launch(&s1).unwrap_err(), "stream");
    assert_names_both_devices(&exec.upload(&s1).unwrap_err(), "stream");
    exec.launch(&s0).unwrap();
    assert!(buffer.to_vec::<u32>(&s0).unwrap().iter().all(|&v| v == 7));
    // Built on device 1.
    let a = Arc::new(d1.memory_resource().unwrap().allocate(4096, &s1).unwrap());
    let b = Arc::new(d1.memory_resource().unwrap().allocate(4096, &s1).unwrap());
    let mut on_d1 = Graph::new(d1).unwrap();
    let fill = on_d1.add_fill(&[], &a, 3u32).unwrap();
    on_d1.add_copy(&[fill], &a, &b).unwrap();
    let far = Arc::new(buffer);
    let reachable = far.memory_resource().is_accessible_from(d1).unwrap();
    if !reachable {
        assert!(matches!(
            on_d1.add_fill(&[], &far, 1u32),
            Err(Error::InvalidArgument { name: "dst", .. })
        ));
    }
    on_d1
        .instantiate(GraphOptions::default())
        .unwrap()
        .launch(&s1)
        .unwrap();
    assert!(b.to_vec::<u32>(&s1).unwrap().iter().all(|&v| v == 3));
}
