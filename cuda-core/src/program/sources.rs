//! Programs from PTX and from NVVM IR: what a [`Program`] compiles from, NVVM IR modules, and
//! the compile of the two kinds that NVRTC does not compile (their cache key is in `key.rs`).

use std::fmt;
use std::path::Path;

use super::options::Taker;
use super::{Program, ProgramOptions};
use crate::driver::{self, NvvmInput};
use crate::error::{Cause, Error, Result};
use crate::linker::{Linker, LinkerOptions};
use crate::object_code::{CodeType, ObjectCode};

/// What a [`Program`] compiles from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProgramKind {
    /// CUDA C++, compiled by NVRTC ([`Program::new`]).
    Cxx,
    /// PTX, assembled into a cubin by the linker ([`Program::from_ptx`]).
    Ptx,
    /// NVVM IR modules, compiled by libNVVM ([`Program::from_nvvm`]).
    NvvmIr,
}

impl fmt::Display for ProgramKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProgramKind::Cxx => "C++",
            ProgramKind::Ptx => "PTX",
            ProgramKind::NvvmIr => "NVVM IR",
        })
    }
}

/// The source of a program, by kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Source {
    Cxx(String),
    Ptx(String),
    Nvvm(Vec<NvvmModule>),
}

/// One NVVM IR module of a [`Program::from_nvvm`]: LLVM bitcode, or LLVM assembly text (which
/// libNVVM still reads, and calls deprecated), under a name used in its diagnostics.
///
/// A lazy module (`nvvmLazyAddModuleToProgram`) gives only what the other modules use, and may
/// be optimised as internal to the program: the way to add a library such as libdevice
/// ([`NvvmModule::libdevice`]). A program cannot be made of lazy modules alone.
///
/// ```
/// use cuda_core::NvvmModule;
///
/// let module = NvvmModule::new("kernel.ll", "target triple = \"nvptx64-nvidia-cuda\"\n");
/// assert_eq!(module.name(), "kernel.ll");
/// assert!(!module.is_lazy());
/// assert!(module.with_lazy(true).is_lazy());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
#[doc(alias = "nvvmLazyAddModuleToProgram")]
pub struct NvvmModule {
    name: String,
    ir: Vec<u8>,
    lazy: bool,
}

impl fmt::Debug for NvvmModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvvmModule")
            .field("name", &self.name)
            .field("bytes", &self.ir.len())
            .field("lazy", &self.lazy)
            .finish()
    }
}

impl NvvmModule {
    /// A module of this name and IR (bitcode or text), added in full.
    #[must_use]
    pub fn new(name: impl Into<String>, ir: impl Into<Vec<u8>>) -> NvvmModule {
        NvvmModule {
            name: name.into(),
            ir: ir.into(),
            lazy: false,
        }
    }

    /// Whether the module is added lazily (see [`NvvmModule`]).
    #[must_use]
    #[doc(alias = "nvvmLazyAddModuleToProgram")]
    pub fn with_lazy(mut self, lazy: bool) -> NvvmModule {
        self.lazy = lazy;
        self
    }

    /// The module in a file (`.bc` or `.ll`), named by its path. A file that cannot be read is
    /// [`Error::Io`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<NvvmModule> {
        let path = path.as_ref();
        let ir = std::fs::read(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: Cause::new(e),
        })?;
        Ok(NvvmModule::new(path.display().to_string(), ir))
    }

    /// The libdevice (`libdevice.10.bc`, CUDA's math functions as NVVM IR: `__nv_sinf` and so
    /// on) that ships with the libNVVM in use, as a lazy module. It lies beside the library in
    /// a toolkit (`nvvm/libdevice`) and in both wheels; elsewhere this is
    /// [`Error::NvvmNotFound`] saying where it looked. Loads libNVVM.
    pub fn libdevice() -> Result<NvvmModule> {
        let path = driver::libdevice()?;
        Ok(NvvmModule::from_file(&path)?.with_lazy(true))
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The IR, as given.
    pub fn ir(&self) -> &[u8] {
        &self.ir
    }

    /// Whether it is added lazily.
    pub fn is_lazy(&self) -> bool {
        self.lazy
    }
}

