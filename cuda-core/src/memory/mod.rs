//! Memory resources and buffers.
//!
//! A [`MemoryResource`] allocates and frees memory in stream order; a [`Buffer`] owns one
//! allocation and frees it through its resource when dropped.
//!
//! | resource | memory | accessible from | allocation |
//! | --- | --- | --- | --- |
//! | [`DeviceMemoryResource`] | device, from a memory pool | device, and peers it grants access | stream-ordered |
//! | [`PinnedMemoryResource`] | page-locked host | host and device | synchronous |
//! | [`ManagedMemoryResource`] | managed (unified) | host and device | synchronous |
//! | [`SyncMemoryResource`] | device, `cuMemAlloc` | device (copies: any device) | synchronous |
//! | [`VirtualMemoryResource`] | device, `cuMemCreate` mapped into a range of its own | device, and peers its options name | synchronous; [`GrowableBuffer`]s grow in place |
//! | [`PinnedMemoryPool`] | page-locked host, from a pool (host or a NUMA node) | host and devices granted access | stream-ordered |
//! | [`ManagedMemoryPool`] | managed, from a pool (13.0 drivers, CUDA 13 ABI) | host and device | stream-ordered |
//! | [`ImportedPool`] | another process's pool ([`ipc`]) | as the pool's | imports only |
//!
//! Beyond one buffer into another: [`CopyBatch`] submits many copies in one driver call;
//! [`PitchedBuffer`] is memory laid out in rows, which [`copy_2d`] and [`copy_3d`] copy to and
//! from buffers and host slices; [`ManagedRange`] prefetches, advises and discards managed
//! memory and reads its range attributes.
//!
//! Each device has a default resource ([`Device::memory_resource`]), its default pool where
//! it has pools; [`Device::set_memory_resource`] replaces it.
//!
//! ```no_run
//! use cuda_core::{Allocate, Device, StreamOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut buffer = device.memory_resource()?.allocate(4096, &stream)?;
//! buffer.copy_from_host(&[1.0f32; 1024], &stream)?;
//! let mut back = [0.0f32; 1024];
//! buffer.copy_to_host(&mut back, &stream)?;
//! assert_eq!(back, [1.0; 1024]);
//! # Ok::<(), cuda_core::Error>(())
//! ```

pub(crate) mod access;
mod batch;
pub(crate) mod buffer;
mod device_pool;
pub(crate) mod device_ptr;
mod host_pool;
mod managed;
mod pinned;
mod pitched;
pub(crate) mod pool;
pub(crate) mod small;
mod sync_resource;
mod vmm;

use std::fmt;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

pub(crate) use crate::order::{in_stream_order, order_homes_after};
pub use batch::{BatchDestination, CopyAttributes, CopyBatch, SrcAccessOrder};
pub use buffer::{Buffer, FillPattern, Pod};
pub use device_pool::{DeviceMemoryResource, DeviceMemoryResourceOptions};
pub use device_ptr::DevicePtr;
pub use host_pool::{
    ManagedLocation, ManagedMemoryPool, ManagedMemoryPoolOptions, PinnedMemoryPool,
    PinnedMemoryPoolOptions,
};
pub use managed::ManagedMemoryResource;
pub use pinned::PinnedMemoryResource;
// `memory::ipc`, the old path of the `ipc` module, still names it.
pub use crate::ipc;
pub use crate::ipc::{
    BufferDescriptor, ImportedPool, IpcMemHandle, SharedPoolHandle, SharedPoolParts,
};
pub use managed::{
    discard_and_prefetch_batch, discard_batch, prefetch_batch, Advice, ManagedRange,
    MemoryLocation, RangeAttributes,
};
pub use pitched::{
    copy_2d, copy_2d_async, copy_3d, copy_3d_async, CopyRegion, PitchedBuffer, PitchedDst,
    PitchedSrc,
};
pub use pool::{PoolUsage, ReusePolicy};
pub use sync_resource::SyncMemoryResource;
pub use vmm::{
    AddressRange, AllocationGranularity, GrowableBuffer, Mapping, MemoryAccess, PhysicalMemory,
    PhysicalMemoryOptions, ShareableHandleType, VirtualMemoryResource,
    VirtualMemoryResourceOptions,
};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::lifetime::{is_kept, keep_for_good, Held, PerDevice};
use crate::stream::Stream;

