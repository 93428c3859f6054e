//! DLPack: tensors of a producer written here (host memory filed as pinned, so that the
//! import path runs without a GPU) imported, checked and released; exports read by a C
//! consumer compiled at run time (`tests/dlpack/consumer.c`), on the host, on the stand-in
//! driver and on the GPU; in-process round trips on the GPU.

use crate::common;
use crate::common::standin;

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use cuda_core::dlpack::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor,
    DlpackTensor, Element, FLAG_READ_ONLY,
};
use cuda_core::{
    launch,
    memory::{ManagedMemoryResource, PinnedMemoryResource},
    Allocate, CaptureMode, CodeType, Device, Error, LaunchConfig, Program, ProgramOptions, Stream,
    StreamOptions, StridedView, ViewMemory,
};

// ---- a producer ------------------------------------------------------------------------

/// A tensor made here as another framework would make one: the struct, its arrays and its
/// data in one box that the deleter frees, counting its calls.
#[repr(C)]
struct Produced {
    managed: DLManagedTensorVersioned,
    data: Vec<f32>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    released: Arc<AtomicUsize>,
}

unsafe extern "C" fn release_produced(tensor: *mut DLManagedTensorVersioned) {
    // SAFETY: the context is the box `produce` leaked, taken back once.
    let produced = unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Produced>()) };
    produced.released.fetch_add(1, Ordering::SeqCst);
}

/// What a produced tensor says about itself, changed per test.
#[derive(Clone)]
struct Spec {
    version: (u32, u32),
    device: DLDevice,
    dtype: DLDataType,
    ndim: Option<i32>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    byte_offset: u64,
    flags: u64,
    null_data: bool,
    null_shape: bool,
    data: Vec<f32>,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            version: (1, 1),
            device: DLDevice {
                device_type: DLDeviceType::CUDA_HOST,
                device_id: 0,
            },
            dtype: f32::DATA_TYPE,
            ndim: None,
            shape: vec![3, 4],
            strides: None,
            byte_offset: 0,
            flags: 0,
            null_data: false,
            null_shape: false,
            data: (0..32).map(|i| i as f32).collect(),
        }
    }
}

/// A produced tensor and its release count.
fn produce(spec: Spec) -> (*mut DLManagedTensorVersioned, Arc<AtomicUsize>) {
    let released = Arc::new(AtomicUsize::new(0));
    let ndim = spec.ndim.unwrap_or(spec.shape.len() as i32);
    let produced = Box::into_raw(Box::new(Produced {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion {
                major: spec.version.0,
                minor: spec.version.1,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(release_produced),
            flags: spec.flags,
            dl_tensor: DLTensor {
                data: std::ptr::null_mut(),
                device: spec.device,
                ndim,
                dtype: spec.dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: spec.byte_offset,
            },
        },
        data: spec.data,
        shape: spec.shape,
        strides: spec.strides,
        released: Arc::clone(&released),
    }));
    // SAFETY: the box just leaked, owned here until its deleter runs.
    unsafe {
        let p = &mut *produced;
        p.managed.manager_ctx = produced.cast();
        if !spec.null_data {
            p.managed.dl_tensor.data = p.data.as_mut_ptr().cast();
        }
        if !spec.null_shape {
            p.managed.dl_tensor.shape = p.shape.as_mut_ptr();
        }
        if let Some(strides) = &mut p.strides {
            p.managed.dl_tensor.strides = strides.as_mut_ptr();
        }
        (std::ptr::addr_of_mut!(p.managed), released)
    }
}

/// Takes a produced tensor back as a consumer.
fn import(tensor: *mut DLManagedTensorVersioned) -> cuda_core::Result<DlpackTensor> {
    // SAFETY: made by `produce`: a valid tensor of host memory, owned by nobody else.
    unsafe { DlpackTensor::from_raw(tensor) }
}

fn assert_refused<T: std::fmt::Debug>(result: cuda_core::Result<T>, argument: &str, says: &[&str]) {
    match result {
        Err(Error::InvalidArgument { name, reason }) => {
            assert_eq!(name, argument, "{reason}");
            for needle in says {
                assert!(reason.contains(needle), "{needle:?} not in {reason:?}");
            }
        }
        other => panic!("not refused: {other:?}"),
    }
}

// ---- import --------------------------------------------------------------------------------

