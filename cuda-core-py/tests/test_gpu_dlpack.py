"""DLPack round trips with PyTorch, CuPy and NumPy on a real GPU (skipped on the stand-in)."""

import gc

import pytest

from conftest import managed_resource_or_skip
from cudacore_rs import Device, ManagedMemoryResource, PinnedMemoryResource

pytestmark = pytest.mark.gpu

np = pytest.importorskip("numpy")
N = 1 << 20


@pytest.fixture
def stream():
    device = Device(0)
    device.set_current()
    s = device.create_stream()
    yield s
    s.sync()
    s.close()


def test_torch_sees_what_copy_from_wrote(stream):
    torch = pytest.importorskip("torch")
    x = np.arange(N, dtype=np.float32)
    buf = Device(0).memory_resource.allocate(N * 4, stream=stream)
    buf.copy_from(x, stream=stream)
    stream.sync()
    t = torch.from_dlpack(buf)
    assert t.is_cuda and t.dtype == torch.int8 and tuple(t.shape) == (N * 4,)
    assert t.data_ptr() == buf.handle
    assert torch.equal(t.view(torch.float32).cpu(), torch.from_numpy(x))
    # The tensor keeps the memory after close(); writes through it reach the buffer.
    t.view(torch.float32).mul_(2)
    torch.cuda.synchronize()
    out = np.empty_like(x)
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, x * 2)
    buf.close()
    assert float(t.view(torch.float32)[-1]) == float(x[-1] * 2)
    del t
    gc.collect()


def test_cupy_sees_what_copy_from_wrote(stream):
    cupy = pytest.importorskip("cupy")
    x = np.arange(N, dtype=np.int32)
    buf = Device(0).memory_resource.allocate(N * 4, stream=stream)
    buf.copy_from(x, stream=stream)
    stream.sync()
    a = cupy.from_dlpack(buf)
    assert a.dtype == cupy.int8 and a.shape == (N * 4,)
    assert a.data.ptr == buf.handle
    np.testing.assert_array_equal(cupy.asnumpy(a.view(cupy.int32)), x)
    buf.close()
    del a
    gc.collect()


def test_numpy_reads_pinned_and_managed_buffers(stream):
    x = np.arange(4096, dtype=np.uint8)
    for mr in (PinnedMemoryResource(), managed_resource_or_skip()):
        buf = mr.allocate(4096, stream=stream)
        buf.copy_from(x, stream=stream)
        stream.sync()
        arr = np.from_dlpack(buf)
        np.testing.assert_array_equal(arr.view(np.uint8), x)
        buf.close()
        assert arr.view(np.uint8)[100] == 100  # still held by the array
        del arr
        gc.collect()
        mr.close()


def test_torch_tensor_into_a_buffer_and_back(stream):
    torch = pytest.importorskip("torch")
    src = torch.arange(N, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    buf = Device(0).memory_resource.allocate(N * 4, stream=stream)
    view = torch.from_dlpack(buf).view(torch.float32)
    view.copy_(src)
    torch.cuda.synchronize()
    out = np.empty(N, dtype=np.float32)
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, src.cpu().numpy())
    del view
    buf.close()
