//! Which exported buffers of a shared pool are still allocated, for the importing processes
//! to see: the driver imports a buffer its exporter freed (seen on the 580 driver, even after
//! the pool was trimmed), so the exporter keeps the answer itself.
//!
//! The record is a sealed memory file (`memfd_create`) that travels with the pool's handle as
//! its second file descriptor. It holds one 8-byte serial number per slot: each export of a
//! buffer not exported before takes a free slot and a serial number never used before in the
//! pool, writes it there, and puts both in the buffer's descriptor; the buffer's free writes 0
//! there and gives the slot back. An importer reads the slot and imports the buffer only if it
//! still holds the descriptor's serial number.
//!
//! Only the exporter writes the record, through the one writable mapping it made before
//! sealing it: `F_SEAL_FUTURE_WRITE` (Linux 5.1+) then refuses `write(2)` and every new
//! writable mapping, and `F_SEAL_SHRINK`, `F_SEAL_GROW` and `F_SEAL_SEAL` fix its size and its
//! seals, for every process and however the file is opened again (an importer of the same
//! user can reopen its read-only descriptor read-write through `/proc/self/fd`). Where the
//! kernel lacks `F_SEAL_FUTURE_WRITE`, or memory files, the record still works, but it then
//! defends against mistakes, not against a hostile importer of the same user (said once in
//! the log).

use std::collections::HashMap;
use std::ffi::c_void;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

use crate::error::{Cause, Error, Result};

/// The bytes of one slot: a little-endian serial number, 0 for none.
const SLOT_BYTES: u64 = 8;

/// How many slots a record has: as many buffers of one pool as can be exported and still
/// allocated at once. The record's size is fixed (sealed), and its pages are made only as
/// slots are first written, so this costs address space, not memory.
const SLOTS: u32 = 1 << 20;

/// Where an exported buffer's serial number is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub(crate) slot: u32,
    pub(crate) serial: u64,
}

/// The exporting side's record (one per shared pool).
pub(crate) struct Liveness {
    file: File,
    /// The exporter's writable mapping of the whole record, where the file is a sealed memory
    /// file; `None` where it is a plain file, written with `pwrite`.
    mapping: Option<Mapping>,
    slots: Mutex<Slots>,
    /// How many buffers are marked now: frees look no further while it is 0.
    marked: AtomicU64,
}

/// A shared, writable mapping of the record's `SLOTS` slots, unmapped on drop.
struct Mapping {
    slots: NonNull<AtomicU64>,
}

// SAFETY: the mapping is shared memory read and written only through atomics, from any
// thread; it stays mapped until the `Mapping` is dropped.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`: every access is atomic.
unsafe impl Sync for Mapping {}

impl Mapping {
    const BYTES: usize = SLOTS as usize * SLOT_BYTES as usize;

    /// Maps the whole record `file` (already `SLOTS` slots long) shared and writable.
    fn new(file: &File) -> std::io::Result<Mapping> {
        // SAFETY: a new mapping at an address the kernel picks, so no existing memory is
        // replaced; it is unmapped only in `drop`.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                file,
                0,
            )
        }?;
        let slots = NonNull::new(ptr.cast::<AtomicU64>())
            .ok_or_else(|| std::io::Error::other("mmap gave a null address"))?;
        Ok(Mapping { slots })
    }

    /// Stores `serial` in `slot`, which is below `SLOTS`.
    fn store(&self, slot: u32, serial: u64) {
        debug_assert!(slot < SLOTS);
        // SAFETY: `slot < SLOTS`, so the element lies within the mapping, which is
        // page-aligned and so aligned for `AtomicU64`; the file's size is sealed against
        // shrinking (`sealed_record`), so the page is there to write.
        let cell = unsafe { &*self.slots.as_ptr().add(slot as usize) };
        cell.store(serial.to_le(), Ordering::SeqCst);
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let ptr = self.slots.as_ptr().cast::<c_void>();
        // SAFETY: the mapping `new` made, of this length; nothing refers to it any more.
        let unmapped = unsafe { rustix::mm::munmap(ptr, Self::BYTES) };
        if let Err(e) = unmapped {
            log::warn!("unmapping a shared pool's record of exported buffers: {e}");
        }
    }
}

#[derive(Default)]
struct Slots {
    by_ptr: HashMap<u64, Entry>,
    free: Vec<u32>,
    next_slot: u32,
    next_serial: u64,
}

fn file_error(operation: &'static str, source: std::io::Error) -> Error {
    Error::FileDescriptor {
        operation,
        source: Cause::new(source),
    }
}

impl Liveness {
    /// A new, empty record.
    pub(crate) fn new() -> Result<Liveness> {
        let (file, mapping) = match sealed_record()? {
            Some((file, mapping)) => (file, Some(mapping)),
            None => (unlinked_file()?, None),
        };
        Ok(Liveness {
            file,
            mapping,
            slots: Mutex::new(Slots {
                next_serial: 1,
                ..Slots::default()
            }),
            marked: AtomicU64::new(0),
        })
    }

