//! Helpers of the discovery tests: stand-in files and views of a candidate list.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use cuda_nvrtc_sys::Candidate;

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

/// Whether `CUDA_CORE_TEST_REQUIRE` (a comma list: `nvrtc-12`, `nvrtc-13`, `nvjitlink-12`,
/// `nvjitlink-13`, ...) names `what`: then a test that cannot run for want of it fails instead
/// of passing empty. `CUDA_CORE_REQUIRE_NVRTC=12,13` and `CUDA_CORE_REQUIRE_NVJITLINK=12,13`
/// count as `nvrtc-12,nvrtc-13` and so on.
pub fn required(what: &str) -> bool {
    let mut names: Vec<String> = std::env::var("CUDA_CORE_TEST_REQUIRE")
        .unwrap_or_default()
        .split(',')
        .map(|n| n.trim().to_owned())
        .collect();
    for (variable, prefix) in [
        ("CUDA_CORE_REQUIRE_NVRTC", "nvrtc"),
        ("CUDA_CORE_REQUIRE_NVJITLINK", "nvjitlink"),
    ] {
        for major in std::env::var(variable).unwrap_or_default().split(',') {
            if !major.trim().is_empty() {
                names.push(format!("{prefix}-{}", major.trim()));
            }
        }
    }
    names.iter().any(|n| n == what)
}

/// Says that a test did not run what it names, and why (the line the GPU runner counts); fails
/// when `what` is required.
pub fn not_run(what: &str, why: &str) {
    println!("not run: {why}");
    assert!(
        !required(what),
        "CUDA_CORE_TEST_REQUIRE names {what}, and this test could not run: {why}"
    );
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
