//! GPU core dumps: whether an exception on the GPU (a kernel's illegal address, a trap) writes
//! one, where to, what it holds, and whether one can be asked for through a pipe
//! (`cuCoredumpGetAttribute`, `cuCoredumpSetAttribute` and their `Global` forms, drivers 12.1
//! and newer). cuda-gdb and `compute-sanitizer` read the files.
//!
//! The settings exist twice: the process's, read and changed by the functions of this module
//! (`cuCoredump*AttributeGlobal`), which a context takes when it is made; and each context's
//! own, through [`Context::coredump`] (`cuCoredump*Attribute`, with the context made current
//! for the call and the caller's context restored), which change that context alone. They
//! change what this process does when its work faults, never a setting of the GPU.
//!
//! ```no_run
//! use cuda_core::coredump::{self, CoredumpFlags};
//! use cuda_core::Device;
//!
//! // Contexts made from now on dump the GPU's state when their work faults.
//! coredump::set_enable_on_exception(true)?;
//! // One context's own settings: its file, and no memory in the dump.
//! let context = Device::new(0)?.primary_context()?;
//! let dump = context.coredump();
//! dump.set_enable_on_exception(true)?;
//! dump.set_file("/tmp/gpu-core.primary")?;
//! dump.set_flags(CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT)?;
//! assert_eq!(dump.file()?, std::path::Path::new("/tmp/gpu-core.primary"));
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! What the driver decides:
//!
//! - cuda-gdb's environment variables (`CUDA_ENABLE_COREDUMP_ON_EXCEPTION`,
//!   `CUDA_COREDUMP_FILE`, ...) set before the driver initialised win for good: these calls do
//!   not change a setting one of them gave (read it back to see).
//! - A context cannot have its own user trigger or pipe: [`ContextCoredump`] reads them, and
//!   only the process's can be set ([`set_enable_user_trigger`], [`set_pipe`]). The pipe cannot
//!   change once the user trigger is on.
//! - [`set_flags`] replaces every flag, [`CoredumpFlags::SKIP_ABORT`] and
//!   [`CoredumpFlags::LIGHTWEIGHT`]'s bits included: the older booleans [`set_trigger_host`]
//!   and [`set_lightweight`] (deprecated by the driver since 12.5) should not be mixed with it.
//! - A context's dump on exceptions needs compute capability 6.0 or newer (the driver answers
//!   `CUDA_ERROR_NOT_SUPPORTED` on older GPUs: set the process's instead).
//!
//! What the crate refuses before the driver: a path with a NUL byte, or longer than
//! [`MAX_PATH_BYTES`], is [`Error::InvalidArgument`]; the generation flags on a driver older
//! than 12.5, and flags the ABI's header does not name ([`CoredumpFlags::GZIP_COMPRESS`] and
//! the other flags of the 13 header, through the 12 ABI), are [`Error::NotSupported`]. A driver
//! older than 12.1 lacks the calls: each answers [`Error::NotSupported`] naming the call.
//! Nothing here triggers a dump.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::driver::Driver;
use crate::error::{Error, Result};
use crate::info::types::DriverVersion;

/// The longest path the driver takes for the dump file or the pipe, in bytes (the driver's
/// strings are of up to 1023 characters, in a buffer of 1024 with the NUL).
pub const MAX_PATH_BYTES: usize = 1023;

/// The oldest driver with `CU_COREDUMP_GENERATION_FLAGS`.
const FLAGS_DRIVER: DriverVersion = DriverVersion(12050);

/// A `CUcoredumpSettings` value (the same in the 12.9 and 13 headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setting {
    EnableOnException = 1,
    TriggerHost = 2,
    Lightweight = 3,
    EnableUserTrigger = 4,
    File = 5,
    Pipe = 6,
    GenerationFlags = 7,
}

/// Whose settings a call reads or changes.
#[derive(Clone, Copy)]
enum Scope<'a> {
    /// The process's (`cuCoredump*AttributeGlobal`).
    Process,
    /// One context's (`cuCoredump*Attribute`, with it current).
    Context(&'a Context),
}

