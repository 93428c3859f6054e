//! CUDA contexts: a device's primary context, contexts of its own (`cuCtxCreate`), and green
//! contexts over a share of its SMs; their cache preference and scheduling flags.

use std::fmt;
use std::sync::Arc;

use crate::device::Device;
use crate::driver::DevResource;
use crate::driver::{ContextHandle, Driver, GreenContextHandle};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::lifetime::{current, ContextCore, ContextKind, Held, Primary};
use crate::sm_resources::{SmResource, WorkqueueConfig};
use crate::stream::{Stream, StreamOptions};

/// A CUDA context: the primary context of a device, a context of its own made by
/// [`Context::create`], or a green context made from a share of its SMs. Cheap to clone: a
/// primary context, which the process keeps for good, is copied without counting; the others
/// by reference count. Streams, events and memory hold one, so
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
#[doc(alias("CUcontext", "cuCtxFromGreenCtx", "cuCtxCreate"))]
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
    /// The work queue its streams submit through: one configured for it (from
    /// [`DeviceResources::workqueue_config`](crate::DeviceResources::workqueue_config)), or
    /// another context's (from [`Context::workqueue`]); `None` for the driver's default.
    /// Work-queue resources need a CUDA 13.1 driver and the 13 ABI.
    pub workqueue: Option<Workqueue>,
}

crate::options::chainers!(ContextOptions {
    with_resources(resources: Vec<SmResource>);
});

impl ContextOptions {
    /// Sets [`workqueue`](Self::workqueue): a [`WorkqueueConfig`] or a
    /// [`WorkqueueResource`].
    #[must_use]
    pub fn with_workqueue(mut self, workqueue: impl Into<Workqueue>) -> Self {
        self.workqueue = Some(workqueue.into());
        self
    }
}

/// The work queue of a context, for a green context that is to share it: see
/// [`Context::workqueue`]. It keeps that context alive, and so does every green context made
/// with it.
#[derive(Clone)]
#[doc(alias = "CUdevWorkqueueResource")]
pub struct WorkqueueResource {
    pub(crate) context: Context,
    pub(crate) raw: Box<DevResource>,
}

impl fmt::Debug for WorkqueueResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueResource")
            .field("context", &self.context)
            .finish()
    }
}

impl WorkqueueResource {
    pub(crate) fn new(context: Context, raw: DevResource) -> Self {
        WorkqueueResource {
            context,
            raw: Box::new(raw),
        }
    }

    /// The context whose work queue this is.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The device of that context.
    pub fn device(&self) -> Device {
        self.context.device()
    }

    /// The driver's `CUdevResource` (of the 13 header), valid as long as this value: for
    /// code that calls the driver itself.
    pub fn as_raw(&self) -> *const std::ffi::c_void {
        std::ptr::from_ref::<DevResource>(&self.raw).cast()
    }
}

/// The work queue a green context submits through: see [`ContextOptions::workqueue`].
#[derive(Clone, Debug)]
pub enum Workqueue {
    /// One of its own, configured so.
    Config(WorkqueueConfig),
    /// Another context's.
    Shared(WorkqueueResource),
}

impl Workqueue {
    /// The device it belongs to.
    pub fn device(&self) -> Device {
        match self {
            Workqueue::Config(config) => config.device(),
            Workqueue::Shared(shared) => shared.device(),
        }
    }
}

impl From<WorkqueueConfig> for Workqueue {
    fn from(config: WorkqueueConfig) -> Self {
        Workqueue::Config(config)
    }
}

impl From<WorkqueueResource> for Workqueue {
    fn from(shared: WorkqueueResource) -> Self {
        Workqueue::Shared(shared)
    }
}

