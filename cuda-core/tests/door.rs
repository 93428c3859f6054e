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
        || timed_waits_during_another_threads_global_capture(Device::new(0).unwrap()),
    );
}

/// Each timed wait and completion future (W7's), made while another thread holds a global
/// capture open, succeeds and leaves that capture valid (its end succeeds).
fn timed_waits_during_another_threads_global_capture(device: Device) {
    device.set_current().unwrap();
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
            device.set_current().unwrap();
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
        stream.sync().unwrap();
    }
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

/// W11: a replayable region last run on one thread's per-thread default stream, dropped on
/// another thread, releases what its graph kept (its kernels' code is unloaded). Bug caught:
/// the release queued a host function on the other thread's stream, which is refused from
/// here, and its fallback synchronisation was refused too: the values were kept for good.
#[test]
fn a_region_last_run_on_another_threads_per_thread_stream_is_released() {
    strict(
        "a_region_last_run_on_another_threads_per_thread_stream_is_released",
        || {
            let device = Device::new(0).unwrap();
            let region = std::thread::spawn(move || {
                let own = Stream::per_thread_default(device).unwrap();
                let kernel = k1();
                let b = device
                    .memory_resource()
                    .unwrap()
                    .allocate(64, &own)
                    .unwrap();
                let config = LaunchConfig::for_elements(1, 1);
                let mut region = Replay::new();
                // SAFETY: the stand-in runs no kernel.
                region
                    .run(&own, |r| unsafe { r.launch(&config, &kernel, &[&b]) })
                    .unwrap();
                own.sync().unwrap();
                region
            })
            .join()
            .unwrap();
            standin::clear_log();
            drop(region);
            let deadline = Instant::now() + Duration::from_secs(10);
            // Catches the values kept for good: the kernels' library never unloaded.
            while !lines().iter().any(|l| l.starts_with("cuLibraryUnload")) {
                assert!(
                    Instant::now() < deadline,
                    "not released:\n{}",
                    standin::log()
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        },
    );
}

// ---- the same findings against the real driver -------------------------------------------

const READ_FIRST: &str = r#"
extern "C" __global__ void read_first(const unsigned* b, unsigned* out) { out[0] = b[0]; }
"#;

fn read_first() -> Kernel {
    cuda_core::Program::new(READ_FIRST, cuda_core::ProgramOptions::default())
        .compile(cuda_core::CodeType::Cubin, &[])
        .unwrap()
        .get_kernel("read_first")
        .unwrap()
}

/// W2 on the GPU: a region built on its buffer's stream, run on another while a fill of that
/// buffer waits on its stream behind a held host function, reads the filled value (it waits
/// for the buffer's stream). Bug caught: the run did not wait, and read the old value at once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_an_unchanged_replay_on_another_stream_reads_what_its_buffers_stream_wrote() {
    common::alone(
        module_path!(),
        "gpu_an_unchanged_replay_on_another_stream_reads_what_its_buffers_stream_wrote",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let _watchdog = common::Watchdog::new(Duration::from_secs(120), "W2 on the GPU");
            let (s1, s2) = (common::stream(device), common::stream(device));
            let memory = device.memory_resource().unwrap();
            let mut b = memory.allocate(4, &s1).unwrap();
            let mut out = memory.allocate(4, &s2).unwrap();
            b.fill(1u32, &s1).unwrap();
            out.fill(0u32, &s2).unwrap();
            s1.sync().unwrap();
            s2.sync().unwrap();
            let kernel = read_first();
            let config = LaunchConfig::for_elements(1, 1);
            let mut region = Replay::new();
            {
                // SAFETY: the kernel reads one value of `b` and writes one of `out`; both are
                // the same buffers, alive, on the same streams, at every run.
                let body = |r: &mut cuda_core::ReplayRecorder<'_>| unsafe {
                    r.launch_unchanged(&config, &kernel, &[&b, &out])
                };
                region.run(&s1, body).unwrap();
                s1.sync().unwrap();
            }
            assert_eq!(out.to_vec::<u32>(&s2).unwrap(), [1]);
            let gate = common::Gate::close_for(&s1, Duration::from_secs(30));
            b.fill(7u32, &s1).unwrap();
            {
                // SAFETY: as above.
                let body = |r: &mut cuda_core::ReplayRecorder<'_>| unsafe {
                    r.launch_unchanged(&config, &kernel, &[&b, &out])
                };
                region.run(&s2, body).unwrap();
            }
            let opener = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                gate.open();
            });
            // Catches the stale read: 1, read before the fill ran.
            assert_eq!(out.to_vec::<u32>(&s2).unwrap(), [7]);
            opener.join().unwrap();
            s1.sync().unwrap();
        },
    );
}

