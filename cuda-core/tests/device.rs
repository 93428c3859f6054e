//! Devices: identity, attributes, the current device and bad ordinals.

use crate::common;
use crate::common::standin;

use cuda_core::{Device, Error};

#[test]
#[ignore = "needs a CUDA GPU"]
fn identity_and_attributes() {
    let device = common::device();
    assert!(Device::count().unwrap() >= 1);
    assert_eq!(Device::all().unwrap().len(), Device::count().unwrap());
    let name = device.name().unwrap();
    assert!(name.starts_with("NVIDIA"), "{name}");
    let uuid = device.uuid().unwrap();
    assert_ne!(uuid.0, [0; 16]);
    assert_eq!(uuid.to_string().len(), 36, "{uuid}");
    let bus = device.pci_bus_id().unwrap();
    assert_eq!(bus.matches(':').count(), 2, "{bus}");
    let (major, minor) = device.compute_capability().unwrap();
    let props = device.properties();
    assert_eq!(props.raw(75).unwrap(), major as i32);
    assert_eq!(device.arch().unwrap(), format!("{major}{minor}"));
    assert!(major >= 5, "{major}.{minor}");
    assert_eq!(props.warp_size().unwrap(), 32);
    assert!(props.max_threads_per_block().unwrap() >= 1024);
    let sms = props.multiprocessor_count().unwrap();
    assert!(sms > 0);
    // Cached: the same answer again (and no driver error on a second read).
    assert_eq!(props.multiprocessor_count().unwrap(), sms);
    assert!(props.unified_addressing().unwrap());
    let total = device.total_memory().unwrap();
    let (free, total_now) = device.memory_info().unwrap();
    assert_eq!(total, total_now);
    assert!(free <= total && total > 1 << 30, "{free} of {total}");
    assert!(device.can_access_peer(&device).unwrap());
    let (least, greatest) = device.stream_priority_range().unwrap();
    assert!(greatest <= least, "{greatest} {least}");
    println!(
        "{name}, sm_{major}{minor}, {sms} SMs, {} GiB, bus {bus}, uuid {uuid}, priorities {least}..{greatest}",
        total >> 30
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_missing_ordinal_is_named() {
    let count = Device::count().unwrap();
    for ordinal in [count, count + 7, usize::MAX] {
        let err = Device::new(ordinal).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { name: "ordinal", reason } if reason.contains(&ordinal.to_string())),
            "{err}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn current_follows_the_threads_context() {
    let device = common::device();
    std::thread::spawn(move || {
        // No context on a new thread: device 0.
        assert_eq!(Device::current().unwrap(), Device::new(0).unwrap());
        device.set_current().unwrap();
        assert_eq!(Device::current().unwrap(), device);
        device.sync().unwrap();
    })
    .join()
    .unwrap();
}

/// Every generated accessor asks the driver for its own attribute's code, as the bindings
/// (bindgen's reading of the header) number it: on eight stand-in devices, device `d` answers
/// bit `d` of the code asked for, so the eight answers spell the code out. A code edited by
/// hand in the generated file, or a generator that read a wrong value, fails here.
#[test]
fn every_attribute_accessor_asks_for_its_headers_code() {
    crate::common::standin::run(
        module_path!(),
        "every_attribute_accessor_asks_for_its_headers_code",
        &[],
        &[("STANDIN_DEVICES", "8"), ("STANDIN_ATTRIBUTE_BITS", "1")],
        || {
            let devices: Vec<Device> = (0..8).map(|d| Device::new(d).unwrap()).collect();
            let mut wrong = Vec::new();
            for (name, code, accessor) in crate::attribute_codes::ACCESSORS {
                let mut asked = 0u32;
                for (bit, device) in devices.iter().enumerate() {
                    let answer = accessor(&device.properties()).unwrap();
                    assert!(answer == 0 || answer == 1, "{name}: {answer}");
                    asked |= (answer as u32) << bit;
                }
                if asked != *code {
                    wrong.push(format!("{name}: asks for {asked}, the header says {code}"));
                }
            }
            assert!(wrong.is_empty(), "{wrong:#?}");
            assert_eq!(crate::attribute_codes::ACCESSORS.len(), 161);
        },
    );
}

/// A context's limits reach the driver in that context (made current around the call, the
/// caller's restored) and read back as the driver keeps them (rounded, here).
#[test]
fn context_limits_are_set_in_their_context_and_read_back() {
    standin::run(
        module_path!(),
        "context_limits_are_set_in_their_context_and_read_back",
        &[],
        &[],
        || {
            use cuda_core::ContextLimit;
            let context = Device::new(1).unwrap().primary_context().unwrap();
            Device::new(0).unwrap().set_current().unwrap();
            standin::clear_log();
            context.set_limit(ContextLimit::StackSize, 1000).unwrap();
            // The stand-in rounds the stack to 16 bytes: what the driver keeps is returned.
            assert_eq!(context.limit(ContextLimit::StackSize).unwrap(), 1008);
            context
                .set_limit(ContextLimit::MallocHeapSize, 64 << 20)
                .unwrap();
            assert_eq!(
                context.limit(ContextLimit::MallocHeapSize).unwrap(),
                64 << 20
            );
            let log = standin::log();
            // Catches a limit set in the caller's context (device 0's) rather than its own.
            assert!(log.contains("cuCtxSetLimit 0 1000 in c1"), "{log}");
            assert!(log.contains("cuCtxSetLimit 2 67108864 in c1"), "{log}");
            assert_eq!(
                Device::current().unwrap().ordinal(),
                0,
                "the caller's context is restored"
            );
        },
    );
}

/// On the GPU: the stack limit set, read back at least as large, and restored.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_stack_limit_is_set_and_read_back_on_the_gpu() {
    use cuda_core::ContextLimit;
    let context = common::device().primary_context().unwrap();
    let before = context.limit(ContextLimit::StackSize).unwrap();
    context.set_limit(ContextLimit::StackSize, 8192).unwrap();
    assert!(context.limit(ContextLimit::StackSize).unwrap() >= 8192);
    context.set_limit(ContextLimit::StackSize, before).unwrap();
    assert_eq!(context.limit(ContextLimit::StackSize).unwrap(), before);
}
