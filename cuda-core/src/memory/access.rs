//! Revoking a device's access to memory while other threads queue work on it: the check that
//! a stream's device may use a buffer, and the queueing of the work, are two steps, and a
//! revocation between them would let the work reach the driver without access (a copy of
//! pool memory without access crashed inside `cuMemcpyAsync`; a kernel faults, which poisons
//! the context).
//!
//! An [`AccessGate`] closes that window. An operation enters it before it checks access and
//! leaves once its work is queued; a revocation first marks the device as losing access (so
//! every later check refuses), then waits for the operations inside to leave, then waits for
//! the work queued in the device's contexts, and only then revokes. Entering costs one atomic
//! increment and decrement, and only for memory whose access can change that is used from
//! another device than its own (or host memory): a buffer on its own device's stream never
//! enters.

use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

use crate::device::Device;
use crate::error::Result;

/// The gate of one resource's memory (see the module's documentation). Public in name only,
/// for `memory::Hooks::access_gate` (out of reach outside the crate); it has no public
/// methods.
#[derive(Debug, Default)]
pub struct AccessGate {
    /// Operations between their check and the queueing of their work.
    inside: AtomicUsize,
    /// Bit `d`: device `d` is losing access (devices 0 to 63; others are marked by bit 63).
    revoking: AtomicU64,
}

/// An operation inside the gate: it leaves when dropped.
#[must_use]
pub(crate) struct Inside<'a>(&'a AccessGate);

impl Drop for Inside<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::Release);
    }
}

fn bit(device: Device) -> u64 {
    1 << device.ordinal().min(63)
}

impl AccessGate {
    /// Enters the gate, before checking access: a revocation marked after this waits for
    /// the returned value to drop.
    #[inline]
    pub(crate) fn enter(&self) -> Inside<'_> {
        self.inside.fetch_add(1, Ordering::Relaxed);
        // Orders the increment before the access check's loads, against the revocation's
        // mark-then-count (each side sees the other's write, or both proceed in order).
        fence(Ordering::SeqCst);
        Inside(self)
    }

    /// Whether `device` is losing access now: checks made inside the gate refuse it.
    #[inline]
    pub(crate) fn is_revoking(&self, device: Device) -> bool {
        self.revoking.load(Ordering::Relaxed) & bit(device) != 0
    }

    /// Revokes `device`'s access with `revoke` (which waits for the work queued in the
    /// device's contexts, then calls the driver): first marks the device so that no new
    /// operation passes its check, then waits for the operations inside to have queued their
    /// work. The mark is lifted after `revoke`, whatever it returns (the resource's own
    /// answer says then whether the device has access).
    pub(crate) fn revoke<T>(
        &self,
        device: Device,
        revoke: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        self.revoking.fetch_or(bit(device), Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut spins = 0u32;
        while self.inside.load(Ordering::Acquire) != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else if spins < 1024 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        let done = revoke();
        self.revoking.fetch_and(!bit(device), Ordering::Release);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A revocation waits for an operation that entered before it, and an operation that
    /// enters during it sees the device marked. Bugs caught: a revocation that does not wait
    /// (the flag below is unset when it runs); a mark that checks do not see.
    #[test]
    fn a_revocation_waits_for_the_operations_inside_and_refuses_new_ones() {
        let gate = Arc::new(AccessGate::default());
        let device = Device::from_handle(1);
        let queued = Arc::new(AtomicBool::new(false));
        let inside = gate.enter();
        assert!(!gate.is_revoking(device));
        let revoker = {
            let (gate, queued) = (Arc::clone(&gate), Arc::clone(&queued));
            std::thread::spawn(move || {
                gate.revoke(device, || {
                    assert!(
                        queued.load(Ordering::SeqCst),
                        "revoked before the work was queued"
                    );
                    Ok(())
                })
            })
        };
        // The revoker marks the device, then waits for `inside`.
        while !gate.is_revoking(device) {
            std::thread::yield_now();
        }
        assert!(
            !gate.is_revoking(Device::from_handle(0)),
            "another device was marked"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!revoker.is_finished(), "the revocation did not wait");
        queued.store(true, Ordering::SeqCst);
        drop(inside);
        revoker.join().unwrap().unwrap();
        assert!(
            !gate.is_revoking(device),
            "the mark stayed after the revocation"
        );
    }
}