/// W4 on the GPU: after a pinned pool's access was revoked from the device, an executable
/// graph copying its memory is refused at launch, before the driver (in a process of its own:
/// the copy the driver would make faults, which poisons the context). Bug caught: the launch
/// reached the driver.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_a_graph_launched_after_its_memorys_access_was_revoked_is_refused() {
    common::alone(
        module_path!(),
        "gpu_a_graph_launched_after_its_memorys_access_was_revoked_is_refused",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let stream = common::stream(device);
            let pool = match PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()) {
                Ok(pool) => pool,
                Err(e) => {
                    common::not_run("pinned-pool", &format!("no pinned pool here: {e}"));
                    return;
                }
            };
            let mut src = pool.allocate(1 << 16, &stream).unwrap();
            src.fill(3u32, &stream).unwrap();
            let src = Arc::new(src);
            let dst = Arc::new(
                device
                    .memory_resource()
                    .unwrap()
                    .allocate(1 << 16, &stream)
                    .unwrap(),
            );
            let mut graph = Graph::new(device).unwrap();
            graph.add_copy(&[], &src, &dst).unwrap();
            let exec = graph.instantiate(GraphOptions::default()).unwrap();
            exec.launch(&stream).unwrap();
            assert!(dst.to_vec::<u32>(&stream).unwrap().iter().all(|&v| v == 3));
            pool.set_access(&[]).unwrap();
            assert!(src.to_vec::<u8>(&stream).is_err());
            // Catches the launch sent to the driver without access.
            let refused = exec.launch(&stream).unwrap_err();
            assert!(
                matches!(&refused, Error::InvalidArgument { .. }),
                "{refused}"
            );
            stream.sync().unwrap();
            pool.set_access(&[device]).unwrap();
            exec.launch(&stream).unwrap();
            stream.sync().unwrap();
        },
    );
}

/// W5 on the GPU: 256 MiB of one thread's per-thread default stream, dropped on another thread
/// while an unrelated capture is open, is given back to the pool once the capture has ended.
/// Bug caught: the free was put off for good (the pool's memory in use stayed up).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_a_per_thread_streams_buffer_dropped_elsewhere_during_a_capture_is_freed() {
    common::alone(
        module_path!(),
        "gpu_a_per_thread_streams_buffer_dropped_elsewhere_during_a_capture_is_freed",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let memory = cuda_core::DeviceMemoryResource::new(
                device,
                cuda_core::DeviceMemoryResourceOptions::default(),
            )
            .unwrap();
            let before = memory.usage().unwrap().used_current;
            let pool = memory.clone();
            let buffer = std::thread::spawn(move || {
                device.set_current().unwrap();
                let own = Stream::per_thread_default(device).unwrap();
                let buffer = pool.allocate(256 << 20, &own).unwrap();
                own.sync().unwrap();
                buffer
            })
            .join()
            .unwrap();
            assert!(memory.usage().unwrap().used_current >= before + (256 << 20));
            let capturing = common::stream(device);
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let dropper = std::thread::spawn(move || drop(buffer));
            std::thread::sleep(Duration::from_millis(200));
            drop(capturing.end_capture().unwrap());
            dropper.join().unwrap();
            device.sync().unwrap();
            // Catches the leak: the pool still counts the 256 MiB in use.
            let after = memory.usage().unwrap().used_current;
            assert!(
                after < before + (256 << 20),
                "{after} bytes in use, {before} before"
            );
        },
    );
}

/// W6 on the GPU: legacy-stream fills on one thread while another forks a blocking stream into
/// captures and joins it back, for two seconds: no fill is refused by the driver and every
/// capture ends valid. Bug caught: a join between the crate's question and the legacy call let
/// the driver refuse the call (906), invalidating the capture (thousands of times a run).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_legacy_stream_work_never_breaks_a_capture_a_blocking_stream_joins() {
    common::alone(
        module_path!(),
        "gpu_legacy_stream_work_never_breaks_a_capture_a_blocking_stream_joins",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let legacy = device.default_stream().unwrap();
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(4096, &legacy)
                .unwrap();
            legacy.sync().unwrap();
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let capturer = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    device.set_current().unwrap();
                    let origin = common::stream(device);
                    let blocking = device
                        .create_stream(StreamOptions::default().with_non_blocking(false))
                        .unwrap();
                    let (fork, join) = (
                        device.create_event(EventOptions::default()).unwrap(),
                        device.create_event(EventOptions::default()).unwrap(),
                    );
                    let mut captures = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // SAFETY: nothing is allocated or freed on the streams while they
                        // capture.
                        unsafe { origin.begin_capture(CaptureMode::Relaxed) }.unwrap();
                        origin.record(&fork).unwrap();
                        blocking.wait(&fork).unwrap();
                        blocking.record(&join).unwrap();
                        origin.wait(&join).unwrap();
                        // Catches a capture invalidated by a legacy call the driver refused.
                        let graph = origin.end_capture();
                        assert!(graph.is_ok(), "capture {captures}: {:?}", graph.err());
                        captures += 1;
                    }
                    captures
                })
            };
            let start = Instant::now();
            let (mut made, mut refused) = (0u64, 0u64);
            while start.elapsed() < Duration::from_secs(2) {
                match buffer.fill(7u32, &legacy) {
                    Ok(()) => made += 1,
                    Err(Error::Capture { .. }) => refused += 1,
                    // Catches a refusal by the driver (906), which broke a capture.
                    Err(other) => panic!("a legacy fill refused by the driver: {other}"),
                }
                if (made + refused) % 64 == 0 {
                    let _ = legacy.sync();
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let captures = capturer.join().unwrap();
            let _ = legacy.sync();
            println!("{captures} captures, {made} legacy fills, {refused} refused by the crate");
            assert!(captures > 0 && made > 0);
        },
    );
}

