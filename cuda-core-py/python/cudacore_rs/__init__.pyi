"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate."""

from types import TracebackType
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Type, Union, overload

from . import system as system
from . import utils as utils

__version__: str

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
    def set_current(self, ctx: Optional["Context"] = None) -> Optional["Context"]:
        """Makes the primary context (or ``ctx``, a context of this device) current.

        With ``ctx``, returns the context it replaced (None where it was not one made current
        through this package); without, returns None.
        """
    def create_context(
        self, options: Union["ContextOptions", Dict[str, Any], None] = None
    ) -> "Context":
        """A new green context on SM groups of this device (not made current)."""
    @property
    def context(self) -> "Context":
        """The device's primary context."""
    @property
    def resources(self) -> "DeviceResources":
        """The device's hardware resources (its SMs), for green contexts."""
    @property
    def properties(self) -> "DeviceProperties":
        """The device's attributes under cuda.core's names (each read once, then cached)."""
    def to_system_device(self) -> "system.Device":
        """This device as NVML sees it (matched by UUID); needs NVML."""
    def sync(self) -> None:
        """Waits for all work of the device's primary context (the GIL is released)."""
    def create_stream(
        self, obj: Optional[Any] = None, options: Union[StreamOptions, Dict[str, Any], None] = None
    ) -> "Stream":
        """A new stream of the device; or, given ``obj`` with ``__cuda_stream__``, its stream
        wrapped without owning it (``obj`` is held alive meanwhile)."""
    def create_event(self, options: Union[EventOptions, Dict[str, Any], None] = None) -> "Event":
        """A new event of the device."""
    @property
    def default_stream(self) -> "Stream":
        """The legacy default stream, or the thread's per-thread default stream where
        ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1`` (or ``CUDA_CORE_PER_THREAD_DEFAULT_STREAM=1``)
        is set; not owned."""
    @property
    def memory_resource(self) -> "DeviceMemoryResource":
        """The device's default memory resource (its default pool); the same object each time."""
    def __int__(self) -> int: ...

class Stream:
    """A CUDA stream; destroyed by ``close()``, at the end of a ``with`` block, or when collected.

    Any use but ``close()`` of a closed stream raises ``RuntimeError``.
    """

    @staticmethod
    def from_handle(handle: int) -> "Stream":
        """Wraps a foreign ``CUstream`` (an int) without owning it.

        Same raw power as cuda.core's: ``handle`` must be a valid stream and stay valid (with
        its context) while the result is used.
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

class CUDAInvalidValueError(CUDAError):
    """CUDA_ERROR_INVALID_VALUE: the driver refused an argument."""

class CUDAOutOfMemoryError(CUDAError):
    """CUDA_ERROR_OUT_OF_MEMORY."""

class CUDANotInitializedError(CUDAError):
    """CUDA_ERROR_NOT_INITIALIZED or CUDA_ERROR_DEINITIALIZED."""

class CUDANoDeviceError(CUDAError):
    """CUDA_ERROR_NO_DEVICE."""

class CUDAInvalidDeviceError(CUDAError):
    """CUDA_ERROR_INVALID_DEVICE."""

class CUDAInvalidContextError(CUDAError):
    """CUDA_ERROR_INVALID_CONTEXT, CONTEXT_ALREADY_CURRENT or CONTEXT_IS_DESTROYED."""

class CUDAInvalidHandleError(CUDAError):
    """CUDA_ERROR_INVALID_HANDLE."""

class CUDANotFoundError(CUDAError):
    """CUDA_ERROR_NOT_FOUND."""

class CUDANotReadyError(CUDAError):
    """CUDA_ERROR_NOT_READY."""

class CUDAIllegalAddressError(CUDAError):
    """CUDA_ERROR_ILLEGAL_ADDRESS, MISALIGNED_ADDRESS or INVALID_ADDRESS_SPACE."""

class CUDALaunchError(CUDAError):
    """CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, LAUNCH_TIMEOUT, LAUNCH_FAILED or
    COOPERATIVE_LAUNCH_TOO_LARGE."""

class CUDANotSupportedError(CUDAError, NotImplementedError):
    """CUDA_ERROR_NOT_SUPPORTED, or a driver function missing (``code`` None)."""

class CUDAStreamCaptureError(CUDAError):
    """CUDA_ERROR_STREAM_CAPTURE_* and CUDA_ERROR_CAPTURED_EVENT."""

class SMResourceOptions:
    """Options for ``SMResource.split()``.

    ``count``: SMs per group, an int (one group), a sequence (one group each) or None
    (discovery: the smallest group). ``coscheduled_sm_count`` and
    ``preferred_coscheduled_sm_count``: must be None (NotImplementedError otherwise).
    ``backfill``: let groups ignore the co-scheduling granularity (a bool, or one per group).
    """

    count: Union[int, Sequence[Optional[int]], None]
    coscheduled_sm_count: Union[int, Sequence[Optional[int]], None]
    preferred_coscheduled_sm_count: Union[int, Sequence[Optional[int]], None]
    backfill: Union[bool, Sequence[bool]]
    def __init__(
        self,
        count: Union[int, Sequence[Optional[int]], None] = None,
        coscheduled_sm_count: Union[int, Sequence[Optional[int]], None] = None,
        preferred_coscheduled_sm_count: Union[int, Sequence[Optional[int]], None] = None,
        backfill: Union[bool, Sequence[bool]] = False,
    ) -> None: ...

class SMResource:
    """A set of SMs of one device: all of them, a context's, or a group split from them."""

    @property
    def sm_count(self) -> int:
        """How many SMs."""
    @property
    def min_partition_size(self) -> int:
        """The smallest number of SMs a group can have."""
    @property
    def coscheduled_alignment(self) -> int:
        """The number of SMs groups are aligned to for co-scheduling."""
    def split(
        self, options: Union[SMResourceOptions, Dict[str, Any]], *, dry_run: bool = False
    ) -> Tuple[List["SMResource"], "SMResource"]:
        """Splits the SMs into ``(groups, remainder)``; options are checked before the driver."""

