"""System-wide information: ``system.num_devices`` and ``system.driver_version``.

Both are read from the driver each time they are asked for (module attributes through PEP 562's
``__getattr__``); ``get_num_devices()`` and ``get_user_mode_driver_version()`` are the same
queries as functions.
"""

from typing import Tuple

from . import _native

__all__ = ["get_num_devices", "get_user_mode_driver_version", "num_devices", "driver_version"]


def get_num_devices() -> int:
    """The number of CUDA devices the driver sees."""
    return _native._num_devices()


def get_user_mode_driver_version() -> Tuple[int, int]:
    """The CUDA driver's version as ``(major, minor)``: ``(13, 0)`` for a 13.0 driver."""
    return _native._driver_version()


def __getattr__(name: str):
    if name == "num_devices":
        return get_num_devices()
    if name == "driver_version":
        return get_user_mode_driver_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
