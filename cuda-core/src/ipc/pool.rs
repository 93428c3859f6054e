//! The exporting side of a shareable pool: the name that travels with it ([`PoolIdentity`]
//! and its bytes), the handle another process imports ([`SharedPoolHandle`],
//! [`SharedPoolParts`]), and what the pool keeps of its exports ([`Exports`]), with the
//! exports themselves ([`share_pool`], [`export_buffer`]) that the device and pinned pools'
//! `share` and `export_buffer` call.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use super::allocated_by;
use super::buffer::BufferDescriptor;
use super::form::{Reader, Writer};
use super::liveness::{self, Liveness};
use crate::context::Context;
use crate::device::Uuid;
use crate::driver::PoolHandle;
use crate::error::{Error, Result};
use crate::memory::{adopt_driver_fd, duplicate_fd, Buffer};

/// A token that names one shared pool: random (from the standard library's randomly keyed
/// hasher), with the process id, the time and a counter mixed in.
fn new_token() -> [u8; 16] {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut token = [0u8; 16];
    for (half, chunk) in token.chunks_mut(8).enumerate() {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(nanos);
        hasher.write_u64(count);
        hasher.write_usize(half);
        chunk.copy_from_slice(&hasher.finish().to_le_bytes());
    }
    token
}

/// What kind of memory a shared pool holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SharedKind {
    /// Device memory of one GPU.
    Device,
    /// Pinned host memory of one NUMA node.
    PinnedHost,
}

/// What names a shared pool across processes: its token, its kind, and its GPU's UUID (device
/// pools) or NUMA node (pinned pools).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolIdentity {
    pub(crate) token: [u8; 16],
    pub(crate) kind: SharedKind,
    pub(crate) uuid: [u8; 16],
    pub(crate) numa: i32,
}

impl fmt::Debug for PoolIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("PoolIdentity");
        s.field("kind", &self.kind);
        match self.kind {
            SharedKind::Device => s.field("gpu", &Uuid(self.uuid).to_string()),
            SharedKind::PinnedHost => s.field("numa_node", &self.numa),
        };
        s.finish_non_exhaustive()
    }
}

/// The magic of a [`SharedPoolHandle`]'s bytes.
const POOL_MAGIC: &[u8; 4] = b"CCPL";

impl PoolIdentity {
    /// A new device pool's identity.
    pub(crate) fn device(uuid: Uuid) -> PoolIdentity {
        PoolIdentity {
            token: new_token(),
            kind: SharedKind::Device,
            uuid: uuid.0,
            numa: 0,
        }
    }

    /// A new pinned pool's identity.
    pub(crate) fn pinned(numa: i32) -> PoolIdentity {
        PoolIdentity {
            token: new_token(),
            kind: SharedKind::PinnedHost,
            uuid: [0; 16],
            numa,
        }
    }

    pub(super) fn to_bytes(self) -> [u8; SharedPoolHandle::INFO_BYTES] {
        let kind = match self.kind {
            SharedKind::Device => 1,
            SharedKind::PinnedHost => 2,
        };
        Writer::new(POOL_MAGIC)
            .put(8, &self.token)
            .put(24, &[kind])
            .put(28, &self.uuid)
            .put(44, &self.numa.to_le_bytes())
            .finish()
    }

    pub(super) fn from_bytes(bytes: &[u8]) -> Result<PoolIdentity> {
        let form = Reader::new(
            bytes,
            POOL_MAGIC,
            SharedPoolHandle::INFO_BYTES,
            "shared pool's bytes",
        )?;
        let [kind] = form.field(24);
        let kind = match kind {
            1 => SharedKind::Device,
            2 => SharedKind::PinnedHost,
            other => {
                return Err(Error::InvalidArgument {
                    name: "bytes",
                    reason: format!("pool kind {other} is neither device (1) nor pinned host (2)"),
                })
            }
        };
        if form.field::<3>(25) != [0; 3] {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "a shared pool's reserved bytes 25 to 27 are not zero".to_owned(),
            });
        }
        Ok(PoolIdentity {
            token: form.field(8),
            kind,
            uuid: form.field(28),
            numa: i32::from_le_bytes(form.field(44)),
        })
    }
}

/// A shareable pool, exported for another process ([`DeviceMemoryResource::share`]): a POSIX
/// file descriptor (`cuMemPoolExportToShareableHandle`), owned and closed on drop, and the
/// bytes that name the pool. Send it with [`send`](Self::send) over a Unix socket, or take its
/// parts apart ([`into_parts`](Self::into_parts)) to send the descriptor some other way.
///
/// [`DeviceMemoryResource::share`]: crate::DeviceMemoryResource::share
#[doc(alias = "cuMemPoolExportToShareableHandle")]
pub struct SharedPoolHandle {
    pub(super) fd: OwnedFd,
    /// The exporter's record of which exported buffers are still allocated.
    pub(super) liveness: OwnedFd,
    pub(super) identity: PoolIdentity,
}

