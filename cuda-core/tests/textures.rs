//! CUDA arrays, textures and surfaces: what reaches the driver and what is refused before it
//! (against the stand-in driver, whose arrays hold their bytes, so copies between them and the
//! host move real data), and on the GPU kernels that sample arrays and linear memory through
//! textures (bilinear filtering against a CPU reference) and write arrays through surfaces.

use crate::common::shared_buffer as buffer;
use crate::common::standin::last_call;
use crate::common::stream;
use std::sync::Arc;

use crate::common::{self, standin};

use cuda_core::texture::{
    AddressMode, Array, ArrayFormat, ArrayOptions, ArrayRegion, FilterMode, LinearLayout,
    MipmappedArray, ReadMode, Surface, Texture, TextureLinear, TextureOptions,
};
use cuda_core::{
    launch, Allocate, Buffer, BuildGraph, CodeType, Device, Error, Graph, GraphOptions,
    LaunchConfig, ObjectCode, Program, ProgramOptions, Stream,
};

const KERNELS: &str = r#"
extern "C" __global__ void sample_2d(cudaTextureObject_t t, const float* xs, const float* ys,
                                     float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, xs[i], ys[i]);
}
extern "C" __global__ void sample_2d_u32(cudaTextureObject_t t, const float* xs,
                                         const float* ys, unsigned* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<unsigned int>(t, xs[i], ys[i]);
}
extern "C" __global__ void fetch_1d(cudaTextureObject_t t, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, (int)i);
}
extern "C" __global__ void sample_layers(cudaTextureObject_t t, float x, float y, float* out,
                                         unsigned layers) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < layers) out[i] = tex2DLayered<float>(t, x, y, (int)i);
}
extern "C" __global__ void sample_lod(cudaTextureObject_t t, float u, float v, float* out,
                                      unsigned levels) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < levels) out[i] = tex2DLod<float>(t, u, v, (float)i);
}
extern "C" __global__ void write_surface(cudaSurfaceObject_t s, unsigned w, unsigned h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite((float)(y * 1000u + x), s, (int)(x * 4), (int)y);
}
extern "C" __global__ void double_surface(cudaSurfaceObject_t s, unsigned w, unsigned h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float v = surf2Dread<float>(s, (int)(x * 4), (int)y);
        surf2Dwrite(2.0f * v, s, (int)(x * 4), (int)y);
    }
}
"#;

const KERNEL_NAMES: [&str; 7] = [
    "sample_2d",
    "sample_2d_u32",
    "fetch_1d",
    "sample_layers",
    "sample_lod",
    "write_surface",
    "double_surface",
];

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

/// The name a stand-in creation line gives its object (`a5`, `s3`).
fn made(line: &str) -> String {
    line.split_whitespace().nth(1).unwrap().to_owned()
}

/// The handle at the end of a `... -> 28672` line.
fn handle(line: &str) -> u64 {
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The position of the first logged line starting with `prefix`.
fn position(lines: &[&str], prefix: &str) -> usize {
    lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in {lines:#?}"))
}

/// The kernels compile to an sm_90 cubin that holds each of them, with NVRTC's built-in
/// texture and surface functions (no headers).
#[test]
fn the_texture_and_surface_kernels_compile_for_sm_90() {
    if let Err(e) = cuda_core::nvrtc_version() {
        common::not_run("nvrtc", &format!("no NVRTC: {e}"));
        return;
    }
    let code = Program::new(KERNELS, ProgramOptions::default().with_arch("90"))
        .compile(CodeType::Cubin, &[])
        .unwrap();
    for name in KERNEL_NAMES {
        let section = format!(".text.{name}\0");
        assert!(
            code.code()
                .windows(section.len())
                .any(|w| w == section.as_bytes()),
            "no kernel {name}"
        );
    }
}

/// An array is made in its stream's context (made current around the call: none was), with
/// the descriptor's fields as given; dropping it waits for its stream before destroying it.
#[test]
fn arrays_are_made_in_their_streams_context_and_destroyed_after_its_work() {
    standin::run(
        module_path!(),
        "arrays_are_made_in_their_streams_context_and_destroyed_after_its_work",
        &[],
        &[],
        || {
            let device = Device::new(1).unwrap();
            let s = stream(device);
            let s_name = made(&last_call("cuStreamCreate"));
            standin::clear_log();
            let options = ArrayOptions::layered_2d(ArrayFormat::U16, 64, 32, 3)
                .with_channels(2)
                .with_surface(true);
            let array = Array::new(&s, &options).unwrap();
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            assert_eq!(lines[0], "cuCtxPushCurrent c1", "{log}");
            assert!(
                lines[1].ends_with(" w=64 h=32 d=3 format=2 channels=2 flags=3 in c1"),
                "{log}"
            );
            assert_eq!(lines[2], "cuCtxPopCurrent", "{log}");
            let name = made(lines[1]);
            assert_eq!(array.extent(), [64, 32, 3]);
            assert_eq!(array.kind(), cuda_core::texture::ArrayKind::Layered2d);
            assert_eq!(array.device(), device);
            standin::clear_log();
            drop(array);
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            let sync = position(&lines, &format!("cuStreamSynchronize {s_name}"));
            let destroy = position(&lines, &format!("cuArrayDestroy {name}"));
            assert!(sync < destroy, "{log}");
        },
    );
}

/// Arrays past the device's limits, and options that make no array, are refused before the
/// driver (the stand-in's limits are 4096 in every dimension).
#[test]
fn array_options_past_the_devices_limits_are_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "array_options_past_the_devices_limits_are_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            standin::clear_log();
            refused(
                Array::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 4097, 16)),
                "options",
                "past device 0's texture limits",
            );
            refused(
                Array::new(
                    &s,
                    &ArrayOptions::layered_1d(ArrayFormat::F32, 16, 4097).with_surface(true),
                ),
                "options",
                "past device 0's texture limits",
            );
            refused(
                Array::new(
                    &s,
                    &ArrayOptions::one_d(ArrayFormat::F32, 16).with_channels(3),
                ),
                "options.channels",
                "1, 2 or 4",
            );
            refused(
                MipmappedArray::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 64, 32), 8),
                "levels",
                "has 1 to 7",
            );
            assert!(standin::calls("Create").is_empty(), "{}", standin::log());
            Array::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 4096, 4096)).unwrap();
        },
    );
}

