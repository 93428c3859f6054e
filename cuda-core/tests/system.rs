//! The system view (NVML): checked against `nvidia-smi` on the GPU, and without NVML.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::standin;

use cuda_core::system::{
    AddressingMode, AffinityScope, Clock, ClockValue, EventKinds, InforomVersions, System,
    SystemDevice, TemperatureLimit,
};
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
    // Every query is reached through `System::get` (or `Device::system_device`, below), so each
    // answers this same error.
    type Query = fn() -> cuda_core::Result<String>;
    let queries: [(&str, Query); 11] = [
        ("persistence mode", || {
            s(System::get()?.device(0)?.persistence_mode())
        }),
        ("cpu affinity", || {
            s(System::get()?.device(0)?.cpu_affinity(AffinityScope::Node))
        }),
        ("memory affinity", || {
            s(System::get()?
                .device(0)?
                .memory_affinity(AffinityScope::Node))
        }),
        ("inforom", || s(System::get()?.device(0)?.inforom())),
        ("addressing mode", || {
            s(System::get()?.device(0)?.addressing_mode())
        }),
        ("display", || {
            s(System::get()?.device(0)?.display_connected())
        }),
        ("display active", || {
            s(System::get()?.device(0)?.display_active())
        }),
        ("mig count", || {
            s(System::get()?.device(0)?.max_mig_device_count())
        }),
        ("c2c", || s(System::get()?.device(0)?.c2c_enabled())),
        ("supported events", || {
            s(System::get()?.device(0)?.supported_events())
        }),
        ("event set", || {
            let system = System::get()?;
            s(system.events(EventKinds::XID_CRITICAL_ERROR, &system.devices()?))
        }),
    ];
    for (what, query) in queries {
        assert_eq!(query().unwrap_err(), err, "{what}");
    }
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
    note("max mig devices", s(gpu.max_mig_device_count()));
    note("persistence mode", s(gpu.persistence_mode()));
    for scope in [AffinityScope::Node, AffinityScope::Socket] {
        note(
            &format!("cpu affinity {scope:?}"),
            s(gpu.cpu_affinity(scope)),
        );
        note(
            &format!("memory affinity {scope:?}"),
            s(gpu.memory_affinity(scope)),
        );
    }
    note("inforom", s(gpu.inforom()));
    note("addressing mode", s(gpu.addressing_mode()));
    note("display connected", s(gpu.display_connected()));
    note("display active", s(gpu.display_active()));
    note("c2c", s(gpu.c2c_enabled()));
    note("supported events", s(gpu.supported_events()));
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

/// The error of a query the stand-in NVML's GPU 1, or an NVML without the function, does not
/// answer: not supported, naming `query`.
fn unsupported<T: std::fmt::Debug>(result: cuda_core::Result<T>, query: &str) {
    match result {
        Err(Error::SystemNotSupported { query: q }) if q == query => {}
        other => panic!("{query}: {other:?}"),
    }
}

