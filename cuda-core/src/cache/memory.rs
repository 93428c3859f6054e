//! `InMemoryProgramCache`: a byte-bounded LRU map inside the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{CacheKey, ProgramCache};
use crate::error::Result;
use crate::object_code::ObjectCode;

/// A program cache in this process's memory, bounded in bytes (the sum of the values' lengths),
/// dropping the least recently used entries first.
///
/// Thread-safe: share it by reference or in an `Arc`. A value larger than the bound is not
/// stored.
///
/// ```
/// use cuda_core::{cache::{CacheKey, InMemoryProgramCache, ProgramCache}};
///
/// let cache = InMemoryProgramCache::new(64 << 20);
/// let key = CacheKey::builder().field("source", b"...").finish();
/// assert_eq!(cache.get(&key), None);
/// cache.put(&key, b"compiled program");
/// assert_eq!(cache.get(&key).as_deref(), Some(&b"compiled program"[..]));
/// assert_eq!(cache.size_bytes(), 16);
/// ```
#[derive(Debug)]
pub struct InMemoryProgramCache {
    max_bytes: usize,
    inner: Mutex<Lru>,
}

/// The entries, and their order of use.
#[derive(Debug, Default)]
struct Lru {
    /// Each key's value and the tick of its last use.
    entries: HashMap<CacheKey, (Vec<u8>, u64)>,
    /// The object code of an entry, kept (loaded) once asked for as code: a hit then costs no
    /// parse and no library load. Evicted with its entry.
    codes: HashMap<CacheKey, ObjectCode>,
    /// Keys by the tick of their last use: the first is the least recently used.
    order: BTreeMap<u64, CacheKey>,
    /// The next tick; ticks only grow.
    tick: u64,
    /// The sum of the values' lengths.
    size: usize,
}

impl Lru {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn remove(&mut self, key: &CacheKey) {
        self.codes.remove(key);
        if let Some((value, tick)) = self.entries.remove(key) {
            self.order.remove(&tick);
            self.size -= value.len();
        }
    }
}

impl InMemoryProgramCache {
    /// An empty cache holding at most `max_bytes` bytes of values.
    pub fn new(max_bytes: usize) -> Self {
        InMemoryProgramCache {
            max_bytes,
            inner: Mutex::new(Lru::default()),
        }
    }

    /// The bound given to [`InMemoryProgramCache::new`].
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the cache holds no entry.
    pub fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// The sum of the stored values' lengths; never more than [`max_bytes`](Self::max_bytes).
    pub fn size_bytes(&self) -> usize {
        self.lock().size
    }

