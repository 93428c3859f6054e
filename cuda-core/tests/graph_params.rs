//! Graph parameters after the fact: copy, fill, host and event nodes read and changed on the
//! graph and on the executable graph, stream-ordered allocations inside a capture (graph
//! memory nodes), and instantiation with upload.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::common;
use crate::common::stream;
use crate::graph_nodes::{self, invalid_name};

use cuda_core::{
    Allocate, Buffer, BuildGraph, CaptureMode, CopyEnd, Device, Error, EventOptions, Graph,
    GraphOptions, LaunchConfig, Stream,
};

const KERNELS: &str = r#"
extern "C" __global__ void iota(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 3u * i + 1u;
}
extern "C" __global__ void copy_u32(unsigned* dst, const unsigned* src, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
extern "C" __global__ void add_u32(unsigned* x, unsigned v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}
"#;

fn compile() -> cuda_core::ObjectCode {
    graph_nodes::compile(KERNELS)
}

fn words(device: Device, stream: &Stream, n: usize, value: u32) -> Arc<Buffer> {
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4 * n, stream)
        .unwrap();
    buffer.fill(value, stream).unwrap();
    Arc::new(buffer)
}

fn read(buffer: &Buffer, stream: &Stream) -> Vec<u32> {
    buffer.to_vec::<u32>(stream).unwrap()
}

fn counter() -> (Arc<AtomicU32>, impl Fn() + Send + Sync + 'static) {
    let count = Arc::new(AtomicU32::new(0));
    let theirs = count.clone();
    (count, move || {
        theirs.fetch_add(1, Ordering::SeqCst);
    })
}

