//! [`ProgramOptions`]: NVRTC's options as fields, and the arguments they make.

use std::path::PathBuf;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::object_code::CodeType;
use crate::options::on;

#[cfg(doc)]
use super::{set_pch_heap_size, Program};

/// The lists of [`ProgramOptions`] fields that the program kinds NVRTC does not compile take,
/// as the options table's `for` tags give them (each in the order of the rows, in which
/// `check_kind`'s messages name them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Taker {
    /// A PTX program: the target, and its link step's.
    Ptx,
    /// An NVVM IR program, for libNVVM.
    Nvvm,
    /// The link step, which an NVVM IR program has for a cubin.
    Link,
}

/// `--gpu-architecture` for `arch` where given, and `-dlto` for an LTO-IR target.
fn arch_args(arch: Option<&str>, target: CodeType) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(arch) = arch {
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
    args
}

// Rows as `crate::options::options_table!` reads them: the arguments come in the order of the
// rows, and so do the fields of each `for` list (which `check_kind` names). A new option is one
// row, with a `for` tag where a PTX or NVVM IR program takes it. Where NVRTC reads options in
// turn, the rows keep that order, and say so. The typed options older NVRTCs refuse, `since`
// the first version that takes them, were found by compiling with each against NVRTC 12.9,
// 13.0, 13.1, 13.2, 13.4 and 13.5.
crate::options::options_table! {
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
    /// let options = ProgramOptions::default()
    ///     .with_arch("90")
    ///     .with_std("c++17")
    ///     .with_defines(vec![("N".into(), Some("256".into()))])
    ///     .with_fast_math(true);
    /// let args = options.to_args(CodeTypeHint::Cubin);
    /// # use cuda_core::CodeType as CodeTypeHint;
    /// assert!(args.contains(&"--gpu-architecture=sm_90".to_string()));
    /// assert!(args.contains(&"-DN=256".to_string()));
    /// ```
    #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct ProgramOptions {
        /// The architecture, as in `sm_90` without `sm_` (`"90"`, `"90a"`); `None` for the current
        /// device's. PTX targets `compute_<arch>`, cubin and LTO-IR `sm_<arch>`.
        arch: Option<String>, with_arch(impl Into<String>) => some,
            |v, target| arch_args(v.as_deref(), target), for [Ptx, Nvvm];
        /// The C++ dialect, such as `"c++17"` (`--std`).
        std: Option<String>, with_std(impl Into<String>) => some,
            |v, _| v.iter().map(|x| format!("--std={x}"));
        /// Macro definitions, `-D<name>` or `-D<name>=<value>`.
        defines: Vec<(String, Option<String>)>, with_defines(Vec<(String, Option<String>)>),
            |v, _| v.iter().map(|(name, value)| match value {
                Some(value) => format!("-D{name}={value}"),
                None => format!("-D{name}"),
            });
        // Before `extra`: NVRTC searches the `-I` directories in order (as `header_search` and
        // the cache key's header scan do).
        /// Directories searched for `#include` (`-I`).
        include_paths: Vec<PathBuf>, with_include_paths(Vec<PathBuf>),
            |v, _| v.iter().map(|p| format!("-I{}", p.display()));
        /// Headers given in memory, each an include name and its contents (NVRTC's
        /// `nvrtcCreateProgram` header arrays): `#include "name"` or `#include <name>` of the
        /// source, of a header or of `pre_includes` reads the contents given, never a file of
        /// that name. The cache key holds every one of them, name and contents, whether the
        /// source includes it or not. Add one with [`ProgramOptions::with_header`].
        headers: Vec<(String, String)>, with_headers(Vec<(String, String)>),
            |_, _| None::<String>;
        /// Add the CUDA toolkit's include folders after `include_paths`, for sources that
        /// include its headers (`<cooperative_groups.h>`, `<cuda/pipeline>`, `<cuda/barrier>`):
        /// the folder of `cuda_runtime.h` and CCCL's (`include/cccl` in CUDA 13), found as
        /// NVRTC is found and preferring the major of the NVRTC in use:
        /// `CUDA_CORE_CUDA_INCLUDE_PATH` (an include folder), a toolkit under `$CUDA_HOME`,
        /// `$CUDA_PATH` or `/usr/local/cuda`, then the wheels `nvidia-cuda-runtime` with
        /// `nvidia-cuda-cccl` (CUDA 13) or `nvidia-cuda-runtime-cu12` with
        /// `nvidia-cuda-cccl-cu12` (CUDA 12); see `cuda_nvrtc_sys::headers`. None found is
        /// [`Error::InvalidArgument`] naming every place tried. The folders found and the
        /// headers the source reaches through them are in the cache key, as `include_paths`
        /// are.
        ///
        /// ```no_run
        /// use cuda_core::{CodeType, Program, ProgramOptions};
        ///
        /// let program = Program::new(
        ///     r#"#include <cooperative_groups.h>
        ///     namespace cg = cooperative_groups;
        ///     extern "C" __global__ void sum(const int* x, int* out) {
        ///         cg::thread_block block = cg::this_thread_block();
        ///         atomicAdd(out, x[block.thread_rank()]);
        ///     }"#,
        ///     ProgramOptions::default().with_toolkit_includes(true),
        /// );
        /// let code = program.compile(CodeType::Cubin, &[])?;
        /// # Ok::<(), cuda_core::Error>(())
        /// ```
        toolkit_includes: bool, with_toolkit_includes(bool),
            |_, _| None::<String>;
        // After `include_paths` (and the toolkit's folders, added to them): NVRTC searches
        // `--use-bundled-headers` where it stands among the `-I` options, so that the user's
        // folders come first (tried with NVRTC 13.5), as `header_search` has it.
        /// Use the CUDA headers NVRTC carries (`--use-bundled-headers=<dir>`; NVRTC 13.3 and
        /// newer): NVRTC installs its copy of the toolkit's headers and CCCL in this directory
        /// where they are not there yet, and searches it and its `cccl` after `include_paths`,
        /// so that `#include <cuda_runtime.h>`, `<cooperative_groups.h>` or `<cuda/std/array>`
        /// compile without a toolkit or header wheels. NVRTC refuses a directory that another
        /// version of it installed into (`existing headers version mismatch`), so give each
        /// NVRTC version its own: [`ProgramOptions::default_bundled_headers_dir`] does. The
        /// directory is made `0700` if missing, and refused at compile time
        /// ([`Error::InvalidArgument`]) unless the effective user owns it and no one else can
        /// write it, since NVRTC compiles what it finds there. The headers the source reaches
        /// there are in the cache key, as those of `include_paths` are.
        ///
        /// ```no_run
        /// use cuda_core::{CodeType, Program, ProgramOptions};
        ///
        /// let options = ProgramOptions::default()
        ///     .with_use_bundled_headers(ProgramOptions::default_bundled_headers_dir()?);
        /// let program = Program::new(
        ///     r#"#include <cuda/std/array>
        ///     extern "C" __global__ void k(int* out) {
        ///         cuda::std::array<int, 2> a{1, 2};
        ///         out[threadIdx.x] = a[1];
        ///     }"#,
        ///     options,
        /// );
        /// let code = program.compile(CodeType::Cubin, &[])?;
        /// # Ok::<(), cuda_core::Error>(())
        /// ```
        #[doc(alias("--use-bundled-headers", "nvrtcInstallBundledHeaders"))]
        use_bundled_headers: Option<PathBuf>, with_use_bundled_headers(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|d| format!("--use-bundled-headers={}", d.display())),
            since (13, 3);
        /// Device debug information (`-G`).
        debug: bool, with_debug(bool),
            |v, _| on(*v, "-G"), for [Ptx, Nvvm];
        /// Write the program's source into this directory, as the file its name names
        /// ([`Program::with_name`]), and compile it under that file's absolute path, so that a
        /// debugger shows the source of a `debug` (`-G`) or `line_info` build: NVRTC records
        /// the name it compiles a program under as the source file of its line information (a
        /// relative name under the working directory of the compile), and cuda-gdb (or Nsight)
        /// reads the file at that path, with no `directory` command needed. The directory is
        /// made `0700` where missing; the file is written `0600`, once. A file already there
        /// that holds the same source is kept; one that holds anything else (an older source of
        /// the same name, say) is never overwritten, but refused ([`Error::InvalidArgument`]:
        /// remove it, or give another name or directory), as are a link and a name that is not
        /// one plain file name. C++ programs only. The log's diagnostics and `__FILE__` then
        /// give the path; [`ObjectCode::name`](crate::ObjectCode::name) keeps the program's
        /// name. The path is in the cache key, and [`Program::compile_cached`] writes the file
        /// on a hit too, so that cached code is debugged as compiled code is;
        /// [`Program::check_syntax`] writes nothing.
        ///
        /// ```no_run
        /// use cuda_core::{CodeType, Program, ProgramOptions};
        ///
        /// let options = ProgramOptions::default()
        ///     .with_debug(true)
        ///     .with_debug_source_dir("target/cuda-source");
        /// let program = Program::new(
        ///     r#"extern "C" __global__ void scale(float* x, float a) {
        ///         x[threadIdx.x] *= a;
        ///     }"#,
        ///     options,
        /// )
        /// .with_name("scale.cu");
        /// let code = program.compile(CodeType::Cubin, &[])?;
        /// // Under cuda-gdb, a breakpoint in `scale` lists target/cuda-source/scale.cu.
        /// # Ok::<(), cuda_core::Error>(())
        /// ```
        debug_source_dir: Option<PathBuf>, with_debug_source_dir(impl Into<PathBuf>) => some,
            |_, _| None::<String>;
        /// Line information for profilers (`-lineinfo`).
        line_info: bool, with_line_info(bool),
            |v, _| on(*v, "-lineinfo"), for [Ptx, Link];
        /// Fast math (`--use_fast_math`): implies ftz, approximate division and square root, and
        /// fused multiply-add, unless set apart below.
        fast_math: bool, with_fast_math(bool),
            |v, _| on(*v, "--use_fast_math"), for [Nvvm];
        /// Flush denormals to zero (`--ftz`).
        ftz: Option<bool>, with_ftz(bool) => some,
            |v, _| v.map(|v| format!("--ftz={v}")), for [Nvvm];
        /// IEEE-rounded division (`--prec-div`).
        prec_div: Option<bool>, with_prec_div(bool) => some,
            |v, _| v.map(|v| format!("--prec-div={v}")), for [Nvvm];
        /// IEEE-rounded square root (`--prec-sqrt`).
        prec_sqrt: Option<bool>, with_prec_sqrt(bool) => some,
            |v, _| v.map(|v| format!("--prec-sqrt={v}")), for [Nvvm];
        /// Contract multiplies and adds into fused multiply-adds (`--fmad`).
        fmad: Option<bool>, with_fmad(bool) => some,
            |v, _| v.map(|v| format!("--fmad={v}")), for [Nvvm];
        /// Relocatable device code (`-rdc=true`), for linking several programs together.
        relocatable_device_code: bool, with_relocatable_device_code(bool),
            |v, _| on(*v, "-rdc=true");
        /// A register limit per thread (`--maxrregcount`).
        max_register_count: Option<u32>, with_max_register_count(u32) => some,
            |v, _| v.iter().map(|x| format!("--maxrregcount={x}")), for [Ptx, Link];
        /// Device code optimisation with `debug` (`-dopt=on`).
        device_code_optimize: bool, with_device_code_optimize(bool),
            |v, _| on(*v, "-dopt=on"), for [Nvvm];
        /// Options for ptxas, each passed as `--ptxas-options=<option>` (such as `-v`, whose
        /// register report lands in the compile log).
        ptxas_options: Vec<String>, with_ptxas_options(Vec<String>),
            |v, _| v.iter().map(|x| format!("--ptxas-options={x}")), for [Ptx, Link];
        /// Extensible whole-program mode (`-ewp`).
        extensible_whole_program: bool, with_extensible_whole_program(bool),
            |v, _| on(*v, "-ewp");
        /// More aggressive vectorisation (`--extra-device-vectorization`).
        extra_device_vectorization: bool, with_extra_device_vectorization(bool),
            |v, _| on(*v, "--extra-device-vectorization");
        /// With an LTO-IR target, also generate optimised LTO-IR (`-gen-opt-lto`).
        gen_opt_lto: bool, with_gen_opt_lto(bool),
            |v, _| on(*v, "-gen-opt-lto");
        // After `defines`: NVRTC reads `-D` and `-U` in turn, so a `-U` before a `-D` of the
        // same name would not undo it (tried with NVRTC 12.9 and 13.5).
        /// Macros undefined (`-U<name>`), after `defines`.
        undefines: Vec<String>, with_undefines(Vec<String>),
            |v, _| v.iter().map(|x| format!("-U{x}"));
        /// Headers included before the source (`--pre-include=<header>`); followed by the cache
        /// key's header scan like the source's own includes.
        pre_includes: Vec<String>, with_pre_includes(Vec<String>),
            |v, _| v.iter().map(|x| format!("--pre-include={x}"));
        /// Do not search the source's own directory for quoted includes (`-no-source-include`).
        no_source_include: bool, with_no_source_include(bool),
            |v, _| on(*v, "-no-source-include");
        /// Whether `std::move` and `std::forward` are built in (`-builtin-move-forward`).
        builtin_move_forward: Option<bool>, with_builtin_move_forward(bool) => some,
            |v, _| v.map(|v| format!("-builtin-move-forward={v}"));
        /// Whether `std::initializer_list` is built in (`-builtin-initializer-list`).
        builtin_initializer_list: Option<bool>, with_builtin_initializer_list(bool) => some,
            |v, _| v.map(|v| format!("-builtin-initializer-list={v}"));
        /// No warnings at all (`-w`).
        disable_warnings: bool, with_disable_warnings(bool),
            |v, _| on(*v, "-w");
        /// Kernel pointer parameters are `__restrict__` (`-restrict`).
        restrict: bool, with_restrict(bool),
            |v, _| on(*v, "-restrict");
        /// Functions without an execution space are `__device__` (`-default-device`).
        device_as_default_execution_space: bool, with_device_as_default_execution_space(bool),
            |v, _| on(*v, "-default-device");
        /// `__int128` in device code (`-device-int128`).
        device_int128: bool, with_device_int128(bool),
            |v, _| on(*v, "-device-int128");
        /// Optimisation remarks in the log, such as `"inline"` (`-opt-info=<kind>`). NVRTC 12.9
        /// and 13 keep this for every later compile of the process, with or without it.
        optimization_info: Option<String>, with_optimization_info(impl Into<String>) => some,
            |v, _| v.iter().map(|x| format!("-opt-info={x}"));
        /// Diagnostics without their numbers (`-no-err-no`).
        no_display_error_number: bool, with_no_display_error_number(bool),
            |v, _| on(*v, "-no-err-no");
        // The three `-diag-*` rows in this order: for a number named by more than one, NVRTC
        // keeps the last (their place beside `-Werror` changes nothing; tried with NVRTC 13.5).
        /// Diagnostic numbers made errors (`-diag-error=<n>`).
        diag_error: Vec<u32>, with_diag_error(Vec<u32>),
            |v, _| v.iter().map(|x| format!("-diag-error={x}"));
        /// Diagnostic numbers suppressed (`-diag-suppress=<n>`).
        diag_suppress: Vec<u32>, with_diag_suppress(Vec<u32>),
            |v, _| v.iter().map(|x| format!("-diag-suppress={x}"));
        /// Diagnostic numbers made warnings (`-diag-warn=<n>`).
        diag_warn: Vec<u32>, with_diag_warn(Vec<u32>),
            |v, _| v.iter().map(|x| format!("-diag-warn={x}"));
        /// Every warning an error (`-Werror=all-warnings`; NVRTC 13.1 and newer).
        warnings_as_errors: bool, with_warnings_as_errors(bool),
            |v, _| on(*v, "-Werror=all-warnings"), since (13, 1);
        /// Write the compile's phase timings, as CSV, to this file (`-time=<file>`). A cache hit
        /// writes nothing.
        time: Option<PathBuf>, with_time(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|p| format!("-time={}", p.display()));
        /// Write a Chrome trace of the compile (`-fdevice-time-trace=<file>`). NVRTC 13 writes it
        /// to the name with `.json` appended; NVRTC 12.9 writes a PTX compile's to the name as
        /// given, and its ptxas fails a cubin compile (it looks for the name with `.json`).
        device_time_trace: Option<PathBuf>, with_device_time_trace(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|p| format!("-fdevice-time-trace={}", p.display()));
        /// Compile in up to this many threads (`-split-compile=<n>`; 0: as many as cores).
        split_compile: Option<u32>, with_split_compile(u32) => some,
            |v, _| v.iter().map(|x| format!("-split-compile={x}"));
        /// Faster compiles at less optimisation (`-Ofc=<level>`).
        fast_compile: Option<FastCompile>, with_fast_compile(FastCompile) => some,
            |v, _| v.map(|level| format!("-Ofc={}", level.arg()));
        /// Leave out the headers NVRTC includes by default, for a faster compile (`-minimal`).
        minimal: bool, with_minimal(bool),
            |v, _| on(*v, "-minimal");
        /// Do not use NVRTC's own cache of compiled programs (`--no-cache`; NVRTC 12.9 and
        /// newer). A compile that cache answers has none of the log a real compile writes, such as
        /// the ptxas report of `ptxas_options` `-v` or the remarks of `optimization_info`: set this
        /// where those matter (NVRTC 12.9 answered from it on a machine with a GPU driver).
        no_cache: bool, with_no_cache(bool),
            |v, _| on(*v, "--no-cache"), for [Ptx, Link];
        /// The seed for names NVRTC makes up, for reproducible output (`-frandom-seed=<s>`).
        random_seed: Option<String>, with_random_seed(impl Into<String>) => some,
            |v, _| v.iter().map(|x| format!("-frandom-seed={x}"));
        /// Stack canaries in device code (`-device-stack-protector`).
        device_stack_protector: Option<bool>, with_device_stack_protector(bool) => some,
            |v, _| v.map(|v| format!("-device-stack-protector={v}"));
        /// Let the kernel change the stack limit (`--modify-stack-limit`).
        modify_stack_limit: Option<bool>, with_modify_stack_limit(bool) => some,
            |v, _| v.map(|v| format!("--modify-stack-limit={v}"));
        /// Warn where members are initialised in another order than declared (`-Wreorder`;
        /// NVRTC 13.1 and newer).
        warn_reorder: bool, with_warn_reorder(bool),
            |v, _| on(*v, "-Wreorder"), since (13, 1);
        /// Precompiled headers, automatically (`-pch`): NVRTC creates one for the headers the
        /// source includes first (growing its heap as `create_pch` says, and reported by
        /// [`ObjectCode::pch_status`](crate::ObjectCode::pch_status)), or uses one it made
        /// before for the same ones, in `pch_dir`;
        /// where that is not given, in `$XDG_CACHE_HOME/cuda-core/pch` (else
        /// `$HOME/.cache/cuda-core/pch`, made `0700`), never in the working directory, where
        /// NVRTC would otherwise put it.
        pch: bool, with_pch(bool),
            |v, _| on(*v, "-pch");
        /// Create a precompiled header of the headers the source includes first, in this file
        /// (`-create-pch=<file>`). Where its PCH heap is too small, [`Program::compile`] grows
        /// the heap to what NVRTC asks for and compiles again; where NVRTC cannot for another
        /// reason, the compile still succeeds and its log says why. The compile's
        /// [`ObjectCode::pch_status`](crate::ObjectCode::pch_status) says which (see also
        /// [`set_pch_heap_size`]).
        create_pch: Option<PathBuf>, with_create_pch(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|p| format!("-create-pch={}", p.display()));
        /// Use this precompiled header (`-use-pch=<file>`), made with `create_pch` for the same
        /// headers by the same NVRTC; a file that does not fit is a warning, and the headers are
        /// read as usual.
        use_pch: Option<PathBuf>, with_use_pch(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|p| format!("-use-pch={}", p.display()));
        /// Where automatic precompiled headers are written and looked for (`-pch-dir=<dir>`):
        /// made `0700` if missing, and refused at compile time ([`Error::InvalidArgument`]) unless
        /// the effective user owns it and no one else can write it, since NVRTC loads what it finds
        /// there.
        pch_dir: Option<PathBuf>, with_pch_dir(impl Into<PathBuf>) => some,
            |v, _| v.iter().map(|p| format!("-pch-dir={}", p.display()));
        /// Whether the log says why a precompiled header was not created or used
        /// (`-pch-verbose`).
        pch_verbose: Option<bool>, with_pch_verbose(bool) => some,
            |v, _| v.map(|v| format!("-pch-verbose={v}"));
        /// Whether the log says when a precompiled header is created or used (`-pch-messages`;
        /// on by default).
        pch_messages: Option<bool>, with_pch_messages(bool) => some,
            |v, _| v.map(|v| format!("-pch-messages={v}"));
        /// Instantiate the headers' templates into the precompiled header
        /// (`-instantiate-templates-in-pch`).
        instantiate_templates_in_pch: Option<bool>, with_instantiate_templates_in_pch(bool) => some,
            |v, _| v.map(|v| format!("-instantiate-templates-in-pch={v}"));
        // Last: options passed as they are come after the typed ones, and may override them.
        /// More options, passed as they are.
        extra: Vec<String>, with_extra(Vec<String>),
            |v, _| v.iter().cloned(), for [Ptx, Nvvm];
    }

    /// The NVRTC arguments for a target, with `arch` as given (the current device's is filled
    /// in by [`Program::compile`] when `arch` is `None`; here it is then left out).
    pub fn to_args(&self, target: CodeType) -> Vec<String>;
    with check_nvrtc, set_fields, taken_by(Taker);
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

