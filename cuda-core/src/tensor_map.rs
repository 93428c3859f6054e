//! Tensor maps: descriptors of a tensor in global memory that the Tensor Memory Accelerator
//! (compute capability 9.0 and newer) copies tiles of, to and from shared memory
//! (`cp.async.bulk.tensor`).
//!
//! A [`TensorMap`] is encoded from a [`Buffer`] and a byte offset into it, with the tensor's
//! dimensions and strides and the shape of what each copy moves: a box ([`TiledOptions`],
//! `cuTensorMapEncodeTiled`), or im2col pixels ([`Im2colOptions`], `cuTensorMapEncodeIm2col`;
//! [`Im2colWideOptions`], `cuTensorMapEncodeIm2colWide`). It keeps its buffer alive and is a
//! kernel argument by value: the kernel takes a `const __grid_constant__ CUtensorMap`. Every
//! rule the driver documents is checked before the driver, each refusal naming the rule; and
//! the tensor must lie within the buffer.
//!
//! Dimensions run innermost first, as the driver takes them: a row-major `rows` by `cols`
//! matrix has `dims = [cols, rows]`, and `strides` (in bytes, one per dimension after the
//! first) `[row_pitch]`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_core::{Allocate, Device, StreamOptions, TensorDataType, TensorMap, TensorMapSwizzle};
//! use cuda_core::TiledOptions;
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let matrix = Arc::new(device.memory_resource()?.allocate(1024 * 1024 * 4, &stream)?);
//! let options = TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32])
//!     .with_swizzle(TensorMapSwizzle::B128);
//! let map = TensorMap::tiled(&matrix, 0, &options)?;
//! // `&map` is then a kernel argument: `__global__ void k(const __grid_constant__ CUtensorMap m)`.
//! # let _ = map;
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::fmt;
use std::sync::Arc;

use crate::args::DeviceRepr;
use crate::context::Context;
use crate::device::Device;
use crate::driver::{Im2colSpec, Im2colWideSpec, TensorMapBytes, TensorSpec};
use crate::error::{Error, Result};
use crate::memory::{Buffer, DevicePtr};

/// The most dimensions a tensor map has.
pub const TENSOR_MAP_MAX_RANK: usize = 5;

/// The element type of a tensor (`CUtensorMapDataType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapDataType")]
pub enum TensorDataType {
    /// `u8` (`CU_TENSOR_MAP_DATA_TYPE_UINT8`).
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `i32`.
    I32,
    /// `u64`.
    U64,
    /// `i64`.
    I64,
    /// IEEE half precision (`CU_TENSOR_MAP_DATA_TYPE_FLOAT16`).
    F16,
    /// `f32` (the default).
    #[default]
    F32,
    /// `f64`.
    F64,
    /// bfloat16.
    BF16,
    /// `f32`, denormals flushed to zero.
    F32Ftz,
    /// TF32 (in 4 bytes).
    TF32,
    /// TF32, denormals flushed to zero.
    TF32Ftz,
    /// Sixteen 4-bit values packed in 8 bytes (`CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B`);
    /// dimensions count the 4-bit values.
    U4x16Align8,
    /// Sixteen 4-bit values in 16 bytes, 8 bytes of gap after every 8
    /// (`CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B`).
    U4x16Align16,
    /// Sixteen 6-bit values in 16 bytes, 4 bytes of gap after every 12
    /// (`CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B`).
    U6x16Align16,
}

impl TensorDataType {
    fn code(self) -> u32 {
        match self {
            TensorDataType::U8 => 0,
            TensorDataType::U16 => 1,
            TensorDataType::U32 => 2,
            TensorDataType::I32 => 3,
            TensorDataType::U64 => 4,
            TensorDataType::I64 => 5,
            TensorDataType::F16 => 6,
            TensorDataType::F32 => 7,
            TensorDataType::F64 => 8,
            TensorDataType::BF16 => 9,
            TensorDataType::F32Ftz => 10,
            TensorDataType::TF32 => 11,
            TensorDataType::TF32Ftz => 12,
            TensorDataType::U4x16Align8 => 13,
            TensorDataType::U4x16Align16 => 14,
            TensorDataType::U6x16Align16 => 15,
        }
    }

    /// The bits one element takes in memory: its size for the plain types, 4 for
    /// [`U4x16Align8`](Self::U4x16Align8), and 8 for the 16-byte-aligned packed types (16
    /// values and their gaps in 16 bytes).
    pub fn bits_in_memory(self) -> u64 {
        match self {
            TensorDataType::U8 => 8,
            TensorDataType::U16 | TensorDataType::F16 | TensorDataType::BF16 => 16,
            TensorDataType::U32
            | TensorDataType::I32
            | TensorDataType::F32
            | TensorDataType::F32Ftz
            | TensorDataType::TF32
            | TensorDataType::TF32Ftz => 32,
            TensorDataType::U64 | TensorDataType::I64 | TensorDataType::F64 => 64,
            TensorDataType::U4x16Align8 => 4,
            TensorDataType::U4x16Align16 | TensorDataType::U6x16Align16 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(
            self,
            TensorDataType::F16
                | TensorDataType::F32
                | TensorDataType::F64
                | TensorDataType::BF16
                | TensorDataType::F32Ftz
                | TensorDataType::TF32
                | TensorDataType::TF32Ftz
        )
    }

    /// The packed types aligned to 16 bytes, which have rules of their own.
    fn is_packed_16(self) -> bool {
        matches!(
            self,
            TensorDataType::U4x16Align16 | TensorDataType::U6x16Align16
        )
    }
}

/// An interleaved layout such as NC/8HWC8 (`CUtensorMapInterleave`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapInterleave")]
pub enum TensorMapInterleave {
    /// Not interleaved (the default).
    #[default]
    None,
    /// 16-byte interleave (C8 of 2-byte channels).
    B16,
    /// 32-byte interleave (C16 of 2-byte channels).
    B32,
}

impl TensorMapInterleave {
    fn code(self) -> u32 {
        match self {
            TensorMapInterleave::None => 0,
            TensorMapInterleave::B16 => 1,
            TensorMapInterleave::B32 => 2,
        }
    }
}

/// How a copy lays its box out in shared memory, to spread accesses over the banks
/// (`CUtensorMapSwizzle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapSwizzle")]
pub enum TensorMapSwizzle {
    /// Rows as in global memory (the default).
    #[default]
    None,
    /// 16-byte chunks swizzled within 32-byte spans.
    B32,
    /// 16-byte chunks swizzled within 64-byte spans.
    B64,
    /// 16-byte chunks swizzled within 128-byte spans.
    B128,
    /// 32-byte chunks swizzled within 128-byte spans.
    B128Atom32,
    /// As [`B128Atom32`](Self::B128Atom32), and the 8-byte halves of each 16 bytes swapped on
    /// every other row.
    B128Atom32Flip8,
    /// 64-byte chunks swizzled within 128-byte spans.
    B128Atom64,
}

impl TensorMapSwizzle {
    fn code(self) -> u32 {
        match self {
            TensorMapSwizzle::None => 0,
            TensorMapSwizzle::B32 => 1,
            TensorMapSwizzle::B64 => 2,
            TensorMapSwizzle::B128 => 3,
            TensorMapSwizzle::B128Atom32 => 4,
            TensorMapSwizzle::B128Atom32Flip8 => 5,
            TensorMapSwizzle::B128Atom64 => 6,
        }
    }

