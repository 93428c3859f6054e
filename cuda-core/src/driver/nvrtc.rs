//! The process's NVRTC, found once (see `cuda_nvrtc_sys::Search` for the order).

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use cuda_nvrtc_sys::{nvrtcProgram, nvrtcResult, Nvrtc, NvrtcTable, Search};

use crate::error::{Cause, Error, Result};

static NVRTC: OnceLock<Result<Nvrtc>> = OnceLock::new();

/// The NVRTC major to look for first: the driver ABI's (13 when no driver loads: NVRTC needs
/// none).
fn preferred_major() -> u32 {
    super::load::loaded().map_or(13, |l| l.driver.abi().major())
}

/// NVRTC, loaded on first use, preferring the major of the driver ABI in use.
pub(crate) fn nvrtc() -> Result<&'static Nvrtc> {
    NVRTC
        .get_or_init(|| {
            Search::from_env(preferred_major())
                .load()
                .map_err(|e| Error::NvrtcNotFound {
                    reason: e.to_string(),
                    source: Some(Cause::new(e)),
                })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The major of the NVRTC this process uses, without loading it: the loaded one's, else that
/// in the name of the file discovery would load (`libnvrtc.so.12`); `None` where neither
/// tells. libNVVM and nvJitLink follow it, so that the PTX of one is what the others read.
pub(super) fn expected_major() -> Option<u32> {
    match NVRTC.get() {
        Some(Ok(nvrtc)) => u32::try_from(nvrtc.version().0).ok(),
        Some(Err(_)) => None,
        None => Search::from_env(preferred_major())
            .candidates()
            .iter()
            .find_map(cuda_nvrtc_sys::Candidate::file)
            .and_then(|file| {
                let name = file.file_name()?.to_str()?.to_owned();
                name.strip_prefix("libnvrtc.so.")?
                    .split('.')
                    .next()?
                    .parse()
                    .ok()
            }),
    }
}

/// The CUDA toolkit's include folders (that of `cuda_runtime.h`, then CCCL's where it is
/// another), preferring the major of the NVRTC in use (loaded, else the one discovery would
/// load); found once per process and major (see `cuda_nvrtc_sys::headers`). `Err` says every
/// place looked at.
pub(crate) fn toolkit_include_dirs() -> std::result::Result<Vec<std::path::PathBuf>, String> {
    type Found = std::result::Result<Vec<std::path::PathBuf>, String>;
    static FOUND: std::sync::Mutex<Vec<(u32, Found)>> = std::sync::Mutex::new(Vec::new());
    let major = expected_major().unwrap_or_else(preferred_major);
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, known)) = found.iter().find(|(m, _)| *m == major) {
        return known.clone();
    }
    let search = cuda_nvrtc_sys::headers::ToolkitHeadersSearch::from_env(major);
    let result = cuda_nvrtc_sys::headers::ToolkitHeaders::find(&search)
        .map(|headers| headers.dirs().into_iter().map(Into::into).collect())
        .map_err(|e| e.to_string());
    found.push((major, result.clone()));
    result
}

/// What NVRTC should produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NvrtcOutput {
    Ptx,
    Cubin,
    LtoIr,
    /// Nothing: a syntax check (`-fdevice-syntax-only`), whose log is the result.
    Nothing,
}

/// A successful compilation.
pub(crate) struct Compiled {
    /// The code; PTX keeps its terminating NUL, as the driver wants it.
    pub(crate) code: Vec<u8>,
    /// The compiler's log (warnings), possibly empty.
    pub(crate) log: String,
    /// Each name expression with its lowered (mangled) name.
    pub(crate) lowered: Vec<(String, String)>,
    /// How the precompiled header went, where the compile asked for one (or NVRTC tried one)
    /// and NVRTC can say (`nvrtcGetPCHCreateStatus`, NVRTC 12.8 and newer).
    pub(crate) pch: Option<PchOutcome>,
}

/// What `nvrtcGetPCHCreateStatus` said of a compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PchCreate {
    /// `NVRTC_SUCCESS`: created.
    Created,
    /// `NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED`.
    NotAttempted,
    /// `NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED`, with the heap NVRTC said it needs
    /// (`nvrtcGetPCHHeapSizeRequired`) where it could.
    HeapExhausted { required: Option<usize> },
    /// `NVRTC_ERROR_PCH_CREATE` or another code: NVRTC's words for it.
    Failed(String),
}

