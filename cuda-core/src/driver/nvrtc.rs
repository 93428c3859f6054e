//! The process's NVRTC, found once (see `cuda_nvrtc_sys::Search` for the order).

use std::sync::OnceLock;

use cuda_nvrtc_sys::{Nvrtc, Search};

use crate::error::{Error, Result};

static NVRTC: OnceLock<Result<Nvrtc>> = OnceLock::new();

/// NVRTC, loaded on first use, preferring the major of the driver ABI in use (13 when no
/// driver loads: NVRTC needs none).
pub(crate) fn nvrtc() -> Result<&'static Nvrtc> {
    NVRTC
        .get_or_init(|| {
            let major = super::loaded().map_or(13, |l| l.driver.abi().major());
            Search::from_env(major)
                .load()
                .map_err(|e| Error::NvrtcNotFound(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}
