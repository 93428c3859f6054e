//! Features that meet: captures forked over streams whose buffers live elsewhere, recycled
//! handles, host functions and other threads, each checked in what a user observes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ThreadId;

use crate::common;
use crate::common::standin;

use cuda_core::{
    launch, Allocate, Buffer, CaptureMode, CaptureStatus, CodeType, Error, EventOptions,
    GraphOptions, LaunchConfig, Program, ProgramOptions, Stream, StreamOptions,
};

const KERNELS: &str = r#"
extern "C" __global__ void add(const float* a, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a[i];
}
extern "C" __global__ void twice(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" __global__ void sum(const float* x, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}
"#;

fn streams(n: usize) -> Vec<Stream> {
    let device = common::device();
    (0..n)
        .map(|_| device.create_stream(StreamOptions::default()).unwrap())
        .collect()
}

/// A capture begun on s0 and forked to s1 and s2 by event waits, whose work fills and reads
/// buffers homed on each of the three streams and on a fourth that is not in the capture,
/// joined back, instantiates and replays with the right numbers. Catches the cross-stream
/// ordering recording events across the capture's boundary (the capture invalidated, or
/// `CUDA_ERROR_STREAM_CAPTURE_ISOLATION` at the wait) and fills that ran instead of being
/// captured (the second replay would then not refill).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_forked_capture_over_buffers_homed_on_any_stream_replays_right() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(KERNELS, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let (add, twice) = (
        code.get_kernel("add").unwrap(),
        code.get_kernel("twice").unwrap(),
    );
    let all = streams(4);
    let [s0, s1, s2, p] = [&all[0], &all[1], &all[2], &all[3]];
    let n = 1u32 << 16;
    let bytes = 4 * n as usize;
    let memory = device.memory_resource().unwrap();
    let mut a = memory.allocate(bytes, s0).unwrap();
    let mut b = memory.allocate(bytes, s1).unwrap();
    let c = memory.allocate(bytes, s2).unwrap();
    let mut d = memory.allocate(bytes, p).unwrap();
    for s in &all {
        s.sync().unwrap();
    }
    let config = LaunchConfig::for_elements(n.into(), 256);
    let event = || device.create_event(EventOptions::default()).unwrap();
    let (fork, join1, join2) = (event(), event(), event());
    // SAFETY: nothing is allocated or freed on the streams while they capture, and the
    // buffers and kernels outlive every launch (synchronised below).
    unsafe { s0.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    s0.record(&fork).unwrap();
    s1.wait(&fork).unwrap();
    s2.wait(&fork).unwrap();
    assert_eq!(s2.capture_status().unwrap(), CaptureStatus::Active);
    a.fill(1.0f32.to_bits(), s1).unwrap(); // home s0, in the capture
    b.fill(2.0f32.to_bits(), s2).unwrap(); // home s1, in the capture
    d.fill(10.0f32.to_bits(), s2).unwrap(); // home p, outside it
    s1.record(&join1).unwrap();
    s2.record(&join2).unwrap();
    s0.wait(&join1).unwrap();
    s0.wait(&join2).unwrap();
    // SAFETY: n floats in each buffer.
    unsafe {
        launch(s0, &config, &add, &[&b, &a, &n]).unwrap();
        launch(s0, &config, &add, &[&d, &a, &n]).unwrap();
        launch(s0, &config, &twice, &[&a, &c, &n]).unwrap(); // c: home s2, joined
    }
    let graph = s0.end_capture().unwrap();
    assert_eq!(
        graph.node_count().unwrap(),
        6,
        "3 fills and 3 kernels captured"
    );
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    for round in 0..3 {
        exec.launch(s0).unwrap();
        let got = c.to_vec::<f32>(s0).unwrap();
        assert!(
            got.iter().all(|&x| x == 26.0),
            "round {round}: c = {:?}...",
            &got[..4]
        );
        // Spoil the inputs: the next replay refills them.
        a.fill(0u32, s0).unwrap();
        d.fill(0u32, s0).unwrap(); // ordered after p's work and before its next
    }
    for s in &all {
        s.sync().unwrap();
    }
}

