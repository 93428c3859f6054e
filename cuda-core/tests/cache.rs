//! Program caches: keys, the in-memory LRU, and the file cache under corruption, many threads,
//! many processes and an unwritable directory. CPU only.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Once};

use crate::common;
use cuda_core::{
    cache::{CacheKey, FileStreamProgramCache, InMemoryProgramCache, ProgramCache},
    Error,
};
use proptest::prelude::*;
use proptest::sample::Index;

/// Bytes of an entry file's header (magic, length, SHA-256).
const HEADER: u64 = 48;

// ---------------------------------------------------------------------------------------------
// Keys

fn key_of(fields: &[(String, Vec<u8>)]) -> CacheKey {
    fields
        .iter()
        .fold(CacheKey::builder(), |builder, (name, value)| {
            builder.field(name, value)
        })
        .finish()
}

fn fields() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec(
        ("[a-c]{0,3}", prop::collection::vec(any::<u8>(), 0..6)),
        0..5,
    )
}

proptest! {
    #[test]
    fn equal_fields_give_equal_keys(fields in fields()) {
        prop_assert_eq!(key_of(&fields), key_of(&fields.clone()));
        let key = key_of(&fields);
        prop_assert_eq!(CacheKey::from_hex(&key.to_hex()), Some(key));
    }

    #[test]
    fn changing_a_value_changes_the_key(
        fields in fields().prop_filter("a field", |f| !f.is_empty()),
        at in any::<Index>(),
        new_value in prop::collection::vec(any::<u8>(), 0..6),
    ) {
        let i = at.index(fields.len());
        prop_assume!(fields[i].1 != new_value);
        let mut changed = fields.clone();
        changed[i].1 = new_value;
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    #[test]
    fn changing_a_name_changes_the_key(
        fields in fields().prop_filter("a field", |f| !f.is_empty()),
        at in any::<Index>(),
        new_name in "[a-c]{0,3}",
    ) {
        let i = at.index(fields.len());
        prop_assume!(fields[i].0 != new_name);
        let mut changed = fields.clone();
        changed[i].0 = new_name;
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    /// `("x", "ab"), ("y", "c")` and `("x", "a"), ("y", "bc")` differ.
    #[test]
    fn moving_bytes_between_two_values_changes_the_key(
        fields in fields().prop_filter("two fields", |f| f.len() >= 2),
        at in any::<Index>(),
        split in any::<Index>(),
    ) {
        let i = at.index(fields.len() - 1);
        let joined = [fields[i].1.clone(), fields[i + 1].1.clone()].concat();
        let k = split.index(joined.len() + 1);
        prop_assume!(k != fields[i].1.len());
        let mut changed = fields.clone();
        changed[i].1 = joined[..k].to_vec();
        changed[i + 1].1 = joined[k..].to_vec();
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    /// One field split in two, with the same name, differs from the whole field.
    #[test]
    fn splitting_a_value_into_two_fields_changes_the_key(
        fields in fields().prop_filter("a field", |f| !f.is_empty()),
        at in any::<Index>(),
        split in any::<Index>(),
    ) {
        let i = at.index(fields.len());
        let (name, value) = fields[i].clone();
        let k = split.index(value.len() + 1);
        let mut changed = fields.clone();
        changed.splice(i..=i, [(name.clone(), value[..k].to_vec()), (name, value[k..].to_vec())]);
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    /// `("ab", "c")` and `("a", "bc")` differ.
    #[test]
    fn moving_bytes_between_name_and_value_changes_the_key(
        fields in fields().prop_filter("a named field", |f| f.iter().any(|(n, _)| !n.is_empty())),
        at in any::<Index>(),
    ) {
        let named: Vec<usize> = (0..fields.len()).filter(|&i| !fields[i].0.is_empty()).collect();
        let i = named[at.index(named.len())];
        let mut changed = fields.clone();
        let moved = changed[i].0.pop().expect("a non-empty name");
        changed[i].1.insert(0, moved as u8);
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    #[test]
    fn field_order_matters(
        fields in fields().prop_filter("two fields", |f| f.len() >= 2),
        a in any::<Index>(),
        b in any::<Index>(),
    ) {
        let (i, j) = (a.index(fields.len()), b.index(fields.len()));
        prop_assume!(fields[i] != fields[j]);
        let mut changed = fields.clone();
        changed.swap(i, j);
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }

    #[test]
    fn adding_a_field_changes_the_key(
        fields in fields(),
        at in any::<Index>(),
        name in "[a-c]{0,3}",
        value in prop::collection::vec(any::<u8>(), 0..6),
    ) {
        let mut changed = fields.clone();
        changed.insert(at.index(fields.len() + 1), (name, value));
        prop_assert_ne!(key_of(&fields), key_of(&changed));
    }
}

// ---------------------------------------------------------------------------------------------
// In-memory LRU

fn small_key(n: u8) -> CacheKey {
    CacheKey::builder().field("n", &[n]).finish()
}

/// The value put as the `version`th write of key `n`: recognisable bytes.
fn versioned_value(n: u8, version: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ n ^ (version as u8))
        .collect()
}

#[derive(Clone, Debug)]
enum Op {
    Put(u8, usize),
    Get(u8),
    Remove(u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..8u8, 0..70usize).prop_map(|(k, len)| Op::Put(k, len)),
            4 => (0..8u8).prop_map(Op::Get),
            1 => (0..8u8).prop_map(Op::Remove),
        ],
        0..60,
    )
}

proptest! {
    /// Checked against a plain model: a list from least to most recently used.
    #[test]
    fn in_memory_lru_stays_bounded_and_keeps_the_most_recent(
        max_bytes in 0..200usize,
        ops in ops(),
    ) {
        let cache = InMemoryProgramCache::new(max_bytes);
        let mut model: Vec<(u8, Vec<u8>)> = Vec::new();
        for (version, op) in ops.into_iter().enumerate() {
            match op {
                Op::Put(n, len) => {
                    let value = versioned_value(n, version, len);
                    cache.put(&small_key(n), &value);
                    model.retain(|(m, _)| *m != n);
                    if len <= max_bytes {
                        model.push((n, value.clone()));
                        while model.iter().map(|(_, v)| v.len()).sum::<usize>() > max_bytes {
                            model.remove(0);
                        }
                        // The entry just put fits, so it is there.
                        prop_assert_eq!(cache.get(&small_key(n)), Some(value));
                    } else {
                        prop_assert_eq!(cache.get(&small_key(n)), None);
                    }
                }
                Op::Get(n) => {
                    let expected = model.iter().position(|(m, _)| *m == n).map(|at| {
                        let entry = model.remove(at);
                        model.push(entry.clone());
                        entry.1
                    });
                    prop_assert_eq!(cache.get(&small_key(n)), expected);
                }
                Op::Remove(n) => {
                    cache.remove(&small_key(n));
                    model.retain(|(m, _)| *m != n);
                }
            }
            prop_assert!(cache.size_bytes() <= max_bytes);
            prop_assert_eq!(
                cache.size_bytes(),
                model.iter().map(|(_, v)| v.len()).sum::<usize>()
            );
            prop_assert_eq!(cache.len(), model.len());
        }
    }
}

#[test]
fn in_memory_cache_is_shared_by_threads() {
    let cache = Arc::new(InMemoryProgramCache::new(20_000));
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let cache = Arc::clone(&cache);
            scope.spawn(move || {
                let mut rng = Rng(t + 1);
                for _ in 0..2000 {
                    let k = (rng.next() % 16) as u8;
                    let key = small_key(k);
                    if rng.next() % 2 == 0 {
                        cache.put(&key, &value_of(k));
                    } else if let Some(value) = cache.get(&key) {
                        assert_eq!(value, value_of(k));
                    }
                    assert!(cache.size_bytes() <= 20_000);
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// File cache: corruption

#[derive(Clone, Debug)]
enum Damage {
    /// Cut the file to this many bytes (fewer than it has).
    Truncate(Index),
    /// XOR these bytes with non-zero masks.
    Flip(Vec<(Index, u8)>),
    /// Add bytes at the end.
    Append(Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<Index>().prop_map(Damage::Truncate),
        prop::collection::vec((any::<Index>(), 1..=255u8), 1..4).prop_map(Damage::Flip),
        prop::collection::vec(any::<u8>(), 1..16).prop_map(Damage::Append),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn damaged_entries_are_misses_and_deleted(
        payload in prop::collection::vec(any::<u8>(), 0..3000),
        damage in damage(),
        header_only in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
        let key = CacheKey::builder().field("payload", &payload).finish();
        cache.put(&key, &payload);
        let path = dir.path().join(key.to_hex());
        let original = fs::read(&path).unwrap();
        let mut bytes = original.clone();
        prop_assert_eq!(original.len() as u64, HEADER + payload.len() as u64);
        match damage {
            Damage::Truncate(len) => bytes.truncate(len.index(bytes.len())),
            Damage::Flip(flips) => {
                for (i, mask) in flips {
                    // Half the time, aim at the header.
                    let span = if header_only { HEADER as usize } else { bytes.len() };
                    bytes[i.index(span)] ^= mask;
                }
            }
            Damage::Append(extra) => bytes.extend(extra),
        }
        fs::write(&path, &bytes).unwrap();
        match cache.get(&key) {
            None => prop_assert!(!path.exists(), "a corrupt entry must be deleted"),
            Some(got) => prop_assert_eq!(got, payload.clone(), "a hit must be the bytes put"),
        }
        // Every byte of an entry is checked: any change is a miss. (Two flips of one byte
        // can cancel out.)
        if bytes != original {
            prop_assert!(!path.exists());
        }
        // The cache still works.
        cache.put(&key, &payload);
        prop_assert_eq!(cache.get(&key), Some(payload));
    }
}

#[test]
fn odd_files_in_place_of_entries_are_misses() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    let key = small_key(1);
    let path = dir.path().join(key.to_hex());
    for bytes in [
        &b""[..],
        b"cucache",
        b"cucache\x02 of a later version, or not",
    ] {
        fs::write(&path, bytes).unwrap();
        assert_eq!(cache.get(&key), None);
        assert!(!path.exists());
    }
    // A directory where an entry should be: a miss, left alone, and a put cannot replace it.
    fs::create_dir(&path).unwrap();
    assert_eq!(cache.get(&key), None);
    cache.put(&key, b"value");
    assert_eq!(cache.get(&key), None);
    assert_eq!(cache.failed_puts(), 1);
}

#[test]
fn a_fifo_in_place_of_an_entry_is_a_miss_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap());
    let key = small_key(2);
    let path = dir.path().join(key.to_hex());
    match Command::new("mkfifo").arg(&path).status() {
        Ok(status) if status.success() => {}
        other => return common::not_run("mkfifo", &format!("mkfifo did not run: {other:?}")),
    }
    // An ordinary open of a FIFO waits for a writer that never comes: look from a thread,
    // and give it seconds.
    let (tx, rx) = std::sync::mpsc::channel();
    let looking = Arc::clone(&cache);
    std::thread::spawn(move || {
        let _ = tx.send(looking.get(&key));
    });
    let got = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("get on a FIFO returned within 10 s");
    assert_eq!(got, None);
    // Left alone: it is not ours to delete.
    assert!(path.exists());
}

#[test]
fn an_entry_larger_than_the_bound_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let key = small_key(3);
    // A valid entry of 2 MiB, written through a cache bounded at 4 MiB...
    let value = vec![7u8; 2 << 20];
    let roomy = FileStreamProgramCache::new(dir.path(), 4 << 20).unwrap();
    roomy.put(&key, &value);
    assert_eq!(roomy.get(&key).as_deref(), Some(&value[..]));
    // ...is no entry for a cache bounded at 1 MiB, which could never have stored it: a miss,
    // found from the file's size before its payload is read.
    let small = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    assert_eq!(small.get(&key), None);
}

// ---------------------------------------------------------------------------------------------
// File cache: eviction

#[test]
fn file_cache_evicts_the_least_recently_used_first() {
    let dir = tempfile::tempdir().unwrap();
    let entry = HEADER + 100;
    let cache = FileStreamProgramCache::new(dir.path(), 3 * entry).unwrap();
    let [a, b, c, d, e] = [1, 2, 3, 4, 5].map(small_key);
    let value = |n: u8| vec![n; 100];
    cache.put(&a, &value(1));
    cache.put(&b, &value(2));
    cache.put(&c, &value(3));
    assert_eq!(cache.size_bytes(), 3 * entry);
    // Using `a` makes `b` the least recently used.
    assert_eq!(cache.get(&a), Some(value(1)));
    cache.put(&d, &value(4));
    assert_eq!(cache.get(&b), None);
    assert_eq!(cache.size_bytes(), 3 * entry);
    // Uses now, oldest first: a (get), d (put), c (get): `a` goes next.
    assert_eq!(cache.get(&c), Some(value(3)));
    cache.put(&e, &value(5));
    assert_eq!(cache.get(&a), None);
    for (key, n) in [(c, 3), (d, 4), (e, 5)] {
        assert_eq!(cache.get(&key), Some(value(n)));
    }
    assert_eq!(cache.size_bytes(), 3 * entry);
}

#[test]
fn file_cache_does_not_store_an_entry_larger_than_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), HEADER + 10).unwrap();
    cache.put(&small_key(1), &[1; 10]);
    cache.put(&small_key(2), &[2; 11]);
    assert_eq!(cache.get(&small_key(1)), Some(vec![1; 10]));
    assert_eq!(cache.get(&small_key(2)), None);
    assert_eq!(cache.size_bytes(), HEADER + 10);
    assert_eq!(cache.failed_puts(), 0);
    // A new entry pushes the old one out.
    cache.put(&small_key(3), &[3; 10]);
    assert_eq!(cache.get(&small_key(1)), None);
    assert_eq!(cache.get(&small_key(3)), Some(vec![3; 10]));
}

