//! [`Registration`]: a buffer registered with a communicator (`ncclCommRegister`).

use std::fmt;
use std::sync::Arc;

use super::communicator::{now_or_after_group, refuse_in_group, CommInner, Communicator};
use crate::driver::nccl::{nccl, RegistrationHandle};
use crate::error::{Error, Result};
use crate::memory::buffer::Buffer;

/// A buffer registered with a communicator (`ncclCommRegister`), so that NCCL's collectives on
/// it may skip its own staging copies (zero-copy over NVLink or the network, where the
/// transport allows). The collectives find registered memory by its address: they take the
/// buffer as before. The registration keeps the buffer and the communicator alive, and is
/// undone when dropped (`ncclCommDeregister`), once the work queued on the buffer's
/// deallocation stream (which every use of the buffer is ordered before) is done. Memory of
/// [`NcclMemoryResource`](super::NcclMemoryResource) registers for the most paths.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_core::nccl::{Communicator, NcclMemoryResource, ReduceOp};
/// use cuda_core::{Allocate, Stream};
///
/// fn registered(comm: &Communicator, stream: &Stream) -> cuda_core::Result<()> {
///     let memory = NcclMemoryResource::new(comm.device())?;
///     let grads = Arc::new(memory.allocate(256 << 20, stream)?);
///     let registration = comm.register(&grads)?;
///     comm.all_reduce_in_place::<f32>(&grads, ReduceOp::Sum, stream)?;
///     drop(registration); // deregistered after the all-reduce is done
///     Ok(())
/// }
/// ```
#[doc(alias = "ncclCommRegister")]
pub struct Registration {
    comm: Arc<CommInner>,
    buffer: Arc<Buffer>,
    handle: RegistrationHandle,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("buffer", &self.buffer)
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// The registered buffer.
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }
}

impl Communicator {
    /// Registers `buffer` with this communicator (`ncclCommRegister`): see [`Registration`].
    /// The buffer must be memory of the communicator's device (checked before NCCL).
    #[doc(alias = "ncclCommRegister")]
    pub fn register(&self, buffer: &Arc<Buffer>) -> Result<Registration> {
        refuse_in_group("registering a buffer")?;
        if buffer.device() != Some(self.device()) {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "{}, and the communicator is device {}'s",
                    buffer
                        .device()
                        .map_or("host memory".to_owned(), |d| format!(
                            "memory of device {}",
                            d.ordinal()
                        )),
                    self.device().ordinal()
                ),
            });
        }
        let nccl = nccl()?;
        let inner = &self.inner;
        let mut calls = inner.lock();
        let comm = inner.live(&mut calls, nccl)?;
        let handle = inner
            .context
            .with_current(|_| nccl.comm_register(comm, buffer.ptr().0, buffer.size()))?;
        Ok(Registration {
            comm: Arc::clone(inner),
            buffer: Arc::clone(buffer),
            handle,
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let (comm, buffer, handle) = (
            Arc::clone(&self.comm),
            Arc::clone(&self.buffer),
            self.handle,
        );
        now_or_after_group(move || {
            // Every use of the buffer is ordered before its deallocation stream's work.
            if let Err(e) = buffer.deallocation_stream().sync_for_host() {
                log::error!(
                    "a registered buffer of {} bytes is kept registered and allocated (leaked): \
                     waiting for its work failed ({e})",
                    buffer.size()
                );
                std::mem::forget(buffer);
                return;
            }
            let Ok(nccl) = nccl() else { return };
            let _calls = comm.lock();
            // An aborted or finalized communicator took its registrations with it.
            if let Some(live) = comm.handle() {
                if let Err(e) = comm
                    .context
                    .with_current(|_| nccl.comm_deregister(live, handle))
                {
                    log::error!("deregistering a buffer from an NCCL communicator: {e}");
                }
            }
        });
    }
}
