//! What options, attributes and arguments do on the GPU, observed in the kernel's results or
//! read back from the driver: a register cap, dynamic shared memory above 48 KiB, the
//! cooperative attribute, a kernel's own attributes, and launches past the inline argument
//! count, with arrays, structs and 2-D and 3-D grids. Each test has a control that fails when
//! the thing it names did not happen.

use crate::common;

use std::sync::OnceLock;

use cuda_core::{
    launch, Allocate, CodeType, DeviceRepr, Error, Kernel, KernelArg, LaunchConfig, ObjectCode,
    Program, ProgramOptions, StreamOptions,
};

const SOURCE: &str = r#"
extern "C" __global__ void shared_reverse(unsigned* out, unsigned words) {
    extern __shared__ unsigned s[];
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) s[i] = i * 3u + 1u;
    __syncthreads();
    for (unsigned i = threadIdx.x; i < words; i += blockDim.x) out[i] = s[words - 1u - i];
}

__constant__ float table[256];

extern "C" __global__ void attributes(float* out, int index) {
    __shared__ float tile[1024];
    float local[64];
    for (int i = 0; i < 64; ++i) local[i] = out[i] * 2.0f;
    tile[threadIdx.x] = table[index & 255] + local[index & 63];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) & 1023];
}

extern "C" __global__ void twenty(unsigned long long* out, unsigned a1, unsigned a2,
    unsigned a3, unsigned a4, unsigned a5, unsigned a6, unsigned a7, unsigned a8, unsigned a9,
    unsigned a10, unsigned a11, unsigned a12, unsigned a13, unsigned a14, unsigned a15,
    unsigned a16, unsigned a17, unsigned a18, unsigned long long a19) {
    unsigned long long v[19] = {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14,
                                a15, a16, a17, a18, a19};
    for (int i = 0; i < 19; ++i) out[i] = v[i];
}

struct Five { unsigned v[5]; };
extern "C" __global__ void array_arg(unsigned* out, Five five) {
    for (int i = 0; i < 5; ++i) out[i] = five.v[i];
}

struct Mixed { unsigned char a; double b; unsigned c; };
extern "C" __global__ void struct_arg(double* out, Mixed m) {
    out[0] = m.a;
    out[1] = m.b;
    out[2] = m.c;
}

extern "C" __global__ void coordinates(unsigned* out) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    unsigned w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
    out[(z * h + y) * w + x] = x | (y << 10) | (z << 20);
}
"#;

/// Many values live at once: with no cap the compiler keeps them in registers.
const REGISTERS: &str = r#"
extern "C" __global__ void registers(float* x, int n) {
    float a[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) a[i] = x[i * n + threadIdx.x];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += a[i] * a[63 - i] * a[(i * 7) & 63];
    x[threadIdx.x] = s;
}
"#;

fn code() -> &'static ObjectCode {
    static CODE: OnceLock<ObjectCode> = OnceLock::new();
    CODE.get_or_init(|| {
        common::device().set_current().unwrap();
        Program::new(SOURCE, ProgramOptions::default())
            .with_name("effects.cu")
            .compile(CodeType::Cubin, &[])
            .unwrap()
    })
}

fn kernel(name: &str) -> Kernel {
    code().get_kernel(name).unwrap()
}

/// `max_register_count` reaches the compiler: the kernel that uses more than 32 registers
/// without it uses at most 32 with it (read from the driver).
#[test]
#[ignore = "needs a CUDA GPU"]
fn max_register_count_caps_the_registers() {
    let device = common::device();
    device.set_current().unwrap();
    let registers = |options: ProgramOptions| {
        let code = Program::new(REGISTERS, options)
            .compile(CodeType::Cubin, &[])
            .unwrap();
        let kernel = code.get_kernel("registers").unwrap();
        kernel.attributes(device).unwrap().num_regs
    };
    let free = registers(ProgramOptions::default());
    let capped = registers(ProgramOptions::default().with_max_register_count(32));
    // The control: without the cap, more than 32, so that the cap has something to do.
    assert!(free > 32, "the kernel needs only {free} registers");
    assert!(capped <= 32, "capped at 32, it uses {capped}");
    println!("registers: {free} free, {capped} capped at 32");
}

