//! `replay_100`, `replay_100_stream` and `replay_100_first`: a pipeline of 100 small kernels
//! whose first kernel's scalar changes on every call.

use super::*;

use cuda_core::Replay;

/// The kernels of each call.
const KERNELS: usize = 100;

/// A raw graph of [`KERNELS`] launches of `empty4`, one after another, and its executable
/// graph: the hand-written capture-and-update loop's.
struct RawChain<'d, R: RawDriver> {
    d: &'d R,
    graph: Handle,
    exec: Handle,
    first: Handle,
}

impl<R: RawDriver> Drop for RawChain<'_, R> {
    fn drop(&mut self) {
        // SAFETY: made in `raw_chain`, destroyed once; no launch of them is queued after.
        unsafe {
            check(self.d.cuGraphExecDestroy(self.exec), "cuGraphExecDestroy");
            check(self.d.cuGraphDestroy(self.graph), "cuGraphDestroy");
        }
    }
}

/// The raw chain: `cuGraphCreate`, 100 `cuGraphAddKernelNode`, `cuGraphInstantiate`.
fn raw_chain<'d, R: RawDriver>(
    d: &'d R,
    raw: &RawState,
    kernel: Handle,
    n: i32,
) -> RawChain<'d, R> {
    let [p0, p1, p2, _] = &raw.args;
    let mut graph = null_mut();
    // SAFETY: out-pointers to locals; a kernel of the loaded library taking exactly these
    // parameters (it touches none of them), in the raw context.
    unsafe {
        check(d.cuGraphCreate(&mut graph), "cuGraphCreate");
        let mut last: Option<Handle> = None;
        let mut first = null_mut();
        for i in 0..KERNELS {
            let mut node = null_mut();
            let deps: Vec<Handle> = last.into_iter().collect();
            check(
                d.cuGraphAddKernelNode(
                    &mut node,
                    graph,
                    &deps,
                    kernel,
                    raw.context,
                    GRID,
                    BLOCK,
                    [arg(p0), arg(p1), arg(p2), arg(&n)].as_mut_ptr(),
                ),
                "cuGraphAddKernelNode",
            );
            if i == 0 {
                first = node;
            }
            last = Some(node);
        }
        let mut exec = null_mut();
        check(d.cuGraphInstantiate(&mut exec, graph), "cuGraphInstantiate");
        RawChain {
            d,
            graph,
            exec,
            first,
        }
    }
}

