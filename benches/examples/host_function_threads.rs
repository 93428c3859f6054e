//! Whether the driver runs host functions of independent streams while one of them is held:
//! a diagnostic for a GPU test suite that stalls now and then under the 12 ABI.
//!
//! The tests hold a stream with a host function that waits on a channel (`Gate`). The driver's
//! documentation lets it run host functions of independent streams one after another
//! ("may be serialized"): if it does, one test's gate holds every other test's host functions
//! (completions, gates, graph releases) until it opens, which would make tests run past 60 s
//! together. This program holds stream A with such a host function for up to 10 s, queues a
//! host function on stream B, and times how long B's takes to run; then the same on two
//! streams of another thread. Last, with a stream held so, it times the calls the completion
//! test saw its thread held at under the 12 ABI (an allocation and a fill on the held stream,
//! which should return at once). It prints one line per case:
//!
//! ```text
//! cargo run --release -p benches --example host_function_threads
//! CUDA_CORE_DRIVER_ABI=12 cargo run --release -p benches --example host_function_threads
//! ```
//!
//! Without a CUDA GPU it prints `not run: <why>` and exits with status 0, unless
//! `CUDA_CORE_TEST_REQUIRE` names `gpu` (then with status 1).

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cuda_core::{Allocate, Device, Stream, StreamOptions};

/// How long stream A is held at most.
const HOLD: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    let device = match Device::new(0) {
        Ok(device) => device,
        Err(e) => {
            println!("not run: no CUDA GPU: {e}");
            let required = std::env::var("CUDA_CORE_TEST_REQUIRE").unwrap_or_default();
            return if required.split(',').any(|w| w.trim() == "gpu") {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let abi = cuda_core::info::driver_info()
        .map(|info| info.abi.to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"));
    println!("driver ABI {abi}");
    let outcome = (|| -> cuda_core::Result<()> {
        let options = StreamOptions::default().with_non_blocking(true);
        let (a, b) = (
            device.create_stream(options)?,
            device.create_stream(options)?,
        );
        case("two streams of one thread", &a, &b)?;
        let (c, d) = (
            device.create_stream(options)?,
            device.create_stream(options)?,
        );
        std::thread::scope(|scope| {
            scope
                .spawn(|| case("two streams, the second queued from another thread", &c, &d))
                .join()
                .unwrap_or_else(|_| {
                    Err(cuda_core::Error::InvalidArgument {
                        name: "thread",
                        reason: "the case's thread panicked".to_owned(),
                    })
                })
        })?;
        let e = device.create_stream(options)?;
        calls_behind_a_held_stream(device, &e)?;
        Ok(())
    })();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("host_function_threads: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Holds `held` at a host function, queues one on `other`, and prints how long the second
/// took to run while the first was held.
fn case(what: &str, held: &Stream, other: &Stream) -> cuda_core::Result<()> {
    let (open, gate) = mpsc::channel::<()>();
    held.launch_host_func(move || {
        let _ = gate.recv_timeout(HOLD);
    })?;
    // Let the driver's thread enter the first host function.
    std::thread::sleep(Duration::from_millis(200));
    let (ran, done) = mpsc::channel::<Instant>();
    let queued = Instant::now();
    other.launch_host_func(move || {
        let _ = ran.send(Instant::now());
    })?;
    let waited = match done.recv_timeout(HOLD + Duration::from_secs(5)) {
        Ok(at) => Some(at - queued),
        Err(_) => None,
    };
    let _ = open.send(());
    held.sync()?;
    other.sync()?;
    match waited {
        Some(waited) if waited < HOLD / 2 => println!(
            "{what}: concurrent: the second stream's host function ran after {waited:?} while \
             the first was held"
        ),
        Some(waited) => println!(
            "{what}: serialized: the second stream's host function ran only after {waited:?}, \
             once the first was released ({HOLD:?})"
        ),
        None => println!("{what}: the second stream's host function never ran"),
    }
    Ok(())
}

/// Holds `stream` at a host function, then times an allocation, a fill, a second host function
/// and a query on it from this thread; each should return at once, the stream still held.
fn calls_behind_a_held_stream(device: Device, stream: &Stream) -> cuda_core::Result<()> {
    let (open, gate) = mpsc::channel::<()>();
    stream.launch_host_func(move || {
        let _ = gate.recv_timeout(HOLD);
    })?;
    std::thread::sleep(Duration::from_millis(200));
    let held = Instant::now();
    let timed = |what: &str, at: Instant| {
        let took = at.elapsed();
        let verdict = if took < HOLD / 2 {
            "returned at once"
        } else {
            "held until the stream was released"
        };
        println!("behind a held stream, {what}: {verdict} ({took:?})");
    };
    let at = Instant::now();
    let mut buffer = device.memory_resource()?.allocate(1 << 20, stream)?;
    timed("an allocation of 1 MiB", at);
    let at = Instant::now();
    buffer.fill(9u32, stream)?;
    timed("a fill", at);
    let at = Instant::now();
    stream.launch_host_func(|| {})?;
    timed("a second host function", at);
    let at = Instant::now();
    let done = stream.is_done()?;
    timed("a query", at);
    let _ = open.send(());
    stream.sync()?;
    println!(
        "behind a held stream: the stream reported done={done} while held; all calls took \
         {:?}",
        held.elapsed()
    );
    drop(buffer);
    stream.sync()
}
