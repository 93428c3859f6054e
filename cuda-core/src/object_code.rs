//! Object code: PTX, cubin, fatbin, LTO-IR or a static library, loaded into the driver on
//! first use (with the JIT options of [`JitOptions`] where the driver compiles PTX).

use std::ffi::CString;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::context::Context;
use crate::device::Device;
use crate::driver::{driver, Driver, LibraryHandle, LinkOptions};
use crate::error::{Cause, DriverCode, Error, Result};
use crate::global::Global;
pub use crate::image::CodeType;
use crate::kernel::{Kernel, KernelInner};
use crate::lifetime::current::with_current;
use crate::DevicePtr;

/// Code to run on the GPU, with the names of its kernels. Cheap to clone; every [`Kernel`]
/// taken from it keeps it (and its loaded library) alive.
///
/// Loading uses the driver's context-independent library API (`cuLibraryLoadData`), once, on
/// the first [`ObjectCode::get_kernel`]; the library is unloaded when the last clone and kernel
/// drop. That call takes no length: the driver follows the image's own headers, so they are
/// checked against the bytes first. A cubin's ELF tables and sections, a fatbin's header and
/// entries must lie within them, PTX must be text (it always gets its NUL), and the bytes must
/// be of the type declared; anything else is [`Error::InvalidArgument`] naming what was found.
///
/// PTX is compiled by the driver's JIT as it loads, with the options of
/// [`ObjectCode::with_jit_options`]; the JIT's info log is then [`ObjectCode::jit_log`], and a
/// PTX the JIT refuses is [`Error::Compile`] with its error log (also where the driver took
/// the PTX and only wrote the JIT's complaint to the log, as the 580 driver does).
#[doc(alias = "CUlibrary")]
#[derive(Clone)]
pub struct ObjectCode {
    inner: Arc<ObjectInner>,
}

struct ObjectInner {
    code_type: CodeType,
    /// The code, and after it, for binary images, one NUL byte that is not part of it: a
    /// string table whose last name lacks its NUL (image checks cover extents, not content)
    /// then ends there rather than in memory past the allocation the driver reads.
    code: Vec<u8>,
    /// The code's length (without the spare NUL).
    len: usize,
    name: String,
    log: String,
    lowered: Vec<(String, String)>,
    /// The JIT options of the load.
    jit: JitOptions,
    /// The JIT's info log of the load that was kept.
    jit_log: OnceLock<String>,
    /// How the precompiled header of the compile that made it went, where it was asked for.
    pch: Option<PchStatus>,
    library: OnceLock<(LibraryHandle, &'static dyn Driver)>,
    /// The kernels taken so far, by symbol: asking again makes no driver call.
    kernels: Mutex<Vec<Arc<KernelInner>>>,
    /// Every kernel's symbol, as the driver lists them on first need (`None` where it cannot:
    /// a driver without `cuLibraryEnumerateKernels`), so that a name not among them is refused
    /// without a failing driver call.
    symbols: OnceLock<Option<Vec<String>>>,
}

/// How NVRTC's precompiled header of a compile went ([`ObjectCode::pch_status`]): what
/// `nvrtcGetPCHCreateStatus` said of it, and whether the program was compiled again with a
/// larger heap.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PchStatus {
    /// NVRTC created the precompiled header (`NVRTC_SUCCESS`).
    Created,
    /// NVRTC did not try to create one (`NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED`): with `pch`
    /// it chose not to (it used one made before, say, or the source includes nothing worth
    /// it).
    NotAttempted,
    /// NVRTC ran out of its precompiled-header heap (`NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED`)
    /// and the header was not created, with the heap size NVRTC said it needs where it said
    /// (`nvrtcGetPCHHeapSizeRequired`). Not compiled again: the NVRTC lacks
    /// `nvrtcGetPCHHeapSizeRequired` or `nvrtcSetPCHHeapSize`, setting the heap failed (the
    /// log says why), or this was the compile after growing it.
    HeapExhausted {
        /// The heap NVRTC needed, in bytes.
        required: Option<usize>,
    },
    /// The first compile ran out of the heap; the heap was set to the `required` bytes NVRTC
    /// asked for (unless another compile had grown it that far already: it is never shrunk),
    /// and the program compiled once more, from a new NVRTC program. `retry` is how that
    /// compile's precompiled header went (`Created` where it was made); the code is that
    /// compile's.
    Retried {
        /// The heap the first compile needed, in bytes.
        required: usize,
        /// The second compile's status.
        retry: Box<PchStatus>,
    },
    /// Something else kept NVRTC from creating it (`NVRTC_ERROR_PCH_CREATE`, or another
    /// code): NVRTC's words for it.
    Failed {
        /// NVRTC's error string.
        reason: String,
    },
}

