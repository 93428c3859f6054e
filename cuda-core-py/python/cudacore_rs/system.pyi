"""System-wide information: the device count and the driver's version."""

from typing import Tuple

num_devices: int
"""The number of CUDA devices the driver sees (read on each access)."""
driver_version: Tuple[int, int]
"""The CUDA driver's version, ``(major, minor)`` (read on each access)."""

def get_num_devices() -> int:
    """The number of CUDA devices the driver sees."""

def get_user_mode_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)``."""