    /// The span the swizzle works within, in bytes; `None` for no swizzle.
    pub fn span(self) -> Option<u64> {
        match self {
            TensorMapSwizzle::None => None,
            TensorMapSwizzle::B32 => Some(32),
            TensorMapSwizzle::B64 => Some(64),
            TensorMapSwizzle::B128
            | TensorMapSwizzle::B128Atom32
            | TensorMapSwizzle::B128Atom32Flip8
            | TensorMapSwizzle::B128Atom64 => Some(128),
        }
    }
}

/// The granularity at which L2 fetches the tensor from memory (`CUtensorMapL2promotion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapL2promotion")]
pub enum TensorMapL2Promotion {
    /// No promotion (the default).
    #[default]
    None,
    /// 64 bytes.
    B64,
    /// 128 bytes.
    B128,
    /// 256 bytes.
    B256,
}

impl TensorMapL2Promotion {
    fn code(self) -> u32 {
        match self {
            TensorMapL2Promotion::None => 0,
            TensorMapL2Promotion::B64 => 1,
            TensorMapL2Promotion::B128 => 2,
            TensorMapL2Promotion::B256 => 3,
        }
    }
}

/// What a load puts where the box reaches past the tensor (`CUtensorMapFloatOOBfill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapFloatOOBfill")]
pub enum TensorMapOobFill {
    /// Zeros (the default).
    #[default]
    Zero,
    /// A NaN that FMA treats as zero (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`):
    /// floating-point types only.
    NanRequestZeroFma,
}

impl TensorMapOobFill {
    fn code(self) -> u32 {
        match self {
            TensorMapOobFill::Zero => 0,
            TensorMapOobFill::NanRequestZeroFma => 1,
        }
    }
}

/// How [`Im2colWideOptions`] loads along W (`CUtensorMapIm2ColWideMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUtensorMapIm2ColWideMode")]
pub enum Im2colWideMode {
    /// As many pixels as `pixels_per_column` (the default).
    #[default]
    W,
    /// 128 pixels (`pixels_per_column` is then ignored).
    W128,
}

impl Im2colWideMode {
    fn code(self) -> u32 {
        match self {
            Im2colWideMode::W => 0,
            Im2colWideMode::W128 => 1,
        }
    }
}

/// A tiled tensor map's layout (`cuTensorMapEncodeTiled`): the tensor, and the box each copy
/// moves. `dims`, `box_dims` and `element_strides` have one entry per dimension (1 to 5,
/// innermost first); `strides` one per dimension after the first, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "cuTensorMapEncodeTiled")]
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

/// The 128 bytes of a tensor map (`CUtensorMap`), as a kernel takes it by value (a
/// [`DeviceRepr`]): aligned to 128 bytes, as the CUDA 13 header declares it (the driver needs
/// 64). It refers to global memory by address and keeps nothing alive: see [`TensorMap`] for
/// one that keeps its buffer.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "CUtensorMap")]
pub struct TensorMapDescriptor(TensorMapBytes);

const _: () = {
    assert!(std::mem::size_of::<TensorMapDescriptor>() == 128);
    assert!(std::mem::align_of::<TensorMapDescriptor>() == 128);
};

// SAFETY: `#[repr(C)]` plain data of the `CUtensorMap` layout (128 bytes, aligned beyond the
// 64 bytes kernels read it at), with no host pointers.
unsafe impl DeviceRepr for TensorMapDescriptor {}

impl fmt::Debug for TensorMapDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TensorMapDescriptor(")?;
        for word in &self.0 .0 {
            write!(f, "{word:016x}")?;
        }
        f.write_str(")")
    }
}

impl TensorMapDescriptor {
    /// Encodes a tiled map of the tensor at `address`, for kernels on `device`, after every
    /// check of [`TensorMap::tiled`] but that the tensor lies within a buffer (nothing here
    /// knows the memory at `address`: a kernel that uses the map may only reach memory that
    /// the tensor does cover).
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tiled(
        device: Device,
        address: DevicePtr,
        options: &TiledOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_tiled(options), RAW, None).map(|(d, _)| d)
    }

    /// Encodes an im2col map of the tensor at `address`: see [`TensorMapDescriptor::tiled`].
    #[doc(alias = "cuTensorMapEncodeIm2col")]
    pub fn im2col(
        device: Device,
        address: DevicePtr,
        options: &Im2colOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_im2col(options), RAW, None).map(|(d, _)| d)
    }

    /// Encodes a wide im2col map of the tensor at `address`: see
    /// [`TensorMapDescriptor::tiled`].
    #[doc(alias = "cuTensorMapEncodeIm2colWide")]
    pub fn im2col_wide(
        device: Device,
        address: DevicePtr,
        options: &Im2colWideOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_im2col_wide(options), RAW, None).map(|(d, _)| d)
    }

    /// The opaque words, as the driver wrote them.
    pub fn as_words(&self) -> &[u64; 16] {
        &self.0 .0
    }

    /// A descriptor of these words (made elsewhere, by the driver).
    pub fn from_words(words: [u64; 16]) -> TensorMapDescriptor {
        TensorMapDescriptor(TensorMapBytes(words))
    }
}

