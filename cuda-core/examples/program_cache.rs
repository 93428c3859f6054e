//! Compiles SAXPY through the persistent program cache and reports whether it was a cold
//! compile or a warm hit, with the time of each. Run it twice:
//!
//! ```text
//! cargo run --release --example program_cache    # cold: NVRTC compiles, the cache stores
//! cargo run --release --example program_cache    # warm: read from the cache, no compile
//! ```
//!
//! The cache lives in `$XDG_CACHE_HOME/cuda-core/programs` (else `~/.cache/cuda-core/programs`);
//! delete that directory to start cold again.

mod common;

use std::process::ExitCode;
use std::time::Instant;

use cuda_core::{
    cache::{FileStreamProgramCache, ProgramCache},
    CodeType, Device, Program, ProgramOptions,
};

fn main() -> ExitCode {
    common::main_with("program_cache", run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::new(0)?;
    device.set_current()?;
    let cache = FileStreamProgramCache::open_default(FileStreamProgramCache::DEFAULT_MAX_BYTES)?;
    let program =
        Program::new(common::SAXPY, ProgramOptions::default()).with_name("program_cache_saxpy.cu");
    let key = program.cache_key(CodeType::Cubin, &[])?;
    let warm = cache.get(&key).is_some();
    let started = Instant::now();
    let code = program.compile_cached(&cache, CodeType::Cubin, &[])?;
    let kernel = code.get_kernel("saxpy")?;
    let took = started.elapsed();
    println!(
        "{}: {} in {:.3} ms (kernel `{}`, {} bytes of cubin), cache at {}",
        if warm { "warm hit" } else { "cold compile" },
        if warm {
            "read from the cache and loaded"
        } else {
            "compiled with NVRTC, stored and loaded"
        },
        took.as_secs_f64() * 1e3,
        kernel.name(),
        code.code().len(),
        cache.dir().display()
    );
    if cache.get(&key).is_none() {
        return Err(format!("the entry was not stored in {}", cache.dir().display()).into());
    }
    Ok(())
}
