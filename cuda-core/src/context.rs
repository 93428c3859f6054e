//! CUDA contexts: a device's primary context, and green contexts over a share of its SMs.

use std::fmt;
use std::sync::Arc;

use crate::device::Device;
use crate::driver::{ContextHandle, Driver, GreenContextHandle};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::resources::SmResource;
use crate::stream::{Stream, StreamOptions};

/// A CUDA context: the primary context of a device, or a green context made from a share of
/// its SMs. Cheap to clone (a reference count); streams, events and memory hold one, so a
/// context lives as long as anything made in it.
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
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) handle: ContextHandle,
    pub(crate) device: Device,
    pub(crate) driver: &'static dyn Driver,
    kind: Kind,
}

enum Kind {
    /// The device's primary context, retained by this value.
    Primary,
    /// A green context, destroyed with this value.
    Green {
        green: GreenContextHandle,
        sm_count: u32,
    },
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        let result = match self.kind {
            Kind::Primary => self.driver.device_primary_ctx_release(self.device.handle()),
            Kind::Green { green, .. } => self.driver.green_ctx_destroy(green),
        };
        if let Err(e) = result {
            log::error!(
                "releasing the context of device {}: {e}",
                self.device.ordinal()
            );
        }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.inner.device.ordinal())
            .field("handle", &self.inner.handle.0)
            .field("green", &self.is_green())
            .finish()
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.inner.handle == other.inner.handle
    }
}

impl Eq for Context {}

/// How an object holds its context: the process-lifetime primary context by plain reference
/// (no reference counting on creation, clone or drop), any other by a counted clone.
#[derive(Clone)]
pub(crate) enum ContextRef {
    Static(&'static Context),
    Shared(Context),
}

impl std::ops::Deref for ContextRef {
    type Target = Context;

    #[inline]
    fn deref(&self) -> &Context {
        match self {
            ContextRef::Static(context) => context,
            ContextRef::Shared(context) => context,
        }
    }
}

/// What a green context is made of: see [`Device::create_context`].
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    /// The SM groups the context runs on (from [`SmResource::split`]); at least one.
    pub resources: Vec<SmResource>,
}

impl Context {
    /// Retains `device`'s primary context.
    pub(crate) fn retain_primary(driver: &'static dyn Driver, device: Device) -> Result<Context> {
        let handle = driver.device_primary_ctx_retain(device.handle())?;
        Ok(Context {
            inner: Arc::new(ContextInner {
                handle,
                device,
                driver,
                kind: Kind::Primary,
            }),
        })
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
        Ok(Context {
            inner: Arc::new(ContextInner {
                handle,
                device,
                driver,
                kind: Kind::Green { green, sm_count },
            }),
        })
    }

    /// A reference to keep in an object made in this context: a plain one for the primary
    /// context the process holds, a counted clone otherwise.
    #[inline]
    pub(crate) fn keep(&self) -> ContextRef {
        if let Kind::Primary = self.inner.kind {
            if let Ok(primary) = self.inner.device.primary() {
                if Arc::ptr_eq(&primary.inner, &self.inner) {
                    return ContextRef::Static(primary);
                }
            }
        }
        ContextRef::Shared(self.clone())
    }

    /// The device the context belongs to.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether this is a green context.
    pub fn is_green(&self) -> bool {
        matches!(self.inner.kind, Kind::Green { .. })
    }

    /// How many SMs the context's kernels may run on: its groups' total for a green context,
    /// the device's count for a primary one.
    pub fn sm_count(&self) -> Result<u32> {
        match self.inner.kind {
            Kind::Green { sm_count, .. } => Ok(sm_count),
            Kind::Primary => self.inner.device.properties().multiprocessor_count(),
        }
    }

    /// The SMs this context owns, as the driver reports them (`cuCtxGetDevResource`).
    pub fn sm_resource(&self) -> Result<SmResource> {
        let raw = self.inner.driver.ctx_get_sm_resource(self.inner.handle)?;
        Ok(SmResource::from_raw(
            self.inner.driver,
            self.inner.device,
            raw,
        ))
    }

    /// Creates a stream in this context. In a green context, the stream is always
    /// non-blocking (the driver requires it) and its work runs on the context's SMs.
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        Stream::create(self.keep(), options)
    }

    /// Creates an event in this context.
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        Event::create(self.keep(), options)
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`), replacing what
    /// was current. The context stays alive at least as long as this value.
    #[inline]
    pub fn set_current(&self) -> Result<()> {
        // Reading is cheaper than setting (seen on the H200): skip a set that changes nothing.
        if self.is_current_fast() {
            return Ok(());
        }
        self.set_current_slow()
    }

    #[cold]
    #[inline(never)]
    fn set_current_slow(&self) -> Result<()> {
        let driver = self.inner.driver;
        // A second read, on the switch path only: handing the first read in instead cost the
        // already-current path about 0.5 ns on the stand-in driver.
        if current(driver)? == self.inner.handle {
            return Ok(());
        }
        driver.ctx_set_current(self.inner.handle)
    }

    /// Whether this context is current, by the call that returns in registers; `false` also
    /// where the call failed (the slow path then reports the error).
    #[inline]
    pub(crate) fn is_current_fast(&self) -> bool {
        self.inner.driver.ctx_current_or_none() == Some(self.inner.handle)
    }

    /// Whether this context is the calling thread's current context (`cuCtxGetCurrent`).
    #[inline]
    pub fn is_current(&self) -> Result<bool> {
        Ok(current(self.inner.driver)? == self.inner.handle)
    }

    /// Waits for all work in this context (`cuCtxSynchronize`).
    pub fn sync(&self) -> Result<()> {
        self.with_current(|driver| driver.ctx_synchronize())
    }

    /// The raw `CUcontext`, for calling other CUDA libraries. It stays valid while this
    /// value (or a clone) lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.inner.handle.0
    }

    pub(crate) fn green_handle(&self) -> Option<GreenContextHandle> {
        match self.inner.kind {
            Kind::Green { green, .. } => Some(green),
            Kind::Primary => None,
        }
    }

    /// Runs `f` with this context current on the calling thread, then restores the caller's
    /// context: one `cuCtxGetCurrent` when it already is current, a push and a pop otherwise.
    pub(crate) fn with_current<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver) -> Result<T>,
    ) -> Result<T> {
        with_current(self.inner.driver, self.inner.handle, f)
    }
}

/// Runs `f` with `handle` current on the calling thread: directly where it already is (one
/// `cuCtxGetCurrent`), between a push and a pop otherwise.
#[inline]
pub(crate) fn with_current<T>(
    driver: &'static dyn Driver,
    handle: ContextHandle,
    f: impl FnOnce(&'static dyn Driver) -> Result<T>,
) -> Result<T> {
    if current(driver)? == handle {
        return f(driver);
    }
    driver.ctx_push_current(handle)?;
    let result = f(driver);
    let popped = driver.ctx_pop_current();
    match (result, popped) {
        (Ok(value), Ok(_)) => Ok(value),
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    }
}

/// The calling thread's current context (`cuCtxGetCurrent`), by the call that returns in
/// registers; the error, where there is one, from the call that builds it.
#[inline]
fn current(driver: &'static dyn Driver) -> Result<ContextHandle> {
    match driver.ctx_current_or_none() {
        Some(handle) => Ok(handle),
        None => driver.ctx_get_current(),
    }
}