/// Dynamic shared memory past the 48 KiB default: refused before the attribute is raised,
/// then launched, with every word of it written and read back by the kernel; the raised
/// attribute is the driver's (read through a fresh wrapper of the same kernel, which caches
/// nothing yet).
#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_shared_memory_above_48_kib_is_used_whole() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let most = device
        .properties()
        .max_shared_memory_per_block_optin()
        .unwrap();
    assert!(most > 48 * 1024, "{most} bytes of opt-in shared memory");
    let bytes = most / 4 * 4;
    let words = bytes / 4;
    let reverse = kernel("shared_reverse");
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(bytes as usize, &stream)
        .unwrap();
    let config = LaunchConfig::new([1, 1, 1], [256, 1, 1]).with_shared_memory(bytes);
    // SAFETY: refused before the driver.
    let err = unsafe { launch(&stream, &config, &reverse, &[&out, &words]) }.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidArgument {
                name: "config.shared_memory_bytes",
                ..
            }
        ),
        "{err}"
    );
    reverse
        .set_max_dynamic_shared_memory(device, bytes)
        .unwrap();
    // SAFETY: a fresh wrapper of a kernel whose library `code()` keeps loaded.
    let fresh = unsafe { Kernel::from_raw(reverse.as_raw()) }.unwrap();
    assert_eq!(
        fresh
            .attributes(device)
            .unwrap()
            .max_dynamic_shared_size_bytes,
        bytes,
        "the driver's attribute"
    );
    // SAFETY: `words` unsigneds in `out`, and as many in shared memory.
    unsafe { launch(&stream, &config, &reverse, &[&out, &words]) }.unwrap();
    let got = out.to_vec::<u32>(&stream).unwrap();
    let wrong = (0..words)
        .filter(|&i| got[i as usize] != (words - 1 - i) * 3 + 1)
        .count();
    assert_eq!(wrong, 0, "of {words} words of shared memory");
    println!("dynamic shared memory: {bytes} bytes used whole");
}

/// The cooperative attribute reaches the driver: the grid can tell (`grid.is_valid()` holds
/// only in a cooperative launch), and a grid-wide `grid.sync()` holds. The cooperative-groups
/// header comes with the CUDA toolkit, found by `with_toolkit_includes`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cooperative_launch_is_one_the_grid_can_tell() {
    let device = common::device();
    device.set_current().unwrap();
    let source = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void grid_kind(unsigned* out) {
    cg::grid_group grid = cg::this_grid();
    if (grid.thread_rank() == 0) out[0] = grid.is_valid() ? 1u : 2u;
}
extern "C" __global__ void grid_sync_count(unsigned* counter, unsigned* out) {
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0) atomicAdd(counter, 1u);
    grid.sync();
    if (threadIdx.x == 0) out[blockIdx.x] = atomicAdd(counter, 0u);
}
"#;
    // The toolkit's include folders and CCCL's (include/cccl in CUDA 13), found by the option.
    let compiled = Program::new(
        source,
        ProgramOptions::default().with_toolkit_includes(true),
    )
    .compile(CodeType::Cubin, &[]);
    let code = match compiled {
        Err(cuda_core::Error::InvalidArgument {
            name: "toolkit_includes",
            reason,
        }) => return common::not_run("cuda-headers", &reason),
        other => other.unwrap(),
    };
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let kind = code.get_kernel("grid_kind").unwrap();
    let mut out = memory.allocate(4, &stream).unwrap();
    let mut grid_kind = |cooperative: bool| {
        out.fill(0u32, &stream).unwrap();
        let config = LaunchConfig::new([4, 1, 1], [64, 1, 1]).with_cooperative(cooperative);
        // SAFETY: one unsigned written.
        unsafe { launch(&stream, &config, &kind, &[&out]) }.unwrap();
        out.to_vec::<u32>(&stream).unwrap()[0]
    };
    assert_eq!(grid_kind(false), 2, "a plain launch is not cooperative");
    assert_eq!(
        grid_kind(true),
        1,
        "the cooperative attribute did not arrive"
    );
    // A grid-wide barrier across every resident block.
    let _watchdog = common::Watchdog::new(
        std::time::Duration::from_secs(60),
        "a cooperative grid.sync()",
    );
    let sync = code.get_kernel("grid_sync_count").unwrap();
    let per_sm = sync.max_active_blocks_per_sm(device, 128, 0).unwrap();
    let blocks = per_sm * device.properties().multiprocessor_count().unwrap();
    let mut counter = memory.allocate(4, &stream).unwrap();
    counter.fill(0u32, &stream).unwrap();
    let arrivals = memory.allocate(4 * blocks as usize, &stream).unwrap();
    let config = LaunchConfig::new([blocks, 1, 1], [128, 1, 1]).with_cooperative(true);
    // SAFETY: one counter and one unsigned per block.
    unsafe { launch(&stream, &config, &sync, &[&counter, &arrivals]) }.unwrap();
    let seen = arrivals.to_vec::<u32>(&stream).unwrap();
    assert!(
        seen.iter().all(|&v| v == blocks),
        "{blocks} blocks: {seen:?}"
    );
}

