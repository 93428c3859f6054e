//! A diagnostic for the `event_query` case: does `cuEventQuery` on a completed event cost the
//! same for every event, and in every driver state? Raw driver calls only.
//!
//! It records and completes 24 events, then times queries of each one (the median of 200 timed
//! batches of 20 queries) three times: in a fresh primary context; after a stream-ordered
//! allocation and free on the stream; and after 8 more events were made, recorded and
//! completed. It prints one line per phase with each event's time in nanoseconds.
//!
//! ```text
//! cargo run --release -p benches --example event_query_spread
//! ```
//!
//! Without a CUDA GPU it prints one line saying so and exits with status 0.

use std::hint::black_box;
use std::process::ExitCode;
use std::ptr::null_mut;
use std::time::Instant;

use benches::raw::{self, check, Handle, RawDriver, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};

/// Events made at the start.
const EVENTS: usize = 24;
/// Events added before the third phase.
const MORE: usize = 8;
/// Timed batches per event; the median batch is reported.
const BATCHES: usize = 200;
/// Queries per timed batch.
const PER_BATCH: u32 = 20;

fn main() -> ExitCode {
    let raw = match raw::load() {
        Ok(raw) => raw,
        Err(why) => {
            println!("event_query_spread: no CUDA GPU ({why}); nothing measured");
            return ExitCode::SUCCESS;
        }
    };
    benches::with_raw!(&raw, |driver| run(driver));
    ExitCode::SUCCESS
}

fn run<R: RawDriver>(d: &R) {
    let (mut device, mut context, mut stream) = (0, null_mut(), null_mut());
    // SAFETY: writable out-pointers; handles passed in come from the calls before them.
    unsafe {
        check(d.cuDeviceGet(&mut device, 0), "cuDeviceGet");
        check(
            d.cuDevicePrimaryCtxRetain(&mut context, device),
            "cuDevicePrimaryCtxRetain",
        );
        check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(
            d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
            "cuStreamCreate",
        );
    }
    let mut events = completed_events(d, stream, EVENTS);
    print_phase("fresh context", &times(d, &events));

    let mut pool = null_mut();
    let mut ptr = 0;
    // SAFETY: writable out-pointers, the device's default pool, a live stream; the allocation
    // is freed once, in order on the same stream, which is then synchronised.
    unsafe {
        check(
            d.cuDeviceGetDefaultMemPool(&mut pool, device),
            "cuDeviceGetDefaultMemPool",
        );
        check(
            d.cuMemAllocFromPoolAsync(&mut ptr, 1024, pool, stream),
            "cuMemAllocFromPoolAsync",
        );
        check(d.cuMemFreeAsync(ptr, stream), "cuMemFreeAsync");
        check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    }
    print_phase("after an allocation", &times(d, &events));

    events.extend(completed_events(d, stream, MORE));
    print_phase("with 8 more events", &times(d, &events));

    for event in events {
        // SAFETY: each event was made here and is destroyed once.
        check(unsafe { d.cuEventDestroy(event) }, "cuEventDestroy");
    }
    // SAFETY: the stream was made here; nothing uses it after this.
    check(unsafe { d.cuStreamDestroy(stream) }, "cuStreamDestroy");
}

/// `n` events without timing, each recorded on `stream`, which is then synchronised.
fn completed_events<R: RawDriver>(d: &R, stream: Handle, n: usize) -> Vec<Handle> {
    let events: Vec<Handle> = (0..n)
        .map(|_| {
            let mut event = null_mut();
            // SAFETY: a writable out-pointer; then the event just made, on a live stream.
            unsafe {
                check(
                    d.cuEventCreate(&mut event, EVENT_DISABLE_TIMING),
                    "cuEventCreate",
                );
                check(d.cuEventRecord(event, stream), "cuEventRecord");
            }
            event
        })
        .collect();
    // SAFETY: a live stream.
    check(
        unsafe { d.cuStreamSynchronize(stream) },
        "cuStreamSynchronize",
    );
    events
}

/// Each event's query time in nanoseconds: the median over [`BATCHES`] timed batches.
fn times<R: RawDriver>(d: &R, events: &[Handle]) -> Vec<f64> {
    events
        .iter()
        .map(|&event| {
            let mut batches: Vec<f64> = (0..BATCHES)
                .map(|_| {
                    let start = Instant::now();
                    for _ in 0..PER_BATCH {
                        // SAFETY: a live, completed event.
                        black_box(unsafe { d.cuEventQuery(black_box(event)) });
                    }
                    start.elapsed().as_nanos() as f64 / f64::from(PER_BATCH)
                })
                .collect();
            batches.sort_by(f64::total_cmp);
            batches[BATCHES / 2]
        })
        .collect()
}

fn print_phase(phase: &str, times: &[f64]) {
    let list: Vec<String> = times.iter().map(|t| format!("{t:.0}")).collect();
    println!(
        "cuEventQuery, ns per call, event by event ({phase}): {}",
        list.join(" ")
    );
}
