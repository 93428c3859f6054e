//! Raw FFI for libNVVM, the compiler of NVVM IR (LLVM IR for the GPU) to PTX, and discovery of
//! the library at run time.
//!
//! - Every type and constant of `nvvm.h` (from the `nvidia-nvvm` 13.5.37 wheel), as bindgen
//!   gives them, and [`NvvmTable`]: one optional pointer per function it declares, filled by
//!   its plain name (libNVVM exports no versioned names). A CUDA 12 library has no
//!   `nvvmLLVMVersion`.
//! - [`NvvmSearch`]: finds and loads libNVVM of CUDA 12 or 13 in the order of [`Discovery`],
//!   through `CUDA_CORE_NVVM_PATH`, `libnvvm.so.4` and `libnvvm.so`, a toolkit's `nvvm/lib64`,
//!   and the wheel folders `nvidia/cu13/lib` (`nvidia-nvvm`, CUDA 13) and
//!   `nvidia/cuda_nvcc/nvvm/lib64` (`nvidia-cuda-nvcc-cu12`, CUDA 12).
//! - [`Nvvm::libdevice`]: the `libdevice.10.bc` that ships beside the library.
//!
//! Both majors are `libnvvm.so.4` and report NVVM 2.0 with NVVM IR 2.0 (`nvvmVersion`,
//! `nvvmIRVersion`): the library's file name does not tell its CUDA release.
//!
//! ```no_run
//! use cuda_nvrtc_sys::nvvm::NvvmSearch;
//!
//! match NvvmSearch::from_env(13).load() {
//!     Ok(nvvm) => {
//!         let (major, minor) = nvvm.version();
//!         println!("NVVM {major}.{minor} from {}", nvvm.location().display());
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
    include!("generated/nvvm_bindings.rs");
    include!("generated/nvvm_table.rs");
}

pub use generated::*;

/// What [`NvvmSearch`] looks for.
static NVVM: LibrarySpec = LibrarySpec {
    description: "libNVVM (libnvvm.so.4)",
    sonames: &[("libnvvm.so.4", 0), ("libnvvm.so", 0)],
    env_var: "CUDA_CORE_NVVM_PATH",
    toolkit_dirs: &["nvvm/lib64"],
    pip_layouts: &[
        ("nvidia/cu13/lib", "libnvvm.so.4", 13),
        ("nvidia/cuda_nvcc/nvvm/lib64", "libnvvm.so", 12),
    ],
    wheel: "nvidia-nvvm",
};

/// The search for libNVVM: [`Discovery`] (see it for the order) of [`Nvvm`], which reads
/// `CUDA_CORE_NVVM_PATH`. The preferred major orders only the wheels: both majors' library is
/// `libnvvm.so.4`.
pub type NvvmSearch = Discovery<Nvvm>;

/// No libNVVM could be loaded: every place tried, and why each failed.
pub type NvvmNotFound = DiscoveryError<Nvvm>;

/// A loaded libNVVM: its function table, versions and where it came from.
pub struct Nvvm {
    table: NvvmTable,
    version: (i32, i32),
    ir_version: (i32, i32, i32, i32),
    location: PathBuf,
    _library: Library,
}

impl fmt::Debug for Nvvm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nvvm")
            .field("version", &self.version)
            .field("ir_version", &self.ir_version)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Nvvm {
    /// Loads libNVVM from one candidate; fails when the library does not answer `nvvmVersion`
    /// and `nvvmIRVersion` (it is not libNVVM).
    pub fn open(candidate: &Candidate) -> Result<Nvvm, String> {
        // SAFETY: loading libNVVM runs only its own initialisers.
        let (library, location) = unsafe { candidate.load_library() }?;
        // SAFETY: the library was found as libNVVM, which nvvm.h describes, and is kept in the
        // returned value with the table.
        let table = unsafe { NvvmTable::load(&library) };
        let (Some(get_version), Some(get_ir_version)) = (table.nvvmVersion, table.nvvmIRVersion)
        else {
            return Err("loaded, but exports no nvvmVersion and nvvmIRVersion: not libNVVM".into());
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the pointer has nvvm.h's signature; both outputs are writable ints.
        let status = unsafe { get_version(&mut major, &mut minor) };
        if status != nvvmResult::NVVM_SUCCESS {
            return Err(format!("nvvmVersion failed with code {}", status.0));
        }
        let mut ir = (0, 0, 0, 0);
        // SAFETY: as above, four writable ints.
        let status = unsafe { get_ir_version(&mut ir.0, &mut ir.1, &mut ir.2, &mut ir.3) };
        if status != nvvmResult::NVVM_SUCCESS {
            return Err(format!("nvvmIRVersion failed with code {}", status.0));
        }
        Ok(Nvvm {
            table,
            version: (major, minor),
            ir_version: ir,
            location,
            _library: library,
        })
    }

    /// The function table. Its pointers are valid as long as this value lives.
    pub fn table(&self) -> &NvvmTable {
        &self.table
    }

    /// The NVVM `(major, minor)` version that `nvvmVersion` reports (2.0 in CUDA 12.9 and
    /// 13.5 alike).
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The NVVM IR version and the debug metadata version it takes, `(major, minor,
    /// debug_major, debug_minor)`, as `nvvmIRVersion` reports them.
    pub fn ir_version(&self) -> (i32, i32, i32, i32) {
        self.ir_version
    }

    /// The file the library was loaded from, or the name handed to the loader.
    pub fn location(&self) -> &Path {
        &self.location
    }

    /// The libdevice (`libdevice.10.bc`, the math library as NVVM IR bitcode) that ships with
    /// the library file `library`: in `../libdevice` (a toolkit's `nvvm/lib64`, the CUDA 12
    /// wheel) or `../nvvm/libdevice` (the CUDA 13 wheel's `lib`). `None` when neither exists.
    pub fn libdevice(library: &Path) -> Option<PathBuf> {
        let dir = library.parent()?.parent()?;
        ["libdevice", "nvvm/libdevice"]
            .iter()
            .map(|sub| dir.join(sub).join("libdevice.10.bc"))
            .find(|path| path.is_file())
    }
}

impl Discoverable for Nvvm {
    const SPEC: &'static LibrarySpec = &NVVM;

    fn open(candidate: &Candidate) -> Result<Self, String> {
        Nvvm::open(candidate)
    }
}
