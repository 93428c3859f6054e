//! Graphs built node by node: each node kind's work checked in its results, the graph's walk,
//! structural lifetimes (a queued graph keeps what it uses, and lets it go after), updates in
//! place, memory nodes, and bad inputs refused before the driver.

use crate::common::stream;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

use cuda_core::{
    graph_releases, launch, wait_for_graph_releases, Allocate, Buffer, BuildGraph, CaptureMode,
    CodeType, Device, DeviceMemoryResource, DeviceMemoryResourceOptions, Error, EventOptions,
    Graph, GraphOptions, LaunchConfig, NodeKind, Program, ProgramOptions, Stream,
};

const KERNELS: &str = r#"
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
extern "C" __global__ void scale(float* y, const float* x, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
extern "C" __global__ void iota(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 3u * i + 1u;
}
extern "C" __global__ void copy_u32(unsigned* dst, const unsigned* src, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
"#;

/// A kernel that spins for `cycles` clock cycles before adding one to each element of `x`
/// into `out`, in a module that holds 2 GiB of device memory of its own.
const BALLAST: &str = r#"
__device__ char ballast[1u << 31];
extern "C" __global__ void late_plus_one(const unsigned* x, unsigned* out, unsigned n,
                                         long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + 1u;
    if (n == 0) ballast[i] = 1;
}
"#;

pub(crate) fn compile(source: &str) -> cuda_core::ObjectCode {
    // Current, so that the compile asks the device's architecture of it (with no context
    // current, asking makes a failing driver call that compute-sanitizer reports).
    common::device().set_current().unwrap();
    Program::new(source, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap()
}

fn floats(device: Device, stream: &Stream, values: &[f32]) -> Arc<Buffer> {
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4 * values.len(), stream)
        .unwrap();
    buffer.copy_from_host(values, stream).unwrap();
    Arc::new(buffer)
}

fn zeroed(device: Device, stream: &Stream, bytes: usize) -> Arc<Buffer> {
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(bytes, stream)
        .unwrap();
    buffer.fill(0u8, stream).unwrap();
    Arc::new(buffer)
}

/// The three-kernel pipeline built node by node computes what the captured one does (and
/// the CPU), and the graph walks as built: its nodes, edges, root, each node's neighbours,
/// kinds and launch shape.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pipeline_built_node_by_node_matches_the_captured_one_and_walks_as_built() {
    let device = common::device();
    let code = compile(KERNELS);
    let kernel = |name| code.get_kernel(name).unwrap();
    let (twice, plus_one, square) = (kernel("twice"), kernel("plus_one"), kernel("square"));
    let stream = stream(device);
    let n = 1u32 << 18;
    let input: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.25 - 7.0).collect();
    let x = floats(device, &stream, &input);
    let y = zeroed(device, &stream, 4 * n as usize);
    let config = LaunchConfig::for_elements(n.into(), 256);
    let mut graph = Graph::new(device).unwrap();
    // SAFETY: each kernel reads and writes n floats of buffers of n floats.
    let (a, b, c) = unsafe {
        let a = graph
            .add_kernel(&[], &config, &twice, &[&x, &y, &n])
            .unwrap();
        let b = graph
            .add_kernel(&[a], &config, &plus_one, &[&y, &n])
            .unwrap();
        let c = graph.add_kernel(&[b], &config, &square, &[&y, &n]).unwrap();
        (a, b, c)
    };
    // The walk: a wrong edge list, root or neighbour query fails these.
    let nodes: HashSet<_> = graph.nodes().unwrap().into_iter().collect();
    assert_eq!(nodes, HashSet::from([a, b, c]));
    let edges: HashSet<_> = graph.edges().unwrap().into_iter().collect();
    assert_eq!(edges, HashSet::from([(a, b), (b, c)]));
    assert_eq!(graph.root_nodes().unwrap(), [a]);
    assert_eq!(graph.dependencies(c).unwrap(), [b]);
    assert_eq!(graph.dependents(a).unwrap(), [b]);
    assert!(graph.dependencies(a).unwrap().is_empty());
    assert_eq!(graph.node_kind(b).unwrap(), NodeKind::Kernel);
    let shape = graph.kernel_node(a).unwrap();
    assert_eq!((shape.grid, shape.block), (config.grid, config.block));
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    let built = y.to_vec::<f32>(&stream).unwrap();
    let expected: Vec<f32> = input
        .iter()
        .map(|&x| (2.0 * x + 1.0) * (2.0 * x + 1.0))
        .collect();
    assert_eq!(built, expected);

    // The same pipeline captured.
    let (x_at, y_at) = (x.ptr(), y.ptr());
    y.to_vec::<f32>(&stream).unwrap();
    // SAFETY: nothing is allocated or freed on the stream while it captures; the buffers
    // outlive the graph's launch below.
    unsafe {
        stream.begin_capture(CaptureMode::ThreadLocal).unwrap();
        launch(&stream, &config, &twice, &[&x_at, &y_at, &n]).unwrap();
        launch(&stream, &config, &plus_one, &[&y_at, &n]).unwrap();
        launch(&stream, &config, &square, &[&y_at, &n]).unwrap();
    }
    let captured = stream.end_capture().unwrap();
    // Reset y first, so that the captured graph's own result is read.
    let mut zero = Graph::new(device).unwrap();
    zero.add_fill(&[], &y, 0u32).unwrap();
    zero.instantiate(GraphOptions::default())
        .unwrap()
        .launch(&stream)
        .unwrap();
    assert!(y.to_vec::<f32>(&stream).unwrap().iter().all(|&v| v == 0.0));
    captured
        .instantiate(GraphOptions::default())
        .unwrap()
        .launch(&stream)
        .unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), built);
}

