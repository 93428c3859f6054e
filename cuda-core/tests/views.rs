//! Strided views: their checks on host memory and on the stand-in driver's buffers (bounds,
//! alignment, strides, kinds), as kernel arguments (size, stream order), and on the GPU
//! (kernels reading views through their strides, across streams, of pinned memory).

use crate::common;
use crate::common::standin;

use std::sync::Arc;

use cuda_core::{
    launch,
    memory::{PinnedMemoryPool, PinnedMemoryPoolOptions, PinnedMemoryResource},
    Allocate, Buffer, CodeType, Device, DevicePtr, Error, LaunchConfig, MemoryResource, ObjectCode,
    Program, ProgramOptions, Stream, StreamOptions, StridedView, ViewMemory,
};

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

/// A view from element 8 of 256 floats of leaked host memory (element k holds k), filed as
/// pinned.
fn host_view(
    shape: &[usize],
    strides: Option<&[isize]>,
) -> cuda_core::Result<StridedView<'static, f32>> {
    let memory: &'static mut [f32] = Box::leak(
        (0..256)
            .map(|i| i as f32)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    // SAFETY: 256 floats of host memory kept for good; each view here reaches only elements
    // 0 to 255 of them.
    unsafe {
        StridedView::from_raw_parts(
            DevicePtr(memory.as_ptr().add(8) as u64),
            shape,
            strides,
            ViewMemory::Pinned,
        )
    }
}

// ---- on the host -------------------------------------------------------------------------

/// A view's accessors follow its shape and strides: element addresses, count, contiguity,
/// and host reads through them.
#[test]
fn a_views_elements_are_where_its_strides_say() {
    let view = host_view(&[3, 4], Some(&[1, 3])).unwrap();
    let base = view.ptr().0;
    assert_eq!((view.ndim(), view.len(), view.is_empty()), (2, 12, false));
    assert_eq!(view.element_ptr(&[0, 0]), Some(DevicePtr(base)));
    assert_eq!(view.element_ptr(&[2, 1]), Some(DevicePtr(base + 4 * 5)));
    assert_eq!(view.element_ptr(&[3, 0]), None);
    assert_eq!(view.element_ptr(&[1]), None);
    assert!(!view.is_contiguous());
    // SAFETY: host memory nothing writes.
    let value = unsafe { view.host_element(&[2, 3]) }.unwrap();
    assert_eq!(value, (8 + 2 + 9) as f32);

    let rows = host_view(&[3, 4], None).unwrap();
    assert_eq!(rows.strides(), [4, 1]);
    assert!(rows.is_contiguous());
    // SAFETY: as above.
    let slice = unsafe { rows.as_host_slice() }.unwrap();
    assert_eq!(slice, (8..20).map(|i| i as f32).collect::<Vec<_>>());

    let reversed = host_view(&[4], Some(&[-2])).unwrap();
    assert_eq!(
        reversed.element_ptr(&[3]),
        Some(DevicePtr(reversed.ptr().0 - 24))
    );
    // SAFETY: as above.
    assert_eq!(unsafe { reversed.host_element(&[3]) }.unwrap(), 2.0);

    let scalar = host_view(&[], None).unwrap();
    assert_eq!((scalar.len(), scalar.ndim()), (1, 0));
    // SAFETY: as above.
    assert_eq!(unsafe { scalar.host_element(&[]) }.unwrap(), 8.0);

    let empty = host_view(&[0, 5], None).unwrap();
    assert!(empty.is_empty() && empty.is_contiguous());
    // SAFETY: as above.
    assert_eq!(unsafe { empty.as_host_slice() }.unwrap(), &[] as &[f32]);
    let seven = host_view(&[2, 2, 2, 2, 2, 2, 2], None).unwrap();
    assert_eq!(seven.strides(), [64, 32, 16, 8, 4, 2, 1]);
    assert_eq!(seven.len(), 128);
}

