//! The configuration of a launch: its shape ([`LaunchConfig`]) and its attributes
//! ([`LaunchAttributes`], with the access-policy window and the programmatic event).

use crate::DevicePtr;

use super::product;

/// The shape of a launch: grid and block dimensions, an optional thread-block cluster, dynamic
/// shared memory, and whether the launch is cooperative.
///
/// ```
/// use cuda_core::LaunchConfig;
///
/// let config = LaunchConfig::for_elements(10_000_000, 256);
/// assert_eq!(config.grid, [39_063, 1, 1]);
/// let clustered = LaunchConfig::new([8, 1, 1], [128, 1, 1]).with_cluster([2, 1, 1]);
/// assert_eq!(clustered.cluster, Some([2, 1, 1]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks in the grid, per dimension.
    pub grid: [u32; 3],
    /// Threads in a block, per dimension.
    pub block: [u32; 3],
    /// Blocks in a cluster, per dimension (compute capability 9.0 and newer).
    pub cluster: Option<[u32; 3]>,
    /// Dynamic shared memory per block, in bytes.
    pub shared_memory_bytes: u32,
    /// A cooperative launch: all blocks resident at once, so they may synchronise grid-wide.
    pub cooperative: bool,
    /// Launch attributes: programmatic dependent launch, priority, memory synchronisation
    /// domain, cluster scheduling policy. A launch with none keeps the plain `cuLaunchKernel`.
    pub attributes: LaunchAttributes,
}

/// The memory synchronisation domain of a launch (`CUlaunchMemSyncDomain`): memory fences
/// of kernels in different domains need not wait for each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUlaunchMemSyncDomain")]
pub enum MemorySyncDomain {
    /// The default domain (`CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT`).
    Default,
    /// The remote domain (`CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE`), for work such as
    /// communication kernels whose fences should not hold up the rest.
    Remote,
}

/// Attributes of a launch beyond its shape (`CUlaunchAttribute`, through `cuLaunchKernelEx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUlaunchAttribute")]
pub struct LaunchAttributes {
    /// Programmatic dependent launch (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`):
    /// this kernel may start before the previous kernel on its stream ends, once every block
    /// of that one has run `griddepcontrol.launch_dependents` (or ended); it must run
    /// `griddepcontrol.wait` before it reads what the previous kernel writes. Compute
    /// capability 9.0 and newer.
    pub programmatic_serialization: bool,
    /// The launch's priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`), in the device's stream priority
    /// range (checked before the driver), over the stream's own.
    pub priority: Option<i32>,
    /// The memory synchronisation domain (`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN`).
    pub memory_sync_domain: Option<MemorySyncDomain>,
    /// How the launch's clusters are spread
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`); needs a cluster shape.
    pub cluster_scheduling_policy: Option<ClusterSchedulingPolicy>,
    /// A preferred, larger cluster shape (`CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`):
    /// the device groups blocks into clusters of this shape where it has room, else into the
    /// regular [`LaunchConfig::cluster`] shape. Each dimension must be a whole multiple of the
    /// regular cluster's and divide the grid (checked before the driver). A kernel must not
    /// assume which shape its cluster has: it reads it (`%cluster_nctaid`, `cluster.dim_blocks()`).
    pub preferred_cluster: Option<[u32; 3]>,
    /// An L2 access-policy window (`CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW`): how the
    /// kernel's accesses to one address range are kept in L2.
    pub access_policy_window: Option<AccessPolicyWindow>,
}

/// How accesses are kept in L2 (`CUaccessProperty`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUaccessProperty")]
pub enum AccessProperty {
    /// As any access (`CU_ACCESS_PROPERTY_NORMAL`).
    Normal,
    /// Less likely to stay in L2 (`CU_ACCESS_PROPERTY_STREAMING`).
    Streaming,
    /// More likely to stay in L2, in the part set aside for persisting lines
    /// (`CU_ACCESS_PROPERTY_PERSISTING`).
    Persisting,
}

impl AccessProperty {
    pub(crate) fn code(self) -> u32 {
        match self {
            AccessProperty::Normal => 0,
            AccessProperty::Streaming => 1,
            AccessProperty::Persisting => 2,
        }
    }
}

/// An L2 access-policy window (`CUaccessPolicyWindow`): of the accesses to `bytes` bytes from
/// `base`, a `hit_ratio` share get the `hit` property and the rest the `miss` property. It is
/// a caching hint: an address range that is not (or no longer) allocated is harmless.
///
/// Checked before the driver: `bytes` from 1 to the device's
/// [`max_access_policy_window_size`](crate::DeviceProperties::max_access_policy_window_size),
/// `hit_ratio` within 0 to 1, and `miss` not [`AccessProperty::Persisting`].
///
/// ```
/// use cuda_core::{AccessPolicyWindow, AccessProperty, DevicePtr, LaunchConfig};
///
/// let window = AccessPolicyWindow::persisting(DevicePtr(0x7f00_0000_0000), 1 << 20);
/// assert_eq!((window.hit, window.miss), (AccessProperty::Persisting, AccessProperty::Streaming));
/// let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]).with_access_policy_window(window);
/// assert_eq!(config.attributes.access_policy_window, Some(window));
/// ```
#[derive(Clone, Copy, Debug)]
#[doc(alias = "CUaccessPolicyWindow")]
pub struct AccessPolicyWindow {
    /// The first address of the range.
    pub base: DevicePtr,
    /// Its length in bytes.
    pub bytes: usize,
    /// The share of accesses that get `hit`, from 0 to 1.
    pub hit_ratio: f32,
    /// The property of that share.
    pub hit: AccessProperty,
    /// The property of the rest.
    pub miss: AccessProperty,
}

impl AccessPolicyWindow {
    /// Every access to the range persisting (hit ratio 1, misses streaming).
    #[must_use]
    pub fn persisting(base: DevicePtr, bytes: usize) -> AccessPolicyWindow {
        AccessPolicyWindow {
            base,
            bytes,
            hit_ratio: 1.0,
            hit: AccessProperty::Persisting,
            miss: AccessProperty::Streaming,
        }
    }

