//! Program caches: compiled programs kept by a [`CacheKey`] that hashes everything they were
//! compiled from.
//!
//! A [`ProgramCache`] maps keys to bytes (a cubin, PTX or fatbin). Two are provided:
//!
//! | cache | where | bound | shared by |
//! | --- | --- | --- | --- |
//! | [`InMemoryProgramCache`] | this process's memory | bytes, least recently used out first | this process's threads |
//! | [`FileStreamProgramCache`] | one file per entry in a directory | bytes, least recently used out first | threads and processes |
//!
//! The file cache lives in `$XDG_CACHE_HOME/cuda-core/programs`, or
//! `$HOME/.cache/cuda-core/programs` where `XDG_CACHE_HOME` is not set
//! ([`FileStreamProgramCache::default_dir`]), unless it is given a directory. Clear it with
//! [`ProgramCache::clear`], or by deleting the directory (`rm -rf ~/.cache/cuda-core/programs`)
//! while no program uses it.
//!
//! Caches never fail their caller over the cache itself: an entry that cannot be read is a
//! miss, and one that cannot be written is dropped (with one warning through the `log` crate).
//!
//! ```
//! use cuda_core::{cache::{CacheKey, FileStreamProgramCache, ProgramCache}};
//!
//! let dir = tempfile::tempdir()?;
//! let cache = FileStreamProgramCache::new(dir.path(), 256 << 20)?;
//! let key = CacheKey::builder()
//!     .field("source", b"extern \"C\" __global__ void k() {}")
//!     .field("arch", b"sm_90")
//!     .finish();
//! let compiled = match cache.get(&key) {
//!     Some(bytes) => bytes,
//!     None => {
//!         let bytes = b"...the compiler's output...".to_vec();
//!         cache.put(&key, &bytes);
//!         bytes
//!     }
//! };
//! assert_eq!(cache.get(&key), Some(compiled));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod directory;
pub(crate) mod entry;
mod file;
mod key;
mod memory;

use std::fmt;

pub use file::FileStreamProgramCache;
pub(crate) use file::{default_bundled_headers_dir, default_pch_dir};
pub use key::{CacheKey, CacheKeyBuilder};
pub use memory::InMemoryProgramCache;

use crate::error::Result;
use crate::object_code::ObjectCode;

/// A store of compiled programs by [`CacheKey`].
///
/// A cache is only ever an optimisation: `get` answers a miss for anything it cannot read or
/// finds corrupt, and `put` and `remove` never report failures to the caller. Implementations
/// log what goes wrong through the `log` crate, and warn at most once per cache.
pub trait ProgramCache: Send + Sync + fmt::Debug {
    /// The bytes stored under `key`, or `None`: a miss for anything unreadable or corrupt.
    fn get(&self, key: &CacheKey) -> Option<Vec<u8>>;

    /// Stores `value` under `key`, replacing any value there, as a best effort: failures are
    /// logged (warned once per cache), never returned.
    fn put(&self, key: &CacheKey, value: &[u8]);

    /// Drops the entry of `key`, if there is one.
    fn remove(&self, key: &CacheKey);

    /// Drops every entry.
    fn clear(&self) -> Result<()>;

    /// The entry as object code: by default [`ProgramCache::get`] and a parse (a malformed
    /// entry is a miss); [`InMemoryProgramCache`] keeps the loaded code itself.
    fn get_code(&self, key: &CacheKey) -> Option<ObjectCode> {
        self.get(key).as_deref().and_then(entry::decode)
    }

    /// Stores object code: by default its serialised form through [`ProgramCache::put`].
    fn put_code(&self, key: &CacheKey, code: &ObjectCode) {
        self.put(key, &entry::encode(code));
    }
}
