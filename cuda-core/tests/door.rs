//! The one door for stream work (`order.rs`): where two features meet, every path queues,
//! queries and waits through it. One test per finding of the soundness review it answers
//! (W1 to W9), each failing against the code before its fix: on the stand-in in its strict
//! model where the finding shows there, on the GPU too (the same program against the real
//! driver).

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::standin;

use cuda_core::memory::{PinnedMemoryPool, PinnedMemoryPoolOptions};
use cuda_core::{
    Allocate, Buffer, BuildGraph, CaptureMode, Device, Error, EventOptions, Graph, GraphOptions,
    Kernel, LaunchConfig, ObjectCode, Replay, Stream, StreamOptions,
};

/// Runs `body` in a stand-in child with the strict model.
fn strict(function: &str, body: impl FnOnce()) {
    standin::run(
        module_path!(),
        function,
        &[],
        &[("STANDIN_MODEL", "1")],
        body,
    );
}

/// The log's lines without the model's thread numbers ("t1 cuMemsetD32Async ..." ->
/// "cuMemsetD32Async ...").
fn lines() -> Vec<String> {
    standin::log()
        .lines()
        .map(|line| match line.split_once(' ') {
            Some((thread, rest)) if thread.starts_with('t') => rest.to_owned(),
            _ => line.to_owned(),
        })
        .collect()
}

/// Polls `future` once with a waker that does nothing: its output, if it is ready.
fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::Pin::new(future).poll(&mut context) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

fn k1() -> Kernel {
    ObjectCode::from_cubin(standin::cubin())
        .get_kernel("k1")
        .unwrap()
}

/// W2: a replayable region whose launches are all declared unchanged, built on its buffer's
/// stream and run later on another stream, is ordered with the buffer's stream as `launch`
/// is: the run's stream waits for it before the graph's launch, and it waits for the launch
/// after. Bug caught: the region kept, for unread launches, the streams of the build run's
/// buffers other than the build's own stream, so the second run waited for nothing (it read
/// stale data, and the buffer's free did not wait for the graph, which then wrote a buffer
/// allocated later at the same address).
#[test]
fn an_unchanged_replay_on_another_stream_is_ordered_with_its_buffers_stream() {
    strict(
        "an_unchanged_replay_on_another_stream_is_ordered_with_its_buffers_stream",
        || {
            let device = Device::new(0).unwrap();
            let (s1, s2) = (common::stream(device), common::stream(device));
            let b = device.memory_resource().unwrap().allocate(64, &s1).unwrap();
            let kernel = k1();
            let config = LaunchConfig::for_elements(1, 1);
            let mut region = Replay::new();
            // SAFETY: the stand-in runs no kernel; `b` is the same buffer, alive, on the same
            // stream, at both runs.
            let body = |r: &mut cuda_core::ReplayRecorder<'_>| unsafe {
                r.launch_unchanged(&config, &kernel, &[&b])
            };
            region.run(&s1, body).unwrap();
            standin::clear_log();
            standin::mark("second run");
            region.run(&s2, body).unwrap();
            let log = lines();
            let launch = log
                .iter()
                .position(|l| l.starts_with("cuGraphLaunch"))
                .unwrap_or_else(|| panic!("not launched:\n{}", log.join("\n")));
            let waits = |range: &[String]| {
                range
                    .iter()
                    .filter(|l| l.starts_with("cuStreamWaitEvent"))
                    .count()
            };
            // Catches the missing order: s2 waits for s1 before, s1 waits for s2 after.
            assert_eq!(waits(&log[..launch]), 1, "{}", log.join("\n"));
            assert_eq!(waits(&log[launch..]), 1, "{}", log.join("\n"));
            drop(b);
            s1.sync().unwrap();
            s2.sync().unwrap();
        },
    );
}

