//! A program's first launch, in a fresh process: load the driver, make a context, get a kernel
//! (from a primed file cache, or a cubin file), launch it once and wait for it. The `startup`
//! bench runs this as a child process and times it end to end.
//!
//! ```text
//! first_launch                  prime a temporary cache, then run each variant once in a
//!                               child process and print its wall time
//! first_launch prime DIR        compile through a file cache in DIR/programs (cuda-core), and
//!                               write the cubin to DIR/first_launch.cubin for raw and cudarc
//! first_launch cuda-core DIR    cuda-core: Device, stream, Program::compile_cached (a hit), launch
//! first_launch raw DIR          libloading + the sys table + cuInit + primary context +
//!                               cuLibraryLoadData of DIR/first_launch.cubin + launch + sync
//! first_launch cudarc DIR       cudarc: CudaContext, stream, load_module of the cubin, launch
//! ```
//!
//! Without a CUDA GPU the first form prints one line saying so and exits with status 0; the
//! others fail with the reason.

use std::error::Error;
use std::ffi::CString;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::ptr::null_mut;
use std::time::Instant;

use benches::kernels::{FIRST_LAUNCH, FIRST_LAUNCH_CUBIN, FIRST_LAUNCH_KERNEL};
use benches::raw::{self, RawDriver, STREAM_NON_BLOCKING, SUCCESS};
use cuda_core::{
    launch, CodeType, Device, FileStreamProgramCache, LaunchConfig, Program, ProgramCache,
    ProgramOptions, StreamOptions,
};
use cudarc::driver::CudaContext;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// The file cache's size bound.
const CACHE_BYTES: u64 = 64 << 20;

/// The file cache's directory, inside the directory given (which also holds the cubin file).
const CACHE_SUBDIR: &str = "programs";

/// The variants, in the order they run.
const VARIANTS: [&str; 3] = ["raw", "cuda-core", "cudarc"];

const USAGE: &str = "usage: first_launch [prime|cuda-core|raw|cudarc DIR]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [] => all(),
        [mode, dir] => {
            let dir = Path::new(dir);
            match mode.as_str() {
                "prime" => prime(dir),
                "cuda-core" => cuda_core(dir),
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
    let run = |mode: &str| -> Result<f64> {
        let start = Instant::now();
        let out = Command::new(&me)
            .arg(mode)
            .arg(dir.path())
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
        Ok(elapsed)
    };
    let primed = run("prime")?;
    println!("first_launch: prime (compile and store): {primed:.1} ms");
    for mode in VARIANTS {
        match run(mode) {
            Ok(ms) => println!("first_launch: {mode}: {ms:.1} ms, whole process"),
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
fn cuda_core(dir: &Path) -> Result<()> {
    let device = Device::new(0)?;
    device.set_current()?;
    let stream = device.create_stream(StreamOptions::default())?;
    let cache = FileStreamProgramCache::new(dir.join(CACHE_SUBDIR), CACHE_BYTES)?;
    let code = program().compile_cached(&cache, CodeType::Cubin, &[])?;
    let kernel = code.get_kernel(FIRST_LAUNCH_KERNEL)?;
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
    Ok(())
}

/// The raw table, as a C program does it.
fn raw(dir: &Path) -> Result<()> {
    let driver = raw::load()?;
    benches::with_raw!(&driver, |d| raw_launch(d, dir))
}

/// `Err` naming the call unless `status` is `CUDA_SUCCESS`.
fn ok(status: u32, call: &str) -> Result<()> {
    if status == SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed with CUDA error {status}").into())
    }
}

fn raw_launch<R: RawDriver>(d: &R, dir: &Path) -> Result<()> {
    let cubin = std::fs::read(dir.join(FIRST_LAUNCH_CUBIN))?;
    let name = CString::new(FIRST_LAUNCH_KERNEL)?;
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
        ok(
            d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
            "cuStreamCreate",
        )?;
        ok(
            d.cuLibraryLoadData(&mut library, cubin.as_ptr().cast()),
            "cuLibraryLoadData",
        )?;
        ok(
            d.cuLibraryGetKernel(&mut kernel, library, name.as_ptr()),
            "cuLibraryGetKernel",
        )?;
        ok(
            d.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, null_mut(), null_mut()),
            "cuLaunchKernel",
        )?;
        ok(d.cuStreamSynchronize(stream), "cuStreamSynchronize")?;
        // What cuda-core's drops do at the end of its variant.
        ok(d.cuLibraryUnload(library), "cuLibraryUnload")?;
        ok(d.cuStreamDestroy(stream), "cuStreamDestroy")?;
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
