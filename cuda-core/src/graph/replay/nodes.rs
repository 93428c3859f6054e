//! The region's graph nodes: built from a run's launches, and given a later run's changed
//! arguments in place.

use super::{arg_bytes, Args, Entry, Node, Shape, FEW_ARGS};
use crate::args::KernelArg;
use crate::context::Context;
use crate::driver::{GraphNodeHandle, KernelHandle, KernelNodeSpec};
use crate::error::Result;
use crate::graph::node::note;
use crate::graph::Graph;
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;

/// Applies the arguments staged on the entry's nodes (`cuGraphExecKernelNodeSetParams`), and
/// keeps them as the nodes' arguments now.
///
/// # Safety
///
/// Each staged node's arguments were given to [`ReplayRecorder::launch`], under its contract.
pub(super) unsafe fn apply(entry: &mut Entry) -> Result<()> {
    let context = &entry.exec.context;
    // The pointers on the stack for most kernels (no allocation per run), in a vector past.
    let mut few = [std::ptr::null_mut(); FEW_ARGS];
    let mut many = Vec::new();
    let mut place = 0;
    for &index in &entry.staged_nodes {
        let node = &entry.nodes[index];
        let staged = place..place + node.count;
        place += node.count;
        let pointers: &mut [*mut std::ffi::c_void] = if node.count <= FEW_ARGS {
            &mut few[..node.count]
        } else {
            many.resize(node.count, std::ptr::null_mut());
            &mut many
        };
        entry.staged.pointers_into(staged.clone(), pointers);
        let spec = spec(context, node.function, &node.shape, pointers);
        // SAFETY: one pointer per parameter (the count and sizes are the node's, checked when
        // it was built), each to its bytes, alive for the call (the driver copies them); the
        // caller vouches for what the kernel does with them.
        let set = unsafe {
            context
                .driver()
                .graph_exec_kernel_node_set(entry.exec.handle, node.handle, &spec)
        };
        if let Err(e) = set {
            // Nothing staged survives a failed pass: the next pass compares against the
            // nodes' arguments as they are (those set before this one kept theirs below),
            // and applies only what it stages itself.
            entry.staged.clear();
            entry.staged_nodes.clear();
            return Err(e);
        }
        for (from, to) in staged.zip(node.first..node.first + node.count) {
            let ((source, size), (target, _)) = (entry.staged.places[from], entry.args.places[to]);
            let count = size.div_ceil(16);
            let (words, new) = (&mut entry.args.words, &entry.staged.words);
            words[target..target + count].copy_from_slice(&new[source..source + count]);
        }
    }
    entry.staged.clear();
    entry.staged_nodes.clear();
    Ok(())
}

/// Adds the launch to `graph` after the last node, checked as a graph kernel node.
///
/// # Safety
///
/// As for [`ReplayRecorder::launch`].
pub(super) unsafe fn build(
    graph: &mut Graph,
    nodes: &mut Vec<Node>,
    kept: &mut Args,
    kernels: &mut Vec<Kernel>,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
) -> Result<()> {
    let sizes: Vec<usize> = args.iter().map(|arg| arg.arg().size).collect();
    crate::launch::validate_node(&graph.context, config, kernel, &sizes)?;
    let mut pointers: Vec<*mut std::ffi::c_void> =
        args.iter().map(|arg| arg.arg().ptr.cast_mut()).collect();
    let spec = spec(
        &graph.context,
        kernel.handle(),
        &Shape::of(config),
        &mut pointers,
    );
    let deps: Vec<GraphNodeHandle> = nodes.last().map(|node| node.handle).into_iter().collect();
    // SAFETY: one pointer per parameter, each to its argument's bytes (count and sizes
    // checked above), borrowed for the call; the caller vouches for the kernel.
    let handle = unsafe {
        graph
            .context
            .driver()
            .graph_add_kernel_node(graph.handle, &deps, &spec)
    }?;
    note(&mut graph.state, graph.handle, handle);
    // The kernel stays loaded while any launch of the graph may run it: its executable graph
    // keeps it until its last launch is done (not the driver through a user object, whose
    // bookkeeping cost each launch of a 100-kernel graph 0.5 µs on one H100 host).
    if !kernels.iter().any(|k| k.handle() == kernel.handle()) {
        kernels.push(kernel.clone());
    }
    let first = kept.len();
    for arg in args {
        kept.push(arg_bytes(arg));
    }
    nodes.push(Node {
        handle,
        function: kernel.handle(),
        shape: Shape::of(config),
        first,
        count: args.len(),
    });
    Ok(())
}

fn spec(
    context: &Context,
    kernel: KernelHandle,
    shape: &Shape,
    pointers: &mut [*mut std::ffi::c_void],
) -> KernelNodeSpec {
    KernelNodeSpec {
        kernel,
        context: context.handle(),
        grid: shape.grid,
        block: shape.block,
        shared_mem_bytes: shape.shared_memory_bytes,
        args: pointers.as_mut_ptr(),
    }
}
