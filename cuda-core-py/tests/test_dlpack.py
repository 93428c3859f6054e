"""Buffer.__dlpack__ / __dlpack_device__: the capsules, their tensors and their lifetimes.

The stand-in's pinned and managed pools hand out addresses that are not host memory, so the
NumPy arrays made here are checked by their address, dtype and shape, never read.
"""

import ctypes
import gc

import pytest

from conftest import managed_resource_or_skip
from dlpack_structs import DLManagedTensor, DLManagedTensorVersioned
from cudacore_rs import Device, ManagedMemoryResource, PinnedMemoryResource

BIG = 1 << 20
kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13



_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_USED_VERSIONED = ctypes.c_char_p(b"used_dltensor_versioned")
_USED_LEGACY = ctypes.c_char_p(b"used_dltensor")


def consume(capsule, versioned):
    """Takes the tensor out of the capsule as a DLPack consumer does (renaming the capsule),
    and returns it: the caller now owns it and must call its deleter."""
    name = b"dltensor_versioned" if versioned else b"dltensor"
    kind = DLManagedTensorVersioned if versioned else DLManagedTensor
    address = _api.PyCapsule_GetPointer(capsule, name)
    assert address
    assert _api.PyCapsule_SetName(capsule, _USED_VERSIONED if versioned else _USED_LEGACY) == 0
    return ctypes.cast(address, ctypes.POINTER(kind))


@pytest.fixture
def stream():
    s = Device(0).create_stream()
    yield s
    s.close()


@pytest.fixture
def buf(stream):
    b = Device(0).memory_resource.allocate(BIG, stream=stream)
    yield b
    b.close()


def frees_of(standin, handle):
    return [line for line in standin.calls("cuMemFreeAsync") if f"{handle:#x}" in line]


def test_dlpack_device_of_each_memory_kind(stream):
    dev = Device(0).memory_resource.allocate(256, stream=stream)
    assert dev.__dlpack_device__() == (kDLCUDA, 0)
    pinned = PinnedMemoryResource().allocate(256, stream=stream)
    assert pinned.__dlpack_device__() == (kDLCUDAHost, 0)
    managed = managed_resource_or_skip().allocate(256, stream=stream)
    assert managed.__dlpack_device__() == (kDLCUDAManaged, 0)
    for b in (dev, pinned, managed):
        b.close()


@pytest.mark.parametrize("max_version, versioned", [((1, 0), True), ((1, 3), True), ((2, 0), True), (None, False), ((0, 8), False)])
def test_the_tensor_describes_the_buffer(buf, max_version, versioned):
    capsule = buf.__dlpack__(max_version=max_version)
    name = "dltensor_versioned" if versioned else "dltensor"
    assert f'"{name}"' in repr(capsule)
    managed = consume(capsule, versioned)
    t = managed.contents.dl_tensor
    if versioned:
        assert (managed.contents.major, managed.contents.flags) == (1, 0)
    # cuda.core's layout: 1-D, `size` int8 elements, stride 1, at the buffer's address.
    assert t.data == buf.handle and t.byte_offset == 0
    assert (t.device.device_type, t.device.device_id) == (kDLCUDA, 0)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 8, 1)
    assert t.ndim == 1 and t.shape[0] == BIG and t.strides[0] == 1
    managed.contents.deleter(managed)


@pytest.mark.standin
@pytest.mark.parametrize("versioned", [True, False])
def test_an_unconsumed_capsule_holds_the_memory_until_it_goes(standin, buf, versioned):
    handle = buf.handle
    capsule = buf.__dlpack__(max_version=(1, 0) if versioned else None)
    standin.clear()
    buf.close()
    assert buf.closed
    assert frees_of(standin, handle) == []  # the tensor still holds the memory
    del capsule
    gc.collect()
    assert len(frees_of(standin, handle)) == 1, standin.log()


