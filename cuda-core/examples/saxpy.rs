//! SAXPY on 10M floats: compile through the file cache, allocate from the device pool, copy
//! in, launch, copy out, check against the CPU, and report the kernel's time and bandwidth.
//!
//! ```text
//! cargo run --release --example saxpy
//! ```

mod common;

use std::process::ExitCode;

use cuda_core::{
    launch, Allocate, CodeType, Device, EventOptions, FileStreamProgramCache, LaunchConfig,
    Program, ProgramOptions, StreamOptions,
};

fn main() -> ExitCode {
    common::main_with("saxpy", run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n = 10_000_000usize;
    let a = 2.0f32;
    let device = Device::new(0)?;
    device.set_current()?;
    println!("{} (sm_{})", device.name()?, device.arch()?);
    let cache = FileStreamProgramCache::open_default(FileStreamProgramCache::DEFAULT_MAX_BYTES)?;
    let code = Program::new(common::SAXPY, ProgramOptions::default())
        .with_name("saxpy.cu")
        .compile_cached(&cache, CodeType::Cubin, &[])?;
    let saxpy = code.get_kernel("saxpy")?;

    let stream = device.create_stream(StreamOptions::default())?;
    let memory = device.memory_resource()?;
    let (x, y) = (common::random_floats(1, n), common::random_floats(2, n));
    let mut dx = memory.allocate(4 * n, &stream)?;
    let mut dy = memory.allocate(4 * n, &stream)?;
    dx.copy_from_host(&x, &stream)?;
    dy.copy_from_host(&y, &stream)?;

    let config = LaunchConfig::for_elements(n as u64, 256);
    let count = n as u32;
    // Warm up once (module load, first-launch costs), then time with events on a fresh copy.
    // SAFETY: both buffers hold n floats; the kernel reads x and updates y within n.
    unsafe { launch(&stream, &config, &saxpy, &[&a, &dx, &dy, &count])? };
    dy.copy_from_host(&y, &stream)?;
    let start = stream.record_new(EventOptions::timing())?;
    // SAFETY: as above.
    unsafe { launch(&stream, &config, &saxpy, &[&a, &dx, &dy, &count])? };
    let end = stream.record_new(EventOptions::timing())?;
    let out = dy.to_vec::<f32>(&stream)?;
    let elapsed = end.elapsed_since(&start)?;

    let wrong = common::mismatches(a, &x, &y, &out);
    // Three 4-byte accesses per element: read x, read y, write y.
    let bytes = 12.0 * n as f64;
    let bandwidth = bytes / elapsed.as_secs_f64() / 1e12;
    println!(
        "saxpy of {n} floats: {:.1} us, {bandwidth:.2} TB/s effective ({:.0}% of the ~4.3 TB/s a \
         device-to-device copy reaches on an H200)",
        elapsed.as_secs_f64() * 1e6,
        bandwidth / 4.3 * 100.0
    );
    if wrong != 0 {
        return Err(format!("{wrong} of {n} elements differ from the CPU's result").into());
    }
    println!("all {n} elements match the CPU");
    Ok(())
}
