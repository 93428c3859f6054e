//! Events: markers recorded in streams, for ordering and timing.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use crate::context::Context;
use crate::device::{Device, Uuid};
use crate::driver::{ContextHandle, Driver, EventHandle};
use crate::error::{Error, Result};
use crate::lifetime::current::with_current;
use crate::memory::ipc::{check_form, field, form_header};

/// `CU_EVENT_BLOCKING_SYNC`.
const BLOCKING_SYNC: u32 = 1;
/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: u32 = 2;
/// `CU_EVENT_INTERPROCESS`.
const INTERPROCESS: u32 = 4;

/// How to create an [`Event`]. The default is the cheapest event: no timing, spin-waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
/// green contexts, and events wrapped by [`Event::from_raw`], are never recycled. The one
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
    /// Set once a record of it went into a stream capture: the driver then refuses queries of
    /// it while the capture is open, so its handle is destroyed at the drop, not reused.
    captured: AtomicBool,
}

impl Drop for Event {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        if self.options.interprocess {
            // Destroyed before a new open of its handle can begin (see `ipc::destroy`).
            if let Err(e) = ipc::destroy(self.handle, || self.driver.event_destroy(self.handle)) {
                log::error!(
                    "destroying an interprocess event of device {}: {e}",
                    self.device().ordinal()
                );
            }
            return;
        }
        if self.context.is_primary() && !*self.captured.get_mut() {
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

    /// Exports an [`interprocess`](EventOptions::interprocess) event for other processes
    /// (`cuIpcGetEventHandle`): another process opens the handle with [`Event::open_ipc`],
    /// and then either process may record the event, wait for it on a stream, synchronise or
    /// query it. An event made without `interprocess` is [`Error::InvalidArgument`].
    ///
    /// Keep this event alive while any process uses the handle: the driver makes using an
    /// opened event whose exporter destroyed it undefined behaviour (in the opening process:
    /// [`Event::open_ipc`]'s contract).
    ///
    /// ```no_run
    /// use cuda_core::{Device, Event, EventOptions, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let done = stream.record_new(EventOptions::default().with_interprocess(true))?;
    /// let bytes = done.ipc_handle()?.to_bytes(); // send them to the other process
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuIpcGetEventHandle")]
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        if !self.options.interprocess {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the event was made without EventOptions::interprocess".to_owned(),
            });
        }
        // The driver asks for the event's context to be current (CUDA_ERROR_INVALID_CONTEXT
        // otherwise, seen on the 580 driver).
        let event = self.handle;
        let handle = self
            .context
            .with_current(|driver| driver.ipc_get_event_handle(event))?;
        Ok(IpcEventHandle {
            uuid: self.device().uuid()?.0,
            handle,
        })
    }

    /// Opens an event another process exported ([`Event::ipc_handle`]) in `device`'s primary
    /// context (`cuIpcOpenEventHandle`), destroyed on drop. It behaves as an event of this
    /// process made with `interprocess` and no timing: record it, wait for it, synchronise or
    /// query it. `device` must be the GPU the event belongs to; one handle is opened once at a
    /// time in a process (a second open while the first lives is [`Error::InvalidArgument`]:
    /// share the event instead).
    ///
    /// # Safety
    ///
    /// The exporting process must keep its event alive for as long as this one, or any wait
    /// queued on it, is in use: the driver makes any use after the exporter destroyed it
    /// undefined behaviour.
    #[doc(alias = "cuIpcOpenEventHandle")]
    pub unsafe fn open_ipc(handle: &IpcEventHandle, device: Device) -> Result<Event> {
        let own = device.uuid()?;
        if own.0 != handle.uuid {
            return Err(Error::InvalidArgument {
                name: "device",
                reason: format!(
                    "the event belongs to GPU {}, and device {} is GPU {own}",
                    Uuid(handle.uuid),
                    device.ordinal()
                ),
            });
        }
        let context = device.primary_context()?;
        let driver = context.driver();
        let event = ipc::open(&handle.handle, || {
            context.with_current(|driver| driver.ipc_open_event_handle(&handle.handle))
        })?;
        let options = EventOptions {
            interprocess: true,
            ..EventOptions::default()
        };
        Ok(Event::new(event, driver, context, options, true))
    }

    #[inline]
    fn new(
        handle: EventHandle,
        driver: &'static dyn Driver,
        context: Context,
        options: EventOptions,
        owned: bool,
    ) -> Event {
        Event {
            handle,
            driver,
            context,
            options,
            owned,
            records: AtomicU32::new(0),
            done_at: AtomicU32::new(0),
            captured: AtomicBool::new(false),
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
        self.captured.store(true, Ordering::Relaxed);
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
    /// (`cuEventSynchronize`).
    #[inline]
    #[doc(alias = "cuEventSynchronize")]
    pub fn sync(&self) -> Result<()> {
        let records = self.records_now();
        self.driver.event_synchronize(self.handle)?;
        self.note_done(records);
        Ok(())
    }

    /// Whether the work before the event's last record has finished (`cuEventQuery`). An
    /// event never recorded is done.
    #[inline]
    #[doc(alias = "cuEventQuery")]
    pub fn is_done(&self) -> Result<bool> {
        let records = self.records_now();
        let done = self.driver.event_query(self.handle)?;
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
        self.context.handle()
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

/// An interprocess event, described for another process ([`Event::ipc_handle`]): plain bytes
/// ([`to_bytes`](Self::to_bytes)), opened with [`Event::open_ipc`].
#[doc(alias("CUipcEventHandle", "cuIpcGetEventHandle"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcEventHandle {
    uuid: [u8; 16],
    handle: [u8; 64],
}

impl fmt::Debug for IpcEventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcEventHandle")
            .field("gpu", &Uuid(self.uuid).to_string())
            .finish_non_exhaustive()
    }
}

