//! How cost grows with work: each case at three sizes, cuda-core against raw doing the same at
//! the same size, in one run (issue 31).
//!
//! A case is named `<family>_n<size>` (`cache_hit_file_n1000`), so that
//! `cargo xtask bench-report` can group a family's sizes into its scaling table and plot. Each
//! runs in interleaved rounds, as the overhead suite's cases do (see `common::Case`).
//!
//! | family | sizes | one iteration |
//! | --- | --- | --- |
//! | `cache_hit_file` | 10, 1,000, 10,000 entries | one hit in a `FileStreamProgramCache` holding that many 4 KiB entries, the keys visited in a fixed scattered order (raw: `std::fs::read` of the entry's file, `<dir>/<key.to_hex()>`) |
//! | `cache_put_file` | 10, 1,000, 10,000 entries | a put, again, of an entry that cache holds, the keys in the same order (raw: the entry's bytes written to a temporary file, flushed, renamed over the entry, the directory flushed; no bound enforced) |
//! | `graph_build_empty` | 10, 1,000, 10,000 nodes | make a graph, add that many empty nodes one after another (each after the one before), instantiate it, destroy both (raw: `cuGraphCreate`, `cuGraphAddEmptyNode`, `cuGraphInstantiateWithFlags`, `cuGraphExecDestroy`, `cuGraphDestroy`) |
//! | `graph_build_kernel` | 10, 1,000, 10,000 nodes | the same with kernel nodes of `empty0` (cuda-core: `BuildGraph::add_kernel`; raw: `cuGraphAddKernelNode`) |
//! | `alloc_free_live` | 1, 100, 100,000 live buffers | allocate and free one more 1 KiB buffer, stream-ordered, while that many are live (batched): cuda-core through the default pool wrapped with `from_raw`, which keeps no small buffers (the same driver work as raw's `cuMemAllocFromPoolAsync` and `cuMemFreeAsync`) |
//! | `alloc_churn_live` | 1, 100, 100,000 live buffers | the same through the device's default resource, whose stream keeps the freed small buffer for the next allocation (faster than raw by design) |
//! | `launch_threads` | 1, 8, 64 threads | one launch of `empty0`, the threads launching at once, each on a stream of its own (raw: `cuLaunchKernel`) |
//! | `event_churn_threads` | 1, 8, 64 threads | create and drop an event, the threads at once (raw: `cuEventCreate`, `cuEventDestroy`; cuda-core recycles) |
//! | `stream_churn_threads` | 1, 8, 64 threads | create and drop a non-blocking stream, the threads at once (raw: `cuStreamCreate`, `cuStreamDestroy`; cuda-core recycles) |
//!
//! The cache cases need no GPU and run everywhere; the others need a CUDA driver and device,
//! and are skipped with one line without them (and the kernel cases without NVRTC).
//! `CUDA_CORE_BENCH_SCALING=cache` runs the cache cases alone, `=gpu` the others alone (filling
//! the cache takes seconds, filtered out or not).
//!
//! The live buffers of the allocation cases are each variant's own (raw's allocated raw on its
//! stream, cuda-core's as `Buffer`s on its stream), so the pool holds twice the size while
//! either variant runs. The thread cases time the wall clock from the threads' start to the
//! last one's end over all their operations, so their time is per operation of the whole
//! process (its inverse is the rate: launches per second); each launching thread synchronises
//! its stream after every 256 launches and at its end, inside the timed part.

#[path = "../common/mod.rs"]
mod common;

mod cache;
mod crew;
mod graph;
mod memory;
mod threads;

use std::ffi::{c_void, CString};
use std::ptr::null_mut;

use benches::kernels::{EMPTY0, LAUNCH_KERNELS};
use benches::raw::{check, Handle, RawDriver};
use criterion::Criterion;
use cuda_core::{CodeType, Device, ObjectCode, Program, ProgramOptions};

/// What the stand-in driver (`cuda-core/tests/standin/libcuda_standin.c`) calls its device:
/// against it the suite loads a stub image in place of a compiled one (it loads anything), so
/// that every case can be tried without a GPU.
const STANDIN_NAME: &str = "cuda-core stand-in driver";

fn main() {
    let part = std::env::var("CUDA_CORE_BENCH_SCALING").unwrap_or_default();
    let (cache, gpu) = match part.trim() {
        "" => (true, true),
        "cache" => (true, false),
        "gpu" => (false, true),
        other => {
            eprintln!("scaling: CUDA_CORE_BENCH_SCALING={other:?}: expected cache or gpu");
            std::process::exit(2);
        }
    };
    let mut c = common::criterion();
    if cache {
        cache::cache_cases(&mut c);
    }
    if gpu {
        if let Some(raw) = common::gpu_or_skip("scaling (the GPU cases)") {
            benches::with_raw!(&raw, |driver| gpu_cases(&mut c, driver));
        }
    }
    c.final_summary();
}

/// The name of a case of `family` at `size`, as the report groups it: `<family>_n<size>`.
pub(crate) fn scaled(family: &str, size: usize) -> &'static str {
    // A few dozen names per process, alive for all of it.
    Box::leak(format!("{family}_n{size}").into_boxed_str())
}

