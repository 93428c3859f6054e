//! Contexts of their own (`cuCtxCreate`), cache preferences and scheduling flags of contexts
//! and kernels, and the raw `CUlibrary`, `CUmodule` and `CUfunction` of compiled code (issue
//! 59's rows for code written against the module API).

use crate::common::{self, standin};

use cuda_core::{
    Allocate, CacheConfig, CodeType, Context, ContextFlags, Device, Error, LaunchConfig,
    ObjectCode, Program, ProgramOptions, StreamOptions,
};

fn invalid_name(result: Result<impl std::fmt::Debug, Error>) -> &'static str {
    match result {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// A context of its own is made with its flags, popped at once (the caller's primary context
/// stays current), kept alive by a stream made in it after the context value drops, and
/// destroyed once, when the stream goes.
#[test]
fn an_own_context_is_popped_held_by_its_streams_and_destroyed_once() {
    standin::run(
        module_path!(),
        "an_own_context_is_popped_held_by_its_streams_and_destroyed_once",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            device.set_current().unwrap();
            let primary = device.primary_context().unwrap();
            standin::clear_log();
            let flags = ContextFlags::SCHED_BLOCKING_SYNC | ContextFlags::LMEM_RESIZE_TO_MAX;
            let context = Context::create(device, flags).unwrap();
            let created = standin::last_call("cuCtxCreate");
            // Catches flags sent as other bits.
            assert!(created.contains("flags=0x14 device=0"), "{created}");
            // Catches a creation that leaves the new context current (the driver pushes it).
            assert!(primary.is_current().unwrap(), "{}", standin::log());
            assert!(!context.is_current().unwrap());
            assert!(!context.is_primary() && !context.is_green());
            assert_ne!(context, primary);
            assert_eq!(context.device(), device);
            // Catches flags read from the current (primary) context instead of this one.
            assert_eq!(context.flags().unwrap(), flags);
            assert!(primary.is_current().unwrap());

            let stream = context.create_stream(StreamOptions::default()).unwrap();
            let made = standin::last_call("cuStreamCreate");
            let name = created.rsplit(' ').next().unwrap().to_owned();
            // Catches a stream made in the current (primary) context instead.
            assert!(made.contains(&format!("in {name}")), "{made}");
            drop(context);
            // Catches a context destroyed under a stream made in it.
            assert!(
                standin::calls("cuCtxDestroy").is_empty(),
                "{}",
                standin::log()
            );
            assert_eq!(stream.context().device(), device);
            stream.sync().unwrap();
            drop(stream);
            // Catches a leak, and a double destroy.
            assert_eq!(
                standin::calls("cuCtxDestroy"),
                vec![format!("cuCtxDestroy {name}")]
            );
            assert!(primary.is_current().unwrap());
        },
    );
}

/// Flags naming two scheduling policies are refused before the driver, by `create` and by
/// `set_flags`; `set_flags` replaces the flags of the context it is called on, with that
/// context current for the call only.
#[test]
fn context_flags_are_checked_and_set_on_their_own_context() {
    standin::run(
        module_path!(),
        "context_flags_are_checked_and_set_on_their_own_context",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            device.set_current().unwrap();
            let primary = device.primary_context().unwrap();
            standin::clear_log();
            let two = ContextFlags::SCHED_SPIN | ContextFlags::SCHED_YIELD;
            // Catches two policies handed to the driver.
            assert_eq!(invalid_name(Context::create(device, two)), "flags");
            assert_eq!(invalid_name(primary.set_flags(two)), "flags");
            assert!(standin::calls("cuCtx").is_empty(), "{}", standin::log());

            let own = Context::create(device, ContextFlags::SCHED_AUTO).unwrap();
            own.set_flags(ContextFlags::SCHED_SPIN).unwrap();
            // Catches flags set on the caller's context rather than this one.
            assert_eq!(own.flags().unwrap().scheduling(), ContextFlags::SCHED_SPIN);
            assert_eq!(primary.flags().unwrap(), ContextFlags::SCHED_AUTO);
            assert!(primary.is_current().unwrap(), "{}", standin::log());
            primary.set_flags(ContextFlags::SCHED_YIELD).unwrap();
            assert_eq!(primary.flags().unwrap(), ContextFlags::SCHED_YIELD);
            assert_eq!(own.flags().unwrap(), ContextFlags::SCHED_SPIN);
        },
    );
}

