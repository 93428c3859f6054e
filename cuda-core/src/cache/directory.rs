//! A [`FileStreamProgramCache`](super::FileStreamProgramCache)'s directory as the cache sees
//! it: the names of entries and temporary files, deleting a file, what the cache knows of the
//! directory from its last listing ([`Inventory`]), and eviction of the least recently used
//! entries down to the bound.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::CacheKey;
use crate::trust;

/// Temporary files start with this, so they never look like entries (64 hex digits).
pub(super) const TEMP_PREFIX: &str = ".tmp-";
/// A temporary file older than this was left by a writer that died; it is deleted.
const STALE_TEMP_AGE: Duration = Duration::from_secs(10 * 60);
/// A write lists the directory where its last listing is older than this.
pub(super) const LIST_AFTER: Duration = Duration::from_secs(30);
/// A write lists the directory where the last listing saw at most this many entries (a
/// listing of them costs little next to the write's flushes).
pub(super) const LIST_ALWAYS_UP_TO: usize = 256;

/// What a cache knows of its directory.
#[derive(Debug, Default)]
pub(super) struct Inventory {
    /// Each entry as the last listing saw it, so that the next lists the directory but
    /// `stat`s only the files it has not seen.
    pub(super) known: HashMap<CacheKey, Known>,
    /// When the directory was last listed.
    pub(super) listed: Option<Instant>,
    /// The bytes of the entries the last listing counted, less those eviction deleted since,
    /// plus those this cache wrote since: no less than the directory's size where no other
    /// process writes to it.
    pub(super) estimate: u64,
}

/// An entry file as a scan saw it.
#[derive(Debug)]
pub(super) struct Known {
    /// The inode number the listing gave.
    ino: u64,
    len: u64,
    /// Its modification time when it was `stat`ed: no later than its time now.
    modified: SystemTime,
}

impl Inventory {
    /// Whether a write of `written` bytes into a cache bounded by `max_bytes` lists the
    /// directory (to count it, and evict): where the last listing saw few entries, is older
    /// than [`LIST_AFTER`], or the bytes it counted and those the cache wrote since are more
    /// than half the bound. Otherwise the cache is at most half full, but for what other
    /// processes wrote since the last listing: the write is counted and nothing is listed, so
    /// that a put into a large cache well under its bound does not pay a listing of every
    /// entry.
    pub(super) fn lists_after_write(&mut self, written: u64, max_bytes: u64) -> bool {
        let estimate = self.estimate.saturating_add(written);
        let list = self.known.len() <= LIST_ALWAYS_UP_TO
            || self.listed.is_none_or(|at| at.elapsed() > LIST_AFTER)
            || estimate > max_bytes / 2;
        if !list {
            self.estimate = estimate;
        }
        list
    }

