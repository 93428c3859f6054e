//! Memory resources and buffers: copies, fills, pools, host views, bad input, and use from
//! threads with no context or another context current.

use crate::common;
use crate::common::standin;

use std::sync::Arc;

use cuda_core::{
    launch,
    memory::{ManagedMemoryResource, PinnedMemoryResource, SyncMemoryResource},
    Allocate, CodeType, ContextOptions, Device, DeviceMemoryResource, DeviceMemoryResourceOptions,
    DriverCode, Error, LaunchConfig, MemoryResource, Program, ProgramOptions, SmSplitOptions,
    StreamOptions,
};

const MIB: usize = 1 << 20;

/// Round trip of random data through two device buffers of `memory`.
fn round_trip(memory: &Arc<dyn MemoryResource>, device: Device, seed: u64) {
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let data = common::random_u32(seed, MIB / 4);
    let mut a = memory.allocate(MIB, &stream).unwrap();
    let mut b = memory.allocate(MIB, &stream).unwrap();
    a.copy_from_host(&data, &stream).unwrap();
    b.fill(0xDEAD_BEEFu32, &stream).unwrap();
    a.copy_to(&mut b, &stream).unwrap();
    assert_eq!(b.to_vec::<u32>(&stream).unwrap(), data, "{memory:?}");
    b.fill(0xABCDu16, &stream).unwrap();
    assert!(b
        .to_vec::<u16>(&stream)
        .unwrap()
        .iter()
        .all(|&x| x == 0xABCD));
    a.copy_from(&b, &stream).unwrap();
    let mut back = vec![0u8; MIB];
    a.copy_to_host(&mut back, &stream).unwrap();
    assert!(back.chunks(2).all(|c| c == [0xCD, 0xAB]));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_resource_round_trips() {
    let device = common::device();
    let resources: Vec<Arc<dyn MemoryResource>> = vec![
        device.memory_resource().unwrap(),
        DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap(),
        SyncMemoryResource::new(device).unwrap(),
        PinnedMemoryResource::new(device).unwrap(),
        ManagedMemoryResource::new(device).unwrap(),
    ];
    for (seed, memory) in resources.iter().enumerate() {
        round_trip(memory, device, seed as u64 + 1);
    }
    assert!(format!("{:?}", resources[0]).contains("DeviceMemoryResource"));
    assert!(resources[0].is_device_accessible() && !resources[0].is_host_accessible());
    assert_eq!(resources[3].device(), None);
    assert!(resources[3].is_host_accessible() && resources[4].is_host_accessible());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_memory_is_viewable_as_slices() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    for memory in [
        PinnedMemoryResource::new(device).unwrap() as Arc<dyn MemoryResource>,
        ManagedMemoryResource::new(device).unwrap(),
    ] {
        let mut host = memory.allocate(4096, &stream).unwrap();
        let mut dev = device
            .memory_resource()
            .unwrap()
            .allocate(4096, &stream)
            .unwrap();
        // SAFETY: no stream touches `host` while the slice lives.
        unsafe { host.as_mut_slice::<u32>() }
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = i as u32 * 3);
        dev.copy_from(&host, &stream).unwrap();
        host.fill(0u8, &stream).unwrap();
        host.copy_from(&dev, &stream).unwrap();
        stream.sync().unwrap();
        // SAFETY: the stream is synchronised; nothing else touches `host`.
        let view = unsafe { host.as_slice::<u32>() }.unwrap();
        assert!(
            view.iter().enumerate().all(|(i, &x)| x == i as u32 * 3),
            "{memory:?}"
        );
        // SAFETY: as above; the check fails before any view is made.
        let err = unsafe { host.as_slice::<[u8; 3]>() }.unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { name: "T", .. }),
            "{err}"
        );
    }
    let device_only = device
        .memory_resource()
        .unwrap()
        .allocate(64, &stream)
        .unwrap();
    // SAFETY: refused before any view is made.
    let err = unsafe { device_only.as_slice::<u8>() }.unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "self", .. }),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_requests_are_refused_before_the_driver() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let err = memory.allocate(0, &stream).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "size", .. }),
        "{err}"
    );
    let too_big = device.total_memory().unwrap() + 1;
    let err = memory.allocate(too_big, &stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "size", reason } if reason.contains("more than")),
        "{err}"
    );
    let mut a = memory.allocate(1024, &stream).unwrap();
    let mut b = memory.allocate(2048, &stream).unwrap();
    let err = a.copy_to(&mut b, &stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "dst", reason } if reason.contains("1024") && reason.contains("2048")),
        "{err}"
    );
    let err = b.copy_from(&a, &stream).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "src", .. }),
        "{err}"
    );
    let err = a.copy_from_host(&[0u8; 1000], &stream).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "src", .. }),
        "{err}"
    );
    let mut odd = memory.allocate(1023, &stream).unwrap();
    let err = odd.fill(1u16, &stream).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "value", .. }),
        "{err}"
    );
    odd.fill(1u8, &stream).unwrap();
    stream.sync().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pool_of_its_own_reports_and_limits_its_use() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = DeviceMemoryResource::new(
        device,
        DeviceMemoryResourceOptions::default()
            .with_max_size(64 * MIB)
            .with_release_threshold(16 * MIB as u64),
    )
    .unwrap();
    assert!(pool.is_owned());
    assert_eq!(pool.release_threshold().unwrap(), 16 * MIB as u64);
    let a = pool.allocate(32 * MIB, &stream).unwrap();
    stream.sync().unwrap();
    let usage = pool.usage().unwrap();
    assert!(usage.used_current >= 32 * MIB as u64, "{usage:?}");
    assert!(usage.reserved_current >= usage.used_current, "{usage:?}");
    // Past the pool's maximum: the driver's out-of-memory error, named.
    let err = pool.allocate(48 * MIB, &stream).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Driver {
                name: "CUDA_ERROR_OUT_OF_MEMORY",
                ..
            }
        ),
        "{err}"
    );
    // The same, by typed code.
    assert_eq!(err.driver_code(), Some(DriverCode::OUT_OF_MEMORY), "{err}");
    a.close(Some(&stream)).unwrap();
    stream.sync().unwrap();
    assert_eq!(pool.usage().unwrap().used_current, 0);
    assert!(pool.usage().unwrap().used_high >= 32 * MIB as u64);
    pool.reset_high_water_marks().unwrap();
    assert_eq!(pool.usage().unwrap().used_high, 0);
    pool.set_release_threshold(0).unwrap();
    assert_eq!(pool.release_threshold().unwrap(), 0);
    let err = DeviceMemoryResource::new(
        device,
        DeviceMemoryResourceOptions::default().with_max_size(0),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "options.max_size",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_outlive_their_stream_and_resource_handles() {
    let device = common::device();
    let buffer = {
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        let pool =
            DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
        let mut buffer = pool.allocate(MIB, &stream).unwrap();
        buffer.fill(9u8, &stream).unwrap();
        buffer
    };
    // The stream and pool variables are gone; the buffer keeps both alive.
    let stream = buffer.deallocation_stream().clone();
    assert!(buffer
        .to_vec::<u8>(&stream)
        .unwrap()
        .iter()
        .all(|&x| x == 9));
    let mut moved = buffer;
    let other = device.create_stream(StreamOptions::default()).unwrap();
    moved.set_deallocation_stream(&other).unwrap();
    assert_eq!(moved.deallocation_stream(), &other);
    drop(moved);
    other.sync().unwrap();
}

/// Stream and buffers of device 0 used from a thread with no current context, and from one
/// where another (green) context is current: the results are right and the thread's context
/// is as it was.
#[test]
#[ignore = "needs a CUDA GPU"]
fn objects_work_from_threads_with_any_context() {
    let _green = common::green_contexts();
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let primary = device.primary_context().unwrap();
    let sms = device.resources().sm().unwrap();
    let split = sms
        .split(SmSplitOptions::groups_of(sms.min_partition_size().unwrap_or(8)).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    for with_green in [false, true] {
        let (stream, memory, primary, green) = (
            stream.clone(),
            memory.clone(),
            primary.clone(),
            green.clone(),
        );
        std::thread::spawn(move || {
            if with_green {
                green.set_current().unwrap();
            }
            let data = common::random_u32(with_green as u64 + 10, 4096);
            let mut a = memory.allocate(4 * 4096, &stream).unwrap();
            let mut b = memory.allocate(4 * 4096, &stream).unwrap();
            a.copy_from_host(&data, &stream).unwrap();
            a.copy_to(&mut b, &stream).unwrap();
            let event = stream.record_new(Default::default()).unwrap();
            event.sync().unwrap();
            assert_eq!(b.to_vec::<u32>(&stream).unwrap(), data);
            drop((a, b));
            stream.sync().unwrap();
            assert_eq!(green.is_current().unwrap(), with_green);
            assert!(!primary.is_current().unwrap());
        })
        .join()
        .unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffer_and_pool_accessors() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
    assert!(!pool.as_raw().is_null());
    let default_pool = DeviceMemoryResource::default_pool(device).unwrap();
    assert!(!default_pool.is_owned());
    assert_ne!(default_pool.as_raw(), pool.as_raw());
    let buffer = pool.allocate(3000, &stream).unwrap();
    assert_eq!(buffer.size(), 3000);
    assert!(!buffer.ptr().is_null());
    assert_eq!(buffer.device(), Some(device));
    assert!(buffer.is_device_accessible() && !buffer.is_host_accessible());
    assert!(format!("{:?}", buffer.memory_resource()).contains("owned: true"));
    assert!(format!("{buffer:?}").contains("3000"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_raw_pool_is_wrapped_without_being_destroyed() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
    // SAFETY: the pool's own handle, of device memory on `device`; `pool` outlives the wrapper.
    let wrapped = unsafe { DeviceMemoryResource::from_raw(pool.as_raw(), device) }.unwrap();
    // The same pool (a wrapper that made or picked another would differ here), not owned.
    assert_eq!(wrapped.as_raw(), pool.as_raw());
    assert!(!wrapped.is_owned());
    let mut buffer = wrapped.allocate(4096, &stream).unwrap();
    buffer.fill(0x5a5a_5a5au32, &stream).unwrap();
    // Its memory counts in the original pool's use: it came from that pool.
    stream.sync().unwrap();
    assert!(pool.usage().unwrap().used_current >= 4096);
    assert_eq!(
        buffer.to_vec::<u32>(&stream).unwrap(),
        vec![0x5a5a_5a5a; 1024]
    );
    drop(buffer);
    drop(wrapped);
    stream.sync().unwrap();
    // Dropping the wrapper left the pool alone (a destroyed pool fails these).
    assert_eq!(pool.usage().unwrap().used_current, 0);
    let again = pool.allocate(4096, &stream).unwrap();
    again.close(Some(&stream)).unwrap();
    stream.sync().unwrap();
}

/// The stand-in's name of the stream (or event) the last logged call of `verb` made.
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

/// Asserts that work on `other` (the logged `work` line) is ordered after the allocation on
/// `home` and before anything logged on `home` afterwards: `home` records an event that
/// `other` waits for before the work, `other` records one after it that `home` waits for.
fn assert_ordered_across(log: &[&str], work: &[&str], home: &str, other: &str) -> usize {
    let before = find(log, 0, &["cuEventRecord", &format!("on {home}")]);
    let event = log[before].split_whitespace().nth(1).unwrap();
    let waited = find(
        log,
        before,
        &["cuStreamWaitEvent", &format!("{other} waits for {event}")],
    );
    let at = find(log, waited, work);
    let after = find(log, at, &["cuEventRecord", &format!("on {other}")]);
    let event = log[after].split_whitespace().nth(1).unwrap();
    find(
        log,
        after,
        &["cuStreamWaitEvent", &format!("{home} waits for {event}")],
    )
}

#[test]
fn work_on_another_stream_is_ordered_after_the_allocation_and_before_the_free() {
    standin::run(
        module_path!(),
        "work_on_another_stream_is_ordered_after_the_allocation_and_before_the_free",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s1 = device.create_stream(StreamOptions::default()).unwrap();
            let home = made("cuStreamCreate");
            let s2 = device.create_stream(StreamOptions::default()).unwrap();
            let other = made("cuStreamCreate");
            let memory = device.memory_resource().unwrap();
            // Larger than the small buffers a stream keeps, so that every free is a free.
            const BYTES: usize = 128 << 10;
            let mut a = memory.allocate(BYTES, &s1).unwrap();
            let mut b = memory.allocate(BYTES, &s1).unwrap();

            // A fill on s2, then the drop: s2 waits for s1 first, s1 for s2 before the free.
            standin::clear_log();
            a.fill(1u8, &s2).unwrap();
            drop(a);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let ordered = assert_ordered_across(
                &log,
                &["cuMemsetD8Async", &format!("on {other}")],
                &home,
                &other,
            );
            find(&log, ordered, &["cuMemFreeAsync", &format!("on {home}")]);

            // Copies and host copies the same way, each buffer of both ordered.
            let mut c = memory.allocate(BYTES, &s2).unwrap();
            standin::clear_log();
            c.copy_from(&b, &s2).unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            assert_ordered_across(
                &log,
                &["cuMemcpyAsync", &format!("on {other}")],
                &home,
                &other,
            );
            standin::clear_log();
            b.copy_from_host(&vec![7u8; BYTES], &s2).unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            assert_ordered_across(
                &log,
                &["cuMemcpyHtoDAsync", &format!("on {other}")],
                &home,
                &other,
            );

            // On its own stream, a buffer's work is its one call alone (beside making the
            // context current, which this thread has not).
            standin::clear_log();
            b.fill(2u8, &s1).unwrap();
            let text = standin::log();
            let work: Vec<&str> = text.lines().filter(|l| !l.starts_with("cuCtx")).collect();
            assert_eq!(work.len(), 1, "{text}");

            // A new deallocation stream waits for the old one; so does a close on another.
            standin::clear_log();
            b.set_deallocation_stream(&s2).unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let recorded = find(&log, 0, &["cuEventRecord", &format!("on {home}")]);
            find(
                &log,
                recorded,
                &["cuStreamWaitEvent", &format!("{other} waits for")],
            );
            drop(b);
            assert_eq!(
                standin::calls("cuMemFreeAsync")
                    .pop()
                    .map(|l| l.ends_with(&other)),
                Some(true)
            );
            standin::clear_log();
            c.close(Some(&s1)).unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let recorded = find(&log, 0, &["cuEventRecord", &format!("on {other}")]);
            let waited = find(
                &log,
                recorded,
                &["cuStreamWaitEvent", &format!("{home} waits for")],
            );
            find(&log, waited, &["cuMemFreeAsync", &format!("on {home}")]);
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_buffer_freed_after_work_on_another_stream_is_not_handed_out_under_it() {
    // The issue's case: a fill queued on s2 behind a 20 ms kernel, the buffer dropped (its free
    // queued on s1), a new buffer of the same size allocated and filled on s1. Were the free
    // not ordered after s2's fill, the pool would hand the new buffer the same memory at once,
    // and s2's late fill of 1s would land on it after s1's 2s.
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(
        r#"extern "C" __global__ void spin(long long cycles) {
            long long start = clock64();
            while (clock64() - start < cycles) { }
        }"#,
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let spin = code.get_kernel("spin").unwrap();
    let clock_khz = u64::from(device.properties().clock_rate().unwrap());
    let cycles = (clock_khz * 20) as i64; // 20 ms
    let s1 = device.create_stream(StreamOptions::default()).unwrap();
    let s2 = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let n = 64 * MIB;
    for round in 0..10 {
        let mut a = memory.allocate(n, &s1).unwrap();
        // SAFETY: the kernel touches no memory.
        unsafe {
            launch(
                &s2,
                &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
                &spin,
                &[&cycles],
            )
        }
        .unwrap();
        a.fill(1u8, &s2).unwrap();
        drop(a);
        let mut b = memory.allocate(n, &s1).unwrap();
        b.fill(2u8, &s1).unwrap();
        s2.sync().unwrap();
        s1.sync().unwrap();
        let values = b.to_vec::<u8>(&s1).unwrap();
        let ones = values.iter().filter(|&&v| v == 1).count();
        assert_eq!(
            ones, 0,
            "round {round}: {ones} bytes of the old buffer's fill"
        );
        assert!(values.iter().all(|&v| v == 2), "round {round}");
    }
}

/// Small default-pool buffers: allocated in their class's size, kept by the stream they were
/// freed on, reused there without a driver call, never by another stream, not by pools of
/// their own, and freed when the stream drops.
#[test]
fn a_stream_keeps_its_small_buffers_for_its_next_allocations() {
    standin::run(
        module_path!(),
        "a_stream_keeps_its_small_buffers_for_its_next_allocations",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s1 = device.create_stream(StreamOptions::default()).unwrap();
            let s2 = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            standin::clear_log();
            let first = memory.allocate(1000, &s1).unwrap();
            let allocs = standin::calls("cuMemAllocFromPoolAsync");
            assert_eq!(allocs.len(), 1);
            assert!(allocs[0].contains("size=1024"), "{allocs:?}");
            assert_eq!(first.size(), 1000, "the buffer is the size asked for");
            let ptr = first.ptr();
            drop(first);
            assert!(
                standin::calls("cuMemFreeAsync").is_empty(),
                "{}",
                standin::log()
            );
            // The same class on the same stream: the same memory, no driver call.
            standin::clear_log();
            let again = memory.allocate(1024, &s1).unwrap();
            assert_eq!(again.ptr(), ptr);
            assert_eq!(standin::log(), "");
            drop(again);
            // Another stream does not get it; another class does not either.
            let other = memory.allocate(1024, &s2).unwrap();
            assert_ne!(other.ptr(), ptr);
            let bigger = memory.allocate(2048, &s1).unwrap();
            assert_ne!(bigger.ptr(), ptr);
            // One per class: a second freed buffer of a class is freed.
            let a = memory.allocate(1024, &s1).unwrap();
            let b = memory.allocate(1024, &s1).unwrap();
            drop(a);
            standin::clear_log();
            drop(b);
            assert_eq!(standin::calls("cuMemFreeAsync").len(), 1);
            // Above 64 KiB: exact sizes, always freed.
            standin::clear_log();
            drop(memory.allocate((64 << 10) + 1, &s1).unwrap());
            assert!(standin::calls("cuMemAllocFromPoolAsync")[0].contains("size=65537"));
            assert_eq!(standin::calls("cuMemFreeAsync").len(), 1);
            // A wrapped pool (even the default one, wrapped) keeps nothing.
            let default = cuda_core::DeviceMemoryResource::default_pool(device).unwrap();
            // SAFETY: the device's default pool, which lives as long as the process.
            let own =
                unsafe { cuda_core::DeviceMemoryResource::from_raw(default.as_raw(), device) }
                    .unwrap();
            standin::clear_log();
            drop(own.allocate(1000, &s1).unwrap());
            assert!(standin::calls("cuMemAllocFromPoolAsync")[0].contains("size=1000"));
            assert_eq!(standin::calls("cuMemFreeAsync").len(), 1);
            // Dropping the stream frees what it kept.
            drop((other, bigger));
            standin::clear_log();
            drop(s1);
            let frees = standin::calls("cuMemFreeAsync");
            assert_eq!(frees.len(), 2, "{}", standin::log());
        },
    );
}

/// A kept small buffer comes back in stream order: the old buffer's work, held back at a
/// gate, runs before the new buffer's, which sees only its own.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kept_small_buffer_is_reused_in_stream_order() {
    // In a process of its own: it holds a stream at a gate while calling the driver, which
    // can deadlock beside other tests' module loads (they wait for every stream of the context).
    common::alone(
        module_path!(),
        "a_kept_small_buffer_is_reused_in_stream_order",
        || {
            let device = common::device();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let _watchdog =
                common::Watchdog::new(std::time::Duration::from_secs(60), "a gated stream");
            let gate = common::Gate::close(&stream);
            let mut old = memory.allocate(4096, &stream).unwrap();
            old.fill(0xAAAA_AAAAu32, &stream).unwrap();
            let ptr = old.ptr();
            drop(old);
            let mut new = memory.allocate(4000, &stream).unwrap();
            assert_eq!(new.ptr(), ptr, "the kept buffer was not reused");
            new.fill(0x5555_5555u32, &stream).unwrap();
            gate.open();
            let words = new.to_vec::<u32>(&stream).unwrap();
            assert_eq!(words.len(), 1000);
            assert!(
                words.iter().all(|&w| w == 0x5555_5555),
                "{:x?}",
                &words[..4]
            );
        },
    );
}

/// A host copy does not return while the driver may still use the host memory: a
/// synchronisation refused for another thread's global capture (`CUDA_ERROR_STREAM_CAPTURE_*`)
/// is retried until it succeeds, so the copy waits for the capture's end instead of ending the
/// borrow early; any other failure is returned at once. (A wrong implementation returns the
/// capture error while the copy may still run: the first assertion catches it.)
#[test]
fn a_host_copy_waits_out_a_synchronisation_refused_for_a_capture() {
    standin::run(
        module_path!(),
        "a_host_copy_waits_out_a_synchronisation_refused_for_a_capture",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let mut host = [0u8; 64];
            // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, lifted after 100 ms.
            standin::set_sync_status(900);
            let lifter = std::thread::spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                standin::set_sync_status(0);
            });
            let start = std::time::Instant::now();
            buffer.copy_to_host(&mut host, &stream).unwrap();
            assert!(
                start.elapsed() >= std::time::Duration::from_millis(100),
                "returned before the synchronisation succeeded"
            );
            lifter.join().unwrap();
            // Another failure (CUDA_ERROR_LAUNCH_FAILED) is returned, not retried.
            standin::set_sync_status(719);
            let failed = buffer.copy_to_host(&mut host, &stream);
            standin::set_sync_status(0);
            assert!(
                matches!(&failed, Err(e) if e.driver_code().map(|c| c.0) == Some(719)),
                "{failed:?}"
            );
        },
    );
}

/// Where the driver lets a relaxed thread synchronise during a capture, a refused wait is made
/// again once with this thread's capture mode relaxed, and the mode is restored after: the copy
/// returns at once, without waiting for the capture to end. (Catches a missing retry, which
/// would wait forever here, and a mode left relaxed, which the log shows.)
#[test]
fn a_host_copy_refused_for_a_capture_waits_with_the_thread_relaxed() {
    standin::run(
        module_path!(),
        "a_host_copy_refused_for_a_capture_waits_with_the_thread_relaxed",
        &[],
        &[("STANDIN_RELAXED_SYNCS", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let mut host = [0u8; 64];
            standin::set_sync_status(900);
            standin::clear_log();
            let _watchdog = common::Watchdog::new(
                std::time::Duration::from_secs(30),
                "a copy waiting out a capture",
            );
            buffer.copy_to_host(&mut host, &stream).unwrap();
            standin::set_sync_status(0);
            let exchanges = standin::calls("cuThreadExchangeStreamCaptureMode");
            assert_eq!(exchanges.len(), 2, "{}", standin::log());
            assert!(exchanges[0].contains(" 2 (was 0)"), "{exchanges:?}");
            assert!(exchanges[1].contains(" 0 (was 2)"), "{exchanges:?}");
        },
    );
}

/// A buffer of a synchronous resource (managed memory here; pinned and `cuMemAlloc` memory
/// free the same way), and a registered vector, dropped while another thread's global capture
/// refuses synchronisation waits with this thread relaxed and is freed (review N15). Bug
/// caught: its free began with a plain `sync`, whose refusal left the memory allocated (or
/// registered) for good (logged as a leak).
#[test]
fn a_synchronous_resources_buffer_is_freed_during_a_capture_elsewhere() {
    standin::run(
        module_path!(),
        "a_synchronous_resources_buffer_is_freed_during_a_capture_elsewhere",
        &[],
        &[("STANDIN_RELAXED_SYNCS", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let managed = cuda_core::memory::ManagedMemoryResource::new(device).unwrap();
            let buffer = managed.allocate(64, &stream).unwrap();
            let address = buffer.ptr().0;
            // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a thread not in relaxed mode.
            standin::set_sync_status(900);
            standin::clear_log();
            drop(buffer);
            standin::set_sync_status(0);
            let log = standin::log();
            let frees = standin::calls("cuMemFree ");
            assert_eq!(frees.len(), 1, "{log}");
            assert!(frees[0].contains(&format!("{address:#x}")), "{log}");
            // The wait came first, relaxed (mode 2), and the mode was restored after.
            let relaxed = log
                .find("cuThreadExchangeStreamCaptureMode")
                .expect("relaxed");
            assert!(relaxed < log.find("cuMemFree ").unwrap(), "{log}");
            // A registered vector the same way: unregistered, not kept for good.
            let registered = cuda_core::Buffer::from_host_vec(vec![0u64; 512], &stream).unwrap();
            standin::set_sync_status(900);
            standin::clear_log();
            drop(registered);
            standin::set_sync_status(0);
            let log = standin::log();
            let relaxed = log
                .find("cuThreadExchangeStreamCaptureMode")
                .expect("relaxed");
            let unregistered = log.find("cuMemHostUnregister -> 0").expect(&log);
            assert!(relaxed < unregistered, "{log}");
        },
    );
}

/// `bool` elements: one byte each on the device, as C++'s `bool`; a `bool` kernel argument by
/// value; a byte that is no `bool` refused when read back.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bools_are_one_byte_elements_and_arguments_checked_when_read_back() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let code = Program::new(
        r#"extern "C" __global__ void every_third(bool* flags, bool invert, unsigned n) {
            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) flags[i] = (i % 3 == 0) != invert;
        }
        extern "C" __global__ void poke(unsigned char* bytes) { bytes[5] = 2; }"#,
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let n = 100u32;
    let mut flags = device
        .memory_resource()
        .unwrap()
        .allocate(n as usize, &stream)
        .unwrap();
    let input: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
    flags.copy_from_bools(&input, &stream).unwrap();
    // Catches bools written as anything but one byte each.
    assert_eq!(flags.to_vec_bools(&stream).unwrap(), input);
    assert_eq!(
        flags.to_vec::<u8>(&stream).unwrap(),
        input.iter().map(|&b| u8::from(b)).collect::<Vec<_>>()
    );
    // SAFETY: the kernel writes `n` bools of a buffer of `n` bytes.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n.into(), 128),
            &code.get_kernel("every_third").unwrap(),
            &[&flags, &true, &n],
        )
    }
    .unwrap();
    let expected: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
    // Catches the `bool` argument passed as other than one byte (the kernel would read
    // `invert` wrongly, or the launch refuse its size).
    assert_eq!(flags.to_vec_bools(&stream).unwrap(), expected);
    // Part of it, through slices.
    flags
        .slice_mut(0..3)
        .unwrap()
        .copy_from_bools(&[true, true, true], &stream)
        .unwrap();
    assert_eq!(
        flags.slice(0..4).unwrap().to_vec_bools(&stream).unwrap(),
        [true, true, true, false]
    );
    // A byte that is no bool: refused naming it (reading it as a bool would be undefined).
    // SAFETY: the kernel writes byte 5 of a 100-byte buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(1, 1),
            &code.get_kernel("poke").unwrap(),
            &[&flags],
        )
    }
    .unwrap();
    let e = flags.to_vec_bools(&stream).unwrap_err();
    assert!(e.to_string().contains("byte 5 is 2"), "{e}");
}

