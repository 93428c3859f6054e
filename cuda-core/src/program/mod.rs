//! Programs: CUDA C++ source compiled at run time by NVRTC to PTX, cubin or LTO-IR; PTX
//! assembled into a cubin by the linker, and NVVM IR compiled by libNVVM (see
//! `sources.rs` for those two). The options are in `options.rs`; the headers a C++ program
//! can reach, which its cache key covers, in `headers.rs`; the cache key of each kind in
//! `key.rs`.

mod debug_source;
mod headers;
mod key;
mod options;
mod sources;

use std::path::PathBuf;

use self::key::Keyed;
use self::sources::Source;
use crate::cache::{CacheKey, ProgramCache};
use crate::driver::{self, NvrtcJob, NvrtcOutput, PchCreate, PchOutcome};
use crate::error::{Error, Result};
use crate::object_code::{CodeType, ObjectCode, PchStatus};

pub use self::options::{FastCompile, ProgramOptions};
pub use self::sources::{NvvmModule, ProgramKind};

/// A program to compile: CUDA C++ source for NVRTC (whichever of NVRTC 12 or 13 discovery
/// finds, [`Program::new`]), PTX for the linker ([`Program::from_ptx`]), or NVVM IR modules
/// for libNVVM ([`Program::from_nvvm`]). Each compiles with [`Program::compile`] and through
/// a cache with [`Program::compile_cached`].
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
    source: Source,
    name: String,
    options: ProgramOptions,
}

impl Program {
    /// A program from its C++ source; its name (used in diagnostics) is `program.cu`.
    #[must_use]
    pub fn new(source: impl Into<String>, options: ProgramOptions) -> Program {
        Program {
            source: Source::Cxx(source.into()),
            name: "program.cu".to_owned(),
            options,
        }
    }

    /// A program from PTX text, named `program.ptx`. [`Program::compile`] gives a cubin
    /// through the linker in use ([`Linker`](crate::Linker): nvJitLink where it is found,
    /// else the driver's linker, which needs a device), and the PTX itself, unchanged, for
    /// [`CodeType::Ptx`]; PTX cannot become LTO-IR, which is refused. The options it takes are
    /// in [`ProgramOptions`]' table.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, Program, ProgramOptions};
    ///
    /// let ptx = std::fs::read_to_string("kernel.ptx").expect("a PTX file");
    /// let program = Program::from_ptx(ptx, ProgramOptions::default().with_arch("90"));
    /// let cubin = program.compile(CodeType::Cubin, &[])?;
    /// let kernel = cubin.get_kernel("kernel")?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[must_use]
    pub fn from_ptx(ptx: impl Into<String>, options: ProgramOptions) -> Program {
        Program {
            source: Source::Ptx(ptx.into()),
            name: "program.ptx".to_owned(),
            options,
        }
    }

    /// A program from NVVM IR modules, named `program.nvvm`, compiled by libNVVM (found at
    /// run time like NVRTC: `CUDA_CORE_NVVM_PATH`, the loader, a toolkit's `nvvm/lib64`, the
    /// `nvidia-nvvm` and `nvidia-cuda-nvcc-cu12` wheels; see
    /// [`nvvm_info`](crate::info::nvvm_info)). The modules are linked at the IR level,
    /// verified (`nvvmVerifyProgram`) and compiled to PTX, or to LTO-IR for
    /// [`CodeType::LtoIr`] (`-gen-lto`); a cubin is that PTX through the linker, as for
    /// [`Program::from_ptx`]. A module the verifier or compiler refuses is
    /// [`Error::Compile`] with libNVVM's log.
    ///
    /// Kernels are marked as the NVVM IR specification of the libNVVM in use says: the
    /// `!nvvm.annotations` `!"kernel"` entry, in the LLVM 7 dialect (typed pointers) that
    /// libNVVM 12 and 13 both take for the architectures before Blackwell; libNVVM 13 also
    /// takes the `ptx_kernel` calling convention and opaque pointers of its newer LLVM for
    /// Blackwell (`compute_100` and later) or with `-nvvm-latest`.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, NvvmModule, Program, ProgramOptions};
    ///
    /// let ir = std::fs::read("kernel.bc").expect("NVVM IR bitcode");
    /// let program = Program::from_nvvm(
    ///     [NvvmModule::new("kernel.bc", ir), NvvmModule::libdevice()?],
    ///     ProgramOptions::default().with_fast_math(true),
    /// );
    /// let cubin = program.compile(CodeType::Cubin, &[])?;
    /// let kernel = cubin.get_kernel("kernel")?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[must_use]
    #[doc(alias("nvvmProgram", "nvvmAddModuleToProgram"))]
    pub fn from_nvvm(
        modules: impl IntoIterator<Item = NvvmModule>,
        options: ProgramOptions,
    ) -> Program {
        Program {
            source: Source::Nvvm(modules.into_iter().collect()),
            name: "program.nvvm".to_owned(),
            options,
        }
    }

