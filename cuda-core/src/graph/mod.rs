//! CUDA graphs: work captured from a stream into a [`Graph`], instantiated once as a
//! [`GraphExec`] and launched many times, each launch one driver call for all of its work.
//!
//! ```no_run
//! use cuda_core::{launch, Allocate, CaptureMode, CodeType, Device, GraphOptions, LaunchConfig};
//! use cuda_core::{Program, ProgramOptions, StreamOptions};
//!
//! let device = Device::new(0)?;
//! let code = Program::new(
//!     r#"extern "C" __global__ void bump(unsigned* x) { atomicAdd(x, 1u); }"#,
//!     ProgramOptions::default(),
//! )
//! .compile(CodeType::Cubin, &[])?;
//! let bump = code.get_kernel("bump")?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut counter = device.memory_resource()?.allocate(4, &stream)?;
//! counter.fill(0u32, &stream)?;
//! let at = counter.ptr();
//! // SAFETY: nothing is allocated or freed on `stream` while it captures, and the counter and
//! // the kernel outlive every launch of the graph.
//! unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
//! for _ in 0..3 {
//!     // SAFETY: the kernel adds to the 4-byte counter.
//!     unsafe { launch(&stream, &LaunchConfig::new([1, 1, 1], [32, 1, 1]), &bump, &[&at])? };
//! }
//! let graph = stream.end_capture()?;
//! assert_eq!(graph.node_count()?, 3);
//! let exec = graph.instantiate(GraphOptions::default())?;
//! exec.launch(&stream)?; // the capture's caller promised that the counter outlives these
//! exec.launch(&stream)?;
//! assert_eq!(counter.to_vec::<u32>(&stream)?, [2 * 3 * 32]);
//! # Ok::<(), cuda_core::Error>(())
//! ```

mod allocations;
mod build;
pub(crate) mod capture;
mod conditional;
mod device_launch;
pub(crate) mod id;
mod keep;
mod node;
mod params;
mod replay;
mod target;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

pub(crate) use crate::args::GraphArg;
pub use allocations::{GraphAllocationRange, NodeMemory};
pub use build::BuildGraph;
pub use capture::{CaptureMode, CaptureStatus, CapturedAllocation};
pub use conditional::{ConditionalHandle, ConditionalKind, ConditionalNode};
pub use device_launch::DeviceGraphExec;
pub use id::GraphNode;
pub(crate) use keep::release_later;
pub use keep::{graph_releases, wait_for_graph_releases};
pub use node::{GraphAllocation, KernelNodeParams, NodeKind};
pub use params::{CopyEnd, CopyNodeParams, FillNodeParams};
pub use replay::{Replay, ReplayRecorder, ReplayStats};
pub use target::GraphBody;

use crate::context::Context;
use crate::device::Device;
use crate::driver::{GraphExecHandle, GraphHandle, GraphNodeHandle};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::stream::{Stream, WeakStream};
use keep::{Keep, Kept};
use std::sync::Arc;

use crate::memory::access::Inside;
use crate::memory::buffer::reach_from_elsewhere;
use crate::memory::MemoryResource;

/// Options of [`Graph::instantiate`] (`CUgraphInstantiate_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphInstantiate_flags")]
pub struct GraphOptions {
    /// Free the graph's unfreed memory allocations before each launch
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`).
    pub auto_free_on_launch: bool,
    /// Instantiate for launches from the device (`CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`):
    /// see [`GraphExec::device_handle`].
    pub device_launch: bool,
    /// Run the nodes with their own launch priorities
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`).
    pub use_node_priority: bool,
}

crate::options::chainers!(GraphOptions {
    with_auto_free_on_launch(auto_free_on_launch: bool);
    with_device_launch(device_launch: bool);
    with_use_node_priority(use_node_priority: bool);
});

/// What [`Graph::write_dot`] includes (`CUgraphDebugDot_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphDebugDot_flags")]
pub struct DotOptions {
    /// Everything the driver can say of each node (`CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE`);
    /// otherwise each node's kind and name.
    pub verbose: bool,
    /// Kernel nodes' parameters (`CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS`).
    pub kernel_params: bool,
    /// Nodes' handles (`CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES`).
    pub handles: bool,
}

crate::options::chainers!(DotOptions {
    with_verbose(verbose: bool);
    with_kernel_params(kernel_params: bool);
    with_handles(handles: bool);
});