/// Copies (device to device, and from host data the graph owns), a host function, a child
/// graph, an empty join and an event record each do their work on every launch, in the
/// order of their edges; an event wait node holds its graph back until the event's record.
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_node_kind_does_its_work_on_every_launch() {
    // In a process of its own: its gate holds the driver's host-function thread, which the
    // release of other tests' graphs needs.
    common::alone(
        module_path!(),
        "each_node_kind_does_its_work_on_every_launch",
        || {
            let device = common::device();
            let (s1, s2) = (stream(device), stream(device));
            let n = 1usize << 16;
            let a = zeroed(device, &s1, 4 * n);
            let b = zeroed(device, &s1, 4 * n);
            let c = zeroed(device, &s1, 4 * n);
            let d = zeroed(device, &s1, 4 * n);
            let runs = Arc::new(AtomicU32::new(0));
            let mut child = Graph::new(device).unwrap();
            child.add_fill(&[], &c, 9u32).unwrap();
            let mut graph = Graph::new(device).unwrap();
            let values: Vec<u32> = (0..n as u32).map(|i| i * 7 + 3).collect();
            let from_host = graph.add_copy_from_host(&[], values.clone(), &a).unwrap();
            let copy = graph.add_copy(&[from_host], &a, &b).unwrap();
            let counter = runs.clone();
            let host = graph
                .add_host(&[copy], move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            let embedded = graph.add_child(&[], &child).unwrap();
            // The child was copied in: a change to it now does not reach the graph.
            child.add_fill(&[], &d, 1u32).unwrap();
            let join = graph.add_empty(&[host, embedded]).unwrap();
            let event = Arc::new(device.create_event(EventOptions::default()).unwrap());
            let record = graph.add_event_record(&[join], &event).unwrap();
            let kinds: Vec<NodeKind> = [from_host, copy, host, embedded, join, record]
                .into_iter()
                .map(|node| graph.node_kind(node).unwrap())
                .collect();
            assert_eq!(
                kinds,
                [
                    NodeKind::Memcpy,
                    NodeKind::Memcpy,
                    NodeKind::Host,
                    NodeKind::ChildGraph,
                    NodeKind::Empty,
                    NodeKind::EventRecord
                ]
            );
            let exec = graph.instantiate(GraphOptions::default()).unwrap();
            drop(graph);
            drop(child);

            // A second graph waits on the event before filling d.
            let mut waiter = Graph::new(device).unwrap();
            let wait = waiter.add_event_wait(&[], &event).unwrap();
            assert_eq!(waiter.node_kind(wait).unwrap(), NodeKind::EventWait);
            waiter.add_fill(&[wait], &d, 5u32).unwrap();
            let waiter = waiter.instantiate(GraphOptions::default()).unwrap();
            s2.sync().unwrap();

            let _watchdog = common::Watchdog::new(Duration::from_secs(60), "the event-wait graph");
            let gate = common::Gate::close(&s1);
            exec.launch(&s1).unwrap();
            waiter.launch(&s2).unwrap();
            // The record is queued behind the gate: the event is not complete, and the waiting graph
            // has not filled d (a record node that records nothing, or a wait that does not wait,
            // fails one of these).
            assert!(!event.is_done().unwrap());
            assert!(!s2.is_done().unwrap());
            gate.open();
            s2.sync().unwrap();
            assert!(event.is_done().unwrap());
            assert!(d.to_vec::<u32>(&s2).unwrap().iter().all(|&v| v == 5));
            exec.launch(&s1).unwrap();
            s1.sync().unwrap();
            assert_eq!(b.to_vec::<u32>(&s1).unwrap(), values, "the two copies");
            assert!(
                c.to_vec::<u32>(&s1).unwrap().iter().all(|&v| v == 9),
                "the child"
            );
            assert_eq!(
                runs.load(Ordering::SeqCst),
                2,
                "the host node, once per launch"
            );
            // d was filled by the waiter only (the child's later fill of d is not in the graph).
            assert!(d.to_vec::<u32>(&s1).unwrap().iter().all(|&v| v == 5));
        },
    );
}

/// A graph's allocation node gives memory that its kernels use and its free node returns:
/// the device's graph memory is in use while the graph runs and not after, and trimming
/// gives the reserve back.
#[test]
#[ignore = "needs a CUDA GPU"]
fn memory_nodes_allocate_and_free_graph_memory() {
    let _graph_memory = common::graph_memory();
    let device = common::device();
    let code = compile(KERNELS);
    let (iota, copy) = (
        code.get_kernel("iota").unwrap(),
        code.get_kernel("copy_u32").unwrap(),
    );
    let stream = stream(device);
    let n = 1u32 << 20;
    let bytes = 4 * n as usize;
    let out = zeroed(device, &stream, bytes);
    let config = LaunchConfig::for_elements(n.into(), 256);
    let mut graph = Graph::new(device).unwrap();
    let allocation = graph.add_alloc(&[], bytes).unwrap();
    assert_eq!(allocation.size(), bytes);
    assert_ne!(allocation.ptr().0, 0);
    let at = allocation.ptr();
    // SAFETY: n unsigned ints at `at` while the graph runs between its alloc and free nodes;
    // `out` holds n.
    let used = unsafe {
        let fill = graph
            .add_kernel(&[allocation.node()], &config, &iota, &[&at, &n])
            .unwrap();
        graph
            .add_kernel(&[fill], &config, &copy, &[&out, &at, &n])
            .unwrap()
    };
    let alloc_node = allocation.node();
    let free = graph.add_free(&[used], allocation).unwrap();
    assert_eq!(graph.node_kind(alloc_node).unwrap(), NodeKind::MemAlloc);
    assert_eq!(graph.node_kind(free).unwrap(), NodeKind::MemFree);
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    device.trim_graph_memory().unwrap();
    let before = device.graph_memory_usage().unwrap();
    // A graph whose allocation was not freed is refused a second launch: both launching
    // shows the free node freed it.
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    let after = device.graph_memory_usage().unwrap();
    let expected: Vec<u32> = (0..n).map(|i| 3 * i + 1).collect();
    assert_eq!(out.to_vec::<u32>(&stream).unwrap(), expected);
    // The graph holds graph memory for its allocation (in the driver's granules)...
    assert!(
        after.used_current >= before.used_current + bytes as u64,
        "{after:?}"
    );
    assert!(after.reserved_current >= bytes as u64, "{after:?}");
    // ...until it is destroyed; then trimming gives the memory back.
    drop(exec);
    drop(graph);
    device.trim_graph_memory().unwrap();
    let trimmed = device.graph_memory_usage().unwrap();
    assert_eq!(trimmed.used_current, before.used_current, "{trimmed:?}");
    assert!(
        trimmed.reserved_current < after.reserved_current,
        "{trimmed:?}"
    );
}

/// Every handle a queued graph uses may be dropped while it is queued: the executable graph,
/// the graph, the kernel and its code, and the last user handle of a buffer it reads (whose
/// deallocation stream is another stream). All stay alive until the launch is done (the
/// buffer still allocated, the module's 2 GiB still held) and are released after it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_queued_graph_keeps_what_it_uses_until_done_and_releases_it_after() {
    // In a process of its own: the releases it counts are its own.
    common::alone(
        module_path!(),
        "a_queued_graph_keeps_what_it_uses_until_done_and_releases_it_after",
        || {
            let device = common::device();
            let (a, b) = (stream(device), stream(device));
            let pool =
                DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
            let n = 1u32 << 16;
            // This process's memory (NVML), not the device's free memory, which the other
            // tests of the binary move meanwhile (by more than the module's 2 GiB on the H200).
            let Some(before_code) = common::own_memory(device) else {
                return;
            };
            let code = compile(BALLAST);
            let kernel = code.get_kernel("late_plus_one").unwrap();
            let mut x = pool.allocate(4 * n as usize, &b).unwrap();
            let values: Vec<u32> = (0..n).map(|i| i ^ 0x5a5a).collect();
            x.copy_from_host(&values, &b).unwrap();
            let x = Arc::new(x);
            let out = zeroed(device, &a, 4 * n as usize);
            let config = LaunchConfig::for_elements(n.into(), 256);
            // About a second on the H200 (1.98 GHz): long enough that the checks below run while
            // the launch is queued.
            let cycles = 2_000_000_000i64;
            let mut graph = Graph::new(device).unwrap();
            // SAFETY: the kernel reads n of x's and writes n of out's unsigned ints.
            unsafe {
                graph
                    .add_kernel(&[], &config, &kernel, &[&x, &out, &n, &cycles])
                    .unwrap();
            }
            let exec = graph.instantiate(GraphOptions::default()).unwrap();
            // One launch of its own without the wait, so that the module is loaded (the 13
            // driver loads it at its first launch).
            // SAFETY: as above.
            unsafe { launch(&a, &config, &kernel, &[&*x, &*out, &n, &0i64]) }.unwrap();
            a.sync().unwrap();
            let loaded = common::own_memory(device).unwrap();
            assert!(
                loaded.saturating_sub(before_code) >= 3 << 29,
                "the module's 2 GiB are held once loaded: {before_code} then {loaded}"
            );
            let used_before = pool.usage().unwrap().used_current;
            assert!(used_before >= 4 * u64::from(n));
            let since = graph_releases();
            drop((graph, kernel, code, x));
            let _watchdog = common::Watchdog::new(Duration::from_secs(120), "the late kernel");
            exec.launch(&a).unwrap();
            drop(exec);
            // Queued, with no user handle left: still allocated, still loaded.
            assert_eq!(pool.usage().unwrap().used_current, used_before);
            let queued = common::own_memory(device).unwrap();
            assert!(
                queued + (512 << 20) > loaded,
                "the module was unloaded early: {loaded} then {queued}"
            );
            a.sync().unwrap();
            let plus_one: Vec<u32> = values.iter().map(|v| v + 1).collect();
            assert_eq!(out.to_vec::<u32>(&a).unwrap(), plus_one);
            // Released after the launch: the buffer freed (on its own stream), the module unloaded.
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut seen = since;
            while pool.usage().unwrap().used_current != 0 {
                let left = deadline.saturating_duration_since(Instant::now());
                assert!(
                    wait_for_graph_releases(seen, left),
                    "the graph's buffer was not released within 30 s"
                );
                seen = graph_releases();
                b.sync().unwrap();
            }
            let after = common::own_memory(device).unwrap();
            assert!(
                after + (3 << 29) <= queued,
                "the module's 2 GiB came back: {queued} then {after}"
            );
        },
    );
}

