//! Per-thread lists of dropped driver handles kept for reuse: [`Event`](crate::Event)s and
//! [`Stream`](crate::Stream)s of primary contexts (see their "Recycling" sections).
//!
//! A thread keeps, per context and kind (an event's flags, a stream's priority), the handles
//! known idle and those that may still have work pending, oldest first. A pending one is
//! reused only once the driver says it is done. A thread's handles are destroyed when it ends.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::thread::LocalKey;

use crate::driver::{ContextHandle, Driver};
use crate::error::Result;

/// A handle that can be recycled: how to ask whether its work is done, and destroy it.
pub(crate) trait Recycled: Copy + 'static {
    /// What it is, for the log.
    const WHAT: &'static str;
    /// Whether its last work has completed (`cuEventQuery`, `cuStreamQuery`).
    fn done(self, driver: &'static dyn Driver) -> Result<bool>;
    /// Destroys it.
    fn destroy(self, driver: &'static dyn Driver) -> Result<()>;
}

/// One context's handles of one kind.
struct List<H> {
    context: ContextHandle,
    kind: i64,
    driver: &'static dyn Driver,
    /// Handles known idle.
    idle: Vec<H>,
    /// Handles that may have work pending, oldest first.
    pending: VecDeque<H>,
}

impl<H> List<H> {
    fn len(&self) -> usize {
        self.idle.len() + self.pending.len()
    }
}

/// A thread's lists, holding at most `kept` handles per context and kind.
pub(crate) struct Lists<H: Recycled> {
    lists: Vec<List<H>>,
    kept: usize,
}

impl<H: Recycled> Lists<H> {
    /// Empty lists that keep at most `kept` handles per context and kind.
    pub(crate) const fn new(kept: usize) -> Lists<H> {
        Lists {
            lists: Vec::new(),
            kept,
        }
    }
}

impl<H: Recycled> Drop for Lists<H> {
    fn drop(&mut self) {
        for list in &mut self.lists {
            for handle in list.idle.drain(..).chain(list.pending.drain(..)) {
                destroy(list.driver, handle);
            }
        }
    }
}

/// The thread-local lists of one kind of handle.
pub(crate) type Local<H> = LocalKey<RefCell<Lists<H>>>;

fn destroy<H: Recycled>(driver: &'static dyn Driver, handle: H) {
    if let Err(e) = handle.destroy(driver) {
        log::error!("destroying a recycled {}: {e}", H::WHAT);
    }
}

/// A handle of `context` and `kind` that this thread kept, if it has one that is done: an
/// idle one, else the oldest pending one the driver says is done.
#[inline]
pub(crate) fn take<H: Recycled>(
    local: &'static Local<H>,
    context: ContextHandle,
    kind: i64,
) -> Option<H> {
    local
        .try_with(|lists| {
            let mut lists = lists.try_borrow_mut().ok()?;
            let list = lists
                .lists
                .iter_mut()
                .find(|l| l.context == context && l.kind == kind)?;
            if let Some(handle) = list.idle.pop() {
                return Some(handle);
            }
            // A query is a call that an open capture may forbid (and be invalidated by): while
            // one may be open, a pending handle waits, and the caller makes a new one; and no
            // capture begins while the query is made.
            super::captures::outside_captures(|| take_pending(list)).flatten()
        })
        .ok()
        .flatten()
}

/// The oldest pending handle if the driver says it is done.
#[cold]
fn take_pending<H: Recycled>(list: &mut List<H>) -> Option<H> {
    while let Some(&handle) = list.pending.front() {
        match handle.done(list.driver) {
            Ok(true) => return list.pending.pop_front(),
            // The oldest is still busy: so, most likely, are the younger ones.
            Ok(false) => return None,
            Err(e) => {
                log::debug!("a recycled {} is not reused: {e}", H::WHAT);
                list.pending.pop_front();
                destroy(list.driver, handle);
            }
        }
    }
    None
}

/// Keeps `handle` (of `context` and `kind`) for this thread's next one of that kind; `idle`
/// says it is known to have no work pending. `false` when this thread keeps enough already
/// (or is ending): the caller destroys it.
#[inline]
pub(crate) fn give<H: Recycled>(
    local: &'static Local<H>,
    context: ContextHandle,
    kind: i64,
    driver: &'static dyn Driver,
    handle: H,
    idle: bool,
) -> bool {
    if KEEPS_NONE.try_with(std::cell::Cell::get).unwrap_or(true) {
        return false;
    }
    local
        .try_with(|lists| {
            let Ok(mut lists) = lists.try_borrow_mut() else {
                return false;
            };
            let kept = lists.kept;
            let at = match lists
                .lists
                .iter()
                .position(|l| l.context == context && l.kind == kind)
            {
                Some(at) => at,
                None => {
                    lists.lists.push(List {
                        context,
                        kind,
                        driver,
                        idle: Vec::new(),
                        pending: VecDeque::new(),
                    });
                    lists.lists.len() - 1
                }
            };
            let list = &mut lists.lists[at];
            if list.len() >= kept {
                return false;
            }
            if idle {
                list.idle.push(handle);
            } else {
                list.pending.push_back(handle);
            }
            true
        })
        .unwrap_or(false)
}

thread_local! {
    /// Set on the crate's own threads, which make no handles to reuse dropped ones for.
    static KEEPS_NONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the calling thread keep no handle for reuse from now on: each stream or event whose
/// last value it drops is destroyed (for the crate's own threads, which make none).
pub(crate) fn keep_none_here() {
    let _ = KEEPS_NONE.try_with(|keeps_none| keeps_none.set(true));
}

/// How many handles this thread keeps for `context` and `kind` (for tests).
#[cfg(test)]
pub(crate) fn kept<H: Recycled>(
    local: &'static Local<H>,
    context: ContextHandle,
    kind: i64,
) -> usize {
    local.with(|lists| {
        lists
            .borrow()
            .lists
            .iter()
            .find(|l| l.context == context && l.kind == kind)
            .map_or(0, List::len)
    })
}
