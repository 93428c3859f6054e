//! Memory shared between processes: shareable pools, their buffers, and `cuMemAlloc` memory by
//! the legacy IPC handles.
//!
//! # Pools and their buffers
//!
//! A pool made shareable ([`DeviceMemoryResourceOptions::shareable`], or
//! [`PinnedMemoryPoolOptions::shareable`] with a NUMA node) exports itself as a
//! [`SharedPoolHandle`]: a POSIX file descriptor, a second one for the exporter's record of
//! which exported buffers are still allocated, and a few bytes naming the pool. Another
//! process receives it (a file descriptor crosses processes only as `SCM_RIGHTS` over a Unix
//! socket, or by `pidfd_getfd`: [`SharedPoolHandle::send`] and [`SharedPoolHandle::recv`] do
//! the first) and imports the pool with [`ImportedPool::import`]. Each buffer of the pool
//! exports a [`BufferDescriptor`] (plain bytes, sent any way), which the other process imports
//! with [`ImportedPool::import_buffer`]: a [`Buffer`] over the same memory.
//!
//! ```no_run
//! use std::os::unix::net::UnixStream;
//! use cuda_core::{Allocate, BufferDescriptor, Device, DeviceMemoryResource,
//!                 DeviceMemoryResourceOptions, ImportedPool, SharedPoolHandle, StreamOptions};
//!
//! # fn exporter(socket: &UnixStream) -> cuda_core::Result<()> {
//! // The exporting process.
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default().with_shareable(true))?;
//! let mut buffer = pool.allocate(1 << 20, &stream)?;
//! buffer.fill(7u8, &stream)?;
//! stream.sync()?; // the allocation and the fill are done before the other process looks
//! pool.share()?.send(socket)?;
//! let descriptor = pool.export_buffer(&buffer)?;
//! # let _ = descriptor.to_bytes(); Ok(()) }
//! # fn importer(socket: &UnixStream, bytes: &[u8]) -> cuda_core::Result<()> {
//! // The importing process.
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let pool = ImportedPool::import(device, SharedPoolHandle::recv(socket)?)?;
//! let buffer = pool.import_buffer(&BufferDescriptor::from_bytes(bytes)?, &stream)?;
//! assert!(buffer.to_vec::<u8>(&stream)?.iter().all(|&b| b == 7));
//! # Ok(()) }
//! ```
//!
//! What this process can rely on: an imported buffer's drop (or close) releases this
//! process's mapping of the memory and never frees the exporter's allocation; a buffer the
//! exporter freed before the import is refused (by the exporter's record: the driver would
//! import it); a buffer cannot
//! be imported twice at once in one process (the driver does not count imports of one buffer,
//! so the first release would unmap the second); a descriptor's size is checked against the
//! allocation it names; the imported pool stays alive as long as any of its buffers.
//!
//! What the other process must do, since no library can make it: keep its buffer allocated
//! until every importer has released its import (and the releases, queued in stream order,
//! have completed: synchronise, then tell it), and let the importer use the memory only after
//! the allocation and the writes it should see are done (synchronise before sending the
//! descriptor, or order the importer after an IPC event: see
//! [`EventOptions::interprocess`](crate::EventOptions::interprocess)). Breaking either makes
//! the two processes' work race on the memory, or this process see memory the exporter gave
//! to another allocation: wrong data, never undefined behaviour in this process by itself.
//! Host views of imported host memory ([`Buffer::as_slice`]) stay `unsafe`: the other process
//! may write it at any time.
//!
//! # Legacy IPC
//!
//! [`SyncMemoryResource::export_buffer`](crate::SyncMemoryResource::export_buffer) exports
//! `cuMemAlloc` memory as an [`IpcMemHandle`] (`cuIpcGetMemHandle`), which another process
//! opens with [`IpcMemHandle::open`] (`cuIpcOpenMemHandle`). The driver says freeing the memory
//! while another process has it open is undefined behaviour, so both ends are `unsafe`.
//!
//! [`DeviceMemoryResourceOptions::shareable`]: crate::DeviceMemoryResourceOptions::shareable
//! [`PinnedMemoryPoolOptions::shareable`]: crate::PinnedMemoryPoolOptions::shareable

mod liveness;
#[cfg(feature = "fd-passing")]
mod socket;

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use liveness::{Entry, Liveness};

