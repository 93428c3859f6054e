//! GPU core-dump settings (`cuCoredumpGetAttribute`, `cuCoredumpSetAttribute` and their
//! `Global` forms): the process's and each context's, against the stand-in under both ABIs, and
//! read back on the GPU. No test triggers a dump.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::common::{self, standin};

use cuda_core::coredump::{self, CoredumpFlags, MAX_PATH_BYTES};
use cuda_core::{Context, ContextFlags, Device, Error};

fn invalid_name(result: Result<impl std::fmt::Debug, Error>) -> &'static str {
    match result {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn not_supported(result: Result<impl std::fmt::Debug, Error>) -> (&'static str, u32) {
    match result {
        Err(Error::NotSupported { function, abi, .. }) => (function, abi),
        other => panic!("expected NotSupported, got {other:?}"),
    }
}

/// The process's settings go through the `Global` calls and a context's through the plain ones
/// with that context current, each kept apart: every value set is read back as set, for the
/// process, the primary context and a context of its own.
#[test]
fn process_and_context_settings_round_trip_through_their_own_calls() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "process_and_context_settings_round_trip_through_their_own_calls",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
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

                // The process's: each boolean set both ways and read back. Bugs caught: a
                // bool sent as another size or value, a getter that answers a constant, and
                // the setting sent as another.
                type Get = fn() -> cuda_core::Result<bool>;
                type Set = fn(bool) -> cuda_core::Result<()>;
                let booleans: [(&str, Get, Set); 4] = [
                    (
                        "enable_on_exception",
                        coredump::enable_on_exception,
                        coredump::set_enable_on_exception,
                    ),
                    (
                        "trigger_host",
                        coredump::trigger_host,
                        coredump::set_trigger_host,
                    ),
                    (
                        "lightweight",
                        coredump::lightweight,
                        coredump::set_lightweight,
                    ),
                    (
                        "enable_user_trigger",
                        coredump::enable_user_trigger,
                        coredump::set_enable_user_trigger,
                    ),
                ];
                for (name, get, set) in booleans {
                    for on in [true, false, true] {
                        set(on).unwrap();
                        assert_eq!(
                            standin::last_call("cuCoredumpSetAttributeGlobal"),
                            format!("cuCoredumpSetAttributeGlobal {name}={}", u8::from(on))
                        );
                        assert_eq!(get().unwrap(), on, "{name}");
                        assert_eq!(
                            standin::last_call("cuCoredumpGetAttributeGlobal"),
                            format!("cuCoredumpGetAttributeGlobal {name} -> {}", u8::from(on))
                        );
                    }
                }
                coredump::set_file("/tmp/dumps/process").unwrap();
                coredump::set_pipe("/tmp/dumps/process.pipe").unwrap();
                coredump::set_flags(CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT)
                    .unwrap();
                // Bugs caught: the path or the flags sent under another setting, or read back
                // with their NUL or from another setting.
                assert_eq!(coredump::file().unwrap(), Path::new("/tmp/dumps/process"));
                assert_eq!(
                    coredump::pipe().unwrap(),
                    Path::new("/tmp/dumps/process.pipe")
                );
                assert_eq!(
                    coredump::flags().unwrap(),
                    CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT
                );
                assert_eq!(
                    standin::last_call("cuCoredumpSetAttributeGlobal generation_flags"),
                    "cuCoredumpSetAttributeGlobal generation_flags=0x3f"
                );
                // Bug caught: the process's settings changed through a context's call.
                let log = standin::log();
                assert!(
                    standin::calls("cuCoredumpSetAttribute ").is_empty()
                        && standin::calls("cuCoredumpGetAttribute ").is_empty(),
                    "{log}"
                );

                // A context's: made current for each call, the caller's restored after.
                standin::clear_log();
                let (p, o) = (primary.coredump(), own.coredump());
                p.set_file("/tmp/dumps/primary").unwrap();
                o.set_file("/tmp/dumps/own").unwrap();
                let set = standin::calls("cuCoredumpSetAttribute ");
                // Bugs caught: a context's setting sent to the process (Global), or to the
                // current (primary) context rather than the one asked.
                assert_eq!(set.len(), 2, "{}", standin::log());
                assert_eq!(
                    set[0],
                    "cuCoredumpSetAttribute file=/tmp/dumps/primary in c0"
                );
                assert_eq!(
                    set[1],
                    format!("cuCoredumpSetAttribute file=/tmp/dumps/own in {own_name}")
                );
                assert!(standin::calls("Global").is_empty(), "{}", standin::log());
                assert!(primary.is_current().unwrap(), "{}", standin::log());
                assert_eq!(p.file().unwrap(), Path::new("/tmp/dumps/primary"));
                assert_eq!(o.file().unwrap(), Path::new("/tmp/dumps/own"));
                // Bug caught: a context's setting changing the process's too.
                assert_eq!(coredump::file().unwrap(), Path::new("/tmp/dumps/process"));
                standin::clear_log();

                o.set_lightweight(true).unwrap();
                o.set_trigger_host(false).unwrap();
                o.set_enable_on_exception(true).unwrap();
                p.set_lightweight(false).unwrap();
                // Bug caught: the booleans crossed, or read from the current context.
                assert!(o.lightweight().unwrap());
                assert!(!o.trigger_host().unwrap());
                assert!(o.enable_on_exception().unwrap());
                assert!(!p.lightweight().unwrap());
                o.set_flags(CoredumpFlags::SKIP_GLOBAL_MEMORY).unwrap();
                assert_eq!(o.flags().unwrap(), CoredumpFlags::SKIP_GLOBAL_MEMORY);
                assert_eq!(
                    p.flags().unwrap(),
                    CoredumpFlags::LIGHTWEIGHT | CoredumpFlags::SKIP_ABORT
                );
                // The user trigger and the pipe are read for a context (its own were taken
                // from the process's). Bug caught: read through the process's call.
                assert!(o.enable_user_trigger().unwrap());
                assert_eq!(o.pipe().unwrap(), Path::new("/tmp/dumps/process.pipe"));
                assert_eq!(
                    standin::last_call("cuCoredumpGetAttribute "),
                    format!("cuCoredumpGetAttribute pipe in {own_name} -> /tmp/dumps/process.pipe")
                );
                assert!(standin::calls("Global").is_empty(), "{}", standin::log());
                assert!(primary.is_current().unwrap(), "{}", standin::log());
                assert_eq!(o.context(), &own);
            },
        );
    }
}

