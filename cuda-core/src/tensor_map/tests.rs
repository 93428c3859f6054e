//! The checks of tensor-map layouts, rule by rule: each rule's refusal (by the field it names
//! and what it says) next to the nearest layout that passes, so that a check too loose or too
//! strict fails here.

use super::rules::{check_detailed, fast_check, Tensor};
use super::*;

/// A 1024 x 1024 f32 matrix in 32 x 32 boxes.
fn matrix() -> TiledOptions {
    TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32])
}

/// An NHWC tensor of f16: 64 channels, 16 x 16 pixels, 2 images.
fn nhwc() -> Im2colOptions {
    Im2colOptions {
        data_type: TensorDataType::F16,
        dims: vec![64, 16, 16, 2],
        lower_corner: vec![-1, -1],
        upper_corner: vec![-1, -1],
        channels_per_pixel: 64,
        pixels_per_column: 128,
        ..Default::default()
    }
}

fn wide() -> Im2colWideOptions {
    Im2colWideOptions {
        data_type: TensorDataType::F16,
        dims: vec![64, 16, 2],
        lower_corner_width: -1,
        upper_corner_width: -1,
        channels_per_pixel: 64,
        pixels_per_column: 16,
        swizzle: TensorMapSwizzle::B128,
        ..Default::default()
    }
}

fn tiled(o: &TiledOptions) -> Result<Checked> {
    check(&Layout::of_tiled(o))
}

fn im2col(o: &Im2colOptions) -> Result<Checked> {
    check(&Layout::of_im2col(o))
}

fn im2col_wide(o: &Im2colWideOptions) -> Result<Checked> {
    check(&Layout::of_im2col_wide(o))
}

