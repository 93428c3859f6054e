//! `DeviceMemoryResource` and `Buffer`.

use std::sync::Arc;

use crate::device::*;
use crate::errors::*;
use crate::resources::{PoolRef, PyDeviceMemoryResourceOptions, PyMemPoolAttributes};
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

/// What a memory resource holds until `close()`: the resource buffers are allocated from,
/// and the pool it is (for `attributes` and `handle`), where it is one.
#[derive(Clone)]
pub(crate) struct Held {
    pub(crate) resource: Arc<dyn cuda_core::MemoryResource>,
    pub(crate) pool: Option<PoolRef>,
}

/// A `size` argument of `allocate()`: an int above 0.
pub(crate) fn size_arg(size: i64) -> PyResult<usize> {
    match usize::try_from(size) {
        Ok(size) if size > 0 => Ok(size),
        _ => Err(PyValueError::new_err(format!(
            "allocate() takes a size in bytes above 0, got {size}"
        ))),
    }
}

/// Allocates `size` bytes from `resource` on `stream` (`device`'s default stream when None),
/// as a `Buffer` whose `memory_resource` is `owner`.
pub(crate) fn allocate_buffer(
    py: Python<'_>,
    owner: PyObject,
    resource: &Arc<dyn cuda_core::MemoryResource>,
    device: cuda_core::Device,
    size: i64,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyBuffer> {
    let size = size_arg(size)?;
    let stream = match stream.filter(|s| !s.is_none()) {
        Some(stream) => stream_arg(stream, "allocate()")?,
        None => device.default_stream().or_py(py)?,
    };
    let buffer = cuda_core::Allocate::allocate(resource, size, &stream).or_py(py)?;
    Ok(PyBuffer::wrap(buffer, owner))
}

/// A device's memory resource, as cuda.core's `DeviceMemoryResource`: a stream-ordered memory
/// pool of device memory.
///
/// `DeviceMemoryResource(device_id)` (options None), like `Device.memory_resource`, is the
/// device's default pool (synchronous allocation where the device has no pools), the same
/// object every time, which `close()` leaves alone. With `options` (a
/// `DeviceMemoryResourceOptions` or a dict of its fields, even the default one), a new pool of
/// its own (`cuMemPoolCreate`), which `close()` gives up (it is destroyed once its last buffer
/// is freed). `allocate(size, stream=None)` returns a `Buffer` allocated in stream order.
#[pyclass(name = "DeviceMemoryResource", module = "cudacore_rs", frozen)]
pub(crate) struct PyDeviceMemoryResource {
    pub(crate) held: Slot<Held>,
    pub(crate) device: cuda_core::Device,
    /// Whether the pool is this object's own (made with options).
    pub(crate) owned: bool,
    /// Whether other processes may import the pool (options' `ipc_enabled`).
    pub(crate) ipc: bool,
}

impl PyDeviceMemoryResource {
    /// The device's default resource (`Device.memory_resource`), not owned.
    pub(crate) fn of_default(
        device: cuda_core::Device,
        resource: Arc<dyn cuda_core::MemoryResource>,
    ) -> PyDeviceMemoryResource {
        // The default pool again, for its attributes (None where the device has no pools).
        let pool = device
            .properties()
            .memory_pools_supported()
            .unwrap_or(false)
            .then(|| cuda_core::DeviceMemoryResource::default_pool(device).ok())
            .flatten()
            .map(PoolRef::Device);
        PyDeviceMemoryResource {
            held: Slot::new("DeviceMemoryResource", Held { resource, pool }),
            device,
            owned: false,
            ipc: false,
        }
    }
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
        let options = match options.filter(|o| !o.is_none()) {
            Some(options) => Some(
                crate::errors::options_of::<PyDeviceMemoryResourceOptions>(py, Some(options))?
                    .to_rust()?,
            ),
            None => None,
        };
        let device = match device_id.downcast::<PyDevice>() {
            Ok(device) => device.clone().unbind(),
            Err(_) => PyDevice::new(py, Some(device_id.extract::<i64>()?))?,
        };
        let Some(options) = options else {
            return device.get().memory_resource(py);
        };
        let device = device.get().device;
        let pool = cuda_core::DeviceMemoryResource::new(device, options).or_py(py)?;
        let resource: Arc<dyn cuda_core::MemoryResource> = pool.clone();
        Py::new(
            py,
            PyDeviceMemoryResource {
                held: Slot::new(
                    "DeviceMemoryResource",
                    Held {
                        resource,
                        pool: Some(PoolRef::Device(pool)),
                    },
                ),
                device,
                owned: true,
                ipc: options.shareable,
            },
        )
    }

    /// Allocates `size` bytes (an int above 0) in order on `stream` (the device's default
    /// stream when None), which the buffer is also freed on unless `close()` names another.
    #[pyo3(signature = (size, stream = None))]
    pub(crate) fn allocate(
        slf: &Bound<'_, Self>,
        size: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBuffer> {
        let this = slf.get();
        let held = this.held.get()?;
        let owner = slf.clone().into_any().unbind();
        allocate_buffer(slf.py(), owner, &held.resource, this.device, size, stream)
    }

    /// Gives up the pool where it is this resource's own (made with options): it is destroyed
    /// once its last buffer is freed, and `allocate` raises from now on. On the device's
    /// default pool, no effect (as in cuda.core).
    pub(crate) fn close(&self) {
        if self.owned {
            drop(self.held.take());
        }
    }

    /// The ordinal of the resource's device.
    #[getter]
    pub(crate) fn device_id(&self) -> usize {
        self.device.ordinal()
    }

    /// Whether the memory is accessible from the device (True).
    #[getter]
    pub(crate) fn is_device_accessible(&self) -> PyResult<bool> {
        Ok(self.held.get()?.resource.is_device_accessible())
    }

    /// Whether the memory is accessible from the host (False for device memory).
    #[getter]
    pub(crate) fn is_host_accessible(&self) -> PyResult<bool> {
        Ok(self.held.get()?.resource.is_host_accessible())
    }

    /// Whether the memory is managed (unified) memory (False).
    #[getter]
    pub(crate) fn is_managed(&self) -> bool {
        false
    }

    /// Whether the pool is this resource's own (made with options); if False, `close()` has
    /// no effect.
    #[getter]
    pub(crate) fn is_handle_owned(&self) -> bool {
        self.owned
    }

    /// Whether other processes may import the pool (`ipc_enabled` in the options).
    #[getter]
    pub(crate) fn is_ipc_enabled(&self) -> bool {
        self.ipc
    }

    /// Whether this is another process's pool mapped here (never: importing is not supported).
    #[getter]
    pub(crate) fn is_mapped(&self) -> bool {
        false
    }

    /// The pool's handle (`CUmemoryPool`) as an int; None where the device has no pools.
    #[getter]
    pub(crate) fn handle(&self) -> PyResult<Option<usize>> {
        Ok(self.held.get()?.pool.map(|p| p.handle()))
    }

    /// The pool's attributes (use, high-water marks, release threshold, reuse policies), read
    /// from the driver at each access.
    #[getter]
    pub(crate) fn attributes(&self) -> PyResult<PyMemPoolAttributes> {
        match self.held.get()?.pool {
            Some(pool) => Ok(PyMemPoolAttributes { pool }),
            None => Err(PyRuntimeError::new_err(format!(
                "device {} has no memory pools, so its resource has no pool attributes",
                self.device.ordinal()
            ))),
        }
    }

    /// Whether `close()` gave the pool up.
    #[getter]
    pub(crate) fn closed(&self) -> bool {
        self.held.is_closed()
    }

    pub(crate) fn __repr__(&self) -> String {
        let what = if self.owned {
            "a pool of its own"
        } else {
            "the default pool"
        };
        let closed = if self.held.is_closed() {
            " (closed)"
        } else {
            ""
        };
        format!(
            "<DeviceMemoryResource of device {}, {what}{closed}>",
            self.device.ordinal()
        )
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
    /// Shared: a DLPack export holds it too, so the memory outlives `close()` until the
    /// consumer releases the tensor.
    pub(crate) buffer: Slot<Arc<cuda_core::Buffer>>,
    /// The Python memory resource it came from (`memory_resource`).
    pub(crate) resource: PyObject,
}

impl PyBuffer {
    pub(crate) fn wrap(buffer: cuda_core::Buffer, resource: PyObject) -> PyBuffer {
        PyBuffer {
            buffer: Slot::new("Buffer", Arc::new(buffer)),
            resource,
        }
    }

    /// The open buffer (a reference count); the error for a closed one.
    pub(crate) fn get(&self) -> PyResult<Arc<cuda_core::Buffer>> {
        self.buffer.get()
    }
}

/// Copies `src` into `dst` on `stream`, two distinct open buffers.
pub(crate) fn copy_between(
    py: Python<'_>,
    src: &PyBuffer,
    dst: &PyBuffer,
    stream: &cuda_core::Stream,
) -> PyResult<()> {
    let (src, dst) = (src.get()?, dst.get()?);
    if Arc::ptr_eq(&src, &dst) {
        return Err(PyValueError::new_err(
            "cannot copy a Buffer onto itself: source and destination are the same buffer",
        ));
    }
    src.copy_to(&dst, stream).or_py(py)
}

/// Which way a host copy goes.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Direction {
    ToHost,
    FromHost,
}

/// Queues a copy between `buffer` and the host memory `host` on `stream`, and keeps `host`'s
/// owner alive until the stream has passed the copy.
///
/// Why that is sound: the driver reads or writes `host` after this returns where it is pinned
/// (a NumPy array over a pinned buffer, registered memory), and may where it is pageable (a
/// copy from pageable memory returns once the data is staged, one into it once done, but that
/// is the driver's behaviour, not its contract). So the owner (which also holds the buffer
/// export, so that a `bytearray` cannot be resized meanwhile) is moved into a host function
/// queued after the copy (`cuLaunchHostFunc`): it is dropped, off the driver's thread, once the
/// copy is done, and PyO3 releases the reference at the next acquisition of the GIL. Where the
/// host function cannot be queued, the stream is synchronised instead; where that fails too,
/// the owner is leaked rather than freed under a copy that may still run. A capturing stream is
/// refused first: a graph would read or write the memory at each launch, long after.
/// What stays the caller's (cuda.core's contract): not to touch the memory before the copy is
/// done.
pub(crate) fn copy_host(
    py: Python<'_>,
    buffer: &PyBuffer,
    host: crate::host::HostMemory,
    direction: Direction,
    stream: &cuda_core::Stream,
) -> PyResult<()> {
    let (what, verb) = match direction {
        Direction::ToHost => ("copy_to(dst)", "into"),
        Direction::FromHost => ("copy_from(src)", "from"),
    };
    let b = buffer.get()?;
    let size = b.size();
    if host.len != size {
        return Err(PyValueError::new_err(format!(
            "{what} has {} bytes and the buffer {size}: a copy {verb} host memory takes the \
             buffer's size",
            host.len
        )));
    }
    if host.addr == 0 {
        return Err(PyValueError::new_err(format!(
            "{what} has no memory (a null address)"
        )));
    }
    if stream.capture_status().or_py(py)? != cuda_core::CaptureStatus::None {
        return Err(PyValueError::new_err(format!(
            "{what}: a copy {verb} host memory cannot be captured on a stream (the graph would \
             use the memory at each launch); copy outside the capture"
        )));
    }
    let (addr, len) = (host.addr, host.len);
    let whole = b.shared_slice(..).or_py(py)?;
    {
        py.allow_threads(|| match direction {
            Direction::FromHost => {
                // SAFETY: `addr..addr + len` is the memory the exporter exports (checked
                // non-null and of `len` bytes above), allocated while `host.keep` lives, which
                // is held until the copy is done (below). The slice is only handed to the
                // driver for the copy, never read by Rust.
                let src = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
                // SAFETY: `src` stays alive until the copy is done (`host.keep`, below);
                // keeping it unmodified meanwhile is the caller's contract, as in cuda.core.
                unsafe { whole.copy_from_host_async(src, stream) }
            }
            Direction::ToHost => {
                // SAFETY: as above, of a writable exporter (checked); the slice is only
                // handed to the driver to write into, never read or written by Rust.
                let dst = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                // SAFETY: `dst` stays alive until the copy is done (`host.keep`, below); not
                // touching it meanwhile is the caller's contract, as in cuda.core.
                unsafe { whole.copy_to_host_async(dst, stream) }
            }
        })
        .or_py(py)?;
    }
    let keep = host.keep;
    let held = std::sync::Arc::new(std::sync::Mutex::new(Some(keep)));
    let in_func = std::sync::Arc::clone(&held);
    let queued = stream.launch_host_func(move || {
        // Taken here, dropped with the closure off the driver's thread.
        let _kept = &in_func;
    });
    match queued {
        Ok(()) => {
            // The closure holds the other reference; this one goes now.
            drop(held);
            Ok(())
        }
        Err(_) => match py.allow_threads(|| stream.sync()) {
            Ok(()) => Ok(()),
            Err(e) => {
                // The copy may still run: never free its memory.
                if let Some(keep) = crate::errors::lock(&held).take() {
                    std::mem::forget(keep);
                }
                Err(crate::errors::to_py(py, e))
            }
        },
    }
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
        Ok(self.get()?.ptr().0)
    }

    /// The size in bytes.
    #[getter]
    pub(crate) fn size(&self) -> PyResult<usize> {
        Ok(self.get()?.size())
    }

    /// The ordinal of the memory's device (None for host memory).
    #[getter]
    pub(crate) fn device_id(&self) -> PyResult<Option<usize>> {
        Ok(self.get()?.device().map(|d| d.ordinal()))
    }

    /// The memory resource the buffer was allocated from.
    #[getter]
    pub(crate) fn memory_resource(&self, py: Python<'_>) -> PyObject {
        self.resource.clone_ref(py)
    }

    /// Whether the memory is managed (unified) memory: a `ManagedMemoryResource`'s.
    #[getter]
    pub(crate) fn is_managed(&self, py: Python<'_>) -> bool {
        self.resource
            .bind(py)
            .is_instance_of::<crate::resources::PyManagedMemoryResource>()
    }

    /// Whether the memory is accessible from the device.
    #[getter]
    pub(crate) fn is_device_accessible(&self) -> PyResult<bool> {
        Ok(self.get()?.is_device_accessible())
    }

    /// Whether the memory is accessible from the host.
    #[getter]
    pub(crate) fn is_host_accessible(&self) -> PyResult<bool> {
        Ok(self.get()?.is_host_accessible())
    }

    /// Frees the memory, in order on `stream` (the stream it was allocated on when None).
    /// Closing twice is harmless. Where a DLPack tensor exported from the buffer is still
    /// held by its consumer, the memory is freed (on the allocation stream, after the
    /// consumer's work) only once the consumer releases the tensor.
    #[pyo3(signature = (stream = None))]
    pub(crate) fn close(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let stream = match stream.filter(|s| !s.is_none()) {
            Some(stream) => Some(stream_arg(stream, "close()")?),
            None => None,
        };
        // Taken out under the lock, freed after it: the free calls the driver.
        let taken = self.buffer.take();
        match taken.map(Arc::try_unwrap) {
            Some(Ok(buffer)) => buffer.close(stream.as_ref()).or_py(py),
            // An export holds it: freed when the consumer releases the tensor.
            Some(Err(shared)) => {
                drop(shared);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Whether the buffer is closed.
    #[getter]
    pub(crate) fn closed(&self) -> bool {
        self.buffer.is_closed()
    }

    /// Copies this buffer into `dst` in order on `stream`, and returns `dst`: a Buffer of the
    /// same size, or host memory of the same size in bytes (a writable, C-contiguous object with
    /// the buffer protocol: a NumPy array, bytearray, memoryview, ...); with `dst=None`, into a
    /// new buffer allocated from this one's memory resource on `stream`.
    ///
    /// A copy into host memory is stream-ordered too: `dst` holds the data once `stream` has
    /// passed the copy (`stream.sync()`), and must not be read or written before. This object
    /// keeps `dst` alive (and exported) until then. Not on a capturing stream.
    #[pyo3(signature = (dst = None, *, stream))]
    pub(crate) fn copy_to(
        slf: &Bound<'_, Self>,
        dst: Option<&Bound<'_, PyAny>>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<PyObject> {
        let py = slf.py();
        let stream = stream_arg(stream, "copy_to()")?;
        let this = slf.get();
        match dst.filter(|d| !d.is_none()) {
            Some(dst) => match dst.downcast::<PyBuffer>() {
                Ok(buffer) => {
                    copy_between(py, this, buffer.get(), &stream)?;
                    Ok(dst.clone().unbind())
                }
                Err(_) => {
                    let host = crate::host::host_memory(dst, true, "copy_to(dst)")?;
                    copy_host(py, this, host, Direction::ToHost, &stream)?;
                    Ok(dst.clone().unbind())
                }
            },
            None => {
                let src = this.get()?;
                let mut made =
                    cuda_core::Allocate::allocate(src.memory_resource(), src.size(), &stream)
                        .or_py(py)?;
                src.copy_to(&mut made, &stream).or_py(py)?;
                Ok(Py::new(py, PyBuffer::wrap(made, this.resource.clone_ref(py)))?.into_any())
            }
        }
    }

    /// Copies `src` into this buffer, in order on `stream`: a Buffer of the same size, or host
    /// memory of the same size in bytes (a C-contiguous object with the buffer protocol: a
    /// NumPy array, bytes, bytearray, memoryview, ...).
    ///
    /// A copy from host memory is stream-ordered too: `src` must not be written until `stream`
    /// has passed the copy (`stream.sync()`). This object keeps `src` alive (and exported)
    /// until then. Not on a capturing stream.
    #[pyo3(signature = (src, *, stream))]
    pub(crate) fn copy_from(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        stream: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let stream = stream_arg(stream, "copy_from()")?;
        match src.downcast::<PyBuffer>() {
            Ok(src) => copy_between(py, src.get(), self, &stream),
            Err(_) => {
                let host = crate::host::host_memory(src, false, "copy_from(src)")?;
                copy_host(py, self, host, Direction::FromHost, &stream)
            }
        }
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
        let buffer = self.get()?.shared_slice(..).or_py(py)?;
        match pattern {
            Pattern::U8(v) => buffer.fill(v, &stream),
            Pattern::U16(v) => buffer.fill(v, &stream),
            Pattern::U32(v) => buffer.fill(v, &stream),
        }
        .or_py(py)
    }

    /// The buffer as a DLPack tensor, as cuda.core exports it: a capsule of a 1-D int8 tensor
    /// of `size` elements at `handle` ("dltensor_versioned" where `max_version` is at least
    /// (1, 0), else the legacy "dltensor"). The tensor holds the memory until the consumer
    /// releases it (a `close()` meanwhile frees it only then). `stream` is not used, as in
    /// cuda.core: order the consumer's stream after the buffer's work yourself.
    /// `dl_device`: None, the buffer's own device, or `(1, 0)` (kDLCPU) for pinned or managed
    /// memory; `copy=True` is refused (`BufferError`).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    pub(crate) fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        let buffer = self.get()?;
        let managed = self.is_managed(py);
        crate::dlpack::export(py, buffer, managed, stream, max_version, dl_device, copy)
    }

    /// `(device_type, device_id)` of the memory, as DLPack numbers them: `(2, ordinal)` for
    /// device memory (kDLCUDA), `(3, 0)` for pinned host memory (kDLCUDAHost), `(13, 0)` for
    /// managed memory (kDLCUDAManaged).
    pub(crate) fn __dlpack_device__(&self, py: Python<'_>) -> PyResult<(i32, i32)> {
        let buffer = self.get()?;
        Ok(crate::dlpack::dlpack_device(&buffer, self.is_managed(py)))
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