/// Host copies move whole arrays and regions of them through the driver's `CUDA_MEMCPY3D`:
/// the region's origin in bytes and rows, the host layout's pitch, rows per slice and offset
/// (the stand-in's arrays hold bytes, so what is read back shows where each row went).
#[test]
fn host_copies_move_regions_between_pitched_host_memory_and_the_array() {
    standin::run(
        module_path!(),
        "host_copies_move_regions_between_pitched_host_memory_and_the_array",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            // 8 x 4 x 3 elements of two u16 channels (4 bytes): as u32s, one per element.
            let options = ArrayOptions::three_d(ArrayFormat::U16, 8, 4, 3).with_channels(2);
            let mut array = Array::new(&s, &options).unwrap();
            let whole: Vec<u32> = (0..8 * 4 * 3).collect();
            array.copy_from_host(&whole, &s).unwrap();
            assert_eq!(array.to_vec::<u32>(&s).unwrap(), whole);
            let s_name = made(&standin::calls("cuStreamCreate")[0]);
            assert!(
                last_call("cuMemcpy3DAsync")
                    .starts_with("cuMemcpy3DAsync host@0,0,0/32,4 <- array:")
                    && last_call("cuMemcpy3DAsync")
                        .ends_with(&format!("@0,0,0 w=32 h=4 d=3 on {s_name}")),
                "{}",
                last_call("cuMemcpy3DAsync")
            );

            // A region of 3 x 2 x 2 from (2, 1, 1), written from pitched host memory: rows of
            // 5 elements (20 bytes), 3 rows per slice, from 2 elements in.
            let region = ArrayRegion::new([2, 1, 1], [3, 2, 2]);
            let layout = LinearLayout::default()
                .with_offset(8)
                .with_row_pitch(20)
                .with_rows_per_slice(3);
            let mut pitched = vec![0u32; 2 + 5 * 3 * 2];
            for z in 0..2 {
                for y in 0..2 {
                    for x in 0..3 {
                        pitched[2 + (z * 3 + y) * 5 + x] = 1000 + (z * 100 + y * 10 + x) as u32;
                    }
                }
            }
            array
                .copy_region_from_host(&region, &pitched, &layout, &s)
                .unwrap();
            assert!(
                last_call("cuMemcpy3DAsync").contains("@8,1,1 <- host@0,0,0/20,3 w=12 h=2 d=2"),
                "{}",
                last_call("cuMemcpy3DAsync")
            );
            let after = array.to_vec::<u32>(&s).unwrap();
            for z in 0..3 {
                for y in 0..4 {
                    for x in 0..8 {
                        let i = (z * 4 + y) * 8 + x;
                        let inside =
                            (1..3).contains(&z) && (1..3).contains(&y) && (2..5).contains(&x);
                        let want = if inside {
                            1000 + ((z - 1) * 100 + (y - 1) * 10 + (x - 2)) as u32
                        } else {
                            whole[i]
                        };
                        assert_eq!(after[i], want, "element ({x}, {y}, {z})");
                    }
                }
            }

            // Read the region back into another pitched layout: rows of 4 elements, 2 rows
            // per slice; the padding is left as it was.
            let mut out = vec![7u32; 4 * 2 * 2];
            array
                .copy_region_to_host(
                    &region,
                    &mut out,
                    &LinearLayout::default().with_row_pitch(16),
                    &s,
                )
                .unwrap();
            for z in 0..2 {
                for y in 0..2 {
                    for x in 0..4 {
                        let want = if x < 3 {
                            1000 + (z * 100 + y * 10 + x) as u32
                        } else {
                            7
                        };
                        assert_eq!(out[(z * 2 + y) * 4 + x], want, "({x}, {y}, {z})");
                    }
                }
            }
            // Too small a slice, or a region outside: refused before the driver.
            standin::clear_log();
            refused(
                array.copy_region_to_host(
                    &region,
                    &mut out[..14],
                    &LinearLayout::default().with_row_pitch(16),
                    &s,
                ),
                "dst",
                "needs 60 bytes; 56 are there",
            );
            refused(
                array.copy_from_host(&whole[1..], &s),
                "src",
                "needs 384 bytes; 380 are there",
            );
            refused(
                array.copy_region_from_host(
                    &ArrayRegion::new([6, 0, 0], [3, 1, 1]),
                    &whole,
                    &LinearLayout::default(),
                    &s,
                ),
                "region",
                "along x (elements)",
            );
            assert!(
                standin::calls("cuMemcpy3DAsync").is_empty(),
                "{}",
                standin::log()
            );
        },
    );
}

/// Buffer copies name the buffer as unified memory, and on another stream than the array's
/// and the buffer's homes are ordered around both; arrays of other devices' streams, buffers
/// too small and element sizes that differ are refused before the driver. Array-to-array
/// copies move the region to its place.
#[test]
fn buffer_and_array_copies_are_checked_and_ordered_around_their_homes() {
    standin::run(
        module_path!(),
        "buffer_and_array_copies_are_checked_and_ordered_around_their_homes",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let (home, other) = (stream(device), stream(device));
            let other_name = made(&last_call("cuStreamCreate"));
            let mut array =
                Array::new(&home, &ArrayOptions::two_d(ArrayFormat::F32, 16, 8)).unwrap();
            let source = device
                .memory_resource()
                .unwrap()
                .allocate(16 * 8 * 4, &home)
                .unwrap();
            standin::clear_log();
            array.copy_from_buffer(&source, &other).unwrap();
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            let at = position(&lines, "cuMemcpy3DAsync");
            assert!(
                lines[at].contains(&format!(
                    "@0,0,0 <- type4:{:#x}@0,0,0/64,8 w=64 h=8 d=1 on {other_name}",
                    source.ptr().0
                )),
                "{log}"
            );
            assert!(
                lines[..at]
                    .iter()
                    .any(|l| l.starts_with(&format!("cuStreamWaitEvent {other_name} waits"))),
                "the copy's stream waits for the homes' work: {log}"
            );
            assert!(
                lines[at..]
                    .iter()
                    .any(|l| l.starts_with("cuStreamWaitEvent")
                        && !l.contains(&format!("{other_name} waits"))),
                "the home waits for the copy: {log}"
            );
            // Checked before the driver.
            standin::clear_log();
            let mut small = device
                .memory_resource()
                .unwrap()
                .allocate(100, &home)
                .unwrap();
            refused(
                array.copy_to_buffer(&mut small, &home),
                "dst",
                "100 are there",
            );
            let elsewhere = stream(Device::new(1).unwrap());
            refused(
                array.copy_from_buffer(&source, &elsewhere),
                "stream",
                "the array is on device 0, the stream on device 1",
            );
            let mut bytes =
                Array::new(&home, &ArrayOptions::two_d(ArrayFormat::U8, 16, 8)).unwrap();
            standin::clear_log();
            refused(
                array.copy_region_to_array(
                    &ArrayRegion::whole([16, 8, 1]),
                    &mut bytes,
                    [0; 3],
                    &home,
                ),
                "dst",
                "its elements are 1 bytes, this array's 4",
            );
            assert!(
                standin::calls("cuMemcpy3DAsync").is_empty(),
                "{}",
                standin::log()
            );

            // Array to array: a 4 x 2 block from (1, 1) to (10, 5) of another array.
            let values: Vec<f32> = (0..16 * 8).map(|i| i as f32).collect();
            array.copy_from_host(&values, &home).unwrap();
            let mut target =
                Array::new(&home, &ArrayOptions::two_d(ArrayFormat::F32, 16, 8)).unwrap();
            target
                .copy_from_host(&vec![-1.0f32; 16 * 8], &home)
                .unwrap();
            refused(
                array.copy_region_to_array(
                    &ArrayRegion::new([1, 1, 0], [4, 2, 1]),
                    &mut target,
                    [13, 5, 0],
                    &home,
                ),
                "dst_origin",
                "along x (elements)",
            );
            array
                .copy_region_to_array(
                    &ArrayRegion::new([1, 1, 0], [4, 2, 1]),
                    &mut target,
                    [10, 5, 0],
                    &home,
                )
                .unwrap();
            let got = target.to_vec::<f32>(&home).unwrap();
            for y in 0..8 {
                for x in 0..16 {
                    let inside = (5..7).contains(&y) && (10..14).contains(&x);
                    let want = if inside {
                        values[(y - 4) * 16 + x - 9]
                    } else {
                        -1.0
                    };
                    assert_eq!(got[y * 16 + x], want, "({x}, {y})");
                }
            }
        },
    );
}

