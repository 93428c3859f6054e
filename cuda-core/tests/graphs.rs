//! CUDA graphs: stream capture, instantiation and replay, checked in the results of the work
//! each launch of a graph does.

use crate::common;

use cuda_core::memory::{PinnedMemoryPool, PinnedMemoryPoolOptions};
use cuda_core::{
    launch, Allocate, CaptureMode, CaptureStatus, CodeType, DotOptions, Error, Graph, GraphOptions,
    LaunchConfig, Program, ProgramOptions, StreamOptions,
};

const PIPELINE: &str = r#"
extern "C" __global__ void twice(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" __global__ void plus_one(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
extern "C" __global__ void square(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= y[i];
}
extern "C" __global__ void add(const float* a, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a[i];
}
"#;

fn pipeline(x: f32) -> f32 {
    let y = 2.0 * x + 1.0;
    y * y
}

/// A three-kernel pipeline captured once and replayed: each launch of the graph computes from
/// the input as it is then (the graph reads the buffers at each launch, it did not keep the
/// values of the capture), the capture status reads active only while capturing, and the
/// graph has the three kernels as its nodes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_pipeline_replays_on_the_input_of_each_launch() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(PIPELINE, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = |name| code.get_kernel(name).unwrap();
    let (twice, plus_one, square) = (kernel("twice"), kernel("plus_one"), kernel("square"));
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let n = 1u32 << 20;
    let resource = device.memory_resource().unwrap();
    let mut x = resource.allocate(4 * n as usize, &stream).unwrap();
    let y = resource.allocate(4 * n as usize, &stream).unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    assert_eq!(stream.capture_status().unwrap(), CaptureStatus::None);
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    assert_eq!(stream.capture_status().unwrap(), CaptureStatus::Active);
    // SAFETY: n floats in x and y.
    unsafe {
        launch(&stream, &config, &twice, &[&x, &y, &n]).unwrap();
        launch(&stream, &config, &plus_one, &[&y, &n]).unwrap();
        launch(&stream, &config, &square, &[&y, &n]).unwrap();
    }
    let graph = stream.end_capture().unwrap();
    assert_eq!(stream.capture_status().unwrap(), CaptureStatus::None);
    // Catches a capture that ran the work instead of recording it: y is still unwritten.
    assert_eq!(graph.node_count().unwrap(), 3);
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.upload(&stream).unwrap();
    // The executable graph does not need its graph.
    drop(graph);
    for round in 0..4u32 {
        let input: Vec<f32> = (0..n)
            .map(|i| (i % 1000) as f32 * 0.01 + round as f32)
            .collect();
        x.copy_from_host(&input, &stream).unwrap();
        // SAFETY: the buffers and kernels outlive the launch (synchronised below).
        exec.launch(&stream).unwrap();
        let out = y.to_vec::<f32>(&stream).unwrap();
        let wrong = input
            .iter()
            .zip(&out)
            .filter(|(x, y)| (pipeline(**x) - **y).abs() > 1e-4 * pipeline(**x).abs().max(1.0))
            .count();
        assert_eq!(wrong, 0, "round {round}: {wrong} wrong of {n}");
    }
}

