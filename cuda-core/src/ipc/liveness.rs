//! Which exported buffers of a shared pool are still allocated, for the importing processes
//! to see: the driver imports a buffer its exporter freed (seen on the 580 driver, even after
//! the pool was trimmed), so the exporter keeps the answer itself.
//!
//! The record is a file of its own, unlinked at once (in `/dev/shm` where there is one, so in
//! memory), that travels with the pool's handle as its second file descriptor. It holds one
//! 8-byte serial number per slot: each export of a buffer not exported before takes a free
//! slot and a serial number never used before in the pool, writes it there, and puts both in
//! the buffer's descriptor; the buffer's free writes 0 there and gives the slot back. An
//! importer reads the slot and imports the buffer only if it still holds the descriptor's
//! serial number.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::error::{Cause, Error, Result};

/// The bytes of one slot: a little-endian serial number, 0 for none.
const SLOT_BYTES: u64 = 8;

/// Where an exported buffer's serial number is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub(crate) slot: u32,
    pub(crate) serial: u64,
}

/// The exporting side's record (one per shared pool).
pub(crate) struct Liveness {
    file: File,
    slots: Mutex<Slots>,
    /// How many buffers are marked now: frees look no further while it is 0.
    marked: AtomicU64,
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
        Ok(Liveness {
            file: unlinked_file()?,
            slots: Mutex::new(Slots {
                next_serial: 1,
                ..Slots::default()
            }),
            marked: AtomicU64::new(0),
        })
    }

    /// A read-only, close-on-exec descriptor of the record, for a handle: the record's file
    /// opened anew through `/proc/self/fd` (its name is unlinked), so that an importer, or
    /// anything it passes the handle to, can read the record but never write a freed
    /// buffer's serial back (only the exporter's own descriptor writes).
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
                slots.next_slot = slot.checked_add(1).ok_or_else(|| Error::InvalidArgument {
                    name: "buffer",
                    reason: "the pool has 2^32 buffers exported at once".to_owned(),
                })?;
                slot
            }
        };
        let entry = Entry {
            slot,
            serial: slots.next_serial,
        };
        if let Err(e) = write_slot(&self.file, slot, entry.serial) {
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
        match write_slot(&self.file, entry.slot, 0) {
            Ok(()) => slots.free.push(entry.slot),
            // The slot is not reused: its serial stays, and no other buffer takes it.
            Err(e) => log::error!("recording an exported buffer as freed for its importers: {e}"),
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

fn write_slot(file: &File, slot: u32, serial: u64) -> Result<()> {
    file.write_all_at(&serial.to_le_bytes(), u64::from(slot) * SLOT_BYTES)
        .map_err(|e| file_error("pwrite", e))
}

/// A new file that no name reaches: made in `/dev/shm` (or the temporary directory), then
/// unlinked.
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
