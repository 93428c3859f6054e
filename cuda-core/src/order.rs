//! The stream-order contract, in one place: stream-ordered memory is used only between its
//! allocation and its free in stream order, and what captures is asked of the driver.
//!
//! Every safe operation on a buffer queues its work through [`in_stream_order`], naming the
//! streams the memory's frees are ordered on (its *homes*). On the buffer's own stream that is
//! the work alone (one compare). Across streams:
//!
//! - neither the work's stream nor a home captures: the work's stream waits for the work queued
//!   on each home so far (its allocation among it), and each home then waits for the work (so
//!   that its free cannot overtake it);
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

use crate::error::{Error, Result};
use crate::stream::Stream;

use crate::lifetime::captures::captures_open;

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
    if stream.capturing() {
        return op();
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

/// The first half of [`in_stream_order`], for work queued later than this call, once the
/// caller holds what the work uses (an NCCL group's calls, which NCCL queues at the group's
/// end): `stream` waits for the work queued on each home so far. [`order_homes_after`], once
/// the work is queued, is the second half. Nothing on the same stream, or while `stream`
/// captures.
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
