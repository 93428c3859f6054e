//! `DeviceMemoryResource` and `Buffer`.

use std::sync::Arc;

use crate::device::*;
use crate::errors::*;
use crate::stream::*;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// The stream an argument names: a `Stream` (open), for `what` in the error.
pub(crate) fn stream_arg(stream: &Bound<'_, PyAny>, what: &str) -> PyResult<cuda_core::Stream> {
    match stream.downcast::<PyStream>() {
        Ok(stream) => stream.get().get(),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} takes stream= a Stream, not {}",
            stream.get_type().name()?
        ))),
    }
}

/// A device's memory resource, as cuda.core's `DeviceMemoryResource`: `Device.memory_resource`
/// or `DeviceMemoryResource(device_id)` is the device's default memory pool (synchronous
/// allocation where the device has no pools). `allocate(size, stream=None)` returns a `Buffer`
/// allocated in stream order. Making a pool of one's own (`options=`) is not supported yet.
#[pyclass(name = "DeviceMemoryResource", module = "cudacore_rs", frozen)]
pub(crate) struct PyDeviceMemoryResource {
    pub(crate) resource: Arc<dyn cuda_core::MemoryResource>,
    pub(crate) device: cuda_core::Device,
}

#[pymethods]
impl PyDeviceMemoryResource {
    #[new]
    #[pyo3(signature = (device_id, options = None))]
    pub(crate) fn new(
        py: Python<'_>,
        device_id: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyDeviceMemoryResource>> {
        if options.is_some_and(|o| !o.is_none()) {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "DeviceMemoryResource(device_id, options) is not supported yet: only the \
                 device's default pool (options=None)",
            ));
        }
        let device = match device_id.downcast::<PyDevice>() {
            Ok(device) => device.clone().unbind(),
            Err(_) => PyDevice::new(py, Some(device_id.extract::<i64>()?))?,
        };
        device.get().memory_resource(py)
    }

    /// Allocates `size` bytes (an int above 0) in order on `stream` (the device's default
    /// stream when None), which the buffer is also freed on unless `close()` names another.
    #[pyo3(signature = (size, stream = None))]
    pub(crate) fn allocate(
        slf: &Bound<'_, Self>,
        size: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBuffer> {
        let py = slf.py();
        let this = slf.get();
        let size = match usize::try_from(size) {
            Ok(size) if size > 0 => size,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "allocate() takes a size in bytes above 0, got {size}"
                )))
            }
        };
        let stream = match stream.filter(|s| !s.is_none()) {
            Some(stream) => stream_arg(stream, "allocate()")?,
            None => this.device.default_stream().or_py(py)?,
        };
        let buffer = cuda_core::Allocate::allocate(&this.resource, size, &stream).or_py(py)?;
        Ok(PyBuffer::wrap(buffer, slf.clone().unbind()))
    }

    /// The ordinal of the resource's device.
    #[getter]
    pub(crate) fn device_id(&self) -> usize {
        self.device.ordinal()
    }

    /// Whether the memory is accessible from the device (True).
    #[getter]
    pub(crate) fn is_device_accessible(&self) -> bool {
        self.resource.is_device_accessible()
    }

    /// Whether the memory is accessible from the host (False for device memory).
    #[getter]
    pub(crate) fn is_host_accessible(&self) -> bool {
        self.resource.is_host_accessible()
    }

    pub(crate) fn __repr__(&self) -> String {
        format!("<DeviceMemoryResource of device {}>", self.device.ordinal())
    }
}

/// Memory allocated from a memory resource, as cuda.core's `Buffer`: made by
/// `DeviceMemoryResource.allocate()` or `Buffer.copy_to()`.
///
/// Copies and fills are queued on the stream given (stream-ordered); the calling thread does not
/// wait. The memory is freed, in stream order, by `close()` or when the object is collected.
/// `close()` may be called more than once; any other use of a closed buffer raises
/// `RuntimeError`.
#[pyclass(name = "Buffer", module = "cudacore_rs", frozen)]
pub(crate) struct PyBuffer {
    pub(crate) buffer: Slot<cuda_core::Buffer>,
    pub(crate) resource: Py<PyDeviceMemoryResource>,
}

