"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate.

One wheel serves CUDA 12 and CUDA 13 drivers: the driver (libcuda.so.1) is loaded at run time and
its version picks the ABI (``CUDA_CORE_DRIVER_ABI=12`` or ``13`` forces one). A cuda.core program
ports by changing its imports, for what this package covers so far: ``Device``, ``Stream``,
``Event``, ``StreamOptions``, ``EventOptions``, ``DeviceMemoryResource``, ``PinnedMemoryResource``,
``ManagedMemoryResource`` (and their options), ``Buffer``,
``CUDAError`` and ``system``.
"""

from . import system
from ._native import (
    Buffer,
    ComputeCapability,
    CUDAError,
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Event,
    EventOptions,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    Stream,
    StreamOptions,
)

__all__ = [
    "Buffer",
    "CUDAError",
    "ComputeCapability",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "Event",
    "EventOptions",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Stream",
    "StreamOptions",
    "system",
]
