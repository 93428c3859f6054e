//! [`ProgramOptions`]: NVRTC's options as fields, and the arguments they make.

use std::path::PathBuf;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::object_code::CodeType;

#[cfg(doc)]
use super::{set_pch_heap_size, Program};

/// Compiler options for a [`Program`]. The default targets the current device's architecture
/// with NVRTC's default C++ dialect.
///
/// A C++ program takes every field. The other kinds take those that mean something to them,
/// and [`Program::compile`] refuses the rest by name ([`Error::InvalidArgument`]):
///
/// | field | PTX program | NVVM IR program |
/// | --- | --- | --- |
/// | `arch` | the cubin's `sm_<arch>` | `-arch=compute_<arch>` (and the cubin's `sm_<arch>`) |
/// | `debug` | nvJitLink `-g` | `-g` and `-opt=0` (and nvJitLink `-g` for a cubin) |
/// | `device_code_optimize` | refused | with `debug`: `-g` keeping `-opt=3` |
/// | `fast_math`, `ftz`, `prec_div`, `prec_sqrt`, `fmad` | refused | `-ftz=`, `-prec-div=`, `-prec-sqrt=`, `-fma=` (`fast_math`: 1, 0, 0, 1 unless set apart) |
/// | `line_info`, `max_register_count`, `ptxas_options`, `no_cache` | nvJitLink `-lineinfo`, `-maxrregcount=`, `-Xptxas=`, `-no-cache` | the same, for a cubin only |
/// | `extra` | nvJitLink options | libNVVM options (`-jump-table-density=`, ...) |
///
/// The link step's options are nvJitLink's: where only the driver's linker is found, a
/// program that sets them is refused rather than linked without them.
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
    /// Device code optimisation with `debug` (`-dopt=on`).
    pub device_code_optimize: bool,
    /// Options for ptxas, each passed as `--ptxas-options=<option>` (such as `-v`, whose
    /// register report lands in the compile log).
    pub ptxas_options: Vec<String>,
    /// Extensible whole-program mode (`-ewp`).
    pub extensible_whole_program: bool,
    /// More aggressive vectorisation (`--extra-device-vectorization`).
    pub extra_device_vectorization: bool,
    /// With an LTO-IR target, also generate optimised LTO-IR (`-gen-opt-lto`).
    pub gen_opt_lto: bool,
    /// Macros undefined (`-U<name>`), after `defines`.
    pub undefines: Vec<String>,
    /// Headers included before the source (`--pre-include=<header>`); followed by the cache
    /// key's header scan like the source's own includes.
    pub pre_includes: Vec<String>,
    /// Do not search the source's own directory for quoted includes (`-no-source-include`).
    pub no_source_include: bool,
    /// Whether `std::move` and `std::forward` are built in (`-builtin-move-forward`).
    pub builtin_move_forward: Option<bool>,
    /// Whether `std::initializer_list` is built in (`-builtin-initializer-list`).
    pub builtin_initializer_list: Option<bool>,
    /// No warnings at all (`-w`).
    pub disable_warnings: bool,
    /// Kernel pointer parameters are `__restrict__` (`-restrict`).
    pub restrict: bool,
    /// Functions without an execution space are `__device__` (`-default-device`).
    pub device_as_default_execution_space: bool,
    /// `__int128` in device code (`-device-int128`).
    pub device_int128: bool,
    /// Optimisation remarks in the log, such as `"inline"` (`-opt-info=<kind>`). NVRTC 12.9
    /// and 13 keep this for every later compile of the process, with or without it.
    pub optimization_info: Option<String>,
    /// Diagnostics without their numbers (`-no-err-no`).
    pub no_display_error_number: bool,
    /// Diagnostic numbers made errors (`-diag-error=<n>`).
    pub diag_error: Vec<u32>,
    /// Diagnostic numbers suppressed (`-diag-suppress=<n>`).
    pub diag_suppress: Vec<u32>,
    /// Diagnostic numbers made warnings (`-diag-warn=<n>`).
    pub diag_warn: Vec<u32>,
    /// Every warning an error (`-Werror=all-warnings`; NVRTC 13.1 and newer).
    pub warnings_as_errors: bool,
    /// Write the compile's phase timings, as CSV, to this file (`-time=<file>`). A cache hit
    /// writes nothing.
    pub time: Option<PathBuf>,
    /// Write a Chrome trace of the compile (`-fdevice-time-trace=<file>`). NVRTC 13 writes it
    /// to the name with `.json` appended; NVRTC 12.9 writes a PTX compile's to the name as
    /// given, and its ptxas fails a cubin compile (it looks for the name with `.json`).
    pub device_time_trace: Option<PathBuf>,
    /// Compile in up to this many threads (`-split-compile=<n>`; 0: as many as cores).
    pub split_compile: Option<u32>,
    /// Faster compiles at less optimisation (`-Ofc=<level>`).
    pub fast_compile: Option<FastCompile>,
    /// Leave out the headers NVRTC includes by default, for a faster compile (`-minimal`).
    pub minimal: bool,
    /// Do not use NVRTC's own cache of compiled programs (`--no-cache`; NVRTC 12.9 and
    /// newer). A compile that cache answers has none of the log a real compile writes, such as
    /// the ptxas report of `ptxas_options` `-v` or the remarks of `optimization_info`: set this
    /// where those matter (NVRTC 12.9 answered from it on a machine with a GPU driver).
    pub no_cache: bool,
    /// The seed for names NVRTC makes up, for reproducible output (`-frandom-seed=<s>`).
    pub random_seed: Option<String>,
    /// Stack canaries in device code (`-device-stack-protector`).
    pub device_stack_protector: Option<bool>,
    /// Let the kernel change the stack limit (`--modify-stack-limit`).
    pub modify_stack_limit: Option<bool>,
    /// Warn where members are initialised in another order than declared (`-Wreorder`;
    /// NVRTC 13.1 and newer).
    pub warn_reorder: bool,
    /// Precompiled headers, automatically (`-pch`): NVRTC creates one for the headers the
    /// source includes first, or uses one it made before for the same ones, in `pch_dir`;
    /// where that is not given, in `$XDG_CACHE_HOME/cuda-core/pch` (else
    /// `$HOME/.cache/cuda-core/pch`, made `0700`), never in the working directory, where
    /// NVRTC would otherwise put it.
    pub pch: bool,
    /// Create a precompiled header of the headers the source includes first, in this file
    /// (`-create-pch=<file>`). Where NVRTC cannot (its PCH heap too small, say), the compile
    /// still succeeds and its log says why, with the heap size needed (see
    /// [`set_pch_heap_size`]).
    pub create_pch: Option<PathBuf>,
    /// Use this precompiled header (`-use-pch=<file>`), made with `create_pch` for the same
    /// headers by the same NVRTC; a file that does not fit is a warning, and the headers are
    /// read as usual.
    pub use_pch: Option<PathBuf>,
    /// Where automatic precompiled headers are written and looked for (`-pch-dir=<dir>`):
    /// made `0700` if missing, and refused at compile time ([`Error::InvalidArgument`]) unless
    /// the effective user owns it and no one else can write it, since NVRTC loads what it finds
    /// there.
    pub pch_dir: Option<PathBuf>,
    /// Whether the log says why a precompiled header was not created or used
    /// (`-pch-verbose`).
    pub pch_verbose: Option<bool>,
    /// Whether the log says when a precompiled header is created or used (`-pch-messages`;
    /// on by default).
    pub pch_messages: Option<bool>,
    /// Instantiate the headers' templates into the precompiled header
    /// (`-instantiate-templates-in-pch`).
    pub instantiate_templates_in_pch: Option<bool>,
    /// More options, passed as they are.
    pub extra: Vec<String>,
}

