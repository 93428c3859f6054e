//! Compiling through the program caches (NVRTC, no GPU): hits skip the compiler and give the
//! same code; keys cover every input; corrupt entries are misses.

use cuda_core::{
    cache::{FileStreamProgramCache, InMemoryProgramCache, ProgramCache},
    nvrtc_version, CodeType, Program, ProgramOptions,
};
use proptest::prelude::*;

fn nvrtc() -> bool {
    match nvrtc_version() {
        Ok(_) => true,
        Err(e) => {
            crate::common::not_run("nvrtc", &format!("no NVRTC: {e}"));
            false
        }
    }
}

fn program(source: &str) -> Program {
    Program::new(source, ProgramOptions::default().with_arch("90".to_owned()))
}

const KERNEL: &str = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }";

#[test]
fn a_hit_returns_what_the_miss_compiled() {
    if !nvrtc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = FileStreamProgramCache::new(dir.path(), 64 << 20).unwrap();
    let memory = InMemoryProgramCache::new(64 << 20);
    let template = "template <typename T> __global__ void t(T* x) { *x = T(1); }";
    for cache in [&file as &dyn ProgramCache, &memory] {
        let p = program(template);
        let key = p.cache_key(CodeType::Cubin, &["t<int>"]).unwrap();
        assert!(cache.get(&key).is_none());
        let cold = p
            .compile_cached(cache, CodeType::Cubin, &["t<int>"])
            .unwrap();
        assert!(cache.get(&key).is_some(), "{cache:?} stored the entry");
        let warm = p
            .compile_cached(cache, CodeType::Cubin, &["t<int>"])
            .unwrap();
        assert_eq!(cold.code(), warm.code());
        assert_eq!(warm.lowered_name("t<int>"), cold.lowered_name("t<int>"));
        assert_eq!(warm.code_type(), CodeType::Cubin);
        // A different target is a different entry.
        let ptx = p.compile_cached(cache, CodeType::Ptx, &["t<int>"]).unwrap();
        assert_eq!(ptx.code_type(), CodeType::Ptx);
    }
    // The in-memory cache hands back the object it holds (loaded once), not a fresh parse.
    let p = program(template);
    let first = p
        .compile_cached(&memory, CodeType::Cubin, &["t<int>"])
        .unwrap();
    let second = p
        .compile_cached(&memory, CodeType::Cubin, &["t<int>"])
        .unwrap();
    assert_eq!(first.code().as_ptr(), second.code().as_ptr());
    // A corrupted entry is a miss that recompiles, not a crash or wrong code.
    let p = program(KERNEL);
    let key = p.cache_key(CodeType::Cubin, &[]).unwrap();
    let good = p.compile_cached(&file, CodeType::Cubin, &[]).unwrap();
    let entry = dir.path().join(key.to_hex());
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    let again = p.compile_cached(&file, CodeType::Cubin, &[]).unwrap();
    assert_eq!(again.code(), good.code());
    // Garbage stored under the key by another writer is a miss too.
    memory.put(&key, b"not an object");
    assert_eq!(
        p.compile_cached(&memory, CodeType::Cubin, &[])
            .unwrap()
            .code(),
        good.code()
    );
}