type KernelCacheConfig = unsafe extern "C" fn(*mut std::ffi::c_void, i32) -> i32;

/// Cache preferences are kept per context and per kernel and device, and read back as set.
#[test]
fn cache_preferences_are_kept_per_context_and_per_kernel_device() {
    standin::run(
        module_path!(),
        "cache_preferences_are_kept_per_context_and_per_kernel_device",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            device.set_current().unwrap();
            let primary = device.primary_context().unwrap();
            let own = Context::create(device, ContextFlags::default()).unwrap();
            primary.set_cache_config(CacheConfig::PreferShared).unwrap();
            own.set_cache_config(CacheConfig::PreferL1).unwrap();
            // Catches the preference set on, or read from, the current context, and one code
            // sent for another.
            assert_eq!(primary.cache_config().unwrap(), CacheConfig::PreferShared);
            assert_eq!(own.cache_config().unwrap(), CacheConfig::PreferL1);
            own.set_cache_config(CacheConfig::PreferEqual).unwrap();
            assert_eq!(own.cache_config().unwrap(), CacheConfig::PreferEqual);
            assert!(primary.is_current().unwrap());

            let code = ObjectCode::from_cubin(standin::cubin());
            let kernel = code.get_kernel("k1").unwrap();
            let second = Device::new(1).unwrap();
            kernel
                .set_cache_config(second, CacheConfig::PreferL1)
                .unwrap();
            let lib = libloading_cache_config();
            // Catches the preference set for another device than the one named.
            // SAFETY: the stand-in's hook reads the kernel object's preference.
            unsafe {
                assert_eq!(lib(kernel.as_raw(), 1), 2);
                assert_eq!(lib(kernel.as_raw(), 0), 0);
            }
            // A device that does not exist is refused before the driver.
            let missing = Device::new(7);
            assert!(missing.is_err());
        },
    );
}

fn libloading_cache_config() -> KernelCacheConfig {
    // SAFETY: the stand-in is this process's libcuda.so.1, already loaded.
    let library: &'static libloading::Library = Box::leak(Box::new(
        unsafe { libloading::Library::new("libcuda.so.1") }.unwrap(),
    ));
    // SAFETY: the stand-in's function of this type.
    *unsafe { library.get::<KernelCacheConfig>(b"standin_kernel_cache_config\0") }.unwrap()
}

/// `as_raw` loads the code once and hands out the same `CUlibrary`; `as_raw_module` asks the
/// module of the context given (with it current for the call only), one per context; a
/// kernel's `CUfunction` of an own context is asked in that context.
#[test]
fn raw_library_module_and_function_are_of_the_context_given() {
    standin::run(
        module_path!(),
        "raw_library_module_and_function_are_of_the_context_given",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            device.set_current().unwrap();
            let primary = device.primary_context().unwrap();
            let own = Context::create(device, ContextFlags::default()).unwrap();
            let own_name = standin::last_call("cuCtxCreate")
                .rsplit(' ')
                .next()
                .unwrap()
                .to_owned();
            standin::clear_log();
            let code = ObjectCode::from_cubin(standin::cubin());
            let library = code.as_raw().unwrap();
            assert!(!library.is_null());
            // Catches a load per call (and a handle that changes).
            assert_eq!(code.as_raw().unwrap(), library);
            assert_eq!(standin::calls("cuLibraryLoadData").len(), 1);

            let in_primary = code.as_raw_module(&primary).unwrap();
            let in_own = code.as_raw_module(&own).unwrap();
            // Catches the module asked in the current context for both.
            assert_ne!(in_primary, in_own);
            assert!(standin::last_call("cuLibraryGetModule").contains(&format!("in {own_name}")));
            assert!(primary.is_current().unwrap(), "{}", standin::log());

            let kernel = code.get_kernel("k1").unwrap();
            standin::clear_log();
            assert!(!kernel.as_raw_function(&own).unwrap().is_null());
            // Catches the function asked without the context current.
            let log = standin::log();
            assert!(
                log.contains(&format!("cuCtxPushCurrent {own_name}")),
                "{log}"
            );
            assert!(!kernel.as_raw_function(&primary).unwrap().is_null());

            // Code that cannot be loaded alone has no library.
            let lto = ObjectCode::from_ltoir(vec![1, 2, 3]);
            assert!(lto.as_raw().is_err());
        },
    );
}