class DeviceResources:
    """The hardware resources of a device or of a context."""

    @property
    def sm(self) -> SMResource:
        """The SMs of the device, or of the context."""

class ContextOptions:
    """Options for ``Device.create_context``: ``resources``, the SM groups (at least one)."""

    resources: Sequence[SMResource]
    def __init__(self, resources: Sequence[SMResource]) -> None: ...

class Context:
    """A CUDA context: a green context (``Device.create_context``) or a primary one.

    ``close()`` releases this object's hold (streams made in it keep working); closing a
    context current on the calling thread raises RuntimeError.
    """

    @property
    def handle(self) -> Optional[int]:
        """The raw ``CUcontext`` as an int; None once closed."""
    @property
    def is_closed(self) -> bool:
        """Whether ``close()`` was called."""
    @property
    def is_green(self) -> bool:
        """Whether this is a green context (False once closed)."""
    @property
    def device(self) -> Device:
        """The context's device."""
    @property
    def resources(self) -> DeviceResources:
        """The context's resources (a green context's SMs)."""
    def create_stream(
        self, options: Union[StreamOptions, Dict[str, Any], None] = None
    ) -> Stream:
        """A new stream in this green context (RuntimeError for a primary context)."""
    def create_event(self, options: Union[EventOptions, Dict[str, Any], None] = None) -> Event:
        """A new event in this context."""
    def sync(self) -> None:
        """Waits for all work in the context (the GIL is released)."""
    def close(self) -> None:
        """Releases this object's hold on the context; closing twice is harmless."""
    def __enter__(self) -> "Context": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class DeviceProperties:
    """A device's attributes under cuda.core's names, read once and cached."""

    @property
    def max_threads_per_block(self) -> int:
        """Maximum number of threads per block."""
    @property
    def max_block_dim_x(self) -> int:
        """Maximum block dimension X."""
    @property
    def max_block_dim_y(self) -> int:
        """Maximum block dimension Y."""
    @property
    def max_block_dim_z(self) -> int:
        """Maximum block dimension Z."""
    @property
    def max_grid_dim_x(self) -> int:
        """Maximum grid dimension X."""
    @property
    def max_grid_dim_y(self) -> int:
        """Maximum grid dimension Y."""
    @property
    def max_grid_dim_z(self) -> int:
        """Maximum grid dimension Z."""
    @property
    def max_shared_memory_per_block(self) -> int:
        """Maximum shared memory available per block in bytes."""
    @property
    def total_constant_memory(self) -> int:
        """Memory available on device for __constant__ variables in a CUDA C kernel in bytes."""
    @property
    def warp_size(self) -> int:
        """Warp size in threads."""
    @property
    def max_pitch(self) -> int:
        """Maximum pitch in bytes allowed by memory copies."""
    @property
    def maximum_texture1d_width(self) -> int:
        """Maximum 1D texture width."""
    @property
    def maximum_texture1d_linear_width(self) -> int:
        """Deprecated, do not use. Use cudaDeviceGetTexture1DLinearMaxWidth() or cuDeviceGetTexture1DLinearMaxWidth() instead."""
    @property
    def maximum_texture1d_mipmapped_width(self) -> int:
        """Maximum mipmapped 1D texture width."""
    @property
    def maximum_texture2d_width(self) -> int:
        """Maximum 2D texture width."""
    @property
    def maximum_texture2d_height(self) -> int:
        """Maximum 2D texture height."""
    @property
    def maximum_texture2d_linear_width(self) -> int:
        """Maximum 2D linear texture width."""
    @property
    def maximum_texture2d_linear_height(self) -> int:
        """Maximum 2D linear texture height."""
    @property
    def maximum_texture2d_linear_pitch(self) -> int:
        """Maximum 2D linear texture pitch in bytes."""
    @property
    def maximum_texture2d_mipmapped_width(self) -> int:
        """Maximum mipmapped 2D texture width."""
    @property
    def maximum_texture2d_mipmapped_height(self) -> int:
        """Maximum mipmapped 2D texture height."""
    @property
    def maximum_texture3d_width(self) -> int:
        """Maximum 3D texture width."""
    @property
    def maximum_texture3d_height(self) -> int:
        """Maximum 3D texture height."""
    @property
    def maximum_texture3d_depth(self) -> int:
        """Maximum 3D texture depth."""
    @property
    def maximum_texture3d_width_alternate(self) -> int:
        """Alternate maximum 3D texture width."""
    @property
    def maximum_texture3d_height_alternate(self) -> int:
        """Alternate maximum 3D texture height."""
    @property
    def maximum_texture3d_depth_alternate(self) -> int:
        """Alternate maximum 3D texture depth."""
    @property
    def maximum_texturecubemap_width(self) -> int:
        """Maximum cubemap texture width/height."""
    @property
    def maximum_texture1d_layered_width(self) -> int:
        """Maximum 1D layered texture width."""
    @property
    def maximum_texture1d_layered_layers(self) -> int:
        """Maximum layers in a 1D layered texture."""
    @property
    def maximum_texture2d_layered_width(self) -> int:
        """Maximum 2D layered texture width."""
    @property
    def maximum_texture2d_layered_height(self) -> int:
        """Maximum 2D layered texture height."""
    @property
    def maximum_texture2d_layered_layers(self) -> int:
        """Maximum layers in a 2D layered texture."""
    @property
    def maximum_texturecubemap_layered_width(self) -> int:
        """Maximum cubemap layered texture width/height."""
    @property
    def maximum_texturecubemap_layered_layers(self) -> int:
        """Maximum layers in a cubemap layered texture."""
    @property
    def maximum_surface1d_width(self) -> int:
        """Maximum 1D surface width."""
    @property
    def maximum_surface2d_width(self) -> int:
        """Maximum 2D surface width."""
    @property
    def maximum_surface2d_height(self) -> int:
        """Maximum 2D surface height."""
    @property
    def maximum_surface3d_width(self) -> int:
        """Maximum 3D surface width."""
    @property
    def maximum_surface3d_height(self) -> int:
        """Maximum 3D surface height."""
    @property
    def maximum_surface3d_depth(self) -> int:
        """Maximum 3D surface depth."""
    @property
    def maximum_surface1d_layered_width(self) -> int:
        """Maximum 1D layered surface width."""
    @property
    def maximum_surface1d_layered_layers(self) -> int:
        """Maximum layers in a 1D layered surface."""
    @property
    def maximum_surface2d_layered_width(self) -> int:
        """Maximum 2D layered surface width."""
    @property
    def maximum_surface2d_layered_height(self) -> int:
        """Maximum 2D layered surface height."""
    @property
    def maximum_surface2d_layered_layers(self) -> int:
        """Maximum layers in a 2D layered surface."""
    @property
    def maximum_surfacecubemap_width(self) -> int:
        """Maximum cubemap surface width."""
    @property
    def maximum_surfacecubemap_layered_width(self) -> int:
        """Maximum cubemap layered surface width."""
    @property
    def maximum_surfacecubemap_layered_layers(self) -> int:
        """Maximum layers in a cubemap layered surface."""
    @property
    def max_registers_per_block(self) -> int:
        """Maximum number of 32-bit registers available per block."""
    @property
    def clock_rate(self) -> int:
        """Typical clock frequency in kilohertz."""
    @property
    def texture_alignment(self) -> int:
        """Alignment requirement for textures."""
    @property
    def texture_pitch_alignment(self) -> int:
        """Pitch alignment requirement for textures."""
    @property
    def gpu_overlap(self) -> bool:
        """Device can possibly copy memory and execute a kernel concurrently. Deprecated. Use instead CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT."""
    @property
    def multiprocessor_count(self) -> int:
        """Number of multiprocessors on device."""
    @property
    def kernel_exec_timeout(self) -> bool:
        """Specifies whether there is a run time limit on kernels."""
    @property
    def integrated(self) -> bool:
        """Device is integrated with host memory."""
    @property
    def can_map_host_memory(self) -> bool:
        """Device can map host memory into CUDA address space."""
    @property
    def compute_mode(self) -> int:
        """Compute mode (See `CUcomputemode` for details)."""
    @property
    def concurrent_kernels(self) -> bool:
        """Device can possibly execute multiple kernels concurrently."""
    @property
    def ecc_enabled(self) -> bool:
        """Device has ECC support enabled."""
    @property
    def pci_bus_id(self) -> int:
        """PCI bus ID of the device."""
    @property
    def pci_device_id(self) -> int:
        """PCI device ID of the device."""
    @property
    def pci_domain_id(self) -> int:
        """PCI domain ID of the device."""
    @property
    def tcc_driver(self) -> bool:
        """Device is using TCC driver model."""
    @property
    def memory_clock_rate(self) -> int:
        """Peak memory clock frequency in kilohertz."""
    @property
    def global_memory_bus_width(self) -> int:
        """Global memory bus width in bits."""
    @property
    def l2_cache_size(self) -> int:
        """Size of L2 cache in bytes."""
    @property
    def max_threads_per_multiprocessor(self) -> int:
        """Maximum resident threads per multiprocessor."""
    @property
    def unified_addressing(self) -> bool:
        """Device shares a unified address space with the host."""
    @property
    def compute_capability_major(self) -> int:
        """Major compute capability version number."""
    @property
    def compute_capability_minor(self) -> int:
        """Minor compute capability version number."""
    @property
    def global_l1_cache_supported(self) -> bool:
        """Device supports caching globals in L1."""
    @property
    def local_l1_cache_supported(self) -> bool:
        """Device supports caching locals in L1."""
    @property
    def max_shared_memory_per_multiprocessor(self) -> int:
        """Maximum shared memory available per multiprocessor in bytes."""
    @property
    def max_registers_per_multiprocessor(self) -> int:
        """Maximum number of 32-bit registers available per multiprocessor."""
    @property
    def managed_memory(self) -> bool:
        """Device can allocate managed memory on this system."""
    @property
    def multi_gpu_board(self) -> bool:
        """Device is on a multi-GPU board."""
    @property
    def multi_gpu_board_group_id(self) -> int:
        """Unique id for a group of devices on the same multi-GPU board."""
    @property
    def host_native_atomic_supported(self) -> bool:
        """Link between the device and the host supports all native atomic operations."""
    @property
    def single_to_double_precision_perf_ratio(self) -> int:
        """Ratio of single precision performance (in floating-point operations per second) to double precision performance."""
    @property
    def pageable_memory_access(self) -> bool:
        """Device supports coherently accessing pageable memory without calling cudaHostRegister on it."""
    @property
    def concurrent_managed_access(self) -> bool:
        """Device can coherently access managed memory concurrently with the CPU."""
    @property
    def compute_preemption_supported(self) -> bool:
        """Device supports compute preemption."""
    @property
    def can_use_host_pointer_for_registered_mem(self) -> bool:
        """Device can access host registered memory at the same virtual address as the CPU."""
    @property
    def cooperative_launch(self) -> bool:
        """Device supports launching cooperative kernels via `cuLaunchCooperativeKernel`."""
    @property
    def max_shared_memory_per_block_optin(self) -> int:
        """Maximum optin shared memory per block. That is shared memory that is available for dynamic allocation or static allocation (including architecture specific static shared memory) on this device but is not guaranteed to be portable."""
    @property
    def pageable_memory_access_uses_host_page_tables(self) -> bool:
        """Device accesses pageable memory via the host's page tables."""
    @property
    def direct_managed_mem_access_from_host(self) -> bool:
        """The host can directly access managed memory on the device without migration."""
    @property
    def virtual_memory_management_supported(self) -> bool:
        """Device supports virtual memory management APIs like `cuMemAddressReserve`, `cuMemCreate`, `cuMemMap` and related APIs."""
    @property
    def handle_type_posix_file_descriptor_supported(self) -> bool:
        """Device supports exporting memory to a posix file descriptor with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`."""
    @property
    def handle_type_win32_handle_supported(self) -> bool:
        """Device supports exporting memory to a Win32 NT handle with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`."""
    @property
    def handle_type_win32_kmt_handle_supported(self) -> bool:
        """Device supports exporting memory to a Win32 KMT handle with `cuMemExportToShareableHandle`, if requested via `cuMemCreate`."""
    @property
    def max_blocks_per_multiprocessor(self) -> int:
        """Maximum number of blocks per multiprocessor."""
    @property
    def generic_compression_supported(self) -> bool:
        """Device supports compression of memory."""
    @property
    def max_persisting_l2_cache_size(self) -> int:
        """Maximum L2 persisting lines capacity setting in bytes."""
    @property
    def max_access_policy_window_size(self) -> int:
        """Maximum value of CUaccessPolicyWindow::num_bytes."""
    @property
    def gpu_direct_rdma_with_cuda_vmm_supported(self) -> bool:
        """Device supports specifying the GPUDirect RDMA flag with `cuMemCreate`."""
    @property
    def reserved_shared_memory_per_block(self) -> int:
        """Shared memory reserved by CUDA driver per block in bytes."""
    @property
    def sparse_cuda_array_supported(self) -> bool:
        """Device supports sparse CUDA arrays and sparse CUDA mipmapped arrays."""
    @property
    def read_only_host_register_supported(self) -> bool:
        """Device supports using the `cuMemHostRegister` flag `CU_MEMHOSTERGISTER_READ_ONLY` to register memory that must be mapped as read-only to the GPU."""
    @property
    def memory_pools_supported(self) -> bool:
        """Device supports using the `cuMemAllocAsync` and `cuMemPool` family of APIs."""
    @property
    def gpu_direct_rdma_supported(self) -> bool:
        """Device supports GPUDirect RDMA APIs, like nvidia_p2p_get_pages (see <https://docs.nvidia.com/cuda/gpudirect-rdma> for more information)."""
    @property
    def gpu_direct_rdma_flush_writes_options(self) -> int:
        """The returned attribute shall be interpreted as a bitmask, where the individual bits are described by the `CUflushGPUDirectRDMAWritesOptions` enum."""
    @property
    def gpu_direct_rdma_writes_ordering(self) -> int:
        """GPUDirect RDMA writes to the device do not need to be flushed for consumers within the scope indicated by the returned attribute. See `CUGPUDirectRDMAWritesOrdering` for the numerical values returned here."""
    @property
    def mempool_supported_handle_types(self) -> int:
        """Handle types supported with mempool based IPC."""
    @property
    def deferred_mapping_cuda_array_supported(self) -> bool:
        """Device supports deferred mapping CUDA arrays and CUDA mipmapped arrays."""
    @property
    def numa_config(self) -> int:
        """NUMA configuration of a device: value is of type `CUdeviceNumaConfig` enum."""
    @property
    def numa_id(self) -> int:
        """NUMA node ID of the GPU memory."""
    @property
    def multicast_supported(self) -> bool:
        """Device supports switch multicast and reduction operations."""
    @property
    def surface_alignment(self) -> int:
        """Alignment requirement for surfaces."""
    @property
    def async_engine_count(self) -> int:
        """Number of asynchronous engines."""
    @property
    def can_tex2d_gather(self) -> bool:
        """Deprecated, do not use."""
    @property
    def maximum_texture2d_gather_width(self) -> int:
        """Maximum 2D texture width if CUDA_ARRAY3D_TEXTURE_GATHER is set."""
    @property
    def maximum_texture2d_gather_height(self) -> int:
        """Maximum 2D texture height if CUDA_ARRAY3D_TEXTURE_GATHER is set."""
    @property
    def stream_priorities_supported(self) -> bool:
        """Device supports stream priorities."""
    @property
    def can_flush_remote_writes(self) -> bool:
        """The `CU_STREAM_WAIT_VALUE_FLUSH` flag and the `CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES` MemOp are supported on the device. See CUDA_MEMOP for additional details."""
    @property
    def host_register_supported(self) -> bool:
        """Device supports host memory registration via `cudaHostRegister`."""
    @property
    def timeline_semaphore_interop_supported(self) -> bool:
        """External timeline semaphore interop is supported on the device."""
    @property
    def cluster_launch(self) -> bool:
        """Indicates device supports cluster launch."""
    @property
    def can_use_64_bit_stream_mem_ops(self) -> bool:
        """64-bit operations are supported in `cuStreamBatchMemOp` and related MemOp APIs."""
    @property
    def can_use_stream_wait_value_nor(self) -> bool:
        """`CU_STREAM_WAIT_VALUE_NOR` is supported by MemOp APIs."""
    @property
    def dma_buf_supported(self) -> bool:
        """Device supports buffer sharing with dma_buf mechanism."""
    @property
    def ipc_event_supported(self) -> bool:
        """Device supports IPC Events."""
    @property
    def mem_sync_domain_count(self) -> int:
        """Number of memory domains the device supports."""
    @property
    def tensor_map_access_supported(self) -> bool:
        """Device supports accessing memory using Tensor Map."""
    @property
    def handle_type_fabric_supported(self) -> bool:
        """Device supports exporting memory to a fabric handle with cuMemExportToShareableHandle() or requested with cuMemCreate()."""
    @property
    def unified_function_pointers(self) -> bool:
        """Device supports unified function pointers."""
    @property
    def mps_enabled(self) -> bool:
        """Indicates if contexts created on this device will be shared via MPS."""
    @property
    def host_numa_id(self) -> int:
        """NUMA ID of the host node closest to the device. Returns -1 when system does not support NUMA."""
    @property
    def d3d12_cig_supported(self) -> bool:
        """Device supports CIG with D3D12."""
    @property
    def mem_decompress_algorithm_mask(self) -> int:
        """The returned valued shall be interpreted as a bitmask, where the individual bits are described by the `CUmemDecompressAlgorithm` enum."""
    @property
    def mem_decompress_maximum_length(self) -> int:
        """The returned valued is the maximum length in bytes of a single decompress operation that is allowed."""
    @property
    def vulkan_cig_supported(self) -> bool:
        """Device supports CIG with Vulkan."""
    @property
    def gpu_pci_device_id(self) -> int:
        """The combined 16-bit PCI device ID and 16-bit PCI vendor ID."""
    @property
    def gpu_pci_subsystem_id(self) -> int:
        """The combined 16-bit PCI subsystem ID and 16-bit PCI subsystem vendor ID."""
    @property
    def host_numa_virtual_memory_management_supported(self) -> bool:
        """Device supports HOST_NUMA location with the virtual memory management APIs like `cuMemCreate`, `cuMemMap` and related APIs."""
    @property
    def host_numa_memory_pools_supported(self) -> bool:
        """Device supports HOST_NUMA location with the `cuMemAllocAsync` and `cuMemPool` family of APIs."""
    @property
    def host_numa_multinode_ipc_supported(self) -> bool:
        """Device supports HOST_NUMA location IPC between nodes in a multi-node system."""
    @property
    def host_memory_pools_supported(self) -> bool:
        """Device suports HOST location with the `cuMemAllocAsync` and `cuMemPool` family of APIs."""
    @property
    def host_virtual_memory_management_supported(self) -> bool:
        """Device supports HOST location with the virtual memory management APIs like `cuMemCreate`, `cuMemMap` and related APIs."""
    @property
    def host_alloc_dma_buf_supported(self) -> bool:
        """Device supports page-locked host memory buffer sharing with dma_buf mechanism."""
    @property
    def only_partial_host_native_atomic_supported(self) -> bool:
        """Link between the device and the host supports only some native atomic operations."""
