//! Per-call overhead of cuda-core against the raw driver call and cudarc, in one run.
//!
//! Each case is a criterion group with up to three variants, `raw` (the table field called
//! directly: the limit), `cuda-core` and `cudarc`, each measured in interleaved rounds as
//! `<case>/<variant>/r<k>` (see `common::Case`: the rounds keep the machine's drift out of the
//! comparison). `cargo xtask bench-report` turns the results into one table.
//!
//! | case | one iteration |
//! | --- | --- |
//! | `device_current` | the device of the current context |
//! | `device_by_ordinal` | device 0 by ordinal |
//! | `set_current` | make device 0's primary context current |
//! | `stream_churn` | create and drop a non-blocking stream (raw: `cuStreamCreate`, `cuStreamDestroy`; cuda-core recycles it) |
//! | `event_churn` | create and drop an event without timing (raw: `cuEventCreate`, `cuEventDestroy`; cuda-core recycles it) |
//! | `seed_call` | the nvmath-python pattern of one call: check the current device, make two timing events, record one, launch an empty kernel, record the other, synchronise it, read the elapsed time, drop the events |
//! | `event_record` | record an event on an idle stream (batched) |
//! | `event_query` | query a completed event |
//! | `stream_sync_idle` | synchronise an idle stream |
//! | `launch_0`, `launch_4`, `launch_16` | launch an empty kernel of 0, 4 or 16 parameters (batched) |
//! | `launch_await` | launch an empty kernel and wait for it: raw and cudarc synchronise the stream; cuda-core awaits `Stream::completion` on a thread-parking executor (the wake's latency against `cuStreamSynchronize`) |
//! | `launch_cluster` | `cuLaunchKernelEx` of an empty kernel, grid 2 in one 2-block cluster (batched) |
//! | `launch_attrs` | `cuLaunchKernelEx` of an empty kernel with programmatic stream serialization and the highest priority (batched) |
//! | `pdl_chain` | a producer kernel (5 us of work after letting its dependent launch) and a consumer launched with programmatic dependent launch, then the stream synchronised |
//! | `pdl_chain_plain` | the same two launches without programmatic dependent launch |
//! | `graph_launch` | launch an instantiated graph of one empty kernel (batched; raw launches cuda-core's executable graph through the table) |
//! | `graph_chain_100` | launch a graph of 100 empty kernels one after another, then synchronise |
//! | `stream_chain_100` | the same 100 launches on the stream, then synchronise |
//! | `graph_instantiate` | instantiate the 100-node graph and destroy the result |
//! | `replay_100` | 100 launches of `empty4` one after another, the first one's scalar changed on every call, then synchronise: raw updates that node of its executable graph (`cuGraphExecKernelNodeSetParams`) and launches it; cuda-core runs a `Replay` whose body makes the 100 launches, the 99 that stay the same declared unchanged (`launch_unchanged`) |
//! | `replay_100_checked` | the same, with every launch of the body compared (`launch`): the region finds the changed one itself |
//! | `replay_100_stream` | the same 100 launches queued on the stream one by one, then synchronise (what `replay_100` replaces) |
//! | `replay_100_first` | the first call: raw builds the 100-node graph (`cuGraphCreate`, `cuGraphAddKernelNode`), instantiates, launches, synchronises and destroys it; cuda-core a new `Replay`'s first run, synchronised and dropped |
//! | `alloc_free_1k` | allocate and free 1 KiB, stream-ordered, from the default pool (batched; cuda-core's pool wrapped with `from_raw`, which keeps no small buffers) |
//! | `alloc_churn` | the same through cuda-core's default resource, whose stream keeps the freed buffer for the next allocation |
//! | `copy_htod_4k`, `copy_dtoh_4k` | copy 4 KiB between a `Vec` and the device on a stream, then synchronise |
//! | `copy_htod_4k_other_stream` | the same copy into a buffer of another stream, in stream order: raw records an event on the buffer's stream, the copy's stream waits on it, copies, records, the buffer's stream waits on that, and the copy's stream synchronises (what cuda-core and cudarc do by themselves) |
//! | `alloc_free_1k_device_pool`, `_pinned_pool`, `_pinned_numa_pool`, `_managed_pool` | allocate and free 1 KiB, stream-ordered, from a pool of each kind made by cuda-core (batched; raw calls the driver on the same pool's handle; the release threshold raised so that no batch returns memory to the system) |
//! | `ipc_import` | import a buffer another process (the `ipc_exporter` example) exported, release it, and wait for the release: raw `cuMemPoolImportPointer`, `cuMemFreeAsync`, `cuStreamSynchronize` on cuda-core's imported pool; cuda-core `import_buffer` and a drop (the next import waits for the release) |
//! | `copy_single_1000` | 1000 copies of 64 bytes between 1000 pairs of buffers, one `cuMemcpyAsync` each (cuda-core: `Buffer::copy_to`), then synchronise |
//! | `copy_batch_1000` | the same 1000 copies in one `cuMemcpyBatchAsync` (cuda-core: a `CopyBatch` built once and submitted), then synchronise |
//! | `copy_batch_1000_build` | the same, with the batch made anew each time (raw: its three arrays filled again; cuda-core: a new `CopyBatch` and its checks) |
//! | `tensor_map_encode` | encode a tiled tensor map of a 1024 x 1024 `f32` matrix in 32 x 32 boxes with the 128-byte swizzle (raw: `cuTensorMapEncodeTiled` into a descriptor on the stack; cuda-core: `TensorMap::tiled` over a buffer, every rule checked, the buffer's `Arc` taken and dropped; no cudarc equivalent) |
//! | `tensor_map_encode_layout` | the same encoding through cuda-core's `TensorMap::with_layout`, the layout checked once before (`TensorMapLayout`): per map only the buffer's device, the address's alignment and the tensor's extent are checked |
//!
//! "Batched" cases queue [`common::BATCH`] operations per timed batch and synchronise the
//! stream after it, outside the timed part; the time reported is per operation.
//!
//! cudarc has no equivalent of `device_current` or `device_by_ordinal` (it has no device type:
//! the nearest, `CudaContext::new`, also retains the primary context and reads attributes) and
//! none of `launch_cluster`, `launch_attrs` or the PDL chains (its launch builder has no
//! `cuLaunchKernelEx`); those variants are
//! left out.
//!
//! Everything each variant uses (the primary context, three streams, events, two libraries and
//! one module of the same cubin, buffers) is made before the first group runs, so every case
//! meets the same driver state in each variant. That matters: on the H200 an idle
//! `cuStreamSynchronize` measured 190 ns in a fresh context, but 1.3 us once a module was
//! loaded and `cuMemAlloc` had run.

