//! NVRTC compilation, which needs no GPU: CI runs these against the real NVRTC 13 (found by
//! discovery) and again with `CUDA_CORE_NVRTC_PATH` set to NVRTC 12 and
//! `CUDA_CORE_EXPECT_NVRTC_MAJOR=12`. Without any NVRTC they say they did not run, and fail
//! where `CUDA_CORE_TEST_REQUIRE` names an NVRTC (as CI does).

use cuda_core::{nvrtc_version, CodeType, Error, PchStatus, Program, ProgramOptions};

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
    ProgramOptions::default().with_arch("90".to_owned())
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
    let with = options()
        .with_defines(vec![("ANSWER".to_owned(), Some("42".to_owned()))])
        .with_std("c++17".to_owned())
        .with_fast_math(true)
        .with_fmad(false)
        .with_line_info(true)
        .with_max_register_count(32);
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
    let with_include = options().with_include_paths(vec![dir.path().to_path_buf()]);
    Program::new(source, with_include)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let err = Program::new(source, options())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(err.to_string().contains("value.h"), "{err}");
    // A bad option is NVRTC's error, with its log.
    let bad = options().with_extra(vec!["--no-such-option".to_owned()]);
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
fn options_nvrtc_reads_in_turn_keep_their_order() {
    // The arguments follow the options table's rows; these rows are in the order NVRTC needs
    // (a `-U` undoes an earlier `-D`, the last `-diag-*` naming a number wins, `-I` directories
    // are searched in turn, and options passed as they are come last), whatever order they
    // are set in.
    let args = ProgramOptions::default()
        .with_extra(vec!["-DE".into()])
        .with_diag_warn(vec![3])
        .with_diag_suppress(vec![2])
        .with_diag_error(vec![1])
        .with_undefines(vec!["U".into()])
        .with_include_paths(vec!["/inc".into()])
        .with_defines(vec![("U".into(), None)])
        .to_args(CodeType::Ptx);
    assert_eq!(
        args,
        [
            "-DU",
            "-I/inc",
            "-UU",
            "-diag-error=1",
            "-diag-suppress=2",
            "-diag-warn=3",
            "-DE"
        ]
    );
}

#[test]
fn option_arguments_are_spelled_for_nvrtc() {
    let options = ProgramOptions::default()
        .with_arch("90a".to_owned())
        .with_std("c++20".to_owned())
        .with_defines(vec![
            ("A".to_owned(), None),
            ("B".to_owned(), Some("2".to_owned())),
        ])
        .with_include_paths(vec!["/inc".into()])
        .with_debug(true)
        .with_line_info(true)
        .with_fast_math(true)
        .with_ftz(false)
        .with_prec_div(true)
        .with_prec_sqrt(false)
        .with_fmad(true)
        .with_relocatable_device_code(true)
        .with_max_register_count(64)
        .with_extra(vec!["--extra".to_owned()]);
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
    // The further options, each spelled as NVRTC takes it (the compile test shows it does).
    let more = ProgramOptions::default()
        .with_device_code_optimize(true)
        .with_ptxas_options(vec!["-v".into()])
        .with_extensible_whole_program(true)
        .with_extra_device_vectorization(true)
        .with_gen_opt_lto(true)
        .with_undefines(vec!["U".into()])
        .with_pre_includes(vec!["p.h".into()])
        .with_no_source_include(true)
        .with_builtin_move_forward(false)
        .with_builtin_initializer_list(true)
        .with_disable_warnings(true)
        .with_restrict(true)
        .with_device_as_default_execution_space(true)
        .with_device_int128(true)
        .with_optimization_info("inline")
        .with_no_display_error_number(true)
        .with_diag_error(vec![1])
        .with_diag_suppress(vec![2])
        .with_diag_warn(vec![3])
        .with_warnings_as_errors(true)
        .with_time("/t.csv")
        .with_device_time_trace("/t.json")
        .with_split_compile(4)
        .with_fast_compile(cuda_core::FastCompile::Mid)
        .with_minimal(true)
        .with_no_cache(true)
        .with_random_seed("s")
        .with_device_stack_protector(true)
        .with_modify_stack_limit(false);
    let mut args = more.to_args(CodeType::Ptx);
    let mut want = vec![
        "-dopt=on",
        "-ewp",
        "--extra-device-vectorization",
        "-gen-opt-lto",
        "-no-source-include",
        "-w",
        "-restrict",
        "-default-device",
        "-device-int128",
        "-no-err-no",
        "-Werror=all-warnings",
        "-minimal",
        "--no-cache",
        "--ptxas-options=-v",
        "-UU",
        "--pre-include=p.h",
        "-builtin-move-forward=false",
        "-builtin-initializer-list=true",
        "-device-stack-protector=true",
        "--modify-stack-limit=false",
        "-opt-info=inline",
        "-diag-error=1",
        "-diag-suppress=2",
        "-diag-warn=3",
        "-time=/t.csv",
        "-fdevice-time-trace=/t.json",
        "-split-compile=4",
        "-Ofc=mid",
        "-frandom-seed=s",
    ];
    args.sort();
    want.sort();
    assert_eq!(args, want);
}