/// Each level of a mipmapped array is an array of the driver's extent that keeps the
/// mipmapped array alive: dropping the mipmapped array's own handle destroys nothing while a
/// level lives, and a level is never destroyed on its own.
#[test]
fn mipmap_levels_are_arrays_that_keep_their_mipmapped_array() {
    standin::run(
        module_path!(),
        "mipmap_levels_are_arrays_that_keep_their_mipmapped_array",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let mip = Arc::new(
                MipmappedArray::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 64, 32), 4).unwrap(),
            );
            let mip_name = made(&last_call("cuMipmappedArrayCreate"));
            assert!(last_call("cuMipmappedArrayCreate").contains("w=64 h=32 d=0 levels=4 in c0"));
            assert_eq!(mip.level_extent(2), Some([16, 8, 1]));
            assert_eq!(mip.level_extent(4), None);
            refused(
                mip.level(4),
                "level",
                "level 4 of a mipmapped array of 4 levels",
            );
            let mut level = mip.level(2).unwrap();
            assert_eq!(
                level.extent(),
                [16, 8, 1],
                "the driver's extent for level 2"
            );
            assert_eq!(level.mipmap_level(), Some(2));
            // One array at a time holds a level, so that its `&mut` copies have no other
            // writer; other levels are free, and a dropped level can be had again.
            refused(mip.level(2), "level", "level 2 is held by another Array");
            drop(mip.level(1).unwrap());
            drop(mip.level(1).unwrap());
            // A level's copies move its own bytes.
            let values: Vec<f32> = (0..16 * 8).map(|i| i as f32 * 0.5).collect();
            level.copy_from_host(&values, &s).unwrap();
            assert_eq!(level.to_vec::<f32>(&s).unwrap(), values);
            standin::clear_log();
            drop(mip);
            assert!(standin::calls("Destroy").is_empty(), "{}", standin::log());
            drop(level);
            let destroyed = standin::calls("Destroy");
            assert_eq!(
                destroyed,
                [format!("cuMipmappedArrayDestroy {mip_name}")],
                "the level goes with its mipmapped array"
            );
        },
    );
}

/// Texture objects reach `cuTexObjectCreate` with their resource (array, mipmapped array,
/// linear and pitched memory of a buffer, at its offset) and options; each holds what it reads
/// and is destroyed after its home stream's work, before what it read.
#[test]
fn textures_reach_the_driver_with_their_resource_and_hold_it() {
    standin::run(
        module_path!(),
        "textures_reach_the_driver_with_their_resource_and_hold_it",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let s_name = made(&last_call("cuStreamCreate"));
            let array =
                Arc::new(Array::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 64, 32)).unwrap());
            let array_name = made(&last_call("cuArray3DCreate"));
            let options = TextureOptions::default()
                .with_filter(FilterMode::Linear)
                .with_address_mode_all(AddressMode::Border)
                .with_border_color([0.5, 0.0, 0.0, 0.0]);
            let texture = Texture::from_array(&array, &options).unwrap();
            let line = last_call("cuTexObjectCreate");
            assert_eq!(
                line,
                format!(
                    "cuTexObjectCreate array:{array_name} address=3,3,3 filter=1 flags=1 \
                     border=0.5 view=null in c0 -> {}",
                    texture.as_raw()
                )
            );
            assert!(Arc::ptr_eq(texture.array().unwrap(), &array));
            assert!(texture.buffer().is_none());

            let b = buffer(device, &s, 8192);
            let linear = Texture::from_linear(
                &b,
                &TextureLinear::one_d(ArrayFormat::F32, 256).with_offset(512),
                &TextureOptions::default().with_read_mode(ReadMode::NormalizedFloat),
            )
            .unwrap();
            assert!(last_call("cuTexObjectCreate").starts_with(&format!(
                "cuTexObjectCreate linear:{:#x} format=32 channels=1 bytes=1024 address=1,1,1 \
                 filter=0 flags=0 ",
                b.ptr().0 + 512
            )));
            let pitched = Texture::from_linear(
                &b,
                &TextureLinear::two_d(ArrayFormat::U8, 100, 10, 416).with_channels(4),
                &TextureOptions::default().with_normalized_coordinates(true),
            )
            .unwrap();
            assert!(last_call("cuTexObjectCreate").starts_with(&format!(
                "cuTexObjectCreate pitch2d:{:#x} format=1 channels=4 100x10 pitch=416 \
                 address=1,1,1 filter=0 flags=3 ",
                b.ptr().0
            )));
            assert!(Arc::ptr_eq(pitched.buffer().unwrap(), &b));
            let mip = Arc::new(
                MipmappedArray::new(&s, &ArrayOptions::two_d(ArrayFormat::F16, 32, 32), 3).unwrap(),
            );
            let mip_name = made(&last_call("cuMipmappedArrayCreate"));
            let sampled = Texture::from_mipmapped(
                &mip,
                &TextureOptions::default()
                    .with_normalized_coordinates(true)
                    .with_max_mipmap_level_clamp(2.0),
            )
            .unwrap();
            assert!(last_call("cuTexObjectCreate")
                .starts_with(&format!("cuTexObjectCreate mipmapped:{mip_name} ")));
            drop((linear, pitched, sampled, mip));

            // The last clone's drop destroys it, after the home stream's work; the array
            // outlives the texture.
            let clone = texture.clone();
            drop(texture);
            drop(array);
            standin::clear_log();
            drop(clone);
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            let sync = position(&lines, &format!("cuStreamSynchronize {s_name}"));
            let texture_gone = position(&lines, "cuTexObjectDestroy");
            let array_gone = position(&lines, &format!("cuArrayDestroy {array_name}"));
            assert!(sync < texture_gone && texture_gone < array_gone, "{log}");
        },
    );
}

