//! The checks, pure: CPU-tested by rule. A layout borrowed from its options ([`Layout`]),
//! and the rules of `cuTensorMapEncode*` twice: one pass with few branches and no messages
//! ([`fast_check`]) on the encode's path, and the rules one by one ([`check_detailed`]) for the
//! message of the first one broken.

use super::options::{Im2colOptions, Im2colWideOptions, TiledOptions};
use super::types::{
    Im2colWideMode, TensorDataType, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapSwizzle,
};
use super::TENSOR_MAP_MAX_RANK;
use crate::error::{Error, Result};

/// Which encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Tiled,
    Im2col,
    Wide,
}

/// What all three encodings share, borrowed from the options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tensor<'a> {
    pub(crate) data_type: TensorDataType,
    pub(crate) dims: &'a [u64],
    pub(crate) strides: &'a [u64],
    pub(crate) element_strides: &'a [u32],
    pub(crate) interleave: TensorMapInterleave,
    pub(crate) swizzle: TensorMapSwizzle,
    pub(crate) l2_promotion: TensorMapL2Promotion,
    pub(crate) oob_fill: TensorMapOobFill,
}

/// What each copy moves.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape<'a> {
    Tiled {
        box_dims: &'a [u32],
    },
    Im2col {
        lower: &'a [i32],
        upper: &'a [i32],
        channels_per_pixel: u32,
        pixels_per_column: u32,
    },
    Wide {
        lower: i32,
        upper: i32,
        channels_per_pixel: u32,
        pixels_per_column: u32,
        mode: Im2colWideMode,
    },
}

/// One encoding's layout.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout<'a> {
    pub(crate) kind: Kind,
    pub(crate) tensor: Tensor<'a>,
    pub(crate) shape: Shape<'a>,
}

impl<'a> Layout<'a> {
    pub(crate) fn of_tiled(o: &'a TiledOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Tiled,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Tiled {
                box_dims: &o.box_dims,
            },
        }
    }

    pub(crate) fn of_im2col(o: &'a Im2colOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Im2col,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Im2col {
                lower: &o.lower_corner,
                upper: &o.upper_corner,
                channels_per_pixel: o.channels_per_pixel,
                pixels_per_column: o.pixels_per_column,
            },
        }
    }

    pub(crate) fn of_im2col_wide(o: &'a Im2colWideOptions) -> Layout<'a> {
        Layout {
            kind: Kind::Wide,
            tensor: Tensor {
                data_type: o.data_type,
                dims: &o.dims,
                strides: &o.strides,
                element_strides: &o.element_strides,
                interleave: o.interleave,
                swizzle: o.swizzle,
                l2_promotion: o.l2_promotion,
                oob_fill: o.oob_fill,
            },
            shape: Shape::Wide {
                lower: o.lower_corner_width,
                upper: o.upper_corner_width,
                channels_per_pixel: o.channels_per_pixel,
                pixels_per_column: o.pixels_per_column,
                mode: o.mode,
            },
        }
    }
}

/// A layout that passed: the arrays the driver reads (defaults filled in), the address
/// alignment it needs, and the bytes the tensor spans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) rank: usize,
    pub(crate) dims: [u64; TENSOR_MAP_MAX_RANK],
    pub(crate) strides: [u64; TENSOR_MAP_MAX_RANK - 1],
    pub(crate) element_strides: [u32; TENSOR_MAP_MAX_RANK],
    pub(crate) align: u64,
    pub(crate) span: u64,
}

impl Checked {
    /// Nothing checked yet.
    pub(super) const EMPTY: Checked = Checked {
        rank: 0,
        dims: [0; TENSOR_MAP_MAX_RANK],
        strides: [0; TENSOR_MAP_MAX_RANK - 1],
        element_strides: [1; TENSOR_MAP_MAX_RANK],
        align: 16,
        span: 0,
    };
}