/// NVIDIA's `simpleCudaGraphs` pattern as that sample does it: the buffers are made on the
/// program's stream, the capture stream forks two streams, one copies the input and one
/// clears the output, both join back, and the capture stream reduces. Each replay gives the
/// input's sum. Catches the wait of a forked stream on an event of the program's stream
/// (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`, 905, on the H200 before).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_simple_cuda_graphs_pattern_captures_and_replays_its_sum() {
    // (A global capture, as the sample's: in a process of its own, where no other test's
    // allocation meets it.)
    common::alone(
        module_path!(),
        "the_simple_cuda_graphs_pattern_captures_and_replays_its_sum",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let code = Program::new(KERNELS, ProgramOptions::default())
                .compile(CodeType::Cubin, &[])
                .unwrap();
            let sum = code.get_kernel("sum").unwrap();
            let all = streams(4);
            let [program, graph_stream, s1, s2] = [&all[0], &all[1], &all[2], &all[3]];
            let n = 4096u32;
            let memory = device.memory_resource().unwrap();
            let input_host: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            let expected: f32 = input_host.iter().sum();
            let mut staging = memory.allocate(4 * n as usize, program).unwrap();
            staging.copy_from_host(&input_host, program).unwrap();
            let mut input = memory.allocate(4 * n as usize, program).unwrap();
            let mut out = memory.allocate(4, program).unwrap();
            program.sync().unwrap();
            let config = LaunchConfig::for_elements(n.into(), 256);
            let event = || device.create_event(EventOptions::default()).unwrap();
            let (fork, copied, cleared) = (event(), event(), event());
            // SAFETY: no buffer is allocated or freed on the capture's streams meanwhile; the buffers
            // and the kernel outlive every launch (synchronised below).
            unsafe { graph_stream.begin_capture(CaptureMode::Global) }.unwrap();
            graph_stream.record(&fork).unwrap();
            s1.wait(&fork).unwrap();
            s2.wait(&fork).unwrap();
            input.copy_from(&staging, s1).unwrap();
            out.fill(0u32, s2).unwrap();
            s1.record(&copied).unwrap();
            s2.record(&cleared).unwrap();
            graph_stream.wait(&copied).unwrap();
            graph_stream.wait(&cleared).unwrap();
            // SAFETY: n floats in `input`, one in `out`.
            unsafe { launch(graph_stream, &config, &sum, &[&input, &out, &n]).unwrap() };
            let graph = graph_stream.end_capture().unwrap();
            let exec = graph.instantiate(GraphOptions::default()).unwrap();
            for round in 0..3 {
                exec.launch(graph_stream).unwrap();
                let got = out.to_vec::<f32>(graph_stream).unwrap()[0];
                assert_eq!(got, expected, "round {round}");
            }
            graph_stream.sync().unwrap();
        },
    );
}

/// Work on a stream that does not capture, over a buffer whose deallocation stream captures,
/// is refused and pulls nothing into the capture: before, the fill was recorded into the
/// capture (the other stream joined it) and did not run.
#[test]
#[ignore = "needs a CUDA GPU"]
fn work_over_a_capturing_streams_buffer_on_another_stream_is_refused() {
    let device = common::device();
    let all = streams(2);
    let [s1, s2] = [&all[0], &all[1]];
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4096, s1)
        .unwrap();
    s1.sync().unwrap();
    // SAFETY: nothing is queued on s1 during the capture; the buffer outlives it.
    unsafe { s1.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let err = buffer.fill(7u8, s2).unwrap_err();
    assert!(matches!(err, Error::Capture { .. }), "{err}");
    assert_eq!(s2.capture_status().unwrap(), CaptureStatus::None);
    let graph = s1.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 0, "nothing was captured");
    buffer.fill(7u8, s2).unwrap();
    assert!(buffer.to_vec::<u8>(s2).unwrap().iter().all(|&x| x == 7));
}