/// Allocates and frees memory, in stream order where the memory kind allows.
///
/// Implement it to plug another allocator in; a [`Buffer`] made by [`Allocate::allocate`]
/// calls [`MemoryResource::deallocate`] when it is dropped or closed.
///
/// # Safety
///
/// [`Buffer`] trusts what an implementation says, and safe code then reads and writes the
/// memory through it (host views of host-accessible memory, copies, fills, kernel launches).
/// An implementation promises:
///
/// - [`allocate_raw`](MemoryResource::allocate_raw) returns a fresh allocation of at least
///   `size` bytes that nothing else uses, owned by the caller until it passes it to
///   [`deallocate`](MemoryResource::deallocate), and usable by work queued on `stream` after
///   the call (device memory of the stream's device or accessible from it);
/// - [`is_host_accessible`](MemoryResource::is_host_accessible) is `true` only for memory the
///   host may read and write at the returned address for the allocation's whole life;
///   [`is_device_accessible`](MemoryResource::is_device_accessible),
///   [`device`](MemoryResource::device),
///   [`is_accessible_from`](MemoryResource::is_accessible_from) and
///   [`copies_across_devices`](MemoryResource::copies_across_devices) answer truthfully;
/// - [`deallocate`](MemoryResource::deallocate) frees no sooner than the work queued on its
///   stream before the call is done.
///
/// A resource that counts the allocations of another, keeping its promises by passing them on:
///
/// ```no_run
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use cuda_core::{Allocate, Device, DevicePtr, MemoryResource, Result, Stream, StreamOptions};
///
/// #[derive(Debug)]
/// struct Counting {
///     inner: Arc<dyn MemoryResource>,
///     allocations: AtomicUsize,
/// }
///
/// // SAFETY: every answer and allocation is the inner resource's, which keeps the contract.
/// unsafe impl MemoryResource for Counting {
///     fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
///         self.allocations.fetch_add(1, Ordering::Relaxed);
///         self.inner.allocate_raw(size, stream)
///     }
///     unsafe fn deallocate(&self, ptr: DevicePtr, size: usize, stream: &Stream) -> Result<()> {
///         // SAFETY: passed on as received: the caller vouches for it.
///         unsafe { self.inner.deallocate(ptr, size, stream) }
///     }
///     fn is_device_accessible(&self) -> bool { self.inner.is_device_accessible() }
///     fn is_host_accessible(&self) -> bool { self.inner.is_host_accessible() }
///     fn device(&self) -> Option<Device> { self.inner.device() }
///     fn is_accessible_from(&self, device: Device) -> Result<bool> {
///         self.inner.is_accessible_from(device)
///     }
///     fn copies_across_devices(&self) -> bool { self.inner.copies_across_devices() }
/// }
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let counting = Arc::new(Counting { inner: device.memory_resource()?, allocations: AtomicUsize::new(0) });
/// let buffer = counting.allocate(4096, &stream)?;
/// assert_eq!(counting.allocations.load(Ordering::Relaxed), 1);
/// # Ok::<(), cuda_core::Error>(())
/// ```
///
/// The same without `unsafe impl` does not compile:
///
/// ```compile_fail
/// use cuda_core::{DevicePtr, Device, MemoryResource, Result, Stream};
///
/// #[derive(Debug)]
/// struct Lies;
///
/// impl MemoryResource for Lies {
///     fn allocate_raw(&self, _: usize, _: &Stream) -> Result<DevicePtr> { Ok(DevicePtr(0x10)) }
///     unsafe fn deallocate(&self, _: DevicePtr, _: usize, _: &Stream) -> Result<()> { Ok(()) }
///     fn is_device_accessible(&self) -> bool { true }
///     fn is_host_accessible(&self) -> bool { true }
///     fn device(&self) -> Option<Device> { None }
/// }
/// ```
pub unsafe trait MemoryResource: Send + Sync + fmt::Debug {
    /// Allocates `size` bytes, usable by work queued on `stream` after this call; returns the
    /// address.
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr>;

