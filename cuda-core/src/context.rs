//! CUDA contexts: a device's primary context, and green contexts over a share of its SMs.

use std::fmt;
use std::sync::Arc;

use crate::device::Device;
use crate::driver::{ContextHandle, Driver, GreenContextHandle};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::lifetime::{current, ContextCore, ContextKind, Held, Primary};
use crate::sm_resources::SmResource;
use crate::stream::{Stream, StreamOptions};

/// A CUDA context: the primary context of a device, or a green context made from a share of
/// its SMs. Cheap to clone: a primary context, which the process keeps for good, is copied
/// without counting; a green one by reference count. Streams, events and memory hold one, so
/// a context lives as long as anything made in it.
///
/// ```no_run
/// use cuda_core::{Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let context = device.primary_context()?;
/// assert!(!context.is_green());
/// let stream = context.create_stream(StreamOptions::default())?;
/// stream.sync()?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("CUcontext", "cuCtxFromGreenCtx"))]
#[derive(Clone)]
pub struct Context {
    /// Uncounted for a primary context, which the process keeps for good.
    core: Held<ContextCore>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.core.device)
            .field("handle", &self.core.handle.0)
            .field("green", &self.is_green())
            .finish()
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.core.handle == other.core.handle
    }
}

impl Eq for Context {}

/// What a green context is made of: see [`Device::create_context`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ContextOptions {
    /// The SM groups the context runs on (from [`SmResource::split`]); at least one.
    pub resources: Vec<SmResource>,
}

crate::options::chainers!(ContextOptions {
    with_resources(resources: Vec<SmResource>);
});

/// The green contexts made, for [`Context::sync_device`] (dead ones are pruned as new ones
/// are made).
static GREEN: std::sync::Mutex<Vec<std::sync::Weak<ContextCore>>> =
    std::sync::Mutex::new(Vec::new());

impl Context {
    /// Refuses a driver older than `needed` with [`Error::NotSupported`] naming `what` (the
    /// call, and the drivers that have it), the driver's version and the ABI in use.
    pub(crate) fn require_driver(
        &self,
        needed: crate::info::types::DriverVersion,
        what: &'static str,
    ) -> Result<()> {
        let driver = self.driver();
        if driver.version() >= needed {
            return Ok(());
        }
        Err(Error::NotSupported {
            function: what,
            driver: driver.version(),
            abi: driver.abi().major(),
        })
    }

    /// The primary context the process keeps, held without counting.
    #[inline]
    pub(crate) fn primary(primary: &'static Primary) -> Context {
        Context {
            core: Held::forever(&primary.core),
        }
    }

