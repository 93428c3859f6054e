//! The driver through the CUDA 13 header's table (`cuda-sys13`): only what differs from 12.
//!
//! `cuCtxCreate` is `cuCtxCreate_v4(pctx, params, flags, dev)`, called here without
//! execution-affinity or CIG parameters; the UUID comes from `cuDeviceGetUuid` (the 13 header
//! maps nothing over it); `cuKernelGetParamCount` exists (13.1+ drivers export it);
//! `CUmemLocation` puts its `id` in a union; an SM resource also reports
//! its smallest partition and its co-scheduling alignment.

use cuda_sys13::{
    CUdevSmResource, CUmemLocation, CUmemLocationType, CUmemLocation_st__bindgen_ty_1,
};

super::shared::driver_impl!(Driver13, cuda_sys13, Abi::Cuda13);

// The trait's bodies shared by both ABIs: ordinary modules, compiled once per major against
// this file's `sys` crate and `Drv` type.
use cuda_sys13 as sys;
type Drv = Driver13;

super::shared::shared_modules!();

impl Driver13 {
    fn abi_ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuCtxCreate(&mut ctx, std::ptr::null_mut(), flags, device))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn abi_graph_node_local_id(&self, node: GraphNodeHandle) -> Result<u32> {
        let mut id = 0;
        call!(self.cuGraphNodeGetLocalId(node.0.cast(), &mut id))?;
        Ok(id)
    }

    fn abi_kernel_get_param_count(&self, kernel: KernelHandle) -> Result<usize> {
        let mut count = 0;
        call!(self.cuKernelGetParamCount(kernel.0.cast(), &mut count))?;
        Ok(count)
    }

    fn abi_checkpoint_restore(&self, pid: i32, pairs: &[([u8; 16], [u8; 16])]) -> Result<()> {
        let uuid = |bytes: [u8; 16]| cuda_sys13::CUuuid {
            bytes: bytes.map(|b| b as std::ffi::c_char),
        };
        let mut pairs: Vec<cuda_sys13::CUcheckpointGpuPair> = pairs
            .iter()
            .map(|&(old, new)| cuda_sys13::CUcheckpointGpuPair {
                oldUuid: uuid(old),
                newUuid: uuid(new),
            })
            .collect();
        // SAFETY: plain data and null pointers, all zero by default.
        let mut args: cuda_sys13::CUcheckpointRestoreArgs = unsafe { std::mem::zeroed() };
        if !pairs.is_empty() {
            args.gpuPairs = pairs.as_mut_ptr();
            args.gpuPairsCount = u32::try_from(pairs.len()).unwrap_or(u32::MAX);
        }
        call!(self.cuCheckpointProcessRestore(pid, &mut args))
    }

    fn abi_device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]> {
        let mut uuid = cuda_sys13::CUuuid::default();
        call!(self.cuDeviceGetUuid(&mut uuid, device))?;
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
            call!(self.cuGraphAddDependencies(graph.0.cast(), from, to, std::ptr::null(), count))
        } else {
            call!(self.cuGraphRemoveDependencies(graph.0.cast(), from, to, std::ptr::null(), count))
        }
    }

    /// `cuGraphAddNode` (exported as `_v2`, with edge data: none here).
    fn abi_graph_add_node(
        &self,
        graph: GraphHandle,
        deps: &[GraphNodeHandle],
        params: &mut cuda_sys13::CUgraphNodeParams,
    ) -> Result<GraphNodeHandle> {
        let mut node = std::ptr::null_mut();
        call!(self.cuGraphAddNode(
            &mut node,
            graph.0.cast(),
            deps.as_ptr().cast(),
            std::ptr::null(),
            deps.len(),
            params
        ))?;
        Ok(GraphNodeHandle(node.cast()))
    }

    /// `cuStreamGetCaptureInfo` of the status and id only (the 13 header's takes edge data too).
    fn abi_stream_capture_info(&self, stream: StreamHandle) -> Result<(u32, u64, GraphHandle)> {
        let mut status = cuda_sys13::CUstreamCaptureStatus(0);
        let mut id = 0u64;
        let mut graph = std::ptr::null_mut();
        call!(self.cuStreamGetCaptureInfo(
            stream.0.cast(),
            &mut status,
            &mut id,
            &mut graph,
            std::ptr::null_mut(),
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
        call!(self.cuGraphGetEdges(graph.0.cast(), from, to, std::ptr::null_mut(), &mut count))?;
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
            call!(self.cuGraphNodeGetDependentNodes(
                node.0.cast(),
                nodes,
                std::ptr::null_mut(),
                &mut count
            ))?;
        } else {
            call!(self.cuGraphNodeGetDependencies(
                node.0.cast(),
                nodes,
                std::ptr::null_mut(),
                &mut count
            ))?;
        }
        Ok(count)
    }
}

