//! `Stream` and `Event`.

use std::sync::Arc;

use crate::device::*;
use crate::errors::*;
use crate::options::*;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A CUDA stream: an ordered queue of work on a device, made by `Device.create_stream()`.
///
/// The stream is destroyed (after the work queued on it) by `close()`, at the end of a `with`
/// block, or when the object is collected. `close()` may be called more than once; any other
/// use of a closed stream raises `RuntimeError`.
#[pyclass(name = "Stream", module = "cudacore_rs", frozen)]
pub(crate) struct PyStream {
    pub(crate) stream: Slot<cuda_core::Stream>,
    /// For a foreign stream (`Device.create_stream(obj)`), the object that owns it, kept alive
    /// as long as this one.
    _owner: Option<PyObject>,
}

impl PyStream {
    pub(crate) fn wrap(stream: cuda_core::Stream) -> PyStream {
        PyStream {
            stream: Slot::new("Stream", stream),
            _owner: None,
        }
    }

    /// A foreign stream (not owned), holding `owner` (the object it came from) alive.
    pub(crate) fn wrap_foreign(stream: cuda_core::Stream, owner: Option<PyObject>) -> PyStream {
        PyStream {
            stream: Slot::new("Stream", stream),
            _owner: owner,
        }
    }

    /// The open stream (a clone: a reference count), or the error for a closed one.
    pub(crate) fn get(&self) -> PyResult<cuda_core::Stream> {
        self.stream.get()
    }
}

#[pymethods]
impl PyStream {
    #[new]
    pub(crate) fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Stream objects cannot be made directly: use Device.create_stream()",
        ))
    }

    /// Wraps a stream made elsewhere (a CuPy or PyTorch stream's handle, or any `CUstream`
    /// as an int) without owning it: `close()` and collection do not destroy it.
    ///
    /// This has the same raw power as cuda.core's `Stream.from_handle`: `handle` must be a
    /// valid `CUstream`, and it (and its context) must stay valid for as long as the result
    /// is used; a stale or made-up handle is undefined behaviour in the driver. Its context is
    /// asked of the driver (`cuStreamGetCtx`); a stream of another device than the current
    /// one is found on its own device.
    #[staticmethod]
    pub(crate) fn from_handle(py: Python<'_>, handle: &Bound<'_, PyAny>) -> PyResult<PyStream> {
        crate::context::foreign_stream(py, handle, None)
    }

    /// Records an event on the stream and returns it: `event` if given, else a new event made
    /// with `options` (an `EventOptions`, a dict, or None).
    #[pyo3(signature = (event = None, options = None))]
    pub(crate) fn record(
        &self,
        py: Python<'_>,
        event: Option<Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        match event.filter(|e| !e.is_none()) {
            Some(event) => {
                let wrapped = event.downcast::<PyEvent>().map_err(|_| {
                    PyTypeError::new_err("record(event) takes an Event (or None for a new one)")
                })?;
                // Both under their locks, in this order only (nothing takes an event's lock
                // and then a stream's); a record neither blocks nor releases the GIL.
                self.stream.with(|stream| {
                    wrapped
                        .get()
                        .event
                        .with(|inner| stream.record(inner).or_py(py))
                })?;
                Ok(event.unbind())
            }
            None => {
                let stream = self.get()?;
                let options: PyEventOptions = options_of(py, options)?;
                let made = stream.record_new(options.to_rust()?).or_py(py)?;
                Ok(Py::new(py, PyEvent::wrap(made))?.into_any())
            }
        }
    }

    /// Makes the stream's later work wait for an event's last record, or for all the work
    /// queued so far on another stream. The calling thread does not wait.
    pub(crate) fn wait(&self, py: Python<'_>, event_or_stream: &Bound<'_, PyAny>) -> PyResult<()> {
        let stream = self.get()?;
        if let Ok(event) = event_or_stream.downcast::<PyEvent>() {
            let event = event.get().get()?;
            return stream.wait(&event).or_py(py);
        }
        if let Ok(other) = event_or_stream.downcast::<PyStream>() {
            let other = other.get().get()?;
            return stream.wait_stream(&other).or_py(py);
        }
        Err(PyTypeError::new_err(format!(
            "wait() takes an Event or a Stream, not {}",
            event_or_stream.get_type().name()?
        )))
    }

    /// Waits until all work queued on the stream is done, without holding the GIL.
    pub(crate) fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let stream = self.get()?;
        // A stream with nothing left to run says so to a query at once: no need to hand the
        // GIL over and take it back, which costs more than the query. Work pending, or a
        // failure, goes to the wait, which reports it under its own name.
        if let Ok(true) = stream.is_done() {
            return Ok(());
        }
        py.allow_threads(|| stream.sync()).or_py(py)
    }

    /// Destroys the stream, after the work already queued on it. Closing twice is harmless.
    pub(crate) fn close(&self) {
        // Taken out under the lock, dropped after it: the drop may call the driver.
        let taken = self.stream.take();
        drop(taken);
    }

    /// Whether the stream is closed.
    #[getter]
    pub(crate) fn closed(&self) -> bool {
        self.stream.is_closed()
    }

    /// The raw `CUstream` handle, as an int (cuda.core returns a `cuda.bindings` object whose
    /// `int()` is this).
    #[getter]
    pub(crate) fn handle(&self) -> PyResult<usize> {
        Ok(self.get()?.as_raw() as usize)
    }

    /// The device the stream belongs to.
    #[getter]
    pub(crate) fn device(&self, py: Python<'_>) -> PyResult<Py<PyDevice>> {
        let ordinal = self.get()?.device().ordinal();
        PyDevice::new(py, i64::try_from(ordinal).ok())
    }

    /// The CUDA stream protocol: `(0, handle)`, the protocol's version and the raw handle.
    pub(crate) fn __cuda_stream__(&self) -> PyResult<(u32, usize)> {
        Ok((0, self.handle()?))
    }

    pub(crate) fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    pub(crate) fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    pub(crate) fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let Ok(other) = other.downcast::<PyStream>() else {
            return false;
        };
        match (self.get(), other.get().get()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }

    pub(crate) fn __hash__(&self) -> usize {
        self as *const PyStream as usize
    }

    pub(crate) fn __repr__(&self) -> String {
        match &*self.stream.lock() {
            Some(stream) => format!(
                "<Stream handle={:#x} of device {}>",
                stream.as_raw() as usize,
                stream.device().ordinal()
            ),
            None => "<Stream (closed)>".to_owned(),
        }
    }
}