impl PchStatus {
    /// Whether a precompiled header was created, at once or after growing the heap.
    pub fn created(&self) -> bool {
        match self {
            PchStatus::Created => true,
            PchStatus::Retried { retry, .. } => retry.created(),
            _ => false,
        }
    }

    /// Whether the program was compiled again after growing NVRTC's heap.
    pub fn retried(&self) -> bool {
        matches!(self, PchStatus::Retried { .. })
    }
}

impl Drop for ObjectInner {
    fn drop(&mut self) {
        if let Some((library, driver)) = self.library.get() {
            if let Err(e) = driver.library_unload(*library) {
                log::error!("unloading {}: {e}", self.name);
            }
        }
    }
}

impl fmt::Debug for ObjectCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectCode")
            .field("name", &self.inner.name)
            .field("code_type", &self.inner.code_type)
            .field("bytes", &self.inner.len)
            .field("loaded", &self.inner.library.get().is_some())
            .finish()
    }
}

impl ObjectCode {
    /// Code of `code_type` from its parts (as a compile, a load or a cache entry gives them).
    pub(crate) fn new(
        code_type: CodeType,
        code: Vec<u8>,
        name: String,
        log: String,
        lowered: Vec<(String, String)>,
    ) -> ObjectCode {
        ObjectCode::with_parts(code_type, code, name, log, lowered, JitOptions::default())
    }

    /// [`ObjectCode::new`], loaded with `jit`.
    fn with_parts(
        code_type: CodeType,
        mut code: Vec<u8>,
        name: String,
        log: String,
        lowered: Vec<(String, String)>,
        jit: JitOptions,
    ) -> ObjectCode {
        // The driver reads PTX as a C string.
        if code_type == CodeType::Ptx && code.last() != Some(&0) {
            code.push(0);
        }
        let len = code.len();
        if code_type != CodeType::Ptx {
            code.push(0);
        }
        ObjectCode {
            inner: Arc::new(ObjectInner {
                code_type,
                code,
                len,
                name,
                log,
                lowered,
                jit,
                jit_log: OnceLock::new(),
                pch: None,
                library: OnceLock::new(),
                kernels: Mutex::new(Vec::new()),
                symbols: OnceLock::new(),
            }),
        }
    }

    pub(crate) fn from_compiled(
        code_type: CodeType,
        code: Vec<u8>,
        name: String,
        log: String,
        lowered: Vec<(String, String)>,
    ) -> ObjectCode {
        ObjectCode::new(code_type, code, name, log, lowered)
    }

