//! nvJitLink discovery order over temporary directory layouts (no nvJitLink needed: the files
//! are empty stand-ins, and only where discovery looks is checked here), and what loading
//! something that is not nvJitLink gives.

use std::path::PathBuf;

use crate::common::{files, sonames, touch};

use cuda_nvrtc_sys::nvjitlink::{NvJitLink, NvJitLinkSearch, NvJitLinkTable};
use cuda_nvrtc_sys::Candidate;

#[test]
fn sonames_come_first_preferred_major_leading() {
    let search13 = NvJitLinkSearch {
        preferred_major: 13,
        ..NvJitLinkSearch::default()
    };
    let c = search13.candidates();
    assert_eq!(
        sonames(&c),
        [
            "libnvJitLink.so.13",
            "libnvJitLink.so.12",
            "libnvJitLink.so"
        ]
    );
    assert!(matches!(c[0], Candidate::Soname(_)));
    let search12 = NvJitLinkSearch {
        preferred_major: 12,
        ..NvJitLinkSearch::default()
    };
    assert_eq!(
        sonames(&search12.candidates()),
        [
            "libnvJitLink.so.12",
            "libnvJitLink.so.13",
            "libnvJitLink.so"
        ]
    );
}

#[test]
fn explicit_path_is_the_only_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let lib = touch(&dir.path().join("cuda/lib64/libnvJitLink.so.13"));
    let search = NvJitLinkSearch {
        preferred_major: 13,
        explicit: Some(PathBuf::from("/elsewhere/libnvJitLink.so.12")),
        toolkit_roots: vec![dir.path().join("cuda")],
        ..NvJitLinkSearch::default()
    };
    assert_eq!(
        search.candidates(),
        [Candidate::File(PathBuf::from(
            "/elsewhere/libnvJitLink.so.12"
        ))]
    );
    assert!(lib.is_file());
    // A wrong override is an error naming it, not a fall back to the toolkit.
    let err = search.load().unwrap_err();
    assert_eq!(err.tried.len(), 1);
    let text = err.to_string();
    assert!(text.contains("/elsewhere/libnvJitLink.so.12"), "{text}");
    assert!(text.contains("CUDA_CORE_NVJITLINK_PATH"), "{text}");
}

#[test]
fn toolkit_roots_in_order_lib64_then_targets() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let path = dir.path().join("path");
    let a = touch(&home.join("lib64/libnvJitLink.so.12"));
    let b = touch(&home.join("targets/x86_64-linux/lib/libnvJitLink.so.13"));
    let c = touch(&home.join("targets/x86_64-linux/lib/libnvJitLink.so.12"));
    let d = touch(&path.join("lib64/libnvJitLink.so"));
    touch(&path.join("lib/libnvJitLink.so.13")); // not a place the toolkit layout uses
    touch(&home.join("lib64/libnvrtc.so.13")); // another library
    touch(&home.join("lib64/libnvjitlink.so.13")); // not the library's spelling
    let search = NvJitLinkSearch {
        preferred_major: 13,
        toolkit_roots: vec![home, path],
        ..NvJitLinkSearch::default()
    };
    assert_eq!(files(&search.candidates()), [a, b, c, d]);
}

