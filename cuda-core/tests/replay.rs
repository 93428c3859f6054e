//! Replayable regions (`Replay`): a sequence of launches built into a graph once, updated in
//! place where only arguments change, rebuilt where the sequence changes.
//!
//! On the stand-in (both ABIs): what reaches the driver on each run (nodes added once, one
//! node update per changed launch, one graph launch), the kept graphs and their limit, the
//! stream order of buffers of other streams, and what is refused with nothing launched. On the
//! GPU: a ping-pong pipeline whose scalars and buffers change on every run, checked against
//! the CPU after each, and the same sequence through stream launches.

use crate::common;
use crate::common::standin;

use cuda_core::{
    launch, Allocate, CaptureMode, CodeType, Device, Error, Kernel, LaunchConfig, ObjectCode,
    Program, ProgramOptions, Replay, ReplayStats, Stream, StreamOptions,
};

fn on_both_abis(function: &str, body: fn()) {
    for abi in ["13", "12"] {
        standin::run(
            module_path!(),
            function,
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let info = cuda_core::info::driver_info().unwrap();
                assert_eq!(info.abi.major().to_string(), abi, "{info:?}");
                body();
            },
        );
    }
}

/// The calls logged since the last clear whose line starts with `call`.
fn count(call: &str) -> usize {
    standin::log()
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(call))
        .count()
}

fn k1() -> Kernel {
    ObjectCode::from_cubin(standin::cubin())
        .get_kernel("k1")
        .unwrap()
}

/// Runs `values.len()` launches of `kernel`, launch `i` given `values[i]`.
fn run(region: &mut Replay, stream: &Stream, kernel: &Kernel, values: &[u64]) -> Result<(), Error> {
    let config = LaunchConfig::for_elements(1, 1);
    region.run(stream, |r| {
        for value in values {
            // SAFETY: the stand-in runs no kernel.
            unsafe { r.launch(&config, kernel, &[value])? };
        }
        Ok(())
    })
}

/// The stream waits (`cuStreamWaitEvent`) in `log` before its graph launch, and after it.
fn waits_around_the_launch(log: &str) -> (usize, usize) {
    let lines: Vec<&str> = log.lines().collect();
    let launched = lines
        .iter()
        .position(|l| l.starts_with("cuGraphLaunch"))
        .unwrap_or_else(|| panic!("not launched:\n{log}"));
    let waits = |range: &[&str]| {
        range
            .iter()
            .filter(|l| l.starts_with("cuStreamWaitEvent"))
            .count()
    };
    (waits(&lines[..launched]), waits(&lines[launched..]))
}

/// Waits (10 s at most) for the code of a released kernel to be unloaded: the crate's thread
/// drops it once the host function that releases it has run.
fn wait_for_unload() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while count("cuLibraryUnload") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "not unloaded:\n{}",
            standin::log()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn stats(runs: u64, builds: u64, updated_nodes: u64) -> ReplayStats {
    let mut stats = ReplayStats::default();
    stats.runs = runs;
    stats.builds = builds;
    stats.updated_nodes = updated_nodes;
    stats
}