/// A tensor map over a [`Buffer`] (from a byte offset into it), which it keeps alive: a
/// kernel argument passed by value, as the kernel's `const __grid_constant__ CUtensorMap`
/// parameter takes it (128 bytes). In a [`launch`](crate::launch) it is ordered as its buffer
/// is (see there), and a graph's kernel node keeps its buffer.
///
/// Checked before the driver: every rule of `cuTensorMapEncode*` (rank, alignment of the
/// address to 16 bytes, or 32 with [`TensorMapInterleave::B32`] and the 16-byte-aligned packed
/// types; strides; box and element-stride limits; swizzle, interleave and data-type
/// combinations; im2col corners and pixel counts), the device's compute capability (9.0; 10.0
/// for wide im2col), and that the tensor (from the offset, as far as its dimensions and
/// strides reach) lies within the buffer. Each refusal is [`Error::InvalidArgument`] naming
/// the field and the rule.
#[repr(C)]
pub struct TensorMap {
    /// First, so that the map's leading bytes are its kernel argument.
    descriptor: TensorMapDescriptor,
    buffer: Arc<Buffer>,
    offset: usize,
    /// The alignment the tensor's address needs, and the bytes the tensor spans.
    align: u64,
    span: u64,
}

impl Clone for TensorMap {
    fn clone(&self) -> TensorMap {
        TensorMap {
            descriptor: self.descriptor,
            buffer: self.buffer.clone(),
            offset: self.offset,
            align: self.align,
            span: self.span,
        }
    }
}

impl fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("address", &format_args!("{:#x}", self.address().0))
            .field("span", &self.span)
            .field("buffer", &self.buffer)
            .finish()
    }
}

impl TensorMap {
    /// A tiled map of the tensor at `offset` bytes into `buffer` (`cuTensorMapEncodeTiled`),
    /// for kernels on the device of the buffer's deallocation stream.
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tiled(buffer: &Arc<Buffer>, offset: usize, options: &TiledOptions) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_tiled(options))
    }

    /// An im2col map of the tensor at `offset` bytes into `buffer`
    /// (`cuTensorMapEncodeIm2col`).
    #[doc(alias = "cuTensorMapEncodeIm2col")]
    pub fn im2col(
        buffer: &Arc<Buffer>,
        offset: usize,
        options: &Im2colOptions,
    ) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_im2col(options))
    }

    /// A wide im2col map of the tensor at `offset` bytes into `buffer`
    /// (`cuTensorMapEncodeIm2colWide`, compute capability 10.0 and newer).
    #[doc(alias = "cuTensorMapEncodeIm2colWide")]
    pub fn im2col_wide(
        buffer: &Arc<Buffer>,
        offset: usize,
        options: &Im2colWideOptions,
    ) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_im2col_wide(options))
    }

    #[inline]
    fn encode_in(buffer: &Arc<Buffer>, offset: usize, layout: &Layout<'_>) -> Result<TensorMap> {
        let address = address_in(buffer, offset)?;
        let stream = buffer.deallocation_stream();
        let mut checked = Checked::EMPTY;
        prepare(
            stream.device(),
            address,
            layout,
            ("offset", "buffer"),
            Some((buffer, offset)),
            &mut checked,
        )?;
        // Encoded in place, into the map returned.
        let mut map = TensorMap {
            descriptor: TensorMapDescriptor(TensorMapBytes::ZERO),
            buffer: buffer.clone(),
            offset,
            align: checked.align,
            span: checked.span,
        };
        encode_into(
            stream.context(),
            address,
            layout,
            &checked,
            &mut map.descriptor,
        )?;
        Ok(map)
    }

    /// Points the map at the same tensor layout at `offset` bytes into `buffer`
    /// (`cuTensorMapReplaceAddress`), which it then keeps instead. Checked before the driver:
    /// the buffer is of the device the map was encoded for (its deallocation stream's, as for
    /// the encoding), the address's alignment, as for the map's encoding, and that the tensor
    /// lies within the buffer. On an error the map is left as it was.
    #[doc(alias = "cuTensorMapReplaceAddress")]
    pub fn replace_address(&mut self, buffer: &Arc<Buffer>, offset: usize) -> Result<()> {
        let (own, new) = (
            self.buffer.deallocation_stream().device(),
            buffer.deallocation_stream().device(),
        );
        if own != new {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "the map was encoded for device {}, and the buffer is of device {}'s \
                     stream; encode a map for it",
                    own.ordinal(),
                    new.ordinal()
                ),
            });
        }
        let address = address_in(buffer, offset)?;
        check_alignment(address, self.align, "offset")?;
        fits(buffer, offset, self.span)?;
        let mut descriptor = self.descriptor;
        let context = buffer.deallocation_stream().context();
        context.with_current(|driver| {
            driver.tensor_map_replace_address(&mut descriptor.0, address.0)
        })?;
        self.descriptor = descriptor;
        self.buffer = buffer.clone();
        self.offset = offset;
        Ok(())
    }

    /// The descriptor, as a kernel receives it.
    pub fn descriptor(&self) -> &TensorMapDescriptor {
        &self.descriptor
    }

    /// The buffer the map points into.
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The tensor's offset into the buffer, in bytes.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The tensor's address.
    pub fn address(&self) -> DevicePtr {
        DevicePtr(self.buffer.ptr().0 + self.offset as u64)
    }

    /// The bytes the tensor spans from its address, as far as its dimensions and strides
    /// reach.
    pub fn span_bytes(&self) -> u64 {
        self.span
    }
}