#[test]
fn file_cache_remove_and_clear() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path().join("programs"), 1 << 20).unwrap();
    assert_eq!(cache.dir(), dir.path().join("programs"));
    cache.put(&small_key(1), b"one");
    cache.put(&small_key(2), b"two");
    cache.remove(&small_key(1));
    cache.remove(&small_key(9));
    assert_eq!(cache.get(&small_key(1)), None);
    assert_eq!(cache.get(&small_key(2)), Some(b"two".to_vec()));
    // A second cache on the directory sees the same entries.
    let other = FileStreamProgramCache::new(dir.path().join("programs"), 1 << 20).unwrap();
    assert_eq!(other.get(&small_key(2)), Some(b"two".to_vec()));
    other.clear().unwrap();
    assert_eq!(cache.get(&small_key(2)), None);
    assert_eq!(cache.size_bytes(), 0);
    // An entry that cannot be deleted (a directory under an entry's name): clear deletes the
    // rest and says which one it could not.
    cache.put(&small_key(3), b"three");
    let stuck = dir.path().join("programs").join(small_key(4).to_hex());
    fs::create_dir_all(stuck.join("inside")).unwrap();
    match cache.clear() {
        Err(Error::Cache { reason, .. }) => {
            assert!(reason.contains(&small_key(4).to_hex()), "{reason}")
        }
        other => panic!("expected the stuck entry named, got {other:?}"),
    }
    assert_eq!(cache.get(&small_key(3)), None);
}

