//! [`DataType`] and [`Element`]: the values NCCL reduces and moves, named by their Rust type.

use std::fmt;

use crate::memory::buffer::Pod;

/// An element type of NCCL's (`ncclDataType_t`): one per [`Element`] type.
#[doc(alias = "ncclDataType_t")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `ncclInt8`: `i8`.
    Int8,
    /// `ncclUint8`: `u8`.
    Uint8,
    /// `ncclInt32`: `i32`.
    Int32,
    /// `ncclUint32`: `u32`.
    Uint32,
    /// `ncclInt64`: `i64`.
    Int64,
    /// `ncclUint64`: `u64`.
    Uint64,
    /// `ncclFloat16`: `half::f16` (feature `half`).
    Float16,
    /// `ncclFloat32`: `f32`.
    Float32,
    /// `ncclFloat64`: `f64`.
    Float64,
    /// `ncclBfloat16`: `half::bf16` (feature `half`).
    Bfloat16,
    /// `ncclFloat8e4m3`: `float8::F8E4M3` (feature `float8`). An NCCL without FP8 refuses it
    /// (`ncclInvalidArgument`).
    Float8E4M3,
    /// `ncclFloat8e5m2`: `float8::F8E5M2` (feature `float8`); as above.
    Float8E5M2,
}

impl DataType {
    /// The `ncclDataType_t` value (checked against `nccl.h` by the driver layer's tests).
    pub(crate) fn code(self) -> i32 {
        match self {
            DataType::Int8 => 0,
            DataType::Uint8 => 1,
            DataType::Int32 => 2,
            DataType::Uint32 => 3,
            DataType::Int64 => 4,
            DataType::Uint64 => 5,
            DataType::Float16 => 6,
            DataType::Float32 => 7,
            DataType::Float64 => 8,
            DataType::Bfloat16 => 9,
            DataType::Float8E4M3 => 10,
            DataType::Float8E5M2 => 11,
        }
    }

    /// The header's name of the value (`ncclFloat32`).
    pub fn name(self) -> &'static str {
        match self {
            DataType::Int8 => "ncclInt8",
            DataType::Uint8 => "ncclUint8",
            DataType::Int32 => "ncclInt32",
            DataType::Uint32 => "ncclUint32",
            DataType::Int64 => "ncclInt64",
            DataType::Uint64 => "ncclUint64",
            DataType::Float16 => "ncclFloat16",
            DataType::Float32 => "ncclFloat32",
            DataType::Float64 => "ncclFloat64",
            DataType::Bfloat16 => "ncclBfloat16",
            DataType::Float8E4M3 => "ncclFloat8e4m3",
            DataType::Float8E5M2 => "ncclFloat8e5m2",
        }
    }

    /// The size of one value in bytes.
    pub fn size(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 | DataType::Float8E4M3 | DataType::Float8E5M2 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }

    /// Every data type, in code order.
    pub const ALL: [DataType; 12] = [
        DataType::Int8,
        DataType::Uint8,
        DataType::Int32,
        DataType::Uint32,
        DataType::Int64,
        DataType::Uint64,
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Bfloat16,
        DataType::Float8E4M3,
        DataType::Float8E5M2,
    ];
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A buffer element NCCL reduces and moves: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`, with the `half` feature `half::f16` and `half::bf16`, and with the `float8` feature
/// `float8::F8E4M3` and `float8::F8E5M2`. A collective's type
/// parameter (`comm.all_reduce::<f32>(...)`) says how it reads the buffers' bytes: their
/// sizes must be whole numbers of it, and their addresses aligned to it. Sealed: NCCL knows
/// no other types.
pub trait Element: Pod + sealed::Sealed {
    /// NCCL's name for the type.
    const DATA_TYPE: DataType;
}

macro_rules! element {
    ($($t:ty => $kind:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DATA_TYPE: DataType = DataType::$kind;
        }
    )*};
}
element!(
    i8 => Int8,
    u8 => Uint8,
    i32 => Int32,
    u32 => Uint32,
    i64 => Int64,
    u64 => Uint64,
    f32 => Float32,
    f64 => Float64,
);
#[cfg(feature = "half")]
element!(half::f16 => Float16, half::bf16 => Bfloat16);
#[cfg(feature = "float8")]
element!(float8::F8E4M3 => Float8E4M3, float8::F8E5M2 => Float8E5M2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_the_headers() {
        for (i, data_type) in DataType::ALL.iter().enumerate() {
            assert_eq!(data_type.code(), i as i32);
            assert_eq!(
                crate::driver::nccl::codes::data_type(data_type.name()),
                Some(data_type.code() as u32),
                "{data_type}"
            );
        }
    }

    #[test]
    fn each_element_is_its_data_types_size() {
        fn size_of<T: Element>() -> (usize, usize) {
            (std::mem::size_of::<T>(), T::DATA_TYPE.size())
        }
        for (rust, nccl) in [
            size_of::<i8>(),
            size_of::<u8>(),
            size_of::<i32>(),
            size_of::<u32>(),
            size_of::<i64>(),
            size_of::<u64>(),
            size_of::<f32>(),
            size_of::<f64>(),
        ] {
            assert_eq!(rust, nccl);
        }
        #[cfg(feature = "half")]
        {
            assert_eq!(size_of::<half::f16>(), (2, 2));
            assert_eq!(half::bf16::DATA_TYPE, DataType::Bfloat16);
        }
        // Bugs caught: FP8 named as another NCCL type, or counted as wider than a byte.
        #[cfg(feature = "float8")]
        {
            assert_eq!(size_of::<float8::F8E4M3>(), (1, 1));
            assert_eq!(size_of::<float8::F8E5M2>(), (1, 1));
            assert_eq!(float8::F8E4M3::DATA_TYPE, DataType::Float8E4M3);
            assert_eq!(float8::F8E5M2::DATA_TYPE, DataType::Float8E5M2);
        }
    }
}
