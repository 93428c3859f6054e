//! Programs on the GPU: SAXPY at 10M elements, templates, linking, kernel attributes,
//! clusters, cooperative launches, bad launches, and launches from any thread.

use crate::common;

use std::sync::OnceLock;

use cuda_core::{
    launch, Allocate, CodeType, ContextOptions, DevicePtr, Error, Kernel, LaunchConfig, Linker,
    LinkerOptions, ObjectCode, Program, ProgramOptions, SmSplitOptions, StreamOptions,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template <typename T> __global__ void scale(T* x, T a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

extern "C" __global__ void cluster_rank(unsigned* out) {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) out[blockIdx.x] = rank;
}

// A grid-wide barrier by hand: only safe when every block is resident (cooperative).
extern "C" __global__ void grid_barrier(unsigned* counter, unsigned* out) {
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(counter, 1u);
        while (atomicAdd(counter, 0u) < gridDim.x) { }
        out[blockIdx.x] = atomicAdd(counter, 0u);
    }
}

extern "C" __global__ void sixteen(unsigned* out, unsigned a1, unsigned a2, unsigned a3,
    unsigned a4, unsigned a5, unsigned a6, unsigned a7, unsigned a8, unsigned a9, unsigned a10,
    unsigned a11, unsigned a12, unsigned a13, unsigned a14, unsigned long long a15) {
    out[0] = a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14
           + (unsigned)a15;
}
"#;

/// The test program, compiled once per process for the current device.
fn code() -> &'static ObjectCode {
    static CODE: OnceLock<ObjectCode> = OnceLock::new();
    CODE.get_or_init(|| {
        common::device().set_current().unwrap();
        Program::new(SOURCE, ProgramOptions::default())
            .with_name("tests.cu")
            .compile(CodeType::Cubin, &["scale<float>", "scale<double>"])
            .unwrap()
    })
}

fn kernel(name: &str) -> Kernel {
    code().get_kernel(name).unwrap()
}

