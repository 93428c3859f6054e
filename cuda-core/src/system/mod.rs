//! The system view through NVML, the NVIDIA Management Library: driver and NVML versions, and
//! for each GPU its identity, memory, utilization, temperatures, power, clocks, PCIe and NVLink
//! state, ECC counts, MIG mode, topology, running compute processes and XID errors, persistence
//! mode, CPU and memory affinity, InfoROM versions, addressing mode, display state and C2C mode,
//! as `nvidia-smi` shows them; and NVML's events ([`EventSet`]), awaited with a timeout.
//!
//! Everything here reads: nothing changes a GPU's settings. For what this module does not wrap,
//! [`System::nvml`] and [`SystemDevice::nvml`] give nvml-wrapper's own objects.
//!
//! NVML is the driver's (`libnvidia-ml.so.1`), loaded at run time on first use through the
//! [`nvml-wrapper`](https://docs.rs/nvml-wrapper) crate, which loads it dynamically and wraps
//! nearly all of it. It is not the CUDA driver: without NVML every call here answers
//! [`Error::NvmlNotFound`] naming the libraries tried, and the rest of the crate works.
//! `CUDA_CORE_NVML_PATH` names the library file to load instead. A query the GPU or driver does
//! not support answers [`Error::SystemNotSupported`], never a zero.
//!
//! NVML numbers devices its own way: [`Device::system_device`](crate::Device::system_device)
//! and [`SystemDevice::cuda_device`] match them by UUID, which `CUDA_VISIBLE_DEVICES` does not
//! reorder.
//!
//! ```no_run
//! use cuda_core::system::System;
//!
//! let system = System::get()?;
//! println!("driver {}, NVML {}", system.driver_version()?, system.nvml_version()?);
//! for gpu in system.devices()? {
//!     let memory = gpu.memory()?;
//!     println!("{}: {} of {} MiB used, {} °C", gpu.name()?, memory.used >> 20, memory.total >> 20, gpu.temperature()?);
//! }
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::os::raw::{c_uint, c_ulong};
use std::sync::OnceLock;
use std::time::Duration;

use nvml_wrapper::enum_wrappers::device::{
    Clock as NvmlClock, EccCounter, InfoRom, MemoryError, PcieUtilCounter, TemperatureSensor,
    TemperatureThreshold as NvmlThreshold, TopologyLevel,
};
use nvml_wrapper::error::{nvml_try, NvmlError};
use nvml_wrapper::Nvml;

use crate::error::{Error, Result};

mod events;

pub use events::{EventKinds, EventSet, SystemEvent};

/// The library names tried, in order, when `CUDA_CORE_NVML_PATH` is not set.
const NAMES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// NVML, loaded and initialised once per process.
pub struct System {
    nvml: Nvml,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System").finish_non_exhaustive()
    }
}

static SYSTEM: OnceLock<std::result::Result<System, Vec<String>>> = OnceLock::new();

/// Turns an NVML error of `query` into the crate's.
fn nvml_error(query: &'static str) -> impl FnOnce(NvmlError) -> Error {
    move |e| match e {
        NvmlError::NotSupported
        | NvmlError::FunctionNotFound
        | NvmlError::FailedToLoadSymbol(_) => Error::SystemNotSupported { query },
        other => Error::Nvml {
            query,
            reason: other.to_string(),
        },
    }
}