/// What a graph knows of itself beyond the driver's handle: the values it keeps alive, the
/// streams its buffers are ordered on, and the nodes handed out (so that a node of another
/// graph, or one removed, is refused before the driver sees it).
#[derive(Default)]
pub(crate) struct GraphState {
    /// In a cell so that instantiating and cloning, which hand it to the driver, take `&self`
    /// (a graph is not `Sync`).
    keep: RefCell<Keep>,
    homes: Vec<Stream>,
    /// The streams of buffers that work captured into it used, not kept alive (a captured
    /// graph holds no buffer: its caller keeps them alive, and each keeps its stream).
    captured_homes: Vec<WeakStream>,
    /// The memory resources of its nodes' buffers, and of the buffers its captured work used,
    /// whose access from the graph's device can be revoked (host memory of a pool, another
    /// device's memory), each with whether only copies use it: checked at each launch of its
    /// executable graphs, as work queued on them is.
    gated: Vec<Gated>,
    /// The nodes handed out, each with the serial its [`GraphNode`] carries: a value kept
    /// from a removed node never matches, even where the driver gives its address to a new
    /// node (or a new graph lands at a dropped one's address).
    nodes: HashMap<(GraphHandle, GraphNodeHandle), u64>,
    /// The bodies of the conditional nodes handed out, which go with their node.
    bodies: HashMap<GraphNodeHandle, Vec<GraphHandle>>,
    /// The conditional handles made, by the graph (root or body) they were made for, with
    /// the serial each [`ConditionalHandle`] carries.
    handles: HashMap<(GraphHandle, u64), u64>,
    /// The copy and fill nodes that use the graph's allocations, checked at instantiation.
    allocations: allocations::AllocationUses,
}

/// A number never handed out before in this process, for the values that name a graph, a
/// node or a conditional handle: the driver reuses the addresses of destroyed ones, so a
/// kept value is matched by its serial, not by its address. Never 0.
pub(crate) fn serial() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl GraphState {
    /// Forgets `node` of `graph` (removed), and, for a conditional node, every node of its
    /// bodies (destroyed with it), so that none of them passes a later check.
    fn forget(&mut self, graph: GraphHandle, node: GraphNodeHandle) {
        self.nodes.remove(&(graph, node));
        self.allocations.forget(node);
        for body in self.bodies.remove(&node).unwrap_or_default() {
            self.handles.retain(|&(of, _), _| of != body);
            let inside: Vec<GraphNodeHandle> = self
                .nodes
                .keys()
                .filter(|&&(of, _)| of == body)
                .map(|&(_, node)| node)
                .collect();
            for node in inside {
                self.forget(body, node);
            }
        }
    }

    /// Notes `stream` as one that a buffer the graph uses is ordered on.
    fn add_home(&mut self, stream: &Stream) {
        add_home(&mut self.homes, stream);
    }

    /// Notes `streams`, of buffers that captured work used, each once.
    fn add_captured_homes(&mut self, streams: &[WeakStream]) {
        add_captured_homes(&mut self.captured_homes, streams);
    }

    /// Notes `resources`, of revocable access, that captured work on `device` used, each
    /// once.
    fn add_captured_gated(&mut self, resources: &[Gated], device: Device) {
        for (resource, copy) in resources {
            add_gated(&mut self.gated, resource, *copy, device);
        }
    }
}

/// A memory resource whose access can be revoked, used by a graph's work, and whether only
/// copies use it.
pub(crate) type Gated = (Arc<dyn MemoryResource>, bool);

/// Notes `resource`, whose memory a node of a graph of `device` uses (`copy`: by copies
/// only), among `gated` where its access from `device` can be revoked: memory of another
/// device, or host memory, of a resource whose access changes (`memory::Hooks::access_gate`).
/// Memory of the graph's own device never is (a graph launches only in its own context), so
/// graphs of their device's memory check nothing at launch.
pub(super) fn add_gated(
    gated: &mut Vec<Gated>,
    resource: &Arc<dyn MemoryResource>,
    copy: bool,
    device: Device,
) {
    if resource.device() == Some(device) || resource.access_gate().is_none() {
        return;
    }
    merge_gated(gated, resource, copy);
}

/// Adds `resource` (`copy`: used by copies only) to `gated`, once.
pub(super) fn merge_gated(gated: &mut Vec<Gated>, resource: &Arc<dyn MemoryResource>, copy: bool) {
    match gated
        .iter_mut()
        .find(|(kept, _)| Arc::ptr_eq(kept, resource))
    {
        // A use that is not a copy asks the stricter question.
        Some((_, only_copies)) => *only_copies &= copy,
        None => gated.push((resource.clone(), copy)),
    }
}

/// Adds each of `streams` still alive to `homes` unless it is there already.
fn add_captured_homes(homes: &mut Vec<WeakStream>, streams: &[WeakStream]) {
    for stream in streams {
        if stream.alive() && !homes.iter().any(|home| home.same(stream)) {
            homes.push(stream.clone());
        }
    }
}

/// Adds `stream` to `homes` unless it is there already (the streams a graph's buffers are
/// ordered on, each once).
fn add_home(homes: &mut Vec<Stream>, stream: &Stream) {
    if !homes.iter().any(|home| home.same_as(stream)) {
        homes.push(stream.clone());
    }
}

