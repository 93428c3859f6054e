//! Green contexts: the device's SMs, splitting them, contexts and streams on each part.

use crate::common;

use cuda_core::{
    Allocate, Context, ContextOptions, Error, EventOptions, SmSplitOptions, StreamOptions,
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