impl crate::args::KernelArg for TensorMap {}
impl crate::args::GraphArg for TensorMap {}

impl crate::args::sealed::Arg for TensorMap {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (&self.descriptor as *const TensorMapDescriptor).cast(),
            size: std::mem::size_of::<TensorMapDescriptor>(),
            home: Some(self.buffer.deallocation_stream()),
        }
    }

    fn buffer(&self) -> Option<&Arc<Buffer>> {
        Some(&self.buffer)
    }
}

/// The address `offset` bytes into `buffer`, refused past its end.
fn address_in(buffer: &Buffer, offset: usize) -> Result<DevicePtr> {
    if offset >= buffer.size() {
        return Err(Error::InvalidArgument {
            name: "offset",
            reason: format!(
                "{offset} bytes is at or past the end of the {}-byte buffer",
                buffer.size()
            ),
        });
    }
    Ok(DevicePtr(buffer.ptr().0 + offset as u64))
}

/// Refuses a tensor that reaches past the end of its buffer.
fn fits(buffer: &Buffer, offset: usize, span: u64) -> Result<()> {
    let available = (buffer.size() - offset) as u64;
    if span > available {
        return Err(Error::InvalidArgument {
            name: "buffer",
            reason: format!(
                "the tensor spans {span} bytes from offset {offset}, past the end of the \
                 {}-byte buffer ({available} bytes from the offset)",
                buffer.size()
            ),
        });
    }
    Ok(())
}

fn check_alignment(address: DevicePtr, align: u64, name: &'static str) -> Result<()> {
    // `align` is 16 or 32: a mask, not a division (this is on the encode's path).
    if address.0 & (align - 1) != 0 {
        return Err(Error::InvalidArgument {
            name,
            reason: format!(
                "the tensor's address {:#x} is not aligned to {align} bytes, as tensor maps \
                 need{}",
                address.0,
                if align > 16 {
                    " with 32-byte interleave or a 16-byte-aligned packed type"
                } else {
                    ""
                }
            ),
        });
    }
    Ok(())
}

/// The names [`TensorMapDescriptor`]'s encodings give the address and the device in errors.
const RAW: (&str, &str) = ("address", "device");

/// Checks the layout, the device and that the tensor lies `within` its buffer (from an
/// offset) where it has one, then encodes; `names` are what errors call the address and the
/// device.
#[inline]
fn encode(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
) -> Result<(TensorMapDescriptor, Checked)> {
    let mut checked = Checked::EMPTY;
    prepare(device, address, layout, names, within, &mut checked)?;
    let mut descriptor = TensorMapDescriptor(TensorMapBytes::ZERO);
    encode_into(
        &device.primary_context()?,
        address,
        layout,
        &checked,
        &mut descriptor,
    )?;
    Ok((descriptor, checked))
}

/// [`encode`]'s checks, filling `checked` in place (moving it out of an `Option` and
/// `Result`s was a quarter of cuda-core's own time on the encode, by perf against the stand-in
/// driver): every rule as one condition without messages, and where one fails,
/// [`prepare_detailed`] for the error (or, should every rule hold after all, its answer).
/// `within`'s offset is within its buffer.
#[inline]
fn prepare(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
    checked: &mut Checked,
) -> Result<()> {
    let passed = fast_check_into(layout, checked)
        && address.0 & (checked.align - 1) == 0
        && within.is_none_or(|(buffer, offset)| checked.span <= (buffer.size() - offset) as u64)
        && device_can_encode(device, layout.kind);
    if passed {
        debug_assert_eq!(
            check_detailed(layout).as_ref(),
            Ok(&*checked),
            "the fast check passed a layout the detailed check does not"
        );
        return Ok(());
    }
    *checked = prepare_detailed(device, address, layout, names, within)?;
    Ok(())
}

/// [`prepare`]'s checks one by one: the error of the first rule broken.
#[cold]
#[inline(never)]
fn prepare_detailed(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
) -> Result<Checked> {
    let checked = check(layout)?;
    check_alignment(address, checked.align, names.0)?;
    check_device(device, layout.kind, names.1)?;
    if let Some((buffer, offset)) = within {
        fits(buffer, offset, checked.span)?;
    }
    Ok(checked)
}

/// Whether `device`'s compute capability takes maps of `kind` ([`check_device`] without the
/// message; `false` where the attribute cannot be read).
#[inline]
fn device_can_encode(device: Device, kind: Kind) -> bool {
    let needed = if kind == Kind::Wide { 10 } else { 9 };
    device
        .attribute(COMPUTE_CAPABILITY_MAJOR)
        .is_ok_and(|major| major >= needed)
}

/// [`encode`]'s driver call in `context` (made current for it), writing `descriptor`, for a
/// layout [`prepare`] passed.
#[inline]
fn encode_into(
    context: &Context,
    address: DevicePtr,
    layout: &Layout<'_>,
    checked: &Checked,
    descriptor: &mut TensorMapDescriptor,
) -> Result<()> {
    let rank = checked.rank;
    let tensor = TensorSpec {
        data_type: layout.tensor.data_type.code(),
        address: address.0,
        dims: &checked.dims[..rank],
        strides: &checked.strides[..rank - 1],
        element_strides: &checked.element_strides[..rank],
        interleave: layout.tensor.interleave.code(),
        swizzle: layout.tensor.swizzle.code(),
        l2_promotion: layout.tensor.l2_promotion.code(),
        oob_fill: layout.tensor.oob_fill.code(),
    };
    let out = &mut descriptor.0;
    context.with_current(|driver| match &layout.shape {
        Shape::Tiled { box_dims } => {
            driver.tensor_map_encode_tiled(out, &tensor, &box_dims[..rank])
        }
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => driver.tensor_map_encode_im2col(
            out,
            &tensor,
            &Im2colSpec {
                lower,
                upper,
                channels_per_pixel: *channels_per_pixel,
                pixels_per_column: *pixels_per_column,
            },
        ),
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => driver.tensor_map_encode_im2col_wide(
            out,
            &tensor,
            &Im2colWideSpec {
                lower: *lower,
                upper: *upper,
                channels_per_pixel: *channels_per_pixel,
                pixels_per_column: *pixels_per_column,
                mode: mode.code(),
            },
        ),
    })
}

