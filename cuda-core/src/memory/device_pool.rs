//! Device memory from a memory pool, allocated and freed in stream order.

use std::fmt;
use std::sync::Arc;

use super::pool::PoolCore;
use super::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::Device;
use crate::driver::{PoolHandle, PoolLocation, PoolSpec};
use crate::error::{Error, Result};
use crate::ipc::{BufferDescriptor, PoolIdentity, SharedPoolHandle};
use crate::lifetime::small;
use crate::stream::Stream;

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`, as a bit of
/// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`.
pub(crate) const POSIX_FD_HANDLES: u32 = 1;

/// Options of a new memory pool: see [`DeviceMemoryResource::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceMemoryResourceOptions {
    /// The most the pool may reserve, in bytes; `None` for no limit beyond the device's.
    pub max_size: Option<usize>,
    /// How much reserved memory the pool keeps when it could release it to the system at a
    /// synchronisation, in bytes; `None` leaves the driver's default (0: release all).
    pub release_threshold: Option<u64>,
    /// Whether other processes may import the pool and its buffers, by POSIX file descriptor
    /// ([`DeviceMemoryResource::share`]; see [`ipc`](crate::ipc)).
    pub shareable: bool,
}

crate::options::chainers!(DeviceMemoryResourceOptions {
    with_max_size(max_size: usize) => some;
    with_release_threshold(release_threshold: u64) => some;
    with_shareable(shareable: bool);
});

/// Device memory from a memory pool: the device's default pool, or a pool of its own.
/// Allocation and free are stream-ordered (`cuMemAllocFromPoolAsync`, `cuMemFreeAsync`) and
/// cost nothing beyond those calls.
///
/// # Small buffers
///
/// Buffers of the device's default pool ([`DeviceMemoryResource::default_pool`], what
/// [`Device::memory_resource`](crate::Device::memory_resource) hands out) of at most 64 KiB
/// are allocated in power-of-two sizes of at least 256 bytes, and a stream made with
/// `create_stream` keeps one freed buffer of each such size for its next allocation of that
/// size: a free and an allocation on the same stream then make no driver call. That keeps the
/// stream-order rules: the kept memory is reused only on the stream it was freed on, after
/// everything queued there before the free. What a stream keeps (at most nine buffers, about
/// 128 KiB) counts as used in the pool's [`usage`](Self::usage) until the stream is dropped,
/// which frees it. Pools of their own, and pools wrapped by [`from_raw`](Self::from_raw),
/// allocate exactly what is asked and keep nothing.
///
/// # Sharing with other processes
///
/// A pool made [`shareable`](DeviceMemoryResourceOptions::shareable) exports itself
/// ([`share`](Self::share)) and its buffers ([`export_buffer`](Self::export_buffer)) for other
/// processes, which import them with [`ImportedPool`](crate::ipc::ImportedPool): see
/// [`ipc`](crate::ipc). Its attributes (use, release threshold, reuse
/// policies, trim) are those of every pool kind.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, DeviceMemoryResource, DeviceMemoryResourceOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let pool = DeviceMemoryResource::new(
///     device,
///     DeviceMemoryResourceOptions::default().with_release_threshold(1 << 30),
/// )?;
/// let buffer = pool.allocate(1 << 20, &stream)?;
/// assert!(pool.usage()?.used_current >= 1 << 20);
/// drop(buffer);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("CUmemoryPool", "cuMemAllocFromPoolAsync"))]
pub struct DeviceMemoryResource {
    /// The pool, its primary context, and whether this value destroys it.
    core: PoolCore,
    device: Device,
    total_memory: usize,
    /// The device's default pool, whose small buffers streams keep (see "Small buffers").
    caches_small: bool,
    /// Orders other devices' access checks before a revocation (see `memory::access`).
    gate: super::access::AccessGate,
}

impl fmt::Debug for DeviceMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceMemoryResource")
            .field("device", &self.device.ordinal())
            .field("pool", &self.core.pool.0)
            .field("owned", &self.core.owned)
            .field("shareable", &self.core.sharing.is_some())
            .finish()
    }
}

