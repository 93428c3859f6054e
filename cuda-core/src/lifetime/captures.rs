//! The process's open captures begun through this crate, the gate that keeps them apart from
//! the calls the driver refuses while they are open (context synchronisations, work on the
//! legacy default stream), and the work put off until none is open. Below the stream code, so
//! that recycling can ask it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

use crate::driver::{ContextHandle, Driver};
use crate::error::{DriverCode, Error, Result};

/// Captures begun through `Stream::begin_capture` that have not ended, and those beginning:
/// the gate's `open` counted (a capture is counted from just before its begin), for a question
/// of hot paths that takes no lock ([`captures_open`]).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// Calls made outside captures and not returned ([`outside_captures`], and the legacy default
/// stream's calls of [`on_legacy_stream`]'s fast path): a capture does not begin while one is
/// under way.
static LEGACY: AtomicUsize = AtomicUsize::new(0);

/// Held for writing while a capture begun through this crate ends, and for reading while work
/// is put into a capture the driver was just asked about ([`steady`]): so that no capture ends
/// between the question and the work.
static ENDS: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    /// Whether this thread holds [`ENDS`] for reading ([`steady`]): a second hold on the same
    /// thread takes nothing (a read lock taken twice waits for ever behind a waiting end).
    static STEADY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keeps captures begun through this crate from ending until it drops ([`steady`]).
#[must_use]
pub(crate) struct Steady(Option<std::sync::RwLockReadGuard<'static, ()>>);

impl Drop for Steady {
    fn drop(&mut self) {
        if self.0.take().is_some() {
            let _ = STEADY.try_with(|held| held.set(false));
        }
    }
}

/// Keeps captures begun through this crate from ending until the guard drops: for a call
/// whose meaning depends on a capture staying open after it asked the driver (a host function
/// made a node of the capture's graph, whose closure the graph owns, would run as plain work,
/// from freed memory, on a stream whose capture ended in between; work over another stream's
/// buffer recorded into a capture without the cross-stream order would run unordered). Taken
/// again on a thread that holds it, it takes nothing.
pub(crate) fn steady() -> Steady {
    if STEADY.try_with(std::cell::Cell::get).unwrap_or(false) {
        return Steady(None);
    }
    let guard = ENDS.read().unwrap_or_else(|e| e.into_inner());
    let _ = STEADY.try_with(|held| held.set(true));
    Steady(Some(guard))
}

/// Held while the driver ends a capture begun through this crate (see [`steady`]).
pub(crate) fn ending() -> std::sync::RwLockWriteGuard<'static, ()> {
    ENDS.write().unwrap_or_else(|e| e.into_inner())
}

/// Makes `call` only while no capture begun through this crate is open, keeping any from
/// beginning until it returns: `None` (not made) where one may be open. For a call that an
/// open capture would refuse, and be invalidated by (a query of a recycled handle, in the
/// thread's own capture mode). Two atomic additions and a load.
#[inline]
pub(crate) fn outside_captures<T>(call: impl FnOnce() -> T) -> Option<T> {
    LEGACY.fetch_add(1, Ordering::SeqCst);
    if OPEN.load(Ordering::SeqCst) != 0 {
        legacy_returned();
        return None;
    }
    let done = call();
    legacy_returned();
    Some(done)
}

/// Whether a capture begun through this crate may be open in the process (one load).
#[inline]
pub(crate) fn captures_open() -> bool {
    OPEN.load(Ordering::Acquire) != 0
}

/// A capture begun through this crate and not ended: its stream's handle and context's
/// handle (as addresses), and the thread that began it.
struct Open {
    stream: usize,
    context: usize,
    thread: ThreadId,
}

