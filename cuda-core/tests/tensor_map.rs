//! Tensor maps: what reaches `cuTensorMapEncode*` and kernels (against the stand-in driver),
//! what is refused before the driver, and on the GPU a TMA kernel that copies tiles through
//! shared memory with each swizzle, checked against the CPU.

use crate::common::shared_buffer as buffer;
use crate::common::standin::last_call;
use crate::common::stream;
use std::sync::Arc;

use crate::common::{self, standin};

use cuda_core::{
    launch,
    tensor_map::{
        Im2colOptions, Im2colWideOptions, TensorDataType, TensorMap, TensorMapDescriptor,
        TensorMapSwizzle, TiledOptions, NVRTC_HEADER, NVRTC_HEADER_NAME,
    },
    Allocate, Buffer, BuildGraph, CodeType, Device, Error, Graph, GraphOptions, LaunchConfig,
    ObjectCode, Program, ProgramOptions, Stream,
};

/// One block loads the box at `(x, y)` of `src` into shared memory with
/// `cp.async.bulk.tensor` (completing on an mbarrier), writes the shared bytes as they lie
/// there (swizzled) to `raw`, and stores the box to `(dx, dy)` of `dst`. The maps come by value
/// as `__grid_constant__ CUtensorMap` parameters, the type declared by the crate's
/// `NVRTC_HEADER` (given in memory by `tma_code`).
const TMA: &str = r#"
#include "cuda_core/tensor_map.h"
typedef CUtensorMap TensorMap;

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void tile_round_trip(const __grid_constant__ TensorMap src,
                                           const __grid_constant__ TensorMap dst,
                                           int x, int y, int dx, int dy,
                                           unsigned bytes, float* raw) {
    __shared__ __align__(1024) float tile[32 * 32];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned tile_s = shared_address(tile);
    const unsigned bar_s = shared_address(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_s) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long state;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
                     : "=l"(state) : "r"(bar_s), "r"(bytes) : "memory");
        (void)state;
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_s), "l"(&src), "r"(x), "r"(y), "r"(bar_s) : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar_s), "r"(0u) : "memory");
    }
    for (unsigned i = threadIdx.x; i < bytes / 4; i += blockDim.x) raw[i] = tile[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(&dst), "r"(dx), "r"(dy), "r"(tile_s) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
"#;

/// The matrix of the GPU tests: 1024 x 1024 floats.
const N: usize = 1024;
/// What the destination holds before a store: -1.0 (no source element is negative).
const UNTOUCHED: u32 = 0xBF80_0000;

#[track_caller]
fn refused<T: std::fmt::Debug>(result: cuda_core::Result<T>, name: &str, says: &str) {
    match result {
        Err(Error::InvalidArgument { name: n, reason }) => {
            assert_eq!(n, name, "refused by the wrong argument: {reason}");
            assert!(reason.contains(says), "{reason:?} does not say {says:?}");
        }
        other => panic!("expected a refusal of {name} ({says}), got {other:?}"),
    }
}

/// Whether NVRTC is here (says "not run" otherwise, failing where it is required).
fn nvrtc() -> bool {
    match cuda_core::nvrtc_version() {
        Ok(_) => true,
        Err(e) => {
            common::not_run("nvrtc", &format!("no NVRTC: {e}"));
            false
        }
    }
}

fn tma_code() -> cuda_core::Result<ObjectCode> {
    let options = ProgramOptions::default()
        .with_arch("90")
        .with_header(NVRTC_HEADER_NAME, NVRTC_HEADER);
    Program::new(TMA, options)
        .with_name("tma.cu")
        .compile(CodeType::Cubin, &[])
}

/// The TMA kernel (inline PTX, no headers) compiles to an sm_90 cubin that holds it, with
/// NVRTC 12 and 13 alike (what the GPU tests below then run).
#[test]
fn the_tma_kernel_compiles_for_sm_90() {
    if !nvrtc() {
        return;
    }
    let code = tma_code().unwrap();
    assert!(code.code().starts_with(b"\x7fELF"));
    let section = b".text.tile_round_trip\0";
    assert!(
        code.code().windows(section.len()).any(|w| w == section),
        "the cubin holds no tile_round_trip"
    );
}

/// A kernel taking `const __grid_constant__ CUtensorMap` compiles for sm_90 with the crate's
/// declaration given in memory, and takes it as the driver's 128 bytes aligned to 128 (the
/// parameter the PTX declares), as `cuda.h`'s type is.
#[test]
fn the_nvrtc_header_declares_cutensormap_as_cuda_h_does() {
    if !nvrtc() {
        return;
    }
    let source = "#include \"cuda_core/tensor_map.h\"\n\
        extern \"C\" __global__ void prefetch(const __grid_constant__ CUtensorMap map) {\n\
            asm volatile(\"prefetch.tensormap [%0];\" :: \"l\"(&map) : \"memory\");\n\
        }\n\
        static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == 128, \"layout\");\n";
    let options = ProgramOptions::default()
        .with_arch("90")
        .with_header(NVRTC_HEADER_NAME, NVRTC_HEADER);
    let code = Program::new(source, options)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let ptx = String::from_utf8_lossy(code.code());
    // Catches a declaration of another size or alignment than the 128 bytes a TensorMap
    // passes (the static_assert fails the compile; the parameter shows what a launch gets).
    assert!(
        ptx.contains(".param .align 128 .b8 prefetch_param_0[128]"),
        "{ptx}"
    );
    // Catches a header that clashes with cuda.h's declaration where a source has both.
    let both = format!("#define CU_TENSOR_MAP_NUM_QWORDS 16\ntypedef struct CUtensorMap_st {{ alignas(128) unsigned long long opaque[16]; }} CUtensorMap;\n{source}");
    let options = ProgramOptions::default()
        .with_arch("90")
        .with_header(NVRTC_HEADER_NAME, NVRTC_HEADER);
    Program::new(both, options)
        .compile(CodeType::Ptx, &[])
        .unwrap();
}

fn matrix(swizzle: TensorMapSwizzle, box_width: u32) -> TiledOptions {
    TiledOptions::new(TensorDataType::F32, &[N as u64, N as u64], &[box_width, 32])
        .with_swizzle(swizzle)
}

/// A tiled map reaches `cuTensorMapEncodeTiled` with every field as given (packed strides
/// worked out, element strides of 1), its output aligned to 64 bytes, in the buffer's context
/// made current around it (none was current); the descriptor the driver wrote is what a
/// graph's kernel node receives as its argument.
#[test]
fn a_tiled_map_reaches_the_driver_as_given_and_kernels_receive_its_descriptor() {
    standin::run(
        module_path!(),
        "a_tiled_map_reaches_the_driver_as_given_and_kernels_receive_its_descriptor",
        &[],
        &[("STANDIN_PARAM_SIZE", "128")],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let matrix_buffer = buffer(device, &s, N * N * 4 + 256);
            let address = matrix_buffer.ptr().0;
            standin::clear_log();
            let options = matrix(TensorMapSwizzle::B128, 32)
                .with_l2_promotion(cuda_core::tensor_map::TensorMapL2Promotion::B256)
                .with_element_strides(vec![1, 2]);
            let map = TensorMap::tiled(&matrix_buffer, 256, &options).unwrap();
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            assert_eq!(
                lines,
                [
                    "cuCtxPushCurrent c0".to_owned(),
                    format!(
                        "cuTensorMapEncodeTiled type=7 rank=2 address={:#x} dims=1024,1024 \
                         strides=4096 box=32,32 element_strides=1,2 interleave=0 swizzle=3 \
                         l2=3 oob=0 aligned64=1 in c0",
                        address + 256
                    ),
                    "cuCtxPopCurrent".to_owned(),
                ]
            );
            let words = map.descriptor().as_words();
            assert_eq!(
                &words[..3],
                &[address + 256, 2, 7],
                "the driver's descriptor"
            );
            assert_eq!(map.address().0, address + 256);
            assert_eq!(map.offset(), 256);
            assert!(Arc::ptr_eq(map.buffer(), &matrix_buffer));
            assert_eq!(map.span_bytes(), (N * N * 4) as u64);
            // A clone is the same map, keeping the same buffer.
            let clone = map.clone();
            assert_eq!(clone.descriptor(), map.descriptor());
            assert_eq!(Arc::strong_count(&matrix_buffer), 3);
            drop(clone);

            // The graph's kernel node gets the descriptor's bytes (its first word shown).
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let mut graph = Graph::new(device).unwrap();
            let one = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // SAFETY: the stand-in runs nothing.
            unsafe { graph.add_kernel(&[], &one, &k1, &[&map]) }.unwrap();
            assert!(
                last_call("cuGraphAddKernelNode").ends_with(&format!(" k1 arg0={}", address + 256)),
                "{}",
                standin::log()
            );
            // So does a plain launch (128 bytes, the parameter's size here).
            // SAFETY: as above.
            unsafe { launch(&s, &one, &k1, &[&map]) }.unwrap();
            // And the raw descriptor, as a value.
            let raw = *map.descriptor();
            // SAFETY: as above.
            unsafe { launch(&s, &one, &k1, &[&raw]) }.unwrap();
        },
    );
}