/// What a foreign buffer's owner records when it is dropped.
struct Owner;

impl Drop for Owner {
    fn drop(&mut self) {
        standin::mark("the foreign owner drops");
    }
}

/// Foreign memory as a buffer: refused where null, empty or wrapping; used in its stream
/// order as any buffer; its owner dropped only once the buffer's stream is synchronised, and
/// kept for good where that fails.
#[test]
fn foreign_memory_is_a_buffer_whose_owner_drops_after_its_stream() {
    standin::run(
        module_path!(),
        "foreign_memory_is_a_buffer_whose_owner_drops_after_its_stream",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let theirs = device
                .memory_resource()
                .unwrap()
                .allocate(4096, &home)
                .unwrap();
            let ptr = theirs.ptr();
            for (at, size) in [(0u64, 16usize), (ptr.0, 0), (u64::MAX - 8, 16)] {
                // SAFETY: each is refused before any use.
                let e = unsafe {
                    cuda_core::Buffer::from_foreign(
                        cuda_core::DevicePtr(at),
                        size,
                        device,
                        (),
                        &home,
                    )
                }
                .unwrap_err();
                assert!(
                    matches!(e, Error::InvalidArgument { name: "ptr", .. }),
                    "{e}"
                );
            }
            // SAFETY: 4096 bytes of device 0 kept by `theirs`, the owner here; the stand-in
            // runs nothing.
            let mut ours = unsafe {
                cuda_core::Buffer::from_foreign(ptr, 4096, device, (theirs, Owner), &home)
            }
            .unwrap();
            assert_eq!(
                (ours.ptr(), ours.size(), ours.device()),
                (ptr, 4096, Some(device))
            );
            assert!(!ours.is_host_accessible());
            // It allocates nothing else.
            let e = ours.memory_resource().allocate(64, &home).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "self", .. }),
                "{e}"
            );
            // A fill on another stream is ordered with its deallocation stream, as any
            // buffer's (catches a foreign buffer outside the stream-order contract).
            standin::clear_log();
            ours.fill(1u8, &other).unwrap();
            let log = standin::log();
            assert_eq!(log.matches("cuStreamWaitEvent").count(), 2, "{log}");
            // Freed: the stream synchronised, then the owner (and with it the memory) dropped.
            standin::clear_log();
            drop(ours);
            let log = standin::log();
            let synced = log.find("cuStreamSynchronize").expect(&log);
            let dropped = log.find("the foreign owner drops").expect(&log);
            assert!(
                synced < dropped,
                "the owner dropped before the stream:\n{log}"
            );
            // Where the synchronisation fails, the owner is kept for good.
            // SAFETY: as above; the stand-in runs nothing.
            let ours =
                unsafe { cuda_core::Buffer::from_foreign(ptr, 64, device, Owner, &home) }.unwrap();
            standin::clear_log();
            standin::set_sync_status(700);
            drop(ours);
            let log = standin::log();
            assert!(!log.contains("the foreign owner drops"), "{log}");
        },
    );
}