impl DeviceMemoryResource {
    /// The gate that orders checks of access to its memory before a revocation (see
    /// `memory::access`).
    #[inline]
    pub(crate) fn gate(&self) -> &super::access::AccessGate {
        &self.gate
    }

    /// The device's default memory pool (`cuDeviceGetDefaultMemPool`).
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    pub fn default_pool(device: Device) -> Result<Arc<DeviceMemoryResource>> {
        let context = device.primary_context()?;
        let driver = context.driver();
        let pool = driver.device_get_default_mem_pool(device.handle())?;
        let mut resource = Self::wrap(pool, device, false, context, device.total_memory()?);
        if let Some(resource) = Arc::get_mut(&mut resource) {
            resource.caches_small = true;
        }
        Ok(resource)
    }

    /// A new memory pool of device memory on `device` (`cuMemPoolCreate`), destroyed when the
    /// last reference drops (after its buffers, which hold one).
    #[doc(alias = "cuMemPoolCreate")]
    pub fn new(
        device: Device,
        options: DeviceMemoryResourceOptions,
    ) -> Result<Arc<DeviceMemoryResource>> {
        if options.max_size == Some(0) {
            return Err(Error::InvalidArgument {
                name: "options.max_size",
                reason: "a pool needs room for at least one byte; use None for no limit".to_owned(),
            });
        }
        let sharing = if options.shareable {
            if device.properties().mempool_supported_handle_types()? & POSIX_FD_HANDLES == 0 {
                return Err(Error::InvalidArgument {
                    name: "options.shareable",
                    reason: format!(
                        "device {}'s memory pools cannot be shared by POSIX file descriptor \
                         (CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)",
                        device.ordinal()
                    ),
                });
            }
            Some(PoolIdentity::device(device.uuid()?))
        } else {
            None
        };
        let context = device.primary_context()?;
        let driver = context.driver();
        // Asked before the pool exists, so that no failure after leaves it undestroyed.
        let total_memory = device.total_memory()?;
        let max_size = options.max_size.unwrap_or(0);
        let pool = if sharing.is_some() {
            driver.pool_create(&PoolSpec {
                managed: false,
                location: PoolLocation::Device(device.handle()),
                posix_fd: true,
                max_size,
            })?
        } else {
            driver.mem_pool_create(device.handle(), max_size)?
        };
        let mut resource = Self::wrap(pool, device, true, context, total_memory);
        if let (Some(resource), Some(identity)) = (Arc::get_mut(&mut resource), sharing) {
            resource.core.share_as(identity);
        }
        if let Some(threshold) = options.release_threshold {
            resource.set_release_threshold(threshold)?;
        }
        Ok(resource)
    }

    fn wrap(
        pool: PoolHandle,
        device: Device,
        owned: bool,
        context: Context,
        total_memory: usize,
    ) -> Arc<DeviceMemoryResource> {
        Arc::new(DeviceMemoryResource {
            core: PoolCore::new(
                pool,
                context,
                owned,
                (PoolLocation::Device(device.handle()), false),
                "a device memory pool",
                "DeviceMemoryResourceOptions::shareable",
            ),
            device,
            total_memory,
            caches_small: false,
            gate: super::access::AccessGate::default(),
        })
    }

    /// Wraps a memory pool made elsewhere (by another library) without taking ownership:
    /// dropping the result does not destroy the pool.
    ///
    /// # Safety
    ///
    /// `pool` must be a valid `CUmemoryPool` of device memory on `device`, and must stay valid
    /// for as long as the result, or any buffer allocated from it, is used.
    pub unsafe fn from_raw(
        pool: *mut std::ffi::c_void,
        device: Device,
    ) -> Result<Arc<DeviceMemoryResource>> {
        Ok(Self::wrap(
            PoolHandle(pool),
            device,
            false,
            device.primary_context()?,
            device.total_memory()?,
        ))
    }

