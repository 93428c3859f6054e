//! `NvJitLinkSearch::from_env` reads nvJitLink's own override variable. Alone in its test
//! binary: it is the only test that changes the environment, which other threads may read.

use cuda_nvrtc_sys::nvjitlink::NvJitLinkSearch;
use cuda_nvrtc_sys::{Candidate, Search};

#[test]
fn the_override_variable_is_nvjitlinks_own() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libnvJitLink.so.13");
    std::env::set_var("CUDA_CORE_NVJITLINK_PATH", &file);
    let linker = NvJitLinkSearch::from_env(13);
    let nvrtc = Search::from_env(13);
    std::env::remove_var("CUDA_CORE_NVJITLINK_PATH");
    assert_eq!(linker.explicit.as_deref(), Some(file.as_path()));
    assert_eq!(linker.candidates(), [Candidate::File(file.clone())]);
    assert_ne!(nvrtc.explicit.as_deref(), Some(file.as_path()));
    // Not found there: the error names the file and the variable.
    let text = linker.load().unwrap_err().to_string();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("CUDA_CORE_NVJITLINK_PATH"), "{text}");
}