/// W7 on the GPU: the timed waits and the completion futures, during another thread's global
/// capture, leave it valid. Bug caught: their queries, in the thread's own mode, were refused
/// by the driver and invalidated the capture.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_timed_waits_and_futures_leave_another_threads_global_capture_valid() {
    common::alone(
        module_path!(),
        "gpu_timed_waits_and_futures_leave_another_threads_global_capture_valid",
        || timed_waits_during_another_threads_global_capture(common::device()),
    );
}

/// W9 on the GPU: `to_vec_timeout` of 200 ms on another stream than the buffer's, whose stream
/// is held, returns `Error::Timeout` within the deadline's reach; once the stream runs on, the
/// same copy brings the buffer's values. Bug caught: it returned `Ok` after the held stream's
/// 3 s.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_a_copy_to_the_host_with_a_deadline_keeps_it_when_the_buffers_stream_is_held() {
    common::alone(
        module_path!(),
        "gpu_a_copy_to_the_host_with_a_deadline_keeps_it_when_the_buffers_stream_is_held",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let (home, other) = (common::stream(device), common::stream(device));
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(1 << 20, &home)
                .unwrap();
            buffer.fill(5u32, &home).unwrap();
            home.sync().unwrap();
            let gate = common::Gate::close_for(&home, Duration::from_secs(3));
            let start = Instant::now();
            let result = buffer.to_vec_timeout::<u32>(&other, Duration::from_millis(200));
            let took = start.elapsed();
            assert!(
                matches!(result, Err(Error::Timeout { .. })),
                "{:?} after {took:?}",
                result.map(|v| v.len())
            );
            assert!(took < Duration::from_secs(1), "returned after {took:?}");
            gate.open();
            let values = buffer
                .to_vec_timeout::<u32>(&other, Duration::from_secs(10))
                .unwrap();
            assert!(values.iter().all(|&v| v == 5) && values.len() == 1 << 18);
        },
    );
}

/// Writes through shared handles on two streams and reads on a third, none of them the
/// buffer's own, from three threads: every read sees the buffer wholly one write's (the door
/// keeps each ordering's steps together). Bug caught (N7's device race): two threads'
/// orderings interleaved, and a read saw a copy half done. The race is probabilistic: a pass
/// with the door removed is possible, a failure with it is not.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_shared_writes_and_reads_of_other_streams_never_see_each_other_half_done() {
    common::alone(
        module_path!(),
        "gpu_shared_writes_and_reads_of_other_streams_never_see_each_other_half_done",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let home = common::stream(device);
            let memory = device.memory_resource().unwrap();
            let words = 4usize << 20; // 16 MiB
            let shared = Arc::new(memory.allocate(4 * words, &home).unwrap());
            let mut ones = memory.allocate(4 * words, &home).unwrap();
            ones.fill(1u32, &home).unwrap();
            home.sync().unwrap();
            let ones = Arc::new(ones);
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let writers: Vec<_> = (0..2)
                .map(|w| {
                    let (shared, ones, stop) = (shared.clone(), ones.clone(), stop.clone());
                    std::thread::spawn(move || {
                        device.set_current().unwrap();
                        let stream = common::stream(device);
                        let whole = shared.shared_slice(..).unwrap();
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            if w == 0 {
                                ones.copy_to(&shared, &stream).unwrap();
                            } else {
                                whole.fill(2u32, &stream).unwrap();
                            }
                            // One write in flight per writer: unbounded, the queue held up every
                            // other test's context-wide waits (module loads) in a shared process.
                            stream.sync().unwrap();
                        }
                    })
                })
                .collect();
            let reader = common::stream(device);
            let mut mixed = 0;
            for _ in 0..40 {
                let values = shared.to_vec::<u32>(&reader).unwrap();
                let first = values[0];
                if values.iter().any(|&v| v != first) {
                    mixed += 1;
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for writer in writers {
                writer.join().unwrap();
            }
            assert_eq!(mixed, 0, "{mixed} of 40 reads saw a write half done");
        },
    );
}
