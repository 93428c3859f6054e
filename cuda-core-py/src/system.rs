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
    register_nvml(module)?;
    Ok(())
}

// ---- NVML: system.Device and what it answers ----------------------------------------------------

use cuda_core::system::{Clock, ClockValue, System, SystemDevice, TemperatureLimit};
use pyo3::exceptions::{PyRuntimeError, PyValueError};

/// Runs an NVML query on the GPU of `uuid`, without holding the GIL.
fn query<T: Send>(
    py: Python<'_>,
    uuid: &str,
    f: impl FnOnce(&SystemDevice<'static>) -> cuda_core::Result<T> + Send,
) -> PyResult<T> {
    py.allow_threads(|| {
        let device = System::get()?.device_by_uuid(uuid)?;
        f(&device)
    })
    .or_py(py)
}

/// A GPU as NVML (the NVIDIA Management Library) sees it: `cudacore_rs.system.Device`. Get one
/// from `Device.to_system_device()`, `Device(index=...)`, `Device(uuid=...)` or
/// `Device(pci_bus_id=...)` (exactly one of them). Each property is one NVML query, answered as
/// it is now. Where NVML cannot be loaded, everything raises `system.LibraryNotFoundError`; a
/// query the GPU does not support raises `system.NotSupportedError`.
#[pyclass(name = "Device", module = "cudacore_rs.system", frozen)]
pub(crate) struct PySystemDevice {
    /// NVML's UUID (`GPU-...`), which names the GPU across NVML's and CUDA's numberings.
    uuid: String,
}

/// Parses a PCI bus id, `domain:bus:device.function` in hex (CUDA writes a 4-digit domain,
/// NVML an 8-digit one).
fn parse_bus_id(id: &str) -> Option<(u32, u32, u32, u32)> {
    let mut parts = id.trim().split(':');
    let (domain, bus, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let (device, function) = rest.split_once('.').unwrap_or((rest, "0"));
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u32::from_str_radix(bus, 16).ok()?,
        u32::from_str_radix(device, 16).ok()?,
        u32::from_str_radix(function, 16).ok()?,
    ))
}

/// `Device.to_system_device()`: NVML's view of a CUDA device, matched by UUID.
pub(crate) fn system_device_of(
    py: Python<'_>,
    device: &cuda_core::Device,
) -> PyResult<PySystemDevice> {
    // NVML first: where it is missing, that is the error to see, before any driver call.
    py.allow_threads(|| System::get().map(|_| ())).or_py(py)?;
    let uuid = device.uuid().or_py(py)?.to_nvml_string();
    query(py, &uuid, |d| d.uuid()).map(|uuid| PySystemDevice { uuid })
}

