//! `device_current`, `device_by_ordinal` and `set_current`.

use super::*;

pub(super) fn device_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
) {
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