impl Scope<'_> {
    fn driver(self) -> Result<&'static dyn Driver> {
        match self {
            Scope::Process => crate::driver::driver(),
            Scope::Context(context) => Ok(context.driver()),
        }
    }

    /// Reads `setting` into `value`, sized as the driver takes it.
    fn get(self, setting: Setting, value: &mut [u8]) -> Result<()> {
        let code = setting as u32;
        match self {
            Scope::Process => {
                crate::driver::driver()?.coredump_get_attribute_global(code, value)?;
            }
            Scope::Context(context) => {
                context.with_current(|driver| driver.coredump_get_attribute(code, value))?;
            }
        }
        Ok(())
    }

    /// Sets `setting` to `value`, sized as the driver takes it.
    fn set(self, setting: Setting, value: &mut [u8]) -> Result<()> {
        let code = setting as u32;
        match self {
            Scope::Process => crate::driver::driver()?.coredump_set_attribute_global(code, value),
            Scope::Context(context) => {
                context.with_current(|driver| driver.coredump_set_attribute(code, value))
            }
        }
    }

    /// A boolean setting: a C `bool`, one byte.
    fn get_bool(self, setting: Setting) -> Result<bool> {
        let mut value = [0u8; 1];
        self.get(setting, &mut value)?;
        Ok(value[0] != 0)
    }

    fn set_bool(self, setting: Setting, on: bool) -> Result<()> {
        self.set(setting, &mut [u8::from(on)])
    }

    /// A path setting: the driver writes a NUL-terminated string into a buffer of
    /// `MAX_PATH_BYTES + 1` bytes, zeroed first; the path is what comes before the first NUL.
    fn get_path(self, setting: Setting) -> Result<PathBuf> {
        let mut value = vec![0u8; MAX_PATH_BYTES + 1];
        self.get(setting, &mut value)?;
        let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
        value.truncate(end);
        Ok(PathBuf::from(OsString::from_vec(value)))
    }

    /// Sets a path setting: its bytes and a NUL, the size counting the NUL.
    fn set_path(self, setting: Setting, path: &Path) -> Result<()> {
        let bytes = path.as_os_str().as_bytes();
        if let Some(at) = bytes.iter().position(|&b| b == 0) {
            return Err(Error::InvalidArgument {
                name: "path",
                reason: format!("it has a NUL byte (at byte {at}), which would end it there"),
            });
        }
        if bytes.len() > MAX_PATH_BYTES {
            return Err(Error::InvalidArgument {
                name: "path",
                reason: format!(
                    "{} bytes long: the driver takes at most {MAX_PATH_BYTES}",
                    bytes.len()
                ),
            });
        }
        let mut value = Vec::with_capacity(bytes.len() + 1);
        value.extend_from_slice(bytes);
        value.push(0);
        self.set(setting, &mut value)
    }

    /// Refuses the generation flags on a driver that lacks them.
    fn require_flags(self, driver: &'static dyn Driver) -> Result<()> {
        if driver.version() >= FLAGS_DRIVER {
            return Ok(());
        }
        Err(Error::NotSupported {
            function: "CU_COREDUMP_GENERATION_FLAGS (drivers 12.5 and newer)",
            driver: driver.version(),
            abi: driver.abi().major(),
        })
    }

    /// The generation flags: a C `int`.
    fn get_flags(self) -> Result<CoredumpFlags> {
        self.require_flags(self.driver()?)?;
        let mut value = [0u8; 4];
        self.get(Setting::GenerationFlags, &mut value)?;
        Ok(CoredumpFlags(u32::from_ne_bytes(value)))
    }

    fn set_flags(self, flags: CoredumpFlags) -> Result<()> {
        flags.check()?;
        let driver = self.driver()?;
        self.require_flags(driver)?;
        let unnamed = flags.0 & !driver.coredump_flags_named();
        if unnamed != 0 {
            return Err(Error::NotSupported {
                function: "CUCoredumpGenerationFlags (GZIP_COMPRESS, FAULTED_CONTEXTS_ONLY, \
                           SKIP_TENSOR_MEMORY, NO_ERRBAR_AT_EXIT, LOG_ONLY: in the CUDA 13 \
                           header only, not through the 12 ABI)",
                driver: driver.version(),
                abi: driver.abi().major(),
            });
        }
        self.set(Setting::GenerationFlags, &mut flags.0.to_ne_bytes())
    }
}

