"""Two kernels at once on two green contexts, each with half of the device's SMs, driven from
two Python threads.

    python3 cuda-core-py/examples/green_contexts.py
"""

import threading

import numpy as np

from cudacore_rs import (
    ContextOptions,
    Device,
    LaunchConfig,
    Program,
    ProgramOptions,
    SMResourceOptions,
    launch,
)

SOURCE = r"""
extern "C" __global__ void axpb(float a, const float* x, float b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + b;
}
"""
N = 1 << 22


def work(device, context, kernel, a, b, results, name):
    device.set_current()
    stream = context.create_stream()  # its kernels run on the context's SMs only
    pool = device.memory_resource
    x_dev = pool.allocate(N * 4, stream=stream)
    out_dev = pool.allocate(N * 4, stream=stream)
    x = np.full(N, 2.0, dtype=np.float32)
    x_dev.copy_from(x, stream=stream)
    config = LaunchConfig(grid=(N + 255) // 256, block=256)
    launch(stream, config, kernel, np.float32(a), x_dev, np.float32(b), out_dev, np.int32(N))
    out = np.empty(N, dtype=np.float32)
    out_dev.copy_to(out, stream=stream)
    stream.sync()
    results[name] = (context.resources.sm.sm_count, float(out[0]), bool((out == out[0]).all()))
    x_dev.close(stream)
    out_dev.close(stream)
    stream.close()


def main():
    device = Device(0)
    device.set_current()
    sm = device.resources.sm
    sms = sm.sm_count
    # Groups come in multiples of the device's co-scheduling alignment (8 SMs on an H100): ask
    # for the largest such half, so that two of them fit.
    half = sms // 2 // sm.coscheduled_alignment * sm.coscheduled_alignment
    groups, _rest = sm.split(SMResourceOptions(count=[half, half]))
    contexts = [device.create_context(ContextOptions([group])) for group in groups]
    print(f"{device.name}: {sms} SMs, split into {[c.resources.sm.sm_count for c in contexts]}")

    kernel = (
        Program(SOURCE, "c++", options=ProgramOptions(arch=f"sm_{device.arch}"))
        .compile("cubin")
        .get_kernel("axpb")
    )
    results = {}
    threads = [
        threading.Thread(target=work, args=(device, contexts[0], kernel, 3.0, 1.0, results, "A")),
        threading.Thread(target=work, args=(device, contexts[1], kernel, 5.0, 2.0, results, "B")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name, expected in (("A", 7.0), ("B", 12.0)):
        sm_count, value, uniform = results[name]
        assert value == expected and uniform, f"context {name} computed {value}"
        print(f"context {name} ({sm_count} SMs, green={contexts[0].is_green}): {value:.1f}")
    for context in contexts:
        context.close()


if __name__ == "__main__":
    main()
