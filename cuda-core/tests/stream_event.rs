//! Streams and events: options, ordering, queries, timing, and the errors of bad input.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::Gate;
use cuda_core::{
    ContextOptions, Error, Event, EventOptions, SmSplitOptions, Stream, StreamOptions,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn options_are_what_the_driver_reports() {
    let device = common::device();
    let (least, greatest) = device.stream_priority_range().unwrap();
    let plain = device.create_stream(StreamOptions::default()).unwrap();
    assert!(plain.is_non_blocking().unwrap());
    assert_eq!(plain.priority().unwrap(), 0);
    assert_eq!(plain.device(), device);
    let blocking = device
        .create_stream(StreamOptions::default().with_non_blocking(false))
        .unwrap();
    assert!(!blocking.is_non_blocking().unwrap());
    let urgent = device
        .create_stream(StreamOptions::default().with_priority(greatest))
        .unwrap();
    assert_eq!(urgent.priority().unwrap(), greatest);
    for bad in [least + 1, greatest - 1] {
        let err = device
            .create_stream(StreamOptions::default().with_priority(bad))
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "options.priority", reason } if reason.contains(&bad.to_string())),
            "{err}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn record_wait_query_and_sync_follow_the_work() {
    // In a process of its own: it holds a stream at a gate while calling the driver, which
    // can deadlock beside other tests' module loads (they wait for every stream of the context).
    common::alone(
        module_path!(),
        "record_wait_query_and_sync_follow_the_work",
        || {
            let device = common::device();
            let a = device.create_stream(StreamOptions::default()).unwrap();
            let b = device.create_stream(StreamOptions::default()).unwrap();
            let _watchdog = crate::common::Watchdog::new(
                std::time::Duration::from_secs(60),
                "a stream held at a gate",
            );
            let gate = Gate::close(&a);
            let event = device.create_event(EventOptions::default()).unwrap();
            a.record(&event).unwrap();
            b.wait(&event).unwrap();
            let c = device.create_stream(StreamOptions::default()).unwrap();
            c.wait_stream(&a).unwrap();
            // Nothing can finish while the gate holds stream a.
            assert!(!a.is_done().unwrap());
            assert!(!event.is_done().unwrap());
            assert!(!b.is_done().unwrap());
            assert!(!c.is_done().unwrap());
            gate.open();
            b.sync().unwrap();
            c.sync().unwrap();
            assert!(event.is_done().unwrap());
            event.sync().unwrap();
            a.sync().unwrap();
            assert!(a.is_done().unwrap() && b.is_done().unwrap() && c.is_done().unwrap());
            // record_new makes and records an event of the stream's context.
            let _watchdog = crate::common::Watchdog::new(
                std::time::Duration::from_secs(60),
                "a stream held at a gate",
            );
            let gate = Gate::close(&a);
            let marker = a
                .record_new(EventOptions::default().with_blocking_sync(true))
                .unwrap();
            assert!(!marker.is_done().unwrap());
            gate.open();
            marker.sync().unwrap();
            assert!(marker.is_done().unwrap());
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elapsed_time_measures_and_refuses_untimed_events() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let host = Instant::now();
    let start = stream.record_new(EventOptions::timing()).unwrap();
    stream
        .launch_host_func(|| std::thread::sleep(Duration::from_millis(20)))
        .unwrap();
    let end = stream.record_new(EventOptions::timing()).unwrap();
    end.sync().unwrap();
    let host = host.elapsed();
    let elapsed = end.elapsed_since(&start).unwrap();
    assert!(
        elapsed >= Duration::from_millis(19) && elapsed <= host + Duration::from_millis(1),
        "{elapsed:?} on the device, {host:?} on the host"
    );
    // Backwards is an error that says so, not a huge Duration.
    let err = start.elapsed_since(&end).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "start", .. }),
        "{err}"
    );
    // Timing off on either side: named before any driver call.
    let plain = stream.record_new(EventOptions::default()).unwrap();
    let err = plain.elapsed_since(&start).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "self", reason } if reason.contains("timing")),
        "{err}"
    );
    let err = end.elapsed_since(&plain).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "start", .. }),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_event_of_another_context_is_refused() {
    let _green = common::green_contexts();
    let device = common::device();
    let sms = device.resources().sm().unwrap();
    let split = sms
        .split(SmSplitOptions::groups_of(sms.min_partition_size().unwrap_or(8)).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    let foreign = green.create_event(EventOptions::default()).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let err = stream.record(&foreign).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "event", reason } if reason.contains("another context")),
        "{err}"
    );
    // Waiting on another context's event is allowed (cross-context ordering).
    let green_stream = green.create_stream(StreamOptions::default()).unwrap();
    green_stream.record(&foreign).unwrap();
    stream.wait(&foreign).unwrap();
    stream.sync().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn default_streams_work_from_a_thread_without_a_context() {
    let _no_green = common::no_green_contexts();
    let device = common::device();
    std::thread::spawn(move || {
        let legacy = device.default_stream().unwrap();
        let per_thread = Stream::per_thread_default(device).unwrap();
        for (name, stream) in [("legacy", &legacy), ("per-thread", &per_thread)] {
            let event = stream.record_new(EventOptions::default()).unwrap();
            stream.sync().unwrap();
            assert!(stream.is_done().unwrap(), "{name}");
            let done = event.is_done().unwrap();
            event.sync().unwrap();
            assert!(
                done,
                "{name}: the event was not done after its stream synchronised (it is after \
                 event.sync: {})",
                event.is_done().unwrap()
            );
        }
        // The library made the context current only around each call.
        assert!(!device.primary_context().unwrap().is_current().unwrap());
    })
    .join()
    .unwrap();
}