    /// Deletes the least recently used entries a scan of `dir` (the cache at `path`) saw,
    /// but not `keep`, until those left fit in `max_bytes`, where they may not; their lengths
    /// add up to `total` (some may be gone since).
    ///
    /// The oldest entry by the time a scan kept is checked with a `stat` before it goes: a
    /// hit (here or in another process) has set its time since, the times only grow, so the
    /// time kept is never later than the file's. Where the file's is later, the entry takes
    /// its place again with it; where it is the same, no other entry is older, and it is
    /// deleted. So the least recently used go first, at a `stat` or two each.
    pub(super) fn evict(
        &mut self,
        dir: &OwnedFd,
        path: &Path,
        max_bytes: u64,
        mut total: u64,
        keep: &CacheKey,
    ) {
        if total <= max_bytes {
            return;
        }
        let known = &mut self.known;
        let mut oldest: BinaryHeap<Reverse<(SystemTime, [u8; 32])>> = known
            .iter()
            .filter(|(key, _)| *key != keep)
            .map(|(key, entry)| Reverse((entry.modified, key.0)))
            .collect();
        while total > max_bytes {
            let Some(Reverse((modified, bytes))) = oldest.pop() else {
                break;
            };
            let key = CacheKey(bytes);
            let name = key.to_hex();
            match trust::status_at(dir, &name) {
                // Another process deleted it first: its bytes are gone all the same.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if let Some(entry) = known.remove(&key) {
                        total = total.saturating_sub(entry.len);
                    }
                    continue;
                }
                Ok(status) if status.modified > modified => {
                    if let Some(entry) = known.get_mut(&key) {
                        entry.modified = status.modified;
                    }
                    oldest.push(Reverse((status.modified, bytes)));
                    continue;
                }
                _ => {}
            }
            match delete(dir, &name) {
                Ok(()) => {
                    if let Some(entry) = known.remove(&key) {
                        total = total.saturating_sub(entry.len);
                    }
                }
                // It still counts: the next oldest goes.
                Err(e) => log::debug!(
                    "program cache at {}: cannot evict {key}: {e}",
                    path.display()
                ),
            }
        }
        self.estimate = total;
    }

    /// Lists the entries of `dir` (the cache at `path`) and returns the sum of their lengths;
    /// with `clean_temps`, deletes stale temporary files on the way. Files that vanish during
    /// the scan (other processes) are skipped.
    ///
    /// Only names not seen by the last scan, or seen with another inode, are `stat`ed: an
    /// entry is never written in place, only renamed over (a new file, a new inode), so a
    /// name listed with the same inode is the same file, of the same length. A scan of a
    /// cache of 10,000 entries is then a listing of the directory, not 10,000 `stat`s.
    pub(super) fn scan(
        &mut self,
        dir: &OwnedFd,
        path: &Path,
        clean_temps: bool,
    ) -> io::Result<u64> {
        let listed_at = Instant::now();
        let listed = trust::names_and_inodes(dir)?;
        let now = SystemTime::now();
        let known = &mut self.known;
        let mut seen = HashMap::with_capacity(listed.len());
        let mut total = 0u64;
        for (name, ino) in listed {
            if let Some(key) = entry_key(&name) {
                let entry = match known.remove(&key) {
                    Some(entry) if entry.ino == ino => entry,
                    _ => {
                        let Ok(status) = trust::status_at(dir, &name) else {
                            continue;
                        };
                        if status.file_type != rustix::fs::FileType::RegularFile {
                            continue;
                        }
                        Known {
                            ino,
                            len: status.len,
                            modified: status.modified,
                        }
                    }
                };
                total = total.saturating_add(entry.len);
                seen.insert(key, entry);
            } else if clean_temps && name.starts_with(TEMP_PREFIX) {
                let stale = trust::status_at(dir, &name)
                    .ok()
                    .and_then(|status| now.duration_since(status.modified).ok())
                    .is_some_and(|age| age > STALE_TEMP_AGE);
                if stale {
                    log::debug!(
                        "program cache at {}: deleting the stale temporary file {name}",
                        path.display()
                    );
                    let _ = trust::remove_at(dir, &name);
                }
            }
        }
        *known = seen;
        self.listed = Some(listed_at);
        self.estimate = total;
        Ok(total)
    }
}

/// Deletes the file `name` in `dir`; one already gone is what was wanted (another process may
/// have deleted it first), not an error.
pub(super) fn delete(dir: &OwnedFd, name: &str) -> io::Result<()> {
    gone_is_done(trust::remove_at(dir, name))
}

