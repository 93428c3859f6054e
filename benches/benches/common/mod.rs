//! What the suites share: criterion's settings, the GPU check, and timing batches of queued
//! work.

// Each suite includes this module and uses part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use benches::raw::{self, Raw};
use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, BenchmarkId, Criterion};

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

/// Rounds per case when `CUDA_CORE_BENCH_ROUNDS` is not set: see [`Case`].
pub const DEFAULT_ROUNDS: usize = 6;

/// The rounds [`Case`] runs: `CUDA_CORE_BENCH_ROUNDS` (at least 1), else [`DEFAULT_ROUNDS`].
pub fn rounds() -> usize {
    std::env::var("CUDA_CORE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(DEFAULT_ROUNDS, |n| n.max(1))
}

/// The order of `n` variants in round `round`: rotated by the round, and reversed in odd
/// rounds, so that over six rounds three variants take every order once (over two rounds,
/// two variants take both). Each variant then runs early and late equally often, and a drift
/// of the machine over a case's rounds weighs on all variants alike.
pub fn round_order(n: usize, round: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).map(|i| (i + round) % n.max(1)).collect();
    if round % 2 == 1 {
        order.reverse();
    }
    order
}

/// One case: its variants, measured in interleaved rounds.
///
/// The cost of a µs-scale driver call on the H200 (a virtual machine) varies by far more than
/// 3% between processes (raw `launch_0` measured 2.98, 3.57 and 3.97 µs in three runs) and
/// can drift within one. Timing the variants one after the other, once each, would turn such
/// a drift into a false difference between them. So each variant is measured in short
/// rounds, `<case>/<variant>/r<k>` (0.25 s of warm-up, 0.75 s of measurement and 50 samples
/// each), the variants of a round back to back in [`round_order`]. `cargo xtask bench-report`
/// compares variants within each round and takes the median over the rounds.
///
/// With one round (`CUDA_CORE_BENCH_ROUNDS=1`) each variant is one benchmark,
/// `<case>/<variant>`, with the suite's settings.
pub struct Case<'a> {
    name: &'static str,
    variants: Vec<(&'static str, Timer<'a>)>,
    settings: Option<Settings>,
}

/// A case's own criterion settings, applied over the round settings.
type Settings = Box<dyn Fn(&mut BenchmarkGroup<'_, WallTime>)>;

/// What times one variant, as a `bench_function` closure.
type Timer<'a> = Box<dyn FnMut(&mut Bencher<'_>) + 'a>;

impl<'a> Case<'a> {
    /// A case of no variants yet, named as its criterion group.
    pub fn new(name: &'static str) -> Case<'a> {
        Case {
            name,
            variants: Vec::new(),
            settings: None,
        }
    }

    /// Settings of this case's group, over the round settings: for operations too slow for
    /// 50 samples in 0.75 s (a compile, a whole process), say flat sampling of 10.
    pub fn settings(mut self, f: impl Fn(&mut BenchmarkGroup<'_, WallTime>) + 'static) -> Self {
        self.settings = Some(Box::new(f));
        self
    }

    /// Adds a variant (`raw`, `cuda-core` or `cudarc`): `f` times it, as in
    /// `bench_function`.
    pub fn variant(mut self, name: &'static str, f: impl FnMut(&mut Bencher<'_>) + 'a) -> Self {
        self.variants.push((name, Box::new(f)));
        self
    }

    /// Measures every variant, in [`rounds`] rounds.
    pub fn run(mut self, c: &mut Criterion) {
        let rounds = rounds();
        let mut g = c.benchmark_group(self.name);
        if rounds == 1 {
            if let Some(settings) = &self.settings {
                settings(&mut g);
            }
            for (name, f) in &mut self.variants {
                g.bench_function(*name, |b| f(b));
            }
        } else {
            round_settings(&mut g);
            if let Some(settings) = &self.settings {
                settings(&mut g);
            }
            for round in 0..rounds {
                for i in round_order(self.variants.len(), round) {
                    let (name, f) = &mut self.variants[i];
                    g.bench_function(BenchmarkId::new(*name, format!("r{round}")), |b| f(b));
                }
            }
        }
        g.finish();
    }
}

/// The settings of one round of a [`Case`].
fn round_settings(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.warm_up_time(Duration::from_millis(250))
        .measurement_time(Duration::from_millis(750))
        .sample_size(50);
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
