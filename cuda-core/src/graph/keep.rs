//! What graphs keep alive: the values their nodes refer to (kernels, buffers, events, host
//! functions), handed to the driver as CUDA user objects, so that the driver itself holds them
//! for as long as any graph, clone, executable graph or queued launch refers to them.
//!
//! A user object's destructor runs on a driver thread, where no CUDA call may be made, and
//! dropping a buffer or a kernel makes CUDA calls; so the destructor only sends the values to
//! a thread of the crate's, which drops them there (one that stays, and helpers while it is
//! busy, so that a drop that waits holds up no other release).

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::driver::{Driver, GraphHandle, UserObjectHandle};
use crate::error::Result;

/// One value a graph keeps alive.
pub(crate) type Kept = Box<dyn Send>;

/// The values a graph keeps: those not yet handed to the driver, and the user objects it holds
/// (which a graph that embeds it, or a clone, takes a reference of too).
#[derive(Default)]
pub(crate) struct Keep {
    pending: Vec<Kept>,
    objects: Vec<UserObjectHandle>,
}

impl Keep {
    /// Keeps `value` alive with the graph.
    pub(crate) fn push(&mut self, value: Kept) {
        self.pending.push(value);
    }

    /// Hands the pending values to the driver as one user object owned by `graph`: from then
    /// on the driver keeps them (through clones, instantiations and launches) and releases
    /// them when nothing refers to them.
    pub(crate) fn flush(&mut self, driver: &'static dyn Driver, graph: GraphHandle) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if !release_thread_started() {
            log::error!(
                "no thread to release graph resources could be started: the values a graph \
                 keeps are never released"
            );
        }
        let values = std::mem::take(&mut self.pending);
        let data = Box::into_raw(Box::new(values)).cast::<c_void>();
        let object = match driver.user_object_create(data, release) {
            Ok(object) => object,
            Err(e) => {
                // SAFETY: the driver refused it, so it will never run the destructor.
                self.pending = *unsafe { Box::from_raw(data.cast::<Vec<Kept>>()) };
                return Err(e);
            }
        };
        if let Err(e) = driver.graph_take_user_object(graph, object) {
            // The graph's nodes refer to the values: never release them.
            log::error!("a graph could not take its user object; its values are kept for good");
            return Err(e);
        }
        self.objects.push(object);
        Ok(())
    }

    /// Gives `graph` a reference of each user object this keeps (after [`Keep::flush`]), and
    /// notes them as held by `into` too.
    pub(crate) fn share(
        &self,
        driver: &'static dyn Driver,
        graph: GraphHandle,
        into: &mut Keep,
    ) -> Result<()> {
        for &object in &self.objects {
            driver.user_object_retain(object)?;
            if let Err(e) = driver.graph_take_user_object(graph, object) {
                let _ = driver.user_object_release(object);
                return Err(e);
            }
            into.objects.push(object);
        }
        Ok(())
    }
}

/// A host node's function: the driver's entry point and its data, the boxed closure (which
/// must be kept alive while the node may run).
pub(crate) type HostFn = (unsafe extern "C" fn(*mut c_void), *mut c_void);

/// Boxes `f` for a host node: the box to keep, and the entry point and data for the driver.
pub(crate) fn host_fn<F: Fn() + Send + Sync + 'static>(f: F) -> (Box<F>, HostFn) {
    unsafe extern "C" fn trampoline<F: Fn()>(data: *mut c_void) {
        // SAFETY: `data` is the boxed closure kept alive while the driver may run the node;
        // it is only read.
        let f = unsafe { &*data.cast_const().cast::<F>() };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
            std::process::abort();
        }
    }
    let boxed = Box::new(f);
    let data = (&*boxed as *const F).cast_mut().cast::<c_void>();
    (boxed, (trampoline::<F>, data))
}

/// The most release threads at once: one that stays, and helpers started while every thread
/// is busy dropping (a drop that waits, as a registered vector's or a per-thread stream's
/// buffer's synchronous free does, then holds up no other release), each ending after
/// [`HELPER_IDLE`] with nothing to drop.
const RELEASE_THREADS: usize = 8;
const HELPER_IDLE: Duration = Duration::from_millis(500);

/// The batches waiting for a release thread, and the threads' counts.
#[derive(Default)]
struct Releases {
    batches: VecDeque<Vec<Kept>>,
    /// Threads waiting for a batch.
    idle: usize,
    /// Threads running (or starting).
    threads: usize,
}

fn releases() -> &'static (Mutex<Releases>, Condvar) {
    static RELEASES: OnceLock<(Mutex<Releases>, Condvar)> = OnceLock::new();
    RELEASES.get_or_init(Default::default)
}

