//! `NvJitLinkSearch::from_env` reads nvJitLink's own override variable. The test runs its body
//! in a child process of this binary with the variable set there: setting it here would race
//! with the other tests' threads, which read the environment.

use cuda_nvrtc_sys::nvjitlink::NvJitLinkSearch;
use cuda_nvrtc_sys::{Candidate, Search};

/// Set in the child, to the file the variable names.
const CHILD: &str = "CUDA_CORE_NVJITLINK_ENV_TEST_FILE";
const TEST: &str = "nvjitlink_env::the_override_variable_is_nvjitlinks_own";

#[test]
fn the_override_variable_is_nvjitlinks_own() {
    if let Some(file) = std::env::var_os(CHILD) {
        let file = std::path::PathBuf::from(file);
        let linker = NvJitLinkSearch::from_env(13);
        let nvrtc = Search::from_env(13);
        assert_eq!(linker.explicit.as_deref(), Some(file.as_path()));
        assert_eq!(linker.candidates(), [Candidate::File(file.clone())]);
        assert_ne!(nvrtc.explicit.as_deref(), Some(file.as_path()));
        // Not found there: the error names the file and the variable.
        let text = linker.load().unwrap_err().to_string();
        assert!(text.contains(&file.display().to_string()), "{text}");
        assert!(text.contains("CUDA_CORE_NVJITLINK_PATH"), "{text}");
        println!("nvjitlink_env child done");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("libnvJitLink.so.13");
    crate::common::run_alone(
        TEST,
        &[
            (CHILD, file.as_os_str()),
            ("CUDA_CORE_NVJITLINK_PATH", file.as_os_str()),
        ],
        "nvjitlink_env child done",
    );
}