fn random_floats(seed: u64, n: usize) -> Vec<f32> {
    common::random_u32(seed, n)
        .into_iter()
        .map(|r| (r >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0)
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn saxpy_10m_matches_the_cpu() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let n = 10_000_000usize;
    let (x, y) = (random_floats(1, n), random_floats(2, n));
    let a = 2.5f32;
    let memory = device.memory_resource().unwrap();
    let mut dx = memory.allocate(4 * n, &stream).unwrap();
    let mut dy = memory.allocate(4 * n, &stream).unwrap();
    dx.copy_from_host(&x, &stream).unwrap();
    dy.copy_from_host(&y, &stream).unwrap();
    let saxpy = kernel("saxpy");
    let config = LaunchConfig::for_elements(n as u64, 256);
    // SAFETY: n floats in each buffer; the kernel reads x and updates y within n.
    unsafe { launch(&stream, &config, &saxpy, &[&a, &dx, &dy, &(n as u32)]) }.unwrap();
    let out = dy.to_vec::<f32>(&stream).unwrap();
    let wrong = (0..n)
        .filter(|&i| out[i] != a.mul_add(x[i], y[i]) && out[i] != a * x[i] + y[i])
        .count();
    assert_eq!(wrong, 0, "elements differ from the CPU's");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn templates_launch_by_name_expression() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let n = 1000u32;
    let mut f = memory.allocate(4 * n as usize, &stream).unwrap();
    let mut d = memory.allocate(8 * n as usize, &stream).unwrap();
    f.copy_from_host(&vec![1.5f32; n as usize], &stream)
        .unwrap();
    d.copy_from_host(&vec![1.5f64; n as usize], &stream)
        .unwrap();
    let config = LaunchConfig::for_elements(n.into(), 128);
    // SAFETY: n elements in each buffer.
    unsafe {
        launch(
            &stream,
            &config,
            &kernel("scale<float>"),
            &[&f, &2.0f32, &n],
        )
        .unwrap();
        launch(
            &stream,
            &config,
            &kernel("scale<double>"),
            &[&d, &4.0f64, &n],
        )
        .unwrap();
    }
    assert!(f.to_vec::<f32>(&stream).unwrap().iter().all(|&v| v == 3.0));
    assert!(d.to_vec::<f64>(&stream).unwrap().iter().all(|&v| v == 6.0));
    // The double kernel's second parameter is 8 bytes: a float is refused before the driver.
    // SAFETY: refused before launch.
    let err = unsafe {
        launch(
            &stream,
            &config,
            &kernel("scale<double>"),
            &[&d, &4.0f32, &n],
        )
    }
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "args", reason } if reason.contains("argument 1")),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_attributes_parameters_and_occupancy() {
    let device = common::device();
    let saxpy = kernel("saxpy");
    let attributes = saxpy.attributes(device).unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    assert_eq!(attributes.binary_version, major * 10 + minor);
    assert!(attributes.max_threads_per_block > 0 && attributes.max_threads_per_block <= 1024);
    assert!(attributes.num_regs > 0);
    let params: Vec<(usize, usize)> = saxpy
        .params()
        .unwrap()
        .iter()
        .map(|p| (p.offset, p.size))
        .collect();
    assert_eq!(params, [(0, 4), (8, 8), (16, 8), (24, 4)]);
    let blocks = saxpy.max_active_blocks_per_sm(device, 256, 0).unwrap();
    assert!(blocks >= 1 && blocks * 256 <= 2048, "{blocks}");
    let (grid, block) = saxpy.max_potential_block_size(device, 0, 0).unwrap();
    assert!(grid > 0 && block > 0 && block <= 1024, "{grid} {block}");
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let clusters = saxpy
        .max_active_clusters(
            &LaunchConfig::new([2, 1, 1], [128, 1, 1]).with_cluster([2, 1, 1]),
            &stream,
        )
        .unwrap();
    assert!(clusters > 0);
    let shared = attributes.max_dynamic_shared_size_bytes;
    saxpy
        .set_max_dynamic_shared_memory(device, 64 * 1024)
        .unwrap();
    assert_eq!(
        saxpy
            .attributes(device)
            .unwrap()
            .max_dynamic_shared_size_bytes,
        64 * 1024
    );
    assert!(shared <= 48 * 1024);
    println!("saxpy: {attributes:?}, {blocks} blocks/SM of 256, best block {block}, {clusters} 2-clusters");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_launches_are_refused_with_reasons() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4096, &stream)
        .unwrap();
    let saxpy = kernel("saxpy");
    let ok = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    let n = 0u32;
    let args: [&dyn cuda_core::KernelArg; 4] = [&1.0f32, &buffer, &buffer, &n];
    let cases: Vec<(LaunchConfig, &str)> = vec![
        (LaunchConfig::new([0, 1, 1], [32, 1, 1]), "config.grid"),
        (LaunchConfig::new([1, 1, 1], [32, 0, 1]), "config.block"),
        (LaunchConfig::new([1, 1, 1], [2048, 1, 1]), "config.block"),
        (ok.with_shared_memory(1 << 30), "config.shared_memory_bytes"),
        (
            LaunchConfig::new([3, 1, 1], [32, 1, 1]).with_cluster([2, 1, 1]),
            "config.cluster",
        ),
        (ok.with_cluster([0, 1, 1]), "config.cluster"),
        (
            LaunchConfig::new([1 << 20, 1, 1], [1024, 1, 1]).with_cooperative(true),
            "config.grid",
        ),
    ];
    for (config, name) in cases {
        // SAFETY: every case is refused before the driver.
        let err = unsafe { launch(&stream, &config, &saxpy, &args) }.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: n, .. } if *n == name),
            "{config:?}: {err}"
        );
    }
    // SAFETY: refused before the driver.
    let err = unsafe { launch(&stream, &ok, &saxpy, &args[..3]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("takes 4 argument(s), 3 given")),
        "{err}"
    );
    // SAFETY: refused before the driver.
    let err =
        unsafe { launch(&stream, &ok, &saxpy, &[&1.0f64, &buffer, &buffer, &n]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("argument 0")),
        "{err}"
    );
    // A buffer (8 bytes as an argument) for the `unsigned` n (4 bytes).
    // SAFETY: refused before the driver.
    let err =
        unsafe { launch(&stream, &ok, &saxpy, &[&1.0f32, &buffer, &buffer, &buffer]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. }
            if reason.contains("argument 3") && reason.contains("is 8 bytes")),
        "{err}"
    );
    // A kernel name that does not exist.
    let err = code().get_kernel("no_such_kernel").unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "name", reason } if reason.contains("no_such_kernel")),
        "{err}"
    );
    // LTO-IR cannot be loaded unlinked.
    let err = ObjectCode::from_ltoir(vec![1, 2, 3])
        .get_kernel("k")
        .unwrap_err();
    assert!(matches!(err, Error::Link { .. }), "{err}");
    stream.sync().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn sixteen_arguments() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(4, &stream)
        .unwrap();
    let v: Vec<u32> = (1..=14).collect();
    let last = 1000u64;
    let mut args: Vec<&dyn cuda_core::KernelArg> = vec![&out];
    args.extend(v.iter().map(|x| x as &dyn cuda_core::KernelArg));
    args.push(&last);
    assert_eq!(args.len(), 16);
    // SAFETY: one unsigned written to a 4-byte buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
            &kernel("sixteen"),
            &args,
        )
    }
    .unwrap();
    assert_eq!(out.to_vec::<u32>(&stream).unwrap(), [105 + 1000]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_launch_ranks_blocks_in_pairs() {
    let device = common::device();
    if device.compute_capability().unwrap().0 < 9 {
        return common::not_run("cc-9.0", "clusters need compute capability 9.0");
    }
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let blocks = 8u32;
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(4 * blocks as usize, &stream)
        .unwrap();
    let config = LaunchConfig::new([blocks, 1, 1], [64, 1, 1]).with_cluster([2, 1, 1]);
    // SAFETY: one unsigned per block.
    unsafe { launch(&stream, &config, &kernel("cluster_rank"), &[&out]) }.unwrap();
    assert_eq!(
        out.to_vec::<u32>(&stream).unwrap(),
        [0, 1, 0, 1, 0, 1, 0, 1]
    );
    // Without a cluster every block is rank 0 of its own.
    // SAFETY: as above.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([blocks, 1, 1], [64, 1, 1]),
            &kernel("cluster_rank"),
            &[&out],
        )
    }
    .unwrap();
    assert_eq!(out.to_vec::<u32>(&stream).unwrap(), [0; 8]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cooperative_launch_keeps_every_block_resident() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let barrier = kernel("grid_barrier");
    // The barrier spins until every block arrives: were residency wrong, it would never end.
    let _watchdog =
        common::Watchdog::new(std::time::Duration::from_secs(60), "a cooperative barrier");
    let per_sm = barrier.max_active_blocks_per_sm(device, 128, 0).unwrap();
    let blocks = per_sm * device.properties().multiprocessor_count().unwrap();
    let memory = device.memory_resource().unwrap();
    let mut counter = memory.allocate(4, &stream).unwrap();
    counter.fill(0u32, &stream).unwrap();
    let out = memory.allocate(4 * blocks as usize, &stream).unwrap();
    let config = LaunchConfig::new([blocks, 1, 1], [128, 1, 1]).with_cooperative(true);
    // SAFETY: one counter and one unsigned per block.
    unsafe { launch(&stream, &config, &barrier, &[&counter, &out]) }.unwrap();
    // Every block passed the barrier after all had arrived.
    assert!(
        out.to_vec::<u32>(&stream)
            .unwrap()
            .iter()
            .all(|&v| v == blocks),
        "{blocks} blocks"
    );
    // One block more cannot be resident: refused before the driver (it would hang).
    let over = LaunchConfig::new([blocks + 1, 1, 1], [128, 1, 1]).with_cooperative(true);
    // SAFETY: refused before the driver.
    let err = unsafe { launch(&stream, &over, &barrier, &[&counter, &out]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "config.grid", reason } if reason.contains("resident")),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_translation_units_link_through_the_driver() {
    let device = common::device();
    device.set_current().unwrap();
    let rdc = ProgramOptions::default().with_relocatable_device_code(true);
    let lib = Program::new(
        "__device__ float twice(float x) { return 2.0f * x; }",
        rdc.clone(),
    )
    .with_name("lib.cu")
    .compile(CodeType::Ptx, &[])
    .unwrap();
    let main = Program::new(
        r#"__device__ float twice(float x);
           extern "C" __global__ void apply(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]) + 1.0f; }"#,
        rdc.clone(),
    )
    .with_name("main.cu")
    .compile(CodeType::Ptx, &[])
    .unwrap();
    let linked = Linker::new(&[lib, main.clone()], LinkerOptions::default())
        .link()
        .unwrap();
    assert_eq!(linked.code_type(), CodeType::Cubin);
    assert_eq!(run_apply(&linked, 3.0), [7.0f32; 32]);
    // Linking without the definition fails with the linker's log naming the symbol.
    let err = Linker::new(&[main], LinkerOptions::default())
        .link()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("twice")),
        "{err}"
    );
    // PTX loads directly too.
    let ptx = Program::new(SOURCE, ProgramOptions::default())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    ptx.get_kernel("saxpy").unwrap();
}