use super::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::context::Context;
use crate::device::{Device, Uuid};
use crate::driver::{Driver, PointerRange, PoolHandle};
use crate::error::{DriverCode, Error, Result};
use crate::lifetime::Held;
use crate::stream::Stream;

/// The version of every byte format here.
const VERSION: u8 = 1;

/// Checks a byte form's length, magic, version and zero padding (bytes 5 to 7).
pub(crate) fn check_form(
    bytes: &[u8],
    magic: &[u8; 4],
    len: usize,
    what: &'static str,
) -> Result<()> {
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
    Ok(())
}

/// The first eight bytes of a byte form: magic, version, three zeros.
pub(crate) fn form_header(magic: &[u8; 4]) -> [u8; 8] {
    let mut header = [0u8; 8];
    header[..4].copy_from_slice(magic);
    header[4] = VERSION;
    header
}

/// A fixed-size field of a byte form.
pub(crate) fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

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

    fn to_bytes(self) -> [u8; SharedPoolHandle::INFO_BYTES] {
        let mut bytes = [0u8; SharedPoolHandle::INFO_BYTES];
        bytes[..8].copy_from_slice(&form_header(POOL_MAGIC));
        bytes[8..24].copy_from_slice(&self.token);
        bytes[24] = match self.kind {
            SharedKind::Device => 1,
            SharedKind::PinnedHost => 2,
        };
        bytes[28..44].copy_from_slice(&self.uuid);
        bytes[44..48].copy_from_slice(&self.numa.to_le_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Result<PoolIdentity> {
        check_form(
            bytes,
            POOL_MAGIC,
            SharedPoolHandle::INFO_BYTES,
            "shared pool's bytes",
        )?;
        let kind = match bytes[24] {
            1 => SharedKind::Device,
            2 => SharedKind::PinnedHost,
            other => {
                return Err(Error::InvalidArgument {
                    name: "bytes",
                    reason: format!("pool kind {other} is neither device (1) nor pinned host (2)"),
                })
            }
        };
        if bytes[25..28] != [0; 3] {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "a shared pool's reserved bytes 25 to 27 are not zero".to_owned(),
            });
        }
        Ok(PoolIdentity {
            token: field(bytes, 8),
            kind,
            uuid: field(bytes, 28),
            numa: i32::from_le_bytes(field(bytes, 44)),
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
    fd: OwnedFd,
    /// The exporter's record of which exported buffers are still allocated.
    liveness: OwnedFd,
    identity: PoolIdentity,
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
    /// host memory. Find the device of this process that is this GPU with [`Device::uuid`].
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
            fd: super::duplicate_fd(self.fd.as_fd())?,
            liveness: super::duplicate_fd(self.liveness.as_fd())?,
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
    let fd = unsafe { super::adopt_driver_fd(fd) }?;
    exports.exported.store(true, Ordering::Release);
    Ok(SharedPoolHandle {
        fd,
        liveness,
        identity,
    })
}

/// Whether `buffer` was allocated by `resource` (the same value).
pub(crate) fn allocated_by<R>(buffer: &Buffer, resource: &R) -> bool {
    std::ptr::eq(
        Arc::as_ptr(buffer.memory_resource()).cast::<()>(),
        (resource as *const R).cast::<()>(),
    )
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

/// A buffer of a shared pool, described for another process that imported the pool
/// (`cuMemPoolExportPointer`): plain bytes ([`to_bytes`](Self::to_bytes)), sent any way.
#[doc(alias = "cuMemPoolExportPointer")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferDescriptor {
    token: [u8; 16],
    size: u64,
    data: [u8; 64],
    /// Where the exporter records whether the buffer is still allocated.
    live: Entry,
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
        let mut bytes = [0u8; Self::BYTES];
        bytes[..8].copy_from_slice(&form_header(BUFFER_MAGIC));
        bytes[8..24].copy_from_slice(&self.token);
        bytes[24..32].copy_from_slice(&self.size.to_le_bytes());
        bytes[32..96].copy_from_slice(&self.data);
        bytes[96..100].copy_from_slice(&self.live.slot.to_le_bytes());
        bytes[104..].copy_from_slice(&self.live.serial.to_le_bytes());
        bytes
    }

    /// A descriptor from its bytes; bytes that are none are [`Error::InvalidArgument`]. (A
    /// size that does not fit the buffer they name is refused at import.)
    pub fn from_bytes(bytes: &[u8]) -> Result<BufferDescriptor> {
        check_form(bytes, BUFFER_MAGIC, Self::BYTES, "buffer descriptor")?;
        if bytes[100..104] != [0; 4] {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "a buffer descriptor's reserved bytes 100 to 103 are not zero".to_owned(),
            });
        }
        Ok(BufferDescriptor {
            token: field(bytes, 8),
            size: u64::from_le_bytes(field(bytes, 24)),
            data: field(bytes, 32),
            live: Entry {
                slot: u32::from_le_bytes(field(bytes, 96)),
                serial: u64::from_le_bytes(field(bytes, 104)),
            },
        })
    }
}

