//! The kinds of `CUDAError`: one subclass per family of driver codes (`CUDAOutOfMemoryError`,
//! `CUDAInvalidValueError`, ...), and the NVML errors of `cudacore_rs.system`.
//!
//! Every class is made once, with `type(name, bases, namespace)`, so that a class may have two
//! bases: `CUDANotSupportedError` is a `CUDAError` and a `NotImplementedError` (cuda.core raises
//! `NotImplementedError` where the driver is too old for a feature), and
//! `system.LibraryNotFoundError` a `CUDAError` and a `RuntimeError` (what cuda.core raises
//! where NVML is not there).

use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::errors::CUDAError;

/// A kind of driver error: its class name, the `CUresult` codes it covers, and its docstring.
struct Kind {
    name: &'static str,
    codes: &'static [i32],
    doc: &'static str,
}

/// The driver error kinds, by code. A code no kind lists raises plain `CUDAError`.
const KINDS: &[Kind] = &[
    Kind {
        name: "CUDAInvalidValueError",
        codes: &[1],
        doc: "The driver refused an argument (CUDA_ERROR_INVALID_VALUE).",
    },
    Kind {
        name: "CUDAOutOfMemoryError",
        codes: &[2],
        doc: "The device (or host) is out of the memory asked for (CUDA_ERROR_OUT_OF_MEMORY).",
    },
    Kind {
        name: "CUDANotInitializedError",
        codes: &[3, 4],
        doc: "The driver is not initialised, or is shutting down \
              (CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_DEINITIALIZED).",
    },
    Kind {
        name: "CUDANoDeviceError",
        codes: &[100],
        doc: "No CUDA device is there (CUDA_ERROR_NO_DEVICE).",
    },
    Kind {
        name: "CUDAInvalidDeviceError",
        codes: &[101],
        doc: "A device ordinal the driver does not have (CUDA_ERROR_INVALID_DEVICE).",
    },
    Kind {
        name: "CUDAInvalidContextError",
        codes: &[201, 202, 709],
        doc: "No usable context (CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_CONTEXT_ALREADY_CURRENT, \
              CUDA_ERROR_CONTEXT_IS_DESTROYED).",
    },
    Kind {
        name: "CUDAInvalidHandleError",
        codes: &[400],
        doc: "A handle the driver does not know, or one already destroyed \
              (CUDA_ERROR_INVALID_HANDLE).",
    },
    Kind {
        name: "CUDANotFoundError",
        codes: &[500],
        doc: "A named symbol or kernel was not found (CUDA_ERROR_NOT_FOUND).",
    },
    Kind {
        name: "CUDANotReadyError",
        codes: &[600],
        doc: "Work queued is not done yet (CUDA_ERROR_NOT_READY).",
    },
    Kind {
        name: "CUDAIllegalAddressError",
        codes: &[700, 716, 717],
        doc: "A kernel accessed memory it may not (CUDA_ERROR_ILLEGAL_ADDRESS, \
              CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_INVALID_ADDRESS_SPACE). The context \
              cannot be used after it.",
    },
    Kind {
        name: "CUDALaunchError",
        codes: &[701, 702, 719, 720],
        doc: "A kernel launch failed: too many resources asked for, a timeout, a fault \
              (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_TIMEOUT, \
              CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).",
    },
    Kind {
        name: "CUDANotSupportedError",
        codes: &[801],
        doc: "The device or driver does not support the operation (CUDA_ERROR_NOT_SUPPORTED), \
              or the driver lacks the function it needs (then `code` is None). Also a \
              NotImplementedError, as cuda.core raises where the driver is too old.",
    },
    Kind {
        name: "CUDAStreamCaptureError",
        codes: &[900, 901, 902, 903, 904, 905, 906, 907, 908],
        doc: "An operation refused because of a stream capture, or a capture invalidated \
              (CUDA_ERROR_STREAM_CAPTURE_*, CUDA_ERROR_CAPTURED_EVENT).",
    },
];

/// The index of `CUDANotSupportedError` in `KINDS`.
const NOT_SUPPORTED: usize = 11;

/// The NVML errors of `cudacore_rs.system`: name, extra base (besides the NVML base), doc.
const NVML_BASE_DOC: &str = "An NVML (NVIDIA Management Library) error: the base of \
    cudacore_rs.system's errors. A CUDAError whose `call` names the NVML query; `name` and \
    `code` are None.";