/// Launches from threads with no context, or a green context of half the SMs, current; and
/// the seed use case: SAXPY on each half of the GPU from two threads at once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn saxpy_on_each_half_of_the_gpu_from_two_threads() {
    let _green = common::green_contexts();
    let device = common::device();
    let saxpy = kernel("saxpy");
    let sms = device.resources().sm().unwrap();
    let align = sms.coscheduled_alignment().unwrap_or(8);
    let half = sms.sm_count() / 2 / align * align;
    let split = sms
        .split(SmSplitOptions::groups_of(half).with_groups(2))
        .unwrap();
    let threads: Vec<_> = split
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| {
            let saxpy = saxpy.clone();
            std::thread::spawn(move || {
                let context = device
                    .create_context(ContextOptions::default().with_resources(vec![group]))
                    .unwrap();
                let stream = context.create_stream(StreamOptions::default()).unwrap();
                let n = 1usize << 22;
                let (x, y) = (
                    random_floats(10 + i as u64, n),
                    random_floats(20 + i as u64, n),
                );
                let memory = device.memory_resource().unwrap();
                let mut dx = memory.allocate(4 * n, &stream).unwrap();
                let mut dy = memory.allocate(4 * n, &stream).unwrap();
                dx.copy_from_host(&x, &stream).unwrap();
                dy.copy_from_host(&y, &stream).unwrap();
                // SAFETY: n floats each.
                unsafe {
                    launch(
                        &stream,
                        &LaunchConfig::for_elements(n as u64, 256),
                        &saxpy,
                        &[&3.0f32, &dx, &dy, &(n as u32)],
                    )
                }
                .unwrap();
                let out = dy.to_vec::<f32>(&stream).unwrap();
                assert!((0..n)
                    .all(|k| out[k] == 3.0f32.mul_add(x[k], y[k]) || out[k] == 3.0 * x[k] + y[k]));
                context.sm_count().unwrap()
            })
        })
        .collect();
    let counts: Vec<u32> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(counts.len(), 2);
    assert!(counts.iter().all(|&c| c >= half), "{counts:?}");
    println!("SAXPY ran on green contexts of {counts:?} SMs at once");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_device_pointers_are_arguments_too() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut x = device
        .memory_resource()
        .unwrap()
        .allocate(16, &stream)
        .unwrap();
    x.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0], &stream).unwrap();
    let raw: DevicePtr = x.ptr();
    // SAFETY: 4 floats at `raw`, alive until the copy back.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [4, 1, 1]),
            &kernel("scale<float>"),
            &[&raw, &10.0f32, &4u32],
        )
    }
    .unwrap();
    assert_eq!(x.to_vec::<f32>(&stream).unwrap(), [10.0, 20.0, 30.0, 40.0]);
}

/// Runs a linked program's `apply(float*)` on 32 copies of `input`; returns the results.
fn run_apply(linked: &ObjectCode, input: f32) -> Vec<f32> {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut x = device
        .memory_resource()
        .unwrap()
        .allocate(4 * 32, &stream)
        .unwrap();
    x.copy_from_host(&[input; 32], &stream).unwrap();
    let kernel = linked.get_kernel("apply").unwrap();
    // SAFETY: 32 floats, one per thread.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
            &kernel,
            &[&x],
        )
    }
    .unwrap();
    x.to_vec::<f32>(&stream).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ltoir_links_with_nvjitlink_and_runs() {
    let device = common::device();
    device.set_current().unwrap();
    let info = cuda_core::info::driver_info().unwrap();
    let Ok(((major, minor), location)) = info.nvjitlink else {
        println!("not run: no nvJitLink here ({:?})", info.nvjitlink.err());
        return;
    };
    println!("nvJitLink {major}.{minor} from {}", location.display());
    let rdc = ProgramOptions::default().with_relocatable_device_code(true);
    let lib = Program::new(
        "__device__ float twice(float x) { return 2.0f * x; }",
        rdc.clone(),
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let main = Program::new(
        r#"__device__ float twice(float x);
           extern "C" __global__ void apply(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]) - 1.0f; }"#,
        rdc,
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let linked = Linker::new(&[lib, main], LinkerOptions::default())
        .link()
        .unwrap();
    assert_eq!(run_apply(&linked, 5.0), [9.0f32; 32]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cached_program_runs_like_a_fresh_one() {
    let device = common::device();
    device.set_current().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = cuda_core::cache::FileStreamProgramCache::new(dir.path(), 16 << 20).unwrap();
    let program = Program::new(SOURCE, ProgramOptions::default());
    let cold = program
        .compile_cached(&cache, CodeType::Cubin, &["scale<float>"])
        .unwrap();
    let warm = program
        .compile_cached(&cache, CodeType::Cubin, &["scale<float>"])
        .unwrap();
    assert_eq!(cold.code(), warm.code());
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut x = device
        .memory_resource()
        .unwrap()
        .allocate(16, &stream)
        .unwrap();
    x.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0], &stream).unwrap();
    // SAFETY: 4 floats.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [4, 1, 1]),
            &warm.get_kernel("scale<float>").unwrap(),
            &[&x, &0.5f32, &4u32],
        )
    }
    .unwrap();
    assert_eq!(x.to_vec::<f32>(&stream).unwrap(), [0.5, 1.0, 1.5, 2.0]);
}

/// Another local user who can write to a cache directory can place a well-formed entry under
/// the key this process will look up (keys are computed from inputs anyone may know) and have
/// their kernel run here. Bugs caught: an entry of another owner loaded (the marker appears);
/// a test that could not plant at all (the positive control, an entry of ours under the same
/// name, must run the planted kernel).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_well_formed_entry_another_user_planted_never_runs() {
    if !rustix::process::geteuid().is_root() {
        return common::not_run("root", "giving a file to another user needs root");
    }
    const MARKER: u32 = 0xBAD;
    let device = common::device();
    device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mine = Program::new(
        "extern \"C\" __global__ void mark(unsigned* x) { *x = 1; }",
        ProgramOptions::default(),
    );
    let theirs = Program::new(
        format!("extern \"C\" __global__ void mark(unsigned* x) {{ *x = {MARKER}; }}"),
        ProgramOptions::default(),
    );
    // Their entry, made by a cache of their own: a valid entry file.
    let their_dir = tempfile::tempdir().unwrap();
    let their_cache =
        cuda_core::cache::FileStreamProgramCache::new(their_dir.path(), 16 << 20).unwrap();
    theirs
        .compile_cached(&their_cache, CodeType::Cubin, &[])
        .unwrap();
    let their_entry = their_dir
        .path()
        .join(theirs.cache_key(CodeType::Cubin, &[]).unwrap().to_hex());
    let dir = tempfile::tempdir().unwrap();
    let planted = dir
        .path()
        .join(mine.cache_key(CodeType::Cubin, &[]).unwrap().to_hex());
    let run = |owner: u32| {
        std::fs::copy(&their_entry, &planted).unwrap();
        std::os::unix::fs::lchown(&planted, Some(owner), None).unwrap();
        let cache = cuda_core::cache::FileStreamProgramCache::new(dir.path(), 16 << 20).unwrap();
        let code = mine.compile_cached(&cache, CodeType::Cubin, &[]).unwrap();
        let mut x = device
            .memory_resource()
            .unwrap()
            .allocate(4, &stream)
            .unwrap();
        x.copy_from_host(&[0u32], &stream).unwrap();
        // SAFETY: one unsigned.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
                &code.get_kernel("mark").unwrap(),
                &[&x],
            )
        }
        .unwrap();
        (
            x.to_vec::<u32>(&stream).unwrap()[0],
            cache.refused_entries(),
        )
    };
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(
        run(me),
        (MARKER, 0),
        "the positive control: a planted entry of ours runs"
    );
    assert_eq!(run(65534), (1, 1), "another user's planted entry ran");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_raw_kernel_is_wrapped_and_launched_with_checked_arguments() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let saxpy = kernel("saxpy");
    // SAFETY: the kernel's own handle; its library stays loaded by `saxpy`.
    let raw = unsafe { Kernel::from_raw(saxpy.as_raw()) }.unwrap();
    // The driver's name for it, and the same parameter layout.
    assert_eq!(raw.name(), "saxpy");
    assert_eq!(raw.params().unwrap(), saxpy.params().unwrap());
    let n = 1024u32;
    let memory = device.memory_resource().unwrap();
    let mut x = memory.allocate(4 * n as usize, &stream).unwrap();
    let mut y = memory.allocate(4 * n as usize, &stream).unwrap();
    x.copy_from_host(&vec![2.0f32; n as usize], &stream)
        .unwrap();
    y.copy_from_host(&vec![1.0f32; n as usize], &stream)
        .unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    // Arguments are checked against the wrapped kernel's parameters as for any other.
    // SAFETY: refused before the launch.
    let err = unsafe { launch(&stream, &config, &raw, &[&3.0f32, &x, &y]) }.unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "args", .. }),
        "{err}"
    );
    // SAFETY: n floats in x and y.
    unsafe { launch(&stream, &config, &raw, &[&3.0f32, &x, &y, &n]) }.unwrap();
    assert!(y.to_vec::<f32>(&stream).unwrap().iter().all(|&v| v == 7.0));
}