    /// What the program compiles from.
    pub fn kind(&self) -> ProgramKind {
        match self.source {
            Source::Cxx(_) => ProgramKind::Cxx,
            Source::Ptx(_) => ProgramKind::Ptx,
            Source::Nvvm(_) => ProgramKind::NvvmIr,
        }
    }

    /// The NVVM IR modules of a [`Program::from_nvvm`]; empty for the other kinds.
    pub fn nvvm_modules(&self) -> &[NvvmModule] {
        match &self.source {
            Source::Nvvm(modules) => modules,
            _ => &[],
        }
    }

    pub(crate) fn source_of_kind(&self) -> &Source {
        &self.source
    }

    /// Sets the name used in diagnostics and `__FILE__` (a C++ program's), and the name of
    /// the result.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Program {
        self.name = name.into();
        self
    }

    /// The C++ or PTX source; empty for an NVVM IR program (see [`Program::nvvm_modules`]).
    pub fn source(&self) -> &str {
        match &self.source {
            Source::Cxx(text) | Source::Ptx(text) => text,
            Source::Nvvm(_) => "",
        }
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
    /// [`ObjectCode::get_kernel`] finds the kernel by the expression (C++ only: the other
    /// kinds refuse name expressions). A failed compilation is [`Error::Compile`] with the
    /// compiler's whole log (a failed link of PTX, [`Error::Link`] with the linker's); a
    /// successful one keeps its warnings in [`ObjectCode::compile_log`]. What a PTX or NVVM
    /// IR program gives for each target is said at [`Program::from_ptx`] and
    /// [`Program::from_nvvm`].
    ///
    /// With precompiled headers ([`ProgramOptions::pch`], [`ProgramOptions::create_pch`]),
    /// [`ObjectCode::pch_status`] says whether one was created. Where NVRTC ran out of its
    /// precompiled-header heap, the compile grows the heap, which is the process's, to the size
    /// NVRTC asked for (never shrinking it: see [`set_pch_heap_size`]) and compiles the program
    /// once more, as Python's cuda.core does; an NVRTC without `nvrtcGetPCHHeapSizeRequired`
    /// and `nvrtcSetPCHHeapSize` is not retried. The log says when the heap was grown.
    #[doc(alias("nvrtcCompileProgram", "nvvmCompileProgram"))]
    pub fn compile(&self, target: CodeType, name_expressions: &[&str]) -> Result<ObjectCode> {
        let Source::Cxx(source) = &self.source else {
            return sources::compile(self, target, name_expressions);
        };
        let options = self.options.resolved()?;
        let output = match target {
            CodeType::Ptx => NvrtcOutput::Ptx,
            CodeType::Cubin => NvrtcOutput::Cubin,
            CodeType::LtoIr => NvrtcOutput::LtoIr,
            CodeType::Fatbin | CodeType::Library => {
                return Err(Error::InvalidArgument {
                    name: "target",
                    reason: format!(
                        "NVRTC compiles to PTX, cubin or LTO-IR, not {}",
                        target.describe()
                    ),
                })
            }
        };
        let (major, minor) = nvrtc_version()?;
        options.check_nvrtc(major, minor)?;
        // After NVRTC is loaded: the toolkit's headers of its major are preferred.
        let options = options.with_toolkit_dirs()?;
        let name = self.write_debug_source(&options)?;
        let expressions: Vec<String> = name_expressions.iter().map(|e| (*e).to_owned()).collect();
        let compiled = driver::compile(&NvrtcJob {
            source,
            name: &name,
            headers: &options.headers,
            options: &options.to_args(target),
            name_expressions: &expressions,
            output,
            pch: options.pch || options.create_pch.is_some(),
        })?;
        Ok(ObjectCode::from_compiled(
            target,
            compiled.code,
            self.name.clone(),
            compiled.log,
            compiled.lowered,
        )
        .with_pch_status(compiled.pch.map(pch_status)))
    }
}

