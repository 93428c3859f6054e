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

use std::path::PathBuf;

use crate::error::Result;

pub(crate) mod types;

pub use self::types::{Abi, AbiChoice, DriverVersion, NvrtcInfo, NvvmInfo};

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
    crate::driver::nvvm_info()
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
    let loaded = crate::driver::loaded()?;
    let nvrtc = crate::driver::nvrtc().map(|n| NvrtcInfo {
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
        nvjitlink: crate::driver::nvjitlink_info(),
        nvvm: nvvm_info(),
    })
}
