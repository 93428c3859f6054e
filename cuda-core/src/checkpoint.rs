//! Checkpointing a process's CUDA state (`cuCheckpointProcess*`, drivers 570 and newer): lock
//! a process's CUDA calls, move its device memory to host memory, bring it back, and let it
//! run again. A checkpointing tool (such as CRIU) does this around saving the process.
//!
//! A driver without these calls answers each with [`Error::NotSupported`] naming the call.
//!
//! ```no_run
//! use std::time::Duration;
//! use cuda_core::checkpoint::{Process, ProcessState, RestoreOptions};
//!
//! let process = Process::new(12345);
//! process.lock(Some(Duration::from_secs(10)))?;   // its CUDA calls now wait
//! process.checkpoint()?;                           // its device memory is in host memory
//! assert_eq!(process.state()?, ProcessState::Checkpointed);
//! process.restore(&RestoreOptions::default())?;    // back on the GPU
//! process.unlock()?;                               // and running
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::time::Duration;

use crate::device::Uuid;
use crate::driver::driver;
use crate::error::{Error, Result};

/// Where a process's CUDA state is (`CUprocessState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUprocessState")]
pub enum ProcessState {
    /// Running normally (`CU_PROCESS_STATE_RUNNING`).
    Running,
    /// Locked: its CUDA calls wait (`CU_PROCESS_STATE_LOCKED`).
    Locked,
    /// Checkpointed: its device memory is in host memory (`CU_PROCESS_STATE_CHECKPOINTED`).
    Checkpointed,
    /// A checkpoint or restore failed (`CU_PROCESS_STATE_FAILED`).
    Failed,
    /// Being checkpointed (`CU_PROCESS_STATE_CHECKPOINTING`, 13 header).
    Checkpointing,
    /// Being restored (`CU_PROCESS_STATE_RESTORING`, 13 header).
    Restoring,
    /// A state this crate does not know, as the driver's number.
    Other(u32),
}

impl ProcessState {
    fn from_raw(raw: u32) -> ProcessState {
        match raw {
            0 => ProcessState::Running,
            1 => ProcessState::Locked,
            2 => ProcessState::Checkpointed,
            3 => ProcessState::Failed,
            4 => ProcessState::Checkpointing,
            5 => ProcessState::Restoring,
            other => ProcessState::Other(other),
        }
    }
}

/// How to restore a checkpointed process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RestoreOptions {
    /// GPUs to restore onto others, as `(checkpointed on, restore on)` UUID pairs; empty to
    /// restore each device where it was. Needs the CUDA 13 ABI (the 12.9 header's restore
    /// takes no pairs: refused with [`Error::InvalidArgument`] there).
    pub gpu_pairs: Vec<(Uuid, Uuid)>,
}

crate::options::chainers!(RestoreOptions {
    with_gpu_pairs(gpu_pairs: Vec<(Uuid, Uuid)>);
});

/// A process whose CUDA state can be checkpointed, by its process id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    pid: i32,
}

impl Process {
    /// The process with this id (not checked until a call).
    #[must_use]
    pub fn new(pid: i32) -> Process {
        Process { pid }
    }

    /// This process: for [`state`](Self::state) and
    /// [`restore_thread_id`](Self::restore_thread_id); the calls that lock, checkpoint,
    /// restore or unlock refuse it.
    #[must_use]
    pub fn current() -> Process {
        Process {
            pid: i32::try_from(std::process::id()).unwrap_or(i32::MAX),
        }
    }