/// A graph's clone keeps alive what the graph keeps, and runs with the original gone; the
/// clone's copy of a node is found from the original's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_clone_keeps_what_its_graph_keeps() {
    let device = common::device();
    let stream = stream(device);
    let buffer = zeroed(device, &stream, 1 << 20);
    let weak = Arc::downgrade(&buffer);
    let mut graph = Graph::new(device).unwrap();
    let fill = graph.add_fill(&[], &buffer, 0x0101_0101u32).unwrap();
    let mut clone = graph.try_clone().unwrap();
    let copied = graph.find_in_clone(fill, &mut clone).unwrap();
    assert_ne!(copied, fill);
    assert_eq!(clone.node_kind(copied).unwrap(), NodeKind::Memset);
    // The original's node is not the clone's.
    assert!(clone.node_kind(fill).is_err());
    let exec = clone.instantiate(GraphOptions::default()).unwrap();
    let reader = Arc::clone(&buffer);
    drop((graph, clone, buffer));
    assert!(weak.upgrade().is_some());
    exec.launch(&stream).unwrap();
    assert!(reader
        .to_vec::<u8>(&stream)
        .unwrap()
        .iter()
        .all(|&v| v == 1));
}

/// An executable graph updates in place from its changed graph (a kernel argument), takes a
/// kernel-node change of its own, and refuses an update that changes the topology with the
/// driver's reason, left as it was.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_executable_graph_updates_in_place_and_refuses_a_changed_topology() {
    let device = common::device();
    let code = compile(KERNELS);
    let scale = code.get_kernel("scale").unwrap();
    let stream = stream(device);
    let n = 1u32 << 16;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = floats(device, &stream, &input);
    let y = zeroed(device, &stream, 4 * n as usize);
    let config = LaunchConfig::for_elements(n.into(), 256);
    let scaled = |a: f32| input.iter().map(|v| a * v).collect::<Vec<f32>>();
    let mut graph = Graph::new(device).unwrap();
    // SAFETY: scale reads n floats of x and writes n of y (and so below).
    let node = unsafe { graph.add_kernel(&[], &config, &scale, &[&y, &x, &2.0f32, &n]) }.unwrap();
    let mut exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), scaled(2.0));
    // SAFETY: as above.
    unsafe { graph.set_kernel_node(node, &config, &scale, &[&y, &x, &3.0f32, &n]) }.unwrap();
    // Not yet in the executable graph...
    exec.launch(&stream).unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), scaled(2.0));
    // ...until it is updated.
    exec.update(&graph).unwrap();
    exec.launch(&stream).unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), scaled(3.0));
    // SAFETY: as above.
    unsafe { exec.set_kernel_node(&graph, node, &config, &scale, &[&y, &x, &5.0f32, &n]) }.unwrap();
    exec.launch(&stream).unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), scaled(5.0));
    // Another topology: refused, naming why.
    graph.add_empty(&[node]).unwrap();
    let err = exec.update(&graph).unwrap_err();
    assert!(
        matches!(&err, Error::GraphUpdate { reason, .. } if reason.contains("topology")),
        "{err}"
    );
    exec.launch(&stream).unwrap();
    assert_eq!(y.to_vec::<f32>(&stream).unwrap(), scaled(5.0));
}

