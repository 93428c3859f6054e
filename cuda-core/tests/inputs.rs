//! Programs from PTX and from NVVM IR. The compiles need no GPU: they run here against the
//! real libNVVM 12 and 13 (each in a child process of this binary with `CUDA_CORE_NVVM_PATH`
//! naming its wheel's file, since a process keeps the first libNVVM it loads) and the
//! nvJitLink discovery finds; CI installs both and requires them (`nvvm-12`, `nvvm-13`). The
//! GPU tests load and run what they compile.

use std::path::PathBuf;

use cuda_core::{
    cache::{InMemoryProgramCache, ProgramCache},
    info::nvvm_info,
    launch, Allocate, CodeType, Error, NvvmModule, Program, ProgramKind, ProgramOptions,
    StreamOptions,
};

use crate::common;

const DATALAYOUT: &str = "target datalayout = \"e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n";

/// `scale(x, a, n)`: `x[i] *= a` for `i < n`, one element a thread. The LLVM 7 dialect (typed
/// pointers) and the `nvvm.annotations` kernel mark, which libNVVM 12 and 13 both take.
const SCALE: &str = r#"
define void @scale(float* %x, float %a, i32 %n) {
entry:
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %width = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %base = mul i32 %block, %width
  %i = add i32 %base, %thread
  %in = icmp ult i32 %i, %n
  br i1 %in, label %body, label %done
body:
  %wide = zext i32 %i to i64
  %p = getelementptr float, float* %x, i64 %wide
  %v = load float, float* %p
  %s = fmul float %v, %a
  store float %s, float* %p
  br label %done
done:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{void (float*, float, i32)* @scale, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"#;

/// `sine(x, n)`: `x[i] = sinf(x[i])` through libdevice's `__nv_sinf`.
const SINE: &str = r#"
define void @sine(float* %x, i32 %n) {
entry:
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %width = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %base = mul i32 %block, %width
  %i = add i32 %base, %thread
  %in = icmp ult i32 %i, %n
  br i1 %in, label %body, label %done
body:
  %wide = zext i32 %i to i64
  %p = getelementptr float, float* %x, i64 %wide
  %v = load float, float* %p
  %s = call float @__nv_sinf(float %v)
  store float %s, float* %p
  br label %done
done:
  ret void
}

declare float @__nv_sinf(float)
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvm.annotations = !{!0}
!0 = !{void (float*, i32)* @sine, !"kernel", i32 1}
!nvvmir.version = !{!1}
!1 = !{i32 2, i32 0}
"#;

/// `scale` in the newer LLVM of libNVVM 13 for Blackwell: opaque pointers, and the kernel
/// marked by the `ptx_kernel` calling convention instead of an annotation.
const SCALE_PTX_KERNEL: &str = r#"
define ptx_kernel void @scale(ptr %x, float %a, i32 %n) {
entry:
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %in = icmp ult i32 %i, %n
  br i1 %in, label %body, label %done
body:
  %wide = zext i32 %i to i64
  %p = getelementptr float, ptr %x, i64 %wide
  %v = load float, ptr %p
  %s = fmul float %v, %a
  store float %s, ptr %p
  br label %done
done:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()

!nvvmir.version = !{!0}
!0 = !{i32 2, i32 0}
"#;

/// Two kernels written as PTX: `scale(x, a, n)` as above, and `shift(x, b, n)`: `x[i] += b`.
const PTX: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(.param .u64 x, .param .f32 a, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [x];
    ld.param.f32 %f1, [a];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd2, %rd2, %rd3;
    ld.global.f32 %f2, [%rd2];
    mul.f32 %f2, %f2, %f1;
    st.global.f32 [%rd2], %f2;
DONE:
    ret;
}

.visible .entry shift(.param .u64 x, .param .f32 b, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .f32 %f<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [x];
    ld.param.f32 %f1, [b];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd2, %rd2, %rd3;
    ld.global.f32 %f2, [%rd2];
    add.f32 %f2, %f2, %f1;
    st.global.f32 [%rd2], %f2;
DONE:
    ret;
}
"#;

fn module(name: &str, body: &str) -> NvvmModule {
    NvvmModule::new(name, format!("{DATALAYOUT}{body}"))
}

fn sm90() -> ProgramOptions {
    ProgramOptions::default().with_arch("90")
}

fn text(code: &cuda_core::ObjectCode) -> String {
    String::from_utf8_lossy(code.code())
        .trim_end_matches('\0')
        .to_owned()
}

/// Whether a cubin has a kernel of this name: its code section, `.text.<name>`.
fn has_kernel(cubin: &[u8], name: &str) -> bool {
    let section = format!(".text.{name}\0");
    cubin
        .windows(section.len())
        .any(|w| w == section.as_bytes())
}

/// The wheel file of libNVVM `major` (both majors are `libnvvm.so.4` and report NVVM 2.0:
/// the wheel's layout tells them apart).
fn wheel_nvvm(major: u32) -> Option<PathBuf> {
    let folder = match major {
        13 => "nvidia/cu13/lib/libnvvm.so.4",
        _ => "nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so",
    };
    cuda_nvrtc_sys::nvvm::NvvmSearch::from_env(major)
        .with_python_paths()
        .site_packages
        .iter()
        .map(|dir| dir.join(folder))
        .find(|path| path.is_file())
}

/// Runs `body` with libNVVM 12 and with 13, each in a child process whose
/// `CUDA_CORE_NVVM_PATH` names that major's wheel file; a major not installed says it did not
/// run (and fails where `CUDA_CORE_TEST_REQUIRE` names `nvvm-<major>`).
fn with_each_libnvvm(function: &str, body: fn(u32)) {
    let test = common::test_name(module_path!(), function);
    if let Some(role) = common::child_role(&test) {
        let major: u32 = role.parse().expect("a major");
        // The variable's file is the one in use.
        let path = PathBuf::from(std::env::var_os("CUDA_CORE_NVVM_PATH").unwrap());
        let info = nvvm_info().unwrap();
        assert_eq!(info.location, path);
        assert_eq!(info.version.0, 2, "{info:?}");
        assert_eq!(info.ir_version.0, 2, "{info:?}");
        body(major);
        println!("libnvvm {major} done");
        return;
    }
    for major in [12, 13] {
        let Some(file) = wheel_nvvm(major) else {
            common::not_run(
                &format!("nvvm-{major}"),
                &format!("libNVVM {major} is not installed (pip install the nvidia-nvvm or nvidia-cuda-nvcc-cu12 wheel)"),
            );
            continue;
        };
        let mut child = common::child_command(&test, &major.to_string());
        child.env("CUDA_CORE_NVVM_PATH", &file);
        let child = child.spawn().expect("the test binary starts again");
        common::wait_child(child, &test, &format!("libnvvm {major} done"));
    }
}

#[test]
fn nvvm_ir_compiles_to_ptx_and_ltoir_with_libnvvm_12_and_13() {
    with_each_libnvvm(
        "nvvm_ir_compiles_to_ptx_and_ltoir_with_libnvvm_12_and_13",
        |major| {
            let program = Program::from_nvvm([module("scale.ll", SCALE)], sm90());
            assert_eq!(program.kind(), ProgramKind::NvvmIr);
            let ptx = program.compile(CodeType::Ptx, &[]).unwrap();
            assert_eq!(ptx.code_type(), CodeType::Ptx);
            assert_eq!(ptx.name(), "program.nvvm");
            let ptx_text = text(&ptx);
            assert!(ptx_text.contains(".visible .entry scale("), "{ptx_text}");
            assert!(ptx_text.contains(".target sm_90"), "{ptx_text}");
            // The PTX names the release that made it: the variable's libNVVM compiled it.
            assert!(
                ptx_text.contains(&format!("release {major}.")),
                "{ptx_text}"
            );
            assert_eq!(ptx.code().last(), Some(&0), "PTX keeps its NUL");
            // Options reach libNVVM: flushing denormals shows in the multiply.
            assert!(!ptx_text.contains("mul.ftz.f32"), "{ptx_text}");
            let ftz = Program::from_nvvm([module("scale.ll", SCALE)], sm90().with_ftz(true))
                .compile(CodeType::Ptx, &[])
                .unwrap();
            assert!(text(&ftz).contains("mul.ftz.f32"), "{}", text(&ftz));
            let fast = Program::from_nvvm([module("scale.ll", SCALE)], sm90().with_fast_math(true))
                .compile(CodeType::Ptx, &[])
                .unwrap();
            assert!(text(&fast).contains("mul.ftz.f32"), "{}", text(&fast));
            // Another architecture is another target.
            let sm80 = Program::from_nvvm([module("scale.ll", SCALE)], sm90().with_arch("80"))
                .compile(CodeType::Ptx, &[])
                .unwrap();
            assert!(text(&sm80).contains(".target sm_80"), "{}", text(&sm80));
            // LTO-IR (`-gen-lto`): not PTX, not a cubin.
            let ltoir = program.compile(CodeType::LtoIr, &[]).unwrap();
            assert_eq!(ltoir.code_type(), CodeType::LtoIr);
            assert!(ltoir.code().len() > 16);
            assert!(!ltoir.code().starts_with(b"\x7fELF"));
            assert!(!text(&ltoir).contains(".entry"));
            // Two modules are linked at the IR level: both kernels are in the PTX.
            let both = Program::from_nvvm(
                [
                    module("scale.ll", SCALE),
                    module("sine.ll", SINE),
                    NvvmModule::libdevice().unwrap(),
                ],
                sm90(),
            )
            .compile(CodeType::Ptx, &[])
            .unwrap();
            let both = text(&both);
            assert!(
                both.contains(".entry scale(") && both.contains(".entry sine("),
                "{both}"
            );
            if major >= 13 {
                // The newer dialect and kernel mark, for Blackwell.
                let blackwell = Program::from_nvvm(
                    [module("scale.ll", SCALE_PTX_KERNEL)],
                    ProgramOptions::default().with_arch("100"),
                )
                .compile(CodeType::Ptx, &[])
                .unwrap();
                let blackwell = text(&blackwell);
                assert!(blackwell.contains(".visible .entry scale("), "{blackwell}");
                assert!(blackwell.contains(".target sm_100"), "{blackwell}");
            }
        },
    );
}

#[test]
fn a_malformed_module_fails_with_the_verifiers_log() {
    with_each_libnvvm("a_malformed_module_fails_with_the_verifiers_log", |_| {
        let broken = SCALE.replace("fmul float %v, %a", "fmul float %v, %missing");
        let err = Program::from_nvvm([module("broken.ll", &broken)], sm90())
            .with_name("broken")
            .compile(CodeType::Ptx, &[])
            .unwrap_err();
        match &err {
            Error::Compile { program, log } => {
                assert_eq!(program, "broken");
                assert!(log.contains("nvvmVerifyProgram"), "{log}");
                assert!(log.contains("%missing"), "{log}");
            }
            other => panic!("{other}"),
        }
        // A rule of NVVM IR rather than of LLVM: a kernel returns nothing.
        let non_void = format!(
            "{DATALAYOUT}define i32 @k() {{\n  ret i32 0\n}}\n!nvvm.annotations = !{{!0}}\n\
             !0 = !{{i32 ()* @k, !\"kernel\", i32 1}}\n!nvvmir.version = !{{!1}}\n\
             !1 = !{{i32 2, i32 0}}\n"
        );
        let err = Program::from_nvvm([NvvmModule::new("k.ll", non_void)], sm90())
            .compile(CodeType::Ptx, &[])
            .unwrap_err();
        assert!(
            matches!(&err, Error::Compile { log, .. } if log.contains("non-void entry")),
            "{err}"
        );
        // An option libNVVM does not know: its log names it.
        let err = Program::from_nvvm(
            [module("scale.ll", SCALE)],
            sm90().with_extra(vec!["-no-such-option".into()]),
        )
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
        assert!(
            matches!(&err, Error::Compile { log, .. } if log.contains("-no-such-option")),
            "{err}"
        );
        // A module of lazy modules alone has nothing to compile.
        let err = Program::from_nvvm([module("scale.ll", SCALE).with_lazy(true)], sm90())
            .compile(CodeType::Ptx, &[])
            .unwrap_err();
        assert!(matches!(err, Error::Compile { .. }), "{err}");
    });
}

#[test]
fn libdevice_is_found_beside_libnvvm_and_added_lazily() {
    with_each_libnvvm("libdevice_is_found_beside_libnvvm_and_added_lazily", |_| {
        let libdevice = NvvmModule::libdevice().unwrap();
        assert!(libdevice.is_lazy());
        assert!(
            libdevice.name().ends_with("libdevice.10.bc"),
            "{libdevice:?}"
        );
        // LLVM bitcode (its wrapper or raw magic).
        assert!(
            libdevice.ir().starts_with(b"BC\xc0\xde")
                || libdevice.ir().starts_with(b"\xde\xc0\x17\x0b"),
            "{libdevice:?}"
        );
        let with = Program::from_nvvm([module("sine.ll", SINE), libdevice], sm90())
            .compile(CodeType::Ptx, &[])
            .unwrap();
        let with = text(&with);
        // sinf is in the kernel itself: no call to libdevice is left, and only what the
        // kernel uses came in (no other libdevice function).
        assert!(with.contains(".entry sine("), "{with}");
        assert!(!with.contains("__nv_sinf"), "{with}");
        assert!(!with.contains("__nv_cosf"), "{with}");
        // Without it, the function stays an external call that nothing defines.
        let without = Program::from_nvvm([module("sine.ll", SINE)], sm90())
            .compile(CodeType::Ptx, &[])
            .unwrap();
        let without = text(&without);
        assert!(without.contains(".extern .func"), "{without}");
        assert!(without.contains("__nv_sinf"), "{without}");
    });
}

/// libNVVM as discovery finds it in this process, or a printed reason why there is none.
fn nvvm_here() -> bool {
    match nvvm_info() {
        Ok(_) => true,
        Err(e) => {
            common::not_run("nvvm", &format!("no libNVVM: {e}"));
            false
        }
    }
}

/// A cubin compiled here, or `None` with a printed reason where only the driver's linker
/// (which needs a driver) could link it.
fn cubin_or_skip(
    result: cuda_core::Result<cuda_core::ObjectCode>,
) -> Option<cuda_core::ObjectCode> {
    match result {
        Ok(cubin) => Some(cubin),
        Err(e @ (Error::DriverNotFound { .. } | Error::Driver { .. })) => {
            common::not_run(
                "nvjitlink",
                &format!("no nvJitLink, and the driver's linker cannot run here: {e}"),
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_ptx_program_gives_its_ptx_back_and_links_to_a_cubin() {
    let program = Program::from_ptx(PTX, sm90()).with_name("kernels.ptx");
    assert_eq!(program.kind(), ProgramKind::Ptx);
    assert_eq!(program.source(), PTX);
    // PTX to PTX is the PTX, as given (with the NUL the driver reads it by).
    let ptx = program.compile(CodeType::Ptx, &[]).unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    assert_eq!(text(&ptx), PTX);
    // Nothing is compiled, so no architecture (and no device) is needed for it.
    let as_given = Program::from_ptx(PTX, ProgramOptions::default())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    assert_eq!(as_given.code(), ptx.code());
    let err = program.compile(CodeType::LtoIr, &[]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "target", reason } if reason.contains("LTO-IR")),
        "{err}"
    );
    let Some(cubin) = cubin_or_skip(program.compile(CodeType::Cubin, &[])) else {
        return;
    };
    assert_eq!(cubin.code_type(), CodeType::Cubin);
    assert_eq!(cubin.name(), "kernels.ptx");
    assert!(cubin.code().starts_with(b"\x7fELF"));
    assert!(has_kernel(cubin.code(), "scale"), "scale in the cubin");
    assert!(has_kernel(cubin.code(), "shift"), "shift in the cubin");
    assert!(!has_kernel(cubin.code(), "sine"));
    // Link options reach nvJitLink: ptxas's verbose report lands in the log.
    // (nvJitLink's own cache off: it can answer a link like an earlier one without the log.)
    let verbose = Program::from_ptx(
        PTX,
        sm90()
            .with_ptxas_options(vec!["-v".into()])
            .with_no_cache(true),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    assert!(
        verbose.compile_log().contains("scale"),
        "{}",
        verbose.compile_log()
    );
    // PTX the assembler refuses is a link error with its log.
    let broken = PTX.replace("mul.f32 %f2, %f2, %f1;", "mul.f32 %f2, %f2, %nothing;");
    let err = Program::from_ptx(broken, sm90())
        .compile(CodeType::Cubin, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("nothing")),
        "{err}"
    );
}

#[test]
fn an_nvvm_ir_program_compiles_to_a_cubin_through_the_linker() {
    if !nvvm_here() {
        return;
    }
    let program = Program::from_nvvm(
        [
            module("scale.ll", SCALE),
            module("sine.ll", SINE),
            NvvmModule::libdevice().unwrap(),
        ],
        sm90(),
    );
    let Some(cubin) = cubin_or_skip(program.compile(CodeType::Cubin, &[])) else {
        return;
    };
    assert_eq!(cubin.code_type(), CodeType::Cubin);
    assert!(cubin.code().starts_with(b"\x7fELF"));
    assert!(has_kernel(cubin.code(), "scale") && has_kernel(cubin.code(), "sine"));
    // The link step's options are taken for a cubin, and refused for PTX.
    let verbose = sm90()
        .with_ptxas_options(vec!["-v".into()])
        .with_no_cache(true);
    let linked = Program::from_nvvm([module("scale.ll", SCALE)], verbose.clone())
        .compile(CodeType::Cubin, &[])
        .unwrap();
    assert!(
        linked.compile_log().contains("scale"),
        "{}",
        linked.compile_log()
    );
    let err = Program::from_nvvm([module("scale.ll", SCALE)], verbose)
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason } if reason.contains("ptxas_options") && reason.contains("link step")),
        "{err}"
    );
}

#[test]
fn compile_cached_hits_the_second_time_and_keys_cover_every_input() {
    if !nvvm_here() {
        return;
    }
    let cache = InMemoryProgramCache::new(64 << 20);
    let nvvm = Program::from_nvvm([module("scale.ll", SCALE)], sm90());
    let ptx = Program::from_ptx(PTX, sm90());
    let mut targets = vec![
        (&nvvm, CodeType::Ptx),
        (&nvvm, CodeType::LtoIr),
        (&ptx, CodeType::Ptx),
    ];
    if cubin_or_skip(ptx.compile(CodeType::Cubin, &[])).is_some() {
        targets.extend([(&nvvm, CodeType::Cubin), (&ptx, CodeType::Cubin)]);
    }
    for (program, target) in targets {
        let key = program.cache_key(target, &[]).unwrap();
        assert!(cache.get(&key).is_none(), "{:?} {target:?}", program.kind());
        let cold = program.compile_cached(&cache, target, &[]).unwrap();
        assert!(cache.get(&key).is_some(), "stored under its key");
        let warm = program.compile_cached(&cache, target, &[]).unwrap();
        // The in-memory cache hands back the object it holds: a hit, not a second compile.
        assert_eq!(cold.code().as_ptr(), warm.code().as_ptr());
        assert_eq!(warm.code_type(), target);
    }
    // Whatever changes the output changes the key.
    let key = |p: &Program, t| p.cache_key(t, &[]).unwrap();
    let base = key(&nvvm, CodeType::Ptx);
    let variants = [
        Program::from_nvvm([module("scale.ll", &SCALE.replace("fmul", "fadd"))], sm90()),
        Program::from_nvvm([module("other.ll", SCALE)], sm90()),
        Program::from_nvvm(
            [module("scale.ll", SCALE), NvvmModule::libdevice().unwrap()],
            sm90(),
        ),
        Program::from_nvvm([module("scale.ll", SCALE)], sm90().with_arch("80")),
        Program::from_nvvm([module("scale.ll", SCALE)], sm90().with_ftz(true)),
        Program::from_nvvm(
            [module("scale.ll", SCALE)],
            sm90().with_extra(vec!["-opt=0".into()]),
        ),
        Program::from_nvvm([module("scale.ll", SCALE)], sm90()).with_name("renamed"),
        Program::from_ptx(SCALE, sm90()),
        Program::new(SCALE, sm90()),
    ];
    for variant in &variants {
        if variant.kind() == ProgramKind::Cxx {
            // A C++ key needs NVRTC's identity; where there is none, nothing to compare.
            if let Ok(other) = variant.cache_key(CodeType::Ptx, &[]) {
                assert_ne!(other, base);
            }
            continue;
        }
        assert_ne!(key(variant, CodeType::Ptx), base, "{variant:?}");
    }
    assert_ne!(key(&nvvm, CodeType::LtoIr), base);
    let lazy = Program::from_nvvm([module("scale.ll", SCALE).with_lazy(true)], sm90());
    assert_ne!(key(&lazy, CodeType::Ptx), base);
    assert_eq!(
        key(&nvvm.clone(), CodeType::Ptx),
        base,
        "the same inputs, the same key"
    );
}

#[test]
fn options_a_kind_has_no_use_for_are_refused_by_name() {
    let refused = |program: Program, target, field: &str| {
        let err = program.compile(target, &[]).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "options", reason } if reason.contains(field)),
            "{field}: {err}"
        );
    };
    let nvvm = |options| Program::from_nvvm([module("scale.ll", SCALE)], options);
    refused(nvvm(sm90().with_std("c++17")), CodeType::Ptx, "std");
    // Before the architecture is looked for: no device is needed to be told.
    refused(
        nvvm(ProgramOptions::default().with_std("c++17")),
        CodeType::Ptx,
        "std",
    );
    refused(
        nvvm(sm90().with_relocatable_device_code(true)),
        CodeType::Cubin,
        "relocatable_device_code",
    );
    refused(
        nvvm(sm90().with_line_info(true)),
        CodeType::LtoIr,
        "line_info",
    );
    refused(
        Program::from_ptx(PTX, sm90().with_fast_math(true)),
        CodeType::Cubin,
        "fast_math",
    );
    refused(
        Program::from_ptx(PTX, sm90().with_defines(vec![("N".into(), None)])),
        CodeType::Cubin,
        "defines",
    );
    for program in [nvvm(sm90()), Program::from_ptx(PTX, sm90())] {
        let err = program.compile(CodeType::Ptx, &["scale"]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    name: "name_expressions",
                    ..
                }
            ),
            "{err}"
        );
        let err = program.compile(CodeType::Fatbin, &[]).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { name: "target", .. }),
            "{err}"
        );
    }
    let err = Program::from_nvvm(Vec::new(), sm90())
        .compile(CodeType::Ptx, &[])
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "modules",
                ..
            }
        ),
        "{err}"
    );
    // Checking syntax is NVRTC's.
    let err = Program::from_ptx(PTX, sm90()).check_syntax().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains("PTX")),
        "{err}"
    );
}

