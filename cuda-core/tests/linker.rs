//! The linker's typed options, PTX output and logs. The nvJitLink tests need no GPU: CI runs
//! them against the real nvJitLink 13 (found by discovery, after NVRTC 13) and again with
//! NVRTC 12 (`CUDA_CORE_NVRTC_PATH`, `CUDA_CORE_EXPECT_NVRTC_MAJOR=12`), which makes nvJitLink
//! 12 the one loaded. Each option's effect is read where a CPU can see it: the linked PTX,
//! ptxas's report in the info log, the cubin's section names. The GPU tests read what only a
//! device shows (a kernel's register count) and run the driver's linker. The driver's JIT
//! options at load time (`ObjectCode::with_jit_options`) are checked against the stand-in
//! driver (the option codes it is given, the logs it writes) and on a GPU.

use crate::common;

use cuda_core::{
    nvjitlink_version, nvrtc_version, CodeType, Error, KernelAttribute, Linker, LinkerBackend,
    LinkerOptions, ObjectCode, Program, ProgramOptions,
};

/// Whether NVRTC and nvJitLink are usable here; fails the test when CI requires them. Checks
/// that nvJitLink is of NVRTC's major (whose LTO-IR it links).
fn nvjitlink() -> bool {
    let (nvrtc, linker) = match (nvrtc_version(), nvjitlink_version()) {
        (Ok(nvrtc), Ok(linker)) => (nvrtc, linker),
        (nvrtc, linker) => {
            common::not_run(
                "nvjitlink",
                &format!(
                    "no NVRTC or nvJitLink: {:?}, {:?}",
                    nvrtc.err(),
                    linker.err()
                ),
            );
            return false;
        }
    };
    if let Ok(expected) = std::env::var("CUDA_CORE_EXPECT_NVRTC_MAJOR") {
        assert_eq!(linker.0.to_string(), expected, "nvJitLink {linker:?}");
    }
    assert_eq!(
        linker.0, nvrtc.0 as u32,
        "nvJitLink {linker:?} with NVRTC {nvrtc:?}"
    );
    true
}

/// Relocatable device code for sm_90.
fn rdc() -> ProgramOptions {
    ProgramOptions::default()
        .with_arch("90".to_owned())
        .with_relocatable_device_code(true)
}

fn ltoir(source: &str, name: &str) -> ObjectCode {
    Program::new(source, rdc())
        .with_name(name)
        .compile(CodeType::LtoIr, &[])
        .unwrap()
}

/// nvJitLink for sm_90.
fn jit() -> LinkerOptions {
    LinkerOptions::default()
        .with_arch("90")
        .with_backend(LinkerBackend::NvJitLink)
}

const LIB: &str = "__device__ float twice(float x) { return 2.0f * x; }";

const MAIN: &str = r#"
__device__ float twice(float x);
__device__ int used_var;
__device__ int unused_var;
extern "C" __global__ void apply(float* x) {
    x[0] = twice(x[0]) / x[1] + sqrtf(x[2]);
    x[3] = x[3] * x[4] + x[5];
    used_var = 1;
}
extern "C" __global__ void other(float* x) { x[0] = 1.0f; unused_var = 2; }
"#;

/// The two LTO-IR inputs: `twice` in one, its callers in the other.
fn inputs() -> [ObjectCode; 2] {
    [ltoir(LIB, "lib.cu"), ltoir(MAIN, "main.cu")]
}

/// The PTX of linking [`inputs`] with `options`.
fn linked_ptx(options: LinkerOptions) -> String {
    let linked = Linker::new(&inputs(), options)
        .link_to(CodeType::Ptx)
        .unwrap();
    assert_eq!(linked.code_type(), CodeType::Ptx);
    String::from_utf8_lossy(linked.code()).into_owned()
}

/// The names of a cubin's ELF sections.
fn section_names(elf: &[u8]) -> Vec<String> {
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap()) as usize;
    assert!(elf.starts_with(b"\x7fELF\x02"), "a 64-bit ELF");
    let (table, entry, count, strings) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let names_at = u64_at(table + strings * entry + 0x18);
    (0..count)
        .map(|i| {
            let start = names_at + u32_at(table + i * entry);
            let end = start + elf[start..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&elf[start..end]).into_owned()
        })
        .collect()
}

/// The register counts ptxas reports in a verbose log (`Used N registers`).
fn registers_reported(log: &str) -> Vec<u32> {
    log.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("Used ")?;
            let (count, rest) = rest.split_once(' ')?;
            rest.starts_with("registers")
                .then(|| count.parse().ok())
                .flatten()
        })
        .collect()
}

/// A kernel that keeps 40 values live across many operations: ptxas gives it far more than 32
/// registers unless capped.
const HEAVY: &str = r#"
extern "C" __global__ void heavy(const float* in, float* out) {
    float v[40];
#pragma unroll
    for (int i = 0; i < 40; ++i) v[i] = in[threadIdx.x * 40 + i];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 40; ++i)
#pragma unroll
        for (int j = 0; j < 40; ++j) s += v[i] * v[(i * 7 + j) % 40] / (v[j] + 1.0f);
    out[threadIdx.x] = s;
}
"#;

#[test]
fn ltoir_links_to_ptx_with_calls_inlined_unless_optimisation_is_off() {
    if !nvjitlink() {
        return;
    }
    let linked = Linker::new(&inputs(), jit())
        .link_to(CodeType::Ptx)
        .unwrap();
    assert_eq!(linked.code_type(), CodeType::Ptx);
    assert_eq!(
        linked.code().last(),
        Some(&0),
        "PTX keeps a NUL for the driver"
    );
    let ptx = String::from_utf8_lossy(linked.code());
    assert!(
        ptx.contains(".target sm_90")
            && ptx.contains(".entry apply")
            && ptx.contains(".entry other"),
        "{ptx}"
    );
    // Linked across the two inputs: `twice` is inlined into `apply`, no function remains.
    assert!(!ptx.contains(".func"), "{ptx}");
    // -O0 keeps the calls.
    let unoptimised = linked_ptx(jit().with_optimization_level(0));
    assert!(unoptimised.contains(".func"), "{unoptimised}");
    assert_eq!(
        linked_ptx(jit().with_optimization_level(3)),
        ptx,
        "-O3 is the default"
    );
    // The cubin of the same link is an ELF.
    let cubin = Linker::new(&inputs(), jit()).link().unwrap();
    assert_eq!(cubin.code_type(), CodeType::Cubin);
    assert!(cubin.code().starts_with(b"\x7fELF"));
}

