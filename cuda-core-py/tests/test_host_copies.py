"""Buffer.copy_from / Buffer.copy_to with host memory (buffer-protocol objects).

The stand-in does not keep device memory's contents: cuMemcpyHtoDAsync logs the copy, and
cuMemcpyDtoHAsync writes zeros over the destination it is given. So on the CPU these tests show
which copies reach the driver, with which sizes and into which memory, and what is refused
before any driver call; the bytes themselves round-trip in the GPU tests.
"""

import gc
import sys
import time

import pytest

from cudacore_rs import Device

np = pytest.importorskip("numpy")

N = 1 << 16  # floats: 256 KiB, above the crate's small-allocation cache


@pytest.fixture
def stream():
    s = Device(0).create_stream()
    yield s
    s.close()


@pytest.fixture
def buf(stream):
    b = Device(0).memory_resource.allocate(N * 4, stream=stream)
    yield b
    b.close()


def _flush_released(until, timeout=5.0):
    """Waits for `until()`: references dropped off the GIL are released when a thread next
    enters the extension, so each round makes a call into it."""
    deadline = time.monotonic() + timeout
    while not until():
        if time.monotonic() > deadline:
            return False
        Device(0).device_id
        time.sleep(0.005)
    return True


@pytest.mark.standin
def test_copy_from_numpy_is_one_stream_ordered_copy(standin, stream, buf):
    x = np.ones(N, dtype=np.float32) * 2.0
    standin.clear()
    assert buf.copy_from(x, stream=stream) is None
    copies = standin.calls("cuMemcpyHtoDAsync")
    assert len(copies) == 1, standin.log()
    assert f"{buf.handle:#x} size={N * 4}" in copies[0]
    # Stream-ordered: queued, not waited for; the array is held by a host function after it.
    assert standin.calls("cuStreamSynchronize") == []
    assert len(standin.calls("cuLaunchHostFunc")) == 1
    stream.sync()


@pytest.mark.standin
def test_copy_to_numpy_writes_the_array(standin, stream, buf):
    out = np.full(N, 7.0, dtype=np.float32)
    standin.clear()
    assert buf.copy_to(out, stream=stream) is out
    copies = standin.calls("cuMemcpyDtoHAsync")
    assert len(copies) == 1 and f"{buf.handle:#x} size={N * 4}" in copies[0], standin.log()
    stream.sync()
    # The stand-in writes zeros into the memory it is given: all of the array, none beyond.
    assert not out.any()


@pytest.mark.standin
def test_copy_to_a_slice_of_a_bigger_array_writes_only_that_slice(standin, stream, buf):
    big = np.full(N + 8, 7.0, dtype=np.float32)
    buf.copy_to(big[4 : N + 4], stream=stream)
    stream.sync()
    assert (big[:4] == 7.0).all() and (big[N + 4 :] == 7.0).all()
    assert not big[4 : N + 4].any()


