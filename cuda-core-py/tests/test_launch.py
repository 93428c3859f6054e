"""LaunchConfig and launch against the stand-in.

The stand-in's kernels: k0, k1, k4 and k16 have 0, 1, 4 and 16 parameters of
STANDIN_PARAM_SIZE bytes (8 unless set); empty4 has three 8-byte parameters and an int. It logs
each launch (cuLaunchKernel, or cuLaunchKernelEx with the grid's x and the attributes, a
cluster as ``4:x.y.z``); with STANDIN_MODEL=1 the first argument of a plain launch too, where it
is a device address (``arg0=``). Settings the stand-in reads from the environment are tried in
a fresh interpreter.
"""

import ctypes
import json
import subprocess
import sys
import textwrap

import pytest
from test_program import minimal_cubin

from cudacore_rs import Device, LaunchConfig, ObjectCode, launch

pytestmark = pytest.mark.standin

BIG = 1 << 20


@pytest.fixture
def stream():
    Device(0).set_current()
    s = Device(0).create_stream()
    yield s
    s.close()


@pytest.fixture
def code():
    return ObjectCode.from_cubin(minimal_cubin())


def launches(standin):
    return standin.calls("cuLaunchKernel")


# ---- LaunchConfig -----------------------------------------------------------------------------


def test_launch_config_takes_ints_and_tuples():
    config = LaunchConfig(grid=8, block=(32, 4))
    assert config.grid == (8, 1, 1)
    assert config.block == (32, 4, 1)
    assert config.cluster is None
    assert config.shmem_size == 0
    assert config.cooperative_launch is False and config.is_cooperative is False
    full = LaunchConfig(grid=(2, 3, 4), cluster=(1, 1, 2), block=64, shmem_size=1024, cooperative_launch=True)
    assert (full.grid, full.cluster, full.shmem_size, full.cooperative_launch) == (
        (2, 3, 4),
        (1, 1, 2),
        1024,
        True,
    )
    assert LaunchConfig(grid=1, block=1, is_cooperative=True).cooperative_launch
    assert LaunchConfig(grid=8, block=32) == LaunchConfig(grid=(8,), block=(32, 1, 1))
    assert hash(LaunchConfig(grid=8, block=32)) == hash(LaunchConfig(grid=(8, 1), block=32))
    assert LaunchConfig(grid=8, block=32) != LaunchConfig(grid=8, block=64)
    # The same blocks, counted as clusters or not, are different configurations.
    assert LaunchConfig(grid=2, cluster=2, block=32) != LaunchConfig(grid=4, block=32)
    assert repr(full) == (
        "LaunchConfig(grid=(2, 3, 4), cluster=(1, 1, 2), block=(64, 1, 1), shmem_size=1024, "
        "cooperative_launch=True)"
    )


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(grid=0, block=32), ValueError),
        (dict(grid=-1, block=32), ValueError),
        (dict(grid=(1, 1, 1, 1), block=32), ValueError),
        (dict(grid=(), block=32), ValueError),
        (dict(grid=2**32, block=32), ValueError),
        (dict(grid=1.5, block=32), TypeError),
        (dict(grid=True, block=32), TypeError),
        (dict(grid="8", block=32), TypeError),
        (dict(block=32), ValueError),
        (dict(grid=1), ValueError),
        (dict(grid=1, block=(32, 0)), ValueError),
        (dict(grid=1, cluster=0, block=32), ValueError),
        (dict(grid=2**31, cluster=4, block=32), ValueError),
        (dict(grid=1, block=32, shmem_size=-1), ValueError),
        (dict(grid=1, block=32, shmem_size=1.0), TypeError),
        (dict(grid=1, block=32, cooperative_launch=True, is_cooperative=False), ValueError),
    ],
)
def test_launch_config_refuses_bad_values(kwargs, error):
    with pytest.raises(error):
        LaunchConfig(**kwargs)


# ---- launch -----------------------------------------------------------------------------------


