//! Prints the CUDA driver in use, the ABI chosen and why, the NVRTC found, and every device.
//!
//! ```text
//! cargo run --example driver_info
//! CUDA_CORE_DRIVER_ABI=12 cargo run --example driver_info
//! ```
//!
//! Without a driver it prints why in one paragraph and exits with status 1.

use std::process::ExitCode;

use cuda_core::{info::driver_info, Device, Result};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("driver_info: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let info = driver_info()?;
    println!("CUDA driver: {} ({})", info.version, info.library);
    println!("driver ABI:  {} ({})", info.abi, info.abi_choice);
    let (found, declared) = info.functions_loaded;
    println!(
        "functions:   {found} of the {declared} the {} header declares",
        info.abi
    );
    match &info.nvrtc {
        Ok(nvrtc) => println!(
            "NVRTC:       {}.{} ({})",
            nvrtc.version.0,
            nvrtc.version.1,
            nvrtc.location.display()
        ),
        Err(e) => println!("NVRTC:       not found: {e}"),
    }
    match &info.nvjitlink {
        Ok(((major, minor), location)) => {
            println!("nvJitLink:   {major}.{minor} ({})", location.display())
        }
        Err(_) => println!("nvJitLink:   not found (the driver's linker is used; no LTO-IR)"),
    }
    match &info.nvvm {
        Ok(nvvm) => println!(
            "libNVVM:     {}.{}, NVVM IR {}.{} ({})",
            nvvm.version.0,
            nvvm.version.1,
            nvvm.ir_version.0,
            nvvm.ir_version.1,
            nvvm.location.display()
        ),
        Err(_) => println!("libNVVM:     not found (no NVVM IR programs)"),
    }
    info.init.clone()?;
    let devices = Device::all()?;
    println!("devices:     {}", devices.len());
    for device in devices {
        let (major, minor) = device.compute_capability()?;
        println!(
            "  {}: {} (compute capability {major}.{minor})",
            device.ordinal(),
            device.name()?
        );
    }
    Ok(())
}