#[test]
fn a_launch_orders_buffers_of_other_streams_around_itself() {
    common::standin::run(
        module_path!(),
        "a_launch_orders_buffers_of_other_streams_around_itself",
        &[],
        &[],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(0).unwrap();
            let s1 = device.create_stream(StreamOptions::default()).unwrap();
            let s2 = device.create_stream(StreamOptions::default()).unwrap();
            let other = standin::calls("cuStreamCreate").pop().unwrap();
            let other = other.split_whitespace().nth(1).unwrap().to_owned();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let buffer = device.memory_resource().unwrap().allocate(64, &s1).unwrap();
            let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: the stand-in runs nothing.
            unsafe { launch(&s1, &config, &k1, &[&buffer]) }.unwrap();
            // On the buffer's own stream: the launch alone.
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&s1, &config, &k1, &[&buffer]) }.unwrap();
            let text = standin::log();
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(text.contains("cuLaunchKernel k1"), "{text}");
            // On another: s2 waits for s1's work so far, s1 for the launch.
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&s2, &config, &k1, &[&buffer]) }.unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = log
                .iter()
                .position(|l| l.starts_with("cuLaunchKernel"))
                .unwrap();
            assert!(log[at].ends_with(&other), "{text}");
            let before = &log[..at];
            let after = &log[at..];
            assert!(
                before.iter().any(|l| l.starts_with("cuEventRecord")),
                "{text}"
            );
            assert!(
                before
                    .iter()
                    .any(|l| l.starts_with(&format!("cuStreamWaitEvent {other} waits"))),
                "{text}"
            );
            assert!(
                after
                    .iter()
                    .any(|l| l.starts_with("cuEventRecord") && l.ends_with(&other)),
                "{text}"
            );
            assert!(
                after.iter().any(|l| l.starts_with("cuStreamWaitEvent")
                    && !l.contains(&format!("{other} waits"))),
                "{text}"
            );
            // Two buffers of s1 and one of s2 itself: s2 waits on s1 once, and on itself never.
            let k4 = code.get_kernel("k4").unwrap();
            let second = device.memory_resource().unwrap().allocate(64, &s1).unwrap();
            let own = device.memory_resource().unwrap().allocate(64, &s2).unwrap();
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&s2, &config, &k4, &[&buffer, &second, &buffer, &own]) }.unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let at = log
                .iter()
                .position(|l| l.starts_with("cuLaunchKernel"))
                .unwrap();
            let waits = log[..at]
                .iter()
                .filter(|l| l.starts_with("cuStreamWaitEvent"))
                .count();
            assert_eq!(waits, 1, "one wait per other stream: {text}");
            drop((second, own));
            drop(buffer);
        },
    );
}

#[test]
fn launch_checks_are_made_on_the_launchs_own_device_and_shape() {
    common::standin::run(
        module_path!(),
        "launch_checks_are_made_on_the_launchs_own_device_and_shape",
        &[],
        &[],
        || {
            use crate::common::standin;
            // No context is current on this thread; the stream is device 1's.
            let device = cuda_core::Device::new(1).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            // SAFETY: the stand-in runs nothing.
            unsafe {
                launch(
                    &stream,
                    &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
                    &k1,
                    &[&buffer],
                )
            }
            .unwrap();
            // The parameters were read in device 1's context: device 0's was never retained.
            let retains = standin::calls("cuDevicePrimaryCtxRetain");
            assert!(
                retains.iter().all(|l| l.ends_with("device=1")),
                "{retains:?}"
            );
            // 4194304^3 threads: 2^66, which a u64 product wraps to 0.
            let huge = LaunchConfig::new([1, 1, 1], [4_194_304; 3]);
            standin::clear_log();
            // SAFETY: refused before the driver.
            let err = unsafe { launch(&stream, &huge, &k1, &[&buffer]) }.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "config.block", reason } if reason.contains("2^64")),
                "{err}"
            );
            assert!(standin::calls("cuLaunchKernel").is_empty());
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cooperative_launch_in_a_green_context_counts_the_contexts_sms() {
    let _green = common::green_contexts();
    let device = common::device();
    let barrier = kernel("grid_barrier");
    // The barrier spins until every block arrives: were residency wrong, it would never end.
    let _watchdog =
        common::Watchdog::new(std::time::Duration::from_secs(60), "a cooperative barrier");
    let sms = device.resources().sm().unwrap();
    let align = sms.coscheduled_alignment().unwrap_or(8);
    let half = sms.sm_count() / 2 / align * align;
    let split = sms
        .split(SmSplitOptions::groups_of(half).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    let green_sms = green.sm_count().unwrap();
    assert!(green_sms < device.properties().multiprocessor_count().unwrap());
    let stream = green.create_stream(StreamOptions::default()).unwrap();
    let per_sm = barrier.max_active_blocks_per_sm(device, 128, 0).unwrap();
    let blocks = per_sm * green_sms;
    let memory = device.memory_resource().unwrap();
    let mut counter = memory.allocate(4, &stream).unwrap();
    counter.fill(0u32, &stream).unwrap();
    let out = memory.allocate(4 * (blocks as usize + 1), &stream).unwrap();
    // As many blocks as the context's SMs hold: all resident, all pass the barrier.
    let config = LaunchConfig::new([blocks, 1, 1], [128, 1, 1]).with_cooperative(true);
    // SAFETY: one counter and one unsigned per block.
    unsafe { launch(&stream, &config, &barrier, &[&counter, &out]) }.unwrap();
    let passed = out.to_vec::<u32>(&stream).unwrap();
    assert!(
        passed[..blocks as usize].iter().all(|&v| v == blocks),
        "{blocks} blocks"
    );
    // One more fits the device but not the context: refused (counting the device's SMs, it
    // would be launched, and hang at the barrier).
    let over = LaunchConfig::new([blocks + 1, 1, 1], [128, 1, 1]).with_cooperative(true);
    // SAFETY: refused before the driver.
    let err = unsafe { launch(&stream, &over, &barrier, &[&counter, &out]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "config.grid", reason } if reason.contains("green context")),
        "{err}"
    );
}