/// A launch captured with a buffer whose deallocation stream is another stream captures
/// without pulling that stream into the capture (which would leave it unjoined), and the
/// graph computes the right result; a host function on the capturing stream is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_takes_buffers_of_other_streams_and_refuses_host_functions() {
    let device = common::device();
    let code = compile(KERNELS);
    let twice = code.get_kernel("twice").unwrap();
    let (s0, s1) = (stream(device), stream(device));
    let n = 4096u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 - 100.0).collect();
    let x = floats(device, &s1, &input);
    let y = zeroed(device, &s1, 4 * n as usize);
    s1.sync().unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    // SAFETY: nothing is allocated or freed on s0 while it captures; the buffers outlive the
    // graph's launch; the kernel reads and writes n floats.
    unsafe {
        s0.begin_capture(CaptureMode::ThreadLocal).unwrap();
        launch(&s0, &config, &twice, &[&*x, &*y, &n]).unwrap();
    }
    let err = s0.launch_host_func(|| {}).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("capturing")),
        "{err}"
    );
    let graph = s0.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 1);
    graph
        .instantiate(GraphOptions::default())
        .unwrap()
        .launch(&s0)
        .unwrap();
    s0.sync().unwrap();
    let doubled: Vec<f32> = input.iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.to_vec::<f32>(&s0).unwrap(), doubled);
}