@pytest.mark.standin
@pytest.mark.parametrize(
    "make",
    [
        lambda n: bytearray(n),
        lambda n: bytes(n),
        lambda n: memoryview(bytearray(n)),
        lambda n: memoryview(bytes(n)),
        lambda n: memoryview(bytearray(2 * n))[::2].tobytes(),
        lambda n: np.zeros(n // 4, dtype=np.int32).reshape(4, -1),
        lambda n: np.zeros(n, dtype=np.uint8).view(np.float64),
    ],
    ids=["bytearray", "bytes", "memoryview", "readonly-memoryview", "copy", "2d", "viewed"],
)
def test_copy_from_any_contiguous_host_object(standin, stream, buf, make):
    src = make(N * 4)
    standin.clear()
    buf.copy_from(src, stream=stream)
    copies = standin.calls("cuMemcpyHtoDAsync")
    assert len(copies) == 1 and f"size={N * 4}" in copies[0], standin.log()
    stream.sync()


@pytest.mark.standin
@pytest.mark.parametrize(
    "make",
    [lambda n: bytearray(b"\x07" * n), lambda n: memoryview(bytearray(b"\x07" * n))],
    ids=["bytearray", "memoryview"],
)
def test_copy_to_writable_host_objects(standin, stream, buf, make):
    dst = make(N * 4)
    standin.clear()
    assert buf.copy_to(dst, stream=stream) is dst
    assert len(standin.calls("cuMemcpyDtoHAsync")) == 1
    stream.sync()
    assert bytes(dst) == bytes(N * 4)


@pytest.mark.standin
def test_refused_before_any_driver_call(standin, stream, buf):
    f32 = np.zeros(N, dtype=np.float32)
    cases = [
        (lambda: buf.copy_from(np.zeros(N - 1, dtype=np.float32), stream=stream), ValueError, "bytes"),
        (lambda: buf.copy_to(np.zeros(N + 1, dtype=np.float32), stream=stream), ValueError, "bytes"),
        (lambda: buf.copy_from(bytearray(3), stream=stream), ValueError, "bytes"),
        (lambda: buf.copy_from(np.zeros(2 * N, dtype=np.float32)[::2], stream=stream), ValueError, "contiguous"),
        (lambda: buf.copy_to(np.zeros(2 * N, dtype=np.float32)[::2], stream=stream), ValueError, "contiguous"),
        (lambda: buf.copy_from(np.zeros((N // 4, 4), dtype=np.float32, order="F"), stream=stream), ValueError, "contiguous"),
        (lambda: buf.copy_from(memoryview(bytearray(8 * N))[::2], stream=stream), ValueError, "contiguous"),
        (lambda: buf.copy_to(bytes(N * 4), stream=stream), ValueError, "read-only"),
        (lambda: buf.copy_to(memoryview(bytes(N * 4)), stream=stream), ValueError, "read-only"),
        (lambda: buf.copy_to(np.frombuffer(bytes(N * 4), dtype=np.float32), stream=stream), ValueError, "read-only"),
        (lambda: buf.copy_from(object(), stream=stream), TypeError, "buffer protocol"),
        (lambda: buf.copy_to([0.0] * N, stream=stream), TypeError, "buffer protocol"),
        (lambda: buf.copy_from(f32, stream=None), TypeError, "Stream"),
        (lambda: buf.copy_to(f32, stream=object()), TypeError, "Stream"),
    ]
    standin.clear()
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()
    assert standin.log() == "", standin.log()


@pytest.mark.standin
def test_closed_buffer_is_refused_before_the_driver(standin, stream):
    buf = Device(0).memory_resource.allocate(N * 4, stream=stream)
    buf.close()
    standin.clear()
    with pytest.raises(RuntimeError, match="closed"):
        buf.copy_from(np.zeros(N, dtype=np.float32), stream=stream)
    with pytest.raises(RuntimeError, match="closed"):
        buf.copy_to(np.zeros(N, dtype=np.float32), stream=stream)
    assert standin.calls("cuMemcpy") == []


@pytest.mark.standin
def test_the_host_object_is_held_until_the_stream_passes_the_copy(standin, stream, buf):
    x = np.zeros(N, dtype=np.float32)
    before = sys.getrefcount(x)
    buf.copy_from(x, stream=stream)
    # The stand-in runs host functions at synchronisations only: the copy is not done yet.
    assert sys.getrefcount(x) == before + 1
    stream.sync()
    assert _flush_released(lambda: sys.getrefcount(x) == before), sys.getrefcount(x)


@pytest.mark.standin
def test_a_bytearray_stays_exported_until_the_copy_is_done(standin, stream, buf):
    data = bytearray(N * 4)
    buf.copy_to(data, stream=stream)
    # Resizing would move the memory the copy writes: the export refuses it.
    with pytest.raises(BufferError):
        data.append(0)
    stream.sync()

    def resizable():
        try:
            data.append(0)
        except BufferError:
            return False
        return True

    assert _flush_released(resizable)
    assert len(data) == N * 4 + 1


@pytest.mark.standin
def test_a_dropped_source_is_not_freed_under_the_copy(standin, stream, buf):
    # The caller's reference goes at once; the copy's owner keeps the memory.
    import weakref

    class Owned(np.ndarray):
        pass

    x = np.zeros(N, dtype=np.float32).view(Owned)
    alive = weakref.ref(x)
    buf.copy_from(x, stream=stream)
    del x
    gc.collect()
    assert alive() is not None
    stream.sync()
    assert _flush_released(lambda: (gc.collect(), alive() is None)[1])


@pytest.mark.gpu
def test_host_round_trip_of_10m_floats_on_a_gpu():
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    n = 10_000_000
    x = np.arange(n, dtype=np.float32) * 0.5
    buf = device.memory_resource.allocate(n * 4, stream=stream)
    buf.copy_from(x, stream=stream)
    out = np.empty(n, dtype=np.float32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, x)
    # A device-side copy in between and bytes objects both ways.
    other = buf.copy_to(stream=stream)
    back = bytearray(n * 4)
    other.copy_to(back, stream=stream)
    stream.sync()
    assert bytes(back) == x.tobytes()
    buf.copy_from(bytes(n * 4), stream=stream)
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert not out.any()
    for b in (buf, other):
        b.close(stream)
    stream.sync()
    stream.close()
