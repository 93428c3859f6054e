//! The ways a stream calls the driver: the door's verbs ([`crate::order`]) and what they
//! share.

use std::sync::atomic::Ordering;
use std::thread::ThreadId;

use super::{Kind, Stream};
use crate::driver::{Driver, StreamHandle};
use crate::error::{Error, Result};

impl Stream {
    // The ways a stream calls the driver, by what they vary (each a single driver call on
    // the stream's handle; the per-thread default stream is used from its own thread only):
    //
    // | verb               | queues work | context made current  | legacy stream's gate | capture mode   |
    // |--------------------|-------------|-----------------------|----------------------|----------------|
    // | `queue`            | yes         | default streams       | yes                  | the thread's   |
    // | `queue_in_context` | yes         | always                | yes                  | the thread's   |
    // | `query`            | no          | default streams       | yes                  | relaxed        |
    // | `capture_query`    | no (begins) | default streams       | no                   | the thread's   |
    //
    // Below them, `on_handle` (the stream's own handle, or `on_default_stream`, which adds the
    // gate) and `with_context` (context current, thread checked). New stream work goes
    // through `queue`, a question through `query` (see `crate::order`).

    /// The door's verb for work ([`crate::order`]): one driver call that may queue work on
    /// this stream's handle, with its context made current first for the default streams
    /// (whose handles mean "the current context's"), the legacy stream kept apart from
    /// captures of blocking streams in its context and the per-thread stream used from its own
    /// thread only. For a call the driver also checks against the current context, see
    /// [`Stream::queue_in_context`].
    #[inline]
    pub(crate) fn queue<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        self.note_work();
        self.on_handle(f)
    }

    /// Notes that work may be queued on the handle (a load, and a store the first time only,
    /// so that threads queueing on one stream do not share a written cache line).
    #[inline]
    pub(super) fn note_work(&self) {
        if !self.inner.worked.load(Ordering::Relaxed) {
            self.inner.worked.store(true, Ordering::Relaxed);
        }
    }

    /// The door's verb for questions and waits ([`crate::order::query`]): one driver call that
    /// queues nothing (`cuStreamQuery`, `cuStreamSynchronize`, a property), made with this
    /// thread's capture mode relaxed while a capture may be open, so that no other thread's
    /// global capture refuses it (and is invalidated by it). Otherwise as [`Stream::queue`].
    #[inline]
    pub(crate) fn query<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        let driver = self.inner.driver;
        crate::order::query(driver, || self.on_handle(f))
    }

    /// The door's verb for capture questions (`cuStreamIsCapturing`, the capture's graph and
    /// id, beginning a capture): the driver answers them whatever capture is open, on the
    /// legacy stream too, so they pass outside the legacy stream's gate and in the thread's
    /// own capture mode (a capture begun in it is the thread's).
    #[inline]
    pub(crate) fn capture_query<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        let inner = &*self.inner;
        if matches!(inner.kind, Kind::Owned | Kind::Borrowed) {
            return f(inner.driver, inner.handle);
        }
        self.with_context(f)
    }

    /// The door's verb for work the driver checks against the current context, such as
    /// copies of pool memory (`cuMemcpy*Async` of a pool's buffer fails with
    /// `CUDA_ERROR_INVALID_VALUE` while another device's context is current): as
    /// [`Stream::queue`], with the stream's context current (restoring the caller's after; one
    /// `cuCtxGetCurrent` when it is current already).
    #[inline]
    pub(crate) fn queue_in_context<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        self.note_work();
        let inner = &*self.inner;
        if !matches!(inner.kind, Kind::Owned | Kind::Borrowed) {
            return self.on_default_stream(f);
        }
        inner.context.with_current(|driver| f(driver, inner.handle))
    }

    /// Makes one driver call on this stream's handle: at once on a stream of its own, through
    /// [`Stream::on_default_stream`] on a default stream.
    #[inline]
    fn on_handle<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        let inner = &*self.inner;
        if matches!(inner.kind, Kind::Owned | Kind::Borrowed) {
            return f(inner.driver, inner.handle);
        }
        self.on_default_stream(f)
    }

    /// One driver call on a default stream, with its context current: the per-thread one
    /// from its own thread only, the legacy one kept apart from captures of blocking streams
    /// in its context (which the driver would invalidate). Out of line, so that calls on
    /// other streams pay nothing for it.
    #[inline(never)]
    fn on_default_stream<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        let inner = &*self.inner;
        if inner.kind == Kind::Legacy {
            return crate::lifetime::captures::on_legacy_stream(
                inner.driver,
                inner.context_handle,
                || inner.context.with_current(|driver| f(driver, inner.handle)),
            );
        }
        self.with_context(f)
    }

    /// One driver call on this stream's handle with its context current, outside the legacy
    /// stream's gate; the per-thread stream from its own thread only.
    #[inline]
    fn with_context<T>(
        &self,
        f: impl FnOnce(&'static dyn Driver, StreamHandle) -> Result<T>,
    ) -> Result<T> {
        let inner = &*self.inner;
        if let Kind::PerThread(thread) = inner.kind {
            check_thread(thread)?;
        }
        inner.context.with_current(|driver| f(driver, inner.handle))
    }
}

/// Refuses the use of a per-thread default stream from another thread than its own.
#[inline]
fn check_thread(owner: ThreadId) -> Result<()> {
    if std::thread::current().id() == owner {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "stream",
        reason: "it is the per-thread default stream of another thread; on this thread the \
                 same handle is this thread's own stream. Use Stream::per_thread_default here, \
                 or a stream of its own"
            .to_owned(),
    })
}
