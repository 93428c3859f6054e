//! What every kind of memory pool shares: its use and high-water marks, its release threshold,
//! its three reuse policies, and trimming (`cuMemPoolGetAttribute`, `cuMemPoolSetAttribute`,
//! `cuMemPoolTrimTo`), written once for [`DeviceMemoryResource`](super::DeviceMemoryResource),
//! [`PinnedMemoryPool`](super::PinnedMemoryPool) and [`ManagedMemoryPool`](super::ManagedMemoryPool).

use crate::context::Context;
use crate::device::Device;
use crate::driver::{Driver, PoolHandle, PoolLocation};
use crate::error::{Error, Result};
use crate::info::types::DriverVersion;
use crate::ipc::{self, BufferDescriptor, PoolIdentity, SharedPoolHandle};
use crate::memory::buffer::Buffer;

/// The first driver with pools of host memory not bound to a NUMA node
/// (`CU_MEM_LOCATION_TYPE_HOST`) and of managed memory.
pub(crate) const HOST_AND_MANAGED_POOLS: DriverVersion = DriverVersion(13000);

/// A device that does not support a kind of pool, named by its attribute.
pub(crate) fn unsupported(device: Device, what: &str, attribute: &str) -> Error {
    Error::InvalidArgument {
        name: "device",
        reason: format!(
            "device {} does not support {what} (CU_DEVICE_ATTRIBUTE_{attribute}_SUPPORTED is 0)",
            device.ordinal()
        ),
    }
}

/// `CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES` (an `int`).
pub(crate) const REUSE_FOLLOW_EVENT_DEPENDENCIES: i32 = 1;
/// `CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC` (an `int`).
pub(crate) const REUSE_ALLOW_OPPORTUNISTIC: i32 = 2;
/// `CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES` (an `int`).
pub(crate) const REUSE_ALLOW_INTERNAL_DEPENDENCIES: i32 = 3;
/// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` (a `cuuint64_t`).
pub(crate) const RELEASE_THRESHOLD: i32 = 4;
/// `CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT` (then `_HIGH`, `USED_MEM_CURRENT`, `USED_MEM_HIGH`).
pub(crate) const RESERVED_MEM_CURRENT: i32 = 5;
pub(crate) const RESERVED_MEM_HIGH: i32 = 6;
pub(crate) const USED_MEM_CURRENT: i32 = 7;
pub(crate) const USED_MEM_HIGH: i32 = 8;

/// When a pool may hand out again memory freed in stream order, before the free is known
/// complete on the host: the pool's three reuse policies
/// (`CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES`, `_ALLOW_OPPORTUNISTIC`,
/// `_ALLOW_INTERNAL_DEPENDENCIES`). Every policy keeps the stream-order rules: the driver
/// reuses memory only where the work that used it is ordered before, or has finished before,
/// the new allocation. The default is the driver's: all three on.
///
/// ```no_run
/// use cuda_core::{Device, DeviceMemoryResource, DeviceMemoryResourceOptions, memory::ReusePolicy};
///
/// let pool = DeviceMemoryResource::new(Device::new(0)?, DeviceMemoryResourceOptions::default())?;
/// // Reuse memory only on the stream it was freed on, or after an event dependency.
/// pool.set_reuse_policy(ReusePolicy::default().with_allow_opportunistic(false).with_allow_internal_dependencies(false))?;
/// assert!(!pool.reuse_policy()?.allow_opportunistic);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES")]
pub struct ReusePolicy {
    /// Reuse memory freed on another stream when an event dependency (a wait on an event
    /// recorded after the free) orders the allocating stream after it.
    pub follow_event_dependencies: bool,
    /// Reuse memory whose free has completed on the device, whatever the streams' relation.
    pub allow_opportunistic: bool,
    /// Let the driver make the allocating stream wait for a pending free, so as to reuse its
    /// memory rather than reserve more.
    pub allow_internal_dependencies: bool,
}

impl Default for ReusePolicy {
    fn default() -> Self {
        ReusePolicy {
            follow_event_dependencies: true,
            allow_opportunistic: true,
            allow_internal_dependencies: true,
        }
    }
}