/// A 3 x 4 tensor with strides (1, 6) from element 2 of its data: the view starts at
/// `data + byte_offset`, keeps the strides, reads element [i, j] at 2 + i + 6 j, and the
/// producer's deleter runs once, when the tensor goes.
#[test]
fn an_imported_tensor_is_viewed_through_its_strides_and_offset() {
    let (raw, released) = produce(Spec {
        strides: Some(vec![1, 6]),
        byte_offset: 8,
        ..Spec::default()
    });
    let tensor = import(raw).unwrap();
    assert_eq!(tensor.shape(), [3, 4]);
    assert_eq!(tensor.strides(), Some(&[1, 6][..]));
    assert_eq!(tensor.data_type(), f32::DATA_TYPE);
    assert_eq!(tensor.data_type().to_string(), "float32");
    let data = tensor.data() as u64;
    let view = tensor.view::<f32>().unwrap();
    assert_eq!(view.ptr().0, data + 8);
    assert_eq!(view.shape(), [3, 4]);
    assert_eq!(view.strides(), [1, 6]);
    assert_eq!(view.memory(), ViewMemory::Pinned);
    assert_eq!(view.device(), None);
    assert!(!view.is_contiguous());
    assert!(!view.is_read_only());
    assert!(view.buffer().is_none());
    for i in 0..3 {
        for j in 0..4 {
            // SAFETY: host memory that nothing writes.
            let value = unsafe { view.host_element(&[i, j]) }.unwrap();
            assert_eq!(value, (2 + i + 6 * j) as f32, "[{i}, {j}]");
        }
    }
    // SAFETY: as above.
    assert_refused(unsafe { view.host_element(&[3, 0]) }, "index", &["[3, 0]"]);
    // SAFETY: as above.
    assert_refused(
        unsafe { view.as_host_slice() },
        "self",
        &["not a compact row-major"],
    );
    drop(view);
    assert_eq!(released.load(Ordering::SeqCst), 0);
    drop(tensor);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

/// No strides: a compact row-major tensor, read as a slice in order.
#[test]
fn a_tensor_without_strides_is_row_major() {
    let (raw, released) = produce(Spec::default());
    let tensor = import(raw).unwrap();
    assert_eq!(tensor.strides(), None);
    let view = tensor.view::<f32>().unwrap();
    assert_eq!(view.strides(), [4, 1]);
    assert!(view.is_contiguous());
    assert_eq!(view.len(), 12);
    // SAFETY: host memory that nothing writes.
    let slice = unsafe { view.as_host_slice() }.unwrap();
    assert_eq!(slice, (0..12).map(|i| i as f32).collect::<Vec<_>>());
    drop(view);
    drop(tensor);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

/// `into_view` keeps the producer's tensor until the last clone of the view goes; a
/// read-only tensor gives a read-only view.
#[test]
fn an_owned_view_keeps_the_producers_tensor_until_its_last_clone_goes() {
    let (raw, released) = produce(Spec {
        flags: FLAG_READ_ONLY,
        ..Spec::default()
    });
    let view = import(raw).unwrap().into_view::<f32>().unwrap();
    assert!(view.is_read_only());
    let clone = view.clone();
    drop(view);
    assert_eq!(released.load(Ordering::SeqCst), 0);
    // SAFETY: host memory that nothing writes.
    assert_eq!(unsafe { clone.host_element(&[2, 3]) }.unwrap(), 11.0);
    drop(clone);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

/// A view that is refused leaves the tensor held (released once, when dropped), whether the
/// view was borrowed or owned.
#[test]
fn bad_tensors_are_refused_naming_the_field_and_released_once() {
    let cases: Vec<(Spec, &str, Vec<&str>)> = vec![
        (
            Spec {
                dtype: f64::DATA_TYPE,
                ..Spec::default()
            },
            "T",
            vec!["float64", "f32", "float32"],
        ),
        (
            Spec {
                dtype: DLDataType {
                    code: 2,
                    bits: 32,
                    lanes: 4,
                },
                ..Spec::default()
            },
            "T",
            vec!["float32x4"],
        ),
        (
            Spec {
                device: DLDevice {
                    device_type: DLDeviceType::CPU,
                    device_id: 0,
                },
                ..Spec::default()
            },
            "tensor",
            vec!["kDLCPU", "not CUDA memory"],
        ),
        (
            Spec {
                device: DLDevice {
                    device_type: DLDeviceType(99),
                    device_id: 0,
                },
                ..Spec::default()
            },
            "tensor",
            vec!["device type 99"],
        ),
        (
            Spec {
                device: DLDevice {
                    device_type: DLDeviceType::CUDA,
                    device_id: -1,
                },
                ..Spec::default()
            },
            "tensor",
            vec!["kDLCUDA device id -1"],
        ),
        (
            Spec {
                shape: vec![3, -4],
                ..Spec::default()
            },
            "tensor",
            vec!["negative extent", "[3, -4]"],
        ),
        (
            Spec {
                byte_offset: 2,
                ..Spec::default()
            },
            "tensor",
            vec!["4-byte aligned"],
        ),
        (
            Spec {
                null_data: true,
                ..Spec::default()
            },
            "tensor",
            vec!["null"],
        ),
        (
            Spec {
                byte_offset: u64::MAX,
                ..Spec::default()
            },
            "tensor",
            vec!["passes 2^64"],
        ),
        (
            Spec {
                strides: Some(vec![i64::MAX / 2, 1]),
                ..Spec::default()
            },
            "tensor",
            vec!["outside the address space"],
        ),
    ];
    for (spec, name, says) in cases {
        for owned in [false, true] {
            let (raw, released) = produce(spec.clone());
            let tensor = import(raw).unwrap();
            if owned {
                assert_refused(tensor.into_view::<f32>(), name, &says);
            } else {
                assert_refused(tensor.view::<f32>(), name, &says);
                assert_eq!(released.load(Ordering::SeqCst), 0);
                drop(tensor);
            }
            assert_eq!(released.load(Ordering::SeqCst), 1, "{says:?}");
        }
    }
}

/// What `from_raw` refuses (another major version, a negative or shapeless number of
/// dimensions) it releases at once; a null pointer is refused; another minor version is read.
#[test]
fn tensors_of_another_major_version_or_without_a_shape_are_refused_and_released() {
    let cases = [
        (
            Spec {
                version: (2, 0),
                ..Spec::default()
            },
            vec!["DLPack version 2.0", "major version 1"],
        ),
        (
            Spec {
                version: (0, 8),
                ..Spec::default()
            },
            vec!["DLPack version 0.8"],
        ),
        (
            Spec {
                ndim: Some(-1),
                ..Spec::default()
            },
            vec!["-1 dimensions"],
        ),
        (
            Spec {
                null_shape: true,
                ..Spec::default()
            },
            vec!["null shape"],
        ),
    ];
    for (spec, says) in cases {
        let (raw, released) = produce(spec);
        assert_refused(import(raw), "tensor", &says);
        assert_eq!(released.load(Ordering::SeqCst), 1, "{says:?}");
    }
    assert_refused(import(std::ptr::null_mut()), "tensor", &["null"]);
    let (raw, released) = produce(Spec {
        version: (1, 7),
        ..Spec::default()
    });
    let tensor = import(raw).unwrap();
    assert_eq!(tensor.version(), DLPackVersion { major: 1, minor: 7 });
    drop(tensor);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}

/// An element type whose DLPack type is not its width is refused both ways (a wrong claim
/// could only misread, never overrun).
#[cfg(feature = "bytemuck")]
#[test]
fn an_element_type_that_misstates_its_width_is_refused() {
    #[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    struct Wide([u8; 8]);
    impl Element for Wide {
        const DATA_TYPE: DLDataType = DLDataType::scalar(DLDataType::FLOAT, 32);
    }
    let (raw, released) = produce(Spec::default());
    let tensor = import(raw).unwrap();
    assert_refused(tensor.view::<Wide>(), "T", &["is not its 8 bytes"]);
    drop(tensor);
    assert_eq!(released.load(Ordering::SeqCst), 1);
    let memory = Box::leak(vec![0u64; 4].into_boxed_slice());
    // SAFETY: leaked host memory of 4 x 8 bytes, filed as pinned, kept for good.
    let view: StridedView<'static, Wide> = unsafe {
        StridedView::from_raw_parts(
            cuda_core::DevicePtr(memory.as_ptr() as u64),
            &[4],
            None,
            ViewMemory::Pinned,
        )
    }
    .unwrap();
    assert_refused(view.to_dlpack(None), "T", &["is not its 8 bytes"]);
}

// ---- the C consumer ------------------------------------------------------------------------

/// The C consumer's functions.
struct Consumer {
    layout: unsafe extern "C" fn(*mut usize, usize) -> usize,
    describe: unsafe extern "C" fn(*const DLManagedTensorVersioned, *mut c_char, usize) -> i32,
    sum_host: unsafe extern "C" fn(*const DLManagedTensorVersioned, *mut f64) -> i32,
    sum_device: unsafe extern "C" fn(*const DLManagedTensorVersioned, *mut f64) -> i32,
    release: unsafe extern "C" fn(*mut DLManagedTensorVersioned),
}

impl Consumer {
    fn describe(&self, tensor: *const DLManagedTensorVersioned) -> String {
        let mut text = vec![0 as c_char; 512];
        // SAFETY: a live tensor; the buffer's length is given.
        let status = unsafe { (self.describe)(tensor, text.as_mut_ptr(), text.len()) };
        assert_eq!(status, 0);
        // SAFETY: the consumer wrote a NUL-terminated string within the buffer.
        unsafe { CStr::from_ptr(text.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    fn sum_host(&self, tensor: *const DLManagedTensorVersioned) -> f64 {
        let mut sum = f64::NAN;
        // SAFETY: a live float32 tensor of host-readable memory.
        assert_eq!(unsafe { (self.sum_host)(tensor, &mut sum) }, 0);
        sum
    }

    fn sum_device(&self, tensor: *const DLManagedTensorVersioned) -> f64 {
        let mut sum = f64::NAN;
        // SAFETY: a live float32 tensor of device memory, its device's context current.
        let status = unsafe { (self.sum_device)(tensor, &mut sum) };
        assert_eq!(
            status, 0,
            "the consumer's copy failed (-2: it found no cuMemcpyDtoH_v2 in the loaded driver)"
        );
        sum
    }

    fn release(&self, tensor: *mut DLManagedTensorVersioned) {
        // SAFETY: a live tensor the consumer was handed, released once.
        unsafe { (self.release)(tensor) }
    }
}

/// The consumer, compiled once per process; `None` (said) without a C compiler.
fn consumer() -> Option<&'static Consumer> {
    static BUILT: OnceLock<Option<Consumer>> = OnceLock::new();
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"));
            let source = dir.path().join("consumer.c");
            std::fs::write(&source, include_str!("dlpack/consumer.c")).expect("the source");
            let library = dir.path().join("libdlpack_consumer.so");
            let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
            let compiler = match cc::Build::new()
                .cargo_metadata(false)
                .cargo_warnings(false)
                .opt_level(1)
                .debug(false)
                .host(&target)
                .target(&target)
                .try_get_compiler()
            {
                Ok(compiler) => compiler,
                Err(e) => {
                    common::not_run(
                        "cc",
                        &format!("no C compiler for the DLPack consumer ({e})"),
                    );
                    return None;
                }
            };
            let mut command = compiler.to_command();
            command
                .args(["-shared", "-fPIC", "-o"])
                .arg(&library)
                .arg(&source)
                .arg("-ldl");
            match command.status() {
                Ok(status) => assert!(status.success(), "compiling the consumer: {command:?}"),
                Err(e) => {
                    common::not_run("cc", &format!("the C compiler does not run ({e})"));
                    return None;
                }
            }
            // SAFETY: the consumer just built, whose initialisers do nothing; kept for the
            // process.
            let library: &'static libloading::Library = Box::leak(Box::new(
                unsafe { libloading::Library::new(&library) }.unwrap(),
            ));
            // SAFETY: each symbol is the consumer's function of that type.
            unsafe {
                Some(Consumer {
                    layout: *library.get(b"consumer_layout\0").unwrap(),
                    describe: *library.get(b"consumer_describe\0").unwrap(),
                    sum_host: *library.get(b"consumer_sum_host\0").unwrap(),
                    sum_device: *library.get(b"consumer_sum_device\0").unwrap(),
                    release: *library.get(b"consumer_release\0").unwrap(),
                })
            }
        })
        .as_ref()
}

