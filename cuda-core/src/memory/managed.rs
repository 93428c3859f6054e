//! Managed (unified) memory: its memory resource, and the operations on it: prefetch to a
//! device or the host, advice, discard, and the range attributes that show their effect.

use std::fmt;
use std::ops::RangeBounds;
use std::sync::Arc;

use super::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::Device;
use crate::driver::{Driver, MemLocation};
use crate::error::{Error, Result};
use crate::info::types::DriverVersion;
use crate::order::in_stream_order;
use crate::stream::Stream;

/// `CU_DEVICE_CPU`: the host, in the range attributes of the first form.
const DEVICE_CPU: i32 = -1;
/// `CU_DEVICE_INVALID`: no device (an unused entry, or no single location).
const DEVICE_INVALID: i32 = -2;

/// `CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY`, then `_PREFERRED_LOCATION`, `_ACCESSED_BY`,
/// `_LAST_PREFETCH_LOCATION` and the `_TYPE` / `_ID` pairs of the two locations.
const READ_MOSTLY: u32 = 1;
const PREFERRED_LOCATION: u32 = 2;
const ACCESSED_BY: u32 = 3;
const LAST_PREFETCH_LOCATION: u32 = 4;
const PREFERRED_LOCATION_TYPE: u32 = 5;
const PREFERRED_LOCATION_ID: u32 = 6;
const LAST_PREFETCH_LOCATION_TYPE: u32 = 7;
const LAST_PREFETCH_LOCATION_ID: u32 = 8;
/// The first driver with locations of a type and an id (host NUMA nodes): 12.2.
const LOCATIONS: DriverVersion = DriverVersion(12020);

/// Where memory is, or goes: a device, or the host (any of its NUMA nodes, one node, or the node
/// of the calling thread). Prefetches, advice and the hints of batched copies take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUmemLocation")]
pub enum MemoryLocation {
    /// A device's memory (`CU_MEM_LOCATION_TYPE_DEVICE`).
    Device(Device),
    /// Host memory (`CU_MEM_LOCATION_TYPE_HOST`).
    Host,
    /// Host memory on one NUMA node (`CU_MEM_LOCATION_TYPE_HOST_NUMA`, drivers 12.2 and
    /// newer).
    HostNuma(u32),
    /// Host memory on the NUMA node of the calling thread
    /// (`CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT`, drivers 12.2 and newer).
    HostNumaCurrent,
}

impl MemoryLocation {
    /// The location as the driver takes it, or why it cannot: a NUMA node beyond the
    /// driver's integer.
    pub(crate) fn raw(self, name: &'static str) -> Result<MemLocation> {
        Ok(match self {
            MemoryLocation::Device(device) => MemLocation {
                kind: MemLocation::DEVICE,
                id: device.handle(),
            },
            MemoryLocation::Host => MemLocation {
                kind: MemLocation::HOST,
                id: 0,
            },
            MemoryLocation::HostNuma(node) => MemLocation {
                kind: MemLocation::HOST_NUMA,
                id: i32::try_from(node).map_err(|_| Error::InvalidArgument {
                    name,
                    reason: format!("NUMA node {node} is beyond the driver's range"),
                })?,
            },
            MemoryLocation::HostNumaCurrent => MemLocation {
                kind: MemLocation::HOST_NUMA_CURRENT,
                id: 0,
            },
        })
    }

    /// A location the driver reports as a type and an id; `None` for no location (or one of a
    /// kind this crate does not know).
    fn from_type_and_id(kind: i32, id: i32) -> Option<MemoryLocation> {
        match u32::try_from(kind).ok()? {
            MemLocation::DEVICE => device_of(id).map(MemoryLocation::Device),
            MemLocation::HOST => Some(MemoryLocation::Host),
            MemLocation::HOST_NUMA => u32::try_from(id).ok().map(MemoryLocation::HostNuma),
            MemLocation::HOST_NUMA_CURRENT => Some(MemoryLocation::HostNumaCurrent),
            _ => None,
        }
    }