crate::options::chainers!(ReusePolicy {
    with_follow_event_dependencies(follow_event_dependencies: bool);
    with_allow_opportunistic(allow_opportunistic: bool);
    with_allow_internal_dependencies(allow_internal_dependencies: bool);
});

/// A pool's memory use, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolUsage {
    /// Memory the pool holds from the system now.
    pub reserved_current: u64,
    /// The most it has held since the high-water marks were reset.
    pub reserved_high: u64,
    /// Memory handed out in allocations now.
    pub used_current: u64,
    /// The most handed out at once.
    pub used_high: u64,
}

impl ReusePolicy {
    /// The policies with their attribute codes, in order.
    pub(crate) fn codes(self) -> [(i32, bool); 3] {
        [
            (
                REUSE_FOLLOW_EVENT_DEPENDENCIES,
                self.follow_event_dependencies,
            ),
            (REUSE_ALLOW_OPPORTUNISTIC, self.allow_opportunistic),
            (
                REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                self.allow_internal_dependencies,
            ),
        ]
    }
}

/// What every pool type holds and does alike: its handle, driver and context, whether this
/// value destroys it, and for a shareable pool its identity and its record of exports. Drops
/// the pool (as an own shared pool where shared) when this value made it.
pub(crate) struct PoolCore {
    pub(crate) pool: PoolHandle,
    pub(crate) driver: &'static dyn Driver,
    /// Keeps the context alive as long as memory of the pool may be handed out.
    pub(crate) context: Context,
    /// Whether dropping this destroys the pool (not a default pool or a wrapped one).
    pub(crate) owned: bool,
    /// What names a shareable pool to other processes.
    pub(crate) sharing: Option<PoolIdentity>,
    /// Whether the pool was exported once, and its record of the exported buffers still
    /// allocated (see `ipc::Exports`).
    pub(crate) exports: ipc::Exports,
    /// The kind of pool, for what a failed destruction logs ("a pinned memory pool").
    pub(crate) what: &'static str,
    /// The option that makes a pool of this kind shareable, for the error of `identity`.
    pub(crate) shareable_option: &'static str,
    /// Where its memory lives, as it was made (or, for a default or wrapped pool, its device).
    pub(crate) location: PoolLocation,
    /// Managed memory rather than pinned: with `location`, which current pool it can be.
    pub(crate) managed: bool,
}

impl PoolCore {
    /// A pool of `context`'s device, of memory at `location` (`managed` or pinned), that this
    /// value destroys when `owned`.
    pub(crate) fn new(
        pool: PoolHandle,
        context: Context,
        owned: bool,
        (location, managed): (PoolLocation, bool),
        what: &'static str,
        shareable_option: &'static str,
    ) -> PoolCore {
        PoolCore {
            pool,
            driver: context.driver(),
            context,
            owned,
            sharing: None,
            exports: ipc::Exports::default(),
            what,
            shareable_option,
            location,
            managed,
        }
    }

    /// Makes the pool shareable as `identity` (it was made with a POSIX handle type).
    pub(crate) fn share_as(&mut self, identity: PoolIdentity) {
        self.sharing = Some(identity);
        ipc::register_own(self.pool, identity);
    }

    /// The pool's identity for other processes; a pool not made shareable is refused.
    pub(crate) fn identity(&self) -> Result<PoolIdentity> {
        self.sharing.ok_or_else(|| Error::InvalidArgument {
            name: "self",
            reason: format!(
                "the pool was not made shareable ({})",
                self.shareable_option
            ),
        })
    }

    /// Exports the pool for other processes.
    pub(crate) fn share(&self) -> Result<SharedPoolHandle> {
        ipc::share_pool(&self.context, self.pool, self.identity()?, &self.exports)
    }

    /// Describes `buffer`, one of `resource`'s (the pool type holding this core).
    pub(crate) fn export_buffer<R>(
        &self,
        resource: &R,
        buffer: &Buffer,
    ) -> Result<BufferDescriptor> {
        let identity = self.identity()?;
        ipc::export_buffer(
            &self.context,
            resource,
            buffer,
            self.pool,
            identity,
            &self.exports,
        )
    }
}