# ---- compiling and launching -------------------------------------------------------------------

class ProgramOptions:
    """Compiler options for ``Program``: cuda.core's field names, each None by default
    (``name``: ``"default_program"``; ``arch``: ``"sm_90"``-style, None for the current device's).

    Checked when made (``TypeError``/``ValueError``); immutable. ``fdevice_syntax_only`` raises
    ``NotImplementedError``; ``extra_sources`` and ``use_libdevice`` are for NVVM programs.
    """

    name: str
    arch: Optional[str]
    relocatable_device_code: Optional[bool]
    extensible_whole_program: Optional[bool]
    debug: Optional[bool]
    lineinfo: Optional[bool]
    device_code_optimize: Optional[bool]
    ptxas_options: Union[str, List[str], Tuple[str, ...], None]
    max_register_count: Optional[int]
    ftz: Optional[bool]
    prec_sqrt: Optional[bool]
    prec_div: Optional[bool]
    fma: Optional[bool]
    use_fast_math: Optional[bool]
    extra_device_vectorization: Optional[bool]
    link_time_optimization: Optional[bool]
    gen_opt_lto: Optional[bool]
    define_macro: Any
    undefine_macro: Union[str, List[str], Tuple[str, ...], None]
    include_path: Union[str, List[str], Tuple[str, ...], None]
    use_bundled_headers: Optional[bool]
    pre_include: Union[str, List[str], Tuple[str, ...], None]
    no_source_include: Optional[bool]
    std: Optional[str]
    builtin_move_forward: Optional[bool]
    builtin_initializer_list: Optional[bool]
    disable_warnings: Optional[bool]
    restrict: Optional[bool]
    device_as_default_execution_space: Optional[bool]
    device_int128: Optional[bool]
    optimization_info: Optional[str]
    no_display_error_number: Optional[bool]
    diag_error: Union[int, List[int], Tuple[int, ...], None]
    diag_suppress: Union[int, List[int], Tuple[int, ...], None]
    diag_warn: Union[int, List[int], Tuple[int, ...], None]
    brief_diagnostics: Optional[bool]
    time: Optional[str]
    split_compile: Optional[int]
    fdevice_syntax_only: Optional[bool]
    minimal: Optional[bool]
    no_cache: Optional[bool]
    fdevice_time_trace: Optional[str]
    device_float128: Optional[bool]
    frandom_seed: Optional[str]
    ofast_compile: Optional[str]
    pch: Optional[bool]
    create_pch: Optional[str]
    use_pch: Optional[str]
    pch_dir: Optional[str]
    pch_verbose: Optional[bool]
    pch_messages: Optional[bool]
    instantiate_templates_in_pch: Optional[bool]
    extra_sources: Optional[Sequence[Tuple[str, Union[str, bytes, bytearray]]]]
    use_libdevice: Optional[bool]
    numba_debug: Optional[bool]
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...