/// A foreign pointer's view is refused where it cannot be: misaligned, null, strides not one
/// per dimension, reaching below address 0 or past 2^64, or of a sizeless element type.
#[test]
fn foreign_views_refuse_what_no_memory_can_be() {
    let pinned = ViewMemory::Pinned;
    // SAFETY: each view is refused before its memory is used (or, empty, has none).
    unsafe {
        assert_refused(
            StridedView::<f32>::from_raw_parts(DevicePtr(0x1002), &[4], None, pinned),
            "ptr",
            &["0x1002", "4-byte aligned", "f32"],
        );
        assert_refused(
            StridedView::<f32>::from_raw_parts(DevicePtr::NULL, &[4], None, pinned),
            "ptr",
            &["null"],
        );
        // An empty view may be null.
        assert!(StridedView::<f32>::from_raw_parts(DevicePtr::NULL, &[0], None, pinned).is_ok());
        assert_refused(
            StridedView::<f32>::from_raw_parts(DevicePtr(0x1000), &[4, 4], Some(&[1]), pinned),
            "strides",
            &["1 strides for 2 dimensions"],
        );
        assert_refused(
            StridedView::<f32>::from_raw_parts(DevicePtr(0x1000), &[5], Some(&[-1024]), pinned),
            "strides",
            &["outside the address space"],
        );
        assert_refused(
            StridedView::<f64>::from_raw_parts(DevicePtr(u64::MAX - 7), &[2], None, pinned),
            "strides",
            &["outside the address space"],
        );
        assert_refused(
            StridedView::<f32>::from_raw_parts(DevicePtr(0x1000), &[usize::MAX, 3], None, pinned),
            "shape",
            &["more elements than an address space holds"],
        );
        assert_refused(
            StridedView::<[u8; 0]>::from_raw_parts(DevicePtr(0x1000), &[4], None, pinned),
            "T",
            &["has no size"],
        );
    }
}

// ---- on the stand-in driver --------------------------------------------------------------

/// A resource the stand-in's buffers can come from that kernels cannot use (host memory,
/// as a custom allocator might give), to check that views refuse it.
#[derive(Debug)]
struct HostOnly;

// SAFETY: never allocates; its answers describe host memory no device reaches.
unsafe impl MemoryResource for HostOnly {
    fn allocate_raw(&self, _: usize, _: &Stream) -> cuda_core::Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "size",
            reason: "a test resource".to_owned(),
        })
    }
    unsafe fn deallocate(&self, _: DevicePtr, _: usize, _: &Stream) -> cuda_core::Result<()> {
        Ok(())
    }
    fn is_device_accessible(&self) -> bool {
        false
    }
    fn is_host_accessible(&self) -> bool {
        true
    }
    fn device(&self) -> Option<Device> {
        None
    }
}