impl FastCompile {
    /// The level as `-Ofc` takes it.
    fn arg(self) -> &'static str {
        match self {
            FastCompile::Max => "max",
            FastCompile::Mid => "mid",
            FastCompile::Min => "min",
            FastCompile::Off => "0",
        }
    }
}

impl ProgramOptions {
    /// Adds one header given in memory to [`headers`](Self::headers): `#include "name"` (or
    /// `<name>`) in the source then reads `contents`. A name given twice keeps its last
    /// contents.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, Program, ProgramOptions};
    ///
    /// let options = ProgramOptions::default()
    ///     .with_header("histogram_common.h", "#define BIN_COUNT 64\n");
    /// let program = Program::new(
    ///     r#"#include "histogram_common.h"
    ///     extern "C" __global__ void clear(unsigned* bins) {
    ///         if (threadIdx.x < BIN_COUNT) bins[threadIdx.x] = 0;
    ///     }"#,
    ///     options,
    /// );
    /// let code = program.compile(CodeType::Cubin, &[])?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        let name = name.into();
        self.headers.retain(|(known, _)| *known != name);
        self.headers.push((name, contents.into()));
        self
    }

    /// A directory for [`use_bundled_headers`](Self::use_bundled_headers) of the user's own and
    /// of the NVRTC in use: `$XDG_CACHE_HOME/cuda-core/nvrtc-headers/<major>.<minor>` (else
    /// under `$HOME/.cache`), beside the program cache's. It loads NVRTC to learn its version
    /// (NVRTC refuses headers another version installed); the directory is made when a compile
    /// uses it. Without NVRTC, [`Error::NvrtcNotFound`]; with neither variable set,
    /// [`Error::Cache`].
    pub fn default_bundled_headers_dir() -> Result<PathBuf> {
        let (major, minor) = crate::driver::nvrtc_version()?;
        Ok(crate::cache::default_bundled_headers_dir()?.join(format!("{major}.{minor}")))
    }

    /// Where NVRTC looks for headers: `include_paths`, NVRTC's bundled headers (their directory
    /// and its `cccl`) and the `-I` / `--include-path` options, in order; and the headers
    /// `-include` / `--pre-include` names.
    pub(crate) fn header_search(&self) -> (Vec<PathBuf>, Vec<String>) {
        let mut dirs = self.include_paths.clone();
        if let Some(bundled) = &self.use_bundled_headers {
            dirs.extend([bundled.clone(), bundled.join("cccl")]);
        }
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

    /// These options with the toolkit's include folders after `include_paths` where
    /// `toolkit_includes` asks for them (a C++ program's: NVRTC reads them).
    pub(crate) fn with_toolkit_dirs(mut self) -> Result<ProgramOptions> {
        if self.toolkit_includes {
            let dirs =
                crate::driver::toolkit_include_dirs().map_err(|why| Error::InvalidArgument {
                    name: "toolkit_includes",
                    reason: format!("the CUDA toolkit's headers were not found: {why}"),
                })?;
            self.include_paths.extend(dirs);
        }
        Ok(self)
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
    /// directories, and a bundled-headers directory, that others could write: NVRTC loads what
    /// it finds there into the compile.
    fn check_pch_files(&mut self) -> Result<()> {
        if self.pch && self.pch_dir.is_none() {
            self.pch_dir = Some(crate::cache::default_pch_dir()?);
        }
        for (name, dir) in [
            ("pch_dir", &self.pch_dir),
            ("use_bundled_headers", &self.use_bundled_headers),
        ] {
            if let Some(dir) = dir {
                crate::trust::open_dir(dir, crate::trust::Trust::Private, true).map_err(|r| {
                    Error::InvalidArgument {
                        name,
                        reason: format!("{}: {}", dir.display(), r.reason),
                    }
                })?;
            }
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