class ParamInfo(NamedTuple):
    """A kernel parameter: its offset and size in bytes."""

    offset: int
    size: int

class MaxPotential(NamedTuple):
    """``KernelOccupancy.max_potential_block_size``'s answer."""

    min_grid_size: int
    max_block_size: int

class Program:
    """A program to compile: ``code_type`` ``"c++"`` (NVRTC), ``"ptx"`` (the linker) or
    ``"nvvm"`` (libNVVM). ``close()`` releases it; a closed one raises ``RuntimeError``."""

    def __init__(
        self,
        code: Union[str, bytes, bytearray],
        code_type: str,
        options: Union[ProgramOptions, Dict[str, Any], None] = None,
    ) -> None: ...
    def compile(
        self,
        target_type: str,
        name_expressions: Union[List[str], Tuple[str, ...], None] = (),
        logs: Any = None,
    ) -> "ObjectCode":
        """Compiles to ``"ptx"``, ``"cubin"`` or ``"ltoir"`` without the GIL; a failed compile
        raises ``CUDAError`` with the compiler's log; ``logs.write`` gets the log of a good one."""
    @property
    def backend(self) -> str:
        """``"NVRTC"``, ``"NVVM"``, or for PTX ``"nvJitLink"`` / ``"driver"``."""
    @property
    def closed(self) -> bool:
        """Whether the program is closed."""
    def close(self) -> None:
        """Releases the program; closing twice is harmless."""

