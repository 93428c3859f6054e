//! [`NcclMemoryResource`]: NCCL's allocator (`ncclMemAlloc`) as a memory resource.

use std::fmt;
use std::sync::Arc;

use crate::context::Context;
use crate::device::Device;
use crate::driver::nccl::nccl;
use crate::error::Result;
use crate::memory::resource::MemoryResource;
use crate::memory::{check_request, DevicePtr};
use crate::stream::Stream;

/// Device memory from NCCL's own allocator (`ncclMemAlloc`, freed by `ncclMemFree`): memory
/// NCCL can register for its fastest paths (NVLink SHARP, zero-copy between GPUs; see
/// [`Communicator::register`](super::Communicator::register)), as buffers like any other.
/// Allocation is synchronous (NCCL rounds sizes up to its granularity); freeing waits for the
/// deallocation stream first, since `ncclMemFree` frees at once.
///
/// ```no_run
/// use cuda_core::nccl::NcclMemoryResource;
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let memory = NcclMemoryResource::new(device)?;
/// let buffer = memory.allocate(64 << 20, &stream)?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "ncclMemAlloc")]
pub struct NcclMemoryResource {
    context: Context,
}

impl fmt::Debug for NcclMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NcclMemoryResource(device {})",
            self.context.device().ordinal()
        )
    }
}

impl NcclMemoryResource {
    /// NCCL's allocator on `device`, through its primary context (NCCL loaded now: its
    /// absence is the error).
    pub fn new(device: Device) -> Result<Arc<NcclMemoryResource>> {
        nccl()?;
        Ok(Arc::new(NcclMemoryResource {
            context: device.primary_context()?,
        }))
    }
}

// SAFETY: each allocation is NCCL's (`ncclMemAlloc`, with the device's primary context
// current), fresh and at least `size` bytes of the device's memory, usable by work queued
// after it returns; it is freed only through `deallocate`, which first waits for the work
// queued on its stream (`ncclMemFree` frees at once). The answers are this memory kind's:
// device memory, not host memory, reached by the device's own work (NCCL may grant its peers
// access too, which this answer does not count on).
unsafe impl MemoryResource for NcclMemoryResource {
    fn allocate_raw(&self, size: usize, stream: &Stream) -> Result<DevicePtr> {
        check_request(size, stream, Some(self.context.device()))?;
        let nccl = nccl()?;
        self.context
            .with_current(|_| nccl.mem_alloc(size))
            .map(DevicePtr)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.sync_for_host()?;
        let nccl = nccl()?;
        // A synchronous free: under another thread's global capture, made relaxed.
        self.context
            .with_current(|driver| crate::order::relaxed(driver, || nccl.mem_free(ptr.0)))
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
}
