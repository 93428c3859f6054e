//! FP4 (feature `float4`): `float4::F4E2M1` and the packed pair `float4::F4E2M1x2` as kernel
//! arguments of one byte and buffer elements (their bytes with the `bytemuck` feature); the
//! crate's conversions being CUDA's (checked on the host against the format's defining
//! values, and on the GPU against `cuda_fp4.h`'s conversions, CUDA's own definition where the
//! GPU has no FP4 instructions, for every byte and 1M pairs of floats).

use crate::common;
use crate::common::standin;

use float4::{F4E2M1x2, F4E2M1};

use cuda_core::{
    launch, Allocate, CodeType, Error, LaunchConfig, ObjectCode, Program, ProgramOptions,
    StreamOptions,
};

/// E2M1's sixteen values by their bits (sign in bit 3), as the OCP MX format defines them.
const VALUES: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// The crate's `F4E2M1` is E2M1 as CUDA's `__nv_fp4_e2m1` holds it (the value in the low
/// four bits of a byte) and `F4E2M1x2` is `__nv_fp4x2_e2m1` (the first value in the low four
/// bits, as `__nv_cvt_float2_to_fp4x2` puts `x.x`). Bugs caught: a `float4` release (or a swap
/// to another crate) whose pair order is the other way, whose conversions truncate instead of
/// rounding to nearest even, or whose overflow gives something else than the largest finite
/// value (E2M1 has no infinity nor NaN).
#[test]
fn float4_types_are_cudas_formats() {
    assert_eq!(std::mem::size_of::<F4E2M1>(), 1);
    assert_eq!(std::mem::size_of::<F4E2M1x2>(), 1);
    for bits in 0..16u8 {
        let want = VALUES[(bits & 7) as usize] * if bits & 8 != 0 { -1.0 } else { 1.0 };
        assert_eq!(F4E2M1::from_bits(bits).to_f64() as f32, want, "{bits:#x}");
    }
    let pair = F4E2M1x2::from_f32_pair(1.5, -4.0);
    assert_eq!(pair.to_bits(), 0xE3, "1.5 (0x3) low, -4.0 (0xE) high");
    assert_eq!(pair.to_f32_pair(), (1.5, -4.0));
    // Ties to even: 2.5 between 2 (0x4) and 3 (0x5), 5 between 4 (0x6) and 6 (0x7), 0.25
    // between 0 and 0.5, 0.75 between 0.5 (0x1) and 1 (0x2).
    for (x, bits) in [(2.5, 0x4), (5.0, 0x6), (0.25, 0x0), (0.75, 0x2), (2.6, 0x5)] {
        assert_eq!(F4E2M1::from_f64(x).to_bits(), bits, "{x}");
    }
    // Saturating to ±6.
    assert_eq!(F4E2M1::from_f64(100.0).to_bits(), 0x7);
    assert_eq!(F4E2M1::from_f64(f64::NEG_INFINITY).to_bits(), 0xF);
}

/// Against the stand-in: FP4 values are kernel arguments of one byte, accepted by a 1-byte
/// parameter and refused by a 2-byte one. Bugs caught: FP4 passed as a wider value (an
/// argument the driver would read past), or not a `KernelArg` at all (no compile).
#[test]
fn fp4_values_are_one_byte_kernel_arguments() {
    let one = F4E2M1::from_f64(1.0);
    let pair = F4E2M1x2::from_f32_pair(1.0, 2.0);
    standin::launch_with_parameter_sizes(
        module_path!(),
        "fp4_values_are_one_byte_kernel_arguments",
        &[
            (1, &one, true),
            (1, &pair, true),
            (2, &one, false),
            (2, &pair, false),
        ],
    );
}

const KERNELS: &str = r#"
#include <cuda_fp4.h>
// Every byte as a pair of E2M1 values through CUDA's conversion, each times `scale`'s first
// value (an `__nv_fp4x2_e2m1` by value), so that a wrong argument byte shows everywhere.
extern "C" __global__ void fp4x2_to_float(__nv_fp4x2_storage_t scale, float* out) {
    unsigned i = threadIdx.x;
    __half2_raw s = __nv_cvt_fp4x2_to_halfraw2(scale, __NV_E2M1);
    __half2_raw h = __nv_cvt_fp4x2_to_halfraw2((__nv_fp4x2_storage_t)i, __NV_E2M1);
    float factor = __half2float(__half(__half_raw{s.x}));
    out[2 * i] = __half2float(__half(__half_raw{h.x})) * factor;
    out[2 * i + 1] = __half2float(__half(__half_raw{h.y})) * factor;
}
// Pairs of floats to E2M1 pairs with CUDA's conversion (round to nearest even).
extern "C" __global__ void float_to_fp4x2(const float* in, unsigned n, unsigned char* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = __nv_cvt_float2_to_fp4x2(make_float2(in[2 * i], in[2 * i + 1]), __NV_E2M1,
                                      cudaRoundNearest);
}
"#;