/// One import of a buffer into this process.
struct Import {
    key: [u8; 64],
    /// Set once released: the stream its `cuMemFreeAsync` was queued on. Until that free has
    /// completed the same memory must not be imported again (the release would unmap it).
    released_on: Option<Stream>,
}

/// The imports of one pool: by export data and by address.
#[derive(Default)]
struct Imports {
    by_key: HashMap<[u8; 64], u64>,
    by_ptr: HashMap<u64, Import>,
    released: usize,
}

/// Releases kept past which completed ones are looked for and forgotten.
const RELEASES_KEPT: usize = 64;

impl Imports {
    fn forget(&mut self, ptr: u64) {
        if let Some(import) = self.by_ptr.remove(&ptr) {
            self.by_key.remove(&import.key);
            if import.released_on.is_some() {
                self.released -= 1;
            }
        }
    }

    /// Waits for the release of the import at `ptr` to complete, and forgets it.
    fn finish_release(&mut self, ptr: u64) -> Result<()> {
        if let Some(stream) = self
            .by_ptr
            .get(&ptr)
            .and_then(|import| import.released_on.clone())
        {
            stream.sync_for_host()?;
        }
        self.forget(ptr);
        Ok(())
    }

    /// Forgets the releases that have completed, once there are many.
    fn prune(&mut self) {
        if self.released <= RELEASES_KEPT {
            return;
        }
        let done: Vec<u64> = self
            .by_ptr
            .iter()
            .filter(|(_, import)| {
                import
                    .released_on
                    .as_ref()
                    .is_some_and(|stream| stream.is_done().unwrap_or(false))
            })
            .map(|(&ptr, _)| ptr)
            .collect();
        for ptr in done {
            self.forget(ptr);
        }
    }
}

/// A pool this process imported (its name, its handle, and the import while it lives), or a
/// shareable pool it made itself (`own`: its handle only).
struct Registered {
    token: [u8; 16],
    pool: PoolHandle,
    import: Weak<ImportedPool>,
    own: bool,
}

/// The pools this process imported, for [`ImportedPool::import`]: one import per pool; and
/// the shareable pools it made, so that an import the driver answers with one of their
/// handles (this process importing its own pool) is refused rather than destroyed twice. An
/// entry leaves only in its pool's drop, after the driver destroyed the pool, so that no new
/// import of the pool meets one half destroyed. Nothing that can drop an `ImportedPool` runs
/// while this is locked (its drop locks it).
static IMPORTED: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// Notes a shareable pool this process made (see [`IMPORTED`]); [`destroy_own`] destroys it.
pub(crate) fn register_own(pool: PoolHandle, identity: PoolIdentity) {
    imported().push(Registered {
        token: identity.token,
        pool,
        import: Weak::new(),
        own: true,
    });
}

/// Whether `pool` is a shareable pool this process made (and has not destroyed).
fn is_own_pool(pool: PoolHandle) -> bool {
    !pool.0.is_null()
        && imported()
            .iter()
            .any(|entry| entry.own && entry.pool == pool)
}

/// Destroys a shareable pool this process made, and forgets it, under the registry's lock.
pub(crate) fn destroy_own(driver: &'static dyn Driver, pool: PoolHandle) -> Result<()> {
    let mut registry = imported();
    let destroyed = driver.mem_pool_destroy(pool);
    registry.retain(|entry| !(entry.own && entry.pool == pool));
    destroyed
}

fn imported() -> MutexGuard<'static, Vec<Registered>> {
    IMPORTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A pool of another process, imported into this one (`cuMemPoolImportFromShareableHandle`):
