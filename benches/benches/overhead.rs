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
//! | `launch_cluster` | `cuLaunchKernelEx` of an empty kernel, grid 2 in one 2-block cluster (batched) |
//! | `launch_attrs` | `cuLaunchKernelEx` of an empty kernel with programmatic stream serialization and the highest priority (batched) |
//! | `pdl_chain` | a producer kernel (5 us of work after letting its dependent launch) and a consumer launched with programmatic dependent launch, then the stream synchronised |
//! | `pdl_chain_plain` | the same two launches without programmatic dependent launch |
//! | `graph_launch` | launch an instantiated graph of one empty kernel (batched; raw launches cuda-core's executable graph through the table) |
//! | `graph_chain_100` | launch a graph of 100 empty kernels one after another, then synchronise |
//! | `stream_chain_100` | the same 100 launches on the stream, then synchronise |
//! | `graph_instantiate` | instantiate the 100-node graph and destroy the result |
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

mod common;

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
use cuda_core::CopyBatch;
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
    // differ from another's (the run of 2026-11-30 had copy_htod_4k at 1.09 with three
    // unaligned vectors, 1.01 before with one shared vector).
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
    memory_cases(c, driver, &mut core, &raw, &mut rc, &mut host);
    copy_batch_cases(c, driver, &core, &raw);
    pool_cases(c, driver, &core, &raw);
    ipc_import_case(c, driver, &core, &raw);
    tensor_map_cases(c, driver, &core);
}

/// A graph of one empty-kernel launch, captured and instantiated by cuda-core (the raw
/// variant launches the same executable graph through the table) and by cudarc.
struct Graphs {
    core: cuda_core::GraphExec,
    rc: cudarc::driver::CudaGraph,
    /// 100 launches of the empty kernel, one after another, captured by cuda-core.
    chain: cuda_core::Graph,
    chain_exec: cuda_core::GraphExec,
    /// The same chain captured by cudarc.
    rc_chain: cudarc::driver::CudaGraph,
}

/// The kernels of the chain cases.
const CHAIN: usize = 100;

