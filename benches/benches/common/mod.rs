//! What the suites share: criterion's settings, the GPU check, and timing batches of queued
//! work.

// Each suite includes this module and uses part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use benches::raw::{self, Raw};
use criterion::{Bencher, Criterion};

/// Operations queued per batch by [`batched`]: the stream is synchronised between batches,
/// outside the timed part, so that the queue never fills and the stream is idle at the start
/// of each batch.
pub const BATCH: u64 = 256;

/// Criterion as the suites use it: 0.5 s of warm-up and 2 s of measurement per benchmark,
/// 100 samples, 20 000 bootstrap resamples (the analysis runs on one thread: criterion's
/// `rayon` feature is off), no plots. Groups that need other settings set them; command-line
/// options (a filter, `--sample-size`, ...) override all of them.
///
/// Each benchmark costs about 2.5 s of GPU-machine time plus its analysis, so a suite of
/// `n` benchmarks runs for about `3 * n` seconds.
pub fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(100)
        .nresamples(20_000)
        .without_plots()
        .configure_from_args()
}

/// The raw driver, started (`cuInit`) with a device; or `None`, after printing one line that
/// says why `suite` is skipped. cuda-core must see the device too.
pub fn gpu_or_skip(suite: &str) -> Option<Raw> {
    let raw = match raw::load() {
        Ok(raw) => raw,
        Err(why) => {
            println!("{suite}: no CUDA GPU ({why}); skipped");
            return None;
        }
    };
    if let Err(e) = cuda_core::Device::new(0) {
        println!("{suite}: no CUDA GPU (cuda-core: {e}); skipped");
        return None;
    }
    Some(raw)
}

/// Times `op` as one iteration, in batches of [`BATCH`]: the clock runs around each batch
/// only, and `drain` (a stream synchronise) runs after each batch, outside the timed part. The
/// time criterion reports is then per `op`.
pub fn batched(b: &mut Bencher<'_>, mut op: impl FnMut(), mut drain: impl FnMut()) {
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            let n = left.min(BATCH);
            let start = Instant::now();
            for _ in 0..n {
                op();
            }
            total += start.elapsed();
            drain();
            left -= n;
        }
        total
    });
}
