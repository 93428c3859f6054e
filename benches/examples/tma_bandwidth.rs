//! The bandwidth of a TMA tile copy beside a plain copy kernel's, both through cuda-core, timed
//! with events on one stream.
//!
//! Both copy an 8192 x 8192 `f32` matrix (256 MiB) into another; `TMA_BANDWIDTH_SIDE` sets
//! another side (a multiple of 64). The TMA kernel gives each block
//! one 64 x 64 tile: one thread loads it into shared memory with `cp.async.bulk.tensor`
//! through a [`TensorMap`] of the source (completing on an mbarrier), then stores it with
//! `cp.async.bulk.tensor` through one of the destination. The plain kernel copies `float4`s in
//! a grid-stride loop. Each is run 3 times to warm up, then timed over 20 runs; the line shows
//! the best and the median run as bytes moved (read plus written) per second, and the
//! destination is checked against the source.
//!
//! ```text
//! cargo run --release -p benches --example tma_bandwidth
//! ```
//!
//! Without a CUDA GPU it prints one line saying so and exits with status 0; on a device older
//! than compute capability 9.0 it says so too.

use std::process::ExitCode;
use std::sync::Arc;

use cuda_core::{
    launch,
    tensor_map::{TensorDataType, TensorMap, TiledOptions},
    Allocate, CodeType, Device, EventOptions, LaunchConfig, Program, ProgramOptions, Stream,
    StreamOptions,
};

const KERNELS: &str = r#"
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#define BOX 64

extern "C" __global__ void tma_copy(const __grid_constant__ TensorMap src,
                                    const __grid_constant__ TensorMap dst, unsigned tiles_x) {
    __shared__ __align__(1024) float tile[BOX * BOX];
    __shared__ __align__(8) unsigned long long bar;
    if (threadIdx.x != 0) return;
    const int x = (int)(blockIdx.x % tiles_x) * BOX, y = (int)(blockIdx.x / tiles_x) * BOX;
    const unsigned tile_s = shared_address(tile), bar_s = shared_address(&bar);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    unsigned long long state;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                 : "=l"(state) : "r"(bar_s), "r"((unsigned)sizeof(tile)) : "memory");
    (void)state;
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(tile_s), "l"(&src), "r"(x), "r"(y), "r"(bar_s) : "memory");
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar_s), "r"(0u) : "memory");
    }
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&dst), "r"(x), "r"(y), "r"(tile_s) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

extern "C" __global__ void plain_copy(const float4* src, float4* dst, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        dst[i] = src[i];
    }
}
"#;

/// The matrix's side, in floats, unless `TMA_BANDWIDTH_SIDE` says otherwise.
const SIDE: usize = 8192;
/// The TMA box's side.
const BOX: usize = 64;
const WARM_UP: usize = 3;
const RUNS: usize = 20;

