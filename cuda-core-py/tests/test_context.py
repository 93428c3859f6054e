"""Contexts, green contexts and SM resources, on the CPU.

The green-context tests build the stand-in driver (132 SMs per device, groups rounded up to 8
SMs, 2 with backfill) as libcuda.so.1 and run each scenario in a child process against it, so
that each starts with a log and contexts of its own; a driver without green contexts is the
same stand-in built with ``-DSTANDIN_NO_GREEN``. What needs no green context (no driver call
before an argument error) runs in this process.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import cudacore_rs
from cudacore_rs import (
    Context,
    ContextOptions,
    CUDANotSupportedError,
    Device,
    SMResource,
    SMResourceOptions,
)

HERE = os.path.dirname(os.path.abspath(__file__))


def build_standin(tmp_path_factory, *defines):
    """A directory holding the stand-in driver, built with ``defines``, as libcuda.so.1."""
    from conftest import IS_STANDIN

    if not IS_STANDIN:
        pytest.skip("needs the stand-in driver (see ci.sh)")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in")
    out = tmp_path_factory.mktemp("green")
    source = os.path.join(HERE, "..", "..", "cuda-core", "tests", "standin", "libcuda_standin.c")
    subprocess.run(
        [cc, *defines, "-shared", "-fPIC", "-pthread", "-o", str(out / "libcuda.so.1"),
         source, "-lm"],
        check=True,
    )
    return str(out)


@pytest.fixture(scope="module")
def green_driver(tmp_path_factory):
    """A directory holding the stand-in as libcuda.so.1."""
    return build_standin(tmp_path_factory)


@pytest.fixture(scope="module")
def no_green_driver(tmp_path_factory):
    """A directory holding the stand-in without green contexts as libcuda.so.1."""
    return build_standin(tmp_path_factory, "-DSTANDIN_NO_GREEN")


PRELUDE = """
import ctypes, threading
import cudacore_rs
from cudacore_rs import *
_lib = ctypes.CDLL("libcuda.so.1")
_lib.standin_log.restype = ctypes.c_char_p
def calls(needle):
    return [l for l in _lib.standin_log().decode().splitlines() if needle in l]
def clear():
    _lib.standin_log_clear()
