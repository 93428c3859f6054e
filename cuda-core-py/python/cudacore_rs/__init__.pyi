"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate."""

from types import TracebackType
from typing import Any, Dict, NamedTuple, Optional, Tuple, Type, Union, overload

from . import system as system

class CUDAError(Exception):
    """A CUDA driver error.

    ``name`` is the driver's name of the code (``"CUDA_ERROR_INVALID_VALUE"``), ``code`` its
    number (``CUresult``), ``call`` the driver function that failed; all three are None where
    the failure is not a driver call's (no driver found, a driver too old).
    """

    name: Optional[str]
    code: Optional[int]
    call: Optional[str]

class ComputeCapability(NamedTuple):
    """A device's compute capability: ``(major, minor)``."""

    major: int
    minor: int

class StreamOptions:
    """Options for ``Device.create_stream``.

    ``nonblocking``: the stream does not synchronise with the legacy default stream (default
    True). ``priority``: lower numbers run first; None is the default priority.
    """

    nonblocking: bool
    priority: Optional[int]
    def __init__(self, nonblocking: bool = True, priority: Optional[int] = None) -> None: ...

class EventOptions:
    """Options for ``Device.create_event`` and ``Stream.record``.

    ``timing_enabled``: record timestamps (for ``end - start``). ``blocking_sync``: ``sync()``
    blocks the thread instead of spinning. ``ipc_enabled``: other processes can open the event
    (not with timing).
    """

    timing_enabled: bool
    blocking_sync: bool
    ipc_enabled: bool
    def __init__(
        self, timing_enabled: bool = False, blocking_sync: bool = False, ipc_enabled: bool = False
    ) -> None: ...

class Device:
    """A CUDA device; ``Device()`` is the current one (device 0 when none is current).

    ``Device(n)`` returns the same object for device n every time it is called on one thread.
    """

    def __new__(cls, device_id: Optional[int] = None) -> "Device": ...
    @property
    def device_id(self) -> int:
        """The device's ordinal."""
    @property
    def name(self) -> str:
        """The device's name, as the driver gives it."""
    @property
    def compute_capability(self) -> ComputeCapability:
        """The compute capability, ``ComputeCapability(major, minor)``."""
    @property
    def arch(self) -> str:
        """The architecture as NVRTC spells it after ``sm_``: ``"90"`` for 9.0."""
    def set_current(self, ctx: None = None) -> None:
        """Makes the device's primary context current on the calling thread."""
    def sync(self) -> None:
        """Waits for all work of the device's primary context (the GIL is released)."""
    def create_stream(
        self, obj: None = None, options: Union[StreamOptions, Dict[str, Any], None] = None
    ) -> "Stream":
        """A new stream of the device."""
    def create_event(self, options: Union[EventOptions, Dict[str, Any], None] = None) -> "Event":
        """A new event of the device."""
    @property
    def memory_resource(self) -> "DeviceMemoryResource":
        """The device's default memory resource (its default pool); the same object each time."""
    def __int__(self) -> int: ...

class Stream:
    """A CUDA stream; destroyed by ``close()``, at the end of a ``with`` block, or when collected.

    Any use but ``close()`` of a closed stream raises ``RuntimeError``.
    """

    def record(
        self,
        event: Optional["Event"] = None,
        options: Union[EventOptions, Dict[str, Any], None] = None,
    ) -> "Event":
        """Records ``event`` (or a new event made with ``options``) on the stream; returns it."""
    def wait(self, event_or_stream: Union["Event", "Stream"]) -> None:
        """Makes the stream's later work wait for an event's last record or another stream."""
    def sync(self) -> None:
        """Waits until the stream's work is done (the GIL is released)."""
    def close(self) -> None:
        """Destroys the stream after its queued work; closing twice is harmless."""
    @property
    def closed(self) -> bool:
        """Whether the stream is closed."""
    @property
    def handle(self) -> int:
        """The raw ``CUstream`` handle as an int."""
    @property
    def device(self) -> Device:
        """The stream's device."""
    def __cuda_stream__(self) -> Tuple[int, int]:
        """The CUDA stream protocol: ``(0, handle)``."""
    def __enter__(self) -> "Stream": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Event:
    """A CUDA event; ``end - start`` is the milliseconds between two timing events.

    Destroyed by ``close()`` or when collected; any use but ``close()`` of a closed event raises
    ``RuntimeError``.
    """

    def sync(self) -> None:
        """Waits until the work before the event's last record is done (the GIL is released)."""
    @property
    def is_done(self) -> bool:
        """Whether the work before the event's last record is done."""
    @property
    def is_timing_disabled(self) -> bool:
        """Whether the event was made without timing."""
    @property
    def is_sync_busy_waited(self) -> bool:
        """Whether ``sync()`` spins rather than blocks."""
    @property
    def is_ipc_enabled(self) -> bool:
        """Whether other processes can open the event."""
    @property
    def handle(self) -> int:
        """The raw ``CUevent`` handle as an int."""
    @property
    def device(self) -> Device:
        """The event's device."""
    @property
    def closed(self) -> bool:
        """Whether the event is closed."""
    def close(self) -> None:
        """Destroys the event; closing twice is harmless."""
    def __sub__(self, other: "Event") -> float:
        """Milliseconds from ``other`` to this event (both timing events, completed)."""

