//! Device resources for green contexts: a device's SMs, splitting them into groups, and the
//! work queues their streams submit through.

use std::fmt;

use crate::device::Device;
use crate::driver::{driver, DevResource, Driver, SmInfo, WorkqueueInfo};
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

    /// The device's work-queue configuration (`cuDeviceGetDevResource` of
    /// `CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG`): how many stream-ordered workloads the driver
    /// expects at once, and how work queues are shared. Change it with its `with_` methods
    /// and give it to a green context ([`ContextOptions::workqueue`](crate::ContextOptions)).
    ///
    /// Work-queue resources are in the CUDA 13 header and need a 13.1 driver: through the 12
    /// ABI or on an older driver, [`Error::NotSupported`].
    #[doc(alias = "cuDeviceGetDevResource")]
    #[doc(alias = "CUdevWorkqueueConfigResource")]
    pub fn workqueue_config(&self) -> Result<WorkqueueConfig> {
        let info = driver()?.device_get_workqueue_config(self.device.handle())?;
        Ok(WorkqueueConfig {
            device: self.device,
            concurrency_limit: info.concurrency_limit,
            sharing: WorkqueueSharing::from_raw(info.scope),
        })
    }
}

/// How a green context's work queues are shared (`CUdevWorkqueueConfigScope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUdevWorkqueueConfigScope")]
pub enum WorkqueueSharing {
    /// With every context of the device, as the driver does by default
    /// (`CU_WORKQUEUE_SCOPE_DEVICE_CTX`).
    #[doc(alias = "CU_WORKQUEUE_SCOPE_DEVICE_CTX")]
    DeviceContext,
    /// Kept apart, where the driver can, from the work queues of other green contexts
    /// configured so (`CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED`): with disjoint SM groups, the
    /// best chance that two green contexts do not wait on each other's submissions.
    #[doc(alias = "CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED")]
    GreenContextBalanced,
    /// A scope this crate does not name, as the driver reported it.
    Other(u32),
}

impl WorkqueueSharing {
    fn from_raw(raw: u32) -> Self {
        match raw {
            0 => WorkqueueSharing::DeviceContext,
            1 => WorkqueueSharing::GreenContextBalanced,
            other => WorkqueueSharing::Other(other),
        }
    }

    fn to_raw(self) -> u32 {
        match self {
            WorkqueueSharing::DeviceContext => 0,
            WorkqueueSharing::GreenContextBalanced => 1,
            WorkqueueSharing::Other(raw) => raw,
        }
    }
}

/// A work-queue configuration for a green context: see
/// [`DeviceResources::workqueue_config`].
///
/// ```no_run
/// use cuda_core::{ContextOptions, Device, SmSplitOptions, WorkqueueSharing};
///
/// let device = Device::new(0)?;
/// let resources = device.resources();
/// let split = resources.sm()?.split(SmSplitOptions::groups_of(16).with_groups(2))?;
/// let queue = resources
///     .workqueue_config()?
///     .with_concurrency_limit(4)
///     .with_sharing(WorkqueueSharing::GreenContextBalanced);
/// let a = device.create_context(
///     ContextOptions::default()
///         .with_resources(vec![split.groups[0].clone()])
///         .with_workqueue(queue),
/// )?;
/// // A second green context that submits through the first one's work queue.
/// let b = device.create_context(
///     ContextOptions::default()
///         .with_resources(vec![split.groups[1].clone()])
///         .with_workqueue(a.workqueue()?),
/// )?;
/// # drop(b);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "CUdevWorkqueueConfigResource")]
pub struct WorkqueueConfig {
    device: Device,
    concurrency_limit: u32,
    sharing: WorkqueueSharing,
}

impl WorkqueueConfig {
    /// The device it configures.
    pub fn device(&self) -> Device {
        self.device
    }

    /// How many stream-ordered workloads the driver expects at once (`wqConcurrencyLimit`).
    /// The device reports its largest, which `CUDA_DEVICE_MAX_CONNECTIONS` bounds; a larger
    /// one is accepted, without the driver's promise that submissions stay apart.
    pub fn concurrency_limit(&self) -> u32 {
        self.concurrency_limit
    }

    /// How its work queues are shared (`sharingScope`).
    pub fn sharing(&self) -> WorkqueueSharing {
        self.sharing
    }

    /// The same, expecting `limit` workloads at once (at least 1: a green context made with
    /// 0 is refused with [`Error::InvalidArgument`]).
    #[must_use]
    pub fn with_concurrency_limit(mut self, limit: u32) -> Self {
        self.concurrency_limit = limit;
        self
    }

    /// The same, with its work queues shared as `sharing` says.
    #[must_use]
    pub fn with_sharing(mut self, sharing: WorkqueueSharing) -> Self {
        self.sharing = sharing;
        self
    }

    /// What the driver is given, checked.
    pub(crate) fn raw_info(&self) -> Result<WorkqueueInfo> {
        if self.concurrency_limit == 0 {
            return Err(Error::InvalidArgument {
                name: "options.workqueue",
                reason: "a work queue's concurrency limit must be at least 1".to_owned(),
            });
        }
        Ok(WorkqueueInfo {
            device: self.device.handle(),
            concurrency_limit: self.concurrency_limit,
            scope: self.sharing.to_raw(),
        })
    }
}

bitflags::bitflags! {
    /// What kind of SM group a resource is (`CUdevSmResourceGroup_flags`), as the CUDA 13
    /// header's `CUdevSmResource::flags` reports it: see [`SmResource::flags`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[doc(alias = "CUdevSmResourceGroup_flags")]
    pub struct SmGroupFlags: u32 {
        /// A group that may take SMs left over by other groups
        /// (`CU_DEV_SM_RESOURCE_GROUP_BACKFILL`).
        const BACKFILL = 1;
        /// A group confined to one locality domain
        /// (`CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_ID`).
        const LOCALITY_DOMAIN_ID = 2;
        /// A group given SMs beyond its locality domain
        /// (`CU_DEV_SM_RESOURCE_GROUP_LOCALITY_DOMAIN_SUPPLEMENTAL_SMS`).
        const LOCALITY_DOMAIN_SUPPLEMENTAL_SMS = 4;
        // Bits a newer driver sets are kept.
        const _ = !0;
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

    /// The group's flags, where the driver ABI reports them (the 13 header's `flags`; `None`
    /// through the 12 ABI). Drivers before those that make flagged groups report none.
    pub fn flags(&self) -> Option<SmGroupFlags> {
        self.info.flags.map(SmGroupFlags::from_bits_retain)
    }

    /// The driver's `CUdevResource` of these SMs (of the header of the ABI in use), valid as
    /// long as this value: for code that calls the driver itself.
    pub fn as_raw(&self) -> *const std::ffi::c_void {
        std::ptr::from_ref(&self.raw).cast()
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