/// The open captures, and the contexts in which a call that an open capture would make the
/// driver refuse is under way (one entry per call: a synchronisation, legacy-stream work).
struct Gate {
    open: Vec<Open>,
    holding: Vec<usize>,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    open: Vec::new(),
    holding: Vec::new(),
});
/// Notified whenever a capture ends, a held call returns, or the last legacy-stream call of
/// the fast path returns while a capture begins.
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Begins a capture of the stream `stream` of context `context` with `begin` (the driver's
/// call), counted open where it succeeds. It waits first for any synchronisation of the
/// context under way ([`sync_context`]) and for any call on a legacy default stream
/// ([`on_legacy_stream`]): the driver refuses a context's synchronisation while a stream of it
/// captures, and work on the legacy stream while a blocking stream of its context captures,
/// and invalidates the capture.
///
/// Where it succeeds, no capture ends until the guard it gives is dropped ([`steady`]): the
/// caller flags its stream capturing first, so that an end on another thread never comes
/// between the driver's begin and the flag (it would find the stream unflagged and leave the
/// capture counted open for good, and the flag raised after it would say a stream captures
/// that does not).
pub(crate) fn begin<E>(
    context: usize,
    stream: usize,
    begin: impl FnOnce() -> Result<(), E>,
) -> Result<Steady, E> {
    let steady = steady();
    let mut gate = lock();
    // Counted before the legacy calls are looked at, so that a legacy call starting now sees
    // a capture beginning and takes the gate (both sides: one sequentially consistent add,
    // then a load of the other's count).
    OPEN.fetch_add(1, Ordering::SeqCst);
    while gate.holding.contains(&context) || LEGACY.load(Ordering::SeqCst) != 0 {
        gate = CHANGED.wait(gate).unwrap_or_else(|e| e.into_inner());
    }
    if let Err(e) = begin() {
        let last = OPEN.fetch_sub(1, Ordering::SeqCst) == 1;
        drop(gate);
        // Before what was put off runs: a context's synchronisation among it may wait for a
        // capture begun since to end, which this guard would keep from ending.
        drop(steady);
        CHANGED.notify_all();
        if last {
            finish_later();
        }
        return Err(e);
    }
    gate.open.push(Open {
        stream,
        context,
        thread: std::thread::current().id(),
    });
    Ok(steady)
}

/// Counts the capture of the stream `stream` ended; the last one to end finishes what was
/// put off for it ([`after_captures`]).
pub(crate) fn capture_ended(stream: usize) {
    let mut gate = lock();
    // Never counted twice, should a caller end one twice.
    let Some(at) = gate.open.iter().position(|open| open.stream == stream) else {
        return;
    };
    gate.open.swap_remove(at);
    let last = OPEN.fetch_sub(1, Ordering::AcqRel) == 1;
    drop(gate);
    CHANGED.notify_all();
    if last {
        finish_later();
    }
}

/// Whether a capture begun on the calling thread in context `handle` is open (for a wait on
/// the context, which could never see it end).
pub(crate) fn this_thread_captures_in(handle: ContextHandle) -> bool {
    if !captures_open() {
        return false;
    }
    let (context, me) = (handle.0 as usize, std::thread::current().id());
    lock()
        .open
        .iter()
        .any(|open| open.context == context && open.thread == me)
}

/// How long a context synchronisation waits for other threads' captures before it says so
/// in the log (it waits on).
const WARN_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Synchronises context `handle` (`cuCtxSynchronize`, with it current) once no other
/// thread's capture in it is open, keeping new captures in it from beginning until the
/// driver returns. The driver refuses a context's synchronisation while any stream of it
/// captures, whichever thread captures and in whichever mode, and invalidates the capture: a
/// capture of another thread would be lost to a synchronisation it never asked for. A capture
/// of the calling thread's own is not waited for (it could never end): the driver refuses the
/// synchronisation then, as it does a stream's.
pub(crate) fn sync_context(driver: &'static dyn Driver, handle: ContextHandle) -> Result<()> {
    let context = handle.0 as usize;
    let me = std::thread::current().id();
    let mut gate = lock();
    let start = std::time::Instant::now();
    let mut warned = false;
    while gate
        .open
        .iter()
        .any(|open| open.context == context && open.thread != me)
    {
        gate = CHANGED
            .wait_timeout(gate, WARN_AFTER)
            .unwrap_or_else(|e| e.into_inner())
            .0;
        if !warned && start.elapsed() >= WARN_AFTER {
            warned = true;
            log::warn!(
                "a context synchronisation has waited {:?} for another thread's stream capture in \
                 the context to end (the driver would refuse it, invalidating the capture)",
                start.elapsed()
            );
        }
    }
    held(gate, context, || {
        super::current::with_current(driver, handle, |d| d.ctx_synchronize())
    })
}

/// Runs `call` with new captures in `context` held back (the gate, locked, is given), then
/// lets them begin.
fn held<T>(mut gate: MutexGuard<'static, Gate>, context: usize, call: impl FnOnce() -> T) -> T {
    gate.holding.push(context);
    drop(gate);
    let result = call();
    let mut gate = lock();
    if let Some(at) = gate.holding.iter().position(|&c| c == context) {
        gate.holding.swap_remove(at);
    }
    drop(gate);
    CHANGED.notify_all();
    result
}

/// Makes `call`, a driver call on the legacy default stream of context `handle`, unless a
/// blocking stream of the context captures. The driver refuses work on the legacy stream (and
/// its synchronisation) while a blocking stream of its context captures
/// (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`), whichever thread captures and in whichever mode,
/// and invalidates that capture: a call of one thread would break another thread's capture.
/// So while a capture begun through this crate in the context is open and the driver says a
/// blocking stream captures (`cuStreamIsCapturing` of the legacy stream, a question that
/// invalidates nothing), the call is refused here, before the driver, and the capture stays
/// valid. It is refused rather than held until the capture ends: the capturing thread may be
/// waiting for this one. New captures wait for the call to return.
///
/// Outside captures it costs two atomic additions and a load.
#[inline]
pub(crate) fn on_legacy_stream<T>(
    driver: &'static dyn Driver,
    handle: ContextHandle,
    call: impl FnOnce() -> Result<T>,
) -> Result<T> {
    LEGACY.fetch_add(1, Ordering::SeqCst);
    if OPEN.load(Ordering::SeqCst) == 0 {
        let result = call();
        legacy_returned();
        return result;
    }
    legacy_returned();
    legacy_held(driver, handle, call)
}

/// Counts a legacy call of the fast path returned, waking a capture waiting to begin.
#[inline]
fn legacy_returned() {
    if LEGACY.fetch_sub(1, Ordering::SeqCst) == 1 && OPEN.load(Ordering::SeqCst) != 0 {
        // Taken and let go, so that a capture that saw this call under way is waiting by
        // now (it looks and waits holding the lock).
        drop(lock());
        CHANGED.notify_all();
    }
}

/// [`on_legacy_stream`] while a capture may be open: through the gate.
#[cold]
#[inline(never)]
fn legacy_held<T>(
    driver: &'static dyn Driver,
    handle: ContextHandle,
    call: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let context = handle.0 as usize;
    let gate = lock();
    if gate.open.iter().any(|open| open.context == context) {
        let asked = super::current::with_current(driver, handle, |d| {
            d.stream_is_capturing(crate::driver::StreamHandle::LEGACY)
        });
        // Any other answer: no blocking stream captures (or the question failed, and the call
        // says why).
        if let Err(e) = asked {
            if e.driver_code() == Some(DriverCode::STREAM_CAPTURE_IMPLICIT) {
                return Err(Error::Capture {
                    reason: "the legacy default stream cannot be used while a blocking stream \
                             of its context captures: the driver would refuse it \
                             (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) and invalidate the capture; \
                             use a stream of your own, or capture a non-blocking one"
                        .to_owned(),
                });
            }
        }
    }
    held(gate, context, call)
}

/// Makes `call`, a wait that may make a stream of context `context` that synchronises with the
/// legacy default stream join a capture (`cuStreamWaitEvent` on an event recorded in one),
/// apart from calls on the legacy stream of that context: it waits for those under way (each
/// asked before the join whether a blocking stream captures, and the driver would refuse it
/// once one does, invalidating the capture), and is made holding the gate, so that a later
/// one asks after it. Called only while a capture may be open; the wait is short (the
/// driver queues it).
pub(crate) fn joining<T>(context: usize, call: impl FnOnce() -> T) -> T {
    let mut gate = lock();
    while gate.holding.contains(&context) {
        gate = CHANGED.wait(gate).unwrap_or_else(|e| e.into_inner());
    }
    let done = call();
    drop(gate);
    done
}

/// Work put off until no capture this crate counts is open: a stream dropped while it took
/// part in another stream's capture (one it joined), whose kept small buffers' frees and
/// destruction would otherwise go into that capture.
pub(crate) struct Later {
    pub(crate) driver: &'static dyn crate::driver::Driver,
    pub(crate) handle: crate::driver::StreamHandle,
    /// Small buffers it kept, freed on it.
    pub(crate) small: Vec<u64>,
    /// Whether the handle is the crate's to destroy.
    pub(crate) destroy: bool,
    /// Keeps the stream's context alive until then.
    pub(crate) _context: Box<dyn Send>,
}

/// Puts `later` off until no capture is open (at once where none is by now).
pub(crate) fn after_captures(later: Later) {
    after_captures_run(Box::new(move || later.finish()));
}

impl Later {
    fn finish(self) {
        for ptr in self.small {
            if let Err(e) = self.driver.mem_free_async(ptr, self.handle) {
                log::error!("freeing a kept small buffer of a stream dropped mid-capture: {e}");
            }
        }
        if self.destroy {
            if let Err(e) = self.driver.stream_destroy(self.handle) {
                log::error!("destroying a stream dropped mid-capture: {e}");
            }
        }
    }
}

/// Work put off until no capture is open: what would otherwise be queued on a capturing
/// stream, or wait for one.
type LaterWork = Box<dyn FnOnce() + Send>;

static LATER: std::sync::Mutex<Vec<LaterWork>> = std::sync::Mutex::new(Vec::new());

/// Runs `work` once no capture is open (at once where none is by now), on the thread that
/// ends the last one.
pub(crate) fn after_captures_run(work: LaterWork) {
    LATER.lock().unwrap_or_else(|e| e.into_inner()).push(work);
    if !captures_open() {
        finish_later();
    }
}

/// Runs what was put off, unless a capture is open by now: the caller saw none open (it ended
/// the last, or found none), but one may have begun since, and work put off for it (a stream
/// dropped while it joined that capture) must wait for its end, which finishes it.
fn finish_later() {
    let work = {
        let mut later = LATER.lock().unwrap_or_else(|e| e.into_inner());
        // Asked holding the list's lock: work put off for a capture was put there while it
        // was counted open, so a count of none seen after it means that capture has ended.
        if OPEN.load(Ordering::SeqCst) != 0 {
            return;
        }
        std::mem::take(&mut *later)
    };
    for work in work {
        work();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// The end of the last open capture counts it ended, then finishes what was put off; a
    /// thread preempted between the two (the model test's stall thread, under load) finishes
    /// late, after another capture began and a stream that joined it was dropped, putting its
    /// destruction off. Bug caught: the late finish ran it, destroying the stream inside the
    /// open capture (which the driver refuses, invalidating the capture).
    #[test]
    fn a_late_finish_leaves_work_put_off_for_a_capture_begun_since() {
        let (context, stream) = (0x5eed_0000_usize, 0x5eed_0100_usize);
        drop(begin(context, stream, || Ok::<(), ()>(())).unwrap());
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        after_captures_run(Box::new(move || flag.store(true, Ordering::SeqCst)));
        assert!(!ran.load(Ordering::SeqCst), "run while the capture is open");
        // The late finisher of a capture ended before this one began.
        finish_later();
        assert!(
            !ran.load(Ordering::SeqCst),
            "work put off for an open capture ran before its end"
        );
        capture_ended(stream);
        assert!(
            ran.load(Ordering::SeqCst),
            "not run once no capture is open"
        );
    }
}