/// Paths reach the driver as their bytes and a NUL, the size counting the NUL; they come back
/// from a buffer that holds the longest the driver takes; a longer one, or one with a NUL
/// inside, is refused before the driver, for the process and for a context.
#[test]
fn paths_are_sized_with_their_nul_and_refused_before_the_driver() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "paths_are_sized_with_their_nul_and_refused_before_the_driver",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = Device::new(0).unwrap();
                let context = device.primary_context().unwrap();
                let dump = context.coredump();
                // The longest path the driver takes round-trips. Bugs caught: a size without
                // the NUL, or of the whole buffer (the stand-in refuses both), and a read
                // buffer too small for the longest path.
                let longest = format!("/tmp/{}", "a".repeat(MAX_PATH_BYTES - 5));
                assert_eq!(longest.len(), MAX_PATH_BYTES);
                coredump::set_file(&longest).unwrap();
                assert_eq!(coredump::file().unwrap(), Path::new(&longest));
                dump.set_file(&longest).unwrap();
                assert_eq!(dump.file().unwrap(), Path::new(&longest));
                coredump::set_pipe(&longest).unwrap();
                assert_eq!(coredump::pipe().unwrap(), Path::new(&longest));
                // A short path after it. Bug caught: the NUL (or what follows) kept in the path.
                dump.set_file("/x").unwrap();
                assert_eq!(dump.file().unwrap(), Path::new("/x"));
                // Bytes that are not UTF-8 round-trip. Bug caught: a path converted through a
                // `str` (lossily, or refused).
                let raw = Path::new(OsStr::from_bytes(b"/tmp/dump-\xff\xfe"));
                dump.set_file(raw).unwrap();
                assert_eq!(dump.file().unwrap(), raw);

                standin::clear_log();
                let long = PathBuf::from(format!("{longest}b"));
                let nul = Path::new(OsStr::from_bytes(b"/tmp/a\0b"));
                // Bugs caught: a path past the driver's limit, or one the NUL would cut short,
                // handed to the driver.
                assert_eq!(invalid_name(coredump::set_file(&long)), "path");
                assert_eq!(invalid_name(coredump::set_pipe(&long)), "path");
                assert_eq!(invalid_name(dump.set_file(&long)), "path");
                assert_eq!(invalid_name(coredump::set_file(nul)), "path");
                assert_eq!(invalid_name(coredump::set_pipe(nul)), "path");
                assert_eq!(invalid_name(dump.set_file(nul)), "path");
                assert!(
                    standin::calls("cuCoredump").is_empty(),
                    "{}",
                    standin::log()
                );
                // Nothing changed.
                assert_eq!(dump.file().unwrap(), raw);
                assert_eq!(coredump::file().unwrap(), Path::new(&longest));
            },
        );
    }
}

