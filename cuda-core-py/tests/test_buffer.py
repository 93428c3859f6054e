import gc

import pytest

from cudacore_rs import Buffer, Device, DeviceMemoryResource

# Above the crate's cache of small freed allocations (up to 64 KiB per stream), so that each
# allocation and free reaches the driver.
BIG = 1 << 20


@pytest.fixture
def stream():
    s = Device(0).create_stream()
    yield s
    s.close()


def test_memory_resource_is_the_devices_default():
    device = Device(0)
    mr = device.memory_resource
    assert isinstance(mr, DeviceMemoryResource)
    assert mr is device.memory_resource
    assert DeviceMemoryResource(0) is mr
    assert DeviceMemoryResource(device) is mr
    assert mr.device_id == 0
    assert mr.is_device_accessible
    assert not mr.is_host_accessible
    assert "device 0" in repr(mr)


@pytest.mark.standin
def test_allocate_size_and_handle(standin, stream):
    mr = Device(0).memory_resource
    buf = mr.allocate(BIG, stream=stream)
    assert isinstance(buf, Buffer)
    assert buf.size == BIG
    assert buf.handle != 0
    assert buf.device_id == 0
    assert buf.memory_resource is mr
    assert buf.is_device_accessible and not buf.is_host_accessible
    assert f"handle={buf.handle:#x}" in repr(buf) and f"size={BIG}" in repr(buf)
    allocs = standin.calls("cuMemAlloc")
    assert allocs and f"size={BIG}" in allocs[-1], allocs
    buf.close()
    assert buf.closed
    assert repr(buf) == "<Buffer (closed)>"


def test_allocate_on_the_default_stream():
    buf = Device(0).memory_resource.allocate(256)
    assert buf.size == 256
    buf.close()


@pytest.mark.standin
def test_copy_to_and_copy_from_reach_the_driver(standin, stream):
    mr = Device(0).memory_resource
    a = mr.allocate(BIG, stream=stream)
    b = mr.allocate(BIG, stream=stream)
    standin.clear()
    assert a.copy_to(b, stream=stream) is b
    copies = standin.calls("cuMemcpyAsync")
    assert len(copies) == 1, copies
    assert f"{b.handle:#x} <- {a.handle:#x} size={BIG}" in copies[0]

    standin.clear()
    a.copy_from(b, stream=stream)
    copies = standin.calls("cuMemcpyAsync")
    assert len(copies) == 1, copies
    assert f"{a.handle:#x} <- {b.handle:#x} size={BIG}" in copies[0]

    standin.clear()
    c = a.copy_to(stream=stream)
    assert isinstance(c, Buffer) and c.size == BIG and c.handle not in (a.handle, b.handle)
    assert c.memory_resource is mr
    assert any(f"size={BIG}" in line for line in standin.calls("cuMemAlloc"))
    copies = standin.calls("cuMemcpyAsync")
    assert len(copies) == 1 and f"{c.handle:#x} <- {a.handle:#x} size={BIG}" in copies[0]
    stream.sync()
    for buf in (a, b, c):
        buf.close()


@pytest.mark.standin
def test_fill_reaches_the_driver(standin, stream):
    buf = Device(0).memory_resource.allocate(64, stream=stream)
    standin.clear()
    buf.fill(7, stream=stream)
    buf.fill(bytearray([7]), stream=stream)
    fills = standin.calls("cuMemsetD8Async")
    assert len(fills) == 2 and all("value=7 count=64" in f for f in fills), fills
    buf.fill(b"\x01\x00\x00\x00", stream=stream)
    fills = standin.calls("cuMemsetD32Async")
    assert len(fills) == 1 and "count=16" in fills[0], fills
    buf.fill(b"\x02\x00", stream=stream)
    assert len(standin.calls("cuMemsetD16Async")) == 1
    with pytest.raises(ValueError, match="0, 255"):
        buf.fill(256, stream=stream)
    with pytest.raises(ValueError, match="1, 2 or 4 bytes"):
        buf.fill(b"abc", stream=stream)
    with pytest.raises(ValueError, match="0, 255"):
        buf.fill(-1, stream=stream)
    with pytest.raises(ValueError, match="0, 255"):
        buf.fill(2**70, stream=stream)
    with pytest.raises(TypeError, match="buffer-protocol"):
        buf.fill(1.5, stream=stream)
    with pytest.raises(TypeError, match="buffer-protocol"):
        buf.fill("ab", stream=stream)
    buf.close()


def test_copy_errors(stream):
    mr = Device(0).memory_resource
    a = mr.allocate(64, stream=stream)
    b = mr.allocate(128, stream=stream)
    with pytest.raises(ValueError):
        a.copy_to(b, stream=stream)
    with pytest.raises(ValueError, match="itself"):
        a.copy_to(a, stream=stream)
    with pytest.raises(TypeError, match="Stream"):
        a.copy_to(b, stream=None)
    with pytest.raises(TypeError):
        a.copy_to(b)  # stream is keyword-only and required
    with pytest.raises(TypeError, match="Buffer"):
        a.copy_from(object(), stream=stream)
    a.close()
    b.close()


@pytest.mark.standin
def test_close_twice_and_use_after_close(standin, stream):
    buf = Device(0).memory_resource.allocate(BIG, stream=stream)
    other = Device(0).memory_resource.allocate(BIG, stream=stream)
    handle = buf.handle
    standin.clear()
    buf.close(stream)
    frees = standin.calls("cuMemFreeAsync")
    assert len(frees) == 1 and f"{handle:#x}" in frees[0], frees
    buf.close()
    buf.close(stream=stream)
    assert len(standin.calls("cuMemFreeAsync")) == 1
    for use in (
        lambda: buf.handle,
        lambda: buf.size,
        lambda: buf.device_id,
        lambda: buf.fill(0, stream=stream),
        lambda: buf.copy_to(stream=stream),
        lambda: buf.copy_to(other, stream=stream),
        lambda: other.copy_to(buf, stream=stream),
        lambda: other.copy_from(buf, stream=stream),
    ):
        with pytest.raises(RuntimeError, match="Buffer is closed"):
            use()
    other.close()


@pytest.mark.standin
def test_released_on_collection(standin, stream):
    buf = Device(0).memory_resource.allocate(BIG, stream=stream)
    handle = buf.handle
    standin.clear()
    del buf
    gc.collect()
    frees = standin.calls("cuMemFreeAsync")
    assert any(f"{handle:#x}" in line for line in frees), frees


@pytest.mark.parametrize("size", [0, -1, -(2**40)])
def test_bad_sizes_are_value_errors(size, stream):
    with pytest.raises(ValueError, match="above 0"):
        Device(0).memory_resource.allocate(size, stream=stream)


def test_not_made_directly():
    with pytest.raises(RuntimeError, match="allocate"):
        Buffer()


@pytest.mark.gpu
def test_fill_copy_and_sync_on_a_gpu():
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    mr = device.memory_resource
    a = mr.allocate(1 << 20, stream=stream)
    a.fill(0x5A, stream=stream)
    b = a.copy_to(stream=stream)
    c = mr.allocate(1 << 20, stream=stream)
    c.copy_from(b, stream=stream)
    c.fill(b"\x01\x02\x03\x04", stream=stream)
    done = stream.record()
    done.sync()
    assert done.is_done
    for buf in (a, b, c):
        buf.close(stream)
    stream.sync()
    stream.close()