def test_a_plain_launch_is_one_cuLaunchKernel(standin, stream, code):
    kernel = code.get_kernel("k4")
    buf = Device(0).memory_resource.allocate(BIG, stream=stream)
    standin.clear()
    launch(stream, LaunchConfig(grid=4, block=128), kernel, buf, 5, 2.5, ctypes.c_uint64(7))
    calls = launches(standin)
    assert len(calls) == 1 and calls[0].startswith("cuLaunchKernel k4 on s"), calls
    # The same buffer twice, and a raw address: no deadlock, one launch.
    launch(stream, LaunchConfig(grid=1, block=1), kernel, buf, buf, buf.handle, b"12345678")
    assert len(launches(standin)) == 2
    stream.sync()
    buf.close()


def test_a_cluster_grid_counts_clusters(standin, stream, code):
    kernel = code.get_kernel("k0")
    standin.clear()
    launch(stream, LaunchConfig(grid=4, cluster=2, block=32), kernel)
    (call,) = launches(standin)
    # 4 clusters of 2 blocks: the driver gets a grid of 8 blocks and the cluster shape.
    assert call.startswith("cuLaunchKernelEx k0") and "grid=8" in call and "4:2.1.1" in call, call
    launch(stream, LaunchConfig(grid=(3, 2), cluster=(4, 1), block=32), kernel)
    assert "grid=12" in launches(standin)[-1] and "4:4.1.1" in launches(standin)[-1]


def test_a_cooperative_launch_asks_for_it(standin, stream, code):
    standin.clear()
    launch(stream, LaunchConfig(grid=2, block=32, cooperative_launch=True), code.get_kernel("k0"))
    (call,) = launches(standin)
    assert call.startswith("cuLaunchKernelEx k0") and "2:1" in call, call


def test_a_wrong_argument_count_raises_before_the_driver(standin, stream, code):
    kernel = code.get_kernel("k4")
    standin.clear()
    with pytest.raises(TypeError, match=r"k4 takes 4 argument\(s\), 3 given"):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, 1, 2, 3)
    with pytest.raises(TypeError, match=r"k0 takes 0 argument\(s\), 1 given"):
        launch(stream, LaunchConfig(grid=1, block=1), code.get_kernel("k0"), 1)
    assert not launches(standin)


@pytest.mark.parametrize(
    "bad, index, error, message",
    [
        (b"123", 2, TypeError, "argument 2: 3 bytes"),
        (ctypes.c_int32(1), 1, TypeError, "argument 1: 4 bytes"),
        (object(), 3, TypeError, "argument 3: object is not a kernel argument"),
        ([1, 2], 0, TypeError, "argument 0: list is not a kernel argument"),
        ("text", 0, TypeError, "argument 0: str is not a kernel argument"),
        (2**64, 1, OverflowError, "argument 1"),
        (-(2**63) - 1, 2, OverflowError, "argument 2"),
    ],
)
def test_an_argument_that_does_not_fit_raises_before_the_driver(
    standin, stream, code, bad, index, error, message
):
    kernel = code.get_kernel("k4")
    args = [0, 0, 0, 0]
    args[index] = bad
    standin.clear()
    with pytest.raises(error, match=message):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, *args)
    assert not launches(standin)


def test_ints_fill_signed_or_unsigned_ranges_of_the_parameter(standin, stream, code):
    kernel = code.get_kernel("empty4")  # 8, 8, 8 bytes and a 4-byte int
    config = LaunchConfig(grid=1, block=1)
    standin.clear()
    for last in (2**32 - 1, -(2**31), 0, True):
        launch(stream, config, kernel, 2**64 - 1, -(2**63), 1.0, last)
    assert len(launches(standin)) == 4
    for last in (2**32, -(2**31) - 1):
        with pytest.raises(OverflowError, match="argument 3"):
            launch(stream, config, kernel, 0, 0, 0, last)
    # A 4-byte parameter takes a float (as a C float), not a buffer.
    launch(stream, config, kernel, 0, 0, 0, 1.5)
    buf = Device(0).memory_resource.allocate(256, stream=stream)
    with pytest.raises(TypeError, match="argument 3: a Buffer is an 8-byte address"):
        launch(stream, config, kernel, 0, 0, 0, buf)
    assert len(launches(standin)) == 5
    buf.close()