    /// This code, newly made, with the precompiled-header status of the compile that made it.
    pub(crate) fn with_pch_status(mut self, status: Option<PchStatus>) -> ObjectCode {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.pch = status;
        }
        self
    }

    /// Code of the given type from bytes (PTX gets a terminating NUL if it lacks one).
    #[must_use]
    pub fn from_bytes(code_type: CodeType, code: impl Into<Vec<u8>>) -> ObjectCode {
        let name = match code_type {
            CodeType::Library => "<library bytes>".to_owned(),
            _ => format!("<{} bytes>", code_type.extension()),
        };
        ObjectCode::new(code_type, code.into(), name, String::new(), Vec::new())
    }

    /// A cubin.
    #[must_use]
    pub fn from_cubin(code: impl Into<Vec<u8>>) -> ObjectCode {
        ObjectCode::from_bytes(CodeType::Cubin, code)
    }

    /// PTX text.
    #[must_use]
    pub fn from_ptx(ptx: impl Into<Vec<u8>>) -> ObjectCode {
        ObjectCode::from_bytes(CodeType::Ptx, ptx)
    }

    /// A fat binary.
    #[must_use]
    pub fn from_fatbin(code: impl Into<Vec<u8>>) -> ObjectCode {
        ObjectCode::from_bytes(CodeType::Fatbin, code)
    }

    /// LTO-IR (it must be linked before it can run: see [`Linker`](crate::Linker)).
    #[must_use]
    pub fn from_ltoir(code: impl Into<Vec<u8>>) -> ObjectCode {
        ObjectCode::from_bytes(CodeType::LtoIr, code)
    }

    /// A static library (an `ar` archive, the bytes of a `.a` file, such as the device runtime
    /// `libcudadevrt.a`): an input of a [`Linker`](crate::Linker), which passes it as
    /// `NVJITLINK_INPUT_LIBRARY` or `CU_JIT_INPUT_LIBRARY`, and refuses it, before any linker
    /// runs, when it does not start as an archive does (`!<arch>\n`). It cannot be loaded alone:
    /// [`ObjectCode::get_kernel`] and the other loads of one are [`Error::InvalidArgument`].
    /// [`ObjectCode::device_runtime`] finds the device runtime's.
    #[must_use]
    pub fn from_library(code: impl Into<Vec<u8>>) -> ObjectCode {
        ObjectCode::from_bytes(CodeType::Library, code)
    }

    /// The CUDA device runtime, `libcudadevrt.a`, as a static library: what a kernel that
    /// launches kernels (dynamic parallelism, compiled with relocatable device code) is
    /// linked with. [`LinkerOptions::with_device_runtime`](crate::LinkerOptions) adds it to a
    /// link; this is the same library, for a link that lists its inputs itself.
    ///
    /// It is looked for, once a process, as nvJitLink is: `CUDA_CORE_CUDADEVRT_PATH` (that
    /// file alone), then `lib64` and `targets/*/lib` of `$CUDA_HOME`, `$CUDA_PATH` and
    /// `/usr/local/cuda`, then the runtime wheels in Python's `site-packages`
    /// (`nvidia/cu13/lib/libcudadevrt.a` of `nvidia-cuda-runtime` for CUDA 13,
    /// `nvidia/cuda_runtime/lib/libcudadevrt.a` of `nvidia-cuda-runtime-cu12` for 12), the
    /// major of the nvJitLink in use first. A toolkit's comes before a wheel's whatever its
    /// major: where a toolkit of another major than nvJitLink's is installed, set the
    /// variable. None found is [`Error::Link`] naming every place looked at; a file that
    /// cannot be read, [`Error::Io`].
    #[doc(alias = "libcudadevrt")]
    pub fn device_runtime() -> Result<ObjectCode> {
        static FOUND: OnceLock<std::result::Result<std::path::PathBuf, String>> = OnceLock::new();
        let path = FOUND
            .get_or_init(crate::driver::device_runtime_path)
            .as_ref()
            .map_err(|why| Error::Link {
                log: format!("the device runtime was not found: {why}"),
            })?;
        ObjectCode::from_file(path, Some(CodeType::Library))
    }

    /// Code from a file; its type from the extension (`.ptx`, `.cubin`, `.fatbin`, `.ltoir`,
    /// `.a` for a static library) unless given. A file that cannot be read is [`Error::Io`],
    /// with the I/O error as its source.
    pub fn from_file(path: impl AsRef<Path>, code_type: Option<CodeType>) -> Result<ObjectCode> {
        let path = path.as_ref();
        let code_type = match code_type {
            Some(t) => t,
            None => path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(CodeType::from_extension)
                .ok_or_else(|| Error::InvalidArgument {
                    name: "path",
                    reason: format!(
                        "cannot tell the code type of {}: name it, or use a .ptx, .cubin, \
                         .fatbin, .ltoir or .a extension",
                        path.display()
                    ),
                })?,
        };
        let code = std::fs::read(path).map_err(|e| Error::Io {
            path: path.to_path_buf(),
            source: Cause::new(e),
        })?;
        let name = path.display().to_string();
        Ok(ObjectCode::new(
            code_type,
            code,
            name,
            String::new(),
            Vec::new(),
        ))
    }

    /// The code type.
    pub fn code_type(&self) -> CodeType {
        self.inner.code_type
    }

    /// The code (PTX with its terminating NUL).
    pub fn code(&self) -> &[u8] {
        &self.inner.code[..self.inner.len]
    }

    /// The name it was compiled or read as.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The compiler's log (warnings) when it came from [`Program::compile`](crate::Program);
    /// empty otherwise.
    pub fn compile_log(&self) -> &str {
        &self.inner.log
    }

    /// How the precompiled header of the NVRTC compile that made this code went: `Some` where
    /// the compile asked for one ([`ProgramOptions::pch`](crate::ProgramOptions::pch) or
    /// [`create_pch`](crate::ProgramOptions::create_pch)) or NVRTC tried one, and NVRTC can
    /// say (`nvrtcGetPCHCreateStatus`, NVRTC 12.8 and newer). `None` for code that no such
    /// compile made: code from bytes or files, a link, libNVVM's, and a program cache's hit,
    /// which compiled nothing. Where NVRTC ran out of its precompiled-header heap,
    /// [`Program::compile`](crate::Program::compile) grew the heap and compiled again:
    /// [`PchStatus::Retried`] says so.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, PchStatus, Program, ProgramOptions};
    ///
    /// let program = Program::new(
    ///     "#include \"big.h\"\nextern \"C\" __global__ void k() {}\n",
    ///     ProgramOptions::default().with_include_paths(vec![".".into()]).with_pch(true),
    /// );
    /// let code = program.compile(CodeType::Cubin, &[])?;
    /// match code.pch_status() {
    ///     Some(status) if status.created() => println!("precompiled: {status:?}"),
    ///     Some(status) => println!("no precompiled header: {status:?}"),
    ///     None => println!("this NVRTC cannot say"),
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("nvrtcGetPCHCreateStatus", "nvrtcGetPCHHeapSizeRequired"))]
    pub fn pch_status(&self) -> Option<&PchStatus> {
        self.inner.pch.as_ref()
    }

    /// The lowered (mangled) name of a name expression given at compile time.
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.inner
            .lowered
            .iter()
            .find(|(e, _)| e == expression)
            .map(|(_, lowered)| lowered.as_str())
    }

    /// Every name expression with its lowered name.
    pub fn name_expressions(&self) -> &[(String, String)] {
        &self.inner.lowered
    }

    /// The same code, not loaded yet, loaded with these JIT options: they apply where the
    /// driver compiles PTX as it loads (PTX, or a fatbin's PTX for a device it has no cubin
    /// for), and a cubin ignores them. The clone keeps the name, log and name expressions; the
    /// code is copied once. An optimisation level above 4 is [`Error::InvalidArgument`].
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, Device, JitOptions, KernelAttribute, Program, ProgramOptions};
    ///
    /// let ptx = Program::new(
    ///     r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }"#,
    ///     ProgramOptions::default(),
    /// )
    /// .compile(CodeType::Ptx, &[])?;
    /// let code = ptx.with_jit_options(JitOptions::default().with_max_registers(32).with_verbose(true))?;
    /// let kernel = code.get_kernel("k")?; // the driver compiles the PTX here
    /// println!("{}", code.jit_log().unwrap_or_default()); // ptxas's report, where it writes one
    /// let registers = kernel.attribute(Device::new(0)?, KernelAttribute::NumRegs)?;
    /// assert!(registers <= 32);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("CUjit_option", "CU_JIT_MAX_REGISTERS", "CU_JIT_INFO_LOG_BUFFER"))]
    pub fn with_jit_options(&self, options: JitOptions) -> Result<ObjectCode> {
        if let Some(level) = options.optimization_level {
            if level > 4 {
                return Err(Error::InvalidArgument {
                    name: "options",
                    reason: format!("optimization_level {level}: the driver's JIT takes 0 to 4"),
                });
            }
        }
        Ok(ObjectCode::with_parts(
            self.inner.code_type,
            self.code().to_vec(),
            self.inner.name.clone(),
            self.inner.log.clone(),
            self.inner.lowered.clone(),
            options,
        )
        .with_pch_status(self.inner.pch.clone()))
    }

    /// The JIT options it is loaded with ([`ObjectCode::with_jit_options`]).
    pub fn jit_options(&self) -> &JitOptions {
        &self.inner.jit
    }

    /// The info log the driver's JIT wrote as it loaded the code (ptxas's report with
    /// [`JitOptions::verbose`]); `None` before the code is loaded (on the first
    /// [`ObjectCode::get_kernel`], or by [`ObjectCode::load`]). Empty where the JIT wrote
    /// nothing, as for a cubin.
    pub fn jit_log(&self) -> Option<&str> {
        self.inner.jit_log.get().map(String::as_str)
    }

    /// Loads the code now, rather than on its first use, and returns the JIT's info log (as
    /// [`ObjectCode::jit_log`]). Loading twice loads once. A PTX the JIT refuses is
    /// [`Error::Compile`] with the JIT's error log; LTO-IR and a static library, which must be
    /// linked first, are refused.
    #[doc(alias = "cuLibraryLoadData")]
    pub fn load(&self) -> Result<&str> {
        self.library()?;
        Ok(self.jit_log().unwrap_or_default())
    }

    /// Loads the code (once) and returns the library handle.
    fn library(&self) -> Result<(LibraryHandle, &'static dyn Driver)> {
        if let Some(loaded) = self.inner.library.get() {
            return Ok(*loaded);
        }
        if self.inner.code_type == CodeType::Library {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!(
                    "{} is a static library, which cannot be loaded alone: link it with the \
                     code that uses it (Linker) and load the linked code",
                    self.inner.name
                ),
            });
        }
        if self.inner.code_type == CodeType::LtoIr {
            return Err(Error::Link {
                log: format!(
                    "{} is LTO-IR, which must be linked (with nvJitLink) into a cubin before it \
                     can be loaded",
                    self.inner.name
                ),
            });
        }
        // The driver follows the image's own headers: check them against our bytes first.
        crate::image::check(self.inner.code_type, self.code())?;
        let driver = driver()?;
        let (library, logs) = driver.library_load_data(&self.inner.code, &self.inner.jit.raw());
        let library = library.map_err(|e| {
            if logs.error.is_empty() {
                e
            } else {
                Error::Compile {
                    program: self.inner.name.clone(),
                    log: format!("{e}\n{}", logs.error),
                }
            }
        })?;
        if self.inner.code_type == CodeType::Ptx && !logs.error.trim().is_empty() {
            // The driver took PTX its JIT refused (the 580 driver answers CUDA_SUCCESS, writes
            // the complaint to the error log, and refuses each kernel asked for later): a load
            // with an error log is refused here, with it.
            if let Err(e) = driver.library_unload(library) {
                log::error!("unloading {}, whose JIT failed: {e}", self.inner.name);
            }
            return Err(Error::Compile {
                program: self.inner.name.clone(),
                log: format!(
                    "the driver's JIT reported errors loading the PTX\n{}",
                    logs.error
                ),
            });
        }
        if self.inner.library.set((library, driver)).is_err() {
            // Another thread loaded it first: keep theirs.
            if let Err(e) = driver.library_unload(library) {
                log::error!("unloading a duplicate load of {}: {e}", self.inner.name);
            }
        } else {
            // The load kept is this one: its log with it.
            let _ = self.inner.jit_log.set(logs.info);
        }
        self.inner
            .library
            .get()
            .copied()
            .ok_or_else(|| Error::InvalidArgument {
                name: "self",
                reason: "the library could not be kept".to_owned(),
            })
    }

    /// The kernel of this name: a name expression given at compile time (such as
    /// `"axpy<float>"`), or the kernel's symbol (an `extern "C"` name, or a mangled one).
    /// A name the code does not have is [`Error::InvalidArgument`] naming the code; where the
    /// driver lists a library's kernels (12.4 and newer), the name is checked against that
    /// list (made once per code) before any driver call for it, so that a lookup that may
    /// fail (`if let Ok(k) = code.get_kernel(..)`) makes no failing call.
    #[doc(alias("cuLibraryLoadData", "cuLibraryGetKernel"))]
    pub fn get_kernel(&self, name: &str) -> Result<Kernel> {
        let symbol = self.lowered_name(name).unwrap_or(name);
        let known =
            |kernels: &[Arc<KernelInner>]| kernels.iter().find(|k| k.name() == symbol).cloned();
        if let Some(inner) = known(&self.lock_kernels()) {
            return Ok(Kernel::from_parts(inner, self.clone()));
        }
        let symbol_c = CString::new(symbol).map_err(|_| Error::InvalidArgument {
            name: "name",
            reason: format!("{name:?} contains a NUL byte"),
        })?;
        let (library, driver) = self.library()?;
        if let Some(symbols) = self.symbols() {
            if !symbols.iter().any(|s| s == symbol) {
                return Err(self.no_kernel(symbol));
            }
        }
        let handle = driver
            .library_get_kernel(library, &symbol_c)
            .map_err(|e| match e {
                Error::Driver {
                    code: DriverCode::NOT_FOUND,
                    ..
                } => self.no_kernel(symbol),
                other => other,
            })?;
        let fresh = KernelInner::new(handle, symbol.to_owned(), driver)?;
        let mut kernels = self.lock_kernels();
        // Another thread may have taken it meanwhile: share theirs.
        let inner = match known(&kernels) {
            Some(inner) => inner,
            None => {
                kernels.push(fresh.clone());
                fresh
            }
        };
        Ok(Kernel::from_parts(inner, self.clone()))
    }

    /// The `__device__` or `__constant__` variable `name` in `device`'s primary context
    /// (`cuLibraryGetGlobal`): a name expression given at compile time, or the symbol. An
    /// unknown name is [`Error::InvalidArgument`] naming the code.
    #[doc(alias = "cuLibraryGetGlobal")]
    pub fn global(&self, name: &str, device: Device) -> Result<Global> {
        self.variable(name, device, false)
    }

    /// The `__managed__` variable `name` (`cuLibraryGetManaged`), looked up in `device`'s
    /// primary context: one address that every device and the host share, through which
    /// kernels and the host copies of [`Global`] see the same value. A name that is not a
    /// managed variable is [`Error::InvalidArgument`] naming the code.
    ///
    /// ```no_run
    /// use cuda_core::{CodeType, Device, Program, ProgramOptions, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let code = Program::new("__managed__ int hits;", ProgramOptions::default())
    ///     .compile(CodeType::Cubin, &[])?;
    /// let hits = code.managed("hits", device)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// hits.copy_from_host(&[7i32], &stream)?;
    /// assert_eq!(hits.to_vec::<i32>(&stream)?, [7]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuLibraryGetManaged")]
    pub fn managed(&self, name: &str, device: Device) -> Result<Global> {
        self.variable(name, device, true)
    }

    fn variable(&self, name: &str, device: Device, managed: bool) -> Result<Global> {
        let symbol = self.lowered_name(name).unwrap_or(name);
        let symbol_c = CString::new(symbol).map_err(|_| Error::InvalidArgument {
            name: "name",
            reason: format!("{name:?} contains a NUL byte"),
        })?;
        let (library, _) = self.library()?;
        let primary = device.primary_entry()?;
        let (ptr, size) = with_current(primary.driver, primary.handle, |driver| {
            driver.library_get_variable(library, &symbol_c, managed)
        })
        .map_err(|e| match e {
            Error::Driver {
                code: DriverCode::NOT_FOUND,
                ..
            } => Error::InvalidArgument {
                name: "name",
                reason: format!(
                    "{} has no {} variable {symbol:?} (C++ names need extern \"C\" or a name \
                     expression at compile time)",
                    self.inner.name,
                    if managed {
                        "__managed__"
                    } else {
                        "__device__ or __constant__"
                    }
                ),
            },
            other => other,
        })?;
        Ok(Global::new(
            self.clone(),
            name.to_owned(),
            DevicePtr(ptr),
            size,
            device,
            primary.handle,
            managed,
        ))
    }

    /// The symbols of every kernel in the code (`cuLibraryEnumerateKernels`), in the driver's
    /// order.
    #[doc(alias("cuLibraryGetKernelCount", "cuLibraryEnumerateKernels"))]
    pub fn kernel_names(&self) -> Result<Vec<String>> {
        if let Some(Some(symbols)) = self.inner.symbols.get() {
            return Ok(symbols.clone());
        }
        let (library, driver) = self.library()?;
        driver
            .library_kernels(library)?
            .into_iter()
            .map(|kernel| driver.kernel_get_name(kernel))
            .collect()
    }

    /// The raw `CUlibrary`, for code written against the driver's library or module API
    /// (loading the code first, as [`ObjectCode::load`] does, where it is not loaded yet). It
    /// stays valid while this value, a clone of it or a [`Kernel`] taken from it lives: the
    /// library is unloaded when the last of them drops, so do not unload it yourself. A
    /// static library or LTO-IR, which cannot be loaded alone, is refused as by `load`.
    ///
    /// ```no_run
    /// use cuda_core::{Device, ObjectCode};
    ///
    /// let device = Device::new(0)?;
    /// let code = ObjectCode::from_file("kernels.cubin", None)?;
    /// let library = code.as_raw()?; // a CUlibrary
    /// assert!(!library.is_null());
    /// assert_eq!(code.as_raw()?, library); // loaded once
    /// let module = code.as_raw_module(&device.primary_context()?)?; // a CUmodule
    /// assert!(!module.is_null());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("CUlibrary", "cuLibraryLoadData"))]
    pub fn as_raw(&self) -> Result<*mut std::ffi::c_void> {
        Ok(self.library()?.0 .0)
    }

    /// The raw `CUmodule` of this code in `context` (`cuLibraryGetModule`, with `context` made
    /// current for the call and the caller's context restored), for code written against
    /// `CUmodule` and `CUfunction` (`cuModuleGetFunction`, `cuModuleGetGlobal`). The code is
    /// loaded first where it is not yet. The module is the library's: it stays valid while
    /// this value (or a clone, or a kernel of it) lives and `context` does, and must not be
    /// unloaded (`cuModuleUnload`) by the caller. See [`ObjectCode::as_raw`] for an example.
    #[doc(alias("cuLibraryGetModule", "CUmodule"))]
    pub fn as_raw_module(&self, context: &Context) -> Result<*mut std::ffi::c_void> {
        let (library, _) = self.library()?;
        let module = context.with_current(|driver| driver.library_get_module(library))?;
        Ok(module.0)
    }

    /// Every kernel's symbol, listed once; `None` where the driver cannot list them.
    fn symbols(&self) -> Option<&[String]> {
        self.inner
            .symbols
            .get_or_init(|| self.kernel_names().ok())
            .as_deref()
    }

    /// The refusal of a kernel this code does not have.
    fn no_kernel(&self, symbol: &str) -> Error {
        Error::InvalidArgument {
            name: "name",
            reason: format!(
                "{} has no kernel {symbol:?} (C++ kernels need extern \"C\" or a name \
                 expression at compile time)",
                self.inner.name
            ),
        }
    }

    fn lock_kernels(&self) -> std::sync::MutexGuard<'_, Vec<Arc<KernelInner>>> {
        // The list is only ever pushed to: a poisoned lock still guards a good list.
        self.inner
            .kernels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The driver's JIT options for code it compiles as it loads it (PTX): see