#[test]
fn ptx_output_refuses_inputs_that_are_not_ltoir_and_other_targets() {
    if !nvjitlink() {
        return;
    }
    let ptx = Program::new(LIB, rdc())
        .compile(CodeType::Ptx, &[])
        .unwrap();
    let [lib, main] = inputs();
    let err = Linker::new(&[main.clone(), ptx.clone()], jit())
        .link_to(CodeType::Ptx)
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "inputs", reason }
            if reason.contains("LTO-IR") && reason.contains("program.cu is PTX")),
        "{err}"
    );
    // The same inputs link to a cubin; not to LTO-IR, for the same reason as PTX.
    Linker::new(&[main.clone(), ptx.clone()], jit())
        .link()
        .unwrap();
    if links_in_steps() {
        let err = Linker::new(&[main.clone(), ptx], jit())
            .link_to(CodeType::LtoIr)
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "inputs", reason }
                if reason.starts_with("linking to LTO-IR") && reason.contains("program.cu is PTX")),
            "{err}"
        );
    }
    for target in [CodeType::Fatbin, CodeType::Library] {
        let err = Linker::new(&[lib.clone(), main.clone()], jit())
            .link_to(target)
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "target", .. }),
            "{err}"
        );
    }
}

/// Whether nvJitLink links into LTO-IR and relocatable cubins (newer than 13.1: 13.5 does,
/// which is asserted); where it does not (12.x, 13.0), the refusal of both is checked here,
/// naming the version (bugs caught: the option passed on to nvJitLink 12's code 1 with no word
/// of why, or to 13.0's relocatable link that drops what the later link needs).
fn links_in_steps() -> bool {
    let version = nvjitlink_version().unwrap();
    let err = match Linker::new(&inputs(), jit()).link_to(CodeType::LtoIr) {
        Ok(_) => return true,
        Err(err) => err,
    };
    assert!(version < (13, 5), "nvJitLink {version:?} refused: {err}");
    assert!(
        matches!(&err, Error::InvalidArgument { name: "target", reason }
            if reason.contains("LTO-IR") && reason.contains("links in steps")
                && reason.contains(&format!("{}.{}", version.0, version.1))),
        "{err}"
    );
    let err = Linker::new(&inputs(), jit().with_relocatable(true))
        .link()
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason }
            if reason.starts_with("relocatable") && reason.contains("links in steps")),
        "{err}"
    );
    common::not_run(
        "nvjitlink-steps",
        &format!(
            "nvJitLink {version:?} links neither into LTO-IR nor relocatably (newer than 13.1 do)"
        ),
    );
    false
}

/// The LTO-IR container's first bytes, as NVRTC writes it and nvJitLink reads it.
const LTOIR_MAGIC: &[u8] = b"\xedCN\x7f";

/// Two LTO-IR inputs linked into one LTO-IR hold both: that one alone links again, to PTX
/// with `twice` inlined and both kernels (bugs caught: the cubin or PTX handed back as
/// LTO-IR, an input handed back unlinked, `twice` dropped, the other kernel dropped).
#[test]
fn ltoir_inputs_link_into_one_ltoir_that_links_again() {
    if !nvjitlink() || !links_in_steps() {
        return;
    }
    let [lib, main] = inputs();
    let linked = Linker::new(&[lib.clone(), main.clone()], jit())
        .link_to(CodeType::LtoIr)
        .unwrap();
    assert_eq!(linked.code_type(), CodeType::LtoIr);
    assert!(
        linked.code().starts_with(LTOIR_MAGIC),
        "an LTO-IR container"
    );
    assert!(linked.code() != lib.code() && linked.code() != main.code());
    let again = Linker::new(std::slice::from_ref(&linked), jit());
    let ptx = again.link_to(CodeType::Ptx).unwrap();
    let ptx = String::from_utf8_lossy(ptx.code());
    assert!(
        ptx.contains(".entry apply") && ptx.contains(".entry other"),
        "{ptx}"
    );
    assert!(!ptx.contains(".func"), "twice is in it, inlined: {ptx}");
    assert!(again.link().unwrap().code().starts_with(b"\x7fELF"));
    // `main` alone leaves `twice` external: the linked LTO-IR is what brought it.
    let alone = Linker::new(std::slice::from_ref(&main), jit())
        .link_to(CodeType::Ptx)
        .unwrap();
    assert!(String::from_utf8_lossy(alone.code()).contains(".extern .func"));
}

/// A relocatable link of the library keeps `twice` for a later link with its caller, where a
/// plain link of it alone drops it (nothing calls it), and that later link then fails naming
/// it (bugs caught: `-r` not passed, the relocatable cubin not taken as an input).
#[test]
fn a_relocatable_link_keeps_code_for_a_later_link() {
    if !nvjitlink() || !links_in_steps() {
        return;
    }
    let [lib, main] = inputs();
    let relocatable = Linker::new(std::slice::from_ref(&lib), jit().with_relocatable(true))
        .link()
        .unwrap();
    assert_eq!(relocatable.code_type(), CodeType::Cubin);
    assert!(relocatable.code().starts_with(b"\x7fELF"));
    let linked = Linker::new(&[relocatable, main.clone()], jit())
        .link()
        .unwrap();
    assert!(linked.code().starts_with(b"\x7fELF"));
    let plain = Linker::new(std::slice::from_ref(&lib), jit())
        .link()
        .unwrap();
    let err = Linker::new(&[plain, main], jit()).link().unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("twice")),
        "{err}"
    );
}

/// A link to PTX leaves a function no input defines as an external declaration (the PTX is
/// not final code), where a link to a cubin fails naming it.
#[test]
fn a_missing_function_stays_external_in_ptx_and_fails_a_cubin() {
    if !nvjitlink() {
        return;
    }
    let main = ltoir(MAIN, "main.cu");
    let linker = Linker::new(std::slice::from_ref(&main), jit());
    let ptx = linker.link_to(CodeType::Ptx).unwrap();
    let ptx = String::from_utf8_lossy(ptx.code());
    assert!(
        ptx.lines()
            .any(|l| l.contains(".extern .func") && l.contains("twice")),
        "{ptx}"
    );
    let err = linker.link().unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("twice")),
        "{err}"
    );
}

/// A failed link to PTX is [`Error::Link`] with nvJitLink's error log: here LTO-IR for sm_90
/// linked for sm_80.
#[test]
fn a_failed_link_to_ptx_is_a_link_error_with_nvjitlinks_log() {
    if !nvjitlink() {
        return;
    }
    let err = Linker::new(&inputs(), jit().with_arch("80"))
        .link_to(CodeType::Ptx)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Link { log }
            if log.contains("nvJitLinkAddData") && log.contains("LTOIR arch newer than target arch")),
        "{err}"
    );
}

