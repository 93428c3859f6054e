//! [`UniqueId`]: what the ranks of a communicator meet by.

use std::fmt;

use crate::driver::nccl::{nccl, UNIQUE_ID_BYTES};
use crate::error::{Error, Result};

/// The id the ranks of a new communicator share (`ncclUniqueId`): one rank makes it
/// ([`UniqueId::new`]), sends its bytes to the others by any means (a socket, a file, the
/// environment), and each passes it to [`Communicator::init_rank`](super::Communicator::init_rank).
///
/// Its bytes hold the network address of the maker's bootstrap listener (NCCL starts one in
/// the process that calls `new`, which must stay alive until every rank has joined), and
/// nothing secret: anyone who can reach that address can join. Bytes that are no id give an
/// error when the communicator is made, or a wait for ranks that never come.
///
/// ```
/// use cuda_core::nccl::UniqueId;
///
/// let bytes = [7u8; UniqueId::BYTES];
/// let id = UniqueId::from_bytes(&bytes)?;
/// assert_eq!(id.as_bytes(), &bytes);
/// assert!(UniqueId::from_bytes(&bytes[..100]).is_err());
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "ncclUniqueId")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct UniqueId([u8; UNIQUE_ID_BYTES]);

impl UniqueId {
    /// The size of an id in bytes (`NCCL_UNIQUE_ID_BYTES`).
    pub const BYTES: usize = UNIQUE_ID_BYTES;

    /// A new id (`ncclGetUniqueId`), made by this process: it starts NCCL's bootstrap
    /// listener here, which the ranks reach while they join.
    #[doc(alias = "ncclGetUniqueId")]
    pub fn new() -> Result<UniqueId> {
        nccl()?.get_unique_id().map(UniqueId)
    }

    /// The id whose bytes are `bytes` (as another rank's [`as_bytes`](UniqueId::as_bytes)
    /// gave them); refused unless they are exactly [`UniqueId::BYTES`] long.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bytes: [u8; UNIQUE_ID_BYTES] =
            bytes.try_into().map_err(|_| Error::InvalidArgument {
                name: "bytes",
                reason: format!(
                    "{} bytes: an NCCL unique id is {UNIQUE_ID_BYTES}",
                    bytes.len()
                ),
            })?;
        Ok(UniqueId(bytes))
    }

    /// The id's bytes, to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.0
    }
}

impl From<[u8; UNIQUE_ID_BYTES]> for UniqueId {
    fn from(bytes: [u8; UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId(bytes)
    }
}

impl fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId(")?;
        for byte in &self.0[..8] {
            write!(f, "{byte:02x}")?;
        }
        write!(f, "...)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_other_lengths_are_refused() {
        let bytes: [u8; 128] = std::array::from_fn(|i| i as u8);
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.as_bytes(), &bytes);
        assert_eq!(UniqueId::from(bytes), id);
        assert_eq!(format!("{id:?}"), "UniqueId(0001020304050607...)");
        for wrong in [0, 127, 129] {
            let e = UniqueId::from_bytes(&vec![0; wrong]).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument { name: "bytes", reason } if reason.starts_with(&format!("{wrong} bytes"))),
                "{e}"
            );
        }
    }
}
