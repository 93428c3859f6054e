//! `FileStreamProgramCache`: one file per entry in a directory, shared by threads and
//! processes, trusted only where its user alone can write (or where the user said otherwise).

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::SystemTime;

use super::directory::{delete, entry_key, Inventory, TEMP_PREFIX};
use super::entry::{self, header, HEADER_LEN};
use super::{CacheKey, ProgramCache};
use crate::error::{Error, Result};
use crate::trust::{self, Trust};

/// A persistent program cache: one file per entry in a directory, safe to share between the
/// threads of a process and between processes at once, bounded in bytes with the least
/// recently used entries deleted first.
///
/// # Where it lives, and how to clear it
///
/// [`FileStreamProgramCache::open_default`] uses [`FileStreamProgramCache::default_dir`]:
/// `$XDG_CACHE_HOME/cuda-core/programs`, or `$HOME/.cache/cuda-core/programs` where
/// `XDG_CACHE_HOME` is not set. [`FileStreamProgramCache::new`] takes any directory. Each
/// entry is a file named by its key's 64 hexadecimal digits ([`CacheKey::to_hex`]). To clear
/// the cache, call [`ProgramCache::clear`], or delete the directory
/// (`rm -rf ~/.cache/cuda-core/programs`) while no program uses it; it is made again on the
/// next write.
///
/// # Whom it trusts
///
/// An entry is code this process will load and run, and its name (the key) is computed from
/// inputs anyone may know, so whoever can write to the directory can run code in this process.
/// [`new`](Self::new) and [`open_default`](Self::open_default) therefore trust only the
/// effective user:
///
/// - the directories they make (the cache's and missing parents) are made `0700`, whatever the
///   umask;
/// - the directory must be owned by the effective user and not writable by group or others,
///   and must not be a symbolic link: otherwise opening fails with [`Error::Cache`], saying
///   why and how to fix it (`chmod 700 DIR`);
/// - it is then used only through its open descriptor (`openat`), so a directory renamed into
///   its place later is never read;
/// - an entry is opened without following a symbolic link and read only if it is a regular
///   file owned by the effective user and not writable by group or others; any other is a
///   miss, never loaded, logged once (as a warning; later ones at debug level) and counted by
///   [`refused_entries`](Self::refused_entries);
/// - entries are written `0600` to a new temporary file (`O_EXCL`) in the same directory, then
///   renamed into place.
///
/// [`new_shared`](Self::new_shared) opens a directory several users share: it trusts **every
/// user who can write to the directory** to run code in this process, and refuses only a
/// symbolic link and entries writable by every user.
///
/// # Guarantees
///
/// - **Readers never see a partial entry.** An entry is written to a uniquely named
///   temporary file in the same directory, flushed to disk, then renamed over its final name.
/// - **Corruption is a miss.** Each entry holds a header (a magic number and format version,
///   the payload's length and its SHA-256); an entry that is truncated, too long, of another
///   format or fails its checksum is deleted and reads as a miss.
/// - **Bounded.** After a write, while the entry files (headers included) add up to more
///   than `max_bytes`, the least recently used are deleted. A hit counts as a use: it sets the
///   entry's modification time. An entry larger than the bound is not stored. Processes
///   sharing a directory each enforce their own bound.
/// - **A write's cost does not grow with the entries held** while the cache is under half its
///   bound. A write lists the directory (to count it, and evict) only where the cache's count
///   (its last listing's, plus the bytes it has written since) is more than half the bound,
///   where the last listing saw few entries, or where it is more than 30 seconds old; a
///   listing `stat`s only the files it has not seen before. So where other processes write to
///   the same directory, this cache counts their entries at its next listing, within 30
///   seconds, or at once where it is more than half full.
/// - **Never fails its caller.** A write that fails is dropped, with one `log::warn!` per
///   cache (later failures are logged at debug level, and counted by
///   [`failed_puts`](Self::failed_puts)); a read that fails is a miss.
///
/// ```
/// use cuda_core::{cache::{CacheKey, FileStreamProgramCache, ProgramCache}};
///
/// let dir = tempfile::tempdir()?;
/// let cache = FileStreamProgramCache::new(dir.path().join("programs"), 64 << 20)?;
/// let key = CacheKey::builder().field("source", b"...").finish();
/// cache.put(&key, b"compiled program");
/// assert!(cache.dir().join(key.to_hex()).is_file());
/// assert_eq!(cache.get(&key).as_deref(), Some(&b"compiled program"[..]));
/// cache.clear()?;
/// assert_eq!(cache.get(&key), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileStreamProgramCache {
    dir: PathBuf,
    max_bytes: u64,
    trust: Trust,
    /// The directory, open and checked: every entry is reached through it. Replaced where the
    /// directory was deleted and is made (and checked) again.
    handle: RwLock<Arc<OwnedFd>>,
    /// Whether a failed write has been warned about.
    warned: AtomicBool,
    failed_puts: AtomicU64,
    /// Whether a refused entry has been warned about.
    refusal_warned: AtomicBool,
    refused_entries: AtomicU64,
    /// What the cache knows of its directory, from its last listing and its writes since.
    inventory: Mutex<Inventory>,
}

