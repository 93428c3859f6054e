//! The driver through the CUDA 12.9 header's table (`cuda-sys12`): only what differs from 13.
//!
//! `cuCtxCreate` is `cuCtxCreate_v2(pctx, flags, dev)`; there is no `cuKernelGetParamCount`;
//! the UUID comes from `cuDeviceGetUuid_v2`; `CUmemLocation` holds its `id` directly; an SM
//! resource has only its count. `cuEventElapsedTime` is the original export (13 maps the name to
//! `cuEventElapsedTime_v2`), which the shared code calls by the same field name.

use cuda_sys12::{CUdevSmResource, CUmemLocation, CUmemLocationType};

super::shared::driver_impl!(Driver12, cuda_sys12, Abi::Cuda12);

impl Driver12 {
    fn abi_ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }

    /// The 12.9 header has no `cuKernelGetParamCount`.
    fn abi_kernel_get_param_count(&self, _kernel: KernelHandle) -> Result<usize> {
        Err(self.missing("cuKernelGetParamCount"))
    }

    fn abi_checkpoint_restore(&self, pid: i32, pairs: &[([u8; 16], [u8; 16])]) -> Result<()> {
        if !pairs.is_empty() {
            return Err(Error::InvalidArgument {
                name: "options.gpu_pairs",
                reason: "remapping GPUs on restore needs the CUDA 13 ABI (the 12.9 header's \
                         restore arguments have no GPU pairs)"
                    .to_owned(),
            });
        }
        let mut args = cuda_sys12::CUcheckpointRestoreArgs::default();
        call!(self.cuCheckpointProcessRestore(pid, &mut args))
    }

    fn abi_device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]> {
        let mut uuid = cuda_sys12::CUuuid::default();
        call!(self.cuDeviceGetUuid_v2(&mut uuid, device))?;
        Ok(uuid.bytes.map(|b| b as u8))
    }

    fn abi_graph_edges_change(
        &self,
        graph: GraphHandle,
        from: &[GraphNodeHandle],
        to: &[GraphNodeHandle],
        add: bool,
    ) -> Result<()> {
        let (from, to, count) = (from.as_ptr().cast(), to.as_ptr().cast(), from.len());
        if add {
            call!(self.cuGraphAddDependencies(graph.0.cast(), from, to, count))
        } else {
            call!(self.cuGraphRemoveDependencies(graph.0.cast(), from, to, count))
        }
    }

    /// `cuGraphAddNode` (the 12.9 header's plain name takes no edge data).
    fn abi_graph_add_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        params: &mut cuda_sys12::CUgraphNodeParams,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            deps.len(),
            params
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    /// The number of edges, written into `into` where given.
    fn abi_graph_edges(
        &self,
        graph: GraphHandle,
        into: Option<(&mut [GraphNodeHandle], &mut [GraphNodeHandle])>,
    ) -> Result<usize> {
        let (from, to, mut count) = match into {
            Some((from, to)) => (from.as_mut_ptr().cast(), to.as_mut_ptr().cast(), from.len()),
            None => (std::ptr::null_mut(), std::ptr::null_mut(), 0),
        };
        call!(self.cuGraphGetEdges(graph.0.cast(), from, to, &mut count))?;
        Ok(count)
    }

    /// The number of a node's dependencies (or dependents), written into `into` where given.
    fn abi_graph_node_neighbours(
        &self,
        node: GraphNodeHandle,
        dependents: bool,
        into: Option<&mut [GraphNodeHandle]>,
    ) -> Result<usize> {
        let (nodes, mut count) = match into {
            Some(nodes) => (nodes.as_mut_ptr().cast(), nodes.len()),
            None => (std::ptr::null_mut(), 0),
        };
        if dependents {
            call!(self.cuGraphNodeGetDependentNodes(node.0.cast(), nodes, &mut count))?;
        } else {
            call!(self.cuGraphNodeGetDependencies(node.0.cast(), nodes, &mut count))?;
        }
        Ok(count)
    }
}

/// A device as a memory location.
fn device_location(device: DeviceHandle) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    }
}

/// An SM resource's fields.
fn sm_info(sm: &CUdevSmResource) -> SmInfo {
    SmInfo {
        sm_count: sm.smCount,
        min_partition_size: None,
        coscheduled_alignment: None,
    }
}

/// A pool's location, by `CUmemLocationType` code and id.
fn pool_location(kind: u32, id: i32) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType(kind),
        id,
    }
}

/// The 12.9 header has no `CU_MEM_ALLOCATION_TYPE_MANAGED`.
fn managed_allocation_type() -> Option<cuda_sys12::CUmemAllocationType> {
    None
}