    /// The fields as `LaunchConfig` compares them: the ratio by its bits.
    fn key(&self) -> (u64, usize, u32, AccessProperty, AccessProperty) {
        (
            self.base.0,
            self.bytes,
            self.hit_ratio.to_bits(),
            self.hit,
            self.miss,
        )
    }
}

impl PartialEq for AccessPolicyWindow {
    fn eq(&self, other: &AccessPolicyWindow) -> bool {
        self.key() == other.key()
    }
}

impl Eq for AccessPolicyWindow {}

impl std::hash::Hash for AccessPolicyWindow {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// When a launch's programmatic event ([`launch_recording`](crate::launch_recording)) fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventTrigger {
    /// Once every block has run `griddepcontrol.launch_dependents`
    /// (`cudaTriggerProgrammaticLaunchCompletion`) or ended.
    LaunchDependents,
    /// As each block starts (`triggerAtBlockStart`): the event fires once every block has
    /// started.
    BlockStart,
}

impl LaunchAttributes {
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.programmatic_serialization
            || self.priority.is_some()
            || self.memory_sync_domain.is_some()
            || self.cluster_scheduling_policy.is_some()
            || self.preferred_cluster.is_some()
            || self.access_policy_window.is_some()
    }

    pub(super) fn extras(&self) -> crate::driver::LaunchExtras {
        crate::driver::LaunchExtras {
            programmatic_serialization: self.programmatic_serialization,
            priority: self.priority,
            mem_sync_domain: self.memory_sync_domain.map(|d| match d {
                MemorySyncDomain::Default => 0,
                MemorySyncDomain::Remote => 1,
            }),
            cluster_scheduling_policy: self
                .cluster_scheduling_policy
                .map(ClusterSchedulingPolicy::code),
            preferred_cluster: self.preferred_cluster,
            access_policy_window: self
                .access_policy_window
                .map(|w| crate::driver::AccessWindow {
                    base: w.base.0,
                    bytes: w.bytes,
                    hit_ratio_bits: w.hit_ratio.to_bits(),
                    hit: w.hit.code(),
                    miss: w.miss.code(),
                }),
            programmatic_event: None,
        }
    }
}