/// The same pipeline built by hand from three streams: forked through events from the
/// capturing stream and joined back, two branches at once; and a fork left unjoined is refused
/// at the end of the capture, saying so.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_forks_into_other_streams_and_must_join_them() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(PIPELINE, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let (twice, add) = (
        code.get_kernel("twice").unwrap(),
        code.get_kernel("add").unwrap(),
    );
    let streams: Vec<_> = (0..3)
        .map(|_| device.create_stream(StreamOptions::default()).unwrap())
        .collect();
    let [s0, s1, s2] = [&streams[0], &streams[1], &streams[2]];
    let n = 1u32 << 16;
    let resource = device.memory_resource().unwrap();
    let mut x = resource.allocate(4 * n as usize, s0).unwrap();
    let mut a = resource.allocate(4 * n as usize, s0).unwrap();
    let b = resource.allocate(4 * n as usize, s0).unwrap();
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    x.copy_from_host(&input, s0).unwrap();
    a.fill(0u32, s0).unwrap();
    s0.sync().unwrap();
    // Raw addresses: the streams are ordered by the capture's own events here.
    let (x_at, a_at, b_at) = (x.ptr(), a.ptr(), b.ptr());
    let config = LaunchConfig::for_elements(n.into(), 256);
    let event = || device.create_event(Default::default()).unwrap();
    let (fork, join1, join2) = (event(), event(), event());
    // (Thread-local: a global capture would make other tests' allocations fail meanwhile;
    // global mode is tested alone below.)
    // SAFETY: nothing is allocated or freed on the streams while they capture.
    unsafe { s0.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    s0.record(&fork).unwrap();
    s1.wait(&fork).unwrap();
    s2.wait(&fork).unwrap();
    // Both branches joined the capture.
    assert_eq!(s1.capture_status().unwrap(), CaptureStatus::Active);
    // SAFETY: n floats at each address, alive until the end of the test.
    unsafe {
        launch(s1, &config, &twice, &[&x_at, &a_at, &n]).unwrap();
        launch(s2, &config, &twice, &[&x_at, &b_at, &n]).unwrap();
    }
    s1.record(&join1).unwrap();
    s2.record(&join2).unwrap();
    s0.wait(&join1).unwrap();
    s0.wait(&join2).unwrap();
    // SAFETY: as above.
    unsafe { launch(s0, &config, &add, &[&b_at, &a_at, &n]).unwrap() };
    let graph = s0.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 3);
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    // SAFETY: the buffers outlive the launch (synchronised below).
    exec.launch(s0).unwrap();
    let out = a.to_vec::<f32>(s0).unwrap();
    // a = 2x + 2x: both branches ran before the join.
    assert!(input.iter().zip(&out).all(|(x, a)| *a == 4.0 * x));
    // Left unjoined: s1's work is not waited for by s0.
    // SAFETY: as above.
    unsafe { s0.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    s0.record(&fork).unwrap();
    s1.wait(&fork).unwrap();
    // SAFETY: as above.
    unsafe { launch(s1, &config, &twice, &[&x_at, &a_at, &n]).unwrap() };
    let err = s0.end_capture().unwrap_err();
    assert!(
        matches!(&err, Error::Capture { reason } if reason.contains("not joined")),
        "{err}"
    );
    // The streams are usable again afterwards.
    assert_eq!(s1.capture_status().unwrap(), CaptureStatus::None);
    s1.sync().unwrap();
}

/// A synchronisation during a capture fails and invalidates it; ending it then says why, and
/// ending a stream that never captured is refused too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_invalidated_capture_and_a_stray_end_are_clear_errors() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let err = stream.end_capture().unwrap_err();
    assert!(
        matches!(&err, Error::Capture { reason } if reason.contains("not capturing")),
        "{err}"
    );
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::Relaxed) }.unwrap();
    let sync = stream.sync();
    assert!(
        sync.is_err(),
        "a synchronisation inside a capture: {sync:?}"
    );
    assert_eq!(stream.capture_status().unwrap(), CaptureStatus::Invalidated);
    let err = stream.end_capture().unwrap_err();
    assert!(
        matches!(&err, Error::Capture { reason } if reason.contains("invalidated")),
        "{err}"
    );
    assert_eq!(stream.capture_status().unwrap(), CaptureStatus::None);
    stream.sync().unwrap();
}

