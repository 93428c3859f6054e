//! Physical memory: [`PhysicalMemory`] (`cuMemCreate`), its options and its granularity.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{checks, AllocationGranularity, ShareableHandleType};
use crate::context::Context;
use crate::device::Device;
use crate::driver::{AllocationHandle, AllocationSpec};
use crate::error::{Error, Result};
use crate::DevicePtr;

/// Properties of new physical memory (`CUmemAllocationProp` of pinned device memory): see
/// [`PhysicalMemory::new`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "CUmemAllocationProp")]
#[non_exhaustive]
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
    pub(super) fn spec(&self, device: Device) -> AllocationSpec {
        AllocationSpec {
            device: device.handle(),
            handle_types: self.handle_type.bits(),
            gpu_direct_rdma: self.gpu_direct_rdma,
            compressible: self.compressible,
        }
    }

    /// Refuses, before any driver call, what `device` cannot make.
    pub(super) fn check_supported(&self, device: Device) -> Result<()> {
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
pub(super) fn granularity_of(
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
/// (`cuMemRelease`) when the last holder drops it: the [`Mapping`](super::Mapping)s of it hold
/// it, so it lives as long as it is mapped. Its size is a whole number of its device's minimum
/// [granularity](PhysicalMemory::granularity).
///
/// ```no_run
/// use cuda_core::memory::{
///     AddressRange, AllocationGranularity, MemoryAccess, PhysicalMemory, PhysicalMemoryOptions,
/// };
/// use cuda_core::Device;
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
    pub(super) handle: AllocationHandle,
    pub(super) size: usize,
    /// The minimum granularity of its properties.
    pub(super) granularity: usize,
    spec: AllocationSpec,
    pub(super) context: Context,
    /// Whether a live buffer is mapped over it ([`PhysicalMemory::claim_for_buffer`]).
    in_buffer: AtomicBool,
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
    pub(super) fn create(
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
            in_buffer: AtomicBool::new(false),
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
            in_buffer: AtomicBool::new(false),
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
        unsafe { crate::memory::adopt_driver_fd(fd) }
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

    /// Claims the memory for one buffer: `false` where a live buffer holds it already (two
    /// buffers over the same bytes would alias, and the overlap checks of copies compare
    /// addresses). Given back with [`PhysicalMemory::release_for_buffer`].
    pub(super) fn claim_for_buffer(&self) -> bool {
        self.in_buffer
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Gives back the claim of [`PhysicalMemory::claim_for_buffer`]: its buffer is unmapped.
    pub(super) fn release_for_buffer(&self) {
        self.in_buffer.store(false, Ordering::Release);
    }
}

/// The properties of plain (non-exportable) memory of `device`.
pub(super) fn device_spec(device: Device) -> AllocationSpec {
    PhysicalMemoryOptions::default().spec(device)
}
