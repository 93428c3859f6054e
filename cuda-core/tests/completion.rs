//! Completion as a `Future`: streams woken by their own host function, events by the crate's
//! timer, on a minimal executor of the test's own (no runtime).

use crate::common;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use cuda_core::{Allocate, CaptureMode, EventOptions};

/// A waker that counts its wakes and unparks the thread that polls.
struct Unpark {
    thread: std::thread::Thread,
    wakes: AtomicUsize,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Polls `future` once with a counting waker: its answer and the waker.
fn poll_once<F: Future + Unpin>(future: &mut F) -> (Poll<F::Output>, Arc<Unpark>) {
    let unpark = Arc::new(Unpark {
        thread: std::thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(unpark.clone());
    let answer = std::pin::Pin::new(future).poll(&mut Context::from_waker(&waker));
    (answer, unpark)
}

/// Runs `future` to its end on this thread, parking between polls (woken only by its waker,
/// or after `limit`, which fails the test): the output, and how many polls it took.
fn block_on<F: Future>(future: F, limit: Duration) -> (F::Output, usize) {
    let unpark = Arc::new(Unpark {
        thread: std::thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(unpark.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let start = Instant::now();
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return (value, polls);
        }
        let left = limit.checked_sub(start.elapsed());
        let Some(left) = left else {
            panic!("not woken within {limit:?} ({polls} polls)");
        };
        std::thread::park_timeout(left);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_stream_completion_is_woken_by_the_stream_when_its_work_ends() {
    // In a process of its own: it holds a stream at a gate, and in the shared test
    // process a held stream holds up the other tests' module loads and context-wide
    // waits until its gate opens (the stalls of the whole-suite runs).
    common::alone(
        module_path!(),
        "a_stream_completion_is_woken_by_the_stream_when_its_work_ends",
        a_stream_completion_is_woken_by_the_stream_when_its_work_ends_alone,
    );
}

fn a_stream_completion_is_woken_by_the_stream_when_its_work_ends_alone() {
    let device = common::device();
    let stream = common::stream(device);
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "stream completion");
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(1 << 20, &stream)
        .unwrap();
    buffer.fill(9u32, &stream).unwrap();
    // While the gate is closed the test makes no call but host functions and queries: on an
    // H200 under the 12 ABI, an allocation and a fill after it held this test's thread past
    // the gate's own minute once (cause not known).
    let gate = common::Gate::close_for(&stream, Duration::from_secs(60));
    let mut done = stream.completion().unwrap();
    // Work queued after the completion is not waited for: a second gate behind it.
    let later = common::Gate::close_for(&stream, Duration::from_secs(60));
    // Held: pending (catches a future ready before its work), with the waker kept.
    let (first, unpark) = poll_once(&mut done);
    assert!(first.is_pending());
    let opened = Instant::now();
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        gate.open();
    });
    // The stream wakes the task: catches a future that needs polling to make progress (the
    // executor parks up to the limit, then fails).
    while unpark.wakes.load(Ordering::SeqCst) == 0 {
        assert!(
            opened.elapsed() < Duration::from_secs(10),
            "the stream never woke the task"
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
    let (ready, _) = poll_once(&mut done);
    assert!(matches!(ready, Poll::Ready(Ok(()))));
    assert!(opened.elapsed() >= Duration::from_millis(50));
    opener.join().unwrap();
    // The work before it is done; the gate after it still holds the stream.
    assert!(!stream.is_done().unwrap());
    later.open();
    let (result, polls) = block_on(stream.completion().unwrap(), Duration::from_secs(10));
    result.unwrap();
    assert!(polls <= 3, "{polls} polls: woken without cause");
    assert!(buffer
        .to_vec::<u32>(&stream)
        .unwrap()
        .iter()
        .all(|&x| x == 9));
    // Sent to another thread and awaited there: it owns what it needs.
    let pending = stream.completion().unwrap();
    let joined = std::thread::spawn(move || block_on(pending, Duration::from_secs(10)).0);
    joined.join().unwrap().unwrap();
    // Its stream dropped while its work is held: the work runs on, and the stream's host
    // function still wakes the task at its end (catches a future that needs its stream, or
    // that takes a destroyed stream's event for done or failed).
    let other = common::stream(device);
    let gate = common::Gate::close_for(&other, Duration::from_secs(60));
    let mut orphan = other.completion().unwrap();
    drop(other);
    let (first, _) = poll_once(&mut orphan);
    assert!(first.is_pending(), "ready before its held work ran");
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        gate.open();
    });
    let (result, _) = block_on(orphan, Duration::from_secs(10));
    result.unwrap();
    opener.join().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_stream_completion_is_refused_on_a_capturing_stream() {
    let device = common::device();
    let stream = common::stream(device);
    // SAFETY: nothing is queued during the capture.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    // Catches a host function captured into the graph (it would mark the future done on the
    // graph's launch, not now).
    let e = stream.completion().unwrap_err();
    assert!(e.to_string().contains("capturing"), "{e}");
    stream.end_capture().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_event_completion_is_woken_by_the_crates_timer() {
    // In a process of its own: it holds a stream at a gate, and in the shared test
    // process a held stream holds up the other tests' module loads and context-wide
    // waits until its gate opens (the stalls of the whole-suite runs).
    common::alone(
        module_path!(),
        "an_event_completion_is_woken_by_the_crates_timer",
        an_event_completion_is_woken_by_the_crates_timer_alone,
    );
}

fn an_event_completion_is_woken_by_the_crates_timer_alone() {
    let device = common::device();
    let stream = common::stream(device);
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "event completion");
    let never = device.create_event(EventOptions::default()).unwrap();
    // Never recorded: done at once.
    block_on(never.completion(), Duration::from_secs(1))
        .0
        .unwrap();
    let gate = common::Gate::close_for(&stream, Duration::from_secs(60));
    let event = stream.record_new(EventOptions::default()).unwrap();
    let mut done = event.completion();
    assert!(poll_once(&mut done).0.is_pending());
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        gate.open();
    });
    let start = Instant::now();
    let (result, polls) = block_on(done, Duration::from_secs(10));
    result.unwrap();
    // Woken repeatedly by the timer (at most every millisecond), not left parked: catches a
    // future that registers no wake-up.
    assert!(polls >= 2, "{polls} polls");
    assert!(start.elapsed() < Duration::from_secs(5));
    opener.join().unwrap();
}

#[test]
fn completions_report_the_streams_and_events_failure() {
    // STANDIN_QUERY_STATUS is what every cuStreamQuery and cuEventQuery answers: 700, an
    // illegal address, as after a kernel's fault. The stand-in runs host functions only at a
    // synchronisation, so the stream's host function does not mark it done first.
    common::standin::run(
        module_path!(),
        "completions_report_the_streams_and_events_failure",
        &[],
        &[("STANDIN_QUERY_STATUS", "700")],
        || {
            let device = cuda_core::Device::new(0).unwrap();
            let stream = common::stream(device);
            let event = stream.record_new(EventOptions::default()).unwrap();
            // Catches a future that waits for a host function a failed stream never runs.
            let (stream_result, _) = block_on(stream.completion().unwrap(), Duration::from_secs(5));
            assert!(stream_result.is_err());
            // The same once the stream is dropped: the future sees the failure without it.
            let other = common::stream(device);
            let orphan = other.completion().unwrap();
            drop(other);
            let (orphan_result, _) = block_on(orphan, Duration::from_secs(5));
            assert!(orphan_result.is_err());
            let (event_result, _) = block_on(event.completion(), Duration::from_secs(5));
            assert!(event_result.is_err());
        },
    );
}
