//! The streams of the buffers that captured work used, by capture: given to the graph the
//! capture ends in, whose launches are then ordered with them as a built graph's are.
//!
//! Work captured on a stream over a buffer of another stream records nothing across the
//! capture's boundary (an event recorded outside a capture cannot be waited on inside it), so
//! the graph alone cannot order itself with that buffer's stream: its allocation, or writes
//! queued there before the launch. Noted here (the cold path of the cross-stream order, while
//! the stream captures), the streams reach the captured graph at
//! [`Stream::end_capture`](crate::Stream::end_capture), and each of its executable graphs'
//! launches waits for them (and they for it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{Stream, WeakStream};

/// Capture ids with the streams noted for them, not kept alive (a buffer a launch of the
/// graph uses must be alive, and keeps its stream).
static NOTED: Mutex<Vec<(u64, Vec<WeakStream>)>> = Mutex::new(Vec::new());

/// Whether `NOTED` may hold anything: a capture's end asks for its id only then.
static ANY: AtomicBool = AtomicBool::new(false);

fn noted() -> std::sync::MutexGuard<'static, Vec<(u64, Vec<WeakStream>)>> {
    NOTED.lock().unwrap_or_else(|e| e.into_inner())
}

impl Stream {
    /// Notes `homes` for the capture this stream is in, for the graph it ends in. Nothing
    /// where the driver says it is in none.
    #[cold]
    pub(crate) fn note_captured_homes(&self, homes: &[&Stream]) {
        let Some(id) = self.capture_now() else {
            return;
        };
        let mut noted = noted();
        // Captures ended another way than `end_capture` (a stream dropped while it captured)
        // leave their streams: forgotten once all are gone (ids are never reused).
        noted.retain(|(_, streams)| streams.iter().any(WeakStream::alive));
        let at = match noted.iter().position(|(capture, _)| *capture == id) {
            Some(at) => at,
            None => {
                noted.push((id, Vec::new()));
                noted.len() - 1
            }
        };
        let streams = &mut noted[at].1;
        for home in homes {
            if !streams.iter().any(|s| s.is(home)) {
                streams.push(home.downgrade());
            }
        }
        ANY.store(true, Ordering::Release);
    }

    /// The id of the capture this stream is in, where streams were noted for some capture
    /// (otherwise no driver call is made); asked before the capture's end.
    pub(crate) fn capture_id_if_noted(&self) -> Option<u64> {
        if !ANY.load(Ordering::Acquire) {
            return None;
        }
        self.capture_now()
    }
}

/// Takes the streams noted for capture `id` (nothing where none were), once it has ended.
pub(crate) fn take_captured_homes(id: u64) -> Vec<WeakStream> {
    let mut noted = noted();
    let taken = match noted.iter().position(|(capture, _)| *capture == id) {
        Some(at) => noted.swap_remove(at).1,
        None => Vec::new(),
    };
    if noted.is_empty() {
        ANY.store(false, Ordering::Release);
    }
    taken
}