    /// Creates a green context on the given SM groups.
    pub(crate) fn create_green(
        driver: &'static dyn Driver,
        device: Device,
        options: &ContextOptions,
    ) -> Result<Context> {
        if options.resources.is_empty() {
            return Err(Error::InvalidArgument {
                name: "options.resources",
                reason: "a green context needs at least one SM group".to_owned(),
            });
        }
        if let Some(other) = options.resources.iter().find(|r| r.device() != device) {
            return Err(Error::InvalidArgument {
                name: "options.resources",
                reason: format!(
                    "an SM group of device {} cannot make a context on device {}",
                    other.device().ordinal(),
                    device.ordinal()
                ),
            });
        }
        let raw: Vec<_> = options.resources.iter().map(|r| r.raw).collect();
        let sm_count = options.resources.iter().map(SmResource::sm_count).sum();
        let (green, handle) = driver.green_ctx_create(&raw, device.handle())?;
        let core = Arc::new(ContextCore {
            handle,
            device: device.handle(),
            driver,
            kind: ContextKind::Green { green, sm_count },
        });
        let mut live = GREEN.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(&core));
        drop(live);
        Ok(Context {
            core: Held::counted(core),
        })
    }

    /// Waits for all work in every context of `device` this process made or holds: its
    /// primary context if held, and its green contexts alive: before the device loses access
    /// to memory, so that no kernel or copy already queued loses it midway. (Contexts made
    /// elsewhere and wrapped by [`Context::from_raw`] are their maker's.)
    pub(crate) fn sync_device(device: Device) -> Result<()> {
        device.sync_if_held()?;
        let green: Vec<Arc<ContextCore>> = GREEN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .filter(|core| core.device == device.handle())
            .collect();
        for core in green {
            crate::lifetime::captures::sync_context(core.driver, core.handle)?;
        }
        Ok(())
    }

    /// Wraps a context made elsewhere (by another library) without taking ownership: dropping
    /// the result (and every stream, event and clone made from it) does not release it. Its
    /// device is asked of the driver (`cuCtxGetDevice`, with the context pushed current). A
    /// device's primary context comes back as the one the process keeps.
    ///
    /// # Safety
    ///
    /// `handle` must be a valid `CUcontext`, and must stay valid for as long as the result, or
    /// anything made from it, is used.
    #[doc(alias = "cuCtxGetDevice")]
    pub unsafe fn from_raw(handle: *mut std::ffi::c_void) -> Result<Context> {
        let driver = crate::driver::driver()?;
        let handle = ContextHandle(handle);
        if handle == ContextHandle::NULL {
            return Err(Error::InvalidArgument {
                name: "handle",
                reason: "a null CUcontext".to_owned(),
            });
        }
        let device = current::with_current(driver, handle, |driver| driver.ctx_get_device())?
            .ok_or_else(|| Error::InvalidArgument {
                name: "handle",
                reason: "the driver knows no device of this context".to_owned(),
            })?;
        let device = Device::new(usize::try_from(device).unwrap_or(usize::MAX))?;
        let primary = device.primary_entry()?;
        if primary.handle == handle {
            return Ok(Context::primary(primary));
        }
        Ok(Context {
            core: Held::counted(Arc::new(ContextCore {
                handle,
                device: device.handle(),
                driver,
                kind: ContextKind::Borrowed,
            })),
        })
    }

    /// The context's handle.
    #[inline]
    pub(crate) fn handle(&self) -> ContextHandle {
        self.core.handle
    }

    /// The driver the context was made through.
    #[inline]
    pub(crate) fn driver(&self) -> &'static dyn Driver {
        self.core.driver
    }

    /// The device the context belongs to.
    #[inline]
    pub fn device(&self) -> Device {
        Device::from_handle(self.core.device)
    }

    /// Whether this is a device's primary context, which the process keeps for good.
    #[inline]
    pub(crate) fn is_primary(&self) -> bool {
        matches!(self.core.kind, ContextKind::Primary)
    }

    /// Whether this is a green context made here (a context wrapped by
    /// [`from_raw`](Context::from_raw) reads `false`).
    pub fn is_green(&self) -> bool {
        matches!(self.core.kind, ContextKind::Green { .. })
    }

    /// How many SMs the context's kernels may run on: its groups' total for a green context,
    /// the device's count for a primary one, what the driver reports for one wrapped by
    /// [`from_raw`](Context::from_raw).
    pub fn sm_count(&self) -> Result<u32> {
        match self.core.kind {
            ContextKind::Green { sm_count, .. } => Ok(sm_count),
            ContextKind::Primary => self.device().properties().multiprocessor_count(),
            ContextKind::Borrowed => Ok(self.sm_resource()?.sm_count()),
        }
    }

    /// The SMs this context owns, as the driver reports them (`cuCtxGetDevResource`).
    #[doc(alias = "cuCtxGetDevResource")]
    pub fn sm_resource(&self) -> Result<SmResource> {
        let raw = self.core.driver.ctx_get_sm_resource(self.core.handle)?;
        Ok(SmResource::from_raw(self.core.driver, self.device(), raw))
    }

    /// Creates a stream in this context. In a green context, the stream is always
    /// non-blocking (the driver requires it) and its work runs on the context's SMs.
    #[doc(alias("cuStreamCreate", "cuGreenCtxStreamCreate"))]
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::create(self.clone(), options)
    }

    /// Creates an event in this context.
    #[doc(alias = "cuEventCreate")]
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        Event::create(self.clone(), options)
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`), replacing what
    /// was current. The context stays alive at least as long as this value.
    #[inline]
    #[doc(alias = "cuCtxSetCurrent")]
    pub fn set_current(&self) -> Result<()> {
        current::set_current(self.core.driver, self.core.handle)
    }

    /// Whether this context is the calling thread's current context (`cuCtxGetCurrent`).
    #[inline]
    #[doc(alias = "cuCtxGetCurrent")]
    pub fn is_current(&self) -> Result<bool> {
        Ok(current::current(self.core.driver)? == self.core.handle)
    }

    /// Waits for all work in this context (`cuCtxSynchronize`).
    ///
    /// The driver refuses a context's synchronisation while any stream of it captures, and
    /// invalidates that capture. So while another thread's capture begun here
    /// ([`Stream::begin_capture`](crate::Stream::begin_capture)) is open in this context, this
    /// waits for it to end first (saying so in the log after a second), and no capture in
    /// this context begins until the synchronisation has returned. A capture of the calling
    /// thread's own is not waited for: the synchronisation fails then, and invalidates it, as
    /// a capturing stream's does. So a thread that, while it captures, waits for another
    /// thread that synchronises the context waits for ever: end the capture first (the
    /// synchronising thread logs a warning after a second).
    #[doc(alias = "cuCtxSynchronize")]
    pub fn sync(&self) -> Result<()> {
        crate::lifetime::captures::sync_context(self.core.driver, self.core.handle)
    }

    /// Sets one of the context's limits (`cuCtxSetLimit`): the stack per GPU thread, the
    /// `printf` FIFO, the heap of device-side `malloc`, the device runtime's pending launches,
    /// the L2 fetch granularity or the persisting L2 size, in bytes (or a count). The driver
    /// may round the value (read it back with [`Context::limit`]) and refuses values it cannot
    /// take, with its error; some limits can only change before the context's first launch
    /// (the heap and the FIFO: `CUDA_ERROR_INVALID_VALUE` after).
    ///
    /// ```no_run
    /// use cuda_core::{ContextLimit, Device};
    ///
    /// let context = Device::new(0)?.primary_context()?;
    /// // cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20)
    /// context.set_limit(ContextLimit::MallocHeapSize, 64 << 20)?;
    /// assert!(context.limit(ContextLimit::MallocHeapSize)? >= 64 << 20);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuCtxSetLimit", "cudaDeviceSetLimit"))]
    pub fn set_limit(&self, limit: ContextLimit, value: usize) -> Result<()> {
        self.with_current(|driver| driver.ctx_set_limit(limit.code(), value))
    }

    /// One of the context's limits (`cuCtxGetLimit`): see [`Context::set_limit`].
    #[doc(alias("cuCtxGetLimit", "cudaDeviceGetLimit"))]
    pub fn limit(&self, limit: ContextLimit) -> Result<usize> {
        self.with_current(|driver| driver.ctx_get_limit(limit.code()))
    }

    /// The raw `CUcontext`, for calling other CUDA libraries. It stays valid while this
    /// value (or a clone) lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.core.handle.0
    }

    pub(crate) fn green_handle(&self) -> Option<GreenContextHandle> {
        match self.core.kind {
            ContextKind::Green { green, .. } => Some(green),
            ContextKind::Primary | ContextKind::Borrowed => None,
        }
    }

    /// Runs `f` with this context current on the calling thread, then restores the caller's
    /// context: one `cuCtxGetCurrent` when it already is current, a push and a pop otherwise.
    pub(crate) fn with_current<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver) -> Result<T>,
    ) -> Result<T> {
        current::with_current(self.core.driver, self.core.handle, f)
    }
}

