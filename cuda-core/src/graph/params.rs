//! The parameters of a graph's copy, fill, host and event nodes: what the add and set methods
//! of [`BuildGraph`](super::BuildGraph) and [`GraphExec`] hand the driver, checked the same
//! way for both, and what the driver gives back when asked.

use std::sync::Arc;

use super::keep::Kept;
use super::node::{check_buffer, check_node, same_size};
use super::{add_home, Graph, GraphExec, GraphNode, GraphState, NodeKind};
use crate::context::Context;
use crate::driver::{CopyNodeInfo, CopySpec, GraphHandle, MemsetSpec};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::memory::span::Span;
use crate::memory::{Buffer, DevicePtr, FillPattern, GraphMemory, Pod};

/// A fill node's parameters, as the driver holds them (`cuGraphMemsetNodeGetParams`):
/// `count` elements of `element_size` bytes (1, 2 or 4) at `dst`, each set to the low
/// `element_size` bytes of `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "cuGraphMemsetNodeGetParams")]
pub struct FillNodeParams {
    /// The first byte filled.
    pub dst: DevicePtr,
    /// The pattern, in its low `element_size` bytes.
    pub value: u32,
    /// The pattern's width in bytes.
    pub element_size: u32,
    /// How many elements are filled (times the rows of a two-dimensional fill).
    pub count: usize,
}

/// One end of a copy node, as the driver holds it (`CUmemorytype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUmemorytype")]
pub enum CopyEnd {
    /// Device, managed or pinned memory by its device address (`CU_MEMORYTYPE_DEVICE` or
    /// `CU_MEMORYTYPE_UNIFIED`).
    Device(DevicePtr),
    /// Host memory by its address (`CU_MEMORYTYPE_HOST`).
    Host(usize),
    /// A CUDA array (`CU_MEMORYTYPE_ARRAY`).
    Array,
}

/// A copy node's parameters, as the driver holds them (`cuGraphMemcpyNodeGetParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "cuGraphMemcpyNodeGetParams")]
pub struct CopyNodeParams {
    /// Where it copies from.
    pub src: CopyEnd,
    /// Where it copies to.
    pub dst: CopyEnd,
    /// How many bytes (width times height times depth of the driver's copy).
    pub bytes: usize,
}

impl CopyNodeParams {
    fn from_info(info: CopyNodeInfo) -> CopyNodeParams {
        let end = |kind: u32, address: u64| match kind {
            1 => CopyEnd::Host(address as usize),
            3 => CopyEnd::Array,
            _ => CopyEnd::Device(DevicePtr(address)),
        };
        CopyNodeParams {
            src: end(info.src_type, info.src),
            dst: end(info.dst_type, info.dst),
            bytes: info.bytes,
        }
    }
}

/// A fill of `dst` with `value`, checked for `context`'s device.
pub(super) fn fill_spec<P: FillPattern>(
    dst: Span<'_>,
    value: P,
    context: &Context,
) -> Result<MemsetSpec> {
    check_buffer(dst.buffer, context, "dst")?;
    fill_spec_at(dst.ptr, dst.size, value)
}

/// A fill of `size` bytes at `ptr` with `value`, whose memory was checked by the caller.
pub(super) fn fill_spec_at<P: FillPattern>(ptr: u64, size: usize, value: P) -> Result<MemsetSpec> {
    let width = std::mem::size_of::<P>();
    if size % width != 0 || ptr % width as u64 != 0 {
        return Err(Error::InvalidArgument {
            name: "value",
            reason: format!(
                "a {width}-byte pattern needs a multiple of {width} bytes at a {width}-byte \
                 aligned address (it has {size} bytes at {ptr:#x})"
            ),
        });
    }
    Ok(MemsetSpec {
        dst: ptr,
        value: value.pattern(),
        element_size: width as u32,
        count: size / width,
    })
}