// ---- Event -----------------------------------------------------------------------------------

/// A CUDA event: a marker recorded in a stream, for ordering and timing. Made by
/// `Device.create_event()` or `Stream.record()`.
///
/// With `timing_enabled`, `end - start` is the time in milliseconds between two completed
/// events. The event is destroyed by `close()` or when the object is collected; `close()` may
/// be called more than once, and any other use of a closed event raises `RuntimeError`.
#[pyclass(name = "Event", module = "cudacore_rs", frozen)]
pub(crate) struct PyEvent {
    /// Shared so that a wait can go on without the lock while another thread closes it.
    pub(crate) event: Slot<Arc<cuda_core::Event>>,
}

impl PyEvent {
    pub(crate) fn wrap(event: cuda_core::Event) -> PyEvent {
        PyEvent {
            event: Slot::new("Event", Arc::new(event)),
        }
    }

    pub(crate) fn get(&self) -> PyResult<Arc<cuda_core::Event>> {
        self.event.get()
    }
}

#[pymethods]
impl PyEvent {
    #[new]
    pub(crate) fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Event objects cannot be made directly: use Device.create_event() or Stream.record()",
        ))
    }

    /// Waits until the work before the event's last record is done, without holding the GIL.
    pub(crate) fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let event = self.get()?;
        // Done already: answered without handing the GIL over (see `Stream.sync`).
        if let Ok(true) = event.is_done() {
            return Ok(());
        }
        py.allow_threads(|| event.sync()).or_py(py)
    }

    /// Whether the work before the event's last record is done (True for an event never
    /// recorded).
    #[getter]
    pub(crate) fn is_done(&self, py: Python<'_>) -> PyResult<bool> {
        self.get()?.is_done().or_py(py)
    }

    /// Whether the event was made without timing.
    #[getter]
    pub(crate) fn is_timing_disabled(&self) -> PyResult<bool> {
        Ok(!self.get()?.options().timing)
    }

    /// Whether `sync()` spins (True) rather than blocks the thread.
    #[getter]
    pub(crate) fn is_sync_busy_waited(&self) -> PyResult<bool> {
        Ok(!self.get()?.options().blocking_sync)
    }

    /// Whether other processes can open the event.
    #[getter]
    pub(crate) fn is_ipc_enabled(&self) -> PyResult<bool> {
        Ok(self.get()?.options().interprocess)
    }

    /// The raw `CUevent` handle, as an int.
    #[getter]
    pub(crate) fn handle(&self) -> PyResult<usize> {
        Ok(self.get()?.as_raw() as usize)
    }

    /// The device the event belongs to.
    #[getter]
    pub(crate) fn device(&self, py: Python<'_>) -> PyResult<Py<PyDevice>> {
        let ordinal = self.get()?.device().ordinal();
        PyDevice::new(py, i64::try_from(ordinal).ok())
    }

    /// Destroys the event. Closing twice is harmless.
    pub(crate) fn close(&self) {
        let taken = self.event.take();
        drop(taken);
    }

    /// Whether the event is closed.
    #[getter]
    pub(crate) fn closed(&self) -> bool {
        self.event.is_closed()
    }

    /// `end - start`: the milliseconds from `start` to this event, both recorded, completed and
    /// made with `timing_enabled`; `RuntimeError` otherwise.
    pub(crate) fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let Ok(start) = other.downcast::<PyEvent>() else {
            return Ok(py.NotImplemented());
        };
        let start = start.get().get()?;
        let end = self.get()?;
        match end.elapsed_since(&start) {
            Ok(elapsed) => Ok((elapsed.as_secs_f64() * 1000.0)
                .into_pyobject(py)?
                .into_any()
                .unbind()),
            // cuda.core raises RuntimeError where the events cannot be timed.
            Err(cuda_core::Error::InvalidArgument { name, reason }) => Err(
                PyRuntimeError::new_err(format!("cannot time the events ({name}): {reason}")),
            ),
            Err(e) => Err(to_py(py, e)),
        }
    }

    pub(crate) fn __repr__(&self) -> String {
        match &*self.event.lock() {
            Some(event) => format!(
                "<Event handle={:#x} of device {}>",
                event.as_raw() as usize,
                event.device().ordinal()
            ),
            None => "<Event (closed)>".to_owned(),
        }
    }
}
