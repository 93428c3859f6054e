//! What the driver knows of an address: [`DevicePtr::info`] (`cuPointerGetAttributes`), for
//! memory another library hands over as a raw pointer.

use super::DevicePtr;
use crate::device::Device;
use crate::error::{Error, Result};

/// Which memory an address is in, as the driver says ([`PointerInfo::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MemoryKind {
    /// Device memory (`CU_MEMORYTYPE_DEVICE`): `cuMemAlloc`, a pool's, a mapping's.
    Device,
    /// Page-locked host memory the driver knows (`CU_MEMORYTYPE_HOST`): `cuMemHostAlloc`, a
    /// pinned pool's, registered memory.
    Host,
    /// Managed memory (`CU_POINTER_ATTRIBUTE_IS_MANAGED`), which migrates between the host and
    /// the devices.
    Managed,
}

/// What the driver knows of the memory at an address ([`DevicePtr::info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PointerInfo {
    /// Which memory it is; `None` for an address the driver does not know (pageable host
    /// memory, or no memory at all).
    pub kind: Option<MemoryKind>,
    /// For device and managed memory, the device the driver names for it
    /// (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`).
    pub device: Option<Device>,
    /// The allocation that holds the address: its first byte and its size in bytes
    /// (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`, `_RANGE_SIZE`), where the driver says.
    pub allocation: Option<(DevicePtr, usize)>,
}

/// `CU_MEMORYTYPE_HOST` and `CU_MEMORYTYPE_DEVICE`.
const HOST_MEMORY: u32 = 1;
const DEVICE_MEMORY: u32 = 2;

impl DevicePtr {
    /// What the driver knows of the memory at this address (`cuPointerGetAttributes`, asked
    /// in the current device's primary context): its kind, its device and the allocation
    /// that holds it. For checking a raw pointer another library hands over before taking it
    /// (as [`Buffer::from_foreign`](crate::Buffer::from_foreign) does, say), as
    /// `cudaPointerGetAttributes` is used.
    ///
    /// An address the driver does not know is not an error: its
    /// [`kind`](PointerInfo::kind) is `None`. The null address is refused.
    ///
    /// ```no_run
    /// use cuda_core::{memory::MemoryKind, Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(4096, &stream)?;
    /// let info = buffer.ptr().info()?;
    /// assert_eq!((info.kind, info.device), (Some(MemoryKind::Device), Some(device)));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuPointerGetAttributes", "cudaPointerGetAttributes"))]
    pub fn info(self) -> Result<PointerInfo> {
        if self.is_null() {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the null address".to_owned(),
            });
        }
        let facts = Device::in_use()?
            .primary_context()?
            .with_current(|driver| driver.ipc_pointer_range(self.0))?;
        let kind = match facts.memory_type {
            _ if facts.is_managed => Some(MemoryKind::Managed),
            DEVICE_MEMORY => Some(MemoryKind::Device),
            HOST_MEMORY => Some(MemoryKind::Host),
            _ => None,
        };
        let device = match kind {
            Some(MemoryKind::Device | MemoryKind::Managed) => usize::try_from(facts.device_ordinal)
                .ok()
                .and_then(|ordinal| Device::new(ordinal).ok()),
            _ => None,
        };
        let allocation =
            (facts.start != 0 && facts.bytes != 0).then_some((DevicePtr(facts.start), facts.bytes));
        Ok(PointerInfo {
            kind,
            device,
            allocation,
        })
    }
}