/// A fatbin of one uncompressed cubin entry for `arch` (`90` for sm_90), as laid out by the
/// toolkit: a 16-byte header, a 64-byte entry header, the cubin padded to 8 bytes.
fn fatbin_of(cubin: &[u8], arch: u32) -> Vec<u8> {
    let padded = cubin.len().div_ceil(8) * 8;
    let mut fat = Vec::new();
    fat.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes()); // version
    fat.extend_from_slice(&16u16.to_le_bytes()); // header size
    fat.extend_from_slice(&(64 + padded as u64).to_le_bytes()); // entries' size
    let mut entry = [0u8; 64];
    entry[0..2].copy_from_slice(&2u16.to_le_bytes()); // an ELF (cubin) entry
    entry[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    entry[4..8].copy_from_slice(&64u32.to_le_bytes()); // this header's size
    entry[8..16].copy_from_slice(&(padded as u64).to_le_bytes()); // the payload's
    entry[24..26].copy_from_slice(&7u16.to_le_bytes()); // ELF code version 1.7
    entry[26..28].copy_from_slice(&1u16.to_le_bytes());
    entry[28..32].copy_from_slice(&arch.to_le_bytes());
    entry[40..48].copy_from_slice(&0x11u64.to_le_bytes()); // 64-bit, Linux
    fat.extend_from_slice(&entry);
    fat.extend_from_slice(cubin);
    fat.resize(16 + 64 + padded, 0);
    fat
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn images_are_checked_before_the_driver_reads_them() {
    let device = common::device();
    device.set_current().unwrap();
    let program = Program::new(SOURCE, ProgramOptions::default());
    // The issue's case: SAXPY's PTX without its NUL, passed as a cubin. The driver would read
    // it as a C string, past the end of the bytes.
    let ptx = program.compile(CodeType::Ptx, &[]).unwrap();
    let text = ptx.code()[..ptx.code().len() - 1].to_vec();
    let err = ObjectCode::from_cubin(text.clone())
        .get_kernel("saxpy")
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "code", reason } if reason.contains("declared a cubin")),
        "{err}"
    );
    // As PTX it loads (it gets its NUL) and runs.
    assert!(ObjectCode::from_ptx(text).get_kernel("saxpy").is_ok());
    // A cubin cut in half: its section table ends past the bytes.
    let cubin = code().code().to_vec();
    let err = ObjectCode::from_cubin(cubin[..cubin.len() / 2].to_vec())
        .get_kernel("saxpy")
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "code", reason } if reason.contains("cut short")),
        "{err}"
    );
    // A 16-byte fatbin header that claims 1 GiB.
    let mut claim = fatbin_of(&[], 90)[..16].to_vec();
    claim[8..16].copy_from_slice(&(1u64 << 30).to_le_bytes());
    let err = ObjectCode::from_fatbin(claim)
        .get_kernel("saxpy")
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "code", .. }),
        "{err}"
    );
    // The whole cubin wrapped in a fatbin passes the checks, and the driver loads it.
    let (major, minor) = device.compute_capability().unwrap();
    let fat = ObjectCode::from_fatbin(fatbin_of(&cubin, major * 10 + minor));
    let saxpy = fat.get_kernel("saxpy").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let n = 256u32;
    let memory = device.memory_resource().unwrap();
    let mut x = memory.allocate(4 * n as usize, &stream).unwrap();
    let mut y = memory.allocate(4 * n as usize, &stream).unwrap();
    x.copy_from_host(&vec![1.0f32; n as usize], &stream)
        .unwrap();
    y.copy_from_host(&vec![1.0f32; n as usize], &stream)
        .unwrap();
    // SAFETY: n floats in x and y.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n.into(), 128),
            &saxpy,
            &[&2.0f32, &x, &y, &n],
        )
    }
    .unwrap();
    assert!(y.to_vec::<f32>(&stream).unwrap().iter().all(|&v| v == 3.0));
}

#[test]
fn parameters_are_read_without_asking_past_the_last() {
    common::standin::run(
        module_path!(),
        "parameters_are_read_without_asking_past_the_last",
        &[],
        &[],
        || {
            use crate::common::standin;
            cuda_core::Device::new(0).unwrap().set_current().unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k4 = code.get_kernel("k4").unwrap();
            assert_eq!(k4.params().unwrap().len(), 4);
            // The driver's count, then exactly four questions: none past the last (a failing
            // call compute-sanitizer would report).
            assert_eq!(standin::calls("cuKernelGetParamCount k4").len(), 1);
            let asked = standin::calls("cuKernelGetParamInfo k4");
            assert_eq!(asked.len(), 4, "{asked:?}");
            assert!(asked.iter().all(|l| !l.ends_with("index=4")), "{asked:?}");
        },
    );
    // A driver without cuKernelGetParamCount (the 13.0 driver), and an image that does not
    // say (this stand-in cubin has no .nv.info): the one way left is to ask until the driver
    // says "past the last".
    common::standin::run(
        module_path!(),
        "parameters_are_read_without_asking_past_the_last",
        &["STANDIN_NO_PARAM_COUNT"],
        &[],
        || {
            use crate::common::standin;
            cuda_core::Device::new(0).unwrap().set_current().unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            assert_eq!(code.get_kernel("k4").unwrap().params().unwrap().len(), 4);
            assert_eq!(standin::calls("cuKernelGetParamInfo k4").len(), 5);
        },
    );
}

#[test]
fn an_old_signature_in_a_ptx_comment_does_not_set_the_checked_count() {
    // A driver without cuKernelGetParamCount (the 13.0 driver) takes the count from the PTX:
    // a commented-out one-parameter `.entry k4` above the real four-parameter one must not
    // make a one-argument launch pass the count check.
    common::standin::run(
        module_path!(),
        "an_old_signature_in_a_ptx_comment_does_not_set_the_checked_count",
        &["STANDIN_NO_PARAM_COUNT"],
        &[],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(0).unwrap();
            device.set_current().unwrap();
            let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
                // old signature: .entry k4(.param .u64 x)\n\
                /* .entry k4(.param .u64 y) */\n\
                .visible .entry k4(\n.param .u64 a,\n.param .u64 b,\n.param .u64 c,\n\
                .param .u64 d\n)\n{\nret;\n}\n";
            let code = ObjectCode::from_ptx(ptx);
            let k4 = code.get_kernel("k4").unwrap();
            assert_eq!(k4.params().unwrap().len(), 4);
            // Exactly the four questions the real entry declares: none past the last.
            let asked = standin::calls("cuKernelGetParamInfo k4");
            assert_eq!(asked.len(), 4, "{asked:?}");
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: refused before the driver; the stand-in runs nothing anyway.
            let one = unsafe { launch(&stream, &config, &k4, &[&0u64]) };
            assert!(
                matches!(one, Err(Error::InvalidArgument { name: "args", .. })),
                "{one:?}"
            );
            assert!(standin::calls("cuLaunchKernel").is_empty());
        },
    );
}

