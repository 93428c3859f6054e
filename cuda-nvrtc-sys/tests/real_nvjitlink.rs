//! Loads the real nvJitLink of each CUDA major from its file and links LTO-IR that the NVRTC
//! of the same major made (nvJitLink 12 refuses NVRTC 13's LTO-IR). Neither needs a
//! GPU, so this runs in CI, where `.ci/run` installs both majors' wheels and sets
//! `CUDA_CORE_TEST_REQUIRE=nvjitlink-12,nvjitlink-13`; elsewhere a major that is not installed
//! says it did not run.

use std::ffi::{c_char, CString};
use std::ptr;

use cuda_nvrtc_sys::nvjitlink::{
    nvJitLinkHandle, nvJitLinkInputType, nvJitLinkResult, NvJitLink, NvJitLinkSearch,
    NvJitLinkTable,
};
use cuda_nvrtc_sys::{nvrtcProgram, nvrtcResult, Candidate, Discoverable, Discovery, Nvrtc};

fn required(major: u32) -> bool {
    crate::common::required(&format!("nvjitlink-{major}"))
}

/// Says the test did not run for want of nvJitLink `major` (or its NVRTC); fails when required.
fn not_run(major: u32, why: &str) {
    crate::common::not_run(&format!("nvjitlink-{major}"), why);
}

/// Loads `L` of `major` from the first file candidate of that major (a soname could resolve
/// to whichever library of that name this process loaded first), with the reasons the others
/// failed.
fn load_file<L: Discoverable>(major: u32, version: fn(&L) -> u32) -> Result<L, Vec<String>> {
    let suffix = format!(".so.{major}");
    let search = Discovery::<L>::from_env(major).with_python_paths();
    let mut tried = Vec::new();
    for candidate in search.candidates() {
        let Candidate::File(path) = &candidate else {
            continue;
        };
        if !path.to_string_lossy().ends_with(&suffix) {
            continue;
        }
        match L::open(&candidate) {
            Ok(library) => {
                assert_eq!(version(&library), major, "{}", path.display());
                return Ok(library);
            }
            Err(why) => tried.push(format!("{}: {why}", path.display())),
        }
    }
    Err(tried)
}

/// NVRTC and nvJitLink of `major`, or a printed reason why not; fails when CI requires them.
fn load_pair(major: u32) -> Option<(Nvrtc, NvJitLink)> {
    let linker = load_file::<NvJitLink>(major, |l| l.version().0);
    let nvrtc = load_file::<Nvrtc>(major, |n| n.version().0 as u32);
    match (nvrtc, linker) {
        (Ok(nvrtc), Ok(linker)) => {
            let (nvrtc_major, nvrtc_minor) = nvrtc.version();
            if linker.version() < (nvrtc_major as u32, nvrtc_minor as u32) {
                // It answers NVJITLINK_ERROR_OUTDATED_LIBRARY to newer LTO-IR.
                let why = format!(
                    "nvJitLink {:?} is older than NVRTC {:?}, whose LTO-IR it cannot read",
                    linker.version(),
                    nvrtc.version()
                );
                not_run(major, &why);
                return None;
            }
            eprintln!(
                "NVRTC {:?} from {}, nvJitLink {:?} from {}",
                nvrtc.version(),
                nvrtc.location().display(),
                linker.version(),
                linker.location().display()
            );
            Some((nvrtc, linker))
        }
        (nvrtc, linker) => {
            let state = |found: Result<(), Vec<String>>| match found {
                Ok(()) => "found".to_owned(),
                Err(tried) => format!("not found, tried {tried:?}"),
            };
            let why = format!(
                "NVRTC {major}: {}; nvJitLink {major}: {}",
                state(nvrtc.map(drop)),
                state(linker.map(drop))
            );
            not_run(major, &format!("not installed ({why})"));
            None
        }
    }
}

/// Loads nvJitLink of `major` alone, or a printed reason why not.
fn load_linker(major: u32) -> Option<NvJitLink> {
    match load_file::<NvJitLink>(major, |l| l.version().0) {
        Ok(linker) => Some(linker),
        Err(tried) => {
            not_run(
                major,
                &format!("nvJitLink {major} is not installed (tried {tried:?})"),
            );
            None
        }
    }
}

fn check(status: nvrtcResult, what: &str) {
    assert_eq!(status, nvrtcResult::NVRTC_SUCCESS, "{what}");
}

