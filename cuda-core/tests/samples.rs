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
//! | [`graph_memory_nodes`] | `graphMemoryNodes` | 0 | 2 (`GraphAllocation::ptr`, `CapturedAllocation::ptr`) |
//! | [`jacobi_cuda_graphs`] | `jacobiCudaGraphs` | 0 | 0 |
//!
//! What the API lacked, where a port needed it (each is written down in its test too):
//!
//! - `graphMemoryNodes`: memory of a graph's allocation node (`BuildGraph::add_alloc`,
//!   `Stream::capture_alloc`) reaches kernels only as its raw `DevicePtr`: neither
//!   `GraphAllocation` nor `CapturedAllocation` is a kernel or graph argument, nor a copy or
//!   fill end (`GraphMemory`), so the sample's copies into graph memory became kernels and its
//!   addresses are passed raw.
//! - `simpleCallback`: the sample's callback checks the data its stream copied to the host;
//!   here a host function cannot read what a copy wrote into pinned memory without `unsafe`
//!   (`Buffer::as_slice`), so each callback only reports its worker, and the main thread
//!   checks the data after the callbacks.
//!
//! Every kernel of the module compiles on any machine with NVRTC
//! ([`every_sample_kernel_compiles_for_sm_90`]), so a kernel that would fail only on the GPU
//! machine fails here first.

use crate::common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use cuda_core::memory::PinnedMemoryResource;
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

/// Every kernel source of the module.
const SOURCES: [&Source; 6] = [
    &SIMPLE_STREAMS,
    &SIMPLE_CALLBACK,
    &SIMPLE_TEMPLATES,
    &CDP_QUICKSORT,
    &GRAPH_MEMORY_NODES,
    &JACOBI,
];

/// The toolkit's include directory holding `header`, and its `cccl` beside it where it has one
/// (CUDA 13 keeps the C++ library there), from `$CUDA_HOME`, `$CUDA_PATH` or `/usr/local/cuda`.
/// No option of the crate finds them (issue 30's item 3).
fn toolkit_include(header: &str) -> Option<Vec<PathBuf>> {
    let include = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .chain([PathBuf::from("/usr/local/cuda")])
        .map(|root| root.join("include"))
        .find(|dir| dir.join(header).is_file())?;
    let cccl = include.join("cccl");
    Some(if cccl.is_dir() {
        vec![include, cccl]
    } else {
        vec![include]
    })
}

/// `source` compiled with `base` (and its headers' include paths), linked with the device
/// runtime where it launches kernels; `None`, said as not run, where the headers or the device
/// runtime are missing here.
fn build(source: &Source, base: ProgramOptions) -> Option<ObjectCode> {
    let mut options = base;
    if let Some(header) = source.header {
        let Some(paths) = toolkit_include(header) else {
            common::not_run(
                "cuda-headers",
                &format!(
                    "{}: no CUDA toolkit headers ({header}) under $CUDA_HOME, $CUDA_PATH or \
                     /usr/local/cuda",
                    source.sample
                ),
            );
            return None;
        };
        options = options.with_include_paths(paths);
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
    let code = Program::new(source.text, options.clone())
        .with_name(format!("{}.cu", source.sample))
        .compile(CodeType::Cubin, source.expressions)
        .unwrap_or_else(|e| panic!("{}: {e}", source.sample));
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
        // instantiated), which would otherwise fail only on the GPU machine.
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
/// device, increment it with a kernel, copy it back, and queue a host callback that reports
/// the worker done; the main thread waits for every callback (the sample's barrier), then
/// checks each worker's data against the CPU. A capture of one worker's pipeline with a
/// repeatable host function runs its callback on each of three launches.
///
/// Lacking: the sample's callback checks the copied data itself; here reading pinned memory
/// from a host function needs `unsafe` (`Buffer::as_slice`), so the main thread checks it.
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
    let (tx, rx) = mpsc::channel::<usize>();
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
        stream
            .launch_host_func(move || {
                let _ = tx.send(id);
            })
            .unwrap();
        running.push((stream, input, host, data, copied));
    }
    let mut reported = vec![false; workers];
    for _ in 0..workers {
        let id = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("every worker's callback runs");
        // Catches a callback run before the work queued ahead of it: the event recorded
        // between the copy and the callback is done by the time the callback runs.
        assert!(running[id].4.is_done().unwrap(), "worker {id}");
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
///
/// Lacking: graph memory reaches kernels only as a raw `DevicePtr` (`GraphAllocation::ptr`,
/// `CapturedAllocation::ptr`): neither allocation is a kernel argument nor a copy or fill end,
/// so the sample's copies into graph memory are kernels here and the addresses are passed raw
/// (the table's 2 raw pointers).
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

    // Node by node: alloc -> square -> add -> free.
    let mut graph = Graph::new(device).unwrap();
    let scratch = graph.add_alloc(&[], bytes).unwrap();
    // RAW POINTER: the allocation is not a graph argument (see the doc comment).
    let at = scratch.ptr();
    // SAFETY: n floats at `at` between its allocation and free nodes; a, b and out hold n.
    let added = unsafe {
        let squared = graph
            .add_kernel(&[scratch.node()], &config, &square, &[&at, &a, &n])
            .unwrap();
        graph
            .add_kernel(&[squared], &config, &add, &[&out, &at, &b, &n])
            .unwrap()
    };
    graph.add_free(&[added], scratch).unwrap();
    let built = graph.instantiate(GraphOptions::default()).unwrap();

    // The same by stream capture.
    stream.sync().unwrap();
    // SAFETY: no buffer is allocated or freed on the stream while it captures.
    unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let scratch = stream.capture_alloc(bytes).unwrap();
    // RAW POINTER: as above, for the captured allocation.
    let at = scratch.ptr();
    // SAFETY: n floats at `at` between its allocation and free; a, b and out hold n.
    unsafe {
        launch(&stream, &config, &square, &[&at, &*a, &n]).unwrap();
        launch(&stream, &config, &add, &[&*out, &at, &*b, &n]).unwrap();
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