/// A compile's precompiled header: what NVRTC said of the compile whose code is returned, and,
/// where an earlier compile ran out of PCH heap and the program was compiled again, the heap
/// size that earlier compile asked for (and the heap was grown to).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PchOutcome {
    pub(crate) status: PchCreate,
    pub(crate) retried_with_heap: Option<usize>,
}

/// One NVRTC compilation to run: the program's source, name and headers in memory (each an
/// include name and its contents), its options and name expressions, and what to produce.
pub(crate) struct NvrtcJob<'a> {
    pub(crate) source: &'a str,
    pub(crate) name: &'a str,
    pub(crate) headers: &'a [(String, String)],
    pub(crate) options: &'a [String],
    pub(crate) name_expressions: &'a [String],
    pub(crate) output: NvrtcOutput,
    /// Whether the options ask for a precompiled header (`-pch`, `-create-pch`): its status
    /// is then reported even where NVRTC did not attempt one.
    pub(crate) pch: bool,
}

/// The loaded NVRTC's `(major, minor)`.
pub(crate) fn nvrtc_version() -> Result<(i32, i32)> {
    Ok(nvrtc()?.version())
}

/// Compiles with the process's NVRTC: see [`compile_with`].
pub(crate) fn compile(job: &NvrtcJob<'_>) -> Result<Compiled> {
    compile_with(nvrtc()?.table(), job)
}

/// Compiles `job.source` with the NVRTC of `t`: `nvrtcCreateProgram` (with `job.headers` as
/// its in-memory headers), `nvrtcAddNameExpression` for each name expression,
/// `nvrtcCompileProgram`, then the output, the log and the lowered names.
///
/// Where the compile succeeded but NVRTC ran out of its precompiled-header heap
/// (`nvrtcGetPCHCreateStatus` gives `NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED`), the heap is grown
/// to the size NVRTC asked for (`nvrtcGetPCHHeapSizeRequired`, then `nvrtcSetPCHHeapSize` where
/// the heap is smaller) and the program compiled once more, from a new program as NVRTC wants:
/// its result is returned. An NVRTC without those functions is not retried.
pub(crate) fn compile_with(t: &NvrtcTable, job: &NvrtcJob<'_>) -> Result<Compiled> {
    let inputs = CInputs::new(job)?;
    let first = compile_once(t, job, &inputs)?;
    let Some(PchCreate::HeapExhausted {
        required: Some(required),
    }) = first.pch
    else {
        return Ok(finish(t, job, first, None));
    };
    let Some(set) = t.nvrtcSetPCHHeapSize else {
        return Ok(finish(t, job, first, None));
    };
    // The heap is the process's: grown, never shrunk, and by one thread at a time, so that
    // a compile that needs less never undoes one that needed more.
    static GROWING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let grown = {
        let _one = GROWING.lock().unwrap_or_else(|e| e.into_inner());
        let before = heap_size_in(t);
        if before.is_some_and(|heap| heap >= required) {
            // Another compile grew it meanwhile.
            Ok(before)
        } else {
            // SAFETY: plain data.
            let status = unsafe { set(required) };
            if status == nvrtcResult::NVRTC_SUCCESS {
                Ok(before)
            } else {
                Err(error_string(t, status))
            }
        }
    };
    let before = match grown {
        Ok(before) => before,
        Err(why) => {
            let mut first = finish(t, job, first, None);
            first.log.push_str(&format!(
                "cuda-core: growing NVRTC's PCH heap to {required} bytes failed ({why}); the \
                 program was not compiled again\n"
            ));
            return Ok(first);
        }
    };
    let second = compile_once(t, job, &inputs)?;
    let mut compiled = finish(t, job, second, Some(required));
    let from = before.map_or_else(String::new, |b| format!(" ({b} bytes)"));
    compiled.log.push_str(&format!(
        "cuda-core: NVRTC's PCH heap{from} was too small for the precompiled header, \
         {required} bytes are needed: it was grown to {required} bytes and the program \
         compiled again\n"
    ));
    Ok(compiled)
}

/// The NUL-terminated forms of a job's strings, made once for every compile of it.
struct CInputs {
    source: CString,
    name: CString,
    options: Vec<CString>,
    expressions: Vec<CString>,
    header_names: Vec<CString>,
    header_texts: Vec<CString>,
    header_count: i32,
}