/// W4: a graph whose copy node reads a pinned pool's memory, launched after the pool's access
/// was revoked from the graph's device, is refused before the driver, as a buffer's copy is.
/// Bug caught: access was checked only when the node was made, so the launch reached the
/// driver (which faults on such a copy, poisoning the context).
#[test]
fn a_graph_launched_after_its_memorys_access_was_revoked_is_refused() {
    strict(
        "a_graph_launched_after_its_memorys_access_was_revoked_is_refused",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let pool = PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()).unwrap();
            let src = Arc::new(pool.allocate(256, &stream).unwrap());
            let dst = Arc::new(
                device
                    .memory_resource()
                    .unwrap()
                    .allocate(256, &stream)
                    .unwrap(),
            );
            let mut graph = Graph::new(device).unwrap();
            graph.add_copy(&[], &src, &dst).unwrap();
            let exec = graph.instantiate(GraphOptions::default()).unwrap();
            exec.launch(&stream).unwrap();
            stream.sync().unwrap();
            pool.set_access(&[]).unwrap();
            // The copy of a buffer is refused now, and so must the graph's be.
            assert!(src.to_vec::<u8>(&stream).is_err());
            standin::clear_log();
            let refused = exec.launch(&stream).unwrap_err();
            assert!(
                matches!(&refused, Error::InvalidArgument { reason, .. } if reason.contains("not accessible")),
                "{refused}"
            );
            // Catches a refusal made after the driver was called.
            assert!(
                !lines().iter().any(|l| l.starts_with("cuGraphLaunch")),
                "{}",
                standin::log()
            );
            pool.set_access(&[device]).unwrap();
            exec.launch(&stream).unwrap();
            stream.sync().unwrap();
        },
    );
}

/// W5: a buffer of one thread's per-thread default stream, dropped on another thread while an
/// unrelated capture is open, is freed (once the capture ends: the free waits for the
/// stream's context). Bug caught: the drop asked whether the stream captures, the question
/// failed for the wrong thread and read as "capturing", and the free was put off onto the
/// stream's list, which nothing ever drained: the memory leaked.
#[test]
fn a_per_thread_streams_buffer_dropped_elsewhere_during_a_capture_is_freed() {
    strict(
        "a_per_thread_streams_buffer_dropped_elsewhere_during_a_capture_is_freed",
        || {
            let device = Device::new(0).unwrap();
            let buffer = std::thread::spawn(move || {
                let own = Stream::per_thread_default(device).unwrap();
                device
                    .memory_resource()
                    .unwrap()
                    .allocate(1 << 20, &own)
                    .unwrap()
            })
            .join()
            .unwrap();
            let ptr = format!("{:#x}", buffer.ptr().0);
            let capturing = common::stream(device);
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let (dropped, done) = mpsc::channel();
            let dropper = std::thread::spawn(move || {
                drop(buffer);
                let _ = dropped.send(());
            });
            // The drop waits for the context, so for the capture in it to end (or is done).
            let _ = done.recv_timeout(Duration::from_millis(200));
            drop(capturing.end_capture().unwrap());
            dropper.join().unwrap();
            let frees: Vec<String> = lines()
                .into_iter()
                .filter(|l| l.starts_with("cuMemFreeAsync") && l.contains(&ptr))
                .collect();
            // Catches the leak: no free of the buffer at all.
            assert_eq!(frees.len(), 1, "{}", standin::log());
        },
    );
}

/// W6: work on the legacy default stream, and a blocking stream joining a capture on another
/// thread between the gate's question ("does a blocking stream capture?") and the legacy call
/// (the stand-in answers the question late, so the join lands there): the join waits for the
/// legacy call, which the driver takes, and the capture stays valid. Bug caught: the gate made
/// the call outside its lock, so the join came first and the driver refused the legacy work
/// (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`), invalidating the capture.
#[test]
fn legacy_stream_work_never_breaks_a_capture_a_blocking_stream_joins() {
    standin::run(
        module_path!(),
        "legacy_stream_work_never_breaks_a_capture_a_blocking_stream_joins",
        &[],
        &[("STANDIN_MODEL", "1"), ("STANDIN_LEGACY_ANSWER_MS", "300")],
        || {
            let device = Device::new(0).unwrap();
            let legacy = device.default_stream().unwrap();
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(256, &legacy)
                .unwrap();
            legacy.sync().unwrap();
            let origin = common::stream(device);
            let blocking = device
                .create_stream(StreamOptions::default().with_non_blocking(false))
                .unwrap();
            let (fork, join) = (
                device.create_event(EventOptions::default()).unwrap(),
                device.create_event(EventOptions::default()).unwrap(),
            );
            // SAFETY: nothing is allocated or freed on the streams while they capture.
            unsafe { origin.begin_capture(CaptureMode::Relaxed) }.unwrap();
            origin.record(&fork).unwrap();
            let (asking, asked) = mpsc::channel();
            let filler = std::thread::spawn(move || {
                asking.send(()).unwrap();
                // Asks whether a blocking stream captures (none does yet), answered late.
                buffer.fill(7u32, &legacy)
            });
            asked.recv().unwrap();
            std::thread::sleep(Duration::from_millis(100));
            // Joins the capture while the filler waits for its answer.
            blocking.wait(&fork).unwrap();
            blocking.record(&join).unwrap();
            origin.wait(&join).unwrap();
            let filled = filler.join().unwrap();
            // Catches the legacy fill refused by the driver (906), which broke the capture:
            // the join waited for it, so the driver took it.
            assert!(filled.is_ok(), "{filled:?}");
            let ended = origin.end_capture();
            assert!(ended.is_ok(), "the capture ended with {:?}", ended.err());
        },
    );
}

