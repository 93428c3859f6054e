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
}

/// The loaded NVRTC's `(major, minor)`.
pub(crate) fn nvrtc_version() -> Result<(i32, i32)> {
    Ok(nvrtc()?.version())
}

/// Compiles `source` with NVRTC: `nvrtcCreateProgram` (with `headers`, each an include name
/// and its contents, as its in-memory headers), `nvrtcAddNameExpression` for each name
/// expression, `nvrtcCompileProgram`, then the output, the log and the lowered names.
pub(crate) fn compile(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    name_expressions: &[String],
    output: NvrtcOutput,
) -> Result<Compiled> {
    let nvrtc = nvrtc()?;
    let t = nvrtc.table();
    let fail = |what: &str, status: nvrtcResult| Error::Compile {
        program: name.to_owned(),
        log: format!("{what} failed: {}", error_string(t, status)),
    };
    let c = |what: &'static str, text: &str| {
        CString::new(text).map_err(|_| Error::InvalidArgument {
            name: what,
            reason: format!("{text:?} contains a NUL byte"),
        })
    };
    let source_c = c("source", source)?;
    let name_c = c("name", name)?;
    let options_c = options
        .iter()
        .map(|o| c("options", o))
        .collect::<Result<Vec<_>>>()?;
    let expressions_c = name_expressions
        .iter()
        .map(|e| c("name_expressions", e))
        .collect::<Result<Vec<_>>>()?;
    let header_names_c = headers
        .iter()
        .map(|(name, _)| c("headers", name))
        .collect::<Result<Vec<_>>>()?;
    let header_texts_c = headers
        .iter()
        .map(|(_, text)| c("headers", text))
        .collect::<Result<Vec<_>>>()?;
    let header_names: Vec<*const std::ffi::c_char> =
        header_names_c.iter().map(|h| h.as_ptr()).collect();
    let header_texts: Vec<*const std::ffi::c_char> =
        header_texts_c.iter().map(|h| h.as_ptr()).collect();
    let header_count = i32::try_from(headers.len()).map_err(|_| Error::InvalidArgument {
        name: "headers",
        reason: format!(
            "{} headers; NVRTC takes at most {}",
            headers.len(),
            i32::MAX
        ),
    })?;
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
    let mut program: nvrtcProgram = std::ptr::null_mut();
    // SAFETY: all strings are NUL-terminated and outlive the call (NVRTC copies them); the
    // two header arrays hold `header_count` pointers each.
    let status = unsafe {
        create(
            &mut program,
            source_c.as_ptr(),
            name_c.as_ptr(),
            header_count,
            header_texts.as_ptr(),
            header_names.as_ptr(),
        )
    };
    if status != nvrtcResult::NVRTC_SUCCESS {
        return Err(fail("nvrtcCreateProgram", status));
    }
    let result = compile_program(t, program, &options_c, &expressions_c, output, name);
    // SAFETY: `program` was created above and is destroyed once.
    let status = unsafe { destroy(&mut program) };
    if status != nvrtcResult::NVRTC_SUCCESS {
        log::error!("nvrtcDestroyProgram of {name}: {}", error_string(t, status));
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
) -> Result<Compiled> {
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
    let log = log + &pch_note(t, program);
    let (size_fn, get_fn, symbol) = match output {
        NvrtcOutput::Nothing => {
            return Ok(Compiled {
                code: Vec::new(),
                log,
                lowered: Vec::new(),
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
    Ok(Compiled { code, log, lowered })
}

/// A line for the log where NVRTC tried to create a precompiled header and could not
/// (`nvrtcGetPCHCreateStatus`), with the heap it needed where that was the reason; empty
/// otherwise (created, not attempted, or an NVRTC without precompiled headers).
fn pch_note(t: &NvrtcTable, program: nvrtcProgram) -> String {
    let Some(status) = t.nvrtcGetPCHCreateStatus else {
        return String::new();
    };
    // SAFETY: a live, compiled program.
    let status = unsafe { status(program) };
    match status {
        nvrtcResult::NVRTC_SUCCESS | nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED => {
            String::new()
        }
        nvrtcResult::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED => {
            let mut required = 0;
            if let Some(f) = t.nvrtcGetPCHHeapSizeRequired {
                // SAFETY: a live program and a writable out-pointer.
                unsafe { f(program, &mut required) };
            }
            format!(
                "\ncuda-core: the precompiled header was not created: NVRTC's PCH heap ({} \
                 bytes) is too small, {required} bytes are needed (see set_pch_heap_size)\n",
                pch_heap_size().unwrap_or(0)
            )
        }
        other => format!(
            "\ncuda-core: the precompiled header was not created: {}\n",
            error_string(t, other)
        ),
    }
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