impl FileStreamProgramCache {
    /// A reasonable bound for [`FileStreamProgramCache::open_default`]: 1 GiB.
    pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

    /// A cache in `dir`, trusted as the effective user's alone, made (with its parents, each
    /// `0700`) if it does not exist, holding at most `max_bytes` bytes of entry files.
    ///
    /// Fails with [`Error::Cache`], saying why and how to fix it, if the directory cannot be
    /// made, is not a directory, is a symbolic link, is owned by another user, or is writable
    /// by group or others (see [Whom it trusts](Self#whom-it-trusts)). An existing directory
    /// that cannot be written is accepted: reads work and writes are dropped with a warning.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Result<Self> {
        Self::open(dir.into(), max_bytes, Trust::Private)
    }

    /// A cache in a directory shared with other users, made if it does not exist (as the
    /// umask says), holding at most `max_bytes` bytes of entry files.
    ///
    /// **Every user who can write to `dir` can run code in this process**: they can place an
    /// entry under a key this process will look up. Use it only for a directory whose writers
    /// you trust as much as yourself (a team's build cache with a group of its own, say), and
    /// [`new`](Self::new) everywhere else. Entries are still opened without following a link,
    /// must be regular files and must not be writable by every user; they are written as the
    /// umask says, so that the other users can read them.
    ///
    /// Fails with [`Error::Cache`] if the directory cannot be made, is not a directory or is a
    /// symbolic link.
    pub fn new_shared(dir: impl Into<PathBuf>, max_bytes: u64) -> Result<Self> {
        Self::open(dir.into(), max_bytes, Trust::Shared)
    }

    fn open(dir: PathBuf, max_bytes: u64, trust: Trust) -> Result<Self> {
        // An absolute path keeps its meaning if the process changes directory.
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let handle = trust::open_dir(&dir, trust, true).map_err(|r| refused(&dir, r))?;
        Ok(FileStreamProgramCache {
            dir,
            max_bytes,
            trust,
            handle: RwLock::new(Arc::new(handle)),
            warned: AtomicBool::new(false),
            failed_puts: AtomicU64::new(0),
            refusal_warned: AtomicBool::new(false),
            refused_entries: AtomicU64::new(0),
            inventory: Mutex::new(Inventory::default()),
        })
    }

    /// The default directory: `$XDG_CACHE_HOME/cuda-core/programs`, else
    /// `$HOME/.cache/cuda-core/programs`.
    ///
    /// `XDG_CACHE_HOME` counts only when it is an absolute path, as the XDG base directory
    /// specification says. Fails with [`Error::Cache`] when neither variable gives a
    /// directory.
    pub fn default_dir() -> Result<PathBuf> {
        default_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")).ok_or_else(
            || {
                cache_error(
                    Path::new("$HOME/.cache/cuda-core/programs"),
                    "neither XDG_CACHE_HOME nor HOME is set; give FileStreamProgramCache::new a \
                 directory"
                        .to_string(),
                )
            },
        )
    }

    /// A cache in [`FileStreamProgramCache::default_dir`], trusted as [`new`](Self::new)
    /// trusts (the directories it makes there are `0700`).
    pub fn open_default(max_bytes: u64) -> Result<Self> {
        Self::new(Self::default_dir()?, max_bytes)
    }

    /// The cache's directory (absolute where it could be made so).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The bound given to [`FileStreamProgramCache::new`].
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Whether the cache was opened by [`new_shared`](Self::new_shared).
    pub fn is_shared(&self) -> bool {
        self.trust == Trust::Shared
    }

    /// The sum of the sizes of the entry files in the directory now (0 if it cannot be read).
    ///
    /// Other processes may change it at any moment.
    pub fn size_bytes(&self) -> u64 {
        self.inventory()
            .scan(&self.handle(), &self.dir, false)
            .unwrap_or(0)
    }

    /// How many writes this cache has failed (and dropped) so far.
    pub fn failed_puts(&self) -> u64 {
        self.failed_puts.load(Ordering::Relaxed)
    }

    /// How many times this cache has refused to read an entry for who could have written it
    /// (a symbolic link, not a regular file, another owner, writable by others: see
    /// [Whom it trusts](Self#whom-it-trusts)); each was a miss.
    pub fn refused_entries(&self) -> u64 {
        self.refused_entries.load(Ordering::Relaxed)
    }

    /// The path of `key`'s entry file.
    #[cfg(test)]
    fn entry_path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(key.to_hex())
    }

    /// The open directory.
    fn handle(&self) -> Arc<OwnedFd> {
        Arc::clone(&self.handle.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Opens the directory again (it was deleted: a user clearing the cache), making it first
    /// where `create` says so, with the same checks as at first, and uses it from now on.
    fn reopen(&self, create: bool) -> std::result::Result<Arc<OwnedFd>, trust::Refused> {
        let fd = Arc::new(trust::open_dir(&self.dir, self.trust, create)?);
        *self.handle.write().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&fd);
        Ok(fd)
    }

    /// Writes an entry to a temporary file and renames it over the entry's name.
    fn write_entry(&self, key: &CacheKey, value: &[u8]) -> io::Result<()> {
        let mut dir = self.handle();
        let (temp, file) = match self.create_temp(&dir) {
            // In a deleted directory nothing can be made: make it again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                dir = self
                    .reopen(true)
                    .map_err(|r| r.source.unwrap_or_else(|| io::Error::other(r.reason)))?;
                self.create_temp(&dir)?
            }
            other => other?,
        };
        let result = write_and_rename(file, &dir, &temp, &key.to_hex(), value);
        if result.is_err() {
            // Best effort: a temporary file left behind is deleted by a later scan.
            let _ = trust::remove_at(&*dir, &temp);
        }
        result?;
        sync_dir(&dir, &self.dir);
        Ok(())
    }

    /// Creates a new temporary file in the directory, named by this process's id, a counter
    /// and a random number.
    fn create_temp(&self, dir: &OwnedFd) -> io::Result<(String, File)> {
        self.create_temp_named(dir, || trust::unique_name(TEMP_PREFIX))
    }

    /// Creates a new file named by `name` in the directory, trying up to eight names where
    /// one is taken.
    fn create_temp_named(
        &self,
        dir: &OwnedFd,
        mut name: impl FnMut() -> String,
    ) -> io::Result<(String, File)> {
        let mut last_error = None;
        for _ in 0..8 {
            let name = name();
            match trust::create_file_at(dir, &name, self.trust) {
                Ok(file) => return Ok((name, file)),
                // Left by a dead process that had the same id: try another name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| io::Error::other("no free temporary file name")))
    }

    fn inventory(&self) -> MutexGuard<'_, Inventory> {
        self.inventory.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After a write of `written` bytes under `keep`: deletes the least recently used entries,
    /// but not `keep`, until the entries fit, where they may not. The directory is listed (and
    /// entries evicted) only where [`Inventory::lists_after_write`] says so.
    fn enforce_bound(&self, keep: &CacheKey, written: u64) {
        let mut inventory = self.inventory();
        if !inventory.lists_after_write(written, self.max_bytes) {
            return;
        }
        match inventory.scan(&self.handle(), &self.dir, true) {
            Ok(total) => inventory.evict(&self.handle(), &self.dir, self.max_bytes, total, keep),
            Err(e) => log::debug!("program cache at {}: cannot scan: {e}", self.dir.display()),
        }
    }

    fn put_failed(&self, key: &CacheKey, error: &io::Error) {
        self.failed_puts.fetch_add(1, Ordering::Relaxed);
        if self.warned.swap(true, Ordering::Relaxed) {
            log::debug!(
                "program cache at {}: cannot store {key}: {error}",
                self.dir.display()
            );
        } else {
            log::warn!(
                "program cache at {}: cannot store a compiled program ({error}); it will be \
                 compiled again next time. Later failures of this cache are logged at debug \
                 level only",
                self.dir.display()
            );
        }
    }

    /// An entry not read for who could have written it: a miss, counted and logged.
    fn refuse(&self, key: &CacheKey, reason: &str) {
        self.refused_entries.fetch_add(1, Ordering::Relaxed);
        if self.refusal_warned.swap(true, Ordering::Relaxed) {
            log::debug!(
                "program cache at {}: not loading {key}: {reason}",
                self.dir.display()
            );
        } else {
            log::warn!(
                "program cache at {}: not loading the entry {key}: {reason}. It is a miss and \
                 is compiled again; an entry that someone else could have written is never \
                 loaded. Later refusals of this cache are logged at debug level only",
                self.dir.display()
            );
        }
    }

    /// Deletes the entry file `name` that `file` read, unless it has been replaced since.
    fn remove_corrupt(&self, dir: &OwnedFd, name: &str, file: &File) {
        let same = match (trust::status(file), trust::status_at(dir, name)) {
            (Ok(read), Ok(now)) => read.dev == now.dev && read.ino == now.ino,
            _ => false,
        };
        if !same {
            return;
        }
        if let Err(e) = delete(dir, name) {
            log::debug!(
                "program cache at {}: cannot delete the corrupt entry {name}: {e}",
                self.dir.display()
            );
        }
    }
}

impl ProgramCache for FileStreamProgramCache {
    fn get(&self, key: &CacheKey) -> Option<Vec<u8>> {
        let name = key.to_hex();
        let dir = self.handle();
        let mut file = match trust::open_file_at(&*dir, &name) {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                self.refuse(key, "it is a symbolic link");
                return None;
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    log::debug!(
                        "program cache at {}: cannot open {key}: {e}",
                        self.dir.display()
                    );
                }
                return None;
            }
        };
        match read_entry(&mut file, self.max_bytes, self.trust) {
            Ok(value) => {
                // Mark the use, for eviction.
                if let Err(e) = file.set_modified(SystemTime::now()) {
                    log::debug!(
                        "program cache at {}: cannot mark {key} as used: {e}",
                        self.dir.display()
                    );
                }
                Some(value)
            }
            Err(EntryError::Corrupt(reason)) => {
                log::info!(
                    "program cache at {}: deleting the corrupt entry {key}: {reason}",
                    self.dir.display()
                );
                self.remove_corrupt(&dir, &name, &file);
                None
            }
            Err(EntryError::Io(e)) => {
                log::debug!(
                    "program cache at {}: cannot read {key}: {e}",
                    self.dir.display()
                );
                None
            }
            Err(EntryError::Untrusted(reason)) => {
                self.refuse(key, &reason);
                None
            }
        }
    }

    fn put(&self, key: &CacheKey, value: &[u8]) {
        let size = HEADER_LEN as u64 + value.len() as u64;
        if size > self.max_bytes {
            log::debug!(
                "program cache at {}: not storing {key}: {size} bytes is more than the bound of \
                 {} bytes",
                self.dir.display(),
                self.max_bytes
            );
            return;
        }
        match self.write_entry(key, value) {
            Ok(()) => self.enforce_bound(key, size),
            Err(e) => self.put_failed(key, &e),
        }
    }

    fn remove(&self, key: &CacheKey) {
        if let Err(e) = delete(&self.handle(), &key.to_hex()) {
            log::debug!(
                "program cache at {}: cannot remove {key}: {e}",
                self.dir.display()
            );
        }
    }

    /// Deletes every entry file (and stale temporary files); other files in the directory are
    /// left alone. A directory that does not exist is already clear; one deleted and made
    /// again since the cache opened it is opened (and checked) again.
    fn clear(&self) -> Result<()> {
        let mut dir = self.handle();
        if trust::deleted(&*dir) {
            match self.reopen(false) {
                Ok(fd) => dir = fd,
                Err(r)
                    if r.source.as_ref().map(io::Error::kind) == Some(io::ErrorKind::NotFound) =>
                {
                    return Ok(())
                }
                Err(r) => return Err(refused(&self.dir, r)),
            }
        }
        let names = match trust::names(&*dir) {
            Ok(names) => names,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&self.dir, "cannot list the directory", e)),
        };
        let mut first_error = None;
        for name in names.iter().filter(|name| entry_key(name).is_some()) {
            if let Err(e) = delete(&dir, name) {
                first_error.get_or_insert_with(|| {
                    io_error(&self.dir, &format!("cannot delete {name}"), e)
                });
            }
        }
        // Also deletes temporary files left by dead writers.
        let _ = self.inventory().scan(&self.handle(), &self.dir, true);
        first_error.map_or(Ok(()), Err)
    }
}

