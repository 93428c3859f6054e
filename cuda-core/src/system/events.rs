//! NVML events: an event set registered for chosen kinds on chosen GPUs, and waits on it with a
//! timeout.

use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::event::EventData;
use nvml_wrapper::Nvml;

use super::{nvml_error, System, SystemDevice};
use crate::error::{Error, Result};

/// Kinds of NVML events (`nvmlEventType*` bits), combined with `|`: what an [`EventSet`] is
/// registered for, and which kind a [`SystemEvent`] is.
///
/// ```
/// use cuda_core::system::EventKinds;
///
/// let kinds = EventKinds::XID_CRITICAL_ERROR | EventKinds::CLOCK_CHANGE;
/// assert!(kinds.contains(EventKinds::CLOCK_CHANGE));
/// assert_eq!(kinds & EventKinds::CLOCK_CHANGE, EventKinds::CLOCK_CHANGE);
/// assert_eq!(kinds.bits(), 0x18);
/// ```
#[doc(alias("nvmlEventType", "nvmlEventTypeAll"))]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct EventKinds(u64);

impl EventKinds {
    /// A corrected (single-bit) ECC error (`nvmlEventTypeSingleBitEccError`).
    #[doc(alias = "nvmlEventTypeSingleBitEccError")]
    pub const SINGLE_BIT_ECC_ERROR: EventKinds =
        EventKinds(EventTypes::SINGLE_BIT_ECC_ERROR.bits());
    /// An uncorrected (double-bit) ECC error (`nvmlEventTypeDoubleBitEccError`).
    #[doc(alias = "nvmlEventTypeDoubleBitEccError")]
    pub const DOUBLE_BIT_ECC_ERROR: EventKinds =
        EventKinds(EventTypes::DOUBLE_BIT_ECC_ERROR.bits());
    /// A change of performance state (`nvmlEventTypePState`).
    #[doc(alias = "nvmlEventTypePState")]
    pub const PSTATE_CHANGE: EventKinds = EventKinds(EventTypes::PSTATE_CHANGE.bits());
    /// A critical XID error: the driver's report of a fault on the GPU, its number in
    /// [`SystemEvent::xid`] (`nvmlEventTypeXidCriticalError`).
    #[doc(alias = "nvmlEventTypeXidCriticalError")]
    pub const XID_CRITICAL_ERROR: EventKinds = EventKinds(EventTypes::CRITICAL_XID_ERROR.bits());
    /// A change of clocks (`nvmlEventTypeClock`).
    #[doc(alias = "nvmlEventTypeClock")]
    pub const CLOCK_CHANGE: EventKinds = EventKinds(EventTypes::CLOCK_CHANGE.bits());
    /// A change of power source, battery or mains (`nvmlEventTypePowerSourceChange`).
    #[doc(alias = "nvmlEventTypePowerSourceChange")]
    pub const POWER_SOURCE_CHANGE: EventKinds = EventKinds(EventTypes::POWER_SOURCE_CHANGE.bits());
    /// A change of MIG configuration (`nvmlEventMigConfigChange`).
    #[doc(alias = "nvmlEventMigConfigChange")]
    pub const MIG_CONFIG_CHANGE: EventKinds = EventKinds(EventTypes::MIG_CONFIG_CHANGE.bits());

    /// Each kind with its name, for [`Debug`].
    const NAMED: [(EventKinds, &'static str); 7] = [
        (Self::SINGLE_BIT_ECC_ERROR, "SINGLE_BIT_ECC_ERROR"),
        (Self::DOUBLE_BIT_ECC_ERROR, "DOUBLE_BIT_ECC_ERROR"),
        (Self::PSTATE_CHANGE, "PSTATE_CHANGE"),
        (Self::XID_CRITICAL_ERROR, "XID_CRITICAL_ERROR"),
        (Self::CLOCK_CHANGE, "CLOCK_CHANGE"),
        (Self::POWER_SOURCE_CHANGE, "POWER_SOURCE_CHANGE"),
        (Self::MIG_CONFIG_CHANGE, "MIG_CONFIG_CHANGE"),
    ];

    /// No kind.
    #[must_use]
    pub const fn empty() -> EventKinds {
        EventKinds(0)
    }

    /// Every kind this type names.
    #[must_use]
    pub const fn all() -> EventKinds {
        EventKinds(EventTypes::all().bits())
    }

    /// The raw `nvmlEventType*` bits.
    #[must_use]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Kinds from raw `nvmlEventType*` bits, `None` where a bit is not a kind this type names.
    #[must_use]
    pub const fn from_bits(bits: u64) -> Option<EventKinds> {
        if bits & !Self::all().0 == 0 {
            Some(EventKinds(bits))
        } else {
            None
        }
    }

    /// Whether no kind is set.
    #[must_use]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every kind of `other` is set here.
    #[must_use]
    pub const fn contains(self, other: EventKinds) -> bool {
        self.0 & other.0 == other.0
    }

    /// nvml-wrapper's form.
    fn to_nvml(self) -> EventTypes {
        EventTypes::from_bits_truncate(self.0)
    }
}

impl std::fmt::Debug for EventKinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = Self::NAMED
            .iter()
            .filter(|(kind, _)| self.contains(*kind))
            .map(|(_, name)| *name)
            .collect();
        let named = Self::NAMED.iter().fold(0, |bits, (kind, _)| bits | kind.0);
        let rest = self.0 & !named;
        match (names.is_empty(), rest) {
            (true, 0) => f.write_str("EventKinds(empty)"),
            (_, 0) => write!(f, "EventKinds({})", names.join(" | ")),
            (true, _) => write!(f, "EventKinds({rest:#x})"),
            (false, _) => write!(f, "EventKinds({} | {rest:#x})", names.join(" | ")),
        }
    }
}

