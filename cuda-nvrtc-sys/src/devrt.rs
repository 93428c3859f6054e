//! Finding the CUDA device runtime, `libcudadevrt.a`: the static library a kernel that
//! launches kernels (dynamic parallelism) is linked with. It is a file, not a shared library,
//! so it is never handed to the dynamic loader: [`DeviceRuntimeSearch`] looks, in the order of
//! [`Discovery`], at `CUDA_CORE_CUDADEVRT_PATH`, then a toolkit's `lib64` and `targets/*/lib`
//! (under `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`), then the runtime wheels:
//! `nvidia/cu13/lib/libcudadevrt.a` (`pip install nvidia-cuda-runtime`, CUDA 13) and
//! `nvidia/cuda_runtime/lib/libcudadevrt.a` (`nvidia-cuda-runtime-cu12`, CUDA 12), the
//! preferred major's first.
//!
//! ```no_run
//! use cuda_nvrtc_sys::devrt::DeviceRuntimeSearch;
//!
//! match DeviceRuntimeSearch::from_env(13).load() {
//!     Ok(devrt) => println!("the device runtime at {}", devrt.path().display()),
//!     Err(not_found) => eprintln!("{not_found}"),
//! }
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::search::{
    loadable_file, Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec,
};

/// What [`DeviceRuntimeSearch`] looks for.
static DEVRT: LibrarySpec = LibrarySpec {
    description: "the CUDA device runtime (libcudadevrt.a)",
    sonames: &[("libcudadevrt.a", 0)],
    env_var: "CUDA_CORE_CUDADEVRT_PATH",
    toolkit_dirs: &["lib64", "targets/*/lib"],
    pip_layouts: &[
        ("nvidia/cu13/lib", "libcudadevrt.a", 13),
        ("nvidia/cuda_runtime/lib", "libcudadevrt.a", 12),
    ],
    wheel: "nvidia-cuda-runtime` (CUDA 13) or `pip install nvidia-cuda-runtime-cu12",
};

/// The first bytes of an `ar` archive.
const AR_MAGIC: &[u8; 8] = b"!<arch>\n";

/// The search for the device runtime: [`Discovery`] of [`DeviceRuntime`], which reads
/// `CUDA_CORE_CUDADEVRT_PATH` and never asks the dynamic loader.
pub type DeviceRuntimeSearch = Discovery<DeviceRuntime>;

/// No device runtime was found: every place tried, and why each failed.
pub type DeviceRuntimeNotFound = DiscoveryError<DeviceRuntime>;

/// A device runtime found: an `ar` archive named `libcudadevrt.a` (only its first bytes are
/// read; the linker reads the rest).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRuntime {
    path: PathBuf,
}

impl DeviceRuntime {
    /// Takes the file one candidate names, if it is an `ar` archive. A name for the loader is
    /// refused: a static library is found by its path only.
    pub fn open(candidate: &Candidate) -> Result<DeviceRuntime, String> {
        let path = match candidate {
            Candidate::Soname(_) => {
                return Err("a static library is not looked up by the dynamic loader".to_owned())
            }
            Candidate::File(path) => path,
        };
        loadable_file(path)?;
        let mut magic = [0u8; 8];
        std::fs::File::open(path)
            .and_then(|mut file| file.read_exact(&mut magic))
            .map_err(|e| format!("cannot read its first bytes: {e}"))?;
        if &magic != AR_MAGIC {
            return Err("not an ar archive (it does not start with !<arch>)".to_owned());
        }
        Ok(DeviceRuntime { path: path.clone() })
    }

    /// The archive's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Discoverable for DeviceRuntime {
    const SPEC: &'static LibrarySpec = &DEVRT;
    const BY_LOADER: bool = false;

    fn open(candidate: &Candidate) -> Result<Self, String> {
        DeviceRuntime::open(candidate)
    }
}
