//! Building a graph node by node: [`BuildGraph`], on a [`Graph`] and on the bodies of its
//! conditional nodes ([`GraphBody`]).

use std::sync::Arc;

use super::allocations::{End, NodeMemory};
use super::capture::CaptureMode;
use super::conditional::{self, ConditionalHandle, ConditionalKind, ConditionalNode};
use super::id::GraphNode;
use super::node::*;
use super::params::{self, CopyNodeParams, FillNodeParams};
use super::target::{seal, GraphBody, Target};
use super::Graph;
use crate::driver::{CopySpec, GraphNodeHandle};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::memory::{DevicePtr, FillPattern, GraphMemory, Pod};
use crate::stream::Stream;

/// Adding, connecting, reading and removing the nodes of a [`Graph`] (or of a conditional
/// node's [`GraphBody`]).
///
/// Each node is added after the nodes in `deps` (its dependencies, of the same graph). What
/// a node refers to is kept alive by the graph, its clones, its executable graphs and their
/// queued launches: kernels, buffers (given as `Arc<Buffer>`), events (as `Arc<Event>`),
/// host functions, host data copied from, and child graphs' contents. So every node but the
/// kernel node is safe to add, and launching the graph is safe.
///
/// A node that writes a buffer (a copy's or a fill's destination) writes it at each launch,
/// through the shared `Arc<Buffer>`. A launch is ordered after the work queued so far on the
/// streams its buffers are freed on, and those streams after it (as any work over another
/// stream's buffer is); work that another thread queues on the same buffer on yet another
/// stream at the same time is not ordered with the launch, and the bytes are then whichever
/// write came last. Device memory holds plain bytes (`Pod` values), so such a race gives wrong
/// values, never an invalid Rust value; order those uses (an event, one stream) as for two
/// kernels on one buffer.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_core::{Allocate, BuildGraph, Device, Graph, GraphOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let a = Arc::new(device.memory_resource()?.allocate(1024, &stream)?);
/// let b = Arc::new(device.memory_resource()?.allocate(1024, &stream)?);
/// let mut graph = Graph::new(device)?;
/// let fill = graph.add_fill(&[], &a, 7u32)?;
/// let copy = graph.add_copy(&[fill], &a, &b)?;
/// graph.add_host(&[copy], || println!("copied"))?;
/// let exec = graph.instantiate(GraphOptions::default())?;
/// drop((graph, a)); // the executable graph keeps `a` alive
/// exec.launch(&stream)?;
/// assert!(b.to_vec::<u32>(&stream)?.iter().all(|&x| x == 7));
/// # Ok::<(), cuda_core::Error>(())
/// ```
pub trait BuildGraph: seal::Buildable {
    /// A node that does nothing, to join or fork dependencies (`cuGraphAddEmptyNode`).
    #[doc(alias = "cuGraphAddEmptyNode")]
    fn add_empty(&mut self, deps: &[GraphNode]) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let driver = target.context.driver();
        let handle = driver.graph_add_empty_node(target.graph, &deps)?;
        Ok(target.node(handle))
    }

    /// A kernel launch node (`cuGraphAddKernelNode`), checked as [`launch`](crate::launch)
    /// checks its launch against the graph's device: the launch shape, and the number and
    /// sizes of the arguments. Clusters, cooperative launches and launch attributes are
    /// refused here (capture a launch that has them). The kernel and the buffers among the
    /// arguments are kept alive with the graph.
    ///
    /// # Safety
    ///
    /// As for [`launch`](crate::launch), for every launch of the graph: the kernel must only
    /// access memory that its arguments make valid for it (buffers in bounds; raw
    /// [`DevicePtr`] arguments, such as a [`GraphAllocation`]'s, to memory allocated whenever
    /// the node runs), and nothing may use the memory it writes while the graph runs.
    #[doc(alias = "cuGraphAddKernelNode")]
    unsafe fn add_kernel(
        &mut self,
        deps: &[GraphNode],
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn GraphArg],
    ) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let prepared = KernelArgs::prepare(target.context, config, kernel, args)?;
        let spec = prepared.spec(target.context, config, kernel);
        // SAFETY: `spec.args` points at one value per parameter, checked against the kernel's
        // parameters, alive for the call (the driver copies them); the caller vouches for
        // what the kernel does with them.
        let handle = unsafe {
            target
                .context
                .driver()
                .graph_add_kernel_node(target.graph, &deps, &spec)
        }?;
        target.keep(kernel.clone());
        for buffer in &prepared.buffers {
            target.keep_buffer(buffer, false);
        }
        for kept in prepared.kept {
            target.state.keep.get_mut().push(kept);
        }
        Ok(target.node(handle))
    }

    /// A node that fills `dst` with `value` repeated (`cuGraphAddMemsetNode`): its size must
    /// be a multiple of the value's, and its address aligned to it.
    ///
    /// `dst` is a buffer the graph keeps alive, or memory of one of this graph's allocations
    /// ([`GraphAllocation`], [`GraphAllocation::range`]): the node must then depend on the
    /// allocation node, and the free node (if any) on it, through the graph's edges when the
    /// graph is instantiated or an executable graph is updated to it; otherwise that is
    /// refused (see [`NodeMemory`]).
    #[doc(alias = "cuGraphAddMemsetNode")]
    fn add_fill<P: FillPattern>(
        &mut self,
        deps: &[GraphNode],
        dst: &impl NodeMemory,
        value: P,
    ) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let dst = checked_end(&target, dst.end(), "dst", false)?;
        let memset = params::fill_spec_at(dst.ptr, dst.size, value)?;
        let context = target.context;
        let handle = context.driver().graph_add_memset_node(
            target.graph,
            &deps,
            &memset,
            context.handle(),
        )?;
        dst.note_use(&mut target, handle);
        Ok(target.node(handle))
    }

    /// A node that copies `src` into `dst` (`cuGraphAddMemcpyNode`); sizes must match. Either
    /// end may be memory of one of this graph's allocations, ordered as for
    /// [`add_fill`](BuildGraph::add_fill).
    #[doc(alias = "cuGraphAddMemcpyNode")]
    fn add_copy(
        &mut self,
        deps: &[GraphNode],
        src: &impl NodeMemory,
        dst: &impl NodeMemory,
    ) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let src = checked_end(&target, src.end(), "src", true)?;
        let dst = checked_end(&target, dst.end(), "dst", true)?;
        let copy = params::copy_spec_at((src.ptr, src.size), (dst.ptr, dst.size))?;
        let handle = add_memcpy(&target, &deps, &copy)?;
        src.note_use(&mut target, handle);
        dst.note_use(&mut target, handle);
        Ok(target.node(handle))
    }

    /// A node that copies host data into `dst` (`cuGraphAddMemcpyNode`); the graph owns the
    /// data (every launch copies the same values). Sizes in bytes must match. `dst` may be
    /// memory of one of this graph's allocations, ordered as for
    /// [`add_fill`](BuildGraph::add_fill).
    #[doc(alias = "cuGraphAddMemcpyNode")]
    fn add_copy_from_host<T: Pod>(
        &mut self,
        deps: &[GraphNode],
        src: Vec<T>,
        dst: &impl NodeMemory,
    ) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let dst = checked_end(&target, dst.end(), "dst", true)?;
        let copy = params::host_copy_spec_at(&src, (dst.ptr, dst.size))?;
        let handle = add_memcpy(&target, &deps, &copy)?;
        // The vector's heap memory does not move with it.
        target.keep(src);
        dst.note_use(&mut target, handle);
        Ok(target.node(handle))
    }

    /// A node that runs `f` on a driver thread each time the graph reaches it, holding back
    /// its dependents until it returns (`cuGraphAddHostNode`). The graph owns `f`.
    ///
    /// `f` must not call CUDA (the driver forbids it in host functions and may deadlock); a
    /// panic in `f` aborts the process, as unwinding into the driver would be undefined.
    #[doc(alias = "cuGraphAddHostNode")]
    fn add_host<F: Fn() + Send + Sync + 'static>(
        &mut self,
        deps: &[GraphNode],
        f: F,
    ) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        let (boxed, (entry, data)) = super::keep::host_fn(f);
        let driver = target.context.driver();
        let handle = driver.graph_add_host_node(target.graph, &deps, entry, data)?;
        target.keep(boxed);
        Ok(target.node(handle))
    }

    /// A node that records `event` (`cuGraphAddEventRecordNode`); the event must be of the
    /// graph's context.
    #[doc(alias = "cuGraphAddEventRecordNode")]
    fn add_event_record(&mut self, deps: &[GraphNode], event: &Arc<Event>) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        params::check_event(event, target.context)?;
        let driver = target.context.driver();
        let handle = driver.graph_add_event_record_node(target.graph, &deps, event.handle())?;
        // Recorded elsewhere from now on: its completion is asked of the driver.
        event.note_record();
        target.keep(event.clone());
        Ok(target.node(handle))
    }

    /// A node that waits for `event`'s last record before its dependents run
    /// (`cuGraphAddEventWaitNode`); the event must be of the graph's context.
    #[doc(alias = "cuGraphAddEventWaitNode")]
    fn add_event_wait(&mut self, deps: &[GraphNode], event: &Arc<Event>) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        params::check_event(event, target.context)?;
        let driver = target.context.driver();
        let handle = driver.graph_add_event_wait_node(target.graph, &deps, event.handle())?;
        target.keep(event.clone());
        Ok(target.node(handle))
    }

    /// A node that runs a copy of `child` (`cuGraphAddChildGraphNode`): later changes to
    /// `child` do not reach it. What `child` keeps alive, this graph keeps too. The driver
    /// refuses a child with memory nodes.
    #[doc(alias = "cuGraphAddChildGraphNode")]
    fn add_child(&mut self, deps: &[GraphNode], child: &Graph) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        if child.context.handle() != target.context.handle() {
            return Err(Error::InvalidArgument {
                name: "child",
                reason: "the child graph is of another context".to_owned(),
            });
        }
        let driver = target.context.driver();
        let mut theirs = child.state.keep.borrow_mut();
        theirs.flush(driver, child.handle)?;
        let handle = driver.graph_add_child_node(target.graph, &deps, child.handle)?;
        theirs.share(driver, target.root, target.state.keep.get_mut())?;
        for home in &child.state.homes {
            target.state.add_home(home);
        }
        target.state.add_captured_homes(&child.state.captured_homes);
        for (resource, copy) in &child.state.gated {
            super::add_gated(
                &mut target.state.gated,
                resource,
                *copy,
                target.context.device(),
            );
        }
        Ok(target.node(handle))
    }

    /// A node that allocates `bytes` of device memory on the graph's device each time it runs
    /// (`cuGraphAddMemAllocNode`), from the graph memory pool; free it with
    /// [`BuildGraph::add_free`]. The driver allows memory nodes only in a graph that is not a
    /// child graph, and refuses to launch a graph again while its last allocations are unfreed
    /// (unless [`GraphOptions::auto_free_on_launch`](crate::GraphOptions::auto_free_on_launch)).
    #[doc(alias = "cuGraphAddMemAllocNode")]
    fn add_alloc(&mut self, deps: &[GraphNode], bytes: usize) -> Result<GraphAllocation> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        if bytes == 0 {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "an allocation node needs a size above zero".to_owned(),
            });
        }
        let context = target.context;
        let ordinal = context.device().ordinal() as i32;
        let (handle, ptr) = context.with_current(|driver| {
            driver.graph_add_mem_alloc_node(target.graph, &deps, ordinal, bytes)
        })?;
        Ok(GraphAllocation {
            node: target.node(handle),
            ptr: DevicePtr(ptr),
            size: bytes,
        })
    }

    /// A node that frees `allocation` (made by this graph's [`BuildGraph::add_alloc`]) each
    /// time it runs (`cuGraphAddMemFreeNode`).
    #[doc(alias = "cuGraphAddMemFreeNode")]
    fn add_free(&mut self, deps: &[GraphNode], allocation: GraphAllocation) -> Result<GraphNode> {
        let mut target = self.target();
        let deps = target.deps(deps)?;
        check_node(target.state, target.graph, allocation.node, "allocation")?;
        let driver = target.context.driver();
        let handle = driver.graph_add_mem_free_node(target.graph, &deps, allocation.ptr.0)?;
        target
            .state
            .allocations
            .freed(allocation.node.handle, handle);
        Ok(target.node(handle))
    }

    /// A condition for this graph's conditional nodes (`cuGraphConditionalHandleCreate`), to
    /// be set by its kernels (see [`ConditionalHandle`]). With a `default`, each launch of
    /// the graph starts with the condition at that value (`CU_GRAPH_COND_ASSIGN_DEFAULT`);
    /// without one, the driver promises no value at a launch's start, and a kernel of the
    /// graph must set it before its node is reached. Made in a body, it is for that
    /// body's conditional nodes. A handle no conditional node takes may make the graph's
    /// instantiation fail. Needs a 12.3 or newer driver ([`Error::NotSupported`] before).
    #[doc(alias = "cuGraphConditionalHandleCreate")]
    fn conditional_handle(&mut self, default: Option<u32>) -> Result<ConditionalHandle> {
        conditional::handle(self.target(), default)
    }

    /// An IF node (`cuGraphAddNode`, `CU_GRAPH_COND_TYPE_IF`): its one body runs when
    /// `handle`'s condition is nonzero as the node is reached. `handle` must be of this graph
    /// ([`BuildGraph::conditional_handle`]). Needs a 12.3 or newer driver.
    ///
    /// A body may hold kernel, empty, fill, copy, child-graph and conditional nodes (the
    /// driver refuses others), all of the graph's context; what they refer to is kept alive
    /// with this graph, as for its own nodes.
    #[doc(alias = "cuGraphAddNode")]
    #[doc(alias = "CU_GRAPH_COND_TYPE_IF")]
    fn add_if(&mut self, deps: &[GraphNode], handle: ConditionalHandle) -> Result<ConditionalNode> {
        conditional::add(self.target(), deps, handle, ConditionalKind::If, 1)
    }

    /// An IF/ELSE node (`cuGraphAddNode`, `CU_GRAPH_COND_TYPE_IF` with two bodies): body 0
    /// runs when `handle`'s condition is nonzero, body 1 when it is zero. As for
    /// [`BuildGraph::add_if`]; needs a 12.8 or newer driver.
    #[doc(alias = "cuGraphAddNode")]
    fn add_if_else(
        &mut self,
        deps: &[GraphNode],
        handle: ConditionalHandle,
    ) -> Result<ConditionalNode> {
        conditional::add(self.target(), deps, handle, ConditionalKind::IfElse, 2)
    }

    /// A WHILE node (`cuGraphAddNode`, `CU_GRAPH_COND_TYPE_WHILE`): its one body runs again
    /// and again while `handle`'s condition is nonzero, checked as the node is reached and
    /// after each run (so a kernel of the body sets it for the next round; a body that never
    /// clears it runs until the process ends). As for [`BuildGraph::add_if`]; needs a 12.3 or
    /// newer driver.
    ///
    /// # A driver fault
    ///
    /// With the 580.159.04 driver, a graph whose WHILE node ran its body more than once
    /// faulted with `CUDA_ERROR_LAUNCH_FAILED` within seconds whenever other work of the
    /// process ran on the device at the same time from another stream: another such graph
    /// (on an H100 and on an H200), a plain kernel or graph (on an H100). The error is
    /// sticky: every later call in the context fails with it. The CUDA runtime alone
    /// reproduces it, without this crate (`docs/driver-issues/while_beside_other_work.cu` in
    /// the repository). IF nodes, a WHILE body that ran once, and WHILE graphs queued on one
    /// stream did not fault. Until a driver is known to be fixed, queue a looping WHILE graph
    /// where nothing else of the process runs meanwhile: on the stream that queues the rest
    /// of the work, or in a process of its own.
    #[doc(alias = "cuGraphAddNode")]
    #[doc(alias = "CU_GRAPH_COND_TYPE_WHILE")]
    fn add_while(
        &mut self,
        deps: &[GraphNode],
        handle: ConditionalHandle,
    ) -> Result<ConditionalNode> {
        conditional::add(self.target(), deps, handle, ConditionalKind::While, 1)
    }

    /// A SWITCH node (`cuGraphAddNode`, `CU_GRAPH_COND_TYPE_SWITCH`) with `cases` bodies (at
    /// least one): body `n` runs when `handle`'s condition is `n`, none when it is `cases` or
    /// more. As for [`BuildGraph::add_if`]; needs a 12.8 or newer driver.
    #[doc(alias = "cuGraphAddNode")]
    #[doc(alias = "CU_GRAPH_COND_TYPE_SWITCH")]
    fn add_switch(
        &mut self,
        deps: &[GraphNode],
        handle: ConditionalHandle,
        cases: u32,
    ) -> Result<ConditionalNode> {
        conditional::add(self.target(), deps, handle, ConditionalKind::Switch, cases)
    }

    /// Body `index` of `node` (a conditional node of this graph), to add nodes to while this
    /// graph is borrowed: 0 for IF and WHILE, 0 (nonzero condition) or 1 (zero) for IF/ELSE,
    /// the case for SWITCH.
    fn body(&mut self, node: &ConditionalNode, index: usize) -> Result<GraphBody<'_>> {
        conditional::body(self.target(), node, index)
    }

    /// Adds the edges `from -> to` of each pair (`cuGraphAddDependencies`): `to` runs after
    /// `from`.
    #[doc(alias = "cuGraphAddDependencies")]
    fn add_dependencies(&mut self, edges: &[(GraphNode, GraphNode)]) -> Result<()> {
        let target = self.target();
        let (from, to) = edge_handles(&target, edges)?;
        target
            .context
            .driver()
            .graph_add_dependencies(target.graph, &from, &to)
    }

    /// Removes the edges `from -> to` of each pair (`cuGraphRemoveDependencies`).
    #[doc(alias = "cuGraphRemoveDependencies")]
    fn remove_dependencies(&mut self, edges: &[(GraphNode, GraphNode)]) -> Result<()> {
        let target = self.target();
        let (from, to) = edge_handles(&target, edges)?;
        target
            .context
            .driver()
            .graph_remove_dependencies(target.graph, &from, &to)
    }

    /// The graph's nodes (`cuGraphGetNodes`).
    #[doc(alias = "cuGraphGetNodes")]
    fn nodes(&mut self) -> Result<Vec<GraphNode>> {
        let mut target = self.target();
        let handles = target.context.driver().graph_nodes(target.graph)?;
        Ok(handles.into_iter().map(|h| target.node(h)).collect())
    }

    /// The nodes without dependencies (`cuGraphGetRootNodes`).
    #[doc(alias = "cuGraphGetRootNodes")]
    fn root_nodes(&mut self) -> Result<Vec<GraphNode>> {
        let mut target = self.target();
        let handles = target.context.driver().graph_root_nodes(target.graph)?;
        Ok(handles.into_iter().map(|h| target.node(h)).collect())
    }

    /// The graph's edges, each `(from, to)` (`cuGraphGetEdges`).
    #[doc(alias = "cuGraphGetEdges")]
    fn edges(&mut self) -> Result<Vec<(GraphNode, GraphNode)>> {
        let mut target = self.target();
        let pairs = target.context.driver().graph_edges(target.graph)?;
        Ok(pairs
            .into_iter()
            .map(|(from, to)| (target.node(from), target.node(to)))
            .collect())
    }

    /// What `node` does (`cuGraphNodeGetType`).
    #[doc(alias = "cuGraphNodeGetType")]
    fn node_kind(&mut self, node: GraphNode) -> Result<NodeKind> {
        let target = self.target();
        check_node(target.state, target.graph, node, "node")?;
        let code = target.context.driver().graph_node_type(node.handle)?;
        Ok(NodeKind::from_code(code))
    }

    /// The nodes `node` runs after (`cuGraphNodeGetDependencies`).
    #[doc(alias = "cuGraphNodeGetDependencies")]
    fn dependencies(&mut self, node: GraphNode) -> Result<Vec<GraphNode>> {
        neighbours(self.target(), node, false)
    }

    /// `node`'s id within its graph (`cuGraphNodeGetLocalId`): a number the driver gives
    /// each node of a graph, which tools and the driver's own messages use. Only the CUDA 13
    /// ABI has the call, on 13.1 and newer drivers: elsewhere [`Error::NotSupported`]
    /// naming it.
    ///
    /// ```no_run
    /// use cuda_core::{BuildGraph, Device, Graph};
    ///
    /// let mut graph = Graph::new(Device::new(0)?)?;
    /// let a = graph.add_empty(&[])?;
    /// let b = graph.add_empty(&[a])?;
    /// assert_ne!(graph.node_local_id(a)?, graph.node_local_id(b)?);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuGraphNodeGetLocalId")]
    fn node_local_id(&mut self, node: GraphNode) -> Result<u32> {
        let target = self.target();
        check_node(target.state, target.graph, node, "node")?;
        target.context.driver().graph_node_local_id(node.handle)
    }

    /// The nodes that run after `node` (`cuGraphNodeGetDependentNodes`).
    #[doc(alias = "cuGraphNodeGetDependentNodes")]
    fn dependents(&mut self, node: GraphNode) -> Result<Vec<GraphNode>> {
        neighbours(self.target(), node, true)
    }

    /// Removes `node` and its edges (`cuGraphDestroyNode`); a conditional node's bodies go
    /// with it, and their nodes are refused from then on. What it referred to stays kept
    /// with the graph.
    #[doc(alias = "cuGraphDestroyNode")]
    fn remove_node(&mut self, node: GraphNode) -> Result<()> {
        let target = self.target();
        check_node(target.state, target.graph, node, "node")?;
        target.context.driver().graph_destroy_node(node.handle)?;
        target.state.forget(target.graph, node.handle);
        Ok(())
    }

    /// A kernel node's launch shape (`cuGraphKernelNodeGetParams`).
    #[doc(alias = "cuGraphKernelNodeGetParams")]
    fn kernel_node(&mut self, node: GraphNode) -> Result<KernelNodeParams> {
        let target = self.target();
        check_kernel_node(&target, node)?;
        let spec = target.context.driver().graph_kernel_node_get(node.handle)?;
        Ok(KernelNodeParams {
            grid: spec.grid,
            block: spec.block,
            shared_memory_bytes: spec.shared_mem_bytes,
        })
    }

    /// Changes a kernel node's kernel, launch shape and arguments
    /// (`cuGraphKernelNodeSetParams`), checked as [`BuildGraph::add_kernel`] checks them.
    /// Executable graphs made before keep what they were instantiated with.
    ///
    /// # Safety
    ///
    /// As for [`BuildGraph::add_kernel`].
    #[doc(alias = "cuGraphKernelNodeSetParams")]
    unsafe fn set_kernel_node(
        &mut self,
        node: GraphNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn GraphArg],
    ) -> Result<()> {
        let mut target = self.target();
        check_kernel_node(&target, node)?;
        let prepared = KernelArgs::prepare(target.context, config, kernel, args)?;
        let spec = prepared.spec(target.context, config, kernel);
        // SAFETY: as in `add_kernel`.
        unsafe {
            target
                .context
                .driver()
                .graph_kernel_node_set(node.handle, &spec)
        }?;
        target.keep(kernel.clone());
        for buffer in &prepared.buffers {
            target.keep_buffer(buffer, false);
        }
        for kept in prepared.kept {
            target.state.keep.get_mut().push(kept);
        }
        Ok(())
    }

    /// A fill node's parameters (`cuGraphMemsetNodeGetParams`).
    #[doc(alias = "cuGraphMemsetNodeGetParams")]
    fn fill_node(&mut self, node: GraphNode) -> Result<FillNodeParams> {
        let target = self.target();
        target.check_kind(node, params::kinds::FILL, "a fill node")?;
        params::fill_node(target.context, node)
    }

    /// A copy node's parameters (`cuGraphMemcpyNodeGetParams`).
    #[doc(alias = "cuGraphMemcpyNodeGetParams")]
    fn copy_node(&mut self, node: GraphNode) -> Result<CopyNodeParams> {
        let target = self.target();
        target.check_kind(node, params::kinds::COPY, "a copy node")?;
        params::copy_node(target.context, node)
    }

    /// Changes a fill node to fill `dst` with `value` (`cuGraphMemsetNodeSetParams`),
    /// checked as [`BuildGraph::add_fill`] checks it. Executable graphs made before keep
    /// what they were instantiated with (see [`GraphExec::set_fill`](crate::GraphExec::set_fill) and
    /// [`GraphExec::update`](crate::GraphExec::update)).
    #[doc(alias = "cuGraphMemsetNodeSetParams")]
    fn set_fill<P: FillPattern>(
        &mut self,
        node: GraphNode,
        dst: &impl GraphMemory,
        value: P,
    ) -> Result<()> {
        let mut target = self.target();
        target.check_kind(node, params::kinds::FILL, "a fill node")?;
        let memset = params::fill_spec(dst.span(), value, target.context)?;
        // In the graph's context: the call names none, and the 580 driver refuses pool
        // memory (CUDA_ERROR_INVALID_VALUE) with no context current.
        target
            .context
            .with_current(|driver| driver.graph_memset_node_set(node.handle, &memset))?;
        target.keep_buffer(dst.kept(), false);
        Ok(())
    }

    /// Changes a copy node to copy `src` into `dst` (`cuGraphMemcpyNodeSetParams`), checked
    /// as [`BuildGraph::add_copy`] checks it. Executable graphs made before keep what they
    /// were instantiated with.
    #[doc(alias = "cuGraphMemcpyNodeSetParams")]
    fn set_copy(
        &mut self,
        node: GraphNode,
        src: &impl GraphMemory,
        dst: &impl GraphMemory,
    ) -> Result<()> {
        let mut target = self.target();
        target.check_kind(node, params::kinds::COPY, "a copy node")?;
        let copy = params::copy_spec(src.span(), dst.span(), target.context)?;
        // In the graph's context, as in `set_fill`.
        target
            .context
            .with_current(|driver| driver.graph_memcpy_node_set(node.handle, &copy))?;
        target.keep_buffer(src.kept(), true);
        target.keep_buffer(dst.kept(), true);
        Ok(())
    }

    /// Changes a copy node to copy the host values `src` (owned by the graph from now on)
    /// into `dst` (`cuGraphMemcpyNodeSetParams`), checked as
    /// [`BuildGraph::add_copy_from_host`] checks it. Executable graphs made before keep what
    /// they were instantiated with.
    #[doc(alias = "cuGraphMemcpyNodeSetParams")]
    fn set_copy_from_host<T: Pod>(
        &mut self,
        node: GraphNode,
        src: Vec<T>,
        dst: &impl GraphMemory,
    ) -> Result<()> {
        let mut target = self.target();
        target.check_kind(node, params::kinds::COPY, "a copy node")?;
        let copy = params::host_copy_spec(&src, dst.span(), target.context)?;
        // In the graph's context, as in `set_fill`.
        target
            .context
            .with_current(|driver| driver.graph_memcpy_node_set(node.handle, &copy))?;
        target.keep(src);
        target.keep_buffer(dst.kept(), true);
        Ok(())
    }

    /// Changes a host node to run `f` (`cuGraphHostNodeSetParams`); as for
    /// [`BuildGraph::add_host`]. Executable graphs made before keep what they were
    /// instantiated with.
    #[doc(alias = "cuGraphHostNodeSetParams")]
    fn set_host<F: Fn() + Send + Sync + 'static>(&mut self, node: GraphNode, f: F) -> Result<()> {
        let mut target = self.target();
        target.check_kind(node, params::kinds::HOST, "a host node")?;
        let (boxed, (entry, data)) = super::keep::host_fn(f);
        target
            .context
            .driver()
            .graph_host_node_set(node.handle, entry, data)?;
        target.keep(boxed);
        Ok(())
    }

    /// Changes an event record or event wait node to record or wait on `event`
    /// (`cuGraphEventRecordNodeSetEvent`, `cuGraphEventWaitNodeSetEvent`); the event must be
    /// of the graph's context. Executable graphs made before keep what they were
    /// instantiated with.
    #[doc(alias = "cuGraphEventRecordNodeSetEvent")]
    #[doc(alias = "cuGraphEventWaitNodeSetEvent")]
    fn set_event(&mut self, node: GraphNode, event: &Arc<Event>) -> Result<()> {
        let mut target = self.target();
        let kind = target.check_kind(node, params::kinds::EVENT, "an event record or wait node")?;
        params::check_event(event, target.context)?;
        let record = kind == NodeKind::EventRecord;
        target
            .context
            .driver()
            .graph_event_node_set(node.handle, event.handle(), record)?;
        if record {
            event.note_record();
        }
        target.keep(event.clone());
        Ok(())
    }
}

