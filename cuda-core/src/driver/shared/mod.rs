//! The code both ABI implementations share, written once: `driver_impl!` makes the driver
//! struct, its error helpers and the [`Driver`](super::api::Driver) impl in each ABI file, and
//! each area of the trait is an ordinary module here (one file each) that `v12.rs` and
//! `v13.rs` both declare (`shared_modules!`), so that it is compiled once per major against
//! that file's `sys` crate and `Drv` type. Everything whose C signature or layout is the same
//! in both headers is here; `v12.rs` and `v13.rs` add only what differs, as a few items with
//! fixed names that these modules call:
//!
//! - `fn device_location(device) -> CUmemLocation` (the 13 header puts `id` in a union);
//! - `fn sm_info(&CUdevSmResource) -> SmInfo` (the 13 header has more fields);
//! - `fn abi_ctx_create(&self, flags, device)` (`cuCtxCreate_v2` against `_v4`);
//! - `fn abi_device_get_uuid(&self, device)` (the export behind `cuDeviceGetUuid`);
//! - `fn abi_kernel_get_param_count(&self, kernel)` (only the 13 header has it);
//! - `fn abi_checkpoint_restore(&self, pid, pairs)` (only the 13 header can remap GPUs);
//! - `fn abi_graph_edges_change`, `abi_graph_edges`, `abi_graph_node_neighbours`,
//!   `abi_graph_add_node`, `abi_stream_capture_info` (the 13 header's graph edge calls,
//!   `cuGraphAddNode` and `cuStreamGetCaptureInfo` take edge data, the 12 header's plain names
//!   do not);
//! - `fn abi_memcpy_batch_async`, `abi_mem_prefetch_async`, `abi_mem_advise`,
//!   `abi_mem_batch_async` (the 13 header's `cuMemcpyBatchAsync_v2` drops the failing index;
//!   prefetch and advice take a location under the 13 header's plain names and the 12 header's
//!   `_v2`; the batched prefetch and discard calls are in the 13 header only).
//! - `fn pool_location(kind, id) -> CUmemLocation` and `fn managed_allocation_type()` (pools:
//!   the 13 header's location union, and its managed allocation type).
//! - `fn abi_workqueue_config`, `abi_ctx_workqueue`, `abi_workqueue_config_resource` (work-queue
//!   resources are in the 13 header only, and need a 13.1 driver).
//! - `fn abi_coredump_flags_named(&self) -> u32` (the core-dump generation flags each header
//!   names: the 13 header has five more).

/// Takes a function out of the table, or returns `NotSupported` naming it.
macro_rules! function {
    ($self:ident . $name:ident) => {
        match $self.table.$name {
            Some(f) => f,
            None => return Err($self.missing(stringify!($name))),
        }
    };
}
pub(super) use function;

/// Calls a table function and turns its `CUresult` into a `Result`.
macro_rules! call {
    ($self:ident . $name:ident ( $($arg:expr),* $(,)? )) => {{
        let f = $crate::driver::shared::function!($self.$name);
        // SAFETY: the pointer was loaded by the exact export its header declares, with that
        // signature; each call site passes arguments valid for the call.
        let status = unsafe { f($($arg),*) };
        $self.check(status, stringify!($name))
    }};
}
pub(super) use call;

