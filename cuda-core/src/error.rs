//! The crate's one error type, the driver's codes, and the causes errors carry.

use std::fmt;
use std::sync::Arc;

use crate::info::types::DriverVersion;

/// A driver result code (`CUresult`), with a named constant for every code of the CUDA 13
/// header (generated from it: `DriverCode::OUT_OF_MEMORY` is `CUDA_ERROR_OUT_OF_MEMORY`).
/// Branch on it without comparing strings:
///
/// ```
/// use cuda_core::{DriverCode, Error};
///
/// fn retry_smaller(e: &Error) -> bool {
///     e.driver_code() == Some(DriverCode::OUT_OF_MEMORY)
/// }
/// # assert!(!retry_smaller(&Error::InvalidArgument { name: "n", reason: String::new() }));
/// ```
#[doc(alias = "CUresult")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct DriverCode(pub i32);

impl fmt::Display for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "CUresult {}", self.0),
        }
    }
}

/// The constants, generated from the header's `CUresult` by `cargo xtask regenerate-bindings`.
mod driver_codes {
    include!("generated/driver_codes.rs");
}

/// The failure an [`Error`] wraps (an I/O error, a loader's error), shared so that the error
/// stays `Clone`. It stands for the wrapped error itself: it displays as it does and gives its
/// source; [`Cause::downcast_ref`] reaches the concrete type.
///
/// Two causes compare equal when they display the same text.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Cause {
    /// Wraps an error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Cause {
        Cause(Arc::new(error))
    }

    /// The wrapped error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The wrapped error as `T`, if it is one (`std::io::Error`, say).
    pub fn downcast_ref<T: std::error::Error + 'static>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

