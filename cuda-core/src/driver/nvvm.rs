//! The process's libNVVM, found once like NVRTC (see `cuda_nvrtc_sys::nvvm::NvvmSearch` for
//! the order), and compiling NVVM IR through it.

use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

use cuda_nvrtc_sys::nvvm::{nvvmProgram, nvvmResult, Nvvm, NvvmSearch, NvvmTable};

use super::nvrtc::{fingerprint, library_file, read_sized, text};
use crate::error::{Cause, Error, Result};

static NVVM: OnceLock<Result<Nvvm>> = OnceLock::new();

/// The wheel major to look for first: that of the NVRTC in use (found without loading it),
/// whose nvJitLink links the PTX (nvJitLink 12.9 cannot read libNVVM 13's PTX); else the
/// driver ABI's (13 when no driver loads: libNVVM needs none).
fn preferred_major() -> u32 {
    super::nvrtc::expected_major()
        .unwrap_or_else(|| super::load::loaded().map_or(13, |l| l.driver.abi().major()))
}

/// libNVVM, loaded on first use.
pub(crate) fn nvvm() -> Result<&'static Nvvm> {
    NVVM.get_or_init(|| {
        NvvmSearch::from_env(preferred_major())
            .load()
            .map_err(|e| Error::NvvmNotFound {
                reason: e.to_string(),
                source: Some(Cause::new(e)),
            })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The file the loaded libNVVM came from (its path, or where the loader mapped it).
pub(crate) fn nvvm_file(nvvm: &Nvvm) -> Option<PathBuf> {
    let address = nvvm.table().nvvmVersion? as usize;
    library_file(nvvm.location(), address)
}

/// One module of a program: its IR (text or bitcode), name, and whether it is added lazily
/// (`nvvmLazyAddModuleToProgram`: only what the other modules use is linked in).
pub(crate) struct NvvmInput<'a> {
    pub(crate) ir: &'a [u8],
    pub(crate) name: &'a str,
    pub(crate) lazy: bool,
}

/// Verifies and compiles the modules with these options: the output (PTX with its NUL, or
/// LTO-IR with `-gen-lto`) and the log. A module the verifier or the compiler refuses is
/// `Error::Compile` with libNVVM's log.
pub(crate) fn nvvm_compile(
    modules: &[NvvmInput<'_>],
    options: &[String],
    program: &str,
) -> Result<(Vec<u8>, String)> {
    let nvvm = nvvm()?;
    let t = nvvm.table();
    let lacks = |symbol: &str| Error::NvvmNotFound {
        reason: format!(
            "the libNVVM at {} lacks {symbol}",
            nvvm.location().display()
        ),
        source: None,
    };
    let (Some(create), Some(destroy)) = (t.nvvmCreateProgram, t.nvvmDestroyProgram) else {
        return Err(lacks("nvvmCreateProgram"));
    };
    let options_c = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| Error::InvalidArgument {
            name: "options",
            reason: "an option contains a NUL byte".to_owned(),
        })?;
    let names = modules
        .iter()
        .map(|m| CString::new(m.name))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| Error::InvalidArgument {
            name: "modules",
            reason: "a module name contains a NUL byte".to_owned(),
        })?;
    let mut handle: nvvmProgram = std::ptr::null_mut();
    // SAFETY: a writable handle.
    let status = unsafe { create(&mut handle) };
    if status != nvvmResult::NVVM_SUCCESS {
        return Err(Error::Compile {
            program: program.to_owned(),
            log: format!("nvvmCreateProgram failed: {}", error_string(t, status)),
        });
    }
    let result = compile_with(t, handle, modules, &names, &options_c, program)
        .map_err(|e| e.unwrap_or_else(|| lacks("a compile function")));
    // SAFETY: created above, destroyed once.
    let status = unsafe { destroy(&mut handle) };
    if status != nvvmResult::NVVM_SUCCESS {
        log::error!(
            "nvvmDestroyProgram of {program}: {}",
            error_string(t, status)
        );
    }
    result
}