/// The consumer's weighted sum, computed here: sum over the elements in row-major index order
/// of value times (1 + linear index), reading element [i, j] at `first + i s0 + j s1`.
fn weighted(values: &[f32], first: usize, shape: [usize; 2], strides: [isize; 2]) -> f64 {
    let mut sum = 0.0;
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let at = first as isize + i as isize * strides[0] + j as isize * strides[1];
            sum += f64::from(values[at as usize]) * (i * shape[1] + j + 1) as f64;
        }
    }
    sum
}

/// The C compiler lays DLPack's structs out as the Rust ones are.
#[test]
fn the_abi_structs_match_the_c_consumers() {
    use std::mem::{offset_of, size_of};
    let Some(consumer) = consumer() else { return };
    let mut c = [0usize; 32];
    // SAFETY: the buffer's length is given.
    let n = unsafe { (consumer.layout)(c.as_mut_ptr(), c.len()) };
    let rust = [
        size_of::<DLPackVersion>(),
        size_of::<DLDevice>(),
        size_of::<DLDataType>(),
        size_of::<DLTensor>(),
        offset_of!(DLTensor, device),
        offset_of!(DLTensor, ndim),
        offset_of!(DLTensor, dtype),
        offset_of!(DLTensor, shape),
        offset_of!(DLTensor, strides),
        offset_of!(DLTensor, byte_offset),
        size_of::<DLManagedTensorVersioned>(),
        offset_of!(DLManagedTensorVersioned, manager_ctx),
        offset_of!(DLManagedTensorVersioned, deleter),
        offset_of!(DLManagedTensorVersioned, flags),
        offset_of!(DLManagedTensorVersioned, dl_tensor),
    ];
    assert_eq!(&c[..n], &rust[..]);
}