/// Compiles one translation unit to LTO-IR for sm_90.
fn lto_ir(nvrtc: &Nvrtc, source: &str, name: &str) -> Vec<u8> {
    let t = nvrtc.table();
    let source = CString::new(source).unwrap();
    let name = CString::new(name).unwrap();
    let options: Vec<CString> = ["-dlto", "-rdc=true", "-arch=sm_90"]
        .iter()
        .map(|o| CString::new(*o).unwrap())
        .collect();
    let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut program: nvrtcProgram = ptr::null_mut();
    // SAFETY: every pointer passed is valid for the call; the program is destroyed below.
    unsafe {
        check(
            t.nvrtcCreateProgram.unwrap()(
                &mut program,
                source.as_ptr(),
                name.as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            ),
            "create",
        );
        let status =
            t.nvrtcCompileProgram.unwrap()(program, pointers.len() as i32, pointers.as_ptr());
        if status != nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0;
            check(
                t.nvrtcGetProgramLogSize.unwrap()(program, &mut size),
                "log size",
            );
            let mut log = vec![0u8; size];
            check(
                t.nvrtcGetProgramLog.unwrap()(program, log.as_mut_ptr().cast()),
                "log",
            );
            panic!("compiling {name:?}: {}", String::from_utf8_lossy(&log));
        }
        let mut size = 0;
        check(
            t.nvrtcGetLTOIRSize.unwrap()(program, &mut size),
            "LTO-IR size",
        );
        let mut ir = vec![0u8; size];
        check(
            t.nvrtcGetLTOIR.unwrap()(program, ir.as_mut_ptr().cast()),
            "LTO-IR",
        );
        check(t.nvrtcDestroyProgram.unwrap()(&mut program), "destroy");
        assert!(!ir.is_empty(), "{name:?} gave no LTO-IR");
        ir
    }
}

/// Links LTO-IR inputs into a cubin, or gives nvJitLink's error log.
fn link(linker: &NvJitLink, inputs: &[(&[u8], &str)], options: &[&str]) -> Result<Vec<u8>, String> {
    let t = linker.table();
    let ok = |status: nvJitLinkResult, what: &str| {
        assert_eq!(status, nvJitLinkResult::NVJITLINK_SUCCESS, "{what}");
    };
    let options: Vec<CString> = options.iter().map(|o| CString::new(*o).unwrap()).collect();
    let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let mut handle: nvJitLinkHandle = ptr::null_mut();
    // SAFETY: every pointer passed is valid for its call, the option strings and the inputs
    // outlive the handle, and the handle is destroyed below.
    unsafe {
        ok(
            t.nvJitLinkCreate.unwrap()(&mut handle, pointers.len() as u32, pointers.as_ptr()),
            "create",
        );
        for (data, name) in inputs {
            let name = CString::new(*name).unwrap();
            ok(
                t.nvJitLinkAddData.unwrap()(
                    handle,
                    nvJitLinkInputType::NVJITLINK_INPUT_LTOIR,
                    data.as_ptr().cast(),
                    data.len(),
                    name.as_ptr(),
                ),
                "add LTO-IR",
            );
        }
        let result = if t.nvJitLinkComplete.unwrap()(handle) == nvJitLinkResult::NVJITLINK_SUCCESS {
            let mut size = 0;
            ok(
                t.nvJitLinkGetLinkedCubinSize.unwrap()(handle, &mut size),
                "cubin size",
            );
            let mut cubin = vec![0u8; size];
            ok(
                t.nvJitLinkGetLinkedCubin.unwrap()(handle, cubin.as_mut_ptr().cast()),
                "cubin",
            );
            Ok(cubin)
        } else {
            let mut size = 0;
            ok(
                t.nvJitLinkGetErrorLogSize.unwrap()(handle, &mut size),
                "log size",
            );
            let mut log = vec![0u8; size];
            ok(
                t.nvJitLinkGetErrorLog.unwrap()(handle, log.as_mut_ptr().cast()),
                "log",
            );
            Err(String::from_utf8_lossy(&log).into_owned())
        };
        ok(t.nvJitLinkDestroy.unwrap()(&mut handle), "destroy");
        result
    }
}

const TWICE: &str = "__device__ float twice(float x) { return 2.0f * x; }\n";

const KERNEL: &str = r#"
extern __device__ float twice(float x);

extern "C" __global__ void scale(float* data, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = twice(data[i]);
}
"#;