/// it makes no allocations, it imports the exporter's buffers
/// ([`import_buffer`](Self::import_buffer)). Destroyed (this process's import of it) when the
/// last reference drops, after its buffers, which hold one. See the
/// [module](crate::memory::ipc) for what each process may rely on.
#[doc(alias = "cuMemPoolImportFromShareableHandle")]
pub struct ImportedPool {
    pool: PoolHandle,
    identity: PoolIdentity,
    device: Device,
    driver: &'static dyn Driver,
    context: Context,
    imports: Mutex<Imports>,
    /// The exporter's record of its live buffers.
    liveness: std::fs::File,
}

impl fmt::Debug for ImportedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportedPool")
            .field("device", &self.device.ordinal())
            .field("pool", &self.pool.0)
            .field("shared", &self.identity)
            .finish()
    }
}

impl Drop for ImportedPool {
    fn drop(&mut self) {
        // Under the registry's lock, so that no import of the same pool meets this one half
        // destroyed.
        let mut registry = imported();
        if let Err(e) = self.driver.mem_pool_destroy(self.pool) {
            log::error!(
                "destroying an imported memory pool of device {}: {e}",
                self.device.ordinal()
            );
        }
        registry.retain(|entry| entry.own || entry.pool != self.pool);
    }
}

impl ImportedPool {
    /// Imports a pool another process shared, using it through `device`, which must be the GPU
    /// that holds a device pool's memory (a pinned pool's memory can be used through any).
    /// The file descriptor is closed once the driver has imported the pool. A pool this
    /// process has imported already, and not dropped, is the same `ImportedPool` again.
    ///
    /// A pool of another GPU than `device`, or of a GPU this process does not see, is
    /// [`Error::InvalidArgument`].
    #[doc(alias = "cuMemPoolImportFromShareableHandle")]
    pub fn import(device: Device, handle: SharedPoolHandle) -> Result<Arc<ImportedPool>> {
        let identity = handle.identity();
        if identity.kind == SharedKind::Device {
            let own = device.uuid()?;
            if own.0 != identity.uuid {
                let seen = Device::all()?
                    .into_iter()
                    .find(|d| d.uuid().is_ok_and(|u| u.0 == identity.uuid));
                return Err(Error::InvalidArgument {
                    name: "device",
                    reason: match seen {
                        Some(other) => format!(
                            "the pool holds memory of GPU {} (device {} here), and device {} is \
                             GPU {own}: import it through device {}",
                            Uuid(identity.uuid),
                            other.ordinal(),
                            device.ordinal(),
                            other.ordinal()
                        ),
                        None => format!(
                            "the pool holds memory of GPU {}, which this process does not see \
                             (is it hidden by CUDA_VISIBLE_DEVICES?); device {} is GPU {own}",
                            Uuid(identity.uuid),
                            device.ordinal()
                        ),
                    },
                });
            }
        }
        let context = device.primary_context()?;
        let mut registry = loop {
            let registry = imported();
            let Some(entry) = registry
                .iter()
                .find(|e| !e.own && e.token == identity.token)
            else {
                break registry;
            };
            match entry.import.upgrade() {
                Some(existing) => {
                    drop(registry);
                    if existing.device != device {
                        return Err(Error::InvalidArgument {
                            name: "device",
                            reason: format!(
                                "this process imported the pool through device {} already; use \
                                 that import",
                                existing.device.ordinal()
                            ),
                        });
                    }
                    return Ok(existing);
                }
                // Being dropped on another thread: its entry leaves once the driver has
                // destroyed it.
                None => {
                    drop(registry);
                    std::thread::yield_now();
                }
            }
        };
        let driver = context.driver();
        // The record's descriptor stays with the import; the pool's is closed once imported.
        let SharedPoolHandle {
            fd: pool_fd,
            liveness,
            ..
        } = handle;
        let fd = pool_fd.as_raw_fd();
        let pool = context.with_current(|driver| driver.ipc_pool_import_fd(fd))?;
        drop(pool_fd);
        if let Some(entry) = registry.iter().find(|entry| entry.pool == pool) {
            // The driver gave back a pool this process holds (its own, or one imported under
            // another name): that one's owner destroys it, not this call.
            return Err(Error::InvalidArgument {
                name: "handle",
                reason: if entry.own {
                    "the driver imported it as a pool this process made: use that pool itself"
                        .to_owned()
                } else {
                    "the driver imported it as a pool this process imported already under \
                     another name; import that pool's handle instead"
                        .to_owned()
                },
            });
        }
        if identity.kind == SharedKind::PinnedHost {
            let granted =
                driver
                    .mem_pool_get_access(pool, device.handle())
                    .and_then(|rw| match rw {
                        true => Ok(()),
                        false => driver.mem_pool_set_access(pool, device.handle(), true),
                    });
            if let Err(e) = granted {
                if let Err(destroy) = driver.mem_pool_destroy(pool) {
                    log::error!("destroying an imported memory pool: {destroy}");
                }
                return Err(e);
            }
        }
        let imported = Arc::new(ImportedPool {
            pool,
            identity,
            device,
            driver,
            context,
            imports: Mutex::new(Imports::default()),
            liveness: liveness.into(),
        });
        registry.push(Registered {
            token: identity.token,
            pool,
            import: Arc::downgrade(&imported),
            own: false,
        });
        drop(registry);
        Ok(imported)
    }