class ObjectCode:
    """Code to load: from ``Program.compile`` or the ``from_*`` constructors (bytes, a path, or
    another ``ObjectCode``). Loaded on the first ``get_kernel``."""

    @staticmethod
    def from_cubin(
        module: Union[bytes, bytearray, str, "ObjectCode"],
        *,
        name: Optional[str] = None,
        symbol_mapping: Optional[Dict[str, str]] = None,
    ) -> "ObjectCode": ...
    @staticmethod
    def from_ptx(
        module: Union[bytes, bytearray, str, "ObjectCode"],
        *,
        name: Optional[str] = None,
        symbol_mapping: Optional[Dict[str, str]] = None,
    ) -> "ObjectCode": ...
    @staticmethod
    def from_fatbin(
        module: Union[bytes, bytearray, str, "ObjectCode"],
        *,
        name: Optional[str] = None,
        symbol_mapping: Optional[Dict[str, str]] = None,
    ) -> "ObjectCode": ...
    @staticmethod
    def from_ltoir(
        module: Union[bytes, bytearray, str, "ObjectCode"],
        *,
        name: Optional[str] = None,
        symbol_mapping: Optional[Dict[str, str]] = None,
    ) -> "ObjectCode": ...
    @staticmethod
    def from_library(
        module: Union[bytes, bytearray, str, "ObjectCode"],
        *,
        name: Optional[str] = None,
        symbol_mapping: Optional[Dict[str, str]] = None,
    ) -> "ObjectCode": ...
    def get_kernel(self, name: Union[str, bytes]) -> "Kernel":
        """The kernel of this symbol, name expression or ``symbol_mapping`` key; a missing one
        raises (``ValueError`` or ``CUDAError``)."""
    @property
    def code(self) -> Union[bytes, str]:
        """The code's bytes, or the path it was read from."""
    @property
    def code_type(self) -> str:
        """``"cubin"``, ``"ptx"``, ``"fatbin"``, ``"ltoir"`` or ``"library"``."""
    @property
    def name(self) -> str:
        """The program's name, or the one given (default "")."""
    @property
    def symbol_mapping(self) -> Dict[str, str]:
        """Name expressions (or given names) and their symbols."""

