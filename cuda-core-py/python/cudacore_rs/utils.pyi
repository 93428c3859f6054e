"""Utilities, as ``cuda.core.utils``: the program caches, ``StridedMemoryView`` and
``args_viewable_as_strided_memory``."""

import os
from types import TracebackType
from typing import (
    Any,
    Callable,
    Iterable,
    Mapping,
    Optional,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

from . import ObjectCode

_Key = Union[str, bytes, bytearray]
_Value = Union[bytes, bytearray, memoryview, ObjectCode]
_T = TypeVar("_T")

class InMemoryProgramCache:
    """A program cache in this process's memory, LRU-bounded by ``max_size_bytes`` (None: no
    bound); a value larger than the bound is not kept. Thread-safe."""

    def __init__(self, *, max_size_bytes: Optional[int] = None) -> None: ...
    def __getitem__(self, key: _Key) -> bytes:
        """The bytes under ``key``; ``KeyError`` where there are none."""
    @overload
    def get(self, key: _Key) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Key, default: _T) -> Union[bytes, _T]: ...
    def __setitem__(self, key: _Key, value: _Value) -> None:
        """Stores ``value`` (bytes-like, or an ObjectCode's code) under ``key``."""
    def __delitem__(self, key: _Key) -> None:
        """Drops the entry of ``key``; ``KeyError`` where there is none."""
    def __contains__(self, key: _Key) -> bool:
        """Whether ``key`` has an entry (prefer ``get``)."""
    def __len__(self) -> int:
        """The number of entries."""
    def clear(self) -> None:
        """Drops every entry."""
    def update(self, items: Union[Mapping[_Key, _Value], Iterable[Tuple[_Key, _Value]]]) -> None:
        """Stores each ``(key, value)``."""
    def close(self) -> None:
        """Nothing to release."""
    @property
    def max_size_bytes(self) -> Optional[int]:
        """The bound given, or None."""
    @property
    def size_bytes(self) -> int:
        """The sum of the stored values' sizes."""
    def __enter__(self) -> "InMemoryProgramCache": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class FileStreamProgramCache:
    """A program cache in a directory (one file per entry), shared by processes and kept across
    runs; ``path`` None is cuda-core's default directory (``~/.cache/cuda-core/programs``)."""

    def __init__(
        self, path: Union[str, "os.PathLike[str]", None] = None, *, max_size_bytes: Optional[int] = None
    ) -> None: ...
    def __getitem__(self, key: _Key) -> bytes:
        """The bytes under ``key``; ``KeyError`` where there are none."""
    @overload
    def get(self, key: _Key) -> Optional[bytes]: ...
    @overload
    def get(self, key: _Key, default: _T) -> Union[bytes, _T]: ...
    def __setitem__(self, key: _Key, value: _Value) -> None:
        """Stores ``value`` (bytes-like, or an ObjectCode's code) under ``key``."""
    def __delitem__(self, key: _Key) -> None:
        """Drops the entry of ``key``; ``KeyError`` where there is none."""
    def __contains__(self, key: _Key) -> bool:
        """Whether ``key`` has an entry (prefer ``get``)."""
    def __len__(self) -> int:
        """The number of entry files in the directory now."""
    def clear(self) -> None:
        """Drops every entry."""
    def update(self, items: Union[Mapping[_Key, _Value], Iterable[Tuple[_Key, _Value]]]) -> None:
        """Stores each ``(key, value)``."""
    def close(self) -> None:
        """Nothing to release."""
    @property
    def path(self) -> str:
        """The cache's directory."""
    @property
    def max_size_bytes(self) -> Optional[int]:
        """The bound given, or None."""
    def __enter__(self) -> "FileStreamProgramCache": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class StridedMemoryView:
    """A view of a strided array another library produced (its address, shape, strides,
    dtype, device), read through DLPack (preferred) or the CUDA Array Interface (v3), or
    NumPy's array interface with ``from_array_interface``; no data is copied. The view holds
    the producer and the DLPack tensor it took, released (the tensor's deleter called once)
    when the view is collected.

    ``stream_ptr`` is the consumer stream's handle: passed to ``__dlpack__`` (``-1`` opts out;
    ``None`` is refused for host and device tensors); for the CUDA Array Interface, the
    consumer stream waits for the producer's stream where they differ (``-1`` opts out,
    ``None`` is refused). Stream handles are raw ``CUstream`` values, trusted as
    ``Stream.from_handle`` trusts them. No protocol: ``TypeError``."""

    def __init__(self, obj: Any = None, stream_ptr: Optional[int] = None) -> None: ...
    @classmethod
    def from_dlpack(cls, obj: Any, stream_ptr: Optional[int] = None) -> "StridedMemoryView":
        """A view through DLPack (``__dlpack__`` and ``__dlpack_device__``)."""
    @classmethod
    def from_cuda_array_interface(
        cls, obj: Any, stream_ptr: Optional[int] = None
    ) -> "StridedMemoryView":
        """A view through the CUDA Array Interface (v3)."""
    @classmethod
    def from_array_interface(cls, obj: Any) -> "StridedMemoryView":
        """A view of host memory through NumPy's ``__array_interface__`` (v3)."""
    @classmethod
    def from_any_interface(cls, obj: Any, stream_ptr: Optional[int] = None) -> "StridedMemoryView":
        """DLPack where ``obj`` has it, else the CUDA Array Interface."""
    @property
    def ptr(self) -> int:
        """The address of the first element."""
    @property
    def shape(self) -> Tuple[int, ...]:
        """The extents."""
    @property
    def strides(self) -> Optional[Tuple[int, ...]]:
        """The strides in elements; None where the producer gave none (C-contiguous)."""
    @property
    def size(self) -> int:
        """The number of elements."""
    @property
    def dtype(self) -> Any:
        """A ``numpy.dtype`` (its name without NumPy); None for an empty view."""
    @property
    def device_id(self) -> int:
        """The device of the memory; -1 for host memory."""
    @property
    def is_device_accessible(self) -> bool:
        """Whether the GPU can read the memory."""
    @property
    def readonly(self) -> bool:
        """Whether the producer marked the data read-only."""
    @property
    def exporting_obj(self) -> Any:
        """The producer, held as long as the view."""

class _StridedMemoryViewProxy:
    """A decorated function's argument: ``view(stream_ptr)`` gives its ``StridedMemoryView``."""

    obj: Any
    has_dlpack: bool
    def __init__(self, obj: Any) -> None: ...
    def view(self, stream_ptr: Optional[int] = None) -> StridedMemoryView:
        """The argument's view (see ``StridedMemoryView`` for ``stream_ptr``)."""

_F = TypeVar("_F", bound=Callable[..., Any])

def args_viewable_as_strided_memory(arg_indices: Tuple[int, ...]) -> Callable[[_F], _F]:
    """A decorator: the positional arguments at ``arg_indices`` reach the function as proxies
    whose ``view(stream_ptr)`` gives a ``StridedMemoryView``."""