/// Whether an exception on the GPU writes a core dump, by default for contexts made from now
/// on (`CU_COREDUMP_ENABLE_ON_EXCEPTION` of the process; the driver's default is `false`).
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_ENABLE_ON_EXCEPTION"))]
pub fn enable_on_exception() -> Result<bool> {
    Scope::Process.get_bool(Setting::EnableOnException)
}

/// Sets whether an exception on the GPU writes a core dump, for the process
/// (`CU_COREDUMP_ENABLE_ON_EXCEPTION`; see [`enable_on_exception`]).
///
/// ```no_run
/// use cuda_core::coredump;
///
/// let before = coredump::enable_on_exception()?;
/// coredump::set_enable_on_exception(true)?;
/// // ... contexts made here dump on an exception ...
/// coredump::set_enable_on_exception(before)?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_ENABLE_ON_EXCEPTION"))]
pub fn set_enable_on_exception(on: bool) -> Result<()> {
    Scope::Process.set_bool(Setting::EnableOnException, on)
}

/// Whether the host process aborts, dumping its own core too, after a GPU core dump
/// (`CU_COREDUMP_TRIGGER_HOST` of the process; the driver's default is `true`). Deprecated by
/// the driver since 12.5 for [`CoredumpFlags::SKIP_ABORT`].
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_TRIGGER_HOST"))]
pub fn trigger_host() -> Result<bool> {
    Scope::Process.get_bool(Setting::TriggerHost)
}

/// Sets whether the host process aborts after a GPU core dump, for the process
/// (`CU_COREDUMP_TRIGGER_HOST`; see [`trigger_host`]).
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_TRIGGER_HOST"))]
pub fn set_trigger_host(on: bool) -> Result<()> {
    Scope::Process.set_bool(Setting::TriggerHost, on)
}

/// Whether core dumps leave out the GPU's memory and the code images not relocated at run
/// time (`CU_COREDUMP_LIGHTWEIGHT` of the process; the driver's default is `false`).
/// Deprecated by the driver since 12.5 for [`CoredumpFlags::LIGHTWEIGHT`].
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_LIGHTWEIGHT"))]
pub fn lightweight() -> Result<bool> {
    Scope::Process.get_bool(Setting::Lightweight)
}

/// Sets whether core dumps are lightweight, for the process (`CU_COREDUMP_LIGHTWEIGHT`; see
/// [`lightweight`]).
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_LIGHTWEIGHT"))]
pub fn set_lightweight(on: bool) -> Result<()> {
    Scope::Process.set_bool(Setting::Lightweight, on)
}

/// Whether writing to the pipe ([`pipe`]) makes the driver write a core dump
/// (`CU_COREDUMP_ENABLE_USER_TRIGGER` of the process; the driver's default is `false`).
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_ENABLE_USER_TRIGGER"))]
pub fn enable_user_trigger() -> Result<bool> {
    Scope::Process.get_bool(Setting::EnableUserTrigger)
}

/// Sets whether writing to the pipe makes the driver write a core dump, for the process
/// (`CU_COREDUMP_ENABLE_USER_TRIGGER`; a context has none of its own). Set the pipe
/// ([`set_pipe`]) first: it cannot change once this is on.
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_ENABLE_USER_TRIGGER"))]
pub fn set_enable_user_trigger(on: bool) -> Result<()> {
    Scope::Process.set_bool(Setting::EnableUserTrigger, on)
}

/// Where core dumps are written, by default for contexts made from now on (`CU_COREDUMP_FILE`
/// of the process; the driver's default is `core.cuda.HOSTNAME.PID`).
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_FILE"))]
pub fn file() -> Result<PathBuf> {
    Scope::Process.get_path(Setting::File)
}