/// The argument is the descriptor's 128 bytes, whatever the kernel's parameter is: a kernel
/// whose parameter is 8 bytes, or exactly the size of a `TensorMap` value itself, is refused
/// by the size check (a map is never passed as its own bytes).
#[test]
fn a_tensor_map_argument_is_its_128_bytes_whatever_the_parameter_size() {
    for size in ["8", "256"] {
        assert_eq!(
            std::mem::size_of::<TensorMap>(),
            256,
            "the second case's size"
        );
        standin::run(
            module_path!(),
            "a_tensor_map_argument_is_its_128_bytes_whatever_the_parameter_size",
            &[],
            &[("STANDIN_PARAM_SIZE", size)],
            || {
                let device = Device::new(0).unwrap();
                let s = stream(device);
                let b = buffer(device, &s, N * N * 4);
                let map = TensorMap::tiled(&b, 0, &matrix(TensorMapSwizzle::None, 32)).unwrap();
                let code = ObjectCode::from_cubin(standin::cubin());
                let k1 = code.get_kernel("k1").unwrap();
                let size = std::env::var("STANDIN_PARAM_SIZE").unwrap();
                let one = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                // SAFETY: refused before the launch.
                let err = unsafe { launch(&s, &one, &k1, &[&map]) }.unwrap_err();
                assert!(
                    err.to_string()
                        .contains(&format!("is 128 bytes; the kernel's parameter is {size}")),
                    "{err}"
                );
                assert!(standin::calls("cuLaunchKernel").is_empty());
            },
        );
    }
}