// ---------------------------------------------------------------------------------------------
// File cache: an unwritable directory

/// Collects the `log` records of this test binary.
struct Recorder(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let mut records = self.0.lock().unwrap_or_else(|e| e.into_inner());
        records.push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static RECORDER: Recorder = Recorder(Mutex::new(Vec::new()));

/// The records at `level` logged so far (since [`record_logs`]) that mention every needle.
pub(crate) fn logged(level: log::Level, needles: &[&str]) -> usize {
    record_logs();
    let records = RECORDER.0.lock().unwrap_or_else(|e| e.into_inner());
    records
        .iter()
        .filter(|(l, message)| *l == level && needles.iter().all(|n| message.contains(n)))
        .count()
}

/// Installs [`RECORDER`] as this process's logger.
pub(crate) fn record_logs() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&RECORDER).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// The warnings logged so far that mention `needle`.
fn warnings_mentioning(needle: &str) -> usize {
    logged(log::Level::Warn, &[needle])
}

/// How many entries in `dir` were found corrupt (and deleted) so far.
fn corrupt_entries_seen(dir: &Path) -> usize {
    logged(log::Level::Info, &[&dir.display().to_string(), "corrupt"])
}

/// The positive control of [`corrupt_entries_seen`] (which the workers' tests assert is 0): a
/// known corrupt entry is counted once, so a count that could never leave 0 (a message
/// reworded, a logger not installed) fails here instead of passing those tests empty.
#[test]
fn a_corrupt_entry_is_seen_in_the_log() {
    record_logs();
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    let key = small_key(7);
    cache.put(&key, &value_of(7));
    assert_eq!(corrupt_entries_seen(cache.dir()), 0);
    let path = dir.path().join(key.to_hex());
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&path, &bytes).unwrap();
    assert_eq!(cache.get(&key), None);
    assert_eq!(corrupt_entries_seen(cache.dir()), 1);
}