/// Fill, copy, host-copy, host and event nodes read back what they were built with, and
/// change on the executable graph (only there: the graph keeps its own) and on the graph
/// (reaching the executable graph through an update). Each change shows in what a launch
/// does: the values copied, which counter a host node bumps, which event a record node
/// records.
#[test]
#[ignore = "needs a CUDA GPU"]
fn node_parameters_change_on_the_graph_and_on_the_executable_graph() {
    let device = common::device();
    let stream = stream(device);
    let n = 4096usize;
    let (a, b, c, d) = (
        words(device, &stream, n, 0),
        words(device, &stream, n, 0),
        words(device, &stream, n, 0),
        words(device, &stream, n, 0),
    );
    let h = words(device, &stream, 4, 0);
    let (first, bump_first) = counter();
    let (second, bump_second) = counter();
    let e1 = Arc::new(device.create_event(EventOptions::timing()).unwrap());
    let e2 = Arc::new(device.create_event(EventOptions::timing()).unwrap());

    let mut graph = Graph::new(device).unwrap();
    let fill = graph.add_fill(&[], &a, 1u32).unwrap();
    let copy = graph.add_copy(&[fill], &a, &b).unwrap();
    let from_host = graph.add_copy_from_host(&[], vec![5u32; 4], &h).unwrap();
    let host = graph.add_host(&[copy], bump_first).unwrap();
    let record = graph.add_event_record(&[host], &e1).unwrap();

    // Reads give what was built: catches a getter that decodes the driver's struct wrongly.
    let filled = graph.fill_node(fill).unwrap();
    assert_eq!(filled.dst, a.ptr());
    assert_eq!((filled.value, filled.element_size, filled.count), (1, 4, n));
    let copied = graph.copy_node(copy).unwrap();
    assert_eq!(copied.src, CopyEnd::Device(a.ptr()));
    assert_eq!(copied.dst, CopyEnd::Device(b.ptr()));
    assert_eq!(copied.bytes, 4 * n);
    let hosted = graph.copy_node(from_host).unwrap();
    assert!(
        matches!(hosted.src, CopyEnd::Host(at) if at != 0),
        "{hosted:?}"
    );
    assert_eq!(hosted.dst, CopyEnd::Device(h.ptr()));
    assert_eq!(hosted.bytes, 16);

    let mut exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&b, &stream), vec![1; n]);
    assert_eq!(read(&h, &stream), vec![5; 4]);
    assert_eq!(first.load(Ordering::SeqCst), 1);

    // On the executable graph: fill 7, copy into `c`, new host values, the second counter,
    // record `e2`.
    exec.set_fill(&graph, fill, &a, 7u32).unwrap();
    exec.set_copy(&graph, copy, &a, &c).unwrap();
    exec.set_copy_from_host(&graph, from_host, vec![9u32, 8, 7, 6], &h)
        .unwrap();
    exec.set_host(&graph, host, bump_second).unwrap();
    exec.set_event(&graph, record, &e2).unwrap();
    let start = stream.record_new(EventOptions::timing()).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&c, &stream), vec![7; n], "the copy went elsewhere");
    assert_eq!(read(&b, &stream), vec![1; n], "the old copy still ran");
    assert_eq!(read(&h, &stream), vec![9, 8, 7, 6]);
    assert_eq!(first.load(Ordering::SeqCst), 1, "the old host function ran");
    assert_eq!(second.load(Ordering::SeqCst), 1);
    // `e2` was recorded by this launch (an event never recorded has no time).
    e2.elapsed_since(&start).unwrap();
    // The graph kept its own parameters.
    assert_eq!(graph.fill_node(fill).unwrap().value, 1);
    assert_eq!(graph.copy_node(copy).unwrap().dst, CopyEnd::Device(b.ptr()));

    // On the graph: fill 9 and copy into `b` again; the executable graph is unchanged until
    // updated from it.
    if let Err(e) = graph.set_fill(fill, &a, 9u32) {
        // Refused by the 580 driver (CUDA_ERROR_INVALID_VALUE) in the first GPU run, where raw
        // calls of the same shape were not: what else is refused says where to look.
        let own_value = graph.set_fill(fill, &a, 1u32);
        let mut fresh = Graph::new(device).unwrap();
        let node = fresh.add_fill(&[], &a, 1u32).unwrap();
        let on_a_fresh_graph = fresh.set_fill(node, &a, 9u32);
        let other = words(device, &stream, n, 0);
        let into_another_buffer = graph.set_fill(fill, &other, 9u32);
        panic!(
            "graph.set_fill: {e}; with the node's own value: {own_value:?}; on a fresh graph: \
             {on_a_fresh_graph:?}; into another buffer: {into_another_buffer:?}; the node: {:?}",
            graph.fill_node(fill)
        );
    }
    assert_eq!(graph.fill_node(fill).unwrap().value, 9);
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(
        read(&a, &stream),
        vec![7; n],
        "a graph change reached the exec"
    );
    exec.update(&graph).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&b, &stream), vec![9; n]);
    assert_eq!(read(&h, &stream), vec![5; 4]);
    assert_eq!(first.load(Ordering::SeqCst), 2);
    assert_eq!(second.load(Ordering::SeqCst), 2);

    // Graph-side changes of the copy, host-copy, host and event nodes, then an update.
    let (third, bump_third) = counter();
    graph.set_copy(copy, &a, &d).unwrap();
    graph
        .set_copy_from_host(from_host, vec![1u32, 2, 3, 4], &h)
        .unwrap();
    graph.set_host(host, bump_third).unwrap();
    graph.set_event(record, &e2).unwrap();
    assert_eq!(graph.copy_node(copy).unwrap().dst, CopyEnd::Device(d.ptr()));
    exec.update(&graph).unwrap();
    let start = stream.record_new(EventOptions::timing()).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&d, &stream), vec![9; n]);
    assert_eq!(read(&h, &stream), vec![1, 2, 3, 4]);
    assert_eq!(third.load(Ordering::SeqCst), 1);
    assert_eq!(first.load(Ordering::SeqCst), 2);
    e2.elapsed_since(&start).unwrap();

    // Bad inputs, before the driver: a node of another kind, a node of another graph, a
    // graph the exec was not made from, a copy of unequal sizes, a fill of the wrong width.
    let mut other = Graph::new(device).unwrap();
    let foreign = other.add_fill(&[], &a, 0u32).unwrap();
    assert_eq!(invalid_name(graph.set_fill(copy, &a, 1u32)), "node");
    assert_eq!(invalid_name(graph.set_copy(fill, &a, &b)), "node");
    assert_eq!(invalid_name(graph.set_host(fill, || {})), "node");
    assert_eq!(invalid_name(graph.set_event(fill, &e1)), "node");
    assert_eq!(invalid_name(graph.fill_node(copy)), "node");
    assert_eq!(invalid_name(graph.copy_node(fill)), "node");
    assert_eq!(invalid_name(graph.set_fill(foreign, &a, 1u32)), "node");
    assert_eq!(
        invalid_name(exec.set_fill(&other, foreign, &a, 1u32)),
        "graph"
    );
    assert_eq!(invalid_name(exec.set_copy(&graph, copy, &a, &h)), "dst");
    let odd = Arc::new(
        device
            .memory_resource()
            .unwrap()
            .allocate(6, &stream)
            .unwrap(),
    );
    assert_eq!(
        invalid_name(exec.set_fill(&graph, fill, &odd, 1u32)),
        "value"
    );
    assert_eq!(invalid_name(exec.set_event(&graph, host, &e1)), "node");
    // After the refusals the executable graph still does what it did.
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&d, &stream), vec![9; n]);
    assert_eq!(third.load(Ordering::SeqCst), 2);
}