pub(crate) fn invalid_name(result: cuda_core::Result<impl std::fmt::Debug>) -> &'static str {
    match result {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

/// Bad inputs are refused before the driver, naming the argument: a dependency of another
/// graph or a removed node, kernel arguments that do not match, options a kernel node does
/// not take, a fill of the wrong width, copies of unequal sizes, an empty allocation, an
/// executable graph changed through another graph's node, and a kernel change of a node that
/// is not a kernel node.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_graph_inputs_are_refused_naming_the_argument() {
    let device = common::device();
    let code = compile(KERNELS);
    let plus_one = code.get_kernel("plus_one").unwrap();
    let stream = stream(device);
    let small = zeroed(device, &stream, 6);
    let big = zeroed(device, &stream, 8);
    let n = 2u32;
    let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    let mut other = Graph::new(device).unwrap();
    let foreign = other.add_empty(&[]).unwrap();
    let mut graph = Graph::new(device).unwrap();
    assert_eq!(invalid_name(graph.add_empty(&[foreign])), "deps");
    let gone = graph.add_empty(&[]).unwrap();
    graph.remove_node(gone).unwrap();
    assert_eq!(invalid_name(graph.add_empty(&[gone])), "deps");
    assert_eq!(invalid_name(graph.node_kind(gone)), "node");
    // SAFETY: each kernel node here is refused before the driver.
    unsafe {
        assert_eq!(
            invalid_name(graph.add_kernel(&[], &config, &plus_one, &[&big])),
            "args"
        );
        assert_eq!(
            invalid_name(graph.add_kernel(&[], &config, &plus_one, &[&big, &1u64])),
            "args"
        );
        let clustered = config.with_cluster([1, 1, 1]);
        assert_eq!(
            invalid_name(graph.add_kernel(&[], &clustered, &plus_one, &[&big, &n])),
            "config.cluster"
        );
    }
    assert_eq!(invalid_name(graph.add_fill(&[], &small, 0u32)), "value");
    assert_eq!(invalid_name(graph.add_copy(&[], &small, &big)), "dst");
    assert_eq!(
        invalid_name(graph.add_copy_from_host(&[], vec![0u32; 3], &big)),
        "dst"
    );
    assert_eq!(invalid_name(graph.add_alloc(&[], 0)), "bytes");
    let empty = graph.add_empty(&[]).unwrap();
    // SAFETY: as above.
    let node = unsafe { graph.add_kernel(&[empty], &config, &plus_one, &[&big, &n]) }.unwrap();
    let mut exec = graph.instantiate(GraphOptions::default()).unwrap();
    // SAFETY: both are refused before the driver.
    unsafe {
        assert_eq!(
            invalid_name(exec.set_kernel_node(&other, node, &config, &plus_one, &[&big, &n])),
            "graph"
        );
        assert_eq!(
            invalid_name(graph.set_kernel_node(empty, &config, &plus_one, &[&big, &n])),
            "node"
        );
    }
    // None of these left the graph unusable.
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
}

