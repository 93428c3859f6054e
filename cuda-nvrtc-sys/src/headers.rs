//! Finding the CUDA toolkit's headers, for a program that includes them
//! (`<cooperative_groups.h>`, `<cuda/pipeline>`, `<cuda_fp16.h>`): the folder that holds
//! `cuda_runtime.h`, and the folder of the CUDA C++ library (CCCL: `cuda/std/...`, `nv/target`)
//! those headers include. [`ToolkitHeadersSearch`] looks, in the order of [`Discovery`], at
//! `CUDA_CORE_CUDA_INCLUDE_PATH` (an include folder), then a toolkit's `include` and
//! `targets/*/include` (under `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`), then the
//! runtime wheels' `nvidia/cu13/include` (`pip install nvidia-cuda-runtime`, CUDA 13) and
//! `nvidia/cuda_runtime/include` (`nvidia-cuda-runtime-cu12`, CUDA 12); [`ToolkitHeaders::find`]
//! takes the first of the preferred major (that of the NVRTC in use), else the first of any.
//!
//! CCCL lies in `include/` itself in a CUDA 12 toolkit, in `include/cccl` in a CUDA 13 toolkit
//! and in the `nvidia-cuda-cccl` wheel (CUDA 13, `nvidia/cu13/include/cccl`), and in
//! `nvidia/cuda_cccl/include` beside the runtime's folder in the `nvidia-cuda-cccl-cu12` wheel.
//! A folder of headers without it is refused (CUDA 13's `cooperative_groups.h` cannot compile
//! without it), saying which wheel gives it.
//!
//! ```no_run
//! use cuda_nvrtc_sys::headers::{ToolkitHeaders, ToolkitHeadersSearch};
//!
//! match ToolkitHeaders::find(&ToolkitHeadersSearch::from_env(13)) {
//!     Ok(headers) => println!("CUDA {} headers: {:?}", headers.major(), headers.dirs()),
//!     Err(not_found) => eprintln!("{not_found}"),
//! }
//! ```

use std::path::{Path, PathBuf};

use crate::search::{Candidate, Discoverable, Discovery, DiscoveryError, LibrarySpec};

/// What [`ToolkitHeadersSearch`] looks for.
static HEADERS: LibrarySpec = LibrarySpec {
    description: "the CUDA toolkit's headers (cuda_runtime.h and CCCL's cuda/std)",
    sonames: &[("cuda_runtime.h", 0)],
    env_var: "CUDA_CORE_CUDA_INCLUDE_PATH",
    toolkit_dirs: &["include", "targets/*/include"],
    pip_layouts: &[
        ("nvidia/cu13/include", "cuda_runtime.h", 13),
        ("nvidia/cuda_runtime/include", "cuda_runtime.h", 12),
    ],
    wheel: "nvidia-cuda-runtime nvidia-cuda-cccl` (CUDA 13) or `pip install \
            nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12",
};

/// The search for the toolkit's headers: [`Discovery`] of [`ToolkitHeaders`], which reads
/// `CUDA_CORE_CUDA_INCLUDE_PATH` and never asks the dynamic loader.
pub type ToolkitHeadersSearch = Discovery<ToolkitHeaders>;

/// No toolkit headers were found: every place tried, and why each failed.
pub type ToolkitHeadersNotFound = DiscoveryError<ToolkitHeaders>;

/// A CCCL folder holds this file.
const CCCL_MARK: &str = "cuda/std/type_traits";

/// The CUDA toolkit's headers found: the include folder, the CCCL folder where it is another,
/// and the CUDA major they are of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolkitHeaders {
    include: PathBuf,
    cccl: Option<PathBuf>,
    major: u32,
}

