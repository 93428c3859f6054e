//! [`ExternalSemaphore`]: another API's semaphore, imported, signalled and waited on in
//! stream order.

use std::fmt;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::context::Context;
use crate::device::Device;
use crate::driver::{
    ExternalSemaphoreHandle, EXTERNAL_SEMAPHORE_OPAQUE_FD, EXTERNAL_SEMAPHORE_TIMELINE_FD,
};
use crate::error::{Error, Result};
use crate::order::relaxed;
use crate::stream::{Stream, WeakStream};

/// What kind of semaphore was exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SemaphoreKind {
    /// A binary semaphore (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD`; Vulkan's
    /// `VK_SEMAPHORE_TYPE_BINARY`): each signal is consumed by one wait. Its value is always 0.
    #[doc(alias = "CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD")]
    Binary,
    /// A timeline semaphore (`CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`;
    /// Vulkan's `VK_SEMAPHORE_TYPE_TIMELINE`): a 64-bit counter that signals raise and waits
    /// wait to reach.
    #[doc(alias = "CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD")]
    Timeline,
}

impl SemaphoreKind {
    fn handle_type(self) -> u32 {
        match self {
            SemaphoreKind::Binary => EXTERNAL_SEMAPHORE_OPAQUE_FD,
            SemaphoreKind::Timeline => EXTERNAL_SEMAPHORE_TIMELINE_FD,
        }
    }
}

/// The imported semaphore and the streams that signalled or waited on it.
struct Imported {
    handle: ExternalSemaphoreHandle,
    context: Context,
    device: Device,
    kind: SemaphoreKind,
    /// Each stream that queued a signal or a wait, once, not kept alive (a stream dropped
    /// still ends its capture): the release waits for them, or for the whole context where
    /// one was dropped.
    used_on: Mutex<Vec<WeakStream>>,
    /// A signal or wait was captured into a graph, which may run it at any later time: the
    /// semaphore is then never destroyed.
    captured: AtomicBool,
}

impl Drop for Imported {
    fn drop(&mut self) {
        if *self.captured.get_mut() {
            log::debug!(
                "an external semaphore signalled or waited on in a captured graph is kept for \
                 good (the graph may run it later)"
            );
            return;
        }
        let release = Release {
            handle: self.handle,
            context: self.context.clone(),
            streams: std::mem::take(self.used_on.get_mut().unwrap_or_else(|e| e.into_inner())),
        };
        // A stream's or a context's synchronisation during a capture would be refused and
        // invalidate it (a stream that used the semaphore may capture now, or the calling
        // thread): put off until no capture is open (at once where none is).
        crate::lifetime::captures::after_captures_run(Box::new(move || release.run()));
    }
}

/// The destruction of an imported semaphore, after the work of the streams that used it.
struct Release {
    handle: ExternalSemaphoreHandle,
    context: Context,
    streams: Vec<WeakStream>,
}

impl Release {
    fn run(self) {
        // A stream dropped since goes on with its work: then the whole context is waited for.
        let mut dropped = false;
        for weak in &self.streams {
            let waited = match weak.upgrade() {
                Some(stream) => stream.sync_for_host(),
                None => {
                    dropped = true;
                    Ok(())
                }
            };
            if let Err(e) = waited {
                log::error!(
                    "an external semaphore is not destroyed (kept for good): waiting for a \
                     stream that signalled or waited on it failed ({e})"
                );
                return;
            }
        }
        if dropped {
            if let Err(e) = self.context.sync() {
                log::error!(
                    "an external semaphore is not destroyed (kept for good): waiting for the \
                     context whose dropped stream signalled or waited on it failed ({e})"
                );
                return;
            }
        }
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|driver| relaxed(driver, || driver.destroy_external_semaphore(handle)))
        {
            log::error!("destroying an imported external semaphore: {e}");
        }
    }
}

/// A semaphore another API made and exported (Vulkan's `vkGetSemaphoreFdKHR` with an opaque
/// file descriptor), imported into CUDA (`cuImportExternalSemaphore`) in the primary context of
/// a device. [`Stream::signal_semaphore`] and [`Stream::wait_semaphore`] signal it and wait for
/// it in a stream's order, so that the other API's work and the crate's run one after the
/// other on the GPU, with no host synchronisation.
///
/// Clones share one import. It is released (`cuDestroyExternalSemaphore`) once the last is
/// dropped, after the work of every stream that signalled or waited on it is done (the drop
/// waits for those streams, or for their context where one of them was dropped: a wait for a
/// value nobody signals holds it up for good). It does not keep those streams alive. A
/// semaphore signalled or waited on in a capture is never released, since the graph may run
/// that node at any later time.
#[doc(alias = "CUexternalSemaphore")]
#[derive(Clone)]
pub struct ExternalSemaphore {
    imported: Arc<Imported>,
}

