//! Physical memory of virtual memory management shared with another process: a
//! [`PhysicalMemory`]'s file descriptor and what the importer needs with it (its size and GPU),
//! sent over a Unix socket as a pool's handle is.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::form::{Reader, Writer};
use crate::device::{Device, Uuid};
use crate::error::{Error, Result};
use crate::memory::PhysicalMemory;

const MAGIC: &[u8; 4] = b"CCPM";

/// Exported physical memory ([`PhysicalMemory`] made with
/// [`ShareableHandleType::PosixFileDescriptor`](crate::memory::ShareableHandleType)), ready to
/// cross to another process: its file descriptor, its size and its GPU. Send it over a Unix
/// socket with [`send`](SharedPhysicalMemory::send) (feature `fd-passing`), or take it apart
/// with [`into_parts`](SharedPhysicalMemory::into_parts) for another channel; the other
/// process imports it with [`import`](SharedPhysicalMemory::import) and maps it.
///
/// ```no_run
/// # #[cfg(feature = "fd-passing")] {
/// use std::os::unix::net::UnixStream;
/// use cuda_core::ipc::SharedPhysicalMemory;
/// use cuda_core::memory::{PhysicalMemory, PhysicalMemoryOptions, ShareableHandleType};
/// use cuda_core::Device;
///
/// let (here, there) = UnixStream::pair().expect("a socket pair");
/// let device = Device::new(0)?;
/// let options = PhysicalMemoryOptions::default()
///     .with_handle_type(ShareableHandleType::PosixFileDescriptor);
/// let memory = PhysicalMemory::new(device, 2 << 20, &options)?;
/// SharedPhysicalMemory::new(&memory)?.send(&here)?;
/// // In the other process (here the same one, for the example's sake):
/// let received = SharedPhysicalMemory::recv(&there)?;
/// // SAFETY: the size came from this crate's `send` of the memory, in a process we trust.
/// let imported = unsafe { received.import(device) }?;
/// assert_eq!(imported.size(), 2 << 20);
/// # }
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuMemExportToShareableHandle")]
pub struct SharedPhysicalMemory {
    fd: OwnedFd,
    size: u64,
    gpu: Uuid,
}

impl fmt::Debug for SharedPhysicalMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedPhysicalMemory")
            .field("fd", &self.fd.as_raw_fd())
            .field("size", &self.size)
            .field("gpu", &self.gpu)
            .finish()
    }
}

impl AsFd for SharedPhysicalMemory {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl SharedPhysicalMemory {
    /// The length of the bytes sent with the descriptor ([`into_parts`](Self::into_parts)).
    pub const INFO_BYTES: usize = 32;

    /// Exports `memory` (`cuMemExportToShareableHandle`, see
    /// [`PhysicalMemory::export_fd`]) with its size and GPU.
    pub fn new(memory: &PhysicalMemory) -> Result<SharedPhysicalMemory> {
        Ok(SharedPhysicalMemory {
            fd: memory.export_fd()?,
            size: memory.size() as u64,
            gpu: memory.device().uuid()?,
        })
    }

    /// The memory's size in bytes, as the exporter said.
    pub fn size(&self) -> usize {
        self.size as usize
    }

    /// The GPU the memory is on, as the exporter said: find the device of this process that
    /// is this GPU with [`Device::uuid`].
    pub fn gpu(&self) -> Uuid {
        self.gpu
    }

    /// The file descriptor and the bytes that go with it: send both to the other process,
    /// which rebuilds the value with [`from_parts`](Self::from_parts).
    pub fn into_parts(self) -> (OwnedFd, [u8; SharedPhysicalMemory::INFO_BYTES]) {
        let info = self.info();
        (self.fd, info)
    }

    /// The value from a received file descriptor and the bytes sent with it, as
    /// [`into_parts`](Self::into_parts) gave them; bytes that are no shared physical memory's
    /// are [`Error::InvalidArgument`].
    pub fn from_parts(fd: OwnedFd, info: &[u8]) -> Result<SharedPhysicalMemory> {
        let form = Reader::new(
            info,
            MAGIC,
            SharedPhysicalMemory::INFO_BYTES,
            "shared physical memory's bytes",
        )?;
        let size = u64::from_le_bytes(form.field(8));
        if size == 0 {
            return Err(Error::InvalidArgument {
                name: "info",
                reason: "shared physical memory of 0 bytes".to_owned(),
            });
        }
        Ok(SharedPhysicalMemory {
            fd,
            size,
            gpu: Uuid(form.field(16)),
        })
    }

    /// Imports the memory into `device`, which must be its GPU
    /// ([`PhysicalMemory::import_fd`], `cuMemImportFromShareableHandle`); the result maps as
    /// memory made here does.
    ///
    /// # Safety
    ///
    /// The size must be the memory's: sent by [`send`](Self::send) or
    /// [`into_parts`](Self::into_parts) of this crate in a process that is trusted not to
    /// change it (the driver does not report an import's size, and a mapping of more than
    /// there is would reach memory that is not the import's).
    #[doc(alias = "cuMemImportFromShareableHandle")]
    pub unsafe fn import(&self, device: Device) -> Result<Arc<PhysicalMemory>> {
        let own = device.uuid()?;
        if own != self.gpu {
            return Err(Error::InvalidArgument {
                name: "device",
                reason: format!(
                    "the memory is on GPU {}, and device {} is GPU {own}",
                    self.gpu,
                    device.ordinal()
                ),
            });
        }
        // SAFETY: the caller vouches for the size.
        unsafe { PhysicalMemory::import_fd(device, self.fd.as_fd(), self.size()) }
    }