/// [`ObjectCode::with_jit_options`]. Each field is one `CUjit_option` of `cuLibraryLoadData`;
/// the info and error logs are always asked for ([`ObjectCode::jit_log`], and the log of an
/// [`Error::Compile`]).
///
/// ```
/// use cuda_core::JitOptions;
///
/// let options = JitOptions::default().with_max_registers(32).with_optimization_level(3);
/// assert_eq!(options.max_registers, Some(32));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUjit_option")]
pub struct JitOptions {
    /// A register limit per thread (`CU_JIT_MAX_REGISTERS`).
    pub max_registers: Option<u32>,
    /// The optimisation level, 0 to 4 (`CU_JIT_OPTIMIZATION_LEVEL`; the driver's default is 4).
    pub optimization_level: Option<u32>,
    /// Debug information (`CU_JIT_GENERATE_DEBUG_INFO`).
    pub debug: bool,
    /// Line information for profilers (`CU_JIT_GENERATE_LINE_INFO`).
    pub line_info: bool,
    /// Verbose messages, such as ptxas's register counts, in the info log
    /// (`CU_JIT_LOG_VERBOSE`).
    pub verbose: bool,
}

crate::options::chainers!(JitOptions {
    with_max_registers(max_registers: u32) => some;
    with_optimization_level(optimization_level: u32) => some;
    with_debug(debug: bool);
    with_line_info(line_info: bool);
    with_verbose(verbose: bool);
});

