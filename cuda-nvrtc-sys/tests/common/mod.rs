//! Helpers of the discovery tests: stand-in files and views of a candidate list.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cuda_nvrtc_sys::Candidate;

// The rule for a test that cannot run (`CUDA_CORE_TEST_REQUIRE`), cuda-core's tests' file.
#[path = "../../../cuda-core/tests/common/require.rs"]
mod require;

pub use self::require::{not_run, required};

/// Creates an empty stand-in library file (and its directories); returns its path.
pub fn touch(path: &Path) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"not a library").unwrap();
    path.to_path_buf()
}

/// The file candidates, in order.
pub fn files(candidates: &[Candidate]) -> Vec<PathBuf> {
    candidates
        .iter()
        .filter_map(|c| match c {
            Candidate::File(p) => Some(p.clone()),
            Candidate::Soname(_) => None,
        })
        .collect()
}

/// The soname candidates, in order.
pub fn sonames(candidates: &[Candidate]) -> Vec<&'static str> {
    candidates
        .iter()
        .filter_map(|c| match c {
            Candidate::Soname(n) => Some(*n),
            Candidate::File(_) => None,
        })
        .collect()
}

/// Runs `test` of this binary again, alone, in a child process whose environment gets `env`,
/// and asserts that it passed and printed `marker` (which proves its body ran).
pub fn run_alone(test: &str, env: &[(&str, &std::ffi::OsStr)], marker: &str) {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", test, "--nocapture"]);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("the test binary runs again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the child failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(marker), "the child ran nothing:\n{stdout}");
}
