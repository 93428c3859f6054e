"""StridedMemoryView and args_viewable_as_strided_memory (cudacore_rs.utils), on the CPU:
views of NumPy arrays, of our Buffer (a DLPack producer), of hand-made DLPack capsules and of
objects with a fake __cuda_array_interface__. Each test says which wrong implementation it
catches. The stand-in keeps no memory contents: nothing here reads the data viewed."""

import ctypes
import gc
import sys

import pytest

from conftest import managed_resource_or_skip
from dlpack_structs import (
    LEGACY_DELETER,
    VERSIONED_DELETER,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
)
from cudacore_rs import Device, PinnedMemoryResource
from cudacore_rs.utils import StridedMemoryView, args_viewable_as_strided_memory

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13


@pytest.fixture
def stream():
    s = Device(0).create_stream()
    yield s
    s.close()


BIG = 1 << 20  # large enough to be freed on its own (smaller ones are pooled)


@pytest.fixture
def buf(stream):
    b = Device(0).memory_resource.allocate(BIG, stream=stream)
    yield b
    b.close()


def np_or_skip():
    return pytest.importorskip("numpy", reason="not run: NumPy is not importable")


# ---- hand-made DLPack tensors (ctypes), to count deleter calls -------------------------------



_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Producer:
    """A DLPack producer of one hand-made tensor (never read): its deleter counts its calls."""

    def __init__(self, shape, strides=None, *, versioned=True, major=1, flags=0,
                 device=(kDLCPU, 0), dtype=(2, 32, 1), data=0x10000, byte_offset=0):
        self.deleted = 0
        self.device = device
        self.versioned = versioned
        n = len(shape)
        self._shape = (ctypes.c_int64 * max(n, 1))(*shape)
        self._strides = (ctypes.c_int64 * max(n, 1))(*strides) if strides is not None else None
        kind = DLManagedTensorVersioned if versioned else DLManagedTensor
        self.tensor = kind()
        t = self.tensor.dl_tensor
        t.data, t.ndim, t.byte_offset = data, n, byte_offset
        t.device = DLDevice(*device)
        t.dtype = DLDataType(*dtype)
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        if versioned:
            self.tensor.major, self.tensor.minor, self.tensor.flags = major, 0, flags

        def deleter(_):
            self.deleted += 1

        self._deleter = (VERSIONED_DELETER if versioned else LEGACY_DELETER)(deleter)
        self.tensor.deleter = self._deleter
        name = b"dltensor_versioned" if versioned else b"dltensor"
        self.capsule = _api.PyCapsule_New(ctypes.addressof(self.tensor), name, None)

    def __dlpack__(self, stream=None, max_version=None):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


# ---- NumPy arrays through DLPack ----------------------------------------------------------


def test_a_contiguous_numpy_array():
    # Catches: strides in bytes (would be (16, 4)), host memory given device 0, a wrong
    # address, the producer not kept.
    np = np_or_skip()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    v = StridedMemoryView(a, stream_ptr=-1)
    assert v.ptr == a.ctypes.data
    assert v.shape == (3, 4)
    assert v.strides == (4, 1)  # NumPy 2 gives a C array's strides too
    assert v.dtype == np.dtype(np.float32)
    assert v.device_id == -1 and v.is_device_accessible is False
    assert v.readonly is False
    assert v.exporting_obj is a
    assert v.size == 12


def test_a_sliced_numpy_array_has_its_offset_and_element_strides():
    # Catches: the slice's start dropped (data without byte_offset, or the base's address),
    # strides in bytes rather than elements.
    np = np_or_skip()
    base = np.arange(60, dtype=np.int64).reshape(6, 10)
    a = base[1::2, 3:9:3]
    v = StridedMemoryView(a, stream_ptr=-1)
    assert v.ptr == a.ctypes.data == base.ctypes.data + (10 + 3) * 8
    assert v.shape == (3, 2)
    assert v.strides == (20, 3)
    assert v.dtype == np.dtype(np.int64)


def test_a_transposed_numpy_array():
    # Catches: strides read as C-contiguous from the shape instead of the producer's.
    np = np_or_skip()
    a = np.zeros((3, 5), dtype=np.float64).T
    v = StridedMemoryView(a, stream_ptr=-1)
    assert v.shape == (5, 3) and v.strides == (1, 5)


def test_a_read_only_numpy_array_is_readonly():
    # Catches: the versioned tensor's READ_ONLY flag ignored.
    np = np_or_skip()
    a = np.zeros(4, dtype=np.uint8)
    a.flags.writeable = False
    assert StridedMemoryView(a, stream_ptr=-1).readonly is True