/// A device as a memory location.
fn device_location(device: DeviceHandle) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id: device },
    }
}

/// An SM resource's fields.
fn sm_info(sm: &CUdevSmResource) -> SmInfo {
    SmInfo {
        sm_count: sm.smCount,
        min_partition_size: Some(sm.minSmPartitionSize),
        coscheduled_alignment: Some(sm.smCoscheduledAlignment),
        flags: Some(sm.flags),
    }
}

/// The first driver with work-queue resources (CUDA 13.1): older 13.x drivers refuse the
/// resource types as invalid values, which would name no cause.
const WORKQUEUES: DriverVersion = DriverVersion(13010);

/// Work-queue resources (`CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG` and `_WORKQUEUE`).
impl Driver13 {
    fn require_workqueues(&self) -> Result<()> {
        if self.version >= WORKQUEUES {
            return Ok(());
        }
        Err(Error::NotSupported {
            function: "cuDeviceGetDevResource (work-queue resources: drivers 13.1 and newer)",
            driver: self.version,
            abi: 13,
        })
    }

    fn abi_workqueue_config(&self, device: DeviceHandle) -> Result<WorkqueueInfo> {
        self.require_workqueues()?;
        let mut out = DevResource::ZERO;
        call!(self.cuDeviceGetDevResource(
            device,
            green::resource_mut(&mut out),
            sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG
        ))?;
        // SAFETY: a work-queue configuration resource's union holds its `wqConfig` member.
        let config = unsafe { green::resource(&out).__bindgen_anon_1.wqConfig };
        Ok(WorkqueueInfo {
            device: config.device,
            concurrency_limit: config.wqConcurrencyLimit,
            scope: config.sharingScope.0,
        })
    }

    fn abi_ctx_workqueue(&self, ctx: ContextHandle) -> Result<DevResource> {
        self.require_workqueues()?;
        let mut out = DevResource::ZERO;
        call!(self.cuCtxGetDevResource(
            ctx.0.cast(),
            green::resource_mut(&mut out),
            sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE
        ))?;
        Ok(out)
    }

    fn abi_workqueue_config_resource(&self, info: WorkqueueInfo) -> Result<DevResource> {
        self.require_workqueues()?;
        let mut out = DevResource::ZERO;
        let raw = green::resource_mut(&mut out);
        raw.type_ = sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG;
        raw.__bindgen_anon_1.wqConfig = sys::CUdevWorkqueueConfigResource {
            device: info.device,
            wqConcurrencyLimit: info.concurrency_limit,
            sharingScope: sys::CUdevWorkqueueConfigScope(info.scope),
        };
        Ok(out)
    }
}

/// Managed memory and batched copies: `cuMemcpyBatchAsync` is `_v2`, without the failing
/// copy's index; prefetch and advice take a location under their plain names (exported as
/// `_v2`); the batched prefetch and discard calls are 13.x functions, which a driver older
/// than them does not export (then `NotSupported` names them).
impl Driver13 {
    #[allow(clippy::too_many_arguments)]
    fn abi_memcpy_batch_async(
        &self,
        dsts: *mut DevicePtr,
        srcs: *mut DevicePtr,
        sizes: *mut usize,
        count: usize,
        attributes: *mut cuda_sys13::CUmemcpyAttributes,
        attribute_starts: *mut usize,
        attribute_count: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemcpyBatchAsync(
            dsts,
            srcs,
            sizes,
            count,
            attributes,
            attribute_starts,
            attribute_count,
            stream.0.cast()
        ))
    }

    fn abi_mem_prefetch_async(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        location: crate::driver::MemLocation,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemPrefetchAsync(ptr, bytes, mem_location(location), 0, stream.0.cast()))
    }

    fn abi_mem_advise(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        advice: cuda_sys13::CUmem_advise,
        location: crate::driver::MemLocation,
    ) -> Result<()> {
        call!(self.cuMemAdvise(ptr, bytes, advice, mem_location(location)))
    }

    fn abi_mem_batch_async(
        &self,
        kind: BatchKind,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        locations: &[crate::driver::MemLocation],
        location_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()> {
        // The driver reads these arrays only (the header's parameters are not `const`); the
        // neutral locations are this header's `CUmemLocation` (checked at compile time).
        let (ptrs_, sizes_) = (ptrs.as_ptr().cast_mut(), sizes.as_ptr().cast_mut());
        let locations_ = locations.as_ptr().cast_mut().cast::<CUmemLocation>();
        let starts = location_starts.as_ptr().cast_mut();
        match kind {
            BatchKind::Discard => {
                call!(self.cuMemDiscardBatchAsync(ptrs_, sizes_, ptrs.len(), 0, stream.0.cast()))
            }
            BatchKind::Prefetch => call!(self.cuMemPrefetchBatchAsync(
                ptrs_,
                sizes_,
                ptrs.len(),
                locations_,
                starts,
                locations.len(),
                0,
                stream.0.cast()
            )),
            BatchKind::DiscardAndPrefetch => call!(self.cuMemDiscardAndPrefetchBatchAsync(
                ptrs_,
                sizes_,
                ptrs.len(),
                locations_,
                starts,
                locations.len(),
                0,
                stream.0.cast()
            )),
        }
    }
}