/// A vector registered as a buffer (`Buffer::from_host_vec`). Bugs caught: an empty vector
/// registered; flags other than portable and mapped (a buffer that other contexts would not
/// see pinned, or devices not at all); a buffer at another address than the vector's, or over
/// a copy of it; registered memory not counted as host memory; the vector unregistered before
/// the buffer's stream is synchronised, or not unregistered; unregistered although the
/// synchronisation failed (work may still use it); a vector given back (`into_host_vec`)
/// before the stream's work, or unregistered twice, or of another element type, or taken from
/// a buffer that is not a registered vector's.
#[test]
fn a_vector_registered_as_a_buffer_is_unregistered_after_its_stream() {
    standin::run(
        module_path!(),
        "a_vector_registered_as_a_buffer_is_unregistered_after_its_stream",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let other = device.create_stream(StreamOptions::default()).unwrap();
            for empty in [Vec::<u32>::new(), Vec::with_capacity(16)] {
                let e = cuda_core::Buffer::from_host_vec(empty, &home).unwrap_err();
                assert!(
                    matches!(e, Error::InvalidArgument { name: "vec", .. }),
                    "{e}"
                );
            }
            standin::clear_log();
            let data: Vec<u32> = (0..1024).collect();
            let at = data.as_ptr() as u64;
            let mut buffer = cuda_core::Buffer::from_host_vec(data, &home).unwrap();
            let log = standin::log();
            assert!(
                log.contains("cuMemHostRegister size=4096 flags=3 -> 0"),
                "{log}"
            );
            assert_eq!(
                (buffer.ptr().0, buffer.size(), buffer.device()),
                (at, 4096, None)
            );
            assert!(buffer.is_host_accessible());
            // SAFETY: the stand-in runs no work on it.
            assert_eq!(unsafe { buffer.as_slice::<u32>() }.unwrap()[1000], 1000);
            let e = buffer.memory_resource().allocate(64, &home).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "self", .. }),
                "{e}"
            );
            // Used on another stream: ordered with its home as any buffer.
            standin::clear_log();
            buffer.fill(1u8, &other).unwrap();
            let log = standin::log();
            assert_eq!(log.matches("cuStreamWaitEvent").count(), 2, "{log}");
            standin::clear_log();
            drop(buffer);
            let log = standin::log();
            let synced = log.find("cuStreamSynchronize").expect(&log);
            let unregistered = log.find("cuMemHostUnregister -> 0").expect(&log);
            assert!(
                synced < unregistered,
                "unregistered before the stream:\n{log}"
            );
            // Given back: refused for another element type or a buffer of other memory (each
            // handed back); then, after the stream's work, unregistered once, the vector whole.
            let data: Vec<u32> = (0..512).map(|i| i * 3).collect();
            let registered = data.clone();
            let at = registered.as_ptr() as u64;
            let mut buffer = cuda_core::Buffer::from_host_vec(registered, &home).unwrap();
            buffer.fill(0u8, &other).unwrap();
            let (e, buffer) = buffer.into_host_vec::<u8>().unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { name: "T", .. }), "{e}");
            let pool = device.memory_resource().unwrap();
            let (e, _) = pool
                .allocate(64, &home)
                .unwrap()
                .into_host_vec::<u32>()
                .unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "self", .. }),
                "{e}"
            );
            standin::clear_log();
            let back = buffer.into_host_vec::<u32>().unwrap();
            let log = standin::log();
            assert_eq!(
                (back.as_ptr() as u64, &back),
                (at, &data),
                "not the vector itself"
            );
            let synced = log.find("cuStreamSynchronize").expect(&log);
            let unregistered = log.find("cuMemHostUnregister -> 0").expect(&log);
            assert!(
                synced < unregistered,
                "given back before the stream:\n{log}"
            );
            assert_eq!(log.matches("cuMemHostUnregister").count(), 1, "{log}");
            // Where the synchronisation fails, the memory stays registered (and the vector
            // allocated) for good.
            let buffer = cuda_core::Buffer::from_host_vec(vec![7u8; 100], &home).unwrap();
            standin::clear_log();
            standin::set_sync_status(700);
            drop(buffer);
            let log = standin::log();
            assert!(!log.contains("cuMemHostUnregister"), "{log}");
        },
    );
}