#[test]
fn a_directory_that_cannot_be_made_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, b"not a directory").unwrap();
    match FileStreamProgramCache::new(file.join("programs"), 1 << 20) {
        Err(Error::Cache {
            path,
            reason,
            source,
        }) => {
            assert_eq!(path, file.join("programs"));
            assert!(reason.contains("cannot create"), "{reason}");
            // The I/O error itself is kept, for callers that branch on its kind.
            let io = source
                .as_ref()
                .and_then(|s| s.downcast_ref::<std::io::Error>());
            assert!(io.is_some(), "no I/O error kept: {source:?}");
        }
        other => panic!("expected a cache error, got {other:?}"),
    }
    match FileStreamProgramCache::new(&file, 1 << 20) {
        Err(Error::Cache { path, .. }) => assert_eq!(path, file),
        other => panic!("expected a cache error, got {other:?}"),
    }
}

/// A miss is quiet: getting or removing an entry that is not there logs nothing, while a
/// failure of another kind (a directory in the entry's place) is logged, the positive control
/// of the quiet case.
#[test]
fn a_plain_miss_logs_nothing() {
    record_logs();
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path().join("c"), 1 << 20).unwrap();
    let key = small_key(9);
    let needle = cache.dir().display().to_string();
    let debug = |what: &str| logged(log::Level::Debug, &[&needle, what]);
    assert_eq!(cache.get(&key), None);
    cache.remove(&key);
    assert_eq!((debug("cannot open"), debug("cannot remove")), (0, 0));
    assert_eq!(cache.refused_entries(), 0);
    // The same calls where a directory is in the entry's place: neither is a plain miss.
    fs::create_dir(cache.dir().join(key.to_hex())).unwrap();
    assert_eq!(cache.get(&key), None);
    cache.remove(&key);
    assert_eq!(cache.refused_entries(), 1);
    assert_eq!(debug("cannot remove"), 1);
}