impl BuildGraph for Graph {}
impl BuildGraph for GraphBody<'_> {}

fn add_memcpy(
    target: &Target<'_>,
    deps: &[GraphNodeHandle],
    copy: &CopySpec,
) -> Result<GraphNodeHandle> {
    let context = target.context;
    context
        .driver()
        .graph_add_memcpy_node(target.graph, deps, copy, context.handle())
}

fn check_kernel_node(target: &Target<'_>, node: GraphNode) -> Result<()> {
    check_node(target.state, target.graph, node, "node")?;
    let code = target.context.driver().graph_node_type(node.handle)?;
    if code != 0 {
        return Err(Error::InvalidArgument {
            name: "node",
            reason: format!(
                "it is a {:?} node, not a kernel node",
                NodeKind::from_code(code)
            ),
        });
    }
    Ok(())
}

fn edge_handles(
    target: &Target<'_>,
    edges: &[(GraphNode, GraphNode)],
) -> Result<(Vec<GraphNodeHandle>, Vec<GraphNodeHandle>)> {
    let mut from = Vec::with_capacity(edges.len());
    let mut to = Vec::with_capacity(edges.len());
    for &(a, b) in edges {
        check_node(target.state, target.graph, a, "edges")?;
        check_node(target.state, target.graph, b, "edges")?;
        from.push(a.handle);
        to.push(b.handle);
    }
    Ok((from, to))
}