#[path = "../common/mod.rs"]
mod common;

mod copy_batch;
mod device;
mod diagnose;
mod graph;
mod ipc;
mod launch;
mod memory;
mod pdl;
mod pools;
mod replay;
mod seed;
mod setup;
mod stream_event;
mod tensor_map;

use copy_batch::*;
use device::*;
use diagnose::*;
use graph::*;
use ipc::*;
use launch::*;
use memory::*;
use pdl::*;
use pools::*;
use replay::*;
use seed::*;
use setup::*;
use stream_event::*;
use tensor_map::*;

use std::ffi::{c_void, CString};
use std::hint::black_box;
use std::ptr::null_mut;
use std::sync::Arc;

use benches::kernels::{
    EMPTY0, EMPTY16, EMPTY4, LAUNCH_KERNELS, PDL_CONSUMER, PDL_KERNELS, PDL_PRODUCER,
};
use benches::raw::{check, Handle, RawDriver, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING, SUCCESS};
use common::{batched, Case};
use criterion::{Bencher, Criterion};
use cuda_core::memory::CopyBatch;
use cuda_core::{
    launch, Allocate, Buffer, CodeType, Device, Event, EventOptions, Kernel, LaunchConfig,
    MemoryResource, Program, ProgramOptions, Stream, StreamOptions,
};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, PushKernelArg,
};

/// Bytes of each buffer: the launch arguments and the copies.
const BUFFER_BYTES: usize = 4096;
/// A page-aligned host buffer for the copy cases.
#[repr(C, align(4096))]
struct HostPage([u8; BUFFER_BYTES]);

