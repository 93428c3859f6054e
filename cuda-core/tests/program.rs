//! NVRTC compilation, which needs no GPU: CI runs these against the real NVRTC 13 (found by
//! discovery) and again with `CUDA_CORE_NVRTC_PATH` set to NVRTC 12 and
//! `CUDA_CORE_EXPECT_NVRTC_MAJOR=12`. Without any NVRTC they say they did not run, and fail
//! where `CUDA_CORE_TEST_REQUIRE` names an NVRTC (as CI does).

use cuda_core::{nvrtc_version, CodeType, Error, Program, ProgramOptions};

/// Whether NVRTC is usable here; fails the test when CI requires it.
fn nvrtc() -> bool {
    match nvrtc_version() {
        Ok((major, minor)) => {
            if let Ok(expected) = std::env::var("CUDA_CORE_EXPECT_NVRTC_MAJOR") {
                assert_eq!(major.to_string(), expected, "NVRTC {major}.{minor}");
            }
            // The NVRTCs this crate loads: 12.x and 13.x.
            assert!(
                (12..=13).contains(&major) && (0..=9).contains(&minor),
                "NVRTC {major}.{minor}"
            );
            true
        }
        Err(e) => {
            crate::common::not_run("nvrtc", &format!("no NVRTC: {e}"));
            false
        }
    }
}

fn options() -> ProgramOptions {
    ProgramOptions {
        arch: Some("90".to_owned()),
        ..Default::default()
    }
}

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

#[test]
fn compiles_to_ptx_cubin_and_ltoir() {
    if !nvrtc() {
        return;
    }
    let program = Program::new(SAXPY, options()).with_name("saxpy.cu");
    let ptx = program.compile(CodeType::Ptx, &[]).unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let text = String::from_utf8_lossy(ptx.code());
    assert!(
        text.contains(".entry saxpy") && text.contains(".target sm_90"),
        "{text}"
    );
    assert_eq!(
        ptx.code().last(),
        Some(&0),
        "PTX keeps its NUL for the driver"
    );
    let cubin = program.compile(CodeType::Cubin, &[]).unwrap();
    assert!(cubin.code().starts_with(b"\x7fELF"));
    let ltoir = program.compile(CodeType::LtoIr, &[]).unwrap();
    assert!(!ltoir.code().is_empty());
    assert!(
        !ltoir.code().starts_with(b"\x7fELF"),
        "LTO-IR is not a cubin"
    );
    let err = program.compile(CodeType::Fatbin, &[]).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "target", .. }),
        "{err}"
    );
}

#[test]
fn a_compile_error_carries_the_whole_log() {
    if !nvrtc() {
        return;
    }
    let source = "__global__ void k() {\n  int x = undefined_one;\n  float y = undefined_two;\n}\n";
    let err = Program::new(source, options())
        .with_name("broken.cu")
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    let Error::Compile { program, log } = &err else {
        panic!("{err}")
    };
    assert_eq!(program, "broken.cu");
    // Both errors, with the file name and lines: the whole log, not its first line.
    assert!(
        log.contains("undefined_one") && log.contains("undefined_two"),
        "{log}"
    );
    assert!(
        log.contains("broken.cu(2)") && log.contains("broken.cu(3)"),
        "{log}"
    );
    assert!(err.to_string().contains("undefined_two"));
}

#[test]
fn warnings_of_a_successful_compile_stay_readable() {
    if !nvrtc() {
        return;
    }
    let source = "extern \"C\" __global__ void k(int* p) { int unused_variable = 3; *p = 1; }";
    let code = Program::new(source, options())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    assert!(
        code.compile_log().contains("unused_variable"),
        "{:?}",
        code.compile_log()
    );
}