#[test]
fn ltoir_links_with_nvjitlink_when_found() {
    if !nvrtc() {
        return;
    }
    use cuda_core::{Linker, LinkerBackend, LinkerOptions};
    let rdc = options().with_relocatable_device_code(true);
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
    let options = LinkerOptions::default()
        .with_arch("90".to_owned())
        .with_backend(LinkerBackend::NvJitLink);
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
    let code = Program::new(source, options)
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
    let cxx20 = options()
        .with_std("c++20".to_owned())
        .with_defines(vec![("DIALECT".to_owned(), Some("202002L".to_owned()))]);
    Program::new(source, cxx20)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let cxx17 = options()
        .with_std("c++17".to_owned())
        .with_defines(vec![("DIALECT".to_owned(), Some("201703L".to_owned()))]);
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
    let driver = LinkerOptions::default()
        .with_arch("90".to_owned())
        .with_backend(LinkerBackend::Driver);
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

/// Compiles `source` to PTX, giving NVRTC's log either way.
fn try_compile(source: &str, options: ProgramOptions) -> Result<(String, String), Error> {
    Program::new(source, options)
        .with_name("more.cu")
        .compile(CodeType::Ptx, &[])
        .map(|code| {
            (
                String::from_utf8_lossy(code.code()).into_owned(),
                code.compile_log().to_owned(),
            )
        })
}

const WARNS: &str = r#"extern "C" __global__ void k(float* x) { int unused_var; x[0] = 1.0f; }"#;

/// The options past the first dozen: each one's effect seen in NVRTC's output, log or files,
/// against a compile without it; the rest at least taken by NVRTC (a misspelled option is
/// refused, as the control shows); and the one NVRTC 12 lacks refused before it on 12.
#[test]
fn the_further_options_reach_nvrtc_with_their_effects() {
    if !nvrtc() {
        return;
    }
    let (major, minor) = nvrtc_version().unwrap();
    let base = options;
    // Control: NVRTC refuses an option it does not know.
    let bad = base().with_extra(vec!["-no-such-option".into()]);
    assert!(matches!(
        try_compile(WARNS, bad),
        Err(Error::Compile { .. })
    ));
    // Diagnostics.
    let (_, log) = try_compile(WARNS, base()).unwrap();
    assert!(log.contains("#177-D"), "{log}");
    let (_, log) = try_compile(WARNS, base().with_no_display_error_number(true)).unwrap();
    assert!(
        log.contains("never referenced") && !log.contains("#177"),
        "{log}"
    );
    let (_, log) = try_compile(WARNS, base().with_disable_warnings(true)).unwrap();
    assert!(!log.contains("never referenced"), "{log}");
    let (_, log) = try_compile(WARNS, base().with_diag_suppress(vec![177])).unwrap();
    assert!(!log.contains("never referenced"), "{log}");
    let (_, log) = try_compile(WARNS, base().with_diag_warn(vec![177])).unwrap();
    assert!(log.contains("never referenced"), "{log}");
    assert!(matches!(
        try_compile(WARNS, base().with_diag_error(vec![177])),
        Err(Error::Compile { .. })
    ));
    let strict = try_compile(WARNS, base().with_warnings_as_errors(true));
    if (major, minor) >= (13, 1) {
        // The warning made an error: the log has it (an option NVRTC refused would not).
        assert!(
            matches!(&strict, Err(Error::Compile { log, .. }) if log.contains("#177-D")),
            "{strict:?}"
        );
    } else {
        let err = strict.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("NVRTC 13.1")),
            "{err}"
        );
    }
    // Macros: undefined after defined; a pre-included header's.
    let guarded =
        "#ifdef FOO\n#error FOO is defined\n#endif\n#ifndef PRE\n#error PRE is not\n#endif\n\
                   extern \"C\" __global__ void k() {}";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pre.h"), "#define PRE 1\n").unwrap();
    let with_pre = || {
        base()
            .with_include_paths(vec![dir.path().to_path_buf()])
            .with_pre_includes(vec!["pre.h".into()])
            .with_defines(vec![("FOO".into(), None)])
    };
    assert!(
        try_compile(guarded, with_pre()).is_err(),
        "FOO stays defined"
    );
    assert!(try_compile(guarded, with_pre().with_undefines(vec!["FOO".into()])).is_ok());
    assert!(
        try_compile(guarded, base().with_undefines(vec!["FOO".into()])).is_err(),
        "PRE comes only from the pre-included header"
    );
    // Language: functions without an execution space, __int128.
    let plain_function = r#"int twice(int v) { return 2 * v; }
        extern "C" __global__ void k(int* x) { x[0] = twice(x[1]); }"#;
    assert!(try_compile(plain_function, base()).is_err());
    assert!(try_compile(
        plain_function,
        base().with_device_as_default_execution_space(true)
    )
    .is_ok());
    let wide = r#"extern "C" __global__ void k(unsigned long long* x) {
        __int128 v = (__int128)x[0] * x[1]; x[2] = (unsigned long long)(v >> 64); }"#;
    assert!(try_compile(wide, base()).is_err());
    assert!(try_compile(wide, base().with_device_int128(true)).is_ok());
    // Remarks, ptxas's report, the timing files.
    let inlined = r#"__device__ float g(float v) { return v + 1.0f; }
        extern "C" __global__ void k(float* x) { x[0] = g(x[1]); }"#;
    // (With NVRTC's own cache off: NVRTC 12.9 where a driver is present can hand a compile
    // the output of an earlier one, without its log.)
    let report = Program::new(
        inlined,
        base()
            .with_ptxas_options(vec!["-v".into()])
            .with_no_cache(true),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    assert!(
        report.compile_log().contains("registers"),
        "{}",
        report.compile_log()
    );
    let (csv, trace) = (dir.path().join("time.csv"), dir.path().join("trace.json"));
    try_compile(
        inlined,
        base().with_time(&csv).with_device_time_trace(&trace),
    )
    .unwrap();
    assert!(
        std::fs::metadata(&csv).unwrap().len() > 0,
        "no timings written"
    );
    // NVRTC 13 appends ".json" to the name given; 12.9 writes the name as given.
    let written = if major >= 13 {
        dir.path().join("trace.json.json")
    } else {
        trace.clone()
    };
    assert!(
        std::fs::metadata(&written).is_ok_and(|m| m.len() > 0),
        "no trace at {}",
        written.display()
    );
    // Pointers made __restrict__: a read-only pointer that cannot alias the written one is
    // read through the non-coherent cache (`ld.global.nc`), on NVRTC 12.9 and 13 alike.
    let twice =
        r#"extern "C" __global__ void k(float* a, const float* b) { a[0] = b[0]; a[1] = b[0]; }"#;
    let non_coherent = |options| {
        try_compile(twice, options)
            .unwrap()
            .0
            .matches("ld.global.nc")
            .count()
    };
    assert_eq!(non_coherent(base()), 0);
    assert!(non_coherent(base().with_restrict(true)) > 0);
    // The rest, taken by NVRTC (each compiles; the LTO one to LTO-IR).
    let simple = r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#;
    for (name, options) in [
        (
            "device_code_optimize",
            base().with_debug(true).with_device_code_optimize(true),
        ),
        (
            "extensible_whole_program",
            base().with_extensible_whole_program(true),
        ),
        (
            "extra_device_vectorization",
            base().with_extra_device_vectorization(true),
        ),
        ("no_source_include", base().with_no_source_include(true)),
        (
            "builtin_move_forward",
            base().with_builtin_move_forward(false),
        ),
        (
            "builtin_initializer_list",
            base().with_builtin_initializer_list(false),
        ),
        ("split_compile", base().with_split_compile(2)),
        (
            "fast_compile",
            base().with_fast_compile(cuda_core::FastCompile::Max),
        ),
        ("minimal", base().with_minimal(true)),
        ("no_cache", base().with_no_cache(true)),
        ("random_seed", base().with_random_seed("7")),
        (
            "device_stack_protector",
            base().with_device_stack_protector(true),
        ),
        ("modify_stack_limit", base().with_modify_stack_limit(false)),
    ] {
        if let Err(e) = try_compile(simple, options) {
            panic!("{name}: {e}");
        }
    }
    Program::new(simple, base().with_gen_opt_lto(true))
        .compile(CodeType::LtoIr, &[])
        .unwrap();
}

