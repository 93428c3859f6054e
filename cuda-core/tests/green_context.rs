//! Green contexts: the device's SMs, splitting them, contexts and streams on each part.

use crate::common::{self, standin};

use cuda_core::{
    Allocate, Context, ContextOptions, Device, Error, EventOptions, SmGroupFlags, SmResource,
    SmSplitOptions, StreamOptions, WorkqueueSharing,
};

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_in_two_and_work_on_each_half_from_two_threads() {
    let _green = common::green_contexts();
    let device = common::device();
    let sms = device.resources().sm().unwrap();
    let total = sms.sm_count();
    assert_eq!(total, device.properties().multiprocessor_count().unwrap());
    // Halves rounded down to the co-scheduling alignment (8 on compute capability 9.0).
    let align = sms.coscheduled_alignment().unwrap_or(8).max(1);
    let half = total / 2 / align * align;
    let split = sms
        .split(SmSplitOptions::groups_of(half).with_groups(2))
        .unwrap();
    assert_eq!(split.groups.len(), 2);
    println!(
        "{total} SMs (min partition {:?}, alignment {:?}) -> groups {:?}, remainder {}",
        sms.min_partition_size(),
        sms.coscheduled_alignment(),
        split
            .groups
            .iter()
            .map(|g| g.sm_count())
            .collect::<Vec<_>>(),
        split.remainder.sm_count()
    );
    let used: u32 = split.groups.iter().map(|g| g.sm_count()).sum();
    assert_eq!(used + split.remainder.sm_count(), total);
    let handles: Vec<_> = split
        .groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| {
            std::thread::spawn(move || {
                let want = group.sm_count();
                assert!(want >= half);
                let context = device
                    .create_context(ContextOptions::default().with_resources(vec![group]))
                    .unwrap();
                assert!(context.is_green());
                assert_eq!(context.sm_count().unwrap(), want);
                assert_eq!(context.sm_resource().unwrap().sm_count(), want);
                let stream = context.create_stream(StreamOptions::default()).unwrap();
                assert_eq!(stream.context(), &context);
                let data = common::random_u32(i as u64 + 100, 1 << 20);
                let memory = device.memory_resource().unwrap();
                let mut a = memory.allocate(4 << 20, &stream).unwrap();
                let mut b = memory.allocate(4 << 20, &stream).unwrap();
                a.copy_from_host(&data, &stream).unwrap();
                a.copy_to(&mut b, &stream).unwrap();
                assert_eq!(b.to_vec::<u32>(&stream).unwrap(), data);
                context.sync().unwrap();
                want
            })
        })
        .collect();
    let counts: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(counts.len(), 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn impossible_splits_are_refused_with_the_numbers() {
    let _green = common::green_contexts();
    let device = common::device();
    let sms = device.resources().sm().unwrap();
    let total = sms.sm_count();
    let err = sms
        .split(SmSplitOptions::groups_of(total + 1).with_groups(1))
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { reason, .. } if reason.contains(&total.to_string())),
        "{err}"
    );
    let err = sms
        .split(SmSplitOptions::groups_of(total / 2 + 1).with_groups(2))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let err = sms.split(SmSplitOptions::groups_of(0)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "options.sm_count",
                ..
            }
        ),
        "{err}"
    );
    let err = device
        .create_context(ContextOptions::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "options.resources",
                ..
            }
        ),
        "{err}"
    );
    // As many groups as fit, when no count is given.
    let min = sms.min_partition_size().unwrap_or(8);
    let split = sms.split(SmSplitOptions::groups_of(min)).unwrap();
    assert!(split.groups.len() >= 2, "{}", split.groups.len());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_contexts_are_wrapped_without_being_released() {
    let _green = common::green_contexts();
    let device = common::device();
    let primary = device.primary_context().unwrap();
    // SAFETY: the primary context's own handle, which the process keeps retained.
    let again = unsafe { Context::from_raw(primary.as_raw()) }.unwrap();
    assert_eq!(again, primary);
    assert_eq!(again.device(), device);
    assert!(!again.is_green());
    drop(again);
    // Dropping it released nothing: the primary context still works (a wrapper that released
    // it would leave the process's one retain undone, and this stream without a context).
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    stream
        .record_new(EventOptions::default())
        .unwrap()
        .sync()
        .unwrap();

    let sms = device.resources().sm().unwrap();
    let split = sms
        .split(SmSplitOptions::groups_of(sms.min_partition_size().unwrap_or(8)).with_groups(1))
        .unwrap();
    let green = device
        .create_context(ContextOptions::default().with_resources(split.groups))
        .unwrap();
    // SAFETY: the green context's handle; `green` outlives the wrapper.
    let wrapped = unsafe { Context::from_raw(green.as_raw()) }.unwrap();
    assert_eq!(wrapped, green);
    // The device, asked of the driver; the SM count, read from the context's own resource.
    assert_eq!(wrapped.device(), device);
    assert_eq!(wrapped.sm_count().unwrap(), green.sm_count().unwrap());
    let event = wrapped.create_event(EventOptions::default()).unwrap();
    drop(wrapped);
    // Still alive after the wrapper: its streams run and its event records.
    let green_stream = green.create_stream(StreamOptions::default()).unwrap();
    green_stream.record(&event).unwrap();
    event.sync().unwrap();
    // A green context's stream, wrapped from its raw handle, is the green context's (catches
    // it refused, or taken as the primary context's, whose SMs are all the device's).
    // SAFETY: `green_stream` outlives the wrapper, and `green` both.
    let wrapped_stream =
        unsafe { cuda_core::Stream::from_raw(green_stream.as_raw(), device) }.unwrap();
    assert_eq!(wrapped_stream.context().as_raw(), green.as_raw());
    wrapped_stream.record(&event).unwrap();
    event.sync().unwrap();
    // SAFETY: a null handle, refused before any use.
    let err = unsafe { Context::from_raw(std::ptr::null_mut()) }.unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "handle", .. }),
        "{err}"
    );
}