/// A copy node over pinned-pool memory the graph's device has no access to is refused when
/// it is made, as `Buffer`'s own copies are (review N11): the driver faults on such a copy
/// rather than refuse it. Bug caught: host memory skipped the check, and the node reached
/// `cuGraphAddMemcpyNode`.
#[test]
fn a_copy_node_of_pool_memory_without_access_is_refused_like_the_buffers() {
    common::standin::run(
        module_path!(),
        "a_copy_node_of_pool_memory_without_access_is_refused_like_the_buffers",
        &[],
        &[],
        || {
            use cuda_core::{
                memory::{PinnedMemoryPool, PinnedMemoryPoolOptions},
                StreamOptions,
            };
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()).unwrap();
            let host = Arc::new(pool.allocate(64, &stream).unwrap());
            let other = Arc::new(pool.allocate(64, &stream).unwrap());
            pool.set_access(&[]).unwrap();
            let mut graph = Graph::new(device).unwrap();
            common::standin::clear_log();
            for made in [
                graph.add_copy(&[], &host, &other),
                graph.add_copy_from_host(&[], vec![0u32; 16], &host),
            ] {
                let err = made.unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("not accessible")),
                    "{err:?}"
                );
            }
            let log = common::standin::log();
            assert!(!log.contains("cuGraphAddMemcpyNode"), "{log}");
        },
    );
}