/// A capture allocates graph memory with `capture_alloc` and frees it with `capture_free`:
/// the graph's kernels use it (the result is exact), and the graph launches twice (the
/// driver refuses a second launch while an allocation is unfreed, so the free node is
/// there). A buffer allocated on the capturing stream is refused without breaking the
/// capture; allocating outside a capture and freeing in another capture are refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_capture_allocates_graph_memory_and_refuses_buffers() {
    let _graph_memory = common::graph_memory();
    let device = common::device();
    let code = compile();
    let (iota, copy) = (
        code.get_kernel("iota").unwrap(),
        code.get_kernel("copy_u32").unwrap(),
    );
    let stream = stream(device);
    let n = 1u32 << 20;
    let bytes = 4 * n as usize;
    let out = words(device, &stream, n as usize, 0);
    let config = LaunchConfig::for_elements(n.into(), 256);
    stream.sync().unwrap();

    // Not capturing: refused.
    assert!(
        matches!(stream.capture_alloc(bytes), Err(Error::Capture { .. })),
        "allocated in no capture"
    );

    device.trim_graph_memory().unwrap();
    let before = device.graph_memory_usage().unwrap();
    // SAFETY: no buffer is allocated or freed on the streams while they capture (the one
    // attempt below is refused before the driver).
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let refused = device.memory_resource().unwrap().allocate(64, &stream);
    assert_eq!(invalid_name(refused), "stream");
    assert!(matches!(
        stream.capture_alloc(0),
        Err(Error::InvalidArgument { name: "bytes", .. })
    ));
    let scratch = stream.capture_alloc(bytes).unwrap();
    assert_eq!(scratch.size(), bytes);
    assert_ne!(scratch.ptr().0, 0);
    let at = scratch.ptr();
    // SAFETY: n unsigned ints at `at` between the allocation and its free; `out` holds n.
    unsafe {
        cuda_core::launch(&stream, &config, &iota, &[&at, &n]).unwrap();
        cuda_core::launch(&stream, &config, &copy, &[&*out, &at, &n]).unwrap();
    }
    stream.capture_free(scratch).unwrap();
    let graph = stream.end_capture().unwrap();
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    let expected: Vec<u32> = (0..n).map(|i| 3 * i + 1).collect();
    assert_eq!(read(&out, &stream), expected);
    let during = device.graph_memory_usage().unwrap();
    assert!(
        during.used_current >= before.used_current + bytes as u64,
        "{during:?}"
    );
    drop(exec);
    drop(graph);
    device.trim_graph_memory().unwrap();
    assert_eq!(
        device.graph_memory_usage().unwrap().used_current,
        before.used_current
    );

    // An allocation of one capture freed in another: refused, nothing recorded there.
    let third = crate::common::stream(device);
    // SAFETY: as above.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    // SAFETY: as above.
    unsafe { third.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let mine = stream.capture_alloc(256).unwrap();
    assert!(
        matches!(third.capture_free(mine), Err(Error::Capture { .. })),
        "freed in another capture"
    );
    let empty = third.end_capture().unwrap();
    assert_eq!(
        empty.node_count().unwrap(),
        0,
        "the refused free was recorded"
    );
    let graph = stream.end_capture().unwrap();
    assert_eq!(graph.node_count().unwrap(), 1);
}