/// Tensor maps need compute capability 9.0, wide im2col 10.0.
#[inline]
fn check_device(device: Device, kind: Kind, name: &'static str) -> Result<()> {
    // The major alone on the encode's path; the minor only for the message.
    let major = device.attribute(COMPUTE_CAPABILITY_MAJOR)?;
    let needed = if kind == Kind::Wide { 10 } else { 9 };
    if major < needed {
        return Err(too_old(device, kind, name, needed));
    }
    Ok(())
}

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const COMPUTE_CAPABILITY_MAJOR: i32 = 75;

#[cold]
fn too_old(device: Device, kind: Kind, name: &'static str, needed: i32) -> Error {
    match device.compute_capability() {
        Err(e) => e,
        Ok((major, minor)) => Error::InvalidArgument {
            name,
            reason: format!(
                "{} need compute capability {needed}.0; device {} is {major}.{minor}",
                if kind == Kind::Wide {
                    "wide im2col tensor maps"
                } else {
                    "tensor maps"
                },
                device.ordinal()
            ),
        },
    }
}

// ---- the checks, pure: CPU-tested by rule --------------------------------------------------

/// Which encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tiled,
    Im2col,
    Wide,
}

/// What all three encodings share, borrowed from the options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tensor<'a> {
    pub(crate) data_type: TensorDataType,
    pub(crate) dims: &'a [u64],
    pub(crate) strides: &'a [u64],
    pub(crate) element_strides: &'a [u32],
    pub(crate) interleave: TensorMapInterleave,
    pub(crate) swizzle: TensorMapSwizzle,
    pub(crate) l2_promotion: TensorMapL2Promotion,
    pub(crate) oob_fill: TensorMapOobFill,
}

/// What each copy moves.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape<'a> {
    Tiled {
        box_dims: &'a [u32],
    },
    Im2col {
        lower: &'a [i32],
        upper: &'a [i32],
        channels_per_pixel: u32,
        pixels_per_column: u32,
    },
    Wide {
        lower: i32,
        upper: i32,
        channels_per_pixel: u32,
        pixels_per_column: u32,
        mode: Im2colWideMode,
    },
}

/// One encoding's layout.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout<'a> {
    pub(crate) kind: Kind,
    pub(crate) tensor: Tensor<'a>,
    pub(crate) shape: Shape<'a>,
}

impl<'a> Layout<'a> {
    pub(crate) fn of_tiled(o: &'a TiledOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Tiled,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Tiled {
                box_dims: &o.box_dims,
            },
        }
    }

    pub(crate) fn of_im2col(o: &'a Im2colOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Im2col,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Im2col {
                lower: &o.lower_corner,
                upper: &o.upper_corner,
                channels_per_pixel: o.channels_per_pixel,
                pixels_per_column: o.pixels_per_column,
            },
        }
    }

    pub(crate) fn of_im2col_wide(o: &'a Im2colWideOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Wide,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Wide {
                lower: o.lower_corner_width,
                upper: o.upper_corner_width,
                channels_per_pixel: o.channels_per_pixel,
                pixels_per_column: o.pixels_per_column,
                mode: o.mode,
            },
        }
    }
}

/// A layout that passed: the arrays the driver reads (defaults filled in), the address
/// alignment it needs, and the bytes the tensor spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) rank: usize,
    pub(crate) dims: [u64; TENSOR_MAP_MAX_RANK],
    pub(crate) strides: [u64; TENSOR_MAP_MAX_RANK - 1],
    pub(crate) element_strides: [u32; TENSOR_MAP_MAX_RANK],
    pub(crate) align: u64,
    pub(crate) span: u64,
}

impl Checked {
    /// Nothing checked yet.
    const EMPTY: Checked = Checked {
        rank: 0,
        dims: [0; TENSOR_MAP_MAX_RANK],
        strides: [0; TENSOR_MAP_MAX_RANK - 1],
        element_strides: [1; TENSOR_MAP_MAX_RANK],
        align: 16,
        span: 0,
    };
}

fn refuse<T>(name: &'static str, reason: String) -> Result<T> {
    Err(Error::InvalidArgument { name, reason })
}

/// Every rule of `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col` and
/// `cuTensorMapEncodeIm2colWide` that does not need the device, in the order the driver
/// documents them: [`fast_check`] on the encode's path, and where it refuses,
/// [`check_detailed`] for the rule and its message.
#[inline]
pub(crate) fn check(layout: &Layout<'_>) -> Result<Checked> {
    match fast_check(layout) {
        Some(checked) => {
            debug_assert_eq!(
                check_detailed(layout).as_ref(),
                Ok(&checked),
                "the fast check passed a layout the detailed check does not"
            );
            Ok(checked)
        }
        None => refused(layout),
    }
}

#[cold]
#[inline(never)]
fn refused(layout: &Layout<'_>) -> Result<Checked> {
    let detailed = check_detailed(layout);
    debug_assert!(
        detailed.is_err(),
        "the fast check refused a layout the detailed check passes"
    );
    detailed
}

/// The swizzles a kind of map of `data_type` takes, where the driver lists them (the packed
/// types, and wide im2col maps); `None` where any is taken.
fn allowed_swizzles(kind: Kind, data_type: TensorDataType) -> Option<&'static [TensorMapSwizzle]> {
    use TensorMapSwizzle as S;
    match (kind, data_type) {
        (Kind::Wide, TensorDataType::U6x16Align16) => Some(&[S::B64, S::B128, S::B128Atom32]),
        (Kind::Wide, TensorDataType::U4x16Align16) => Some(&[S::B128, S::B128Atom32]),
        (Kind::Wide, _) => Some(&[S::B64, S::B128, S::B128Atom32]),
        (_, TensorDataType::U6x16Align16) => {
            Some(&[S::None, S::B128, S::B128Atom32, S::B128Atom64])
        }
        (_, TensorDataType::U4x16Align16) => Some(&[S::None, S::B128, S::B128Atom32]),
        _ => None,
    }
}

