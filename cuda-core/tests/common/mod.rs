//! Helpers shared by the tests.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cuda_core::{Device, Stream};

mod require;
pub mod standin;

pub use self::require::not_run;

/// Names the test (and its role) a child process of [`spawn_child`] runs.
const CHILD: &str = "CUDA_CORE_TEST_CHILD";

/// The harness's name of a test: its module path without this binary's crate name, then the
/// function (`module_path!()` and `"name"` give `sticky_error::name`).
pub fn test_name(module_path: &str, function: &str) -> String {
    let module = module_path.split_once("::").map_or("", |(_, rest)| rest);
    if module.is_empty() {
        function.to_owned()
    } else {
        format!("{module}::{function}")
    }
}

/// The role this process was started in for `test` by [`spawn_child`], if it is such a child.
pub fn child_role(test: &str) -> Option<String> {
    let value = std::env::var(CHILD).ok()?;
    let (name, role) = value.split_once('=')?;
    (name == test).then(|| role.to_owned())
}

/// The command that runs this test binary again on `test` alone, in `role` (see
/// [`child_role`]), with its output piped.
pub fn child_command(test: &str, role: &str) -> Command {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let mut command = Command::new(exe);
    command
        .args(["--exact", test, "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(CHILD, format!("{test}={role}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Starts [`child_command`].
pub fn spawn_child(test: &str, role: &str) -> Child {
    child_command(test, role)
        .spawn()
        .expect("the test binary starts again")
}

/// Waits for a child of [`spawn_child`], shows its output, and asserts that it passed and
/// printed `marker` (which proves the body ran, not an empty filter) or said it did not run
/// what it names (`not run: ...`, which fails the child where `CUDA_CORE_TEST_REQUIRE` names
/// what it lacked). Returns its stdout.
pub fn wait_child(child: Child, test: &str, marker: &str) -> String {
    let output = child.wait_with_output().expect("waiting for the child");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        output.status.success(),
        "{test} failed in its own process ({})",
        output.status
    );
    assert!(
        stdout.contains(marker) || stdout.lines().any(|l| l.starts_with("not run: ")),
        "{test} did not run its body in its own process (no {marker:?} in its output)"
    );
    stdout
}

/// Runs `body` in a process of its own, for a test that needs one (it breaks the process's
/// context for good, counts references that other tests would change, or must make a first
/// load): the test starts this binary again on itself alone, and the child runs `body`. The
/// test passes when the child does.
pub fn alone(module_path: &str, function: &str, body: impl FnOnce()) {
    let test = test_name(module_path, function);
    let marker = format!("alone: {test} done");
    if child_role(&test).is_some() {
        body();
        println!("{marker}");
        return;
    }
    wait_child(spawn_child(&test, "alone"), &test, &marker);
}

/// Green contexts and the default streams kept apart: on the 580 driver, while another thread
/// creates or destroys green contexts, an event recorded on a primary context's default
/// stream can read not-done right after that stream synchronised. Tests that make green
/// contexts hold this shared; the default-stream test holds it alone.
static GREEN_CONTEXTS: RwLock<()> = RwLock::new(());

/// Held while a test makes and uses green contexts.
pub fn green_contexts() -> RwLockReadGuard<'static, ()> {
    GREEN_CONTEXTS.read().unwrap_or_else(|e| e.into_inner())
}

/// Held while a test relies on the default streams, with no green context made meanwhile.
pub fn no_green_contexts() -> RwLockWriteGuard<'static, ()> {
    GREEN_CONTEXTS.write().unwrap_or_else(|e| e.into_inner())
}

/// Held by tests that measure or trim the device's graph memory, which is the whole
/// process's: a trim of one releases what another's finished graph holds (seen under the 12
/// ABI run on the H200: a launched graph's memory read as 0).
pub fn graph_memory() -> std::sync::MutexGuard<'static, ()> {
    static GRAPH_MEMORY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GRAPH_MEMORY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Device 0, whose tests are all `#[ignore = "needs a CUDA GPU"]`.
pub fn device() -> Device {
    Device::new(0).expect("a CUDA device")
}

/// Deterministic pseudo-random values (xorshift64*), different per seed.
pub fn random_u32(seed: u64, n: usize) -> Vec<u32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
        })
        .collect()
}

/// Holds a stream at a host function until released: work queued after it cannot start. A
/// gate never opened opens by itself after a minute (and a test that waits on it meanwhile
/// would fail through its watchdog rather than hang).
pub struct Gate(mpsc::Sender<()>);