/// W7: the timed waits and the completion futures, during another thread's global capture,
/// leave that capture valid (their queries are made relaxed, as `to_vec`'s wait is). Bug
/// caught: `sync_timeout`, `wait_timeout`, `to_vec_timeout` and `StreamCompletion::poll`
/// asked in the thread's own mode, which the driver refuses during a global capture, and the
/// refusal invalidated that capture.
#[test]
fn timed_waits_and_futures_leave_another_threads_global_capture_valid() {
    strict(
        "timed_waits_and_futures_leave_another_threads_global_capture_valid",
        || {
            let device = Device::new(0).unwrap();
            type Wait = fn(&Stream, &Arc<Buffer>) -> Result<(), Error>;
            let waits: [(&str, Wait); 5] = [
                ("sync_timeout", |s, _| {
                    s.sync_timeout(Duration::from_secs(5))
                }),
                ("wait_timeout", |s, _| {
                    s.record_new(EventOptions::default())?
                        .wait_timeout(Duration::from_secs(5))
                }),
                ("to_vec_timeout", |s, b| {
                    b.to_vec_timeout::<u8>(s, Duration::from_secs(5)).map(drop)
                }),
                ("a stream completion's poll", |s, _| {
                    let mut done = s.completion()?;
                    poll_once(&mut done).unwrap_or(Ok(()))
                }),
                ("an event completion's poll", |s, _| {
                    let event = s.record_new(EventOptions::default())?;
                    poll_once(&mut event.completion()).unwrap_or(Ok(()))
                }),
            ];
            for (what, wait) in waits {
                let stream = common::stream(device);
                let buffer = Arc::new(
                    device
                        .memory_resource()
                        .unwrap()
                        .allocate(64, &stream)
                        .unwrap(),
                );
                stream.sync().unwrap();
                let (began, go) = (mpsc::channel(), mpsc::channel::<()>());
                let capturer = std::thread::spawn(move || {
                    let capturing = common::stream(device);
                    // SAFETY: nothing is allocated or freed on the stream while it captures.
                    unsafe { capturing.begin_capture(CaptureMode::Global) }.unwrap();
                    began.0.send(()).unwrap();
                    go.1.recv().unwrap();
                    capturing.end_capture().map(drop)
                });
                began.1.recv().unwrap();
                let waited = wait(&stream, &buffer);
                go.0.send(()).unwrap();
                let ended = capturer.join().unwrap();
                // Catches the capture invalidated by the wait's query (its end then fails).
                assert!(
                    ended.is_ok(),
                    "{what}: the capture ended with {:?}",
                    ended.err()
                );
                assert!(waited.is_ok(), "{what}: {:?}", waited.err());
            }
        },
    );
}

/// W9: `to_vec_timeout` on a stream other than the buffer's, while the buffer's stream is held
/// (a host function that waits), returns `Error::Timeout` by its deadline. Bug caught: it
/// waited with the deadline for its own stream only, then queued the copy in the buffer's
/// stream order and waited for it without one (200 ms became seconds).
#[test]
fn a_copy_to_the_host_with_a_deadline_keeps_it_when_the_buffers_stream_is_held() {
    strict(
        "a_copy_to_the_host_with_a_deadline_keeps_it_when_the_buffers_stream_is_held",
        || {
            let device = Device::new(0).unwrap();
            let (home, other) = (common::stream(device), common::stream(device));
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(256, &home)
                .unwrap();
            home.sync().unwrap();
            let gate = common::Gate::close_for(&home, Duration::from_secs(3));
            let start = Instant::now();
            let result = buffer.to_vec_timeout::<u32>(&other, Duration::from_millis(200));
            let took = start.elapsed();
            // Catches the deadline not kept (the copy waited for the held stream).
            assert!(
                matches!(result, Err(Error::Timeout { .. })),
                "{:?} after {took:?}",
                result.map(|v| v.len())
            );
            assert!(took < Duration::from_secs(2), "returned after {took:?}");
            gate.open();
            // The stand-in runs host functions at a synchronisation.
            home.sync().unwrap();
            // Once the stream runs on, the same copy is made in time.
            assert_eq!(
                buffer
                    .to_vec_timeout::<u32>(&other, Duration::from_secs(10))
                    .unwrap()
                    .len(),
                64
            );
        },
    );
}