/// A kernel's attributes are the ones it was built with: 4 KiB of static shared memory, 1 KiB
/// of constant memory, a dynamically indexed local array, the PTX version of its source, and
/// the device's architecture as its binary version.
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernel_attributes_are_the_ones_it_was_built_with() {
    let device = common::device();
    device.set_current().unwrap();
    // From PTX, so that the PTX version is the one in the text.
    let ptx = Program::new(SOURCE, ProgramOptions::default())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let text = String::from_utf8_lossy(ptx.code()).into_owned();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix(".version "))
        .unwrap();
    let (major, minor) = version.trim().split_once('.').unwrap();
    let expected_ptx: u32 = major.parse::<u32>().unwrap() * 10 + minor.parse::<u32>().unwrap();
    let (cc_major, cc_minor) = device.compute_capability().unwrap();
    for (what, code) in [("cubin", code()), ("ptx", &ptx)] {
        let attributes = code
            .get_kernel("attributes")
            .unwrap()
            .attributes(device)
            .unwrap();
        assert_eq!(attributes.shared_size_bytes, 4096, "{what}: {attributes:?}");
        assert_eq!(attributes.const_size_bytes, 1024, "{what}: {attributes:?}");
        assert!(
            attributes.local_size_bytes >= 256,
            "{what}: the local array is not in local memory: {attributes:?}"
        );
        assert_eq!(
            attributes.binary_version,
            cc_major * 10 + cc_minor,
            "{what}: {attributes:?}"
        );
        if what == "ptx" {
            assert_eq!(attributes.ptx_version, expected_ptx, "{attributes:?}");
        }
        // The other kernels of the same program have none of it.
        let plain = code
            .get_kernel("array_arg")
            .unwrap()
            .attributes(device)
            .unwrap();
        assert_eq!(
            (plain.shared_size_bytes, plain.local_size_bytes),
            (0, 0),
            "{what}: {plain:?}"
        );
        println!("{what}: {attributes:?}");
    }
}

/// A struct as the kernel's C++ `Mixed` lays it out: padding after `a`, 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Mixed {
    a: u8,
    b: f64,
    c: u32,
}

// SAFETY: `#[repr(C)]` plain data, laid out as `struct Mixed` in the kernel.
unsafe impl DeviceRepr for Mixed {}

