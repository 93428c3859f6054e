//! cuda-core's own cost per call, without the GPU's noise: each hot operation timed against a
//! stand-in `libcuda.so.1` whose functions return at once
//! (`cuda-core/tests/standin/libcuda_standin.c` built with `-DSTANDIN_BENCH`), raw and through
//! cuda-core, in one process.
//!
//! On the H200 a µs-scale driver call varies by more than the few nanoseconds cuda-core adds
//! (see the benches' README), so the GPU suites bound cuda-core's cost only as closely as that
//! noise allows. With the driver's work taken out, what remains of a call through cuda-core is
//! its own work: its checks, its dispatch, and the driver calls it makes beyond the one asked
//! for (such as reading the current context before creating an event). This is a diagnostic,
//! not the benchmark: the suites on the GPU are.
//!
//! ```text
//! cargo run --release -p benches --example standin_overhead
//! ```
//!
//! It compiles the stand-in with the C compiler (`cc`), then runs itself again with the
//! stand-in first on the loader's path, and prints one line per operation: the best time per
//! call over 200 batches of 10 000, raw and through cuda-core, in nanoseconds. It needs no
//! GPU; without a C compiler it says so and exits with status 0.
//!
//! `CUDA_CORE_STANDIN_ONLY=replay` (or `tensor_map`, `launch_attrs`, `alloc`) measures that
//! row alone, for a profiler; `CUDA_CORE_STANDIN_BATCHES=N` times N batches instead of 200 (1
//! or 2 under `valgrind --tool=callgrind`).
//!
//! `CUDA_CORE_STANDIN_EVICT=32768` makes each stand-in call that stands for driver work first
//! write over 32 KiB, as a real driver call's own work pushes the caller's data out of the
//! nearest cache: cuda-core's memory accesses (its per-device state, the context, the trait
//! object's table) then cost what they cost after a real driver call.

use std::error::Error;
use std::ffi::c_void;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::ptr::null_mut;
use std::time::Instant;

use benches::kernels::{EMPTY0, EMPTY16, EMPTY4};
use cuda_core::{launch, Allocate, Device, EventOptions, LaunchConfig, ObjectCode, StreamOptions};

/// Set in the child process, which runs against the stand-in.
const CHILD: &str = "CUDA_CORE_STANDIN_CHILD";
/// The stand-in's source, shared with cuda-core's tests; `-DSTANDIN_BENCH` builds the variant
/// whose calls return at once.
const SOURCE: &str = include_str!("../../cuda-core/tests/standin/libcuda_standin.c");
/// What the stand-in calls its device, to make sure it is what got loaded.
const NAME: &str = "cuda-core stand-in driver";

type Result<T> = std::result::Result<T, Box<dyn Error>>;

fn main() -> ExitCode {
    let outcome = if std::env::var_os(CHILD).is_some() {
        measure()
    } else {
        parent()
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("standin_overhead: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Builds the stand-in and runs this program again against it.
fn parent() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let Some(library) = build_standin(dir.path())? else {
        return Ok(());
    };
    let path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => {
            let mut dirs = vec![library.parent().unwrap_or(dir.path()).to_path_buf()];
            dirs.extend(std::env::split_paths(&old));
            std::env::join_paths(dirs)?
        }
        None => dir.path().as_os_str().to_owned(),
    };
    let status = Command::new(std::env::current_exe()?)
        .env(CHILD, "1")
        .env("LD_LIBRARY_PATH", path)
        .env_remove("CUDA_CORE_DRIVER_ABI")
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the measuring run failed: {status}").into())
    }
}

/// Compiles the stand-in into `dir/libcuda.so.1`; `None`, after saying so, without a C
/// compiler.
fn build_standin(dir: &Path) -> Result<Option<PathBuf>> {
    let source = dir.join("libcuda_standin.c");
    std::fs::write(&source, SOURCE)?;
    let out = dir.join("libcuda.so.1");
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let compiler = match cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .opt_level(2)
        .host(&target)
        .target(&target)
        .try_get_compiler()
    {
        Ok(compiler) => compiler,
        Err(e) => {
            println!("standin_overhead: no C compiler for the stand-in ({e}); nothing measured");
            return Ok(None);
        }
    };
    let status = compiler
        .to_command()
        .args(["-O2", "-shared", "-fPIC", "-DSTANDIN_BENCH", "-o"])
        .arg(&out)
        .arg(&source)
        .status()
        .map_err(|e| format!("running the C compiler: {e}"))?;
    if !status.success() {
        return Err(format!("compiling the stand-in failed: {status}").into());
    }
    Ok(Some(out))
}

