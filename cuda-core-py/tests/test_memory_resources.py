"""DeviceMemoryResource with options, PinnedMemoryResource and ManagedMemoryResource."""

import gc

import pytest

from conftest import managed_resource_or_skip
from cudacore_rs import Buffer, Device, DeviceMemoryResource
from cudacore_rs._native import (
    DeviceMemoryResourceOptions,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)

BIG = 1 << 20
# CUmemLocationType: the location= field of the stand-in's cuMemPoolCreate line.
DEVICE, HOST, HOST_NUMA = 1, 2, 3


@pytest.fixture
def stream():
    s = Device(0).create_stream()
    yield s
    s.close()


def test_options_fields_defaults_and_repr():
    o = DeviceMemoryResourceOptions()
    assert (o.ipc_enabled, o.max_size) == (False, 0)
    assert o == DeviceMemoryResourceOptions(False, 0)
    assert o != DeviceMemoryResourceOptions(max_size=1)
    o.max_size = 4096
    assert repr(o) == "DeviceMemoryResourceOptions(ipc_enabled=False, max_size=4096)"
    p = PinnedMemoryResourceOptions(numa_id=1)
    assert (p.ipc_enabled, p.max_size, p.numa_id) == (False, 0, 1)
    assert "numa_id=1" in repr(p)
    m = ManagedMemoryResourceOptions(preferred_location_type="host")
    assert (m.preferred_location, m.preferred_location_type) == (None, "host")


@pytest.mark.standin
def test_options_make_a_pool_of_its_own(standin, stream):
    default = Device(0).memory_resource
    standin.clear()
    # As in cuda.core, any options object, even the default one, makes a new pool.
    mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions())
    creates = standin.calls("cuMemPoolCreate")
    assert len(creates) == 1 and f"location={DEVICE}:0 max=0" in creates[0], creates
    assert "handles=0" in creates[0]
    assert mr is not default and mr.is_handle_owned and not default.is_handle_owned
    assert mr.device_id == 0 and not mr.is_ipc_enabled and not mr.is_mapped
    assert mr.is_device_accessible and not mr.is_host_accessible and not mr.is_managed
    assert isinstance(mr.handle, int) and mr.handle != default.handle
    assert "pool of its own" in repr(mr)
    buf = mr.allocate(BIG, stream=stream)
    assert isinstance(buf, Buffer) and buf.memory_resource is mr and buf.size == BIG
    assert len(standin.calls("cuMemAllocFromPoolAsync")) == 1
    buf.close()
    mr.close()


@pytest.mark.standin
def test_options_as_a_dict_reach_the_pool(standin):
    standin.clear()
    mr = DeviceMemoryResource(Device(0), {"ipc_enabled": True, "max_size": 1 << 30})
    creates = standin.calls("cuMemPoolCreate")
    assert len(creates) == 1 and "handles=1" in creates[0] and "max=1073741824" in creates[0]
    assert mr.is_ipc_enabled
    mr.close()


@pytest.mark.standin
def test_none_options_keep_the_default_pool(standin):
    standin.clear()
    mr = DeviceMemoryResource(0, None)
    assert mr is Device(0).memory_resource and not mr.is_handle_owned
    assert standin.calls("cuMemPoolCreate") == []
    mr.close()  # no effect on the default pool, as in cuda.core
    assert not mr.closed
    mr.allocate(256).close()


@pytest.mark.standin
def test_bad_options_are_refused_before_the_driver(standin):
    standin.clear()
    with pytest.raises(ValueError, match="max_size"):
        DeviceMemoryResource(0, DeviceMemoryResourceOptions(max_size=-1))
    with pytest.raises(TypeError, match="DeviceMemoryResourceOptions"):
        DeviceMemoryResource(0, 42)
    with pytest.raises(TypeError):
        DeviceMemoryResource(0, {"no_such_field": 1})
    with pytest.raises(ValueError, match="max_size"):
        PinnedMemoryResource(PinnedMemoryResourceOptions(max_size=-5))
    with pytest.raises(ValueError, match="NUMA"):
        PinnedMemoryResource({"numa_id": -2})
    with pytest.raises(ValueError, match="preferred_location_type"):
        ManagedMemoryResource({"preferred_location_type": "moon"})
    with pytest.raises(ValueError, match="device ordinal"):
        ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=99))
    with pytest.raises(ValueError, match="'host' takes"):
        ManagedMemoryResource(ManagedMemoryResourceOptions(0, "host"))
    assert standin.calls("cuMemPoolCreate") == []


@pytest.mark.standin
def test_close_gives_the_pool_up_after_its_buffers(standin, stream):
    mr = DeviceMemoryResource(0, {})
    buf = mr.allocate(BIG, stream=stream)
    standin.clear()
    mr.close()
    mr.close()
    assert mr.closed and "(closed)" in repr(mr)
    # The live buffer keeps the pool: destroyed only after the buffer's free.
    assert standin.calls("cuMemPoolDestroy") == []
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocate(BIG, stream=stream)
    buf.fill(1, stream=stream)
    buf.close()
    log = standin.log().splitlines()
    free = next(i for i, l in enumerate(log) if l.startswith("cuMemFreeAsync"))
    destroy = next(i for i, l in enumerate(log) if l.startswith("cuMemPoolDestroy"))
    assert free < destroy, log


