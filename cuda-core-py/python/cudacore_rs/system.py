"""System-wide information: the device count and driver versions, and NVML's view of each GPU.

``get_num_devices()``, ``get_user_mode_driver_version()`` (also ``get_driver_version()``) and
the module attributes ``num_devices`` and ``driver_version`` ask the CUDA driver, each time (the
attributes through PEP 562's ``__getattr__``). ``Device`` (``cuda.core.system.Device``: name,
UUID, memory, utilization, temperature, PCI, clocks, processes),
``get_kernel_mode_driver_version()`` and ``get_nvml_version()`` ask NVML (libnvidia-ml.so.1,
which comes with the driver; ``CUDA_CORE_NVML_PATH`` names another file). Where NVML cannot be
loaded they raise ``LibraryNotFoundError``, a ``CUDAError`` and a ``RuntimeError``.
"""

from typing import Tuple

from . import _native

__all__ = [
    "ClockInfo",
    "Device",
    "LibraryNotFoundError",
    "MemoryInfo",
    "NotSupportedError",
    "NvmlError",
    "PciInfo",
    "ProcessInfo",
    "Temperature",
    "Utilization",
    "driver_version",
    "get_driver_version",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_user_mode_driver_version",
    "num_devices",
]

Device = _native._SystemDevice
MemoryInfo = _native._MemoryInfo
Utilization = _native._Utilization
Temperature = _native._Temperature
PciInfo = _native._PciInfo
ClockInfo = _native._ClockInfo
ProcessInfo = _native._ProcessInfo
NvmlError = _native._NvmlError
LibraryNotFoundError = _native._LibraryNotFoundError
NotSupportedError = _native._NotSupportedError


def get_num_devices() -> int:
    """The number of CUDA devices the driver sees."""
    return _native._num_devices()


def get_user_mode_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)``: ``(13, 0)`` for a 13.0 driver."""
    return _native._driver_version()


def get_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)``: ``get_user_mode_driver_version()``."""
    return _native._driver_version()


def _version_tuple(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split(".") if part.isdigit())


def get_kernel_mode_driver_version() -> Tuple[int, ...]:
    """The kernel-mode driver's version from NVML, such as ``(580, 65, 6)``."""
    return _version_tuple(_native._kernel_mode_driver_version())


def get_nvml_version() -> Tuple[int, ...]:
    """NVML's own version, such as ``(13, 580, 65, 6)``."""
    return _version_tuple(_native._nvml_version())


def __getattr__(name: str):
    if name == "num_devices":
        return get_num_devices()
    if name == "driver_version":
        return get_user_mode_driver_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
