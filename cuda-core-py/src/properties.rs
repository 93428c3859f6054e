//! `DeviceProperties`: the device's attributes under cuda.core's names.

use crate::errors::*;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// A device's attributes (`cuDeviceGetAttribute`), read-only, under cuda.core's names: get one
/// from `Device.properties`. Each is read from the driver on first access and cached for the
/// process (attributes do not change), so reading one again costs no driver call.
#[pyclass(name = "DeviceProperties", module = "cudacore_rs", frozen)]
pub(crate) struct PyDeviceProperties {
    pub(crate) device: cuda_core::Device,
}

impl PyDeviceProperties {
    pub(crate) fn new(device: cuda_core::Device) -> Self {
        PyDeviceProperties { device }
    }
}

/// The getters, one per attribute: `name: type, "doc";`, each reading cuda-core's accessor of
/// the same name (the attribute's `CU_DEVICE_ATTRIBUTE_*` name, lower case).
macro_rules! properties {
    ($($name:ident: $ty:ty, $doc:literal;)*) => {
        #[pymethods]
        impl PyDeviceProperties {
            #[new]
            fn py_new() -> PyResult<Self> {
                Err(PyRuntimeError::new_err(
                    "DeviceProperties cannot be made directly: use Device.properties",
                ))
            }

            $(
                #[doc = $doc]
                #[getter]
                fn $name(&self, py: Python<'_>) -> PyResult<$ty> {
                    self.device.properties().$name().or_py(py)
                }
            )*

            fn __repr__(&self) -> String {
                format!("<DeviceProperties of device {}>", self.device.ordinal())
            }
        }
    };
}

