//! Small buffers of a device's default pool kept by the stream they were freed on, for the
//! next allocation of their size on that stream: see [`DeviceMemoryResource`]'s "Small
//! buffers" (the cache lives in each stream made with `create_stream`).
//!
//! [`DeviceMemoryResource`]: crate::DeviceMemoryResource

use std::sync::atomic::{AtomicU64, Ordering};

/// The smallest size class, in bytes.
const SMALLEST: usize = 256;
/// The number of size classes: 256 B, 512 B, ..., 64 KiB.
pub(crate) const CLASSES: usize = 9;
/// The largest size kept, in bytes.
pub(crate) const LARGEST: usize = SMALLEST << (CLASSES - 1);

/// A size's class: its index, and the bytes an allocation of the class has (the size rounded
/// up to a power of two of at least 256); `None` above [`LARGEST`] or for 0.
#[inline]
pub(crate) fn class_of(size: usize) -> Option<(usize, usize)> {
    if size == 0 || size > LARGEST {
        return None;
    }
    let bytes = size.max(SMALLEST).next_power_of_two();
    let index = (bytes / SMALLEST).trailing_zeros() as usize;
    Some((index, bytes))
}

/// One freed allocation per size class, as device addresses (0: none). Lock-free: a take
/// swaps a slot to 0, a give fills an empty slot.
#[derive(Default)]
pub(crate) struct SmallCache([AtomicU64; CLASSES]);

impl SmallCache {
    /// A kept allocation of class `index`, if there is one.
    #[inline]
    pub(crate) fn take(&self, index: usize) -> Option<u64> {
        let slot = self.0.get(index)?;
        if slot.load(Ordering::Relaxed) == 0 {
            return None;
        }
        match slot.swap(0, Ordering::Acquire) {
            0 => None,
            ptr => Some(ptr),
        }
    }

    /// Keeps `ptr` (an allocation of class `index`); `false` when the class's slot is taken:
    /// the caller frees it.
    #[inline]
    pub(crate) fn give(&self, index: usize, ptr: u64) -> bool {
        self.0.get(index).is_some_and(|slot| {
            slot.compare_exchange(0, ptr, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Every kept allocation, leaving the cache empty.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = u64> + '_ {
        self.0
            .iter_mut()
            .map(|slot| std::mem::take(slot.get_mut()))
            .filter(|&ptr| ptr != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_power_of_two_classes() {
        assert_eq!(class_of(0), None);
        assert_eq!(class_of(1), Some((0, 256)));
        assert_eq!(class_of(256), Some((0, 256)));
        assert_eq!(class_of(257), Some((1, 512)));
        assert_eq!(class_of(1024), Some((2, 1024)));
        assert_eq!(class_of(1025), Some((3, 2048)));
        assert_eq!(class_of(LARGEST), Some((CLASSES - 1, 64 << 10)));
        assert_eq!(class_of(LARGEST + 1), None);
        for size in 1..=LARGEST {
            let (index, bytes) = class_of(size).unwrap();
            assert!(bytes >= size && bytes < 2 * size.max(SMALLEST), "{size}");
            assert!(index < CLASSES);
        }
    }

    #[test]
    fn one_allocation_per_class_is_kept() {
        let mut cache = SmallCache::default();
        assert_eq!(cache.take(2), None);
        assert!(cache.give(2, 0x1000));
        assert!(!cache.give(2, 0x2000), "a second of one class is freed");
        assert!(cache.give(3, 0x3000));
        assert_eq!(cache.take(2), Some(0x1000));
        assert_eq!(cache.take(2), None);
        assert!(!cache.give(CLASSES, 0x4000));
        assert_eq!(cache.take(CLASSES), None);
        let left: Vec<u64> = cache.drain().collect();
        assert_eq!(left, [0x3000]);
        assert_eq!(cache.take(3), None);
    }
}
