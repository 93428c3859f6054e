//! The raw driver: `libcuda.so.1` loaded with libloading, a sys crate's `DriverTable` filled
//! from it, and its fields called directly. This is what a C programmer writes, and the limit
//! the benches measure cuda-core against.
//!
//! [`RawDriver`] names each call after its C function, with the header's argument list; handles
//! are plain pointers (`CUcontext`, `CUstream`, ... are pointers in both headers). Its two
//! implementations, [`Driver12`] and [`Driver13`] (`raw/tables.rs`), call the `cuda-sys12` and
//! `cuda-sys13` tables. Each method inlines to one indirect call through the table field:
//! [`load`] checks once that every field used here is filled, so no call checks it again.

use std::ffi::{c_char, c_void};

use libloading::Library;

mod tables;

pub use self::tables::{Driver12, Driver13};

/// A driver handle (`CUcontext`, `CUstream`, `CUevent`, `CUlibrary`, `CUkernel`,
/// `CUmemoryPool`) as the plain pointer it is in both headers.
pub type Handle = *mut c_void;

/// `CUDA_SUCCESS`.
pub const SUCCESS: u32 = 0;
/// `CUDA_ERROR_NOT_READY`.
pub const NOT_READY: u32 = 600;
/// `CUDA_ERROR_NOT_FOUND`: what a call answers here for a function the driver lacks.
pub const NOT_FOUND: u32 = 500;
/// `CU_STREAM_NON_BLOCKING`.
pub const STREAM_NON_BLOCKING: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`.
pub const EVENT_DISABLE_TIMING: u32 = 2;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
pub const ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: u32 = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
pub const ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: u32 = 76;
/// `CUDA_ERROR_NOT_SUPPORTED`: what [`RawDriver::cuMemcpyBatchAsync`] answers on a driver
/// without the function.
pub const NOT_SUPPORTED: u32 = 801;

/// The driver calls the benches make, one method per C function with the header's arguments;
/// each returns the `CUresult` code.
///
/// # Safety of the methods
///
/// Each is the C function: the caller passes what the driver documents as valid (live handles
/// of the right kind, writable out-pointers, argument arrays matching the kernel).
#[allow(non_snake_case)]
pub trait RawDriver {
    /// The header the table comes from: 12 or 13.
    fn abi(&self) -> u32;

    /// The driver version, as `cuDriverGetVersion` gives it (13000 for 13.0).
    fn version(&self) -> i32;

    /// `cuDeviceGet`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuDeviceGet(&self, device: *mut i32, ordinal: i32) -> u32;

    /// `cuDeviceGetAttribute`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuDeviceGetAttribute(&self, value: *mut i32, attribute: u32, device: i32) -> u32;

    /// `cuDevicePrimaryCtxRetain`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuDevicePrimaryCtxRetain(&self, context: *mut Handle, device: i32) -> u32;

    /// `cuCtxSetCurrent`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuCtxSetCurrent(&self, context: Handle) -> u32;

    /// `cuCtxGetCurrent`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuCtxGetCurrent(&self, context: *mut Handle) -> u32;

    /// `cuCtxGetDevice`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuCtxGetDevice(&self, device: *mut i32) -> u32;

    /// `cuStreamCreate`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuStreamCreate(&self, stream: *mut Handle, flags: u32) -> u32;

    /// `cuStreamDestroy`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuStreamDestroy(&self, stream: Handle) -> u32;

    /// `cuStreamSynchronize`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuStreamSynchronize(&self, stream: Handle) -> u32;

    /// `cuEventCreate`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventCreate(&self, event: *mut Handle, flags: u32) -> u32;

    /// `cuEventDestroy`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventDestroy(&self, event: Handle) -> u32;

    /// `cuEventRecord`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventRecord(&self, event: Handle, stream: Handle) -> u32;

    /// `cuEventQuery`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventQuery(&self, event: Handle) -> u32;

    /// `cuEventSynchronize`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventSynchronize(&self, event: Handle) -> u32;

    /// `cuEventElapsedTime` (`_v2` in the 13 header), in milliseconds.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuEventElapsedTime(&self, ms: *mut f32, start: Handle, end: Handle) -> u32;

    /// `cuStreamWaitEvent` without flags.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuStreamWaitEvent(&self, stream: Handle, event: Handle) -> u32;

    /// `cuLibraryLoadData` without JIT or library options.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuLibraryLoadData(&self, library: *mut Handle, image: *const c_void) -> u32;

    /// `cuLibraryGetKernel`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuLibraryGetKernel(
        &self,
        kernel: *mut Handle,
        library: Handle,
        name: *const c_char,
    ) -> u32;

    /// `cuLibraryUnload`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuLibraryUnload(&self, library: Handle) -> u32;

    /// `cuLaunchKernel` (a `CUkernel` passes as the `CUfunction`, as the driver allows).
    ///
    /// # Safety
    ///
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn cuLaunchKernel(
        &self,
        function: Handle,
        grid_x: u32,
        grid_y: u32,
        grid_z: u32,
        block_x: u32,
        block_y: u32,
        block_z: u32,
        shared_memory_bytes: u32,
        stream: Handle,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> u32;

    /// `cuLaunchKernelEx` with one attribute, `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`: the
    /// `CUlaunchConfig` and its attribute filled on the stack, as C code does at a launch.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuLaunchKernelEx_cluster(
        &self,
        function: Handle,
        grid: [u32; 3],
        block: [u32; 3],
        cluster: [u32; 3],
        stream: Handle,
        params: *mut *mut c_void,
    ) -> u32;

    /// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` and,
    /// where given, `CU_LAUNCH_ATTRIBUTE_PRIORITY`: the `CUlaunchConfig` and its attributes
    /// filled on the stack, as C code does at a launch.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuLaunchKernelEx_pdl(
        &self,
        function: Handle,
        grid: [u32; 3],
        block: [u32; 3],
        priority: Option<i32>,
        stream: Handle,
        params: *mut *mut c_void,
    ) -> u32;

    /// `cuGraphLaunch`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphLaunch(&self, exec: Handle, stream: Handle) -> u32;

    /// `cuGraphInstantiateWithFlags` with no flags.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphInstantiate(&self, exec: *mut Handle, graph: Handle) -> u32;

    /// `cuGraphExecDestroy`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphExecDestroy(&self, exec: Handle) -> u32;

    /// `cuGraphCreate` with no flags.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphCreate(&self, graph: *mut Handle) -> u32;

    /// `cuGraphDestroy`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphDestroy(&self, graph: Handle) -> u32;

    /// `cuGraphAddEmptyNode`, after `deps`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuGraphAddEmptyNode(&self, node: *mut Handle, graph: Handle, deps: &[Handle]) -> u32;

    /// `cuGraphAddKernelNode` (`_v2`) of a `CUkernel` in `context`, after `deps`.
    ///
    /// # Safety
    ///
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn cuGraphAddKernelNode(
        &self,
        node: *mut Handle,
        graph: Handle,
        deps: &[Handle],
        kernel: Handle,
        context: Handle,
        grid: [u32; 3],
        block: [u32; 3],
        params: *mut *mut c_void,
    ) -> u32;

    /// `cuGraphExecKernelNodeSetParams` (`_v2`) of a `CUkernel` in `context`.
    ///
    /// # Safety
    ///
    /// See the trait.
    #[allow(clippy::too_many_arguments)]
    unsafe fn cuGraphExecKernelNodeSetParams(
        &self,
        exec: Handle,
        node: Handle,
        kernel: Handle,
        context: Handle,
        grid: [u32; 3],
        block: [u32; 3],
        params: *mut *mut c_void,
    ) -> u32;

    /// `cuDeviceGetDefaultMemPool`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuDeviceGetDefaultMemPool(&self, pool: *mut Handle, device: i32) -> u32;

    /// `cuMemAllocFromPoolAsync`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemAllocFromPoolAsync(
        &self,
        ptr: *mut u64,
        size: usize,
        pool: Handle,
        stream: Handle,
    ) -> u32;

    /// `cuMemFreeAsync`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemFreeAsync(&self, ptr: u64, stream: Handle) -> u32;

    /// `cuMemcpyHtoDAsync`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemcpyHtoDAsync(
        &self,
        dst: u64,
        src: *const c_void,
        bytes: usize,
        stream: Handle,
    ) -> u32;

    /// `cuMemcpyDtoHAsync`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemcpyDtoHAsync(
        &self,
        dst: *mut c_void,
        src: u64,
        bytes: usize,
        stream: Handle,
    ) -> u32;

    /// `cuMemcpyAsync` (unified addresses).
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemcpyAsync(&self, dst: u64, src: u64, bytes: usize, stream: Handle) -> u32;

    /// Whether the driver has `cuMemcpyBatchAsync` (12.8 and newer; the 13 header's `_v2`).
    fn has_memcpy_batch(&self) -> bool;

    /// `cuMemcpyBatchAsync` of `count` copies under one attribute (source read in stream
    /// order, no location hints, no flags), as a C caller writes it: the 12 header's form with
    /// its failing index, the 13 header's `_v2`. [`NOT_SUPPORTED`] where the driver lacks it.
    ///
    /// # Safety
    ///
    /// See the trait; the three arrays hold `count` entries.
    unsafe fn cuMemcpyBatchAsync(
        &self,
        dsts: *mut u64,
        srcs: *mut u64,
        sizes: *mut usize,
        count: usize,
        stream: Handle,
    ) -> u32;
    /// `cuMemPoolImportPointer`: `data` points to the 64 bytes of a `CUmemPoolPtrExportData`.
    ///
    /// # Safety
    ///
    /// See the trait.
    unsafe fn cuMemPoolImportPointer(&self, ptr: *mut u64, pool: Handle, data: *mut u8) -> u32;
    /// `cuTensorMapEncodeTiled`, with the enums as their codes; [`NOT_FOUND`] where the
    /// driver lacks it (it is not among the fields [`load`] requires).
    ///
    /// # Safety
    ///
    /// See the trait; `map` is 64-byte aligned, the arrays hold `rank` entries (`strides`
    /// one fewer).
    #[allow(clippy::too_many_arguments)]
    unsafe fn cuTensorMapEncodeTiled(
        &self,
        map: *mut c_void,
        data_type: u32,
        rank: u32,
        address: *mut c_void,
        dims: *const u64,
        strides: *const u64,
        box_dims: *const u32,
        element_strides: *const u32,
        interleave: u32,
        swizzle: u32,
        l2_promotion: u32,
        oob_fill: u32,
    ) -> u32;
}

