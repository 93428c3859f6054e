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