    /// The process id.
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Refuses `what` on the calling process: a locked process's CUDA calls wait until it is
    /// unlocked, so a process that locks itself stops its own calls (a drop suffices) with
    /// nothing to unlock it. Checkpointing tools act on another process.
    fn not_self(&self, what: &str) -> Result<()> {
        if i32::try_from(std::process::id()).is_ok_and(|own| own == self.pid) {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!(
                    "it is the calling process: {what} of one's own process stops its CUDA \
                     calls, this one's included (lock, checkpoint, restore and unlock are for \
                     a tool acting on another process)"
                ),
            });
        }
        Ok(())
    }

    /// Where its CUDA state is (`cuCheckpointProcessGetState`).
    #[doc(alias = "cuCheckpointProcessGetState")]
    pub fn state(&self) -> Result<ProcessState> {
        Ok(ProcessState::from_raw(
            driver()?.checkpoint_get_state(self.pid)?,
        ))
    }

    /// Locks its CUDA calls, waiting for the work it queued to finish, at most `timeout` (none:
    /// no limit) (`cuCheckpointProcessLock`). A timeout over `u32::MAX` milliseconds, or of
    /// zero, is refused (the driver reads 0 as "no limit"), and so is the calling process
    /// (its own calls would wait for an unlock it cannot make).
    #[doc(alias = "cuCheckpointProcessLock")]
    pub fn lock(&self, timeout: Option<Duration>) -> Result<()> {
        self.not_self("a lock")?;
        let ms = match timeout {
            None => 0,
            Some(t) => match u32::try_from(t.as_millis()) {
                Ok(ms) if ms > 0 => ms,
                _ => {
                    return Err(Error::InvalidArgument {
                        name: "timeout",
                        reason: format!(
                            "{t:?} is not 1 ms to {} ms (use None for no limit)",
                            u32::MAX
                        ),
                    })
                }
            },
        };
        driver()?.checkpoint_lock(self.pid, ms)
    }

    /// Moves its device memory to host memory and releases its GPUs; the process must be
    /// locked (`cuCheckpointProcessCheckpoint`). The calling process is refused.
    #[doc(alias = "cuCheckpointProcessCheckpoint")]
    pub fn checkpoint(&self) -> Result<()> {
        self.not_self("a checkpoint")?;
        driver()?.checkpoint_checkpoint(self.pid)
    }

    /// Brings a checkpointed process's state back onto GPUs (`cuCheckpointProcessRestore`); it
    /// stays locked until [`unlock`](Self::unlock). The calling process is refused.
    #[doc(alias = "cuCheckpointProcessRestore")]
    pub fn restore(&self, options: &RestoreOptions) -> Result<()> {
        self.not_self("a restore")?;
        let pairs: Vec<([u8; 16], [u8; 16])> =
            options.gpu_pairs.iter().map(|(a, b)| (a.0, b.0)).collect();
        driver()?.checkpoint_restore(self.pid, &pairs)
    }

    /// Lets its CUDA calls run again (`cuCheckpointProcessUnlock`). The calling process is
    /// refused (locked, its own calls could not run to unlock it).
    #[doc(alias = "cuCheckpointProcessUnlock")]
    pub fn unlock(&self) -> Result<()> {
        self.not_self("an unlock")?;
        driver()?.checkpoint_unlock(self.pid)
    }

    /// The id of its restore thread, the thread a checkpointing tool must leave running
    /// (`cuCheckpointProcessGetRestoreThreadId`).
    #[doc(alias = "cuCheckpointProcessGetRestoreThreadId")]
    pub fn restore_thread_id(&self) -> Result<i32> {
        driver()?.checkpoint_restore_thread_id(self.pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Review N14: a process that locked itself stopped its own CUDA calls. Bug caught: the
    /// calls reached the driver for the calling process's own pid.
    #[test]
    fn the_calling_process_is_never_locked_checkpointed_or_unlocked() {
        let me = Process::current();
        for (what, result) in [
            ("lock", me.lock(Some(Duration::from_secs(1)))),
            ("lock", me.lock(None)),
            ("checkpoint", me.checkpoint()),
            ("restore", me.restore(&RestoreOptions::default())),
            ("unlock", me.unlock()),
        ] {
            let err = result.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "self", reason } if reason.contains("calling process")),
                "{what}: {err}"
            );
        }
    }

    #[test]
    fn states_are_read_by_their_numbers() {
        let states = [
            ProcessState::Running,
            ProcessState::Locked,
            ProcessState::Checkpointed,
            ProcessState::Failed,
            ProcessState::Checkpointing,
            ProcessState::Restoring,
        ];
        for (raw, state) in states.iter().enumerate() {
            assert_eq!(ProcessState::from_raw(raw as u32), *state);
        }
        assert_eq!(ProcessState::from_raw(9), ProcessState::Other(9));
    }

    #[test]
    fn a_zero_or_huge_timeout_is_refused_before_the_driver() {
        let process = Process::new(1);
        for timeout in [Duration::ZERO, Duration::from_secs(u64::from(u32::MAX))] {
            let err = process.lock(Some(timeout)).unwrap_err();
            assert!(
                matches!(
                    &err,
                    Error::InvalidArgument {
                        name: "timeout",
                        ..
                    }
                ),
                "{err}"
            );
        }
    }
}
