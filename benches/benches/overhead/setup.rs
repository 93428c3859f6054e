//! What each variant's cases use, made before the first case runs.

use super::*;

pub(super) fn core_setup(device: Device, code: Option<&cuda_core::ObjectCode>) -> Core {
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

pub(super) fn raw_setup<R: RawDriver>(d: &R, cubin: Option<&[u8]>) -> RawState {
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

pub(super) fn cudarc_setup(cubin: Option<Vec<u8>>) -> Rc {
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
pub(super) fn arg<T>(value: &T) -> *mut c_void {
    std::ptr::from_ref(value).cast_mut().cast()
}
