//! The probe's decisions against a stand-in driver library (CPU), and both tables against the
//! real driver (GPU, ignored without one).

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::api::Driver;
use super::load::{self as probe, choose_abi};
use crate::error::{DriverCode, Error};
use crate::info::types::{Abi, AbiChoice, DriverVersion};

/// Compiles the stand-in driver's probe build (`tests/standin/libcuda_standin.c` with
/// `-DSTANDIN_PROBE`) with the given defines into a shared library, once per set of defines.
/// `None`, with the reason printed, where no C compiler runs (the GPU machine may lack one); a
/// compiler that runs but fails is a test failure.
fn fake_driver(defines: &[(&str, &str)]) -> Option<PathBuf> {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    // Tests run in parallel: one builds a library while another would load it half-written.
    static BUILDING: Mutex<()> = Mutex::new(());
    let _building = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = DIR.get_or_init(|| tempfile::tempdir().expect("temporary directory"));
    let tag: String = defines.iter().map(|(k, v)| format!("_{k}{v}")).collect();
    let out = dir.path().join(format!("libfakecuda{tag}.so"));
    if out.is_file() {
        return Some(out);
    }
    let source = dir.path().join(format!("fake{tag}.c"));
    std::fs::write(
        &source,
        include_str!("../../tests/standin/libcuda_standin.c"),
    )
    .expect("write the stand-in source");
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
            crate::test_support::not_run(
                "cc",
                &format!("no C compiler for the stand-in driver ({e})"),
            );
            return None;
        }
    };
    let mut command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-DSTANDIN_PROBE", "-o"])
        .arg(&out)
        .arg(&source);
    for (name, value) in defines {
        command.arg(format!("-D{name}={value}"));
    }
    match command.status() {
        Ok(status) => {
            assert!(
                status.success(),
                "compiling the stand-in driver: {command:?}"
            );
            Some(out)
        }
        Err(e) => {
            crate::test_support::not_run("cc", &format!("the C compiler does not run ({e})"));
            None
        }
    }
}

fn load_fake(
    version: &str,
    forced: Option<&str>,
) -> Option<crate::error::Result<super::load::Loaded>> {
    let path = fake_driver(&[("FAKE_VERSION", version)])?;
    Some(probe::load(&[path.to_str().unwrap()], forced))
}

#[test]
fn a_12x_driver_gets_the_12_table() {
    let Some(loaded) = load_fake("12040", None) else {
        return;
    };
    let loaded = loaded.expect("a 12.4 driver loads");
    assert_eq!(loaded.driver.abi(), Abi::Cuda12);
    assert_eq!(loaded.choice, AbiChoice::Probe);
    assert_eq!(loaded.driver.version(), DriverVersion(12040));
    assert_eq!(loaded.driver.version().to_string(), "12.4");
    assert_eq!(loaded.init, Ok(()));
    // The stand-in exports 10 of the 12.9 header's functions.
    assert_eq!(loaded.driver.functions_loaded(), (10, 452));
}

#[test]
fn a_13x_driver_gets_the_13_table() {
    let Some(loaded) = load_fake("13000", None) else {
        return;
    };
    let loaded = loaded.expect("a 13.0 driver loads");
    assert_eq!(loaded.driver.abi(), Abi::Cuda13);
    assert_eq!(loaded.choice, AbiChoice::Probe);
    // cuCtxCreate_v2 is not the 13 header's export: 9 of its functions load.
    let (found, declared) = loaded.driver.functions_loaded();
    assert_eq!(found, 9);
    assert!(
        declared > 452,
        "the 13 header declares more than 12.9's: {declared}"
    );
}

#[test]
fn a_12_0_driver_is_the_oldest_taken() {
    let Some(loaded) = load_fake("12000", None) else {
        return;
    };
    let loaded = loaded.expect("12.0 is the oldest driver taken, and is taken");
    assert_eq!(loaded.driver.abi(), Abi::Cuda12);
}

#[test]
fn an_11x_driver_is_too_old() {
    let Some(loaded) = load_fake("11080", None) else {
        return;
    };
    let err = loaded.err().expect("11.8 is refused");
    assert_eq!(
        err,
        Error::DriverTooOld {
            found: DriverVersion(11080),
            needed: DriverVersion(12000)
        }
    );
    let text = err.to_string();
    assert!(text.contains("11.8") && text.contains("12.0"), "{text}");
}

