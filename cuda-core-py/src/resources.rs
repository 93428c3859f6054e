//! The memory resources besides the device's default: `DeviceMemoryResourceOptions`,
//! `PinnedMemoryResource` and `ManagedMemoryResource` with their options, and the pools'
//! attributes (`_MemPoolAttributes`).

use std::sync::Arc;

use cuda_core::memory::{
    ManagedLocation, ManagedMemoryPool, ManagedMemoryPoolOptions, PinnedMemoryPool,
    PinnedMemoryPoolOptions,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::errors::*;
use crate::memory::{allocate_buffer, Held, PyBuffer};

/// The pool a resource is, for its attributes and handle.
#[derive(Clone)]
pub(crate) enum PoolRef {
    Device(Arc<cuda_core::DeviceMemoryResource>),
    Pinned(Arc<PinnedMemoryPool>),
    Managed(Arc<ManagedMemoryPool>),
}

/// `$pool.$call` on whichever pool kind `$self` holds (they share the attribute methods).
macro_rules! on_pool {
    ($self:expr, $pool:ident => $call:expr) => {
        match $self {
            PoolRef::Device($pool) => $call,
            PoolRef::Pinned($pool) => $call,
            PoolRef::Managed($pool) => $call,
        }
    };
}

impl PoolRef {
    pub(crate) fn handle(&self) -> usize {
        on_pool!(self, pool => pool.as_raw() as usize)
    }

    fn usage(&self, py: Python<'_>) -> PyResult<cuda_core::memory::PoolUsage> {
        on_pool!(self, pool => pool.usage()).or_py(py)
    }

    fn reuse(&self, py: Python<'_>) -> PyResult<cuda_core::memory::ReusePolicy> {
        on_pool!(self, pool => pool.reuse_policy()).or_py(py)
    }
}

/// A memory pool's attributes, as cuda.core's `_MemPoolAttributes` (a resource's
/// `attributes`): each property is read from the driver (`cuMemPoolGetAttribute`) when asked.
#[pyclass(name = "_MemPoolAttributes", module = "cudacore_rs", frozen)]
pub(crate) struct PyMemPoolAttributes {
    pub(crate) pool: PoolRef,
}

#[pymethods]
impl PyMemPoolAttributes {
    /// Whether memory freed on one stream is reused on another that waits for the free
    /// through events.
    #[getter]
    fn reuse_follow_event_dependencies(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.pool.reuse(py)?.follow_event_dependencies)
    }

    /// Whether completed frees are reused without dependencies between streams.
    #[getter]
    fn reuse_allow_opportunistic(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.pool.reuse(py)?.allow_opportunistic)
    }

    /// Whether the driver may insert stream dependencies to reuse memory.
    #[getter]
    fn reuse_allow_internal_dependencies(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.pool.reuse(py)?.allow_internal_dependencies)
    }

    /// How much reserved memory the pool keeps at a synchronisation, in bytes.
    #[getter]
    fn release_threshold(&self, py: Python<'_>) -> PyResult<u64> {
        on_pool!(&self.pool, pool => pool.release_threshold()).or_py(py)
    }

    /// The memory the pool has reserved now, in bytes.
    #[getter]
    fn reserved_mem_current(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.pool.usage(py)?.reserved_current)
    }

    /// The most memory the pool has reserved, in bytes.
    #[getter]
    fn reserved_mem_high(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.pool.usage(py)?.reserved_high)
    }

    /// The memory of the pool's live allocations now, in bytes.
    #[getter]
    fn used_mem_current(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.pool.usage(py)?.used_current)
    }

    /// The most memory the pool's live allocations have used, in bytes.
    #[getter]
    fn used_mem_high(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.pool.usage(py)?.used_high)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.pool.usage(py) {
            Ok(u) => format!(
                "_MemPoolAttributes(reserved_mem_current={}, reserved_mem_high={}, \
                 used_mem_current={}, used_mem_high={})",
                u.reserved_current, u.reserved_high, u.used_current, u.used_high
            ),
            Err(_) => "_MemPoolAttributes(<unreadable>)".to_owned(),
        }
    }
}

/// A `max_size` option: 0 for no limit, else the most bytes the pool may reserve.
fn max_size_of(max_size: i64) -> PyResult<Option<usize>> {
    match usize::try_from(max_size) {
        Ok(0) => Ok(None),
        Ok(size) => Ok(Some(size)),
        Err(_) => Err(PyValueError::new_err(format!(
            "max_size takes a size in bytes, 0 for the system's limit, got {max_size}"
        ))),
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn py_opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "None".to_owned(), T::to_string)
}

