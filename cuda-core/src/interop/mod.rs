//! Sharing memory and synchronisation with other GPU APIs: memory and semaphores that Vulkan
//! (or another API exporting opaque file descriptors) made, and OpenGL buffers and textures
//! registered with CUDA.
//!
//! - [`ExternalMemory`] imports another API's allocation (`cuImportExternalMemory`); its
//!   [`buffer`](ExternalMemory::buffer)s are [`Buffer`](crate::Buffer)s over that memory, with
//!   no copy, usable wherever a buffer is: copies, fills, kernel arguments, graph nodes.
//! - [`ExternalSemaphore`] imports another API's binary or timeline semaphore
//!   (`cuImportExternalSemaphore`); [`Stream::signal_semaphore`](crate::Stream::signal_semaphore)
//!   and [`Stream::wait_semaphore`](crate::Stream::wait_semaphore) put its signals and waits
//!   in a stream's order, so that the other API's work on the shared memory and the crate's
//!   run one after the other with no host synchronisation.
//! - [`GlBuffer`] and [`GlImage`] register OpenGL objects (`cuGraphicsGLRegisterBuffer`,
//!   `cuGraphicsGLRegisterImage`); mapping one on a stream gives a `Buffer` or an
//!   [`Array`](crate::texture::Array) over it until that is dropped, which unmaps it.
//!
//! Importing is `unsafe`: the crate cannot see what the file descriptor is nor what the other
//! API does with the memory, so the caller vouches for both (each function's Safety section
//! says what). Once imported, every use is safe and in stream order.
//!
//! ```no_run
//! use std::os::fd::OwnedFd;
//! use cuda_core::interop::{ExternalMemory, ExternalSemaphore, SemaphoreKind};
//! use cuda_core::{Device, StreamOptions};
//!
//! # fn vulkan_exports() -> (OwnedFd, u64, OwnedFd) { unimplemented!() }
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! // From Vulkan: vkGetMemoryFdKHR and vkGetSemaphoreFdKHR (opaque file descriptors) of an
//! // allocation of `bytes` bytes and of a timeline semaphore.
//! let (memory_fd, bytes, semaphore_fd) = vulkan_exports();
//! // SAFETY: the descriptors are those two objects, of device 0's GPU; Vulkan touches the
//! // memory only between the semaphore's waits and signals below.
//! let memory = unsafe { ExternalMemory::import_fd(device, memory_fd, bytes, true)? };
//! let timeline = unsafe { ExternalSemaphore::import_fd(device, semaphore_fd, SemaphoreKind::Timeline)? };
//! let mut shared = memory.buffer(0, bytes as usize, &stream)?;
//! stream.wait_semaphore(&timeline, 1)?; // Vulkan's writes are done
//! shared.fill(0u32, &stream)?; // then CUDA's work...
//! stream.signal_semaphore(&timeline, 2)?; // ...which Vulkan waits for
//! # Ok::<(), cuda_core::Error>(())
//! ```

mod external;
mod gl;
mod semaphore;

pub use external::ExternalMemory;
pub use gl::{GlBuffer, GlImage, GlRegisterFlags};
pub use semaphore::{ExternalSemaphore, SemaphoreKind};

use crate::device::Device;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// Refuses a stream of another context than the one the object was imported into.
fn check_stream(
    stream: &Stream,
    device: Device,
    context: &crate::context::Context,
    what: &str,
) -> Result<()> {
    if stream.driver_and_context().1 == context.handle() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "stream",
        reason: format!(
            "{what} was imported into the primary context of device {}; the stream is of \
             another context (of device {}): use a stream of that primary context",
            device.ordinal(),
            stream.device().ordinal()
        ),
    })
}
