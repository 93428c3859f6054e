//! Address ranges and what is mapped into them: [`AddressRange`] (`cuMemAddressReserve`) and
//! [`Mapping`] (`cuMemMap`, `cuMemSetAccess`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::physical::{device_spec, granularity_of, PhysicalMemory, PhysicalMemoryOptions};
use super::{checks, AllocationGranularity, MemoryAccess};
use crate::context::Context;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::memory::foreign::{buffer_over, Kept};
use crate::memory::Buffer;
use crate::stream::Stream;
use crate::DevicePtr;

/// A reserved range of device addresses (`cuMemAddressReserve`), freed (`cuMemAddressFree`)
/// when the last holder drops it: its [`Mapping`]s hold it. Nothing backs it until physical
/// memory is [mapped](AddressRange::map) into it.
#[doc(alias = "cuMemAddressReserve")]
pub struct AddressRange {
    pub(super) ptr: u64,
    pub(super) size: usize,
    device: Device,
    context: Context,
    /// The mapped parts, by offset: their sizes.
    mapped: Mutex<BTreeMap<usize, usize>>,
}

impl fmt::Debug for AddressRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressRange")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("device", &self.device.ordinal())
            .finish()
    }
}

impl Drop for AddressRange {
    fn drop(&mut self) {
        let (ptr, size) = (self.ptr, self.size);
        if let Err(e) = self
            .context
            .with_current(|driver| driver.mem_address_free(ptr, size))
        {
            log::error!("freeing an address range of {size} bytes at {ptr:#x}: {e}");
        }
    }
}

impl AddressRange {
    /// Reserves `size` bytes of addresses for memory of `device` (`cuMemAddressReserve`),
    /// aligned to `alignment` (a power of two) or, with `None` or a smaller one, to the
    /// device's minimum granularity. `size` must be a non-zero multiple of that granularity
    /// (see [`PhysicalMemory::granularity`]), which the error names otherwise. The range is the
    /// process's: memory of other devices may be mapped into it too.
    #[doc(alias = "cuMemAddressReserve")]
    pub fn reserve(
        device: Device,
        size: usize,
        alignment: Option<usize>,
    ) -> Result<Arc<AddressRange>> {
        PhysicalMemoryOptions::default().check_supported(device)?;
        let context = device.primary_context()?;
        let granularity = granularity_of(
            &context,
            &device_spec(device),
            AllocationGranularity::Minimum,
        )?;
        checks::multiple("size", size, granularity)?;
        let alignment = checks::alignment(alignment, granularity)?;
        Self::reserve_checked(device, context, size, alignment)
    }

    /// `cuMemAddressReserve` of a size already checked.
    pub(super) fn reserve_checked(
        device: Device,
        context: Context,
        size: usize,
        alignment: usize,
    ) -> Result<Arc<AddressRange>> {
        let ptr = context.with_current(|driver| driver.mem_address_reserve(size, alignment))?;
        Ok(Arc::new(AddressRange {
            ptr,
            size,
            device,
            context,
            mapped: Mutex::new(BTreeMap::new()),
        }))
    }

    /// The first address.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device it was reserved for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// How many of its bytes are mapped now.
    pub fn mapped_bytes(&self) -> usize {
        self.mapped_parts().values().sum()
    }

    fn mapped_parts(&self) -> MutexGuard<'_, BTreeMap<usize, usize>> {
        self.mapped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Maps all of `memory` at byte `offset` of the range (`cuMemMap`). The offset and the
    /// address must be multiples of the memory's minimum granularity, and the memory must fit
    /// in the range without overlapping a part mapped already: each is refused before the
    /// driver, the granularity named. The mapping starts with no access: grant it with
    /// [`Mapping::set_access`].
    #[doc(alias = "cuMemMap")]
    pub fn map(self: &Arc<Self>, offset: usize, memory: &Arc<PhysicalMemory>) -> Result<Mapping> {
        let mut mapped = self.mapped_parts();
        checks::map(
            self.ptr,
            self.size,
            offset,
            memory.size,
            memory.granularity,
            &mapped,
        )?;
        let ptr = self.ptr + offset as u64;
        let (size, handle) = (memory.size, memory.handle);
        memory
            .context
            .with_current(|driver| driver.mem_map(ptr, size, 0, handle))?;
        mapped.insert(offset, size);
        Ok(Mapping {
            ptr,
            offset,
            size,
            buffer: false,
            physical: Arc::clone(memory),
            range: Arc::clone(self),
        })
    }
}