#[pymethods]
impl PySystemDevice {
    #[new]
    #[pyo3(signature = (*, index = None, uuid = None, pci_bus_id = None))]
    fn new(
        py: Python<'_>,
        index: Option<u32>,
        uuid: Option<String>,
        pci_bus_id: Option<String>,
    ) -> PyResult<Self> {
        let given = [index.is_some(), uuid.is_some(), pci_bus_id.is_some()];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(PyValueError::new_err(
                "give exactly one of index, uuid and pci_bus_id",
            ));
        }
        let wanted_bus = match &pci_bus_id {
            Some(id) => Some(parse_bus_id(id).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "{id:?} is not a PCI bus id (domain:bus:device.function)"
                ))
            })?),
            None => None,
        };
        let found = py
            .allow_threads(|| -> cuda_core::Result<Option<String>> {
                let system = System::get()?;
                if let Some(index) = index {
                    return system.device(index)?.uuid().map(Some);
                }
                if let Some(uuid) = &uuid {
                    let lower = uuid.to_ascii_lowercase();
                    let full = if lower.starts_with("gpu-") || lower.starts_with("mig-") {
                        uuid.clone()
                    } else {
                        format!("GPU-{uuid}")
                    };
                    return system.device_by_uuid(&full)?.uuid().map(Some);
                }
                for device in system.devices()? {
                    if parse_bus_id(&device.pci()?.bus_id) == wanted_bus {
                        return device.uuid().map(Some);
                    }
                }
                Ok(None)
            })
            .or_py(py)?;
        match found {
            Some(uuid) => Ok(PySystemDevice { uuid }),
            None => Err(PyValueError::new_err(format!(
                "no GPU has PCI bus id {}",
                pci_bus_id.unwrap_or_default()
            ))),
        }
    }

    /// How many GPUs NVML sees (all of the machine's, whatever `CUDA_VISIBLE_DEVICES` says).
    #[staticmethod]
    fn get_device_count(py: Python<'_>) -> PyResult<u32> {
        py.allow_threads(|| System::get()?.device_count()).or_py(py)
    }

    /// Every GPU NVML sees, in NVML's order.
    #[staticmethod]
    fn get_all_devices(py: Python<'_>) -> PyResult<Vec<PySystemDevice>> {
        let uuids = py
            .allow_threads(|| -> cuda_core::Result<Vec<String>> {
                System::get()?.devices()?.iter().map(|d| d.uuid()).collect()
            })
            .or_py(py)?;
        Ok(uuids
            .into_iter()
            .map(|uuid| PySystemDevice { uuid })
            .collect())
    }

    /// NVML's index of the GPU (not necessarily its CUDA ordinal).
    #[getter]
    fn index(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.index())
    }

    /// The UUID as NVML writes it, with its `GPU-` (or `MIG-`) prefix.
    #[getter]
    fn uuid(&self) -> String {
        self.uuid.clone()
    }

    /// The UUID without its prefix, as CUDA writes it.
    #[getter]
    fn uuid_without_prefix(&self) -> String {
        match self.uuid.split_once('-') {
            Some((prefix, rest))
                if prefix.eq_ignore_ascii_case("gpu") || prefix.eq_ignore_ascii_case("mig") =>
            {
                rest.to_owned()
            }
            _ => self.uuid.clone(),
        }
    }

    /// The product name (`NVIDIA H200`).
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        query(py, &self.uuid, |d| d.name())
    }

    /// The board's serial number.
    #[getter]
    fn serial(&self, py: Python<'_>) -> PyResult<String> {
        query(py, &self.uuid, |d| d.serial())
    }

    /// The PCI bus id, as NVML writes it (`00000000:1B:00.0`).
    #[getter]
    fn pci_bus_id(&self, py: Python<'_>) -> PyResult<String> {
        query(py, &self.uuid, |d| d.pci().map(|p| p.bus_id))
    }

    /// Device memory now: a `MemoryInfo` (`total`, `used`, `free`, in bytes).
    #[getter]
    fn memory_info(&self, py: Python<'_>) -> PyResult<PyMemoryInfo> {
        let m = query(py, &self.uuid, |d| d.memory())?;
        Ok(PyMemoryInfo {
            total: m.total,
            used: m.used,
            free: m.free,
        })
    }

    /// GPU and memory utilization over the last sample period: a `Utilization` (`gpu`,
    /// `memory`, in percent).
    #[getter]
    fn utilization(&self, py: Python<'_>) -> PyResult<PyUtilization> {
        let u = query(py, &self.uuid, |d| d.utilization())?;
        Ok(PyUtilization {
            gpu: u.gpu,
            memory: u.memory,
        })
    }

    /// The GPU's temperatures: a `Temperature` (`get_sensor()`, `get_threshold(kind)`).
    #[getter]
    fn temperature(&self) -> PyTemperature {
        PyTemperature {
            uuid: self.uuid.clone(),
        }
    }

    /// The GPU's place on the PCI bus and its PCIe link: a `PciInfo`.
    #[getter]
    fn pci_info(&self, py: Python<'_>) -> PyResult<PyPciInfo> {
        let pci = query(py, &self.uuid, |d| d.pci())?;
        Ok(PyPciInfo {
            uuid: self.uuid.clone(),
            bus_id: pci.bus_id,
            domain: pci.domain,
            bus: pci.bus,
            device: pci.device,
            pci_device_id: pci.pci_device_id,
            pci_subsystem_id: pci.pci_subsystem_id,
        })
    }

    /// The performance state, 0 (most performance) to 15; None where NVML reads unknown.
    #[getter]
    fn performance_state(&self, py: Python<'_>) -> PyResult<Option<u32>> {
        query(py, &self.uuid, |d| d.performance().map(|p| p.pstate))
    }

    /// How many fans the board has (0 for a passively cooled one).
    #[getter]
    fn num_fans(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.fan_count())
    }

    /// A clock domain of the GPU: `clock_type` is "graphics", "sm", "memory" or "video".
    fn get_clock(&self, clock_type: &str) -> PyResult<PyClockInfo> {
        let clock = match clock_type.to_ascii_lowercase().as_str() {
            "graphics" => Clock::Graphics,
            "sm" => Clock::Sm,
            "memory" | "mem" => Clock::Memory,
            "video" => Clock::Video,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "clock_type must be \"graphics\", \"sm\", \"memory\" or \"video\", not \
                     {clock_type:?}"
                )))
            }
        };
        Ok(PyClockInfo {
            uuid: self.uuid.clone(),
            clock,
        })
    }

    /// The processes running compute work on the GPU: a list of `ProcessInfo`.
    #[getter]
    fn compute_running_processes(&self, py: Python<'_>) -> PyResult<Vec<PyProcessInfo>> {
        let processes = query(py, &self.uuid, |d| d.compute_processes())?;
        Ok(processes
            .into_iter()
            .map(|p| PyProcessInfo {
                pid: p.pid,
                used_gpu_memory: p.used_memory,
            })
            .collect())
    }

    /// The CUDA `Device` that is this GPU, matched by UUID. RuntimeError where this process
    /// does not see it as a CUDA device (`CUDA_VISIBLE_DEVICES`, a MIG parent).
    fn to_cuda_device(&self, py: Python<'_>) -> PyResult<Py<crate::device::PyDevice>> {
        let found = query(py, &self.uuid, |d| d.cuda_device())?;
        match found {
            Some(device) => crate::device::PyDevice::new(py, i64::try_from(device.ordinal()).ok()),
            None => Err(PyRuntimeError::new_err(format!(
                "no CUDA device of this process is the GPU {}",
                self.uuid
            ))),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PySystemDevice>()
            .is_ok_and(|o| o.get().uuid == self.uuid)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.uuid.hash(&mut hasher);
        hasher.finish()
    }

    fn __repr__(&self) -> String {
        format!("<system.Device {}>", self.uuid)
    }
}

