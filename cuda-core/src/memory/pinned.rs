//! Page-locked (pinned) host memory as a memory resource.

use std::fmt;
use std::sync::Arc;

use super::{check_request, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::Device;
use crate::error::Result;
use crate::stream::Stream;

/// `CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP`: pinned for every context, and
/// mapped into the device address space.
const HOST_ALLOC_FLAGS: u32 = 1 | 2;

/// Page-locked (pinned) host memory (`cuMemHostAlloc`), readable and writable by the host
/// and by kernels, and the fastest source or target of copies. Allocation is synchronous;
/// freeing waits for the deallocation stream first.
#[doc(alias = "cuMemHostAlloc")]
pub struct PinnedMemoryResource {
    context: Context,
}

impl fmt::Debug for PinnedMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedMemoryResource")
    }
}

impl PinnedMemoryResource {
    /// Pinned memory, allocated through `device`'s primary context (and usable from every
    /// context, being portable).
    pub fn new(device: Device) -> Result<Arc<PinnedMemoryResource>> {
        Ok(Arc::new(PinnedMemoryResource {
            context: device.primary_context()?,
        }))
    }
}

// SAFETY: each allocation is the driver's own, fresh and at least `size` bytes, freed only
// through `deallocate` (in order on its stream); the answers are this memory kind's.
unsafe impl MemoryResource for PinnedMemoryResource {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, None)?;
        let ptr = self
            .context
            .with_current(|driver| driver.mem_host_alloc(size, HOST_ALLOC_FLAGS))?;
        Ok(DevicePtr(ptr as u64))
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.sync_for_host()?;
        // A synchronous free: under another thread's global capture, made relaxed.
        self.context.with_current(|driver| {
            crate::order::relaxed(driver, || {
                driver.mem_free_host(ptr.0 as *mut std::ffi::c_void)
            })
        })
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn is_private_host_memory(&self) -> bool {
        // cuMemHostAlloc memory has no handle another process could open.
        true
    }

    fn device(&self) -> Option<Device> {
        None
    }
}
