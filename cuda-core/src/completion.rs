//! Completion as a `Future`: [`Stream::completion`] and [`Event::completion`], for async code
//! on any executor (nothing here names a runtime).
//!
//! A stream's completion is woken by the stream itself: a host function queued on it
//! (`cuLaunchHostFunc`) marks it done and wakes the task, so no thread polls. An event has no
//! host function of its own; its completion asks `cuEventQuery` when polled, and between polls
//! one thread of the crate's, shared by every pending event completion, wakes the task after a
//! pause (from 10 µs, doubling to at most 1 ms), as the timed waits ask.

use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::event::{Event, EventOptions};
use crate::stream::Stream;

/// What the host function and the future share.
#[derive(Default)]
struct Shared {
    done: bool,
    waker: Option<Waker>,
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // Only flags and a waker are guarded: a poisoned lock still guards good values.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The completion of the work queued on a stream up to [`Stream::completion`]'s call, as a
/// `Future` (output `Result<()>`): ready once that work has finished. It owns what it needs
/// (`'static`), so it can be sent to another task. See [`Stream::completion`].
#[must_use = "a future does nothing unless awaited or polled"]
pub struct StreamCompletion {
    shared: Arc<Mutex<Shared>>,
    /// Recorded on the stream just after the host function: what a poll asks (the work's end,
    /// or the stream's failure), so that the future holds no stream. Held, a stream dropped
    /// while it captured would keep its capture open while the future is pending, and a
    /// context's synchronisation on another thread would wait for it for ever.
    event: Event,
}

impl std::fmt::Debug for StreamCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamCompletion")
            .field("done", &lock(&self.shared).done)
            .field("event", &self.event)
            .finish()
    }
}

impl Stream {
    /// A `Future` that is ready once the work queued on this stream so far has finished:
    /// `stream.completion()?.await`, on any executor. The stream wakes the task itself, from a
    /// host function queued now (`cuLaunchHostFunc`): no thread polls, and the task wakes
    /// within the driver's host-function latency of the work's end. Work queued after this
    /// call is not waited for.
    ///
    /// A failure of the stream (a kernel's fault) is the future's error: a failed stream runs
    /// no more host functions, so the call also records an event just after the host
    /// function, and each poll before the host function ran asks `cuEventQuery` of it once
    /// (with this thread's capture mode relaxed while any capture may be open, so that a poll
    /// never invalidates another thread's capture). Such a failure wakes no task by itself, so
    /// bound a wait that must end with the executor's timer (`tokio::time::timeout`, say) or
    /// [`Stream::sync_timeout`].
    ///
    /// Refused on a stream that captures, as [`Stream::launch_host_func`] is. The waker is
    /// woken on a driver thread: wakers of executors only schedule the task, which is fine
    /// there; a waker of one's own must not call CUDA.
    ///
    /// The future holds that event, not the stream: the stream may be dropped while the future
    /// is pending (its queued work runs on, and the future still sees its end or its
    /// failure), and a capture begun on it meanwhile ends when its last clone is dropped, as
    /// it would without the future.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), cuda_core::Error> {
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(1 << 20, &stream)?;
    /// buffer.fill(1u32, &stream)?;
    /// stream.completion()?.await?; // other tasks run meanwhile
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias("cuLaunchHostFunc", "async"))]
    pub fn completion(&self) -> Result<StreamCompletion> {
        // Made first: nothing is queued where it cannot be.
        let event = self.context().create_event(EventOptions::default())?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let marked = Arc::clone(&shared);
        self.launch_host_func(move || {
            let waker = {
                let mut state = lock(&marked);
                state.done = true;
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
        })?;
        // After the host function: done once it ran, and failed with the stream.
        self.record(&event)?;
        Ok(StreamCompletion { shared, event })
    }
}