    /// Frees an allocation once the work queued on `stream` before this call is done.
    ///
    /// # Safety
    ///
    /// `ptr` and `size` come from one `allocate_raw` of this resource, freed only once, and no
    /// work queued after this call uses it.
    unsafe fn deallocate(&self, ptr: DevicePtr, size: usize, stream: &Stream) -> Result<()>;

    /// Whether kernels can read and write the memory.
    fn is_device_accessible(&self) -> bool;

    /// Whether the host can read and write the memory directly.
    fn is_host_accessible(&self) -> bool;

    /// The device the memory belongs to; `None` for host memory.
    fn device(&self) -> Option<Device>;

    /// Whether work queued on a stream of `device` (kernels, fills, copies) may use the
    /// memory. The default: host memory (no [`device`](MemoryResource::device)), or memory of
    /// `device` itself. A pool answers for other devices with `cuMemPoolGetAccess` (grant
    /// access with [`DeviceMemoryResource::set_peer_access`]); managed memory is accessible
    /// from every device.
    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        Ok(self.device().is_none_or(|own| own == device))
    }

    /// Whether the driver copies this memory on a stream of another device even where
    /// [`is_accessible_from`](MemoryResource::is_accessible_from) says no. `cuMemAlloc`
    /// memory: yes, the driver copies between devices (through the host if it must). Pool
    /// memory: no (the driver refuses, and has crashed, without access granted). The default
    /// is no.
    fn copies_across_devices(&self) -> bool {
        false
    }

    /// The gate that orders this memory's access checks before a revocation of access
    /// (crate resources whose access can change have one). Not for implementations outside
    /// the crate: the default, none, is right for them.
    #[doc(hidden)]
    fn access_gate(&self) -> Option<&access::AccessGate> {
        None
    }
}

/// `allocate` for any shared memory resource: `Arc<DeviceMemoryResource>`,
/// `Arc<dyn MemoryResource>`, ...
pub trait Allocate {
    /// Allocates a buffer of `size` bytes, in stream order on `stream`, which is also the
    /// stream it is freed on unless changed.
    fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer>;
}

impl<R: MemoryResource + 'static> Allocate for Arc<R> {
    #[inline]
    fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer> {
        let resource = Held::of(self).coerce(|r| r as Arc<dyn MemoryResource>);
        allocate_in(resource, size, stream)
    }
}

impl Allocate for Arc<dyn MemoryResource> {
    #[inline]
    fn allocate(&self, size: usize, stream: &Stream) -> Result<Buffer> {
        allocate_in(Held::of(self), size, stream)
    }
}

/// Allocates from a held resource: uncounted when the process keeps it for good (a device's
/// default resource). The holder is made first, so that its one read overlaps the driver's
/// call rather than waiting behind it.
#[inline]
fn allocate_in(resource: Held<dyn MemoryResource>, size: usize, stream: &Stream) -> Result<Buffer> {
    let ptr = resource.allocate_raw(size, stream)?;
    Ok(Buffer::new(ptr.0, size, resource, stream.clone()))
}

/// The devices' default resources: each slot points to the resource set last (made on first
/// use: the device's default pool, or synchronous allocation), in a box that is never freed,
/// so that every resource ever made a default is kept for good.
static DEFAULTS: PerDevice<AtomicPtr<Arc<dyn MemoryResource>>> = PerDevice::new();

