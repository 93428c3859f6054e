//! Linking object code into one cubin, or LTO-IR into PTX or one LTO-IR.

use std::ffi::CString;

use crate::device::Device;
use crate::driver::{jit_link, JitInput, JitOutput, LinkInput, LinkOptions};
use crate::error::{Error, Result};
use crate::object_code::{CodeType, ObjectCode};
use crate::options::on;

/// Which linker a [`Linker`] uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkerBackend {
    /// nvJitLink when it is found, else the driver's linker.
    #[default]
    Auto,
    /// nvJitLink only; an error when it is not found.
    NvJitLink,
    /// The driver's `cuLink*` only (no LTO-IR, no PTX output).
    Driver,
}

// Rows as `crate::options::options_table!` reads them: the arguments come in the order of the
// rows (and `to_args` adds `-ptx` after them). A new option is one row, before `extra`.
crate::options::options_table! {
    /// Options of a [`Linker`]. Each typed field is one nvJitLink option (named beside it); the
    /// driver's linker takes those it has a `CUjit_option` for (optimisation level, debug and line
    /// information, the register limit, verbose logs and the wall time), and a link through it
    /// with any other set is refused ([`Error::InvalidArgument`] naming the field), rather than
    /// linked without it. nvJitLink 12.9 and 13.5 take every typed option alike (each was tried
    /// against both).
    ///
    /// ```
    /// use cuda_core::{CodeType, LinkerOptions};
    ///
    /// let options = LinkerOptions::default()
    ///     .with_arch("90")
    ///     .with_max_registers(32)
    ///     .with_line_info(true)
    ///     .with_kernels_used(vec!["saxpy".into()])
    ///     .with_verbose(true);
    /// let args = options.to_args(CodeType::Cubin);
    /// assert_eq!(args[0], "-arch=sm_90");
    /// assert!(args.contains(&"-maxrregcount=32".to_string()));
    /// assert!(args.contains(&"-kernels-used=saxpy".to_string()));
    /// // PTX output is an LTO link: `-lto -ptx`; LTO-IR output an LTO link too.
    /// assert!(LinkerOptions::default().to_args(CodeType::Ptx).ends_with(&["-lto".into(), "-ptx".into()]));
    /// assert_eq!(LinkerOptions::default().to_args(CodeType::LtoIr), ["-lto"]);
    /// // A relocatable (incremental) link: `-r`.
    /// assert_eq!(LinkerOptions::default().with_relocatable(true).to_args(CodeType::Cubin), ["-r"]);
    /// ```
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    #[doc(alias = "CUjit_option")]
    #[non_exhaustive]
    pub struct LinkerOptions {
        /// The device to link for: its architecture is the target, and its primary context hosts
        /// the driver's linker. `None` for the current device.
        device: Option<Device>, with_device(Device) => some,
            |_, _| None::<String>;
        /// The target architecture as in `sm_90` without `sm_` (`-arch=sm_<arch>`); `None` for the
        /// device's.
        arch: Option<String>, with_arch(impl Into<String>) => some,
            |v, _| v.iter().map(|x| format!("-arch=sm_{x}"));
        /// Which linker.
        backend: LinkerBackend, with_backend(LinkerBackend),
            |_, _| None::<String>;
        /// Link with the CUDA device runtime (`libcudadevrt.a`, found as
        /// [`ObjectCode::device_runtime`] says), added as the last input: what a kernel that
        /// launches kernels (dynamic parallelism: `<<<...>>>` in device code, compiled with
        /// [`relocatable_device_code`](crate::ProgramOptions::relocatable_device_code)) needs.
        /// Both linkers take it. A device runtime not found fails the link with
        /// [`Error::Link`] naming the places looked at.
        device_runtime: bool, with_device_runtime(bool),
            |_, _| None::<String>;
        /// The optimisation level (`-O<n>`; the driver's `CU_JIT_OPTIMIZATION_LEVEL`). nvJitLink
        /// takes 0 and 3, the driver 0 to 4.
        optimization_level: Option<u32>, with_optimization_level(u32) => some,
            |v, _| v.iter().map(|x| format!("-O{x}"));
        /// Debug information (`-g`; `CU_JIT_GENERATE_DEBUG_INFO`).
        debug: bool, with_debug(bool),
            |v, _| on(*v, "-g");
        /// Line information for profilers (`-lineinfo`; `CU_JIT_GENERATE_LINE_INFO`).
        line_info: bool, with_line_info(bool),
            |v, _| on(*v, "-lineinfo");
        /// A register limit per thread (`-maxrregcount=<n>`; `CU_JIT_MAX_REGISTERS`). The driver
        /// applies it to the PTX it compiles during the link.
        max_registers: Option<u32>, with_max_registers(u32) => some,
            |v, _| v.iter().map(|x| format!("-maxrregcount={x}"));
        /// Verbose messages, such as ptxas's register counts, in the info log (`-verbose`;
        /// `CU_JIT_LOG_VERBOSE`).
        verbose: bool, with_verbose(bool),
            |v, _| on(*v, "-verbose");
        /// Timings in the info log (`-time`; the driver's `CU_JIT_WALL_TIME`, written to the log as
        /// `cuLinkComplete wall time: <ms> ms`).
        time: bool, with_time(bool),
            |v, _| on(*v, "-time");
        /// Link-time optimisation (`-lto`). Always on for LTO-IR inputs and for PTX and LTO-IR
        /// output; set it for inputs that hold LTO-IR inside, such as fatbins. nvJitLink only.
        link_time_optimization: bool, with_link_time_optimization(bool),
            |v, target| on(
                *v || matches!(target, CodeType::Ptx | CodeType::LtoIr),
                "-lto",
            );
        /// A relocatable (incremental) link (`-r`): the linked cubin is itself relocatable
        /// code, an input to a later link (its functions and variables stay visible to the
        /// code it is linked with), rather than code to load. Needs an nvJitLink that links in
        /// steps (one with `nvJitLinkGetLinkedLTOIR`: newer than 13.1; 12.x refuses `-r`, and
        /// 13.0 takes it but drops what the later link needs), else refused by name; so is it
        /// through the driver's linker.
        relocatable: bool, with_relocatable(bool),
            |v, _| on(*v, "-r");
        /// With LTO, flush denormals to zero (`-ftz=1` or `-ftz=0`). nvJitLink only.
        ftz: Option<bool>, with_ftz(bool) => some,
            |v, _| v.map(|v| format!("-ftz={}", v as u8));
        /// With LTO, IEEE-rounded division (`-prec-div=1` or `=0`). nvJitLink only.
        prec_div: Option<bool>, with_prec_div(bool) => some,
            |v, _| v.map(|v| format!("-prec-div={}", v as u8));
        /// With LTO, IEEE-rounded square root (`-prec-sqrt=1` or `=0`). nvJitLink only.
        prec_sqrt: Option<bool>, with_prec_sqrt(bool) => some,
            |v, _| v.map(|v| format!("-prec-sqrt={}", v as u8));
        /// With LTO, contract multiplies and adds into fused multiply-adds (`-fma=1` or `=0`).
        /// nvJitLink only.
        fma: Option<bool>, with_fma(bool) => some,
            |v, _| v.map(|v| format!("-fma={}", v as u8));
        /// With LTO, the kernels in use (`-kernels-used=<name>` each); the others may be dropped.
        /// nvJitLink only.
        kernels_used: Vec<String>, with_kernels_used(Vec<String>),
            |v, _| v.iter().map(|x| format!("-kernels-used={x}"));
        /// With LTO, the device variables in use (`-variables-used=<name>` each); with
        /// `optimize_unused_variables` the others may be dropped. nvJitLink only.
        variables_used: Vec<String>, with_variables_used(Vec<String>),
            |v, _| v.iter().map(|x| format!("-variables-used={x}"));
        /// With LTO, drop device variables no device code refers to, except `variables_used`
        /// (`-optimize-unused-variables`). nvJitLink only.
        optimize_unused_variables: bool, with_optimize_unused_variables(bool),
            |v, _| on(*v, "-optimize-unused-variables");
        /// Options for ptxas, each passed as `-Xptxas=<option>`. nvJitLink only.
        ptxas_options: Vec<String>, with_ptxas_options(Vec<String>),
            |v, _| v.iter().map(|x| format!("-Xptxas={x}"));
        /// With LTO, optimise in up to this many threads (`-split-compile=<n>`; 0: as many as
        /// cores). nvJitLink only.
        split_compile: Option<u32>, with_split_compile(u32) => some,
            |v, _| v.iter().map(|x| format!("-split-compile={x}"));
        /// With LTO, the extended split compile, in up to this many threads
        /// (`-split-compile-extended=<n>`). nvJitLink only.
        split_compile_extended: Option<u32>, with_split_compile_extended(u32) => some,
            |v, _| v.iter().map(|x| format!("-split-compile-extended={x}"));
        /// With LTO, the least density of a `switch`'s cases, as a percentage (0 to 101), that
        /// makes it a jump table (`-jump-table-density=<n>`; 101, nvJitLink's default, never
        /// does). nvJitLink only.
        jump_table_density: Option<u32>, with_jump_table_density(u32) => some,
            |v, _| v.iter().map(|x| format!("-jump-table-density={x}"));
        /// Do not use nvJitLink's own cache (`-no-cache`). nvJitLink only. A link that cache
        /// answers has none of the log a real link writes, such as ptxas's `-v` report: set this
        /// where that matters (nvJitLink 12.9 and 13.0 answered from it on a machine with a GPU
        /// driver).
        no_cache: bool, with_no_cache(bool),
            |v, _| on(*v, "-no-cache");
        // Last: options passed as they are come after the typed ones.
        /// More nvJitLink options, passed as they are after the typed ones. The driver's linker
        /// takes none.
        extra: Vec<String>, with_extra(Vec<String>),
            |v, _| v.iter().cloned();
    }

    /// Every row's arguments for a link to `target`, in the order of the rows.
    fn table_args(&self, target: CodeType) -> Vec<String>;
}