/// A launch on another stream than the map's buffer's orders itself around that buffer's
/// stream, as for the buffer itself.
#[test]
fn a_launch_orders_a_tensor_maps_buffer_on_another_stream() {
    standin::run(
        module_path!(),
        "a_launch_orders_a_tensor_maps_buffer_on_another_stream",
        &[],
        &[("STANDIN_PARAM_SIZE", "128")],
        || {
            let device = Device::new(0).unwrap();
            let home = stream(device);
            let other = stream(device);
            let other_name = last_call("cuStreamCreate")
                .split_whitespace()
                .nth(1)
                .unwrap()
                .to_owned();
            let b = buffer(device, &home, N * N * 4);
            let map = TensorMap::tiled(&b, 0, &matrix(TensorMapSwizzle::None, 32)).unwrap();
            let code = ObjectCode::from_cubin(standin::cubin());
            let k1 = code.get_kernel("k1").unwrap();
            let one = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
            // The first launch reads the kernel's attributes.
            // SAFETY: the stand-in runs nothing.
            unsafe { launch(&home, &one, &k1, &[&map]) }.unwrap();
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&home, &one, &k1, &[&map]) }.unwrap();
            assert_eq!(standin::log().lines().count(), 1, "{}", standin::log());
            standin::clear_log();
            // SAFETY: as above.
            unsafe { launch(&other, &one, &k1, &[&map]) }.unwrap();
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            let at = lines
                .iter()
                .position(|l| l.starts_with("cuLaunchKernel"))
                .unwrap();
            assert!(
                lines[..at]
                    .iter()
                    .any(|l| l.starts_with(&format!("cuStreamWaitEvent {other_name} waits"))),
                "{log}"
            );
            assert!(
                lines[at..]
                    .iter()
                    .any(|l| l.starts_with("cuStreamWaitEvent")
                        && !l.contains(&format!("{other_name} waits"))),
                "the buffer's stream waits for the launch: {log}"
            );
        },
    );
}

/// Misaligned addresses, tensors past their buffer, 6-D maps, boxes larger than the tensor
/// and the other rules are refused by name, with no encode call made.
#[test]
fn bad_maps_are_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "bad_maps_are_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let b = buffer(device, &s, N * N * 4);
            let good = matrix(TensorMapSwizzle::B128, 32);
            standin::clear_log();
            refused(
                TensorMap::tiled(&b, 4, &good),
                "offset",
                "is not aligned to 16 bytes",
            );
            refused(
                TensorMap::tiled(&b, 16, &good),
                "buffer",
                "the tensor spans 4194304 bytes from offset 16, past the end of the \
                 4194304-byte buffer",
            );
            refused(
                TensorMap::tiled(&b, N * N * 4, &good),
                "offset",
                "at or past the end",
            );
            let six = TiledOptions::new(TensorDataType::F32, &[4, 4, 4, 4, 4, 4], &[4; 6]);
            refused(
                TensorMap::tiled(&b, 0, &six),
                "options.dims",
                "1 to 5 dimensions; 6 given",
            );
            let small = TiledOptions::new(TensorDataType::F32, &[64, 8], &[16, 16]);
            refused(
                TensorMap::tiled(&b, 0, &small),
                "options.box_dims",
                "larger than the tensor's 8",
            );
            refused(
                TensorMap::tiled(&b, 0, &good.clone().with_box_dims(vec![64, 32])),
                "options.swizzle",
                "more than the 128-byte span",
            );
            refused(
                TensorMapDescriptor::tiled(device, cuda_core::DevicePtr(b.ptr().0 + 8), &good),
                "address",
                "not aligned to 16 bytes",
            );
            let interleaved = TiledOptions::new(TensorDataType::F16, &[16, 8, 8], &[16, 8, 1])
                .with_interleave(cuda_core::tensor_map::TensorMapInterleave::B32)
                .with_swizzle(TensorMapSwizzle::B32);
            refused(
                TensorMap::tiled(&b, 16, &interleaved),
                "offset",
                "not aligned to 32 bytes",
            );
            TensorMap::tiled(&b, 32, &interleaved).unwrap();
            assert_eq!(
                standin::calls("cuTensorMapEncode").len(),
                1,
                "only the good map reached the driver: {}",
                standin::log()
            );
        },
    );
}