impl Program {
    /// The name NVRTC compiles the program under: the absolute path of its source file in
    /// [`ProgramOptions::debug_source_dir`] where that is set, else its name.
    pub(crate) fn nvrtc_name(&self, options: &ProgramOptions) -> Result<String> {
        match &options.debug_source_dir {
            Some(dir) => Ok(debug_source::place(dir, &self.name)?
                .to_str()
                .unwrap_or_default()
                .to_owned()),
            None => Ok(self.name.clone()),
        }
    }

    /// Writes a C++ program's source where [`ProgramOptions::debug_source_dir`] says, and
    /// gives the name to compile it under ([`Program::nvrtc_name`]).
    fn write_debug_source(&self, options: &ProgramOptions) -> Result<String> {
        let name = self.nvrtc_name(options)?;
        if let (Source::Cxx(source), Some(_)) = (&self.source, &options.debug_source_dir) {
            debug_source::write(std::path::Path::new(&name), source)?;
        }
        Ok(name)
    }

    /// Checks the program's device code without generating any (`-fdevice-syntax-only`):
    /// NVRTC's log (its warnings) when the source is valid, [`Error::Compile`] with the log
    /// when not. Faster than a compile where only the diagnostics matter. C++ programs only:
    /// a PTX or NVVM IR program is [`Error::InvalidArgument`].
    ///
    /// ```no_run
    /// use cuda_core::{Error, Program, ProgramOptions};
    ///
    /// let bad = Program::new("__global__ void k() { undeclared(); }", ProgramOptions::default());
    /// assert!(matches!(bad.check_syntax(), Err(Error::Compile { .. })));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "--fdevice-syntax-only")]
    pub fn check_syntax(&self) -> Result<String> {
        let Source::Cxx(source) = &self.source else {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!(
                    "checking syntax is NVRTC's, for C++; this is a {} program",
                    self.kind()
                ),
            });
        };
        let options = self.options.resolved()?;
        let (major, minor) = nvrtc_version()?;
        options.check_nvrtc(major, minor)?;
        let mut options = options.with_toolkit_dirs()?;
        options.extra.push("-fdevice-syntax-only".to_owned());
        let checked = driver::compile(&NvrtcJob {
            source,
            name: &self.name,
            headers: &options.headers,
            options: &options.to_args(CodeType::Ptx),
            name_expressions: &[],
            output: NvrtcOutput::Nothing,
            pch: false,
        })?;
        Ok(checked.log)
    }

    /// The cache key of compiling this program for `target` with these name expressions:
    /// a SHA-256 over the source, the name, every option (with the architecture resolved), the
    /// target, the name expressions, the contents of every header the source can reach (see
    /// below), and the exact NVRTC in use (its library file and builtins by path, size and
    /// modification time, found without loading NVRTC where discovery can: so a hit needs no
    /// NVRTC).
    ///
    /// Headers: every `#include` line of the source and, recursively, of each header found,
    /// resolved in every place NVRTC could take it from (the including file's directory for
    /// quoted names, the working directory for the program's own, then `include_paths` and
    /// `-I` options), and the `-include` / `--pre-include` headers; a name found nowhere is one
    /// of NVRTC's built-in headers (or missing), keyed by name. Every header given in memory
    /// ([`ProgramOptions::with_header`]) is keyed by its name and contents, included or not; a
    /// name it gives is not looked for on disk, and the includes in it are followed. A program whose includes the
    /// scan cannot follow (`#include MACRO`) has no key: [`Error::Cache`] says why, and
    /// [`Program::compile_cached`] compiles it uncached.
    ///
    /// A PTX or NVVM IR program's key covers its kind, name, PTX or modules (each module's
    /// name, laziness and bytes), the target and architecture, every option as passed, the
    /// exact libNVVM (its file, found without loading it where discovery can) and, for a
    /// cubin, the exact linker (nvJitLink's file likewise, or the driver's version).
    pub fn cache_key(&self, target: CodeType, name_expressions: &[&str]) -> Result<CacheKey> {
        match key::keyed(self, target, name_expressions)? {
            Keyed::Key(key) => Ok(key),
            Keyed::Uncacheable(reason) => Err(Error::Cache {
                path: PathBuf::from(&self.name),
                reason: format!("this program cannot be cached: {reason}"),
                source: None,
            }),
        }
    }

    /// Compiles through `cache`: a hit skips the compiler (NVRTC, libNVVM, the linker: it need
    /// not even be loaded); a miss
    /// compiles and stores the result. A cache that cannot be read or written only costs the
    /// compile; a program without a key (see [`Program::cache_key`]) is compiled uncached,
    /// and the reason logged once.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, Program, ProgramOptions, cache::FileStreamProgramCache};
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
        let key = match key::keyed(self, target, name_expressions)? {
            Keyed::Key(key) => key,
            Keyed::Uncacheable(why) => {
                log_uncacheable(&self.name, &why);
                return self.compile(target, name_expressions);
            }
        };
        if let Some(code) = cache.get_code(&key) {
            if code.code_type() == target {
                // The source a debugger looks for, as a compile would have written it.
                if self.kind() == ProgramKind::Cxx {
                    self.write_debug_source(&self.options)?;
                }
                return Ok(code);
            }
        }
        let code = self.compile(target, name_expressions)?;
        // Stored only under a key that still holds after the compile: a header changed
        // meanwhile, or NVRTC loaded from elsewhere than its search said, and the output is
        // not the key's.
        match key::keyed(self, target, name_expressions)? {
            Keyed::Key(after) if after == key => cache.put_code(&key, &code),
            _ => log::debug!(
                "{}: not stored in the cache: its inputs changed while it compiled",
                self.name
            ),
        }
        Ok(code)
    }
}

