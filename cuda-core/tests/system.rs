//! The system view (NVML): checked against `nvidia-smi` on the GPU, and without NVML.

use std::path::PathBuf;
use std::process::Command;

use crate::common;

use cuda_core::system::{Clock, ClockValue, System, TemperatureLimit};
use cuda_core::{Allocate, Error, StreamOptions};

/// The `gpu_monitor` example: beside this test's directory under cargo, or in an `examples/`
/// folder beside the folder of a copied test binary.
fn monitor() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("gpu_monitor");
    if path.is_file() {
        Some(path)
    } else {
        common::not_run("examples", &format!("{} was not built", path.display()));
        None
    }
}

/// `nvidia-smi --query-gpu=FIELDS`, one row of fields per GPU.
fn nvidia_smi(fields: &str) -> Option<Vec<Vec<String>>> {
    let output = match Command::new("nvidia-smi")
        .args([
            &format!("--query-gpu={fields}"),
            "--format=csv,noheader,nounits",
        ])
        .output()
    {
        Ok(output) if output.status.success() => output,
        other => {
            common::not_run("gpu", &format!("nvidia-smi did not answer: {other:?}"));
            return None;
        }
    };
    Some(
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(|l| l.split(',').map(|f| f.trim().to_owned()).collect())
            .collect(),
    )
}