/// Launches past the 16 arguments kept inline (the spilled path), an array argument, a user
/// struct with padding, and 2-D and 3-D grids: each result read back and checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn arguments_and_grids_of_every_shape_arrive_whole() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let one = LaunchConfig::new([1, 1, 1], [1, 1, 1]);
    // Twenty arguments, each with its own value, each read back in its place.
    let out = memory.allocate(8 * 19, &stream).unwrap();
    let small: Vec<u32> = (1..=18).map(|i| i * 1000 + 7).collect();
    let last = 0x1234_5678_9abc_def0u64;
    let mut args: Vec<&dyn KernelArg> = vec![&out];
    args.extend(small.iter().map(|v| v as &dyn KernelArg));
    args.push(&last);
    assert_eq!(args.len(), 20);
    // SAFETY: 19 u64 written to a buffer of 19.
    unsafe { launch(&stream, &one, &kernel("twenty"), &args) }.unwrap();
    let mut expected: Vec<u64> = small.iter().map(|&v| u64::from(v)).collect();
    expected.push(last);
    assert_eq!(out.to_vec::<u64>(&stream).unwrap(), expected);
    // An array, as the kernel's struct of one array.
    let five = [11u32, 22, 33, 44, 55];
    let out = memory.allocate(4 * 5, &stream).unwrap();
    // SAFETY: five unsigned written.
    unsafe { launch(&stream, &one, &kernel("array_arg"), &[&out, &five]) }.unwrap();
    assert_eq!(out.to_vec::<u32>(&stream).unwrap(), five);
    // A struct with padding.
    let mixed = Mixed {
        a: 200,
        b: -2.5,
        c: 4_000_000_000,
    };
    let out = memory.allocate(8 * 3, &stream).unwrap();
    // SAFETY: three doubles written.
    unsafe { launch(&stream, &one, &kernel("struct_arg"), &[&out, &mixed]) }.unwrap();
    assert_eq!(
        out.to_vec::<f64>(&stream).unwrap(),
        [200.0, -2.5, 4_000_000_000.0],
        "{mixed:?}"
    );
    // A struct of the wrong size is refused before the driver.
    // SAFETY: refused before the launch.
    let err = unsafe { launch(&stream, &one, &kernel("struct_arg"), &[&out, &five]) }.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "args", reason } if reason.contains("argument 1")),
        "{err}"
    );
    // 2-D and 3-D grids of 2-D and 3-D blocks, every extent different: each thread writes its
    // coordinates where its linear index says.
    let coordinates = kernel("coordinates");
    for (grid, block) in [([5, 3, 1], [8, 4, 1]), ([3, 2, 2], [4, 3, 5])] {
        let [w, h, d] = [0, 1, 2].map(|i| grid[i] * block[i]);
        let n = (w * h * d) as usize;
        let mut out = memory.allocate(4 * n, &stream).unwrap();
        out.fill(u32::MAX, &stream).unwrap();
        let config = LaunchConfig::new(grid, block);
        // SAFETY: one unsigned per thread of the grid.
        unsafe { launch(&stream, &config, &coordinates, &[&out]) }.unwrap();
        let got = out.to_vec::<u32>(&stream).unwrap();
        let mut wrong = 0;
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    let at = ((z * h + y) * w + x) as usize;
                    wrong += usize::from(got[at] != x | (y << 10) | (z << 20));
                }
            }
        }
        assert_eq!(wrong, 0, "grid {grid:?}, block {block:?}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kernel_attribute_reads_and_the_settable_ones_read_back() {
    use cuda_core::{ClusterSchedulingPolicy, KernelAttribute as A};
    let device = common::device();
    device.set_current().unwrap();
    // A code of its own: attributes set here stay set on its kernel.
    let code = Program::new(
        "extern \"C\" __global__ void plain(unsigned* out) { out[blockIdx.x] = blockIdx.x; }",
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let kernel = code.get_kernel("plain").unwrap();
    let read = |a| kernel.attribute(device, a).unwrap();
    let all: Vec<(A, i32)> = A::ALL.iter().map(|&a| (a, read(a))).collect();
    println!("{all:?}");
    assert_eq!(read(A::MaxThreadsPerBlock), 1024);
    assert_eq!(read(A::RequiredClusterWidth), 0, "none required yet");
    // Each settable attribute reads back what was set.
    kernel
        .set_preferred_shared_memory_carveout(device, Some(50))
        .unwrap();
    assert_eq!(read(A::PreferredSharedMemoryCarveout), 50);
    kernel
        .set_preferred_shared_memory_carveout(device, None)
        .unwrap();
    assert_eq!(read(A::PreferredSharedMemoryCarveout), -1);
    kernel
        .set_non_portable_cluster_size_allowed(device, true)
        .unwrap();
    assert_eq!(read(A::NonPortableClusterSizeAllowed), 1);
    kernel
        .set_non_portable_cluster_size_allowed(device, false)
        .unwrap();
    assert_eq!(read(A::NonPortableClusterSizeAllowed), 0);
    for (policy, value) in [
        (ClusterSchedulingPolicy::Spread, 1),
        (ClusterSchedulingPolicy::LoadBalancing, 2),
        (ClusterSchedulingPolicy::Default, 0),
    ] {
        kernel
            .set_cluster_scheduling_policy(device, policy)
            .unwrap();
        assert_eq!(
            read(A::ClusterSchedulingPolicyPreference),
            value,
            "{policy:?}"
        );
    }
    kernel
        .set_max_dynamic_shared_memory(device, 64 << 10)
        .unwrap();
    assert_eq!(read(A::MaxDynamicSharedSizeBytes), 64 << 10);
    // Occupancy: the shared memory a block may have, fewer blocks per SM giving each more.
    let one = kernel
        .available_dynamic_shared_memory(device, 1, 128)
        .unwrap();
    let four = kernel
        .available_dynamic_shared_memory(device, 4, 128)
        .unwrap();
    println!("dynamic shared memory per block: {one} bytes at 1 block/SM, {four} at 4");
    assert!(one > 48 << 10 && four < one, "{one} {four}");
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let config = LaunchConfig::new([16, 1, 1], [128, 1, 1]);
    let portable = kernel.max_potential_cluster_size(&config, &stream).unwrap();
    kernel
        .set_non_portable_cluster_size_allowed(device, true)
        .unwrap();
    let non_portable = kernel.max_potential_cluster_size(&config, &stream).unwrap();
    println!("largest cluster: {portable} portable, {non_portable} non-portable");
    assert_eq!(portable, 8);
    assert!(non_portable > portable, "{non_portable}");
    // A required cluster shape, and a launch that uses it.
    kernel
        .set_required_cluster_shape(device, [2, 1, 1])
        .unwrap();
    assert_eq!(
        [
            A::RequiredClusterWidth,
            A::RequiredClusterHeight,
            A::RequiredClusterDepth
        ]
        .map(read),
        [2, 1, 1]
    );
    let mut out = device
        .memory_resource()
        .unwrap()
        .allocate(16 * 4, &stream)
        .unwrap();
    out.fill(0u32, &stream).unwrap();
    // SAFETY: 16 u32s in out, one per block.
    unsafe { launch(&stream, &config.with_cluster([2, 1, 1]), &kernel, &[&out]) }.unwrap();
    assert_eq!(
        out.to_vec::<u32>(&stream).unwrap(),
        (0..16).collect::<Vec<u32>>()
    );
    // Values out of range are refused before the driver, naming the rule.
    let err = kernel
        .set_preferred_shared_memory_carveout(device, Some(101))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidArgument {
                name: "percent",
                ..
            }
        ),
        "{err}"
    );
    let err = kernel
        .set_required_cluster_shape(device, [0, 1, 1])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "shape", .. }),
        "{err}"
    );
}