/// The compile of a created program; `Err(None)` where the table lacks a function.
fn compile_with(
    t: &NvvmTable,
    handle: nvvmProgram,
    modules: &[NvvmInput<'_>],
    names: &[CString],
    options: &[CString],
    program: &str,
) -> std::result::Result<(Vec<u8>, String), Option<Error>> {
    let (Some(add), Some(add_lazy), Some(verify), Some(compile)) = (
        t.nvvmAddModuleToProgram,
        t.nvvmLazyAddModuleToProgram,
        t.nvvmVerifyProgram,
        t.nvvmCompileProgram,
    ) else {
        return Err(None);
    };
    let (Some(log_size), Some(log_get), Some(result_size), Some(result_get)) = (
        t.nvvmGetProgramLogSize,
        t.nvvmGetProgramLog,
        t.nvvmGetCompiledResultSize,
        t.nvvmGetCompiledResult,
    ) else {
        return Err(None);
    };
    let log = || {
        // SAFETY: the table's log getters, with a live program.
        let bytes = unsafe { read_sized(handle, log_size, log_get, nvvmResult::NVVM_SUCCESS) };
        bytes.map(|bytes| text(&bytes)).unwrap_or_default()
    };
    let fail = |what: &str, status: nvvmResult| {
        let log = log();
        Some(Error::Compile {
            program: program.to_owned(),
            log: if log.is_empty() {
                format!("{what} failed: {}", error_string(t, status))
            } else {
                format!("{what} failed: {}\n{log}", error_string(t, status))
            },
        })
    };
    for (module, name) in modules.iter().zip(names) {
        let add = if module.lazy { add_lazy } else { add };
        // SAFETY: the IR and the name outlive the call; libNVVM copies the module.
        let status = unsafe {
            add(
                handle,
                module.ir.as_ptr().cast(),
                module.ir.len(),
                name.as_ptr(),
            )
        };
        if status != nvvmResult::NVVM_SUCCESS {
            return Err(fail(&format!("adding module {:?}", module.name), status));
        }
    }
    let mut pointers: Vec<*const std::ffi::c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let count = i32::try_from(pointers.len()).unwrap_or(i32::MAX);
    // SAFETY: `pointers` holds `count` NUL-terminated options that outlive the call; libNVVM
    // reads them only (the header's `const char **`).
    let status = unsafe { verify(handle, count, pointers.as_mut_ptr()) };
    if status != nvvmResult::NVVM_SUCCESS {
        return Err(fail("nvvmVerifyProgram", status));
    }
    // SAFETY: as above.
    let status = unsafe { compile(handle, count, pointers.as_mut_ptr()) };
    if status != nvvmResult::NVVM_SUCCESS {
        return Err(fail("nvvmCompileProgram", status));
    }
    // SAFETY: the table's result getters, on a compiled program.
    let code = unsafe { read_sized(handle, result_size, result_get, nvvmResult::NVVM_SUCCESS) }
        .map_err(|status| fail("nvvmGetCompiledResult", status))?;
    Ok((code, log()))
}

fn error_string(t: &NvvmTable, status: nvvmResult) -> String {
    match t.nvvmGetErrorString {
        // SAFETY: libNVVM returns a static NUL-terminated string for any code.
        Some(f) => unsafe { CStr::from_ptr(f(status)) }
            .to_string_lossy()
            .into_owned(),
        None => format!("NVVM error {}", status.0),
    }
}

/// The libNVVM in use.
pub(crate) fn nvvm_info() -> Result<crate::info::types::NvvmInfo> {
    let nvvm = nvvm()?;
    Ok(crate::info::types::NvvmInfo {
        version: nvvm.version(),
        ir_version: nvvm.ir_version(),
        location: nvvm_file(nvvm).unwrap_or_else(|| nvvm.location().to_path_buf()),
    })
}

/// The libdevice beside the libNVVM in use.
pub(crate) fn libdevice() -> Result<PathBuf> {
    let nvvm = nvvm()?;
    let file = nvvm_file(nvvm).unwrap_or_else(|| nvvm.location().to_path_buf());
    Nvvm::libdevice(&file).ok_or_else(|| Error::NvvmNotFound {
        reason: format!(
            "no libdevice.10.bc beside the libNVVM at {} (looked in ../libdevice and \
             ../nvvm/libdevice)",
            file.display()
        ),
        source: None,
    })
}

/// Which libNVVM this process compiles with, exactly (its file by path, size and modification
/// time), for program cache keys: the loaded one's file; before it loads, the file discovery
/// would load, found without loading it (so that a hit needs no libNVVM).
pub(crate) fn nvvm_identity() -> Result<String> {
    if let Some(loaded) = NVVM.get() {
        let nvvm = loaded.as_ref().map_err(Clone::clone)?;
        return Ok(match nvvm_file(nvvm) {
            Some(file) => fingerprint(&file),
            None => format!("{} {:?}", nvvm.location().display(), nvvm.version()),
        });
    }
    let emulated = NvvmSearch::from_env(preferred_major())
        .candidates()
        .iter()
        .find_map(cuda_nvrtc_sys::Candidate::file);
    match emulated {
        Some(file) => Ok(fingerprint(&file)),
        None => {
            let nvvm = nvvm()?;
            Ok(nvvm_file(nvvm).map_or_else(
                || format!("{} {:?}", nvvm.location().display(), nvvm.version()),
                |file| fingerprint(&file),
            ))
        }
    }
}