/// An end of a thread-local capture from another thread is refused, and the crate's view of
/// the capture stays the driver's: where the driver keeps the capture open, a host function is
/// still refused on the stream (it would run once per graph launch) and the capture's own
/// thread ends it; where the driver ended it, the stream runs work again. Before, the crate
/// took every refused end as ended and accepted host functions into an open capture.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_end_from_the_wrong_thread_leaves_the_crate_as_the_driver_says() {
    let all = streams(1);
    let s = &all[0];
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    std::thread::scope(|t| {
        let err = t.spawn(|| s.end_capture().unwrap_err()).join().unwrap();
        println!("an end from another thread: {err}");
        assert!(matches!(err, Error::Capture { .. }), "{err}");
    });
    let status = s.capture_status().unwrap();
    println!("the driver's capture status after it: {status:?}");
    let host = s.launch_host_func(|| {});
    match status {
        CaptureStatus::None => {
            assert!(host.is_ok(), "{host:?}");
            assert!(s.end_capture().is_err(), "nothing to end");
            s.sync().unwrap();
        }
        _ => {
            assert!(host.is_err(), "a host function queued into the capture");
            let graph = s.end_capture().unwrap();
            assert_eq!(graph.node_count().unwrap(), 0);
        }
    }
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
}

/// An event made after a recorded timing event was dropped (so, on this thread, the same
/// handle recycled) is as fresh as a new one: done, and refused as a start or an end of a
/// time, instead of timing the old handle's record.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_recycled_event_shows_nothing_of_its_last_life() {
    // In a process of its own: while another test's capture is open, a pending handle is not
    // reused (by design), and this test needs it reused.
    common::alone(
        module_path!(),
        "a_recycled_event_shows_nothing_of_its_last_life",
        a_recycled_event_body,
    );
}

fn a_recycled_event_body() {
    std::thread::spawn(|| {
        let device = common::device();
        let s = &streams(1)[0];
        let fresh = device.create_event(EventOptions::timing()).unwrap();
        let start = s.record_new(EventOptions::timing()).unwrap();
        let end = s.record_new(EventOptions::timing()).unwrap();
        end.sync().unwrap();
        end.elapsed_since(&start).unwrap();
        // Both errors of a fresh event: kept to compare with the recycled one's.
        let fresh_err = end.elapsed_since(&fresh).unwrap_err().to_string();
        let old = start.as_raw();
        drop(start);
        let never = device.create_event(EventOptions::timing()).unwrap();
        assert!(never.is_done().unwrap());
        let err = end.elapsed_since(&never).unwrap_err();
        assert_eq!(err.to_string(), fresh_err, "as a fresh event's");
        assert!(never.elapsed_since(&end).is_err());
        if never.as_raw() != old {
            common::not_run("gpu", "the dropped event's handle was not reused");
        }
    })
    .join()
    .unwrap();
}

/// What a host function captured is dropped after it ran on a thread that is not the
/// driver's (a buffer dropped there would make a CUDA call in a host function).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_host_functions_captures_are_dropped_off_the_drivers_thread() {
    struct Probe(Option<Buffer>, mpsc::Sender<ThreadId>);
    impl Drop for Probe {
        fn drop(&mut self) {
            drop(self.0.take());
            let _ = self.1.send(std::thread::current().id());
        }
    }
    let device = common::device();
    let s = &streams(1)[0];
    let buffer = device
        .memory_resource()
        .unwrap()
        .allocate(1 << 20, s)
        .unwrap();
    let (ran_tx, ran_rx) = mpsc::channel();
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let probe = Probe(Some(buffer), dropped_tx);
    s.launch_host_func(move || {
        let _kept = &probe;
        let _ = ran_tx.send(std::thread::current().id());
    })
    .unwrap();
    s.sync().unwrap();
    let ran = ran_rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    let dropped = dropped_rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap();
    assert_ne!(ran, dropped, "dropped on the driver's callback thread");
    assert_ne!(dropped, std::thread::current().id());
}