/// `-opt-info` in a process of its own: NVRTC (12.9 and 13) keeps it for every later compile
/// of the process, so the compile without it comes first, and no other test shares the process.
#[test]
fn optimization_remarks_reach_the_log() {
    let test = crate::common::test_name(module_path!(), "optimization_remarks_reach_the_log");
    if crate::common::child_role(&test).is_none() {
        if nvrtc() {
            crate::common::wait_child(
                crate::common::spawn_child(&test, "alone"),
                &test,
                "remarks checked",
            );
        }
        return;
    }
    let inlined = r#"__device__ float g(float v) { return v + 1.0f; }
        extern "C" __global__ void k(float* x) { x[0] = g(x[1]); }"#;
    let (_, log) = try_compile(inlined, options()).unwrap();
    assert!(!log.contains("inlined into"), "{log}");
    // With NVRTC's own cache off (see the_further_options_reach_nvrtc_with_their_effects).
    let (_, log) = try_compile(
        inlined,
        options()
            .with_optimization_info("inline")
            .with_no_cache(true),
    )
    .unwrap();
    assert!(log.contains("inlined into"), "{log}");
    let (_, after) = try_compile(inlined, options()).unwrap();
    println!(
        "a later compile without -opt-info {} remarks",
        if after.contains("inlined into") {
            "still has"
        } else {
            "has no"
        }
    );
    println!("remarks checked");
}

/// A header worth precompiling: 500 class templates.
fn big_header(dir: &std::path::Path) {
    let body: String = (0..500)
        .map(|i| format!("template <int N> struct T{i} {{ static constexpr int v = N * {i}; }};\n"))
        .collect();
    std::fs::write(dir.join("big.h"), body).unwrap();
}

const USES_BIG: &str =
    "#include \"big.h\"\nextern \"C\" __global__ void k(int* x) { x[0] = T7<3>::v; }\n";