/// The bytes of a raw `CUdevResource` (144 in both headers): its type first, its union at 96.
fn raw_resource(raw: *const std::ffi::c_void) -> (u32, [u32; 4]) {
    // SAFETY: `as_raw` points at a live resource of at least 144 bytes, aligned for u32.
    unsafe {
        let base = raw.cast::<u8>();
        let kind = base.cast::<u32>().read();
        let union = base.add(96).cast::<u32>();
        (kind, [0, 1, 2, 3].map(|i| union.add(i).read()))
    }
}

/// On the stand-in (132 SMs, groups rounded up to 8): the SMs, their flags and raw resource,
/// a split, a green context on it with its streams, and its destruction, under both ABIs.
#[test]
fn green_contexts_on_the_standin_under_both_abis() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "green_contexts_on_the_standin_under_both_abis",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi), ("STANDIN_SMS", "120")],
            || {
                let device = Device::new(0).unwrap();
                let sms = device.resources().sm().unwrap();
                // Catches a count read from the wrong field or a hard-coded one.
                assert_eq!(sms.sm_count(), 120);
                let thirteen = std::env::var("CUDA_CORE_DRIVER_ABI").unwrap() == "13";
                // Catches flags invented through the 12 ABI (its header has none), or lost
                // through the 13 one.
                assert_eq!(sms.flags(), thirteen.then(SmGroupFlags::empty));
                assert_eq!(sms.coscheduled_alignment(), thirteen.then_some(8));
                // Catches a raw pointer to something other than the driver's resource.
                let (kind, fields) = raw_resource(sms.as_raw());
                assert_eq!((kind, fields[0]), (1, 120));

                let split = sms
                    .split(SmSplitOptions::groups_of(12).with_groups(2))
                    .unwrap();
                // 12 rounds up to 16: catches the driver's sizes replaced by the request.
                let counts: Vec<u32> = split.groups.iter().map(SmResource::sm_count).collect();
                assert_eq!(counts, [16, 16]);
                assert_eq!(split.remainder.sm_count(), 120 - 32);
                assert_eq!(raw_resource(split.groups[1].as_raw()).1[0], 16);

                standin::clear_log();
                let context = device
                    .create_context(ContextOptions::default().with_resources(split.groups))
                    .unwrap();
                let made = standin::last_call("cuGreenCtxCreate");
                // Catches groups left out of the description, and a context without its
                // default stream flag (CU_GREEN_CTX_DEFAULT_STREAM).
                assert!(made.contains("device=0 sm=32 flags=1"), "{made}");
                assert!(!made.contains("wq="), "{made}");
                assert!(context.is_green());
                assert_eq!(context.sm_count().unwrap(), 32);
                let stream = context.create_stream(StreamOptions::default()).unwrap();
                // Catches a stream made by cuStreamCreate in the current context instead.
                assert!(standin::last_call("cuGreenCtxStreamCreate").contains("in gc"));
                assert!(
                    standin::calls("cuStreamCreate").is_empty(),
                    "{}",
                    standin::log()
                );
                drop(context);
                // Catches a green context destroyed under its stream.
                assert!(standin::calls("cuGreenCtxDestroy").is_empty());
                drop(stream);
                // Catches a leak, and a double destroy.
                assert_eq!(
                    standin::calls("cuGreenCtxDestroy").len(),
                    1,
                    "{}",
                    standin::log()
                );
            },
        );
    }
}

