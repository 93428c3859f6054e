//! The interprocess events this process opened from other processes' handles: one open per
//! handle at a time (whether the driver would give a second open its own event is not
//! documented). `Event::open_ipc` opens through [`open`]; an interprocess event's drop
//! destroys through [`destroy`].
//!
//! The other process-wide IPC registry, of the pools this process imported and the shareable
//! pools it made, stays in `ipc::import`: its entries hold the imports themselves.

use std::sync::Mutex;

use crate::driver::EventHandle;
use crate::error::{Error, Result};

static OPENED: Mutex<Vec<([u8; 64], EventHandle)>> = Mutex::new(Vec::new());

/// Opens `handle` with `open`, unless this process has it open.
pub(crate) fn open(
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
pub(crate) fn destroy(event: EventHandle, destroy: impl FnOnce() -> Result<()>) -> Result<()> {
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    let destroyed = destroy();
    opened.retain(|(_, e)| *e != event);
    destroyed
}

/// Whether an open or a destroy is under way (for tests).
#[cfg(test)]
pub(crate) fn busy() -> bool {
    OPENED.try_lock().is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_handle_is_opened_once_at_a_time() {
        let key = [0x5a; 64];
        let first = open(&key, || {
            Ok(EventHandle(std::ptr::without_provenance_mut(0x10)))
        });
        assert!(first.is_ok());
        let mut called = false;
        let second = open(&key, || {
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
        destroy(EventHandle(std::ptr::without_provenance_mut(0x10)), || {
            assert!(busy(), "the registry is held while the driver destroys");
            destroyed = true;
            Ok(())
        })
        .unwrap();
        assert!(destroyed);
        assert!(
            open(&key, || Ok(EventHandle(std::ptr::without_provenance_mut(
                0x30
            ))))
            .is_ok()
        );
        destroy(EventHandle(std::ptr::without_provenance_mut(0x30)), || {
            Ok(())
        })
        .unwrap();
    }
}