    /// A location the driver reports as a device ordinal or `CU_DEVICE_CPU` (the first form of
    /// the range attributes).
    fn from_device_id(id: i32) -> Option<MemoryLocation> {
        if id == DEVICE_CPU {
            Some(MemoryLocation::Host)
        } else {
            device_of(id).map(MemoryLocation::Device)
        }
    }
}

/// The device of a driver ordinal, where it is one.
fn device_of(id: i32) -> Option<Device> {
    (id >= 0).then(|| Device::from_handle(id))
}

/// Advice to the unified memory system about a managed range (`cuMemAdvise`): how it will be
/// used, so that the driver places and migrates its pages to suit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUmem_advise")]
pub enum Advice {
    /// Mostly read: every processor that reads the range gets a read-only copy of the pages it
    /// reads; a write invalidates every copy but the writer's (`CU_MEM_ADVISE_SET_READ_MOSTLY`).
    SetReadMostly,
    /// Undoes [`SetReadMostly`](Advice::SetReadMostly).
    UnsetReadMostly,
    /// Where the pages should live: migrations go there when they can
    /// (`CU_MEM_ADVISE_SET_PREFERRED_LOCATION`).
    SetPreferredLocation(MemoryLocation),
    /// Clears the preferred location.
    UnsetPreferredLocation,
    /// The range will be accessed from this location: keep it mapped there, so that its
    /// accesses do not fault (`CU_MEM_ADVISE_SET_ACCESSED_BY`).
    SetAccessedBy(MemoryLocation),
    /// Undoes [`SetAccessedBy`](Advice::SetAccessedBy) for this location.
    UnsetAccessedBy(MemoryLocation),
}

impl Advice {
    /// The `CUmem_advise` code and the location the advice names (for advice that names none,
    /// `default`, which the driver ignores).
    fn raw(self, default: MemoryLocation) -> Result<(u32, MemLocation)> {
        let (code, location) = match self {
            Advice::SetReadMostly => (1, default),
            Advice::UnsetReadMostly => (2, default),
            Advice::SetPreferredLocation(location) => (3, location),
            Advice::UnsetPreferredLocation => (4, default),
            Advice::SetAccessedBy(location) => (5, location),
            Advice::UnsetAccessedBy(location) => (6, location),
        };
        Ok((code, location.raw("advice")?))
    }
}

/// What the driver says of a managed range (`cuMemRangeGetAttribute`): the advice in force and
/// where it was last prefetched to. A location is `None` where none is set, or where the pages
/// of the range do not all agree.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[doc(alias = "cuMemRangeGetAttribute")]
pub struct RangeAttributes {
    /// Whether every page of the range is advised read-mostly.
    pub read_mostly: bool,
    /// The preferred location of every page of the range.
    pub preferred_location: Option<MemoryLocation>,
    /// The locations the whole range is advised to be accessed by (devices, and the host).
    pub accessed_by: Vec<MemoryLocation>,
    /// The location the whole range was last prefetched to: the location asked for, whether
    /// or not the prefetch has run yet.
    pub last_prefetch_location: Option<MemoryLocation>,
}

/// A byte range of a managed buffer (one made by
/// [`ManagedMemoryResource`](crate::memory::ManagedMemoryResource), or any resource whose memory is
/// host- and device-accessible and belongs to a device): what prefetch, advice, discard and the
/// range attributes act on. It borrows the buffer, so that the buffer outlives every use.
///
/// ```no_run
/// use cuda_core::memory::{Advice, ManagedRange, MemoryLocation};
/// use cuda_core::{Allocate, Device, StreamOptions, memory::ManagedMemoryResource};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let buffer = ManagedMemoryResource::new(device)?.allocate(1 << 20, &stream)?;
/// let range = ManagedRange::whole(&buffer)?;
/// range.advise(Advice::SetPreferredLocation(MemoryLocation::Device(device)))?;
/// range.prefetch(MemoryLocation::Device(device), &stream)?;
/// stream.sync()?;
/// let attributes = range.attributes()?;
/// assert_eq!(attributes.preferred_location, Some(MemoryLocation::Device(device)));
/// assert_eq!(attributes.last_prefetch_location, Some(MemoryLocation::Device(device)));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ManagedRange<'a> {
    buffer: &'a Buffer,
    device: Device,
    offset: usize,
    len: usize,
}

