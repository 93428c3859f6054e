//! A module's contents: `__constant__` and `__device__` variables by name, and its kernels.

use crate::common;
use crate::common::standin;

use cuda_core::{
    launch, Allocate, CodeType, ContextOptions, Device, Error, LaunchConfig, ObjectCode, Program,
    ProgramOptions, SmSplitOptions, StreamOptions,
};

const SOURCE: &str = r#"
__constant__ float coeffs[4];
__device__ unsigned calls;

extern "C" __global__ void poly(const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = coeffs[0] + v * (coeffs[1] + v * (coeffs[2] + v * coeffs[3]));
        atomicAdd(&calls, 1u);
    }
}

extern "C" __global__ void idle() {}
"#;

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_constant_table_written_from_the_host_is_read_by_a_kernel() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(SOURCE, ProgramOptions::default())
        .with_name("globals.cu")
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let coeffs = code.global("coeffs", device).unwrap();
    let calls = code.global("calls", device).unwrap();
    assert_eq!((coeffs.size(), calls.size()), (16, 4));
    assert_ne!(coeffs.ptr(), calls.ptr());
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
    let resource = device.memory_resource().unwrap();
    let mut xs = resource.allocate(4 * n as usize, &stream).unwrap();
    xs.copy_from_host(&x, &stream).unwrap();
    let ys = resource.allocate(4 * n as usize, &stream).unwrap();
    let kernel = code.get_kernel("poly").unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    // Two tables in turn: the kernel reads what the host wrote last.
    for table in [[1.0f32, 2.0, 3.0, 4.0], [0.5, -1.0, 0.0, 2.0]] {
        coeffs.copy_from_host(&table, &stream).unwrap();
        assert_eq!(coeffs.to_vec::<f32>(&stream).unwrap(), table);
        calls.copy_from_host(&[0u32], &stream).unwrap();
        // SAFETY: n floats in xs and ys.
        unsafe { launch(&stream, &config, &kernel, &[&xs, &ys, &n]) }.unwrap();
        let y = ys.to_vec::<f32>(&stream).unwrap();
        for (xi, yi) in x.iter().zip(&y) {
            let want = table[0] + xi * (table[1] + xi * (table[2] + xi * table[3]));
            assert!(
                (yi - want).abs() <= 1e-5 * want.abs().max(1.0),
                "{yi} against {want}"
            );
        }
        assert_eq!(
            calls.to_vec::<u32>(&stream).unwrap(),
            [n],
            "the __device__ counter"
        );
    }
    // The module's kernels, by symbol.
    let mut names = code.kernel_names().unwrap();
    names.sort();
    assert_eq!(names, ["idle", "poly"]);
    // Bad input: an unknown name, a copy of another size, a type that does not divide it, a
    // stream of another context's device is checked too (one GPU: not run here).
    let err = code.global("missing", device).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "name", reason } if reason.contains("globals.cu") && reason.contains("missing")),
        "{err}"
    );
    let err = coeffs.copy_from_host(&[1.0f32; 3], &stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "src", .. }),
        "{err}"
    );
    let err = calls.to_vec::<u64>(&stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "T", .. }),
        "{err}"
    );
    // The variable keeps its code loaded after the code's value is gone.
    drop(code);
    coeffs.copy_from_host(&[9.0f32; 4], &stream).unwrap();
    assert_eq!(coeffs.to_vec::<f32>(&stream).unwrap(), [9.0; 4]);
}

const MANAGED: &str = r#"
__managed__ unsigned long long total;
__managed__ int scale;
__device__ int plain;

