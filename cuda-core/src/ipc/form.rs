//! The byte forms of what crosses between processes: a shared pool's name
//! ([`SharedPoolHandle`](crate::ipc::SharedPoolHandle)'s bytes), a [`BufferDescriptor`](crate::ipc::BufferDescriptor),
//! a legacy [`IpcMemHandle`](crate::ipc::IpcMemHandle) and an
//! [`IpcEventHandle`](crate::ipc::IpcEventHandle). Each is a fixed number of bytes: a four-byte
//! magic, the format version, three zero bytes, then fields at fixed offsets (integers
//! little-endian). One [`Writer`] makes them and one [`Reader`] checks and reads them.

use crate::error::{Error, Result};

/// The version of every byte format here.
const VERSION: u8 = 1;

/// A byte form of `N` bytes being written: its header first, then each field at its offset;
/// what no field covers stays zero.
pub(crate) struct Writer<const N: usize> {
    bytes: [u8; N],
}

impl<const N: usize> Writer<N> {
    /// A form that starts with `magic`, the version and three zeros.
    pub(crate) fn new(magic: &[u8; 4]) -> Writer<N> {
        let mut bytes = [0u8; N];
        bytes[..4].copy_from_slice(magic);
        bytes[4] = VERSION;
        Writer { bytes }
    }

    /// Writes `field` at byte `at`.
    pub(crate) fn put(mut self, at: usize, field: &[u8]) -> Writer<N> {
        self.bytes[at..at + field.len()].copy_from_slice(field);
        self
    }

    /// The bytes written.
    pub(crate) fn finish(self) -> [u8; N] {
        self.bytes
    }
}

/// The bytes of a byte form, checked: its length, magic, version and zero padding.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Checks `bytes` as a form of `len` bytes that starts with `magic`, this build's version
    /// and three zero bytes (5 to 7); bytes that are none are [`Error::InvalidArgument`],
    /// saying they are not a `what`.
    pub(crate) fn new(
        bytes: &'a [u8],
        magic: &[u8; 4],
        len: usize,
        what: &'static str,
    ) -> Result<Reader<'a>> {
        let bad = |reason: String| Error::InvalidArgument {
            name: "bytes",
            reason: format!("not a {what}: {reason}"),
        };
        if bytes.len() != len {
            return Err(bad(format!("{} bytes, where one has {len}", bytes.len())));
        }
        if &bytes[..4] != magic {
            return Err(bad(format!(
                "it starts with {:02x?}, not {:02x?}",
                &bytes[..4],
                magic
            )));
        }
        if bytes[4] != VERSION {
            return Err(bad(format!(
                "format version {}, where this build reads {VERSION}",
                bytes[4]
            )));
        }
        if bytes[5..8] != [0; 3] {
            return Err(bad("its reserved bytes 5 to 7 are not zero".to_owned()));
        }
        Ok(Reader { bytes })
    }

    /// The fixed-size field at byte `at`.
    pub(crate) fn field<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        out.copy_from_slice(&self.bytes[at..at + N]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_read_back_as_written_and_bad_headers_are_refused() {
        let bytes = Writer::<16>::new(b"TEST")
            .put(8, &[1, 2, 3])
            .put(12, &7u32.to_le_bytes())
            .finish();
        assert_eq!(bytes[..8], [b'T', b'E', b'S', b'T', VERSION, 0, 0, 0]);
        assert_eq!(bytes[11], 0, "a byte no field covers is not zero");
        let form = Reader::new(&bytes, b"TEST", 16, "test form").unwrap();
        assert_eq!(form.field::<3>(8), [1, 2, 3]);
        assert_eq!(u32::from_le_bytes(form.field(12)), 7);
        for (at, value, says) in [
            (0, b'X', "starts with"),
            (4, VERSION + 1, "format version"),
            (6, 1, "reserved bytes 5 to 7"),
        ] {
            let mut bad = bytes;
            bad[at] = value;
            let err = Reader::new(&bad, b"TEST", 16, "test form").err().unwrap();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "bytes", reason }
                    if reason.starts_with("not a test form: ") && reason.contains(says)),
                "byte {at}: {err}"
            );
        }
        let err = Reader::new(&bytes[..15], b"TEST", 16, "test form")
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("15 bytes, where one has 16"),
            "{err}"
        );
    }
}