#[test]
fn a_region_is_built_once_and_updated_where_arguments_change() {
    on_both_abis(
        "a_region_is_built_once_and_updated_where_arguments_change",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let kernel = k1();
            let mut region = Replay::new();
            standin::clear_log();

            // The first run builds a chain of three nodes and launches it once.
            run(&mut region, &stream, &kernel, &[10, 11, 12]).unwrap();
            let log = standin::log();
            let adds: Vec<&str> = log
                .lines()
                .filter(|l| l.starts_with("cuGraphAddKernelNode"))
                .collect();
            assert_eq!(adds.len(), 3, "{log}");
            // Catches launches that are not ordered one after another (each after the last).
            for (i, add) in adds.iter().enumerate() {
                let deps = if i == 0 { "deps=0" } else { "deps=1" };
                assert!(add.contains(deps), "{add}");
                assert!(add.contains(&format!("arg0={}", 10 + i)), "{add}");
            }
            assert_eq!(count("cuGraphInstantiateWithFlags"), 1, "{log}");
            assert_eq!(count("cuGraphLaunch"), 1, "{log}");
            assert_eq!(region.stats(), stats(1, 1, 0));

            // The same arguments: the same graph launched, nothing changed (catches updates of
            // unchanged nodes, and rebuilds).
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[10, 11, 12]).unwrap();
            let log = standin::log();
            assert_eq!(count("cuGraphLaunch"), 1, "{log}");
            assert!(!log.contains("cuGraphAddKernelNode"), "{log}");
            assert!(!log.contains("cuGraphExecKernelNodeSetParams"), "{log}");

            // One changed argument: one node updated, with the new value, then launched.
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[10, 77, 12]).unwrap();
            let log = standin::log();
            let sets: Vec<&str> = log
                .lines()
                .filter(|l| l.starts_with("cuGraphExecKernelNodeSetParams"))
                .collect();
            assert_eq!(sets.len(), 1, "{log}");
            assert!(sets[0].contains("arg0=77"), "{}", sets[0]);
            let set_at = log.find("cuGraphExecKernelNodeSetParams").unwrap();
            let launch_at = log.find("cuGraphLaunch").unwrap();
            assert!(set_at < launch_at, "launched before its update:\n{log}");
            assert_eq!(region.stats(), stats(3, 1, 1));

            // Another sequence (four launches): a second graph, the first kept.
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[1, 2, 3, 4]).unwrap();
            assert_eq!(count("cuGraphAddKernelNode"), 4, "{}", standin::log());
            assert_eq!(region.graphs(), 2);
            assert_eq!(region.stats().builds, 2);

            // Back to three: the first graph again, updated from its last arguments (77 -> 11),
            // not rebuilt (catches a region that keeps only its last graph).
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[10, 11, 12]).unwrap();
            let log = standin::log();
            assert!(!log.contains("cuGraphAddKernelNode"), "{log}");
            let sets: Vec<&str> = log
                .lines()
                .filter(|l| l.starts_with("cuGraphExecKernelNodeSetParams"))
                .collect();
            assert!(sets.len() == 1 && sets[0].contains("arg0=11"), "{log}");
            assert_eq!(count("cuGraphLaunch"), 1, "{log}");
            assert_eq!(region.stats().builds, 2);

            // Nothing launched: nothing queued, no graph made.
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[]).unwrap();
            let log = standin::log();
            assert!(
                !log.contains("cuGraphLaunch") && !log.contains("cuGraphCreate"),
                "{log}"
            );
        },
    );
}

#[test]
fn a_regions_kernels_stay_loaded_until_its_last_launch_is_done() {
    on_both_abis(
        "a_regions_kernels_stay_loaded_until_its_last_launch_is_done",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let mut region = Replay::new();
            standin::clear_log();
            {
                // The region's only kernel, of code loaded for it alone, dropped by its
                // caller after two runs.
                let kernel = k1();
                run(&mut region, &stream, &kernel, &[1, 2]).unwrap();
                run(&mut region, &stream, &kernel, &[3, 2]).unwrap();
            }
            let log = standin::log();
            // Catches a region whose graphs do not keep their kernels: unloaded while its
            // launches may still be queued.
            assert_eq!(count("cuLibraryUnload"), 0, "{log}");
            // Catches the graphs keeping their kernels through a driver user object again,
            // whose bookkeeping costs every launch.
            assert_eq!(count("cuUserObjectCreate"), 0, "{log}");

            // The region goes: its executable graph is destroyed, and the kernel is released
            // by a host function queued after its last launch (the stand-in runs host
            // functions when the stream is synchronised).
            standin::clear_log();
            drop(region);
            let log = standin::log();
            let destroyed = log.find("cuGraphExecDestroy").expect(&log);
            let queued = log.find("cuLaunchHostFunc").expect(&log);
            assert!(destroyed < queued, "{log}");
            // Catches a release that does not wait for the last launch.
            assert_eq!(count("cuLibraryUnload"), 0, "{log}");
            stream.sync().unwrap();
            // Catches a kernel never released (the code loaded for good).
            wait_for_unload();
        },
    );
}