/// Physical memory mapped into an [`AddressRange`]: it holds both, and is unmapped
/// (`cuMemUnmap`) when dropped, before either is released.
///
/// Dropping a mapping unmaps it at once: work that uses its addresses must be done by then
/// (synchronise its streams, or use [`unmap_after`](Mapping::unmap_after)). The buffers of a
/// [`VirtualMemoryResource`](super::VirtualMemoryResource) and a
/// [`GrowableBuffer`](super::GrowableBuffer) keep that order themselves.
#[doc(alias = "cuMemMap")]
pub struct Mapping {
    pub(super) ptr: u64,
    pub(super) offset: usize,
    pub(super) size: usize,
    /// Whether it holds its physical memory's claim for a buffer
    /// ([`PhysicalMemory::claim_for_buffer`]), given back once it is unmapped.
    buffer: bool,
    // Dropped in this order after the unmap: the memory is released, then the range freed.
    pub(super) physical: Arc<PhysicalMemory>,
    range: Arc<AddressRange>,
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("offset", &self.offset)
            .field("size", &self.size)
            .field("physical", &self.physical)
            .finish()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let (ptr, size) = (self.ptr, self.size);
        if size == 0 {
            return;
        }
        if let Err(e) = self.unmap_now() {
            log::error!("unmapping {size} bytes at {ptr:#x}: {e}; its memory and range are kept");
        }
    }
}

// A kernel argument: its first byte's address. No stream orders a mapping: the kernel must be
// done before it is unmapped, which `launch`'s contract asks of raw addresses too.
crate::args::wrapper_arg!(Mapping);

impl crate::args::sealed::Arg for Mapping {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::address_arg(&self.ptr, None)
    }
}

impl Mapping {
    /// The address of its first byte.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The size in bytes (its physical memory's).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its offset in its range.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The physical memory it maps.
    pub fn physical(&self) -> &Arc<PhysicalMemory> {
        &self.physical
    }

    /// The range it is mapped in.
    pub fn range(&self) -> &Arc<AddressRange> {
        &self.range
    }

    /// Sets what each listed device may do with the mapped memory (`cuMemSetAccess`); devices
    /// not listed keep what they had (a new mapping: nothing). A device other than the
    /// memory's own must be able to access it ([`Device::can_access_peer`]) unless it is given
    /// [`MemoryAccess::None`]; an empty list, a device listed twice, or one that cannot reach
    /// the memory is refused before anything changes. Before a device loses a right it had
    /// (read-write to read, or any to none), the work queued in its contexts (its primary
    /// context and the green contexts this process made) is waited for (`cuCtxSynchronize`),
    /// so that no kernel or copy already queued loses it midway. A mapping is raw memory, not
    /// a buffer: work being queued on it by other threads at the same time is the caller's to
    /// order.
    #[doc(alias = "cuMemSetAccess")]
    pub fn set_access(&self, access: &[(Device, MemoryAccess)]) -> Result<()> {
        check_access(self.physical.device(), access, "access")?;
        for &(device, wanted) in access {
            // Unknown (the driver would not say) counts as every right: the wait is the safe
            // side.
            let had = self.access(device).unwrap_or(MemoryAccess::ReadWrite);
            if had.flags() & !wanted.flags() != 0 {
                crate::context::Context::sync_device(device)?;
            }
        }
        self.set_access_checked(access)
    }

