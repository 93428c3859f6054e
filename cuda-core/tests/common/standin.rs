//! The stand-in driver (`tests/standin/libcuda_standin.c`) for tests that run cuda-core without
//! a GPU: compiled with the C compiler at run time, and loaded in a child process of this test
//! binary, which finds it first as `libcuda.so.1` on `LD_LIBRARY_PATH`. It logs every call;
//! [`log`] reads the log back.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use super::{child_command, child_role, not_run, test_name, wait_child};

/// Runs `body` in a child process against the stand-in built with `defines` (C macros) and the
/// run-time `settings` (environment variables, see the C file). Without a C compiler the test
/// says it did not run, and fails where `CUDA_CORE_TEST_REQUIRE` names `cc`.
pub fn run(
    module_path: &str,
    function: &str,
    defines: &[&str],
    settings: &[(&str, &str)],
    body: impl FnOnce(),
) {
    let test = test_name(module_path, function);
    // One test may run several stand-ins: the role names which this call's child is.
    let role = format!("stand-in {defines:?} {settings:?}");
    let marker = format!("stand-in: {test} done");
    if let Some(running) = child_role(&test) {
        if running == role {
            body();
            println!("{marker}");
        }
        return;
    }
    let Some(mut child) = child(&test, &role, defines) else {
        return;
    };
    for (name, value) in settings {
        child.env(name, value);
    }
    wait_child(child.spawn().expect("a child starts"), &test, &marker);
}

/// The command that runs `test` again in a child process, in `role`, against the stand-in
/// built with `defines` (see [`run`]), for the caller to add to and start; `None`, said as not
/// run, under compute-sanitizer or without a C compiler.
pub fn child(test: &str, role: &str, defines: &[&str]) -> Option<std::process::Command> {
    if let Some(sign) = under_sanitizer() {
        // compute-sanitizer (`--target-processes all`) follows child processes through its
        // own exec hooks, whatever environment the child is given, and its injection needs
        // the real driver: the stand-in child would crash in it. These tests run without it.
        not_run(
            "standin",
            &format!(
                "the stand-in driver cannot run under compute-sanitizer ({sign}); run it \
                 without the sanitizer"
            ),
        );
        return None;
    }
    let dir = build(defines)?;
    let mut child = child_command(test, role);
    let mut path = vec![dir];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.extend(std::env::split_paths(&old));
    }
    child
        .env(
            "LD_LIBRARY_PATH",
            std::env::join_paths(path).expect("a library path"),
        )
        .env_remove("CUDA_CORE_DRIVER_ABI");
    Some(child)
}

/// What shows that this process runs under compute-sanitizer, if it does: its variables
/// (`NV_SANITIZER*`, `COMPUTE_SANITIZER*`), or its injection libraries named in
/// `CUDA_INJECTION64_PATH`, `NVTX_INJECTION64_PATH` or `LD_PRELOAD`.
pub fn under_sanitizer() -> Option<String> {
    for (name, value) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let value = value.to_string_lossy();
        if name.starts_with("NV_SANITIZER") || name.starts_with("COMPUTE_SANITIZER") {
            return Some(format!("{name} is set"));
        }
        let injection = [
            "CUDA_INJECTION64_PATH",
            "NVTX_INJECTION64_PATH",
            "LD_PRELOAD",
        ];
        if injection.contains(&name.as_ref())
            && (value.contains("sanitizer") || value.contains("InjectionTarget"))
        {
            return Some(format!("{name}={value}"));
        }
    }
    None
}

/// Runs `body` as [`run`] does (the stand-in driver built without defines), with the stand-in
/// NCCL (`tests/standin/libnccl_standin.c`, built with `nccl_defines`) as the process's NCCL:
/// `CUDA_CORE_NCCL_PATH` names it. It writes its calls into the driver's log (`## nccl...`).
pub fn run_with_nccl(
    module_path: &str,
    function: &str,
    nccl_defines: &[&str],
    settings: &[(&str, &str)],
    body: impl FnOnce(),
) {
    let test = test_name(module_path, function);
    // The child finds the library its parent built where the parent said.
    let path = if child_role(&test).is_some() {
        std::env::var("CUDA_CORE_NCCL_PATH").unwrap_or_default()
    } else {
        let Some(dir) = build_library(
            "libnccl_standin.c",
            include_str!("../standin/libnccl_standin.c"),
            "libnccl.so.2",
            nccl_defines,
            &["-ldl"],
        ) else {
            return;
        };
        dir.join("libnccl.so.2").display().to_string()
    };
    let mut all = settings.to_vec();
    all.push(("CUDA_CORE_NCCL_PATH", &path));
    run(module_path, function, &[], &all, body);
}

