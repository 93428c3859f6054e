//! A three-kernel pipeline on 10M floats (y = (2x + 1)^2, one kernel a step) captured once
//! into a CUDA graph and replayed 1000 times, checked against the CPU, and timed per
//! iteration beside the same three kernels launched on a stream.
//!
//! ```text
//! cargo run --release --example graphs
//! ```

mod common;

use std::process::ExitCode;
use std::time::Instant;

use cuda_core::{
    launch, Allocate, CaptureMode, CodeType, Device, GraphOptions, LaunchConfig, Program,
    ProgramOptions, StreamOptions,
};

const PIPELINE: &str = r#"
extern "C" __global__ void twice(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
extern "C" __global__ void plus_one(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
extern "C" __global__ void square(float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= y[i];
}
"#;

fn main() -> ExitCode {
    common::main_with("graphs", run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n = 10_000_000u32;
    let iterations = 1000;
    let device = Device::new(0)?;
    device.set_current()?;
    let code = Program::new(PIPELINE, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
    let kernels = [
        code.get_kernel("twice")?,
        code.get_kernel("plus_one")?,
        code.get_kernel("square")?,
    ];
    let stream = device.create_stream(StreamOptions::default())?;
    let memory = device.memory_resource()?;
    let x = common::random_floats(7, n as usize);
    let mut dx = memory.allocate(4 * n as usize, &stream)?;
    let dy = memory.allocate(4 * n as usize, &stream)?;
    dx.copy_from_host(&x, &stream)?;
    let config = LaunchConfig::for_elements(n.into(), 256);
    // The three launches, on the stream as it is (capturing or not).
    let pipeline = || -> cuda_core::Result<()> {
        // SAFETY: n floats in dx and dy, which outlive every run of this work.
        unsafe {
            launch(&stream, &config, &kernels[0], &[&dx, &dy, &n])?;
            launch(&stream, &config, &kernels[1], &[&dy, &n])?;
            launch(&stream, &config, &kernels[2], &[&dy, &n])
        }
    };

    // SAFETY: nothing is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
    pipeline()?;
    let graph = stream.end_capture()?;
    let exec = graph.instantiate(GraphOptions::default())?;
    exec.upload(&stream)?;
    stream.sync()?;

    // Warm both ways once, then time each.
    pipeline()?;
    exec.launch(&stream)?;
    stream.sync()?;
    let started = Instant::now();
    for _ in 0..iterations {
        pipeline()?;
    }
    stream.sync()?;
    let on_stream = started.elapsed() / iterations;
    let started = Instant::now();
    for _ in 0..iterations {
        exec.launch(&stream)?;
    }
    stream.sync()?;
    let as_graph = started.elapsed() / iterations;

    let out = dy.to_vec::<f32>(&stream)?;
    let wrong = x
        .iter()
        .zip(&out)
        .filter(|(x, y)| {
            let want = (2.0 * **x + 1.0) * (2.0 * **x + 1.0);
            (want - **y).abs() > 1e-5 * want.abs().max(1.0)
        })
        .count();
    println!(
        "{}: 3 kernels on {n} floats, {iterations} iterations: graph {as_graph:?} per iteration \
         ({} nodes), stream launches {on_stream:?}",
        device.name()?,
        graph.node_count()?
    );
    if wrong > 0 {
        return Err(format!("{wrong} of {n} elements differ from the CPU").into());
    }
    println!("all {n} elements match the CPU");
    Ok(())
}