/// A CUDA graph (`CUgraph`), destroyed on drop: made empty by [`Graph::new`] and built node by
/// node ([`BuildGraph`]), or captured by [`Stream::end_capture`]. It is `Send` but not `Sync`
/// (the driver does not synchronise a graph's use from two threads).
///
/// A graph built node by node keeps alive what its nodes refer to (kernels, buffers, events,
/// host functions, child graphs' contents), and so do its clones, its executable graphs and
/// their queued launches: the driver holds them as CUDA user objects and releases them when
/// nothing refers to them any more (see [`graph_releases`]).
#[doc(alias = "CUgraph")]
pub struct Graph {
    handle: GraphHandle,
    /// Which graph this is, whatever address a later graph gets ([`serial`]).
    serial: u64,
    context: Context,
    state: GraphState,
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("handle", &self.handle.0)
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Err(e) = self.context.driver().graph_destroy(self.handle) {
            log::error!("destroying a graph: {e}");
        }
        // Values not yet handed to the driver were never instantiated or launched: they go
        // with the graph (dropped here, after the graph that referred to them).
    }
}

impl Graph {
    fn from_handle(handle: GraphHandle, context: Context) -> Graph {
        Graph {
            handle,
            serial: serial(),
            context,
            state: GraphState::default(),
            _not_sync: PhantomData,
        }
    }

    /// An empty graph for `device`'s primary context (`cuGraphCreate`).
    #[doc(alias = "cuGraphCreate")]
    pub fn new(device: Device) -> Result<Graph> {
        let context = device.primary_context()?;
        let handle = context.with_current(|driver| driver.graph_create())?;
        Ok(Graph::from_handle(handle, context))
    }

    /// How many nodes the graph has (`cuGraphGetNodes`).
    #[doc(alias = "cuGraphGetNodes")]
    pub fn node_count(&self) -> Result<usize> {
        self.context.driver().graph_node_count(self.handle)
    }

    /// A copy of the graph and its nodes (`cuGraphClone`), keeping alive what this one keeps.
    /// Its nodes are its own: find the copy of one of this graph's with
    /// [`Graph::find_in_clone`].
    #[doc(alias = "cuGraphClone")]
    pub fn try_clone(&self) -> Result<Graph> {
        let driver = self.context.driver();
        let mut keep = self.state.keep.borrow_mut();
        keep.flush(driver, self.handle)?;
        let handle = driver.graph_clone(self.handle)?;
        let mut clone = Graph::from_handle(handle, self.context.clone());
        keep.share(driver, handle, clone.state.keep.get_mut())?;
        clone.state.homes.clone_from(&self.state.homes);
        clone
            .state
            .captured_homes
            .clone_from(&self.state.captured_homes);
        clone.state.gated.clone_from(&self.state.gated);
        clone.state.allocations = self
            .state
            .allocations
            .mapped(|node| driver.graph_node_find_in_clone(node, handle))?;
        Ok(clone)
    }

    /// The node of `clone` (made from this graph by [`Graph::try_clone`]) that copies `node`
    /// of this graph (`cuGraphNodeFindInClone`).
    #[doc(alias = "cuGraphNodeFindInClone")]
    pub fn find_in_clone(&self, node: GraphNode, clone: &mut Graph) -> Result<GraphNode> {
        node::check_node(&self.state, self.handle, node, "node")?;
        let found = self
            .context
            .driver()
            .graph_node_find_in_clone(node.handle, clone.handle)?;
        Ok(node::note(&mut clone.state, clone.handle, found))
    }