/// Views of a buffer are checked against its extent and alignment before any driver call,
/// with the reach in the message; the memory kind is the buffer's.
#[test]
fn views_of_a_buffer_are_checked_against_its_extent() {
    standin::run(
        module_path!(),
        "views_of_a_buffer_are_checked_against_its_extent",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(96, &stream)
                .unwrap();
            standin::clear_log();

            let whole = buffer.view::<f32>(&[4, 6]).unwrap();
            assert_eq!(whole.ptr(), buffer.ptr());
            assert_eq!(whole.memory(), ViewMemory::Device(device));
            assert_eq!(whole.device(), Some(device));
            assert!(std::ptr::eq(whole.buffer().unwrap(), &buffer));
            assert_refused(
                buffer.view::<f32>(&[5, 5]),
                "shape",
                &["bytes 0..100 of a 96-byte"],
            );
            // Rows 8 floats apart: the last element is float 2 * 8 + 3.
            let strided = StridedView::<f32>::new(&buffer, 0, &[3, 4], Some(&[8, 1])).unwrap();
            assert_eq!(
                strided.element_ptr(&[2, 3]).unwrap().0,
                buffer.ptr().0 + 4 * 19
            );
            assert!(StridedView::<f32>::new(&buffer, 16, &[3, 4], Some(&[8, 1])).is_ok());
            assert_refused(
                StridedView::<f32>::new(&buffer, 20, &[3, 4], Some(&[8, 1])),
                "strides",
                &["bytes 20..100 of a 96-byte", "from byte 20"],
            );
            // Reversed from the last float: fine; from the first: below the buffer.
            assert!(StridedView::<f32>::new(&buffer, 92, &[24], Some(&[-1])).is_ok());
            assert_refused(
                StridedView::<f32>::new(&buffer, 0, &[24], Some(&[-1])),
                "strides",
                &["bytes -92..4"],
            );
            assert_refused(
                StridedView::<f32>::new(&buffer, 97, &[0], None),
                "byte_offset",
                &["97 is past the end of a 96-byte buffer"],
            );
            assert!(StridedView::<f32>::new(&buffer, 96, &[0], None).is_ok());
            assert_refused(
                StridedView::<f32>::new(&buffer, 2, &[4], None),
                "byte_offset",
                &["4-byte aligned"],
            );
            assert_refused(
                StridedView::<f32>::new(&buffer, 0, &[4, 2], Some(&[1, 1, 1])),
                "strides",
                &["3 strides for 2 dimensions"],
            );
            assert_refused(buffer.view::<[u8; 0]>(&[4]), "T", &["has no size"]);
            // A broadcast (stride 0) reaches one element only.
            assert!(StridedView::<f32>::new(&buffer, 92, &[1000], Some(&[0])).is_ok());
            assert_eq!(standin::log(), "", "all checked without the driver");

            // A shared buffer lives as long as its views.
            let shared = Arc::new(
                device
                    .memory_resource()
                    .unwrap()
                    .allocate(96, &stream)
                    .unwrap(),
            );
            let weak = Arc::downgrade(&shared);
            let view = StridedView::<u8>::shared(shared, 0, &[96], None).unwrap();
            assert!(weak.upgrade().is_some());
            let clone = view.clone();
            drop(view);
            assert!(weak.upgrade().is_some());
            drop(clone);
            assert!(weak.upgrade().is_none());

            // Memory kernels cannot use is refused.
            // SAFETY: a made-up address never used; the resource frees nothing.
            let host = unsafe {
                Buffer::from_raw_parts(DevicePtr(0x1000), 64, Arc::new(HostOnly), stream.clone())
            };
            assert_refused(
                host.view::<u8>(&[64]),
                "buffer",
                &["not accessible from devices"],
            );
        },
    );
}

