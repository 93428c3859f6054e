//! The C enum values the crate passes to the driver, each checked against the CUDA 13 header
//! (through the bindings generated from it): a value typed wrong by hand, or a variant whose
//! implicit discriminant drifted from the header's order, fails here rather than on a GPU.
//! (The CUDA 12 header gives these types the same values; `cargo xtask check-bindings` keeps
//! both binding sets equal to their headers.)

use cuda_sys13 as sys;

use super::PoolLocation;
use crate::memory::SrcAccessOrder;
use crate::tensor_map::{
    Im2colWideMode, TensorDataType, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapSwizzle,
};
use crate::texture::{AddressMode, ArrayFormat, FilterMode};
use crate::{AccessProperty, ClusterSchedulingPolicy, ConditionalKind, KernelAttribute};

/// A code as the header's value: most codes are of the header's unsigned type already; a
/// function attribute's is signed, as the driver's calls take it; a pool location's is its
/// location type beside an id.
trait HeaderValue {
    fn header_value(self) -> u32;
}

impl HeaderValue for u32 {
    fn header_value(self) -> u32 {
        self
    }
}

impl HeaderValue for i32 {
    fn header_value(self) -> u32 {
        self as u32
    }
}

impl HeaderValue for (u32, i32) {
    fn header_value(self) -> u32 {
        self.0
    }
}

/// `fn cases()`, the rows of `every_enum_value_is_the_headers`, one line each: under
/// `Type against CUtype { .. }`, the row `Variant => CONSTANT` pairs the code the crate passes
/// for `Type::Variant` with the header's `CUtype::CONSTANT`.
macro_rules! cases {
    ($($type:ident against $header:ident {
        $($variant:ident $(($argument:literal))? => $constant:ident,)*
    })*) => {
        /// `(ours, the header's, the variant)` for every row.
        fn cases() -> Vec<(u32, u32, &'static str)> {
            vec![$($((
                $type::$variant $(($argument))?.code().header_value(),
                sys::$header::$constant.0,
                concat!(stringify!($type), "::", stringify!($variant)),
            ),)*)*]
        }
    };
}

