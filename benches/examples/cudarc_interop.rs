//! cuda-core and cudarc in one program: a cuBLAS SGEMM, called through cudarc's cuBLAS
//! bindings, on a cuda-core stream, reading and writing cuda-core buffers, checked against a
//! GEMM on the CPU.
//!
//! The two libraries meet through raw handles only:
//!
//! - one context: cudarc's `CudaContext::new(0)` retains the device's primary context, the
//!   one cuda-core uses (the program checks that the two handles are equal);
//! - one stream: cuda-core makes it, cudarc wraps its `CUstream` without owning it
//!   (`CudaContext::wrap_borrowed_stream`), and the cuBLAS handle queues on it;
//! - the memory: cuda-core allocates the three matrices from the device's pool on that
//!   stream; cuBLAS gets their addresses (`Buffer::ptr`) as raw pointers. Because the GEMM is
//!   queued on the buffers' own stream, it is ordered after their uploads and before their
//!   frees with no event at all.
//!
//! ```text
//! cargo run --release -p benches --example cudarc_interop
//! ```
//!
//! It prints the largest difference from the CPU's product and exits with status 1 when it is
//! beyond the tolerance. Without a CUDA GPU, or without a cuBLAS library cudarc can load, it
//! prints `not run: <why>` and exits with status 0, unless `CUDA_CORE_TEST_REQUIRE` names
//! `gpu` (then with status 1).

use std::process::ExitCode;

use cuda_core::{Allocate, Device, StreamOptions};
use cudarc::cublas::{result as cublas, sys as cublas_sys, CudaBlas};
use cudarc::driver::{sys as driver_sys, CudaContext};

/// Rows of A and C.
const M: usize = 384;
/// Columns of B and C.
const N: usize = 256;
/// Columns of A, rows of B.
const K: usize = 320;
/// The largest difference from the CPU's product accepted: the inputs lie in [-1, 1), so each
/// of the K products is below 1 and FP32 accumulation over K = 320 stays far below this.
const TOLERANCE: f64 = 1e-3;

fn main() -> ExitCode {
    let device = match Device::count() {
        Ok(0) => return not_run("the CUDA driver sees no GPU"),
        Ok(_) => match Device::new(0) {
            Ok(device) => device,
            Err(e) => return not_run(&format!("device 0 cannot be used: {e}")),
        },
        Err(e) => return not_run(&format!("no CUDA GPU: {e}")),
    };
    // SAFETY: `is_culib_present` only tries to load the library by each of its names.
    if !unsafe { cublas_sys::is_culib_present() } {
        return not_run(&format!(
            "cudarc found no cuBLAS library (it looks for {}); install the CUDA toolkit's \
             cuBLAS or NVIDIA's nvidia-cublas wheel and put its directory on LD_LIBRARY_PATH",
            cudarc::get_lib_name_candidates("cublas").join(", ")
        ));
    }
    match run(device) {
        Ok(max_error) if max_error <= TOLERANCE => {
            println!(
                "cudarc_interop: SGEMM {M}x{K} by {K}x{N} through cuBLAS on a cuda-core stream \
                 matches the CPU (max error {max_error:.2e}, tolerance {TOLERANCE:.0e})"
            );
            ExitCode::SUCCESS
        }
        Ok(max_error) => {
            println!(
                "cudarc_interop: SGEMM differs from the CPU's product: max error {max_error:.3e} \
                 (tolerance {TOLERANCE:.0e})"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("cudarc_interop: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Says why nothing ran; a failure where `CUDA_CORE_TEST_REQUIRE` names `gpu`.
fn not_run(why: &str) -> ExitCode {
    println!("not run: {why}");
    let required = std::env::var("CUDA_CORE_TEST_REQUIRE")
        .unwrap_or_default()
        .split(',')
        .any(|name| name.trim() == "gpu");
    if required {
        println!("CUDA_CORE_TEST_REQUIRE names gpu, so not running is a failure");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs C = A B through cuBLAS and returns the largest difference from the CPU's C.
fn run(device: Device) -> Result<f64, Box<dyn std::error::Error>> {
    // cuda-core: the context current on this thread (cuBLAS, as the CUDA runtime does, works
    // in the current context), a stream, and the three matrices in column-major order.
    device.set_current()?;
    let stream = device.create_stream(StreamOptions::default())?;
    let a_host = pseudo_random(1, M * K);
    let b_host = pseudo_random(2, K * N);
    let memory = device.memory_resource()?;
    let mut a = memory.allocate(4 * M * K, &stream)?;
    let mut b = memory.allocate(4 * K * N, &stream)?;
    let mut c = memory.allocate(4 * M * N, &stream)?;
    a.copy_from_host(&a_host, &stream)?;
    b.copy_from_host(&b_host, &stream)?;
    // NaN everywhere: an element the GEMM did not write cannot pass the check.
    c.fill(u32::MAX, &stream)?;

    {
        // cudarc: the same primary context, and the cuda-core stream borrowed by handle.
        let context = CudaContext::new(device.ordinal())?;
        if context.cu_ctx().cast::<std::ffi::c_void>() != device.primary_context()?.as_raw() {
            return Err("cudarc and cuda-core hold different contexts for device 0".into());
        }
        let raw_stream: driver_sys::CUstream = stream.as_raw().cast();
        // SAFETY: `raw_stream` is a stream of the primary context that `context` wraps, and
        // `stream` (which owns it) outlives this block, where every cudarc value that holds
        // the wrapper (`borrowed`, `blas`) is dropped.
        let borrowed = unsafe { context.wrap_borrowed_stream(raw_stream) };
        let blas = CudaBlas::new(borrowed)?;

        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (M as i32, N as i32, K as i32);
        // SAFETY: the handle queues on `stream`, the stream `a`, `b` and `c` were allocated
        // and filled on, so the GEMM runs after those uploads and before the buffers' frees
        // (queued on the same stream when they drop, after `c` is read back below). `a` holds
        // M x K floats, `b` K x N and `c` M x N, each column-major with its row count as
        // leading dimension, as the sizes passed say; `alpha` and `beta` are host values read
        // during the call (the handle's default pointer mode).
        unsafe {
            cublas::sgemm(
                *blas.handle(),
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                m,
                n,
                k,
                &alpha,
                a.ptr().as_raw() as *const f32,
                m,
                b.ptr().as_raw() as *const f32,
                k,
                &beta,
                c.ptr().as_raw() as *mut f32,
                m,
            )?;
        }
    }

    // cuda-core again: the copy back waits for the stream, the GEMM included.
    let c_host = c.to_vec::<f32>(&stream)?;
    let expected = cpu_gemm(&a_host, &b_host);
    Ok(c_host
        .iter()
        .zip(&expected)
        .map(|(&got, &want)| {
            let error = (f64::from(got) - want).abs();
            if error.is_nan() {
                f64::INFINITY
            } else {
                error
            }
        })
        .fold(0.0, f64::max))
}

/// C = A B in column-major order, accumulated in `f64`.
fn cpu_gemm(a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0f64; M * N];
    for col in 0..N {
        for inner in 0..K {
            let scale = f64::from(b[col * K + inner]);
            let a_column = &a[inner * M..(inner + 1) * M];
            for (out, &value) in c[col * M..(col + 1) * M].iter_mut().zip(a_column) {
                *out += f64::from(value) * scale;
            }
        }
    }
    c
}

/// Pseudo-random values in [-1, 1), different per seed (a 64-bit LCG's high bits).
fn pseudo_random(seed: u64, count: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
