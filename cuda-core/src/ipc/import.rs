//! The importing side: [`ImportedPool`], a pool of another process imported into this one,
//! and the buffers it imports; with the process-wide registry of the pools this process
//! imported and of the shareable pools it made (it holds the imports themselves, so it lives
//! here rather than in `lifetime`).

use std::collections::HashMap;
use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::buffer::BufferDescriptor;
use super::liveness;
use super::pool::{PoolIdentity, SharedKind, SharedPoolHandle};
use crate::context::Context;
use crate::device::{Device, Uuid};
use crate::driver::{Driver, PointerRange, PoolHandle};
use crate::error::{DriverCode, Error, Result};
use crate::lifetime::Held;
use crate::memory::{check_request, Buffer, DevicePtr, MemoryResource};
use crate::stream::Stream;

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
/// [module](crate::ipc) for what each process may rely on.
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

/// [`ImportedPool::import`]'s first step: a device pool's GPU must be `device` (the message
/// names the device of this process that is that GPU, if one is).
fn check_gpu(device: Device, identity: PoolIdentity) -> Result<()> {
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
    Ok(())
}

/// What [`look_up`] found of a pool in the registry.
enum Found {
    /// This process's live import of the pool, through the device asked for.
    Imported(Arc<ImportedPool>),
    /// No import: the registry, kept locked until the new import is in it.
    Absent(MutexGuard<'static, Vec<Registered>>),
}

/// [`ImportedPool::import`]'s second step: this process's import of the pool named `token`,
/// or the locked registry if it has none. An import being dropped on another thread is waited
/// out; an import through another device than `device` is [`Error::InvalidArgument`].
fn look_up(token: [u8; 16], device: Device) -> Result<Found> {
    loop {
        let registry = imported();
        let Some(entry) = registry.iter().find(|e| !e.own && e.token == token) else {
            return Ok(Found::Absent(registry));
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
                return Ok(Found::Imported(existing));
            }
            // Being dropped on another thread: its entry leaves once the driver has
            // destroyed it.
            None => {
                drop(registry);
                std::thread::yield_now();
            }
        }
    }
}

/// [`ImportedPool::import`]'s third step: the driver's import of the pool's file descriptor
/// (`cuMemPoolImportFromShareableHandle`, in `context`), which is closed once imported, and
/// the descriptor of the exporter's record, which stays with the import. A pool the driver
/// answers with that `registry` holds already is refused, and left to its owner.
fn import_fd(
    context: &Context,
    registry: &[Registered],
    handle: SharedPoolHandle,
) -> Result<(PoolHandle, OwnedFd)> {
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
    Ok((pool, liveness))
}

/// [`ImportedPool::import`]'s last step for a pinned pool: `device` gets read-write access
/// to the imported `pool` unless it has it; on failure the import is destroyed.
fn grant_access(driver: &'static dyn Driver, pool: PoolHandle, device: Device) -> Result<()> {
    let granted = driver
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
    Ok(())
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
        check_gpu(device, identity)?;
        let context = device.primary_context()?;
        let mut registry = match look_up(identity.token, device)? {
            Found::Imported(existing) => return Ok(existing),
            Found::Absent(registry) => registry,
        };
        let driver = context.driver();
        let (pool, liveness) = import_fd(&context, &registry, handle)?;
        if identity.kind == SharedKind::PinnedHost {
            grant_access(driver, pool, device)?;
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
            match stream.queue(|driver, handle| driver.mem_free_async(ptr, handle)) {
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
        stream.queue(|driver, handle| driver.mem_free_async(ptr.0, handle))?;
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
