//! Finding and loading a CUDA library that ships both in toolkits and as pip wheels: NVRTC,
//! nvJitLink and libNVVM. What differs between them (names, override variable, wheel layouts) is a
//! [`LibrarySpec`]; how one candidate is opened is [`Discoverable::open`].

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// What discovery looks for: one library's file names, override variable and wheel layouts.
#[derive(Debug)]
pub struct LibrarySpec {
    /// How messages name the library: `NVRTC (libnvrtc.so.13 or .12)`.
    pub description: &'static str,
    /// The names handed to the loader, newest major first, each with its CUDA major (0 for the
    /// unversioned name); [`Discovery::candidates`] orders them by the preferred major.
    pub sonames: &'static [(&'static str, u32)],
    /// The environment variable that names the library file explicitly.
    pub env_var: &'static str,
    /// The folders under a toolkit root that hold the library, in order; a `*` component
    /// stands for each subfolder there, sorted (`targets/*/lib`).
    pub toolkit_dirs: &'static [&'static str],
    /// Where the pip wheels put the library inside a `site-packages` directory: the folder,
    /// the file name and its CUDA major.
    pub pip_layouts: &'static [(&'static str, &'static str, u32)],
    /// The wheel a user can install to get the library.
    pub wheel: &'static str,
}

/// A library [`Discovery`] can find: what to look for, and how one candidate is loaded.
pub trait Discoverable: Sized {
    /// The names, variable and layouts to look for.
    const SPEC: &'static LibrarySpec;

    /// Whether the names are also handed to the dynamic loader, which searches its own path
    /// (a shared library); `false` for a file found by its path only (a static library).
    const BY_LOADER: bool = true;

    /// What the spec's variable names, for messages: the library file, or the include folder
    /// of the toolkit's headers.
    const OVERRIDE: &'static str = "the library file";

    /// Loads the library from one candidate, or says why it could not.
    fn open(candidate: &Candidate) -> Result<Self, String>;
}

/// One place a library may be loaded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// A library name handed to the dynamic loader, which searches its usual path.
    Soname(&'static str),
    /// A file at a known path.
    File(PathBuf),
}

impl Candidate {
    /// Loads the library this candidate names, and where it came from (the name for a
    /// soname). A file that does not exist is refused before the loader.
    ///
    /// # Safety
    ///
    /// Loading runs the library's initialisers: the candidate must name a library whose
    /// initialisers are sound to run (NVRTC, nvJitLink and libNVVM run only their own).
    pub unsafe fn load_library(&self) -> Result<(libloading::Library, PathBuf), String> {
        match self {
            Candidate::Soname(name) => {
                // SAFETY: the caller's promise.
                let library =
                    unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())?;
                Ok((library, PathBuf::from(name)))
            }
            Candidate::File(path) => {
                loadable_file(path)?;
                // SAFETY: the caller's promise.
                let library =
                    unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
                Ok((library, path.clone()))
            }
        }
    }
}

/// Refuses, before the loader, a library file that is not there or is named by a relative
/// path (which would name a file of the working directory).
pub(crate) fn loadable_file(path: &Path) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(
            "not an absolute path: a relative one would name a file in the working directory"
                .to_owned(),
        );
    }
    if !path.is_file() {
        return Err("no such file".to_owned());
    }
    Ok(())
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Candidate::Soname(name) => write!(f, "{name} (loader search path)"),
            Candidate::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The places a library `L` is looked for, in order. [`Discovery::from_env`] fills it from the