const NVML_NOT_FOUND_DOC: &str = "NVML (libnvidia-ml.so.1) could not be loaded: the system \
    queries cannot run. The message lists each library tried and why it failed. Also a \
    RuntimeError, as cuda.core raises where NVML is not available.";
const NVML_NOT_SUPPORTED_DOC: &str = "The GPU or driver does not support this NVML query.";

struct Classes {
    kinds: Vec<Py<PyType>>,
    nvml: Py<PyType>,
    nvml_not_found: Py<PyType>,
    nvml_not_supported: Py<PyType>,
}

/// Makes `class name(*bases)` with a docstring, in `module`.
fn make_class(
    py: Python<'_>,
    name: &str,
    module: &str,
    bases: Vec<Bound<'_, PyAny>>,
    doc: &str,
) -> PyResult<Py<PyType>> {
    let namespace = PyDict::new(py);
    namespace.set_item("__doc__", doc)?;
    namespace.set_item("__module__", module)?;
    let bases = PyTuple::new(py, bases)?;
    let made = py
        .get_type::<PyType>()
        .call1((name, bases, namespace))?
        .downcast_into::<PyType>()?;
    Ok(made.unbind())
}

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    static CLASSES: GILOnceCell<Classes> = GILOnceCell::new();
    CLASSES.get_or_try_init(py, || {
        let base = py.get_type::<CUDAError>().into_any();
        let mut kinds = Vec::with_capacity(KINDS.len());
        for (index, kind) in KINDS.iter().enumerate() {
            let mut bases = vec![base.clone()];
            if index == NOT_SUPPORTED {
                bases.push(py.get_type::<PyNotImplementedError>().into_any());
            }
            kinds.push(make_class(py, kind.name, "cudacore_rs", bases, kind.doc)?);
        }
        let module = "cudacore_rs.system";
        let nvml = make_class(py, "NvmlError", module, vec![base.clone()], NVML_BASE_DOC)?;
        let nvml_not_found = make_class(
            py,
            "LibraryNotFoundError",
            module,
            vec![
                nvml.bind(py).clone().into_any(),
                py.get_type::<PyRuntimeError>().into_any(),
            ],
            NVML_NOT_FOUND_DOC,
        )?;
        let nvml_not_supported = make_class(
            py,
            "NotSupportedError",
            module,
            vec![nvml.bind(py).clone().into_any()],
            NVML_NOT_SUPPORTED_DOC,
        )?;
        Ok(Classes {
            kinds,
            nvml,
            nvml_not_found,
            nvml_not_supported,
        })
    })
}

/// The class a cuda-core error is raised as: a driver code's kind, `CUDANotSupportedError`
/// for a function the driver lacks, the NVML classes for NVML's errors, else `CUDAError`.
pub(crate) fn class_of<'py>(
    py: Python<'py>,
    error: &cuda_core::Error,
) -> PyResult<Bound<'py, PyType>> {
    let classes = classes(py)?;
    let chosen = match error {
        cuda_core::Error::Driver { code, .. } => KINDS
            .iter()
            .position(|kind| kind.codes.contains(&code.0))
            .and_then(|index| classes.kinds.get(index)),
        cuda_core::Error::NotSupported { .. } => classes.kinds.get(NOT_SUPPORTED),
        cuda_core::Error::NvmlNotFound { .. } => Some(&classes.nvml_not_found),
        cuda_core::Error::SystemNotSupported { .. } => Some(&classes.nvml_not_supported),
        cuda_core::Error::Nvml { .. } => Some(&classes.nvml),
        _ => None,
    };
    Ok(match chosen {
        Some(class) => class.bind(py).clone(),
        None => py.get_type::<CUDAError>(),
    })
}

/// Adds the error kinds to the module: the driver kinds under their names, the NVML ones
/// under `_NvmlError`, `_LibraryNotFoundError` and `_NotSupportedError` (re-exported by
/// `cudacore_rs.system` under cuda.core's names).
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let classes = classes(py)?;
    for (kind, class) in KINDS.iter().zip(&classes.kinds) {
        module.add(kind.name, class.bind(py))?;
    }
    module.add("_NvmlError", classes.nvml.bind(py))?;
    module.add("_LibraryNotFoundError", classes.nvml_not_found.bind(py))?;
    module.add("_NotSupportedError", classes.nvml_not_supported.bind(py))?;
    Ok(())
}
