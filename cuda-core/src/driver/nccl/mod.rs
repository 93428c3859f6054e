//! The glue to NCCL (feature `nccl`): the library found and loaded once, its table (generated
//! from `nccl.h`: `generated/`), its status codes made the crate's errors, and each call the
//! `nccl` module makes, in neutral types (addresses as `u64`, data types and operations as
//! their codes, handles as the newtypes below). Above this file nothing names an NCCL type.
//!
//! NCCL is looked for as NVRTC is (`cuda_nvrtc_sys::Discovery`), with its own names:
//! `CUDA_CORE_NCCL_PATH` alone when set; else `libnccl.so.2` through the dynamic loader; else
//! the wheels' `nvidia/nccl/lib/libnccl.so.2` in Python's site-packages (`nvidia-nccl-cu12`
//! and `nvidia-nccl-cu13` both put it there). No toolkit folder: toolkits do not ship NCCL.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cuda_nvrtc_sys::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};

use super::StreamHandle;
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

use generated::{
    ncclComm_t, ncclConfig_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclScalarResidence_t,
    ncclUniqueId, NcclTable,
};

/// The oldest NCCL taken, as its version code: 2.19, the first with every function the `nccl`
/// module calls (`ncclCommRegister` and `ncclMemAlloc` came last) and with a configuration read
/// no further than its own size.
pub(crate) const OLDEST_VERSION: i32 = 21900;

/// `NCCL_CONFIG_UNDEF_INT` (`INT_MIN` in `nccl.h`, which bindgen cannot read): a field of
/// `ncclConfig_t` left to NCCL.
const UNDEF: i32 = i32::MIN;

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

/// A communicator's configuration in neutral form (`ncclConfig_t`'s fields the `nccl` module
/// sets; `None` leaves one to NCCL).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConfigSpec<'a> {
    pub(crate) blocking: bool,
    pub(crate) cga_cluster_size: Option<i32>,
    pub(crate) min_ctas: Option<i32>,
    pub(crate) max_ctas: Option<i32>,
    pub(crate) net_name: Option<&'a CStr>,
    pub(crate) comm_name: Option<&'a CStr>,
    pub(crate) split_share: Option<bool>,
}

impl ConfigSpec<'_> {
    /// `NCCL_CONFIG_INITIALIZER` with this spec's fields set. The struct is the pinned
    /// header's: an older NCCL reads no more of it than its own size says (2.19 and newer
    /// compare `size` with theirs), and takes `version` to mean the fields it knows.
    fn to_raw(self) -> ncclConfig_t {
        let int = |value: Option<i32>| value.unwrap_or(UNDEF);
        let text = |value: Option<&CStr>| value.map_or(std::ptr::null(), CStr::as_ptr);
        ncclConfig_t {
            size: std::mem::size_of::<ncclConfig_t>(),
            magic: generated::NCCL_API_MAGIC,
            version: generated::NCCL_VERSION_CODE,
            blocking: i32::from(self.blocking),
            cgaClusterSize: int(self.cga_cluster_size),
            minCTAs: int(self.min_ctas),
            maxCTAs: int(self.max_ctas),
            netName: text(self.net_name),
            splitShare: int(self.split_share.map(i32::from)),
            trafficClass: UNDEF,
            commName: text(self.comm_name),
            collnetEnable: UNDEF,
            CTAPolicy: UNDEF,
            shrinkShare: UNDEF,
            nvlsCTAs: UNDEF,
            nChannelsPerNetPeer: UNDEF,
            nvlinkCentricSched: UNDEF,
            graphUsageMode: UNDEF,
            numRmaCtx: UNDEF,
            maxP2pPeers: UNDEF,
            graphStreamOrdering: UNDEF,
            launchOrderImplicit: UNDEF,
            numRmaSig: UNDEF,
            rmaEagerInit: UNDEF,
            hostCftMode: UNDEF,
            nvlsHostMode: UNDEF,
        }
    }
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

/// The function `$f` of the table, or the error naming what the library lacks.
macro_rules! function {
    ($self:ident . $f:ident) => {
        $self.table.$f.ok_or_else(|| $self.lacks(stringify!($f)))?
    };
}

/// A device address as the pointer NCCL takes: an address of the device's, never dereferenced
/// on the host.
fn device_ptr(address: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(address as usize)
}

fn data_type(code: i32) -> ncclDataType_t {
    ncclDataType_t(code as u32)
}

fn red_op(code: i32) -> ncclRedOp_t {
    ncclRedOp_t(code as u32)
}

