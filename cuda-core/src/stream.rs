//! Streams: ordered queues of work on a device.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;

use crate::context::Context;
use crate::device::Device;
use crate::driver::{ContextHandle, Driver, StreamHandle};
use crate::error::{DriverCode, Error, Result};
use crate::event::{Event, EventOptions};
use crate::lifetime::current::with_current;
use crate::lifetime::small::SmallCache;

mod calls;
mod captured_homes;
mod recycle;

pub(crate) use captured_homes::take_captured_homes;

/// `CU_STREAM_NON_BLOCKING`.
const NON_BLOCKING: u32 = 1;

/// How to create a [`Stream`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Whether the stream runs concurrently with the legacy default stream (`true`, the
    /// default) or synchronises with it.
    pub non_blocking: bool,
    /// The priority, within [`Device::stream_priority_range`]; lower numbers run first.
    /// `None` is the default priority.
    pub priority: Option<i32>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            non_blocking: true,
            priority: None,
        }
    }
}

crate::options::chainers!(StreamOptions {
    with_non_blocking(non_blocking: bool);
    with_priority(priority: i32) => some;
});

/// A CUDA stream. Cheap to clone (a reference count); the stream is destroyed when the last
/// clone drops, after the work already queued on it (the driver finishes it).
///
/// # Recycling
///
/// Non-blocking streams of a device's primary context are recycled: the last clone's drop
/// gives the handle to the dropping thread, which reuses it for its next stream of that
/// context and priority once the stream is idle, so that work queued before the drop never
/// orders work queued after the reuse. A stream that was never given work since it was last
/// known idle is reused at once; one that was is reused once `cuStreamQuery` says all its work
/// is done, and waits apart until it is. Creating and dropping such streams in a loop then
/// costs no driver call, or one `cuStreamQuery` when each had work, instead of
/// `cuStreamCreate` and `cuStreamDestroy` (several microseconds). Each thread keeps at most 16 per context and priority; beyond that,
/// dropped streams are destroyed, and a thread's streams are destroyed when it ends. Blocking
/// streams, green contexts' streams, streams wrapped by [`Stream::from_raw`], streams whose
/// raw handle was taken with [`Stream::as_raw`] and streams named for a profiler
/// (`nvtx::name_stream`, feature `nvtx`) are never recycled.
///
/// Recording, waiting, synchronising and querying make exactly the driver call they name: no
/// context switch, no lock, no allocation.
///
/// ```no_run
/// use cuda_core::{Device, EventOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let a = device.create_stream(StreamOptions::default())?;
/// let b = device.create_stream(StreamOptions::default().with_priority(device.stream_priority_range()?.1))?;
/// let done = a.record_new(EventOptions::default())?;
/// b.wait(&done)?;          // b's later work waits for a's work so far
/// b.sync()?;
/// assert!(a.is_done()?);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "CUstream")]
#[derive(Clone)]
pub struct Stream {
    inner: Arc<StreamInner>,
}

struct StreamInner {
    handle: StreamHandle,
    /// The context's device, kept here: launches and copies ask for it on every call.
    device: Device,
    /// `context`'s handle, kept here: a record compares it with the event's without a load
    /// through `context`.
    context_handle: ContextHandle,
    context: Context,
    driver: &'static dyn Driver,
    kind: Kind,
    /// For a non-blocking stream made here in a primary context: its priority, under which a
    /// dropped stream's handle is kept for reuse (see [`Stream`]'s "Recycling").
    recyclable: Option<i32>,
    /// Whether the stream may synchronise with the legacy default stream (a blocking stream, a
    /// per-thread default stream, or one wrapped from elsewhere, whose flags are not read):
    /// such a stream joining a capture makes the driver refuse work on the legacy stream, so
    /// its waits pass the legacy stream's gate while a capture is open.
    may_block: bool,
    /// Set once the raw handle was handed out: work queued through it is not ours to see, so
    /// the stream is destroyed rather than reused.
    raw_used: AtomicBool,
    /// Set by the first call that may queue work on the handle: until then the stream is as
    /// idle as it was made or taken back (so its reuse needs no `cuStreamQuery`).
    worked: AtomicBool,
    /// Set while a capture begun through [`Stream::begin_capture`] has not ended: dropped
    /// then, the stream ends it (discarding the graph) and is destroyed, not reused.
    capturing: AtomicBool,
    /// Set when work captured on it, in a capture begun here, used a buffer of its own: the
    /// graph the capture ends in is then ordered with it where it launches elsewhere.
    own_captured: AtomicBool,
    /// Small buffers of the device's default pool freed on this stream (streams made here
    /// only: see `lifetime::small`).
    small: SmallCache,
    /// The event this stream records for others to wait on ([`Stream::wait_for`]), made on
    /// first use. One is enough: a wait captures the event's last record when it is queued,
    /// and every record of this event is on this stream, so a later record only ever marks a
    /// later point of it.
    order: OnceLock<Event>,
    /// Buffers dropped while this stream captured (by a graph's release, say), whose free
    /// would have been captured: freed on this stream once it captures no more (see
    /// [`Stream::defer_free`]).
    deferred: Mutex<Vec<Deferred>>,
    /// Whether `deferred` may hold any: one load on the paths that drain it.
    has_deferred: AtomicBool,
}