/// Why an entry could not be read.
enum EntryError {
    /// The file is not a whole, valid entry: it is deleted.
    Corrupt(&'static str),
    /// Reading failed for another reason: the entry is left alone.
    Io(io::Error),
    /// Not a file the cache trusts (not a regular file, another owner, writable by others):
    /// a miss, left alone, never read.
    Untrusted(String),
}

impl From<io::Error> for EntryError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            EntryError::Corrupt("shorter than its header says")
        } else {
            EntryError::Io(e)
        }
    }
}

/// Reads and checks a whole entry: a regular file the cache trusts (one `fstat`), no larger
/// than the cache's bound (no entry put here is), whose header gives its own length and
/// checksum. Who wrote it and its size are checked before a byte is read.
fn read_entry(file: &mut File, max_bytes: u64, trust: Trust) -> Result<Vec<u8>, EntryError> {
    let status = trust::status(&*file)?;
    if let Some(reason) = trust::untrusted_file(&status, trust) {
        return Err(EntryError::Untrusted(reason));
    }
    let file_len = status.len;
    if file_len > max_bytes {
        return Err(EntryError::Corrupt("larger than the cache's bound"));
    }
    let Some(payload_len) = file_len.checked_sub(HEADER_LEN as u64) else {
        return Err(EntryError::Corrupt("shorter than a header"));
    };
    let mut header = [0u8; HEADER_LEN];
    file.read_exact(&mut header)?;
    entry::check_header(&header, payload_len).map_err(EntryError::Corrupt)?;
    let Ok(payload_len) = usize::try_from(payload_len) else {
        return Err(EntryError::Corrupt("too large for this machine"));
    };
    let mut payload = Vec::new();
    payload
        .try_reserve_exact(payload_len)
        .map_err(|e| EntryError::Io(io::Error::new(io::ErrorKind::OutOfMemory, e)))?;
    // One byte more than expected shows a file that grew while being read.
    file.take(payload_len as u64 + 1)
        .read_to_end(&mut payload)?;
    if payload.len() != payload_len {
        return Err(EntryError::Corrupt(
            "its length is not the one in its header",
        ));
    }
    if !entry::checksum_matches(&header, &payload) {
        return Err(EntryError::Corrupt("checksum mismatch"));
    }
    Ok(payload)
}

