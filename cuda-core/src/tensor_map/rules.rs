//! The checks, pure: CPU-tested by rule. A layout borrowed from its options ([`Layout`]),
//! and the rules of `cuTensorMapEncode*`, written once ([`rules`]) and compiled twice: as one
//! pass with few branches and no messages ([`fast_check`]) on the encode's path, and as the
//! rules one by one ([`check_detailed`]), cold, for the message of the first one broken.

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

/// How [`rules`] answers a rule: the fast pass notes whether every rule holds and goes on
/// (its messages are never made, and compiled out), the detailed one stops at the first
/// broken rule with its message.
trait Answer {
    /// What stops the pass: nothing for the fast pass, the error for the detailed one.
    type Stop;
    /// A rule: `holds`, or the field `name` is refused for `reason`.
    fn rule(
        &mut self,
        holds: bool,
        name: &'static str,
        reason: impl FnOnce() -> String,
    ) -> std::result::Result<(), Self::Stop>;
    /// A rule the rest of the pass cannot go on without (an array's length).
    fn stop(&mut self, name: &'static str, reason: impl FnOnce() -> String) -> Self::Stop;
}

/// The fast pass: whether every rule held.
struct Fast(bool);

impl Answer for Fast {
    type Stop = ();
    #[inline(always)]
    fn rule(&mut self, holds: bool, _: &'static str, _: impl FnOnce() -> String) -> Result<(), ()> {
        self.0 &= holds;
        Ok(())
    }
    #[inline(always)]
    fn stop(&mut self, _: &'static str, _: impl FnOnce() -> String) {}
}

/// The detailed pass: the first rule broken, as the error a caller sees.
struct Detailed;

impl Answer for Detailed {
    type Stop = Error;
    fn rule(
        &mut self,
        holds: bool,
        name: &'static str,
        reason: impl FnOnce() -> String,
    ) -> std::result::Result<(), Error> {
        if holds {
            Ok(())
        } else {
            Err(self.stop(name, reason))
        }
    }
    fn stop(&mut self, name: &'static str, reason: impl FnOnce() -> String) -> Error {
        Error::InvalidArgument {
            name,
            reason: reason(),
        }
    }
}

/// Every rule of `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col` and
/// `cuTensorMapEncodeIm2colWide` that does not need the device, in the order the driver
/// documents them: [`fast_check`] on the encode's path, and where it refuses,
/// [`check_detailed`] for the rule and its message.
#[inline]
pub(crate) fn check(layout: &Layout<'_>) -> Result<Checked> {
    match fast_check(layout) {
        Some(checked) => Ok(checked),
        None => check_detailed(layout),
    }
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

/// [`rules`] as one pass with few branches and no messages: the layout's arrays when every
/// rule holds, `None` when one does not (then [`check_detailed`] says which).
#[inline]
pub(crate) fn fast_check(layout: &Layout<'_>) -> Option<Checked> {
    let mut checked = Checked::EMPTY;
    fast_check_into(layout, &mut checked).then_some(checked)
}

/// [`fast_check`] writing into `c`: whether every rule holds (then `c` holds the arrays), for
/// [`prepare`](super::prepare).
#[inline]
pub(crate) fn fast_check_into(layout: &Layout<'_>, c: &mut Checked) -> bool {
    let mut fast = Fast(true);
    rules(layout, c, &mut fast).is_ok() && fast.0
}

/// [`rules`] one by one: the error of the first rule broken, each naming its field and rule.
/// Cold: only a refused layout comes here.
#[cold]
#[inline(never)]
pub(crate) fn check_detailed(layout: &Layout<'_>) -> Result<Checked> {
    let mut checked = Checked::EMPTY;
    rules(layout, &mut checked, &mut Detailed)?;
    Ok(checked)
}

/// The rules, once, in the driver's order, filling `c`. After a broken rule the fast pass
/// goes on (so every value used below stays in range of what it indexes or multiplies: a
/// length that the rest needs is a [`stop`](Answer::stop)).
#[inline(always)]
fn rules<A: Answer>(layout: &Layout<'_>, c: &mut Checked, a: &mut A) -> Result<(), A::Stop> {
    use TensorMapInterleave as I;
    let t = &layout.tensor;
    let kind = layout.kind;
    let rank = t.dims.len();
    let what = || match kind {
        Kind::Tiled => "a tiled tensor map",
        Kind::Im2col => "an im2col tensor map",
        Kind::Wide => "a wide im2col tensor map",
    };
    let lowest = if kind == Kind::Tiled { 1 } else { 3 };
    if rank < lowest || rank > TENSOR_MAP_MAX_RANK {
        return Err(a.stop("options.dims", || {
            format!(
                "{} has {lowest} to {TENSOR_MAP_MAX_RANK} dimensions; {rank} given ({:?})",
                what(),
                t.dims
            )
        }));
    }
    a.rule(
        t.interleave == I::None || rank >= 3,
        "options.interleave",
        || format!("an interleaved tensor map has at least 3 dimensions; {rank} given"),
    )?;
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
    for (i, (slot, &d)) in c.dims.iter_mut().zip(t.dims).enumerate() {
        a.rule(d.wrapping_sub(1) < 1 << 32, "options.dims", || {
            format!("dimension {i} is {d}; each is 1 to 2^32")
        })?;
        *slot = d;
    }
    let dim0 = c.dims[0];
    a.rule(!packed_16 || dim0 % 128 == 0, "options.dims", || {
        format!("{data_type:?} needs dimension 0 a multiple of 128; it is {dim0}")
    })?;
    a.rule(
        data_type != TensorDataType::U4x16Align8 || dim0 % 2 == 0,
        "options.dims",
        || format!("U4x16Align8 needs dimension 0 even; it is {dim0}"),
    )?;
    let bits = data_type.bits_in_memory();
    // Dimension 0 is at most 2^32 where its rule holds (and bounded where it does not): no
    // overflow.
    let row_bytes = (dim0.min(1 << 32) * bits).div_ceil(8);
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
        return Err(a.stop("options.strides", || {
            format!(
                "{} given; a tensor of {rank} dimensions has {outer} (one per dimension after \
                 the first), or none for packed rows",
                t.strides.len()
            )
        }));
    }
    let given = if t.strides.is_empty() {
        " (packed: give strides with padding)"
    } else {
        ""
    };
    for (i, &s) in c.strides[..outer].iter().enumerate() {
        a.rule(s & (align - 1) == 0, "options.strides", || {
            format!(
                "the stride of dimension {} is {s} bytes, not a multiple of {align}{given}",
                i + 1
            )
        })?;
        a.rule(s < 1 << 40, "options.strides", || {
            format!(
                "the stride of dimension {} is {s} bytes; strides are below 2^40{given}",
                i + 1
            )
        })?;
    }
    if !t.element_strides.is_empty() {
        if t.element_strides.len() != rank {
            return Err(a.stop("options.element_strides", || {
                format!(
                    "{} given for a tensor of {rank} dimensions (one each, or none for 1)",
                    t.element_strides.len()
                )
            }));
        }
        for (i, (slot, &e)) in c
            .element_strides
            .iter_mut()
            .zip(t.element_strides)
            .enumerate()
        {
            a.rule(e.wrapping_sub(1) < 8, "options.element_strides", || {
                format!("element stride {i} is {e}; each is 1 to 8")
            })?;
            *slot = e;
        }
    }
    // The shape: the box's, or the pixels', innermost extent in bytes.
    let inner_bytes = match layout.shape {
        Shape::Tiled { box_dims } => {
            if box_dims.len() != rank {
                return Err(a.stop("options.box_dims", || {
                    format!(
                        "{} given for a tensor of {rank} dimensions (one each)",
                        box_dims.len()
                    )
                }));
            }
            for (i, (&b, &d)) in box_dims.iter().zip(&c.dims).enumerate() {
                a.rule(b.wrapping_sub(1) < 256, "options.box_dims", || {
                    format!("box dimension {i} is {b}; each is 1 to 256")
                })?;
                a.rule(u64::from(b) <= d, "options.box_dims", || {
                    format!("box dimension {i} is {b}, larger than the tensor's {d}")
                })?;
            }
            let inner_bits = u64::from(box_dims[0]) * bits;
            a.rule(
                t.interleave != I::None || inner_bits % 128 == 0,
                "options.box_dims",
                || {
                    format!(
                        "the box's innermost dimension is {} elements of {data_type:?}, {} \
                         bytes: without interleave it must be a multiple of 16 bytes",
                        box_dims[0],
                        inner_bits as f64 / 8.0
                    )
                },
            )?;
            a.rule(!packed_16 || box_dims[0] == 128, "options.box_dims", || {
                format!(
                    "{data_type:?} needs box dimension 0 to be 128; it is {}",
                    box_dims[0]
                )
            })?;
            inner_bits / 8
        }
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => {
            let spatial = rank - 2;
            let (low, high) = corner_range(rank);
            for (name, corner) in [
                ("options.lower_corner", lower),
                ("options.upper_corner", upper),
            ] {
                if corner.len() != spatial {
                    return Err(a.stop(name, || {
                        format!(
                            "{} offsets given; a tensor of {rank} dimensions has {spatial} \
                             spatial ones (W, H, D: dimensions 1 to {spatial})",
                            corner.len()
                        )
                    }));
                }
                for (i, &o) in corner.iter().enumerate() {
                    a.rule((low..=high).contains(&o), name, || {
                        format!(
                            "offset {i} is {o}; with {rank} dimensions each is within \
                             {low}..={high}"
                        )
                    })?;
                }
            }
            for i in 0..spatial {
                let (d, l, u) = (c.dims[1 + i], lower[i], upper[i]);
                let extent = i128::from(d) - i128::from(l) + i128::from(u);
                a.rule(extent >= 1, "options.upper_corner", || {
                    format!(
                        "the bounding box is empty along dimension {}: {d} - ({l}) + ({u}) = \
                         {extent}",
                        1 + i
                    )
                })?;
            }
            pixels(a, data_type, channels_per_pixel, pixels_per_column, true)?;
            u64::from(channels_per_pixel) * bits / 8
        }
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => {
            for (name, o) in [
                ("options.lower_corner_width", lower),
                ("options.upper_corner_width", upper),
            ] {
                a.rule((-32768..=32767).contains(&o), name, || {
                    format!("{o} is outside -32768..=32767")
                })?;
            }
            let d = c.dims[1];
            let extent = i128::from(d) - i128::from(lower) + i128::from(upper);
            a.rule(extent >= 1, "options.upper_corner_width", || {
                format!("the bounding box is empty along W: {d} - ({lower}) + ({upper}) = {extent}")
            })?;
            let counted = mode == Im2colWideMode::W;
            pixels(a, data_type, channels_per_pixel, pixels_per_column, counted)?;
            u64::from(channels_per_pixel) * bits / 8
        }
    };
    // The swizzle against the interleave, the data type and the innermost extent in bytes.
    let swizzle = t.swizzle;
    a.rule(
        t.interleave != I::B32 || swizzle == TensorMapSwizzle::B32,
        "options.swizzle",
        || format!("32-byte interleave needs the 32-byte swizzle; {swizzle:?} given"),
    )?;
    a.rule(
        data_type != TensorDataType::U6x16Align16 || t.interleave == I::None,
        "options.interleave",
        || "U6x16Align16 tensors are not interleaved".to_owned(),
    )?;
    let allowed = allowed_swizzles(kind, data_type);
    a.rule(
        allowed.is_none_or(|allowed| allowed.contains(&swizzle)),
        "options.swizzle",
        || {
            let what = if kind == Kind::Wide {
                format!("a wide im2col tensor map of {data_type:?}")
            } else {
                format!("{data_type:?}")
            };
            format!(
                "{what} takes the swizzles {:?}; {swizzle:?} given",
                allowed.unwrap_or_default()
            )
        },
    )?;
    let span = swizzle.span();
    a.rule(
        t.interleave != I::None || span.is_none_or(|span| inner_bytes <= span),
        "options.swizzle",
        || {
            let extent = if kind == Kind::Tiled {
                "box's innermost dimension"
            } else {
                "pixel's channels"
            };
            format!(
                "the {extent} is {inner_bytes} bytes, more than the {}-byte span of \
                 {swizzle:?}",
                span.unwrap_or_default()
            )
        },
    )?;
    a.rule(
        t.oob_fill != TensorMapOobFill::NanRequestZeroFma || data_type.is_float(),
        "options.oob_fill",
        || format!("the NaN fill is for floating-point types; {data_type:?} is not one"),
    )?;
    let mut span = u128::from(row_bytes);
    for i in 1..rank {
        span += u128::from(c.dims[i].saturating_sub(1)) * u128::from(c.strides[i - 1]);
    }
    c.span = u64::try_from(span).unwrap_or(u64::MAX);
    Ok(())
}

/// Channels and pixels of an im2col map; `counted` where the pixel count is read.
#[inline(always)]
fn pixels<A: Answer>(
    a: &mut A,
    data_type: TensorDataType,
    channels: u32,
    pixels: u32,
    counted: bool,
) -> Result<(), A::Stop> {
    a.rule(
        channels.wrapping_sub(1) < 256,
        "options.channels_per_pixel",
        || format!("{channels}; it is 1 to 256"),
    )?;
    a.rule(
        !data_type.is_packed_16() || channels == 128,
        "options.channels_per_pixel",
        || format!("{data_type:?} needs 128 channels per pixel; {channels} given"),
    )?;
    a.rule(
        !counted || pixels.wrapping_sub(1) < 1024,
        "options.pixels_per_column",
        || format!("{pixels}; it is 1 to 1024"),
    )
}
