//! Sharing between processes: shareable pools and their buffers, `cuMemAlloc` memory by the
//! legacy IPC handles, and interprocess events.
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
//! use cuda_core::ipc::{BufferDescriptor, ImportedPool, SharedPoolHandle};
//! use cuda_core::{Allocate, Device, DeviceMemoryResource, DeviceMemoryResourceOptions, StreamOptions};
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
//! # Events
//!
//! An event made with [`EventOptions::interprocess`](crate::EventOptions::interprocess)
//! exports itself as an [`IpcEventHandle`] ([`Event::ipc_handle`](crate::Event::ipc_handle)),
//! which another process opens with [`Event::open_ipc`](crate::Event::open_ipc), to order its
//! work after this process's (or the other way round).
//!
//! # Legacy IPC
//!
//! [`SyncMemoryResource::export_buffer`](crate::memory::SyncMemoryResource::export_buffer) exports
//! `cuMemAlloc` memory as an [`IpcMemHandle`] (`cuIpcGetMemHandle`), which another process
//! opens with [`IpcMemHandle::open`] (`cuIpcOpenMemHandle`). The driver says freeing the memory
//! while another process has it open is undefined behaviour, so both ends are `unsafe`.
//!
//! [`DeviceMemoryResourceOptions::shareable`]: crate::DeviceMemoryResourceOptions::shareable
//! [`PinnedMemoryPoolOptions::shareable`]: crate::memory::PinnedMemoryPoolOptions::shareable

// Where things are: every wire form is written and read by `form`'s one writer and reader;
// `pool` is the exporting side of a pool (its name, its handle, the record of its exports),
// `buffer` a buffer's descriptor, `import` the importing side (with the registry of the pools
// this process imported and made), `event` the interprocess events (the events this process
// opened are kept in `lifetime::ipc_registry`), `legacy` the `cuIpcGetMemHandle` path,
// `socket` a pool's handle over a Unix socket (feature `fd-passing`), and `liveness` the
// exporter's record of which exported buffers are still allocated.

mod buffer;
mod event;
mod form;
mod import;
mod legacy;
mod liveness;
mod physical;
mod pool;
#[cfg(feature = "fd-passing")]
mod socket;

use std::sync::Arc;

pub use buffer::BufferDescriptor;
pub use event::IpcEventHandle;
pub use import::ImportedPool;
pub use legacy::IpcMemHandle;
pub use physical::SharedPhysicalMemory;
pub use pool::{SharedPoolHandle, SharedPoolParts};

pub(crate) use import::{destroy_own, register_own};
pub(crate) use pool::{export_buffer, share_pool, Exports, PoolIdentity};

use crate::Buffer;

/// Whether `buffer` was allocated by `resource` (the same value).
pub(crate) fn allocated_by<R>(buffer: &Buffer, resource: &R) -> bool {
    std::ptr::eq(
        Arc::as_ptr(buffer.memory_resource()).cast::<()>(),
        (resource as *const R).cast::<()>(),
    )
}
