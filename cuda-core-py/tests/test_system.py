"""cudacore_rs.system: the driver queries, and NVML's errors where NVML is missing."""

import os
import subprocess
import sys
import textwrap

import pytest

import cudacore_rs
from cudacore_rs import CUDAError, system


def _run(body, **env):
    full = dict(os.environ, **env)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], env=full,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.nodriver
def test_names_and_error_classes():
    for name in ("get_num_devices", "get_driver_version", "get_user_mode_driver_version",
                 "get_kernel_mode_driver_version", "get_nvml_version", "Device",
                 "MemoryInfo", "Utilization", "NvmlError", "LibraryNotFoundError",
                 "NotSupportedError"):
        assert name in system.__all__ and getattr(system, name).__doc__, name
    assert issubclass(system.NvmlError, CUDAError)
    assert issubclass(system.LibraryNotFoundError, system.NvmlError)
    assert issubclass(system.LibraryNotFoundError, RuntimeError)
    assert issubclass(system.NotSupportedError, system.NvmlError)
    assert system.Device.__module__ == "cudacore_rs.system"
    assert system.Device is not cudacore_rs.Device


@pytest.mark.standin
def test_driver_queries(standin):
    assert system.get_num_devices() == system.num_devices == 2
    assert system.get_driver_version() == system.get_user_mode_driver_version() == (13, 0)


@pytest.mark.standin
def test_system_device_arguments_checked_before_nvml(standin):
    for kwargs in ({}, {"index": 0, "uuid": "GPU-x"}):
        with pytest.raises(ValueError):
            system.Device(**kwargs)
    with pytest.raises(TypeError):
        system.Device(0)   # keyword-only, as in cuda.core
    with pytest.raises(ValueError):
        system.Device(pci_bus_id="not a bus id")


@pytest.mark.standin
def test_without_nvml_everything_raises_library_not_found(standin):
    # CUDA_CORE_NVML_PATH names the NVML file to load: a missing one makes NVML unavailable
    # on any machine (a child process: NVML is loaded once per process).
    missing = "/nonexistent/libnvidia-ml.so.1"
    out = _run(f"""
        import ctypes, pytest
        from cudacore_rs import CUDAError, Device, system
        lib = ctypes.CDLL("libcuda.so.1"); lib.standin_log.restype = ctypes.c_char_p
        lib.standin_log_clear()
        for call in (lambda: Device(0).to_system_device(),
                     system.get_kernel_mode_driver_version,
                     system.get_nvml_version,
                     system.Device.get_device_count,
                     system.Device.get_all_devices,
                     lambda: system.Device(index=0),
                     lambda: system.Device(uuid="GPU-00000000-0000-0000-0000-000000000000")):
            with pytest.raises(system.LibraryNotFoundError) as raised:
                call()
            e = raised.value
            assert isinstance(e, CUDAError) and isinstance(e, RuntimeError)
            assert e.code is None and e.name is None
            assert {missing!r} in str(e)
        # NVML is looked for first: no CUDA driver call was made for to_system_device
        assert "cuDeviceGetUuid" not in lib.standin_log().decode()
        # the CUDA side still works
        assert system.get_num_devices() == 2
        print("ok")
    """, CUDA_CORE_NVML_PATH=missing)
    assert out.strip() == "ok"