/// Expands to an ABI's driver struct, its error helpers, and every area's trait impl.
macro_rules! driver_impl {
    ($name:ident, $sys:ident, $abi:expr) => {
        use std::ffi::{c_char, CStr};

        #[allow(unused_imports)]
        use $crate::driver::handles::{
            ContextHandle, CopyNodeInfo, CopySpec, DevResource, DeviceHandle, DevicePtr,
            EventHandle, FunctionHandle, GraphExecHandle, GraphHandle, GraphNodeHandle,
            GreenContextHandle, JitLogs, KernelHandle, KernelNodeSpec, LaunchParams, LibraryHandle,
            LinkInput, LinkOptions, MemsetSpec, ModuleHandle, PoolHandle, SmInfo, StreamHandle,
            UpdateResult, UserObjectHandle, WorkqueueInfo,
        };
        use $crate::driver::shared::call;
        use $crate::error::{DriverCode, Error, Result};
        use $crate::info::types::{Abi, DriverVersion};
        use $sys::{CUresult, DriverTable};

        /// The driver through this ABI's function table.
        pub(crate) struct $name {
            table: DriverTable,
            version: DriverVersion,
            loaded: usize,
            /// `cuProfilerStart` and `cuProfilerStop`, where the driver exports them.
            profiler: [Option<unsafe extern "C" fn() -> CUresult>; 2],
            /// `cuGraphicsGLRegisterBuffer` and `cuGraphicsGLRegisterImage`, where the driver
            /// exports them.
            gl: $crate::driver::shared::GlCalls<$sys::CUgraphicsResource, CUresult>,
        }

        impl $name {
            /// Fills the table from the driver library, which stays loaded for the rest of the
            /// process: the table's pointers and the driver's error strings point into it.
            pub(crate) fn new(library: libloading::Library, version: DriverVersion) -> Self {
                let library: &'static libloading::Library = Box::leak(Box::new(library));
                // SAFETY: the library is the CUDA driver (it answered cuDriverGetVersion) and
                // is never unloaded.
                let table = unsafe { DriverTable::load(library) };
                let loaded = table
                    .symbols()
                    .iter()
                    .filter(|s| s.address.is_some())
                    .count();
                // The profiler calls are in cudaProfiler.h, not cuda.h: not in the table.
                // SAFETY: both are `CUresult f(void)` in cudaProfiler.h, of every driver.
                let profiler = unsafe {
                    [&b"cuProfilerStart\0"[..], &b"cuProfilerStop\0"[..]].map(|name| {
                        library
                            .get::<unsafe extern "C" fn() -> CUresult>(name)
                            .ok()
                            .map(|f| *f)
                    })
                };
                // The OpenGL registrations are in cudaGL.h, not cuda.h: not in the table.
                // SAFETY: the library is the driver, never unloaded; the two signatures are
                // cudaGL.h's (GLuint and GLenum are both `unsigned int`).
                let gl = unsafe { $crate::driver::shared::GlCalls::load(library) };
                let driver = Self {
                    table,
                    version,
                    loaded,
                    profiler,
                    gl,
                };
                driver.register_log_callback();
                driver
            }

            /// Registers the process's one log callback (`cuLogsRegisterCallback`, 12.9 and
            /// newer), which keeps each thread's lines for its next driver error. Never
            /// unregistered: the driver stays loaded for the process.
            fn register_log_callback(&self) {
                /// What the driver calls with each line it logs.
                unsafe extern "C" fn on_log(
                    _data: *mut std::ffi::c_void,
                    _level: $sys::CUlogLevel,
                    message: *mut c_char,
                    length: usize,
                ) {
                    // SAFETY: the driver passes `length` readable bytes at `message`.
                    unsafe { $crate::driver::logs::callback(message, length) }
                }
                if let Some(register) = self.table.cuLogsRegisterCallback {
                    let mut handle: $sys::CUlogsCallbackHandle = std::ptr::null_mut();
                    // A failure leaves errors without the driver's lines, nothing else.
                    let status = {
                        let out = &mut handle;
                        // SAFETY: `on_log` has the callback's signature and lives as long as
                        // the process; the out-pointer is writable.
                        unsafe { register(Some(on_log), std::ptr::null_mut(), out) }
                    };
                    if status != CUresult::CUDA_SUCCESS {
                        log::debug!(
                            "cuLogsRegisterCallback failed ({}): driver errors carry no log",
                            status.0
                        );
                    }
                }
            }

            #[inline]
            fn check(&self, status: CUresult, call: &'static str) -> Result<()> {
                if status == CUresult::CUDA_SUCCESS {
                    Ok(())
                } else {
                    Err(self.error(status, call))
                }
            }

            #[cold]
            #[inline(never)]
            fn error(&self, status: CUresult, call: &'static str) -> Error {
                let mut name: *const c_char = std::ptr::null();
                let mut description: *const c_char = std::ptr::null();
                if let Some(get_name) = self.table.cuGetErrorName {
                    // SAFETY: the out-pointer is writable; an unknown code leaves it null.
                    unsafe { get_name(status, &mut name) };
                }
                if let Some(get_string) = self.table.cuGetErrorString {
                    // SAFETY: as above.
                    unsafe { get_string(status, &mut description) };
                }
                Error::Driver {
                    call,
                    code: DriverCode(status.0 as i32),
                    // SAFETY: the driver's error strings are static data of the library, which
                    // this process never unloads.
                    name: unsafe { static_str(name) }.unwrap_or("CUDA_ERROR_UNRECOGNIZED"),
                    // SAFETY: as above.
                    description: unsafe { static_str(description) }
                        .unwrap_or("the driver has no description for this code"),
                    log: $crate::driver::logs::take(),
                }
            }

            #[cold]
            #[inline(never)]
            fn missing(&self, function: &'static str) -> Error {
                Error::NotSupported {
                    function,
                    driver: self.version,
                    abi: $abi.major(),
                }
            }

            /// The raw table, for tests that compare it with the library's exports.
            #[cfg(test)]
            pub(crate) fn table(&self) -> &DriverTable {
                &self.table
            }
        }

        /// A NUL-terminated string that lives as long as the process.
        ///
        /// # Safety
        ///
        /// `p` is null or points to a NUL-terminated string that is never freed.
        unsafe fn static_str(p: *const c_char) -> Option<&'static str> {
            if p.is_null() {
                return None;
            }
            // SAFETY: the caller vouches for the pointer and its lifetime.
            unsafe { CStr::from_ptr(p) }.to_str().ok()
        }

        /// Answers `Ok(false)` for `CUDA_ERROR_NOT_READY`, the usual meaning otherwise.
        #[inline]
        fn ready(status: CUresult) -> Option<bool> {
            match status {
                CUresult::CUDA_SUCCESS => Some(true),
                CUresult::CUDA_ERROR_NOT_READY => Some(false),
                _ => None,
            }
        }

        impl $crate::driver::api::Driver for $name {
            fn abi(&self) -> Abi {
                $abi
            }

            fn version(&self) -> DriverVersion {
                self.version
            }

            fn functions_loaded(&self) -> (usize, usize) {
                (self.loaded, DriverTable::LEN)
            }
        }
    };
}
pub(super) use driver_impl;

