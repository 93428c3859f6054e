//! Events: markers recorded in streams, for ordering and timing.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use crate::context::Context;
use crate::device::Device;
use crate::driver::{ContextHandle, Driver, EventHandle};
use crate::error::{Error, Result};
use crate::lifetime::current::with_current;
use crate::lifetime::ipc_registry;

/// `CU_EVENT_BLOCKING_SYNC`.
const BLOCKING_SYNC: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: u32 = 2;
/// `CU_EVENT_INTERPROCESS`.
const INTERPROCESS: u32 = 4;

/// How to create an [`Event`]. The default is the cheapest event: no timing, spin-waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventOptions {
    /// Record timestamps, so that [`Event::elapsed_since`] works (costs some speed).
    pub timing: bool,
    /// Make [`Event::sync`] block the thread instead of spinning.
    pub blocking_sync: bool,
    /// Make an event other processes can open (`CU_EVENT_INTERPROCESS`), to order their work
    /// after this process's: [`Event::ipc_handle`] exports it, [`Event::open_ipc`] opens it.
    /// It cannot record timing. Such events are never recycled.
    pub interprocess: bool,
}

crate::options::chainers!(EventOptions {
    with_timing(timing: bool);
    with_blocking_sync(blocking_sync: bool);
    with_interprocess(interprocess: bool);
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
/// # Recycling
///
/// Events of a device's primary context are recycled: dropping one gives its handle to the
/// dropping thread, which hands it to the next event it makes in that context with the same
/// options, so that creating and dropping events in a loop makes no driver call after the
/// first (a few nanoseconds, against the driver's 150-250 ns for `cuEventCreate` plus
/// `cuEventDestroy`). A recycled event behaves as a fresh one: it is done until recorded (a
/// handle whose last record may still be pending is reused only once `cuEventQuery` says it
/// completed), its timing and blocking flags are the ones asked for, and a wait queued on the
/// old event is unaffected (the driver takes the record a wait waits for when the wait is
/// queued). Each thread keeps at most 64 handles per context and options; beyond that,
/// dropped events are destroyed, and a thread's handles are destroyed when it ends. Events of
/// green contexts, events wrapped by [`Event::from_raw`] and events named for a profiler
/// (`nvtx::name_event`, feature `nvtx`) are never recycled. The one
/// visible difference: a handle seen through [`Event::as_raw`] can come back in a later event.
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
    /// `context`'s handle, kept beside the event's: a record compares it with the stream's
    /// without a load through `context`.
    context_handle: ContextHandle,
    context: Context,
    driver: &'static dyn Driver,
    options: EventOptions,
    /// Made here (destroyed on drop), or wrapped by [`Event::from_raw`].
    owned: bool,
    /// How many times the event was recorded (or its handle handed out by `as_raw`, which
    /// may record it elsewhere).
    records: AtomicU32,
    /// `records` as it was before a wait or query that found the event complete: when the two
    /// are equal, the last record is known complete.
    done_at: AtomicU32,
    /// Set once a record of it went into a stream capture (the driver then refuses queries of
    /// it while the capture is open), or once it was named for a profiler (a later event must
    /// not show under its name): its handle is destroyed at the drop, not reused.
    no_reuse: AtomicBool,
}

impl Drop for Event {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if self.options.interprocess {
            // Destroyed before a new open of its handle can begin (see
            // `lifetime::ipc_registry::destroy`).
            if let Err(e) =
                ipc_registry::destroy(self.handle, || self.driver.event_destroy(self.handle))
            {
                log::error!(
                    "destroying an interprocess event of device {}: {e}",
                    self.device().ordinal()
                );
            }
            return;
        }
        if self.context.is_primary() && !*self.no_reuse.get_mut() {
            let complete = *self.records.get_mut() == *self.done_at.get_mut();
            let flags = flags_of(self.options);
            if recycle::give(
                self.context.handle(),
                flags,
                self.driver,
                self.handle,
                complete,
            ) {
                return;
            }
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
        let flags = flags_of(options);
        if options.interprocess {
            return Event::create_interprocess(driver, handle, context, options);
        }
        if context.is_primary() {
            if let Some(handle) = recycle::take(handle, flags) {
                return Ok(Event::new(handle, driver, context, options, true));
            }
        }
        let handle = with_current(driver, handle, |driver| driver.event_create(flags))?;
        Ok(Event::new(handle, driver, context, options, true))
    }

    /// An event other processes can open: never recycled (a process that opened it would see
    /// the records of its next life).
    #[cold]
    fn create_interprocess(
        driver: &'static dyn Driver,
        handle: ContextHandle,
        context: Context,
        options: EventOptions,
    ) -> Result<Event> {
        if options.timing {
            return Err(Error::InvalidArgument {
                name: "options",
                reason: "an interprocess event cannot record timing (the driver needs \
                         CU_EVENT_DISABLE_TIMING with CU_EVENT_INTERPROCESS)"
                    .to_owned(),
            });
        }
        let device = context.device();
        if !device.properties().ipc_event_supported()? {
            return Err(Error::InvalidArgument {
                name: "options.interprocess",
                reason: format!(
                    "device {} does not support interprocess events \
                     (CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED is 0)",
                    device.ordinal()
                ),
            });
        }
        let flags = flags_of(options);
        let handle = with_current(driver, handle, |driver| driver.event_create(flags))?;
        Ok(Event::new(handle, driver, context, options, true))
    }

    #[inline]
    pub(crate) fn new(
        handle: EventHandle,
        driver: &'static dyn Driver,
        context: Context,
        options: EventOptions,
        owned: bool,
    ) -> Event {
        Event {
            handle,
            driver,
            context_handle: context.handle(),
            context,
            options,
            owned,
            records: AtomicU32::new(0),
            done_at: AtomicU32::new(0),
            no_reuse: AtomicBool::new(false),
        }
    }

    /// Notes a record of this event, queued by the caller (after the driver took it, so that a
    /// query that reads the new count is made after the record: release here, acquire there).
    #[inline]
    pub(crate) fn note_record(&self) {
        self.records.fetch_add(1, Ordering::Release);
    }

    /// Notes that a record of this event went into a stream capture.
    #[cold]
    pub(crate) fn note_captured(&self) {
        self.no_reuse.store(true, Ordering::Relaxed);
    }

    /// The handle, for a caller that keeps it beyond the event's life (an NVTX name): the
    /// event's handle is then destroyed at its drop, not reused.
    #[cfg(feature = "nvtx")]
    pub(crate) fn handle_kept(&self) -> EventHandle {
        self.no_reuse.store(true, Ordering::Relaxed);
        self.handle
    }

    /// The record count before a wait or query, for [`Event::note_done`].
    #[inline]
    fn records_now(&self) -> u32 {
        self.records.load(Ordering::Acquire)
    }

    /// Notes that the records counted in `records` (read before the wait or query that found
    /// the event complete) have completed.
    #[inline]
    fn note_done(&self, records: u32) {
        self.done_at.store(records, Ordering::Relaxed);
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
        Event::new(
            EventHandle(handle),
            context.driver(),
            context.clone(),
            options,
            false,
        )
    }

    /// Waits until the work before the event's last record has finished
    /// (`cuEventSynchronize`). Relaxed while a capture may be open, as [`Stream::sync`] is.
    ///
    /// [`Stream::sync`]: crate::Stream::sync
    #[inline]
    #[doc(alias = "cuEventSynchronize")]
    pub fn sync(&self) -> Result<()> {
        let records = self.records_now();
        // Through the door: relaxed while a capture may be open (see `crate::order`).
        let driver = self.driver;
        crate::order::query(driver, || driver.event_synchronize(self.handle))?;
        self.note_done(records);
        Ok(())
    }

    /// Waits, for at most `timeout`, until the work before the event's last record has
    /// finished; an event never recorded is done at once. As [`Stream::sync_timeout`]: it
    /// asks `cuEventQuery`, spinning for 20 µs and then sleeping at most 1 ms between
    /// questions, and returns [`Error::Timeout`] when the time is up (the work runs on).
    ///
    /// [`Stream::sync_timeout`]: crate::Stream::sync_timeout
    #[doc(alias = "cuEventQuery")]
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        crate::wait::until("the work before the event", timeout, || {
            self.is_done_relaxed()
        })
    }

    /// [`Event::is_done`] with this thread's capture mode relaxed whether or not a capture
    /// seems open: for the questions of a timed wait or a future, which another thread's
    /// global capture begun between the door's look and the driver's call would otherwise
    /// refuse, invalidating it (two more driver calls, on paths that sleep or yield anyway).
    pub(crate) fn is_done_relaxed(&self) -> Result<bool> {
        crate::order::relaxed(self.driver, || self.is_done())
    }

    /// Whether the work before the event's last record has finished (`cuEventQuery`). An
    /// event never recorded is done. Relaxed while a capture may be open, as
    /// [`Stream::sync`](crate::Stream::sync) is.
    #[inline]
    #[doc(alias = "cuEventQuery")]
    pub fn is_done(&self) -> Result<bool> {
        let records = self.records_now();
        let driver = self.driver;
        let done = crate::order::query(driver, || driver.event_query(self.handle))?;
        if done {
            self.note_done(records);
        }
        Ok(done)
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
        let records = (start.records_now(), self.records_now());
        // A recycled handle keeps its last life's record: an event never recorded in this one
        // is refused here, as a fresh event is (the driver would time the old record).
        for (name, count, event) in [("start", records.0, start), ("self", records.1, self)] {
            if count == 0 && event.owned {
                return Err(Error::InvalidArgument {
                    name,
                    reason: "the event was never recorded; record it on a stream first".to_owned(),
                });
            }
        }
        let ms = self.driver.event_elapsed_time(start.handle, self.handle)?;
        // The driver times only completed events.
        start.note_done(records.0);
        self.note_done(records.1);
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
        // Whoever holds the handle may record it: from now on, a drop asks the driver whether
        // the event is complete before its handle is reused.
        self.note_record();
        self.handle.0
    }

    pub(crate) fn handle(&self) -> EventHandle {
        self.handle
    }

    pub(crate) fn context_handle(&self) -> ContextHandle {
        self.context_handle
    }
}