/// How much optimisation [`ProgramOptions::fast_compile`] gives up for speed (`-Ofc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FastCompile {
    /// The most speed (`max`).
    Max,
    /// Between (`mid`).
    Mid,
    /// The least (`min`).
    Min,
    /// None (`0`).
    Off,
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
    with_device_code_optimize(device_code_optimize: bool);
    with_ptxas_options(ptxas_options: Vec<String>);
    with_extensible_whole_program(extensible_whole_program: bool);
    with_extra_device_vectorization(extra_device_vectorization: bool);
    with_gen_opt_lto(gen_opt_lto: bool);
    with_undefines(undefines: Vec<String>);
    with_pre_includes(pre_includes: Vec<String>);
    with_no_source_include(no_source_include: bool);
    with_builtin_move_forward(builtin_move_forward: bool) => some;
    with_builtin_initializer_list(builtin_initializer_list: bool) => some;
    with_disable_warnings(disable_warnings: bool);
    with_restrict(restrict: bool);
    with_device_as_default_execution_space(device_as_default_execution_space: bool);
    with_device_int128(device_int128: bool);
    with_optimization_info(optimization_info: impl Into<String>) => some;
    with_no_display_error_number(no_display_error_number: bool);
    with_diag_error(diag_error: Vec<u32>);
    with_diag_suppress(diag_suppress: Vec<u32>);
    with_diag_warn(diag_warn: Vec<u32>);
    with_warnings_as_errors(warnings_as_errors: bool);
    with_time(time: impl Into<PathBuf>) => some;
    with_device_time_trace(device_time_trace: impl Into<PathBuf>) => some;
    with_split_compile(split_compile: u32) => some;
    with_fast_compile(fast_compile: FastCompile) => some;
    with_minimal(minimal: bool);
    with_no_cache(no_cache: bool);
    with_random_seed(random_seed: impl Into<String>) => some;
    with_device_stack_protector(device_stack_protector: bool) => some;
    with_modify_stack_limit(modify_stack_limit: bool) => some;
    with_warn_reorder(warn_reorder: bool);
    with_pch(pch: bool);
    with_create_pch(create_pch: impl Into<PathBuf>) => some;
    with_use_pch(use_pch: impl Into<PathBuf>) => some;
    with_pch_dir(pch_dir: impl Into<PathBuf>) => some;
    with_pch_verbose(pch_verbose: bool) => some;
    with_pch_messages(pch_messages: bool) => some;
    with_instantiate_templates_in_pch(instantiate_templates_in_pch: bool) => some;
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
        self.more_args(&mut args);
        args.extend(self.extra.iter().cloned());
        args
    }

    /// The arguments of the options past the first dozen, in field order.
    fn more_args(&self, args: &mut Vec<String>) {
        let mut on = |set: bool, arg: &str| {
            if set {
                args.push(arg.to_owned());
            }
        };
        on(self.device_code_optimize, "-dopt=on");
        on(self.extensible_whole_program, "-ewp");
        on(
            self.extra_device_vectorization,
            "--extra-device-vectorization",
        );
        on(self.gen_opt_lto, "-gen-opt-lto");
        on(self.no_source_include, "-no-source-include");
        on(self.disable_warnings, "-w");
        on(self.restrict, "-restrict");
        on(self.device_as_default_execution_space, "-default-device");
        on(self.device_int128, "-device-int128");
        on(self.no_display_error_number, "-no-err-no");
        on(self.warnings_as_errors, "-Werror=all-warnings");
        on(self.minimal, "-minimal");
        on(self.no_cache, "--no-cache");
        on(self.warn_reorder, "-Wreorder");
        on(self.pch, "-pch");
        let file = |option: &str, path: &Option<PathBuf>| {
            path.as_ref().map(|p| format!("-{option}={}", p.display()))
        };
        args.extend(file("create-pch", &self.create_pch));
        args.extend(file("use-pch", &self.use_pch));
        args.extend(file("pch-dir", &self.pch_dir));
        args.extend(
            self.ptxas_options
                .iter()
                .map(|o| format!("--ptxas-options={o}")),
        );
        args.extend(self.undefines.iter().map(|u| format!("-U{u}")));
        args.extend(
            self.pre_includes
                .iter()
                .map(|h| format!("--pre-include={h}")),
        );
        let flag = |name: &str, value: Option<bool>| value.map(|v| format!("-{name}={v}"));
        args.extend(flag("builtin-move-forward", self.builtin_move_forward));
        args.extend(flag(
            "builtin-initializer-list",
            self.builtin_initializer_list,
        ));
        args.extend(flag("device-stack-protector", self.device_stack_protector));
        args.extend(flag("-modify-stack-limit", self.modify_stack_limit));
        args.extend(flag("pch-verbose", self.pch_verbose));
        args.extend(flag("pch-messages", self.pch_messages));
        args.extend(flag(
            "instantiate-templates-in-pch",
            self.instantiate_templates_in_pch,
        ));
        args.extend(
            self.optimization_info
                .iter()
                .map(|k| format!("-opt-info={k}")),
        );
        args.extend(self.diag_error.iter().map(|n| format!("-diag-error={n}")));
        args.extend(
            self.diag_suppress
                .iter()
                .map(|n| format!("-diag-suppress={n}")),
        );
        args.extend(self.diag_warn.iter().map(|n| format!("-diag-warn={n}")));
        args.extend(self.time.iter().map(|f| format!("-time={}", f.display())));
        args.extend(
            self.device_time_trace
                .iter()
                .map(|f| format!("-fdevice-time-trace={}", f.display())),
        );
        args.extend(
            self.split_compile
                .iter()
                .map(|n| format!("-split-compile={n}")),
        );
        args.extend(self.fast_compile.map(|level| {
            let level = match level {
                FastCompile::Max => "max",
                FastCompile::Mid => "mid",
                FastCompile::Min => "min",
                FastCompile::Off => "0",
            };
            format!("-Ofc={level}")
        }));
        args.extend(
            self.random_seed
                .iter()
                .map(|s| format!("-frandom-seed={s}")),
        );
    }

    /// Refuses the options the NVRTC of major `major` lacks, naming the versions that have them.
    pub(crate) fn check_nvrtc(&self, major: i32, minor: i32) -> Result<()> {
        // The typed options older NVRTCs refuse, with the first version that takes them (found
        // by compiling with each against NVRTC 12.9, 13.0, 13.1, 13.2, 13.4 and 13.5):
        // `(field, option, set here, since)`.
        let newer = [
            (
                "warnings_as_errors",
                "-Werror=all-warnings",
                self.warnings_as_errors,
                (13, 1),
            ),
            ("warn_reorder", "-Wreorder", self.warn_reorder, (13, 1)),
        ];
        for (field, option, set, (since_major, since_minor)) in newer {
            if set && (major, minor) < (since_major, since_minor) {
                return Err(Error::InvalidArgument {
                    name: "options",
                    reason: format!(
                        "{field} ({option}) needs NVRTC {since_major}.{since_minor} or newer; \
                         this is NVRTC {major}.{minor}"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Where NVRTC looks for headers: `include_paths` and the `-I` / `--include-path` options,
    /// in order; and the headers `-include` / `--pre-include` names.
    pub(crate) fn header_search(&self) -> (Vec<PathBuf>, Vec<String>) {
        let mut dirs = self.include_paths.clone();
        let mut pre = self.pre_includes.clone();
        let mut extra = self.extra.iter();
        while let Some(arg) = extra.next() {
            if let Some(dir) = arg
                .strip_prefix("--include-path=")
                .or_else(|| arg.strip_prefix("-I").filter(|d| !d.is_empty()))
            {
                dirs.push(PathBuf::from(dir));
            } else if arg == "-I" || arg == "--include-path" {
                dirs.extend(extra.next().map(PathBuf::from));
            } else if let Some(header) = arg.strip_prefix("--pre-include=") {
                pre.push(header.to_owned());
            } else if arg == "-include" || arg == "--pre-include" {
                pre.extend(extra.next().cloned());
            }
        }
        (dirs, pre)
    }

    /// These options with `arch` filled in: as given, else the current device's.
    pub(crate) fn resolved(&self) -> Result<ProgramOptions> {
        let mut options = self.clone();
        if options.arch.is_none() {
            options.arch = Some(Device::current()?.arch()?);
        }
        options.check_pch_files()?;
        Ok(options)
    }

    /// Gives automatic precompiled headers a directory of the user's own where none is given
    /// (NVRTC would use the working directory), and refuses precompiled-header files and
    /// directories others could write: NVRTC loads what it finds there into the compile.
    fn check_pch_files(&mut self) -> Result<()> {
        if self.pch && self.pch_dir.is_none() {
            self.pch_dir = Some(crate::cache::default_pch_dir()?);
        }
        if let Some(dir) = &self.pch_dir {
            crate::trust::open_dir(dir, crate::trust::Trust::Private, true).map_err(|r| {
                Error::InvalidArgument {
                    name: "pch_dir",
                    reason: format!("{}: {}", dir.display(), r.reason),
                }
            })?;
        }
        for (name, path, must_exist) in [
            ("use_pch", &self.use_pch, true),
            ("create_pch", &self.create_pch, false),
        ] {
            if let Some(path) = path {
                crate::trust::check_named_file(path, must_exist).map_err(|reason| {
                    Error::InvalidArgument {
                        name,
                        reason: format!("{}: {reason}", path.display()),
                    }
                })?;
            }
        }
        Ok(())
    }
}