    /// Whether this is a pool made, and destroyed, by this value: a pool of its own rather than
    /// the device's default pool or one wrapped by [`from_raw`](Self::from_raw).
    pub fn is_owned(&self) -> bool {
        self.core.owned
    }

    /// Whether the pool was made [`shareable`](DeviceMemoryResourceOptions::shareable).
    pub fn is_shareable(&self) -> bool {
        self.core.sharing.is_some()
    }

    /// Exports the pool for other processes (`cuMemPoolExportToShareableHandle`): each call
    /// makes a new file descriptor. A pool not made shareable is [`Error::InvalidArgument`].
    /// See [`ipc`](crate::ipc).
    #[doc(alias = "cuMemPoolExportToShareableHandle")]
    pub fn share(&self) -> Result<SharedPoolHandle> {
        self.core.share()
    }

    /// Describes `buffer`, one of this pool's, for a process that imported the pool
    /// (`cuMemPoolExportPointer`). A buffer of another resource, a pool not made shareable,
    /// or a pool with 2^20 exported buffers still allocated (as many as its record of live
    /// buffers holds), is [`Error::InvalidArgument`].
    ///
    /// The other process may use the memory as soon as it imports it: let it do so only once
    /// the allocation (queued on the buffer's stream) and the work it should see are done.
    /// Keep the buffer until every importer has released it (see
    /// [`ipc`](crate::ipc)).
    #[doc(alias = "cuMemPoolExportPointer")]
    pub fn export_buffer(&self, buffer: &Buffer) -> Result<BufferDescriptor> {
        self.core.export_buffer(self, buffer)
    }

    /// Grants `peers` read-write access to all of the pool's memory, present and future, and
    /// revokes it from every other device but the pool's own (`cuMemPoolSetAccess`). Work on
    /// a stream of a peer (kernels, fills, copies) may then use the pool's buffers. Each peer
    /// must be able to access this device ([`Device::can_access_peer`]); one that cannot is
    /// [`Error::InvalidArgument`], before anything changes. The pool's own device always has
    /// access and may be listed.
    ///
    /// Before a device loses access, copies being queued from other threads finish queueing
    /// (their checks refuse it from then on), and the work queued in its contexts (its primary
    /// context and the green contexts this process made) is waited for (`cuCtxSynchronize`),
    /// so that no kernel or copy already queued there loses it midway; work of contexts made
    /// elsewhere is the caller's to finish.
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, DeviceMemoryResource, StreamOptions};
    ///
    /// let (d0, d1) = (Device::new(0)?, Device::new(1)?);
    /// let pool = DeviceMemoryResource::default_pool(d0)?;
    /// pool.set_peer_access(&[d1])?;
    /// let s1 = d1.create_stream(StreamOptions::default())?;
    /// let s0 = d0.create_stream(StreamOptions::default())?;
    /// let on_d0 = pool.allocate(4096, &s0)?;
    /// let mut on_d1 = d1.memory_resource()?.allocate(4096, &s1)?;
    /// s0.sync()?;
    /// on_d1.copy_from(&on_d0, &s1)?; // device 1 reads device 0's pool memory
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemPoolSetAccess")]
    pub fn set_peer_access(&self, peers: &[Device]) -> Result<()> {
        for peer in peers {
            if *peer != self.device && !peer.can_access_peer(&self.device)? {
                return Err(Error::InvalidArgument {
                    name: "peers",
                    reason: format!(
                        "device {} cannot access device {}'s memory (cuDeviceCanAccessPeer)",
                        peer.ordinal(),
                        self.device.ordinal()
                    ),
                });
            }
        }
        for other in Device::all()? {
            if other == self.device {
                continue;
            }
            let wanted = peers.contains(&other);
            if wanted {
                self.core
                    .driver
                    .mem_pool_set_access(self.core.pool, other.handle(), true)?;
            } else if self.is_accessible_from(other)? {
                self.gate.revoke(other, || {
                    crate::context::Context::sync_device(other)?;
                    self.core
                        .driver
                        .mem_pool_set_access(self.core.pool, other.handle(), false)
                })?;
            }
        }
        Ok(())
    }

    /// The devices other than the pool's own that have read-write access to its memory
    /// (`cuMemPoolGetAccess`).
    #[doc(alias = "cuMemPoolGetAccess")]
    pub fn peer_access(&self) -> Result<Vec<Device>> {
        let mut peers = Vec::new();
        for other in Device::all()? {
            if other != self.device && self.is_accessible_from(other)? {
                peers.push(other);
            }
        }
        Ok(peers)
    }
}