impl LinkerOptions {
    /// The nvJitLink options of a link to `target` (cubin or PTX), with `arch` as given (the
    /// device's is filled in by [`Linker::link_to`] when `arch` is `None`; here it is then left
    /// out). [`Linker::link_to`] adds `-lto` for LTO-IR inputs as well.
    pub fn to_args(&self, target: CodeType) -> Vec<String> {
        let mut args = self.table_args(target);
        if target == CodeType::Ptx {
            args.push("-ptx".to_owned());
        }
        args
    }

    /// Refuses values nvJitLink would refuse without a word (its `nvJitLinkCreate` gives no
    /// log), naming the field.
    fn check_nvjitlink(&self) -> Result<()> {
        let invalid = |reason: String| Error::InvalidArgument {
            name: "options",
            reason,
        };
        if let Some(level) = self.optimization_level {
            if level != 0 && level != 3 {
                return Err(invalid(format!(
                    "optimization_level {level}: nvJitLink takes -O0 or -O3 (the driver's \
                     linker takes 0 to 4)"
                )));
            }
        }
        if let Some(density) = self.jump_table_density {
            if density > 101 {
                return Err(invalid(format!(
                    "jump_table_density {density}: a percentage from 0 to 101"
                )));
            }
        }
        Ok(())
    }

