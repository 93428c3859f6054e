//! NVRTC discovery order over temporary directory layouts (no NVRTC needed: the files are
//! empty stand-ins, and only where discovery looks is checked here).

use std::path::PathBuf;

use crate::common::{files, sonames, touch};

use cuda_nvrtc_sys::{Candidate, Search};

#[test]
fn sonames_come_first_preferred_major_leading() {
    let search13 = Search {
        preferred_major: 13,
        ..Search::default()
    };
    let c = search13.candidates();
    assert_eq!(
        sonames(&c),
        ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]
    );
    assert!(matches!(c[0], Candidate::Soname(_)));
    let search12 = Search {
        preferred_major: 12,
        ..Search::default()
    };
    assert_eq!(
        sonames(&search12.candidates()),
        ["libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so"]
    );
}

#[test]
fn explicit_path_is_the_only_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let lib = touch(&dir.path().join("cuda/lib64/libnvrtc.so.13"));
    let search = Search {
        preferred_major: 13,
        explicit: Some(PathBuf::from("/elsewhere/libnvrtc.so.12")),
        toolkit_roots: vec![dir.path().join("cuda")],
        ..Search::default()
    };
    assert_eq!(
        search.candidates(),
        [Candidate::File(PathBuf::from("/elsewhere/libnvrtc.so.12"))]
    );
    assert!(lib.is_file());
    // A wrong override is an error naming it, not a fall back to the toolkit.
    let err = search.load().unwrap_err();
    assert_eq!(err.tried.len(), 1);
    assert!(
        err.to_string().contains("/elsewhere/libnvrtc.so.12"),
        "{err}"
    );
}

#[test]
fn toolkit_roots_in_order_lib64_then_targets() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let path = dir.path().join("path");
    let a = touch(&home.join("lib64/libnvrtc.so.12"));
    let b = touch(&home.join("targets/x86_64-linux/lib/libnvrtc.so.13"));
    let c = touch(&home.join("targets/x86_64-linux/lib/libnvrtc.so.12"));
    let d = touch(&path.join("lib64/libnvrtc.so"));
    touch(&path.join("lib/libnvrtc.so.13")); // not a place the toolkit layout uses
    let search = Search {
        preferred_major: 13,
        toolkit_roots: vec![home, path],
        ..Search::default()
    };
    assert_eq!(files(&search.candidates()), [a, b, c, d]);
}

#[test]
fn pip_layouts_follow_the_preferred_major() {
    let dir = tempfile::tempdir().unwrap();
    let sp1 = dir.path().join("sp1");
    let sp2 = dir.path().join("sp2");
    let cu13 = touch(&sp1.join("nvidia/cu13/lib/libnvrtc.so.13"));
    let cu12 = touch(&sp1.join("nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
    let later = touch(&sp2.join("nvidia/cu13/lib/libnvrtc.so.13"));
    let toolkit = touch(&dir.path().join("tk/lib64/libnvrtc.so.12"));
    let mut search = Search {
        preferred_major: 13,
        toolkit_roots: vec![dir.path().join("tk")],
        site_packages: vec![sp1.clone(), sp2.clone()],
        ..Search::default()
    };
    // The toolkit comes before any site-packages; within one, the preferred major first.
    assert_eq!(
        files(&search.candidates()),
        [toolkit.clone(), cu13.clone(), cu12.clone(), later.clone()]
    );
    search.preferred_major = 12;
    assert_eq!(files(&search.candidates()), [toolkit, cu12, cu13, later]);
}

#[test]
fn not_found_lists_every_place_tried() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = touch(&dir.path().join("sp/nvidia/cu13/lib/libnvrtc.so.13"));
    let search = Search {
        preferred_major: 13,
        toolkit_roots: vec![dir.path().join("no-toolkit")],
        site_packages: vec![dir.path().join("sp")],
        ask_python: false,
        ..Search::default()
    };
    // Either a real NVRTC is on the loader path (then a soname loads) or every candidate fails.
    match search.load() {
        Ok(nvrtc) => assert!(nvrtc
            .location()
            .to_string_lossy()
            .starts_with("libnvrtc.so")),
        Err(err) => {
            let text = err.to_string();
            for name in ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so "] {
                assert!(text.contains(name), "{text}");
            }
            assert!(text.contains(&bogus.display().to_string()), "{text}");
            assert!(text.contains("no-toolkit"), "{text}");
            assert!(text.contains("CUDA_CORE_NVRTC_PATH"), "{text}");
        }
    }
}