#[test]
fn pip_layouts_follow_the_preferred_major() {
    let dir = tempfile::tempdir().unwrap();
    let sp1 = dir.path().join("sp1");
    let sp2 = dir.path().join("sp2");
    let cu13 = touch(&sp1.join("nvidia/cu13/lib/libnvJitLink.so.13"));
    let cu12 = touch(&sp1.join("nvidia/nvjitlink/lib/libnvJitLink.so.12"));
    let later = touch(&sp2.join("nvidia/cu13/lib/libnvJitLink.so.13"));
    // NVRTC's files beside them, and NVRTC 12's folder, are not nvJitLink's.
    touch(&sp1.join("nvidia/cu13/lib/libnvrtc.so.13"));
    touch(&sp2.join("nvidia/cuda_nvrtc/lib/libnvJitLink.so.12"));
    let toolkit = touch(&dir.path().join("tk/lib64/libnvJitLink.so.12"));
    let mut search = NvJitLinkSearch {
        preferred_major: 13,
        toolkit_roots: vec![dir.path().join("tk")],
        site_packages: vec![sp1.clone(), sp2.clone()],
        ..NvJitLinkSearch::default()
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
    let bogus13 = touch(&dir.path().join("sp/nvidia/cu13/lib/libnvJitLink.so.13"));
    let bogus12 = touch(
        &dir.path()
            .join("sp/nvidia/nvjitlink/lib/libnvJitLink.so.12"),
    );
    let search = NvJitLinkSearch {
        preferred_major: 13,
        toolkit_roots: vec![dir.path().join("no-toolkit")],
        site_packages: vec![dir.path().join("sp")],
        ask_python: false,
        ..NvJitLinkSearch::default()
    };
    // Either a real nvJitLink is on the loader path (then a soname loads) or every candidate
    // fails.
    match search.load() {
        Ok(linker) => assert!(linker
            .location()
            .to_string_lossy()
            .starts_with("libnvJitLink.so")),
        Err(err) => {
            let text = err.to_string();
            assert!(text.starts_with("nvJitLink (libnvJitLink.so.13 or .12) was not found"));
            for name in [
                "libnvJitLink.so.13",
                "libnvJitLink.so.12",
                "libnvJitLink.so ",
            ] {
                assert!(text.contains(name), "{text}");
            }
            assert_eq!(err.tried.len(), 5, "{text}");
            for bogus in [&bogus13, &bogus12] {
                assert!(text.contains(&bogus.display().to_string()), "{text}");
            }
            assert!(text.contains("no-toolkit"), "{text}");
            assert!(text.contains("nvidia/nvjitlink/lib"), "{text}");
            assert!(text.contains("pip install nvidia-nvjitlink"), "{text}");
            assert!(text.contains("CUDA_CORE_NVJITLINK_PATH"), "{text}");
        }
    }
}

#[test]
fn another_library_is_refused_without_a_panic() {
    // libc is loaded in every process and exports no nvJitLink name.
    let err = NvJitLink::open(&Candidate::Soname("libc.so.6")).unwrap_err();
    assert!(err.contains("not nvJitLink"), "{err}");
    // SAFETY: only looked up, never called; libc stays loaded for the whole process.
    let libc = unsafe { libloading::Library::new("libc.so.6") }.unwrap();
    for major in [13, 12, 0] {
        // SAFETY: as above.
        let table = unsafe { NvJitLinkTable::load(&libc, major) };
        for symbol in table.symbols() {
            assert_eq!((symbol.export, symbol.address), (None, None), "{symbol:?}");
        }
    }
}

#[test]
fn names_per_major() {
    let field = |name: &str| {
        NvJitLinkTable::FIELDS
            .iter()
            .position(|f| *f == name)
            .unwrap()
    };
    let n13 = NvJitLinkTable::export_names(13);
    let n12 = NvJitLinkTable::export_names(12);
    let other = NvJitLinkTable::export_names(14);
    let create = field("nvJitLinkCreate");
    assert_eq!(n13[create].first(), Some(&"__nvJitLinkCreate_13_5"));
    assert_eq!(n13[create].last(), Some(&"__nvJitLinkCreate_13_0"));
    assert_eq!(n12[create].first(), Some(&"__nvJitLinkCreate_12_9"));
    assert_eq!(n12[create].last(), Some(&"__nvJitLinkCreate_12_0"));
    assert!(other[create].is_empty());
    let ltoir = field("nvJitLinkGetLinkedLTOIR");
    assert_eq!(n13[ltoir].first(), Some(&"__nvJitLinkGetLinkedLTOIR_13_5"));
    assert!(
        n12[ltoir].is_empty(),
        "the 12.9 header has no LTO-IR getter"
    );
    let version = field("nvJitLinkVersion");
    for names in [n13, n12, other] {
        assert_eq!(names[version], ["nvJitLinkVersion"]);
    }
    assert_eq!(NvJitLinkTable::MAJORS, [(13, 5), (12, 9)]);
}

#[test]
fn a_loaded_linker_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<NvJitLink>();
    send_sync::<NvJitLinkTable>();
}