@pytest.mark.standin
@pytest.mark.parametrize("versioned", [True, False])
def test_a_dropped_capsule_leaves_an_open_buffer_alone(standin, buf, versioned):
    handle = buf.handle
    capsule = buf.__dlpack__(max_version=(1, 0) if versioned else None)
    standin.clear()
    del capsule
    gc.collect()
    assert frees_of(standin, handle) == []
    buf.close()
    assert len(frees_of(standin, handle)) == 1


@pytest.mark.standin
@pytest.mark.parametrize("versioned", [True, False])
def test_a_consumed_capsule_is_released_once_by_its_consumer(standin, buf, versioned):
    handle = buf.handle
    capsule = buf.__dlpack__(max_version=(1, 0) if versioned else None)
    tensor = consume(capsule, versioned)
    # The renamed capsule must not release the tensor the consumer now owns.
    del capsule
    gc.collect()
    standin.clear()
    buf.close()
    assert frees_of(standin, handle) == []
    tensor.contents.deleter(tensor)
    assert len(frees_of(standin, handle)) == 1, standin.log()


@pytest.mark.standin
def test_numpy_consumes_a_pinned_buffer(standin, stream):
    np = pytest.importorskip("numpy")
    buf = PinnedMemoryResource().allocate(4096, stream=stream)
    handle = buf.handle
    arr = np.from_dlpack(buf)
    assert arr.dtype == np.int8 and arr.shape == (4096,)
    assert arr.__array_interface__["data"][0] == handle
    standin.clear()
    buf.close()
    assert frees_of(standin, handle) == []
    del arr
    gc.collect()
    assert len(frees_of(standin, handle)) == 1, standin.log()


@pytest.mark.standin
def test_numpy_consumes_a_legacy_capsule_of_managed_memory(standin, stream):
    np = pytest.importorskip("numpy")
    buf = ManagedMemoryResource().allocate(4096, stream=stream)

    class Legacy:
        def __dlpack__(self, **kwargs):
            return buf.__dlpack__()  # no max_version: the legacy capsule

        def __dlpack_device__(self):
            return buf.__dlpack_device__()

    arr = np.from_dlpack(Legacy())
    assert arr.dtype == np.int8 and arr.shape == (4096,)
    assert arr.__array_interface__["data"][0] == buf.handle
    del arr
    gc.collect()
    buf.close()


def test_host_memory_can_be_asked_for_as_cpu(stream):
    buf = PinnedMemoryResource().allocate(256, stream=stream)
    managed = consume(buf.__dlpack__(max_version=(1, 0), dl_device=(kDLCPU, 0)), True)
    t = managed.contents.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (kDLCPU, 0)
    managed.contents.deleter(managed)
    buf.close()


@pytest.mark.standin
def test_refusals_make_no_driver_call(standin, buf):
    standin.clear()
    with pytest.raises(BufferError, match="copy=True"):
        buf.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="device"):
        buf.__dlpack__(dl_device=(kDLCPU, 0))
    with pytest.raises(BufferError, match="max_version"):
        buf.__dlpack__(max_version="1.0")
    with pytest.raises(TypeError, match="stream"):
        buf.__dlpack__(stream="s")
    with pytest.raises(TypeError):
        buf.__dlpack__((1, 0))  # keyword-only
    assert standin.log() == ""
    buf.__dlpack__(stream=-1, copy=False, dl_device=(kDLCUDA, 0))
    closed = Device(0).memory_resource.allocate(256)
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        closed.__dlpack__()
    with pytest.raises(RuntimeError, match="closed"):
        closed.__dlpack_device__()


@pytest.mark.standin
def test_buffer_operations_still_work_while_exported(standin, stream, buf):
    capsule = buf.__dlpack__(max_version=(1, 0))
    other = Device(0).memory_resource.allocate(BIG, stream=stream)
    standin.clear()
    buf.fill(3, stream=stream)
    buf.copy_from(other, stream=stream)
    other.copy_from(buf, stream=stream)
    assert len(standin.calls("cuMemsetD8Async")) == 1
    assert len(standin.calls("cuMemcpyAsync")) == 2
    del capsule
    other.close()
