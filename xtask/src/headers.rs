//! The pinned headers the bindings are generated from, and fetching them from their wheels.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Which header a set of bindings comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `cuda.h`: the driver API.
    Driver,
    /// `nvrtc.h`: the runtime compiler.
    Nvrtc,
    /// `nvJitLink.h`: the JIT linker, whose functions are exported under versioned names
    /// (`__nvJitLinkCreate_13_5`) that differ by library major.
    NvJitLink,
    /// `nvvm.h`: libNVVM, the NVVM IR compiler; one export name per function in every major.
    Nvvm,
    /// `nccl.h`: NCCL, the collective communication library (cuda-core's `nccl` feature). Its
    /// `pnccl*` twins (the profiling interface's names) are left out of the table.
    Nccl,
}

/// One pinned header: the wheel that ships it.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// The wheel's distribution name on PyPI.
    pub wheel: &'static str,
    /// The exact wheel version.
    pub version: &'static str,
    /// The header's directory inside the wheel.
    pub include_dir: &'static str,
    /// The header's file name.
    pub file: &'static str,
    /// The CUDA major the header belongs to (a local toolkit of that major replaces it).
    pub major: u32,
}

/// One set of generated bindings: the header it comes from and where it goes.
#[derive(Clone, Copy, Debug)]
pub struct Pin {
    /// The crate directory, relative to the workspace root.
    pub crate_dir: &'static str,
    /// The header the types, the signatures and the table's fields come from.
    pub header: Header,
    /// What the header declares.
    pub api: Api,
    /// The name of the generated function table.
    pub table: &'static str,
    /// The folder of the generated files, relative to the crate directory.
    pub dir: &'static str,
    /// Prepended to the generated files' names (`bindings.rs`, `table.rs`) in `dir`.
    pub prefix: &'static str,
    /// Headers of other CUDA majors of the same library: the table also loads a library of
    /// their major, by the names they declare, where their signatures agree with `header`'s.
    pub other_majors: &'static [Header],
}

/// Every set of bindings in the workspace.
pub const PINS: [Pin; 6] = [
    Pin {
        crate_dir: "cuda-sys12",
        header: Header {
            wheel: "nvidia-cuda-runtime-cu12",
            version: "12.9.79",
            include_dir: "nvidia/cuda_runtime/include",
            file: "cuda.h",
            major: 12,
        },
        api: Api::Driver,
        table: "DriverTable",
        dir: "src/generated",
        prefix: "",
        other_majors: &[],
    },
    Pin {
        crate_dir: "cuda-sys13",
        header: Header {
            wheel: "nvidia-cuda-runtime",
            version: "13.5.37",
            include_dir: "nvidia/cu13/include",
            file: "cuda.h",
            major: 13,
        },
        api: Api::Driver,
        table: "DriverTable",
        dir: "src/generated",
        prefix: "",
        other_majors: &[],
    },
    Pin {
        crate_dir: "cuda-nvrtc-sys",
        header: Header {
            wheel: "nvidia-cuda-nvrtc",
            version: "13.5.37",
            include_dir: "nvidia/cu13/include",
            file: "nvrtc.h",
            major: 13,
        },
        api: Api::Nvrtc,
        table: "NvrtcTable",
        dir: "src/generated",
        prefix: "",
        other_majors: &[],
    },
    Pin {
        crate_dir: "cuda-nvrtc-sys",
        header: Header {
            wheel: "nvidia-nvjitlink",
            version: "13.5.37",
            include_dir: "nvidia/cu13/include",
            file: "nvJitLink.h",
            major: 13,
        },
        api: Api::NvJitLink,
        table: "NvJitLinkTable",
        dir: "src/generated",
        prefix: "nvjitlink_",
        other_majors: &[Header {
            wheel: "nvidia-nvjitlink-cu12",
            version: "12.9.86",
            include_dir: "nvidia/nvjitlink/include",
            file: "nvJitLink.h",
            major: 12,
        }],
    },
    Pin {
        crate_dir: "cuda-nvrtc-sys",
        header: Header {
            wheel: "nvidia-nvvm",
            version: "13.5.37",
            include_dir: "nvidia/cu13/include",
            file: "nvvm.h",
            major: 13,
        },
        api: Api::Nvvm,
        table: "NvvmTable",
        dir: "src/generated",
        prefix: "nvvm_",
        other_majors: &[],
    },
    // NCCL's header is the same in the CUDA 12 and 13 wheels of one release but for its patch
    // number; the CUDA 12 wheel's library also runs on CUDA 13 drivers. Its glue is cuda-core's
    // (`src/driver/nccl`): the workspace's crates are fixed, and NCCL is a feature of cuda-core.
    Pin {
        crate_dir: "cuda-core",
        header: Header {
            wheel: "nvidia-nccl-cu12",
            version: "2.32.3",
            include_dir: "nvidia/nccl/include",
            file: "nccl.h",
            major: 12,
        },
        api: Api::Nccl,
        table: "NcclTable",
        dir: "src/driver/nccl/generated",
        prefix: "",
        other_majors: &[],
    },
];

/// Downloads a pinned header's wheel (once; later calls reuse it) and unpacks its include directory
/// under `cache`. Returns that include directory.
pub fn fetch(header: &Header, cache: &Path) -> Result<PathBuf, String> {
    let dir = cache.join(format!("{}-{}", header.wheel, header.version));
    let include = dir.join(header.include_dir);
    if include.join(header.file).is_file() {
        return Ok(include);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let spec = format!("{}=={}", header.wheel, header.version);
    eprintln!("xtask: fetching {spec} with pip");
    // The headers are the same in every platform's wheel; naming the platforms lets this run on
    // any host, whatever its own architecture.
    let mut pip = Command::new(python());
    pip.args([
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
    ]);
    for platform in [
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux_2_12_x86_64",
        "manylinux2010_x86_64",
    ] {
        pip.args(["--platform", platform]);
    }
    pip.arg("--dest").arg(&dir).arg(&spec);
    run(&mut pip)?;
    let wheel = std::fs::read_dir(&dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("pip left no wheel for {spec} in {}", dir.display()))?;
    // Unpack the include directory with Python's zipfile: pip already needs Python.
    let script = "import sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  names = [n for n in z.namelist() if n.startswith(sys.argv[2] + '/')]\n\
                  z.extractall(sys.argv[3], names)\n";
    let mut unzip = Command::new(python());
    unzip
        .args(["-c", script])
        .arg(&wheel)
        .arg(header.include_dir)
        .arg(&dir);
    run(&mut unzip)?;
    if include.join(header.file).is_file() {
        Ok(include)
    } else {
        Err(format!(
            "{} has no {}/{}",
            wheel.display(),
            header.include_dir,
            header.file
        ))
    }
}

/// Reads `CUDA_VERSION` (for `cuda.h`) from a header's text.
pub fn cuda_version(header_text: &str) -> Option<u32> {
    header_text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("#define"), Some("CUDA_VERSION"), Some(value)) => value.parse().ok(),
            _ => None,
        }
    })
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("running {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed with {status}"))
    }
}
