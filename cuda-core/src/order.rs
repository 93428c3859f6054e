//! The one door for stream work: every operation that queues work on a stream, queries a
//! stream or an event, or waits for one goes through here (or through the verbs of
//! [`Stream`] that call it: [`Stream::queue`], [`Stream::queue_in_context`],
//! [`Stream::query`] and [`Stream::capture_query`]). The door keeps four promises, so that a
//! feature built on it cannot forget one:
//!
//! 1. **Queries and waits are made in relaxed capture mode** while a capture begun through
//!    this crate may be open ([`query`]): the driver refuses a query or a synchronisation made
//!    in a thread's own mode while another thread captures in global mode, and invalidates
//!    that capture. Outside captures this costs one atomic load. The look and the call are
//!    two steps: a global capture another thread begins between them is refused the call's
//!    way (invalidated). The questions of timed waits and futures, which sleep or yield
//!    anyway, are made relaxed always (`order::relaxed`, two driver calls more); a plain
//!    `is_done` or `sync` keeps the one load, and that window.
//! 2. **Cross-stream order is one step.** Stream-ordered memory is used only between its
//!    allocation and its free in stream order: work on another stream than the memory's
//!    deallocation streams (its *homes*) waits for the work queued on each home so far (its
//!    allocation among it), is queued, and then each home waits for it (so that its free
//!    cannot overtake it). Those three steps are made under the homes' locks ([`Door`]), so
//!    that no other thread's cross-stream work on the same home, nor a write through a shared
//!    handle on it, comes between them. On the buffer's own stream this is the work alone (one
//!    compare), but for a write through a shared handle (`&Arc<Buffer>`, a `SharedSlice`),
//!    which takes the lock there too ([`writing`]).
//! 3. **Access is checked when the work is queued** (by the callers: a buffer's
//!    `check_reachable` holds its resource's access gate until the work is queued; a graph's
//!    launch checks the memory of its copy and fill nodes again).
//! 4. **Every wait is bounded by the caller's deadline** where the caller gives one (the timed
//!    waits ask [`query`] in a loop, `crate::wait::until`; a copy to the host with a deadline
//!    waits for device work with the deadline and copies only then).
//!
//! Captures and the cross-stream order:
//!
//! - neither the work's stream nor a home captures: the order above;
//! - the work's stream captures (it began a capture, or joined one through an event wait): the
//!   work is recorded into the graph with no ordering across streams, as
//!   [`Stream::begin_capture`] documents (the graph's launches are what the caller orders; an
//!   event recorded outside the capture and waited on inside fails with
//!   `CUDA_ERROR_STREAM_CAPTURE_ISOLATION` and invalidates it);
//! - a home captures and the work's stream does not: refused ([`Error::Capture`]). Recording
//!   on the home would be captured, and a wait on it would pull the work's stream into that
//!   capture, so the work would not run (and each launch of the graph would run it instead).
//!
//! Whether a stream captures is the driver's answer (`cuStreamIsCapturing`), asked only while a
//! capture begun through this crate is open somewhere in the process ([`captures_open`]): so
//! streams that joined a capture by an event wait count, and outside captures the answer costs
//! one atomic load.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use crate::driver::Driver;
use crate::error::{DriverCode, Error, Result};
use crate::stream::Stream;

use crate::lifetime::captures::captures_open;

/// `CU_STREAM_CAPTURE_MODE_RELAXED`.
const RELAXED: u32 = 2;

/// Makes `f`, a query or a wait that queues nothing (`cuStreamQuery`, `cuEventQuery`, a
/// synchronisation), so that no capture of another thread forbids it: while a capture begun
/// through this crate may be open, with this thread's capture mode relaxed for it; otherwise
/// as it is (one load).
#[inline]
pub(crate) fn query<T>(driver: &'static dyn Driver, f: impl FnOnce() -> T) -> T {
    if !captures_open() {
        return f();
    }
    relaxed(driver, f)
}

/// Runs `f` with this thread's stream capture mode relaxed
/// (`cuThreadExchangeStreamCaptureMode`, restored after): for a call that another thread's
/// global capture would forbid (a synchronisation, a synchronous free) on work that is not
/// the capture's. Where the mode cannot be changed, `f` runs as it is.
#[cold]
pub(crate) fn relaxed<T>(driver: &'static dyn Driver, f: impl FnOnce() -> T) -> T {
    let Ok(previous) = driver.thread_exchange_capture_mode(RELAXED) else {
        return f();
    };
    let done = f();
    if let Err(e) = driver.thread_exchange_capture_mode(previous) {
        log::error!("restoring this thread's stream capture mode: {e}");
    }
    done
}

