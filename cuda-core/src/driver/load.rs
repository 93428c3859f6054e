//! Loading the driver library, choosing its ABI, and the process's one driver.

use std::ffi::c_int;
use std::sync::OnceLock;

use libloading::Library;

use super::api::Driver;
use crate::error::{Cause, Error, Result};
use crate::info::types::{Abi, AbiChoice, DriverVersion};

/// A loaded driver: its table behind the trait, and whether `cuInit` succeeded.
pub(crate) struct Loaded {
    pub(crate) driver: Box<dyn Driver>,
    pub(crate) choice: AbiChoice,
    pub(crate) library: String,
    pub(crate) init: Result<()>,
}

static LOADED: OnceLock<Result<Loaded>> = OnceLock::new();

/// The environment variable that forces a driver ABI.
pub(crate) const ABI_VARIABLE: &str = "CUDA_CORE_DRIVER_ABI";

/// The process's driver, loaded on first use, whatever `cuInit` said.
pub(crate) fn loaded() -> Result<&'static Loaded> {
    LOADED
        .get_or_init(|| {
            let forced = std::env::var(ABI_VARIABLE).ok();
            let loaded = load(LIBRARY_NAMES, forced.as_deref())?;
            if loaded.init.is_err() {
                log::warn!(
                    "CUDA driver {} loaded, but cuInit failed",
                    loaded.driver.version()
                );
            }
            Ok(loaded)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The process's initialised driver: the entry point of every operation.
#[inline]
pub(crate) fn driver() -> Result<&'static dyn Driver> {
    let loaded = loaded()?;
    match &loaded.init {
        Ok(()) => Ok(&*loaded.driver),
        Err(e) => Err(e.clone()),
    }
}

/// The names the driver library is loaded by, in order.
pub(crate) const LIBRARY_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// The oldest driver this crate speaks to.
pub(crate) const OLDEST: DriverVersion = DriverVersion(12000);

/// Loads the first library of `names` that loads, reads its version and builds the table of
/// the ABI chosen by the version or by `forced` (the value of `CUDA_CORE_DRIVER_ABI`), then
/// calls `cuInit(0)` and keeps its result.
pub(crate) fn load(names: &[&str], forced: Option<&str>) -> Result<Loaded> {
    let mut tried = Vec::new();
    let mut first_failure = None;
    let mut opened = None;
    for name in names {
        // SAFETY: loading the driver runs only its own initialisers.
        match unsafe { Library::new(name) } {
            Ok(library) => {
                opened = Some((library, *name));
                break;
            }
            Err(e) => {
                tried.push(format!("{name}: {e}"));
                first_failure.get_or_insert(Cause::new(e));
            }
        }
    }
    let Some((library, name)) = opened else {
        return Err(Error::DriverNotFound {
            tried,
            source: first_failure,
        });
    };
    let version = driver_version(&library).map_err(|reason| Error::DriverNotFound {
        tried: vec![format!("{name}: {reason}")],
        source: None,
    })?;
    if version < OLDEST {
        return Err(Error::DriverTooOld {
            found: version,
            needed: OLDEST,
        });
    }
    let (abi, choice) = choose_abi(version, forced)?;
    let driver: Box<dyn Driver> = match abi {
        Abi::Cuda12 => Box::new(super::v12::Driver12::new(library, version)),
        Abi::Cuda13 => Box::new(super::v13::Driver13::new(library, version)),
    };
    let init = driver.init(0);
    Ok(Loaded {
        driver,
        choice,
        library: name.to_owned(),
        init,
    })
}

/// `cuDriverGetVersion`, whose signature is the same in every header.
fn driver_version(library: &Library) -> std::result::Result<DriverVersion, String> {
    type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: cuDriverGetVersion(int*) -> CUresult in every CUDA header.
    let get = unsafe { library.get::<GetVersion>(b"cuDriverGetVersion\0") }
        .map_err(|_| "loaded, but exports no cuDriverGetVersion: not a CUDA driver".to_owned())?;
    let mut version: c_int = 0;
    // SAFETY: the signature is right and `version` is writable.
    let status = unsafe { get(&mut version) };
    if status != 0 {
        return Err(format!("cuDriverGetVersion failed with code {status}"));
    }
    Ok(DriverVersion(version))
}

/// The ABI for a driver version, or the one `forced` names.
pub(crate) fn choose_abi(version: DriverVersion, forced: Option<&str>) -> Result<(Abi, AbiChoice)> {
    let probed = if version.major() >= 13 {
        Abi::Cuda13
    } else {
        Abi::Cuda12
    };
    let forced = forced.map(str::trim).filter(|v| !v.is_empty());
    let Some(value) = forced else {
        return Ok((probed, AbiChoice::Probe));
    };
    let config = |reason: String| Error::Config {
        variable: ABI_VARIABLE,
        value: value.to_owned(),
        reason,
    };
    match value {
        "12" => Ok((Abi::Cuda12, AbiChoice::Override)),
        "13" if version.major() >= 13 => Ok((Abi::Cuda13, AbiChoice::Override)),
        "13" => Err(config(format!(
            "the CUDA 13 ABI needs a 13.x driver, and this one is {version}; use 12 or unset it"
        ))),
        _ => Err(config("expected 12 or 13".to_owned())),
    }
}