impl std::ops::BitOr for EventKinds {
    type Output = EventKinds;

    fn bitor(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for EventKinds {
    fn bitor_assign(&mut self, other: EventKinds) {
        self.0 |= other.0;
    }
}

impl std::ops::BitAnd for EventKinds {
    type Output = EventKinds;

    fn bitand(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 & other.0)
    }
}

/// An event NVML delivered to an [`EventSet`].
#[doc(alias("nvmlEventData_t", "nvmlEventData_st"))]
#[derive(Debug)]
#[non_exhaustive]
pub struct SystemEvent<'a> {
    /// The GPU it happened on.
    pub device: SystemDevice<'a>,
    /// What happened: one kind (empty for a kind this crate does not name).
    pub kind: EventKinds,
    /// For [`EventKinds::XID_CRITICAL_ERROR`], the XID (the driver's error number); `None` for
    /// other kinds, and where NVML does not know it (its 999).
    pub xid: Option<u64>,
}

impl<'a> SystemEvent<'a> {
    fn from_nvml(data: EventData<'a>) -> SystemEvent<'a> {
        SystemEvent {
            device: SystemDevice {
                device: data.device,
            },
            kind: EventKinds(data.event_type.bits()),
            xid: match data.event_data {
                Some(XidError::Value(xid)) => Some(xid),
                Some(XidError::Unknown) | None => None,
            },
        }
    }
}

/// An NVML event set (`nvmlEventSet_t`): registered for some kinds of events on some GPUs, it
/// records those that happen from then on, and [`wait`](EventSet::wait) hands them out one at a
/// time. Made by [`System::events`]; freed when dropped (`nvmlEventSetFree`).
///
/// NVML's sets are not thread-safe: an `EventSet` can move to another thread (`Send`), not be
/// shared between threads (not `Sync`).
///
/// ```no_run
/// use std::time::Duration;
/// use cuda_core::system::{EventKinds, System};
///
/// let system = System::get()?;
/// let gpus = system.devices()?;
/// let events = system.events(EventKinds::XID_CRITICAL_ERROR, &gpus)?;
/// while let Some(event) = events.wait(Duration::from_secs(10))? {
///     println!("XID {:?} on {}", event.xid, event.device.uuid()?);
/// }
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("nvmlEventSet_t", "nvmlEventSetCreate", "nvmlEventSetFree"))]
pub struct EventSet<'a> {
    set: nvml_wrapper::EventSet<'a>,
    kinds: EventKinds,
}

impl std::fmt::Debug for EventSet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSet")
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

impl<'a> EventSet<'a> {
    /// A set of `nvml` registered for `kinds` on each of `devices`.
    pub(super) fn new<'d>(
        nvml: &'a Nvml,
        kinds: EventKinds,
        devices: impl IntoIterator<Item = &'d nvml_wrapper::Device<'a>>,
    ) -> Result<EventSet<'a>>
    where
        'a: 'd,
    {
        if kinds.is_empty() {
            return Err(Error::InvalidArgument {
                name: "kinds",
                reason: "no event kinds: a set registered for none would only time out".into(),
            });
        }
        let devices: Vec<&nvml_wrapper::Device<'a>> = devices.into_iter().collect();
        if devices.is_empty() {
            return Err(Error::InvalidArgument {
                name: "devices",
                reason: "no devices: a set registered on none would only time out".into(),
            });
        }
        // nvml-wrapper frees a set when it drops through a call that panics where the library
        // lacks nvmlEventSetFree: a set is only made where it can be freed.
        if nvml.lib().nvmlEventSetFree.is_err() {
            return Err(Error::SystemNotSupported {
                query: "nvmlEventSetFree",
            });
        }
        let mut set = nvml
            .create_event_set()
            .map_err(nvml_error("nvmlEventSetCreate"))?;
        for device in devices {
            // On failure nvml-wrapper frees the set it was given.
            set = device
                .register_events(kinds.to_nvml(), set)
                .map_err(|e| nvml_error("nvmlDeviceRegisterEvents")(e.error))?;
        }
        Ok(EventSet { set, kinds })
    }

    /// The kinds this set was registered for.
    #[must_use]
    pub fn kinds(&self) -> EventKinds {
        self.kinds
    }

    /// The next event, waiting at most `timeout` for one; `Ok(None)` once `timeout` has passed
    /// without one. An event that came before the call is answered at once.
    ///
    /// The timeout is rounded up to whole milliseconds (NVML's unit), and is at least one.
    /// Where NVML returns before the timeout without an event (a signal interrupted its wait),
    /// this waits again for what is left, so `Ok(None)` never comes early.
    #[doc(alias("nvmlEventSetWait_v2", "nvmlEventSetWait"))]
    pub fn wait(&self, timeout: Duration) -> Result<Option<SystemEvent<'a>>> {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
            match self.set.wait(whole_ms(left)) {
                Ok(data) => return Ok(Some(SystemEvent::from_nvml(data))),
                Err(NvmlError::Timeout) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(nvml_error("nvmlEventSetWait_v2")(e)),
            }
        }
    }
}