/// The pipeline through a region: kernel 0 gets `scalar`, the others `n`; with `DECLARED`,
/// the others are declared unchanged (`launch_unchanged`), as the hand-written loop knows
/// them to be, else compared. A constant, so that each body has one kind of launch, as a
/// user's does (a body with both kinds inlines neither).
fn core_run<const DECLARED: bool>(
    region: &mut Replay,
    core: &Core,
    kernel: &Kernel,
    scalar: i32,
    n: i32,
) {
    let [b0, b1, b2, _] = &core.args;
    let config = LaunchConfig::new(GRID, BLOCK);
    region
        .run(&core.stream, |r| {
            // SAFETY: an empty kernel; the buffers outlive the run.
            unsafe { r.launch(&config, kernel, &[b0, b1, b2, &scalar])? };
            for _ in 1..KERNELS {
                // SAFETY: as above; the same buffers and `n` on every run.
                unsafe {
                    if DECLARED {
                        r.launch_unchanged(&config, kernel, &[b0, b1, b2, &n])?;
                    } else {
                        r.launch(&config, kernel, &[b0, b1, b2, &n])?;
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

/// [`core_run`] with a new scalar per call, the stream synchronised after each.
fn core_loop<const DECLARED: bool>(b: &mut Bencher<'_>, core: &Core, kernel: &Kernel, n: i32) {
    let mut region = Replay::new();
    let mut scalar = 0i32;
    b.iter(|| {
        scalar = scalar.wrapping_add(1);
        core_run::<DECLARED>(&mut region, core, kernel, scalar, n);
        core.stream.sync().unwrap();
    });
}

/// The hand-written capture-and-update loop on `kernel` and `stream`: the chain's first node
/// updated with a new scalar (`cuGraphExecKernelNodeSetParams`), the chain launched, the
/// stream synchronised.
fn raw_update_loop<R: RawDriver>(
    b: &mut Bencher<'_>,
    d: &R,
    raw: &RawState,
    kernel: Handle,
    stream: Handle,
    n: i32,
) {
    let chain = raw_chain(d, raw, kernel, n);
    raw_update(b, d, raw, kernel, stream, (chain.exec, chain.first));
}

/// [`raw_update_loop`] on the executable graph and first node of `chain`, wherever it was
/// built.
fn raw_update<R: RawDriver>(
    b: &mut Bencher<'_>,
    d: &R,
    raw: &RawState,
    kernel: Handle,
    stream: Handle,
    (exec, first): (Handle, Handle),
) {
    let mut scalar = 0i32;
    b.iter(|| {
        scalar = scalar.wrapping_add(1);
        raw_update_launch(d, raw, kernel, stream, (exec, first), scalar);
        raw_sync(d, stream);
    });
}

/// The hand-written loop's call, the synchronisation left out: the chain's first node
/// updated with `scalar` (`cuGraphExecKernelNodeSetParams`), the chain launched. Inlined, as
/// the loop was written before.
#[inline(always)]
fn raw_update_launch<R: RawDriver>(
    d: &R,
    raw: &RawState,
    kernel: Handle,
    stream: Handle,
    (exec, first): (Handle, Handle),
    scalar: i32,
) {
    let [p0, p1, p2, _] = &raw.args;
    // SAFETY: the chain's first node, the same kernel and parameters as built; a live
    // executable graph on a live stream.
    unsafe {
        check(
            d.cuGraphExecKernelNodeSetParams(
                exec,
                first,
                kernel,
                raw.context,
                GRID,
                BLOCK,
                [arg(p0), arg(p1), arg(p2), arg(&scalar)].as_mut_ptr(),
            ),
            "cuGraphExecKernelNodeSetParams",
        );
        check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
    }
}

pub(super) fn replay_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
) {
    let (Some(core_k), Some(raw_k), Some((_, rc_k))) = (&core.kernels, &raw.kernels, &rc.kernels)
    else {
        return;
    };
    let n = 1024i32;
    let config = LaunchConfig::new(GRID, BLOCK);
    let rc_config = cudarc::driver::LaunchConfig {
        grid_dim: (GRID[0], GRID[1], GRID[2]),
        block_dim: (BLOCK[0], BLOCK[1], BLOCK[2]),
        shared_mem_bytes: 0,
    };
    let [p0, p1, p2, _] = &raw.args;

    // One call: the first kernel's scalar changed, the pipeline launched, the stream
    // synchronised. Raw: one `cuGraphExecKernelNodeSetParams` and `cuGraphLaunch`; cuda-core
    // declares the 99 launches it knows unchanged, as raw does.
    Case::new("replay_100")
        .variant("raw", |b| {
            raw_update_loop(b, d, raw, raw_k[1], raw.stream, n)
        })
        .variant("cuda-core", |b| core_loop::<true>(b, core, &core_k[1], n))
        .run(c);

    // The same, with every launch compared (`launch`): what a region costs where the body
    // does not say which launches stay the same.
    Case::new("replay_100_checked")
        .variant("raw", |b| {
            raw_update_loop(b, d, raw, raw_k[1], raw.stream, n)
        })
        .variant("cuda-core", |b| core_loop::<false>(b, core, &core_k[1], n))
        .run(c);

    // The same 100 launches queued on the stream one by one, then synchronised: what the
    // region replaces (its target: at most a quarter of raw's time).
    Case::new("replay_100_stream")
        .variant("raw", |b| {
            let mut scalar = 0i32;
            b.iter(|| {
                scalar = scalar.wrapping_add(1);
                for i in 0..KERNELS {
                    let value = if i == 0 { &scalar } else { &n };
                    let mut params = [arg(p0), arg(p1), arg(p2), arg(value)];
                    // SAFETY: as in `launch_4`.
                    let status = unsafe {
                        d.cuLaunchKernel(
                            raw_k[1],
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
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            let [b0, b1, b2, _] = &core.args;
            let mut scalar = 0i32;
            b.iter(|| {
                scalar = scalar.wrapping_add(1);
                for i in 0..KERNELS {
                    let value = if i == 0 { &scalar } else { &n };
                    // SAFETY: an empty kernel; the buffers outlive the run.
                    unsafe { launch(&core.stream, &config, &core_k[1], &[b0, b1, b2, value]) }
                        .unwrap();
                }
                core.stream.sync().unwrap();
            });
        })
        .variant("cudarc", |b| {
            let [s0, s1, s2, _] = &rc.args;
            let mut scalar = 0i32;
            b.iter(|| {
                scalar = scalar.wrapping_add(1);
                for i in 0..KERNELS {
                    let value = if i == 0 { &scalar } else { &n };
                    let mut l = rc.stream.launch_builder(&rc_k[1]);
                    l.arg(s0).arg(s1).arg(s2).arg(value);
                    // SAFETY: an empty kernel; the buffers outlive the run.
                    unsafe { l.launch(rc_config) }.unwrap();
                }
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);

    // The first call: the graph built, instantiated, launched and waited for, then destroyed.
    Case::new("replay_100_first")
        .variant("raw", |b| {
            b.iter(|| {
                let chain = raw_chain(d, raw, raw_k[1], n);
                // SAFETY: a live executable graph on a live stream.
                check(
                    unsafe { d.cuGraphLaunch(chain.exec, raw.stream) },
                    "cuGraphLaunch",
                );
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                let mut region = Replay::new();
                core_run::<true>(&mut region, core, &core_k[1], 1, n);
                core.stream.sync().unwrap();
            });
        })
        .run(c);
}

/// `diag_replay_100` (with `CUDA_CORE_BENCH_DIAGNOSE`): is `replay_100`'s gap to the
/// hand-written loop the region's own work, or the kernel and stream it runs on? The raw loop
/// on cuda-core's kernel and stream (`raw@core-kernel+stream`) does raw's work where
/// cuda-core's graph runs.
pub(super) fn replay_diagnose<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    let (Some(core_k), Some(raw_k)) = (&core.kernels, &raw.kernels) else {
        return;
    };
    let n = 1024i32;
    replay_parts(d, core, raw, &core_k[1], raw_k[1], n);
    Case::new("diag_replay_100")
        .variant("raw", |b| {
            raw_update_loop(b, d, raw, raw_k[1], raw.stream, n)
        })
        .variant("raw@core-kernel+stream", |b| {
            raw_update_loop(b, d, raw, core_k[1].as_raw(), core.stream.as_raw(), n)
        })
        .variant("raw@core-graph", |b| {
            // The chain built through cuda-core's graph builder, whose kernel the graph keeps
            // (a user object), updated and launched raw: is the gap the region's graph?
            use cuda_core::BuildGraph;
            let mut graph = cuda_core::Graph::new(core.device).unwrap();
            let config = LaunchConfig::new(GRID, BLOCK);
            let ptrs: Vec<cuda_core::DevicePtr> = core.args.iter().map(|b| b.ptr()).collect();
            let mut nodes: Vec<cuda_core::GraphNode> = Vec::new();
            for _ in 0..KERNELS {
                let deps: Vec<cuda_core::GraphNode> = nodes.last().cloned().into_iter().collect();
                // SAFETY: an empty kernel; the buffers outlive the graph.
                let node = unsafe {
                    graph.add_kernel(
                        &deps,
                        &config,
                        &core_k[1],
                        &[&ptrs[0], &ptrs[1], &ptrs[2], &n],
                    )
                }
                .unwrap();
                nodes.push(node);
            }
            let exec = graph
                .instantiate(cuda_core::GraphOptions::default())
                .unwrap();
            raw_update(
                b,
                d,
                raw,
                core_k[1].as_raw(),
                core.stream.as_raw(),
                (exec.as_raw(), nodes[0].as_raw()),
            );
        })
        .variant("cuda-core-declared", |b| {
            core_loop::<true>(b, core, &core_k[1], n)
        })
        .variant("cuda-core", |b| core_loop::<false>(b, core, &core_k[1], n))
        .run(c);
}

/// The host's own time of each part of a `replay_100` call, the stream synchronised between
/// calls and not timed: raw's update and launch, the region's run (declared and compared),
/// and a walk over 100 cache lines after the synchronisation (what the region's nodes cost
/// to read once the driver's work has pushed them out). Interleaved call by call; printed as
/// the median and the 10th and 90th percentiles.
fn replay_parts<R: RawDriver>(
    d: &R,
    core: &Core,
    raw: &RawState,
    core_kernel: &Kernel,
    raw_kernel: Handle,
    n: i32,
) {
    use std::time::Instant;
    #[repr(align(64))]
    struct Line([u64; 8]);
    let lines: Vec<Line> = (0..KERNELS as u64).map(|i| Line([i; 8])).collect();
    let chain = raw_chain(d, raw, raw_kernel, n);
    let mut declared = Replay::new();
    let mut compared = Replay::new();
    const CALLS: usize = 4000;
    let mut times = [(); 5].map(|_| Vec::with_capacity(CALLS));
    let mut scalar = 0i32;
    for call in 0..CALLS + 200 {
        scalar = scalar.wrapping_add(1);
        let mut spans = [0u64; 5];
        // Raw: update and launch.
        let start = Instant::now();
        raw_update_launch(
            d,
            raw,
            raw_kernel,
            raw.stream,
            (chain.exec, chain.first),
            scalar,
        );
        spans[0] = start.elapsed().as_nanos() as u64;
        raw_sync(d, raw.stream);
        // The walk, after a synchronisation.
        let start = Instant::now();
        let sum: u64 = lines.iter().map(|l| black_box(l).0[call % 8]).sum();
        spans[1] = start.elapsed().as_nanos() as u64;
        black_box(sum);
        // Idle already: the driver call puts the region's run after driver work, as the
        // other parts are, not right after the walk.
        raw_sync(d, raw.stream);
        let start = Instant::now();
        core_run::<true>(&mut declared, core, core_kernel, scalar, n);
        spans[2] = start.elapsed().as_nanos() as u64;
        core.stream.sync().unwrap();
        let start = Instant::now();
        core_run::<false>(&mut compared, core, core_kernel, scalar, n);
        spans[3] = start.elapsed().as_nanos() as u64;
        core.stream.sync().unwrap();
        // The declared run again, after the compared run and its synchronisation (not after
        // raw's work and the walk, as the first declared run is).
        let start = Instant::now();
        core_run::<true>(&mut declared, core, core_kernel, scalar, n);
        spans[4] = start.elapsed().as_nanos() as u64;
        core.stream.sync().unwrap();
        if call >= 200 {
            for (kept, span) in times.iter_mut().zip(spans) {
                kept.push(span);
            }
        }
    }
    let names = [
        "raw update+launch",
        "walk of 100 lines after a sync",
        "region run, declared",
        "region run, compared",
        "region run, declared (after the compared run's sync)",
    ];
    for (name, kept) in names.iter().zip(times.iter_mut()) {
        kept.sort_unstable();
        let at = |q: usize| kept[kept.len() * q / 100];
        println!(
            "replay part: {name}: median {} ns (p10 {}, p90 {})",
            at(50),
            at(10),
            at(90)
        );
    }
}