class DeviceMemoryResourceOptions:
    """Options of a new ``DeviceMemoryResource`` pool.

    ipc_enabled: other processes may import the pool and its buffers (default False).
    max_size: the most bytes the pool may reserve; 0 (the default) for the system's limit.
    """

    ipc_enabled: bool
    max_size: int
    def __init__(self, ipc_enabled: bool = False, max_size: int = 0) -> None: ...

class _MemPoolAttributes:
    """A memory pool's attributes, read from the driver at each access."""

    @property
    def reuse_follow_event_dependencies(self) -> bool:
        """Whether freed memory is reused across streams ordered by events."""
    @property
    def reuse_allow_opportunistic(self) -> bool:
        """Whether completed frees are reused without dependencies."""
    @property
    def reuse_allow_internal_dependencies(self) -> bool:
        """Whether the driver may insert dependencies to reuse memory."""
    @property
    def release_threshold(self) -> int:
        """Reserved bytes kept at a synchronisation."""
    @property
    def reserved_mem_current(self) -> int:
        """Bytes reserved now."""
    @property
    def reserved_mem_high(self) -> int:
        """The most bytes reserved."""
    @property
    def used_mem_current(self) -> int:
        """Bytes of live allocations now."""
    @property
    def used_mem_high(self) -> int:
        """The most bytes of live allocations."""

class DeviceMemoryResource:
    """A stream-ordered memory pool of a device's memory; allocates ``Buffer`` objects.

    With ``options=None``, the device's default pool: the same object as
    ``Device(device_id).memory_resource``, which ``close()`` leaves alone. With options (a
    ``DeviceMemoryResourceOptions`` or a dict of its fields), a new pool of its own, given up by
    ``close()`` and destroyed once its last buffer is freed.
    """

    def __new__(
        cls,
        device_id: Union[int, Device],
        options: Union[DeviceMemoryResourceOptions, Dict[str, Any], None] = None,
    ) -> "DeviceMemoryResource": ...
    def allocate(self, size: int, stream: Optional[Stream] = None) -> "Buffer":
        """``size`` bytes (above 0), allocated in order on ``stream`` (None: the default stream)."""
    def close(self) -> None:
        """Gives up a pool of its own (no effect on the default pool)."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` gave the pool up."""
    @property
    def device_id(self) -> int:
        """The ordinal of the resource's device."""
    @property
    def is_device_accessible(self) -> bool:
        """Whether the memory is accessible from the device (True)."""
    @property
    def is_host_accessible(self) -> bool:
        """Whether the memory is accessible from the host (False)."""
    @property
    def is_managed(self) -> bool:
        """Whether the memory is managed memory (False)."""
    @property
    def is_handle_owned(self) -> bool:
        """Whether the pool is this resource's own (made with options)."""
    @property
    def is_ipc_enabled(self) -> bool:
        """Whether other processes may import the pool."""
    @property
    def is_mapped(self) -> bool:
        """Whether this is another process's pool (always False)."""
    @property
    def handle(self) -> Optional[int]:
        """The pool's ``CUmemoryPool`` as an int (None where the device has no pools)."""
    @property
    def attributes(self) -> _MemPoolAttributes:
        """The pool's attributes."""

class PinnedMemoryResourceOptions:
    """Options of a new ``PinnedMemoryResource`` pool.

    ipc_enabled: other processes may import the pool (default False; the current device's
    host NUMA node is used where numa_id is None).
    max_size: the most bytes the pool may reserve; 0 (the default) for the system's limit.
    numa_id: the host NUMA node of the memory; None (the default) for no particular node.
    """

    ipc_enabled: bool
    max_size: int
    numa_id: Optional[int]
    def __init__(
        self, ipc_enabled: bool = False, max_size: int = 0, numa_id: Optional[int] = None
    ) -> None: ...

class PinnedMemoryResource:
    """Page-locked host memory from a stream-ordered pool of its own, made through the current
    device; accessible from the host and that device."""

    def __init__(
        self, options: Union[PinnedMemoryResourceOptions, Dict[str, Any], None] = None
    ) -> None: ...
    def allocate(self, size: int, stream: Optional[Stream] = None) -> "Buffer":
        """``size`` bytes (above 0), allocated in order on ``stream``."""
    def close(self) -> None:
        """Gives the pool up; it is destroyed once its last buffer is freed."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` gave the pool up."""
    @property
    def device_id(self) -> int:
        """-1: host memory."""
    @property
    def numa_id(self) -> int:
        """The host NUMA node, or -1."""
    @property
    def is_device_accessible(self) -> bool:
        """True."""
    @property
    def is_host_accessible(self) -> bool:
        """True."""
    @property
    def is_managed(self) -> bool:
        """False."""
    @property
    def is_handle_owned(self) -> bool:
        """True: the pool is its own."""
    @property
    def is_ipc_enabled(self) -> bool:
        """Whether other processes may import the pool."""
    @property
    def is_mapped(self) -> bool:
        """False."""
    @property
    def handle(self) -> Optional[int]:
        """The pool's ``CUmemoryPool`` as an int."""
    @property
    def attributes(self) -> _MemPoolAttributes:
        """The pool's attributes."""

