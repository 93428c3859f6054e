//! Virtual memory management: address ranges reserved once, physical memory made in
//! granularity-sized pieces, mapped into the ranges and made accessible to chosen devices.
//!
//! The pieces, lowest first:
//!
//! - [`AddressRange`]: a reserved range of device addresses (`cuMemAddressReserve`), backed by
//!   nothing until memory is mapped into it;
//! - [`PhysicalMemory`]: device memory with no address (`cuMemCreate`), a whole number of the
//!   device's [allocation granularity](PhysicalMemory::granularity); exportable as a POSIX file
//!   descriptor where made so, and importable from one;
//! - [`Mapping`]: physical memory mapped at an offset of a range (`cuMemMap`), with its access
//!   set per device (`cuMemSetAccess`);
//! - [`VirtualMemoryResource`]: a [`MemoryResource`] whose buffers are each a range of their
//!   own with memory mapped into it, and which makes [`GrowableBuffer`]s: a large range
//!   reserved once, into which more memory is mapped as the buffer grows, at the same address.
//!
//! Lifetimes are structural: a mapping holds its physical memory and its range, so it is
//! unmapped before either is released (`cuMemUnmap`, then `cuMemRelease` and
//! `cuMemAddressFree`), whatever order the values are dropped in. Sizes and offsets that are
//! not multiples of the granularity, maps past the end of a range or over a mapped part of it,
//! zero sizes and sizes that overflow are refused before any driver call, the granularity named
//! in the message.
//!
//! Every call is made with the device's primary context current (and the caller's restored).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::Device;
use crate::driver::{AllocationHandle, AllocationSpec, HANDLE_TYPE_POSIX_FD};
use crate::error::{Error, Result};
use crate::lifetime::Held;
use crate::stream::Stream;

/// What a device may do with mapped memory (`CUmemAccess_flags`).
#[doc(alias = "CUmemAccess_flags")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryAccess {
    /// No access (`CU_MEM_ACCESS_FLAGS_PROT_NONE`).
    None,
    /// Read only (`CU_MEM_ACCESS_FLAGS_PROT_READ`).
    Read,
    /// Read and write (`CU_MEM_ACCESS_FLAGS_PROT_READWRITE`).
    ReadWrite,
}

impl MemoryAccess {
    fn flags(self) -> u32 {
        match self {
            MemoryAccess::None => 0,
            MemoryAccess::Read => 1,
            MemoryAccess::ReadWrite => 3,
        }
    }

    fn from_flags(flags: u32) -> MemoryAccess {
        match flags {
            0 => MemoryAccess::None,
            1 => MemoryAccess::Read,
            _ => MemoryAccess::ReadWrite,
        }
    }
}

/// The kind of operating-system handle physical memory can be exported as
/// (`CUmemAllocationHandleType`).
#[doc(alias = "CUmemAllocationHandleType")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShareableHandleType {
    /// Not exportable (`CU_MEM_HANDLE_TYPE_NONE`).
    #[default]
    None,
    /// A POSIX file descriptor (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`), which can be sent
    /// to another process over a Unix socket.
    PosixFileDescriptor,
}

impl ShareableHandleType {
    fn bits(self) -> u32 {
        match self {
            ShareableHandleType::None => 0,
            ShareableHandleType::PosixFileDescriptor => HANDLE_TYPE_POSIX_FD,
        }
    }

    fn from_bits(bits: u32) -> ShareableHandleType {
        if bits & HANDLE_TYPE_POSIX_FD != 0 {
            ShareableHandleType::PosixFileDescriptor
        } else {
            ShareableHandleType::None
        }
    }
}

/// Which allocation granularity to ask for (`CUmemAllocationGranularity_flags`).
#[doc(alias = "CUmemAllocationGranularity_flags")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllocationGranularity {
    /// The smallest the driver accepts (`CU_MEM_ALLOC_GRANULARITY_MINIMUM`): sizes, offsets
    /// and addresses must be multiples of it.
    Minimum,
    /// The driver's recommendation for performance (`CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`).
    #[default]
    Recommended,
}