impl ProgramOptions {
    /// Refuses the options that a program of `kind` compiling to `target` has no use for,
    /// naming them and what it takes instead.
    pub(crate) fn check_kind(&self, kind: ProgramKind, target: CodeType) -> Result<()> {
        let link = ProgramOptions::taken_by(Taker::Link);
        let allowed: Vec<&str> = match kind {
            ProgramKind::Cxx => return Ok(()),
            ProgramKind::Ptx => ProgramOptions::taken_by(Taker::Ptx),
            ProgramKind::NvvmIr if target == CodeType::Cubin => {
                [ProgramOptions::taken_by(Taker::Nvvm), link.clone()].concat()
            }
            ProgramKind::NvvmIr => ProgramOptions::taken_by(Taker::Nvvm),
        };
        let refused: Vec<&str> = self
            .set_fields()
            .into_iter()
            .filter(|field| !allowed.contains(field))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        let link_only = kind == ProgramKind::NvvmIr && refused.iter().all(|f| link.contains(f));
        let reason = if link_only {
            format!(
                "{} apply to the link step, which an NVVM IR program has only when compiled to \
                 a cubin; it takes {} for {}",
                refused.join(", "),
                allowed.join(", "),
                target.describe()
            )
        } else {
            format!(
                "{} apply to C++ (NVRTC) programs, not to {kind} ones; a {kind} program takes \
                 {} for {}",
                refused.join(", "),
                allowed.join(", "),
                target.describe()
            )
        };
        Err(Error::InvalidArgument {
            name: "options",
            reason,
        })
    }

    /// libNVVM's options for `target` (with `arch` as given): `-arch=compute_<arch>`, `-g`
    /// (with `-opt=0` unless `device_code_optimize`), the floating-point modes (`fast_math`
    /// sets `-ftz=1 -prec-div=0 -prec-sqrt=0 -fma=1` unless set apart), `-gen-lto` for
    /// LTO-IR, then `extra`.
    pub(crate) fn nvvm_args(&self, target: CodeType) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(arch) = &self.arch {
            args.push(format!("-arch=compute_{arch}"));
        }
        if self.debug {
            args.push("-g".to_owned());
            if !self.device_code_optimize {
                args.push("-opt=0".to_owned());
            }
        }
        let fast =
            |set: Option<bool>, fast_value: bool| set.or(self.fast_math.then_some(fast_value));
        let modes = [
            ("ftz", fast(self.ftz, true)),
            ("prec-div", fast(self.prec_div, false)),
            ("prec-sqrt", fast(self.prec_sqrt, false)),
            ("fma", fast(self.fmad, true)),
        ];
        for (name, value) in modes {
            if let Some(value) = value {
                args.push(format!("-{name}={}", u8::from(value)));
            }
        }
        if target == CodeType::LtoIr {
            args.push("-gen-lto".to_owned());
        }
        args.into_iter().chain(self.extra.iter().cloned()).collect()
    }

    /// nvJitLink's options for the link step of a PTX or NVVM IR program (the architecture
    /// aside): `-g`, `-lineinfo`, `-maxrregcount=<n>`, `-Xptxas=<option>`, `-no-cache`.
    pub(crate) fn link_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.debug {
            args.push("-g".to_owned());
        }
        if self.line_info {
            args.push("-lineinfo".to_owned());
        }
        if let Some(count) = self.max_register_count {
            args.push(format!("-maxrregcount={count}"));
        }
        args.extend(self.ptxas_options.iter().map(|o| format!("-Xptxas={o}")));
        if self.no_cache {
            args.push("-no-cache".to_owned());
        }
        args
    }
}

/// The options with the architecture resolved (as given, else the current device's).
pub(super) fn resolved(program: &Program) -> Result<(ProgramOptions, String)> {
    let options = program.options().resolved()?;
    let arch = options.arch.clone().unwrap_or_default();
    Ok((options, arch))
}

pub(super) fn no_name_expressions(kind: ProgramKind, name_expressions: &[&str]) -> Result<()> {
    if name_expressions.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "name_expressions",
        reason: format!(
            "name expressions are C++; a {kind} program's kernels are found by their symbols"
        ),
    })
}