class KernelAttributes:
    """A kernel's attributes; each method takes an optional ``device_id`` (None: current)."""

    def max_threads_per_block(self, device_id: Union[Device, int, None] = None) -> int: ...
    def shared_size_bytes(self, device_id: Union[Device, int, None] = None) -> int: ...
    def const_size_bytes(self, device_id: Union[Device, int, None] = None) -> int: ...
    def local_size_bytes(self, device_id: Union[Device, int, None] = None) -> int: ...
    def num_regs(self, device_id: Union[Device, int, None] = None) -> int: ...
    def ptx_version(self, device_id: Union[Device, int, None] = None) -> int: ...
    def binary_version(self, device_id: Union[Device, int, None] = None) -> int: ...
    def cache_mode_ca(self, device_id: Union[Device, int, None] = None) -> bool: ...
    def max_dynamic_shared_size_bytes(self, device_id: Union[Device, int, None] = None) -> int: ...
    def preferred_shared_memory_carveout(self, device_id: Union[Device, int, None] = None) -> int: ...
    def cluster_size_must_be_set(self, device_id: Union[Device, int, None] = None) -> bool: ...
    def required_cluster_width(self, device_id: Union[Device, int, None] = None) -> int: ...
    def required_cluster_height(self, device_id: Union[Device, int, None] = None) -> int: ...
    def required_cluster_depth(self, device_id: Union[Device, int, None] = None) -> int: ...
    def non_portable_cluster_size_allowed(
        self, device_id: Union[Device, int, None] = None
    ) -> bool: ...
    def cluster_scheduling_policy_preference(
        self, device_id: Union[Device, int, None] = None
    ) -> int: ...

