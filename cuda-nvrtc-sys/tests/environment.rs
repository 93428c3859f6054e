//! What the search reads from the environment: the Python prefixes (`VIRTUAL_ENV`,
//! `CONDA_PREFIX`), `python3`'s `sys.path`, and the loader's `LD_LIBRARY_PATH`. The body runs in
//! a child process of this binary, which runs it alone, so that changing its environment races
//! with no other test.

use std::path::{Path, PathBuf};

use cuda_nvrtc_sys::{loader_path, Candidate, Discoverable, Discovery, LibrarySpec, Search};

use crate::common::touch;

/// Set in the child, to the temporary directory the parent made.
const CHILD: &str = "CUDA_CORE_ENVIRONMENT_TEST_DIR";
const TEST: &str = "environment::the_search_reads_python_and_the_loader_from_the_environment";

/// A library no machine has: every candidate is refused, so the error lists each one tried.
#[derive(Debug)]
struct Nothing;

const NOTHING: LibrarySpec = LibrarySpec {
    description: "nothing",
    sonames: &[("libcuda_core_nothing.so.1", 1)],
    env_var: "CUDA_CORE_NOTHING_PATH",
    toolkit_dirs: &["lib64"],
    pip_layouts: &[("nothing/lib", "libnothing.so.1", 1)],
    wheel: "nothing",
};

impl Discoverable for Nothing {
    const SPEC: &'static LibrarySpec = &NOTHING;

    fn open(candidate: &Candidate) -> Result<Self, String> {
        Err(format!("{candidate} refused"))
    }
}