impl Gate {
    pub fn close(stream: &Stream) -> Gate {
        Gate::close_for(stream, std::time::Duration::from_secs(60))
    }

    /// A gate that opens by itself only after `limit`: for a test whose pass depends on the
    /// gate staying closed until it is opened (a test that runs slowly among many must not
    /// see it open by itself), with a watchdog longer than that to fail it instead of a hang.
    ///
    /// Only in a process of the test's own (a [`alone`] or stand-in child, or an IPC child):
    /// in the shared test process, a held stream holds up other tests' module loads and
    /// context-wide waits until the gate opens, and a whole run stalls.
    pub fn close_for(stream: &Stream, limit: std::time::Duration) -> Gate {
        assert!(
            std::env::var_os(CHILD).is_some(),
            "a gate closed in the shared test process: run the test in a process of its own \
             (common::alone)"
        );
        let (tx, rx) = mpsc::channel::<()>();
        stream
            .launch_host_func(move || {
                let _ = rx.recv_timeout(limit);
            })
            .expect("cuLaunchHostFunc");
        Gate(tx)
    }

    pub fn open(self) {
        let _ = self.0.send(());
    }
}

/// Ends the whole test run, with a message, if the test that holds it has not finished within
/// its limit: for tests that can hang rather than fail (a kernel that spins at a barrier until
/// every block arrives, a stream held at a host function), so that a hang is a failure with a
/// reason, not a run cut off by its time limit. Dropping it disarms it.
pub struct Watchdog(Option<mpsc::Sender<()>>);

impl Watchdog {
    pub fn new(limit: std::time::Duration, what: &str) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let what = what.to_owned();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                // Straight to the process's stderr: `eprintln!` in a thread a test spawned
                // goes to that test's captured output, which the exit below would discard.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "watchdog: {what} did not finish within {limit:?}; ending the run"
                );
                std::process::exit(101);
            }
        });
        Watchdog(Some(tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// A stream of `device` with the default options.
pub fn stream(device: Device) -> cuda_core::Stream {
    device
        .create_stream(cuda_core::StreamOptions::default())
        .unwrap()
}

/// A shared buffer of `bytes` from `device`'s default resource, on `stream`.
pub fn shared_buffer(
    device: Device,
    stream: &cuda_core::Stream,
    bytes: usize,
) -> std::sync::Arc<cuda_core::Buffer> {
    use cuda_core::Allocate;
    std::sync::Arc::new(
        device
            .memory_resource()
            .unwrap()
            .allocate(bytes, stream)
            .unwrap(),
    )
}

/// The device memory NVML counts for this process, where it tells (not in a PID namespace
/// whose process ids NVML does not know). Unlike the device's free memory, other processes,
/// and other tests of this binary when the caller runs [`alone`], do not move it.
#[cfg(feature = "nvml")]
pub fn own_gpu_memory(device: Device) -> Option<u64> {
    let gpu = device.system_device().ok()?;
    let processes = gpu.compute_processes().ok()?;
    processes
        .iter()
        .find(|p| p.pid == std::process::id())
        .and_then(|p| p.used_memory)
}

/// The device memory this process holds, as NVML counts it; `None` (said as not run, which
/// fails where `CUDA_CORE_TEST_REQUIRE` names `host-pids`) where NVML does not know this
/// process. The device's free memory would not do for a test that runs [`alone`]: the other
/// tests of the binary allocate and free meanwhile (seen on the H200: it rose by 1.7 GB while
/// 24 MiB were mapped).
pub fn own_memory(device: Device) -> Option<usize> {
    #[cfg(feature = "nvml")]
    if let Some(used) = own_gpu_memory(device) {
        return usize::try_from(used).ok();
    }
    let _ = device;
    not_run(
        "host-pids",
        "NVML does not report this process's memory (the nvml feature is off, or its process \
         ids are not this PID namespace's)",
    );
    None
}

/// Whether `fd` is close-on-exec (`O_CLOEXEC` in its `/proc/self/fdinfo` flags, octal).
pub fn close_on_exec(fd: impl std::os::fd::AsRawFd) -> bool {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))
        .expect("the descriptor's fdinfo");
    let flags = info
        .lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .expect("a flags line");
    u32::from_str_radix(flags.trim(), 8).expect("octal flags") & 0o2_000_000 != 0
}