/// A host function reading host memory (`Stream::launch_host_func_reading`). Bugs caught: a
/// host function on another stream than the memory's home not ordered after the home's work
/// (no wait before) or the home's later work not ordered after it (no wait after: a free or a
/// write could overtake the read); the memory freed (unregistered) before the host function
/// ran; values read from other memory or of the wrong length; device memory, memory of a
/// shareable pool (which another process may write meanwhile), a partial `T`, a misaligned
/// `T`, or a capturing stream accepted; a private pinned pool's memory refused.
#[test]
fn a_host_function_reads_host_memory_in_its_stream_order() {
    standin::run(
        module_path!(),
        "a_host_function_reads_host_memory_in_its_stream_order",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let data: Vec<u32> = (0..256).map(|i| i * 7).collect();
            let mut host = cuda_core::Buffer::from_host_vec(data.clone(), &home).unwrap();
            // Refused before any driver call: device memory, a partial `u32`, a misaligned one.
            let mut on_device = device
                .memory_resource()
                .unwrap()
                .allocate(1024, &home)
                .unwrap();
            let e = other
                .launch_host_func_reading(&mut on_device, |_: &[u32]| {})
                .unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "memory", .. }),
                "{e}"
            );
            for range in [0..6, 1..5] {
                let e = other
                    .launch_host_func_reading(host.slice_mut(range).unwrap(), |_: &[u32]| {})
                    .unwrap_err();
                assert!(matches!(e, Error::InvalidArgument { name: "T", .. }), "{e}");
            }
            standin::clear_log();
            let (tx, rx) = std::sync::mpsc::channel();
            other
                .launch_host_func_reading(
                    host.slice_mut(16..1024).unwrap(),
                    move |values: &[u32]| {
                        standin::mark("the host function reads");
                        let _ = tx.send(values.to_vec());
                    },
                )
                .unwrap();
            let log = standin::log();
            let waits: Vec<usize> = log
                .match_indices("cuStreamWaitEvent")
                .map(|(i, _)| i)
                .collect();
            let queued = log.find("cuLaunchHostFunc").expect(&log);
            assert_eq!(waits.len(), 2, "{log}");
            assert!(waits[0] < queued && queued < waits[1], "{log}");
            // The free waits for the read: the home is synchronised, which runs the host
            // function, before the memory is unregistered.
            drop(host);
            let log = standin::log();
            let read = log.find("the host function reads").expect(&log);
            let unregistered = log.find("cuMemHostUnregister -> 0").expect(&log);
            assert!(read < unregistered, "freed before it was read:\n{log}");
            assert_eq!(
                rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
                data[4..]
            );
            // Pinned pool memory: taken from a pool of this process's own, refused from a
            // shareable one (another process may map and write it while the host reads).
            {
                use cuda_core::memory::{PinnedMemoryPool, PinnedMemoryPoolOptions};
                let private =
                    PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()).unwrap();
                let mut mine = private.allocate(64, &home).unwrap();
                other
                    .launch_host_func_reading(&mut mine, |_: &[u32]| {})
                    .unwrap();
                let shared = PinnedMemoryPool::new(
                    device,
                    PinnedMemoryPoolOptions::default()
                        .with_numa_node(0)
                        .with_shareable(true),
                )
                .unwrap();
                let mut exported = shared.allocate(64, &home).unwrap();
                let e = other
                    .launch_host_func_reading(&mut exported, |_: &[u32]| {})
                    .unwrap_err();
                assert!(
                    matches!(&e, Error::InvalidArgument { name: "memory", reason }
                        if reason.contains("another process")),
                    "{e}"
                );
                home.sync().unwrap();
                other.sync().unwrap();
            }
            // On a capturing stream: refused, as a one-shot host function is.
            let mut host = cuda_core::Buffer::from_host_vec(vec![1u8; 64], &home).unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { home.begin_capture(cuda_core::CaptureMode::ThreadLocal) }.unwrap();
            let e = home
                .launch_host_func_reading(&mut host, |_: &[u8]| {})
                .unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "self", .. }),
                "{e}"
            );
            drop(home.end_capture());
        },
    );
}

