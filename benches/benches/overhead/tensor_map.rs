//! `tensor_map_encode`.

use super::*;

/// `tensor_map_encode`: the encoding of a tiled tensor map, raw and through cuda-core (which
/// checks every rule, makes the buffer's context current where it is not, and holds the
/// buffer). cudarc has no tensor maps.
pub(super) fn tensor_map_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core) {
    use cuda_core::tensor_map::{
        TensorDataType, TensorMap, TensorMapLayout, TensorMapSwizzle, TiledOptions,
    };

    /// A `CUtensorMap`'s bytes, aligned as the driver needs.
    #[repr(C, align(128))]
    struct Descriptor([u64; 16]);

    const N: u64 = 1024;
    let matrix = Arc::new(
        core.memory
            .allocate((N * N * 4) as usize, &core.stream)
            .expect("the matrix"),
    );
    let options = TiledOptions::new(TensorDataType::F32, &[N, N], &[32, 32])
        .with_swizzle(TensorMapSwizzle::B128);
    // The same call, field by field: CU_TENSOR_MAP_DATA_TYPE_FLOAT32 (7), rank 2, packed rows,
    // element strides 1, no interleave, CU_TENSOR_MAP_SWIZZLE_128B (3), no L2 promotion, zero
    // fill.
    let (dims, strides, boxes, element_strides) = ([N, N], [N * 4], [32u32, 32], [1u32, 1]);
    let mut out = Descriptor([0; 16]);
    let address = matrix.ptr().0 as *mut c_void;
    Case::new("tensor_map_encode")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: a 128-byte aligned descriptor, arrays of the rank's length.
                let status = unsafe {
                    d.cuTensorMapEncodeTiled(
                        (&mut out as *mut Descriptor).cast(),
                        7,
                        2,
                        address,
                        dims.as_ptr(),
                        strides.as_ptr(),
                        boxes.as_ptr(),
                        element_strides.as_ptr(),
                        0,
                        3,
                        0,
                        0,
                    )
                };
                check(status, "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(TensorMap::tiled(&matrix, 0, &options).unwrap()));
        })
        .run(c);

    // The same encoding with the layout checked once (`TensorMapLayout`): per map, only the
    // buffer's device, the address's alignment and the tensor's extent are checked.
    let layout = TensorMapLayout::tiled(core.device, &options).expect("the layout");
    Case::new("tensor_map_encode_layout")
        .variant("raw", |b| {
            b.iter(|| {
                // SAFETY: as above.
                let status = unsafe {
                    d.cuTensorMapEncodeTiled(
                        (&mut out as *mut Descriptor).cast(),
                        7,
                        2,
                        address,
                        dims.as_ptr(),
                        strides.as_ptr(),
                        boxes.as_ptr(),
                        element_strides.as_ptr(),
                        0,
                        3,
                        0,
                        0,
                    )
                };
                check(status, "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(TensorMap::with_layout(&matrix, 0, &layout).unwrap()));
        })
        .run(c);
}