#[test]
fn the_new_queries_read_what_nvml_answers_against_a_stand_in() {
    standin::run_with_nvml(
        module_path!(),
        "the_new_queries_read_what_nvml_answers_against_a_stand_in",
        &[],
        || {
            let system = System::get().unwrap();
            let gpus = system.devices().unwrap();
            assert_eq!(gpus.len(), 2);
            let (gpu, bare) = (&gpus[0], &gpus[1]);
            // The values the stand-in's GPU 0 answers (see libnvml_standin.c).
            assert!(gpu.persistence_mode().unwrap());
            assert_eq!(
                gpu.cpu_affinity(AffinityScope::Node).unwrap(),
                [2, 3, 64, 191]
            );
            assert_eq!(
                gpu.cpu_affinity(AffinityScope::Socket).unwrap(),
                [0, 1, 2, 3, 64, 65, 191]
            );
            assert_eq!(gpu.memory_affinity(AffinityScope::Node).unwrap(), [1, 65]);
            assert_eq!(gpu.memory_affinity(AffinityScope::Socket).unwrap(), [0]);
            let inforom = gpu.inforom().unwrap();
            assert_eq!(inforom.image, "G520.0200.00.05");
            assert_eq!(inforom.oem.as_deref(), Some("1.1"));
            assert_eq!(inforom.ecc.as_deref(), Some("7.0"));
            // An object the board lacks is absent, not an error of the whole.
            assert_eq!(inforom.power, None);
            // The stand-in refuses a struct of another version.
            assert_eq!(gpu.addressing_mode().unwrap(), AddressingMode::Ats);
            assert!(gpu.c2c_enabled().unwrap());
            assert!(gpu.display_connected().unwrap());
            assert!(!gpu.display_active().unwrap());
            assert_eq!(gpu.mig_mode().unwrap(), (true, false));
            assert_eq!(gpu.max_mig_device_count().unwrap(), 3);
            let migs = gpu.mig_devices().unwrap();
            assert_eq!(migs.len(), 1);
            assert_eq!(migs[0].uuid().unwrap(), "MIG-standin-0");
            // The single-bit ECC storm kind, which nvml-wrapper does not name, is left out.
            assert_eq!(
                gpu.supported_events().unwrap(),
                EventKinds::XID_CRITICAL_ERROR | EventKinds::CLOCK_CHANGE
            );
            assert_eq!(
                bare.supported_events().unwrap(),
                EventKinds::XID_CRITICAL_ERROR
            );

            // A GPU that does not support a query: each answers not supported, naming it.
            unsupported(bare.persistence_mode(), "nvmlDeviceGetPersistenceMode");
            unsupported(
                bare.cpu_affinity(AffinityScope::Node),
                "nvmlDeviceGetCpuAffinityWithinScope",
            );
            unsupported(
                bare.memory_affinity(AffinityScope::Socket),
                "nvmlDeviceGetMemoryAffinity",
            );
            unsupported(bare.inforom(), "nvmlDeviceGetInforomImageVersion");
            unsupported(bare.addressing_mode(), "nvmlDeviceGetAddressingMode");
            unsupported(bare.c2c_enabled(), "nvmlDeviceGetC2cModeInfoV");
            unsupported(bare.display_connected(), "nvmlDeviceGetDisplayMode");
            unsupported(bare.display_active(), "nvmlDeviceGetDisplayActive");
            unsupported(bare.max_mig_device_count(), "nvmlDeviceGetMigMode");
            println!("queries checked");
        },
    );
}

