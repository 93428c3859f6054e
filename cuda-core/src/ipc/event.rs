//! Interprocess events: [`IpcEventHandle`], what [`Event::ipc_handle`] exports and
//! [`Event::open_ipc`] opens. The events this process opened are kept in
//! `lifetime::ipc_registry`, which an interprocess event's drop also visits.

use std::fmt;

use super::form::{Reader, Writer};
use crate::device::{Device, Uuid};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::lifetime::ipc_registry;

impl Event {
    /// Exports an [`interprocess`](EventOptions::interprocess) event for other processes
    /// (`cuIpcGetEventHandle`): another process opens the handle with [`Event::open_ipc`],
    /// and then either process may record the event, wait for it on a stream, synchronise or
    /// query it. An event made without `interprocess` is [`Error::InvalidArgument`].
    ///
    /// Keep this event alive while any process uses the handle: the driver makes using an
    /// opened event whose exporter destroyed it undefined behaviour (in the opening process:
    /// [`Event::open_ipc`]'s contract).
    ///
    /// ```no_run
    /// use cuda_core::{Device, Event, EventOptions, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let done = stream.record_new(EventOptions::default().with_interprocess(true))?;
    /// let bytes = done.ipc_handle()?.to_bytes(); // send them to the other process
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuIpcGetEventHandle")]
    pub fn ipc_handle(&self) -> Result<IpcEventHandle> {
        if !self.options().interprocess {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the event was made without EventOptions::interprocess".to_owned(),
            });
        }
        // The driver asks for the event's context to be current (CUDA_ERROR_INVALID_CONTEXT
        // otherwise, seen on the 580 driver).
        let event = self.handle();
        let handle = self
            .context()
            .with_current(|driver| driver.ipc_get_event_handle(event))?;
        Ok(IpcEventHandle {
            uuid: self.device().uuid()?.0,
            handle,
        })
    }

    /// Opens an event another process exported ([`Event::ipc_handle`]) in `device`'s primary
    /// context (`cuIpcOpenEventHandle`), destroyed on drop. It behaves as an event of this
    /// process made with `interprocess` and no timing: record it, wait for it, synchronise or
    /// query it. `device` must be the GPU the event belongs to; one handle is opened once at a
    /// time in a process (a second open while the first lives is [`Error::InvalidArgument`]:
    /// share the event instead).
    ///
    /// # Safety
    ///
    /// The exporting process must keep its event alive for as long as this one, or any wait
    /// queued on it, is in use: the driver makes any use after the exporter destroyed it
    /// undefined behaviour.
    #[doc(alias = "cuIpcOpenEventHandle")]
    pub unsafe fn open_ipc(handle: &IpcEventHandle, device: Device) -> Result<Event> {
        let own = device.uuid()?;
        if own.0 != handle.uuid {
            return Err(Error::InvalidArgument {
                name: "device",
                reason: format!(
                    "the event belongs to GPU {}, and device {} is GPU {own}",
                    Uuid(handle.uuid),
                    device.ordinal()
                ),
            });
        }
        let context = device.primary_context()?;
        let driver = context.driver();
        let event = ipc_registry::open(&handle.handle, || {
            context.with_current(|driver| driver.ipc_open_event_handle(&handle.handle))
        })?;
        let options = EventOptions {
            interprocess: true,
            ..EventOptions::default()
        };
        Ok(Event::new(event, driver, context, options, true))
    }
}

/// An interprocess event, described for another process ([`Event::ipc_handle`]): plain bytes
/// ([`to_bytes`](Self::to_bytes)), opened with [`Event::open_ipc`].
#[doc(alias("CUipcEventHandle", "cuIpcGetEventHandle"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcEventHandle {
    uuid: [u8; 16],
    handle: [u8; 64],
}

impl fmt::Debug for IpcEventHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcEventHandle")
            .field("gpu", &Uuid(self.uuid).to_string())
            .finish_non_exhaustive()
    }
}

/// The magic of an [`IpcEventHandle`]'s bytes.
const EVENT_MAGIC: &[u8; 4] = b"CCEV";

impl IpcEventHandle {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 88;

    /// The GPU the event belongs to.
    pub fn gpu(&self) -> Uuid {
        Uuid(self.uuid)
    }

    /// The handle as bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        Writer::new(EVENT_MAGIC)
            .put(8, &self.uuid)
            .put(24, &self.handle)
            .finish()
    }

    /// A handle from its bytes; bytes that are none are [`Error::InvalidArgument`].
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcEventHandle> {
        let form = Reader::new(bytes, EVENT_MAGIC, Self::BYTES, "interprocess event handle")?;
        Ok(IpcEventHandle {
            uuid: form.field(8),
            handle: form.field(24),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interprocess_event_handle_survives_its_bytes() {
        let handle = IpcEventHandle {
            uuid: [3; 16],
            handle: std::array::from_fn(|i| i as u8 * 3),
        };
        let bytes = handle.to_bytes();
        assert_eq!(&bytes[..4], b"CCEV");
        assert_eq!(IpcEventHandle::from_bytes(&bytes).unwrap(), handle);
        assert_eq!(handle.gpu(), Uuid([3; 16]));
        let err = IpcEventHandle::from_bytes(&bytes[1..]).unwrap_err();
        assert!(
            err.to_string().contains("interprocess event handle"),
            "{err}"
        );
    }
}
