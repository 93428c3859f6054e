//! Finding and loading `libnvrtc`.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use libloading::Library;

use crate::{nvrtcResult, NvrtcTable};

/// The library names tried, newest major first; [`Search::candidates`] orders them by the
/// preferred major.
const SONAMES: [(&str, u32); 3] = [
    ("libnvrtc.so.13", 13),
    ("libnvrtc.so.12", 12),
    ("libnvrtc.so", 0),
];

/// Where the pip wheels put NVRTC inside a Python `site-packages` directory.
const PIP_LAYOUTS: [(&str, &str, u32); 2] = [
    ("nvidia/cu13/lib", "libnvrtc.so.13", 13),
    ("nvidia/cuda_nvrtc/lib", "libnvrtc.so.12", 12),
];

/// One place NVRTC may be loaded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// A library name handed to the dynamic loader, which searches its usual path.
    Soname(&'static str),
    /// A file at a known path.
    File(PathBuf),
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Candidate::Soname(name) => write!(f, "{name} (loader search path)"),
            Candidate::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The places NVRTC is looked for, in order. [`Search::from_env`] fills it from the environment;
/// tests and embedders can set the fields themselves.
///
/// The order of [`Search::candidates`]:
///
/// 1. `CUDA_CORE_NVRTC_PATH`, when set: then that file alone is tried, so that a wrong override
///    is an error rather than silently another library;
/// 2. `libnvrtc.so.<preferred major>`, the other major, then `libnvrtc.so`, through the
///    loader's own search (`LD_LIBRARY_PATH`, the cache of `ldconfig`);
/// 3. the same names under `$CUDA_HOME`, `$CUDA_PATH` and `/usr/local/cuda`, in `lib64` and
///    `targets/*/lib`;
/// 4. the pip wheels' layouts (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`) in each Python
///    `site-packages` directory: those of `$VIRTUAL_ENV` and `$CONDA_PREFIX`, then the
///    `sys.path` of `python3`, which is asked only when everything before has failed.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// The CUDA major to try first (that of the driver ABI in use); others follow.
    pub preferred_major: u32,
    /// An explicit library file (`CUDA_CORE_NVRTC_PATH`); when set, nothing else is tried.
    pub explicit: Option<PathBuf>,
    /// Toolkit roots to look under, in order.
    pub toolkit_roots: Vec<PathBuf>,
    /// Python `site-packages` directories to look in, in order.
    pub site_packages: Vec<PathBuf>,
    /// Whether to ask `python3` for its `sys.path` once the directories above are exhausted.
    pub ask_python: bool,
}

impl Search {
    /// The search a process gets from its environment, preferring `preferred_major`.
    pub fn from_env(preferred_major: u32) -> Self {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let mut toolkit_roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .into_iter()
            .filter_map(|name| var(name).map(PathBuf::from))
            .collect();
        toolkit_roots.push(PathBuf::from("/usr/local/cuda"));
        let site_packages = ["VIRTUAL_ENV", "CONDA_PREFIX"]
            .into_iter()
            .filter_map(|name| var(name).map(PathBuf::from))
            .flat_map(|prefix| python_lib_dirs(&prefix))
            .collect();
        Search {
            preferred_major,
            explicit: var("CUDA_CORE_NVRTC_PATH").map(PathBuf::from),
            toolkit_roots,
            site_packages,
            ask_python: true,
        }
    }

    /// Adds the `sys.path` of `python3` (nothing if there is none) to [`Search::site_packages`]
    /// now, rather than as the last step of [`Search::load`].
    pub fn with_python_paths(mut self) -> Self {
        self.site_packages.extend(python_sys_path());
        self.ask_python = false;
        self
    }

    /// Every place this search tries, in order, with files that do not exist left out
    /// (the `python3` step is not included: it runs only in [`Search::load`]).
    pub fn candidates(&self) -> Vec<Candidate> {
        if let Some(path) = &self.explicit {
            return vec![Candidate::File(path.clone())];
        }
        let names = self.ordered_sonames();
        let mut out: Vec<Candidate> = names.iter().map(|name| Candidate::Soname(name)).collect();
        for root in &self.toolkit_roots {
            let mut dirs = vec![root.join("lib64")];
            dirs.extend(sorted_subdirs(&root.join("targets")).map(|t| t.join("lib")));
            for dir in dirs {
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

    /// Loads the first candidate that loads and answers `nvrtcVersion`.
    pub fn load(&self) -> Result<Nvrtc, NotFound> {
        let mut tried = Vec::new();
        for candidate in self.candidates() {
            match Nvrtc::open(&candidate) {
                Ok(nvrtc) => return Ok(nvrtc),
                Err(why) => tried.push((candidate, why)),
            }
        }
        if self.explicit.is_none() && self.ask_python {
            let known: Vec<Candidate> = tried.iter().map(|(c, _)| c.clone()).collect();
            let from_python = self.pip_candidates(&python_sys_path());
            for candidate in from_python.into_iter().filter(|c| !known.contains(c)) {
                match Nvrtc::open(&candidate) {
                    Ok(nvrtc) => return Ok(nvrtc),
                    Err(why) => tried.push((candidate, why)),
                }
            }
        }
        Err(NotFound {
            tried,
            search: self.clone(),
        })
    }

    fn ordered_sonames(&self) -> Vec<&'static str> {
        let mut names = SONAMES.to_vec();
        // Stable sort: the preferred major first, the others in their listed order.
        names.sort_by_key(|&(_, major)| major != self.preferred_major);
        names.into_iter().map(|(name, _)| name).collect()
    }

    fn pip_candidates(&self, site_packages: &[PathBuf]) -> Vec<Candidate> {
        let mut layouts = PIP_LAYOUTS.to_vec();
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
                if !path.is_file() {
                    return Err("no such file".to_owned());
                }
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

/// No NVRTC could be loaded: every place tried, and why each failed.
#[derive(Debug)]
pub struct NotFound {
    /// Each candidate tried, in order, with the reason it was not used.
    pub tried: Vec<(Candidate, String)>,
    /// The search that was made.
    pub search: Search,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NVRTC (libnvrtc.so.13 or .12) was not found")?;
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
            for root in &self.search.toolkit_roots {
                write!(f, "{}/{{lib64,targets/*/lib}}, ", root.display())?;
            }
            write!(
                f,
                "and the nvidia/cu13/lib, nvidia/cuda_nvrtc/lib folders of Python's site-packages"
            )?;
        }
        write!(
            f,
            "\ninstall the CUDA toolkit or `pip install nvidia-cuda-nvrtc`, or set CUDA_CORE_NVRTC_PATH to the library file"
        )
    }
}

impl std::error::Error for NotFound {}

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

/// Asks `python3` for its `sys.path`; nothing when there is no such program.
fn python_sys_path() -> Vec<PathBuf> {
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
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
