//! Pinned host memory from memory pools ([`PinnedMemoryPool`]), allocated and freed in stream
//! order.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::device_pool::POSIX_FD_HANDLES;
use super::pool::{unsupported, PoolCore, HOST_AND_MANAGED_POOLS};
use super::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::device::Device;
use crate::driver::{Driver, PoolHandle, PoolLocation, PoolSpec};
use crate::error::{Error, Result};
use crate::ipc::{BufferDescriptor, PoolIdentity, SharedPoolHandle};
use crate::stream::Stream;

/// Grants `device` read-write access to `pool` unless it has it.
fn grant(driver: &'static dyn Driver, pool: PoolHandle, device: Device) -> Result<()> {
    if !driver.mem_pool_get_access(pool, device.handle())? {
        driver.mem_pool_set_access(pool, device.handle(), true)?;
    }
    Ok(())
}

/// Options of a new pool of pinned host memory: see [`PinnedMemoryPool::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PinnedMemoryPoolOptions {
    /// The host NUMA node the memory comes from (`CU_MEM_LOCATION_TYPE_HOST_NUMA`); `None`
    /// for host memory of no particular node (`CU_MEM_LOCATION_TYPE_HOST`, drivers 13.0 and
    /// newer).
    pub numa_node: Option<u32>,
    /// The most the pool may reserve, in bytes; `None` for the system's limit.
    pub max_size: Option<usize>,
    /// How much reserved memory the pool keeps at a synchronisation, in bytes; `None` leaves
    /// the driver's default (0: release all).
    pub release_threshold: Option<u64>,
    /// Whether other processes may import the pool and its buffers by POSIX file descriptor
    /// ([`PinnedMemoryPool::share`]). The driver shares only pools of a NUMA node.
    pub shareable: bool,
}

crate::options::chainers!(PinnedMemoryPoolOptions {
    with_numa_node(numa_node: u32) => some;
    with_max_size(max_size: usize) => some;
    with_release_threshold(release_threshold: u64) => some;
    with_shareable(shareable: bool);
});

/// Page-locked host memory from a memory pool (`cuMemPoolCreate` of a host location),
/// allocated and freed in stream order (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`): readable
/// and writable by the host, and by kernels and copies of the devices granted access
/// ([`set_access`](Self::set_access); the device it is made with has it from the start).
///
/// A host view of a buffer ([`Buffer::as_slice`]) may be taken once the allocation is done
/// in stream order (synchronise the allocation stream first): until then, the memory may still
/// be in use by work queued before a free of its previous allocation.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, StreamOptions, memory::{PinnedMemoryPool, PinnedMemoryPoolOptions}};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let pool = PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default().with_numa_node(0))?;
/// let mut staging = pool.allocate(1 << 20, &stream)?;
/// staging.fill(1u8, &stream)?;
/// stream.sync()?;
/// // SAFETY: the stream is synchronised; nothing else uses the buffer while the view lives.
/// assert!(unsafe { staging.as_slice::<u8>() }?.iter().all(|&b| b == 1));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("CU_MEM_LOCATION_TYPE_HOST", "CU_MEM_LOCATION_TYPE_HOST_NUMA"))]
pub struct PinnedMemoryPool {
    /// The pool, its context, and for a shareable pool its identity and exports.
    core: PoolCore,
    numa_node: Option<u32>,
    /// Bit `d` set: device `d` has read-write access (devices 0 to 63; others are asked).
    access: AtomicU64,
    /// Held by `set_access`.
    changing: Mutex<()>,
    /// Orders copies' access checks before a revocation (see `memory::access`).
    gate: super::access::AccessGate,
}

impl fmt::Debug for PinnedMemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedMemoryPool")
            .field("pool", &self.core.pool.0)
            .field("numa_node", &self.numa_node)
            .field("shareable", &self.core.sharing.is_some())
            .finish()
    }
}

/// The bit of `device` in an access mask, for the first 64 devices.
fn access_bit(device: Device) -> Option<u64> {
    (device.ordinal() < 64).then(|| 1u64 << device.ordinal())
}

impl PinnedMemoryPool {
    /// The gate that orders checks of access to its memory before a revocation (see
    /// `memory::access`).
    #[inline]
    pub(crate) fn gate(&self) -> &super::access::AccessGate {
        &self.gate
    }

