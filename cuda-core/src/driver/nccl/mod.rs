//! The glue to NCCL (feature `nccl`): the library found and loaded once, its table (generated
//! from `nccl.h`: `generated/`), its status codes made the crate's errors, and (in `calls.rs`)
//! each call the `nccl` module makes, in neutral types (addresses as `u64`, data types and
//! operations as their codes, handles as the newtypes below), each through `nccl_call!`. Above
//! this folder nothing names an NCCL type.
//!
//! NCCL is looked for as NVRTC is (`cuda_nvrtc_sys::Discovery`), with its own names:
//! `CUDA_CORE_NCCL_PATH` alone when set; else `libnccl.so.2` through the dynamic loader; else
//! the wheels' `nvidia/nccl/lib/libnccl.so.2` in Python's site-packages (`nvidia-nccl-cu12`
//! and `nvidia-nccl-cu13` both put it there). No toolkit folder: toolkits do not ship NCCL.

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cuda_nvrtc_sys::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};

use crate::error::{Cause, Error, Result};

/// The generated bindings and table, kept out of rustfmt's reach so that `check-bindings`
/// compares them as generated.
#[allow(
    dead_code,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    include!("generated/bindings.rs");
    include!("generated/table.rs");
}

use generated::{ncclResult_t, NcclTable};

/// The oldest NCCL taken, as its version code: 2.19, the first with every function the `nccl`
/// module calls (`ncclCommRegister` and `ncclMemAlloc` came last) and with a configuration read
/// no further than its own size.
pub(crate) const OLDEST_VERSION: i32 = 21900;

/// The size of a unique id (`NCCL_UNIQUE_ID_BYTES`).
pub(crate) const UNIQUE_ID_BYTES: usize = generated::NCCL_UNIQUE_ID_BYTES as usize;

/// `NCCL_SPLIT_NOCOLOR`: a rank that joins none of the communicators a split makes.
pub(crate) const SPLIT_NO_COLOR: i32 = generated::NCCL_SPLIT_NOCOLOR;

/// The codes of `ncclDataType_t` and `ncclRedOp_t` the `nccl` module names by its own types'
/// `code()`: checked against the generated ones by this file's tests.
#[cfg(test)]
pub(crate) mod codes {
    use super::generated::{ncclDataType_t, ncclRedOp_t};

    pub(crate) fn data_type(name: &str) -> Option<u32> {
        Some(
            match name {
                "ncclInt8" => ncclDataType_t::ncclInt8,
                "ncclUint8" => ncclDataType_t::ncclUint8,
                "ncclInt32" => ncclDataType_t::ncclInt32,
                "ncclUint32" => ncclDataType_t::ncclUint32,
                "ncclInt64" => ncclDataType_t::ncclInt64,
                "ncclUint64" => ncclDataType_t::ncclUint64,
                "ncclFloat16" => ncclDataType_t::ncclFloat16,
                "ncclFloat32" => ncclDataType_t::ncclFloat32,
                "ncclFloat64" => ncclDataType_t::ncclFloat64,
                "ncclBfloat16" => ncclDataType_t::ncclBfloat16,
                "ncclFloat8e4m3" => ncclDataType_t::ncclFloat8e4m3,
                "ncclFloat8e5m2" => ncclDataType_t::ncclFloat8e5m2,
                _ => return None,
            }
            .0,
        )
    }

    pub(crate) fn red_op(name: &str) -> Option<u32> {
        Some(
            match name {
                "ncclSum" => ncclRedOp_t::ncclSum,
                "ncclProd" => ncclRedOp_t::ncclProd,
                "ncclMax" => ncclRedOp_t::ncclMax,
                "ncclMin" => ncclRedOp_t::ncclMin,
                "ncclAvg" => ncclRedOp_t::ncclAvg,
                _ => return None,
            }
            .0,
        )
    }
}

/// An `ncclComm_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct CommHandle(pub(crate) *mut c_void);

impl CommHandle {
    fn raw(self) -> generated::ncclComm_t {
        self.0.cast()
    }
}

// SAFETY: a communicator's handle is an identifier any thread may pass to NCCL; what NCCL asks
// (no two calls on one communicator at once) is kept by the `nccl` module's lock.
unsafe impl Send for CommHandle {}
// SAFETY: as above.
unsafe impl Sync for CommHandle {}

/// The handle `ncclCommRegister` gives for a registered buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegistrationHandle(pub(crate) *mut c_void);

// SAFETY: an identifier NCCL hands back to `ncclCommDeregister`, on any thread.
unsafe impl Send for RegistrationHandle {}
// SAFETY: as above.
unsafe impl Sync for RegistrationHandle {}

/// How a call on a non-blocking communicator ended: done, or still going on in NCCL's own
/// threads (`ncclInProgress`), to be asked after with `ncclCommGetAsyncError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    Done,
    InProgress,
}

/// The loaded NCCL: its table, where it came from, and its version code.
pub(crate) struct Nccl {
    table: NcclTable,
    location: PathBuf,
    version: i32,
    /// Kept loaded for the table's pointers.
    _library: libloading::Library,
}

