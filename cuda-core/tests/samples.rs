//! Ports of NVIDIA's cuda-samples, written as a user of this crate would write them: each test
//! follows one sample's pattern, sizes and check against a CPU reference, in this project's
//! own code (none of the samples' code is copied). They are the proof of issue 30's item 10:
//! real CUDA programs without raw pointers, hand-parsed files, polling loops or `unsafe`
//! beyond what the API makes unsafe (`launch`, `add_kernel`, `begin_capture`).
//!
//! | port (test) | sample | `unsafe` beyond launches | raw pointers |
//! | --- | --- | --- | --- |
//! | [`simple_streams`] | `simpleStreams` | 0 | 0 |
//! | [`simple_callback`] | `simpleCallback` | 0 | 0 |
//! | [`simple_templates`] | `simpleTemplates` | 0 | 0 |
//! | [`cdp_simple_quicksort`] | `cdpSimpleQuicksort` | 0 | 0 |
//! | [`graph_memory_nodes`] | `graphMemoryNodes` | 0 | 0 |
//! | [`jacobi_cuda_graphs`] | `jacobiCudaGraphs` | 0 | 0 |
//! | [`wmma_tensor_core_gemm`] | `cudaTensorCoreGemm` (its simple WMMA kernel) | 0 | 0 |
//! | [`simple_cubemap_texture`] | `simpleCubemapTexture` | 0 | 0 |
//! | [`binary_partition_cg`] | `binaryPartitionCG` | 0 | 0 |
//!
//! What the API lacked, where a port needed it (each is written down in its test too):
//!
//! - The WMMA and cooperative-groups kernels need the toolkit's headers (`<mma.h>`,
//!   `<cooperative_groups.h>` and, for CUDA 13, its `include/cccl`), which NVRTC does not have
//!   built in: `ProgramOptions::with_toolkit_includes` finds them (a toolkit, or the
//!   `nvidia-cuda-runtime`, `nvidia-cuda-crt` and `nvidia-cuda-cccl` wheels).
//!
//! Every kernel of the module compiles on any machine with NVRTC
//! ([`every_sample_kernel_compiles_for_sm_90`]), so a kernel that would fail only on the GPU
//! machine fails here first.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use cuda_core::memory::PinnedMemoryResource;
use cuda_core::texture::{AddressMode, Array, ArrayFormat, ArrayOptions, Texture, TextureOptions};
use cuda_core::{
    launch, Allocate, BuildGraph, CaptureMode, CodeType, Device, EventOptions, Graph, GraphOptions,
    LaunchConfig, Linker, LinkerOptions, ObjectCode, Program, ProgramOptions,
};

/// One kernel source of the module and how it is compiled.
struct Source {
    /// The sample it belongs to.
    sample: &'static str,
    text: &'static str,
    /// The toolkit headers it includes, if any (one of them, to find the directory by).
    header: Option<&'static str>,
    /// Relocatable device code, linked with the device runtime.
    device_runtime: bool,
    /// Name expressions of its template kernels.
    expressions: &'static [&'static str],
}

const SIMPLE_STREAMS: Source = Source {
    sample: "simpleStreams",
    text: r#"
// Each thread writes `*factor` to its element after `iterations` rounds of busy work, so the
// streams' kernels take long enough to overlap the other streams' copies.
extern "C" __global__ void init_array(int* data, const int* factor, unsigned n, int iterations) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int value = 0;
    for (int round = 0; round < iterations; ++round) value += *factor;
    data[i] = value / iterations;
}
"#,
    header: None,
    device_runtime: false,
    expressions: &[],
};

const SIMPLE_CALLBACK: Source = Source {
    sample: "simpleCallback",
    text: r#"
extern "C" __global__ void increment(int* data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += 1;
}
"#,
    header: None,
    device_runtime: false,
    expressions: &[],
};

const SIMPLE_TEMPLATES: Source = Source {
    sample: "simpleTemplates",
    text: r#"
// Dynamic shared memory of the kernel's element type: `extern __shared__ T s[]` cannot be
// declared once per instantiation with one name, so each type gets its own.
template <typename T> struct shared_memory;
template <> struct shared_memory<float> {
    __device__ float* get() { extern __shared__ float shared_floats[]; return shared_floats; }
};
template <> struct shared_memory<int> {
    __device__ int* get() { extern __shared__ int shared_ints[]; return shared_ints; }
};

// Every thread stages its input in shared memory, then writes it times the block's size.
template <typename T> __global__ void scale_by_threads(const T* in, T* out) {
    T* staged = shared_memory<T>().get();
    unsigned t = threadIdx.x;
    staged[t] = in[t];
    __syncthreads();
    staged[t] = (T)blockDim.x * staged[t];
    __syncthreads();
    out[t] = staged[t];
}
"#,
    header: None,
    device_runtime: false,
    expressions: &["scale_by_threads<float>", "scale_by_threads<int>"],
};

const CDP_QUICKSORT: Source = Source {
    sample: "cdpSimpleQuicksort",
    text: r#"
#define MAX_DEPTH 16
#define SELECTION_SORT 32

__device__ void selection_sort(unsigned* data, int left, int right) {
    for (int i = left; i <= right; ++i) {
        unsigned least = data[i];
        int at = i;
        for (int j = i + 1; j <= right; ++j) {
            if (data[j] < least) { least = data[j]; at = j; }
        }
        data[at] = data[i];
        data[i] = least;
    }
}

// One thread partitions [left, right] around its middle element, then launches a child grid
// for each side that is not empty, each in a stream of its own so that they may run together.
extern "C" __global__ void quicksort(unsigned* data, int left, int right, int depth) {
    if (depth >= MAX_DEPTH || right - left <= SELECTION_SORT) {
        selection_sort(data, left, right);
        return;
    }
    unsigned pivot = data[left + (right - left) / 2];
    int l = left, r = right;
    while (l <= r) {
        while (data[l] < pivot) ++l;
        while (data[r] > pivot) --r;
        if (l <= r) {
            unsigned t = data[l]; data[l] = data[r]; data[r] = t;
            ++l; --r;
        }
    }
    if (left < r) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(data, left, r, depth + 1);
        cudaStreamDestroy(s);
    }
    if (l < right) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(data, l, right, depth + 1);
        cudaStreamDestroy(s);
    }
}
"#,
    header: None,
    device_runtime: true,
    expressions: &[],
};