/// A producer's tensor imported, viewed, exported again and handed to the C consumer: it
/// reads the fields and the data through the strides, and its release lets the view's memory
/// go, which releases the producer's tensor (the chain's keep-alive, no driver needed).
#[test]
fn a_reexported_tensor_is_read_by_the_c_consumer_and_its_release_reaches_the_producer() {
    let Some(consumer) = consumer() else { return };
    let (raw, released) = produce(Spec {
        strides: Some(vec![1, 6]),
        byte_offset: 8,
        flags: FLAG_READ_ONLY,
        ..Spec::default()
    });
    let data: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let view = import(raw).unwrap().into_view::<f32>().unwrap();
    let first = view.ptr().0;
    let exported = view.to_dlpack(None).unwrap();
    drop(view);
    assert_eq!(released.load(Ordering::SeqCst), 0, "the export keeps it");
    let handed = exported.into_raw();
    let text = consumer.describe(handed);
    assert_eq!(
        text,
        format!(
            "v1.1 device=3:0 ndim=2 dtype=2:32:1 shape=3,4 strides=1,6 offset=0 flags=1 \
             data={first:#x}"
        )
    );
    assert_eq!(
        consumer.sum_host(handed),
        weighted(&data, 2, [3, 4], [1, 6])
    );
    consumer.release(handed);
    assert_eq!(
        released.load(Ordering::SeqCst),
        1,
        "released through the chain"
    );
}