/// Tensor maps need compute capability 9.0 (device 1 is made 8.0 here), wide im2col ones
/// 10.0 (device 0 is 9.0; device 1 then 10.0); refused before the driver.
#[test]
fn tensor_maps_need_compute_capability_9_and_wide_ones_10() {
    for cc in ["8", "10"] {
        standin::run(
            module_path!(),
            "tensor_maps_need_compute_capability_9_and_wide_ones_10",
            &[],
            &[("STANDIN_DEVICE1_CC", cc)],
            || {
                let cc: u32 = std::env::var("STANDIN_DEVICE1_CC")
                    .unwrap()
                    .parse()
                    .unwrap();
                let (zero, one) = (Device::new(0).unwrap(), Device::new(1).unwrap());
                let (s0, s1) = (stream(zero), stream(one));
                let (b0, b1) = (buffer(zero, &s0, 1 << 20), buffer(one, &s1, 1 << 20));
                let tiled = TiledOptions::new(TensorDataType::F32, &[256, 256], &[32, 32]);
                let wide = Im2colWideOptions {
                    data_type: TensorDataType::F16,
                    dims: vec![64, 16, 2],
                    channels_per_pixel: 64,
                    pixels_per_column: 16,
                    swizzle: TensorMapSwizzle::B128,
                    ..Default::default()
                };
                standin::clear_log();
                TensorMap::tiled(&b0, 0, &tiled).unwrap();
                refused(
                    TensorMap::im2col_wide(&b0, 0, &wide),
                    "buffer",
                    "wide im2col tensor maps need compute capability 10.0; device 0 is 9.0",
                );
                if cc == 8 {
                    refused(
                        TensorMap::tiled(&b1, 0, &tiled),
                        "buffer",
                        "tensor maps need compute capability 9.0; device 1 is 8.0",
                    );
                    refused(
                        TensorMapDescriptor::tiled(one, b1.ptr(), &tiled),
                        "device",
                        "compute capability 9.0",
                    );
                    assert_eq!(standin::calls("cuTensorMapEncode").len(), 1);
                } else {
                    TensorMap::im2col_wide(&b1, 0, &wide).unwrap();
                    assert_eq!(
                        last_call("cuTensorMapEncodeIm2colWide"),
                        "cuTensorMapEncodeIm2colWide type=6 rank=3 dims=64,16,2 \
                         strides=128,2048 lower=0 upper=0 channels=64 pixels=16 interleave=0 \
                         mode=0 swizzle=3 l2=0 oob=0"
                    );
                }
            },
        );
    }
}

/// A layout checked once encodes what `TensorMap::tiled` encodes, with only the buffer's
/// checks per map: its device, the address's alignment, the tensor's extent; a layout a device
/// cannot take, or a broken rule, is refused when the layout is made.
#[test]
fn a_layout_checked_once_encodes_as_the_full_check_does() {
    standin::run(
        module_path!(),
        "a_layout_checked_once_encodes_as_the_full_check_does",
        &[],
        &[("STANDIN_DEVICE1_CC", "8")],
        || {
            use cuda_core::tensor_map::TensorMapLayout;
            let (zero, one) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let s0 = stream(zero);
            let matrix_buffer = buffer(zero, &s0, N * N * 4 + 256);
            let options = matrix(TensorMapSwizzle::B128, 32);
            let layout = TensorMapLayout::tiled(zero, &options).unwrap();
            assert_eq!(
                (layout.device(), layout.span_bytes(), layout.alignment()),
                (zero, (N * N * 4) as u64, 16)
            );
            standin::clear_log();
            let full = TensorMap::tiled(&matrix_buffer, 256, &options).unwrap();
            let full_call = last_call("cuTensorMapEncodeTiled");
            let fast = TensorMap::with_layout(&matrix_buffer, 256, &layout).unwrap();
            // The same call and descriptor (catches a layout that loses a field on the way).
            assert_eq!(last_call("cuTensorMapEncodeTiled"), full_call);
            assert_eq!(fast.descriptor(), full.descriptor());
            assert_eq!(
                (fast.offset(), fast.span_bytes()),
                (full.offset(), full.span_bytes())
            );
            assert!(Arc::ptr_eq(fast.buffer(), &matrix_buffer));
            // Re-encoded in place for another buffer: the same call and descriptor as a new
            // map of it, and the map keeps that buffer and lets go of the first (catches a
            // re-encoding that keeps the old buffer alive while pointing into the new one,
            // whose memory could then be freed under the map).
            let next = buffer(zero, &s0, N * N * 4);
            let mut map = TensorMap::with_layout(&matrix_buffer, 256, &layout).unwrap();
            let held = Arc::strong_count(&matrix_buffer);
            map.reencode(&next, 0, &layout).unwrap();
            let reencoded = last_call("cuTensorMapEncodeTiled");
            let fresh = TensorMap::with_layout(&next, 0, &layout).unwrap();
            assert_eq!(last_call("cuTensorMapEncodeTiled"), reencoded);
            assert_eq!(map.descriptor(), fresh.descriptor());
            assert!(Arc::ptr_eq(map.buffer(), &next));
            assert_eq!(map.offset(), 0);
            assert_eq!(Arc::strong_count(&matrix_buffer), held - 1);
            // The same buffer again: no reference taken (the count stays).
            let count = Arc::strong_count(&next);
            map.reencode(&next, 0, &layout).unwrap();
            assert_eq!(Arc::strong_count(&next), count);
            // A refused re-encoding leaves the map as it was (catches a descriptor or buffer
            // changed before the checks).
            let before = *map.descriptor();
            refused(
                map.reencode(&matrix_buffer, 8, &layout),
                "offset",
                "aligned to 16",
            );
            assert_eq!(*map.descriptor(), before);
            assert!(Arc::ptr_eq(map.buffer(), &next));
            drop((map, fresh));
            let encodes = standin::calls("cuTensorMapEncode").len();
            // What depends on the buffer is still checked, before the driver: an address off
            // the 16-byte alignment, a tensor past the buffer's end, an offset past it, a
            // buffer of another device.
            refused(
                TensorMap::with_layout(&matrix_buffer, 8, &layout),
                "offset",
                "aligned to 16",
            );
            refused(
                TensorMap::with_layout(&matrix_buffer, 512, &layout),
                "buffer",
                "past the end",
            );
            refused(
                TensorMap::with_layout(&matrix_buffer, N * N * 4 + 256, &layout),
                "offset",
                "past the end",
            );
            let s1 = stream(one);
            let other = buffer(one, &s1, N * N * 4);
            refused(
                TensorMap::with_layout(&other, 0, &layout),
                "buffer",
                "checked for device 0",
            );
            assert_eq!(standin::calls("cuTensorMapEncode").len(), encodes);
            // The layout's own rules and the device's capability, when it is made.
            refused(
                TensorMapLayout::tiled(one, &options),
                "device",
                "compute capability 9.0; device 1 is 8.0",
            );
            refused(
                TensorMapLayout::tiled(zero, &options.clone().with_box_dims(vec![32, 300])),
                "options.box_dims",
                "256",
            );
        },
    );
}