    /// Imports a buffer of the pool (`cuMemPoolImportPointer`), freed (this process's import
    /// of it: never the exporter's memory) on `stream` when dropped. `stream` must be of the
    /// pool's device.
    ///
    /// Refused with [`Error::InvalidArgument`]: a descriptor of another pool; a buffer its
    /// exporter freed; a buffer this process has imported and not released (share that
    /// [`Buffer`] instead); a size larger than the allocation the descriptor names; a
    /// descriptor the driver refuses; memory the driver imports as another kind than the
    /// pool's handle named (device memory of another device, or device memory for a pinned
    /// pool: the handle's bytes were not this pool's).
    ///
    /// A buffer its exporter freed is refused by the exporter's record of its live buffers,
    /// which came with the pool's handle: the 580 driver imports a freed buffer, even after
    /// the pool was trimmed. The record is read when the import is made; a buffer the
    /// exporter frees after that stays imported here and may see whatever the exporter
    /// allocates there next. Keep the exporter's buffer until every importer has released it.
    #[doc(alias = "cuMemPoolImportPointer")]
    pub fn import_buffer(
        self: &Arc<Self>,
        descriptor: &BufferDescriptor,
        stream: &Stream,
    ) -> Result<Buffer> {
        if descriptor.token != self.identity.token {
            return Err(Error::InvalidArgument {
                name: "descriptor",
                reason: "it describes a buffer of another pool than this one".to_owned(),
            });
        }
        if !liveness::is_live(&self.liveness, descriptor.live)? {
            return Err(Error::InvalidArgument {
                name: "descriptor",
                reason: "the exporting process freed the buffer (its record of exported \
                         buffers says so; the driver would import the memory anyway)"
                    .to_owned(),
            });
        }
        let size = descriptor.size();
        check_request(size, stream, Some(self.device))?;
        let mut imports = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&ptr) = imports.by_key.get(&descriptor.data) {
            if imports
                .by_ptr
                .get(&ptr)
                .is_some_and(|i| i.released_on.is_none())
            {
                return Err(Error::InvalidArgument {
                    name: "descriptor",
                    reason: "this process has imported that buffer already, and not released \
                             it: share the Buffer it has (in an Arc, say) instead of importing \
                             it twice"
                        .to_owned(),
                });
            }
            imports.finish_release(ptr)?;
        }
        imports.prune();
        let (mut ptr, mut range) = self.import_pointer(&descriptor.data)?;
        if imports.by_ptr.contains_key(&ptr) {
            if imports
                .by_ptr
                .get(&ptr)
                .is_some_and(|i| i.released_on.is_none())
            {
                // The same memory under other export data: the import that holds it owns it.
                return Err(Error::InvalidArgument {
                    name: "descriptor",
                    reason: "this process has imported the same memory already, by another \
                             descriptor; share the Buffer it has instead"
                        .to_owned(),
                });
            }
            // The driver handed back memory whose release is still queued: once that release
            // has run, import afresh.
            imports.finish_release(ptr)?;
            (ptr, range) = self.import_pointer(&descriptor.data)?;
        }
        if range.as_ref().is_ok_and(|range| is_own_pool(range.pool)) {
            // The driver answered with an allocation of a pool this process made (it imported
            // its own pool): releasing it would free the exporter's memory, so nothing is.
            return Err(Error::InvalidArgument {
                name: "descriptor",
                reason: "the driver imported it as an allocation of a pool this process made: \
                         use that pool's buffer itself"
                    .to_owned(),
            });
        }
        let checked = range.and_then(|range| self.check_import(ptr, descriptor.size, range));
        imports.by_key.insert(descriptor.data, ptr);
        imports.by_ptr.insert(
            ptr,
            Import {
                key: descriptor.data,
                released_on: None,
            },
        );
        if let Err(e) = checked {
            // Released at once, as a drop would.
            match stream.call(|driver, handle| driver.mem_free_async(ptr, handle)) {
                Ok(()) => {
                    if let Some(import) = imports.by_ptr.get_mut(&ptr) {
                        import.released_on = Some(stream.clone());
                        imports.released += 1;
                    }
                }
                Err(free) => log::error!("releasing a refused import at {ptr:#x}: {free}"),
            }
            return Err(e);
        }
        drop(imports);
        let resource = Held::counted(Arc::clone(self) as Arc<dyn MemoryResource>);
        Ok(Buffer::new(ptr, size, resource, stream.clone()))
    }

    /// Checks an import at `ptr` of `size` bytes against what the driver says of its memory:
    /// the size fits the allocation, and the memory is of the kind (and, device memory, of
    /// the device) the pool's handle named. The handle's bytes came from another process:
    /// a buffer that says pinned host memory is read by the host, and one that says device
    /// memory of this device is used by its kernels.
    fn check_import(&self, ptr: u64, size: u64, range: PointerRange) -> Result<()> {
        // For an import of pinned host memory the 580 driver gives the range's size but a
        // start of 0: an imported allocation starts at the import, so that is the start.
        let start = if range.start == 0 { ptr } else { range.start };
        let end = start.saturating_add(range.bytes as u64);
        if ptr < start || ptr.saturating_add(size) > end {
            return Err(Error::InvalidArgument {
                name: "descriptor",
                reason: format!(
                    "its size, {size} bytes, exceeds the allocation it names ({} bytes from \
                     {:#x}, the import at {ptr:#x})",
                    range.bytes, range.start
                ),
            });
        }
        let device_memory = range.memory_type == PointerRange::DEVICE_MEMORY;
        let (named, as_named) = match self.identity.kind {
            SharedKind::Device => (
                format!("device memory of device {}", self.device.ordinal()),
                device_memory && usize::try_from(range.device_ordinal) == Ok(self.device.ordinal()),
            ),
            SharedKind::PinnedHost => ("pinned host memory".to_owned(), !device_memory),
        };
        if as_named {
            return Ok(());
        }
        let found = if device_memory {
            format!("device memory of device {}", range.device_ordinal)
        } else {
            format!("memory of type {} (CUmemorytype)", range.memory_type)
        };
        Err(Error::InvalidArgument {
            name: "self",
            reason: format!(
                "the pool's handle named {named}, and the driver imported this buffer as \
                 {found}: the handle's bytes are not this pool's"
            ),
        })
    }

    /// `cuMemPoolImportPointer`, with the driver's refusal named, and the extent and kind of
    /// the allocation imported (`cuPointerGetAttributes`), in one visit of the context.
    fn import_pointer(&self, data: &[u8; 64]) -> Result<(u64, Result<PointerRange>)> {
        self.context
            .with_current(|driver| {
                let ptr = driver.ipc_pool_import_pointer(self.pool, data)?;
                Ok((ptr, driver.ipc_pointer_range(ptr)))
            })
            .map_err(|e| match e.driver_code() {
                Some(
                    DriverCode::INVALID_VALUE | DriverCode::NOT_FOUND | DriverCode::INVALID_HANDLE,
                ) => Error::InvalidArgument {
                    name: "descriptor",
                    reason: format!(
                        "the driver refused it ({e}): the exporting process may have freed the \
                         buffer, or it is of another pool"
                    ),
                },
                _ => e,
            })
    }

    /// How many buffers of the pool this process holds imported now.
    pub fn imported_buffers(&self) -> usize {
        let imports = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        imports.by_ptr.len() - imports.released
    }

    /// The device this process uses the pool through.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether the pool holds pinned host memory (else device memory).
    pub fn is_host_memory(&self) -> bool {
        self.identity.kind == SharedKind::PinnedHost
    }

    /// The raw `CUmemoryPool` of this process's import.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.pool.0
    }
}

