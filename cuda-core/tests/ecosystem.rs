//! The ecosystem's plain-data types (features `half` and `bytemuck`): `half::f16` and
//! `half::bf16` as kernel arguments and buffer elements (SAXPY in both on the GPU), structs
//! that derive `bytemuck::Pod` in host copies and, through `device_repr!`, as kernel
//! arguments by value (a 64-byte aligned one too).

use crate::common;
use crate::common::standin;

use bytemuck::{Pod, Zeroable};
use half::{bf16, f16};

use cuda_core::{
    device_repr, launch, Allocate, CodeType, Device, Error, KernelArg, LaunchConfig, ObjectCode,
    Program, ProgramOptions, StreamOptions,
};

/// A buffer element: 16 bytes, no padding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
struct Particle {
    position: [f32; 3],
    mass: f32,
}

/// A kernel argument by value: 32 bytes, aligned to 8.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
struct Params {
    scale: f32,
    offset: f32,
    count: u32,
    flags: u32,
    bias: [f64; 2],
}

/// A kernel argument aligned to 64 bytes, as a tensor map is.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C, align(64))]
struct Wide {
    lanes: [u32; 16],
}

device_repr!(Params, Wide, Particle);

fn assert_refused<T: std::fmt::Debug>(result: cuda_core::Result<T>, argument: &str, says: &str) {
    match result {
        Err(Error::InvalidArgument { name, reason }) => {
            assert_eq!(name, argument, "{reason}");
            assert!(reason.contains(says), "{says:?} not in {reason:?}");
        }
        other => panic!("not refused: {other:?}"),
    }
}

/// Against the stand-in: `bytemuck` structs and `half` values copy to and from buffers as
/// their bytes (sizes counted by the element type, mismatches refused).
#[test]
fn pod_structs_and_half_values_copy_as_their_bytes() {
    standin::run(
        module_path!(),
        "pod_structs_and_half_values_copy_as_their_bytes",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = device.memory_resource().unwrap();
            let mut buffer = memory.allocate(64, &stream).unwrap();
            standin::clear_log();
            let particles = [Particle {
                position: [1.0, 2.0, 3.0],
                mass: 4.0,
            }; 4];
            buffer.copy_from_host(&particles, &stream).unwrap();
            assert!(standin::calls("cuMemcpyHtoDAsync")[0].contains("size=64"));
            assert_refused(
                buffer.copy_from_host(&particles[..3], &stream),
                "src",
                "48 bytes",
            );
            assert_eq!(buffer.to_vec::<Particle>(&stream).unwrap().len(), 4);
            let halves = buffer.to_vec::<f16>(&stream).unwrap();
            assert_eq!(halves.len(), 32);
            assert_eq!(buffer.to_vec::<bf16>(&stream).unwrap().len(), 32);
            let mut small = memory.allocate(6, &stream).unwrap();
            small.copy_from_host(&[f16::ONE; 3], &stream).unwrap();
            assert_refused(small.to_vec::<Particle>(&stream), "T", "16-byte values");
        },
    );
}

/// Against the stand-in: `half` values and `device_repr!` structs are kernel arguments of
/// their own size (2, 32 and 64 bytes), accepted by parameters of that size and refused by
/// others.
#[test]
fn half_values_and_pod_structs_are_kernel_arguments_of_their_size() {
    let params = Params {
        scale: 1.0,
        offset: 0.0,
        count: 1,
        flags: 0,
        bias: [0.0; 2],
    };
    let wide = Wide { lanes: [7; 16] };
    let cases: [(usize, &dyn KernelArg, bool); 6] = [
        (2, &f16::ONE, true),
        (2, &bf16::ONE, true),
        (2, &1u32, false),
        (32, &params, true),
        (64, &wide, true),
        (64, &params, false),
    ];
    assert_eq!(std::mem::align_of::<Wide>(), 64);
    standin::launch_with_parameter_sizes(
        module_path!(),
        "half_values_and_pod_structs_are_kernel_arguments_of_their_size",
        &cases,
    );
}

const KERNELS: &str = r#"
__device__ float h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ unsigned short f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ float b2f(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
__device__ unsigned short f2b(float f) { unsigned short b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f)); return b; }