    /// The driver's linker options, or the refusal of the first option it cannot take.
    /// `why_not_nvjitlink` says why nvJitLink is not used (a chosen backend, or not found).
    fn driver_options(&self, why_not_nvjitlink: &str) -> Result<LinkOptions> {
        // cuda.h has `CU_JIT_LTO`, `_FTZ`, `_PREC_DIV`, `_PREC_SQRT`, `_FMA`,
        // `_REFERENCED_KERNEL_NAMES`, `_REFERENCED_VARIABLE_NAMES` and
        // `_OPTIMIZE_UNUSED_DEVICE_VARIABLES`, but deprecated, for link-time optimisation only,
        // and only of LTO-IR from toolkits before CUDA 12.0 (which this linker refuses to give
        // the driver): so they are nvJitLink's alone here. `CU_JIT_SPLIT_COMPILE` is in the 13
        // header only, and applies to the driver's compiler, not to LTO.
        let only_nvjitlink = [
            (
                "link_time_optimization",
                "-lto",
                self.link_time_optimization,
            ),
            ("ftz", "-ftz", self.ftz.is_some()),
            ("prec_div", "-prec-div", self.prec_div.is_some()),
            ("prec_sqrt", "-prec-sqrt", self.prec_sqrt.is_some()),
            ("fma", "-fma", self.fma.is_some()),
            (
                "kernels_used",
                "-kernels-used",
                !self.kernels_used.is_empty(),
            ),
            (
                "variables_used",
                "-variables-used",
                !self.variables_used.is_empty(),
            ),
            (
                "optimize_unused_variables",
                "-optimize-unused-variables",
                self.optimize_unused_variables,
            ),
            ("ptxas_options", "-Xptxas", !self.ptxas_options.is_empty()),
            (
                "split_compile",
                "-split-compile",
                self.split_compile.is_some(),
            ),
            (
                "split_compile_extended",
                "-split-compile-extended",
                self.split_compile_extended.is_some(),
            ),
            (
                "jump_table_density",
                "-jump-table-density",
                self.jump_table_density.is_some(),
            ),
            ("no_cache", "-no-cache", self.no_cache),
            ("relocatable", "-r", self.relocatable),
            ("extra", "its raw options", !self.extra.is_empty()),
        ];
        if let Some((field, option, _)) = only_nvjitlink.iter().find(|(_, _, set)| *set) {
            return Err(Error::InvalidArgument {
                name: "options",
                reason: format!(
                    "{field} is an nvJitLink option ({option}) that the driver's linker does \
                     not take, and this link goes through the driver's linker: \
                     {why_not_nvjitlink}"
                ),
            });
        }
        if let Some(level) = self.optimization_level {
            if level > 4 {
                return Err(Error::InvalidArgument {
                    name: "options",
                    reason: format!("optimization_level {level}: the driver's linker takes 0 to 4"),
                });
            }
        }
        Ok(LinkOptions {
            optimization_level: self.optimization_level,
            max_registers: self.max_registers,
            debug: self.debug,
            line_info: self.line_info,
            verbose: self.verbose,
            wall_time: self.time,
        })
    }
}