/// A limit of a context ([`Context::set_limit`], `CUlimit`).
#[doc(alias = "CUlimit")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContextLimit {
    /// The stack of each GPU thread, in bytes (`CU_LIMIT_STACK_SIZE`).
    StackSize,
    /// The FIFO of device-side `printf`, in bytes (`CU_LIMIT_PRINTF_FIFO_SIZE`).
    PrintfFifoSize,
    /// The heap of device-side `malloc` and `free`, in bytes (`CU_LIMIT_MALLOC_HEAP_SIZE`).
    MallocHeapSize,
    /// How many launches from the device may be pending at once
    /// (`CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT`).
    DeviceRuntimePendingLaunches,
    /// The L2 fetch granularity, in bytes, 0 to 128 (`CU_LIMIT_MAX_L2_FETCH_GRANULARITY`).
    MaxL2FetchGranularity,
    /// The L2 set aside for persisting accesses, in bytes
    /// (`CU_LIMIT_PERSISTING_L2_CACHE_SIZE`).
    PersistingL2CacheSize,
}

impl ContextLimit {
    /// The `CUlimit` value (the same in the 12 and 13 headers).
    fn code(self) -> u32 {
        match self {
            ContextLimit::StackSize => 0,
            ContextLimit::PrintfFifoSize => 1,
            ContextLimit::MallocHeapSize => 2,
            ContextLimit::DeviceRuntimePendingLaunches => 4,
            ContextLimit::MaxL2FetchGranularity => 5,
            ContextLimit::PersistingL2CacheSize => 6,
        }
    }
}

#[cfg(test)]
mod limit_tests {
    use super::ContextLimit;

    #[test]
    fn limit_codes_are_both_headers_values() {
        let all = [
            (
                ContextLimit::StackSize,
                cuda_sys13::CUlimit::CU_LIMIT_STACK_SIZE,
            ),
            (
                ContextLimit::PrintfFifoSize,
                cuda_sys13::CUlimit::CU_LIMIT_PRINTF_FIFO_SIZE,
            ),
            (
                ContextLimit::MallocHeapSize,
                cuda_sys13::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE,
            ),
            (
                ContextLimit::DeviceRuntimePendingLaunches,
                cuda_sys13::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
            ),
            (
                ContextLimit::MaxL2FetchGranularity,
                cuda_sys13::CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY,
            ),
            (
                ContextLimit::PersistingL2CacheSize,
                cuda_sys13::CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE,
            ),
        ];
        for (limit, code) in all {
            // Catches a limit sent as another (the driver would set the wrong one).
            assert_eq!(limit.code(), code.0, "{limit:?}");
            assert_eq!(cuda_sys12::CUlimit(code.0).0, limit.code());
        }
        assert_eq!(
            cuda_sys12::CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE.0,
            ContextLimit::PersistingL2CacheSize.code()
        );
        assert_eq!(
            cuda_sys12::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT.0,
            ContextLimit::DeviceRuntimePendingLaunches.code()
        );
    }
}