/// Compiles a PTX or NVVM IR program (see [`Program::compile`]).
pub(crate) fn compile(
    program: &Program,
    target: CodeType,
    name_expressions: &[&str],
) -> Result<ObjectCode> {
    let kind = program.kind();
    no_name_expressions(kind, name_expressions)?;
    if matches!(target, CodeType::Fatbin | CodeType::Library) {
        return Err(Error::InvalidArgument {
            name: "target",
            reason: format!(
                "a {kind} program compiles to PTX, a cubin or LTO-IR, not {}",
                target.describe()
            ),
        });
    }
    if kind == ProgramKind::Ptx && target == CodeType::LtoIr {
        return Err(Error::InvalidArgument {
            name: "target",
            reason: "PTX cannot be turned into LTO-IR (LTO-IR comes from C++ or NVVM IR); \
                     compile a PTX program to a cubin, or link it as PTX"
                .to_owned(),
        });
    }
    // Checked before the architecture is resolved (which needs a device where none is given).
    program.options().check_kind(kind, target)?;
    let name = program.name();
    if let (Source::Ptx(ptx), CodeType::Ptx) = (program.source_of_kind(), target) {
        return Ok(ObjectCode::from_compiled(
            CodeType::Ptx,
            ptx.clone().into_bytes(),
            name.to_owned(),
            String::new(),
            Vec::new(),
        ));
    }
    let (options, arch) = resolved(program)?;
    match program.source_of_kind() {
        Source::Cxx(_) => Err(Error::InvalidArgument {
            name: "self",
            reason: "a C++ program compiles through NVRTC".to_owned(),
        }),
        Source::Ptx(ptx) => {
            let ptx = ObjectCode::from_compiled(
                CodeType::Ptx,
                ptx.clone().into_bytes(),
                name.to_owned(),
                String::new(),
                Vec::new(),
            );
            link(&ptx, &arch, ptx_link_args(&options), name, String::new())
        }
        Source::Nvvm(modules) => {
            if modules.is_empty() {
                return Err(Error::InvalidArgument {
                    name: "modules",
                    reason: "an NVVM IR program needs at least one module".to_owned(),
                });
            }
            let inputs: Vec<NvvmInput<'_>> = modules
                .iter()
                .map(|m| NvvmInput {
                    ir: &m.ir,
                    name: &m.name,
                    lazy: m.lazy,
                })
                .collect();
            let nvvm_target = if target == CodeType::LtoIr {
                CodeType::LtoIr
            } else {
                CodeType::Ptx
            };
            let (code, log) = driver::nvvm_compile(&inputs, &options.nvvm_args(nvvm_target), name)?;
            let compiled =
                ObjectCode::from_compiled(nvvm_target, code, name.to_owned(), log, Vec::new());
            if target == CodeType::Cubin {
                let log = compiled.compile_log().to_owned();
                link(&compiled, &arch, options.link_args(), name, log)
            } else {
                Ok(compiled)
            }
        }
    }
}

/// Links PTX into a cubin named after the program, through the linker in use, with these
/// nvJitLink options; the logs of the compile before (if any) and of the link are the
/// result's.
fn link(
    ptx: &ObjectCode,
    arch: &str,
    extra: Vec<String>,
    name: &str,
    compile_log: String,
) -> Result<ObjectCode> {
    if !extra.is_empty() {
        if let Err(why) = driver::nvjitlink_info() {
            return Err(Error::InvalidArgument {
                name: "options",
                reason: format!(
                    "the link options {extra:?} are nvJitLink's, and nvJitLink was not found \
                     (the driver's linker would ignore them): {why}"
                ),
            });
        }
    }
    let linker_options = LinkerOptions {
        arch: Some(arch.to_owned()),
        extra,
        ..LinkerOptions::default()
    };
    let linked = Linker::new(std::slice::from_ref(ptx), linker_options).link()?;
    let log = match (compile_log.is_empty(), linked.compile_log().is_empty()) {
        (_, true) => compile_log,
        (true, false) => linked.compile_log().to_owned(),
        (false, false) => format!("{compile_log}\n{}", linked.compile_log()),
    };
    Ok(ObjectCode::from_compiled(
        CodeType::Cubin,
        linked.code().to_vec(),
        name.to_owned(),
        log,
        Vec::new(),
    ))
}