/// The public form of what NVRTC said of a compile's precompiled header.
fn pch_status(outcome: PchOutcome) -> PchStatus {
    let status = match outcome.status {
        PchCreate::Created => PchStatus::Created,
        PchCreate::NotAttempted => PchStatus::NotAttempted,
        PchCreate::HeapExhausted { required } => PchStatus::HeapExhausted { required },
        PchCreate::Failed(reason) => PchStatus::Failed { reason },
    };
    match outcome.retried_with_heap {
        Some(required) => PchStatus::Retried {
            required,
            retry: Box::new(status),
        },
        None => status,
    }
}

/// Logs, once per program name and reason, that a program is compiled without its cache.
fn log_uncacheable(name: &str, why: &str) {
    static LOGGED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    let entry = (name.to_owned(), why.to_owned());
    if !logged.contains(&entry) {
        log::warn!("{name} is compiled without its cache: {why}");
        logged.push(entry);
    }
}

/// The size of NVRTC's heap for creating precompiled headers, in bytes
/// (`nvrtcGetPCHHeapSize`; NVRTC 12.8 and newer). It is the process's: one for every program.
#[doc(alias = "nvrtcGetPCHHeapSize")]
pub fn pch_heap_size() -> Result<usize> {
    driver::pch_heap_size()
}

/// Sets the size of NVRTC's heap for creating precompiled headers (`nvrtcSetPCHHeapSize`),
/// for every later compile of the process. A precompiled header that does not fit makes
/// [`Program::compile`] grow the heap to what it needs and compile again
/// ([`PchStatus::Retried`]); setting it first, large enough, saves that second compile.
///
/// ```no_run
/// # fn main() -> cuda_core::Result<()> {
/// let before = cuda_core::pch_heap_size()?;
/// cuda_core::set_pch_heap_size(2 * before)?;
/// assert_eq!(cuda_core::pch_heap_size()?, 2 * before);
/// # Ok(()) }
/// ```
#[doc(alias = "nvrtcSetPCHHeapSize")]
pub fn set_pch_heap_size(bytes: usize) -> Result<()> {
    driver::set_pch_heap_size(bytes)
}

/// The version of the NVRTC this process uses, `(major, minor)`.
#[doc(alias = "nvrtcVersion")]
pub fn nvrtc_version() -> Result<(i32, i32)> {
    driver::nvrtc_version()
}