/// An empty graph, its clone, and a graph written as DOT (the kernels by name; verbose says
/// more).
#[test]
#[ignore = "needs a CUDA GPU"]
fn graphs_are_made_empty_cloned_and_written_as_dot() {
    let device = common::device();
    device.set_current().unwrap();
    let empty = Graph::new(device).unwrap();
    assert_eq!(empty.node_count().unwrap(), 0);
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let exec = empty.instantiate(GraphOptions::default()).unwrap();
    // SAFETY: an empty graph uses nothing.
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    let code = Program::new(PIPELINE, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let square = code.get_kernel("square").unwrap();
    let mut y = device
        .memory_resource()
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    y.fill(0u32, &stream).unwrap();
    let n = 1024u32;
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    for _ in 0..2 {
        // SAFETY: 1024 floats in y.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::new([4, 1, 1], [256, 1, 1]),
                &square,
                &[&y, &n],
            )
        }
        .unwrap();
    }
    let graph = stream.end_capture().unwrap();
    let clone = graph.try_clone().unwrap();
    assert_eq!(clone.node_count().unwrap(), 2);
    drop(graph);
    let plain = clone.to_dot(DotOptions::default()).unwrap();
    let verbose = clone
        .to_dot(DotOptions::default().with_verbose(true))
        .unwrap();
    println!(
        "DOT: {} bytes plain, {} verbose",
        plain.len(),
        verbose.len()
    );
    assert!(
        plain.contains("digraph") && plain.contains("square"),
        "{plain}"
    );
    assert!(verbose.len() > plain.len());
    // A path the driver cannot take (a NUL byte) is refused before it.
    let err = clone
        .write_dot("bad\0name.dot", DotOptions::default())
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { name: "path", .. }));
    // Options reach the driver: instantiation flags are taken.
    let flagged = clone
        .instantiate(
            GraphOptions::default()
                .with_use_node_priority(true)
                .with_auto_free_on_launch(true),
        )
        .unwrap();
    // SAFETY: y and the kernel outlive the launch.
    flagged.launch(&stream).unwrap();
    stream.sync().unwrap();
}

/// Global mode, in a process of its own: while a global capture is open, another thread's
/// stream-ordered allocation is refused by the driver (a synchronisation of its own stream is
/// not: the crate makes it with the thread's capture mode relaxed); once it ends, the same
/// allocation works. A stream dropped with its capture open ends it, so the other thread can allocate
/// again then too.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_global_capture_forbids_other_threads_allocations_until_it_ends() {
    common::alone(
        module_path!(),
        "a_global_capture_forbids_other_threads_allocations_until_it_ends",
        || {
            let device = common::device();
            device.set_current().unwrap();
            // Whether another thread's allocation, and a synchronisation of its own stream,
            // are allowed.
            let allocate_elsewhere = move || {
                std::thread::spawn(move || {
                    device.set_current().unwrap();
                    let stream = device.create_stream(StreamOptions::default()).unwrap();
                    let got = device.memory_resource().unwrap().allocate(1 << 20, &stream);
                    let allocated = got.is_ok();
                    drop(got);
                    // Bug caught: a synchronisation of a stream of its own, made in the
                    // thread's own capture mode, refused during the other thread's global
                    // capture (and invalidating it).
                    let synced = stream.sync();
                    assert!(synced.is_ok(), "the sync: {synced:?}");
                    allocated
                })
                .join()
                .unwrap()
            };
            // The control: the allocation works with no capture open.
            assert!(allocate_elsewhere());
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: nothing is allocated or freed on the stream while it captures.
            unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
            assert!(!allocate_elsewhere(), "allowed during a global capture");
            // The driver counts another thread's refused calls against a global capture: it
            // is invalidated (seen under both ABIs on the 580 driver), and ends here.
            let ended = stream.end_capture();
            println!("a global capture after another thread's refused calls: {ended:?}");
            assert!(
                matches!(&ended, Err(Error::Capture { reason }) if reason.contains("invalidated")),
                "{ended:?}"
            );
            assert!(allocate_elsewhere(), "refused after the capture ended");
            // Thread-local: the other thread is not held back.
            // SAFETY: as above.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            assert!(
                allocate_elsewhere(),
                "refused during a thread-local capture"
            );
            stream.end_capture().unwrap();
            // Dropped with a global capture open: the drop ends it.
            // SAFETY: as above.
            unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
            drop(stream);
            assert!(
                allocate_elsewhere(),
                "refused after the capturing stream was dropped"
            );
        },
    );
}