#[test]
fn puts_that_cannot_write_warn_once_and_never_fail() {
    // Runs as root in CI, where permissions stop nothing: the cache's directory is replaced by
    // a regular file, so that nothing can be created in it, nor it be made again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("programs");
    let cache = FileStreamProgramCache::new(&path, 1 << 20).unwrap();
    let key = small_key(1);
    cache.put(&key, b"stored while it could be");
    fs::remove_dir_all(&path).unwrap();
    fs::write(&path, b"not a directory").unwrap();
    let needle = path.display().to_string();
    let before = warnings_mentioning(&needle);
    for n in 0..5 {
        cache.put(&small_key(n), b"value");
        assert_eq!(cache.get(&small_key(n)), None);
    }
    assert_eq!(cache.failed_puts(), 5);
    assert_eq!(warnings_mentioning(&needle) - before, 1);
    assert_eq!(cache.size_bytes(), 0);
    assert!(cache.clear().is_err());
    // Each cache warns once.
    let again = cache_on_existing_path(&path);
    again.put(&key, b"value");
    again.put(&key, b"value");
    assert_eq!(warnings_mentioning(&needle) - before, 2);
    assert_eq!(fs::read(&path).unwrap(), b"not a directory");
}

/// A cache whose directory was fine when made and is a file now.
fn cache_on_existing_path(path: &Path) -> FileStreamProgramCache {
    fs::remove_file(path).unwrap();
    let cache = FileStreamProgramCache::new(path, 1 << 20).unwrap();
    fs::remove_dir(path).unwrap();
    fs::write(path, b"not a directory").unwrap();
    cache
}

// ---------------------------------------------------------------------------------------------
// File cache: many threads and many processes

/// The number of keys the workers share.
const SHARED_KEYS: u8 = 16;

/// The value of shared key `n`: up to 48 KiB, so that a torn read would be likely to show.
fn value_of(n: u8) -> Vec<u8> {
    let len = usize::from(n) * 3001 % 48_000 + usize::from(n % 3) * 7;
    (0..len)
        .map(|i| (i as u8) ^ n.wrapping_mul(101) ^ ((i >> 8) as u8))
        .collect()
}

/// A bound that holds about half the shared values, so that workers also evict.
fn shared_bound() -> u64 {
    (0..SHARED_KEYS)
        .map(|n| HEADER + value_of(n).len() as u64)
        .sum::<u64>()
        / 2
}

