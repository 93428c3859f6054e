//! libNVVM: where discovery looks (over temporary layouts of empty stand-in files), its own
//! override variable (in a child process, so that no other test's thread reads the
//! environment meanwhile), and the real library of each CUDA major, which needs no GPU: CI
//! installs both wheels and sets `CUDA_CORE_TEST_REQUIRE=nvvm-12,nvvm-13`.

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::ptr;

use cuda_nvrtc_sys::nvvm::{nvvmProgram, nvvmResult, Nvvm, NvvmNotFound, NvvmSearch, NvvmTable};
use cuda_nvrtc_sys::{Candidate, Search};

use crate::common::{files, sonames, touch};

#[test]
fn toolkits_are_searched_in_nvvm_lib64_and_wheels_by_preferred_major() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = dir.path().join("cuda");
    let toolkit = touch(&cuda.join("nvvm/lib64/libnvvm.so.4"));
    let toolkit_plain = touch(&cuda.join("nvvm/lib64/libnvvm.so"));
    touch(&cuda.join("lib64/libnvvm.so.4")); // not where a toolkit has it
    let site = dir.path().join("site-packages");
    let wheel13 = touch(&site.join("nvidia/cu13/lib/libnvvm.so.4"));
    let wheel12 = touch(&site.join("nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"));
    let search = |major| NvvmSearch {
        preferred_major: major,
        toolkit_roots: vec![cuda.clone()],
        site_packages: vec![site.clone()],
        ..NvvmSearch::default()
    };
    let c13 = search(13).candidates();
    assert_eq!(sonames(&c13), ["libnvvm.so.4", "libnvvm.so"]);
    assert_eq!(
        files(&c13),
        [
            toolkit.clone(),
            toolkit_plain.clone(),
            wheel13.clone(),
            wheel12.clone()
        ]
    );
    assert_eq!(
        files(&search(12).candidates()),
        [toolkit, toolkit_plain, wheel12, wheel13]
    );
    // The error names libNVVM's own folders, wheel and variable (made here: a load could find
    // the soname in this process, where another test loaded the real library).
    let text = NvvmNotFound {
        tried: Vec::new(),
        search: search(13),
    }
    .to_string();
    for part in [
        "libNVVM",
        "nvvm/lib64",
        "nvidia/cuda_nvcc/nvvm/lib64",
        "nvidia-nvvm",
        "CUDA_CORE_NVVM_PATH",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert!(!text.contains("targets/*/lib"), "{text}");
}

#[test]
fn a_library_that_is_not_libnvvm_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let fake = touch(&dir.path().join("libnvvm.so.4"));
    let why = Nvvm::open(&Candidate::File(fake)).unwrap_err();
    assert!(!why.is_empty());
    let missing = Nvvm::open(&Candidate::File(dir.path().join("none.so"))).unwrap_err();
    assert_eq!(missing, "no such file");
}

#[test]
fn libdevice_is_found_in_each_layout() {
    let dir = tempfile::tempdir().unwrap();
    let toolkit = touch(&dir.path().join("cuda/nvvm/libdevice/libdevice.10.bc"));
    let wheel13 = touch(&dir.path().join("cu13/nvvm/libdevice/libdevice.10.bc"));
    assert_eq!(
        Nvvm::libdevice(&dir.path().join("cuda/nvvm/lib64/libnvvm.so")),
        Some(toolkit)
    );
    assert_eq!(
        Nvvm::libdevice(&dir.path().join("cu13/lib/libnvvm.so.4")),
        Some(wheel13)
    );
    assert_eq!(Nvvm::libdevice(&dir.path().join("x/lib/libnvvm.so")), None);
    assert_eq!(Nvvm::libdevice(Path::new("libnvvm.so.4")), None);
}

/// Set in the child, to the file the variable names.
const CHILD: &str = "CUDA_CORE_NVVM_ENV_TEST_FILE";

