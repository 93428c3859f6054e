//! The seam between the safe API and the two driver ABIs.
//!
//! This module is the only code in the workspace that names a sys crate. The process loads
//! `libcuda.so.1` once, reads `cuDriverGetVersion`, and picks the CUDA 13 table for 13.x (and
//! newer) drivers and the CUDA 12 table for 12.x; `CUDA_CORE_DRIVER_ABI=12|13` forces one. Code
//! above speaks the version-neutral [`Driver`] trait and the handle types below.

mod abi;
mod nvjitlink;
mod nvrtc;
mod probe;
mod v12;
mod v13;

#[cfg(test)]
mod tests;

use std::ffi::c_void;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::error::{DriverVersion, Result};

pub(crate) use self::nvjitlink::{jit_link, nvjitlink_info, JitInput};
pub(crate) use self::nvrtc::{compile, nvrtc, nvrtc_version, NvrtcOutput};

/// Which driver ABI (which header's function table) the process uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Abi {
    /// The CUDA 12.9 header's table, for 12.x drivers (and 13.x ones when forced).
    Cuda12,
    /// The CUDA 13 header's table, for 13.x and newer drivers.
    Cuda13,
}

impl Abi {
    /// The CUDA major version of the ABI: 12 or 13.
    pub fn major(self) -> u32 {
        match self {
            Abi::Cuda12 => 12,
            Abi::Cuda13 => 13,
        }
    }
}

impl fmt::Display for Abi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA {}", self.major())
    }
}

/// Why the ABI in use was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbiChoice {
    /// Picked from the driver's version.
    Probe,
    /// Forced by `CUDA_CORE_DRIVER_ABI`.
    Override,
}

impl fmt::Display for AbiChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiChoice::Probe => write!(f, "picked from the driver version"),
            AbiChoice::Override => write!(f, "forced by CUDA_CORE_DRIVER_ABI"),
        }
    }
}

/// The NVRTC library the process found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvrtcInfo {
    /// `(major, minor)`, as `nvrtcVersion` reports it.
    pub version: (i32, i32),
    /// The file it was loaded from, or the name the dynamic loader resolved.
    pub location: PathBuf,
}

/// What the process runs on: see [`driver_info`](crate::driver_info).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DriverInfo {
    /// The driver's version (`cuDriverGetVersion`).
    pub version: DriverVersion,
    /// The ABI in use.
    pub abi: Abi,
    /// Why that ABI.
    pub abi_choice: AbiChoice,
    /// The driver library's name as loaded.
    pub library: String,
    /// How many functions of the ABI's header the driver exports, and how many the header has.
    pub functions_loaded: (usize, usize),
    /// Whether `cuInit` succeeded, and the error if not (no device, for example).
    pub init: Result<()>,
    /// The NVRTC found, or why none was.
    pub nvrtc: Result<NvrtcInfo>,
    /// The nvJitLink found, `(major, minor)` and where, or why none was.
    pub nvjitlink: std::result::Result<((u32, u32), PathBuf), String>,
}

/// Version-neutral raw handles: the driver's pointers, owned by the safe types above.
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub(crate) struct $name(pub(crate) *mut c_void);

        // SAFETY: driver handles are plain identifiers that the driver allows any thread to use.
        unsafe impl Send for $name {}
        // SAFETY: as above; the driver synchronises its own state.
        unsafe impl Sync for $name {}

        #[allow(dead_code)]
        impl $name {
            /// The null handle (the legacy default stream, for a stream).
            pub(crate) const NULL: Self = Self(std::ptr::null_mut());
        }
    )*};
}

handles! {
    /// A `CUcontext`.
    ContextHandle;
    /// A `CUstream`.
    StreamHandle;
    /// A `CUevent`.
    EventHandle;
    /// A `CUmemoryPool`.
    PoolHandle;
    /// A `CUgreenCtx`.
    GreenContextHandle;
    /// A `CUlibrary`.
    LibraryHandle;
    /// A `CUkernel`.
    KernelHandle;
    /// A `CUfunction`.
    FunctionHandle;
}

/// A launch, in version-neutral terms (`CUlaunchConfig` and its attributes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchParams {
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
    pub(crate) stream: StreamHandle,
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
    pub(crate) cluster: Option<[u32; 3]>,
    /// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
    pub(crate) cooperative: bool,
}