/// An im2col map reaches `cuTensorMapEncodeIm2col` with its corners, channels and pixels.
#[test]
fn im2col_maps_reach_the_driver_with_their_corners() {
    standin::run(
        module_path!(),
        "im2col_maps_reach_the_driver_with_their_corners",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let b = buffer(device, &s, 64 * 16 * 16 * 2 * 2);
            let options = Im2colOptions {
                data_type: TensorDataType::F16,
                dims: vec![64, 16, 16, 2],
                lower_corner: vec![-1, -2],
                upper_corner: vec![-3, 4],
                channels_per_pixel: 32,
                pixels_per_column: 128,
                swizzle: TensorMapSwizzle::B64,
                oob_fill: cuda_core::tensor_map::TensorMapOobFill::NanRequestZeroFma,
                ..Default::default()
            };
            let map = TensorMap::im2col(&b, 0, &options).unwrap();
            let call = last_call("cuTensorMapEncodeIm2col");
            assert_eq!(
                call,
                format!(
                    "cuTensorMapEncodeIm2col type=6 rank=4 address={:#x} dims=64,16,16,2 \
                     strides=128,2048,32768 lower=-1,-2 upper=-3,4 channels=32 pixels=128 \
                     element_strides=1,1,1,1 interleave=0 swizzle=2 l2=0 oob=1",
                    b.ptr().0
                )
            );
            assert_eq!(map.span_bytes(), 64 * 16 * 16 * 2 * 2);
            // The same map from a layout checked once, which takes its own path to the driver
            // for tiled layouts only (catches an im2col layout sent down the tiled one, or
            // losing its corners).
            let layout = cuda_core::tensor_map::TensorMapLayout::im2col(device, &options).unwrap();
            standin::clear_log();
            let again = TensorMap::with_layout(&b, 0, &layout).unwrap();
            assert_eq!(last_call("cuTensorMapEncodeIm2col"), call);
            assert!(standin::calls("cuTensorMapEncodeTiled").is_empty());
            assert_eq!(again.descriptor(), map.descriptor());
            // Re-encoded in place with the im2col layout: the same call again.
            let mut again = again;
            standin::clear_log();
            again.reencode(&b, 0, &layout).unwrap();
            assert_eq!(last_call("cuTensorMapEncodeIm2col"), call);
            assert_eq!(again.descriptor(), map.descriptor());
        },
    );
}