/// Sets where core dumps are written, for the process (`CU_COREDUMP_FILE`). A path with a NUL
/// byte, or longer than [`MAX_PATH_BYTES`], is [`Error::InvalidArgument`] before the driver.
///
/// ```no_run
/// use cuda_core::coredump;
///
/// coredump::set_file("/tmp/gpu-core")?;
/// assert_eq!(coredump::file()?, std::path::Path::new("/tmp/gpu-core"));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_FILE"))]
pub fn set_file(path: impl AsRef<Path>) -> Result<()> {
    Scope::Process.set_path(Setting::File, path.as_ref())
}

/// The pipe the driver watches for user-triggered core dumps (`CU_COREDUMP_PIPE` of the
/// process; the driver's default is `corepipe.cuda.HOSTNAME.PID`).
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_PIPE"))]
pub fn pipe() -> Result<PathBuf> {
    Scope::Process.get_path(Setting::Pipe)
}

/// Sets the pipe the driver watches for user-triggered core dumps, for the process
/// (`CU_COREDUMP_PIPE`; a context has none of its own), before
/// [`set_enable_user_trigger`]. A path with a NUL byte, or longer than [`MAX_PATH_BYTES`], is
/// [`Error::InvalidArgument`] before the driver.
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_PIPE"))]
pub fn set_pipe(path: impl AsRef<Path>) -> Result<()> {
    Scope::Process.set_path(Setting::Pipe, path.as_ref())
}

/// What core dumps hold and whether the host aborts after one (`CU_COREDUMP_GENERATION_FLAGS`
/// of the process; drivers 12.5 and newer, [`Error::NotSupported`] before the driver on older
/// ones).
#[doc(alias("cuCoredumpGetAttributeGlobal", "CU_COREDUMP_GENERATION_FLAGS"))]
pub fn flags() -> Result<CoredumpFlags> {
    Scope::Process.get_flags()
}

/// Replaces the generation flags of the process (`CU_COREDUMP_GENERATION_FLAGS`; see
/// [`flags`]). Flags the ABI's header does not name (the 13 header's, through the 12 ABI) are
/// [`Error::NotSupported`] before the driver.
///
/// ```no_run
/// use cuda_core::coredump::{self, CoredumpFlags};
///
/// coredump::set_flags(CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT)?;
/// assert!(coredump::flags()?.contains(CoredumpFlags::SKIP_ABORT));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("cuCoredumpSetAttributeGlobal", "CU_COREDUMP_GENERATION_FLAGS"))]
pub fn set_flags(flags: CoredumpFlags) -> Result<()> {
    Scope::Process.set_flags(flags)
}

impl Context {
    /// This context's own core-dump settings (see [`coredump`](crate::coredump)): each read
    /// and change makes the context current for the call (`cuCoredumpGetAttribute`,
    /// `cuCoredumpSetAttribute`) and restores the caller's context.
    ///
    /// ```no_run
    /// use cuda_core::Device;
    ///
    /// let context = Device::new(0)?.primary_context()?;
    /// context.coredump().set_lightweight(true)?;
    /// assert!(context.coredump().lightweight()?);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuCoredumpGetAttribute", "cuCoredumpSetAttribute"))]
    pub fn coredump(&self) -> ContextCoredump<'_> {
        ContextCoredump { context: self }
    }
}

/// One context's core-dump settings, from [`Context::coredump`]: as the process's (the
/// functions of [`coredump`](crate::coredump)), for this context alone, which takes the
/// process's when it is made. The user trigger and the pipe are read here, and set for the
/// process only.
#[derive(Clone, Copy, Debug)]
pub struct ContextCoredump<'a> {
    context: &'a Context,
}

