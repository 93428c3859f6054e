//! Splits the GPU's SMs in two green contexts and runs SAXPY on each half from two threads at
//! once, printing each context's SM count and checking each result.
//!
//! ```text
//! cargo run --release --example green_contexts
//! ```

mod common;

use std::process::ExitCode;

use cuda_core::{
    launch, Allocate, CodeType, ContextOptions, Device, LaunchConfig, Program, ProgramOptions,
    SmSplitOptions, StreamOptions,
};

fn main() -> ExitCode {
    common::main_with("green_contexts", run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::new(0)?;
    device.set_current()?;
    let code =
        Program::new(common::SAXPY, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
    let saxpy = code.get_kernel("saxpy")?;
    let sms = device.resources().sm()?;
    // Halves, rounded down to the SM granularity the driver splits by (8 on Hopper).
    let align = sms.coscheduled_alignment().unwrap_or(8).max(1);
    let half = sms.sm_count() / 2 / align * align;
    let split = sms.split(SmSplitOptions::groups_of(half).with_groups(2))?;
    println!(
        "{}: {} SMs split into {:?} (+{} left over)",
        device.name()?,
        sms.sm_count(),
        split
            .groups
            .iter()
            .map(|g| g.sm_count())
            .collect::<Vec<_>>(),
        split.remainder.sm_count()
    );
    let workers: Vec<_> = split
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| {
            let saxpy = saxpy.clone();
            std::thread::spawn(move || -> Result<String, cuda_core::Error> {
                let context =
                    device.create_context(ContextOptions::default().with_resources(vec![group]))?;
                let stream = context.create_stream(StreamOptions::default())?;
                let n = 1usize << 24;
                let a = 1.0 + i as f32;
                let (x, y) = (
                    common::random_floats(10 + i as u64, n),
                    common::random_floats(20 + i as u64, n),
                );
                let memory = device.memory_resource()?;
                let mut dx = memory.allocate(4 * n, &stream)?;
                let mut dy = memory.allocate(4 * n, &stream)?;
                dx.copy_from_host(&x, &stream)?;
                dy.copy_from_host(&y, &stream)?;
                // SAFETY: n floats in each buffer.
                unsafe {
                    launch(
                        &stream,
                        &LaunchConfig::for_elements(n as u64, 256),
                        &saxpy,
                        &[&a, &dx, &dy, &(n as u32)],
                    )?
                };
                let out = dy.to_vec::<f32>(&stream)?;
                let wrong = common::mismatches(a, &x, &y, &out);
                Ok(format!(
                    "context {i}: green, {} SMs, saxpy a={a} on {n} floats: {}",
                    context.sm_count()?,
                    if wrong == 0 {
                        "correct".to_owned()
                    } else {
                        format!("{wrong} WRONG")
                    }
                ))
            })
        })
        .collect();
    let mut failed = false;
    for worker in workers {
        let line = worker.join().map_err(|_| "a worker thread panicked")??;
        failed |= line.contains("WRONG");
        println!("{line}");
    }
    if failed {
        return Err("a half computed a wrong result".into());
    }
    Ok(())
}