/// `instantiate_uploaded` gives an executable graph that runs (the result is exact), on a
/// stream of the graph's device; a graph the driver cannot instantiate (a cycle) is
/// `GraphInstantiate` with the driver's reason and a node.
#[test]
#[ignore = "needs a CUDA GPU"]
fn instantiate_uploaded_launches_and_names_a_refusal() {
    let device = common::device();
    let code = compile();
    let add = code.get_kernel("add_u32").unwrap();
    let stream = stream(device);
    let n = 1u32 << 16;
    let x = words(device, &stream, n as usize, 1);
    let config = LaunchConfig::for_elements(n.into(), 256);
    let mut graph = Graph::new(device).unwrap();
    // SAFETY: `x` holds n unsigned ints.
    let (first, second) = unsafe {
        let first = graph
            .add_kernel(&[], &config, &add, &[&x, &2u32, &n])
            .unwrap();
        let second = graph
            .add_kernel(&[first], &config, &add, &[&x, &3u32, &n])
            .unwrap();
        (first, second)
    };
    let exec = graph
        .instantiate_uploaded(GraphOptions::default(), &stream)
        .unwrap();
    exec.launch(&stream).unwrap();
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    assert_eq!(read(&x, &stream), vec![11; n as usize]);

    // A cycle: second -> first as well as first -> second.
    graph.add_dependencies(&[(second, first)]).unwrap();
    match graph.instantiate_uploaded(GraphOptions::default(), &stream) {
        Err(Error::GraphInstantiate { reason, .. }) => {
            assert!(reason.contains("structure"), "{reason}");
        }
        other => panic!("a cyclic graph instantiated: {other:?}"),
    }
}

/// Node switches against the stand-in's model: a host node cannot be disabled (refused
/// naming its kind, before the driver); a disabled fill is not run by a launch and runs
/// again once enabled; a node of another graph is refused.
#[test]
fn disabled_nodes_are_skipped_and_only_kernels_copies_and_fills_switch() {
    common::standin::run(
        module_path!(),
        "disabled_nodes_are_skipped_and_only_kernels_copies_and_fills_switch",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = stream(device);
            let a = words(device, &stream, 4, 0);
            let mut graph = Graph::new(device).unwrap();
            let fill = graph.add_fill(&[], &a, 7u32).unwrap();
            let host = graph.add_host(&[fill], || {}).unwrap();
            let mut other = Graph::new(device).unwrap();
            let foreign = other.add_fill(&[], &a, 1u32).unwrap();
            let mut exec = graph.instantiate(GraphOptions::default()).unwrap();
            common::standin::clear_log();
            // Catches a host node handed to the driver (which refuses it).
            let err = exec.set_node_enabled(&graph, host, false).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "node", reason } if reason.contains("Host")),
                "{err:?}"
            );
            assert_eq!(
                invalid_name(exec.set_node_enabled(&graph, foreign, false)),
                "node"
            );
            assert!(common::standin::calls("cuGraphNodeSetEnabled").is_empty());

            assert!(exec.node_enabled(&graph, fill).unwrap());
            exec.set_node_enabled(&graph, fill, false).unwrap();
            // Catches the switch not made, or made on another node.
            assert!(!exec.node_enabled(&graph, fill).unwrap());
            exec.launch(&stream).unwrap();
            let launch = common::standin::last_call("cuGraphLaunch");
            assert!(launch.contains("disabled="), "{launch}");
            // Catches a disabled fill that still ran.
            assert!(
                !common::standin::log().contains("kind=fill"),
                "{}",
                common::standin::log()
            );
            exec.set_node_enabled(&graph, fill, true).unwrap();
            assert!(exec.node_enabled(&graph, fill).unwrap());
            exec.launch(&stream).unwrap();
            // Catches a node that stays disabled after it was enabled again.
            assert!(
                common::standin::log().contains("kind=fill"),
                "{}",
                common::standin::log()
            );
            stream.sync().unwrap();
        },
    );
}

