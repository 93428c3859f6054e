//! `cudacore_rs._native`: the Python extension module behind the `cudacore_rs` package, which
//! exposes cuda-core under the names and behaviour of NVIDIA's `cuda.core` 1.2 for what it
//! covers (devices, streams, events, their options, driver errors and the `system` queries).
//!
//! Every Python object owns what it wraps: a `Stream` or `Event` releases its handle on
//! `close()` or when it is collected, and a closed one raises `RuntimeError` when used. Waits
//! (`sync()`) release the GIL. Nothing here panics: every failure becomes a Python exception.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple};

pyo3::create_exception!(
    cudacore_rs,
    CUDAError,
    PyException,
    "A CUDA driver error. `name` is the driver's name of the code (`CUDA_ERROR_INVALID_VALUE`) \
     and `code` its number (`CUresult`); both are None where the failure is not a driver \
     call's (no driver found, a driver too old). `call` names the driver function that failed."
);

/// The Python exception for a cuda-core error: driver failures become `CUDAError` carrying the
/// driver's name, code and call; arguments refused before the driver, `ValueError`.
fn to_py(py: Python<'_>, error: cuda_core::Error) -> PyErr {
    let message = error.to_string();
    let (name, code, call) = match &error {
        cuda_core::Error::Driver {
            call, code, name, ..
        } => (Some(*name), Some(code.0), Some(*call)),
        cuda_core::Error::InvalidArgument { .. } => return PyValueError::new_err(message),
        _ => (None, None, None),
    };
    let exception = match py.get_type::<CUDAError>().call1((message.clone(),)) {
        Ok(exception) => exception,
        Err(e) => return e,
    };
    let set = exception
        .setattr("name", name)
        .and_then(|()| exception.setattr("code", code))
        .and_then(|()| exception.setattr("call", call));
    if let Err(e) = set {
        return e;
    }
    PyErr::from_value(exception)
}

/// `Result` to `PyResult`, with the GIL at hand.
trait OrPy<T> {
    fn or_py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrPy<T> for cuda_core::Result<T> {
    fn or_py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// A lock that a panic elsewhere left poisoned still guards a plain `Option`: use it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ComputeCapability`, the named tuple `(major, minor)` that `Device.compute_capability`
/// returns, made once.
fn compute_capability_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static TYPE: GILOnceCell<PyObject> = GILOnceCell::new();
    TYPE.get_or_try_init(py, || {
        let made = py
            .import("collections")?
            .getattr("namedtuple")?
            .call1(("ComputeCapability", ("major", "minor")))?;
        made.setattr("__module__", "cudacore_rs")?;
        Ok::<_, PyErr>(made.unbind())
    })
    .map(|t| t.bind(py))
}

/// Options read as cuda.core reads them: an instance of the options class, a dict of its
/// fields, or None for the defaults.
fn options_of<T>(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<T>
where
    T: pyo3::PyClass + pyo3::type_object::PyTypeInfo + Clone + Default,
{
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Ok(T::default());
    };
    if let Ok(dict) = options.downcast::<PyDict>() {
        let made = py.get_type::<T>().call((), Some(dict))?;
        return Ok(made.downcast_into::<T>()?.borrow().clone());
    }
    match options.downcast::<T>() {
        Ok(options) => Ok(options.borrow().clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "options must be a {} or a dict of its fields, not {}",
            T::NAME,
            options.get_type().name()?
        ))),
    }
}

// ---- options ---------------------------------------------------------------------------------

/// Options for `Device.create_stream`.
///
/// nonblocking: the stream does not synchronise with the legacy default (NULL) stream
/// (default True).
/// priority: the stream's priority, lower numbers running first, within the device's range;
/// None (the default) is the default priority.
#[pyclass(name = "StreamOptions", module = "cudacore_rs", eq)]
#[derive(Clone, PartialEq)]
struct PyStreamOptions {
    /// Whether the stream does not synchronise with the legacy default stream.
    #[pyo3(get, set)]
    nonblocking: bool,
    /// The stream's priority (lower runs first), or None for the default.
    #[pyo3(get, set)]
    priority: Option<i32>,
}

impl Default for PyStreamOptions {
    fn default() -> Self {
        PyStreamOptions {
            nonblocking: true,
            priority: None,
        }
    }
}

#[pymethods]
impl PyStreamOptions {
    #[new]
    #[pyo3(signature = (nonblocking = true, priority = None))]
    fn new(nonblocking: bool, priority: Option<i32>) -> Self {
        PyStreamOptions {
            nonblocking,
            priority,
        }
    }

    fn __repr__(&self) -> String {
        let priority = self
            .priority
            .map_or_else(|| "None".to_owned(), |p| p.to_string());
        format!(
            "StreamOptions(nonblocking={}, priority={priority})",
            py_bool(self.nonblocking)
        )
    }
}

