//! A live table of the machine's GPUs, like `nvidia-smi`'s, through NVML: utilization, memory,
//! temperature, power and clocks per device, then the compute processes, once a second.
//!
//! ```text
//! cargo run --example gpu_monitor              # 5 seconds
//! cargo run --example gpu_monitor -- 30        # 30 seconds
//! cargo run --example gpu_monitor -- 3 --json  # one JSON object per sample, for scripts
//! ```
//!
//! A value the GPU does not report is shown as `n/a` (`null` in JSON). Without NVML it prints
//! why in one paragraph and exits with status 1.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use cuda_core::system::{Clock, ClockValue, System, SystemDevice};
use cuda_core::{Error, Result};

fn main() -> ExitCode {
    let mut seconds = 5u64;
    let mut json = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            n => match n.parse() {
                Ok(n) => seconds = n,
                Err(_) => {
                    eprintln!("gpu_monitor: usage: gpu_monitor [SECONDS] [--json]");
                    return ExitCode::from(2);
                }
            },
        }
    }
    match run(seconds.max(1), json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_monitor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One device's sample; `None` where the GPU does not report a value.
struct Sample {
    index: u32,
    name: String,
    uuid: String,
    bus_id: String,
    gpu_util: Option<u32>,
    memory_util: Option<u32>,
    memory_used: Option<u64>,
    memory_total: Option<u64>,
    temperature: Option<u32>,
    power_draw_mw: Option<u32>,
    power_limit_mw: Option<u32>,
    sm_clock: Option<u32>,
    memory_clock: Option<u32>,
    processes: Vec<(u32, Option<u64>)>,
}

/// A value, or `None` where the GPU does not support the query; other errors end the run.
fn supported<T>(result: Result<T>) -> Result<Option<T>> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(Error::SystemNotSupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn sample(index: u32, gpu: &SystemDevice<'_>) -> Result<Sample> {
    let utilization = supported(gpu.utilization())?;
    let memory = supported(gpu.memory())?;
    Ok(Sample {
        index,
        name: gpu.name()?,
        uuid: gpu.uuid()?,
        bus_id: gpu.pci()?.bus_id,
        gpu_util: utilization.map(|u| u.gpu),
        memory_util: utilization.map(|u| u.memory),
        memory_used: memory.map(|m| m.used),
        memory_total: memory.map(|m| m.total),
        temperature: supported(gpu.temperature())?,
        power_draw_mw: supported(gpu.power_draw())?,
        power_limit_mw: supported(gpu.power_limit())?,
        sm_clock: supported(gpu.clock(Clock::Sm, ClockValue::Current))?,
        memory_clock: supported(gpu.clock(Clock::Memory, ClockValue::Current))?,
        processes: supported(gpu.compute_processes())?
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.pid, p.used_memory))
            .collect(),
    })
}

fn run(seconds: u64, json: bool) -> Result<()> {
    let system = System::get()?;
    let driver = system.driver_version()?;
    let start = Instant::now();
    for tick in 0..seconds {
        let samples = system
            .devices()?
            .iter()
            .enumerate()
            .map(|(i, gpu)| sample(i as u32, gpu))
            .collect::<Result<Vec<_>>>()?;
        if json {
            println!("{}", to_json(&driver, &samples));
        } else {
            print!("{}", table(&driver, &samples));
        }
        // Sample once a second, on the second.
        let next = start + Duration::from_secs(tick + 1);
        if tick + 1 < seconds {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    }
    Ok(())
}

fn or_na<T: std::fmt::Display>(value: Option<T>, unit: &str) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v}{unit}"))
}

fn table(driver: &str, samples: &[Sample]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "driver {driver}");
    let _ = writeln!(
        out,
        "{:>3}  {:<22} {:>5} {:>5} {:>19} {:>6} {:>15} {:>9} {:>9}",
        "gpu", "name", "util", "mem%", "memory (MiB)", "temp", "power (W)", "sm MHz", "mem MHz"
    );
    for s in samples {
        let memory = match (s.memory_used, s.memory_total) {
            (Some(used), Some(total)) => format!("{} / {}", used >> 20, total >> 20),
            _ => "n/a".to_owned(),
        };
        let power = match (s.power_draw_mw, s.power_limit_mw) {
            (Some(draw), Some(limit)) => {
                format!("{:.0} / {:.0}", draw as f64 / 1e3, limit as f64 / 1e3)
            }
            (Some(draw), None) => format!("{:.0}", draw as f64 / 1e3),
            _ => "n/a".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:>3}  {:<22} {:>5} {:>5} {:>19} {:>6} {:>15} {:>9} {:>9}",
            s.index,
            s.name,
            or_na(s.gpu_util, "%"),
            or_na(s.memory_util, "%"),
            memory,
            or_na(s.temperature, "C"),
            power,
            or_na(s.sm_clock, ""),
            or_na(s.memory_clock, ""),
        );
    }
    let _ = writeln!(out, "processes:");
    let mut any = false;
    for s in samples {
        for (pid, used) in &s.processes {
            any = true;
            let _ = writeln!(
                out,
                "  gpu {}  pid {pid:>8}  {} MiB",
                s.index,
                used.map_or_else(|| "n/a".to_owned(), |b| (b >> 20).to_string())
            );
        }
    }
    if !any {
        let _ = writeln!(out, "  none");
    }
    out
}

/// A JSON string literal.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn number<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

fn to_json(driver: &str, samples: &[Sample]) -> String {
    let time = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let devices: Vec<String> = samples
        .iter()
        .map(|s| {
            let processes: Vec<String> = s
                .processes
                .iter()
                .map(|(pid, used)| format!("{{\"pid\":{pid},\"used_memory\":{}}}", number(*used)))
                .collect();
            format!(
                "{{\"index\":{},\"name\":{},\"uuid\":{},\"pci_bus_id\":{},\"gpu_util\":{},\
                 \"memory_util\":{},\"memory_used\":{},\"memory_total\":{},\"temperature\":{},\
                 \"power_draw_mw\":{},\"power_limit_mw\":{},\"sm_clock_mhz\":{},\
                 \"memory_clock_mhz\":{},\"processes\":[{}]}}",
                s.index,
                quoted(&s.name),
                quoted(&s.uuid),
                quoted(&s.bus_id),
                number(s.gpu_util),
                number(s.memory_util),
                number(s.memory_used),
                number(s.memory_total),
                number(s.temperature),
                number(s.power_draw_mw),
                number(s.power_limit_mw),
                number(s.sm_clock),
                number(s.memory_clock),
                processes.join(",")
            )
        })
        .collect();
    format!(
        "{{\"time\":{time:.3},\"driver\":{},\"devices\":[{}]}}",
        quoted(driver),
        devices.join(",")
    )
}
