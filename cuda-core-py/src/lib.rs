//! `cudacore_rs._native`: the Python extension module behind the `cudacore_rs` package, which
//! exposes cuda-core under the names and behaviour of NVIDIA's `cuda.core` 1.2 for what it
//! covers (devices, streams, events, their options, the devices' default memory resources and
//! their buffers, driver errors and the `system` queries).
//!
//! Every Python object owns what it wraps: a `Stream`, `Event` or `Buffer` releases its handle
//! (or memory) on `close()` or when it is collected, and a closed one raises `RuntimeError` when
//! used. Waits (`sync()`) release the GIL. Nothing here panics: every failure becomes a Python
//! exception.

mod cache;
mod context;
mod device;
mod dlpack;
mod error_kinds;
mod errors;
mod host;
mod launch;
mod memory;
mod options;
mod program;
mod properties;
mod resources;
mod stream;
mod system;
mod view;

use pyo3::prelude::*;

/// The module `cudacore_rs._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("CUDAError", py.get_type::<errors::CUDAError>())?;
    module.add_class::<device::PyDevice>()?;
    module.add_class::<stream::PyStream>()?;
    module.add_class::<stream::PyEvent>()?;
    module.add_class::<options::PyStreamOptions>()?;
    module.add_class::<options::PyEventOptions>()?;
    module.add_class::<memory::PyDeviceMemoryResource>()?;
    module.add_class::<memory::PyBuffer>()?;
    module.add("ComputeCapability", errors::compute_capability_type(py)?)?;
    system::register(module)?;
    context::register(module)?;
    properties::register(module)?;
    error_kinds::register(module)?;
    program::register(module)?;
    launch::register(module)?;
    cache::register(module)?;
    resources::register(module)?;
    view::register(module)?;
    Ok(())
}