    /// A read-only, close-on-exec descriptor of the record, for a handle: the record's file
    /// opened anew through `/proc/self/fd` (it has no name), so that an importer, or anything
    /// it passes the handle to, reads the record through it; where the record is sealed (see
    /// the module), its writes are refused however it is opened again.
    pub(crate) fn fd(&self) -> Result<OwnedFd> {
        let path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        let read_only = File::open(&path).map_err(|e| file_error("open /proc/self/fd", e))?;
        Ok(read_only.into())
    }

    /// Records the buffer at `ptr` as live (again the same entry for a buffer marked before).
    pub(crate) fn mark(&self, ptr: u64) -> Result<Entry> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&entry) = slots.by_ptr.get(&ptr) {
            return Ok(entry);
        }
        let slot = match slots.free.pop() {
            Some(slot) => slot,
            None => {
                let slot = slots.next_slot;
                if slot >= SLOTS {
                    return Err(Error::InvalidArgument {
                        name: "buffer",
                        reason: format!(
                            "the pool has {SLOTS} buffers exported and allocated at once, as \
                             many as its record holds"
                        ),
                    });
                }
                slots.next_slot = slot + 1;
                slot
            }
        };
        let entry = Entry {
            slot,
            serial: slots.next_serial,
        };
        if let Err(e) = self.write_slot(slot, entry.serial) {
            slots.free.push(slot);
            return Err(e);
        }
        slots.next_serial += 1;
        slots.by_ptr.insert(ptr, entry);
        self.marked.fetch_add(1, Ordering::Release);
        Ok(entry)
    }

    /// Records the buffer at `ptr` as freed, if it was marked: called before its memory goes
    /// back to the pool. A failed write is logged: importers then still see it as live.
    #[inline]
    pub(crate) fn clear(&self, ptr: u64) {
        if self.marked.load(Ordering::Acquire) == 0 {
            return;
        }
        self.clear_slow(ptr);
    }

    #[cold]
    fn clear_slow(&self, ptr: u64) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = slots.by_ptr.remove(&ptr) else {
            return;
        };
        self.marked.fetch_sub(1, Ordering::Release);
        match self.write_slot(entry.slot, 0) {
            Ok(()) => slots.free.push(entry.slot),
            // The slot is not reused: its serial stays, and no other buffer takes it.
            Err(e) => log::error!("recording an exported buffer as freed for its importers: {e}"),
        }
    }

    /// Writes `serial` in `slot` (below `SLOTS`): through the mapping where there is one (the
    /// seals refuse `pwrite`), else with `pwrite`.
    fn write_slot(&self, slot: u32, serial: u64) -> Result<()> {
        match &self.mapping {
            Some(mapping) => {
                mapping.store(slot, serial);
                Ok(())
            }
            None => self
                .file
                .write_all_at(&serial.to_le_bytes(), u64::from(slot) * SLOT_BYTES)
                .map_err(|e| file_error("pwrite", e)),
        }
    }
}

/// Refuses a received record descriptor that is not of a regular file: reads of a pipe, a
/// socket or a device could wait for its peer forever (or mean something else).
pub(crate) fn check_record(fd: &OwnedFd) -> Result<()> {
    let file = File::from(fd.try_clone().map_err(|e| file_error("dup", e))?);
    let meta = file.metadata().map_err(|e| file_error("fstat", e))?;
    if !meta.file_type().is_file() {
        return Err(Error::InvalidArgument {
            name: "liveness",
            reason: format!(
                "the record's descriptor is not of a regular file ({:?}): it is not an \
                 exporter's record",
                meta.file_type()
            ),
        });
    }
    Ok(())
}

/// Whether `entry` is live in the record `file` (the importing side). A slot past the end of
/// the record was never written: not live.
pub(crate) fn is_live(file: &File, entry: Entry) -> Result<bool> {
    let mut bytes = [0u8; SLOT_BYTES as usize];
    match file.read_exact_at(&mut bytes, u64::from(entry.slot) * SLOT_BYTES) {
        Ok(()) => Ok(u64::from_le_bytes(bytes) == entry.serial && entry.serial != 0),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(file_error("pread", e)),
    }
}

/// Says once in the log that records are not sealed against writes, and why.
fn unsealed(why: &str) {
    static SAID: Once = Once::new();
    SAID.call_once(|| {
        log::warn!(
            "shared pools' records of exported buffers are not sealed against writes ({why}): \
             they defend against mistakes, not against a hostile importer of the same user"
        );
    });
}