/// Runs `body` as [`run`] does (the stand-in driver built without defines), with the stand-in
/// NVML (`tests/standin/libnvml_standin.c`, built with `nvml_defines`) as the process's NVML:
/// `CUDA_CORE_NVML_PATH` names it. [`nvml_hook`] reaches its hooks.
pub fn run_with_nvml(
    module_path: &str,
    function: &str,
    nvml_defines: &[&str],
    body: impl FnOnce(),
) {
    let test = test_name(module_path, function);
    // The child finds the library its parent built where the parent said.
    let path = if child_role(&test).is_some() {
        std::env::var("CUDA_CORE_NVML_PATH").unwrap_or_default()
    } else {
        let Some(dir) = build_library(
            "libnvml_standin.c",
            include_str!("../standin/libnvml_standin.c"),
            "libnvidia-ml.so.1",
            nvml_defines,
            &[],
        ) else {
            return;
        };
        dir.join("libnvidia-ml.so.1").display().to_string()
    };
    run(
        module_path,
        function,
        &[],
        &[("CUDA_CORE_NVML_PATH", &path)],
        body,
    );
}

/// A hook of the stand-in NVML this process loaded (see [`run_with_nvml`]).
fn nvml_hook<T: Copy>(name: &[u8]) -> T {
    let path = std::env::var("CUDA_CORE_NVML_PATH").expect("the stand-in NVML's path");
    // SAFETY: the stand-in NVML is this process's NVML, loaded already by cuda-core from this
    // path; opening it again takes a reference to the same library, kept for the process.
    let library: &'static libloading::Library = Box::leak(Box::new(
        unsafe { libloading::Library::new(&path) }.expect("the stand-in NVML is loaded"),
    ));
    // SAFETY: the caller names a function of the stand-in with type `T`.
    *unsafe { library.get::<T>(name) }.expect("a stand-in NVML function")
}

/// Has the stand-in NVML deliver an event of `kinds` bits with `data` on its GPU `device`, to
/// the next wait of a set registered for it.
pub fn nvml_post(device: i32, kinds: u64, data: u64) {
    let post: unsafe extern "C" fn(i32, u64, u64) = nvml_hook(b"standin_nvml_post\0");
    // SAFETY: the stand-in NVML's hook, taking plain values.
    unsafe { post(device, kinds, data) }
}

/// Makes the stand-in NVML's next `n` event waits return their timeout at once, as a wait a
/// signal interrupts does.
pub fn nvml_early(n: i32) {
    let early: unsafe extern "C" fn(i32) = nvml_hook(b"standin_nvml_early\0");
    // SAFETY: the stand-in NVML's hook, taking an `int`.
    unsafe { early(n) }
}

/// The stand-in NVML's event sets made and not freed.
pub fn nvml_live_sets() -> i32 {
    let live: unsafe extern "C" fn() -> i32 = nvml_hook(b"standin_nvml_live_sets\0");
    // SAFETY: the stand-in NVML's hook, without arguments.
    unsafe { live() }
}

/// The stand-in NVML's event waits so far.
pub fn nvml_waits() -> i32 {
    let waits: unsafe extern "C" fn() -> i32 = nvml_hook(b"standin_nvml_waits\0");
    // SAFETY: the stand-in NVML's hook, without arguments.
    unsafe { waits() }
}

/// The timeout, in milliseconds, the stand-in NVML's last event wait was given.
pub fn nvml_last_timeout() -> u32 {
    let last: unsafe extern "C" fn() -> u32 = nvml_hook(b"standin_nvml_last_timeout\0");
    // SAFETY: the stand-in NVML's hook, without arguments.
    unsafe { last() }
}

/// The directory holding the stand-in built with `defines`, built once per set of defines.
fn build(defines: &[&str]) -> Option<PathBuf> {
    build_library(
        "libcuda_standin.c",
        include_str!("../standin/libcuda_standin.c"),
        "libcuda.so.1",
        defines,
        &["-lm"],
    )
}

/// The directory holding `output`, built from `text` (saved as `source`) with `defines` and
/// linked with `libs`: built once per library and set of defines. `None`, said as not run,
/// without a C compiler.
pub fn build_library(
    source: &str,
    text: &str,
    output: &str,
    defines: &[&str],
    libs: &[&str],
) -> Option<PathBuf> {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    static ROOT: OnceLock<tempfile::TempDir> = OnceLock::new();
    let tag = format!("{output}:{}", defines.join(","));
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = built.get_or_insert_with(HashMap::new).get(&tag) {
        return Some(dir.clone());
    }
    let root = ROOT.get_or_init(|| tempfile::tempdir().expect("a temporary directory"));
    let dir = root.path().join(format!(
        "standin-{}",
        built.as_ref().map_or(0, HashMap::len)
    ));
    std::fs::create_dir_all(&dir).expect("the stand-in's directory");
    let source = dir.join(source);
    std::fs::write(&source, text).expect("the stand-in's source");
    let target = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let compiler = match cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .opt_level(0)
        .debug(false)
        .host(&target)
        .target(&target)
        .try_get_compiler()
    {
        Ok(compiler) => compiler,
        Err(e) => {
            not_run(
                "cc",
                &format!("no C compiler for the stand-in driver ({e})"),
            );
            return None;
        }
    };
    let mut command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-pthread", "-o"])
        .arg(dir.join(output))
        .arg(&source)
        .args(libs);
    for define in defines {
        command.arg(format!("-D{define}"));
    }
    match command.status() {
        Ok(status) => assert!(status.success(), "compiling the stand-in: {command:?}"),
        Err(e) => {
            not_run("cc", &format!("the C compiler does not run ({e})"));
            return None;
        }
    }
    built
        .get_or_insert_with(HashMap::new)
        .insert(tag, dir.clone());
    Some(dir)
}