    /// Whether `key` has an entry, without counting as a use.
    pub fn contains(&self, key: &CacheKey) -> bool {
        self.lock().entries.contains_key(key)
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        // Every update leaves the map consistent before anything that could panic, so the
        // state behind a poisoned lock is still good.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ProgramCache for InMemoryProgramCache {
    fn get(&self, key: &CacheKey) -> Option<Vec<u8>> {
        let mut lru = self.lock();
        let tick = lru.next_tick();
        let Lru { entries, order, .. } = &mut *lru;
        let (value, last_use) = entries.get_mut(key)?;
        order.remove(last_use);
        order.insert(tick, *key);
        *last_use = tick;
        Some(value.clone())
    }

    fn put(&self, key: &CacheKey, value: &[u8]) {
        let mut lru = self.lock();
        // The key's old value goes whether or not the new one fits.
        lru.remove(key);
        if value.len() > self.max_bytes {
            log::debug!(
                "in-memory program cache: not storing {key}: {} bytes is more than the bound \
                 of {} bytes",
                value.len(),
                self.max_bytes
            );
            return;
        }
        while lru.size + value.len() > self.max_bytes {
            let Some((_, oldest)) = lru.order.pop_first() else {
                break;
            };
            lru.codes.remove(&oldest);
            if let Some((old, _)) = lru.entries.remove(&oldest) {
                lru.size -= old.len();
            }
        }
        let tick = lru.next_tick();
        lru.entries.insert(*key, (value.to_vec(), tick));
        lru.order.insert(tick, *key);
        lru.size += value.len();
    }

    fn get_code(&self, key: &CacheKey) -> Option<ObjectCode> {
        let mut lru = self.lock();
        let tick = lru.next_tick();
        let Lru {
            entries,
            order,
            codes,
            ..
        } = &mut *lru;
        let (value, last_use) = entries.get_mut(key)?;
        order.remove(last_use);
        order.insert(tick, *key);
        *last_use = tick;
        if let Some(code) = codes.get(key) {
            return Some(code.clone());
        }
        let code = super::entry::decode(value)?;
        codes.insert(*key, code.clone());
        Some(code)
    }

    fn put_code(&self, key: &CacheKey, code: &ObjectCode) {
        self.put(key, &super::entry::encode(code));
        let mut lru = self.lock();
        if lru.entries.contains_key(key) {
            lru.codes.insert(*key, code.clone());
        }
    }

    fn remove(&self, key: &CacheKey) {
        self.lock().remove(key);
    }

    fn clear(&self) -> Result<()> {
        let mut lru = self.lock();
        lru.entries.clear();
        lru.codes.clear();
        lru.order.clear();
        lru.size = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> CacheKey {
        CacheKey([n; 32])
    }

    #[test]
    fn reports_its_bound_and_whether_it_is_empty() {
        let cache = InMemoryProgramCache::new(1234);
        assert_eq!(cache.max_bytes(), 1234);
        assert!(cache.is_empty());
        cache.put(&key(1), &[1; 10]);
        assert!(!cache.is_empty());
        assert_eq!((cache.len(), cache.size_bytes()), (1, 10));
        cache.remove(&key(1));
        assert!(cache.is_empty());
    }

    #[test]
    fn evicts_least_recently_used() {
        let cache = InMemoryProgramCache::new(30);
        cache.put(&key(1), &[1; 10]);
        cache.put(&key(2), &[2; 10]);
        cache.put(&key(3), &[3; 10]);
        assert_eq!(cache.get(&key(1)), Some(vec![1; 10]));
        cache.put(&key(4), &[4; 10]);
        assert!(!cache.contains(&key(2)));
        assert!(cache.contains(&key(1)) && cache.contains(&key(3)) && cache.contains(&key(4)));
        assert_eq!((cache.len(), cache.size_bytes()), (3, 30));
    }

    #[test]
    fn too_large_values_are_not_stored_and_replace_nothing() {
        let cache = InMemoryProgramCache::new(8);
        cache.put(&key(1), &[1; 8]);
        cache.put(&key(2), &[2; 9]);
        assert_eq!(cache.get(&key(1)), Some(vec![1; 8]));
        assert_eq!(cache.get(&key(2)), None);
        cache.put(&key(1), &[1; 9]);
        assert!(cache.is_empty());
        assert_eq!(cache.size_bytes(), 0);
    }

    #[test]
    fn remove_and_clear() {
        let cache = InMemoryProgramCache::new(100);
        cache.put(&key(1), b"one");
        cache.put(&key(2), b"two");
        cache.remove(&key(1));
        cache.remove(&key(9));
        assert_eq!((cache.len(), cache.size_bytes()), (1, 3));
        cache.clear().unwrap();
        assert_eq!((cache.len(), cache.size_bytes()), (0, 0));
        assert_eq!(cache.get(&key(2)), None);
    }

    #[test]
    fn survives_a_poisoned_lock() {
        let cache = std::sync::Arc::new(InMemoryProgramCache::new(100));
        cache.put(&key(1), b"one");
        let poisoner = std::sync::Arc::clone(&cache);
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.inner.lock();
            panic!("poison the lock");
        })
        .join();
        assert!(cache.inner.is_poisoned());
        assert_eq!(cache.get(&key(1)), Some(b"one".to_vec()));
        cache.put(&key(2), b"two");
        assert_eq!(cache.len(), 2);
    }
}