/// The address is replaced under the rules the map was encoded with: the new buffer is kept
/// and the descriptor points into it; a misaligned offset or a buffer too small is refused,
/// leaving the map as it was.
#[test]
fn the_address_is_replaced_within_the_rules_and_the_map_keeps_the_new_buffer() {
    standin::run(
        module_path!(),
        "the_address_is_replaced_within_the_rules_and_the_map_keeps_the_new_buffer",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let (a, b) = (
                buffer(device, &s, N * N * 4),
                buffer(device, &s, N * N * 4 + 64),
            );
            let small = buffer(device, &s, N * N * 4 - 16);
            let mut map = TensorMap::tiled(&a, 0, &matrix(TensorMapSwizzle::None, 32)).unwrap();
            standin::clear_log();
            refused(
                map.replace_address(&b, 8),
                "offset",
                "not aligned to 16 bytes",
            );
            refused(map.replace_address(&small, 0), "buffer", "past the end");
            // A buffer of another device: the map's rules were checked for device 0.
            let d1 = Device::new(1).unwrap();
            let elsewhere = buffer(d1, &stream(d1), N * N * 4);
            standin::clear_log();
            refused(
                map.replace_address(&elsewhere, 0),
                "buffer",
                "encoded for device 0, and the buffer is of device 1",
            );
            assert!(standin::log().is_empty(), "{}", standin::log());
            assert!(Arc::ptr_eq(map.buffer(), &a));
            assert_eq!(map.descriptor().as_words()[0], a.ptr().0);
            map.replace_address(&b, 64).unwrap();
            assert_eq!(
                last_call("cuTensorMapReplaceAddress"),
                format!(
                    "cuTensorMapReplaceAddress {:#x} -> {:#x}",
                    a.ptr().0,
                    b.ptr().0 + 64
                )
            );
            assert_eq!(map.descriptor().as_words()[0], b.ptr().0 + 64);
            assert!(Arc::ptr_eq(map.buffer(), &b));
            assert_eq!(map.offset(), 64);
            assert_eq!(Arc::strong_count(&a), 1, "the old buffer is let go");
            assert_eq!(Arc::strong_count(&b), 2);
        },
    );
}

// ---- on the GPU ----------------------------------------------------------------------------

/// Where a byte offset `o` of a box in shared memory lands under `swizzle` (each row a
/// swizzle span wide, the box aligned to the pattern's repeat): the 16-byte chunk index is
/// XORed with bits 7 and up of the offset (3 bits for 128B, 2 for 64B, 1 for 32B).
fn swizzled(o: usize, swizzle: TensorMapSwizzle) -> usize {
    let mask = match swizzle {
        TensorMapSwizzle::B32 => 1,
        TensorMapSwizzle::B64 => 3,
        TensorMapSwizzle::B128 => 7,
        _ => 0,
    };
    o ^ (((o >> 7) & mask) << 4)
}

struct Tma {
    device: Device,
    stream: Stream,
    code: ObjectCode,
    src: Arc<Buffer>,
    values: Vec<f32>,
}

impl Tma {
    fn new() -> Tma {
        let device = common::device();
        device.set_current().unwrap();
        let stream = stream(device);
        let code = tma_code().unwrap();
        let values: Vec<f32> = (0..N * N).map(|i| i as f32).collect();
        let mut src = device
            .memory_resource()
            .unwrap()
            .allocate(N * N * 4, &stream)
            .unwrap();
        src.copy_from_host(&values, &stream).unwrap();
        Tma {
            device,
            stream,
            code,
            src: Arc::new(src),
            values,
        }
    }

    fn untouched(&self) -> Arc<Buffer> {
        let mut dst = self
            .device
            .memory_resource()
            .unwrap()
            .allocate(N * N * 4, &self.stream)
            .unwrap();
        dst.fill(UNTOUCHED, &self.stream).unwrap();
        Arc::new(dst)
    }

    /// Runs the kernel: the box at `from` of the map of `src` to `to` of `dst`'s; returns
    /// the shared memory's bytes as floats.
    fn round_trip(
        &self,
        src: &TensorMap,
        dst: &TensorMap,
        from: (i32, i32),
        to: (i32, i32),
        box_width: usize,
    ) -> Vec<f32> {
        let kernel = self.code.get_kernel("tile_round_trip").unwrap();
        let bytes = (box_width * 32 * 4) as u32;
        let raw = self
            .device
            .memory_resource()
            .unwrap()
            .allocate(bytes as usize, &self.stream)
            .unwrap();
        // SAFETY: the maps describe whole 1024 x 1024 float buffers they keep; the kernel
        // writes `bytes` bytes of `raw`, which holds them.
        unsafe {
            launch(
                &self.stream,
                &LaunchConfig::new([1, 1, 1], [128, 1, 1]),
                &kernel,
                &[src, dst, &from.0, &from.1, &to.0, &to.1, &bytes, &raw],
            )
            .unwrap();
        }
        raw.to_vec::<f32>(&self.stream).unwrap()
    }
}

