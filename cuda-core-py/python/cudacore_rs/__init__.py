"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate.

One wheel serves CUDA 12 and CUDA 13 drivers: the driver (libcuda.so.1) is loaded at run time and
its version picks the ABI (``CUDA_CORE_DRIVER_ABI=12`` or ``13`` forces one). A cuda.core program
ports by changing its imports, for what this package covers so far: ``Device``, ``Stream``,
``Event``, ``StreamOptions``, ``EventOptions``, ``DeviceMemoryResource``, ``Buffer``,
``Program``, ``ProgramOptions``, ``ObjectCode``, ``Kernel``, ``LaunchConfig``, ``launch``,
``CUDAError``, ``system`` and ``utils`` (the program caches).
"""

from . import system, utils
from ._native import (
    Buffer,
    ComputeCapability,
    CUDAError,
    Device,
    DeviceMemoryResource,
    Event,
    EventOptions,
    Kernel,
    KernelAttributes,
    KernelOccupancy,
    LaunchConfig,
    ObjectCode,
    Program,
    ProgramOptions,
    Stream,
    StreamOptions,
    launch,
)

__all__ = [
    "Buffer",
    "CUDAError",
    "ComputeCapability",
    "Device",
    "DeviceMemoryResource",
    "Event",
    "EventOptions",
    "Kernel",
    "KernelAttributes",
    "KernelOccupancy",
    "LaunchConfig",
    "ObjectCode",
    "Program",
    "ProgramOptions",
    "Stream",
    "StreamOptions",
    "launch",
    "system",
    "utils",
]
