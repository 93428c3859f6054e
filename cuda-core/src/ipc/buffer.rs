//! A buffer of a shared pool, described for another process: [`BufferDescriptor`] and its
//! bytes. The exporting pool makes one ([`export_buffer`](super::pool::export_buffer)); the
//! importing process reads it ([`ImportedPool::import_buffer`](crate::ipc::ImportedPool::import_buffer)).

use std::fmt;

use super::form::{Reader, Writer};
use super::liveness::Entry;
use crate::error::{Error, Result};

/// A buffer of a shared pool, described for another process that imported the pool
/// (`cuMemPoolExportPointer`): plain bytes ([`to_bytes`](Self::to_bytes)), sent any way.
#[doc(alias = "cuMemPoolExportPointer")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferDescriptor {
    pub(super) token: [u8; 16],
    pub(super) size: u64,
    pub(super) data: [u8; 64],
    /// Where the exporter records whether the buffer is still allocated.
    pub(super) live: Entry,
}

impl fmt::Debug for BufferDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferDescriptor")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The magic of a [`BufferDescriptor`]'s bytes.
const BUFFER_MAGIC: &[u8; 4] = b"CCBF";

impl BufferDescriptor {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 112;

    /// The buffer's size in bytes.
    pub fn size(&self) -> usize {
        usize::try_from(self.size).unwrap_or(usize::MAX)
    }

    /// The descriptor as bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        Writer::new(BUFFER_MAGIC)
            .put(8, &self.token)
            .put(24, &self.size.to_le_bytes())
            .put(32, &self.data)
            .put(96, &self.live.slot.to_le_bytes())
            .put(104, &self.live.serial.to_le_bytes())
            .finish()
    }

    /// A descriptor from its bytes; bytes that are none are [`Error::InvalidArgument`]. (A
    /// size that does not fit the buffer they name is refused at import.)
    pub fn from_bytes(bytes: &[u8]) -> Result<BufferDescriptor> {
        let form = Reader::new(bytes, BUFFER_MAGIC, Self::BYTES, "buffer descriptor")?;
        if form.field::<4>(100) != [0; 4] {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "a buffer descriptor's reserved bytes 100 to 103 are not zero".to_owned(),
            });
        }
        Ok(BufferDescriptor {
            token: form.field(8),
            size: u64::from_le_bytes(form.field(24)),
            data: form.field(32),
            live: Entry {
                slot: u32::from_le_bytes(form.field(96)),
                serial: u64::from_le_bytes(form.field(104)),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Uuid;
    use crate::ipc::IpcMemHandle;

    #[test]
    fn a_buffer_descriptor_survives_its_bytes_and_bad_bytes_are_refused() {
        let descriptor = BufferDescriptor {
            token: [1; 16],
            size: 3 << 33,
            data: std::array::from_fn(|i| i as u8),
            live: Entry {
                slot: 0x0102_0304,
                serial: 0x0a0b_0c0d_0e0f_1011,
            },
        };
        let bytes = descriptor.to_bytes();
        let back = BufferDescriptor::from_bytes(&bytes).unwrap();
        // Catches a field lost or misplaced in either direction.
        assert_eq!(back, descriptor);
        assert_eq!(back.size(), 3 << 33);
        assert_eq!(&bytes[32..96], &descriptor.data);
        assert_eq!(back.live, descriptor.live);
        // The reserved bytes must be zero.
        let mut reserved = bytes;
        reserved[101] = 1;
        let err = BufferDescriptor::from_bytes(&reserved).unwrap_err();
        assert!(err.to_string().contains("reserved"), "{err}");
        for len in [0, 95, 96, 111, 113] {
            let mut v = bytes.to_vec();
            v.resize(len, 0);
            assert!(BufferDescriptor::from_bytes(&v).is_err(), "{len} bytes");
        }
        // Another form's bytes are not a descriptor.
        let legacy = IpcMemHandle::new(Uuid([2; 16]), 10, [3; 64]).to_bytes();
        let err = BufferDescriptor::from_bytes(&legacy).unwrap_err();
        assert!(err.to_string().contains("buffer descriptor"), "{err}");
    }
}
