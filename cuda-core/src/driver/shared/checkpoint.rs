//! [`CheckpointApi`](crate::driver::api::CheckpointApi) for both ABIs (restore's arguments
//! differ: `abi_checkpoint_restore` in `v12.rs` / `v13.rs`).

use super::*;

impl crate::driver::api::CheckpointApi for Drv {
    fn checkpoint_get_state(&self, pid: i32) -> Result<u32> {
        let mut state = sys::CUprocessState(0);
        call!(self.cuCheckpointProcessGetState(pid, &mut state))?;
        Ok(state.0)
    }

    fn checkpoint_lock(&self, pid: i32, timeout_ms: u32) -> Result<()> {
        let mut args = sys::CUcheckpointLockArgs {
            timeoutMs: timeout_ms,
            ..Default::default()
        };
        call!(self.cuCheckpointProcessLock(pid, &mut args))
    }

    fn checkpoint_checkpoint(&self, pid: i32) -> Result<()> {
        // SAFETY: the arguments are plain data (and null pointers), all zero by
        // default.
        let mut args: sys::CUcheckpointCheckpointArgs = unsafe { std::mem::zeroed() };
        call!(self.cuCheckpointProcessCheckpoint(pid, &mut args))
    }

    fn checkpoint_restore(&self, pid: i32, pairs: &[([u8; 16], [u8; 16])]) -> Result<()> {
        self.abi_checkpoint_restore(pid, pairs)
    }

    fn checkpoint_unlock(&self, pid: i32) -> Result<()> {
        // SAFETY: as for the checkpoint's arguments.
        let mut args: sys::CUcheckpointUnlockArgs = unsafe { std::mem::zeroed() };
        call!(self.cuCheckpointProcessUnlock(pid, &mut args))
    }

    fn checkpoint_restore_thread_id(&self, pid: i32) -> Result<i32> {
        let mut tid = 0;
        call!(self.cuCheckpointProcessGetRestoreThreadId(pid, &mut tid))?;
        Ok(tid)
    }
}