impl CInputs {
    fn new(job: &NvrtcJob<'_>) -> Result<CInputs> {
        let c = |what: &'static str, text: &str| {
            CString::new(text).map_err(|_| Error::InvalidArgument {
                name: what,
                reason: format!("{text:?} contains a NUL byte"),
            })
        };
        let all = |what: &'static str, texts: &mut dyn Iterator<Item = &String>| {
            texts.map(|t| c(what, t)).collect::<Result<Vec<_>>>()
        };
        let header_count =
            i32::try_from(job.headers.len()).map_err(|_| Error::InvalidArgument {
                name: "headers",
                reason: format!(
                    "{} headers; NVRTC takes at most {}",
                    job.headers.len(),
                    i32::MAX
                ),
            })?;
        Ok(CInputs {
            source: c("source", job.source)?,
            name: c("name", job.name)?,
            options: all("options", &mut job.options.iter())?,
            expressions: all("name_expressions", &mut job.name_expressions.iter())?,
            header_names: all("headers", &mut job.headers.iter().map(|(name, _)| name))?,
            header_texts: all("headers", &mut job.headers.iter().map(|(_, text)| text))?,
            header_count,
        })
    }
}

/// One compile's result, before its precompiled header is reported.
struct Once {
    code: Vec<u8>,
    log: String,
    lowered: Vec<(String, String)>,
    /// What `nvrtcGetPCHCreateStatus` said, where NVRTC has it.
    pch: Option<PchCreate>,
}

/// The compile's result as returned: the precompiled header reported where it was asked for
/// or attempted, and a line in the log where it was not created.
fn finish(
    t: &NvrtcTable,
    job: &NvrtcJob<'_>,
    once: Once,
    retried_with_heap: Option<usize>,
) -> Compiled {
    let mut log = once.log;
    let pch = once.pch.and_then(|status| {
        log.push_str(&pch_note(t, &status));
        (job.pch || status != PchCreate::NotAttempted || retried_with_heap.is_some()).then_some(
            PchOutcome {
                status,
                retried_with_heap,
            },
        )
    });
    Compiled {
        code: once.code,
        log,
        lowered: once.lowered,
        pch,
    }
}

/// Creates the program, compiles it and destroys it.
fn compile_once(t: &NvrtcTable, job: &NvrtcJob<'_>, inputs: &CInputs) -> Result<Once> {
    let fail = |what: &str, status: nvrtcResult| Error::Compile {
        program: job.name.to_owned(),
        log: format!("{what} failed: {}", error_string(t, status)),
    };
    let lacks = |symbol: &str| Error::NvrtcNotFound {
        reason: format!("the loaded NVRTC lacks {symbol}"),
        source: None,
    };
    let create = t
        .nvrtcCreateProgram
        .ok_or_else(|| lacks("nvrtcCreateProgram"))?;
    let destroy = t
        .nvrtcDestroyProgram
        .ok_or_else(|| lacks("nvrtcDestroyProgram"))?;
    let header_names: Vec<*const std::ffi::c_char> =
        inputs.header_names.iter().map(|h| h.as_ptr()).collect();
    let header_texts: Vec<*const std::ffi::c_char> =
        inputs.header_texts.iter().map(|h| h.as_ptr()).collect();
    let mut program: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: all strings are NUL-terminated and outlive the call (NVRTC copies them); the
    // two header arrays hold `header_count` pointers each.
    let status = unsafe {
        create(
            &mut program,
            inputs.source.as_ptr(),
            inputs.name.as_ptr(),
            inputs.header_count,
            header_texts.as_ptr(),
            header_names.as_ptr(),
        )
    };
    if status != nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcCreateProgram", status));
    }
    let result = compile_program(
        t,
        program,
        &inputs.options,
        &inputs.expressions,
        job.output,
        job.name,
    );
    // SAFETY: `program` was created above and is destroyed once.
    let status = unsafe { destroy(&mut program) };
    if status != nvrtcResult::NVRTC_SUCCESS {
        log::error!(
            "nvrtcDestroyProgram of {}: {}",
            job.name,
            error_string(t, status)
        );
    }
    result
}