#[test]
fn event_sets_register_and_wait_against_a_stand_in() {
    standin::run_with_nvml(
        module_path!(),
        "event_sets_register_and_wait_against_a_stand_in",
        &[],
        || {
            let post =
                |device, kind: EventKinds, data| standin::nvml_post(device, kind.bits(), data);
            let (live, waits) = (standin::nvml_live_sets, standin::nvml_waits);
            let last_timeout = standin::nvml_last_timeout;

            let system = System::get().unwrap();
            let gpus = system.devices().unwrap();
            let xid = EventKinds::XID_CRITICAL_ERROR;
            let clock = EventKinds::CLOCK_CHANGE;

            // Nothing to register for, or on, is refused before NVML.
            let err = system.events(EventKinds::empty(), &gpus).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "kinds", .. }),
                "{err}"
            );
            let err = system.events(xid, &gpus[..0]).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidArgument {
                        name: "devices",
                        ..
                    }
                ),
                "{err}"
            );
            assert_eq!(live(), 0);
            // GPU 1 does not support clock events: the set is refused, and freed.
            unsupported(
                system.events(xid | clock, &gpus),
                "nvmlDeviceRegisterEvents",
            );
            assert_eq!(live(), 0, "a refused set is freed");

            let set = system.events(xid, &gpus).unwrap();
            assert_eq!(set.kinds(), xid);
            assert_eq!(live(), 1);
            // Nothing came: Ok(None) after the timeout, given to NVML in milliseconds.
            let timeout = Duration::from_millis(50);
            let start = Instant::now();
            assert!(set.wait(timeout).unwrap().is_none());
            let took = start.elapsed();
            assert!(took >= timeout, "{took:?}");
            assert!(took < timeout * 10, "{took:?}");
            assert_eq!(last_timeout(), 50);
            // A zero timeout is one millisecond for NVML (no zero, which it does not document
            // as a look).
            assert!(set.wait(Duration::ZERO).unwrap().is_none());
            assert_eq!(last_timeout(), 1);
            // NVML returning early without an event (an interrupted wait) is waited out: the
            // wait still lasts its timeout, over several of NVML's.
            let before = waits();
            standin::nvml_early(3);
            let start = Instant::now();
            assert!(set.wait(timeout).unwrap().is_none());
            let took = start.elapsed();
            assert!(took >= timeout, "{took:?}");
            assert!(waits() - before >= 4, "{} waits", waits() - before);

            // Events on either GPU of the set, with their GPU, kind and XID.
            post(1, xid, 79);
            let event = set.wait(timeout).unwrap().expect("the posted XID");
            assert_eq!(event.device.uuid().unwrap(), "GPU-standin-1");
            assert_eq!(event.kind, xid);
            assert_eq!(event.xid, Some(79));
            // 999 is NVML's unknown XID.
            post(0, xid, 999);
            let event = set.wait(timeout).unwrap().expect("the posted XID");
            assert_eq!(event.device.uuid().unwrap(), "GPU-standin-0");
            assert_eq!(event.xid, None);

            // A set of one GPU and one kind sees only those.
            let clocks = system.events(clock, [&gpus[0]]).unwrap();
            post(0, xid, 13);
            assert!(clocks.wait(Duration::from_millis(5)).unwrap().is_none());
            post(0, clock, 0);
            let event = clocks
                .wait(timeout)
                .unwrap()
                .expect("the posted clock change");
            assert_eq!(event.kind, clock);
            assert_eq!(event.xid, None);
            // The XID left waits for a set registered for it.
            assert_eq!(set.wait(timeout).unwrap().map(|e| e.xid), Some(Some(13)));
            assert_eq!(live(), 2);
            drop(clocks);
            drop(set);
            assert_eq!(live(), 0, "each set is freed when dropped");

            // One GPU's XID wait is such a set, made and freed around one wait.
            post(0, xid, 48);
            assert_eq!(gpus[0].wait_for_xid(timeout).unwrap(), Some(Some(48)));
            assert_eq!(
                gpus[1].wait_for_xid(Duration::from_millis(5)).unwrap(),
                None
            );
            assert_eq!(live(), 0);
            println!("events checked");
        },
    );
}

#[test]
fn without_its_functions_every_new_query_says_which_against_a_stand_in() {
    standin::run_with_nvml(
        module_path!(),
        "without_its_functions_every_new_query_says_which_against_a_stand_in",
        &["STANDIN_NVML_MINIMAL"],
        || {
            // An NVML that lacks every function but loading and naming GPUs: each query
            // answers not supported, naming the function, and none panics.
            let system = System::get().unwrap();
            let gpus = system.devices().unwrap();
            let gpu = &gpus[0];
            assert_eq!(gpu.uuid().unwrap(), "GPU-standin-0");
            unsupported(gpu.persistence_mode(), "nvmlDeviceGetPersistenceMode");
            unsupported(
                gpu.cpu_affinity(AffinityScope::Socket),
                "nvmlDeviceGetCpuAffinityWithinScope",
            );
            unsupported(
                gpu.memory_affinity(AffinityScope::Node),
                "nvmlDeviceGetMemoryAffinity",
            );
            unsupported(gpu.inforom(), "nvmlDeviceGetInforomImageVersion");
            unsupported(gpu.addressing_mode(), "nvmlDeviceGetAddressingMode");
            unsupported(gpu.c2c_enabled(), "nvmlDeviceGetC2cModeInfoV");
            unsupported(gpu.display_connected(), "nvmlDeviceGetDisplayMode");
            unsupported(gpu.display_active(), "nvmlDeviceGetDisplayActive");
            unsupported(gpu.max_mig_device_count(), "nvmlDeviceGetMigMode");
            unsupported(gpu.mig_devices(), "nvmlDeviceGetMigMode");
            unsupported(gpu.supported_events(), "nvmlDeviceGetSupportedEventTypes");
            // A set is never made where it could not be freed (nvml-wrapper's drop would
            // panic without nvmlEventSetFree).
            unsupported(
                system.events(EventKinds::XID_CRITICAL_ERROR, &gpus),
                "nvmlEventSetFree",
            );
            unsupported(
                gpu.wait_for_xid(Duration::from_millis(1)),
                "nvmlEventSetFree",
            );
            println!("missing functions checked");
        },
    );
}

