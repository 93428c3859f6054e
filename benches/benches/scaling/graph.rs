//! `graph_build_empty_n{10,1000,10000}` and `graph_build_kernel_n{10,1000,10000}`: a graph
//! built node by node, each node after the one before, instantiated, and both destroyed.
//!
//! - **raw**: `cuGraphCreate`, one `cuGraphAddEmptyNode` (or `cuGraphAddKernelNode` of
//!   `empty0` in the primary context) per node with the node before as its one dependency,
//!   `cuGraphInstantiateWithFlags`, `cuGraphExecDestroy`, `cuGraphDestroy`.
//! - **cuda-core**: `Graph::new`, `BuildGraph::add_empty` (or `add_kernel`, which checks the
//!   launch against the kernel and keeps the kernel alive with the graph) per node,
//!   `Graph::instantiate`, both dropped.
//!
//! Too slow at 10,000 nodes for 50 samples in 0.75 s: every size takes 10 flat samples a round.

use std::hint::black_box;
use std::ptr::null_mut;
use std::time::Duration;

use benches::raw::{check, Handle, RawDriver};
use criterion::{Criterion, SamplingMode};
use cuda_core::{BuildGraph, Device, Graph, GraphNode, GraphOptions, Kernel, LaunchConfig};

use crate::common::Case;
use crate::{scaled, RawState, NO_PARAMS};

/// The sizes, in nodes.
pub(crate) const SIZES: [usize; 3] = [10, 1_000, 10_000];
/// Every kernel node: one block of 32 threads.
const GRID: [u32; 3] = [1, 1, 1];
/// See [`GRID`].
const BLOCK: [u32; 3] = [32, 1, 1];

pub(crate) fn graph_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    device: Device,
    raw: &RawState,
    kernel: Option<&Kernel>,
) {
    for size in SIZES {
        Case::new(scaled("graph_build_empty", size))
            .settings(slow)
            .variant("raw", |b| {
                b.iter(|| {
                    raw_graph(d, size, |node, graph, deps| {
                        // SAFETY: a writable out-pointer, a live graph, nodes of it.
                        unsafe { d.cuGraphAddEmptyNode(node, graph, deps) }
                    })
                });
            })
            .variant("cuda-core", |b| {
                b.iter(|| core_graph(device, size, |graph, deps| graph.add_empty(deps)));
            })
            .run(c);
    }
    let (Some(kernel), Some(raw_kernel)) = (kernel, raw.kernel) else {
        println!("scaling: no kernel; graph_build_kernel skipped");
        return;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    let context = raw.context.0;
    for size in SIZES {
        Case::new(scaled("graph_build_kernel", size))
            .settings(slow)
            .variant("raw", |b| {
                b.iter(|| {
                    raw_graph(d, size, |node, graph, deps| {
                        // SAFETY: a writable out-pointer, a live graph, nodes of it; an empty
                        // kernel of no parameters, of a library loaded for the process, in
                        // the primary context.
                        unsafe {
                            d.cuGraphAddKernelNode(
                                node,
                                graph,
                                deps,
                                raw_kernel.0,
                                context,
                                GRID,
                                BLOCK,
                                NO_PARAMS,
                            )
                        }
                    })
                });
            })
            .variant("cuda-core", |b| {
                b.iter(|| {
                    core_graph(device, size, |graph, deps| {
                        // SAFETY: an empty kernel of no parameters: it touches no memory.
                        unsafe { graph.add_kernel(deps, &config, kernel, &[]) }
                    })
                });
            })
            .run(c);
    }
}

/// Ten flat samples a round: an iteration of 10,000 nodes takes tens of milliseconds.
fn slow(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
}

/// Raw: a graph of `size` nodes made by `add`, each after the one before, instantiated, and
/// both destroyed.
fn raw_graph<R: RawDriver>(
    d: &R,
    size: usize,
    mut add: impl FnMut(*mut Handle, Handle, &[Handle]) -> u32,
) {
    let mut graph = null_mut();
    // SAFETY: a writable out-pointer.
    check(unsafe { d.cuGraphCreate(&mut graph) }, "cuGraphCreate");
    let mut last: Option<Handle> = None;
    for _ in 0..size {
        let mut node = null_mut();
        check(add(&mut node, graph, last.as_slice()), "cuGraphAdd*Node");
        last = Some(node);
    }
    let mut exec = null_mut();
    // SAFETY: a live graph of the current context, a writable out-pointer; each object is
    // destroyed once, the executable graph (never launched) first.
    unsafe {
        check(d.cuGraphInstantiate(&mut exec, graph), "cuGraphInstantiate");
        check(d.cuGraphExecDestroy(black_box(exec)), "cuGraphExecDestroy");
        check(d.cuGraphDestroy(graph), "cuGraphDestroy");
    }
}

/// cuda-core: the same through `Graph` and `BuildGraph`.
fn core_graph(
    device: Device,
    size: usize,
    mut add: impl FnMut(&mut Graph, &[GraphNode]) -> cuda_core::Result<GraphNode>,
) {
    let mut graph = Graph::new(device).unwrap();
    let mut last: Option<GraphNode> = None;
    for _ in 0..size {
        last = Some(add(&mut graph, last.as_slice()).unwrap());
    }
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    drop(black_box(exec));
    drop(graph);
}
