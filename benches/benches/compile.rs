//! Compiling at run time: an NVRTC compile of SAXPY to a cubin, loaded, with its kernel taken
//! (`compile_saxpy`), and the same program from a primed program cache (`cache_hit_memory`,
//! `cache_hit_file`).
//!
//! | case | `raw` | `cuda-core` |
//! | --- | --- | --- |
//! | `compile_saxpy` | NVRTC's table (`cuda-nvrtc-sys`): create, compile for the device's `sm_XX`, get the cubin, destroy; then `cuLibraryLoadData`, `cuLibraryGetKernel`, `cuLibraryUnload` | `Program::compile` to a cubin, `ObjectCode::get_kernel`, dropped |
//! | `cache_hit_memory` | none | `Program::compile_cached` from a primed `InMemoryProgramCache`, `get_kernel`, dropped |
//! | `cache_hit_file` | none | the same from a primed `FileStreamProgramCache` in a temporary directory |
//! | `cache_hit_file_10_headers` | none | the same for a source that includes ten headers (a chain) from `include_paths` |
//!
//! `compile_saxpy` runs in interleaved rounds, as the overhead cases do (flat sampling, 10
//! samples a round); the cache cases, cuda-core only, run once.
//!
//! cudarc is left out of all three: its NVRTC API returns PTX only (no cubin), so its path
//! would add a driver JIT compile at load and measure other work, and it has no program cache.
//! Raw has no cache either.

mod common;

use std::ffi::CString;
use std::hint::black_box;
use std::ptr::null_mut;
use std::time::Duration;

use benches::kernels::{SAXPY, SAXPY_KERNEL};
use benches::raw::{
    check, RawDriver, ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
};
use benches::raw_nvrtc::NvrtcFns;
use criterion::{Criterion, SamplingMode};
use cuda_core::{
    cache::{FileStreamProgramCache, InMemoryProgramCache, ProgramCache},
    CodeType, Device, Program, ProgramOptions,
};
use cuda_nvrtc_sys::{Nvrtc, Search};

/// The size bound of both caches: far more than one SAXPY.
const CACHE_BYTES: u64 = 64 << 20;

fn main() {
    let Some(raw) = common::gpu_or_skip("compile") else {
        return;
    };
    let abi = benches::with_raw!(&raw, |driver| driver.abi());
    let nvrtc = match Search::from_env(abi).load() {
        Ok(nvrtc) => nvrtc,
        Err(e) => {
            println!("compile: no NVRTC ({e}); skipped");
            return;
        }
    };
    let device = Device::new(0).expect("device 0");
    device.set_current().expect("making device 0 current");
    let mut c = common::criterion();
    benches::with_raw!(&raw, |driver| run(&mut c, driver, &nvrtc));
    c.final_summary();
}

fn run<R: RawDriver>(c: &mut Criterion, d: &R, nvrtc: &Nvrtc) {
    let Some(fns) = NvrtcFns::new(nvrtc.table()) else {
        println!("compile: the NVRTC found lacks a function the raw compile needs; skipped");
        return;
    };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writable out-pointers, device 0 (a CUdevice is its ordinal).
    unsafe {
        check(
            d.cuDeviceGetAttribute(&mut major, ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0),
            "cuDeviceGetAttribute",
        );
        check(
            d.cuDeviceGetAttribute(&mut minor, ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0),
            "cuDeviceGetAttribute",
        );
    }
    // The option cuda-core passes for the default `ProgramOptions` on this device.
    let arch = CString::new(format!("--gpu-architecture=sm_{major}{minor}")).expect("option");
    let source = CString::new(SAXPY).expect("source");
    let name = c"saxpy.cu";
    let kernel_name = CString::new(SAXPY_KERNEL).expect("kernel name");
    let program = || Program::new(SAXPY, ProgramOptions::default()).with_name("saxpy.cu");

    common::Case::new("compile_saxpy")
        .settings(|g| {
            g.sample_size(10)
                .sampling_mode(SamplingMode::Flat)
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(1));
        })
        .variant("raw", |b| {
            b.iter(|| {
                let cubin = fns.compile_cubin(&source, name, &[&arch]).unwrap();
                let (mut library, mut kernel) = (null_mut(), null_mut());
                // SAFETY: a cubin alive across the load, a NUL-terminated name, writable
                // out-pointers; the library is unloaded once, after its last use.
                unsafe {
                    check(
                        d.cuLibraryLoadData(&mut library, cubin.as_ptr().cast()),
                        "cuLibraryLoadData",
                    );
                    check(
                        d.cuLibraryGetKernel(&mut kernel, library, kernel_name.as_ptr()),
                        "cuLibraryGetKernel",
                    );
                    black_box(kernel);
                    check(d.cuLibraryUnload(library), "cuLibraryUnload");
                }
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                let code = program().compile(CodeType::Cubin, &[]).unwrap();
                black_box(code.get_kernel(SAXPY_KERNEL).unwrap());
            });
        })
        // cudarc: left out (PTX only; see the crate docs).
        .run(c);

    let memory = InMemoryProgramCache::new(CACHE_BYTES as usize);
    cache_case(c, "cache_hit_memory", &memory, &program);
    let dir = tempfile::tempdir().expect("a temporary directory");
    match FileStreamProgramCache::new(dir.path(), CACHE_BYTES) {
        Ok(file) => {
            cache_case(c, "cache_hit_file", &file, &program);
            // SAXPY again, its source including ten headers (each including the next) from
            // include_paths: every hit checks every header. Their times are an hour old, as a
            // project's headers are, so the process hashes each once and then checks its size
            // and time.
            let headers = tempfile::tempdir().expect("a temporary directory");
            let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
            for i in 0..10 {
                let next = if i < 9 {
                    format!("#include \"h{}.h\"\n", i + 1)
                } else {
                    String::new()
                };
                let path = headers.path().join(format!("h{i}.h"));
                std::fs::write(&path, format!("{next}#define H{i} {i}\n")).expect("a header");
                std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.set_modified(an_hour_ago))
                    .expect("the header's time");
            }
            let with_headers = || {
                Program::new(
                    format!("#include \"h0.h\"\n{SAXPY}"),
                    ProgramOptions::default()
                        .with_include_paths(vec![headers.path().to_path_buf()]),
                )
                .with_name("saxpy.cu")
            };
            cache_case(c, "cache_hit_file_10_headers", &file, &with_headers);
        }
        Err(e) => println!("compile: cache_hit_file: cannot open a file cache ({e}); skipped"),
    }
}

/// A cache hit plus `get_kernel`, after priming `cache` with one compile (cuda-core only).
fn cache_case(
    c: &mut Criterion,
    case: &str,
    cache: &dyn ProgramCache,
    program: &dyn Fn() -> Program,
) {
    let primed = program()
        .compile_cached(cache, CodeType::Cubin, &[])
        .and_then(|_| program().cache_key(CodeType::Cubin, &[]))
        .map(|key| cache.get(&key).is_some());
    match primed {
        Ok(true) => {}
        Ok(false) => {
            println!("compile: {case}: the cache did not keep the program; skipped");
            return;
        }
        Err(e) => {
            println!("compile: {case}: priming failed ({e}); skipped");
            return;
        }
    }
    let mut g = c.benchmark_group(case);
    g.bench_function("cuda-core", |b| {
        b.iter(|| {
            let code = program()
                .compile_cached(cache, CodeType::Cubin, &[])
                .unwrap();
            black_box(code.get_kernel(SAXPY_KERNEL).unwrap());
        });
    });
    // raw and cudarc: no program cache to compare with.
    g.finish();
}