/// The TMA kernel copies a 2D tile of a 1024 x 1024 float matrix into shared memory and back
/// out to another place of another matrix, for no swizzle and the 32, 64 and 128-byte
/// swizzles (a box as wide as the span: 8, 16 and 32 floats, 32 rows): the destination holds
/// the source's tile there and nothing elsewhere, and shared memory held the tile in the
/// swizzle's pattern (so the swizzle asked for is the one applied).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_tma_kernel_copies_a_tile_through_shared_memory_for_each_swizzle() {
    let tma = Tma::new();
    let (x, y, dx, dy) = (96usize, 200usize, 512usize, 64usize);
    for (swizzle, width) in [
        (TensorMapSwizzle::None, 32usize),
        (TensorMapSwizzle::B32, 8),
        (TensorMapSwizzle::B64, 16),
        (TensorMapSwizzle::B128, 32),
    ] {
        let dst = tma.untouched();
        let options = matrix(swizzle, width as u32);
        let src_map = TensorMap::tiled(&tma.src, 0, &options).unwrap();
        // The destination's map from a layout checked once (catches a layout that encodes
        // otherwise than the full check).
        let layout =
            cuda_core::tensor_map::TensorMapLayout::tiled(tma.stream.device(), &options).unwrap();
        // Made for a decoy, then re-encoded in place for the destination (catches a
        // re-encoding that keeps the decoy's address: the tile would land there).
        let decoy = tma.untouched();
        let mut dst_map = TensorMap::with_layout(&decoy, 0, &layout).unwrap();
        dst_map.reencode(&dst, 0, &layout).unwrap();
        let raw = tma.round_trip(
            &src_map,
            &dst_map,
            (x as i32, y as i32),
            (dx as i32, dy as i32),
            width,
        );
        let got = dst.to_vec::<f32>(&tma.stream).unwrap();
        assert!(
            decoy
                .to_vec::<f32>(&tma.stream)
                .unwrap()
                .iter()
                .all(|&v| v == -1.0),
            "{swizzle:?}: the re-encoded map wrote to the buffer it was first made for"
        );
        for r in 0..N {
            for c in 0..N {
                let inside = (dy..dy + 32).contains(&r) && (dx..dx + width).contains(&c);
                let want = if inside {
                    tma.values[(y + r - dy) * N + x + c - dx]
                } else {
                    -1.0
                };
                assert_eq!(got[r * N + c], want, "{swizzle:?}: destination ({r}, {c})");
            }
        }
        for r in 0..32 {
            for c in 0..width {
                let at = swizzled((r * width + c) * 4, swizzle) / 4;
                assert_eq!(
                    raw[at],
                    tma.values[(y + r) * N + x + c],
                    "{swizzle:?}: element ({r}, {c}) of the box is not at float {at} of \
                     shared memory"
                );
            }
        }
    }
}

/// A box reaching past the tensor's corner loads zeros for the elements outside (shared
/// memory shows them), and a store there writes only the elements inside.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_box_past_the_tensors_edge_loads_zeros_and_stores_only_inside() {
    let tma = Tma::new();
    let dst = tma.untouched();
    let options = matrix(TensorMapSwizzle::None, 32);
    let src_map = TensorMap::tiled(&tma.src, 0, &options).unwrap();
    let dst_map = TensorMap::tiled(&dst, 0, &options).unwrap();
    // 8 columns and 4 rows of the box are inside.
    let corner = ((N - 8) as i32, (N - 4) as i32);
    let raw = tma.round_trip(&src_map, &dst_map, corner, corner, 32);
    for r in 0..32 {
        for c in 0..32 {
            let want = if r < 4 && c < 8 {
                tma.values[(N - 4 + r) * N + N - 8 + c]
            } else {
                0.0
            };
            assert_eq!(raw[r * 32 + c], want, "box element ({r}, {c})");
        }
    }
    let got = dst.to_vec::<f32>(&tma.stream).unwrap();
    for (i, (&g, &v)) in got.iter().zip(&tma.values).enumerate() {
        let (r, c) = (i / N, i % N);
        let want = if r >= N - 4 && c >= N - 8 { v } else { -1.0 };
        assert_eq!(g, want, "destination ({r}, {c})");
    }
}

/// A map whose address is replaced reads the new buffer; the raw descriptor, passed as a
/// value, works as the map does.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_replaced_address_is_what_the_kernel_reads() {
    let tma = Tma::new();
    let doubled: Vec<f32> = tma.values.iter().map(|v| 2.0 * v).collect();
    let mut other = tma
        .device
        .memory_resource()
        .unwrap()
        .allocate(N * N * 4, &tma.stream)
        .unwrap();
    other.copy_from_host(&doubled, &tma.stream).unwrap();
    let other = Arc::new(other);
    let dst = tma.untouched();
    let options = matrix(TensorMapSwizzle::B128, 32);
    let mut src_map = TensorMap::tiled(&tma.src, 0, &options).unwrap();
    src_map.replace_address(&other, 0).unwrap();
    drop(other);
    let dst_map = TensorMap::tiled(&dst, 0, &options).unwrap();
    tma.round_trip(&src_map, &dst_map, (0, 0), (0, 0), 32);
    let got = dst.to_vec::<f32>(&tma.stream).unwrap();
    for r in 0..32 {
        for c in 0..32 {
            assert_eq!(got[r * N + c], doubled[r * N + c], "({r}, {c})");
        }
    }
    // The raw descriptor of the same layout, at the source's address.
    let raw_src = TensorMapDescriptor::tiled(tma.device, tma.src.ptr(), &options).unwrap();
    let kernel = tma.code.get_kernel("tile_round_trip").unwrap();
    let scratch = tma
        .device
        .memory_resource()
        .unwrap()
        .allocate(32 * 32 * 4, &tma.stream)
        .unwrap();
    let bytes = 32u32 * 32 * 4;
    // SAFETY: the source buffer outlives the launch (synchronised below); as in `round_trip`.
    unsafe {
        launch(
            &tma.stream,
            &LaunchConfig::new([1, 1, 1], [128, 1, 1]),
            &kernel,
            &[
                &raw_src, &dst_map, &0i32, &0i32, &64i32, &0i32, &bytes, &scratch,
            ],
        )
        .unwrap();
    }
    let got = dst.to_vec::<f32>(&tma.stream).unwrap();
    for r in 0..32 {
        for c in 0..32 {
            assert_eq!(got[r * N + 64 + c], tma.values[r * N + c], "({r}, {c})");
        }
    }
}