const GRAPH_MEMORY_NODES: Source = Source {
    sample: "graphMemoryNodes",
    text: r#"
extern "C" __global__ void square_into(float* scratch, const float* a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) scratch[i] = a[i] * a[i];
}
extern "C" __global__ void add_into(float* out, const float* scratch, const float* b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scratch[i] + b[i];
}
"#,
    header: None,
    device_runtime: false,
    expressions: &[],
};

const JACOBI: Source = Source {
    sample: "jacobiCudaGraphs",
    text: r#"
// One block per row: x_new[row] = (b[row] - sum_{j != row} A[row][j] * x[j]) / A[row][row],
// and |x_new[row] - x[row]| added to *sum.
extern "C" __global__ void jacobi_step(const float* a, const double* b, const double* x,
                                       double* x_new, double* sum, int n) {
    __shared__ double partial[256];
    int row = blockIdx.x;
    double acc = 0.0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        if (j != row) acc += (double)a[row * n + j] * x[j];
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double next = (b[row] - partial[0]) / (double)a[row * n + row];
        x_new[row] = next;
        atomicAdd(sum, fabs(next - x[row]));
    }
}
"#,
    header: None,
    device_runtime: false,
    expressions: &[],
};

const WMMA_GEMM: Source = Source {
    sample: "cudaTensorCoreGemm",
    text: r#"
#include <mma.h>
using namespace nvcuda;

// D = alpha * A * B + beta * C: A is m x k row-major half, B is k x n column-major half, C and
// D are m x n row-major float. Each warp computes one 16 x 16 tile of D, accumulating in float.
extern "C" __global__ void wmma_gemm(const __half* a, const __half* b, const float* c, float* d,
                                     int m, int n, int k, float alpha, float beta) {
    int tile_row = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int tile_col = blockIdx.y * blockDim.y + threadIdx.y;
    int row = tile_row * 16, col = tile_col * 16;
    if (row >= m || col >= n) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_tile;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_tile;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c_tile;
    wmma::fill_fragment(acc, 0.0f);
    for (int i = 0; i < k; i += 16) {
        wmma::load_matrix_sync(a_tile, a + row * k + i, k);
        wmma::load_matrix_sync(b_tile, b + col * k + i, k);
        wmma::mma_sync(acc, a_tile, b_tile, acc);
    }
    wmma::load_matrix_sync(c_tile, c + row * n + col, n, wmma::mem_row_major);
    for (int e = 0; e < c_tile.num_elements; ++e) {
        c_tile.x[e] = alpha * acc.x[e] + beta * c_tile.x[e];
    }
    wmma::store_matrix_sync(d + row * n + col, c_tile, n, wmma::mem_row_major);
}
"#,
    header: Some("mma.h"),
    device_runtime: false,
    expressions: &[],
};

const CUBEMAP: Source = Source {
    sample: "simpleCubemapTexture",
    text: r#"
// Thread (x, y) of block z reads texel (x, y) of face z through the cube's direction for it
// (the CUDA programming guide's table of cubemap faces) and writes its negation.
extern "C" __global__ void negate_faces(cudaTextureObject_t cube, float* out, unsigned width) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned face = blockIdx.z;
    if (x >= width || y >= width) return;
    float u = ((x + 0.5f) / (float)width) * 2.0f - 1.0f;
    float v = ((y + 0.5f) / (float)width) * 2.0f - 1.0f;
    float cx, cy, cz;
    switch (face) {
        case 0: cx = 1.0f;  cy = -v;    cz = -u;    break;
        case 1: cx = -1.0f; cy = -v;    cz = u;     break;
        case 2: cx = u;     cy = 1.0f;  cz = v;     break;
        case 3: cx = u;     cy = -1.0f; cz = -v;    break;
        case 4: cx = u;     cy = -v;    cz = 1.0f;  break;
        default: cx = -u;   cy = -v;    cz = -1.0f; break;
    }
    out[(face * width + y) * width + x] = -texCubemap<float>(cube, cx, cy, cz);
}
"#,
    header: None,
    device_runtime: false,
    expressions: &[],
};

const BINARY_PARTITION: Source = Source {
    sample: "binaryPartitionCG",
    text: r#"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// Each warp splits into the threads holding odd values and those holding even ones; each part
// sums its values and counts itself, and its first thread adds that to the totals:
// sums[0] the odd values', sums[1] the even ones', *odd_count the odd values.
extern "C" __global__ void odd_even_count_and_sum(const int* values, int* odd_count, int* sums,
                                                  unsigned n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    unsigned stride = gridDim.x * blockDim.x;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int value = values[i];
        bool odd = value & 1;
        cg::coalesced_group part = cg::binary_partition(warp, odd);
        int sum = cg::reduce(part, value, cg::plus<int>());
        if (part.thread_rank() == 0) {
            if (odd) atomicAdd(odd_count, (int)part.num_threads());
            atomicAdd(&sums[odd ? 0 : 1], sum);
        }
    }
}
"#,
    header: Some("cooperative_groups.h"),
    device_runtime: false,
    expressions: &[],
};