fn stream(handle: StreamHandle) -> generated::cudaStream_t {
    handle.0.cast()
}

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

    fn check(
        &self,
        call: &'static str,
        result: ncclResult_t,
        comm: Option<CommHandle>,
    ) -> Result<()> {
        self.status(call, result, comm).map(|_| ())
    }

    /// [`Error::Nccl`] for `code`, with NCCL's words for it.
    fn error(&self, call: &'static str, code: i32, comm: Option<CommHandle>) -> Error {
        let last = self.table.ncclGetLastError.and_then(|last| {
            // SAFETY: a communicator of this library, or null (the process's last error); NCCL
            // returns a NUL-terminated string of its own, read at once.
            let text = unsafe { last(comm.map_or(std::ptr::null_mut(), |c| c.0.cast())) };
            (!text.is_null()).then(|| {
                // SAFETY: as above: NCCL's NUL-terminated string, not null.
                let text = unsafe { CStr::from_ptr(text) };
                text.to_string_lossy().into_owned()
            })
        });
        let message = last.filter(|m| !m.trim().is_empty()).unwrap_or_else(|| {
            self.table
                .ncclGetErrorString
                .map(|describe| {
                    // SAFETY: NCCL describes any code with a static NUL-terminated string.
                    let text = unsafe { describe(ncclResult_t(code as u32)) };
                    if text.is_null() {
                        String::new()
                    } else {
                        // SAFETY: as above.
                        unsafe { CStr::from_ptr(text) }
                            .to_string_lossy()
                            .into_owned()
                    }
                })
                .unwrap_or_default()
        });
        Error::Nccl {
            call,
            code,
            name: result_name(code),
            message,
        }
    }

    /// `ncclGetUniqueId`: a new unique id, whose maker is this process's bootstrap root.
    pub(crate) fn get_unique_id(&self) -> Result<[u8; UNIQUE_ID_BYTES]> {
        let get = function!(self.ncclGetUniqueId);
        let mut id = ncclUniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        // SAFETY: writes the 128 bytes of `id`.
        let result = unsafe { get(&mut id) };
        self.check("ncclGetUniqueId", result, None)?;
        Ok(id.internal.map(|b| b as u8))
    }

    fn raw_id(id: &[u8; UNIQUE_ID_BYTES]) -> ncclUniqueId {
        ncclUniqueId {
            internal: id.map(|b| b as std::ffi::c_char),
        }
    }

    /// `ncclCommInitRank`, with the device current.
    pub(crate) fn comm_init_rank(
        &self,
        nranks: i32,
        id: &[u8; UNIQUE_ID_BYTES],
        rank: i32,
    ) -> Result<CommHandle> {
        let init = function!(self.ncclCommInitRank);
        let mut comm: ncclComm_t = std::ptr::null_mut();
        // SAFETY: writes the new communicator's handle; the id is passed by value.
        let result = unsafe { init(&mut comm, nranks, Self::raw_id(id), rank) };
        let handle = CommHandle(comm.cast());
        self.after_init("ncclCommInitRank", result, handle)
            .map(|_| handle)
    }

    /// `ncclCommInitRankConfig`, with the device current: the handle, and whether its
    /// initialisation goes on (non-blocking).
    pub(crate) fn comm_init_rank_config(
        &self,
        nranks: i32,
        id: &[u8; UNIQUE_ID_BYTES],
        rank: i32,
        config: ConfigSpec<'_>,
    ) -> Result<(CommHandle, Progress)> {
        let init = function!(self.ncclCommInitRankConfig);
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let mut raw = config.to_raw();
        // SAFETY: writes the handle; the configuration (and the strings it points to, the
        // caller's) is read during the call (NCCL copies what it keeps).
        let result = unsafe { init(&mut comm, nranks, Self::raw_id(id), rank, &mut raw) };
        let handle = CommHandle(comm.cast());
        self.after_init("ncclCommInitRankConfig", result, handle)
            .map(|progress| (handle, progress))
    }

    /// An initialisation's result: a failure aborts the communicator NCCL may have made (as
    /// NCCL's own examples do), so that nothing is left of it.
    fn after_init(
        &self,
        call: &'static str,
        result: ncclResult_t,
        handle: CommHandle,
    ) -> Result<Progress> {
        match self.status(call, result, Some(handle)) {
            Ok(progress) if !handle.0.is_null() => Ok(progress),
            Ok(_) => Err(Error::Nccl {
                call,
                code: 3,
                name: result_name(3),
                message: "NCCL reported success and made no communicator".to_owned(),
            }),
            Err(e) => {
                if !handle.0.is_null() {
                    if let Err(abort) = self.comm_abort(handle) {
                        log::warn!("aborting a communicator whose initialisation failed: {abort}");
                    }
                }
                Err(e)
            }
        }
    }

    /// `ncclCommInitAll`: one communicator per device ordinal, rank `i` on `devices[i]`.
    pub(crate) fn comm_init_all(&self, devices: &[i32]) -> Result<Vec<CommHandle>> {
        let init = function!(self.ncclCommInitAll);
        let count = i32::try_from(devices.len()).map_err(|_| Error::InvalidArgument {
            name: "devices",
            reason: format!("{} devices are more than NCCL counts", devices.len()),
        })?;
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: writes `count` handles into an array of `count`; reads `count` ordinals.
        let result = unsafe { init(comms.as_mut_ptr(), count, devices.as_ptr()) };
        let handles: Vec<CommHandle> = comms.into_iter().map(|c| CommHandle(c.cast())).collect();
        if let Err(e) = self.check("ncclCommInitAll", result, None) {
            for handle in handles.iter().filter(|h| !h.0.is_null()) {
                if let Err(abort) = self.comm_abort(*handle) {
                    log::warn!("aborting a communicator whose initialisation failed: {abort}");
                }
            }
            return Err(e);
        }
        Ok(handles)
    }

    /// `ncclCommSplit`: the new communicator (`None` for a rank of no color) and whether its
    /// initialisation goes on.
    pub(crate) fn comm_split(
        &self,
        comm: CommHandle,
        color: i32,
        key: i32,
        config: Option<ConfigSpec<'_>>,
    ) -> Result<(Option<CommHandle>, Progress)> {
        let split = function!(self.ncclCommSplit);
        let mut new: ncclComm_t = std::ptr::null_mut();
        let mut raw = config.map(ConfigSpec::to_raw);
        let config = raw
            .as_mut()
            .map_or(std::ptr::null_mut(), |c| c as *mut ncclConfig_t);
        // SAFETY: a live communicator; writes the new handle; the configuration (or null:
        // inherit the parent's) is read during the call.
        let result = unsafe { split(comm.0.cast(), color, key, &mut new, config) };
        let progress = self.status("ncclCommSplit", result, Some(comm))?;
        Ok(((!new.is_null()).then_some(CommHandle(new.cast())), progress))
    }

    /// `ncclCommFinalize`.
    pub(crate) fn comm_finalize(&self, comm: CommHandle) -> Result<Progress> {
        let finalize = function!(self.ncclCommFinalize);
        // SAFETY: a live communicator.
        let result = unsafe { finalize(comm.0.cast()) };
        self.status("ncclCommFinalize", result, Some(comm))
    }

    /// `ncclCommDestroy`: the handle is gone after it, whatever it returns.
    pub(crate) fn comm_destroy(&self, comm: CommHandle) -> Result<()> {
        let destroy = function!(self.ncclCommDestroy);
        // SAFETY: a live communicator, not used after this call.
        let result = unsafe { destroy(comm.0.cast()) };
        self.check("ncclCommDestroy", result, None)
    }

    /// `ncclCommAbort`: the handle is gone after it, whatever it returns.
    pub(crate) fn comm_abort(&self, comm: CommHandle) -> Result<()> {
        let abort = function!(self.ncclCommAbort);
        // SAFETY: a communicator of this library (live, or whose initialisation failed), not
        // used after this call.
        let result = unsafe { abort(comm.0.cast()) };
        self.check("ncclCommAbort", result, None)
    }

    /// `ncclCommGetAsyncError`: `Done` where the communicator is healthy and idle in NCCL's
    /// threads, `InProgress` where a non-blocking call goes on, the error where its work failed.
    pub(crate) fn comm_async_error(&self, comm: CommHandle) -> Result<Progress> {
        let get = function!(self.ncclCommGetAsyncError);
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a live communicator; writes one result. NCCL allows this call while another
        // thread is inside a call on the communicator.
        let result = unsafe { get(comm.0.cast(), &mut state) };
        self.check("ncclCommGetAsyncError", result, Some(comm))?;
        self.status("ncclCommGetAsyncError", state, Some(comm))
    }

    fn comm_int(
        &self,
        call: &'static str,
        f: Option<unsafe extern "C" fn(ncclComm_t, *mut i32) -> ncclResult_t>,
        comm: CommHandle,
    ) -> Result<i32> {
        let f = f.ok_or_else(|| self.lacks(call))?;
        let mut value = 0;
        // SAFETY: a live communicator; writes one int.
        let result = unsafe { f(comm.0.cast(), &mut value) };
        self.check(call, result, Some(comm))?;
        Ok(value)
    }

    /// `ncclCommCount`.
    pub(crate) fn comm_count(&self, comm: CommHandle) -> Result<i32> {
        self.comm_int("ncclCommCount", self.table.ncclCommCount, comm)
    }

    /// `ncclCommCuDevice`.
    pub(crate) fn comm_cu_device(&self, comm: CommHandle) -> Result<i32> {
        self.comm_int("ncclCommCuDevice", self.table.ncclCommCuDevice, comm)
    }

    /// `ncclCommUserRank`.
    pub(crate) fn comm_user_rank(&self, comm: CommHandle) -> Result<i32> {
        self.comm_int("ncclCommUserRank", self.table.ncclCommUserRank, comm)
    }

    /// `ncclCommRegister` of `size` bytes at `address`.
    pub(crate) fn comm_register(
        &self,
        comm: CommHandle,
        address: u64,
        size: usize,
    ) -> Result<RegistrationHandle> {
        let register = function!(self.ncclCommRegister);
        let mut handle = std::ptr::null_mut();
        // SAFETY: a live communicator and device memory of its device that the caller keeps
        // allocated until it deregisters; writes the handle.
        let result = unsafe { register(comm.0.cast(), device_ptr(address), size, &mut handle) };
        self.check("ncclCommRegister", result, Some(comm))?;
        Ok(RegistrationHandle(handle))
    }

    /// `ncclCommDeregister`.
    pub(crate) fn comm_deregister(
        &self,
        comm: CommHandle,
        handle: RegistrationHandle,
    ) -> Result<()> {
        let deregister = function!(self.ncclCommDeregister);
        // SAFETY: a live communicator and a handle it gave, deregistered once.
        let result = unsafe { deregister(comm.0.cast(), handle.0) };
        self.check("ncclCommDeregister", result, Some(comm))
    }

    /// `ncclMemAlloc` of `size` bytes on the current device.
    pub(crate) fn mem_alloc(&self, size: usize) -> Result<u64> {
        let alloc = function!(self.ncclMemAlloc);
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes the address.
        let result = unsafe { alloc(&mut ptr, size) };
        self.check("ncclMemAlloc", result, None)?;
        Ok(ptr as u64)
    }

    /// `ncclMemFree`.
    pub(crate) fn mem_free(&self, address: u64) -> Result<()> {
        let free = function!(self.ncclMemFree);
        // SAFETY: an allocation of `ncclMemAlloc`, freed once, that no work uses any more (the
        // caller's).
        let result = unsafe { free(device_ptr(address)) };
        self.check("ncclMemFree", result, None)
    }

    /// `ncclRedOpCreatePreMulSum` with a scalar read before the call returns
    /// (`ncclScalarHostImmediate`): the new operation's code.
    pub(crate) fn red_op_create_pre_mul_sum(
        &self,
        comm: CommHandle,
        scalar: &[u8],
        data_type_code: i32,
    ) -> Result<i32> {
        let create = function!(self.ncclRedOpCreatePreMulSum);
        let mut op = ncclRedOp_t(0);
        // SAFETY: a live communicator; the scalar is one value of the data type (the caller's)
        // in host memory, read before the call returns (HostImmediate); writes the operation.
        let result = unsafe {
            create(
                &mut op,
                scalar.as_ptr().cast_mut().cast(),
                data_type(data_type_code),
                ncclScalarResidence_t::ncclScalarHostImmediate,
                comm.0.cast(),
            )
        };
        self.check("ncclRedOpCreatePreMulSum", result, Some(comm))?;
        Ok(op.0 as i32)
    }

    /// `ncclRedOpDestroy`.
    pub(crate) fn red_op_destroy(&self, op: i32, comm: CommHandle) -> Result<()> {
        let destroy = function!(self.ncclRedOpDestroy);
        // SAFETY: an operation this communicator made, destroyed once, after the last call
        // given it returned.
        let result = unsafe { destroy(red_op(op), comm.0.cast()) };
        self.check("ncclRedOpDestroy", result, Some(comm))
    }

    /// `ncclAllReduce`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn all_reduce(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        op: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclAllReduce);
        // SAFETY: the caller's: device memory of the communicator's device holding `count`
        // values at each address, kept in stream order on `on`, a stream of that device.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                red_op(op),
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclAllReduce", result, Some(comm))
    }

    /// `ncclBroadcast`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn broadcast(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        root: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclBroadcast);
        // SAFETY: as for `all_reduce`.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                root,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclBroadcast", result, Some(comm))
    }

    /// `ncclReduce` (`recv` 0: none, on a rank that is not the root).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        op: i32,
        root: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclReduce);
        // SAFETY: as for `all_reduce`; a null `recv` only on a rank other than the root.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                red_op(op),
                root,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclReduce", result, Some(comm))
    }

    /// `ncclAllGather`: `send_count` values from each rank into `recv`.
    pub(crate) fn all_gather(
        &self,
        send: u64,
        recv: u64,
        send_count: usize,
        data_type_code: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclAllGather);
        // SAFETY: as for `all_reduce`, with `recv` holding `send_count` values per rank.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                send_count,
                data_type(data_type_code),
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclAllGather", result, Some(comm))
    }

    /// `ncclReduceScatter`: `recv_count` values to each rank.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_scatter(
        &self,
        send: u64,
        recv: u64,
        recv_count: usize,
        data_type_code: i32,
        op: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclReduceScatter);
        // SAFETY: as for `all_reduce`, with `send` holding `recv_count` values per rank.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                recv_count,
                data_type(data_type_code),
                red_op(op),
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclReduceScatter", result, Some(comm))
    }

    /// `ncclAlltoAll` (NCCL 2.28 and newer): `count` values to and from each rank.
    pub(crate) fn all_to_all(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclAlltoAll);
        // SAFETY: as for `all_reduce`, with each buffer holding `count` values per rank.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclAlltoAll", result, Some(comm))
    }

    /// `ncclGather` (NCCL 2.28 and newer): `count` values from each rank to `root`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gather(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        root: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclGather);
        // SAFETY: as for `all_reduce`, with `recv` (on the root only; null elsewhere) holding
        // `count` values per rank.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                root,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclGather", result, Some(comm))
    }

    /// `ncclScatter` (NCCL 2.28 and newer): `count` values from `root` to each rank.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatter(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        data_type_code: i32,
        root: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclScatter);
        // SAFETY: as for `all_reduce`, with `send` (on the root only; null elsewhere) holding
        // `count` values per rank.
        let result = unsafe {
            f(
                device_ptr(send),
                device_ptr(recv),
                count,
                data_type(data_type_code),
                root,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclScatter", result, Some(comm))
    }

    /// `ncclSend`.
    pub(crate) fn send(
        &self,
        send: u64,
        count: usize,
        data_type_code: i32,
        peer: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclSend);
        // SAFETY: as for `all_reduce`.
        let result = unsafe {
            f(
                device_ptr(send),
                count,
                data_type(data_type_code),
                peer,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclSend", result, Some(comm))
    }

    /// `ncclRecv`.
    pub(crate) fn recv(
        &self,
        recv: u64,
        count: usize,
        data_type_code: i32,
        peer: i32,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let f = function!(self.ncclRecv);
        // SAFETY: as for `all_reduce`.
        let result = unsafe {
            f(
                device_ptr(recv),
                count,
                data_type(data_type_code),
                peer,
                comm.0.cast(),
                stream(on),
            )
        };
        self.status("ncclRecv", result, Some(comm))
    }

    /// `ncclGroupStart`.
    pub(crate) fn group_start(&self) -> Result<()> {
        let start = function!(self.ncclGroupStart);
        // SAFETY: no arguments; the group is the calling thread's.
        let result = unsafe { start() };
        self.check("ncclGroupStart", result, None)
    }

    /// `ncclGroupEnd`.
    pub(crate) fn group_end(&self) -> Result<Progress> {
        let end = function!(self.ncclGroupEnd);
        // SAFETY: no arguments; ends the calling thread's group.
        let result = unsafe { end() };
        self.status("ncclGroupEnd", result, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_initialiser_is_the_headers() {
        let raw = ConfigSpec::default().to_raw();
        assert_eq!(raw.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!(raw.magic, 0xcafe_beef);
        assert_eq!(raw.version, 23203);
        // INT_MIN is NCCL_CONFIG_UNDEF_INT, as the header's own enums say.
        assert_eq!(UNDEF, generated::ncclHostCftMode_t::ncclHostCftDefault.0);
        assert_eq!(raw.cgaClusterSize, UNDEF);
        assert_eq!(raw.nvlsHostMode, UNDEF);
        assert_eq!(raw.blocking, 0);
        assert!(raw.netName.is_null() && raw.commName.is_null());
        let name = c"eth0";
        let set = ConfigSpec {
            blocking: true,
            cga_cluster_size: Some(2),
            max_ctas: Some(8),
            net_name: Some(name),
            split_share: Some(false),
            ..ConfigSpec::default()
        }
        .to_raw();
        assert_eq!((set.blocking, set.cgaClusterSize, set.maxCTAs), (1, 2, 8));
        assert_eq!((set.minCTAs, set.splitShare), (UNDEF, 0));
        assert_eq!(set.netName, name.as_ptr());
    }

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