/// A graph's kernel node keeps the tensor maps' buffers: the source, dropped here after the
/// node was added (map and buffer), is still read by each launch of the graph.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_keeps_a_tensor_maps_buffer() {
    let tma = Tma::new();
    let Tma {
        device,
        stream,
        code,
        src,
        values,
    } = tma;
    let mut dst = device
        .memory_resource()
        .unwrap()
        .allocate(N * N * 4, &stream)
        .unwrap();
    dst.fill(UNTOUCHED, &stream).unwrap();
    let dst = Arc::new(dst);
    let options = matrix(TensorMapSwizzle::B64, 16);
    let kernel = code.get_kernel("tile_round_trip").unwrap();
    let raw = Arc::new(
        device
            .memory_resource()
            .unwrap()
            .allocate(16 * 32 * 4, &stream)
            .unwrap(),
    );
    let mut graph = Graph::new(device).unwrap();
    {
        let src_map = TensorMap::tiled(&src, 0, &options).unwrap();
        let dst_map = TensorMap::tiled(&dst, 0, &options).unwrap();
        let bytes = 16u32 * 32 * 4;
        // SAFETY: as in `Tma::round_trip`; the graph keeps the maps' buffers and `raw`.
        unsafe {
            graph
                .add_kernel(
                    &[],
                    &LaunchConfig::new([1, 1, 1], [128, 1, 1]),
                    &kernel,
                    &[
                        &src_map, &dst_map, &16i32, &32i32, &0i32, &0i32, &bytes, &raw,
                    ],
                )
                .unwrap();
        }
    }
    let weak = Arc::downgrade(&src);
    drop(src);
    assert!(
        weak.upgrade().is_some(),
        "the graph holds the source buffer"
    );
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    drop(graph);
    exec.launch(&stream).unwrap();
    stream.sync().unwrap();
    let got = dst.to_vec::<f32>(&stream).unwrap();
    for r in 0..32 {
        for c in 0..16 {
            assert_eq!(got[r * N + c], values[(32 + r) * N + 16 + c], "({r}, {c})");
        }
    }
}

/// On the device, bad maps are refused by name before the driver: a misaligned address, a box
/// larger than the tensor, a 6-D tiled map.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_tensor_maps_give_clear_errors_on_the_device() {
    let device = common::device();
    let s = stream(device);
    let b = buffer(device, &s, N * N * 4);
    let good = matrix(TensorMapSwizzle::B128, 32);
    refused(
        TensorMap::tiled(&b, 4, &good),
        "offset",
        "not aligned to 16 bytes",
    );
    refused(
        TensorMap::tiled(
            &b,
            0,
            &TiledOptions::new(TensorDataType::F32, &[64, 8], &[16, 16]),
        ),
        "options.box_dims",
        "box dimension 1 is 16, larger than the tensor's 8",
    );
    refused(
        TensorMap::tiled(
            &b,
            0,
            &TiledOptions::new(TensorDataType::F32, &[4; 6], &[4; 6]),
        ),
        "options.dims",
        "1 to 5 dimensions; 6 given",
    );
    TensorMap::tiled(&b, 0, &good).unwrap();
}

/// A map is encoded on a thread with no context current (the library makes the buffer's
/// current and restores none after), and works in a kernel launched elsewhere.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_map_is_encoded_on_a_thread_with_no_current_context() {
    let tma = Tma::new();
    let src = tma.src.clone();
    let options = matrix(TensorMapSwizzle::B128, 32);
    let dst = tma.untouched();
    let target = dst.clone();
    let (map, dst_map) = std::thread::spawn(move || {
        let map = TensorMap::tiled(&src, 0, &options).unwrap();
        // A layout's encoding makes the context current by its own path (catches one that
        // assumes a current context: the driver refuses the encoding without one).
        let layout =
            cuda_core::tensor_map::TensorMapLayout::tiled(common::device(), &options).unwrap();
        let dst_map = TensorMap::with_layout(&target, 0, &layout).unwrap();
        assert!(
            !common::device()
                .primary_context()
                .unwrap()
                .is_current()
                .unwrap(),
            "no context is left current"
        );
        (map, dst_map)
    })
    .join()
    .unwrap();
    tma.round_trip(&map, &dst_map, (32, 0), (0, 0), 32);
    let got = dst.to_vec::<f32>(&tma.stream).unwrap();
    assert_eq!(got[0], tma.values[32]);
    assert_eq!(got[31 * N + 31], tma.values[31 * N + 63]);
}
