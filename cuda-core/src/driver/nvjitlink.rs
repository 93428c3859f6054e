//! The process's nvJitLink, found once like NVRTC, and linking through it.

use std::ffi::CString;
use std::sync::OnceLock;

use cuda_nvrtc_sys::nvjitlink::{
    nvJitLinkHandle, nvJitLinkInputType, nvJitLinkResult, NvJitLink, NvJitLinkSearch,
};

use super::nvrtc::text;
use crate::error::{Error, Result};

static NVJITLINK: OnceLock<std::result::Result<NvJitLink, String>> = OnceLock::new();

/// nvJitLink, loaded on first use, preferring the major of the NVRTC in use (its LTO-IR is
/// what it links), else of the driver ABI. `Err` holds why none was found.
fn nvjitlink() -> std::result::Result<&'static NvJitLink, &'static str> {
    NVJITLINK
        .get_or_init(|| {
            let major = super::nvrtc()
                .map(|n| n.version().0 as u32)
                .or_else(|_| super::load::loaded().map(|l| l.driver.abi().major()))
                .unwrap_or(13);
            NvJitLinkSearch::from_env(major)
                .load()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(String::as_str)
}

/// The nvJitLink in use, `(version, location)`, or why there is none.
pub(crate) fn nvjitlink_info() -> std::result::Result<((u32, u32), std::path::PathBuf), String> {
    nvjitlink()
        .map(|n| (n.version(), n.location().to_path_buf()))
        .map_err(str::to_owned)
}

/// Whether the nvJitLink in use links in steps: it hands out linked LTO-IR
/// (`nvJitLinkGetLinkedLTOIR`, which 13.0 and 12.x lack), and its relocatable links (`-r`)
/// keep what a later link needs (13.0 takes `-r` but drops the functions no kernel of the link
/// calls). `false` where none is found.
pub(crate) fn nvjitlink_links_in_steps() -> bool {
    nvjitlink().is_ok_and(|jit| jit.table().nvJitLinkGetLinkedLTOIR.is_some())
}

/// Where the device runtime `libcudadevrt.a` is, preferring the major of the nvJitLink in use
/// (else of NVRTC, else of the driver ABI): a toolkit's, or a runtime wheel's (see
/// `cuda_nvrtc_sys::devrt`). `Err` says every place looked at.
pub(crate) fn device_runtime_path() -> std::result::Result<std::path::PathBuf, String> {
    let major = nvjitlink()
        .map(|n| n.version().0)
        .or_else(|_| super::nvrtc().map(|n| n.version().0 as u32))
        .or_else(|_| super::load::loaded().map(|l| l.driver.abi().major()))
        .unwrap_or(13);
    cuda_nvrtc_sys::devrt::DeviceRuntimeSearch::from_env(major)
        .load()
        .map(|devrt| devrt.path().to_path_buf())
        .map_err(|e| e.to_string())
}

/// Which linker a link of [`LinkerBackend::Auto`](crate::LinkerBackend) uses, exactly, for
/// program cache keys: nvJitLink's file (by path, size and modification time) where it is
/// loaded, or before it loads where discovery would find it (found without loading it, so
/// that a hit needs no linker); else the driver's linker, by the driver's version and file.
pub(crate) fn linker_identity() -> String {
    let file = match NVJITLINK.get() {
        Some(Ok(jit)) => jit
            .table()
            .nvJitLinkCreate
            .and_then(|f| super::nvrtc::library_file(jit.location(), f as usize))
            .or_else(|| Some(jit.location().to_path_buf())),
        Some(Err(_)) => None,
        None => {
            let major = super::nvrtc::expected_major()
                .or_else(|| super::load::loaded().ok().map(|l| l.driver.abi().major()))
                .unwrap_or(13);
            NvJitLinkSearch::from_env(major)
                .candidates()
                .iter()
                .find_map(cuda_nvrtc_sys::Candidate::file)
        }
    };
    if let Some(file) = file {
        return format!("nvJitLink {}", super::nvrtc::fingerprint(&file));
    }
    match super::load::loaded() {
        Ok(loaded) => {
            let library = cuda_nvrtc_sys::loader_path(&loaded.library)
                .map_or_else(|| loaded.library.clone(), |f| super::nvrtc::fingerprint(&f));
            format!(
                "the driver's linker, CUDA driver {} ({library})",
                loaded.driver.version()
            )
        }
        Err(e) => format!("no linker ({e})"),
    }
}

/// One nvJitLink input.
pub(crate) struct JitInput<'a> {
    /// `NVJITLINK_INPUT_CUBIN` 1, `_PTX` 2, `_LTOIR` 3, `_FATBIN` 4.
    pub(crate) kind: u32,
    pub(crate) data: &'a [u8],
    pub(crate) name: &'a str,
}

/// What nvJitLink hands back after the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JitOutput {
    /// `nvJitLinkGetLinkedCubin`.
    Cubin,
    /// `nvJitLinkGetLinkedPtx` (a link with `-lto -ptx`).
    Ptx,
    /// `nvJitLinkGetLinkedLTOIR` (a link with `-lto`; nvJitLink 13).
    LtoIr,
}