#[test]
fn without_nvml_every_call_names_what_was_tried_and_the_rest_works() {
    let test = common::test_name(
        module_path!(),
        "without_nvml_every_call_names_what_was_tried_and_the_rest_works",
    );
    if common::child_role(&test).is_none() {
        let mut child = common::child_command(&test, "no-nvml");
        child.env("CUDA_CORE_NVML_PATH", "/nowhere/libnvidia-ml.so.1");
        common::wait_child(child.spawn().unwrap(), &test, "no-nvml done");
        return;
    }
    let err = System::get().unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::NvmlNotFound { .. }), "{err}");
    assert!(text.contains("/nowhere/libnvidia-ml.so.1"), "{text}");
    assert!(text.contains("CUDA_CORE_NVML_PATH"), "{text}");
    // The same answer again, not a panic or a retry that differs.
    assert_eq!(System::get().unwrap_err(), err);
    // The rest of the crate does not need NVML.
    match cuda_core::Device::new(0) {
        Ok(device) => {
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let mut buffer = device
                .memory_resource()
                .unwrap()
                .allocate(1024, &stream)
                .unwrap();
            buffer.fill(7u8, &stream).unwrap();
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 7));
            let err = device.system_device().unwrap_err();
            assert!(matches!(err, Error::NvmlNotFound { .. }), "{err}");
        }
        Err(e) => common::not_run("gpu", &format!("the CUDA part of this test: {e}")),
    }
    println!("no-nvml done");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_monitor_agrees_with_nvidia_smi() {
    // In a child process of its own: this process's memory is then only what it holds here,
    // not what the other tests allocate meanwhile.
    let test = common::test_name(module_path!(), "the_monitor_agrees_with_nvidia_smi");
    if common::child_role(&test).is_none() {
        common::wait_child(
            common::spawn_child(&test, "alone"),
            &test,
            "monitor checked",
        );
        return;
    }
    let Some(monitor) = monitor() else { return };
    // Hold memory while both look, so that used memory is not only the driver's.
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let _held = device
        .memory_resource()
        .unwrap()
        .allocate(1 << 30, &stream)
        .unwrap();
    stream.sync().unwrap();
    // nvidia-smi before and after the monitor: device-wide values move with other processes,
    // which run other tests meanwhile. Used memory can fall and rise again between the two
    // looks, so a window in which it moved is sampled again (at most five times); a monitor
    // that reports free for used, or the wrong unit, is outside every window.
    let mut windows = Vec::new();
    let (sample, smi) = loop {
        let Some(smi_before) = nvidia_smi("memory.used") else {
            return;
        };
        let output = Command::new(&monitor)
            .args(["1", "--json"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let Some(smi) = nvidia_smi(
            "name,uuid,pci.bus_id,memory.total,memory.used,temperature.gpu,power.draw,\
             driver_version,power.limit,clocks.mem,clocks.max.sm,utilization.gpu,\
             utilization.memory",
        ) else {
            return;
        };
        let sample: serde_json::Value =
            serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        let devices = sample["devices"].as_array().unwrap();
        assert_eq!(devices.len(), smi.len(), "one row per GPU");
        let inside = devices
            .iter()
            .zip(&smi)
            .zip(&smi_before)
            .all(|((ours, theirs), before)| {
                let used = (ours["memory_used"].as_u64().unwrap() >> 20) as i64;
                let after: i64 = theirs[4].parse().unwrap();
                let before: i64 = before[0].parse().unwrap();
                windows.push(format!(
                    "{used} MiB against {before} before and {after} after"
                ));
                used >= before.min(after) - 256 && used <= before.max(after) + 256
            });
        if inside || windows.len() >= 5 * smi.len() {
            assert!(inside, "used memory outside every window: {windows:?}");
            break (sample, smi);
        }
    };
    println!("monitor: {sample}");
    println!("nvidia-smi: {smi:?}");
    let devices = sample["devices"].as_array().unwrap();
    assert_eq!(sample["driver"], smi[0][7].as_str());
    for (ours, theirs) in devices.iter().zip(&smi) {
        assert_eq!(ours["name"], theirs[0].as_str());
        assert_eq!(ours["uuid"], theirs[1].as_str());
        assert_eq!(ours["pci_bus_id"], theirs[2].as_str());
        let mib = |v: &serde_json::Value| v.as_u64().unwrap() >> 20;
        assert_eq!(
            mib(&ours["memory_total"]),
            theirs[3].parse::<u64>().unwrap()
        );
        let temperature = ours["temperature"].as_i64().unwrap();
        let smi_temperature: i64 = theirs[5].parse().unwrap();
        assert!(
            (temperature - smi_temperature).abs() <= 5,
            "temperature {temperature} against {smi_temperature}"
        );
        let watts = ours["power_draw_mw"].as_f64().unwrap() / 1e3;
        let smi_watts: f64 = theirs[6].parse().unwrap();
        assert!(
            (watts - smi_watts).abs() <= 30.0 + smi_watts * 0.2,
            "power {watts} W against {smi_watts} W"
        );
    }
    for (ours, theirs) in devices.iter().zip(&smi) {
        // The power limit exactly (nvidia-smi in watts), the memory clock within 5%, the SM
        // clock at most its most, utilization as percentages.
        let limit = ours["power_limit_mw"].as_f64().unwrap() / 1e3;
        assert!(
            (limit - theirs[8].parse::<f64>().unwrap()).abs() < 1.0,
            "{limit} W"
        );
        let mem_clock = ours["memory_clock_mhz"].as_f64().unwrap();
        let smi_mem_clock: f64 = theirs[9].parse().unwrap();
        assert!(
            (mem_clock - smi_mem_clock).abs() <= smi_mem_clock * 0.05,
            "{mem_clock} MHz"
        );
        let sm_clock = ours["sm_clock_mhz"].as_u64().unwrap();
        assert!(
            sm_clock > 0 && sm_clock <= theirs[10].parse().unwrap(),
            "{sm_clock} MHz"
        );
        for (key, at) in [("gpu_util", 11), ("memory_util", 12)] {
            assert!(ours[key].as_u64().unwrap() <= 100, "{key}");
            assert!(theirs[at].parse::<u64>().unwrap() <= 100);
        }
    }
    // The compute processes: this one, with the memory nvidia-smi gives it.
    let apps = Command::new("nvidia-smi")
        .args([
            "--query-compute-apps=pid,used_memory",
            "--format=csv,noheader,nounits",
        ])
        .output()
        .unwrap();
    let apps = String::from_utf8_lossy(&apps.stdout);
    println!("nvidia-smi compute apps: {apps:?}");
    let me = std::process::id();
    let smi_mine = apps.lines().find_map(|l| {
        let (pid, used) = l.split_once(',')?;
        (pid.trim().parse::<u32>().ok()? == me).then(|| used.trim().parse::<u64>().ok())?
    });
    let ours_mine = devices[0]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"].as_u64() == Some(u64::from(me)))
        .map(|p| p["used_memory"].as_u64().unwrap() >> 20);
    match (ours_mine, smi_mine) {
        (Some(ours), Some(theirs)) => assert!(
            ours.abs_diff(theirs) <= 64 && ours >= 1024,
            "this process: {ours} MiB against nvidia-smi's {theirs}"
        ),
        (None, None) => common::not_run(
            "host-pids",
            "neither NVML nor nvidia-smi lists this process (a PID namespace)",
        ),
        other => panic!("this process listed by one only: {other:?}"),
    }
    // The table form prints the same devices.
    let table = Command::new(&monitor).arg("1").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    println!("{table}");
    for row in &smi {
        assert!(table.contains(&row[0]), "{table}");
    }
    println!("monitor checked");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_cuda_device_and_its_nvml_device_are_one_gpu() {
    let device = common::device();
    let gpu = device.system_device().unwrap();
    assert_eq!(gpu.uuid().unwrap(), device.uuid().unwrap().to_nvml_string());
    assert_eq!(gpu.cuda_device().unwrap(), Some(device));
    assert_eq!(gpu.name().unwrap(), device.name().unwrap());
    // This process, holding memory, is among the GPU's compute processes.
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let _held = device
        .memory_resource()
        .unwrap()
        .allocate(256 << 20, &stream)
        .unwrap();
    stream.sync().unwrap();
    let processes = gpu.compute_processes().unwrap();
    println!(
        "compute processes: {processes:?} (this process: {})",
        std::process::id()
    );
    let me = processes.iter().find(|p| p.pid == std::process::id());
    match me {
        Some(me) => {
            let used = me.used_memory.expect("NVML reports this process's memory");
            assert!(used >= 256 << 20, "{used} bytes");
        }
        None => {
            // In a PID namespace (a container), NVML reports the host's process ids.
            assert!(!processes.is_empty(), "no compute process at all");
            common::not_run(
                "host-pids",
                "NVML's process ids are not this PID namespace's (a container)",
            );
        }
    }
}

/// Each query: its value, or that it is not supported (any other error fails).
/// A query's value as text.
fn s<T: std::fmt::Debug>(v: cuda_core::Result<T>) -> cuda_core::Result<String> {
    v.map(|v| format!("{v:?}"))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_query_answers_a_value_or_not_supported() {
    let system = System::get().unwrap();
    let mut supported = Vec::new();
    let mut unsupported = Vec::new();
    let mut note = |what: &str, result: cuda_core::Result<String>| match result {
        Ok(v) => supported.push(format!("{what}: {v}")),
        Err(Error::SystemNotSupported { query }) => unsupported.push(format!("{what} ({query})")),
        Err(e) => panic!("{what}: {e}"),
    };
    note("driver version", system.driver_version());
    note("NVML version", system.nvml_version());
    note(
        "CUDA driver version",
        system.cuda_driver_version().map(|v| v.to_string()),
    );
    let count = system.device_count().unwrap();
    assert_eq!(count as usize, system.devices().unwrap().len());
    let gpu = system.device(0).unwrap();
    note("name", gpu.name());
    note("uuid", gpu.uuid());
    note("index", s(gpu.index()));
    note("serial", gpu.serial());
    note("pci", s(gpu.pci()));
    note("memory", s(gpu.memory()));
    note("utilization", s(gpu.utilization()));
    note("encoder utilization", s(gpu.encoder_utilization()));
    note("decoder utilization", s(gpu.decoder_utilization()));
    note("temperature", s(gpu.temperature()));
    for limit in [
        TemperatureLimit::Shutdown,
        TemperatureLimit::Slowdown,
        TemperatureLimit::GpuMax,
        TemperatureLimit::MemoryMax,
    ] {
        note(
            &format!("temperature limit {limit:?}"),
            s(gpu.temperature_limit(limit)),
        );
    }
    note("power draw (mW)", s(gpu.power_draw()));
    note("power limit (mW)", s(gpu.power_limit()));
    note("power limit range (mW)", s(gpu.power_limit_range()));
    for clock in [Clock::Graphics, Clock::Sm, Clock::Memory, Clock::Video] {
        for value in [
            ClockValue::Current,
            ClockValue::Max,
            ClockValue::Application,
        ] {
            note(
                &format!("clock {clock:?} {value:?} (MHz)"),
                s(gpu.clock(clock, value)),
            );
        }
    }
    note("performance", s(gpu.performance()));
    note("fan count", s(gpu.fan_count()));
    let fans = gpu.fan_count().unwrap_or(0);
    for fan in 0..fans {
        note(&format!("fan {fan} speed (%)"), s(gpu.fan_speed(fan)));
    }
    // One past the last fan is refused before NVML, naming the count.
    let err = gpu.fan_speed(fans).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "fan", reason } if reason.contains(&format!("{fans} fan"))),
        "{err}"
    );
    note("pcie link", s(gpu.pcie_link()));
    note("pcie throughput (KB/s)", s(gpu.pcie_throughput()));
    note("ecc errors", s(gpu.ecc_errors()));
    note("mig mode", s(gpu.mig_mode()));
    note("mig devices", s(gpu.mig_devices().map(|d| d.len())));
    note("nvlinks", s(gpu.nvlinks()));
    note("topology to itself", s(gpu.topology_to(&gpu)));
    note("compute processes", s(gpu.compute_processes()));
    note(
        "xid in 100 ms",
        s(gpu.wait_for_xid(std::time::Duration::from_millis(100))),
    );
    println!("supported:\n  {}", supported.join("\n  "));
    println!("not supported:\n  {}", unsupported.join("\n  "));
    // Values that must hold on any GPU.
    let memory = gpu.memory().unwrap();
    assert!(memory.used <= memory.total && memory.free <= memory.total);
    let cuda_total = common::device().total_memory().unwrap() as u64;
    println!(
        "NVML total {} bytes, cuDeviceTotalMem {cuda_total}",
        memory.total
    );
    assert!(
        memory.total.abs_diff(cuda_total) <= 1 << 30,
        "NVML's total {} against CUDA's {cuda_total}",
        memory.total
    );
    let link = gpu.pcie_link().unwrap();
    assert!(link.generation <= link.max_generation && link.width <= link.max_width);
}