/// Precompiled headers: created in the file named, then used from it (the log says each);
/// automatic ones land in the directory given; the messages can be turned off; and the output
/// is the same PTX with and without.
#[test]
fn precompiled_headers_are_created_and_used() {
    if !nvrtc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    big_header(dir.path());
    let base = || options().with_include_paths(vec![dir.path().to_path_buf()]);
    let (plain, log) = try_compile(USES_BIG, base()).unwrap();
    // The control: no precompiled header without the options.
    assert!(!log.contains("precompiled header"), "{log}");
    // No precompiled header asked for: no status (the code says nothing of one).
    let plain_code = Program::new(USES_BIG, base())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    assert_eq!(plain_code.pch_status(), None);
    let pch = dir.path().join("big.pch");
    let (created, log) = try_compile(USES_BIG, base().with_create_pch(&pch)).unwrap();
    // Catches an option that never reached NVRTC, or a misspelled file argument.
    assert!(
        log.contains("creating precompiled header") && pch.exists(),
        "{log}"
    );
    let status = Program::new(USES_BIG, base().with_create_pch(dir.path().join("b2.pch")))
        .compile(CodeType::Ptx, &[])
        .unwrap()
        .pch_status()
        .cloned();
    // NVRTC's heap is large enough for this header by default: created at once.
    assert_eq!(status, Some(PchStatus::Created));
    let (used, log) = try_compile(USES_BIG, base().with_use_pch(&pch)).unwrap();
    assert!(log.contains("using precompiled header"), "{log}");
    // The same program compiles to the same code every way.
    assert_eq!((&created, &used), (&plain, &plain));
    // A precompiled header of other headers is not taken silently.
    std::fs::write(dir.path().join("other.h"), "struct Other {};\n").unwrap();
    let (_, log) = try_compile(
        "#include \"other.h\"\nextern \"C\" __global__ void k() {}\n",
        base().with_use_pch(&pch).with_pch_verbose(true),
    )
    .unwrap();
    assert!(!log.contains("using precompiled header"), "{log}");
    // Automatic: written into pch_dir, then used from there.
    let auto = dir.path().join("auto");
    std::fs::create_dir(&auto).unwrap();
    let automatic = || base().with_pch(true).with_pch_dir(&auto);
    let (_, log) = try_compile(USES_BIG, automatic()).unwrap();
    assert!(log.contains("creating precompiled header"), "{log}");
    let made: Vec<_> = std::fs::read_dir(&auto).unwrap().collect();
    assert_eq!(made.len(), 1, "one precompiled header in pch_dir");
    let used = Program::new(USES_BIG, automatic())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    assert!(
        used.compile_log().contains("using precompiled header"),
        "{}",
        used.compile_log()
    );
    // One made before was used: none created, and the status says so (bug caught: a
    // status reported only where a header was created).
    assert_eq!(used.pch_status(), Some(&PchStatus::NotAttempted));
    // Quiet: the same use without the message.
    let (_, log) = try_compile(USES_BIG, automatic().with_pch_messages(false)).unwrap();
    assert!(!log.contains("precompiled header"), "{log}");
    // The templates option is taken (a misspelling would fail the compile, as above).
    let (_, _) = try_compile(
        USES_BIG,
        base()
            .with_create_pch(dir.path().join("templates.pch"))
            .with_instantiate_templates_in_pch(true),
    )
    .unwrap();
    assert!(dir.path().join("templates.pch").exists());
}

/// The PCH heap: read and set (for the whole process, so alone in a child process); a heap
/// too small for the header is grown to what NVRTC asks for and the program compiled once
/// more, which creates the header, and the result says so.
#[test]
fn a_pch_heap_too_small_is_grown_and_the_program_compiled_again() {
    crate::common::alone(
        module_path!(),
        "a_pch_heap_too_small_is_grown_and_the_program_compiled_again",
        || {
            if !nvrtc() {
                return;
            }
            let heap = cuda_core::pch_heap_size().unwrap();
            assert!(heap > 0, "{heap}");
            let dir = tempfile::tempdir().unwrap();
            big_header(dir.path());
            cuda_core::set_pch_heap_size(4096).unwrap();
            // Catches a setter that does not reach NVRTC.
            assert_eq!(cuda_core::pch_heap_size().unwrap(), 4096);
            let pch = dir.path().join("big.pch");
            let program = Program::new(
                USES_BIG,
                options()
                    .with_include_paths(vec![dir.path().to_path_buf()])
                    .with_create_pch(&pch),
            );
            let code = program.compile(CodeType::Ptx, &[]).unwrap();
            let log = code.compile_log();
            println!("PCH heap 4096 bytes: {log}");
            assert!(
                String::from_utf8_lossy(code.code()).contains(".entry k"),
                "the compile itself succeeded"
            );
            // Bugs caught: no retry (the header not created, the status `HeapExhausted`);
            // the heap grown to less than NVRTC asked for (the retry runs out again).
            let required = match code.pch_status() {
                Some(PchStatus::Retried { required, retry }) => {
                    assert_eq!(**retry, PchStatus::Created, "{log}");
                    *required
                }
                other => panic!("{other:?}: {log}"),
            };
            assert!(required > 4096, "{required}");
            assert!(code.pch_status().unwrap().created());
            assert!(pch.exists(), "{log}");
            assert!(
                log.contains("creating precompiled header")
                    && log.contains(&format!("grown to {required} bytes")),
                "{log}"
            );
            // The heap is the process's, and stays grown (NVRTC may round it up).
            assert!(cuda_core::pch_heap_size().unwrap() >= required);
            // With the heap large enough, one compile creates it (no second one).
            std::fs::remove_file(&pch).unwrap();
            let again = program.compile(CodeType::Ptx, &[]).unwrap();
            assert_eq!(again.pch_status(), Some(&PchStatus::Created));
            assert!(!again.pch_status().unwrap().retried());
            cuda_core::set_pch_heap_size(heap).unwrap();
        },
    );
}