cases! {
    TensorDataType against CUtensorMapDataType {
        U8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
        U16 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
        U32 => CU_TENSOR_MAP_DATA_TYPE_UINT32,
        I32 => CU_TENSOR_MAP_DATA_TYPE_INT32,
        U64 => CU_TENSOR_MAP_DATA_TYPE_UINT64,
        I64 => CU_TENSOR_MAP_DATA_TYPE_INT64,
        F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        F64 => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        BF16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        F32Ftz => CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        TF32 => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        TF32Ftz => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        U4x16Align8 => CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B,
        U4x16Align16 => CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B,
        U6x16Align16 => CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B,
    }
    TensorMapInterleave against CUtensorMapInterleave {
        None => CU_TENSOR_MAP_INTERLEAVE_NONE,
        B16 => CU_TENSOR_MAP_INTERLEAVE_16B,
        B32 => CU_TENSOR_MAP_INTERLEAVE_32B,
    }
    TensorMapSwizzle against CUtensorMapSwizzle {
        None => CU_TENSOR_MAP_SWIZZLE_NONE,
        B32 => CU_TENSOR_MAP_SWIZZLE_32B,
        B64 => CU_TENSOR_MAP_SWIZZLE_64B,
        B128 => CU_TENSOR_MAP_SWIZZLE_128B,
        B128Atom32 => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B,
        B128Atom32Flip8 => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B,
        B128Atom64 => CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B,
    }
    TensorMapL2Promotion against CUtensorMapL2promotion {
        None => CU_TENSOR_MAP_L2_PROMOTION_NONE,
        B64 => CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        B128 => CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        B256 => CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }
    TensorMapOobFill against CUtensorMapFloatOOBfill {
        Zero => CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        NanRequestZeroFma => CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
    }
    Im2colWideMode against CUtensorMapIm2ColWideMode {
        W => CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
        W128 => CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128,
    }
    ConditionalKind against CUgraphConditionalNodeType {
        If => CU_GRAPH_COND_TYPE_IF,
        IfElse => CU_GRAPH_COND_TYPE_IF,
        While => CU_GRAPH_COND_TYPE_WHILE,
        Switch => CU_GRAPH_COND_TYPE_SWITCH,
    }
    AddressMode against CUaddress_mode {
        Wrap => CU_TR_ADDRESS_MODE_WRAP,
        Clamp => CU_TR_ADDRESS_MODE_CLAMP,
        Mirror => CU_TR_ADDRESS_MODE_MIRROR,
        Border => CU_TR_ADDRESS_MODE_BORDER,
    }
    FilterMode against CUfilter_mode {
        Point => CU_TR_FILTER_MODE_POINT,
        Linear => CU_TR_FILTER_MODE_LINEAR,
    }
    ArrayFormat against CUarray_format {
        U8 => CU_AD_FORMAT_UNSIGNED_INT8,
        U16 => CU_AD_FORMAT_UNSIGNED_INT16,
        U32 => CU_AD_FORMAT_UNSIGNED_INT32,
        I8 => CU_AD_FORMAT_SIGNED_INT8,
        I16 => CU_AD_FORMAT_SIGNED_INT16,
        I32 => CU_AD_FORMAT_SIGNED_INT32,
        F16 => CU_AD_FORMAT_HALF,
        F32 => CU_AD_FORMAT_FLOAT,
    }
    AccessProperty against CUaccessProperty {
        Normal => CU_ACCESS_PROPERTY_NORMAL,
        Streaming => CU_ACCESS_PROPERTY_STREAMING,
        Persisting => CU_ACCESS_PROPERTY_PERSISTING,
    }
    ClusterSchedulingPolicy against CUclusterSchedulingPolicy {
        Default => CU_CLUSTER_SCHEDULING_POLICY_DEFAULT,
        Spread => CU_CLUSTER_SCHEDULING_POLICY_SPREAD,
        LoadBalancing => CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING,
    }
    SrcAccessOrder against CUmemcpySrcAccessOrder {
        Stream => CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
        DuringCall => CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL,
        Any => CU_MEMCPY_SRC_ACCESS_ORDER_ANY,
    }
    KernelAttribute against CUfunction_attribute {
        MaxThreadsPerBlock => CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        SharedSizeBytes => CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        ConstSizeBytes => CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
        LocalSizeBytes => CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
        NumRegs => CU_FUNC_ATTRIBUTE_NUM_REGS,
        PtxVersion => CU_FUNC_ATTRIBUTE_PTX_VERSION,
        BinaryVersion => CU_FUNC_ATTRIBUTE_BINARY_VERSION,
        CacheModeCa => CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
        MaxDynamicSharedSizeBytes => CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        PreferredSharedMemoryCarveout => CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
        ClusterSizeMustBeSet => CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
        RequiredClusterWidth => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        RequiredClusterHeight => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        RequiredClusterDepth => CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
        NonPortableClusterSizeAllowed => CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
        ClusterSchedulingPolicyPreference => CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
    }
    PoolLocation against CUmemLocationType {
        Unspecified => CU_MEM_LOCATION_TYPE_INVALID,
        Device(3) => CU_MEM_LOCATION_TYPE_DEVICE,
        Host => CU_MEM_LOCATION_TYPE_HOST,
        HostNuma(1) => CU_MEM_LOCATION_TYPE_HOST_NUMA,
    }
}

#[test]
fn every_enum_value_is_the_headers() {
    let wrong: Vec<String> = cases()
        .into_iter()
        .filter(|(ours, header, _)| ours != header)
        .map(|(ours, header, name)| format!("{name}: {ours}, the header says {header}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_pool_location_carries_its_id() {
    // The id beside the type: a device's ordinal, a NUMA node's number, 0 otherwise.
    assert_eq!(PoolLocation::Device(3).code().1, 3);
    assert_eq!(PoolLocation::HostNuma(1).code().1, 1);
    assert_eq!(PoolLocation::Host.code().1, 0);
}