#[test]
fn a_missing_library_lists_the_names_tried() {
    let err = probe::load(&["libcuda-missing-a.so.1", "/nowhere/libcuda.so"], None)
        .err()
        .expect("nothing loads");
    let Error::DriverNotFound { tried, source } = &err else {
        panic!("wrong error: {err}")
    };
    assert_eq!(tried.len(), 2);
    // The loader's own error for the first name is the source, for callers that walk causes.
    let source = source.as_ref().expect("the loader's error is kept");
    assert!(
        source.downcast_ref::<libloading::Error>().is_some(),
        "{source:?}"
    );
    assert!(
        tried[0].ends_with(&source.to_string()),
        "{source} is not the first name's reason: {tried:?}"
    );
    let as_error: &dyn std::error::Error = &err;
    assert_eq!(
        as_error.source().map(|s| s.to_string()),
        Some(source.to_string())
    );
    let text = err.to_string();
    assert!(text.contains("libcuda-missing-a.so.1") && text.contains("/nowhere/libcuda.so"));
    assert!(!text.contains('\n'), "one paragraph: {text}");
}

#[test]
fn a_library_without_cudrivergetversion_is_not_a_driver() {
    let Some(path) = fake_driver(&[("FAKE_VERSION", "12040"), ("FAKE_NO_VERSION", "1")]) else {
        return;
    };
    let err = probe::load(&[path.to_str().unwrap()], None)
        .err()
        .expect("refused");
    assert!(
        matches!(&err, Error::DriverNotFound { tried, .. } if tried[0].contains("cuDriverGetVersion")),
        "{err}"
    );
}

#[test]
fn the_override_forces_12_on_a_13_driver() {
    let Some(loaded) = load_fake("13000", Some("12")) else {
        return;
    };
    let loaded = loaded.expect("12 works on a 13 driver");
    assert_eq!(loaded.driver.abi(), Abi::Cuda12);
    assert_eq!(loaded.choice, AbiChoice::Override);
    // The 12 table finds the 12.9 header's cuCtxCreate_v2 in the stand-in.
    assert_eq!(loaded.driver.functions_loaded().0, 10);
}

#[test]
fn the_override_refuses_13_on_a_12_driver_and_unknown_values() {
    let Some(loaded) = load_fake("12080", Some("13")) else {
        return;
    };
    let err = loaded.err().expect("13 on 12.8 is refused");
    assert!(
        matches!(&err, Error::Config { variable: "CUDA_CORE_DRIVER_ABI", value, .. } if value == "13"),
        "{err}"
    );
    assert!(err.to_string().contains("12.8"), "{err}");
    let Some(loaded) = load_fake("13000", Some("11")) else {
        return;
    };
    let err = loaded.err().expect("11 is no ABI");
    assert!(err.to_string().contains("expected 12 or 13"), "{err}");
}

#[test]
fn abi_choice_by_version() {
    let probe = |v| choose_abi(DriverVersion(v), None).unwrap();
    assert_eq!(probe(12000), (Abi::Cuda12, AbiChoice::Probe));
    assert_eq!(probe(12090), (Abi::Cuda12, AbiChoice::Probe));
    assert_eq!(probe(13000), (Abi::Cuda13, AbiChoice::Probe));
    // A newer major than we know speaks the newest table we have.
    assert_eq!(probe(14010), (Abi::Cuda13, AbiChoice::Probe));
    // An empty or blank override is no override.
    assert_eq!(
        choose_abi(DriverVersion(13000), Some(" ")).unwrap(),
        (Abi::Cuda13, AbiChoice::Probe)
    );
    assert_eq!(
        choose_abi(DriverVersion(13000), Some("13")).unwrap(),
        (Abi::Cuda13, AbiChoice::Override)
    );
}

#[test]
fn a_function_the_driver_lacks_is_not_supported_by_name() {
    let Some(loaded) = load_fake("13000", None) else {
        return;
    };
    let driver = loaded.unwrap().driver;
    // Present: answered by the stand-in.
    assert_eq!(driver.device_get_count(), Ok(3));
    // Absent from the stand-in: no crash, an error naming the function.
    let err = driver.ctx_create(0, 0).unwrap_err();
    assert_eq!(
        err,
        Error::NotSupported {
            function: "cuCtxCreate",
            driver: DriverVersion(13000),
            abi: 13
        }
    );
    assert!(err.to_string().contains("cuCtxCreate"), "{err}");
    let err = driver.stream_create(0, None).unwrap_err();
    assert!(matches!(
        err,
        Error::NotSupported {
            function: "cuStreamCreate",
            ..
        }
    ));
    // Through the 12 table, the 12.9 variant the stand-in exports is called.
    let Some(loaded) = load_fake("12040", None) else {
        return;
    };
    let ctx = loaded
        .unwrap()
        .driver
        .ctx_create(0, 0)
        .expect("cuCtxCreate_v2");
    assert!(!ctx.0.is_null());
}

