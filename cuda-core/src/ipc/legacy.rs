//! Legacy IPC: `cuMemAlloc` memory exported as an [`IpcMemHandle`] (`cuIpcGetMemHandle`,
//! [`SyncMemoryResource::export_buffer`](crate::memory::SyncMemoryResource::export_buffer)) and
//! opened in another process (`cuIpcOpenMemHandle`, [`IpcMemHandle::open`]) as a buffer of an
//! [`OpenedIpcMemory`] resource, which closes it.

use std::fmt;
use std::sync::Arc;

use super::allocated_by;
use super::form::{Reader, Writer};
use crate::context::Context;
use crate::device::{Device, Uuid};
use crate::driver::PointerRange;
use crate::error::{Error, Result};
use crate::lifetime::Held;
use crate::memory::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::stream::Stream;

/// `cuMemAlloc` memory of another process, described for this one (`cuIpcGetMemHandle`):
/// plain bytes ([`to_bytes`](Self::to_bytes)), opened with [`open`](Self::open).
#[doc(alias("CUipcMemHandle", "cuIpcGetMemHandle"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcMemHandle {
    uuid: [u8; 16],
    size: u64,
    handle: [u8; 64],
}

impl fmt::Debug for IpcMemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcMemHandle")
            .field("gpu", &Uuid(self.uuid).to_string())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The magic of an [`IpcMemHandle`]'s bytes.
const MEM_MAGIC: &[u8; 4] = b"CCIM";

impl IpcMemHandle {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 96;

    pub(crate) fn new(uuid: Uuid, size: usize, handle: [u8; 64]) -> IpcMemHandle {
        IpcMemHandle {
            uuid: uuid.0,
            size: size as u64,
            handle,
        }
    }

    /// The size of the memory, in bytes.
    pub fn size(&self) -> usize {
        usize::try_from(self.size).unwrap_or(usize::MAX)
    }

    /// The GPU that holds the memory.
    pub fn gpu(&self) -> Uuid {
        Uuid(self.uuid)
    }

    /// The handle as bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        Writer::new(MEM_MAGIC)
            .put(8, &self.uuid)
            .put(24, &self.size.to_le_bytes())
            .put(32, &self.handle)
            .finish()
    }

    /// A handle from its bytes; bytes that are none are [`Error::InvalidArgument`].
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcMemHandle> {
        let form = Reader::new(bytes, MEM_MAGIC, Self::BYTES, "legacy IPC memory handle")?;
        Ok(IpcMemHandle {
            uuid: form.field(8),
            size: u64::from_le_bytes(form.field(24)),
            handle: form.field(32),
        })
    }

    /// Opens the memory in this process (`cuIpcOpenMemHandle`), in the primary context of
    /// `stream`'s device, which must be the GPU that holds it: a [`Buffer`] over it, closed
    /// (`cuIpcCloseMemHandle`, after the work queued on `stream`) when dropped. The driver
    /// counts opens of one handle in a process: each buffer closes its own. A size larger than
    /// the allocation is [`Error::InvalidArgument`].
    ///
    /// # Safety
    ///
    /// The exporting process must keep the memory allocated until every process that opened
    /// it has closed it: the driver makes freeing it first undefined behaviour.
    #[doc(alias = "cuIpcOpenMemHandle")]
    pub unsafe fn open(&self, stream: &Stream) -> Result<Buffer> {
        let device = stream.device();
        let own = device.uuid()?;
        if own.0 != self.uuid {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "the memory is on GPU {}, and the stream's device {} is GPU {own}; open it \
                     with a stream of the GPU that holds it",
                    Uuid(self.uuid),
                    device.ordinal()
                ),
            });
        }
        check_request(self.size(), stream, None)?;
        let context = device.primary_context()?;
        let ptr = context.with_current(|driver| driver.ipc_open_mem_handle(&self.handle))?;
        let checked = context
            .with_current(|driver| driver.ipc_pointer_range(ptr))
            .and_then(|PointerRange { start, bytes, .. }| {
                if ptr >= start
                    && ptr.saturating_add(self.size) <= start.saturating_add(bytes as u64)
                {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument {
                        name: "self",
                        reason: format!(
                            "its size, {} bytes, exceeds the allocation it names ({bytes} bytes)",
                            self.size
                        ),
                    })
                }
            });
        if let Err(e) = checked {
            if let Err(close) = context.with_current(|driver| driver.ipc_close_mem_handle(ptr)) {
                log::error!("closing a refused IPC memory handle: {close}");
            }
            return Err(e);
        }
        let resource: Arc<dyn MemoryResource> = Arc::new(OpenedIpcMemory { context });
        Ok(Buffer::new(
            ptr,
            self.size(),
            Held::counted(resource),
            stream.clone(),
        ))
    }
}

impl crate::memory::SyncMemoryResource {
    /// Exports `buffer`, one of this resource's (`cuMemAlloc` memory), for another process
    /// (`cuIpcGetMemHandle`), which opens it with [`IpcMemHandle::open`]. A buffer of another
    /// resource is [`Error::InvalidArgument`].
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions, memory::SyncMemoryResource};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let memory = SyncMemoryResource::new(device)?;
    /// let buffer = memory.allocate(4096, &stream)?;
    /// // SAFETY: `buffer` lives until the other process says it closed its mapping.
    /// let bytes = unsafe { memory.export_buffer(&buffer) }?.to_bytes();
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// `buffer` must stay allocated (not dropped or closed) until every process that opened
    /// the handle has closed it: the driver makes freeing it first undefined behaviour.
    #[doc(alias = "cuIpcGetMemHandle")]
    pub unsafe fn export_buffer(&self, buffer: &Buffer) -> Result<IpcMemHandle> {
        if !allocated_by(buffer, self) {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "it was allocated by {:?}, not by this resource",
                    buffer.memory_resource()
                ),
            });
        }
        let Some(device) = self.device() else {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the resource has no device".to_owned(),
            });
        };
        let handle = device
            .primary_context()?
            .with_current(|driver| driver.ipc_get_mem_handle(buffer.ptr().0))?;
        Ok(IpcMemHandle::new(device.uuid()?, buffer.size(), handle))
    }
}

/// The resource of a buffer opened from an [`IpcMemHandle`]: it closes, never allocates.
struct OpenedIpcMemory {
    context: Context,
}

impl fmt::Debug for OpenedIpcMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OpenedIpcMemory(device {})",
            self.context.device().ordinal()
        )
    }
}

// SAFETY: it allocates nothing; its one buffer is the driver's mapping for this process,
// checked against the allocation's extent, closed once, after the work queued on its stream
// (the exporter keeping it allocated is `IpcMemHandle::open`'s contract).
unsafe impl MemoryResource for OpenedIpcMemory {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "memory opened from an IPC handle is another process's; it allocates \
                     nothing"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.sync_for_host()?;
        self.context.with_current(|driver| {
            crate::order::relaxed(driver, || driver.ipc_close_mem_handle(ptr.0))
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_handle_survives_its_bytes() {
        let handle = IpcMemHandle::new(Uuid([9; 16]), 4096, std::array::from_fn(|i| 200 - i as u8));
        let back = IpcMemHandle::from_bytes(&handle.to_bytes()).unwrap();
        assert_eq!(back, handle);
        assert_eq!(back.size(), 4096);
        assert_eq!(back.gpu(), Uuid([9; 16]));
        let mut bad = handle.to_bytes();
        bad[4] = 0;
        assert!(IpcMemHandle::from_bytes(&bad)
            .unwrap_err()
            .to_string()
            .contains("version 0"));
    }
}