/// During another thread's global capture, this thread drops an event with a record pending
/// and makes another: the recycling asks the driver nothing the capture forbids, so the
/// capture ends with its graph (a query of the pending handle invalidated it before).
#[test]
#[ignore = "needs a CUDA GPU"]
fn making_events_during_another_threads_global_capture_leaves_it_valid() {
    common::alone(
        module_path!(),
        "making_events_during_another_threads_global_capture_leaves_it_valid",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let all = streams(2);
            let (capturing, other) = (all[0].clone(), all[1].clone());
            let (began_tx, began_rx) = mpsc::channel();
            let (made_tx, made_rx) = mpsc::channel::<()>();
            let capturer = std::thread::spawn(move || {
                device.set_current().unwrap();
                // SAFETY: nothing is allocated or freed on the stream while it captures.
                unsafe { capturing.begin_capture(CaptureMode::Global) }.unwrap();
                began_tx.send(()).unwrap();
                made_rx.recv().unwrap();
                capturing.end_capture()
            });
            began_rx.recv().unwrap();
            for _ in 0..4 {
                let pending = other.record_new(EventOptions::default()).unwrap();
                drop(pending);
                let again = device.create_event(EventOptions::default()).unwrap();
                other.record(&again).unwrap();
            }
            made_tx.send(()).unwrap();
            let ended = capturer.join().unwrap();
            assert!(ended.is_ok(), "{:?}", ended.err());
            other.sync().unwrap();
        },
    );
}

/// Whether every word of `buffer`, read back on `stream`, is `value`.
fn holds(buffer: &Buffer, stream: &Stream, value: u32) -> bool {
    buffer
        .to_vec::<u32>(stream)
        .unwrap()
        .iter()
        .all(|&x| x == value)
}

/// One thread begins a thread-local capture; another synchronises the device (its primary
/// context) meanwhile. The driver refuses a context's synchronisation while any stream of it
/// captures, whatever the capture's mode, and invalidates the capture: the H200 run found a
/// device test's `Device::sync` breaking the forked-capture test's capture on another thread.
/// So the synchronisation waits for the capture to end, and the capture ends valid.
fn a_device_sync_waits_out_another_threads_capture_body(check_data: bool) {
    let device = cuda_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(256, &stream)
        .unwrap();
    stream.sync().unwrap();
    let (began_tx, began_rx) = mpsc::channel();
    let ended = Arc::new(AtomicBool::new(false));
    let capturer = {
        let (stream, ended) = (stream.clone(), ended.clone());
        std::thread::spawn(move || {
            device.set_current().unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures, and the
            // buffer outlives the graph's launch (returned with it).
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            began_tx.send(()).unwrap();
            // Long enough for the other thread's synchronisation to reach the driver, had
            // nothing held it back.
            std::thread::sleep(std::time::Duration::from_millis(300));
            buffer.fill(7u32, &stream).unwrap();
            ended.store(true, Ordering::SeqCst);
            (stream.end_capture(), buffer)
        })
    };
    began_rx.recv().unwrap();
    // Catches a synchronisation made at once: refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
    device.sync().unwrap();
    // Catches a synchronisation that returned while the capture was still open.
    assert!(
        ended.load(Ordering::SeqCst),
        "the device's synchronisation returned before the other thread's capture ended"
    );
    let (graph, buffer) = capturer.join().unwrap();
    // Catches the capture invalidated by the synchronisation.
    let graph = graph.expect("the capture ended valid");
    assert_eq!(graph.node_count().unwrap(), 1, "the fill captured");
    if check_data {
        let exec = graph.instantiate(GraphOptions::default()).unwrap();
        exec.launch(&stream).unwrap();
        // Catches a graph that lost its fill.
        assert!(holds(&buffer, &stream, 7));
    }
}