/// Whether `error` is the driver's refusal of a call because of a stream capture.
pub(crate) fn is_capture_refusal(error: &Error) -> bool {
    matches!(
        error.driver_code(),
        Some(
            DriverCode::STREAM_CAPTURE_UNSUPPORTED
                | DriverCode::STREAM_CAPTURE_INVALIDATED
                | DriverCode::STREAM_CAPTURE_IMPLICIT
        )
    )
}

/// The door's locks: one per stripe of streams (a stream's stripe is [`Stream::door`]), taken
/// by the cross-stream orderings of the streams' memory and by writes through shared handles.
const STRIPES: usize = 64;

static LOCKS: [Mutex<()>; STRIPES] = [const { Mutex::new(()) }; STRIPES];

thread_local! {
    /// The stripes this thread holds (bit `i`: stripe `i`), so that work queued while the
    /// door is held (an NCCL group's end, a graph launched within an ordering) does not wait
    /// for itself.
    static HELD: Cell<u64> = const { Cell::new(0) };
}

/// The door held for some homes: no other thread orders work across streams with them, or
/// writes their memory through a shared handle, until it is dropped.
pub(crate) struct Door {
    _guards: Vec<MutexGuard<'static, ()>>,
    /// The stripes taken here (not those an outer door of this thread held already).
    taken: u64,
}

impl Drop for Door {
    fn drop(&mut self) {
        let taken = self.taken;
        let _ = HELD.try_with(|held| held.set(held.get() & !taken));
        // The guards unlock as the fields drop, after the mask is cleared: only this thread
        // reads its mask.
    }
}

impl Door {
    /// Takes the locks of `streams`, in stripe order (so two threads never wait for each
    /// other), skipping those this thread holds already.
    pub(crate) fn enter(streams: &[&Stream]) -> Door {
        Door::take(streams.iter().fold(0, |wanted, s| wanted | 1 << s.door()))
    }

    /// [`Door::enter`] of `homes` and `stream`.
    pub(crate) fn enter_with(homes: &[&Stream], stream: &Stream) -> Door {
        Door::take(
            homes
                .iter()
                .fold(1 << stream.door(), |wanted, s| wanted | 1 << s.door()),
        )
    }

    fn take(wanted: u64) -> Door {
        let held = HELD.try_with(Cell::get).unwrap_or(0);
        let taken = wanted & !held;
        let mut guards = Vec::with_capacity(taken.count_ones() as usize);
        let mut left = taken;
        while left != 0 {
            let stripe = left.trailing_zeros() as usize;
            // Only `()` is guarded: a poisoned lock guards nothing broken.
            guards.push(LOCKS[stripe].lock().unwrap_or_else(|e| e.into_inner()));
            left &= left - 1;
        }
        let _ = HELD.try_with(|mask| mask.set(held | taken));
        Door {
            _guards: guards,
            taken,
        }
    }
}

/// The stripe of the stream with this key (its handle and context's handle as numbers): the
/// top bits of a 64-bit mix of it (SplitMix64's finaliser), so that handles a few bytes apart
/// spread over the stripes.
pub(crate) fn stripe(key: u64) -> u32 {
    let mut z = key;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 58) as u32
}

/// Queues `op`, work on `stream` that uses memory whose deallocation streams are `homes`, so
/// that the stream-order contract holds (see the module's docs). On the same stream this is
/// `op` alone.
#[inline]
pub(crate) fn in_stream_order<T>(
    homes: &[&Stream],
    stream: &Stream,
    op: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if homes.iter().all(|home| home.same_as(stream)) {
        if !homes.is_empty() {
            stream.note_own_home();
        }
        return op();
    }
    across_streams(homes, stream, op)
}

/// [`in_stream_order`] for work that writes memory: where `shared` (the memory was reached
/// through a shared handle, `&Arc<Buffer>` or a `SharedSlice`, which other threads may hold
/// too) the homes' door is held on their own stream as well, so that the write never comes
/// between the steps of another thread's cross-stream ordering on them.
#[inline]
pub(crate) fn writing<T>(
    homes: &[&Stream],
    stream: &Stream,
    shared: bool,
    op: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if !shared {
        return in_stream_order(homes, stream, op);
    }
    shared_write(homes, stream, op)
}

#[cold]
#[inline(never)]
fn shared_write<T>(
    homes: &[&Stream],
    stream: &Stream,
    op: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if homes.iter().all(|home| home.same_as(stream)) {
        stream.note_own_home();
        let _door = Door::enter(homes);
        return op();
    }
    across_streams(homes, stream, op)
}