class KernelOccupancy:
    """Occupancy queries of a kernel on the current device (cluster queries: the stream's)."""

    def max_active_blocks_per_multiprocessor(
        self, block_size: int, dynamic_shared_memory_size: int
    ) -> int: ...
    def max_potential_block_size(
        self, dynamic_shared_memory_needed: int, block_size_limit: int
    ) -> MaxPotential: ...
    def available_dynamic_shared_memory_per_block(
        self, num_blocks_per_multiprocessor: int, block_size: int
    ) -> int: ...
    def max_potential_cluster_size(
        self, config: "LaunchConfig", stream: Optional[Stream] = None
    ) -> int: ...
    def max_active_clusters(self, config: "LaunchConfig", stream: Optional[Stream] = None) -> int: ...

class Kernel:
    """A kernel of an ``ObjectCode`` (``get_kernel``), launched with ``launch``."""

    @property
    def attributes(self) -> KernelAttributes:
        """The kernel's attributes (the same object each time)."""
    @property
    def occupancy(self) -> KernelOccupancy:
        """The occupancy queries (the same object each time)."""
    @property
    def num_arguments(self) -> int:
        """The number of parameters (driver 12.4+, else ``NotImplementedError``)."""
    @property
    def arguments_info(self) -> List[ParamInfo]:
        """Each parameter's ``ParamInfo(offset, size)`` (driver 12.4+)."""
    @property
    def handle(self) -> int:
        """The raw ``CUkernel`` as an int."""