def test_closed_objects_and_wrong_types_raise(standin, stream, code):
    kernel = code.get_kernel("k1")
    config = LaunchConfig(grid=1, block=1)
    buf = Device(0).memory_resource.allocate(256, stream=stream)
    buf.close()
    standin.clear()
    with pytest.raises(RuntimeError, match="Buffer is closed"):
        launch(stream, config, kernel, buf)
    with pytest.raises(TypeError, match="Stream"):
        launch(None, config, kernel, 1)
    with pytest.raises(TypeError, match="LaunchConfig"):
        launch(stream, (1, 1), kernel, 1)
    with pytest.raises(TypeError, match="Kernel"):
        launch(stream, config, "k1", 1)
    other = Device(0).create_stream()
    other.close()
    with pytest.raises(RuntimeError, match="Stream is closed"):
        launch(other, config, kernel, 1)
    assert not launches(standin)


def test_many_arguments_past_the_inline_bound(standin, stream, code):
    kernel = code.get_kernel("k16")
    standin.clear()
    launch(stream, LaunchConfig(grid=1, block=1), kernel, *range(16))
    assert len(launches(standin)) == 1
    with pytest.raises(TypeError, match=r"takes 16 argument\(s\), 17 given"):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, *range(17))


# ---- what the driver gets, and settings of the stand-in (fresh interpreters) ------------------


def run_with(env, body):
    """Runs ``body`` in a fresh interpreter with the stand-in and these extra settings; returns
    the JSON of its last line."""
    import os

    script = "import ctypes, json\nfrom cudacore_rs import *\n" + textwrap.dedent(
        """
        def minimal_cubin():
            elf = bytearray(64)
            elf[:4] = b"\\x7fELF"
            elf[4], elf[5], elf[6] = 2, 1, 1
            elf[16], elf[18], elf[20] = 2, 190, 1
            elf[52], elf[54], elf[58] = 64, 56, 64
            return bytes(elf)
        lib = ctypes.CDLL("libcuda.so.1")
        lib.standin_log.restype = ctypes.c_char_p
        def log():
            return lib.standin_log().decode()
        Device(0).set_current()
        stream = Device(0).create_stream()
        """
    ) + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_argument_reaches_the_driver_as_given():
    # The strict model logs a plain launch's first argument where it is a device address.
    out = run_with(
        {"STANDIN_MODEL": "1"},
        """
        kernel = ObjectCode.from_cubin(minimal_cubin()).get_kernel("k4")
        buf = Device(0).memory_resource.allocate(1 << 20, stream=stream)
        config = LaunchConfig(grid=1, block=1)
        launch(stream, config, kernel, buf, 0, 0, 0)
        launch(stream, config, kernel, buf.handle + 16, 0, 0, 0)
        launch(stream, config, kernel, (buf.handle + 32).to_bytes(8, "little"), 0, 0, 0)
        stream.sync()
        lines = [l for l in log().splitlines() if "arg0=" in l]
        print(json.dumps([buf.handle, lines]))
        """,
    )
    handle, lines = out
    assert len(lines) == 3, lines
    for line, offset in zip(lines, (0, 16, 32)):
        assert f"arg0={handle + offset:#x}" in line, (line, offset)


def test_parameters_of_four_bytes_take_floats_and_ints_of_four_bytes():
    out = run_with(
        {"STANDIN_PARAM_SIZE": "4"},
        """
        kernel = ObjectCode.from_cubin(minimal_cubin()).get_kernel("k4")
        sizes = [p.size for p in kernel.arguments_info]
        config = LaunchConfig(grid=1, block=1)
        launch(stream, config, kernel, 1.5, 2**32 - 1, -(2**31), ctypes.c_float(2.0))
        errors = []
        for bad in (2**32, ctypes.c_double(1.0), 1 << 40):
            try:
                launch(stream, config, kernel, 0, 0, 0, bad)
            except (TypeError, OverflowError) as e:
                errors.append(type(e).__name__)
        launched = len([l for l in log().splitlines() if l.startswith("cuLaunchKernel")])
        print(json.dumps([sizes, errors, launched]))
        """,
    )
    sizes, errors, launched = out
    assert sizes == [4, 4, 4, 4]
    assert errors == ["OverflowError", "TypeError", "OverflowError"]
    assert launched == 1