impl Drop for PoolCore {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let destroyed = if self.sharing.is_some() {
            ipc::destroy_own(self.driver, self.pool)
        } else {
            self.driver.mem_pool_destroy(self.pool)
        };
        if let Err(e) = destroyed {
            log::error!(
                "destroying {} of device {}: {e}",
                self.what,
                self.context.device().ordinal()
            );
        }
    }
}

/// The attribute methods of a pool type with a `core: PoolCore` field.
macro_rules! pool_attributes {
    ($ty:ident) => {
        impl $ty {
            /// The pool's memory use now and its high-water marks.
            #[doc(alias = "cuMemPoolGetAttribute")]
            pub fn usage(&self) -> $crate::error::Result<$crate::memory::PoolUsage> {
                use $crate::memory::pool as attr;
                let get = |attribute| self.core.driver.mem_pool_get_u64(self.core.pool, attribute);
                Ok($crate::memory::PoolUsage {
                    reserved_current: get(attr::RESERVED_MEM_CURRENT)?,
                    reserved_high: get(attr::RESERVED_MEM_HIGH)?,
                    used_current: get(attr::USED_MEM_CURRENT)?,
                    used_high: get(attr::USED_MEM_HIGH)?,
                })
            }

            /// Resets the high-water marks to the current values.
            #[doc(alias = "cuMemPoolSetAttribute")]
            pub fn reset_high_water_marks(&self) -> $crate::error::Result<()> {
                use $crate::memory::pool as attr;
                // The driver accepts only zero for these attributes.
                self.core
                    .driver
                    .mem_pool_set_u64(self.core.pool, attr::RESERVED_MEM_HIGH, 0)?;
                self.core
                    .driver
                    .mem_pool_set_u64(self.core.pool, attr::USED_MEM_HIGH, 0)
            }

            /// The release threshold, in bytes.
            #[doc(alias = "cuMemPoolGetAttribute")]
            pub fn release_threshold(&self) -> $crate::error::Result<u64> {
                self.core
                    .driver
                    .mem_pool_get_u64(self.core.pool, $crate::memory::pool::RELEASE_THRESHOLD)
            }

            /// Sets the release threshold, in bytes: how much reserved memory the pool keeps
            /// at a synchronisation instead of returning it (`u64::MAX`: keep everything).
            #[doc(alias = "cuMemPoolSetAttribute")]
            pub fn set_release_threshold(&self, bytes: u64) -> $crate::error::Result<()> {
                self.core.driver.mem_pool_set_u64(
                    self.core.pool,
                    $crate::memory::pool::RELEASE_THRESHOLD,
                    bytes,
                )
            }

            /// The pool's reuse policies (see [`ReusePolicy`](crate::memory::ReusePolicy)).
            #[doc(alias = "cuMemPoolGetAttribute")]
            pub fn reuse_policy(&self) -> $crate::error::Result<$crate::memory::ReusePolicy> {
                use $crate::memory::pool as attr;
                let get = |attribute| {
                    self.core
                        .driver
                        .pool_get_i32(self.core.pool, attribute)
                        .map(|v| v != 0)
                };
                Ok($crate::memory::ReusePolicy {
                    follow_event_dependencies: get(attr::REUSE_FOLLOW_EVENT_DEPENDENCIES)?,
                    allow_opportunistic: get(attr::REUSE_ALLOW_OPPORTUNISTIC)?,
                    allow_internal_dependencies: get(attr::REUSE_ALLOW_INTERNAL_DEPENDENCIES)?,
                })
            }

            /// Sets the pool's three reuse policies (see [`ReusePolicy`](crate::memory::ReusePolicy)).
            #[doc(alias = "cuMemPoolSetAttribute")]
            pub fn set_reuse_policy(
                &self,
                policy: $crate::memory::ReusePolicy,
            ) -> $crate::error::Result<()> {
                for (attribute, on) in policy.codes() {
                    self.core
                        .driver
                        .pool_set_i32(self.core.pool, attribute, i32::from(on))?;
                }
                Ok(())
            }

            /// Returns reserved memory that no allocation uses to the system until the pool
            /// holds no more than `keep` bytes, or nothing more can be released
            /// (`cuMemPoolTrimTo`). Memory whose free in stream order the host has not yet
            /// seen complete (by a synchronisation) can count as in use.
            #[doc(alias = "cuMemPoolTrimTo")]
            pub fn trim_to(&self, keep: usize) -> $crate::error::Result<()> {
                self.core.driver.pool_trim_to(self.core.pool, keep)
            }

            /// The raw `CUmemoryPool`.
            pub fn as_raw(&self) -> *mut std::ffi::c_void {
                self.core.pool.0
            }

            /// Makes this pool the current pool of its location and kind of memory: the pool
            /// that allocations naming none come from there. For a device's memory, that is
            /// `cuMemAllocAsync` and the CUDA runtime's `cudaMallocAsync` in other libraries
            /// of the process (`cuDeviceSetMemPool`); for host and managed memory, the pool
            /// `cuMemGetMemPool` names, which libraries that allocate by location and kind
            /// (Python's cuda.core on CUDA 13, say) allocate from (`cuMemSetMemPool`: the 13
            /// ABI, drivers 13.0 and newer; [`Error::NotSupported`](crate::Error::NotSupported)
            /// elsewhere, without a call). The process keeps the pool for good from then on
            /// (it must outlive its time as current, which this crate cannot end), as it keeps
            /// a default resource: route at setup, not in a loop. The location's default pool
            /// made current again routes back.
            #[doc(alias("cuDeviceSetMemPool", "cuMemSetMemPool"))]
            pub fn make_current(self: &std::sync::Arc<Self>) -> $crate::error::Result<()> {
                let core = &self.core;
                $crate::memory::pool::keep_current(self.clone(), core.pool);
                core.context.with_current(|driver| {
                    driver.pool_set_current(core.location, core.managed, core.pool)
                })
            }

            /// What the driver says this pool is: its kind of memory, location, whether it can
            /// be shared through file descriptors, and its size limit (`cuMemPoolGetAttribute`
            /// of `CU_MEMPOOL_ATTR_ALLOCATION_TYPE`, `_EXPORT_HANDLE_TYPES`, `_LOCATION_TYPE`,
            /// `_LOCATION_ID` and `_MAX_POOL_SIZE`: drivers 13.2 and newer;
            /// [`Error::NotSupported`](crate::Error::NotSupported) before, without a call). For
            /// a pool wrapped from elsewhere, it says what the pool is rather than what the
            /// wrapper was told.
            #[doc(alias("CU_MEMPOOL_ATTR_ALLOCATION_TYPE", "CU_MEMPOOL_ATTR_LOCATION_TYPE"))]
            pub fn description(&self) -> $crate::error::Result<$crate::memory::PoolDescription> {
                $crate::memory::pool::describe(&self.core)
            }

            /// Whether this pool is the current pool of its location and kind of memory (see
            /// [`make_current`](Self::make_current); `cuDeviceGetMemPool`, `cuMemGetMemPool`).
            #[doc(alias("cuDeviceGetMemPool", "cuMemGetMemPool"))]
            pub fn is_current(&self) -> $crate::error::Result<bool> {
                let core = &self.core;
                let current = core
                    .context
                    .with_current(|driver| driver.pool_current(core.location, core.managed))?;
                Ok(current == core.pool)
            }
        }
    };
}

