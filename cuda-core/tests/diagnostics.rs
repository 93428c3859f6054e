//! What helps a user see into a program: the driver's own log attached to a driver error
//! (`cuLogsRegisterCallback`, drivers 12.9 and newer) and the profiler's capture range
//! (`cuProfilerStart`, `cuProfilerStop`), against the stand-in and on the GPU.

use crate::common;
use crate::common::standin;

use cuda_core::info::driver_info;
use cuda_core::memory::CopyBatch;
use cuda_core::{profiler, Allocate, ContextLimit, Device, Error, StreamOptions};

/// A batch of one copy that the stand-in fails (`STANDIN_BATCH_FAIL`), submitted on this
/// thread: the error it gives.
fn failed_batch(device: Device) -> Error {
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let a = memory.allocate(4096, &stream).unwrap();
    let mut out = [0u8; 16];
    let mut batch = CopyBatch::new(&stream);
    batch.copy_to_host(&a, 0, &mut out[..]).unwrap();
    let err = batch.submit().unwrap_err();
    assert!(matches!(err, Error::Driver { .. }), "{err:?}");
    err
}

#[test]
fn a_driver_error_carries_what_the_driver_logged_about_it() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "a_driver_error_carries_what_the_driver_logged_about_it",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi), ("STANDIN_BATCH_FAIL", "1")],
            || {
                let device = Device::new(0).unwrap();
                let err = failed_batch(device);
                let log = err
                    .driver_log()
                    .expect("the stand-in logs its failure")
                    .to_owned();
                // Bug caught: the callback not registered, or the lines not attached.
                assert!(
                    log.contains("failed as asked (STANDIN_BATCH_FAIL)"),
                    "{log}"
                );
                // Bug caught: only the first line kept.
                assert!(
                    log.contains("Returning 1 (CUDA_ERROR_INVALID_VALUE)"),
                    "{log}"
                );
                assert_eq!(log.lines().count(), 2, "{log}");
                // Bug caught: the message leaves the log out.
                let text = err.to_string();
                assert!(text.contains("the driver's log: ["), "{text}");
                assert!(!text.contains('\n'), "one line: {text}");

                // A second failure carries its own lines, not the first's again. Bug caught:
                // lines never taken, so each error grows with every earlier one.
                let again = failed_batch(device);
                assert_eq!(again.driver_log().unwrap().lines().count(), 2, "{again}");

                // Another thread's failure stays that thread's. Bug caught: one store for the
                // process, so this thread's next error shows the other's lines.
                let other = std::thread::spawn(move || failed_batch(device))
                    .join()
                    .unwrap();
                assert_eq!(other.driver_log().unwrap().lines().count(), 2, "{other}");
                let third = failed_batch(device);
                assert_eq!(third.driver_log().unwrap().lines().count(), 2, "{third}");

                // An error the driver logged nothing for has no log. Bug caught: a stale or
                // empty log attached to every error.
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                standin::set_sync_status(700);
                let sync = stream.sync().unwrap_err();
                standin::set_sync_status(0);
                assert_eq!(sync.driver_log(), None, "{sync}");
                assert!(!sync.to_string().contains("the driver's log"), "{sync}");
            },
        );
    }
}

#[test]
fn the_profiler_calls_run_in_the_devices_context_and_leave_the_callers() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "the_profiler_calls_run_in_the_devices_context_and_leave_the_callers",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = Device::new(0).unwrap();
                let primary = device.primary_context().unwrap();
                standin::clear_log();
                // No context is current on this thread: the call pushes the device's and pops
                // it. Bug caught: the call made without a context (the driver's 201).
                profiler::start(device).unwrap();
                let log = standin::log();
                let lines: Vec<&str> = log.lines().collect();
                let at = lines
                    .iter()
                    .position(|l| l.starts_with("cuProfilerStart in "))
                    .unwrap_or_else(|| panic!("no cuProfilerStart in:\n{log}"));
                assert!(
                    lines[..at]
                        .iter()
                        .any(|l| l.starts_with("cuCtxPushCurrent")),
                    "{log}"
                );
                // Bug caught: the caller's (empty) context not restored.
                assert!(
                    lines[at..].iter().any(|l| l.starts_with("cuCtxPopCurrent")),
                    "{log}"
                );

                // With the device current, the call is made as it is. Bug caught: a push and
                // pop the call does not need.
                device.set_current().unwrap();
                standin::clear_log();
                profiler::stop(device).unwrap();
                let log = standin::log();
                assert_eq!(standin::calls("cuProfilerStop in ").len(), 1, "{log}");
                assert!(standin::calls("cuCtxPushCurrent").is_empty(), "{log}");
                drop(primary);

                // A session stops when dropped, once. Bug caught: a drop that never stops, or
                // an explicit stop followed by a second one at the drop.
                standin::clear_log();
                let session = profiler::Session::start(device).unwrap();
                assert_eq!(session.device(), device);
                assert_eq!(standin::calls("cuProfilerStart").len(), 1);
                assert!(standin::calls("cuProfilerStop").is_empty());
                drop(session);
                assert_eq!(standin::calls("cuProfilerStop").len(), 1);
                standin::clear_log();
                profiler::Session::start(device).unwrap().stop().unwrap();
                assert_eq!(
                    standin::calls("cuProfilerStop").len(),
                    1,
                    "{}",
                    standin::log()
                );
            },
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_real_invalid_value_carries_the_drivers_log() {
    let info = driver_info().unwrap();
    if info.version.0 < 12090 {
        common::not_run(
            "driver-12.9",
            &format!(
                "driver {} has no cuLogsRegisterCallback (12.9 and newer)",
                info.version
            ),
        );
        return;
    }
    let device = common::device();
    // On a thread of its own: the log is kept for the thread whose call failed, so this also
    // shows that the driver calls the callback on that thread.
    let err = std::thread::spawn(move || {
        let context = device.primary_context().unwrap();
        // A stack far past what any GPU allows: the driver refuses it itself (the crate does
        // not check limits).
        context
            .set_limit(ContextLimit::StackSize, usize::MAX / 2)
            .unwrap_err()
    })
    .join()
    .unwrap();
    println!("{} ABI: {err}", info.abi);
    assert!(matches!(err, Error::Driver { .. }), "{err:?}");
    // Bug caught: the callback not registered under this ABI's table, registered on another
    // thread's store, or its lines not attached to the error.
    let log = err
        .driver_log()
        .unwrap_or_else(|| panic!("no driver log on driver {}: {err}", info.version));
    assert!(!log.trim().is_empty(), "{err}");
    assert!(
        err.to_string().contains(log.lines().next().unwrap()),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_profiler_starts_and_stops_on_the_gpu() {
    let device = common::device();
    // Without a profiler attached both succeed and do nothing. Bug caught: the exports not
    // found (NotSupported) or called without a context.
    profiler::start(device).unwrap();
    profiler::stop(device).unwrap();
    let session = profiler::Session::start(device).unwrap();
    session.stop().unwrap();
    // On a thread with no context current (the crate pushes the device's around each call).
    std::thread::spawn(move || drop(profiler::Session::start(device).unwrap()))
        .join()
        .unwrap();
}