/// The bounds of an im2col map's corner offsets for `rank`.
fn corner_range(rank: usize) -> (i32, i32) {
    match rank {
        3 => (-32768, 32767),
        4 => (-128, 127),
        _ => (-16, 15),
    }
}

/// [`check_detailed`]'s rules as one pass with few branches and no messages: the layout's
/// arrays when every rule holds, `None` when one does not (then [`check_detailed`] says which).
/// The unit tests hold the two to the same answers.
#[inline]
pub(crate) fn fast_check(layout: &Layout<'_>) -> Option<Checked> {
    let mut checked = Checked::EMPTY;
    fast_check_into(layout, &mut checked).then_some(checked)
}

/// [`fast_check`] writing into `c`: whether every rule holds (then `c` holds the arrays), for
/// [`prepare`].
#[inline]
pub(crate) fn fast_check_into(layout: &Layout<'_>, c: &mut Checked) -> bool {
    use TensorMapInterleave as I;
    let t = &layout.tensor;
    let kind = layout.kind;
    let rank = t.dims.len();
    let lowest = if kind == Kind::Tiled { 1 } else { 3 };
    if rank < lowest || rank > TENSOR_MAP_MAX_RANK || (t.interleave != I::None && rank < 3) {
        return false;
    }
    let data_type = t.data_type;
    let packed_16 = data_type.is_packed_16();
    let align = if t.interleave == I::B32 || packed_16 {
        32
    } else {
        16
    };
    *c = Checked {
        rank,
        dims: [0; TENSOR_MAP_MAX_RANK],
        strides: [0; TENSOR_MAP_MAX_RANK - 1],
        element_strides: [1; TENSOR_MAP_MAX_RANK],
        align,
        span: 0,
    };
    let mut ok = true;
    for (slot, &d) in c.dims.iter_mut().zip(t.dims) {
        ok &= d.wrapping_sub(1) < 1 << 32;
        *slot = d;
    }
    ok &= !packed_16 || c.dims[0] % 128 == 0;
    ok &= data_type != TensorDataType::U4x16Align8 || c.dims[0] % 2 == 0;
    let bits = data_type.bits_in_memory();
    // Dimension 0 is at most 2^32 here where `ok` holds: no overflow.
    let row_bytes = (c.dims[0].min(1 << 32) * bits).div_ceil(8);
    let outer = rank - 1;
    if t.strides.is_empty() {
        let mut stride = row_bytes;
        for i in 0..outer {
            c.strides[i] = stride;
            stride = stride.saturating_mul(c.dims[i + 1]);
        }
    } else if t.strides.len() == outer {
        c.strides[..outer].copy_from_slice(t.strides);
    } else {
        return false;
    }
    for &s in &c.strides[..outer] {
        ok &= s & (align - 1) == 0 && s < 1 << 40;
    }
    if !t.element_strides.is_empty() {
        if t.element_strides.len() != rank {
            return false;
        }
        for (slot, &e) in c.element_strides.iter_mut().zip(t.element_strides) {
            ok &= e.wrapping_sub(1) < 8;
            *slot = e;
        }
    }
    let inner_bytes = match layout.shape {
        Shape::Tiled { box_dims } => {
            if box_dims.len() != rank {
                return false;
            }
            for (&b, &d) in box_dims.iter().zip(&c.dims) {
                ok &= b.wrapping_sub(1) < 256 && u64::from(b) <= d;
            }
            let inner_bits = u64::from(box_dims[0]) * bits;
            ok &= t.interleave != I::None || inner_bits % 128 == 0;
            ok &= !packed_16 || box_dims[0] == 128;
            inner_bits / 8
        }
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => {
            let spatial = rank - 2;
            if lower.len() != spatial || upper.len() != spatial {
                return false;
            }
            let (low, high) = corner_range(rank);
            for i in 0..spatial {
                let (l, u) = (lower[i], upper[i]);
                ok &= (low..=high).contains(&l) && (low..=high).contains(&u);
                ok &= i128::from(c.dims[1 + i]) - i128::from(l) + i128::from(u) >= 1;
            }
            ok &= channels_per_pixel.wrapping_sub(1) < 256;
            ok &= !packed_16 || channels_per_pixel == 128;
            ok &= pixels_per_column.wrapping_sub(1) < 1024;
            u64::from(channels_per_pixel) * bits / 8
        }
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => {
            ok &= (-32768..=32767).contains(&lower) && (-32768..=32767).contains(&upper);
            ok &= i128::from(c.dims[1]) - i128::from(lower) + i128::from(upper) >= 1;
            ok &= channels_per_pixel.wrapping_sub(1) < 256;
            ok &= !packed_16 || channels_per_pixel == 128;
            ok &= mode != Im2colWideMode::W || pixels_per_column.wrapping_sub(1) < 1024;
            u64::from(channels_per_pixel) * bits / 8
        }
    };
    let swizzle = t.swizzle;
    ok &= t.interleave != I::B32 || swizzle == TensorMapSwizzle::B32;
    ok &= data_type != TensorDataType::U6x16Align16 || t.interleave == I::None;
    ok &= allowed_swizzles(kind, data_type).is_none_or(|allowed| allowed.contains(&swizzle));
    ok &= t.interleave != I::None || swizzle.span().is_none_or(|span| inner_bytes <= span);
    ok &= t.oob_fill != TensorMapOobFill::NanRequestZeroFma || data_type.is_float();
    if !ok {
        return false;
    }
    let mut span = u128::from(row_bytes);
    for i in 1..rank {
        span += u128::from(c.dims[i] - 1) * u128::from(c.strides[i - 1]);
    }
    c.span = u64::try_from(span).unwrap_or(u64::MAX);
    true
}