/// What a pool is, as the driver reports it (`description` of
/// [`DeviceMemoryResource`](super::DeviceMemoryResource::description),
/// [`PinnedMemoryPool`](super::PinnedMemoryPool::description) and
/// [`ManagedMemoryPool`](super::ManagedMemoryPool::description)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolDescription {
    /// Managed memory (`CU_MEM_ALLOCATION_TYPE_MANAGED`) rather than pinned.
    pub managed: bool,
    /// Where its memory lives. `None` for no place (a managed pool without a preferred
    /// location) or one this process cannot see (`CU_MEM_LOCATION_TYPE_INVISIBLE`: a pool
    /// imported from a device it does not see).
    pub location: Option<super::MemoryLocation>,
    /// Whether it can be shared through POSIX file descriptors
    /// (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` among its export handle types; never for an
    /// imported pool, which cannot be shared again).
    pub shareable: bool,
    /// Its size limit in bytes, `None` for none (`CU_MEMPOOL_ATTR_MAX_POOL_SIZE` 0; for
    /// managed and imported pools the system decides it).
    pub max_size: Option<u64>,
}

/// The first driver that answers the pool attributes of [`PoolDescription`].
pub(crate) const POOL_DESCRIPTIONS: DriverVersion = DriverVersion(13020);

/// `CU_MEMPOOL_ATTR_ALLOCATION_TYPE` to `_MAX_POOL_SIZE`.
const ALLOCATION_TYPE: i32 = 9;
const EXPORT_HANDLE_TYPES: i32 = 10;
const LOCATION_ID: i32 = 11;
const LOCATION_TYPE: i32 = 12;
const MAX_POOL_SIZE: i32 = 13;