fn symbol<T: Copy>(name: &[u8]) -> T {
    // SAFETY: the stand-in is this process's libcuda.so.1, loaded already by cuda-core; opening
    // it again takes a reference to the same library, kept for the process.
    let library: &'static libloading::Library = Box::leak(Box::new(
        unsafe { libloading::Library::new("libcuda.so.1") }.expect("the stand-in is loaded"),
    ));
    // SAFETY: the caller names a function of the stand-in with type `T`.
    *unsafe { library.get::<T>(name) }.expect("a stand-in function")
}

/// A new context of `device` that is not its primary one, as another library would make it.
pub fn foreign_context(device: i32) -> *mut std::ffi::c_void {
    let make: unsafe extern "C" fn(i32) -> *mut std::ffi::c_void =
        symbol(b"standin_make_context\0");
    // SAFETY: the stand-in's hook, which makes a context object and returns it.
    unsafe { make(device) }
}

/// The driver calls logged so far, one per line.
pub fn log() -> String {
    let get: unsafe extern "C" fn() -> *const c_char = symbol(b"standin_log\0");
    // SAFETY: the stand-in's log is a NUL-terminated static buffer.
    unsafe { CStr::from_ptr(get()) }
        .to_string_lossy()
        .into_owned()
}

/// Empties the log.
pub fn clear_log() {
    let clear: unsafe extern "C" fn() = symbol(b"standin_log_clear\0");
    // SAFETY: the stand-in's own function, without arguments.
    unsafe { clear() }
}

/// Makes every `cuStreamSynchronize` from now on answer `code` (0: succeed again), as work
/// that failed on the device makes it answer.
pub fn set_sync_status(code: i32) {
    let set: unsafe extern "C" fn(i32) = symbol(b"standin_set_sync_status\0");
    // SAFETY: the stand-in's own function, taking an `int`.
    unsafe { set(code) }
}

/// Makes the next `n` `cuGraphExecKernelNodeSetParams` calls fail (`CUDA_ERROR_INVALID_VALUE`).
pub fn fail_node_sets(n: i32) {
    let set: unsafe extern "C" fn(i32) = symbol(b"standin_fail_node_sets\0");
    // SAFETY: the stand-in's own function, taking an `int`.
    unsafe { set(n) }
}

/// The logged calls that contain `needle`.
pub fn calls(needle: &str) -> Vec<String> {
    log()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_owned)
        .collect()
}

/// The smallest image the stand-in loads and cuda-core's checks pass: an ELF64 header with no
/// sections or segments (the stand-in's kernels are `k0`, `k1`, `k4` and `k16`).
pub fn cubin() -> Vec<u8> {
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2; // ELFCLASS64
    elf[5] = 1; // little-endian
    elf[6] = 1; // EV_CURRENT
    elf[16] = 2; // ET_EXEC
    elf[18] = 190; // EM_CUDA
    elf[20] = 1; // EV_CURRENT
    elf[52] = 64; // e_ehsize
    elf[54] = 56; // e_phentsize
    elf[58] = 64; // e_shentsize
    elf
}

/// The last logged call that contains `needle`.
pub fn last_call(needle: &str) -> String {
    let log = log();
    calls(needle)
        .pop()
        .unwrap_or_else(|| panic!("no call with {needle:?} in:\n{log}"))
}

/// A stand-in function looked up once per process (the model's test calls these per
/// operation, and [`symbol`] opens the library on each call).
macro_rules! cached {
    ($name:literal: $ty:ty) => {{
        static F: OnceLock<usize> = OnceLock::new();
        let address = *F.get_or_init(|| {
            let f: $ty = symbol($name);
            f as usize
        });
        // SAFETY: the address is that of the stand-in's function of this type, kept loaded.
        unsafe { std::mem::transmute::<usize, $ty>(address) }
    }};
}

