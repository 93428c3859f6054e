//! The memory resource of the virtual memory management API: [`VirtualMemoryResource`], and
//! the [`GrowableBuffer`]s it makes.

use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use super::mapping::{check_access, AddressRange, Mapping};
use super::physical::{granularity_of, PhysicalMemory, PhysicalMemoryOptions};
use super::{checks, AllocationGranularity, MemoryAccess};
use crate::context::Context;
use crate::device::Device;
use crate::driver::AllocationSpec;
use crate::error::{Error, Result};
use crate::lifetime::Held;
use crate::memory::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::stream::Stream;

/// Options of a [`VirtualMemoryResource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualMemoryResourceOptions {
    /// The properties of the physical memory it makes.
    pub physical: PhysicalMemoryOptions,
    /// The granularity sizes are rounded up to: the recommended one by default (where it is a
    /// multiple of the minimum, as the driver reports on every device seen), or the minimum.
    pub granularity: AllocationGranularity,
    /// Other devices and the access they get to every allocation (the resource's own device
    /// always has read-write access, and is not listed). Each must be able to access the
    /// resource's device ([`Device::can_access_peer`]).
    pub peers: Vec<(Device, MemoryAccess)>,
}

crate::options::chainers!(VirtualMemoryResourceOptions {
    with_physical(physical: PhysicalMemoryOptions);
    with_granularity(granularity: AllocationGranularity);
    with_peers(peers: Vec<(Device, MemoryAccess)>);
});

/// Device memory from the virtual memory management API: each buffer is an address range of
/// its own with physical memory mapped into it, its size rounded up to the
/// [granularity](VirtualMemoryResource::granularity), and accessible from the resource's
/// device and the peers its options name. It also makes [`GrowableBuffer`]s.
///
/// Allocation is synchronous (reserve, create, map, set access); freeing waits for the
/// deallocation stream, then unmaps and releases (where the wait fails, the memory is kept
/// mapped for good).
///
/// ```no_run
/// use cuda_core::memory::{VirtualMemoryResource, VirtualMemoryResourceOptions};
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let memory = VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())?;
/// let mut buffer = memory.allocate(1000, &stream)?;
/// buffer.fill(7u8, &stream)?;
/// assert!(buffer.to_vec::<u8>(&stream)?.iter().all(|&b| b == 7));
/// assert_eq!(memory.mapped_bytes(), memory.granularity());
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("cuMemCreate", "cuMemMap", "cuMemAddressReserve"))]
pub struct VirtualMemoryResource {
    device: Device,
    context: Context,
    options: VirtualMemoryResourceOptions,
    spec: AllocationSpec,
    /// What sizes are rounded up to: a multiple of `min_granularity`.
    granularity: usize,
    min_granularity: usize,
    /// The own device's read-write access, then the peers'.
    access: Vec<(Device, MemoryAccess)>,
    /// The live allocations, by address.
    allocations: Mutex<HashMap<u64, Mapping>>,
}

impl fmt::Debug for VirtualMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualMemoryResource")
            .field("device", &self.device.ordinal())
            .field("granularity", &self.granularity)
            .field("options", &self.options)
            .finish()
    }
}

impl VirtualMemoryResource {
    /// A resource of `device`'s memory. The device must support virtual memory management and
    /// what `options` ask, and each peer must be able to access it; each is refused before
    /// anything is made.
    pub fn new(
        device: Device,
        options: VirtualMemoryResourceOptions,
    ) -> Result<Arc<VirtualMemoryResource>> {
        options.physical.check_supported(device)?;
        if options.peers.iter().any(|&(peer, _)| peer == device) {
            return Err(Error::InvalidArgument {
                name: "options.peers",
                reason: format!(
                    "device {} is the resource's own, which always has read-write access",
                    device.ordinal()
                ),
            });
        }
        let mut access = vec![(device, MemoryAccess::ReadWrite)];
        access.extend_from_slice(&options.peers);
        check_access(device, &access, "options.peers")?;
        let context = device.primary_context()?;
        let spec = options.physical.spec(device);
        let min_granularity = granularity_of(&context, &spec, AllocationGranularity::Minimum)?;
        let granularity = match options.granularity {
            AllocationGranularity::Minimum => min_granularity,
            AllocationGranularity::Recommended => {
                let recommended =
                    granularity_of(&context, &spec, AllocationGranularity::Recommended)?;
                if recommended % min_granularity == 0 {
                    recommended
                } else {
                    min_granularity
                }
            }
        };
        Ok(Arc::new(VirtualMemoryResource {
            device,
            context,
            options,
            spec,
            granularity,
            min_granularity,
            access,
            allocations: Mutex::new(HashMap::new()),
        }))
    }