/// Refuses a buffer a copy node of `context`'s graph cannot reach: device memory as
/// [`check_buffer`] does, host memory that `context`'s device has no access to (a pinned pool
/// whose access was not granted to it: the driver faults on such a copy, where it does not
/// refuse it). Access is checked when the node is made; revoking it later, while the graph
/// may launch, is the caller's to order (as for any work queued on the memory).
pub(super) fn check_copied(buffer: &Buffer, context: &Context, name: &'static str) -> Result<()> {
    if !buffer.is_host_accessible() {
        return check_buffer(buffer, context, name);
    }
    if buffer.device().is_none() {
        let resource = buffer.memory_resource();
        if !resource.is_accessible_from(context.device())? {
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "its host memory ({resource:?}) is not accessible from the graph's device {}; \
                     grant access with PinnedMemoryPool::set_access",
                    context.device().ordinal()
                ),
            });
        }
    }
    Ok(())
}

/// A copy of `src` into `dst`, checked for `context`'s device.
pub(super) fn copy_spec(src: Span<'_>, dst: Span<'_>, context: &Context) -> Result<CopySpec> {
    for (span, name) in [(src, "src"), (dst, "dst")] {
        check_copied(span.buffer, context, name)?;
    }
    copy_spec_at((src.ptr, src.size), (dst.ptr, dst.size))
}

/// A copy between two ranges of device-addressed memory (address, size), which the caller
/// checked; sizes must match.
pub(super) fn copy_spec_at(src: (u64, usize), dst: (u64, usize)) -> Result<CopySpec> {
    same_size(src.1, dst.1, "dst")?;
    Ok(CopySpec {
        dst: dst.0,
        src: src.0,
        src_host: false,
        bytes: src.1,
    })
}

/// A copy of the host values `src` into `dst`, checked for `context`'s device. The copy
/// reads `src`'s heap memory, which does not move with the vector.
pub(super) fn host_copy_spec<T: Pod>(
    src: &[T],
    dst: Span<'_>,
    context: &Context,
) -> Result<CopySpec> {
    check_copied(dst.buffer, context, "dst")?;
    host_copy_spec_at(src, (dst.ptr, dst.size))
}

/// A copy of the host values `src` into device-addressed memory (address, size) that the
/// caller checked; sizes must match.
pub(super) fn host_copy_spec_at<T: Pod>(src: &[T], dst: (u64, usize)) -> Result<CopySpec> {
    let bytes = std::mem::size_of_val(src);
    same_size(bytes, dst.1, "dst")?;
    Ok(CopySpec {
        dst: dst.0,
        src: src.as_ptr() as usize as u64,
        src_host: true,
        bytes,
    })
}

/// Refuses an event of another context than `context`.
pub(super) fn check_event(event: &Event, context: &Context) -> Result<()> {
    if event.context().handle() != context.handle() {
        return Err(Error::InvalidArgument {
            name: "event",
            reason: "the event is of another context than the graph".to_owned(),
        });
    }
    Ok(())
}

/// Refuses a node of `graph` that is not one of `wanted`'s kinds, named `what`; gives its
/// kind.
pub(super) fn check_kind(
    state: &GraphState,
    context: &Context,
    graph: GraphHandle,
    node: GraphNode,
    wanted: &[NodeKind],
    what: &str,
) -> Result<NodeKind> {
    check_node(state, graph, node, "node")?;
    let kind = NodeKind::from_code(context.driver().graph_node_type(node.handle)?);
    if !wanted.contains(&kind) {
        return Err(Error::InvalidArgument {
            name: "node",
            reason: format!("it is a {kind:?} node, not {what}"),
        });
    }
    Ok(kind)
}

/// A fill node's parameters from the driver.
pub(super) fn fill_node(context: &Context, node: GraphNode) -> Result<FillNodeParams> {
    let spec = context.driver().graph_memset_node_get(node.handle)?;
    Ok(FillNodeParams {
        dst: DevicePtr(spec.dst),
        value: spec.value,
        element_size: spec.element_size,
        count: spec.count,
    })
}

/// A copy node's parameters from the driver.
pub(super) fn copy_node(context: &Context, node: GraphNode) -> Result<CopyNodeParams> {
    let info = context.driver().graph_memcpy_node_get(node.handle)?;
    Ok(CopyNodeParams::from_info(info))
}

/// The kinds the set methods take.
pub(super) mod kinds {
    use super::NodeKind;