impl fmt::Debug for SharedPoolHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedPoolHandle")
            .field("fd", &self.fd.as_raw_fd())
            .field("liveness", &self.liveness.as_raw_fd())
            .field("pool", &self.identity)
            .finish()
    }
}

impl SharedPoolHandle {
    /// The length of the bytes that name the pool ([`into_parts`](Self::into_parts)).
    pub const INFO_BYTES: usize = 48;

    /// The pool's file descriptor, the descriptor of the exporter's record of which exported
    /// buffers are still allocated (which lets an importer refuse a freed buffer: the driver
    /// imports one), and the bytes that name the pool: send all three to the other process,
    /// which rebuilds the handle with [`from_parts`](Self::from_parts).
    pub fn into_parts(self) -> SharedPoolParts {
        SharedPoolParts {
            pool: self.fd,
            liveness: self.liveness,
            info: self.identity.to_bytes(),
        }
    }

    /// A handle from the received file descriptors and the bytes sent with them, as
    /// [`into_parts`](Self::into_parts) gave them; bytes that are no shared pool's, or a
    /// record descriptor that is not of a regular file (a pipe or socket, whose reads could
    /// wait for the peer forever), are [`Error::InvalidArgument`].
    pub fn from_parts(pool: OwnedFd, liveness: OwnedFd, info: &[u8]) -> Result<SharedPoolHandle> {
        liveness::check_record(&liveness)?;
        Ok(SharedPoolHandle {
            fd: pool,
            liveness,
            identity: PoolIdentity::from_bytes(info)?,
        })
    }

    /// The GPU whose memory the pool holds, for a pool of device memory; `None` for pinned
    /// host memory. Find the device of this process that is this GPU with
    /// [`Device::uuid`](crate::Device::uuid).
    pub fn gpu(&self) -> Option<Uuid> {
        (self.identity.kind == SharedKind::Device).then_some(Uuid(self.identity.uuid))
    }

    /// The host NUMA node of a pool of pinned host memory; `None` for device memory.
    pub fn numa_node(&self) -> Option<u32> {
        match self.identity.kind {
            SharedKind::PinnedHost => u32::try_from(self.identity.numa).ok(),
            SharedKind::Device => None,
        }
    }

    /// A second handle to the same pool, with duplicates of the file descriptors.
    pub fn try_clone(&self) -> Result<SharedPoolHandle> {
        Ok(SharedPoolHandle {
            fd: duplicate_fd(self.fd.as_fd())?,
            liveness: duplicate_fd(self.liveness.as_fd())?,
            identity: self.identity,
        })
    }

    /// The descriptor of the exporter's record of its live buffers.
    #[cfg(feature = "fd-passing")]
    pub(crate) fn liveness_fd(&self) -> BorrowedFd<'_> {
        self.liveness.as_fd()
    }

    pub(crate) fn identity(&self) -> PoolIdentity {
        self.identity
    }
}

/// A [`SharedPoolHandle`] taken apart ([`SharedPoolHandle::into_parts`]), to send some other
/// way than [`SharedPoolHandle::send`]: both file descriptors and the bytes.
#[derive(Debug)]
pub struct SharedPoolParts {
    /// The pool (`cuMemPoolExportToShareableHandle`).
    pub pool: OwnedFd,
    /// The exporter's record of which exported buffers are still allocated.
    pub liveness: OwnedFd,
    /// The bytes that name the pool.
    pub info: [u8; SharedPoolHandle::INFO_BYTES],
}

impl AsFd for SharedPoolHandle {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// What a shareable pool keeps of its exports: whether it was exported once (see
/// [`export_buffer`]), and its record of the exported buffers still allocated, made at the
/// first export.
#[derive(Default)]
pub(crate) struct Exports {
    exported: AtomicBool,
    liveness: OnceLock<Liveness>,
}

impl Exports {
    fn liveness(&self) -> Result<&Liveness> {
        if let Some(record) = self.liveness.get() {
            return Ok(record);
        }
        let made = Liveness::new()?;
        // Another thread may have made one meanwhile: the first kept is the one.
        let _ = self.liveness.set(made);
        self.liveness.get().ok_or_else(|| Error::InvalidArgument {
            name: "self",
            reason: "the pool's record of exported buffers could not be kept".to_owned(),
        })
    }

