//! Data parallelism over NCCL: one process per GPU, on this machine or on several, each
//! computing its part of a sum on its GPU, then an all-reduce, after which every rank checks the
//! whole against the CPU's closed form.
//!
//! ```text
//! cargo run --release --features nccl --example nccl_data_parallel             # one rank per GPU
//! torchrun --nproc-per-node 2 target/release/examples/nccl_data_parallel      # a launcher's ranks
//! # two machines of 8 GPUs, the same command on each (--node-rank 1 on the second):
//! torchrun --nnodes 2 --node-rank 0 --nproc-per-node 8 --master-addr 10.0.0.1 \
//!     --master-port 29500 target/release/examples/nccl_data_parallel
//! ```
//!
//! Run with `RANK` and `WORLD_SIZE` set (with `MASTER_ADDR`, `MASTER_PORT` and `LOCAL_RANK`, as
//! torchrun sets them), it is one rank, on device `LOCAL_RANK`; with neither set, it starts one
//! child of itself per GPU of this machine, with those variables set and rank 0 on a free port
//! of loopback. Rank 0 makes the NCCL unique id and serves it over TCP to the others
//! (`cuda_core::nccl::TcpBootstrap`): it listens on `MASTER_PORT` (under torchrun, whose own
//! store holds that port, on the next one; `CUDA_CORE_NCCL_BOOTSTRAP_PORT` overrides both), and
//! each other rank connects to `MASTER_ADDR`, trying again until rank 0 listens, for up to five
//! minutes.
//!
//! Each rank sums, for each of 256 features `k`, `(s * (k + 1)) % 97` over its share of 4M
//! samples `s` (a kernel compiled by NVRTC, one thread per feature, in 64-bit integers so that
//! the sums are exact), all-reduces the 256 sums, and compares them with the total over all
//! samples, which the residues' period gives in closed form.
//!
//! Without a GPU, NCCL or NVRTC it prints `not run: <why>` and exits 0, unless
//! `CUDA_CORE_TEST_REQUIRE` names what is missing (`gpu`, `nccl`, `nvrtc`): then it exits 1.

mod common;

use std::net::TcpListener;
use std::process::{Command, ExitCode};
use std::time::Duration;

use cuda_core::nccl::{self, CommConfig, Communicator, ReduceOp, TcpBootstrap};
use cuda_core::{launch, Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions};

/// Samples, shared out among the ranks.
const SAMPLES: u64 = 1 << 22;
/// Features: one sum each, one thread each.
const FEATURES: u32 = 256;
/// The residues' modulus.
const MODULUS: u64 = 97;

/// Each feature's sum over the samples `begin..end`.
const PARTIAL_SUMS: &str = r#"
extern "C" __global__ void partial_sums(unsigned long long begin, unsigned long long end,
                                        unsigned long long* sums, unsigned features) {
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= features) return;
    unsigned long long sum = 0;
    for (unsigned long long s = begin; s < end; ++s) sum += (s * (k + 1)) % 97;
    sums[k] = sum;
}
"#;

/// The total of feature `k` over all samples: `(s * (k + 1)) % 97` runs through every residue
/// once in each period of 97 samples (97 is prime), unless `k + 1` is a multiple of 97.
fn expected(k: u64) -> u64 {
    let step = (k + 1) % MODULUS;
    if step == 0 {
        return 0;
    }
    let per_period = MODULUS * (MODULUS - 1) / 2;
    let rest: u64 = (0..SAMPLES % MODULUS).map(|t| t * step % MODULUS).sum();
    SAMPLES / MODULUS * per_period + rest
}

/// Says why the example did not run: status 0, or 1 where that was required.
fn not_run(what: &str, why: &str) -> ExitCode {
    common::not_run("nccl_data_parallel", what, why)
}

/// One of the launcher's variables, as a number.
fn number(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok()
}