    /// The granularity allocation sizes are rounded up to, in bytes.
    pub fn granularity(&self) -> usize {
        self.granularity
    }

    /// The options it was made with.
    pub fn options(&self) -> &VirtualMemoryResourceOptions {
        &self.options
    }

    /// How many bytes its live buffers have mapped (their sizes rounded up to the
    /// granularity); growable buffers not counted.
    pub fn mapped_bytes(&self) -> usize {
        self.live().values().map(Mapping::size).sum()
    }

    fn live(&self) -> MutexGuard<'_, HashMap<u64, Mapping>> {
        self.allocations.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The physical memory behind a buffer this resource allocated: for exporting it
    /// ([`PhysicalMemory::export_fd`]) or mapping it at another address too. A buffer of
    /// another resource is refused. While the buffer lives, a mapping of it is no second
    /// buffer ([`Mapping::into_buffer`](super::Mapping::into_buffer) refuses it).
    pub fn physical_memory(&self, buffer: &Buffer) -> Result<Arc<PhysicalMemory>> {
        let ours = std::ptr::addr_eq(Arc::as_ptr(buffer.memory_resource()), self as *const Self);
        let found = ours
            .then(|| {
                self.live()
                    .get(&buffer.ptr().0)
                    .map(|m| Arc::clone(&m.physical))
            })
            .flatten();
        found.ok_or_else(|| Error::InvalidArgument {
            name: "buffer",
            reason: format!("{buffer:?} is not a buffer of this resource"),
        })
    }

    /// Reserves, maps and grants access to `bytes` (a multiple of the granularity) in a range of
    /// `reserve` bytes, the first mapping at offset 0.
    fn map_new(&self, reserve: usize, bytes: usize) -> Result<Mapping> {
        let range = AddressRange::reserve_checked(
            self.device,
            self.context.clone(),
            reserve,
            self.granularity,
        )?;
        let mapping = self.map_into(&range, 0, bytes)?;
        Ok(mapping)
    }

    /// Makes `bytes` (a multiple of the granularity) of physical memory, maps it at `offset`
    /// of `range` and grants the resource's access to it, claimed for the buffer it is for (so
    /// that a mapping of it elsewhere, through [`VirtualMemoryResource::physical_memory`],
    /// becomes no second buffer over it).
    fn map_into(&self, range: &Arc<AddressRange>, offset: usize, bytes: usize) -> Result<Mapping> {
        let physical =
            PhysicalMemory::create(self.context.clone(), self.spec, bytes, self.min_granularity)?;
        let mut mapping = range.map(offset, &physical)?;
        mapping.set_access_checked(&self.access)?;
        mapping.claim_for_buffer()?;
        Ok(mapping)
    }