impl ToolkitHeaders {
    /// Takes the include folder one candidate names (the folder itself, or its
    /// `cuda_runtime.h`), if it holds `cuda_runtime.h` and `cuda_runtime_api.h` (whose
    /// `CUDART_VERSION` gives the major) and CCCL is found for it (see the module). A name for
    /// the loader is refused.
    pub fn open(candidate: &Candidate) -> Result<ToolkitHeaders, String> {
        let path = match candidate {
            Candidate::Soname(_) => {
                return Err("headers are not looked up by the dynamic loader".to_owned())
            }
            Candidate::File(path) => path,
        };
        if !path.is_absolute() {
            return Err(
                "not an absolute path: a relative one would name a folder in the working \
                 directory"
                    .to_owned(),
            );
        }
        let include = if path.is_dir() {
            path.clone()
        } else {
            path.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        if !include.join("cuda_runtime.h").is_file() {
            return Err("no cuda_runtime.h there".to_owned());
        }
        let api = include.join("cuda_runtime_api.h");
        let text = std::fs::read_to_string(&api)
            .map_err(|e| format!("cannot read {}: {e}", api.display()))?;
        let major = cudart_version(&text)
            .map(|version| version / 1000)
            .ok_or_else(|| format!("no CUDART_VERSION in {}", api.display()))?;
        let beside = include
            .parent()
            .and_then(Path::parent)
            .map(|nvidia| nvidia.join("cuda_cccl/include"));
        let places = [Some(include.clone()), Some(include.join("cccl")), beside];
        let Some(cccl) = places
            .into_iter()
            .flatten()
            .find(|dir| dir.join(CCCL_MARK).is_file())
        else {
            return Err(format!(
                "CUDA {major} headers without CCCL ({CCCL_MARK} in neither include/, \
                 include/cccl nor ../../cuda_cccl/include): `pip install {}`",
                if major >= 13 {
                    "nvidia-cuda-cccl"
                } else {
                    "nvidia-cuda-cccl-cu12"
                }
            ));
        };
        Ok(ToolkitHeaders {
            cccl: (cccl != include).then_some(cccl),
            include,
            major,
        })
    }

    /// Finds the headers as `search` orders them, preferring its
    /// [`preferred_major`](Discovery::preferred_major): the first candidate of that major, else
    /// the first of another. The `sys.path` of `python3` is asked (where the search allows it)
    /// only when no candidate before it is of the preferred major. An explicit folder is taken
    /// whatever its major.
    pub fn find(search: &ToolkitHeadersSearch) -> Result<ToolkitHeaders, ToolkitHeadersNotFound> {
        let mut tried: Vec<(Candidate, String)> = Vec::new();
        let mut other: Option<ToolkitHeaders> = None;
        let mut scan = |candidates: Vec<Candidate>,
                        tried: &mut Vec<(Candidate, String)>|
         -> Option<ToolkitHeaders> {
            for candidate in candidates {
                match ToolkitHeaders::open(&candidate) {
                    Ok(found)
                        if found.major == search.preferred_major || search.explicit.is_some() =>
                    {
                        return Some(found)
                    }
                    Ok(found) => {
                        tried.push((
                            candidate,
                            format!("CUDA {}, not {}", found.major, search.preferred_major),
                        ));
                        other.get_or_insert(found);
                    }
                    Err(why) => tried.push((candidate, why)),
                }
            }
            None
        };
        if let Some(found) = scan(search.candidates(), &mut tried) {
            return Ok(found);
        }
        if search.explicit.is_none() && search.ask_python {
            let known: Vec<Candidate> = tried.iter().map(|(c, _)| c.clone()).collect();
            let python: Vec<Candidate> = search
                .clone()
                .with_python_paths()
                .candidates()
                .into_iter()
                .filter(|c| !known.contains(c))
                .collect();
            if let Some(found) = scan(python, &mut tried) {
                return Ok(found);
            }
        }
        other.ok_or_else(|| DiscoveryError {
            tried,
            search: search.clone(),
        })
    }

    /// The include folders to search, in order: the one with `cuda_runtime.h`, then CCCL's
    /// where it is another.
    pub fn dirs(&self) -> Vec<&Path> {
        std::iter::once(self.include.as_path())
            .chain(self.cccl.as_deref())
            .collect()
    }

    /// The folder that holds `cuda_runtime.h`.
    pub fn include(&self) -> &Path {
        &self.include
    }

    /// The CUDA major of the headers (`CUDART_VERSION / 1000`).
    pub fn major(&self) -> u32 {
        self.major
    }
}

/// The value of `#define CUDART_VERSION <n>` in `text`.
fn cudart_version(text: &str) -> Option<u32> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start();
        let rest = rest.strip_prefix("define")?.trim_start();
        rest.strip_prefix("CUDART_VERSION")?.trim().parse().ok()
    })
}

impl Discoverable for ToolkitHeaders {
    const SPEC: &'static LibrarySpec = &HEADERS;
    const BY_LOADER: bool = false;
    const OVERRIDE: &'static str = "the include folder";

    fn open(candidate: &Candidate) -> Result<Self, String> {
        ToolkitHeaders::open(candidate)
    }
}
