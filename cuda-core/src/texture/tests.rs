//! The checks made before the driver for arrays, copies and textures, rule by rule, each
//! refusal beside the nearest input that passes.

use super::array::{check_limits, level_options, max_levels, LimitSets};
use super::copy::{check_linear, check_region};
use super::object::{check_linear_memory, check_options, Reads};
use super::*;
use crate::error::Error;

#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T>, name: &str, says: &str) {
    match result {
        Err(Error::InvalidArgument { name: n, reason }) => {
            assert_eq!(n, name, "refused by the wrong field: {reason}");
            assert!(
                reason.contains(says),
                "the reason {reason:?} does not say {says:?}"
            );
        }
        other => panic!("expected a refusal of {name} ({says}), got {other:?}"),
    }
}

#[test]
fn array_options_name_their_kind() {
    use ArrayFormat::F32;
    assert_eq!(ArrayOptions::one_d(F32, 8).kind(), Ok(ArrayKind::OneD));
    assert_eq!(ArrayOptions::two_d(F32, 8, 4).kind(), Ok(ArrayKind::TwoD));
    assert_eq!(
        ArrayOptions::three_d(F32, 8, 4, 2).kind(),
        Ok(ArrayKind::ThreeD)
    );
    assert_eq!(
        ArrayOptions::layered_1d(F32, 8, 3).kind(),
        Ok(ArrayKind::Layered1d)
    );
    assert_eq!(
        ArrayOptions::layered_2d(F32, 8, 4, 3).kind(),
        Ok(ArrayKind::Layered2d)
    );
    assert_eq!(ArrayOptions::cubemap(F32, 8).kind(), Ok(ArrayKind::Cubemap));
    assert_eq!(
        ArrayOptions::cubemap(F32, 8)
            .with_layered(true)
            .with_depth(12)
            .kind(),
        Ok(ArrayKind::LayeredCubemap)
    );
}

#[test]
fn array_options_that_make_no_array_are_refused_with_the_rule() {
    use ArrayFormat::U8;
    refused(
        ArrayOptions::one_d(U8, 0).kind(),
        "options",
        "the width is 0",
    );
    refused(
        ArrayOptions::one_d(U8, 8).with_channels(3).kind(),
        "options.channels",
        "1, 2 or 4",
    );
    refused(
        ArrayOptions::one_d(U8, 8).with_depth(4).kind(),
        "options",
        "a depth (4) without a height",
    );
    refused(
        ArrayOptions::layered_2d(U8, 8, 8, 0).kind(),
        "options",
        "layer count, and 0 is given",
    );
    refused(
        ArrayOptions::cubemap(U8, 8).with_height(4).kind(),
        "options",
        "faces are square",
    );
    refused(
        ArrayOptions::cubemap(U8, 8).with_depth(5).kind(),
        "options",
        "6 faces; depth is 5",
    );
    refused(
        ArrayOptions::cubemap(U8, 8)
            .with_layered(true)
            .with_depth(9)
            .kind(),
        "options",
        "multiple of 6 faces",
    );
    refused(
        ArrayOptions::three_d(U8, 8, 8, 8)
            .with_texture_gather(true)
            .kind(),
        "options",
        "texture gather is for 2D arrays",
    );
    ArrayOptions::two_d(U8, 8, 8)
        .with_texture_gather(true)
        .kind()
        .unwrap();
    // Channels 0 count as 1.
    assert_eq!(
        ArrayOptions::one_d(U8, 8).with_channels(0).element_bytes(),
        1
    );
}

#[test]
fn array_options_reach_the_driver_as_its_descriptor() {
    let spec = ArrayOptions::layered_2d(ArrayFormat::F16, 64, 32, 3)
        .with_channels(4)
        .with_surface(true)
        .spec();
    assert_eq!(
        (spec.width, spec.height, spec.depth),
        (64, 32, 3),
        "the sizes as given"
    );
    assert_eq!(spec.format, 0x10, "CU_AD_FORMAT_HALF");
    assert_eq!(spec.channels, 4);
    assert_eq!(spec.flags, 0x01 | 0x02, "LAYERED | SURFACE_LDST");
    let cube = ArrayOptions::cubemap(ArrayFormat::I16, 16)
        .with_texture_gather(true)
        .spec();
    assert_eq!(cube.flags, 0x04 | 0x08, "CUBEMAP | TEXTURE_GATHER");
    assert_eq!(cube.format, 0x09);
    let codes = [
        (ArrayFormat::U8, 0x01, 1),
        (ArrayFormat::U16, 0x02, 2),
        (ArrayFormat::U32, 0x03, 4),
        (ArrayFormat::I8, 0x08, 1),
        (ArrayFormat::I16, 0x09, 2),
        (ArrayFormat::I32, 0x0a, 4),
        (ArrayFormat::F16, 0x10, 2),
        (ArrayFormat::F32, 0x20, 4),
    ];
    for (format, code, bytes) in codes {
        assert_eq!((format.code(), format.bytes()), (code, bytes), "{format:?}");
    }
}

