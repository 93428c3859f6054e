//! [`SharedPoolHandle::send`] and [`SharedPoolHandle::recv`]: a pool's two file descriptors
//! (the pool's, and the exporter's record of its live buffers) and its bytes as one message
//! over a Unix socket, the descriptors as `SCM_RIGHTS` ancillary data (through `rustix`, which
//! keeps the control-message handling safe).

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketType,
};

use super::pool::SharedPoolHandle;
use crate::error::{Cause, Error, Result};

fn socket_error(operation: &'static str, source: std::io::Error) -> Error {
    Error::Socket {
        operation,
        source: Cause::new(source),
    }
}

fn errno(operation: &'static str) -> impl FnOnce(Errno) -> Error {
    move |e| socket_error(operation, e.into())
}

/// The other end closed (or sent too little) before a whole message came.
fn short(operation: &'static str, what: String) -> Error {
    socket_error(
        operation,
        std::io::Error::new(std::io::ErrorKind::UnexpectedEof, what),
    )
}

impl SharedPoolHandle {
    /// Sends the handle over a connected Unix socket (a `UnixStream`, or a `UnixDatagram` or
    /// seq-packet socket that is connected): its bytes, with a copy of its file descriptor as
    /// `SCM_RIGHTS` ancillary data (the pool's, then the record of its live buffers). The handle stays usable here: send it to as many
    /// processes as need it. The other end receives it with [`recv`](Self::recv).
    ///
    /// ```no_run
    /// use std::os::unix::net::UnixStream;
    /// use cuda_core::{Device, DeviceMemoryResource, DeviceMemoryResourceOptions, ipc::{ImportedPool, SharedPoolHandle}};
    ///
    /// let (here, there) = UnixStream::pair().expect("a socket pair");
    /// let device = Device::new(0)?;
    /// let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default().with_shareable(true))?;
    /// pool.share()?.send(&here)?;
    /// // In the other process (here the same one, for the example's sake):
    /// let received = SharedPoolHandle::recv(&there)?;
    /// assert_eq!(received.gpu(), Some(device.uuid()?));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "fd-passing")))]
    #[doc(alias("sendmsg", "SCM_RIGHTS"))]
    pub fn send(&self, socket: impl AsFd) -> Result<()> {
        let bytes = self.identity().to_bytes();
        send_with_fds(socket, &bytes, &[self.as_fd(), self.liveness_fd()])
    }

    /// Receives a handle sent with [`send`](Self::send) from a connected Unix socket,
    /// blocking until it comes; the file descriptors arrive close-on-exec. A message without
    /// the pool's two file descriptors, with more, cut short (on a datagram or seq-packet socket: a
    /// message shorter or longer than a pool's), or whose bytes are no pool's is an error (any
    /// descriptors that came with it are closed).
    #[cfg_attr(docsrs, doc(cfg(feature = "fd-passing")))]
    #[doc(alias("recvmsg", "SCM_RIGHTS"))]
    pub fn recv(socket: impl AsFd) -> Result<SharedPoolHandle> {
        let mut bytes = [0u8; SharedPoolHandle::INFO_BYTES];
        let received = recv_with_fds(
            socket,
            &mut bytes,
            "a shared pool",
            "SharedPoolHandle::send",
        )?;
        let count = received.len();
        let mut fds = received.into_iter();
        match (fds.next(), fds.next(), count) {
            (Some(pool), Some(liveness), 2) => SharedPoolHandle::from_parts(pool, liveness, &bytes),
            (_, _, n) => Err(Error::InvalidArgument {
                name: "socket",
                reason: format!(
                    "the message carried {n} file descriptor{}, where a shared pool has two",
                    if n == 1 { "" } else { "s" }
                ),
            }),
        }
    }
}

/// Sends `bytes` over a connected Unix socket with `fds` as `SCM_RIGHTS` ancillary data (the
/// first part of the bytes with them, the rest after if the socket took less).
pub(crate) fn send_with_fds(socket: impl AsFd, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(socket_error(
            "sendmsg",
            std::io::Error::other("no room for the file descriptors' control message"),
        ));
    }
    let mut sent = loop {
        match rustix::net::sendmsg(
            &socket,
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Err(Errno::INTR) => continue,
            other => break other.map_err(errno("sendmsg"))?,
        }
    };
    while sent < bytes.len() {
        match rustix::net::send(&socket, &bytes[sent..], SendFlags::NOSIGNAL) {
            Err(Errno::INTR) => continue,
            Ok(0) => return Err(short("send", "the socket took no more bytes".to_owned())),
            Ok(n) => sent += n,
            Err(e) => return Err(errno("send")(e)),
        }
    }
    Ok(())
}