@pytest.mark.parametrize("name", ["bool", "int8", "uint16", "int32", "uint64", "float16",
                                  "float64", "complex64", "complex128"])
def test_numpy_dtypes_map_back(name):
    # Catches: a wrong DLPack code/bits to dtype mapping (bool as uint8, complex64 as float64).
    np = np_or_skip()
    a = np.zeros(3, dtype=name)
    assert StridedMemoryView(a, stream_ptr=-1).dtype == np.dtype(name)


def test_host_memory_refuses_stream_none():
    # Catches: cuda.core's rule missing (stream_ptr=None is ambiguous for kDLCPU).
    np = np_or_skip()
    with pytest.raises(BufferError, match="ambiguous"):
        StridedMemoryView(np.zeros(3), stream_ptr=None)


def test_the_numpy_tensor_is_released_once():
    # Catches: the deleter never called (the array's refcount stays up: a leak) or the view not
    # holding the producer; a double release would drop the count below where it started.
    np = np_or_skip()
    a = np.zeros(16)
    before = sys.getrefcount(a)
    v = StridedMemoryView(a, stream_ptr=-1)
    assert sys.getrefcount(a) > before
    del v
    gc.collect()
    assert sys.getrefcount(a) == before


def test_from_array_interface():
    # Catches: array-interface byte strides not turned into elements, host memory called
    # device-accessible, None strides of a C array made up.
    np = np_or_skip()
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    v = StridedMemoryView.from_array_interface(a)
    assert v.ptr == a.ctypes.data and v.shape == (4, 6) and v.strides is None
    assert v.is_device_accessible is False and v.dtype == np.dtype(np.int32)
    w = StridedMemoryView.from_array_interface(a[:, ::2])
    assert w.strides == (6, 2)


# ---- our Buffer through DLPack ---------------------------------------------------------------


def frees_of(standin, handle):
    return [line for line in standin.calls("cuMemFreeAsync") if f"{handle:#x}" in line]


def test_a_device_buffer(buf):
    # Catches: device memory shown as host (device_id -1, not device-accessible), a wrong
    # dtype or layout of cuda.core's 1-D int8 export.
    v = StridedMemoryView(buf, stream_ptr=-1)
    assert v.ptr == buf.handle
    assert v.shape == (BIG,) and v.strides in (None, (1,))
    assert str(v.dtype) == "int8"
    assert v.device_id == 0 and v.is_device_accessible is True and v.readonly is False
    assert v.exporting_obj is buf
    assert "StridedMemoryView(ptr=" in repr(v) and "int8" in repr(v)


def test_a_device_buffer_refuses_stream_none(buf):
    # Catches: cuda.core's rule for kDLCUDA missing.
    with pytest.raises(BufferError, match="ambiguous"):
        StridedMemoryView(buf)


def test_pinned_and_managed_buffers_take_stream_none(stream):
    # Catches: pinned/managed memory refused without a stream, or called host-only.
    for mr in (PinnedMemoryResource(), managed_resource_or_skip()):
        b = mr.allocate(256, stream=stream)
        v = StridedMemoryView(b)
        assert v.ptr == b.handle and v.is_device_accessible is True and v.device_id == 0
        del v
        b.close()


@pytest.mark.standin
@pytest.mark.parametrize("legacy", [False, True])
def test_the_buffer_is_freed_once_after_the_view_goes(standin, buf, legacy):
    # Catches: the tensor's deleter not called (no free) or called twice (two frees, or a
    # crash), and the view not holding the memory (a free at buf.close()).
    handle = buf.handle

    class Legacy:
        def __dlpack__(self, stream=None):  # no max_version: the legacy capsule
            return buf.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return buf.__dlpack_device__()

    v = StridedMemoryView(Legacy() if legacy else buf, stream_ptr=-1)
    standin.clear()
    buf.close()
    assert frees_of(standin, handle) == []
    del v
    gc.collect()
    assert len(frees_of(standin, handle)) == 1, standin.log()


# ---- hand-made capsules ----------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [True, False])
def test_the_capsule_is_renamed_and_released_once(versioned):
    # Catches: the capsule left unrenamed (its producer would release it too), the deleter
    # called at once or never, or twice.
    p = Producer((2, 3), (3, 1), versioned=versioned, dtype=(1, 16, 1), byte_offset=8)
    v = StridedMemoryView(p, stream_ptr=-1)
    assert "used_dltensor" in repr(p.capsule)
    assert p.deleted == 0
    assert v.ptr == 0x10000 + 8 and v.shape == (2, 3) and v.strides == (3, 1)
    del v
    gc.collect()
    assert p.deleted == 1