/// The `CUevent_flags` of `options`.
#[inline]
fn flags_of(options: EventOptions) -> u32 {
    let mut flags = 0;
    if !options.timing {
        flags |= DISABLE_TIMING;
    }
    if options.blocking_sync {
        flags |= BLOCKING_SYNC;
    }
    if options.interprocess {
        flags |= INTERPROCESS;
    }
    flags
}

/// The recycled handles of primary-context events, per thread: see [`Event`]'s "Recycling".
mod recycle {
    use std::cell::RefCell;

    use crate::driver::{ContextHandle, Driver, EventHandle};
    use crate::error::Result;
    use crate::lifetime::recycle::{self, Lists, Recycled};

    /// The most handles a thread keeps per context and flags.
    pub(super) const KEPT: usize = 64;

    impl Recycled for EventHandle {
        const WHAT: &'static str = "event";

        fn done(self, driver: &'static dyn Driver) -> Result<bool> {
            driver.event_query(self)
        }

        fn destroy(self, driver: &'static dyn Driver) -> Result<()> {
            driver.event_destroy(self)
        }
    }

    thread_local! {
        static LISTS: RefCell<Lists<EventHandle>> = const { RefCell::new(Lists::new(KEPT)) };
    }

    /// A handle of `context` made with `flags` that this thread kept, whose last record is
    /// complete.
    #[inline]
    pub(super) fn take(context: ContextHandle, flags: u32) -> Option<EventHandle> {
        recycle::take(&LISTS, context, i64::from(flags))
    }

