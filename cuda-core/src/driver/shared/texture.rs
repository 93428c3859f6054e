//! [`TextureApi`](crate::driver::api::TextureApi) for both ABIs: the structures it fills
//! (`CUDA_ARRAY3D_DESCRIPTOR`, `CUDA_MEMCPY3D`, `CUDA_RESOURCE_DESC`, `CUDA_TEXTURE_DESC`) are
//! laid out alike in both headers. Buffers are copied as `CU_MEMORYTYPE_UNIFIED` (any address of
//! the unified space: device, pinned host or managed memory), host slices as
//! `CU_MEMORYTYPE_HOST`.

use super::*;

impl Drv {
    fn array_descriptor(spec: &crate::driver::api::ArraySpec) -> sys::CUDA_ARRAY3D_DESCRIPTOR {
        sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: spec.width,
            Height: spec.height,
            Depth: spec.depth,
            Format: sys::CUarray_format(spec.format),
            NumChannels: spec.channels,
            Flags: spec.flags,
        }
    }

    /// Fills one side of a `CUDA_MEMCPY3D`; `src` picks the `src*` fields.
    fn copy_side(copy: &mut sys::CUDA_MEMCPY3D, side: &crate::driver::api::CopySide, src: bool) {
        use crate::driver::api::CopyEnd;
        use sys::CUmemorytype as Kind;
        let (kind, host, device, array) = match side.end {
            CopyEnd::Host(ptr) => (Kind::CU_MEMORYTYPE_HOST, ptr, 0, std::ptr::null_mut()),
            CopyEnd::Device(ptr) => (
                Kind::CU_MEMORYTYPE_UNIFIED,
                std::ptr::null_mut(),
                ptr,
                std::ptr::null_mut(),
            ),
            CopyEnd::Array(array) => (
                Kind::CU_MEMORYTYPE_ARRAY,
                std::ptr::null_mut(),
                0,
                array.0.cast(),
            ),
        };
        if src {
            copy.srcXInBytes = side.x_bytes;
            copy.srcY = side.y;
            copy.srcZ = side.z;
            copy.srcMemoryType = kind;
            copy.srcHost = host.cast_const();
            copy.srcDevice = device;
            copy.srcArray = array;
            copy.srcPitch = side.pitch;
            copy.srcHeight = side.height;
        } else {
            copy.dstXInBytes = side.x_bytes;
            copy.dstY = side.y;
            copy.dstZ = side.z;
            copy.dstMemoryType = kind;
            copy.dstHost = host;
            copy.dstDevice = device;
            copy.dstArray = array;
            copy.dstPitch = side.pitch;
            copy.dstHeight = side.height;
        }
    }
}

impl crate::driver::api::TextureApi for Drv {
    fn array_create(
        &self,
        spec: &crate::driver::api::ArraySpec,
    ) -> Result<crate::driver::api::ArrayHandle> {
        let descriptor = Self::array_descriptor(spec);
        let mut array = std::ptr::null_mut();
        call!(self.cuArray3DCreate(&mut array, &descriptor))?;
        Ok(crate::driver::api::ArrayHandle(array.cast()))
    }

    fn array_get_descriptor(
        &self,
        array: crate::driver::api::ArrayHandle,
    ) -> Result<crate::driver::api::ArraySpec> {
        let mut d = sys::CUDA_ARRAY3D_DESCRIPTOR::default();
        call!(self.cuArray3DGetDescriptor(&mut d, array.0.cast()))?;
        Ok(crate::driver::api::ArraySpec {
            width: d.Width,
            height: d.Height,
            depth: d.Depth,
            format: d.Format.0,
            channels: d.NumChannels,
            flags: d.Flags,
        })
    }

    fn array_destroy(&self, array: crate::driver::api::ArrayHandle) -> Result<()> {
        call!(self.cuArrayDestroy(array.0.cast()))
    }

    fn mipmapped_array_create(
        &self,
        spec: &crate::driver::api::ArraySpec,
        levels: u32,
    ) -> Result<crate::driver::api::MipmappedArrayHandle> {
        let descriptor = Self::array_descriptor(spec);
        let mut array = std::ptr::null_mut();
        call!(self.cuMipmappedArrayCreate(&mut array, &descriptor, levels))?;
        Ok(crate::driver::api::MipmappedArrayHandle(array.cast()))
    }