impl<'a> ManagedRange<'a> {
    /// The whole buffer. Memory that is not managed is [`Error::InvalidArgument`].
    pub fn whole(buffer: &'a Buffer) -> Result<ManagedRange<'a>> {
        ManagedRange::new(buffer, ..)
    }

    /// The bytes `range` of the buffer. An empty range, one beyond the buffer, or memory that
    /// is not managed is [`Error::InvalidArgument`].
    pub fn new(buffer: &'a Buffer, range: impl RangeBounds<usize>) -> Result<ManagedRange<'a>> {
        let device = match buffer.device() {
            Some(device) if buffer.is_host_accessible() && buffer.is_device_accessible() => device,
            _ => return Err(not_managed(buffer)),
        };
        let (offset, len) = byte_range(&range, buffer.size(), "range")?;
        Ok(ManagedRange {
            buffer,
            device,
            offset,
            len,
        })
    }

    /// The buffer the range is of.
    pub fn buffer(&self) -> &'a Buffer {
        self.buffer
    }

    /// The range's first byte, as an address.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.buffer.ptr().0 + self.offset as u64)
    }

    /// The range's first byte, as an offset into the buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The range's length in bytes (never 0).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: a range has at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The primary context of the memory's device, and the driver.
    fn context(&self) -> Result<(Context, &'static dyn Driver)> {
        let context = self.device.primary_context()?;
        let driver = context.driver();
        Ok((context, driver))
    }

    /// Migrates the range to `location`, in order on `stream` (`cuMemPrefetchAsync`). A device
    /// must be able to access managed memory concurrently with the host
    /// ([`concurrent_managed_access`](crate::DeviceProperties::concurrent_managed_access)); a
    /// host NUMA node needs a 12.2 or newer driver. The prefetch is ordered after the work
    /// queued on the buffer's deallocation stream, and its free after the prefetch, as every
    /// operation on a buffer is.
    #[doc(alias("cuMemPrefetchAsync", "cuMemPrefetchAsync_v2"))]
    pub fn prefetch(&self, location: MemoryLocation, stream: &Stream) -> Result<()> {
        let raw = prefetch_target(location)?;
        in_stream_order(&[self.buffer.deallocation_stream()], stream, || {
            stream.queue_in_context(|driver, handle| {
                driver.mem_prefetch_async(self.ptr().0, self.len, raw, handle)
            })
        })
    }

    /// Gives the driver `advice` about the range (`cuMemAdvise`); it applies to whole pages
    /// (the range is widened to them) and takes effect at once, outside stream order. The
    /// effect shows in [`attributes`](Self::attributes).
    #[doc(alias("cuMemAdvise", "cuMemAdvise_v2"))]
    pub fn advise(&self, advice: Advice) -> Result<()> {
        let (code, location) = advice.raw(MemoryLocation::Device(self.device))?;
        let (context, _) = self.context()?;
        context.with_current(|driver| driver.mem_advise(self.ptr().0, self.len, code, location))
    }

