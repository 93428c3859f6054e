"""What the suite runs against: the stand-in driver (CPU) or a real GPU.

The stand-in (cuda-core/tests/standin/libcuda_standin.c, built by ci.sh) is found as
libcuda.so.1 on LD_LIBRARY_PATH; it exports ``standin_log``, which a real driver does not.
Every test but those marked ``nodriver`` needs a driver (skipped without one); tests marked
``standin`` need the stand-in; tests marked ``gpu`` need a real driver with a device and are
skipped without one, unless CUDA_CORE_TEST_REQUIRE (a comma list) names ``gpu``: then they fail.
Tests that compile call ``needs_nvrtc()``: without NVRTC they say "not run", and fail where
CUDA_CORE_TEST_REQUIRE names ``nvrtc`` (or ``nvrtc-12`` / ``nvrtc-13``, as the CI's does).
"""

import ctypes
import os

import pytest


def _required(what):
    names = os.environ.get("CUDA_CORE_TEST_REQUIRE", "").split(",")
    return what in (n.strip() for n in names)


def _driver():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


_LIB = _driver()
IS_STANDIN = _LIB is not None and hasattr(_LIB, "standin_log")


def _has_gpu():
    if _LIB is None or IS_STANDIN:
        return False
    import cudacore_rs

    try:
        return cudacore_rs.system.num_devices > 0
    except cudacore_rs.CUDAError:
        return False


HAS_GPU = _has_gpu()


def pytest_runtest_setup(item):
    if _LIB is None and not item.get_closest_marker("nodriver"):
        why = "no CUDA driver (libcuda.so.1) loads: run ci.sh, or put the stand-in on LD_LIBRARY_PATH"
        if _required("gpu"):
            pytest.fail(f"CUDA_CORE_TEST_REQUIRE names gpu, and this test could not run: {why}")
        pytest.skip(why)
    if item.get_closest_marker("gpu") and not HAS_GPU:
        why = "no CUDA GPU here (the driver is missing or is the stand-in)"
        if _required("gpu"):
            pytest.fail(f"CUDA_CORE_TEST_REQUIRE names gpu, and this test could not run: {why}")
        pytest.skip(why)
    if item.get_closest_marker("standin") and not IS_STANDIN:
        pytest.skip("needs the stand-in driver as libcuda.so.1 (see ci.sh)")


class Standin:
    """The stand-in driver's hooks: its call log and its injected failures."""

    def __init__(self, lib):
        self._lib = lib
        lib.standin_log.restype = ctypes.c_char_p
        lib.standin_set_sync_status.argtypes = [ctypes.c_int]

    def log(self):
        """The driver calls logged since the last clear, one per line."""
        return self._lib.standin_log().decode()

    def calls(self, needle):
        """The logged calls that contain ``needle``."""
        return [line for line in self.log().splitlines() if needle in line]

    def clear(self):
        self._lib.standin_log_clear()

    def set_sync_status(self, code):
        """Makes every cuStreamSynchronize answer ``code`` (0: succeed again)."""
        self._lib.standin_set_sync_status(code)


@pytest.fixture
def standin():
    """The stand-in's hooks, its log cleared; skips the test on a real driver."""
    if not IS_STANDIN:
        pytest.skip("needs the stand-in driver as libcuda.so.1 (see ci.sh)")
    hooks = Standin(_LIB)
    hooks.clear()
    yield hooks
    hooks.set_sync_status(0)


def needs_two_devices():
    """Whether two devices are there; else says "not run" (as a skip once the test's
    one-device part ran), and fails where CUDA_CORE_TEST_REQUIRE names ``two-gpus``."""
    import cudacore_rs

    count = cudacore_rs.system.num_devices
    if count >= 2:
        return True
    why = f"not run: needs two CUDA devices (found {count})"
    if _required("two-gpus"):
        pytest.fail(f"CUDA_CORE_TEST_REQUIRE names two-gpus: {why}")
    pytest.skip(why)



def _without_standin_env():
    """The environment minus the stand-in: NVRTC loads libcuda.so.1 itself and calls
    cuGetExportTable, which the stand-in lacks, and crashes inside nvrtcCompileProgram; so
    compiles run where no stand-in is on LD_LIBRARY_PATH (on a real driver, nothing changes)."""
    env = dict(os.environ)
    if IS_STANDIN:
        dirs = env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
        kept = [d for d in dirs if d and not os.path.exists(os.path.join(d, "libcuda.so.1"))]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(kept)
    return env


def run_compiles(script):
    """Runs ``script`` (Python source) in a fresh interpreter without the stand-in (see
    ``_without_standin_env``) and returns the JSON value of its last line of output; a
    failure of the script fails the test with its output."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", script],
        env=_without_standin_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.fail(f"the compile script failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


_NVRTC = []


def needs_nvrtc():
    """Whether NVRTC loads and compiles (an empty kernel for sm_90, checked once, in a fresh
    interpreter: see ``run_compiles``); else says "not run" (a skip), and fails where
    CUDA_CORE_TEST_REQUIRE names ``nvrtc``, ``nvrtc-12`` or ``nvrtc-13``."""
    if not _NVRTC:
        probe = """
import json
import cudacore_rs
try:
    options = cudacore_rs.ProgramOptions(arch="sm_90")
    cudacore_rs.Program('extern "C" __global__ void k() {}', "c++", options).compile("ptx")
    print(json.dumps(None))
except Exception as e:
    print(json.dumps(f"{type(e).__name__}: {e}".splitlines()[0]))
"""
        _NVRTC.append(run_compiles(probe))
    why = _NVRTC[0]
    if why is None:
        return True
    why = f"not run: NVRTC cannot compile here ({why})"
    if any(_required(name) for name in ("nvrtc", "nvrtc-12", "nvrtc-13")):
        pytest.fail(f"CUDA_CORE_TEST_REQUIRE names nvrtc: {why}")
    pytest.skip(why)


def managed_resource_or_skip():
    """A `ManagedMemoryResource`, or "not run" where the driver has no managed pools (the CUDA 12
    ABI, or a driver before 13.0); fails where CUDA_CORE_TEST_REQUIRE names ``managed-pools``."""
    import cudacore_rs

    try:
        return cudacore_rs.ManagedMemoryResource()
    except cudacore_rs.CUDANotSupportedError as e:
        why = f"not run: no managed memory pools here: {e}"
        if _required("managed-pools"):
            pytest.fail(f"CUDA_CORE_TEST_REQUIRE names managed-pools: {why}")
        pytest.skip(why)
