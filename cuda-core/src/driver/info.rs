//! What the process runs on: the driver's version, the ABI chosen and why, the NVRTC,
//! nvJitLink and libNVVM found. Every type here is plain information, read once by [`driver_info`].
//!
//! ```no_run
//! use cuda_core::info::{driver_info, Abi};
//!
//! let info = driver_info()?;
//! println!("CUDA driver {} through the {} ABI ({})", info.version, info.abi, info.abi_choice);
//! if info.abi == Abi::Cuda12 {
//!     println!("the CUDA 12.9 header's table");
//! }
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::fmt;
use std::path::PathBuf;

use crate::error::Result;

/// A CUDA driver version as `cuDriverGetVersion` reports it: `1000 * major + 10 * minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion(pub i32);

impl DriverVersion {
    /// The major version (`12` for 12.4).
    pub fn major(self) -> i32 {
        self.0 / 1000
    }

    /// The minor version (`4` for 12.4).
    pub fn minor(self) -> i32 {
        self.0 % 1000 / 10
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major(), self.minor())
    }
}

/// Which driver ABI (which header's function table) the process uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Abi {
    /// The CUDA 12.9 header's table, for 12.x drivers (and 13.x ones when forced).
    Cuda12,
    /// The CUDA 13 header's table, for 13.x and newer drivers.
    Cuda13,
}

impl Abi {
    /// The CUDA major version of the ABI: 12 or 13.
    pub fn major(self) -> u32 {
        match self {
            Abi::Cuda12 => 12,
            Abi::Cuda13 => 13,
        }
    }
}

impl fmt::Display for Abi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA {}", self.major())
    }
}

/// Why the ABI in use was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AbiChoice {
    /// Picked from the driver's version.
    Probe,
    /// Forced by `CUDA_CORE_DRIVER_ABI`.
    Override,
}

impl fmt::Display for AbiChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AbiChoice::Probe => write!(f, "picked from the driver version"),
            AbiChoice::Override => write!(f, "forced by CUDA_CORE_DRIVER_ABI"),
        }
    }
}

/// The NVRTC library the process found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvrtcInfo {
    /// `(major, minor)`, as `nvrtcVersion` reports it.
    pub version: (i32, i32),
    /// The file it was loaded from, or the name the dynamic loader resolved.
    pub location: PathBuf,
}

/// The libNVVM library the process found: see [`nvvm_info`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvvmInfo {
    /// `(major, minor)`, as `nvvmVersion` reports it (2.0 in CUDA 12.9 and 13.5 alike).
    pub version: (i32, i32),
    /// The NVVM IR version it takes and its debug metadata version, `(major, minor,
    /// debug_major, debug_minor)`, as `nvvmIRVersion` reports them: a module's
    /// `!nvvmir.version` must match the major.
    pub ir_version: (i32, i32, i32, i32),
    /// The file it was loaded from (where the loader found it for a name).
    pub location: PathBuf,
}

/// The libNVVM this process compiles NVVM IR with (loading it on first use: found like NVRTC,
/// through `CUDA_CORE_NVVM_PATH`, the loader, a toolkit's `nvvm/lib64` and the
/// `nvidia-nvvm` / `nvidia-cuda-nvcc-cu12` wheels). Needs no driver or GPU; fails with
/// [`Error::NvvmNotFound`](crate::Error::NvvmNotFound) listing every place tried.
///
/// ```no_run
/// let nvvm = cuda_core::info::nvvm_info()?;
/// let (major, minor, _, _) = nvvm.ir_version;
/// println!("NVVM IR {major}.{minor} from {}", nvvm.location.display());
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("nvvmVersion", "nvvmIRVersion"))]
pub fn nvvm_info() -> Result<NvvmInfo> {
    super::nvvm::nvvm_info()
}

/// What the process runs on: see [`driver_info`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DriverInfo {
    /// The driver's version (`cuDriverGetVersion`).
    pub version: DriverVersion,
    /// The ABI in use.
    pub abi: Abi,
    /// Why that ABI.
    pub abi_choice: AbiChoice,
    /// The driver library's name as loaded.
    pub library: String,
    /// How many functions of the ABI's header the driver exports, and how many the header has.
    pub functions_loaded: (usize, usize),
    /// Whether `cuInit` succeeded, and the error if not (no device, for example).
    pub init: Result<()>,
    /// The NVRTC found, or why none was.
    pub nvrtc: Result<NvrtcInfo>,
    /// The nvJitLink found, `(major, minor)` and where, or why none was.
    pub nvjitlink: std::result::Result<((u32, u32), PathBuf), String>,
    /// The libNVVM found, or why none was (see [`nvvm_info`]).
    pub nvvm: Result<NvvmInfo>,
}

/// Reports the driver this process uses: its version, the ABI chosen and why, how many of that
/// header's functions it exports, whether `cuInit` succeeded, and the NVRTC, nvJitLink and
/// libNVVM found.
///
/// Fails only when no usable driver library loads ([`Error::DriverNotFound`],
/// [`Error::DriverTooOld`], or a bad `CUDA_CORE_DRIVER_ABI` as [`Error::Config`]).
///
/// [`Error::DriverNotFound`]: crate::Error::DriverNotFound
/// [`Error::DriverTooOld`]: crate::Error::DriverTooOld
/// [`Error::Config`]: crate::Error::Config
#[doc(alias = "cuDriverGetVersion")]
pub fn driver_info() -> Result<DriverInfo> {
    let loaded = super::load::loaded()?;
    let nvrtc = super::nvrtc::nvrtc().map(|n| NvrtcInfo {
        version: n.version(),
        location: n.location().to_path_buf(),
    });
    Ok(DriverInfo {
        version: loaded.driver.version(),
        abi: loaded.driver.abi(),
        abi_choice: loaded.choice.clone(),
        library: loaded.library.clone(),
        functions_loaded: loaded.driver.functions_loaded(),
        init: loaded.init.clone(),
        nvrtc,
        nvjitlink: super::nvjitlink::nvjitlink_info(),
        nvvm: nvvm_info(),
    })
}