fn refuse<T>(name: &'static str, reason: String) -> Result<T> {
    Err(Error::InvalidArgument { name, reason })
}

/// Every rule of `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col` and
/// `cuTensorMapEncodeIm2colWide` that does not need the device, in the order the driver
/// documents them: [`fast_check`] on the encode's path, and where it refuses,
/// [`check_detailed`] for the rule and its message.
#[inline]
pub(crate) fn check(layout: &Layout<'_>) -> Result<Checked> {
    match fast_check(layout) {
        Some(checked) => {
            debug_assert_eq!(
                check_detailed(layout).as_ref(),
                Ok(&checked),
                "the fast check passed a layout the detailed check does not"
            );
            Ok(checked)
        }
        None => refused(layout),
    }
}

#[cold]
#[inline(never)]
fn refused(layout: &Layout<'_>) -> Result<Checked> {
    let detailed = check_detailed(layout);
    debug_assert!(
        detailed.is_err(),
        "the fast check refused a layout the detailed check passes"
    );
    detailed
}

/// The swizzles a kind of map of `data_type` takes, where the driver lists them (the packed
/// types, and wide im2col maps); `None` where any is taken.
fn allowed_swizzles(kind: Kind, data_type: TensorDataType) -> Option<&'static [TensorMapSwizzle]> {
    use TensorMapSwizzle as S;
    match (kind, data_type) {
        (Kind::Wide, TensorDataType::U6x16Align16) => Some(&[S::B64, S::B128, S::B128Atom32]),
        (Kind::Wide, TensorDataType::U4x16Align16) => Some(&[S::B128, S::B128Atom32]),
        (Kind::Wide, _) => Some(&[S::B64, S::B128, S::B128Atom32]),
        (_, TensorDataType::U6x16Align16) => {
            Some(&[S::None, S::B128, S::B128Atom32, S::B128Atom64])
        }
        (_, TensorDataType::U4x16Align16) => Some(&[S::None, S::B128, S::B128Atom32]),
        _ => None,
    }
}

/// The bounds of an im2col map's corner offsets for `rank`.
fn corner_range(rank: usize) -> (i32, i32) {
    match rank {
        3 => (-32768, 32767),
        4 => (-128, 127),
        _ => (-16, 15),
    }
}

/// [`check_detailed`]'s rules as one pass with few branches and no messages: the layout's
/// arrays when every rule holds, `None` when one does not (then [`check_detailed`] says which).
/// The unit tests hold the two to the same answers.
#[inline]
pub(crate) fn fast_check(layout: &Layout<'_>) -> Option<Checked> {
    let mut checked = Checked::EMPTY;
    fast_check_into(layout, &mut checked).then_some(checked)
}

