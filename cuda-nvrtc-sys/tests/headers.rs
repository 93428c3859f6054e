//! The toolkit's headers: where discovery looks (over temporary layouts of a toolkit of each
//! major and of the runtime and CCCL wheels), which major it prefers, where it finds CCCL, and
//! what it says when it finds nothing.

use std::path::{Path, PathBuf};

use cuda_nvrtc_sys::headers::{ToolkitHeaders, ToolkitHeadersSearch};
use cuda_nvrtc_sys::Candidate;

/// An include folder of CUDA `version` (`CUDART_VERSION`), with CCCL in `cccl` where given.
fn include(dir: &Path, version: u32, cccl: Option<&Path>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("cuda_runtime.h"),
        "#include \"cuda_runtime_api.h\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cuda_runtime_api.h"),
        format!("#if !defined(CUDART_VERSION)\n#define CUDART_VERSION  {version}\n#endif\n"),
    )
    .unwrap();
    if let Some(cccl) = cccl {
        std::fs::create_dir_all(cccl.join("cuda/std")).unwrap();
        std::fs::write(cccl.join("cuda/std/type_traits"), "\n").unwrap();
    }
    dir.to_path_buf()
}

fn search(major: u32, roots: &[&Path], site: &[&Path]) -> ToolkitHeadersSearch {
    ToolkitHeadersSearch {
        preferred_major: major,
        toolkit_roots: roots.iter().map(|r| r.to_path_buf()).collect(),
        site_packages: site.iter().map(|s| s.to_path_buf()).collect(),
        ..ToolkitHeadersSearch::default()
    }
}

#[test]
fn each_layout_gives_its_include_and_cccl_folders() {
    let dir = tempfile::tempdir().unwrap();
    // A CUDA 13 toolkit keeps CCCL in include/cccl; a CUDA 12 one in include itself.
    let cuda13 = dir.path().join("cuda-13");
    let inc13 = include(
        &cuda13.join("include"),
        13000,
        Some(&cuda13.join("include/cccl")),
    );
    let cuda12 = dir.path().join("cuda-12");
    let inc12 = include(
        &cuda12.join("include"),
        12090,
        Some(&cuda12.join("include")),
    );
    let found = ToolkitHeaders::find(&search(13, &[&cuda13], &[])).unwrap();
    // Catches the CCCL folder of a CUDA 13 toolkit left out (cooperative_groups.h fails).
    assert_eq!(found.dirs(), [inc13.as_path(), &inc13.join("cccl")]);
    assert_eq!(found.major(), 13);
    // Catches CCCL added twice, or looked for only in include/cccl.
    let found = ToolkitHeaders::find(&search(12, &[&cuda12], &[])).unwrap();
    assert_eq!(found.dirs(), [inc12.as_path()]);
    assert_eq!(found.major(), 12);
    // The wheels: nvidia-cuda-runtime + nvidia-cuda-cccl (13) share nvidia/cu13/include;
    // the -cu12 ones are two folders side by side.
    let site = dir.path().join("site-packages");
    let wheel13 = include(
        &site.join("nvidia/cu13/include"),
        13050,
        Some(&site.join("nvidia/cu13/include/cccl")),
    );
    let wheel12 = include(
        &site.join("nvidia/cuda_runtime/include"),
        12090,
        Some(&site.join("nvidia/cuda_cccl/include")),
    );
    let found = ToolkitHeaders::find(&search(13, &[], &[&site])).unwrap();
    assert_eq!(found.dirs(), [wheel13.as_path(), &wheel13.join("cccl")]);
    // Catches the cu12 CCCL wheel's folder beside the runtime's not looked at.
    let found = ToolkitHeaders::find(&search(12, &[], &[&site])).unwrap();
    assert_eq!(
        found.dirs(),
        [wheel12.as_path(), &site.join("nvidia/cuda_cccl/include")]
    );
}

#[test]
fn the_preferred_major_wins_over_the_order_of_the_places() {
    let dir = tempfile::tempdir().unwrap();
    let cuda12 = dir.path().join("cuda-12");
    let inc12 = include(
        &cuda12.join("include"),
        12090,
        Some(&cuda12.join("include")),
    );
    let site = dir.path().join("site-packages");
    let wheel13 = include(
        &site.join("nvidia/cu13/include"),
        13050,
        Some(&site.join("nvidia/cu13/include/cccl")),
    );
    // Catches the first place taken whatever its major: NVRTC 13 with CUDA 12's headers.
    let found = ToolkitHeaders::find(&search(13, &[&cuda12], &[&site])).unwrap();
    assert_eq!(found.include(), wheel13);
    assert_eq!(
        ToolkitHeaders::find(&search(12, &[&cuda12], &[&site]))
            .unwrap()
            .include(),
        inc12
    );
    // Catches a missing major being an error when another one is there: it is the fallback.
    let found = ToolkitHeaders::find(&search(13, &[&cuda12], &[])).unwrap();
    assert_eq!((found.include(), found.major()), (inc12.as_path(), 12));
    // An explicit folder is taken whatever its major, and the file in it too.
    let explicit = ToolkitHeadersSearch {
        explicit: Some(inc12.clone()),
        ..search(13, &[], &[&site])
    };
    assert_eq!(ToolkitHeaders::find(&explicit).unwrap().include(), inc12);
    let file = Candidate::File(inc12.join("cuda_runtime.h"));
    assert_eq!(ToolkitHeaders::open(&file).unwrap().include(), inc12);
}

#[test]
fn headers_without_cccl_are_refused_and_nothing_found_names_every_place() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site-packages");
    // The runtime wheel alone: its headers include CCCL, which is not there.
    let runtime = include(&site.join("nvidia/cu13/include"), 13050, None);
    let candidate = Candidate::File(runtime.join("cuda_runtime.h"));
    let why = ToolkitHeaders::open(&candidate).unwrap_err();
    // Catches headers without CCCL taken (cooperative_groups.h would then fail to compile),
    // and a refusal that does not say what to install.
    assert!(
        why.contains("CCCL") && why.contains("nvidia-cuda-cccl"),
        "{why}"
    );
    let empty_root = dir.path().join("no-cuda");
    let err = ToolkitHeaders::find(&search(13, &[&empty_root], &[&site])).unwrap_err();
    let text = err.to_string();
    // Catches an error that does not name what was tried, where else it looked, what to
    // install and the variable to set.
    for part in [
        runtime.to_str().unwrap(),
        empty_root.to_str().unwrap(),
        "include,targets/*/include",
        "nvidia/cuda_runtime/include",
        "nvidia-cuda-cccl-cu12",
        "CUDA_CORE_CUDA_INCLUDE_PATH to the include folder",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    // Catches a name handed to the loader, or a relative folder (the working directory's).
    assert!(ToolkitHeaders::open(&Candidate::Soname("cuda_runtime.h")).is_err());
    assert!(ToolkitHeaders::open(&Candidate::File("include".into())).is_err());
    // Catches headers of no known version taken.
    let unversioned = dir.path().join("unversioned");
    include(&unversioned, 13000, Some(&unversioned.join("cccl")));
    std::fs::write(unversioned.join("cuda_runtime_api.h"), "\n").unwrap();
    let why = ToolkitHeaders::open(&Candidate::File(unversioned)).unwrap_err();
    assert!(why.contains("CUDART_VERSION"), "{why}");
}