fn compile_program(
    t: &NvrtcTable,
    program: nvrtcProgram,
    options: &[CString],
    expressions: &[CString],
    output: NvrtcOutput,
    name: &str,
) -> Result<Once> {
    let missing = |symbol: &str| Error::NvrtcNotFound {
        reason: format!("the loaded NVRTC lacks {symbol}; it is too old for this"),
        source: None,
    };
    let fail = |what: &str, status: nvrtcResult| Error::Compile {
        program: name.to_owned(),
        log: format!("{what} failed: {}", error_string(t, status)),
    };
    let add_expression = t
        .nvrtcAddNameExpression
        .ok_or_else(|| missing("nvrtcAddNameExpression"))?;
    for expression in expressions {
        // SAFETY: a live program and a NUL-terminated string.
        let status = unsafe { add_expression(program, expression.as_ptr()) };
        if status != nvrtcResult::NVRTC_SUCCESS {
            return Err(fail("nvrtcAddNameExpression", status));
        }
    }
    let compile = t
        .nvrtcCompileProgram
        .ok_or_else(|| missing("nvrtcCompileProgram"))?;
    let pointers: Vec<*const std::ffi::c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let count = i32::try_from(pointers.len()).unwrap_or(i32::MAX);
    // SAFETY: `pointers` holds `count` NUL-terminated options that outlive the call.
    let status = unsafe { compile(program, count, pointers.as_ptr()) };
    let log = read_bytes(t.nvrtcGetProgramLogSize, t.nvrtcGetProgramLog, program)
        .map(|bytes| text(&bytes))
        .unwrap_or_default();
    if status == nvrtcResult::NVRTC_ERROR_COMPILATION {
        return Err(Error::Compile {
            program: name.to_owned(),
            log,
        });
    }
    if status != nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::Compile {
            program: name.to_owned(),
            log: format!(
                "nvrtcCompileProgram failed: {}\n{log}",
                error_string(t, status)
            ),
        });
    }
    let pch = pch_create(t, program);
    let (size_fn, get_fn, symbol) = match output {
        NvrtcOutput::Nothing => {
            return Ok(Once {
                code: Vec::new(),
                log,
                lowered: Vec::new(),
                pch,
            })
        }
        NvrtcOutput::Ptx => (t.nvrtcGetPTXSize, t.nvrtcGetPTX, "nvrtcGetPTX"),
        NvrtcOutput::Cubin => (t.nvrtcGetCUBINSize, t.nvrtcGetCUBIN, "nvrtcGetCUBIN"),
        NvrtcOutput::LtoIr => (t.nvrtcGetLTOIRSize, t.nvrtcGetLTOIR, "nvrtcGetLTOIR"),
    };
    if size_fn.is_none() || get_fn.is_none() {
        return Err(missing(symbol));
    }
    let code = read_bytes(size_fn, get_fn, program).map_err(|status| fail(symbol, status))?;
    if code.is_empty() || (output == NvrtcOutput::Ptx && code.len() <= 1) {
        return Err(Error::Compile {
            program: name.to_owned(),
            log: format!(
                "NVRTC produced no {symbol} output; for cubin or LTO-IR the architecture must be a \
                 real one (sm_XX, not compute_XX), and LTO-IR needs -dlto\n{log}"
            ),
        });
    }
    let lowered_name = t
        .nvrtcGetLoweredName
        .ok_or_else(|| missing("nvrtcGetLoweredName"))?;
    let mut lowered = Vec::with_capacity(expressions.len());
    for expression in expressions {
        let mut out: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: a compiled program, an expression added before compiling, a writable out.
        let status = unsafe { lowered_name(program, expression.as_ptr(), &mut out) };
        if status != nvrtcResult::NVRTC_SUCCESS || out.is_null() {
            return Err(fail("nvrtcGetLoweredName", status));
        }
        // SAFETY: NVRTC returns a NUL-terminated string owned by the program, alive until it
        // is destroyed (after this copy).
        let name = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        lowered.push((expression.to_string_lossy().into_owned(), name));
    }
    Ok(Once {
        code,
        log,
        lowered,
        pch,
    })
}

/// What NVRTC says of the precompiled header of a compiled program
/// (`nvrtcGetPCHCreateStatus`, with `nvrtcGetPCHHeapSizeRequired` where the heap ran out);
/// `None` for an NVRTC without precompiled headers.
fn pch_create(t: &NvrtcTable, program: nvrtcProgram) -> Option<PchCreate> {
    let status = t.nvrtcGetPCHCreateStatus?;
    // SAFETY: a live, compiled program.
    let status = unsafe { status(program) };
    Some(match status {
        nvrtcResult::NVRTC_SUCCESS => PchCreate::Created,
        nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED => PchCreate::NotAttempted,
        nvrtcResult::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED => {
            let required = t.nvrtcGetPCHHeapSizeRequired.and_then(|f| {
                let mut required = 0;
                // SAFETY: a live program and a writable out-pointer.
                let status = unsafe { f(program, &mut required) };
                (status == nvrtcResult::NVRTC_SUCCESS && required > 0).then_some(required)
            });
            PchCreate::HeapExhausted { required }
        }
        other => PchCreate::Failed(error_string(t, other)),
    })
}

