"""Green contexts, properties and NVML on a real GPU (skipped without one)."""

import threading

import pytest

from cudacore_rs import (
    ContextOptions,
    Device,
    SMResourceOptions,
    Stream,
    system,
)

pytestmark = pytest.mark.gpu


def _half_groups(d):
    sm = d.resources.sm
    step = sm.min_partition_size
    half = (sm.sm_count // 2) // step * step
    return sm, sm.split(SMResourceOptions(count=[half, half]))


def test_split_and_contexts_report_their_sms():
    d = Device(0)
    d.set_current()
    sm, (groups, rest) = _half_groups(d)
    assert len(groups) == 2
    assert all(g.sm_count >= sm.min_partition_size for g in groups)
    assert sum(g.sm_count for g in groups) + rest.sm_count <= sm.sm_count
    ctx = d.create_context(ContextOptions([groups[0]]))
    try:
        assert ctx.is_green
        assert ctx.resources.sm.sm_count == groups[0].sm_count
    finally:
        ctx.close()


def test_two_threads_each_running_on_its_own_green_context():
    d = Device(0)
    d.set_current()
    _, (groups, _) = _half_groups(d)
    ctxs = [d.create_context(ContextOptions([g])) for g in groups]
    errors, results = [], []
    size = 1 << 20

    def run_task(ctx):
        try:
            d.set_current()
            stream = ctx.create_stream()
            assert isinstance(stream, Stream)
            buf = d.memory_resource.allocate(size, stream=stream)
            buf.fill(7, stream=stream)
            start = ctx.create_event({"timing_enabled": True})
            end = ctx.create_event({"timing_enabled": True})
            stream.record(start)
            stream.record(end)
            stream.sync()
            results.append(end - start)
            buf.close()
            stream.close()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run_task, args=(c,)) for c in ctxs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in ctxs:
        c.close()
    assert errors == []
    assert len(results) == 2 and all(r >= 0 for r in results)


def test_set_current_green_returns_the_primary():
    d = Device(0)
    d.set_current()
    _, (groups, _) = _half_groups(d)
    ctx = d.create_context(ContextOptions([groups[0]]))
    previous = d.set_current(ctx)
    assert previous is not None and not previous.is_green
    s = ctx.create_stream()
    s.sync()
    assert d.set_current(previous) == ctx
    s.close()
    ctx.close()


def test_properties_are_plausible():
    d = Device(0)
    p = d.properties
    cc = d.compute_capability
    assert (p.compute_capability_major, p.compute_capability_minor) == (cc.major, cc.minor)
    assert p.multiprocessor_count == d.resources.sm.sm_count
    assert p.warp_size == 32
    assert 64 <= p.max_threads_per_block <= 4096
    assert p.max_shared_memory_per_block >= 16 * 1024
    assert p.l2_cache_size > 0
    assert p.clock_rate > 0 and p.memory_clock_rate > 0
    assert p.unified_addressing is True


def test_nvml_values_are_plausible():
    d = Device(0)
    assert system.get_num_devices() >= 1
    try:
        sd = d.to_system_device()
    except system.LibraryNotFoundError:
        pytest.skip("NVML is not on this GPU machine")
    assert sd.name == d.name
    assert sd.uuid.lower().startswith("gpu-")
    assert sd.to_cuda_device() is d
    util = sd.utilization
    assert 0 <= util.gpu <= 100 and 0 <= util.memory <= 100
    mem = sd.memory_info
    assert 0 < mem.used <= mem.total and mem.free <= mem.total
    assert 0 < sd.temperature.get_sensor() < 120
    assert sd.pci_info.vendor_id == 0x10DE
    assert len(system.get_kernel_mode_driver_version()) >= 2
    assert system.Device(uuid=sd.uuid) == sd
    assert system.Device(pci_bus_id=sd.pci_bus_id) == sd


def test_foreign_stream_wraps_without_owning():
    d = Device(0)
    d.set_current()
    owner = d.create_stream()
    wrapped = Stream.from_handle(owner.handle)
    assert wrapped == owner
    wrapped.close()
    owner.sync()  # still alive: the wrap did not destroy it
    owner.close()