/// [`fast_check`] writing into `c`: whether every rule holds (then `c` holds the arrays), for
/// [`prepare`](super::prepare).
#[inline]
pub(crate) fn fast_check_into(layout: &Layout<'_>, c: &mut Checked) -> bool {
    use TensorMapInterleave as I;
    let t = &layout.tensor;
    let kind = layout.kind;
    let rank = t.dims.len();
    let lowest = if kind == Kind::Tiled { 1 } else { 3 };
    if rank < lowest || rank > TENSOR_MAP_MAX_RANK || (t.interleave != I::None && rank < 3) {
        return false;
    }
    let data_type = t.data_type;
    let packed_16 = data_type.is_packed_16();
    let align = if t.interleave == I::B32 || packed_16 {
        32
    } else {
        16
    };
    *c = Checked {
        rank,
        dims: [0; TENSOR_MAP_MAX_RANK],
        strides: [0; TENSOR_MAP_MAX_RANK - 1],
        element_strides: [1; TENSOR_MAP_MAX_RANK],
        align,
        span: 0,
    };
    let mut ok = true;
    for (slot, &d) in c.dims.iter_mut().zip(t.dims) {
        ok &= d.wrapping_sub(1) < 1 << 32;
        *slot = d;
    }
    ok &= !packed_16 || c.dims[0] % 128 == 0;
    ok &= data_type != TensorDataType::U4x16Align8 || c.dims[0] % 2 == 0;
    let bits = data_type.bits_in_memory();
    // Dimension 0 is at most 2^32 here where `ok` holds: no overflow.
    let row_bytes = (c.dims[0].min(1 << 32) * bits).div_ceil(8);
    let outer = rank - 1;
    if t.strides.is_empty() {
        let mut stride = row_bytes;
        for i in 0..outer {
            c.strides[i] = stride;
            stride = stride.saturating_mul(c.dims[i + 1]);
        }
    } else if t.strides.len() == outer {
        c.strides[..outer].copy_from_slice(t.strides);
    } else {
        return false;
    }
    for &s in &c.strides[..outer] {
        ok &= s & (align - 1) == 0 && s < 1 << 40;
    }
    if !t.element_strides.is_empty() {
        if t.element_strides.len() != rank {
            return false;
        }
        for (slot, &e) in c.element_strides.iter_mut().zip(t.element_strides) {
            ok &= e.wrapping_sub(1) < 8;
            *slot = e;
        }
    }
    let inner_bytes = match layout.shape {
        Shape::Tiled { box_dims } => {
            if box_dims.len() != rank {
                return false;
            }
            for (&b, &d) in box_dims.iter().zip(&c.dims) {
                ok &= b.wrapping_sub(1) < 256 && u64::from(b) <= d;
            }
            let inner_bits = u64::from(box_dims[0]) * bits;
            ok &= t.interleave != I::None || inner_bits % 128 == 0;
            ok &= !packed_16 || box_dims[0] == 128;
            inner_bits / 8
        }
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => {
            let spatial = rank - 2;
            if lower.len() != spatial || upper.len() != spatial {
                return false;
            }
            let (low, high) = corner_range(rank);
            for i in 0..spatial {
                let (l, u) = (lower[i], upper[i]);
                ok &= (low..=high).contains(&l) && (low..=high).contains(&u);
                ok &= i128::from(c.dims[1 + i]) - i128::from(l) + i128::from(u) >= 1;
            }
            ok &= channels_per_pixel.wrapping_sub(1) < 256;
            ok &= !packed_16 || channels_per_pixel == 128;
            ok &= pixels_per_column.wrapping_sub(1) < 1024;
            u64::from(channels_per_pixel) * bits / 8
        }
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => {
            ok &= (-32768..=32767).contains(&lower) && (-32768..=32767).contains(&upper);
            ok &= i128::from(c.dims[1]) - i128::from(lower) + i128::from(upper) >= 1;
            ok &= channels_per_pixel.wrapping_sub(1) < 256;
            ok &= !packed_16 || channels_per_pixel == 128;
            ok &= mode != Im2colWideMode::W || pixels_per_column.wrapping_sub(1) < 1024;
            u64::from(channels_per_pixel) * bits / 8
        }
    };
    let swizzle = t.swizzle;
    ok &= t.interleave != I::B32 || swizzle == TensorMapSwizzle::B32;
    ok &= data_type != TensorDataType::U6x16Align16 || t.interleave == I::None;
    ok &= allowed_swizzles(kind, data_type).is_none_or(|allowed| allowed.contains(&swizzle));
    ok &= t.interleave != I::None || swizzle.span().is_none_or(|span| inner_bytes <= span);
    ok &= t.oob_fill != TensorMapOobFill::NanRequestZeroFma || data_type.is_float();
    if !ok {
        return false;
    }
    let mut span = u128::from(row_bytes);
    for i in 1..rank {
        span += u128::from(c.dims[i] - 1) * u128::from(c.strides[i - 1]);
    }
    c.span = u64::try_from(span).unwrap_or(u64::MAX);
    true
}