/// The magic of an [`IpcEventHandle`]'s bytes.
const EVENT_MAGIC: &[u8; 4] = b"CCEV";

impl IpcEventHandle {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 88;

    /// The GPU the event belongs to.
    pub fn gpu(&self) -> Uuid {
        Uuid(self.uuid)
    }

    /// The handle as bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0u8; Self::BYTES];
        bytes[..8].copy_from_slice(&form_header(EVENT_MAGIC));
        bytes[8..24].copy_from_slice(&self.uuid);
        bytes[24..].copy_from_slice(&self.handle);
        bytes
    }

    /// A handle from its bytes; bytes that are none are [`Error::InvalidArgument`].
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcEventHandle> {
        check_form(bytes, EVENT_MAGIC, Self::BYTES, "interprocess event handle")?;
        Ok(IpcEventHandle {
            uuid: field(bytes, 8),
            handle: field(bytes, 24),
        })
    }
}

/// The events this process opened from other processes' handles: one open per handle at a
/// time (whether the driver would give a second open its own event is not documented).
mod ipc {
    use std::sync::Mutex;

    use crate::driver::EventHandle;
    use crate::error::{Error, Result};

    static OPENED: Mutex<Vec<([u8; 64], EventHandle)>> = Mutex::new(Vec::new());

    /// Opens `handle` with `open`, unless this process has it open.
    pub(super) fn open(
        handle: &[u8; 64],
        open: impl FnOnce() -> Result<EventHandle>,
    ) -> Result<EventHandle> {
        let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        if opened.iter().any(|(h, _)| h == handle) {
            return Err(Error::InvalidArgument {
                name: "handle",
                reason: "this process has the event open already: share that Event (in an \
                         Arc, say) instead of opening it twice"
                    .to_owned(),
            });
        }
        let event = open()?;
        opened.push((*handle, event));
        Ok(event)
    }

    /// Destroys an interprocess event with `destroy`, and forgets it if it was opened here,
    /// under the lock: no open of the same handle runs until the driver has destroyed this
    /// one (should the driver answer a new open with the handle being destroyed).
    pub(super) fn destroy(event: EventHandle, destroy: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
        let destroyed = destroy();
        opened.retain(|(_, e)| *e != event);
        destroyed
    }

    /// Whether an open or a destroy is under way (for tests).
    #[cfg(test)]
    pub(super) fn busy() -> bool {
        OPENED.try_lock().is_err()
    }
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
    fn interprocess_events_have_the_driver_flag_and_their_handles_survive_their_bytes() {
        let options = EventOptions::default().with_interprocess(true);
        assert_eq!(flags_of(options), DISABLE_TIMING | INTERPROCESS);
        assert_eq!(flags_of(options.with_blocking_sync(true)), 7);
        assert_eq!(flags_of(EventOptions::default()) & INTERPROCESS, 0);
        let handle = IpcEventHandle {
            uuid: [3; 16],
            handle: std::array::from_fn(|i| i as u8 * 3),
        };
        let bytes = handle.to_bytes();
        assert_eq!(&bytes[..4], b"CCEV");
        assert_eq!(IpcEventHandle::from_bytes(&bytes).unwrap(), handle);
        assert_eq!(handle.gpu(), Uuid([3; 16]));
        let err = IpcEventHandle::from_bytes(&bytes[1..]).unwrap_err();
        assert!(
            err.to_string().contains("interprocess event handle"),
            "{err}"
        );
    }

    #[test]
    fn an_event_handle_is_opened_once_at_a_time() {
        let key = [0x5a; 64];
        let first = ipc::open(&key, || {
            Ok(EventHandle(std::ptr::without_provenance_mut(0x10)))
        });
        assert!(first.is_ok());
        let mut called = false;
        let second = ipc::open(&key, || {
            called = true;
            Ok(EventHandle(std::ptr::without_provenance_mut(0x20)))
        });
        assert!(
            matches!(second, Err(Error::InvalidArgument { name: "handle", .. })),
            "{second:?}"
        );
        assert!(!called, "refused before the driver");
        // Once the first is destroyed, the handle opens again; no open runs while the driver
        // destroys it (the registry is held).
        let mut destroyed = false;
        ipc::destroy(EventHandle(std::ptr::without_provenance_mut(0x10)), || {
            assert!(
                ipc::busy(),
                "the registry is held while the driver destroys"
            );
            destroyed = true;
            Ok(())
        })
        .unwrap();
        assert!(destroyed);
        assert!(
            ipc::open(&key, || Ok(EventHandle(std::ptr::without_provenance_mut(
                0x30
            ))))
            .is_ok()
        );
        ipc::destroy(EventHandle(std::ptr::without_provenance_mut(0x30)), || {
            Ok(())
        })
        .unwrap();
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