/// The best time per call of `op`, in nanoseconds: the fastest of 200 batches of 10 000
/// (`CUDA_CORE_STANDIN_BATCHES` sets another count of batches, for a run under a simulator).
fn best(op: impl FnMut()) -> f64 {
    let batches = std::env::var("CUDA_CORE_STANDIN_BATCHES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    best_of(batches, 10_000, op)
}

fn row(name: &str, raw: f64, core: f64) {
    println!("| {name} | {raw:.2} | {core:.2} | {:+.2} |", core - raw);
}

/// A raw kernel argument: the address of the value.
fn arg<T>(value: &T) -> *mut c_void {
    std::ptr::from_ref(value).cast_mut().cast()
}

/// Runs in the child, with the stand-in loaded.
fn measure() -> Result<()> {
    let device = Device::new(0)?;
    let name = device.name()?;
    if name != NAME {
        return Err(format!("the driver loaded is {name:?}, not the stand-in").into());
    }
    // SAFETY: the stand-in runs no initialisers; it stays loaded for the process.
    let library = unsafe { libloading::Library::new("libcuda.so.1") }?;
    // SAFETY: the library is the stand-in, whose functions have the 13 header's signatures.
    let t = unsafe { cuda_sys13::DriverTable::load(&library) };
    let missing = |what: &str| format!("the stand-in lacks {what}");
    let get_current = t
        .cuCtxGetCurrent
        .ok_or_else(|| missing("cuCtxGetCurrent"))?;
    let set_current = t
        .cuCtxSetCurrent
        .ok_or_else(|| missing("cuCtxSetCurrent"))?;
    let get_device = t.cuCtxGetDevice.ok_or_else(|| missing("cuCtxGetDevice"))?;
    let event_create = t.cuEventCreate.ok_or_else(|| missing("cuEventCreate"))?;
    let event_destroy = t.cuEventDestroy.ok_or_else(|| missing("cuEventDestroy"))?;
    let event_record = t.cuEventRecord.ok_or_else(|| missing("cuEventRecord"))?;
    let event_query = t.cuEventQuery.ok_or_else(|| missing("cuEventQuery"))?;
    let stream_sync = t
        .cuStreamSynchronize
        .ok_or_else(|| missing("cuStreamSynchronize"))?;
    let alloc = t
        .cuMemAllocFromPoolAsync
        .ok_or_else(|| missing("cuMemAllocFromPoolAsync"))?;
    let free = t.cuMemFreeAsync.ok_or_else(|| missing("cuMemFreeAsync"))?;
    let htod = t
        .cuMemcpyHtoDAsync
        .ok_or_else(|| missing("cuMemcpyHtoDAsync"))?;
    let launch_kernel = t.cuLaunchKernel.ok_or_else(|| missing("cuLaunchKernel"))?;
    let launch_kernel_ex = t
        .cuLaunchKernelEx
        .ok_or_else(|| missing("cuLaunchKernelEx"))?;

    device.set_current()?;
    let context = device.primary_context()?.as_raw().cast();
    let stream = device.create_stream(StreamOptions::default())?;
    let s = stream.as_raw().cast();
    let event = device.create_event(EventOptions::default())?;
    let e = event.as_raw().cast();
    let memory = device.memory_resource()?;
    let mut pool = null_mut();
    let default_pool = t
        .cuDeviceGetDefaultMemPool
        .ok_or_else(|| missing("cuDeviceGetDefaultMemPool"))?;
    // SAFETY: a writable out-pointer, device 0.
    unsafe { default_pool(&mut pool, 0) };
    // The stand-in loads anything; cuda-core first checks that a cubin is an ELF image whose
    // tables lie within its bytes: the smallest such, a header with no sections.
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    (elf[4], elf[5], elf[52], elf[54], elf[58]) = (2, 1, 64, 56, 64);
    let code = ObjectCode::from_cubin(elf);
    let kernels = [EMPTY0, EMPTY4, EMPTY16].map(|name| code.get_kernel(name));
    let [k0, k4, k16] = kernels;
    let (k0, k4, k16) = (k0?, k4?, k16?);
    let buffers: Vec<_> = (0..4)
        .map(|_| memory.allocate(4096, &stream))
        .collect::<cuda_core::Result<_>>()?;
    let mut copy = memory.allocate(4096, &stream)?;
    let host = vec![1u8; 4096];
    let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    let ints = [1i32; 12];
    let ptrs: [u64; 4] = std::array::from_fn(|i| buffers[i].ptr().0);

    let evict = std::env::var("CUDA_CORE_STANDIN_EVICT").unwrap_or_default();
    if evict.is_empty() || evict == "0" {
        println!("Per call, best of 200 batches of 10 000, on a stand-in driver whose calls return at once:\n");
    } else {
        println!(
            "Per call, best of 200 batches of 10 000, on a stand-in driver whose work calls each \
             write over {evict} bytes first:\n"
        );
    }
    println!("| operation | raw (ns) | cuda-core (ns) | difference (ns) |");
    println!("| --- | ---: | ---: | ---: |");
    // One row alone, for a profiler: `CUDA_CORE_STANDIN_ONLY=replay` or `=tensor_map`.
    match std::env::var("CUDA_CORE_STANDIN_ONLY").as_deref() {
        Ok("replay") => return replay_row(&t, &stream, &k4, &buffers),
        Ok("tensor_map") => return tensor_map_row(&t, &device, &stream),
        Ok("launch_attrs") => {
            launch_attrs_row(launch_kernel_ex, s, &k0, &stream, config);
            return Ok(());
        }
        _ => {}
    }
    // SAFETY (every raw call below): the stand-in's functions with valid out-pointers and the
    // handles made above.
    row(
        "device_current",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            let (mut c, mut d) = (null_mut(), 0);
            get_current(&mut c);
            get_device(&mut d);
            black_box(d);
        }),
        best(|| {
            black_box(Device::current().unwrap());
        }),
    );
    row(
        "set_current (raw: cuCtxSetCurrent)",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            set_current(black_box(context));
        }),
        best(|| device.set_current().unwrap()),
    );
    row(
        "event_create_destroy",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            let mut ev = null_mut();
            event_create(&mut ev, 2);
            event_destroy(black_box(ev));
        }),
        best(|| {
            drop(black_box(
                device.create_event(EventOptions::default()).unwrap(),
            ))
        }),
    );
    row(
        "event_create_destroy (raw also reads the current context)",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            let (mut c, mut ev) = (null_mut(), null_mut());
            get_current(&mut c);
            black_box(c);
            event_create(&mut ev, 2);
            event_destroy(black_box(ev));
        }),
        best(|| {
            drop(black_box(
                device.create_event(EventOptions::default()).unwrap(),
            ))
        }),
    );
    row(
        "event_record",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            event_record(black_box(e), s);
        }),
        best(|| stream.record(&event).unwrap()),
    );
    row(
        "event_query",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            black_box(event_query(black_box(e)));
        }),
        best(|| {
            black_box(event.is_done().unwrap());
        }),
    );
    row(
        "stream_sync_idle",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            stream_sync(black_box(s));
        }),
        best(|| stream.sync().unwrap()),
    );
    // SAFETY: stand-in functions, valid out-pointers, the handles made above.
    let raw_launch = |kernel: *mut c_void, params: &mut [*mut c_void]| unsafe {
        launch_kernel(
            kernel.cast(),
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            s,
            params.as_mut_ptr(),
            null_mut(),
        );
    };
    row(
        "launch_0",
        best(|| raw_launch(k0.as_raw(), &mut [])),
        // SAFETY: the stand-in runs nothing.
        best(|| unsafe { launch(&stream, &config, &k0, &[]) }.unwrap()),
    );
    let n = 1024i32;
    row(
        "launch_4",
        best(|| {
            let [p0, p1, p2, _] = &ptrs;
            raw_launch(k4.as_raw(), &mut [arg(p0), arg(p1), arg(p2), arg(&n)]);
        }),
        // SAFETY: as above.
        best(|| {
            let [b0, b1, b2, _] = [&buffers[0], &buffers[1], &buffers[2], &buffers[3]];
            // SAFETY: stand-in functions, valid out-pointers, the handles made above.
            unsafe { launch(&stream, &config, &k4, &[b0, b1, b2, &n]) }.unwrap();
        }),
    );
    row(
        "launch_16",
        best(|| {
            let i = &ints;
            raw_launch(
                k16.as_raw(),
                &mut [
                    arg(&ptrs[0]),
                    arg(&ptrs[1]),
                    arg(&ptrs[2]),
                    arg(&ptrs[3]),
                    arg(&i[0]),
                    arg(&i[1]),
                    arg(&i[2]),
                    arg(&i[3]),
                    arg(&i[4]),
                    arg(&i[5]),
                    arg(&i[6]),
                    arg(&i[7]),
                    arg(&i[8]),
                    arg(&i[9]),
                    arg(&i[10]),
                    arg(&i[11]),
                ],
            );
        }),
        best(|| {
            let [b0, b1, b2, b3] = [&buffers[0], &buffers[1], &buffers[2], &buffers[3]];
            let i = &ints;
            // SAFETY: as above.
            unsafe {
                launch(
                    &stream,
                    &config,
                    &k16,
                    &[
                        b0, b1, b2, b3, &i[0], &i[1], &i[2], &i[3], &i[4], &i[5], &i[6], &i[7],
                        &i[8], &i[9], &i[10], &i[11],
                    ],
                )
            }
            .unwrap();
        }),
    );
    launch_attrs_row(launch_kernel_ex, s, &k0, &stream, config);
    let raw_alloc_free = || {
        let mut ptr = 0;
        // SAFETY: stand-in functions, a valid out-pointer, the default pool and the stream
        // made above.
        unsafe {
            alloc(&mut ptr, 1024, pool, s);
            free(black_box(ptr), s);
        }
    };
    if std::env::var("CUDA_CORE_STANDIN_ONLY").as_deref() == Ok("alloc") {
        // The GPU suite's `alloc_free_1k_device_pool`: a counted pool of cuda-core's, without
        // the default resource's cache of small sizes, against raw on the same pool's handle.
        // (The stand-in has no `cuMemPoolCreate`: the default pool, wrapped.)
        use cuda_core::{DeviceMemoryResource, MemoryResource};
        // SAFETY: the device's default pool, which outlives the wrapper.
        let own = unsafe { DeviceMemoryResource::from_raw(pool.cast(), device) }?;
        let own: std::sync::Arc<dyn MemoryResource> = own;
        row(
            "alloc_free_1k_device_pool",
            best(raw_alloc_free),
            best(|| drop(black_box(own.allocate(1024, &stream).unwrap()))),
        );
        return Ok(());
    }
    row(
        "alloc_free_1k",
        best(raw_alloc_free),
        best(|| drop(black_box(memory.allocate(1024, &stream).unwrap()))),
    );
    row(
        "alloc_free_1k (raw also counts a stream reference up and down)",
        // SAFETY: as above. The clone stands for the stream reference a buffer keeps.
        best(|| unsafe {
            let mut ptr = 0;
            alloc(&mut ptr, 1024, pool, s);
            let kept = black_box(stream.clone());
            free(black_box(ptr), s);
            drop(kept);
        }),
        best(|| drop(black_box(memory.allocate(1024, &stream).unwrap()))),
    );
    row(
        "copy_htod_4k (copy, then synchronise)",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            htod(copy.ptr().0, host.as_ptr().cast(), host.len(), s);
            stream_sync(s);
        }),
        best(|| copy.copy_from_host(&host, &stream).unwrap()),
    );
    tensor_map_row(&t, &device, &stream)?;
    replay_row(&t, &stream, &k4, &buffers)?;
    Ok(())
}