def test_a_consumed_capsule_is_refused():
    # Catches: a capsule viewed twice (two owners, two deleter calls).
    p = Producer((4,))
    v = StridedMemoryView(p, stream_ptr=-1)
    with pytest.raises(BufferError, match="consumed"):
        StridedMemoryView(p, stream_ptr=-1)
    del v
    gc.collect()
    assert p.deleted == 1


def test_no_strides_stay_none_and_read_only_flag():
    # Catches: null DLPack strides made up as a tuple, the READ_ONLY flag (1) ignored.
    p = Producer((5, 2), None, flags=1)
    v = StridedMemoryView(p, stream_ptr=-1)
    assert v.strides is None and v.readonly is True


@pytest.mark.parametrize("kwargs, error", [
    (dict(shape=(3, -1)), ValueError),        # a negative extent
    (dict(shape=(3,), major=2), ValueError),  # a DLPack major version this reader lacks
])
def test_a_refused_tensor_is_released(kwargs, error):
    # Catches: a tensor taken (capsule renamed) and then refused without its deleter called
    # (a leak), or believed (a negative extent in the shape).
    shape = kwargs.pop("shape")
    p = Producer(shape, **kwargs)
    with pytest.raises(error):
        StridedMemoryView(p, stream_ptr=-1)
    gc.collect()
    assert p.deleted == 1


def test_unsupported_dtypes_raise_on_dtype():
    # Catches: vector lanes or unknown codes mapped to some NumPy dtype.
    v = StridedMemoryView(Producer((2,), dtype=(2, 32, 4)), stream_ptr=-1)
    with pytest.raises(NotImplementedError):
        v.dtype
    w = StridedMemoryView(Producer((2,), dtype=(9, 8, 1)), stream_ptr=-1)
    with pytest.raises(TypeError):
        w.dtype


def test_bad_producers():
    # Catches: a non-capsule or a bad __dlpack_device__ taken on trust (a crash).
    class NotACapsule(Producer):
        def __dlpack__(self, stream=None, max_version=None):
            return object()

    with pytest.raises(TypeError, match="PyCapsule"):
        StridedMemoryView(NotACapsule((2,)), stream_ptr=-1)
    with pytest.raises(BufferError, match="not supported"):
        StridedMemoryView(Producer((2,), device=(7, 0)), stream_ptr=-1)

    class BadDevice(Producer):
        def __dlpack_device__(self):
            return "cuda"

    with pytest.raises(TypeError):
        StridedMemoryView(BadDevice((2,)), stream_ptr=-1)


def test_wrong_types_raise_type_error():
    # Catches: objects with no protocol or a non-int stream accepted or crashing.
    with pytest.raises(TypeError, match="protocol"):
        StridedMemoryView(object(), stream_ptr=-1)
    with pytest.raises(TypeError, match="stream_ptr"):
        StridedMemoryView(Producer((2,)), stream_ptr="s")


def test_an_empty_view():
    # Catches: StridedMemoryView() refused (cuda.core makes an empty view).
    v = StridedMemoryView()
    assert (v.ptr, v.shape, v.strides, v.dtype, v.exporting_obj) == (0, (), None, None, None)


# ---- the CUDA Array Interface ----------------------------------------------------------------


class CAI:
    def __init__(self, **cai):
        self.__cuda_array_interface__ = cai


def cai(buf, **over):
    d = dict(version=3, data=(buf.handle, False), shape=(3, 4), typestr="<f4", strides=None)
    d.update(over)
    return CAI(**d)


def test_a_cuda_array_interface(buf):
    # Catches: byte strides not turned into elements, the readonly flag or typestr ignored.
    np = np_or_skip()
    v = StridedMemoryView(cai(buf, strides=(16, 4), data=(buf.handle, True)), stream_ptr=-1)
    assert v.ptr == buf.handle and v.shape == (3, 4) and v.strides == (4, 1)
    assert v.dtype == np.dtype("<f4") and v.readonly is True
    assert v.device_id == 0 and v.is_device_accessible is True
    w = StridedMemoryView.from_cuda_array_interface(cai(buf), stream_ptr=-1)
    assert w.strides is None and w.readonly is False


def test_cuda_array_interface_refusals(buf):
    # Catches: old versions, masks or an ambiguous stream accepted (cuda.core's BufferErrors).
    with pytest.raises(BufferError, match="v3"):
        StridedMemoryView(cai(buf, version=2), stream_ptr=-1)
    with pytest.raises(BufferError, match="mask"):
        StridedMemoryView(cai(buf, mask=object()), stream_ptr=-1)
    with pytest.raises(BufferError, match="ambiguous"):
        StridedMemoryView(cai(buf))


