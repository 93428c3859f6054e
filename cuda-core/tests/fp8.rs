//! FP8 (feature `float8`): `float8::F8E4M3` and `float8::F8E5M2` as buffer elements (copies
//! counted in bytes against the stand-in), kernel arguments of one byte, and DLPack types
//! (`kDLFloat8_e4m3fn`, `kDLFloat8_e5m2`); the crate's conversions being CUDA's (checked on
//! the host against the formats' defining values, and on the GPU against the hardware's
//! `cvt` for every bit pattern and 1M floats).

use crate::common;
use crate::common::standin;

use float8::{F8E4M3, F8E5M2};

use cuda_core::dlpack::{DLDataType, Element};
use cuda_core::{
    launch, Allocate, CodeType, Device, Error, LaunchConfig, ObjectCode, Program, ProgramOptions,
    StreamOptions, StridedView, ViewMemory,
};

fn assert_refused<T: std::fmt::Debug>(result: cuda_core::Result<T>, argument: &str, says: &str) {
    match result {
        Err(Error::InvalidArgument { name, reason }) => {
            assert_eq!(name, argument, "{reason}");
            assert!(reason.contains(says), "{says:?} not in {reason:?}");
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// The crate's E4M3 is CUDA's `__nv_fp8_e4m3` (E4M3FN: no infinity, NaN only at S.1111.111,
/// largest 448, out-of-range values saturating as `__NV_SATFINITE` does) and its E5M2 is
/// `__nv_fp8_e5m2` (IEEE-like, with infinities), so that mapping them to `kDLFloat8_e4m3fn`
/// and `kDLFloat8_e5m2` is right. Bugs caught: a `float8` release (or a swap to another crate)
/// whose E4M3 has infinities (0x78 would be inf, 448 not representable), whose conversions
/// truncate instead of rounding to nearest even, or that turns overflow into NaN or infinity
/// where CUDA's default conversion saturates.
#[test]
fn float8_types_are_cudas_formats() {
    assert_eq!(std::mem::size_of::<F8E4M3>(), 1);
    assert_eq!(std::mem::align_of::<F8E5M2>(), 1);
    // E4M3FN: 0x7E is the largest finite (448), 0x78 is 256 (not infinity), 0x7F is NaN.
    assert_eq!(F8E4M3::from_bits(0x7E).to_f32(), 448.0);
    assert_eq!(F8E4M3::from_bits(0x78).to_f32(), 256.0);
    assert!(F8E4M3::from_bits(0x7F).to_f32().is_nan());
    assert_eq!(
        F8E4M3::from_bits(0x01).to_f32(),
        2f32.powi(-9),
        "smallest subnormal"
    );
    // Saturating, not NaN, on overflow; infinity too (`__NV_SATFINITE`).
    assert_eq!(F8E4M3::from_f32(1000.0).to_bits(), 0x7E);
    assert_eq!(F8E4M3::from_f32(f32::NEG_INFINITY).to_bits(), 0xFE);
    // Round to nearest, ties to even: 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39).
    assert_eq!(F8E4M3::from_f32(1.0625).to_bits(), 0x38);
    assert_eq!(
        F8E4M3::from_f32(1.1875).to_bits(),
        0x3A,
        "1.1875 ties up to even 1.25"
    );
    assert_eq!(
        F8E4M3::from_f32(1.07).to_bits(),
        0x39,
        "above the tie rounds up"
    );
    // E5M2: 0x7C is infinity, 0x7B the largest finite (57344).
    assert_eq!(F8E5M2::from_bits(0x7C).to_f32(), f32::INFINITY);
    assert_eq!(F8E5M2::from_bits(0x7B).to_f32(), 57344.0);
    assert_eq!(
        F8E5M2::from_f32(1e6).to_bits(),
        0x7B,
        "saturates to the largest finite"
    );
    assert_eq!(F8E5M2::from_f32(-1.5).to_bits(), 0xBE);
}

/// Against the stand-in: FP8 values copy to and from buffers as one byte each (64 values are
/// 64 bytes; 63 are refused for a 64-byte buffer; a 64-byte buffer reads back as 64 of
/// either type). Bugs caught: FP8 counted as wider elements (a copy of 128 or 256 bytes), or
/// not `Pod` at all (no compile).
#[test]
fn fp8_values_copy_as_one_byte_each() {
    standin::run(
        module_path!(),
        "fp8_values_copy_as_one_byte_each",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(64, &stream).unwrap();
            standin::clear_log();
            let values = [F8E4M3::from_f32(1.5); 64];
            buffer.copy_from_host(&values, &stream).unwrap();
            assert!(standin::calls("cuMemcpyHtoDAsync")[0].contains("size=64"));
            assert_refused(
                buffer.copy_from_host(&values[..63], &stream),
                "src",
                "63 bytes",
            );
            assert_eq!(buffer.to_vec::<F8E4M3>(&stream).unwrap().len(), 64);
            assert_eq!(buffer.to_vec::<F8E5M2>(&stream).unwrap().len(), 64);
        },
    );
}

/// Against the stand-in: FP8 values are kernel arguments of one byte, accepted by a 1-byte
/// parameter and refused by a 2-byte one, as `__nv_fp8_e4m3` and `__nv_fp8_e5m2` are one byte
/// on the device. Bugs caught: FP8 passed as a wider value (a 2- or 4-byte argument the
/// driver would read past), or not a `KernelArg` at all (no compile).
#[test]
fn fp8_values_are_one_byte_kernel_arguments() {
    standin::launch_with_parameter_sizes(
        module_path!(),
        "fp8_values_are_one_byte_kernel_arguments",
        &[
            (1, &F8E4M3::ONE, true),
            (1, &F8E5M2::ONE, true),
            (2, &F8E4M3::ONE, false),
            (2, &F8E5M2::ONE, false),
        ],
    );
}

/// Views of FP8 export as `kDLFloat8_e4m3fn` (code 10) and `kDLFloat8_e5m2` (code 12), 8 bits,
/// one lane, named as DLPack names them; importing one as the other, or as `u8`, is refused,
/// and the same type imports with its shape. Bugs caught: a wrong code (E4M3FN as plain
/// `kDLFloat8_e4m3`, code 8, which has infinities and so other values; or the two swapped),
/// FP8 exported as `uint8` or as `float8`, an E5M2 tensor read as E4M3.
#[test]
fn fp8_views_export_their_dlpack_types() {
    assert_eq!(
        F8E4M3::DATA_TYPE,
        DLDataType {
            code: 10,
            bits: 8,
            lanes: 1
        }
    );
    assert_eq!(
        F8E5M2::DATA_TYPE,
        DLDataType {
            code: 12,
            bits: 8,
            lanes: 1
        }
    );
    let memory = Box::leak(vec![0u8; 8].into_boxed_slice());
    let ptr = cuda_core::DevicePtr(memory.as_ptr() as u64);
    // SAFETY: leaked host memory of 8 bytes, filed as pinned, kept for good.
    let e4m3: StridedView<'static, F8E4M3> =
        unsafe { StridedView::from_raw_parts(ptr, &[2, 4], None, ViewMemory::Pinned) }.unwrap();
    let tensor = e4m3.to_dlpack(None).unwrap();
    assert_eq!(tensor.data_type().code, DLDataType::FLOAT8_E4M3FN);
    assert_eq!(tensor.data_type().to_string(), "float8_e4m3fn");
    assert_refused(tensor.view::<F8E5M2>(), "T", "float8_e4m3fn");
    assert_refused(tensor.view::<u8>(), "T", "uint8");
    assert_eq!(tensor.view::<F8E4M3>().unwrap().shape(), [2, 4]);
    // SAFETY: as above.
    let e5m2: StridedView<'static, F8E5M2> =
        unsafe { StridedView::from_raw_parts(ptr, &[8], None, ViewMemory::Pinned) }.unwrap();
    let tensor = e5m2.to_dlpack(None).unwrap();
    assert_eq!(tensor.data_type().code, DLDataType::FLOAT8_E5M2);
    assert_eq!(tensor.data_type().to_string(), "float8_e5m2");
    assert_refused(tensor.view::<F8E4M3>(), "T", "float8_e5m2");
    assert_eq!(tensor.view::<F8E5M2>().unwrap().shape(), [8]);
}

/// DLPack's other minifloat codes print by their names, with lanes, and with their bits where
/// these are not the name's width; unknown codes still print by number. Bugs caught: a
/// minifloat printed as `float8_e4m3fn8` (the width appended twice), a code printed by the
/// wrong name (an off-by-one in the table), an unspecified width hidden.
#[test]
fn minifloat_dlpack_types_print_by_name() {
    let show = |code, bits, lanes| DLDataType { code, bits, lanes }.to_string();
    assert_eq!(show(7, 8, 1), "float8_e3m4");
    assert_eq!(show(14, 8, 1), "float8_e8m0fnu");
    assert_eq!(show(15, 6, 1), "float6_e2m3fn");
    assert_eq!(show(17, 4, 1), "float4_e2m1fn");
    assert_eq!(show(17, 4, 2), "float4_e2m1fnx2");
    assert_eq!(show(17, 8, 1), "float4_e2m1fn of 8 bits");
    assert_eq!(show(18, 8, 1), "type code 18 of 8 bits");
    assert_eq!(show(2, 32, 1), "float32", "TF32 data are float32 tensors");
}

const KERNELS: &str = r#"
// Every FP8 bit pattern to float through the hardware (sm_89+): cvt to a pair of halves, then
// the low half to float. `__nv_fp8_e4m3` and `__nv_fp8_e5m2` are one byte, here as their bits.
__device__ float e4m3_to_f(unsigned char b) {
    unsigned short pair = (unsigned short)(b | (b << 8)); unsigned h2; float f;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(pair));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)(h2 & 0xffff)));
    return f;
}
__device__ float e5m2_to_f(unsigned char b) {
    unsigned short pair = (unsigned short)(b | (b << 8)); unsigned h2; float f;
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(pair));
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)(h2 & 0xffff)));
    return f;
}