impl JitOptions {
    /// The options in the driver layer's neutral form.
    fn raw(&self) -> LinkOptions {
        LinkOptions {
            optimization_level: self.optimization_level,
            max_registers: self.max_registers,
            debug: self.debug,
            line_info: self.line_info,
            verbose: self.verbose,
            wall_time: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary image is what it was given, with a NUL byte after it in the memory the
    /// driver reads (review N15: a last string-table name without its NUL would otherwise
    /// leave the driver's string reads running past the allocation); PTX ends in its one NUL.
    /// Bugs caught: no spare byte; the spare byte showing in `code()`; PTX given two NULs.
    #[test]
    fn images_end_in_a_nul_the_driver_can_read_and_code_does_not_show() {
        let bytes = b"\x7fELF\x02\x01\x01 names: .text\0.nv.info".to_vec();
        for code_type in [CodeType::Cubin, CodeType::Fatbin, CodeType::LtoIr] {
            let code = ObjectCode::from_bytes(code_type, bytes.clone());
            assert_eq!(code.code(), &bytes[..], "{code_type:?}");
            assert_eq!(code.inner.code.len(), bytes.len() + 1);
            assert_eq!(code.inner.code.last(), Some(&0));
        }
        // Through a cache entry and back: the same code, the spare byte not stored with it.
        let cubin = ObjectCode::from_cubin(bytes.clone());
        let back = crate::cache::entry::decode(&crate::cache::entry::encode(&cubin)).unwrap();
        assert_eq!(back.code(), &bytes[..]);
        assert_eq!(back.inner.code.len(), bytes.len() + 1);
        let ptx = ObjectCode::from_ptx(".version 8.0");
        assert_eq!(ptx.code(), b".version 8.0\0");
        assert_eq!(ptx.inner.code, b".version 8.0\0");
    }
}