/// A view passes to a kernel as 8 bytes (its first element's address): accepted by an 8-byte
/// parameter, and refused by a parameter as large as the view itself (which only a value of
/// that size may fill: a view must not be read as its own bytes).
#[test]
fn a_view_is_a_pointer_sized_kernel_argument() {
    let size = std::mem::size_of::<StridedView<'static, f32>>();
    assert_eq!(size, std::mem::size_of::<StridedView<'static, [f64; 9]>>());
    for (param, accepted) in [(8usize, true), (size, false)] {
        let name = "a_view_is_a_pointer_sized_kernel_argument";
        standin::run(
            module_path!(),
            name,
            &[],
            &[("STANDIN_PARAM_SIZE", &param.to_string())],
            move || {
                let device = Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let code = ObjectCode::from_cubin(standin::cubin());
                let k1 = code.get_kernel("k1").unwrap();
                let buffer = device
                    .memory_resource()
                    .unwrap()
                    .allocate(64, &stream)
                    .unwrap();
                let view = StridedView::<f32>::new(&buffer, 16, &[4], None).unwrap();
                let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                // SAFETY: the stand-in runs nothing.
                let launched = unsafe { launch(&stream, &config, &k1, &[&view]) };
                if accepted {
                    launched.unwrap();
                    assert_eq!(standin::calls("cuLaunchKernel k1").len(), 1);
                } else {
                    assert_refused(
                        launched,
                        "args",
                        &[&format!(
                            "argument 0 of k1 is 8 bytes; the kernel's parameter is {param}"
                        )],
                    );
                }
            },
        );
    }
}

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

/// A view of a buffer launched on another stream than the buffer's is ordered as the buffer
/// would be: the launch's stream waits for the buffer's, which then waits for the launch; on
/// the buffer's own stream, and for a view of foreign memory, the launch alone.
#[test]
fn a_view_on_another_stream_is_ordered_like_its_buffer() {
    standin::run(
        module_path!(),
        "a_view_on_another_stream_is_ordered_like_its_buffer",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let home_name = made("cuStreamCreate");
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let other_name = made("cuStreamCreate");
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &home)
                .unwrap();
            let view = buffer.view::<f32>(&[2, 8]).unwrap();
            let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: the stand-in runs nothing.
            unsafe { launch(&home, &config, &k1, &[&view]) }.unwrap();
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&home, &config, &k1, &[&view]) }.unwrap();
            assert_eq!(standin::log().lines().count(), 1, "{}", standin::log());

            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&other, &config, &k1, &[&view]) }.unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let recorded = find(&log, 0, &["cuEventRecord", &format!("on {home_name}")]);
            let event = log[recorded].split_whitespace().nth(1).unwrap();
            let waited = find(
                &log,
                recorded,
                &[
                    "cuStreamWaitEvent",
                    &format!("{other_name} waits for {event}"),
                ],
            );
            let at = find(
                &log,
                waited,
                &["cuLaunchKernel k1", &format!("on {other_name}")],
            );
            let after = find(&log, at, &["cuEventRecord", &format!("on {other_name}")]);
            let event = log[after].split_whitespace().nth(1).unwrap();
            find(
                &log,
                after,
                &[
                    "cuStreamWaitEvent",
                    &format!("{home_name} waits for {event}"),
                ],
            );

            // SAFETY: the stand-in's address space, never read.
            let foreign = unsafe {
                StridedView::<f32>::from_raw_parts(
                    buffer.ptr(),
                    &[16],
                    None,
                    ViewMemory::Device(device),
                )
            }
            .unwrap();
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&other, &config, &k1, &[&foreign]) }.unwrap();
            assert_eq!(standin::log().lines().count(), 1, "{}", standin::log());
        },
    );
}

/// A view's host copy needs a contiguous view, a slice of its length, and a stream of its
/// device: each refused before any driver call.
#[test]
fn host_copies_of_views_are_checked_before_the_driver() {
    standin::run(
        module_path!(),
        "host_copies_of_views_are_checked_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let elsewhere = Device::new(1)
                .unwrap()
                .create_stream(StreamOptions::default())
                .unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(64, &stream)
                .unwrap();
            let columns = StridedView::<f32>::new(&buffer, 0, &[4, 2], Some(&[1, 4])).unwrap();
            let rows = buffer.view::<f32>(&[2, 8]).unwrap();
            standin::clear_log();
            let mut out = [0f32; 8];
            assert_refused(
                columns.copy_to_host(&mut out, &stream),
                "self",
                &["not a compact"],
            );
            assert_refused(
                rows.copy_to_host(&mut out, &stream),
                "dst",
                &["8 elements for a view of 16"],
            );
            let mut all = [0f32; 16];
            assert_refused(
                rows.copy_to_host(&mut all, &elsewhere),
                "stream",
                &["device 0's memory, the stream of device 1"],
            );
            assert_eq!(standin::log(), "");
            rows.copy_to_host(&mut all, &stream).unwrap();
            assert_eq!(
                standin::calls("cuMemcpyAsync").len(),
                1,
                "{}",
                standin::log()
            );
            assert!(standin::calls("cuMemcpyAsync")[0].contains("size=64"));
        },
    );
}

// ---- on the GPU --------------------------------------------------------------------------

const KERNELS: &str = r#"
// out[i * n1 + j] = v[i * s0 + j * s1]: a 2-D view copied out in row-major order.
extern "C" __global__ void gather(const float* v, long long s0, long long s1, unsigned n0,
                                  unsigned n1, float* out) {
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n0 * n1) return;
    unsigned i = k / n1, j = k % n1;
    out[k] = v[(long long)i * s0 + (long long)j * s1];
}

