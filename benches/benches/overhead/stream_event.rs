//! `stream_churn`, `event_churn`, `event_record`, `event_query` and `stream_sync_idle`.

use super::*;

pub(super) fn stream_event_cases<R: RawDriver>(
    c: &mut Criterion,
    d: &R,
    core: &Core,
    raw: &RawState,
    rc: &Rc,
) {
    Case::new("stream_churn")
        .variant("raw", |b| {
            b.iter(|| {
                let mut stream = null_mut();
                // SAFETY: a writable out-pointer, then the stream just made.
                unsafe {
                    check(
                        d.cuStreamCreate(&mut stream, STREAM_NON_BLOCKING),
                        "cuStreamCreate",
                    );
                    check(d.cuStreamDestroy(stream), "cuStreamDestroy");
                }
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_stream(StreamOptions::default()).unwrap()));
        })
        .variant("cudarc", |b| {
            b.iter(|| drop(rc.context.new_stream().unwrap()));
        })
        .run(c);

    Case::new("event_churn")
        .variant("raw", |b| b.iter(|| raw_event_create_destroy(d, false)))
        .variant("cuda-core", |b| {
            b.iter(|| drop(core.device.create_event(EventOptions::default()).unwrap()));
        })
        // `None` is cudarc's default: timing disabled.
        .variant("cudarc", |b| {
            b.iter(|| drop(rc.context.new_event(None).unwrap()));
        })
        .run(c);

    Case::new("event_record")
        .variant("raw", |b| {
            batched(
                b,
                || {
                    // SAFETY: an event and a stream of the current context, both alive.
                    let status = unsafe { d.cuEventRecord(raw.record, raw.stream) };
                    check(status, "cuEventRecord");
                },
                || raw_sync(d, raw.stream),
            );
        })
        .variant("cuda-core", |b| {
            batched(
                b,
                || core.stream.record(&core.record).unwrap(),
                || core.stream.sync().unwrap(),
            );
        })
        .variant("cudarc", |b| {
            batched(
                b,
                || rc.record.record(&rc.stream).unwrap(),
                || rc.stream.synchronize().unwrap(),
            );
        })
        .run(c);

    Case::new("event_query")
        .variant("raw", |b| {
            // SAFETY: an event recorded and completed in `raw_setup`.
            b.iter(|| black_box(unsafe { d.cuEventQuery(raw.done) } == SUCCESS));
        })
        .variant("cuda-core", |b| {
            b.iter(|| black_box(core.done.is_done().unwrap()));
        })
        .variant("cudarc", |b| {
            b.iter(|| black_box(rc.done.try_is_complete().unwrap()));
        })
        .run(c);

    Case::new("stream_sync_idle")
        .variant("raw", |b| b.iter(|| raw_sync(d, raw.stream)))
        .variant("cuda-core", |b| b.iter(|| core.stream.sync().unwrap()))
        .variant("cudarc", |b| b.iter(|| rc.stream.synchronize().unwrap()))
        .run(c);
}