#[cold]
#[inline(never)]
fn across_streams<T>(
    homes: &[&Stream],
    stream: &Stream,
    op: impl FnOnce() -> Result<T>,
) -> Result<T> {
    // The work's stream's lock too: no capture begins on it between the question below and
    // the wait back (a capture begun then would take the work but not the waits).
    let _door = Door::enter_with(homes, stream);
    if stream.capturing() {
        // No capture ends from here until the work is queued (asked again under the guard):
        // work taken for captured, ended meanwhile, would run with no order at all.
        let _steady = crate::lifetime::captures::steady();
        if stream.capturing() {
            // Nothing crosses the capture's boundary: the graph it ends in orders its launches
            // with these streams instead.
            stream.note_captured_homes(homes);
            return op();
        }
    }
    wait_for_homes(homes, stream)?;
    let value = op()?;
    homes_wait_for(homes, stream).map(|()| value)
}

/// `stream` (which does not capture) waits for the work queued on each home so far, refused
/// where a home captures.
fn wait_for_homes(homes: &[&Stream], stream: &Stream) -> Result<()> {
    check_homes(homes, stream)?;
    for home in homes {
        // Neither captures (checked above): no capture's edge to check again.
        stream.wait_for_unchecked(home)?;
    }
    Ok(())
}

/// The first half of [`in_stream_order`], for work queued later than this call by someone
/// else (an NCCL group's calls, which NCCL queues at the group's end): `stream` waits for the
/// work queued on each home so far. The caller holds the homes' [`Door`] from before this
/// call until after [`order_homes_after`], the second half, once the work is queued. Nothing
/// on the same stream, or while `stream` captures.
#[cfg(feature = "nccl")]
pub(crate) fn order_after_homes(homes: &[&Stream], stream: &Stream) -> Result<()> {
    if homes.iter().all(|home| home.same_as(stream)) || stream.capturing() {
        return Ok(());
    }
    wait_for_homes(homes, stream)
}

/// Refuses work on `stream` (which does not capture) over memory whose home captures.
pub(crate) fn check_homes(homes: &[&Stream], stream: &Stream) -> Result<()> {
    if !captures_open() {
        return Ok(());
    }
    for home in homes {
        if !home.same_as(stream) && home.capturing() {
            return Err(Error::Capture {
                reason: "the memory's deallocation stream is capturing, and work on another \
                         stream that is not would be pulled into that capture instead of \
                         running; use the memory on a stream of the capture, or after \
                         end_capture"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// After work was queued on `stream`: each home that is another stream waits for it (one
/// record of `stream`'s order event, a wait on each). Should that fail, the work is queued but
/// its homes do not wait for it: then `stream` is synchronised, so that nothing queued later on
/// a home can overtake the work, and the work is reported done. Nothing while `stream`
/// captures, and refused (nothing recorded) when a home captures: see [`in_stream_order`].
pub(crate) fn order_homes_after(homes: &[&Stream], stream: &Stream) -> Result<()> {
    if homes.iter().all(|home| home.same_as(stream)) || stream.capturing() {
        return Ok(());
    }
    check_homes(homes, stream)?;
    homes_wait_for(homes, stream)
}

/// [`order_homes_after`] once its checks were made (by it, or by [`across_streams`] before
/// the work was queued).
fn homes_wait_for(homes: &[&Stream], stream: &Stream) -> Result<()> {
    let ordered = (|| -> Result<()> {
        let event = stream.order_event()?;
        stream.record(event)?;
        for home in homes {
            if !home.same_as(stream) {
                home.wait(event)?;
            }
        }
        Ok(())
    })();
    match ordered {
        Ok(()) => Ok(()),
        Err(e) => {
            log::warn!(
                "ordering a buffer's stream after work on another failed ({e}); synchronising \
                 that work instead"
            );
            stream.sync()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stripes spread the handles a driver hands out (addresses a few hundred bytes apart)
    /// over the locks: bug caught, a key whose low bits alone pick the stripe, so that every
    /// stream shares one lock.
    #[test]
    fn stream_keys_a_few_bytes_apart_fall_on_many_stripes() {
        let stripes: std::collections::HashSet<u32> = (0..64u64)
            .map(|i| stripe(0x5555_0000_0000 + i * 0x280))
            .collect();
        assert!(stripes.len() >= 32, "{} stripes", stripes.len());
        assert!(stripes.iter().all(|&s| (s as usize) < STRIPES));
    }
}
