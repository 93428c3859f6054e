//! `tensor_map_encode` and `tensor_map_encode_layout`.

use super::*;

use cuda_core::tensor_map::{
    TensorDataType, TensorMap, TensorMapLayout, TensorMapSwizzle, TiledOptions,
};

/// A `CUtensorMap`'s bytes, aligned as the driver needs.
#[repr(C, align(128))]
struct Descriptor([u64; 16]);

/// The matrix's side, in `f32`s.
const N: u64 = 1024;

/// The matrix the maps describe, and cuda-core's options for it: 32 x 32 boxes of `f32`,
/// 128-byte swizzle.
fn matrix_and_options(core: &Core) -> (Arc<cuda_core::Buffer>, TiledOptions) {
    let matrix = Arc::new(
        core.memory
            .allocate((N * N * 4) as usize, &core.stream)
            .expect("the matrix"),
    );
    let options = TiledOptions::new(TensorDataType::F32, &[N, N], &[32, 32])
        .with_swizzle(TensorMapSwizzle::B128);
    (matrix, options)
}

/// The raw encoding of the same map as `matrix_and_options`' at `address`, field by field:
/// CU_TENSOR_MAP_DATA_TYPE_FLOAT32 (7), rank 2, packed rows, element strides 1, no
/// interleave, CU_TENSOR_MAP_SWIZZLE_128B (3), no L2 promotion, zero fill. The driver's status.
#[inline(always)]
fn encode_raw<R: RawDriver>(d: &R, out: &mut Descriptor, address: *mut c_void) -> u32 {
    let (dims, strides, boxes, element_strides) = ([N, N], [N * 4], [32u32, 32], [1u32, 1]);
    // SAFETY: a 128-byte aligned descriptor, arrays of the rank's length.
    unsafe {
        d.cuTensorMapEncodeTiled(
            (out as *mut Descriptor).cast(),
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
    }
}

/// `tensor_map_encode`: the encoding of a tiled tensor map, raw and through cuda-core (which
/// checks every rule, makes the buffer's context current where it is not, and holds the
/// buffer). cudarc has no tensor maps.
pub(super) fn tensor_map_cases<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core) {
    let (matrix, options) = matrix_and_options(core);
    let mut out = Descriptor([0; 16]);
    let address = matrix.ptr().0 as *mut c_void;
    Case::new("tensor_map_encode")
        .variant("raw", |b| {
            b.iter(|| {
                check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(TensorMap::tiled(&matrix, 0, &options).unwrap()));
        })
        .run(c);

    // The same encoding with the layout checked once (`TensorMapLayout`), into one map kept
    // (`TensorMap::reencode`), as raw encodes into one descriptor: per encoding, only the
    // buffer's device, the address's alignment and the tensor's extent are checked. (A new
    // map per encoding, `TensorMap::with_layout`, is `diag_tensor_map_encode`'s `cuda-core`.)
    let layout = TensorMapLayout::tiled(core.device, &options).expect("the layout");
    let mut map = TensorMap::with_layout(&matrix, 0, &layout).expect("a map");
    Case::new("tensor_map_encode_layout")
        .variant("raw", |b| {
            b.iter(|| {
                check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| {
                map.reencode(&matrix, 0, &layout).unwrap();
                black_box(&mut map);
            });
        })
        .run(c);
}

/// `diag_tensor_map_encode` (with `CUDA_CORE_BENCH_DIAGNOSE`): is the layout encoding's gap
/// the current-context read cuda-core makes before the driver (`raw+get-current`), the buffer
/// the map keeps (`raw+arc`: an `Arc` clone and drop), the map made and passed out as a
/// value (`raw+fresh-out`, `map-clone`) against one map encoded again in place (`reencode`),
/// and does the driver need a current context at all
/// (`raw-no-context`: the raw call with none current, run only where the driver encodes
/// then, with the same bytes)?
pub(super) fn tensor_map_diagnose<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core) {
    let (matrix, options) = matrix_and_options(core);
    let layout = TensorMapLayout::tiled(core.device, &options).expect("the layout");
    let address = matrix.ptr().0 as *mut c_void;
    let mut out = Descriptor([0; 16]);
    let mut context = null_mut();
    // SAFETY: a writable out-pointer.
    check(
        unsafe { d.cuCtxGetCurrent(&mut context) },
        "cuCtxGetCurrent",
    );
    check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
    let with_context = out.0;
    let without = {
        let mut other = Descriptor([0; 16]);
        // SAFETY: no context current for the one call, then the one that was.
        let status = unsafe {
            check(d.cuCtxSetCurrent(null_mut()), "cuCtxSetCurrent");
            let status = encode_raw(d, &mut other, address);
            check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
            status
        };
        let same = other.0 == with_context;
        println!(
            "diag_tensor_map_encode: without a current context the driver returns {status}; \
             the bytes are {} those encoded with one",
            if same { "the same as" } else { "not" }
        );
        status == SUCCESS && same
    };
    let mut case = Case::new("diag_tensor_map_encode")
        .variant("raw", |b| {
            let mut out = Descriptor([0; 16]);
            b.iter(|| {
                check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        })
        .variant("raw+get-current", |b| {
            let mut out = Descriptor([0; 16]);
            b.iter(|| {
                let mut current = null_mut();
                // SAFETY: a writable out-pointer.
                check(
                    unsafe { d.cuCtxGetCurrent(&mut current) },
                    "cuCtxGetCurrent",
                );
                black_box(current);
                check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
        });
    // The map keeps its buffer: one `Arc` clone and drop per map.
    case = case.variant("raw+arc", |b| {
        let mut out = Descriptor([0; 16]);
        b.iter(|| {
            let kept = black_box(Arc::clone(&matrix));
            check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
            black_box(&mut out);
            drop(kept);
        });
    });
    if without {
        case = case.variant("raw-no-context", |b| {
            // SAFETY: no context current while this variant runs, restored after it.
            check(unsafe { d.cuCtxSetCurrent(null_mut()) }, "cuCtxSetCurrent");
            let mut out = Descriptor([0; 16]);
            b.iter(|| {
                check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
                black_box(&mut out);
            });
            // SAFETY: the context that was current.
            check(unsafe { d.cuCtxSetCurrent(context) }, "cuCtxSetCurrent");
        });
    }
    // What handling a map as a value costs, without the driver: a new zeroed descriptor per
    // encoding, passed out by value (`raw+fresh-out`), and a map's clone and drop alone
    // (`map-clone`: the descriptor copied, the buffer's `Arc` cloned and dropped).
    case = case.variant("raw+fresh-out", |b| {
        b.iter(|| {
            let mut out = Descriptor([0; 16]);
            check(encode_raw(d, &mut out, address), "cuTensorMapEncodeTiled");
            black_box(out)
        });
    });
    // An `Arc`'s clone and drop alone, with nothing between them to hide their atomics.
    case = case.variant("arc-alone", |b| {
        b.iter(|| black_box(Arc::clone(&matrix)));
    });
    case = case.variant("map-clone", |b| {
        let map = TensorMap::with_layout(&matrix, 0, &layout).expect("a map");
        b.iter(|| black_box(map.clone()));
    });
    case = case.variant("reencode", |b| {
        let mut map = TensorMap::with_layout(&matrix, 0, &layout).expect("a map");
        b.iter(|| {
            map.reencode(&matrix, 0, &layout).unwrap();
            black_box(&mut map);
        });
    });
    case.variant("cuda-core", |b| {
        b.iter(|| black_box(TensorMap::with_layout(&matrix, 0, &layout).unwrap()));
    })
    .run(c);
}