/// On the GPU: a host function reading pinned memory on one stream, while a fill of that memory
/// is queued on a third stream after it. Bugs caught: the fill not held back until the read
/// returned (the host function would see the fill's bytes); the read run before the copy
/// queued ahead of it on the memory's home (it would see zeros).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_host_function_reads_pinned_memory_before_a_later_write_of_another_stream() {
    // In a process of its own: it holds a stream at a gate, and in the shared test
    // process a held stream holds up the other tests' module loads and context-wide
    // waits until its gate opens (the stalls of the whole-suite runs).
    common::alone(
        module_path!(),
        "a_host_function_reads_pinned_memory_before_a_later_write_of_another_stream",
        a_host_function_reads_pinned_memory_before_a_later_write_of_another_stream_alone,
    );
}

fn a_host_function_reads_pinned_memory_before_a_later_write_of_another_stream_alone() {
    let device = common::device();
    let _watchdog = common::Watchdog::new(std::time::Duration::from_secs(120), "host read");
    let streams: Vec<_> = (0..3).map(|_| common::stream(device)).collect();
    let (home, reader, writer) = (&streams[0], &streams[1], &streams[2]);
    let data = common::random_u32(47, 4096);
    let mut source = device
        .memory_resource()
        .unwrap()
        .allocate(4 * 4096, home)
        .unwrap();
    source.copy_from_host(&data, home).unwrap();
    let mut host = PinnedMemoryResource::new(device)
        .unwrap()
        .allocate(4 * 4096, home)
        .unwrap();
    host.fill(0u8, home).unwrap();
    host.copy_from(&source, home).unwrap();
    let gate = common::Gate::close(reader);
    let (tx, rx) = std::sync::mpsc::channel();
    reader
        .launch_host_func_reading(&mut host, move |values: &[u32]| {
            let _ = tx.send(values.to_vec());
        })
        .unwrap();
    host.fill(0xFFu8, writer).unwrap();
    gate.open();
    let seen = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
    assert_eq!(
        seen, data,
        "the host function saw other bytes than the copy's"
    );
    assert!(host
        .to_vec::<u32>(writer)
        .unwrap()
        .iter()
        .all(|&v| v == u32::MAX));
}