@pytest.mark.standin
def test_a_collected_pool_is_destroyed(standin):
    mr = DeviceMemoryResource(0, DeviceMemoryResourceOptions())
    standin.clear()
    del mr
    gc.collect()
    assert len(standin.calls("cuMemPoolDestroy")) == 1


def test_pool_attributes_are_readable():
    for mr in (Device(0).memory_resource, DeviceMemoryResource(0, {})):
        a = mr.attributes
        for name in (
            "reserved_mem_current",
            "reserved_mem_high",
            "used_mem_current",
            "used_mem_high",
            "release_threshold",
        ):
            assert isinstance(getattr(a, name), int) and getattr(a, name) >= 0
        for name in (
            "reuse_follow_event_dependencies",
            "reuse_allow_opportunistic",
            "reuse_allow_internal_dependencies",
        ):
            assert isinstance(getattr(a, name), bool)
        assert "used_mem_current" in repr(a)


@pytest.mark.standin
def test_pinned_resource_is_a_host_pool(standin, stream):
    standin.clear()
    mr = PinnedMemoryResource()
    creates = standin.calls("cuMemPoolCreate")
    assert len(creates) == 1 and f"location={HOST}:0" in creates[0], creates
    assert mr.device_id == -1 and mr.numa_id == -1
    assert mr.is_host_accessible and mr.is_device_accessible and not mr.is_managed
    assert mr.is_handle_owned and not mr.is_ipc_enabled
    buf = mr.allocate(4096, stream=stream)
    assert buf.memory_resource is mr
    assert buf.is_host_accessible and buf.is_device_accessible and not buf.is_managed
    assert buf.device_id is None and "of the host" in repr(buf)
    assert len(standin.calls("cuMemAllocFromPoolAsync")) == 1
    buf.close()
    mr.close()
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocate(4096, stream=stream)


@pytest.mark.standin
def test_pinned_resource_of_a_numa_node(standin):
    standin.clear()
    mr = PinnedMemoryResource(PinnedMemoryResourceOptions(numa_id=0, max_size=1 << 24))
    creates = standin.calls("cuMemPoolCreate")
    assert len(creates) == 1 and f"location={HOST_NUMA}:0 max={1 << 24}" in creates[0], creates
    assert mr.numa_id == 0
    mr.close()


@pytest.mark.standin
@pytest.mark.parametrize(
    "options, location, preferred, device_id",
    [
        (None, "location=0:0", None, -1),
        (ManagedMemoryResourceOptions(0), f"location={DEVICE}:0", ("device", 0), 0),
        ({"preferred_location": 1, "preferred_location_type": "device"}, f"location={DEVICE}:1", ("device", 1), 1),
        ({"preferred_location": -1}, f"location={HOST}:", ("host", None), -1),
        (ManagedMemoryResourceOptions(None, "host"), f"location={HOST}:", ("host", None), -1),
        (ManagedMemoryResourceOptions(2, "host_numa"), f"location={HOST_NUMA}:2", ("host_numa", 2), -1),
    ],
)
def test_managed_resource_is_a_managed_pool(standin, stream, options, location, preferred, device_id):
    standin.clear()
    mr = ManagedMemoryResource(options)
    creates = standin.calls("cuMemPoolCreate")
    assert len(creates) == 1 and "alloc=2" in creates[0] and location in creates[0], creates
    assert mr.preferred_location == preferred
    assert mr.device_id == device_id
    assert mr.is_managed and mr.is_host_accessible and mr.is_device_accessible
    assert not mr.is_ipc_enabled
    buf = mr.allocate(4096, stream=stream)
    assert buf.is_managed and buf.memory_resource is mr
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_resources_on_a_gpu():
    np = pytest.importorskip("numpy")
    device = Device(0)
    device.set_current()
    stream = device.create_stream()
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    buf = mr.allocate(BIG, stream=stream)
    stream.sync()
    assert mr.attributes.used_mem_current >= BIG
    x = np.arange(BIG // 4, dtype=np.uint32)
    buf.copy_from(x, stream=stream)
    pinned = PinnedMemoryResource().allocate(BIG, stream=stream)
    buf.copy_to(pinned, stream=stream)
    out = np.empty_like(x)
    pinned.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, x)
    if device.compute_capability.major >= 6:
        managed = managed_resource_or_skip().allocate(BIG, stream=stream)
        managed.copy_from(buf, stream=stream)
        managed.copy_to(out, stream=stream)
        stream.sync()
        np.testing.assert_array_equal(out, x)
        managed.close()
    for b in (buf, pinned):
        b.close()
    stream.sync()
    stream.close()