/// A syntax check: the warnings of a valid program, the errors of an invalid one, and no code
/// either way; `-Wreorder`'s warning from NVRTC 13.1, refused before it.
#[test]
fn a_syntax_check_gives_the_diagnostics_without_code() {
    if !nvrtc() {
        return;
    }
    let version = nvrtc_version().unwrap();
    let log = Program::new(WARNS, options()).check_syntax().unwrap();
    // The same warning a compile gives (catches a check that compiled nothing at all).
    assert!(log.contains("#177-D"), "{log}");
    let err = Program::new(
        "extern \"C\" __global__ void k() { undeclared(); }",
        options(),
    )
    .with_name("bad.cu")
    .check_syntax()
    .unwrap_err();
    assert!(
        matches!(&err, Error::Compile { program, log } if program == "bad.cu" && log.contains("undeclared")),
        "{err}"
    );
    let reorder = r#"struct A { int b; int a; __device__ A() : a(1), b(2) {} };
        extern "C" __global__ void k(int* x) { A v; x[0] = v.a + v.b; }"#;
    let quiet = Program::new(reorder, options()).check_syntax().unwrap();
    assert!(!quiet.contains("initialization of member"), "{quiet}");
    let checked = Program::new(reorder, options().with_warn_reorder(true)).check_syntax();
    if version >= (13, 1) {
        let log = checked.unwrap();
        assert!(log.contains("initialization of member"), "{log}");
    } else {
        let err = checked.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("warn_reorder") && reason.contains("NVRTC 13.1")),
            "{err}"
        );
    }
}

/// Precompiled headers are code NVRTC loads into the compile. Bugs caught: a `pch_dir` others
/// can write, or a link, handed to NVRTC; a `use_pch` file others can write, or a link, read;
/// a `create_pch` link followed (NVRTC would write through it). Refused before NVRTC, so this
/// runs without one.
#[test]
fn precompiled_header_files_others_could_write_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let chmod = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let refused = |options: ProgramOptions| match Program::new("__global__ void k() {}", options)
        .compile(CodeType::Ptx, &[])
    {
        Err(Error::InvalidArgument { name, reason }) => (name, reason),
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    };
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    let (name, reason) = refused(options().with_pch(true).with_pch_dir(&open));
    assert_eq!(name, "pch_dir");
    assert!(reason.contains("chmod 700"), "{reason}");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    let (name, reason) = refused(options().with_pch(true).with_pch_dir(&link));
    assert_eq!(name, "pch_dir");
    assert!(reason.contains("symbolic link"), "{reason}");
    let pch = dir.path().join("h.pch");
    std::fs::write(&pch, b"not really").unwrap();
    chmod(&pch, 0o622);
    let (name, reason) = refused(options().with_use_pch(&pch));
    assert_eq!(name, "use_pch");
    assert!(reason.contains("writable by"), "{reason}");
    let pch_link = dir.path().join("l.pch");
    std::os::unix::fs::symlink(&pch, &pch_link).unwrap();
    for options in [
        options().with_use_pch(&pch_link),
        options().with_create_pch(&pch_link),
    ] {
        let (_, reason) = refused(options);
        assert!(reason.contains("symbolic link"), "{reason}");
    }
    // A file in a directory every user can write (not sticky) could be swapped before NVRTC
    // opens it.
    let (name, reason) = refused(options().with_create_pch(open.join("new.pch")));
    assert_eq!(name, "create_pch");
    assert!(reason.contains("not sticky"), "{reason}");
}

/// Automatic precompiled headers without a `pch_dir` go to a directory of the user's own,
/// never to the working directory (where NVRTC would put them, and read back what another user
/// left there). Bugs caught: no directory given to NVRTC (the header lands in the working
/// directory); the directory made as the umask allows. Alone: it changes the working
/// directory, the umask and `XDG_CACHE_HOME`.
#[test]
fn automatic_precompiled_headers_never_use_the_working_directory() {
    crate::common::alone(
        module_path!(),
        "automatic_precompiled_headers_never_use_the_working_directory",
        || {
            use std::os::unix::fs::PermissionsExt;
            let base = tempfile::tempdir().unwrap();
            let work = base.path().join("work");
            std::fs::create_dir(&work).unwrap();
            big_header(&work);
            let xdg = base.path().join("xdg");
            std::env::set_current_dir(&work).unwrap();
            rustix::process::umask(rustix::fs::Mode::empty());
            // SAFETY: this child runs this test alone, and no other thread reads the environment.
            unsafe { std::env::set_var("XDG_CACHE_HOME", &xdg) };
            let result = try_compile(
                USES_BIG,
                options()
                    .with_include_paths(vec![work.clone()])
                    .with_pch(true),
            );
            let made = xdg.join("cuda-core/pch");
            let mode = std::fs::metadata(&made).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o700, "{}", made.display());
            if !nvrtc() {
                return;
            }
            let (_, log) = result.unwrap();
            assert!(log.contains("creating precompiled header"), "{log}");
            assert_eq!(std::fs::read_dir(&made).unwrap().count(), 1, "{log}");
            let in_work: Vec<_> = std::fs::read_dir(&work)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(in_work, ["big.h"], "NVRTC wrote to the working directory");
        },
    );
}

