//! `graph_launch`, `graph_chain_100`, `stream_chain_100` and `graph_instantiate`.

use super::*;

/// A graph of one empty-kernel launch, captured and instantiated by cuda-core (the raw
/// variant launches the same executable graph through the table) and by cudarc.
pub(super) struct Graphs {
    core: cuda_core::GraphExec,
    rc: cudarc::driver::CudaGraph,
    /// 100 launches of the empty kernel, one after another, captured by cuda-core.
    chain: cuda_core::Graph,
    chain_exec: cuda_core::GraphExec,
    /// The same chain captured by cudarc.
    rc_chain: cudarc::driver::CudaGraph,
}

/// The kernels of the chain cases.
pub(super) const CHAIN: usize = 100;

pub(super) fn graph_setup(core: &Core, rc: &Rc) -> Option<Graphs> {
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
pub(super) fn graph_cases<R: RawDriver>(
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