/// Options of a new `DeviceMemoryResource` pool, as cuda.core's.
///
/// ipc_enabled: other processes may import the pool and its buffers (default False).
/// max_size: the most bytes the pool may reserve; 0 (the default) for the system's limit.
#[pyclass(name = "DeviceMemoryResourceOptions", module = "cudacore_rs", eq)]
#[derive(Clone, Default, PartialEq)]
pub(crate) struct PyDeviceMemoryResourceOptions {
    /// Whether other processes may import the pool.
    #[pyo3(get, set)]
    pub(crate) ipc_enabled: bool,
    /// The most bytes the pool may reserve (0: the system's limit).
    #[pyo3(get, set)]
    pub(crate) max_size: i64,
}

#[pymethods]
impl PyDeviceMemoryResourceOptions {
    #[new]
    #[pyo3(signature = (ipc_enabled = false, max_size = 0))]
    fn new(ipc_enabled: bool, max_size: i64) -> Self {
        PyDeviceMemoryResourceOptions {
            ipc_enabled,
            max_size,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "DeviceMemoryResourceOptions(ipc_enabled={}, max_size={})",
            py_bool(self.ipc_enabled),
            self.max_size
        )
    }
}

impl PyDeviceMemoryResourceOptions {
    pub(crate) fn to_rust(&self) -> PyResult<cuda_core::DeviceMemoryResourceOptions> {
        let options =
            cuda_core::DeviceMemoryResourceOptions::default().with_shareable(self.ipc_enabled);
        Ok(match max_size_of(self.max_size)? {
            Some(size) => options.with_max_size(size),
            None => options,
        })
    }
}

/// Options of a new `PinnedMemoryResource` pool, as cuda.core's.
///
/// ipc_enabled: other processes may import the pool and its buffers (default False); the
/// driver shares only pools of a NUMA node, so with numa_id None the current device's host
/// NUMA node is used.
/// max_size: the most bytes the pool may reserve; 0 (the default) for the system's limit.
/// numa_id: the host NUMA node the memory comes from; None (the default) for host memory of
/// no particular node (drivers 13.0 and newer).
#[pyclass(name = "PinnedMemoryResourceOptions", module = "cudacore_rs", eq)]
#[derive(Clone, Default, PartialEq)]
pub(crate) struct PyPinnedMemoryResourceOptions {
    /// Whether other processes may import the pool.
    #[pyo3(get, set)]
    pub(crate) ipc_enabled: bool,
    /// The most bytes the pool may reserve (0: the system's limit).
    #[pyo3(get, set)]
    pub(crate) max_size: i64,
    /// The host NUMA node of the memory, or None.
    #[pyo3(get, set)]
    pub(crate) numa_id: Option<i64>,
}

#[pymethods]
impl PyPinnedMemoryResourceOptions {
    #[new]
    #[pyo3(signature = (ipc_enabled = false, max_size = 0, numa_id = None))]
    fn new(ipc_enabled: bool, max_size: i64, numa_id: Option<i64>) -> Self {
        PyPinnedMemoryResourceOptions {
            ipc_enabled,
            max_size,
            numa_id,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "PinnedMemoryResourceOptions(ipc_enabled={}, max_size={}, numa_id={})",
            py_bool(self.ipc_enabled),
            self.max_size,
            py_opt(&self.numa_id)
        )
    }
}

/// A NUMA node id argument.
fn numa_arg(id: i64, what: &str) -> PyResult<u32> {
    u32::try_from(id)
        .map_err(|_| PyValueError::new_err(format!("{what} takes a NUMA node id >= 0, got {id}")))
}

/// The current device's host NUMA node (`CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`).
fn host_numa_of(py: Python<'_>, device: cuda_core::Device) -> PyResult<u32> {
    let id = device.properties().host_numa_id().or_py(py)?;
    u32::try_from(id).map_err(|_| {
        PyValueError::new_err(format!(
            "device {} has no host NUMA node (host_numa_id {id}): give numa_id",
            device.ordinal()
        ))
    })
}

/// The device new host and managed pools are made through: the current one.
fn current_device(py: Python<'_>) -> PyResult<cuda_core::Device> {
    cuda_core::Device::current().or_py(py)
}

