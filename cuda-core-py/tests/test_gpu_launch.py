"""On a real GPU: compile, cache, load and launch, and read what the kernels wrote back.

Host copies use ``Buffer.copy_from(src, *, stream)`` / ``Buffer.copy_to(dst, *, stream)`` with
NumPy arrays (host memory of the buffer's size).
"""

import ctypes

import pytest
from conftest import _required

from cudacore_rs import Device, LaunchConfig, ObjectCode, Program, ProgramOptions, launch
from cudacore_rs.utils import InMemoryProgramCache

pytestmark = pytest.mark.gpu

try:
    import numpy as np
except ImportError:  # said per test: a GPU run that requires these fails without NumPy
    np = None

SAXPY = r"""
extern "C" __global__ void saxpy(float alpha, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""

CLUSTER = r"""
extern "C" __global__ void ranks(unsigned* out) {
    unsigned rank, clusters;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(clusters));
    if (threadIdx.x == 0) {
        out[2 * blockIdx.x] = rank;
        out[2 * blockIdx.x + 1] = clusters;
    }
}
"""


@pytest.fixture
def device():
    if np is None:
        if _required("gpu"):
            pytest.fail("CUDA_CORE_TEST_REQUIRE names gpu, and NumPy is not installed")
        pytest.skip("not run: needs NumPy")
    d = Device(0)
    d.set_current()
    return d


def arch(device):
    cc = device.compute_capability
    return f"sm_{cc.major}{cc.minor}"


def test_saxpy_end_to_end(device):
    n = 100_000
    cache = InMemoryProgramCache()
    key = f"saxpy_{arch(device)}"
    if cache.get(key) is None:
        program = Program(SAXPY, "c++", options=ProgramOptions(arch=arch(device)))
        cache[key] = program.compile("cubin")
    kernel = ObjectCode.from_cubin(cache.get(key)).get_kernel("saxpy")
    stream = device.create_stream()
    mr = device.memory_resource
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    buf_x, buf_y, buf_o = (mr.allocate(4 * n, stream=stream) for _ in range(3))
    buf_x.copy_from(x, stream=stream)
    buf_y.copy_from(y, stream=stream)
    config = LaunchConfig(grid=(n + 255) // 256, block=256)
    launch(stream, config, kernel, np.float32(3.0), buf_x.handle, buf_y.handle, buf_o.handle, ctypes.c_int(n))
    out = np.zeros(n, dtype=np.float32)
    buf_o.copy_to(out, stream=stream)
    stream.sync()
    # The GPU contracts a * x + y into one fused multiply-add (one rounding): NumPy's float32
    # expression rounds twice, so allow one float32 ulp or so.
    np.testing.assert_allclose(out, 3.0 * x + y, rtol=1e-5, atol=1e-6)
    # Buffers themselves, Python scalars: the same result.
    buf_o.fill(0, stream=stream)
    launch(stream, config, kernel, 2.0, buf_x, buf_y, buf_o, n)
    buf_o.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-5, atol=1e-6)
    for b in (buf_x, buf_y, buf_o):
        b.close()
    stream.close()


def test_kernel_attributes_and_occupancy_are_plausible(device):
    code = Program(SAXPY, "c++", ProgramOptions(arch=arch(device))).compile("cubin")
    kernel = code.get_kernel("saxpy")
    attributes = kernel.attributes
    cc = device.compute_capability
    assert 32 <= attributes.max_threads_per_block() <= 1024
    assert 0 < attributes.num_regs() <= 255
    assert attributes.binary_version() == cc.major * 10 + cc.minor
    assert attributes.ptx_version() >= 50
    assert attributes.shared_size_bytes() == 0 and attributes.local_size_bytes() == 0
    assert [p.size for p in kernel.arguments_info] == [4, 8, 8, 8, 4]
    assert kernel.num_arguments == 5
    occupancy = kernel.occupancy
    blocks = occupancy.max_active_blocks_per_multiprocessor(256, 0)
    assert 1 <= blocks <= 2048 // 256
    grid, block = occupancy.max_potential_block_size(0, 0)
    assert grid >= 1 and 32 <= block <= 1024 and block % 32 == 0
    assert occupancy.available_dynamic_shared_memory_per_block(1, 256) >= 48 * 1024


def test_a_cluster_launch_counts_clusters(device):
    if device.compute_capability.major < 9:
        pytest.skip("not run: thread-block clusters need compute capability 9.0")
    code = Program(CLUSTER, "c++", ProgramOptions(arch=arch(device))).compile("cubin")
    kernel = code.get_kernel("ranks")
    stream = device.create_stream()
    clusters, size = 4, 2
    config = LaunchConfig(grid=clusters, cluster=size, block=32)
    blocks = clusters * size
    out_buf = device.memory_resource.allocate(8 * blocks, stream=stream)
    out_buf.fill(0xFF, stream=stream)
    launch(stream, config, kernel, out_buf)
    out = np.zeros(2 * blocks, dtype=np.uint32)
    out_buf.copy_to(out, stream=stream)
    stream.sync()
    # grid counts clusters: 8 blocks ran, in 4 clusters of 2, ranks 0 1 0 1 ...
    assert list(out[0::2]) == [0, 1] * clusters
    assert set(out[1::2]) == {clusters}
    occupancy = kernel.occupancy
    assert occupancy.max_potential_cluster_size(config, stream) >= size
    assert occupancy.max_active_clusters(config, stream) >= 1
    out_buf.close()
    stream.close()


SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


@pytest.mark.parametrize("wait", ["stream", "event"])
def test_a_wait_on_running_work_lets_other_threads_run(device, wait):
    import threading
    import time

    code = Program(SPIN, "c++", ProgramOptions(arch=arch(device))).compile("cubin")
    kernel = code.get_kernel("spin")
    stream = device.create_stream()
    rate = device.properties.clock_rate  # kHz
    launch(stream, LaunchConfig(grid=1, block=1), kernel, np.int64(rate * 300))  # ~300 ms
    event = stream.record()
    counted = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counted[0] += 1

    other = threading.Thread(target=count)
    other.start()
    time.sleep(0.01)
    before = counted[0]
    started = time.perf_counter()
    if wait == "stream":
        stream.sync()
    else:
        event.sync()
    waited = time.perf_counter() - started
    during = counted[0] - before
    stop.set()
    other.join()
    # The wait really waited for the kernel (a bug: returned after the first query).
    assert waited > 0.1, waited
    # The other thread counted while this one waited: the GIL was handed over (a bug: held
    # through the wait, leaving the counter at what the interpreter's switch interval allows,
    # a few hundred increments in 300 ms).
    assert during > 100_000, during
    stream.close()