#[test]
fn an_unwritable_cache_still_compiles() {
    if !nvrtc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = FileStreamProgramCache::new(dir.path().join("c"), 1 << 20).unwrap();
    // Replace the directory with a file: nothing can be written any more.
    std::fs::remove_dir_all(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c"), b"a file").unwrap();
    let code = program(KERNEL)
        .compile_cached(&cache, CodeType::Ptx, &[])
        .unwrap();
    assert!(!code.code().is_empty());
    assert!(cache.failed_puts() >= 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Equal inputs give equal keys; any one changed input changes the key.
    #[test]
    fn keys_cover_every_input(
        source in "[ -~]{0,40}",
        name in "[a-z]{1,8}\\.cu",
        define in "[A-Z]{1,4}",
        arch in prop::sample::select(vec!["80", "90", "90a"]),
        expressions in prop::collection::vec("[a-z<>]{1,6}", 0..3),
        which in 0usize..7,
    ) {
        if nvrtc_version().is_err() {
            return Ok(());
        }
        let options = ProgramOptions::default().with_arch(arch.to_owned()).with_defines(vec![(define.clone(), None)]);
        let p = Program::new(source.clone(), options.clone()).with_name(name.clone());
        let exprs: Vec<&str> = expressions.iter().map(String::as_str).collect();
        let key = p.cache_key(CodeType::Cubin, &exprs).unwrap();
        prop_assert_eq!(key, Program::new(source.clone(), options.clone()).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs).unwrap());
        let mut changed_exprs = exprs.clone();
        changed_exprs.push("extra");
        let other = match which {
            0 => Program::new(format!("{source} "), options.clone()).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            1 => Program::new(source.clone(), options.clone()).with_name(format!("x{name}")).cache_key(CodeType::Cubin, &exprs),
            2 => Program::new(source.clone(), options.clone().with_defines(vec![(format!("{define}X"), None)])).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            3 => Program::new(source.clone(), options.clone().with_arch("75".to_owned())).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            4 => p.cache_key(CodeType::Ptx, &exprs),
            5 => p.cache_key(CodeType::Cubin, &changed_exprs),
            _ => Program::new(source.clone(), options.clone().with_fast_math(true)).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
        }
        .unwrap();
        prop_assert_ne!(key, other);
    }
}

#[test]
fn a_changed_header_is_a_miss_not_the_old_kernel() {
    if !nvrtc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(
        dir.path().join("val.h"),
        "#include \"sub/inner.h\"\n#define VAL (INNER + 1)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("sub/inner.h"), "#define INNER 1000\n").unwrap();
    let source = "#include \"val.h\"\nextern \"C\" __global__ void k(int* x) { *x = VAL; }";
    let program = Program::new(
        source,
        ProgramOptions::default()
            .with_arch("90")
            .with_include_paths(vec![dir.path().to_path_buf()]),
    );
    let cache = InMemoryProgramCache::new(64 << 20);
    let ptx = |cache: &InMemoryProgramCache| {
        let code = program.compile_cached(cache, CodeType::Ptx, &[]).unwrap();
        String::from_utf8_lossy(code.code()).into_owned()
    };
    assert!(ptx(&cache).contains("1001"));
    // The header a header includes changes: the key changes, the kernel is compiled again.
    std::fs::write(dir.path().join("sub/inner.h"), "#define INNER 2000\n").unwrap();
    let again = ptx(&cache);
    assert!(again.contains("2001"), "the old kernel came back:\n{again}");
    assert_eq!(cache.len(), 2);
    // A header that would shadow it from an earlier place changes the key too.
    let before = program.cache_key(CodeType::Ptx, &[]).unwrap();
    let earlier = tempfile::tempdir().unwrap();
    let shadowing = Program::new(
        source,
        ProgramOptions::default()
            .with_arch("90")
            .with_include_paths(vec![earlier.path().to_path_buf(), dir.path().to_path_buf()]),
    );
    let without = shadowing.cache_key(CodeType::Ptx, &[]).unwrap();
    std::fs::write(earlier.path().join("val.h"), "#define VAL 7\n").unwrap();
    let with = shadowing.cache_key(CodeType::Ptx, &[]).unwrap();
    assert_ne!(without, with);
    assert_ne!(before, with);
    // An include the scan cannot follow: no key, and compile_cached compiles uncached.
    let computed = Program::new(
        "#define H \"val.h\"\n#include H\nextern \"C\" __global__ void k(int* x) { *x = VAL; }",
        ProgramOptions::default()
            .with_arch("90")
            .with_include_paths(vec![dir.path().to_path_buf()]),
    );
    assert!(matches!(
        computed.cache_key(CodeType::Ptx, &[]),
        Err(cuda_core::Error::Cache { .. })
    ));
    let fresh = InMemoryProgramCache::new(64 << 20);
    crate::cache::record_logs();
    let name = format!("uncacheable-{}.cu", std::process::id());
    let computed = computed.with_name(name.clone());
    let warned = || {
        crate::cache::logged(
            log::Level::Warn,
            &[&name, "compiled without its cache", "#include"],
        )
    };
    computed.compile_cached(&fresh, CodeType::Ptx, &[]).unwrap();
    assert!(fresh.is_empty(), "an uncacheable program was stored");
    // Said once per program and reason, however often it is compiled.
    assert_eq!(warned(), 1);
    computed.compile_cached(&fresh, CodeType::Ptx, &[]).unwrap();
    assert_eq!(warned(), 1);
}

/// The NVRTC library file this process would use, for copying: the one discovery finds.
fn nvrtc_file() -> Option<std::path::PathBuf> {
    let major = nvrtc_version().ok()?.0 as u32;
    cuda_nvrtc_sys::Search::from_env(major)
        .with_python_paths()
        .candidates()
        .iter()
        .filter_map(cuda_nvrtc_sys::Candidate::file)
        .find(|f| f.to_string_lossy().contains(&format!(".so.{major}")))
}

/// Runs this test in a child on the NVRTC at `library`, priming or reading the file cache in
/// `dir`; returns the key the child printed and whether NVRTC was loaded when it was done.
fn child_key(
    test: &str,
    role: &str,
    library: &std::path::Path,
    dir: &std::path::Path,
) -> (String, bool) {
    let mut child = crate::common::child_command(test, role);
    child
        .env("CUDA_CORE_NVRTC_PATH", library)
        .env("CUDA_CORE_TEST_CACHE_DIR", dir);
    let stdout = crate::common::wait_child(child.spawn().unwrap(), test, "key ");
    // The harness may print the test's name on the same line first.
    let line = stdout.lines().find_map(|l| l.split_once("key ")).unwrap().1;
    let mut parts = line.split_whitespace();
    (
        parts.next().unwrap().to_owned(),
        parts.next() == Some("loaded"),
    )
}

#[test]
fn the_key_names_the_exact_nvrtc_and_a_hit_loads_none() {
    let test = crate::common::test_name(
        module_path!(),
        "the_key_names_the_exact_nvrtc_and_a_hit_loads_none",
    );
    if let Some(role) = crate::common::child_role(&test) {
        let dir = std::env::var_os("CUDA_CORE_TEST_CACHE_DIR").unwrap();
        let cache = FileStreamProgramCache::new(dir, 64 << 20).unwrap();
        let p = program(KERNEL);
        let key = p.cache_key(CodeType::Cubin, &[]).unwrap();
        if role == "prime" {
            p.compile_cached(&cache, CodeType::Cubin, &[]).unwrap();
        } else {
            let code = p.compile_cached(&cache, CodeType::Cubin, &[]).unwrap();
            assert!(!code.code().is_empty());
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let loaded = maps.contains("libnvrtc.so");
        println!(
            "key {} {}",
            key.to_hex(),
            if loaded { "loaded" } else { "not-loaded" }
        );
        return;
    }
    if !nvrtc() {
        return;
    }
    let Some(file) = nvrtc_file() else {
        return crate::common::not_run("nvrtc-file", "no NVRTC file found to copy");
    };
    // A copy of this NVRTC (and its builtins) in a directory of its own: the same version.
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join(file.file_name().unwrap());
    std::fs::copy(&file, &copy).unwrap();
    for entry in std::fs::read_dir(file.parent().unwrap()).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("libnvrtc-builtins.so")
        {
            std::fs::copy(&path, copy_dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let cache_dir = tempfile::tempdir().unwrap();
    let (primed, _) = child_key(&test, "prime", &copy, cache_dir.path());
    // A new process hits what the first stored, and never loads NVRTC to do it.
    let (hit, loaded) = child_key(&test, "hit", &copy, cache_dir.path());
    assert_eq!(hit, primed);
    assert!(!loaded, "the cache hit loaded NVRTC");
    // The same version in another file (a rebuild, a patch release of the same major.minor):
    // another key, where a key of the version alone would hit the first one's code.
    let later = std::fs::File::options().write(true).open(&copy).unwrap();
    later
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    drop(later);
    let (rebuilt, _) = child_key(&test, "hit", &copy, cache_dir.path());
    assert_ne!(rebuilt, primed);
}

/// Two include directories with a header of the same name: the first one searched wins, so
/// their order is part of the key (the headers reached are the same files either way).
#[test]
fn the_order_of_include_paths_is_in_the_key() {
    if !nvrtc() {
        return;
    }
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("value.h"), "#define VALUE 1111\n").unwrap();
    std::fs::write(b.path().join("value.h"), "#define VALUE 2222\n").unwrap();
    let source = "#include \"value.h\"\nextern \"C\" __global__ void k(int* x) { *x = VALUE; }";
    let cache = InMemoryProgramCache::new(64 << 20);
    let ptx = |dirs: Vec<std::path::PathBuf>| {
        let program = Program::new(
            source,
            ProgramOptions::default()
                .with_arch("90")
                .with_include_paths(dirs),
        );
        let code = program.compile_cached(&cache, CodeType::Ptx, &[]).unwrap();
        String::from_utf8_lossy(code.code()).into_owned()
    };
    let (a, b) = (a.path().to_path_buf(), b.path().to_path_buf());
    assert!(ptx(vec![a.clone(), b.clone()]).contains("1111"));
    let swapped = ptx(vec![b, a]);
    assert!(
        swapped.contains("2222"),
        "the other order hit the first one's code:\n{swapped}"
    );
    assert_eq!(cache.len(), 2);
}

/// Headers given in memory are in the key, by name and contents; a file of the same name on
/// disk is not (NVRTC reads the header in memory), and a file that one of them includes is.
#[test]
fn headers_given_in_memory_are_keyed_by_name_and_contents() {
    if !nvrtc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inner.h"), "#define INNER 1000\n").unwrap();
    let source = "#include \"common.h\"\nextern \"C\" __global__ void k(int* x) { *x = VAL; }";
    let with = |name: &str, contents: &str| {
        Program::new(
            source,
            ProgramOptions::default()
                .with_arch("90")
                .with_include_paths(vec![dir.path().to_path_buf()])
                .with_header(name, contents),
        )
    };
    let key = |p: &Program| p.cache_key(CodeType::Ptx, &[]).unwrap();
    let program = with("common.h", "#include <inner.h>\n#define VAL (INNER + 1)\n");
    let before = key(&program);
    // Catches the contents left out of the key: a changed header would hit the old kernel.
    assert_ne!(
        before,
        key(&with(
            "common.h",
            "#include <inner.h>\n#define VAL (INNER + 2)\n"
        ))
    );
    // Catches the name left out: the same text under another name is another program.
    assert_ne!(
        before,
        key(&with(
            "other.h",
            "#include <inner.h>\n#define VAL (INNER + 1)\n"
        ))
    );
    // Catches a file of the same name keyed in its place: NVRTC never reads it.
    std::fs::write(dir.path().join("common.h"), "#define VAL 5\n").unwrap();
    assert_eq!(before, key(&program));
    // Catches the includes of a header in memory not followed: a file it reaches is keyed.
    std::fs::write(dir.path().join("inner.h"), "#define INNER 2000\n").unwrap();
    assert_ne!(before, key(&program));
    // And through the cache: the kernel compiled from the changed header, not the old one.
    let cache = InMemoryProgramCache::new(64 << 20);
    let ptx = |p: &Program| {
        let code = p.compile_cached(&cache, CodeType::Ptx, &[]).unwrap();
        String::from_utf8_lossy(code.code()).into_owned()
    };
    assert!(ptx(&program).contains("2001"));
    let changed = with("common.h", "#include <inner.h>\n#define VAL (INNER + 7)\n");
    let again = ptx(&changed);
    assert!(again.contains("2007"), "the old kernel came back:\n{again}");
}

/// The toolkit's include folders are keyed as `include_paths` are: the key of a program with
/// the option is that of the same program given the folders found (the same major's, found
/// the same way) as include paths, with the headers reached through them; and it is not the
/// key without them.
#[test]
fn the_toolkit_includes_are_keyed_as_include_paths() {
    if !nvrtc() {
        return;
    }
    let source = "#include <cooperative_groups.h>\nextern \"C\" __global__ void k() {}";
    let (major, _) = nvrtc_version().unwrap();
    let search = cuda_nvrtc_sys::headers::ToolkitHeadersSearch::from_env(major as u32);
    let dirs: Vec<std::path::PathBuf> = match cuda_nvrtc_sys::headers::ToolkitHeaders::find(&search)
    {
        Ok(found) => found.dirs().into_iter().map(Into::into).collect(),
        Err(why) => return crate::common::not_run("cuda-headers", &why.to_string()),
    };
    let key = |options: ProgramOptions| {
        Program::new(source, options.with_arch("90"))
            .cache_key(CodeType::Ptx, &[])
            .unwrap()
    };
    let with = key(ProgramOptions::default().with_toolkit_includes(true));
    // Catches the folders left out of the key (another toolkit would hit this one's code).
    assert_ne!(with, key(ProgramOptions::default()));
    // Catches the folders keyed otherwise than include paths (their headers not scanned).
    assert_eq!(
        with,
        key(ProgramOptions::default().with_include_paths(dirs))
    );
}
