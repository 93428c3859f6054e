//! CUDA arrays, and the texture and surface objects that kernels read and write them through.
//!
//! | type | what it is | made by |
//! | --- | --- | --- |
//! | [`Array`] | a CUDA array: 1D, 2D, 3D, layered or cubemap, laid out for texture hardware | `cuArray3DCreate` |
//! | [`MipmappedArray`] | a chain of arrays of halving sizes; [`MipmappedArray::level`] gives each | `cuMipmappedArrayCreate` |
//! | [`Texture`] | a texture object over an array, a mipmapped array, or linear or pitched memory | `cuTexObjectCreate` |
//! | [`Surface`] | a surface object over an array made with [`ArrayOptions::surface`] | `cuSurfObjectCreate` |
//!
//! Arrays are copied to and from host slices, [`Buffer`](crate::Buffer)s and other arrays,
//! whole or by [`ArrayRegion`], in order on a stream (`cuMemcpy3DAsync`); every region and
//! linear layout is checked against both sides first.
//!
//! Each object owns what it views: a texture holds its array or buffer, a surface its array,
//! a mipmap level its mipmapped array. Textures and surfaces are kernel arguments (their 64-bit
//! `cudaTextureObject_t` / `cudaSurfaceObject_t` handle), kept in stream order the way buffers
//! are: each has a home stream (its array's, or its buffer's deallocation stream); a launch on
//! another stream orders itself after the home's work so far and the home after the launch,
//! and dropping the object (or the array) first waits for its home stream, so that no kernel
//! still queued can use it once destroyed. A graph's kernel node keeps them alive. (Dropped
//! while its home stream captures a graph, an object is leaked, and the log says so: the
//! capture's launches may still use it.)
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_core::{Device, StreamOptions};
//! use cuda_core::texture::{Array, ArrayFormat, ArrayOptions, FilterMode, Texture, TextureOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut image = Array::new(&stream, &ArrayOptions::two_d(ArrayFormat::F32, 64, 32))?;
//! // Written before it is shared: copies into an array take it by `&mut`.
//! image.copy_from_host(&vec![0.5f32; 64 * 32], &stream)?;
//! let image = Arc::new(image);
//! let texture = Texture::from_array(&image, &TextureOptions::default().with_filter(FilterMode::Linear))?;
//! // `&texture` is a kernel argument: `__global__ void k(cudaTextureObject_t t)`.
//! # let _ = texture;
//! # Ok::<(), cuda_core::Error>(())
//! ```

mod array;
mod copy;
mod object;
mod surface;

pub use array::{Array, ArrayKind, ArrayOptions, MipmappedArray};
pub use copy::{ArrayRegion, LinearLayout};
pub use object::{AddressMode, FilterMode, ReadMode, Texture, TextureLinear, TextureOptions};
pub use surface::Surface;

use crate::context::Context;
use crate::error::Result;
use crate::stream::Stream;

/// The type of each channel of an array's elements (`CUarray_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUarray_format")]
pub enum ArrayFormat {
    /// `u8` (`CU_AD_FORMAT_UNSIGNED_INT8`).
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `i8` (`CU_AD_FORMAT_SIGNED_INT8`).
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// IEEE half precision (`CU_AD_FORMAT_HALF`).
    F16,
    /// `f32` (`CU_AD_FORMAT_FLOAT`, the default).
    #[default]
    F32,
}

impl ArrayFormat {
    /// The driver's `CUarray_format` code.
    pub(crate) fn code(self) -> u32 {
        match self {
            ArrayFormat::U8 => 0x01,
            ArrayFormat::U16 => 0x02,
            ArrayFormat::U32 => 0x03,
            ArrayFormat::I8 => 0x08,
            ArrayFormat::I16 => 0x09,
            ArrayFormat::I32 => 0x0a,
            ArrayFormat::F16 => 0x10,
            ArrayFormat::F32 => 0x20,
        }
    }

    /// The format of a `CUarray_format` code, where it is one of these.
    pub(crate) fn from_code(code: u32) -> Option<ArrayFormat> {
        [
            ArrayFormat::U8,
            ArrayFormat::U16,
            ArrayFormat::U32,
            ArrayFormat::I8,
            ArrayFormat::I16,
            ArrayFormat::I32,
            ArrayFormat::F16,
            ArrayFormat::F32,
        ]
        .into_iter()
        .find(|f| f.code() == code)
    }

    /// The bytes of one channel.
    pub fn bytes(self) -> usize {
        match self {
            ArrayFormat::U8 | ArrayFormat::I8 => 1,
            ArrayFormat::U16 | ArrayFormat::I16 | ArrayFormat::F16 => 2,
            ArrayFormat::U32 | ArrayFormat::I32 | ArrayFormat::F32 => 4,
        }
    }

    /// Whether the texture hardware returns it as a float without normalising it (half and
    /// float).
    pub(crate) fn is_float(self) -> bool {
        matches!(self, ArrayFormat::F16 | ArrayFormat::F32)
    }

    /// Whether the texture hardware may normalise it to a float (the 8 and 16-bit integers;
    /// 32-bit integers are never promoted).
    pub(crate) fn normalizes(self) -> bool {
        matches!(
            self,
            ArrayFormat::U8 | ArrayFormat::U16 | ArrayFormat::I8 | ArrayFormat::I16
        )
    }
}

/// Refuses a channel count other than 1, 2 or 4.
pub(crate) fn check_channels(channels: u32, name: &'static str) -> Result<()> {
    if matches!(channels, 1 | 2 | 4) {
        Ok(())
    } else {
        Err(crate::Error::InvalidArgument {
            name,
            reason: format!("{channels} channels; an element has 1, 2 or 4"),
        })
    }
}

/// Before an object that kernels may use is destroyed: waits for its home stream, where the
/// launches that used it are ordered, or, should that fail (a per-thread default stream used
/// from another thread), for the whole context. `false` when neither wait worked, or the home
/// stream is capturing: then the object must not be destroyed (it is leaked, and said so).
pub(crate) fn settle(home: &Stream, context: &Context, what: &str) -> bool {
    if home.capturing() {
        // A synchronisation would break the capture, and the captured work runs later.
        log::error!(
            "{what} is not destroyed (leaked): it was dropped while its home stream captures a \
             graph, whose launches may still use it"
        );
        return false;
    }
    let Err(first) = home.sync() else {
        return true;
    };
    match context.sync() {
        Ok(()) => true,
        Err(e) => {
            log::error!(
                "{what} is not destroyed (leaked): waiting for the work that may use it failed \
                 ({first}; then {e})"
            );
            false
        }
    }
}

#[cfg(test)]
mod tests;