/// Every kernel source of the module.
const SOURCES: [&Source; 9] = [
    &SIMPLE_STREAMS,
    &SIMPLE_CALLBACK,
    &SIMPLE_TEMPLATES,
    &CDP_QUICKSORT,
    &GRAPH_MEMORY_NODES,
    &JACOBI,
    &WMMA_GEMM,
    &CUBEMAP,
    &BINARY_PARTITION,
];

/// `source` compiled with `base` (and its headers' include paths), linked with the device
/// runtime where it launches kernels; `None`, said as not run, where the headers or the device
/// runtime are missing here.
fn build(source: &Source, base: ProgramOptions) -> Option<ObjectCode> {
    let mut options = base;
    if source.header.is_some() {
        // The toolkit's include folders (and CCCL's), found as NVRTC is found.
        options = options.with_toolkit_includes(true);
    }
    if source.device_runtime {
        if let Err(e) = ObjectCode::device_runtime() {
            common::not_run(
                "cudadevrt",
                &format!("{}: no libcudadevrt.a: {e}", source.sample),
            );
            return None;
        }
        options = options.with_relocatable_device_code(true);
    }
    let compiled = Program::new(source.text, options.clone())
        .with_name(format!("{}.cu", source.sample))
        .compile(CodeType::Cubin, source.expressions);
    let code = match compiled {
        Err(cuda_core::Error::InvalidArgument {
            name: "toolkit_includes",
            reason,
        }) => {
            common::not_run(
                "cuda-headers",
                &format!("{}: no CUDA toolkit headers: {reason}", source.sample),
            );
            return None;
        }
        other => other.unwrap_or_else(|e| panic!("{}: {e}", source.sample)),
    };
    if !source.device_runtime {
        return Some(code);
    }
    // The device runtime as one option: the child launches' runtime calls resolve.
    let mut link = LinkerOptions::default().with_device_runtime(true);
    if let Some(arch) = &options.arch {
        link = link.with_arch(arch.clone());
    }
    Some(
        Linker::new(&[code], link)
            .link()
            .unwrap_or_else(|e| panic!("{}: {e}", source.sample)),
    )
}

/// `source` built for `device`'s architecture (made current, so that the compile asks it).
fn build_for(device: Device, source: &Source) -> Option<ObjectCode> {
    device.set_current().unwrap();
    build(source, ProgramOptions::default())
}

#[test]
fn every_sample_kernel_compiles_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        return common::not_run("nvrtc", &format!("no NVRTC: {e}"));
    }
    for source in SOURCES {
        // Catches a kernel that NVRTC refuses (a typo, a missing header, a template not
        // instantiated), which would otherwise fail only on a machine with a GPU.
        let Some(code) = build(source, ProgramOptions::default().with_arch("90")) else {
            continue;
        };
        assert!(
            code.code().starts_with(b"\x7fELF"),
            "{}: not a cubin",
            source.sample
        );
        // Catches a name expression that names no kernel (get_kernel would fail on the GPU).
        for expression in source.expressions {
            assert!(
                code.lowered_name(expression).is_some(),
                "{}: {expression} not lowered",
                source.sample
            );
        }
        println!("compiled: {}", source.sample);
    }
}

/// Follows `simpleStreams`: an array of 16 Mi ints is set by a kernel and copied to pinned
/// host memory in four parts, each part's kernel and asynchronous copy on a stream of its own,
/// timed with events; the host array must hold the kernel's value everywhere (the sample's
/// `correct_data`), the same as one stream doing the whole array.
#[test]
#[ignore = "needs a CUDA GPU"]
fn simple_streams() {
    let device = common::device();
    let code = build_for(device, &SIMPLE_STREAMS).unwrap();
    let kernel = code.get_kernel("init_array").unwrap();
    let n: usize = 16 * 1024 * 1024;
    let parts = 4;
    let part = n / parts;
    let iterations = 5i32;
    let value = 5i32;
    let streams: Vec<_> = (0..parts).map(|_| common::stream(device)).collect();
    let home = &streams[0];
    let memory = device.memory_resource().unwrap();
    let pinned = PinnedMemoryResource::new(device).unwrap();
    let mut factor = memory.allocate(4, home).unwrap();
    factor.copy_from_host(&[value], home).unwrap();
    let mut data = memory.allocate(4 * n, home).unwrap();
    data.fill(0u32, home).unwrap();
    let mut host = pinned.allocate(4 * n, home).unwrap();

    // One stream for all of it, then each part on its own stream.
    for use_streams in [false, true] {
        host.fill(0xffff_ffffu32, home).unwrap();
        let start = home.record_new(EventOptions::timing()).unwrap();
        for (i, stream) in streams.iter().enumerate() {
            let stream = if use_streams { stream } else { home };
            let range = i * part..(i + 1) * part;
            let slice = data.slice_of::<i32>(range.clone()).unwrap();
            let count = part as u32;
            // SAFETY: `count` ints of a slice of `count` ints; `factor` holds one int.
            unsafe {
                launch(
                    stream,
                    &LaunchConfig::for_elements(count.into(), 512),
                    &kernel,
                    &[&slice, &factor, &count, &iterations],
                )
            }
            .unwrap();
            slice
                .copy_to(host.slice_of_mut::<i32>(range).unwrap(), stream)
                .unwrap();
        }
        // The home stream waits for the others, as the sample's final event does.
        for stream in &streams[1..] {
            home.wait_stream(stream).unwrap();
        }
        let stop = home.record_new(EventOptions::timing()).unwrap();
        stop.sync().unwrap();
        let took = stop.elapsed_since(&start).unwrap();
        println!("simpleStreams: {parts} parts, streams {use_streams}: {took:?}");
        // Catches a part's copy taken from the wrong offset or before its kernel ended (the
        // fill's -1 or the zeros would show), a slice passed as its whole buffer, and a copy
        // not ordered before the event.
        let values = host.to_vec::<i32>(home).unwrap();
        let wrong = values.iter().filter(|&&v| v != value).count();
        assert_eq!(wrong, 0, "{wrong} of {n} elements, streams {use_streams}");
    }
}