/// On the GPU: a vector registered as a buffer is the source and target of copies with
/// device memory and of fills, in its stream order, and reads back what they wrote. Bugs
/// caught: a buffer that is not the vector's memory (the read back would be the vector's
/// first contents); copies that are not ordered (a read back before the fill ends).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_registered_vector_is_copied_to_and_from_the_device() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let data = common::random_u32(43, MIB);
    let host = cuda_core::Buffer::from_host_vec(data.clone(), &stream).unwrap();
    assert_eq!(host.device(), None);
    let mut on_device = device
        .memory_resource()
        .unwrap()
        .allocate(4 * MIB, &stream)
        .unwrap();
    on_device.copy_from(&host, &stream).unwrap();
    assert_eq!(on_device.to_vec::<u32>(&stream).unwrap(), data);
    // Written from the device side: the vector's memory changes.
    let mut host = host;
    on_device
        .slice_mut(0..4096)
        .unwrap()
        .fill(0xABCD_EF01u32, &stream)
        .unwrap();
    host.copy_from(&on_device, &stream).unwrap();
    host.slice_mut(4096..8192)
        .unwrap()
        .fill(0x11u8, &stream)
        .unwrap();
    let back = host.to_vec::<u32>(&stream).unwrap();
    assert!(back[..1024].iter().all(|&x| x == 0xABCD_EF01));
    assert!(back[1024..2048].iter().all(|&x| x == 0x1111_1111));
    assert_eq!(back[2048..], data[2048..]);
    // Given back: the vector itself holds what the copies and fills wrote (catches a vector
    // given back before the work queued on it ran).
    host.fill(0x22u8, &stream).unwrap();
    let given = host.into_host_vec::<u32>().unwrap();
    assert!(given.iter().all(|&x| x == 0x2222_2222));
    stream.sync().unwrap();
}