/// The rules of [`check`], one by one, each refusal naming its field and rule.
pub(crate) fn check_detailed(layout: &Layout<'_>) -> Result<Checked> {
    let t = &layout.tensor;
    let kind = layout.kind;
    let rank = t.dims.len();
    let what = match kind {
        Kind::Tiled => "a tiled tensor map",
        Kind::Im2col => "an im2col tensor map",
        Kind::Wide => "a wide im2col tensor map",
    };
    let lowest = if kind == Kind::Tiled { 1 } else { 3 };
    if rank < lowest || rank > TENSOR_MAP_MAX_RANK {
        return refuse(
            "options.dims",
            format!(
                "{what} has {lowest} to {TENSOR_MAP_MAX_RANK} dimensions; {rank} given \
                 ({:?})",
                t.dims
            ),
        );
    }
    if t.interleave != TensorMapInterleave::None && rank < 3 {
        return refuse(
            "options.interleave",
            format!("an interleaved tensor map has at least 3 dimensions; {rank} given"),
        );
    }
    let packed_16 = t.data_type.is_packed_16();
    let align = if t.interleave == TensorMapInterleave::B32 || packed_16 {
        32
    } else {
        16
    };
    let mut dims = [0u64; TENSOR_MAP_MAX_RANK];
    for (i, &d) in t.dims.iter().enumerate() {
        if d == 0 || d > 1 << 32 {
            return refuse(
                "options.dims",
                format!("dimension {i} is {d}; each is 1 to 2^32"),
            );
        }
        dims[i] = d;
    }
    if packed_16 && dims[0] % 128 != 0 {
        return refuse(
            "options.dims",
            format!(
                "{:?} needs dimension 0 a multiple of 128; it is {}",
                t.data_type, dims[0]
            ),
        );
    }
    if t.data_type == TensorDataType::U4x16Align8 && dims[0] % 2 != 0 {
        return refuse(
            "options.dims",
            format!("U4x16Align8 needs dimension 0 even; it is {}", dims[0]),
        );
    }
    let bits = t.data_type.bits_in_memory();
    // At most 2^32 elements of at most 64 bits: fits easily.
    let row_bytes = (dims[0] * bits).div_ceil(8);
    let stride_multiple = align;
    let mut strides = [0u64; TENSOR_MAP_MAX_RANK - 1];
    if t.strides.is_empty() {
        let mut stride = u128::from(row_bytes);
        for i in 0..rank - 1 {
            strides[i] = u64::try_from(stride).unwrap_or(u64::MAX);
            stride *= u128::from(dims[i + 1]);
        }
    } else if t.strides.len() != rank - 1 {
        return refuse(
            "options.strides",
            format!(
                "{} given; a tensor of {rank} dimensions has {} (one per dimension after \
                 the first), or none for packed rows",
                t.strides.len(),
                rank - 1
            ),
        );
    } else {
        strides[..rank - 1].copy_from_slice(t.strides);
    }
    for (i, &s) in strides[..rank - 1].iter().enumerate() {
        let given = if t.strides.is_empty() {
            " (packed: give strides with padding)"
        } else {
            ""
        };
        if s & (stride_multiple - 1) != 0 {
            return refuse(
                "options.strides",
                format!(
                    "the stride of dimension {} is {s} bytes, not a multiple of \
                     {stride_multiple}{given}",
                    i + 1
                ),
            );
        }
        if s >= 1 << 40 {
            return refuse(
                "options.strides",
                format!(
                    "the stride of dimension {} is {s} bytes; strides are below 2^40{given}",
                    i + 1
                ),
            );
        }
    }
    let mut element_strides = [1u32; TENSOR_MAP_MAX_RANK];
    if !t.element_strides.is_empty() {
        if t.element_strides.len() != rank {
            return refuse(
                "options.element_strides",
                format!(
                    "{} given for a tensor of {rank} dimensions (one each, or none for 1)",
                    t.element_strides.len()
                ),
            );
        }
        for (i, &e) in t.element_strides.iter().enumerate() {
            if e == 0 || e > 8 {
                return refuse(
                    "options.element_strides",
                    format!("element stride {i} is {e}; each is 1 to 8"),
                );
            }
            element_strides[i] = e;
        }
    }
    // The shape: the box's, or the pixels', innermost extent in bytes.
    let inner_bytes = match layout.shape {
        Shape::Tiled { box_dims } => check_box(t, box_dims, &dims[..rank], bits)?,
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => {
            check_corners(rank, &dims, lower, upper)?;
            check_pixels(t, channels_per_pixel, pixels_per_column, true)?;
            u64::from(channels_per_pixel) * bits / 8
        }
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => {
            check_wide_corners(&dims, lower, upper)?;
            check_pixels(
                t,
                channels_per_pixel,
                pixels_per_column,
                mode == Im2colWideMode::W,
            )?;
            u64::from(channels_per_pixel) * bits / 8
        }
    };
    check_swizzle(kind, t, inner_bytes)?;
    if t.oob_fill == TensorMapOobFill::NanRequestZeroFma && !t.data_type.is_float() {
        return refuse(
            "options.oob_fill",
            format!(
                "the NaN fill is for floating-point types; {:?} is not one",
                t.data_type
            ),
        );
    }
    let mut span = u128::from(row_bytes);
    for i in 1..rank {
        span += u128::from(dims[i] - 1) * u128::from(strides[i - 1]);
    }
    Ok(Checked {
        rank,
        dims,
        strides,
        element_strides,
        align,
        span: u64::try_from(span).unwrap_or(u64::MAX),
    })
}

