//! The current-context rule: the library, not the user, makes the right context current where
//! the driver needs one, and restores the caller's after. Where the driver takes the context
//! from its arguments (record, wait, sync and query of a stream or event), no context call is
//! made at all.

use crate::driver::{ContextHandle, Driver};
use crate::error::Result;

/// Runs `f` with `handle` current on the calling thread: directly where it already is (one
/// `cuCtxGetCurrent`), between a push and a pop otherwise.
///
/// `f`'s result is the result: a pop that fails after `f` queued its work is logged, not
/// reported, so that work the driver accepted (a copy, a host function holding a closure) is
/// never reported as failed and freed under it. The pop runs even if `f` panics.
#[inline]
pub(crate) fn with_current<T>(
    driver: &'static dyn Driver,
    handle: ContextHandle,
    f: impl FnOnce(&'static dyn Driver) -> Result<T>,
) -> Result<T> {
    if current(driver)? == handle {
        return f(driver);
    }
    driver.ctx_push_current(handle)?;
    let _pop = Pop(driver);
    f(driver)
}

/// Pops the context pushed by [`with_current`] when dropped, on return or unwind.
struct Pop(&'static dyn Driver);

impl Drop for Pop {
    fn drop(&mut self) {
        if let Err(e) = self.0.ctx_pop_current() {
            log::error!("restoring the caller's context after a driver call: {e}");
        }
    }
}

/// The calling thread's current context (`cuCtxGetCurrent`), by the call that returns in
/// registers; the error, where there is one, from the call that builds it.
#[inline]
pub(crate) fn current(driver: &'static dyn Driver) -> Result<ContextHandle> {
    match driver.ctx_current_or_none() {
        Some(handle) => Ok(handle),
        None => driver.ctx_get_current(),
    }
}

/// Whether `handle` is current, by the call that returns in registers; `false` also where the
/// call failed (a slow path then reports the error).
#[inline]
pub(crate) fn is_current_fast(driver: &'static dyn Driver, handle: ContextHandle) -> bool {
    driver.ctx_current_or_none() == Some(handle)
}

/// Makes `handle` current (`cuCtxSetCurrent`), replacing what was, unless it already is:
/// reading is cheaper than setting (seen on the H200).
#[inline]
pub(crate) fn set_current(driver: &'static dyn Driver, handle: ContextHandle) -> Result<()> {
    if is_current_fast(driver, handle) {
        return Ok(());
    }
    set_current_slow(driver, handle)
}

#[cold]
#[inline(never)]
fn set_current_slow(driver: &'static dyn Driver, handle: ContextHandle) -> Result<()> {
    // A second read, on the switch path only: handing the first read in instead cost the
    // already-current path more (measured on the stand-in driver: see the benches' README).
    if current(driver)? == handle {
        return Ok(());
    }
    driver.ctx_set_current(handle)
}