/// Texture options and linear memory that the driver would refuse or misread are refused
/// before it: linear filtering of integers read as integers, wrapping without normalized
/// coordinates, a mipmapped array without them, a misaligned address or pitch, memory past
/// the buffer.
#[test]
fn bad_textures_are_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "bad_textures_are_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let bytes =
                Arc::new(Array::new(&s, &ArrayOptions::two_d(ArrayFormat::U8, 64, 32)).unwrap());
            let b = buffer(device, &s, 4096);
            let mip = Arc::new(
                MipmappedArray::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 32, 32), 2).unwrap(),
            );
            standin::clear_log();
            let linear = TextureOptions::default().with_filter(FilterMode::Linear);
            refused(
                Texture::from_array(&bytes, &linear),
                "options.filter",
                "linear filtering returns floats",
            );
            Texture::from_array(&bytes, &linear.with_read_mode(ReadMode::NormalizedFloat)).unwrap();
            refused(
                Texture::from_array(
                    &bytes,
                    &TextureOptions::default().with_address_mode_all(AddressMode::Wrap),
                ),
                "options.address_mode",
                "Wrap needs normalized coordinates",
            );
            refused(
                Texture::from_mipmapped(&mip, &TextureOptions::default()),
                "options.normalized_coordinates",
                "mipmapped",
            );
            refused(
                Texture::from_linear(
                    &b,
                    &TextureLinear::one_d(ArrayFormat::F32, 16).with_offset(4),
                    &TextureOptions::default(),
                ),
                "linear",
                "texture alignment of 512 bytes",
            );
            refused(
                Texture::from_linear(
                    &b,
                    &TextureLinear::two_d(ArrayFormat::F32, 10, 4, 48),
                    &TextureOptions::default(),
                ),
                "linear",
                "pitch alignment of 32 bytes",
            );
            refused(
                Texture::from_linear(
                    &b,
                    &TextureLinear::two_d(ArrayFormat::F32, 100, 11, 416),
                    &TextureOptions::default(),
                ),
                "linear",
                "needs 4560 bytes from offset 0; the buffer holds 4096",
            );
            assert_eq!(
                standin::calls("cuTexObjectCreate").len(),
                1,
                "only the good texture reached the driver: {}",
                standin::log()
            );
        },
    );
}

/// A surface needs an array made for surfaces (refused before the driver otherwise), holds
/// it, and is destroyed after its array's home stream's work.
#[test]
fn surfaces_need_an_array_made_for_them_and_hold_it() {
    standin::run(
        module_path!(),
        "surfaces_need_an_array_made_for_them_and_hold_it",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let s = stream(device);
            let plain =
                Arc::new(Array::new(&s, &ArrayOptions::two_d(ArrayFormat::F32, 16, 16)).unwrap());
            standin::clear_log();
            refused(
                Surface::new(&plain),
                "array",
                "made without surface access: make it with ArrayOptions::surface",
            );
            assert!(standin::calls("cuSurfObjectCreate").is_empty());
            let writable = Arc::new(
                Array::new(
                    &s,
                    &ArrayOptions::two_d(ArrayFormat::F32, 16, 16).with_surface(true),
                )
                .unwrap(),
            );
            let name = made(&last_call("cuArray3DCreate"));
            let surface = Surface::new(&writable).unwrap();
            assert_eq!(
                last_call("cuSurfObjectCreate"),
                format!(
                    "cuSurfObjectCreate array:{name} in c0 -> {}",
                    surface.as_raw()
                )
            );
            assert_eq!(handle(&last_call("cuSurfObjectCreate")), surface.as_raw());
            drop(writable);
            standin::clear_log();
            drop(surface);
            let log = standin::log();
            let lines: Vec<&str> = log.lines().collect();
            let gone = position(&lines, "cuSurfObjectDestroy");
            let array_gone = position(&lines, &format!("cuArrayDestroy {name}"));
            assert!(gone < array_gone, "{log}");
        },
    );
}

