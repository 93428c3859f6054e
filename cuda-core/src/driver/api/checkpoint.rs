//! Process checkpointing (`cuCheckpointProcess*`, drivers 570 and newer).

use crate::error::Result;

/// Checkpointing of a process's CUDA state.
pub(crate) trait CheckpointApi {
    /// `cuCheckpointProcessGetState`: the raw `CUprocessState`.
    fn checkpoint_get_state(&self, pid: i32) -> Result<u32>;
    /// `cuCheckpointProcessLock`, waiting at most `timeout_ms` (0: no limit).
    fn checkpoint_lock(&self, pid: i32, timeout_ms: u32) -> Result<()>;
    /// `cuCheckpointProcessCheckpoint`.
    fn checkpoint_checkpoint(&self, pid: i32) -> Result<()>;
    /// `cuCheckpointProcessRestore`, moving each `(old, new)` GPU UUID pair (the 13 header's
    /// `gpuPairs`; with the 12 ABI only an empty list is accepted).
    fn checkpoint_restore(&self, pid: i32, pairs: &[([u8; 16], [u8; 16])]) -> Result<()>;
    /// `cuCheckpointProcessUnlock`.
    fn checkpoint_unlock(&self, pid: i32) -> Result<()>;
    /// `cuCheckpointProcessGetRestoreThreadId`.
    fn checkpoint_restore_thread_id(&self, pid: i32) -> Result<i32>;
}
