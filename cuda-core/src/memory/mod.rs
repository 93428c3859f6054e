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
//! | [`ImportedPool`](crate::ipc::ImportedPool) | another process's pool ([`ipc`](crate::ipc)) | as the pool's | imports only |
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
pub(crate) mod device_pool;
pub(crate) mod device_ptr;
pub(crate) mod foreign;
mod host_func;
mod host_pool;
mod managed;
mod managed_pool;
mod pinned;
mod pitched;
mod pointer;
pub(crate) mod pool;
pub(crate) mod resource;
pub(crate) mod slice;
pub(crate) mod span;
mod sync_resource;
mod vmm;

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

pub use batch::{BatchDestination, CopyAttributes, CopyBatch, SrcAccessOrder};
// The core objects, whose public path is the crate root's.
pub(crate) use buffer::{Buffer, FillPattern, Pod};
pub(crate) use device_pool::DeviceMemoryResource;
pub(crate) use device_ptr::DevicePtr;
pub(crate) use hooks::Hooks;
pub use host_pool::{PinnedMemoryPool, PinnedMemoryPoolOptions};
pub use managed::ManagedMemoryResource;
pub use managed::{
    discard_and_prefetch_batch, discard_batch, prefetch_batch, Advice, ManagedRange,
    MemoryLocation, RangeAttributes,
};
pub use managed_pool::{ManagedLocation, ManagedMemoryPool, ManagedMemoryPoolOptions};
pub use pinned::PinnedMemoryResource;
pub use pitched::{
    copy_2d, copy_2d_async, copy_3d, copy_3d_async, CopyRegion, PitchedBuffer, PitchedDst,
    PitchedSrc,
};
pub use pointer::{MemoryKind, PointerInfo};
pub use pool::{PoolDescription, PoolUsage, ReusePolicy};
pub(crate) use resource::MemoryResource;
pub use slice::{
    BufferSlice, BufferSliceMut, CopyDestination, CopySource, GraphMemory, SharedSlice,
    UniqueMemory,
};
pub use sync_resource::SyncMemoryResource;
pub use vmm::{
    AddressRange, AllocationGranularity, GrowableBuffer, Mapping, MemoryAccess, PhysicalMemory,
    PhysicalMemoryOptions, ShareableHandleType, VirtualMemoryResource,
    VirtualMemoryResourceOptions,
};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::lifetime::{is_kept, keep_for_good, PerDevice};
use crate::stream::Stream;

/// The crate's own questions to a memory resource, kept out of [`MemoryResource`]'s public
/// contract: only the crate's own resources answer them. The answer is chosen by the
/// resource's type where that is known, so through `dyn MemoryResource` a question costs one
/// call, as a method of the trait would.
mod hooks {
    use std::any::Any;

    use super::access::AccessGate;
    use super::foreign::RegisteredVec;
    use super::{DeviceMemoryResource, MemoryResource, PinnedMemoryPool};

    /// [`MemoryResource`]'s last supertrait, implemented here for every resource: out of
    /// reach outside the crate, where an implementation neither names nor overrides it.
    pub trait Hooks {
        /// The registered vector this resource is (`Buffer::from_host_vec`), for
        /// `Buffer::into_host_vec`.
        fn registered_vec(&self) -> Option<&RegisteredVec>
        where
            Self: 'static;

        /// The gate that orders this memory's access checks before a revocation of access:
        /// a device pool's or a pinned pool's, whose access can change.
        fn access_gate(&self) -> Option<&AccessGate>
        where
            Self: 'static;
    }

    impl<T: MemoryResource> Hooks for T {
        #[inline]
        fn registered_vec(&self) -> Option<&RegisteredVec>
        where
            Self: 'static,
        {
            (self as &dyn Any).downcast_ref()
        }

        #[inline]
        fn access_gate(&self) -> Option<&AccessGate>
        where
            Self: 'static,
        {
            let any: &dyn Any = self;
            if let Some(pool) = any.downcast_ref::<DeviceMemoryResource>() {
                return Some(pool.gate());
            }
            any.downcast_ref::<PinnedMemoryPool>()
                .map(PinnedMemoryPool::gate)
        }
    }
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
