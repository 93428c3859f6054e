//! The nodes of a graph: their kinds, a kernel node's parameters and arguments, a graph
//! allocation, and the checks that a node or buffer belongs with a graph.

use std::ffi::c_void;
use std::sync::Arc;

use super::id::GraphNode;
use super::GraphState;
use crate::context::Context;
use crate::driver::{GraphHandle, GraphNodeHandle, KernelNodeSpec};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::memory::{Buffer, DevicePtr};

/// What a node does (`CUgraphNodeType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphNodeType")]
pub enum NodeKind {
    /// A kernel launch.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory fill.
    Memset,
    /// A host function.
    Host,
    /// An embedded child graph.
    ChildGraph,
    /// No work: a point to hang dependencies on.
    Empty,
    /// A wait on an event.
    EventWait,
    /// An event record.
    EventRecord,
    /// An external semaphore signal.
    SemaphoreSignal,
    /// An external semaphore wait.
    SemaphoreWait,
    /// A memory allocation.
    MemAlloc,
    /// A memory free.
    MemFree,
    /// A batch of memory operations.
    BatchMemOp,
    /// A conditional node.
    Conditional,
    /// A kind this crate does not name, by its code.
    Other(u32),
}

impl NodeKind {
    pub(crate) fn from_code(code: u32) -> NodeKind {
        match code {
            0 => NodeKind::Kernel,
            1 => NodeKind::Memcpy,
            2 => NodeKind::Memset,
            3 => NodeKind::Host,
            4 => NodeKind::ChildGraph,
            5 => NodeKind::Empty,
            6 => NodeKind::EventWait,
            7 => NodeKind::EventRecord,
            8 => NodeKind::SemaphoreSignal,
            9 => NodeKind::SemaphoreWait,
            10 => NodeKind::MemAlloc,
            11 => NodeKind::MemFree,
            12 => NodeKind::BatchMemOp,
            13 => NodeKind::Conditional,
            other => NodeKind::Other(other),
        }
    }
}

/// A kernel node's launch shape, as the driver holds it (`cuGraphKernelNodeGetParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "cuGraphKernelNodeGetParams")]
pub struct KernelNodeParams {
    /// Blocks in the grid.
    pub grid: [u32; 3],
    /// Threads in a block.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_memory_bytes: u32,
}

/// Memory allocated by a graph's memory-allocation node ([`BuildGraph::add_alloc`](crate::BuildGraph::add_alloc)): it
/// exists while the graph runs, from that node until the free node that takes this value
/// ([`BuildGraph::add_free`](crate::BuildGraph::add_free)), or, without one, until freed on the device's default pool's
/// terms (see [`GraphOptions::auto_free_on_launch`](crate::GraphOptions::auto_free_on_launch)).
/// Pass it to the graph's kernels between the two nodes: it is a kernel argument (its address).
/// It (or a [`range`](GraphAllocation::range) of it) is also the end of the graph's copy and
/// fill nodes ([`NodeMemory`](crate::NodeMemory)), which the graph checks, when it is
/// instantiated, to lie between the two nodes.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GraphAllocation {
    pub(super) node: GraphNode,
    pub(super) ptr: DevicePtr,
    pub(super) size: usize,
}

// A kernel argument (of a graph node, or a launch in the capture that made it): its address,
// valid in the nodes between its allocation and its free, which the graph keeps.
crate::args::wrapper_arg!(GraphAllocation);
impl crate::args::GraphArg for GraphAllocation {}

impl crate::args::sealed::Arg for GraphAllocation {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::address_arg(&self.ptr.0, None)
    }
}

impl GraphAllocation {
    /// The allocation node.
    pub fn node(&self) -> GraphNode {
        self.node
    }

    /// The address it has while the graph runs (the same on every launch).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

pub use crate::args::GraphArg;

/// A kernel node's arguments, checked against the kernel: their addresses for the driver
/// and the buffers among them.
pub(crate) struct KernelArgs<'a> {
    pointers: Vec<*mut c_void>,
    pub(crate) buffers: Vec<Arc<Buffer>>,
    /// What else the arguments need kept alive (texture and surface objects).
    pub(crate) kept: Vec<Box<dyn Send>>,
    _args: std::marker::PhantomData<&'a ()>,
}

