//! CUDA arrays, mipmapped arrays, copies to and from them (`cuMemcpy3DAsync`), texture objects
//! and surface objects.

use std::ffi::c_void;

use crate::driver::handles::{DevicePtr, StreamHandle};
use crate::error::Result;

/// A `CUarray`. (Kept here rather than among the shared handles: only this area uses it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct ArrayHandle(pub(crate) *mut c_void);

/// A `CUmipmappedArray`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct MipmappedArrayHandle(pub(crate) *mut c_void);

// SAFETY: driver handles are plain identifiers that the driver allows any thread to use.
unsafe impl Send for ArrayHandle {}
// SAFETY: as above; the driver synchronises its own state.
unsafe impl Sync for ArrayHandle {}
// SAFETY: as for `ArrayHandle`.
unsafe impl Send for MipmappedArrayHandle {}
// SAFETY: as for `ArrayHandle`.
unsafe impl Sync for MipmappedArrayHandle {}

/// A `CUDA_ARRAY3D_DESCRIPTOR`, by its fields' values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct ArraySpec {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
    /// `CUarray_format`.
    pub(crate) format: u32,
    pub(crate) channels: u32,
    /// `CUDA_ARRAY3D_*` flags.
    pub(crate) flags: u32,
}

/// Where one side of a copy is (`CUDA_MEMCPY3D`'s `src*` or `dst*` fields).
#[derive(Clone, Copy, Debug)]
pub(crate) enum CopyEnd {
    /// Host memory: read for a source, written for a destination.
    Host(*mut c_void),
    /// Device (or unified) memory.
    Device(DevicePtr),
    /// A CUDA array, from an element offset (`x` in bytes).
    Array(ArrayHandle),
}

/// One side of a copy: where, the offset into it (`x` in bytes, `y` rows, `z` slices), and for
/// linear memory its row pitch and rows per slice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopySide {
    pub(crate) end: CopyEnd,
    pub(crate) x_bytes: usize,
    pub(crate) y: usize,
    pub(crate) z: usize,
    pub(crate) pitch: usize,
    pub(crate) height: usize,
}

/// A `CUDA_MEMCPY3D`: `width_bytes` by `height` rows by `depth` slices.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Copy3dSpec {
    pub(crate) src: CopySide,
    pub(crate) dst: CopySide,
    pub(crate) width_bytes: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

/// A `CUDA_RESOURCE_DESC`: what a texture or surface object reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ResourceSpec {
    Array(ArrayHandle),
    Mipmapped(MipmappedArrayHandle),
    /// `format` is a `CUarray_format`.
    Linear {
        ptr: DevicePtr,
        format: u32,
        channels: u32,
        bytes: usize,
    },
    Pitch2d {
        ptr: DevicePtr,
        format: u32,
        channels: u32,
        width: usize,
        height: usize,
        pitch: usize,
    },
}

/// A `CUDA_TEXTURE_DESC`, by the enums' codes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct TextureSpec {
    /// `CUaddress_mode` per dimension.
    pub(crate) address: [u32; 3],
    /// `CUfilter_mode`.
    pub(crate) filter: u32,
    /// `CU_TRSF_*` flags.
    pub(crate) flags: u32,
    pub(crate) max_anisotropy: u32,
    pub(crate) mipmap_filter: u32,
    pub(crate) mipmap_level_bias: f32,
    pub(crate) min_mipmap_level_clamp: f32,
    pub(crate) max_mipmap_level_clamp: f32,
    pub(crate) border_color: [f32; 4],
}

/// Arrays, their copies, textures and surfaces.
pub(crate) trait TextureApi {
    /// `cuArray3DCreate` in the current context.
    fn array_create(&self, spec: &ArraySpec) -> Result<ArrayHandle>;
    /// `cuArray3DGetDescriptor`.
    fn array_get_descriptor(&self, array: ArrayHandle) -> Result<ArraySpec>;
    /// `cuArrayDestroy`.
    fn array_destroy(&self, array: ArrayHandle) -> Result<()>;
    /// `cuMipmappedArrayCreate` in the current context.
    fn mipmapped_array_create(&self, spec: &ArraySpec, levels: u32)
        -> Result<MipmappedArrayHandle>;
    /// `cuMipmappedArrayGetLevel`: an array owned by the mipmapped array.
    fn mipmapped_array_get_level(
        &self,
        array: MipmappedArrayHandle,
        level: u32,
    ) -> Result<ArrayHandle>;
    /// `cuMipmappedArrayDestroy`.
    fn mipmapped_array_destroy(&self, array: MipmappedArrayHandle) -> Result<()>;
    /// `cuMemcpy3DAsync`.
    ///
    /// # Safety
    ///
    /// Host memory named by the copy stays valid (and, for a destination, unread) until the
    /// copy is done; device memory and arrays are valid for the whole region.
    unsafe fn array_memcpy_3d_async(&self, copy: &Copy3dSpec, stream: StreamHandle) -> Result<()>;
    /// `cuTexObjectCreate` in the current context, without a resource view.
    fn tex_object_create(&self, resource: &ResourceSpec, texture: &TextureSpec) -> Result<u64>;
    /// `cuTexObjectDestroy`.
    fn tex_object_destroy(&self, texture: u64) -> Result<()>;
    /// `cuSurfObjectCreate` over an array, in the current context.
    fn surf_object_create(&self, array: ArrayHandle) -> Result<u64>;
    /// `cuSurfObjectDestroy`.
    fn surf_object_destroy(&self, surface: u64) -> Result<()>;
}