/// A free put off while a capture was open: the free itself (given the stream to queue it on,
/// the memory's deallocation stream) and the memory's size. The buffer that makes it holds
/// what the free needs (its resource), so the stream needs to know nothing of memory
/// resources.
pub(crate) type Deferred = (Box<dyn FnOnce(&Stream) -> Result<()> + Send>, usize);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Created here; destroyed on drop.
    Owned,
    /// The legacy default stream: the driver resolves it through the current context, so
    /// operations make the stream's context current around their call.
    Legacy,
    /// The per-thread default stream of the thread that made this value: the driver resolves
    /// it through the calling thread as well, so it is used from that thread only (from
    /// another, the same handle would be that thread's own stream).
    PerThread(ThreadId),
    /// Someone else's stream, wrapped without owning it.
    Borrowed,
}

impl Drop for Stream {
    #[inline]
    fn drop(&mut self) {
        // The last value of the stream frees what was put off during a capture (the capture
        // has ended by now, or ends below in StreamInner's drop, which cannot free through a
        // resource without a Stream).
        if self.inner.has_deferred.load(Ordering::Acquire) && Arc::strong_count(&self.inner) == 1 {
            self.drop_deferred();
        }
    }
}

impl Stream {
    #[cold]
    fn drop_deferred(&self) {
        if !self.drain_deferred_slow() {
            // Still capturing (a capture this stream joined, or, for the legacy stream, one a
            // blocking stream of its context takes part in): the frees cannot be ordered now.
            // The stream is kept for them, and frees them once no capture is open.
            let kept = self.clone();
            crate::lifetime::captures::after_captures_run(Box::new(move || {
                if !kept.drain_deferred_slow() {
                    log::error!(
                        "buffers freed while their stream captured are kept (leaked): the \
                         stream still captures once no capture of the crate's is open"
                    );
                }
            }));
        }
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        let captured = *self.capturing.get_mut();
        if captured {
            // A capture left open (a panic between its begin and end, say): ending it lets
            // the frees below run instead of being captured, and, for a global capture, lets
            // every other thread make the calls it forbids again.
            let _ending = crate::lifetime::captures::ending();
            match self.driver.stream_end_capture(self.handle) {
                Ok(graph) => {
                    crate::lifetime::captures::capture_ended(self.handle.0 as usize);
                    if !graph.0.is_null() {
                        if let Err(e) = self.driver.graph_destroy(graph) {
                            log::error!("destroying the graph of an unended capture: {e}");
                        }
                    }
                }
                Err(e) => {
                    // Counted open still where the driver keeps it open: a refused end may or
                    // may not have ended it (one ended from another thread than its own stays
                    // open by the documentation, and the 580 driver ends it), so the driver
                    // says which, as for `end_capture`. Counted open for good, it would make
                    // every later question of capture go to the driver, and keep busy handles
                    // from being recycled.
                    let open = e.driver_code() == Some(DriverCode::STREAM_CAPTURE_WRONG_THREAD)
                        && !matches!(self.driver.stream_is_capturing(self.handle), Ok(0));
                    if !open {
                        crate::lifetime::captures::capture_ended(self.handle.0 as usize);
                    }
                    log::debug!("ending the capture of a dropped stream: {e}");
                }
            }
        }
        if !captured
            && crate::lifetime::captures::captures_open()
            && !matches!(self.driver.stream_is_capturing(self.handle), Ok(0))
        {
            // In a capture it joined (another stream's): its kept buffers' frees and its
            // destruction would go into that capture, and the capture could not be joined
            // back. Both wait until no capture is open; the handle is never recycled.
            crate::lifetime::captures::after_captures(crate::lifetime::captures::Later {
                driver: self.driver,
                handle: self.handle,
                small: self.small.drain().collect(),
                destroy: self.kind == Kind::Owned,
                _context: Box::new(self.context.clone()),
            });
            return;
        }
        for ptr in self.small.drain() {
            *self.worked.get_mut() = true;
            if let Err(e) = self.driver.mem_free_async(ptr, self.handle) {
                log::error!("freeing a kept small buffer: {e}");
            }
        }
        if let (Some(priority), false, false) =
            (self.recyclable, *self.raw_used.get_mut(), captured)
        {
            let idle = !*self.worked.get_mut();
            if recycle::give(
                self.context.handle(),
                priority,
                self.driver,
                self.handle,
                idle,
            ) {
                return;
            }
        }
        if self.kind == Kind::Owned {
            if let Err(e) = self.driver.stream_destroy(self.handle) {
                log::error!(
                    "destroying a stream of device {}: {e}",
                    self.context.device().ordinal()
                );
            }
        }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("handle", &self.inner.handle.0)
            .field("device", &self.device().ordinal())
            .finish()
    }
}