impl System {
    /// NVML, loaded and initialised on the first call (`nvmlInit_v2`); later calls answer the
    /// same, or the same error.
    #[doc(alias = "nvmlInit")]
    pub fn get() -> Result<&'static System> {
        match SYSTEM.get_or_init(System::load) {
            Ok(system) => Ok(system),
            Err(tried) => Err(Error::NvmlNotFound {
                tried: tried.clone(),
            }),
        }
    }

    fn load() -> std::result::Result<System, Vec<String>> {
        let names: Vec<std::ffi::OsString> = match std::env::var_os("CUDA_CORE_NVML_PATH") {
            Some(path) if !path.is_empty() => vec![path],
            _ => NAMES.iter().map(Into::into).collect(),
        };
        let mut tried = Vec::new();
        for name in names {
            // A relative path would name a file of the working directory (a bare name goes to
            // the loader's search, which a path with a slash does not).
            let path = std::path::Path::new(&name);
            if path.components().count() > 1 && !path.is_absolute() {
                tried.push(format!(
                    "{}: not an absolute path: a relative one would name a file in the \
                     working directory",
                    name.to_string_lossy()
                ));
                continue;
            }
            match Nvml::builder().lib_path(&name).init() {
                Ok(nvml) => return Ok(System { nvml }),
                Err(e) => tried.push(format!("{}: {e}", name.to_string_lossy())),
            }
        }
        Err(tried)
    }

    /// The NVML library itself, for what this module does not wrap.
    pub fn nvml(&self) -> &Nvml {
        &self.nvml
    }

    /// The driver's version, as `nvidia-smi` prints it (`580.159.04`).
    pub fn driver_version(&self) -> Result<String> {
        self.nvml
            .sys_driver_version()
            .map_err(nvml_error("nvmlSystemGetDriverVersion"))
    }

    /// NVML's own version (`13.580.159.04`).
    pub fn nvml_version(&self) -> Result<String> {
        self.nvml
            .sys_nvml_version()
            .map_err(nvml_error("nvmlSystemGetNVMLVersion"))
    }

    /// The CUDA version the driver supports, as `cuDriverGetVersion` gives it (13000 for 13.0).
    pub fn cuda_driver_version(&self) -> Result<i32> {
        self.nvml
            .sys_cuda_driver_version()
            .map_err(nvml_error("nvmlSystemGetCudaDriverVersion"))
    }

    /// How many GPUs NVML sees (all of the machine's, whatever `CUDA_VISIBLE_DEVICES` says).
    pub fn device_count(&self) -> Result<u32> {
        self.nvml
            .device_count()
            .map_err(nvml_error("nvmlDeviceGetCount"))
    }

    /// The GPU of NVML's `index`.
    pub fn device(&self, index: u32) -> Result<SystemDevice<'_>> {
        self.nvml
            .device_by_index(index)
            .map(|device| SystemDevice { device })
            .map_err(nvml_error("nvmlDeviceGetHandleByIndex"))
    }

    /// The GPU of this UUID (`GPU-...`, as [`SystemDevice::uuid`] and `nvidia-smi -L` print it).
    pub fn device_by_uuid(&self, uuid: &str) -> Result<SystemDevice<'_>> {
        self.nvml
            .device_by_uuid(uuid)
            .map(|device| SystemDevice { device })
            .map_err(nvml_error("nvmlDeviceGetHandleByUUID"))
    }

    /// Every GPU, in NVML's order.
    pub fn devices(&self) -> Result<Vec<SystemDevice<'_>>> {
        (0..self.device_count()?).map(|i| self.device(i)).collect()
    }
}

/// A GPU as NVML sees it. Each method is one NVML query, answered as it is now.
pub struct SystemDevice<'a> {
    device: nvml_wrapper::Device<'a>,
}

impl std::fmt::Debug for SystemDevice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemDevice")
            .field("uuid", &self.uuid().ok())
            .finish()
    }
}

/// Device memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryInfo {
    /// All of it.
    pub total: u64,
    /// In use (by every process, and the driver's reserve).
    pub used: u64,
    /// Free.
    pub free: u64,
}

/// How busy a GPU was over the driver's last sample period, in percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utilization {
    /// Of the time, a kernel was running.
    pub gpu: u32,
    /// Of the time, device memory was read or written.
    pub memory: u32,
}

/// A GPU's place on the PCI bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciInfo {
    /// `domain:bus:device.function`, as `nvidia-smi` prints it (`00000000:1B:00.0`).
    pub bus_id: String,
    /// The PCI domain.
    pub domain: u32,
    /// The bus.
    pub bus: u32,
    /// The device on the bus.
    pub device: u32,
    /// The combined device and vendor id.
    pub pci_device_id: u32,
    /// The combined subsystem id, where NVML gives it.
    pub pci_subsystem_id: Option<u32>,
}

/// A temperature limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemperatureLimit {
    /// Where the GPU shuts down.
    Shutdown,
    /// Where it slows down.
    Slowdown,
    /// The most the GPU may reach.
    GpuMax,
    /// The most its memory may reach.
    MemoryMax,
}

/// A clock domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Clock {
    /// Graphics.
    Graphics,
    /// Streaming multiprocessors.
    Sm,
    /// Memory.
    Memory,
    /// Video.
    Video,
}

/// Which value of a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockValue {
    /// Now.
    Current,
    /// The most it can run at.
    Max,
    /// The application clock it is set to.
    Application,
}

/// A PCIe link: generation and lanes, now and at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieLink {
    /// The generation now.
    pub generation: u32,
    /// The lanes now.
    pub width: u32,
    /// The most generation the link and GPU support.
    pub max_generation: u32,
    /// The most lanes.
    pub max_width: u32,
}

/// ECC error counts since the driver loaded (volatile) and over the GPU's life (aggregate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EccCounts {
    /// Corrected, since the driver loaded.
    pub corrected_volatile: u64,
    /// Not corrected, since the driver loaded.
    pub uncorrected_volatile: u64,
    /// Corrected, over the GPU's life.
    pub corrected_aggregate: u64,
    /// Not corrected, over the GPU's life.
    pub uncorrected_aggregate: u64,
}

