//! OpenGL buffers and images registered with CUDA ([`GlBuffer`], [`GlImage`]), mapped on a
//! stream as a [`Buffer`] or an [`Array`].

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::context::Context;
use crate::device::Device;
use crate::driver::GraphicsHandle;
use crate::error::{Error, Result};
use crate::memory::foreign::{buffer_over, Kept};
use crate::memory::Buffer;
use crate::order::relaxed;
use crate::stream::Stream;
use crate::texture::Array;

bitflags::bitflags! {
    /// How CUDA will use a registered OpenGL object (`CUgraphicsRegisterFlags`).
    #[doc(alias = "CUgraphicsRegisterFlags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct GlRegisterFlags: u32 {
        /// CUDA only reads it (`CU_GRAPHICS_REGISTER_FLAGS_READ_ONLY`).
        const READ_ONLY = 0x1;
        /// CUDA only writes it, and need not keep its contents
        /// (`CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD`).
        const WRITE_DISCARD = 0x2;
        /// Surfaces may write the mapped image (`CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST`).
        const SURFACE_LDST = 0x4;
        /// Texture gather on the mapped image (`CU_GRAPHICS_REGISTER_FLAGS_TEXTURE_GATHER`).
        const TEXTURE_GATHER = 0x8;
    }
}

/// A registration, unregistered once its value and its mapping are gone.
struct Registered {
    handle: GraphicsHandle,
    context: Context,
    device: Device,
    /// Whether a mapping of it lives (one at a time).
    mapped: AtomicBool,
    what: &'static str,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|driver| relaxed(driver, || driver.graphics_unregister(handle)))
        {
            log::error!("unregistering an OpenGL {}: {e}", self.what);
        }
    }
}

impl Registered {
    /// Registers with `register` in `device`'s primary context.
    fn new(
        device: Device,
        what: &'static str,
        register: impl FnOnce(&'static dyn crate::driver::Driver) -> Result<GraphicsHandle>,
    ) -> Result<Arc<Registered>> {
        let context = device.primary_context()?;
        let handle = context.with_current(|driver| relaxed(driver, || register(driver)))?;
        Ok(Arc::new(Registered {
            handle,
            context,
            device,
            mapped: AtomicBool::new(false),
            what,
        }))
    }

    /// Maps it on `stream` (`cuGraphicsMapResources`), as the one mapping, and runs `view`
    /// on it; an error unmaps it again.
    fn map<T>(
        self: &Arc<Self>,
        stream: &Stream,
        view: impl FnOnce(&'static dyn crate::driver::Driver, Unmap) -> Result<T>,
    ) -> Result<T> {
        super::check_stream(stream, self.device, &self.context, self.what)?;
        if stream.capturing() {
            return Err(Error::Capture {
                reason: format!(
                    "the stream captures: mapping an OpenGL {} is not stream work a graph can \
                     repeat; map it on a stream that does not capture",
                    self.what
                ),
            });
        }
        if self.mapped.swap(true, Ordering::AcqRel) {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!(
                    "the OpenGL {} is mapped already: drop what its mapping gave first",
                    self.what
                ),
            });
        }
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|_| stream.queue(|driver, stream| driver.graphics_map(handle, stream)))
        {
            self.mapped.store(false, Ordering::Release);
            return Err(e);
        }
        let unmap = Unmap {
            registered: self.clone(),
            stream: stream.clone(),
        };
        // An error drops `unmap`, which unmaps.
        self.context.with_current(|driver| view(driver, unmap))
    }
}

/// Unmaps a registration on the stream it was mapped on when dropped
/// (`cuGraphicsUnmapResources`), then lets it be mapped again.
struct Unmap {
    registered: Arc<Registered>,
    stream: Stream,
}

impl Drop for Unmap {
    fn drop(&mut self) {
        let handle = self.registered.handle;
        let stream = &self.stream;
        let unmapped = self
            .registered
            .context
            .with_current(|_| stream.queue(|driver, stream| driver.graphics_unmap(handle, stream)));
        match unmapped {
            Ok(()) => self.registered.mapped.store(false, Ordering::Release),
            Err(e) => log::error!("unmapping an OpenGL {}: {e}", self.registered.what),
        }
    }
}