_Dims = Union[int, Tuple[int], Tuple[int, int], Tuple[int, int, int]]

class LaunchConfig:
    """A launch's shape: ``grid`` (clusters where ``cluster`` is set, else blocks), ``block``,
    optional ``cluster``, ``shmem_size`` bytes of dynamic shared memory, cooperative or not.
    Bad values raise ``TypeError``/``ValueError`` here. Immutable."""

    def __init__(
        self,
        grid: Optional[_Dims] = None,
        cluster: Optional[_Dims] = None,
        block: Optional[_Dims] = None,
        shmem_size: Optional[int] = None,
        cooperative_launch: Optional[bool] = None,
        *,
        is_cooperative: Optional[bool] = None,
    ) -> None: ...
    @property
    def grid(self) -> Tuple[int, int, int]: ...
    @property
    def block(self) -> Tuple[int, int, int]: ...
    @property
    def cluster(self) -> Optional[Tuple[int, int, int]]: ...
    @property
    def shmem_size(self) -> int: ...
    @property
    def cooperative_launch(self) -> bool: ...
    @property
    def is_cooperative(self) -> bool: ...

def launch(stream: Stream, config: LaunchConfig, kernel: Kernel, *args: Any) -> None:
    """Launches ``kernel`` on ``stream``; each argument converted for the kernel's parameter of
    its position (a Buffer: its address; an int: the parameter's width; a float: float or double;
    a buffer-protocol object: its bytes). A wrong count or size raises ``TypeError`` before any
    driver call. Raw int addresses are as unsafe as in cuda.core: a faulting kernel raises
    ``CUDAError``."""
