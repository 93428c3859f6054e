//! Loads the real NVRTC of each CUDA major through discovery and compiles a kernel with it.
//! NVRTC needs no GPU, so this runs in CI, where `.ci/run` installs both majors' wheels and
//! sets `CUDA_CORE_TEST_REQUIRE=nvrtc-12,nvrtc-13`; elsewhere a major that is not installed says it
//! did not run.

use std::ffi::{c_char, CString};
use std::ptr;

use cuda_nvrtc_sys::{nvrtcProgram, nvrtcResult, Candidate, Nvrtc, Search};

/// Loads the NVRTC of `major` from the first file candidate of that major (a soname could
/// resolve to whichever NVRTC this process loaded first), or explains why not; fails when CI
/// requires it.
fn load(major: u32) -> Option<Nvrtc> {
    let suffix = format!(".so.{major}");
    let search = Search::from_env(major).with_python_paths();
    let mut tried = Vec::new();
    for candidate in search.candidates() {
        let Candidate::File(path) = &candidate else {
            continue;
        };
        if !path.to_string_lossy().ends_with(&suffix) {
            continue;
        }
        match Nvrtc::open(&candidate) {
            Ok(nvrtc) => {
                assert_eq!(nvrtc.version().0, major as i32, "{}", path.display());
                return Some(nvrtc);
            }
            Err(why) => tried.push(format!("{}: {why}", path.display())),
        }
    }
    crate::common::not_run(
        &format!("nvrtc-{major}"),
        &format!("NVRTC {major} is not installed (tried {tried:?})"),
    );
    None
}

fn check(status: nvrtcResult, what: &str) {
    assert_eq!(status, nvrtcResult::NVRTC_SUCCESS, "{what}");
}

/// Compiles a small kernel to PTX and returns the PTX.
fn compile(nvrtc: &Nvrtc, source: &str, options: &[&str]) -> Result<String, String> {
    let t = nvrtc.table();
    let source = CString::new(source).unwrap();
    let mut program: nvrtcProgram = ptr::null_mut();
    // SAFETY: every pointer passed is valid for the call; the program is destroyed below.
    unsafe {
        check(
            t.nvrtcCreateProgram.unwrap()(
                &mut program,
                source.as_ptr(),
                c"k.cu".as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            ),
            "create",
        );
        let options: Vec<CString> = options.iter().map(|o| CString::new(*o).unwrap()).collect();
        let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let status =
            t.nvrtcCompileProgram.unwrap()(program, pointers.len() as i32, pointers.as_ptr());
        let result = if status == nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0;
            check(t.nvrtcGetPTXSize.unwrap()(program, &mut size), "ptx size");
            let mut ptx = vec![0u8; size];
            check(
                t.nvrtcGetPTX.unwrap()(program, ptx.as_mut_ptr().cast()),
                "ptx",
            );
            ptx.pop(); // the terminating NUL
            Ok(String::from_utf8(ptx).unwrap())
        } else {
            let mut size = 0;
            check(
                t.nvrtcGetProgramLogSize.unwrap()(program, &mut size),
                "log size",
            );
            let mut log = vec![0u8; size];
            check(
                t.nvrtcGetProgramLog.unwrap()(program, log.as_mut_ptr().cast()),
                "log",
            );
            Err(String::from_utf8_lossy(&log).into_owned())
        };
        check(t.nvrtcDestroyProgram.unwrap()(&mut program), "destroy");
        result
    }
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

fn compiles_with(major: u32) {
    let Some(nvrtc) = load(major) else { return };
    eprintln!(
        "NVRTC {:?} from {}",
        nvrtc.version(),
        nvrtc.location().display()
    );
    let ptx = compile(&nvrtc, SAXPY, &["--gpu-architecture=compute_90"]).expect("compiles");
    assert!(ptx.contains(".entry saxpy"), "{ptx}");
    assert!(ptx.contains(".target sm_90"), "{ptx}");
    // A broken source gives NVRTC's log naming the problem.
    let log = compile(&nvrtc, "__global__ void k() { undeclared_name(); }", &[]).unwrap_err();
    assert!(log.contains("undeclared_name"), "{log}");
}

#[test]
fn nvrtc13_compiles() {
    compiles_with(13);
}

#[test]
fn nvrtc12_compiles() {
    compiles_with(12);
}

#[test]
fn version_matches_the_table() {
    let Some(nvrtc) = load(13).or_else(|| load(12)) else {
        return;
    };
    let t = nvrtc.table();
    let (mut n, mut archs) = (0, Vec::new());
    // SAFETY: pointers valid for the calls; the buffer holds `n` ints.
    unsafe {
        check(t.nvrtcGetNumSupportedArchs.unwrap()(&mut n), "num archs");
        archs.resize(n as usize, 0);
        check(
            t.nvrtcGetSupportedArchs.unwrap()(archs.as_mut_ptr()),
            "archs",
        );
    }
    assert!(
        archs.contains(&90),
        "sm_90 supported by every NVRTC 12 and 13: {archs:?}"
    );
}