    pub(in crate::graph) const FILL: &[NodeKind] = &[NodeKind::Memset];
    pub(in crate::graph) const COPY: &[NodeKind] = &[NodeKind::Memcpy];
    pub(in crate::graph) const HOST: &[NodeKind] = &[NodeKind::Host];
    pub(in crate::graph) const EVENT: &[NodeKind] = &[NodeKind::EventRecord, NodeKind::EventWait];
    /// The kinds the driver lets an executable graph disable.
    pub(in crate::graph) const SWITCHABLE: &[NodeKind] =
        &[NodeKind::Kernel, NodeKind::Memcpy, NodeKind::Memset];
}

use kinds::{COPY, EVENT, FILL, HOST, SWITCHABLE};

/// Changes of an executable graph's copy, fill, host and event nodes in place
/// (`cuGraphExec*NodeSetParams`, `cuGraphExecEvent*NodeSetEvent`). `node` is a node of `graph`,
/// the graph this one was instantiated from; the graph itself is not changed. What the new
/// parameters refer to (buffers, host data, closures, events) is kept alive until this
/// executable graph and its launches are done; launches queued before the change keep the
/// old parameters.
///
/// The driver allows only changes that keep a node's shape: a copy between memory of the
/// same kinds and contexts as before, a fill of memory of the same context, one row each.
/// It refuses others with its error, and the node is then left as it was.
impl GraphExec {
    /// Changes a fill node to fill `dst` with `value` (`cuGraphExecMemsetNodeSetParams`),
    /// checked as [`BuildGraph::add_fill`](super::BuildGraph::add_fill) checks it.
    #[doc(alias = "cuGraphExecMemsetNodeSetParams")]
    pub fn set_fill<P: FillPattern>(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        dst: &impl GraphMemory,
        value: P,
    ) -> Result<()> {
        self.check_source(graph, node, FILL, "a fill node")?;
        let memset = fill_spec(dst.span(), value, &self.context)?;
        let context = self.context.handle();
        self.context.driver().graph_exec_memset_node_set(
            self.handle,
            node.handle,
            &memset,
            context,
        )?;
        self.keep_buffer(dst.kept(), false);
        Ok(())
    }

    /// Changes a copy node to copy `src` into `dst` (`cuGraphExecMemcpyNodeSetParams`),
    /// checked as [`BuildGraph::add_copy`](super::BuildGraph::add_copy) checks it.
    #[doc(alias = "cuGraphExecMemcpyNodeSetParams")]
    pub fn set_copy(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        src: &impl GraphMemory,
        dst: &impl GraphMemory,
    ) -> Result<()> {
        self.check_source(graph, node, COPY, "a copy node")?;
        let copy = copy_spec(src.span(), dst.span(), &self.context)?;
        self.set_memcpy(node, &copy)?;
        self.keep_buffer(src.kept(), true);
        self.keep_buffer(dst.kept(), true);
        Ok(())
    }

    /// Changes a copy node to copy the host values `src` (owned from now on) into `dst`
    /// (`cuGraphExecMemcpyNodeSetParams`), checked as
    /// [`BuildGraph::add_copy_from_host`](super::BuildGraph::add_copy_from_host) checks it.
    /// The node must have copied from host memory before.
    #[doc(alias = "cuGraphExecMemcpyNodeSetParams")]
    pub fn set_copy_from_host<T: Pod>(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        src: Vec<T>,
        dst: &impl GraphMemory,
    ) -> Result<()> {
        self.check_source(graph, node, COPY, "a copy node")?;
        let copy = host_copy_spec(&src, dst.span(), &self.context)?;
        self.set_memcpy(node, &copy)?;
        self.extras.push(Box::new(src));
        self.keep_buffer(dst.kept(), true);
        Ok(())
    }

