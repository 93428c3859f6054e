//! [`GraphApi`](crate::driver::api::GraphApi) for both ABIs (every call it makes has the same
//! signature in both headers).

use super::*;

impl crate::driver::api::GraphApi for Drv {
    fn device_graph_mem_attribute(&self, device: DeviceHandle, attribute: u32) -> Result<u64> {
        let mut value = 0u64;
        call!(self.cuDeviceGetGraphMemAttribute(
            device,
            sys::CUgraphMem_attribute_enum(attribute),
            (&mut value as *mut u64).cast()
        ))?;
        Ok(value)
    }

    fn device_graph_mem_trim(&self, device: DeviceHandle) -> Result<()> {
        call!(self.cuDeviceGraphMemTrim(device))
    }

    fn stream_begin_capture(&self, stream: StreamHandle, mode: u32) -> Result<()> {
        call!(self.cuStreamBeginCapture(stream.0.cast(), sys::CUstreamCaptureMode(mode)))
    }

    fn thread_exchange_capture_mode(&self, mode: u32) -> Result<u32> {
        let mut mode = sys::CUstreamCaptureMode(mode);
        call!(self.cuThreadExchangeStreamCaptureMode(&mut mode))?;
        Ok(mode.0)
    }

    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle> {
        let mut graph = std::ptr::null_mut();
        call!(self.cuStreamEndCapture(stream.0.cast(), &mut graph))?;
        Ok(GraphHandle(graph.cast()))
    }

    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<u32> {
        let mut status = sys::CUstreamCaptureStatus(0);
        call!(self.cuStreamIsCapturing(stream.0.cast(), &mut status))?;
        Ok(status.0)
    }

    fn graph_create(&self) -> Result<GraphHandle> {
        let mut graph = std::ptr::null_mut();
        call!(self.cuGraphCreate(&mut graph, 0))?;
        Ok(GraphHandle(graph.cast()))
    }

    fn graph_clone(&self, graph: GraphHandle) -> Result<GraphHandle> {
        let mut clone = std::ptr::null_mut();
        call!(self.cuGraphClone(&mut clone, graph.0.cast()))?;
        Ok(GraphHandle(clone.cast()))
    }

    fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
        call!(self.cuGraphDestroy(graph.0.cast()))
    }

    fn graph_node_count(&self, graph: GraphHandle) -> Result<usize> {
        let mut count = 0;
        call!(self.cuGraphGetNodes(graph.0.cast(), std::ptr::null_mut(), &mut count))?;
        Ok(count)
    }

    fn graph_debug_dot_print(
        &self,
        graph: GraphHandle,
        path: &std::ffi::CStr,
        flags: u32,
    ) -> Result<()> {
        call!(self.cuGraphDebugDotPrint(graph.0.cast(), path.as_ptr(), flags))
    }

    fn graph_instantiate(&self, graph: GraphHandle, flags: u64) -> Result<GraphExecHandle> {
        let mut exec = std::ptr::null_mut();
        call!(self.cuGraphInstantiateWithFlags(&mut exec, graph.0.cast(), flags))?;
        Ok(GraphExecHandle(exec.cast()))
    }

    fn graph_instantiate_with_params(
        &self,
        graph: GraphHandle,
        flags: u64,
        upload: StreamHandle,
    ) -> Result<(Result<GraphExecHandle>, UpdateResult)> {
        let mut params = sys::CUDA_GRAPH_INSTANTIATE_PARAMS {
            flags,
            hUploadStream: upload.0.cast(),
            hErrNode_out: std::ptr::null_mut(),
            result_out: sys::CUgraphInstantiateResult(0),
        };
        let mut exec = std::ptr::null_mut();
        let made = call!(self.cuGraphInstantiateWithParams(&mut exec, graph.0.cast(), &mut params))
            .map(|()| GraphExecHandle(exec.cast()));
        let answer = UpdateResult {
            code: params.result_out.0,
            node: GraphNodeHandle(params.hErrNode_out.cast()),
        };
        match made {
            // A refusal names its reason in `result_out`; anything else is the call's.
            Err(e) if answer.code == 0 => Err(e),
            other => Ok((other, answer)),
        }
    }

    fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
        call!(self.cuGraphExecDestroy(exec.0.cast()))
    }

    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
        call!(self.cuGraphLaunch(exec.0.cast(), stream.0.cast()))
    }

    fn graph_upload(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
        call!(self.cuGraphUpload(exec.0.cast(), stream.0.cast()))
    }
    fn graph_add_empty_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddEmptyNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    unsafe fn graph_add_kernel_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        spec: &KernelNodeSpec,
    ) -> Result<GraphNodeHandle> {
        let params = kernel_node_params(spec);
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddKernelNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            &params
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_kernel_node_get(&self, node: GraphNodeHandle) -> Result<KernelNodeSpec> {
        // SAFETY: plain data and null pointers, all zero by default.
        let mut params: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(self.cuGraphKernelNodeGetParams(node.0.cast(), &mut params))?;
        Ok(KernelNodeSpec {
            kernel: KernelHandle(params.kern.cast()),
            context: ContextHandle(params.ctx.cast()),
            grid: [params.gridDimX, params.gridDimY, params.gridDimZ],
            block: [params.blockDimX, params.blockDimY, params.blockDimZ],
            shared_mem_bytes: params.sharedMemBytes,
            args: std::ptr::null_mut(),
        })
    }

    unsafe fn graph_kernel_node_set(
        &self,
        node: GraphNodeHandle,
        spec: &KernelNodeSpec,
    ) -> Result<()> {
        let params = kernel_node_params(spec);
        call!(self.cuGraphKernelNodeSetParams(node.0.cast(), &params))
    }

    unsafe fn graph_exec_kernel_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        spec: &KernelNodeSpec,
    ) -> Result<()> {
        let params = kernel_node_params(spec);
        call!(self.cuGraphExecKernelNodeSetParams(exec.0.cast(), node.0.cast(), &params))
    }

    fn graph_add_memcpy_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        copy: &CopySpec,
        context: ContextHandle,
    ) -> Result<GraphNodeHandle> {
        let params = memcpy_params(copy);
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddMemcpyNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            &params,
            context.0.cast()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_memset_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        memset: &MemsetSpec,
        context: ContextHandle,
    ) -> Result<GraphNodeHandle> {
        let params = memset_params(memset);
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddMemsetNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            &params,
            context.0.cast()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_host_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        data: *mut std::ffi::c_void,
    ) -> Result<GraphNodeHandle> {
        let params = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(f),
            userData: data,
        };
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddHostNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            &params
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_memcpy_node_set(&self, node: GraphNodeHandle, copy: &CopySpec) -> Result<()> {
        let params = memcpy_params(copy);
        call!(self.cuGraphMemcpyNodeSetParams(node.0.cast(), &params))
    }

    fn graph_memcpy_node_get(&self, node: GraphNodeHandle) -> Result<CopyNodeInfo> {
        // SAFETY: plain data and null pointers, all zero by default.
        let mut params: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
        call!(self.cuGraphMemcpyNodeGetParams(node.0.cast(), &mut params))?;
        let end = |kind: sys::CUmemorytype, device: u64, host: *const std::ffi::c_void| {
            if kind == sys::CUmemorytype_enum::CU_MEMORYTYPE_HOST {
                (kind.0, host as usize as u64)
            } else if kind == sys::CUmemorytype_enum::CU_MEMORYTYPE_ARRAY {
                (kind.0, 0)
            } else {
                (kind.0, device)
            }
        };
        let (src_type, src) = end(params.srcMemoryType, params.srcDevice, params.srcHost);
        let (dst_type, dst) = end(
            params.dstMemoryType,
            params.dstDevice,
            params.dstHost.cast_const(),
        );
        Ok(CopyNodeInfo {
            src_type,
            src,
            dst_type,
            dst,
            bytes: params.WidthInBytes * params.Height * params.Depth,
        })
    }

    fn graph_exec_memcpy_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        copy: &CopySpec,
        context: ContextHandle,
    ) -> Result<()> {
        let params = memcpy_params(copy);
        call!(self.cuGraphExecMemcpyNodeSetParams(
            exec.0.cast(),
            node.0.cast(),
            &params,
            context.0.cast()
        ))
    }

    fn graph_memset_node_set(&self, node: GraphNodeHandle, memset: &MemsetSpec) -> Result<()> {
        let params = memset_params(memset);
        call!(self.cuGraphMemsetNodeSetParams(node.0.cast(), &params))
    }

    fn graph_memset_node_get(&self, node: GraphNodeHandle) -> Result<MemsetSpec> {
        // SAFETY: plain data, all zero by default.
        let mut params: sys::CUDA_MEMSET_NODE_PARAMS = unsafe { std::mem::zeroed() };
        call!(self.cuGraphMemsetNodeGetParams(node.0.cast(), &mut params))?;
        Ok(MemsetSpec {
            dst: params.dst,
            value: params.value,
            element_size: params.elementSize,
            count: params.width * params.height,
        })
    }

    fn graph_exec_memset_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        memset: &MemsetSpec,
        context: ContextHandle,
    ) -> Result<()> {
        let params = memset_params(memset);
        call!(self.cuGraphExecMemsetNodeSetParams(
            exec.0.cast(),
            node.0.cast(),
            &params,
            context.0.cast()
        ))
    }

    fn graph_host_node_set(
        &self,
        node: GraphNodeHandle,
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        data: *mut std::ffi::c_void,
    ) -> Result<()> {
        let params = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(f),
            userData: data,
        };
        call!(self.cuGraphHostNodeSetParams(node.0.cast(), &params))
    }

    fn graph_exec_host_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        f: unsafe extern "C" fn(*mut std::ffi::c_void),
        data: *mut std::ffi::c_void,
    ) -> Result<()> {
        let params = sys::CUDA_HOST_NODE_PARAMS {
            fn_: Some(f),
            userData: data,
        };
        call!(self.cuGraphExecHostNodeSetParams(exec.0.cast(), node.0.cast(), &params))
    }

    fn graph_event_node_set(
        &self,
        node: GraphNodeHandle,
        event: EventHandle,
        record: bool,
    ) -> Result<()> {
        if record {
            call!(self.cuGraphEventRecordNodeSetEvent(node.0.cast(), event.0.cast()))
        } else {
            call!(self.cuGraphEventWaitNodeSetEvent(node.0.cast(), event.0.cast()))
        }
    }

    fn graph_exec_event_node_set(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        event: EventHandle,
        record: bool,
    ) -> Result<()> {
        let (exec, node, event) = (exec.0.cast(), node.0.cast(), event.0.cast());
        if record {
            call!(self.cuGraphExecEventRecordNodeSetEvent(exec, node, event))
        } else {
            call!(self.cuGraphExecEventWaitNodeSetEvent(exec, node, event))
        }
    }

    fn stream_capture_info(&self, stream: StreamHandle) -> Result<(u32, u64)> {
        self.abi_stream_capture_info(stream)
            .map(|(status, id, _)| (status, id))
    }

    fn stream_capture_graph(&self, stream: StreamHandle) -> Result<Option<GraphHandle>> {
        // CU_STREAM_CAPTURE_STATUS_ACTIVE: the graph being captured into.
        let (status, _, graph) = self.abi_stream_capture_info(stream)?;
        Ok((status == 1 && !graph.0.is_null()).then_some(graph))
    }

    fn mem_alloc_async(&self, bytes: usize, stream: StreamHandle) -> Result<DevicePtr> {
        let mut ptr = 0;
        call!(self.cuMemAllocAsync(&mut ptr, bytes, stream.0.cast()))?;
        Ok(ptr)
    }

    fn graph_add_event_record_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        event: EventHandle,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddEventRecordNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            event.0.cast()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_event_wait_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        event: EventHandle,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddEventWaitNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            event.0.cast()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_child_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        child: GraphHandle,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddChildGraphNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            child.0.cast()
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_mem_alloc_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        device: DeviceHandle,
        bytes: usize,
    ) -> Result<(GraphNodeHandle, DevicePtr)> {
        // SAFETY: plain data and null pointers, all zero by default.
        let mut params: sys::CUDA_MEM_ALLOC_NODE_PARAMS = unsafe { std::mem::zeroed() };
        params.poolProps.allocType = sys::CUmemAllocationType_enum::CU_MEM_ALLOCATION_TYPE_PINNED;
        params.poolProps.location = device_location(device);
        params.bytesize = bytes;
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddMemAllocNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            &mut params
        ))?;
        Ok((GraphNodeHandle(node.cast()), params.dptr))
    }

    fn graph_add_mem_free_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        ptr: DevicePtr,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddMemFreeNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            ptr
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_add_dependencies(
        &self,
        graph: GraphHandle,
        from: &[GraphNodeHandle],
        to: &[GraphNodeHandle],
    ) -> Result<()> {
        debug_assert_eq!(from.len(), to.len());
        self.abi_graph_edges_change(graph, from, to, true)
    }

    fn graph_remove_dependencies(
        &self,
        graph: GraphHandle,
        from: &[GraphNodeHandle],
        to: &[GraphNodeHandle],
    ) -> Result<()> {
        debug_assert_eq!(from.len(), to.len());
        self.abi_graph_edges_change(graph, from, to, false)
    }

    fn graph_nodes(&self, graph: GraphHandle) -> Result<Vec<GraphNodeHandle>> {
        let mut count = 0;
        call!(self.cuGraphGetNodes(graph.0.cast(), std::ptr::null_mut(), &mut count))?;
        if count == 0 {
            // The driver refuses an array with a count of zero.
            return Ok(Vec::new());
        }
        let mut nodes = vec![GraphNodeHandle::NULL; count];
        call!(self.cuGraphGetNodes(graph.0.cast(), nodes.as_mut_ptr().cast(), &mut count))?;
        nodes.truncate(count);
        Ok(nodes)
    }

    fn graph_root_nodes(&self, graph: GraphHandle) -> Result<Vec<GraphNodeHandle>> {
        let mut count = 0;
        call!(self.cuGraphGetRootNodes(graph.0.cast(), std::ptr::null_mut(), &mut count))?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut nodes = vec![GraphNodeHandle::NULL; count];
        call!(self.cuGraphGetRootNodes(graph.0.cast(), nodes.as_mut_ptr().cast(), &mut count))?;
        nodes.truncate(count);
        Ok(nodes)
    }

    fn graph_edges(&self, graph: GraphHandle) -> Result<Vec<(GraphNodeHandle, GraphNodeHandle)>> {
        let count = self.abi_graph_edges(graph, None)?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut from = vec![GraphNodeHandle::NULL; count];
        let mut to = vec![GraphNodeHandle::NULL; count];
        let count = self.abi_graph_edges(graph, Some((&mut from, &mut to)))?;
        Ok(from.into_iter().zip(to).take(count).collect())
    }

    fn graph_node_neighbours(
        &self,
        node: GraphNodeHandle,
        dependents: bool,
    ) -> Result<Vec<GraphNodeHandle>> {
        let count = self.abi_graph_node_neighbours(node, dependents, None)?;
        if count == 0 {
            return Ok(Vec::new());
        }
        let mut nodes = vec![GraphNodeHandle::NULL; count];
        let count = self.abi_graph_node_neighbours(node, dependents, Some(&mut nodes))?;
        nodes.truncate(count);
        Ok(nodes)
    }

    fn graph_node_type(&self, node: GraphNodeHandle) -> Result<u32> {
        let mut kind = sys::CUgraphNodeType_enum(0);
        call!(self.cuGraphNodeGetType(node.0.cast(), &mut kind))?;
        Ok(kind.0)
    }

    fn graph_node_set_enabled(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
        enabled: bool,
    ) -> Result<()> {
        call!(self.cuGraphNodeSetEnabled(exec.0.cast(), node.0.cast(), u32::from(enabled)))
    }

    fn graph_node_get_enabled(
        &self,
        exec: GraphExecHandle,
        node: GraphNodeHandle,
    ) -> Result<bool> {
        let mut enabled = 0;
        call!(self.cuGraphNodeGetEnabled(exec.0.cast(), node.0.cast(), &mut enabled))?;
        Ok(enabled != 0)
    }

    fn graph_node_local_id(&self, node: GraphNodeHandle) -> Result<u32> {
        self.abi_graph_node_local_id(node)
    }

    fn graph_destroy_node(&self, node: GraphNodeHandle) -> Result<()> {
        call!(self.cuGraphDestroyNode(node.0.cast()))
    }

    fn graph_node_find_in_clone(
        &self,
        original: GraphNodeHandle,
        clone: GraphHandle,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphNodeFindInClone(&mut node, original.0.cast(), clone.0.cast()))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    fn graph_exec_update(
        &self,
        exec: GraphExecHandle,
        graph: GraphHandle,
    ) -> Result<(Result<()>, UpdateResult)> {
        // SAFETY: plain data and null pointers, all zero by default.
        let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
        let updated = call!(self.cuGraphExecUpdate(exec.0.cast(), graph.0.cast(), &mut info));
        let answer = UpdateResult {
            code: info.result.0,
            node: GraphNodeHandle(info.errorNode.cast()),
        };
        match updated {
            // A refusal names its reason in `info`; anything else is the call's failure.
            Err(e) if info.result.0 == 0 => Err(e),
            other => Ok((other, answer)),
        }
    }

    fn graph_conditional_handle_create(
        &self,
        graph: GraphHandle,
        context: ContextHandle,
        default: Option<u32>,
    ) -> Result<u64> {
        let (value, flags) = match default {
            Some(value) => (value, sys::CU_GRAPH_COND_ASSIGN_DEFAULT),
            None => (0, 0),
        };
        let mut handle = 0;
        call!(self.cuGraphConditionalHandleCreate(
            &mut handle,
            graph.0.cast(),
            context.0.cast(),
            value,
            flags
        ))?;
        Ok(handle)
    }

    fn graph_add_conditional_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        context: ContextHandle,
        handle: u64,
        kind: u32,
        size: u32,
    ) -> Result<(GraphNodeHandle, Vec<GraphHandle>)> {
        let count = size as usize;
        let mut ours = vec![GraphHandle::NULL; count];
        let ours_at: *mut sys::CUgraph = ours.as_mut_ptr().cast();
        // SAFETY: plain data and null pointers, all zero by default.
        let mut params: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        params.type_ = sys::CUgraphNodeType_enum::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        params.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle,
            type_: sys::CUgraphConditionalNodeType_enum(kind),
            size,
            // The headers call this a CUDA-owned array the driver populates: the
            // driver's samples read the bodies through the pointer after the call.
            // It starts at an array of ours, so that the bodies are found whether the
            // driver fills the array given or points this at its own.
            phGraph_out: ours_at,
            ctx: context.0.cast(),
        };
        let node = self.abi_graph_add_node(graph, deps, &mut params)?;
        // SAFETY: the conditional member is the one written above (and by the driver).
        let out = unsafe { params.__bindgen_anon_1.conditional.phGraph_out };
        let bodies = if out.is_null() || out == ours_at {
            ours
        } else {
            // SAFETY: the driver's array of `size` bodies, valid while the node lives.
            unsafe { std::slice::from_raw_parts(out, count) }
                .iter()
                .map(|&body| GraphHandle(body.cast()))
                .collect()
        };
        Ok((node, bodies))
    }

    fn user_object_create(
        &self,
        data: *mut std::ffi::c_void,
        destroy: unsafe extern "C" fn(*mut std::ffi::c_void),
    ) -> Result<UserObjectHandle> {
        let mut object = std::ptr::null_mut();
        call!(self.cuUserObjectCreate(
            &mut object,
            data,
            Some(destroy),
            1,
            sys::CUuserObject_flags_enum::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC.0
        ))?;
        Ok(UserObjectHandle(object.cast()))
    }

    fn user_object_retain(&self, object: UserObjectHandle) -> Result<()> {
        call!(self.cuUserObjectRetain(object.0.cast(), 1))
    }

    fn user_object_release(&self, object: UserObjectHandle) -> Result<()> {
        call!(self.cuUserObjectRelease(object.0.cast(), 1))
    }

    fn graph_take_user_object(&self, graph: GraphHandle, object: UserObjectHandle) -> Result<()> {
        call!(self.cuGraphRetainUserObject(
            graph.0.cast(),
            object.0.cast(),
            1,
            sys::CUuserObjectRetain_flags_enum::CU_GRAPH_USER_OBJECT_MOVE.0
        ))
    }
}

