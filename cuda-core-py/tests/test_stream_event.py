import gc
import threading

import pytest

import cudacore_rs

from cudacore_rs import Device, Event, EventOptions, Stream, StreamOptions


def in_new_thread(body):
    """Runs ``body`` on a fresh thread (whose recycled handles are none yet); returns its value."""
    out = []
    errors = []

    def run():
        try:
            out.append(body())
        except BaseException as e:  # re-raised on the caller's thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]


@pytest.mark.nodriver
def test_options_defaults_and_repr():
    assert StreamOptions() == StreamOptions(nonblocking=True, priority=None)
    assert repr(StreamOptions(False, -1)) == "StreamOptions(nonblocking=False, priority=-1)"
    assert EventOptions() == EventOptions(False, False, False)
    assert repr(EventOptions(timing_enabled=True)) == (
        "EventOptions(timing_enabled=True, blocking_sync=False, ipc_enabled=False)"
    )


@pytest.mark.standin
def test_stream_options_reach_the_driver(standin):
    device = Device(0)
    blocking = device.create_stream(options=StreamOptions(nonblocking=False))
    assert standin.calls("cuStreamCreate")[-1].endswith("flags=0")
    nonblocking = device.create_stream(options={"nonblocking": True, "priority": 0})

    def fresh():
        standin.clear()
        s = Device(0).create_stream(options=StreamOptions(nonblocking=True))
        s.close()
        return standin.calls("cuStreamCreate")

    created = in_new_thread(fresh)
    assert created and created[-1].endswith("flags=1"), created
    blocking.close()
    nonblocking.close()


@pytest.mark.standin
def test_event_options_reach_the_driver(standin):
    def make(options):
        def body():
            standin.clear()
            Device(0).create_event(options=options).close()
            return standin.calls("cuEventCreate")

        return in_new_thread(body)

    # CU_EVENT_BLOCKING_SYNC is 1, CU_EVENT_DISABLE_TIMING 2.
    assert make(None)[-1].endswith("flags=2")
    assert make(EventOptions(timing_enabled=True))[-1].endswith("flags=0")
    assert make({"blocking_sync": True})[-1].endswith("flags=3")


def test_bad_options_are_type_errors():
    with pytest.raises(TypeError, match="StreamOptions"):
        Device(0).create_stream(options=EventOptions())
    with pytest.raises(TypeError):
        Device(0).create_event(options={"no_such_field": 1})
    with pytest.raises(ValueError, match="ipc_enabled"):
        Device(0).create_event(EventOptions(timing_enabled=True, ipc_enabled=True))


@pytest.mark.standin
def test_record_wait_sync(standin):
    device = Device(0)
    a = device.create_stream()
    b = device.create_stream()
    event = a.record()
    assert isinstance(event, Event)
    again = a.record(event)
    assert again is event
    b.wait(event)
    b.wait(a)
    b.sync()
    event.sync()
    assert event.is_done
    log = standin.log()
    assert "cuEventRecord" in log
    assert "cuStreamWaitEvent" in log
    assert "cuStreamQuery" in log  # finished work: asked, not waited for
    with pytest.raises(TypeError, match="Event or a Stream"):
        b.wait(3)
    a.close()
    b.close()


def test_stream_protocol_and_handle():
    stream = Device(0).create_stream()
    version, handle = stream.__cuda_stream__()
    assert version == 0 and handle == stream.handle and handle != 0
    assert repr(stream) == f"<Stream handle={handle:#x} of device 0>"
    assert stream.device is Device(0)
    stream.close()
    assert repr(stream) == "<Stream (closed)>"


def test_stream_context_manager_closes():
    with Device(0).create_stream() as stream:
        assert isinstance(stream, Stream)
        assert not stream.closed
    assert stream.closed


def test_close_twice_and_use_after_close():
    stream = Device(0).create_stream()
    event = Device(0).create_event()
    stream.close()
    stream.close()
    event.close()
    event.close()
    for use in (stream.sync, stream.record, lambda: stream.wait(event), lambda: stream.handle):
        with pytest.raises(RuntimeError, match="Stream is closed"):
            use()
    other = Device(0).create_stream()
    with pytest.raises(RuntimeError, match="Event is closed"):
        other.record(event)
    with pytest.raises(RuntimeError, match="Event is closed"):
        other.wait(event)
    for use in (event.sync, lambda: event.is_done, lambda: event.handle):
        with pytest.raises(RuntimeError, match="Event is closed"):
            use()
    assert repr(event) == "<Event (closed)>"
    other.close()


def test_objects_cannot_be_made_directly():
    with pytest.raises(RuntimeError, match="create_stream"):
        Stream()
    with pytest.raises(RuntimeError, match="create_event"):
        Event()


