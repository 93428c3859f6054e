import threading

import pytest

import cudacore_rs
from cudacore_rs import ComputeCapability, Device
from conftest import needs_two_devices


def test_same_object_per_device_on_one_thread():
    assert Device(0) is Device(0)
    assert Device() is Device(0)  # no context current: device 0
    needs_two_devices()
    assert Device(1) is not Device(0)


def test_other_thread_gets_its_own_object():
    here = Device(0)
    seen = []
    thread = threading.Thread(target=lambda: seen.append((Device(0), Device(0))))
    thread.start()
    thread.join()
    (first, second), = seen
    assert first is second
    assert first is not here
    assert first.device_id == here.device_id == 0


def test_device_id_out_of_range_is_value_error():
    count = cudacore_rs.system.num_devices
    with pytest.raises(ValueError, match=f"within \\[0, {count}\\), got {count}"):
        Device(count)
    with pytest.raises(ValueError):
        Device(-1)


@pytest.mark.standin
def test_properties_from_the_driver():
    device = Device(0)
    assert device.device_id == 0
    assert device.name == "cuda-core stand-in driver"
    cc = device.compute_capability
    assert isinstance(cc, ComputeCapability)
    assert cc == (9, 0) and cc.major == 9 and cc.minor == 0
    assert device.arch == "90"
    assert int(device) == 0
    assert repr(device) == "<Device 0>"


def test_set_current_makes_device_current():
    needs_two_devices()
    Device(1).set_current()
    try:
        assert Device() is Device(1)
    finally:
        Device(0).set_current()
    assert Device() is Device(0)


def test_set_current_with_what_is_not_a_context_raises_type_error():
    with pytest.raises(TypeError):
        Device(0).set_current(object())


def test_device_sync():
    Device(0).sync()


def test_docstrings_on_public_names():
    for name in cudacore_rs.__all__:
        assert getattr(cudacore_rs, name).__doc__, name
    for cls in (
        Device,
        cudacore_rs.Stream,
        cudacore_rs.Event,
        cudacore_rs.DeviceMemoryResource,
        cudacore_rs.Buffer,
    ):
        for attr in dir(cls):
            if attr.startswith("_"):
                continue
            assert getattr(cls, attr).__doc__, f"{cls.__name__}.{attr}"