/// The PTX of `source` compiled with `options`, as text.
fn ptx_text(source: &str, options: ProgramOptions) -> String {
    let code = Program::new(source, options)
        .compile(CodeType::Ptx, &[])
        .unwrap();
    String::from_utf8_lossy(code.code()).into_owned()
}

/// A header given in memory is what `#include` reads, quoted or angled, from the source and
/// from another header in memory, and it wins over a file of the same name in an include
/// directory (NVRTC reads the in-memory one first).
#[test]
fn a_header_given_in_memory_is_what_the_source_includes() {
    if !nvrtc() {
        return;
    }
    let source = "#include \"histogram_common.h\"\n\
                  extern \"C\" __global__ void k(unsigned* out) { out[0] = BIN_COUNT; out[1] = SHIFT; }";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("histogram_common.h"),
        "#define BIN_COUNT 777\n#define SHIFT 1\n",
    )
    .unwrap();
    let given = options()
        .with_include_paths(vec![dir.path().to_path_buf()])
        .with_header(
            "histogram_common.h",
            "#include <shift.h>\n#define BIN_COUNT 12345\n",
        )
        .with_header("shift.h", "#define SHIFT 54321\n");
    let text = ptx_text(source, given.clone());
    // Catches the headers not handed to NVRTC (the include fails or reads the file), and a
    // header in memory that another one includes not found.
    assert!(text.contains("12345") && text.contains("54321"), "{text}");
    // Catches the file of the same name read instead of the header given in memory.
    assert!(!text.contains("777"), "{text}");
    // Catches `with_header` adding a second header of a name instead of replacing it.
    let text = ptx_text(
        source,
        given.with_header("shift.h", "#define SHIFT 24680\n"),
    );
    assert!(text.contains("24680") && !text.contains("54321"), "{text}");
    // A NUL in a header is refused by name, before NVRTC.
    let err = Program::new(source, options().with_header("histogram_common.h", "\0"))
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "headers",
                ..
            }
        ),
        "{err}"
    );
}

/// A cooperative-groups kernel: CUDA 13's header includes CCCL (`cuda/std/...`, `nv/target`).
const COOPERATIVE: &str = r#"
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void block_sum(const int* x, int* out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int sum = cg::reduce(warp, x[block.thread_rank()], cg::plus<int>());
    if (warp.thread_rank() == 0) atomicAdd(out, sum);
}
"#;

/// One option finds the toolkit's headers (a toolkit's, or the runtime and CCCL wheels'), and
/// a kernel that includes `<cooperative_groups.h>` compiles with it and not without it.
#[test]
fn the_toolkit_includes_option_compiles_a_cooperative_groups_kernel() {
    if !nvrtc() {
        return;
    }
    let with = Program::new(COOPERATIVE, options().with_toolkit_includes(true))
        .with_name("cooperative.cu")
        .compile(CodeType::Ptx, &[]);
    let code = match with {
        Err(Error::InvalidArgument {
            name: "toolkit_includes",
            reason,
        }) => return crate::common::not_run("cuda-headers", &reason),
        other => other.unwrap(),
    };
    let text = String::from_utf8_lossy(code.code());
    // Catches the folders not handed to NVRTC, or CCCL's left out (the include fails).
    assert!(text.contains(".entry block_sum"), "{text}");
    // Catches a test that would pass without the option (headers NVRTC has built in).
    let without = Program::new(COOPERATIVE, options())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(
        matches!(&without, Error::Compile { log, .. } if log.contains("cooperative_groups")),
        "{without}"
    );
    // A PTX program has no use for it, and says so.
    let err = Program::from_ptx(".version 8.0\n", options().with_toolkit_includes(true))
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("toolkit_includes")),
        "{err}"
    );
}

/// A kernel that only a toolkit's headers, or NVRTC's bundled copy of them, let compile:
/// `<cooperative_groups.h>` and CCCL's `<cuda/std/array>` are not among NVRTC's built-in
/// headers.
const NEEDS_TOOLKIT_HEADERS: &str = r#"
#include <cooperative_groups.h>
#include <cuda/std/array>
namespace cg = cooperative_groups;
extern "C" __global__ void bundled(int* out) {
    cg::thread_block block = cg::this_thread_block();
    cuda::std::array<int, 2> pair{40, 2};
    out[block.thread_rank()] = pair[0] + pair[1] + static_cast<int>(block.thread_rank());
}
"#;

