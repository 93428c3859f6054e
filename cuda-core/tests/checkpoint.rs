//! Checkpointing another process: a child fills a buffer and waits; this process locks,
//! checkpoints, restores and unlocks it; the child then checks its buffer and runs a kernel.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use crate::common;

use cuda_core::checkpoint::{Process, ProcessState, RestoreOptions};
use cuda_core::{launch, Allocate, CodeType, LaunchConfig, Program, ProgramOptions, StreamOptions};

const N: usize = 1 << 20;

const KERNEL: &str = r#"
extern "C" __global__ void add_one(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1;
}
"#;

/// The child: fills, says "ready", waits for a line, checks, runs the kernel, checks again.
fn child() {
    let device = common::device();
    device.set_current().unwrap();
    let code = Program::new(KERNEL, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    let kernel = code.get_kernel("add_one").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut buffer = device
        .memory_resource()
        .unwrap()
        .allocate(4 * N, &stream)
        .unwrap();
    let values = common::random_u32(7, N);
    buffer.copy_from_host(&values, &stream).unwrap();
    stream.sync().unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(
        buffer.to_vec::<u32>(&stream).unwrap(),
        values,
        "the buffer changed"
    );
    let n = N as u32;
    // SAFETY: N u32s in the buffer.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(N as u64, 256),
            &kernel,
            &[&buffer, &n],
        )
    }
    .unwrap();
    let after = buffer.to_vec::<u32>(&stream).unwrap();
    assert!(after
        .iter()
        .zip(&values)
        .all(|(a, v)| *a == v.wrapping_add(1)));
    println!("child verified");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_process_checkpointed_and_restored_keeps_its_memory_and_runs() {
    let test = common::test_name(
        module_path!(),
        "a_process_checkpointed_and_restored_keeps_its_memory_and_runs",
    );
    if common::child_role(&test).is_some() {
        child();
        return;
    }
    // Seen on the H200: under compute-sanitizer, cuCheckpointProcessGetState answers
    // CUDA_ERROR_NOT_SUPPORTED for the child.
    if let Some(sign) = common::standin::under_sanitizer() {
        return common::not_run(
            "checkpoint",
            &format!("checkpointing, under compute-sanitizer ({sign}), which does not support it"),
        );
    }
    let mut command = common::child_command(&test, "checkpointed");
    command.stdin(Stdio::piped());
    let mut spawned = command.spawn().unwrap();
    let mut stdout = BufReader::new(spawned.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            panic!("the child ended before it was ready:\n{seen}");
        }
        seen.push_str(&line);
        if line.contains("ready") {
            break;
        }
    }
    let _watchdog = common::Watchdog::new(Duration::from_secs(120), "a checkpoint");
    // Before: the child is on the GPU (where NVML's process ids are this namespace's).
    #[cfg(feature = "nvml")]
    let listed_before = common::device()
        .system_device()
        .unwrap()
        .compute_processes()
        .unwrap()
        .iter()
        .any(|p| p.pid == spawned.id());
    let process = Process::new(spawned.id() as i32);
    let step = |what: &str, result: cuda_core::Result<()>| {
        if let Err(e) = result {
            panic!("{what}: {e}");
        }
    };
    assert_eq!(process.state().unwrap(), ProcessState::Running);
    let thread = process.restore_thread_id().unwrap();
    println!("restore thread {thread}");
    step("lock", process.lock(Some(Duration::from_secs(30))));
    assert_eq!(process.state().unwrap(), ProcessState::Locked);
    step("checkpoint", process.checkpoint());
    assert_eq!(process.state().unwrap(), ProcessState::Checkpointed);
    // Checkpointed, its device memory is host memory: the GPU no longer lists it.
    #[cfg(feature = "nvml")]
    {
        let pids = |when: &str| {
            let listed: Vec<u32> = common::device()
                .system_device()
                .unwrap()
                .compute_processes()
                .unwrap()
                .iter()
                .map(|p| p.pid)
                .collect();
            println!(
                "compute processes {when}: {listed:?} (the child: {})",
                spawned.id()
            );
            listed.contains(&spawned.id())
        };
        assert!(
            !pids("while checkpointed"),
            "a checkpointed process still holds the GPU"
        );
    }
    // Restored onto the same GPU named by UUID (the remapping path, with one GPU), where the
    // ABI can say it; the 12.9 header's restore cannot, and is refused before the driver.
    let uuid = common::device().uuid().unwrap();
    let onto_itself = RestoreOptions::default().with_gpu_pairs(vec![(uuid, uuid)]);
    if cuda_core::info::driver_info().unwrap().abi == cuda_core::info::Abi::Cuda13 {
        step(
            "restore onto the same GPU by UUID",
            process.restore(&onto_itself),
        );
    } else {
        let err = process.restore(&onto_itself).unwrap_err();
        assert!(
            matches!(
                &err,
                cuda_core::Error::InvalidArgument {
                    name: "options.gpu_pairs",
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(process.state().unwrap(), ProcessState::Checkpointed);
        step("restore", process.restore(&RestoreOptions::default()));
    }
    assert_eq!(process.state().unwrap(), ProcessState::Locked);
    step("unlock", process.unlock());
    assert_eq!(process.state().unwrap(), ProcessState::Running);
    #[cfg(feature = "nvml")]
    assert!(
        listed_before,
        "the child was not among the compute processes before the lock"
    );
    let mut stdin = spawned.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = spawned.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut spawned.stderr.take().unwrap(), &mut stderr).unwrap();
    println!("{seen}{rest}");
    assert!(status.success(), "{seen}{rest}{stderr}");
    assert!(rest.contains("child verified"), "{rest}{stderr}");
}

#[test]
fn checkpoint_calls_reach_the_driver_or_say_it_lacks_them() {
    // On the stand-in, which exports none of cuCheckpointProcess*: each is NotSupported by name.
    common::standin::run(
        module_path!(),
        "checkpoint_calls_reach_the_driver_or_say_it_lacks_them",
        &[],
        &[],
        || {
            // Another process: the calling one is refused before the driver.
            let process = Process::new(std::os::unix::process::parent_id() as i32);
            let names = [
                ("cuCheckpointProcessGetState", process.state().map(drop)),
                ("cuCheckpointProcessLock", process.lock(None)),
                ("cuCheckpointProcessCheckpoint", process.checkpoint()),
                (
                    "cuCheckpointProcessRestore",
                    process.restore(&RestoreOptions::default()),
                ),
                ("cuCheckpointProcessUnlock", process.unlock()),
                (
                    "cuCheckpointProcessGetRestoreThreadId",
                    process.restore_thread_id().map(drop),
                ),
            ];
            for (name, result) in names {
                match result {
                    Err(cuda_core::Error::NotSupported { function, .. }) => {
                        assert_eq!(function, name)
                    }
                    other => panic!("{name}: {other:?}"),
                }
            }
        },
    );
}