class ManagedMemoryResourceOptions:
    """Options of a new ``ManagedMemoryResource`` pool.

    preferred_location: with preferred_location_type None, a device ordinal, -1 for the host
    or None for no preference; with "device", a device ordinal; with "host", None; with
    "host_numa", a NUMA node id (None: the current device's).
    """

    preferred_location: Optional[int]
    preferred_location_type: Optional[str]
    def __init__(
        self, preferred_location: Optional[int] = None, preferred_location_type: Optional[str] = None
    ) -> None: ...

class ManagedMemoryResource:
    """Managed (unified) memory from a stream-ordered pool of its own (drivers 13.0 and newer)."""

    def __init__(
        self, options: Union[ManagedMemoryResourceOptions, Dict[str, Any], None] = None
    ) -> None: ...
    def allocate(self, size: int, stream: Optional[Stream] = None) -> "Buffer":
        """``size`` bytes (above 0), allocated in order on ``stream``."""
    def close(self) -> None:
        """Gives the pool up; it is destroyed once its last buffer is freed."""
    @property
    def closed(self) -> bool:
        """Whether ``close()`` gave the pool up."""
    @property
    def device_id(self) -> int:
        """The preferred device's ordinal, or -1."""
    @property
    def preferred_location(self) -> Optional[Tuple[str, Optional[int]]]:
        """None, or ``("device", ordinal)``, ``("host", None)``, ``("host_numa", node)``."""
    @property
    def is_device_accessible(self) -> bool:
        """True."""
    @property
    def is_host_accessible(self) -> bool:
        """True."""
    @property
    def is_managed(self) -> bool:
        """True."""
    @property
    def is_handle_owned(self) -> bool:
        """True: the pool is its own."""
    @property
    def is_ipc_enabled(self) -> bool:
        """False."""
    @property
    def is_mapped(self) -> bool:
        """False."""
    @property
    def handle(self) -> Optional[int]:
        """The pool's ``CUmemoryPool`` as an int."""
    @property
    def attributes(self) -> _MemPoolAttributes:
        """The pool's attributes."""

MemoryResource = Union[DeviceMemoryResource, PinnedMemoryResource, ManagedMemoryResource]

HostBuffer = Any
"""A host object with the buffer protocol (NumPy array, bytes, bytearray, memoryview, ...)."""

class Buffer:
    """Memory from a memory resource; copies and fills are queued on the given stream.

    Freed in stream order by ``close()`` or when collected; any use but ``close()``,
    ``closed`` and ``memory_resource`` of a closed buffer raises ``RuntimeError``.
    """

    @property
    def handle(self) -> int:
        """The device address as an int."""
    @property
    def size(self) -> int:
        """The size in bytes."""
    @property
    def device_id(self) -> Optional[int]:
        """The ordinal of the memory's device."""
    @property
    def memory_resource(self) -> MemoryResource:
        """The resource the buffer was allocated from."""
    @property
    def is_managed(self) -> bool:
        """Whether the memory is managed (a ``ManagedMemoryResource``'s)."""
    @property
    def is_device_accessible(self) -> bool:
        """Whether the memory is accessible from the device."""
    @property
    def is_host_accessible(self) -> bool:
        """Whether the memory is accessible from the host."""
    @property
    def closed(self) -> bool:
        """Whether the buffer is closed."""
    def close(self, stream: Optional[Stream] = None) -> None:
        """Frees the memory in order on ``stream`` (None: its allocation stream); closing twice
        is harmless."""
    @overload
    def copy_to(self, dst: Optional["Buffer"] = None, *, stream: Stream) -> "Buffer": ...
    @overload
    def copy_to(self, dst: HostBuffer, *, stream: Stream) -> HostBuffer:
        """Copies into ``dst`` (a Buffer or writable C-contiguous host memory of the same size),
        or a new buffer from the same resource; returns it. Stream-ordered: host memory holds
        the data once the stream passes the copy, and is kept alive until then."""
    def copy_from(self, src: Union["Buffer", HostBuffer], *, stream: Stream) -> None:
        """Copies ``src`` (a Buffer or C-contiguous host memory of the same size) into this
        buffer. Stream-ordered: host memory must not change until the stream passes the copy,
        and is kept alive until then."""
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A DLPack capsule of a 1-D int8 tensor over the buffer ("dltensor_versioned" for
        max_version >= (1, 0), else "dltensor"); it holds the memory until released."""
    def __dlpack_device__(self) -> Tuple[int, int]:
        """``(2, ordinal)`` device, ``(3, 0)`` pinned or ``(13, 0)`` managed memory."""
    def fill(self, value: Union[int, bytes, bytearray, memoryview, Any], *, stream: Stream) -> None:
        """Fills with an int byte (0 to 255) or a 1, 2 or 4-byte buffer-protocol pattern."""