    /// Changes a host node to run `f` (`cuGraphExecHostNodeSetParams`); as for
    /// [`BuildGraph::add_host`](super::BuildGraph::add_host).
    #[doc(alias = "cuGraphExecHostNodeSetParams")]
    pub fn set_host<F: Fn() + Send + Sync + 'static>(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        f: F,
    ) -> Result<()> {
        self.check_source(graph, node, HOST, "a host node")?;
        let (boxed, (entry, data)) = super::keep::host_fn(f);
        self.context
            .driver()
            .graph_exec_host_node_set(self.handle, node.handle, entry, data)?;
        self.extras.push(boxed);
        Ok(())
    }

    /// Changes an event record or event wait node to record or wait on `event`
    /// (`cuGraphExecEventRecordNodeSetEvent`, `cuGraphExecEventWaitNodeSetEvent`); the event
    /// must be of the graph's context.
    #[doc(alias = "cuGraphExecEventRecordNodeSetEvent")]
    #[doc(alias = "cuGraphExecEventWaitNodeSetEvent")]
    pub fn set_event(&mut self, graph: &Graph, node: GraphNode, event: &Arc<Event>) -> Result<()> {
        let kind = self.check_source(graph, node, EVENT, "an event record or wait node")?;
        check_event(event, &self.context)?;
        let record = kind == NodeKind::EventRecord;
        self.context.driver().graph_exec_event_node_set(
            self.handle,
            node.handle,
            event.handle(),
            record,
        )?;
        if record {
            event.note_record();
        }
        self.extras.push(Box::new(event.clone()));
        Ok(())
    }

    /// Refuses a graph other than the source, or a node of it of another kind.
    /// Enables or disables `node` in this executable graph's launches from now on
    /// (`cuGraphNodeSetEnabled`): a disabled node does nothing when the graph runs (a kernel
    /// does not run, a copy or fill is not made) while the order around it holds, and its
    /// parameters can still be changed. `node` is a node of `graph`, the graph this one was
    /// instantiated from; the graph itself is not changed. Only kernel, copy and fill nodes
    /// can be disabled: any other kind is [`Error::InvalidArgument`] naming it, before the
    /// driver is called. Launches queued before the change are as they were.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_core::{Allocate, BuildGraph, Device, Graph, GraphOptions, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = Arc::new(device.memory_resource()?.allocate(16, &stream)?);
    /// let mut graph = Graph::new(device)?;
    /// let fill = graph.add_fill(&[], &buffer, 7u32)?;
    /// let mut exec = graph.instantiate(GraphOptions::default())?;
    /// exec.set_node_enabled(&graph, fill, false)?;
    /// assert!(!exec.node_enabled(&graph, fill)?);
    /// exec.launch(&stream)?; // the fill is skipped
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuGraphNodeSetEnabled")]
    pub fn set_node_enabled(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        enabled: bool,
    ) -> Result<()> {
        self.check_source(
            graph,
            node,
            SWITCHABLE,
            "a kernel, copy or fill node (the only kinds that can be disabled)",
        )?;
        self.context
            .driver()
            .graph_node_set_enabled(self.handle, node.handle, enabled)
    }

    /// Whether `node` runs in this executable graph's launches (`cuGraphNodeGetEnabled`):
    /// see [`GraphExec::set_node_enabled`], whose checks it makes.
    #[doc(alias = "cuGraphNodeGetEnabled")]
    pub fn node_enabled(&self, graph: &Graph, node: GraphNode) -> Result<bool> {
        self.check_source(
            graph,
            node,
            SWITCHABLE,
            "a kernel, copy or fill node (the only kinds that can be disabled)",
        )?;
        self.context
            .driver()
            .graph_node_get_enabled(self.handle, node.handle)
    }

    fn check_source(
        &self,
        graph: &Graph,
        node: GraphNode,
        wanted: &[NodeKind],
        what: &str,
    ) -> Result<NodeKind> {
        if graph.serial != self.source {
            return Err(Error::InvalidArgument {
                name: "graph",
                reason: "it is not the graph this executable graph was instantiated from"
                    .to_owned(),
            });
        }
        check_kind(
            &graph.state,
            &self.context,
            graph.handle,
            node,
            wanted,
            what,
        )
    }

    fn set_memcpy(&self, node: GraphNode, copy: &CopySpec) -> Result<()> {
        let context = self.context.handle();
        self.context
            .driver()
            .graph_exec_memcpy_node_set(self.handle, node.handle, copy, context)
    }

    /// Keeps `buffer` alive with this executable graph, orders its launches against the
    /// buffer's stream, and checks its access at each launch where that can be revoked (as
    /// `Target::keep_buffer` does for a graph's nodes).
    pub(super) fn keep_buffer(&mut self, buffer: &Arc<Buffer>, copy: bool) {
        add_home(&mut self.homes, buffer.deallocation_stream());
        super::add_gated(
            &mut self.gated,
            buffer.memory_resource(),
            copy,
            self.context.device(),
        );
        let kept: Kept = Box::new(buffer.clone());
        self.extras.push(kept);
    }
}
