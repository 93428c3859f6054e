//! A program's first launch, in a fresh process: load the driver, make a context, get a kernel
//! (from a primed file cache, or a cubin file), launch it once and wait for it. The `startup`
//! bench runs this as a child process and times it end to end.
//!
//! ```text
//! first_launch                  prime a temporary cache, then run each variant once in a
//!                               child process and print its wall time
//! first_launch prime DIR        compile through a file cache in DIR/programs (cuda-core), and
//!                               write the cubin to DIR/first_launch.cubin for raw and cudarc
//! first_launch cuda-core DIR    cuda-core: Device, stream, Program::compile_cached (a hit,
//!                               which loads no NVRTC), launch
//! first_launch cuda-core+preload DIR
//!                               the same, after `cuda_core::preload_nvrtc()`
//! first_launch raw DIR          libloading + the sys table + cuInit + primary context +
//!                               cuLibraryLoadData of DIR/first_launch.cubin + launch + sync
//! first_launch cudarc DIR       cudarc: CudaContext, stream, load_module of the cubin, launch
//! ```
//!
//! Without a CUDA GPU the first form prints one line saying so and exits with status 0; the
//! others fail with the reason.
//!
//! With `FIRST_LAUNCH_PHASES=1` (which the first form sets for its children) each variant also
//! prints, to standard error, the milliseconds each of its steps took since `main` began; the
//! first form prints those lines under each variant's wall time.

use std::error::Error;
use std::ffi::CString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::ptr::null_mut;
use std::time::Instant;

use benches::kernels::{
    FIRST_LAUNCH, FIRST_LAUNCH_CUBIN, FIRST_LAUNCH_KERNEL, FIRST_LAUNCH_VARIANTS,
};
use benches::raw::{self, RawDriver, STREAM_NON_BLOCKING, SUCCESS};
use cuda_core::{
    cache::{FileStreamProgramCache, ProgramCache},
    launch, CodeType, Device, LaunchConfig, Program, ProgramOptions, StreamOptions,
};
use cudarc::driver::CudaContext;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The file cache's size bound.
const CACHE_BYTES: u64 = 64 << 20;

/// The file cache's directory, inside the directory given (which also holds the cubin file).
const CACHE_SUBDIR: &str = "programs";

const USAGE: &str = "usage: first_launch [prime|cuda-core|cuda-core+preload|raw|cudarc DIR]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [] => all(),
        [mode, dir] => {
            let dir = Path::new(dir);
            match mode.as_str() {
                "prime" => prime(dir),
                "cuda-core" => cuda_core(dir, false),
                "cuda-core+preload" => cuda_core(dir, true),
                "raw" => raw(dir),
                "cudarc" => cudarc(dir),
                _ => Err(USAGE.into()),
            }
        }
        _ => Err(USAGE.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("first_launch: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Set to print each step's time (see the module docs).
const PHASES_VAR: &str = "FIRST_LAUNCH_PHASES";

/// The steps of one variant, timed from `main`'s start when [`PHASES_VAR`] is set.
struct Phases {
    start: Instant,
    last: Instant,
    on: bool,
}

impl Phases {
    fn new() -> Phases {
        let now = Instant::now();
        Phases {
            start: now,
            last: now,
            on: std::env::var_os(PHASES_VAR).is_some_and(|v| v == "1"),
        }
    }

    /// Ends the step `what`.
    fn mark(&mut self, what: &str) {
        if self.on {
            let now = Instant::now();
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            eprintln!(
                "  {what:<32} {:8.3} ms (at {:8.3})",
                ms(now - self.last),
                ms(now - self.start)
            );
            self.last = now;
        }
    }
}

/// The program every variant launches.
fn program() -> Program {
    Program::new(FIRST_LAUNCH, ProgramOptions::default()).with_name("first_launch.cu")
}

/// Runs every variant once, each in a child process (this program), after priming.
fn all() -> Result<()> {
    if let Err(why) = raw::load() {
        println!("first_launch: no CUDA GPU ({why}); skipped");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let me = std::env::current_exe()?;
    let run = |mode: &str| -> Result<(f64, String)> {
        let start = Instant::now();
        let out = Command::new(&me)
            .arg(mode)
            .arg(dir.path())
            .env(PHASES_VAR, "1")
            .stdin(Stdio::null())
            .output()?;
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        if !out.status.success() {
            return Err(format!(
                "{mode} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
            .into());
        }
        Ok((elapsed, String::from_utf8_lossy(&out.stderr).into_owned()))
    };
    let (primed, _) = run("prime")?;
    println!("first_launch: prime (compile and store): {primed:.1} ms");
    for mode in FIRST_LAUNCH_VARIANTS {
        match run(mode) {
            Ok((ms, steps)) => {
                println!("first_launch: {mode}: {ms:.1} ms, whole process; its steps:");
                print!("{steps}");
            }
            Err(e) => println!("first_launch: {e}"),
        }
    }
    Ok(())
}

/// Compiles through the file cache in `dir` and writes the cubin beside it.
fn prime(dir: &Path) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let cache = FileStreamProgramCache::new(dir.join(CACHE_SUBDIR), CACHE_BYTES)?;
    let code = program().compile_cached(&cache, CodeType::Cubin, &[])?;
    if cache
        .get(&program().cache_key(CodeType::Cubin, &[])?)
        .is_none()
    {
        return Err(format!("the file cache in {} kept nothing", dir.display()).into());
    }
    std::fs::write(dir.join(FIRST_LAUNCH_CUBIN), code.code())?;
    Ok(())
}

/// cuda-core, as its documentation writes it: the kernel comes from the primed file cache.
fn cuda_core(dir: &Path, preload: bool) -> Result<()> {
    let mut phases = Phases::new();
    if preload {
        // Dropped: the load goes on alone, and whatever needs NVRTC waits for it.
        drop(cuda_core::preload_nvrtc());
        phases.mark("start loading NVRTC");
    }
    let device = Device::new(0)?;
    phases.mark("load the driver, count devices");
    device.set_current()?;
    phases.mark("primary context, current");
    let stream = device.create_stream(StreamOptions::default())?;
    phases.mark("stream");
    let cache = FileStreamProgramCache::new(dir.join(CACHE_SUBDIR), CACHE_BYTES)?;
    phases.mark("open the file cache");
    // A hit needs no NVRTC: its key names NVRTC's library file, found without loading it.
    let code = program().compile_cached(&cache, CodeType::Cubin, &[])?;
    phases.mark("key, cache hit");
    let kernel = code.get_kernel(FIRST_LAUNCH_KERNEL)?;
    phases.mark("load the cubin, get the kernel");
    // SAFETY: an empty kernel of no parameters.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
            &kernel,
            &[],
        )?
    };
    stream.sync()?;
    phases.mark("launch, sync");
    drop((kernel, code, stream));
    phases.mark("unload, destroy the stream");
    Ok(())
}

/// The raw table, as a C program does it.
fn raw(dir: &Path) -> Result<()> {
    let mut phases = Phases::new();
    let driver = raw::load()?;
    phases.mark("load the driver, cuInit");
    benches::with_raw!(&driver, |d| raw_launch(d, dir, &mut phases))
}

/// `Err` naming the call unless `status` is `CUDA_SUCCESS`.
fn ok(status: u32, call: &str) -> Result<()> {
    if status == SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed with CUDA error {status}").into())
    }
}

