"""On a real GPU: the examples run to their end and print what they promise."""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def run_example(name, *args):
    done = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_saxpy_example_checks_its_result():
    # Catches: a launch whose arguments reach the kernel wrong (the example asserts the result),
    # host copies that do not land, a cache that does not give back what it was given.
    out = run_example("saxpy.py", "1000003")
    assert "saxpy over 1,000,003 floats: correct" in out
    # x[1] = 1, y = 0.5, a = 3: out[1] = 3.5, printed from the copied-back array.
    assert "out[1] = 3.5" in out


def test_green_contexts_example_splits_the_sms():
    # Catches: contexts that are not green or do not get half the SMs each, a kernel that did
    # not run on one of the two threads' streams (the example asserts both results).
    out = run_example("green_contexts.py")
    total, first, second = (
        int(x) for x in re.search(r"(\d+) SMs, split into \[(\d+), (\d+)\]", out).groups()
    )
    assert first == second and 0 < first <= total // 2
    assert "context A" in out and "7.0" in out
    assert "context B" in out and "12.0" in out
    assert "green=True" in out


def test_system_monitor_example_reports_each_device():
    # Catches: NVML values that are not read (a zero total), or a device left out.
    out = run_example("system_monitor.py")
    lines = [line for line in out.splitlines() if re.match(r"\d+: ", line)]
    assert lines, out
    for line in lines:
        used, total = (int(x) for x in re.search(r"(\d+) MiB used of (\d+) MiB", line).groups())
        assert 0 < total and used <= total
