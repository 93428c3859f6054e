//! The process's open captures begun through this crate, the gate that keeps them and context
//! synchronisations apart, and the work put off until none is open. Below the stream code, so
//! that recycling can ask it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

use crate::driver::{ContextHandle, Driver};
use crate::error::Result;

/// Captures begun through `Stream::begin_capture` that have not ended: the gate's `open`
/// counted, for a question of hot paths that takes no lock ([`captures_open`]).
static OPEN: AtomicUsize = AtomicUsize::new(0);

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

/// The open captures, and the contexts being synchronised now (one entry per
/// synchronisation under way).
struct Gate {
    open: Vec<Open>,
    syncing: Vec<usize>,
}

static GATE: Mutex<Gate> = Mutex::new(Gate {
    open: Vec::new(),
    syncing: Vec::new(),
});
/// Notified whenever a capture ends or a context synchronisation finishes.
static CHANGED: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Gate> {
    GATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Begins a capture of the stream `stream` of context `context` with `begin` (the driver's
/// call), counted open where it succeeds. It waits first for any synchronisation of the
/// context under way ([`sync_context`]): the driver refuses a context's synchronisation
/// while a stream of it captures, and invalidates the capture.
pub(crate) fn begin<E>(
    context: usize,
    stream: usize,
    begin: impl FnOnce() -> Result<(), E>,
) -> Result<(), E> {
    let mut gate = lock();
    while gate.syncing.contains(&context) {
        gate = CHANGED.wait(gate).unwrap_or_else(|e| e.into_inner());
    }
    begin()?;
    gate.open.push(Open {
        stream,
        context,
        thread: std::thread::current().id(),
    });
    OPEN.fetch_add(1, Ordering::AcqRel);
    Ok(())
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
    gate.syncing.push(context);
    drop(gate);
    let result = super::current::with_current(driver, handle, |d| d.ctx_synchronize());
    let mut gate = lock();
    if let Some(at) = gate.syncing.iter().position(|&c| c == context) {
        gate.syncing.swap_remove(at);
    }
    drop(gate);
    CHANGED.notify_all();
    result
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

static LATER: std::sync::Mutex<Vec<Later>> = std::sync::Mutex::new(Vec::new());

/// Puts `later` off until no capture is open (at once where none is by now).
pub(crate) fn after_captures(later: Later) {
    LATER.lock().unwrap_or_else(|e| e.into_inner()).push(later);
    if !captures_open() {
        finish_later();
    }
}

fn finish_later() {
    let work = std::mem::take(&mut *LATER.lock().unwrap_or_else(|e| e.into_inner()));
    for later in work {
        for ptr in later.small {
            if let Err(e) = later.driver.mem_free_async(ptr, later.handle) {
                log::error!("freeing a kept small buffer of a stream dropped mid-capture: {e}");
            }
        }
        if later.destroy {
            if let Err(e) = later.driver.stream_destroy(later.handle) {
                log::error!("destroying a stream dropped mid-capture: {e}");
            }
        }
    }
}