impl PyStreamOptions {
    fn to_rust(&self) -> cuda_core::StreamOptions {
        let options = cuda_core::StreamOptions::default().with_non_blocking(self.nonblocking);
        match self.priority {
            Some(priority) => options.with_priority(priority),
            None => options,
        }
    }
}

/// Options for `Device.create_event` and `Stream.record`.
///
/// timing_enabled: the event records timestamps, so that `end - start` gives the time between
/// two events (default False).
/// blocking_sync: `Event.sync()` blocks the thread instead of spinning (default False).
/// ipc_enabled: an event other processes can open; it cannot have timing (default False).
#[pyclass(name = "EventOptions", module = "cudacore_rs", eq)]
#[derive(Clone, Default, PartialEq)]
struct PyEventOptions {
    /// Whether the event records timestamps.
    #[pyo3(get, set)]
    timing_enabled: bool,
    /// Whether `Event.sync()` blocks the thread instead of spinning.
    #[pyo3(get, set)]
    blocking_sync: bool,
    /// Whether other processes can open the event.
    #[pyo3(get, set)]
    ipc_enabled: bool,
}

#[pymethods]
impl PyEventOptions {
    #[new]
    #[pyo3(signature = (timing_enabled = false, blocking_sync = false, ipc_enabled = false))]
    fn new(timing_enabled: bool, blocking_sync: bool, ipc_enabled: bool) -> Self {
        PyEventOptions {
            timing_enabled,
            blocking_sync,
            ipc_enabled,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "EventOptions(timing_enabled={}, blocking_sync={}, ipc_enabled={})",
            py_bool(self.timing_enabled),
            py_bool(self.blocking_sync),
            py_bool(self.ipc_enabled)
        )
    }
}

impl PyEventOptions {
    fn to_rust(&self) -> PyResult<cuda_core::EventOptions> {
        if self.ipc_enabled && self.timing_enabled {
            return Err(PyValueError::new_err(
                "an event with ipc_enabled=True cannot have timing_enabled=True",
            ));
        }
        Ok(cuda_core::EventOptions::default()
            .with_timing(self.timing_enabled)
            .with_blocking_sync(self.blocking_sync)
            .with_interprocess(self.ipc_enabled))
    }
}

fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}

// ---- Device ----------------------------------------------------------------------------------

thread_local! {
    /// This thread's `Device` objects, by ordinal: `Device(n)` returns the same one each time.
    static DEVICES: RefCell<Vec<Option<Py<PyDevice>>>> = const { RefCell::new(Vec::new()) };
}

/// A CUDA device. `Device()` is the calling thread's current device (device 0 when no context
/// is current); `Device(n)` the device with ordinal n. Each returns the same object for a
/// device every time it is called on one thread, as in cuda.core.
///
/// Streams and events are made in the device's primary context, which `set_current()` makes
/// current on the calling thread.
#[pyclass(name = "Device", module = "cudacore_rs", frozen)]
struct PyDevice {
    device: cuda_core::Device,
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (device_id = None))]
    fn new(py: Python<'_>, device_id: Option<i64>) -> PyResult<Py<PyDevice>> {
        let device = match device_id {
            None => cuda_core::Device::current().or_py(py)?,
            Some(id) => {
                let count = cuda_core::Device::count().or_py(py)?;
                match usize::try_from(id) {
                    Ok(ordinal) if ordinal < count => cuda_core::Device::new(ordinal).or_py(py)?,
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "device_id must be within [0, {count}), got {id}"
                        )))
                    }
                }
            }
        };
        let ordinal = device.ordinal();
        DEVICES.with(|devices| {
            let mut devices = devices.borrow_mut();
            if let Some(Some(existing)) = devices.get(ordinal) {
                return Ok(existing.clone_ref(py));
            }
            let made = Py::new(py, PyDevice { device })?;
            if devices.len() <= ordinal {
                devices.resize_with(ordinal + 1, || None);
            }
            devices[ordinal] = Some(made.clone_ref(py));
            Ok(made)
        })
    }

    /// The device's ordinal.
    #[getter]
    fn device_id(&self) -> usize {
        self.device.ordinal()
    }

    /// The device's name, as the driver gives it.
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.device.name().or_py(py)
    }

    /// The compute capability, a named tuple `ComputeCapability(major, minor)`.
    #[getter]
    fn compute_capability<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (major, minor) = self.device.compute_capability().or_py(py)?;
        compute_capability_type(py)?.call1((major, minor))
    }

    /// The architecture as NVRTC spells it after `sm_`: `"90"` for compute capability 9.0.
    #[getter]
    fn arch(&self, py: Python<'_>) -> PyResult<String> {
        self.device.arch().or_py(py)
    }

    /// Makes the device's primary context current on the calling thread. Taking another
    /// context (`ctx=`) is not supported yet.
    #[pyo3(signature = (ctx = None))]
    fn set_current(&self, py: Python<'_>, ctx: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        if ctx.is_some_and(|c| !c.is_none()) {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "Device.set_current(ctx) is not supported yet: contexts are not exposed",
            ));
        }
        self.device.set_current().or_py(py)
    }

    /// Waits until all work queued on the device's primary context is done, without holding
    /// the GIL.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let device = self.device;
        py.allow_threads(|| device.sync()).or_py(py)
    }

    /// A new stream of the device. `options` is a `StreamOptions`, a dict of its fields, or
    /// None for the defaults. Wrapping a foreign stream (`obj=`) is not supported yet.
    #[pyo3(signature = (obj = None, options = None))]
    fn create_stream(
        &self,
        py: Python<'_>,
        obj: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyStream> {
        if obj.is_some_and(|o| !o.is_none()) {
            return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "Device.create_stream(obj) is not supported yet; pass options= only",
            ));
        }
        let options: PyStreamOptions = options_of(py, options)?;
        let stream = self.device.create_stream(options.to_rust()).or_py(py)?;
        Ok(PyStream::wrap(stream))
    }

    /// A new event of the device. `options` is an `EventOptions`, a dict of its fields, or None
    /// for the defaults.
    #[pyo3(signature = (options = None))]
    fn create_event(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyEvent> {
        let options: PyEventOptions = options_of(py, options)?;
        let event = self.device.create_event(options.to_rust()?).or_py(py)?;
        Ok(PyEvent::wrap(event))
    }

    fn __int__(&self) -> usize {
        self.device.ordinal()
    }

    fn __repr__(&self) -> String {
        format!("<Device {}>", self.device.ordinal())
    }
}