/// Exports of f16 and bf16 carry their DLPack types; importing one as the other is refused.
#[cfg(feature = "half")]
#[test]
fn half_types_export_their_dlpack_types() {
    use half::{bf16, f16};
    let memory = Box::leak(vec![0u16; 8].into_boxed_slice());
    let ptr = cuda_core::DevicePtr(memory.as_ptr() as u64);
    // SAFETY: leaked host memory of 8 x 2 bytes, filed as pinned, kept for good.
    let halves: StridedView<'static, f16> =
        unsafe { StridedView::from_raw_parts(ptr, &[2, 4], None, ViewMemory::Pinned) }.unwrap();
    let tensor = halves.to_dlpack(None).unwrap();
    assert_eq!(
        tensor.data_type(),
        DLDataType {
            code: DLDataType::FLOAT,
            bits: 16,
            lanes: 1
        }
    );
    assert_refused(tensor.view::<bf16>(), "T", &["float16", "bfloat16"]);
    assert_eq!(tensor.view::<f16>().unwrap().shape(), [2, 4]);
    // SAFETY: as above.
    let brains: StridedView<'static, bf16> =
        unsafe { StridedView::from_raw_parts(ptr, &[8], None, ViewMemory::Pinned) }.unwrap();
    let tensor = brains.to_dlpack(None).unwrap();
    assert_eq!(tensor.data_type().code, DLDataType::BFLOAT);
    assert_eq!(tensor.data_type().to_string(), "bfloat16");
}

/// Against the stand-in driver: a buffer exported for another stream orders that stream
/// after the buffer's (now), the C consumer reads a kDLCUDA tensor of the buffer's address
/// and device, and its release orders the buffer's stream after the consumer's before the
/// buffer is freed; for the buffer's own stream, nothing is ordered.
#[test]
fn an_exported_buffer_is_released_by_the_c_consumer_in_stream_order() {
    standin::run(
        module_path!(),
        "an_exported_buffer_is_released_by_the_c_consumer_in_stream_order",
        &[],
        &[],
        || {
            let Some(consumer) = consumer() else { return };
            let device = Device::new(0).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let home_name = made("cuStreamCreate");
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let other_name = made("cuStreamCreate");
            let buffer = Arc::new(
                device
                    .memory_resource()
                    .unwrap()
                    .allocate(BIG, &home)
                    .unwrap(),
            );
            let address = buffer.ptr().0;
            let weak = Arc::downgrade(&buffer);

            standin::clear_log();
            let view = StridedView::<f32>::shared(buffer, 0, &[4, 3], Some(&[1, 4])).unwrap();
            let tensor = view.to_dlpack(Some(&other)).unwrap();
            drop(view);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let recorded = find(&log, 0, &["cuEventRecord", &format!("on {home_name}")]);
            let event = log[recorded].split_whitespace().nth(1).unwrap();
            find(
                &log,
                recorded,
                &[
                    "cuStreamWaitEvent",
                    &format!("{other_name} waits for {event}"),
                ],
            );

            let handed = tensor.into_raw();
            assert_eq!(
                consumer.describe(handed),
                format!(
                    "v1.1 device=2:0 ndim=2 dtype=2:32:1 shape=4,3 strides=1,4 offset=0 \
                     flags=0 data={address:#x}"
                )
            );
            assert!(weak.upgrade().is_some(), "the tensor keeps the buffer");
            standin::clear_log();
            consumer.release(handed);
            assert!(weak.upgrade().is_none(), "released, the buffer goes");
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let recorded = find(&log, 0, &["cuEventRecord", &format!("on {other_name}")]);
            let event = log[recorded].split_whitespace().nth(1).unwrap();
            let waited = find(
                &log,
                recorded,
                &[
                    "cuStreamWaitEvent",
                    &format!("{home_name} waits for {event}"),
                ],
            );
            find(
                &log,
                waited,
                &["cuMemFreeAsync", &format!("{address:#x} on {home_name}")],
            );

            // On the buffer's own stream (or none given): no ordering at all.
            for stream in [Some(&home), None] {
                let buffer = Arc::new(
                    device
                        .memory_resource()
                        .unwrap()
                        .allocate(BIG, &home)
                        .unwrap(),
                );
                standin::clear_log();
                let tensor = DlpackTensor::from_buffer::<f32>(buffer, &[12], stream).unwrap();
                consumer.release(tensor.into_raw());
                let text = standin::log();
                assert!(
                    !text.contains("cuEventRecord") && !text.contains("cuStreamWaitEvent"),
                    "{text}"
                );
                assert_eq!(standin::calls("cuMemFreeAsync").len(), 1, "{text}");
            }
        },
    );
}