fn neighbours(mut target: Target<'_>, node: GraphNode, dependents: bool) -> Result<Vec<GraphNode>> {
    check_node(target.state, target.graph, node, "node")?;
    let handles = target
        .context
        .driver()
        .graph_node_neighbours(node.handle, dependents)?;
    Ok(handles.into_iter().map(|h| target.node(h)).collect())
}

/// One end of a copy or fill node, checked for the node's graph: its memory, and what the
/// node must keep alive (a buffer) or be ordered by (an allocation node).
struct CheckedEnd<'a> {
    ptr: u64,
    size: usize,
    kept: Option<&'a Arc<crate::Buffer>>,
    allocation: Option<GraphNodeHandle>,
    /// The node copies it (or fills it).
    copy: bool,
}

impl CheckedEnd<'_> {
    /// After the node `handle` was added: keeps the buffer with the graph, or notes the node
    /// as a use of the allocation, to be checked at instantiation.
    fn note_use(&self, target: &mut Target<'_>, handle: GraphNodeHandle) {
        if let Some(buffer) = self.kept {
            target.keep_buffer(buffer, self.copy);
        }
        if let Some(allocation) = self.allocation {
            target.state.allocations.used(allocation, handle);
        }
    }
}

/// Checks `end` for a node of `target`: a buffer as copies (`copy`) or fills check it; an
/// allocation of this graph (not of another, nor used from a conditional node's body, whose
/// nodes run inside a node of the graph: the order check sees only the graph's own edges).
fn checked_end<'a>(
    target: &Target<'_>,
    end: End<'a>,
    name: &'static str,
    copy: bool,
) -> Result<CheckedEnd<'a>> {
    match end {
        End::Kept(span, kept) => {
            if copy {
                params::check_copied(span.buffer, target.context, name)?;
            } else {
                check_buffer(span.buffer, target.context, name)?;
            }
            Ok(CheckedEnd {
                ptr: span.ptr,
                size: span.size,
                kept: Some(kept),
                allocation: None,
                copy,
            })
        }
        End::Allocation { node, ptr, size } => {
            if target.graph != target.root {
                return Err(Error::InvalidArgument {
                    name,
                    reason: "a graph allocation is used by the nodes of the graph that \
                             allocates it, not by those of a conditional node's body"
                        .to_owned(),
                });
            }
            check_node(target.state, target.graph, node, name)?;
            Ok(CheckedEnd {
                ptr,
                size,
                kept: None,
                allocation: Some(node.handle),
                copy,
            })
        }
    }
}