#[test]
fn an_arrays_extent_and_bytes_count_what_copies_move() {
    let a = ArrayOptions::layered_1d(ArrayFormat::U16, 100, 7).with_channels(2);
    assert_eq!(a.extent(), [100, 1, 7], "1D layers are slices of one row");
    assert_eq!(a.bytes(), Some(100 * 7 * 4));
    assert_eq!(ArrayOptions::one_d(ArrayFormat::F32, 9).extent(), [9, 1, 1]);
    assert_eq!(
        ArrayOptions::two_d(ArrayFormat::U8, usize::MAX, 2).bytes(),
        None
    );
}

fn limits(texture: [Option<u64>; 3]) -> LimitSets {
    vec![("texture", vec![texture])]
}

#[test]
fn arrays_past_the_devices_limits_are_refused() {
    let a = ArrayOptions::two_d(ArrayFormat::F32, 4096, 2048);
    check_limits(
        &a,
        ArrayKind::TwoD,
        &limits([Some(4096), Some(2048), None]),
        0,
    )
    .unwrap();
    refused(
        check_limits(
            &a,
            ArrayKind::TwoD,
            &limits([Some(4096), Some(2047), None]),
            3,
        ),
        "options",
        "4096 x 2048 x 0 is past device 3's texture limits (4096 x 2047 x -)",
    );
    // 3D: either set of limits will do.
    let deep = ArrayOptions::three_d(ArrayFormat::F32, 100, 100, 4000);
    let both: LimitSets = vec![(
        "texture",
        vec![
            [Some(2048), Some(2048), Some(2048)],
            [Some(1024), Some(1024), Some(8192)],
        ],
    )];
    check_limits(&deep, ArrayKind::ThreeD, &both, 0).unwrap();
    let wide = ArrayOptions::three_d(ArrayFormat::F32, 4000, 100, 4000);
    refused(
        check_limits(&wide, ArrayKind::ThreeD, &both, 0),
        "options",
        "or 1024 x 1024 x 8192",
    );
    // Surface limits apply on top of texture limits.
    let mut sets = limits([Some(4096), Some(4096), None]);
    sets.push(("surface", vec![[Some(1024), Some(1024), None]]));
    refused(
        check_limits(&a, ArrayKind::TwoD, &sets, 0),
        "options",
        "surface limits",
    );
}

#[test]
fn mipmap_levels_halve_each_sized_dimension_but_the_layers() {
    let o = ArrayOptions::two_d(ArrayFormat::F32, 64, 20);
    assert_eq!(max_levels(&o, ArrayKind::TwoD), 7, "64, 32, ..., 1");
    assert_eq!(level_options(&o, ArrayKind::TwoD, 2).extent(), [16, 5, 1]);
    assert_eq!(level_options(&o, ArrayKind::TwoD, 6).extent(), [1, 1, 1]);
    let cube = ArrayOptions::three_d(ArrayFormat::F32, 8, 8, 32);
    assert_eq!(
        max_levels(&cube, ArrayKind::ThreeD),
        6,
        "the depth counts in 3D"
    );
    assert_eq!(
        level_options(&cube, ArrayKind::ThreeD, 3).extent(),
        [1, 1, 4]
    );
    let layers = ArrayOptions::layered_2d(ArrayFormat::F32, 8, 8, 32);
    assert_eq!(
        max_levels(&layers, ArrayKind::Layered2d),
        4,
        "layers do not count"
    );
    assert_eq!(
        level_options(&layers, ArrayKind::Layered2d, 3).extent(),
        [1, 1, 32]
    );
    let one = ArrayOptions::one_d(ArrayFormat::F32, 1);
    assert_eq!(max_levels(&one, ArrayKind::OneD), 1);
    assert_eq!(
        level_options(&one, ArrayKind::OneD, 0).height,
        0,
        "1D stays 1D"
    );
}