/// Everything that can go wrong in this crate.
///
/// Driver errors carry the code ([`DriverCode`]), the driver's own name and description of it,
/// and the call that returned it; errors that wrap an I/O or loader failure give it as their
/// [`source`](std::error::Error::source):
///
/// ```
/// # fn main() {
/// match cuda_core::info::driver_info() {
///     Ok(info) => println!("CUDA driver {}", info.version),
///     Err(cuda_core::Error::DriverNotFound { .. }) => println!("no CUDA driver here"),
///     Err(other) => println!("{other}"),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A driver call returned an error code. Where the driver logs why (drivers 12.9 and
    /// newer, `cuLogsRegisterCallback`), its lines are in `log` and in the message.
    #[error("{call} failed with {name} ({}): {description}{}", code.0, log_suffix(log))]
    Driver {
        /// The driver function that failed (its plain name, such as `cuCtxCreate`).
        call: &'static str,
        /// The `CUresult` code.
        code: DriverCode,
        /// The code's name from `cuGetErrorName` (`CUDA_ERROR_INVALID_VALUE`).
        name: &'static str,
        /// The code's description from `cuGetErrorString`.
        description: &'static str,
        /// What the driver logged on this thread about the failure (`cuLogsRegisterCallback`,
        /// drivers 12.9 and newer; `None` before, or where the driver said nothing): which
        /// value was wrong, say. One line per message; see [`Error::driver_log`].
        log: Option<Arc<str>>,
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
        /// The loader's error for the first name, or why the library loaded is not a driver.
        #[source]
        source: Option<Cause>,
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
        /// The driver function (its plain name); for a feature that newer drivers added to
        /// a function, the call, the feature and the drivers that have it.
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

    /// A stream capture could not end in a graph (the driver invalidated it, or it was left
    /// unjoined), or work was refused before the driver because of a capture: over memory
    /// whose stream captures, from a stream that does not, or on the legacy default stream
    /// while a blocking stream of its context captures.
    #[error("the stream capture failed: {reason}")]
    Capture {
        /// What broke it, and the driver's code.
        reason: String,
    },

    /// An executable graph could not be updated in place from a graph
    /// ([`GraphExec::update`](crate::GraphExec::update)); it is left as it was.
    #[error("the executable graph was not updated: {reason}")]
    GraphUpdate {
        /// The driver's reason (`CUgraphExecUpdateResult`), and the node it names.
        reason: String,
        /// The node of the new graph that the driver names, where it names one.
        node: Option<crate::graph::id::GraphNode>,
    },

    /// The driver could not instantiate a graph
    /// ([`Graph::instantiate_uploaded`](crate::Graph::instantiate_uploaded)).
    #[error("the graph was not instantiated: {reason}")]
    GraphInstantiate {
        /// The driver's reason (`CUgraphInstantiateResult`), and the node it names.
        reason: String,
        /// The node of the graph that the driver names, where it names one.
        node: Option<crate::graph::id::GraphNode>,
    },

    /// An argument was rejected before any driver call.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },

    /// NVRTC, the runtime compiler, could not be loaded (or lacks a function).
    #[error("{reason}")]
    NvrtcNotFound {
        /// Every place tried and why each failed, or what the loaded library lacks.
        reason: String,
        /// The search's own error, where the search failed.
        #[source]
        source: Option<Cause>,
    },

    /// libNVVM, the NVVM IR compiler, could not be loaded (or lacks a function).
    #[error("{reason}")]
    NvvmNotFound {
        /// Every place tried and why each failed, or what the loaded library lacks.
        reason: String,
        /// The search's own error, where the search failed.
        #[source]
        source: Option<Cause>,
    },

    /// NCCL, the collective communication library behind `cuda_core::nccl` (feature `nccl`),
    /// could not be loaded, is older than the crate takes, or lacks a function.
    #[error("{reason}")]
    NcclNotFound {
        /// Every place tried and why each failed, or what the loaded library lacks.
        reason: String,
        /// The search's own error, where the search failed.
        #[source]
        source: Option<Cause>,
    },

    /// An NCCL call failed, or (`call` is `ncclCommGetAsyncError`) a communicator's work failed
    /// after its call returned: a peer that left or failed (`ncclRemoteError`, 6), a network
    /// error (`ncclSystemError`, 2), an aborted communicator.
    #[error("{call} failed with {name} ({code}): {message}")]
    Nccl {
        /// The NCCL function that failed (`ncclAllReduce`).
        call: &'static str,
        /// The `ncclResult_t` code.
        code: i32,
        /// The code's name (`ncclRemoteError`).
        name: &'static str,
        /// NCCL's message for the communicator's last error (`ncclGetLastError`), or the
        /// code's description where it has none.
        message: String,
    },

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
        /// The I/O error behind it, if any.
        #[source]
        source: Option<Cause>,
    },

    /// NVML, the management library behind [`system`](crate::system), could not be loaded.
    #[error(
        "NVML (the NVIDIA management library) could not be loaded: {}. It comes with the \
         NVIDIA driver; set CUDA_CORE_NVML_PATH to its file if it is elsewhere",
        tried.join("; ")
    )]
    NvmlNotFound {
        /// Each library tried, with why it failed.
        tried: Vec<String>,
    },

    /// The GPU or its driver does not support this NVML query.
    #[error("{query} is not supported by this GPU or driver")]
    SystemNotSupported {
        /// The NVML function.
        query: &'static str,
    },

    /// An NVML query failed.
    #[error("{query} failed: {reason}")]
    Nvml {
        /// The NVML function.
        query: &'static str,
        /// NVML's reason.
        reason: String,
    },

    /// Sending or receiving over a socket (a shared pool's file descriptor, say) failed, or
    /// the other end closed before a whole message came.
    #[error("{operation} on the socket failed: {source}")]
    Socket {
        /// The system call, or what was being received.
        operation: &'static str,
        /// The system's error.
        #[source]
        source: Cause,
    },

    /// An operation on a file descriptor the driver made failed (its duplicate with
    /// close-on-exec, say, when the process has no descriptor left).
    #[error("{operation} on a file descriptor failed: {source}")]
    FileDescriptor {
        /// The system call.
        operation: &'static str,
        /// The system's error.
        #[source]
        source: Cause,
    },

    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: Cause,
    },

    /// A wait with a deadline ([`Stream::sync_timeout`](crate::Stream::sync_timeout),
    /// [`Event::wait_timeout`](crate::Event::wait_timeout)) ended before the work it waited
    /// for. That work is still queued and runs on: wait again, or let it finish.
    #[error("{what} did not finish within {after:?}; it is still queued and runs on")]
    Timeout {
        /// What was waited for (`the stream's work`).
        what: &'static str,
        /// The time allowed.
        after: std::time::Duration,
    },
}

impl Error {
    /// The driver's `CUresult` code, for [`Error::Driver`].
    pub fn driver_code(&self) -> Option<DriverCode> {
        match self {
            Error::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The driver's own log of a failed call, for [`Error::Driver`]: the lines the driver
    /// logged on the calling thread since its previous driver error, at most 16 (the newest),
    /// one per line. Drivers 12.9 and newer log why a call failed (`cuLogsRegisterCallback`,
    /// which the crate registers once when it loads the driver, at no cost to calls that
    /// succeed); older drivers give `None`. The same lines end the error's message.
    ///
    /// ```no_run
    /// use cuda_core::Device;
    ///
    /// if let Err(e) = Device::new(0).and_then(|d| d.set_current()) {
    ///     eprintln!("{e}");
    ///     if let Some(log) = e.driver_log() {
    ///         eprintln!("the driver said: {log}");
    ///     }
    /// }
    /// ```
    #[doc(alias = "cuLogsRegisterCallback")]
    pub fn driver_log(&self) -> Option<&str> {
        match self {
            Error::Driver { log, .. } => log.as_deref(),
            _ => None,
        }
    }

    /// NCCL's `ncclResult_t` code, for [`Error::Nccl`].
    pub fn nccl_code(&self) -> Option<i32> {
        match self {
            Error::Nccl { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The end of a driver error's message: the driver's log lines, where it has any.
fn log_suffix(log: &Option<Arc<str>>) -> String {
    match log {
        Some(log) => format!(" (the driver's log: {})", log.replace('\n', "; ")),
        None => String::new(),
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