/// Page-locked host memory from a stream-ordered memory pool, as cuda.core's
/// `PinnedMemoryResource`: readable and writable by the host and by the device it is made
/// through (the current device). `PinnedMemoryResource(options=None)`: `options` is a
/// `PinnedMemoryResourceOptions`, a dict of its fields, or None for the defaults; each
/// resource makes a pool of its own (cuda-core has no handle on the driver's default host
/// pool), which `close()` gives up.
#[pyclass(name = "PinnedMemoryResource", module = "cudacore_rs", frozen)]
pub(crate) struct PyPinnedMemoryResource {
    held: Slot<Held>,
    device: cuda_core::Device,
    numa_id: Option<u32>,
    ipc: bool,
}

#[pymethods]
impl PyPinnedMemoryResource {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let options = options_of::<PyPinnedMemoryResourceOptions>(py, options)?;
        let max_size = max_size_of(options.max_size)?;
        let numa = options
            .numa_id
            .map(|id| numa_arg(id, "PinnedMemoryResourceOptions.numa_id"))
            .transpose()?;
        let device = current_device(py)?;
        let numa = match (numa, options.ipc_enabled) {
            (None, true) => Some(host_numa_of(py, device)?),
            (numa, _) => numa,
        };
        let mut rust = PinnedMemoryPoolOptions::default().with_shareable(options.ipc_enabled);
        if let Some(node) = numa {
            rust = rust.with_numa_node(node);
        }
        if let Some(size) = max_size {
            rust = rust.with_max_size(size);
        }
        let pool = PinnedMemoryPool::new(device, rust).or_py(py)?;
        let resource: Arc<dyn cuda_core::MemoryResource> = pool.clone();
        Ok(PyPinnedMemoryResource {
            held: Slot::new(
                "PinnedMemoryResource",
                Held {
                    resource,
                    pool: Some(PoolRef::Pinned(pool)),
                },
            ),
            device,
            numa_id: numa,
            ipc: options.ipc_enabled,
        })
    }

    /// Allocates `size` bytes (an int above 0) of pinned host memory in order on `stream`
    /// (the current device's default stream when None).
    #[pyo3(signature = (size, stream = None))]
    fn allocate(
        slf: &Bound<'_, Self>,
        size: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBuffer> {
        let this = slf.get();
        let held = this.held.get()?;
        let owner = slf.clone().into_any().unbind();
        allocate_buffer(slf.py(), owner, &held.resource, this.device, size, stream)
    }

    /// Gives up the pool: it is destroyed once its last buffer is freed, and `allocate`
    /// raises from now on. Closing twice is harmless.
    fn close(&self) {
        drop(self.held.take());
    }

    /// Whether `close()` gave the pool up.
    #[getter]
    fn closed(&self) -> bool {
        self.held.is_closed()
    }

    /// -1: pinned memory is host memory, of no device.
    #[getter]
    fn device_id(&self) -> i64 {
        -1
    }

    /// The host NUMA node the memory comes from, or -1 for no particular node.
    #[getter]
    fn numa_id(&self) -> i64 {
        self.numa_id.map_or(-1, i64::from)
    }

    /// True: the device can access the memory.
    #[getter]
    fn is_device_accessible(&self) -> bool {
        true
    }

    /// True: the host can access the memory.
    #[getter]
    fn is_host_accessible(&self) -> bool {
        true
    }

    /// False: pinned memory is not managed memory.
    #[getter]
    fn is_managed(&self) -> bool {
        false
    }

    /// True: the pool is this resource's own.
    #[getter]
    fn is_handle_owned(&self) -> bool {
        true
    }

    /// Whether other processes may import the pool.
    #[getter]
    fn is_ipc_enabled(&self) -> bool {
        self.ipc
    }

    /// Whether this is another process's pool mapped here (never: importing is not supported).
    #[getter]
    fn is_mapped(&self) -> bool {
        false
    }

    /// The pool's handle (`CUmemoryPool`) as an int.
    #[getter]
    fn handle(&self) -> PyResult<Option<usize>> {
        Ok(self.held.get()?.pool.map(|p| p.handle()))
    }

    /// The pool's attributes, read from the driver at each access.
    #[getter]
    fn attributes(&self) -> PyResult<PyMemPoolAttributes> {
        pool_attributes(&self.held)
    }

    fn __repr__(&self) -> String {
        let closed = if self.held.is_closed() {
            " (closed)"
        } else {
            ""
        };
        format!(
            "<PinnedMemoryResource numa_id={}{closed}>",
            self.numa_id.map_or(-1, i64::from)
        )
    }
}

