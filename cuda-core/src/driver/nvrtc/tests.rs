//! The compile and its precompiled-header retry against a fake NVRTC: a table of Rust
//! functions that record what they are given and run out of PCH heap as NVRTC does, so that
//! the retry's rules are shown without NVRTC (the real one's are in `tests/program.rs`).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};

use cuda_nvrtc_sys::{nvrtcProgram, nvrtcResult, NvrtcTable};

use super::{compile_with, NvrtcJob, NvrtcOutput, PchCreate, PchOutcome};

/// The fake's state, one per test thread (every call of a compile is on its thread).
#[derive(Default)]
struct Fake {
    /// The PCH heap, in bytes.
    heap: usize,
    /// The heap a precompiled header of any program needs.
    needs: usize,
    /// Run out of heap on the first compile whatever the heap (as where another compile grew
    /// it meanwhile), or on every compile.
    exhaust_first: bool,
    exhaust_always: bool,
    /// `NVRTC_ERROR_PCH_CREATE` instead of creating.
    pch_fails: bool,
    /// `nvrtcSetPCHHeapSize` fails.
    set_fails: bool,
    /// Each compile's options, each program's name, each heap set, programs alive.
    compiles: Vec<Vec<String>>,
    names: Vec<String>,
    sets: Vec<usize>,
    live: i32,
}

thread_local! {
    static FAKE: RefCell<Fake> = RefCell::new(Fake::default());
}

fn fake<T>(f: impl FnOnce(&mut Fake) -> T) -> T {
    FAKE.with(|fake| f(&mut fake.borrow_mut()))
}

/// A fake program: the PCH status its compile left.
struct Prog {
    status: nvrtcResult,
}

const PTX: &[u8] = b".entry k\0";
const LOG: &[u8] = b"fake log\n\0";

