"""Device.properties: cuda.core's names, each reading the right attribute."""

import json
import os
import re
import subprocess
import sys

import pytest

from cudacore_rs import Device, DeviceProperties

HERE = os.path.dirname(os.path.abspath(__file__))
ATTRIBUTES = os.path.join(HERE, "..", "..", "cuda-core", "src", "generated", "device_attributes.rs")


def _property_names():
    return sorted(n for n in dir(DeviceProperties) if not n.startswith("_"))


def _attribute_codes():
    """cuda-core's accessor names and their CU_DEVICE_ATTRIBUTE codes, from its generated
    source (the header's attribute list): an independent record of which code is which."""
    text = open(ATTRIBUTES).read()
    found = re.findall(r"pub fn (\w+)\(\s*&self,?\s*\) -> Result<(\w+)> \{\s*self\.read\((\d+)\)",
                       text)
    return {name: (int(code), kind) for name, kind, code in found}


@pytest.mark.nodriver
def test_every_property_has_a_docstring_and_a_known_attribute():
    names = _property_names()
    assert len(names) >= 100
    codes = _attribute_codes()
    for name in names:
        assert name in codes, name
        assert getattr(DeviceProperties, name).__doc__, name


@pytest.mark.standin
def test_values_equal_the_stand_ins_attributes(standin):
    p = Device(0).properties
    assert isinstance(p, DeviceProperties)
    assert p.multiprocessor_count == 132
    assert p.max_threads_per_block == 1024
    assert p.compute_capability_major == 9
    assert p.compute_capability_minor == 0
    assert (p.compute_capability_major, p.compute_capability_minor) == tuple(
        Device(0).compute_capability)
    assert p.texture_alignment == 512
    assert p.texture_pitch_alignment == 32
    assert p.max_pitch == 2147483647
    assert p.maximum_texture1d_width == 4096
    assert p.max_access_policy_window_size == 134213632
    assert p.memory_pools_supported is True
    assert p.unified_addressing is True
    assert "device 0" in repr(p)
    with pytest.raises(RuntimeError):
        DeviceProperties()


@pytest.mark.standin
def test_properties_are_cached(standin):
    p = Device(0).properties
    p.warp_size
    standin.clear()
    p.warp_size
    Device(0).properties.warp_size
    assert standin.log() == ""


@pytest.mark.standin
def test_each_property_reads_its_own_attribute(standin):
    # With STANDIN_ATTRIBUTE_BITS=1 and 8 devices, device D answers bit D of the attribute's
    # code: reading a property on devices 0..7 spells out the code it asked the driver for.
    codes = _attribute_codes()
    script = (
        "import json; from cudacore_rs import Device, DeviceProperties\n"
        "names = [n for n in dir(DeviceProperties) if not n.startswith('_')]\n"
        "out = {}\n"
        "for n in names:\n"
        "    out[n] = [int(getattr(Device(d).properties, n)) for d in range(8)]\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, STANDIN_ATTRIBUTE_BITS="1", STANDIN_DEVICES="8")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert len(read) >= 100
    for name, bits in read.items():
        code = sum(bit << d for d, bit in enumerate(bits))
        assert code == codes[name][0], f"{name} read attribute {code}, not {codes[name][0]}"
    bools = {n for n, (_, kind) in codes.items() if kind == "bool"}
    script_types = (
        "import json; from cudacore_rs import Device, DeviceProperties\n"
        "p = Device(1).properties\n"
        "print(json.dumps({n: type(getattr(p, n)).__name__ for n in dir(DeviceProperties)"
        " if not n.startswith('_')}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script_types], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name, kind in json.loads(done.stdout).items():
        assert kind == ("bool" if name in bools else "int"), name