properties! {
    max_threads_per_block: u32, "Maximum number of threads per block.";
    max_block_dim_x: u32, "Maximum block dimension X.";
    max_block_dim_y: u32, "Maximum block dimension Y.";
    max_block_dim_z: u32, "Maximum block dimension Z.";
    max_grid_dim_x: u32, "Maximum grid dimension X.";
    max_grid_dim_y: u32, "Maximum grid dimension Y.";
    max_grid_dim_z: u32, "Maximum grid dimension Z.";
    max_shared_memory_per_block: u32, "Maximum shared memory available per block in bytes.";
    total_constant_memory: u32, "Memory available on device for __constant__ variables in a CUDA C kernel in bytes.";
    warp_size: u32, "Warp size in threads.";
    max_pitch: u32, "Maximum pitch in bytes allowed by memory copies.";
    maximum_texture1d_width: u32, "Maximum 1D texture width.";
    maximum_texture1d_linear_width: u32, "Deprecated, do not use. Use cudaDeviceGetTexture1DLinearMaxWidth() or cuDeviceGetTexture1DLinearMaxWidth() instead.";
    maximum_texture1d_mipmapped_width: u32, "Maximum mipmapped 1D texture width.";
    maximum_texture2d_width: u32, "Maximum 2D texture width.";
    maximum_texture2d_height: u32, "Maximum 2D texture height.";
    maximum_texture2d_linear_width: u32, "Maximum 2D linear texture width.";
    maximum_texture2d_linear_height: u32, "Maximum 2D linear texture height.";
    maximum_texture2d_linear_pitch: u32, "Maximum 2D linear texture pitch in bytes.";
    maximum_texture2d_mipmapped_width: u32, "Maximum mipmapped 2D texture width.";
    maximum_texture2d_mipmapped_height: u32, "Maximum mipmapped 2D texture height.";
    maximum_texture3d_width: u32, "Maximum 3D texture width.";
    maximum_texture3d_height: u32, "Maximum 3D texture height.";
    maximum_texture3d_depth: u32, "Maximum 3D texture depth.";
    maximum_texture3d_width_alternate: u32, "Alternate maximum 3D texture width.";
    maximum_texture3d_height_alternate: u32, "Alternate maximum 3D texture height.";
    maximum_texture3d_depth_alternate: u32, "Alternate maximum 3D texture depth.";
    maximum_texturecubemap_width: u32, "Maximum cubemap texture width/height.";
    maximum_texture1d_layered_width: u32, "Maximum 1D layered texture width.";
    maximum_texture1d_layered_layers: u32, "Maximum layers in a 1D layered texture.";
    maximum_texture2d_layered_width: u32, "Maximum 2D layered texture width.";
    maximum_texture2d_layered_height: u32, "Maximum 2D layered texture height.";
    maximum_texture2d_layered_layers: u32, "Maximum layers in a 2D layered texture.";
    maximum_texturecubemap_layered_width: u32, "Maximum cubemap layered texture width/height.";
    maximum_texturecubemap_layered_layers: u32, "Maximum layers in a cubemap layered texture.";
    maximum_surface1d_width: u32, "Maximum 1D surface width.";
    maximum_surface2d_width: u32, "Maximum 2D surface width.";
    maximum_surface2d_height: u32, "Maximum 2D surface height.";
    maximum_surface3d_width: u32, "Maximum 3D surface width.";
    maximum_surface3d_height: u32, "Maximum 3D surface height.";
    maximum_surface3d_depth: u32, "Maximum 3D surface depth.";
    maximum_surface1d_layered_width: u32, "Maximum 1D layered surface width.";
    maximum_surface1d_layered_layers: u32, "Maximum layers in a 1D layered surface.";
    maximum_surface2d_layered_width: u32, "Maximum 2D layered surface width.";
    maximum_surface2d_layered_height: u32, "Maximum 2D layered surface height.";
    maximum_surface2d_layered_layers: u32, "Maximum layers in a 2D layered surface.";
    maximum_surfacecubemap_width: u32, "Maximum cubemap surface width.";
    maximum_surfacecubemap_layered_width: u32, "Maximum cubemap layered surface width.";
    maximum_surfacecubemap_layered_layers: u32, "Maximum layers in a cubemap layered surface.";
    max_registers_per_block: u32, "Maximum number of 32-bit registers available per block.";
    clock_rate: u32, "Typical clock frequency in kilohertz.";
    texture_alignment: u32, "Alignment requirement for textures.";
    texture_pitch_alignment: u32, "Pitch alignment requirement for textures.";
    gpu_overlap: bool, "Device can possibly copy memory and execute a kernel concurrently. Deprecated. Use instead CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT.";
    multiprocessor_count: u32, "Number of multiprocessors on device.";
    kernel_exec_timeout: bool, "Specifies whether there is a run time limit on kernels.";
    integrated: bool, "Device is integrated with host memory.";
    can_map_host_memory: bool, "Device can map host memory into CUDA address space.";
    compute_mode: u32, "Compute mode (See `CUcomputemode` for details).";
    concurrent_kernels: bool, "Device can possibly execute multiple kernels concurrently.";
    ecc_enabled: bool, "Device has ECC support enabled.";
    pci_bus_id: u32, "PCI bus ID of the device.";
    pci_device_id: u32, "PCI device ID of the device.";
    pci_domain_id: u32, "PCI domain ID of the device.";
    tcc_driver: bool, "Device is using TCC driver model.";
    memory_clock_rate: u32, "Peak memory clock frequency in kilohertz.";
    global_memory_bus_width: u32, "Global memory bus width in bits.";
    l2_cache_size: u32, "Size of L2 cache in bytes.";
    max_threads_per_multiprocessor: u32, "Maximum resident threads per multiprocessor.";
    unified_addressing: bool, "Device shares a unified address space with the host.";
    compute_capability_major: u32, "Major compute capability version number.";
    compute_capability_minor: u32, "Minor compute capability version number.";
    global_l1_cache_supported: bool, "Device supports caching globals in L1.";
    local_l1_cache_supported: bool, "Device supports caching locals in L1.";
    max_shared_memory_per_multiprocessor: u32, "Maximum shared memory available per multiprocessor in bytes.";
    max_registers_per_multiprocessor: u32, "Maximum number of 32-bit registers available per multiprocessor.";
    managed_memory: bool, "Device can allocate managed memory on this system.";
    multi_gpu_board: bool, "Device is on a multi-GPU board.";
    multi_gpu_board_group_id: i32, "Unique id for a group of devices on the same multi-GPU board.";
    host_native_atomic_supported: bool, "Link between the device and the host supports all native atomic operations.";
    single_to_double_precision_perf_ratio: u32, "Ratio of single precision performance (in floating-point operations per second) to double precision performance.";
    pageable_memory_access: bool, "Device supports coherently accessing pageable memory without calling cudaHostRegister on it.";
    concurrent_managed_access: bool, "Device can coherently access managed memory concurrently with the CPU.";
    compute_preemption_supported: bool, "Device supports compute preemption.";
    can_use_host_pointer_for_registered_mem: bool, "Device can access host registered memory at the same virtual address as the CPU.";
    cooperative_launch: bool, "Device supports launching cooperative kernels via `cuLaunchCooperativeKernel`.";
    max_shared_memory_per_block_optin: u32, "Maximum optin shared memory per block. That is shared memory that is available for dynamic allocation or static allocation (including architecture specific static shared memory) on this device but is not guaranteed to be portable.";
    pageable_memory_access_uses_host_page_tables: bool, "Device accesses pageable memory via the host's page tables.";
    direct_managed_mem_access_from_host: bool, "The host can directly access managed memory on the device without migration.";
    virtual_memory_management_supported: bool, "Device supports virtual memory management APIs like `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap` and related APIs.";
    handle_type_posix_file_descriptor_supported: bool, "Device supports exporting memory to a posix file descriptor with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`.";
    handle_type_win32_handle_supported: bool, "Device supports exporting memory to a Win32 NT handle with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`.";
    handle_type_win32_kmt_handle_supported: bool, "Device supports exporting memory to a Win32 KMT handle with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`.";
    max_blocks_per_multiprocessor: u32, "Maximum number of blocks per multiprocessor.";
    generic_compression_supported: bool, "Device supports compression of memory.";
    max_persisting_l2_cache_size: u32, "Maximum L2 persisting lines capacity setting in bytes.";
    max_access_policy_window_size: u32, "Maximum value of CUaccessPolicyWindow::num_bytes.";
    gpu_direct_rdma_with_cuda_vmm_supported: bool, "Device supports specifying the GPUDirect RDMA flag with `cuMemCreate`.";
    reserved_shared_memory_per_block: u32, "Shared memory reserved by CUDA driver per block in bytes.";
    sparse_cuda_array_supported: bool, "Device supports sparse CUDA arrays and sparse CUDA mipmapped arrays.";
    read_only_host_register_supported: bool, "Device supports using the `cuMemHostRegister` flag `CU_MEMHOSTERGISTER_READ_ONLY` to register memory that must be mapped as read-only to the GPU.";
    memory_pools_supported: bool, "Device supports using the `cuMemAllocAsync` and `cuMemPool` family of APIs.";
    gpu_direct_rdma_supported: bool, "Device supports GPUDirect RDMA APIs, like nvidia_p2p_get_pages (see <https://docs.nvidia.com/cuda/gpudirect-rdma> for more information).";
    gpu_direct_rdma_flush_writes_options: u32, "The returned attribute shall be interpreted as a bitmask, where the individual bits are described by the `CUflushGPUDirectRDMAWritesOptions` enum.";
    gpu_direct_rdma_writes_ordering: u32, "GPUDirect RDMA writes to the device do not need to be flushed for consumers within the scope indicated by the returned attribute. See `CUGPUDirectRDMAWritesOrdering` for the numerical values returned here.";
    mempool_supported_handle_types: u32, "Handle types supported with mempool based IPC.";
    deferred_mapping_cuda_array_supported: bool, "Device supports deferred mapping CUDA arrays and CUDA mipmapped arrays.";
    numa_config: u32, "NUMA configuration of a device: value is of type `CUdeviceNumaConfig` enum.";
    numa_id: i32, "NUMA node ID of the GPU memory.";
    multicast_supported: bool, "Device supports switch multicast and reduction operations.";
    surface_alignment: u32, "Alignment requirement for surfaces.";
    async_engine_count: u32, "Number of asynchronous engines.";
    can_tex2d_gather: bool, "Deprecated, do not use.";
    maximum_texture2d_gather_width: u32, "Maximum 2D texture width if CUDA_ARRAY3D_TEXTURE_GATHER is set.";
    maximum_texture2d_gather_height: u32, "Maximum 2D texture height if CUDA_ARRAY3D_TEXTURE_GATHER is set.";
    stream_priorities_supported: bool, "Device supports stream priorities.";
    can_flush_remote_writes: bool, "The `CU_STREAM_WAIT_VALUE_FLUSH` flag and the `CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES` MemOp are supported on the device. See CUDA_MEMOP for additional details.";
    host_register_supported: bool, "Device supports host memory registration via `cudaHostRegister`.";
    timeline_semaphore_interop_supported: bool, "External timeline semaphore interop is supported on the device.";
    cluster_launch: bool, "Indicates device supports cluster launch.";
    can_use_64_bit_stream_mem_ops: bool, "64-bit operations are supported in `cuStreamBatchMemOp` and related MemOp APIs.";
    can_use_stream_wait_value_nor: bool, "`CU_STREAM_WAIT_VALUE_NOR` is supported by MemOp APIs.";
    dma_buf_supported: bool, "Device supports buffer sharing with dma_buf mechanism.";
    ipc_event_supported: bool, "Device supports IPC Events.";
    mem_sync_domain_count: u32, "Number of memory domains the device supports.";
    tensor_map_access_supported: bool, "Device supports accessing memory using Tensor Map.";
    handle_type_fabric_supported: bool, "Device supports exporting memory to a fabric handle with cuMemExportToShareableHandle() or requested with cuMemCreate().";
    unified_function_pointers: bool, "Device supports unified function pointers.";
    mps_enabled: bool, "Indicates if contexts created on this device will be shared via MPS.";
    host_numa_id: i32, "NUMA ID of the host node closest to the device. Returns -1 when system does not support NUMA.";
    d3d12_cig_supported: bool, "Device supports CIG with D3D12.";
    mem_decompress_algorithm_mask: u32, "The returned valued shall be interpreted as a bitmask, where the individual bits are described by the `CUmemDecompressAlgorithm` enum.";
    mem_decompress_maximum_length: u32, "The returned valued is the maximum length in bytes of a single decompress operation that is allowed.";
    vulkan_cig_supported: bool, "Device supports CIG with Vulkan.";
    gpu_pci_device_id: u32, "The combined 16-bit PCI device ID and 16-bit PCI vendor ID.";
    gpu_pci_subsystem_id: u32, "The combined 16-bit PCI subsystem ID and 16-bit PCI subsystem vendor ID.";
    host_numa_virtual_memory_management_supported: bool, "Device supports HOST_NUMA location with the virtual memory management APIs like `cuMemCreate`, `cuMemMap` and related APIs.";
    host_numa_memory_pools_supported: bool, "Device supports HOST_NUMA location with the `cuMemAllocAsync` and `cuMemPool` family of APIs.";
    host_numa_multinode_ipc_supported: bool, "Device supports HOST_NUMA location IPC between nodes in a multi-node system.";
    host_memory_pools_supported: bool, "Device suports HOST location with the `cuMemAllocAsync` and `cuMemPool` family of APIs.";
    host_virtual_memory_management_supported: bool, "Device supports HOST location with the virtual memory management APIs like `cuMemCreate`, `cuMemMap` and related APIs.";
    host_alloc_dma_buf_supported: bool, "Device supports page-locked host memory buffer sharing with dma_buf mechanism.";
    only_partial_host_native_atomic_supported: bool, "Link between the device and the host supports only some native atomic operations.";
}

/// Adds `DeviceProperties` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyDeviceProperties>()
}