/// Properties of new physical memory (`CUmemAllocationProp` of pinned device memory): see
/// [`PhysicalMemory::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "CUmemAllocationProp")]
pub struct PhysicalMemoryOptions {
    /// The handle it can be exported as (`requestedHandleTypes`); the default is none.
    pub handle_type: ShareableHandleType,
    /// Whether third-party devices may access it by GPUDirect RDMA
    /// (`allocFlags.gpuDirectRDMACapable`); the device must support it
    /// ([`gpu_direct_rdma_with_cuda_vmm_supported`](crate::DeviceProperties::gpu_direct_rdma_with_cuda_vmm_supported)).
    pub gpu_direct_rdma: bool,
    /// Whether the memory may be compressed (`allocFlags.compressionType` generic); the
    /// device must support it
    /// ([`generic_compression_supported`](crate::DeviceProperties::generic_compression_supported)).
    pub compressible: bool,
}

crate::options::chainers!(PhysicalMemoryOptions {
    with_handle_type(handle_type: ShareableHandleType);
    with_gpu_direct_rdma(gpu_direct_rdma: bool);
    with_compressible(compressible: bool);
});

impl PhysicalMemoryOptions {
    fn spec(&self, device: Device) -> AllocationSpec {
        AllocationSpec {
            device: device.handle(),
            handle_types: self.handle_type.bits(),
            gpu_direct_rdma: self.gpu_direct_rdma,
            compressible: self.compressible,
        }
    }

    /// Refuses, before any driver call, what `device` cannot make.
    fn check_supported(&self, device: Device) -> Result<()> {
        let properties = device.properties();
        let refuse = |what: &str| Error::InvalidArgument {
            name: "device",
            reason: format!("device {} does not support {what}", device.ordinal()),
        };
        if !properties.virtual_memory_management_supported()? {
            return Err(refuse(
                "virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)",
            ));
        }
        if self.handle_type == ShareableHandleType::PosixFileDescriptor
            && !properties.handle_type_posix_file_descriptor_supported()?
        {
            return Err(refuse(
                "exporting memory as a POSIX file descriptor \
                 (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED)",
            ));
        }
        if self.gpu_direct_rdma && !properties.gpu_direct_rdma_with_cuda_vmm_supported()? {
            return Err(refuse(
                "GPUDirect RDMA of virtual memory \
                 (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)",
            ));
        }
        if self.compressible && !properties.generic_compression_supported()? {
            return Err(refuse(
                "compressible memory (CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)",
            ));
        }
        Ok(())
    }
}

/// The driver's granularity for `spec`, through `context`; a zero answer is refused (every
/// check divides by it).
fn granularity_of(
    context: &Context,
    spec: &AllocationSpec,
    which: AllocationGranularity,
) -> Result<usize> {
    let recommended = which == AllocationGranularity::Recommended;
    let granularity =
        context.with_current(|driver| driver.mem_get_allocation_granularity(spec, recommended))?;
    if granularity == 0 {
        return Err(Error::InvalidArgument {
            name: "device",
            reason: format!(
                "the driver reports an allocation granularity of 0 for device {}",
                spec.device
            ),
        });
    }
    Ok(granularity)
}

/// Physical device memory with no address of its own (`cuMemCreate`), released
/// (`cuMemRelease`) when the last holder drops it: the [`Mapping`]s of it hold it, so it lives
/// as long as it is mapped. Its size is a whole number of its device's minimum
/// [granularity](PhysicalMemory::granularity).
///
/// ```no_run
/// use cuda_core::{AddressRange, AllocationGranularity, Device, MemoryAccess, PhysicalMemory,
///     PhysicalMemoryOptions};
///
/// let device = Device::new(0)?;
/// let options = PhysicalMemoryOptions::default();
/// let granularity = PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum)?;
/// let range = AddressRange::reserve(device, 4 * granularity, None)?;
/// let memory = PhysicalMemory::new(device, 2 * granularity, &options)?;
/// let mapping = range.map(granularity, &memory)?;
/// mapping.set_access(&[(device, MemoryAccess::ReadWrite)])?;
/// assert_eq!(mapping.ptr().0, range.ptr().0 + granularity as u64);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("CUmemGenericAllocationHandle", "cuMemCreate"))]
pub struct PhysicalMemory {
    handle: AllocationHandle,
    size: usize,
    /// The minimum granularity of its properties.
    granularity: usize,
    spec: AllocationSpec,
    context: Context,
}