    /// Records that the buffer at `ptr` is being freed, before its memory goes back to the
    /// pool: importers refuse its descriptors from now on.
    #[inline]
    pub(crate) fn freeing(&self, ptr: u64) {
        if let Some(record) = self.liveness.get() {
            record.clear(ptr);
        }
    }
}

/// Exports `pool` for another process, and records in `exports` that it was.
pub(crate) fn share_pool(
    context: &Context,
    pool: PoolHandle,
    identity: PoolIdentity,
    exports: &Exports,
) -> Result<SharedPoolHandle> {
    let liveness = exports.liveness()?.fd()?;
    let fd = context.with_current(|driver| driver.ipc_pool_export_fd(pool))?;
    if fd < 0 {
        return Err(Error::InvalidArgument {
            name: "self",
            reason: format!(
                "cuMemPoolExportToShareableHandle succeeded with the file descriptor {fd}"
            ),
        });
    }
    // SAFETY: the driver made this descriptor for the caller, who owns it from here on.
    let fd = unsafe { adopt_driver_fd(fd) }?;
    exports.exported.store(true, Ordering::Release);
    Ok(SharedPoolHandle {
        fd,
        liveness,
        identity,
    })
}

/// The descriptor of `buffer`, which must be `resource`'s, for `pool` of `identity`; the
/// buffer is recorded as live for importers until it is freed.
///
/// The driver refuses `cuMemPoolExportPointer` (`CUDA_ERROR_INVALID_VALUE`, seen on the 580
/// driver) until the pool itself was exported once; a pool never shared yet is exported here
/// first, and its descriptor closed.
pub(crate) fn export_buffer<R>(
    context: &Context,
    resource: &R,
    buffer: &Buffer,
    pool: PoolHandle,
    identity: PoolIdentity,
    exports: &Exports,
) -> Result<BufferDescriptor> {
    if !allocated_by(buffer, resource) {
        return Err(Error::InvalidArgument {
            name: "buffer",
            reason: format!(
                "it was allocated by {:?}, not by this pool",
                buffer.memory_resource()
            ),
        });
    }
    if !exports.exported.load(Ordering::Acquire) {
        drop(share_pool(context, pool, identity, exports)?);
    }
    let data = context.with_current(|driver| driver.ipc_pool_export_pointer(buffer.ptr().0))?;
    let live = exports.liveness()?.mark(buffer.ptr().0)?;
    Ok(BufferDescriptor {
        token: identity.token,
        size: buffer.size() as u64,
        data,
        live,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> PoolIdentity {
        PoolIdentity {
            token: [7; 16],
            kind: SharedKind::Device,
            uuid: [0xab; 16],
            numa: -1,
        }
    }

    #[test]
    fn a_pool_identity_survives_its_bytes_and_bad_bytes_are_refused() {
        let mut id = identity();
        let bytes = id.to_bytes();
        assert_eq!(&bytes[..4], b"CCPL");
        assert_eq!(PoolIdentity::from_bytes(&bytes).unwrap(), id);
        id.kind = SharedKind::PinnedHost;
        id.numa = 3;
        assert_eq!(PoolIdentity::from_bytes(&id.to_bytes()).unwrap(), id);
        for (at, value) in [(0, b'X'), (4, 2), (5, 1), (24, 9), (26, 1)] {
            let mut bad = bytes;
            bad[at] = value;
            let err = PoolIdentity::from_bytes(&bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "bytes", .. }),
                "byte {at}: {err}"
            );
        }
        let err = PoolIdentity::from_bytes(&bytes[..47]).unwrap_err();
        assert!(err.to_string().contains("47 bytes"), "{err}");
    }

    #[test]
    fn tokens_differ_between_pools() {
        let tokens: Vec<[u8; 16]> = (0..64).map(|_| new_token()).collect();
        for (i, a) in tokens.iter().enumerate() {
            assert!(tokens[i + 1..].iter().all(|b| b != a));
            assert_ne!(*a, [0; 16]);
        }
    }

    #[test]
    fn a_shared_pool_handle_is_rebuilt_from_its_parts() {
        let file = tempfile::tempfile().unwrap();
        let handle = SharedPoolHandle {
            fd: OwnedFd::from(file),
            liveness: OwnedFd::from(tempfile::tempfile().unwrap()),
            identity: identity(),
        };
        assert_eq!(handle.gpu(), Some(Uuid([0xab; 16])));
        assert_eq!(handle.numa_node(), None);
        let copy = handle.try_clone().unwrap();
        assert_ne!(copy.as_fd().as_raw_fd(), handle.as_fd().as_raw_fd());
        assert_ne!(copy.liveness.as_raw_fd(), handle.liveness.as_raw_fd());
        let (pool_fd, liveness_fd) = (handle.as_fd().as_raw_fd(), handle.liveness.as_raw_fd());
        let parts = handle.into_parts();
        // Each descriptor comes out in its own place (catches the two swapped).
        assert_eq!(parts.pool.as_raw_fd(), pool_fd);
        assert_eq!(parts.liveness.as_raw_fd(), liveness_fd);
        let back = SharedPoolHandle::from_parts(parts.pool, parts.liveness, &parts.info).unwrap();
        assert_eq!(back.identity(), identity());
        assert!(format!("{back:?}").contains("gpu"));
        let parts = back.into_parts();
        assert!(SharedPoolHandle::from_parts(parts.pool, parts.liveness, &[0; 48]).is_err());
    }
}
