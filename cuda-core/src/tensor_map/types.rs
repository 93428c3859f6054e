//! The element types and the enumerations of a tensor map's layout.

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
    pub(crate) fn code(self) -> u32 {
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

    pub(super) fn is_float(self) -> bool {
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
    pub(super) fn is_packed_16(self) -> bool {
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
    pub(crate) fn code(self) -> u32 {
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
    pub(crate) fn code(self) -> u32 {
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
    pub(crate) fn code(self) -> u32 {
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
    pub(crate) fn code(self) -> u32 {
        match self {
            TensorMapOobFill::Zero => 0,
            TensorMapOobFill::NanRequestZeroFma => 1,
        }
    }
}

/// How [`Im2colWideOptions`](super::Im2colWideOptions) loads along W
/// (`CUtensorMapIm2ColWideMode`).
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
    pub(crate) fn code(self) -> u32 {
        match self {
            Im2colWideMode::W => 0,
            Im2colWideMode::W128 => 1,
        }
    }
}