fn raw_launch<R: RawDriver>(d: &R, dir: &Path, phases: &mut Phases) -> Result<()> {
    let cubin = std::fs::read(dir.join(FIRST_LAUNCH_CUBIN))?;
    let name = CString::new(FIRST_LAUNCH_KERNEL)?;
    phases.mark("read the cubin file");
    let (mut device, mut context, mut stream) = (0, null_mut(), null_mut());
    let (mut library, mut kernel) = (null_mut(), null_mut());
    // SAFETY: writable out-pointers; each handle passed comes from the call that made it; the
    // cubin and the name outlive the calls that read them; the kernel takes no parameters.
    unsafe {
        ok(d.cuDeviceGet(&mut device, 0), "cuDeviceGet")?;
        ok(
            d.cuDevicePrimaryCtxRetain(&mut context, device),
            "cuDevicePrimaryCtxRetain",
        )?;
        ok(d.cuCtxSetCurrent(context), "cuCtxSetCurrent")?;
        phases.mark("primary context, current");
        ok(
            d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
            "cuStreamCreate",
        )?;
        phases.mark("stream");
        ok(
            d.cuLibraryLoadData(&mut library, cubin.as_ptr().cast()),
            "cuLibraryLoadData",
        )?;
        ok(
            d.cuLibraryGetKernel(&mut kernel, library, name.as_ptr()),
            "cuLibraryGetKernel",
        )?;
        phases.mark("load the cubin, get the kernel");
        ok(
            d.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, null_mut(), null_mut()),
            "cuLaunchKernel",
        )?;
        ok(d.cuStreamSynchronize(stream), "cuStreamSynchronize")?;
        phases.mark("launch, sync");
        // What cuda-core's drops do at the end of its variant.
        ok(d.cuLibraryUnload(library), "cuLibraryUnload")?;
        ok(d.cuStreamDestroy(stream), "cuStreamDestroy")?;
        phases.mark("unload, destroy the stream");
    }
    Ok(())
}

/// cudarc, as its documentation writes it, loading the cubin file (it has no program cache).
fn cudarc(dir: &Path) -> Result<()> {
    let context = CudaContext::new(0)?;
    let stream = context.new_stream()?;
    let cubin = std::fs::read(dir.join(FIRST_LAUNCH_CUBIN))?;
    let module = context.load_module(cudarc::nvrtc::Ptx::from_binary(cubin))?;
    let function = module.load_function(FIRST_LAUNCH_KERNEL)?;
    let config = cudarc::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: an empty kernel of no parameters.
    unsafe { stream.launch_builder(&function).launch(config)? };
    stream.synchronize()?;
    Ok(())
}