/// A region dropped while the stream of its last launch captures: its kernels' release is
/// neither captured nor waited for (either would break the capture), but queued once the
/// capture has ended.
#[test]
fn a_region_dropped_during_a_capture_of_its_stream_releases_its_kernels_after_it() {
    on_both_abis(
        "a_region_dropped_during_a_capture_of_its_stream_releases_its_kernels_after_it",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let mut region = Replay::new();
            run(&mut region, &stream, &k1(), &[1]).unwrap();
            // SAFETY: nothing captured uses memory.
            unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
            standin::clear_log();
            drop(region);
            let log = standin::log();
            // Catches the release queued into the capture (a host function run by every
            // launch of the captured graph), or waited for (refused, and the capture lost).
            assert!(!log.contains("cuLaunchHostFunc"), "{log}");
            assert!(!log.contains("cuStreamSynchronize"), "{log}");
            // The capture is still whole.
            let graph = stream.end_capture().unwrap();
            drop(graph);
            // Catches a release put off for good (the code loaded until the process ends).
            assert_eq!(count("cuLaunchHostFunc"), 1, "{}", standin::log());
            assert_eq!(count("cuLibraryUnload"), 0, "{}", standin::log());
            stream.sync().unwrap();
            wait_for_unload();

            // The stream itself dropped during the capture (which its drop ends): catches a
            // release put off holding the stream, whose capture then never ends (every later
            // capture's end, and the device's synchronisation, waited for it).
            let other = common::stream(device);
            let mut region = Replay::new();
            run(&mut region, &other, &k1(), &[1]).unwrap();
            // SAFETY: nothing captured uses memory.
            unsafe { other.begin_capture(CaptureMode::Global) }.unwrap();
            drop(region);
            standin::clear_log();
            drop(other);
            assert_eq!(count("cuStreamEndCapture"), 1, "{}", standin::log());
            device.sync().unwrap();
        },
    );
}

/// A region keeps no stream alive: a stream it ran on, over a buffer of that stream, and
/// dropped by its caller while it captures, ends its capture as it goes; the region dropped
/// later releases its kernels once the dropped stream's work (the context's) is done.
#[test]
fn a_region_keeps_no_stream_alive() {
    on_both_abis("a_region_keeps_no_stream_alive", || {
        let device = Device::new(0).unwrap();
        let stream = common::stream(device);
        let mut region = Replay::new();
        {
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let kernel = k1();
            for _ in 0..2 {
                region
                    .run(&stream, |r| {
                        // SAFETY: the stand-in runs no kernel.
                        unsafe { r.launch(&LaunchConfig::for_elements(1, 1), &kernel, &[&buffer]) }
                    })
                    .unwrap();
            }
        }
        // SAFETY: nothing captured uses memory.
        unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
        standin::clear_log();
        drop(stream);
        // Catches a region holding the stream (among the streams its graph's buffers were
        // ordered on, or as its last launch's): the capture would stay open where no one can
        // end it, and every synchronisation of the device wait for it for ever.
        assert_eq!(count("cuStreamEndCapture"), 1, "{}", standin::log());
        assert_eq!(count("cuStreamDestroy"), 1, "{}", standin::log());
        device.sync().unwrap();

        standin::clear_log();
        drop(region);
        let log = standin::log();
        // Catches kernels released before the dropped stream's work is done (no stream is
        // left to queue their release on: the context is waited for), or kept for good.
        let synced = log.find("cuCtxSynchronize").expect(&log);
        assert!(
            log.find("cuGraphExecDestroy").expect(&log) < synced,
            "{log}"
        );
        wait_for_unload();
    });
}