/// Fills a temporary file, flushes it to disk and renames it to `name`, both in `dir`.
fn write_and_rename(
    mut file: File,
    dir: &OwnedFd,
    temp: &str,
    name: &str,
    value: &[u8],
) -> io::Result<()> {
    file.write_all(&header(value))?;
    file.write_all(value)?;
    // Writes set the time too, but only to the kernel's coarse clock (a tick, milliseconds):
    // a precise time keeps entries written in quick succession in order for eviction.
    let _ = file.set_modified(SystemTime::now());
    file.sync_all()?;
    drop(file);
    trust::rename_at(dir, temp, name)
}

/// Flushes a directory's entries (the rename) to disk.
fn sync_dir(dir: &OwnedFd, path: &Path) {
    if let Err(e) = rustix::fs::fsync(dir) {
        log::debug!(
            "program cache at {}: cannot sync the directory: {e}",
            path.display()
        );
    }
}

/// The directory for NVRTC's automatic precompiled headers: `pch` beside the default cache
/// directory (`$XDG_CACHE_HOME/cuda-core/pch`, else `$HOME/.cache/cuda-core/pch`).
pub(crate) fn default_pch_dir() -> Result<PathBuf> {
    let programs = FileStreamProgramCache::default_dir()?;
    Ok(programs.with_file_name("pch"))
}