/// Textures and surfaces pass to kernels as their 64-bit handles (never as their own bytes:
/// a parameter of a `Texture` value's size is refused by the size check); a launch on another
/// stream is ordered around the home stream; a graph's kernel node keeps them (and their
/// arrays) alive until the graph goes.
#[test]
fn texture_and_surface_arguments_are_their_handles_and_graphs_keep_them() {
    for size in ["8", "16"] {
        assert_eq!(std::mem::size_of::<Texture>(), 16, "the second case's size");
        assert_eq!(std::mem::size_of::<Surface>(), 16);
        standin::run(
            module_path!(),
            "texture_and_surface_arguments_are_their_handles_and_graphs_keep_them",
            &[],
            &[("STANDIN_PARAM_SIZE", size)],
            || {
                let device = Device::new(0).unwrap();
                let (home, other) = (stream(device), stream(device));
                let other_name = made(&last_call("cuStreamCreate"));
                let array = Arc::new(
                    Array::new(
                        &home,
                        &ArrayOptions::two_d(ArrayFormat::F32, 16, 16).with_surface(true),
                    )
                    .unwrap(),
                );
                let texture = Texture::from_array(&array, &TextureOptions::default()).unwrap();
                let surface = Surface::new(&array).unwrap();
                let code = ObjectCode::from_cubin(standin::cubin());
                let k1 = code.get_kernel("k1").unwrap();
                let one = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                if std::env::var("STANDIN_PARAM_SIZE").unwrap() == "16" {
                    // SAFETY: refused before the launch.
                    let err = unsafe { launch(&home, &one, &k1, &[&texture]) }.unwrap_err();
                    assert!(
                        err.to_string()
                            .contains("is 8 bytes; the kernel's parameter is 16"),
                        "{err}"
                    );
                    return;
                }
                // SAFETY: the stand-in runs nothing.
                unsafe { launch(&home, &one, &k1, &[&texture]) }.unwrap();
                standin::clear_log();
                // SAFETY: as above.
                unsafe { launch(&other, &one, &k1, &[&surface]) }.unwrap();
                let log = standin::log();
                let lines: Vec<&str> = log.lines().collect();
                let at = position(&lines, "cuLaunchKernel");
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
                    "{log}"
                );

                let mut graph = Graph::new(device).unwrap();
                // SAFETY: as above.
                unsafe { graph.add_kernel(&[], &one, &k1, &[&texture]) }.unwrap();
                assert!(last_call("cuGraphAddKernelNode")
                    .ends_with(&format!(" k1 arg0={}", texture.as_raw())));
                // SAFETY: as above.
                unsafe { graph.add_kernel(&[], &one, &k1, &[&surface]) }.unwrap();
                assert!(last_call("cuGraphAddKernelNode")
                    .ends_with(&format!(" k1 arg0={}", surface.as_raw())));
                standin::clear_log();
                drop((texture, surface, array));
                assert!(
                    standin::calls("Destroy").is_empty(),
                    "the graph keeps them: {}",
                    standin::log()
                );
                drop(graph);
                for gone in [
                    "cuTexObjectDestroy",
                    "cuSurfObjectDestroy",
                    "cuArrayDestroy",
                ] {
                    assert_eq!(standin::calls(gone).len(), 1, "{gone}: {}", standin::log());
                }
            },
        );
    }
}

// ---- on the GPU ----------------------------------------------------------------------------

struct Gpu {
    device: Device,
    stream: Stream,
    code: ObjectCode,
}

impl Gpu {
    fn new() -> Gpu {
        let device = common::device();
        device.set_current().unwrap();
        let code = Program::new(KERNELS, ProgramOptions::default())
            .with_name("textures.cu")
            .compile(CodeType::Cubin, &[])
            .unwrap();
        Gpu {
            device,
            stream: stream(device),
            code,
        }
    }

    fn floats(&self, values: &[f32]) -> Buffer {
        let mut b = self
            .device
            .memory_resource()
            .unwrap()
            .allocate(values.len() * 4, &self.stream)
            .unwrap();
        b.copy_from_host(values, &self.stream).unwrap();
        b
    }

    fn zeros(&self, count: usize) -> Buffer {
        let mut b = self
            .device
            .memory_resource()
            .unwrap()
            .allocate(count * 4, &self.stream)
            .unwrap();
        b.fill(0u32, &self.stream).unwrap();
        b
    }

    /// `sample_2d` (or `sample_2d_u32`) at the points, on `stream`.
    fn sample<T: cuda_core::Pod + Default>(
        &self,
        kernel: &str,
        texture: &Texture,
        points: &[(f32, f32)],
        stream: &Stream,
    ) -> Vec<T> {
        let xs = self.floats(&points.iter().map(|p| p.0).collect::<Vec<_>>());
        let ys = self.floats(&points.iter().map(|p| p.1).collect::<Vec<_>>());
        let out = self.zeros(points.len());
        let n = points.len() as u32;
        // SAFETY: `n` points in xs and ys, `n` results in out; the texture is alive.
        unsafe {
            launch(
                stream,
                &LaunchConfig::for_elements(n.into(), 128),
                &self.code.get_kernel(kernel).unwrap(),
                &[texture, &xs, &ys, &out, &n],
            )
            .unwrap();
        }
        out.to_vec::<T>(stream).unwrap()
    }
}

/// A smooth image in 0 to 1.
fn image(w: usize, h: usize) -> Vec<f32> {
    (0..w * h)
        .map(|i| {
            let (x, y) = ((i % w) as f32, (i / w) as f32);
            0.5 + 0.25 * (x * 0.37).sin() + 0.25 * (y * 0.23).cos()
        })
        .collect()
}

/// The texture unit's bilinear filter, as the CUDA programming guide gives it, with clamped
/// addressing, in texel coordinates.
fn bilinear(img: &[f32], w: usize, h: usize, x: f32, y: f32) -> f32 {
    let (xb, yb) = (x - 0.5, y - 0.5);
    let (i, j) = (xb.floor(), yb.floor());
    let (a, b) = (xb - i, yb - j);
    let at = |i: f32, j: f32| {
        let i = (i as isize).clamp(0, w as isize - 1) as usize;
        let j = (j as isize).clamp(0, h as isize - 1) as usize;
        img[j * w + i]
    };
    (1.0 - a) * (1.0 - b) * at(i, j)
        + a * (1.0 - b) * at(i + 1.0, j)
        + (1.0 - a) * b * at(i, j + 1.0)
        + a * b * at(i + 1.0, j + 1.0)
}

/// A texture kernel samples a 2D array with linear filtering and matches a CPU bilinear
/// reference within 1e-3, at points whose fractions are sixteenths (exact in the hardware's
/// 8-bit weights), inside and past the edges (clamped).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_texture_kernel_samples_a_2d_array_with_linear_filtering_like_a_cpu_bilinear_reference() {
    let gpu = Gpu::new();
    let (w, h) = (64usize, 48usize);
    let img = image(w, h);
    let mut array =
        Arc::new(Array::new(&gpu.stream, &ArrayOptions::two_d(ArrayFormat::F32, w, h)).unwrap());
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&img, &gpu.stream)
        .unwrap();
    let texture = Texture::from_array(
        &array,
        &TextureOptions::default().with_filter(FilterMode::Linear),
    )
    .unwrap();
    let mut points = Vec::new();
    for k in 0..400 {
        let x = -2.0 + (k % 40) as f32 * (17.0 / 16.0) * 1.7;
        let y = -1.5 + (k / 40) as f32 * (81.0 / 16.0);
        points.push(((x * 16.0).round() / 16.0, (y * 16.0).round() / 16.0));
    }
    let got: Vec<f32> = gpu.sample("sample_2d", &texture, &points, &gpu.stream);
    let mut worst = 0.0f32;
    for (&(x, y), &g) in points.iter().zip(&got) {
        let want = bilinear(&img, w, h, x, y);
        worst = worst.max((g - want).abs());
        assert!(
            (g - want).abs() <= 1e-3,
            "at ({x}, {y}): the texture gave {g}, the CPU {want}"
        );
    }
    println!(
        "bilinear: largest difference from the CPU {worst:e} over {} points",
        points.len()
    );
    // Point filtering reads the texel itself.
    let point = Texture::from_array(&array, &TextureOptions::default()).unwrap();
    let got: Vec<f32> = gpu.sample(
        "sample_2d",
        &point,
        &[(3.5, 2.5), (63.9, 47.9), (0.1, 10.7)],
        &gpu.stream,
    );
    assert_eq!(got, [img[2 * w + 3], img[47 * w + 63], img[10 * w]]);
}

