//! Runs the `driver_info` example as a user would: under both ABIs on a GPU machine, and
//! without a driver, where it must fail in one readable paragraph.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The example binary: beside this test's directory under cargo (`target/*/examples`), or in
/// an `examples/` folder beside the folder of a copied test binary.
fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("driver_info");
    if path.is_file() {
        Some(path)
    } else {
        crate::common::not_run("examples", &format!("{} was not built", path.display()));
        None
    }
}

fn run(abi: Option<&str>) -> Option<Output> {
    let mut command = Command::new(example()?);
    command.env_remove("CUDA_CORE_DRIVER_ABI");
    if let Some(abi) = abi {
        command.env("CUDA_CORE_DRIVER_ABI", abi);
    }
    Some(command.output().expect("the example runs"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Lines naming devices, e.g. `  0: NVIDIA H200 (compute capability 9.0)`.
fn device_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("  ")).collect()
}

#[test]
fn without_a_gpu_it_fails_in_one_paragraph_or_reports_the_driver() {
    let Some(out) = run(None) else { return };
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stderr.contains("panicked"), "{stderr}");
    if out.status.success() {
        assert!(stdout.contains("driver ABI:"), "{stdout}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.starts_with("driver_info: "), "{stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one paragraph: {stderr}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn on_the_gpu_both_abis_see_the_same_devices() {
    let Some(auto) = run(None) else { return };
    let Some(forced) = run(Some("12")) else {
        return;
    };
    let (auto_out, forced_out) = (text(&auto.stdout), text(&forced.stdout));
    println!("--- probe's choice\n{auto_out}--- CUDA_CORE_DRIVER_ABI=12\n{forced_out}");
    assert!(auto.status.success(), "{}", text(&auto.stderr));
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    let driver_major: u32 = auto_out
        .lines()
        .find_map(|l| l.strip_prefix("CUDA driver: "))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .expect("a driver version line");
    let expected = if driver_major >= 13 { 13 } else { 12 };
    assert!(
        auto_out.contains(&format!(
            "driver ABI:  CUDA {expected} (picked from the driver version)"
        )),
        "{auto_out}"
    );
    assert!(
        forced_out.contains("driver ABI:  CUDA 12 (forced by CUDA_CORE_DRIVER_ABI)"),
        "{forced_out}"
    );
    let devices = device_lines(&auto_out);
    assert!(!devices.is_empty(), "{auto_out}");
    assert_eq!(devices, device_lines(&forced_out));
    assert!(
        devices.iter().all(|l| l.contains("compute capability")),
        "{auto_out}"
    );
}