/// What discovery looks for.
static SPEC: LibrarySpec = LibrarySpec {
    description: "NCCL (libnccl.so.2)",
    sonames: &[("libnccl.so.2", 0)],
    env_var: "CUDA_CORE_NCCL_PATH",
    toolkit_dirs: &[],
    pip_layouts: &[("nvidia/nccl/lib", "libnccl.so.2", 0)],
    wheel: "nvidia-nccl-cu12",
};

impl Discoverable for Nccl {
    const SPEC: &'static LibrarySpec = &SPEC;

    fn open(candidate: &Candidate) -> std::result::Result<Self, String> {
        // SAFETY: the candidates are NCCL's names and files (or the user's override of them,
        // which the process trusts as it trusts its environment), whose initialisers are its
        // own and its static CUDA runtime's.
        let (library, location) = unsafe { candidate.load_library() }?;
        // SAFETY: each symbol found is taken to have nccl.h's signature; a library that is no
        // NCCL fails the version check below before any other function is called, and the
        // library is kept loaded with the table.
        let table = unsafe { NcclTable::load(&library) };
        let get_version = table
            .ncclGetVersion
            .ok_or_else(|| "exports no ncclGetVersion: not an NCCL library".to_owned())?;
        let mut version = 0;
        // SAFETY: writes one int.
        let result = unsafe { get_version(&mut version) };
        if result != ncclResult_t::ncclSuccess {
            return Err(format!("ncclGetVersion failed with code {}", result.0));
        }
        if version < OLDEST_VERSION {
            return Err(format!(
                "is NCCL {}, older than 2.19, the oldest this crate takes",
                version_text(version)
            ));
        }
        if version >= 30000 {
            return Err(format!(
                "is NCCL {}: this crate knows NCCL 2's interface only",
                version_text(version)
            ));
        }
        Ok(Nccl {
            table,
            location,
            version,
            _library: library,
        })
    }
}

/// `major.minor.patch` of an NCCL version code (`X * 10000 + Y * 100 + Z` since 2.9).
pub(crate) fn version_text(code: i32) -> String {
    format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100)
}

static NCCL: OnceLock<Result<Nccl>> = OnceLock::new();

/// NCCL, loaded on first use; later calls answer the same, or the same error.
pub(crate) fn nccl() -> Result<&'static Nccl> {
    NCCL.get_or_init(|| search().load().map_err(not_found))
        .as_ref()
        .map_err(Clone::clone)
}

/// The search a process gets from its environment: no toolkit roots.
fn search() -> Discovery<Nccl> {
    let mut search = Discovery::from_env(0);
    search.toolkit_roots.clear();
    search
}

/// The error for a failed search: every candidate tried and why, and every site-packages
/// folder looked in (asked of `python3` again, on this path only), then what to do.
fn not_found(error: DiscoveryError<Nccl>) -> Error {
    use std::fmt::Write as _;
    let mut reason = String::from("NCCL (libnccl.so.2) was not found; tried:");
    for (candidate, why) in &error.tried {
        let _ = write!(reason, "\n  {candidate}: {why}");
    }
    if let Some(path) = &error.search.explicit {
        let _ = write!(
            reason,
            "\n(CUDA_CORE_NCCL_PATH={} names the library: nothing else is tried)",
            path.display()
        );
    } else {
        let dirs = search().with_python_paths().site_packages;
        let looked: Vec<String> = dirs
            .iter()
            .map(|dir| dir.join("nvidia/nccl/lib").display().to_string())
            .filter(|dir| {
                !error
                    .tried
                    .iter()
                    .any(|(c, _)| c.to_string().starts_with(dir))
            })
            .collect();
        if looked.is_empty() {
            let _ = write!(reason, "\n  no Python site-packages folder was found");
        }
        for dir in looked {
            let _ = write!(reason, "\n  {dir}: no libnccl.so.2");
        }
    }
    reason.push_str(
        "\ninstall NCCL (`pip install nvidia-nccl-cu12`, or nvidia-nccl-cu13 for CUDA 13 \
         drivers, or the system's libnccl2), or set CUDA_CORE_NCCL_PATH to the library file",
    );
    Error::NcclNotFound {
        reason,
        source: Some(Cause::new(error)),
    }
}

/// The name of an `ncclResult_t` code.
pub(crate) fn result_name(code: i32) -> &'static str {
    match code {
        0 => "ncclSuccess",
        1 => "ncclUnhandledCudaError",
        2 => "ncclSystemError",
        3 => "ncclInternalError",
        4 => "ncclInvalidArgument",
        5 => "ncclInvalidUsage",
        6 => "ncclRemoteError",
        7 => "ncclInProgress",
        8 => "ncclTimeout",
        _ => "an ncclResult_t this crate does not know",
    }
}

