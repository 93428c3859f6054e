//! Conditional nodes: a body graph run once or not at all (IF, and IF/ELSE with a second body
//! for a zero condition), again and again while the condition holds (WHILE), or one of several
//! bodies picked by the condition's value (SWITCH). The condition is a [`ConditionalHandle`]
//! of the graph, set on the device by the graph's kernels with `cudaGraphSetConditional`, or
//! given a default value that each launch starts with.

use super::id::GraphNode;
use super::node::check_node;
use super::target::{GraphBody, Target};
use crate::args::GraphArg;
use crate::driver::GraphHandle;
use crate::error::{Error, Result};
use crate::info::types::DriverVersion;

/// A conditional node's condition (`CUgraphConditionalHandle`), made by
/// [`BuildGraph::conditional_handle`](crate::BuildGraph::conditional_handle) for one graph (or
/// body), whose conditional nodes take it. A plain identifier, owned by its graph.
///
/// It is a kernel argument of the graph's kernel nodes ([`GraphArg`]), passed as the
/// `cudaGraphConditionalHandle` (a 64-bit integer) that device code gives
/// `cudaGraphSetConditional(handle, value)`. Only the kernels of the graph that holds the
/// conditional node, or of its bodies, may set it (the driver ties it to the graph's context).
///
/// The kernels that set a condition call the device runtime's `cudaGraphSetConditional`. NVRTC
/// compiles such a call in one of three ways: with the function declared in the source, as the
/// device runtime's header declares it (as below; no option needed), with
/// [`ProgramOptions::extensible_whole_program`](crate::ProgramOptions::extensible_whole_program)
/// (the cubin loads as it is: do not hand it to a [`Linker`](crate::Linker), which drops its
/// kernels), or with
/// [`ProgramOptions::relocatable_device_code`](crate::ProgramOptions::relocatable_device_code)
/// and then a [`Linker`](crate::Linker) link.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_core::{Allocate, BuildGraph, CodeType, Device, Graph, GraphOptions, LaunchConfig};
/// use cuda_core::{Program, ProgramOptions, StreamOptions};
///
/// const SOURCE: &str = r#"
/// extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int);
/// extern "C" __global__ void step(cudaGraphConditionalHandle again, unsigned* n, unsigned limit) {
///     unsigned now = ++*n;
///     cudaGraphSetConditional(again, now < limit);
/// }
/// "#;
/// let device = Device::new(0)?;
/// let code = Program::new(SOURCE, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
/// let step = code.get_kernel("step")?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let counter = Arc::new(device.memory_resource()?.allocate(4, &stream)?);
/// let mut graph = Graph::new(device)?;
/// let zero = graph.add_fill(&[], &counter, 0u32)?;
/// // Each launch starts with the condition at 1: the body runs at least once.
/// let again = graph.conditional_handle(Some(1))?;
/// let looping = graph.add_while(&[zero], again)?;
/// let mut body = graph.body(&looping, 0)?;
/// // SAFETY: one thread adds to the 4-byte counter.
/// unsafe {
///     body.add_kernel(&[], &LaunchConfig::new([1, 1, 1], [1, 1, 1]), &step, &[&again, &counter, &10u32])?
/// };
/// let exec = graph.instantiate(GraphOptions::default())?;
/// exec.launch(&stream)?;
/// assert_eq!(counter.to_vec::<u32>(&stream)?, [10]);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "CUgraphConditionalHandle")]
pub struct ConditionalHandle {
    raw: u64,
    graph: GraphHandle,
    /// Which making this is ([`serial`](super::serial)): one of a removed body or a dropped
    /// graph never matches a later graph at the same address.
    serial: u64,
}

impl ConditionalHandle {
    /// The raw `CUgraphConditionalHandle`.
    pub fn as_raw(&self) -> u64 {
        self.raw
    }
}

impl GraphArg for ConditionalHandle {}

impl crate::args::sealed::Arg for ConditionalHandle {
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (&self.raw as *const u64).cast(),
            size: std::mem::size_of::<u64>(),
            home: None,
        }
    }
}

/// Which kind of conditional node (`CUgraphConditionalNodeType`, and the number of bodies).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphConditionalNodeType")]
pub enum ConditionalKind {
    /// One body, run once when the condition is nonzero (`CU_GRAPH_COND_TYPE_IF`).
    If,
    /// Two bodies: the first run when the condition is nonzero, the second when it is zero
    /// (`CU_GRAPH_COND_TYPE_IF` with two bodies).
    IfElse,
    /// One body, run again and again while the condition is nonzero, checked before each run
    /// (`CU_GRAPH_COND_TYPE_WHILE`).
    While,
    /// Some bodies: the one whose index is the condition runs, none when the condition is the
    /// number of bodies or more (`CU_GRAPH_COND_TYPE_SWITCH`).
    Switch,
}

impl ConditionalKind {
    /// The driver's `CUgraphConditionalNodeType`.
    pub(crate) fn code(self) -> u32 {
        match self {
            ConditionalKind::If | ConditionalKind::IfElse => 0,
            ConditionalKind::While => 1,
            ConditionalKind::Switch => 2,
        }
    }

