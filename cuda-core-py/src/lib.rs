//! `cudacore_rs._native`: the Python extension module behind the `cudacore_rs` package, which
//! exposes cuda-core under the names and behaviour of NVIDIA's `cuda.core` 1.2 for what it
//! covers (devices, streams, events, their options, the devices' default memory resources and
//! their buffers, driver errors and the `system` queries).
//!
//! Every Python object owns what it wraps: a `Stream`, `Event` or `Buffer` releases its handle
//! (or memory) on `close()` or when it is collected, and a closed one raises `RuntimeError` when
//! used. Waits (`sync()`) release the GIL. Nothing here panics: every failure becomes a Python
//! exception.

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

/// What a Python object owns (a stream, an event, a buffer): held until `close()` takes it out;
/// once taken, any other use raises `RuntimeError` naming `what`.
struct Slot<T> {
    value: Mutex<Option<T>>,
    what: &'static str,
}

impl<T> Slot<T> {
    fn new(what: &'static str, value: T) -> Slot<T> {
        Slot {
            value: Mutex::new(Some(value)),
            what,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<T>> {
        lock(&self.value)
    }

    /// The error for a use after `close()`.
    fn closed_error(&self) -> PyErr {
        PyRuntimeError::new_err(format!("the {} is closed", self.what))
    }

    /// Takes the value out, for `close()`: the caller drops it after the lock is released (the
    /// drop may call the driver). `None` where it was closed already.
    fn take(&self) -> Option<T> {
        self.lock().take()
    }

    fn is_closed(&self) -> bool {
        self.lock().is_none()
    }
}

impl<T: Clone> Slot<T> {
    /// The open value (a clone: a reference count), or the error for a closed one.
    fn get(&self) -> PyResult<T> {
        self.lock().clone().ok_or_else(|| self.closed_error())
    }
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
    /// `memory_resource`, made on first use: the same object every time.
    memory_resource: GILOnceCell<Py<PyDeviceMemoryResource>>,
}

impl PyDevice {
    /// The device's default memory resource, as a `DeviceMemoryResource` made once.
    fn memory_resource(&self, py: Python<'_>) -> PyResult<Py<PyDeviceMemoryResource>> {
        self.memory_resource
            .get_or_try_init(py, || {
                let resource = self.device.memory_resource().or_py(py)?;
                Py::new(
                    py,
                    PyDeviceMemoryResource {
                        resource,
                        device: self.device,
                    },
                )
            })
            .map(|r| r.clone_ref(py))
    }
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
            let made = Py::new(
                py,
                PyDevice {
                    device,
                    memory_resource: GILOnceCell::new(),
                },
            )?;
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

    /// The device's default memory resource (its default memory pool), a
    /// `DeviceMemoryResource`; the same object every time.
    #[getter(memory_resource)]
    fn get_memory_resource(&self, py: Python<'_>) -> PyResult<Py<PyDeviceMemoryResource>> {
        self.memory_resource(py)
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
    stream: Slot<cuda_core::Stream>,
}

impl PyStream {
    fn wrap(stream: cuda_core::Stream) -> PyStream {
        PyStream {
            stream: Slot::new("Stream", stream),
        }
    }

    /// The open stream (a clone: a reference count), or the error for a closed one.
    fn get(&self) -> PyResult<cuda_core::Stream> {
        self.stream.get()
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
        let taken = self.stream.take();
        drop(taken);
    }

    /// Whether the stream is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.stream.is_closed()
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
struct PyEvent {
    /// Shared so that a wait can go on without the lock while another thread closes it.
    event: Slot<Arc<cuda_core::Event>>,
}

impl PyEvent {
    fn wrap(event: cuda_core::Event) -> PyEvent {
        PyEvent {
            event: Slot::new("Event", Arc::new(event)),
        }
    }

    fn get(&self) -> PyResult<Arc<cuda_core::Event>> {
        self.event.get()
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
        let taken = self.event.take();
        drop(taken);
    }

    /// Whether the event is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.event.is_closed()
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

// ---- memory ----------------------------------------------------------------------------------

/// The stream an argument names: a `Stream` (open), for `what` in the error.
fn stream_arg(stream: &Bound<'_, PyAny>, what: &str) -> PyResult<cuda_core::Stream> {
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
struct PyDeviceMemoryResource {
    resource: Arc<dyn cuda_core::MemoryResource>,
    device: cuda_core::Device,
}

#[pymethods]
impl PyDeviceMemoryResource {
    #[new]
    #[pyo3(signature = (device_id, options = None))]
    fn new(
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
    fn allocate(
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
    fn device_id(&self) -> usize {
        self.device.ordinal()
    }

    /// Whether the memory is accessible from the device (True).
    #[getter]
    fn is_device_accessible(&self) -> bool {
        self.resource.is_device_accessible()
    }

    /// Whether the memory is accessible from the host (False for device memory).
    #[getter]
    fn is_host_accessible(&self) -> bool {
        self.resource.is_host_accessible()
    }

    fn __repr__(&self) -> String {
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
struct PyBuffer {
    buffer: Slot<cuda_core::Buffer>,
    resource: Py<PyDeviceMemoryResource>,
}

impl PyBuffer {
    fn wrap(buffer: cuda_core::Buffer, resource: Py<PyDeviceMemoryResource>) -> PyBuffer {
        PyBuffer {
            buffer: Slot::new("Buffer", buffer),
            resource,
        }
    }

    /// Runs `f` on the open buffer; the error for a closed one.
    fn with<T>(&self, f: impl FnOnce(&mut cuda_core::Buffer) -> PyResult<T>) -> PyResult<T> {
        match self.buffer.lock().as_mut() {
            Some(buffer) => f(buffer),
            None => Err(self.buffer.closed_error()),
        }
    }
}

/// Copies `src` into `dst` on `stream`, two distinct open buffers, their locks taken in address
/// order.
fn copy_between(
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
    fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Buffer objects cannot be made directly: use DeviceMemoryResource.allocate()",
        ))
    }

    /// The device address of the memory, as an int.
    #[getter]
    fn handle(&self) -> PyResult<u64> {
        self.with(|b| Ok(b.ptr().0))
    }

    /// The size in bytes.
    #[getter]
    fn size(&self) -> PyResult<usize> {
        self.with(|b| Ok(b.size()))
    }

    /// The ordinal of the memory's device (None for host memory).
    #[getter]
    fn device_id(&self) -> PyResult<Option<usize>> {
        self.with(|b| Ok(b.device().map(|d| d.ordinal())))
    }

    /// The memory resource the buffer was allocated from.
    #[getter]
    fn memory_resource(&self, py: Python<'_>) -> Py<PyDeviceMemoryResource> {
        self.resource.clone_ref(py)
    }

    /// Whether the memory is accessible from the device.
    #[getter]
    fn is_device_accessible(&self) -> PyResult<bool> {
        self.with(|b| Ok(b.is_device_accessible()))
    }

    /// Whether the memory is accessible from the host.
    #[getter]
    fn is_host_accessible(&self) -> PyResult<bool> {
        self.with(|b| Ok(b.is_host_accessible()))
    }

    /// Frees the memory, in order on `stream` (the stream it was allocated on when None).
    /// Closing twice is harmless.
    #[pyo3(signature = (stream = None))]
    fn close(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
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
    fn closed(&self) -> bool {
        self.buffer.is_closed()
    }

    /// Copies this buffer into `dst` (a Buffer of the same size) in order on `stream`, and
    /// returns `dst`; with `dst=None`, into a new buffer allocated from this one's memory
    /// resource on `stream`.
    #[pyo3(signature = (dst = None, *, stream))]
    fn copy_to(
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
    fn copy_from(
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
    fn fill(
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

    fn __repr__(&self) -> String {
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
    module.add_class::<PyDeviceMemoryResource>()?;
    module.add_class::<PyBuffer>()?;
    module.add("ComputeCapability", compute_capability_type(py)?)?;
    module.add_function(wrap_pyfunction!(_num_devices, module)?)?;
    module.add_function(wrap_pyfunction!(_driver_version, module)?)?;
    Ok(())
}