/// Panics, naming the call and the code, when a raw call did not return `CUDA_SUCCESS`. The
/// check is one compare and a branch, as in C.
#[inline(always)]
#[track_caller]
pub fn check(code: u32, call: &str) {
    if code != SUCCESS {
        failed(code, call);
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn failed(code: u32, call: &str) -> ! {
    panic!("{call} failed with CUDA error {code}")
}

/// The raw driver of this process, through the table its version (or
/// `CUDA_CORE_DRIVER_ABI`) picks, as cuda-core's probe picks it.
// One per process, never moved after loading: the tables' size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Raw {
    /// Through the CUDA 12.9 header's table.
    V12(Driver12),
    /// Through the CUDA 13 header's table.
    V13(Driver13),
}

/// Runs `$body` with `$driver` bound to the raw driver of either ABI, so that generic code is
/// instantiated for each table (each call stays a direct call through the table field).
#[macro_export]
macro_rules! with_raw {
    ($raw:expr, |$driver:ident| $body:expr) => {
        match $raw {
            $crate::raw::Raw::V12($driver) => $body,
            $crate::raw::Raw::V13($driver) => $body,
        }
    };
}

/// Loads `libcuda.so.1`, reads its version, picks the table, checks it, and starts the driver
/// (`cuInit`) with at least one device. The error says why not, in a few words.
pub fn load() -> Result<Raw, String> {
    // SAFETY: loading the CUDA driver runs only its own initialisers.
    let library =
        unsafe { Library::new("libcuda.so.1") }.map_err(|e| format!("loading the driver: {e}"))?;
    // SAFETY: the library is kept loaded while the symbol is used, just below.
    let get_version = unsafe {
        library
            .get::<unsafe extern "C" fn(*mut i32) -> cuda_sys13::CUresult>(b"cuDriverGetVersion\0")
    }
    .map_err(|e| format!("libcuda.so.1 exports no cuDriverGetVersion: {e}"))?;
    let mut version = 0;
    // SAFETY: cuDriverGetVersion has this signature in every header; `version` is writable.
    let status = unsafe { get_version(&mut version) };
    if status != cuda_sys13::CUresult::CUDA_SUCCESS {
        return Err(format!(
            "cuDriverGetVersion failed with CUDA error {}",
            status.0
        ));
    }
    let forced = std::env::var("CUDA_CORE_DRIVER_ABI").ok();
    let raw = match choose_abi(version, forced.as_deref())? {
        12 => {
            let driver = Driver12::new(library, version)?;
            driver.start()?;
            Raw::V12(driver)
        }
        _ => {
            let driver = Driver13::new(library, version)?;
            driver.start()?;
            Raw::V13(driver)
        }
    };
    Ok(raw)
}

/// The table cuda-core's probe picks for a driver `version` (as `cuDriverGetVersion` gives it)
/// and the value of `CUDA_CORE_DRIVER_ABI`: 12 or 13.
///
/// The rule of cuda-core's `driver/load.rs`, written again rather than read from
/// `cuda_core::info::driver_info()`: that call also loads cuda-core's own table and NVRTC,
/// nvJitLink and libNVVM, which the raw variant of the `first_launch` example (timed whole by
/// the `startup` suite) would then pay for.
pub fn choose_abi(version: i32, forced: Option<&str>) -> Result<u32, String> {
    let (major, minor) = (version / 1000, version % 1000 / 10);
    if major < 12 {
        return Err(format!(
            "driver {major}.{minor} is older than CUDA 12, which cuda-core needs"
        ));
    }
    match forced.map(str::trim) {
        None | Some("") => Ok(if major >= 13 { 13 } else { 12 }),
        Some("12") => Ok(12),
        Some("13") if major >= 13 => Ok(13),
        Some("13") => Err(format!(
            "CUDA_CORE_DRIVER_ABI=13 needs a 13.x driver; this one is {major}.{minor}"
        )),
        Some(other) => Err(format!("CUDA_CORE_DRIVER_ABI={other:?}: expected 12 or 13")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_picks_the_table() {
        assert_eq!(choose_abi(13000, None), Ok(13));
        assert_eq!(choose_abi(13020, Some("")), Ok(13));
        assert_eq!(choose_abi(12090, None), Ok(12));
        assert_eq!(choose_abi(12040, None), Ok(12));
    }

    #[test]
    fn the_environment_forces_a_table_the_driver_can_take() {
        assert_eq!(choose_abi(13000, Some("12")), Ok(12));
        assert_eq!(choose_abi(13000, Some(" 13 ")), Ok(13));
        assert!(choose_abi(12090, Some("13"))
            .unwrap_err()
            .contains("needs a 13.x driver"));
        assert!(choose_abi(13000, Some("14"))
            .unwrap_err()
            .contains("expected 12 or 13"));
    }

    #[test]
    fn drivers_before_12_are_refused() {
        assert!(choose_abi(11080, None).unwrap_err().contains("11.8"));
    }

    #[test]
    fn loading_without_a_driver_says_why() {
        // On a machine without the driver this is the message the benches print; with one,
        // the driver loads (or fails to start) and the test has nothing to check.
        if let Err(why) = load() {
            assert!(!why.is_empty());
        }
    }
}
