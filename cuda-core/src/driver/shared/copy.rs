//! [`CopyApi`](crate::driver::api::CopyApi) for both ABIs. `CUDA_MEMCPY2D`, `CUDA_MEMCPY3D`
//! and `cuMemAllocPitch` are the same in both headers; `cuMemcpyBatchAsync` is not (the 12
//! header's reports a failing index, the 13 header's `_v2` does not), so it goes through the
//! ABI file's `abi_memcpy_batch_async`. `CUmemcpyAttributes` and `CUmemLocation` are laid out
//! alike in both, as the neutral [`MemcpyAttributes`](crate::driver::MemcpyAttributes) and
//! [`MemLocation`](crate::driver::MemLocation) are: checked here at compile time, so that an
//! array of the neutral type is the driver's array.

use super::*;

const _: () = {
    use crate::driver::{MemLocation, MemcpyAttributes};
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<sys::CUmemLocation>() == size_of::<MemLocation>());
    assert!(align_of::<sys::CUmemLocation>() == align_of::<MemLocation>());
    assert!(offset_of!(sys::CUmemLocation, type_) == offset_of!(MemLocation, kind));
    // The id (the 13 header's union) is what follows the type: 4 bytes at offset 4.
    assert!(size_of::<sys::CUmemLocationType>() == 4);
    assert!(size_of::<sys::CUmemcpyAttributes>() == size_of::<MemcpyAttributes>());
    assert!(align_of::<sys::CUmemcpyAttributes>() == align_of::<MemcpyAttributes>());
    assert!(
        offset_of!(sys::CUmemcpyAttributes, srcAccessOrder)
            == offset_of!(MemcpyAttributes, src_access_order)
    );
    assert!(
        offset_of!(sys::CUmemcpyAttributes, srcLocHint) == offset_of!(MemcpyAttributes, src_hint)
    );
    assert!(
        offset_of!(sys::CUmemcpyAttributes, dstLocHint) == offset_of!(MemcpyAttributes, dst_hint)
    );
    assert!(offset_of!(sys::CUmemcpyAttributes, flags) == offset_of!(MemcpyAttributes, flags));
    assert!(size_of::<sys::CUmemcpySrcAccessOrder>() == 4);
};

/// A neutral location as this header's `CUmemLocation` (the layouts are checked
/// above).
#[inline]
pub(super) fn mem_location(location: crate::driver::MemLocation) -> sys::CUmemLocation {
    // SAFETY: the two types have the same size and layout (checked at compile time),
    // and every bit pattern of two 32-bit integers is a valid `CUmemLocation` (an
    // enum newtype and an integer, or a union of plain integers).
    unsafe { std::mem::transmute::<crate::driver::MemLocation, sys::CUmemLocation>(location) }
}

/// One side of a pitched copy as the header's memory type and pointers.
#[inline]
pub(super) fn pitched_memory(
    memory: crate::driver::PitchedMemory,
) -> (sys::CUmemorytype, sys::CUdeviceptr, *mut std::ffi::c_void) {
    match memory {
        crate::driver::PitchedMemory::Unified(ptr) => (
            sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED,
            ptr,
            std::ptr::null_mut(),
        ),
        crate::driver::PitchedMemory::Host(ptr) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, 0, ptr),
    }
}

impl crate::driver::api::CopyApi for Drv {
    fn memcpy_batch_async(
        &self,
        dsts: &[DevicePtr],
        srcs: &[DevicePtr],
        sizes: &[usize],
        attributes: &[crate::driver::MemcpyAttributes],
        attribute_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()> {
        debug_assert!(dsts.len() == srcs.len() && srcs.len() == sizes.len());
        debug_assert!(attributes.len() == attribute_starts.len());
        // The driver reads these arrays only (its parameters are not `const` in the
        // header).
        self.abi_memcpy_batch_async(
            dsts.as_ptr().cast_mut(),
            srcs.as_ptr().cast_mut(),
            sizes.as_ptr().cast_mut(),
            dsts.len(),
            attributes
                .as_ptr()
                .cast_mut()
                .cast::<sys::CUmemcpyAttributes>(),
            attribute_starts.as_ptr().cast_mut(),
            attributes.len(),
            stream,
        )
    }

    fn mem_alloc_pitch(
        &self,
        width: usize,
        height: usize,
        element_bytes: u32,
    ) -> Result<(DevicePtr, usize)> {
        let (mut ptr, mut pitch) = (0, 0);
        call!(self.cuMemAllocPitch(&mut ptr, &mut pitch, width, height, element_bytes))?;
        Ok((ptr, pitch))
    }

    fn memcpy_2d_async(
        &self,
        copy: &crate::driver::PitchedCopy,
        stream: StreamHandle,
    ) -> Result<()> {
        let (src_type, src_device, src_host) = pitched_memory(copy.src.memory);
        let (dst_type, dst_device, dst_host) = pitched_memory(copy.dst.memory);
        let params = sys::CUDA_MEMCPY2D {
            srcXInBytes: copy.src.x,
            srcY: copy.src.y,
            srcMemoryType: src_type,
            srcHost: src_host.cast_const(),
            srcDevice: src_device,
            srcPitch: copy.src.pitch,
            dstXInBytes: copy.dst.x,
            dstY: copy.dst.y,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstPitch: copy.dst.pitch,
            WidthInBytes: copy.width,
            Height: copy.height,
            ..Default::default()
        };
        call!(self.cuMemcpy2DAsync(&params, stream.0.cast()))
    }

    fn memcpy_3d_async(
        &self,
        copy: &crate::driver::PitchedCopy,
        stream: StreamHandle,
    ) -> Result<()> {
        let (src_type, src_device, src_host) = pitched_memory(copy.src.memory);
        let (dst_type, dst_device, dst_host) = pitched_memory(copy.dst.memory);
        let params = sys::CUDA_MEMCPY3D {
            srcXInBytes: copy.src.x,
            srcY: copy.src.y,
            srcZ: copy.src.z,
            srcMemoryType: src_type,
            srcHost: src_host.cast_const(),
            srcDevice: src_device,
            srcPitch: copy.src.pitch,
            srcHeight: copy.src.height,
            dstXInBytes: copy.dst.x,
            dstY: copy.dst.y,
            dstZ: copy.dst.z,
            dstMemoryType: dst_type,
            dstHost: dst_host,
            dstDevice: dst_device,
            dstPitch: copy.dst.pitch,
            dstHeight: copy.dst.height,
            WidthInBytes: copy.width,
            Height: copy.height,
            Depth: copy.depth,
            ..Default::default()
        };
        call!(self.cuMemcpy3DAsync(&params, stream.0.cast()))
    }
}