/// xorshift64: deterministic per seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Puts, gets and removes the shared keys at random; panics on a wrong value. Returns the
/// number of hits.
fn hammer(cache: &FileStreamProgramCache, seed: u64, rounds: usize) -> usize {
    let keys: Vec<CacheKey> = (0..SHARED_KEYS).map(small_key).collect();
    let values: Vec<Vec<u8>> = (0..SHARED_KEYS).map(value_of).collect();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut hits = 0;
    for _ in 0..rounds {
        let n = usize::try_from(rng.next() % u64::from(SHARED_KEYS)).unwrap();
        match rng.next() % 10 {
            0..=3 => cache.put(&keys[n], &values[n]),
            4 => cache.remove(&keys[n]),
            _ => {
                if let Some(value) = cache.get(&keys[n]) {
                    assert!(
                        value == values[n],
                        "key {n}: wrong bytes ({} long)",
                        value.len()
                    );
                    hits += 1;
                }
            }
        }
    }
    assert_eq!(cache.failed_puts(), 0);
    // Atomic writes mean no reader ever meets a partial entry (which it would delete as
    // corrupt: the checksum alone would keep the bytes right, at the cost of entries).
    assert_eq!(
        corrupt_entries_seen(cache.dir()),
        0,
        "a reader saw a partial entry"
    );
    hits
}

/// After the workers: no temporary file is left, every entry reads back right, and the
/// directory is within its bound.
fn check_directory_after_workers(dir: &Path) {
    let names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|name| !name.starts_with(".tmp")),
        "temporary files left: {names:?}"
    );
    let cache = FileStreamProgramCache::new(dir, shared_bound()).unwrap();
    let by_hex: HashMap<String, u8> = (0..SHARED_KEYS)
        .map(|n| (small_key(n).to_hex(), n))
        .collect();
    for name in &names {
        let n = by_hex[name];
        assert_eq!(cache.get(&small_key(n)), Some(value_of(n)), "entry {n}");
    }
    assert!(cache.size_bytes() <= shared_bound());
}

#[test]
fn threads_share_one_directory() {
    record_logs();
    let dir = tempfile::tempdir().unwrap();
    let shared = Arc::new(FileStreamProgramCache::new(dir.path(), shared_bound()).unwrap());
    let hits: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let shared = Arc::clone(&shared);
                let path = dir.path().to_path_buf();
                scope.spawn(move || {
                    if t % 2 == 0 {
                        hammer(&shared, t, 150)
                    } else {
                        // Its own cache on the same directory.
                        let own = FileStreamProgramCache::new(path, shared_bound()).unwrap();
                        hammer(&own, t, 150)
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    assert!(hits > 0, "no get hit: the test tested nothing");
    check_directory_after_workers(dir.path());
}

/// Where the children of [`processes_share_one_directory`] find the shared directory.
const CHILD_DIR: &str = "CUDA_CORE_CACHE_TEST_DIR";

#[test]
fn processes_share_one_directory() {
    let test = common::test_name(module_path!(), "processes_share_one_directory");
    // In a child: the role is its seed; hammer the shared directory.
    if let Some(seed) = common::child_role(&test) {
        let seed: u64 = seed.parse().unwrap();
        let dir = std::env::var_os(CHILD_DIR).expect("the shared directory");
        record_logs();
        let cache = FileStreamProgramCache::new(PathBuf::from(dir), shared_bound()).unwrap();
        let hits = hammer(&cache, seed, 200);
        println!("cache child {seed} done, {hits} hits");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The children inherit the directory through the environment.
    let children: Vec<_> = (1..=4u64)
        .map(|seed| {
            let mut child = common::child_command(&test, &seed.to_string());
            child.env(CHILD_DIR, dir.path());
            (seed, child.spawn().expect("a child starts"))
        })
        .collect();
    for (seed, child) in children {
        common::wait_child(child, &test, &format!("cache child {seed} done"));
    }
    check_directory_after_workers(dir.path());
}

// ---------------------------------------------------------------------------------------------
// File cache: whom it trusts

/// A user id that is not this process's (nobody's, where this process is root).
const OTHER_USER: u32 = 65534;

/// Whether this process can give files to another user (`chown` needs root: CI and the GPU
/// machine run as root); says "not run" where it cannot.
fn can_chown() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    common::not_run("root", "giving a file to another user needs root");
    false
}

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), None).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The reason of a refused cache, or a panic naming what was made instead.
fn refusal(result: cuda_core::Result<FileStreamProgramCache>) -> String {
    match result {
        Err(Error::Cache { reason, .. }) => reason,
        other => panic!("expected the directory refused, got {other:?}"),
    }
}

/// Bugs caught: a directory of another user accepted (their entries would run here); the
/// refusal not saying whose it is; a shared cache refusing what it is documented to trust.
#[test]
fn a_cache_directory_another_user_owns_is_refused() {
    if !can_chown() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("theirs");
    fs::create_dir(&dir).unwrap();
    chmod(&dir, 0o700);
    chown(&dir, OTHER_USER);
    let reason = refusal(FileStreamProgramCache::new(&dir, 1 << 20));
    assert!(
        reason.contains(&format!("owned by user {OTHER_USER}")) && reason.contains("your own"),
        "{reason}"
    );
    assert!(FileStreamProgramCache::new_shared(&dir, 1 << 20).is_ok());
    // The positive control: the same directory, given back, is accepted.
    chown(&dir, rustix::process::geteuid().as_raw());
    assert!(FileStreamProgramCache::new(&dir, 1 << 20).is_ok());
}

/// Bugs caught: a directory other users can write accepted; the fix not given; the check made
/// on the mode before a `chmod` (or only on one of the two bits); `new_shared` refusing it.
#[test]
fn a_cache_directory_group_or_others_can_write_is_refused_with_the_fix() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("open");
    fs::create_dir(&dir).unwrap();
    for (mode, who) in [
        (0o770, "its group"),
        (0o757, "every user"),
        (0o777, "group and others"),
    ] {
        chmod(&dir, mode);
        let reason = refusal(FileStreamProgramCache::new(&dir, 1 << 20));
        assert!(reason.contains(who), "{mode:o}: {reason}");
        assert!(
            reason.contains(&format!("chmod 700 {}", dir.display())),
            "{reason}"
        );
        let shared = FileStreamProgramCache::new_shared(&dir, 1 << 20).unwrap();
        assert!(shared.is_shared());
    }
    // Readable by others is not writable by them.
    chmod(&dir, 0o755);
    let cache = FileStreamProgramCache::new(&dir, 1 << 20).unwrap();
    assert!(!cache.is_shared());
}