/// Starts loading NVRTC on a thread of its own, and returns at once.
///
/// A program cache's hit needs no NVRTC (its key names NVRTC's library file without loading
/// it, where discovery can find it so: see [`Program::cache_key`]), but a compile does: mapping
/// and relocating a library of about 100 MB, which takes milliseconds (the benches' README has
/// the figures). A program that will compile can call this first thing, so that the load runs
/// while it makes its context (which takes longer) instead of after. Whatever needs NVRTC later waits for this load to
/// finish rather than making its own.
///
/// The returned handle gives the version, or why NVRTC could not be loaded (the same error
/// every later use reports); dropping it lets the load go on alone.
///
/// ```no_run
/// use cuda_core::{CodeType, Device, Program, ProgramOptions, cache::FileStreamProgramCache};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_older_nvrtcs_lack_is_refused_there_naming_the_version_that_has_it() {
        for strict in [
            ProgramOptions::default().with_warnings_as_errors(true),
            ProgramOptions::default().with_warn_reorder(true),
        ] {
            for (major, minor) in [(12, 9), (13, 0)] {
                let err = strict.check_nvrtc(major, minor).unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidArgument { reason, .. }
                        if reason.contains("13.1") && reason.contains(&format!("{major}.{minor}"))),
                    "{err}"
                );
            }
            assert!(strict.check_nvrtc(13, 1).is_ok());
            assert!(strict.check_nvrtc(14, 0).is_ok());
        }
        assert!(ProgramOptions::default()
            .with_fast_math(true)
            .check_nvrtc(12, 9)
            .is_ok());
    }

    /// `use_bundled_headers` is NVRTC 13.3's: refused before, naming the version and the
    /// field (bug caught: a row without its `since`, handed to an older NVRTC, which fails
    /// with "unrecognized option" and no word of why); its argument is the one NVRTC 13.3
    /// reads (`--use-bundled-headers=<dir>`: bug caught, a misspelt or bare flag), placed after
    /// the `-I` folders it must follow.
    #[test]
    fn bundled_headers_need_nvrtc_13_3_and_follow_the_include_paths() {
        let options = ProgramOptions::default()
            .with_include_paths(vec!["/mine".into()])
            .with_use_bundled_headers("/cache/nvrtc-headers/13.5");
        for (major, minor) in [(12, 9), (13, 0), (13, 2)] {
            let err = options.check_nvrtc(major, minor).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { reason, .. }
                    if reason.contains("use_bundled_headers") && reason.contains("13.3")
                        && reason.contains(&format!("{major}.{minor}"))),
                "{err}"
            );
        }
        assert!(options.check_nvrtc(13, 3).is_ok());
        assert!(options.check_nvrtc(14, 0).is_ok());
        let args = options.to_args(CodeType::Ptx);
        let at = |arg: &str| args.iter().position(|a| a == arg);
        let bundled = at("--use-bundled-headers=/cache/nvrtc-headers/13.5").expect("the flag");
        assert!(at("-I/mine").expect("the -I") < bundled, "{args:?}");
        // The cache key's header scan searches them where NVRTC does: after the include
        // paths, before `-I` options passed as they are (bug caught: a key blind to them).
        let (dirs, _) = options
            .with_extra(vec!["-I/extra".to_owned()])
            .header_search();
        assert_eq!(
            dirs,
            [
                "/mine",
                "/cache/nvrtc-headers/13.5",
                "/cache/nvrtc-headers/13.5/cccl",
                "/extra"
            ]
            .map(PathBuf::from)
        );
        // Unset, it makes no argument and is no refusal.
        assert!(ProgramOptions::default().check_nvrtc(12, 0).is_ok());
    }

    /// What the driver's glue says becomes the public status: a retry wraps the second
    /// compile's status (bug caught: a retry reported as the first compile's exhaustion, or
    /// the created header of a retry not counted as created).
    #[test]
    fn a_retried_compile_is_reported_with_its_second_status() {
        let outcome = |status, retried_with_heap| PchOutcome {
            status,
            retried_with_heap,
        };
        let retried = pch_status(outcome(PchCreate::Created, Some(4 << 20)));
        assert_eq!(
            retried,
            PchStatus::Retried {
                required: 4 << 20,
                retry: Box::new(PchStatus::Created)
            }
        );
        assert!(retried.created() && retried.retried());
        let again = pch_status(outcome(
            PchCreate::HeapExhausted { required: Some(5) },
            Some(4),
        ));
        assert!(!again.created() && again.retried());
        assert_eq!(
            pch_status(outcome(PchCreate::NotAttempted, None)),
            PchStatus::NotAttempted
        );
        let failed = pch_status(outcome(PchCreate::Failed("why".into()), None));
        assert_eq!(
            failed,
            PchStatus::Failed {
                reason: "why".into()
            }
        );
        assert!(!failed.created() && !failed.retried());
    }

    #[test]
    fn header_search_reads_every_spelling_of_the_include_options() {
        let options = ProgramOptions {
            include_paths: vec!["/a".into()],
            extra: [
                "-I/b",
                "--include-path=/c",
                "-I",
                "/d",
                "--include-path",
                "/e",
                "-DX",
                "--pre-include=p.h",
                "-include",
                "q.h",
                "--pre-include",
                "r.h",
                "-I",
            ]
            .map(String::from)
            .to_vec(),
            ..Default::default()
        };
        let (dirs, pre) = options.header_search();
        assert_eq!(dirs, ["/a", "/b", "/c", "/d", "/e"].map(PathBuf::from));
        assert_eq!(pre, ["p.h", "q.h", "r.h"]);
    }
}
