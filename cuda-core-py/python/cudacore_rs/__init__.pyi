"""cudacore_rs: NVIDIA cuda.core's Python API (1.2 names and behaviour) on the cuda-core Rust crate."""

from types import TracebackType
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Type, Union

from . import system as system
from . import utils as utils

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

class DeviceMemoryResource:
    """A device's default memory pool (``Device.memory_resource``); allocates ``Buffer`` objects.

    ``DeviceMemoryResource(device_id)`` is the same object as ``Device(device_id).memory_resource``;
    ``options=`` (a pool of one's own) raises ``NotImplementedError``.
    """

    def __new__(
        cls, device_id: Union[int, Device], options: None = None
    ) -> "DeviceMemoryResource": ...
    def allocate(self, size: int, stream: Optional[Stream] = None) -> "Buffer":
        """``size`` bytes (above 0), allocated in order on ``stream`` (None: the default stream)."""
    @property
    def device_id(self) -> int:
        """The ordinal of the resource's device."""
    @property
    def is_device_accessible(self) -> bool:
        """Whether the memory is accessible from the device (True)."""
    @property
    def is_host_accessible(self) -> bool:
        """Whether the memory is accessible from the host (False)."""

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
    def memory_resource(self) -> DeviceMemoryResource:
        """The resource the buffer was allocated from."""
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
    def copy_to(self, dst: Optional["Buffer"] = None, *, stream: Stream) -> "Buffer":
        """Copies into ``dst`` (same size), or a new buffer from the same resource; returns it."""
    def copy_from(self, src: "Buffer", *, stream: Stream) -> None:
        """Copies ``src`` (same size) into this buffer."""
    def fill(self, value: Union[int, bytes, bytearray, memoryview, Any], *, stream: Stream) -> None:
        """Fills with an int byte (0 to 255) or a 1, 2 or 4-byte buffer-protocol pattern."""

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
