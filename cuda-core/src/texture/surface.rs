//! Surface objects (`cuSurfObjectCreate`).

use std::fmt;
use std::sync::Arc;

use super::array::Array;
use super::settle;
use crate::error::{Error, Result};

/// The surface object, destroyed (after its array's home stream's work) when the last clone
/// drops.
struct Object {
    handle: u64,
    array: Arc<Array>,
}

impl Drop for Object {
    fn drop(&mut self) {
        let home = self.array.home_stream();
        if !settle(home, home.context(), "a surface object") {
            return;
        }
        let handle = self.handle;
        if let Err(e) = home
            .context()
            .with_current(|driver| driver.surf_object_destroy(handle))
        {
            log::error!("destroying a surface object: {e}");
        }
    }
}

/// A surface object (`CUsurfObject`) over an [`Array`] made with
/// [`ArrayOptions::surface`](super::ArrayOptions::surface) (refused before the driver
/// otherwise), which it keeps alive. Cheap to clone.
///
/// A kernel argument: the kernel takes a `cudaSurfaceObject_t` (64 bits) and reads and writes
/// the array with `surf2Dwrite`, `surf2Dread`, ... (or the `sust` and `suld` PTX
/// instructions; their x coordinate is in bytes). Ordered in launches as its array's home
/// stream's buffer would be; a graph's kernel node keeps it alive.
#[derive(Clone)]
#[repr(C)]
#[doc(alias = "CUsurfObject")]
pub struct Surface {
    /// First: the argument's bytes.
    handle: u64,
    object: Arc<Object>,
}

impl fmt::Debug for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Surface")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("array", &self.object.array)
            .finish()
    }
}

impl Surface {
    /// A surface over `array` (`cuSurfObjectCreate`), in its context.
    #[doc(alias = "cuSurfObjectCreate")]
    pub fn new(array: &Arc<Array>) -> Result<Surface> {
        if !array.options().surface {
            return Err(Error::InvalidArgument {
                name: "array",
                reason: "the array was made without surface access: make it with \
                         ArrayOptions::surface (CUDA_ARRAY3D_SURFACE_LDST)"
                    .to_owned(),
            });
        }
        let handle = array
            .home_stream()
            .context()
            .with_current(|driver| driver.surf_object_create(array.handle()))?;
        Ok(Surface {
            handle,
            object: Arc::new(Object {
                handle,
                array: array.clone(),
            }),
        })
    }

    /// The array it writes.
    pub fn array(&self) -> &Arc<Array> {
        &self.object.array
    }

    /// The raw `CUsurfObject`, valid while this surface (or a clone) lives.
    pub fn as_raw(&self) -> u64 {
        self.handle
    }
}

crate::args::wrapper_arg!(Surface);
impl crate::args::GraphArg for Surface {}

impl crate::args::sealed::Arg for Surface {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (&self.handle as *const u64).cast(),
            size: std::mem::size_of::<u64>(),
            home: Some(self.object.array.home_stream()),
        }
    }

    fn keep(&self) -> Option<Box<dyn Send>> {
        Some(Box::new(self.clone()))
    }
}