#[test]
fn a_region_keeps_at_most_its_capacity_and_refuses_with_nothing_launched() {
    on_both_abis(
        "a_region_keeps_at_most_its_capacity_and_refuses_with_nothing_launched",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let kernel = k1();
            let mut region = Replay::with_capacity(1);
            run(&mut region, &stream, &kernel, &[1]).unwrap();
            standin::clear_log();
            // Alternating sequences with room for one graph: each run builds, and the graph
            // it replaces is destroyed.
            run(&mut region, &stream, &kernel, &[1, 2]).unwrap();
            run(&mut region, &stream, &kernel, &[1]).unwrap();
            let log = standin::log();
            assert_eq!(count("cuGraphExecDestroy"), 2, "{log}");
            assert_eq!(region.graphs(), 1);
            assert_eq!(region.stats().builds, 3);

            standin::clear_log();
            // A body's error: returned, nothing launched.
            let e = region
                .run(&stream, |_| {
                    Err(Error::InvalidArgument {
                        name: "mine",
                        reason: "the body's".to_owned(),
                    })
                })
                .unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "mine", .. }),
                "{e}"
            );
            // A launch refused (a cooperative launch cannot be a node), its error swallowed by
            // the body: the run fails and launches nothing (catches a graph launched without
            // the refused kernel).
            let cooperative = LaunchConfig::for_elements(1, 1).with_cooperative(true);
            let mut refusals = 0;
            let e = region
                .run(&stream, |r| {
                    let value = 5u64;
                    // SAFETY: the stand-in runs no kernel.
                    let refused = unsafe { r.launch(&cooperative, &kernel, &[&value]) };
                    refusals += usize::from(refused.is_err());
                    // SAFETY: as above.
                    unsafe { r.launch(&LaunchConfig::for_elements(1, 1), &kernel, &[&value]) }
                })
                .unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "body", .. }),
                "{e}"
            );
            // Refused in the pass that builds the graph, which checks launches as nodes.
            assert_eq!(refusals, 1);
            // An argument of the wrong size for the kernel: refused where the graph is built.
            let e = region
                .run(&stream, |r| {
                    // SAFETY: as above.
                    unsafe { r.launch(&LaunchConfig::for_elements(1, 1), &kernel, &[&1u32]) }
                })
                .unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            // A capturing stream.
            // SAFETY: nothing is captured: the run is refused before any call.
            unsafe { stream.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
            let e = run(&mut region, &stream, &kernel, &[1]).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: "stream", .. }),
                "{e}"
            );
            let _ = stream.end_capture();
            assert!(
                !standin::log().contains("cuGraphLaunch"),
                "{}",
                standin::log()
            );
        },
    );
}

#[test]
fn a_region_keeps_buffers_of_other_streams_in_stream_order() {
    on_both_abis(
        "a_region_keeps_buffers_of_other_streams_in_stream_order",
        || {
            let device = Device::new(0).unwrap();
            let home = common::stream(device);
            let stream = common::stream(device);
            let kernel = k1();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &home)
                .unwrap();
            let own = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let mut region = Replay::new();
            for (round, arg) in [&own, &buffer, &buffer].into_iter().enumerate() {
                standin::clear_log();
                region
                    .run(&stream, |r| {
                        // SAFETY: the stand-in runs no kernel.
                        unsafe { r.launch(&LaunchConfig::for_elements(1, 1), &kernel, &[arg]) }
                    })
                    .unwrap();
                let log = standin::log();
                let (before, after) = waits_around_the_launch(&log);
                if round == 0 {
                    // A buffer of the run's own stream costs no wait.
                    assert_eq!(before + after, 0, "{log}");
                } else {
                    // The run waits for the buffer's stream, which waits for the run (catches
                    // a region that loses launch's cross-stream order, in a rebuild or a
                    // replay of the same graph).
                    assert!(before >= 1 && after >= 1, "round {round}:\n{log}");
                }
            }
        },
    );
}

/// Launches declared unchanged (`launch_unchanged`) beside one that changes: later runs update
/// only the changed node and launch; a declared launch whose shape differs still
/// starts another sequence; and a run of declared launches over a buffer of another stream
/// stays in that stream's order although its arguments are not read.
#[test]
fn launches_declared_unchanged_are_not_read_but_keep_their_order() {
    on_both_abis(
        "launches_declared_unchanged_are_not_read_but_keep_their_order",
        || {
            let device = Device::new(0).unwrap();
            let home = common::stream(device);
            let stream = common::stream(device);
            let kernel = k1();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &home)
                .unwrap();
            let config = LaunchConfig::for_elements(1, 1);
            let wider = LaunchConfig::for_elements(2, 1);
            let mut region = Replay::new();
            let go = |region: &mut Replay, value: u64, declared: &LaunchConfig| {
                standin::clear_log();
                region
                    .run(&stream, |r| {
                        // SAFETY: the stand-in runs no kernel; the declared launch's argument
                        // is the same buffer on every run.
                        unsafe {
                            r.launch(&config, &kernel, &[&value])?;
                            r.launch_unchanged(declared, &kernel, &[&buffer])
                        }
                    })
                    .unwrap();
                standin::log()
            };
            go(&mut region, 1, &config);
            for value in [2, 3] {
                let log = go(&mut region, value, &config);
                // Catches a declared launch updated anyway, and the changed one not updated.
                assert_eq!(count("cuGraphExecKernelNodeSetParams"), 1, "{log}");
                assert!(log.contains(&format!("arg0={value}")), "{log}");
                assert!(!log.contains("cuGraphAddKernelNode"), "{log}");
                // Catches the home stream's order lost with the unread arguments: the run
                // waits for the buffer's stream, which waits for the run.
                let (before, after) = waits_around_the_launch(&log);
                assert!(before >= 1 && after >= 1, "{log}");
            }
            assert_eq!(region.stats(), stats(3, 1, 2));
            // Another shape in the declared launch: another sequence, built (catches a
            // declaration that skips the shape's comparison too).
            let log = go(&mut region, 3, &wider);
            assert_eq!(count("cuGraphAddKernelNode"), 2, "{log}");
            assert_eq!(region.stats().builds, 2);
        },
    );
}