    pub(super) fn set_access_checked(&self, access: &[(Device, MemoryAccess)]) -> Result<()> {
        let raw: Vec<(i32, u32)> = access
            .iter()
            .map(|&(device, access)| (device.handle(), access.flags()))
            .collect();
        let (ptr, size) = (self.ptr, self.size);
        self.physical
            .context
            .with_current(|driver| driver.mem_set_access(ptr, size, &raw))
    }

    /// What `device` may do with the mapped memory (`cuMemGetAccess`).
    #[doc(alias = "cuMemGetAccess")]
    pub fn access(&self, device: Device) -> Result<MemoryAccess> {
        let ptr = self.ptr;
        self.physical
            .context
            .with_current(|driver| driver.mem_get_access(device.handle(), ptr))
            .map(MemoryAccess::from_flags)
    }

    /// This mapping as a [`Buffer`] freed on `stream`: every copy, fill, slice, view, graph
    /// node and kernel argument a buffer has, in stream order with `stream` as its
    /// deallocation stream. Freeing the buffer (dropping or [closing](Buffer::close) it)
    /// synchronises its deallocation stream, then unmaps the memory (the range and physical
    /// memory are released once nothing else holds them); where that synchronisation fails,
    /// the memory stays mapped for good, as [`unmap_after`](Mapping::unmap_after) keeps it.
    ///
    /// The memory's own device must have read-write access already
    /// ([`set_access`](Mapping::set_access)), which is refused before anything changes
    /// otherwise (the mapping is returned in the error's place: see below). Other devices
    /// reach the buffer where they have read-write access too. The access cannot change once
    /// the mapping is the buffer's.
    ///
    /// One [`PhysicalMemory`] backs one live buffer at a time: where another mapping of it is
    /// a live buffer already (or it is a [`VirtualMemoryResource`](super::VirtualMemoryResource)
    /// buffer's, from [`physical_memory`](super::VirtualMemoryResource::physical_memory)), this
    /// is refused until that buffer is freed, since the two buffers would be the same bytes at
    /// two addresses and the overlap checks of copies compare addresses. Mappings that stay
    /// mappings may share memory freely (they are raw addresses). The claim is kept per
    /// `PhysicalMemory` value: the same memory reached again as another value
    /// ([`PhysicalMemory::retain`], [`PhysicalMemory::import_fd`] of this process's own
    /// export) is not seen, and its buffers are the caller's to keep apart.
    ///
    /// Work queued before this call that uses the mapping's addresses (a kernel given the
    /// mapping) is not ordered by it: queue it on `stream`, or wait for it first.
    ///
    /// ```no_run
    /// use cuda_core::memory::{
    ///     AddressRange, AllocationGranularity, MemoryAccess, PhysicalMemory, PhysicalMemoryOptions,
    /// };
    /// use cuda_core::{Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let options = PhysicalMemoryOptions::default();
    /// let size = PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum)?;
    /// let memory = PhysicalMemory::new(device, size, &options)?;
    /// let range = AddressRange::reserve(device, size, None)?;
    /// let mapping = range.map(0, &memory)?;
    /// mapping.set_access(&[(device, MemoryAccess::ReadWrite)])?;
    /// let mut buffer = mapping.into_buffer(&stream).map_err(|(e, _)| e)?;
    /// buffer.fill(7u32, &stream)?;
    /// assert!(buffer.to_vec::<u32>(&stream)?.iter().all(|&x| x == 7));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] where the memory's device lacks read-write access or the
    /// memory backs a live buffer already, or the driver's error where asking for the access
    /// fails; the mapping comes back with the error, unchanged.
    #[allow(clippy::result_large_err)]
    pub fn into_buffer(mut self, stream: &Stream) -> std::result::Result<Buffer, (Error, Mapping)> {
        let own = self.physical.device();
        match self.access(own) {
            Ok(MemoryAccess::ReadWrite) => {}
            Ok(had) => {
                let reason = format!(
                    "device {} (the memory's) has {had:?} access, and a buffer is read and \
                     written by its device: grant it MemoryAccess::ReadWrite with \
                     Mapping::set_access first",
                    own.ordinal()
                );
                return Err((
                    Error::InvalidArgument {
                        name: "self",
                        reason,
                    },
                    self,
                ));
            }
            Err(e) => return Err((e, self)),
        }
        if let Err(e) = self.claim_for_buffer() {
            return Err((e, self));
        }
        let (ptr, size) = (self.ptr, self.size);
        Ok(buffer_over(ptr, size, own, Box::new(self), stream))
    }

