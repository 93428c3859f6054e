//! The process's count of open captures begun through this crate, and the work put off until
//! none is open. Below the stream code, so that recycling can ask it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Captures begun through `Stream::begin_capture` that have not ended.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// Whether a capture begun through this crate may be open in the process (one load).
#[inline]
pub(crate) fn captures_open() -> bool {
    OPEN.load(Ordering::Acquire) != 0
}

/// Counts a capture that began.
pub(crate) fn capture_began() {
    OPEN.fetch_add(1, Ordering::AcqRel);
}

/// Counts a capture that ended; the last one to end finishes what was put off for it
/// ([`after_captures`]).
pub(crate) fn capture_ended() {
    // Never below zero, should a caller count an end twice.
    let was = OPEN.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    if was == Ok(1) {
        finish_later();
    }
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