    /// A new pool of pinned host memory, made through `device`'s primary context, which gets
    /// read-write access to it; destroyed when the last reference drops (after its buffers,
    /// which hold one).
    ///
    /// Refused before the driver: a zero `max_size`; `shareable` without a NUMA node (the
    /// driver shares no pool of `CU_MEM_LOCATION_TYPE_HOST`); a device that does not support
    /// the pool asked for (`CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED`,
    /// `_HOST_MEMORY_POOLS_SUPPORTED`, `_MEMPOOL_SUPPORTED_HANDLE_TYPES`), or a driver older
    /// than 13.0 for a pool of no NUMA node ([`Error::NotSupported`]).
    #[doc(alias = "cuMemPoolCreate")]
    pub fn new(device: Device, options: PinnedMemoryPoolOptions) -> Result<Arc<PinnedMemoryPool>> {
        if options.max_size == Some(0) {
            return Err(Error::InvalidArgument {
                name: "options.max_size",
                reason: "a pool needs room for at least one byte; use None for no limit".to_owned(),
            });
        }
        let context = device.primary_context()?;
        let properties = device.properties();
        let location = match options.numa_node {
            None => {
                if options.shareable {
                    return Err(Error::InvalidArgument {
                        name: "options.shareable",
                        reason: "the driver shares only pools of a host NUMA node: set \
                                 options.numa_node"
                            .to_owned(),
                    });
                }
                context.require_driver(
                    HOST_AND_MANAGED_POOLS,
                    "cuMemPoolCreate of host memory of no NUMA node (CU_MEM_LOCATION_TYPE_HOST: \
                     drivers 13.0 and newer; a NUMA node's pool works before)",
                )?;
                if !properties.host_memory_pools_supported()? {
                    return Err(unsupported(
                        device,
                        "pools of host memory",
                        "HOST_MEMORY_POOLS",
                    ));
                }
                PoolLocation::Host
            }
            Some(node) => {
                let Ok(id) = i32::try_from(node) else {
                    return Err(Error::InvalidArgument {
                        name: "options.numa_node",
                        reason: format!("{node} is not a NUMA node id"),
                    });
                };
                if !properties.host_numa_memory_pools_supported()? {
                    return Err(unsupported(
                        device,
                        "pools of host NUMA memory",
                        "HOST_NUMA_MEMORY_POOLS",
                    ));
                }
                PoolLocation::HostNuma(id)
            }
        };
        if options.shareable && properties.mempool_supported_handle_types()? & POSIX_FD_HANDLES == 0
        {
            return Err(Error::InvalidArgument {
                name: "options.shareable",
                reason: format!(
                    "device {}'s memory pools cannot be shared by POSIX file descriptor \
                     (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)",
                    device.ordinal()
                ),
            });
        }
        let driver = context.driver();
        let pool = context.with_current(|driver| {
            driver.pool_create(&PoolSpec {
                managed: false,
                location,
                posix_fd: options.shareable,
                max_size: options.max_size.unwrap_or(0),
            })
        })?;
        let sharing = options
            .shareable
            .then(|| PoolIdentity::pinned(options.numa_node.map_or(0, |n| n as i32)));
        let mut core = PoolCore::new(
            pool,
            context,
            true,
            (location, false),
            "a pinned memory pool",
            "PinnedMemoryPoolOptions::shareable",
        );
        if let Some(identity) = sharing {
            core.share_as(identity);
        }
        let made = Arc::new(PinnedMemoryPool {
            core,
            numa_node: options.numa_node,
            access: AtomicU64::new(0),
            changing: Mutex::new(()),
            gate: super::access::AccessGate::default(),
        });
        grant(driver, pool, device)?;
        made.access
            .fetch_or(access_bit(device).unwrap_or(0), Ordering::Relaxed);
        if let Some(threshold) = options.release_threshold {
            made.set_release_threshold(threshold)?;
        }
        Ok(made)
    }

    /// The host NUMA node of the memory, if the pool has one.
    pub fn numa_node(&self) -> Option<u32> {
        self.numa_node
    }