impl ContextCoredump<'_> {
    fn scope(&self) -> Scope<'_> {
        Scope::Context(self.context)
    }

    /// The context whose settings these are.
    pub fn context(&self) -> &Context {
        self.context
    }

    /// Whether an exception in this context writes a core dump
    /// (`CU_COREDUMP_ENABLE_ON_EXCEPTION`; true too where the context was made with
    /// [`ContextFlags::COREDUMP_ENABLE`](crate::ContextFlags::COREDUMP_ENABLE)).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_ENABLE_ON_EXCEPTION"))]
    pub fn enable_on_exception(&self) -> Result<bool> {
        self.scope().get_bool(Setting::EnableOnException)
    }

    /// Sets whether an exception in this context writes a core dump
    /// (`CU_COREDUMP_ENABLE_ON_EXCEPTION`; compute capability 6.0 and newer).
    #[doc(alias("cuCoredumpSetAttribute", "CU_COREDUMP_ENABLE_ON_EXCEPTION"))]
    pub fn set_enable_on_exception(&self, on: bool) -> Result<()> {
        self.scope().set_bool(Setting::EnableOnException, on)
    }

    /// Whether the host process aborts after a core dump of this context
    /// (`CU_COREDUMP_TRIGGER_HOST`; see [`trigger_host`]).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_TRIGGER_HOST"))]
    pub fn trigger_host(&self) -> Result<bool> {
        self.scope().get_bool(Setting::TriggerHost)
    }

    /// Sets whether the host process aborts after a core dump of this context
    /// (`CU_COREDUMP_TRIGGER_HOST`).
    #[doc(alias("cuCoredumpSetAttribute", "CU_COREDUMP_TRIGGER_HOST"))]
    pub fn set_trigger_host(&self, on: bool) -> Result<()> {
        self.scope().set_bool(Setting::TriggerHost, on)
    }

    /// Whether this context's core dumps are lightweight (`CU_COREDUMP_LIGHTWEIGHT`; see
    /// [`lightweight`]).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_LIGHTWEIGHT"))]
    pub fn lightweight(&self) -> Result<bool> {
        self.scope().get_bool(Setting::Lightweight)
    }

    /// Sets whether this context's core dumps are lightweight (`CU_COREDUMP_LIGHTWEIGHT`).
    #[doc(alias("cuCoredumpSetAttribute", "CU_COREDUMP_LIGHTWEIGHT"))]
    pub fn set_lightweight(&self, on: bool) -> Result<()> {
        self.scope().set_bool(Setting::Lightweight, on)
    }

    /// Whether writing to the pipe makes a core dump of this context
    /// (`CU_COREDUMP_ENABLE_USER_TRIGGER`; set for the process only, with
    /// [`set_enable_user_trigger`], or by creating the context with
    /// [`ContextFlags::USER_COREDUMP_ENABLE`](crate::ContextFlags::USER_COREDUMP_ENABLE)).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_ENABLE_USER_TRIGGER"))]
    pub fn enable_user_trigger(&self) -> Result<bool> {
        self.scope().get_bool(Setting::EnableUserTrigger)
    }

    /// Where this context's core dumps are written (`CU_COREDUMP_FILE`).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_FILE"))]
    pub fn file(&self) -> Result<PathBuf> {
        self.scope().get_path(Setting::File)
    }

    /// Sets where this context's core dumps are written (`CU_COREDUMP_FILE`). A path with a
    /// NUL byte, or longer than [`MAX_PATH_BYTES`], is [`Error::InvalidArgument`] before the
    /// driver.
    #[doc(alias("cuCoredumpSetAttribute", "CU_COREDUMP_FILE"))]
    pub fn set_file(&self, path: impl AsRef<Path>) -> Result<()> {
        self.scope().set_path(Setting::File, path.as_ref())
    }

    /// The pipe the driver watches for user-triggered core dumps of this context
    /// (`CU_COREDUMP_PIPE`; set for the process only, with [`set_pipe`]).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_PIPE"))]
    pub fn pipe(&self) -> Result<PathBuf> {
        self.scope().get_path(Setting::Pipe)
    }

    /// What this context's core dumps hold (`CU_COREDUMP_GENERATION_FLAGS`; drivers 12.5 and
    /// newer).
    #[doc(alias("cuCoredumpGetAttribute", "CU_COREDUMP_GENERATION_FLAGS"))]
    pub fn flags(&self) -> Result<CoredumpFlags> {
        self.scope().get_flags()
    }

    /// Replaces this context's generation flags (`CU_COREDUMP_GENERATION_FLAGS`; see
    /// [`set_flags`]).
    #[doc(alias("cuCoredumpSetAttribute", "CU_COREDUMP_GENERATION_FLAGS"))]
    pub fn set_flags(&self, flags: CoredumpFlags) -> Result<()> {
        self.scope().set_flags(flags)
    }
}

