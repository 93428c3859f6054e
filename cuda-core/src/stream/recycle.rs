//! The recycled handles of non-blocking primary-context streams, per thread: see `Stream`'s
//! "Recycling".

use std::cell::RefCell;

use crate::driver::{ContextHandle, Driver, StreamHandle};
use crate::error::Result;
use crate::lifetime::recycle::{self, Lists, Recycled};

/// The most streams a thread keeps per context and priority.
pub(super) const KEPT: usize = 16;

impl Recycled for StreamHandle {
    const WHAT: &'static str = "stream";

    fn done(self, driver: &'static dyn Driver) -> Result<bool> {
        driver.stream_query(self)
    }

    fn destroy(self, driver: &'static dyn Driver) -> Result<()> {
        driver.stream_destroy(self)
    }
}

thread_local! {
    static LISTS: RefCell<Lists<StreamHandle>> = const { RefCell::new(Lists::new(KEPT)) };
}

/// An idle stream of `context` and `priority` that this thread kept, if it has one: one
/// known idle, else the oldest that was given work if `cuStreamQuery` says it is done.
pub(super) fn take(context: ContextHandle, priority: i32) -> Option<StreamHandle> {
    recycle::take(&LISTS, context, i64::from(priority))
}

/// Keeps `handle` for this thread's next stream of `context` and `priority` (`idle`: it
/// was given no work since it was last known idle); `false`: the caller destroys it.
pub(super) fn give(
    context: ContextHandle,
    priority: i32,
    driver: &'static dyn Driver,
    handle: StreamHandle,
    idle: bool,
) -> bool {
    recycle::give(&LISTS, context, i64::from(priority), driver, handle, idle)
}
