//! `preload_nvrtc`, in a process of its own so that it makes the first load. Needs NVRTC and
//! no GPU; without NVRTC it checks that the preload reports the same failure as a direct use.

use crate::common;
use cuda_core::{nvrtc_version, preload_nvrtc, CodeType, Program, ProgramOptions};

#[test]
fn preload_gives_the_version_every_later_use_sees() {
    common::alone(
        module_path!(),
        "preload_gives_the_version_every_later_use_sees",
        || {
            let preloaded = preload_nvrtc().join().expect("the preload thread panicked");
            let direct = nvrtc_version();
            match (&preloaded, &direct) {
                (Ok(version), Ok(again)) => {
                    assert_eq!(version, again);
                    if let Ok(expected) = std::env::var("CUDA_CORE_EXPECT_NVRTC_MAJOR") {
                        assert_eq!(version.0.to_string(), expected);
                    }
                    // NVRTC is usable after the preload: a compile works.
                    let options = ProgramOptions::default().with_arch("90".to_owned());
                    let code = Program::new(r#"extern "C" __global__ void k() {}"#, options)
                        .compile(CodeType::Ptx, &[])
                        .expect("compiling after the preload");
                    assert!(!code.code().is_empty());
                }
                (Err(e), Err(again)) => {
                    common::not_run("nvrtc", &format!("no NVRTC: {e}"));
                    assert_eq!(e.to_string(), again.to_string());
                    eprintln!("NVRTC not found: {e}");
                }
                _ => panic!("the preload gave {preloaded:?}, a direct use {direct:?}"),
            }
        },
    );
}
