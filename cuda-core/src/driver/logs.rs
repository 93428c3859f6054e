//! The driver's own log lines (`cuLogsRegisterCallback`, drivers 12.9 and newer), kept per
//! thread so that a driver error can say what the driver said about it.
//!
//! The driver logs a line where a call fails ("the stream handle is not valid", "Returning 1
//! (CUDA_ERROR_INVALID_VALUE) from cuMemAlloc") and hands it to every registered callback. The
//! CUDA documentation does not say on which thread; the store is per thread on the reading that
//! it is the failing call's (its log lines carry that thread's id), which the GPU test
//! `diagnostics::a_real_invalid_value_carries_the_drivers_log` checks from a thread of its
//! own. A line the driver logs about a call that succeeds (a warning) waits in the store for
//! the thread's next error. The crate registers one callback for the process when it
//! loads the driver (one call, once), and never unregisters it (the driver is never unloaded).
//! The callback keeps the thread's last [`MAX_LINES`] lines, each cut to [`MAX_LINE`] bytes;
//! the driver error made next on that thread takes them ([`take`]). A call that succeeds logs
//! nothing and costs nothing more: the lines are read only where a call has failed.
//!
//! Soundness: the callback is called by C, so it never unwinds (everything it does is inside
//! `catch_unwind`); it reaches its thread's store with `try_with` (a thread that is exiting has
//! none: the line is dropped) and `try_borrow_mut` (the store is never borrowed across a driver
//! call, so it is free; were it not, the line would be dropped rather than wait or panic).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// The most lines a thread keeps: the older go first.
pub(crate) const MAX_LINES: usize = 16;
/// The most bytes kept of a line.
pub(crate) const MAX_LINE: usize = 1024;

thread_local! {
    static LINES: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
}

/// Keeps one line the driver logged on this thread. Never panics or unwinds.
pub(crate) fn record(message: &[u8]) {
    let _ = std::panic::catch_unwind(|| {
        let mut end = message.len().min(MAX_LINE);
        // A line ends at its first NUL where it has one, without its newline.
        if let Some(nul) = message[..end].iter().position(|&b| b == 0) {
            end = nul;
        }
        let text = String::from_utf8_lossy(&message[..end]);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            return;
        }
        let _ = LINES.try_with(|lines| {
            if let Ok(mut lines) = lines.try_borrow_mut() {
                if lines.len() == MAX_LINES {
                    lines.pop_front();
                }
                lines.push_back(text.to_owned());
            }
        });
    });
}

/// The lines this thread's driver calls logged since the last driver error made on it, one
/// per line, and forgets them; `None` where there are none.
pub(crate) fn take() -> Option<Arc<str>> {
    LINES
        .try_with(|lines| {
            let mut lines = lines.try_borrow_mut().ok()?;
            if lines.is_empty() {
                return None;
            }
            let joined = lines.drain(..).collect::<Vec<_>>().join("\n");
            Some(Arc::from(joined))
        })
        .ok()
        .flatten()
}

/// The callback the driver calls with each line, written once for both ABIs: the level's type
/// differs only in name (`CUlogLevel` of each header, a C `unsigned int`).
///
/// # Safety
///
/// `message` is null or points to `length` readable bytes, as the driver's callback promises.
pub(crate) unsafe fn callback(message: *const std::ffi::c_char, length: usize) {
    if message.is_null() || length == 0 {
        return;
    }
    // SAFETY: the driver hands `length` readable bytes at `message` for the callback's call.
    let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), length) };
    record(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_per_thread_bounded_and_taken_once() {
        assert_eq!(take(), None);
        record(b"first\n");
        record(b"second\0garbage");
        record(b"");
        // Bug caught: lines lost, their order changed, the NUL or newline kept.
        assert_eq!(take().as_deref(), Some("first\nsecond"));
        // Bug caught: lines attached to a second error as well.
        assert_eq!(take(), None);
        // Another thread's lines are its own. Bug caught: one store for the process.
        std::thread::spawn(|| record(b"elsewhere")).join().unwrap();
        assert_eq!(take(), None);
        for i in 0..(MAX_LINES + 3) {
            record(format!("line {i}").as_bytes());
        }
        let all = take().unwrap();
        // Bug caught: an unbounded store, or the newest lines dropped instead of the oldest.
        assert_eq!(all.lines().count(), MAX_LINES);
        assert!(all.starts_with("line 3\n"), "{all}");
        assert!(all.ends_with(&format!("line {}", MAX_LINES + 2)), "{all}");
        record(&[b'x'; 3 * MAX_LINE]);
        // Bug caught: a line kept whole, however long.
        assert_eq!(take().unwrap().len(), MAX_LINE);
    }
}
