//! `launch_0`, `launch_4`, `launch_16` and `launch_cluster`.

use super::*;

pub(super) fn launch_cases<R: RawDriver>(
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

    // The wait after a launch: the raw driver's `cuStreamSynchronize` against cuda-core's
    // `completion()` future, awaited on a thread-parking executor (its task woken by the
    // stream's host function): the future's latency from the kernel's end to the wake.
    Case::new("launch_await")
        .variant("raw", |b| {
            b.iter(|| {
                raw_launch(raw_k[0], &mut []);
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                // SAFETY: an empty kernel of no parameters.
                unsafe { launch(&core.stream, &config, &core_k[0], &[]) }.unwrap();
                block_on(core.stream.completion().unwrap()).unwrap();
            });
        })
        .variant("cudarc", |b| {
            b.iter(|| {
                // SAFETY: an empty kernel of no parameters.
                unsafe { rc.stream.launch_builder(&rc_k[0]).launch(rc_config) }.unwrap();
                rc.stream.synchronize().unwrap();
            });
        })
        .run(c);
}

/// Runs `future` on this thread to its end, parking the thread while it is pending: the
/// smallest executor, as async code on any runtime would wait.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
        std::thread::park();
    }
}