#[test]
fn regions_lie_within_the_array() {
    let extent = [16, 8, 4];
    check_region(&ArrayRegion::whole(extent), extent, "region").unwrap();
    check_region(&ArrayRegion::new([15, 7, 3], [1, 1, 1]), extent, "region").unwrap();
    refused(
        check_region(&ArrayRegion::new([15, 0, 0], [2, 1, 1]), extent, "region"),
        "region",
        "along x (elements)",
    );
    refused(
        check_region(&ArrayRegion::new([0, 4, 0], [1, 5, 1]), extent, "region"),
        "region",
        "along y (rows)",
    );
    refused(
        check_region(&ArrayRegion::new([0, 0, 4], [1, 1, 1]), extent, "region"),
        "region",
        "along z",
    );
    refused(
        check_region(&ArrayRegion::new([0, 0, 0], [4, 0, 1]), extent, "region"),
        "region",
        "is empty",
    );
    refused(
        check_region(
            &ArrayRegion::new([usize::MAX, 0, 0], [2, 1, 1]),
            extent,
            "dst_origin",
        ),
        "dst_origin",
        "reaches past",
    );
}

#[test]
fn linear_layouts_need_room_for_every_row_they_place() {
    let region = ArrayRegion::new([0; 3], [10, 3, 2]);
    // Packed: 10 elements of 4 bytes, 3 rows, 2 slices.
    assert_eq!(
        check_linear(&region, 4, &LinearLayout::default(), 240, "src").unwrap(),
        (40, 3)
    );
    refused(
        check_linear(&region, 4, &LinearLayout::default(), 239, "src"),
        "src",
        "needs 240 bytes; 239 are there",
    );
    // Pitched rows and padded slices: the last row starts at (1 * 5 + 2) * 64 from the offset.
    let layout = LinearLayout::default()
        .with_offset(8)
        .with_row_pitch(64)
        .with_rows_per_slice(5);
    let needed = 8 + (5 + 2) * 64 + 40;
    assert_eq!(
        check_linear(&region, 4, &layout, needed, "dst").unwrap(),
        (64, 5)
    );
    refused(
        check_linear(&region, 4, &layout, needed - 1, "dst"),
        "dst",
        &format!("needs {needed} bytes"),
    );
    refused(
        check_linear(&region, 4, &layout.with_row_pitch(39), 1 << 20, "dst"),
        "dst",
        "row pitch 39 is less than a row of the region (10 elements, 40 bytes)",
    );
    refused(
        check_linear(&region, 4, &layout.with_rows_per_slice(2), 1 << 20, "dst"),
        "dst",
        "2 rows per slice are fewer than the region's 3",
    );
    refused(
        check_linear(
            &region,
            4,
            &layout.with_offset(usize::MAX),
            usize::MAX,
            "dst",
        ),
        "dst",
        "more than 2^64",
    );
}

#[test]
fn texture_options_reach_the_driver_as_their_flags_and_codes() {
    let spec = TextureOptions::default().spec();
    assert_eq!(spec.flags, 0x01, "element type: CU_TRSF_READ_AS_INTEGER");
    assert_eq!(spec.address, [1, 1, 1], "clamp");
    assert_eq!(spec.filter, 0);
    let spec = TextureOptions::default()
        .with_read_mode(ReadMode::NormalizedFloat)
        .with_normalized_coordinates(true)
        .with_srgb(true)
        .with_disable_trilinear_optimization(true)
        .with_seamless_cubemap(true)
        .with_filter(FilterMode::Linear)
        .with_mipmap_filter(FilterMode::Linear)
        .with_address_mode([AddressMode::Wrap, AddressMode::Mirror, AddressMode::Border])
        .with_border_color([0.25, 0.5, 0.75, 1.0])
        .with_max_anisotropy(4)
        .with_mipmap_level_bias(0.5)
        .with_max_mipmap_level_clamp(3.0)
        .spec();
    assert_eq!(spec.flags, 0x02 | 0x10 | 0x20 | 0x40);
    assert_eq!(spec.address, [0, 2, 3]);
    assert_eq!((spec.filter, spec.mipmap_filter), (1, 1));
    assert_eq!(spec.border_color, [0.25, 0.5, 0.75, 1.0]);
    assert_eq!(spec.max_anisotropy, 4);
    assert_eq!(spec.mipmap_level_bias, 0.5);
    assert_eq!(spec.max_mipmap_level_clamp, 3.0);
    assert_eq!(
        TextureOptions::default()
            .with_address_mode_all(AddressMode::Border)
            .address_mode,
        [AddressMode::Border; 3]
    );
}