/// Normalized coordinates with wrap addressing repeat the array; 8-bit data read as
/// normalized floats comes back divided by 255; border addressing reads the border colour;
/// 32-bit integers read as they are.
#[test]
#[ignore = "needs a CUDA GPU"]
fn normalized_coordinates_wrap_and_read_modes_return_what_they_promise() {
    let gpu = Gpu::new();
    let (w, h) = (16usize, 8usize);
    let bytes: Vec<u8> = (0..w * h).map(|i| (i * 2 % 256) as u8).collect();
    let mut array =
        Arc::new(Array::new(&gpu.stream, &ArrayOptions::two_d(ArrayFormat::U8, w, h)).unwrap());
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&bytes, &gpu.stream)
        .unwrap();
    let wrapped = Texture::from_array(
        &array,
        &TextureOptions::default()
            .with_normalized_coordinates(true)
            .with_address_mode_all(AddressMode::Wrap)
            .with_read_mode(ReadMode::NormalizedFloat),
    )
    .unwrap();
    let texel = |x: usize, y: usize, shift: (f32, f32)| {
        (
            (x as f32 + 0.5) / w as f32 + shift.0,
            (y as f32 + 0.5) / h as f32 + shift.1,
        )
    };
    let cases = [
        (3, 2, (0.0, 0.0)),
        (3, 2, (1.0, -2.0)),
        (15, 7, (-3.0, 1.0)),
        (0, 5, (2.0, 0.0)),
    ];
    let points: Vec<(f32, f32)> = cases.iter().map(|&(x, y, s)| texel(x, y, s)).collect();
    let got: Vec<f32> = gpu.sample("sample_2d", &wrapped, &points, &gpu.stream);
    for (&(x, y, shift), g) in cases.iter().zip(got) {
        let want = f32::from(bytes[y * w + x]) / 255.0;
        assert!(
            (g - want).abs() < 1e-6,
            "({x}, {y}) shifted by {shift:?}: {g}, not {want}"
        );
    }
    let bordered = Texture::from_array(
        &array,
        &TextureOptions::default()
            .with_normalized_coordinates(true)
            .with_address_mode_all(AddressMode::Border)
            .with_border_color([0.25, 0.0, 0.0, 0.0])
            .with_read_mode(ReadMode::NormalizedFloat),
    )
    .unwrap();
    let got: Vec<f32> = gpu.sample(
        "sample_2d",
        &bordered,
        &[(1.5, 0.5), texel(4, 4, (0.0, 0.0))],
        &gpu.stream,
    );
    // The border colour is held in the array's format, 8-bit unsigned normalized here:
    // 0.25 becomes 64/255 (seen on the H200), a colour of 0 or another texel's would be far.
    let border = (0.25f32 * 255.0).round() / 255.0;
    assert!(
        (got[0] - border).abs() < 1e-6,
        "past the edge: the border colour {border}, not {}",
        got[0]
    );
    assert!((got[1] - f32::from(bytes[4 * w + 4]) / 255.0).abs() < 1e-6);

    let words: Vec<u32> = (0..w * h).map(|i| 0x0101_0101 * i as u32 + 7).collect();
    let mut array =
        Arc::new(Array::new(&gpu.stream, &ArrayOptions::two_d(ArrayFormat::U32, w, h)).unwrap());
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&words, &gpu.stream)
        .unwrap();
    let exact = Texture::from_array(&array, &TextureOptions::default()).unwrap();
    let got: Vec<u32> = gpu.sample(
        "sample_2d_u32",
        &exact,
        &[(5.5, 3.5), (15.5, 7.5)],
        &gpu.stream,
    );
    assert_eq!(got, [words[3 * w + 5], words[7 * w + 15]]);
}

/// Textures over a buffer read it: a pitched 2D one by texel, a 1D linear one by index, each
/// from an offset (the device's texture alignment) and with a pitch that is a multiple of
/// its texture pitch alignment.
#[test]
#[ignore = "needs a CUDA GPU"]
fn textures_over_pitched_and_linear_memory_read_the_buffer() {
    let gpu = Gpu::new();
    let props = gpu.device.properties();
    let align = props.texture_alignment().unwrap() as usize;
    let pitch_align = props.texture_pitch_alignment().unwrap() as usize;
    let (w, h) = (100usize, 20usize);
    let pitch = (w * 4).div_ceil(pitch_align) * pitch_align;
    let floats_per_row = pitch / 4;
    let mut b = gpu.zeros(2 * align / 4 + floats_per_row * h);
    // At least one alignment into the buffer, and aligned whatever the buffer's own address.
    let offset = align + (align - b.ptr().0 as usize % align) % align;
    let offset_floats = offset / 4;
    let mut host = vec![-1.0f32; b.size() / 4];
    for y in 0..h {
        for x in 0..w {
            host[offset_floats + y * floats_per_row + x] = (y * 1000 + x) as f32;
        }
    }
    b.copy_from_host(&host, &gpu.stream).unwrap();
    let b = Arc::new(b);
    let pitched = Texture::from_linear(
        &b,
        &TextureLinear::two_d(ArrayFormat::F32, w, h, pitch).with_offset(offset),
        &TextureOptions::default(),
    )
    .unwrap();
    let points: Vec<(f32, f32)> = (0..h)
        .map(|y| ((y * 5) as f32 + 0.5, y as f32 + 0.5))
        .collect();
    let got: Vec<f32> = gpu.sample("sample_2d", &pitched, &points, &gpu.stream);
    for (y, g) in got.iter().enumerate() {
        assert_eq!(*g, (y * 1000 + y * 5) as f32, "row {y}");
    }
    let linear = Texture::from_linear(
        &b,
        &TextureLinear::one_d(ArrayFormat::F32, floats_per_row * h).with_offset(offset),
        &TextureOptions::default(),
    )
    .unwrap();
    let n = (floats_per_row * h) as u32;
    let out = gpu.zeros(n as usize);
    // SAFETY: `n` results in out; the texture has `n` elements.
    unsafe {
        launch(
            &gpu.stream,
            &LaunchConfig::for_elements(n.into(), 128),
            &gpu.code.get_kernel("fetch_1d").unwrap(),
            &[&linear, &out, &n],
        )
        .unwrap();
    }
    assert_eq!(
        out.to_vec::<f32>(&gpu.stream).unwrap(),
        &host[offset_floats..offset_floats + n as usize]
    );
}