    /// A buffer of `capacity` bytes of addresses (rounded up to the granularity), empty, that
    /// [grows](GrowableBuffer::grow) in place: memory is mapped at its end as it grows, and
    /// its address never changes. `stream` is its deallocation stream, as for a
    /// [`Buffer`].
    ///
    /// ```no_run
    /// use cuda_core::{Device, StreamOptions, memory::{VirtualMemoryResource, VirtualMemoryResourceOptions}};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let memory = VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())?;
    /// let mut buffer = memory.growable(1 << 30, &stream)?;
    /// buffer.grow(1000)?;
    /// let address = buffer.ptr();
    /// buffer.as_buffer_mut().fill(1u8, &stream)?;
    /// buffer.grow(100 << 20)?;
    /// assert_eq!(buffer.ptr(), address);
    /// assert_eq!(buffer.size(), 100 << 20);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemAddressReserve")]
    pub fn growable(self: &Arc<Self>, capacity: usize, stream: &Stream) -> Result<GrowableBuffer> {
        let capacity = checks::round_up("capacity", capacity, self.granularity)?;
        check_request(capacity, stream, Some(self.device))?;
        let range = AddressRange::reserve_checked(
            self.device,
            self.context.clone(),
            capacity,
            self.granularity,
        )?;
        let state = Arc::new(Growable {
            resource: Arc::clone(self),
            ptr: range.ptr,
            range,
            inner: Mutex::new(GrowInner::default()),
        });
        let view = state.view(0, stream.clone());
        Ok(GrowableBuffer {
            view,
            state,
            size: 0,
        })
    }
}

// SAFETY: each allocation is a range of its own with fresh physical memory of at least `size`
// bytes mapped over it and accessible from the resource's device (and its peers), unmapped
// only in `deallocate` after its stream is synchronised (kept mapped for good where that
// fails); the answers are this memory kind's.
unsafe impl MemoryResource for VirtualMemoryResource {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, Some(self.device))?;
        let bytes = checks::round_up("size", size, self.granularity)?;
        // One context switch for the four calls (each finds the context current).
        let mapping = self.context.with_current(|_| self.map_new(bytes, bytes))?;
        let ptr = mapping.ptr;
        self.live().insert(ptr, mapping);
        Ok(DevicePtr(ptr))
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        let Some(mapping) = self.live().remove(&ptr.0) else {
            return Err(Error::InvalidArgument {
                name: "ptr",
                reason: format!("{ptr} is not a live allocation of this resource"),
            });
        };
        // Where the stream does not synchronise, its work may still use the memory: it stays
        // mapped for good (left in the live set, the resource's drop would unmap it at once).
        self.context
            .with_current(|_| mapping.unmap_after(Some(stream)))
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

    /// The own device, and peers given read-write access.
    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        Ok(self
            .access
            .iter()
            .any(|&(d, access)| d == device && access == MemoryAccess::ReadWrite))
    }
}

/// A growable buffer's memory: its range and mappings, and the streams its views were freed
/// on. The views' [`Buffer`]s hold it as their resource, so it outlives every view.
struct Growable {
    resource: Arc<VirtualMemoryResource>,
    ptr: u64,
    range: Arc<AddressRange>,
    inner: Mutex<GrowInner>,
}

#[derive(Default)]
struct GrowInner {
    /// In address order, contiguous from offset 0.
    mappings: Vec<Mapping>,
    /// The deallocation streams of views dropped so far, each once.
    streams: Vec<Stream>,
}

impl GrowInner {
    fn mapped(&self) -> usize {
        self.mappings.last().map_or(0, |m| m.offset + m.size)
    }

    /// Synchronises the streams views were freed on (and `also`), forgetting them.
    fn sync_streams(&mut self, also: Option<&Stream>) -> Result<()> {
        if let Some(stream) = also {
            stream.sync_for_host()?;
        }
        while let Some(stream) = self.streams.last() {
            if also.is_none_or(|also| !also.same_as(stream)) {
                stream.sync_for_host()?;
            }
            self.streams.pop();
        }
        Ok(())
    }

