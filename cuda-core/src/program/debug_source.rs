//! The source of a program written where a debugger looks for it
//! ([`ProgramOptions::debug_source_dir`](super::ProgramOptions::debug_source_dir)): NVRTC
//! records the program's name as the file of its line information, so the program is compiled
//! under the absolute path of its source file, and the file is written there, once, never over
//! a file that holds something else.

use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

use crate::error::{Cause, Error, Result};
use crate::trust::{self, Trust};

/// The file the source of a program named `name` goes to: `name` in `dir`, `dir` made absolute
/// (from the working directory) so that the path NVRTC records names it from anywhere. The
/// name must be one plain file name (`kernel.cu`), and the path UTF-8, as NVRTC takes it.
pub(super) fn place(dir: &Path, name: &str) -> Result<PathBuf> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0');
    if !plain {
        return Err(refused(format!(
            "the program's name {name:?} is not a plain file name, which the source is written \
             as; give it one with Program::with_name (\"kernel.cu\")"
        )));
    }
    let dir = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| io_error(dir, e))?
            .join(dir)
    };
    let path = dir.join(name);
    if path.to_str().is_none() {
        return Err(refused(format!(
            "{} is not UTF-8, and NVRTC takes the program's name as text",
            path.display()
        )));
    }
    Ok(path)
}

/// Writes `source` to `path` (from [`place`]): its directory made `0700` where missing and
/// opened without following a link, then, through it, the file written `0600` to a new
/// temporary name and linked to its own (which never replaces a file). A file already there
/// that holds `source` is left as it is; any other (another source of the same name, a link,
/// something not a file) is [`Error::InvalidArgument`], never overwritten.
pub(super) fn write(path: &Path, source: &str) -> Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(refused(format!("{} names no file", path.display())));
    };
    trust::create_dirs(dir, Trust::Private).map_err(|e| io_error(dir, e))?;
    // Shared: a directory others can write is taken (a source file is read, not run); a link
    // is not, since it can be pointed elsewhere between the check and the debugger's read.
    let dir_fd = trust::open_dir(dir, Trust::Shared, false)
        .map_err(|r| refused(format!("{}: {}", dir.display(), r.reason)))?;
    if holds(&dir_fd, name, path, source)? {
        return Ok(());
    }
    let (temp, mut file) = create_temp(&dir_fd).map_err(|e| io_error(dir, e))?;
    let written = file.write_all(source.as_bytes()).and_then(|()| {
        drop(file);
        // A hard link fails where the name is taken: a file that appeared meanwhile (the same
        // program compiled on another thread, say) is never replaced.
        rustix::fs::linkat(&dir_fd, &temp, &dir_fd, name, AtFlags::empty()).map_err(Into::into)
    });
    let _ = trust::remove_at(&dir_fd, &temp);
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if holds(&dir_fd, name, path, source)? {
                Ok(())
            } else {
                Err(different(path))
            }
        }
        Err(e) => Err(io_error(path, e)),
    }
}

/// Whether `name` in `dir` is there and holds `source`: `false` where it is not there, an
/// error where it holds something else or is not a regular file.
fn holds(dir: &OwnedFd, name: &str, path: &Path, source: &str) -> Result<bool> {
    let file = match trust::open_file_at(dir, name) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(refused(format!(
                "{} is a symbolic link; the source is not written through one. Remove it, or \
                 give another directory or program name",
                path.display()
            )))
        }
        Err(e) => return Err(io_error(path, e)),
    };
    let status = trust::status(&file).map_err(|e| io_error(path, e))?;
    if status.file_type != FileType::RegularFile {
        return Err(refused(format!(
            "{} is there and is not a regular file; give another directory or program name",
            path.display()
        )));
    }
    // Read no further than a file of the source's length would go.
    let mut held = Vec::with_capacity(source.len());
    let limit = u64::try_from(source.len())
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    file.take(limit)
        .read_to_end(&mut held)
        .map_err(|e| io_error(path, e))?;
    if held == source.as_bytes() {
        Ok(true)
    } else {
        Err(different(path))
    }
}

/// Creates a new temporary file in `dir`, trying up to eight names where one is taken.
fn create_temp(dir: &OwnedFd) -> io::Result<(String, std::fs::File)> {
    let mut last = None;
    for _ in 0..8 {
        let name = trust::unique_name(".cuda-core-source-");
        match trust::create_file_at(dir, &name, Trust::Private) {
            Ok(file) => return Ok((name, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}

fn different(path: &Path) -> Error {
    refused(format!(
        "{} holds something other than this program's source, and is not overwritten: \
         remove it (an older source of the same name, say), or give another directory or \
         program name (Program::with_name)",
        path.display()
    ))
}

fn refused(reason: String) -> Error {
    Error::InvalidArgument {
        name: "debug_source_dir",
        reason,
    }
}

fn io_error(path: &Path, error: io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: Cause::new(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "extern \"C\" __global__ void k() {}\n";

    #[test]
    fn the_source_goes_under_the_programs_name_in_the_directory_made_absolute() {
        assert_eq!(
            place(Path::new("/src/dbg"), "kernel.cu").unwrap(),
            Path::new("/src/dbg/kernel.cu")
        );
        // Relative to the working directory, but recorded absolute (bug caught: a relative
        // path, which a debugger resolves against its own working directory).
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            place(Path::new("dbg"), "k.cu").unwrap(),
            here.join("dbg/k.cu")
        );
        // A name that is not one file name is refused (bug caught: `../x` written outside the
        // directory, or a name with a folder in it written into a folder not made).
        for name in ["", ".", "..", "../k.cu", "sub/k.cu", "/abs/k.cu"] {
            let err = place(Path::new("/src"), name).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "debug_source_dir", reason }
                    if reason.contains("plain file name")),
                "{name:?}: {err}"
            );
        }
    }

    #[test]
    fn the_source_is_written_once_and_never_over_another_file() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let path = base.path().join("made/k.cu");
        write(&path, SOURCE).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SOURCE);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // The user's own: the directory made 0700, the file 0600.
        assert_eq!((mode(path.parent().unwrap()), mode(&path)), (0o700, 0o600));
        // Again, the same source: left as it is (bug caught: refused, so that a program
        // compiles only once).
        write(&path, SOURCE).unwrap();
        // Another source of the same name: refused, the file unchanged (bug caught: a file
        // overwritten silently, a user's own file among them).
        let err = write(&path, "__global__ void other() {}\n").unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "debug_source_dir", reason }
                if reason.contains("not overwritten") && reason.contains("k.cu")),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SOURCE);
        // A longer file that starts with the source is another file too (bug caught: a
        // comparison of the source's length only).
        let longer = base.path().join("longer.cu");
        std::fs::write(&longer, format!("{SOURCE}// more\n")).unwrap();
        assert!(write(&longer, SOURCE).is_err());
        // A link is not written through, even to the same source.
        let link = base.path().join("link.cu");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = write(&link, SOURCE).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // A directory in the file's place is not a file.
        std::fs::create_dir(base.path().join("d.cu")).unwrap();
        let err = write(&base.path().join("d.cu"), SOURCE).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["k.cu"]);
    }
}
