//! The per-device registry: what the process keeps for each device, sized by the device count
//! on first use and kept until the process ends.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use super::{ContextCore, ContextKind};
use crate::driver::{driver, ContextHandle, DeviceHandle, Driver};
use crate::error::{Error, Result};

/// Attribute cache slots per device: at least one per attribute code of the newest header (the
/// device module asserts it); a code past them is read without caching.
pub(crate) const ATTRIBUTE_SLOTS: usize = 192;
/// An attribute slot not read yet.
const UNREAD: i64 = i64::MIN;

/// What the process keeps per device: its primary context once retained, its attributes, and
/// the few values read once.
pub(crate) struct DeviceState {
    primary: OnceLock<Primary>,
    attributes: [AtomicI64; ATTRIBUTE_SLOTS],
    /// `cuDeviceTotalMem`.
    pub(crate) total_memory: OnceLock<usize>,
    /// `cuCtxGetStreamPriorityRange`.
    pub(crate) priority_range: OnceLock<(i32, i32)>,
}

/// The primary context, with copies of its handle and driver beside it: the hot paths (event
/// and stream creation, `set_current`) read them here, one dependent load sooner than through
/// the context's own allocation. After a driver call has pushed the caller's data out of the
/// CPU's first-level cache, each load in that chain is a miss.
pub(crate) struct Primary {
    pub(crate) handle: ContextHandle,
    pub(crate) driver: &'static dyn Driver,
    /// Kept for good: `Held::forever(&primary.core)` holds it without counting.
    pub(crate) core: Arc<ContextCore>,
}

static DEVICES: OnceLock<Result<Box<[DeviceState]>>> = OnceLock::new();

/// The per-device state, sized by the device count on first use (`cuDeviceGetCount`).
pub(crate) fn states() -> Result<&'static [DeviceState]> {
    DEVICES
        .get_or_init(|| {
            let count = driver()?.device_get_count()?.max(0) as usize;
            Ok((0..count)
                .map(|_| DeviceState {
                    primary: OnceLock::new(),
                    attributes: std::array::from_fn(|_| AtomicI64::new(UNREAD)),
                    total_memory: OnceLock::new(),
                    priority_range: OnceLock::new(),
                })
                .collect())
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// The per-device state if it was made already, without making it; `None` also on error.
#[inline]
pub(crate) fn states_if_ready() -> Option<&'static [DeviceState]> {
    match DEVICES.get() {
        Some(Ok(states)) => Some(states),
        _ => None,
    }
}

/// One device's state.
#[inline]
pub(crate) fn state(ordinal: usize) -> Result<&'static DeviceState> {
    states()?
        .get(ordinal)
        .ok_or_else(|| Error::InvalidArgument {
            name: "device",
            reason: format!("device {ordinal} does not exist"),
        })
}

impl DeviceState {
    /// The primary context, retained on first use and kept from then on.
    #[inline]
    pub(crate) fn primary(&'static self, device: DeviceHandle) -> Result<&'static Primary> {
        if let Some(primary) = self.primary.get() {
            return Ok(primary);
        }
        self.retain_primary(device)
    }

    /// The primary context if it is retained already.
    #[inline]
    pub(crate) fn primary_if_ready(&'static self) -> Option<&'static Primary> {
        self.primary.get()
    }

    #[cold]
    #[inline(never)]
    fn retain_primary(&'static self, device: DeviceHandle) -> Result<&'static Primary> {
        let driver = driver()?;
        let handle = driver.device_primary_ctx_retain(device)?;
        let core = Arc::new(ContextCore {
            handle,
            device,
            driver,
            kind: ContextKind::Primary,
        });
        // A racing thread may have set it first: keep theirs, and drop ours (a release).
        Ok(self.primary.get_or_init(|| Primary {
            handle,
            driver,
            core,
        }))
    }

    /// One attribute, read from the driver once and cached.
    pub(crate) fn attribute(&self, code: i32, device: DeviceHandle) -> Result<i32> {
        let slot = usize::try_from(code)
            .ok()
            .and_then(|c| self.attributes.get(c));
        if let Some(slot) = slot {
            let cached = slot.load(Ordering::Relaxed);
            if cached != UNREAD {
                return Ok(cached as i32);
            }
        }
        let value = driver()?.device_get_attribute(code, device)?;
        if let Some(slot) = slot {
            slot.store(i64::from(value), Ordering::Relaxed);
        }
        Ok(value)
    }
}

/// A value per device that the process keeps for good once made (a device's default memory
/// resource): for the layers above, which own the value's type. A static of this type costs
/// nothing until first used.
pub(crate) struct PerDevice<T> {
    slots: OnceLock<Box<[OnceLock<T>]>>,
}

impl<T> PerDevice<T> {
    /// Empty slots, for a static.
    pub(crate) const fn new() -> Self {
        PerDevice {
            slots: OnceLock::new(),
        }
    }

    /// Device `ordinal`'s value, made by `make` on first use. Threads that race here make a
    /// value each, and all but one drop theirs.
    pub(crate) fn get_or_try_init(
        &'static self,
        ordinal: usize,
        make: impl FnOnce() -> Result<T>,
    ) -> Result<&'static T> {
        let count = states()?.len();
        let slots = self
            .slots
            .get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
        let slot = slots.get(ordinal).ok_or_else(|| Error::InvalidArgument {
            name: "device",
            reason: format!("device {ordinal} does not exist"),
        })?;
        if let Some(value) = slot.get() {
            return Ok(value);
        }
        let value = make()?;
        Ok(slot.get_or_init(|| value))
    }
}