"""


def run_green(green_driver, body):
    """Runs ``body`` (Python, with PRELUDE's names) against the green stand-in; returns its
    stdout, failing the test with its output where it fails."""
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = green_driver + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env.pop("CUDA_CORE_DRIVER_ABI", None)
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, f"child failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# ---- a driver without green contexts, and what fails before the driver -----------------------


@pytest.mark.standin
def test_resources_without_green_support_raise_not_supported(no_green_driver):
    # A driver without cuDeviceGetDevResource: cuda.core raises NotImplementedError where the
    # driver cannot make green contexts; this is both that and a CUDAError.
    run_green(no_green_driver, """
        import pytest
        with pytest.raises(CUDANotSupportedError) as raised:
            Device(0).resources.sm
        assert isinstance(raised.value, NotImplementedError)
        assert isinstance(raised.value, cudacore_rs.CUDAError)
        assert raised.value.code is None
        assert raised.value.call == "cuDeviceGetDevResource"
    """)


@pytest.mark.standin
def test_create_context_refuses_bad_options_before_the_driver(standin):
    d = Device(0)
    with pytest.raises(ValueError):
        d.create_context()
    with pytest.raises(ValueError):
        d.create_context(ContextOptions([]))
    with pytest.raises(TypeError):
        d.create_context(ContextOptions([1, 2]))
    with pytest.raises(TypeError):
        d.create_context(ContextOptions("sm"))
    with pytest.raises(TypeError):
        d.create_context(42)
    assert standin.calls("cuGreenCtx") == []
    assert standin.calls("cuDevResource") == []


@pytest.mark.standin
def test_set_current_refuses_what_is_not_a_context(standin):
    with pytest.raises(TypeError):
        Device(0).set_current(42)
    assert standin.calls("cuCtxSetCurrent") == []


@pytest.mark.nodriver
def test_classes_cannot_be_made_directly():
    for cls in (Context, SMResource, cudacore_rs.DeviceResources):
        with pytest.raises(RuntimeError):
            cls()


@pytest.mark.nodriver
def test_options_hold_cuda_core_fields():
    o = SMResourceOptions(count=[8, 16], backfill=True)
    assert o.count == [8, 16]
    assert o.coscheduled_sm_count is None
    assert o.preferred_coscheduled_sm_count is None
    assert o.backfill is True
    assert SMResourceOptions().backfill is False
    assert SMResourceOptions().count is None
    assert o == SMResourceOptions(count=[8, 16], backfill=True)
    assert o != SMResourceOptions(count=[8, 8], backfill=True)
    assert "count=[8, 16]" in repr(o)
    c = ContextOptions(["x"])
    assert c.resources == ["x"]


# ---- against the green stand-in, in a child process ---------------------------------------------


def test_device_sm_resource(green_driver):
    run_green(green_driver, """
        sm = Device(0).resources.sm
        assert isinstance(sm, SMResource)
        assert sm.sm_count == 132
        assert sm.min_partition_size == 8
        assert sm.coscheduled_alignment == 8
        assert "132" in repr(sm)
    """)


def test_split_halves_and_contexts(green_driver):
    out = run_green(green_driver, """
        d = Device(0); d.set_current()
        groups, rest = d.resources.sm.split(SMResourceOptions(count=[64, 64]))
        assert [g.sm_count for g in groups] == [64, 64]
        assert rest.sm_count == 132 - 128
        assert len(calls("cuDevSmResourceSplitByCount groups=2 min=64")) == 1
        ctx_a = d.create_context(ContextOptions([groups[0]]))
        ctx_b = d.create_context(ContextOptions([groups[1]]))
        assert ctx_a.is_green and ctx_b.is_green
        assert ctx_a.resources.sm.sm_count == 64
        assert ctx_a != ctx_b and ctx_a == ctx_a
        assert ctx_a.device is d
        assert "green" in repr(ctx_a)
        both = d.create_context({"resources": [groups[0], groups[1]]})
        assert both.resources.sm.sm_count == 128
        assert len(calls("cuGreenCtxCreate")) == 3
        for c in (ctx_a, ctx_b, both):
            c.close()
        print(len(calls("cuGreenCtxDestroy")))
    """)
    assert out.strip() == "3"


def test_split_asks_too_much_raises_value_error(green_driver):
    run_green(green_driver, """
        import pytest
        sm = Device(0).resources.sm
        clear()
        # 66 + 66 rounds to 72 + 72 > 132: the driver makes one group, and the split refuses.
        with pytest.raises(ValueError):
            sm.split(SMResourceOptions(count=[66, 66]))
        # more than there are: refused before the driver
        n = len(calls("cuDevSmResourceSplitByCount"))
        with pytest.raises(ValueError):
            sm.split(SMResourceOptions(count=[100, 100]))
        assert len(calls("cuDevSmResourceSplitByCount")) == n
    """)


def test_split_options_checked_before_the_driver(green_driver):
    run_green(green_driver, """
        import pytest
        sm = Device(0).resources.sm
        clear()
        for bad, error in [
            (SMResourceOptions(count=[]), ValueError),
            (SMResourceOptions(count=-8), ValueError),
            (SMResourceOptions(count="8"), TypeError),
            (SMResourceOptions(count=[8, "8"]), TypeError),
            (SMResourceOptions(count=8.0), TypeError),
            (SMResourceOptions(count=8, backfill=[True]), ValueError),
            (SMResourceOptions(count=[8, 8], backfill=[True]), ValueError),
            (SMResourceOptions(count=[8, 8], backfill="yes"), TypeError),
            (SMResourceOptions(count=[8, 8], coscheduled_sm_count=[2]), ValueError),
            (SMResourceOptions(count=8, coscheduled_sm_count=2), NotImplementedError),
            (SMResourceOptions(count=[8, 8], preferred_coscheduled_sm_count=[4, 4]),
             NotImplementedError),
        ]:
            with pytest.raises(error):
                sm.split(bad)
        with pytest.raises(TypeError):
            sm.split(8)
        assert calls("cuDevSmResourceSplitByCount") == []
    """)


def test_split_scalar_discovery_dict_backfill_and_uneven(green_driver):
    run_green(green_driver, """
        sm = Device(0).resources.sm
        groups, rest = sm.split(SMResourceOptions(count=16))
        assert [g.sm_count for g in groups] == [16] and rest.sm_count == 116
        groups, rest = sm.split({"count": None})  # discovery: the smallest group
        assert [g.sm_count for g in groups] == [8] and rest.sm_count == 124
        groups, rest = sm.split(SMResourceOptions(count=3))  # rounded up to 8
        assert [g.sm_count for g in groups] == [8]
        groups, rest = sm.split(SMResourceOptions(count=3, backfill=True))  # to 2s
        assert [g.sm_count for g in groups] == [4]
        assert calls("flags=1")
        clear()
        groups, rest = sm.split(SMResourceOptions(count=[16, 32, 8]))
        assert [g.sm_count for g in groups] == [16, 32, 8]
        assert rest.sm_count == 132 - 56
        assert len(calls("cuDevSmResourceSplitByCount")) == 3
        # a group split further
        sub, left = groups[1].split(SMResourceOptions(count=[8, 8]))
        assert [g.sm_count for g in sub] == [8, 8] and left.sm_count == 16
    """)


def test_dry_run_groups_cannot_make_contexts(green_driver):
    run_green(green_driver, """
        import pytest
        d = Device(0)
        groups, rest = d.resources.sm.split(SMResourceOptions(count=[8, 8]), dry_run=True)
        assert [g.sm_count for g in groups] == [8, 8]
        assert "dry run" in repr(groups[0])
        with pytest.raises(ValueError):
            d.create_context(ContextOptions([groups[0]]))
        assert calls("cuGreenCtxCreate") == []
    """)


def test_group_of_another_device_is_refused_before_the_driver(green_driver):
    run_green(green_driver, """
        import pytest
        g1, _ = Device(1).resources.sm.split(SMResourceOptions(count=8))
        with pytest.raises(ValueError):
            Device(0).create_context(ContextOptions(g1))
        assert calls("cuGreenCtxCreate") == []
    """)


def test_streams_events_and_sync_in_a_green_context(green_driver):
    run_green(green_driver, """
        d = Device(0); d.set_current()
        groups, _ = d.resources.sm.split(SMResourceOptions(count=[32, 32]))
        ctx = d.create_context(ContextOptions([groups[0]]))
        clear()
        s = ctx.create_stream()
        assert isinstance(s, Stream)
        assert len(calls("cuGreenCtxStreamCreate")) == 1
        assert calls("cuStreamCreate ") == []
        assert s.device is d
        e = ctx.create_event({"timing_enabled": False})
        assert isinstance(e, Event)
        s.record(e)
        s.sync(); e.sync(); ctx.sync()
        assert calls("cuCtxSynchronize")
        # a foreign wrap of the green stream finds its context
        w = Stream.from_handle(s.handle)
        assert w == s and w.handle == s.handle
        w.close()
        assert calls("cuStreamDestroy") == []   # not owned: not destroyed
        s2 = ctx.create_stream()
        ctx.close()
        assert ctx.is_closed and not ctx.is_green and ctx.handle is None
        assert "closed" in repr(ctx)
        # streams made before keep working, and the green context lives while they do
        s2.sync()
        assert calls("cuGreenCtxDestroy") == []
        s.close(); s2.close(); e.close()
        assert len(calls("cuGreenCtxDestroy")) == 1
        ctx.close()   # twice: harmless
        import pytest
        for use in (lambda: ctx.create_stream(), lambda: ctx.create_event(),
                    lambda: ctx.sync(), lambda: ctx.resources):
            with pytest.raises(RuntimeError):
                use()
    """)


def test_primary_context_and_set_current(green_driver):
    run_green(green_driver, """
        import pytest
        d = Device(0)
        assert d.set_current() is None
        primary = d.context
        assert not primary.is_green and "primary" in repr(primary)
        assert primary.resources.sm.sm_count == 132
        with pytest.raises(RuntimeError):
            primary.create_stream()   # as in cuda.core: use Device.create_stream
        groups, _ = d.resources.sm.split(SMResourceOptions(count=[16, 16]))
        a = d.create_context(ContextOptions([groups[0]]))
        b = d.create_context(ContextOptions([groups[1]]))
        previous = d.set_current(a)
        assert previous == primary
        assert not previous.is_green
        assert d.set_current(b) == a
        with pytest.raises(RuntimeError):
            b.close()       # current: refused, as in cuda.core
        assert not b.is_closed
        assert d.set_current(previous) == b
        b.close(); a.close()
        with pytest.raises(RuntimeError):
            d.set_current(a)   # closed
        with pytest.raises(ValueError):
            Device(1).set_current(primary)   # another device's
        with d.create_context(ContextOptions([groups[0]])) as c:
            assert c.is_green
        assert c.is_closed
    """)


def test_two_threads_each_on_its_own_green_context(green_driver):
    out = run_green(green_driver, """
        d = Device(0); d.set_current()
        total = d.resources.sm.sm_count
        groups, rest = d.resources.sm.split(SMResourceOptions(count=[64, 64]))
        ctxs = [d.create_context(ContextOptions([g])) for g in groups]
        errors = []
        def run_task(ctx):
            try:
                d.set_current()
                for _ in range(50):
                    s = ctx.create_stream()
                    e = s.record()
                    s.sync(); e.sync()
                    e.close(); s.close()
            except BaseException as exc:
                errors.append(exc)
        threads = [threading.Thread(target=run_task, args=(c,)) for c in ctxs]
        for t in threads: t.start()
        for t in threads: t.join()
        assert errors == [], errors
        for c in ctxs: c.close()
        print(len(calls("cuGreenCtxStreamCreate")), len(calls("cuGreenCtxDestroy")))
    """)
    assert out.split() == ["100", "2"]


def test_create_stream_from_foreign_object(green_driver):
    run_green(green_driver, """
        import gc, pytest, weakref
        d = Device(0); d.set_current()
        owner = d.create_stream()
        class Foreign:
            def __init__(self, handle): self.handle = handle
            def __cuda_stream__(self): return (0, self.handle)
        f = Foreign(owner.handle)
        ref = weakref.ref(f)
        s = d.create_stream(f)
        assert s.handle == owner.handle
        del f; gc.collect()
        assert ref() is not None   # held while the stream lives
        s.close(); del s; gc.collect()
        assert ref() is None
        class Bad:
            def __cuda_stream__(self): return 5
        with pytest.raises(TypeError):
            d.create_stream(Bad())
        with pytest.raises(TypeError):
            d.create_stream(object())
        with pytest.raises(TypeError):
            Stream.from_handle("0x10")
        with pytest.raises(ValueError):
            Stream.from_handle(-1)
        owner.close()
    """)