impl fmt::Debug for PhysicalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhysicalMemory")
            .field("device", &self.spec.device)
            .field("size", &self.size)
            .field("granularity", &self.granularity)
            .field("handle_type", &self.handle_type())
            .finish()
    }
}

impl Drop for PhysicalMemory {
    fn drop(&mut self) {
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|driver| driver.mem_release(handle))
        {
            log::error!(
                "releasing {} bytes of physical memory of device {}: {e}",
                self.size,
                self.spec.device
            );
        }
    }
}

impl PhysicalMemory {
    /// The allocation granularity of memory of `options` on `device`
    /// (`cuMemGetAllocationGranularity`): sizes, map offsets and addresses are multiples of the
    /// minimum; the recommended one is better for performance.
    #[doc(alias = "cuMemGetAllocationGranularity")]
    pub fn granularity(
        device: Device,
        options: &PhysicalMemoryOptions,
        which: AllocationGranularity,
    ) -> Result<usize> {
        let context = device.primary_context()?;
        granularity_of(&context, &options.spec(device), which)
    }

    /// Makes `size` bytes of physical memory on `device` (`cuMemCreate`). `size` must be a
    /// non-zero multiple of the minimum [granularity](PhysicalMemory::granularity), which the
    /// error names otherwise; the device must support what `options` ask.
    #[doc(alias = "cuMemCreate")]
    pub fn new(
        device: Device,
        size: usize,
        options: &PhysicalMemoryOptions,
    ) -> Result<Arc<PhysicalMemory>> {
        options.check_supported(device)?;
        let context = device.primary_context()?;
        let spec = options.spec(device);
        let granularity = granularity_of(&context, &spec, AllocationGranularity::Minimum)?;
        checks::multiple("size", size, granularity)?;
        Self::create(context, spec, size, granularity)
    }

    /// `cuMemCreate` of a size already checked.
    fn create(
        context: Context,
        spec: AllocationSpec,
        size: usize,
        granularity: usize,
    ) -> Result<Arc<PhysicalMemory>> {
        let handle = context.with_current(|driver| driver.mem_create(size, &spec))?;
        Ok(Arc::new(PhysicalMemory {
            handle,
            size,
            granularity,
            spec,
            context,
        }))
    }

    /// Wraps a handle the driver gave this process (imported or retained), once it is known to
    /// be memory of `device` of a whole number of granules of `size`; released otherwise.
    fn adopt(
        handle: AllocationHandle,
        device: Device,
        context: Context,
        size: usize,
    ) -> Result<Arc<PhysicalMemory>> {
        // The wrapper owns the handle from here, and releases it on any error below.
        let mut memory = PhysicalMemory {
            handle,
            size,
            granularity: 1,
            spec: device_spec(device),
            context,
        };
        memory.spec = memory
            .context
            .with_current(|driver| driver.mem_get_allocation_properties(handle))?;
        if memory.spec.device != device.handle() {
            return Err(Error::InvalidArgument {
                name: "device",
                reason: format!(
                    "the memory is on device {}, not on device {}",
                    memory.spec.device,
                    device.ordinal()
                ),
            });
        }
        memory.granularity = granularity_of(
            &memory.context,
            &memory.spec,
            AllocationGranularity::Minimum,
        )?;
        checks::multiple("size", size, memory.granularity)?;
        Ok(Arc::new(memory))
    }

    /// Takes a reference of the physical memory mapped at `ptr`, which may be any address of a
    /// mapping (`cuMemRetainAllocationHandle`), released when the result drops. The memory
    /// must be on `device`.
    ///
    /// # Safety
    ///
    /// `size` is the size of that physical memory (the driver does not report it), so that
    /// mapping the result maps no more than there is.
    #[doc(alias = "cuMemRetainAllocationHandle")]
    pub unsafe fn retain(
        device: Device,
        ptr: DevicePtr,
        size: usize,
    ) -> Result<Arc<PhysicalMemory>> {
        let context = device.primary_context()?;
        let handle = context.with_current(|driver| driver.mem_retain_allocation_handle(ptr.0))?;
        Self::adopt(handle, device, context, size)
    }

