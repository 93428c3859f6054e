//! The headers a program can reach, for its cache key: what NVRTC could read while compiling
//! it, so that changing any of them changes the key.
//!
//! NVRTC resolves `#include "x"` in the including file's directory first (the working directory
//! for the program itself), then in the `-I` directories in order; `#include <x>` in the `-I`
//! directories; and both, failing those, among its own built-in headers. The scan follows every
//! `#include` line of the program and, recursively, of each header found, whatever `#if` around
//! it says (an over-approximation), and keys every file that any of those places holds under
//! the name, not only the first: a header that would shadow another changes the key by
//! appearing. A name found nowhere is keyed by name: it is one of NVRTC's built-in headers
//! (covered by NVRTC's own identity in the key) or missing (then the compile fails and stores
//! nothing). An include the scan cannot read (`#include MACRO`) makes the program uncacheable.
//!
//! Each header is read and hashed once per process while its size and modification time stay
//! the same, and only once its modification time is two seconds old (a file rewritten within
//! the clock's resolution would otherwise keep a stale hash).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// What the key holds of the headers.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Reached {
    /// Every file found, with the SHA-256 of its contents.
    pub(crate) files: BTreeMap<PathBuf, [u8; 32]>,
    /// Every name found in none of the places searched.
    pub(crate) unresolved: Vec<String>,
}

/// The headers `source` reaches through `include_dirs` and the `pre_includes` (`-include`)
/// NVRTC reads before it, or why they cannot be known. A name of `in_memory` (the program's
/// headers given in memory, name and contents) is that header, never a file: it is not looked
/// up on disk, and its own includes are followed (the caller keys its contents).
pub(crate) fn reached(
    source: &str,
    include_dirs: &[PathBuf],
    pre_includes: &[String],
    in_memory: &[(String, String)],
) -> Result<Reached, String> {
    let mut reached = Reached::default();
    let top = includes(source)?;
    if top.is_empty() && pre_includes.is_empty() {
        // The usual kernel: nothing to look up (not even the working directory).
        return Ok(reached);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut pending: Vec<(String, Quoting, PathBuf)> = Vec::new();
    for name in pre_includes {
        pending.push((name.clone(), Quoting::Quotes, cwd.clone()));
    }
    for (name, quoting) in top {
        pending.push((name, quoting, cwd.clone()));
    }
    let mut seen_names = std::collections::HashSet::new();
    while let Some((name, quoting, dir)) = pending.pop() {
        if !seen_names.insert((name.clone(), quoting, dir.clone())) {
            continue;
        }
        if let Some((_, contents)) = in_memory.iter().rev().find(|(known, _)| *known == name) {
            // NVRTC reads it from memory; a quoted include in it is looked for beside the
            // program, as the program's own are.
            let nested = includes(contents).map_err(|e| format!("header {name}: {e}"))?;
            for (name, quoting) in nested {
                pending.push((name, quoting, cwd.clone()));
            }
            continue;
        }
        let mut places = Vec::new();
        if quoting == Quoting::Quotes {
            places.push(dir.join(&name));
        }
        places.extend(include_dirs.iter().map(|d| d.join(&name)));
        if Path::new(&name).is_absolute() {
            places = vec![PathBuf::from(&name)];
        }
        let mut found = false;
        for place in places {
            if !place.is_file() {
                continue;
            }
            found = true;
            if reached.files.contains_key(&place) {
                continue;
            }
            let (hash, nested) = fingerprint(&place)?;
            reached.files.insert(place.clone(), hash);
            let here = place
                .parent()
                .map_or_else(|| cwd.clone(), Path::to_path_buf);
            for (name, quoting) in nested {
                pending.push((name, quoting, here.clone()));
            }
        }
        if !found && !reached.unresolved.contains(&name) {
            reached.unresolved.push(name);
        }
    }
    reached.unresolved.sort();
    Ok(reached)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Quoting {
    Quotes,
    Angles,
}

/// An `#include`'s name and quoting.
type Include = (String, Quoting);

/// Every `#include` (and `#include_next`) line of `text`: its name and how it was quoted; an
/// error for one the scan cannot read.
fn includes(text: &str) -> Result<Vec<Include>, String> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let rest = rest.trim_start();
        let Some(rest) = rest
            .strip_prefix("include_next")
            .or_else(|| rest.strip_prefix("include"))
        else {
            continue;
        };
        let rest = rest.trim_start();
        let (close, quoting) = match rest.chars().next() {
            Some('"') => ('"', Quoting::Quotes),
            Some('<') => ('>', Quoting::Angles),
            _ => {
                return Err(format!(
                    "line {}: `#include {}` names its header through a macro, which this scan \
                     cannot follow",
                    number + 1,
                    rest.trim()
                ))
            }
        };
        let name = &rest[1..];
        let Some(end) = name.find(close) else {
            return Err(format!("line {}: an unterminated #include", number + 1));
        };
        out.push((name[..end].to_owned(), quoting));
    }
    Ok(out)
}

