//! Awaiting GPU work from async code: eight streams each run a kernel of a different length,
//! and eight tokio tasks await them at once (`Stream::completion`), each finishing when its own
//! stream does, with a timeout from tokio's timer around each wait; then an event's completion.
//! The futures name no runtime: tokio is only this example's executor.
//!
//! ```text
//! cargo run --release --features tokio --example async_waits
//! ```

mod common;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use cuda_core::{
    launch, Allocate, CodeType, Device, EventOptions, LaunchConfig, Program, ProgramOptions,
    StreamOptions,
};

/// Each thread adds 1 to its element `rounds` times, reading it back each time (so the work
/// grows with `rounds`).
const WORK: &str = r#"
extern "C" __global__ void work(unsigned* x, unsigned n, unsigned rounds) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (unsigned r = 0; r < rounds; r++) {
        volatile unsigned* p = x + i;
        *p = *p + 1;
    }
}
"#;

fn main() -> ExitCode {
    common::main_with("async_waits", || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()?;
        runtime.block_on(run())
    })
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::new(0)?;
    device.set_current()?;
    let code = Program::new(WORK, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
    let kernel = code.get_kernel("work")?;
    let n = 1u32 << 16;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for k in 0..8u32 {
        let stream = device.create_stream(StreamOptions::default())?;
        let mut buffer = device
            .memory_resource()?
            .allocate(4 * n as usize, &stream)?;
        buffer.fill(0u32, &stream)?;
        let rounds = 2000 * (8 - k);
        // SAFETY: the kernel touches `n` elements of a buffer of `n` elements.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::for_elements(n.into(), 256),
                &kernel,
                &[&buffer, &n, &rounds],
            )?;
        }
        let done = stream.completion()?;
        tasks.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(30), done)
                .await
                .map_err(|_| "a stream took over 30 s")??;
            let finished = start.elapsed();
            // The work is done: the read back waits for nothing.
            let values = buffer.to_vec::<u32>(&stream)?;
            let right = values.iter().all(|&v| v == rounds);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((k, rounds, finished, right))
        }));
    }
    let mut order = Vec::new();
    for task in tasks {
        let (k, rounds, finished, right) = task.await?.map_err(|e| e.to_string())?;
        println!("stream {k}: {rounds} rounds, done after {finished:.2?}, values right: {right}");
        if !right {
            return Err(format!("stream {k}'s values are wrong").into());
        }
        order.push((finished, k));
    }
    order.sort();
    println!(
        "finished in the order {:?} (shorter work first)",
        order.iter().map(|&(_, k)| k).collect::<Vec<_>>()
    );
    // An event's completion: polled, woken by the crate's timer.
    let stream = device.create_stream(StreamOptions::default())?;
    let event = stream.record_new(EventOptions::default())?;
    event.completion().await?;
    println!("an event's completion: done");
    Ok(())
}