    /// Exports the memory as a POSIX file descriptor (`cuMemExportToShareableHandle`), which
    /// another process (or this one) imports with [`import_fd`](PhysicalMemory::import_fd).
    /// The memory must have been made with [`ShareableHandleType::PosixFileDescriptor`]. The
    /// descriptor is close-on-exec. The memory lives until it is released here and every
    /// descriptor is closed and every import of it released.
    #[cfg(unix)]
    #[doc(alias = "cuMemExportToShareableHandle")]
    pub fn export_fd(&self) -> Result<std::os::fd::OwnedFd> {
        if self.handle_type() != ShareableHandleType::PosixFileDescriptor {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the memory was made without ShareableHandleType::PosixFileDescriptor \
                         (PhysicalMemoryOptions::handle_type), so it cannot be exported as a \
                         file descriptor"
                    .to_owned(),
            });
        }
        let handle = self.handle;
        let fd = self
            .context
            .with_current(|driver| driver.mem_export_to_fd(handle))?;
        if fd < 0 {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!("the driver exported the memory as file descriptor {fd}"),
            });
        }
        // SAFETY: the driver made a new descriptor for the caller, who owns it from here.
        unsafe { super::adopt_driver_fd(fd) }
    }

    /// Imports physical memory of `device` from a POSIX file descriptor made by
    /// [`export_fd`](PhysicalMemory::export_fd) (`cuMemImportFromShareableHandle`); the
    /// descriptor stays the caller's. The result is a reference to the same memory, released
    /// when it drops.
    ///
    /// # Safety
    ///
    /// `size` is the size of the exported memory (the driver does not report it), so that
    /// mapping the result maps no more than there is.
    #[cfg(unix)]
    #[doc(alias = "cuMemImportFromShareableHandle")]
    pub unsafe fn import_fd(
        device: Device,
        fd: std::os::fd::BorrowedFd<'_>,
        size: usize,
    ) -> Result<Arc<PhysicalMemory>> {
        use std::os::fd::AsRawFd;
        let context = device.primary_context()?;
        let raw = fd.as_raw_fd();
        let handle = context.with_current(|driver| driver.mem_import_from_fd(raw))?;
        Self::adopt(handle, device, context, size)
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device the memory is on.
    pub fn device(&self) -> Device {
        Device::from_handle(self.spec.device)
    }

    /// The minimum granularity of memory like this: the multiple of sizes, map offsets and
    /// addresses.
    pub fn min_granularity(&self) -> usize {
        self.granularity
    }

    /// The handle it can be exported as.
    pub fn handle_type(&self) -> ShareableHandleType {
        ShareableHandleType::from_bits(self.spec.handle_types)
    }

    /// The raw `CUmemGenericAllocationHandle`, valid while this value lives.
    pub fn as_raw(&self) -> u64 {
        self.handle
    }
}

/// The properties of plain (non-exportable) memory of `device`.
fn device_spec(device: Device) -> AllocationSpec {
    PhysicalMemoryOptions::default().spec(device)
}