impl PyBuffer {
    pub(crate) fn wrap(
        buffer: cuda_core::Buffer,
        resource: Py<PyDeviceMemoryResource>,
    ) -> PyBuffer {
        PyBuffer {
            buffer: Slot::new("Buffer", buffer),
            resource,
        }
    }

    /// Runs `f` on the open buffer; the error for a closed one.
    pub(crate) fn with<T>(
        &self,
        f: impl FnOnce(&mut cuda_core::Buffer) -> PyResult<T>,
    ) -> PyResult<T> {
        match self.buffer.lock().as_mut() {
            Some(buffer) => f(buffer),
            None => Err(self.buffer.closed_error()),
        }
    }
}

/// Copies `src` into `dst` on `stream`, two distinct open buffers, their locks taken in address
/// order.
pub(crate) fn copy_between(
    py: Python<'_>,
    src: &PyBuffer,
    dst: &PyBuffer,
    stream: &cuda_core::Stream,
) -> PyResult<()> {
    if std::ptr::eq(src, dst) {
        return Err(PyValueError::new_err(
            "cannot copy a Buffer onto itself: source and destination are the same buffer",
        ));
    }
    let slot = &src.buffer;
    let src_first = (src as *const PyBuffer) < (dst as *const PyBuffer);
    let (mut first, mut second) = if src_first {
        (src.buffer.lock(), dst.buffer.lock())
    } else {
        (dst.buffer.lock(), src.buffer.lock())
    };
    let (src, dst) = if src_first {
        (first.as_mut(), second.as_mut())
    } else {
        (second.as_mut(), first.as_mut())
    };
    let (Some(src), Some(dst)) = (src, dst) else {
        return Err(slot.closed_error());
    };
    src.copy_to(dst, stream).or_py(py)
}