/// The rules of [`check`], one by one, each refusal naming its field and rule.
pub(crate) fn check_detailed(layout: &Layout<'_>) -> Result<Checked> {
    let t = &layout.tensor;
    let kind = layout.kind;
    let rank = t.dims.len();
    let what = match kind {
        Kind::Tiled => "a tiled tensor map",
        Kind::Im2col => "an im2col tensor map",
        Kind::Wide => "a wide im2col tensor map",
    };
    let lowest = if kind == Kind::Tiled { 1 } else { 3 };
    if rank < lowest || rank > TENSOR_MAP_MAX_RANK {
        return refuse(
            "options.dims",
            format!(
                "{what} has {lowest} to {TENSOR_MAP_MAX_RANK} dimensions; {rank} given \
                 ({:?})",
                t.dims
            ),
        );
    }
    if t.interleave != TensorMapInterleave::None && rank < 3 {
        return refuse(
            "options.interleave",
            format!("an interleaved tensor map has at least 3 dimensions; {rank} given"),
        );
    }
    let packed_16 = t.data_type.is_packed_16();
    let align = if t.interleave == TensorMapInterleave::B32 || packed_16 {
        32
    } else {
        16
    };
    let mut dims = [0u64; TENSOR_MAP_MAX_RANK];
    for (i, &d) in t.dims.iter().enumerate() {
        if d == 0 || d > 1 << 32 {
            return refuse(
                "options.dims",
                format!("dimension {i} is {d}; each is 1 to 2^32"),
            );
        }
        dims[i] = d;
    }
    if packed_16 && dims[0] % 128 != 0 {
        return refuse(
            "options.dims",
            format!(
                "{:?} needs dimension 0 a multiple of 128; it is {}",
                t.data_type, dims[0]
            ),
        );
    }
    if t.data_type == TensorDataType::U4x16Align8 && dims[0] % 2 != 0 {
        return refuse(
            "options.dims",
            format!("U4x16Align8 needs dimension 0 even; it is {}", dims[0]),
        );
    }
    let bits = t.data_type.bits_in_memory();
    // At most 2^32 elements of at most 64 bits: fits easily.
    let row_bytes = (dims[0] * bits).div_ceil(8);
    let stride_multiple = align;
    let mut strides = [0u64; TENSOR_MAP_MAX_RANK - 1];
    if t.strides.is_empty() {
        let mut stride = u128::from(row_bytes);
        for i in 0..rank - 1 {
            strides[i] = u64::try_from(stride).unwrap_or(u64::MAX);
            stride *= u128::from(dims[i + 1]);
        }
    } else if t.strides.len() != rank - 1 {
        return refuse(
            "options.strides",
            format!(
                "{} given; a tensor of {rank} dimensions has {} (one per dimension after \
                 the first), or none for packed rows",
                t.strides.len(),
                rank - 1
            ),
        );
    } else {
        strides[..rank - 1].copy_from_slice(t.strides);
    }
    for (i, &s) in strides[..rank - 1].iter().enumerate() {
        let given = if t.strides.is_empty() {
            " (packed: give strides with padding)"
        } else {
            ""
        };
        if s & (stride_multiple - 1) != 0 {
            return refuse(
                "options.strides",
                format!(
                    "the stride of dimension {} is {s} bytes, not a multiple of \
                     {stride_multiple}{given}",
                    i + 1
                ),
            );
        }
        if s >= 1 << 40 {
            return refuse(
                "options.strides",
                format!(
                    "the stride of dimension {} is {s} bytes; strides are below 2^40{given}",
                    i + 1
                ),
            );
        }
    }
    let mut element_strides = [1u32; TENSOR_MAP_MAX_RANK];
    if !t.element_strides.is_empty() {
        if t.element_strides.len() != rank {
            return refuse(
                "options.element_strides",
                format!(
                    "{} given for a tensor of {rank} dimensions (one each, or none for 1)",
                    t.element_strides.len()
                ),
            );
        }
        for (i, &e) in t.element_strides.iter().enumerate() {
            if e == 0 || e > 8 {
                return refuse(
                    "options.element_strides",
                    format!("element stride {i} is {e}; each is 1 to 8"),
                );
            }
            element_strides[i] = e;
        }
    }
    // The shape: the box's, or the pixels', innermost extent in bytes.
    let inner_bytes = match layout.shape {
        Shape::Tiled { box_dims } => check_box(t, box_dims, &dims[..rank], bits)?,
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => {
            check_corners(rank, &dims, lower, upper)?;
            check_pixels(t, channels_per_pixel, pixels_per_column, true)?;
            u64::from(channels_per_pixel) * bits / 8
        }
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => {
            check_wide_corners(&dims, lower, upper)?;
            check_pixels(
                t,
                channels_per_pixel,
                pixels_per_column,
                mode == Im2colWideMode::W,
            )?;
            u64::from(channels_per_pixel) * bits / 8
        }
    };
    check_swizzle(kind, t, inner_bytes)?;
    if t.oob_fill == TensorMapOobFill::NanRequestZeroFma && !t.data_type.is_float() {
        return refuse(
            "options.oob_fill",
            format!(
                "the NaN fill is for floating-point types; {:?} is not one",
                t.data_type
            ),
        );
    }
    let mut span = u128::from(row_bytes);
    for i in 1..rank {
        span += u128::from(dims[i] - 1) * u128::from(strides[i - 1]);
    }
    Ok(Checked {
        rank,
        dims,
        strides,
        element_strides,
        align,
        span: u64::try_from(span).unwrap_or(u64::MAX),
    })
}