    /// Grants `devices` read-write access to all of the pool's memory, present and future, and
    /// revokes it from every other device (`cuMemPoolSetAccess`): kernels and copies of those
    /// devices may then use its buffers, and their streams allocate from it. Before a device
    /// loses access, copies being queued from other threads finish queueing (their checks
    /// refuse it from then on), and the work queued in its contexts (its primary context and
    /// the green contexts this process made) is waited for, so that none loses access midway.
    /// Work queued in contexts made elsewhere is the caller's to finish.
    #[doc(alias = "cuMemPoolSetAccess")]
    pub fn set_access(&self, devices: &[Device]) -> Result<()> {
        // One change at a time, so that `access` follows the driver's calls in their order.
        let _changing = self.changing.lock().unwrap_or_else(|e| e.into_inner());
        for device in Device::all()? {
            let wanted = devices.contains(&device);
            let bit = access_bit(device);
            if wanted {
                self.core
                    .driver
                    .mem_pool_set_access(self.core.pool, device.handle(), true)?;
                if let Some(bit) = bit {
                    self.access.fetch_or(bit, Ordering::Relaxed);
                }
            } else if self
                .core
                .driver
                .mem_pool_get_access(self.core.pool, device.handle())?
            {
                self.gate.revoke(device, || {
                    crate::context::Context::sync_device(device)?;
                    self.core
                        .driver
                        .mem_pool_set_access(self.core.pool, device.handle(), false)?;
                    if let Some(bit) = bit {
                        self.access.fetch_and(!bit, Ordering::Relaxed);
                    }
                    Ok(())
                })?;
            } else if let Some(bit) = bit {
                self.access.fetch_and(!bit, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// The devices with read-write access to the pool's memory (`cuMemPoolGetAccess`).
    #[doc(alias = "cuMemPoolGetAccess")]
    pub fn access(&self) -> Result<Vec<Device>> {
        let mut granted = Vec::new();
        for device in Device::all()? {
            if self
                .core
                .driver
                .mem_pool_get_access(self.core.pool, device.handle())?
            {
                granted.push(device);
            }
        }
        Ok(granted)
    }

    /// Whether the pool was made [`shareable`](PinnedMemoryPoolOptions::shareable).
    pub fn is_shareable(&self) -> bool {
        self.core.sharing.is_some()
    }

    /// Exports the pool for other processes: see
    /// [`DeviceMemoryResource::share`](crate::DeviceMemoryResource::share).
    #[doc(alias = "cuMemPoolExportToShareableHandle")]
    pub fn share(&self) -> Result<SharedPoolHandle> {
        self.core.share()
    }

    /// Describes one of the pool's buffers for a process that imported the pool: see
    /// [`DeviceMemoryResource::export_buffer`](crate::DeviceMemoryResource::export_buffer).
    #[doc(alias = "cuMemPoolExportPointer")]
    pub fn export_buffer(&self, buffer: &Buffer) -> Result<BufferDescriptor> {
        self.core.export_buffer(self, buffer)
    }

    #[cold]
    fn no_access(&self, device: Device) -> Error {
        Error::InvalidArgument {
            name: "stream",
            reason: format!(
                "device {} has no access to this pinned pool; grant it with \
                 PinnedMemoryPool::set_access",
                device.ordinal()
            ),
        }
    }
}

super::pool::pool_attributes!(PinnedMemoryPool);

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes, of host memory
// the host may read and write for its whole life, freed only through `deallocate` (in order on
// its stream); the stream's device has access (checked).
unsafe impl MemoryResource for PinnedMemoryPool {
    #[inline]
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, None)?;
        let device = stream.device();
        if !self.is_accessible_from(device)? {
            return Err(self.no_access(device));
        }
        stream
            .queue(|driver, handle| driver.mem_alloc_from_pool_async(size, self.core.pool, handle))
            .map(DevicePtr)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        // Importers refuse the buffer's descriptors from here on.
        self.core.exports.freeing(ptr.0);
        stream.queue(|driver, handle| driver.mem_free_async(ptr.0, handle))
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn is_private_host_memory(&self) -> bool {
        // A pool this value made and does not share: no other process has its handle.
        self.core.owned && self.core.sharing.is_none()
    }

    fn device(&self) -> Option<Device> {
        None
    }

    /// From the access this value granted (devices 0 to 63: no driver call), else the
    /// driver's answer.
    #[inline]
    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        if self.gate.is_revoking(device) {
            return Ok(false);
        }
        match access_bit(device) {
            Some(bit) => Ok(self.access.load(Ordering::Relaxed) & bit != 0),
            None => self
                .core
                .driver
                .mem_pool_get_access(self.core.pool, device.handle()),
        }
    }
}