#[test]
fn a_device_sync_waits_out_another_threads_capture() {
    standin::run(
        module_path!(),
        "a_device_sync_waits_out_another_threads_capture",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            a_device_sync_waits_out_another_threads_capture_body(false);
            // The driver saw the synchronisation after the capture's end.
            let log = standin::log();
            let end = log.find("cuStreamEndCapture").expect(&log);
            assert!(log.rfind("cuCtxSynchronize").expect(&log) > end, "{log}");
            assert!(!log.contains("-> 900"), "{log}");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_sync_waits_out_another_threads_capture_on_the_gpu() {
    common::alone(
        module_path!(),
        "a_device_sync_waits_out_another_threads_capture_on_the_gpu",
        || a_device_sync_waits_out_another_threads_capture_body(true),
    );
}

/// A thread synchronising the device while it captures itself is refused at once (it would
/// wait for ever on its own capture), and its capture is invalidated, as for a capturing
/// stream's synchronisation. Catches a gate that waits for the caller's own captures (the
/// watchdog ends the run) and one that hides the driver's refusal.
#[test]
fn a_device_sync_during_the_threads_own_capture_is_refused_not_waited() {
    standin::run(
        module_path!(),
        "a_device_sync_during_the_threads_own_capture_is_refused_not_waited",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            let _watchdog = common::Watchdog::new(
                std::time::Duration::from_secs(20),
                "a device synchronisation during the thread's own capture",
            );
            let device = cuda_core::Device::new(0).unwrap();
            device.set_current().unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let err = device.sync().unwrap_err();
            assert_eq!(
                err.driver_code(),
                Some(cuda_core::DriverCode::STREAM_CAPTURE_UNSUPPORTED),
                "the driver's refusal: {err}"
            );
            assert_eq!(stream.capture_status().unwrap(), CaptureStatus::Invalidated);
            assert!(matches!(stream.end_capture(), Err(Error::Capture { .. })));
            // Nothing counts the capture open any more: a synchronisation from another
            // thread returns at once.
            std::thread::spawn(move || device.sync().unwrap())
                .join()
                .unwrap();
        },
    );
}

/// While one thread's device synchronisation waits on work held back by a closed gate,
/// another thread's capture in the same context does not begin until it returned (a capture
/// begun under it could be invalidated by it), and then captures valid. Catches a gate that
/// only checks for open captures before the synchronisation.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_begins_after_a_device_sync_under_way() {
    common::alone(
        module_path!(),
        "a_capture_begins_after_a_device_sync_under_way",
        || {
            let device = cuda_core::Device::new(0).unwrap();
            device.set_current().unwrap();
            let all = streams(2);
            a_capture_begins_after_a_held_call(&all[0], all[1].clone(), move || device.sync());
        },
    );
}

/// While `call` (on another thread) waits on work held back by a gate closed on `held`, a
/// capture of `capturing` begun on a third thread does not begin until it returned, and then
/// captures valid.
fn a_capture_begins_after_a_held_call(
    held: &Stream,
    capturing: Stream,
    call: impl FnOnce() -> cuda_core::Result<()> + Send + 'static,
) {
    let device = capturing.device();
    let gate = common::Gate::close_for(held, std::time::Duration::from_secs(20));
    let synced = Arc::new(AtomicBool::new(false));
    let syncer = {
        let synced = synced.clone();
        std::thread::spawn(move || {
            device.set_current().unwrap();
            let result = call();
            synced.store(true, Ordering::SeqCst);
            result
        })
    };
    // The call is under way (the gate holds it) before the capture.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (began_tx, began_rx) = mpsc::channel();
    let capturer = {
        let synced = synced.clone();
        std::thread::spawn(move || {
            device.set_current().unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let after_sync = synced.load(Ordering::SeqCst);
            began_tx.send(()).unwrap();
            (after_sync, capturing.end_capture())
        })
    };
    // Catches a capture begun while the call waits.
    assert!(
        began_rx
            .recv_timeout(std::time::Duration::from_millis(300))
            .is_err(),
        "a capture began under the held call"
    );
    gate.open();
    syncer.join().unwrap().unwrap();
    let (after_sync, graph) = capturer.join().unwrap();
    assert!(
        after_sync,
        "the capture began before the held call returned"
    );
    // Catches a capture invalidated by the call.
    graph.expect("the capture ended valid");
}