/// One input of the driver's linker (`cuLinkAddData`), by `CUjitInputType` code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkInput<'a> {
    /// `CU_JIT_INPUT_CUBIN` 0, `_PTX` 1, `_FATBINARY` 2, `_OBJECT` 3, `_LIBRARY` 4.
    pub(crate) kind: u32,
    pub(crate) data: &'a [u8],
    pub(crate) name: &'a std::ffi::CStr,
}

/// A `CUdevice`: an ordinal in both ABIs.
pub(crate) type DeviceHandle = i32;

/// A `CUdeviceptr`.
pub(crate) type DevicePtr = u64;

/// A `CUdevResource`, held as bytes large enough for either header's layout (the 13 header
/// appends fields); each ABI reads it as its own struct.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct DevResource(pub(crate) [u8; 256]);

impl DevResource {
    pub(crate) const ZERO: DevResource = DevResource([0; 256]);
}

impl fmt::Debug for DevResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DevResource")
    }
}

/// What an SM resource reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmInfo {
    pub(crate) sm_count: u32,
    /// The 13 header's `minSmPartitionSize`, `None` through the 12 ABI.
    pub(crate) min_partition_size: Option<u32>,
    /// The 13 header's `smCoscheduledAlignment`, `None` through the 12 ABI.
    pub(crate) coscheduled_alignment: Option<u32>,
}

/// The driver's functions the safe layer uses, in version-neutral types. One implementation per
/// ABI (`v12.rs`, `v13.rs`); where the two headers differ, the difference is settled there.
///
/// Every method makes exactly the driver call it names and nothing else.
pub(crate) trait Driver: Send + Sync {
    // The calls of the hot paths first, so that their entries share the first lines of the
    // trait object's table: fewer cache lines to reload after a driver call has evicted them.
    /// `cuCtxGetCurrent` for hot paths: `None` where the call failed (then
    /// [`Driver::ctx_get_current`] gives the error). Returned in registers, where a `Result`
    /// (with its large error) goes through memory: this is what `set_current` and
    /// `with_current` call on every use.
    fn ctx_current_or_none(&self) -> Option<ContextHandle>;