// All 256 patterns of each type: out[0..256] E4M3, out[256..512] E5M2; `scale` (an E4M3 by
// value) multiplies them, so that a wrong argument byte shows in every element.
extern "C" __global__ void fp8_to_float(unsigned char scale, float* out) {
    unsigned i = threadIdx.x;
    float s = e4m3_to_f(scale);
    out[i] = e4m3_to_f((unsigned char)i) * s;
    out[256 + i] = e5m2_to_f((unsigned char)i) * s;
}

// Floats to FP8 with CUDA's default (round to nearest even, saturating to the finite range).
extern "C" __global__ void float_to_fp8(const float* in, unsigned n, unsigned char* e4m3,
                                        unsigned char* e5m2) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned short p, q;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;" : "=h"(p) : "f"(in[i]));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;" : "=h"(q) : "f"(in[i]));
    e4m3[i] = (unsigned char)(p & 0xff);
    e5m2[i] = (unsigned char)(q & 0xff);
}
"#;

fn kernels(arch: &str) -> cuda_core::Result<ObjectCode> {
    let mut options = ProgramOptions::default();
    options.arch = Some(arch.to_owned());
    Program::new(KERNELS, options)
        .with_name("float8_tests.cu")
        .compile(CodeType::Cubin, &[])
}