fn graph_setup(core: &Core, rc: &Rc) -> Option<Graphs> {
    let (Some(core_k), Some((_, rc_k))) = (&core.kernels, &rc.kernels) else {
        return None;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    // SAFETY: nothing is allocated or freed on the stream while it captures; the kernel takes
    // no parameters.
    let exec = unsafe {
        core.stream
            .begin_capture(cuda_core::CaptureMode::ThreadLocal)
            .expect("capturing");
        launch(&core.stream, &config, &core_k[0], &[]).expect("a captured launch");
        core.stream
            .end_capture()
            .expect("a captured graph")
            .instantiate(cuda_core::GraphOptions::default())
            .expect("an executable graph")
    };
    exec.upload(&core.stream).expect("uploading");
    // SAFETY: as above.
    let chain = unsafe {
        core.stream
            .begin_capture(cuda_core::CaptureMode::ThreadLocal)
            .expect("capturing");
        for _ in 0..CHAIN {
            launch(&core.stream, &config, &core_k[0], &[]).expect("a captured launch");
        }
        core.stream.end_capture().expect("a captured graph")
    };
    let chain_exec = chain
        .instantiate(cuda_core::GraphOptions::default())
        .expect("an executable graph");
    chain_exec.upload(&core.stream).expect("uploading");
    let rc_capture = |launches: usize| {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        rc.stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .expect("cudarc: capturing");
        let rc_config = cudarc::driver::LaunchConfig {
            grid_dim: (GRID[0], GRID[1], GRID[2]),
            block_dim: (BLOCK[0], BLOCK[1], BLOCK[2]),
            shared_mem_bytes: 0,
        };
        for _ in 0..launches {
            // SAFETY: an empty kernel of no parameters.
            unsafe { rc.stream.launch_builder(&rc_k[0]).launch(rc_config) }
                .expect("cudarc: a launch");
        }
        let graph = rc
            .stream
            .end_capture(CUgraphInstantiate_flags(0))
            .expect("cudarc: a graph")
            .expect("cudarc: a graph of its launches");
        graph.upload().expect("cudarc: uploading");
        graph
    };
    let rc_graph = rc_capture(1);
    let rc_chain = rc_capture(CHAIN);
    core.stream.sync().expect("synchronising");
    rc.stream.synchronize().expect("cudarc: synchronising");
    Some(Graphs {
        core: exec,
        rc: rc_graph,
        chain,
        chain_exec,
        rc_chain,
    })
}

/// `graph_launch`: launch an instantiated graph of one empty kernel (batched).
fn graph_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
    graphs: &Graphs,
) {
    let exec = graphs.core.as_raw();
    Case::new("graph_launch")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: a live executable graph of device 0, on a live stream.
                    check(
                        unsafe { d.cuGraphLaunch(exec, raw.stream) },
                        "cuGraphLaunch",
                    );
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: the graph's kernel outlives the run and takes no parameters.
                || graphs.core.launch(&core.stream).unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            batched(
                b,
                || graphs.rc.launch().unwrap(),
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    // One iteration: the chain of 100 empty kernels, then a synchronisation; per kernel is
    // the time over 100.
    let chain_exec = graphs.chain_exec.as_raw();
    Case::new("graph_chain_100")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: a live executable graph of device 0, on a live stream.
                check(
                    unsafe { d.cuGraphLaunch(chain_exec, raw.stream) },
                    "cuGraphLaunch",
                );
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                // SAFETY: the graph's kernel outlives the run and takes no parameters.
                graphs.chain_exec.launch(&core.stream).unwrap();
                core.stream.sync().unwrap();
            });
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                graphs.rc_chain.launch().unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);
    let (Some(core_k), Some(raw_k), Some((_, rc_k))) = (&core.kernels, &raw.kernels, &rc.kernels)
    else {
        return;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    let rc_config = cudarc::driver::LaunchConfig {
        grid_dim: (GRID[0], GRID[1], GRID[2]),
        block_dim: (BLOCK[0], BLOCK[1], BLOCK[2]),
        shared_mem_bytes: 0,
    };
    Case::new("stream_chain_100")
        .variant("raw", |b| {
            b.iter(|| {
                for _ in 0..CHAIN {
                    // SAFETY: an empty kernel of no parameters, on a live stream.
                    let status = unsafe {
                        d.cuLaunchKernel(
                            raw_k[0],
                            GRID[0],
                            GRID[1],
                            GRID[2],
                            BLOCK[0],
                            BLOCK[1],
                            BLOCK[2],
                            0,
                            raw.stream,
                            null_mut(),
                            null_mut(),
                        )
                    };
                    check(status, "cuLaunchKernel");
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                for _ in 0..CHAIN {
                    // SAFETY: an empty kernel of no parameters.
                    unsafe { launch(&core.stream, &config, &core_k[0], &[]) }.unwrap();
                }
                core.stream.sync().unwrap();
            });
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                for _ in 0..CHAIN {
                    // SAFETY: an empty kernel of no parameters.
                    unsafe { rc.stream.launch_builder(&rc_k[0]).launch(rc_config) }.unwrap();
                }
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);

    // Instantiating (and destroying) the 100-node graph.
    let chain = graphs.chain.as_raw();
    Case::new("graph_instantiate")
        .variant("raw", |b| {
            b.iter(|| {
                let mut exec = null_mut();
                // SAFETY: a live graph of the current context, a writable out-pointer; the
                // executable graph is destroyed once.
                unsafe {
                    check(d.cuGraphInstantiate(&mut exec, chain), "cuGraphInstantiate");
                    check(d.cuGraphExecDestroy(exec), "cuGraphExecDestroy");
                }
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                drop(black_box(
                    graphs
                        .chain
                        .instantiate(cuda_core::GraphOptions::default())
                        .unwrap(),
                ))
            });
        })
        // cudarc: no equivalent (it instantiates only at the end of a capture).
        .run(c);
}

/// The producer and consumer of [`PDL_KERNELS`], for cuda-core and as raw `CUkernel`s of a
/// library of the same cubin, with the device's highest launch priority; `None` (the PDL
/// cases skipped) before compute capability 9.0.
struct Pdl {
    core: [Kernel; 2],
    raw: [Handle; 2],
    priority: i32,
}

fn pdl_setup<R: RawDriver>(d: &R, device: Device) -> Option<Pdl> {
    match device.compute_capability() {
        Ok((major, _)) if major >= 9 => {}
        other => {
            println!("overhead: launch_attrs and pdl_chain need compute capability 9.0 ({other:?}); skipped");
            return None;
        }
    }
    let code = match Program::new(PDL_KERNELS, ProgramOptions::default())
        .with_name("pdl.cu")
        .compile(CodeType::Cubin, &[])
    {
        Ok(code) => code,
        Err(e) => {
            println!("overhead: cannot compile the PDL kernels ({e}); skipped");
            return None;
        }
    };
    let names = [PDL_PRODUCER, PDL_CONSUMER];
    let core = names.map(|name| code.get_kernel(name).expect("a PDL kernel"));
    let mut library = null_mut();
    let mut raw = [null_mut(); 2];
    // SAFETY: writable out-pointers; the image is a cubin, alive for the call; the library is
    // kept loaded for the run.
    unsafe {
        check(
            d.cuLibraryLoadData(&mut library, code.code().as_ptr().cast()),
            "cuLibraryLoadData",
        );
        for (kernel, name) in raw.iter_mut().zip(names) {
            let name = CString::new(name).expect("a kernel name");
            check(
                d.cuLibraryGetKernel(kernel, library, name.as_ptr()),
                "cuLibraryGetKernel",
            );
        }
    }
    let (_, priority) = device.stream_priority_range().expect("the priority range");
    Some(Pdl {
        core,
        raw,
        priority,
    })
}

/// `launch_attrs` (a launch with programmatic serialization and priority attributes), and
/// `pdl_chain` / `pdl_chain_plain` (a producer and its consumer launched, then the stream
/// synchronised: with and without programmatic dependent launch).
fn pdl_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState, pdl: &Pdl) {
    let (Some(core_k), Some(raw_k)) = (&core.kernels, &raw.kernels) else {
        return;
    };
    let attributed = LaunchConfig::new(GRID, BLOCK)
        .with_programmatic_serialization(true)
        .with_priority(pdl.priority);
    Case::new("launch_attrs")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: an empty kernel of no parameters, on a live stream.
                    let status = unsafe {
                        d.cuLaunchKernelEx_pdl(
                            raw_k[0],
                            GRID,
                            BLOCK,
                            Some(pdl.priority),
                            raw.stream,
                            null_mut(),
                        )
                    };
                    check(status, "cuLaunchKernelEx");
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &attributed, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        // cudarc: no equivalent (its launch builder has no cuLaunchKernelEx or attributes).
        .run(c);

    // 8 blocks of 128 threads over the 1024 u32s of two 4 KiB argument buffers.
    let (grid, block, n) = ([8, 1, 1], [128, 1, 1], 1024u32);
    let chain_config = LaunchConfig::new(grid, block);
    for programmatic in [true, false] {
        let name = if programmatic {
            "pdl_chain"
        } else {
            "pdl_chain_plain"
        };
        let consumer_config = chain_config.with_programmatic_serialization(programmatic);
        Case::new(name)
            .variant("raw", |b| {
                let [data, out, _, _] = &raw.args;
                b.iter(|| {
                    // SAFETY: 1024 u32s in each buffer, alive for the run, on a live stream.
                    unsafe {
                        let mut first = [arg(data), arg(&n)];
                        check(
                            d.cuLaunchKernel(
                                pdl.raw[0],
                                grid[0],
                                grid[1],
                                grid[2],
                                block[0],
                                block[1],
                                block[2],
                                0,
                                raw.stream,
                                first.as_mut_ptr(),
                                null_mut(),
                            ),
                            "cuLaunchKernel",
                        );
                        let mut second = [arg(data), arg(out), arg(&n)];
                        let status = if programmatic {
                            d.cuLaunchKernelEx_pdl(
                                pdl.raw[1],
                                grid,
                                block,
                                None,
                                raw.stream,
                                second.as_mut_ptr(),
                            )
                        } else {
                            d.cuLaunchKernel(
                                pdl.raw[1],
                                grid[0],
                                grid[1],
                                grid[2],
                                block[0],
                                block[1],
                                block[2],
                                0,
                                raw.stream,
                                second.as_mut_ptr(),
                                null_mut(),
                            )
                        };
                        check(status, "cuLaunchKernel(Ex)");
                    }
                    raw_sync(d, raw.stream);
                });
            })
            .variant("cuda-core", |b| {
                let [data, out, _, _] = &core.args;
                b.iter(|| {
                    // SAFETY: 1024 u32s in each buffer, alive for the run.
                    unsafe {
                        launch(&core.stream, &chain_config, &pdl.core[0], &[data, &n]).unwrap();
                        launch(
                            &core.stream,
                            &consumer_config,
                            &pdl.core[1],
                            &[data, out, &n],
                        )
                        .unwrap();
                    }
                    core.stream.sync().unwrap();
                });
            })
            // cudarc: no equivalent (no programmatic dependent launch).
            .run(c);
    }
}

fn core_setup(device: Device, code: Option<&cuda_core::ObjectCode>) -> Core {
    let stream = device
        .create_stream(StreamOptions::default())
        .expect("a stream");
    let other = device
        .create_stream(StreamOptions::default())
        .expect("a stream");
    let memory = device.memory_resource().expect("the default memory pool");
    let buffer = || {
        memory
            .allocate(BUFFER_BYTES, &stream)
            .expect("a 4 KiB buffer")
    };
    let args = [buffer(), buffer(), buffer(), buffer()];
    let copy = buffer();
    let kernels = code.map(|code| {
        [EMPTY0, EMPTY4, EMPTY16].map(|name| code.get_kernel(name).expect("a launch kernel"))
    });
    let record = device.create_event(EventOptions::default()).expect("event");
    let done = device.create_event(EventOptions::default()).expect("event");
    stream.record(&done).expect("recording");
    stream.sync().expect("synchronising");
    Core {
        device,
        stream,
        other,
        record,
        done,
        memory,
        args,
        copy,
        kernels,
    }
}

fn raw_setup<R: RawDriver>(d: &R, cubin: Option<&[u8]>) -> RawState {
    let mut s = RawState {
        context: null_mut(),
        stream: null_mut(),
        other: null_mut(),
        order: [null_mut(); 2],
        record: null_mut(),
        done: null_mut(),
        pool: null_mut(),
        args: [0; 4],
        copy: 0,
        kernels: None,
    };
    let mut device = 0;
    // SAFETY: every out-pointer is a writable local or field; handles passed in come from the
    // calls before them.
    unsafe {
        check(d.cuDeviceGet(&mut device, 0), "cuDeviceGet");
        check(
            d.cuDevicePrimaryCtxRetain(&mut s.context, device),
            "cuDevicePrimaryCtxRetain",
        );
        check(d.cuCtxSetCurrent(s.context), "cuCtxSetCurrent");
        check(
            d.cuStreamCreate(&mut s.stream, STREAM_NON_BLOCKING),
            "cuStreamCreate",
        );
        check(
            d.cuStreamCreate(&mut s.other, STREAM_NON_BLOCKING),
            "cuStreamCreate",
        );
        for event in &mut s.order {
            check(
                d.cuEventCreate(event, EVENT_DISABLE_TIMING),
                "cuEventCreate",
            );
        }
        check(
            d.cuEventCreate(&mut s.record, EVENT_DISABLE_TIMING),
            "cuEventCreate",
        );
        check(
            d.cuEventCreate(&mut s.done, EVENT_DISABLE_TIMING),
            "cuEventCreate",
        );
        check(
            d.cuDeviceGetDefaultMemPool(&mut s.pool, device),
            "cuDeviceGetDefaultMemPool",
        );
        for ptr in s.args.iter_mut().chain([&mut s.copy]) {
            check(
                d.cuMemAllocFromPoolAsync(ptr, BUFFER_BYTES, s.pool, s.stream),
                "cuMemAllocFromPoolAsync",
            );
        }
        if let Some(cubin) = cubin {
            let mut library = null_mut();
            check(
                d.cuLibraryLoadData(&mut library, cubin.as_ptr().cast()),
                "cuLibraryLoadData",
            );
            let mut kernels = [null_mut(); 3];
            for (kernel, name) in kernels.iter_mut().zip([EMPTY0, EMPTY4, EMPTY16]) {
                let name = CString::new(name).expect("a kernel name");
                check(
                    d.cuLibraryGetKernel(kernel, library, name.as_ptr()),
                    "cuLibraryGetKernel",
                );
            }
            s.kernels = Some(kernels);
        }
        check(d.cuEventRecord(s.done, s.stream), "cuEventRecord");
        check(d.cuStreamSynchronize(s.stream), "cuStreamSynchronize");
    }
    s
}

fn cudarc_setup(cubin: Option<Vec<u8>>) -> Rc {
    let context = CudaContext::new(0).expect("cudarc: device 0");
    let stream = context.new_stream().expect("cudarc: a stream");
    let other = context.new_stream().expect("cudarc: a stream");
    let slice = || {
        stream
            .alloc_zeros::<f32>(BUFFER_BYTES / 4)
            .expect("cudarc: a buffer")
    };
    let args = [slice(), slice(), slice(), slice()];
    let copy = stream
        .alloc_zeros::<u8>(BUFFER_BYTES)
        .expect("cudarc: a buffer");
    let kernels = cubin.map(|cubin| {
        let module = context
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .expect("cudarc: loading the cubin");
        let functions = [EMPTY0, EMPTY4, EMPTY16]
            .map(|name| module.load_function(name).expect("cudarc: a launch kernel"));
        (module, functions)
    });
    let record = context.new_event(None).expect("cudarc: an event");
    let done = context.new_event(None).expect("cudarc: an event");
    done.record(&stream).expect("cudarc: recording");
    stream.synchronize().expect("cudarc: synchronising");
    Rc {
        context,
        stream,
        other,
        record,
        done,
        args,
        copy,
        kernels,
    }
}

/// A kernel argument as the driver takes it: the address of the value.
fn arg<T>(value: &T) -> *mut c_void {
    std::ptr::from_ref(value).cast_mut().cast()
}

fn device_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState, rc: &Rc) {
    Case::new("device_current")
        .variant("raw", |b| {
            b.iter(|| {
                let mut context = null_mut();
                let mut device = 0;
                // SAFETY: writable out-pointers.
                unsafe {
                    check(d.cuCtxGetCurrent(&mut context), "cuCtxGetCurrent");
                    if !context.is_null() {
                        check(d.cuCtxGetDevice(&mut device), "cuCtxGetDevice");
                    }
                }
                black_box(device)
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(Device::current().unwrap()));
        })
        // cudarc: no equivalent (it has no device type or current-device query).
        .run(c);

    Case::new("device_by_ordinal")
        .variant("raw", |b| {
            b.iter(|| {
                let mut device = 0;
                // SAFETY: a writable out-pointer.
                let status = unsafe { d.cuDeviceGet(&mut device, black_box(0)) };
                check(status, "cuDeviceGet");
                black_box(device)
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(Device::new(black_box(0)).unwrap()));
        })
        // cudarc: no equivalent; `CudaContext::new` also retains the primary context and reads an
        // attribute.
        .run(c);

    Case::new("set_current")
        .variant("raw", |b| {
            // SAFETY: the primary context, retained in `raw_setup` and never released.
            b.iter(|| check(unsafe { d.cuCtxSetCurrent(raw.context) }, "cuCtxSetCurrent"));
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.device.set_current().unwrap());
        })
        // cudarc's way to make its context current; it reads the current context first and skips
        // `cuCtxSetCurrent` when it already is current (as it is here).
        .variant("cudarc", |b| {
            b.iter(|| rc.context.bind_to_thread().unwrap());
        })
        .run(c);
}

fn stream_event_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
) {
    Case::new("stream_churn")
        .variant("raw", |b| {
            b.iter(|| {
                let mut stream = null_mut();
                // SAFETY: a writable out-pointer, then the stream just made.
                unsafe {
                    check(
                        d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
                        "cuStreamCreate",
                    );
                    check(d.cuStreamDestroy(stream), "cuStreamDestroy");
                }
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_stream(StreamOptions::default()).unwrap()));
        })
        .variant("cudarc", |b| {
            b.iter(|| drop(rc.context.new_stream().unwrap()));
        })
        .run(c);

    Case::new("event_churn")
        .variant("raw", |b| b.iter(|| raw_event_create_destroy(d, false)))
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_event(EventOptions::default()).unwrap()));
        })
        // `None` is cudarc's default: timing disabled.
        .variant("cudarc", |b| {
            b.iter(|| drop(rc.context.new_event(None).unwrap()));
        })
        .run(c);

    Case::new("event_record")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: an event and a stream of the current context, both alive.
                    let status = unsafe { d.cuEventRecord(raw.record, raw.stream) };
                    check(status, "cuEventRecord");
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                || core.stream.record(&core.record).unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            batched(
                b,
                || rc.record.record(&rc.stream).unwrap(),
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    Case::new("event_query")
        .variant("raw", |b| {
            // SAFETY: an event recorded and completed in `raw_setup`.
            b.iter(|| black_box(unsafe { d.cuEventQuery(raw.done) } == SUCCESS));
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(core.done.is_done().unwrap()));
        })
        .variant("cudarc", |b| {
            b.iter(|| black_box(rc.done.try_is_complete().unwrap()));
        })
        .run(c);

    Case::new("stream_sync_idle")
        .variant("raw", |b| b.iter(|| raw_sync(d, raw.stream)))
        .variant("cuda-core", |b| b.iter(|| core.stream.sync().unwrap()))
        .variant("cudarc", |b| b.iter(|| rc.stream.synchronize().unwrap()))
        .run(c);
}