/// Work queues on a 13.1 stand-in: the device's configuration read, changed and given to a
/// green context; a second context sharing the first's work queue keeps the first alive; bad
/// configurations refused before the driver.
#[test]
fn work_queues_are_configured_shared_and_kept_alive() {
    standin::run(
        module_path!(),
        "work_queues_are_configured_shared_and_kept_alive",
        &[],
        &[
            ("CUDA_CORE_DRIVER_ABI", "13"),
            ("STANDIN_VERSION", "13010"),
            ("STANDIN_WQ_LIMIT", "24"),
        ],
        || {
            let device = Device::new(0).unwrap();
            let resources = device.resources();
            let config = resources.workqueue_config().unwrap();
            // Catches a limit or scope not read from the driver's resource.
            assert_eq!(config.concurrency_limit(), 24);
            assert_eq!(config.sharing(), WorkqueueSharing::DeviceContext);
            assert_eq!(config.device(), device);
            let split = resources
                .sm()
                .unwrap()
                .split(SmSplitOptions::groups_of(16).with_groups(2))
                .unwrap();

            // Refused before the driver: a zero limit, another device's work queue.
            standin::clear_log();
            let zero = device.create_context(
                ContextOptions::default()
                    .with_resources(vec![split.groups[0].clone()])
                    .with_workqueue(config.with_concurrency_limit(0)),
            );
            assert!(
                matches!(
                    zero,
                    Err(Error::InvalidArgument {
                        name: "options.workqueue",
                        ..
                    })
                ),
                "{zero:?}"
            );
            let other = Device::new(1)
                .unwrap()
                .resources()
                .workqueue_config()
                .unwrap();
            let crossed = device.create_context(
                ContextOptions::default()
                    .with_resources(vec![split.groups[0].clone()])
                    .with_workqueue(other),
            );
            assert!(
                matches!(
                    crossed,
                    Err(Error::InvalidArgument {
                        name: "options.workqueue",
                        ..
                    })
                ),
                "{crossed:?}"
            );
            // Catches checks made after the driver was asked.
            assert!(
                standin::calls("cuGreenCtxCreate").is_empty(),
                "{}",
                standin::log()
            );

            let a = device
                .create_context(
                    ContextOptions::default()
                        .with_resources(vec![split.groups[0].clone()])
                        .with_workqueue(
                            config
                                .with_concurrency_limit(4)
                                .with_sharing(WorkqueueSharing::GreenContextBalanced),
                        ),
                )
                .unwrap();
            let made = standin::last_call("cuGreenCtxCreate");
            // Catches the configuration left out, or its fields swapped or not changed.
            assert!(made.contains("sm=16 flags=1 wq=4/1"), "{made}");
            let gc_a = made.split_whitespace().nth(1).unwrap().to_owned();

            let queue = a.workqueue().unwrap();
            // Catches the SM resource type asked for instead of the work queue.
            assert!(
                standin::last_call("cuCtxGetDevResource").ends_with(&format!("{gc_a} type=10000")),
                "{}",
                standin::log()
            );
            assert_eq!(queue.device(), device);
            assert_eq!(queue.context(), &a);
            let number = raw_resource(queue.as_raw()).1[0];
            let b = device
                .create_context(
                    ContextOptions::default()
                        .with_resources(vec![split.groups[1].clone()])
                        .with_workqueue(queue),
                )
                .unwrap();
            // Catches the shared work queue not passed on (the context would get its own).
            assert!(
                standin::last_call("cuGreenCtxCreate").ends_with(&format!("wq=w{number}")),
                "{}",
                standin::log()
            );
            // The second context reads back the first's work queue.
            assert_eq!(raw_resource(b.workqueue().unwrap().as_raw()).1[0], number);

            // Catches the first context destroyed while the second submits through its
            // work queue.
            drop(a);
            assert!(
                standin::calls("cuGreenCtxDestroy").is_empty(),
                "{}",
                standin::log()
            );
            drop(b);
            let destroyed = standin::calls("cuGreenCtxDestroy");
            assert_eq!(destroyed.len(), 2, "{}", standin::log());
            // The sharer goes first, then the context it shares.
            assert_eq!(destroyed[1], format!("cuGreenCtxDestroy {gc_a}"));
        },
    );
}