// __half and __nv_bfloat16 are two bytes each: here as their bits.
extern "C" __global__ void saxpy_f16(unsigned short a, const unsigned short* x, unsigned short* y,
                                     unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = f2h(__fmaf_rn(h2f(a), h2f(x[i]), h2f(y[i])));
}

extern "C" __global__ void saxpy_bf16(unsigned short a, const unsigned short* x, unsigned short* y,
                                      unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = f2b(__fmaf_rn(b2f(a), b2f(x[i]), b2f(y[i])));
}

struct Params { float scale; float offset; unsigned count; unsigned flags; double bias[2]; };
struct Particle { float position[3]; float mass; };
struct __align__(64) Wide { unsigned lanes[16]; };

extern "C" __global__ void apply(Params p, float* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.count) out[i] = p.scale * (float)i + p.offset + (float)(p.bias[0] - p.bias[1])
                              + (float)p.flags;
}

extern "C" __global__ void weigh(const Particle* in, Particle scale, unsigned n, Particle* out) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Particle p = in[i];
    for (int k = 0; k < 3; k++) p.position[k] = p.position[k] * p.mass + scale.position[k];
    p.mass *= scale.mass;
    out[i] = p;
}

extern "C" __global__ void sum_wide(Wide w, unsigned* out) {
    unsigned s = 0;
    for (int k = 0; k < 16; k++) s += w.lanes[k] * (unsigned)(k + 1);
    out[0] = s;
}
"#;

fn kernels(arch: Option<&str>) -> cuda_core::Result<ObjectCode> {
    let mut options = ProgramOptions::default();
    options.arch = arch.map(str::to_owned);
    Program::new(KERNELS, options)
        .with_name("ecosystem_tests.cu")
        .compile(CodeType::Cubin, &[])
}

/// The GPU tests' device code compiles for sm_90 (checked here without a GPU).
#[test]
fn the_ecosystem_test_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    assert!(kernels(Some("90")).unwrap().code().starts_with(b"\x7fELF"));
}

/// Values in [-4, 4), of the seed.
fn values(seed: u64, n: usize) -> Vec<f32> {
    common::random_u32(seed, n)
        .into_iter()
        .map(|r| (r >> 8) as f32 / (1 << 24) as f32 * 8.0 - 4.0)
        .collect()
}

/// SAXPY in f16 and in bf16 at 1M elements: `a` passes by value as a `half` type, `x` and `y`
/// are buffers of them; every element is the CPU's fused multiply-add rounded to the type.
#[test]
#[ignore = "needs a CUDA GPU"]
fn f16_and_bf16_saxpy_matches_the_cpu() {
    let device = common::device();
    device.set_current().unwrap();
    let code = kernels(None).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let n = 1usize << 20;
    let config = LaunchConfig::for_elements(n as u64, 256);

    let (x, y): (Vec<f16>, Vec<f16>) = (
        values(1, n).into_iter().map(f16::from_f32).collect(),
        values(2, n).into_iter().map(f16::from_f32).collect(),
    );
    let a = f16::from_f32(1.75);
    let mut dx = memory.allocate(2 * n, &stream).unwrap();
    let mut dy = memory.allocate(2 * n, &stream).unwrap();
    dx.copy_from_host(&x, &stream).unwrap();
    dy.copy_from_host(&y, &stream).unwrap();
    // SAFETY: n halves in each buffer; the kernel reads x and updates y within n.
    unsafe {
        launch(
            &stream,
            &config,
            &code.get_kernel("saxpy_f16").unwrap(),
            &[&a, &dx, &dy, &(n as u32)],
        )
    }
    .unwrap();
    let out = dy.to_vec::<f16>(&stream).unwrap();
    let wrong = (0..n)
        .filter(|&i| {
            let want = f16::from_f32(a.to_f32().mul_add(x[i].to_f32(), y[i].to_f32()));
            out[i].to_bits() != want.to_bits()
        })
        .count();
    assert_eq!(wrong, 0, "f16 elements differ from the CPU's");

    let (x, y): (Vec<bf16>, Vec<bf16>) = (
        values(3, n).into_iter().map(bf16::from_f32).collect(),
        values(4, n).into_iter().map(bf16::from_f32).collect(),
    );
    let a = bf16::from_f32(-2.5);
    dx.copy_from_host(&x, &stream).unwrap();
    dy.copy_from_host(&y, &stream).unwrap();
    // SAFETY: as above.
    unsafe {
        launch(
            &stream,
            &config,
            &code.get_kernel("saxpy_bf16").unwrap(),
            &[&a, &dx, &dy, &(n as u32)],
        )
    }
    .unwrap();
    let out = dy.to_vec::<bf16>(&stream).unwrap();
    let wrong = (0..n)
        .filter(|&i| {
            let want = bf16::from_f32(a.to_f32().mul_add(x[i].to_f32(), y[i].to_f32()));
            out[i].to_bits() != want.to_bits()
        })
        .count();
    assert_eq!(wrong, 0, "bf16 elements differ from the CPU's");
    // A float where the kernel takes a half: refused by size before the driver.
    // SAFETY: refused before launch.
    let refused = unsafe {
        launch(
            &stream,
            &config,
            &code.get_kernel("saxpy_bf16").unwrap(),
            &[&2.5f32, &dx, &dy, &(n as u32)],
        )
    };
    assert_refused(refused, "args", "argument 0 of saxpy_bf16 is 4 bytes");
}

