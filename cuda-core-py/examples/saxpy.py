"""SAXPY from source to checked result: compile once through a program cache, allocate from
a memory pool, copy in, launch, copy out, check.

    python3 cuda-core-py/examples/saxpy.py [N]
"""

import ctypes
import sys

import numpy as np

from cudacore_rs import (
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LaunchConfig,
    ObjectCode,
    Program,
    ProgramOptions,
    launch,
)
from cudacore_rs.utils import InMemoryProgramCache

SOURCE = r"""
extern "C" __global__ void saxpy(float a, const float* __restrict__ x,
                                 const float* __restrict__ y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""


def kernel_for(device, cache):
    """The saxpy kernel for `device`, compiled on the first call only."""
    arch = f"sm_{device.arch}"
    key = f"saxpy-{arch}"
    if cache.get(key) is None:
        cache[key] = Program(SOURCE, "c++", options=ProgramOptions(arch=arch)).compile("cubin")
    return ObjectCode.from_cubin(cache.get(key)).get_kernel("saxpy")


def main(n):
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    print(f"{device.name}: {device.properties.multiprocessor_count} SMs")

    kernel = kernel_for(device, InMemoryProgramCache())
    pool = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    nbytes = n * np.dtype(np.float32).itemsize
    x_dev, y_dev, out_dev = (pool.allocate(nbytes, stream=stream) for _ in range(3))

    x = np.arange(n, dtype=np.float32) % 7
    y = np.full(n, 0.5, dtype=np.float32)
    x_dev.copy_from(x, stream=stream)
    y_dev.copy_from(y, stream=stream)

    a = np.float32(3.0)
    block = 256
    config = LaunchConfig(grid=(n + block - 1) // block, block=block)
    # Buffers order themselves on the stream; an int address (x_dev.handle) works as well.
    launch(stream, config, kernel, a, x_dev, y_dev, out_dev, ctypes.c_int(n))

    out = np.empty(n, dtype=np.float32)
    out_dev.copy_to(out, stream=stream)
    stream.sync()
    assert np.allclose(out, a * x + y), "saxpy gave a wrong result"
    print(f"saxpy over {n:,} floats: correct (out[1] = {out[1]:.1f})")

    for buffer in (x_dev, y_dev, out_dev):
        buffer.close(stream)
    stream.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