/// Links with nvJitLink into a cubin, PTX or LTO-IR: `Ok(None)` when there is no nvJitLink (the caller
/// falls back to the driver's linker), a failure is `Error::Link` with nvJitLink's error log.
/// Returns the output and nvJitLink's info log.
pub(crate) fn jit_link(
    inputs: &[JitInput<'_>],
    options: &[String],
    output: JitOutput,
) -> Result<Option<(Vec<u8>, String)>> {
    let Ok(jit) = nvjitlink() else {
        return Ok(None);
    };
    let t = jit.table();
    let lacks = |symbol: &str| Error::Link {
        log: format!(
            "the nvJitLink at {} lacks {symbol}",
            jit.location().display()
        ),
    };
    let create = t.nvJitLinkCreate.ok_or_else(|| lacks("nvJitLinkCreate"))?;
    let destroy = t
        .nvJitLinkDestroy
        .ok_or_else(|| lacks("nvJitLinkDestroy"))?;
    let options_c: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::InvalidArgument {
            name: "options",
            reason: "an option contains a NUL byte".to_owned(),
        })?;
    let pointers: Vec<*const std::ffi::c_char> = options_c.iter().map(|o| o.as_ptr()).collect();
    let mut handle: nvJitLinkHandle = std::ptr::null_mut();
    // SAFETY: `pointers` holds that many NUL-terminated options, alive for the call.
    let status = unsafe { create(&mut handle, pointers.len() as u32, pointers.as_ptr()) };
    if status != nvJitLinkResult::NVJITLINK_SUCCESS {
        return Err(Error::Link {
            log: format!(
                "nvJitLinkCreate failed with code {}: nvJitLink {}.{} refused the options \
                 {options:?}",
                status.0,
                jit.version().0,
                jit.version().1
            ),
        });
    }
    let result = link_with(jit, handle, inputs, output);
    // SAFETY: created above, destroyed once.
    let status = unsafe { destroy(&mut handle) };
    if status != nvJitLinkResult::NVJITLINK_SUCCESS {
        log::error!("nvJitLinkDestroy failed with code {}", status.0);
    }
    result.map(Some)
}

fn link_with(
    jit: &NvJitLink,
    handle: nvJitLinkHandle,
    inputs: &[JitInput<'_>],
    output: JitOutput,
) -> Result<(Vec<u8>, String)> {
    let t = jit.table();
    let log = |size, get| -> String {
        let (Some(size), Some(get)) = (size, get) else {
            return String::new();
        };
        // SAFETY: the table's log functions, with a live handle.
        let bytes = unsafe {
            super::nvrtc::read_sized(handle, size, get, nvJitLinkResult::NVJITLINK_SUCCESS)
        };
        bytes.map(|b| text(&b)).unwrap_or_default()
    };
    let error_log = || log(t.nvJitLinkGetErrorLogSize, t.nvJitLinkGetErrorLog);
    let fail = |what: &str, status: nvJitLinkResult| Error::Link {
        log: format!("{what} failed with code {}\n{}", status.0, error_log()),
    };
    let (Some(add), Some(complete)) = (t.nvJitLinkAddData, t.nvJitLinkComplete) else {
        return Err(Error::Link {
            log: format!(
                "the nvJitLink at {} lacks functions to link",
                jit.location().display()
            ),
        });
    };
    for input in inputs {
        let name = CString::new(input.name.replace('\0', "")).unwrap_or_default();
        // SAFETY: the data and name outlive the call; nvJitLink copies the input.
        let status = unsafe {
            add(
                handle,
                nvJitLinkInputType(input.kind),
                input.data.as_ptr().cast(),
                input.data.len(),
                name.as_ptr(),
            )
        };
        if status != nvJitLinkResult::NVJITLINK_SUCCESS {
            return Err(fail("nvJitLinkAddData", status));
        }
    }
    // SAFETY: a live handle with its inputs added.
    let status = unsafe { complete(handle) };
    if status != nvJitLinkResult::NVJITLINK_SUCCESS {
        return Err(fail("nvJitLinkComplete", status));
    }
    let ok = nvJitLinkResult::NVJITLINK_SUCCESS;
    let lacks = |symbol: &str| Error::Link {
        log: format!(
            "the nvJitLink at {} lacks {symbol}",
            jit.location().display()
        ),
    };
    let linked = match output {
        JitOutput::Cubin => {
            let getter = "nvJitLinkGetLinkedCubin";
            let (Some(size), Some(get)) =
                (t.nvJitLinkGetLinkedCubinSize, t.nvJitLinkGetLinkedCubin)
            else {
                return Err(lacks(getter));
            };
            // SAFETY: the table's cubin getters, on a completed link.
            unsafe { super::nvrtc::read_sized(handle, size, get, ok) }
                .map_err(|status| fail(getter, status))?
        }
        JitOutput::Ptx => {
            let getter = "nvJitLinkGetLinkedPtx";
            let (Some(size), Some(get)) = (t.nvJitLinkGetLinkedPtxSize, t.nvJitLinkGetLinkedPtx)
            else {
                return Err(lacks(getter));
            };
            // SAFETY: the table's PTX getters, on a completed `-ptx` link.
            unsafe { super::nvrtc::read_sized(handle, size, get, ok) }
                .map_err(|status| fail(getter, status))?
        }
        JitOutput::LtoIr => {
            let getter = "nvJitLinkGetLinkedLTOIR";
            let (Some(size), Some(get)) =
                (t.nvJitLinkGetLinkedLTOIRSize, t.nvJitLinkGetLinkedLTOIR)
            else {
                return Err(lacks(getter));
            };
            // SAFETY: the table's LTO-IR getters, on a completed `-lto` link.
            unsafe { super::nvrtc::read_sized(handle, size, get, ok) }
                .map_err(|status| fail(getter, status))?
        }
    };
    Ok((
        linked,
        log(t.nvJitLinkGetInfoLogSize, t.nvJitLinkGetInfoLog),
    ))
}