/// A pool's location, by `CUmemLocationType` code and id.
fn pool_location(kind: u32, id: i32) -> CUmemLocation {
    CUmemLocation {
        type_: CUmemLocationType(kind),
        __bindgen_anon_1: CUmemLocation_st__bindgen_ty_1 { id },
    }
}

/// The current pool of a location and allocation type (`cuMemGetMemPool`, `cuMemSetMemPool`:
/// new in the 13 header).
impl Driver13 {
    fn abi_mem_get_mem_pool(
        &self,
        location: crate::driver::api::PoolLocation,
        managed: bool,
    ) -> Result<PoolHandle> {
        let (kind, id) = location.code();
        let mut location = pool_location(kind, id);
        let mut pool = std::ptr::null_mut();
        call!(self.cuMemGetMemPool(&mut pool, &mut location, allocation_type(managed)))?;
        Ok(PoolHandle(pool.cast()))
    }

    fn abi_mem_set_mem_pool(
        &self,
        location: crate::driver::api::PoolLocation,
        managed: bool,
        pool: PoolHandle,
    ) -> Result<()> {
        let (kind, id) = location.code();
        let mut location = pool_location(kind, id);
        call!(self.cuMemSetMemPool(&mut location, allocation_type(managed), pool.0.cast()))
    }
}

/// `CU_MEM_ALLOCATION_TYPE_MANAGED` or `_PINNED`.
fn allocation_type(managed: bool) -> cuda_sys13::CUmemAllocationType {
    if managed {
        cuda_sys13::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED
    } else {
        cuda_sys13::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED
    }
}

/// `CU_MEM_ALLOCATION_TYPE_MANAGED` (new in the 13 header).
fn managed_allocation_type() -> Option<cuda_sys13::CUmemAllocationType> {
    Some(cuda_sys13::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_MANAGED)
}

/// Core dumps: the 13 header adds gzip compression, faulted contexts only, no tensor memory,
/// no error barrier at exit and logging only to the 12.9 header's generation flags.
impl Driver13 {
    fn abi_coredump_flags_named(&self) -> u32 {
        use cuda_sys13::CUCoredumpGenerationFlags as F;
        [
            F::CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES,
            F::CU_COREDUMP_SKIP_GLOBAL_MEMORY,
            F::CU_COREDUMP_SKIP_SHARED_MEMORY,
            F::CU_COREDUMP_SKIP_LOCAL_MEMORY,
            F::CU_COREDUMP_SKIP_ABORT,
            F::CU_COREDUMP_SKIP_CONSTBANK_MEMORY,
            F::CU_COREDUMP_GZIP_COMPRESS,
            F::CU_COREDUMP_FAULTED_CONTEXTS_ONLY,
            F::CU_COREDUMP_SKIP_TENSOR_MEMORY,
            F::CU_COREDUMP_NO_ERRBAR_AT_EXIT,
            F::CU_COREDUMP_LOG_ONLY,
        ]
        .iter()
        // The 13 header's enum is an `int`: LOG_ONLY (1 << 31) reads negative.
        .fold(0, |named, flag| named | flag.0 as u32)
    }
}