/// `replay_100`: 100 launches of `empty4`, the first one's scalar changed on every call, raw
/// (`cuGraphExecKernelNodeSetParams` of that node, `cuGraphLaunch`) and through a `Replay`
/// whose body makes the 100 launches (compared, one node updated, one graph launch).
fn replay_row(
    t: &cuda_sys13::DriverTable,
    stream: &cuda_core::Stream,
    k4: &cuda_core::Kernel,
    buffers: &[cuda_core::Buffer],
) -> Result<()> {
    const KERNELS: usize = 100;
    let missing = |what: &str| format!("the stand-in lacks {what}");
    let create = t.cuGraphCreate.ok_or_else(|| missing("cuGraphCreate"))?;
    let add = t
        .cuGraphAddKernelNode
        .ok_or_else(|| missing("cuGraphAddKernelNode"))?;
    let instantiate = t
        .cuGraphInstantiateWithFlags
        .ok_or_else(|| missing("cuGraphInstantiateWithFlags"))?;
    let set = t
        .cuGraphExecKernelNodeSetParams
        .ok_or_else(|| missing("cuGraphExecKernelNodeSetParams"))?;
    let graph_launch = t.cuGraphLaunch.ok_or_else(|| missing("cuGraphLaunch"))?;
    let s = stream.as_raw().cast();
    let context = stream.context().as_raw().cast();
    let ptrs: [u64; 3] = std::array::from_fn(|i| buffers[i].ptr().0);
    let n = 1024i32;
    let params = |value: &i32| [arg(&ptrs[0]), arg(&ptrs[1]), arg(&ptrs[2]), arg(value)];
    let node_params = |args: &mut [*mut c_void; 4]| cuda_sys13::CUDA_KERNEL_NODE_PARAMS {
        func: null_mut(),
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 32,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: args.as_mut_ptr(),
        extra: null_mut(),
        kern: k4.as_raw().cast(),
        ctx: context,
    };
    let (mut graph, mut exec, mut first) = (null_mut(), null_mut(), null_mut());
    // SAFETY: stand-in functions, valid out-pointers, the handles made above.
    unsafe {
        create(&mut graph, 0);
        let mut last: *mut cuda_sys13::CUgraphNode_st = null_mut();
        for i in 0..KERNELS {
            let mut node = null_mut();
            let mut args = params(&n);
            let deps = [last];
            let count = usize::from(i > 0);
            add(
                &mut node,
                graph,
                deps.as_ptr(),
                count,
                &node_params(&mut args),
            );
            if i == 0 {
                first = node;
            }
            last = node;
        }
        instantiate(&mut exec, graph, 0);
    }
    let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    let [b0, b1, b2] = [&buffers[0], &buffers[1], &buffers[2]];
    let mut region = cuda_core::Replay::new();
    let (mut raw_scalar, mut core_scalar) = (0i32, 0i32);
    // Raw's call, the same for both rows: that node updated, the graph launched.
    let mut raw = || {
        raw_scalar = raw_scalar.wrapping_add(1);
        let mut args = params(&raw_scalar);
        // SAFETY: stand-in functions, the graph made above.
        unsafe {
            set(exec, first, &node_params(&mut args));
            graph_launch(exec, s);
        }
    };
    // Alone (for a profiler), a hundred times the batches.
    let batches = if std::env::var_os("CUDA_CORE_STANDIN_ONLY").is_some() {
        2_000
    } else {
        20
    };
    row(
        "replay_100 (raw: one node updated, one graph launch)",
        best_of(batches, 1_000, &mut raw),
        best_of(batches, 1_000, || {
            core_scalar = core_scalar.wrapping_add(1);
            let scalar = core_scalar;
            region
                .run(stream, |r| {
                    // SAFETY: the stand-in runs nothing.
                    unsafe { r.launch(&config, k4, &[b0, b1, b2, &scalar])? };
                    for _ in 1..KERNELS {
                        // SAFETY: as above.
                        unsafe { r.launch(&config, k4, &[b0, b1, b2, &n])? };
                    }
                    Ok(())
                })
                .unwrap();
        }),
    );
    // The same, with the 99 launches that stay the same declared unchanged: a body of its own,
    // as a user's would be.
    let mut region = cuda_core::Replay::new();
    row(
        "replay_100, 99 declared unchanged",
        best_of(batches, 1_000, &mut raw),
        best_of(batches, 1_000, || {
            core_scalar = core_scalar.wrapping_add(1);
            let scalar = core_scalar;
            region
                .run(stream, |r| {
                    // SAFETY: the stand-in runs nothing; the same buffers and `n` on every
                    // run.
                    unsafe {
                        r.launch(&config, k4, &[b0, b1, b2, &scalar])?;
                        for _ in 1..KERNELS {
                            r.launch_unchanged(&config, k4, &[b0, b1, b2, &n])?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
        }),
    );
    Ok(())
}

/// `launch_attrs`: a launch with programmatic serialization and the highest priority, the
/// attributes built on the stack as C code does at a launch.
fn launch_attrs_row(
    launch_kernel_ex: unsafe extern "C" fn(
        *const cuda_sys13::CUlaunchConfig,
        cuda_sys13::CUfunction,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> cuda_sys13::CUresult,
    s: cuda_sys13::CUstream,
    k0: &cuda_core::Kernel,
    stream: &cuda_core::Stream,
    config: LaunchConfig,
) {
    let attributed = config
        .with_programmatic_serialization(true)
        .with_priority(-5);
    row(
        "launch_attrs",
        // SAFETY: stand-in functions, valid out-pointers, the handles made above.
        best(|| unsafe {
            use cuda_sys13::CUlaunchAttributeID as Id;
            let mut attributes = [cuda_sys13::CUlaunchAttribute::default(); 2];
            attributes[0].id = Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attributes[0].value.programmaticStreamSerializationAllowed = 1;
            attributes[1].id = Id::CU_LAUNCH_ATTRIBUTE_PRIORITY;
            attributes[1].value.priority = -5;
            let launch = cuda_sys13::CUlaunchConfig {
                gridDimX: 1,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: 32,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: s,
                attrs: black_box(attributes.as_mut_ptr()),
                numAttrs: 2,
            };
            launch_kernel_ex(&launch, k0.as_raw().cast(), null_mut(), null_mut());
        }),
        // SAFETY: the stand-in runs nothing.
        best(|| unsafe { launch(stream, &attributed, k0, &[]) }.unwrap()),
    );
}

/// The best time per call over `batches` batches of `per_batch` calls.
fn best_of(batches: u32, per_batch: u32, mut op: impl FnMut()) -> f64 {
    (0..batches)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..per_batch {
                op();
            }
            start.elapsed().as_nanos() as f64 / f64::from(per_batch)
        })
        .fold(f64::INFINITY, f64::min)
}

/// `tensor_map_encode`: a tiled map of a 1024 x 1024 `f32` matrix in 32 x 32 boxes with the
/// 128-byte swizzle, raw (`cuTensorMapEncodeTiled` into a descriptor on the stack) and through
/// cuda-core (`TensorMap::tiled`: its checks, the context read, the buffer's `Arc`).
fn tensor_map_row(
    t: &cuda_sys13::DriverTable,
    device: &Device,
    stream: &cuda_core::Stream,
) -> Result<()> {
    use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorMapSwizzle, TiledOptions};
    use cuda_sys13::{
        CUtensorMap, CUtensorMapDataType, CUtensorMapFloatOOBfill, CUtensorMapInterleave,
        CUtensorMapL2promotion, CUtensorMapSwizzle,
    };
    let encode = t
        .cuTensorMapEncodeTiled
        .ok_or("the stand-in lacks cuTensorMapEncodeTiled")?;
    let matrix = std::sync::Arc::new(
        device
            .memory_resource()?
            .allocate(1024 * 1024 * 4, stream)?,
    );
    let options = TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32])
        .with_swizzle(TensorMapSwizzle::B128);
    let (dims, strides, boxes, element_strides) =
        ([1024u64, 1024], [4096u64], [32u32, 32], [1u32, 1]);
    let mut out = CUtensorMap { opaque: [0; 16] };
    let address = matrix.ptr().0 as *mut c_void;
    // The raw encoding each row compares with.
    let mut raw = || {
        // SAFETY: the stand-in's function, an aligned descriptor, arrays of the rank's length.
        unsafe {
            encode(
                &mut out,
                CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                2,
                address,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
                CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        black_box(&mut out);
    };
    row(
        "tensor_map_encode",
        best(&mut raw),
        best(|| drop(black_box(TensorMap::tiled(&matrix, 0, &options).unwrap()))),
    );
    let layout = cuda_core::tensor_map::TensorMapLayout::tiled(*device, &options)?;
    row(
        "tensor_map_encode (cuda-core: a layout checked once)",
        best(&mut raw),
        best(|| {
            drop(black_box(
                TensorMap::with_layout(&matrix, 0, &layout).unwrap(),
            ))
        }),
    );
    let mut map = TensorMap::with_layout(&matrix, 0, &layout)?;
    row(
        "tensor_map_encode (cuda-core: one map re-encoded in place)",
        best(&mut raw),
        best(|| {
            map.reencode(&matrix, 0, &layout).unwrap();
            black_box(&mut map);
        }),
    );
    Ok(())
}