/// The error of `made`, which must be an `InvalidArgument` of `name` whose reason says `says`.
fn refused_as<T: std::fmt::Debug>(made: cuda_core::Result<T>, name: &str, says: &str) {
    match made {
        Err(Error::InvalidArgument { name: n, reason }) if n == name && reason.contains(says) => {}
        other => panic!("expected {name} refused saying {says:?}, got {other:?}"),
    }
}

/// Graph allocations as the ends of copy and fill nodes (graphMemoryNodes' copies into graph
/// memory), against the stand-in. Bugs caught: the node's memory not the allocation's (or not
/// the range's); a range past the allocation accepted; an allocation of another graph, or one
/// used from a conditional body, accepted; and at instantiation, a use not ordered after the
/// allocation node, or not before the free node (an edge removed after the node was added),
/// or of an allocation whose node was removed, instantiated, or an executable graph updated
/// to such a graph; a removed use still checked; a clone whose edge was removed instantiated
/// (its uses not carried over); a valid graph refused.
#[test]
fn graph_allocations_are_copy_and_fill_ends_ordered_between_their_nodes() {
    common::standin::run(
        module_path!(),
        "graph_allocations_are_copy_and_fill_ends_ordered_between_their_nodes",
        &[],
        &[],
        || {
            use cuda_core::StreamOptions;
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let out = Arc::new(memory.allocate(4096, &stream).unwrap());
            let options = GraphOptions::default;

            // alloc -> fill of a range -> copy of the whole to a buffer -> free: instantiated.
            let mut graph = Graph::new(device).unwrap();
            let scratch = graph.add_alloc(&[], 4096).unwrap();
            let at = scratch.ptr().0;
            refused_as(scratch.range(4000..4100), "range", "not within");
            common::standin::clear_log();
            let fill = graph
                .add_fill(&[scratch.node()], &scratch.range(1024..2048).unwrap(), 7u32)
                .unwrap();
            let log = common::standin::log();
            assert!(
                log.contains(&format!("{:#x} size=1024", at + 1024)),
                "the fill's memory:\n{log}"
            );
            common::standin::clear_log();
            let copy = graph.add_copy(&[fill], &scratch, &out).unwrap();
            let log = common::standin::log();
            assert!(
                log.contains(&format!("{:#x} <- {at:#x} size=4096", out.ptr().0)),
                "the copy's ends:\n{log}"
            );
            let upload = graph
                .add_copy_from_host(
                    &[scratch.node()],
                    vec![1u32; 256],
                    &scratch.range(..1024).unwrap(),
                )
                .unwrap();
            graph.add_dependencies(&[(upload, copy)]).unwrap();
            // Another graph's allocation is not this graph's to use.
            let mut other = Graph::new(device).unwrap();
            refused_as(other.add_fill(&[], &scratch, 0u8), "dst", "another graph");
            let free = graph.add_free(&[copy], scratch).unwrap();
            let mut exec = graph.instantiate(options()).unwrap();

            // The copy's edge to the free node removed, the free after the fill alone: the
            // copy may run after the free.
            let clone = graph.try_clone().unwrap();
            graph.remove_dependencies(&[(copy, free)]).unwrap();
            graph.add_dependencies(&[(fill, free)]).unwrap();
            refused_as(
                graph.instantiate(options()),
                "graph",
                "free node does not depend",
            );
            // Nor is an executable graph updated to it (checked before the driver is asked).
            refused_as(exec.update(&graph), "graph", "free node does not depend");
            // The clone made before is whole, and carries the uses: its edge removed, refused.
            let mut clone = clone;
            clone.instantiate(options()).unwrap();
            let (copy_in_clone, free_in_clone) = (
                graph.find_in_clone(copy, &mut clone).unwrap(),
                graph.find_in_clone(free, &mut clone).unwrap(),
            );
            clone
                .remove_dependencies(&[(copy_in_clone, free_in_clone)])
                .unwrap();
            refused_as(
                clone.instantiate(options()),
                "graph",
                "free node does not depend",
            );

            // A fill that does not depend on the allocation node.
            let mut graph = Graph::new(device).unwrap();
            let scratch = graph.add_alloc(&[], 4096).unwrap();
            let loose = graph.add_fill(&[], &scratch, 0u8).unwrap();
            refused_as(graph.instantiate(options()), "graph", "does not depend");
            // Removed, it is no use any more.
            graph.remove_node(loose).unwrap();
            graph.instantiate(options()).unwrap();
            // The allocation node removed while a fill uses its memory.
            graph.add_fill(&[scratch.node()], &scratch, 0u8).unwrap();
            graph.remove_node(scratch.node()).unwrap();
            refused_as(graph.instantiate(options()), "graph", "was removed");

            // Not from a conditional node's body.
            let mut graph = Graph::new(device).unwrap();
            let scratch = graph.add_alloc(&[], 64).unwrap();
            let handle = graph.conditional_handle(Some(1)).unwrap();
            let branch = graph.add_if(&[scratch.node()], handle).unwrap();
            let mut body = graph.body(&branch, 0).unwrap();
            refused_as(
                body.add_fill(&[], &scratch, 0u8),
                "dst",
                "conditional node's body",
            );
        },
    );
}