    /// Unmaps the mappings from the end down to `keep` bytes mapped (at least), in reverse
    /// order; on a failure the rest stay mapped.
    fn unmap_down_to(&mut self, keep: usize) -> Result<()> {
        while self.mappings.last().is_some_and(|m| m.offset >= keep) {
            if let Some(mapping) = self.mappings.pop() {
                mapping.unmap_after(None)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Growable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("capacity", &self.range.size)
            .field("device", &self.resource.device.ordinal())
            .finish()
    }
}

impl Drop for Growable {
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = inner.sync_streams(None) {
            // Work may still use the memory: keep it mapped for good rather than unmap it.
            log::error!("a growable buffer's stream did not synchronise ({e}); its memory is kept");
            std::mem::forget(std::mem::take(&mut inner.mappings));
            return;
        }
        let context = &self.resource.context;
        if let Err(e) = context.with_current(|_| inner.unmap_down_to(0)) {
            log::error!("unmapping a growable buffer: {e}");
        }
    }
}

impl Growable {
    fn lock(&self) -> MutexGuard<'_, GrowInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A buffer of its first `size` bytes (all mapped), freed on `stream`.
    fn view(self: &Arc<Self>, size: usize, stream: Stream) -> Buffer {
        let resource = Arc::clone(self) as Arc<dyn MemoryResource>;
        Buffer::new(self.ptr, size, Held::counted(resource), stream)
    }
}

// SAFETY: a view's memory (the first `size` bytes, mapped and accessible as its resource's)
// stays mapped while any view holds this value, and until every view's deallocation stream is
// synchronised (in `shrink` and in drop); it allocates nothing of its own.
unsafe impl MemoryResource for Growable {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "a growable buffer's memory comes from VirtualMemoryResource::growable, \
                     and grows with GrowableBuffer::grow; it allocates no other buffers"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, _ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        let mut inner = self.lock();
        if !inner.streams.iter().any(|s| s.same_as(stream)) {
            inner.streams.push(stream.clone());
        }
        Ok(())
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.resource.device)
    }

    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        self.resource.is_accessible_from(device)
    }
}

/// A buffer that grows in place: a range of addresses reserved once at its capacity, into which
/// [`grow`](GrowableBuffer::grow) maps more physical memory at the end. Its address never
/// changes. Made by [`VirtualMemoryResource::growable`], with that resource's memory
/// properties, granularity and peers.
///
/// Its bytes are a [`Buffer`] ([`as_buffer`](GrowableBuffer::as_buffer), or through `Deref`):
/// copies, fills and kernel arguments work as for any buffer, in stream order with its
/// deallocation stream. Memory is unmapped only by [`shrink`](GrowableBuffer::shrink) and on
/// drop, each after synchronising the deallocation streams of the buffer's views.
pub struct GrowableBuffer {
    // Dropped first: the view notes its stream before the memory can go.
    view: Buffer,
    state: Arc<Growable>,
    size: usize,
}

impl fmt::Debug for GrowableBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableBuffer")
            .field("ptr", &format_args!("{:#x}", self.state.ptr))
            .field("size", &self.size)
            .field("mapped", &self.mapped())
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl Deref for GrowableBuffer {
    type Target = Buffer;

    fn deref(&self) -> &Buffer {
        &self.view
    }
}

