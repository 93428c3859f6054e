//! The program cache's entry format: a payload decoded into object code, an entry file as a
//! file cache reads it from disk, and a file name as its listing reads it. Beyond not
//! panicking: a decoded payload encodes back to the same bytes (PTX without its NUL gets it,
//! as any PTX code does) and decodes again to the same code; a file cache returns a file's
//! payload exactly when the file is a whole entry (magic, length, SHA-256), as checked here
//! independently; and a name is a key exactly when it is 64 hexadecimal digits, which the key
//! writes back in lowercase.
//!
//! The first input byte picks the file: odd, the rest of the input as a payload, in a header
//! made here (so that the decoder is reached through the file cache); even, the rest of the
//! input as the whole file.

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cuda_core::cache::{CacheKey, FileStreamProgramCache, ProgramCache};
use cuda_core::fuzzing::{cache_entry_decode, cache_entry_encode};
use cuda_core::{CodeType, ObjectCode};
use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"cucache\x01";
const HEADER_LEN: usize = 48;
/// The file cache's bound: more than any input.
const MAX_BYTES: u64 = 1 << 30;

/// The file cache, in a directory of its own (left behind, empty, when the fuzzer exits).
fn cache() -> &'static (FileStreamProgramCache, CacheKey, PathBuf) {
    static CACHE: OnceLock<(FileStreamProgramCache, CacheKey, PathBuf)> = OnceLock::new();
    CACHE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("cuda-core-fuzz-cache-{}", std::process::id()));
        let cache = FileStreamProgramCache::new(&dir, MAX_BYTES).expect("a file cache");
        let key = CacheKey::builder().field("fuzz", b"entry").finish();
        let path = dir.join(key.to_hex());
        (cache, key, path)
    })
}

fuzz_target!(|data: &[u8]| {
    payload_round_trip(data);
    file_name(data);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let file = if mode & 1 == 1 {
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&(rest.len() as u64).to_le_bytes());
        file.extend_from_slice(&Sha256::digest(rest));
        file.extend_from_slice(rest);
        file
    } else {
        rest.to_vec()
    };
    entry_file(&file);
});

/// Asserts that two pieces of code are the same.
fn same_code(a: &ObjectCode, b: &ObjectCode) {
    assert_eq!(a.code_type(), b.code_type());
    assert_eq!(a.code(), b.code());
    assert_eq!(a.name(), b.name());
    assert_eq!(a.compile_log(), b.compile_log());
    assert_eq!(a.name_expressions(), b.name_expressions());
}

/// A payload that decodes encodes back to itself, and decodes again to the same code.
fn payload_round_trip(payload: &[u8]) {
    let Some(code) = cache_entry_decode(payload) else {
        return;
    };
    let encoded = cache_entry_encode(&code);
    let again = cache_entry_decode(&encoded).expect("an encoded payload decodes");
    same_code(&code, &again);
    assert_eq!(cache_entry_encode(&again), encoded);
    if encoded != payload {
        // Only PTX without its NUL is written otherwise: with the NUL, the code (the last
        // field, after its length) one byte longer.
        assert_eq!(
            code.code_type(),
            CodeType::Ptx,
            "the payload is not written back"
        );
        let len = code.code().len();
        assert_eq!(encoded.len(), payload.len() + 1);
        let (kept, code_field) = payload.split_at(payload.len() - 8 - (len - 1));
        assert_eq!(&encoded[..kept.len()], kept);
        assert_eq!(
            &encoded[kept.len()..kept.len() + 8],
            (len as u64).to_le_bytes()
        );
        assert_eq!(
            &encoded[kept.len() + 8..encoded.len() - 1],
            &code_field[8..]
        );
        assert_eq!(encoded.last(), Some(&0));
    }
}

/// A file name is a key exactly when it is 64 hexadecimal digits.
fn file_name(data: &[u8]) {
    let Ok(name) = std::str::from_utf8(data) else {
        return;
    };
    let key = CacheKey::from_hex(name);
    let hex = name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit());
    assert_eq!(key.is_some(), hex, "{name:?}");
    if let Some(key) = key {
        assert_eq!(key.to_hex(), name.to_ascii_lowercase());
    }
}

/// A file cache returns the payload of `file` exactly when it is a whole entry, and its code
/// is the payload's.
fn entry_file(file: &[u8]) {
    let (cache, key, path) = cache();
    std::fs::write(path, file).expect("writing the entry");
    let whole = file.len() >= HEADER_LEN
        && file[..8] == MAGIC[..]
        && file[8..16] == ((file.len() - HEADER_LEN) as u64).to_le_bytes()
        && file[16..HEADER_LEN] == Sha256::digest(&file[HEADER_LEN..])[..];
    let got = cache.get(key);
    assert_eq!(got.as_deref(), whole.then(|| &file[HEADER_LEN..]));
    if let Some(payload) = got {
        match (cache.get_code(key), cache_entry_decode(&payload)) {
            (Some(a), Some(b)) => same_code(&a, &b),
            (None, None) => {}
            (a, b) => panic!("the cache's code {a:?}, the payload's {b:?}"),
        }
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{e}"),
        _ => {}
    }
}