/// A line for the log where NVRTC tried to create a precompiled header and could not, with
/// the heap it needed where that was the reason; empty otherwise (created, not attempted).
fn pch_note(t: &NvrtcTable, status: &PchCreate) -> String {
    match status {
        PchCreate::Created | PchCreate::NotAttempted => String::new(),
        PchCreate::HeapExhausted { required } => {
            let heap = heap_size_in(t).map_or_else(String::new, |h| format!(" ({h} bytes)"));
            let needed = required.map_or_else(
                || "NVRTC did not say how much it needs".to_owned(),
                |r| format!("{r} bytes are needed"),
            );
            format!(
                "\ncuda-core: the precompiled header was not created: NVRTC's PCH heap{heap} is \
                 too small, {needed} (see set_pch_heap_size)\n"
            )
        }
        PchCreate::Failed(why) => {
            format!("\ncuda-core: the precompiled header was not created: {why}\n")
        }
    }
}

/// `nvrtcGetPCHHeapSize` of the NVRTC of `t`, where it has it and answers.
fn heap_size_in(t: &NvrtcTable) -> Option<usize> {
    let f = t.nvrtcGetPCHHeapSize?;
    let mut size = 0;
    // SAFETY: a writable out-pointer.
    let status = unsafe { f(&mut size) };
    (status == nvrtcResult::NVRTC_SUCCESS).then_some(size)
}

/// `nvrtcGetPCHHeapSize`.
pub(crate) fn pch_heap_size() -> Result<usize> {
    let t = nvrtc()?.table();
    let f = t
        .nvrtcGetPCHHeapSize
        .ok_or_else(|| no_pch("nvrtcGetPCHHeapSize"))?;
    let mut size = 0;
    // SAFETY: a writable out-pointer.
    let status = unsafe { f(&mut size) };
    pch_result(t, status, "nvrtcGetPCHHeapSize").map(|()| size)
}

/// `nvrtcSetPCHHeapSize`.
pub(crate) fn set_pch_heap_size(bytes: usize) -> Result<()> {
    let t = nvrtc()?.table();
    let f = t
        .nvrtcSetPCHHeapSize
        .ok_or_else(|| no_pch("nvrtcSetPCHHeapSize"))?;
    // SAFETY: plain data.
    let status = unsafe { f(bytes) };
    pch_result(t, status, "nvrtcSetPCHHeapSize")
}

fn no_pch(symbol: &str) -> Error {
    Error::NvrtcNotFound {
        reason: format!(
            "the loaded NVRTC lacks {symbol}: precompiled headers need NVRTC 12.8 or newer"
        ),
        source: None,
    }
}

fn pch_result(t: &NvrtcTable, status: nvrtcResult, what: &str) -> Result<()> {
    if status == nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "bytes",
        reason: format!("{what} failed: {}", error_string(t, status)),
    })
}

type SizeFn = Option<unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult>;
type GetFn = Option<unsafe extern "C" fn(nvrtcProgram, *mut std::ffi::c_char) -> nvrtcResult>;

/// Reads one of NVRTC's size-then-bytes outputs.
fn read_bytes(
    size: SizeFn,
    get: GetFn,
    program: nvrtcProgram,
) -> std::result::Result<Vec<u8>, nvrtcResult> {
    let (Some(size), Some(get)) = (size, get) else {
        return Err(nvrtcResult::NVRTC_ERROR_INVALID_INPUT);
    };
    // SAFETY: both functions come from NVRTC's table with these signatures; `program` is live.
    unsafe { read_sized(program, size, get, nvrtcResult::NVRTC_SUCCESS) }
}

/// A log buffer as text, without its terminating NUL.
pub(crate) fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

fn error_string(t: &NvrtcTable, status: nvrtcResult) -> String {
    match t.nvrtcGetErrorString {
        // SAFETY: NVRTC returns a static NUL-terminated string for any code.
        Some(f) => unsafe { CStr::from_ptr(f(status)) }
            .to_string_lossy()
            .into_owned(),
        None => format!("NVRTC error {}", status.0),
    }
}

