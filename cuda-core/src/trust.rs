//! Who may write what the crate reads from disk and then trusts: program cache entries, the
//! precompiled headers NVRTC reads back, the crate's temporary files.
//!
//! The rule (the threat model in [`guide::threat_model`](crate::guide::threat_model) says why):
//! a directory the crate trusts is owned by the effective user and not writable by group or
//! others, is opened without following a symbolic link, and is then used through its open
//! descriptor, so that renaming another directory into its place later changes nothing; a file
//! it trusts is a regular file, not a symbolic link, owned by the effective user and not
//! writable by group or others. A directory the user opens as shared trusts every user who can
//! write to it; only files writable by every user are refused there.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

/// Whose files a directory may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trust {
    /// Only the effective user's: the directory is theirs alone.
    Private,
    /// Every user who can write to the directory (the user said so).
    Shared,
}

/// What `stat` says about a file or directory, in the types the crate uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Status {
    pub file_type: FileType,
    /// The permission bits (`0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub len: u64,
    pub modified: SystemTime,
    pub dev: u64,
    pub ino: u64,
}

impl Status {
    // The field types of `stat` differ between architectures; every value fits.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn of(stat: &Stat) -> Status {
        let secs = stat.st_mtime as i64;
        let nanos = (stat.st_mtime_nsec as u64).min(999_999_999) as u32;
        let modified = u64::try_from(secs)
            .map(|secs| SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
            .unwrap_or(SystemTime::UNIX_EPOCH);
        Status {
            file_type: FileType::from_raw_mode(stat.st_mode as _),
            mode: (stat.st_mode as u32) & 0o7777,
            uid: stat.st_uid as u32,
            len: stat.st_size as u64,
            modified,
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        }
    }
}

/// The process's effective user id.
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// `fstat` of an open file or directory.
pub(crate) fn status(fd: impl AsFd) -> io::Result<Status> {
    Ok(Status::of(&rustix::fs::fstat(fd)?))
}

/// `fstatat` of `name` in `dir`, not following a symbolic link.
pub(crate) fn status_at(dir: impl AsFd, name: &str) -> io::Result<Status> {
    Ok(Status::of(&rustix::fs::statat(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
    )?))
}

/// Who may write, in words: `group`, `others`, `group and others`.
fn writers(mode: u32) -> &'static str {
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (true, true) => "group and others",
        (true, false) => "its group",
        _ => "every user",
    }
}

/// Why a directory the crate is about to trust is not trusted under `Private`, if it is not.
pub(crate) fn untrusted_dir(status: &Status, path: &Path) -> Option<String> {
    let me = effective_uid();
    if status.file_type != FileType::Directory {
        return Some("not a directory".to_owned());
    }
    if status.uid != me {
        return Some(format!(
            "the directory is owned by user {}, not by this process's user ({me}): its owner \
             could place code there that this process would load and run. Use a directory of \
             your own",
            status.uid
        ));
    }
    if status.mode & 0o022 != 0 {
        return Some(format!(
            "the directory is writable by {} (mode {:03o}): any of them could place code there \
             that this process would load and run. Fix it with `chmod 700 {}`",
            writers(status.mode),
            status.mode,
            path.display()
        ));
    }
    None
}

/// Why a file the crate is about to read and trust is not trusted, if it is not.
pub(crate) fn untrusted_file(status: &Status, trust: Trust) -> Option<String> {
    if status.file_type != FileType::RegularFile {
        return Some("not a regular file".to_owned());
    }
    match trust {
        Trust::Private if status.uid != effective_uid() => Some(format!(
            "owned by user {}, not by this process's user ({})",
            status.uid,
            effective_uid()
        )),
        Trust::Private if status.mode & 0o022 != 0 => Some(format!(
            "writable by {} (mode {:03o})",
            writers(status.mode),
            status.mode
        )),
        Trust::Shared if status.mode & 0o002 != 0 => {
            Some(format!("writable by every user (mode {:03o})", status.mode))
        }
        _ => None,
    }
}

/// Why a directory could not be opened as trusted.
#[derive(Debug)]
pub(crate) struct Refused {
    pub reason: String,
    pub source: Option<io::Error>,
}

impl Refused {
    fn io(what: &str, error: io::Error) -> Refused {
        Refused {
            reason: format!("{what}: {error}"),
            source: Some(error),
        }
    }
}

/// Makes `path` and its missing parents, each new one `0700` (private) or as the umask says
/// (shared): mode bits are only ever taken away by the umask, so a permissive umask opens
/// nothing.
pub(crate) fn create_dirs(path: &Path, trust: Trust) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let mode = match trust {
        Trust::Private => 0o700,
        Trust::Shared => 0o777,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(path)
}