/// A pool's [`PoolDescription`], from the driver.
pub(crate) fn describe(core: &PoolCore) -> Result<PoolDescription> {
    core.context.require_driver(
        POOL_DESCRIPTIONS,
        "cuMemPoolGetAttribute of a pool's allocation type, location, export handles and size \
         limit (drivers 13.2 and newer)",
    )?;
    let int = |attribute| core.driver.pool_get_i32(core.pool, attribute);
    let id = int(LOCATION_ID)?;
    let location = match int(LOCATION_TYPE)? {
        1 => Some(super::MemoryLocation::Device(Device::from_handle(id))),
        2 => Some(super::MemoryLocation::Host),
        3 => Some(super::MemoryLocation::HostNuma(id.max(0) as u32)),
        4 => Some(super::MemoryLocation::HostNumaCurrent),
        _ => None,
    };
    let max_size = core.driver.mem_pool_get_u64(core.pool, MAX_POOL_SIZE)?;
    Ok(PoolDescription {
        managed: int(ALLOCATION_TYPE)? == 2,
        location,
        shareable: int(EXPORT_HANDLE_TYPES)? & 1 != 0,
        max_size: (max_size != 0).then_some(max_size),
    })
}

/// Pools made current ([`DeviceMemoryResource::make_current`](super::DeviceMemoryResource::make_current)
/// and the others), with their raw handles: kept for good, since the crate cannot know when
/// another pool replaces one as current.
static KEPT_CURRENT: std::sync::Mutex<Vec<(PoolHandle, CurrentPool)>> =
    std::sync::Mutex::new(Vec::new());

/// A pool kept as current, as any of the three kinds.
type CurrentPool = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// Keeps `pool` (whose raw handle is `raw`) for good, once.
pub(crate) fn keep_current(pool: CurrentPool, raw: PoolHandle) {
    let mut kept = KEPT_CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    if !kept
        .iter()
        .any(|(h, p)| *h == raw && std::sync::Arc::ptr_eq(p, &pool))
    {
        kept.push((raw, pool));
    }
}

/// The pool of type `T` kept as current with raw handle `raw`, if any.
pub(crate) fn kept_current<T: std::any::Any + Send + Sync>(
    raw: PoolHandle,
) -> Option<std::sync::Arc<T>> {
    let kept = KEPT_CURRENT.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter()
        .rev()
        .filter(|(h, _)| *h == raw)
        .find_map(|(_, pool)| pool.clone().downcast::<T>().ok())
}
pub(crate) use pool_attributes;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_policies_map_to_their_attribute_codes() {
        let policy = ReusePolicy {
            follow_event_dependencies: true,
            allow_opportunistic: false,
            allow_internal_dependencies: true,
        };
        assert_eq!(policy.codes(), [(1, true), (2, false), (3, true)]);
        let policy = ReusePolicy::default()
            .with_follow_event_dependencies(false)
            .with_allow_internal_dependencies(false);
        assert_eq!(policy.codes(), [(1, false), (2, true), (3, false)]);
        assert_eq!(
            ReusePolicy::default().codes().map(|(_, on)| on),
            [true; 3],
            "the driver's default is all three on"
        );
    }
}