/// A new memory file of `SLOTS` slots with the exporter's writable mapping, sealed as the
/// module says; `None` where the kernel makes no memory files that can be sealed (then a plain
/// file serves, unsealed). Where `F_SEAL_FUTURE_WRITE` is refused (before Linux 5.1), the
/// file keeps the other seals and serves.
fn sealed_record() -> Result<Option<(File, Mapping)>> {
    let fd = match rustix::fs::memfd_create(
        "cuda-core-ipc-record",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    ) {
        Ok(fd) => fd,
        Err(e) => {
            unsealed(&format!("memfd_create: {e}"));
            return Ok(None);
        }
    };
    let file = File::from(fd);
    file.set_len(Mapping::BYTES as u64)
        .map_err(|e| file_error("ftruncate", e))?;
    // Mapped before the seals: `F_SEAL_FUTURE_WRITE` refuses new writable mappings.
    let mapping = Mapping::new(&file).map_err(|e| file_error("mmap", e))?;
    let size = SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL;
    match rustix::fs::fcntl_add_seals(&file, size | SealFlags::FUTURE_WRITE) {
        Ok(()) => {}
        Err(rustix::io::Errno::INVAL) => {
            // A kernel before 5.1: the size is still fixed, so the mapping never faults.
            rustix::fs::fcntl_add_seals(&file, size)
                .map_err(|e| file_error("fcntl F_ADD_SEALS", e.into()))?;
            unsealed("the kernel has no F_SEAL_FUTURE_WRITE");
        }
        Err(e) => return Err(file_error("fcntl F_ADD_SEALS", e.into())),
    }
    Ok(Some((file, mapping)))
}