/// With debug assertions, a launch declared unchanged whose arguments changed is refused and
/// nothing is launched (the graph would have run with the old ones).
#[test]
#[cfg(debug_assertions)]
fn a_declared_unchanged_launch_that_changed_is_refused_in_debug_builds() {
    on_both_abis(
        "a_declared_unchanged_launch_that_changed_is_refused_in_debug_builds",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let kernel = k1();
            let config = LaunchConfig::for_elements(1, 1);
            let mut region = Replay::new();
            let mut cooperative = config;
            cooperative.cooperative = true;
            let mut go = |value: u64, config: &LaunchConfig| {
                region.run(&stream, |r| {
                    // SAFETY: the stand-in runs no kernel (the broken promise is the test).
                    unsafe { r.launch_unchanged(config, &kernel, &[&value]) }
                })
            };
            go(1, &config).unwrap();
            // Changed arguments, then a configuration no node has (which the update pass
            // does not read in release builds).
            for (value, config) in [(2, &config), (1, &cooperative)] {
                standin::clear_log();
                let err = go(value, config).unwrap_err();
                assert!(err.to_string().contains("declared unchanged"), "{err}");
                // Catches a refused run launched anyway, or updated.
                let log = standin::log();
                assert!(!log.contains("cuGraphLaunch"), "{log}");
                assert!(!log.contains("cuGraphExecKernelNodeSetParams"), "{log}");
            }

            // The same bytes with another deallocation stream (as a buffer allocated where a
            // freed one was has): the run would not be ordered with the new stream.
            let home = common::stream(device);
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &home)
                .unwrap();
            let mut region = Replay::new();
            let mut go = |buffer: &cuda_core::Buffer| {
                region.run(&stream, |r| {
                    // SAFETY: as above.
                    unsafe { r.launch_unchanged(&config, &kernel, &[buffer]) }
                })
            };
            go(&buffer).unwrap();
            go(&buffer).unwrap();
            let other = common::stream(device);
            buffer.set_deallocation_stream(&other).unwrap();
            standin::clear_log();
            // Catches a check of bytes alone.
            let err = go(&buffer).unwrap_err();
            assert!(err.to_string().contains("deallocation stream"), "{err}");
            assert!(
                !standin::log().contains("cuGraphLaunch"),
                "{}",
                standin::log()
            );
            // The run's own stream needs no order: taken.
            buffer.set_deallocation_stream(&stream).unwrap();
            go(&buffer).unwrap();
        },
    );
}

// ---- on the GPU -----------------------------------------------------------------------------

const KERNELS: &str = r#"
extern "C" __global__ void scale_into(const float* x, float* y, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + 1.0f;
}
extern "C" __global__ void add_scalar(float* y, float b, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += b;
}
"#;

