//! The layouts of the three encodings: [`TiledOptions`], [`Im2colOptions`] and
//! [`Im2colWideOptions`].

use super::types::{
    Im2colWideMode, TensorDataType, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapSwizzle,
};

/// A tiled tensor map's layout (`cuTensorMapEncodeTiled`): the tensor, and the box each copy
/// moves. `dims`, `box_dims` and `element_strides` have one entry per dimension (1 to 5,
/// innermost first); `strides` one per dimension after the first, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "cuTensorMapEncodeTiled")]
#[non_exhaustive]
pub struct TiledOptions {
    /// The element type.
    pub data_type: TensorDataType,
    /// The tensor's size in elements, per dimension, innermost first: each 1 to 2^32.
    pub dims: Vec<u64>,
    /// The distance in bytes between consecutive indices of dimensions 1 and up: multiples of
    /// 16 (of 32 with [`TensorMapInterleave::B32`] or a 16-byte-aligned packed type), below
    /// 2^40. Empty: packed rows (each dimension's stride is the previous one's times its size),
    /// which then must be such multiples too.
    pub strides: Vec<u64>,
    /// The box a copy moves, in elements per dimension: each 1 to 256 and at most the tensor's
    /// size; the innermost in bytes a multiple of 16 (without interleave), and within the
    /// swizzle span (with a swizzle).
    pub box_dims: Vec<u32>,
    /// The step between the elements a copy takes, per dimension: each 1 to 8 (the first is
    /// ignored without interleave). Empty: all 1.
    pub element_strides: Vec<u32>,
    /// The interleaved layout.
    pub interleave: TensorMapInterleave,
    /// The shared-memory swizzle.
    pub swizzle: TensorMapSwizzle,
    /// The L2 fetch granularity.
    pub l2_promotion: TensorMapL2Promotion,
    /// What fills the box past the tensor's edges.
    pub oob_fill: TensorMapOobFill,
}

crate::options::chainers!(TiledOptions {
    with_data_type(data_type: TensorDataType);
    with_dims(dims: Vec<u64>);
    with_strides(strides: Vec<u64>);
    with_box_dims(box_dims: Vec<u32>);
    with_element_strides(element_strides: Vec<u32>);
    with_interleave(interleave: TensorMapInterleave);
    with_swizzle(swizzle: TensorMapSwizzle);
    with_l2_promotion(l2_promotion: TensorMapL2Promotion);
    with_oob_fill(oob_fill: TensorMapOobFill);
});

impl TiledOptions {
    /// A packed tensor of `data_type` with `dims`, copied in boxes of `box_dims`; the rest as
    /// by default.
    pub fn new(data_type: TensorDataType, dims: &[u64], box_dims: &[u32]) -> TiledOptions {
        TiledOptions {
            data_type,
            dims: dims.to_vec(),
            box_dims: box_dims.to_vec(),
            ..Default::default()
        }
    }
}

/// An im2col tensor map's layout (`cuTensorMapEncodeIm2col`): a tensor of 3 to 5 dimensions
/// (NWC, NHWC or NDHWC, innermost first: `[C, W, N]`, `[C, W, H, N]`, `[C, W, H, D, N]`), and
/// the pixels a copy gathers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "cuTensorMapEncodeIm2col")]
pub struct Im2colOptions {
    /// The element type.
    pub data_type: TensorDataType,
    /// The tensor's size, per dimension, innermost first (3 to 5 of them).
    pub dims: Vec<u64>,
    /// As for [`TiledOptions::strides`].
    pub strides: Vec<u64>,
    /// As for [`TiledOptions::element_strides`].
    pub element_strides: Vec<u32>,
    /// The bounding box's offsets from the tensor's first corner, one per spatial dimension
    /// (W, H, D: rank - 2 of them): within -32768..=32767 for rank 3, -128..=127 for rank 4,
    /// -16..=15 for rank 5.
    pub lower_corner: Vec<i32>,
    /// The bounding box's offsets from the tensor's last corner, likewise; the box must not be
    /// empty (`dims[1 + i] - lower_corner[i] + upper_corner[i]` at least 1).
    pub upper_corner: Vec<i32>,
    /// Elements taken along C per pixel: 1 to 256 (128 for the 16-byte-aligned packed types).
    pub channels_per_pixel: u32,
    /// Pixels taken per copy: 1 to 1024.
    pub pixels_per_column: u32,
    /// The interleaved layout.
    pub interleave: TensorMapInterleave,
    /// The shared-memory swizzle.
    pub swizzle: TensorMapSwizzle,
    /// The L2 fetch granularity.
    pub l2_promotion: TensorMapL2Promotion,
    /// What fills pixels past the tensor's edges.
    pub oob_fill: TensorMapOobFill,
}