/// Device memory, in bytes: `total`, `used`, `free`.
#[pyclass(name = "MemoryInfo", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyMemoryInfo {
    /// Total device memory, in bytes.
    #[pyo3(get)]
    total: u64,
    /// Device memory allocated, in bytes.
    #[pyo3(get)]
    used: u64,
    /// Device memory not allocated, in bytes.
    #[pyo3(get)]
    free: u64,
}

#[pymethods]
impl PyMemoryInfo {
    fn __repr__(&self) -> String {
        format!(
            "MemoryInfo(total={}, used={}, free={})",
            self.total, self.used, self.free
        )
    }
}

/// How busy a GPU was over NVML's last sample period, in percent: `gpu` (time a kernel ran)
/// and `memory` (time device memory was read or written).
#[pyclass(name = "Utilization", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyUtilization {
    /// Percent of the time one or more kernels ran.
    #[pyo3(get)]
    gpu: u32,
    /// Percent of the time device memory was read or written.
    #[pyo3(get)]
    memory: u32,
}

#[pymethods]
impl PyUtilization {
    fn __repr__(&self) -> String {
        format!("Utilization(gpu={}, memory={})", self.gpu, self.memory)
    }
}

/// A GPU's temperatures, in °C, each read when asked.
#[pyclass(name = "Temperature", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyTemperature {
    uuid: String,
}

#[pymethods]
impl PyTemperature {
    /// The GPU sensor's temperature now, in °C.
    fn get_sensor(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.temperature())
    }

    /// A temperature limit, in °C: `threshold_type` is "shutdown", "slowdown", "gpu_max" or
    /// "mem_max".
    fn get_threshold(&self, py: Python<'_>, threshold_type: &str) -> PyResult<u32> {
        let limit = match threshold_type.to_ascii_lowercase().as_str() {
            "shutdown" => TemperatureLimit::Shutdown,
            "slowdown" => TemperatureLimit::Slowdown,
            "gpu_max" => TemperatureLimit::GpuMax,
            "mem_max" | "memory_max" => TemperatureLimit::MemoryMax,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "threshold_type must be \"shutdown\", \"slowdown\", \"gpu_max\" or \
                     \"mem_max\", not {threshold_type:?}"
                )))
            }
        };
        query(py, &self.uuid, move |d| d.temperature_limit(limit))
    }

    fn __repr__(&self) -> String {
        format!("<system.Temperature of {}>", self.uuid)
    }
}

/// A GPU's place on the PCI bus; its PCIe link's properties are read when asked.
#[pyclass(name = "PciInfo", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyPciInfo {
    uuid: String,
    /// The `domain:bus:device.function` id, as NVML writes it.
    #[pyo3(get)]
    bus_id: String,
    /// The PCI domain.
    #[pyo3(get)]
    domain: u32,
    /// The bus, 0 to 255.
    #[pyo3(get)]
    bus: u32,
    /// The device's id on the bus, 0 to 31.
    #[pyo3(get)]
    device: u32,
    pci_device_id: u32,
    pci_subsystem_id: Option<u32>,
}