impl GrowableBuffer {
    /// The address, the same for the buffer's whole life.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.state.ptr)
    }

    /// The size in bytes now.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The most it can grow to: its range's size.
    pub fn capacity(&self) -> usize {
        self.state.range.size
    }

    /// How many bytes are backed by physical memory: the size rounded up to the granularity
    /// (more after a shrink that kept part of a piece).
    pub fn mapped(&self) -> usize {
        self.state.lock().mapped()
    }

    /// The granularity sizes are rounded up to.
    pub fn granularity(&self) -> usize {
        self.state.resource.granularity
    }

    /// The buffer's bytes as a [`Buffer`] of its current size.
    pub fn as_buffer(&self) -> &Buffer {
        &self.view
    }

    /// The same, mutably (for fills and copies into it).
    pub fn as_buffer_mut(&mut self) -> &mut Buffer {
        &mut self.view
    }

    /// Grows the buffer to `new_size` bytes in place: where that passes the memory mapped so
    /// far, one more piece of physical memory (the rest rounded up to the granularity) is mapped
    /// at the end and given the resource's access (`cuMemCreate`, `cuMemMap`,
    /// `cuMemSetAccess`). The bytes it had keep their values; the new ones are undefined. More
    /// than the capacity, or less than the size, is refused before the driver.
    #[doc(alias("cuMemMap", "cuMemSetAccess"))]
    pub fn grow(&mut self, new_size: usize) -> Result<()> {
        let granularity = self.granularity();
        checks::grow(self.size, new_size, self.capacity(), granularity)?;
        if new_size == self.size {
            return Ok(());
        }
        let needed = checks::round_up("new_size", new_size, granularity)?;
        {
            let mut inner = self.state.lock();
            let mapped = inner.mapped();
            if needed > mapped {
                let resource = &self.state.resource;
                let mapping = resource.context.with_current(|_| {
                    resource.map_into(&self.state.range, mapped, needed - mapped)
                })?;
                inner.mappings.push(mapping);
            }
        }
        self.resize_view(new_size);
        Ok(())
    }

    /// Shrinks the buffer to `new_size` bytes, unmapping and releasing the pieces of memory
    /// wholly past it, once the work queued on the buffer's deallocation streams is done (it
    /// synchronises them). Refused while a view of it other than its own is alive (a
    /// [`Buffer`] moved out of [`as_buffer_mut`](GrowableBuffer::as_buffer_mut), or its
    /// memory resource held elsewhere), and for more than the size.
    #[doc(alias("cuMemUnmap", "cuMemRelease"))]
    pub fn shrink(&mut self, new_size: usize) -> Result<()> {
        checks::shrink(self.size, new_size)?;
        let own_view = std::ptr::addr_eq(
            Arc::as_ptr(self.view.memory_resource()),
            Arc::as_ptr(&self.state),
        );
        if !own_view || Arc::strong_count(&self.state) != 2 {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "another view of the buffer's memory is alive (a Buffer taken out of \
                         it, or its memory resource held); shrinking would unmap memory it uses"
                    .to_owned(),
            });
        }
        let unmapped = {
            let mut inner = self.state.lock();
            let done = inner
                .sync_streams(Some(self.view.deallocation_stream()))
                .and_then(|()| {
                    let context = &self.state.resource.context;
                    // The pieces that start at or past `new_size` (all of them for 0).
                    context.with_current(|_| inner.unmap_down_to(new_size))
                });
            done.map_err(|e| (e, inner.mapped()))
        };
        match unmapped {
            Ok(()) => {
                self.resize_view(new_size);
                Ok(())
            }
            Err((e, mapped)) => {
                // The view keeps no more than is still mapped.
                self.resize_view(new_size.max(self.size.min(mapped)));
                Err(e)
            }
        }
    }

    /// Replaces the view with one of `size` bytes, freed on the same stream.
    fn resize_view(&mut self, size: usize) {
        let stream = self.view.deallocation_stream().clone();
        self.view = self.state.view(size, stream);
        self.size = size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::vmm::ShareableHandleType;

    /// The types can be shared across threads (the driver's handles are thread-safe), as a
    /// memory resource must be.
    #[test]
    fn the_virtual_memory_types_are_send_and_sync() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<AddressRange>();
        send_sync::<PhysicalMemory>();
        send_sync::<Mapping>();
        send_sync::<VirtualMemoryResource>();
        send_sync::<GrowableBuffer>();
        send_sync::<Growable>();
    }

    #[test]
    fn options_chain_like_their_struct_literals() {
        let physical = PhysicalMemoryOptions::default()
            .with_handle_type(ShareableHandleType::PosixFileDescriptor)
            .with_gpu_direct_rdma(true)
            .with_compressible(true);
        assert_eq!(
            physical,
            PhysicalMemoryOptions {
                handle_type: ShareableHandleType::PosixFileDescriptor,
                gpu_direct_rdma: true,
                compressible: true,
            }
        );
        let spec = physical.spec(Device::from_handle(3));
        assert_eq!(
            (
                spec.device,
                spec.handle_types,
                spec.gpu_direct_rdma,
                spec.compressible
            ),
            (3, 1, true, true)
        );
        let options = VirtualMemoryResourceOptions::default()
            .with_physical(physical)
            .with_granularity(AllocationGranularity::Minimum);
        assert_eq!(options.physical, physical);
        assert_eq!(options.granularity, AllocationGranularity::Minimum);
        assert!(options.peers.is_empty());
        assert_eq!(
            VirtualMemoryResourceOptions::default().granularity,
            AllocationGranularity::Recommended
        );
    }
}