impl fmt::Debug for ExternalSemaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalSemaphore")
            .field("device", &self.imported.device.ordinal())
            .field("kind", &self.imported.kind)
            .finish()
    }
}

impl ExternalSemaphore {
    /// Imports a semaphore that another API exported as an opaque file descriptor into
    /// `device`'s primary context, as a semaphore of `kind`.
    ///
    /// On success the driver owns `fd`; on an error `fd` is closed here.
    ///
    /// # Safety
    ///
    /// `fd` is an opaque file descriptor of a semaphore of `kind` exported for `device`'s GPU
    /// (Vulkan: `VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT`, created with
    /// `VkSemaphoreTypeCreateInfo` of the same type). What the semaphore orders is the
    /// caller's to keep: the crate does not know which of the other API's work waits for or
    /// signals it.
    #[doc(alias = "cuImportExternalSemaphore")]
    pub unsafe fn import_fd(
        device: Device,
        fd: OwnedFd,
        kind: SemaphoreKind,
    ) -> Result<ExternalSemaphore> {
        let context = device.primary_context()?;
        let raw = fd.as_raw_fd();
        let handle = context.with_current(|driver| {
            relaxed(driver, || {
                driver.import_external_semaphore(kind.handle_type(), raw)
            })
        })?;
        // The driver owns the descriptor now: it must not be closed here.
        let _owned_by_driver = fd.into_raw_fd();
        Ok(ExternalSemaphore {
            imported: Arc::new(Imported {
                handle,
                context,
                device,
                kind,
                used_on: Mutex::new(Vec::new()),
                captured: AtomicBool::new(false),
            }),
        })
    }

    /// What kind of semaphore it is.
    pub fn kind(&self) -> SemaphoreKind {
        self.imported.kind
    }

    /// The device it was imported into.
    pub fn device(&self) -> Device {
        self.imported.device
    }

    /// Checks a stream and a value, and notes the stream for the release.
    fn prepare(&self, stream: &Stream, value: u64) -> Result<()> {
        let imported = &*self.imported;
        super::check_stream(stream, imported.device, &imported.context, "the semaphore")?;
        if imported.kind == SemaphoreKind::Binary && value != 0 {
            return Err(Error::InvalidArgument {
                name: "value",
                reason: format!(
                    "{value} for a binary semaphore, which has no value: pass 0 (values are a \
                     timeline semaphore's)"
                ),
            });
        }
        let mut used_on = imported.used_on.lock().unwrap_or_else(|e| e.into_inner());
        if !used_on.iter().any(|weak| weak.is(stream)) {
            used_on.push(stream.downgrade());
        }
        Ok(())
    }

    /// Notes a signal or wait captured into a graph.
    fn note_queued(&self, stream: &Stream) {
        if crate::lifetime::captures::captures_open() && stream.capturing() {
            self.imported.captured.store(true, Ordering::Relaxed);
        }
    }
}

impl Stream {
    /// Signals `semaphore` at this point of the stream (`cuSignalExternalSemaphoresAsync`):
    /// once the work queued before it is done, a timeline semaphore's value becomes `value`
    /// (a binary one, whose `value` must be 0, is signalled). The other API's work that waits
    /// for it then starts.
    ///
    /// The stream must be of the semaphore's context (its device's primary context). In a
    /// capture the signal becomes a node of the graph, run on each launch.
    #[doc(alias = "cuSignalExternalSemaphoresAsync")]
    pub fn signal_semaphore(&self, semaphore: &ExternalSemaphore, value: u64) -> Result<()> {
        semaphore.prepare(self, value)?;
        let handle = semaphore.imported.handle;
        self.queue(|driver, stream| driver.signal_external_semaphore(handle, value, stream))?;
        semaphore.note_queued(self);
        Ok(())
    }

    /// Makes later work on this stream wait until `semaphore` is signalled
    /// (`cuWaitExternalSemaphoresAsync`): a timeline semaphore until its value is at least
    /// `value`, a binary one (whose `value` must be 0) until the next signal, which the wait
    /// consumes.
    ///
    /// The stream must be of the semaphore's context. A wait for a signal that never comes
    /// holds the stream up for good ([`Stream::sync_timeout`] gives up waiting for it).
    #[doc(alias = "cuWaitExternalSemaphoresAsync")]
    pub fn wait_semaphore(&self, semaphore: &ExternalSemaphore, value: u64) -> Result<()> {
        semaphore.prepare(self, value)?;
        let handle = semaphore.imported.handle;
        self.queue(|driver, stream| driver.wait_external_semaphore(handle, value, stream))?;
        semaphore.note_queued(self);
        Ok(())
    }
}