/// What a core dump holds, and whether the host aborts after one (`CUCoredumpGenerationFlags`,
/// for [`set_flags`] and [`ContextCoredump::set_flags`]), combined with `|`.
/// [`CoredumpFlags::DEFAULT`] (no flag) dumps all the memory the driver can reach.
///
/// ```
/// use cuda_core::coredump::CoredumpFlags;
///
/// let flags = CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT;
/// assert!(flags.contains(CoredumpFlags::SKIP_GLOBAL_MEMORY));
/// assert_eq!(flags.bits(), 0x3f);
/// ```
#[doc(alias("CUCoredumpGenerationFlags", "CU_COREDUMP_DEFAULT_FLAGS"))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CoredumpFlags(u32);

impl CoredumpFlags {
    /// No flag: everything the driver can reach is dumped (`CU_COREDUMP_DEFAULT_FLAGS`).
    #[doc(alias = "CU_COREDUMP_DEFAULT_FLAGS")]
    pub const DEFAULT: CoredumpFlags = CoredumpFlags(0);
    /// Leaves out the code images not relocated at run time
    /// (`CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES`).
    #[doc(alias = "CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES")]
    pub const SKIP_NONRELOCATED_ELF_IMAGES: CoredumpFlags = CoredumpFlags(1 << 0);
    /// Leaves out device memory that belongs to no context (`CU_COREDUMP_SKIP_GLOBAL_MEMORY`).
    #[doc(alias = "CU_COREDUMP_SKIP_GLOBAL_MEMORY")]
    pub const SKIP_GLOBAL_MEMORY: CoredumpFlags = CoredumpFlags(1 << 1);
    /// Leaves out the shared memory of the faulting kernel's warps
    /// (`CU_COREDUMP_SKIP_SHARED_MEMORY`).
    #[doc(alias = "CU_COREDUMP_SKIP_SHARED_MEMORY")]
    pub const SKIP_SHARED_MEMORY: CoredumpFlags = CoredumpFlags(1 << 2);
    /// Leaves out the kernel's local memory (`CU_COREDUMP_SKIP_LOCAL_MEMORY`).
    #[doc(alias = "CU_COREDUMP_SKIP_LOCAL_MEMORY")]
    pub const SKIP_LOCAL_MEMORY: CoredumpFlags = CoredumpFlags(1 << 3);
    /// The host process does not abort after a dump (`CU_COREDUMP_SKIP_ABORT`).
    #[doc(alias = "CU_COREDUMP_SKIP_ABORT")]
    pub const SKIP_ABORT: CoredumpFlags = CoredumpFlags(1 << 4);
    /// Leaves out constant-bank memory (`CU_COREDUMP_SKIP_CONSTBANK_MEMORY`).
    #[doc(alias = "CU_COREDUMP_SKIP_CONSTBANK_MEMORY")]
    pub const SKIP_CONSTBANK_MEMORY: CoredumpFlags = CoredumpFlags(1 << 5);
    /// Compresses the dump with gzip, adding `.gz` to its name (`CU_COREDUMP_GZIP_COMPRESS`;
    /// the 13 header only).
    #[doc(alias = "CU_COREDUMP_GZIP_COMPRESS")]
    pub const GZIP_COMPRESS: CoredumpFlags = CoredumpFlags(1 << 6);
    /// Dumps only the contexts that met an exception or a trap
    /// (`CU_COREDUMP_FAULTED_CONTEXTS_ONLY`; the 13 header only).
    #[doc(alias = "CU_COREDUMP_FAULTED_CONTEXTS_ONLY")]
    pub const FAULTED_CONTEXTS_ONLY: CoredumpFlags = CoredumpFlags(1 << 7);
    /// Leaves out tensor memory (`CU_COREDUMP_SKIP_TENSOR_MEMORY`; the 13 header only).
    #[doc(alias = "CU_COREDUMP_SKIP_TENSOR_MEMORY")]
    pub const SKIP_TENSOR_MEMORY: CoredumpFlags = CoredumpFlags(1 << 8);
    /// Lets faulted warps exit rather than holding them for the dump, which costs some
    /// performance (`CU_COREDUMP_NO_ERRBAR_AT_EXIT`; the 13 header only).
    #[doc(alias = "CU_COREDUMP_NO_ERRBAR_AT_EXIT")]
    pub const NO_ERRBAR_AT_EXIT: CoredumpFlags = CoredumpFlags(1 << 30);
    /// Logs the exception without writing a dump (`CU_COREDUMP_LOG_ONLY`; the 13 header only).
    #[doc(alias = "CU_COREDUMP_LOG_ONLY")]
    pub const LOG_ONLY: CoredumpFlags = CoredumpFlags(1 << 31);
    /// The four memory flags and [`SKIP_CONSTBANK_MEMORY`](Self::SKIP_CONSTBANK_MEMORY), as
    /// the 12.9 header's `CU_COREDUMP_LIGHTWEIGHT_FLAGS` (the 13 header's adds
    /// [`SKIP_TENSOR_MEMORY`](Self::SKIP_TENSOR_MEMORY)).
    #[doc(alias = "CU_COREDUMP_LIGHTWEIGHT_FLAGS")]
    pub const LIGHTWEIGHT: CoredumpFlags = CoredumpFlags(0x2f);