/// The two registrations of `cudaGL.h`, loaded by name beside the table: `R` is the ABI's
/// `CUgraphicsResource`, `S` its `CUresult`.
pub(crate) struct GlCalls<R, S> {
    /// `cuGraphicsGLRegisterBuffer(resource, buffer, flags)`.
    pub(crate) register_buffer: Option<unsafe extern "C" fn(*mut R, u32, u32) -> S>,
    /// `cuGraphicsGLRegisterImage(resource, image, target, flags)`.
    pub(crate) register_image: Option<unsafe extern "C" fn(*mut R, u32, u32, u32) -> S>,
}

impl<R, S> GlCalls<R, S> {
    /// Looks both up in the driver library.
    ///
    /// # Safety
    ///
    /// `library` is the CUDA driver, loaded for the rest of the process, and `R` and `S` are
    /// the `CUgraphicsResource` and `CUresult` of the header its table was made from.
    pub(crate) unsafe fn load(library: &'static libloading::Library) -> Self {
        // SAFETY: the caller's promise: each name is exported with cudaGL.h's signature.
        unsafe {
            GlCalls {
                register_buffer: library
                    .get::<unsafe extern "C" fn(*mut R, u32, u32) -> S>(
                        b"cuGraphicsGLRegisterBuffer\0",
                    )
                    .ok()
                    .map(|f| *f),
                register_image: library
                    .get::<unsafe extern "C" fn(*mut R, u32, u32, u32) -> S>(
                        b"cuGraphicsGLRegisterImage\0",
                    )
                    .ok()
                    .map(|f| *f),
            }
        }
    }
}

/// Declares this folder's modules in an ABI file (`v12.rs`, `v13.rs`; the paths are from its
/// folder), each compiled there against that file's `sys` crate and `Drv` type, and brings
/// their helpers (launch attributes, memory locations, ...) into scope for each other and for
/// the file.
macro_rules! shared_modules {
    () => {
        $crate::driver::shared::shared_modules!(
            checkpoint = "shared/checkpoint.rs",
            context = "shared/context.rs",
            copy = "shared/copy.rs",
            coredump = "shared/coredump.rs",
            device = "shared/device.rs",
            event = "shared/event.rs",
            graph = "shared/graph.rs",
            green = "shared/green.rs",
            hot = "shared/hot.rs",
            interop = "shared/interop.rs",
            managed = "shared/managed.rs",
            memory = "shared/memory.rs",
            module = "shared/module.rs",
            pool = "shared/pool.rs",
            profiler = "shared/profiler.rs",
            stream = "shared/stream.rs",
            tensor_map = "shared/tensor_map.rs",
            texture = "shared/texture.rs",
            vmm = "shared/vmm.rs",
        );
        use self::{copy::*, hot::*, managed::*};
    };
    ($($module:ident = $path:literal,)*) => {
        $(
            #[path = $path]
            #[allow(clippy::duplicate_mod)] // compiled once per ABI, on purpose
            mod $module;
        )*
    };
}
pub(super) use shared_modules;