// SAFETY: it allocates nothing (`allocate_raw` refuses); each of its buffers is an import the
// driver made for this process, checked against the allocation's extent, released only
// through `deallocate` (in order on its stream), and never imported twice at once; the
// answers are the memory kind's.
unsafe impl MemoryResource for ImportedPool {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "an imported pool cannot allocate: allocate in the exporting process, and \
                     import its buffers with ImportedPool::import_buffer"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        let mut imports = self.imports.lock().unwrap_or_else(|e| e.into_inner());
        stream.call(|driver, handle| driver.mem_free_async(ptr.0, handle))?;
        if let Some(import) = imports.by_ptr.get_mut(&ptr.0) {
            if import.released_on.is_none() {
                import.released_on = Some(stream.clone());
                imports.released += 1;
            }
        }
        Ok(())
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        self.identity.kind == SharedKind::PinnedHost
    }

    fn device(&self) -> Option<Device> {
        match self.identity.kind {
            SharedKind::Device => Some(self.device),
            SharedKind::PinnedHost => None,
        }
    }

    /// The device it was imported through only: an imported pool's memory is accessible
    /// from no other device of this process (the import grants a pinned pool's access to
    /// that device alone, and a device pool's memory is its own device's).
    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        Ok(device == self.device)
    }
}