// v[i * s] = i + 1 for the n elements of a 1-D view.
extern "C" __global__ void number(float* v, long long s, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[(long long)i * s] = (float)(i + 1);
}
"#;

fn kernels(arch: Option<&str>) -> cuda_core::Result<ObjectCode> {
    let mut options = ProgramOptions::default();
    options.arch = arch.map(str::to_owned);
    Program::new(KERNELS, options)
        .with_name("view_tests.cu")
        .compile(CodeType::Cubin, &[])
}

/// The GPU tests' device code compiles for sm_90 (checked here without a GPU).
#[test]
fn the_view_test_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    assert!(kernels(Some("90")).unwrap().code().starts_with(b"\x7fELF"));
}

/// The CPU's gather: element [i, j] of the view whose first element is `first`.
fn gather(values: &[f32], first: usize, shape: [usize; 2], strides: [isize; 2]) -> Vec<f32> {
    let mut out = Vec::new();
    for i in 0..shape[0] {
        for j in 0..shape[1] {
            let at = first as isize + i as isize * strides[0] + j as isize * strides[1];
            out.push(values[at as usize]);
        }
    }
    out
}

/// Views of one 8 x 8 matrix (a block from an offset, the transpose, every other column,
/// reversed rows, a broadcast row) reach a kernel as their first element's address, and the
/// kernel reading them through their strides sees what the CPU does.
#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_read_views_through_their_strides() {
    let device = common::device();
    device.set_current().unwrap();
    let code = kernels(None).unwrap();
    let gather_kernel = code.get_kernel("gather").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let values: Vec<f32> = common::random_u32(7, 64)
        .iter()
        .map(|&r| (r % 1000) as f32)
        .collect();
    let mut matrix = memory.allocate(4 * 64, &stream).unwrap();
    matrix.copy_from_host(&values, &stream).unwrap();
    let cases: [(usize, [usize; 2], [isize; 2]); 5] = [
        (8 * 2 + 3, [4, 5], [8, 1]),
        (0, [8, 8], [1, 8]),
        (1, [8, 4], [8, 2]),
        (7 * 8, [8, 8], [-8, 1]),
        (5 * 8, [6, 8], [0, 1]),
    ];
    for (first, shape, strides) in cases {
        let view = StridedView::<f32>::new(&matrix, 4 * first, &shape, Some(&strides)).unwrap();
        assert_eq!(view.ptr().0, matrix.ptr().0 + 4 * first as u64);
        let n = shape[0] * shape[1];
        let out = memory.allocate(4 * n, &stream).unwrap();
        // SAFETY: the kernel reads the view's elements through its strides (all within the
        // matrix, checked by the view) and writes n floats of `out`.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::for_elements(n as u64, 64),
                &gather_kernel,
                &[
                    &view,
                    &(strides[0] as i64),
                    &(strides[1] as i64),
                    &(shape[0] as u32),
                    &(shape[1] as u32),
                    &out,
                ],
            )
        }
        .unwrap();
        assert_eq!(
            out.to_vec::<f32>(&stream).unwrap(),
            gather(&values, first, shape, strides),
            "first {first}, shape {shape:?}, strides {strides:?}"
        );
    }
}