/// The driver calls of a capture's end, against the stand-in: a stream dropped with its
/// capture open ends it, destroys the graph it gives, and is destroyed rather than kept for
/// reuse; a capture ended by hand leaves the stream to be reused as usual; ending a stream that
/// was not capturing is `Error::Capture`.
#[test]
fn a_stream_dropped_mid_capture_ends_it_and_is_not_reused() {
    use crate::common::standin;
    common::standin::run(
        module_path!(),
        "a_stream_dropped_mid_capture_ends_it_and_is_not_reused",
        &[],
        &[],
        || {
            std::thread::spawn(|| {
                let device = cuda_core::Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let err = stream.end_capture().unwrap_err();
                assert!(
                    matches!(&err, Error::Capture { reason } if reason.contains("not capturing")),
                    "{err}"
                );
                // SAFETY: the stand-in runs nothing.
                unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
                assert_eq!(stream.capture_status().unwrap(), CaptureStatus::Active);
                standin::clear_log();
                drop(stream);
                let log = standin::log();
                assert_eq!(standin::calls("cuStreamEndCapture").len(), 1, "{log}");
                assert_eq!(standin::calls("cuGraphDestroy g").len(), 1, "{log}");
                assert_eq!(standin::calls("cuStreamDestroy").len(), 1, "{log}");
                // Ended by hand: the drop ends nothing, and the stream is kept for reuse.
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                // SAFETY: as above.
                unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                drop(stream.end_capture().unwrap());
                standin::clear_log();
                drop(stream);
                let log = standin::log();
                assert!(standin::calls("cuStreamEndCapture").is_empty(), "{log}");
                assert!(standin::calls("cuStreamDestroy").is_empty(), "{log}");
                // The mode reaches the driver (relaxed is 2).
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                standin::clear_log();
                // SAFETY: as above.
                unsafe { stream.begin_capture(CaptureMode::Relaxed) }.unwrap();
                assert!(standin::log().contains("mode=2"), "{}", standin::log());
                drop(stream.end_capture().unwrap());
            })
            .join()
            .unwrap();
        },
    );
}

/// Pinned-pool memory that captured work used, then the pool's access revoked: the captured
/// graph's launch is refused, as a graph built node by node is (the driver would fault on the
/// graph's work rather than refuse it), and launches again once access is granted again. Bug
/// caught: a captured graph knew nothing of its memory and launched without access.
fn a_captured_graph_checks_revoked_pool_access_body(options: PinnedMemoryPoolOptions, gpu: bool) {
    let device = cuda_core::Device::new(0).unwrap();
    let stream = common::stream(device);
    let Ok(pool) = PinnedMemoryPool::new(device, options) else {
        common::not_run("host-pools", "no pool of host NUMA memory");
        return;
    };
    let mut host = pool.allocate(64, &stream).unwrap();
    stream.sync().unwrap();
    // SAFETY: nothing is allocated or freed on the stream while it captures, and `host`
    // outlives every launch of the graph (dropped after the executable graph).
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    host.fill(7u32, &stream).unwrap();
    let graph = stream.end_capture().unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    pool.set_access(&[]).unwrap();
    if !gpu {
        common::standin::clear_log();
    }
    let err = exec.launch(&stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("not accessible")),
        "{err:?}"
    );
    if !gpu {
        // Refused before the driver.
        let log = common::standin::log();
        assert!(!log.contains("cuGraphLaunch"), "{log}");
    }
    // Catches a check that stays refused (or a gate left entered, which a revocation would
    // wait for): granted again, the graph launches again.
    pool.set_access(&[device]).unwrap();
    host.fill(0u32, &stream).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    if gpu {
        let mut back = vec![0u32; 16];
        host.copy_to_host(&mut back, &stream).unwrap();
        assert_eq!(back, [7; 16], "the graph's fill did not run");
    }
    drop(exec);
}