const PDL: &str = r#"
__device__ unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// stamps: [0] the first kernel's end (latest block), [1] the second's start (earliest block).
extern "C" __global__ void first(unsigned long long* stamps, unsigned* data, unsigned n) {
    unsigned long long start = now();
    asm volatile("griddepcontrol.launch_dependents;");
    while (now() - start < 2000000ull) {}  // 2 ms of work
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2u * i + 1u;
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&stamps[0], now());
}

// The same work without the trigger: its dependents may start only once it has ended.
extern "C" __global__ void hold(unsigned long long* stamps, unsigned* data, unsigned n) {
    unsigned long long start = now();
    while (now() - start < 2000000ull) {}
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2u * i + 1u;
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&stamps[0], now());
}

extern "C" __global__ void second(unsigned long long* stamps, const unsigned* data,
                                  unsigned* out, unsigned n) {
    if (threadIdx.x == 0) atomicMin(&stamps[1], now());
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1u;
}
"#;

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_programmatic_dependent_launch_starts_before_the_first_kernel_ends() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(PDL, ProgramOptions::default().with_arch("90"))
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let (first, second) = (
        code.get_kernel("first").unwrap(),
        code.get_kernel("second").unwrap(),
    );
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let resource = device.memory_resource().unwrap();
    let n = 4096u32;
    let data = resource.allocate(4 * n as usize, &stream).unwrap();
    let mut out = resource.allocate(4 * n as usize, &stream).unwrap();
    let mut stamps = resource.allocate(16, &stream).unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    // (second's start - first's end) in ns: negative when they overlapped.
    let mut run = |pdl: bool| -> i64 {
        stamps.copy_from_host(&[0u64, u64::MAX], &stream).unwrap();
        out.fill(0u32, &stream).unwrap();
        // SAFETY: n u32s in data and out, two u64s in stamps.
        unsafe {
            launch(&stream, &config, &first, &[&stamps, &data, &n]).unwrap();
            launch(
                &stream,
                &config.with_programmatic_serialization(pdl),
                &second,
                &[&stamps, &data, &out, &n],
            )
            .unwrap();
        }
        let got = out.to_vec::<u32>(&stream).unwrap();
        assert!(
            got.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 2),
            "the second kernel read the first's output too early (pdl {pdl})"
        );
        let [end, start] = <[u64; 2]>::try_from(stamps.to_vec::<u64>(&stream).unwrap()).unwrap();
        start as i64 - end as i64
    };
    // The control: without the attribute the second starts after the first ends.
    let plain: Vec<i64> = (0..3).map(|_| run(false)).collect();
    // The driver allows the overlap but does not promise it each time: with the other tests'
    // kernels on the GPU, the second may find no room until the first ends (one run of three
    // started 6 us after, another 19 ms after). Up to 12 runs, until two have overlapped.
    // compute-sanitizer runs launches one after another, so no overlap can show under it: three
    // runs there, whose results are still checked.
    let sanitizer = common::standin::under_sanitizer();
    let tries = if sanitizer.is_some() { 3 } else { 12 };
    // Overlapped: the second started more than half the first kernel's 2 ms before it ended.
    let overlaps = |runs: &[i64]| runs.iter().filter(|&&d| d < -1_000_000).count();
    let mut pdl: Vec<i64> = Vec::new();
    while pdl.len() < tries && overlaps(&pdl) < 2 {
        pdl.push(run(true));
    }
    println!("second start - first end, ns: plain {plain:?}, programmatic {pdl:?}");
    assert!(plain.iter().all(|&d| d >= 0), "{plain:?}");
    if let Some(sign) = sanitizer {
        common::not_run(
            "pdl-overlap",
            &format!("the overlap, under compute-sanitizer ({sign})"),
        );
        return;
    }
    // Two runs overlapped, which the control never does: a launch that dropped the attribute
    // fails all 12.
    assert!(overlaps(&pdl) >= 2, "{pdl:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_programmatic_event_is_recorded_by_the_launch_and_orders_another_stream() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(PDL, ProgramOptions::default().with_arch("90"))
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = |name| code.get_kernel(name).unwrap();
    let (first, hold, second) = (kernel("first"), kernel("hold"), kernel("second"));
    let (a, b) = (
        device.create_stream(StreamOptions::default()).unwrap(),
        device.create_stream(StreamOptions::default()).unwrap(),
    );
    let resource = device.memory_resource().unwrap();
    let n = 4096u32;
    let mut data = resource.allocate(4 * n as usize, &a).unwrap();
    let mut out = resource.allocate(4 * n as usize, &a).unwrap();
    let mut stamps = resource.allocate(16, &a).unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    // Raw addresses: buffers passed as such would order the two streams on each other, which
    // is what the event is to do here. They stay allocated until the end of the test.
    let (stamps_at, data_at, out_at) = (stamps.ptr(), data.ptr(), out.ptr());
    // Runs `producer` on `a` (recording `event` through the launch when `trigger` is given),
    // then `second` on `b` after `b` waits for `event`: (second's start - producer's end in
    // ns, whether `second` read the producer's output).
    let mut run = |producer: &Kernel,
                   event: &cuda_core::Event,
                   trigger: Option<cuda_core::EventTrigger>|
     -> (i64, bool) {
        stamps.copy_from_host(&[0u64, u64::MAX], &a).unwrap();
        data.fill(0u32, &a).unwrap();
        out.fill(0u32, &a).unwrap();
        a.sync().unwrap();
        // SAFETY: n u32s at data and out, two u64s at stamps, all alive until the syncs below.
        unsafe {
            let args: [&dyn KernelArg; 3] = [&stamps_at, &data_at, &n];
            match trigger {
                Some(trigger) => {
                    cuda_core::launch_recording(&a, &config, producer, &args, event, trigger)
                        .unwrap()
                }
                None => launch(&a, &config, producer, &args).unwrap(),
            }
            b.wait(event).unwrap();
            launch(&b, &config, &second, &[&stamps_at, &data_at, &out_at, &n]).unwrap();
        }
        b.sync().unwrap();
        a.sync().unwrap();
        let got = out.to_vec::<u32>(&a).unwrap();
        let right = got.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 2);
        let [end, start] = <[u64; 2]>::try_from(stamps.to_vec::<u64>(&a).unwrap()).unwrap();
        (start as i64 - end as i64, right)
    };
    let event = || {
        device
            .create_event(cuda_core::EventOptions::default())
            .unwrap()
    };
    // Each kernel run once first: a kernel's first launch in a context loads it (lazy
    // loading), which waited for the running kernel on the H200 and would hide any overlap.
    run(&first, &event(), None);
    run(&hold, &event(), None);
    // The control: waiting for an event nothing recorded holds nothing, so `second` starts
    // during the producer and reads zeros. This is what a launch that dropped the event gives.
    let (early, right) = run(&hold, &event(), None);
    if early >= -1_000_000 || right {
        // Seen once under the 12 ABI on the H200 (the second stream started 8 µs after the
        // producer ended): the two streams did not overlap, so nothing here can show an early
        // start, whichever event is waited for.
        common::not_run(
            "stream-overlap",
            &format!(
                "the control's two streams did not overlap ({early} ns, read right: {right}),                  so the programmatic event's early start cannot be seen"
            ),
        );
        return;
    }
    // Recorded by the launch of a producer that never triggers: the event fires when the
    // producer ends, so `second` starts after it and reads its output.
    // Twice: the same event, recorded again by the next launch.
    let recorded = event();
    for _ in 0..2 {
        let (after, right) = run(
            &hold,
            &recorded,
            Some(cuda_core::EventTrigger::LaunchDependents),
        );
        assert!(after >= 0 && right, "{after} ns, right {right}");
        // The host sees it complete once the kernel is done.
        recorded.sync().unwrap();
        assert!(recorded.is_done().unwrap());
    }
    // A producer that triggers at once, and triggers at block start: the driver may fire the
    // event early (it allows, not guarantees, overlap); what it did is reported.
    let mut seen = Vec::new();
    for (producer, trigger) in [
        (&first, cuda_core::EventTrigger::LaunchDependents),
        (&hold, cuda_core::EventTrigger::BlockStart),
    ] {
        let (delta, right) = run(producer, &event(), Some(trigger));
        println!("programmatic event, {trigger:?}: second start - first end {delta} ns, read right: {right}");
        seen.push(delta);
    }
    if seen.iter().all(|&d| d >= 0) {
        common::not_run(
            "programmatic-event-overlap",
            "the driver fired every programmatic event when its kernel ended, so no early start \
             of the other stream was seen",
        );
    }
}

