//! Loaded code: libraries, kernels, occupancy, and the driver's linker.

use std::ffi::CStr;

use crate::driver::handles::{
    DeviceHandle, DevicePtr, FunctionHandle, JitLogs, KernelHandle, LaunchParams, LibraryHandle,
    LinkInput, LinkOptions, ModuleHandle,
};
use crate::error::Result;

/// Libraries, kernels and the driver's linker.
pub(crate) trait ModuleApi {
    /// `cuLibraryLoadData` of a cubin, fatbin or NUL-terminated PTX image, with the JIT
    /// options of `options` (which apply where the driver compiles PTX; `wall_time` is not
    /// asked for) and an info and an error log buffer: the library, or the driver's error,
    /// with what the JIT wrote to its logs either way.
    fn library_load_data(
        &self,
        image: &[u8],
        options: &LinkOptions,
    ) -> (Result<LibraryHandle>, JitLogs);
    /// `cuLibraryUnload`.
    fn library_unload(&self, library: LibraryHandle) -> Result<()>;
    /// `cuLibraryGetKernel`.
    fn library_get_kernel(&self, library: LibraryHandle, name: &CStr) -> Result<KernelHandle>;
    /// `cuLibraryGetGlobal` for the current context, or `cuLibraryGetManaged` where
    /// `managed`: the variable's address and size.
    fn library_get_variable(
        &self,
        library: LibraryHandle,
        name: &CStr,
        managed: bool,
    ) -> Result<(DevicePtr, usize)>;
    /// `cuLibraryGetKernelCount`, then `cuLibraryEnumerateKernels`.
    fn library_kernels(&self, library: LibraryHandle) -> Result<Vec<KernelHandle>>;
    /// `cuKernelGetAttribute` by `CUfunction_attribute` code.
    fn kernel_get_attribute(
        &self,
        attribute: i32,
        kernel: KernelHandle,
        device: DeviceHandle,
    ) -> Result<i32>;
    /// `cuKernelSetAttribute` by `CUfunction_attribute` code.
    fn kernel_set_attribute(
        &self,
        attribute: i32,
        value: i32,
        kernel: KernelHandle,
        device: DeviceHandle,
    ) -> Result<()>;
    /// `cuKernelGetParamInfo`: `(offset, size)`, or `None` past the last parameter.
    fn kernel_get_param_info(
        &self,
        kernel: KernelHandle,
        index: usize,
    ) -> Result<Option<(usize, usize)>>;
    /// `cuKernelGetName`.
    fn kernel_get_name(&self, kernel: KernelHandle) -> Result<String>;
    /// `cuKernelGetParamCount` (13.1 and newer drivers; `NotSupported` before).
    fn kernel_get_param_count(&self, kernel: KernelHandle) -> Result<usize>;
    /// `cuKernelGetFunction` for the current context.
    fn kernel_get_function(&self, kernel: KernelHandle) -> Result<FunctionHandle>;
    /// `cuLibraryGetModule`: the library's module in the current context.
    fn library_get_module(&self, library: LibraryHandle) -> Result<ModuleHandle>;
    /// `cuKernelSetCacheConfig` (`config`: a `CUfunc_cache`) for `device`.
    fn kernel_set_cache_config(
        &self,
        kernel: KernelHandle,
        config: u32,
        device: DeviceHandle,
    ) -> Result<()>;
    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
    fn occupancy_max_active_blocks(
        &self,
        function: FunctionHandle,
        block_size: i32,
        dynamic_smem: usize,
    ) -> Result<i32>;
    /// `cuOccupancyMaxPotentialBlockSize` with a fixed dynamic shared memory size:
    /// `(min_grid_size, block_size)`.
    fn occupancy_max_potential_block_size(
        &self,
        function: FunctionHandle,
        dynamic_smem: usize,
        block_size_limit: i32,
    ) -> Result<(i32, i32)>;
    /// `cuOccupancyMaxActiveClusters` for a launch configuration.
    fn occupancy_max_active_clusters(
        &self,
        function: FunctionHandle,
        params: &LaunchParams,
    ) -> Result<i32>;
    /// `cuOccupancyAvailableDynamicSMemPerBlock`.
    fn occupancy_available_dynamic_smem(
        &self,
        function: FunctionHandle,
        num_blocks: i32,
        block_size: i32,
    ) -> Result<usize>;
    /// `cuOccupancyMaxPotentialClusterSize` for a launch configuration.
    fn occupancy_max_potential_cluster_size(
        &self,
        function: FunctionHandle,
        params: &LaunchParams,
    ) -> Result<i32>;
    /// The driver's linker: `cuLinkCreate` with `options`, `cuLinkAddData` per input,
    /// `cuLinkComplete`, a copy of the cubin, `cuLinkDestroy`. Returns the cubin and the info
    /// log (with the wall time, where asked for); a failure is `Error::Link` with the error log.
    fn link(&self, inputs: &[LinkInput<'_>], options: &LinkOptions) -> Result<(Vec<u8>, String)>;
}
