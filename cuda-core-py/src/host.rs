//! Host memory of Python objects (NumPy arrays, bytearray, memoryview, bytes, ...) for
//! `Buffer.copy_from` / `Buffer.copy_to`: its address and length, read through Python (abi3
//! before 3.11 has no `PyObject_GetBuffer`), and an object that keeps it alive and exported.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyDict, PyMemoryView, PyTuple};

/// A contiguous range of host memory that a Python object exports.
pub(crate) struct HostMemory {
    /// Its first byte's address.
    pub(crate) addr: usize,
    /// Its length in bytes.
    pub(crate) len: usize,
    /// What keeps the memory allocated (and, for buffer-protocol objects, exported, so that a
    /// `bytearray` cannot be resized) while it is held: the object itself (a NumPy array), a
    /// ctypes object over a memoryview of it, or a `bytes` copy of a read-only exporter.
    pub(crate) keep: PyObject,
}

/// `numpy.ndarray` where NumPy is imported (an object cannot be an array before it is), else
/// None. Not importing NumPy keeps it optional and the check cheap.
fn ndarray_type(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let modules = py.import("sys")?.getattr("modules")?;
    match modules.downcast::<PyDict>()?.get_item("numpy")? {
        Some(numpy) => Ok(Some(numpy.getattr("ndarray")?)),
        None => Ok(None),
    }
}

/// `ctypes.c_char.from_buffer` and `ctypes.addressof`, looked up once.
fn ctypes_functions(py: Python<'_>) -> PyResult<&(PyObject, PyObject)> {
    static FUNCTIONS: GILOnceCell<(PyObject, PyObject)> = GILOnceCell::new();
    FUNCTIONS.get_or_try_init(py, || {
        let ctypes = py.import("ctypes")?;
        Ok::<_, PyErr>((
            ctypes.getattr("c_char")?.getattr("from_buffer")?.unbind(),
            ctypes.getattr("addressof")?.unbind(),
        ))
    })
}

/// The host memory of `obj` for a copy: `writable` for a destination. `what` names the
/// argument in errors. Refused, before any driver call: an object without the buffer protocol
/// (TypeError), one that is not C-contiguous, a read-only destination (ValueError).
///
/// NumPy arrays are read through their own `__array_interface__` (NumPy is the exporter, so
/// its address is trusted as NumPy's own `asarray` trusts it); every other object through
/// `memoryview` (the exporter's buffer protocol): its address through ctypes for a writable
/// one, and for a read-only one other than `bytes` (whose bytes are read in place) through a
/// `bytes` copy.
pub(crate) fn host_memory(
    obj: &Bound<'_, PyAny>,
    writable: bool,
    what: &str,
) -> PyResult<HostMemory> {
    let py = obj.py();
    if let Some(ndarray) = ndarray_type(py)? {
        if obj.is_instance(&ndarray)? {
            return ndarray_memory(obj, writable, what);
        }
    }
    let view = PyMemoryView::from(obj).map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} takes a Buffer or a host object with the buffer protocol (a NumPy array, \
             bytearray, memoryview, ...), not {}",
            obj.get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    if !view.getattr("c_contiguous")?.extract::<bool>()? {
        return Err(PyValueError::new_err(format!(
            "{what} takes contiguous host memory (C order); copy it first (e.g. \
             numpy.ascontiguousarray)"
        )));
    }
    let len: usize = view.getattr("nbytes")?.extract()?;
    let readonly: bool = view.getattr("readonly")?.extract()?;
    if readonly && writable {
        return Err(PyValueError::new_err(format!(
            "{what} is read-only: a copy into host memory needs a writable object"
        )));
    }
    if len == 0 {
        // Nothing to address; the caller refuses the size (a buffer is never empty).
        return Ok(HostMemory {
            addr: 0,
            len,
            keep: view.into_any().unbind(),
        });
    }
    if !readonly {
        let (from_buffer, addressof) = ctypes_functions(py)?;
        // A ctypes char over the memoryview: it holds the view, which holds the export.
        let first = from_buffer.bind(py).call1((&view,))?;
        let addr: usize = addressof.bind(py).call1((&first,))?.extract()?;
        return Ok(HostMemory {
            addr,
            len,
            keep: first.unbind(),
        });
    }
    // Read-only: `bytes` is read in place, anything else copied into one.
    let bytes = match obj.downcast::<PyBytes>() {
        Ok(bytes) => bytes.clone(),
        Err(_) => view
            .call_method0("tobytes")?
            .downcast_into::<PyBytes>()
            .map_err(PyErr::from)?,
    };
    let data = bytes.as_bytes();
    if data.len() != len {
        return Err(PyValueError::new_err(format!(
            "{what} changed size while it was read"
        )));
    }
    Ok(HostMemory {
        addr: data.as_ptr() as usize,
        len,
        keep: bytes.into_any().unbind(),
    })
}

/// A NumPy array's memory, from its `__array_interface__` and flags.
fn ndarray_memory(obj: &Bound<'_, PyAny>, writable: bool, what: &str) -> PyResult<HostMemory> {
    let flags = obj.getattr("flags")?;
    if !flags.getattr("c_contiguous")?.extract::<bool>()? {
        return Err(PyValueError::new_err(format!(
            "{what} takes a C-contiguous array; copy it first (numpy.ascontiguousarray)"
        )));
    }
    if writable && !flags.getattr("writeable")?.extract::<bool>()? {
        return Err(PyValueError::new_err(format!(
            "{what} is a read-only array: a copy into host memory needs a writable one"
        )));
    }
    let len: usize = obj.getattr("nbytes")?.extract()?;
    let interface = obj.getattr("__array_interface__")?;
    let data = interface.get_item("data")?;
    let data = data.downcast::<PyTuple>().map_err(PyErr::from)?;
    let addr: usize = data.get_item(0)?.extract()?;
    Ok(HostMemory {
        addr,
        len,
        keep: obj.clone().unbind(),
    })
}