fn pool_attributes(held: &Slot<Held>) -> PyResult<PyMemPoolAttributes> {
    match held.get()?.pool {
        Some(pool) => Ok(PyMemPoolAttributes { pool }),
        None => Err(PyTypeError::new_err("this resource is not a memory pool")),
    }
}

/// Options of a new `ManagedMemoryResource` pool, as cuda.core's.
///
/// preferred_location: where the driver prefers to keep the memory; its meaning depends on
/// preferred_location_type. With preferred_location_type None (the default): a device ordinal,
/// -1 for the host, or None for no preference. With preferred_location_type "device": a
/// device ordinal; "host": None; "host_numa": a NUMA node id, or None for the current
/// device's host NUMA node.
#[pyclass(name = "ManagedMemoryResourceOptions", module = "cudacore_rs", eq)]
#[derive(Clone, Default, PartialEq)]
pub(crate) struct PyManagedMemoryResourceOptions {
    /// A device ordinal, NUMA node id, -1 (host, without a type) or None.
    #[pyo3(get, set)]
    pub(crate) preferred_location: Option<i64>,
    /// "device", "host", "host_numa", or None.
    #[pyo3(get, set)]
    pub(crate) preferred_location_type: Option<String>,
}

#[pymethods]
impl PyManagedMemoryResourceOptions {
    #[new]
    #[pyo3(signature = (preferred_location = None, preferred_location_type = None))]
    fn new(
        preferred_location: Option<i64>,
        preferred_location_type: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let preferred_location_type = match preferred_location_type.filter(|t| !t.is_none()) {
            // A str, or an enum member whose value is one.
            Some(t) => Some(match t.extract::<String>() {
                Ok(s) => s,
                Err(_) => t.getattr("value")?.extract::<String>()?,
            }),
            None => None,
        };
        Ok(PyManagedMemoryResourceOptions {
            preferred_location,
            preferred_location_type,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "ManagedMemoryResourceOptions(preferred_location={}, preferred_location_type={})",
            py_opt(&self.preferred_location),
            self.preferred_location_type
                .as_ref()
                .map_or_else(|| "None".to_owned(), |t| format!("'{t}'"))
        )
    }
}

impl PyManagedMemoryResourceOptions {
    fn location(&self, py: Python<'_>) -> PyResult<ManagedLocation> {
        let device = |id: i64| -> PyResult<ManagedLocation> {
            let count = cuda_core::Device::count().or_py(py)?;
            match usize::try_from(id) {
                Ok(ordinal) if ordinal < count => Ok(ManagedLocation::Device(
                    cuda_core::Device::new(ordinal).or_py(py)?,
                )),
                _ => Err(PyValueError::new_err(format!(
                    "preferred_location {id} is no device ordinal (0 to {count} excluded)"
                ))),
            }
        };
        match (
            self.preferred_location_type.as_deref(),
            self.preferred_location,
        ) {
            (None, None) => Ok(ManagedLocation::None),
            (None, Some(-1)) => Ok(ManagedLocation::Host),
            (None | Some("device"), Some(id)) => device(id),
            (Some("device"), None) => Err(PyValueError::new_err(
                "preferred_location_type 'device' takes a device ordinal as preferred_location",
            )),
            (Some("host"), None) => Ok(ManagedLocation::Host),
            (Some("host"), Some(id)) => Err(PyValueError::new_err(format!(
                "preferred_location_type 'host' takes preferred_location None, got {id}"
            ))),
            (Some("host_numa"), Some(id)) => Ok(ManagedLocation::HostNuma(numa_arg(
                id,
                "preferred_location",
            )?)),
            (Some("host_numa"), None) => Ok(ManagedLocation::HostNuma(host_numa_of(
                py,
                current_device(py)?,
            )?)),
            (Some(other), _) => Err(PyValueError::new_err(format!(
                "preferred_location_type takes 'device', 'host', 'host_numa' or None, got \
                 '{other}'"
            ))),
        }
    }
}

/// Managed (unified) memory from a stream-ordered memory pool, as cuda.core's
/// `ManagedMemoryResource`: accessible from the host and the devices, migrating between them
/// (drivers 13.0 and newer, devices with concurrent managed access).
/// `ManagedMemoryResource(options=None)`: `options` is a `ManagedMemoryResourceOptions`, a dict
/// of its fields, or None for the defaults; each resource makes a pool of its own (through the
/// current device), which `close()` gives up.
#[pyclass(name = "ManagedMemoryResource", module = "cudacore_rs", frozen)]
pub(crate) struct PyManagedMemoryResource {
    held: Slot<Held>,
    device: cuda_core::Device,
    location: ManagedLocation,
}

#[pymethods]
impl PyManagedMemoryResource {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let options = options_of::<PyManagedMemoryResourceOptions>(py, options)?;
        let location = options.location(py)?;
        let device = current_device(py)?;
        let pool = ManagedMemoryPool::new(
            device,
            ManagedMemoryPoolOptions::default().with_preferred_location(location),
        )
        .or_py(py)?;
        let resource: Arc<dyn cuda_core::MemoryResource> = pool.clone();
        Ok(PyManagedMemoryResource {
            held: Slot::new(
                "ManagedMemoryResource",
                Held {
                    resource,
                    pool: Some(PoolRef::Managed(pool)),
                },
            ),
            device,
            location,
        })
    }

