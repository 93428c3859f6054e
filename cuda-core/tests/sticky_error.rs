//! A kernel that traps: the launch returns, the next call reports the driver's sticky error by
//! name, later calls keep reporting it, and dropping everything afterwards does not panic.
//! In a process of its own: the error poisons the process's context for good.

use crate::common;

use cuda_core::{
    launch, Allocate, CodeType, Error, EventOptions, LaunchConfig, Program, ProgramOptions,
    StreamOptions,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_trap_is_a_named_sticky_error_and_drop_survives_it() {
    common::alone(
        module_path!(),
        "a_trap_is_a_named_sticky_error_and_drop_survives_it",
        || {
            let device = common::device();
            device.set_current().unwrap();
            let code = Program::new(
                r#"extern "C" __global__ void boom() { __trap(); }"#,
                ProgramOptions::default(),
            )
            .compile(CodeType::Cubin, &[])
            .unwrap();
            let kernel = code.get_kernel("boom").unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let event = device.create_event(EventOptions::default()).unwrap();
            let buffer = device
                .memory_resource()
                .unwrap()
                .allocate(1024, &stream)
                .unwrap();
            // SAFETY: the kernel touches no memory.
            unsafe {
                launch(
                    &stream,
                    &LaunchConfig::new([1, 1, 1], [1, 1, 1]),
                    &kernel,
                    &[],
                )
            }
            .unwrap();
            let err = stream.sync().unwrap_err();
            let Error::Driver { name, call, .. } = &err else {
                panic!("{err}")
            };
            assert!(
                [
                    "CUDA_ERROR_LAUNCH_FAILED",
                    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                    "CUDA_ERROR_ASSERT"
                ]
                .contains(name),
                "{err}"
            );
            assert_eq!(*call, "cuStreamSynchronize");
            println!("after the trap: {err}");
            // Sticky: later calls fail with the same code.
            let again = stream
                .record(&event)
                .and_then(|()| event.sync())
                .unwrap_err();
            assert_eq!(again.driver_code(), err.driver_code(), "{again}");
            // Dropping everything now logs the failures and does not panic.
            drop(buffer);
            drop(event);
            drop(stream);
            drop(kernel);
            drop(code);
        },
    );
}
