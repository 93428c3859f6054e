"""``args_viewable_as_strided_memory`` and its proxy, as ``cuda.core.utils`` has them, on top
of the native ``StridedMemoryView`` (re-exported by ``cudacore_rs.utils``)."""

import functools

from ._native import StridedMemoryView

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]


class _StridedMemoryViewProxy:
    """What a decorated function receives for each chosen argument: the argument (``obj``)
    and whether it is read through DLPack (``has_dlpack``; else the CUDA Array Interface).
    ``view(stream_ptr)`` makes the ``StridedMemoryView``. An argument with neither protocol
    raises ``TypeError`` when the function is called."""

    __slots__ = ("obj", "has_dlpack")

    def __init__(self, obj):
        self.obj = obj
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            self.has_dlpack = True
        elif hasattr(obj, "__cuda_array_interface__"):
            self.has_dlpack = False
        else:
            raise TypeError(
                f"a {type(obj).__name__} supports no data exchange protocol StridedMemoryView "
                "reads (__dlpack__ with __dlpack_device__, or __cuda_array_interface__)"
            )

    def view(self, stream_ptr=None):
        """A ``StridedMemoryView`` of the argument; ``stream_ptr`` is the consumer stream (see
        ``StridedMemoryView``)."""
        if self.has_dlpack:
            return StridedMemoryView.from_dlpack(self.obj, stream_ptr)
        return StridedMemoryView.from_cuda_array_interface(self.obj, stream_ptr)

    def __repr__(self):
        return f"_StridedMemoryViewProxy(obj={self.obj!r}, has_dlpack={self.has_dlpack})"


def args_viewable_as_strided_memory(arg_indices):
    """A decorator: the positional arguments at ``arg_indices`` (a tuple of ints) reach the
    function as proxies whose ``view(stream_ptr)`` gives a ``StridedMemoryView``, whatever
    library made them (DLPack or the CUDA Array Interface), so the function's body needs no
    array library::

        @args_viewable_as_strided_memory((1,))
        def my_func(arg0, arg1, arg2, stream):
            view = arg1.view(stream.handle)
            ...
    """
    if not isinstance(arg_indices, tuple):
        raise TypeError(f"arg_indices must be a tuple of ints, not {type(arg_indices).__name__}")
    for idx in arg_indices:
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise TypeError(f"arg_indices must be a tuple of ints, got {idx!r}")

    def wrapped_func_with_indices(func):
        @functools.wraps(func)
        def wrapped_func(*args, **kwargs):
            args = list(args)
            for idx in arg_indices:
                args[idx] = _StridedMemoryViewProxy(args[idx])
            return func(*args, **kwargs)

        return wrapped_func

    return wrapped_func_with_indices