/// Where work queues are missing (the 12 ABI, a 13.0 driver) they are `NotSupported`, named,
/// with no driver call the driver would refuse without a cause.
#[test]
fn work_queues_are_not_supported_through_the_12_abi_or_before_13_1() {
    for (abi, version) in [("12", "13010"), ("13", "13000")] {
        standin::run(
            module_path!(),
            "work_queues_are_not_supported_through_the_12_abi_or_before_13_1",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi), ("STANDIN_VERSION", version)],
            || {
                let device = Device::new(0).unwrap();
                standin::clear_log();
                let err = device.resources().workqueue_config().unwrap_err();
                let Error::NotSupported { function, abi, .. } = &err else {
                    panic!("expected NotSupported, got {err:?}");
                };
                // Catches a refusal that does not say what is missing where.
                let twelve = *abi == 12;
                assert!(function.contains("work-queue"), "{err}");
                assert!(
                    function.contains(if twelve { "12 ABI" } else { "13.1" }),
                    "{err}"
                );
                let context = device.primary_context().unwrap();
                assert!(matches!(
                    context.workqueue(),
                    Err(Error::NotSupported { .. })
                ));
                // Catches the unknown resource type sent to a driver that would refuse it as
                // an invalid value.
                assert!(!standin::log().contains("type=1000"), "{}", standin::log());
            },
        );
    }
}

/// On the GPU: the SMs' flags and raw resource, and, on a 13.1+ driver through the 13 ABI,
/// two green contexts, one with a balanced work queue of its own and one sharing it, each
/// running copies on its stream.
#[test]
#[ignore = "needs a CUDA GPU"]
fn work_queues_and_raw_sm_resources_on_the_gpu() {
    let _green = common::green_contexts();
    let device = common::device();
    let resources = device.resources();
    let sms = resources.sm().unwrap();
    let (kind, fields) = raw_resource(sms.as_raw());
    // Catches a raw pointer to other bytes than the driver's resource.
    assert_eq!((kind, fields[0]), (1, sms.sm_count()));
    let info = cuda_core::info::driver_info().unwrap();
    let thirteen = info.abi.major() == 13;
    // The device's whole SM set is no flagged group.
    assert_eq!(sms.flags(), thirteen.then(SmGroupFlags::empty));

    let config = match resources.workqueue_config() {
        Ok(config) => config,
        Err(Error::NotSupported { function, .. }) => {
            common::not_run(
                "driver-13.1",
                &format!(
                    "work queues: driver {} through the {} ABI: {function}",
                    info.version,
                    info.abi.major()
                ),
            );
            return;
        }
        Err(other) => panic!("{other}"),
    };
    println!(
        "work-queue configuration: limit {}, {:?}",
        config.concurrency_limit(),
        config.sharing()
    );
    assert!(config.concurrency_limit() >= 1);
    let align = sms.coscheduled_alignment().unwrap_or(8).max(1);
    let split = sms
        .split(SmSplitOptions::groups_of(align * 2).with_groups(2))
        .unwrap();
    let a = device
        .create_context(
            ContextOptions::default()
                .with_resources(vec![split.groups[0].clone()])
                .with_workqueue(
                    config
                        .with_concurrency_limit(2)
                        .with_sharing(WorkqueueSharing::GreenContextBalanced),
                ),
        )
        .unwrap();
    let b = device
        .create_context(
            ContextOptions::default()
                .with_resources(vec![split.groups[1].clone()])
                .with_workqueue(a.workqueue().unwrap()),
        )
        .unwrap();
    drop(a.clone());
    for (i, context) in [a, b].into_iter().enumerate() {
        let stream = context.create_stream(StreamOptions::default()).unwrap();
        let data = common::random_u32(i as u64 + 7, 1 << 16);
        let memory = device.memory_resource().unwrap();
        let mut x = memory.allocate(data.len() * 4, &stream).unwrap();
        let mut y = memory.allocate(data.len() * 4, &stream).unwrap();
        x.copy_from_host(&data, &stream).unwrap();
        x.copy_to(&mut y, &stream).unwrap();
        // Catches a context whose work queue takes no work.
        assert_eq!(y.to_vec::<u32>(&stream).unwrap(), data);
    }
}