fn array(format: ArrayFormat) -> Reads {
    Reads::Array {
        format,
        kind: ArrayKind::TwoD,
        mipmapped: false,
    }
}

#[test]
fn wrap_and_mirror_need_normalized_coordinates() {
    for mode in [AddressMode::Wrap, AddressMode::Mirror] {
        let o = TextureOptions::default().with_address_mode([AddressMode::Clamp, mode, mode]);
        refused(
            check_options(&o, array(ArrayFormat::F32)),
            "options.address_mode",
            &format!("{mode:?} needs normalized coordinates"),
        );
        check_options(
            &o.with_normalized_coordinates(true),
            array(ArrayFormat::F32),
        )
        .unwrap();
    }
    // Border and clamp do not; a 1D linear texture is fetched by index and ignores the modes.
    check_options(
        &TextureOptions::default().with_address_mode_all(AddressMode::Border),
        array(ArrayFormat::F32),
    )
    .unwrap();
    check_options(
        &TextureOptions::default().with_address_mode_all(AddressMode::Wrap),
        Reads::Linear {
            format: ArrayFormat::F32,
            height: 0,
        },
    )
    .unwrap();
}

#[test]
fn linear_filtering_needs_a_fetch_that_returns_floats() {
    let linear = TextureOptions::default().with_filter(FilterMode::Linear);
    for float in [ArrayFormat::F32, ArrayFormat::F16] {
        check_options(&linear, array(float)).unwrap();
    }
    for small in [
        ArrayFormat::U8,
        ArrayFormat::I8,
        ArrayFormat::U16,
        ArrayFormat::I16,
    ] {
        refused(
            check_options(&linear, array(small)),
            "options.filter",
            "linear filtering returns floats",
        );
        check_options(
            &linear.with_read_mode(ReadMode::NormalizedFloat),
            array(small),
        )
        .unwrap();
    }
    // 32-bit integers are never promoted.
    for wide in [ArrayFormat::U32, ArrayFormat::I32] {
        refused(
            check_options(
                &linear.with_read_mode(ReadMode::NormalizedFloat),
                array(wide),
            ),
            "options.filter",
            "linear filtering",
        );
    }
    // Pitched 2D memory is filtered too.
    refused(
        check_options(
            &linear,
            Reads::Linear {
                format: ArrayFormat::U8,
                height: 4,
            },
        ),
        "options.filter",
        "linear filtering",
    );
}

#[test]
fn mipmapped_textures_need_normalized_coordinates_and_cubemap_filtering_a_cubemap() {
    let mip = Reads::Array {
        format: ArrayFormat::F32,
        kind: ArrayKind::TwoD,
        mipmapped: true,
    };
    refused(
        check_options(&TextureOptions::default(), mip),
        "options.normalized_coordinates",
        "mipmapped",
    );
    check_options(
        &TextureOptions::default().with_normalized_coordinates(true),
        mip,
    )
    .unwrap();
    let seamless = TextureOptions::default().with_seamless_cubemap(true);
    refused(
        check_options(&seamless, array(ArrayFormat::F32)),
        "options.seamless_cubemap",
        "this is TwoD",
    );
    for kind in [ArrayKind::Cubemap, ArrayKind::LayeredCubemap] {
        check_options(
            &seamless,
            Reads::Array {
                format: ArrayFormat::F32,
                kind,
                mipmapped: false,
            },
        )
        .unwrap();
    }
    refused(
        check_options(
            &seamless,
            Reads::Linear {
                format: ArrayFormat::F32,
                height: 0,
            },
        ),
        "options.seamless_cubemap",
        "not linear memory",
    );
}

/// Alignment 512, pitch alignment 32, 2D limits 4096 x 4096 and a pitch of 1 MiB, 1D
/// limit 2^20 elements.
const LIMITS: [u64; 6] = [512, 32, 4096, 4096, 1 << 20, 1 << 20];

#[test]
fn a_1d_linear_texture_is_refused_past_the_devices_width() {
    let at_limit = TextureLinear::one_d(ArrayFormat::U8, 1 << 20);
    check_linear_memory(&at_limit, 0x1000, 1 << 20, &LIMITS).unwrap();
    let past = TextureLinear::one_d(ArrayFormat::U8, (1 << 20) + 1);
    refused(
        check_linear_memory(&past, 0x1000, 2 << 20, &LIMITS),
        "linear",
        "1048577 elements is past the device's 1D linear texture limit of 1048576",
    );
}

