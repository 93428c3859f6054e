//! Loading `libnvrtc`, and what [`Search`] looks for.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::search::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};
use crate::{nvrtcResult, NvrtcTable};

/// What [`Search`] looks for.
static NVRTC: LibrarySpec = LibrarySpec {
    description: "NVRTC (libnvrtc.so.13 or .12)",
    sonames: &[
        ("libnvrtc.so.13", 13),
        ("libnvrtc.so.12", 12),
        ("libnvrtc.so", 0),
    ],
    env_var: "CUDA_CORE_NVRTC_PATH",
    toolkit_dirs: &["lib64", "targets/*/lib"],
    pip_layouts: &[
        ("nvidia/cu13/lib", "libnvrtc.so.13", 13),
        ("nvidia/cuda_nvrtc/lib", "libnvrtc.so.12", 12),
    ],
    wheel: "nvidia-cuda-nvrtc",
};

/// The search for NVRTC: [`Discovery`] (see it for the order) of [`Nvrtc`], which reads
/// `CUDA_CORE_NVRTC_PATH`.
pub type Search = Discovery<Nvrtc>;

/// No NVRTC could be loaded: every place tried, and why each failed.
pub type NotFound = DiscoveryError<Nvrtc>;

/// A loaded NVRTC: its function table, version and where it came from.
pub struct Nvrtc {
    table: NvrtcTable,
    version: (i32, i32),
    location: PathBuf,
    // Field order is drop order: the library goes before the builtins it may use.
    _library: Library,
    _builtins: Option<Library>,
}

impl fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nvrtc")
            .field("version", &self.version)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Nvrtc {
    /// Loads NVRTC from one candidate, its builtins first where it is a file.
    pub fn open(candidate: &Candidate) -> Result<Nvrtc, String> {
        let (builtins, library, location) = match candidate {
            Candidate::Soname(name) => {
                // SAFETY: loading NVRTC runs only its own initialisers.
                let library = unsafe { Library::new(name) }.map_err(|e| e.to_string())?;
                (None, library, PathBuf::from(name))
            }
            Candidate::File(path) => {
                crate::search::loadable_file(path)?;
                let builtins = path.parent().and_then(|dir| load_builtins(dir, path));
                // SAFETY: as above.
                let library = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
                (builtins, library, path.clone())
            }
        };
        // SAFETY: the library was found as libnvrtc, which nvrtc.h describes, and is kept in
        // the returned value with the table.
        let table = unsafe { NvrtcTable::load(&library) };
        let get_version = table
            .nvrtcVersion
            .ok_or_else(|| "loaded, but exports no nvrtcVersion: not NVRTC".to_owned())?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the pointer has nvrtc.h's signature; both outputs are writable ints.
        let status = unsafe { get_version(&mut major, &mut minor) };
        if status != nvrtcResult::NVRTC_SUCCESS {
            return Err(format!("nvrtcVersion failed with code {}", status.0));
        }
        Ok(Nvrtc {
            table,
            version: (major, minor),
            location,
            _library: library,
            _builtins: builtins,
        })
    }

    /// The function table. Its pointers are valid as long as this value lives.
    pub fn table(&self) -> &NvrtcTable {
        &self.table
    }

    /// The `(major, minor)` version the library reports.
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The file the library was loaded from, or the name handed to the loader.
    pub fn location(&self) -> &Path {
        &self.location
    }
}

impl Discoverable for Nvrtc {
    const SPEC: &'static LibrarySpec = &NVRTC;

    fn open(candidate: &Candidate) -> Result<Self, String> {
        Nvrtc::open(candidate)
    }
}

/// Loads `libnvrtc-builtins.so.*` from `dir`, matching the major of `nvrtc`'s file name where
/// it has one. NVRTC opens its builtins by soname; once loaded, the loader hands back this copy.
fn load_builtins(dir: &Path, nvrtc: &Path) -> Option<Library> {
    let major = nvrtc
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("libnvrtc.so."))
        .map(|m| format!("libnvrtc-builtins.so.{m}"));
    let mut names: Vec<OsString> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .filter(|name| {
            name.to_str().is_some_and(|n| {
                n.starts_with("libnvrtc-builtins.so.")
                    && major.as_deref().is_none_or(|m| n.starts_with(m))
            })
        })
        .collect();
    names.sort();
    names.into_iter().rev().find_map(|name| {
        // SAFETY: NVRTC's builtins library has no initialisers beyond its own data.
        unsafe { Library::new(dir.join(name)) }.ok()
    })
}