#[test]
fn the_register_returning_current_context_query_agrees_with_the_checked_one() {
    for (status, expect_ok) in [("0", true), ("101", false)] {
        let Some(path) = fake_driver(&[("FAKE_VERSION", "13000"), ("FAKE_CTX_STATUS", status)])
        else {
            return;
        };
        let driver = probe::load(&[path.to_str().unwrap()], None).unwrap().driver;
        let fast = driver.ctx_current_or_none();
        let checked = driver.ctx_get_current();
        if expect_ok {
            let handle = checked.unwrap();
            assert!(!handle.0.is_null());
            assert_eq!(fast, Some(handle));
        } else {
            // The fast call only says that it failed; the checked one names the error.
            assert_eq!(fast, None);
            assert!(matches!(
                checked,
                Err(Error::Driver {
                    call: "cuCtxGetCurrent",
                    name: "CUDA_ERROR_INVALID_DEVICE",
                    ..
                })
            ));
        }
    }
}

#[test]
fn driver_errors_carry_the_drivers_name_and_description() {
    let Some(loaded) = load_fake("12040", None) else {
        return;
    };
    let driver = loaded.unwrap().driver;
    assert_eq!(driver.device_get(2), Ok(2));
    let err = driver.device_get(7).unwrap_err();
    assert_eq!(
        err,
        Error::Driver {
            call: "cuDeviceGet",
            code: DriverCode::INVALID_DEVICE,
            name: "CUDA_ERROR_INVALID_DEVICE",
            description: "invalid device ordinal (stand-in)",
            log: None,
        }
    );
    assert_eq!(
        err.to_string(),
        "cuDeviceGet failed with CUDA_ERROR_INVALID_DEVICE (101): invalid device ordinal (stand-in)"
    );
}

#[test]
fn a_failed_cuinit_is_kept_not_fatal() {
    let Some(path) = fake_driver(&[("FAKE_VERSION", "12040"), ("FAKE_INIT_STATUS", "100")]) else {
        return;
    };
    let loaded = probe::load(&[path.to_str().unwrap()], None).expect("loads");
    assert_eq!(loaded.driver.version(), DriverVersion(12040));
    let err = loaded.init.unwrap_err();
    assert_eq!(err.driver_code(), Some(DriverCode::NO_DEVICE));
    assert_eq!(DriverCode::NO_DEVICE.name(), Some("CUDA_ERROR_NO_DEVICE"));
    assert!(err.to_string().contains("CUDA_ERROR_NO_DEVICE"), "{err}");
}

// ---- On the GPU -------------------------------------------------------------------------------

/// Both implementations over the real driver (13 only on a 13.x driver), each with its own
/// handle on `libcuda.so.1`.
fn real_drivers() -> Vec<Box<dyn Driver>> {
    let version = {
        let loaded = probe::load(probe::LIBRARY_NAMES, Some("12")).expect("a CUDA driver");
        loaded.driver.version()
    };
    let open = || {
        // SAFETY: the CUDA driver, as the probe just found.
        unsafe { libloading::Library::new("libcuda.so.1") }.expect("libcuda.so.1")
    };
    let mut drivers: Vec<Box<dyn Driver>> =
        vec![Box::new(super::v12::Driver12::new(open(), version))];
    if version.major() >= 13 {
        drivers.push(Box::new(super::v13::Driver13::new(open(), version)));
    } else {
        crate::test_support::not_run(
            "driver-13",
            &format!("the CUDA 13 table needs a 13.x driver; this one is {version}"),
        );
    }
    drivers
}

/// Every field of both tables holds exactly what `dlsym` gives for the name it was declared
/// with, and is empty exactly when the driver lacks that name.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_loaded_field_is_the_export_it_names() {
    // SAFETY: the CUDA driver.
    let library = unsafe { libloading::Library::new("libcuda.so.1") }.expect("libcuda.so.1");
    let version = probe::load(probe::LIBRARY_NAMES, Some("12"))
        .unwrap()
        .driver
        .version();
    let mut tables = vec![(
        12,
        super::v12::Driver12::new(
            // SAFETY: as above.
            unsafe { libloading::Library::new("libcuda.so.1") }.unwrap(),
            version,
        )
        .table()
        .symbols()
        .map(|s| (s.field, s.export, s.address))
        .to_vec(),
    )];
    if version.major() >= 13 {
        let driver13 = super::v13::Driver13::new(
            // SAFETY: as above.
            unsafe { libloading::Library::new("libcuda.so.1") }.unwrap(),
            version,
        );
        tables.push((
            13,
            driver13
                .table()
                .symbols()
                .map(|s| (s.field, s.export, s.address))
                .to_vec(),
        ));
    }
    for (abi, symbols) in tables {
        let mut missing = Vec::new();
        for &(field, export, address) in &symbols {
            let name = format!("{export}\0");
            // SAFETY: only the address is read.
            let found = unsafe { library.get::<*const c_void>(name.as_bytes()) }
                .ok()
                .map(|s| *s);
            assert_eq!(
                address, found,
                "ABI {abi}: field {field} should hold {export}"
            );
            if found.is_none() {
                missing.push(export);
            }
        }
        eprintln!(
            "ABI {abi}: {} of {} functions exported by driver {version}; absent: {missing:?}",
            symbols.len() - missing.len(),
            symbols.len()
        );
        // Every function of the 12.9 header exists in any 13.x driver.
        if abi == 12 && version.major() >= 13 {
            assert!(missing.is_empty(), "{missing:?}");
        }
    }
}