/// `DevicePtr::info` says what the driver says of an address. Bugs caught: a kind read from
/// the wrong attribute (managed memory called device memory, host memory device memory, an
/// unknown address an error or a kind); the device of host memory reported; the allocation's
/// start or size lost; the null address sent to the driver.
#[test]
fn an_address_is_described_as_the_driver_says() {
    use cuda_core::memory::MemoryKind;
    /// A case: its name, the stand-in's settings, the kind and device expected.
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        Option<MemoryKind>,
        Option<usize>,
    );
    let cases: [Case; 4] = [
        (
            "device",
            &[
                ("STANDIN_POINTER_TYPE", "2"),
                ("STANDIN_POINTER_DEVICE", "1"),
            ],
            Some(MemoryKind::Device),
            Some(1),
        ),
        (
            "host",
            &[("STANDIN_POINTER_TYPE", "1")],
            Some(MemoryKind::Host),
            None,
        ),
        (
            "unknown",
            &[
                ("STANDIN_POINTER_TYPE", "0"),
                ("STANDIN_RANGE_START_ZERO", "1"),
            ],
            None,
            None,
        ),
        (
            "managed",
            &[
                ("STANDIN_POINTER_TYPE", "2"),
                ("STANDIN_POINTER_MANAGED", "1"),
            ],
            Some(MemoryKind::Managed),
            Some(0),
        ),
    ];
    for (what, settings, kind, device) in cases {
        let mut settings = settings.to_vec();
        settings.push(("STANDIN_DEVICES", "2"));
        standin::run(
            module_path!(),
            "an_address_is_described_as_the_driver_says",
            &[],
            &settings,
            move || {
                let at = cuda_core::DevicePtr(0x1234_5000);
                let info = at.info().unwrap();
                assert_eq!(info.kind, kind, "{what}");
                assert_eq!(
                    info.device,
                    device.map(|d| Device::new(d).unwrap()),
                    "{what}"
                );
                let allocation = kind.map(|_| (at, 1usize << 20));
                assert_eq!(info.allocation, allocation, "{what}");
                let e = cuda_core::DevicePtr::NULL.info().unwrap_err();
                assert!(
                    matches!(e, Error::InvalidArgument { name: "self", .. }),
                    "{e}"
                );
            },
        );
    }
}

