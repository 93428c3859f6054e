//! Synchronous device allocation, for devices without memory pools.

use std::fmt;
use std::sync::Arc;

use super::{check_request, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::Device;
use crate::error::Result;
use crate::stream::Stream;

/// Device memory from `cuMemAlloc`, for devices without memory-pool support (and for anyone
/// who wants memory that is usable on every stream at once). Allocation is synchronous;
/// freeing waits for the deallocation stream, then `cuMemFree`.
#[doc(alias = "cuMemAlloc")]
pub struct SyncMemoryResource {
    context: Context,
}

impl fmt::Debug for SyncMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SyncMemoryResource(device {})",
            self.context.device().ordinal()
        )
    }
}

impl SyncMemoryResource {
    /// Synchronous allocation on `device`, through its primary context.
    pub fn new(device: Device) -> Result<Arc<SyncMemoryResource>> {
        Ok(Arc::new(SyncMemoryResource {
            context: device.primary_context()?,
        }))
    }
}

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes, freed only
// through `deallocate` (in order on its stream); the answers are this memory kind's.
unsafe impl MemoryResource for SyncMemoryResource {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, Some(self.context.device()))?;
        self.context
            .with_current(|driver| driver.mem_alloc(size))
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
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.context.device())
    }

    fn copies_across_devices(&self) -> bool {
        true
    }
}