fn links_lto_ir_with(major: u32) {
    let Some((nvrtc, linker)) = load_pair(major) else {
        return;
    };
    let twice = lto_ir(&nvrtc, TWICE, "twice.cu");
    let kernel = lto_ir(&nvrtc, KERNEL, "kernel.cu");
    let options = ["-arch=sm_90", "-lto"];
    let cubin = link(
        &linker,
        &[(&twice, "twice.cu"), (&kernel, "kernel.cu")],
        &options,
    )
    .unwrap_or_else(|log| panic!("nvJitLink {major} failed to link: {log}"));
    assert!(
        cubin.starts_with(b"\x7fELF"),
        "not an ELF: {:?}",
        &cubin[..16.min(cubin.len())]
    );
    assert!(
        cubin.windows(5).any(|w| w == b"scale"),
        "the kernel's name is in the cubin"
    );
    // Without the TU that defines it, `twice` is undefined, and the log says so.
    let log = link(&linker, &[(&kernel, "kernel.cu")], &options).unwrap_err();
    assert!(log.contains("twice"), "{log}");
}

#[test]
fn nvjitlink13_links_lto_ir() {
    links_lto_ir_with(13);
}

#[test]
fn nvjitlink12_links_lto_ir() {
    links_lto_ir_with(12);
}

/// Each field is filled from the versioned name of the library's own major, at the header's
/// minor or the library's, whichever is older (also checked by hand against the 12.0 and 13.0
/// libraries, which lack `nvJitLinkVersion` and the LTO-IR getters respectively).
fn table_uses_the_names_of_its_major(major: u32) {
    let Some(linker) = load_linker(major) else {
        return;
    };
    let (library_major, library_minor) = linker.version();
    assert_eq!(library_major, major);
    let header_minor = NvJitLinkTable::MAJORS
        .iter()
        .find(|(m, _)| *m == major)
        .map(|(_, minor)| *minor)
        .unwrap();
    let minor = header_minor.min(library_minor);
    for symbol in linker.table().symbols() {
        let versioned = format!("__{}_{major}_{minor}", symbol.field);
        match (major, symbol.field) {
            // Unversioned in every major; 12.0 has none.
            (_, "nvJitLinkVersion") => assert!(
                symbol.export.is_none_or(|e| e == "nvJitLinkVersion"),
                "{symbol:?}"
            ),
            // Not in the 12.9 header, so never looked up in a 12.x library.
            (12, "nvJitLinkGetLinkedLTOIRSize" | "nvJitLinkGetLinkedLTOIR") => {
                assert_eq!((symbol.export, symbol.address), (None, None), "{symbol:?}");
            }
            // Newer than 13.0 (whose library lacks it).
            (13, "nvJitLinkGetLinkedLTOIRSize" | "nvJitLinkGetLinkedLTOIR") => {
                assert!(symbol.export.is_none_or(|e| e == versioned), "{symbol:?}")
            }
            // In every library since 12.0.
            _ => assert_eq!(symbol.export, Some(versioned.as_str()), "{symbol:?}"),
        }
        assert_eq!(
            symbol.export.is_some(),
            symbol.address.is_some(),
            "{symbol:?}"
        );
    }
    // The pinned wheels (CI) are as new as the headers: every function is there.
    if (library_major, library_minor) >= (major, header_minor) {
        let missing: Vec<_> = linker
            .table()
            .symbols()
            .into_iter()
            .filter(|s| s.address.is_none())
            .map(|s| s.field)
            .collect();
        let expected: &[&str] = match major {
            12 => &["nvJitLinkGetLinkedLTOIRSize", "nvJitLinkGetLinkedLTOIR"],
            _ => &[],
        };
        assert_eq!(missing, expected);
    }
    assert_eq!(linker.table().exports.len(), NvJitLinkTable::LEN);
}

#[test]
fn table13_uses_names_of_13() {
    table_uses_the_names_of_its_major(13);
}

#[test]
fn table12_uses_names_of_12() {
    table_uses_the_names_of_its_major(12);
}

#[test]
fn discovery_finds_a_linker() {
    let any = [13, 12]
        .into_iter()
        .any(|m| required(m) || load_file::<NvJitLink>(m, |l| l.version().0).is_ok());
    if !any {
        return crate::common::not_run("nvjitlink", "no nvJitLink installed");
    }
    let linker = NvJitLinkSearch::from_env(13)
        .load()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!([12, 13].contains(&linker.version().0), "{linker:?}");
    assert!(linker.table().nvJitLinkCreate.is_some(), "{linker:?}");
}