/// One linear copy in this header's layout: `src` a host pointer or a unified
/// address, `dst` a unified address.
pub(super) fn memcpy_params(copy: &CopySpec) -> sys::CUDA_MEMCPY3D {
    // SAFETY: plain data and null pointers, all zero by default.
    let mut params: sys::CUDA_MEMCPY3D = unsafe { std::mem::zeroed() };
    if copy.src_host {
        params.srcMemoryType = sys::CUmemorytype_enum::CU_MEMORYTYPE_HOST;
        params.srcHost = copy.src as usize as *const std::ffi::c_void;
    } else {
        params.srcMemoryType = sys::CUmemorytype_enum::CU_MEMORYTYPE_UNIFIED;
        params.srcDevice = copy.src;
    }
    params.dstMemoryType = sys::CUmemorytype_enum::CU_MEMORYTYPE_UNIFIED;
    params.dstDevice = copy.dst;
    params.WidthInBytes = copy.bytes;
    params.Height = 1;
    params.Depth = 1;
    params
}

/// One row of a memset in this header's layout.
pub(super) fn memset_params(memset: &MemsetSpec) -> sys::CUDA_MEMSET_NODE_PARAMS {
    sys::CUDA_MEMSET_NODE_PARAMS {
        dst: memset.dst,
        pitch: 0,
        value: memset.value,
        elementSize: memset.element_size,
        width: memset.count,
        height: 1,
    }
}

/// A kernel node's parameters in this header's layout.
pub(super) fn kernel_node_params(spec: &KernelNodeSpec) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: std::ptr::null_mut(),
        gridDimX: spec.grid[0],
        gridDimY: spec.grid[1],
        gridDimZ: spec.grid[2],
        blockDimX: spec.block[0],
        blockDimY: spec.block[1],
        blockDimZ: spec.block[2],
        sharedMemBytes: spec.shared_mem_bytes,
        kernelParams: spec.args,
        extra: std::ptr::null_mut(),
        kern: spec.kernel.0.cast(),
        ctx: spec.context.0.cast(),
    }
}
