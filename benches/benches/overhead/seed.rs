//! `seed_call`: the nvmath-python call pattern.

use super::*;

/// `seed_call`: one call of a library built the nvmath-python way: check the current device,
/// make a start and an end event with timing, record the start, launch the kernel, record the
/// end, wait for it and read the elapsed time, then drop the events. Raw makes fresh events
/// each call, as the C programmer's code does; cuda-core's come from its recycling.
pub(super) fn seed_call<R: RawDriver>(
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