    /// The context it was made in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The raw `CUgraph`, borrowed: valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    /// Writes the graph as Graphviz DOT to `path` (`cuGraphDebugDotPrint`).
    #[doc(alias = "cuGraphDebugDotPrint")]
    pub fn write_dot(&self, path: impl AsRef<Path>, options: DotOptions) -> Result<()> {
        let path = path.as_ref();
        let path_c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            Error::InvalidArgument {
                name: "path",
                reason: format!("{} contains a NUL byte", path.display()),
            }
        })?;
        let mut flags = 0;
        if options.verbose {
            flags |= 1;
        }
        if options.kernel_params {
            flags |= 1 << 2;
        }
        if options.handles {
            flags |= 1 << 10;
        }
        self.context
            .driver()
            .graph_debug_dot_print(self.handle, &path_c, flags)
    }

    /// The graph as Graphviz DOT text, written by the driver into a new directory of this
    /// process's own (`0700`, in the system's temporary directory, deleted afterwards), so that
    /// no other user can put a file or a link where the driver writes.
    pub fn to_dot(&self, options: DotOptions) -> Result<String> {
        let io = |path: &Path, e: std::io::Error| Error::Io {
            path: path.to_path_buf(),
            source: crate::error::Cause::new(e),
        };
        let dir = crate::trust::PrivateTempDir::new("cuda-core-graph-")
            .map_err(|e| io(&std::env::temp_dir(), e))?;
        let path = dir.path().join("graph.dot");
        self.write_dot(&path, options)?;
        std::fs::read_to_string(&path).map_err(|e| io(&path, e))
    }

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`). The executable
    /// graph is independent of this one afterwards: changing or dropping this graph leaves it
    /// as instantiated (and what it keeps alive with it).
    #[doc(alias = "cuGraphInstantiateWithFlags")]
    pub fn instantiate(&self, options: GraphOptions) -> Result<GraphExec> {
        self.flush()?;
        let handle = self
            .context
            .with_current(|driver| driver.graph_instantiate(self.handle, options.flags()))?;
        Ok(self.exec(handle, options))
    }

    /// Instantiates the graph and uploads it in `stream`'s order, in one call
    /// (`cuGraphInstantiateWithParams` with `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`): as
    /// [`Graph::instantiate`] then [`GraphExec::upload`], so that its first launch on
    /// `stream` costs no more than later ones.
    ///
    /// A graph the driver cannot instantiate is [`Error::GraphInstantiate`], with the
    /// driver's reason (`CUgraphInstantiateResult`) and the node it names.
    #[doc(alias = "cuGraphInstantiateWithParams")]
    #[doc(alias = "CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD")]
    pub fn instantiate_uploaded(
        &self,
        options: GraphOptions,
        stream: &Stream,
    ) -> Result<GraphExec> {
        check_device(stream, &self.context)?;
        self.flush()?;
        let flags = options.flags() | UPLOAD;
        let driver = self.context.driver();
        // The graph's context current, and the stream's handle as its kind needs it.
        let (made, answer) = self.context.with_current(|_| {
            stream.queue(|driver, handle| {
                driver.graph_instantiate_with_params(self.handle, flags, handle)
            })
        })?;
        match made {
            Ok(handle) => Ok(self.exec(handle, options)),
            Err(e) => {
                let (reason, node) = refusal(
                    driver,
                    &self.state,
                    self.handle,
                    answer,
                    instantiate_reason(answer.code),
                    e,
                );
                Err(Error::GraphInstantiate { reason, node })
            }
        }
    }

    /// Before the driver copies the graph (an instantiation, an update): refuses it where a
    /// node uses an allocation outside its life, and hands the driver what the graph keeps.
    fn flush(&self) -> Result<()> {
        self.state
            .allocations
            .check(self.context.driver(), self.handle)?;
        self.state
            .keep
            .borrow_mut()
            .flush(self.context.driver(), self.handle)
    }

    /// The executable graph of `handle`, instantiated from this graph with `options`.
    fn exec(&self, handle: GraphExecHandle, options: GraphOptions) -> GraphExec {
        GraphExec {
            handle,
            context: self.context.clone(),
            source: self.serial,
            homes: self.state.homes.clone(),
            captured_homes: self.state.captured_homes.clone(),
            gated: self.state.gated.clone(),
            device_launch: options.device_launch,
            extras: Vec::new(),
            last: Cell::new(None),
            _not_sync: PhantomData,
        }
    }
}

/// A refusal's words and node: `why` (the driver's result in words), the kind of the node the
/// driver names in `answer` (a node of `graph`) where it names one, and the driver's error.
/// The node passes the graph's checks if it was handed out (a captured graph's nodes were
/// not, and stay names only).
fn refusal(
    driver: &'static dyn crate::driver::Driver,
    state: &GraphState,
    graph: GraphHandle,
    answer: crate::driver::UpdateResult,
    why: &str,
    error: Error,
) -> (String, Option<GraphNode>) {
    let node = (!answer.node.0.is_null()).then(|| GraphNode {
        handle: answer.node,
        graph,
        serial: state.nodes.get(&(graph, answer.node)).copied().unwrap_or(0),
    });
    let kind = node
        .and_then(|node| driver.graph_node_type(node.handle).ok())
        .map(|kind| format!(" (at a {:?} node)", NodeKind::from_code(kind)))
        .unwrap_or_default();
    (format!("{why}{kind}; the driver said {error}"), node)
}

/// `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`.
const UPLOAD: u64 = 2;

impl GraphOptions {
    /// The `CUgraphInstantiate_flags` these options stand for.
    fn flags(self) -> u64 {
        let mut flags = 0u64;
        if self.auto_free_on_launch {
            flags |= 1;
        }
        if self.device_launch {
            flags |= 4;
        }
        if self.use_node_priority {
            flags |= 8;
        }
        flags
    }
}

/// A `CUgraphInstantiateResult` in words.
fn instantiate_reason(code: u32) -> &'static str {
    match code {
        2 => {
            "the graph's structure is invalid (such as a cycle, or a memory node where the \
              driver allows none)"
        }
        3 => {
            "a node does its work in a way the driver cannot instantiate (such as a memory \
              operation it does not support there)"
        }
        4 => {
            "its nodes are of more than one context, which the instantiation flags do not \
              allow (device launch needs one context)"
        }
        5 => "a conditional handle of the graph is taken by no conditional node",
        _ => "the driver refused it",
    }
}

/// An executable graph (`CUgraphExec`), destroyed on drop: launched with one driver call
/// for all of its work. `Send` but not `Sync`.
#[doc(alias = "CUgraphExec")]
pub struct GraphExec {
    handle: GraphExecHandle,
    context: Context,
    /// The graph it was instantiated from (whose nodes name its nodes), by its serial.
    source: u64,
    /// The streams its buffers are ordered on.
    homes: Vec<Stream>,
    /// The streams of buffers its captured work used (see `GraphState`), not kept alive.
    captured_homes: Vec<WeakStream>,
    /// The resources of its memory whose access can be revoked, checked at each launch (see
    /// `GraphState`).
    gated: Vec<Gated>,
    /// Whether it was instantiated for device launch ([`GraphOptions::device_launch`]).
    device_launch: bool,
    /// What kernel-node changes made on it keep alive (its graph's values are the driver's).
    extras: Vec<Kept>,
    /// The stream of its last launch, tracked only while `extras` holds anything. Held
    /// weakly: an executable graph must not keep a stream alive (a stream dropped while it
    /// captured would stay open, and its capture with it, where nothing could reach it).
    last: Cell<Option<WeakStream>>,
    _not_sync: PhantomData<Cell<()>>,
}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("handle", &self.handle.0)
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if let Err(e) = self.context.driver().graph_exec_destroy(self.handle) {
            log::error!("destroying an executable graph: {e}");
        }
        let extras = std::mem::take(&mut self.extras);
        if extras.is_empty() {
            return;
        }
        // The values its kernel nodes were changed to use go once its last launch is done
        // (launches of one executable graph run one after another, so that is the last).
        let Some(last) = self.last.take() else {
            return;
        };
        match last.upgrade() {
            Some(stream) => release_after_work(stream, extras),
            // Its stream was dropped since: the launch runs on, and only its context's whole
            // work can be waited for.
            None => release_after_context(self.context.clone(), extras),
        }
    }
}

/// Releases `values` once all of `context`'s work is done: for a launch on a stream dropped
/// since, whose work can be waited for only with the whole context's. Put off until no
/// capture is open (a context's synchronisation waits for other threads' captures, and would
/// invalidate the calling thread's own).
fn release_after_context(context: Context, values: Vec<Kept>) {
    crate::lifetime::captures::after_captures_run(Box::new(move || {
        sync_then_release(&context, values);
    }));
}

/// Waits for `context`'s work, then releases `values`; kept for good where the wait fails.
fn sync_then_release(context: &Context, values: Vec<Kept>) {
    match context.sync() {
        Ok(()) => keep::release_later(values),
        Err(e) => {
            log::error!(
                "waiting for the context of an executable graph whose last launch's stream \
                 was dropped: {e}; the values it kept (kernels, buffers) are kept for good"
            );
            std::mem::forget(values);
        }
    }
}

/// Releases `values` once the work queued on `stream` so far is done: by a host function
/// queued there, or, where the stream captures (a host function would go into the capture,
/// and a wait would invalidate it), once no capture is open.
fn release_after_work(stream: Stream, values: Vec<Kept>) {
    if stream.is_other_threads() {
        // Another thread's per-thread default stream: no host function can be queued on it
        // from here, so wait for its whole context (as a buffer of such a stream does).
        match stream.context().sync() {
            Ok(()) => keep::release_later(values),
            Err(e) => {
                log::error!(
                    "waiting for the context of an executable graph's last launch (on another \
                     thread's per-thread default stream): {e}; its values are kept"
                );
                std::mem::forget(values);
            }
        }
        return;
    }
    if stream.capturing() {
        // Not the stream itself: a stream dropped meanwhile ends its capture as it goes.
        let weak = stream.downgrade();
        let context = stream.context().clone();
        drop(stream);
        crate::lifetime::captures::after_captures_run(Box::new(move || {
            match weak.upgrade() {
                Some(stream) if !stream.capturing() => release_after_work(stream, values),
                // Dropped during the capture: its work can be waited for with its context's.
                None => sync_then_release(&context, values),
                Some(_) => {
                    // Captures still (a capture the crate does not count): kept for good,
                    // never released early.
                    log::error!(
                        "an executable graph was dropped while its stream captured, and the \
                         stream captures still once no capture is open: the \
                         values it kept (kernels, buffers) are kept for good"
                    );
                    std::mem::forget(values);
                }
            }
        }));
        return;
    }
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Some(values)));
    let theirs = shared.clone();
    let queued = stream.launch_host_func(move || {
        if let Some(values) = theirs.lock().ok().and_then(|mut values| values.take()) {
            keep::release_later(values);
        }
    });
    if let Err(e) = queued {
        log::error!(
            "queueing the release of an executable graph's values: {e}; waiting for its \
             stream instead"
        );
        if let Err(e) = stream.sync() {
            log::error!("waiting for an executable graph's stream: {e}; its values are kept");
            std::mem::forget(shared);
        }
    }
}

impl GraphExec {
    /// Launches the graph's work on `stream` (`cuGraphLaunch`), after the work queued there
    /// before, as one unit: a later launch of the same graph starts after this one ends.
    ///
    /// What the graph's nodes refer to stays alive until the launch is done, whatever is
    /// dropped meanwhile (for a captured graph, that is the capture's caller's promise: see
    /// [`Stream::begin_capture`]). Buffers of the graph's nodes whose deallocation stream is
    /// another stream are kept in stream order as [`launch`](crate::launch) keeps its
    /// arguments: `stream` waits for the work queued on theirs so far, and theirs wait for
    /// the launch. On the same stream this costs nothing. A captured graph is ordered so with
    /// the streams of the buffers its captured work used (which the capture could not wait
    /// for across its boundary), with the streams that joined the capture, and with the
    /// capture's own stream: launched on that stream, over buffers of its own, it costs
    /// nothing either.
    #[doc(alias = "cuGraphLaunch")]
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        // Held until the launch is queued: no revocation of access comes in between.
        let _reach = self.check_access(stream)?;
        let mut queued = false;
        let mut queue = || {
            stream.queue(|driver, handle| driver.graph_launch(self.handle, handle))?;
            queued = true;
            Ok(())
        };
        let launched = if self.homes.iter().all(|home| home.same_as(stream))
            && self.captured_homes.iter().all(|home| home.is(stream))
        {
            if !self.homes.is_empty() || !self.captured_homes.is_empty() {
                // Launched into a capture of its stream, over that stream's buffers.
                stream.note_own_home();
            }
            queue()
        } else {
            self.launch_across(stream, queue)
        };
        // A launch the driver took is the last that may use the extras, even where ordering
        // the homes after it then failed (and this reports that error).
        if queued && !self.extras.is_empty() {
            self.note_last(stream);
        }
        launched
    }

    /// Checks that `stream`'s device reaches the memory of the graph's nodes, and of its
    /// captured work, whose access can be revoked (as work queued on a buffer is checked:
    /// after a pinned pool's `set_access(&[])` or a revoked peer access, the driver would fault
    /// on the graph's work rather than refuse it), holding each resource's access gate until
    /// the caller queued the launch. Nothing (no allocation) for a graph of its own device's
    /// memory.
    fn check_access(&self, stream: &Stream) -> Result<Vec<Option<Inside<'_>>>> {
        if self.gated.is_empty() {
            return Ok(Vec::new());
        }
        self.gated
            .iter()
            .map(|(resource, copy)| {
                reach_from_elsewhere(
                    resource,
                    resource.device(),
                    stream,
                    "the graph's memory",
                    *copy,
                )
            })
            .collect()
    }

    /// Queues the launch (`queue`) in the stream order of the graph's buffers of other streams
    /// than `stream`: those of its nodes, and those of its captured work still alive (a gone
    /// one is the stream of no buffer a launch may use).
    #[cold]
    #[inline(never)]
    fn launch_across(&self, stream: &Stream, queue: impl FnOnce() -> Result<()>) -> Result<()> {
        let captured: Vec<Stream> = self
            .captured_homes
            .iter()
            .filter_map(WeakStream::upgrade)
            .collect();
        let homes: Vec<&Stream> = self.homes.iter().chain(&captured).collect();
        crate::order::in_stream_order(&homes, stream, queue)
    }

    /// Notes `stream` as the one of the last launch; a stream already noted is not cloned
    /// again (a loop launching on one stream pays no reference count per launch).
    #[inline]
    fn note_last(&self, stream: &Stream) {
        let last = self.last.take();
        match last {
            Some(last) if last.is(stream) => self.last.set(Some(last)),
            _ => self.last.set(Some(stream.downgrade())),
        }
    }

    /// Keeps `value` until this executable graph's last launch is done (see its `Drop`):
    /// for what its nodes refer to and the driver does not keep (no user object, whose
    /// per-launch bookkeeping cost a 100-kernel region's launch 0.5 µs on one H100 host).
    pub(crate) fn keep_until_last_launch(&mut self, value: Kept) {
        self.extras.push(value);
    }

    /// Makes the graph's device-side setup ahead of its first launch, in `stream`'s order
    /// (`cuGraphUpload`), so that the first launch costs no more than later ones. A graph
    /// launched from the device ([`DeviceGraphExec`]) must be uploaded before a kernel
    /// launches it.
    #[doc(alias = "cuGraphUpload")]
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        stream.queue(|driver, handle| driver.graph_upload(self.handle, handle))
    }

    /// Updates this executable graph in place to `graph`'s parameters (`cuGraphExecUpdate`):
    /// `graph` must have the same topology as the one it was instantiated from, with nodes
    /// of the same kinds, kernels of the same context and so on, and may change their
    /// parameters (kernel arguments and launch shapes, copy and fill addresses, events).
    /// Launches queued before keep what they used; later ones use what `graph` keeps.
    ///
    /// A change the driver cannot make in place is [`Error::GraphUpdate`], naming its reason
    /// and the node of `graph` it concerns; this executable graph is then left as it was.
    #[doc(alias = "cuGraphExecUpdate")]
    pub fn update(&mut self, graph: &Graph) -> Result<()> {
        if graph.context.handle() != self.context.handle() {
            return Err(Error::InvalidArgument {
                name: "graph",
                reason: "it is of another context than the executable graph".to_owned(),
            });
        }
        graph.flush()?;
        let driver = self.context.driver();
        let (updated, answer) = self
            .context
            .with_current(|driver| driver.graph_exec_update(self.handle, graph.handle))?;
        if let Err(e) = updated {
            let (reason, node) = refusal(
                driver,
                &graph.state,
                graph.handle,
                answer,
                &update_reason(answer.code),
                e,
            );
            return Err(Error::GraphUpdate { reason, node });
        }
        for home in &graph.state.homes {
            add_home(&mut self.homes, home);
        }
        add_captured_homes(&mut self.captured_homes, &graph.state.captured_homes);
        for (resource, copy) in &graph.state.gated {
            add_gated(&mut self.gated, resource, *copy, self.context.device());
        }
        Ok(())
    }

    /// Changes one kernel node of this executable graph in place
    /// (`cuGraphExecKernelNodeSetParams`): `node` is a kernel node of `graph`, the graph this
    /// one was instantiated from, and `config`, `kernel` and `args` are checked as for
    /// [`BuildGraph::add_kernel`]. The graph itself is not changed. What the new arguments
    /// refer to is kept alive until this executable graph and its launches are done.
    ///
    /// # Safety
    ///
    /// As for [`BuildGraph::add_kernel`].
    #[doc(alias = "cuGraphExecKernelNodeSetParams")]
    pub unsafe fn set_kernel_node(
        &mut self,
        graph: &Graph,
        node: GraphNode,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn GraphArg],
    ) -> Result<()> {
        if graph.serial != self.source {
            return Err(Error::InvalidArgument {
                name: "graph",
                reason: "it is not the graph this executable graph was instantiated from"
                    .to_owned(),
            });
        }
        node::check_node(&graph.state, graph.handle, node, "node")?;
        let prepared = node::KernelArgs::prepare(&self.context, config, kernel, args)?;
        let spec = prepared.spec(&self.context, config, kernel);
        // SAFETY: `spec.args` points at one value per parameter, checked against the kernel's
        // parameters; the caller vouches for what the kernel does with them.
        unsafe {
            self.context
                .driver()
                .graph_exec_kernel_node_set(self.handle, node.handle, &spec)
        }?;
        self.extras.push(Box::new(kernel.clone()));
        for buffer in &prepared.buffers {
            self.keep_buffer(buffer, false);
        }
        self.extras.extend(prepared.kept);
        Ok(())
    }

    /// The raw `CUgraphExec`, borrowed: valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        check_device(stream, &self.context)
    }
}

/// Refuses a stream of another device than the graph's, or of another context of it (a
/// graph of the primary context would run its kernels on every SM from a green context's
/// stream, outside the green context's SMs).
fn check_device(stream: &Stream, context: &Context) -> Result<()> {
    if stream.device() != context.device() {
        return Err(Error::InvalidArgument {
            name: "stream",
            reason: format!(
                "it is device {}'s, and the graph is device {}'s",
                stream.device().ordinal(),
                context.device().ordinal()
            ),
        });
    }
    if stream.context().handle() != context.handle() {
        let kind = |c: &Context| {
            if c.is_green() {
                "a green context"
            } else if c.is_primary() {
                "the primary context"
            } else {
                "a context other than the primary one"
            }
        };
        return Err(Error::InvalidArgument {
            name: "stream",
            reason: format!(
                "it is a stream of {}, and the graph is of {} of the same device: a graph \
                 runs in its own context, so launch it on a stream of that context (or \
                 build or capture it in the stream's)",
                kind(stream.context()),
                kind(context)
            ),
        });
    }
    Ok(())
}

impl Device {
    /// The device's graph memory (what graphs' allocation nodes use, [`BuildGraph::add_alloc`]
    /// and captured stream-ordered allocations), in bytes (`cuDeviceGetGraphMemAttribute`).
    #[doc(alias = "cuDeviceGetGraphMemAttribute")]
    pub fn graph_memory_usage(&self) -> Result<crate::memory::PoolUsage> {
        let ordinal = self.ordinal() as i32;
        self.primary_context()?.with_current(|driver| {
            let get = |attribute| driver.device_graph_mem_attribute(ordinal, attribute);
            Ok(crate::memory::PoolUsage {
                used_current: get(0)?,
                used_high: get(1)?,
                reserved_current: get(2)?,
                reserved_high: get(3)?,
            })
        })
    }

    /// Hands the graph memory no graph allocation uses back to the system
    /// (`cuDeviceGraphMemTrim`).
    #[doc(alias = "cuDeviceGraphMemTrim")]
    pub fn trim_graph_memory(&self) -> Result<()> {
        let ordinal = self.ordinal() as i32;
        self.primary_context()?
            .with_current(|driver| driver.device_graph_mem_trim(ordinal))
    }
}

/// What a `CUgraphExecUpdateResult` means.
fn update_reason(code: u32) -> String {
    match code {
        2 => "the graph's topology changed (nodes or edges added or removed)".to_owned(),
        3 => "a node's kind changed".to_owned(),
        4 => "a kernel node's function changed in a way the driver cannot update".to_owned(),
        5 => "a node's parameters changed in a way the driver cannot update".to_owned(),
        6 => "something in the graph cannot be updated (such as a memory node)".to_owned(),
        7 => "a kernel node's function changed to one the driver cannot update to".to_owned(),
        8 => "a node's launch attributes changed in a way the driver cannot update".to_owned(),
        1 => "the update failed".to_owned(),
        other => format!("the update failed (CUgraphExecUpdateResult {other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize) -> GraphHandle {
        GraphHandle(n as *mut std::ffi::c_void)
    }

    fn node(n: usize) -> GraphNodeHandle {
        GraphNodeHandle(n as *mut std::ffi::c_void)
    }

    /// A removed conditional node takes the nodes of its bodies with it, nested bodies too,
    /// and nothing else: a node left noted in a destroyed body would pass the check of a
    /// later body the driver happened to put at the same address.
    #[test]
    fn forgetting_a_conditional_node_forgets_its_bodies_nodes() {
        let mut state = GraphState::default();
        let (root, body_a, body_b, nested) = (graph(1), graph(2), graph(3), graph(4));
        let noted = [
            (root, node(10)),     // the conditional node, bodies a and b
            (root, node(11)),     // a sibling
            (body_a, node(20)),   // in body a: a conditional node with a nested body
            (body_b, node(30)),   // in body b
            (nested, node(40)),   // in the nested body
            (body_a, node(21)),   // in body a
            (graph(9), node(90)), // another conditional node's body, untouched
        ];
        state.nodes.extend(noted.map(|key| (key, serial())));
        state.bodies.insert(node(10), vec![body_a, body_b]);
        state.bodies.insert(node(20), vec![nested]);
        state.bodies.insert(node(91), vec![graph(9)]);
        state.forget(root, node(10));
        let mut left: Vec<_> = state.nodes.keys().copied().collect();
        left.sort_by_key(|&(_, n)| n.0 as usize);
        assert_eq!(left, [(root, node(11)), (graph(9), node(90))]);
        assert_eq!(state.bodies.keys().copied().collect::<Vec<_>>(), [node(91)]);
    }

    /// A node named again (by a walk of the graph) is the value handed out before; once
    /// removed, a new node at its address is another value. Bugs caught: a walk's nodes that
    /// compare unequal to the ones the builder returned; a removed node's value matching the
    /// next node at its address.
    #[test]
    fn a_node_named_again_is_the_same_value_until_removed() {
        let mut state = GraphState::default();
        let first = node::note(&mut state, graph(1), node(10));
        assert_eq!(node::note(&mut state, graph(1), node(10)), first);
        assert!(node::check_node(&state, graph(1), first, "node").is_ok());
        state.forget(graph(1), node(10));
        let reused = node::note(&mut state, graph(1), node(10));
        assert_ne!(reused, first);
        assert!(node::check_node(&state, graph(1), first, "node").is_err());
        assert!(node::check_node(&state, graph(1), reused, "node").is_ok());
    }

    /// Each option sets its own `CUgraphInstantiate_flags` bit (AUTO_FREE_ON_LAUNCH 1,
    /// DEVICE_LAUNCH 4, USE_NODE_PRIORITY 8), and none sets UPLOAD (2), which only
    /// `instantiate_uploaded` adds: a swapped or missing bit instantiates another graph kind.
    #[test]
    fn graph_options_map_to_the_drivers_flag_bits() {
        assert_eq!(GraphOptions::default().flags(), 0);
        let one = |o: GraphOptions| o.flags();
        assert_eq!(
            one(GraphOptions::default().with_auto_free_on_launch(true)),
            1
        );
        assert_eq!(one(GraphOptions::default().with_device_launch(true)), 4);
        assert_eq!(one(GraphOptions::default().with_use_node_priority(true)), 8);
        let all = GraphOptions::default()
            .with_auto_free_on_launch(true)
            .with_device_launch(true)
            .with_use_node_priority(true);
        assert_eq!(all.flags(), 13);
        assert_eq!(all.flags() & UPLOAD, 0);
    }

    /// Every instantiation result the headers name has its own words, and an unknown one
    /// still says the driver refused.
    #[test]
    fn instantiate_results_are_named() {
        let reasons: Vec<&str> = (2..=5).map(instantiate_reason).collect();
        for (i, a) in reasons.iter().enumerate() {
            assert!(reasons[i + 1..].iter().all(|b| a != b), "{a}");
            assert_ne!(*a, instantiate_reason(99));
        }
        assert!(instantiate_reason(2).contains("structure"));
        assert!(instantiate_reason(99).contains("refused"));
    }
}
