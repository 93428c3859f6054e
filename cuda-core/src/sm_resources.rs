//! Device resources for green contexts: a device's SMs, and splitting them into groups.

use std::fmt;

use crate::device::Device;
use crate::driver::{driver, DevResource, Driver, SmInfo};
use crate::error::{Error, Result};

/// The resources of a device that green contexts are made from: see [`Device::resources`].
#[derive(Clone, Copy, Debug)]
pub struct DeviceResources {
    device: Device,
}

impl DeviceResources {
    pub(crate) fn new(device: Device) -> Self {
        DeviceResources { device }
    }

    /// All of the device's SMs (`cuDeviceGetDevResource`).
    #[doc(alias = "cuDeviceGetDevResource")]
    pub fn sm(&self) -> Result<SmResource> {
        let driver = driver()?;
        let raw = driver.device_get_sm_resource(self.device.handle())?;
        Ok(SmResource::from_raw(driver, self.device, raw))
    }
}

/// A set of SMs of one device: all of them, or a group split from them.
#[doc(alias = "CUdevResource")]
#[derive(Clone)]
pub struct SmResource {
    device: Device,
    pub(crate) raw: DevResource,
    info: SmInfo,
    driver: &'static dyn Driver,
}

impl fmt::Debug for SmResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmResource")
            .field("device", &self.device.ordinal())
            .field("sm_count", &self.info.sm_count)
            .finish()
    }
}

/// How to split an [`SmResource`]: groups of at least `sm_count` SMs each (the default, 0, is
/// refused by [`SmResource::split`]).
///
/// The driver rounds each group up to the device's granularity (on compute capability 9.0,
/// multiples of 8 SMs), so ask for what fits: half of an H200's 132 SMs is 64 per group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SmSplitOptions {
    /// The least number of SMs in each group.
    pub sm_count: u32,
    /// How many groups; `None` for as many as fit.
    pub groups: Option<u32>,
    /// Let groups ignore the SM co-scheduling granularity, allowing finer groups whose
    /// kernels may not co-schedule clusters (`CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING`).
    pub ignore_coscheduling: bool,
    /// Size groups for the largest potential cluster rather than the default cluster size
    /// (`CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE`).
    pub max_potential_cluster_size: bool,
}

impl SmSplitOptions {
    /// Groups of at least `sm_count` SMs, as many as fit:
    /// `SmSplitOptions::default().with_sm_count(sm_count)`.
    #[must_use]
    pub fn groups_of(sm_count: u32) -> Self {
        SmSplitOptions::default().with_sm_count(sm_count)
    }
}

crate::options::chainers!(SmSplitOptions {
    with_sm_count(sm_count: u32);
    with_groups(groups: u32) => some;
    with_ignore_coscheduling(ignore_coscheduling: bool);
    with_max_potential_cluster_size(max_potential_cluster_size: bool);
});

/// The result of [`SmResource::split`]: the groups, and the SMs left over.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SmSplit {
    /// The groups, each with at least the requested SM count.
    pub groups: Vec<SmResource>,
    /// The SMs in no group (possibly none).
    pub remainder: SmResource,
}

impl SmResource {
    pub(crate) fn from_raw(driver: &'static dyn Driver, device: Device, raw: DevResource) -> Self {
        let info = driver.sm_resource_info(&raw);
        SmResource {
            device,
            raw,
            info,
            driver,
        }
    }

    /// The device these SMs belong to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// How many SMs.
    pub fn sm_count(&self) -> u32 {
        self.info.sm_count
    }

    /// The smallest group the device can split off, where the driver ABI reports it (the 13
    /// header's `minSmPartitionSize`; `None` through the 12 ABI).
    pub fn min_partition_size(&self) -> Option<u32> {
        self.info.min_partition_size
    }

    /// The SM count that groups are aligned to for co-scheduling, where the driver ABI
    /// reports it (the 13 header's `smCoscheduledAlignment`; `None` through the 12 ABI).
    pub fn coscheduled_alignment(&self) -> Option<u32> {
        self.info.coscheduled_alignment
    }

    /// Splits these SMs into groups (`cuDevSmResourceSplitByCount`). Asking for more SMs than
    /// there are, or for groups the driver cannot make, is [`Error::InvalidArgument`].
    #[doc(alias = "cuDevSmResourceSplitByCount")]
    pub fn split(&self, options: SmSplitOptions) -> Result<SmSplit> {
        let available = self.sm_count();
        if options.sm_count == 0 {
            return Err(Error::InvalidArgument {
                name: "options.sm_count",
                reason: "a group needs at least one SM".to_owned(),
            });
        }
        let wanted = match options.groups {
            Some(0) => {
                return Err(Error::InvalidArgument {
                    name: "options.groups",
                    reason: "ask for at least one group".to_owned(),
                })
            }
            Some(groups) => groups,
            None => (available / options.sm_count).max(1),
        };
        let total = u64::from(wanted) * u64::from(options.sm_count);
        if total > u64::from(available) {
            return Err(Error::InvalidArgument {
                name: "options",
                reason: format!(
                    "{wanted} group(s) of {} SMs need {total} SMs; this resource has {available}",
                    options.sm_count
                ),
            });
        }
        let flags = u32::from(options.ignore_coscheduling)
            | (u32::from(options.max_potential_cluster_size) << 1);
        let mut raw = vec![DevResource::ZERO; wanted as usize];
        let (made, remainder) =
            self.driver
                .sm_resource_split_by_count(&self.raw, &mut raw, flags, options.sm_count)?;
        if options.groups.is_some() && made < wanted as usize {
            let granularity = self
                .coscheduled_alignment()
                .map(|a| format!(" (groups are rounded up to multiples of {a} SMs here)"))
                .unwrap_or_default();
            return Err(Error::InvalidArgument {
                name: "options",
                reason: format!(
                    "the driver could make only {made} of {wanted} groups of at least {} SMs \
                     from {available}{granularity}",
                    options.sm_count
                ),
            });
        }
        let groups = raw[..made]
            .iter()
            .map(|r| SmResource::from_raw(self.driver, self.device, *r))
            .collect();
        Ok(SmSplit {
            groups,
            remainder: SmResource::from_raw(self.driver, self.device, remainder),
        })
    }
}