/// `Stream::from_raw` of a stream of a context that is not the primary one (another
/// library's). Bugs caught: such a stream refused, or wrapped with the primary context (its
/// work would be ordered and checked as the primary's, and the context made current for it
/// the wrong one); a stream of another device's context accepted, or refused without naming
/// the devices.
#[test]
fn a_foreign_stream_of_another_context_is_wrapped_with_that_context() {
    crate::common::standin::run(
        module_path!(),
        "a_foreign_stream_of_another_context_is_wrapped_with_that_context",
        &[],
        &[("STANDIN_DEVICES", "2")],
        || {
            use cuda_core::{Context, Device};
            let device = Device::new(0).unwrap();
            let raw = crate::common::standin::foreign_context(0);
            // SAFETY: the stand-in's context, which lives for the process.
            let theirs = unsafe { Context::from_raw(raw) }.unwrap();
            let owner = theirs.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: `owner` outlives `wrapped`, and its context the process.
            let wrapped = unsafe { Stream::from_raw(owner.as_raw(), device) }.unwrap();
            assert_eq!(wrapped.context().as_raw(), raw);
            assert_ne!(raw, device.primary_context().unwrap().as_raw());
            assert_eq!(wrapped.device(), device);
            assert_eq!(wrapped, owner);
            wrapped.sync().unwrap();
            // Named with another device: refused, naming both.
            let other = Device::new(1).unwrap();
            // SAFETY: as above; refused before any use.
            let err = unsafe { Stream::from_raw(owner.as_raw(), other) }.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "handle", reason }
                    if reason.contains("device 0") && reason.contains("device 1")),
                "{err}"
            );
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_foreign_stream_is_used_but_not_destroyed() {
    // In a process of its own: it holds a stream at a gate while calling the driver, which
    // can deadlock beside other tests' module loads (they wait for every stream of the context).
    common::alone(
        module_path!(),
        "a_foreign_stream_is_used_but_not_destroyed",
        || {
            let device = common::device();
            let owner = device.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: `owner` outlives `wrapped`.
            let wrapped = unsafe { Stream::from_raw(owner.as_raw(), device) }.unwrap();
            let _watchdog = crate::common::Watchdog::new(
                std::time::Duration::from_secs(60),
                "a stream held at a gate",
            );
            let gate = Gate::close(&owner);
            assert!(!wrapped.is_done().unwrap());
            gate.open();
            wrapped.sync().unwrap();
            drop(wrapped);
            // Still alive: the wrapper did not destroy it.
            owner.record_new(EventOptions::default()).unwrap();
            owner.sync().unwrap();
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn accessors_report_what_was_made() {
    let device = common::device();
    let context = device.primary_context().unwrap();
    assert!(!context.as_raw().is_null());
    assert_eq!(context.device(), device);
    let options = EventOptions::default()
        .with_timing(true)
        .with_blocking_sync(true);
    let event = context.create_event(options).unwrap();
    assert_eq!(event.options(), options);
    assert_eq!(event.context(), &context);
    assert_eq!(event.device(), device);
    assert!(!event.as_raw().is_null());
    let stream = context.create_stream(StreamOptions::default()).unwrap();
    assert_eq!(stream.context(), &context);
    assert!(!stream.as_raw().is_null());
    assert!(format!("{stream:?} {event:?} {context:?}").contains("device"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_raw_event_is_wrapped_without_being_destroyed() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let start = stream.record_new(EventOptions::timing()).unwrap();
    let event = device.create_event(EventOptions::timing()).unwrap();
    // SAFETY: the event's own handle, of its context, made with these options; `event`
    // outlives the wrapper.
    let wrapped = unsafe { Event::from_raw(event.as_raw(), event.context(), event.options()) };
    assert_eq!(wrapped.as_raw(), event.as_raw());
    assert_eq!(wrapped.device(), device);
    // Usable as the event itself: recorded through the wrapper, timed through the original.
    stream.record(&wrapped).unwrap();
    wrapped.sync().unwrap();
    assert!(event.is_done().unwrap());
    assert!(event.elapsed_since(&start).is_ok());
    drop(wrapped);
    // Dropping the wrapper left the event alone (a destroyed event fails to record).
    stream.record(&event).unwrap();
    event.sync().unwrap();
}

#[test]
fn work_queued_before_a_failed_pop_is_reported_queued() {
    crate::common::standin::run(
        module_path!(),
        "work_queued_before_a_failed_pop_is_reported_queued",
        &[],
        &[("STANDIN_POP_STATUS", "201")],
        || {
            use std::sync::atomic::{AtomicUsize, Ordering};
            use std::sync::Arc;
            let device = cuda_core::Device::new(0).unwrap();
            // The legacy default stream: every call on it pushes and pops the context, and here
            // every pop fails after the call succeeded.
            let stream = device.default_stream().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let counter = Arc::clone(&ran);
            // The driver took the host function: that is success (reported as an error, the
            // closure would be freed while the driver still holds it).
            stream
                .launch_host_func(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            assert_eq!(
                ran.load(Ordering::SeqCst),
                0,
                "ran before its stream reached it"
            );
            // The stand-in runs host functions at a synchronisation: once, on the live closure.
            stream.sync().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 1);
            assert_eq!(crate::common::standin::calls("host function runs").len(), 1);
        },
    );
}

#[test]
fn a_per_thread_default_stream_is_its_threads_only() {
    crate::common::standin::run(
        module_path!(),
        "a_per_thread_default_stream_is_its_threads_only",
        &[],
        &[],
        || {
            let device = cuda_core::Device::new(0).unwrap();
            let mine = Stream::per_thread_default(device).unwrap();
            mine.sync().unwrap();
            let theirs = std::thread::spawn(move || {
                // On another thread, the same value would act on that thread's own stream.
                let err = mine.sync().unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidArgument { name: "stream", reason } if reason.contains("another thread")),
                    "{err}"
                );
                let event = device.create_event(EventOptions::default()).unwrap();
                assert!(mine.record(&event).is_err());
                Stream::per_thread_default(device).unwrap()
            })
            .join()
            .unwrap();
            // Two threads' per-thread streams are two streams.
            assert_ne!(theirs, Stream::per_thread_default(device).unwrap());
            assert_eq!(
                Stream::per_thread_default(device).unwrap(),
                Stream::per_thread_default(device).unwrap()
            );
            assert!(theirs.sync().is_err());
        },
    );
}

#[test]
fn a_non_finite_elapsed_time_is_an_error_not_a_panic() {
    for answer in ["nan", "inf"] {
        crate::common::standin::run(
            module_path!(),
            "a_non_finite_elapsed_time_is_an_error_not_a_panic",
            &[],
            &[("STANDIN_ELAPSED", answer)],
            || {
                let device = cuda_core::Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let start = stream.record_new(EventOptions::timing()).unwrap();
                let end = stream.record_new(EventOptions::timing()).unwrap();
                let err = end.elapsed_since(&start).unwrap_err();
                assert!(
                    matches!(err, Error::InvalidArgument { name: "self", .. }),
                    "{err}"
                );
            },
        );
    }
}

#[test]
fn a_hung_test_ends_the_run_with_a_message() {
    // In a child: a watchdog of a tenth of a second over a wait of a minute.
    let test = crate::common::test_name(module_path!(), "a_hung_test_ends_the_run_with_a_message");
    if crate::common::child_role(&test).is_some() {
        let _watchdog =
            crate::common::Watchdog::new(Duration::from_millis(100), "the planted hang");
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let started = Instant::now();
    let output = crate::common::child_command(&test, "hang")
        .output()
        .expect("the child runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the hang passed");
    assert!(
        stderr.contains("watchdog: the planted hang did not finish"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the watchdog waited the hang out"
    );
}

/// This thread's CPU time so far.
#[cfg(target_os = "linux")]
fn thread_cpu_time() -> Duration {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanoseconds: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: a valid clock and a valid out-pointer.
    let status = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(status, 0);
    Duration::new(time.seconds as u64, time.nanoseconds as u32)
}

/// The event flags reach the driver. Timing: events made without it, wrapped again as if they
/// had it, are refused by `cuEventElapsedTime` itself (and events made with it are timed).
/// Blocking sync: waiting for a kernel that runs 300 ms on such an event costs this thread
/// little CPU time, where a default event's wait spins for most of it.
#[test]
#[ignore = "needs a CUDA GPU"]
#[cfg(target_os = "linux")]
fn event_flags_reach_the_driver() {
    use cuda_core::{launch, CodeType, DriverCode, LaunchConfig, Program, ProgramOptions};
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let context = device.primary_context().unwrap();
    let times = |options: EventOptions| {
        let start = stream.record_new(options).unwrap();
        let end = stream.record_new(options).unwrap();
        end.sync().unwrap();
        // SAFETY: the handles are valid events of `context`, alive while the wrappers are
        // used. The options claim timing whatever the events were made with: the lie is
        // the test, and its only effect is the driver's answer below.
        let (start, end) = unsafe {
            (
                Event::from_raw(start.as_raw(), &context, EventOptions::timing()),
                Event::from_raw(end.as_raw(), &context, EventOptions::timing()),
            )
        };
        end.elapsed_since(&start)
    };
    assert!(times(EventOptions::timing()).is_ok(), "the control");
    let err = times(EventOptions::default()).unwrap_err();
    assert_eq!(
        err.driver_code(),
        Some(DriverCode::INVALID_HANDLE),
        "the driver timed an event made without timing: {err}"
    );
    // Blocking sync, against a spinning wait.
    device.set_current().unwrap();
    let code = Program::new(
        // Spins on the SM's cycle counter, not %globaltimer: twice in the ABI 12 runs of one
        // day a %globaltimer spin of 300 ms ended after 11-13 us (the stream done too).
        r#"extern "C" __global__ void spin(unsigned long long cycles) {
            long long t0 = clock64();
            while ((unsigned long long)(clock64() - t0) < cycles) {}
        }"#,
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let spin = code.get_kernel("spin").unwrap();
    // The sync must really wait for the kernel for the measure to mean anything. In full
    // parallel runs it sometimes did not (11 us, 6 us, 104 ms: the thread was held up between
    // the launch and the sync, by another test's driver call, until the kernel had ended): such
    // a try is said and made again, three times at most.
    let wait = |options: EventOptions| {
        for attempt in 1..=3 {
            // At least 300 ms at the H200's 1.98 GHz boost clock (longer at lower clocks).
            let cycles = 600_000_000u64;
            // SAFETY: the kernel reads only its argument.
            unsafe {
                launch(
                    &stream,
                    &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
                    &spin,
                    &[&cycles],
                )
            }
            .unwrap();
            let event = stream.record_new(options).unwrap();
            let (cpu, wall) = (thread_cpu_time(), Instant::now());
            event.sync().unwrap();
            let (cpu, wall) = (thread_cpu_time() - cpu, wall.elapsed());
            if wall >= Duration::from_millis(200) {
                return (cpu, wall);
            }
            println!(
                "try {attempt}: the sync waited only {wall:?} (the stream then done: {:?}); again",
                stream.is_done()
            );
        }
        panic!("in three tries the sync never waited 200 ms for a 300 ms kernel");
    };
    let (spun, spun_wall) = wait(EventOptions::default());
    let (blocked, blocked_wall) = wait(EventOptions::default().with_blocking_sync(true));
    println!(
        "event sync: default {spun:?} CPU in {spun_wall:?}, blocking {blocked:?} CPU in \
         {blocked_wall:?}"
    );
    // The control: the default wait spins (the primary context schedules automatically, and
    // this machine has more cores than active contexts).
    assert!(
        spun * 2 > spun_wall,
        "the default wait did not spin: {spun:?} of {spun_wall:?}"
    );
    assert!(
        blocked * 10 < blocked_wall,
        "the blocking-sync wait used {blocked:?} of CPU in {blocked_wall:?}"
    );
}

/// A buffer whose deallocation stream is a per-thread default stream, dropped on another
/// thread, is freed there after its context is waited for (review N12). Bug caught: the free
/// on the other thread's stream was refused (that handle names the dropping thread's own
/// stream) and the memory was never released.
#[test]
fn a_buffer_of_a_per_thread_stream_dropped_on_another_thread_is_freed() {
    crate::common::standin::run(
        module_path!(),
        "a_buffer_of_a_per_thread_stream_dropped_on_another_thread_is_freed",
        &[],
        &[],
        || {
            use cuda_core::Allocate;
            let device = cuda_core::Device::new(0).unwrap();
            let mine = Stream::per_thread_default(device).unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(256, &mine)
                .unwrap();
            let address = buffer.ptr().0;
            crate::common::standin::clear_log();
            std::thread::spawn(move || drop(buffer)).join().unwrap();
            let log = crate::common::standin::log();
            let frees = crate::common::standin::calls("cuMemFreeAsync");
            assert_eq!(frees.len(), 1, "{log}");
            assert!(frees[0].contains(&format!("{address:#x}")), "{log}");
            // Bug caught: a free on the dropping thread's stream without waiting for the
            // allocating thread's: its queued work could still use the memory.
            let sync = log
                .find("cuCtxSynchronize")
                .expect("the context is waited for");
            assert!(sync < log.find("cuMemFreeAsync").unwrap(), "{log}");
            // On its own thread, a drop frees in stream order, with no wait.
            let again = device
                .memory_resource()
                .unwrap()
                .allocate(256, &mine)
                .unwrap();
            crate::common::standin::clear_log();
            drop(again);
            assert!(crate::common::standin::calls("cuCtxSynchronize").is_empty());
            assert_eq!(crate::common::standin::calls("cuMemFreeAsync").len(), 1);
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn timed_waits_end_at_their_deadline_or_when_the_work_does() {
    // In a process of its own: it holds a stream at a gate, and in the shared test
    // process a held stream holds up the other tests' module loads and context-wide
    // waits until its gate opens (the stalls of the whole-suite runs).
    common::alone(
        module_path!(),
        "timed_waits_end_at_their_deadline_or_when_the_work_does",
        timed_waits_end_at_their_deadline_or_when_the_work_does_alone,
    );
}

fn timed_waits_end_at_their_deadline_or_when_the_work_does_alone() {
    let device = common::device();
    let stream = common::stream(device);
    let idle = device.create_event(EventOptions::default()).unwrap();
    // Nothing queued: done at the first question, even with no time at all (catches a
    // deadline checked before asking).
    stream.sync_timeout(Duration::ZERO).unwrap();
    idle.wait_timeout(Duration::ZERO).unwrap();

    // A stream held at a host function, and an event recorded behind it.
    let gate = Gate::close_for(&stream, Duration::from_secs(60));
    let event = stream.record_new(EventOptions::default()).unwrap();
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "timed waits");
    let start = Instant::now();
    let error = stream.sync_timeout(Duration::from_millis(50)).unwrap_err();
    let took = start.elapsed();
    // Catches a wait that returns before its time, one that ignores it (blocks until the
    // gate opens itself, a minute on), and a timeout reported as some other error.
    assert_eq!(
        error,
        Error::Timeout {
            what: "the stream's work",
            after: Duration::from_millis(50)
        }
    );
    assert!(
        took >= Duration::from_millis(50),
        "timed out after {took:?}"
    );
    assert!(took < Duration::from_secs(5), "timed out after {took:?}");
    let start = Instant::now();
    let error = event.wait_timeout(Duration::from_millis(20)).unwrap_err();
    assert!(matches!(error, Error::Timeout { .. }), "{error}");
    assert!(start.elapsed() >= Duration::from_millis(20));
    // The work is still queued, not cancelled: the stream is not done.
    assert!(!stream.is_done().unwrap());

    // Opened: the waits end when the work does, long before their deadline (catches a wait
    // that sleeps to its deadline, and one that stopped asking).
    gate.open();
    let start = Instant::now();
    stream.sync_timeout(Duration::from_secs(30)).unwrap();
    event.wait_timeout(Duration::from_secs(30)).unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "the waits took {took:?}");
    assert!(stream.is_done().unwrap() && event.is_done().unwrap());

    // A capturing stream: the wait fails at once as `sync` does, and the capture is
    // invalidated (catches a refusal read as "not yet", which would wait to the deadline).
    // SAFETY: nothing is queued during the capture.
    unsafe { stream.begin_capture(cuda_core::CaptureMode::ThreadLocal) }.unwrap();
    let start = Instant::now();
    let error = stream.sync_timeout(Duration::from_secs(10)).unwrap_err();
    assert!(!matches!(error, Error::Timeout { .. }), "{error}");
    assert!(start.elapsed() < Duration::from_secs(2));
    assert!(
        stream.end_capture().is_err(),
        "the capture survived a query"
    );
}

#[test]
fn timed_waits_answer_what_the_driver_says_within_their_time() {
    // STANDIN_QUERY_STATUS is what every cuStreamQuery and cuEventQuery answers.
    for status in ["600", "700"] {
        common::standin::run(
            module_path!(),
            "timed_waits_answer_what_the_driver_says_within_their_time",
            &[],
            &[("STANDIN_QUERY_STATUS", status)],
            || {
                let device = cuda_core::Device::new(0).unwrap();
                let stream = common::stream(device);
                let event = stream.record_new(EventOptions::default()).unwrap();
                let not_ready = std::env::var("STANDIN_QUERY_STATUS").unwrap() == "600";
                let start = Instant::now();
                let waits = [
                    stream.sync_timeout(Duration::from_millis(30)),
                    event.wait_timeout(Duration::from_millis(30)),
                ];
                let took = start.elapsed();
                for wait in waits {
                    let error = wait.unwrap_err();
                    if not_ready {
                        // Not ready is "not yet", asked until the time is up: catches it
                        // returned as a driver error, and a wait that gives up early.
                        assert!(matches!(error, Error::Timeout { .. }), "{error}");
                    } else {
                        // A failure is the answer at once: catches one read as "not yet"
                        // (the wait would run to its deadline and say timeout).
                        assert_eq!(error.driver_code().map(|c| c.0), Some(700), "{error}");
                    }
                }
                if not_ready {
                    assert!(took >= Duration::from_millis(60), "{took:?}");
                } else {
                    assert!(took < Duration::from_millis(30), "{took:?}");
                }
            },
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_repeatable_host_function_in_a_capture_is_a_host_node_run_on_each_launch() {
    use cuda_core::{Allocate, BuildGraph, CaptureMode, GraphOptions, NodeKind};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops: the closure's captures are freed once nothing can run it.
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    let device = common::device();
    let stream = common::stream(device);
    let runs = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4, &stream)
        .unwrap();
    buffer.fill(0u32, &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: the buffer the capture fills outlives every launch of its graph (synchronised
    // below before it drops).
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    buffer.fill(1u32, &stream).unwrap();
    let (count, guard) = (runs.clone(), Dropped(drops.clone()));
    stream
        .launch_host_func_repeatable(move || {
            let _kept = &guard;
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let mut graph = stream.end_capture().unwrap();
    // Recorded, not run: catches a host function run at the capture.
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A host node after the fill (catches one queued beside the capture, or lost).
    let nodes = graph.nodes().unwrap();
    let kinds: Vec<NodeKind> = nodes.iter().map(|&n| graph.node_kind(n).unwrap()).collect();
    assert_eq!(kinds, [NodeKind::Memset, NodeKind::Host], "{kinds:?}");
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    // The executable graph keeps the closure: catches a closure freed with the capture.
    drop(graph);
    for _ in 0..3 {
        exec.launch(&stream).unwrap();
    }
    stream.sync().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // Freed once nothing can run it any more (on the crate's release thread).
    drop(exec);
    let start = Instant::now();
    while drops.load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "never freed");
        cuda_core::wait_for_graph_releases(cuda_core::graph_releases(), Duration::from_millis(50));
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Outside a capture it runs once, as `launch_host_func` does.
    let count = runs.clone();
    stream
        .launch_host_func_repeatable(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    stream.sync().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    assert_eq!(buffer.to_vec::<u32>(&stream).unwrap(), [1]);
}

/// The variable that makes `Device::default_stream` the per-thread default stream.
const PER_THREAD_VARIABLE: &str = "CUDA_CORE_PER_THREAD_DEFAULT_STREAM";

/// Runs `body` in a child process against the stand-in, with `CUDA_CORE_PER_THREAD_DEFAULT_STREAM`
/// set to `value` or, for `None`, removed (whatever this process has).
fn with_per_thread_variable(function: &str, value: Option<&str>, body: impl FnOnce()) {
    let test = common::test_name(module_path!(), function);
    let role = format!("{PER_THREAD_VARIABLE}={value:?}");
    let marker = format!("per-thread variable: {test} done");
    if let Some(running) = common::child_role(&test) {
        if running == role {
            body();
            println!("{marker}");
        }
        return;
    }
    let Some(mut child) = common::standin::child(&test, &role, &[]) else {
        return;
    };
    match value {
        Some(value) => child.env(PER_THREAD_VARIABLE, value),
        None => child.env_remove(PER_THREAD_VARIABLE),
    };
    common::wait_child(child.spawn().expect("a child starts"), &test, &marker);
}

/// What the default stream records an event on, as the stand-in logs it (`legacy`,
/// `per-thread`), with the stream's raw handle.
fn default_stream_name(device: cuda_core::Device) -> (String, usize) {
    let stream = device.default_stream().unwrap();
    let event = device.create_event(EventOptions::default()).unwrap();
    stream.record(&event).unwrap();
    let recorded = common::standin::last_call("cuEventRecord");
    let name = recorded.rsplit(' ').next().unwrap().to_owned();
    (name, stream.as_raw() as usize)
}

/// `Device::default_stream` is the legacy default stream unless
/// `CUDA_CORE_PER_THREAD_DEFAULT_STREAM` is 1, read once for the process; any other value is
/// `Error::Config` from each call and changes nothing else.
#[test]
fn the_default_stream_follows_the_per_thread_variable() {
    const NAME: &str = "the_default_stream_follows_the_per_thread_variable";
    for value in [None, Some("0"), Some("")] {
        with_per_thread_variable(NAME, value, || {
            let device = cuda_core::Device::new(0).unwrap();
            // Bug caught: the per-thread stream given without the variable asking for it (or
            // for 0, or an empty value).
            assert_eq!(
                default_stream_name(device),
                ("legacy".to_owned(), 1),
                "{value:?}"
            );
        });
    }
    for value in ["1", " 1\n"] {
        with_per_thread_variable(NAME, Some(value), || {
            let device = cuda_core::Device::new(0).unwrap();
            // Bug caught: the variable not read, and the legacy stream given whatever it says.
            assert_eq!(
                default_stream_name(device),
                ("per-thread".to_owned(), 2),
                "{value:?}"
            );
            // It is read once. Bug caught: read at each call (a program that changes its
            // environment later would see its default stream change under it).
            // SAFETY: the child runs this test alone, on one thread.
            unsafe { std::env::set_var(PER_THREAD_VARIABLE, "0") };
            assert_eq!(default_stream_name(device).0, "per-thread");
            // It is this thread's stream: from another it is refused, and that thread's own
            // default stream is its per-thread one. Bug caught: the value given as a stream
            // any thread may use (it would act on each caller's own per-thread stream).
            let mine = device.default_stream().unwrap();
            let theirs = std::thread::spawn(move || {
                let refused = mine.sync().unwrap_err();
                assert!(
                    matches!(&refused, Error::InvalidArgument { name: "stream", .. }),
                    "{refused}"
                );
                default_stream_name(device).0
            })
            .join()
            .unwrap();
            assert_eq!(theirs, "per-thread");
        });
    }
    for value in ["yes", "2"] {
        with_per_thread_variable(NAME, Some(value), || {
            let device = cuda_core::Device::new(0).unwrap();
            // Bug caught: a value the crate cannot read taken as either stream, silently.
            for _ in 0..2 {
                match device.default_stream() {
                    Err(Error::Config {
                        variable,
                        value: read,
                        ..
                    }) => {
                        assert_eq!(variable, PER_THREAD_VARIABLE);
                        assert_eq!(read, value);
                    }
                    other => panic!("expected Error::Config for {value:?}, got {other:?}"),
                }
            }
            // Nothing else depends on it.
            let own = device.create_stream(StreamOptions::default()).unwrap();
            own.sync().unwrap();
            Stream::per_thread_default(device).unwrap().sync().unwrap();
        });
    }
}

/// With `CUDA_CORE_PER_THREAD_DEFAULT_STREAM=1`, work on the default stream (the per-thread
/// one) completes on the GPU, in a process of its own (the variable is read once for the
/// process).
#[test]
#[ignore = "needs a CUDA GPU"]
fn work_on_the_per_thread_default_stream_completes_on_the_gpu() {
    const NAME: &str = "work_on_the_per_thread_default_stream_completes_on_the_gpu";
    let test = common::test_name(module_path!(), NAME);
    let marker = format!("per-thread on the GPU: {test} done");
    if common::child_role(&test).is_none() {
        let mut child = common::child_command(&test, "per-thread");
        child.env(PER_THREAD_VARIABLE, "1");
        common::wait_child(child.spawn().expect("a child starts"), &test, &marker);
        return;
    }
    use cuda_core::Allocate;
    let _no_green = common::no_green_contexts();
    let device = common::device();
    let stream = device.default_stream().unwrap();
    // Bug caught: the variable not followed on a real driver (CU_STREAM_PER_THREAD is 0x2).
    assert_eq!(stream.as_raw() as usize, 2);
    let n = 1 << 20;
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4 * n, &stream)
        .unwrap();
    buffer.fill(7u32, &stream).unwrap();
    let event = stream.record_new(EventOptions::default()).unwrap();
    // Bugs caught: work queued on a handle the driver does not take as this thread's stream,
    // or a synchronisation that returns before it.
    let values = buffer.to_vec::<u32>(&stream).unwrap();
    assert!(values.iter().all(|&v| v == 7));
    stream.sync().unwrap();
    event.sync().unwrap();
    assert!(event.is_done().unwrap());
    assert!(stream.is_done().unwrap());
    // Another thread's default stream is its own per-thread stream, and works there.
    std::thread::spawn(move || {
        let theirs = device.default_stream().unwrap();
        let event = theirs.record_new(EventOptions::default()).unwrap();
        theirs.sync().unwrap();
        event.sync().unwrap();
    })
    .join()
    .unwrap();
    drop(buffer);
    stream.sync().unwrap();
    println!("{marker}");
}

/// `Stream::legacy` gives the legacy default stream whatever
/// `CUDA_CORE_PER_THREAD_DEFAULT_STREAM` says (bug caught: it following the variable, as
/// `Device::default_stream` does).
#[test]
fn the_legacy_stream_ignores_the_per_thread_variable() {
    common::standin::run(
        module_path!(),
        "the_legacy_stream_ignores_the_per_thread_variable",
        &[],
        &[("CUDA_CORE_PER_THREAD_DEFAULT_STREAM", "1")],
        || {
            let device = cuda_core::Device::new(0).unwrap();
            let legacy = cuda_core::Stream::legacy(device).unwrap();
            assert_eq!(legacy.as_raw() as usize, 1);
            assert_eq!(device.default_stream().unwrap().as_raw() as usize, 2);
        },
    );
}