/// Calls the function `$name` of NCCL's table, as `call!` calls the driver's: the function, or
/// [`Error::NcclNotFound`] naming what the library lacks; then its `ncclResult_t` as a
/// [`Progress`], or as [`Error::Nccl`] with NCCL's last message for the communicator `$comm`
/// (`Some(handle)`, read after the call; `None`: the process's). The `text` form calls a
/// function that describes (`ncclGetLastError`, `ncclGetErrorString`): its string, `None` where
/// the library lacks the function or it returns null.
macro_rules! nccl_call {
    (text $self:ident . $name:ident ( $($arg:expr),* $(,)? )) => {
        $self.table.$name.and_then(|f| {
            // SAFETY: the pointer was loaded by the export `nccl.h` declares, with that
            // signature; its arguments are a communicator of this library or null, or a code.
            // It returns null or a NUL-terminated string of NCCL's own, read at once.
            unsafe {
                let text = f($($arg),*);
                (!text.is_null())
                    .then(|| std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned())
            }
        })
    };
    ($self:ident . $name:ident ( $($arg:expr),* $(,)? ), $comm:expr) => {{
        let f = $self.table.$name.ok_or_else(|| $self.lacks(stringify!($name)))?;
        // SAFETY: the pointer was loaded by the export `nccl.h` declares, with that signature;
        // each call site passes arguments valid for the call (handles of this library, and
        // memory as the caller's contract, in each function's documentation, says).
        let result = unsafe { f($($arg),*) };
        $self.status(stringify!($name), result, $comm)
    }};
}

mod calls;

pub(crate) use calls::{CollectiveKind, CollectiveSpec, ConfigSpec};

impl Nccl {
    /// The library's version code (`ncclGetVersion`: 23203 for 2.32.3).
    pub(crate) fn version(&self) -> i32 {
        self.version
    }

    /// Where the library was loaded from (the name, for one the loader found).
    pub(crate) fn location(&self) -> &Path {
        &self.location
    }

    fn lacks(&self, function: &'static str) -> Error {
        Error::NcclNotFound {
            reason: format!(
                "the NCCL {} at {} lacks {function}",
                version_text(self.version),
                self.location.display()
            ),
            source: None,
        }
    }

    /// `result` of `call` as the crate's: `Ok` for success and (see [`Progress`]) in progress,
    /// else [`Error::Nccl`] with NCCL's last message for `comm` (or the process's).
    fn status(
        &self,
        call: &'static str,
        result: ncclResult_t,
        comm: Option<CommHandle>,
    ) -> Result<Progress> {
        match result {
            ncclResult_t::ncclSuccess => Ok(Progress::Done),
            ncclResult_t::ncclInProgress => Ok(Progress::InProgress),
            failed => Err(self.error(call, failed.0 as i32, comm)),
        }
    }

    /// [`Error::Nccl`] for `code`, with NCCL's words for it: its last message for `comm` (or
    /// the process's), else its description of the code.
    fn error(&self, call: &'static str, code: i32, comm: Option<CommHandle>) -> Error {
        let comm = comm.map_or(std::ptr::null_mut(), CommHandle::raw);
        let message = nccl_call!(text self.ncclGetLastError(comm))
            .filter(|m| !m.trim().is_empty())
            .or_else(|| nccl_call!(text self.ncclGetErrorString(ncclResult_t(code as u32))))
            .unwrap_or_default();
        Error::Nccl {
            call,
            code,
            name: result_name(code),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_codes_are_named_as_the_header_names_them() {
        use generated::ncclResult_t as R;
        for (code, name) in [
            (R::ncclSuccess, "ncclSuccess"),
            (R::ncclUnhandledCudaError, "ncclUnhandledCudaError"),
            (R::ncclSystemError, "ncclSystemError"),
            (R::ncclInternalError, "ncclInternalError"),
            (R::ncclInvalidArgument, "ncclInvalidArgument"),
            (R::ncclInvalidUsage, "ncclInvalidUsage"),
            (R::ncclRemoteError, "ncclRemoteError"),
            (R::ncclInProgress, "ncclInProgress"),
            (R::ncclTimeout, "ncclTimeout"),
        ] {
            assert_eq!(result_name(code.0 as i32), name);
        }
        assert_eq!(
            generated::ncclResult_t::ncclNumResults.0,
            9,
            "the header has a result code this file does not name"
        );
    }

    #[test]
    fn version_codes_read_as_major_minor_patch() {
        assert_eq!(version_text(23203), "2.32.3");
        assert_eq!(version_text(OLDEST_VERSION), "2.19.0");
        assert_eq!(UNIQUE_ID_BYTES, 128);
        assert_eq!(SPLIT_NO_COLOR, -1);
    }

    #[test]
    fn a_missing_override_is_the_one_place_tried() {
        let search = Discovery::<Nccl> {
            explicit: Some(PathBuf::from("/nonexistent/libnccl.so.2")),
            ..Discovery::default()
        };
        let error = not_found(search.load().err().expect("no such file loads"));
        let text = error.to_string();
        assert!(
            text.contains("/nonexistent/libnccl.so.2: no such file"),
            "{text}"
        );
        assert!(text.contains("nothing else is tried"), "{text}");
        assert!(text.contains("pip install nvidia-nccl-cu12"), "{text}");
        assert!(!text.contains("loader search path"), "{text}");
    }
}