/// The GPU test's device code compiles for sm_90 (checked here without a GPU, where NVRTC is).
#[test]
fn the_float8_test_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    assert!(kernels("90").unwrap().code().starts_with(b"\x7fELF"));
}

/// Whether two floats are the same value (NaNs the same whatever their bits).
fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// On the GPU (sm_89 or newer): the hardware's FP8 to float for all 256 patterns of each type,
/// scaled by an E4M3 kernel argument, equals the crate's `to_f32`; 1M floats over the whole
/// range (subnormals, ties, overflow) convert to the crate's `from_f32` bit for bit, through
/// buffers of `F8E4M3` and `F8E5M2`. Bugs caught: a kernel argument byte lost or widened (the
/// scale), the crate's conversions differing from CUDA's (rounding, saturation, subnormals,
/// NaN), the buffers' element sizes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_gpus_fp8_conversions_match_the_crates() {
    let device = common::device();
    device.set_current().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    if (major, minor) < (8, 9) {
        common::not_run("gpu", "FP8 conversions need sm_89 or newer");
        return;
    }
    let code = kernels(&format!("{major}{minor}")).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();

    let out = memory.allocate(512 * 4, &stream).unwrap();
    let scale = F8E4M3::from_f32(-2.0);
    // SAFETY: 256 threads write 512 floats.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [256, 1, 1]),
            &code.get_kernel("fp8_to_float").unwrap(),
            &[&scale, &out],
        )
    }
    .unwrap();
    let got = out.to_vec::<f32>(&stream).unwrap();
    for b in 0..=255u8 {
        let want = F8E4M3::from_bits(b).to_f32() * -2.0;
        assert!(
            same(got[b as usize], want),
            "E4M3 {b:#04x}: {} vs {want}",
            got[b as usize]
        );
        let want = F8E5M2::from_bits(b).to_f32() * -2.0;
        let g = got[256 + b as usize];
        assert!(same(g, want), "E5M2 {b:#04x}: {g} vs {want}");
    }

    let n = 1usize << 20;
    // Random bit patterns: every exponent, both signs, NaNs and infinities; plus exact ties.
    let mut inputs: Vec<f32> = common::random_u32(7, n)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    for (k, b) in (0..=254u8).enumerate() {
        // Halfway between neighbouring E4M3 values, where they are finite neighbours.
        let (lo, hi) = (
            F8E4M3::from_bits(b).to_f32(),
            F8E4M3::from_bits(b + 1).to_f32(),
        );
        inputs[k] = (lo + hi) / 2.0;
        // And values near the formats' ranges.
        inputs[256 + k] = f32::from_bits(0x3000_0000 + ((k as u32) << 20));
    }
    let mut input = memory.allocate(4 * n, &stream).unwrap();
    input.copy_from_host(&inputs, &stream).unwrap();
    let e4m3 = memory.allocate(n, &stream).unwrap();
    let e5m2 = memory.allocate(n, &stream).unwrap();
    // SAFETY: n floats in, n bytes out to each.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n as u64, 256),
            &code.get_kernel("float_to_fp8").unwrap(),
            &[&input, &(n as u32), &e4m3, &e5m2],
        )
    }
    .unwrap();
    let (got4, got5) = (
        e4m3.to_vec::<F8E4M3>(&stream).unwrap(),
        e5m2.to_vec::<F8E5M2>(&stream).unwrap(),
    );
    let wrong: Vec<_> = (0..n)
        .filter(|&i| {
            let (w4, w5) = (F8E4M3::from_f32(inputs[i]), F8E5M2::from_f32(inputs[i]));
            !same(got4[i].to_f32(), w4.to_f32()) || !same(got5[i].to_f32(), w5.to_f32())
        })
        .take(5)
        .map(|i| (inputs[i], got4[i].to_bits(), got5[i].to_bits()))
        .collect();
    assert!(
        wrong.is_empty(),
        "(input, E4M3, E5M2) that differ: {wrong:?}"
    );
}