/// A tiled map's box: the innermost extent in bytes, once the box's rules pass.
fn check_box(t: &Tensor<'_>, box_dims: &[u32], dims: &[u64], bits: u64) -> Result<u64> {
    let rank = dims.len();
    if box_dims.len() != rank {
        return refuse(
            "options.box_dims",
            format!(
                "{} given for a tensor of {rank} dimensions (one each)",
                box_dims.len()
            ),
        );
    }
    for (i, (&b, &d)) in box_dims.iter().zip(dims).enumerate() {
        if b == 0 || b > 256 {
            return refuse(
                "options.box_dims",
                format!("box dimension {i} is {b}; each is 1 to 256"),
            );
        }
        if u64::from(b) > d {
            return refuse(
                "options.box_dims",
                format!("box dimension {i} is {b}, larger than the tensor's {d}"),
            );
        }
    }
    let inner_bits = u64::from(box_dims[0]) * bits;
    if t.interleave == TensorMapInterleave::None && inner_bits % 128 != 0 {
        return refuse(
            "options.box_dims",
            format!(
                "the box's innermost dimension is {} elements of {:?}, {} bytes: without \
                 interleave it must be a multiple of 16 bytes",
                box_dims[0],
                t.data_type,
                inner_bits as f64 / 8.0
            ),
        );
    }
    if t.data_type.is_packed_16() && box_dims[0] != 128 {
        return refuse(
            "options.box_dims",
            format!(
                "{:?} needs box dimension 0 to be 128; it is {}",
                t.data_type, box_dims[0]
            ),
        );
    }
    Ok(inner_bits / 8)
}

/// An im2col map's corners: rank - 2 of each, in the range the rank allows, the box not empty.
fn check_corners(rank: usize, dims: &[u64], lower: &[i32], upper: &[i32]) -> Result<()> {
    let spatial = rank - 2;
    let (low, high) = corner_range(rank);
    for (name, corner) in [
        ("options.lower_corner", lower),
        ("options.upper_corner", upper),
    ] {
        if corner.len() != spatial {
            return refuse(
                name,
                format!(
                    "{} offsets given; a tensor of {rank} dimensions has {spatial} spatial \
                     ones (W, H, D: dimensions 1 to {})",
                    corner.len(),
                    rank - 2
                ),
            );
        }
        if let Some((i, &c)) = corner
            .iter()
            .enumerate()
            .find(|(_, &c)| c < low || c > high)
        {
            return refuse(
                name,
                format!("offset {i} is {c}; with {rank} dimensions each is within {low}..={high}"),
            );
        }
    }
    for i in 0..spatial {
        let extent = i128::from(dims[1 + i]) - i128::from(lower[i]) + i128::from(upper[i]);
        if extent < 1 {
            return refuse(
                "options.upper_corner",
                format!(
                    "the bounding box is empty along dimension {}: {} - ({}) + ({}) = \
                     {extent}",
                    1 + i,
                    dims[1 + i],
                    lower[i],
                    upper[i]
                ),
            );
        }
    }
    Ok(())
}