    fn mipmapped_array_get_level(
        &self,
        array: crate::driver::api::MipmappedArrayHandle,
        level: u32,
    ) -> Result<crate::driver::api::ArrayHandle> {
        let mut level_array = std::ptr::null_mut();
        call!(self.cuMipmappedArrayGetLevel(&mut level_array, array.0.cast(), level))?;
        Ok(crate::driver::api::ArrayHandle(level_array.cast()))
    }

    fn mipmapped_array_destroy(
        &self,
        array: crate::driver::api::MipmappedArrayHandle,
    ) -> Result<()> {
        call!(self.cuMipmappedArrayDestroy(array.0.cast()))
    }

    unsafe fn array_memcpy_3d_async(
        &self,
        copy: &crate::driver::api::Copy3dSpec,
        stream: StreamHandle,
    ) -> Result<()> {
        let mut raw = sys::CUDA_MEMCPY3D::default();
        Self::copy_side(&mut raw, &copy.src, true);
        Self::copy_side(&mut raw, &copy.dst, false);
        raw.WidthInBytes = copy.width_bytes;
        raw.Height = copy.height;
        raw.Depth = copy.depth;
        call!(self.cuMemcpy3DAsync(&raw, stream.0.cast()))
    }

    fn tex_object_create(
        &self,
        resource: &crate::driver::api::ResourceSpec,
        texture: &crate::driver::api::TextureSpec,
    ) -> Result<u64> {
        let raw_resource = resource_descriptor(resource);
        let mut raw_texture = sys::CUDA_TEXTURE_DESC {
            addressMode: texture.address.map(sys::CUaddress_mode),
            filterMode: sys::CUfilter_mode(texture.filter),
            flags: texture.flags,
            maxAnisotropy: texture.max_anisotropy,
            mipmapFilterMode: sys::CUfilter_mode(texture.mipmap_filter),
            mipmapLevelBias: texture.mipmap_level_bias,
            minMipmapLevelClamp: texture.min_mipmap_level_clamp,
            maxMipmapLevelClamp: texture.max_mipmap_level_clamp,
            ..Default::default()
        };
        raw_texture.borderColor = texture.border_color;
        let mut object = 0;
        call!(self.cuTexObjectCreate(&mut object, &raw_resource, &raw_texture, std::ptr::null()))?;
        Ok(object)
    }

    fn tex_object_destroy(&self, texture: u64) -> Result<()> {
        call!(self.cuTexObjectDestroy(texture))
    }

    fn surf_object_create(&self, array: crate::driver::api::ArrayHandle) -> Result<u64> {
        let resource = resource_descriptor(&crate::driver::api::ResourceSpec::Array(array));
        let mut object = 0;
        call!(self.cuSurfObjectCreate(&mut object, &resource))?;
        Ok(object)
    }

    fn surf_object_destroy(&self, surface: u64) -> Result<()> {
        call!(self.cuSurfObjectDestroy(surface))
    }
}

/// A `CUDA_RESOURCE_DESC` (flags zero, as the driver requires).
pub(super) fn resource_descriptor(
    resource: &crate::driver::api::ResourceSpec,
) -> sys::CUDA_RESOURCE_DESC {
    use crate::driver::api::ResourceSpec;
    use sys::CUresourcetype as Type;
    let mut raw = sys::CUDA_RESOURCE_DESC::default();
    match *resource {
        ResourceSpec::Array(array) => {
            raw.resType = Type::CU_RESOURCE_TYPE_ARRAY;
            raw.res.array.hArray = array.0.cast();
        }
        ResourceSpec::Mipmapped(array) => {
            raw.resType = Type::CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
            raw.res.mipmap.hMipmappedArray = array.0.cast();
        }
        ResourceSpec::Linear {
            ptr,
            format,
            channels,
            bytes,
        } => {
            raw.resType = Type::CU_RESOURCE_TYPE_LINEAR;
            raw.res.linear.devPtr = ptr;
            raw.res.linear.format = sys::CUarray_format(format);
            raw.res.linear.numChannels = channels;
            raw.res.linear.sizeInBytes = bytes;
        }
        ResourceSpec::Pitch2d {
            ptr,
            format,
            channels,
            width,
            height,
            pitch,
        } => {
            raw.resType = Type::CU_RESOURCE_TYPE_PITCH2D;
            raw.res.pitch2D.devPtr = ptr;
            raw.res.pitch2D.format = sys::CUarray_format(format);
            raw.res.pitch2D.numChannels = channels;
            raw.res.pitch2D.width = width;
            raw.res.pitch2D.height = height;
            raw.res.pitch2D.pitchInBytes = pitch;
        }
    }
    raw
}