/// `left` in whole milliseconds for NVML: rounded up, at least one (a zero is no documented
/// "look only" for NVML), at most what its `unsigned int` holds.
fn whole_ms(left: Duration) -> u32 {
    let ms = left.as_nanos().div_ceil(1_000_000);
    u32::try_from(ms).unwrap_or(u32::MAX).max(1)
}

impl System {
    /// An event set registered for `kinds` on each of `devices`: it records the events of
    /// those kinds that happen on those GPUs from now on, for [`EventSet::wait`].
    ///
    /// An empty `kinds` or no devices is refused with [`Error::InvalidArgument`]. A GPU that
    /// does not support one of the kinds refuses the whole set with
    /// [`Error::SystemNotSupported`]: ask [`SystemDevice::supported_events`] first and
    /// register the kinds it gives (`wanted & gpu.supported_events()?`).
    #[doc(alias("nvmlEventSetCreate", "nvmlDeviceRegisterEvents"))]
    pub fn events<'s, 'd>(
        &'s self,
        kinds: EventKinds,
        devices: impl IntoIterator<Item = &'d SystemDevice<'s>>,
    ) -> Result<EventSet<'s>>
    where
        's: 'd,
    {
        EventSet::new(
            &self.nvml,
            kinds,
            devices.into_iter().map(|device| &device.device),
        )
    }
}

impl SystemDevice<'_> {
    /// The kinds of events this GPU can report (those this crate names; the others NVML gives
    /// are left out).
    #[doc(alias = "nvmlDeviceGetSupportedEventTypes")]
    pub fn supported_events(&self) -> Result<EventKinds> {
        self.device
            .supported_event_types()
            .map(|types| EventKinds(types.bits()))
            .map_err(nvml_error("nvmlDeviceGetSupportedEventTypes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_nvml_bits_and_combine() {
        // The values of nvml.h's nvmlEventType* macros.
        assert_eq!(EventKinds::SINGLE_BIT_ECC_ERROR.bits(), 0x1);
        assert_eq!(EventKinds::DOUBLE_BIT_ECC_ERROR.bits(), 0x2);
        assert_eq!(EventKinds::PSTATE_CHANGE.bits(), 0x4);
        assert_eq!(EventKinds::XID_CRITICAL_ERROR.bits(), 0x8);
        assert_eq!(EventKinds::CLOCK_CHANGE.bits(), 0x10);
        assert_eq!(EventKinds::POWER_SOURCE_CHANGE.bits(), 0x80);
        assert_eq!(EventKinds::MIG_CONFIG_CHANGE.bits(), 0x100);
        assert_eq!(EventKinds::all().bits(), 0x19f);
        let both = EventKinds::XID_CRITICAL_ERROR | EventKinds::CLOCK_CHANGE;
        assert!(both.contains(EventKinds::XID_CRITICAL_ERROR));
        assert!(!both.contains(EventKinds::PSTATE_CHANGE));
        assert_eq!(both & EventKinds::CLOCK_CHANGE, EventKinds::CLOCK_CHANGE);
        assert!((both & EventKinds::PSTATE_CHANGE).is_empty());
        assert_eq!(EventKinds::from_bits(0x18), Some(both));
        // 0x200 is nvmlEventTypeSingleBitEccErrorStorm, which nvml-wrapper does not name.
        assert_eq!(EventKinds::from_bits(0x208), None);
        assert_eq!(
            format!("{both:?}"),
            "EventKinds(XID_CRITICAL_ERROR | CLOCK_CHANGE)"
        );
        assert_eq!(
            format!("{:?}", EventKinds(0x208)),
            "EventKinds(XID_CRITICAL_ERROR | 0x200)"
        );
        assert_eq!(format!("{:?}", EventKinds::empty()), "EventKinds(empty)");
    }

    #[test]
    fn a_wait_is_whole_milliseconds_rounded_up_and_never_zero() {
        assert_eq!(whole_ms(Duration::from_millis(50)), 50);
        assert_eq!(whole_ms(Duration::from_micros(50_001)), 51);
        assert_eq!(whole_ms(Duration::from_nanos(1)), 1);
        assert_eq!(whole_ms(Duration::ZERO), 1);
        assert_eq!(whole_ms(Duration::from_secs(50 * 24 * 3600)), u32::MAX);
    }
}
