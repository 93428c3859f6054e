//! A program's first launch, whole process: the `first_launch` example run as a child and
//! timed from spawn to exit (`first_launch/raw`, `first_launch/cuda-core`,
//! `first_launch/cudarc`, `first_launch/cuda-core+preload`).
//!
//! - `raw`: libloading, the sys table picked by the driver version, `cuInit`, the primary
//!   context retained and made current, a stream, `cuLibraryLoadData` of a cubin file,
//!   `cuLibraryGetKernel`, one launch, a synchronise.
//! - `cuda-core`: `Device`, a stream, `Program::compile_cached` hitting a primed
//!   `FileStreamProgramCache`, `get_kernel`, one launch, a synchronise.
//! - `cudarc`: `CudaContext::new`, a stream, `load_module` of the same cubin file (cudarc has no
//!   program cache), one launch, a synchronise.
//! - `cuda-core+preload`: `cuda-core` after `cuda_core::preload_nvrtc()`, so that NVRTC (which
//!   the cache key's version needs) loads while the context is made.
//!
//! The variants run in interleaved rounds, as the overhead cases do (flat sampling, 10 samples
//! a round).
//!
//! A priming run compiles the program into the cache and writes the cubin file first. The
//! example must be built: `cargo build --release -p benches --example first_launch` (cargo
//! bench does not build examples), or copied into an `examples/` folder beside the folder of
//! the bench binary. Without it this suite prints one line and skips.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use benches::kernels::FIRST_LAUNCH_VARIANTS;
use criterion::SamplingMode;

fn main() {
    // Only to know there is a GPU: this process makes no context.
    if common::gpu_or_skip("startup").is_none() {
        return;
    }
    let child = match benches::locate::example("first_launch") {
        Ok(path) => path,
        Err(why) => {
            println!(
                "startup: {why} (build it with `cargo build --release -p benches --example \
                 first_launch`); skipped"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    if let Err(why) = run_child(&child, "prime", dir.path()) {
        println!("startup: priming failed ({why}); skipped");
        return;
    }
    let mut c = common::criterion();
    let mut case = common::Case::new("first_launch").settings(|g| {
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
    });
    for variant in FIRST_LAUNCH_VARIANTS {
        // One run first, so that a variant that cannot run is reported, not timed.
        if let Err(why) = run_child(&child, variant, dir.path()) {
            println!("startup: first_launch/{variant} failed ({why}); skipped");
            continue;
        }
        let (child, dir) = (child.clone(), dir.path().to_path_buf());
        case = case.variant(variant, move |b| {
            b.iter(|| run_child(&child, variant, &dir).unwrap());
        });
    }
    case.run(&mut c);
    c.final_summary();
}

/// Runs the child in `mode` on the cache directory `dir`, to its exit.
fn run_child(child: &Path, mode: &str, dir: &Path) -> Result<(), String> {
    let out = Command::new(child)
        .arg(mode)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", child.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} {mode}: {}: {}",
            child.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