/// The directory for NVRTC's bundled headers, each NVRTC version's below it: `nvrtc-headers`
/// beside the default cache directory (`$XDG_CACHE_HOME/cuda-core/nvrtc-headers`, else
/// `$HOME/.cache/cuda-core/nvrtc-headers`).
pub(crate) fn default_bundled_headers_dir() -> Result<PathBuf> {
    let programs = FileStreamProgramCache::default_dir()?;
    Ok(programs.with_file_name("nvrtc-headers"))
}

fn default_dir_from(xdg_cache_home: Option<OsString>, home: Option<OsString>) -> Option<PathBuf> {
    let base = match xdg_cache_home.map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => xdg,
        _ => PathBuf::from(home.filter(|home| !home.is_empty())?).join(".cache"),
    };
    Some(base.join("cuda-core").join("programs"))
}

fn cache_error(path: &Path, reason: String) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        reason,
        source: None,
    }
}

/// The error for a directory the cache does not trust or cannot open.
fn refused(path: &Path, refused: trust::Refused) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        reason: refused.reason,
        source: refused.source.map(crate::error::Cause::new),
    }
}

/// A cache error caused by an I/O error, which it keeps as its source.
fn io_error(path: &Path, what: &str, error: io::Error) -> Error {
    Error::Cache {
        path: path.to_path_buf(),
        reason: format!("{what}: {error}"),
        source: Some(crate::error::Cause::new(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::directory::{LIST_AFTER, LIST_ALWAYS_UP_TO};
    use sha2::{Digest, Sha256};
    use std::fs;
    use std::time::{Duration, Instant};

    #[test]
    fn default_dir_prefers_an_absolute_xdg_cache_home() {
        let dir = |xdg: Option<&str>, home: Option<&str>| {
            default_dir_from(xdg.map(OsString::from), home.map(OsString::from))
        };
        assert_eq!(
            dir(Some("/xdg"), Some("/home/u")),
            Some(PathBuf::from("/xdg/cuda-core/programs"))
        );
        assert_eq!(
            dir(None, Some("/home/u")),
            Some(PathBuf::from("/home/u/.cache/cuda-core/programs"))
        );
        assert_eq!(
            dir(Some(""), Some("/home/u")),
            Some(PathBuf::from("/home/u/.cache/cuda-core/programs"))
        );
        assert_eq!(
            dir(Some("relative"), Some("/home/u")),
            Some(PathBuf::from("/home/u/.cache/cuda-core/programs"))
        );
        assert_eq!(dir(None, None), None);
        assert_eq!(dir(None, Some("")), None);
        assert_eq!(dir(Some("relative"), None), None);
    }

    #[test]
    fn entry_layout() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        let key = CacheKey([7; 32]);
        cache.put(&key, b"payload");
        let bytes = fs::read(dir.path().join(key.to_hex())).unwrap();
        assert_eq!(&bytes[..8], b"cucache\x01");
        assert_eq!(&bytes[8..16], &7u64.to_le_bytes());
        assert_eq!(&bytes[16..48], &Sha256::digest(b"payload")[..]);
        assert_eq!(&bytes[48..], b"payload");
        assert_eq!(cache.size_bytes(), 55);
    }

    #[test]
    fn a_deleted_directory_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path().join("a/b"), 1 << 20).unwrap();
        fs::remove_dir_all(dir.path().join("a")).unwrap();
        assert_eq!(cache.get(&CacheKey([1; 32])), None);
        assert_eq!(cache.clear(), Ok(()));
        cache.put(&CacheKey([1; 32]), b"one");
        assert_eq!(cache.get(&CacheKey([1; 32])), Some(b"one".to_vec()));
        assert_eq!(cache.failed_puts(), 0);
    }

    #[test]
    fn an_early_end_of_file_is_a_corrupt_entry_and_other_errors_are_not() {
        assert!(matches!(
            EntryError::from(io::Error::from(io::ErrorKind::UnexpectedEof)),
            EntryError::Corrupt(_)
        ));
        assert!(matches!(
            EntryError::from(io::Error::from(io::ErrorKind::PermissionDenied)),
            EntryError::Io(_)
        ));
    }

    #[test]
    fn the_documented_bounds_and_directory() {
        assert_eq!(
            FileStreamProgramCache::DEFAULT_MAX_BYTES,
            1024 * 1024 * 1024
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            FileStreamProgramCache::new(dir.path(), 12345)
                .unwrap()
                .max_bytes(),
            12345
        );
        // Wherever the environment puts it, it ends as documented.
        if std::env::var_os("HOME").is_some_and(|h| !h.is_empty()) {
            let default = FileStreamProgramCache::default_dir().unwrap();
            assert!(default.is_absolute(), "{}", default.display());
            assert!(
                default.ends_with("cuda-core/programs"),
                "{}",
                default.display()
            );
        }
    }

    #[test]
    fn a_taken_temporary_name_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        for taken in [".tmp-a", ".tmp-b"] {
            fs::write(dir.path().join(taken), b"left by a dead writer").unwrap();
        }
        let mut names = [".tmp-a", ".tmp-b", ".tmp-c"].into_iter().map(String::from);
        let handle = cache.handle();
        let (name, _file) = cache
            .create_temp_named(&handle, || names.next().unwrap())
            .unwrap();
        assert_eq!(name, ".tmp-c");
        // Eight taken names in a row: the error says so.
        let err = cache
            .create_temp_named(&handle, || ".tmp-a".to_owned())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    }

    /// Bugs caught: a large cache under half its bound listing its directory at every put (a
    /// put that grows with the entries held); a put not listing it once its last listing is
    /// old, or once the cache may be half full, so that what other processes wrote would take
    /// the directory past its bound unseen.
    #[test]
    fn a_put_lists_the_directory_where_the_cache_may_be_half_full_or_it_is_time() {
        let dir = tempfile::tempdir().unwrap();
        let entry = HEADER_LEN as u64 + 10;
        let cache = FileStreamProgramCache::new(dir.path(), 1000 * entry).unwrap();
        let key = |n: u32| CacheKey::builder().field("n", &n.to_le_bytes()).finish();
        let many = LIST_ALWAYS_UP_TO as u32 + 50;
        for n in 0..many {
            cache.put(&key(n), &[1; 10]);
        }
        // Another process writes an entry of 600 entries' bytes.
        fs::write(
            dir.path().join(key(9999).to_hex()),
            vec![0u8; 600 * entry as usize],
        )
        .unwrap();
        let listed = cache.inventory().listed;
        cache.put(&key(many), &[1; 10]);
        let inventory = cache.inventory();
        assert_eq!(
            inventory.listed, listed,
            "a cache under half its bound was listed"
        );
        assert_eq!(inventory.estimate, u64::from(many + 1) * entry);
        drop(inventory);
        // An old listing: the next put lists, and counts the other process's entry.
        let Some(old) = Instant::now().checked_sub(LIST_AFTER + Duration::from_secs(1)) else {
            return; // The machine started less than half a minute ago.
        };
        cache.inventory().listed = Some(old);
        cache.put(&key(many + 1), &[1; 10]);
        let after = cache.inventory().estimate;
        assert_eq!(after, u64::from(many + 2 + 600) * entry);
        // More than half full: each put lists, and so sees the other process's next entry
        // and evicts for it.
        let listed = cache.inventory().listed;
        fs::write(
            dir.path().join(key(9998).to_hex()),
            vec![0u8; 300 * entry as usize],
        )
        .unwrap();
        cache.put(&key(many + 2), &[1; 10]);
        assert_ne!(
            cache.inventory().listed,
            listed,
            "a half-full cache was not listed"
        );
        assert!(cache.size_bytes() <= 1000 * entry, "the bound was passed");
        assert_eq!(cache.failed_puts(), 0);
    }

    #[test]
    fn a_corrupt_entry_replaced_since_it_was_read_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        let key = CacheKey([3; 32]);
        let path = cache.entry_path(&key);
        fs::write(&path, b"corrupt").unwrap();
        let read = File::open(&path).unwrap();
        // Another writer renames a good entry over it: same directory, another file.
        let good = dir.path().join(".tmp-good");
        fs::write(&good, b"good").unwrap();
        fs::rename(&good, &path).unwrap();
        let name = key.to_hex();
        cache.remove_corrupt(&cache.handle(), &name, &read);
        assert_eq!(fs::read(&path).unwrap(), b"good");
        // Not replaced: deleted.
        let read = File::open(&path).unwrap();
        cache.remove_corrupt(&cache.handle(), &name, &read);
        assert!(!path.exists());
    }
}