/// Follows `simpleCallback`: eight workers, each on a stream of its own, copy their data to the
/// device, increment it with a kernel, copy it back, and queue a host callback that checks the
/// copied data against the CPU and reports it (`Stream::launch_host_func_reading`, with no
/// `unsafe`); the main thread waits for every callback (the sample's barrier), then reads each
/// worker's data back once more. A capture of one worker's pipeline with a repeatable host
/// function runs its callback on each of three launches.
#[test]
#[ignore = "needs a CUDA GPU"]
fn simple_callback() {
    let device = common::device();
    let code = build_for(device, &SIMPLE_CALLBACK).unwrap();
    let kernel = code.get_kernel("increment").unwrap();
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "simpleCallback");
    let workers = 8usize;
    let n = 1usize << 20;
    let memory = device.memory_resource().unwrap();
    let pinned = PinnedMemoryResource::new(device).unwrap();
    let (tx, rx) = mpsc::channel::<(usize, bool)>();
    let mut running = Vec::new();
    for id in 0..workers {
        let stream = common::stream(device);
        let input: Vec<i32> = (0..n as i32).map(|i| i * 3 + id as i32).collect();
        let mut host = pinned.allocate(4 * n, &stream).unwrap();
        host.copy_from_host(&input, &stream).unwrap();
        let mut data = memory.allocate(4 * n, &stream).unwrap();
        data.copy_from(&host, &stream).unwrap();
        let count = n as u32;
        // SAFETY: `count` ints in `data`.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::for_elements(count.into(), 256),
                &kernel,
                &[&data, &count],
            )
        }
        .unwrap();
        host.copy_from(&data, &stream).unwrap();
        let copied = stream.record_new(EventOptions::default()).unwrap();
        let tx = tx.clone();
        // As the sample's callback does: the worker's results checked on the host, by the
        // callback itself, once the copy back is done.
        let expected: Vec<i32> = input.iter().map(|v| v + 1).collect();
        stream
            .launch_host_func_reading(&mut host, move |values: &[i32]| {
                let _ = tx.send((id, values == expected.as_slice()));
            })
            .unwrap();
        running.push((stream, input, host, data, copied));
    }
    let mut reported = vec![false; workers];
    for _ in 0..workers {
        let (id, right) = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("every worker's callback runs");
        // Catches a callback run before the work queued ahead of it: the event recorded
        // between the copy and the callback is done by the time the callback runs.
        assert!(running[id].4.is_done().unwrap(), "worker {id}");
        // Catches a callback given other memory, or run before the copy back (the values
        // would be the input's).
        assert!(right, "worker {id}'s callback found wrong values");
        // Catches a callback run twice (or another's reported).
        assert!(!reported[id], "worker {id} reported twice");
        reported[id] = true;
    }
    for (id, (stream, input, host, _, _)) in running.iter().enumerate() {
        // Catches a worker's copy or kernel lost, or run on another worker's data.
        let expected: Vec<i32> = input.iter().map(|v| v + 1).collect();
        assert_eq!(host.to_vec::<i32>(stream).unwrap(), expected, "worker {id}");
    }

    // The repeatable kind in a capture: a host node run on each launch of the graph.
    let (stream, input, host, data, _) = running.pop().unwrap();
    let (mut host, mut data) = (host, data);
    let runs = Arc::new(AtomicUsize::new(0));
    stream.sync().unwrap();
    // SAFETY: the buffers the capture uses outlive every launch of its graph (synchronised
    // below before they drop).
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    data.copy_from(&host, &stream).unwrap();
    let count = n as u32;
    // SAFETY: `count` ints in `data`.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(count.into(), 256),
            &kernel,
            &[&data, &count],
        )
    }
    .unwrap();
    host.copy_from(&data, &stream).unwrap();
    let counter = runs.clone();
    stream
        .launch_host_func_repeatable(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let exec = stream
        .end_capture()
        .unwrap()
        .instantiate(GraphOptions::default())
        .unwrap();
    // Catches a host function run at the capture rather than at each launch.
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    for _ in 0..3 {
        exec.launch(&stream).unwrap();
    }
    stream.sync().unwrap();
    // Catches a callback lost from the graph or run once only.
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // Each launch incremented what the previous one copied back: input + 1 + 3.
    let expected: Vec<i32> = input.iter().map(|v| v + 4).collect();
    assert_eq!(host.to_vec::<i32>(&stream).unwrap(), expected);
}