/// A release thread: drops the batches it takes, one after another; a helper (`stays` false)
/// ends once none came for [`HELPER_IDLE`].
fn release_thread(stays: bool) {
    // What it drops last of a stream or an event is destroyed: it makes none to reuse them.
    crate::lifetime::recycle::keep_none_here();
    let (state, ready) = releases();
    let relock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let mut guard = relock();
    loop {
        if let Some(values) = guard.batches.pop_front() {
            drop(guard);
            drop(values);
            let (count, changed) = released();
            if let Ok(mut count) = count.lock() {
                *count += 1;
            }
            changed.notify_all();
            guard = relock();
            continue;
        }
        guard.idle += 1;
        let (woken, timed_out) = if stays {
            (ready.wait(guard).unwrap_or_else(|e| e.into_inner()), false)
        } else {
            let (woken, wait) = ready
                .wait_timeout(guard, HELPER_IDLE)
                .unwrap_or_else(|e| e.into_inner());
            (woken, wait.timed_out())
        };
        guard = woken;
        guard.idle -= 1;
        if timed_out && guard.batches.is_empty() {
            guard.threads -= 1;
            return;
        }
    }
}

/// Starts the release thread that stays, if none runs yet (before the driver may hand values
/// back, so that it is not started on a driver's thread): whether one runs.
fn release_thread_started() -> bool {
    let (state, _) = releases();
    let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
    if guard.threads > 0 {
        return true;
    }
    guard.threads = 1;
    drop(guard);
    if start_release_thread(true) {
        return true;
    }
    state.lock().unwrap_or_else(|e| e.into_inner()).threads = 0;
    false
}

/// Starts a release thread (`stays`: the first, which never ends): whether it started.
fn start_release_thread(stays: bool) -> bool {
    std::thread::Builder::new()
        .name("cuda-core graph release".to_owned())
        .spawn(move || release_thread(stays))
        .is_ok()
}

fn released() -> &'static (Mutex<u64>, Condvar) {
    static RELEASED: (Mutex<u64>, Condvar) = (Mutex::new(0), Condvar::new());
    &RELEASED
}

/// Sends values to a release thread, which drops them off the calling thread (a driver's
/// thread, where CUDA may not be called): one that is idle, else a new one while fewer than
/// [`RELEASE_THREADS`] run. If no thread can be started at all, the values are never
/// dropped.
pub(crate) fn release_later(values: Vec<Kept>) {
    let (state, ready) = releases();
    let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
    guard.batches.push_back(values);
    if guard.idle > 0 {
        drop(guard);
        ready.notify_one();
        return;
    }
    if guard.threads < RELEASE_THREADS {
        let stays = guard.threads == 0;
        guard.threads += 1;
        drop(guard);
        if !start_release_thread(stays) {
            let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
            guard.threads -= 1;
            if guard.threads == 0 {
                // Nothing will ever take them: kept for good rather than dropped here.
                std::mem::forget(std::mem::take(&mut guard.batches));
            }
        }
    }
    // Otherwise every thread is busy, and the first to finish takes it.
}

/// The user objects' destructor, run by the driver once nothing refers to the object.
unsafe extern "C" fn release(data: *mut c_void) {
    // SAFETY: `data` is the box made in `Keep::flush`, given to one user object whose
    // destructor the driver runs once.
    let values = unsafe { Box::from_raw(data.cast::<Vec<Kept>>()) };
    release_later(*values);
}

/// How many sets of values that graphs kept alive have been released so far: a set is
/// released once no graph, executable graph or queued launch refers to it any more, and its
/// values (buffers, kernels, events, host functions) are then dropped on a thread of the
/// crate's. For leak checks and tests: see [`wait_for_graph_releases`].
pub fn graph_releases() -> u64 {
    released().0.lock().map_or(0, |count| *count)
}

/// Waits until [`graph_releases`] is above `since`, for at most `timeout`: whether it got there.
/// The driver releases what a finished launch held shortly after the launch ends, on a thread
/// of its own, so a stream synchronisation alone does not promise that it has happened.
pub fn wait_for_graph_releases(since: u64, timeout: Duration) -> bool {
    let (count, changed) = released();
    let deadline = Instant::now() + timeout;
    let Ok(mut guard) = count.lock() else {
        return false;
    };
    while *guard <= since {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        guard = match changed.wait_timeout(guard, left) {
            Ok((guard, _)) => guard,
            Err(_) => return false,
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Drops by sending on a channel, after waiting on another (or at once).
    struct Signal {
        hold: Option<mpsc::Receiver<()>>,
        dropped: mpsc::Sender<&'static str>,
        name: &'static str,
    }

    impl Drop for Signal {
        fn drop(&mut self) {
            if let Some(hold) = self.hold.take() {
                let _ = hold.recv_timeout(Duration::from_secs(10));
            }
            let _ = self.dropped.send(self.name);
        }
    }

    /// A release whose drop waits does not hold up the next one: it is dropped by another
    /// release thread meanwhile. Bug caught: one release thread for all, behind a slow drop
    /// (a registered vector's free, which synchronises its stream).
    #[test]
    fn a_slow_release_holds_up_no_other() {
        let (dropped, seen) = mpsc::channel();
        let (release, hold) = mpsc::channel::<()>();
        let slow = Signal {
            hold: Some(hold),
            dropped: dropped.clone(),
            name: "slow",
        };
        let quick = Signal {
            hold: None,
            dropped,
            name: "quick",
        };
        release_later(vec![Box::new(slow)]);
        release_later(vec![Box::new(quick)]);
        let first = seen.recv_timeout(Duration::from_secs(5));
        release.send(()).unwrap();
        assert_eq!(
            first,
            Ok("quick"),
            "the quick release waited for the slow one"
        );
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)), Ok("slow"));
    }
}