#[test]
fn kernels_used_drops_the_other_kernels() {
    if !nvjitlink() {
        return;
    }
    let ptx = linked_ptx(jit().with_kernels_used(vec!["other".into()]));
    assert!(
        ptx.contains(".entry other") && !ptx.contains(".entry apply"),
        "{ptx}"
    );
    let both = linked_ptx(jit().with_kernels_used(vec!["other".into(), "apply".into()]));
    assert!(
        both.contains(".entry other") && both.contains(".entry apply"),
        "{both}"
    );
}

#[test]
fn unused_variables_go_except_those_named_used() {
    if !nvjitlink() {
        return;
    }
    let global = |name: &str| format!(".global .align 4 .u32 {name};");
    let all = linked_ptx(jit());
    assert!(
        all.contains(&global("used_var")) && all.contains(&global("unused_var")),
        "{all}"
    );
    let optimised = linked_ptx(jit().with_optimize_unused_variables(true));
    assert!(!optimised.contains(&global("unused_var")), "{optimised}");
    let kept = linked_ptx(
        jit()
            .with_optimize_unused_variables(true)
            .with_variables_used(vec!["unused_var".into()]),
    );
    assert!(kept.contains(&global("unused_var")), "{kept}");
}

#[test]
fn the_floating_point_options_change_the_linked_code() {
    if !nvjitlink() {
        return;
    }
    let base = linked_ptx(jit());
    assert!(
        base.contains("div.rn.f32") && base.contains("fma.rn.f32") && !base.contains(".ftz"),
        "{base}"
    );
    let ftz = linked_ptx(jit().with_ftz(true));
    assert!(ftz.contains("div.rn.ftz.f32"), "{ftz}");
    assert_eq!(linked_ptx(jit().with_ftz(false)), base);
    let approximate = linked_ptx(jit().with_prec_div(false));
    assert!(
        approximate.contains("div.full.f32") && !approximate.contains("div.rn.f32"),
        "{approximate}"
    );
    let unfused = linked_ptx(jit().with_fma(false));
    assert!(
        !unfused.contains("fma.rn.f32") && unfused.contains("mul.rn.f32"),
        "{unfused}"
    );
    // prec_sqrt changes nothing here (NVRTC lowered `sqrtf` already), but is taken in
    // nvJitLink's own spelling: `-prec-sqrt=true` is refused.
    linked_ptx(jit().with_prec_sqrt(false));
    let err = Linker::new(&inputs(), jit().with_extra(vec!["-prec-sqrt=true".into()]))
        .link_to(CodeType::Ptx)
        .unwrap_err();
    assert!(matches!(err, Error::Link { .. }), "{err}");
}

#[test]
fn a_jump_table_density_of_zero_makes_a_switch_a_jump_table() {
    if !nvjitlink() {
        return;
    }
    let source = r#"
extern "C" __global__ void pick(const int* in, int* out) {
    int r;
    switch (in[threadIdx.x]) {
        case 0: r = in[10]; break; case 1: r = in[21] * 3; break; case 2: r = in[32] + 7; break;
        case 3: r = in[43] ^ 5; break; case 4: r = in[54] - 9; break; case 5: r = in[65] * 11; break;
        case 6: r = in[76] | 12; break; case 7: r = in[87] + 13; break; default: r = -1;
    }
    out[threadIdx.x] = r;
}"#;
    let input = ltoir(source, "switch.cu");
    let ptx = |options: LinkerOptions| {
        let code = Linker::new(std::slice::from_ref(&input), options)
            .link_to(CodeType::Ptx)
            .unwrap();
        String::from_utf8_lossy(code.code()).into_owned()
    };
    assert!(!ptx(jit()).contains("brx.idx"));
    assert!(ptx(jit().with_jump_table_density(0)).contains("brx.idx"));
    assert!(!ptx(jit().with_jump_table_density(101)).contains("brx.idx"));
}

#[test]
fn max_registers_caps_what_ptxas_reports_in_the_verbose_log() {
    if !nvjitlink() {
        return;
    }
    let heavy = ltoir(HEAVY, "heavy.cu");
    // With nvJitLink's own cache off: on the GPU machine nvJitLink (12.9 and 13.0) answered a
    // link like an earlier one from it, with none of ptxas's report in the log.
    let link = |options: LinkerOptions| {
        Linker::new(
            std::slice::from_ref(&heavy),
            options.with_verbose(true).with_no_cache(true),
        )
        .link()
        .unwrap()
    };
    let free = link(jit());
    let used = registers_reported(free.compile_log());
    assert!(
        used.len() == 1 && used[0] > 64,
        "{used:?} in {}",
        free.compile_log()
    );
    let capped = link(jit().with_max_registers(32));
    let used = registers_reported(capped.compile_log());
    assert!(
        used.len() == 1 && used[0] <= 32,
        "{used:?} in {}",
        capped.compile_log()
    );
    // Without verbose, no report; ptxas's own -v gives it back.
    let quiet = Linker::new(std::slice::from_ref(&heavy), jit())
        .link()
        .unwrap();
    assert!(
        registers_reported(quiet.compile_log()).is_empty(),
        "{}",
        quiet.compile_log()
    );
    let ptxas = Linker::new(
        std::slice::from_ref(&heavy),
        jit()
            .with_ptxas_options(vec!["-v".into()])
            .with_no_cache(true),
    )
    .link()
    .unwrap();
    assert_eq!(
        registers_reported(ptxas.compile_log()).len(),
        1,
        "{}",
        ptxas.compile_log()
    );
}

#[test]
fn time_reports_the_link_phases_in_the_info_log() {
    if !nvjitlink() {
        return;
    }
    let timed = |target| {
        Linker::new(&inputs(), jit().with_time(true))
            .link_to(target)
            .unwrap()
            .compile_log()
            .to_owned()
    };
    for target in [CodeType::Cubin, CodeType::Ptx] {
        let log = timed(target);
        assert!(
            log.lines().any(|l| l.starts_with("nvJitLinkComplete time")),
            "{target:?}: {log}"
        );
        let untimed = Linker::new(&inputs(), jit()).link_to(target).unwrap();
        assert!(
            !untimed.compile_log().contains("time"),
            "{}",
            untimed.compile_log()
        );
    }
}