    /// Allocates `size` bytes (an int above 0) of managed memory in order on `stream` (the
    /// current device's default stream when None).
    #[pyo3(signature = (size, stream = None))]
    fn allocate(
        slf: &Bound<'_, Self>,
        size: i64,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyBuffer> {
        let this = slf.get();
        let held = this.held.get()?;
        let owner = slf.clone().into_any().unbind();
        allocate_buffer(slf.py(), owner, &held.resource, this.device, size, stream)
    }

    /// Gives up the pool: it is destroyed once its last buffer is freed, and `allocate`
    /// raises from now on. Closing twice is harmless.
    fn close(&self) {
        drop(self.held.take());
    }

    /// Whether `close()` gave the pool up.
    #[getter]
    fn closed(&self) -> bool {
        self.held.is_closed()
    }

    /// The preferred device's ordinal, or -1 where the preferred location is no device.
    #[getter]
    fn device_id(&self) -> i64 {
        match self.location {
            ManagedLocation::Device(d) => d.ordinal() as i64,
            _ => -1,
        }
    }

    /// The preferred location: None (the driver decides), or `(type, id)`: `("device",
    /// ordinal)`, `("host", None)` or `("host_numa", node)`.
    #[getter]
    fn preferred_location(&self, py: Python<'_>) -> PyResult<PyObject> {
        let (kind, id): (&str, Option<i64>) = match self.location {
            ManagedLocation::Device(d) => ("device", Some(d.ordinal() as i64)),
            ManagedLocation::Host => ("host", None),
            ManagedLocation::HostNuma(n) => ("host_numa", Some(i64::from(n))),
            _ => return Ok(py.None()),
        };
        Ok((kind, id).into_pyobject(py)?.into_any().unbind())
    }

    /// True: the devices can access the memory.
    #[getter]
    fn is_device_accessible(&self) -> bool {
        true
    }

    /// True: the host can access the memory.
    #[getter]
    fn is_host_accessible(&self) -> bool {
        true
    }

    /// True: managed (unified) memory.
    #[getter]
    fn is_managed(&self) -> bool {
        true
    }

    /// True: the pool is this resource's own.
    #[getter]
    fn is_handle_owned(&self) -> bool {
        true
    }

    /// False: managed pools cannot be shared with other processes.
    #[getter]
    fn is_ipc_enabled(&self) -> bool {
        false
    }

    /// False: managed pools cannot be mapped from other processes.
    #[getter]
    fn is_mapped(&self) -> bool {
        false
    }

    /// The pool's handle (`CUmemoryPool`) as an int.
    #[getter]
    fn handle(&self) -> PyResult<Option<usize>> {
        Ok(self.held.get()?.pool.map(|p| p.handle()))
    }

    /// The pool's attributes, read from the driver at each access.
    #[getter]
    fn attributes(&self) -> PyResult<PyMemPoolAttributes> {
        pool_attributes(&self.held)
    }

    fn __repr__(&self) -> String {
        let closed = if self.held.is_closed() {
            " (closed)"
        } else {
            ""
        };
        let at = match self.location {
            ManagedLocation::Device(d) => format!("device {}", d.ordinal()),
            ManagedLocation::Host => "host".to_owned(),
            ManagedLocation::HostNuma(n) => format!("host NUMA node {n}"),
            _ => "none".to_owned(),
        };
        format!("<ManagedMemoryResource preferring {at}{closed}>")
    }
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyDeviceMemoryResourceOptions>()?;
    module.add_class::<PyPinnedMemoryResourceOptions>()?;
    module.add_class::<PyManagedMemoryResourceOptions>()?;
    module.add_class::<PyPinnedMemoryResource>()?;
    module.add_class::<PyManagedMemoryResource>()?;
    module.add_class::<PyMemPoolAttributes>()?;
    Ok(())
}