impl<'a> KernelArgs<'a> {
    /// [`launch`](crate::launch)'s checks for a node of `context`, and the arguments' bytes.
    pub(crate) fn prepare(
        context: &Context,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &'a [&'a dyn GraphArg],
    ) -> Result<KernelArgs<'a>> {
        let sizes: Vec<usize> = args.iter().map(|arg| arg.arg().size).collect();
        crate::launch::validate_node(context, config, kernel, &sizes)?;
        let mut buffers = Vec::new();
        for (index, kept) in args
            .iter()
            .enumerate()
            .filter_map(|(index, arg)| arg.buffer().map(|kept| (index, kept)))
        {
            // Every argument's buffer is an `Arc<Buffer>` (args names none: it sits below
            // memory); anything else would be this crate's mistake, refused rather than kept
            // unchecked.
            let Some(buffer) = kept.downcast_ref::<Arc<Buffer>>() else {
                return Err(with_index(
                    Error::InvalidArgument {
                        name: "args",
                        reason: "its memory is of no type a graph node knows to keep".to_owned(),
                    },
                    index,
                ));
            };
            check_buffer(buffer, context, "args").map_err(|e| with_index(e, index))?;
            buffers.push(buffer.clone());
        }
        Ok(KernelArgs {
            pointers: args.iter().map(|arg| arg.arg().ptr.cast_mut()).collect(),
            buffers,
            kept: args.iter().filter_map(|arg| arg.keep()).collect(),
            _args: std::marker::PhantomData,
        })
    }

    /// The driver's parameters, pointing into these arguments.
    pub(crate) fn spec(
        &self,
        context: &Context,
        config: &LaunchConfig,
        kernel: &Kernel,
    ) -> KernelNodeSpec {
        KernelNodeSpec {
            kernel: kernel.handle(),
            context: context.handle(),
            grid: config.grid,
            block: config.block,
            shared_mem_bytes: config.shared_memory_bytes,
            args: self.pointers.as_ptr().cast_mut(),
        }
    }
}

fn with_index(error: Error, index: usize) -> Error {
    match error {
        Error::InvalidArgument { name, reason } => Error::InvalidArgument {
            name,
            reason: format!("argument {index}: {reason}"),
        },
        other => other,
    }
}

/// Refuses a buffer the graph's device cannot use.
pub(super) fn check_buffer(buffer: &Buffer, context: &Context, name: &'static str) -> Result<()> {
    if !buffer.is_device_accessible() {
        return Err(Error::InvalidArgument {
            name,
            reason: "its memory is not accessible from devices".to_owned(),
        });
    }
    let device = context.device();
    match buffer.device() {
        Some(own) if own != device && !buffer.memory_resource().is_accessible_from(device)? => {
            Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "its memory is on device {} and not accessible from the graph's device {}",
                    own.ordinal(),
                    device.ordinal()
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Refuses a node that is not one of `graph`'s, as handed out and not removed.
pub(crate) fn check_node(
    state: &GraphState,
    graph: GraphHandle,
    node: GraphNode,
    name: &'static str,
) -> Result<()> {
    if node.graph != graph {
        return Err(Error::InvalidArgument {
            name,
            reason: "the node belongs to another graph".to_owned(),
        });
    }
    if state.nodes.get(&(graph, node.handle)) != Some(&node.serial) {
        return Err(Error::InvalidArgument {
            name,
            reason: "the node was removed from the graph, or not handed out by it".to_owned(),
        });
    }
    Ok(())
}

/// Notes `handle` as a node of `graph` handed out (again the same value for a node handed
/// out before and not removed).
pub(crate) fn note(
    state: &mut GraphState,
    graph: GraphHandle,
    handle: GraphNodeHandle,
) -> GraphNode {
    // A node handed out before (a walk of the graph names it again) keeps its serial.
    let serial = *state
        .nodes
        .entry((graph, handle))
        .or_insert_with(super::serial);
    GraphNode {
        handle,
        graph,
        serial,
    }
}

pub(super) fn same_size(src: usize, dst: usize, name: &'static str) -> Result<()> {
    if src == dst {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name,
        reason: format!("it holds {dst} bytes and the source {src}; copies need equal sizes"),
    })
}
