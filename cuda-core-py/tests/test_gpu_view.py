"""StridedMemoryView over CuPy arrays and torch CUDA tensors on a real GPU (skipped on the
stand-in): the view must report what the producer reports, and the CUDA Array Interface path
must order the consumer stream after the producer's."""

import gc
import importlib
import os

import pytest

from cudacore_rs import Device
from cudacore_rs.utils import StridedMemoryView, args_viewable_as_strided_memory

pytestmark = pytest.mark.gpu


def need(name):
    """The module, else "not run" (a failure where CUDA_CORE_TEST_REQUIRE names gpu)."""
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a library that fails to load its CUDA parts
        why = f"not run: {name} is not importable ({type(e).__name__}: {e})"
        names = os.environ.get("CUDA_CORE_TEST_REQUIRE", "").split(",")
        if "gpu" in (n.strip() for n in names):
            pytest.fail(f"CUDA_CORE_TEST_REQUIRE names gpu: {why}")
        pytest.skip(why)


@pytest.fixture
def stream():
    device = Device(0)
    device.set_current()
    s = device.create_stream()
    yield s
    s.sync()
    s.close()


def cupy_layout(a):
    return a.data.ptr, tuple(a.shape), tuple(x // a.itemsize for x in a.strides), a.dtype


def test_cupy_arrays_contiguous_and_strided(stream):
    # Catches: a wrong address (slice offsets), byte strides, a wrong dtype mapping, a device
    # array called host memory.
    cp = need("cupy")
    np = need("numpy")
    base = cp.arange(6 * 10, dtype=cp.float32).reshape(6, 10)
    for a in (base, base[1::2, 3:9:3], base.T):
        for make in (StridedMemoryView.from_dlpack, StridedMemoryView.from_cuda_array_interface):
            v = make(a, stream_ptr=stream.handle)
            ptr, shape, strides, dtype = cupy_layout(a)
            assert v.ptr == ptr and v.shape == shape and v.dtype == np.dtype(dtype)
            assert v.strides in (strides, None if a.flags.c_contiguous else strides)
            assert v.device_id == a.device.id and v.is_device_accessible is True
            assert v.exporting_obj is a


def test_cupy_dlpack_release(stream):
    # Catches: the view not releasing CuPy's tensor (the memory would stay held) or
    # releasing it twice (a crash).
    cp = need("cupy")
    a = cp.zeros(1 << 20, dtype=cp.uint8)
    for _ in range(100):
        v = StridedMemoryView(a, stream_ptr=stream.handle)
        del v
    gc.collect()


def test_torch_tensors_contiguous_and_strided(stream):
    # Catches: torch's element strides mangled, its storage offset dropped, its dtype mapped
    # wrong.
    torch = need("torch")
    if not torch.cuda.is_available():
        pytest.skip("not run: torch has no CUDA here")
    base = torch.arange(6 * 10, dtype=torch.float64, device="cuda").reshape(6, 10)
    for t in (base, base[1::2, 3:9:3], base.t()):
        v = StridedMemoryView(t, stream_ptr=stream.handle)
        assert v.ptr == t.data_ptr()
        assert v.shape == tuple(t.shape)
        assert v.strides == tuple(t.stride()) or (v.strides is None and t.is_contiguous())
        assert str(v.dtype) == "float64"
        assert v.device_id == t.device.index and v.is_device_accessible is True


def test_the_cai_stream_path_with_a_cupy_stream(stream):
    # Catches: no ordering between CuPy's stream and ours; checked by a long kernel on CuPy's
    # stream followed by a read on ours, which must see its result.
    cp = need("cupy")
    np = need("numpy")
    producer = cp.cuda.Stream(non_blocking=True)
    with producer:
        a = cp.zeros(1 << 22, dtype=cp.float32)
        for _ in range(20):
            a += 1
        cai = a.__cuda_array_interface__
    assert cai.get("stream") in (None, producer.ptr)

    class WithStream:
        __cuda_array_interface__ = dict(cai, stream=producer.ptr)

    v = StridedMemoryView(WithStream(), stream_ptr=stream.handle)
    assert v.ptr == a.data.ptr and v.shape == a.shape
    out = np.empty(a.shape, dtype=np.float32)
    buf = Device(0).memory_resource.allocate(a.nbytes, stream=stream)

    # Copy through our stream, which must now wait for CuPy's kernels.
    src = cp.ndarray(a.shape, dtype=a.dtype,
                     memptr=cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(v.ptr, a.nbytes, a), 0))
    ours = cp.cuda.ExternalStream(stream.handle)
    with ours:
        dst = cp.ndarray(a.shape, dtype=a.dtype,
                         memptr=cp.cuda.MemoryPointer(
                             cp.cuda.UnownedMemory(buf.handle, a.nbytes, buf), 0))
        dst[...] = src
    buf.copy_to(out, stream=stream)
    stream.sync()
    assert (out == 20).all()
    buf.close()


def test_the_decorator_with_cupy(stream):
    # Catches: the proxy's view() ignoring the stream or the protocol choice.
    cp = need("cupy")

    @args_viewable_as_strided_memory((0,))
    def shape_of(x, s):
        return x.view(s.handle).shape

    assert shape_of(cp.zeros((4, 5)), stream) == (4, 5)