/// `device`'s default resource: the one set last by [`set_default_resource`], else its
/// default pool where it supports pools, else synchronous allocation; kept for good, so that
/// [`Held::of`] holds it without counting.
pub(crate) fn default_resource(device: Device) -> Result<&'static Arc<dyn MemoryResource>> {
    let slot = DEFAULTS.get_or_try_init(device.ordinal(), || {
        let made = if device.properties().memory_pools_supported()? {
            DeviceMemoryResource::default_pool(device)? as Arc<dyn MemoryResource>
        } else {
            SyncMemoryResource::new(device)?
        };
        Ok(AtomicPtr::new(Box::into_raw(Box::new(made))))
    })?;
    // SAFETY: a slot only ever holds pointers from `Box::into_raw`, never freed.
    let kept: &'static Arc<dyn MemoryResource> = unsafe { &*slot.load(Ordering::Acquire) };
    if !is_kept(kept) {
        keep_for_good(kept);
    }
    Ok(kept)
}

/// Makes `resource` `device`'s default resource (see [`Device::set_memory_resource`]).
pub(crate) fn set_default_resource(
    device: Device,
    resource: Arc<dyn MemoryResource>,
) -> Result<()> {
    if let Some(own) = resource.device() {
        if own != device {
            return Err(Error::InvalidArgument {
                name: "resource",
                reason: format!(
                    "it allocates memory of device {}, and the default resource of device {} \
                     allocates on that device's streams",
                    own.ordinal(),
                    device.ordinal()
                ),
            });
        }
    }
    let kept: &'static Arc<dyn MemoryResource> = Box::leak(Box::new(resource));
    keep_for_good(kept);
    let pointer = (kept as *const Arc<dyn MemoryResource>).cast_mut();
    let slot = DEFAULTS.get_or_try_init(device.ordinal(), || Ok(AtomicPtr::new(pointer)))?;
    slot.store(pointer, Ordering::Release);
    Ok(())
}

/// A close-on-exec duplicate of `fd` (`fcntl(F_DUPFD_CLOEXEC)`); a failure is
/// [`Error::FileDescriptor`].
#[cfg(unix)]
pub(crate) fn duplicate_fd(fd: std::os::fd::BorrowedFd<'_>) -> Result<std::os::fd::OwnedFd> {
    fd.try_clone_to_owned().map_err(|e| Error::FileDescriptor {
        operation: "fcntl(F_DUPFD_CLOEXEC)",
        source: crate::error::Cause::new(e),
    })
}

/// Takes `fd`, a descriptor the driver made for the caller, and gives a close-on-exec
/// duplicate of it, closing the driver's: the driver does not promise close-on-exec, and a
/// program this process starts must not inherit the memory.
///
/// # Safety
///
/// `fd` is open, and owned by the caller alone (nothing else closes it).
#[cfg(unix)]
pub(crate) unsafe fn adopt_driver_fd(fd: std::os::raw::c_int) -> Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsFd, FromRawFd, OwnedFd};
    // SAFETY: the caller's promise; the `OwnedFd` closes it once, below.
    let made = unsafe { OwnedFd::from_raw_fd(fd) };
    duplicate_fd(made.as_fd())
}

/// Rejects, before any driver call, what no resource can allocate.
pub(crate) fn check_request(size: usize, stream: &Stream, device: Option<Device>) -> Result<()> {
    if size == 0 {
        return Err(Error::InvalidArgument {
            name: "size",
            reason: "cannot allocate zero bytes".to_owned(),
        });
    }
    if stream.capturing() {
        return Err(Error::InvalidArgument {
            name: "stream",
            reason: "it is capturing: a buffer allocated in a capture would exist only while \
                     the graph runs; allocate graph memory with Stream::capture_alloc"
                .to_owned(),
        });
    }
    if let Some(device) = device {
        if stream.device() != device {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "the stream is on device {}, the memory resource on device {}",
                    stream.device().ordinal(),
                    device.ordinal()
                ),
            });
        }
    }
    Ok(())
}