extern "C" fn sleep_25ms(_: *mut c_void) {
    std::thread::sleep(Duration::from_millis(25));
}

/// `cuCtxCreate` (a different export and signature in each header) and `cuEventElapsedTime`
/// (`_v2` in 13) give the right answers through each table.
#[test]
#[ignore = "needs a CUDA GPU"]
fn abi_changed_functions_answer_right_through_each_table() {
    for driver in real_drivers() {
        let abi = driver.abi();
        driver.init(0).unwrap();
        let device = driver.device_get(0).unwrap();
        let ctx = driver.ctx_create(0, device).unwrap();
        assert!(!ctx.0.is_null(), "{abi}");
        // The new context is current on this thread and belongs to device 0.
        assert_eq!(driver.ctx_get_current().unwrap(), ctx, "{abi}");
        assert_eq!(driver.ctx_get_device().unwrap(), Some(device), "{abi}");

        let stream = driver.stream_create(1, None).unwrap();
        let start = driver.event_create(0).unwrap();
        let end = driver.event_create(0).unwrap();
        let host = Instant::now();
        driver.event_record(start, stream).unwrap();
        // The stream waits on the host for 25 ms between the two events.
        driver
            .launch_host_func(stream, sleep_25ms, std::ptr::null_mut())
            .unwrap();
        driver.event_record(end, stream).unwrap();
        driver.event_synchronize(end).unwrap();
        let host_ms = host.elapsed().as_secs_f32() * 1000.0;
        let ms = driver.event_elapsed_time(start, end).unwrap();
        assert!(
            (24.0..=host_ms + 0.5).contains(&ms),
            "{abi}: {ms} ms between events, {host_ms} ms on the host"
        );
        let back = driver.event_elapsed_time(end, start).unwrap();
        assert!((back + ms).abs() < 0.01, "{abi}: {back} vs {ms}");

        // Events without timing (CU_EVENT_DISABLE_TIMING) give the driver's error, named.
        let untimed = driver.event_create(2).unwrap();
        driver.event_record(untimed, stream).unwrap();
        driver.stream_synchronize(stream).unwrap();
        let err = driver.event_elapsed_time(start, untimed).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Driver {
                    call: "cuEventElapsedTime",
                    name: "CUDA_ERROR_INVALID_HANDLE",
                    ..
                }
            ),
            "{abi}: {err}"
        );

        for event in [start, end, untimed] {
            driver.event_destroy(event).unwrap();
        }
        driver.stream_destroy(stream).unwrap();
        driver.ctx_destroy(ctx).unwrap();
        assert_ne!(driver.ctx_get_current().unwrap(), ctx, "{abi}");
    }
}

#[test]
fn a_failed_pop_is_logged_not_reported_and_a_panic_still_pops() {
    use super::ContextHandle;
    use crate::lifetime::current::with_current;
    let Some(path) = fake_driver(&[("FAKE_VERSION", "12040"), ("FAKE_POP_STATUS", "201")]) else {
        return;
    };
    let loaded = probe::load(&[path.to_str().unwrap()], None).expect("loads");
    let driver: &'static dyn Driver = Box::leak(loaded.driver);
    // SAFETY: the stand-in's own counter, an int.
    let pops: &'static std::sync::atomic::AtomicI32 = unsafe {
        let library = Box::leak(Box::new(libloading::Library::new(&path).unwrap()));
        &*(*library.get::<*mut i32>(b"fake_pops\0").unwrap()).cast::<std::sync::atomic::AtomicI32>()
    };
    // Another context than the stand-in's current one: a push and a pop around the call.
    let other = ContextHandle(std::ptr::without_provenance_mut(0x1234));
    let before = pops.load(std::sync::atomic::Ordering::Relaxed);
    // The call succeeded; its pop failed (201): the result is the call's.
    assert_eq!(with_current(driver, other, |_| Ok(42)), Ok(42));
    assert_eq!(pops.load(std::sync::atomic::Ordering::Relaxed), before + 1);
    // A panic inside still pops the context it pushed.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = with_current(driver, other, |_| -> crate::error::Result<()> {
            panic!("inside")
        });
    }));
    assert!(panicked.is_err());
    assert_eq!(pops.load(std::sync::atomic::Ordering::Relaxed), before + 2);
}