/// A reserved range of device addresses (`cuMemAddressReserve`), freed (`cuMemAddressFree`)
/// when the last holder drops it: its [`Mapping`]s hold it. Nothing backs it until physical
/// memory is [mapped](AddressRange::map) into it.
#[doc(alias = "cuMemAddressReserve")]
pub struct AddressRange {
    ptr: u64,
    size: usize,
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
    fn reserve_checked(
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
/// [`VirtualMemoryResource`] and a [`GrowableBuffer`] keep that order themselves.
#[doc(alias = "cuMemMap")]
pub struct Mapping {
    ptr: u64,
    offset: usize,
    size: usize,
    // Dropped in this order after the unmap: the memory is released, then the range freed.
    physical: Arc<PhysicalMemory>,
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

    fn set_access_checked(&self, access: &[(Device, MemoryAccess)]) -> Result<()> {
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

/// Refuses, before the driver, an access list that cannot be set on memory of `own`.
fn check_access(own: Device, access: &[(Device, MemoryAccess)], name: &'static str) -> Result<()> {
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

/// Options of a [`VirtualMemoryResource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
/// use cuda_core::{Allocate, Device, StreamOptions, VirtualMemoryResource,
///     VirtualMemoryResourceOptions};
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
    /// another resource is refused.
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
    /// of `range` and grants the resource's access to it.
    fn map_into(&self, range: &Arc<AddressRange>, offset: usize, bytes: usize) -> Result<Mapping> {
        let physical =
            PhysicalMemory::create(self.context.clone(), self.spec, bytes, self.min_granularity)?;
        let mapping = range.map(offset, &physical)?;
        mapping.set_access_checked(&self.access)?;
        Ok(mapping)
    }

    /// A buffer of `capacity` bytes of addresses (rounded up to the granularity), empty, that
    /// [grows](GrowableBuffer::grow) in place: memory is mapped at its end as it grows, and
    /// its address never changes. `stream` is its deallocation stream, as for a
    /// [`Buffer`].
    ///
    /// ```no_run
    /// use cuda_core::{Device, StreamOptions, VirtualMemoryResource, VirtualMemoryResourceOptions};
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

/// The checks made before any driver call, as functions of numbers alone.
pub(crate) mod checks {
    use std::collections::BTreeMap;

    use crate::error::{Error, Result};

    /// A size in bytes, and in MiB or KiB where it is a whole number of them.
    fn bytes(n: usize) -> String {
        if n >= 1 << 20 && n % (1 << 20) == 0 {
            format!("{n} bytes ({} MiB)", n >> 20)
        } else if n >= 1 << 10 && n % (1 << 10) == 0 {
            format!("{n} bytes ({} KiB)", n >> 10)
        } else {
            format!("{n} bytes")
        }
    }

    /// `value` is a non-zero multiple of `granularity`.
    pub(crate) fn multiple(name: &'static str, value: usize, granularity: usize) -> Result<()> {
        if value == 0 {
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "cannot be zero: give a multiple of the allocation granularity, {}",
                    bytes(granularity)
                ),
            });
        }
        if value % granularity != 0 {
            let up = value
                .checked_next_multiple_of(granularity)
                .map_or_else(|| "overflows".to_owned(), |up| format!("is {}", bytes(up)));
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "{} is not a multiple of the allocation granularity, {}; the next \
                     multiple {up}",
                    bytes(value),
                    bytes(granularity)
                ),
            });
        }
        Ok(())
    }

    /// `value` rounded up to a multiple of `granularity`; zero and overflow refused.
    pub(crate) fn round_up(name: &'static str, value: usize, granularity: usize) -> Result<usize> {
        if value == 0 {
            return Err(Error::InvalidArgument {
                name,
                reason: "cannot be zero".to_owned(),
            });
        }
        value
            .checked_next_multiple_of(granularity)
            .ok_or_else(|| Error::InvalidArgument {
                name,
                reason: format!(
                    "{value} bytes rounded up to the allocation granularity, {}, overflows",
                    bytes(granularity)
                ),
            })
    }

    /// A reservation's alignment: `None` or a power of two, at least `granularity`.
    pub(crate) fn alignment(alignment: Option<usize>, granularity: usize) -> Result<usize> {
        match alignment {
            None => Ok(granularity),
            Some(a) if a.is_power_of_two() => Ok(a.max(granularity)),
            Some(a) => Err(Error::InvalidArgument {
                name: "alignment",
                reason: format!("{a} is not a power of two"),
            }),
        }
    }

    /// A map of `size` bytes at `offset` of a range of `range_size` bytes at `range_ptr`, whose
    /// parts `mapped` (offset: size) are mapped already, with memory of `granularity`.
    pub(crate) fn map(
        range_ptr: u64,
        range_size: usize,
        offset: usize,
        size: usize,
        granularity: usize,
        mapped: &BTreeMap<usize, usize>,
    ) -> Result<()> {
        if offset % granularity != 0 {
            return Err(Error::InvalidArgument {
                name: "offset",
                reason: format!(
                    "{} is not a multiple of the memory's allocation granularity, {}",
                    bytes(offset),
                    bytes(granularity)
                ),
            });
        }
        let end = offset.checked_add(size).filter(|&end| end <= range_size);
        let Some(end) = end else {
            return Err(Error::InvalidArgument {
                name: "offset",
                reason: format!(
                    "{} at offset {offset} reach past the end of the {} range (the \
                     allocation granularity is {})",
                    bytes(size),
                    bytes(range_size),
                    bytes(granularity)
                ),
            });
        };
        if (range_ptr + offset as u64) % granularity as u64 != 0 {
            return Err(Error::InvalidArgument {
                name: "offset",
                reason: format!(
                    "address {:#x} is not a multiple of the memory's allocation granularity, {} \
                     (reserve the range with that alignment)",
                    range_ptr + offset as u64,
                    bytes(granularity)
                ),
            });
        }
        let before = mapped.range(..end).next_back();
        if let Some((&at, &len)) = before.filter(|&(&at, &len)| at + len > offset) {
            return Err(Error::InvalidArgument {
                name: "offset",
                reason: format!(
                    "bytes {offset}..{end} overlap bytes {at}..{} of the range, mapped already",
                    at + len
                ),
            });
        }
        Ok(())
    }

    /// Growing a buffer of `size` bytes and `capacity` to `new_size`.
    pub(crate) fn grow(
        size: usize,
        new_size: usize,
        capacity: usize,
        granularity: usize,
    ) -> Result<()> {
        if new_size > capacity {
            return Err(Error::InvalidArgument {
                name: "new_size",
                reason: format!(
                    "{} is more than the buffer's capacity, {} (a whole number of the \
                     allocation granularity, {})",
                    bytes(new_size),
                    bytes(capacity),
                    bytes(granularity)
                ),
            });
        }
        if new_size < size {
            return Err(Error::InvalidArgument {
                name: "new_size",
                reason: format!(
                    "{new_size} bytes is less than the buffer's {size}: grow does not shrink \
                     (see shrink)"
                ),
            });
        }
        Ok(())
    }

    /// Shrinking a buffer of `size` bytes to `new_size`.
    pub(crate) fn shrink(size: usize, new_size: usize) -> Result<()> {
        if new_size > size {
            return Err(Error::InvalidArgument {
                name: "new_size",
                reason: format!(
                    "{new_size} bytes is more than the buffer's {size}: shrink does not grow \
                     (see grow)"
                ),
            });
        }
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        const G: usize = 2 << 20;

        fn reason(e: Error) -> (&'static str, String) {
            match e {
                Error::InvalidArgument { name, reason } => (name, reason),
                other => panic!("not an invalid argument: {other}"),
            }
        }

        #[test]
        fn a_size_must_be_a_non_zero_multiple_of_the_granularity_which_the_error_names() {
            multiple("size", G, G).unwrap();
            multiple("size", 5 * G, G).unwrap();
            let (name, why) = reason(multiple("size", G + 1, G).unwrap_err());
            assert_eq!(name, "size");
            assert!(why.contains("2097152 bytes (2 MiB)"), "{why}");
            assert!(why.contains("4194304"), "the next multiple: {why}");
            let (_, why) = reason(multiple("size", 0, G).unwrap_err());
            assert!(why.contains("zero") && why.contains("2 MiB"), "{why}");
            let (_, why) = reason(multiple("size", usize::MAX, G).unwrap_err());
            assert!(why.contains("overflows"), "{why}");
        }

        #[test]
        fn round_up_rounds_to_the_next_multiple_and_refuses_zero_and_overflow() {
            assert_eq!(round_up("size", 1, G).unwrap(), G);
            assert_eq!(round_up("size", G, G).unwrap(), G);
            assert_eq!(round_up("size", G + 1, G).unwrap(), 2 * G);
            assert_eq!(round_up("size", 3 * G - 1, G).unwrap(), 3 * G);
            assert!(round_up("size", 0, G).is_err());
            let (name, why) = reason(round_up("capacity", usize::MAX - 5, G).unwrap_err());
            assert_eq!(name, "capacity");
            assert!(why.contains("overflows") && why.contains("2 MiB"), "{why}");
        }

        #[test]
        fn an_alignment_is_a_power_of_two_and_at_least_the_granularity() {
            assert_eq!(alignment(None, G).unwrap(), G);
            assert_eq!(alignment(Some(4096), G).unwrap(), G);
            assert_eq!(alignment(Some(4 * G), G).unwrap(), 4 * G);
            let (name, _) = reason(alignment(Some(3 * G), G).unwrap_err());
            assert_eq!(name, "alignment");
            assert!(alignment(Some(0), G).is_err());
        }

        #[test]
        fn a_map_must_be_aligned_inside_the_range_and_over_nothing_mapped() {
            let none = BTreeMap::new();
            let base = 0x7f00_0000_0000u64;
            map(base, 8 * G, 0, 8 * G, G, &none).unwrap();
            map(base, 8 * G, 6 * G, 2 * G, G, &none).unwrap();
            // Past the end: named with the range's size and the granularity.
            let (name, why) = reason(map(base, 8 * G, 7 * G, 2 * G, G, &none).unwrap_err());
            assert_eq!(name, "offset");
            assert!(
                why.contains("past the end") && why.contains("16 MiB"),
                "{why}"
            );
            assert!(why.contains("2 MiB"), "{why}");
            // An offset that is not a multiple.
            let (_, why) = reason(map(base, 8 * G, 4096, G, G, &none).unwrap_err());
            assert!(
                why.contains("4096 bytes (4 KiB)") && why.contains("2 MiB"),
                "{why}"
            );
            // Overflowing offset + size.
            let (_, why) = reason(map(base, 8 * G, 2 * G, usize::MAX - G, G, &none).unwrap_err());
            assert!(why.contains("past the end"), "{why}");
            // A range whose start is not aligned to this memory's granularity.
            let (_, why) = reason(map(base + 4096, 8 * G, 0, G, G, &none).unwrap_err());
            assert!(
                why.contains("address") && why.contains("alignment"),
                "{why}"
            );
            // Overlaps, from either side, and a neighbour that does not overlap.
            let mapped = BTreeMap::from([(2 * G, 2 * G)]);
            map(base, 8 * G, 0, 2 * G, G, &mapped).unwrap();
            map(base, 8 * G, 4 * G, 2 * G, G, &mapped).unwrap();
            for (offset, size) in [(0, 3 * G), (3 * G, 2 * G), (2 * G, G), (G, 4 * G)] {
                let (_, why) = reason(map(base, 8 * G, offset, size, G, &mapped).unwrap_err());
                assert!(
                    why.contains("overlap") && why.contains("mapped already"),
                    "{why}"
                );
            }
        }

        #[test]
        fn grow_stays_within_the_capacity_and_does_not_shrink() {
            grow(0, 1, 4 * G, G).unwrap();
            grow(G, 4 * G, 4 * G, G).unwrap();
            grow(G, G, 4 * G, G).unwrap();
            let (name, why) = reason(grow(G, 4 * G + 1, 4 * G, G).unwrap_err());
            assert_eq!(name, "new_size");
            assert!(why.contains("capacity") && why.contains("8 MiB"), "{why}");
            assert!(why.contains("granularity, 2097152 bytes (2 MiB)"), "{why}");
            let (_, why) = reason(grow(2 * G, G, 4 * G, G).unwrap_err());
            assert!(why.contains("shrink"), "{why}");
            shrink(2 * G, G).unwrap();
            shrink(2 * G, 0).unwrap();
            assert!(shrink(G, G + 1).is_err());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn access_and_handle_types_are_the_headers_values() {
        assert_eq!(MemoryAccess::None.flags(), 0);
        assert_eq!(MemoryAccess::Read.flags(), 1);
        assert_eq!(MemoryAccess::ReadWrite.flags(), 3);
        for access in [
            MemoryAccess::None,
            MemoryAccess::Read,
            MemoryAccess::ReadWrite,
        ] {
            assert_eq!(MemoryAccess::from_flags(access.flags()), access);
        }
        assert_eq!(ShareableHandleType::None.bits(), 0);
        assert_eq!(ShareableHandleType::PosixFileDescriptor.bits(), 1);
        assert_eq!(
            ShareableHandleType::from_bits(1),
            ShareableHandleType::PosixFileDescriptor
        );
        assert_eq!(ShareableHandleType::from_bits(0), ShareableHandleType::None);
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
