//! NVRTC programs: CUDA C++ source compiled at run time to PTX, cubin or LTO-IR.

use std::path::PathBuf;

use crate::cache::{CacheKey, ProgramCache};
use crate::device::Device;
use crate::driver::{self, NvrtcOutput};
use crate::error::{Error, Result};
use crate::object_code::{CodeType, ObjectCode};

/// Compiler options for a [`Program`]. The default targets the current device's architecture
/// with NVRTC's default C++ dialect.
///
/// ```
/// use cuda_core::ProgramOptions;
///
/// let options = ProgramOptions {
///     arch: Some("90".into()),
///     std: Some("c++17".into()),
///     defines: vec![("N".into(), Some("256".into()))],
///     fast_math: true,
///     ..Default::default()
/// };
/// let args = options.to_args(CodeTypeHint::Cubin);
/// # use cuda_core::CodeType as CodeTypeHint;
/// assert!(args.contains(&"--gpu-architecture=sm_90".to_string()));
/// assert!(args.contains(&"-DN=256".to_string()));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ProgramOptions {
    /// The architecture, as in `sm_90` without `sm_` (`"90"`, `"90a"`); `None` for the current
    /// device's. PTX targets `compute_<arch>`, cubin and LTO-IR `sm_<arch>`.
    pub arch: Option<String>,
    /// The C++ dialect, such as `"c++17"` (`--std`).
    pub std: Option<String>,
    /// Macro definitions, `-D<name>` or `-D<name>=<value>`.
    pub defines: Vec<(String, Option<String>)>,
    /// Directories searched for `#include` (`-I`).
    pub include_paths: Vec<PathBuf>,
    /// Device debug information (`-G`).
    pub debug: bool,
    /// Line information for profilers (`-lineinfo`).
    pub line_info: bool,
    /// Fast math (`--use_fast_math`): implies ftz, approximate division and square root, and
    /// fused multiply-add, unless set apart below.
    pub fast_math: bool,
    /// Flush denormals to zero (`--ftz`).
    pub ftz: Option<bool>,
    /// IEEE-rounded division (`--prec-div`).
    pub prec_div: Option<bool>,
    /// IEEE-rounded square root (`--prec-sqrt`).
    pub prec_sqrt: Option<bool>,
    /// Contract multiplies and adds into fused multiply-adds (`--fmad`).
    pub fmad: Option<bool>,
    /// Relocatable device code (`-rdc=true`), for linking several programs together.
    pub relocatable_device_code: bool,
    /// A register limit per thread (`--maxrregcount`).
    pub max_register_count: Option<u32>,
    /// More options, passed as they are.
    pub extra: Vec<String>,
}

crate::options::chainers!(ProgramOptions {
    with_arch(arch: impl Into<String>) => some;
    with_std(std: impl Into<String>) => some;
    with_defines(defines: Vec<(String, Option<String>)>);
    with_include_paths(include_paths: Vec<PathBuf>);
    with_debug(debug: bool);
    with_line_info(line_info: bool);
    with_fast_math(fast_math: bool);
    with_ftz(ftz: bool) => some;
    with_prec_div(prec_div: bool) => some;
    with_prec_sqrt(prec_sqrt: bool) => some;
    with_fmad(fmad: bool) => some;
    with_relocatable_device_code(relocatable_device_code: bool);
    with_max_register_count(max_register_count: u32) => some;
    with_extra(extra: Vec<String>);
});