/// A PTX program's link options: the typed ones, then `extra` (which an NVVM IR program
/// passes to libNVVM instead).
pub(super) fn ptx_link_args(options: &ProgramOptions) -> Vec<String> {
    let mut args = options.link_args();
    args.extend(options.extra.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm90() -> ProgramOptions {
        ProgramOptions::default().with_arch("90a")
    }

    #[test]
    fn nvvm_arguments_spell_each_mapped_option() {
        assert_eq!(sm90().nvvm_args(CodeType::Ptx), ["-arch=compute_90a"]);
        assert_eq!(
            sm90().with_debug(true).nvvm_args(CodeType::Ptx),
            ["-arch=compute_90a", "-g", "-opt=0"]
        );
        assert_eq!(
            sm90()
                .with_debug(true)
                .with_device_code_optimize(true)
                .nvvm_args(CodeType::Ptx),
            ["-arch=compute_90a", "-g"]
        );
        assert_eq!(
            sm90().with_fast_math(true).nvvm_args(CodeType::Ptx),
            [
                "-arch=compute_90a",
                "-ftz=1",
                "-prec-div=0",
                "-prec-sqrt=0",
                "-fma=1"
            ]
        );
        // Set apart from fast math, and alone.
        assert_eq!(
            sm90()
                .with_fast_math(true)
                .with_ftz(false)
                .with_prec_sqrt(true)
                .nvvm_args(CodeType::Ptx),
            [
                "-arch=compute_90a",
                "-ftz=0",
                "-prec-div=0",
                "-prec-sqrt=1",
                "-fma=1"
            ]
        );
        assert_eq!(
            sm90().with_fmad(false).nvvm_args(CodeType::Ptx),
            ["-arch=compute_90a", "-fma=0"]
        );
        assert_eq!(
            sm90()
                .with_prec_div(true)
                .with_extra(vec!["-jump-table-density=50".into()])
                .nvvm_args(CodeType::LtoIr),
            [
                "-arch=compute_90a",
                "-prec-div=1",
                "-gen-lto",
                "-jump-table-density=50"
            ]
        );
        assert!(ProgramOptions::default()
            .nvvm_args(CodeType::Ptx)
            .is_empty());
    }

    #[test]
    fn link_arguments_spell_each_mapped_option() {
        assert!(sm90().link_args().is_empty());
        let options = sm90()
            .with_debug(true)
            .with_line_info(true)
            .with_max_register_count(32)
            .with_ptxas_options(vec!["-v".into(), "-O2".into()])
            .with_no_cache(true)
            .with_extra(vec!["-O3".into()]);
        assert_eq!(
            options.link_args(),
            [
                "-g",
                "-lineinfo",
                "-maxrregcount=32",
                "-Xptxas=-v",
                "-Xptxas=-O2",
                "-no-cache"
            ]
        );
        assert_eq!(
            ptx_link_args(&options).last().map(String::as_str),
            Some("-O3")
        );
    }

    #[test]
    fn each_kind_refuses_exactly_the_options_it_has_no_use_for() {
        let refused = |options: ProgramOptions, kind, target| match options.check_kind(kind, target)
        {
            Ok(()) => None,
            Err(Error::InvalidArgument {
                name: "options",
                reason,
            }) => Some(reason),
            Err(other) => panic!("{other}"),
        };
        use CodeType::{Cubin, LtoIr, Ptx};
        use ProgramKind::{Cxx, NvvmIr, Ptx as PtxProgram};
        let every_cxx_option = sm90()
            .with_std("c++17")
            .with_restrict(true)
            .with_minimal(true);
        assert_eq!(refused(every_cxx_option.clone(), Cxx, Cubin), None);
        let reason = refused(every_cxx_option, NvvmIr, Ptx).unwrap();
        assert!(
            reason.contains("std, restrict, minimal") && reason.contains("NVVM IR"),
            "{reason}"
        );
        // NVVM IR takes these for any target; PTX only `extra` (its linker's options).
        for (options, ptx_takes_it) in [
            (sm90().with_ftz(true), false),
            (sm90().with_fast_math(true), false),
            (
                sm90().with_debug(true).with_device_code_optimize(true),
                false,
            ),
            (sm90().with_extra(vec!["-opt=0".into()]), true),
        ] {
            assert_eq!(refused(options.clone(), NvvmIr, LtoIr), None, "{options:?}");
            assert_eq!(
                refused(options.clone(), PtxProgram, Cubin).is_none(),
                ptx_takes_it,
                "{options:?}"
            );
        }
        let link = sm90().with_max_register_count(64);
        assert_eq!(refused(link.clone(), NvvmIr, Cubin), None);
        assert_eq!(refused(link.clone(), PtxProgram, Cubin), None);
        let reason = refused(link, NvvmIr, Ptx).unwrap();
        assert!(
            reason.contains("max_register_count") && reason.contains("link step"),
            "{reason}"
        );
        assert!(refused(sm90().with_gen_opt_lto(true), NvvmIr, LtoIr).is_some());
        assert!(refused(sm90().with_relocatable_device_code(true), PtxProgram, Cubin).is_some());
    }

    #[test]
    fn check_kind_names_what_each_kind_takes_in_order() {
        let reason = |options: ProgramOptions, kind, target| match options.check_kind(kind, target)
        {
            Err(Error::InvalidArgument {
                name: "options",
                reason,
            }) => reason,
            other => panic!("{other:?}"),
        };
        use CodeType::{Cubin, LtoIr, Ptx};
        use ProgramKind::{NvvmIr, Ptx as PtxProgram};
        const PTX_TAKES: &str =
            "arch, debug, line_info, max_register_count, ptxas_options, no_cache, extra";
        // In the options table's row order (`device_code_optimize`'s row follows `fmad`'s).
        const NVVM_TAKES: &str =
            "arch, debug, fast_math, ftz, prec_div, prec_sqrt, fmad, device_code_optimize, extra";
        const LINK_TAKES: &str = "line_info, max_register_count, ptxas_options, no_cache";
        assert_eq!(
            reason(sm90().with_fast_math(true), PtxProgram, Cubin),
            format!(
                "fast_math apply to C++ (NVRTC) programs, not to PTX ones; a PTX program takes \
                 {PTX_TAKES} for a cubin"
            )
        );
        assert_eq!(
            reason(
                sm90()
                    .with_device_code_optimize(true)
                    .with_ftz(true)
                    .with_std("c++17"),
                PtxProgram,
                Ptx
            ),
            format!(
                "std, ftz, device_code_optimize apply to C++ (NVRTC) programs, not to PTX ones; a \
                 PTX program takes {PTX_TAKES} for PTX"
            )
        );
        assert_eq!(
            reason(
                sm90().with_no_cache(true).with_max_register_count(32),
                NvvmIr,
                Ptx
            ),
            format!(
                "max_register_count, no_cache apply to the link step, which an NVVM IR program has \
                 only when compiled to a cubin; it takes {NVVM_TAKES} for PTX"
            )
        );
        assert_eq!(
            reason(sm90().with_std("c++17"), NvvmIr, Cubin),
            format!(
                "std apply to C++ (NVRTC) programs, not to NVVM IR ones; a NVVM IR program takes \
                 {NVVM_TAKES}, {LINK_TAKES} for a cubin"
            )
        );
        assert_eq!(
            reason(
                sm90().with_restrict(true).with_line_info(true),
                NvvmIr,
                LtoIr
            ),
            format!(
                "line_info, restrict apply to C++ (NVRTC) programs, not to NVVM IR ones; a NVVM IR \
                 program takes {NVVM_TAKES} for LTO-IR"
            )
        );
        // Every option of a list at once is taken.
        let link = sm90()
            .with_line_info(true)
            .with_max_register_count(32)
            .with_ptxas_options(vec!["-v".into()])
            .with_no_cache(true);
        let ptx = link.clone().with_debug(true).with_extra(vec!["-O3".into()]);
        assert!(ptx.check_kind(PtxProgram, Cubin).is_ok());
        let nvvm = sm90()
            .with_debug(true)
            .with_device_code_optimize(true)
            .with_fast_math(true)
            .with_ftz(true)
            .with_prec_div(true)
            .with_prec_sqrt(true)
            .with_fmad(true)
            .with_extra(vec!["-opt=3".into()]);
        assert!(nvvm.check_kind(NvvmIr, Ptx).is_ok());
        assert!(nvvm.check_kind(NvvmIr, LtoIr).is_ok());
        let nvvm_cubin = ProgramOptions {
            line_info: true,
            max_register_count: Some(32),
            ptxas_options: vec!["-v".into()],
            no_cache: true,
            ..nvvm
        };
        assert!(nvvm_cubin.check_kind(NvvmIr, Cubin).is_ok());
    }
}