#[test]
fn a_ptx_macro_cannot_hide_parameters_from_the_checked_count() {
    // Review W10. A driver without cuKernelGetParamCount (the 13.0 driver) takes the count
    // from the PTX, which the crate does not preprocess: a `#define` in the `.entry`'s list
    // hides three of k4's four parameters. The text's count must not be trusted; the driver
    // is asked until it answers "past the last", and a one-argument launch is refused.
    common::standin::run(
        module_path!(),
        "a_ptx_macro_cannot_hide_parameters_from_the_checked_count",
        &["STANDIN_NO_PARAM_COUNT"],
        &[],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(0).unwrap();
            device.set_current().unwrap();
            let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
                #define MORE .param .u64 b, .param .u64 c, .param .u64 d\n\
                .visible .entry k4(\n.param .u64 a, MORE\n)\n{\nret;\n}\n";
            let code = ObjectCode::from_ptx(ptx);
            let k4 = code.get_kernel("k4").unwrap();
            // Bug caught: the text's count (1) was taken as the kernel's.
            assert_eq!(k4.params().unwrap().len(), 4);
            // Four answers and the one "past the last": the driver's count, not the text's.
            let asked = standin::calls("cuKernelGetParamInfo k4");
            assert_eq!(asked.len(), 5, "{asked:?}");
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: refused before the driver; the stand-in runs nothing anyway.
            let one = unsafe { launch(&stream, &config, &k4, &[&0u64]) };
            // Bug caught: a one-argument launch of a four-parameter kernel reached the driver.
            assert!(
                matches!(one, Err(Error::InvalidArgument { name: "args", .. })),
                "{one:?}"
            );
            assert!(standin::calls("cuLaunchKernel").is_empty());
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_images_parameter_counts_are_the_drivers() {
    // Each kernel's parameters read with the count from its image, against the same kernel
    // wrapped by from_raw (no image: on a driver without cuKernelGetParamCount, the driver is
    // asked until it answers "past the last").
    for name in [
        "saxpy",
        "scale<float>",
        "cluster_rank",
        "grid_barrier",
        "sixteen",
    ] {
        let kernel = kernel(name);
        // SAFETY: the kernel's own handle; its library stays loaded by `kernel`.
        let raw = unsafe { Kernel::from_raw(kernel.as_raw()) }.unwrap();
        assert_eq!(kernel.params().unwrap(), raw.params().unwrap(), "{name}");
    }
    let sixteen = kernel("sixteen");
    assert_eq!(sixteen.params().unwrap().len(), 16);
    assert_eq!(sixteen.params().unwrap()[15].size, 8);
}

/// The name of a refused launch's invalid argument, or `None` when it was accepted.
fn refused(result: cuda_core::Result<()>) -> Option<&'static str> {
    match result {
        Ok(()) => None,
        Err(Error::InvalidArgument { name, .. }) => Some(name),
        Err(e) => panic!("not a refusal: {e}"),
    }
}

#[test]
fn every_launch_rule_holds_at_its_boundary() {
    // The stand-in's kernels allow 1024 threads (512 on device 1) and 48 KiB of dynamic shared
    // memory, two blocks per SM of 132; device 0 is compute capability 9.0, device 1 8.0.
    common::standin::run(
        module_path!(),
        "every_launch_rule_holds_at_its_boundary",
        &[],
        &[
            ("STANDIN_DEVICE1_CC", "8"),
            ("STANDIN_DEVICE1_THREADS", "512"),
        ],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k0 = code.get_kernel("k0").unwrap();
            let k1 = code.get_kernel("k1").unwrap();
            let try_launch = |config: LaunchConfig| {
                // SAFETY: the stand-in runs nothing.
                refused(unsafe { launch(&stream, &config, &k0, &[]) })
            };
            let plain = |grid: u32, block: [u32; 3]| LaunchConfig::new([grid, 1, 1], block);
            // Threads per block: the limit is allowed, one more is not, in any dimension.
            assert_eq!(try_launch(plain(1, [1024, 1, 1])), None);
            assert_eq!(try_launch(plain(1, [32, 32, 1])), None);
            assert_eq!(try_launch(plain(1, [1025, 1, 1])), Some("config.block"));
            assert_eq!(try_launch(plain(1, [32, 33, 1])), Some("config.block"));
            // Dynamic shared memory: the kernel's limit is allowed, one byte more is not.
            let shared = |bytes| plain(1, [32, 1, 1]).with_shared_memory(bytes);
            assert_eq!(try_launch(shared(48 * 1024)), None);
            assert_eq!(
                try_launch(shared(48 * 1024 + 1)),
                Some("config.shared_memory_bytes")
            );
            // Clusters: dividing the grid, with no zero dimension, on 9.0.
            let clustered =
                |grid: u32, cluster: [u32; 3]| plain(grid, [32, 1, 1]).with_cluster(cluster);
            standin::clear_log();
            assert_eq!(try_launch(clustered(4, [2, 1, 1])), None);
            assert!(
                standin::log().contains("cuLaunchKernelEx k0"),
                "{}",
                standin::log()
            );
            assert_eq!(try_launch(clustered(6, [3, 1, 1])), None);
            assert_eq!(try_launch(clustered(3, [2, 1, 1])), Some("config.cluster"));
            assert_eq!(try_launch(clustered(4, [0, 1, 1])), Some("config.cluster"));
            // Cooperative: at most what is resident at once (2 per SM times 132 SMs).
            let cooperative = |grid: u32| plain(grid, [32, 1, 1]).with_cooperative(true);
            assert_eq!(try_launch(cooperative(264)), None);
            assert_eq!(try_launch(cooperative(265)), Some("config.grid"));
            assert_eq!(
                try_launch(plain(265, [32, 1, 1])),
                None,
                "only cooperative launches are bound"
            );
            // The argument count.
            // SAFETY: refused before the driver.
            let err = unsafe { launch(&stream, &plain(1, [32, 1, 1]), &k1, &[]) };
            assert_eq!(refused(err), Some("args"));
            // Launch attributes: a priority in the device's range (0 to -5 here) is taken and
            // goes through cuLaunchKernelEx; one outside is refused, as is a scheduling policy
            // without a cluster.
            standin::clear_log();
            assert_eq!(try_launch(plain(1, [32, 1, 1]).with_priority(-5)), None);
            // CU_LAUNCH_ATTRIBUTE_PRIORITY is 8.
            assert!(
                standin::log().contains("cuLaunchKernelEx k0")
                    && standin::log().contains("attrs=8:-5"),
                "{}",
                standin::log()
            );
            assert_eq!(
                try_launch(plain(1, [32, 1, 1]).with_priority(0)),
                None,
                "the lowest priority"
            );
            assert_eq!(
                try_launch(plain(1, [32, 1, 1]).with_priority(-6)),
                Some("config.attributes.priority")
            );
            assert_eq!(
                try_launch(plain(1, [32, 1, 1]).with_priority(1)),
                Some("config.attributes.priority")
            );
            let spread = cuda_core::ClusterSchedulingPolicy::Spread;
            assert_eq!(
                try_launch(plain(1, [32, 1, 1]).with_cluster_scheduling_policy(spread)),
                Some("config.attributes.cluster_scheduling_policy")
            );
            assert_eq!(
                try_launch(clustered(4, [2, 1, 1]).with_cluster_scheduling_policy(spread)),
                None
            );
            // Every attribute at once, in order: cluster (4), programmatic serialization (6),
            // priority (8), memory sync domain (10, remote 1), scheduling policy (5, spread 1).
            standin::clear_log();
            let all = clustered(4, [2, 1, 1])
                .with_programmatic_serialization(true)
                .with_priority(-1)
                .with_memory_sync_domain(cuda_core::MemorySyncDomain::Remote)
                .with_cluster_scheduling_policy(spread);
            assert_eq!(try_launch(all), None);
            assert!(
                standin::log().contains("attrs=4:2.1.1,6:1,8:-1,10:1,5:1"),
                "{}",
                standin::log()
            );
            // A preferred cluster shape (11): a multiple of the cluster's, dividing the grid.
            let preferring = |grid: u32, preferred: [u32; 3]| {
                clustered(grid, [2, 1, 1]).with_preferred_cluster(preferred)
            };
            standin::clear_log();
            assert_eq!(try_launch(preferring(8, [4, 1, 1])), None);
            assert!(
                standin::log().contains("attrs=4:2.1.1,11:4.1.1"),
                "{}",
                standin::log()
            );
            let preferred = Some("config.attributes.preferred_cluster");
            assert_eq!(
                try_launch(preferring(8, [3, 1, 1])),
                preferred,
                "not a multiple"
            );
            assert_eq!(
                try_launch(preferring(6, [4, 1, 1])),
                preferred,
                "not dividing"
            );
            assert_eq!(try_launch(preferring(8, [4, 0, 1])), preferred, "a zero");
            assert_eq!(
                try_launch(plain(8, [32, 1, 1]).with_preferred_cluster([4, 1, 1])),
                preferred,
                "no regular cluster"
            );
            // An access-policy window (1): up to the device's largest window (128 MiB less
            // 4 KiB here), a hit ratio within 0 to 1, misses not persisting.
            use cuda_core::{AccessPolicyWindow, AccessProperty, DevicePtr};
            let largest = 134_213_632;
            let windowed =
                |window: AccessPolicyWindow| plain(1, [32, 1, 1]).with_access_policy_window(window);
            let window = AccessPolicyWindow::persisting(DevicePtr(0x10_0000), largest);
            standin::clear_log();
            assert_eq!(try_launch(windowed(window)), None);
            assert!(
                standin::log().contains(&format!("attrs=1:{largest}/100/2/1")),
                "{}",
                standin::log()
            );
            let half = AccessPolicyWindow {
                hit_ratio: 0.25,
                hit: AccessProperty::Normal,
                miss: AccessProperty::Normal,
                ..window
            };
            standin::clear_log();
            assert_eq!(try_launch(windowed(half)), None);
            assert!(
                standin::log().contains(&format!("attrs=1:{largest}/25/0/0")),
                "{}",
                standin::log()
            );
            let refused_window = Some("config.attributes.access_policy_window");
            for bad in [
                AccessPolicyWindow {
                    bytes: largest + 1,
                    ..window
                },
                AccessPolicyWindow { bytes: 0, ..window },
                AccessPolicyWindow {
                    hit_ratio: 1.01,
                    ..window
                },
                AccessPolicyWindow {
                    hit_ratio: -0.01,
                    ..window
                },
                AccessPolicyWindow {
                    hit_ratio: f32::NAN,
                    ..window
                },
                AccessPolicyWindow {
                    miss: AccessProperty::Persisting,
                    ..window
                },
            ] {
                assert_eq!(try_launch(windowed(bad)), refused_window, "{bad:?}");
            }
            // A programmatic event (7): recorded by the launch, at block start or not; an
            // event with timing is refused.
            let early = device
                .create_event(cuda_core::EventOptions::default())
                .unwrap();
            let record = |event: &cuda_core::Event, trigger| {
                // SAFETY: the stand-in runs nothing.
                refused(unsafe {
                    cuda_core::launch_recording(
                        &stream,
                        &plain(1, [32, 1, 1]),
                        &k0,
                        &[],
                        event,
                        trigger,
                    )
                })
            };
            // The stand-in's name of the event, from a plain record of it.
            standin::clear_log();
            stream.record(&early).unwrap();
            let event_name = standin::calls("cuEventRecord")
                .first()
                .and_then(|line| line.split_whitespace().nth(1).map(str::to_owned))
                .expect("a record of the event");
            standin::clear_log();
            assert_eq!(
                record(&early, cuda_core::EventTrigger::LaunchDependents),
                None
            );
            assert_eq!(record(&early, cuda_core::EventTrigger::BlockStart), None);
            let log = standin::log();
            assert!(
                log.contains(&format!("attrs=7:{event_name}/0"))
                    && log.contains(&format!("attrs=7:{event_name}/1")),
                "{log}"
            );
            let timed = device
                .create_event(cuda_core::EventOptions::timing())
                .unwrap();
            assert_eq!(
                record(&timed, cuda_core::EventTrigger::LaunchDependents),
                Some("event")
            );
            // Without attributes, the plain cuLaunchKernel.
            standin::clear_log();
            assert_eq!(try_launch(plain(1, [32, 1, 1])), None);
            assert!(
                standin::log().contains("cuLaunchKernel k0")
                    && !standin::log().contains("cuLaunchKernelEx"),
                "{}",
                standin::log()
            );
            // A device older than 9.0 has no clusters (its other launches are fine).
            let old = cuda_core::Device::new(1).unwrap();
            let old_stream = old.create_stream(StreamOptions::default()).unwrap();
            let old_k0 = code.get_kernel("k0").unwrap();
            let on_old = |config: LaunchConfig| {
                // SAFETY: the stand-in runs nothing.
                refused(unsafe { launch(&old_stream, &config, &old_k0, &[]) })
            };
            assert_eq!(on_old(plain(1, [32, 1, 1])), None);
            // The same kernel's thread limit is each device's own, however the launches
            // alternate (a limit kept for the last device must not answer for another).
            for _ in 0..2 {
                assert_eq!(on_old(plain(1, [512, 1, 1])), None);
                assert_eq!(on_old(plain(1, [513, 1, 1])), Some("config.block"));
                assert_eq!(try_launch(plain(1, [1024, 1, 1])), None);
                assert_eq!(try_launch(plain(1, [1025, 1, 1])), Some("config.block"));
            }
            assert_eq!(on_old(clustered(4, [2, 1, 1])), Some("config.cluster"));
            assert_eq!(
                on_old(plain(1, [32, 1, 1]).with_programmatic_serialization(true)),
                Some("config.attributes.programmatic_serialization")
            );
            // A programmatic event on a device older than 9.0, and one of another context.
            let old_event = old
                .create_event(cuda_core::EventOptions::default())
                .unwrap();
            // SAFETY: refused before the driver.
            let on_old_event = unsafe {
                cuda_core::launch_recording(
                    &old_stream,
                    &plain(1, [32, 1, 1]),
                    &old_k0,
                    &[],
                    &old_event,
                    cuda_core::EventTrigger::LaunchDependents,
                )
            };
            assert_eq!(refused(on_old_event), Some("event"));
            // SAFETY: refused before the driver.
            let elsewhere = unsafe {
                cuda_core::launch_recording(
                    &stream,
                    &plain(1, [32, 1, 1]),
                    &k0,
                    &[],
                    &old_event,
                    cuda_core::EventTrigger::LaunchDependents,
                )
            };
            assert_eq!(refused(elsewhere), Some("event"));
        },
    );
}