/// `bytemuck` structs by value and as buffer elements: each field of `Params` reaches the
/// kernel where its C struct has it; particles copied in, transformed by a kernel that also
/// takes one by value, and copied out compare with the CPU's; a 64-byte aligned struct passes
/// all sixteen lanes.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pod_structs_pass_by_value_and_as_buffer_elements() {
    let device = common::device();
    device.set_current().unwrap();
    let code = kernels(None).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();

    let params = Params {
        scale: 2.0,
        offset: 0.5,
        count: 1000,
        flags: 3,
        bias: [10.0, 4.0],
    };
    let mut out = memory.allocate(4 * 1024, &stream).unwrap();
    out.fill(0u32, &stream).unwrap();
    // SAFETY: the kernel writes `count` (1000) floats of a 1024-float buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(1024, 128),
            &code.get_kernel("apply").unwrap(),
            &[&params, &out],
        )
    }
    .unwrap();
    let got = out.to_vec::<f32>(&stream).unwrap();
    for (i, &v) in got.iter().enumerate() {
        let want = if i < 1000 {
            2.0 * i as f32 + 0.5 + 6.0 + 3.0
        } else {
            0.0
        };
        assert_eq!(v, want, "element {i}");
    }

    let n = 256usize;
    let particles: Vec<Particle> = (0..n)
        .map(|i| Particle {
            position: [i as f32, 1.0, -(i as f32)],
            mass: (i % 4) as f32,
        })
        .collect();
    let scale = Particle {
        position: [1.0, 2.0, 3.0],
        mass: 0.5,
    };
    let mut input = memory.allocate(16 * n, &stream).unwrap();
    input.copy_from_host(&particles, &stream).unwrap();
    let output = memory.allocate(16 * n, &stream).unwrap();
    // SAFETY: n particles in each buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n as u64, 64),
            &code.get_kernel("weigh").unwrap(),
            &[&input, &scale, &(n as u32), &output],
        )
    }
    .unwrap();
    let want: Vec<Particle> = particles
        .iter()
        .map(|p| Particle {
            position: [0, 1, 2].map(|k| p.position[k] * p.mass + scale.position[k]),
            mass: p.mass * scale.mass,
        })
        .collect();
    assert_eq!(output.to_vec::<Particle>(&stream).unwrap(), want);

    let wide = Wide {
        lanes: std::array::from_fn(|k| 100 + k as u32),
    };
    let sum = memory.allocate(4, &stream).unwrap();
    // SAFETY: the kernel writes one unsigned.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
            &code.get_kernel("sum_wide").unwrap(),
            &[&wide, &sum],
        )
    }
    .unwrap();
    let want: u32 = (0..16).map(|k| (100 + k) * (k + 1)).sum();
    assert_eq!(sum.to_vec::<u32>(&stream).unwrap(), [want]);
}
