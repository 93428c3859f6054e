//! The device runtime `libcudadevrt.a`: where discovery looks (over temporary layouts), that a
//! static library is never a name for the loader, and that a file that is not an archive is
//! refused with the reason.

use cuda_nvrtc_sys::devrt::{DeviceRuntime, DeviceRuntimeNotFound, DeviceRuntimeSearch};
use cuda_nvrtc_sys::Candidate;

use crate::common::{files, sonames};

/// An `ar` archive at `path` (its magic is all discovery reads).
fn archive(path: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"!<arch>\n").unwrap();
    path.to_path_buf()
}

#[test]
fn toolkits_come_first_then_the_runtime_wheels_by_preferred_major() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = dir.path().join("cuda");
    let lib64 = archive(&cuda.join("lib64/libcudadevrt.a"));
    let targets = archive(&cuda.join("targets/x86_64-linux/lib/libcudadevrt.a"));
    let site = dir.path().join("site-packages");
    let wheel13 = archive(&site.join("nvidia/cu13/lib/libcudadevrt.a"));
    let wheel12 = archive(&site.join("nvidia/cuda_runtime/lib/libcudadevrt.a"));
    let search = |major| DeviceRuntimeSearch {
        preferred_major: major,
        toolkit_roots: vec![cuda.clone()],
        site_packages: vec![site.clone()],
        ..DeviceRuntimeSearch::default()
    };
    let c13 = search(13).candidates();
    // Catches the archive's name handed to the dynamic loader, which cannot load it.
    assert!(sonames(&c13).is_empty(), "{c13:?}");
    // Catches a folder left out, or the wheels not ordered by the preferred major.
    assert_eq!(
        files(&c13),
        [
            lib64.clone(),
            targets.clone(),
            wheel13.clone(),
            wheel12.clone()
        ]
    );
    assert_eq!(
        files(&search(12).candidates()),
        [lib64.clone(), targets, wheel12.clone(), wheel13]
    );
    assert_eq!(search(12).load().unwrap().path(), lib64);
    // Without the toolkit, the preferred major's wheel.
    let wheels_only = DeviceRuntimeSearch {
        toolkit_roots: Vec::new(),
        ..search(12)
    };
    assert_eq!(wheels_only.load().unwrap().path(), wheel12);
}

#[test]
fn a_file_that_is_not_an_archive_is_refused_and_the_error_names_where_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("lib64/libcudadevrt.a");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    std::fs::write(&fake, b"\x7fELF").unwrap();
    // Catches a file of another kind (or too short to hold the magic) taken for the archive.
    let why = DeviceRuntime::open(&Candidate::File(fake.clone())).unwrap_err();
    assert!(
        why.contains("not an ar archive") || why.contains("first bytes"),
        "{why}"
    );
    assert!(DeviceRuntime::open(&Candidate::Soname("libcudadevrt.a")).is_err());
    let search = DeviceRuntimeSearch {
        preferred_major: 13,
        toolkit_roots: vec![dir.path().to_path_buf()],
        ..DeviceRuntimeSearch::default()
    };
    let err = search.load().unwrap_err();
    // Catches an error that does not say what was tried, where else it looked, or what to
    // install.
    let text = err.to_string();
    for part in [
        fake.to_str().unwrap(),
        "libcudadevrt.a",
        "nvidia/cuda_runtime/lib",
        "nvidia-cuda-runtime",
        "nvidia-cuda-runtime-cu12",
        "CUDA_CORE_CUDADEVRT_PATH",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let _: &DeviceRuntimeNotFound = &err;
}
