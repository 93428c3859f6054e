//! Compiling through the program caches (NVRTC, no GPU): hits skip the compiler and give the
//! same code; keys cover every input; corrupt entries are misses.

use cuda_core::{
    nvrtc_version, CodeType, FileStreamProgramCache, InMemoryProgramCache, Program, ProgramCache,
    ProgramOptions,
};
use proptest::prelude::*;

fn nvrtc() -> bool {
    match nvrtc_version() {
        Ok(_) => true,
        Err(e) => {
            assert!(std::env::var_os("CUDA_CORE_REQUIRE_NVRTC").is_none(), "{e}");
            eprintln!("skipped: {e}");
            false
        }
    }
}

fn program(source: &str) -> Program {
    Program::new(
        source,
        ProgramOptions {
            arch: Some("90".to_owned()),
            ..Default::default()
        },
    )
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
        let options = ProgramOptions {
            arch: Some(arch.to_owned()),
            defines: vec![(define.clone(), None)],
            ..Default::default()
        };
        let p = Program::new(source.clone(), options.clone()).with_name(name.clone());
        let exprs: Vec<&str> = expressions.iter().map(String::as_str).collect();
        let key = p.cache_key(CodeType::Cubin, &exprs).unwrap();
        prop_assert_eq!(key, Program::new(source.clone(), options.clone()).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs).unwrap());
        let mut changed_exprs = exprs.clone();
        changed_exprs.push("extra");
        let other = match which {
            0 => Program::new(format!("{source} "), options.clone()).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            1 => Program::new(source.clone(), options.clone()).with_name(format!("x{name}")).cache_key(CodeType::Cubin, &exprs),
            2 => Program::new(source.clone(), ProgramOptions { defines: vec![(format!("{define}X"), None)], ..options.clone() }).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            3 => Program::new(source.clone(), ProgramOptions { arch: Some("75".to_owned()), ..options.clone() }).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
            4 => p.cache_key(CodeType::Ptx, &exprs),
            5 => p.cache_key(CodeType::Cubin, &changed_exprs),
            _ => Program::new(source.clone(), ProgramOptions { fast_math: true, ..options.clone() }).with_name(name.clone()).cache_key(CodeType::Cubin, &exprs),
        }
        .unwrap();
        prop_assert_ne!(key, other);
    }
}
