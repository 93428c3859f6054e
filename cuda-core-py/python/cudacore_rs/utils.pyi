"""Utilities, as ``cuda.core.utils``: the program caches."""

import os
from types import TracebackType
from typing import Iterable, Mapping, Optional, Tuple, Type, TypeVar, Union, overload

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