/// The GPU, a stream of it, and [`KERNELS`]'s `scale_into` and `add_scalar`.
fn pipeline_kernels() -> (Device, Stream, Kernel, Kernel) {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let code = Program::new(KERNELS, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let scale = code.get_kernel("scale_into").unwrap();
    let add = code.get_kernel("add_scalar").unwrap();
    (device, stream, scale, add)
}

/// A ping-pong pipeline whose scalars change on every run and whose buffers swap: each run's
/// result checked against the CPU, and against the same launches queued on a stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_replayed_pipeline_computes_what_stream_launches_compute() {
    let (device, stream, scale, add) = pipeline_kernels();
    let n = 4096u32;
    let memory = device.memory_resource().unwrap();
    let input: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let mut a = memory.allocate(4 * n as usize, &stream).unwrap();
    let b = memory.allocate(4 * n as usize, &stream).unwrap();
    let mut c = memory.allocate(4 * n as usize, &stream).unwrap();
    let config = LaunchConfig::for_elements(u64::from(n), 256);
    let mut region = Replay::new();
    // The CPU's copy of one run: x -> y = s * x + 1, then y += t, three times over, ping-pong.
    let cpu = |x: &[f32], s: f32, t: f32| -> Vec<f32> {
        let mut v = x.to_vec();
        for _ in 0..3 {
            v = v.iter().map(|x| s * x + 1.0 + t).collect();
        }
        v
    };
    for step in 0..6u32 {
        a.copy_from_host(&input, &stream).unwrap();
        let (s, t) = (0.5 + step as f32 * 0.125, step as f32);
        // Odd steps swap the scratch buffers: pointers change too.
        let (p, q) = if step % 2 == 0 { (&b, &c) } else { (&c, &b) };
        region
            .run(&stream, |r| {
                // SAFETY: each kernel reads and writes `n` floats of `n`-float buffers.
                unsafe {
                    r.launch(&config, &scale, &[&a, p, &s, &n])?;
                    r.launch(&config, &add, &[p, &t, &n])?;
                    r.launch(&config, &scale, &[p, q, &s, &n])?;
                    r.launch(&config, &add, &[q, &t, &n])?;
                    r.launch(&config, &scale, &[q, p, &s, &n])?;
                    r.launch(&config, &add, &[p, &t, &n])
                }
            })
            .unwrap();
        let got = p.to_vec::<f32>(&stream).unwrap();
        let want = cpu(&input, s, t);
        // Catches a node left with an earlier run's scalar or buffer (every step changes both
        // scalars; odd steps swap the buffers).
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                "step {step}, element {i}: {g} vs {w}"
            );
        }
    }
    let stats = region.stats();
    assert_eq!((stats.runs, stats.builds), (6, 1), "{stats:?}");
    // Each later run changes two scalars in six launches, and odd or even steps the buffers of
    // all six: at least the scalar nodes are updated, and none when nothing changes.
    assert!(stats.updated_nodes >= 5 * 6, "{stats:?}");
    region
        .run(&stream, |r| {
            let (s, t) = (0.5f32 + 5.0 * 0.125, 5.0f32);
            // SAFETY: as above, the same arguments as the last run.
            unsafe {
                r.launch(&config, &scale, &[&a, &c, &s, &n])?;
                r.launch(&config, &add, &[&c, &t, &n])?;
                r.launch(&config, &scale, &[&c, &b, &s, &n])?;
                r.launch(&config, &add, &[&b, &t, &n])?;
                r.launch(&config, &scale, &[&b, &c, &s, &n])?;
                r.launch(&config, &add, &[&c, &t, &n])
            }
        })
        .unwrap();
    assert_eq!(region.stats().updated_nodes, stats.updated_nodes);

    // The same launches on the stream, one by one: the same result.
    a.copy_from_host(&input, &stream).unwrap();
    let (s, t) = (2.0f32, 3.0f32);
    // SAFETY: as above.
    unsafe {
        launch(&stream, &config, &scale, &[&a, &b, &s, &n]).unwrap();
        launch(&stream, &config, &add, &[&b, &t, &n]).unwrap();
        launch(&stream, &config, &scale, &[&b, &c, &s, &n]).unwrap();
        launch(&stream, &config, &add, &[&c, &t, &n]).unwrap();
        launch(&stream, &config, &scale, &[&c, &b, &s, &n]).unwrap();
        launch(&stream, &config, &add, &[&b, &t, &n]).unwrap();
    }
    let launched = b.to_vec::<f32>(&stream).unwrap();
    c.fill(0u32, &stream).unwrap();
    region
        .run(&stream, |r| {
            // SAFETY: as above.
            unsafe {
                r.launch(&config, &scale, &[&a, &b, &s, &n])?;
                r.launch(&config, &add, &[&b, &t, &n])?;
                r.launch(&config, &scale, &[&b, &c, &s, &n])?;
                r.launch(&config, &add, &[&c, &t, &n])?;
                r.launch(&config, &scale, &[&c, &b, &s, &n])?;
                r.launch(&config, &add, &[&b, &t, &n])
            }
        })
        .unwrap();
    assert_eq!(b.to_vec::<f32>(&stream).unwrap(), launched);

    // The region moved to another thread and run there on a stream of its own, over the same
    // buffers (whose deallocation stream is `stream`): the same result, in their stream order
    // (catches a run on another stream that races the buffers' own stream).
    a.copy_from_host(&input, &stream).unwrap();
    c.fill(0u32, &stream).unwrap();
    let other = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mine = device.create_stream(StreamOptions::default()).unwrap();
                region
                    .run(&mine, |r| {
                        // SAFETY: as above.
                        unsafe {
                            r.launch(&config, &scale, &[&a, &b, &s, &n])?;
                            r.launch(&config, &add, &[&b, &t, &n])?;
                            r.launch(&config, &scale, &[&b, &c, &s, &n])?;
                            r.launch(&config, &add, &[&c, &t, &n])?;
                            r.launch(&config, &scale, &[&c, &b, &s, &n])?;
                            r.launch(&config, &add, &[&b, &t, &n])
                        }
                    })
                    .unwrap();
                region.stats()
            })
            .join()
            .unwrap()
    });
    // Read on the buffers' own stream, with no synchronisation of the other: the crate's order.
    assert_eq!(b.to_vec::<f32>(&stream).unwrap(), launched);
    assert_eq!(other.builds, 1, "{other:?}");
    drop((a, b, c));
    stream.sync().unwrap();
}