/// environment; tests and embedders can set the fields themselves. [`Search`](crate::Search)
/// is NVRTC's, [`NvJitLinkSearch`](crate::nvjitlink::NvJitLinkSearch) nvJitLink's.
///
/// The order of [`Discovery::candidates`] (the names are NVRTC's; nvJitLink's are
/// `CUDA_CORE_NVJITLINK_PATH`, `libnvJitLink.so.*`, and the wheel folders `nvidia/cu13/lib` and
/// `nvidia/nvjitlink/lib`; libNVVM's are `CUDA_CORE_NVVM_PATH`, `libnvvm.so.4` and
/// `libnvvm.so`, the toolkit's `nvvm/lib64`, and the wheel folders `nvidia/cu13/lib` and
/// `nvidia/cuda_nvcc/nvvm/lib64`; the device runtime's are `CUDA_CORE_CUDADEVRT_PATH`,
/// `libcudadevrt.a` as a file only (step 2 is skipped: [`Discoverable::BY_LOADER`]), and the
/// wheel folders `nvidia/cu13/lib` and `nvidia/cuda_runtime/lib`):
///
/// 1. `CUDA_CORE_NVRTC_PATH`, when set: then that file alone is tried, so that a wrong override
///    is an error rather than silently another library;
/// 2. `libnvrtc.so.<preferred major>`, the other major, then `libnvrtc.so`, through the
///    loader's own search (`LD_LIBRARY_PATH`, the cache of `ldconfig`);
/// 3. the same names under `$CUDA_HOME`, `$CUDA_PATH` and `/usr/local/cuda`, in `lib64` and
///    `targets/*/lib` (the spec's [`LibrarySpec::toolkit_dirs`]);
/// 4. the pip wheels' layouts (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`) in each Python
///    `site-packages` directory: those of `$VIRTUAL_ENV` and `$CONDA_PREFIX`, then the
///    `sys.path` of `python3`, which is asked only when everything before has failed.
///
/// The working directory is never searched: relative toolkit roots, prefixes and `sys.path`
/// entries are left out, the override must be an absolute path, and `python3` is found only
/// in the absolute directories of `PATH` and run in `/`. Names handed to the loader are
/// searched as the loader searches them, where an empty or relative entry of
/// `LD_LIBRARY_PATH` does mean the working directory: that is the environment's choice, for
/// every program it runs.
pub struct Discovery<L> {
    /// The CUDA major to try first (that of the driver ABI in use); others follow.
    pub preferred_major: u32,
    /// An explicit library file (the spec's variable); when set, nothing else is tried.
    pub explicit: Option<PathBuf>,
    /// Toolkit roots to look under, in order.
    pub toolkit_roots: Vec<PathBuf>,
    /// Python `site-packages` directories to look in, in order.
    pub site_packages: Vec<PathBuf>,
    /// Whether to ask `python3` for its `sys.path` once the directories above are exhausted.
    pub ask_python: bool,
    /// The library looked for (a type marker; `PhantomData` or `Default::default()`).
    pub library: PhantomData<fn() -> L>,
}

// Written out rather than derived: deriving would require `L` itself to be Clone, Debug and
// Default, which a loaded library is not.
impl<L> Clone for Discovery<L> {
    fn clone(&self) -> Self {
        Discovery {
            preferred_major: self.preferred_major,
            explicit: self.explicit.clone(),
            toolkit_roots: self.toolkit_roots.clone(),
            site_packages: self.site_packages.clone(),
            ask_python: self.ask_python,
            library: PhantomData,
        }
    }
}

impl<L> Default for Discovery<L> {
    fn default() -> Self {
        Discovery {
            preferred_major: 0,
            explicit: None,
            toolkit_roots: Vec::new(),
            site_packages: Vec::new(),
            ask_python: false,
            library: PhantomData,
        }
    }
}

impl<L> fmt::Debug for Discovery<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovery")
            .field("library", &std::any::type_name::<L>())
            .field("preferred_major", &self.preferred_major)
            .field("explicit", &self.explicit)
            .field("toolkit_roots", &self.toolkit_roots)
            .field("site_packages", &self.site_packages)
            .field("ask_python", &self.ask_python)
            .finish()
    }
}

impl<L: Discoverable> Discovery<L> {
    /// The search a process gets from its environment, preferring `preferred_major`.
    pub fn from_env(preferred_major: u32) -> Self {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        // A relative directory would be looked for in the working directory: left out.
        let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
        let mut toolkit_roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .into_iter()
            .filter_map(absolute)
            .collect();
        toolkit_roots.push(PathBuf::from("/usr/local/cuda"));
        let site_packages = ["VIRTUAL_ENV", "CONDA_PREFIX"]
            .into_iter()
            .filter_map(absolute)
            .flat_map(|prefix| python_lib_dirs(&prefix))
            .collect();
        Discovery {
            preferred_major,
            explicit: var(L::SPEC.env_var).map(PathBuf::from),
            toolkit_roots,
            site_packages,
            ask_python: true,
            library: PhantomData,
        }
    }

    /// Adds the `sys.path` of `python3` (nothing if there is none) to
    /// [`Discovery::site_packages`] now, rather than as the last step of [`Discovery::load`].
    pub fn with_python_paths(mut self) -> Self {
        self.site_packages.extend(python_sys_path());
        self.ask_python = false;
        self
    }

    /// Every place this search tries, in order, with files that do not exist left out
    /// (the `python3` step is not included: it runs only in [`Discovery::load`]).
    pub fn candidates(&self) -> Vec<Candidate> {
        if let Some(path) = &self.explicit {
            return vec![Candidate::File(path.clone())];
        }
        let names = self.ordered_sonames();
        let mut out: Vec<Candidate> = if L::BY_LOADER {
            names.iter().map(|name| Candidate::Soname(name)).collect()
        } else {
            Vec::new()
        };
        for root in &self.toolkit_roots {
            for dir in L::SPEC.toolkit_dirs.iter().flat_map(|d| expand(root, d)) {
                out.extend(
                    names
                        .iter()
                        .map(|name| dir.join(name))
                        .filter(|path| path.is_file())
                        .map(Candidate::File),
                );
            }
        }
        out.extend(self.pip_candidates(&self.site_packages));
        dedup(out)
    }

