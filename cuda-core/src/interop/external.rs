//! [`ExternalMemory`]: another API's allocation, imported, and buffers over it.

use std::fmt;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use crate::context::Context;
use crate::device::Device;
use crate::driver::{ExternalMemoryHandle, EXTERNAL_MEMORY_OPAQUE_FD};
use crate::error::{Error, Result};
use crate::memory::foreign::{buffer_over, Kept};
use crate::memory::Buffer;
use crate::order::relaxed;
use crate::stream::Stream;

/// The imported memory, destroyed once the value and every buffer over it are gone.
struct Imported {
    handle: ExternalMemoryHandle,
    context: Context,
    device: Device,
    size: u64,
    /// The byte ranges (start, end) that live buffers cover: disjoint, so that no two buffers
    /// (each writable through `&mut`) share a byte.
    covered: Mutex<Vec<(u64, u64)>>,
}

impl Imported {
    fn covered(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        self.covered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Imported {
    fn drop(&mut self) {
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|driver| relaxed(driver, || driver.destroy_external_memory(handle)))
        {
            log::error!("destroying imported external memory: {e}");
        }
    }
}

/// Memory another API allocated and exported (Vulkan's `vkGetMemoryFdKHR` with an opaque file
/// descriptor, for one), imported into CUDA (`cuImportExternalMemory`) in the primary context
/// of a device.
///
/// [`ExternalMemory::buffer`] makes a [`Buffer`] over a range of it: no copy, the same bytes
/// the other API reads and writes. The import is released (`cuDestroyExternalMemory`) once
/// this value and every buffer made from it are gone; each buffer's own mapping is freed when
/// the buffer is, after its stream's work. Clones share one import.
#[doc(alias = "CUexternalMemory")]
#[derive(Clone)]
pub struct ExternalMemory {
    imported: Arc<Imported>,
}

impl fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("device", &self.imported.device.ordinal())
            .field("size", &self.imported.size)
            .finish()
    }
}

impl ExternalMemory {
    /// Imports `size` bytes of memory that another API exported as an opaque file descriptor
    /// (`CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`: Vulkan's
    /// `VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT`) into `device`'s primary context.
    /// `dedicated` says that the other API made it a dedicated allocation (Vulkan's
    /// `VkMemoryDedicatedAllocateInfo`), which the import must repeat
    /// (`CUDA_EXTERNAL_MEMORY_DEDICATED`).
    ///
    /// On success the driver owns `fd` (it closes it when the import is released); on an error
    /// `fd` is closed here. A zero `size` is refused.
    ///
    /// # Safety
    ///
    /// `fd` is an opaque file descriptor of a memory object exported for `device`'s GPU, whose
    /// size is `size` (Vulkan's `VkMemoryAllocateInfo::allocationSize`), and which stays
    /// allocated by the other API at least until its export is imported (the import holds it
    /// from then on). While a buffer over it lives, the other API's accesses to that memory
    /// are ordered with the crate's work on the buffer (through an [`ExternalSemaphore`]
    /// waited and signalled in stream order, or by waiting for one side before the other
    /// starts): the crate cannot see them. The same holds for another import of the same
    /// memory (of a duplicate of `fd`, or in another process): the crate keeps the buffers of
    /// one import disjoint, not those of two.
    ///
    /// [`ExternalSemaphore`]: super::ExternalSemaphore
    #[doc(alias = "cuImportExternalMemory")]
    pub unsafe fn import_fd(
        device: Device,
        fd: OwnedFd,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemory> {
        if size == 0 {
            return Err(Error::InvalidArgument {
                name: "size",
                reason: "external memory of 0 bytes".to_owned(),
            });
        }
        let context = device.primary_context()?;
        let raw = fd.as_raw_fd();
        let handle = context.with_current(|driver| {
            relaxed(driver, || {
                driver.import_external_memory(EXTERNAL_MEMORY_OPAQUE_FD, raw, size, dedicated)
            })
        })?;
        // The driver owns the descriptor now: it must not be closed here.
        let _owned_by_driver = fd.into_raw_fd();
        Ok(ExternalMemory {
            imported: Arc::new(Imported {
                handle,
                context,
                device,
                size,
                covered: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The size of the imported memory, in bytes.
    pub fn size(&self) -> u64 {
        self.imported.size
    }

    /// The device it was imported into.
    pub fn device(&self) -> Device {
        self.imported.device
    }

    /// A buffer over `len` bytes of the memory from `offset` (`cuExternalMemoryGetMappedBuffer`),
    /// freed on `stream` (which must be of the device's primary context) like any buffer: its
    /// mapping is freed (`cuMemFree`) once the buffer is dropped and the stream's work is done.
    /// The buffer keeps the import alive. Buffers over one import are disjoint, as a buffer is
    /// written through `&mut` in its own stream order: a range that overlaps a live buffer's
    /// is refused until that buffer is dropped (share one buffer instead, as
    /// `Arc<Buffer>`, or take [slices](Buffer::slice) of it).
    ///
    /// An empty range, one past the memory's end, or one overlapping a live buffer's is refused
    /// ([`Error::InvalidArgument`]).
    #[doc(alias = "cuExternalMemoryGetMappedBuffer")]
    pub fn buffer(&self, offset: u64, len: usize, stream: &Stream) -> Result<Buffer> {
        let imported = &self.imported;
        super::check_stream(
            stream,
            imported.device,
            &imported.context,
            "the external memory",
        )?;
        let end = offset.checked_add(len as u64);
        if len == 0 || end.is_none_or(|end| end > imported.size) {
            return Err(Error::InvalidArgument {
                name: "len",
                reason: format!(
                    "{len} bytes from offset {offset} of external memory of {} bytes: empty, \
                     or past its end",
                    imported.size
                ),
            });
        }
        let range = (offset, offset + len as u64);
        let mut covered = imported.covered();
        if let Some(&(start, end)) = covered
            .iter()
            .find(|&&(start, end)| start < range.1 && range.0 < end)
        {
            return Err(Error::InvalidArgument {
                name: "offset",
                reason: format!(
                    "bytes {}..{} overlap bytes {start}..{end}, which a live buffer over this \
                     external memory covers; drop that buffer first, or share it",
                    range.0, range.1
                ),
            });
        }
        let handle = imported.handle;
        let ptr = imported.context.with_current(|driver| {
            relaxed(driver, || {
                driver.external_memory_buffer(handle, offset, len as u64)
            })
        })?;
        covered.push(range);
        drop(covered);
        let kept = Box::new(Mapped {
            ptr,
            range,
            imported: self.imported.clone(),
        });
        Ok(buffer_over(ptr, len, imported.device, kept, stream))
    }
}

/// A buffer's mapping of the memory, and the import it keeps alive.
struct Mapped {
    ptr: u64,
    /// The bytes it covers, free for another buffer once it is released.
    range: (u64, u64),
    imported: Arc<Imported>,
}

impl Kept for Mapped {
    fn release(self: Box<Self>) -> Result<()> {
        let ptr = self.ptr;
        self.imported
            .context
            .with_current(|driver| relaxed(driver, || driver.mem_free(ptr)))?;
        // Freed: its bytes may be covered again (where the free failed they stay covered).
        let mut covered = self.imported.covered();
        if let Some(at) = covered.iter().position(|&r| r == self.range) {
            covered.swap_remove(at);
        }
        Ok(())
    }
}
