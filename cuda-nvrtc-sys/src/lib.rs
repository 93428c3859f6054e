//! Raw FFI for NVRTC, the CUDA runtime compiler, and discovery of the library at run time.
//!
//! - Every type and constant of `nvrtc.h` (from the `nvidia-cuda-nvrtc` 13.5.37 wheel), as
//!   bindgen gives them, and [`NvrtcTable`]: one optional pointer per function it declares,
//!   filled from the loaded library. A function the library lacks (an NVRTC 12 has no
//!   `nvrtcGetTileIR`) stays `None`.
//! - [`Search`]: finds and loads `libnvrtc` of CUDA 12 or 13 (see [`Discovery`] for the order),
//!   and loads NVRTC's builtins library from the same directory first, so that a library
//!   outside the loader's path can compile.
//! - [`loader_path`] and [`Candidate::file`]: the file a candidate would load, found without
//!   loading it (for keys that name the exact library, such as a program cache's).
//! - [`nvjitlink`]: the same for nvJitLink, the JIT linker that also links LTO-IR: its types,
//!   a table filled from the versioned names of the loaded library's major, and its search.
//! - [`nvvm`]: the same for libNVVM, the compiler of NVVM IR to PTX: its types, table and
//!   search, and where its libdevice lies.
//!
//! - [`devrt`]: the search for the device runtime `libcudadevrt.a`, the static library that
//!   kernels launching kernels are linked with (a file, found by path; never loaded here).
//! - [`headers`]: the search for the CUDA toolkit's headers (`cuda_runtime.h` and CCCL's
//!   folder), from a toolkit or the runtime and CCCL wheels, for programs that include them.
//!
//! Nothing links to NVRTC, nvJitLink or libNVVM at build time. The safe API is in `cuda-core`.
//!
//! ```no_run
//! use cuda_nvrtc_sys::Search;
//!
//! match Search::from_env(13).load() {
//!     Ok(nvrtc) => {
//!         let (major, minor) = nvrtc.version();
//!         println!("NVRTC {major}.{minor} from {}", nvrtc.location().display());
//!     }
//!     Err(not_found) => eprintln!("{not_found}"),
//! }
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod devrt;
pub mod headers;
mod loader;
pub mod nvjitlink;
mod nvrtc;
pub mod nvvm;
mod search;

pub use loader::loader_path;
pub use nvrtc::{NotFound, Nvrtc, Search};
pub use search::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};

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
    include!("generated/bindings.rs");
    include!("generated/table.rs");
}

pub use generated::*;
