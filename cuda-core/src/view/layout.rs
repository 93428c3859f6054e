//! A view's shape and strides, and what they reach: the arithmetic of [`StridedView`]'s
//! checks, kept free of memory so that it is tested on its own.
//!
//! [`StridedView`]: super::StridedView

/// Dimensions kept inline up to this many (a view of more keeps them on the heap).
const INLINE: usize = 6;

/// A shape and its strides (in elements), one per dimension.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Dims {
    Inline {
        ndim: u8,
        shape: [usize; INLINE],
        strides: [isize; INLINE],
    },
    Heap {
        shape: Box<[usize]>,
        strides: Box<[isize]>,
    },
}

impl Dims {
    /// `shape` and `strides`, of equal lengths (checked by the caller).
    pub(crate) fn new(shape: &[usize], strides: &[isize]) -> Dims {
        debug_assert_eq!(shape.len(), strides.len());
        if shape.len() <= INLINE {
            let mut inline_shape = [0; INLINE];
            let mut inline_strides = [0; INLINE];
            inline_shape[..shape.len()].copy_from_slice(shape);
            inline_strides[..strides.len()].copy_from_slice(strides);
            Dims::Inline {
                ndim: shape.len() as u8,
                shape: inline_shape,
                strides: inline_strides,
            }
        } else {
            Dims::Heap {
                shape: shape.into(),
                strides: strides.into(),
            }
        }
    }

    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Dims::Inline { ndim, shape, .. } => &shape[..usize::from(*ndim)],
            Dims::Heap { shape, .. } => shape,
        }
    }

    pub(crate) fn strides(&self) -> &[isize] {
        match self {
            Dims::Inline { ndim, strides, .. } => &strides[..usize::from(*ndim)],
            Dims::Heap { strides, .. } => strides,
        }
    }
}

/// The strides, in elements, of a compact row-major (C-order) array of `shape`: the last
/// dimension's is 1, each other's the product of the extents after it (an extent of 0
/// counting as 1, so that an empty array's strides are those of its nonempty shape). `None`
/// where the product passes `isize::MAX`.
pub(crate) fn row_major(shape: &[usize]) -> Option<Vec<isize>> {
    let mut strides = vec![0isize; shape.len()];
    let mut step = 1isize;
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = step;
        step = step.checked_mul(isize::try_from(extent.max(1)).ok()?)?;
    }
    Some(strides)
}

/// The number of elements of `shape`; `None` past `usize::MAX`.
pub(crate) fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &e| n.checked_mul(e))
}

/// The bytes a view of `shape` and `strides` reaches around its first element (element
/// `[0, 0, ...]`), for elements of `size` bytes: `(low, end)`, the offset of its lowest byte
/// (0 or below, with negative strides) and one past its highest. `Ok(None)` for an empty view
/// (an extent of 0), which reaches nothing; `Err` where the sums pass 128 bits.
pub(crate) fn span(
    shape: &[usize],
    strides: &[isize],
    size: usize,
) -> Result<Option<(i128, i128)>, String> {
    if shape.contains(&0) {
        return Ok(None);
    }
    let overflow =
        || format!("shape {shape:?} with strides {strides:?} reaches past any address space");
    let (mut low, mut high) = (0i128, 0i128);
    for (&extent, &stride) in shape.iter().zip(strides) {
        // (2^64 - 1) * 2^63 < 2^127: one product always fits.
        let reach = (extent as i128 - 1) * stride as i128;
        if reach < 0 {
            low = low.checked_add(reach).ok_or_else(overflow)?;
        } else {
            high = high.checked_add(reach).ok_or_else(overflow)?;
        }
    }
    let size = size as i128;
    let low = low.checked_mul(size).ok_or_else(overflow)?;
    let end = high
        .checked_add(1)
        .and_then(|h| h.checked_mul(size))
        .ok_or_else(overflow)?;
    Ok(Some((low, end)))
}

/// Whether `strides` are those of a compact row-major array of `shape`, ignoring dimensions
/// of extent 1 (whose stride never counts); an empty shape is contiguous.
pub(crate) fn is_row_major(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut step = 1i128;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent != 1 && stride as i128 != step {
            return false;
        }
        step *= extent as i128;
    }
    true
}

