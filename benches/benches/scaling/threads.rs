//! `launch_threads_n{1,8,64}`, `event_churn_threads_n{1,8,64}` and
//! `stream_churn_threads_n{1,8,64}`: that many threads at once, each on its own.
//!
//! Each case runs a [`Crew`] per variant: its threads are made before the case, each makes
//! what it needs on itself (raw makes the primary context current and, to launch, a stream;
//! cuda-core makes a stream), and every sample starts them together on their shares of the
//! operations. The time is the wall clock from their start to the last one's end, divided by
//! the operations of all of them: the time per operation of the process, whose inverse is its
//! rate (launches per second). Flat sampling, so that every sample has the same count of
//! operations and the start's cost weighs alike on all.
//!
//! - `launch_threads`: `empty0`, one block of 32 threads, on the thread's stream (raw:
//!   `cuLaunchKernel` of the `CUkernel`; cuda-core: `launch`); each thread synchronises its
//!   stream after every 256 launches and at its end, inside the timed part.
//! - `event_churn_threads`: create and drop an event without timing (raw: `cuEventCreate`,
//!   `cuEventDestroy`; cuda-core reuses dropped events: its recycling list, under contention).
//! - `stream_churn_threads`: create and drop a non-blocking stream (raw: `cuStreamCreate`,
//!   `cuStreamDestroy`; cuda-core reuses dropped streams given no work).

use std::ptr::null_mut;

use benches::raw::{check, RawDriver, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};
use criterion::{Criterion, SamplingMode};
use cuda_core::{launch, Device, EventOptions, Kernel, LaunchConfig, Stream, StreamOptions};

use crate::common::{Case, BATCH};
use crate::crew::{Crew, CrewSync};
use crate::{raw_sync, scaled, RawState, RawStream, NO_PARAMS};

/// The sizes, in threads.
pub(crate) const SIZES: [usize; 3] = [1, 8, 64];
/// Every launch: one block of 32 threads.
const GRID: [u32; 3] = [1, 1, 1];
/// See [`GRID`].
const BLOCK: [u32; 3] = [32, 1, 1];

pub(crate) fn thread_cases<R: RawDriver + Sync>(
    c: &mut Criterion,
    d: &R,
    device: Device,
    raw: &RawState,
    kernel: Option<&Kernel>,
) {
    let context = raw.context;
    // Raw threads make the primary context current first, as a C program's threads must.
    let make_current = move || {
        // SAFETY: the primary context, retained for the process.
        check(
            unsafe { d.cuCtxSetCurrent(context.get()) },
            "cuCtxSetCurrent",
        );
    };

    if let (Some(kernel), Some(raw_kernel)) = (kernel, raw.kernel) {
        let config = LaunchConfig::new(GRID, BLOCK);
        let raw_make = |_| {
            make_current();
            RawStream::new(d)
        };
        let raw_work = |stream: &mut RawStream<'_, R>, n: u64| {
            in_batches(n, |k| {
                for _ in 0..k {
                    // SAFETY: an empty kernel of no parameters, on a live stream of the
                    // current context.
                    let status = unsafe {
                        d.cuLaunchKernel(
                            raw_kernel.get(),
                            GRID[0],
                            GRID[1],
                            GRID[2],
                            BLOCK[0],
                            BLOCK[1],
                            BLOCK[2],
                            0,
                            stream.handle,
                            NO_PARAMS,
                            null_mut(),
                        )
                    };
                    check(status, "cuLaunchKernel");
                }
                raw_sync(d, stream.handle);
            });
        };
        let core_make = |_| {
            device
                .create_stream(StreamOptions::default())
                .expect("a stream")
        };
        let core_work = |stream: &mut Stream, n: u64| {
            in_batches(n, |k| {
                for _ in 0..k {
                    // SAFETY: an empty kernel of no parameters: it touches no memory.
                    unsafe { launch(stream, &config, kernel, &[]) }.unwrap();
                }
                stream.sync().unwrap();
            });
        };
        for threads in SIZES {
            crew_case(
                c,
                scaled("launch_threads", threads),
                threads,
                (&raw_make, &raw_work),
                (&core_make, &core_work),
            );
        }
    } else {
        println!("scaling: no kernel; launch_threads skipped");
    }

    let raw_make = |_| make_current();
    let raw_events = |_: &mut (), n: u64| {
        for _ in 0..n {
            let mut event = null_mut();
            // SAFETY: a writable out-pointer, then the event just made, destroyed once; the
            // primary context is current on this thread.
            unsafe {
                check(
                    d.cuEventCreate(&mut event, EVENT_DISABLE_TIMING),
                    "cuEventCreate",
                );
                check(d.cuEventDestroy(event), "cuEventDestroy");
            }
        }
    };
    let core_make = |_| ();
    let core_events = |_: &mut (), n: u64| {
        for _ in 0..n {
            drop(device.create_event(EventOptions::default()).unwrap());
        }
    };
    for threads in SIZES {
        crew_case(
            c,
            scaled("event_churn_threads", threads),
            threads,
            (&raw_make, &raw_events),
            (&core_make, &core_events),
        );
    }

    let raw_streams = |_: &mut (), n: u64| {
        for _ in 0..n {
            let mut stream = null_mut();
            // SAFETY: a writable out-pointer, then the stream just made (given no work),
            // destroyed once; the primary context is current on this thread.
            unsafe {
                check(
                    d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
                    "cuStreamCreate",
                );
                check(d.cuStreamDestroy(stream), "cuStreamDestroy");
            }
        }
    };
    let core_streams = |_: &mut (), n: u64| {
        for _ in 0..n {
            drop(device.create_stream(StreamOptions::default()).unwrap());
        }
    };
    for threads in SIZES {
        crew_case(
            c,
            scaled("stream_churn_threads", threads),
            threads,
            (&raw_make, &raw_streams),
            (&core_make, &core_streams),
        );
    }
}

/// A variant's crew: how each thread makes its state, and what it does with a share.
type Plan<'p, M, W> = (&'p M, &'p W);

/// One case of `threads` threads: a crew per variant, made before the case and ended after.
fn crew_case<RS, RM, RW, CS, CM, CW>(
    c: &mut Criterion,
    name: &'static str,
    threads: usize,
    raw: Plan<'_, RM, RW>,
    core: Plan<'_, CM, CW>,
) where
    RM: Fn(usize) -> RS + Sync,
    RW: Fn(&mut RS, u64) + Sync,
    CM: Fn(usize) -> CS + Sync,
    CW: Fn(&mut CS, u64) + Sync,
{
    let (raw_shared, core_shared) = (CrewSync::new(threads), CrewSync::new(threads));
    std::thread::scope(|scope| {
        let raw_crew = Crew::start(scope, &raw_shared, raw.0, raw.1);
        let core_crew = Crew::start(scope, &core_shared, core.0, core.1);
        Case::new(name)
            .settings(|g| {
                g.sampling_mode(SamplingMode::Flat);
            })
            .variant("raw", |b| b.iter_custom(|iters| raw_crew.run(iters)))
            .variant("cuda-core", |b| b.iter_custom(|iters| core_crew.run(iters)))
            .run(c);
    });
}

/// Runs `f(k)` on batches of at most [`BATCH`] that add up to `n`.
fn in_batches(n: u64, mut f: impl FnMut(u64)) {
    let mut left = n;
    while left > 0 {
        let k = left.min(BATCH);
        f(k);
        left -= k;
    }
}
