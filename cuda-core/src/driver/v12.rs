//! The driver through the CUDA 12.9 header's table (`cuda-sys12`): only what differs from 13.
//!
//! `cuCtxCreate` is `cuCtxCreate_v2(pctx, flags, dev)`; there is no `cuKernelGetParamCount`;
//! the UUID comes from `cuDeviceGetUuid_v2`; `CUmemLocation` holds its `id` directly; an SM
//! resource has only its count. `cuEventElapsedTime` is the original export (13 maps the name to
//! `cuEventElapsedTime_v2`), which the shared code calls by the same field name.

use cuda_sys12::{CUdevSmResource, CUmemLocation, CUmemLocationType};

super::shared::driver_impl!(Driver12, cuda_sys12, Abi::Cuda12);

// The trait's bodies shared by both ABIs: ordinary modules, compiled once per major against
// this file's `sys` crate and `Drv` type.
use cuda_sys12 as sys;
type Drv = Driver12;

super::shared::shared_modules!();

impl Driver12 {
    fn abi_ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }

    /// The 12.9 header has no `cuGraphNodeGetLocalId`.
    fn abi_graph_node_local_id(&self, _node: GraphNodeHandle) -> Result<u32> {
        Err(self.missing("cuGraphNodeGetLocalId"))
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

    /// `cuStreamGetCaptureInfo` of the status and id only (the 12.9 header's plain name takes no edge data).
    fn abi_stream_capture_info(&self, stream: StreamHandle) -> Result<(u32, u64, GraphHandle)> {
        let mut status = cuda_sys12::CUstreamCaptureStatus(0);
        let mut id = 0u64;
        let mut graph = std::ptr::null_mut();
        call!(self.cuStreamGetCaptureInfo(
            stream.0.cast(),
            &mut status,
            &mut id,
            &mut graph,
            std::ptr::null_mut(),
            std::ptr::null_mut()
        ))?;
        Ok((status.0, id, GraphHandle(graph.cast())))
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
        flags: None,
    }
}

/// Work-queue resources: the 12.9 header has none.
impl Driver12 {
    fn no_workqueues<T>(&self) -> Result<T> {
        Err(Error::NotSupported {
            function: "cuDeviceGetDevResource (work-queue resources: in the CUDA 13 header only, \
                       not through the 12 ABI)",
            driver: self.version,
            abi: 12,
        })
    }

    fn abi_workqueue_config(&self, _device: DeviceHandle) -> Result<WorkqueueInfo> {
        self.no_workqueues()
    }

    fn abi_ctx_workqueue(&self, _ctx: ContextHandle) -> Result<DevResource> {
        self.no_workqueues()
    }

    fn abi_workqueue_config_resource(&self, _info: WorkqueueInfo) -> Result<DevResource> {
        self.no_workqueues()
    }
}

/// `CU_DEVICE_CPU`: the host, as the first forms of prefetch and advice name it.
const DEVICE_CPU: i32 = -1;

/// A location as the first forms of prefetch and advice take it (a device ordinal, or
/// `CU_DEVICE_CPU`): `None` for host NUMA nodes, which they cannot name.
fn legacy_device(location: crate::driver::MemLocation) -> Option<i32> {
    use crate::driver::MemLocation;
    match location.kind {
        MemLocation::DEVICE => Some(location.id),
        MemLocation::HOST => Some(DEVICE_CPU),
        _ => None,
    }
}

/// Managed memory and batched copies: the 12.9 header's `cuMemcpyBatchAsync` reports the index
/// of a failing copy; prefetch and advice with a location are `_v2` (drivers 12.2 and newer;
/// older ones get the first forms, which name devices and the host only); the batched
/// prefetch and discard calls are not in this header.
impl Driver12 {
    #[allow(clippy::too_many_arguments)]
    fn abi_memcpy_batch_async(
        &self,
        dsts: *mut DevicePtr,
        srcs: *mut DevicePtr,
        sizes: *mut usize,
        count: usize,
        attributes: *mut cuda_sys12::CUmemcpyAttributes,
        attribute_starts: *mut usize,
        attribute_count: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        let mut failed = usize::MAX;
        let result = call!(self.cuMemcpyBatchAsync(
            dsts,
            srcs,
            sizes,
            count,
            attributes,
            attribute_starts,
            attribute_count,
            &mut failed,
            stream.0.cast()
        ));
        if result.is_err() && failed < count {
            log::debug!("cuMemcpyBatchAsync: the driver names copy {failed} of {count}");
        }
        result
    }

