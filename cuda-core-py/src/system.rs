//! The `system` module's queries.

use crate::errors::*;
use pyo3::prelude::*;

/// The number of CUDA devices the driver sees.
#[pyfunction]
pub(crate) fn _num_devices(py: Python<'_>) -> PyResult<usize> {
    cuda_core::Device::count().or_py(py)
}

/// The driver's CUDA version, `(major, minor)`.
#[pyfunction]
pub(crate) fn _driver_version(py: Python<'_>) -> PyResult<(i32, i32)> {
    let version = cuda_core::info::driver_info().or_py(py)?.version;
    Ok((version.major(), version.minor()))
}

/// Adds the system queries to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(_num_devices, module)?)?;
    module.add_function(wrap_pyfunction!(_driver_version, module)?)?;
    Ok(())
}
