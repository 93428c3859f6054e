//! Raw FFI for nvJitLink, the CUDA JIT linker (PTX, cubin, fatbin and LTO-IR into a cubin),
//! and discovery of the library at run time.
//!
//! - Every type and constant of `nvJitLink.h` (from the `nvidia-nvjitlink` 13.5.37 wheel), as
//!   bindgen gives them, and [`NvJitLinkTable`]: one optional pointer per function, named by
//!   the plain API name (`nvJitLinkCreate`). nvJitLink exports its functions under versioned
//!   names (`__nvJitLinkCreate_13_5`, `__nvJitLinkCreate_12_9`); the table takes the names of
//!   the loaded library's major, with the 13.5 header's signatures, which a 12.x library shares
//!   (see [`NvJitLinkTable::export_names`]). A 12.x library has no `nvJitLinkGetLinkedLTOIR`.
//! - [`NvJitLinkSearch`]: finds and loads `libnvJitLink` of CUDA 12 or 13, in the order of
//!   [`Discovery`], through `CUDA_CORE_NVJITLINK_PATH`, `libnvJitLink.so.*` and the wheel
//!   folders `nvidia/cu13/lib` and `nvidia/nvjitlink/lib`.
//!
//! Pair nvJitLink with the NVRTC of the same major for LTO-IR: nvJitLink 12.9 refuses the
//! LTO-IR of NVRTC 13.5 (13.5 linked 12.9's when tried).
//!
//! ```no_run
//! use cuda_nvrtc_sys::nvjitlink::NvJitLinkSearch;
//!
//! match NvJitLinkSearch::from_env(13).load() {
//!     Ok(linker) => {
//!         let (major, minor) = linker.version();
//!         println!("nvJitLink {major}.{minor} from {}", linker.location().display());
//!     }
//!     Err(not_found) => eprintln!("{not_found}"),
//! }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::search::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};

/// The generated bindings and table, included so that formatting tools leave them as written.
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks
)]
mod generated {
    include!("generated/nvjitlink_bindings.rs");
    include!("generated/nvjitlink_table.rs");
}

pub use generated::*;

/// What [`NvJitLinkSearch`] looks for.
static NVJITLINK: LibrarySpec = LibrarySpec {
    description: "nvJitLink (libnvJitLink.so.13 or .12)",
    sonames: &[
        ("libnvJitLink.so.13", 13),
        ("libnvJitLink.so.12", 12),
        ("libnvJitLink.so", 0),
    ],
    env_var: "CUDA_CORE_NVJITLINK_PATH",
    toolkit_dirs: &["lib64", "targets/*/lib"],
    pip_layouts: &[
        ("nvidia/cu13/lib", "libnvJitLink.so.13", 13),
        ("nvidia/nvjitlink/lib", "libnvJitLink.so.12", 12),
    ],
    wheel: "nvidia-nvjitlink",
};

/// The search for nvJitLink: [`Discovery`] (see it for the order) of [`NvJitLink`], which
/// reads `CUDA_CORE_NVJITLINK_PATH`.
pub type NvJitLinkSearch = Discovery<NvJitLink>;

/// No nvJitLink could be loaded: every place tried, and why each failed.
pub type NvJitLinkNotFound = DiscoveryError<NvJitLink>;

/// A loaded nvJitLink: its function table, version and where it came from.
pub struct NvJitLink {
    table: NvJitLinkTable,
    version: (u32, u32),
    location: PathBuf,
    _library: Library,
}

impl fmt::Debug for NvJitLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvJitLink")
            .field("version", &self.version)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl NvJitLink {
    /// Loads nvJitLink from one candidate and fills its table with the exported names of its
    /// major. Fails when the library is not nvJitLink, or is of a major whose names the table
    /// does not know ([`NvJitLinkTable::MAJORS`]).
    pub fn open(candidate: &Candidate) -> Result<NvJitLink, String> {
        // SAFETY: loading nvJitLink runs only its own initialisers.
        let (library, location) = unsafe { candidate.load_library() }?;
        let version = library_version(&library)?;
        if !NvJitLinkTable::MAJORS
            .iter()
            .any(|&(major, _)| major == version.0)
        {
            return Err(format!(
                "nvJitLink {}.{}: the exported names of its major are not known here (only {:?})",
                version.0,
                version.1,
                NvJitLinkTable::MAJORS.map(|(major, _)| major)
            ));
        }
        // SAFETY: the library is nvJitLink of this major (it answered for it above), whose
        // names the table's signatures describe; it is kept in the returned value.
        let table = unsafe { NvJitLinkTable::load(&library, version.0) };
        Ok(NvJitLink {
            table,
            version,
            location,
            _library: library,
        })
    }

    /// The function table. Its pointers are valid as long as this value lives.
    pub fn table(&self) -> &NvJitLinkTable {
        &self.table
    }

    /// The `(major, minor)` version that `nvJitLinkVersion` reports. A library without that
    /// function (12.0 has none) reports the newest API version of the names it exports.
    pub fn version(&self) -> (u32, u32) {
        self.version
    }

    /// The file the library was loaded from, or the name handed to the loader.
    pub fn location(&self) -> &Path {
        &self.location
    }
}

impl Discoverable for NvJitLink {
    const SPEC: &'static LibrarySpec = &NVJITLINK;

    fn open(candidate: &Candidate) -> Result<Self, String> {
        NvJitLink::open(candidate)
    }
}

/// The library's version: `nvJitLinkVersion`'s answer or, where it has none, the version in
/// the newest versioned `nvJitLinkCreate` it exports.
fn library_version(library: &Library) -> Result<(u32, u32), String> {
    // SAFETY: a major the table knows no names of fills only the unversioned functions, and
    // `nvJitLinkVersion` has the header's signature in every nvJitLink; the table is dropped
    // here, before the library.
    let unversioned = unsafe { NvJitLinkTable::load(library, 0) };
    if let Some(get_version) = unversioned.nvJitLinkVersion {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the pointer has the header's signature; both outputs are writable.
        let status = unsafe { get_version(&mut major, &mut minor) };
        return if status == nvJitLinkResult::NVJITLINK_SUCCESS {
            Ok((major, minor))
        } else {
            Err(format!("nvJitLinkVersion failed with code {}", status.0))
        };
    }
    for &(major, _) in &NvJitLinkTable::MAJORS {
        // SAFETY: only looked up, never called: the names found tell the version.
        let table = unsafe { NvJitLinkTable::load(library, major) };
        let create = table
            .symbols()
            .into_iter()
            .find(|s| s.field == "nvJitLinkCreate")
            .and_then(|s| s.export)
            .and_then(api_version);
        if let Some(version) = create {
            return Ok(version);
        }
    }
    Err(
        "loaded, but exports neither nvJitLinkVersion nor a versioned nvJitLinkCreate: \
         not nvJitLink"
            .to_owned(),
    )
}

/// The API version in an exported name: `(13, 5)` for `__nvJitLinkCreate_13_5`.
fn api_version(export: &str) -> Option<(u32, u32)> {
    let (rest, minor) = export.rsplit_once('_')?;
    let (_, major) = rest.rsplit_once('_')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::api_version;

    #[test]
    fn api_version_reads_the_suffix() {
        assert_eq!(api_version("__nvJitLinkCreate_13_5"), Some((13, 5)));
        assert_eq!(api_version("__nvJitLinkCreate_12_0"), Some((12, 0)));
        assert_eq!(api_version("nvJitLinkCreate"), None);
    }
}