/// The 13 header's generation flags are refused before the driver through the 12 ABI and
/// reach it through the 13 one; the flags on a driver older than 12.5 are refused before it
/// under either.
#[test]
fn flags_the_header_or_driver_lacks_are_refused_before_the_driver() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "flags_the_header_or_driver_lacks_are_refused_before_the_driver",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let context = Device::new(0).unwrap().primary_context().unwrap();
                let newer = CoredumpFlags::GZIP_COMPRESS | CoredumpFlags::LOG_ONLY;
                standin::clear_log();
                if abi == "12" {
                    // Bug caught: a flag the 12.9 header does not name sent through its table.
                    let (function, used) = not_supported(coredump::set_flags(newer));
                    assert!(function.contains("CUDA 13 header"), "{function}");
                    assert_eq!(used, 12);
                    let (_, used) = not_supported(
                        context
                            .coredump()
                            .set_flags(CoredumpFlags::SKIP_TENSOR_MEMORY),
                    );
                    assert_eq!(used, 12);
                    assert!(
                        standin::calls("cuCoredump").is_empty(),
                        "{}",
                        standin::log()
                    );
                    // The flags both headers name pass.
                    coredump::set_flags(CoredumpFlags::SKIP_CONSTBANK_MEMORY).unwrap();
                } else {
                    // Bugs caught: the 13 header's flags refused, and the top bit (an `int`'s
                    // sign) lost on the way.
                    coredump::set_flags(newer).unwrap();
                    assert_eq!(coredump::flags().unwrap(), newer);
                    assert_eq!(
                        standin::last_call("cuCoredumpSetAttributeGlobal"),
                        "cuCoredumpSetAttributeGlobal generation_flags=0x80000040"
                    );
                    context.coredump().set_flags(newer).unwrap();
                    assert_eq!(context.coredump().flags().unwrap(), newer);
                }
            },
        );
    }
    // A 12.4 driver (which the probe gives the 12 ABI) has the calls, not the flags.
    standin::run(
        module_path!(),
        "flags_the_header_or_driver_lacks_are_refused_before_the_driver",
        &[],
        &[("STANDIN_VERSION", "12040")],
        || {
            let context = Device::new(0).unwrap().primary_context().unwrap();
            standin::clear_log();
            // Bug caught: the flags asked of a driver that answers an unexplained
            // CUDA_ERROR_INVALID_VALUE.
            for result in [
                coredump::flags().map(drop),
                coredump::set_flags(CoredumpFlags::SKIP_ABORT),
                context.coredump().flags().map(drop),
                context.coredump().set_flags(CoredumpFlags::DEFAULT),
            ] {
                let (function, _) = not_supported(result);
                assert!(function.contains("12.5"), "{function}");
            }
            assert!(
                standin::calls("cuCoredump").is_empty(),
                "{}",
                standin::log()
            );
            // The settings older drivers have still work.
            context.coredump().set_lightweight(true).unwrap();
            assert!(context.coredump().lightweight().unwrap());
        },
    );
}

/// A driver without the calls (older than 12.1) answers `NotSupported` naming each.
#[test]
fn a_driver_without_the_calls_names_the_missing_one() {
    standin::run(
        module_path!(),
        "a_driver_without_the_calls_names_the_missing_one",
        &["STANDIN_NO_COREDUMP"],
        &[],
        || {
            let context = Device::new(0).unwrap().primary_context().unwrap();
            // Bug caught: a missing export called, or reported as another call.
            assert_eq!(
                not_supported(coredump::file()).0,
                "cuCoredumpGetAttributeGlobal"
            );
            assert_eq!(
                not_supported(coredump::set_lightweight(true)).0,
                "cuCoredumpSetAttributeGlobal"
            );
            assert_eq!(
                not_supported(context.coredump().enable_on_exception()).0,
                "cuCoredumpGetAttribute"
            );
            assert_eq!(
                not_supported(context.coredump().set_file("/tmp/x")).0,
                "cuCoredumpSetAttribute"
            );
        },
    );
}

/// On the GPU, in a process of its own (the process's setting changes for a moment): a
/// context's file and lightweight flag and the process's dump on exceptions are set and read
/// back, then restored. Nothing faults, so nothing is dumped.
#[test]
#[ignore = "needs a CUDA GPU"]
fn settings_round_trip_on_the_gpu() {
    common::alone(module_path!(), "settings_round_trip_on_the_gpu", || {
        if let Some((name, _)) = std::env::vars().find(|(name, _)| {
            name.starts_with("CUDA_") && name.contains("COREDUMP") && !name.starts_with("CUDA_CORE")
        }) {
            common::not_run(
                "gpu",
                &format!("{name} is set: the driver keeps its core-dump settings from it"),
            );
            return;
        }
        let device = common::device();
        let context = Context::create(device, ContextFlags::default()).unwrap();
        let dump = context.coredump();
        let (file, lightweight) = (dump.file().unwrap(), dump.lightweight().unwrap());
        let enable = coredump::enable_on_exception().unwrap();
        println!("before: file {file:?}, lightweight {lightweight}, process enable {enable}");

        // Bugs caught: the calls made without the context current, sizes the real driver
        // refuses, a path read back with its NUL or cut short.
        let target = std::env::temp_dir().join(format!("cuda-core-dump-{}", std::process::id()));
        dump.set_file(&target).unwrap();
        assert_eq!(dump.file().unwrap(), target);
        dump.set_lightweight(!lightweight).unwrap();
        assert_eq!(dump.lightweight().unwrap(), !lightweight);
        coredump::set_enable_on_exception(!enable).unwrap();
        assert_eq!(coredump::enable_on_exception().unwrap(), !enable);

        dump.set_file(&file).unwrap();
        dump.set_lightweight(lightweight).unwrap();
        coredump::set_enable_on_exception(enable).unwrap();
        assert_eq!(dump.file().unwrap(), file);
        assert_eq!(dump.lightweight().unwrap(), lightweight);
        assert_eq!(coredump::enable_on_exception().unwrap(), enable);
    });
}
