//! Work that makes no failing driver call of its own, run under compute-sanitizer's four tools
//! with `--error-exitcode` (`compute-sanitizer --tool <tool> --error-exitcode 1 <test binary>
//! --include-ignored sanitizer_clean::`): a user who runs the sanitizer on a program like these
//! must see none of cuda-core's errors.

use crate::common;

use cuda_core::{
    launch, memory::PinnedMemoryResource, Allocate, CodeType, EventOptions, LaunchConfig,
    ObjectCode, Program, ProgramOptions, StreamOptions,
};

const SOURCE: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
#[ignore = "needs a CUDA GPU"]
fn compile_launch_copy_and_time_across_two_streams() {
    let device = common::device();
    device.set_current().unwrap();
    let program = Program::new(SOURCE, ProgramOptions::default());
    // The same kernel from a cubin and from PTX: each reads its parameter count from its image.
    let cubin = program.compile(CodeType::Cubin, &[]).unwrap();
    let ptx = ObjectCode::from_ptx(program.compile(CodeType::Ptx, &[]).unwrap().code().to_vec());
    let s1 = device.create_stream(StreamOptions::default()).unwrap();
    let s2 = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let n = 1u32 << 16;
    let bytes = 4 * n as usize;
    let mut x = memory.allocate(bytes, &s1).unwrap();
    let mut y = memory.allocate(bytes, &s1).unwrap();
    x.copy_from_host(&vec![1.0f32; n as usize], &s1).unwrap();
    y.fill(0u32, &s1).unwrap();
    let config = LaunchConfig::for_elements(n.into(), 256);
    for code in [&cubin, &ptx] {
        let saxpy = code.get_kernel("saxpy").unwrap();
        let start = s2.record_new(EventOptions::timing()).unwrap();
        // On s2, with buffers of s1: ordered both ways by the launch itself.
        // SAFETY: n floats in x and y.
        unsafe { launch(&s2, &config, &saxpy, &[&2.0f32, &x, &y, &n]) }.unwrap();
        let end = s2.record_new(EventOptions::timing()).unwrap();
        end.sync().unwrap();
        assert!(end.elapsed_since(&start).is_ok());
    }
    let mut z = memory.allocate(bytes, &s2).unwrap();
    z.copy_from(&y, &s2).unwrap();
    let pinned = PinnedMemoryResource::new(device).unwrap();
    let mut host = pinned.allocate(bytes, &s1).unwrap();
    host.copy_from(&z, &s1).unwrap();
    s1.sync().unwrap();
    // SAFETY: no stream writes `host` any more: s1 was synchronised after the copy.
    let values = unsafe { host.as_slice::<f32>() }.unwrap();
    assert!(values.iter().all(|&v| v == 4.0), "{}", values[0]);
    drop((x, y, z, host));
    s1.sync().unwrap();
    s2.sync().unwrap();
}