    /// Keeps `handle` for this thread's next event of `context` and `flags`; `complete` says
    /// its last record is known complete. `false`: the caller destroys it.
    #[inline]
    pub(super) fn give(
        context: ContextHandle,
        flags: u32,
        driver: &'static dyn Driver,
        handle: EventHandle,
        complete: bool,
    ) -> bool {
        recycle::give(&LISTS, context, i64::from(flags), driver, handle, complete)
    }

    /// How many handles this thread keeps for `context` and `flags` (for tests).
    #[cfg(test)]
    pub(crate) fn kept(context: ContextHandle, flags: u32) -> usize {
        recycle::kept(&LISTS, context, i64::from(flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interprocess_events_have_the_driver_flag() {
        let options = EventOptions::default().with_interprocess(true);
        assert_eq!(flags_of(options), DISABLE_TIMING | INTERPROCESS);
        assert_eq!(flags_of(options.with_blocking_sync(true)), 7);
        assert_eq!(flags_of(EventOptions::default()) & INTERPROCESS, 0);
    }

    /// A burst of events alive at once, then dropped, leaves at most 64 handles kept.
    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn a_burst_keeps_a_bounded_number_of_handles() {
        std::thread::spawn(|| {
            let device = Device::new(0).unwrap();
            let context = device.primary_context().unwrap().handle();
            let burst: Vec<Event> = (0..1000)
                .map(|_| device.create_event(EventOptions::default()).unwrap())
                .collect();
            assert_eq!(recycle::kept(context, DISABLE_TIMING), 0);
            drop(burst);
            assert_eq!(recycle::kept(context, DISABLE_TIMING), recycle::KEPT);
            // Taking them back empties the list.
            let again: Vec<Event> = (0..recycle::KEPT)
                .map(|_| device.create_event(EventOptions::default()).unwrap())
                .collect();
            assert_eq!(recycle::kept(context, DISABLE_TIMING), 0);
            drop(again);
        })
        .join()
        .unwrap();
    }
}