@pytest.mark.standin
def test_collection_releases_handles(standin):
    def body():
        standin.clear()
        stream = Device(0).create_stream(options=StreamOptions(nonblocking=False))
        # An interprocess event is never recycled: collecting it destroys it.
        event = Device(0).create_event(EventOptions(ipc_enabled=True))
        del stream, event
        gc.collect()
        return standin.log()

    log = in_new_thread(body)
    assert "cuStreamDestroy" in log
    assert "cuEventDestroy" in log


@pytest.mark.standin
def test_event_subtraction_gives_milliseconds(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_ELAPSED", "2.5")
    stream = Device(0).create_stream()
    start = stream.record(options=EventOptions(timing_enabled=True))
    end = stream.record(options={"timing_enabled": True})
    end.sync()
    assert end - start == pytest.approx(2.5)
    assert not end.is_timing_disabled
    stream.close()


def test_event_subtraction_without_timing_is_runtime_error():
    stream = Device(0).create_stream()
    start = stream.record()
    end = stream.record()
    assert start.is_timing_disabled
    with pytest.raises(RuntimeError, match="without timing"):
        end - start
    with pytest.raises(TypeError):
        end - 1
    stream.close()


@pytest.mark.standin
def test_is_done_follows_the_driver(standin, monkeypatch):
    event = Device(0).create_stream().record()
    monkeypatch.setenv("STANDIN_QUERY_STATUS", "600")  # CUDA_ERROR_NOT_READY
    assert not event.is_done
    monkeypatch.setenv("STANDIN_QUERY_STATUS", "0")
    assert event.is_done


@pytest.mark.standin
def test_a_wait_on_finished_work_asks_once_and_a_wait_on_pending_work_waits(standin,
                                                                            monkeypatch):
    stream = Device(0).create_stream()
    event = stream.record()
    standin.clear()
    stream.sync()
    event.sync()
    # Finished work: one query each, no wait (a bug would wait, handing the GIL over for it).
    assert len(standin.calls("cuStreamQuery")) == 1
    assert standin.calls("cuStreamSynchronize") == []
    assert standin.calls("cuEventSynchronize") == []
    monkeypatch.setenv("STANDIN_QUERY_STATUS", "600")  # CUDA_ERROR_NOT_READY: work pending
    standin.clear()
    stream.sync()
    event.sync()
    # Pending work: the query, then the wait (a bug would return after the query).
    assert len(standin.calls("cuStreamSynchronize")) == 1
    assert len(standin.calls("cuEventSynchronize")) == 1
    monkeypatch.setenv("STANDIN_QUERY_STATUS", "0")
    # A failed stream: the query fails, and the wait reports the failure under its own name
    # (a bug would raise the query's error, or none).
    standin.set_sync_status(700)
    with pytest.raises(cudacore_rs.CUDAError) as raised:
        stream.sync()
    assert raised.value.call == "cuStreamSynchronize"
    standin.set_sync_status(0)
    stream.close()


def test_waits_release_the_gil():
    stream = Device(0).create_stream()
    event = stream.record()
    errors = []

    def worker():
        try:
            for _ in range(200):
                stream.sync()
                event.sync()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stream.close()


@pytest.mark.parametrize(
    "env, handle",
    [
        ({}, 1),  # CU_STREAM_LEGACY
        ({"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "1"}, 2),  # CU_STREAM_PER_THREAD
        ({"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "0"}, 1),
        ({"CUDA_CORE_PER_THREAD_DEFAULT_STREAM": "1"}, 2),
        # cuda.core's variable, where set, decides for the Python package.
        ({"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "0",
          "CUDA_CORE_PER_THREAD_DEFAULT_STREAM": "1"}, 1),
        ({"CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM": "yes"}, "ValueError"),
    ],
)
def test_the_default_stream_follows_cuda_cores_variable(env, handle):
    # In a fresh interpreter: the variables are read once per process. Bugs caught: the
    # variable ignored (legacy every time), the per-thread stream given unasked, the Rust
    # crate's variable overriding cuda.core's, a bad value taken silently.
    import os
    import subprocess
    import sys

    script = (
        "from cudacore_rs import Device\n"
        "d = Device(0); d.set_current()\n"
        "try:\n"
        "    s = d.default_stream\n"
        "    s.sync()\n"
        "    print(int(s.handle))\n"
        "except ValueError:\n"
        "    print('ValueError')\n"
    )
    child_env = dict(os.environ)
    for name in ("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "CUDA_CORE_PER_THREAD_DEFAULT_STREAM"):
        child_env.pop(name, None)
    child_env.update(env)
    done = subprocess.run([sys.executable, "-c", script], env=child_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(handle)
