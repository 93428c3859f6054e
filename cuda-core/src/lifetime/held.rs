//! [`Held`]: a dependency held for good, or by reference count.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How an object holds something it depends on (a context, a memory resource): an `Arc` that
/// is either counted, or, when the process keeps the value for good, an uncounted copy of the
/// kept `Arc`, so that making, cloning and dropping the holder costs no atomic operation.
///
/// Dereferences to the value; [`Held::arc`] gives the `Arc` in both cases.
pub(crate) struct Held<T: ?Sized + 'static> {
    /// Never dropped when `counted` is false: then it is a bitwise copy of an `Arc` that the
    /// process keeps for good (see [`Held::forever`]).
    arc: ManuallyDrop<Arc<T>>,
    counted: bool,
}

impl<T: ?Sized + 'static> Held<T> {
    /// Holds `arc` by reference count.
    #[inline]
    pub(crate) fn counted(arc: Arc<T>) -> Held<T> {
        Held {
            arc: ManuallyDrop::new(arc),
            counted: true,
        }
    }

    /// Holds a value the process keeps for good, counting nothing. A `&'static Arc` proves it:
    /// the `Arc` it points to can never be dropped, so its value outlives every copy.
    #[inline]
    pub(crate) fn forever(kept: &'static Arc<T>) -> Held<T> {
        // SAFETY: a bitwise copy of an `Arc` that is never dropped (it is borrowed for
        // 'static), wrapped so that the copy is never dropped either: the count stays right,
        // and the allocation outlives the copy.
        let alias = unsafe { std::ptr::read(kept) };
        Held {
            arc: ManuallyDrop::new(alias),
            counted: false,
        }
    }

    /// Holds what `arc` points to: uncounted when the process keeps it for good (it was passed
    /// to [`keep_for_good`]), by a counted clone otherwise.
    #[inline]
    pub(crate) fn of(arc: &Arc<T>) -> Held<T> {
        if is_kept(arc) {
            // SAFETY: as in `forever`: the allocation is kept by a `&'static Arc` registered
            // with `keep_for_good`, and this copy, never dropped, points to it.
            let alias = unsafe { std::ptr::read(arc) };
            return Held {
                arc: ManuallyDrop::new(alias),
                counted: false,
            };
        }
        Held::counted(Arc::clone(arc))
    }

    /// The held value's `Arc`.
    #[inline]
    pub(crate) fn arc(&self) -> &Arc<T> {
        &self.arc
    }

    /// Whether this holder counts a reference (the value is not kept for good).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_counted(&self) -> bool {
        self.counted
    }

    /// The same holder of another view of the value: `f` must be an unsizing coercion
    /// (`|a| a as Arc<dyn Trait>`), which changes no count.
    #[inline]
    pub(crate) fn coerce<U: ?Sized + 'static>(self, f: impl FnOnce(Arc<T>) -> Arc<U>) -> Held<U> {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; its `Arc` moves into the result,
        // which keeps its counted-or-not state.
        let arc = unsafe { ManuallyDrop::take(&mut this.arc) };
        Held {
            arc: ManuallyDrop::new(f(arc)),
            counted: this.counted,
        }
    }
}

impl<T: ?Sized + 'static> Clone for Held<T> {
    #[inline]
    fn clone(&self) -> Self {
        if self.counted {
            Held::counted(Arc::clone(&self.arc))
        } else {
            // SAFETY: an uncounted copy of an uncounted copy: the kept `Arc` still outlives it.
            let alias = unsafe { std::ptr::read(&*self.arc) };
            Held {
                arc: ManuallyDrop::new(alias),
                counted: false,
            }
        }
    }
}

impl<T: ?Sized + 'static> Drop for Held<T> {
    #[inline]
    fn drop(&mut self) {
        if self.counted {
            // SAFETY: a counted holder owns its `Arc`, dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.arc) }
        }
    }
}

impl<T: ?Sized + 'static> Deref for Held<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.arc
    }
}

impl<T: ?Sized + fmt::Debug + 'static> fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// The addresses of the values the process keeps for good, registered by [`keep_for_good`]:
/// a flat static, so that [`Held::of`] reads one cache line at a constant address (no chain
/// of loads) to tell a kept value from another. Filled from the front; a zero ends it. A
/// process keeps one default memory resource per device it uses, far fewer than this holds;
/// past it, values are simply held by count.
static KEPT: [AtomicUsize; 64] = [const { AtomicUsize::new(0) }; 64];

/// Records that the process keeps `kept` for good, so that [`Held::of`] holds it uncounted.
pub(crate) fn keep_for_good<T: ?Sized + 'static>(kept: &'static Arc<T>) {
    let address = Arc::as_ptr(kept).cast::<()>() as usize;
    for slot in &KEPT {
        match slot.compare_exchange(0, address, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return,
            Err(present) if present == address => return,
            Err(_) => {}
        }
    }
}

/// Whether the process keeps `arc`'s value for good (it was passed to [`keep_for_good`]).
#[inline]
pub(crate) fn is_kept<T: ?Sized>(arc: &Arc<T>) -> bool {
    is_kept_address(Arc::as_ptr(arc).cast())
}

/// Whether the value at `address` is kept for good.
#[inline]
fn is_kept_address(address: *const ()) -> bool {
    let address = address as usize;
    for slot in &KEPT {
        match slot.load(Ordering::Acquire) {
            0 => return false,
            present if present == address => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counted(&'static AtomicUsize);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_kept_value_is_held_without_counting_and_an_other_one_by_count() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let kept: &'static Arc<Counted> = Box::leak(Box::new(Arc::new(Counted(&DROPS))));
        keep_for_good(kept);
        let held = Held::of(kept);
        assert!(!held.is_counted());
        let copies: Vec<_> = (0..3).map(|_| held.clone()).collect();
        // No copy counted a reference (a counted one would show here), none drops the value.
        assert_eq!(Arc::strong_count(kept), 1);
        drop(copies);
        drop(held);
        assert_eq!(Arc::strong_count(kept), 1);
        assert_eq!(DROPS.load(Ordering::Relaxed), 0);
        // The same through `forever`, and after coercion to a trait object.
        let as_any = Held::forever(kept).coerce(|a| a as Arc<dyn Send + Sync>);
        assert!(!as_any.is_counted());
        drop(as_any);
        assert_eq!(Arc::strong_count(kept), 1);

        let other = Arc::new(Counted(&DROPS));
        let held = Held::of(&other);
        assert!(held.is_counted());
        assert_eq!(Arc::strong_count(&other), 2);
        let clone = held.clone().coerce(|a| a as Arc<dyn Send + Sync>);
        assert_eq!(Arc::strong_count(&other), 3);
        drop((held, clone));
        assert_eq!(Arc::strong_count(&other), 1);
        drop(other);
        assert_eq!(DROPS.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn registering_twice_takes_one_slot() {
        let kept: &'static Arc<u32> = Box::leak(Box::new(Arc::new(7)));
        let address = Arc::as_ptr(kept) as usize;
        let slots = || {
            KEPT.iter()
                .filter(|s| s.load(Ordering::Relaxed) == address)
                .count()
        };
        keep_for_good(kept);
        keep_for_good(kept);
        assert_eq!(slots(), 1);
        assert!(is_kept(kept));
        assert!(!is_kept_address(std::ptr::without_provenance(8)));
    }
}