const FLAG_KERNEL: &str = r#"
extern "C" __global__ void set_flag(unsigned* flag, unsigned value) { *flag = value; }
"#;

fn compile(device: Device) -> ObjectCode {
    device.set_current().unwrap();
    Program::new(FLAG_KERNEL, ProgramOptions::default())
        .compile(CodeType::Cubin, &[])
        .unwrap()
}

/// On the GPU: a context of its own runs a kernel on its stream (the flag it writes reads
/// back), keeps its flags and cache preference, hands out a module other than the primary
/// context's, and leaves the primary context current throughout.
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_own_context_runs_work_and_keeps_its_settings_on_the_gpu() {
    let device = common::device();
    let code = compile(device);
    let primary = device.primary_context().unwrap();
    let flags = ContextFlags::SCHED_BLOCKING_SYNC;
    let own = Context::create(device, flags).unwrap();
    // Catches a creation that leaves the new context current.
    assert!(primary.is_current().unwrap());
    // Catches flags lost or sent as other bits (the driver may add MAP_HOST).
    assert_eq!(own.flags().unwrap().scheduling(), flags);

    let stream = own.create_stream(StreamOptions::default()).unwrap();
    let mut flag = device
        .memory_resource()
        .unwrap()
        .allocate(4, &stream)
        .unwrap();
    flag.fill(0u32, &stream).unwrap();
    let kernel = code.get_kernel("set_flag").unwrap();
    let config = LaunchConfig::new([1, 1, 1], [1, 1, 1]);
    // SAFETY: `flag` holds one unsigned int.
    unsafe { cuda_core::launch(&stream, &config, &kernel, &[&flag, &0x5eedu32]) }.unwrap();
    // Catches a launch that did not run in the own context's stream.
    assert_eq!(flag.to_vec::<u32>(&stream).unwrap(), vec![0x5eed]);

    own.set_cache_config(CacheConfig::PreferShared).unwrap();
    assert_eq!(own.cache_config().unwrap(), CacheConfig::PreferShared);
    kernel
        .set_cache_config(device, CacheConfig::PreferL1)
        .unwrap();
    own.set_flags(ContextFlags::SCHED_SPIN).unwrap();
    assert_eq!(own.flags().unwrap().scheduling(), ContextFlags::SCHED_SPIN);
    // The primary context's preference is its own.
    primary.set_cache_config(CacheConfig::PreferNone).unwrap();
    assert_eq!(own.cache_config().unwrap(), CacheConfig::PreferShared);

    let library = code.as_raw().unwrap();
    assert!(!library.is_null());
    let in_primary = code.as_raw_module(&primary).unwrap();
    let in_own = code.as_raw_module(&own).unwrap();
    // Catches a module asked in the wrong context (the driver has one per context).
    assert!(!in_primary.is_null() && !in_own.is_null());
    assert_ne!(in_primary, in_own);
    assert_ne!(
        kernel.as_raw_function(&primary).unwrap(),
        kernel.as_raw_function(&own).unwrap()
    );
    assert!(primary.is_current().unwrap());
    drop(flag);
    drop(own);
    // The stream still holds its context: work on it still runs.
    stream.sync().unwrap();
}