crate::options::chainers!(Im2colOptions {
    with_data_type(data_type: TensorDataType);
    with_dims(dims: Vec<u64>);
    with_strides(strides: Vec<u64>);
    with_element_strides(element_strides: Vec<u32>);
    with_lower_corner(lower_corner: Vec<i32>);
    with_upper_corner(upper_corner: Vec<i32>);
    with_channels_per_pixel(channels_per_pixel: u32);
    with_pixels_per_column(pixels_per_column: u32);
    with_interleave(interleave: TensorMapInterleave);
    with_swizzle(swizzle: TensorMapSwizzle);
    with_l2_promotion(l2_promotion: TensorMapL2Promotion);
    with_oob_fill(oob_fill: TensorMapOobFill);
});

/// A wide im2col tensor map's layout (`cuTensorMapEncodeIm2colWide`, compute capability 10.0
/// and newer): as [`Im2colOptions`], with the box along W only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "cuTensorMapEncodeIm2colWide")]
pub struct Im2colWideOptions {
    /// The element type.
    pub data_type: TensorDataType,
    /// The tensor's size, per dimension, innermost first (3 to 5 of them).
    pub dims: Vec<u64>,
    /// As for [`TiledOptions::strides`].
    pub strides: Vec<u64>,
    /// As for [`TiledOptions::element_strides`].
    pub element_strides: Vec<u32>,
    /// The bounding box's offset along W from the first corner: -32768..=32767.
    pub lower_corner_width: i32,
    /// The bounding box's offset along W from the last corner: -32768..=32767; the box must not
    /// be empty.
    pub upper_corner_width: i32,
    /// Elements taken along C per pixel: 1 to 256 (128 for the 16-byte-aligned packed types).
    pub channels_per_pixel: u32,
    /// Pixels taken per copy: 1 to 1024 (ignored with [`Im2colWideMode::W128`]).
    pub pixels_per_column: u32,
    /// The interleaved layout.
    pub interleave: TensorMapInterleave,
    /// How W is loaded.
    pub mode: Im2colWideMode,
    /// The shared-memory swizzle: 64B, 128B or 128B with 32-byte atoms.
    pub swizzle: TensorMapSwizzle,
    /// The L2 fetch granularity.
    pub l2_promotion: TensorMapL2Promotion,
    /// What fills pixels past the tensor's edges.
    pub oob_fill: TensorMapOobFill,
}

crate::options::chainers!(Im2colWideOptions {
    with_data_type(data_type: TensorDataType);
    with_dims(dims: Vec<u64>);
    with_strides(strides: Vec<u64>);
    with_element_strides(element_strides: Vec<u32>);
    with_lower_corner_width(lower_corner_width: i32);
    with_upper_corner_width(upper_corner_width: i32);
    with_channels_per_pixel(channels_per_pixel: u32);
    with_pixels_per_column(pixels_per_column: u32);
    with_interleave(interleave: TensorMapInterleave);
    with_mode(mode: Im2colWideMode);
    with_swizzle(swizzle: TensorMapSwizzle);
    with_l2_promotion(l2_promotion: TensorMapL2Promotion);
    with_oob_fill(oob_fill: TensorMapOobFill);
});