/// Follows `simpleTemplates`: one templated kernel (dynamic shared memory of its element type
/// through a templated accessor) instantiated for `float` and `int` through name expressions
/// and taken by them (`get_kernel("scale_by_threads<float>")`); each writes its input times
/// the block's 256 threads, checked against the CPU (the sample's `computeGold`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn simple_templates() {
    let device = common::device();
    let code = build_for(device, &SIMPLE_TEMPLATES).unwrap();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let threads = 256usize;
    let config = LaunchConfig::new([1, 1, 1], [threads as u32, 1, 1]);

    let floats: Vec<f32> = (0..threads).map(|i| i as f32 * 0.5 - 3.0).collect();
    let kernel = code.get_kernel("scale_by_threads<float>").unwrap();
    let mut input = memory.allocate(4 * threads, &stream).unwrap();
    input.copy_from_host(&floats, &stream).unwrap();
    let mut output = memory.allocate(4 * threads, &stream).unwrap();
    output.fill(0u32, &stream).unwrap();
    // SAFETY: `threads` floats in each buffer, and as many in shared memory.
    unsafe {
        launch(
            &stream,
            &config.with_shared_memory(4 * threads as u32),
            &kernel,
            &[&input, &output],
        )
    }
    .unwrap();
    let gold: Vec<f32> = floats.iter().map(|v| v * threads as f32).collect();
    // Catches the float instantiation run as another (the int one would read the floats'
    // bits as ints), and a name expression resolved to no kernel.
    assert_eq!(output.to_vec::<f32>(&stream).unwrap(), gold);

    let ints: Vec<i32> = (0..threads as i32).map(|i| i * 7 - 100).collect();
    let kernel = code.get_kernel("scale_by_threads<int>").unwrap();
    input.copy_from_host(&ints, &stream).unwrap();
    output.fill(0u32, &stream).unwrap();
    // SAFETY: as above, for ints.
    unsafe {
        launch(
            &stream,
            &config.with_shared_memory(4 * threads as u32),
            &kernel,
            &[&input, &output],
        )
    }
    .unwrap();
    let gold: Vec<i32> = ints.iter().map(|v| v * threads as i32).collect();
    // Catches `<int>` resolved to the float kernel (the product would be of floats' bits).
    assert_eq!(output.to_vec::<i32>(&stream).unwrap(), gold);
}

/// Follows `cdpSimpleQuicksort`: one thread partitions, then launches a child grid per side
/// from the device, each in a non-blocking stream of its own, to 16 levels deep, below 32
/// elements sorting by selection; compiled with relocatable device code and linked with the
/// device runtime (`LinkerOptions::with_device_runtime`). Sorts the sample's 128 values and a
/// larger set with repeats; each must equal the CPU's sort.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cdp_simple_quicksort() {
    let device = common::device();
    let Some(code) = build_for(device, &CDP_QUICKSORT) else {
        return;
    };
    let kernel = code.get_kernel("quicksort").unwrap();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    for (seed, n, modulus) in [(1u64, 128usize, u32::MAX), (2, 4096, 100)] {
        let values: Vec<u32> = common::random_u32(seed, n)
            .into_iter()
            .map(|v| v % modulus)
            .collect();
        let mut data = memory.allocate(4 * n, &stream).unwrap();
        data.copy_from_host(&values, &stream).unwrap();
        let (left, right, depth) = (0i32, n as i32 - 1, 0i32);
        // SAFETY: the kernel sorts elements left..=right of `data`, which holds n.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
                &kernel,
                &[&data, &left, &right, &depth],
            )
        }
        .unwrap();
        let mut expected = values.clone();
        expected.sort_unstable();
        // Catches child launches that did not run or were not waited for (the data would stay
        // partly unsorted), and a partition that loses or duplicates values.
        assert_eq!(data.to_vec::<u32>(&stream).unwrap(), expected, "{n} values");
    }
}

/// Follows `graphMemoryNodes`: a graph allocates its scratch memory with an allocation node,
/// uses it in kernels and frees it with a free node, built node by node and again by stream
/// capture (`capture_alloc`, `capture_free`); each graph is launched several times, with new
/// inputs between launches, and must give the CPU's `a * a + b` each time; the device's graph
/// memory is in use while the graphs exist, and is given back once they are dropped and
/// trimmed.
/// The allocations are kernel arguments as they are (`GraphAllocation`, `CapturedAllocation`);
/// the graph built node by node copies its input into graph memory with a copy node, as the
/// sample does.
///
/// Lacking: a captured allocation (`CapturedAllocation`) is not a copy or fill end.
#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_memory_nodes() {
    let _graph_memory = common::graph_memory();
    let device = common::device();
    let code = build_for(device, &GRAPH_MEMORY_NODES).unwrap();
    let (square, add) = (
        code.get_kernel("square_into").unwrap(),
        code.get_kernel("add_into").unwrap(),
    );
    let stream = common::stream(device);
    let n = 1u32 << 20;
    let bytes = 4 * n as usize;
    let config = LaunchConfig::for_elements(n.into(), 256);
    let a = common::shared_buffer(device, &stream, bytes);
    let b = common::shared_buffer(device, &stream, bytes);
    let out = common::shared_buffer(device, &stream, bytes);
    device.trim_graph_memory().unwrap();
    let before = device.graph_memory_usage().unwrap();

    // Node by node: alloc -> copy `a` in -> square -> add -> free, the input staged in graph
    // memory by a copy node as the sample stages it.
    let mut graph = Graph::new(device).unwrap();
    let staged = graph.add_alloc(&[], bytes).unwrap();
    let scratch = graph.add_alloc(&[], bytes).unwrap();
    let loaded = graph.add_copy(&[staged.node()], &a, &staged).unwrap();
    // SAFETY: n floats of `staged` and `scratch` between their allocation and free nodes; a,
    // b and out hold n.
    let added = unsafe {
        let squared = graph
            .add_kernel(
                &[scratch.node(), loaded],
                &config,
                &square,
                &[&scratch, &staged, &n],
            )
            .unwrap();
        graph
            .add_kernel(&[squared], &config, &add, &[&out, &scratch, &b, &n])
            .unwrap()
    };
    graph.add_free(&[added], scratch).unwrap();
    graph.add_free(&[added], staged).unwrap();
    let built = graph.instantiate(GraphOptions::default()).unwrap();

    // The same by stream capture.
    stream.sync().unwrap();
    // SAFETY: no buffer is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let scratch = stream.capture_alloc(bytes).unwrap();
    // SAFETY: n floats of `scratch` between its allocation and free; a, b and out hold n.
    unsafe {
        launch(&stream, &config, &square, &[&scratch, &a, &n]).unwrap();
        launch(&stream, &config, &add, &[&out, &scratch, &b, &n]).unwrap();
    }
    stream.capture_free(scratch).unwrap();
    let captured = stream
        .end_capture()
        .unwrap()
        .instantiate(GraphOptions::default())
        .unwrap();

    for (round, exec) in [&built, &captured, &built, &captured].iter().enumerate() {
        let xs: Vec<f32> = (0..n)
            .map(|i| (i % 1000) as f32 * 0.01 + round as f32)
            .collect();
        let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - round as f32).collect();
        // The graphs keep `a` and `b`: new inputs go in through shared slices of them.
        a.shared_slice(..)
            .unwrap()
            .copy_from_host(&xs, &stream)
            .unwrap();
        b.shared_slice(..)
            .unwrap()
            .copy_from_host(&ys, &stream)
            .unwrap();
        exec.launch(&stream).unwrap();
        exec.launch(&stream).unwrap();
        let expected: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x * x + y).collect();
        // Catches scratch memory not allocated or freed per launch (the driver refuses the
        // second launch of a graph whose allocation was not freed), a kernel run on stale
        // scratch, and a graph that kept its first inputs' values.
        assert_eq!(
            out.to_vec::<f32>(&stream).unwrap(),
            expected,
            "round {round}"
        );
    }
    let during = device.graph_memory_usage().unwrap();
    // Catches allocation nodes that took no graph memory (served from somewhere else).
    assert!(
        during.used_current >= before.used_current + bytes as u64,
        "{during:?}"
    );
    drop((built, captured, graph));
    device.trim_graph_memory().unwrap();
    // Catches graph memory kept after its graphs are gone.
    assert_eq!(
        device.graph_memory_usage().unwrap().used_current,
        before.used_current
    );
}

