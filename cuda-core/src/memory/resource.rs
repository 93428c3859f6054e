//! [`MemoryResource`], what allocates and frees memory, and [`Allocate`], allocation from a
//! shared resource.

use std::fmt;
use std::sync::Arc;

use super::{Buffer, DevicePtr, Hooks};
use crate::device::Device;
use crate::error::Result;
use crate::lifetime::Held;
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
/// - [`is_private_host_memory`](MemoryResource::is_private_host_memory) is `true` only for
///   host memory that no other process can write (the default, `false`, is always right);
/// - [`deallocate`](MemoryResource::deallocate) frees no sooner than the work queued on its
///   stream before the call is done.
///
/// Its last bound, `Hooks`, is the crate's own: every sized type has it, and an implementation
/// writes nothing for it.
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
pub unsafe trait MemoryResource: Send + Sync + fmt::Debug + Hooks {
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
    /// access with [`DeviceMemoryResource::set_peer_access`](crate::DeviceMemoryResource::set_peer_access)); managed memory is accessible
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

    /// Whether this is host memory that only this process can write: neither exported to nor
    /// imported from another process, nor of a pool another library made (which may be). The
    /// host then reads it safely while the crate's stream order keeps this process's writes
    /// away ([`Stream::launch_host_func_reading`](crate::Stream::launch_host_func_reading)).
    /// The default, `false`, is always right; `true` is part of this trait's promises.
    fn is_private_host_memory(&self) -> bool {
        false
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