/// Against the stand-in driver: a release whose stream order cannot be made does not free the
/// memory under the consumer's work. A per-thread default stream released on another thread
/// than its own (whose handle means that thread's stream there) is waited for through the
/// whole context before the free; a consumer's stream that captures a graph (whose work
/// queued before the capture cannot be waited for), through its own value or not, keeps the
/// buffer for good.
#[test]
fn an_export_released_where_its_stream_cannot_be_ordered_is_not_freed_under_it() {
    standin::run(
        module_path!(),
        "an_export_released_where_its_stream_cannot_be_ordered_is_not_freed_under_it",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let memory = device.memory_resource().unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let home_name = made("cuStreamCreate");

            let buffer = Arc::new(memory.allocate(BIG, &home).unwrap());
            let address = buffer.ptr().0;
            let per_thread = Stream::per_thread_default(device).unwrap();
            let tensor =
                DlpackTensor::from_buffer::<f32>(buffer, &[BIG / 4], Some(&per_thread)).unwrap();
            standin::clear_log();
            std::thread::spawn(move || drop(tensor)).join().unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let synced = find(&log, 0, &["cuCtxSynchronize"]);
            find(
                &log,
                synced,
                &["cuMemFreeAsync", &format!("{address:#x} on {home_name}")],
            );

            // The capture begun through the consumer's own value, and through another wrapper
            // of its handle (which the consumer's value only learns of from the driver).
            let other = device.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: the handle of `other`, which outlives the wrapper.
            let wrapper = unsafe { Stream::from_raw(other.as_raw(), device) }.unwrap();
            for capturing in [&other, &wrapper] {
                let buffer = Arc::new(memory.allocate(BIG, &home).unwrap());
                let weak = Arc::downgrade(&buffer);
                let tensor =
                    DlpackTensor::from_buffer::<f32>(buffer, &[BIG / 4], Some(&other)).unwrap();
                // SAFETY: nothing is queued while it captures but the release under test (and
                // the stand-in runs nothing).
                unsafe { capturing.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                standin::clear_log();
                drop(tensor);
                let text = standin::log();
                assert!(weak.upgrade().is_some(), "freed under a capture: {text}");
                assert!(
                    !text.contains("cuMemFreeAsync") && !text.contains("cuEventRecord"),
                    "{text}"
                );
                capturing.end_capture().unwrap();
            }
        },
    );
}

/// A broadcast view may have an extent past `i64::MAX` (its elements are all one); DLPack's
/// shape is `i64`, so the export refuses it rather than hand a consumer a negative extent.
/// `i64::MAX` itself is exported as is.
#[test]
fn an_extent_past_i64_is_refused_by_the_export() {
    let memory = Box::leak(vec![0f32; 4].into_boxed_slice());
    let ptr = cuda_core::DevicePtr(memory.as_ptr() as u64);
    let huge = i64::MAX as usize + 1;
    // SAFETY: leaked host memory of 4 floats, filed as pinned, kept for good; the stride 0
    // reaches the first only.
    let view: StridedView<'static, f32> =
        unsafe { StridedView::from_raw_parts(ptr, &[huge], Some(&[0]), ViewMemory::Pinned) }
            .unwrap();
    assert_eq!(view.shape(), [huge]);
    assert_refused(
        view.to_dlpack(None),
        "self",
        &["past i64::MAX", &huge.to_string()],
    );
    // SAFETY: as above.
    let view: StridedView<'static, f32> =
        unsafe { StridedView::from_raw_parts(ptr, &[huge - 1], Some(&[0]), ViewMemory::Pinned) }
            .unwrap();
    let tensor = view.to_dlpack(None).unwrap();
    assert_eq!(tensor.shape(), [i64::MAX]);
    assert_eq!(tensor.strides(), Some(&[0][..]));
}