/// Follows `jacobiCudaGraphs`: Jacobi iterations on a diagonally dominant system of 512 rows
/// (float matrix, double vectors), two iterations (x to x_new and back, each summing
/// |x_new - x| into its own sum after a fill of the sums) captured once into a graph and
/// relaunched until the last sum falls below the sample's threshold of 1e-2, at most 3000
/// iterations; the result, the iteration count and the final sum must match a CPU Jacobi that
/// stops by the same rule.
#[test]
#[ignore = "needs a CUDA GPU"]
fn jacobi_cuda_graphs() {
    let device = common::device();
    let code = build_for(device, &JACOBI).unwrap();
    let kernel = code.get_kernel("jacobi_step").unwrap();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let n = 512usize;
    let (a, b) = jacobi_system(n);
    let threshold = 1e-2;
    let max_iterations = 3000;

    let mut a_dev = memory.allocate(4 * n * n, &stream).unwrap();
    a_dev.copy_from_host(&a, &stream).unwrap();
    let mut b_dev = memory.allocate(8 * n, &stream).unwrap();
    b_dev.copy_from_host(&b, &stream).unwrap();
    let mut x = memory.allocate(8 * n, &stream).unwrap();
    x.fill(0u32, &stream).unwrap();
    let mut x_new = memory.allocate(8 * n, &stream).unwrap();
    x_new.fill(0u32, &stream).unwrap();
    let mut sums = memory.allocate(16, &stream).unwrap();
    stream.sync().unwrap();

    let rows = n as i32;
    let config = LaunchConfig::new([n as u32, 1, 1], [256, 1, 1]);
    // SAFETY: the buffers the capture uses outlive every launch of its graph.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    sums.fill(0u32, &stream).unwrap();
    {
        let first = sums.slice_of::<f64>(0..1).unwrap();
        let second = sums.slice_of::<f64>(1..2).unwrap();
        // SAFETY: n x n floats in a, n doubles in b, x and x_new, one double in each sum.
        unsafe {
            launch(
                &stream,
                &config,
                &kernel,
                &[&a_dev, &b_dev, &x, &x_new, &first, &rows],
            )
            .unwrap();
            launch(
                &stream,
                &config,
                &kernel,
                &[&a_dev, &b_dev, &x_new, &x, &second, &rows],
            )
            .unwrap();
        }
    }
    let exec = stream
        .end_capture()
        .unwrap()
        .instantiate(GraphOptions::default())
        .unwrap();

    let mut iterations = 0;
    let mut last = f64::INFINITY;
    while last >= threshold && iterations < max_iterations {
        exec.launch(&stream).unwrap();
        iterations += 2;
        last = sums.to_vec::<f64>(&stream).unwrap()[1];
    }
    let (cpu_x, cpu_iterations, cpu_last) = jacobi_cpu(&a, &b, threshold, max_iterations);
    println!("jacobiCudaGraphs: {iterations} iterations, last sum {last:e} (CPU {cpu_last:e})");
    // Catches a graph that does not read what its previous launch wrote (it would not
    // converge, or stop at another count) and sums not reset by the captured fill (they
    // would grow past the threshold and never stop).
    assert_eq!(iterations, cpu_iterations);
    assert!(last < threshold, "not converged: {last}");
    assert!(
        (last - cpu_last).abs() <= 1e-9 * (1.0 + cpu_last),
        "{last} {cpu_last}"
    );
    // Catches the two steps' buffers swapped or a step lost: x would be a half-step off.
    let gpu_x = x.to_vec::<f64>(&stream).unwrap();
    for (i, (g, c)) in gpu_x.iter().zip(&cpu_x).enumerate() {
        assert!((g - c).abs() <= 1e-9 * (1.0 + c.abs()), "x[{i}]: {g} {c}");
    }
}

