//! The rule for a test that cannot run, written once for every test binary of the workspace:
//! cuda-core's integration tests (`tests/common`) declare it here, and cuda-core's unit tests
//! (`test_support` in `src/lib.rs`) and cuda-nvrtc-sys's tests include this file with `#[path]`.

/// Whether `CUDA_CORE_TEST_REQUIRE` (a comma list of the names CONTRIBUTING.md gives under
/// "Tests that cannot run": `gpu`, `nvrtc-13`, `cc`, ...) names `what`: then a test that cannot
/// run for want of it fails instead of passing empty. `nvrtc` (any NVRTC) is required where a
/// major of it is, and likewise `nvjitlink` and `nvvm`. `CUDA_CORE_REQUIRE_NVRTC=12,13` and
/// `CUDA_CORE_REQUIRE_NVJITLINK=12,13` count as `nvrtc-12,nvrtc-13` and so on.
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
        || (what == "nvrtc" || what == "nvjitlink" || what == "nvvm")
            && names.iter().any(|n| n.starts_with(&format!("{what}-")))
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
