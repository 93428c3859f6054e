"""System-wide information: the device count, driver versions, and NVML's view of each GPU."""

from typing import List, Optional, Tuple

from . import CUDAError
from . import Device as _CudaDevice

num_devices: int
"""The number of CUDA devices the driver sees (read on each access)."""
driver_version: Tuple[int, int]
"""The CUDA driver's version, ``(major, minor)`` (read on each access)."""

def get_num_devices() -> int:
    """The number of CUDA devices the driver sees."""

def get_user_mode_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)``."""

def get_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)`` (``get_user_mode_driver_version()``)."""

def get_kernel_mode_driver_version() -> Tuple[int, ...]:
    """The kernel-mode driver's version from NVML, such as ``(580, 65, 6)``."""

def get_nvml_version() -> Tuple[int, ...]:
    """NVML's own version."""

class NvmlError(CUDAError):
    """An NVML error; ``call`` names the NVML query."""

class LibraryNotFoundError(NvmlError, RuntimeError):
    """NVML (libnvidia-ml.so.1) could not be loaded; the message lists what was tried."""

class NotSupportedError(NvmlError):
    """The GPU or driver does not support this NVML query."""

class MemoryInfo:
    """Device memory, in bytes."""

    @property
    def total(self) -> int:
        """Total device memory."""
    @property
    def used(self) -> int:
        """Device memory allocated."""
    @property
    def free(self) -> int:
        """Device memory not allocated."""

class Utilization:
    """How busy the GPU was over the last sample period, in percent."""

    @property
    def gpu(self) -> int:
        """Percent of the time one or more kernels ran."""
    @property
    def memory(self) -> int:
        """Percent of the time device memory was read or written."""

class Temperature:
    """A GPU's temperatures, in °C."""

    def get_sensor(self) -> int:
        """The GPU sensor's temperature now."""
    def get_threshold(self, threshold_type: str) -> int:
        """A limit: "shutdown", "slowdown", "gpu_max" or "mem_max"."""

class PciInfo:
    """A GPU's place on the PCI bus and its PCIe link."""

    @property
    def bus_id(self) -> str:
        """``domain:bus:device.function``, as NVML writes it."""
    @property
    def domain(self) -> int:
        """The PCI domain."""
    @property
    def bus(self) -> int:
        """The bus."""
    @property
    def device(self) -> int:
        """The device's id on the bus."""
    @property
    def vendor_id(self) -> int:
        """The PCI vendor id."""
    @property
    def device_id(self) -> int:
        """The PCI device id."""
    @property
    def subsystem_id(self) -> Optional[int]:
        """The subsystem id, where NVML gives one."""
    @property
    def current_link_generation(self) -> int:
        """The PCIe generation now."""
    @property
    def current_link_width(self) -> int:
        """The PCIe lanes now."""
    @property
    def max_link_generation(self) -> int:
        """The highest PCIe generation supported."""
    @property
    def max_link_width(self) -> int:
        """The most PCIe lanes."""
    @property
    def tx_throughput(self) -> int:
        """PCIe bytes sent over the last 20 ms, in KB/s."""
    @property
    def rx_throughput(self) -> int:
        """PCIe bytes received over the last 20 ms, in KB/s."""

class ClockInfo:
    """A clock domain of a GPU, in MHz."""

    def get_current_mhz(self) -> int:
        """The clock's speed now."""
    def get_max_mhz(self) -> int:
        """The most it can run at."""

class ProcessInfo:
    """A process running compute work on a GPU."""

    @property
    def pid(self) -> int:
        """Its process id."""
    @property
    def used_gpu_memory(self) -> Optional[int]:
        """Device memory it uses, in bytes, where NVML can tell."""

class Device:
    """A GPU as NVML sees it; give exactly one of ``index``, ``uuid`` and ``pci_bus_id``."""

    def __init__(
        self,
        *,
        index: Optional[int] = None,
        uuid: Optional[str] = None,
        pci_bus_id: Optional[str] = None,
    ) -> None: ...
    @staticmethod
    def get_device_count() -> int:
        """How many GPUs NVML sees."""
    @staticmethod
    def get_all_devices() -> List["Device"]:
        """Every GPU NVML sees."""
    @property
    def index(self) -> int:
        """NVML's index of the GPU."""
    @property
    def uuid(self) -> str:
        """The UUID with its ``GPU-`` prefix."""
    @property
    def uuid_without_prefix(self) -> str:
        """The UUID as CUDA writes it."""
    @property
    def name(self) -> str:
        """The product name."""
    @property
    def serial(self) -> str:
        """The board's serial number."""
    @property
    def pci_bus_id(self) -> str:
        """The PCI bus id, as NVML writes it."""
    @property
    def memory_info(self) -> MemoryInfo:
        """Device memory now."""
    @property
    def utilization(self) -> Utilization:
        """GPU and memory utilization over the last sample period."""
    @property
    def temperature(self) -> Temperature:
        """The GPU's temperatures."""
    @property
    def pci_info(self) -> PciInfo:
        """The GPU's PCI place and link."""
    @property
    def performance_state(self) -> Optional[int]:
        """The P-state, 0 to 15; None where unknown."""
    @property
    def num_fans(self) -> int:
        """How many fans the board has."""
    def get_clock(self, clock_type: str) -> ClockInfo:
        """A clock domain: "graphics", "sm", "memory" or "video"."""
    @property
    def compute_running_processes(self) -> List[ProcessInfo]:
        """The processes running compute work on the GPU."""
    def to_cuda_device(self) -> _CudaDevice:
        """The CUDA device that is this GPU (RuntimeError where this process does not see it)."""