/// With `CUDA_CORE_BENCH_DIAGNOSE` set, instead of the cases: where does cuda-core's extra
/// time in `launch_*`, `event_create_destroy` and `copy_dtoh_4k` go? Each launch case crosses
/// the variants with the streams (`raw@core-stream`: the raw call on cuda-core's stream;
/// `cuda-core@raw-stream`: cuda-core on the raw stream, wrapped), event creation adds a raw
/// variant that also reads the current context first, as cuda-core does, and the copy runs
/// the raw call on cuda-core's memory, then on its memory and stream.
fn diagnose<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    raw_stream: &Stream,
    host: &mut [Box<HostPage>; 3],
) {
    // Is `copy_dtoh_4k`'s gap the memory or the stream each variant uses rather than the
    // call? `raw@core-memory` is the raw call on cuda-core's host page and device buffer,
    // `raw@core-memory+stream` that on cuda-core's stream too.
    // Raw pointers: two variants write cuda-core's page; they run one at a time.
    let [raw_page, core_page, _] = host.each_mut().map(|page| page.0.as_mut_ptr());
    let core_stream = core.stream.as_raw();
    let raw_dtoh = |host, device_ptr, stream| {
        // SAFETY: for each call below, `HostPage`s and device buffers alive for the run, each
        // page written by one variant at a time, on streams of the primary context.
        unsafe { raw_dtoh(d, host, device_ptr, stream) }
    };
    Case::new("diag_copy_dtoh_4k")
        .variant("raw", |b| {
            b.iter(|| raw_dtoh(raw_page, raw.copy, raw.stream))
        })
        .variant("raw@core-memory", |b| {
            b.iter(|| raw_dtoh(core_page, core.copy.ptr().0, raw.stream))
        })
        .variant("raw@core-memory+stream", |b| {
            b.iter(|| raw_dtoh(core_page, core.copy.ptr().0, core_stream))
        })
        .variant("cuda-core", |b| {
            // SAFETY: as above; no other reference to the page is in use meanwhile.
            let page = unsafe { std::slice::from_raw_parts_mut(core_page, BUFFER_BYTES) };
            b.iter(|| core.copy.copy_to_host(page, &core.stream).unwrap());
        })
        .run(c);

    Case::new("diag_event_create_destroy")
        .variant("raw", |b| b.iter(|| raw_event_create_destroy(d, false)))
        .variant("raw+get-current", |b| {
            b.iter(|| raw_event_create_destroy(d, true))
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_event(EventOptions::default()).unwrap()));
        })
        .run(c);

    let (Some(core_k), Some(raw_k)) = (&core.kernels, &raw.kernels) else {
        return;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    let n = 1024i32;
    let raw_launch = |kernel: Handle, stream: Handle, params: &mut [*mut c_void]| {
        // SAFETY: as in `launch_cases`.
        let status = unsafe {
            d.cuLaunchKernel(
                kernel,
                GRID[0],
                GRID[1],
                GRID[2],
                BLOCK[0],
                BLOCK[1],
                BLOCK[2],
                0,
                stream,
                params.as_mut_ptr(),
                null_mut(),
            )
        };
        check(status, "cuLaunchKernel");
    };
    let [p0, p1, p2, _] = &raw.args;
    let [b0, b1, b2, _] = &core.args;
    Case::new("diag_launch_4")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        raw_k[1],
                        raw.stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    )
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-stream", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        raw_k[1],
                        core_stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    )
                },
                || raw_sync(d, core_stream),
            );
        })
        .variant("raw-kernel@core-kernel", |b| {
            batched(
                b,
                || {
                    raw_launch(
                        core_k[1].as_raw(),
                        raw.stream,
                        &mut [arg(p0), arg(p1), arg(p2), arg(&n)],
                    );
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel; the buffers outlive the run.
                || unsafe { launch(&core.stream, &config, &core_k[1], &[b0, b1, b2, &n]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                // SAFETY: as above.
                || unsafe { launch(raw_stream, &config, &core_k[1], &[b0, b1, b2, &n]) }.unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);

    let cluster = [2, 1, 1];
    let clustered = LaunchConfig::new(cluster, BLOCK).with_cluster(cluster);
    let raw_cluster = |kernel: Handle, stream: Handle| {
        // SAFETY: an empty kernel of no parameters, two blocks in one cluster.
        let status = unsafe {
            d.cuLaunchKernelEx_cluster(kernel, cluster, BLOCK, cluster, stream, null_mut())
        };
        check(status, "cuLaunchKernelEx");
    };
    Case::new("diag_launch_cluster")
        .variant("raw", |b| {
            batched(
                b,
                || raw_cluster(raw_k[0], raw.stream),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("raw@core-stream", |b| {
            batched(
                b,
                || raw_cluster(raw_k[0], core_stream),
                || raw_sync(d, core_stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &clustered, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cuda-core@raw-stream", |b| {
            batched(
                b,
                // SAFETY: as above.
                || unsafe { launch(raw_stream, &clustered, &core_k[0], &[]) }.unwrap(),
                || raw_stream.sync().unwrap(),
            );
        })
        .run(c);
}

/// A raw event without timing, made and destroyed; `read_current` first reads the current
/// context, as cuda-core does to make sure of the event's context.
#[inline(always)]
fn raw_event_create_destroy<R: RawDriver>(d: &R, read_current: bool) {
    let (mut event, mut context) = (null_mut(), null_mut());
    // SAFETY: writable out-pointers, then the event just made.
    unsafe {
        if read_current {
            check(d.cuCtxGetCurrent(&mut context), "cuCtxGetCurrent");
            black_box(context);
        }
        check(
            d.cuEventCreate(&mut event, EVENT_DISABLE_TIMING),
            "cuEventCreate",
        );
        check(d.cuEventDestroy(event), "cuEventDestroy");
    }
}

/// `cuStreamSynchronize`, checked.
#[inline(always)]
/// The raw `copy_dtoh_4k`: 4 KiB from `device_ptr` into `host` on `stream`, then a synchronise.
///
/// # Safety
///
/// `host` is 4 KiB of writable memory that nothing else uses meanwhile, `device_ptr` a live
/// device buffer of 4 KiB, and `stream` a live stream of the current context.
unsafe fn raw_dtoh<R: RawDriver>(d: &R, host: *mut u8, device_ptr: u64, stream: Handle) {
    // SAFETY: as the caller promises; the synchronise ends the copy before returning.
    let status = unsafe { d.cuMemcpyDtoHAsync(host.cast(), device_ptr, BUFFER_BYTES, stream) };
    check(status, "cuMemcpyDtoHAsync");
    raw_sync(d, stream);
}

fn raw_sync<R: RawDriver>(d: &R, stream: Handle) {
    // SAFETY: a stream made in `raw_setup`, alive for the whole run.
    let status = unsafe { d.cuStreamSynchronize(stream) };
    check(status, "cuStreamSynchronize");
}

fn launch_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState, rc: &Rc) {
    let (Some(core_k), Some(raw_k), Some((_, rc_k))) = (&core.kernels, &raw.kernels, &rc.kernels)
    else {
        return;
    };
    let config = LaunchConfig::new(GRID, BLOCK);
    let rc_config = cudarc::driver::LaunchConfig {
        grid_dim: (GRID[0], GRID[1], GRID[2]),
        block_dim: (BLOCK[0], BLOCK[1], BLOCK[2]),
        shared_mem_bytes: 0,
    };
    let n = 1024i32;

    // The raw launch of `kernel` with `params`, one block of 32 threads.
    let raw_launch = |kernel: Handle, params: &mut [*mut c_void]| {
        // SAFETY: a kernel of the loaded library taking exactly these parameters (it touches
        // none of them), on a live stream.
        let status = unsafe {
            d.cuLaunchKernel(
                kernel,
                GRID[0],
                GRID[1],
                GRID[2],
                BLOCK[0],
                BLOCK[1],
                BLOCK[2],
                0,
                raw.stream,
                params.as_mut_ptr(),
                null_mut(),
            )
        };
        check(status, "cuLaunchKernel");
    };

    Case::new("launch_0")
        .variant("raw", |b| {
            batched(
                b,
                || raw_launch(raw_k[0], &mut []),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &config, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            batched(
                b,
                || {
                    // SAFETY: an empty kernel of no parameters.
                    unsafe { rc.stream.launch_builder(&rc_k[0]).launch(rc_config) }.unwrap();
                },
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    seed_call(c, d, core, raw, rc, &config, rc_config);

    Case::new("launch_4")
        .variant("raw", |b| {
            let [p0, p1, p2, _] = &raw.args;
            batched(
                b,
                || raw_launch(raw_k[1], &mut [arg(p0), arg(p1), arg(p2), arg(&n)]),
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            let [b0, b1, b2, _] = &core.args;
            batched(
                b,
                // SAFETY: an empty kernel; the buffers outlive the run.
                || unsafe { launch(&core.stream, &config, &core_k[1], &[b0, b1, b2, &n]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            let [s0, s1, s2, _] = &rc.args;
            batched(
                b,
                || {
                    let mut l = rc.stream.launch_builder(&rc_k[1]);
                    l.arg(s0).arg(s1).arg(s2).arg(&n);
                    // SAFETY: an empty kernel; the buffers outlive the run.
                    unsafe { l.launch(rc_config) }.unwrap();
                },
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    Case::new("launch_16")
        .variant("raw", |b| {
            let [p0, p1, p2, p3] = &raw.args;
            let i = &INTS;
            batched(
                b,
                || {
                    raw_launch(
                        raw_k[2],
                        &mut [
                            arg(p0),
                            arg(p1),
                            arg(p2),
                            arg(p3),
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
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            let [b0, b1, b2, b3] = &core.args;
            let i = &INTS;
            batched(
                b,
                || {
                    // SAFETY: an empty kernel; the buffers outlive the run.
                    unsafe {
                        launch(
                            &core.stream,
                            &config,
                            &core_k[2],
                            &[
                                b0, b1, b2, b3, &i[0], &i[1], &i[2], &i[3], &i[4], &i[5], &i[6],
                                &i[7], &i[8], &i[9], &i[10], &i[11],
                            ],
                        )
                    }
                    .unwrap();
                },
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            let [s0, s1, s2, s3] = &rc.args;
            batched(
                b,
                || {
                    let mut l = rc.stream.launch_builder(&rc_k[2]);
                    l.arg(s0).arg(s1).arg(s2).arg(s3);
                    for i in &INTS {
                        l.arg(i);
                    }
                    // SAFETY: an empty kernel; the buffers outlive the run.
                    unsafe { l.launch(rc_config) }.unwrap();
                },
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    match core.device.compute_capability() {
        Ok((major, _)) if major >= 9 => {}
        Ok((major, minor)) => {
            println!(
                "overhead: launch_cluster needs compute capability 9.0 (device 0 is \
                 {major}.{minor}); skipped"
            );
            return;
        }
        Err(e) => {
            println!("overhead: launch_cluster: compute capability unknown ({e}); skipped");
            return;
        }
    }
    let cluster = [2, 1, 1];
    let cluster_grid = [2, 1, 1];
    let clustered = LaunchConfig::new(cluster_grid, BLOCK).with_cluster(cluster);
    Case::new("launch_cluster")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: an empty kernel of no parameters, two blocks in one cluster, on a
                    // live stream.
                    let status = unsafe {
                        d.cuLaunchKernelEx_cluster(
                            raw_k[0],
                            cluster_grid,
                            BLOCK,
                            cluster,
                            raw.stream,
                            null_mut(),
                        )
                    };
                    check(status, "cuLaunchKernelEx");
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                // SAFETY: an empty kernel of no parameters.
                || unsafe { launch(&core.stream, &clustered, &core_k[0], &[]) }.unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        // cudarc: no equivalent (its launch builder has no cuLaunchKernelEx or clusters).
        .run(c);
}

/// Raw's batched allocation and free of `ALLOC_BYTES` from the default pool (both allocation
/// cases: `alloc_churn` measures cuda-core's stream cache against the same raw calls).
fn raw_alloc_free<R: RawDriver>(b: &mut Bencher<'_>, d: &R, raw: &RawState) {
    batched(
        b,
        || {
            let mut ptr = 0;
            // SAFETY: a writable out-pointer, the default pool and a live stream; the
            // allocation is freed once, in order on the same stream.
            unsafe {
                check(
                    d.cuMemAllocFromPoolAsync(&mut ptr, ALLOC_BYTES, raw.pool, raw.stream),
                    "cuMemAllocFromPoolAsync",
                );
                check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
            }
        },
        || raw_sync(d, raw.stream),
    );
}

/// cudarc's batched allocation and free of `ALLOC_BYTES`.
fn cudarc_alloc_free(b: &mut Bencher<'_>, rc: &Rc) {
    batched(
        b,
        // SAFETY: the memory is never read (cudarc marks `alloc` unsafe for that).
        || drop(unsafe { rc.stream.alloc::<u8>(ALLOC_BYTES) }.unwrap()),
        || rc.stream.synchronize().unwrap(),
    );
}

fn memory_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &mut Core,
    raw: &RawState,
    rc: &mut Rc,
    host: &mut [Box<HostPage>; 3],
) {
    let [raw_host, core_host, rc_host] = host.each_mut().map(|page| &mut page.0);
    // The default pool wrapped by `from_raw`, which keeps no small buffers: the same driver
    // work as raw's.
    let default = cuda_core::DeviceMemoryResource::default_pool(core.device).expect("the pool");
    // SAFETY: the device's default pool, alive for the whole process.
    let wrapped =
        unsafe { cuda_core::DeviceMemoryResource::from_raw(default.as_raw(), core.device) }
            .expect("the wrapped pool");
    Case::new("alloc_free_1k")
        .variant("raw", |b| raw_alloc_free(b, d, raw))
        .variant("cuda-core", |b| {
            batched(
                b,
                || drop(wrapped.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| cudarc_alloc_free(b, rc))
        .run(c);

    Case::new("alloc_churn")
        .variant("raw", |b| raw_alloc_free(b, d, raw))
        .variant("cuda-core", |b| {
            batched(
                b,
                || drop(core.memory.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| cudarc_alloc_free(b, rc))
        .run(c);

    Case::new("copy_htod_4k")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: 4 KiB of host memory alive across the synchronise, into a 4 KiB buffer.
                unsafe {
                    check(
                        d.cuMemcpyHtoDAsync(
                            raw.copy,
                            raw_host.as_ptr().cast(),
                            BUFFER_BYTES,
                            raw.stream,
                        ),
                        "cuMemcpyHtoDAsync",
                    );
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_from_host(core_host, &core.stream).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.stream.memcpy_htod(rc_host, &mut rc.copy).unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);

    Case::new("copy_htod_4k_other_stream")
        .variant("raw", |b| {
            b.iter(|| {
                let [before, after] = raw.order;
                // SAFETY: handles made in setup; 4 KiB of host memory alive across the
                // synchronise, into a 4 KiB buffer of `raw.stream`, ordered after its work
                // and before its later work.
                unsafe {
                    check(d.cuEventRecord(before, raw.stream), "cuEventRecord");
                    check(d.cuStreamWaitEvent(raw.other, before), "cuStreamWaitEvent");
                    check(
                        d.cuMemcpyHtoDAsync(
                            raw.copy,
                            raw_host.as_ptr().cast(),
                            BUFFER_BYTES,
                            raw.other,
                        ),
                        "cuMemcpyHtoDAsync",
                    );
                    check(d.cuEventRecord(after, raw.other), "cuEventRecord");
                    check(d.cuStreamWaitEvent(raw.stream, after), "cuStreamWaitEvent");
                }
                raw_sync(d, raw.other);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_from_host(core_host, &core.other).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.other.memcpy_htod(rc_host, &mut rc.copy).unwrap();
                rc.other.synchronize().unwrap();
            });
        })
        .run(c);
    Case::new("copy_dtoh_4k")
        .variant("raw", |b| {
            // SAFETY: the variant's own page and the raw buffer, alive for the run, on the raw
            // stream.
            b.iter(|| unsafe { raw_dtoh(d, raw_host.as_mut_ptr(), raw.copy, raw.stream) });
        })
        .variant("cuda-core", |b| {
            b.iter(|| core.copy.copy_to_host(core_host, &core.stream).unwrap());
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                rc.stream.memcpy_dtoh(&rc.copy, rc_host).unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);
}

/// `seed_call`: one call of a library built the nvmath-python way: check the current device,
/// make a start and an end event with timing, record the start, launch the kernel, record the
/// end, wait for it and read the elapsed time, then drop the events. Raw makes fresh events
/// each call, as the C programmer's code does; cuda-core's come from its recycling.
fn seed_call<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
    config: &LaunchConfig,
    rc_config: cudarc::driver::LaunchConfig,
) {
    let (Some(core_k), Some(raw_k), Some((_, rc_k))) = (&core.kernels, &raw.kernels, &rc.kernels)
    else {
        return;
    };
    Case::new("seed_call")
        .variant("raw", |b| {
            b.iter(|| {
                let (mut context, mut device) = (null_mut(), 0);
                let (mut start, mut end) = (null_mut(), null_mut());
                let mut ms = 0.0f32;
                // SAFETY: writable out-pointers; the events are used only between their
                // creation and destruction here; an empty kernel of no parameters.
                unsafe {
                    check(d.cuCtxGetCurrent(&mut context), "cuCtxGetCurrent");
                    check(d.cuCtxGetDevice(&mut device), "cuCtxGetDevice");
                    black_box(device);
                    check(d.cuEventCreate(&mut start, 0), "cuEventCreate");
                    check(d.cuEventCreate(&mut end, 0), "cuEventCreate");
                    check(d.cuEventRecord(start, raw.stream), "cuEventRecord");
                    let status = d.cuLaunchKernel(
                        raw_k[0],
                        GRID[0],
                        GRID[1],
                        GRID[2],
                        BLOCK[0],
                        BLOCK[1],
                        BLOCK[2],
                        0,
                        raw.stream,
                        null_mut(),
                        null_mut(),
                    );
                    check(status, "cuLaunchKernel");
                    check(d.cuEventRecord(end, raw.stream), "cuEventRecord");
                    check(d.cuEventSynchronize(end), "cuEventSynchronize");
                    check(
                        d.cuEventElapsedTime(&mut ms, start, end),
                        "cuEventElapsedTime",
                    );
                    check(d.cuEventDestroy(start), "cuEventDestroy");
                    check(d.cuEventDestroy(end), "cuEventDestroy");
                }
                black_box(ms)
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                black_box(Device::current().unwrap());
                let start = core.device.create_event(EventOptions::timing()).unwrap();
                let end = core.device.create_event(EventOptions::timing()).unwrap();
                core.stream.record(&start).unwrap();
                // SAFETY: an empty kernel of no parameters.
                unsafe { launch(&core.stream, config, &core_k[0], &[]) }.unwrap();
                core.stream.record(&end).unwrap();
                end.sync().unwrap();
                black_box(end.elapsed_since(&start).unwrap())
            });
        })
        .variant("cudarc", |b| {
            let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
            b.iter(|| {
                rc.context.bind_to_thread().unwrap();
                let start = rc.context.new_event(timing).unwrap();
                let end = rc.context.new_event(timing).unwrap();
                start.record(&rc.stream).unwrap();
                // SAFETY: an empty kernel of no parameters.
                unsafe { rc.stream.launch_builder(&rc_k[0]).launch(rc_config) }.unwrap();
                end.record(&rc.stream).unwrap();
                end.synchronize().unwrap();
                black_box(start.elapsed_ms(&end).unwrap())
            });
        })
        .run(c);
}

/// Copies of the copy-batch cases, and the bytes of each.
const BATCH_COPIES: usize = 1000;
const BATCH_COPY_BYTES: usize = 64;

/// `copy_single_1000`, `copy_batch_1000` and `copy_batch_1000_build`: 1000 copies of 64 bytes
/// between 1000 pairs of buffers of the default pool (each variant its own), then the stream
/// synchronised. Skipped on drivers without `cuMemcpyBatchAsync` (before 12.8).
fn copy_batch_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    if !d.has_memcpy_batch() {
        println!("overhead: the driver has no cuMemcpyBatchAsync; the copy batch cases skipped");
        return;
    }
    let allocate = || -> Vec<Buffer> {
        (0..BATCH_COPIES)
            .map(|_| {
                core.memory
                    .allocate(BATCH_COPY_BYTES, &core.stream)
                    .unwrap()
            })
            .collect()
    };
    let sources = allocate();
    let mut targets = allocate();
    let raw_buffers = || -> Vec<u64> {
        (0..BATCH_COPIES)
            .map(|_| {
                let mut ptr = 0;
                // SAFETY: a writable out-pointer, the pool and stream of `raw_setup`.
                let status = unsafe {
                    d.cuMemAllocFromPoolAsync(&mut ptr, BATCH_COPY_BYTES, raw.pool, raw.stream)
                };
                check(status, "cuMemAllocFromPoolAsync");
                ptr
            })
            .collect()
    };
    let (mut raw_srcs, mut raw_dsts) = (raw_buffers(), raw_buffers());
    let mut raw_sizes = vec![BATCH_COPY_BYTES; BATCH_COPIES];
    raw_sync(d, raw.stream);
    core.stream.sync().unwrap();

    Case::new("copy_single_1000")
        .variant("raw", |b| {
            b.iter(|| {
                for (&dst, &src) in raw_dsts.iter().zip(&raw_srcs) {
                    // SAFETY: two live 64-byte allocations of the raw pool.
                    let status = unsafe { d.cuMemcpyAsync(dst, src, BATCH_COPY_BYTES, raw.stream) };
                    check(status, "cuMemcpyAsync");
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                for (src, dst) in sources.iter().zip(targets.iter_mut()) {
                    src.copy_to(dst, &core.stream).unwrap();
                }
                core.stream.sync().unwrap();
            });
        })
        .run(c);

    let mut prebuilt = CopyBatch::with_capacity(&core.stream, BATCH_COPIES);
    for (src, dst) in sources.iter().zip(targets.iter_mut()) {
        prebuilt.copy_whole(src, dst).unwrap();
    }
    Case::new("copy_batch_1000")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: 1000 entries in each array, live allocations of the raw pool.
                let status = unsafe {
                    d.cuMemcpyBatchAsync(
                        raw_dsts.as_mut_ptr(),
                        raw_srcs.as_mut_ptr(),
                        raw_sizes.as_mut_ptr(),
                        BATCH_COPIES,
                        raw.stream,
                    )
                };
                check(status, "cuMemcpyBatchAsync");
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                prebuilt.submit().unwrap();
                core.stream.sync().unwrap();
            });
        })
        .run(c);
    drop(prebuilt);

    let (mut dsts, mut srcs, mut sizes) = (
        vec![0u64; BATCH_COPIES],
        vec![0u64; BATCH_COPIES],
        vec![0usize; BATCH_COPIES],
    );
    Case::new("copy_batch_1000_build")
        .variant("raw", |b| {
            b.iter(|| {
                for i in 0..BATCH_COPIES {
                    dsts[i] = black_box(raw_dsts[i]);
                    srcs[i] = black_box(raw_srcs[i]);
                    sizes[i] = black_box(BATCH_COPY_BYTES);
                }
                // SAFETY: as in `copy_batch_1000`.
                let status = unsafe {
                    d.cuMemcpyBatchAsync(
                        dsts.as_mut_ptr(),
                        srcs.as_mut_ptr(),
                        sizes.as_mut_ptr(),
                        BATCH_COPIES,
                        raw.stream,
                    )
                };
                check(status, "cuMemcpyBatchAsync");
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                let mut batch = CopyBatch::with_capacity(&core.stream, BATCH_COPIES);
                for (src, dst) in sources.iter().zip(targets.iter_mut()) {
                    batch.copy_whole(src, dst).unwrap();
                }
                batch.submit().unwrap();
                core.stream.sync().unwrap();
            });
        })
        .run(c);

    for ptr in raw_srcs.iter().chain(&raw_dsts) {
        // SAFETY: allocations of the raw pool, freed once, after the last copy.
        check(
            unsafe { d.cuMemFreeAsync(*ptr, raw.stream) },
            "cuMemFreeAsync",
        );
    }
    raw_sync(d, raw.stream);
}

/// `alloc_free_1k` of each pool kind the device and driver have: cuda-core's allocation and
/// drop against raw's `cuMemAllocFromPoolAsync` and `cuMemFreeAsync` on the same pool.
fn pool_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    use cuda_core::{
        DeviceMemoryResource, DeviceMemoryResourceOptions, ManagedMemoryPool,
        ManagedMemoryPoolOptions, PinnedMemoryPool, PinnedMemoryPoolOptions,
    };
    let device = core.device;
    let mut kinds: Vec<(&'static str, Arc<dyn MemoryResource>, Handle)> = Vec::new();
    match DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()) {
        Ok(pool) => {
            pool.set_release_threshold(u64::MAX)
                .expect("the release threshold");
            let handle = pool.as_raw();
            kinds.push(("alloc_free_1k_device_pool", pool, handle));
        }
        Err(e) => println!("overhead: alloc_free_1k_device_pool skipped ({e})"),
    }
    for (name, options) in [
        (
            "alloc_free_1k_pinned_pool",
            PinnedMemoryPoolOptions::default(),
        ),
        (
            "alloc_free_1k_pinned_numa_pool",
            PinnedMemoryPoolOptions::default().with_numa_node(0),
        ),
    ] {
        match PinnedMemoryPool::new(device, options) {
            Ok(pool) => {
                pool.set_release_threshold(u64::MAX)
                    .expect("the release threshold");
                let handle = pool.as_raw();
                kinds.push((name, pool, handle));
            }
            Err(e) => println!("overhead: {name} skipped ({e})"),
        }
    }
    match ManagedMemoryPool::new(device, ManagedMemoryPoolOptions::default()) {
        Ok(pool) => {
            pool.set_release_threshold(u64::MAX)
                .expect("the release threshold");
            let handle = pool.as_raw();
            kinds.push(("alloc_free_1k_managed_pool", pool, handle));
        }
        Err(e) => println!("overhead: alloc_free_1k_managed_pool skipped ({e})"),
    }
    for (name, pool, handle) in &kinds {
        let handle = *handle;
        Case::new(name)
            .variant("raw", |b| {
                batched(
                    b,
                    || {
                        let mut ptr = 0;
                        // SAFETY: a writable out-pointer, a live pool whose memory the raw
                        // stream's device may use, and a live stream; the allocation is freed
                        // once, in order on the same stream.
                        unsafe {
                            check(
                                d.cuMemAllocFromPoolAsync(
                                    &mut ptr,
                                    ALLOC_BYTES,
                                    handle,
                                    raw.stream,
                                ),
                                "cuMemAllocFromPoolAsync",
                            );
                            check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
                        }
                    },
                    || raw_sync(d, raw.stream),
                );
            })
            .variant("cuda-core", |b| {
                batched(
                    b,
                    || drop(pool.allocate(ALLOC_BYTES, &core.stream).unwrap()),
                    || core.stream.sync().unwrap(),
                );
            })
            .run(c);
    }
}

/// `ipc_import`: a buffer of another process (the `ipc_exporter` example), imported and
/// released, per buffer.
fn ipc_import_case<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    use std::io::Read;
    use std::os::unix::net::UnixListener;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use cuda_core::{BufferDescriptor, ImportedPool, SharedPoolHandle};

    let exporter = match benches::locate::example("ipc_exporter") {
        Ok(path) => path,
        Err(why) => {
            println!(
                "overhead: ipc_import: {why} (build it with `cargo build --release -p benches \
                 --example ipc_exporter`); skipped"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("socket");
    let listener = UnixListener::bind(&path).expect("a Unix socket");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let mut child = Command::new(&exporter)
        .arg(&path)
        .stdin(Stdio::null())
        .spawn()
        .expect("the exporter starts");
    // Wait for it to connect, or to fail.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut socket = loop {
        match listener.accept() {
            Ok((socket, _)) => break socket,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    println!("overhead: ipc_import: the exporter ended ({status}); skipped");
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    println!("overhead: ipc_import: the exporter never connected; skipped");
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accepting the exporter: {e}"),
        }
    };
    socket.set_nonblocking(false).expect("a blocking socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    let handle = SharedPoolHandle::recv(&socket).expect("the exporter's pool");
    let mut bytes = [0u8; BufferDescriptor::BYTES];
    socket
        .read_exact(&mut bytes)
        .expect("the buffer's descriptor");
    let descriptor = BufferDescriptor::from_bytes(&bytes).expect("a descriptor");
    let pool = ImportedPool::import(core.device, handle).expect("importing the pool");
    let export_data: [u8; 64] = bytes[32..96].try_into().expect("64 bytes of export data");
    let raw_pool = pool.as_raw();
    Case::new("ipc_import")
        .variant("raw", |b| {
            let mut data = export_data;
            b.iter(|| {
                let mut ptr = 0;
                // SAFETY: a writable out-pointer, the imported pool, 64 bytes of export data
                // the driver made; the import is released once, and the release waited for
                // before the next import.
                unsafe {
                    check(
                        d.cuMemPoolImportPointer(&mut ptr, raw_pool, data.as_mut_ptr()),
                        "cuMemPoolImportPointer",
                    );
                    check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(pool.import_buffer(&descriptor, &core.stream).unwrap()));
            // The last release done before raw imports the same buffer.
            core.stream.sync().unwrap();
        })
        .run(c);
    drop(pool);
    drop(socket);
    let _ = child.wait();
}

/// `tensor_map_encode`: the encoding of a tiled tensor map, raw and through cuda-core (which
/// checks every rule, makes the buffer's context current where it is not, and holds the
/// buffer). cudarc has no tensor maps.
fn tensor_map_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core) {
    use cuda_core::{TensorDataType, TensorMap, TensorMapSwizzle, TiledOptions};

    /// A `CUtensorMap`'s bytes, aligned as the driver needs.
    #[repr(C, align(128))]
    struct Descriptor([u64; 16]);

    const N: u64 = 1024;
    let matrix = Arc::new(
        core.memory
            .allocate((N * N * 4) as usize, &core.stream)
            .expect("the matrix"),
    );
    let options = TiledOptions::new(TensorDataType::F32, &[N, N], &[32, 32])
        .with_swizzle(TensorMapSwizzle::B128);
    // The same call, field by field: CU_TENSOR_MAP_DATA_TYPE_FLOAT32 (7), rank 2, packed rows,
    // element strides 1, no interleave, CU_TENSOR_MAP_SWIZZLE_128B (3), no L2 promotion, zero
    // fill.
    let (dims, strides, boxes, element_strides) = ([N, N], [N * 4], [32u32, 32], [1u32, 1]);
    let mut out = Descriptor([0; 16]);
    let address = matrix.ptr().0 as *mut c_void;
    Case::new("tensor_map_encode")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: a 128-byte aligned descriptor, arrays of the rank's length.
                let status = unsafe {
                    d.cuTensorMapEncodeTiled(
                        (&mut out as *mut Descriptor).cast(),
                        7,
                        2,
                        address,
                        dims.as_ptr(),
                        strides.as_ptr(),
                        boxes.as_ptr(),
                        element_strides.as_ptr(),
                        0,
                        3,
                        0,
                        0,
                    )
                };
                check(status, "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(TensorMap::tiled(&matrix, 0, &options).unwrap()));
        })
        .run(c);
}
