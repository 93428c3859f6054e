//! What the two ABI implementations share, written once: `driver_impl!` expands to the struct,
//! its error helpers and every trait method whose C signature is the same in both headers;
//! `v12.rs` and `v13.rs` add the methods whose signatures differ.

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
        let f = $crate::driver::abi::function!($self.$name);
        // SAFETY: the pointer was loaded by the exact export its header declares, with that
        // signature; each call site passes arguments valid for the call.
        let status = unsafe { f($($arg),*) };
        $self.check(status, stringify!($name))
    }};
}
pub(super) use call;

/// Expands to an ABI's driver struct and its `Driver` impl; `$specific` holds the methods
/// whose C signatures differ between the headers.
macro_rules! driver_impl {
    ($name:ident, $sys:ident, $abi:expr, { $($specific:tt)* }) => {
        use std::ffi::{c_char, CStr};

        use $sys::{CUresult, DriverTable};
        use $crate::driver::abi::call;
        use $crate::driver::{
            Abi, ContextHandle, DeviceHandle, Driver, EventHandle, StreamHandle,
        };
        use $crate::error::{DriverVersion, Error, Result};

        /// The driver through this ABI's function table.
        pub(crate) struct $name {
            table: DriverTable,
            version: DriverVersion,
            loaded: usize,
        }

        impl $name {
            /// Fills the table from the driver library, which stays loaded for the rest of the
            /// process: the table's pointers and the driver's error strings point into it.
            pub(crate) fn new(library: libloading::Library, version: DriverVersion) -> Self {
                let library: &'static libloading::Library = Box::leak(Box::new(library));
                // SAFETY: the library is the CUDA driver (it answered cuDriverGetVersion) and
                // is never unloaded.
                let table = unsafe { DriverTable::load(library) };
                let loaded = table.symbols().iter().filter(|s| s.address.is_some()).count();
                Self { table, version, loaded }
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
                    code: status.0 as i32,
                    // SAFETY: the driver's error strings are static data of the library, which
                    // this process never unloads.
                    name: unsafe { static_str(name) }.unwrap_or("CUDA_ERROR_UNRECOGNIZED"),
                    // SAFETY: as above.
                    description: unsafe { static_str(description) }
                        .unwrap_or("the driver has no description for this code"),
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

        impl Driver for $name {
            fn abi(&self) -> Abi {
                $abi
            }

            fn version(&self) -> DriverVersion {
                self.version
            }

            fn functions_loaded(&self) -> (usize, usize) {
                (self.loaded, DriverTable::LEN)
            }

            fn init(&self, flags: u32) -> Result<()> {
                call!(self.cuInit(flags))
            }

            fn device_get_count(&self) -> Result<i32> {
                let mut count = 0;
                call!(self.cuDeviceGetCount(&mut count))?;
                Ok(count)
            }

            fn device_get(&self, ordinal: i32) -> Result<DeviceHandle> {
                let mut device = 0;
                call!(self.cuDeviceGet(&mut device, ordinal))?;
                Ok(device)
            }

            fn device_get_name(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize> {
                let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
                call!(self.cuDeviceGetName(buf.as_mut_ptr().cast(), len, device))?;
                Ok(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()))
            }

            fn device_get_attribute(&self, attribute: i32, device: DeviceHandle) -> Result<i32> {
                let mut value = 0;
                let attribute = $sys::CUdevice_attribute(attribute as _);
                call!(self.cuDeviceGetAttribute(&mut value, attribute, device))?;
                Ok(value)
            }

            fn ctx_destroy(&self, ctx: ContextHandle) -> Result<()> {
                call!(self.cuCtxDestroy(ctx.0.cast()))
            }

            fn ctx_get_current(&self) -> Result<ContextHandle> {
                let mut ctx = std::ptr::null_mut();
                call!(self.cuCtxGetCurrent(&mut ctx))?;
                Ok(ContextHandle(ctx.cast()))
            }

            fn ctx_set_current(&self, ctx: ContextHandle) -> Result<()> {
                call!(self.cuCtxSetCurrent(ctx.0.cast()))
            }

            fn ctx_get_device(&self) -> Result<DeviceHandle> {
                let mut device = 0;
                call!(self.cuCtxGetDevice(&mut device))?;
                Ok(device)
            }

            fn stream_create(&self, flags: u32) -> Result<StreamHandle> {
                let mut stream = std::ptr::null_mut();
                call!(self.cuStreamCreate(&mut stream, flags))?;
                Ok(StreamHandle(stream.cast()))
            }

            fn stream_destroy(&self, stream: StreamHandle) -> Result<()> {
                call!(self.cuStreamDestroy(stream.0.cast()))
            }

            fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
                call!(self.cuStreamSynchronize(stream.0.cast()))
            }

            fn launch_host_func(
                &self,
                stream: StreamHandle,
                f: unsafe extern "C" fn(*mut std::ffi::c_void),
                data: *mut std::ffi::c_void,
            ) -> Result<()> {
                call!(self.cuLaunchHostFunc(stream.0.cast(), Some(f), data))
            }

            fn event_create(&self, flags: u32) -> Result<EventHandle> {
                let mut event = std::ptr::null_mut();
                call!(self.cuEventCreate(&mut event, flags))?;
                Ok(EventHandle(event.cast()))
            }

            fn event_destroy(&self, event: EventHandle) -> Result<()> {
                call!(self.cuEventDestroy(event.0.cast()))
            }

            fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()> {
                call!(self.cuEventRecord(event.0.cast(), stream.0.cast()))
            }

            fn event_synchronize(&self, event: EventHandle) -> Result<()> {
                call!(self.cuEventSynchronize(event.0.cast()))
            }

            fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
                let mut ms = 0.0f32;
                call!(self.cuEventElapsedTime(&mut ms, start.0.cast(), end.0.cast()))?;
                Ok(ms)
            }

            $($specific)*
        }
    };
}
pub(super) use driver_impl;
