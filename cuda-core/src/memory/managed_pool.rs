//! Managed memory from memory pools ([`ManagedMemoryPool`]), allocated and freed in stream
//! order.

use std::fmt;
use std::sync::Arc;

use super::pool::{unsupported, PoolCore, HOST_AND_MANAGED_POOLS};
use super::{check_request, DevicePtr, MemoryResource};
use crate::device::Device;
use crate::driver::{PoolLocation, PoolSpec};
use crate::error::{Error, Result};
use crate::stream::Stream;

/// The preferred location of a managed pool's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ManagedLocation {
    /// No preferred location (`CU_MEM_LOCATION_TYPE_NONE`).
    #[default]
    None,
    /// A device's memory.
    Device(Device),
    /// Host memory (`CU_MEM_LOCATION_TYPE_HOST`).
    Host,
    /// Host memory of a NUMA node (`CU_MEM_LOCATION_TYPE_HOST_NUMA`).
    HostNuma(u32),
}

/// Options of a new pool of managed memory: see [`ManagedMemoryPool::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManagedMemoryPoolOptions {
    /// Where the driver prefers to keep the pool's memory.
    pub preferred_location: ManagedLocation,
    /// How much reserved memory the pool keeps at a synchronisation, in bytes; `None` leaves
    /// the driver's default.
    pub release_threshold: Option<u64>,
}

crate::options::chainers!(ManagedMemoryPoolOptions {
    with_preferred_location(preferred_location: ManagedLocation);
    with_release_threshold(release_threshold: u64) => some;
});

/// Managed (unified) memory from a memory pool (`cuMemPoolCreate` with
/// `CU_MEM_ALLOCATION_TYPE_MANAGED`), allocated and freed in stream order: migrated between
/// the host and the devices on demand, readable and writable by both. The driver has these
/// pools from 13.0, through the CUDA 13 ABI only (the 12.9 header has no managed allocation
/// type: [`Error::NotSupported`]), and only where every device has concurrent managed access.
/// A managed pool has no size limit and cannot be shared with other processes.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, StreamOptions, memory::{ManagedLocation, ManagedMemoryPool, ManagedMemoryPoolOptions}};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let options = ManagedMemoryPoolOptions::default().with_preferred_location(ManagedLocation::Device(device));
/// let pool = ManagedMemoryPool::new(device, options)?;
/// let mut buffer = pool.allocate(4096, &stream)?;
/// buffer.fill(3u32, &stream)?;
/// stream.sync()?;
/// // SAFETY: the stream is synchronised; nothing else uses the buffer while the view lives.
/// assert!(unsafe { buffer.as_slice::<u32>() }?.iter().all(|&x| x == 3));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "CU_MEM_ALLOCATION_TYPE_MANAGED")]
pub struct ManagedMemoryPool {
    /// The pool and its context (never shareable).
    core: PoolCore,
    location: ManagedLocation,
}

impl fmt::Debug for ManagedMemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedMemoryPool")
            .field("pool", &self.core.pool.0)
            .field("device", &self.core.context.device().ordinal())
            .field("preferred_location", &self.location)
            .finish()
    }
}

impl ManagedMemoryPool {
    /// A new pool of managed memory, made through `device`'s primary context; destroyed when
    /// the last reference drops (after its buffers, which hold one). A driver older than 13.0
    /// or the 12 ABI is [`Error::NotSupported`]; a device without concurrent managed access
    /// ([`DeviceProperties::concurrent_managed_access`](crate::DeviceProperties::concurrent_managed_access)),
    /// or a NUMA node id out of range, [`Error::InvalidArgument`], before the driver.
    #[doc(alias = "cuMemPoolCreate")]
    pub fn new(
        device: Device,
        options: ManagedMemoryPoolOptions,
    ) -> Result<Arc<ManagedMemoryPool>> {
        let context = device.primary_context()?;
        context.require_driver(
            HOST_AND_MANAGED_POOLS,
            "cuMemPoolCreate of managed memory (CU_MEM_ALLOCATION_TYPE_MANAGED: drivers 13.0 \
             and newer)",
        )?;
        let location = match options.preferred_location {
            ManagedLocation::None => PoolLocation::Unspecified,
            ManagedLocation::Device(preferred) => PoolLocation::Device(preferred.handle()),
            ManagedLocation::Host => PoolLocation::Host,
            ManagedLocation::HostNuma(node) => match i32::try_from(node) {
                Ok(id) => PoolLocation::HostNuma(id),
                Err(_) => {
                    return Err(Error::InvalidArgument {
                        name: "options.preferred_location",
                        reason: format!("{node} is not a NUMA node id"),
                    })
                }
            },
        };
        for other in Device::all()? {
            if !other.properties().concurrent_managed_access()? {
                return Err(unsupported(
                    other,
                    "concurrent managed access, which managed pools need on every device",
                    "CONCURRENT_MANAGED_ACCESS",
                ));
            }
        }
        let _driver = context.driver();
        let pool = context.with_current(|driver| {
            driver.pool_create(&PoolSpec {
                managed: true,
                location,
                posix_fd: false,
                max_size: 0,
            })
        })?;
        let made = Arc::new(ManagedMemoryPool {
            core: PoolCore::new(
                pool,
                context,
                true,
                (location, true),
                "a managed memory pool",
                "none",
            ),
            location: options.preferred_location,
        });
        if let Some(threshold) = options.release_threshold {
            made.set_release_threshold(threshold)?;
        }
        Ok(made)
    }

    /// The preferred location it was made with.
    pub fn preferred_location(&self) -> ManagedLocation {
        self.location
    }
}

super::pool::pool_attributes!(ManagedMemoryPool);

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes of managed
// memory (accessible from the host and every device for its whole life), freed only through
// `deallocate` (in order on its stream); the answers are this memory kind's.
unsafe impl MemoryResource for ManagedMemoryPool {
    #[inline]
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, None)?;
        stream
            .queue(|driver, handle| driver.mem_alloc_from_pool_async(size, self.core.pool, handle))
            .map(DevicePtr)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.queue(|driver, handle| driver.mem_free_async(ptr.0, handle))
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn device(&self) -> Option<Device> {
        Some(self.core.context.device())
    }

    /// Managed memory is accessible from every device.
    fn is_accessible_from(&self, _device: Device) -> Result<bool> {
        Ok(true)
    }
}