#[test]
fn linear_texture_memory_is_aligned_and_within_the_buffer() {
    let one = TextureLinear::one_d(ArrayFormat::F32, 256);
    check_linear_memory(&one, 0x1000, 1024, &LIMITS).unwrap();
    refused(
        check_linear_memory(&one, 0x1000, 1023, &LIMITS),
        "linear",
        "needs 1024 bytes from offset 0; the buffer holds 1023",
    );
    refused(
        check_linear_memory(&one.with_offset(256), 0x1000, 4096, &LIMITS),
        "linear",
        "not aligned to the device's texture alignment of 512 bytes",
    );
    check_linear_memory(&one.with_offset(512), 0x1000, 1536, &LIMITS).unwrap();
    refused(
        check_linear_memory(&one.with_offset(512), 0x1000, 1535, &LIMITS),
        "linear",
        "from offset 512",
    );
    refused(
        check_linear_memory(&one.with_offset(4096), 0x1000, 4096, &LIMITS),
        "linear",
        "the buffer holds 4096",
    );
    // An offset past the end is refused as such, whatever its size (its sum with the
    // address is never formed).
    for offset in [4097, usize::MAX] {
        refused(
            check_linear_memory(&one.with_offset(offset), 0x1000, 4096, &LIMITS),
            "linear",
            &format!("the offset {offset} is at or past the end: the buffer holds 4096 bytes"),
        );
    }
    refused(
        check_linear_memory(&one.with_width(0), 0x1000, 4096, &LIMITS),
        "linear",
        "width is 0",
    );
    refused(
        check_linear_memory(&one.with_channels(3), 0x1000, 4096, &LIMITS),
        "linear.channels",
        "1, 2 or 4",
    );
}

#[test]
fn pitched_texture_memory_keeps_the_devices_pitch_rules() {
    // 100 floats a row (400 bytes) in rows of 416, 10 rows: 9 * 416 + 400 bytes.
    let two = TextureLinear::two_d(ArrayFormat::F32, 100, 10, 416);
    let needed = 9 * 416 + 400;
    check_linear_memory(&two, 0x2000, needed, &LIMITS).unwrap();
    refused(
        check_linear_memory(&two, 0x2000, needed - 1, &LIMITS),
        "linear",
        &format!("needs {needed} bytes"),
    );
    refused(
        check_linear_memory(&two.with_pitch(420), 0x2000, 1 << 20, &LIMITS),
        "linear",
        "not a multiple of the device's texture pitch alignment of 32 bytes",
    );
    refused(
        check_linear_memory(&two.with_pitch(384), 0x2000, 1 << 20, &LIMITS),
        "linear",
        "less than a row of 100 elements of 4 bytes",
    );
    refused(
        check_linear_memory(&two.with_height(4097), 0x2000, 1 << 30, &LIMITS),
        "linear",
        "past the device's 2D linear texture limit of 4096 x 4096",
    );
    refused(
        check_linear_memory(&two.with_pitch(2 << 20), 0x2000, 1 << 30, &LIMITS),
        "linear",
        "past the device's limit of 1048576 bytes",
    );
}

#[test]
fn region_and_layout_options_chain_as_their_literals() {
    assert_eq!(
        ArrayRegion::default()
            .with_origin([1, 2, 3])
            .with_extent([4, 5, 6]),
        ArrayRegion::new([1, 2, 3], [4, 5, 6])
    );
    assert_eq!(
        LinearLayout::default().with_row_pitch(64),
        LinearLayout {
            row_pitch: 64,
            ..Default::default()
        }
    );
    assert_eq!(
        TextureLinear::two_d(ArrayFormat::U8, 4, 2, 32).with_channels(4),
        TextureLinear {
            format: ArrayFormat::U8,
            channels: 4,
            width: 4,
            height: 2,
            pitch: 32,
            offset: 0,
        }
    );
}

/// Arrays, textures and surfaces are shared between threads as the driver allows (its handles
/// are thread-safe): a kernel argument made on one thread is launched from another.
#[test]
fn arrays_textures_and_surfaces_are_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Array>();
    both::<MipmappedArray>();
    both::<Texture>();
    both::<Surface>();
    both::<crate::tensor_map::TensorMap>();
}