/// Two buffers of 64 words for the legacy-stream tests: one homed on the device's legacy
/// default stream, one on `stream`, each idle.
fn legacy_and_captured_buffers(device: &cuda_core::Device, stream: &Stream) -> (Buffer, Buffer) {
    let legacy = device.default_stream().unwrap();
    let memory = device.memory_resource().unwrap();
    let on_legacy = memory.allocate(256, &legacy).unwrap();
    let captured = memory.allocate(256, stream).unwrap();
    legacy.sync().unwrap();
    stream.sync().unwrap();
    (on_legacy, captured)
}

/// A blocking stream (`non_blocking: false`), which the legacy default stream waits for.
fn blocking_stream(device: &cuda_core::Device) -> Stream {
    device
        .create_stream(StreamOptions::default().with_non_blocking(false))
        .unwrap()
}

/// What [`legacy_fill_beside_a_capture`] saw.
struct LegacyBeside {
    legacy: Stream,
    capturing: Stream,
    on_legacy: Buffer,
    /// The legacy stream's fill, made while the other thread's capture was open.
    refused: Result<(), Error>,
    /// Whether the capture ended after the fill returned (at most 10 s after it began).
    in_time: bool,
    graph: Result<cuda_core::Graph, Error>,
    /// Filled in the capture.
    captured: Buffer,
}

