"""On a real GPU: what the stand-in cannot show (real names, real timing)."""

import pytest

from cudacore_rs import Device, EventOptions, system

pytestmark = pytest.mark.gpu


def test_device_on_the_gpu():
    assert system.num_devices >= 1
    device = Device(0)
    device.set_current()
    assert device.name
    major, minor = device.compute_capability
    assert major >= 5
    assert device.arch == f"{major}{minor}"


def test_timing_on_the_gpu():
    device = Device(0)
    device.set_current()
    with device.create_stream() as stream:
        start = stream.record(options=EventOptions(timing_enabled=True))
        end = stream.record(options=EventOptions(timing_enabled=True))
        end.sync()
        assert end.is_done
        assert end - start >= 0.0