#[test]
fn line_info_and_debug_add_their_sections_to_the_cubin() {
    if !nvjitlink() {
        return;
    }
    let sections = |options: LinkerOptions| {
        section_names(Linker::new(&inputs(), options).link().unwrap().code())
    };
    let has = |names: &[String], name: &str| names.iter().any(|n| n == name);
    let plain = sections(jit());
    assert!(has(&plain, ".text.apply"), "{plain:?}");
    assert!(!has(&plain, ".nv_debug_line_sass"), "{plain:?}");
    assert!(!has(&plain, ".nv_debug_info_reg_sass"), "{plain:?}");
    let lines = sections(jit().with_line_info(true));
    assert!(has(&lines, ".nv_debug_line_sass"), "{lines:?}");
    assert!(!has(&lines, ".nv_debug_info_reg_sass"), "{lines:?}");
    let debug = sections(jit().with_debug(true));
    assert!(has(&debug, ".nv_debug_info_reg_sass"), "{debug:?}");
}

/// The options whose effect is not visible in the output here are at least taken by nvJitLink
/// (a misspelled option is refused, as the control shows).
#[test]
fn the_remaining_options_are_taken() {
    if !nvjitlink() {
        return;
    }
    let err = Linker::new(&inputs(), jit().with_extra(vec!["-no-such-option".into()]))
        .link()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("nvJitLinkCreate") && log.contains("-no-such-option")),
        "{err}"
    );
    for options in [
        jit().with_split_compile(2),
        jit().with_split_compile_extended(2),
        jit().with_no_cache(true),
        jit().with_link_time_optimization(true),
        jit()
            .with_optimization_level(0)
            .with_debug(true)
            .with_line_info(true),
    ] {
        Linker::new(&inputs(), options.clone())
            .link()
            .unwrap_or_else(|e| panic!("{options:?}: {e}"));
    }
    // Refused before nvJitLink, which would give no reason.
    let err = Linker::new(&inputs(), jit().with_optimization_level(2))
        .link()
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason } if reason.contains("-O0 or -O3")),
        "{err}"
    );
}

/// The driver's linker cannot make PTX nor take nvJitLink's own options: both are refused
/// before any driver call (this runs without a driver).
#[test]
fn the_driver_backend_refuses_ptx_and_nvjitlink_options_before_any_driver_call() {
    let driver = LinkerOptions::default()
        .with_arch("90")
        .with_backend(LinkerBackend::Driver);
    let ptx = ObjectCode::from_ptx(b".version 8.0\n.target sm_90\n.address_size 64\n".to_vec());
    let err = Linker::new(std::slice::from_ref(&ptx), driver.clone())
        .link_to(CodeType::Ptx)
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "target", reason }
            if reason.contains("only cubins") && reason.contains("nvJitLink")
                && reason.contains("LinkerBackend::Driver")),
        "{err}"
    );
    let err = Linker::new(std::slice::from_ref(&ptx), driver.clone())
        .link_to(CodeType::LtoIr)
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "target", reason }
            if reason.contains("only cubins") && reason.contains("LTO-IR")),
        "{err}"
    );
    let err = Linker::new(
        std::slice::from_ref(&ptx),
        driver.clone().with_relocatable(true),
    )
    .link()
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason }
            if reason.starts_with("relocatable is an nvJitLink option (-r)")),
        "{err}"
    );
    let err = Linker::new(
        std::slice::from_ref(&ptx),
        driver.clone().with_kernels_used(vec!["k".into()]),
    )
    .link()
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason }
            if reason.starts_with("kernels_used is an nvJitLink option (-kernels-used)")),
        "{err}"
    );
}

/// Auto falls back to the driver's linker when nvJitLink is missing, and then refuses what
/// only nvJitLink does, saying why nvJitLink was not used (a process of its own, with
/// `CUDA_CORE_NVJITLINK_PATH` naming no file, and no driver call).
#[test]
fn auto_without_nvjitlink_refuses_what_only_nvjitlink_does() {
    let test = common::test_name(
        module_path!(),
        "auto_without_nvjitlink_refuses_what_only_nvjitlink_does",
    );
    let marker = format!("{test}: done");
    if common::child_role(&test).is_none() {
        let mut child = common::child_command(&test, "no nvJitLink");
        child.env(
            "CUDA_CORE_NVJITLINK_PATH",
            "/nonexistent/libnvJitLink.so.13",
        );
        common::wait_child(child.spawn().unwrap(), &test, &marker);
        return;
    }
    assert!(nvjitlink_version().is_err());
    let auto = LinkerOptions::default().with_arch("90");
    let ptx = ObjectCode::from_ptx(b".version 8.0\n.target sm_90\n.address_size 64\n".to_vec());
    let err = Linker::new(std::slice::from_ref(&ptx), auto.clone())
        .link_to(CodeType::Ptx)
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "target", reason }
            if reason.contains("nvJitLink was not found") && reason.contains("/nonexistent")),
        "{err}"
    );
    let err = Linker::new(std::slice::from_ref(&ptx), auto.clone().with_ftz(true))
        .link()
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { name: "options", reason }
            if reason.starts_with("ftz is an nvJitLink option") && reason.contains("not found")),
        "{err}"
    );
    // Asking for nvJitLink itself says it is missing.
    let err = Linker::new(
        std::slice::from_ref(&ptx),
        auto.with_backend(LinkerBackend::NvJitLink),
    )
    .link()
    .unwrap_err();
    assert!(
        matches!(&err, Error::Link { log } if log.contains("nvJitLink was not found")),
        "{err}"
    );
    println!("{marker}");
}

/// Runs `kernel(in, out)` of `code` on 32 threads over `input` (40 floats a thread), giving
/// `out`.
fn run_heavy(code: &ObjectCode, input: &[f32]) -> Vec<f32> {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.memory_resource().unwrap();
    let mut x = pool.allocate(4 * input.len(), &stream).unwrap();
    x.copy_from_host(input, &stream).unwrap();
    let out = pool.allocate(4 * 32, &stream).unwrap();
    let kernel = code.get_kernel("heavy").unwrap();
    // SAFETY: 32 threads read 40 floats each of `x` and write one float each of `out`.
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
            &kernel,
            &[&x, &out],
        )
    }
    .unwrap();
    out.to_vec::<f32>(&stream).unwrap()
}

fn heavy_input() -> Vec<f32> {
    (0..32 * 40).map(|i| (i % 17) as f32 * 0.25).collect()
}

/// What `heavy` computes from [`heavy_input`], on the CPU in double precision.
fn heavy_expected() -> Vec<f32> {
    let input = heavy_input();
    (0..32)
        .map(|t| {
            let v: Vec<f64> = (0..40).map(|i| f64::from(input[t * 40 + i])).collect();
            let mut s = 0.0f64;
            for i in 0..40 {
                for j in 0..40 {
                    s += v[i] * v[(i * 7 + j) % 40] / (v[j] + 1.0);
                }
            }
            s as f32
        })
        .collect()
}