/// Reads one of the size-then-bytes outputs that NVRTC and nvJitLink share the shape of.
///
/// # Safety
///
/// `size` writes the byte count of the output of `handle`, and `get` writes exactly that many
/// bytes to the pointer it is given.
pub(super) unsafe fn read_sized<H: Copy, R: Copy + PartialEq, P>(
    handle: H,
    size: unsafe extern "C" fn(H, *mut usize) -> R,
    get: unsafe extern "C" fn(H, *mut P) -> R,
    success: R,
) -> std::result::Result<Vec<u8>, R> {
    let mut len = 0usize;
    // SAFETY: the caller vouches for the function; `len` is writable.
    let status = unsafe { size(handle, &mut len) };
    if status != success {
        return Err(status);
    }
    let mut bytes = vec![0u8; len];
    if len > 0 {
        // SAFETY: the buffer holds the `len` bytes the library said it writes.
        let status = unsafe { get(handle, bytes.as_mut_ptr().cast()) };
        if status != success {
            return Err(status);
        }
    }
    Ok(bytes)
}

/// Which NVRTC this process compiles with, exactly: the library file and its builtins, each by
/// path, size and modification time. A program cache's key holds it, so that another build of
/// NVRTC (a patch release of the same major.minor too) never hits what this one compiled.
///
/// Where NVRTC is loaded, the file it was really loaded from. Where it is not, the file
/// discovery would load, found without loading it (`Candidate::file`: the loader's search for
/// a name, emulated), so that a cache hit needs no NVRTC at all; once NVRTC loads, the real
/// file is used and a disagreement is logged. Only where no candidate can be found that way is
/// NVRTC loaded to learn it.
pub(crate) fn nvrtc_identity() -> Result<String> {
    static EMULATED: OnceLock<Option<String>> = OnceLock::new();
    static REAL: OnceLock<String> = OnceLock::new();
    let real = |nvrtc: &Nvrtc| {
        REAL.get_or_init(|| {
            let real = loaded_file(nvrtc)
                .map(|file| fingerprint(&file))
                .unwrap_or_else(|| {
                    format!(
                        "{} (version {:?})",
                        nvrtc.location().display(),
                        nvrtc.version()
                    )
                });
            if let Some(Some(emulated)) = EMULATED.get() {
                if *emulated != real {
                    log::warn!(
                        "NVRTC was loaded from elsewhere than its search found without loading \
                         it ({real}, not {emulated}); cache keys from now on name the loaded one"
                    );
                }
            }
            real
        })
        .clone()
    };
    if let Some(loaded) = NVRTC.get() {
        return loaded.as_ref().map(real).map_err(Clone::clone);
    }
    let emulated = EMULATED.get_or_init(|| {
        Search::from_env(preferred_major())
            .candidates()
            .iter()
            .find_map(cuda_nvrtc_sys::Candidate::file)
            .map(|file| fingerprint(&file))
    });
    match emulated {
        Some(identity) => Ok(identity.clone()),
        None => nvrtc().map(real),
    }
}

/// A library file (and, for NVRTC, its builtins beside it), by canonical path, size and
/// modification time.
pub(super) fn fingerprint(file: &std::path::Path) -> String {
    let one = |path: &std::path::Path| {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        match std::fs::metadata(&path) {
            Ok(m) => {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{} {} {modified}", path.display(), m.len())
            }
            Err(e) => format!("{} ({e})", path.display()),
        }
    };
    let mut identity = one(file);
    let major = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("libnvrtc.so."))
        .and_then(|v| v.split('.').next())
        .map(|m| format!("libnvrtc-builtins.so.{m}"));
    if let (Some(dir), Some(prefix)) = (file.parent(), major) {
        let mut builtins: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
            })
            .collect();
        builtins.sort();
        if let Some(newest) = builtins.last() {
            identity.push_str("; builtins ");
            identity.push_str(&one(newest));
        }
    }
    identity
}

/// The file a loaded NVRTC came from.
fn loaded_file(nvrtc: &Nvrtc) -> Option<std::path::PathBuf> {
    library_file(nvrtc.location(), nvrtc.table().nvrtcVersion? as usize)
}

/// The file a loaded library came from: `location` where it was loaded by path, else the
/// mapping of the process that holds `address`, one of its functions (`/proc/self/maps`).
pub(super) fn library_file(
    location: &std::path::Path,
    address: usize,
) -> Option<std::path::PathBuf> {
    if location.is_absolute() {
        return Some(location.to_path_buf());
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        let path = fields.nth(4)?;
        (start <= address && address < end && path.starts_with('/'))
            .then(|| std::path::PathBuf::from(path))
    })
}

#[cfg(test)]
mod tests;