/// Writes `## text` into the log, from the calling thread (the model's operation markers).
pub fn mark(text: &str) {
    let mark = cached!(b"standin_mark\0": unsafe extern "C" fn(*const c_char));
    let text = std::ffi::CString::new(text).expect("a marker without NUL");
    // SAFETY: a NUL-terminated string, read during the call.
    unsafe { mark(text.as_ptr()) }
}

/// Whether a line was left out of the log since it was last cleared (the log was full).
pub fn log_full() -> bool {
    let full = cached!(b"standin_log_full\0": unsafe extern "C" fn() -> i32);
    // SAFETY: the stand-in's own function, without arguments.
    unsafe { full() != 0 }
}

/// What lives in the strict model (`STANDIN_MODEL=1`): 0 streams, 1 events, 2 graphs, 3
/// executable graphs, 4 allocations, 5 user objects, 6 queued host work, 7 open captures.
pub fn model_live(what: i32) -> i32 {
    let live = cached!(b"standin_model_live\0": unsafe extern "C" fn(i32) -> i32);
    // SAFETY: the stand-in's own function, taking an `int`.
    unsafe { live(what) }
}

/// What ran in the strict model: 0 host functions, 1 host nodes, 2 user object destructors.
pub fn model_count(what: i32) -> u64 {
    let count = cached!(b"standin_model_count\0": unsafe extern "C" fn(i32) -> u64);
    // SAFETY: the stand-in's own function, taking an `int`.
    unsafe { count(what) }
}

/// Whether the stream or event at `handle` has work pending or is in a capture, in the strict
/// model.
pub fn model_busy(handle: usize) -> bool {
    let busy = cached!(b"standin_model_busy\0": unsafe extern "C" fn(usize) -> i32);
    // SAFETY: `handle` is a live stream or event of the stand-in (the caller's).
    unsafe { busy(handle) != 0 }
}

/// The id of the capture the stream at `handle` takes part in, in the strict model (0: none;
/// the default streams, at handles 0 to 2, never capture).
pub fn model_capture(handle: usize) -> i32 {
    let capture = cached!(b"standin_model_capture\0": unsafe extern "C" fn(usize) -> i32);
    // SAFETY: `handle` is a default stream's or a live stream of the stand-in (the caller's).
    unsafe { capture(handle) }
}

/// Has `hook` called with the call's name at the entry of each call of the strict model,
/// before the stand-in takes a lock of its own (the model's scheduler interleaves its threads
/// there).
pub fn set_yield(hook: unsafe extern "C" fn(*const c_char)) {
    let set =
        cached!(b"standin_set_yield\0": unsafe extern "C" fn(unsafe extern "C" fn(*const c_char)));
    // SAFETY: the stand-in's own function, taking a function of this type.
    unsafe { set(hook) }
}

/// Makes `pool` device `device`'s current pool through the stand-in's `cuDeviceSetMemPool`
/// directly, as another library would.
pub fn set_device_pool_elsewhere(device: i32, pool: *mut std::ffi::c_void) {
    let set =
        cached!(b"cuDeviceSetMemPool\0": unsafe extern "C" fn(i32, *mut std::ffi::c_void) -> i32);
    // SAFETY: the stand-in's function; it only records the pointer.
    assert_eq!(unsafe { set(device, pool) }, 0);
}

/// Launches the stand-in's kernel `k1`, whose one parameter is `size` bytes
/// (`STANDIN_PARAM_SIZE`), with each case's argument in a child of its own: an accepted case
/// must launch, any other must be refused naming the parameter's size (`InvalidArgument` of
/// `args`). `function` is the calling test's name.
pub fn launch_with_parameter_sizes(
    module_path: &str,
    function: &str,
    cases: &[(usize, &dyn cuda_core::KernelArg, bool)],
) {
    use cuda_core::{launch, Device, Error, LaunchConfig, ObjectCode, StreamOptions};
    for (index, &(size, arg, accepted)) in cases.iter().enumerate() {
        run(
            module_path,
            function,
            &[],
            &[
                ("STANDIN_PARAM_SIZE", &size.to_string()),
                ("STANDIN_TEST_CASE", &index.to_string()),
            ],
            || {
                let device = Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let code = ObjectCode::from_cubin(cubin());
                let k1 = code.get_kernel("k1").unwrap();
                let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                // SAFETY: the stand-in runs nothing.
                let launched = unsafe { launch(&stream, &config, &k1, &[arg]) };
                match (launched, accepted) {
                    (Ok(()), true) => {}
                    (
                        Err(Error::InvalidArgument {
                            name: "args",
                            reason,
                        }),
                        false,
                    ) => assert!(
                        reason.contains(&format!("parameter is {size}")),
                        "case {index}: {reason}"
                    ),
                    (other, _) => {
                        panic!("case {index} ({size} bytes, accepted {accepted}): {other:?}")
                    }
                }
            },
        );
    }
}