impl PartialEq for Stream {
    /// The same stream: the same handle in the same context (and, for per-thread default
    /// streams, of the same thread).
    fn eq(&self, other: &Self) -> bool {
        let thread = |kind: Kind| match kind {
            Kind::PerThread(thread) => Some(thread),
            _ => None,
        };
        self.inner.handle == other.inner.handle
            && self.inner.context == other.inner.context
            && thread(self.inner.kind) == thread(other.inner.kind)
    }
}

impl Eq for Stream {}

/// A stream not kept alive: what work put off until captures end holds, so that a stream
/// dropped meanwhile still ends its own capture (its drop does).
#[derive(Clone)]
pub(crate) struct WeakStream(std::sync::Weak<StreamInner>);

impl WeakStream {
    /// The stream, where some clone of it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Stream> {
        self.0.upgrade().map(|inner| Stream { inner })
    }

    /// Whether this refers to `stream` (that value or a clone of it), with no reference
    /// counted.
    pub(crate) fn is(&self, stream: &Stream) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&stream.inner))
    }

    /// Whether this and `other` refer to one stream.
    pub(crate) fn same(&self, other: &WeakStream) -> bool {
        std::sync::Weak::ptr_eq(&self.0, &other.0)
    }

    /// Whether some clone of the stream is still alive.
    pub(crate) fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl Stream {
    /// A reference to this stream that does not keep it alive.
    pub(crate) fn downgrade(&self) -> WeakStream {
        WeakStream(Arc::downgrade(&self.inner))
    }

    pub(crate) fn create(context: Context, options: StreamOptions) -> Result<Stream> {
        match context.green_handle() {
            // Green contexts make their streams directly, and only non-blocking ones.
            Some(green) => {
                if let Some(priority) = options.priority {
                    check_priority(context.device(), priority)?;
                }
                let handle = context.driver().green_ctx_stream_create(
                    green,
                    NON_BLOCKING,
                    options.priority.unwrap_or(0),
                )?;
                Ok(Stream::wrap_with(handle, context, Kind::Owned, None, false))
            }
            None => Stream::create_in(context.driver(), context.handle(), context, options),
        }
    }

    /// [`Stream::create`] in a context that is not green, with its driver and handle read by
    /// the caller, which may hold them closer at hand than `context` does.
    #[inline]
    pub(crate) fn create_in(
        driver: &'static dyn Driver,
        handle: ContextHandle,
        context: Context,
        options: StreamOptions,
    ) -> Result<Stream> {
        if let Some(priority) = options.priority {
            check_priority(context.device(), priority)?;
        }
        let flags = if options.non_blocking {
            NON_BLOCKING
        } else {
            0
        };
        let recyclable =
            (options.non_blocking && context.is_primary()).then(|| options.priority.unwrap_or(0));
        if let Some(priority) = recyclable {
            if let Some(reused) = recycle::take(handle, priority) {
                return Ok(Stream::wrap_recyclable(reused, context, priority));
            }
        }
        let handle = with_current(driver, handle, |driver| {
            driver.stream_create(flags, options.priority)
        })?;
        Ok(match recyclable {
            Some(priority) => Stream::wrap_recyclable(handle, context, priority),
            None => Stream::wrap_with(handle, context, Kind::Owned, None, !options.non_blocking),
        })
    }

    fn wrap_recyclable(handle: StreamHandle, context: Context, priority: i32) -> Stream {
        // Recyclable streams are non-blocking.
        Stream::wrap_with(handle, context, Kind::Owned, Some(priority), false)
    }

    pub(crate) fn legacy_default(context: Context) -> Stream {
        Stream::wrap(StreamHandle::LEGACY, context, Kind::Legacy)
    }

    /// The legacy default stream of `device`'s primary context (`CU_STREAM_LEGACY`): what
    /// [`Device::default_stream`] gives unless `CUDA_CORE_PER_THREAD_DEFAULT_STREAM=1` is set,
    /// whatever that variable says.
    #[doc(alias = "CU_STREAM_LEGACY")]
    pub fn legacy(device: Device) -> Result<Stream> {
        Ok(Stream::legacy_default(device.primary_context()?))
    }

    /// The calling thread's per-thread default stream of `device`'s primary context. The
    /// driver resolves this stream through the calling thread, so the value belongs to the
    /// thread that made it: used from another thread (it may be sent or shared, as any
    /// stream), every operation on it is [`Error::InvalidArgument`], rather than acting on
    /// that other thread's stream. Compared with `==`, the streams of two threads differ. (See
    /// [`Device::default_stream`] for a driver behaviour with green contexts.)
    #[doc(alias = "CU_STREAM_PER_THREAD")]
    pub fn per_thread_default(device: Device) -> Result<Stream> {
        Ok(Stream::wrap(
            StreamHandle::PER_THREAD,
            device.primary_context()?,
            Kind::PerThread(std::thread::current().id()),
        ))
    }

    /// Wraps a stream made elsewhere (by another library) without taking ownership: dropping
    /// the result does not destroy it. Its context is read with `cuStreamGetCtx`: `device`'s
    /// primary context, or another context of `device` (one the other library made, or a
    /// green context), which the result then holds as [`Context::from_raw`] would wrap it,
    /// without taking ownership either.
    ///
    /// A stream of another device's context is refused, naming both devices.
    ///
    /// # Safety
    ///
    /// `handle` must be a valid `CUstream` of a context of `device`, and must stay valid (and
    /// so must its context) for as long as the result or any clone of it is used.
    #[doc(alias = "cuStreamGetCtx")]
    pub unsafe fn from_raw(handle: *mut std::ffi::c_void, device: Device) -> Result<Stream> {
        let primary = device.primary_context()?;
        let handle = StreamHandle(handle);
        let owner = primary.driver().stream_get_ctx(handle)?;
        if owner == primary.handle() {
            return Ok(Stream::wrap(handle, primary, Kind::Borrowed));
        }
        // SAFETY: the stream's own context, which stays valid while the stream does (the
        // caller keeps the stream, and so its context, valid while the result is used).
        let context = unsafe { Context::from_raw(owner.0) }?;
        if context.device() != device {
            return Err(Error::InvalidArgument {
                name: "handle",
                reason: format!(
                    "the stream belongs to a context of device {}, not of device {}",
                    context.device().ordinal(),
                    device.ordinal()
                ),
            });
        }
        Ok(Stream::wrap(handle, context, Kind::Borrowed))
    }

    /// Wraps `handle`, taken to synchronise with the legacy default stream (see
    /// `StreamInner::may_block`) unless it is that stream.
    fn wrap(handle: StreamHandle, context: Context, kind: Kind) -> Stream {
        Stream::wrap_with(handle, context, kind, None, kind != Kind::Legacy)
    }

    fn wrap_with(
        handle: StreamHandle,
        context: Context,
        kind: Kind,
        recyclable: Option<i32>,
        may_block: bool,
    ) -> Stream {
        Stream {
            inner: Arc::new(StreamInner {
                handle,
                device: context.device(),
                driver: context.driver(),
                context_handle: context.handle(),
                context,
                kind,
                recyclable,
                may_block,
                raw_used: AtomicBool::new(false),
                worked: AtomicBool::new(false),
                capturing: AtomicBool::new(false),
                own_captured: AtomicBool::new(false),
                small: SmallCache::default(),
                deferred: Mutex::new(Vec::new()),
                has_deferred: AtomicBool::new(false),
                order: OnceLock::new(),
            }),
        }
    }

    /// Whether `other` is this stream: the same value (one pointer compare, the hot case), or
    /// another wrapping the same handle of the same context.
    #[inline]
    pub(crate) fn same_as(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) || self.same_handle(other)
    }

    #[cold]
    fn same_handle(&self, other: &Stream) -> bool {
        self == other
    }

    /// Orders later work on this stream after the work queued on `other` so far: `other`
    /// records its order event, this stream waits on it (`cuEventRecord`, `cuStreamWaitEvent`).
    /// Nothing when they are the same stream. Refused ([`Error::Capture`], nothing queued)
    /// where the two streams are not in the same capture (or both in none): the wait would
    /// pull this stream into `other`'s capture, or, on a capturing stream, wait for an event
    /// recorded outside its capture, which the driver refuses by invalidating the capture.
    pub(crate) fn wait_for(&self, other: &Stream) -> Result<()> {
        if self.same_as(other) {
            return Ok(());
        }
        // Through the door of both: no capture begins on either between the question and the
        // wait.
        let _door = crate::order::Door::enter(&[self, other]);
        if crate::lifetime::captures::captures_open() && self.capture_now() != other.capture_now() {
            return Err(Error::Capture {
                reason: "ordering one stream after another across a capture's edge (one \
                         captures and the other does not, or they are in two captures): a \
                         wait would pull the stream into the capture, or break it; order them \
                         before the capture begins or after it ends"
                    .to_owned(),
            });
        }
        self.wait_for_unchecked(other)
    }

    /// [`Stream::wait_for`] without its capture check: for a caller that checked already, and
    /// for [`Stream::wait_stream`], whose waits fork and join captures on purpose.
    pub(crate) fn wait_for_unchecked(&self, other: &Stream) -> Result<()> {
        if self.same_as(other) {
            return Ok(());
        }
        let event = other.order_event()?;
        other.record(event)?;
        self.wait(event)
    }

    /// The capture this stream is in, as the driver says (`cuStreamGetCaptureInfo`): `None`
    /// outside captures; a failed question is an unknown capture (`Some(u64::MAX)`).
    pub(crate) fn capture_now(&self) -> Option<u64> {
        match self.capture_query(|driver, handle| driver.stream_capture_info(handle)) {
            Ok((0, _)) => None,
            Ok((_, id)) => Some(id),
            Err(_) => Some(u64::MAX),
        }
    }

    /// The stream's cache of small default-pool buffers, for a stream made here.
    #[inline]
    pub(crate) fn small_cache(&self) -> Option<&SmallCache> {
        (self.inner.kind == Kind::Owned).then_some(&self.inner.small)
    }

    /// This stream's order event, made on first use in the stream's context.
    pub(crate) fn order_event(&self) -> Result<&Event> {
        if let Some(event) = self.inner.order.get() {
            return Ok(event);
        }
        let event = Event::create(self.inner.context.clone(), EventOptions::default())?;
        // A racing thread may have set one first: keep theirs (ours is destroyed).
        Ok(self.inner.order.get_or_init(|| event))
    }

    /// Whether the stream captures: a capture begun through it is open, or (asked of the
    /// driver, `cuStreamIsCapturing`, only while some capture begun through this crate is open:
    /// see `order`) it joined one through an event wait. Outside captures, two loads.
    #[inline]
    pub(crate) fn capturing(&self) -> bool {
        self.inner.capturing.load(Ordering::Relaxed)
            || (crate::lifetime::captures::captures_open() && self.captures_now())
    }

    /// Whether this is the legacy default stream (which `cuMemcpyBatchAsync` refuses).
    #[inline]
    pub(crate) fn is_legacy(&self) -> bool {
        self.inner.kind == Kind::Legacy
    }

    /// Keeps a free for later: the memory's deallocation stream captures, and a free queued
    /// now would be captured (freed by every launch of the graph, never now). Freed by
    /// [`drain_deferred`](Self::drain_deferred) once the stream captures no more.
    pub(crate) fn defer_free(&self, free: Deferred) {
        let mut deferred = self
            .inner
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        deferred.push(free);
        self.inner.has_deferred.store(true, Ordering::Release);
    }

    /// Frees, in order on this stream, the buffers whose free was put off while it captured,
    /// if it captures no more.
    #[inline]
    pub(crate) fn drain_deferred(&self) {
        if self.inner.has_deferred.load(Ordering::Acquire) {
            self.drain_deferred_slow();
        }
    }

    /// Frees what was put off, unless the stream still captures (`false` then).
    #[cold]
    fn drain_deferred_slow(&self) -> bool {
        if self.capturing() {
            return false;
        }
        let frees = {
            let mut deferred = self
                .inner
                .deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            self.inner.has_deferred.store(false, Ordering::Release);
            std::mem::take(&mut *deferred)
        };
        for (free, size) in frees {
            if let Err(e) = free(self) {
                log::error!("freeing a buffer of {size} bytes put off during a capture: {e}");
            }
        }
        true
    }

    /// Whether a capture `begin_capture` began on this stream is open, by the crate's flag.
    #[inline]
    pub(crate) fn began_capture(&self) -> bool {
        self.inner.capturing.load(Ordering::Acquire)
    }

    /// Notes, where a capture begun here is open, that work captured on this stream uses a
    /// buffer of its own (two loads otherwise; a store the first time in a capture).
    #[inline]
    pub(crate) fn note_own_home(&self) {
        let inner = &*self.inner;
        if inner.capturing.load(Ordering::Relaxed) && !inner.own_captured.load(Ordering::Relaxed) {
            inner.own_captured.store(true, Ordering::Relaxed);
        }
    }

    /// Whether work of the capture begun here that is ending used a buffer of this stream's
    /// ([`Stream::note_own_home`]), forgotten for the next capture.
    pub(crate) fn take_own_captured(&self) -> bool {
        self.inner.own_captured.swap(false, Ordering::Relaxed)
    }

    /// Begins a capture in mode `code` (`cuStreamBeginCapture`) through the gate that keeps
    /// captures and context synchronisations apart, flagged and counted open where it
    /// succeeds.
    pub(crate) fn begin_capture_code(&self, code: u32) -> Result<()> {
        // Through the door of this stream: a capture does not begin between the steps of
        // another thread's cross-stream ordering on it (its wait back would then be captured,
        // or refused for the capture's isolation, invalidating it).
        let _door = crate::order::Door::enter(&[self]);
        // Begun outside the legacy stream's gate (whose lock the capture gate holds here):
        // the driver refuses to capture the legacy stream in any case.
        let _steady = crate::lifetime::captures::begin(
            self.inner.context_handle.0 as usize,
            self.inner.handle.0 as usize,
            || {
                self.note_work();
                self.capture_query(|driver, handle| driver.stream_begin_capture(handle, code))
            },
        )?;
        // Flagged before any end can run (the guard keeps ends off until then).
        self.inner.own_captured.store(false, Ordering::Relaxed);
        self.inner.capturing.store(true, Ordering::Release);
        Ok(())
    }

    /// Flags the capture begun here ended unless `open`, counting it ended then.
    pub(crate) fn set_capturing(&self, open: bool) {
        if !open && self.inner.capturing.swap(false, Ordering::AcqRel) {
            crate::lifetime::captures::capture_ended(self.inner.handle.0 as usize);
        }
    }

    /// Lowers the flag of a capture begun here before the driver's end, so that no thread
    /// reads a capture the driver has ended (while it is down, `capturing` asks the driver,
    /// which says the capture is open until it ends): whether it was up. The capture stays
    /// counted open until [`Stream::capture_end_done`].
    pub(crate) fn lower_capturing(&self) -> bool {
        self.inner.capturing.swap(false, Ordering::AcqRel)
    }

    /// After the driver's end of a capture whose flag [`Stream::lower_capturing`] lowered
    /// (`flagged`): raised again where it is still `open`, else counted ended.
    pub(crate) fn capture_end_done(&self, flagged: bool, open: bool) {
        if open {
            self.inner.capturing.store(true, Ordering::Release);
        } else if flagged {
            crate::lifetime::captures::capture_ended(self.inner.handle.0 as usize);
        }
    }

    /// Whether this is another thread's per-thread default stream, whose handle would name
    /// the calling thread's own stream here.
    #[inline]
    pub(crate) fn is_other_threads(&self) -> bool {
        matches!(self.inner.kind, Kind::PerThread(thread) if thread != std::thread::current().id())
    }

    /// Waits until all work queued on the stream has finished (`cuStreamSynchronize`).
    ///
    /// While a capture begun through this crate may be open, it is made with this thread's
    /// capture mode relaxed, so that another thread's global capture neither refuses it nor
    /// is invalidated by it (a capturing stream's own synchronisation is refused all the same, and
    /// invalidates its capture).
    #[inline]
    #[doc(alias = "cuStreamSynchronize")]
    pub fn sync(&self) -> Result<()> {
        self.query(|driver, handle| driver.stream_synchronize(handle))
    }

    /// Waits, for at most `timeout`, until all work queued on the stream has finished.
    ///
    /// The driver's wait takes no deadline, so this asks `cuStreamQuery` until the stream is
    /// done: it spins for the first 20 µs, then sleeps between questions (at most 1 ms), so it
    /// returns within about a millisecond of the work's end. A stream's failure is returned
    /// as [`Stream::sync`] returns it. When the time is up it returns [`Error::Timeout`]; the
    /// work is still queued and runs on (and everything it uses is kept until it has). On a
    /// capturing stream it fails at once, as [`Stream::sync`] does, and invalidates the capture.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::{Device, Error, StreamOptions};
    ///
    /// let stream = Device::new(0)?.create_stream(StreamOptions::default())?;
    /// // ... queue work ...
    /// match stream.sync_timeout(Duration::from_secs(2)) {
    ///     Ok(()) => println!("done"),
    ///     Err(Error::Timeout { after, .. }) => println!("still running after {after:?}"),
    ///     Err(other) => return Err(other),
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuStreamQuery")]
    pub fn sync_timeout(&self, timeout: std::time::Duration) -> Result<()> {
        crate::wait::until("the stream's work", timeout, || self.is_done_relaxed())
    }

    /// [`Stream::is_done`] with this thread's capture mode relaxed whether or not a capture
    /// seems open: for the questions of a timed wait, which another thread's global capture
    /// begun between the door's look and the driver's call would otherwise refuse,
    /// invalidating it (two more driver calls, on a path that sleeps anyway).
    pub(crate) fn is_done_relaxed(&self) -> Result<bool> {
        crate::order::relaxed(self.inner.driver, || self.is_done())
    }

    /// [`Stream::sync`] after queueing work that uses borrowed host memory, before the borrow
    /// ends. The synchronisation goes through the door ([`Stream::query`]): while a capture
    /// may be open it is made with this thread's capture mode relaxed, so another thread's
    /// global capture neither refuses it nor is invalidated by it. Should the driver still
    /// refuse it for a capture (one the crate does not count, begun by another library),
    /// returning would hand the memory back while the driver may still read or write it: the
    /// wait is made again relaxed, and retried until the driver takes it. On a stream that captures
    /// itself, the refusal is returned at once (the work was recorded, not queued, and the
    /// refused synchronisation invalidated the capture, so no graph holds it).
    pub(crate) fn sync_for_host(&self) -> Result<()> {
        let first = self.sync();
        match &first {
            Err(error) if crate::order::is_capture_refusal(error) => {}
            _ => return first,
        }
        if self.inner.capturing.load(Ordering::Relaxed) || self.captures_now() {
            // The host work just queued was captured, not run: the graph would read or write
            // host memory the caller gets back now. The refused synchronisation invalidated
            // the capture, so no graph with that work can be made (the model test found the
            // copy captured into a valid graph when this returned without it).
            return first;
        }
        // Refused outside the captures the crate counts (one begun by another library, in
        // global mode, say): relaxed from here on, and retried until the driver takes it.
        let driver = self.inner.driver;
        let start = std::time::Instant::now();
        let mut warned = false;
        loop {
            let Err(error) = crate::order::relaxed(driver, || self.sync()) else {
                return Ok(());
            };
            if !crate::order::is_capture_refusal(&error) {
                return Err(error);
            }
            if !warned && start.elapsed() > std::time::Duration::from_secs(1) {
                log::warn!(
                    "waiting for host memory's copy: the driver refuses to synchronise while \
                     a stream capture is open ({error}); retrying until it ends"
                );
                warned = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Whether the driver says this stream captures (a failed question counts as yes, so that
    /// the caller does not wait for work that may never run). Another thread's per-thread
    /// default stream cannot be asked from here (the handle would name this thread's own), and
    /// every use of it from here is refused: it is not a capture of this thread's to see.
    fn captures_now(&self) -> bool {
        if self.is_other_threads() {
            return false;
        }
        // A question the driver answers on the legacy stream even while a blocking stream
        // captures (with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), invalidating nothing.
        !matches!(
            self.capture_query(|driver, handle| driver.stream_is_capturing(handle)),
            Ok(0)
        )
    }

    /// Whether all work queued on the stream has finished (`cuStreamQuery`).
    ///
    /// While a capture begun through this crate may be open, it is made with this thread's
    /// capture mode relaxed, so that another thread's global capture neither refuses it nor
    /// is invalidated by it (a capturing stream's own query is refused all the same, and
    /// invalidates its capture).
    #[inline]
    #[doc(alias = "cuStreamQuery")]
    pub fn is_done(&self) -> Result<bool> {
        self.query(|driver, handle| driver.stream_query(handle))
    }

    /// Records `event` at this point of the stream (`cuEventRecord`). The event must belong to
    /// the stream's context.
    #[inline]
    #[doc(alias = "cuEventRecord")]
    pub fn record(&self, event: &Event) -> Result<()> {
        if event.context_handle() != self.inner.context_handle {
            return Err(self.foreign_event(event));
        }
        self.queue(|driver, handle| driver.event_record(event.handle(), handle))?;
        // Counted after the driver took it: a query racing this record then never counts it
        // as complete before it was queued.
        event.note_record();
        if crate::lifetime::captures::captures_open() && self.capturing() {
            event.note_captured();
        }
        Ok(())
    }

    #[cold]
    fn foreign_event(&self, event: &Event) -> Error {
        Error::InvalidArgument {
            name: "event",
            reason: format!(
                "the event belongs to another context (of device {}) than the stream (of device \
                 {}); create it with the stream's context",
                event.device().ordinal(),
                self.device().ordinal()
            ),
        }
    }

    /// Creates an event in the stream's context and records it here.
    #[doc(alias("cuEventCreate", "cuEventRecord"))]
    #[must_use = "the event is what waits on this point of the stream; dropped, it is destroyed unused"]
    pub fn record_new(&self, options: EventOptions) -> Result<Event> {
        let event = Event::create(self.inner.context.clone(), options)?;
        self.record(&event)?;
        Ok(event)
    }

    /// Makes later work on this stream wait for `event` (`cuStreamWaitEvent`). The event may
    /// belong to any context or device.
    #[inline]
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn wait(&self, event: &Event) -> Result<()> {
        let wait =
            |driver: &'static dyn Driver, handle| driver.stream_wait_event(handle, event.handle());
        if crate::lifetime::captures::captures_open() {
            return self.join_wait(wait);
        }
        self.queue(wait)
    }

    /// [`Stream::wait`] while a capture may be open, when the wait may make this stream join
    /// one. Through the door of this stream: not between the steps of another thread's
    /// cross-stream ordering on it (whose wait back would be refused, invalidating the
    /// capture). And where the stream may synchronise with the legacy default stream, through
    /// the legacy stream's gate too: work on the legacy stream of its context is refused by the
    /// driver once it joins (invalidating the capture), so the wait waits for legacy-stream
    /// calls under way in its context, which asked before it joined, and later ones ask after
    /// it.
    #[cold]
    #[inline(never)]
    fn join_wait(
        &self,
        wait: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<()>,
    ) -> Result<()> {
        let _door = crate::order::Door::enter(&[self]);
        let waited = if !self.inner.may_block {
            self.queue(wait)
        } else {
            crate::lifetime::captures::joining(self.inner.context_handle.0 as usize, || {
                self.queue(wait)
            })
        };
        // A stream that joined a capture (a fork): work captured on it over its own buffers
        // records no order with its work before the capture, so the graph's launches are
        // ordered with it.
        if waited.is_ok() {
            self.note_captured_homes(&[self]);
        }
        waited
    }

    /// The stripe of the door's locks this stream's cross-stream orderings take
    /// ([`crate::order::Door`]): the same for every value wrapping the same handle of the same
    /// context.
    #[inline]
    pub(crate) fn door(&self) -> u32 {
        let inner = &*self.inner;
        let key = (inner.handle.0 as u64) ^ (inner.context_handle.0 as u64).rotate_left(29);
        crate::order::stripe(key)
    }

    /// Makes later work on this stream wait for the work queued on `other` so far: `other`
    /// records an event it keeps for this (made on first use), and this stream waits on it.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        self.wait_for_unchecked(other)
    }

    /// Runs `f` on a driver thread once the work queued before it is done, holding back the
    /// work queued after it until `f` returns (`cuLaunchHostFunc`).
    ///
    /// `f` must not call CUDA (the driver forbids it in host functions and may deadlock); a
    /// panic in `f` aborts the process, as unwinding into the driver would be undefined. What
    /// `f` captured is dropped after it ran, on a thread of the crate's, not the driver's: so a
    /// [`Buffer`](crate::Buffer), [`Stream`] or [`Event`] moved into `f` is freed where CUDA
    /// may be called (which is why `f` is `FnMut`: it cannot drop what it captured itself).
    ///
    /// Refused on a stream that captures (itself, or as a stream that joined a capture): a
    /// graph may run its host functions many times, and `f` runs once. A graph's host node
    /// ([`BuildGraph::add_host`](crate::BuildGraph::add_host)) takes a closure that can.
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let scratch = device.memory_resource()?.allocate(1 << 20, &stream)?;
    /// // `scratch` lives until the stream reaches this point, then is freed off the driver's thread.
    /// stream.launch_host_func(move || {
    ///     let _kept = &scratch;
    /// })?;
    /// stream.sync()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuLaunchHostFunc")]
    pub fn launch_host_func<F: FnMut() + Send + 'static>(&self, f: F) -> Result<()> {
        if self.capturing() {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the stream is capturing, and a host function queued here would run \
                         once per launch of the graph; add a host node to a graph instead"
                    .to_owned(),
            });
        }
        unsafe extern "C" fn trampoline<F: FnMut() + Send + 'static>(data: *mut std::ffi::c_void) {
            // SAFETY: `data` is the box leaked below, handed to the driver once and run once.
            let mut f = unsafe { Box::from_raw(data.cast::<F>()) };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut *f)).is_err() {
                std::process::abort();
            }
            // Its captures are dropped off the driver's thread (dropping may call CUDA).
            crate::graph::release_later(vec![f]);
        }
        let data = Box::into_raw(Box::new(f)).cast::<std::ffi::c_void>();
        let result =
            self.queue(|driver, handle| driver.launch_host_func(handle, trampoline::<F>, data));
        if result.is_err() {
            // SAFETY: the driver refused it, so it will never run the trampoline.
            drop(unsafe { Box::from_raw(data.cast::<F>()) });
        }
        result
    }

    /// The stream's priority (`cuStreamGetPriority`).
    #[doc(alias = "cuStreamGetPriority")]
    pub fn priority(&self) -> Result<i32> {
        self.query(|driver, handle| driver.stream_get_priority(handle))
    }

    /// Whether the stream is non-blocking (`cuStreamGetFlags`).
    #[doc(alias = "cuStreamGetFlags")]
    pub fn is_non_blocking(&self) -> Result<bool> {
        self.query(|driver, handle| driver.stream_get_flags(handle))
            .map(|flags| flags & NON_BLOCKING != 0)
    }

    /// The context the stream belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The driver and the context's handle, read from the stream itself: for a call that
    /// makes the context current without a load through [`Stream::context`].
    #[inline]
    pub(crate) fn driver_and_context(&self) -> (&'static dyn Driver, ContextHandle) {
        (self.inner.driver, self.inner.context_handle)
    }

    /// The device the stream belongs to.
    #[inline]
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// The raw `CUstream`, for calling other CUDA libraries; valid while this value lives.
    /// (A stream whose raw handle was taken is destroyed at its drop, not recycled.)
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        if !self.inner.raw_used.load(Ordering::Relaxed) {
            self.inner.raw_used.store(true, Ordering::Relaxed);
        }
        self.inner.handle.0
    }
}

/// Refuses a priority outside the device's range, naming the range.
fn check_priority(device: Device, priority: i32) -> Result<()> {
    let (least, greatest) = device.stream_priority_range()?;
    if priority > least || priority < greatest {
        return Err(Error::InvalidArgument {
            name: "options.priority",
            reason: format!(
                "{priority} is outside device {}'s range {greatest} (highest) to {least} \
                 (lowest)",
                device.ordinal()
            ),
        });
    }
    Ok(())
}