@pytest.mark.parametrize("over, error", [
    (dict(shape=tuple([1] * 65)), ValueError),           # a huge ndim
    (dict(shape=(3, -4)), ValueError),                   # a negative extent
    (dict(shape=(2**40, 2**40)), ValueError),            # an element count past i64
    (dict(shape=(2**70,)), ValueError),                  # an extent past i64
    (dict(strides=(16, 3)), ValueError),                 # a stride of part of an element
    (dict(strides=(16,)), ValueError),                   # fewer strides than dimensions
    (dict(data=(-8, False)), ValueError),                # a negative address
    (dict(data=(2**64 - 16, False)), ValueError),        # elements past the address space
    (dict(strides=(2**62, 4), shape=(8, 4)), ValueError),  # strides past the address space
    (dict(shape=[3, 4]), TypeError),                     # a list, not a tuple
    (dict(shape=(3, "4")), TypeError),                   # not ints
    (dict(stream=0), ValueError),                        # stream 0 is disallowed
    (dict(typestr=3), TypeError),
])
def test_hostile_cuda_array_interfaces_are_refused(buf, over, error):
    # Catches: values believed without checks (overflow, a panic, a crash in a later read).
    with pytest.raises(error):
        StridedMemoryView(cai(buf, **over), stream_ptr=-1)


def test_a_cuda_array_interface_that_is_not_a_dict():
    # Catches: a non-dict read as one.
    class ListCAI:
        __cuda_array_interface__ = [1]

    with pytest.raises(TypeError, match="dict"):
        StridedMemoryView(ListCAI(), stream_ptr=-1)


def stream_name(standin, s):
    """The stand-in's name of stream ``s`` (read from the log of a record on it)."""
    standin.clear()
    s.record()
    (line,) = standin.calls("cuEventRecord")
    return line.split(" on ")[1].split()[0]


@pytest.mark.standin
def test_the_consumer_stream_waits_for_the_producer(standin, buf):
    # Catches: no ordering between the producer's and the consumer's streams, the wait on the
    # wrong stream, or an event where the streams are the same or stream_ptr is -1.
    producer = Device(0).create_stream()
    consumer = Device(0).create_stream()
    pname, cname = stream_name(standin, producer), stream_name(standin, consumer)
    standin.clear()
    StridedMemoryView(cai(buf, stream=producer.handle), stream_ptr=consumer.handle)
    (record,) = standin.calls("cuEventRecord")
    (wait,) = standin.calls("cuStreamWaitEvent")
    event = record.split()[1]
    assert record.endswith(f"on {pname}") or f" on {pname}" in record
    assert wait.split()[1] == cname and event in wait
    for consumer_ptr in (producer.handle, -1):
        standin.clear()
        StridedMemoryView(cai(buf, stream=producer.handle), stream_ptr=consumer_ptr)
        assert standin.calls("cuStreamWaitEvent") == [] and standin.calls("cuEventRecord") == []
    producer.close()
    consumer.close()


# ---- the decorator ---------------------------------------------------------------------------


def test_the_decorator_gives_proxies_with_view(buf):
    # Catches: the wrong arguments wrapped, kwargs touched, view() not a StridedMemoryView,
    # CAI arguments sent through DLPack.
    np = np_or_skip()
    a = np.zeros((2, 3), dtype=np.float32)
    seen = {}

    @args_viewable_as_strided_memory((0, 2))
    def f(x, y, z, *, k):
        seen.update(x=x, y=y, z=z, k=k)
        return x.view(-1), z.view(-1)

    vx, vz = f(a, 7, cai(buf), k=a)
    assert seen["y"] == 7 and seen["k"] is a
    assert seen["x"].obj is a and seen["x"].has_dlpack is True
    assert seen["z"].has_dlpack is False
    assert isinstance(vx, StridedMemoryView) and vx.shape == (2, 3)
    assert isinstance(vz, StridedMemoryView) and vz.ptr == buf.handle
    assert f.__name__ == "f"  # functools.wraps


def test_the_decorator_refuses_bad_arguments():
    # Catches: a non-tuple of indices accepted, an argument with no protocol wrapped silently.
    with pytest.raises(TypeError):
        args_viewable_as_strided_memory([0])

    @args_viewable_as_strided_memory((0,))
    def f(x):
        return x

    with pytest.raises(TypeError, match="protocol"):
        f(object())