#[test]
fn the_override_variable_names_the_libnvvm_used() {
    let test = common::test_name(
        module_path!(),
        "the_override_variable_names_the_libnvvm_used",
    );
    if common::child_role(&test).is_some() {
        let path = std::env::var("CUDA_CORE_NVVM_PATH").unwrap();
        let err = nvvm_info().unwrap_err();
        assert!(matches!(err, Error::NvvmNotFound { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&path) && text.contains("CUDA_CORE_NVVM_PATH"),
            "{text}"
        );
        // Nothing else is tried, and a compile says the same.
        assert!(!text.contains("nvidia/cu13/lib"), "{text}");
        let err = Program::from_nvvm([module("scale.ll", SCALE)], sm90())
            .compile(CodeType::Ptx, &[])
            .unwrap_err();
        assert!(matches!(err, Error::NvvmNotFound { .. }), "{err}");
        println!("override done");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = common::child_command(&test, "child");
    child.env("CUDA_CORE_NVVM_PATH", dir.path().join("libnvvm.so.4"));
    common::wait_child(child.spawn().unwrap(), &test, "override done");
}

/// `n` values of `-2..2`, and the device's results of a kernel over them.
fn run_on_gpu(
    code: &cuda_core::ObjectCode,
    kernel: &str,
    extra: Option<f32>,
) -> (Vec<f32>, Vec<f32>) {
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    let n = 1000u32;
    let input: Vec<f32> = (0..n).map(|i| i as f32 / 250.0 - 2.0).collect();
    let mut x = memory.allocate(4 * n as usize, &stream).unwrap();
    x.copy_from_host(&input, &stream).unwrap();
    let kernel = code.get_kernel(kernel).unwrap();
    let config = cuda_core::LaunchConfig::for_elements(n.into(), 128);
    // SAFETY: the kernel writes x[0..n], which holds n floats, and takes (x, [a,] n).
    unsafe {
        match extra {
            Some(a) => launch(&stream, &config, &kernel, &[&x, &a, &n]),
            None => launch(&stream, &config, &kernel, &[&x, &n]),
        }
    }
    .unwrap();
    (input, x.to_vec::<f32>(&stream).unwrap())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_ptx_program_loads_and_runs_as_a_cubin_and_as_ptx() {
    let arch = common::device().arch().unwrap();
    let ptx = PTX.replace(".target sm_90", &format!(".target sm_{arch}"));
    let program = Program::from_ptx(ptx, ProgramOptions::default().with_arch(arch));
    let cubin = program.compile(CodeType::Cubin, &[]).unwrap();
    let mut names = cubin.kernel_names().unwrap();
    names.sort();
    assert_eq!(names, ["scale", "shift"]);
    let (input, got) = run_on_gpu(&cubin, "scale", Some(3.0));
    let expected: Vec<f32> = input.iter().map(|v| v * 3.0).collect();
    assert_eq!(got, expected);
    let (input, got) = run_on_gpu(&cubin, "shift", Some(0.5));
    assert_eq!(got, input.iter().map(|v| v + 0.5).collect::<Vec<_>>());
    // The PTX itself, JIT-compiled by the driver at load.
    let jit = program.compile(CodeType::Ptx, &[]).unwrap();
    let (_, got) = run_on_gpu(&jit, "scale", Some(3.0));
    assert_eq!(got, expected);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_nvvm_ir_program_loads_and_runs() {
    let program = Program::from_nvvm(
        [
            module("scale.ll", SCALE),
            module("sine.ll", SINE),
            NvvmModule::libdevice().unwrap(),
        ],
        ProgramOptions::default().with_arch(common::device().arch().unwrap()),
    );
    let cubin = program.compile(CodeType::Cubin, &[]).unwrap();
    let mut names = cubin.kernel_names().unwrap();
    names.sort();
    assert_eq!(names, ["scale", "sine"]);
    let (input, got) = run_on_gpu(&cubin, "scale", Some(-1.5));
    assert_eq!(got, input.iter().map(|v| v * -1.5).collect::<Vec<_>>());
    let (input, got) = run_on_gpu(&cubin, "sine", None);
    for (x, y) in input.iter().zip(&got) {
        // libdevice's sinf is within 2 ulp; 1e-6 absolute over -2..2 is looser than that.
        assert!(
            (x.sin() - y).abs() <= 1e-6,
            "sin({x}) = {}, the GPU gave {y}",
            x.sin()
        );
    }
    // Not the identity: the values changed.
    assert!(input.iter().zip(&got).any(|(x, y)| x != y));
}

/// Set in the children of the test below, to the cache's directory.
const CACHE_DIR: &str = "CUDA_CORE_INPUTS_CACHE_DIR";

/// Whether this process has libNVVM mapped.
fn libnvvm_mapped() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .any(|line| line.contains("libnvvm"))
}

#[test]
fn a_file_cache_hit_in_a_new_process_needs_no_libnvvm_and_keys_name_it() {
    let test = common::test_name(
        module_path!(),
        "a_file_cache_hit_in_a_new_process_needs_no_libnvvm_and_keys_name_it",
    );
    if let Some(role) = common::child_role(&test) {
        let dir = std::env::var_os(CACHE_DIR).unwrap();
        let cache = cuda_core::cache::FileStreamProgramCache::new(dir, 64 << 20).unwrap();
        let program = Program::from_nvvm([module("scale.ll", SCALE)], sm90());
        let key = program.cache_key(CodeType::Ptx, &[]).unwrap();
        let code = program.compile_cached(&cache, CodeType::Ptx, &[]).unwrap();
        assert!(text(&code).contains(".entry scale("));
        // The first process compiles (and maps libNVVM); the second hits without it.
        assert_eq!(libnvvm_mapped(), role == "store", "{role}");
        println!("key={key} {role} done");
        return;
    }
    let mut keys = Vec::new();
    for major in [13, 12] {
        let Some(file) = wheel_nvvm(major) else {
            common::not_run(
                &format!("nvvm-{major}"),
                &format!("libNVVM {major} is not installed"),
            );
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        for role in ["store", "hit"] {
            let mut child = common::child_command(&test, role);
            child
                .env("CUDA_CORE_NVVM_PATH", &file)
                .env(CACHE_DIR, dir.path());
            let out = common::wait_child(child.spawn().unwrap(), &test, &format!("{role} done"));
            let key = out
                .lines()
                .find_map(|l| l.split_once("key=").map(|(_, rest)| rest))
                .and_then(|l| l.split(' ').next())
                .unwrap()
                .to_owned();
            keys.push((major, key));
        }
    }
    // The same key in both processes of a major; another libNVVM, another key.
    for pair in keys.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
    if keys.len() == 4 {
        assert_ne!(keys[0].1, keys[2].1);
    }
}
