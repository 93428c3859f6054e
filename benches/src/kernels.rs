//! The CUDA C++ the suites compile (with NVRTC, at run time, for the device they run on).

/// Empty kernels with 0, 4 (three pointers and an `int`) and 16 parameters (four pointers and
/// twelve `int`s): a launch of one costs the launch path and nothing on the device.
pub const LAUNCH_KERNELS: &str = r#"
extern "C" __global__ void empty0() {}

extern "C" __global__ void empty4(float* a, const float* b, float* c, int n) {}

extern "C" __global__ void empty16(float* p0, float* p1, float* p2, float* p3,
    int i0, int i1, int i2, int i3, int i4, int i5,
    int i6, int i7, int i8, int i9, int i10, int i11) {}
"#;

/// The names of [`LAUNCH_KERNELS`]' kernels, by parameter count.
pub const EMPTY0: &str = "empty0";
/// See [`EMPTY0`].
pub const EMPTY4: &str = "empty4";
/// See [`EMPTY0`].
pub const EMPTY16: &str = "empty16";

/// SAXPY, the program the compile and cache suites build.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

/// The kernel name of [`SAXPY`].
pub const SAXPY_KERNEL: &str = "saxpy";

/// The program the `first_launch` example launches once, in a fresh process.
pub const FIRST_LAUNCH: &str = r#"extern "C" __global__ void first_launch() {}"#;

/// The kernel name of [`FIRST_LAUNCH`].
pub const FIRST_LAUNCH_KERNEL: &str = "first_launch";

/// The `first_launch` example's variants (its modes besides `prime`), in the order they run.
/// `cuda-core+preload` is `cuda-core` after `cuda_core::preload_nvrtc()`; `bench-report`
/// leaves it out of the table, and the README gives it.
pub const FIRST_LAUNCH_VARIANTS: [&str; 4] = ["raw", "cuda-core", "cudarc", "cuda-core+preload"];

/// The file, in the `first_launch` cache directory, that holds the cubin for the raw and
/// cudarc variants (written by the priming run).
pub const FIRST_LAUNCH_CUBIN: &str = "first_launch.cubin";

/// A producer and a consumer for programmatic dependent launch (compute capability 9.0): the
/// producer lets its dependent launch at once, then works about 5 us and writes; the consumer
/// waits for it (`griddepcontrol.wait`) before reading.
pub const PDL_KERNELS: &str = r#"
extern "C" __global__ void producer(unsigned* data, unsigned n) {
    asm volatile("griddepcontrol.launch_dependents;");
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < 5000ull);
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = i;
}

extern "C" __global__ void consumer(const unsigned* data, unsigned* out, unsigned n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = data[i] + 1u;
}
"#;

/// The names of [`PDL_KERNELS`]' kernels.
pub const PDL_PRODUCER: &str = "producer";
/// See [`PDL_PRODUCER`].
pub const PDL_CONSUMER: &str = "consumer";