/// A view of a buffer launched on another stream waits for the buffer's work: a fill queued
/// behind a closed gate on the buffer's stream is what the kernel on the other stream reads.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_view_launched_on_another_stream_waits_for_its_buffers_work() {
    // In a process of its own: a stream held at a gate while this test calls the driver
    // deadlocked beside other tests' module loads and frees, which wait for every stream of
    // the context (a minute, until the gate opened by itself, on the H200).
    common::alone(
        module_path!(),
        "a_view_launched_on_another_stream_waits_for_its_buffers_work",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let code = kernels(None).unwrap();
            let home = device.create_stream(StreamOptions::default()).unwrap();
            let other = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(4 * 256, &home).unwrap();
            buffer.fill(0u32, &home).unwrap();
            let out = memory.allocate(4 * 128, &other).unwrap();
            home.sync().unwrap();
            other.sync().unwrap();
            // The kernel launched once before the gate closes: a kernel's first launch in a context
            // loads it (lazy loading), and that waited for the gated stream on the H200 (a minute,
            // until the gate opened by itself).
            let zeros = StridedView::<f32>::new(&buffer, 0, &[64], None).unwrap();
            // SAFETY: the kernel reads the view's 64 elements and writes 64 floats of `out`.
            unsafe {
                launch(
                    &other,
                    &LaunchConfig::for_elements(64, 64),
                    &code.get_kernel("gather").unwrap(),
                    &[&zeros, &64i64, &1i64, &1u32, &64u32, &out],
                )
            }
            .unwrap();
            drop(zeros);
            other.sync().unwrap();
            let gate = common::Gate::close(&home);
            buffer.fill(5.0f32.to_bits(), &home).unwrap();
            // Every other float of the second half.
            let view = StridedView::<f32>::new(&buffer, 4 * 128, &[2, 32], Some(&[64, 2])).unwrap();
            // SAFETY: the kernel reads the view's 64 elements and writes 64 floats of `out`.
            unsafe {
                launch(
                    &other,
                    &LaunchConfig::for_elements(64, 64),
                    &code.get_kernel("gather").unwrap(),
                    &[&view, &64i64, &2i64, &2u32, &32u32, &out],
                )
            }
            .unwrap();
            gate.open();
            let read = out.to_vec::<f32>(&other).unwrap();
            assert_eq!(&read[..64], &[5.0; 64][..]);
            home.sync().unwrap();
        },
    );
}

/// A kernel writes a strided view of pinned memory; the host reads it back through the view
/// (element by element) and the buffer (whole): written where the strides say, nowhere else.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_writes_a_view_of_pinned_memory_where_its_strides_say() {
    let device = common::device();
    device.set_current().unwrap();
    let code = kernels(None).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pinned = PinnedMemoryResource::new(device).unwrap();
    let mut buffer = pinned.allocate(4 * 32, &stream).unwrap();
    buffer.fill(0u32, &stream).unwrap();
    let view = StridedView::<f32>::new(&buffer, 4 * 3, &[10], Some(&[3])).unwrap();
    assert_eq!(view.memory(), ViewMemory::Pinned);
    // SAFETY: the kernel writes the view's 10 elements.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(10, 32),
            &code.get_kernel("number").unwrap(),
            &[&view, &3i64, &10u32],
        )
    }
    .unwrap();
    stream.sync().unwrap();
    for i in 0..10 {
        // SAFETY: the stream that wrote it is synchronised.
        assert_eq!(unsafe { view.host_element(&[i]) }.unwrap(), (i + 1) as f32);
    }
    let whole = buffer.to_vec::<f32>(&stream).unwrap();
    let expected: Vec<f32> = (0..32)
        .map(|k| {
            if k >= 3 && (k - 3) % 3 == 0 {
                ((k - 3) / 3 + 1) as f32
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(whole, expected);
    let rows = buffer.view::<f32>(&[4, 8]).unwrap();
    assert_eq!(rows.to_vec(&stream).unwrap(), expected);
}

/// On a real device buffer, bad views are refused with the reason (beyond the buffer, below
/// it, misaligned, strides not one per dimension), and an exported view imported as another
/// element type is refused naming both types.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_views_of_a_device_buffer_are_refused_with_their_reason() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let buffer = Arc::new(
        device
            .memory_resource()
            .unwrap()
            .allocate(4 * 100, &stream)
            .unwrap(),
    );
    assert_refused(
        buffer.view::<f32>(&[10, 11]),
        "shape",
        &["bytes 0..440 of a 400-byte buffer"],
    );
    assert_refused(
        StridedView::<f32>::new(&buffer, 4 * 50, &[10, 10], Some(&[10, 1])),
        "strides",
        &["bytes 200..600 of a 400-byte buffer"],
    );
    assert_refused(
        StridedView::<f32>::new(&buffer, 0, &[10], Some(&[-1])),
        "strides",
        &["bytes -36..4"],
    );
    assert_refused(
        StridedView::<f64>::new(&buffer, 4, &[10], None),
        "byte_offset",
        &["8-byte aligned"],
    );
    assert_refused(
        StridedView::<f32>::new(&buffer, 0, &[10, 10], Some(&[10])),
        "strides",
        &["1 strides for 2 dimensions"],
    );
    let view = StridedView::<f32>::shared(Arc::clone(&buffer), 0, &[10, 10], None).unwrap();
    let tensor = view.to_dlpack(Some(&stream)).unwrap();
    assert_refused(tensor.view::<u32>(), "T", &["float32", "uint32"]);
    assert_eq!(tensor.view::<f32>().unwrap().ptr(), buffer.ptr());
}