/// `cuMemAlloc` memory of another process, described for this one (`cuIpcGetMemHandle`):
/// plain bytes ([`to_bytes`](Self::to_bytes)), opened with [`open`](Self::open).
#[doc(alias("CUipcMemHandle", "cuIpcGetMemHandle"))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpcMemHandle {
    uuid: [u8; 16],
    size: u64,
    handle: [u8; 64],
}

impl fmt::Debug for IpcMemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IpcMemHandle")
            .field("gpu", &Uuid(self.uuid).to_string())
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// The magic of an [`IpcMemHandle`]'s bytes.
const MEM_MAGIC: &[u8; 4] = b"CCIM";

impl IpcMemHandle {
    /// The length of [`to_bytes`](Self::to_bytes).
    pub const BYTES: usize = 96;

    pub(crate) fn new(uuid: Uuid, size: usize, handle: [u8; 64]) -> IpcMemHandle {
        IpcMemHandle {
            uuid: uuid.0,
            size: size as u64,
            handle,
        }
    }

    /// The size of the memory, in bytes.
    pub fn size(&self) -> usize {
        usize::try_from(self.size).unwrap_or(usize::MAX)
    }

    /// The GPU that holds the memory.
    pub fn gpu(&self) -> Uuid {
        Uuid(self.uuid)
    }

    /// The handle as bytes.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut bytes = [0u8; Self::BYTES];
        bytes[..8].copy_from_slice(&form_header(MEM_MAGIC));
        bytes[8..24].copy_from_slice(&self.uuid);
        bytes[24..32].copy_from_slice(&self.size.to_le_bytes());
        bytes[32..].copy_from_slice(&self.handle);
        bytes
    }

    /// A handle from its bytes; bytes that are none are [`Error::InvalidArgument`].
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcMemHandle> {
        check_form(bytes, MEM_MAGIC, Self::BYTES, "legacy IPC memory handle")?;
        Ok(IpcMemHandle {
            uuid: field(bytes, 8),
            size: u64::from_le_bytes(field(bytes, 24)),
            handle: field(bytes, 32),
        })
    }

    /// Opens the memory in this process (`cuIpcOpenMemHandle`), in the primary context of
    /// `stream`'s device, which must be the GPU that holds it: a [`Buffer`] over it, closed
    /// (`cuIpcCloseMemHandle`, after the work queued on `stream`) when dropped. The driver
    /// counts opens of one handle in a process: each buffer closes its own. A size larger than
    /// the allocation is [`Error::InvalidArgument`].
    ///
    /// # Safety
    ///
    /// The exporting process must keep the memory allocated until every process that opened
    /// it has closed it: the driver makes freeing it first undefined behaviour.
    #[doc(alias = "cuIpcOpenMemHandle")]
    pub unsafe fn open(&self, stream: &Stream) -> Result<Buffer> {
        let device = stream.device();
        let own = device.uuid()?;
        if own.0 != self.uuid {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "the memory is on GPU {}, and the stream's device {} is GPU {own}; open it \
                     with a stream of the GPU that holds it",
                    Uuid(self.uuid),
                    device.ordinal()
                ),
            });
        }
        check_request(self.size(), stream, None)?;
        let context = device.primary_context()?;
        let ptr = context.with_current(|driver| driver.ipc_open_mem_handle(&self.handle))?;
        let checked = context
            .with_current(|driver| driver.ipc_pointer_range(ptr))
            .and_then(|PointerRange { start, bytes, .. }| {
                if ptr >= start
                    && ptr.saturating_add(self.size) <= start.saturating_add(bytes as u64)
                {
                    Ok(())
                } else {
                    Err(Error::InvalidArgument {
                        name: "self",
                        reason: format!(
                            "its size, {} bytes, exceeds the allocation it names ({bytes} bytes)",
                            self.size
                        ),
                    })
                }
            });
        if let Err(e) = checked {
            if let Err(close) = context.with_current(|driver| driver.ipc_close_mem_handle(ptr)) {
                log::error!("closing a refused IPC memory handle: {close}");
            }
            return Err(e);
        }
        let resource: Arc<dyn MemoryResource> = Arc::new(OpenedIpcMemory { context });
        Ok(Buffer::new(
            ptr,
            self.size(),
            Held::counted(resource),
            stream.clone(),
        ))
    }
}