/// A new file that no name reaches, where the kernel makes no memory files: made in
/// `/dev/shm` (or the temporary directory), then unlinked.
fn unlinked_file() -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    static MADE: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    let shm = std::path::Path::new("/dev/shm");
    let dirs = [shm.to_path_buf(), std::env::temp_dir()];
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        for _ in 0..4 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = dir.join(format!(
                ".cuda-core-ipc-{}-{}-{nanos}",
                std::process::id(),
                MADE.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&name)
            {
                Ok(file) => {
                    if let Err(e) = std::fs::remove_file(&name) {
                        log::warn!("unlinking {}: {e}", name.display());
                    }
                    return Ok(file);
                }
                Err(e) => last = Some(e),
            }
        }
    }
    Err(file_error(
        "open",
        last.unwrap_or_else(|| std::io::Error::other("no directory for the pool's record")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Marked buffers read as live through another descriptor of the record, and stop being
    /// live once cleared, for good: a slot reused by the next buffer has a new serial.
    #[test]
    fn marks_are_seen_through_the_record_until_cleared() {
        let record = Liveness::new().unwrap();
        let theirs = File::from(record.fd().unwrap());
        let a = record.mark(0x1000).unwrap();
        let b = record.mark(0x2000).unwrap();
        // The same buffer again: the same entry (catches a second slot per export).
        assert_eq!(record.mark(0x1000).unwrap(), a);
        assert_ne!(a.slot, b.slot);
        assert!(is_live(&theirs, a).unwrap());
        assert!(is_live(&theirs, b).unwrap());
        record.clear(0x1000);
        assert!(!is_live(&theirs, a).unwrap(), "a freed buffer reads live");
        assert!(is_live(&theirs, b).unwrap(), "clearing one cleared another");
        // The slot goes to the next buffer, with a new serial: the old descriptor stays dead.
        let c = record.mark(0x3000).unwrap();
        assert_eq!(c.slot, a.slot);
        assert_ne!(c.serial, a.serial);
        assert!(
            !is_live(&theirs, a).unwrap(),
            "a reused slot revived a freed buffer"
        );
        assert!(is_live(&theirs, c).unwrap());
        // A buffer never marked: clearing it changes nothing.
        record.clear(0x9000);
        assert!(is_live(&theirs, b).unwrap() && is_live(&theirs, c).unwrap());
        // A slot past the record's end, and serial 0, are not live.
        assert!(!is_live(
            &theirs,
            Entry {
                slot: 1000,
                serial: 1
            }
        )
        .unwrap());
        assert!(!is_live(
            &theirs,
            Entry {
                slot: a.slot,
                serial: 0
            }
        )
        .unwrap());
    }

    /// The record's file has no name left and is close-on-exec.
    #[test]
    fn the_record_is_unlinked_and_close_on_exec() {
        let record = Liveness::new().unwrap();
        let fd = record.fd().unwrap();
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
        assert!(link.to_string_lossy().ends_with("(deleted)"), "{link:?}");
        let info =
            std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap();
        assert_ne!(
            u32::from_str_radix(flags.trim(), 8).unwrap() & 0o2_000_000,
            0
        );
    }

    /// Review N13: the descriptor a handle carries is read-only, so that no importer can
    /// write a freed buffer's serial back and revive it for every importer. Bug caught: the
    /// handle held a duplicate of the exporter's read-write descriptor.
    #[test]
    fn an_importers_descriptor_cannot_write_the_record() {
        let record = Liveness::new().unwrap();
        let a = record.mark(0x1000).unwrap();
        let theirs = File::from(record.fd().unwrap());
        record.clear(0x1000);
        assert!(!is_live(&theirs, a).unwrap());
        // What a holder of the handle would do: write the old serial back into its slot.
        let written = theirs.write_all_at(&a.serial.to_le_bytes(), u64::from(a.slot) * SLOT_BYTES);
        assert!(
            written.is_err(),
            "an importer's descriptor wrote the record"
        );
        assert!(!is_live(&theirs, a).unwrap(), "a freed buffer was revived");
        // The exporter's own writes still reach the importer's descriptor.
        let b = record.mark(0x2000).unwrap();
        assert!(is_live(&theirs, b).unwrap());
    }

    /// Review W8: an importer of the exporter's user can reopen its read-only descriptor
    /// through `/proc/self/fd/N` for writing (a new open, checked against the file's
    /// permissions, not the descriptor's): neither a write through that reopened descriptor
    /// nor a new writable mapping of it may change the record, while the exporter's own
    /// later writes still reach the importer.
    #[test]
    fn a_reopened_importer_descriptor_cannot_write_the_record() {
        let record = Liveness::new().unwrap();
        let a = record.mark(0x1000).unwrap();
        let theirs = File::from(record.fd().unwrap());
        record.clear(0x1000);
        assert!(!is_live(&theirs, a).unwrap());
        let path = format!("/proc/self/fd/{}", theirs.as_raw_fd());
        // What a hostile importer would do: reopen read-write, write the freed serial back.
        if let Ok(reopened) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            let at = u64::from(a.slot) * SLOT_BYTES;
            // Bug caught: the record was a plain 0600 file of the same user, so this write
            // succeeded and revived a freed buffer for every importer.
            assert!(
                reopened.write_all_at(&a.serial.to_le_bytes(), at).is_err(),
                "a reopened importer descriptor wrote the record"
            );
            // Bug caught: a writable shared mapping of the reopened descriptor.
            // SAFETY: a new mapping at an address the kernel picks; unmapped below if made.
            let mapped = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    SLOT_BYTES as usize,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::SHARED,
                    &reopened,
                    0,
                )
            };
            if let Ok(ptr) = mapped {
                // SAFETY: the mapping made just above, of this length, no longer used.
                let _ = unsafe { rustix::mm::munmap(ptr, SLOT_BYTES as usize) };
                panic!("a reopened importer descriptor was mapped writable");
            }
            // Bug caught: a read-only shared mapping made writable afterwards.
            // SAFETY: as above.
            let read_only = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    SLOT_BYTES as usize,
                    rustix::mm::ProtFlags::READ,
                    rustix::mm::MapFlags::SHARED,
                    &reopened,
                    0,
                )
            }
            .unwrap();
            // SAFETY: the mapping made just above, of this length; nothing refers to it.
            let upgraded = unsafe {
                rustix::mm::mprotect(
                    read_only,
                    SLOT_BYTES as usize,
                    rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::WRITE,
                )
            };
            // SAFETY: as above; not used after this.
            let _ = unsafe { rustix::mm::munmap(read_only, SLOT_BYTES as usize) };
            assert!(
                upgraded.is_err(),
                "a reopened importer descriptor's mapping was made writable"
            );
            // Bug caught: shrinking the record would clear (or, on a mapped record, fault)
            // every slot.
            assert!(
                reopened.set_len(0).is_err(),
                "a reopened importer descriptor shrank the record"
            );
        }
        assert!(!is_live(&theirs, a).unwrap(), "a freed buffer was revived");
        // The exporter's own writes still reach the importer (catches a seal that stopped
        // the exporter too): a mark, then its clear.
        let b = record.mark(0x2000).unwrap();
        assert!(
            is_live(&theirs, b).unwrap(),
            "the exporter's mark is not seen"
        );
        record.clear(0x2000);
        assert!(
            !is_live(&theirs, b).unwrap(),
            "the exporter's clear is not seen"
        );
    }

    /// A received record that is not a regular file is refused (a pipe's or a device's reads
    /// could wait for the peer forever); the exporter's record passes.
    #[test]
    fn a_record_that_is_not_a_regular_file_is_refused() {
        let record = Liveness::new().unwrap();
        assert!(check_record(&record.fd().unwrap()).is_ok());
        // A character device (`std::io::pipe` would need Rust 1.87; the crate builds on 1.85).
        let device = std::fs::File::open("/dev/null").unwrap();
        let err = check_record(&OwnedFd::from(device)).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::InvalidArgument {
                    name: "liveness",
                    ..
                }
            ),
            "{err}"
        );
    }
}