/// A `python3` in `dir` that prints `line` and exits with `status`.
fn fake_python(dir: &Path, line: &str, status: i32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("python3");
    std::fs::write(&path, format!("#!/bin/sh\necho '{line}'\nexit {status}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn child(dir: &Path) {
    // The prefixes' lib/python3.* folders, sorted, and nothing else of theirs.
    let search = Search::from_env(13);
    assert_eq!(
        search.site_packages,
        [
            dir.join("venv/lib/python3.11/site-packages"),
            dir.join("venv/lib/python3.12/site-packages"),
            dir.join("conda/lib/python3.10/site-packages"),
        ]
    );
    // python3's sys.path, where it answers; nothing from one that fails.
    std::env::set_var("PATH", dir.join("good"));
    let asked = Search::from_env(13).with_python_paths();
    assert!(
        asked.site_packages.contains(&dir.join("pysp")),
        "{:?}",
        asked.site_packages
    );
    // A load that finds nothing elsewhere asks python3 last, and tries what its path holds.
    let nothing = Discovery::<Nothing> {
        preferred_major: 1,
        ask_python: true,
        ..Discovery::default()
    };
    let err = nothing.load().unwrap_err();
    let from_python = Candidate::File(dir.join("pysp/nothing/lib/libnothing.so.1"));
    assert!(
        err.tried.iter().any(|(c, _)| *c == from_python),
        "python3's site-packages was not tried: {err}"
    );
    std::env::set_var("PATH", dir.join("bad"));
    let asked = Search::from_env(13).with_python_paths();
    assert!(
        !asked
            .site_packages
            .contains(&PathBuf::from("/from/bad/python")),
        "the output of a failed python3 was taken: {:?}",
        asked.site_packages
    );
    // The loader's path: the first directory of LD_LIBRARY_PATH that holds the name.
    let found = dir.join("second/libcuda_core_env_test.so.1");
    assert_eq!(
        loader_path("libcuda_core_env_test.so.1"),
        Some(found.clone())
    );
    assert_eq!(loader_path("libcuda_core_env_test_absent.so.1"), None);
    assert_eq!(
        Candidate::Soname("libcuda_core_env_test.so.1").file(),
        Some(found.clone())
    );
    assert_eq!(Candidate::File(found.clone()).file(), Some(found));
    assert_eq!(Candidate::File(dir.join("first/absent.so")).file(), None);
    // The search describes itself.
    let text = format!("{search:?}");
    assert!(
        text.starts_with("Discovery") && text.contains("preferred_major: 13"),
        "{text}"
    );
    let err = Search {
        explicit: Some(dir.join("first/absent.so")),
        ..Search::default()
    }
    .load()
    .unwrap_err();
    let text = format!("{err:?}");
    assert!(
        text.starts_with("DiscoveryError") && text.contains("absent.so"),
        "{text}"
    );
    println!("environment child done");
}

#[test]
fn the_search_reads_python_and_the_loader_from_the_environment() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for folder in [
        "venv/lib/python3.12",
        "venv/lib/python3.11",
        "venv/lib/perl5",
        "conda/lib/python3.10",
        "first",
    ] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    touch(&root.join("second/libcuda_core_env_test.so.1"));
    touch(&root.join("pysp/nothing/lib/libnothing.so.1"));
    fake_python(
        &root.join("good"),
        &root.join("pysp").display().to_string(),
        0,
    );
    fake_python(&root.join("bad"), "/from/bad/python", 1);
    let library_path = std::env::join_paths([root.join("first"), root.join("second")]).unwrap();
    let (venv, conda) = (root.join("venv"), root.join("conda"));
    crate::common::run_alone(
        TEST,
        &[
            (CHILD, root.as_os_str()),
            ("VIRTUAL_ENV", venv.as_os_str()),
            ("CONDA_PREFIX", conda.as_os_str()),
            ("LD_LIBRARY_PATH", library_path.as_os_str()),
        ],
        "environment child done",
    );
}

/// Set in the child of the working-directory test, to the directory it works in.
const CWD_CHILD: &str = "CUDA_CORE_CWD_TEST_DIR";
const CWD_TEST: &str = "environment::the_working_directory_is_never_searched";

fn cwd_child(dir: &Path) {
    std::env::set_current_dir(dir.join("work")).unwrap();
    // Relative roots and prefixes name folders of the working directory: left out, while the
    // absolute ones beside them are kept (the control).
    let search = Search::from_env(13);
    assert_eq!(
        search.toolkit_roots,
        [dir.join("cuda"), PathBuf::from("/usr/local/cuda")]
    );
    assert!(
        search.site_packages.is_empty(),
        "{:?}",
        search.site_packages
    );
    // PATH holds `.` and an empty entry (both the working directory, where a python3 waits)
    // before the real one: only the absolute directory's python3 runs, in `/`, and the
    // relative entry of its answer is left out.
    let asked = Search::from_env(13).with_python_paths();
    assert_eq!(asked.site_packages, [PathBuf::from("/")]);
    // An override that names a file of the working directory is refused before the loader.
    let err = Search {
        explicit: Some(PathBuf::from("libnvrtc.so.13")),
        ..Search::default()
    }
    .load()
    .unwrap_err();
    assert!(err.to_string().contains("not an absolute path"), "{err}");
    println!("cwd child done");
}

/// Bugs caught: a relative `CUDA_HOME`, `VIRTUAL_ENV` or override searched in the working
/// directory; `python3` run from it (through `.` or an empty entry of `PATH`), or run in it
/// (its `sys.path` would list it); a relative `sys.path` entry kept.
#[test]
fn the_working_directory_is_never_searched() {
    if let Some(dir) = std::env::var_os(CWD_CHILD) {
        cwd_child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let work = root.join("work");
    touch(&work.join("relcuda/lib64/libnvrtc.so.13"));
    touch(&work.join("libnvrtc.so.13"));
    std::fs::create_dir_all(work.join("venv/lib/python3.12/site-packages")).unwrap();
    std::fs::create_dir_all(root.join("cuda")).unwrap();
    // The working directory's python3 would say where it is looked for.
    fake_python(&work, "/from/the/working/directory", 0);
    // The real one prints where it runs, and a relative entry.
    {
        use std::os::unix::fs::PermissionsExt;
        let good = root.join("good");
        std::fs::create_dir_all(&good).unwrap();
        std::fs::write(good.join("python3"), "#!/bin/sh\npwd\necho relative/sp\n").unwrap();
        std::fs::set_permissions(good.join("python3"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let path = format!(".::{}", root.join("good").display());
    let cuda = root.join("cuda");
    crate::common::run_alone(
        CWD_TEST,
        &[
            (CWD_CHILD, root.as_os_str()),
            ("CUDA_HOME", std::ffi::OsStr::new("relcuda")),
            ("CUDA_PATH", cuda.as_os_str()),
            ("VIRTUAL_ENV", std::ffi::OsStr::new("venv")),
            ("CONDA_PREFIX", std::ffi::OsStr::new("")),
            ("PATH", std::ffi::OsStr::new(&path)),
        ],
        "cwd child done",
    );
}
