//! The crate's one error type.

use std::fmt;

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

/// Everything that can go wrong in this crate.
///
/// Driver errors carry the driver's own name and description of the code, and the call that
/// returned it:
///
/// ```
/// # fn main() {
/// match cuda_core::driver_info() {
///     Ok(info) => println!("CUDA driver {}", info.version),
///     Err(cuda_core::Error::DriverNotFound { .. }) => println!("no CUDA driver here"),
///     Err(other) => println!("{other}"),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A driver call returned an error code.
    #[error("{call} failed with {name} ({code}): {description}")]
    Driver {
        /// The driver function that failed (its plain name, such as `cuCtxCreate`).
        call: &'static str,
        /// The `CUresult` code.
        code: i32,
        /// The code's name from `cuGetErrorName` (`CUDA_ERROR_INVALID_VALUE`).
        name: &'static str,
        /// The code's description from `cuGetErrorString`.
        description: &'static str,
    },

    /// No CUDA driver library could be loaded.
    #[error(
        "no CUDA driver was found: {}. cuda-core loads the NVIDIA driver's libcuda.so.1 at run \
         time; install the NVIDIA driver (on a machine with an NVIDIA GPU), or make its \
         directory known to the dynamic loader (LD_LIBRARY_PATH)",
        tried.join("; ")
    )]
    DriverNotFound {
        /// Each library name tried, with the loader's reason it failed.
        tried: Vec<String>,
    },

    /// The installed driver is older than the oldest ABI this crate speaks.
    #[error(
        "the CUDA driver is version {found}, older than {needed}, the oldest this crate supports; \
         update the NVIDIA driver"
    )]
    DriverTooOld {
        /// The version the driver reports.
        found: DriverVersion,
        /// The oldest version supported.
        needed: DriverVersion,
    },

    /// The running driver does not provide a function this operation needs.
    #[error(
        "{function} is not provided by the running CUDA driver (version {driver}, used through \
         the CUDA {abi} ABI); it needs a newer driver"
    )]
    NotSupported {
        /// The driver function (its plain name).
        function: &'static str,
        /// The running driver's version.
        driver: DriverVersion,
        /// The ABI major in use (12 or 13).
        abi: u32,
    },

    /// An environment variable that configures this crate has a value it cannot use.
    #[error("{variable}={value:?} cannot be used: {reason}")]
    Config {
        /// The variable's name.
        variable: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },

    /// An argument was rejected before any driver call.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// NVRTC, the runtime compiler, could not be loaded.
    #[error("{0}")]
    NvrtcNotFound(String),

    /// A compilation failed; the log is the compiler's, whole.
    #[error("compiling {program} failed:\n{log}")]
    Compile {
        /// The program's name.
        program: String,
        /// The compiler's full log.
        log: String,
    },

    /// A link failed, or the linker cannot take an input; the log is the linker's, whole.
    #[error("linking failed:\n{log}")]
    Link {
        /// The linker's full log, or why the input cannot be linked.
        log: String,
    },

    /// A program cache could not be used.
    #[error("program cache at {}: {reason}", path.display())]
    Cache {
        /// The cache's directory or file.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl Error {
    /// The driver's `CUresult` code, for [`Error::Driver`].
    pub fn driver_code(&self) -> Option<i32> {
        match self {
            Error::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