impl Future for StreamCompletion {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        {
            let mut state = lock(&self.shared);
            if state.done {
                return Poll::Ready(Ok(()));
            }
            match &mut state.waker {
                Some(waker) => waker.clone_from(cx.waker()),
                none => *none = Some(cx.waker().clone()),
            }
        }
        // Not marked yet: a failed stream never runs the host function, so ask the event
        // recorded after it once (relaxed, so that no other thread's global capture refuses
        // it; its record is in no capture, so a capture begun on the stream since is not
        // asked).
        match self.event.is_done_relaxed() {
            Ok(true) => Poll::Ready(Ok(())),
            Ok(false) => Poll::Pending,
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

/// The completion of the work before an event's last record, as a `Future` (output
/// `Result<()>`). See [`Event::completion`].
#[must_use = "a future does nothing unless awaited or polled"]
#[derive(Debug)]
pub struct EventCompletion<'a> {
    event: &'a Event,
    pause: Duration,
}

impl Event {
    /// A `Future` that is ready once the work before the event's last record has finished
    /// (an event never recorded is done): `event.completion().await`, on any executor. Each
    /// poll asks `cuEventQuery`; between polls one thread of the crate's, shared by all
    /// pending event completions, wakes the task after a pause (10 µs, doubling to at most
    /// 1 ms), so a completion is seen within about a millisecond of the work's end. For
    /// wakes from the stream itself, await [`Stream::completion`] instead.
    #[doc(alias("cuEventQuery", "async"))]
    pub fn completion(&self) -> EventCompletion<'_> {
        EventCompletion {
            event: self,
            pause: Duration::from_micros(10),
        }
    }
}

impl Future for EventCompletion<'_> {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        match self.event.is_done_relaxed() {
            Ok(true) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(e)),
            Ok(false) => {
                let pause = self.pause;
                self.pause = (pause * 2).min(Duration::from_millis(1));
                if !wake_after(cx.waker().clone(), pause) {
                    // No timer thread: ask again at once rather than never.
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }
    }
}

/// A waker due at a time, ordered soonest first in the timer's heap.
struct Due(Instant, Waker);

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.0.cmp(&self.0)
    }
}

type Timer = (Mutex<BinaryHeap<Due>>, Condvar);

/// Wakes `waker` after `pause`, on the crate's timer thread (started on first use); `false`
/// if that thread could not be started.
fn wake_after(waker: Waker, pause: Duration) -> bool {
    static TIMER: OnceLock<Option<Arc<Timer>>> = OnceLock::new();
    let timer = TIMER.get_or_init(|| {
        let timer: Arc<Timer> = Arc::default();
        let own = Arc::clone(&timer);
        std::thread::Builder::new()
            .name("cuda-core completion timer".to_owned())
            .spawn(move || run_timer(&own))
            .ok()
            .map(|_| timer)
    });
    let Some(timer) = timer else { return false };
    let mut heap = timer.0.lock().unwrap_or_else(|e| e.into_inner());
    heap.push(Due(Instant::now() + pause, waker));
    timer.1.notify_one();
    true
}

fn run_timer(timer: &Timer) {
    let relock = || timer.0.lock().unwrap_or_else(|e| e.into_inner());
    let mut heap = relock();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while heap.peek().is_some_and(|next| next.0 <= now) {
            due.extend(heap.pop().map(|Due(_, waker)| waker));
        }
        if !due.is_empty() {
            // Woken without the lock: a waker may poll, and the poll come back here.
            drop(heap);
            due.into_iter().for_each(Waker::wake);
            heap = relock();
            continue;
        }
        heap = match heap.peek().map(|next| next.0 - now) {
            Some(wait) => match timer.1.wait_timeout(heap, wait) {
                Ok((heap, _)) => heap,
                Err(poisoned) => poisoned.into_inner().0,
            },
            None => timer.1.wait(heap).unwrap_or_else(|e| e.into_inner()),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_timer_wakes_each_waker_once_after_its_pause_soonest_first() {
        let late = Arc::new(Count(AtomicUsize::new(0)));
        let soon = Arc::new(Count(AtomicUsize::new(0)));
        let start = Instant::now();
        assert!(wake_after(
            Waker::from(late.clone()),
            Duration::from_millis(200)
        ));
        assert!(wake_after(
            Waker::from(soon.clone()),
            Duration::from_millis(20)
        ));
        while soon.0.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(5), "never woken");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Catches a timer that wakes in push order, or before the pause.
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert_eq!(late.0.load(Ordering::SeqCst), 0);
        while late.0.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(5), "never woken");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(start.elapsed() >= Duration::from_millis(200));
        std::thread::sleep(Duration::from_millis(20));
        // Once each.
        assert_eq!(soon.0.load(Ordering::SeqCst), 1);
        assert_eq!(late.0.load(Ordering::SeqCst), 1);
    }
}