/// One kernel launched at once from two threads, each on its own device with its own thread
/// limit (1,024 on device 0, 512 on device 1): every launch is checked against its own
/// device's limit, whatever the other thread did last. Bug caught: a kernel's cached limit of
/// the last device launched on, kept as a device tag and a limit written apart, so that one
/// thread reads the other's limit under its own device's tag (device 1 then lets 513 to
/// 1,024 threads through, or device 0 refuses 513 to 1,024).
#[test]
fn two_threads_on_two_devices_each_get_their_devices_thread_limit() {
    common::standin::run(
        module_path!(),
        "two_threads_on_two_devices_each_get_their_devices_thread_limit",
        &[],
        &[("STANDIN_DEVICE1_THREADS", "512")],
        || {
            use crate::common::standin;
            let code = ObjectCode::from_cubin(standin::cubin());
            let kernel = code.get_kernel("k0").unwrap();
            let start = std::sync::Barrier::new(2);
            let run = |ordinal: usize, limit: u32| {
                let device = cuda_core::Device::new(ordinal).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                start.wait();
                let mut wrong = 0u32;
                for round in 0..20_000u32 {
                    // The limit, then one more, then a size between the two devices' limits.
                    let threads = [limit, limit + 1, 513 + round % 512][(round % 3) as usize];
                    let config = LaunchConfig::new([1, 1, 1], [threads, 1, 1]);
                    // SAFETY: the stand-in runs nothing.
                    let got = refused(unsafe { launch(&stream, &config, &kernel, &[]) });
                    let want = (threads > limit).then_some("config.block");
                    if got != want {
                        wrong += 1;
                    }
                }
                wrong
            };
            let (on_0, on_1) = std::thread::scope(|s| {
                let zero = s.spawn(|| run(0, 1024));
                let one = s.spawn(|| run(1, 512));
                (zero.join().unwrap(), one.join().unwrap())
            });
            assert_eq!(
                (on_0, on_1),
                (0, 0),
                "launches checked against the other device's thread limit (device 0, device 1)"
            );
        },
    );
}