/// Bugs caught: a symbolic link followed (it can be pointed at another user's directory at
/// any time), by the private or the shared constructor.
#[test]
fn a_symlinked_cache_directory_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let target = base.path().join("target");
    fs::create_dir(&target).unwrap();
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for shared in [false, true] {
        let result = if shared {
            FileStreamProgramCache::new_shared(&link, 1 << 20)
        } else {
            FileStreamProgramCache::new(&link, 1 << 20)
        };
        let reason = refusal(result);
        assert!(reason.contains("symbolic link"), "{reason}");
    }
    assert!(FileStreamProgramCache::new(&target, 1 << 20).is_ok());
}

/// A valid entry of `value` under `key` in `cache`, and its path.
fn stored(cache: &FileStreamProgramCache, key: &CacheKey, value: &[u8]) -> PathBuf {
    cache.put(key, value);
    let path = cache.dir().join(key.to_hex());
    assert_eq!(cache.get(key).as_deref(), Some(value), "stored");
    path
}

/// Bugs caught: an entry of another owner loaded; refused but deleted (it is not ours) or not
/// logged; counted as anything but a refusal; a shared cache refusing it. The entry is
/// well-formed, so only its owner can make it a miss.
#[test]
fn an_entry_another_user_owns_is_a_logged_miss() {
    if !can_chown() {
        return;
    }
    record_logs();
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    let key = small_key(21);
    let path = stored(&cache, &key, b"their code");
    let needle = dir.path().display().to_string();
    let warned = logged(log::Level::Warn, &[&needle, "not loading"]);
    chown(&path, OTHER_USER);
    assert_eq!(cache.get(&key), None);
    assert_eq!(cache.refused_entries(), 1);
    assert!(path.exists(), "a refused entry was deleted");
    assert_eq!(
        logged(
            log::Level::Warn,
            &[
                &needle,
                "not loading",
                &format!("owned by user {OTHER_USER}")
            ]
        ) - warned,
        1
    );
    // Logged once: the second refusal is at debug level.
    assert_eq!(cache.get(&key), None);
    assert_eq!(cache.refused_entries(), 2);
    assert_eq!(
        logged(log::Level::Warn, &[&needle, "not loading"]) - warned,
        1
    );
    // A shared cache trusts every writer of its directory.
    let shared = FileStreamProgramCache::new_shared(dir.path(), 1 << 20).unwrap();
    assert_eq!(shared.get(&key).as_deref(), Some(&b"their code"[..]));
    // A put replaces it with one of ours.
    cache.put(&key, b"ours");
    assert_eq!(cache.get(&key).as_deref(), Some(&b"ours"[..]));
}