/// Opens the directory `path` (making it first where `create` says so) without following a
/// symbolic link in its last component, and checks it under `trust`.
pub(crate) fn open_dir(path: &Path, trust: Trust, create: bool) -> Result<OwnedFd, Refused> {
    if create {
        create_dirs(path, trust).map_err(|e| Refused::io("cannot create the directory", e))?;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        // A link to a directory fails with ENOTDIR under O_DIRECTORY | O_NOFOLLOW, and with
        // ELOOP on some systems.
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) =>
        {
            return Err(Refused {
                reason: "the directory is a symbolic link: a link can be pointed elsewhere \
                         later. Give the directory it points to, once you have checked who can \
                         write there"
                    .to_owned(),
                source: None,
            })
        }
        Err(rustix::io::Errno::NOTDIR) => {
            return Err(Refused {
                reason: "not a directory".to_owned(),
                source: None,
            })
        }
        Err(e) => return Err(Refused::io("cannot open the directory", e.into())),
    };
    if trust == Trust::Private {
        let status = status(&fd).map_err(|e| Refused::io("cannot read the directory", e))?;
        if let Some(reason) = untrusted_dir(&status, path) {
            return Err(Refused {
                reason,
                source: None,
            });
        }
    }
    Ok(fd)
}

/// Checks a file that a tool the crate runs (NVRTC) will open by its path: where it exists,
/// it must be a regular file (not a symbolic link) that the effective user owns and that no
/// one else can write; where `must_exist`, it must exist. Every directory on the path its
/// directory resolves to (symbolic links followed), up to the root, must be owned by the
/// effective user or by root, and writable by others only if sticky (as `/tmp` is: there no
/// one can rename or delete another user's file), so that no one else can put another file,
/// or another directory above it, in its place before the tool opens it.
pub(crate) fn check_named_file(path: &Path, must_exist: bool) -> Result<(), String> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // The path the tool's open will take: through the links as they are now, each of which
    // lies in a directory checked below, so that no one else can point it elsewhere.
    let resolved = std::fs::canonicalize(parent)
        .map_err(|e| format!("cannot read its directory {}: {e}", parent.display()))?;
    for dir in resolved.ancestors() {
        check_path_dir(dir)?;
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => {
            let status = status(&fd).map_err(|e| format!("cannot read it: {e}"))?;
            untrusted_file(&status, Trust::Private).map_or(Ok(()), Err)
        }
        Err(rustix::io::Errno::LOOP) => Err("it is a symbolic link".to_owned()),
        Err(rustix::io::Errno::NOENT) if !must_exist => Ok(()),
        Err(e) => Err(format!("cannot open it: {e}")),
    }
}

/// Refuses `dir`, a directory on the path to a file a tool opens by name, where another user
/// could change what it holds: a directory neither the effective user's nor root's, or one
/// that others can write and that is not sticky.
fn check_path_dir(dir: &Path) -> Result<(), String> {
    let status = rustix::fs::stat(dir)
        .map(|stat| Status::of(&stat))
        .map_err(|e| format!("cannot read the directory {}: {e}", dir.display()))?;
    let me = effective_uid();
    if status.uid != me && status.uid != 0 {
        return Err(format!(
            "the directory {} on its path is owned by user {}, neither this process's user \
             ({me}) nor root: its owner could put another file in its place",
            dir.display(),
            status.uid
        ));
    }
    if status.mode & 0o022 != 0 && status.mode & 0o1000 == 0 {
        return Err(format!(
            "the directory {} on its path is writable by {} (mode {:03o}) and not sticky: \
             another user could put their file in its place",
            dir.display(),
            writers(status.mode),
            status.mode
        ));
    }
    Ok(())
}

/// Opens `name` in `dir` for reading: never through a symbolic link (`O_NOFOLLOW`), and
/// without waiting on a FIFO or device put in its place (`O_NONBLOCK`, which changes nothing
/// for a regular file).
pub(crate) fn open_file_at(dir: impl AsFd, name: &str) -> io::Result<std::fs::File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?.into())
}

/// Creates the new file `name` in `dir` for writing (`O_EXCL`, so never an existing file or
/// a link), `0600` (private) or as the umask says (shared).
pub(crate) fn create_file_at(
    dir: impl AsFd,
    name: &str,
    trust: Trust,
) -> io::Result<std::fs::File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = match trust {
        Trust::Private => Mode::from_raw_mode(0o600),
        Trust::Shared => Mode::from_raw_mode(0o666),
    };
    Ok(rustix::fs::openat(dir, name, flags, mode)?.into())
}