// ---- Stream ----------------------------------------------------------------------------------

/// A CUDA stream: an ordered queue of work on a device, made by `Device.create_stream()`.
///
/// The stream is destroyed (after the work queued on it) by `close()`, at the end of a `with`
/// block, or when the object is collected. `close()` may be called more than once; any other
/// use of a closed stream raises `RuntimeError`.
#[pyclass(name = "Stream", module = "cudacore_rs", frozen)]
struct PyStream {
    stream: Mutex<Option<cuda_core::Stream>>,
}

impl PyStream {
    fn wrap(stream: cuda_core::Stream) -> PyStream {
        PyStream {
            stream: Mutex::new(Some(stream)),
        }
    }

    /// The open stream (a clone: a reference count), or the error for a closed one.
    fn get(&self) -> PyResult<cuda_core::Stream> {
        lock(&self.stream)
            .clone()
            .ok_or_else(|| PyRuntimeError::new_err("the Stream is closed"))
    }
}

#[pymethods]
impl PyStream {
    #[new]
    fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Stream objects cannot be made directly: use Device.create_stream()",
        ))
    }

    /// Records an event on the stream and returns it: `event` if given, else a new event made
    /// with `options` (an `EventOptions`, a dict, or None).
    #[pyo3(signature = (event = None, options = None))]
    fn record(
        &self,
        py: Python<'_>,
        event: Option<Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        let stream = self.get()?;
        match event.filter(|e| !e.is_none()) {
            Some(event) => {
                let wrapped = event.downcast::<PyEvent>().map_err(|_| {
                    PyTypeError::new_err("record(event) takes an Event (or None for a new one)")
                })?;
                let inner = wrapped.get().get()?;
                stream.record(&inner).or_py(py)?;
                Ok(event.unbind())
            }
            None => {
                let options: PyEventOptions = options_of(py, options)?;
                let made = stream.record_new(options.to_rust()?).or_py(py)?;
                Ok(Py::new(py, PyEvent::wrap(made))?.into_any())
            }
        }
    }

    /// Makes the stream's later work wait for an event's last record, or for all the work
    /// queued so far on another stream. The calling thread does not wait.
    fn wait(&self, py: Python<'_>, event_or_stream: &Bound<'_, PyAny>) -> PyResult<()> {
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
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let stream = self.get()?;
        py.allow_threads(|| stream.sync()).or_py(py)
    }

    /// Destroys the stream, after the work already queued on it. Closing twice is harmless.
    fn close(&self) {
        // Taken out under the lock, dropped after it: the drop may call the driver.
        let taken = lock(&self.stream).take();
        drop(taken);
    }

    /// Whether the stream is closed.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.stream).is_none()
    }

    /// The raw `CUstream` handle, as an int (cuda.core returns a `cuda.bindings` object whose
    /// `int()` is this).
    #[getter]
    fn handle(&self) -> PyResult<usize> {
        Ok(self.get()?.as_raw() as usize)
    }

    /// The device the stream belongs to.
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyDevice>> {
        let ordinal = self.get()?.device().ordinal();
        PyDevice::new(py, i64::try_from(ordinal).ok())
    }

    /// The CUDA stream protocol: `(0, handle)`, the protocol's version and the raw handle.
    fn __cuda_stream__(&self) -> PyResult<(u32, usize)> {
        Ok((0, self.handle()?))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let Ok(other) = other.downcast::<PyStream>() else {
            return false;
        };
        match (self.get(), other.get().get()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }

    fn __hash__(&self) -> usize {
        self as *const PyStream as usize
    }

    fn __repr__(&self) -> String {
        match &*lock(&self.stream) {
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
struct PyEvent {
    /// Shared so that a wait can go on without the lock while another thread closes it.
    event: Mutex<Option<Arc<cuda_core::Event>>>,
}

impl PyEvent {
    fn wrap(event: cuda_core::Event) -> PyEvent {
        PyEvent {
            event: Mutex::new(Some(Arc::new(event))),
        }
    }

    fn get(&self) -> PyResult<Arc<cuda_core::Event>> {
        lock(&self.event)
            .clone()
            .ok_or_else(|| PyRuntimeError::new_err("the Event is closed"))
    }
}

#[pymethods]
impl PyEvent {
    #[new]
    fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Event objects cannot be made directly: use Device.create_event() or Stream.record()",
        ))
    }

    /// Waits until the work before the event's last record is done, without holding the GIL.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let event = self.get()?;
        py.allow_threads(|| event.sync()).or_py(py)
    }

    /// Whether the work before the event's last record is done (True for an event never
    /// recorded).
    #[getter]
    fn is_done(&self, py: Python<'_>) -> PyResult<bool> {
        self.get()?.is_done().or_py(py)
    }

    /// Whether the event was made without timing.
    #[getter]
    fn is_timing_disabled(&self) -> PyResult<bool> {
        Ok(!self.get()?.options().timing)
    }

    /// Whether `sync()` spins (True) rather than blocks the thread.
    #[getter]
    fn is_sync_busy_waited(&self) -> PyResult<bool> {
        Ok(!self.get()?.options().blocking_sync)
    }

    /// Whether other processes can open the event.
    #[getter]
    fn is_ipc_enabled(&self) -> PyResult<bool> {
        Ok(self.get()?.options().interprocess)
    }

    /// The raw `CUevent` handle, as an int.
    #[getter]
    fn handle(&self) -> PyResult<usize> {
        Ok(self.get()?.as_raw() as usize)
    }

    /// The device the event belongs to.
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyDevice>> {
        let ordinal = self.get()?.device().ordinal();
        PyDevice::new(py, i64::try_from(ordinal).ok())
    }

    /// Destroys the event. Closing twice is harmless.
    fn close(&self) {
        let taken = lock(&self.event).take();
        drop(taken);
    }

    /// Whether the event is closed.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.event).is_none()
    }

    /// `end - start`: the milliseconds from `start` to this event, both recorded, completed and
    /// made with `timing_enabled`; `RuntimeError` otherwise.
    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
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

    fn __repr__(&self) -> String {
        match &*lock(&self.event) {
            Some(event) => format!(
                "<Event handle={:#x} of device {}>",
                event.as_raw() as usize,
                event.device().ordinal()
            ),
            None => "<Event (closed)>".to_owned(),
        }
    }
}

// ---- system ----------------------------------------------------------------------------------

/// The number of CUDA devices the driver sees.
#[pyfunction]
fn _num_devices(py: Python<'_>) -> PyResult<usize> {
    cuda_core::Device::count().or_py(py)
}

/// The driver's CUDA version, `(major, minor)`.
#[pyfunction]
fn _driver_version(py: Python<'_>) -> PyResult<(i32, i32)> {
    let version = cuda_core::info::driver_info().or_py(py)?.version;
    Ok((version.major(), version.minor()))
}

/// The module `cudacore_rs._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("CUDAError", py.get_type::<CUDAError>())?;
    module.add_class::<PyDevice>()?;
    module.add_class::<PyStream>()?;
    module.add_class::<PyEvent>()?;
    module.add_class::<PyStreamOptions>()?;
    module.add_class::<PyEventOptions>()?;
    module.add("ComputeCapability", compute_capability_type(py)?)?;
    module.add_function(wrap_pyfunction!(_num_devices, module)?)?;
    module.add_function(wrap_pyfunction!(_driver_version, module)?)?;
    Ok(())
}