/// A buffer larger than the default pool's small sizes, which a stream keeps when freed
/// instead of freeing them.
const BIG: usize = 1 << 17;

/// The stand-in's name of what the last logged call of `verb` made.
fn made(verb: &str) -> String {
    let line = standin::calls(verb).pop().expect("a call was logged");
    line.split_whitespace().nth(1).expect("a handle").to_owned()
}

/// The index of the first logged line at or after `from` containing every needle.
fn find(log: &[&str], from: usize, needles: &[&str]) -> usize {
    (from..log.len())
        .find(|&i| needles.iter().all(|n| log[i].contains(n)))
        .unwrap_or_else(|| {
            panic!(
                "no line with {needles:?} after line {from} in:\n{}",
                log.join("\n")
            )
        })
}

// ---- on the GPU ----------------------------------------------------------------------------

const GATHER: &str = r#"
// out[i * n1 + j] = v[i * s0 + j * s1]: a 2-D view copied out in row-major order.
extern "C" __global__ void gather(const float* v, long long s0, long long s1, unsigned n0,
                                  unsigned n1, float* out) {
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n0 * n1) return;
    unsigned i = k / n1, j = k % n1;
    out[k] = v[(long long)i * s0 + (long long)j * s1];
}

extern "C" __global__ void scale(float* v, float a, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= a;
}
"#;

fn gather_code() -> cuda_core::Result<cuda_core::ObjectCode> {
    Program::new(GATHER, ProgramOptions::default())
        .with_name("dlpack_tests.cu")
        .compile(CodeType::Cubin, &[])
}

/// The GPU tests' device code compiles for sm_90 (checked here without a GPU).
#[test]
fn the_dlpack_test_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    let options = ProgramOptions::default().with_arch("90".to_owned());
    let code = Program::new(GATHER, options)
        .compile(CodeType::Cubin, &[])
        .unwrap();
    assert!(code.code().starts_with(b"\x7fELF"));
}

/// A device buffer exported as a transposed 4 x 3 view for another stream: the C consumer
/// reads the fields (kDLCUDA, device 0, the view's strides and address) and, through the
/// driver, the data in the view's order; its release frees the buffer.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_tensor_is_read_by_the_c_consumer_and_released() {
    let Some(consumer) = consumer() else { return };
    let device = common::device();
    device.set_current().unwrap();
    let home = device.create_stream(StreamOptions::default()).unwrap();
    let other = device.create_stream(StreamOptions::default()).unwrap();
    let values: Vec<f32> = (1..=12).map(|i| i as f32).collect();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(48, &home)
        .unwrap();
    buffer.copy_from_host(&values, &home).unwrap();
    let buffer = Arc::new(buffer);
    let weak = Arc::downgrade(&buffer);
    let address = buffer.ptr().0;
    let view = StridedView::<f32>::shared(buffer, 0, &[4, 3], Some(&[1, 4])).unwrap();
    let handed = view.to_dlpack(Some(&other)).unwrap().into_raw();
    drop(view);
    assert_eq!(
        consumer.describe(handed),
        format!(
            "v1.1 device=2:0 ndim=2 dtype=2:32:1 shape=4,3 strides=1,4 offset=0 flags=0 \
             data={address:#x}"
        )
    );
    other.sync().unwrap();
    assert_eq!(
        consumer.sum_device(handed),
        weighted(&values, 0, [4, 3], [1, 4])
    );
    assert!(weak.upgrade().is_some());
    consumer.release(handed);
    assert!(weak.upgrade().is_none(), "released, the buffer goes");
    home.sync().unwrap();
}

/// Pinned and managed buffers export as kDLCUDAHost and kDLCUDAManaged (device id 0), and
/// the C consumer reads their data directly, through a strided view from an offset.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_and_managed_tensors_are_read_by_the_c_consumer_on_the_host() {
    let Some(consumer) = consumer() else { return };
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let values: Vec<f32> = (0..24).map(|i| (i * 3 % 7) as f32).collect();
    let pinned = PinnedMemoryResource::new(device).unwrap();
    let managed = ManagedMemoryResource::new(device).unwrap();
    for (mut buffer, kind) in [
        (pinned.allocate(96, &stream).unwrap(), 3),
        (managed.allocate(96, &stream).unwrap(), 13),
    ] {
        buffer.copy_from_host(&values, &stream).unwrap();
        let view = StridedView::<f32>::shared(Arc::new(buffer), 8, &[3, 5], Some(&[7, 1])).unwrap();
        let handed = view.to_dlpack(Some(&stream)).unwrap().into_raw();
        let text = consumer.describe(handed);
        assert!(
            text.starts_with(&format!(
                "v1.1 device={kind}:0 ndim=2 dtype=2:32:1 shape=3,5 strides=7,1 offset=0"
            )),
            "{text}"
        );
        stream.sync().unwrap();
        assert_eq!(
            consumer.sum_host(handed),
            weighted(&values, 2, [3, 5], [7, 1])
        );
        consumer.release(handed);
    }
}