#[test]
fn a_captured_graph_checks_revoked_pool_access() {
    common::standin::run(
        module_path!(),
        "a_captured_graph_checks_revoked_pool_access",
        &[],
        &[],
        || {
            a_captured_graph_checks_revoked_pool_access_body(
                PinnedMemoryPoolOptions::default(),
                false,
            )
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_graph_checks_revoked_pool_access_on_the_gpu() {
    a_captured_graph_checks_revoked_pool_access_body(
        PinnedMemoryPoolOptions::default().with_numa_node(0),
        true,
    );
}

/// A captured graph's launches are ordered with the streams of the buffers its work used
/// (as a graph built node by node's are): another stream's buffer, and the capture's own
/// stream where the graph launches on another. On the capture's stream with its own buffers
/// a launch is one driver call.
#[test]
fn a_captured_graph_is_ordered_with_its_buffers_streams() {
    use crate::common::standin;
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "a_captured_graph_is_ordered_with_its_buffers_streams",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = cuda_core::Device::new(0).unwrap();
                let kernel = cuda_core::ObjectCode::from_cubin(standin::cubin())
                    .get_kernel("k1")
                    .unwrap();
                let config = LaunchConfig::for_elements(1, 1);
                let (origin, home, elsewhere) = (
                    common::stream(device),
                    common::stream(device),
                    common::stream(device),
                );
                let pool = device.memory_resource().unwrap();
                let own = pool.allocate(64, &origin).unwrap();
                let other = pool.allocate(64, &home).unwrap();
                let capture = |buffer: &cuda_core::Buffer| {
                    // SAFETY: the stand-in runs nothing; the buffers outlive the graphs.
                    unsafe { origin.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                    // SAFETY: as above.
                    unsafe { launch(&origin, &config, &kernel, &[buffer]) }.unwrap();
                    origin
                        .end_capture()
                        .unwrap()
                        .instantiate(GraphOptions::default())
                        .unwrap()
                };
                let graph = capture(&own);
                standin::clear_log();
                graph.launch(&origin).unwrap();
                // Catches a cost on the plain case: one launch, nothing else.
                assert_eq!(standin::log().lines().count(), 1, "{}", standin::log());
                standin::clear_log();
                graph.launch(&elsewhere).unwrap();
                let log = standin::log();
                // Catches a launch on another stream unordered with the capture's stream,
                // whose work before the capture (the buffer's allocation) it then races.
                let wait = log.find("cuStreamWaitEvent").expect(&log);
                assert!(wait < log.find("cuGraphLaunch").expect(&log), "{log}");

                let graph = capture(&other);
                standin::clear_log();
                graph.launch(&origin).unwrap();
                let log = standin::log();
                // Catches the other stream's buffer used without waiting for its stream (the
                // capture could not wait across its boundary), and that stream not waiting
                // for the launch (a later free there would race it).
                let launched = log.find("cuGraphLaunch").expect(&log);
                let waits: Vec<usize> = log
                    .match_indices("cuStreamWaitEvent")
                    .map(|m| m.0)
                    .collect();
                assert!(waits.iter().any(|&w| w < launched), "{log}");
                assert!(waits.iter().any(|&w| w > launched), "{log}");

                // Launched on the other buffer's own stream while the capture's stream
                // captures again: its work used no buffer of the capture's stream, which it
                // is not ordered with (catches an order with it, which the capture would
                // refuse, or which would pull the launch into it).
                // SAFETY: as above.
                unsafe { origin.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                standin::clear_log();
                graph.launch(&home).unwrap();
                assert_eq!(standin::log().lines().count(), 1, "{}", standin::log());
                drop(origin.end_capture().unwrap());
            },
        );
    }
}

/// A graph of the primary context is refused on a green context's stream (review N15): it
/// would run its kernels on every SM, outside the green context's. Bug caught: only the device
/// was compared, and the launch went to the driver. The stream's own context's graph launches.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_is_refused_on_a_stream_of_another_context() {
    use cuda_core::{BuildGraph, ContextOptions, SmSplitOptions};
    let _green = common::green_contexts();
    let device = common::device();
    let sms = device.resources().sm().unwrap();
    let align = sms.coscheduled_alignment().unwrap_or(8).max(1);
    let split = sms
        .split(SmSplitOptions::groups_of(align).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    let green_stream = green.create_stream(StreamOptions::default()).unwrap();
    let mut graph = Graph::new(device).unwrap();
    graph.add_empty(&[]).unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    for refused in [
        exec.launch(&green_stream).map(|_| ()),
        exec.upload(&green_stream).map(|_| ()),
        graph
            .instantiate_uploaded(GraphOptions::default(), &green_stream)
            .map(|_| ()),
    ] {
        let err = refused.unwrap_err();
        assert!(
            matches!(&err, cuda_core::Error::InvalidArgument { name: "stream", reason } if reason.contains("green context")),
            "{err:?}"
        );
    }
    // A graph captured on the green context's stream is its own, and launches there.
    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { green_stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let captured = green_stream.end_capture().unwrap();
    let mine = captured.instantiate(GraphOptions::default()).unwrap();
    mine.launch(&green_stream).unwrap();
    green_stream.sync().unwrap();
    // And the primary context's graph still launches on its own streams.
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
}
