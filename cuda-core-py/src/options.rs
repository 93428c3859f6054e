//! `StreamOptions` and `EventOptions`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Options for `Device.create_stream`.
///
/// nonblocking: the stream does not synchronise with the legacy default (NULL) stream
/// (default True).
/// priority: the stream's priority, lower numbers running first, within the device's range;
/// None (the default) is the default priority.
#[pyclass(name = "StreamOptions", module = "cudacore_rs", eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct PyStreamOptions {
    /// Whether the stream does not synchronise with the legacy default stream.
    #[pyo3(get, set)]
    pub(crate) nonblocking: bool,
    /// The stream's priority (lower runs first), or None for the default.
    #[pyo3(get, set)]
    pub(crate) priority: Option<i32>,
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
    pub(crate) fn new(nonblocking: bool, priority: Option<i32>) -> Self {
        PyStreamOptions {
            nonblocking,
            priority,
        }
    }

    pub(crate) fn __repr__(&self) -> String {
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
    pub(crate) fn to_rust(&self) -> cuda_core::StreamOptions {
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
pub(crate) struct PyEventOptions {
    /// Whether the event records timestamps.
    #[pyo3(get, set)]
    pub(crate) timing_enabled: bool,
    /// Whether `Event.sync()` blocks the thread instead of spinning.
    #[pyo3(get, set)]
    pub(crate) blocking_sync: bool,
    /// Whether other processes can open the event.
    #[pyo3(get, set)]
    pub(crate) ipc_enabled: bool,
}

#[pymethods]
impl PyEventOptions {
    #[new]
    #[pyo3(signature = (timing_enabled = false, blocking_sync = false, ipc_enabled = false))]
    pub(crate) fn new(timing_enabled: bool, blocking_sync: bool, ipc_enabled: bool) -> Self {
        PyEventOptions {
            timing_enabled,
            blocking_sync,
            ipc_enabled,
        }
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "EventOptions(timing_enabled={}, blocking_sync={}, ipc_enabled={})",
            py_bool(self.timing_enabled),
            py_bool(self.blocking_sync),
            py_bool(self.ipc_enabled)
        )
    }
}

impl PyEventOptions {
    pub(crate) fn to_rust(&self) -> PyResult<cuda_core::EventOptions> {
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

pub(crate) fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
}
