//! `Device`.

use std::cell::RefCell;

use crate::errors::*;
use crate::memory::*;
use crate::options::*;
use crate::stream::*;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

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
pub(crate) struct PyDevice {
    pub(crate) device: cuda_core::Device,
    /// `memory_resource`, made on first use: the same object every time.
    pub(crate) memory_resource: GILOnceCell<Py<PyDeviceMemoryResource>>,
}

impl PyDevice {
    /// The device's default memory resource, as a `DeviceMemoryResource` made once.
    pub(crate) fn memory_resource(&self, py: Python<'_>) -> PyResult<Py<PyDeviceMemoryResource>> {
        self.memory_resource
            .get_or_try_init(py, || {
                let resource = self.device.memory_resource().or_py(py)?;
                Py::new(
                    py,
                    PyDeviceMemoryResource::of_default(self.device, resource),
                )
            })
            .map(|r| r.clone_ref(py))
    }
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (device_id = None))]
    pub(crate) fn new(py: Python<'_>, device_id: Option<i64>) -> PyResult<Py<PyDevice>> {
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
    pub(crate) fn device_id(&self) -> usize {
        self.device.ordinal()
    }

    /// The device's name, as the driver gives it.
    #[getter]
    pub(crate) fn name(&self, py: Python<'_>) -> PyResult<String> {
        self.device.name().or_py(py)
    }

    /// The compute capability, a named tuple `ComputeCapability(major, minor)`.
    #[getter]
    pub(crate) fn compute_capability<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (major, minor) = self.device.compute_capability().or_py(py)?;
        compute_capability_type(py)?.call1((major, minor))
    }

    /// The architecture as NVRTC spells it after `sm_`: `"90"` for compute capability 9.0.
    #[getter]
    pub(crate) fn arch(&self, py: Python<'_>) -> PyResult<String> {
        self.device.arch().or_py(py)
    }

    /// Makes the device's primary context current on the calling thread and returns None; or,
    /// given `ctx` (a `Context` of this device, such as a green context), makes `ctx` current
    /// instead and returns the context it replaced (None where that is not one made current
    /// through this package).
    #[pyo3(signature = (ctx = None))]
    pub(crate) fn set_current(
        &self,
        py: Python<'_>,
        ctx: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<crate::context::PyContext>>> {
        if let Some(ctx) = ctx.filter(|c| !c.is_none()) {
            return crate::context::set_current(py, &self.device, ctx);
        }
        self.device.set_current().or_py(py)?;
        crate::context::note_primary_set(self.device);
        Ok(None)
    }

    /// A new green context on SM groups of this device: `options` is a `ContextOptions` (or a
    /// dict of its fields) naming at least one `SMResource` from `Device.resources.sm.split()`.
    /// The context is not made current.
    #[pyo3(signature = (options = None))]
    pub(crate) fn create_context(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::context::PyContext> {
        crate::context::create_context(py, &self.device, options)
    }

    /// The device's primary context, as a `Context`.
    #[getter]
    pub(crate) fn context(&self, py: Python<'_>) -> PyResult<crate::context::PyContext> {
        crate::context::primary_context(py, &self.device)
    }

    /// The device's hardware resources (its SMs), for green contexts.
    #[getter]
    pub(crate) fn resources(&self) -> crate::context::PyDeviceResources {
        crate::context::device_resources(&self.device)
    }

    /// The device's attributes, a `DeviceProperties` (each read once, then cached).
    #[getter]
    pub(crate) fn properties(&self) -> crate::properties::PyDeviceProperties {
        crate::properties::PyDeviceProperties::new(self.device)
    }

    /// This device as NVML sees it, a `cudacore_rs.system.Device` (matched by UUID). Raises
    /// `cudacore_rs.system.LibraryNotFoundError` where NVML cannot be loaded.
    pub(crate) fn to_system_device(
        &self,
        py: Python<'_>,
    ) -> PyResult<crate::system::PySystemDevice> {
        crate::system::system_device_of(py, &self.device)
    }

    /// Waits until all work queued on the device's primary context is done, without holding
    /// the GIL.
    pub(crate) fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let device = self.device;
        py.allow_threads(|| device.sync()).or_py(py)
    }

    /// A new stream of the device. `options` is a `StreamOptions`, a dict of its fields, or
    /// None for the defaults. Given `obj`, an object with the `__cuda_stream__` protocol (a
    /// CuPy or PyTorch stream), wraps its stream instead, without owning it, and holds `obj`
    /// alive while the result lives (see `Stream.from_handle`).
    #[pyo3(signature = (obj = None, options = None))]
    pub(crate) fn create_stream(
        &self,
        py: Python<'_>,
        obj: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyStream> {
        if let Some(obj) = obj.filter(|o| !o.is_none()) {
            return crate::context::stream_of_object(py, obj);
        }
        let options: PyStreamOptions = options_of(py, options)?;
        let stream = self.device.create_stream(options.to_rust()).or_py(py)?;
        Ok(PyStream::wrap(stream))
    }

    /// The device's default stream: the legacy default stream, or the calling thread's
    /// per-thread default stream where `CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1` (cuda.core's
    /// variable) or `CUDA_CORE_PER_THREAD_DEFAULT_STREAM=1` is set. Not owned: `close()` on it
    /// does nothing to the driver's stream.
    #[getter]
    pub(crate) fn default_stream(&self, py: Python<'_>) -> PyResult<PyStream> {
        let stream = match per_thread_by_cuda_core() {
            Some(Ok(true)) => cuda_core::Stream::per_thread_default(self.device),
            Some(Ok(false)) => cuda_core::Stream::legacy(self.device),
            None => self.device.default_stream(),
            Some(Err(value)) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM={value:?}: use 0 or 1"
                )))
            }
        }
        .or_py(py)?;
        Ok(PyStream::wrap(stream))
    }

    /// A new event of the device. `options` is an `EventOptions`, a dict of its fields, or None
    /// for the defaults.
    #[pyo3(signature = (options = None))]
    pub(crate) fn create_event(
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
    pub(crate) fn get_memory_resource(
        &self,
        py: Python<'_>,
    ) -> PyResult<Py<PyDeviceMemoryResource>> {
        self.memory_resource(py)
    }

    pub(crate) fn __int__(&self) -> usize {
        self.device.ordinal()
    }

    pub(crate) fn __repr__(&self) -> String {
        format!("<Device {}>", self.device.ordinal())
    }
}

/// cuda.core's `CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`, read once: `None` where unset (the
/// Rust crate's own variable then decides), `Some(Ok(on))` for `0`, `1` or empty, `Some(Err)`
/// with any other value.
fn per_thread_by_cuda_core() -> Option<Result<bool, String>> {
    static CHOICE: std::sync::OnceLock<Option<Result<bool, String>>> = std::sync::OnceLock::new();
    CHOICE
        .get_or_init(|| {
            let value = std::env::var("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM").ok()?;
            Some(match value.trim() {
                "" | "0" => Ok(false),
                "1" => Ok(true),
                _ => Err(value),
            })
        })
        .clone()
}