/// NVRTC's bundled headers (`use_bundled_headers`, NVRTC 13.3 and newer) compile what only a
/// toolkit's headers would: installed by NVRTC into the directory given, made `0700`, and
/// covered by the cache key. On an older NVRTC, refused before it, naming the version, and the
/// rest says `not run`.
#[test]
fn bundled_headers_compile_a_kernel_that_needs_the_toolkits_headers() {
    if !nvrtc() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("nvrtc-headers");
    let program = Program::new(
        NEEDS_TOOLKIT_HEADERS,
        options().with_use_bundled_headers(&dir),
    );
    let version = nvrtc_version().unwrap();
    if version < (13, 3) {
        // Bug caught: the option handed to an NVRTC that does not know it.
        let err = program.compile(CodeType::Ptx, &[]).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { reason, .. }
                if reason.contains("use_bundled_headers") && reason.contains("13.3")),
            "{err}"
        );
        return crate::common::not_run(
            "nvrtc-13.3",
            &format!("NVRTC {}.{} has no bundled headers", version.0, version.1),
        );
    }
    // The control: without them the include fails (no toolkit on NVRTC's search path).
    let without = Program::new(NEEDS_TOOLKIT_HEADERS, options())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(
        matches!(&without, Error::Compile { log, .. } if log.contains("cooperative_groups")),
        "{without}"
    );
    let key_before = program.cache_key(CodeType::Ptx, &[]).unwrap();
    // Bug caught: the flag not reaching NVRTC (the include fails as above).
    let code = program.compile(CodeType::Ptx, &[]).unwrap();
    let text = String::from_utf8_lossy(code.code());
    assert!(text.contains(".entry bundled"), "{text}");
    assert!(dir.join("cooperative_groups.h").is_file());
    assert!(dir.join("cccl/cuda/std/array").is_file());
    // Made the user's own before NVRTC wrote there (bug caught: made as the umask says).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700);
    // The key follows the headers NVRTC installed, as those of an include path: installing
    // them changed it, and so does a change to one (bug caught: a key blind to them).
    let key_installed = program.cache_key(CodeType::Ptx, &[]).unwrap();
    assert_ne!(key_before, key_installed);
    let header = dir.join("cooperative_groups.h");
    let mut text = std::fs::read_to_string(&header).unwrap();
    text.push_str("\n// changed\n");
    std::fs::write(&header, text).unwrap();
    assert_ne!(
        program.cache_key(CodeType::Ptx, &[]).unwrap(),
        key_installed
    );
    // A directory others can write is refused before NVRTC reads from it.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = program.compile(CodeType::Ptx, &[]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "use_bundled_headers", reason }
            if reason.contains("chmod 700")),
        "{err}"
    );
    // A PTX program has no use for it, and says so.
    let err = Program::from_ptx(".version 8.0\n", options().with_use_bundled_headers(&dir))
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("use_bundled_headers")),
        "{err}"
    );
}

/// On a GPU: a kernel compiled against NVRTC's bundled headers alone (its default directory,
/// [`ProgramOptions::default_bundled_headers_dir`]) loads and runs, and computes what its
/// source says.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_built_on_the_bundled_headers_runs() {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    if !nvrtc() {
        return;
    }
    let version = nvrtc_version().unwrap();
    if version < (13, 3) {
        return crate::common::not_run(
            "nvrtc-13.3",
            &format!("NVRTC {}.{} has no bundled headers", version.0, version.1),
        );
    }
    let device = crate::common::device();
    device.set_current().unwrap();
    let dir = ProgramOptions::default_bundled_headers_dir().unwrap();
    assert!(
        dir.ends_with(format!("nvrtc-headers/{}.{}", version.0, version.1)),
        "{}",
        dir.display()
    );
    let code = Program::new(
        NEEDS_TOOLKIT_HEADERS,
        ProgramOptions::default().with_use_bundled_headers(&dir),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let kernel = code.get_kernel("bundled").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(4 * 64, &stream)
        .unwrap();
    // SAFETY: 64 ints in `out`, one per thread.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [64, 1, 1]),
            &kernel,
            &[&out],
        )
    }
    .unwrap();
    let got = out.to_vec::<i32>(&stream).unwrap();
    let expected: Vec<i32> = (0..64).map(|i| 42 + i).collect();
    assert_eq!(got, expected);
}

/// On a GPU: a kernel compiled with automatic precompiled headers reports its header's status
/// (created on the first compile, in a fresh directory), loads and runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_compiled_with_precompiled_headers_reports_them_and_runs() {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    if !nvrtc() {
        return;
    }
    let device = crate::common::device();
    device.set_current().unwrap();
    let dir = tempfile::tempdir().unwrap();
    big_header(dir.path());
    let pch_dir = dir.path().join("pch");
    let code = Program::new(
        USES_BIG,
        ProgramOptions::default()
            .with_include_paths(vec![dir.path().to_path_buf()])
            .with_pch(true)
            .with_pch_dir(&pch_dir),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let status = code.pch_status().expect("NVRTC 12.8 or newer says");
    assert!(status.created(), "{status:?}: {}", code.compile_log());
    let kernel = code.get_kernel("k").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let out = device
        .memory_resource()
        .unwrap()
        .allocate(4, &stream)
        .unwrap();
    // SAFETY: one int in `out`.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
            &kernel,
            &[&out],
        )
    }
    .unwrap();
    // T7<3>::v is 3 * 7.
    assert_eq!(out.to_vec::<i32>(&stream).unwrap(), [21]);
}

