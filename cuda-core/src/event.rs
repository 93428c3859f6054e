//! Events: markers recorded in streams, for ordering and timing.

use std::fmt;
use std::time::Duration;

use crate::context::Context;
use crate::device::Device;
use crate::driver::{ContextHandle, Driver, EventHandle};
use crate::error::{Error, Result};
use crate::lifetime::current::with_current;

/// `CU_EVENT_BLOCKING_SYNC`.
const BLOCKING_SYNC: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: u32 = 2;

/// How to create an [`Event`]. The default is the cheapest event: no timing, spin-waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventOptions {
    /// Record timestamps, so that [`Event::elapsed_since`] works (costs some speed).
    pub timing: bool,
    /// Make [`Event::sync`] block the thread instead of spinning.
    pub blocking_sync: bool,
}

crate::options::chainers!(EventOptions {
    with_timing(timing: bool);
    with_blocking_sync(blocking_sync: bool);
});

impl EventOptions {
    /// An event that records timestamps: `EventOptions::default().with_timing(true)`.
    #[must_use]
    pub fn timing() -> Self {
        EventOptions {
            timing: true,
            ..Self::default()
        }
    }
}

/// A CUDA event, destroyed on drop.
///
/// ```no_run
/// use cuda_core::{Device, EventOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let start = stream.record_new(EventOptions::timing())?;
/// // ... queue work on `stream` ...
/// let end = stream.record_new(EventOptions::timing())?;
/// end.sync()?;
/// println!("took {:?}", end.elapsed_since(&start)?);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "CUevent")]
pub struct Event {
    handle: EventHandle,
    context: Context,
    driver: &'static dyn Driver,
    options: EventOptions,
    /// Made here (destroyed on drop), or wrapped by [`Event::from_raw`].
    owned: bool,
}

impl Drop for Event {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if let Err(e) = self.driver.event_destroy(self.handle) {
            log::error!(
                "destroying an event of device {}: {e}",
                self.device().ordinal()
            );
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("handle", &self.handle.0)
            .field("device", &self.device().ordinal())
            .field("options", &self.options)
            .finish()
    }
}

impl Event {
    #[inline]
    pub(crate) fn create(context: Context, options: EventOptions) -> Result<Event> {
        Event::create_in(context.driver(), context.handle(), context, options)
    }

    /// [`Event::create`] with the context's driver and handle read by the caller, which may
    /// hold them closer at hand than `context` does.
    #[inline]
    pub(crate) fn create_in(
        driver: &'static dyn Driver,
        handle: ContextHandle,
        context: Context,
        options: EventOptions,
    ) -> Result<Event> {
        let mut flags = 0;
        if !options.timing {
            flags |= DISABLE_TIMING;
        }
        if options.blocking_sync {
            flags |= BLOCKING_SYNC;
        }
        let handle = with_current(driver, handle, |driver| driver.event_create(flags))?;
        Ok(Event {
            handle,
            driver,
            context,
            options,
            owned: true,
        })
    }

    /// Wraps an event made elsewhere (by another library) without taking ownership: dropping
    /// the result does not destroy it.
    ///
    /// # Safety
    ///
    /// `handle` must be a valid `CUevent` of `context`, created with the flags `options`
    /// describes (timing, blocking sync), and must stay valid for as long as the result is
    /// used.
    pub unsafe fn from_raw(
        handle: *mut std::ffi::c_void,
        context: &Context,
        options: EventOptions,
    ) -> Event {
        Event {
            handle: EventHandle(handle),
            driver: context.driver(),
            context: context.clone(),
            options,
            owned: false,
        }
    }

    /// Waits until the work before the event's last record has finished
    /// (`cuEventSynchronize`).
    #[inline]
    #[doc(alias = "cuEventSynchronize")]
    pub fn sync(&self) -> Result<()> {
        self.driver.event_synchronize(self.handle)
    }

    /// Whether the work before the event's last record has finished (`cuEventQuery`). An
    /// event never recorded is done.
    #[inline]
    #[doc(alias = "cuEventQuery")]
    pub fn is_done(&self) -> Result<bool> {
        self.driver.event_query(self.handle)
    }

    /// The time from `start` to this event, both recorded and complete, both with timing on
    /// (`cuEventElapsedTime`; its resolution is about half a microsecond).
    #[doc(alias = "cuEventElapsedTime")]
    pub fn elapsed_since(&self, start: &Event) -> Result<Duration> {
        for (name, event) in [("start", start), ("self", self)] {
            if !event.options.timing {
                return Err(Error::InvalidArgument {
                    name,
                    reason: "the event was created without timing; use EventOptions::timing()"
                        .to_owned(),
                });
            }
        }
        if start.device() != self.device() {
            return Err(Error::InvalidArgument {
                name: "start",
                reason: format!(
                    "it is an event of device {}, and this one of device {}; time events of \
                     one device",
                    start.device().ordinal(),
                    self.device().ordinal()
                ),
            });
        }
        let ms = self.driver.event_elapsed_time(start.handle, self.handle)?;
        if ms < 0.0 {
            return Err(Error::InvalidArgument {
                name: "start",
                reason: format!("it completed {} ms after this event", -ms),
            });
        }
        // A driver's answer is not trusted to be finite: `Duration` panics on NaN and infinity.
        Duration::try_from_secs_f64(f64::from(ms) / 1000.0).map_err(|_| Error::InvalidArgument {
            name: "self",
            reason: format!("the driver reported {ms} ms between the events, not a time"),
        })
    }

    /// The options the event was created with.
    pub fn options(&self) -> EventOptions {
        self.options
    }

    /// The context the event belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The device the event belongs to.
    pub fn device(&self) -> Device {
        self.context.device()
    }

    /// The raw `CUevent`, for calling other CUDA libraries; valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    pub(crate) fn handle(&self) -> EventHandle {
        self.handle
    }

    pub(crate) fn context_handle(&self) -> ContextHandle {
        self.context.handle()
    }
}