/// A pipeline whose scaling changes on every run and whose additions are declared unchanged
/// (`launch_unchanged`): each run's result matches the CPU. Catches a declared node that loses
/// its arguments, and a changed node left with an earlier run's scalar.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_pipeline_with_launches_declared_unchanged_computes_right() {
    let (device, stream, scale, add) = pipeline_kernels();
    let n = 2048u32;
    let memory = device.memory_resource().unwrap();
    let input: Vec<f32> = (0..n).map(|i| (i % 31) as f32).collect();
    let mut x = memory.allocate(4 * n as usize, &stream).unwrap();
    x.copy_from_host(&input, &stream).unwrap();
    let y = memory.allocate(4 * n as usize, &stream).unwrap();
    let config = LaunchConfig::for_elements(u64::from(n), 256);
    let t = 0.5f32;
    let mut region = Replay::new();
    for step in 0..4u32 {
        let s = 1.0 + step as f32;
        region
            .run(&stream, |r| {
                // SAFETY: each kernel reads and writes `n` floats of `n`-float buffers; the
                // declared launches get the same `y`, `t` and `n` on every run.
                unsafe {
                    r.launch(&config, &scale, &[&x, &y, &s, &n])?;
                    r.launch_unchanged(&config, &add, &[&y, &t, &n])?;
                    r.launch_unchanged(&config, &add, &[&y, &t, &n])
                }
            })
            .unwrap();
        let got = y.to_vec::<f32>(&stream).unwrap();
        for (i, (g, x)) in got.iter().zip(&input).enumerate() {
            let want = s * x + 1.0 + 2.0 * t;
            assert!(
                (g - want).abs() <= 1e-4 * want.abs().max(1.0),
                "step {step}, element {i}: {g} vs {want}"
            );
        }
    }
    let stats = region.stats();
    // One build; each later run updates the scaling node only.
    assert_eq!(
        (stats.runs, stats.builds, stats.updated_nodes),
        (4, 1, 3),
        "{stats:?}"
    );
}

/// W11: a run whose node update fails leaves nothing staged for the next run. Run 2 changes
/// both launches' arguments and its first node update fails; run 3 changes only the second:
/// it updates that node alone, to its own value. Bug caught: the failed run's staged
/// arguments stayed, and run 3 applied them first (the first node got run 2's value, which may
/// name a buffer freed since).
#[test]
fn a_failed_update_leaves_nothing_staged_for_the_next_run() {
    on_both_abis(
        "a_failed_update_leaves_nothing_staged_for_the_next_run",
        || {
            let device = Device::new(0).unwrap();
            let stream = common::stream(device);
            let kernel = k1();
            let mut region = Replay::new();
            run(&mut region, &stream, &kernel, &[10, 11]).unwrap();
            standin::fail_node_sets(1);
            assert!(run(&mut region, &stream, &kernel, &[20, 21]).is_err());
            standin::clear_log();
            run(&mut region, &stream, &kernel, &[10, 31]).unwrap();
            let sets: Vec<String> = standin::log()
                .lines()
                .filter(|l| l.starts_with("cuGraphExecKernelNodeSetParams"))
                .map(str::to_owned)
                .collect();
            assert_eq!(sets.len(), 1, "{sets:?}");
            assert!(sets[0].ends_with("arg0=31"), "{sets:?}");
            stream.sync().unwrap();
        },
    );
}
