//! Tensor maps (`cuTensorMapEncode*`): descriptors of a tensor in global memory for the Tensor
//! Memory Accelerator, encoded on the host (compute capability 9.0 and newer).

use crate::driver::handles::DevicePtr;
use crate::error::Result;

/// A `CUtensorMap`: 128 opaque bytes. Aligned to 128 bytes, as the CUDA 13 header declares it
/// (the driver needs 64); the same layout for both ABIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C, align(128))]
pub(crate) struct TensorMapBytes(pub(crate) [u64; 16]);

impl TensorMapBytes {
    pub(crate) const ZERO: TensorMapBytes = TensorMapBytes([0; 16]);
}

/// What every encoding takes, by the enums' codes: the tensor in global memory and how the
/// Tensor Memory Accelerator moves it. The slices hold `rank` entries (`strides`: one fewer).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TensorSpec<'a> {
    /// `CUtensorMapDataType`.
    pub(crate) data_type: u32,
    pub(crate) address: DevicePtr,
    pub(crate) dims: &'a [u64],
    pub(crate) strides: &'a [u64],
    pub(crate) element_strides: &'a [u32],
    /// `CUtensorMapInterleave`.
    pub(crate) interleave: u32,
    /// `CUtensorMapSwizzle`.
    pub(crate) swizzle: u32,
    /// `CUtensorMapL2promotion`.
    pub(crate) l2_promotion: u32,
    /// `CUtensorMapFloatOOBfill`.
    pub(crate) oob_fill: u32,
}

/// The im2col part of `cuTensorMapEncodeIm2col`: the bounding box's corners (rank - 2 each).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Im2colSpec<'a> {
    pub(crate) lower: &'a [i32],
    pub(crate) upper: &'a [i32],
    pub(crate) channels_per_pixel: u32,
    pub(crate) pixels_per_column: u32,
}

/// The im2col part of `cuTensorMapEncodeIm2colWide`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Im2colWideSpec {
    pub(crate) lower: i32,
    pub(crate) upper: i32,
    pub(crate) channels_per_pixel: u32,
    pub(crate) pixels_per_column: u32,
    /// `CUtensorMapIm2ColWideMode`.
    pub(crate) mode: u32,
}

/// Encoding tensor maps.
pub(crate) trait TensorMapApi {
    /// `cuTensorMapEncodeTiled` into `out`, with `box_dims` (`rank` entries).
    fn tensor_map_encode_tiled(
        &self,
        out: &mut TensorMapBytes,
        tensor: &TensorSpec<'_>,
        box_dims: &[u32],
    ) -> Result<()>;
    /// `cuTensorMapEncodeIm2col` into `out`.
    fn tensor_map_encode_im2col(
        &self,
        out: &mut TensorMapBytes,
        tensor: &TensorSpec<'_>,
        im2col: &Im2colSpec<'_>,
    ) -> Result<()>;
    /// `cuTensorMapEncodeIm2colWide` into `out`.
    fn tensor_map_encode_im2col_wide(
        &self,
        out: &mut TensorMapBytes,
        tensor: &TensorSpec<'_>,
        im2col: &Im2colWideSpec,
    ) -> Result<()>;
    /// `cuTensorMapReplaceAddress`.
    fn tensor_map_replace_address(
        &self,
        map: &mut TensorMapBytes,
        address: DevicePtr,
    ) -> Result<()>;
}