    /// The range's attributes (`cuMemRangeGetAttribute`, once per attribute): on drivers 12.2
    /// and newer, locations come as a type and an id (so host NUMA nodes show); older drivers
    /// name devices and the host only.
    ///
    /// The 580 driver does not report a host NUMA node given as the preferred location
    /// ([`Advice::SetPreferredLocation`] with [`MemoryLocation::HostNuma`]): it reads as
    /// what was preferred before (none, or a device). Prefetches to a node do show.
    #[doc(alias = "cuMemRangeGetAttribute")]
    pub fn attributes(&self) -> Result<RangeAttributes> {
        let (context, driver) = self.context()?;
        let typed = driver.version() >= LOCATIONS;
        let device_count = Device::count()?;
        context.with_current(|driver| {
            let get = |attribute: u32, out: &mut [i32]| {
                driver.mem_range_get_attribute(self.ptr().0, self.len, attribute, out)
            };
            let one = |attribute: u32| {
                let mut value = [0i32];
                get(attribute, &mut value).map(|()| value[0])
            };
            let (preferred_location, last_prefetch_location) = if typed {
                (
                    MemoryLocation::from_type_and_id(
                        one(PREFERRED_LOCATION_TYPE)?,
                        one(PREFERRED_LOCATION_ID)?,
                    ),
                    MemoryLocation::from_type_and_id(
                        one(LAST_PREFETCH_LOCATION_TYPE)?,
                        one(LAST_PREFETCH_LOCATION_ID)?,
                    ),
                )
            } else {
                (
                    MemoryLocation::from_device_id(one(PREFERRED_LOCATION)?),
                    MemoryLocation::from_device_id(one(LAST_PREFETCH_LOCATION)?),
                )
            };
            // One entry per device and one for the host; the driver fills the rest with
            // CU_DEVICE_INVALID.
            let mut accessed = vec![DEVICE_INVALID; device_count + 1];
            get(ACCESSED_BY, &mut accessed)?;
            Ok(RangeAttributes {
                read_mostly: one(READ_MOSTLY)? != 0,
                preferred_location,
                accessed_by: accessed
                    .into_iter()
                    .filter_map(MemoryLocation::from_device_id)
                    .collect(),
                last_prefetch_location,
            })
        })
    }

    /// Discards the range's contents, in order on `stream` (`cuMemDiscardBatchAsync`): the
    /// driver may drop its pages without migrating them, and reads before the next write or
    /// prefetch give unspecified bytes. A CUDA 13 function, needing every device to access
    /// managed memory concurrently with the host; through the 12 ABI, or on a driver without
    /// it, [`Error::NotSupported`] names it.
    ///
    /// # Safety
    ///
    /// NVIDIA documents any read, write or prefetch of any part of the range that runs
    /// concurrently with the discard as undefined behaviour. The caller makes sure that none
    /// does: no other thread uses the buffer (a copy, a prefetch, a kernel, a view) until this
    /// returns, and work queued on other streams than `stream` and the buffer's deallocation
    /// stream (which this orders itself after and before) that touches the range is ordered
    /// against it with events. Reads after it, before the next write or prefetch, give
    /// unspecified bytes (of no undefined value: the bytes are plain data).
    #[doc(alias = "cuMemDiscardBatchAsync")]
    pub unsafe fn discard(&self, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise, for this one range.
        unsafe { discard_batch(&[*self], stream) }
    }

    /// Discards the range's contents and prefetches it to `location`, in order on `stream`
    /// (`cuMemDiscardAndPrefetchBatchAsync`): the pages are made at `location` without their
    /// old contents. As [`discard`](Self::discard) for the driver it needs.
    ///
    /// # Safety
    ///
    /// As for [`discard`](Self::discard).
    #[doc(alias = "cuMemDiscardAndPrefetchBatchAsync")]
    pub unsafe fn discard_and_prefetch(
        &self,
        location: MemoryLocation,
        stream: &Stream,
    ) -> Result<()> {
        // SAFETY: the caller's promise, for this one range.
        unsafe { discard_and_prefetch_batch(&[(*self, location)], stream) }
    }
}

/// The offset and length of `range` within `size` bytes; an empty range or one beyond `size`
/// is [`Error::InvalidArgument`] naming `name`.
pub(crate) fn byte_range(
    range: &impl RangeBounds<usize>,
    size: usize,
    name: &'static str,
) -> Result<(usize, usize)> {
    match super::span::bounds(range, size) {
        (Some(start), Some(end)) if start < end && end <= size => Ok((start, end - start)),
        (Some(start), Some(end)) => Err(Error::InvalidArgument {
            name,
            reason: format!("bytes {start}..{end} are empty or beyond the buffer's {size} bytes"),
        }),
        _ => Err(Error::InvalidArgument {
            name,
            reason: format!(
                "the range ({:?}, {:?}) overflows; the buffer has {size} bytes",
                range.start_bound(),
                range.end_bound()
            ),
        }),
    }
}