/// What the process knows of a header it hashed: its size, modification time, inode, hash and
/// includes.
struct Known {
    len: u64,
    modified: SystemTime,
    /// The inode and the status-change time (which no one can set back, unlike the
    /// modification time: `cp -p` or `touch -d` restore that after a rewrite).
    inode: (u64, i64, i64),
    hash: [u8; 32],
    includes: Vec<Include>,
}

static MEMO: Mutex<Option<HashMap<PathBuf, Known>>> = Mutex::new(None);

/// How old a modification time must be before a hash is remembered by it.
const SETTLED: Duration = Duration::from_secs(2);

/// A header's hash and includes: from the memo where its size, time and inode are unchanged,
/// else read, hashed and scanned.
fn fingerprint(path: &Path) -> Result<([u8; 32], Vec<Include>), String> {
    let cannot = |e: std::io::Error| format!("cannot read {}: {e}", path.display());
    let metadata = std::fs::metadata(path).map_err(cannot)?;
    let modified = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let inode = inode(&metadata);
    // The later of the two times: a rewrite whose modification time was set back is recent.
    let changed = changed(&metadata).max(modified);
    {
        let memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = memo.as_ref().and_then(|m| m.get(path)) {
            if known.len == metadata.len() && known.modified == modified && known.inode == inode {
                return Ok((known.hash, known.includes.clone()));
            }
        }
    }
    let bytes = std::fs::read(path).map_err(cannot)?;
    let hash: [u8; 32] = Sha256::digest(&bytes).into();
    let nested = includes(&String::from_utf8_lossy(&bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let settled = SystemTime::now()
        .duration_since(changed)
        .is_ok_and(|age| age >= SETTLED);
    if settled && bytes.len() as u64 == metadata.len() {
        let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        memo.get_or_insert_with(HashMap::new).insert(
            path.to_path_buf(),
            Known {
                len: metadata.len(),
                modified,
                inode,
                hash,
                includes: nested.clone(),
            },
        );
    }
    Ok((hash, nested))
}

#[cfg(unix)]
fn inode(metadata: &std::fs::Metadata) -> (u64, i64, i64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.ino(), metadata.ctime(), metadata.ctime_nsec())
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> (u64, i64, i64) {
    (0, 0, 0)
}

/// The status-change time, as a `SystemTime` (the epoch where it is not known).
#[cfg(unix)]
fn changed(metadata: &std::fs::Metadata) -> SystemTime {
    use std::os::unix::fs::MetadataExt;
    let (secs, nanos) = (metadata.ctime(), metadata.ctime_nsec());
    match (u64::try_from(secs), u32::try_from(nanos)) {
        (Ok(secs), Ok(nanos)) => {
            SystemTime::UNIX_EPOCH + Duration::new(secs, nanos.min(999_999_999))
        }
        _ => SystemTime::UNIX_EPOCH,
    }
}

#[cfg(not(unix))]
fn changed(_: &std::fs::Metadata) -> SystemTime {
    SystemTime::UNIX_EPOCH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_lines_are_read_however_spaced_and_macros_refused() {
        let text = "#include \"a.h\"\n  #  include <b/c.h>\n#include_next \"d.h\"\n// #include \"e.h\"\nint x;\n";
        assert_eq!(
            includes(text).unwrap(),
            [
                ("a.h".to_owned(), Quoting::Quotes),
                ("b/c.h".to_owned(), Quoting::Angles),
                ("d.h".to_owned(), Quoting::Quotes),
            ]
        );
        assert!(includes("#include HEADER\n").unwrap_err().contains("macro"));
        assert!(includes("#include \"open\n").is_err());
    }

    #[test]
    fn every_place_that_holds_a_name_is_keyed_and_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(a.join("sub")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("val.h"), "#define VAL 1\n#include \"sub/more.h\"\n").unwrap();
        std::fs::write(
            a.join("sub/more.h"),
            "#include <deep.h>\n#include \"near.h\"\n#include <only_near.h>\n",
        )
        .unwrap();
        // A quoted name is looked up beside the file that includes it; an angled one is not.
        std::fs::write(a.join("sub/near.h"), "\n").unwrap();
        std::fs::write(a.join("sub/only_near.h"), "\n").unwrap();
        std::fs::write(b.join("val.h"), "#define VAL 2\n").unwrap();
        std::fs::write(b.join("deep.h"), "\n").unwrap();
        let dirs = [a.clone(), b.clone()];
        let found = reached(
            "#include \"val.h\"\n#include <cuda_fp16.h>\n",
            &dirs,
            &[],
            &[],
        )
        .unwrap();
        // Both val.h files (b's would be used were a's gone), the nested ones, and the name
        // found nowhere.
        let files: Vec<_> = found.files.keys().cloned().collect();
        assert_eq!(
            files,
            [
                a.join("sub/more.h"),
                a.join("sub/near.h"),
                a.join("val.h"),
                b.join("deep.h"),
                b.join("val.h")
            ]
        );
        assert_eq!(found.unresolved, ["cuda_fp16.h", "only_near.h"]);
        // A change to any of them changes its hash.
        let before = found.files[&b.join("deep.h")];
        std::fs::write(b.join("deep.h"), "int changed;\n").unwrap();
        let after = reached("#include \"val.h\"\n", &dirs, &[], &[]).unwrap();
        assert_ne!(after.files[&b.join("deep.h")], before);
        // A pre-included header is followed too; a macro include cannot be.
        let pre = reached("", &dirs, &["val.h".to_owned()], &[]).unwrap();
        assert!(pre.files.contains_key(&a.join("val.h")));
        assert!(reached("#include NAME\n", &dirs, &[], &[]).is_err());
    }

    #[test]
    fn a_header_in_memory_is_not_looked_up_on_disk_and_its_includes_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("given.h"), "#include \"shadowed.h\"\n").unwrap();
        std::fs::write(dir.path().join("nested.h"), "\n").unwrap();
        let dirs = [dir.path().to_path_buf()];
        let memory = [(
            "given.h".to_owned(),
            "#include <nested.h>\n#include <cuda_fp16.h>\n".to_owned(),
        )];
        let found = reached("#include \"given.h\"\n", &dirs, &[], &memory).unwrap();
        // Catches the file of the same name keyed (and followed) instead of the header in
        // memory, and the header in memory's own includes left out.
        let files: Vec<_> = found.files.keys().cloned().collect();
        assert_eq!(files, [dir.path().join("nested.h")]);
        // Catches the header in memory taken for a built-in one (keyed by name alone).
        assert_eq!(found.unresolved, ["cuda_fp16.h"]);
        // A header in memory that names its include through a macro cannot be followed.
        let memory = [("given.h".to_owned(), "#include NAME\n".to_owned())];
        let why = reached("#include <given.h>\n", &dirs, &[], &memory).unwrap_err();
        assert!(why.contains("given.h") && why.contains("macro"), "{why}");
    }

    #[test]
    fn a_remembered_hash_is_dropped_when_the_time_or_the_inode_changes() {
        use std::time::{Duration, SystemTime};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("same_size.h");
        let set_time = |path: &Path, ago: u64| {
            let file = std::fs::File::options().write(true).open(path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(ago))
                .unwrap();
        };
        let hash = |path: &Path| fingerprint(path).unwrap().0;
        std::fs::write(&path, "int a;\n").unwrap();
        set_time(&path, 100);
        let first = hash(&path);
        assert_eq!(hash(&path), first, "an unchanged header hashes the same");
        // Rewritten in place (same inode, same size), with a new time: hashed again.
        std::fs::write(&path, "int b;\n").unwrap();
        set_time(&path, 50);
        let second = hash(&path);
        assert_ne!(
            second, first,
            "a header rewritten in place kept its old hash"
        );
        // Replaced by another file of the same size and time (a new inode): hashed again.
        let other = dir.path().join("other.h");
        std::fs::write(&other, "int c;\n").unwrap();
        let time = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&other)
            .unwrap()
            .set_modified(time)
            .unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(
            hash(&path),
            second,
            "a header replaced by rename kept its old hash"
        );
    }

    /// Puts `path`'s present state into the memo, as a settled header's (what a header left
    /// alone for two seconds gets), without waiting the two seconds; then lets the kernel's
    /// clock tick past that state's times (it stamps files with a coarse clock), as they have
    /// for a settled header.
    fn memo_insert_settled(path: &Path) {
        let metadata = std::fs::metadata(path).unwrap();
        let bytes = std::fs::read(path).unwrap();
        let mut memo = MEMO.lock().unwrap();
        memo.get_or_insert_with(HashMap::new).insert(
            path.to_path_buf(),
            Known {
                len: metadata.len(),
                modified: metadata.modified().unwrap(),
                inode: inode(&metadata),
                hash: Sha256::digest(&bytes).into(),
                includes: Vec::new(),
            },
        );
        drop(memo);
        std::thread::sleep(std::time::Duration::from_millis(30));
    }

    #[test]
    fn the_memo_trusts_size_time_and_inode_of_settled_headers_only() {
        use std::time::{Duration, SystemTime};
        let dir = tempfile::tempdir().unwrap();
        let hash = |path: &Path| fingerprint(path).unwrap().0;
        // Rewrites `path` in place with `text`, keeping its modification time.
        let rewrite = |path: &Path, text: &str| {
            let time = std::fs::metadata(path).unwrap().modified().unwrap();
            std::fs::write(path, text).unwrap();
            let file = std::fs::File::options().write(true).open(path).unwrap();
            file.set_modified(time).unwrap();
        };
        let aged = |path: &Path, ago: u64| {
            let file = std::fs::File::options().write(true).open(path).unwrap();
            file.set_modified(SystemTime::now() - Duration::from_secs(ago))
                .unwrap();
        };
        let remembered = |path: &Path| {
            let memo = MEMO.lock().unwrap();
            memo.as_ref().is_some_and(|m| m.contains_key(path))
        };
        // A header whose modification time is old but which changed status just now (made,
        // or rewritten with its time set back) is not remembered yet: its rewrite is seen.
        let settled = dir.path().join("settled.h");
        std::fs::write(&settled, "int a;\n").unwrap();
        aged(&settled, 100);
        let first = hash(&settled);
        assert!(
            !remembered(&settled),
            "a header changed just now was remembered"
        );
        rewrite(&settled, "int b;\n");
        let second = hash(&settled);
        assert_ne!(
            second, first,
            "a rewrite with its time set back kept the old hash"
        );
        // Remembered, a rewrite of the same size with the modification time set back is seen
        // too (review N15): the status-change time cannot be set back.
        memo_insert_settled(&settled);
        assert!(remembered(&settled));
        rewrite(&settled, "int c;\n");
        assert_ne!(
            hash(&settled),
            second,
            "a remembered header kept a stale hash"
        );
        // ... and across a change of size.
        memo_insert_settled(&settled);
        rewrite(&settled, "int cc;\n");
        assert_ne!(
            hash(&settled),
            second,
            "a header that changed size kept its hash"
        );
        // A header modified within the last two seconds is not remembered: a rewrite in the
        // same clock tick is seen.
        let fresh = dir.path().join("fresh.h");
        std::fs::write(&fresh, "int c;\n").unwrap();
        let before = hash(&fresh);
        rewrite(&fresh, "int d;\n");
        assert_ne!(hash(&fresh), before, "a fresh header was remembered");
    }
}