/// An NVLink's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvLinkState {
    /// The link's number.
    pub link: u32,
    /// Whether it is up.
    pub active: bool,
    /// Its NVLink version.
    pub version: u32,
    /// The PCI bus id of the device at its other end.
    pub remote_bus_id: String,
}

/// How two GPUs are connected: the nearest common ancestor of their paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Topology {
    /// The same board (a multi-GPU board).
    Internal,
    /// Through one PCIe switch.
    Single,
    /// Through several PCIe switches.
    Multiple,
    /// Through a PCIe host bridge.
    HostBridge,
    /// Through the same NUMA node's CPU.
    Node,
    /// Across CPUs (SMP interconnect).
    System,
}

/// A process using a GPU for compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ComputeProcess {
    /// Its process id (in NVML's PID namespace: the host's, in a container).
    pub pid: u32,
    /// Device memory it uses, where NVML can tell.
    pub used_memory: Option<u64>,
}

/// Performance state and why the clocks are held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Performance {
    /// The P-state: 0 is the most performance, 15 the least; `None` where NVML reads unknown.
    pub pstate: Option<u32>,
    /// `nvmlClocksEventReasons` bits of what holds the clocks back now (0: nothing).
    pub throttle_reasons: u64,
}

/// Which neighbourhood of a GPU an affinity is asked for.
#[doc(alias = "nvmlAffinityScope_t")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AffinityScope {
    /// The NUMA node nearest the GPU (`NVML_AFFINITY_SCOPE_NODE`).
    #[doc(alias = "NVML_AFFINITY_SCOPE_NODE")]
    Node,
    /// The CPU socket nearest the GPU (`NVML_AFFINITY_SCOPE_SOCKET`).
    #[doc(alias = "NVML_AFFINITY_SCOPE_SOCKET")]
    Socket,
}

impl AffinityScope {
    /// NVML's value (`nvmlAffinityScope_t`).
    fn code(self) -> c_uint {
        match self {
            AffinityScope::Node => 0,
            AffinityScope::Socket => 1,
        }
    }
}

/// How a GPU reaches the memory of the system allocator (`malloc`, `mmap`): whether a kernel
/// may dereference a pointer to it, and by what means.
#[doc(alias("nvmlDeviceAddressingModeType_t", "nvmlDeviceAddressingMode_t"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressingMode {
    /// It does not: only memory allocated through CUDA is addressable
    /// (`NVML_DEVICE_ADDRESSING_MODE_NONE`).
    #[doc(alias = "NVML_DEVICE_ADDRESSING_MODE_NONE")]
    None,
    /// Heterogeneous Memory Management: the driver mirrors the CPU's page tables on the GPU in
    /// software (`NVML_DEVICE_ADDRESSING_MODE_HMM`).
    #[doc(alias = "NVML_DEVICE_ADDRESSING_MODE_HMM")]
    Hmm,
    /// Address Translation Services: the CPU and the GPU use one set of page tables, as over
    /// NVLink-C2C (`NVML_DEVICE_ADDRESSING_MODE_ATS`).
    #[doc(alias = "NVML_DEVICE_ADDRESSING_MODE_ATS")]
    Ats,
    /// A mode this crate does not name yet: NVML's value.
    Other(u32),
}

/// The versions of a GPU's InfoROM, the board's non-volatile store of its configuration and
/// counts (aggregate ECC errors, say).
#[doc(alias("nvmlDeviceGetInforomImageVersion", "nvmlDeviceGetInforomVersion"))]
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InforomVersions {
    /// The image's version (`G520.0200.00.05`): it names the exact InfoROM flashed on the
    /// board, as the VBIOS version names the VBIOS (`nvmlDeviceGetInforomImageVersion`).
    pub image: String,
    /// The OEM object's version, `None` where the board has none (`NVML_INFOROM_OEM`).
    pub oem: Option<String>,
    /// The ECC object's version, `None` where the board has none (`NVML_INFOROM_ECC`).
    pub ecc: Option<String>,
    /// The power-management object's version, `None` where the board has none
    /// (`NVML_INFOROM_POWER`).
    pub power: Option<String>,
}

/// How many `unsigned long`s of CPU bits an affinity query is given: 16384 CPUs.
const CPU_SET_WORDS: usize = 256;
/// How many `unsigned long`s of NUMA node bits: 1024 nodes, Linux's most.
const NODE_SET_WORDS: usize = 16;

/// The ids of the bits set in an NVML bitmask of `unsigned long`s (bit `b` of word `w` is id
/// `w * 64 + b` where an `unsigned long` has 64 bits), in ascending order.
fn ids_of_bits(words: &[c_ulong]) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut base = 0u32;
    for &word in words {
        for bit in 0..c_ulong::BITS {
            if word >> bit & 1 == 1 {
                ids.push(base + bit);
            }
        }
        base += c_ulong::BITS;
    }
    ids
}