/// Renames `from` to `to`, both in `dir`.
pub(crate) fn rename_at(dir: impl AsFd, from: &str, to: &str) -> io::Result<()> {
    let dir = dir.as_fd();
    Ok(rustix::fs::renameat(dir, from, dir, to)?)
}

/// Deletes the file `name` in `dir`.
pub(crate) fn remove_at(dir: impl AsFd, name: &str) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
}

/// The names in `dir` (not `.` and `..`); names that are not UTF-8 are left out.
pub(crate) fn names(dir: impl AsFd) -> io::Result<Vec<String>> {
    Ok(names_and_inodes(dir)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The names in the directory `dir` (without `.` and `..`; names that are not UTF-8 are left
/// out), each with the inode number the listing gives, which names the same file in two listings where the file was not replaced
/// (on every file system; on some, such as overlayfs, it may differ from `stat`'s).
pub(crate) fn names_and_inodes(dir: impl AsFd) -> io::Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name != "." && name != ".." {
            out.push((name.to_owned(), entry.ino()));
        }
    }
    Ok(out)
}

/// Whether the directory `dir` has been deleted since it was opened.
pub(crate) fn deleted(dir: impl AsFd) -> bool {
    rustix::fs::fstat(dir).is_ok_and(|stat| stat.st_nlink == 0)
}

/// A name no other file of this process has had, and that no other process is likely to
/// pick: `prefix`, this process's id, a counter and a random number. A name left by a dead
/// process with the same id can still be taken: callers create with `O_EXCL` (or `mkdir`)
/// and try another.
pub(crate) fn unique_name(prefix: &str) -> String {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = std::collections::hash_map::RandomState::new().hash_one(count);
    format!("{prefix}{}-{count}-{random:016x}", std::process::id())
}

/// A directory of the process's own in the system's temporary directory, `0700`, made anew
/// (`mkdir` never follows a link or reuses a directory that exists) and deleted with what it
/// holds when dropped: for files the driver writes by name and the crate reads back.
#[derive(Debug)]
pub(crate) struct PrivateTempDir {
    path: PathBuf,
}

impl PrivateTempDir {
    /// A new directory whose name starts with `prefix`.
    pub(crate) fn new(prefix: &str) -> io::Result<PrivateTempDir> {
        use std::os::unix::fs::DirBuilderExt;
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..8 {
            let path = base.join(unique_name(prefix));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(PrivateTempDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary directory name")))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_directory_is_refused_when_others_can_write_it_or_it_is_a_link() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("d");
        // Made 0700 whatever the umask allows (the umask only takes bits away).
        let fd = open_dir(&dir, Trust::Private, true).unwrap();
        assert_eq!(status(&fd).unwrap().mode, 0o700);
        for (mode, says) in [
            (0o770, "its group"),
            (0o707, "every user"),
            (0o777, "group and others"),
        ] {
            chmod(&dir, mode);
            let refused = open_dir(&dir, Trust::Private, false).unwrap_err();
            assert!(
                refused.reason.contains(says),
                "{mode:o}: {}",
                refused.reason
            );
            assert!(refused.reason.contains("chmod 700"), "{}", refused.reason);
            // Shared trusts its writers.
            assert!(open_dir(&dir, Trust::Shared, false).is_ok());
        }
        chmod(&dir, 0o700);
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        for trust in [Trust::Private, Trust::Shared] {
            let refused = open_dir(&link, trust, false).unwrap_err();
            assert!(
                refused.reason.contains("symbolic link"),
                "{}",
                refused.reason
            );
        }
        std::fs::write(base.path().join("f"), b"").unwrap();
        let refused = open_dir(&base.path().join("f"), Trust::Private, false).unwrap_err();
        assert_eq!(refused.reason, "not a directory");
    }

    #[test]
    fn files_are_trusted_by_owner_mode_and_kind() {
        let base = tempfile::tempdir().unwrap();
        let fd = open_dir(base.path(), Trust::Shared, false).unwrap();
        let file = create_file_at(&fd, "f", Trust::Private).unwrap();
        drop(file);
        let path = base.path().join("f");
        let check = |trust| untrusted_file(&status_at(&fd, "f").unwrap(), trust);
        assert_eq!(status_at(&fd, "f").unwrap().mode, 0o600);
        assert_eq!(check(Trust::Private), None);
        chmod(&path, 0o620);
        assert!(check(Trust::Private).unwrap().contains("its group"));
        assert_eq!(check(Trust::Shared), None);
        chmod(&path, 0o602);
        assert!(check(Trust::Private).unwrap().contains("every user"));
        assert!(check(Trust::Shared).unwrap().contains("every user"));
        chmod(&path, 0o600);
        std::os::unix::fs::symlink(&path, base.path().join("l")).unwrap();
        assert_eq!(
            open_file_at(&fd, "l").unwrap_err().raw_os_error(),
            Some(rustix::io::Errno::LOOP.raw_os_error())
        );
        assert_eq!(
            untrusted_file(&status_at(&fd, "l").unwrap(), Trust::Shared).as_deref(),
            Some("not a regular file")
        );
        // O_EXCL: an existing name is never opened for writing.
        assert_eq!(
            create_file_at(&fd, "f", Trust::Private).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
    }

    #[test]
    fn a_named_file_is_checked_with_its_directory() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("h.pch");
        // Not there: fine to create, not to read.
        assert_eq!(check_named_file(&file, false), Ok(()));
        assert!(check_named_file(&file, true)
            .unwrap_err()
            .contains("cannot open"));
        std::fs::write(&file, b"pch").unwrap();
        chmod(&file, 0o600);
        assert_eq!(check_named_file(&file, true), Ok(()));
        chmod(&file, 0o666);
        assert!(check_named_file(&file, true)
            .unwrap_err()
            .contains("writable"));
        chmod(&file, 0o600);
        let link = base.path().join("l.pch");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(
            check_named_file(&link, false).unwrap_err(),
            "it is a symbolic link"
        );
        // A directory others can write: refused unless sticky.
        chmod(base.path(), 0o777);
        assert!(check_named_file(&file, true)
            .unwrap_err()
            .contains("not sticky"));
        chmod(base.path(), 0o1777);
        assert_eq!(check_named_file(&file, true), Ok(()));
        chmod(base.path(), 0o700);
    }

    /// Review W11: a file NVRTC opens by name is only as safe as every directory on its path.
    /// A directory higher up that another user owns, or that others can write without the
    /// sticky bit, lets them rename the checked directory away and put one of theirs in its
    /// place before NVRTC opens the file. Also through a symbolic link: what counts is the
    /// path the name resolves to.
    #[test]
    fn a_named_file_is_refused_below_a_directory_another_user_controls() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("not run: giving a directory to another user needs root");
            return;
        }
        const OTHER_USER: u32 = 65534;
        let base = tempfile::tempdir().unwrap();
        let theirs = base.path().join("theirs");
        let mine = theirs.join("mine");
        std::fs::create_dir_all(&mine).unwrap();
        chmod(&theirs, 0o755);
        chmod(&mine, 0o700);
        let file = mine.join("h.pch");
        std::fs::write(&file, b"pch").unwrap();
        chmod(&file, 0o600);
        // The positive control: the whole path this user's.
        assert_eq!(check_named_file(&file, true), Ok(()));
        std::os::unix::fs::lchown(&theirs, Some(OTHER_USER), None).unwrap();
        // Bug caught: only the file's own directory (this user's) was checked.
        let reason = check_named_file(&file, true).unwrap_err();
        assert!(
            reason.contains(&format!("owned by user {OTHER_USER}"))
                && reason.contains(&theirs.display().to_string()),
            "{reason}"
        );
        // The same file through a link in a directory of this user's: the link's target is
        // below their directory all the same (bug caught: the ancestors of the name as
        // written checked, not of where it leads).
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let reason = check_named_file(&link.join("h.pch"), true).unwrap_err();
        assert!(
            reason.contains(&format!("owned by user {OTHER_USER}")),
            "{reason}"
        );
        // A directory higher up that others can write, not sticky: refused too.
        std::os::unix::fs::lchown(&theirs, Some(effective_uid()), None).unwrap();
        chmod(&theirs, 0o777);
        let reason = check_named_file(&file, true).unwrap_err();
        assert!(reason.contains("not sticky"), "{reason}");
        // Sticky (as /tmp is), it holds: no one renames what another user owns there.
        chmod(&theirs, 0o1777);
        assert_eq!(check_named_file(&file, true), Ok(()));
        chmod(&theirs, 0o700);
    }

    #[test]
    fn a_private_temporary_directory_is_0700_new_and_deleted() {
        let a = PrivateTempDir::new("cuda-core-test").unwrap();
        let b = PrivateTempDir::new("cuda-core-test").unwrap();
        assert_ne!(a.path(), b.path());
        let meta = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
        std::fs::write(a.path().join("x"), b"x").unwrap();
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
    }
}