/// A driver handle that may cross threads: the driver's handles are thread-safe.
#[derive(Clone, Copy)]
pub(crate) struct Shared(pub(crate) Handle);

impl Shared {
    /// The handle. (A method, so that a closure takes the whole `Shared`, which may cross
    /// threads, and not its field.)
    pub(crate) fn get(self) -> Handle {
        self.0
    }
}

// SAFETY: a context, library or kernel handle may be used from any thread (the driver API is
// thread-safe); the value is only a pointer, never dereferenced here.
unsafe impl Send for Shared {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shared {}

/// What the raw variants share: device 0's primary context (current on the main thread), its
/// default pool, and `empty0` as a `CUkernel` where a cubin could be had.
pub(crate) struct RawState {
    pub(crate) context: Shared,
    pub(crate) pool: Shared,
    pub(crate) kernel: Option<Shared>,
}

fn gpu_cases<R: RawDriver + Sync>(c: &mut Criterion, d: &R) {
    let device = Device::new(0).expect("device 0");
    device.set_current().expect("making device 0 current");
    let cubin = cubin(device);
    let kernel = cubin
        .as_ref()
        .map(|code| code.get_kernel(EMPTY0).expect("the kernel empty0"));
    let raw = raw_setup(d, cubin.as_ref().map(ObjectCode::code));
    graph::graph_cases(c, d, device, &raw, kernel.as_ref());
    memory::memory_cases(c, d, device, &raw);
    threads::thread_cases(c, d, device, &raw, kernel.as_ref());
}

/// The launch kernels compiled for device 0 (a stub image against the stand-in); `None`, after
/// saying so, where NVRTC cannot compile them.
fn cubin(device: Device) -> Option<ObjectCode> {
    if device.name().is_ok_and(|name| name == STANDIN_NAME) {
        // The stand-in loads anything; cuda-core first checks that a cubin is an ELF image
        // whose tables lie within its bytes: the smallest such, a header with no sections.
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        (elf[4], elf[5], elf[52], elf[54], elf[58]) = (2, 1, 64, 56, 64);
        return Some(ObjectCode::from_cubin(elf));
    }
    match Program::new(LAUNCH_KERNELS, ProgramOptions::default())
        .with_name("scaling.cu")
        .compile(CodeType::Cubin, &[])
    {
        Ok(code) => Some(code),
        Err(e) => {
            println!("scaling: cannot compile the launch kernels ({e}); kernel cases skipped");
            None
        }
    }
}

fn raw_setup<R: RawDriver>(d: &R, cubin: Option<&[u8]>) -> RawState {
    let (mut context, mut pool, mut device) = (null_mut(), null_mut(), 0);
    let mut kernel = None;
    // SAFETY: writable out-pointers; handles passed in come from the calls before them. The
    // library stays loaded for the process.
    unsafe {
        check(d.cuDeviceGet(&mut device, 0), "cuDeviceGet");
        check(
            d.cuDevicePrimaryCtxRetain(&mut context, device),
            "cuDevicePrimaryCtxRetain",
        );
        check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(
            d.cuDeviceGetDefaultMemPool(&mut pool, device),
            "cuDeviceGetDefaultMemPool",
        );
        if let Some(cubin) = cubin {
            let (mut library, mut k) = (null_mut(), null_mut());
            check(
                d.cuLibraryLoadData(&mut library, cubin.as_ptr().cast()),
                "cuLibraryLoadData",
            );
            let name = CString::new(EMPTY0).expect("a kernel name");
            check(
                d.cuLibraryGetKernel(&mut k, library, name.as_ptr()),
                "cuLibraryGetKernel",
            );
            kernel = Some(Shared(k));
        }
    }
    RawState {
        context: Shared(context),
        pool: Shared(pool),
        kernel,
    }
}

/// Synchronises a raw stream.
pub(crate) fn raw_sync<R: RawDriver>(d: &R, stream: Handle) {
    // SAFETY: a live stream.
    check(
        unsafe { d.cuStreamSynchronize(stream) },
        "cuStreamSynchronize",
    );
}

/// A raw non-blocking stream of the current context, destroyed when dropped.
pub(crate) struct RawStream<'d, R: RawDriver> {
    d: &'d R,
    pub(crate) handle: Handle,
}

impl<'d, R: RawDriver> RawStream<'d, R> {
    pub(crate) fn new(d: &'d R) -> Self {
        let mut handle = null_mut();
        // SAFETY: a writable out-pointer; a context is current on this thread.
        check(
            unsafe { d.cuStreamCreate(&mut handle, benches::raw::STREAM_NON_BLOCKING) },
            "cuStreamCreate",
        );
        RawStream { d, handle }
    }
}

impl<R: RawDriver> Drop for RawStream<'_, R> {
    fn drop(&mut self) {
        // SAFETY: the stream made in `new`, destroyed once; its work is done or ordered first
        // by the driver.
        unsafe { self.d.cuStreamDestroy(self.handle) };
    }
}

/// No kernel parameters, as the driver takes them.
pub(crate) const NO_PARAMS: *mut *mut c_void = null_mut();