/// Receives a message of exactly `bytes.len()` bytes, `what` (sent by `sender`, through
/// [`send_with_fds`]), and its file descriptors (close-on-exec, at most three, at least one),
/// blocking until it comes; the caller checks their count. A message without descriptors,
/// with more than three, or cut short (on a datagram or seq-packet socket: shorter or longer
/// than `bytes`) is an error, and the descriptors that came with it are closed.
pub(crate) fn recv_with_fds(
    socket: impl AsFd,
    bytes: &mut [u8],
    what: &'static str,
    sender: &'static str,
) -> Result<Vec<OwnedFd>> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let message = loop {
        match rustix::net::recvmsg(
            &socket,
            &mut [IoSliceMut::new(bytes)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(Errno::INTR) => continue,
            other => break other.map_err(errno("recvmsg"))?,
        }
    };
    let mut received: Vec<OwnedFd> = Vec::new();
    for ancillary in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = ancillary {
            received.extend(fds);
        }
    }
    if message.flags.contains(ReturnFlags::TRUNC) {
        return Err(Error::InvalidArgument {
            name: "socket",
            reason: format!(
                "the message was longer than {what}'s {} bytes: was it sent with {sender}?",
                bytes.len()
            ),
        });
    }
    if message.bytes < bytes.len()
        && rustix::net::sockopt::socket_type(&socket).map_err(errno("getsockopt"))?
            != SocketType::STREAM
    {
        // A datagram or sequenced packet is one whole message: the rest of a short one is
        // not in the next (reading on would take another message's bytes).
        return Err(short(
            "recvmsg",
            format!(
                "a message of {} bytes, where {what} has {}",
                message.bytes,
                bytes.len()
            ),
        ));
    }
    if message.bytes == 0 {
        return Err(short(
            "recvmsg",
            format!("the socket closed before {what} came"),
        ));
    }
    if message.flags.contains(ReturnFlags::CTRUNC) {
        return Err(short(
            "recvmsg",
            "the message's file descriptors were cut short (more came than three)".to_owned(),
        ));
    }
    let mut got = message.bytes;
    while got < bytes.len() {
        match rustix::net::recv(&socket, &mut bytes[got..], RecvFlags::empty()) {
            Err(Errno::INTR) => continue,
            Ok((0, _)) => {
                return Err(short(
                    "recv",
                    format!(
                        "the socket closed after {got} of {what}'s {} bytes",
                        bytes.len()
                    ),
                ))
            }
            Ok((n, _)) => got += n,
            Err(e) => return Err(errno("recv")(e)),
        }
    }
    if received.is_empty() {
        return Err(Error::InvalidArgument {
            name: "socket",
            reason: format!("the message carried no file descriptor: was it sent with {sender}?"),
        });
    }
    Ok(received)
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use super::*;
    use crate::ipc::pool::{PoolIdentity, SharedKind};

    fn handle_of(file: std::fs::File) -> SharedPoolHandle {
        let identity = PoolIdentity {
            token: [5; 16],
            kind: SharedKind::PinnedHost,
            uuid: [0; 16],
            numa: 1,
        };
        let info = SharedPoolHandle {
            fd: tempfile::tempfile().unwrap().into(),
            liveness: tempfile::tempfile().unwrap().into(),
            identity,
        }
        .into_parts()
        .info;
        SharedPoolHandle::from_parts(file.into(), tempfile::tempfile().unwrap().into(), &info)
            .unwrap()
    }

    /// The received descriptor is a new one for the same open file: what one writes through
    /// it, the other reads.
    #[test]
    fn a_handle_crosses_a_socket_with_its_file_descriptor() {
        let (here, there) = UnixStream::pair().unwrap();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"pool").unwrap();
        let handle = handle_of(file.try_clone().unwrap());
        handle.send(&here).unwrap();
        // Sending does not consume it: a second process gets its own copy.
        handle.send(&here).unwrap();
        for _ in 0..2 {
            let received = SharedPoolHandle::recv(&there).unwrap();
            assert_eq!(received.identity(), handle.identity());
            assert_eq!(received.numa_node(), Some(1));
            assert_ne!(received.as_fd().as_raw_fd(), handle.as_fd().as_raw_fd());
            let mut same = std::fs::File::from(received.into_parts().pool);
            same.rewind().unwrap();
            let mut text = String::new();
            same.read_to_string(&mut text).unwrap();
            assert_eq!(text, "pool");
        }
        // Close-on-exec, as received.
        handle.send(&here).unwrap();
        let received = SharedPoolHandle::recv(&there).unwrap();
        let flags = rustix::io::fcntl_getfd(received.as_fd()).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
    }

    #[test]
    fn a_message_without_a_descriptor_or_cut_short_is_refused() {
        let (mut here, there) = UnixStream::pair().unwrap();
        // The right bytes, but no descriptor with them.
        let bytes = handle_of(tempfile::tempfile().unwrap())
            .identity()
            .to_bytes();
        here.write_all(&bytes).unwrap();
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "socket", reason } if reason.contains("no file descriptor")),
            "{err}"
        );
        // Half a message, then the end of the stream.
        here.write_all(&bytes[..20]).unwrap();
        drop(here);
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Socket {
                    operation: "recv",
                    ..
                } | Error::Socket {
                    operation: "recvmsg",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("closed"), "{err}");
        // Nothing at all.
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(err.to_string().contains("closed before"), "{err}");
    }

    /// On a datagram socket each message is whole: a short one is refused, not completed
    /// with the next one's bytes, and a long one is refused, not cut to size.
    #[test]
    fn a_datagram_of_the_wrong_length_is_refused_and_the_next_one_kept() {
        use std::os::unix::net::UnixDatagram;

        let (here, there) = UnixDatagram::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        let bytes = handle_of(tempfile::tempfile().unwrap())
            .identity()
            .to_bytes();
        let send_with_fd = |payload: &[u8]| {
            let fds = [file.as_fd()];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
            rustix::net::sendmsg(
                &here,
                &[IoSlice::new(payload)],
                &mut control,
                SendFlags::empty(),
            )
            .unwrap();
        };
        // The pool's bytes in two datagrams: the first is refused alone.
        send_with_fd(&bytes[..20]);
        here.send(&bytes[20..]).unwrap();
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Socket {
                    operation: "recvmsg",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("20 bytes"), "{err}");
        // The second is a message of its own, refused as such.
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(err.to_string().contains("28 bytes"), "{err}");
        // Longer than a pool's.
        let mut long = bytes.to_vec();
        long.extend_from_slice(&[0; 8]);
        send_with_fd(&long);
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "socket", reason } if reason.contains("longer")),
            "{err}"
        );
        // A handle sent whole crosses a datagram socket.
        let handle = handle_of(tempfile::tempfile().unwrap());
        handle.send(&here).unwrap();
        assert_eq!(
            SharedPoolHandle::recv(&there).unwrap().identity(),
            handle.identity()
        );
    }

    /// The descriptors that come with a refused message are closed: none is left open in
    /// this process, whether one came with foreign bytes, two came, or sixteen (more than the
    /// control buffer holds: the kernel closes the rest and says so).
    #[test]
    fn the_descriptors_of_a_refused_message_are_closed() {
        use std::os::unix::fs::MetadataExt;
        let (here, there) = UnixStream::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        let inode = file.metadata().unwrap().ino();
        // This process's descriptors of `file` (other tests' files are other inodes).
        let open_fds = || {
            std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(|entry| std::fs::metadata(entry.ok()?.path()).ok())
                .filter(|meta| meta.ino() == inode)
                .count()
        };
        let bytes = handle_of(tempfile::tempfile().unwrap())
            .identity()
            .to_bytes();
        assert_eq!(open_fds(), 1);
        for (count, payload) in [(2, [1u8; 48]), (1, bytes), (3, bytes), (16, bytes)] {
            let fds = vec![file.as_fd(); count];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(16))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
            rustix::net::sendmsg(
                &here,
                &[IoSlice::new(&payload)],
                &mut control,
                SendFlags::empty(),
            )
            .unwrap();
            let err = SharedPoolHandle::recv(&there).unwrap_err();
            let expected = match count {
                2 => "not a shared pool",
                1 => "1 file descriptor,",
                3 => "3 file descriptors",
                _ => "cut short",
            };
            assert!(err.to_string().contains(expected), "{count}: {err}");
            assert_eq!(open_fds(), 1, "{count} descriptors received: {err}");
        }
    }

    #[test]
    fn one_or_three_descriptors_or_foreign_bytes_are_refused() {
        let (here, there) = UnixStream::pair().unwrap();
        let (a, b) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
        let bytes = handle_of(tempfile::tempfile().unwrap())
            .identity()
            .to_bytes();
        for fds in [vec![a.as_fd()], vec![a.as_fd(), b.as_fd(), a.as_fd()]] {
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
            rustix::net::sendmsg(
                &here,
                &[IoSlice::new(&bytes)],
                &mut control,
                SendFlags::empty(),
            )
            .unwrap();
            let err = SharedPoolHandle::recv(&there).unwrap_err();
            let expected = format!("carried {} file descriptor", fds.len());
            assert!(err.to_string().contains(&expected), "{err}");
        }
        // Two descriptors with bytes that are no pool's.
        let fds = [a.as_fd(), b.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        rustix::net::sendmsg(
            &here,
            &[IoSlice::new(&[1u8; 48])],
            &mut control,
            SendFlags::empty(),
        )
        .unwrap();
        let err = SharedPoolHandle::recv(&there).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { name: "bytes", .. }),
            "{err}"
        );
    }
}