/// The offset, in elements from the first, of the element at `index`; `None` where `index`
/// has the wrong length or is out of range in a dimension. In 128 bits: a view's span may
/// pass `isize::MAX` elements (of bytes, up to 2^64 of them).
pub(crate) fn offset_of(shape: &[usize], strides: &[isize], index: &[usize]) -> Option<i128> {
    if index.len() != shape.len() {
        return None;
    }
    let mut offset = 0i128;
    for ((&i, &extent), &stride) in index.iter().zip(shape).zip(strides) {
        if i >= extent {
            return None;
        }
        // In range: i * stride lies within the span, which the view's checks bounded;
        // (2^64 - 1) * 2^63 < 2^127, so one product always fits.
        offset = offset.checked_add(i as i128 * stride as i128)?;
    }
    Some(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_keep_shape_and_strides_inline_or_on_the_heap() {
        let small = Dims::new(&[2, 3], &[3, 1]);
        assert!(matches!(small, Dims::Inline { .. }));
        assert_eq!((small.shape(), small.strides()), (&[2, 3][..], &[3, 1][..]));
        let shape = [1, 2, 3, 4, 5, 6, 7];
        let strides = [-1, 2, -3, 4, -5, 6, -7];
        let big = Dims::new(&shape, &strides);
        assert!(matches!(big, Dims::Heap { .. }));
        assert_eq!((big.shape(), big.strides()), (&shape[..], &strides[..]));
        let none = Dims::new(&[], &[]);
        assert!(none.shape().is_empty() && none.strides().is_empty());
    }

    #[test]
    fn row_major_strides_are_the_products_of_the_later_extents() {
        assert_eq!(row_major(&[2, 3, 4]), Some(vec![12, 4, 1]));
        assert_eq!(row_major(&[5]), Some(vec![1]));
        assert_eq!(row_major(&[]), Some(vec![]));
        // An empty dimension counts as one.
        assert_eq!(row_major(&[3, 0, 2]), Some(vec![2, 2, 1]));
        assert_eq!(row_major(&[usize::MAX, 2, 1 << 62]), None);
    }

    #[test]
    fn the_span_covers_every_element_whatever_the_strides_signs() {
        // 2 x 3 floats, row-major: bytes 0..24.
        assert_eq!(span(&[2, 3], &[3, 1], 4), Ok(Some((0, 24))));
        // Transposed (column-major reading of the same 6): still 0..24.
        assert_eq!(span(&[3, 2], &[1, 3], 4), Ok(Some((0, 24))));
        // Every other element of 10: elements 0, 2, .., 8 reach bytes 0..36.
        assert_eq!(span(&[5], &[2], 4), Ok(Some((0, 36))));
        // Reversed: the first element is the highest, four below it.
        assert_eq!(span(&[5], &[-1], 8), Ok(Some((-32, 8))));
        // Broadcast (stride 0): one element.
        assert_eq!(span(&[1000, 4], &[0, 1], 2), Ok(Some((0, 8))));
        // A scalar (no dimensions) is one element.
        assert_eq!(span(&[], &[], 4), Ok(Some((0, 4))));
        assert_eq!(span(&[4, 0], &[1, 1], 4), Ok(None));
        assert!(span(&[usize::MAX, usize::MAX, usize::MAX], &[isize::MAX; 3], 8).is_err());
    }

    #[test]
    fn row_major_is_recognised_ignoring_single_extents() {
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(!is_row_major(&[2, 3], &[1, 2]));
        assert!(is_row_major(&[2, 1, 3], &[3, 99, 1]));
        assert!(!is_row_major(&[4], &[2]));
        assert!(is_row_major(&[0, 5], &[7, 7]));
        assert!(is_row_major(&[], &[]));
    }

    #[test]
    fn offsets_follow_the_strides_and_refuse_out_of_range_indices() {
        assert_eq!(offset_of(&[3, 4], &[1, 3], &[2, 1]), Some(5));
        assert_eq!(offset_of(&[3, 4], &[4, 1], &[2, 1]), Some(9));
        assert_eq!(offset_of(&[5], &[-1], &[4]), Some(-4));
        assert_eq!(offset_of(&[3, 4], &[4, 1], &[3, 0]), None);
        assert_eq!(offset_of(&[3, 4], &[4, 1], &[1]), None);
        assert_eq!(offset_of(&[], &[], &[]), Some(0));
        // Past isize::MAX elements, as a view of bytes spanning more than 2^63 of them may be
        // (found by the dlpack_import fuzz target: such an index was said out of range).
        let stride = 3 << 61;
        assert_eq!(
            offset_of(&[2, 2], &[stride, stride], &[1, 1]),
            Some(3 << 62)
        );
    }

    #[test]
    fn element_counts_refuse_overflow() {
        assert_eq!(element_count(&[2, 3, 4]), Some(24));
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[7, 0]), Some(0));
        assert_eq!(element_count(&[usize::MAX, 2]), None);
    }
}