/// Asserts a refusal of `name` whose reason contains `says`.
#[track_caller]
fn refused(result: Result<Checked>, name: &str, says: &str) {
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
fn a_packed_matrix_passes_with_its_strides_span_and_alignment_worked_out() {
    let c = tiled(&matrix()).unwrap();
    assert_eq!(c.rank, 2);
    assert_eq!(&c.dims[..2], &[1024, 1024]);
    assert_eq!(c.strides[0], 4096, "packed rows of 1024 floats");
    assert_eq!(
        &c.element_strides[..2],
        &[1, 1],
        "element strides default to 1"
    );
    assert_eq!(c.align, 16);
    assert_eq!(c.span, 1024 * 1024 * 4);
}

#[test]
fn given_strides_set_the_span_from_the_last_element_of_the_last_row() {
    // 100 u8 per row, rows 128 bytes apart, 10 rows: the last row starts at 9 * 128.
    let o = TiledOptions::new(TensorDataType::U8, &[100, 10], &[16, 4]).with_strides(vec![128]);
    let c = tiled(&o).unwrap();
    assert_eq!(c.strides[0], 128);
    assert_eq!(c.span, 9 * 128 + 100);
    // Three dimensions: slices 2048 bytes apart.
    let o =
        TiledOptions::new(TensorDataType::U16, &[8, 4, 3], &[8, 4, 1]).with_strides(vec![16, 2048]);
    assert_eq!(tiled(&o).unwrap().span, 2 * 2048 + 3 * 16 + 16);
    // Packed, three dimensions: each stride the previous times the size.
    let o = TiledOptions::new(TensorDataType::F64, &[4, 3, 5], &[2, 1, 1]);
    let c = tiled(&o).unwrap();
    assert_eq!(&c.strides[..2], &[32, 96]);
    assert_eq!(c.span, 4 * 3 * 5 * 8);
}

#[test]
fn a_span_past_64_bits_is_saturated_not_wrapped() {
    let o = TiledOptions::new(TensorDataType::U8, &[1 << 32, 1 << 32], &[16, 1])
        .with_strides(vec![(1 << 40) - 16]);
    assert_eq!(tiled(&o).unwrap().span, u64::MAX);
}

#[test]
fn tiled_maps_have_one_to_five_dimensions() {
    refused(
        tiled(&matrix().with_dims(vec![]).with_box_dims(vec![])),
        "options.dims",
        "1 to 5 dimensions; 0 given",
    );
    let six = TiledOptions::new(TensorDataType::F32, &[4; 6], &[4; 6]);
    refused(tiled(&six), "options.dims", "1 to 5 dimensions; 6 given");
    let five = TiledOptions::new(TensorDataType::F32, &[4; 5], &[4; 5]);
    assert_eq!(tiled(&five).unwrap().rank, 5);
    let one = TiledOptions::new(TensorDataType::F32, &[64], &[4]);
    assert_eq!(tiled(&one).unwrap().span, 256);
}

#[test]
fn im2col_maps_have_three_to_five_dimensions() {
    let mut o = nhwc();
    o.dims = vec![64, 16];
    refused(im2col(&o), "options.dims", "3 to 5 dimensions; 2 given");
    o.dims = vec![64, 2, 2, 2, 2, 2];
    refused(im2col(&o), "options.dims", "3 to 5 dimensions; 6 given");
    let mut w = wide();
    w.dims = vec![64, 16];
    refused(im2col_wide(&w), "options.dims", "3 to 5 dimensions");
}

#[test]
fn interleaved_maps_have_at_least_three_dimensions() {
    let two = TiledOptions::new(TensorDataType::F16, &[8, 64], &[8, 8])
        .with_interleave(TensorMapInterleave::B16);
    refused(
        tiled(&two),
        "options.interleave",
        "at least 3 dimensions; 2 given",
    );
    let three = TiledOptions::new(TensorDataType::F16, &[8, 64, 4], &[8, 8, 1])
        .with_interleave(TensorMapInterleave::B16);
    tiled(&three).unwrap();
}

#[test]
fn dimensions_are_one_to_two_to_the_32() {
    refused(
        tiled(&matrix().with_dims(vec![1024, 0])),
        "options.dims",
        "dimension 1 is 0",
    );
    let o = TiledOptions::new(TensorDataType::U8, &[(1 << 32) + 1], &[16]);
    refused(tiled(&o), "options.dims", "1 to 2^32");
    tiled(&TiledOptions::new(TensorDataType::U8, &[1 << 32], &[16])).unwrap();
}

#[test]
fn packed_types_have_their_own_dimension_rules() {
    let o = TiledOptions::new(TensorDataType::U4x16Align16, &[256, 4], &[128, 1])
        .with_strides(vec![256]);
    tiled(&o).unwrap();
    refused(
        tiled(&o.clone().with_dims(vec![200, 4])),
        "options.dims",
        "multiple of 128",
    );
    let o = TiledOptions::new(TensorDataType::U4x16Align8, &[64, 4], &[32, 1]);
    tiled(&o).unwrap();
    refused(tiled(&o.with_dims(vec![63, 4])), "options.dims", "even");
}

#[test]
fn strides_are_one_per_outer_dimension_multiples_of_16_below_2_to_the_40() {
    refused(
        tiled(&matrix().with_strides(vec![4096, 4096])),
        "options.strides",
        "2 given",
    );
    refused(
        tiled(&matrix().with_strides(vec![4100])),
        "options.strides",
        "4100 bytes, not a multiple of 16",
    );
    tiled(&matrix().with_strides(vec![4112])).unwrap();
    refused(
        tiled(&matrix().with_strides(vec![1 << 40])),
        "options.strides",
        "below 2^40",
    );
    tiled(&matrix().with_strides(vec![(1 << 40) - 16])).unwrap();
    // Packed rows that are not a multiple of 16 bytes: the message says to pad.
    let o = TiledOptions::new(TensorDataType::F32, &[5, 4], &[4, 4]);
    refused(
        tiled(&o),
        "options.strides",
        "(packed: give strides with padding)",
    );
}

#[test]
fn strides_and_addresses_need_32_bytes_with_32_byte_interleave_and_16_byte_packed_types() {
    let o = TiledOptions::new(TensorDataType::F16, &[16, 8, 8], &[16, 8, 1])
        .with_interleave(TensorMapInterleave::B32)
        .with_swizzle(TensorMapSwizzle::B32)
        .with_strides(vec![48, 384]);
    refused(tiled(&o), "options.strides", "not a multiple of 32");
    let c = tiled(&o.with_strides(vec![64, 512])).unwrap();
    assert_eq!(c.align, 32);
    let packed = TiledOptions::new(TensorDataType::U6x16Align16, &[128, 2], &[128, 1])
        .with_strides(vec![144]);
    refused(tiled(&packed), "options.strides", "not a multiple of 32");
    assert_eq!(tiled(&packed.with_strides(vec![160])).unwrap().align, 32);
    assert_eq!(
        tiled(&matrix().with_interleave(TensorMapInterleave::None))
            .unwrap()
            .align,
        16
    );
}

#[test]
fn element_strides_are_one_each_from_one_to_eight() {
    refused(
        tiled(&matrix().with_element_strides(vec![1])),
        "options.element_strides",
        "1 given for a tensor of 2 dimensions",
    );
    refused(
        tiled(&matrix().with_element_strides(vec![1, 0])),
        "options.element_strides",
        "element stride 1 is 0",
    );
    refused(
        tiled(&matrix().with_element_strides(vec![9, 1])),
        "options.element_strides",
        "1 to 8",
    );
    let c = tiled(&matrix().with_element_strides(vec![8, 2])).unwrap();
    assert_eq!(&c.element_strides[..2], &[8, 2]);
}

#[test]
fn boxes_are_one_to_256_within_the_tensor() {
    refused(
        tiled(&matrix().with_box_dims(vec![32])),
        "options.box_dims",
        "1 given",
    );
    refused(
        tiled(&matrix().with_box_dims(vec![32, 0])),
        "options.box_dims",
        "box dimension 1 is 0",
    );
    refused(
        tiled(&matrix().with_box_dims(vec![32, 257])),
        "options.box_dims",
        "1 to 256",
    );
    tiled(&matrix().with_box_dims(vec![32, 256])).unwrap();
    let small = TiledOptions::new(TensorDataType::F32, &[64, 8], &[16, 16]);
    refused(
        tiled(&small),
        "options.box_dims",
        "box dimension 1 is 16, larger than the tensor's 8",
    );
    tiled(&small.with_box_dims(vec![16, 8])).unwrap();
}

#[test]
fn the_innermost_box_dimension_is_a_multiple_of_16_bytes_without_interleave() {
    refused(
        tiled(&matrix().with_box_dims(vec![3, 32])),
        "options.box_dims",
        "12 bytes: without interleave it must be a multiple of 16 bytes",
    );
    tiled(&matrix().with_box_dims(vec![4, 32])).unwrap();
    // Interleaved: any count.
    let o = TiledOptions::new(TensorDataType::F16, &[8, 64, 4], &[3, 8, 1])
        .with_interleave(TensorMapInterleave::B16);
    tiled(&o).unwrap();
    // In bits for the 4-bit type: 32 values are 16 bytes, 16 are 8.
    let o = TiledOptions::new(TensorDataType::U4x16Align8, &[64, 4], &[16, 1]);
    refused(tiled(&o), "options.box_dims", "8 bytes");
    // The 16-byte-aligned packed types take boxes of 128.
    let o = TiledOptions::new(TensorDataType::U4x16Align16, &[256, 4], &[64, 1])
        .with_strides(vec![256]);
    refused(tiled(&o), "options.box_dims", "box dimension 0 to be 128");
}

#[test]
fn a_swizzle_spans_at_least_the_innermost_box_dimension() {
    use TensorMapSwizzle as S;
    for (swizzle, fits, too_wide) in [(S::B32, 8, 16), (S::B64, 16, 32), (S::B128, 32, 64)] {
        let o = matrix().with_swizzle(swizzle);
        tiled(&o.clone().with_box_dims(vec![fits, 8])).unwrap();
        refused(
            tiled(&o.with_box_dims(vec![too_wide, 8])),
            "options.swizzle",
            &format!("{} bytes, more than the", too_wide * 4),
        );
    }
    for swizzle in [S::B128Atom32, S::B128Atom32Flip8, S::B128Atom64] {
        tiled(&matrix().with_swizzle(swizzle).with_box_dims(vec![32, 8])).unwrap();
        refused(
            tiled(&matrix().with_swizzle(swizzle).with_box_dims(vec![36, 8])),
            "options.swizzle",
            "128-byte span",
        );
    }
    // No swizzle: any width.
    tiled(&matrix().with_box_dims(vec![256, 8])).unwrap();
}

#[test]
fn thirty_two_byte_interleave_takes_the_32_byte_swizzle_only() {
    let o = TiledOptions::new(TensorDataType::F16, &[16, 8, 8], &[16, 8, 1])
        .with_interleave(TensorMapInterleave::B32);
    refused(
        tiled(&o),
        "options.swizzle",
        "32-byte interleave needs the 32-byte swizzle",
    );
    let o = o.with_swizzle(TensorMapSwizzle::B32);
    tiled(&o).unwrap();
    // With interleave the box's width is not held to the swizzle span.
    let o = TiledOptions::new(TensorDataType::F32, &[64, 8, 8], &[64, 8, 1])
        .with_interleave(TensorMapInterleave::B16)
        .with_swizzle(TensorMapSwizzle::B32);
    tiled(&o).unwrap();
}

#[test]
fn packed_types_take_their_documented_swizzles() {
    use TensorMapSwizzle as S;
    let u6 = TiledOptions::new(TensorDataType::U6x16Align16, &[128, 2], &[128, 1])
        .with_strides(vec![128]);
    for ok in [S::None, S::B128, S::B128Atom32, S::B128Atom64] {
        tiled(&u6.clone().with_swizzle(ok)).unwrap();
    }
    for no in [S::B32, S::B64, S::B128Atom32Flip8] {
        refused(
            tiled(&u6.clone().with_swizzle(no)),
            "options.swizzle",
            "takes the swizzles",
        );
    }
    refused(
        tiled(
            &TiledOptions::new(TensorDataType::U6x16Align16, &[128, 2, 2], &[128, 1, 1])
                .with_strides(vec![128, 256])
                .with_interleave(TensorMapInterleave::B16),
        ),
        "options.interleave",
        "not interleaved",
    );
    let u4 = TiledOptions::new(TensorDataType::U4x16Align16, &[128, 2], &[128, 1])
        .with_strides(vec![128]);
    for ok in [S::None, S::B128, S::B128Atom32] {
        tiled(&u4.clone().with_swizzle(ok)).unwrap();
    }
    refused(
        tiled(&u4.with_swizzle(S::B128Atom64)),
        "options.swizzle",
        "takes the swizzles",
    );
}

#[test]
fn the_nan_fill_is_for_floating_point_types() {
    let nan = |t: TensorDataType| {
        TiledOptions::new(t, &[64, 4], &[16, 4]).with_oob_fill(TensorMapOobFill::NanRequestZeroFma)
    };
    for float in [
        TensorDataType::F16,
        TensorDataType::BF16,
        TensorDataType::F32,
        TensorDataType::F32Ftz,
        TensorDataType::TF32,
        TensorDataType::TF32Ftz,
        TensorDataType::F64,
    ] {
        tiled(&nan(float)).unwrap();
    }
    for int in [
        TensorDataType::U8,
        TensorDataType::U16,
        TensorDataType::U32,
        TensorDataType::I32,
        TensorDataType::U64,
        TensorDataType::I64,
    ] {
        refused(tiled(&nan(int)), "options.oob_fill", "floating-point types");
    }
}

#[test]
fn im2col_corners_are_per_spatial_dimension_in_the_ranks_range() {
    let mut o = nhwc();
    im2col(&o).unwrap();
    o.lower_corner = vec![-1];
    refused(
        im2col(&o),
        "options.lower_corner",
        "1 offsets given; a tensor of 4 dimensions has 2",
    );
    for (rank, low, high) in [(3usize, -32768, 32767), (4, -128, 127), (5, -16, 15)] {
        let spatial = rank - 2;
        let mut o = Im2colOptions {
            data_type: TensorDataType::F32,
            dims: vec![4; rank],
            lower_corner: vec![low; spatial],
            upper_corner: vec![high; spatial],
            channels_per_pixel: 4,
            pixels_per_column: 4,
            ..Default::default()
        };
        // 4 pixels wide: 4 - low + high is never below 1 at these bounds.
        im2col(&o).unwrap();
        o.lower_corner[0] = low - 1;
        refused(
            im2col(&o),
            "options.lower_corner",
            &format!("within {low}..={high}"),
        );
        o.lower_corner[0] = low;
        o.upper_corner[spatial - 1] = high + 1;
        refused(
            im2col(&o),
            "options.upper_corner",
            &format!("within {low}..={high}"),
        );
    }
}

#[test]
fn an_im2col_bounding_box_is_not_empty() {
    let mut o = nhwc();
    // 16 wide: lower 8, upper -8 leaves 0.
    o.lower_corner = vec![8, 0];
    o.upper_corner = vec![-8, 0];
    refused(
        im2col(&o),
        "options.upper_corner",
        "empty along dimension 1",
    );
    o.upper_corner = vec![-7, 0];
    im2col(&o).unwrap();
}

#[test]
fn im2col_channels_and_pixels_are_in_range() {
    let mut o = nhwc();
    o.channels_per_pixel = 0;
    refused(im2col(&o), "options.channels_per_pixel", "1 to 256");
    o.channels_per_pixel = 257;
    refused(im2col(&o), "options.channels_per_pixel", "1 to 256");
    o.channels_per_pixel = 64;
    o.pixels_per_column = 0;
    refused(im2col(&o), "options.pixels_per_column", "1 to 1024");
    o.pixels_per_column = 1025;
    refused(im2col(&o), "options.pixels_per_column", "1 to 1024");
    o.pixels_per_column = 1024;
    im2col(&o).unwrap();
    // The channels of a pixel are what the swizzle spans: 64 halves are 128 bytes.
    o.swizzle = TensorMapSwizzle::B64;
    refused(
        im2col(&o),
        "options.swizzle",
        "pixel's channels is 128 bytes",
    );
    o.swizzle = TensorMapSwizzle::B128;
    im2col(&o).unwrap();
}

#[test]
fn wide_im2col_has_its_own_swizzles_corners_and_pixel_rule() {
    use TensorMapSwizzle as S;
    let w = wide();
    im2col_wide(&w).unwrap();
    for no in [S::None, S::B32, S::B128Atom32Flip8, S::B128Atom64] {
        refused(
            im2col_wide(&w.clone().with_swizzle(no)),
            "options.swizzle",
            "a wide im2col tensor map of F16 takes the swizzles",
        );
    }
    // 64 halves do not fit 64 bytes; 32 do.
    refused(
        im2col_wide(&w.clone().with_swizzle(S::B64)),
        "options.swizzle",
        "128 bytes",
    );
    im2col_wide(&w.clone().with_swizzle(S::B64).with_channels_per_pixel(32)).unwrap();
    refused(
        im2col_wide(&w.clone().with_lower_corner_width(-32769)),
        "options.lower_corner_width",
        "outside",
    );
    refused(
        im2col_wide(
            &w.clone()
                .with_lower_corner_width(10)
                .with_upper_corner_width(-6),
        ),
        "options.upper_corner_width",
        "empty along W",
    );
    // The pixel count is read in W mode only.
    refused(
        im2col_wide(&w.clone().with_pixels_per_column(0)),
        "options.pixels_per_column",
        "1 to 1024",
    );
    im2col_wide(
        &w.clone()
            .with_pixels_per_column(0)
            .with_mode(Im2colWideMode::W128),
    )
    .unwrap();
    let u4 = Im2colWideOptions {
        data_type: TensorDataType::U4x16Align16,
        dims: vec![128, 16, 2],
        strides: vec![128, 2048],
        channels_per_pixel: 128,
        ..w
    };
    im2col_wide(&u4).unwrap();
    refused(
        im2col_wide(&u4.with_swizzle(S::B64)),
        "options.swizzle",
        "U4x16Align16 takes the swizzles",
    );
}

#[test]
fn the_enums_carry_the_headers_codes() {
    // CUtensorMapDataType, in the header's order.
    let types = [
        TensorDataType::U8,
        TensorDataType::U16,
        TensorDataType::U32,
        TensorDataType::I32,
        TensorDataType::U64,
        TensorDataType::I64,
        TensorDataType::F16,
        TensorDataType::F32,
        TensorDataType::F64,
        TensorDataType::BF16,
        TensorDataType::F32Ftz,
        TensorDataType::TF32,
        TensorDataType::TF32Ftz,
        TensorDataType::U4x16Align8,
        TensorDataType::U4x16Align16,
        TensorDataType::U6x16Align16,
    ];
    for (code, t) in types.iter().enumerate() {
        assert_eq!(t.code(), code as u32, "{t:?}");
    }
    let swizzles = [
        TensorMapSwizzle::None,
        TensorMapSwizzle::B32,
        TensorMapSwizzle::B64,
        TensorMapSwizzle::B128,
        TensorMapSwizzle::B128Atom32,
        TensorMapSwizzle::B128Atom32Flip8,
        TensorMapSwizzle::B128Atom64,
    ];
    for (code, s) in swizzles.iter().enumerate() {
        assert_eq!(s.code(), code as u32, "{s:?}");
    }
    assert_eq!(TensorMapInterleave::B32.code(), 2);
    assert_eq!(TensorMapL2Promotion::B256.code(), 3);
    assert_eq!(TensorMapOobFill::NanRequestZeroFma.code(), 1);
    assert_eq!(Im2colWideMode::W128.code(), 1);
    // Sizes in memory, in bits.
    assert_eq!(TensorDataType::BF16.bits_in_memory(), 16);
    assert_eq!(TensorDataType::TF32.bits_in_memory(), 32);
    assert_eq!(TensorDataType::I64.bits_in_memory(), 64);
    assert_eq!(TensorDataType::U4x16Align8.bits_in_memory(), 4);
    assert_eq!(TensorDataType::U6x16Align16.bits_in_memory(), 8);
}

#[test]
fn a_descriptor_is_128_bytes_aligned_to_128_and_shows_its_words() {
    assert_eq!(std::mem::size_of::<TensorMapDescriptor>(), 128);
    assert_eq!(std::mem::align_of::<TensorMapDescriptor>(), 128);
    let mut words = [0u64; 16];
    words[0] = 0xabc;
    let d = TensorMapDescriptor::from_words(words);
    assert_eq!(d.as_words()[0], 0xabc);
    assert!(format!("{d:?}").starts_with("TensorMapDescriptor(0000000000000abc"));
    // A tensor map's leading bytes are its descriptor (the kernel argument).
    assert_eq!(std::mem::offset_of!(TensorMap, descriptor), 0);
}

#[test]
fn options_chain_as_their_struct_literals_say() {
    let chained = TiledOptions::default()
        .with_data_type(TensorDataType::BF16)
        .with_dims(vec![64, 64])
        .with_box_dims(vec![64, 8])
        .with_swizzle(TensorMapSwizzle::B128)
        .with_l2_promotion(TensorMapL2Promotion::B128)
        .with_oob_fill(TensorMapOobFill::NanRequestZeroFma);
    let literal = TiledOptions {
        data_type: TensorDataType::BF16,
        dims: vec![64, 64],
        box_dims: vec![64, 8],
        swizzle: TensorMapSwizzle::B128,
        l2_promotion: TensorMapL2Promotion::B128,
        oob_fill: TensorMapOobFill::NanRequestZeroFma,
        ..Default::default()
    };
    assert_eq!(chained, literal);
    assert_eq!(
        TiledOptions::new(TensorDataType::U8, &[32], &[16]),
        TiledOptions::default()
            .with_data_type(TensorDataType::U8)
            .with_dims(vec![32])
            .with_box_dims(vec![16])
    );
    assert_eq!(TensorDataType::default(), TensorDataType::F32);
}

mod agreement {
    //! The fast check on the encode's path and the detailed one that explains refusals give
    //! the same answer for every layout: the same arrays where both pass, a refusal where
    //! either refuses.

    use super::*;
    use proptest::prelude::*;

    fn pick<T: Clone + std::fmt::Debug + 'static>(
        values: &'static [T],
    ) -> impl Strategy<Value = T> {
        proptest::sample::select(values)
    }

    const DIMS: &[u64] = &[
        0,
        1,
        2,
        7,
        8,
        16,
        64,
        127,
        128,
        256,
        1000,
        1 << 32,
        (1 << 32) + 1,
    ];
    const STRIDES: &[u64] = &[0, 16, 20, 32, 48, 64, 256, 4096, (1 << 40) - 16, 1 << 40];
    const BOXES: &[u32] = &[0, 1, 3, 4, 8, 16, 32, 64, 128, 256, 257];
    const CORNERS: &[i32] = &[
        -40000, -32768, -129, -128, -17, -16, -1, 0, 1, 15, 16, 127, 128, 32767, 32768,
    ];
    const CHANNELS: &[u32] = &[0, 1, 16, 32, 64, 128, 256, 257];
    const PIXELS: &[u32] = &[0, 1, 128, 1024, 1025];
    const TYPES: &[TensorDataType] = &[
        TensorDataType::U8,
        TensorDataType::U16,
        TensorDataType::U32,
        TensorDataType::I32,
        TensorDataType::U64,
        TensorDataType::I64,
        TensorDataType::F16,
        TensorDataType::F32,
        TensorDataType::F64,
        TensorDataType::BF16,
        TensorDataType::F32Ftz,
        TensorDataType::TF32,
        TensorDataType::TF32Ftz,
        TensorDataType::U4x16Align8,
        TensorDataType::U4x16Align16,
        TensorDataType::U6x16Align16,
    ];
    const SWIZZLES: &[TensorMapSwizzle] = &[
        TensorMapSwizzle::None,
        TensorMapSwizzle::B32,
        TensorMapSwizzle::B64,
        TensorMapSwizzle::B128,
        TensorMapSwizzle::B128Atom32,
        TensorMapSwizzle::B128Atom32Flip8,
        TensorMapSwizzle::B128Atom64,
    ];
    const INTERLEAVES: &[TensorMapInterleave] = &[
        TensorMapInterleave::None,
        TensorMapInterleave::B16,
        TensorMapInterleave::B32,
    ];

    /// Everything a layout holds, owned.
    #[derive(Clone, Debug)]
    struct Parts {
        kind: u8,
        data_type: TensorDataType,
        dims: Vec<u64>,
        strides: Vec<u64>,
        element_strides: Vec<u32>,
        interleave: TensorMapInterleave,
        swizzle: TensorMapSwizzle,
        nan: bool,
        box_dims: Vec<u32>,
        lower: Vec<i32>,
        upper: Vec<i32>,
        channels: u32,
        pixels: u32,
        w128: bool,
    }

    /// Mostly one of `likely` (values that pass), else any of `all`.
    fn mostly<T: Clone + std::fmt::Debug + 'static>(
        likely: &'static [T],
        all: &'static [T],
    ) -> impl Strategy<Value = T> {
        prop_oneof![6 => pick(likely), 1 => pick(all)]
    }

    fn parts() -> impl Strategy<Value = Parts> {
        use TensorDataType as T;
        let vec_of = |s: BoxedStrategy<u64>| proptest::collection::vec(s, 0..7);
        (
            (
                0u8..3,
                mostly(&[T::U8, T::F16, T::F32, T::BF16], TYPES),
                1usize..6,
                mostly(&[TensorMapInterleave::None], INTERLEAVES),
                pick(SWIZZLES),
                proptest::bool::weighted(0.1),
            ),
            (
                vec_of(mostly(&[16, 64, 128, 256, 1024], DIMS).boxed()),
                prop_oneof![5 => Just(vec![]), 1 => proptest::collection::vec(pick(STRIDES), 0..6)],
                prop_oneof![5 => Just(vec![]), 1 => proptest::collection::vec(0u32..10, 0..7)],
                proptest::collection::vec(mostly(&[8, 16, 32, 64, 128], BOXES), 0..7),
            ),
            (
                proptest::collection::vec(mostly(&[-1, 0, 1], CORNERS), 0..4),
                proptest::collection::vec(mostly(&[-1, 0, 1], CORNERS), 0..4),
                mostly(&[16, 32, 64], CHANNELS),
                mostly(&[16, 128], PIXELS),
                any::<bool>(),
            ),
        )
            .prop_map(
                |(
                    (kind, data_type, rank, interleave, swizzle, nan),
                    (dims, strides, element_strides, box_dims),
                    (lower, upper, channels, pixels, w128),
                )| {
                    // Mostly of the rank drawn, so that layouts get past the counts.
                    let mut dims = dims;
                    if dims.len() % 4 != 1 {
                        dims.resize(rank, 64);
                    }
                    let mut box_dims = box_dims;
                    if box_dims.len() % 4 != 1 {
                        box_dims.resize(dims.len(), 8);
                    }
                    let mut element_strides = element_strides;
                    if element_strides.len() % 2 == 1 {
                        element_strides.resize(dims.len(), 1);
                    }
                    let spatial = dims.len().saturating_sub(2);
                    let fit_corner = |mut v: Vec<i32>| {
                        if v.len() % 3 != 1 {
                            v.resize(spatial, 0);
                        }
                        v
                    };
                    Parts {
                        kind,
                        data_type,
                        dims,
                        strides,
                        element_strides,
                        interleave,
                        swizzle,
                        nan,
                        box_dims,
                        lower: fit_corner(lower),
                        upper: fit_corner(upper),
                        channels,
                        pixels,
                        w128,
                    }
                },
            )
    }

    fn layout(p: &Parts) -> Layout<'_> {
        let tensor = Tensor {
            data_type: p.data_type,
            dims: &p.dims,
            strides: &p.strides,
            element_strides: &p.element_strides,
            interleave: p.interleave,
            swizzle: p.swizzle,
            l2_promotion: TensorMapL2Promotion::None,
            oob_fill: if p.nan {
                TensorMapOobFill::NanRequestZeroFma
            } else {
                TensorMapOobFill::Zero
            },
        };
        let (kind, shape) = match p.kind {
            0 => (
                Kind::Tiled,
                Shape::Tiled {
                    box_dims: &p.box_dims,
                },
            ),
            1 => (
                Kind::Im2col,
                Shape::Im2col {
                    lower: &p.lower,
                    upper: &p.upper,
                    channels_per_pixel: p.channels,
                    pixels_per_column: p.pixels,
                },
            ),
            _ => (
                Kind::Wide,
                Shape::Wide {
                    lower: p.lower.first().copied().unwrap_or(0),
                    upper: p.upper.first().copied().unwrap_or(0),
                    channels_per_pixel: p.channels,
                    pixels_per_column: p.pixels,
                    mode: if p.w128 {
                        Im2colWideMode::W128
                    } else {
                        Im2colWideMode::W
                    },
                },
            ),
        };
        Layout {
            kind,
            tensor,
            shape,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn the_fast_and_detailed_checks_agree(p in parts()) {
            let l = layout(&p);
            let fast = fast_check(&l);
            let detailed = check_detailed(&l);
            match (&fast, &detailed) {
                (Some(f), Ok(d)) => prop_assert_eq!(f, d),
                (None, Err(_)) => {}
                _ => prop_assert!(false, "fast {:?}, detailed {:?}", fast, detailed),
            }
        }
    }

    /// The generator reaches passing layouts of each kind (so the agreement above is not only
    /// over refusals).
    #[test]
    fn the_generator_makes_layouts_that_pass() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let mut passed = [0usize; 3];
        for _ in 0..20_000 {
            let p = parts().new_tree(&mut runner).unwrap().current();
            if fast_check(&layout(&p)).is_some() {
                passed[usize::from(p.kind)] += 1;
            }
        }
        assert!(
            passed.iter().all(|&n| n > 200),
            "passing layouts by kind: {passed:?}"
        );
    }
}