/// Node ids: distinct per node under the 13 ABI; `NotSupported` naming the call under the
/// 12 ABI, whose header has none.
#[test]
fn node_local_ids_are_distinct_and_need_the_13_header() {
    for abi in ["13", "12"] {
        common::standin::run(
            module_path!(),
            "node_local_ids_are_distinct_and_need_the_13_header",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = Device::new(0).unwrap();
                let mut graph = Graph::new(device).unwrap();
                let a = graph.add_empty(&[]).unwrap();
                let b = graph.add_empty(&[a]).unwrap();
                match cuda_core::info::driver_info().unwrap().abi.major() {
                    13 => {
                        // Catches one id for every node (or the handle's bits).
                        assert_ne!(
                            graph.node_local_id(a).unwrap(),
                            graph.node_local_id(b).unwrap()
                        );
                    }
                    _ => {
                        let err = graph.node_local_id(a).unwrap_err();
                        assert!(
                            matches!(&err, Error::NotSupported { function, .. } if function.contains("cuGraphNodeGetLocalId")),
                            "{err:?}"
                        );
                    }
                }
            },
        );
    }
}

/// On the GPU: a disabled kernel node does not run (the flag it would add stays as it was),
/// and runs again once enabled; node ids where the driver has them (else "not run").
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_disabled_kernel_node_does_not_run_on_the_gpu() {
    let device = common::device();
    let code = compile();
    let add = code.get_kernel("add_u32").unwrap();
    let stream = stream(device);
    let n = 256u32;
    let x = words(device, &stream, n as usize, 1);
    let config = LaunchConfig::for_elements(n.into(), 256);
    let mut graph = Graph::new(device).unwrap();
    // SAFETY: `x` holds n unsigned ints.
    let (first, second) = unsafe {
        let first = graph
            .add_kernel(&[], &config, &add, &[&x, &2u32, &n])
            .unwrap();
        let second = graph
            .add_kernel(&[first], &config, &add, &[&x, &10u32, &n])
            .unwrap();
        (first, second)
    };
    let host = graph.add_host(&[second], || {}).unwrap();
    let mut exec = graph.instantiate(GraphOptions::default()).unwrap();
    assert_eq!(
        invalid_name(exec.set_node_enabled(&graph, host, false)),
        "node"
    );
    exec.set_node_enabled(&graph, second, false).unwrap();
    assert!(!exec.node_enabled(&graph, second).unwrap());
    assert!(exec.node_enabled(&graph, first).unwrap());
    exec.launch(&stream).unwrap();
    // Catches a disabled node that ran (13), or a switch made on the other node (11).
    assert!(
        read(&x, &stream).iter().all(|&v| v == 3),
        "{:?}",
        &read(&x, &stream)[..4]
    );
    exec.set_node_enabled(&graph, second, true).unwrap();
    exec.launch(&stream).unwrap();
    // Catches a node left disabled.
    assert!(read(&x, &stream).iter().all(|&v| v == 15));

    match graph.node_local_id(first) {
        Ok(id) => assert_ne!(id, graph.node_local_id(second).unwrap()),
        Err(Error::NotSupported {
            function,
            driver,
            abi,
        }) => {
            assert!(function.contains("cuGraphNodeGetLocalId"));
            println!(
                "not run: node ids: driver {driver:?} (ABI {abi}) has no cuGraphNodeGetLocalId \
                 (the 13 header's, 13.1 and newer drivers)"
            );
        }
        Err(e) => panic!("{e}"),
    }
}