fn main() -> ExitCode {
    let launched = ["RANK", "WORLD_SIZE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    let outcome = if launched {
        rank_main()
    } else {
        launch_ranks()
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nccl_data_parallel: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What stops the example before it starts anything: no GPU, no NCCL.
fn missing() -> Option<ExitCode> {
    match Device::count() {
        Ok(0) => return Some(not_run("gpu", "no CUDA device")),
        Err(e) => return Some(not_run("gpu", &format!("no CUDA driver or device: {e}"))),
        Ok(_) => {}
    }
    if let Err(e) = nccl::version() {
        return Some(not_run("nccl", &format!("no NCCL: {e}")));
    }
    None
}

/// The launcher: one child of this program per GPU, each told its rank and rank 0's address.
fn launch_ranks() -> Result<ExitCode, Box<dyn std::error::Error>> {
    if let Some(code) = missing() {
        return Ok(code);
    }
    let world = Device::count()?;
    // A free port of loopback for rank 0 (let go here, taken again by rank 0 at once).
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let exe = std::env::current_exe()?;
    let (major, minor, patch) = nccl::version()?;
    println!("NCCL {major}.{minor}.{patch}: {world} ranks, one per GPU");
    let children = (0..world)
        .map(|rank| {
            Command::new(&exe)
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", world.to_string())
                .env("LOCAL_RANK", rank.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .env_remove("CUDA_CORE_NCCL_BOOTSTRAP_PORT")
                .env_remove("TORCHELASTIC_USE_AGENT_STORE")
                .spawn()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut failed = 0;
    for (rank, child) in children.into_iter().enumerate() {
        let status = child.wait_with_output()?.status;
        if !status.success() {
            eprintln!("nccl_data_parallel: rank {rank} failed ({status})");
            failed += 1;
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One rank: its device, the id, the communicator, its part of the sums, the all-reduce, the
/// check.
fn rank_main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    if let Some(code) = missing() {
        return Ok(code);
    }
    // MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE: a missing one is named.
    let bootstrap = TcpBootstrap::from_env()?;
    let (rank, world) = (bootstrap.rank(), bootstrap.world_size());
    let local = number("LOCAL_RANK").unwrap_or(rank);
    let count = Device::count()?;
    if local >= count {
        return Err(format!("rank {rank} is local rank {local}, and this machine has {count} GPUs: NCCL takes one rank per GPU").into());
    }
    let device = Device::new(local)?;
    let code = match Program::new(PARTIAL_SUMS, ProgramOptions::default())
        .with_name("partial_sums.cu")
        .compile(CodeType::Cubin, &[])
    {
        Ok(code) => code,
        Err(e @ cuda_core::Error::NvrtcNotFound { .. }) => {
            return Ok(not_run(
                "nvrtc",
                &format!("no NVRTC to compile the kernel: {e}"),
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let kernel = code.get_kernel("partial_sums")?;

    // Rank 0 makes the id and serves it until every other rank has it; the others fetch it.
    let id = bootstrap.unique_id()?;
    // Non-blocking, so that a rank that never comes is an error after a minute, not a hang.
    let config = CommConfig::default()
        .with_blocking(false)
        .with_timeout(Duration::from_secs(60));
    let comm = Communicator::init_rank_with(&id, world, rank, device, &config)?;
    if let Err(e) = comm.wait_ready(Duration::from_secs(60)) {
        comm.abort()?;
        return Err(format!("rank {rank}: the communicator was not made: {e}").into());
    }

    let stream = device.create_stream(Default::default())?;
    let mut sums = device
        .memory_resource()?
        .allocate(8 * FEATURES as usize, &stream)?;
    let (begin, end) = (
        SAMPLES * rank as u64 / world as u64,
        SAMPLES * (rank as u64 + 1) / world as u64,
    );
    // SAFETY: one thread per feature writes its one u64 of `sums`, which holds FEATURES.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(FEATURES.into(), 128),
            &kernel,
            &[&begin, &end, &sums, &FEATURES],
        )?
    };
    comm.all_reduce_in_place::<u64>(&mut sums, ReduceOp::Sum, &stream)?;
    if let Err(e) = comm.wait(&stream, Duration::from_secs(60)) {
        comm.abort()?;
        return Err(format!("rank {rank}: the all-reduce did not finish: {e}").into());
    }
    let got = sums.to_vec::<u64>(&stream)?;
    let wrong = (0..FEATURES as u64)
        .filter(|&k| got[k as usize] != expected(k))
        .count();
    comm.finalize()?;
    if wrong > 0 {
        return Err(
            format!("rank {rank}: {wrong} of {FEATURES} sums differ from the CPU's").into(),
        );
    }
    println!(
        "rank {rank}/{world} on device {local} ({}): samples {begin}..{end}, {FEATURES} sums \
         all-reduced and checked",
        device.name()?
    );
    Ok(ExitCode::SUCCESS)
}