super::pool::pool_attributes!(DeviceMemoryResource);

impl DeviceMemoryResource {
    /// `device`'s current pool (`cuDeviceGetMemPool`; see [`make_current`](Self::make_current)):
    /// its default pool, or the pool last made current through this crate. `None` where
    /// another library made a pool of its own current: the crate does not wrap a pool whose
    /// life it cannot keep ([`from_raw`](Self::from_raw) does, `unsafe`).
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceMemoryResource, DeviceMemoryResourceOptions};
    ///
    /// let device = Device::new(0)?;
    /// let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default())?;
    /// // Other libraries' `cudaMallocAsync` on this device now allocate from `pool`.
    /// pool.make_current()?;
    /// assert!(pool.is_current()?);
    /// let current = DeviceMemoryResource::current(device)?.expect("made current here");
    /// assert_eq!(current.as_raw(), pool.as_raw());
    /// // And back to the default pool.
    /// DeviceMemoryResource::default_pool(device)?.make_current()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuDeviceGetMemPool")]
    pub fn current(device: Device) -> Result<Option<Arc<DeviceMemoryResource>>> {
        let context = device.primary_context()?;
        let current = context.with_current(|driver| {
            driver.pool_current(PoolLocation::Device(device.handle()), false)
        })?;
        if current
            == context
                .driver()
                .device_get_default_mem_pool(device.handle())?
        {
            return Self::default_pool(device).map(Some);
        }
        Ok(super::pool::kept_current::<DeviceMemoryResource>(current))
    }
}

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes, freed only
// through `deallocate` (in order on its stream); the answers are this memory kind's.
unsafe impl MemoryResource for DeviceMemoryResource {
    #[inline]
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, Some(self.device))?;
        if size > self.total_memory {
            return Err(Error::InvalidArgument {
                name: "size",
                reason: format!(
                    "{size} bytes is more than device {} has ({} bytes)",
                    self.device.ordinal(),
                    self.total_memory
                ),
            });
        }
        let mut bytes = size;
        if self.caches_small {
            if let Some((index, class_bytes)) = small::class_of(size) {
                if let Some(ptr) = stream.small_cache().and_then(|cache| cache.take(index)) {
                    return Ok(DevicePtr(ptr));
                }
                // The class's size, so that the allocation can serve any size of its class
                // once it is kept.
                bytes = class_bytes;
            }
        }
        stream
            .queue(|driver, handle| driver.mem_alloc_from_pool_async(bytes, self.core.pool, handle))
            .map(DevicePtr)
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: DevicePtr, size: usize, stream: &Stream) -> Result<()> {
        // Before the memory can be reused (the small-size cache included): importers refuse
        // the buffer's descriptors from here on (one load for a pool never exported).
        self.core.exports.freeing(ptr.0);
        if self.caches_small && stream.device() == self.device {
            if let (Some((index, _)), Some(cache)) = (small::class_of(size), stream.small_cache()) {
                if cache.give(index, ptr.0) {
                    return Ok(());
                }
            }
        }
        stream.queue(|driver, handle| driver.mem_free_async(ptr.0, handle))
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.device)
    }

    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        if device == self.device {
            return Ok(true);
        }
        if self.gate.is_revoking(device) {
            return Ok(false);
        }
        self.core
            .driver
            .mem_pool_get_access(self.core.pool, device.handle())
    }
}
