//! CUDA graphs: stream capture, graphs and their executable forms.

use std::ffi::{c_void, CStr};

use crate::driver::handles::DevicePtr;
use crate::driver::{
    ContextHandle, CopyNodeInfo, CopySpec, DeviceHandle, EventHandle, GraphExecHandle, GraphHandle,
    GraphNodeHandle, KernelNodeSpec, MemsetSpec, StreamHandle, UpdateResult, UserObjectHandle,
};
use crate::error::Result;

/// Stream capture, graphs and executable graphs.
pub(crate) trait GraphApi {
    /// `cuDeviceGetGraphMemAttribute` of a `u64` attribute (`CUgraphMem_attribute`).
    fn device_graph_mem_attribute(&self, device: DeviceHandle, attribute: u32) -> Result<u64>;
    /// `cuDeviceGraphMemTrim`.
    fn device_graph_mem_trim(&self, device: DeviceHandle) -> Result<()>;
    /// `cuStreamBeginCapture` with a `CUstreamCaptureMode`.
    fn stream_begin_capture(&self, stream: StreamHandle, mode: u32) -> Result<()>;
    /// `cuThreadExchangeStreamCaptureMode`: sets this thread's `CUstreamCaptureMode`, giving
    /// the one it had.
    fn thread_exchange_capture_mode(&self, mode: u32) -> Result<u32>;
    /// `cuStreamEndCapture`: the captured graph.
    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle>;
    /// `cuStreamIsCapturing`: the raw `CUstreamCaptureStatus`.
    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<u32>;
    /// `cuGraphCreate` (no flags).
    fn graph_create(&self) -> Result<GraphHandle>;
    /// `cuGraphClone`.
    fn graph_clone(&self, graph: GraphHandle) -> Result<GraphHandle>;
    /// `cuGraphDestroy`.
    fn graph_destroy(&self, graph: GraphHandle) -> Result<()>;
    /// `cuGraphGetNodes` with no array: how many nodes the graph has.
    fn graph_node_count(&self, graph: GraphHandle) -> Result<usize>;
    /// `cuGraphDebugDotPrint` with `CUgraphDebugDot_flags`.
    fn graph_debug_dot_print(&self, graph: GraphHandle, path: &CStr, flags: u32) -> Result<()>;
    /// `cuGraphInstantiateWithFlags` with `CUgraphInstantiate_flags`, in the current context.
    fn graph_instantiate(&self, graph: GraphHandle, flags: u64) -> Result<GraphExecHandle>;
    /// `cuGraphInstantiateWithParams` with `CUgraphInstantiate_flags` and an upload stream
    /// (used with `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`), in the current context: `Ok` with the
    /// driver's answer (`CUgraphInstantiateResult` and the node it names) whether or not it
    /// instantiated; `Err` only where the call failed with no reason given.
    fn graph_instantiate_with_params(
        &self,
        graph: GraphHandle,
        flags: u64,
        upload: StreamHandle,
    ) -> Result<(Result<GraphExecHandle>, UpdateResult)>;
    /// `cuGraphExecDestroy`.
    fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()>;
    /// `cuGraphLaunch`.
    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
    /// `cuGraphUpload`.
    fn graph_upload(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
    /// `cuGraphAddEmptyNode`.
    fn graph_add_empty_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddKernelNode` (`_v2`, a `CUkernel` in a context).
    ///
    /// # Safety
    ///
    /// `spec.args` holds one valid pointer per kernel parameter, to bytes of its size.
    unsafe fn graph_add_kernel_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        spec: &KernelNodeSpec,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphKernelNodeGetParams`: grid, block and shared memory (`args` left null).
    fn graph_kernel_node_get(&self, node: GraphNodeHandle) -> Result<KernelNodeSpec>;
    /// `cuGraphKernelNodeSetParams`.
    ///
    /// # Safety
    ///
    /// As for [`GraphApi::graph_add_kernel_node`].
    unsafe fn graph_kernel_node_set(
        &self,
        node: GraphNodeHandle,
        spec: &KernelNodeSpec,
    ) -> Result<()>;
    /// `cuGraphExecKernelNodeSetParams`.
    ///
    /// # Safety
    ///
    /// As for [`GraphApi::graph_add_kernel_node`].
    unsafe fn graph_exec_kernel_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        spec: &KernelNodeSpec,
    ) -> Result<()>;
    /// `cuGraphAddMemcpyNode` of one linear copy, in `context`.
    fn graph_add_memcpy_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        copy: &CopySpec,
        context: ContextHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddMemsetNode` of one row, in `context`.
    fn graph_add_memset_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        memset: &MemsetSpec,
        context: ContextHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddHostNode`: `f(data)` on a driver thread each time the node runs.
    fn graph_add_host_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphMemcpyNodeSetParams` to one linear copy.
    fn graph_memcpy_node_set(&self, node: GraphNodeHandle, copy: &CopySpec) -> Result<()>;
    /// `cuGraphMemcpyNodeGetParams`: its ends and size.
    fn graph_memcpy_node_get(&self, node: GraphNodeHandle) -> Result<CopyNodeInfo>;
    /// `cuGraphExecMemcpyNodeSetParams` to one linear copy, in `context`.
    fn graph_exec_memcpy_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        copy: &CopySpec,
        context: ContextHandle,
    ) -> Result<()>;
    /// `cuGraphMemsetNodeSetParams` to one row.
    fn graph_memset_node_set(&self, node: GraphNodeHandle, memset: &MemsetSpec) -> Result<()>;
    /// `cuGraphMemsetNodeGetParams` (of a node of one row; `count` is its width).
    fn graph_memset_node_get(&self, node: GraphNodeHandle) -> Result<MemsetSpec>;
    /// `cuGraphExecMemsetNodeSetParams` to one row, in `context`.
    fn graph_exec_memset_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        memset: &MemsetSpec,
        context: ContextHandle,
    ) -> Result<()>;
    /// `cuGraphHostNodeSetParams`.
    fn graph_host_node_set(
        &self,
        node: GraphNodeHandle,
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<()>;
    /// `cuGraphExecHostNodeSetParams`.
    fn graph_exec_host_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<()>;
    /// `cuGraphEventRecordNodeSetEvent` (`record`) or `cuGraphEventWaitNodeSetEvent`.
    fn graph_event_node_set(
        &self,
        node: GraphNodeHandle,
        event: EventHandle,
        record: bool,
    ) -> Result<()>;
    /// `cuGraphExecEventRecordNodeSetEvent` (`record`) or `cuGraphExecEventWaitNodeSetEvent`.
    fn graph_exec_event_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        event: EventHandle,
        record: bool,
    ) -> Result<()>;
    /// `cuStreamGetCaptureInfo`: the raw `CUstreamCaptureStatus` and the capture's id (0
    /// when not capturing).
    fn stream_capture_info(&self, stream: StreamHandle) -> Result<(u32, u64)>;
    /// `cuStreamGetCaptureInfo`: the graph an active capture of `stream` records into
    /// (`None` when the stream does not capture, or its capture is invalidated).
    fn stream_capture_graph(&self, stream: StreamHandle) -> Result<Option<GraphHandle>>;
    /// `cuMemAllocAsync` of `bytes` on `stream` (from the current pool of its device), in
    /// the current context.
    fn mem_alloc_async(&self, bytes: usize, stream: StreamHandle) -> Result<DevicePtr>;
    /// `cuGraphAddEventRecordNode`.
    fn graph_add_event_record_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        event: EventHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddEventWaitNode`.
    fn graph_add_event_wait_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        event: EventHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddChildGraphNode` (the driver embeds a clone of `child`).
    fn graph_add_child_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        child: GraphHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddMemAllocNode` of `bytes` on `device` (pinned, device-located, no handle
    /// types): the node and the address it gives.
    fn graph_add_mem_alloc_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        device: DeviceHandle,
        bytes: usize,
    ) -> Result<(GraphNodeHandle, DevicePtr)>;
    /// `cuGraphAddMemFreeNode`.
    fn graph_add_mem_free_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        ptr: DevicePtr,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphAddDependencies` (no edge data).
    fn graph_add_dependencies(
        &self,
        graph: GraphHandle,
        from: &[GraphNodeHandle],
        to: &[GraphNodeHandle],
    ) -> Result<()>;
    /// `cuGraphRemoveDependencies` (no edge data).
    fn graph_remove_dependencies(
        &self,
        graph: GraphHandle,
        from: &[GraphNodeHandle],
        to: &[GraphNodeHandle],
    ) -> Result<()>;
    /// `cuGraphGetNodes`.
    fn graph_nodes(&self, graph: GraphHandle) -> Result<Vec<GraphNodeHandle>>;
    /// `cuGraphGetRootNodes`.
    fn graph_root_nodes(&self, graph: GraphHandle) -> Result<Vec<GraphNodeHandle>>;
    /// `cuGraphGetEdges` (no edge data): the `(from, to)` pairs.
    fn graph_edges(&self, graph: GraphHandle) -> Result<Vec<(GraphNodeHandle, GraphNodeHandle)>>;
    /// `cuGraphNodeGetDependencies` (`dependents` false) or `cuGraphNodeGetDependentNodes`.
    fn graph_node_neighbours(
        &self,
        node: GraphNodeHandle,
        dependents: bool,
    ) -> Result<Vec<GraphNodeHandle>>;
    /// `cuGraphNodeGetType`: the raw `CUgraphNodeType`.
    fn graph_node_type(&self, node: GraphNodeHandle) -> Result<u32>;
    /// `cuGraphNodeSetEnabled`: whether `node` (of the graph `exec` was instantiated from)
    /// runs in `exec`'s launches from now on.
    fn graph_node_set_enabled(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        enabled: bool,
    ) -> Result<()>;
    /// `cuGraphNodeGetEnabled`.
    fn graph_node_get_enabled(&self, exec: GraphExecHandle, node: GraphNodeHandle) -> Result<bool>;
    /// `cuGraphNodeGetLocalId` (the 13 header only; 13.1 and newer drivers): the node's id
    /// within its graph.
    fn graph_node_local_id(&self, node: GraphNodeHandle) -> Result<u32>;
    /// `cuGraphDestroyNode`.
    fn graph_destroy_node(&self, node: GraphNodeHandle) -> Result<()>;
    /// `cuGraphNodeFindInClone`.
    fn graph_node_find_in_clone(
        &self,
        original: GraphNodeHandle,
        clone: GraphHandle,
    ) -> Result<GraphNodeHandle>;
    /// `cuGraphExecUpdate`: `Ok` with the driver's answer whether or not it updated; `Err`
    /// only for a failure that is not an update refusal.
    fn graph_exec_update(
        &self,
        exec: GraphExecHandle,
        graph: GraphHandle,
    ) -> Result<(Result<()>, UpdateResult)>;
    /// `cuGraphConditionalHandleCreate` for a conditional node of `graph` in `context`: with
    /// `CU_GRAPH_COND_ASSIGN_DEFAULT` and `default` as the value each launch starts with
    /// where given, with no flags otherwise.
    fn graph_conditional_handle_create(
        &self,
        graph: GraphHandle,
        context: ContextHandle,
        default: Option<u32>,
    ) -> Result<u64>;
    /// `cuGraphAddNode` of a conditional node in `context` (`CUgraphConditionalNodeType`
    /// `kind`: 0 IF, 1 WHILE, 2 SWITCH) with `size` bodies: the node, and its body graphs,
    /// which the node owns (never destroyed by the caller).
    fn graph_add_conditional_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        context: ContextHandle,
        handle: u64,
        kind: u32,
        size: u32,
    ) -> Result<(GraphNodeHandle, Vec<GraphHandle>)>;
    /// `cuUserObjectCreate` with one reference and `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`.
    fn user_object_create(
        &self,
        data: *mut c_void,
        destroy: unsafe extern "C" fn(*mut c_void),
    ) -> Result<UserObjectHandle>;
    /// `cuUserObjectRetain` (one reference, held by the caller).
    fn user_object_retain(&self, object: UserObjectHandle) -> Result<()>;
    /// `cuUserObjectRelease` (one reference of the caller's).
    fn user_object_release(&self, object: UserObjectHandle) -> Result<()>;
    /// `cuGraphRetainUserObject` moving one of the caller's references to `graph`.
    fn graph_take_user_object(&self, graph: GraphHandle, object: UserObjectHandle) -> Result<()>;
}
