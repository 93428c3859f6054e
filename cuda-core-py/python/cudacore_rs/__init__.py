"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate.

One wheel serves CUDA 12 and CUDA 13 drivers: the driver (libcuda.so.1) is loaded at run time and
its version picks the ABI (``CUDA_CORE_DRIVER_ABI=12`` or ``13`` forces one). A cuda.core program
ports by changing its imports, for what this package covers: devices (``Device``, its
``properties`` and ``resources``), contexts and green contexts (``Context``, ``ContextOptions``,
``SMResource``, ``SMResourceOptions``), ``Stream``, ``Event`` and their options, memory
(``DeviceMemoryResource``, ``PinnedMemoryResource``, ``ManagedMemoryResource``, their options,
``Buffer`` with DLPack), compilation and launch (``Program``, ``ProgramOptions``,
``ObjectCode``, ``Kernel``, ``LaunchConfig``, ``launch``), ``CUDAError`` and its kinds (such as
``CUDAOutOfMemoryError``), ``utils`` (the program caches) and ``system`` (with NVML).
"""

from importlib.metadata import PackageNotFoundError as _NotFound
from importlib.metadata import version as _version

from . import system, utils

try:
    __version__ = _version("cudacore-rs")
except _NotFound:  # imported from a source tree, not installed
    __version__ = "0+unknown"
from ._native import (
    Buffer,
    ComputeCapability,
    Context,
    ContextOptions,
    CUDAError,
    CUDAIllegalAddressError,
    CUDAInvalidContextError,
    CUDAInvalidDeviceError,
    CUDAInvalidHandleError,
    CUDAInvalidValueError,
    CUDALaunchError,
    CUDANoDeviceError,
    CUDANotFoundError,
    CUDANotInitializedError,
    CUDANotReadyError,
    CUDANotSupportedError,
    CUDAOutOfMemoryError,
    CUDAStreamCaptureError,
    Device,
    DeviceProperties,
    DeviceResources,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Event,
    EventOptions,
    SMResource,
    SMResourceOptions,
    Kernel,
    KernelAttributes,
    KernelOccupancy,
    LaunchConfig,
    ObjectCode,
    Program,
    ProgramOptions,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    Stream,
    StreamOptions,
    launch,
)

__all__ = [
    "Buffer",
    "CUDAError",
    "CUDAIllegalAddressError",
    "CUDAInvalidContextError",
    "CUDAInvalidDeviceError",
    "CUDAInvalidHandleError",
    "CUDAInvalidValueError",
    "CUDALaunchError",
    "CUDANoDeviceError",
    "CUDANotFoundError",
    "CUDANotInitializedError",
    "CUDANotReadyError",
    "CUDANotSupportedError",
    "CUDAOutOfMemoryError",
    "CUDAStreamCaptureError",
    "ComputeCapability",
    "Context",
    "ContextOptions",
    "Device",
    "DeviceProperties",
    "DeviceResources",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "Event",
    "EventOptions",
    "SMResource",
    "SMResourceOptions",
    "Kernel",
    "KernelAttributes",
    "KernelOccupancy",
    "LaunchConfig",
    "ObjectCode",
    "Program",
    "ProgramOptions",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Stream",
    "StreamOptions",
    "launch",
    "system",
    "utils",
]
