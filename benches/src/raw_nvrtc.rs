//! The raw NVRTC compile: `cuda-nvrtc-sys`'s table called as a C program calls it.

use std::ffi::{c_char, CStr};
use std::ptr::{null, null_mut};

use cuda_nvrtc_sys::{nvrtcProgram, nvrtcResult, NvrtcTable};

/// The NVRTC functions a compile to cubin calls, taken out of the table once.
pub struct NvrtcFns {
    create: unsafe extern "C" fn(
        *mut nvrtcProgram,
        *const c_char,
        *const c_char,
        i32,
        *const *const c_char,
        *const *const c_char,
    ) -> nvrtcResult,
    compile: unsafe extern "C" fn(nvrtcProgram, i32, *const *const c_char) -> nvrtcResult,
    cubin_size: unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult,
    cubin: unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
    log_size: unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult,
    log: unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
    destroy: unsafe extern "C" fn(*mut nvrtcProgram) -> nvrtcResult,
}

impl NvrtcFns {
    /// The functions of a loaded NVRTC's table; `None` when it lacks one. The table's library
    /// must stay loaded as long as the result is used.
    pub fn new(t: &NvrtcTable) -> Option<NvrtcFns> {
        Some(NvrtcFns {
            create: t.nvrtcCreateProgram?,
            compile: t.nvrtcCompileProgram?,
            cubin_size: t.nvrtcGetCUBINSize?,
            cubin: t.nvrtcGetCUBIN?,
            log_size: t.nvrtcGetProgramLogSize?,
            log: t.nvrtcGetProgramLog?,
            destroy: t.nvrtcDestroyProgram?,
        })
    }

    /// What a C program does to compile `source` to a cubin: create, compile with `options`,
    /// read the cubin, destroy. The log is read only when the compile fails, and is the error.
    pub fn compile_cubin(
        &self,
        source: &CStr,
        name: &CStr,
        options: &[&CStr],
    ) -> Result<Vec<u8>, String> {
        let options: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = i32::try_from(options.len()).map_err(|_| "too many options".to_owned())?;
        let mut program: nvrtcProgram = null_mut();
        // SAFETY: NUL-terminated strings and option pointers that outlive the call, and a
        // writable out-pointer.
        let status = unsafe {
            (self.create)(
                &mut program,
                source.as_ptr(),
                name.as_ptr(),
                0,
                null(),
                null(),
            )
        };
        ok(status, "nvrtcCreateProgram")?;
        // SAFETY: a program just created, options as above.
        let status = unsafe { (self.compile)(program, count, options.as_ptr()) };
        let result = if status == nvrtcResult::NVRTC_SUCCESS {
            self.read(program, self.cubin_size, self.cubin, "nvrtcGetCUBIN")
        } else {
            let log = self
                .read(program, self.log_size, self.log, "nvrtcGetProgramLog")
                .unwrap_or_default();
            Err(format!(
                "nvrtcCompileProgram failed with NVRTC error {}: {}",
                status.0,
                String::from_utf8_lossy(&log).trim_end_matches('\0')
            ))
        };
        // SAFETY: the program, destroyed once, after its last use.
        let status = unsafe { (self.destroy)(&mut program) };
        ok(status, "nvrtcDestroyProgram")?;
        result
    }

    /// One of NVRTC's outputs: its size, then its bytes.
    fn read(
        &self,
        program: nvrtcProgram,
        size: unsafe extern "C" fn(nvrtcProgram, *mut usize) -> nvrtcResult,
        get: unsafe extern "C" fn(nvrtcProgram, *mut c_char) -> nvrtcResult,
        call: &str,
    ) -> Result<Vec<u8>, String> {
        let mut bytes = 0;
        // SAFETY: a live program and a writable out-pointer.
        let status = unsafe { size(program, &mut bytes) };
        ok(status, call)?;
        let mut out = vec![0u8; bytes];
        // SAFETY: `out` holds the size NVRTC just gave for this output.
        let status = unsafe { get(program, out.as_mut_ptr().cast()) };
        ok(status, call)?;
        Ok(out)
    }
}

/// `Err` naming the call unless `status` is `NVRTC_SUCCESS`.
fn ok(status: nvrtcResult, call: &str) -> Result<(), String> {
    if status == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed with NVRTC error {}", status.0))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use cuda_core::{CodeType, Program, ProgramOptions};
    use cuda_nvrtc_sys::Search;

    use super::*;
    use crate::kernels::{FIRST_LAUNCH, LAUNCH_KERNELS, SAXPY};

    /// The architecture of these CPU tests: the H200's.
    const ARCH: &str = "90";

    /// NVRTC, or `None` after saying why the test does not run; a failure where CI sets
    /// `CUDA_CORE_REQUIRE_NVRTC` (as cuda-core's compile tests do).
    fn nvrtc() -> Option<cuda_nvrtc_sys::Nvrtc> {
        match Search::from_env(13).load() {
            Ok(nvrtc) => Some(nvrtc),
            Err(e)
                if std::env::var_os("CUDA_CORE_REQUIRE_NVRTC").is_some_and(|v| !v.is_empty()) =>
            {
                panic!("CUDA_CORE_REQUIRE_NVRTC is set, but: {e}")
            }
            Err(e) => {
                println!("not run: no NVRTC ({e})");
                None
            }
        }
    }

    fn options() -> ProgramOptions {
        ProgramOptions::default().with_arch(ARCH.to_owned())
    }

    #[test]
    fn the_raw_compile_gives_cuda_cores_cubin() {
        let Some(nvrtc) = nvrtc() else { return };
        let fns = NvrtcFns::new(nvrtc.table()).expect("a complete NVRTC");
        let arch = CString::new(format!("--gpu-architecture=sm_{ARCH}")).unwrap();
        let raw = fns
            .compile_cubin(&CString::new(SAXPY).unwrap(), c"saxpy.cu", &[&arch])
            .unwrap();
        let core = Program::new(SAXPY, options())
            .with_name("saxpy.cu")
            .compile(CodeType::Cubin, &[])
            .unwrap();
        // The same work: the options cuda-core passes are the raw ones.
        assert_eq!(options().to_args(CodeType::Cubin), [arch.to_str().unwrap()]);
        assert!(raw.starts_with(b"\x7fELF"), "a cubin is an ELF file");
        assert_eq!(raw, core.code());
    }

    #[test]
    fn a_failed_raw_compile_returns_the_log() {
        let Some(nvrtc) = nvrtc() else { return };
        let fns = NvrtcFns::new(nvrtc.table()).expect("a complete NVRTC");
        let err = fns
            .compile_cubin(c"this is not C++", c"bad.cu", &[])
            .unwrap_err();
        assert!(err.contains("nvrtcCompileProgram failed"), "{err}");
        assert!(err.contains("bad.cu"), "{err}");
    }

    #[test]
    fn every_bench_program_compiles() {
        if nvrtc().is_none() {
            return;
        }
        for source in [LAUNCH_KERNELS, SAXPY, FIRST_LAUNCH] {
            let code = Program::new(source, options())
                .compile(CodeType::Cubin, &[])
                .unwrap_or_else(|e| panic!("{source}: {e}"));
            assert!(!code.code().is_empty());
        }
    }
}