/// Whether `haystack` holds `needle`.
fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A debug build with `debug_source_dir`: the source written under the program's name there,
/// and the cubin's line information naming that file by its absolute path (its directory, then
/// the file's name, as DWARF's line table has them), so that cuda-gdb finds it; never over
/// another file; written on a cache hit too.
#[test]
fn a_debug_build_writes_its_source_where_its_line_information_names_it() {
    use cuda_core::cache::InMemoryProgramCache;
    if !nvrtc() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("source");
    let with_dir = || options().with_debug(true).with_debug_source_dir(&dir);
    let program = Program::new(SAXPY, with_dir()).with_name("saxpy_debug.cu");
    let code = program.compile(CodeType::Cubin, &[]).unwrap();
    let file = dir.join("saxpy_debug.cu");
    // Bug caught: no file written, or not under the program's name.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SAXPY);
    let dir_bytes = format!("{}\0", dir.display()).into_bytes();
    // Bug caught: NVRTC given the bare name, so that the line table names the working
    // directory, where no such file is, and cuda-gdb shows nothing.
    assert!(
        holds(code.code(), &dir_bytes),
        "the directory in the line table"
    );
    assert!(holds(code.code(), b"\0saxpy_debug.cu\0"));
    // The code keeps the program's name.
    assert_eq!(code.name(), "saxpy_debug.cu");
    // The control: the same build without it records no such directory.
    let plain = Program::new(SAXPY, options().with_debug(true))
        .with_name("saxpy_debug.cu")
        .compile(CodeType::Cubin, &[])
        .unwrap();
    assert!(!holds(plain.code(), &dir_bytes));
    // The path is in the cache key (the code records it): bug caught, code with one path
    // served for another.
    let elsewhere = Program::new(
        SAXPY,
        options()
            .with_debug(true)
            .with_debug_source_dir(base.path().join("elsewhere")),
    )
    .with_name("saxpy_debug.cu");
    assert_ne!(
        program.cache_key(CodeType::Cubin, &[]).unwrap(),
        elsewhere.cache_key(CodeType::Cubin, &[]).unwrap()
    );
    // Compiled again, the same source: the file kept, and the compile works.
    program.compile(CodeType::Cubin, &[]).unwrap();
    // Another source under the same name: refused, and the file left as it was (bug
    // caught: a file overwritten silently).
    let changed = format!("{SAXPY}// changed\n");
    let err = Program::new(changed.as_str(), with_dir())
        .with_name("saxpy_debug.cu")
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "debug_source_dir", reason }
            if reason.contains("not overwritten") && reason.contains("saxpy_debug.cu")),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SAXPY);
    // A cache hit writes the file too (bug caught: cached code whose source is missing).
    let cache = InMemoryProgramCache::new(1 << 20);
    program
        .compile_cached(&cache, CodeType::Cubin, &[])
        .unwrap();
    std::fs::remove_file(&file).unwrap();
    let hit = program
        .compile_cached(&cache, CodeType::Cubin, &[])
        .unwrap();
    assert_eq!(hit.code(), code.code());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SAXPY);
    // A PTX program has no source to write, and says so.
    let err = Program::from_ptx(".version 8.0\n", options().with_debug_source_dir(&dir))
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("debug_source_dir")),
        "{err}"
    );
}

/// On a GPU: a device debug (`-G`) build with `debug_source_dir` loads and runs, and its
/// source is at the absolute path its line information names (what cuda-gdb opens at a
/// breakpoint in it).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_debug_build_runs_with_its_source_beside_it() {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    if !nvrtc() {
        return;
    }
    let device = crate::common::device();
    device.set_current().unwrap();
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("source");
    let code = Program::new(
        SAXPY,
        ProgramOptions::default()
            .with_debug(true)
            .with_debug_source_dir(&dir),
    )
    .with_name("saxpy_gpu_debug.cu")
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let file = dir.join("saxpy_gpu_debug.cu");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SAXPY);
    assert!(holds(
        code.code(),
        format!("{}\0", dir.display()).as_bytes()
    ));
    let kernel = code.get_kernel("saxpy").unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let n = 256u32;
    let memory = device.memory_resource().unwrap();
    let mut x = memory.allocate(4 * n as usize, &stream).unwrap();
    let mut y = memory.allocate(4 * n as usize, &stream).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    x.copy_from_host(&xs, &stream).unwrap();
    y.copy_from_host(&vec![1.0f32; n as usize], &stream)
        .unwrap();
    let a = 2.0f32;
    // SAFETY: `n` floats in `x` and `y`.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::for_elements(n.into(), 128),
            &kernel,
            &[&a, &x, &y, &n],
        )
    }
    .unwrap();
    let got = y.to_vec::<f32>(&stream).unwrap();
    let expected: Vec<f32> = xs.iter().map(|x| 2.0 * x + 1.0).collect();
    assert_eq!(got, expected);
}