/// On the GPU: graphMemoryNodes' pattern with copy and fill nodes: an allocation filled in
/// part, input copied into the rest, the whole copied out, then freed, on each of three
/// launches with new input. Bugs caught: nodes writing other memory than the allocation's
/// (the output would not hold the fill and the input); a graph allocation not usable as a copy
/// end on this driver.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_allocations_are_filled_and_copied_by_nodes_on_the_gpu() {
    let _graph_memory = common::graph_memory();
    let device = common::device();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let input = Arc::new(memory.allocate(2048, &stream).unwrap());
    let out = Arc::new(memory.allocate(4096, &stream).unwrap());
    let mut graph = Graph::new(device).unwrap();
    let scratch = graph.add_alloc(&[], 4096).unwrap();
    let fill = graph
        .add_fill(
            &[scratch.node()],
            &scratch.range(..2048).unwrap(),
            0xABCD_0123u32,
        )
        .unwrap();
    let load = graph
        .add_copy(&[scratch.node()], &input, &scratch.range(2048..).unwrap())
        .unwrap();
    let store = graph.add_copy(&[fill, load], &scratch, &out).unwrap();
    graph.add_free(&[store], scratch).unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    for round in 0..3u32 {
        let data: Vec<u32> = (0..512).map(|i| i * 3 + round).collect();
        input
            .shared_slice(..)
            .unwrap()
            .copy_from_host(&data, &stream)
            .unwrap();
        exec.launch(&stream).unwrap();
        let back = out.to_vec::<u32>(&stream).unwrap();
        assert!(
            back[..512].iter().all(|&v| v == 0xABCD_0123),
            "round {round}"
        );
        assert_eq!(back[512..], data, "round {round}");
    }
}