/// A system of `n` rows whose Jacobi iteration converges at about 0.8 per step: random
/// off-diagonal floats in [0, 1), each diagonal 1.25 times its row's others; b in [0, 10).
fn jacobi_system(n: usize) -> (Vec<f32>, Vec<f64>) {
    let randoms = common::random_u32(30, n * n + n);
    let unit = |r: u32| (r >> 8) as f32 / (1u32 << 24) as f32;
    let mut a: Vec<f32> = randoms[..n * n].iter().map(|&r| unit(r)).collect();
    for row in 0..n {
        let others: f32 = (0..n).filter(|&j| j != row).map(|j| a[row * n + j]).sum();
        a[row * n + row] = 1.25 * others;
    }
    let b = randoms[n * n..]
        .iter()
        .map(|&r| f64::from(unit(r)) * 10.0)
        .collect();
    (a, b)
}

/// Jacobi on the CPU, two iterations at a time, stopping as the test's graph loop does: the
/// solution, the iterations run and the last iteration's sum of changes.
fn jacobi_cpu(a: &[f32], b: &[f64], threshold: f64, max: usize) -> (Vec<f64>, usize, f64) {
    let n = b.len();
    let step = |x: &[f64]| -> (Vec<f64>, f64) {
        let next: Vec<f64> = (0..n)
            .map(|row| {
                let others: f64 = (0..n)
                    .filter(|&j| j != row)
                    .map(|j| f64::from(a[row * n + j]) * x[j])
                    .sum();
                (b[row] - others) / f64::from(a[row * n + row])
            })
            .collect();
        let change = next.iter().zip(x).map(|(p, q)| (p - q).abs()).sum();
        (next, change)
    };
    let mut x = vec![0.0; n];
    let (mut iterations, mut last) = (0, f64::INFINITY);
    while last >= threshold && iterations < max {
        let (half, _) = step(&x);
        let (next, change) = step(&half);
        x = next;
        last = change;
        iterations += 2;
    }
    (x, iterations, last)
}

/// Follows the simple WMMA kernel of `cudaTensorCoreGemm`: D = alpha * A * B + beta * C with
/// half A (row-major) and B (column-major), float C and D, each warp computing a 16 x 16 tile
/// on the tensor cores with `nvcuda::wmma` and accumulating in float, alpha 1.1 and beta 1.2
/// as in the sample; 256 x 256 from K = 512, compared with a CPU GEMM of the same halves
/// within a float accumulation's tolerance.
#[cfg(feature = "half")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn wmma_tensor_core_gemm() {
    use half::f16;
    let device = common::device();
    let Some(code) = build_for(device, &WMMA_GEMM) else {
        return;
    };
    let kernel = code.get_kernel("wmma_gemm").unwrap();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let (m, n, k) = (256usize, 256usize, 512usize);
    let (alpha, beta) = (1.1f32, 1.2f32);
    let signed = |r: u32| (r >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
    let a: Vec<f16> = common::random_u32(41, m * k)
        .into_iter()
        .map(|r| f16::from_f32(signed(r)))
        .collect();
    let b: Vec<f16> = common::random_u32(42, k * n)
        .into_iter()
        .map(|r| f16::from_f32(signed(r)))
        .collect();
    let c: Vec<f32> = common::random_u32(43, m * n)
        .into_iter()
        .map(signed)
        .collect();
    let upload = |bytes: usize| memory.allocate(bytes, &stream).unwrap();
    let mut a_dev = upload(2 * m * k);
    a_dev.copy_from_host(&a, &stream).unwrap();
    let mut b_dev = upload(2 * k * n);
    b_dev.copy_from_host(&b, &stream).unwrap();
    let mut c_dev = upload(4 * m * n);
    c_dev.copy_from_host(&c, &stream).unwrap();
    let mut d_dev = upload(4 * m * n);
    d_dev.fill(0x7fc0_0000u32, &stream).unwrap();
    // Four warps across and four down per block: 4 x 4 tiles of 16 x 16.
    let config = LaunchConfig::new([(m / 16 / 4) as u32, (n / 16 / 4) as u32, 1], [128, 4, 1]);
    let dims = [m as i32, n as i32, k as i32];
    // SAFETY: m x k and k x n halves in a and b, m x n floats in c and d.
    unsafe {
        launch(
            &stream,
            &config,
            &kernel,
            &[
                &a_dev, &b_dev, &c_dev, &d_dev, &dims[0], &dims[1], &dims[2], &alpha, &beta,
            ],
        )
    }
    .unwrap();
    let d = d_dev.to_vec::<f32>(&stream).unwrap();
    let mut wrong = Vec::new();
    for row in 0..m {
        for col in 0..n {
            let product: f64 = (0..k)
                .map(|i| f64::from(a[row * k + i].to_f32()) * f64::from(b[col * k + i].to_f32()))
                .sum();
            let expected =
                f64::from(alpha) * product + f64::from(beta) * f64::from(c[row * n + col]);
            let got = f64::from(d[row * n + col]);
            // Catches a tile stored at the wrong place (or not at all: the NaN fill stays), B
            // read row-major, alpha and beta swapped, and half inputs read as other bits.
            if got.is_nan() || (got - expected).abs() > 1e-3 * (1.0 + expected.abs()) {
                wrong.push((row, col, got, expected));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} elements differ, first {:?}",
        wrong.len(),
        m * n,
        &wrong[..wrong.len().min(4)]
    );
}

/// Follows `simpleCubemapTexture`: a 64-wide cubemap CUDA array of floats (six faces), read
/// through a texture object with normalized coordinates and point filtering by a kernel that
/// turns each face's texel into its cube direction and writes the negated fetch; checked
/// against a CPU that resolves each direction to a face and texel by the CUDA programming
/// guide's table (and so against the negated input, as the sample does).
#[test]
#[ignore = "needs a CUDA GPU"]
fn simple_cubemap_texture() {
    let device = common::device();
    let code = build_for(device, &CUBEMAP).unwrap();
    let kernel = code.get_kernel("negate_faces").unwrap();
    let stream = common::stream(device);
    let width = 64usize;
    let values: Vec<f32> = (0..6 * width * width).map(|i| i as f32).collect();
    let mut array = Array::new(&stream, &ArrayOptions::cubemap(ArrayFormat::F32, width)).unwrap();
    array.copy_from_host(&values, &stream).unwrap();
    let array = Arc::new(array);
    let texture = Texture::from_array(
        &array,
        &TextureOptions::default()
            .with_normalized_coordinates(true)
            .with_address_mode_all(AddressMode::Wrap),
    )
    .unwrap();
    let mut out = device
        .memory_resource()
        .unwrap()
        .allocate(4 * values.len(), &stream)
        .unwrap();
    out.fill(0x7fc0_0000u32, &stream).unwrap();
    let w = width as u32;
    // SAFETY: 6 x width x width floats in `out`; the texture is alive.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([w / 8, w / 8, 6], [8, 8, 1]),
            &kernel,
            &[&texture, &out, &w],
        )
    }
    .unwrap();
    let expected = cubemap_cpu(&values, width);
    // The CPU's table gives back each texel: the reference is the negated input.
    let negated: Vec<f32> = values.iter().map(|v| -v).collect();
    assert_eq!(expected, negated, "the CPU reference's face table");
    // Catches faces in another order than the array's layers, a texture made without the
    // cubemap flag (a 2D layered read), and texels read off by one.
    assert_eq!(out.to_vec::<f32>(&stream).unwrap(), expected);
}