#[pymethods]
impl PyBuffer {
    #[new]
    pub(crate) fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Buffer objects cannot be made directly: use DeviceMemoryResource.allocate()",
        ))
    }

    /// The device address of the memory, as an int.
    #[getter]
    pub(crate) fn handle(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.ptr().0))
    }

    /// The size in bytes.
    #[getter]
    pub(crate) fn size(&self) -> PyResult<usize> {
        self.with(|b| Ok(b.size()))
    }

    /// The ordinal of the memory's device (None for host memory).
    #[getter]
    pub(crate) fn device_id(&self) -> PyResult<Option<usize>> {
        self.with(|b| Ok(b.device().map(|d| d.ordinal())))
    }

    /// The memory resource the buffer was allocated from.
    #[getter]
    pub(crate) fn memory_resource(&self, py: Python<'_>) -> Py<PyDeviceMemoryResource> {
        self.resource.clone_ref(py)
    }

    /// Whether the memory is accessible from the device.
    #[getter]
    pub(crate) fn is_device_accessible(&self) -> PyResult<bool> {
        self.with(|b| Ok(b.is_device_accessible()))
    }

    /// Whether the memory is accessible from the host.
    #[getter]
    pub(crate) fn is_host_accessible(&self) -> PyResult<bool> {
        self.with(|b| Ok(b.is_host_accessible()))
    }

    /// Frees the memory, in order on `stream` (the stream it was allocated on when None).
    /// Closing twice is harmless.
    #[pyo3(signature = (stream = None))]
    pub(crate) fn close(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let stream = match stream.filter(|s| !s.is_none()) {
            Some(stream) => Some(stream_arg(stream, "close()")?),
            None => None,
        };
        // Taken out under the lock, freed after it: the free calls the driver.
        let taken = self.buffer.take();
        match taken {
            Some(buffer) => buffer.close(stream.as_ref()).or_py(py),
            None => Ok(()),
        }
    }

    /// Whether the buffer is closed.
    #[getter]
    pub(crate) fn closed(&self) -> bool {
        self.buffer.is_closed()
    }

    /// Copies this buffer into `dst` (a Buffer of the same size) in order on `stream`, and
    /// returns `dst`; with `dst=None`, into a new buffer allocated from this one's memory
    /// resource on `stream`.
    #[pyo3(signature = (dst = None, *, stream))]
    pub(crate) fn copy_to(
        slf: &Bound<'_, Self>,
        dst: Option<&Bound<'_, PyAny>>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyBuffer>> {
        let py = slf.py();
        let stream = stream_arg(stream, "copy_to()")?;
        let this = slf.get();
        match dst.filter(|d| !d.is_none()) {
            Some(dst) => {
                let dst = dst.downcast::<PyBuffer>().map_err(|_| {
                    PyTypeError::new_err("copy_to(dst) takes a Buffer (or None for a new one)")
                })?;
                copy_between(py, this, dst.get(), &stream)?;
                Ok(dst.clone().unbind())
            }
            None => {
                let made = this.with(|src| {
                    let mut made =
                        cuda_core::Allocate::allocate(src.memory_resource(), src.size(), &stream)
                            .or_py(py)?;
                    src.copy_to(&mut made, &stream).or_py(py)?;
                    Ok(made)
                })?;
                Py::new(py, PyBuffer::wrap(made, this.resource.clone_ref(py)))
            }
        }
    }

    /// Copies `src` (a Buffer of the same size) into this buffer, in order on `stream`.
    #[pyo3(signature = (src, *, stream))]
    pub(crate) fn copy_from(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let stream = stream_arg(stream, "copy_from()")?;
        let src = src
            .downcast::<PyBuffer>()
            .map_err(|_| PyTypeError::new_err("copy_from(src) takes a Buffer"))?;
        copy_between(py, src.get(), self, &stream)
    }

    /// Fills the buffer in order on `stream`, as cuda.core does: with an int, every byte (0 to
    /// 255, `cuMemsetD8Async`); with a buffer-protocol object (bytes, bytearray, a NumPy
    /// scalar) of 1, 2 or 4 bytes, that pattern repeated (`cuMemsetD8/D16/D32Async`; the size
    /// must be a multiple of its length).
    #[pyo3(signature = (value, *, stream))]
    pub(crate) fn fill(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let stream = stream_arg(stream, "fill()")?;
        enum Pattern {
            U8(u8),
            U16(u16),
            U32(u32),
        }
        let pattern = if value.is_instance_of::<pyo3::types::PyInt>() {
            match value.extract::<u8>() {
                Ok(byte) => Pattern::U8(byte),
                Err(_) => {
                    return Err(PyValueError::new_err(format!(
                        "fill() takes an int byte value within [0, 255], got {value}"
                    )))
                }
            }
        } else {
            // Anything with the buffer protocol (bytes, bytearray, a NumPy scalar, ...).
            let bytes: Vec<u8> = py
                .get_type::<pyo3::types::PyMemoryView>()
                .call1((value,))
                .map_err(|_| {
                    PyTypeError::new_err(
                        "fill() takes an int or a buffer-protocol object of 1, 2 or 4 bytes",
                    )
                })?
                .call_method0("tobytes")?
                .extract()?;
            match bytes[..] {
                [a] => Pattern::U8(a),
                [a, b] => Pattern::U16(u16::from_ne_bytes([a, b])),
                [a, b, c, d] => Pattern::U32(u32::from_ne_bytes([a, b, c, d])),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "fill() takes a pattern of 1, 2 or 4 bytes, got {}",
                        bytes.len()
                    )))
                }
            }
        };
        self.with(|buffer| {
            match pattern {
                Pattern::U8(v) => buffer.fill(v, &stream),
                Pattern::U16(v) => buffer.fill(v, &stream),
                Pattern::U32(v) => buffer.fill(v, &stream),
            }
            .or_py(py)
        })
    }

    pub(crate) fn __repr__(&self) -> String {
        match &*self.buffer.lock() {
            Some(buffer) => format!(
                "<Buffer handle={:#x} size={} of {}>",
                buffer.ptr().0,
                buffer.size(),
                buffer.device().map_or_else(
                    || "the host".to_owned(),
                    |d| format!("device {}", d.ordinal())
                )
            ),
            None => "<Buffer (closed)>".to_owned(),
        }
    }
}
