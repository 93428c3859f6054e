//! A crew of threads that run their shares of a criterion iteration count at once.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread::Scope;
use std::time::{Duration, Instant};

/// `threads` threads, each with state of its own made on it (a stream, a current context),
/// started together on their shares of an iteration count and waited for together.
///
/// [`Crew::run`] times the wall clock from the start to the last thread's end: criterion
/// then reports the time per operation of the whole crew, and its inverse is the crew's rate.
/// The threads wait on a barrier between runs, so they are made once per case, outside the
/// timed part. Dropping the crew ends its threads.
pub(crate) struct Crew<'env> {
    threads: usize,
    /// Each thread's share of the current run.
    shares: &'env [AtomicU64],
    start: &'env Barrier,
    done: &'env Barrier,
    stop: &'env AtomicBool,
}

/// What a crew's threads share; it must outlive the scope's threads, so the caller keeps it.
pub(crate) struct CrewSync {
    shares: Vec<AtomicU64>,
    start: Barrier,
    done: Barrier,
    stop: AtomicBool,
}

impl CrewSync {
    /// What a crew of `threads` threads needs.
    pub(crate) fn new(threads: usize) -> CrewSync {
        CrewSync {
            shares: (0..threads).map(|_| AtomicU64::new(0)).collect(),
            start: Barrier::new(threads + 1),
            done: Barrier::new(threads + 1),
            stop: AtomicBool::new(false),
        }
    }
}

impl<'env> Crew<'env> {
    /// Starts the crew's threads in `scope`: thread `i` makes its state with `make(i)`, then
    /// for each run calls `work(&mut state, share)`. A thread that panics aborts the process
    /// (the others would wait for it for ever).
    pub(crate) fn start<'scope, S, M, W>(
        scope: &'scope Scope<'scope, 'env>,
        sync: &'env CrewSync,
        make: &'env M,
        work: &'env W,
    ) -> Crew<'env>
    where
        M: Fn(usize) -> S + Sync,
        W: Fn(&mut S, u64) + Sync,
    {
        let threads = sync.shares.len();
        for i in 0..threads {
            scope.spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    let mut state = make(i);
                    loop {
                        sync.start.wait();
                        if sync.stop.load(Ordering::Acquire) {
                            break;
                        }
                        work(&mut state, sync.shares[i].load(Ordering::Acquire));
                        sync.done.wait();
                    }
                }));
                if outcome.is_err() {
                    eprintln!("scaling: a crew thread panicked; aborting");
                    std::process::abort();
                }
            });
        }
        Crew {
            threads,
            shares: &sync.shares,
            start: &sync.start,
            done: &sync.done,
            stop: &sync.stop,
        }
    }

    /// Runs `iters` operations in all, split as evenly as can be among the threads, and
    /// returns the wall-clock time from their start to the last one's end.
    pub(crate) fn run(&self, iters: u64) -> Duration {
        let threads = self.threads as u64;
        for (i, share) in self.shares.iter().enumerate() {
            let extra = u64::from((i as u64) < iters % threads);
            share.store(iters / threads + extra, Ordering::Release);
        }
        let start = Instant::now();
        self.start.wait();
        self.done.wait();
        start.elapsed()
    }
}

impl Drop for Crew<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.start.wait();
    }
}