    fn abi_mem_prefetch_async(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        location: crate::driver::MemLocation,
        stream: StreamHandle,
    ) -> Result<()> {
        if self.table.cuMemPrefetchAsync_v2.is_some() {
            return call!(self.cuMemPrefetchAsync_v2(
                ptr,
                bytes,
                mem_location(location),
                0,
                stream.0.cast()
            ));
        }
        let Some(device) = legacy_device(location) else {
            return Err(self.missing(
                "cuMemPrefetchAsync_v2 (prefetch to a host NUMA node: drivers 12.2 and newer)",
            ));
        };
        call!(self.cuMemPrefetchAsync(ptr, bytes, device, stream.0.cast()))
    }

    fn abi_mem_advise(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        advice: cuda_sys12::CUmem_advise,
        location: crate::driver::MemLocation,
    ) -> Result<()> {
        if self.table.cuMemAdvise_v2.is_some() {
            return call!(self.cuMemAdvise_v2(ptr, bytes, advice, mem_location(location)));
        }
        let Some(device) = legacy_device(location) else {
            return Err(self.missing(
                "cuMemAdvise_v2 (advice naming a host NUMA node: drivers 12.2 and newer)",
            ));
        };
        call!(self.cuMemAdvise(ptr, bytes, advice, device))
    }

    /// The 12.9 header has no batched prefetch or discard.
    fn abi_mem_batch_async(
        &self,
        kind: BatchKind,
        _ptrs: &[DevicePtr],
        _sizes: &[usize],
        _locations: &[crate::driver::MemLocation],
        _location_starts: &[usize],
        _stream: StreamHandle,
    ) -> Result<()> {
        Err(Error::NotSupported {
            function: match kind {
                BatchKind::Discard => {
                    "cuMemDiscardBatchAsync (in the CUDA 13 header only: not through the 12 ABI)"
                }
                BatchKind::Prefetch => {
                    "cuMemPrefetchBatchAsync (in the CUDA 13 header only: not through the 12 ABI)"
                }
                BatchKind::DiscardAndPrefetch => {
                    "cuMemDiscardAndPrefetchBatchAsync (in the CUDA 13 header only: not through \
                     the 12 ABI)"
                }
            },
            driver: self.version,
            abi: 12,
        })
    }
}

/// A pool's location, by `CUmemLocationType` code and id.
fn pool_location(kind: u32, id: i32) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType(kind),
        id,
    }
}

/// The current pool of a location and allocation type: the 12.9 header has only a device's
/// (`cuDeviceGetMemPool`, `cuDeviceSetMemPool`), not `cuMemGetMemPool` and `cuMemSetMemPool`.
impl Driver12 {
    fn no_location_pools<T>(&self) -> Result<T> {
        Err(Error::NotSupported {
            function: "cuMemGetMemPool and cuMemSetMemPool (the current pool of host or managed \
                       memory: in the CUDA 13 header only, not through the 12 ABI)",
            driver: self.version,
            abi: 12,
        })
    }

    fn abi_mem_get_mem_pool(
        &self,
        _location: crate::driver::api::PoolLocation,
        _managed: bool,
    ) -> Result<PoolHandle> {
        self.no_location_pools()
    }

    fn abi_mem_set_mem_pool(
        &self,
        _location: crate::driver::api::PoolLocation,
        _managed: bool,
        _pool: PoolHandle,
    ) -> Result<()> {
        self.no_location_pools()
    }
}

/// The 12.9 header has no `CU_MEM_ALLOCATION_TYPE_MANAGED`.
fn managed_allocation_type() -> Option<cuda_sys12::CUmemAllocationType> {
    None
}

/// Core dumps: the 12.9 header names the generation flags up to
/// `CU_COREDUMP_SKIP_CONSTBANK_MEMORY`, not the 13 header's later ones.
impl Driver12 {
    fn abi_coredump_flags_named(&self) -> u32 {
        use cuda_sys12::CUCoredumpGenerationFlags as F;
        [
            F::CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES,
            F::CU_COREDUMP_SKIP_GLOBAL_MEMORY,
            F::CU_COREDUMP_SKIP_SHARED_MEMORY,
            F::CU_COREDUMP_SKIP_LOCAL_MEMORY,
            F::CU_COREDUMP_SKIP_ABORT,
            F::CU_COREDUMP_SKIP_CONSTBANK_MEMORY,
        ]
        .iter()
        .fold(0, |named, flag| named | flag.0)
    }
}
