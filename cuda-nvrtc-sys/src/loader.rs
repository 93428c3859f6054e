//! Where the dynamic loader would find a library, found without loading it: for keys that name
//! the exact library a process would use (a program cache's), where loading it (about 100 MB
//! for NVRTC) would cost more than the lookup they serve.
//!
//! The search is glibc's for a name without a slash, as far as a library can see it: each
//! directory of `LD_LIBRARY_PATH`, then `/etc/ld.so.cache` (the format `glibc-ld.so.cache1.1`),
//! then the default directories. It does not read an executable's own `RPATH` or `RUNPATH`,
//! which come before `LD_LIBRARY_PATH` and after it; a caller that later loads the library can
//! compare where it really came from.

use std::path::{Path, PathBuf};

use crate::search::Candidate;

/// The loader cache's file.
const CACHE: &str = "/etc/ld.so.cache";

/// The loader's default directories, searched last.
const DEFAULT_DIRS: &[&str] = &["/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// Where the loader would find `soname` for this process, or `None` where no place it looks
/// has it.
pub fn loader_path(soname: &str) -> Option<PathBuf> {
    if let Some(dirs) = std::env::var_os("LD_LIBRARY_PATH") {
        for dir in std::env::split_paths(&dirs) {
            // An empty entry is the working directory, as for the loader.
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            let path = dir.join(soname);
            if path.is_file() {
                return Some(path);
            }
        }
    }
    if let Ok(cache) = std::fs::read(CACHE) {
        if let Some(path) = cache_lookup(&cache, soname) {
            if path.is_file() {
                return Some(path);
            }
        }
    }
    DEFAULT_DIRS
        .iter()
        .map(|dir| Path::new(dir).join(soname))
        .find(|path| path.is_file())
}

impl Candidate {
    /// The file this candidate would load, found without loading it: the file itself, or for
    /// a name the loader searches, [`loader_path`]'s answer.
    pub fn file(&self) -> Option<PathBuf> {
        match self {
            Candidate::File(path) => path.is_file().then(|| path.clone()),
            Candidate::Soname(name) => loader_path(name),
        }
    }
}

/// `flags` of a cache entry for this machine's libraries: an ELF library for glibc
/// (`FLAG_ELF_LIBC6`, 3) of this architecture.
fn entry_flags() -> Option<i32> {
    let arch = if cfg!(target_arch = "x86_64") {
        0x0300 // FLAG_X8664_LIB64
    } else if cfg!(target_arch = "aarch64") {
        0x0a00 // FLAG_AARCH64_LIB64
    } else {
        return None;
    };
    Some(arch | 3)
}

/// The path the loader cache gives `soname`, from a cache of the new format (what glibc's
/// `ldconfig` has written since 2.32). `None` for other formats, or no such entry.
fn cache_lookup(cache: &[u8], soname: &str) -> Option<PathBuf> {
    const MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
    const HEADER: usize = 48;
    const ENTRY: usize = 24;
    if !cache.starts_with(MAGIC) {
        return None;
    }
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(cache.get(at..at + 4)?.try_into().ok()?))
    };
    let string_at = |at: u32| -> Option<&[u8]> {
        let rest = cache.get(at as usize..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let count = u32_at(20)? as usize;
    let wanted = entry_flags()?;
    for i in 0..count {
        let at = HEADER.checked_add(i.checked_mul(ENTRY)?)?;
        let flags = u32_at(at)? as i32;
        let (key, value) = (u32_at(at + 4)?, u32_at(at + 8)?);
        let hwcap = cache.get(at + 16..at + 24)?;
        // Entries for a glibc-hwcaps subdirectory name a hardware level: the plain one is
        // what a machine of any level loads.
        if flags != wanted || hwcap.iter().any(|&b| b != 0) {
            continue;
        }
        if string_at(key)? == soname.as_bytes() {
            let path = std::str::from_utf8(string_at(value)?).ok()?;
            return Some(PathBuf::from(path));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of the new format holding `entries` (name, path, flags, hwcap).
    fn cache(entries: &[(&str, &str, i32, u64)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let start = 48 + 24 * entries.len();
        let mut offsets = Vec::new();
        for (name, path, _, _) in entries {
            let key = start + strings.len();
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let value = start + strings.len();
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            offsets.push((key as u32, value as u32));
        }
        let mut out = b"glibc-ld.so.cache1.1".to_vec();
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
        out.resize(48, 0);
        for ((_, _, flags, hwcap), (key, value)) in entries.iter().zip(offsets) {
            out.extend_from_slice(&flags.to_le_bytes());
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&hwcap.to_le_bytes());
        }
        out.extend_from_slice(&strings);
        out
    }

    #[test]
    fn the_cache_gives_this_architectures_plain_entry() {
        let Some(flags) = entry_flags() else { return };
        let table = cache(&[
            ("libnvrtc.so.13", "/other/arch/libnvrtc.so.13", 3, 0),
            ("libnvrtc.so.13", "/hwcaps/libnvrtc.so.13", flags, 1 << 62),
            ("libnvrtc.so.12", "/cuda12/libnvrtc.so.12", flags, 0),
            ("libnvrtc.so.13", "/cuda13/lib64/libnvrtc.so.13", flags, 0),
        ]);
        assert_eq!(
            cache_lookup(&table, "libnvrtc.so.13"),
            Some(PathBuf::from("/cuda13/lib64/libnvrtc.so.13"))
        );
        assert_eq!(
            cache_lookup(&table, "libnvrtc.so.12"),
            Some(PathBuf::from("/cuda12/libnvrtc.so.12"))
        );
        assert_eq!(cache_lookup(&table, "libnvrtc.so"), None);
        // Other formats, and cut tables, give nothing rather than a guess.
        assert_eq!(cache_lookup(b"ld.so-1.7.0", "libnvrtc.so.13"), None);
        assert_eq!(cache_lookup(&table[..60], "libnvrtc.so.13"), None);
    }

    #[test]
    fn this_machines_cache_agrees_with_the_loader_on_libc() {
        // libc is in every glibc machine's cache; where there is no cache, nothing to compare.
        let Ok(table) = std::fs::read(CACHE) else {
            return;
        };
        if !table.starts_with(b"glibc-ld.so.cache1.1") {
            return;
        }
        let path = cache_lookup(&table, "libc.so.6").expect("libc.so.6 in the loader cache");
        assert!(path.is_file(), "{}", path.display());
    }
}
