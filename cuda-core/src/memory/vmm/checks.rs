//! The checks made before any driver call, as functions of numbers alone.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// A size in bytes, and in MiB or KiB where it is a whole number of them.
fn bytes(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{n} bytes ({} MiB)", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{n} bytes ({} KiB)", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// `value` is a non-zero multiple of `granularity`.
pub(crate) fn multiple(name: &'static str, value: usize, granularity: usize) -> Result<()> {
    if value == 0 {
        return Err(Error::InvalidArgument {
            name,
            reason: format!(
                "cannot be zero: give a multiple of the allocation granularity, {}",
                bytes(granularity)
            ),
        });
    }
    if value % granularity != 0 {
        let up = value
            .checked_next_multiple_of(granularity)
            .map_or_else(|| "overflows".to_owned(), |up| format!("is {}", bytes(up)));
        return Err(Error::InvalidArgument {
            name,
            reason: format!(
                "{} is not a multiple of the allocation granularity, {}; the next \
                 multiple {up}",
                bytes(value),
                bytes(granularity)
            ),
        });
    }
    Ok(())
}

/// `value` rounded up to a multiple of `granularity`; zero and overflow refused.
pub(crate) fn round_up(name: &'static str, value: usize, granularity: usize) -> Result<usize> {
    if value == 0 {
        return Err(Error::InvalidArgument {
            name,
            reason: "cannot be zero".to_owned(),
        });
    }
    value
        .checked_next_multiple_of(granularity)
        .ok_or_else(|| Error::InvalidArgument {
            name,
            reason: format!(
                "{value} bytes rounded up to the allocation granularity, {}, overflows",
                bytes(granularity)
            ),
        })
}

/// A reservation's alignment: `None` or a power of two, at least `granularity`.
pub(crate) fn alignment(alignment: Option<usize>, granularity: usize) -> Result<usize> {
    match alignment {
        None => Ok(granularity),
        Some(a) if a.is_power_of_two() => Ok(a.max(granularity)),
        Some(a) => Err(Error::InvalidArgument {
            name: "alignment",
            reason: format!("{a} is not a power of two"),
        }),
    }
}

/// A map of `size` bytes at `offset` of a range of `range_size` bytes at `range_ptr`, whose
/// parts `mapped` (offset: size) are mapped already, with memory of `granularity`.
pub(crate) fn map(
    range_ptr: u64,
    range_size: usize,
    offset: usize,
    size: usize,
    granularity: usize,
    mapped: &BTreeMap<usize, usize>,
) -> Result<()> {
    if offset % granularity != 0 {
        return Err(Error::InvalidArgument {
            name: "offset",
            reason: format!(
                "{} is not a multiple of the memory's allocation granularity, {}",
                bytes(offset),
                bytes(granularity)
            ),
        });
    }
    let end = offset.checked_add(size).filter(|&end| end <= range_size);
    let Some(end) = end else {
        return Err(Error::InvalidArgument {
            name: "offset",
            reason: format!(
                "{} at offset {offset} reach past the end of the {} range (the \
                 allocation granularity is {})",
                bytes(size),
                bytes(range_size),
                bytes(granularity)
            ),
        });
    };
    if (range_ptr + offset as u64) % granularity as u64 != 0 {
        return Err(Error::InvalidArgument {
            name: "offset",
            reason: format!(
                "address {:#x} is not a multiple of the memory's allocation granularity, {} \
                 (reserve the range with that alignment)",
                range_ptr + offset as u64,
                bytes(granularity)
            ),
        });
    }
    let before = mapped.range(..end).next_back();
    if let Some((&at, &len)) = before.filter(|&(&at, &len)| at + len > offset) {
        return Err(Error::InvalidArgument {
            name: "offset",
            reason: format!(
                "bytes {offset}..{end} overlap bytes {at}..{} of the range, mapped already",
                at + len
            ),
        });
    }
    Ok(())
}

/// Growing a buffer of `size` bytes and `capacity` to `new_size`.
pub(crate) fn grow(
    size: usize,
    new_size: usize,
    capacity: usize,
    granularity: usize,
) -> Result<()> {
    if new_size > capacity {
        return Err(Error::InvalidArgument {
            name: "new_size",
            reason: format!(
                "{} is more than the buffer's capacity, {} (a whole number of the \
                 allocation granularity, {})",
                bytes(new_size),
                bytes(capacity),
                bytes(granularity)
            ),
        });
    }
    if new_size < size {
        return Err(Error::InvalidArgument {
            name: "new_size",
            reason: format!(
                "{new_size} bytes is less than the buffer's {size}: grow does not shrink \
                 (see shrink)"
            ),
        });
    }
    Ok(())
}

/// Shrinking a buffer of `size` bytes to `new_size`.
pub(crate) fn shrink(size: usize, new_size: usize) -> Result<()> {
    if new_size > size {
        return Err(Error::InvalidArgument {
            name: "new_size",
            reason: format!(
                "{new_size} bytes is more than the buffer's {size}: shrink does not grow \
                 (see grow)"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: usize = 2 << 20;

    fn reason(e: Error) -> (&'static str, String) {
        match e {
            Error::InvalidArgument { name, reason } => (name, reason),
            other => panic!("not an invalid argument: {other}"),
        }
    }

    #[test]
    fn a_size_must_be_a_non_zero_multiple_of_the_granularity_which_the_error_names() {
        multiple("size", G, G).unwrap();
        multiple("size", 5 * G, G).unwrap();
        let (name, why) = reason(multiple("size", G + 1, G).unwrap_err());
        assert_eq!(name, "size");
        assert!(why.contains("2097152 bytes (2 MiB)"), "{why}");
        assert!(why.contains("4194304"), "the next multiple: {why}");
        let (_, why) = reason(multiple("size", 0, G).unwrap_err());
        assert!(why.contains("zero") && why.contains("2 MiB"), "{why}");
        let (_, why) = reason(multiple("size", usize::MAX, G).unwrap_err());
        assert!(why.contains("overflows"), "{why}");
    }

    #[test]
    fn round_up_rounds_to_the_next_multiple_and_refuses_zero_and_overflow() {
        assert_eq!(round_up("size", 1, G).unwrap(), G);
        assert_eq!(round_up("size", G, G).unwrap(), G);
        assert_eq!(round_up("size", G + 1, G).unwrap(), 2 * G);
        assert_eq!(round_up("size", 3 * G - 1, G).unwrap(), 3 * G);
        assert!(round_up("size", 0, G).is_err());
        let (name, why) = reason(round_up("capacity", usize::MAX - 5, G).unwrap_err());
        assert_eq!(name, "capacity");
        assert!(why.contains("overflows") && why.contains("2 MiB"), "{why}");
    }

    #[test]
    fn an_alignment_is_a_power_of_two_and_at_least_the_granularity() {
        assert_eq!(alignment(None, G).unwrap(), G);
        assert_eq!(alignment(Some(4096), G).unwrap(), G);
        assert_eq!(alignment(Some(4 * G), G).unwrap(), 4 * G);
        let (name, _) = reason(alignment(Some(3 * G), G).unwrap_err());
        assert_eq!(name, "alignment");
        assert!(alignment(Some(0), G).is_err());
    }

    #[test]
    fn a_map_must_be_aligned_inside_the_range_and_over_nothing_mapped() {
        let none = BTreeMap::new();
        let base = 0x7f00_0000_0000u64;
        map(base, 8 * G, 0, 8 * G, G, &none).unwrap();
        map(base, 8 * G, 6 * G, 2 * G, G, &none).unwrap();
        // Past the end: named with the range's size and the granularity.
        let (name, why) = reason(map(base, 8 * G, 7 * G, 2 * G, G, &none).unwrap_err());
        assert_eq!(name, "offset");
        assert!(
            why.contains("past the end") && why.contains("16 MiB"),
            "{why}"
        );
        assert!(why.contains("2 MiB"), "{why}");
        // An offset that is not a multiple.
        let (_, why) = reason(map(base, 8 * G, 4096, G, G, &none).unwrap_err());
        assert!(
            why.contains("4096 bytes (4 KiB)") && why.contains("2 MiB"),
            "{why}"
        );
        // Overflowing offset + size.
        let (_, why) = reason(map(base, 8 * G, 2 * G, usize::MAX - G, G, &none).unwrap_err());
        assert!(why.contains("past the end"), "{why}");
        // A range whose start is not aligned to this memory's granularity.
        let (_, why) = reason(map(base + 4096, 8 * G, 0, G, G, &none).unwrap_err());
        assert!(
            why.contains("address") && why.contains("alignment"),
            "{why}"
        );
        // Overlaps, from either side, and a neighbour that does not overlap.
        let mapped = BTreeMap::from([(2 * G, 2 * G)]);
        map(base, 8 * G, 0, 2 * G, G, &mapped).unwrap();
        map(base, 8 * G, 4 * G, 2 * G, G, &mapped).unwrap();
        for (offset, size) in [(0, 3 * G), (3 * G, 2 * G), (2 * G, G), (G, 4 * G)] {
            let (_, why) = reason(map(base, 8 * G, offset, size, G, &mapped).unwrap_err());
            assert!(
                why.contains("overlap") && why.contains("mapped already"),
                "{why}"
            );
        }
    }

    #[test]
    fn grow_stays_within_the_capacity_and_does_not_shrink() {
        grow(0, 1, 4 * G, G).unwrap();
        grow(G, 4 * G, 4 * G, G).unwrap();
        grow(G, G, 4 * G, G).unwrap();
        let (name, why) = reason(grow(G, 4 * G + 1, 4 * G, G).unwrap_err());
        assert_eq!(name, "new_size");
        assert!(why.contains("capacity") && why.contains("8 MiB"), "{why}");
        assert!(why.contains("granularity, 2097152 bytes (2 MiB)"), "{why}");
        let (_, why) = reason(grow(2 * G, G, 4 * G, G).unwrap_err());
        assert!(why.contains("shrink"), "{why}");
        shrink(2 * G, G).unwrap();
        shrink(2 * G, 0).unwrap();
        assert!(shrink(G, G + 1).is_err());
    }
}