/// A view's copy makes its buffer's reachability check: once a pinned pool's access is taken
/// from every device, `Buffer::to_vec` is refused before the driver (which crashed on such
/// memory on the H200), and so is `StridedView::to_vec` of the same buffer. Before the fix the
/// view checked device memory only, and its copy went to the driver.
#[test]
fn a_view_copy_of_pool_memory_without_access_is_refused_like_the_buffers() {
    standin::run(
        module_path!(),
        "a_view_copy_of_pool_memory_without_access_is_refused_like_the_buffers",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()).unwrap();
            let buffer = pool.allocate(64, &stream).unwrap();
            let view = StridedView::<u32>::new(&buffer, 0, &[16], None).unwrap();
            assert_eq!(view.to_vec(&stream).unwrap().len(), 16);
            pool.set_access(&[]).unwrap();
            assert_refused(buffer.to_vec::<u32>(&stream), "self", &["accessible"]);
            standin::clear_log();
            assert_refused(view.to_vec(&stream), "self", &["accessible"]);
            let mut out = [0u32; 16];
            assert_refused(
                view.copy_to_host(&mut out, &stream),
                "self",
                &["accessible"],
            );
            assert!(standin::calls("cuMemcpy").is_empty(), "{}", standin::log());
        },
    );
}

/// Non-contiguous views read back in row-major order: a sub-matrix and a column (one 2D copy
/// each), a transpose, a reversal, a broadcast and a 3-D view (the spanned bytes, picked on
/// the host), each against the element the index math names.
#[test]
#[ignore = "needs a CUDA GPU"]
fn views_of_any_layout_read_back_in_row_major_order() {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4 * 256, &stream)
        .unwrap();
    let values: Vec<u32> = (0..256).collect();
    buffer.copy_from_host(&values, &stream).unwrap();
    // Element [i, j, ...] of a view from element `first` with `strides` is
    // values[first + sum(i * stride)].
    let check = |first: usize, shape: &[usize], strides: &[isize]| {
        let view = StridedView::<u32>::new(&buffer, 4 * first, shape, Some(strides)).unwrap();
        assert!(!view.is_contiguous());
        let read = view.to_vec(&stream).unwrap();
        let mut expected = Vec::new();
        let mut index = vec![0usize; shape.len()];
        for _ in 0..read.len() {
            let at: isize = index
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as isize * s)
                .sum::<isize>()
                + first as isize;
            expected.push(values[at as usize]);
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        // Catches rows copied at the wrong pitch, elements gathered from the wrong offset, a
        // negative stride read forwards, and a refusal of the layout.
        assert_eq!(
            read, expected,
            "shape {shape:?} strides {strides:?} from {first}"
        );
    };
    check(2 * 16 + 3, &[4, 5], &[16, 1]); // a sub-matrix: 2D copy
    check(7, &[16], &[16]); // a column: 2D copy, one element a row
    check(0, &[16, 16], &[1, 16]); // the transpose
    check(255, &[16], &[-1]); // reversed
    check(10, &[3, 4], &[0, 1]); // a row broadcast three times
    check(1, &[2, 3, 2], &[128, 16, 2]); // three dimensions
}