/// `nvidia-smi --query-gpu=pci.bus_id,FIELD`: each GPU's value of the field, by its bus id
/// (upper case); `None`, having said `not run`, where nvidia-smi does not answer or does not
/// know the field (older versions lack newer fields).
fn smi_field(field: &str) -> Option<HashMap<String, String>> {
    let output = match Command::new("nvidia-smi")
        .args([
            &format!("--query-gpu=pci.bus_id,{field}"),
            "--format=csv,noheader,nounits",
        ])
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            common::not_run("gpu", &format!("nvidia-smi did not run: {e}"));
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let text = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        if text.contains("not a valid field") {
            common::not_run(
                "smi-fields",
                &format!("nvidia-smi does not know {field}: {}", text.trim()),
            );
        } else {
            common::not_run("gpu", &format!("nvidia-smi did not answer: {text}"));
        }
        return None;
    }
    Some(
        stdout
            .lines()
            .filter_map(|line| {
                let (bus, value) = line.split_once(',')?;
                Some((bus.trim().to_uppercase(), value.trim().to_owned()))
            })
            .collect(),
    )
}

/// Whether nvidia-smi's value says there is none (`[N/A]`, `N/A`, `[Not Supported]`).
fn smi_none(value: &str) -> bool {
    matches!(value, "N/A" | "[N/A]") || value.starts_with("[Not Supported")
}

/// Whether nvidia-smi's value is a note of its own in brackets that says neither a value nor
/// its absence (the 580 driver's `[Requested functionality has been deprecated]` for
/// `display_mode`): nothing to compare with.
fn smi_note(value: &str) -> bool {
    value.starts_with('[') && !smi_none(value)
}

/// nvidia-smi's on or off.
fn smi_bool(value: &str) -> Option<bool> {
    match value {
        "Enabled" | "Yes" | "On" => Some(true),
        "Disabled" | "No" | "Off" => Some(false),
        _ => None,
    }
}

/// Asserts that a query's answer is nvidia-smi's value for one GPU (letter case aside: `ATS`
/// and `Ats`), or not supported where nvidia-smi has none.
fn agree(what: &str, ours: cuda_core::Result<String>, theirs: &str) {
    match ours {
        Ok(ours) if ours.eq_ignore_ascii_case(theirs) => {}
        Err(Error::SystemNotSupported { .. }) if smi_none(theirs) => {}
        ours => panic!("{what}: ours {ours:?}, nvidia-smi's {theirs:?}"),
    }
}