/// What [`CUBEMAP`]'s kernel writes, on the CPU: each thread's direction resolved to a face
/// and texel by the major axis (the CUDA programming guide's cubemap table), negated.
fn cubemap_cpu(values: &[f32], width: usize) -> Vec<f32> {
    let w = width as f32;
    let mut out = vec![0.0; values.len()];
    for face in 0..6 {
        for y in 0..width {
            for x in 0..width {
                let u = ((x as f32 + 0.5) / w) * 2.0 - 1.0;
                let v = ((y as f32 + 0.5) / w) * 2.0 - 1.0;
                let (cx, cy, cz) = match face {
                    0 => (1.0, -v, -u),
                    1 => (-1.0, -v, u),
                    2 => (u, 1.0, v),
                    3 => (u, -1.0, -v),
                    4 => (u, -v, 1.0),
                    _ => (-u, -v, -1.0f32),
                };
                let (ax, ay, az) = (cx.abs(), cy.abs(), cz.abs());
                let (read_face, sc, tc, ma) = if ax >= ay && ax >= az {
                    if cx > 0.0 {
                        (0, -cz, -cy, ax)
                    } else {
                        (1, cz, -cy, ax)
                    }
                } else if ay >= az {
                    if cy > 0.0 {
                        (2, cx, cz, ay)
                    } else {
                        (3, cx, -cz, ay)
                    }
                } else if cz > 0.0 {
                    (4, cx, -cy, az)
                } else {
                    (5, -cx, -cy, az)
                };
                let s = (sc / ma + 1.0) / 2.0;
                let t = (tc / ma + 1.0) / 2.0;
                let texel_x = ((s * w) as usize).min(width - 1);
                let texel_y = ((t * w) as usize).min(width - 1);
                out[(face * width + y) * width + x] =
                    -values[(read_face * width + texel_y) * width + texel_x];
            }
        }
    }
    out
}

/// Follows `binaryPartitionCG`: every warp (`tiled_partition<32>`) splits by
/// `binary_partition` into its threads holding odd values and those holding even ones; each
/// part reduces its values (`cg::reduce`) and its first thread adds the part's sum and, for
/// odd parts, its size to global totals. 1 Mi values in 0..50; the odd count and both sums
/// must equal the CPU's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn binary_partition_cg() {
    let device = common::device();
    let Some(code) = build_for(device, &BINARY_PARTITION) else {
        return;
    };
    let kernel = code.get_kernel("odd_even_count_and_sum").unwrap();
    let stream = common::stream(device);
    let memory = device.memory_resource().unwrap();
    let n = 1usize << 20;
    let values: Vec<i32> = common::random_u32(50, n)
        .into_iter()
        .map(|r| (r % 50) as i32)
        .collect();
    let mut input = memory.allocate(4 * n, &stream).unwrap();
    input.copy_from_host(&values, &stream).unwrap();
    let mut odd_count = memory.allocate(4, &stream).unwrap();
    odd_count.fill(0u32, &stream).unwrap();
    let mut sums = memory.allocate(8, &stream).unwrap();
    sums.fill(0u32, &stream).unwrap();
    let count = n as u32;
    // A grid-stride loop whose threads divide n: every warp is whole on every pass.
    // SAFETY: n ints in `input`, one int in `odd_count`, two in `sums`.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([512, 1, 1], [256, 1, 1]),
            &kernel,
            &[&input, &odd_count, &sums, &count],
        )
    }
    .unwrap();
    let odd = values.iter().filter(|v| *v & 1 == 1).count() as i32;
    let odd_sum: i32 = values.iter().filter(|v| *v & 1 == 1).sum();
    let even_sum: i32 = values.iter().filter(|v| *v & 1 == 0).sum();
    // Catches parts that are not split by the predicate (the sums would mix), a reduce over
    // the whole warp instead of the part, and parts counted once per thread.
    assert_eq!(odd_count.to_vec::<i32>(&stream).unwrap(), [odd]);
    assert_eq!(sums.to_vec::<i32>(&stream).unwrap(), [odd_sum, even_sum]);
}