impl Stream {
    /// Captures the work that `record` queues on this stream and adds it to `graph` (a graph
    /// built node by node, or a conditional node's body: [`BuildGraph::body`]) as one node
    /// after `deps`, giving that node and `record`'s value. The capture is
    /// [`Stream::begin_capture`] in `mode` before `record` runs and [`Stream::end_capture`]
    /// when it returns (or panics); the captured graph becomes a child graph node of `graph`
    /// ([`BuildGraph::add_child`]), which conditional bodies may hold. So a conditional
    /// node's body can be captured from a stream, as cuda.core's graph builders do:
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_core::{launch, Allocate, BuildGraph, CaptureMode, CodeType, Device, Graph};
    /// use cuda_core::{GraphOptions, LaunchConfig, Program, ProgramOptions, StreamOptions};
    ///
    /// const SOURCE: &str = r#"
    /// extern "C" __device__ void cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int);
    /// extern "C" __global__ void step(cudaGraphConditionalHandle again, unsigned* n, unsigned limit) {
    ///     cudaGraphSetConditional(again, ++*n < limit);
    /// }
    /// "#;
    /// let device = Device::new(0)?;
    /// let code = Program::new(SOURCE, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
    /// let step = code.get_kernel("step")?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let counter = Arc::new(device.memory_resource()?.allocate(4, &stream)?);
    /// let mut graph = Graph::new(device)?;
    /// let zero = graph.add_fill(&[], &counter, 0u32)?;
    /// let again = graph.conditional_handle(Some(1))?;
    /// let looping = graph.add_while(&[zero], again)?;
    /// let capturing = device.create_stream(StreamOptions::default())?;
    /// // SAFETY: `step`, `code` and `counter` outlive the graph's launches below.
    /// unsafe {
    ///     capturing.capture_into(&mut graph.body(&looping, 0)?, &[], CaptureMode::ThreadLocal, |s| {
    ///         launch(s, &LaunchConfig::new([1, 1, 1], [1, 1, 1]), &step,
    ///                &[&again.as_raw(), &*counter, &10u32])
    ///     })?;
    /// }
    /// let exec = graph.instantiate(GraphOptions::default())?;
    /// exec.launch(&stream)?;
    /// assert_eq!(counter.to_vec::<u32>(&stream)?, [10]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// `record`'s error is returned once the capture has ended, and nothing is added to
    /// `graph`; so is a failed end (a capture `record` invalidated or left unjoined, or ended
    /// itself): [`Error::Capture`]. A graph of another context than the stream's, or a
    /// dependency not of `graph`, is [`Error::InvalidArgument`] before any capture begins.
    /// (The driver's `cuStreamBeginCaptureToGraph` records into the given graph directly, but
    /// a capture into it that fails to end leaves that graph unusable: the 580 driver crashed
    /// on the next use of a conditional node whose body such a capture had recorded into.
    /// Captured apart, a failure leaves `graph` as it was.)
    ///
    /// # Safety
    ///
    /// As for [`Stream::begin_capture`]: the captured work refers to what it used without
    /// keeping it alive (nodes added with [`BuildGraph`]'s other methods keep theirs), so all
    /// of it must outlive every launch of `graph` (and of its clones and executable graphs),
    /// and the other rules of a capture hold while `record` runs.
    #[doc(alias("cuStreamBeginCaptureToGraph", "GraphBuilder.begin_building"))]
    pub unsafe fn capture_into<R>(
        &self,
        graph: &mut impl BuildGraph,
        deps: &[GraphNode],
        mode: CaptureMode,
        record: impl FnOnce(&Stream) -> Result<R>,
    ) -> Result<(GraphNode, R)> {
        {
            let target = graph.target();
            if target.context.handle() != self.context().handle() {
                return Err(Error::InvalidArgument {
                    name: "graph",
                    reason: "the graph is of another context than the stream's; a stream \
                             captures into a graph of its own context"
                        .to_owned(),
                });
            }
            target.deps(deps)?;
        }
        // SAFETY: the caller keeps `begin_capture`'s contract (this function's).
        unsafe { self.begin_capture(mode) }?;
        /// Ends the capture should `record` panic, discarding what it captured.
        struct EndOnUnwind<'s>(&'s Stream);
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                if let Err(e) = self.0.end_capture() {
                    log::debug!("ending the capture of a panicking capture_into: {e}");
                }
            }
        }
        let on_unwind = EndOnUnwind(self);
        let recorded = record(self);
        std::mem::forget(on_unwind);
        let captured = self.end_capture();
        let value = recorded?;
        let node = graph.add_child(deps, &captured?)?;
        Ok((node, value))
    }
}