/// On the GPU: what the driver says of device, pinned, registered, managed and pageable
/// memory. Bugs caught: any of them called another kind, or device memory given another
/// device or an allocation that does not hold it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn addresses_of_each_kind_are_described_on_the_gpu() {
    use cuda_core::memory::MemoryKind;
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device
        .memory_resource()
        .unwrap()
        .allocate(MIB, &stream)
        .unwrap();
    let inside = cuda_core::DevicePtr(pool.ptr().0 + 4096);
    let info = inside.info().unwrap();
    assert_eq!(
        (info.kind, info.device),
        (Some(MemoryKind::Device), Some(device))
    );
    let (start, size) = info.allocation.expect("an allocation");
    assert!(
        start.0 <= inside.0 && inside.0 < start.0 + size as u64,
        "{info:?}"
    );
    let pinned = PinnedMemoryResource::new(device)
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    assert_eq!(pinned.ptr().info().unwrap().kind, Some(MemoryKind::Host));
    let registered = cuda_core::Buffer::from_host_vec(vec![0u8; MIB], &stream).unwrap();
    assert_eq!(
        registered.ptr().info().unwrap().kind,
        Some(MemoryKind::Host)
    );
    let managed = ManagedMemoryResource::new(device)
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    assert_eq!(
        managed.ptr().info().unwrap().kind,
        Some(MemoryKind::Managed)
    );
    let pageable = vec![0u8; 4096];
    let info = cuda_core::DevicePtr(pageable.as_ptr() as u64)
        .info()
        .unwrap();
    assert_eq!(info.kind, None, "{info:?}");
    stream.sync().unwrap();
}

/// On the GPU: memory of another allocator (here `cuMemAlloc`, through `SyncMemoryResource`)
/// read and written as a buffer, and a slice of it copied into pool memory.
#[test]
#[ignore = "needs a CUDA GPU"]
fn foreign_memory_reads_and_writes_as_a_buffer() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let data = common::random_u32(41, MIB / 4);
    let mut theirs = SyncMemoryResource::new(device)
        .unwrap()
        .allocate(MIB, &stream)
        .unwrap();
    theirs.copy_from_host(&data, &stream).unwrap();
    let ptr = theirs.ptr();
    // SAFETY: MIB bytes of device memory kept by `theirs`, which the buffer owns; no other
    // work uses it.
    let mut ours =
        unsafe { cuda_core::Buffer::from_foreign(ptr, MIB, device, theirs, &stream) }.unwrap();
    // Catches a buffer at another address, or one that copies nothing.
    assert_eq!(ours.to_vec::<u32>(&stream).unwrap(), data);
    let mut pool = device
        .memory_resource()
        .unwrap()
        .allocate(64, &stream)
        .unwrap();
    pool.copy_from(ours.slice(256..320).unwrap(), &stream)
        .unwrap();
    assert_eq!(pool.to_vec::<u32>(&stream).unwrap(), &data[64..80]);
    ours.fill(0x5Au8, &stream).unwrap();
    assert!(ours
        .to_vec::<u8>(&stream)
        .unwrap()
        .iter()
        .all(|&b| b == 0x5A));
    drop(ours);
    stream.sync().unwrap();
}