    /// Claims its physical memory for the buffer this mapping is becoming (or is part of):
    /// refused where another live buffer is mapped over the same memory.
    pub(super) fn claim_for_buffer(&mut self) -> Result<()> {
        if self.buffer {
            return Ok(());
        }
        if !self.physical.claim_for_buffer() {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "its physical memory is mapped in a live buffer already (another \
                         mapping of it made a buffer, or a VirtualMemoryResource's buffer): two \
                         buffers over the same bytes would alias, and copies between them \
                         would overlap unchecked. Free that buffer first"
                    .to_owned(),
            });
        }
        self.buffer = true;
        Ok(())
    }

    /// Unmaps once the work queued on `stream` so far is done (it synchronises `stream`
    /// first), reporting an error that dropping would only log. Where the synchronisation
    /// fails, that work may still be using the memory: it is then kept mapped for good (with
    /// its physical memory and range), and the error returned.
    #[doc(alias("cuMemUnmap", "cuStreamSynchronize"))]
    pub fn unmap_after(mut self, stream: Option<&Stream>) -> Result<()> {
        if let Some(stream) = stream {
            if let Err(e) = stream.sync_for_host() {
                self.keep_for_good();
                return Err(e);
            }
        }
        let result = self.unmap_now();
        // Unmapped, or kept for good on failure: either way drop has nothing left to do.
        self.size = 0;
        result
    }

    /// `cuMemUnmap`, and the range's record of it. On failure the memory may still be mapped:
    /// its physical memory and range are then kept for good, so that nothing mapped is freed.
    fn unmap_now(&mut self) -> Result<()> {
        let (ptr, size) = (self.ptr, self.size);
        match self
            .physical
            .context
            .with_current(|driver| driver.mem_unmap(ptr, size))
        {
            Ok(()) => {
                self.range.mapped_parts().remove(&self.offset);
                if std::mem::take(&mut self.buffer) {
                    self.physical.release_for_buffer();
                }
                Ok(())
            }
            Err(e) => {
                self.keep_for_good();
                Err(e)
            }
        }
    }

    /// Leaves the memory mapped for good: its physical memory and range are never released
    /// (one reference of each is leaked), and dropping the mapping does nothing.
    fn keep_for_good(&mut self) {
        std::mem::forget(Arc::clone(&self.physical));
        std::mem::forget(Arc::clone(&self.range));
        self.size = 0;
    }
}

// What a buffer made of a mapping holds: its access for other devices is the driver's record,
// and its release unmaps (the buffer's stream synchronised already).
impl Kept for Mapping {
    fn reachable_from(&self, device: Device) -> Result<bool> {
        Ok(self.access(device)? == MemoryAccess::ReadWrite)
    }

    fn release(self: Box<Self>) -> Result<()> {
        self.unmap_after(None)
    }
}

/// Refuses, before the driver, an access list that cannot be set on memory of `own`.
pub(super) fn check_access(
    own: Device,
    access: &[(Device, MemoryAccess)],
    name: &'static str,
) -> Result<()> {
    if access.is_empty() {
        return Err(Error::InvalidArgument {
            name,
            reason: "name at least one device".to_owned(),
        });
    }
    for (i, &(device, wanted)) in access.iter().enumerate() {
        if access[..i].iter().any(|&(other, _)| other == device) {
            return Err(Error::InvalidArgument {
                name,
                reason: format!("device {} is listed twice", device.ordinal()),
            });
        }
        if wanted != MemoryAccess::None && device != own && !device.can_access_peer(&own)? {
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "device {} cannot access device {}'s memory (cuDeviceCanAccessPeer)",
                    device.ordinal(),
                    own.ordinal()
                ),
            });
        }
    }
    Ok(())
}