    /// `cuEventCreate` in the current context.
    fn event_create(&self, flags: u32) -> Result<EventHandle>;
    /// `cuEventDestroy`.
    fn event_destroy(&self, event: EventHandle) -> Result<()>;
    /// `cuEventRecord`.
    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()>;
    /// `cuEventQuery`: `false` for `CUDA_ERROR_NOT_READY`.
    fn event_query(&self, event: EventHandle) -> Result<bool>;
    /// `cuStreamSynchronize`.
    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()>;
    /// `cuLaunchKernel` of a `CUkernel` (the driver accepts it as a `CUfunction`).
    ///
    /// # Safety
    ///
    /// `args` points to one pointer per kernel parameter, each to a value of that parameter's
    /// size, valid for the call.
    unsafe fn launch_kernel(
        &self,
        kernel: KernelHandle,
        params: &LaunchParams,
        args: *mut *mut c_void,
    ) -> Result<()>;
    /// `cuLaunchKernelEx` with the cluster and cooperative attributes of `params`.
    ///
    /// # Safety
    ///
    /// As for `launch_kernel`.
    unsafe fn launch_kernel_ex(
        &self,
        kernel: KernelHandle,
        params: &LaunchParams,
        args: *mut *mut c_void,
    ) -> Result<()>;
    /// `cuMemAllocFromPoolAsync`.
    fn mem_alloc_from_pool_async(
        &self,
        size: usize,
        pool: PoolHandle,
        stream: StreamHandle,
    ) -> Result<DevicePtr>;
    /// `cuMemFreeAsync`.
    fn mem_free_async(&self, ptr: DevicePtr, stream: StreamHandle) -> Result<()>;
    /// `cuMemcpyHtoDAsync`.
    fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemcpyDtoHAsync`.
    fn memcpy_dtoh_async(
        &self,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemcpyAsync` (unified addressing).
    fn memcpy_async(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()>;

    /// The ABI this table speaks.
    fn abi(&self) -> Abi;
    /// The running driver's version.
    fn version(&self) -> DriverVersion;
    /// `(loaded, declared)`: how many of the header's functions the driver exports.
    fn functions_loaded(&self) -> (usize, usize);

    /// `cuInit`.
    fn init(&self, flags: u32) -> Result<()>;
    /// `cuDeviceGetCount`.
    fn device_get_count(&self) -> Result<i32>;
    #[cfg_attr(not(test), allow(dead_code))] // exercised by the ABI tests
    /// `cuDeviceGet`.
    fn device_get(&self, ordinal: i32) -> Result<DeviceHandle>;
    /// `cuDeviceGetName`, into `buf`; returns the bytes before the NUL.
    fn device_get_name(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize>;
    /// `cuDeviceGetAttribute` with the attribute's numeric code (the same in both headers).
    fn device_get_attribute(&self, attribute: i32, device: DeviceHandle) -> Result<i32>;
    /// `cuDeviceGetUuid` (`_v2` in both ABIs).
    fn device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]>;
    /// `cuDeviceGetPCIBusId`, into `buf`; returns the bytes before the NUL.
    fn device_get_pci_bus_id(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize>;
    /// `cuDeviceTotalMem`.
    fn device_total_mem(&self, device: DeviceHandle) -> Result<usize>;
    /// `cuDeviceCanAccessPeer`.
    fn device_can_access_peer(&self, device: DeviceHandle, peer: DeviceHandle) -> Result<bool>;
    /// `cuDevicePrimaryCtxRetain`.
    fn device_primary_ctx_retain(&self, device: DeviceHandle) -> Result<ContextHandle>;
    /// `cuDevicePrimaryCtxRelease`.
    fn device_primary_ctx_release(&self, device: DeviceHandle) -> Result<()>;

    #[cfg_attr(not(test), allow(dead_code))] // exercised by the ABI tests
    /// `cuCtxCreate` (12: `cuCtxCreate_v2`; 13: `cuCtxCreate_v4` without parameters).
    fn ctx_create(&self, flags: u32, device: DeviceHandle) -> Result<ContextHandle>;
    #[cfg_attr(not(test), allow(dead_code))] // exercised by the ABI tests
    /// `cuCtxDestroy`.
    fn ctx_destroy(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxGetCurrent`.
    fn ctx_get_current(&self) -> Result<ContextHandle>;
    /// `cuCtxSetCurrent`.
    fn ctx_set_current(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxPushCurrent`.
    fn ctx_push_current(&self, ctx: ContextHandle) -> Result<()>;
    /// `cuCtxPopCurrent`.
    fn ctx_pop_current(&self) -> Result<ContextHandle>;
    /// `cuCtxGetDevice` of the current context; `None` when no context is current (the
    /// driver's `CUDA_ERROR_INVALID_CONTEXT`, answered without building an error).
    fn ctx_get_device(&self) -> Result<Option<DeviceHandle>>;
    /// `cuCtxSynchronize` of the current context.
    fn ctx_synchronize(&self) -> Result<()>;
    /// `cuCtxGetStreamPriorityRange` of the current context: `(least, greatest)`.
    fn ctx_get_stream_priority_range(&self) -> Result<(i32, i32)>;

    /// `cuStreamCreate` in the current context, or `cuStreamCreateWithPriority` when a
    /// priority is given (a plain stream is cheaper to make and to use: seen on the H200).
    fn stream_create(&self, flags: u32, priority: Option<i32>) -> Result<StreamHandle>;
    /// `cuStreamDestroy`.
    fn stream_destroy(&self, stream: StreamHandle) -> Result<()>;
    /// `cuStreamQuery`: `false` for `CUDA_ERROR_NOT_READY`.
    fn stream_query(&self, stream: StreamHandle) -> Result<bool>;
    /// `cuStreamWaitEvent`.
    fn stream_wait_event(&self, stream: StreamHandle, event: EventHandle) -> Result<()>;
    /// `cuStreamGetPriority`.
    fn stream_get_priority(&self, stream: StreamHandle) -> Result<i32>;
    /// `cuStreamGetFlags`.
    fn stream_get_flags(&self, stream: StreamHandle) -> Result<u32>;
    /// `cuStreamGetCtx`.
    fn stream_get_ctx(&self, stream: StreamHandle) -> Result<ContextHandle>;
    /// `cuLaunchHostFunc`: runs `f(data)` on a driver thread once the stream reaches it.
    fn launch_host_func(
        &self,
        stream: StreamHandle,
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
    ) -> Result<()>;
    /// `cuEventSynchronize`.
    fn event_synchronize(&self, event: EventHandle) -> Result<()>;
    /// `cuEventElapsedTime` in milliseconds (12: the 12.9 header's `cuEventElapsedTime`;
    /// 13: `cuEventElapsedTime_v2`).
    fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32>;

    /// `cuDeviceGetDefaultMemPool`.
    fn device_get_default_mem_pool(&self, device: DeviceHandle) -> Result<PoolHandle>;
    /// `cuMemPoolCreate` of pinned device memory on `device`; `max_size` 0 is the default.
    fn mem_pool_create(&self, device: DeviceHandle, max_size: usize) -> Result<PoolHandle>;
    /// `cuMemPoolDestroy`.
    fn mem_pool_destroy(&self, pool: PoolHandle) -> Result<()>;
    /// `cuMemPoolSetAccess` for one device: read-write access, or none.
    fn mem_pool_set_access(
        &self,
        pool: PoolHandle,
        device: DeviceHandle,
        read_write: bool,
    ) -> Result<()>;
    /// `cuMemPoolGetAccess` from one device: whether it has read-write access.
    fn mem_pool_get_access(&self, pool: PoolHandle, device: DeviceHandle) -> Result<bool>;
    /// `cuMemPoolSetAttribute` of a 64-bit attribute.
    fn mem_pool_set_u64(&self, pool: PoolHandle, attribute: i32, value: u64) -> Result<()>;
    /// `cuMemPoolGetAttribute` of a 64-bit attribute.
    fn mem_pool_get_u64(&self, pool: PoolHandle, attribute: i32) -> Result<u64>;
    /// `cuMemAlloc` in the current context.
    fn mem_alloc(&self, size: usize) -> Result<DevicePtr>;
    /// `cuMemFree`.
    fn mem_free(&self, ptr: DevicePtr) -> Result<()>;
    /// `cuMemHostAlloc` in the current context.
    fn mem_host_alloc(&self, size: usize, flags: u32) -> Result<*mut c_void>;
    /// `cuMemFreeHost`.
    fn mem_free_host(&self, ptr: *mut c_void) -> Result<()>;
    /// `cuMemAllocManaged` in the current context.
    fn mem_alloc_managed(&self, size: usize, flags: u32) -> Result<DevicePtr>;
    /// `cuMemGetInfo` of the current context's device: `(free, total)`.
    fn mem_get_info(&self) -> Result<(usize, usize)>;
    /// `cuMemsetD8Async`.
    fn memset_d8_async(
        &self,
        dst: DevicePtr,
        value: u8,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemsetD16Async`.
    fn memset_d16_async(
        &self,
        dst: DevicePtr,
        value: u16,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemsetD32Async`.
    fn memset_d32_async(
        &self,
        dst: DevicePtr,
        value: u32,
        count: usize,
        stream: StreamHandle,
    ) -> Result<()>;

    /// `cuLibraryLoadData` of a cubin, fatbin or NUL-terminated PTX image, with no options.
    fn library_load_data(&self, image: &[u8]) -> Result<LibraryHandle>;
    /// `cuLibraryUnload`.
    fn library_unload(&self, library: LibraryHandle) -> Result<()>;
    /// `cuLibraryGetKernel`.
    fn library_get_kernel(
        &self,
        library: LibraryHandle,
        name: &std::ffi::CStr,
    ) -> Result<KernelHandle>;
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
    /// `cuKernelGetFunction` for the current context.
    fn kernel_get_function(&self, kernel: KernelHandle) -> Result<FunctionHandle>;
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
    /// The driver's linker: `cuLinkCreate`, `cuLinkAddData` per input, `cuLinkComplete`, a
    /// copy of the cubin, `cuLinkDestroy`. Returns the cubin and the info log; a failure is
    /// `Error::Link` with the error log.
    fn link(&self, inputs: &[LinkInput<'_>]) -> Result<(Vec<u8>, String)>;

    /// `cuDeviceGetDevResource` of the SMs.
    fn device_get_sm_resource(&self, device: DeviceHandle) -> Result<DevResource>;
    /// `cuCtxGetDevResource` of the SMs.
    fn ctx_get_sm_resource(&self, ctx: ContextHandle) -> Result<DevResource>;
    /// Reads an SM resource's fields.
    fn sm_resource_info(&self, resource: &DevResource) -> SmInfo;
    /// `cuDevSmResourceSplitByCount`: fills `groups` (as many as it holds, or fewer) with
    /// `min_count` SMs each; returns how many groups and the remainder.
    fn sm_resource_split_by_count(
        &self,
        input: &DevResource,
        groups: &mut [DevResource],
        flags: u32,
        min_count: u32,
    ) -> Result<(usize, DevResource)>;
    /// `cuDevResourceGenerateDesc` then `cuGreenCtxCreate` (with its default stream) then
    /// `cuCtxFromGreenCtx`.
    fn green_ctx_create(
        &self,
        resources: &[DevResource],
        device: DeviceHandle,
    ) -> Result<(GreenContextHandle, ContextHandle)>;
    /// `cuGreenCtxDestroy`.
    fn green_ctx_destroy(&self, green: GreenContextHandle) -> Result<()>;
    /// `cuGreenCtxStreamCreate`.
    fn green_ctx_stream_create(
        &self,
        green: GreenContextHandle,
        flags: u32,
        priority: i32,
    ) -> Result<StreamHandle>;
}

/// Reads one of the size-then-bytes outputs that NVRTC and nvJitLink share the shape of.
///
/// # Safety
///
/// `size` writes the byte count of the output of `handle`, and `get` writes exactly that many
/// bytes to the pointer it is given.
pub(crate) unsafe fn read_sized<H: Copy, R: Copy + PartialEq, P>(
    handle: H,
    size: unsafe extern "C" fn(H, *mut usize) -> R,
    get: unsafe extern "C" fn(H, *mut P) -> R,
    success: R,
) -> std::result::Result<Vec<u8>, R> {
    let mut len = 0usize;
    // SAFETY: the caller vouches for the function; `len` is writable.
    let status = unsafe { size(handle, &mut len) };
    if status != success {
        return Err(status);
    }
    let mut bytes = vec![0u8; len];
    if len > 0 {
        // SAFETY: the buffer holds the `len` bytes the library said it writes.
        let status = unsafe { get(handle, bytes.as_mut_ptr().cast()) };
        if status != success {
            return Err(status);
        }
    }
    Ok(bytes)
}

/// A loaded driver: its table behind the trait, and whether `cuInit` succeeded.
pub(crate) struct Loaded {
    pub(crate) driver: Box<dyn Driver>,
    pub(crate) choice: AbiChoice,
    pub(crate) library: String,
    pub(crate) init: Result<()>,
}

static LOADED: OnceLock<Result<Loaded>> = OnceLock::new();

/// The environment variable that forces a driver ABI.
pub(crate) const ABI_VARIABLE: &str = "CUDA_CORE_DRIVER_ABI";

/// The process's driver, loaded on first use, whatever `cuInit` said.
pub(crate) fn loaded() -> Result<&'static Loaded> {
    LOADED
        .get_or_init(|| {
            let forced = std::env::var(ABI_VARIABLE).ok();
            let loaded = probe::load(probe::LIBRARY_NAMES, forced.as_deref())?;
            if loaded.init.is_err() {
                log::warn!(
                    "CUDA driver {} loaded, but cuInit failed",
                    loaded.driver.version()
                );
            }
            Ok(loaded)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The process's initialised driver: the entry point of every operation.
#[inline]
pub(crate) fn driver() -> Result<&'static dyn Driver> {
    let loaded = loaded()?;
    match &loaded.init {
        Ok(()) => Ok(&*loaded.driver),
        Err(e) => Err(e.clone()),
    }
}

/// Reports the driver in use: version, ABI and why, the library, and the NVRTC found.
pub(crate) fn info() -> Result<DriverInfo> {
    let loaded = loaded()?;
    let nvrtc = nvrtc().map(|n| NvrtcInfo {
        version: n.version(),
        location: n.location().to_path_buf(),
    });
    Ok(DriverInfo {
        version: loaded.driver.version(),
        abi: loaded.driver.abi(),
        abi_choice: loaded.choice.clone(),
        library: loaded.library.clone(),
        functions_loaded: loaded.driver.functions_loaded(),
        init: loaded.init.clone(),
        nvrtc,
        nvjitlink: nvjitlink_info(),
    })
}