/// A prefetch's target as the driver takes it, refusing a device that cannot take managed
/// pages ahead of use.
fn prefetch_target(location: MemoryLocation) -> Result<MemLocation> {
    if let MemoryLocation::Device(device) = location {
        if !device.properties().concurrent_managed_access()? {
            return Err(Error::InvalidArgument {
                name: "location",
                reason: format!(
                    "device {} does not access managed memory concurrently with the host \
                     (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0), so nothing can be \
                     prefetched to it",
                    device.ordinal()
                ),
            });
        }
    }
    location.raw("location")
}

/// Refuses a discard where a device cannot access managed memory concurrently with the host
/// (the driver refuses it then).
fn check_discard() -> Result<()> {
    for device in Device::all()? {
        if !device.properties().concurrent_managed_access()? {
            return Err(Error::InvalidArgument {
                name: "ranges",
                reason: format!(
                    "device {} does not access managed memory concurrently with the host, and \
                     discarding needs every device to",
                    device.ordinal()
                ),
            });
        }
    }
    Ok(())
}

/// What the batched calls take: the ranges' addresses and sizes, and (for prefetches) their
/// locations as runs, with the ranges' deallocation streams once each.
struct Batch<'a> {
    ptrs: Vec<u64>,
    sizes: Vec<usize>,
    locations: Vec<MemLocation>,
    starts: Vec<usize>,
    homes: Vec<&'a Stream>,
}

impl<'a> Batch<'a> {
    fn new(
        ranges: impl ExactSizeIterator<Item = (ManagedRange<'a>, Option<MemoryLocation>)>,
    ) -> Result<Batch<'a>> {
        let n = ranges.len();
        if n == 0 {
            return Err(Error::InvalidArgument {
                name: "ranges",
                reason: "no ranges given".to_owned(),
            });
        }
        let mut batch = Batch {
            ptrs: Vec::with_capacity(n),
            sizes: Vec::with_capacity(n),
            locations: Vec::new(),
            starts: Vec::new(),
            homes: Vec::new(),
        };
        for (i, (range, location)) in ranges.enumerate() {
            batch.ptrs.push(range.ptr().0);
            batch.sizes.push(range.len);
            if let Some(location) = location {
                let raw = prefetch_target(location).map_err(|e| at_range(e, i))?;
                if batch.locations.last() != Some(&raw) {
                    batch.locations.push(raw);
                    batch.starts.push(i);
                }
            }
            let home = range.buffer.deallocation_stream();
            if !batch.homes.iter().any(|h| h.same_as(home)) {
                batch.homes.push(home);
            }
        }
        Ok(batch)
    }
}

/// Memory that prefetch, advice and discard cannot take.
#[cold]
fn not_managed(buffer: &Buffer) -> Error {
    Error::InvalidArgument {
        name: "buffer",
        reason: format!(
            "{:?} memory is not managed memory (host- and device-accessible memory of a device, \
             as ManagedMemoryResource allocates)",
            buffer.memory_resource()
        ),
    }
}

/// An error about one range, with its index in the reason.
fn at_range(e: Error, index: usize) -> Error {
    match e {
        Error::InvalidArgument { name, reason } => Error::InvalidArgument {
            name,
            reason: format!("range {index}: {reason}"),
        },
        other => other,
    }
}

