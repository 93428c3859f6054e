//! Copies beyond the hot path's single ones: many in one call (`cuMemcpyBatchAsync`), and 2D
//! and 3D copies of pitched memory (`cuMemAllocPitch`, `cuMemcpy2DAsync`, `cuMemcpy3DAsync`),
//! with the structures they take in a form both ABIs read.

use std::ffi::c_void;

use crate::driver::handles::{DevicePtr, StreamHandle};
use crate::error::Result;

/// A `CUmemLocation` as both headers lay it out: a `CUmemLocationType` and an id (the 13
/// header puts the id in a union whose other member is no larger). The ABIs check the layout
/// at compile time and read this as their own struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub(crate) struct MemLocation {
    /// `CUmemLocationType`: 0 invalid (none), 1 device, 2 host, 3 host NUMA node, 4 the host
    /// NUMA node of the calling thread.
    pub(crate) kind: u32,
    /// The device ordinal or NUMA node; 0 where the kind takes none.
    pub(crate) id: i32,
}

impl MemLocation {
    /// `CU_MEM_LOCATION_TYPE_INVALID`: no location (an unset hint).
    pub(crate) const NONE: MemLocation = MemLocation { kind: 0, id: 0 };
    /// `CU_MEM_LOCATION_TYPE_DEVICE`.
    pub(crate) const DEVICE: u32 = 1;
    /// `CU_MEM_LOCATION_TYPE_HOST`.
    pub(crate) const HOST: u32 = 2;
    /// `CU_MEM_LOCATION_TYPE_HOST_NUMA`.
    pub(crate) const HOST_NUMA: u32 = 3;
    /// `CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT`.
    pub(crate) const HOST_NUMA_CURRENT: u32 = 4;
}

/// A `CUmemcpyAttributes` as both headers lay it out (24 bytes: the access order, two
/// locations, the flags); checked at compile time by each ABI, which passes an array of these
/// to the driver as its own type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub(crate) struct MemcpyAttributes {
    /// `CUmemcpySrcAccessOrder`: 1 stream, 2 during the call, 3 any.
    pub(crate) src_access_order: u32,
    /// `srcLocHint`.
    pub(crate) src_hint: MemLocation,
    /// `dstLocHint`.
    pub(crate) dst_hint: MemLocation,
    /// `CUmemcpyFlags`: 1 prefer overlap with compute.
    pub(crate) flags: u32,
}

/// The memory of one side of a 2D or 3D copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PitchedMemory {
    /// A unified (device, managed or pinned host) address: `CU_MEMORYTYPE_UNIFIED`.
    Unified(DevicePtr),
    /// Host memory the driver does not know: `CU_MEMORYTYPE_HOST`.
    Host(*mut c_void),
}

/// One side of a 2D or 3D copy: its memory, where the copy starts in it (`x` in bytes, `y` in
/// rows, `z` in slices) and its layout (`pitch` bytes per row, `height` rows per slice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PitchedSide {
    pub(crate) memory: PitchedMemory,
    pub(crate) x: usize,
    pub(crate) y: usize,
    pub(crate) z: usize,
    pub(crate) pitch: usize,
    pub(crate) height: usize,
}

/// A 2D or 3D copy (`CUDA_MEMCPY2D`, `CUDA_MEMCPY3D`): `width` bytes by `height` rows by
/// `depth` slices (1 for a 2D copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PitchedCopy {
    pub(crate) src: PitchedSide,
    pub(crate) dst: PitchedSide,
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) depth: usize,
}

/// Batched and pitched copies.
pub(crate) trait CopyApi {
    /// `cuMemcpyBatchAsync`: copy `i` moves `sizes[i]` bytes from `srcs[i]` to `dsts[i]`;
    /// `attributes[k]` applies from copy `attribute_starts[k]` on. The three copy arrays have
    /// one length, the two attribute arrays another. The 12 header's call also reports the
    /// index of a failing copy, which its ABI logs.
    fn memcpy_batch_async(
        &self,
        dsts: &[DevicePtr],
        srcs: &[DevicePtr],
        sizes: &[usize],
        attributes: &[MemcpyAttributes],
        attribute_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemAllocPitch` in the current context: the address and the pitch.
    fn mem_alloc_pitch(
        &self,
        width: usize,
        height: usize,
        element_bytes: u32,
    ) -> Result<(DevicePtr, usize)>;
    /// `cuMemcpy2DAsync` (the copy's `z` and `depth` are not read).
    fn memcpy_2d_async(&self, copy: &PitchedCopy, stream: StreamHandle) -> Result<()>;
    /// `cuMemcpy3DAsync`.
    fn memcpy_3d_async(&self, copy: &PitchedCopy, stream: StreamHandle) -> Result<()>;
}