#[pymethods]
impl PyPciInfo {
    /// The PCI vendor id (0x10de for NVIDIA).
    #[getter]
    fn vendor_id(&self) -> u32 {
        self.pci_device_id & 0xffff
    }

    /// The PCI device id.
    #[getter]
    fn device_id(&self) -> u32 {
        self.pci_device_id >> 16
    }

    /// The subsystem id (subsystem device and vendor ids together), None where NVML gives none.
    #[getter]
    fn subsystem_id(&self) -> Option<u32> {
        self.pci_subsystem_id
    }

    /// The PCIe link generation now.
    #[getter]
    fn current_link_generation(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_link().map(|l| l.generation))
    }

    /// The PCIe lanes now.
    #[getter]
    fn current_link_width(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_link().map(|l| l.width))
    }

    /// The highest PCIe generation the GPU and system support.
    #[getter]
    fn max_link_generation(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_link().map(|l| l.max_generation))
    }

    /// The most PCIe lanes.
    #[getter]
    fn max_link_width(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_link().map(|l| l.max_width))
    }

    /// PCIe bytes sent over the last 20 ms, in KB/s.
    #[getter]
    fn tx_throughput(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_throughput().map(|t| t.0))
    }

    /// PCIe bytes received over the last 20 ms, in KB/s.
    #[getter]
    fn rx_throughput(&self, py: Python<'_>) -> PyResult<u32> {
        query(py, &self.uuid, |d| d.pcie_throughput().map(|t| t.1))
    }

    fn __repr__(&self) -> String {
        format!("<system.PciInfo {}>", self.bus_id)
    }
}

/// A clock domain of a GPU, read when asked, in MHz.
#[pyclass(name = "ClockInfo", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyClockInfo {
    uuid: String,
    clock: Clock,
}

#[pymethods]
impl PyClockInfo {
    /// The clock's speed now, in MHz.
    fn get_current_mhz(&self, py: Python<'_>) -> PyResult<u32> {
        let clock = self.clock;
        query(py, &self.uuid, move |d| d.clock(clock, ClockValue::Current))
    }

    /// The most the clock can run at, in MHz.
    fn get_max_mhz(&self, py: Python<'_>) -> PyResult<u32> {
        let clock = self.clock;
        query(py, &self.uuid, move |d| d.clock(clock, ClockValue::Max))
    }

    fn __repr__(&self) -> String {
        format!("<system.ClockInfo {:?} of {}>", self.clock, self.uuid)
    }
}

/// A process running compute work on a GPU.
#[pyclass(name = "ProcessInfo", module = "cudacore_rs.system", frozen)]
pub(crate) struct PyProcessInfo {
    /// The process id (in NVML's PID namespace: the host's, in a container).
    #[pyo3(get)]
    pid: u32,
    /// Device memory it uses, in bytes; None where NVML cannot tell.
    #[pyo3(get)]
    used_gpu_memory: Option<u64>,
}

#[pymethods]
impl PyProcessInfo {
    fn __repr__(&self) -> String {
        format!("ProcessInfo(pid={})", self.pid)
    }
}

/// The driver's version as NVML gives it (`580.65.06`).
#[pyfunction]
pub(crate) fn _kernel_mode_driver_version(py: Python<'_>) -> PyResult<String> {
    py.allow_threads(|| System::get()?.driver_version())
        .or_py(py)
}

/// NVML's own version (`13.580.65.06`).
#[pyfunction]
pub(crate) fn _nvml_version(py: Python<'_>) -> PyResult<String> {
    py.allow_threads(|| System::get()?.nvml_version()).or_py(py)
}

/// Adds the NVML classes and queries to the module, under private names that
/// `cudacore_rs.system` re-exports (`_SystemDevice` is `system.Device`).
fn register_nvml(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("_SystemDevice", py.get_type::<PySystemDevice>())?;
    module.add("_MemoryInfo", py.get_type::<PyMemoryInfo>())?;
    module.add("_Utilization", py.get_type::<PyUtilization>())?;
    module.add("_Temperature", py.get_type::<PyTemperature>())?;
    module.add("_PciInfo", py.get_type::<PyPciInfo>())?;
    module.add("_ClockInfo", py.get_type::<PyClockInfo>())?;
    module.add("_ProcessInfo", py.get_type::<PyProcessInfo>())?;
    module.add_function(wrap_pyfunction!(_kernel_mode_driver_version, module)?)?;
    module.add_function(wrap_pyfunction!(_nvml_version, module)?)?;
    Ok(())
}