impl crate::SyncMemoryResource {
    /// Exports `buffer`, one of this resource's (`cuMemAlloc` memory), for another process
    /// (`cuIpcGetMemHandle`), which opens it with [`IpcMemHandle::open`]. A buffer of another
    /// resource is [`Error::InvalidArgument`].
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions, SyncMemoryResource};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let memory = SyncMemoryResource::new(device)?;
    /// let buffer = memory.allocate(4096, &stream)?;
    /// // SAFETY: `buffer` lives until the other process says it closed its mapping.
    /// let bytes = unsafe { memory.export_buffer(&buffer) }?.to_bytes();
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// `buffer` must stay allocated (not dropped or closed) until every process that opened
    /// the handle has closed it: the driver makes freeing it first undefined behaviour.
    #[doc(alias = "cuIpcGetMemHandle")]
    pub unsafe fn export_buffer(&self, buffer: &Buffer) -> Result<IpcMemHandle> {
        if !allocated_by(buffer, self) {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "it was allocated by {:?}, not by this resource",
                    buffer.memory_resource()
                ),
            });
        }
        let Some(device) = self.device() else {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the resource has no device".to_owned(),
            });
        };
        let handle = device
            .primary_context()?
            .with_current(|driver| driver.ipc_get_mem_handle(buffer.ptr().0))?;
        Ok(IpcMemHandle::new(device.uuid()?, buffer.size(), handle))
    }
}

/// The resource of a buffer opened from an [`IpcMemHandle`]: it closes, never allocates.
struct OpenedIpcMemory {
    context: Context,
}

impl fmt::Debug for OpenedIpcMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OpenedIpcMemory(device {})",
            self.context.device().ordinal()
        )
    }
}

// SAFETY: it allocates nothing; its one buffer is the driver's mapping for this process,
// checked against the allocation's extent, closed once, after the work queued on its stream
// (the exporter keeping it allocated is `IpcMemHandle::open`'s contract).
unsafe impl MemoryResource for OpenedIpcMemory {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "memory opened from an IPC handle is another process's; it allocates \
                     nothing"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        stream.sync_for_host()?;
        self.context.with_current(|driver| {
            crate::stream::relaxed(driver, || driver.ipc_close_mem_handle(ptr.0))
        })
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.context.device())
    }
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

    #[test]
    fn a_legacy_handle_survives_its_bytes() {
        let handle = IpcMemHandle::new(Uuid([9; 16]), 4096, std::array::from_fn(|i| 200 - i as u8));
        let back = IpcMemHandle::from_bytes(&handle.to_bytes()).unwrap();
        assert_eq!(back, handle);
        assert_eq!(back.size(), 4096);
        assert_eq!(back.gpu(), Uuid([9; 16]));
        let mut bad = handle.to_bytes();
        bad[4] = 0;
        assert!(IpcMemHandle::from_bytes(&bad)
            .unwrap_err()
            .to_string()
            .contains("version 0"));
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