/// Every kind of array round-trips the host and buffers, whole and by region into a pitched
/// layout: 1D, 2D, 3D, 1D and 2D layered, cubemap.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kind_of_array_round_trips_host_and_buffer_copies() {
    let gpu = Gpu::new();
    let s = &gpu.stream;
    for options in [
        ArrayOptions::one_d(ArrayFormat::F32, 300),
        ArrayOptions::two_d(ArrayFormat::U16, 40, 30).with_channels(2),
        ArrayOptions::three_d(ArrayFormat::F32, 16, 12, 10),
        ArrayOptions::layered_1d(ArrayFormat::I32, 50, 6),
        ArrayOptions::layered_2d(ArrayFormat::U8, 32, 16, 5).with_channels(4),
        ArrayOptions::cubemap(ArrayFormat::F32, 8),
    ] {
        let mut array = Array::new(s, &options).unwrap();
        let count = options.bytes().unwrap() / 4;
        let values: Vec<u32> = (0..count as u32)
            .map(|i| i.wrapping_mul(2654435761))
            .collect();
        array.copy_from_host(&values, s).unwrap();
        assert_eq!(
            array.to_vec::<u32>(s).unwrap(),
            values,
            "{options:?} through the host"
        );
        let mut b = gpu.zeros(count);
        array.copy_to_buffer(&mut b, s).unwrap();
        assert_eq!(
            b.to_vec::<u32>(s).unwrap(),
            values,
            "{options:?} into a buffer"
        );
        let mut again = Array::new(s, &options).unwrap();
        again.copy_from_buffer(&b, s).unwrap();
        assert_eq!(
            again.to_vec::<u32>(s).unwrap(),
            values,
            "{options:?} from a buffer"
        );
        // The last element, row and slice of the extent, read into rows padded to 64 bytes.
        let extent = array.extent();
        let origin = [extent[0] / 2, extent[1] / 2, extent[2] / 2];
        let region = ArrayRegion::new(
            origin,
            [
                extent[0] - origin[0],
                extent[1] - origin[1],
                extent[2] - origin[2],
            ],
        );
        let element = options.element_bytes();
        let row = region.extent[0] * element;
        let pitch = row.div_ceil(64) * 64;
        let layout = LinearLayout::default().with_row_pitch(pitch);
        let mut out = vec![0u8; pitch * region.extent[1] * region.extent[2]];
        array
            .copy_region_to_host(&region, &mut out, &layout, s)
            .unwrap();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        for z in 0..region.extent[2] {
            for y in 0..region.extent[1] {
                let from = (((origin[2] + z) * extent[1] + origin[1] + y) * extent[0] + origin[0])
                    * element;
                let to = (z * region.extent[1] + y) * pitch;
                assert_eq!(
                    &out[to..to + row],
                    &bytes[from..from + row],
                    "{options:?}: row {y} of slice {z}"
                );
            }
        }
    }
}

/// A layered texture reads each layer; a mipmapped texture reads each level by its level of
/// detail (each level filled through its own array).
#[test]
#[ignore = "needs a CUDA GPU"]
fn layered_and_mipmapped_textures_read_each_layer_and_level() {
    let gpu = Gpu::new();
    let s = &gpu.stream;
    let (w, h, layers) = (8usize, 8usize, 5usize);
    let mut array =
        Arc::new(Array::new(s, &ArrayOptions::layered_2d(ArrayFormat::F32, w, h, layers)).unwrap());
    let values: Vec<f32> = (0..w * h * layers)
        .map(|i| (i / (w * h)) as f32 * 10.0 + 1.0)
        .collect();
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&values, s)
        .unwrap();
    let texture = Texture::from_array(&array, &TextureOptions::default()).unwrap();
    let out = gpu.zeros(layers);
    // SAFETY: `layers` results in out.
    unsafe {
        launch(
            s,
            &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
            &gpu.code.get_kernel("sample_layers").unwrap(),
            &[&texture, &2.5f32, &3.5f32, &out, &(layers as u32)],
        )
        .unwrap();
    }
    assert_eq!(out.to_vec::<f32>(s).unwrap(), [1.0, 11.0, 21.0, 31.0, 41.0]);

    let levels = 4u32;
    let mip = Arc::new(
        MipmappedArray::new(s, &ArrayOptions::two_d(ArrayFormat::F32, 64, 64), levels).unwrap(),
    );
    for level in 0..levels {
        let mut array = mip.level(level).unwrap();
        let [lw, lh, _] = array.extent();
        assert_eq!(
            (lw, lh),
            (64 >> level, 64 >> level),
            "level {level}'s extent"
        );
        array
            .copy_from_host(&vec![(level + 1) as f32 * 100.0; lw * lh], s)
            .unwrap();
    }
    let texture = Texture::from_mipmapped(
        &mip,
        &TextureOptions::default()
            .with_normalized_coordinates(true)
            .with_max_mipmap_level_clamp((levels - 1) as f32),
    )
    .unwrap();
    drop(mip);
    let out = gpu.zeros(levels as usize);
    // SAFETY: `levels` results in out.
    unsafe {
        launch(
            s,
            &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
            &gpu.code.get_kernel("sample_lod").unwrap(),
            &[&texture, &0.5f32, &0.5f32, &out, &levels],
        )
        .unwrap();
    }
    assert_eq!(out.to_vec::<f32>(s).unwrap(), [100.0, 200.0, 300.0, 400.0]);
}