const CLUSTERS: &str = r#"
// Per block: the number of blocks in its cluster and its cluster's linear index.
extern "C" __global__ void cluster_shape(unsigned* sizes, unsigned* ids, float* y,
                                         const float* x, unsigned n) {
    unsigned size, id;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(id));
    if (threadIdx.x == 0) { sizes[blockIdx.x] = size; ids[blockIdx.x] = id; }
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
}
"#;

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_preferred_cluster_shape_and_an_access_policy_window_reach_the_launch() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(CLUSTERS, ProgramOptions::default().with_arch("90"))
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = code.get_kernel("cluster_shape").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let resource = device.memory_resource().unwrap();
    let blocks = 64u32;
    let n = blocks * 128;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut xs = resource.allocate(4 * n as usize, &stream).unwrap();
    xs.copy_from_host(&x, &stream).unwrap();
    let mut ys = resource.allocate(4 * n as usize, &stream).unwrap();
    let mut sizes = resource.allocate(4 * blocks as usize, &stream).unwrap();
    let ids = resource.allocate(4 * blocks as usize, &stream).unwrap();
    let base = LaunchConfig::new([blocks, 1, 1], [128, 1, 1]).with_cluster([2, 1, 1]);
    let mut run = |config: LaunchConfig| -> cuda_core::Result<Vec<u32>> {
        sizes.fill(0u32, &stream)?;
        ys.fill(0u32, &stream)?;
        // SAFETY: `blocks` u32s in sizes and ids, n floats in xs and ys.
        unsafe { launch(&stream, &config, &kernel, &[&sizes, &ids, &ys, &xs, &n]) }?;
        let y = ys.to_vec::<f32>(&stream)?;
        assert!(
            y.iter().zip(&x).all(|(y, x)| *y == 3.0 * x),
            "wrong results under {config:?}"
        );
        sizes.to_vec::<u32>(&stream)
    };
    // The control: the regular shape alone gives clusters of 2.
    let regular = run(base).unwrap();
    assert!(regular.iter().all(|&s| s == 2), "{regular:?}");
    match run(base.with_preferred_cluster([4, 1, 1])) {
        Ok(preferred) => {
            let fours = preferred.iter().filter(|&&s| s == 4).count();
            println!(
                "preferred cluster 4 over regular 2, 64 blocks: {fours} blocks in clusters of 4, \
                 {} in clusters of 2",
                preferred.iter().filter(|&&s| s == 2).count()
            );
            // Every block is in a regular or a preferred cluster, nothing else.
            assert!(preferred.iter().all(|&s| s == 2 || s == 4), "{preferred:?}");
            let (major, _) = device.compute_capability().unwrap();
            if fours == 0 {
                common::not_run(
                    "preferred-cluster",
                    &format!(
                        "the driver took the preferred cluster shape but grouped no block by it \
                         on compute capability {major}.x"
                    ),
                );
            }
        }
        Err(e) => common::not_run(
            "preferred-cluster",
            &format!("the driver refused a preferred cluster shape on this device: {e}"),
        ),
    }
    // An access-policy window over the input, persisting: taken by the driver, results right.
    let window = cuda_core::AccessPolicyWindow::persisting(xs.ptr(), xs.size());
    let windowed = run(base.with_access_policy_window(window)).unwrap();
    assert!(windowed.iter().all(|&s| s == 2), "{windowed:?}");
    // A window past the device's largest is refused before the driver, naming the limit.
    let largest = device.properties().max_access_policy_window_size().unwrap();
    println!("largest access-policy window: {largest} bytes");
    let too_big = cuda_core::AccessPolicyWindow::persisting(xs.ptr(), largest as usize + 1);
    // SAFETY: refused before the driver.
    let err = unsafe {
        launch(
            &stream,
            &base.with_access_policy_window(too_big),
            &kernel,
            &[&sizes, &ids, &ys, &xs, &n],
        )
    }
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "config.attributes.access_policy_window", reason } if reason.contains(&largest.to_string())),
        "{err}"
    );
}