#[test]
fn the_override_variable_is_libnvvms_own() {
    if let Some(file) = std::env::var_os(CHILD) {
        let file = PathBuf::from(file);
        let search = NvvmSearch::from_env(13);
        assert_eq!(search.explicit.as_deref(), Some(file.as_path()));
        assert_eq!(search.candidates(), [Candidate::File(file.clone())]);
        assert_ne!(
            Search::from_env(13).explicit.as_deref(),
            Some(file.as_path())
        );
        let text = search.load().unwrap_err().to_string();
        assert!(text.contains(&file.display().to_string()), "{text}");
        assert!(text.contains("CUDA_CORE_NVVM_PATH"), "{text}");
        println!("nvvm_env child done");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libnvvm.so.4");
    crate::common::run_alone(
        "nvvm::the_override_variable_is_libnvvms_own",
        &[
            (CHILD, file.as_os_str()),
            ("CUDA_CORE_NVVM_PATH", file.as_os_str()),
        ],
        "nvvm_env child done",
    );
}

/// The wheel file of libNVVM `major` (both majors are `libnvvm.so.4` and report NVVM 2.0, so
/// the layout tells them apart), loaded; or a printed reason why not, failing when required.
fn load(major: u32) -> Option<Nvvm> {
    let search = NvvmSearch::from_env(major).with_python_paths();
    let folder = match major {
        13 => "nvidia/cu13/lib",
        _ => "nvidia/cuda_nvcc/nvvm/lib64",
    };
    let file = search.site_packages.iter().find_map(|dir| {
        let dir = dir.join(folder);
        ["libnvvm.so.4", "libnvvm.so"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
    });
    let Some(file) = file else {
        crate::common::not_run(
            &format!("nvvm-{major}"),
            &format!("libNVVM {major} is not installed (no {folder} in site-packages)"),
        );
        return None;
    };
    Some(Nvvm::open(&Candidate::File(file.clone())).unwrap_or_else(|e| panic!("{file:?}: {e}")))
}

/// A kernel in the LLVM 7 dialect (typed pointers, `nvvm.annotations`) that both majors take.
const KERNEL: &str = r#"
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @twice(float* %x) {
  %v = load float, float* %x
  %d = fadd float %v, %v
  store float %d, float* %x
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float*)* @twice, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"#;

/// Compiles one module; the PTX, or the status and log.
fn compile(nvvm: &Nvvm, ir: &str, options: &[&str]) -> Result<String, (nvvmResult, String)> {
    let t: &NvvmTable = nvvm.table();
    let options: Vec<CString> = options.iter().map(|o| CString::new(*o).unwrap()).collect();
    let mut pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let name = CString::new("m").unwrap();
    let mut program: nvvmProgram = ptr::null_mut();
    // SAFETY: every pointer passed is valid for its call; the program is destroyed below.
    unsafe {
        assert_eq!(
            t.nvvmCreateProgram.unwrap()(&mut program),
            nvvmResult::NVVM_SUCCESS
        );
        assert_eq!(
            t.nvvmAddModuleToProgram.unwrap()(program, ir.as_ptr().cast(), ir.len(), name.as_ptr()),
            nvvmResult::NVVM_SUCCESS
        );
        let status =
            t.nvvmCompileProgram.unwrap()(program, pointers.len() as i32, pointers.as_mut_ptr());
        let read =
            |size: unsafe extern "C" fn(nvvmProgram, *mut usize) -> nvvmResult,
             get: unsafe extern "C" fn(nvvmProgram, *mut c_char) -> nvvmResult| {
                let mut n = 0;
                assert_eq!(size(program, &mut n), nvvmResult::NVVM_SUCCESS);
                let mut bytes = vec![0u8; n];
                assert_eq!(
                    get(program, bytes.as_mut_ptr().cast()),
                    nvvmResult::NVVM_SUCCESS
                );
                String::from_utf8_lossy(&bytes)
                    .trim_end_matches('\0')
                    .to_owned()
            };
        let result = if status == nvvmResult::NVVM_SUCCESS {
            Ok(read(
                t.nvvmGetCompiledResultSize.unwrap(),
                t.nvvmGetCompiledResult.unwrap(),
            ))
        } else {
            Err((
                status,
                read(
                    t.nvvmGetProgramLogSize.unwrap(),
                    t.nvvmGetProgramLog.unwrap(),
                ),
            ))
        };
        assert_eq!(
            t.nvvmDestroyProgram.unwrap()(&mut program),
            nvvmResult::NVVM_SUCCESS
        );
        result
    }
}

fn compiles_with(major: u32) {
    let Some(nvvm) = load(major) else { return };
    assert_eq!(nvvm.version().0, 2, "{nvvm:?}");
    assert_eq!(nvvm.ir_version().0, 2, "{nvvm:?}");
    let ptx = compile(&nvvm, KERNEL, &["-arch=compute_90"]).unwrap_or_else(|e| panic!("{e:?}"));
    // The PTX names the CUDA release that made it: the layout's major was loaded.
    assert!(ptx.contains(&format!("release {major}.")), "{major}: {ptx}");
    assert!(ptx.contains(".entry twice"), "{ptx}");
    assert!(ptx.contains(".target sm_90"), "{ptx}");
    let bad = KERNEL.replace("%v, %v", "%v, %undefined");
    let (status, log) = compile(&nvvm, &bad, &["-arch=compute_90"]).unwrap_err();
    assert_ne!(status, nvvmResult::NVVM_SUCCESS);
    assert!(log.contains("undefined"), "{log}");
    // Only CUDA 13's library has nvvmLLVMVersion.
    assert_eq!(nvvm.table().nvvmLLVMVersion.is_some(), major >= 13);
    assert_eq!(
        nvvm.table()
            .symbols()
            .iter()
            .filter(|s| s.address.is_none())
            .count(),
        usize::from(major < 13)
    );
    assert!(Nvvm::libdevice(nvvm.location()).is_some(), "{nvvm:?}");
}

#[test]
fn libnvvm13_compiles_nvvm_ir_to_ptx() {
    compiles_with(13);
}

#[test]
fn libnvvm12_compiles_nvvm_ir_to_ptx() {
    compiles_with(12);
}
