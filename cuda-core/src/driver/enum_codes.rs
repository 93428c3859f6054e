//! The C enum values the crate passes to the driver, each checked against the CUDA 13 header
//! (through the bindings generated from it): a value typed wrong by hand, or a variant whose
//! implicit discriminant drifted from the header's order, fails here rather than on a GPU.
//! (The CUDA 12 header gives these types the same values; `cargo xtask check-bindings` keeps
//! both binding sets equal to their headers.)

use cuda_sys13 as sys;

use super::PoolLocation;

#[test]
fn every_enum_value_is_the_headers() {
    let cases: &[(u32, u32, &str)] = &[
        // TensorDataType against CUtensorMapDataType.
        (
            crate::tensor_map::TensorDataType::U8.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_UINT8.0,
            "TensorDataType::U8",
        ),
        (
            crate::tensor_map::TensorDataType::U16.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_UINT16.0,
            "TensorDataType::U16",
        ),
        (
            crate::tensor_map::TensorDataType::U32.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_UINT32.0,
            "TensorDataType::U32",
        ),
        (
            crate::tensor_map::TensorDataType::I32.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_INT32.0,
            "TensorDataType::I32",
        ),
        (
            crate::tensor_map::TensorDataType::U64.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_UINT64.0,
            "TensorDataType::U64",
        ),
        (
            crate::tensor_map::TensorDataType::I64.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_INT64.0,
            "TensorDataType::I64",
        ),
        (
            crate::tensor_map::TensorDataType::F16.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_FLOAT16.0,
            "TensorDataType::F16",
        ),
        (
            crate::tensor_map::TensorDataType::F32.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_FLOAT32.0,
            "TensorDataType::F32",
        ),
        (
            crate::tensor_map::TensorDataType::F64.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_FLOAT64.0,
            "TensorDataType::F64",
        ),
        (
            crate::tensor_map::TensorDataType::BF16.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16.0,
            "TensorDataType::BF16",
        ),
        (
            crate::tensor_map::TensorDataType::F32Ftz.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ.0,
            "TensorDataType::F32Ftz",
        ),
        (
            crate::tensor_map::TensorDataType::TF32.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32.0,
            "TensorDataType::TF32",
        ),
        (
            crate::tensor_map::TensorDataType::TF32Ftz.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ.0,
            "TensorDataType::TF32Ftz",
        ),
        (
            crate::tensor_map::TensorDataType::U4x16Align8.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B.0,
            "TensorDataType::U4x16Align8",
        ),
        (
            crate::tensor_map::TensorDataType::U4x16Align16.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B.0,
            "TensorDataType::U4x16Align16",
        ),
        (
            crate::tensor_map::TensorDataType::U6x16Align16.code(),
            sys::CUtensorMapDataType_enum::CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B.0,
            "TensorDataType::U6x16Align16",
        ),
        // TensorMapInterleave against CUtensorMapInterleave.
        (
            crate::tensor_map::TensorMapInterleave::None.code(),
            sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE.0,
            "TensorMapInterleave::None",
        ),
        (
            crate::tensor_map::TensorMapInterleave::B16.code(),
            sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_16B.0,
            "TensorMapInterleave::B16",
        ),
        (
            crate::tensor_map::TensorMapInterleave::B32.code(),
            sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_32B.0,
            "TensorMapInterleave::B32",
        ),
        // TensorMapSwizzle against CUtensorMapSwizzle.
        (
            crate::tensor_map::TensorMapSwizzle::None.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_NONE.0,
            "TensorMapSwizzle::None",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B32.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_32B.0,
            "TensorMapSwizzle::B32",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B64.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_64B.0,
            "TensorMapSwizzle::B64",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B128.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_128B.0,
            "TensorMapSwizzle::B128",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B128Atom32.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B.0,
            "TensorMapSwizzle::B128Atom32",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B128Atom32Flip8.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B.0,
            "TensorMapSwizzle::B128Atom32Flip8",
        ),
        (
            crate::tensor_map::TensorMapSwizzle::B128Atom64.code(),
            sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B.0,
            "TensorMapSwizzle::B128Atom64",
        ),
        // TensorMapL2Promotion against CUtensorMapL2promotion.
        (
            crate::tensor_map::TensorMapL2Promotion::None.code(),
            sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_NONE.0,
            "TensorMapL2Promotion::None",
        ),
        (
            crate::tensor_map::TensorMapL2Promotion::B64.code(),
            sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_64B.0,
            "TensorMapL2Promotion::B64",
        ),
        (
            crate::tensor_map::TensorMapL2Promotion::B128.code(),
            sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_128B.0,
            "TensorMapL2Promotion::B128",
        ),
        (
            crate::tensor_map::TensorMapL2Promotion::B256.code(),
            sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_256B.0,
            "TensorMapL2Promotion::B256",
        ),
        // TensorMapOobFill against CUtensorMapFloatOOBfill.
        (
            crate::tensor_map::TensorMapOobFill::Zero.code(),
            sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE.0,
            "TensorMapOobFill::Zero",
        ),
        (
            crate::tensor_map::TensorMapOobFill::NanRequestZeroFma.code(),
            sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA.0,
            "TensorMapOobFill::NanRequestZeroFma",
        ),
        // Im2colWideMode against CUtensorMapIm2ColWideMode.
        (
            crate::tensor_map::Im2colWideMode::W.code(),
            sys::CUtensorMapIm2ColWideMode_enum::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W.0,
            "Im2colWideMode::W",
        ),
        (
            crate::tensor_map::Im2colWideMode::W128.code(),
            sys::CUtensorMapIm2ColWideMode_enum::CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128.0,
            "Im2colWideMode::W128",
        ),
        // ConditionalKind against CUgraphConditionalNodeType.
        (
            crate::ConditionalKind::If.code(),
            sys::CUgraphConditionalNodeType_enum::CU_GRAPH_COND_TYPE_IF.0,
            "ConditionalKind::If",
        ),
        (
            crate::ConditionalKind::IfElse.code(),
            sys::CUgraphConditionalNodeType_enum::CU_GRAPH_COND_TYPE_IF.0,
            "ConditionalKind::IfElse",
        ),
        (
            crate::ConditionalKind::While.code(),
            sys::CUgraphConditionalNodeType_enum::CU_GRAPH_COND_TYPE_WHILE.0,
            "ConditionalKind::While",
        ),
        (
            crate::ConditionalKind::Switch.code(),
            sys::CUgraphConditionalNodeType_enum::CU_GRAPH_COND_TYPE_SWITCH.0,
            "ConditionalKind::Switch",
        ),
        // AddressMode against CUaddress_mode.
        (
            crate::texture::AddressMode::Wrap.code(),
            sys::CUaddress_mode_enum::CU_TR_ADDRESS_MODE_WRAP.0,
            "AddressMode::Wrap",
        ),
        (
            crate::texture::AddressMode::Clamp.code(),
            sys::CUaddress_mode_enum::CU_TR_ADDRESS_MODE_CLAMP.0,
            "AddressMode::Clamp",
        ),
        (
            crate::texture::AddressMode::Mirror.code(),
            sys::CUaddress_mode_enum::CU_TR_ADDRESS_MODE_MIRROR.0,
            "AddressMode::Mirror",
        ),
        (
            crate::texture::AddressMode::Border.code(),
            sys::CUaddress_mode_enum::CU_TR_ADDRESS_MODE_BORDER.0,
            "AddressMode::Border",
        ),
        // FilterMode against CUfilter_mode.
        (
            crate::texture::FilterMode::Point.code(),
            sys::CUfilter_mode_enum::CU_TR_FILTER_MODE_POINT.0,
            "FilterMode::Point",
        ),
        (
            crate::texture::FilterMode::Linear.code(),
            sys::CUfilter_mode_enum::CU_TR_FILTER_MODE_LINEAR.0,
            "FilterMode::Linear",
        ),
        // ArrayFormat against CUarray_format.
        (
            crate::texture::ArrayFormat::U8.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_UNSIGNED_INT8.0,
            "ArrayFormat::U8",
        ),
        (
            crate::texture::ArrayFormat::U16.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_UNSIGNED_INT16.0,
            "ArrayFormat::U16",
        ),
        (
            crate::texture::ArrayFormat::U32.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_UNSIGNED_INT32.0,
            "ArrayFormat::U32",
        ),
        (
            crate::texture::ArrayFormat::I8.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_SIGNED_INT8.0,
            "ArrayFormat::I8",
        ),
        (
            crate::texture::ArrayFormat::I16.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_SIGNED_INT16.0,
            "ArrayFormat::I16",
        ),
        (
            crate::texture::ArrayFormat::I32.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_SIGNED_INT32.0,
            "ArrayFormat::I32",
        ),
        (
            crate::texture::ArrayFormat::F16.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_HALF.0,
            "ArrayFormat::F16",
        ),
        (
            crate::texture::ArrayFormat::F32.code(),
            sys::CUarray_format_enum::CU_AD_FORMAT_FLOAT.0,
            "ArrayFormat::F32",
        ),
        // AccessProperty against CUaccessProperty.
        (
            crate::AccessProperty::Normal.code(),
            sys::CUaccessProperty_enum::CU_ACCESS_PROPERTY_NORMAL.0,
            "AccessProperty::Normal",
        ),
        (
            crate::AccessProperty::Streaming.code(),
            sys::CUaccessProperty_enum::CU_ACCESS_PROPERTY_STREAMING.0,
            "AccessProperty::Streaming",
        ),
        (
            crate::AccessProperty::Persisting.code(),
            sys::CUaccessProperty_enum::CU_ACCESS_PROPERTY_PERSISTING.0,
            "AccessProperty::Persisting",
        ),
        // ClusterSchedulingPolicy against CUclusterSchedulingPolicy.
        (
            crate::ClusterSchedulingPolicy::Default.code(),
            sys::CUclusterSchedulingPolicy_enum::CU_CLUSTER_SCHEDULING_POLICY_DEFAULT.0,
            "ClusterSchedulingPolicy::Default",
        ),
        (
            crate::ClusterSchedulingPolicy::Spread.code(),
            sys::CUclusterSchedulingPolicy_enum::CU_CLUSTER_SCHEDULING_POLICY_SPREAD.0,
            "ClusterSchedulingPolicy::Spread",
        ),
        (
            crate::ClusterSchedulingPolicy::LoadBalancing.code(),
            sys::CUclusterSchedulingPolicy_enum::CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING.0,
            "ClusterSchedulingPolicy::LoadBalancing",
        ),
        // SrcAccessOrder against CUmemcpySrcAccessOrder.
        (
            crate::memory::SrcAccessOrder::Stream.code(),
            sys::CUmemcpySrcAccessOrder_enum::CU_MEMCPY_SRC_ACCESS_ORDER_STREAM.0,
            "SrcAccessOrder::Stream",
        ),
        (
            crate::memory::SrcAccessOrder::DuringCall.code(),
            sys::CUmemcpySrcAccessOrder_enum::CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL.0,
            "SrcAccessOrder::DuringCall",
        ),
        (
            crate::memory::SrcAccessOrder::Any.code(),
            sys::CUmemcpySrcAccessOrder_enum::CU_MEMCPY_SRC_ACCESS_ORDER_ANY.0,
            "SrcAccessOrder::Any",
        ),
        // KernelAttribute against CUfunction_attribute (signed in the driver's calls).
        (
            crate::KernelAttribute::MaxThreadsPerBlock.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK.0,
            "KernelAttribute::MaxThreadsPerBlock",
        ),
        (
            crate::KernelAttribute::SharedSizeBytes.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES.0,
            "KernelAttribute::SharedSizeBytes",
        ),
        (
            crate::KernelAttribute::ConstSizeBytes.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES.0,
            "KernelAttribute::ConstSizeBytes",
        ),
        (
            crate::KernelAttribute::LocalSizeBytes.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES.0,
            "KernelAttribute::LocalSizeBytes",
        ),
        (
            crate::KernelAttribute::NumRegs.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NUM_REGS.0,
            "KernelAttribute::NumRegs",
        ),
        (
            crate::KernelAttribute::PtxVersion.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_PTX_VERSION.0,
            "KernelAttribute::PtxVersion",
        ),
        (
            crate::KernelAttribute::BinaryVersion.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_BINARY_VERSION.0,
            "KernelAttribute::BinaryVersion",
        ),
        (
            crate::KernelAttribute::CacheModeCa.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA.0,
            "KernelAttribute::CacheModeCa",
        ),
        (
            crate::KernelAttribute::MaxDynamicSharedSizeBytes.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.0,
            "KernelAttribute::MaxDynamicSharedSizeBytes",
        ),
        (
            crate::KernelAttribute::PreferredSharedMemoryCarveout.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT.0,
            "KernelAttribute::PreferredSharedMemoryCarveout",
        ),
        (
            crate::KernelAttribute::ClusterSizeMustBeSet.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET.0,
            "KernelAttribute::ClusterSizeMustBeSet",
        ),
        (
            crate::KernelAttribute::RequiredClusterWidth.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH.0,
            "KernelAttribute::RequiredClusterWidth",
        ),
        (
            crate::KernelAttribute::RequiredClusterHeight.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT.0,
            "KernelAttribute::RequiredClusterHeight",
        ),
        (
            crate::KernelAttribute::RequiredClusterDepth.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH.0,
            "KernelAttribute::RequiredClusterDepth",
        ),
        (
            crate::KernelAttribute::NonPortableClusterSizeAllowed.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.0,
            "KernelAttribute::NonPortableClusterSizeAllowed",
        ),
        (
            crate::KernelAttribute::ClusterSchedulingPolicyPreference.code() as u32,
            sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
                .0,
            "KernelAttribute::ClusterSchedulingPolicyPreference",
        ),
        // PoolLocation's location types against CUmemLocationType.
        (
            PoolLocation::Unspecified.code().0,
            sys::CUmemLocationType_enum::CU_MEM_LOCATION_TYPE_INVALID.0,
            "PoolLocation::Unspecified",
        ),
        (
            PoolLocation::Device(3).code().0,
            sys::CUmemLocationType_enum::CU_MEM_LOCATION_TYPE_DEVICE.0,
            "PoolLocation::Device",
        ),
        (
            PoolLocation::Host.code().0,
            sys::CUmemLocationType_enum::CU_MEM_LOCATION_TYPE_HOST.0,
            "PoolLocation::Host",
        ),
        (
            PoolLocation::HostNuma(1).code().0,
            sys::CUmemLocationType_enum::CU_MEM_LOCATION_TYPE_HOST_NUMA.0,
            "PoolLocation::HostNuma",
        ),
    ];
    let wrong: Vec<String> = cases
        .iter()
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