fn kernels(arch: &str) -> cuda_core::Result<ObjectCode> {
    let options = ProgramOptions::default()
        .with_arch(arch.to_owned())
        .with_toolkit_includes(true);
    Program::new(KERNELS, options)
        .with_name("float4_tests.cu")
        .compile(CodeType::Cubin, &[])
}

/// The GPU test's device code compiles for sm_90 with the toolkit's `cuda_fp4.h` (checked
/// here without a GPU, where NVRTC and the headers are).
#[test]
fn the_float4_test_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    match kernels("90") {
        Ok(code) => assert!(code.code().starts_with(b"\x7fELF")),
        Err(Error::InvalidArgument { reason, .. }) if reason.contains("include") => {
            common::not_run("cuda-headers", &format!("no CUDA headers: {reason}"));
        }
        Err(e) => panic!("{e}"),
    }
}

/// Whether two floats are the same value (zero's sign included).
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits()
}

/// On the GPU: CUDA's E2M1 to half for all 256 bytes, scaled by an `F4E2M1x2` kernel
/// argument, equals the crate's `to_f32_pair`; 1M pairs of floats over the whole range
/// (subnormals, ties, overflow, NaN) convert to the crate's `from_f32_pair`, bit for bit,
/// written as bytes and read back as `F4E2M1x2` bits. Bugs caught: the argument byte lost or
/// widened, the pair order swapped, the crate's rounding, saturation or NaN differing from
/// CUDA's.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cudas_fp4_conversions_match_the_crates() {
    let device = common::device();
    device.set_current().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let code = match kernels(&format!("{major}{minor}")) {
        Ok(code) => code,
        Err(Error::InvalidArgument { reason, .. }) if reason.contains("include") => {
            common::not_run("cuda-headers", &format!("no CUDA headers: {reason}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();

    let out = memory.allocate(512 * 4, &stream).unwrap();
    let scale = F4E2M1x2::from_f32_pair(-2.0, 0.5);
    // SAFETY: 256 threads write 512 floats.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [256, 1, 1]),
            &code.get_kernel("fp4x2_to_float").unwrap(),
            &[&scale, &out],
        )
    }
    .unwrap();
    let got = out.to_vec::<f32>(&stream).unwrap();
    for b in 0..=255u8 {
        let (lo, hi) = F4E2M1x2::from_bits(b).to_f32_pair();
        let (g0, g1) = (got[2 * b as usize], got[2 * b as usize + 1]);
        assert!(
            same(g0, lo * -2.0) && same(g1, hi * -2.0),
            "{b:#04x}: ({g0}, {g1}) vs ({}, {})",
            lo * -2.0,
            hi * -2.0
        );
    }

    let n = 1usize << 20;
    let mut inputs: Vec<f32> = common::random_u32(11, 2 * n)
        .into_iter()
        .map(|bits| f32::from_bits(bits) / 2f32.powi(100))
        .collect();
    // Raw patterns too (NaNs, infinities, every exponent), and the ties between neighbours.
    let raw = common::random_u32(13, n);
    for (i, bits) in raw.into_iter().enumerate().step_by(4) {
        inputs[i] = f32::from_bits(bits);
    }
    for k in 0..8 {
        let (lo, hi) = (VALUES[k], VALUES.get(k + 1).copied().unwrap_or(8.0));
        inputs[2 * k] = (lo + hi) / 2.0;
        inputs[2 * k + 1] = -(lo + hi) / 2.0;
    }
    let mut input = memory.allocate(4 * 2 * n, &stream).unwrap();
    input.copy_from_host(&inputs, &stream).unwrap();
    let pairs = memory.allocate(n, &stream).unwrap();
    // SAFETY: 2n floats in, n bytes out.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n as u64, 256),
            &code.get_kernel("float_to_fp4x2").unwrap(),
            &[&input, &(n as u32), &pairs],
        )
    }
    .unwrap();
    let got = pairs.to_vec::<u8>(&stream).unwrap();
    let wrong: Vec<_> = (0..n)
        .filter(|&i| F4E2M1x2::from_f32_pair(inputs[2 * i], inputs[2 * i + 1]).to_bits() != got[i])
        .take(5)
        .map(|i| (inputs[2 * i], inputs[2 * i + 1], got[i]))
        .collect();
    assert!(
        wrong.is_empty(),
        "(x, y, CUDA's pair) that differ: {wrong:?}"
    );
}