/// Bytes of the `alloc_free_1k` allocation.
const ALLOC_BYTES: usize = 1024;
/// The `int` arguments of the 4- and 16-parameter kernels.
const INTS: [i32; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
/// Every plain launch: one block of 32 threads.
const GRID: [u32; 3] = [1, 1, 1];
/// See [`GRID`].
const BLOCK: [u32; 3] = [32, 1, 1];

fn main() {
    let Some(raw) = common::gpu_or_skip("overhead") else {
        return;
    };
    let mut c = common::criterion();
    benches::with_raw!(&raw, |driver| run(&mut c, driver));
    c.final_summary();
}

/// cuda-core's objects.
struct Core {
    device: Device,
    stream: Stream,
    /// A second stream, for work on buffers of the first.
    other: Stream,
    record: Event,
    done: Event,
    memory: Arc<dyn MemoryResource>,
    args: [Buffer; 4],
    copy: Buffer,
    kernels: Option<[Kernel; 3]>,
}

/// The raw driver's objects: plain handles, as in C.
struct RawState {
    context: Handle,
    stream: Handle,
    other: Handle,
    /// Events that order `other` after `stream` and back.
    order: [Handle; 2],
    record: Handle,
    done: Handle,
    pool: Handle,
    args: [u64; 4],
    copy: u64,
    /// `empty0`, `empty4`, `empty16`, as `CUkernel`s of one library.
    kernels: Option<[Handle; 3]>,
}

/// cudarc's objects.
struct Rc {
    context: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    other: Arc<CudaStream>,
    record: CudaEvent,
    done: CudaEvent,
    args: [CudaSlice<f32>; 4],
    copy: CudaSlice<u8>,
    kernels: Option<(Arc<CudaModule>, [CudaFunction; 3])>,
}

fn run<R: RawDriver>(c: &mut Criterion, driver: &R) {
    let device = Device::new(0).expect("device 0");
    device.set_current().expect("making device 0 current");
    let cubin = match Program::new(LAUNCH_KERNELS, ProgramOptions::default())
        .with_name("overhead.cu")
        .compile(CodeType::Cubin, &[])
    {
        Ok(code) => Some(code),
        Err(e) => {
            println!("overhead: cannot compile the launch kernels ({e}); launch cases skipped");
            None
        }
    };

    // Everything is made here, before any group runs (see the crate docs).
    let mut core = core_setup(device, cubin.as_ref());
    let raw = raw_setup(driver, cubin.as_ref().map(|c| c.code()));
    let mut rc = cudarc_setup(cubin.as_ref().map(|c| c.code().to_vec()));
    // One host buffer per variant, so that the variants' closures do not share one; each on a
    // page of its own, so that where a buffer lies cannot make one variant's pageable copy
    // differ from another's (copy_htod_4k measured 1.09 of raw with three unaligned vectors,
    // 1.01 with one shared vector).
    let mut host: [Box<HostPage>; 3] = [(); 3].map(|_| Box::new(HostPage([1u8; BUFFER_BYTES])));

    if std::env::var_os("CUDA_CORE_BENCH_DIAGNOSE").is_some() {
        // SAFETY: `raw.stream` is a stream of device 0's primary context, alive for the run.
        let raw_stream = unsafe { Stream::from_raw(raw.stream, core.device) }.expect("raw stream");
        diagnose(c, driver, &core, &raw, &raw_stream, &mut host);
        return;
    }
    let pdl = pdl_setup(driver, device);
    let graphs = graph_setup(&core, &rc);
    device_cases(c, driver, &core, &raw, &rc);
    stream_event_cases(c, driver, &core, &raw, &rc);
    launch_cases(c, driver, &core, &raw, &rc);
    if let Some(pdl) = &pdl {
        pdl_cases(c, driver, &core, &raw, pdl);
    }
    if let Some(graphs) = &graphs {
        graph_cases(c, driver, &core, &raw, &rc, graphs);
    }
    replay_cases(c, driver, &core, &raw, &rc);
    memory_cases(c, driver, &mut core, &raw, &mut rc, &mut host);
    copy_batch_cases(c, driver, &core, &raw);
    pool_cases(c, driver, &core, &raw);
    ipc_import_case(c, driver, &core, &raw);
    tensor_map_cases(c, driver, &core);
}