/// Links PTX, cubin, fatbin and LTO-IR inputs (compiled with relocatable device code) and
/// static libraries ([`ObjectCode::from_library`], such as the device runtime:
/// [`LinkerOptions::with_device_runtime`]) into one cubin, or LTO-IR into PTX or into one
/// LTO-IR (nvJitLink 13): through nvJitLink when it is found (discovered like NVRTC:
/// `CUDA_CORE_NVJITLINK_PATH`, the loader, the toolkit, the `nvidia-nvjitlink` wheels), else
/// through the driver's linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`), which
/// cannot take LTO-IR nor make PTX: that is an error saying so. With LTO-IR inputs, nvJitLink
/// links with `-lto`.
///
/// Linking in steps: a link to [`CodeType::LtoIr`] gives one LTO-IR of several, and a
/// [relocatable](LinkerOptions::with_relocatable) link gives a relocatable cubin; either is an
/// input to a later link, so that a library linked once is linked again with each program.
/// Both need an nvJitLink newer than 13.1 (one with `nvJitLinkGetLinkedLTOIR`), and are
/// refused by name with an older one.
///
/// The linked code keeps the name expressions of its inputs ([`ObjectCode::name_expressions`],
/// in input order), so that [`ObjectCode::get_kernel`] finds a kernel by the expression it was
/// compiled with (`"scale<float>"`) on the linked code too. Where two inputs lowered the same
/// expression to different names (two programs each with their own `scale<float>`, in
/// different namespaces or with different definitions), the first input's is kept.
///
/// A kernel that launches kernels compiles, links with the device runtime and runs in three
/// calls:
///
/// ```no_run
/// use cuda_core::{CodeType, Linker, LinkerOptions, Program, ProgramOptions};
///
/// let source = r#"
///     extern "C" __global__ void child(int* out) { out[threadIdx.x] = threadIdx.x; }
///     extern "C" __global__ void parent(int* out) { child<<<1, 32>>>(out); }
/// "#;
/// let rdc = ProgramOptions::default().with_relocatable_device_code(true);
/// let code = Program::new(source, rdc).compile(CodeType::LtoIr, &[])?;
/// let linked = Linker::new(&[code], LinkerOptions::default().with_device_runtime(true)).link()?;
/// let parent = linked.get_kernel("parent")?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
///
/// ```no_run
/// use cuda_core::{CodeType, Linker, LinkerOptions, Program, ProgramOptions};
///
/// let rdc = ProgramOptions::default().with_relocatable_device_code(true);
/// let lib = Program::new("__device__ float twice(float x) { return 2 * x; }", rdc.clone())
///     .compile(CodeType::LtoIr, &[])?;
/// let main = Program::new(
///     r#"__device__ float twice(float);
///        extern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }"#,
///     rdc,
/// )
/// .compile(CodeType::LtoIr, &[])?;
/// let options = LinkerOptions::default().with_max_registers(32).with_verbose(true);
/// let linker = Linker::new(&[lib, main], options);
/// // The cubin, with ptxas's report (registers used) in its log.
/// let linked = linker.link()?;
/// println!("{}", linked.compile_log());
/// let kernel = linked.get_kernel("k")?;
/// // The same link as PTX, with `twice` inlined into `k`.
/// let ptx = linker.link_to(CodeType::Ptx)?;
/// assert!(String::from_utf8_lossy(ptx.code()).contains(".entry k"));
/// // Or as one LTO-IR (an nvJitLink newer than 13.1), an input to a later link.
/// let both = linker.link_to(CodeType::LtoIr)?;
/// let again = Linker::new(&[both], LinkerOptions::default()).link()?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
///
/// A library linked once into relocatable code, then with each program that calls it:
///
/// ```no_run
/// use cuda_core::{CodeType, Linker, LinkerOptions, Program, ProgramOptions};
///
/// let rdc = ProgramOptions::default().with_relocatable_device_code(true);
/// let lib = Program::new("__device__ float twice(float x) { return 2 * x; }", rdc.clone())
///     .compile(CodeType::LtoIr, &[])?;
/// let relocatable =
///     Linker::new(&[lib], LinkerOptions::default().with_relocatable(true)).link()?;
/// let program = Program::new(
///     r#"__device__ float twice(float);
///        extern "C" __global__ void k(float* x) { x[0] = twice(x[0]); }"#,
///     rdc,
/// )
/// .compile(CodeType::LtoIr, &[])?;
/// let linked = Linker::new(&[relocatable, program], LinkerOptions::default()).link()?;
/// let kernel = linked.get_kernel("k")?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("nvJitLinkHandle", "CUlinkState"))]
#[derive(Clone, Debug)]
pub struct Linker {
    inputs: Vec<ObjectCode>,
    options: LinkerOptions,
}