/// A deletion's result, with "not found" counted as done.
fn gone_is_done(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The key of an entry's file name: 64 lowercase hexadecimal digits.
pub(super) fn entry_key(name: &str) -> Option<CacheKey> {
    if name.bytes().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    CacheKey::from_hex(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{FileStreamProgramCache, ProgramCache};
    use std::fs::{self, File};
    use std::path::PathBuf;

    /// The directory, open as a cache opens it.
    fn open(dir: &Path) -> OwnedFd {
        trust::open_dir(dir, trust::Trust::Private, false).unwrap()
    }

    /// The path of `key`'s entry file in `dir`.
    fn entry_path(dir: &Path, key: &CacheKey) -> PathBuf {
        dir.join(key.to_hex())
    }

    #[test]
    fn entry_names_are_lowercase_hex_only() {
        let key = CacheKey([0xab; 32]);
        assert_eq!(entry_key(&key.to_hex()), Some(key));
        assert_eq!(entry_key(&key.to_hex().to_uppercase()), None);
        assert_eq!(entry_key(".tmp-1-2-3"), None);
        assert_eq!(entry_key("README"), None);
    }

    #[test]
    fn stale_temporary_files_are_deleted_fresh_ones_and_other_files_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        let stale = dir.path().join(".tmp-1-2-3");
        let fresh = dir.path().join(".tmp-4-5-6");
        let other = dir.path().join("notes.txt");
        for path in [&stale, &fresh, &other] {
            fs::write(path, b"x").unwrap();
        }
        // Ten minutes is stale (as documented), five is not; a file of the user's is never
        // touched, however old.
        let age = |path: &Path, minutes: u64| {
            File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(minutes * 60))
                .unwrap();
        };
        age(&stale, 11);
        age(&fresh, 5);
        age(&other, 60);
        // Only a write cleans up: reading the size leaves them.
        assert_eq!(cache.size_bytes(), 0);
        assert!(stale.exists());
        cache.put(&CacheKey([1; 32]), b"one");
        assert!(!stale.exists());
        assert!(fresh.exists());
        assert!(other.exists());
        cache.clear().unwrap();
        assert!(fresh.exists() && other.exists());
        assert_eq!(cache.size_bytes(), 0);
    }

    #[test]
    fn a_file_already_gone_is_deleted_and_other_failures_are_errors() {
        let kind = |result: io::Result<()>| gone_is_done(result).map_err(|e| e.kind());
        assert_eq!(kind(Ok(())), Ok(()));
        assert_eq!(kind(Err(io::ErrorKind::NotFound.into())), Ok(()));
        assert_eq!(
            kind(Err(io::ErrorKind::PermissionDenied.into())),
            Err(io::ErrorKind::PermissionDenied)
        );
        let dir = tempfile::tempdir().unwrap();
        let handle = open(dir.path());
        assert!(delete(&handle, "never-there").is_ok());
        fs::create_dir(dir.path().join("a-directory")).unwrap();
        assert!(delete(&handle, "a-directory").is_err());
    }

    /// What a scan would have kept of these entries, with made-up times.
    fn inventory_of(entries: &[(&CacheKey, u64, u64)]) -> Inventory {
        let known = entries
            .iter()
            .map(|&(key, len, seconds)| {
                let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
                (
                    *key,
                    Known {
                        ino: 0,
                        len,
                        modified,
                    },
                )
            })
            .collect();
        Inventory {
            known,
            ..Inventory::default()
        }
    }

    /// Sets a file's modification time to `seconds` after the epoch.
    fn set_time(path: &Path, seconds: u64) {
        // Read-only, so that a directory opens too; the owner may set the time either way.
        File::open(path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
            .unwrap();
    }

    #[test]
    fn eviction_counts_entries_another_process_deleted_and_not_ones_it_could_not() {
        let dir = tempfile::tempdir().unwrap();
        let (path, handle) = (dir.path(), open(dir.path()));
        let (a, b) = (CacheKey([0xa; 32]), CacheKey([0xb; 32]));
        for (key, seconds) in [(&a, 2), (&b, 3)] {
            fs::write(entry_path(path, key), [0u8; 50]).unwrap();
            set_time(&entry_path(path, key), seconds);
        }
        // The oldest entry was deleted by another process after the scan: its 60 bytes are
        // gone all the same, and what is left fits in the bound of 100.
        let gone = CacheKey([0x1; 32]);
        let mut inventory = inventory_of(&[(&gone, 60, 1), (&a, 50, 2), (&b, 50, 3)]);
        inventory.evict(&handle, path, 100, 160, &b);
        assert!(entry_path(path, &a).exists() && entry_path(path, &b).exists());
        assert!(
            !inventory.known.contains_key(&gone),
            "a deleted entry is still known"
        );
        assert_eq!(inventory.estimate, 100);
        // An entry that cannot be deleted (a directory in its place) still counts, so the
        // next oldest goes.
        let stuck = CacheKey([0x2; 32]);
        fs::create_dir(entry_path(path, &stuck)).unwrap();
        set_time(&entry_path(path, &stuck), 1);
        let mut inventory = inventory_of(&[(&stuck, 60, 1), (&a, 50, 2), (&b, 50, 3)]);
        inventory.evict(&handle, path, 100, 160, &b);
        assert!(entry_path(path, &stuck).is_dir());
        assert!(
            !entry_path(path, &a).exists(),
            "the stuck entry was counted as deleted"
        );
        assert!(entry_path(path, &b).exists(), "the kept entry was deleted");
    }

    /// Bugs caught: an entry evicted by the time an earlier scan saw, though a hit (of
    /// another process) has used it since; the time kept not brought up to date.
    #[test]
    fn eviction_checks_the_time_of_the_oldest_before_it_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let (path, handle) = (dir.path(), open(dir.path()));
        let [a, b, c] = [1, 2, 3].map(|n| CacheKey([n; 32]));
        for key in [&a, &b, &c] {
            fs::write(entry_path(path, key), [0u8; 50]).unwrap();
        }
        // The scan saw `a` as the oldest; it was used at 10 s since, after `b` (5 s).
        set_time(&entry_path(path, &a), 10);
        set_time(&entry_path(path, &b), 5);
        set_time(&entry_path(path, &c), 20);
        let mut inventory = inventory_of(&[(&a, 50, 1), (&b, 50, 2), (&c, 50, 3)]);
        inventory.evict(&handle, path, 100, 150, &c);
        assert!(entry_path(path, &a).exists(), "a recently used entry went");
        assert!(
            !entry_path(path, &b).exists(),
            "the least recently used stayed"
        );
        assert_eq!(
            inventory.known[&a].modified,
            SystemTime::UNIX_EPOCH + Duration::from_secs(10)
        );
    }

    /// Bugs caught: a scan that `stat`s only new names missing an entry replaced by another
    /// of another length (a new inode), or one deleted, or still counting what a first scan
    /// saw; a directory in an entry's place counted.
    #[test]
    fn a_scan_sees_entries_replaced_deleted_and_added_since_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        let (path, handle) = (dir.path(), open(dir.path()));
        let mut inventory = Inventory::default();
        let [a, b, c, d] = [1, 2, 3, 4].map(|n| CacheKey([n; 32]));
        fs::write(entry_path(path, &a), [0u8; 10]).unwrap();
        fs::write(entry_path(path, &b), [0u8; 20]).unwrap();
        assert_eq!(inventory.scan(&handle, path, false).unwrap(), 30);
        // `a` replaced by a longer file renamed over it, `b` deleted, `c` added, and a
        // directory under `d`'s name.
        let temp = dir.path().join(".tmp-x");
        fs::write(&temp, [0u8; 100]).unwrap();
        fs::rename(&temp, entry_path(path, &a)).unwrap();
        fs::remove_file(entry_path(path, &b)).unwrap();
        fs::write(entry_path(path, &c), [0u8; 7]).unwrap();
        fs::create_dir(entry_path(path, &d)).unwrap();
        assert_eq!(inventory.scan(&handle, path, false).unwrap(), 107);
        assert_eq!(cache.size_bytes(), 107);
        assert_eq!(inventory.known.len(), 2);
        assert_eq!(inventory.known[&a].len, 100);
    }
}