/// Exported and imported again in-process: the view is the same memory (a kernel scales it
/// in place through the imported view, and the buffer's view reads the result), and the
/// buffer lives until the imported view goes. The export for another stream orders that
/// stream after the buffer's work: a gathering kernel on it sees a fill queued behind a
/// closed gate on the buffer's stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_exported_tensor_round_trips_in_process_in_stream_order() {
    // In a process of its own: a stream held at a gate while this test calls the driver
    // deadlocked beside other tests' module loads and frees, which wait for every stream of
    // the context (a minute, until the gate opened by itself, on the H200).
    common::alone(
        module_path!(),
        "an_exported_tensor_round_trips_in_process_in_stream_order",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let code = gather_code().unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(4 * 12, &home).unwrap();
            buffer.fill(0u32, &home).unwrap();
            // The kernel launched once before the gate closes: a kernel's first launch in a context
            // loads it (lazy loading), and that waited for the gated stream on the H200 (a minute,
            // until the gate opened by itself).
            let warm = memory.allocate(4 * 12, &other).unwrap();
            let zeros = StridedView::<f32>::new(&buffer, 0, &[3, 4], None).unwrap();
            // SAFETY: the kernel reads the 3 x 4 view and writes 12 floats of `warm`.
            unsafe {
                launch(
                    &other,
                    &LaunchConfig::for_elements(12, 64),
                    &code.get_kernel("gather").unwrap(),
                    &[&zeros, &4i64, &1i64, &3u32, &4u32, &warm],
                )
            }
            .unwrap();
            drop(zeros);
            other.sync().unwrap();
            home.sync().unwrap();
            let gate = common::Gate::close(&home);
            buffer.fill(2.0f32.to_bits(), &home).unwrap();
            let buffer = Arc::new(buffer);
            let weak = Arc::downgrade(&buffer);
            let tensor =
                DlpackTensor::from_buffer::<f32>(Arc::clone(&buffer), &[3, 4], Some(&other))
                    .unwrap();
            drop(buffer);
            // SAFETY: the tensor was just exported by this crate; ownership passes back.
            let view = unsafe { DlpackTensor::from_raw(tensor.into_raw()) }
                .unwrap()
                .into_view::<f32>()
                .unwrap();
            assert_eq!(view.memory(), ViewMemory::Device(device));
            assert_eq!((view.shape(), view.strides()), (&[3, 4][..], &[4, 1][..]));
            let out = memory.allocate(4 * 12, &other).unwrap();
            let config = LaunchConfig::for_elements(12, 64);
            // SAFETY: the kernel reads the 3 x 4 view and writes 12 floats of `out`.
            unsafe {
                launch(
                    &other,
                    &config,
                    &code.get_kernel("gather").unwrap(),
                    &[&view, &4i64, &1i64, &3u32, &4u32, &out],
                )
            }
            .unwrap();
            gate.open();
            assert_eq!(out.to_vec::<f32>(&other).unwrap(), [2.0; 12]);
            // SAFETY: the kernel scales the view's 12 floats in place.
            unsafe {
                launch(
                    &other,
                    &config,
                    &code.get_kernel("scale").unwrap(),
                    &[&view, &3.0f32, &12u32],
                )
            }
            .unwrap();
            other.sync().unwrap();
            assert_eq!(view.to_vec(&other).unwrap(), [6.0; 12]);
            assert!(
                weak.upgrade().is_some(),
                "the imported view keeps the buffer"
            );
            drop(view);
            assert!(weak.upgrade().is_none());
            home.sync().unwrap();
        },
    );
}

/// A CUDA tensor of a device this machine does not have is refused by the import.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_tensor_of_a_missing_device_is_refused() {
    let count = Device::count().unwrap();
    let (raw, released) = produce(Spec {
        device: DLDevice {
            device_type: DLDeviceType::CUDA,
            device_id: count as i32,
        },
        ..Spec::default()
    });
    let tensor = import(raw).unwrap();
    let err = tensor.view::<f32>().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("does not exist")),
        "{err}"
    );
    drop(tensor);
    assert_eq!(released.load(Ordering::SeqCst), 1);
}