/// The size of what an NVML function writes through its second argument: nvml-wrapper's
/// declaration of the struct, which a call through [`Nvml::lib`] is checked against.
fn pointee_size<A, T>(_: &unsafe extern "C" fn(A, *mut T) -> c_uint) -> usize {
    std::mem::size_of::<T>()
}

/// `nvmlDeviceAddressingMode_v1_t` of nvml.h.
#[repr(C)]
struct RawAddressingMode {
    version: c_uint,
    value: c_uint,
}

/// `nvmlDeviceAddressingMode_v1`: the struct's size, and its version in the top byte
/// (`NVML_STRUCT_VERSION`).
const ADDRESSING_MODE_V1: c_uint = std::mem::size_of::<RawAddressingMode>() as c_uint | 1 << 24;

/// `nvmlC2cModeInfo_v1_t` of nvml.h (which has no version field).
#[repr(C)]
struct RawC2cModeInfo {
    is_c2c_enabled: c_uint,
}

/// The error for a struct nvml-wrapper declares at another size than nvml.h does.
fn layout_mismatch(query: &'static str) -> Error {
    Error::Nvml {
        query,
        reason: "nvml-wrapper declares its argument at another size than nvml.h; not called".into(),
    }
}

impl<'a> SystemDevice<'a> {
    /// The NVML device itself, for what this module does not wrap.
    pub fn nvml(&self) -> &nvml_wrapper::Device<'a> {
        &self.device
    }

    /// The product name (`NVIDIA H200`).
    pub fn name(&self) -> Result<String> {
        self.device.name().map_err(nvml_error("nvmlDeviceGetName"))
    }

    /// The UUID, `GPU-` then the hex digits.
    pub fn uuid(&self) -> Result<String> {
        self.device.uuid().map_err(nvml_error("nvmlDeviceGetUUID"))
    }

    /// NVML's index of the GPU.
    pub fn index(&self) -> Result<u32> {
        self.device
            .index()
            .map_err(nvml_error("nvmlDeviceGetIndex"))
    }

    /// The board's serial number.
    pub fn serial(&self) -> Result<String> {
        self.device
            .serial()
            .map_err(nvml_error("nvmlDeviceGetSerial"))
    }

    /// Its place on the PCI bus.
    pub fn pci(&self) -> Result<PciInfo> {
        let pci = self
            .device
            .pci_info()
            .map_err(nvml_error("nvmlDeviceGetPciInfo"))?;
        Ok(PciInfo {
            bus_id: pci.bus_id,
            domain: pci.domain,
            bus: pci.bus,
            device: pci.device,
            pci_device_id: pci.pci_device_id,
            pci_subsystem_id: pci.pci_sub_system_id,
        })
    }

    /// Device memory now.
    pub fn memory(&self) -> Result<MemoryInfo> {
        let m = self
            .device
            .memory_info()
            .map_err(nvml_error("nvmlDeviceGetMemoryInfo"))?;
        Ok(MemoryInfo {
            total: m.total,
            used: m.used,
            free: m.free,
        })
    }

    /// GPU and memory utilization over the last sample period.
    pub fn utilization(&self) -> Result<Utilization> {
        let u = self
            .device
            .utilization_rates()
            .map_err(nvml_error("nvmlDeviceGetUtilizationRates"))?;
        Ok(Utilization {
            gpu: u.gpu,
            memory: u.memory,
        })
    }

    /// The video encoder's utilization, in percent.
    pub fn encoder_utilization(&self) -> Result<u32> {
        self.device
            .encoder_utilization()
            .map(|u| u.utilization)
            .map_err(nvml_error("nvmlDeviceGetEncoderUtilization"))
    }

    /// The video decoder's utilization, in percent.
    pub fn decoder_utilization(&self) -> Result<u32> {
        self.device
            .decoder_utilization()
            .map(|u| u.utilization)
            .map_err(nvml_error("nvmlDeviceGetDecoderUtilization"))
    }

    /// The GPU's temperature, in °C.
    pub fn temperature(&self) -> Result<u32> {
        self.device
            .temperature(TemperatureSensor::Gpu)
            .map_err(nvml_error("nvmlDeviceGetTemperature"))
    }

    /// A temperature limit, in °C.
    pub fn temperature_limit(&self, limit: TemperatureLimit) -> Result<u32> {
        let threshold = match limit {
            TemperatureLimit::Shutdown => NvmlThreshold::Shutdown,
            TemperatureLimit::Slowdown => NvmlThreshold::Slowdown,
            TemperatureLimit::GpuMax => NvmlThreshold::GpuMax,
            TemperatureLimit::MemoryMax => NvmlThreshold::MemoryMax,
        };
        self.device
            .temperature_threshold(threshold)
            .map_err(nvml_error("nvmlDeviceGetTemperatureThreshold"))
    }

    /// Power drawn now, in milliwatts.
    pub fn power_draw(&self) -> Result<u32> {
        self.device
            .power_usage()
            .map_err(nvml_error("nvmlDeviceGetPowerUsage"))
    }

    /// The power limit in force, in milliwatts.
    pub fn power_limit(&self) -> Result<u32> {
        self.device
            .enforced_power_limit()
            .map_err(nvml_error("nvmlDeviceGetEnforcedPowerLimit"))
    }

    /// The range a power limit may be set in, `(min, max)` in milliwatts.
    pub fn power_limit_range(&self) -> Result<(u32, u32)> {
        self.device
            .power_management_limit_constraints()
            .map(|c| (c.min_limit, c.max_limit))
            .map_err(nvml_error("nvmlDeviceGetPowerManagementLimitConstraints"))
    }

    /// A clock, in MHz.
    pub fn clock(&self, clock: Clock, value: ClockValue) -> Result<u32> {
        let clock = match clock {
            Clock::Graphics => NvmlClock::Graphics,
            Clock::Sm => NvmlClock::SM,
            Clock::Memory => NvmlClock::Memory,
            Clock::Video => NvmlClock::Video,
        };
        match value {
            ClockValue::Current => self
                .device
                .clock_info(clock)
                .map_err(nvml_error("nvmlDeviceGetClockInfo")),
            ClockValue::Max => self
                .device
                .max_clock_info(clock)
                .map_err(nvml_error("nvmlDeviceGetMaxClockInfo")),
            ClockValue::Application => self
                .device
                .applications_clock(clock)
                .map_err(nvml_error("nvmlDeviceGetApplicationsClock")),
        }
    }

    /// The performance state and what holds the clocks back.
    pub fn performance(&self) -> Result<Performance> {
        use nvml_wrapper::enum_wrappers::device::PerformanceState as P;
        let pstate = match self
            .device
            .performance_state()
            .map_err(nvml_error("nvmlDeviceGetPerformanceState"))?
        {
            P::Zero => Some(0),
            P::One => Some(1),
            P::Two => Some(2),
            P::Three => Some(3),
            P::Four => Some(4),
            P::Five => Some(5),
            P::Six => Some(6),
            P::Seven => Some(7),
            P::Eight => Some(8),
            P::Nine => Some(9),
            P::Ten => Some(10),
            P::Eleven => Some(11),
            P::Twelve => Some(12),
            P::Thirteen => Some(13),
            P::Fourteen => Some(14),
            P::Fifteen => Some(15),
            P::Unknown => None,
        };
        let throttle_reasons = self
            .device
            .current_throttle_reasons()
            .map_err(nvml_error("nvmlDeviceGetCurrentClocksEventReasons"))?
            .bits();
        Ok(Performance {
            pstate,
            throttle_reasons,
        })
    }

    /// How many fans the board has (0 for a passively cooled one, such as a data-centre GPU).
    pub fn fan_count(&self) -> Result<u32> {
        self.device
            .num_fans()
            .map_err(nvml_error("nvmlDeviceGetNumFans"))
    }

    /// A fan's speed, in percent of its most; a fan past [`fan_count`](Self::fan_count) is
    /// refused with [`Error::InvalidArgument`] naming the count.
    pub fn fan_speed(&self, fan: u32) -> Result<u32> {
        let count = self.fan_count()?;
        if fan >= count {
            return Err(Error::InvalidArgument {
                name: "fan",
                reason: format!("fan {fan} of a GPU with {count} fan(s)"),
            });
        }
        self.device
            .fan_speed(fan)
            .map_err(nvml_error("nvmlDeviceGetFanSpeed"))
    }

    /// The PCIe link.
    pub fn pcie_link(&self) -> Result<PcieLink> {
        let e = |q| nvml_error(q);
        Ok(PcieLink {
            generation: self
                .device
                .current_pcie_link_gen()
                .map_err(e("nvmlDeviceGetCurrPcieLinkGeneration"))?,
            width: self
                .device
                .current_pcie_link_width()
                .map_err(e("nvmlDeviceGetCurrPcieLinkWidth"))?,
            max_generation: self
                .device
                .max_pcie_link_gen()
                .map_err(e("nvmlDeviceGetMaxPcieLinkGeneration"))?,
            max_width: self
                .device
                .max_pcie_link_width()
                .map_err(e("nvmlDeviceGetMaxPcieLinkWidth"))?,
        })
    }

    /// PCIe throughput over the last 20 ms, `(sent, received)` in KB/s.
    pub fn pcie_throughput(&self) -> Result<(u32, u32)> {
        let read = |counter| {
            self.device
                .pcie_throughput(counter)
                .map_err(nvml_error("nvmlDeviceGetPcieThroughput"))
        };
        Ok((
            read(PcieUtilCounter::Send)?,
            read(PcieUtilCounter::Receive)?,
        ))
    }

    /// ECC error counts (not supported where ECC is off).
    pub fn ecc_errors(&self) -> Result<EccCounts> {
        let read = |error, counter| {
            self.device
                .total_ecc_errors(error, counter)
                .map_err(nvml_error("nvmlDeviceGetTotalEccErrors"))
        };
        Ok(EccCounts {
            corrected_volatile: read(MemoryError::Corrected, EccCounter::Volatile)?,
            uncorrected_volatile: read(MemoryError::Uncorrected, EccCounter::Volatile)?,
            corrected_aggregate: read(MemoryError::Corrected, EccCounter::Aggregate)?,
            uncorrected_aggregate: read(MemoryError::Uncorrected, EccCounter::Aggregate)?,
        })
    }

    /// MIG mode, `(now, after the next reset)`.
    pub fn mig_mode(&self) -> Result<(bool, bool)> {
        self.device
            .mig_mode()
            .map(|m| (m.current != 0, m.pending != 0))
            .map_err(nvml_error("nvmlDeviceGetMigMode"))
    }

    /// The most MIG devices this GPU can hold, in MIG mode; 0 where MIG is off. Those it holds
    /// now are [`mig_devices`](Self::mig_devices). A GPU without MIG answers
    /// [`Error::SystemNotSupported`] naming `nvmlDeviceGetMigMode`.
    #[doc(alias = "nvmlDeviceGetMaxMigDeviceCount")]
    pub fn max_mig_device_count(&self) -> Result<u32> {
        if !self.mig_mode()?.0 {
            return Ok(0);
        }
        self.device
            .mig_device_count()
            .map_err(nvml_error("nvmlDeviceGetMaxMigDeviceCount"))
    }

    /// The MIG devices (instances) of this GPU, in MIG mode; none otherwise.
    #[doc(alias = "nvmlDeviceGetMigDeviceHandleByIndex")]
    pub fn mig_devices(&self) -> Result<Vec<SystemDevice<'a>>> {
        let count = self.max_mig_device_count()?;
        let mut out = Vec::new();
        for index in 0..count {
            match self.device.mig_device_by_index(index) {
                Ok(device) => out.push(SystemDevice { device }),
                // A slot with no instance in it.
                Err(NvmlError::NotFound) => {}
                Err(e) => return Err(nvml_error("nvmlDeviceGetMigDeviceHandleByIndex")(e)),
            }
        }
        Ok(out)
    }

    /// The state of NVLink `link`.
    pub fn nvlink(&self, link: u32) -> Result<NvLinkState> {
        let wrapper = self.device.link_wrapper_for(link);
        Ok(NvLinkState {
            link,
            active: wrapper
                .is_active()
                .map_err(nvml_error("nvmlDeviceGetNvLinkState"))?,
            version: wrapper
                .version()
                .map_err(nvml_error("nvmlDeviceGetNvLinkVersion"))?,
            remote_bus_id: wrapper
                .remote_pci_info()
                .map_err(nvml_error("nvmlDeviceGetNvLinkRemotePciInfo"))?
                .bus_id,
        })
    }

    /// Every NVLink NVML reports for this GPU (links past the GPU's last are left out; a GPU
    /// without NVLink gives none).
    pub fn nvlinks(&self) -> Result<Vec<NvLinkState>> {
        let mut out = Vec::new();
        // NVML_NVLINK_MAX_LINKS.
        for link in 0..18 {
            match self.nvlink(link) {
                Ok(state) => out.push(state),
                Err(Error::SystemNotSupported { .. }) => {}
                Err(Error::Nvml { .. }) if !out.is_empty() => break,
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// How this GPU and `other` are connected.
    pub fn topology_to(&self, other: &SystemDevice<'a>) -> Result<Topology> {
        // nvml-wrapper takes the other device by value; a handle is a copyable pointer.
        let other = self
            .device
            .nvml()
            .device_by_uuid(other.uuid()?)
            .map_err(nvml_error("nvmlDeviceGetHandleByUUID"))?;
        let level = self
            .device
            .topology_common_ancestor(other)
            .map_err(nvml_error("nvmlDeviceGetTopologyCommonAncestor"))?;
        Ok(match level {
            TopologyLevel::Internal => Topology::Internal,
            TopologyLevel::Single => Topology::Single,
            TopologyLevel::Multiple => Topology::Multiple,
            TopologyLevel::HostBridge => Topology::HostBridge,
            TopologyLevel::Node => Topology::Node,
            TopologyLevel::System => Topology::System,
        })
    }

    /// The processes running compute work on this GPU, with their memory.
    pub fn compute_processes(&self) -> Result<Vec<ComputeProcess>> {
        use nvml_wrapper::enums::device::UsedGpuMemory;
        let processes = self
            .device
            .running_compute_processes()
            .map_err(nvml_error("nvmlDeviceGetComputeRunningProcesses"))?;
        Ok(processes
            .into_iter()
            .map(|p| ComputeProcess {
                pid: p.pid,
                used_memory: match p.used_gpu_memory {
                    UsedGpuMemory::Used(bytes) => Some(bytes),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect())
    }

    /// Waits at most `timeout` for a critical XID error on this GPU, answering its XID (the
    /// driver's error number; `None` in it where NVML gives none), or `Ok(None)` when none came.
    /// One wait on an [`EventSet`] of this GPU alone, registered for
    /// [`EventKinds::XID_CRITICAL_ERROR`]: to watch for longer, or several GPUs, keep a set of
    /// [`System::events`].
    #[doc(alias("nvmlEventTypeXidCriticalError", "nvmlEventSetWait_v2"))]
    pub fn wait_for_xid(&self, timeout: Duration) -> Result<Option<Option<u64>>> {
        let set = EventSet::new(
            self.device.nvml(),
            EventKinds::XID_CRITICAL_ERROR,
            [&self.device],
        )?;
        Ok(set.wait(timeout)?.map(|event| event.xid))
    }

    /// Whether persistence mode is on: the driver keeps the GPU initialised while no program
    /// uses it, so that the next starts sooner (Linux).
    #[doc(alias = "nvmlDeviceGetPersistenceMode")]
    pub fn persistence_mode(&self) -> Result<bool> {
        self.device
            .is_in_persistent_mode()
            .map_err(nvml_error("nvmlDeviceGetPersistenceMode"))
    }

    /// The CPUs nearest this GPU, within its NUMA node or its socket: their ids, in ascending
    /// order (the numbers of `sched_setaffinity` and `/proc/cpuinfo`), not NVML's bitmask.
    /// Where `scope` does not apply to the machine, NVML answers for the nearest level that
    /// does.
    #[doc(alias("nvmlDeviceGetCpuAffinityWithinScope", "nvmlDeviceGetCpuAffinity"))]
    pub fn cpu_affinity(&self, scope: AffinityScope) -> Result<Vec<u32>> {
        self.device
            .cpu_affinity_within_scope(CPU_SET_WORDS, scope.code())
            .map(|words| ids_of_bits(&words))
            .map_err(nvml_error("nvmlDeviceGetCpuAffinityWithinScope"))
    }

    /// The memory nearest this GPU: the ids of the NUMA nodes ([`AffinityScope::Node`]) or of
    /// the CPU sockets ([`AffinityScope::Socket`]) whose memory is nearest, in ascending
    /// order, not NVML's bitmask.
    #[doc(alias = "nvmlDeviceGetMemoryAffinity")]
    pub fn memory_affinity(&self, scope: AffinityScope) -> Result<Vec<u32>> {
        self.device
            .memory_affinity(NODE_SET_WORDS, scope.code())
            .map(|words| ids_of_bits(&words))
            .map_err(nvml_error("nvmlDeviceGetMemoryAffinity"))
    }

    /// The InfoROM's versions: its image's, and each object's the board has. A board without
    /// an InfoROM answers [`Error::SystemNotSupported`] naming
    /// `nvmlDeviceGetInforomImageVersion`.
    #[doc(alias("nvmlDeviceGetInforomImageVersion", "nvmlDeviceGetInforomVersion"))]
    pub fn inforom(&self) -> Result<InforomVersions> {
        let image = self
            .device
            .info_rom_image_version()
            .map_err(nvml_error("nvmlDeviceGetInforomImageVersion"))?;
        let object = |object| match self.device.info_rom_version(object) {
            Ok(version) => Ok(Some(version)),
            Err(e) => match nvml_error("nvmlDeviceGetInforomVersion")(e) {
                Error::SystemNotSupported { .. } => Ok(None),
                other => Err(other),
            },
        };
        Ok(InforomVersions {
            image,
            oem: object(InfoRom::OEM)?,
            ecc: object(InfoRom::ECC)?,
            power: object(InfoRom::Power)?,
        })
    }

    /// How this GPU reaches the system allocator's memory. An NVML that lacks the query (of an
    /// older driver) answers [`Error::SystemNotSupported`].
    #[doc(alias = "nvmlDeviceGetAddressingMode")]
    pub fn addressing_mode(&self) -> Result<AddressingMode> {
        const QUERY: &str = "nvmlDeviceGetAddressingMode";
        // nvml-wrapper 0.13 loads the function but does not wrap it.
        let call = self
            .device
            .nvml()
            .lib()
            .nvmlDeviceGetAddressingMode
            .as_ref()
            .map_err(|_| Error::SystemNotSupported { query: QUERY })?;
        if pointee_size(call) != std::mem::size_of::<RawAddressingMode>() {
            return Err(layout_mismatch(QUERY));
        }
        let mut mode = RawAddressingMode {
            version: ADDRESSING_MODE_V1,
            value: 0,
        };
        // SAFETY: `call` is NVML's nvmlDeviceGetAddressingMode, of the library `self` borrows;
        // it is given this device's handle, valid while the library is, and a pointer to a
        // struct of nvml.h's layout (its size checked above), which it writes during the call.
        let code = unsafe { call(self.device.handle(), std::ptr::from_mut(&mut mode).cast()) };
        nvml_try(code).map_err(nvml_error(QUERY))?;
        Ok(match mode.value {
            0 => AddressingMode::None,
            1 => AddressingMode::Hmm,
            2 => AddressingMode::Ats,
            other => AddressingMode::Other(other),
        })
    }

    /// Whether a display is connected to one of the GPU's outputs (`nvidia-smi`'s display
    /// mode).
    #[doc(alias = "nvmlDeviceGetDisplayMode")]
    pub fn display_connected(&self) -> Result<bool> {
        self.device
            .is_display_connected()
            .map_err(nvml_error("nvmlDeviceGetDisplayMode"))
    }

    /// Whether a display is initialised on the GPU (an X server has memory for a screen on
    /// it, say), connected or not.
    #[doc(alias = "nvmlDeviceGetDisplayActive")]
    pub fn display_active(&self) -> Result<bool> {
        self.device
            .is_display_active()
            .map_err(nvml_error("nvmlDeviceGetDisplayActive"))
    }

    /// Whether C2C mode is on: the GPU is joined to its CPU by NVLink-C2C (chip to chip), as
    /// in a Grace Hopper superchip. Other GPUs answer [`Error::SystemNotSupported`].
    #[doc(alias = "nvmlDeviceGetC2cModeInfoV")]
    pub fn c2c_enabled(&self) -> Result<bool> {
        const QUERY: &str = "nvmlDeviceGetC2cModeInfoV";
        // nvml-wrapper 0.13 loads the function but does not wrap it.
        let call = self
            .device
            .nvml()
            .lib()
            .nvmlDeviceGetC2cModeInfoV
            .as_ref()
            .map_err(|_| Error::SystemNotSupported { query: QUERY })?;
        if pointee_size(call) != std::mem::size_of::<RawC2cModeInfo>() {
            return Err(layout_mismatch(QUERY));
        }
        let mut info = RawC2cModeInfo { is_c2c_enabled: 0 };
        // SAFETY: `call` is NVML's nvmlDeviceGetC2cModeInfoV, of the library `self` borrows; it
        // is given this device's handle, valid while the library is, and a pointer to a struct
        // of nvml.h's layout (its size checked above), which it writes during the call.
        let code = unsafe { call(self.device.handle(), std::ptr::from_mut(&mut info).cast()) };
        nvml_try(code).map_err(nvml_error(QUERY))?;
        Ok(info.is_c2c_enabled != 0)
    }

    /// The CUDA device that is this GPU, matched by UUID; `None` where this process does not
    /// see it (`CUDA_VISIBLE_DEVICES` hides it, or it is not a CUDA device).
    pub fn cuda_device(&self) -> Result<Option<crate::Device>> {
        let uuid = self.uuid()?;
        for device in crate::Device::all()? {
            if device.uuid()?.to_nvml_string() == uuid {
                return Ok(Some(device));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bitmask_gives_the_ids_of_its_bits_word_by_word() {
        // NVML's example: CPUs 0, 1, 32 and 33 in one word, and a bit of the next.
        assert_eq!(ids_of_bits(&[0x3_0000_0003, 0b101]), [0, 1, 32, 33, 64, 66]);
        assert_eq!(ids_of_bits(&[0, 1 << 63]), [127]);
        assert_eq!(ids_of_bits(&[c_ulong::MAX]), (0..64).collect::<Vec<u32>>());
        assert!(ids_of_bits(&[0, 0]).is_empty());
        assert_eq!(ADDRESSING_MODE_V1, 0x0100_0008);
    }

    #[test]
    fn an_unsupported_query_is_its_own_error_and_others_keep_their_reason() {
        let err = nvml_error("nvmlDeviceGetFanSpeed")(NvmlError::NotSupported);
        assert_eq!(
            err,
            Error::SystemNotSupported {
                query: "nvmlDeviceGetFanSpeed"
            }
        );
        assert!(err.to_string().contains("nvmlDeviceGetFanSpeed"), "{err}");
        let err = nvml_error("nvmlDeviceGetName")(NvmlError::NoPermission);
        assert!(
            matches!(&err, Error::Nvml { query: "nvmlDeviceGetName", reason } if !reason.is_empty()),
            "{err}"
        );
    }
}