/// The green contexts and the contexts of [`Context::create`] made, for
/// [`Context::sync_device`] (dead ones are pruned as new ones are made).
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
        let mut raw: Vec<_> = options.resources.iter().map(|r| r.raw).collect();
        let sm_count = options.resources.iter().map(SmResource::sm_count).sum();
        let shares = match &options.workqueue {
            None => None,
            Some(workqueue) => {
                if workqueue.device() != device {
                    return Err(Error::InvalidArgument {
                        name: "options.workqueue",
                        reason: format!(
                            "a work queue of device {} cannot serve a context on device {}",
                            workqueue.device().ordinal(),
                            device.ordinal()
                        ),
                    });
                }
                match workqueue {
                    Workqueue::Config(config) => {
                        raw.push(driver.workqueue_config_resource(config.raw_info()?)?);
                        None
                    }
                    Workqueue::Shared(shared) => {
                        raw.push(*shared.raw);
                        Some(Box::new(shared.context.clone())
                            as Box<dyn std::any::Any + Send + Sync>)
                    }
                }
            }
        };
        let (green, handle) = driver.green_ctx_create(&raw, device.handle())?;
        let core = Arc::new(ContextCore {
            handle,
            device: device.handle(),
            driver,
            kind: ContextKind::Green {
                green,
                sm_count,
                shares,
            },
        });
        Ok(Context::made(core))
    }

    /// A context made here (green, or by `cuCtxCreate`), noted for [`Context::sync_device`].
    fn made(core: Arc<ContextCore>) -> Context {
        let mut live = GREEN.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(&core));
        drop(live);
        Context {
            core: Held::counted(core),
        }
    }

    /// Creates a new context of `device` of its own, not its primary context (`cuCtxCreate`),
    /// with `flags`, and leaves the calling thread's current context as it was (the driver
    /// makes the new context current; it is popped at once). The context is destroyed
    /// (`cuCtxDestroy`) when the last value holding it drops: this one, its clones, and every
    /// stream, event and other object made in it, each of which holds it.
    ///
    /// A context of its own has its own memory, modules and streams apart from the primary
    /// context's (which the CUDA runtime and most libraries use); a device's default memory
    /// resource, [`ObjectCode::global`](crate::ObjectCode::global) and graphs built on
    /// [`Graph::new`](crate::graph::Graph::new) are the primary context's. Make it current
    /// with [`Context::set_current`] to have driver calls made by other code run in it.
    ///
    /// Flags with more than one scheduling policy, or bits `CUctx_flags` does not have, are
    /// [`Error::InvalidArgument`] before the driver is called.
    ///
    /// ```no_run
    /// use cuda_core::{Context, ContextFlags, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let context = Context::create(device, ContextFlags::SCHED_BLOCKING_SYNC)?;
    /// assert!(!context.is_primary());
    /// assert!(context.flags()?.contains(ContextFlags::SCHED_BLOCKING_SYNC));
    /// let stream = context.create_stream(StreamOptions::default())?;
    /// stream.sync()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v4", "cuCtxDestroy"))]
    pub fn create(device: Device, flags: ContextFlags) -> Result<Context> {
        flags.check()?;
        let driver = crate::driver::driver()?;
        if device.ordinal() >= Device::count()? {
            return Err(Error::InvalidArgument {
                name: "device",
                reason: format!("device {} does not exist", device.ordinal()),
            });
        }
        let handle = driver.ctx_create(flags.bits(), device.handle())?;
        // The driver pushed it current: restore the caller's context.
        if let Err(e) = driver.ctx_pop_current() {
            if let Err(destroyed) = driver.ctx_destroy(handle) {
                log::error!("destroying a context whose creation could not be undone: {destroyed}");
            }
            return Err(e);
        }
        Ok(Context::made(Arc::new(ContextCore {
            handle,
            device: device.handle(),
            driver,
            kind: ContextKind::Created,
        })))
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

    /// Whether this is a device's primary context, which the process keeps for good (a
    /// context wrapped by [`from_raw`](Context::from_raw) reads `true` where it is one).
    #[inline]
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    pub fn is_primary(&self) -> bool {
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
        match &self.core.kind {
            ContextKind::Green { sm_count, .. } => Ok(*sm_count),
            ContextKind::Primary | ContextKind::Created => {
                self.device().properties().multiprocessor_count()
            }
            ContextKind::Borrowed => Ok(self.sm_resource()?.sm_count()),
        }
    }

    /// The SMs this context owns, as the driver reports them (`cuCtxGetDevResource`).
    #[doc(alias = "cuCtxGetDevResource")]
    pub fn sm_resource(&self) -> Result<SmResource> {
        let raw = self.core.driver.ctx_get_sm_resource(self.core.handle)?;
        Ok(SmResource::from_raw(self.core.driver, self.device(), raw))
    }

    /// The work queue this context's streams submit through (`cuCtxGetDevResource` of
    /// `CU_DEV_RESOURCE_TYPE_WORKQUEUE`), for a green context that is to share it (see
    /// [`ContextOptions::workqueue`]). Needs a CUDA 13.1 driver and the 13 ABI: elsewhere
    /// [`Error::NotSupported`].
    #[doc(alias = "cuCtxGetDevResource")]
    pub fn workqueue(&self) -> Result<WorkqueueResource> {
        let raw = self.core.driver.ctx_get_workqueue(self.core.handle)?;
        Ok(WorkqueueResource::new(self.clone(), raw))
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

    /// Sets the context's preference between L1 cache and shared memory for the kernels it
    /// runs (`cuCtxSetCacheConfig`, with the context made current for the call and the
    /// caller's context restored). A hint: on devices whose split is fixed it is kept and
    /// ignored; a kernel's own preference ([`Kernel::set_cache_config`](crate::Kernel::set_cache_config))
    /// wins over it.
    ///
    /// ```no_run
    /// use cuda_core::{CacheConfig, Device};
    ///
    /// let context = Device::new(0)?.primary_context()?;
    /// // cudaDeviceSetCacheConfig(cudaFuncCachePreferShared)
    /// context.set_cache_config(CacheConfig::PreferShared)?;
    /// assert_eq!(context.cache_config()?, CacheConfig::PreferShared);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuCtxSetCacheConfig", "cudaDeviceSetCacheConfig"))]
    pub fn set_cache_config(&self, config: CacheConfig) -> Result<()> {
        self.with_current(|driver| driver.ctx_set_cache_config(config.code()))
    }

    /// The context's preference between L1 cache and shared memory (`cuCtxGetCacheConfig`):
    /// see [`Context::set_cache_config`].
    #[doc(alias("cuCtxGetCacheConfig", "cudaDeviceGetCacheConfig"))]
    pub fn cache_config(&self) -> Result<CacheConfig> {
        let code = self.with_current(|driver| driver.ctx_get_cache_config())?;
        CacheConfig::from_code(code)
    }

    /// Replaces the context's flags (`cuCtxSetFlags`, 12.1 and newer drivers; with the
    /// context made current for the call and the caller's context restored): its scheduling
    /// policy, and [`ContextFlags::SYNC_MEMOPS`]. Flags with more than one scheduling policy,
    /// or bits `CUctx_flags` does not have, are [`Error::InvalidArgument`] before the driver
    /// is called; flags the driver cannot change after creation
    /// ([`ContextFlags::LMEM_RESIZE_TO_MAX`], ...) are refused by it.
    ///
    /// ```no_run
    /// use cuda_core::{ContextFlags, Device};
    ///
    /// let context = Device::new(0)?.primary_context()?;
    /// context.set_flags(ContextFlags::SCHED_YIELD)?;
    /// assert_eq!(context.flags()?.scheduling(), ContextFlags::SCHED_YIELD);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuCtxSetFlags", "cudaSetDeviceFlags"))]
    pub fn set_flags(&self, flags: ContextFlags) -> Result<()> {
        flags.check()?;
        self.with_current(|driver| driver.ctx_set_flags(flags.bits()))
    }

    /// The context's flags (`cuCtxGetFlags`), as the driver reports them (it may add some,
    /// such as [`ContextFlags::MAP_HOST`], which every context has now).
    #[doc(alias("cuCtxGetFlags", "cudaGetDeviceFlags"))]
    pub fn flags(&self) -> Result<ContextFlags> {
        let bits = self.with_current(|driver| driver.ctx_get_flags())?;
        Ok(ContextFlags(bits))
    }

    /// The raw `CUcontext`, for calling other CUDA libraries. It stays valid while this
    /// value (or a clone) lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.core.handle.0
    }

    pub(crate) fn green_handle(&self) -> Option<GreenContextHandle> {
        match &self.core.kind {
            ContextKind::Green { green, .. } => Some(*green),
            ContextKind::Primary | ContextKind::Created | ContextKind::Borrowed => None,
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

/// A context's flags (`CUctx_flags`), for [`Context::create`] and [`Context::set_flags`]:
/// one scheduling policy (`SCHED_*`, [`ContextFlags::SCHED_AUTO`] where none is given) and
/// any of the other flags, combined with `|`.
///
/// ```
/// use cuda_core::ContextFlags;
///
/// let flags = ContextFlags::SCHED_SPIN | ContextFlags::LMEM_RESIZE_TO_MAX;
/// assert!(flags.contains(ContextFlags::LMEM_RESIZE_TO_MAX));
/// assert_eq!(flags.scheduling(), ContextFlags::SCHED_SPIN);
/// assert_eq!(flags.bits(), 0x11);
/// ```
#[doc(alias("CUctx_flags", "CUctx_flags_enum"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ContextFlags(u32);

impl ContextFlags {
    /// The driver picks spinning or yielding by the number of contexts and processors
    /// (`CU_CTX_SCHED_AUTO`, 0).
    #[doc(alias = "CU_CTX_SCHED_AUTO")]
    pub const SCHED_AUTO: ContextFlags = ContextFlags(0);
    /// A thread waiting for the GPU spins (`CU_CTX_SCHED_SPIN`).
    #[doc(alias = "CU_CTX_SCHED_SPIN")]
    pub const SCHED_SPIN: ContextFlags = ContextFlags(0x01);
    /// A thread waiting for the GPU yields its processor (`CU_CTX_SCHED_YIELD`).
    #[doc(alias = "CU_CTX_SCHED_YIELD")]
    pub const SCHED_YIELD: ContextFlags = ContextFlags(0x02);
    /// A thread waiting for the GPU blocks on a synchronisation primitive
    /// (`CU_CTX_SCHED_BLOCKING_SYNC`).
    #[doc(alias("CU_CTX_SCHED_BLOCKING_SYNC", "CU_CTX_BLOCKING_SYNC"))]
    pub const SCHED_BLOCKING_SYNC: ContextFlags = ContextFlags(0x04);
    /// Pinned host memory may be mapped into the device (`CU_CTX_MAP_HOST`; always on with
    /// unified addressing).
    #[doc(alias = "CU_CTX_MAP_HOST")]
    pub const MAP_HOST: ContextFlags = ContextFlags(0x08);
    /// Local memory grown for a kernel is kept, not shrunk after it
    /// (`CU_CTX_LMEM_RESIZE_TO_MAX`).
    #[doc(alias = "CU_CTX_LMEM_RESIZE_TO_MAX")]
    pub const LMEM_RESIZE_TO_MAX: ContextFlags = ContextFlags(0x10);
    /// GPU core dumps on exceptions in this context (`CU_CTX_COREDUMP_ENABLE`).
    #[doc(alias = "CU_CTX_COREDUMP_ENABLE")]
    pub const COREDUMP_ENABLE: ContextFlags = ContextFlags(0x20);
    /// User-triggered core dumps in this context (`CU_CTX_USER_COREDUMP_ENABLE`).
    #[doc(alias = "CU_CTX_USER_COREDUMP_ENABLE")]
    pub const USER_COREDUMP_ENABLE: ContextFlags = ContextFlags(0x40);
    /// Synchronous memory operations in this context are synchronising
    /// (`CU_CTX_SYNC_MEMOPS`).
    #[doc(alias = "CU_CTX_SYNC_MEMOPS")]
    pub const SYNC_MEMOPS: ContextFlags = ContextFlags(0x80);

    /// Every bit `CUctx_flags` names (`CU_CTX_FLAGS_MASK`).
    const ALL: u32 = 0xff;
    /// The scheduling bits (`CU_CTX_SCHED_MASK`).
    const SCHED_MASK: u32 = 0x07;

    /// The raw `CUctx_flags` bits.
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Flags from raw `CUctx_flags` bits, `None` where a bit is not one `CUctx_flags` names.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Option<ContextFlags> {
        if bits & !Self::ALL == 0 {
            Some(ContextFlags(bits))
        } else {
            None
        }
    }

    /// Whether every bit of `other` is set here (for a scheduling policy, compare
    /// [`ContextFlags::scheduling`] instead: [`ContextFlags::SCHED_AUTO`] has no bits).
    #[must_use]
    pub const fn contains(self, other: ContextFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The scheduling policy alone (one of the `SCHED_*` values, or bits of several where
    /// raw bits gave more than one).
    #[must_use]
    pub const fn scheduling(self) -> ContextFlags {
        ContextFlags(self.0 & Self::SCHED_MASK)
    }

    /// Refuses bits `CUctx_flags` does not name and more than one scheduling policy.
    fn check(self) -> Result<()> {
        if self.0 & !Self::ALL != 0 {
            return Err(Error::InvalidArgument {
                name: "flags",
                reason: format!(
                    "{:#x} has bits CUctx_flags does not name ({:#x})",
                    self.0,
                    self.0 & !Self::ALL
                ),
            });
        }
        if !matches!(self.0 & Self::SCHED_MASK, 0 | 1 | 2 | 4) {
            return Err(Error::InvalidArgument {
                name: "flags",
                reason: format!(
                    "{:#x} names more than one scheduling policy (SCHED_SPIN, SCHED_YIELD, \
                     SCHED_BLOCKING_SYNC): a context has one",
                    self.0
                ),
            });
        }
        Ok(())
    }
}

impl std::ops::BitOr for ContextFlags {
    type Output = ContextFlags;

    fn bitor(self, other: ContextFlags) -> ContextFlags {
        ContextFlags(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for ContextFlags {
    fn bitor_assign(&mut self, other: ContextFlags) {
        self.0 |= other.0;
    }
}

/// A preference between L1 cache and shared memory (`CUfunc_cache`), for
/// [`Context::set_cache_config`] and [`Kernel::set_cache_config`](crate::Kernel::set_cache_config).
#[doc(alias("CUfunc_cache", "cudaFuncCache"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheConfig {
    /// No preference (`CU_FUNC_CACHE_PREFER_NONE`).
    #[default]
    #[doc(alias = "CU_FUNC_CACHE_PREFER_NONE")]
    PreferNone,
    /// More shared memory, less L1 (`CU_FUNC_CACHE_PREFER_SHARED`).
    #[doc(alias = "CU_FUNC_CACHE_PREFER_SHARED")]
    PreferShared,
    /// More L1, less shared memory (`CU_FUNC_CACHE_PREFER_L1`).
    #[doc(alias = "CU_FUNC_CACHE_PREFER_L1")]
    PreferL1,
    /// As much L1 as shared memory (`CU_FUNC_CACHE_PREFER_EQUAL`).
    #[doc(alias = "CU_FUNC_CACHE_PREFER_EQUAL")]
    PreferEqual,
}

impl CacheConfig {
    /// The `CUfunc_cache` value (the same in the 12 and 13 headers).
    pub(crate) fn code(self) -> u32 {
        match self {
            CacheConfig::PreferNone => 0,
            CacheConfig::PreferShared => 1,
            CacheConfig::PreferL1 => 2,
            CacheConfig::PreferEqual => 3,
        }
    }

    /// The preference of a `CUfunc_cache` the driver answered.
    fn from_code(code: u32) -> Result<CacheConfig> {
        Ok(match code {
            0 => CacheConfig::PreferNone,
            1 => CacheConfig::PreferShared,
            2 => CacheConfig::PreferL1,
            3 => CacheConfig::PreferEqual,
            other => {
                return Err(Error::InvalidArgument {
                    name: "CUfunc_cache",
                    reason: format!("the driver answered {other}, which this crate does not name"),
                })
            }
        })
    }
}

#[cfg(test)]
mod flag_tests {
    use super::{CacheConfig, ContextFlags};

    #[test]
    fn flag_and_cache_values_are_both_headers_values() {
        use cuda_sys13::CUctx_flags as F;
        let flags = [
            (ContextFlags::SCHED_AUTO, F::CU_CTX_SCHED_AUTO),
            (ContextFlags::SCHED_SPIN, F::CU_CTX_SCHED_SPIN),
            (ContextFlags::SCHED_YIELD, F::CU_CTX_SCHED_YIELD),
            (
                ContextFlags::SCHED_BLOCKING_SYNC,
                F::CU_CTX_SCHED_BLOCKING_SYNC,
            ),
            (ContextFlags::MAP_HOST, F::CU_CTX_MAP_HOST),
            (
                ContextFlags::LMEM_RESIZE_TO_MAX,
                F::CU_CTX_LMEM_RESIZE_TO_MAX,
            ),
            (ContextFlags::COREDUMP_ENABLE, F::CU_CTX_COREDUMP_ENABLE),
            (
                ContextFlags::USER_COREDUMP_ENABLE,
                F::CU_CTX_USER_COREDUMP_ENABLE,
            ),
            (ContextFlags::SYNC_MEMOPS, F::CU_CTX_SYNC_MEMOPS),
        ];
        for (ours, theirs) in flags {
            // Catches a flag sent as another bit (the driver would set the wrong one).
            assert_eq!(ours.bits(), theirs.0, "{ours:?}");
            assert_eq!(cuda_sys12::CUctx_flags(theirs.0).0, ours.bits());
        }
        assert_eq!(ContextFlags::ALL, F::CU_CTX_FLAGS_MASK.0);
        assert_eq!(ContextFlags::SCHED_MASK, F::CU_CTX_SCHED_MASK.0);
        use cuda_sys12::CUfunc_cache as C;
        let caches = [
            (CacheConfig::PreferNone, C::CU_FUNC_CACHE_PREFER_NONE),
            (CacheConfig::PreferShared, C::CU_FUNC_CACHE_PREFER_SHARED),
            (CacheConfig::PreferL1, C::CU_FUNC_CACHE_PREFER_L1),
            (CacheConfig::PreferEqual, C::CU_FUNC_CACHE_PREFER_EQUAL),
        ];
        for (ours, theirs) in caches {
            // Catches a preference sent or read back as another.
            assert_eq!(ours.code(), theirs.0, "{ours:?}");
            assert_eq!(CacheConfig::from_code(theirs.0).unwrap(), ours);
            assert_eq!(cuda_sys13::CUfunc_cache(theirs.0).0, ours.code());
        }
        assert!(CacheConfig::from_code(4).is_err());
    }

    #[test]
    fn flags_with_two_scheduling_policies_or_unknown_bits_are_refused() {
        // Catches a check that lets the driver see two policies, or a bit it does not name.
        assert!((ContextFlags::SCHED_SPIN | ContextFlags::SCHED_YIELD)
            .check()
            .is_err());
        assert!(
            (ContextFlags::SCHED_YIELD | ContextFlags::SCHED_BLOCKING_SYNC)
                .check()
                .is_err()
        );
        assert!(ContextFlags(0x100).check().is_err());
        assert_eq!(ContextFlags::from_bits(0x100), None);
        // Catches a check that refuses one policy with other flags.
        for sched in [
            ContextFlags::SCHED_AUTO,
            ContextFlags::SCHED_SPIN,
            ContextFlags::SCHED_YIELD,
            ContextFlags::SCHED_BLOCKING_SYNC,
        ] {
            let flags = sched | ContextFlags::LMEM_RESIZE_TO_MAX | ContextFlags::SYNC_MEMOPS;
            assert!(flags.check().is_ok(), "{flags:?}");
            assert_eq!(flags.scheduling(), sched);
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