/// Asserts two runs of `heavy` agree with each other and with [`heavy_expected`], to float
/// rounding (ptxas may contract a multiply and an add differently at another optimisation
/// level or register budget).
fn assert_close(a: &[f32], b: &[f32]) {
    let expected = heavy_expected();
    assert!(expected.iter().all(|&e| e > 1.0), "{expected:?}");
    for run in [a, b] {
        assert_eq!(run.len(), expected.len());
        for (x, e) in run.iter().zip(&expected) {
            assert!(
                (x - e).abs() <= 1e-3 * e.abs(),
                "{run:?} against {expected:?}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_register_cap_through_nvjitlink_shows_in_the_kernels_register_count() {
    let device = common::device();
    device.set_current().unwrap();
    if !nvjitlink() {
        return;
    }
    let heavy = Program::new(
        HEAVY,
        ProgramOptions::default().with_relocatable_device_code(true),
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let link = |options: LinkerOptions| {
        Linker::new(std::slice::from_ref(&heavy), options)
            .link()
            .unwrap()
    };
    let free = link(LinkerOptions::default());
    let capped = link(LinkerOptions::default().with_max_registers(32));
    let regs = |code: &ObjectCode| {
        code.get_kernel("heavy")
            .unwrap()
            .attribute(device, KernelAttribute::NumRegs)
            .unwrap()
    };
    let (free_regs, capped_regs) = (regs(&free), regs(&capped));
    println!("heavy: {free_regs} registers free, {capped_regs} capped at 32");
    assert!(free_regs > 32, "{free_regs}");
    assert!(capped_regs <= 32, "{capped_regs}");
    // Spilled, the same results.
    assert_close(
        &run_heavy(&capped, &heavy_input()),
        &run_heavy(&free, &heavy_input()),
    );
}

/// `apply` of `code` on `[3, 2, 16, 2, 5, 1]`: `x[0] = twice(3) / 2 + sqrt(16)`, `x[3] = 2 * 5 + 1`.
fn run_apply(code: &ObjectCode) -> Vec<f32> {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    let device = common::device();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let mut x = device
        .memory_resource()
        .unwrap()
        .allocate(4 * 6, &stream)
        .unwrap();
    x.copy_from_host(&[3.0f32, 2.0, 16.0, 2.0, 5.0, 1.0], &stream)
        .unwrap();
    let kernel = code.get_kernel("apply").unwrap();
    // SAFETY: one thread reads and writes the six floats of `x` (and `used_var`).
    unsafe {
        launch(
            &stream,
            &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
            &kernel,
            &[&x],
        )
    }
    .unwrap();
    x.to_vec::<f32>(&stream).unwrap()
}

/// The library and its caller linked in steps (through one LTO-IR, and through a
/// relocatable cubin) run as the one-step link does, on the device's own architecture (bugs
/// caught: a step that loses `twice` or links stale code, a linked LTO-IR or relocatable
/// cubin the next link cannot read for this GPU).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_library_linked_in_steps_runs_as_one_link_does() {
    let device = common::device();
    device.set_current().unwrap();
    if !nvjitlink() || !links_in_steps() {
        return;
    }
    let rdc = ProgramOptions::default().with_relocatable_device_code(true);
    let compile = |source: &str| {
        Program::new(source, rdc.clone())
            .compile(CodeType::LtoIr, &[])
            .unwrap()
    };
    let (lib, main) = (compile(LIB), compile(MAIN));
    let options = LinkerOptions::default().with_backend(LinkerBackend::NvJitLink);
    let link = |inputs: &[ObjectCode], options: LinkerOptions, target| {
        Linker::new(inputs, options).link_to(target).unwrap()
    };
    let want = [7.0f32, 2.0, 16.0, 11.0, 5.0, 1.0];
    let one = link(
        &[lib.clone(), main.clone()],
        options.clone(),
        CodeType::Cubin,
    );
    assert_eq!(run_apply(&one), want);
    let ltoir = link(
        &[lib.clone(), main.clone()],
        options.clone(),
        CodeType::LtoIr,
    );
    assert_eq!(ltoir.code_type(), CodeType::LtoIr);
    let from_ltoir = link(&[ltoir], options.clone(), CodeType::Cubin);
    assert_eq!(run_apply(&from_ltoir), want);
    let relocatable = link(
        std::slice::from_ref(&lib),
        options.clone().with_relocatable(true),
        CodeType::Cubin,
    );
    let from_relocatable = link(&[relocatable, main], options, CodeType::Cubin);
    assert_eq!(run_apply(&from_relocatable), want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ptx_linked_by_nvjitlink_loads_and_runs() {
    let device = common::device();
    device.set_current().unwrap();
    if !nvjitlink() {
        return;
    }
    let heavy = Program::new(
        HEAVY,
        ProgramOptions::default().with_relocatable_device_code(true),
    )
    .compile(CodeType::LtoIr, &[])
    .unwrap();
    let linker = Linker::new(std::slice::from_ref(&heavy), LinkerOptions::default());
    let ptx = linker.link_to(CodeType::Ptx).unwrap();
    assert_eq!(ptx.code_type(), CodeType::Ptx);
    let cubin = linker.link().unwrap();
    assert_close(
        &run_heavy(&ptx, &heavy_input()),
        &run_heavy(&cubin, &heavy_input()),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_driver_backend_links_with_typed_options_and_runs() {
    let device = common::device();
    device.set_current().unwrap();
    // PTX with relocatable device code: the driver's linker compiles it with the link's options.
    let heavy = Program::new(
        HEAVY,
        ProgramOptions::default().with_relocatable_device_code(true),
    )
    .with_name("heavy.cu")
    .compile(CodeType::Ptx, &[])
    .unwrap();
    let driver = LinkerOptions::default().with_backend(LinkerBackend::Driver);
    let link = |options: LinkerOptions| {
        Linker::new(std::slice::from_ref(&heavy), options)
            .link()
            .unwrap()
    };
    let free = link(driver.clone());
    let capped = link(
        driver
            .clone()
            .with_max_registers(32)
            .with_optimization_level(3)
            .with_line_info(true)
            .with_verbose(true)
            .with_time(true),
    );
    let regs = |code: &ObjectCode| {
        code.get_kernel("heavy")
            .unwrap()
            .attribute(device, KernelAttribute::NumRegs)
            .unwrap()
    };
    let log = capped.compile_log();
    println!("driver link log:\n{log}");
    assert!(regs(&free) > 32, "{}", regs(&free));
    assert!(regs(&capped) <= 32, "{}", regs(&capped));
    // The wall time the driver reports, and the verbose report of the PTX compile.
    let wall: f32 = log
        .lines()
        .find_map(|l| l.strip_prefix("cuLinkComplete wall time: "))
        .and_then(|rest| rest.strip_suffix(" ms"))
        .expect("the wall time in the log")
        .parse()
        .unwrap();
    assert!(wall.is_finite() && wall >= 0.0, "{wall}");
    assert!(log.contains("registers"), "{log}");
    assert!(
        !free.compile_log().contains("wall time"),
        "{}",
        free.compile_log()
    );
    assert_close(
        &run_heavy(&capped, &heavy_input()),
        &run_heavy(&free, &heavy_input()),
    );
    // Debug information at -O0 links and runs too.
    let debug = link(driver.with_debug(true).with_optimization_level(0));
    assert_close(
        &run_heavy(&debug, &heavy_input()),
        &run_heavy(&free, &heavy_input()),
    );
}

// Static libraries, the device runtime, name expressions through a link, and the driver's JIT
// options at load time.

/// The device runtime, or `None` with the reason printed (failing where `cudadevrt` is
/// required).
fn device_runtime() -> Option<ObjectCode> {
    match ObjectCode::device_runtime() {
        Ok(devrt) => Some(devrt),
        Err(e) => {
            common::not_run("cudadevrt", &format!("no libcudadevrt.a: {e}"));
            None
        }
    }
}

/// A parent kernel that launches a child grid per block (dynamic parallelism): each child
/// thread writes `3 * i + block` to its element.
const DYNAMIC: &str = r#"
extern "C" __global__ void child(int* out, int offset) {
    int i = offset + threadIdx.x;
    out[i] = 3 * i + (offset / 32);
}
extern "C" __global__ void parent(int* out) {
    if (threadIdx.x == 0) child<<<1, 32>>>(out, blockIdx.x * 32);
}
"#;

/// What [`DYNAMIC`]'s parent on `blocks` blocks leaves in its buffer, on the CPU.
fn dynamic_expected(blocks: usize) -> Vec<i32> {
    (0..blocks * 32)
        .map(|i| 3 * i as i32 + (i / 32) as i32)
        .collect()
}

#[test]
fn a_static_library_is_an_archive_by_extension_and_is_never_loaded_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libthing.a");
    std::fs::write(&path, b"!<arch>\n").unwrap();
    let library = ObjectCode::from_file(&path, None).unwrap();
    // Catches `.a` not recognised (the call would be refused for want of a type).
    assert_eq!(library.code_type(), CodeType::Library);
    assert_eq!(CodeType::Library.extension(), "a");
    // Catches a library handed to cuLibraryLoadData, which would fail with a driver error or
    // read it as another image type: refused before any driver call, naming what to do.
    for err in [
        library.get_kernel("k").unwrap_err(),
        library.kernel_names().unwrap_err(),
        library.load().unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::InvalidArgument { name: "self", reason }
                if reason.contains("static library") && reason.contains("libthing.a")),
            "{err}"
        );
    }
    // Catches bytes that are not an archive reaching a linker (which reads what it is told is
    // an archive): refused by name, before any linker runs, with any backend.
    for backend in [LinkerBackend::Auto, LinkerBackend::Driver] {
        let err = Linker::new(
            &[ObjectCode::from_library(b"\x7fELF not an archive".to_vec())],
            LinkerOptions::default()
                .with_arch("90")
                .with_backend(backend),
        )
        .link()
        .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "inputs", reason }
                if reason.contains("<library bytes>") && reason.contains("ar archive")),
            "{err}"
        );
    }
}

#[test]
fn a_kernel_that_launches_kernels_links_with_the_device_runtime_and_not_without() {
    if !nvjitlink() {
        return;
    }
    let Some(devrt) = device_runtime() else {
        return;
    };
    assert_eq!(devrt.code_type(), CodeType::Library);
    assert!(devrt.code().starts_with(b"!<arch>\n"));
    println!("device runtime: {}", devrt.name());
    for target in [CodeType::LtoIr, CodeType::Cubin] {
        let code = Program::new(DYNAMIC, rdc())
            .with_name("dynamic.cu")
            .compile(target, &[])
            .unwrap();
        // Catches the option adding nothing (the child launch's runtime calls stay undefined)
        // and a library input passed as another input type.
        let linked = Linker::new(std::slice::from_ref(&code), jit().with_device_runtime(true))
            .link()
            .unwrap();
        assert!(linked.code().starts_with(b"\x7fELF"), "{target:?}");
        // Named after the input given, not the library added.
        assert_eq!(linked.name(), "linked(1)");
        // The library given as an input instead links the same way.
        Linker::new(&[code.clone(), devrt.clone()], jit())
            .link()
            .unwrap();
        // Without it the link fails: what proves the two links above used it.
        let err = Linker::new(std::slice::from_ref(&code), jit())
            .link()
            .unwrap_err();
        assert!(matches!(&err, Error::Link { .. }), "{target:?}: {err}");
    }
}

/// Two programs whose `k<int>` are different kernels (one in each namespace).
fn namespaced(space: &str) -> ObjectCode {
    let source = format!(
        "namespace {space} {{ template <typename T> __global__ void k(T* x) {{ x[0] = 1; }} }}
         using namespace {space};
         template <typename T> __global__ void scale_{space}(T* x, T a) {{ x[threadIdx.x] *= a; }}"
    );
    Program::new(source, rdc())
        .with_name(format!("{space}.cu"))
        .compile(
            CodeType::LtoIr,
            &["k<int>", &format!("scale_{space}<float>")],
        )
        .unwrap()
}

#[test]
fn a_linked_object_keeps_every_inputs_name_expressions_the_first_where_two_differ() {
    if !nvjitlink() {
        return;
    }
    let (one, two) = (namespaced("one"), namespaced("two"));
    let (k_one, k_two) = (
        one.lowered_name("k<int>").unwrap().to_owned(),
        two.lowered_name("k<int>").unwrap().to_owned(),
    );
    assert_ne!(k_one, k_two);
    for target in [CodeType::Cubin, CodeType::Ptx] {
        let linked = Linker::new(&[one.clone(), two.clone()], jit())
            .link_to(target)
            .unwrap();
        // Catches the table dropped by the link (get_kernel("scale_one<float>") would then
        // ask the driver for a kernel of that literal name).
        assert_eq!(
            linked.lowered_name("scale_one<float>"),
            one.lowered_name("scale_one<float>")
        );
        assert_eq!(
            linked.lowered_name("scale_two<float>"),
            two.lowered_name("scale_two<float>")
        );
        // Catches the last input's winning a conflict, or the expression listed twice.
        assert_eq!(linked.lowered_name("k<int>"), Some(k_one.as_str()));
        let expressions: Vec<&str> = linked
            .name_expressions()
            .iter()
            .map(|(e, _)| e.as_str())
            .collect();
        assert_eq!(
            expressions,
            ["k<int>", "scale_one<float>", "scale_two<float>"],
            "{target:?}"
        );
        // The lowered names are the linked code's symbols.
        if target == CodeType::Ptx {
            let ptx = String::from_utf8_lossy(linked.code());
            for (_, lowered) in linked.name_expressions() {
                assert!(ptx.contains(&format!(".entry {lowered}")), "{lowered}");
            }
        }
    }
    // In the other order, the other's.
    let swapped = Linker::new(&[two, one], jit()).link().unwrap();
    assert_eq!(swapped.lowered_name("k<int>"), Some(k_two.as_str()));
}

#[test]
fn jit_options_reach_culibraryloaddata_with_both_logs() {
    common::standin::run(
        module_path!(),
        "jit_options_reach_culibraryloaddata_with_both_logs",
        &[],
        &[],
        || {
            use crate::common::standin;
            let ptx = ObjectCode::from_ptx(".version 8.0\n.target sm_90\n");
            // Catches the log buffers not passed: 4 options (the two buffers and their sizes).
            assert_eq!(ptx.load().unwrap(), "stand-in JIT: 4 options");
            assert!(standin::last_call("cuLibraryLoadData").contains("jit_options=4 codes=3,4,5,6"));
            let options = cuda_core::JitOptions::default()
                .with_max_registers(32)
                .with_optimization_level(2)
                .with_verbose(true);
            let capped = ptx.with_jit_options(options.clone()).unwrap();
            assert_eq!(capped.jit_options(), &options);
            // Catches a log read before any load.
            assert_eq!(capped.jit_log(), None);
            capped.get_kernel("k1").unwrap();
            // Catches the options left out of the load: MAX_REGISTERS 0, OPTIMIZATION_LEVEL 7,
            // LOG_VERBOSE 12 after the logs.
            let call = standin::last_call("cuLibraryLoadData");
            assert!(
                call.contains("jit_options=7 codes=3,4,5,6,7,0,12"),
                "{call}"
            );
            // Catches the info log lost after the load.
            assert_eq!(capped.jit_log(), Some("stand-in JIT: 7 options"));
            // A second load loads nothing more.
            standin::clear_log();
            capped.load().unwrap();
            assert!(standin::calls("cuLibraryLoadData").is_empty());
            // Catches a level the driver does not take reaching it.
            let err = ptx
                .with_jit_options(cuda_core::JitOptions::default().with_optimization_level(5))
                .unwrap_err();
            assert!(
                matches!(
                    &err,
                    Error::InvalidArgument {
                        name: "options",
                        ..
                    }
                ),
                "{err}"
            );
        },
    );
}

#[test]
fn a_failed_jit_is_a_compile_error_with_the_jits_error_log() {
    common::standin::run(
        module_path!(),
        "a_failed_jit_is_a_compile_error_with_the_jits_error_log",
        &[],
        &[("STANDIN_JIT_FAIL", "1")],
        || {
            let ptx = ObjectCode::from_ptx(".version 8.0\n.target sm_90\n");
            let err = ptx.get_kernel("k1").unwrap_err();
            // Catches the error log dropped (the user would see only INVALID_PTX).
            assert!(
                matches!(&err, Error::Compile { program, log }
                    if program == "<ptx bytes>"
                        && log.contains("cuLibraryLoadData failed")
                        && log.contains("(218)")
                        && log.contains("stand-in JIT: ptxas fatal error")),
                "{err}"
            );
            assert_eq!(ptx.jit_log(), None);
        },
    );
}

#[test]
fn ptx_the_driver_takes_with_an_error_log_is_refused_at_load() {
    // The 580 driver takes bad PTX at cuLibraryLoadData (CUDA_SUCCESS) and writes the JIT's
    // complaint to the error log; the library lists no kernel and refuses each asked for
    // (CUDA_ERROR_INVALID_PTX). The stand-in does the same with STANDIN_JIT_FAIL=2.
    common::standin::run(
        module_path!(),
        "ptx_the_driver_takes_with_an_error_log_is_refused_at_load",
        &[],
        &[("STANDIN_JIT_FAIL", "2")],
        || {
            use crate::common::standin;
            let ptx = ObjectCode::from_ptx(".version 8.0\n.target sm_90\n")
                .with_jit_options(cuda_core::JitOptions::default().with_verbose(true))
                .unwrap();
            let err = ptx.load().unwrap_err();
            // Bug caught: the load returned Ok, and the JIT's complaint was never reported.
            assert!(
                matches!(&err, Error::Compile { program, log }
                    if program == "<ptx bytes>"
                        && log.contains("stand-in JIT: ptxas fatal error")),
                "{err}"
            );
            assert_eq!(ptx.jit_log(), None);
            // Bug caught: the refused library kept loaded (leaked).
            assert_eq!(
                standin::calls("cuLibraryUnload").len(),
                1,
                "{}",
                standin::log()
            );
            // Refused, it stays unloaded: asked again, the same refusal.
            assert!(matches!(ptx.load(), Err(Error::Compile { .. })));
            assert!(ptx.get_kernel("k4").is_err());
        },
    );
}
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_kernel_launching_kernels_runs_after_a_link_with_the_device_runtime() {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    let device = common::device();
    device.set_current().unwrap();
    if !nvjitlink() {
        return;
    }
    let Some(_) = device_runtime() else {
        return;
    };
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.memory_resource().unwrap();
    let blocks = 8;
    let rdc = ProgramOptions::default().with_relocatable_device_code(true);
    for (target, backend) in [
        (CodeType::LtoIr, LinkerBackend::Auto),
        (CodeType::Cubin, LinkerBackend::Auto),
        (CodeType::Cubin, LinkerBackend::Driver),
    ] {
        // The three calls: compile, link with the device runtime, take the kernel.
        let code = Program::new(DYNAMIC, rdc.clone())
            .compile(target, &[])
            .unwrap();
        let linked = Linker::new(
            &[code],
            LinkerOptions::default()
                .with_device_runtime(true)
                .with_backend(backend),
        )
        .link()
        .unwrap();
        let parent = linked.get_kernel("parent").unwrap();
        let mut out = pool.allocate(4 * 32 * blocks, &stream).unwrap();
        out.fill(0xffff_ffffu32, &stream).unwrap();
        // SAFETY: each of the `blocks` children writes its 32 ints of `out`.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::new([blocks as u32, 1, 1], [32, 1, 1]),
                &parent,
                &[&out],
            )
        }
        .unwrap();
        // Catches children that did not run (the fill's -1 stays) or ran with other
        // arguments.
        assert_eq!(
            out.to_vec::<i32>(&stream).unwrap(),
            dynamic_expected(blocks),
            "{target:?} {backend:?}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_template_kernel_is_found_by_its_name_expression_after_a_link() {
    use cuda_core::{launch, Allocate, LaunchConfig, StreamOptions};
    let device = common::device();
    device.set_current().unwrap();
    if !nvjitlink() {
        return;
    }
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let pool = device.memory_resource().unwrap();
    let rdc = ProgramOptions::default().with_relocatable_device_code(true);
    let source = "template <typename T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }";
    for (target, backend) in [
        (CodeType::LtoIr, LinkerBackend::Auto),
        (CodeType::Ptx, LinkerBackend::Driver),
    ] {
        let code = Program::new(source, rdc.clone())
            .compile(target, &["scale<float>"])
            .unwrap();
        let linked = Linker::new(&[code], LinkerOptions::default().with_backend(backend))
            .link()
            .unwrap();
        // Catches the expression lost by the link: the driver has no kernel of that name.
        let kernel = linked.get_kernel("scale<float>").unwrap();
        let mut x = pool.allocate(4 * 32, &stream).unwrap();
        let input: Vec<f32> = (0..32).map(|i| i as f32).collect();
        x.copy_from_host(&input, &stream).unwrap();
        // SAFETY: 32 threads scale the 32 floats of `x`.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::new([1, 1, 1], [32, 1, 1]),
                &kernel,
                &[&x, &2.5f32],
            )
        }
        .unwrap();
        let expected: Vec<f32> = input.iter().map(|v| v * 2.5).collect();
        assert_eq!(x.to_vec::<f32>(&stream).unwrap(), expected, "{backend:?}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ptx_loaded_with_a_register_cap_uses_at_most_that_many_and_logs_the_jit() {
    let device = common::device();
    device.set_current().unwrap();
    let Ok(compiled) = Program::new(HEAVY, ProgramOptions::default()).compile(CodeType::Ptx, &[])
    else {
        common::not_run("nvrtc", "no NVRTC to make the PTX");
        return;
    };
    // PTX of this run alone (a comment naming the process and the time): the driver keeps
    // the JIT's output in its compute cache, keyed by the PTX, and a load it finds there
    // compiles nothing and logs nothing. On one machine a second run of this test then failed
    // for an empty log (an H100); unique PTX always goes through the JIT.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mut text = compiled.code().to_vec();
    while text.last() == Some(&0) {
        text.pop();
    }
    text.extend_from_slice(format!("\n// run {} {stamp}\n", std::process::id()).as_bytes());
    let ptx = ObjectCode::from_ptx(text);
    let regs = |code: &ObjectCode| {
        code.get_kernel("heavy")
            .unwrap()
            .attribute(device, KernelAttribute::NumRegs)
            .unwrap()
    };
    let free = ptx
        .with_jit_options(cuda_core::JitOptions::default())
        .unwrap();
    let capped = ptx
        .with_jit_options(
            cuda_core::JitOptions::default()
                .with_max_registers(32)
                .with_verbose(true),
        )
        .unwrap();
    let (free_regs, capped_regs) = (regs(&free), regs(&capped));
    let log = capped.jit_log().unwrap();
    println!("heavy: {free_regs} registers free, {capped_regs} capped; JIT log:\n{log}");
    // Catches the cap not passed to cuLibraryLoadData (the kernel would keep its count).
    assert!(free_regs > 32, "{free_regs}");
    assert!(capped_regs <= 32, "{capped_regs}");
    // Catches the info log not read back: with LOG_VERBOSE the JIT reports the registers.
    // On the H200's 13.0 driver it does so through the 13 ABI; through the 12 ABI the same
    // load (the cap taken, as checked above) wrote no info log.
    let abi = cuda_core::info::driver_info().unwrap().abi;
    if abi == cuda_core::info::Abi::Cuda13 {
        assert!(log.contains("registers"), "{log}");
    } else {
        println!("the JIT info log through the {abi} ABI: {log:?}");
    }
    assert_close(
        &run_heavy(&capped, &heavy_input()),
        &run_heavy(&free, &heavy_input()),
    );
    // PTX the JIT refuses: see broken_ptx_is_refused_at_load_with_the_jits_complaint.
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn broken_ptx_is_refused_at_load_with_the_jits_complaint() {
    let device = common::device();
    device.set_current().unwrap();
    let abi = cuda_core::info::driver_info().unwrap().abi;
    // PTX of this run alone, so that the driver's compute cache answers nothing for it.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let ptx = |entry: &str| {
        ObjectCode::from_ptx(format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n// run {} {stamp}\n{entry}\n",
            std::process::id()
        ))
    };
    let verbose = cuda_core::JitOptions::default().with_verbose(true);
    for options in [verbose.clone(), cuda_core::JitOptions::default()] {
        let broken = ptx(".visible .entry broken() { this is not ptx; }")
            .with_jit_options(options.clone())
            .unwrap();
        // Bug caught: the 580 driver answers CUDA_SUCCESS at load for this PTX, writing the
        // JIT's complaint to the error log only (and refusing the kernel when it is asked
        // for), so the load returned Ok and the log `load` promises never said what was
        // wrong.
        let err = broken.load().unwrap_err();
        println!("{options:?}, through the {abi} ABI: {err}");
        if abi == cuda_core::info::Abi::Cuda13 {
            // Bug caught: the JIT's error log left out of the error (the driver's error alone
            // is its first line).
            let Error::Compile { log, .. } = &err else {
                panic!("not a compile error: {err}");
            };
            let complaint = log.lines().skip(1).collect::<Vec<_>>().join("\n");
            let lower = complaint.to_lowercase();
            assert!(
                lower.contains("error") || lower.contains("fatal"),
                "no complaint of the JIT in: {err}"
            );
        }
        // Refused, it stays unloaded: asked again, the same refusal.
        assert!(broken.load().is_err());
        assert!(broken.get_kernel("broken").is_err());
    }
    // Valid PTX with the same options still loads, its kernel there to take.
    let fine = ptx(".visible .entry fine() { ret; }")
        .with_jit_options(verbose)
        .unwrap();
    let log = fine.load().unwrap().to_owned();
    println!("the JIT info log through the {abi} ABI: {log:?}");
    if abi == cuda_core::info::Abi::Cuda13 {
        // Catches the info log lost where the JIT now runs as the kernels are taken.
        assert!(!log.is_empty(), "an empty info log");
    }
    assert_eq!(fine.get_kernel("fine").unwrap().name(), "fine");
}