    /// The oldest driver that has it, and what to call it when refused.
    fn needs(self) -> (DriverVersion, &'static str) {
        match self {
            ConditionalKind::If => (
                IF_AND_WHILE,
                "cuGraphAddNode of an IF conditional node (drivers 12.3 and newer)",
            ),
            ConditionalKind::While => (
                IF_AND_WHILE,
                "cuGraphAddNode of a WHILE conditional node (drivers 12.3 and newer)",
            ),
            ConditionalKind::IfElse => (
                ELSE_AND_SWITCH,
                "cuGraphAddNode of an IF/ELSE conditional node (drivers 12.8 and newer)",
            ),
            ConditionalKind::Switch => (
                ELSE_AND_SWITCH,
                "cuGraphAddNode of a SWITCH conditional node (drivers 12.8 and newer)",
            ),
        }
    }
}

/// Conditional handles, IF and WHILE nodes came with the 12.3 driver.
const IF_AND_WHILE: DriverVersion = DriverVersion(12030);
/// IF with an ELSE body and SWITCH nodes came with the 12.8 driver.
const ELSE_AND_SWITCH: DriverVersion = DriverVersion(12080);

/// A conditional node ([`BuildGraph::add_if`](crate::BuildGraph::add_if) and the like): its
/// node in the graph, and its bodies, each a graph owned by the node, to build in with
/// [`BuildGraph::body`](crate::BuildGraph::body).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConditionalNode {
    node: GraphNode,
    kind: ConditionalKind,
    bodies: Vec<GraphHandle>,
}

impl ConditionalNode {
    /// The node, for dependencies and the graph's other methods.
    pub fn node(&self) -> GraphNode {
        self.node
    }

    /// Which kind of conditional node it is.
    pub fn kind(&self) -> ConditionalKind {
        self.kind
    }

    /// How many bodies it has: 1 for IF and WHILE, 2 for IF/ELSE, the number of cases for
    /// SWITCH.
    pub fn body_count(&self) -> usize {
        self.bodies.len()
    }
}

/// [`BuildGraph::conditional_handle`](crate::BuildGraph::conditional_handle).
pub(super) fn handle(target: Target<'_>, default: Option<u32>) -> Result<ConditionalHandle> {
    target.context.require_driver(
        IF_AND_WHILE,
        "cuGraphConditionalHandleCreate (conditional nodes: drivers 12.3 and newer)",
    )?;
    let context = target.context;
    let raw = context.driver().graph_conditional_handle_create(
        target.graph,
        context.handle(),
        default,
    )?;
    let serial = super::serial();
    target.state.handles.insert((target.graph, raw), serial);
    Ok(ConditionalHandle {
        raw,
        graph: target.graph,
        serial,
    })
}

/// [`BuildGraph::add_if`](crate::BuildGraph::add_if) and the others: a conditional node of
/// `kind` with `cases` bodies.
pub(super) fn add(
    mut target: Target<'_>,
    deps: &[GraphNode],
    handle: ConditionalHandle,
    kind: ConditionalKind,
    cases: u32,
) -> Result<ConditionalNode> {
    let deps = target.deps(deps)?;
    if handle.graph != target.graph
        || target.state.handles.get(&(handle.graph, handle.raw)) != Some(&handle.serial)
    {
        return Err(Error::InvalidArgument {
            name: "handle",
            reason: "the conditional handle was made for another graph (or body), or for one \
                     since dropped or removed: a conditional node takes a handle of the graph \
                     it is added to"
                .to_owned(),
        });
    }
    if cases == 0 {
        return Err(Error::InvalidArgument {
            name: "cases",
            reason: "a SWITCH node needs at least one case".to_owned(),
        });
    }
    let (needed, what) = kind.needs();
    target.context.require_driver(needed, what)?;
    let context = target.context;
    let (node, bodies) = context.driver().graph_add_conditional_node(
        target.graph,
        &deps,
        context.handle(),
        handle.raw,
        kind.code(),
        cases,
    )?;
    let node = target.node(node);
    target.state.bodies.insert(node.handle, bodies.clone());
    if bodies.len() != cases as usize || bodies.iter().any(|body| body.0.is_null()) {
        // The node is the graph's now; without its bodies it can only be removed.
        return Err(Error::NotSupported {
            function: "cuGraphAddNode of a conditional node (the driver gave no body graphs)",
            driver: context.driver().version(),
            abi: context.driver().abi().major(),
        });
    }
    Ok(ConditionalNode { node, kind, bodies })
}

/// [`BuildGraph::body`](crate::BuildGraph::body).
pub(super) fn body<'a>(
    target: Target<'a>,
    node: &ConditionalNode,
    index: usize,
) -> Result<GraphBody<'a>> {
    check_node(target.state, target.graph, node.node, "node")?;
    // The node is the one handed out (its serial matched): its bodies are the graph's own
    // record of them, never the caller's copy.
    let bodies = target
        .state
        .bodies
        .get(&node.node.handle)
        .map_or(&[][..], Vec::as_slice);
    let Some(&graph) = bodies.get(index) else {
        return Err(Error::InvalidArgument {
            name: "index",
            reason: format!(
                "the {:?} node has {} bod{}, numbered from 0; there is no body {index}",
                node.kind,
                bodies.len(),
                if bodies.len() == 1 { "y" } else { "ies" }
            ),
        });
    };
    Ok(GraphBody {
        target: Target { graph, ..target },
    })
}
