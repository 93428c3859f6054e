//! `cache_hit_file_n{10,1000,10000}`: a hit in a file program cache holding that many entries.
//! No GPU: the entries are bytes put under keys, as a compile would put its output.
//!
//! - **cuda-core**: `FileStreamProgramCache::get`: the entry opened through the cache's open
//!   directory without following links, checked as a regular file of the user's and within
//!   the bound, its header read and checked, its payload read and its SHA-256 compared, and its
//!   modification time set (the mark of a use, for eviction).
//! - **raw**: the same lookup by hand: `std::fs::read` of the entry's file, named by the key as
//!   the cache names it (`<dir>/<key.to_hex()>`): one open, one read of the whole file, no
//!   checks and no mark. This is the least a cache of one file per entry can do per hit, so
//!   the ratio is what the cache's checks cost, and the growth with the size is the file
//!   system's, which both see alike.
//!
//! Each iteration looks up the next key in a fixed scattered order over all the entries (the
//! same order in both variants), so that the larger caches are read all over and not one entry
//! again and again. Every entry is in the page cache: this is a warm hit.
//!
//! `cache_put_file_n{10,1000,10000}`: a put into a file program cache holding that many
//! entries, of an entry it holds already (the same bytes again, as two processes compiling
//! the same program would put it), so that the cache keeps its size while it is measured.
//!
//! - **cuda-core**: `FileStreamProgramCache::put`: the entry written to a new temporary file
//!   with its header, flushed to disk, renamed over the entry's name, the directory flushed,
//!   then the size bound enforced (by a listing of the directory only where the cache may be
//!   half full, or its last listing is old: see `FileStreamProgramCache`).
//! - **raw**: the least a put of one file per entry that survives a crash can do: the entry's
//!   current bytes read (about 5 µs, against milliseconds of flushing), written to a
//!   temporary file, flushed, renamed over the entry, the directory flushed. No bound.
//!
//! The keys are visited in the scattered order of the hits. The time is the disk's flushes
//! above all, so the ratio says little; the growth with the entries held is what the case is
//! for: it is the bound's, which raw does not enforce.

use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use criterion::Criterion;
use cuda_core::cache::{CacheKey, FileStreamProgramCache, ProgramCache};

use crate::common::Case;
use crate::scaled;

/// The sizes, in entries.
pub(crate) const SIZES: [usize; 3] = [10, 1_000, 10_000];
/// The payload of each entry: about a small kernel's cubin.
const ENTRY_BYTES: usize = 4096;
/// The cache's bound: far more than every entry (so none is evicted).
const CACHE_BYTES: u64 = 1 << 30;
/// The threads that fill the cache.
const FILLERS: usize = 16;
/// The step between the keys of consecutive lookups: a prime that divides no size, so that
/// the walk visits every entry before it comes back to one.
const STEP: usize = 7919;

pub(crate) fn cache_cases(c: &mut Criterion) {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            println!("scaling: no temporary directory for the cache cases ({e}); skipped");
            return;
        }
    };
    let path = dir.path().join("programs");
    let cache = match FileStreamProgramCache::new(&path, CACHE_BYTES) {
        Ok(cache) => cache,
        Err(e) => {
            println!("scaling: cannot open a file cache ({e}); cache cases skipped");
            return;
        }
    };
    let keys: Vec<CacheKey> = (0..SIZES[SIZES.len() - 1])
        .map(|i| {
            CacheKey::builder()
                .field("entry", &(i as u64).to_le_bytes())
                .finish()
        })
        .collect();
    let mut filled = 0;
    for size in SIZES {
        // The entries are put through the cache, as compiles would put them, from
        // `FILLERS` threads at once: each put flushes its file and the directory to disk.
        let start = Instant::now();
        let todo = size - filled;
        std::thread::scope(|scope| {
            for t in 0..FILLERS {
                let (cache, keys) = (&cache, &keys);
                scope.spawn(move || {
                    for i in (filled + t..size).step_by(FILLERS) {
                        cache.put(&keys[i], &payload(i));
                    }
                });
            }
        });
        let took = start.elapsed();
        println!(
            "scaling: {todo} entries put by {FILLERS} threads in {:.2} s ({:.0} us each, \
             {:.0} us of a thread's time) to fill the cache to {size}",
            took.as_secs_f64(),
            took.as_secs_f64() * 1e6 / todo as f64,
            took.as_secs_f64() * 1e6 * FILLERS as f64 / todo as f64
        );
        filled = size;
        if let Some(missing) = (0..size).find(|&i| cache.get(&keys[i]).is_none()) {
            println!("scaling: the cache lost entry {missing} of {size}; cache cases skipped");
            return;
        }
        let raw_order = std::cell::Cell::new(0usize);
        let core_order = std::cell::Cell::new(0usize);
        Case::new(scaled("cache_hit_file", size))
            .variant("raw", |b| {
                b.iter(|| black_box(raw_hit(&path, &keys[next(&raw_order, size)])));
            })
            .variant("cuda-core", |b| {
                b.iter(|| {
                    black_box(
                        cache
                            .get(&keys[next(&core_order, size)])
                            .expect("a cache hit"),
                    )
                });
            })
            .run(c);
        let raw_order = std::cell::Cell::new(0usize);
        let core_order = std::cell::Cell::new(0usize);
        Case::new(scaled("cache_put_file", size))
            .settings(|g| {
                g.sample_size(10);
            })
            .variant("raw", |b| {
                b.iter(|| raw_put(&path, &keys[next(&raw_order, size)]));
            })
            .variant("cuda-core", |b| {
                b.iter(|| {
                    let i = next(&core_order, size);
                    cache.put(&keys[i], &payload(i));
                });
            })
            .run(c);
        if cache.failed_puts() != 0 {
            println!("scaling: the cache failed {} puts", cache.failed_puts());
        }
    }
}

/// A put by hand of the entry's own bytes: a temporary file written and flushed, renamed over
/// the entry, the directory flushed.
fn raw_put(dir: &Path, key: &CacheKey) {
    let name = key.to_hex();
    let bytes = std::fs::read(dir.join(&name)).expect("an entry's file");
    let temp = dir.join(".raw-put");
    let mut file = File::create(&temp).expect("a temporary file");
    file.write_all(&bytes).expect("the entry written");
    file.sync_all().expect("the entry flushed");
    drop(file);
    std::fs::rename(&temp, dir.join(&name)).expect("the entry renamed");
    File::open(dir)
        .and_then(|d| d.sync_all())
        .expect("the directory flushed");
}

/// The lookup by hand: the entry's file read whole.
fn raw_hit(dir: &Path, key: &CacheKey) -> Vec<u8> {
    std::fs::read(dir.join(key.to_hex())).expect("an entry's file")
}

/// The index of the next lookup, in the scattered order, and the walk moved on.
fn next(order: &std::cell::Cell<usize>, size: usize) -> usize {
    let i = order.get();
    order.set((i + STEP) % size);
    i
}

/// Entry `i`'s bytes: [`ENTRY_BYTES`] of a pattern of its own.
fn payload(i: usize) -> Vec<u8> {
    let seed = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..ENTRY_BYTES)
        .map(|j| (seed >> ((j % 8) * 8)) as u8 ^ j as u8)
        .collect()
}
