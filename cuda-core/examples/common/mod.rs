//! What the examples share: the SAXPY kernel, inputs, the CPU check, and error reporting.
#![allow(dead_code)]

use std::process::ExitCode;

/// `y = a * x + y`, one element per thread.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// Pseudo-random floats in [-1, 1), different per seed.
pub fn random_floats(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32;
            r / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// How many elements differ from the CPU's `a * x + y` (fused or not: both are right).
pub fn mismatches(a: f32, x: &[f32], y: &[f32], out: &[f32]) -> usize {
    (0..out.len())
        .filter(|&i| out[i] != a.mul_add(x[i], y[i]) && out[i] != a * x[i] + y[i])
        .count()
}

/// Whether `CUDA_CORE_TEST_REQUIRE` (words separated by commas) names `what` (`nvrtc` also
/// where it names a major of it, `nvrtc-12`).
pub fn required(what: &str) -> bool {
    std::env::var("CUDA_CORE_TEST_REQUIRE")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .any(|name| name == what || (what == "nvrtc" && name.starts_with("nvrtc-")))
}

/// Says why `example` did not run (`not run: <why>`): status 0, or 1 where
/// `CUDA_CORE_TEST_REQUIRE` names `what`, the missing piece.
pub fn not_run(example: &str, what: &str, why: &str) -> ExitCode {
    println!("not run: {why}");
    if required(what) {
        eprintln!("{example}: CUDA_CORE_TEST_REQUIRE names {what}, and it is missing");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs an example's body: prints its error as one paragraph and exits 1.
pub fn main_with(
    name: &str,
    body: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>,
) -> ExitCode {
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