/// A tiled map's box: the innermost extent in bytes, once the box's rules pass.
fn check_box(t: &Tensor<'_>, box_dims: &[u32], dims: &[u64], bits: u64) -> Result<u64> {
    let rank = dims.len();
    if box_dims.len() != rank {
        return refuse(
            "options.box_dims",
            format!(
                "{} given for a tensor of {rank} dimensions (one each)",
                box_dims.len()
            ),
        );
    }
    for (i, (&b, &d)) in box_dims.iter().zip(dims).enumerate() {
        if b == 0 || b > 256 {
            return refuse(
                "options.box_dims",
                format!("box dimension {i} is {b}; each is 1 to 256"),
            );
        }
        if u64::from(b) > d {
            return refuse(
                "options.box_dims",
                format!("box dimension {i} is {b}, larger than the tensor's {d}"),
            );
        }
    }
    let inner_bits = u64::from(box_dims[0]) * bits;
    if t.interleave == TensorMapInterleave::None && inner_bits % 128 != 0 {
        return refuse(
            "options.box_dims",
            format!(
                "the box's innermost dimension is {} elements of {:?}, {} bytes: without \
                 interleave it must be a multiple of 16 bytes",
                box_dims[0],
                t.data_type,
                inner_bits as f64 / 8.0
            ),
        );
    }
    if t.data_type.is_packed_16() && box_dims[0] != 128 {
        return refuse(
            "options.box_dims",
            format!(
                "{:?} needs box dimension 0 to be 128; it is {}",
                t.data_type, box_dims[0]
            ),
        );
    }
    Ok(inner_bits / 8)
}

/// An im2col map's corners: rank - 2 of each, in the range the rank allows, the box not empty.
fn check_corners(rank: usize, dims: &[u64], lower: &[i32], upper: &[i32]) -> Result<()> {
    let spatial = rank - 2;
    let (low, high) = corner_range(rank);
    for (name, corner) in [
        ("options.lower_corner", lower),
        ("options.upper_corner", upper),
    ] {
        if corner.len() != spatial {
            return refuse(
                name,
                format!(
                    "{} offsets given; a tensor of {rank} dimensions has {spatial} spatial \
                     ones (W, H, D: dimensions 1 to {})",
                    corner.len(),
                    rank - 2
                ),
            );
        }
        if let Some((i, &c)) = corner
            .iter()
            .enumerate()
            .find(|(_, &c)| c < low || c > high)
        {
            return refuse(
                name,
                format!("offset {i} is {c}; with {rank} dimensions each is within {low}..={high}"),
            );
        }
    }
    for i in 0..spatial {
        let extent = i128::from(dims[1 + i]) - i128::from(lower[i]) + i128::from(upper[i]);
        if extent < 1 {
            return refuse(
                "options.upper_corner",
                format!(
                    "the bounding box is empty along dimension {}: {} - ({}) + ({}) = \
                     {extent}",
                    1 + i,
                    dims[1 + i],
                    lower[i],
                    upper[i]
                ),
            );
        }
    }
    Ok(())
}

/// A wide im2col map's corners along W.
fn check_wide_corners(dims: &[u64], lower: i32, upper: i32) -> Result<()> {
    for (name, c) in [
        ("options.lower_corner_width", lower),
        ("options.upper_corner_width", upper),
    ] {
        if !(-32768..=32767).contains(&c) {
            return refuse(name, format!("{c} is outside -32768..=32767"));
        }
    }
    let extent = i128::from(dims[1]) - i128::from(lower) + i128::from(upper);
    if extent < 1 {
        return refuse(
            "options.upper_corner_width",
            format!(
                "the bounding box is empty along W: {} - ({lower}) + ({upper}) = {extent}",
                dims[1]
            ),
        );
    }
    Ok(())
}

/// Channels and pixels of an im2col map; `pixels_count` where the pixel count is read.
fn check_pixels(t: &Tensor<'_>, channels: u32, pixels: u32, pixels_count: bool) -> Result<()> {
    if channels == 0 || channels > 256 {
        return refuse(
            "options.channels_per_pixel",
            format!("{channels}; it is 1 to 256"),
        );
    }
    if t.data_type.is_packed_16() && channels != 128 {
        return refuse(
            "options.channels_per_pixel",
            format!(
                "{:?} needs 128 channels per pixel; {channels} given",
                t.data_type
            ),
        );
    }
    if pixels_count && (pixels == 0 || pixels > 1024) {
        return refuse(
            "options.pixels_per_column",
            format!("{pixels}; it is 1 to 1024"),
        );
    }
    Ok(())
}

/// The swizzle against the interleave, the data type and the innermost extent in bytes.
fn check_swizzle(kind: Kind, t: &Tensor<'_>, inner_bytes: u64) -> Result<()> {
    use TensorMapSwizzle as S;
    if t.interleave == TensorMapInterleave::B32 && t.swizzle != S::B32 {
        return refuse(
            "options.swizzle",
            format!(
                "32-byte interleave needs the 32-byte swizzle; {:?} given",
                t.swizzle
            ),
        );
    }
    if t.data_type == TensorDataType::U6x16Align16 && t.interleave != TensorMapInterleave::None {
        return refuse(
            "options.interleave",
            "U6x16Align16 tensors are not interleaved".to_owned(),
        );
    }
    if let Some(allowed) = allowed_swizzles(kind, t.data_type) {
        if !allowed.contains(&t.swizzle) {
            let what = if kind == Kind::Wide {
                format!("a wide im2col tensor map of {:?}", t.data_type)
            } else {
                format!("{:?}", t.data_type)
            };
            return refuse(
                "options.swizzle",
                format!(
                    "{what} takes the swizzles {allowed:?}; {:?} given",
                    t.swizzle
                ),
            );
        }
    }
    if t.interleave == TensorMapInterleave::None {
        if let Some(span) = t.swizzle.span() {
            if inner_bytes > span {
                let extent = if kind == Kind::Tiled {
                    "box's innermost dimension"
                } else {
                    "pixel's channels"
                };
                return refuse(
                    "options.swizzle",
                    format!(
                        "the {extent} is {inner_bytes} bytes, more than the {span}-byte span \
                         of {:?}",
                        t.swizzle
                    ),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
