"""Utilities, as ``cuda.core.utils``: the program caches, and ``StridedMemoryView`` with
``args_viewable_as_strided_memory`` (views of other libraries' arrays through DLPack or the
CUDA Array Interface).

``InMemoryProgramCache`` and ``FileStreamProgramCache`` map keys (``str`` or ``bytes``; a
``str`` is its UTF-8 bytes) to compiled programs' raw bytes: store an ``ObjectCode`` or bytes
under a key, read ``bytes`` back (``cache.get(key)`` or ``cache[key]``) and load them with
``ObjectCode.from_cubin``. Both are thread-safe; the file cache is shared by processes and kept
across runs.
"""

from ._memoryview import StridedMemoryView, args_viewable_as_strided_memory
from ._native import FileStreamProgramCache, InMemoryProgramCache

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "StridedMemoryView",
    "args_viewable_as_strided_memory",
]