impl LaunchConfig {
    /// A grid of `grid` blocks of `block` threads.
    #[must_use]
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
        LaunchConfig {
            grid,
            block,
            cluster: None,
            shared_memory_bytes: 0,
            cooperative: false,
            attributes: LaunchAttributes::default(),
        }
    }

    /// One-dimensional: enough blocks of `block` threads to cover `elements`.
    #[must_use]
    pub fn for_elements(elements: u64, block: u32) -> LaunchConfig {
        let block = block.max(1);
        let grid = elements.div_ceil(u64::from(block)).min(u64::from(u32::MAX)) as u32;
        LaunchConfig::new([grid, 1, 1], [block, 1, 1])
    }

    /// With thread-block clusters of this shape.
    #[must_use]
    pub fn with_cluster(mut self, cluster: [u32; 3]) -> LaunchConfig {
        self.cluster = Some(cluster);
        self
    }

    /// With this much dynamic shared memory per block.
    #[must_use]
    pub fn with_shared_memory(mut self, bytes: u32) -> LaunchConfig {
        self.shared_memory_bytes = bytes;
        self
    }

    /// As a cooperative launch.
    #[must_use]
    pub fn with_cooperative(mut self, cooperative: bool) -> LaunchConfig {
        self.cooperative = cooperative;
        self
    }

    /// As a programmatic dependent launch (see
    /// [`LaunchAttributes::programmatic_serialization`]).
    #[must_use]
    pub fn with_programmatic_serialization(mut self, allowed: bool) -> LaunchConfig {
        self.attributes.programmatic_serialization = allowed;
        self
    }

    /// With this launch priority.
    #[must_use]
    pub fn with_priority(mut self, priority: i32) -> LaunchConfig {
        self.attributes.priority = Some(priority);
        self
    }

    /// In this memory synchronisation domain.
    #[must_use]
    pub fn with_memory_sync_domain(mut self, domain: MemorySyncDomain) -> LaunchConfig {
        self.attributes.memory_sync_domain = Some(domain);
        self
    }

    /// With this cluster scheduling policy (with a cluster shape).
    #[must_use]
    pub fn with_cluster_scheduling_policy(
        mut self,
        policy: ClusterSchedulingPolicy,
    ) -> LaunchConfig {
        self.attributes.cluster_scheduling_policy = Some(policy);
        self
    }

    /// With a preferred cluster shape (see [`LaunchAttributes::preferred_cluster`]).
    #[must_use]
    pub fn with_preferred_cluster(mut self, cluster: [u32; 3]) -> LaunchConfig {
        self.attributes.preferred_cluster = Some(cluster);
        self
    }

    /// With an L2 access-policy window.
    #[must_use]
    pub fn with_access_policy_window(mut self, window: AccessPolicyWindow) -> LaunchConfig {
        self.attributes.access_policy_window = Some(window);
        self
    }

    /// Threads per block; `None` where the product does not fit a `u64` (three `u32`s can
    /// reach 2^96), which no device allows.
    pub(super) fn threads_per_block(&self) -> Option<u64> {
        product(self.block)
    }

    /// Blocks in the grid; `None` where the product does not fit a `u64`.
    pub(super) fn blocks(&self) -> Option<u64> {
        product(self.grid)
    }
}

/// How a cluster's blocks are spread over the GPU
/// (`CUclusterSchedulingPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUclusterSchedulingPolicy")]
pub enum ClusterSchedulingPolicy {
    /// The driver's choice (`CU_CLUSTER_SCHEDULING_POLICY_DEFAULT`).
    Default,
    /// Spread over the GPU (`CU_CLUSTER_SCHEDULING_POLICY_SPREAD`).
    Spread,
    /// Balanced for load (`CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING`).
    LoadBalancing,
}

impl ClusterSchedulingPolicy {
    /// Its `CUclusterSchedulingPolicy` value.
    pub(crate) fn code(self) -> u32 {
        match self {
            ClusterSchedulingPolicy::Default => 0,
            ClusterSchedulingPolicy::Spread => 1,
            ClusterSchedulingPolicy::LoadBalancing => 2,
        }
    }
}