/// A wide im2col map's corners along W.
fn check_wide_corners(dims: &[u64], lower: i32, upper: i32) -> Result<()> {
    for (name, c) in [
        ("options.lower_corner_width", lower),
        ("options.upper_corner_width", upper),
    ] {
        if !(-32768..=32767).contains(&c) {
            return refuse(name, format!("{c} is outside -32768..=32767"));
        }
    }
    let extent = i128::from(dims[1]) - i128::from(lower) + i128::from(upper);
    if extent < 1 {
        return refuse(
            "options.upper_corner_width",
            format!(
                "the bounding box is empty along W: {} - ({lower}) + ({upper}) = {extent}",
                dims[1]
            ),
        );
    }
    Ok(())
}

/// Channels and pixels of an im2col map; `pixels_count` where the pixel count is read.
fn check_pixels(t: &Tensor<'_>, channels: u32, pixels: u32, pixels_count: bool) -> Result<()> {
    if channels == 0 || channels > 256 {
        return refuse(
            "options.channels_per_pixel",
            format!("{channels}; it is 1 to 256"),
        );
    }
    if t.data_type.is_packed_16() && channels != 128 {
        return refuse(
            "options.channels_per_pixel",
            format!(
                "{:?} needs 128 channels per pixel; {channels} given",
                t.data_type
            ),
        );
    }
    if pixels_count && (pixels == 0 || pixels > 1024) {
        return refuse(
            "options.pixels_per_column",
            format!("{pixels}; it is 1 to 1024"),
        );
    }
    Ok(())
}

/// The swizzle against the interleave, the data type and the innermost extent in bytes.
fn check_swizzle(kind: Kind, t: &Tensor<'_>, inner_bytes: u64) -> Result<()> {
    use TensorMapSwizzle as S;
    if t.interleave == TensorMapInterleave::B32 && t.swizzle != S::B32 {
        return refuse(
            "options.swizzle",
            format!(
                "32-byte interleave needs the 32-byte swizzle; {:?} given",
                t.swizzle
            ),
        );
    }
    if t.data_type == TensorDataType::U6x16Align16 && t.interleave != TensorMapInterleave::None {
        return refuse(
            "options.interleave",
            "U6x16Align16 tensors are not interleaved".to_owned(),
        );
    }
    if let Some(allowed) = allowed_swizzles(kind, t.data_type) {
        if !allowed.contains(&t.swizzle) {
            let what = if kind == Kind::Wide {
                format!("a wide im2col tensor map of {:?}", t.data_type)
            } else {
                format!("{:?}", t.data_type)
            };
            return refuse(
                "options.swizzle",
                format!(
                    "{what} takes the swizzles {allowed:?}; {:?} given",
                    t.swizzle
                ),
            );
        }
    }
    if t.interleave == TensorMapInterleave::None {
        if let Some(span) = t.swizzle.span() {
            if inner_bytes > span {
                let extent = if kind == Kind::Tiled {
                    "box's innermost dimension"
                } else {
                    "pixel's channels"
                };
                return refuse(
                    "options.swizzle",
                    format!(
                        "the {extent} is {inner_bytes} bytes, more than the {span}-byte span \
                         of {:?}",
                        t.swizzle
                    ),
                );
            }
        }
    }
    Ok(())
}