#[test]
fn name_expressions_give_lowered_names() {
    if !nvrtc() {
        return;
    }
    let source = r#"
template <typename T> __global__ void axpy(T a, const T* x, T* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;
    let code = Program::new(source, options())
        .compile(CodeType::Ptx, &["axpy<float>", "axpy<double>"])
        .unwrap();
    let float = code.lowered_name("axpy<float>").unwrap();
    let double = code.lowered_name("axpy<double>").unwrap();
    assert_eq!(float, "_Z4axpyIfEvT_PKS0_PS0_j");
    assert_eq!(double, "_Z4axpyIdEvT_PKS0_PS0_j");
    let text = String::from_utf8_lossy(code.code());
    assert!(text.contains(float) && text.contains(double));
    assert_eq!(code.name_expressions().len(), 2);
    assert_eq!(code.lowered_name("axpy<int>"), None);
}

#[test]
fn options_reach_the_compiler() {
    if !nvrtc() {
        return;
    }
    // A define picks the branch; the compile fails unless it arrived.
    let source = "#if !defined(ANSWER) || ANSWER != 42\n#error ANSWER missing\n#endif\n\
                  extern \"C\" __global__ void k() {}";
    let with = ProgramOptions {
        defines: vec![("ANSWER".to_owned(), Some("42".to_owned()))],
        std: Some("c++17".to_owned()),
        fast_math: true,
        fmad: Some(false),
        line_info: true,
        max_register_count: Some(32),
        ..options()
    };
    Program::new(source, with)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let err = Program::new(source, options())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(err.to_string().contains("ANSWER missing"), "{err}");
    // An include path.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("value.h"), "#define VALUE 7\n").unwrap();
    let source = "#include \"value.h\"\nextern \"C\" __global__ void k(int* p) { *p = VALUE; }";
    let with_include = ProgramOptions {
        include_paths: vec![dir.path().to_path_buf()],
        ..options()
    };
    Program::new(source, with_include)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let err = Program::new(source, options())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(err.to_string().contains("value.h"), "{err}");
    // A bad option is NVRTC's error, with its log.
    let bad = ProgramOptions {
        extra: vec!["--no-such-option".to_owned()],
        ..options()
    };
    let err = Program::new(source, bad)
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(matches!(err, Error::Compile { .. }), "{err}");
}

#[test]
fn a_program_keeps_what_it_was_made_with() {
    let options = options().with_fast_math(true);
    let program = Program::new("// source", options.clone()).with_name("named.cu");
    assert_eq!(program.source(), "// source");
    assert_eq!(program.name(), "named.cu");
    assert_eq!(program.options(), &options);
}

#[test]
fn option_arguments_are_spelled_for_nvrtc() {
    let options = ProgramOptions {
        arch: Some("90a".to_owned()),
        std: Some("c++20".to_owned()),
        defines: vec![
            ("A".to_owned(), None),
            ("B".to_owned(), Some("2".to_owned())),
        ],
        include_paths: vec!["/inc".into()],
        debug: true,
        line_info: true,
        fast_math: true,
        ftz: Some(false),
        prec_div: Some(true),
        prec_sqrt: Some(false),
        fmad: Some(true),
        relocatable_device_code: true,
        max_register_count: Some(64),
        extra: vec!["--extra".to_owned()],
    };
    assert_eq!(
        options.to_args(CodeType::Cubin),
        [
            "--gpu-architecture=sm_90a",
            "--std=c++20",
            "-DA",
            "-DB=2",
            "-I/inc",
            "-G",
            "-lineinfo",
            "--use_fast_math",
            "--ftz=false",
            "--prec-div=true",
            "--prec-sqrt=false",
            "--fmad=true",
            "-rdc=true",
            "--maxrregcount=64",
            "--extra"
        ]
    );
    assert_eq!(
        options.to_args(CodeType::Ptx)[0],
        "--gpu-architecture=compute_90a"
    );
    assert_eq!(options.to_args(CodeType::LtoIr)[1], "-dlto");
}

#[test]
fn ltoir_links_with_nvjitlink_when_found() {
    if !nvrtc() {
        return;
    }
    use cuda_core::{Linker, LinkerBackend, LinkerOptions};
    let rdc = ProgramOptions {
        relocatable_device_code: true,
        ..options()
    };
    let lib = Program::new(
        "__device__ float twice(float x) { return 2.0f * x; }",
        rdc.clone(),
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let main = Program::new(
        "__device__ float twice(float x);\n\
         extern \"C\" __global__ void apply(float* x) { x[0] = twice(x[0]); }",
        rdc,
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let options = LinkerOptions {
        arch: Some("90".to_owned()),
        backend: LinkerBackend::NvJitLink,
        ..Default::default()
    };
    match Linker::new(&[lib, main.clone()], options.clone()).link() {
        Ok(linked) => {
            assert_eq!(linked.code_type(), CodeType::Cubin);
            assert!(linked.code().starts_with(b"\x7fELF"));
            // An undefined function: nvJitLink's log names it.
            let err = Linker::new(&[main], options).link().unwrap_err();
            assert!(
                matches!(&err, Error::Link { log } if log.contains("twice")),
                "{err}"
            );
        }
        Err(Error::Link { log }) if log.contains("not found") => {
            crate::common::not_run("nvjitlink", &format!("no nvJitLink: {log}"));
        }
        Err(e) => panic!("{e}"),
    }
}

/// The PTX of `source` compiled with `options` (for `compute_90`).
fn ptx_with(source: &str, options: ProgramOptions) -> String {
    let code = Program::new(source, ProgramOptions { ..options })
        .with_name("effects.cu")
        .compile(CodeType::Ptx, &[])
        .unwrap();
    String::from_utf8_lossy(code.code()).into_owned()
}

/// One division, one multiply-add, one square root and one addition, each of a kind the
/// floating-point options change.
const ARITHMETIC: &str = r#"
extern "C" __global__ void k(float* x, float a, float b) {
    x[0] = x[1] / a;
    x[2] = x[3] * a + b;
    x[4] = sqrtf(x[5]);
    x[6] = x[7] + b;
}
"#;

/// Each typed option is seen in what NVRTC made, against a compile without it: an option that
/// `compile` dropped (or spelled so that NVRTC ignored it) fails here.
#[test]
fn every_typed_option_changes_the_output() {
    if !nvrtc() {
        return;
    }
    let plain = ptx_with(ARITHMETIC, options());
    // The plain compile, the control: IEEE division and square root, contracted fma, no ftz,
    // no line or debug information.
    for expected in ["div.rn.f32", "sqrt.rn.f32", "fma.rn.f32"] {
        assert!(plain.contains(expected), "{expected} in\n{plain}");
    }
    for absent in ["approx", ".ftz", ".loc", "debug", "div.full"] {
        assert!(!plain.contains(absent), "{absent} in\n{plain}");
    }
    let with = |o: ProgramOptions| ptx_with(ARITHMETIC, o);
    // fast_math: approximate division and square root, flushed to zero.
    let fast = with(options().with_fast_math(true));
    assert!(fast.contains("div.approx.ftz.f32"), "{fast}");
    assert!(fast.contains("sqrt.approx.ftz.f32"), "{fast}");
    // A typed option set apart from fast_math wins over it (it comes after in the arguments).
    let fast_but_exact = with(options().with_fast_math(true).with_prec_div(true));
    assert!(
        fast_but_exact.contains("div.rn.ftz.f32"),
        "{fast_but_exact}"
    );
    // fmad = false: no fused multiply-add is left.
    let unfused = with(options().with_fmad(false));
    assert!(!unfused.contains("fma"), "{unfused}");
    assert!(unfused.contains("mul.rn.f32"), "{unfused}");
    // ftz: every single-precision operation flushes.
    let ftz = with(options().with_ftz(true));
    assert!(
        ftz.contains("add.ftz.f32") && ftz.contains("div.rn.ftz.f32"),
        "{ftz}"
    );
    // prec_div = false and prec_sqrt = false, each alone.
    let div = with(options().with_prec_div(false));
    assert!(
        div.contains("div.full.f32") && div.contains("sqrt.rn.f32"),
        "{div}"
    );
    let sqrt = with(options().with_prec_sqrt(false));
    assert!(
        sqrt.contains("sqrt.approx.f32") && sqrt.contains("div.rn.f32"),
        "{sqrt}"
    );
    // line_info: source lines, naming the program.
    let lines = with(options().with_line_info(true));
    assert!(
        lines.contains(".loc") && lines.contains("effects.cu"),
        "{lines}"
    );
    assert!(!lines.contains("debug"), "{lines}");
    // debug: a debug target, without contraction.
    let debug = with(options().with_debug(true));
    assert!(debug.contains(".target sm_90, debug"), "{debug}");
}

/// `std` picks the dialect: `__cplusplus` is 202002 under C++20 and 201703 under C++17, and a
/// C++20 feature compiles only under C++20.
#[test]
fn the_std_option_picks_the_dialect() {
    if !nvrtc() {
        return;
    }
    let source = "#if __cplusplus != DIALECT\n#error dialect\n#endif\n\
                  template <typename T> concept Small = sizeof(T) <= 4;\n\
                  template <Small T> __global__ void k(T* x) { *x = T(1); }\n\
                  template __global__ void k<int>(int*);";
    let cxx20 = ProgramOptions {
        std: Some("c++20".to_owned()),
        defines: vec![("DIALECT".to_owned(), Some("202002L".to_owned()))],
        ..options()
    };
    Program::new(source, cxx20)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let cxx17 = ProgramOptions {
        std: Some("c++17".to_owned()),
        defines: vec![("DIALECT".to_owned(), Some("201703L".to_owned()))],
        ..options()
    };
    let err = Program::new(source, cxx17)
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    // Past the dialect check (201703 under C++17), the concept is what fails.
    let Error::Compile { log, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        !log.contains("#error") && !log.contains("error directive"),
        "{log}"
    );
    assert!(log.contains("concept") || log.contains("Small"), "{log}");
}

/// Relocatable device code: a call to a function defined elsewhere compiles to a cubin (with
/// the call left for the linker), which whole-program compilation refuses.
#[test]
fn relocatable_device_code_allows_external_calls() {
    if !nvrtc() {
        return;
    }
    let source = "__device__ float elsewhere(float);\n\
                  extern \"C\" __global__ void k(float* x) { x[0] = elsewhere(x[0]); }";
    let cubin = Program::new(source, options().with_relocatable_device_code(true))
        .compile(CodeType::Cubin, &[])
        .unwrap();
    assert!(cubin.code().starts_with(b"\x7fELF"));
    let err = Program::new(source, options())
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Compile { log, .. } if log.contains("elsewhere")),
        "{err}"
    );
}

/// The linker refuses what it cannot link before asking any driver: nothing at all, and LTO-IR
/// for the driver's own linker.
#[test]
fn the_linker_refuses_nothing_and_ltoir_for_the_driver() {
    use cuda_core::{Linker, LinkerBackend, LinkerOptions, ObjectCode};
    let driver = LinkerOptions {
        arch: Some("90".to_owned()),
        backend: LinkerBackend::Driver,
        ..Default::default()
    };
    let err = Linker::new(&[], driver.clone()).link().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "inputs", .. }),
        "{err}"
    );
    let ltoir = ObjectCode::from_ltoir(b"not really LTO-IR".to_vec());
    let ptx = ObjectCode::from_ptx(b".version 8.0\n.target sm_90\n.address_size 64\n".to_vec());
    let err = Linker::new(&[ptx, ltoir], driver).link().unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("LTO-IR") && log.contains("nvJitLink")),
        "{err}"
    );
}