/// Bugs caught: an entry that is a symbolic link followed (to a file anyone could have put
/// anywhere), or the link's target deleted as corrupt.
#[test]
fn a_symlinked_entry_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    let other = FileStreamProgramCache::new(elsewhere.path(), 1 << 20).unwrap();
    let key = small_key(22);
    let target = stored(&other, &key, b"code from elsewhere");
    std::os::unix::fs::symlink(&target, dir.path().join(key.to_hex())).unwrap();
    assert_eq!(cache.get(&key), None);
    assert_eq!(cache.refused_entries(), 1);
    let shared = FileStreamProgramCache::new_shared(dir.path(), 1 << 20).unwrap();
    assert_eq!(shared.get(&key), None);
    assert_eq!(shared.refused_entries(), 1);
    assert_eq!(
        other.get(&key).as_deref(),
        Some(&b"code from elsewhere"[..])
    );
}

/// Bugs caught: an entry others can write loaded (its owner is us, but anyone in the group
/// could have changed it); the check only at write time.
#[test]
fn an_entry_group_or_others_can_write_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path(), 1 << 20).unwrap();
    let key = small_key(23);
    let path = stored(&cache, &key, b"value");
    assert_eq!(mode_of(&path), 0o600);
    for mode in [0o620, 0o602, 0o666] {
        chmod(&path, mode);
        assert_eq!(cache.get(&key), None, "{mode:o}");
    }
    assert_eq!(cache.refused_entries(), 3);
    // A shared cache refuses only what every user can write.
    let shared = FileStreamProgramCache::new_shared(dir.path(), 1 << 20).unwrap();
    chmod(&path, 0o660);
    assert_eq!(shared.get(&key).as_deref(), Some(&b"value"[..]));
    chmod(&path, 0o662);
    assert_eq!(shared.get(&key), None);
    chmod(&path, 0o600);
    assert_eq!(cache.get(&key).as_deref(), Some(&b"value"[..]));
}

/// Bugs caught: entries reached by path, so that a directory renamed into the cache's place
/// after it was opened (by whoever can write its parent) is read. The planted entry is ours
/// and well-formed: only the directory it sits in differs.
#[test]
fn a_directory_renamed_into_the_caches_place_is_never_read() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("programs");
    let cache = FileStreamProgramCache::new(&dir, 1 << 20).unwrap();
    let planted = base.path().join("planted");
    let key = small_key(24);
    stored(
        &FileStreamProgramCache::new(&planted, 1 << 20).unwrap(),
        &key,
        b"planted",
    );
    chmod(&planted, 0o777);
    fs::rename(&dir, base.path().join("moved")).unwrap();
    fs::rename(&planted, &dir).unwrap();
    assert_eq!(cache.get(&key), None);
    // Writes go where the cache was opened, too.
    cache.put(&small_key(25), b"mine");
    assert!(base
        .path()
        .join("moved")
        .join(small_key(25).to_hex())
        .is_file());
    assert!(!dir.join(small_key(25).to_hex()).exists());
}

/// Bugs caught: directories or entries made as the umask allows (a umask of 000 would open
/// them to every user). Runs in a process of its own: the umask is the process's.
#[test]
fn the_default_directory_and_entries_are_private_under_a_permissive_umask() {
    common::alone(
        module_path!(),
        "the_default_directory_and_entries_are_private_under_a_permissive_umask",
        || {
            let base = tempfile::tempdir().unwrap();
            let xdg = base.path().join("xdg");
            rustix::process::umask(rustix::fs::Mode::empty());
            // The positive control: the umask is in effect for a directory made plainly.
            fs::create_dir(base.path().join("plain")).unwrap();
            assert_eq!(mode_of(&base.path().join("plain")), 0o777);
            // SAFETY: this child runs this test alone, and no other thread reads the environment.
            unsafe { std::env::set_var("XDG_CACHE_HOME", &xdg) };
            let cache = FileStreamProgramCache::open_default(1 << 20).unwrap();
            assert_eq!(cache.dir(), xdg.join("cuda-core/programs"));
            for made in [
                xdg.clone(),
                xdg.join("cuda-core"),
                xdg.join("cuda-core/programs"),
            ] {
                assert_eq!(mode_of(&made), 0o700, "{}", made.display());
            }
            let path = stored(&cache, &small_key(26), b"value");
            assert_eq!(mode_of(&path), 0o600);
            // A directory made by hand the umask's way is refused, not used.
            let open = base.path().join("open");
            fs::create_dir(&open).unwrap();
            assert!(refusal(FileStreamProgramCache::new(&open, 1 << 20)).contains("chmod 700"));
        },
    );
}