/// On or off as nvidia-smi prints it.
fn on_off(value: cuda_core::Result<bool>) -> cuda_core::Result<String> {
    value.map(|on| if on { "Enabled" } else { "Disabled" }.to_owned())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_new_queries_agree_with_nvidia_smi() {
    let system = System::get().unwrap();
    let gpus = system.devices().unwrap();
    let bus = |gpu: &SystemDevice| gpu.pci().unwrap().bus_id.to_uppercase();
    type Query = fn(&SystemDevice<'static>) -> cuda_core::Result<String>;
    // Each field, whether nvidia-smi prints it as on or off, and our answer in its form.
    let fields: [(&str, bool, Query); 10] = [
        ("persistence_mode", true, |g| on_off(g.persistence_mode())),
        ("display_mode", true, |g| on_off(g.display_connected())),
        ("display_active", true, |g| on_off(g.display_active())),
        ("mig.mode.current", true, |g| {
            on_off(g.mig_mode().map(|m| m.0))
        }),
        ("mig.mode.pending", true, |g| {
            on_off(g.mig_mode().map(|m| m.1))
        }),
        ("inforom.img", false, |g| g.inforom().map(|v| v.image)),
        ("inforom.oem", false, |g| inforom_object(g, |v| v.oem)),
        ("inforom.ecc", false, |g| inforom_object(g, |v| v.ecc)),
        ("inforom.pwr", false, |g| inforom_object(g, |v| v.power)),
        ("addressing_mode", false, |g| {
            g.addressing_mode().map(|mode| format!("{mode:?}"))
        }),
    ];
    let mut compared = Vec::new();
    for (field, is_on_off, query) in fields {
        let Some(smi) = smi_field(field) else {
            continue;
        };
        for gpu in &gpus {
            let theirs = smi
                .get(&bus(gpu))
                .unwrap_or_else(|| panic!("nvidia-smi lists no GPU at {}: {smi:?}", bus(gpu)));
            let ours = query(gpu);
            println!(
                "{field} of {}: ours {ours:?}, nvidia-smi's {theirs:?}",
                bus(gpu)
            );
            if smi_note(theirs) || is_on_off && smi_bool(theirs).is_none() && !smi_none(theirs) {
                // Newer drivers reword some fields ("Requested functionality has been
                // deprecated", say).
                common::not_run(
                    "smi-fields",
                    &format!("nvidia-smi answers {field} as {theirs:?}, not on or off"),
                );
                continue;
            }
            let theirs = match smi_bool(theirs) {
                Some(on) => {
                    if on {
                        "Enabled"
                    } else {
                        "Disabled"
                    }
                }
                None => theirs.as_str(),
            };
            agree(field, ours, theirs);
            compared.push(field);
        }
    }
    println!("compared: {compared:?}");
    // Where MIG is on, its devices fit in its most; where off, there is no room for any.
    for gpu in &gpus {
        match (gpu.mig_mode(), gpu.max_mig_device_count()) {
            (Ok((true, _)), Ok(most)) => {
                let now = gpu.mig_devices().unwrap().len();
                assert!(most > 0 && now <= most as usize, "{now} of at most {most}");
            }
            (Ok((false, _)), most) => assert_eq!(most.unwrap(), 0),
            (Err(Error::SystemNotSupported { .. }), most) => {
                unsupported(most, "nvmlDeviceGetMigMode")
            }
            other => panic!("{other:?}"),
        }
    }
}

/// An InfoROM object's version for nvidia-smi's field: not supported where the board has no
/// InfoROM or not the object.
fn inforom_object(
    gpu: &SystemDevice,
    object: fn(InforomVersions) -> Option<String>,
) -> cuda_core::Result<String> {
    object(gpu.inforom()?).ok_or(Error::SystemNotSupported {
        query: "nvmlDeviceGetInforomVersion",
    })
}

/// The CPU or node ids of a Linux list (`0-3,8,10-11`).
fn parse_list(list: &str) -> BTreeSet<u32> {
    let mut ids = BTreeSet::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                ids.extend(first.parse::<u32>().unwrap()..=last.parse::<u32>().unwrap())
            }
            None => {
                ids.insert(part.parse::<u32>().unwrap());
            }
        }
    }
    ids
}