    /// Every flag the CUDA 13 header names.
    const ALL: u32 = 0x1ff | 1 << 30 | 1 << 31;

    /// The raw `CUCoredumpGenerationFlags` bits.
    #[must_use]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Flags from raw bits, `None` where a bit is not one `CUCoredumpGenerationFlags` names.
    #[must_use]
    pub const fn from_bits(bits: u32) -> Option<CoredumpFlags> {
        if bits & !Self::ALL == 0 {
            Some(CoredumpFlags(bits))
        } else {
            None
        }
    }

    /// Whether every bit of `other` is set here.
    #[must_use]
    pub const fn contains(self, other: CoredumpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Refuses bits no header names (only flags the driver answered can carry them).
    fn check(self) -> Result<()> {
        if self.0 & !Self::ALL == 0 {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            name: "flags",
            reason: format!(
                "{:#x} has bits CUCoredumpGenerationFlags does not name ({:#x})",
                self.0,
                self.0 & !Self::ALL
            ),
        })
    }
}

impl std::ops::BitOr for CoredumpFlags {
    type Output = CoredumpFlags;

    fn bitor(self, other: CoredumpFlags) -> CoredumpFlags {
        CoredumpFlags(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for CoredumpFlags {
    fn bitor_assign(&mut self, other: CoredumpFlags) {
        self.0 |= other.0;
    }
}

#[cfg(test)]
mod tests {
    use super::{CoredumpFlags, Setting};

    #[test]
    fn settings_and_flags_are_both_headers_values() {
        use cuda_sys13::CUcoredumpSettings as S;
        let settings = [
            (
                Setting::EnableOnException,
                S::CU_COREDUMP_ENABLE_ON_EXCEPTION,
            ),
            (Setting::TriggerHost, S::CU_COREDUMP_TRIGGER_HOST),
            (Setting::Lightweight, S::CU_COREDUMP_LIGHTWEIGHT),
            (
                Setting::EnableUserTrigger,
                S::CU_COREDUMP_ENABLE_USER_TRIGGER,
            ),
            (Setting::File, S::CU_COREDUMP_FILE),
            (Setting::Pipe, S::CU_COREDUMP_PIPE),
            (Setting::GenerationFlags, S::CU_COREDUMP_GENERATION_FLAGS),
        ];
        for (ours, theirs) in settings {
            // Catches a setting sent as another (the driver would read or change the wrong
            // one), under either header.
            assert_eq!(ours as u32, theirs.0, "{ours:?}");
            assert_eq!(cuda_sys12::CUcoredumpSettings(theirs.0).0, ours as u32);
        }
        use cuda_sys13::CUCoredumpGenerationFlags as F;
        let both = [
            (CoredumpFlags::DEFAULT, F::CU_COREDUMP_DEFAULT_FLAGS),
            (
                CoredumpFlags::SKIP_NONRELOCATED_ELF_IMAGES,
                F::CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES,
            ),
            (
                CoredumpFlags::SKIP_GLOBAL_MEMORY,
                F::CU_COREDUMP_SKIP_GLOBAL_MEMORY,
            ),
            (
                CoredumpFlags::SKIP_SHARED_MEMORY,
                F::CU_COREDUMP_SKIP_SHARED_MEMORY,
            ),
            (
                CoredumpFlags::SKIP_LOCAL_MEMORY,
                F::CU_COREDUMP_SKIP_LOCAL_MEMORY,
            ),
            (CoredumpFlags::SKIP_ABORT, F::CU_COREDUMP_SKIP_ABORT),
            (
                CoredumpFlags::SKIP_CONSTBANK_MEMORY,
                F::CU_COREDUMP_SKIP_CONSTBANK_MEMORY,
            ),
        ];
        use cuda_sys12::CUCoredumpGenerationFlags as F12;
        let twelve = [
            F12::CU_COREDUMP_DEFAULT_FLAGS,
            F12::CU_COREDUMP_SKIP_NONRELOCATED_ELF_IMAGES,
            F12::CU_COREDUMP_SKIP_GLOBAL_MEMORY,
            F12::CU_COREDUMP_SKIP_SHARED_MEMORY,
            F12::CU_COREDUMP_SKIP_LOCAL_MEMORY,
            F12::CU_COREDUMP_SKIP_ABORT,
            F12::CU_COREDUMP_SKIP_CONSTBANK_MEMORY,
        ];
        for ((ours, theirs), old) in both.into_iter().zip(twelve) {
            // Catches a flag sent as another bit, under either header.
            assert_eq!(ours.bits(), theirs.0 as u32, "{ours:?}");
            assert_eq!(ours.bits(), old.0, "{ours:?}");
        }
        let thirteen = [
            (CoredumpFlags::GZIP_COMPRESS, F::CU_COREDUMP_GZIP_COMPRESS),
            (
                CoredumpFlags::FAULTED_CONTEXTS_ONLY,
                F::CU_COREDUMP_FAULTED_CONTEXTS_ONLY,
            ),
            (
                CoredumpFlags::SKIP_TENSOR_MEMORY,
                F::CU_COREDUMP_SKIP_TENSOR_MEMORY,
            ),
            (
                CoredumpFlags::NO_ERRBAR_AT_EXIT,
                F::CU_COREDUMP_NO_ERRBAR_AT_EXIT,
            ),
            (CoredumpFlags::LOG_ONLY, F::CU_COREDUMP_LOG_ONLY),
        ];
        let mut all = 0;
        for (ours, theirs) in both.into_iter().chain(thirteen) {
            assert_eq!(ours.bits(), theirs.0 as u32, "{ours:?}");
            all |= ours.bits();
        }
        // Catches a flag of the 13 header refused as unnamed, or an unnamed bit let through.
        assert_eq!(CoredumpFlags::ALL, all);
        assert_eq!(
            CoredumpFlags::LIGHTWEIGHT.bits(),
            F12::CU_COREDUMP_LIGHTWEIGHT_FLAGS.0
        );
        assert_eq!(
            (CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_TENSOR_MEMORY).bits(),
            F::CU_COREDUMP_LIGHTWEIGHT_FLAGS.0 as u32
        );
        assert_eq!(CoredumpFlags::from_bits(1 << 9), None);
        assert!(CoredumpFlags(1 << 9).check().is_err());
        assert!(CoredumpFlags(CoredumpFlags::ALL).check().is_ok());
    }
}