impl Kept for Unmap {
    fn release(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

/// An OpenGL buffer object registered with CUDA (`cuGraphicsGLRegisterBuffer`).
///
/// [`GlBuffer::map`] maps it on a stream (`cuGraphicsMapResources`) and gives a [`Buffer`]
/// over its bytes; dropping that buffer unmaps it (`cuGraphicsUnmapResources`, on the same
/// stream, once its work is done), after which OpenGL may use the buffer object again. One
/// mapping at a time. The registration ends (`cuGraphicsUnregisterResource`) when this value
/// and its mapping are gone.
#[doc(alias = "CUgraphicsResource")]
pub struct GlBuffer {
    registered: Arc<Registered>,
}

impl fmt::Debug for GlBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlBuffer")
            .field("device", &self.registered.device.ordinal())
            .field("mapped", &self.registered.mapped.load(Ordering::Relaxed))
            .finish()
    }
}

impl GlBuffer {
    /// Registers the OpenGL buffer object named `buffer` with `device`'s primary context.
    ///
    /// # Safety
    ///
    /// The calling thread has a current OpenGL context, on `device`'s GPU, in which `buffer`
    /// names a buffer object with storage; that OpenGL context lives until this registration
    /// and its mapping are dropped. While a mapping lives, OpenGL does not use the buffer
    /// object (OpenGL's use of a mapped object is undefined).
    #[doc(alias = "cuGraphicsGLRegisterBuffer")]
    pub unsafe fn register(
        device: Device,
        buffer: u32,
        flags: GlRegisterFlags,
    ) -> Result<GlBuffer> {
        let registered = Registered::new(device, "buffer", |driver| {
            driver.graphics_gl_register_buffer(buffer, flags.bits())
        })?;
        Ok(GlBuffer { registered })
    }

    /// Maps it on `stream` (of the device's primary context) and gives a buffer over its
    /// bytes (`cuGraphicsResourceGetMappedPointer`), ordered after OpenGL's work issued
    /// before. Dropping the buffer unmaps it. Refused ([`Error::Capture`]) on a stream that
    /// captures, and ([`Error::InvalidArgument`]) while another mapping of it lives.
    #[doc(alias("cuGraphicsMapResources", "cuGraphicsResourceGetMappedPointer"))]
    pub fn map(&self, stream: &Stream) -> Result<Buffer> {
        let device = self.registered.device;
        self.registered.map(stream, |driver, unmap| {
            let (ptr, size) = driver.graphics_mapped_pointer(unmap.registered.handle)?;
            if ptr == 0 || size == 0 {
                return Err(Error::InvalidArgument {
                    name: "self",
                    reason: "the mapped OpenGL buffer has no storage (0 bytes)".to_owned(),
                });
            }
            Ok(buffer_over(ptr, size, device, Box::new(unmap), stream))
        })
    }
}

/// An OpenGL texture or renderbuffer registered with CUDA (`cuGraphicsGLRegisterImage`).
///
/// [`GlImage::map`] maps it on a stream and gives an [`Array`] over one of its layers and
/// mipmap levels (`cuGraphicsSubResourceGetMappedArray`), which copies and (with
/// [`GlRegisterFlags::SURFACE_LDST`]) surfaces take as any array; dropping the array unmaps
/// the image. One mapping at a time.
#[doc(alias = "CUgraphicsResource")]
pub struct GlImage {
    registered: Arc<Registered>,
}

impl fmt::Debug for GlImage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlImage")
            .field("device", &self.registered.device.ordinal())
            .field("mapped", &self.registered.mapped.load(Ordering::Relaxed))
            .finish()
    }
}

impl GlImage {
    /// Registers the OpenGL image named `image` of `target` (`GL_TEXTURE_2D`, `GL_RENDERBUFFER`,
    /// ...) with `device`'s primary context.
    ///
    /// # Safety
    ///
    /// As for [`GlBuffer::register`], with `image` a texture or renderbuffer of `target` in the
    /// current OpenGL context, with storage, of a format CUDA can map.
    #[doc(alias = "cuGraphicsGLRegisterImage")]
    pub unsafe fn register(
        device: Device,
        image: u32,
        target: u32,
        flags: GlRegisterFlags,
    ) -> Result<GlImage> {
        let registered = Registered::new(device, "image", |driver| {
            driver.graphics_gl_register_image(image, target, flags.bits())
        })?;
        Ok(GlImage { registered })
    }

    /// Maps it on `stream` and gives the array of layer (or cubemap face) `index` at mipmap
    /// level `level`, as the driver describes it. Dropping the array unmaps the image. Refused
    /// as [`GlBuffer::map`] is.
    #[doc(alias("cuGraphicsMapResources", "cuGraphicsSubResourceGetMappedArray"))]
    pub fn map(&self, stream: &Stream, index: u32, level: u32) -> Result<Array> {
        self.registered.map(stream, |driver, unmap| {
            let array = driver.graphics_mapped_array(unmap.registered.handle, index, level)?;
            Array::mapped(array, stream, Box::new(unmap))
        })
    }
}