impl ProgramOptions {
    /// The NVRTC arguments for a target, with `arch` as given (the current device's is filled
    /// in by [`Program::compile`] when `arch` is `None`; here it is then left out).
    pub fn to_args(&self, target: CodeType) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(arch) = &self.arch {
            let prefix = if target == CodeType::Ptx {
                "compute"
            } else {
                "sm"
            };
            args.push(format!("--gpu-architecture={prefix}_{arch}"));
        }
        if target == CodeType::LtoIr {
            args.push("-dlto".to_owned());
        }
        if let Some(std) = &self.std {
            args.push(format!("--std={std}"));
        }
        for (name, value) in &self.defines {
            args.push(match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        }
        for path in &self.include_paths {
            args.push(format!("-I{}", path.display()));
        }
        if self.debug {
            args.push("-G".to_owned());
        }
        if self.line_info {
            args.push("-lineinfo".to_owned());
        }
        if self.fast_math {
            args.push("--use_fast_math".to_owned());
        }
        let flag = |name: &str, value: Option<bool>| value.map(|v| format!("--{name}={v}"));
        args.extend(flag("ftz", self.ftz));
        args.extend(flag("prec-div", self.prec_div));
        args.extend(flag("prec-sqrt", self.prec_sqrt));
        args.extend(flag("fmad", self.fmad));
        if self.relocatable_device_code {
            args.push("-rdc=true".to_owned());
        }
        if let Some(count) = self.max_register_count {
            args.push(format!("--maxrregcount={count}"));
        }
        args.extend(self.extra.iter().cloned());
        args
    }

    /// These options with `arch` filled in: as given, else the current device's.
    pub(crate) fn resolved(&self) -> Result<ProgramOptions> {
        let mut options = self.clone();
        if options.arch.is_none() {
            options.arch = Some(Device::current()?.arch()?);
        }
        Ok(options)
    }
}

/// CUDA C++ source to compile with NVRTC (whichever of NVRTC 12 or 13 discovery finds).
///
/// ```no_run
/// use cuda_core::{CodeType, Program, ProgramOptions};
///
/// let program = Program::new(
///     r#"extern "C" __global__ void scale(float* x, float a, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) x[i] *= a;
///     }"#,
///     ProgramOptions::default(),
/// );
/// let code = program.compile(CodeType::Cubin, &[])?;
/// let kernel = code.get_kernel("scale")?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "nvrtcProgram")]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    source: String,
    name: String,
    options: ProgramOptions,
}

impl Program {
    /// A program from its source; its name (used in diagnostics) is `program.cu`.
    #[must_use]
    pub fn new(source: impl Into<String>, options: ProgramOptions) -> Program {
        Program {
            source: source.into(),
            name: "program.cu".to_owned(),
            options,
        }
    }

    /// Sets the name used in diagnostics and `__FILE__`.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Program {
        self.name = name.into();
        self
    }

    /// The source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The options.
    pub fn options(&self) -> &ProgramOptions {
        &self.options
    }

    /// Compiles to `target` (PTX, cubin or LTO-IR). Each name expression (such as
    /// `"axpy<float>"`) is instantiated and its lowered name kept, so that
    /// [`ObjectCode::get_kernel`] finds the kernel by the expression. A failed compilation is
    /// [`Error::Compile`] with NVRTC's whole log; a successful one keeps its warnings in
    /// [`ObjectCode::compile_log`].
    #[doc(alias = "nvrtcCompileProgram")]
    pub fn compile(&self, target: CodeType, name_expressions: &[&str]) -> Result<ObjectCode> {
        let options = self.options.resolved()?;
        let output = match target {
            CodeType::Ptx => NvrtcOutput::Ptx,
            CodeType::Cubin => NvrtcOutput::Cubin,
            CodeType::LtoIr => NvrtcOutput::LtoIr,
            CodeType::Fatbin => {
                return Err(Error::InvalidArgument {
                    name: "target",
                    reason: "NVRTC compiles to PTX, cubin or LTO-IR, not fatbin".to_owned(),
                })
            }
        };
        let expressions: Vec<String> = name_expressions.iter().map(|e| (*e).to_owned()).collect();
        let compiled = driver::compile(
            &self.source,
            &self.name,
            &options.to_args(target),
            &expressions,
            output,
        )?;
        Ok(ObjectCode::from_compiled(
            target,
            compiled.code,
            self.name.clone(),
            compiled.log,
            compiled.lowered,
        ))
    }
}