/// Prefetches each range to its location in one call, in order on `stream`
/// (`cuMemPrefetchBatchAsync`): the batch runs in stream order, its prefetches in no order
/// among themselves. A CUDA 13 function: through the 12 ABI, or on a driver without it,
/// [`Error::NotSupported`] names it. The locations are checked as by
/// [`ManagedRange::prefetch`], and an empty list is [`Error::InvalidArgument`].
#[doc(alias = "cuMemPrefetchBatchAsync")]
pub fn prefetch_batch(
    ranges: &[(ManagedRange<'_>, MemoryLocation)],
    stream: &Stream,
) -> Result<()> {
    let batch = Batch::new(ranges.iter().map(|&(r, l)| (r, Some(l))))?;
    in_stream_order(&batch.homes, stream, || {
        stream.queue_in_context(|driver, handle| {
            driver.mem_prefetch_batch_async(
                &batch.ptrs,
                &batch.sizes,
                &batch.locations,
                &batch.starts,
                handle,
            )
        })
    })
}

/// Discards the ranges in one call, in order on `stream` (`cuMemDiscardBatchAsync`): see
/// [`ManagedRange::discard`].
///
/// # Safety
///
/// As for [`ManagedRange::discard`], for every range.
#[doc(alias = "cuMemDiscardBatchAsync")]
pub unsafe fn discard_batch(ranges: &[ManagedRange<'_>], stream: &Stream) -> Result<()> {
    let batch = Batch::new(ranges.iter().map(|&r| (r, None)))?;
    check_discard()?;
    in_stream_order(&batch.homes, stream, || {
        stream.queue_in_context(|driver, handle| {
            driver.mem_discard_batch_async(&batch.ptrs, &batch.sizes, handle)
        })
    })
}

/// Discards each range and prefetches it to its location, in one call in order on `stream`
/// (`cuMemDiscardAndPrefetchBatchAsync`): see [`ManagedRange::discard_and_prefetch`].
///
/// # Safety
///
/// As for [`ManagedRange::discard`], for every range.
#[doc(alias = "cuMemDiscardAndPrefetchBatchAsync")]
pub unsafe fn discard_and_prefetch_batch(
    ranges: &[(ManagedRange<'_>, MemoryLocation)],
    stream: &Stream,
) -> Result<()> {
    let batch = Batch::new(ranges.iter().map(|&(r, l)| (r, Some(l))))?;
    check_discard()?;
    in_stream_order(&batch.homes, stream, || {
        stream.queue_in_context(|driver, handle| {
            driver.mem_discard_and_prefetch_batch_async(
                &batch.ptrs,
                &batch.sizes,
                &batch.locations,
                &batch.starts,
                handle,
            )
        })
    })
}

/// `CU_MEM_ATTACH_GLOBAL`.
const ATTACH_GLOBAL: u32 = 1;

/// Managed (unified) memory (`cuMemAllocManaged`), migrated between host and device on
/// demand. Allocation is synchronous; freeing waits for the deallocation stream first.
#[doc(alias = "cuMemAllocManaged")]
pub struct ManagedMemoryResource {
    context: Context,
}

impl fmt::Debug for ManagedMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ManagedMemoryResource(device {})",
            self.context.device().ordinal()
        )
    }
}

impl ManagedMemoryResource {
    /// Managed memory attached globally, allocated in `device`'s primary context.
    pub fn new(device: Device) -> Result<Arc<ManagedMemoryResource>> {
        Ok(Arc::new(ManagedMemoryResource {
            context: device.primary_context()?,
        }))
    }
}

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes, freed only
// through `deallocate` (in order on its stream); the answers are this memory kind's.
unsafe impl MemoryResource for ManagedMemoryResource {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, None)?;
        self.context
            .with_current(|driver| driver.mem_alloc_managed(size, ATTACH_GLOBAL))
            .map(DevicePtr)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.sync_for_host()?;
        // A synchronous free: under another thread's global capture, made relaxed.
        self.context
            .with_current(|driver| crate::order::relaxed(driver, || driver.mem_free(ptr.0)))
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn device(&self) -> Option<Device> {
        Some(self.context.device())
    }

    /// Managed memory attached globally is accessible from every device.
    fn is_accessible_from(&self, _device: Device) -> Result<bool> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_are_checked_against_the_size() {
        assert_eq!(byte_range(&(..), 100, "r").unwrap(), (0, 100));
        assert_eq!(byte_range(&(10..20), 100, "r").unwrap(), (10, 10));
        assert_eq!(byte_range(&(10..=20), 100, "r").unwrap(), (10, 11));
        assert_eq!(byte_range(&(90..), 100, "r").unwrap(), (90, 10));
        assert_eq!(byte_range(&(..=99), 100, "r").unwrap(), (0, 100));
        for bad in [
            byte_range(&(10..10), 100, "r"),
            byte_range(&(0..101), 100, "r"),
            byte_range(&(..=100), 100, "r"),
            byte_range(&(100..), 100, "r"),
            byte_range(&(..=usize::MAX), 100, "r"),
            byte_range(
                &(
                    std::ops::Bound::Excluded(usize::MAX),
                    std::ops::Bound::Unbounded,
                ),
                100,
                "r",
            ),
            byte_range(&(..), 0, "r"),
        ] {
            match bad {
                Err(Error::InvalidArgument { name: "r", reason }) => {
                    assert!(
                        reason.contains("100 bytes") || reason.contains("0 bytes"),
                        "{reason}"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn locations_map_to_the_driver_codes_and_back() {
        let device = Device::from_handle(3);
        let cases = [
            (
                MemoryLocation::Device(device),
                MemLocation { kind: 1, id: 3 },
            ),
            (MemoryLocation::Host, MemLocation { kind: 2, id: 0 }),
            (MemoryLocation::HostNuma(5), MemLocation { kind: 3, id: 5 }),
            (
                MemoryLocation::HostNumaCurrent,
                MemLocation { kind: 4, id: 0 },
            ),
        ];
        for (location, raw) in cases {
            assert_eq!(location.raw("l").unwrap(), raw);
            assert_eq!(
                MemoryLocation::from_type_and_id(raw.kind as i32, raw.id),
                Some(location)
            );
        }
        assert!(matches!(
            MemoryLocation::HostNuma(u32::MAX).raw("l"),
            Err(Error::InvalidArgument { name: "l", .. })
        ));
        // No location, a kind this crate does not know, a negative device or node.
        assert_eq!(MemoryLocation::from_type_and_id(0, 0), None);
        assert_eq!(MemoryLocation::from_type_and_id(6, 1), None);
        assert_eq!(MemoryLocation::from_type_and_id(1, -2), None);
        assert_eq!(MemoryLocation::from_type_and_id(3, -1), None);
        // The first form: a device ordinal, CU_DEVICE_CPU, or CU_DEVICE_INVALID.
        assert_eq!(
            MemoryLocation::from_device_id(2),
            Some(MemoryLocation::Device(Device::from_handle(2)))
        );
        assert_eq!(
            MemoryLocation::from_device_id(-1),
            Some(MemoryLocation::Host)
        );
        assert_eq!(MemoryLocation::from_device_id(-2), None);
    }

    #[test]
    fn advice_has_the_driver_codes_and_its_location() {
        let own = MemoryLocation::Device(Device::from_handle(1));
        let other = MemoryLocation::HostNuma(2);
        let dev = MemLocation { kind: 1, id: 1 };
        let numa = MemLocation { kind: 3, id: 2 };
        assert_eq!(Advice::SetReadMostly.raw(own).unwrap(), (1, dev));
        assert_eq!(Advice::UnsetReadMostly.raw(own).unwrap(), (2, dev));
        assert_eq!(
            Advice::SetPreferredLocation(other).raw(own).unwrap(),
            (3, numa)
        );
        assert_eq!(Advice::UnsetPreferredLocation.raw(own).unwrap(), (4, dev));
        assert_eq!(Advice::SetAccessedBy(other).raw(own).unwrap(), (5, numa));
        assert_eq!(Advice::UnsetAccessedBy(other).raw(own).unwrap(), (6, numa));
        assert!(Advice::SetAccessedBy(MemoryLocation::HostNuma(u32::MAX))
            .raw(own)
            .is_err());
    }
}