    /// Loads the first candidate that [`Discoverable::open`] accepts.
    pub fn load(&self) -> Result<L, DiscoveryError<L>> {
        let mut tried = Vec::new();
        for candidate in self.candidates() {
            match L::open(&candidate) {
                Ok(library) => return Ok(library),
                Err(why) => tried.push((candidate, why)),
            }
        }
        if self.explicit.is_none() && self.ask_python {
            let known: Vec<Candidate> = tried.iter().map(|(c, _)| c.clone()).collect();
            let from_python = self.pip_candidates(&python_sys_path());
            for candidate in from_python.into_iter().filter(|c| !known.contains(c)) {
                match L::open(&candidate) {
                    Ok(library) => return Ok(library),
                    Err(why) => tried.push((candidate, why)),
                }
            }
        }
        Err(DiscoveryError {
            tried,
            search: self.clone(),
        })
    }

    fn ordered_sonames(&self) -> Vec<&'static str> {
        let mut names = L::SPEC.sonames.to_vec();
        // Stable sort: the preferred major first, the others in their listed order.
        names.sort_by_key(|&(_, major)| major != self.preferred_major);
        names.into_iter().map(|(name, _)| name).collect()
    }

    fn pip_candidates(&self, site_packages: &[PathBuf]) -> Vec<Candidate> {
        let mut layouts = L::SPEC.pip_layouts.to_vec();
        layouts.sort_by_key(|&(_, _, major)| major != self.preferred_major);
        let mut out = Vec::new();
        for dir in site_packages {
            for (sub, name, _) in &layouts {
                let path = dir.join(sub).join(name);
                if path.is_file() {
                    out.push(Candidate::File(path));
                }
            }
        }
        dedup(out)
    }
}

/// No library `L` could be loaded: every place tried, and why each failed.
/// [`NotFound`](crate::NotFound) is NVRTC's.
pub struct DiscoveryError<L> {
    /// Each candidate tried, in order, with the reason it was not used.
    pub tried: Vec<(Candidate, String)>,
    /// The search that was made.
    pub search: Discovery<L>,
}

impl<L> fmt::Debug for DiscoveryError<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DiscoveryError")
            .field("tried", &self.tried)
            .field("search", &self.search)
            .finish()
    }
}

impl<L: Discoverable> fmt::Display for DiscoveryError<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = L::SPEC;
        write!(f, "{} was not found", spec.description)?;
        if self.tried.is_empty() {
            write!(f, "; no candidate existed")?;
        } else {
            write!(f, "; tried:")?;
            for (candidate, why) in &self.tried {
                write!(f, "\n  {candidate}: {why}")?;
            }
        }
        if self.search.explicit.is_none() {
            write!(f, "\nalso looked in ")?;
            let dirs = spec.toolkit_dirs.join(",");
            for root in &self.search.toolkit_roots {
                write!(f, "{}/{{{dirs}}}, ", root.display())?;
            }
            let folders: Vec<&str> = spec.pip_layouts.iter().map(|(dir, _, _)| *dir).collect();
            write!(
                f,
                "and the {} folders of Python's site-packages",
                folders.join(", ")
            )?;
        }
        write!(
            f,
            "\ninstall the CUDA toolkit or `pip install {}`, or set {} to {}",
            spec.wheel,
            spec.env_var,
            L::OVERRIDE
        )
    }
}

impl<L: Discoverable> std::error::Error for DiscoveryError<L> {}

/// `PREFIX/lib/python3.*/site-packages`, sorted.
fn python_lib_dirs(prefix: &Path) -> Vec<PathBuf> {
    sorted_subdirs(&prefix.join("lib"))
        .filter(|dir| {
            dir.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("python3"))
        })
        .map(|dir| dir.join("site-packages"))
        .collect()
}

/// Asks `python3` for its `sys.path`; nothing when there is no such program. The program is
/// looked for only in the absolute directories of `PATH` (an empty or relative entry would be
/// the working directory) and run in `/`, so that nothing of the working directory runs or is
/// listed; relative entries of its answer are left out.
fn python_sys_path() -> Vec<PathBuf> {
    let Some(python) = std::env::var_os("PATH").and_then(|path| program_in(&path, "python3"))
    else {
        return Vec::new();
    };
    let output = std::process::Command::new(python)
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect(),
        _ => Vec::new(),
    }
}

/// The first file `name` in the absolute directories of `path` (a `PATH` value).
fn program_in(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|file| file.is_file())
}

/// The folders `dir` (relative, `/`-separated, `*` for every subfolder) names under `root`.
fn expand(root: &Path, dir: &str) -> Vec<PathBuf> {
    let mut found = vec![root.to_path_buf()];
    for part in dir.split('/') {
        found = if part == "*" {
            found.iter().flat_map(|d| sorted_subdirs(d)).collect()
        } else {
            found.into_iter().map(|d| d.join(part)).collect()
        };
    }
    found
}

fn sorted_subdirs(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.into_iter()
}

fn dedup(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::with_capacity(candidates.len());
    for c in candidates {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}