impl Program {
    /// The cache key of compiling this program for `target` with these name expressions:
    /// a SHA-256 over the source, the name, every option (with the architecture resolved),
    /// the target, the NVRTC version and the name expressions.
    pub fn cache_key(&self, target: CodeType, name_expressions: &[&str]) -> Result<CacheKey> {
        let options = self.options.resolved()?;
        Ok(key(
            self,
            &options,
            target,
            name_expressions,
            nvrtc_version()?,
        ))
    }

    /// Compiles through `cache`: a hit skips NVRTC; a miss compiles and stores the result. A
    /// cache that cannot be read or written only costs the compile.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, FileStreamProgramCache, Program, ProgramOptions};
    ///
    /// let cache = FileStreamProgramCache::open_default(FileStreamProgramCache::DEFAULT_MAX_BYTES)?;
    /// let program = Program::new(r#"extern "C" __global__ void k() {}"#, ProgramOptions::default());
    /// let code = program.compile_cached(&cache, CodeType::Cubin, &[])?; // compiles once
    /// let again = program.compile_cached(&cache, CodeType::Cubin, &[])?; // a hit, even in a new process
    /// assert_eq!(code.code(), again.code());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn compile_cached(
        &self,
        cache: &dyn ProgramCache,
        target: CodeType,
        name_expressions: &[&str],
    ) -> Result<ObjectCode> {
        let key = self.cache_key(target, name_expressions)?;
        if let Some(code) = cache.get_code(&key) {
            if code.code_type() == target {
                return Ok(code);
            }
        }
        let code = self.compile(target, name_expressions)?;
        cache.put_code(&key, &code);
        Ok(code)
    }
}

/// The key of one compilation; every field that changes NVRTC's output is in it.
fn key(
    program: &Program,
    options: &ProgramOptions,
    target: CodeType,
    name_expressions: &[&str],
    nvrtc: (i32, i32),
) -> CacheKey {
    let mut key = CacheKey::builder()
        .field("source", program.source.as_bytes())
        .field("name", program.name.as_bytes())
        .field("target", target.extension().as_bytes())
        .field("arch", options.arch.as_deref().unwrap_or("").as_bytes())
        .field("nvrtc", format!("{}.{}", nvrtc.0, nvrtc.1).as_bytes());
    // One field per option and per expression: fields are length-prefixed, so no two lists
    // give the same key.
    for arg in options.to_args(target) {
        key = key.field("option", arg.as_bytes());
    }
    for expression in name_expressions {
        key = key.field("name_expression", expression.as_bytes());
    }
    key.finish()
}

/// The version of the NVRTC this process uses, `(major, minor)`.
#[doc(alias = "nvrtcVersion")]
pub fn nvrtc_version() -> Result<(i32, i32)> {
    driver::nvrtc_version()
}

/// Starts loading NVRTC on a thread of its own, and returns at once.
///
/// A program cache's key holds NVRTC's version (see [`Program::cache_key`]), so even a cache
/// hit loads NVRTC, once per process: mapping and relocating a library of about 100 MB, which
/// takes milliseconds (the benches' README has the figures). A program that will compile or
/// read a program cache can call this first thing, so that the load runs while it makes its
/// context (which takes longer) instead of after. Whatever needs NVRTC later waits for this load to
/// finish rather than making its own.
///
/// The returned handle gives the version, or why NVRTC could not be loaded (the same error
/// every later use reports); dropping it lets the load go on alone.
///
/// ```no_run
/// use cuda_core::{CodeType, Device, FileStreamProgramCache, Program, ProgramOptions};
///
/// cuda_core::preload_nvrtc();
/// let device = Device::new(0)?;
/// device.set_current()?; // NVRTC loads meanwhile
/// let cache = FileStreamProgramCache::open_default(FileStreamProgramCache::DEFAULT_MAX_BYTES)?;
/// let program = Program::new(r#"extern "C" __global__ void k() {}"#, ProgramOptions::default());
/// let code = program.compile_cached(&cache, CodeType::Cubin, &[])?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
pub fn preload_nvrtc() -> std::thread::JoinHandle<Result<(i32, i32)>> {
    std::thread::spawn(driver::nvrtc_version)
}