    /// Sends the memory over a connected Unix socket, as
    /// [`SharedPoolHandle::send`](super::SharedPoolHandle::send) sends a pool: its bytes, with a
    /// copy of its file descriptor as `SCM_RIGHTS` ancillary data. It stays usable here.
    #[cfg(feature = "fd-passing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "fd-passing")))]
    #[doc(alias("sendmsg", "SCM_RIGHTS"))]
    pub fn send(&self, socket: impl AsFd) -> Result<()> {
        let (fd, info) = (self.fd.as_fd(), self.info());
        super::socket::send_with_fds(socket, &info, &[fd])
    }

    /// Receives memory sent with [`send`](Self::send) from a connected Unix socket, blocking
    /// until it comes; the descriptor arrives close-on-exec. A message without exactly one
    /// descriptor, cut short, or whose bytes are no shared physical memory's is an error (any
    /// descriptors that came with it are closed).
    #[cfg(feature = "fd-passing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "fd-passing")))]
    #[doc(alias("recvmsg", "SCM_RIGHTS"))]
    pub fn recv(socket: impl AsFd) -> Result<SharedPhysicalMemory> {
        let mut info = [0u8; SharedPhysicalMemory::INFO_BYTES];
        let mut fds = super::socket::recv_with_fds(
            socket,
            &mut info,
            "shared physical memory",
            "SharedPhysicalMemory::send",
        )?;
        match (fds.pop(), fds.len()) {
            (Some(fd), 0) => SharedPhysicalMemory::from_parts(fd, &info),
            (_, more) => Err(Error::InvalidArgument {
                name: "socket",
                reason: format!(
                    "the message carried {} file descriptors, where shared physical memory has \
                     one",
                    more + 1
                ),
            }),
        }
    }

    /// The bytes that go with the descriptor.
    fn info(&self) -> [u8; SharedPhysicalMemory::INFO_BYTES] {
        Writer::<{ SharedPhysicalMemory::INFO_BYTES }>::new(MAGIC)
            .put(8, &self.size.to_le_bytes())
            .put(16, &self.gpu.0)
            .finish()
    }
}

#[cfg(all(test, feature = "fd-passing"))]
mod tests {
    use std::io::{Read, Seek, Write};
    use std::os::unix::net::UnixStream;

    use super::*;

    fn shared(file: std::fs::File, size: u64) -> SharedPhysicalMemory {
        SharedPhysicalMemory {
            fd: file.into(),
            size,
            gpu: Uuid([7; 16]),
        }
    }

    #[test]
    fn shared_memory_crosses_a_socket_with_its_size_gpu_and_descriptor() {
        let (here, there) = UnixStream::pair().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"memory").unwrap();
        let sent = shared(file.try_clone().unwrap(), 2 << 20);
        sent.send(&here).unwrap();
        let received = SharedPhysicalMemory::recv(&there).unwrap();
        // Catches the size or GPU lost or swapped on the way.
        assert_eq!(received.size(), 2 << 20);
        assert_eq!(received.gpu(), Uuid([7; 16]));
        // The same open file: what one wrote, the other reads.
        let mut same = std::fs::File::from(received.into_parts().0);
        same.rewind().unwrap();
        let mut text = String::new();
        same.read_to_string(&mut text).unwrap();
        assert_eq!(text, "memory");
        // Parts round-trip, and a pool's bytes are refused as no physical memory's.
        let (fd, info) = shared(tempfile::tempfile().unwrap(), 4096).into_parts();
        assert_eq!(
            SharedPhysicalMemory::from_parts(fd, &info).unwrap().size(),
            4096
        );
        let mut wrong = info;
        wrong[..4].copy_from_slice(b"CCPL");
        let e = SharedPhysicalMemory::from_parts(tempfile::tempfile().unwrap().into(), &wrong)
            .unwrap_err();
        assert!(e.to_string().contains("shared physical memory"), "{e}");
        let mut zero = info;
        zero[8..16].fill(0);
        assert!(
            SharedPhysicalMemory::from_parts(tempfile::tempfile().unwrap().into(), &zero).is_err()
        );
    }

    #[test]
    fn a_message_with_two_descriptors_or_none_is_refused() {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
        use std::mem::MaybeUninit;
        let (here, there) = UnixStream::pair().unwrap();
        let info = shared(tempfile::tempfile().unwrap(), 4096).info();
        let (a, b) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        let fds = [a.as_fd(), b.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg(
            &here,
            &[std::io::IoSlice::new(&info)],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        let e = SharedPhysicalMemory::recv(&there).unwrap_err();
        // Catches a second descriptor ignored (it would stay open, unowned).
        assert!(e.to_string().contains("2 file descriptors"), "{e}");
        let (mut here, there) = UnixStream::pair().unwrap();
        here.write_all(&info).unwrap();
        let e = SharedPhysicalMemory::recv(&there).unwrap_err();
        assert!(e.to_string().contains("no file descriptor"), "{e}");
    }
}