unsafe extern "C" fn create(
    prog: *mut nvrtcProgram,
    _src: *const c_char,
    name: *const c_char,
    _headers: c_int,
    _texts: *const *const c_char,
    _names: *const *const c_char,
) -> nvrtcResult {
    // SAFETY: the compile passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    fake(|f| {
        f.names.push(name);
        f.live += 1;
    });
    let program = Box::into_raw(Box::new(Prog {
        status: nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED,
    }));
    // SAFETY: a writable out-pointer.
    unsafe { *prog = program.cast() };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn destroy(prog: *mut nvrtcProgram) -> nvrtcResult {
    // SAFETY: a program `create` made, destroyed once.
    drop(unsafe { Box::from_raw((*prog).cast::<Prog>()) });
    fake(|f| f.live -= 1);
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn compile(
    prog: nvrtcProgram,
    count: c_int,
    options: *const *const c_char,
) -> nvrtcResult {
    let options: Vec<String> = (0..usize::try_from(count).unwrap())
        // SAFETY: `count` NUL-terminated options.
        .map(|i| unsafe { CStr::from_ptr(*options.add(i)) })
        .map(|o| o.to_string_lossy().into_owned())
        .collect();
    let wants = options
        .iter()
        .any(|o| o == "-pch" || o.starts_with("-create-pch="));
    let status = fake(|f| {
        let first = f.compiles.is_empty();
        f.compiles.push(options);
        if !wants {
            nvrtcResult::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED
        } else if f.pch_fails {
            nvrtcResult::NVRTC_ERROR_PCH_CREATE
        } else if f.exhaust_always || (first && f.exhaust_first) || f.heap < f.needs {
            nvrtcResult::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED
        } else {
            nvrtcResult::NVRTC_SUCCESS
        }
    });
    // SAFETY: a live program of `create`'s.
    unsafe { (*prog.cast::<Prog>()).status = status };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe fn fill(out: *mut c_char, bytes: &[u8]) {
    // SAFETY: the caller sized `out` by the size function.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast(), bytes.len()) };
}

unsafe extern "C" fn log_size(_: nvrtcProgram, size: *mut usize) -> nvrtcResult {
    // SAFETY: a writable out-pointer.
    unsafe { *size = LOG.len() };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn log(_: nvrtcProgram, out: *mut c_char) -> nvrtcResult {
    // SAFETY: sized by `log_size`.
    unsafe { fill(out, LOG) };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn ptx_size(_: nvrtcProgram, size: *mut usize) -> nvrtcResult {
    // SAFETY: a writable out-pointer.
    unsafe { *size = PTX.len() };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn ptx(_: nvrtcProgram, out: *mut c_char) -> nvrtcResult {
    // SAFETY: sized by `ptx_size`.
    unsafe { fill(out, PTX) };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn add_expression(_: nvrtcProgram, _: *const c_char) -> nvrtcResult {
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn lowered(
    _: nvrtcProgram,
    _: *const c_char,
    out: *mut *const c_char,
) -> nvrtcResult {
    // SAFETY: a writable out-pointer; the name is static.
    unsafe { *out = c"lowered".as_ptr() };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn pch_status(prog: nvrtcProgram) -> nvrtcResult {
    // SAFETY: a live program of `create`'s.
    unsafe { (*prog.cast::<Prog>()).status }
}

unsafe extern "C" fn heap_required(_: nvrtcProgram, size: *mut usize) -> nvrtcResult {
    // SAFETY: a writable out-pointer.
    unsafe { *size = fake(|f| f.needs) };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn heap_size(size: *mut usize) -> nvrtcResult {
    // SAFETY: a writable out-pointer.
    unsafe { *size = fake(|f| f.heap) };
    nvrtcResult::NVRTC_SUCCESS
}

unsafe extern "C" fn set_heap_size(size: usize) -> nvrtcResult {
    fake(|f| {
        if f.set_fails {
            return nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY;
        }
        f.sets.push(size);
        f.heap = size;
        nvrtcResult::NVRTC_SUCCESS
    })
}

unsafe extern "C" fn error_string(_: nvrtcResult) -> *const c_char {
    c"FAKE_ERROR".as_ptr()
}

/// The fake NVRTC 12.8+ (with precompiled headers) as a table.
fn table() -> NvrtcTable {
    // SAFETY: every field is an `Option` of a function pointer, for which all zeroes is
    // `None`: the table of a library that exports nothing.
    let mut t: NvrtcTable = unsafe { std::mem::zeroed() };
    t.nvrtcCreateProgram = Some(create);
    t.nvrtcDestroyProgram = Some(destroy);
    t.nvrtcCompileProgram = Some(compile);
    t.nvrtcGetProgramLogSize = Some(log_size);
    t.nvrtcGetProgramLog = Some(log);
    t.nvrtcGetPTXSize = Some(ptx_size);
    t.nvrtcGetPTX = Some(ptx);
    t.nvrtcAddNameExpression = Some(add_expression);
    t.nvrtcGetLoweredName = Some(lowered);
    t.nvrtcGetPCHCreateStatus = Some(pch_status);
    t.nvrtcGetPCHHeapSizeRequired = Some(heap_required);
    t.nvrtcGetPCHHeapSize = Some(heap_size);
    t.nvrtcSetPCHHeapSize = Some(set_heap_size);
    t.nvrtcGetErrorString = Some(error_string);
    t
}

/// Runs a compile of `options` (a PCH asked for where `pch`) against `t`, with a fresh fake
/// whose heap is `heap` bytes and whose header needs `needs`, set up further by `setup`.
fn run(
    t: &NvrtcTable,
    options: &[&str],
    pch: bool,
    heap: usize,
    needs: usize,
    setup: impl FnOnce(&mut Fake),
) -> super::Compiled {
    fake(|f| {
        *f = Fake {
            heap,
            needs,
            ..Fake::default()
        };
        setup(f);
    });
    let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
    let expressions = ["k<int>".to_owned()];
    let compiled = compile_with(
        t,
        &NvrtcJob {
            source: "__global__ void k() {}",
            name: "p.cu",
            headers: &[],
            options: &options,
            name_expressions: &expressions,
            output: NvrtcOutput::Ptx,
            pch,
        },
    )
    .unwrap();
    // Bug caught: a program of either compile never destroyed.
    assert_eq!(fake(|f| f.live), 0, "programs left alive");
    compiled
}

const MIB: usize = 1 << 20;

#[test]
fn a_heap_too_small_is_grown_to_what_nvrtc_asks_and_the_program_compiled_once_more() {
    let options = ["--gpu-architecture=compute_90", "-pch", "-pch-dir=/d"];
    let compiled = run(&table(), &options, true, 4096, 3 * MIB, |_| {});
    let (compiles, names, sets) = fake(|f| (f.compiles.clone(), f.names.clone(), f.sets.clone()));
    // Bugs caught: no retry; a retry loop; the retry without the options, or of another
    // program (a new program, as NVRTC wants, of the same name).
    assert_eq!(compiles.len(), 2, "{compiles:?}");
    assert_eq!(compiles[0], compiles[1]);
    assert_eq!(compiles[0], options);
    assert_eq!(names, ["p.cu", "p.cu"]);
    // Bug caught: the heap set to anything but the size NVRTC asked for (or not set).
    assert_eq!(sets, [3 * MIB]);
    assert_eq!(
        compiled.pch,
        Some(PchOutcome {
            status: PchCreate::Created,
            retried_with_heap: Some(3 * MIB),
        })
    );
    // The retry's code and lowered names are returned, and the log says what happened.
    assert_eq!(compiled.code, PTX);
    assert_eq!(
        compiled.lowered,
        [("k<int>".to_owned(), "lowered".to_owned())]
    );
    assert!(
        compiled.log.starts_with("fake log")
            && compiled.log.contains("(4096 bytes) was too small")
            && compiled.log.contains("grown to 3145728 bytes"),
        "{}",
        compiled.log
    );
}

#[test]
fn a_heap_another_compile_grew_is_not_shrunk_and_a_second_exhaustion_is_not_retried() {
    // NVRTC ran out on the first compile, but the heap is now larger than it asks for (a
    // compile on another thread grew it): compiled again without setting it (bug caught:
    // `set(required)` shrinking the heap under the other compile).
    let compiled = run(&table(), &["-pch"], true, 8 * MIB, MIB, |f| {
        f.exhaust_first = true;
    });
    assert_eq!(fake(|f| (f.compiles.len(), f.sets.clone())), (2, vec![]));
    assert_eq!(
        compiled.pch,
        Some(PchOutcome {
            status: PchCreate::Created,
            retried_with_heap: Some(MIB),
        })
    );
    // Out of heap again on the retry: reported, not retried a second time (bug caught: a
    // loop that compiles for as long as NVRTC runs out).
    let compiled = run(&table(), &["-pch"], true, 4096, MIB, |f| {
        f.exhaust_always = true;
    });
    assert_eq!(fake(|f| (f.compiles.len(), f.sets.clone())), (2, vec![MIB]));
    assert_eq!(
        compiled.pch,
        Some(PchOutcome {
            status: PchCreate::HeapExhausted {
                required: Some(MIB)
            },
            retried_with_heap: Some(MIB),
        })
    );
    assert!(compiled.log.contains("too small"), "{}", compiled.log);
}

#[test]
fn an_nvrtc_without_the_heap_functions_is_not_retried_and_no_error() {
    let exhausted = |required| {
        Some(PchOutcome {
            status: PchCreate::HeapExhausted { required },
            retried_with_heap: None,
        })
    };
    // No nvrtcSetPCHHeapSize: the first compile stands, with the size it needed.
    let mut t = table();
    t.nvrtcSetPCHHeapSize = None;
    let compiled = run(&t, &["-pch"], true, 4096, MIB, |_| {});
    assert_eq!(fake(|f| f.compiles.len()), 1);
    assert_eq!(compiled.pch, exhausted(Some(MIB)));
    assert!(
        compiled.log.contains("1048576 bytes are needed"),
        "{}",
        compiled.log
    );
    // No nvrtcGetPCHHeapSizeRequired: no size to grow to, so no retry.
    let mut t = table();
    t.nvrtcGetPCHHeapSizeRequired = None;
    let compiled = run(&t, &["-pch"], true, 4096, MIB, |_| {});
    assert_eq!(fake(|f| (f.compiles.len(), f.sets.len())), (1, 0));
    assert_eq!(compiled.pch, exhausted(None));
    // No nvrtcGetPCHCreateStatus (before NVRTC 12.8): nothing to report, nothing retried.
    let mut t = table();
    t.nvrtcGetPCHCreateStatus = None;
    let compiled = run(&t, &["-pch"], true, 4096, MIB, |_| {});
    assert_eq!(fake(|f| f.compiles.len()), 1);
    assert_eq!(compiled.pch, None);
    // A set that fails leaves the first compile, and the log says why.
    let compiled = run(&table(), &["-pch"], true, 4096, MIB, |f| f.set_fails = true);
    assert_eq!(fake(|f| f.compiles.len()), 1);
    assert_eq!(compiled.pch, exhausted(Some(MIB)));
    assert!(
        compiled.log.contains("failed (FAKE_ERROR)"),
        "{}",
        compiled.log
    );
}

#[test]
fn the_status_is_reported_where_a_header_was_asked_for_or_attempted() {
    // Nothing asked, nothing attempted: no status (bug caught: every compile reporting
    // "not attempted").
    let compiled = run(&table(), &["-arch=compute_90"], false, MIB, MIB, |_| {});
    assert_eq!(compiled.pch, None);
    // Asked for, and NVRTC chose not to: said.
    let compiled = run(&table(), &["-arch=compute_90"], true, MIB, MIB, |_| {});
    assert_eq!(
        compiled.pch.map(|p| p.status),
        Some(PchCreate::NotAttempted)
    );
    // Asked in options passed as they are (`-pch` in `extra`): attempted, so reported.
    let compiled = run(&table(), &["-pch"], false, MIB, MIB, |_| {});
    assert_eq!(compiled.pch.map(|p| p.status), Some(PchCreate::Created));
    // Another failure: reported with NVRTC's words, in the status and the log, not retried.
    let compiled = run(&table(), &["-pch"], true, MIB, MIB, |f| f.pch_fails = true);
    assert_eq!(fake(|f| f.compiles.len()), 1);
    assert_eq!(
        compiled.pch.map(|p| p.status),
        Some(PchCreate::Failed("FAKE_ERROR".to_owned()))
    );
    assert!(
        compiled.log.contains("not created: FAKE_ERROR"),
        "{}",
        compiled.log
    );
}
