//! What every class shares: the driver error as a Python exception, the slot that owns a
//! handle until `close()`, and how options arguments are read.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyDict;

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
pub(crate) fn to_py(py: Python<'_>, error: cuda_core::Error) -> PyErr {
    let message = error.to_string();
    let (name, code, call) = match &error {
        cuda_core::Error::Driver {
            call, code, name, ..
        } => (Some(*name), Some(code.0), Some(*call)),
        cuda_core::Error::InvalidArgument { .. } => return PyValueError::new_err(message),
        cuda_core::Error::NotSupported { function, .. } => (None, None, Some(*function)),
        cuda_core::Error::Nvml { query, .. } | cuda_core::Error::SystemNotSupported { query } => {
            (None, None, Some(*query))
        }
        _ => (None, None, None),
    };
    // The driver code's kind (a CUDAError subclass), see error_kinds.rs.
    let class = match crate::error_kinds::class_of(py, &error) {
        Ok(class) => class,
        Err(e) => return e,
    };
    let exception = match class.call1((message.clone(),)) {
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
pub(crate) trait OrPy<T> {
    fn or_py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> OrPy<T> for cuda_core::Result<T> {
    fn or_py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// A lock that a panic elsewhere left poisoned still guards a plain `Option`: use it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a Python object owns (a stream, an event, a buffer): held until `close()` takes it out;
/// once taken, any other use raises `RuntimeError` naming `what`.
pub(crate) struct Slot<T> {
    pub(crate) value: Mutex<Option<T>>,
    what: &'static str,
}

impl<T> Slot<T> {
    pub(crate) fn new(what: &'static str, value: T) -> Slot<T> {
        Slot {
            value: Mutex::new(Some(value)),
            what,
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Option<T>> {
        lock(&self.value)
    }

    /// The error for a use after `close()`.
    pub(crate) fn closed_error(&self) -> PyErr {
        PyRuntimeError::new_err(format!("the {} is closed", self.what))
    }

    /// Takes the value out, for `close()`: the caller drops it after the lock is released (the
    /// drop may call the driver). `None` where it was closed already.
    pub(crate) fn take(&self) -> Option<T> {
        self.lock().take()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().is_none()
    }
}

impl<T> Slot<T> {
    /// Runs `f` on the open value under the lock (no clone: for calls that do not block and do
    /// not release the GIL, which another thread waiting for this lock may hold); the error
    /// for a closed one.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> PyResult<R>) -> PyResult<R> {
        match self.lock().as_ref() {
            Some(value) => f(value),
            None => Err(self.closed_error()),
        }
    }
}

impl<T: Clone> Slot<T> {
    /// The open value (a clone: a reference count), or the error for a closed one.
    pub(crate) fn get(&self) -> PyResult<T> {
        self.lock().clone().ok_or_else(|| self.closed_error())
    }
}

/// `ComputeCapability`, the named tuple `(major, minor)` that `Device.compute_capability`
/// returns, made once.
pub(crate) fn compute_capability_type(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
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
pub(crate) fn options_of<T>(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<T>
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