#[test]
fn a_linux_list_gives_its_ids() {
    assert_eq!(
        parse_list("0-3,8,10-11\n"),
        BTreeSet::from([0, 1, 2, 3, 8, 10, 11])
    );
    assert!(parse_list("\n").is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_cpu_affinity_is_the_cpus_local_to_the_gpus_pci_device() {
    let system = System::get().unwrap();
    for gpu in system.devices().unwrap() {
        // NVML's `00000000:1B:00.0` is sysfs's `0000:1b:00.0`.
        let bus_id = gpu.pci().unwrap().bus_id;
        let (domain, rest) = bus_id.split_once(':').unwrap();
        let domain = u32::from_str_radix(domain, 16).unwrap();
        let dir = PathBuf::from(format!(
            "/sys/bus/pci/devices/{domain:04x}:{}",
            rest.to_lowercase()
        ));
        let node = gpu.cpu_affinity(AffinityScope::Node).unwrap();
        let socket = gpu.cpu_affinity(AffinityScope::Socket).unwrap();
        let memory = gpu.memory_affinity(AffinityScope::Node).unwrap();
        println!(
            "{bus_id}: CPUs {node:?} in its node, {socket:?} in its socket; memory of nodes \
             {memory:?}"
        );
        assert!(!node.is_empty(), "no CPU near {bus_id}");
        // A node lies within its socket (an affinity read with the other scope fails this
        // only where a socket holds several nodes).
        let in_socket: BTreeSet<u32> = socket.iter().copied().collect();
        assert!(
            node.iter().all(|cpu| in_socket.contains(cpu)),
            "node {node:?} outside socket {socket:?}"
        );
        match std::fs::read_to_string(dir.join("local_cpulist")) {
            Ok(list) => assert_eq!(
                node.iter().copied().collect::<BTreeSet<u32>>(),
                parse_list(&list),
                "NVML's CPUs of {bus_id} against {}/local_cpulist {list:?}",
                dir.display()
            ),
            Err(e) => common::not_run(
                "pci-sysfs",
                &format!("{}/local_cpulist: {e}", dir.display()),
            ),
        }
        // Its memory is its PCI device's NUMA node's, where the kernel gives one (-1: none).
        match std::fs::read_to_string(dir.join("numa_node")) {
            Ok(text) => match text.trim().parse::<i64>() {
                Ok(node) if node >= 0 => assert_eq!(memory, [node as u32], "{bus_id}"),
                _ => println!("{bus_id}: the kernel gives no NUMA node ({text:?})"),
            },
            Err(e) => common::not_run("pci-sysfs", &format!("{}/numa_node: {e}", dir.display())),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_event_wait_answers_none_once_its_timeout_has_passed() {
    let system = System::get().unwrap();
    let gpus = system.devices().unwrap();
    let xid = EventKinds::XID_CRITICAL_ERROR;
    for gpu in &gpus {
        let supported = gpu.supported_events().unwrap();
        println!("{}: {supported:?}", gpu.uuid().unwrap());
        assert!(supported.contains(xid), "{supported:?}");
        // A kind the GPU lacks refuses the set, as documented.
        let lacking = EventKinds::from_bits(EventKinds::all().bits() & !supported.bits()).unwrap();
        if !lacking.is_empty() {
            unsupported(system.events(lacking, [gpu]), "nvmlDeviceRegisterEvents");
        }
    }
    let set = system.events(xid, &gpus).unwrap();
    let timeout = Duration::from_millis(50);
    for attempt in 0.. {
        let start = Instant::now();
        match set.wait(timeout).unwrap() {
            None => {
                let took = start.elapsed();
                println!("no event in {took:?}");
                // Not before the timeout (a timeout lost on the way to NVML, or an early
                // return taken for the end), nor far after it (one taken in other units).
                assert!(took >= timeout, "{took:?}");
                assert!(took < timeout * 10, "{took:?}");
                break;
            }
            // Another test's fault, in the same process, can raise an XID meanwhile.
            Some(event) => {
                println!("an event came: {event:?}");
                assert!(attempt < 5, "an XID on every wait: {event:?}");
            }
        }
    }
}