extern "C" __global__ void accumulate(unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&total, (unsigned long long)(scale * (int)i));
}
"#;

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_managed_variable_is_shared_by_the_host_and_kernels() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(MANAGED, ProgramOptions::default())
        .with_name("managed.cu")
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let total = code.managed("total", device).unwrap();
    let scale = code.managed("scale", device).unwrap();
    // Catches a lookup through cuLibraryGetGlobal's flag or a swapped size.
    assert!(total.is_managed() && scale.is_managed());
    assert_eq!((total.size(), scale.size()), (8, 4));
    // Managed memory lies in the unified address range the device attribute reports; the
    // variable's address is what the kernel uses, so a wrong pointer shows in the sums below.
    let kernel = code.get_kernel("accumulate").unwrap();
    let n = 1000u32;
    let config = LaunchConfig::for_elements(n.into(), 128);
    for s in [1i32, 3] {
        // The host's writes reach the kernel (the scale), and the kernel's the host (the sum).
        scale.copy_from_host(&[s], &stream).unwrap();
        total.copy_from_host(&[0u64], &stream).unwrap();
        // SAFETY: the kernel touches only the module's own variables.
        unsafe { launch(&stream, &config, &kernel, &[&n]) }.unwrap();
        stream.sync().unwrap();
        let want = s as u64 * (0..u64::from(n)).sum::<u64>();
        assert_eq!(total.to_vec::<u64>(&stream).unwrap(), [want]);
    }
    // A plain __device__ variable is not a managed one, and an unknown name is refused by name.
    match code.managed("nowhere", device) {
        Err(Error::InvalidArgument {
            name: "name",
            reason,
        }) => {
            assert!(
                reason.contains("__managed__") && reason.contains("nowhere"),
                "{reason}"
            )
        }
        other => panic!("an unknown managed variable gave {other:?}"),
    }
    let plain = code.managed("plain", device);
    println!("cuLibraryGetManaged of a __device__ variable: {plain:?}");
    // The managed lookup must not hand back a __device__ variable as managed memory.
    assert!(
        plain.is_err(),
        "a __device__ variable was taken as managed: {plain:?}"
    );
    // And the plain lookup still finds it, not flagged managed.
    assert!(!code.global("plain", device).unwrap().is_managed());
    // The variable outlives its ObjectCode value (it keeps the code loaded).
    drop(code);
    scale.copy_from_host(&[5i32], &stream).unwrap();
    assert_eq!(scale.to_vec::<i32>(&stream).unwrap(), [5]);
}

/// A variable's host copy does not return while the driver may still use the host memory: a
/// synchronisation refused for another thread's global capture is waited out as for a
/// buffer's copy (here: made again with the thread relaxed, which the stand-in then lets
/// pass). Before the fix, `Global` used a plain synchronisation and returned the capture
/// error with the copy still queued.
#[test]
fn a_variables_host_copy_waits_out_a_synchronisation_refused_for_a_capture() {
    standin::run(
        module_path!(),
        "a_variables_host_copy_waits_out_a_synchronisation_refused_for_a_capture",
        &[],
        &[("STANDIN_RELAXED_SYNCS", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let table = code.global("table", device).unwrap();
            assert_eq!(table.size(), 16);
            // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a thread in global mode.
            standin::set_sync_status(900);
            let read = table.to_vec::<u32>(&stream);
            let written = table.copy_from_host(&[1u32, 2, 3, 4], &stream);
            standin::set_sync_status(0);
            assert_eq!(read.unwrap(), [0; 4]);
            written.unwrap();
        },
    );
}

/// A stream of another context than the variable's (a green context's) is refused: each
/// context holds its own instance of the module's variables, and the copy would write the
/// primary context's instance, which the green context's kernels do not read.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_variables_copy_refuses_a_green_context_stream() {
    let device = common::device();
    let code = Program::new(SOURCE, ProgramOptions::default())
        .with_name("globals.cu")
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let calls = code.global("calls", device).unwrap();
    let _green = common::green_contexts();
    let sms = device.resources().sm().unwrap();
    let split = sms
        .split(SmSplitOptions::groups_of(sms.min_partition_size().unwrap_or(8)).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    let stream = green.create_stream(StreamOptions::default()).unwrap();
    let err = calls.copy_from_host(&[1u32], &stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "stream", reason } if reason.contains("another context")),
        "{err}"
    );
    let err = calls.to_vec::<u32>(&stream).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "stream", .. }),
        "{err}"
    );
    // The primary context's stream still works.
    let primary = device.create_stream(StreamOptions::default()).unwrap();
    calls.copy_from_host(&[5u32], &primary).unwrap();
    assert_eq!(calls.to_vec::<u32>(&primary).unwrap(), [5]);
}
