//! Finding a program built beside the running bench binary.

use std::path::{Path, PathBuf};

/// Where the example binary `name` may be, seen from the running executable `exe`, in the order
/// tried:
///
/// - `<exe dir>/../examples/<name>`: cargo puts bench binaries in `target/<profile>/deps/` and
///   examples in `target/<profile>/examples/`; binaries copied to a GPU machine as
///   `<dir>/benches/` and `<dir>/examples/` are found the same way;
/// - `<exe dir>/<name>` and `<exe dir>/../<name>`: a copy beside the binary, or a cargo `bin`
///   target (`target/<profile>/<name>`).
pub fn candidates(exe: &Path, name: &str) -> Vec<PathBuf> {
    let Some(dir) = exe.parent() else {
        return Vec::new();
    };
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let mut out = vec![dir.join("..").join("examples").join(&file), dir.join(&file)];
    if let Some(up) = dir.parent() {
        out.push(up.join(&file));
    }
    out
}

/// The example binary `name` near the running executable (see [`candidates`]), or why it was
/// not found, listing the places looked at.
pub fn example(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("no current executable: {e}"))?;
    let tried = candidates(&exe, name);
    tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        let places: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
        format!("no {name} binary at {}", places.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cargo_bench_finds_the_example_beside_deps() {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join("target/release");
        std::fs::create_dir_all(release.join("deps")).unwrap();
        std::fs::create_dir_all(release.join("examples")).unwrap();
        std::fs::write(release.join("examples/first_launch"), b"").unwrap();
        let exe = release.join("deps/startup-0123456789abcdef");
        let found = candidates(&exe, "first_launch")
            .into_iter()
            .find(|p| p.is_file())
            .unwrap();
        assert_eq!(
            found.canonicalize().unwrap(),
            release
                .join("examples/first_launch")
                .canonicalize()
                .unwrap()
        );
    }

    #[test]
    fn a_bundle_finds_the_example_in_its_examples_folder() {
        let dir = tempfile::tempdir().unwrap();
        let gpu = dir.path().join(".gpu");
        std::fs::create_dir_all(gpu.join("benches")).unwrap();
        std::fs::create_dir_all(gpu.join("examples")).unwrap();
        std::fs::write(gpu.join("examples/first_launch"), b"").unwrap();
        let first = candidates(&gpu.join("benches/startup"), "first_launch")
            .into_iter()
            .next()
            .unwrap();
        assert!(first.is_file(), "{}", first.display());
    }

    #[test]
    fn a_cargo_bin_is_found_above_deps() {
        let exe = Path::new("/t/release/deps/startup-abc");
        let list = candidates(exe, "first_launch");
        assert!(list.contains(&PathBuf::from(format!(
            "/t/release/first_launch{}",
            std::env::consts::EXE_SUFFIX
        ))));
    }

    #[test]
    fn a_missing_example_lists_the_places_tried() {
        let err = example("no-such-example-here").unwrap_err();
        assert!(err.contains("no no-such-example-here binary at"), "{err}");
        assert!(err.contains("examples"), "{err}");
    }
}