impl Linker {
    /// A linker of these inputs.
    #[must_use]
    pub fn new(inputs: &[ObjectCode], options: LinkerOptions) -> Linker {
        Linker {
            inputs: inputs.to_vec(),
            options,
        }
    }

    /// The options.
    pub fn options(&self) -> &LinkerOptions {
        &self.options
    }

    /// Links the inputs into a cubin: [`Linker::link_to`] with [`CodeType::Cubin`].
    #[doc(alias("nvJitLinkCreate", "cuLinkCreate"))]
    pub fn link(&self) -> Result<ObjectCode> {
        self.link_to(CodeType::Cubin)
    }

    /// Links the inputs into `target`: a cubin, PTX (nvJitLink's `-lto -ptx`) or LTO-IR
    /// (`-lto` with `nvJitLinkGetLinkedLTOIR`, in nvJitLink newer than 13.1: one LTO-IR, an
    /// input to a later link); PTX and LTO-IR need every input to be LTO-IR, or a fatbin holding it. The linker's info log (with the
    /// `verbose` and `time` reports) is the result's [`ObjectCode::compile_log`]. A failed link
    /// is [`Error::Link`] with the linker's error log; a target other than cubin or PTX, PTX
    /// without nvJitLink, or an option the linker in use cannot take is
    /// [`Error::InvalidArgument`], before any linker runs; so is LTO-IR output or a
    /// [relocatable](LinkerOptions::with_relocatable) link with an nvJitLink that does not
    /// link in steps (12.x, 13.0).
    #[doc(alias(
        "nvJitLinkComplete",
        "nvJitLinkGetLinkedPtx",
        "nvJitLinkGetLinkedLTOIR",
        "cuLinkComplete"
    ))]
    pub fn link_to(&self, target: CodeType) -> Result<ObjectCode> {
        if self.inputs.is_empty() {
            return Err(Error::InvalidArgument {
                name: "inputs",
                reason: "nothing to link".to_owned(),
            });
        }
        if !matches!(target, CodeType::Cubin | CodeType::Ptx | CodeType::LtoIr) {
            return Err(Error::InvalidArgument {
                name: "target",
                reason: format!(
                    "the linker makes a cubin, PTX or LTO-IR, not {}",
                    target.describe()
                ),
            });
        }
        check_libraries(&self.inputs)?;
        if self.options.device_runtime {
            let mut inputs = self.inputs.clone();
            inputs.push(ObjectCode::device_runtime()?);
            let linker = Linker {
                inputs,
                options: self.options.clone().with_device_runtime(false),
            };
            return linker.link_as(target, self.inputs.len());
        }
        self.link_as(target, self.inputs.len())
    }

    /// [`Linker::link_to`] once the inputs are complete; the result is named after `given`
    /// inputs (those the user gave).
    fn link_as(&self, target: CodeType, given: usize) -> Result<ObjectCode> {
        let device = || match self.options.device {
            Some(device) => Ok(device),
            None => Device::current(),
        };
        let why_not_nvjitlink = match self.options.backend {
            LinkerBackend::Driver => "the backend chosen is LinkerBackend::Driver".to_owned(),
            LinkerBackend::Auto | LinkerBackend::NvJitLink => {
                match crate::driver::nvjitlink_info() {
                    Ok((version, _)) => {
                        self.check_for_nvjitlink(target, version)?;
                        let arch = match &self.options.arch {
                            Some(arch) => arch.clone(),
                            None => device()?.arch()?,
                        };
                        if let Some(linked) = self.link_with_nvjitlink(&arch, target, given)? {
                            return Ok(linked);
                        }
                        "nvJitLink was not found".to_owned()
                    }
                    Err(why) => {
                        let why = format!("nvJitLink was not found: {why}");
                        if self.options.backend == LinkerBackend::NvJitLink {
                            return Err(Error::Link { log: why });
                        }
                        why
                    }
                }
            }
        };
        if matches!(target, CodeType::Ptx | CodeType::LtoIr) {
            return Err(Error::InvalidArgument {
                name: "target",
                reason: format!(
                    "the driver's linker makes only cubins; linking to {} needs nvJitLink \
                     (with LTO-IR inputs), and this link goes through the driver's linker: \
                     {why_not_nvjitlink}",
                    target.describe()
                ),
            });
        }
        let options = self.options.driver_options(&why_not_nvjitlink)?;
        let names: Vec<CString> = self
            .inputs
            .iter()
            .map(|o| CString::new(o.name().replace('\0', "")).unwrap_or_default())
            .collect();
        let mut inputs = Vec::with_capacity(self.inputs.len());
        for (object, name) in self.inputs.iter().zip(&names) {
            let kind = match object.code_type() {
                CodeType::Cubin => 0,
                CodeType::Ptx => 1,
                CodeType::Fatbin => 2,
                CodeType::Library => 4,
                CodeType::LtoIr => {
                    return Err(Error::Link {
                        log: format!(
                            "{} is LTO-IR: the driver's linker cannot take it, and linking \
                             LTO-IR needs nvJitLink ({why_not_nvjitlink})",
                            object.name(),
                        ),
                    })
                }
            };
            inputs.push(LinkInput {
                kind,
                data: object.code(),
                name,
            });
        }
        let (cubin, log) = device()?
            .primary_context()?
            .with_current(|driver| driver.link(&inputs, &options))?;
        let name = format!("linked({given})");
        Ok(ObjectCode::from_compiled(
            CodeType::Cubin,
            cubin,
            name,
            log,
            self.name_expressions(),
        ))
    }

    /// The name expressions of every input, in input order; the first of an expression
    /// lowered twice.
    fn name_expressions(&self) -> Vec<(String, String)> {
        merge_name_expressions(self.inputs.iter().map(ObjectCode::name_expressions))
    }

    /// Refuses, before nvJitLink runs (and before the device is asked for its architecture),
    /// what it would refuse with no reason or a late one: option values it does not take,
    /// what nvJitLink `version` lacks, and inputs a PTX or LTO-IR link cannot have.
    fn check_for_nvjitlink(&self, target: CodeType, version: (u32, u32)) -> Result<()> {
        self.options.check_nvjitlink()?;
        if !crate::driver::nvjitlink_links_in_steps() {
            let refused = if target == CodeType::LtoIr {
                Some(("target", "linking to LTO-IR (nvJitLinkGetLinkedLTOIR)"))
            } else if self.options.relocatable {
                Some(("options", "relocatable, a relocatable link (-r),"))
            } else {
                None
            };
            if let Some((name, what)) = refused {
                return Err(Error::InvalidArgument {
                    name,
                    reason: format!(
                        "{what} needs an nvJitLink that links in steps (one with \
                         nvJitLinkGetLinkedLTOIR, newer than 13.1; 13.0 takes -r but drops what \
                         a later link needs), and the nvJitLink in use is {}.{}",
                        version.0, version.1
                    ),
                });
            }
        }
        if matches!(target, CodeType::Ptx | CodeType::LtoIr) {
            if let Some(object) = self
                .inputs
                .iter()
                .find(|o| matches!(o.code_type(), CodeType::Cubin | CodeType::Ptx))
            {
                return Err(Error::InvalidArgument {
                    name: "inputs",
                    reason: format!(
                        "linking to {} (an nvJitLink -lto link) needs every input in LTO-IR, \
                         and {} is {}",
                        target.describe(),
                        object.name(),
                        object.code_type().describe()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Links with nvJitLink; `None` when there is none.
    fn link_with_nvjitlink(
        &self,
        arch: &str,
        target: CodeType,
        given: usize,
    ) -> Result<Option<ObjectCode>> {
        let lto = self.inputs.iter().any(|o| o.code_type() == CodeType::LtoIr);
        let options = LinkerOptions {
            arch: Some(arch.to_owned()),
            link_time_optimization: self.options.link_time_optimization || lto,
            ..self.options.clone()
        }
        .to_args(target);
        let inputs: Vec<JitInput<'_>> = self
            .inputs
            .iter()
            .map(|o| JitInput {
                kind: match o.code_type() {
                    CodeType::Cubin => 1,
                    CodeType::Ptx => 2,
                    CodeType::LtoIr => 3,
                    CodeType::Fatbin => 4,
                    CodeType::Library => 6,
                },
                data: o.code(),
                name: o.name(),
            })
            .collect();
        let output = match target {
            CodeType::Ptx => JitOutput::Ptx,
            CodeType::LtoIr => JitOutput::LtoIr,
            _ => JitOutput::Cubin,
        };
        let Some((code, log)) = jit_link(&inputs, &options, output)? else {
            return Ok(None);
        };
        let name = format!("linked({given})");
        Ok(Some(ObjectCode::from_compiled(
            target,
            code,
            name,
            log,
            self.name_expressions(),
        )))
    }
}

/// Refuses a static library input whose bytes are not an `ar` archive, naming it, before any
/// linker reads them.
fn check_libraries(inputs: &[ObjectCode]) -> Result<()> {
    for object in inputs.iter().filter(|o| o.code_type() == CodeType::Library) {
        crate::image::check(CodeType::Library, object.code()).map_err(|e| match e {
            Error::InvalidArgument { reason, .. } => Error::InvalidArgument {
                name: "inputs",
                reason: format!("{}: {reason}", object.name()),
            },
            other => other,
        })?;
    }
    Ok(())
}

/// Name expressions of several inputs as one table: each expression once, with the lowered
/// name of the first input that has it.
fn merge_name_expressions<'a>(
    tables: impl IntoIterator<Item = &'a [(String, String)]>,
) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = Vec::new();
    for (expression, lowered) in tables.into_iter().flatten() {
        if !merged.iter().any(|(e, _)| e == expression) {
            merged.push((expression.clone(), lowered.clone()));
        }
    }
    merged
}

/// The version of the nvJitLink this process links with, `(major, minor)`; [`Error::Link`]
/// saying why when none was found. It follows the major of the NVRTC in use (whose LTO-IR it
/// links), else of the driver ABI.
#[doc(alias = "nvJitLinkVersion")]
pub fn nvjitlink_version() -> Result<(u32, u32)> {
    crate::driver::nvjitlink_info()
        .map(|(version, _)| version)
        .map_err(|why| Error::Link {
            log: format!("nvJitLink was not found: {why}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_typed_option_gives_its_nvjitlink_flag() {
        let options = LinkerOptions {
            arch: Some("90".into()),
            optimization_level: Some(3),
            debug: true,
            line_info: true,
            max_registers: Some(40),
            verbose: true,
            time: true,
            link_time_optimization: true,
            ftz: Some(true),
            prec_div: Some(false),
            prec_sqrt: Some(true),
            fma: Some(false),
            kernels_used: vec!["a".into(), "b".into()],
            variables_used: vec!["v".into()],
            optimize_unused_variables: true,
            ptxas_options: vec!["-v".into()],
            split_compile: Some(4),
            split_compile_extended: Some(2),
            jump_table_density: Some(50),
            no_cache: true,
            relocatable: true,
            extra: vec!["-raw".into()],
            ..Default::default()
        };
        let mut args = options.to_args(CodeType::Cubin);
        assert_eq!(args[0], "-arch=sm_90");
        let mut want = [
            "-arch=sm_90",
            "-O3",
            "-g",
            "-lineinfo",
            "-maxrregcount=40",
            "-verbose",
            "-time",
            "-lto",
            "-ftz=1",
            "-prec-div=0",
            "-prec-sqrt=1",
            "-fma=0",
            "-kernels-used=a",
            "-kernels-used=b",
            "-variables-used=v",
            "-optimize-unused-variables",
            "-Xptxas=-v",
            "-split-compile=4",
            "-split-compile-extended=2",
            "-jump-table-density=50",
            "-no-cache",
            "-r",
            "-raw",
        ];
        args.sort();
        want.sort();
        assert_eq!(args, want);
        assert_eq!(
            LinkerOptions::default().to_args(CodeType::Cubin),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_driver_takes_its_own_options_and_refuses_the_rest_by_name() {
        let options = LinkerOptions {
            optimization_level: Some(4),
            debug: true,
            line_info: true,
            max_registers: Some(32),
            verbose: true,
            time: true,
            ..Default::default()
        };
        assert_eq!(
            options.driver_options("why").unwrap(),
            LinkOptions {
                optimization_level: Some(4),
                max_registers: Some(32),
                debug: true,
                line_info: true,
                verbose: true,
                wall_time: true,
            }
        );
        let refused: [(&str, LinkerOptions); 15] = [
            (
                "link_time_optimization",
                LinkerOptions::default().with_link_time_optimization(true),
            ),
            ("ftz", LinkerOptions::default().with_ftz(false)),
            ("prec_div", LinkerOptions::default().with_prec_div(true)),
            ("prec_sqrt", LinkerOptions::default().with_prec_sqrt(true)),
            ("fma", LinkerOptions::default().with_fma(true)),
            (
                "kernels_used",
                LinkerOptions::default().with_kernels_used(vec!["k".into()]),
            ),
            (
                "variables_used",
                LinkerOptions::default().with_variables_used(vec!["v".into()]),
            ),
            (
                "optimize_unused_variables",
                LinkerOptions::default().with_optimize_unused_variables(true),
            ),
            (
                "ptxas_options",
                LinkerOptions::default().with_ptxas_options(vec!["-v".into()]),
            ),
            (
                "split_compile",
                LinkerOptions::default().with_split_compile(0),
            ),
            (
                "split_compile_extended",
                LinkerOptions::default().with_split_compile_extended(1),
            ),
            (
                "jump_table_density",
                LinkerOptions::default().with_jump_table_density(0),
            ),
            ("no_cache", LinkerOptions::default().with_no_cache(true)),
            (
                "relocatable",
                LinkerOptions::default().with_relocatable(true),
            ),
            (
                "extra",
                LinkerOptions::default().with_extra(vec!["-O3".into()]),
            ),
        ];
        for (field, options) in refused {
            let err = options.driver_options("the reason").unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "options", reason }
                    if reason.starts_with(&format!("{field} is an nvJitLink option"))
                        && reason.contains("the reason")),
                "{field}: {err}"
            );
        }
        let err = LinkerOptions::default()
            .with_optimization_level(5)
            .driver_options("")
            .unwrap_err();
        assert!(err.to_string().contains("0 to 4"), "{err}");
    }

    /// Each expression once, in input order, with its first input's lowered name (bugs
    /// caught: a later input's name winning, an expression listed twice, one dropped).
    #[test]
    fn merged_name_expressions_keep_the_first_lowering_of_each() {
        let pair = |e: &str, l: &str| (e.to_owned(), l.to_owned());
        let one = [
            pair("k<int>", "_ZN3one1kIiEEvPT_"),
            pair("a<1>", "_Z1aILi1EEvv"),
        ];
        let two = [
            pair("k<int>", "_ZN3two1kIiEEvPT_"),
            pair("b<2>", "_Z1bILi2EEvv"),
        ];
        assert_eq!(
            merge_name_expressions([&one[..], &[], &two[..]]),
            [one[0].clone(), one[1].clone(), two[1].clone()]
        );
        assert_eq!(
            merge_name_expressions([&two[..], &one[..]])[0],
            two[0].clone()
        );
    }

    #[test]
    fn nvjitlink_values_it_would_refuse_silently_are_refused_by_name() {
        for level in [1, 2, 4] {
            let err = LinkerOptions::default()
                .with_optimization_level(level)
                .check_nvjitlink()
                .unwrap_err();
            assert!(err.to_string().contains("-O0 or -O3"), "{level}: {err}");
        }
        for level in [0, 3] {
            assert!(LinkerOptions::default()
                .with_optimization_level(level)
                .check_nvjitlink()
                .is_ok());
        }
        assert!(LinkerOptions::default()
            .with_jump_table_density(102)
            .check_nvjitlink()
            .is_err());
        assert!(LinkerOptions::default()
            .with_jump_table_density(101)
            .check_nvjitlink()
            .is_ok());
    }
}