/// Another thread begins a thread-local capture of a new stream (`blocking` or not), waits for
/// this thread's fill of a buffer on the legacy default stream to return (at most 10 s: a fill
/// that waited for the capture's end would otherwise wait for ever), fills a buffer of its own
/// in the capture and ends it.
fn legacy_fill_beside_a_capture(blocking: bool) -> LegacyBeside {
    let device = cuda_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let legacy = device.default_stream().unwrap();
    let capturing = if blocking {
        blocking_stream(&device)
    } else {
        device.create_stream(StreamOptions::default()).unwrap()
    };
    let (mut on_legacy, mut captured) = legacy_and_captured_buffers(&device, &capturing);
    let (began_tx, began_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let capturer = {
        let capturing = capturing.clone();
        std::thread::spawn(move || {
            device.set_current().unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures, and the
            // buffer outlives the graph's launch (returned with it).
            unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            began_tx.send(()).unwrap();
            let in_time = go_rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .is_ok();
            captured.fill(7u32, &capturing).unwrap();
            (in_time, capturing.end_capture(), captured)
        })
    };
    began_rx.recv().unwrap();
    let refused = on_legacy.fill(3u32, &legacy);
    go_tx.send(()).unwrap();
    let (in_time, graph, captured) = capturer.join().unwrap();
    LegacyBeside {
        legacy,
        capturing,
        on_legacy,
        refused,
        in_time,
        graph,
        captured,
    }
}

/// One thread captures a blocking stream (thread-local); another fills a buffer on the legacy
/// default stream meanwhile. The driver refuses work on the legacy stream while a blocking
/// stream of its context captures (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`), whichever thread
/// captures and in whichever mode, and invalidates the capture: a safe fill on one thread
/// broke another thread's capture. So the crate refuses the fill before the driver (it does
/// not wait: the capturing thread here waits for the filling one), the capture ends valid, and
/// the fill, made again after it, runs.
fn legacy_work_beside_another_threads_blocking_capture_is_refused_body(check_data: bool) {
    let _watchdog = common::Watchdog::new(
        std::time::Duration::from_secs(20),
        "legacy-stream work beside another thread's capture",
    );
    let LegacyBeside {
        legacy,
        capturing,
        mut on_legacy,
        refused,
        in_time,
        graph,
        captured,
    } = legacy_fill_beside_a_capture(true);
    // Catches the driver's refusal let through (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, which
    // invalidates the capture) and a fill that ran.
    let err = refused.unwrap_err();
    assert!(
        matches!(&err, Error::Capture { .. }),
        "refused before the driver: {err}"
    );
    // Catches a fill that waited for the capture to end.
    assert!(
        in_time,
        "the legacy stream's fill waited for the other thread's capture"
    );
    // Catches the capture invalidated by the legacy stream's work.
    let graph = graph.expect("the capture ended valid");
    assert_eq!(graph.node_count().unwrap(), 1, "the fill captured");
    // Once the capture ended, the legacy stream takes work again.
    on_legacy.fill(3u32, &legacy).unwrap();
    legacy.sync().unwrap();
    if check_data {
        assert!(holds(&on_legacy, &legacy, 3));
        let exec = graph.instantiate(GraphOptions::default()).unwrap();
        exec.launch(&capturing).unwrap();
        // Catches a graph that lost its fill.
        assert!(holds(&captured, &capturing, 7));
    }
}

#[test]
fn legacy_work_beside_another_threads_blocking_capture_is_refused() {
    standin::run(
        module_path!(),
        "legacy_work_beside_another_threads_blocking_capture_is_refused",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            legacy_work_beside_another_threads_blocking_capture_is_refused_body(false);
            // The driver saw the legacy stream's fill only after the capture's end, and
            // refused nothing.
            let log = standin::log();
            let end = log.find("cuStreamEndCapture").expect(&log);
            let fill = log.find("value=3").expect(&log);
            assert!(fill > end, "{log}");
            assert!(!log.contains("-> 906"), "{log}");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn legacy_work_beside_another_threads_blocking_capture_is_refused_on_the_gpu() {
    common::alone(
        module_path!(),
        "legacy_work_beside_another_threads_blocking_capture_is_refused_on_the_gpu",
        || legacy_work_beside_another_threads_blocking_capture_is_refused_body(true),
    );
}

/// Legacy-stream work while the calling thread itself captures a blocking stream is refused
/// before the driver (which would invalidate the capture), and the capture stays valid.
/// Catches a gate that waits on the caller's own capture (the watchdog ends the run) and one
/// that lets the driver's refusal through (the capture then ends invalidated).
fn legacy_work_during_the_threads_own_blocking_capture_is_refused_body(check_data: bool) {
    let _watchdog = common::Watchdog::new(
        std::time::Duration::from_secs(20),
        "legacy-stream work during the thread's own capture",
    );
    let device = cuda_core::Device::new(0).unwrap();
    device.set_current().unwrap();
    let legacy = device.default_stream().unwrap();
    let capturing = blocking_stream(&device);
    let (mut on_legacy, mut captured) = legacy_and_captured_buffers(&device, &capturing);
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    captured.fill(7u32, &capturing).unwrap();
    let err = on_legacy.fill(3u32, &legacy).unwrap_err();
    assert!(
        matches!(&err, Error::Capture { .. }),
        "refused before the driver: {err}"
    );
    assert_eq!(capturing.capture_status().unwrap(), CaptureStatus::Active);
    let graph = capturing.end_capture().expect("the capture ended valid");
    assert_eq!(graph.node_count().unwrap(), 1, "only the captured fill");
    // Once the capture ended, the legacy stream takes work again.
    on_legacy.fill(3u32, &legacy).unwrap();
    legacy.sync().unwrap();
    if check_data {
        assert!(holds(&on_legacy, &legacy, 3));
    }
    drop(captured);
}

#[test]
fn legacy_work_during_the_threads_own_blocking_capture_is_refused() {
    standin::run(
        module_path!(),
        "legacy_work_during_the_threads_own_blocking_capture_is_refused",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            legacy_work_during_the_threads_own_blocking_capture_is_refused_body(false);
            assert!(!standin::log().contains("-> 906"), "{}", standin::log());
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn legacy_work_during_the_threads_own_blocking_capture_is_refused_on_the_gpu() {
    common::alone(
        module_path!(),
        "legacy_work_during_the_threads_own_blocking_capture_is_refused_on_the_gpu",
        || legacy_work_during_the_threads_own_blocking_capture_is_refused_body(true),
    );
}

/// A capture of a non-blocking stream on another thread does not stop legacy-stream work: the
/// driver takes it (the legacy stream does not wait for non-blocking streams), and the crate
/// must neither refuse it nor wait. The capturer waits for the legacy work to return before it
/// ends, at most 10 s: catches a gate that refuses or waits on every capture of the context
/// (an error, or the capture ending late) and a driver that refuses the work.
fn legacy_work_runs_beside_another_threads_non_blocking_capture_body(check_data: bool) {
    let LegacyBeside {
        legacy,
        on_legacy,
        refused,
        in_time,
        graph,
        captured,
        ..
    } = legacy_fill_beside_a_capture(false);
    // Catches a gate that refuses legacy work beside any capture, and a driver that refuses it.
    refused.unwrap();
    legacy.sync().unwrap();
    assert!(
        in_time,
        "the legacy stream's work waited for a non-blocking stream's capture"
    );
    graph.expect("the capture ended valid");
    if check_data {
        assert!(holds(&on_legacy, &legacy, 3));
    }
    drop(captured);
}

#[test]
fn legacy_work_runs_beside_another_threads_non_blocking_capture() {
    standin::run(
        module_path!(),
        "legacy_work_runs_beside_another_threads_non_blocking_capture",
        &[],
        &[("STANDIN_MODEL", "1")],
        || legacy_work_runs_beside_another_threads_non_blocking_capture_body(false),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn legacy_work_runs_beside_another_threads_non_blocking_capture_on_the_gpu() {
    common::alone(
        module_path!(),
        "legacy_work_runs_beside_another_threads_non_blocking_capture_on_the_gpu",
        || legacy_work_runs_beside_another_threads_non_blocking_capture_body(true),
    );
}

/// While one thread's synchronisation of the legacy default stream waits on work held back by
/// a closed gate, another thread's capture of a blocking stream does not begin until it
/// returned (the driver could refuse the legacy stream's call under it, invalidating the
/// capture), and then captures valid. Catches a gate that looks for open captures only
/// before the legacy call.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_blocking_capture_begins_after_a_legacy_call_under_way() {
    common::alone(
        module_path!(),
        "a_blocking_capture_begins_after_a_legacy_call_under_way",
        || {
            let device = cuda_core::Device::new(0).unwrap();
            device.set_current().unwrap();
            let legacy = device.default_stream().unwrap();
            let synced = legacy.clone();
            a_capture_begins_after_a_held_call(&legacy, blocking_stream(&device), move || {
                synced.sync()
            });
        },
    );
}

/// One thread begins relaxed captures of a stream over and over while another ends them: each
/// end comes before, amid or after a begin. Then a third thread synchronises the device, which
/// waits for other threads' open captures. Catches an end that fell between the driver's begin
/// and the crate's flag of it: the end found the stream unflagged and left the capture counted
/// open for good, so the synchronisation waited for ever (and the flag, raised after the end,
/// said the stream still captured).
#[test]
fn ends_racing_begins_leave_no_capture_counted_open() {
    standin::run(
        module_path!(),
        "ends_racing_begins_leave_no_capture_counted_open",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            let device = cuda_core::Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let rounds = 60_000;
            std::thread::scope(|t| {
                t.spawn(|| {
                    for _ in 0..rounds {
                        // SAFETY: nothing is allocated, freed or queued on the stream.
                        let _ = unsafe { stream.begin_capture(CaptureMode::Relaxed) };
                    }
                });
                t.spawn(|| {
                    for round in 0..rounds {
                        let _ = stream.end_capture();
                        if round % 1000 == 0 {
                            standin::clear_log();
                        }
                    }
                });
            });
            // The last begin's capture, if its end came first.
            let _ = stream.end_capture();
            assert_eq!(stream.capture_status().unwrap(), CaptureStatus::None);
            let (done, synced) = mpsc::channel();
            std::thread::spawn(move || {
                let _ = done.send(device.sync());
            });
            let synced = synced
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the device's synchronisation waits for a capture no thread has open");
            synced.unwrap();
        },
    );
}