fn main() -> ExitCode {
    let device = match Device::new(0) {
        Ok(device) => device,
        Err(e) => {
            println!("tma_bandwidth: no CUDA GPU ({e}); nothing measured");
            return ExitCode::SUCCESS;
        }
    };
    match device.compute_capability() {
        Ok((major, _)) if major >= 9 => {}
        Ok((major, minor)) => {
            println!(
                "tma_bandwidth: device 0 is compute capability {major}.{minor}; TMA needs 9.0"
            );
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("tma_bandwidth: {e}");
            return ExitCode::FAILURE;
        }
    }
    match run(device) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("tma_bandwidth: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(device: Device) -> cuda_core::Result<()> {
    let n = match std::env::var("TMA_BANDWIDTH_SIDE") {
        Ok(side) => side
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n % BOX == 0)
            .ok_or_else(|| cuda_core::Error::InvalidArgument {
                name: "TMA_BANDWIDTH_SIDE",
                reason: format!("{side:?} is not a positive multiple of {BOX}"),
            })?,
        Err(_) => SIDE,
    };
    device.set_current()?;
    let stream = device.create_stream(StreamOptions::default())?;
    let code = Program::new(KERNELS, ProgramOptions::default().with_arch("90"))
        .with_name("tma_bandwidth.cu")
        .compile(CodeType::Cubin, &[])?;
    let (tma, plain) = (code.get_kernel("tma_copy")?, code.get_kernel("plain_copy")?);
    let bytes = n * n * 4;
    let memory = device.memory_resource()?;
    let mut src = memory.allocate(bytes, &stream)?;
    let values: Vec<f32> = (0..n * n).map(|i| (i % 1_000_003) as f32).collect();
    src.copy_from_host(&values, &stream)?;
    let src = Arc::new(src);
    let mut dst = memory.allocate(bytes, &stream)?;
    dst.fill(0u32, &stream)?;
    let dst = Arc::new(dst);
    let options = TiledOptions::new(TensorDataType::F32, &[n as u64, n as u64], &[BOX as u32; 2]);
    let (src_map, dst_map) = (
        TensorMap::tiled(&src, 0, &options)?,
        TensorMap::tiled(&dst, 0, &options)?,
    );
    let tiles_x = (n / BOX) as u32;
    let tma_config = LaunchConfig::new([tiles_x * tiles_x, 1, 1], [32, 1, 1]);
    let tma_run = || {
        // SAFETY: each block copies one tile of the maps' buffers, both alive throughout.
        unsafe { launch(&stream, &tma_config, &tma, &[&src_map, &dst_map, &tiles_x]) }
    };
    let report = |what: &str, times: &[f32]| {
        let mut sorted = times.to_vec();
        sorted.sort_by(f32::total_cmp);
        let rate = |ms: f32| 2.0 * bytes as f64 / (f64::from(ms) / 1e3) / 1e9;
        println!(
            "tma_bandwidth: {what}: best {:.0} GB/s ({:.3} ms), median {:.0} GB/s, over {RUNS} \
             runs of {} MiB read and written",
            rate(sorted[0]),
            sorted[0],
            rate(sorted[sorted.len() / 2]),
            bytes >> 20
        );
    };
    let times = timed(&stream, tma_run)?;
    check(&dst.to_vec::<f32>(&stream)?, &values, "the TMA copy")?;
    report(&format!("TMA tile copy ({BOX} x {BOX} boxes)"), &times);

    let mut dst_plain = memory.allocate(bytes, &stream)?;
    dst_plain.fill(0u32, &stream)?;
    let n4 = (n * n / 4) as u64;
    let sms = device.properties().multiprocessor_count()?;
    let plain_config = LaunchConfig::new([sms * 8, 1, 1], [512, 1, 1]);
    let times = timed(&stream, || {
        // SAFETY: `n4` float4s in each buffer.
        unsafe { launch(&stream, &plain_config, &plain, &[&*src, &dst_plain, &n4]) }
    })?;
    check(
        &dst_plain.to_vec::<f32>(&stream)?,
        &values,
        "the plain copy",
    )?;
    report("plain float4 copy", &times);
    Ok(())
}

/// The milliseconds of each of [`RUNS`] runs of `run`, after [`WARM_UP`] untimed ones.
fn timed(stream: &Stream, run: impl Fn() -> cuda_core::Result<()>) -> cuda_core::Result<Vec<f32>> {
    for _ in 0..WARM_UP {
        run()?;
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = stream.record_new(EventOptions::timing())?;
        run()?;
        let end = stream.record_new(EventOptions::timing())?;
        end.sync()?;
        times.push(end.elapsed_since(&start)?.as_secs_f32() * 1e3);
    }
    Ok(times)
}

fn check(got: &[f32], want: &[f32], what: &str) -> cuda_core::Result<()> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(i) => Err(cuda_core::Error::InvalidArgument {
            name: "result",
            reason: format!("{what} is wrong at element {i}: {} for {}", got[i], want[i]),
        }),
    }
}
