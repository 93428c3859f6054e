//! The information types: plain values that depend on nothing of the crate (the driver's code
//! names them here, below the functions of [`info`](crate::info) that read them).

use std::fmt;
use std::path::PathBuf;

/// A CUDA driver version as `cuDriverGetVersion` reports it: `1000 * major + 10 * minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[doc(alias = "cuDriverGetVersion")]
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

/// The libNVVM library the process found: see [`nvvm_info`](crate::info::nvvm_info).
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