/// Bytes of a `Buffer` value, for a parameter of exactly that size.
const BUFFER_BYTES: usize = std::mem::size_of::<cuda_core::Buffer>();

#[test]
fn a_buffer_is_its_device_pointer_whatever_the_parameters_size() {
    // Every parameter is as large as a Buffer value: a buffer argument is still its 8-byte
    // device pointer (refused), and a value of that size is its own bytes (taken).
    let size = BUFFER_BYTES.to_string();
    common::standin::run(
        module_path!(),
        "a_buffer_is_its_device_pointer_whatever_the_parameters_size",
        &[],
        &[("STANDIN_PARAM_SIZE", &size)],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: refused before the driver.
            let err = unsafe { launch(&stream, &config, &k1, &[&buffer]) };
            assert_eq!(
                refused(err),
                Some("args"),
                "a buffer was passed as its own bytes"
            );
            let value = [7u8; BUFFER_BYTES];
            // SAFETY: the stand-in runs nothing.
            unsafe { launch(&stream, &config, &k1, &[&value]) }.unwrap();
        },
    );
}

/// On a thread with no context current, a kernel's parameters are read in a primary context
/// the process already uses, not device 0's made for the question (review N15), and without a
/// failing `cuCtxGetDevice` (which compute-sanitizer reports). Bugs caught: `Kernel::params`
/// fell back to device 0 and retained its primary context; the current device was asked by a
/// call that fails when none is current.
#[test]
fn parameters_are_read_in_a_context_in_use_not_device_0s() {
    common::standin::run(
        module_path!(),
        "parameters_are_read_in_a_context_in_use_not_device_0s",
        &[],
        &[],
        || {
            use crate::common::standin;
            let device = cuda_core::Device::new(1).unwrap();
            let _stream = device.create_stream(StreamOptions::default()).unwrap();
            std::thread::spawn(|| {
                let code = ObjectCode::from_cubin(standin::cubin());
                let k4 = code.get_kernel("k4").unwrap();
                standin::clear_log();
                assert_eq!(k4.params().unwrap().len(), 4);
                let log = standin::log();
                assert!(!log.contains("cuDevicePrimaryCtxRetain device=0"), "{log}");
                assert!(!log.contains("cuCtxGetDevice -> 201"), "{log}");
                assert!(log.contains("cuCtxPushCurrent c1"), "{log}");
            })
            .join()
            .unwrap();
        },
    );
}

#[test]
fn a_missing_kernel_is_refused_before_the_driver_is_asked_for_it() {
    common::standin::run(
        module_path!(),
        "a_missing_kernel_is_refused_before_the_driver_is_asked_for_it",
        &[],
        &[],
        || {
            let code = ObjectCode::from_cubin(common::standin::cubin());
            common::standin::clear_log();
            let error = code.get_kernel("nope").unwrap_err();
            // Catches the refusal made by a failing cuLibraryGetKernel (what a sanitizer
            // reports as an API error) instead of the list.
            assert!(
                matches!(&error, Error::InvalidArgument { name: "name", reason }
                    if reason.contains("no kernel \"nope\"")),
                "{error}"
            );
            assert!(common::standin::calls("cuLibraryGetKernel ").is_empty());
            // The list is made once: a second miss and a hit ask no list again, and a hit
            // still takes the kernel (catches a list that refuses every name).
            code.get_kernel("also_missing").unwrap_err();
            code.get_kernel("k4").unwrap();
            assert_eq!(common::standin::calls("cuLibraryGetKernelCount").len(), 1);
            assert_eq!(code.kernel_names().unwrap().len(), 7);
        },
    );
}