/// A surface kernel writes an array that a copy then reads back; a second kernel reads and
/// rewrites it through the same surface.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_surface_kernel_writes_an_array_read_back_by_copy() {
    let gpu = Gpu::new();
    let s = &gpu.stream;
    let (w, h) = (40u32, 24u32);
    let mut array = Arc::new(
        Array::new(
            s,
            &ArrayOptions::two_d(ArrayFormat::F32, w as usize, h as usize).with_surface(true),
        )
        .unwrap(),
    );
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&vec![-1.0f32; (w * h) as usize], s)
        .unwrap();
    let surface = Surface::new(&array).unwrap();
    let config = LaunchConfig::new([w.div_ceil(16), h.div_ceil(8), 1], [16, 8, 1]);
    // SAFETY: the kernels write the w x h elements of the surface's array, no more.
    unsafe {
        launch(
            s,
            &config,
            &gpu.code.get_kernel("write_surface").unwrap(),
            &[&surface, &w, &h],
        )
        .unwrap();
    }
    let want: Vec<f32> = (0..w * h)
        .map(|i| ((i / w) * 1000 + i % w) as f32)
        .collect();
    assert_eq!(array.to_vec::<f32>(s).unwrap(), want);
    // SAFETY: as above.
    unsafe {
        launch(
            s,
            &config,
            &gpu.code.get_kernel("double_surface").unwrap(),
            &[&surface, &w, &h],
        )
        .unwrap();
    }
    let doubled: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
    assert_eq!(array.to_vec::<f32>(s).unwrap(), doubled);
}

/// A texture dropped right after a launch on another stream than its home outlives the
/// kernel (the drop waits for the home stream, which waits for the launch), and a graph keeps
/// its texture and array through its launches after both were dropped here.
#[test]
#[ignore = "needs a CUDA GPU"]
fn textures_outlive_their_launches_and_graphs_keep_them() {
    // In a process of its own: a stream is held at a gate while the test calls the driver
    // (see the copies module's ordering tests).
    common::alone(
        module_path!(),
        "textures_outlive_their_launches_and_graphs_keep_them",
        textures_outlive_their_launches_and_graphs_keep_them_alone,
    );
}

fn textures_outlive_their_launches_and_graphs_keep_them_alone() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _watchdog = common::Watchdog::new(
        std::time::Duration::from_secs(120),
        "the texture lifetime test",
    );
    let gpu = Gpu::new();
    let (w, h) = (32usize, 32usize);
    let img = image(w, h);
    let mut array =
        Arc::new(Array::new(&gpu.stream, &ArrayOptions::two_d(ArrayFormat::F32, w, h)).unwrap());
    Arc::get_mut(&mut array)
        .unwrap()
        .copy_from_host(&img, &gpu.stream)
        .unwrap();
    let other = stream(gpu.device);
    let points: Vec<(f32, f32)> = (0..256)
        .map(|i| ((i % 32) as f32 + 0.5, (i / 32) as f32 + 0.5))
        .collect();
    let xs = gpu.floats(&points.iter().map(|p| p.0).collect::<Vec<_>>());
    let ys = gpu.floats(&points.iter().map(|p| p.1).collect::<Vec<_>>());
    let out = gpu.zeros(256);
    let sample = gpu.code.get_kernel("sample_2d").unwrap();
    let run = |texture: &Texture| {
        // SAFETY: 256 points and results; the texture's drop waits for the kernel.
        unsafe {
            launch(
                &other,
                &LaunchConfig::for_elements(256, 128),
                &sample,
                &[texture, &xs, &ys, &out, &256u32],
            )
            .unwrap();
        }
    };
    // Once before the gate: a kernel's first launch in a context loads it, which waits for
    // every stream of the context (the gated one too).
    run(&Texture::from_array(&array, &TextureOptions::default()).unwrap());
    other.sync().unwrap();
    gpu.stream.sync().unwrap();
    // The kernel queued behind a gate: dropping the texture (its last handle) must wait for
    // it, so the drop returns only after the gate opens, a second later from another thread.
    // A drop that destroyed the object at once would return before.
    let gate = common::Gate::close(&other);
    let texture = Texture::from_array(&array, &TextureOptions::default()).unwrap();
    run(&texture);
    let opened = Arc::new(AtomicBool::new(false));
    let opener = {
        let opened = Arc::clone(&opened);
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(1));
            opened.store(true, Ordering::SeqCst);
            gate.open();
        })
    };
    drop(texture);
    assert!(
        opened.load(Ordering::SeqCst),
        "the texture was destroyed while a kernel that samples it was queued"
    );
    opener.join().unwrap();
    assert_eq!(out.to_vec::<f32>(&other).unwrap(), &img[..256]);

    let out = Arc::new(gpu.zeros(256));
    let (xs, ys) = (Arc::new(xs), Arc::new(ys));
    let mut graph = Graph::new(gpu.device).unwrap();
    {
        let texture = Texture::from_array(&array, &TextureOptions::default()).unwrap();
        // SAFETY: as above; the graph keeps the texture and the buffers.
        unsafe {
            graph
                .add_kernel(
                    &[],
                    &LaunchConfig::for_elements(256, 128),
                    &sample,
                    &[&texture, &xs, &ys, &out, &256u32],
                )
                .unwrap();
        }
    }
    let weak = Arc::downgrade(&array);
    drop(array);
    assert!(
        weak.upgrade().is_some(),
        "the graph's texture holds the array"
    );
    let exec = graph.instantiate(GraphOptions::default()).unwrap();
    drop(graph);
    for _ in 0..3 {
        exec.launch(&gpu.stream).unwrap();
    }
    gpu.stream.sync().unwrap();
    assert_eq!(out.to_vec::<f32>(&gpu.stream).unwrap(), &img[..256]);
}

/// On the device, bad inputs are refused by name: a surface over an array made without
/// surface access, linear filtering of 8-bit data read as integers, a misaligned linear
/// texture, an array past the device's limits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_texture_inputs_give_clear_errors_on_the_device() {
    let gpu = Gpu::new();
    let s = &gpu.stream;
    let plain = Arc::new(Array::new(s, &ArrayOptions::two_d(ArrayFormat::U8, 16, 16)).unwrap());
    refused(Surface::new(&plain), "array", "without surface access");
    refused(
        Texture::from_array(
            &plain,
            &TextureOptions::default().with_filter(FilterMode::Linear),
        ),
        "options.filter",
        "linear filtering returns floats",
    );
    let b = buffer(gpu.device, s, 4096);
    refused(
        Texture::from_linear(
            &b,
            &TextureLinear::one_d(ArrayFormat::F32, 16).with_offset(4),
            &TextureOptions::default(),
        ),
        "linear",
        "texture alignment",
    );
    let too_wide = gpu.device.properties().maximum_texture2d_width().unwrap() as usize + 1;
    refused(
        Array::new(s, &ArrayOptions::two_d(ArrayFormat::F32, too_wide, 4)),
        "options",
        "past device 0's texture limits",
    );
}
