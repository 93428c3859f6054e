//! Graphics interop (`cuda_core::interop`): memory and semaphores imported from file
//! descriptors, and OpenGL buffers and images mapped on streams, against the stand-in under
//! both ABIs: what each call sends the driver, the order of maps, frees and releases, and the
//! descriptors' ownership. On the GPU, the `vulkan_interop` and `gl_interop` examples share
//! memory and a semaphore with a real Vulkan driver and a buffer and texture with OpenGL, and
//! check the results against the CPU.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::common::standin;

use cuda_core::interop::{
    ExternalMemory, ExternalSemaphore, GlBuffer, GlImage, GlRegisterFlags, SemaphoreKind,
};
use cuda_core::texture::ArrayFormat;
use cuda_core::{CaptureMode, Context, ContextFlags, Device, Error, StreamOptions};

/// A file of `bytes` bytes, standing for another API's exported memory.
fn exported(bytes: u64) -> OwnedFd {
    let file = tempfile::tempfile().unwrap();
    file.set_len(bytes).unwrap();
    OwnedFd::from(file)
}

/// Whether descriptor `fd` is open in this process.
fn is_open(fd: i32) -> bool {
    std::fs::symlink_metadata(format!("/proc/self/fd/{fd}")).is_ok()
}

fn invalid_name<T: std::fmt::Debug>(result: cuda_core::Result<T>) -> &'static str {
    match result {
        Err(Error::InvalidArgument { name, .. }) => name,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// The index of the first log line containing `needle`, after line `from`.
fn line_of(log: &[&str], needle: &str, from: usize) -> usize {
    log.iter()
        .skip(from)
        .position(|l| l.contains(needle))
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("no {needle:?} after line {from} in:\n{}", log.join("\n")))
}

/// An import sends the descriptor, size and dedicated flag it was given; a buffer maps the
/// range asked at the address the driver gave; the driver owns the descriptor from the import
/// on; and the mapping is freed after the buffer's stream is synchronised, and the import
/// destroyed only after its last buffer.
#[test]
fn imported_memory_maps_buffers_and_is_released_after_the_last() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "imported_memory_maps_buffers_and_is_released_after_the_last",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                let fd = exported(65536);
                let raw = fd.as_raw_fd();
                standin::clear_log();
                // SAFETY: the stand-in reads nothing of the file but its size.
                let memory = unsafe { ExternalMemory::import_fd(device, fd, 65536, true) }.unwrap();
                // Bugs caught: another handle type, size or flag sent; the descriptor closed
                // by the crate after the driver took it.
                assert!(
                    standin::last_call("cuImportExternalMemory")
                        .contains(&format!("type=1 fd={raw} size=65536 flags=1")),
                    "{}",
                    standin::log()
                );
                assert!(is_open(raw), "the driver owns the descriptor now");
                assert_eq!(memory.size(), 65536);

                let mut buffer = memory.buffer(4096, 8192, &stream).unwrap();
                let mapped = standin::last_call("cuExternalMemoryGetMappedBuffer");
                // Bugs caught: offset and length swapped or dropped; a buffer at another
                // address than the driver's mapping, or of another size.
                assert!(mapped.contains("offset=4096 size=8192"), "{mapped}");
                assert!(
                    mapped.ends_with(&format!("{:#x}", buffer.ptr().0)),
                    "{mapped} vs {:?}",
                    buffer.ptr()
                );
                assert_eq!(buffer.size(), 8192);
                buffer.fill(7u32, &stream).unwrap();
                // Bug caught: two buffers (each written through `&mut`) sharing bytes.
                standin::clear_log();
                assert_eq!(invalid_name(memory.buffer(12000, 100, &stream)), "offset");
                assert_eq!(invalid_name(memory.buffer(0, 4097, &stream)), "offset");
                assert!(standin::calls("cuExternalMemoryGetMappedBuffer").is_empty());
                // Next to it is free; and once a buffer is freed, its bytes are too.
                let below = memory.buffer(0, 4096, &stream).unwrap();
                drop(below);
                let again = memory.buffer(0, 4097 + 4095, &stream);
                assert!(again.is_err(), "still overlaps the live buffer");
                let again = memory.buffer(0, 4096, &stream).unwrap();
                drop(again);

                // The value goes first: the buffer keeps the import. Bug caught: the import
                // destroyed while a buffer over it lives.
                drop(memory);
                assert!(standin::calls("cuDestroyExternalMemory").is_empty());
                assert!(is_open(raw));
                standin::clear_log();
                drop(buffer);
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bugs caught: the mapping freed before the stream's work is done, never
                // freed, or freed after the import is destroyed.
                let sync = line_of(&log, "cuStreamSynchronize", 0);
                let free = line_of(&log, "cuMemFree", sync);
                line_of(&log, "cuDestroyExternalMemory", free);
                assert!(!is_open(raw), "destroying the import closes the descriptor");
            },
        );
    }
}

/// Bad input is refused with the argument's name before any driver call, and a refused import
/// leaves no descriptor open.
#[test]
fn bad_imports_and_ranges_are_refused_and_close_the_descriptor() {
    standin::run(
        module_path!(),
        "bad_imports_and_ranges_are_refused_and_close_the_descriptor",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // Bug caught: a zero-byte import sent to the driver.
            let fd = exported(4096);
            let raw = fd.as_raw_fd();
            // SAFETY: refused before the driver sees it.
            let empty = unsafe { ExternalMemory::import_fd(device, fd, 0, false) };
            assert_eq!(invalid_name(empty), "size");
            assert!(!is_open(raw), "a refused import closes its descriptor");
            // The driver's refusal (a size past the file's): an error, the descriptor closed.
            let fd = exported(4096);
            let raw = fd.as_raw_fd();
            // SAFETY: the stand-in refuses it.
            let refused = unsafe { ExternalMemory::import_fd(device, fd, 8192, false) };
            assert!(matches!(refused, Err(Error::Driver { .. })), "{refused:?}");
            assert!(
                !is_open(raw),
                "a refused import closes its descriptor (leak)"
            );

            // SAFETY: as in the first test.
            let memory =
                unsafe { ExternalMemory::import_fd(device, exported(4096), 4096, false) }.unwrap();
            standin::clear_log();
            // Bugs caught: an empty range or one past the end sent to the driver.
            assert_eq!(invalid_name(memory.buffer(0, 0, &stream)), "len");
            assert_eq!(invalid_name(memory.buffer(4000, 200, &stream)), "len");
            assert_eq!(invalid_name(memory.buffer(u64::MAX, 2, &stream)), "len");
            // Bug caught: a buffer ordered on a stream of a context the mapping is not in.
            let own = Context::create(device, ContextFlags::default()).unwrap();
            let other = own.create_stream(StreamOptions::default()).unwrap();
            assert_eq!(invalid_name(memory.buffer(0, 64, &other)), "stream");
            assert!(standin::calls("cuExternalMemoryGetMappedBuffer").is_empty());
        },
    );
}

/// Signals and waits go on the stream they are queued on with the value given and the handle
/// type of the kind imported; a binary semaphore refuses a value; the release waits for every
/// stream that used the semaphore, and a semaphore used in a capture is never released.
#[test]
fn semaphores_signal_and_wait_in_stream_order_and_release_after_their_streams() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "semaphores_signal_and_wait_in_stream_order_and_release_after_their_streams",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            || {
                let device = Device::new(0).unwrap();
                let first = device.create_stream(StreamOptions::default()).unwrap();
                let second = device.create_stream(StreamOptions::default()).unwrap();
                let fd = exported(0);
                let raw = fd.as_raw_fd();
                // SAFETY: the stand-in keeps the descriptor and nothing else.
                let timeline =
                    unsafe { ExternalSemaphore::import_fd(device, fd, SemaphoreKind::Timeline) }
                        .unwrap();
                // Bug caught: a timeline imported as a binary semaphore (type 1).
                assert!(standin::last_call("cuImportExternalSemaphore")
                    .contains(&format!("type=9 fd={raw}")));
                standin::clear_log();
                first.signal_semaphore(&timeline, 5).unwrap();
                second.wait_semaphore(&timeline, 5).unwrap();
                first.wait_semaphore(&timeline, 6).unwrap();
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bugs caught: the value dropped or sent to the other call; a signal queued
                // on another stream than the one asked.
                let signal = line_of(&log, "cuSignalExternalSemaphoresAsync", 0);
                assert!(log[signal].contains("value=5"), "{}", log[signal]);
                let wait = line_of(&log, "cuWaitExternalSemaphoresAsync", signal);
                assert!(log[wait].contains("value=5"), "{}", log[wait]);
                let wait_again = line_of(&log, "cuWaitExternalSemaphoresAsync", wait + 1);
                assert!(log[wait_again].contains("value=6"), "{}", log[wait_again]);
                let on = |line: &str| line.rsplit(" on ").next().unwrap().to_owned();
                assert_eq!(on(log[signal]), on(log[wait_again]));
                assert_ne!(on(log[signal]), on(log[wait]));

                // SAFETY: as above.
                let binary = unsafe {
                    ExternalSemaphore::import_fd(device, exported(0), SemaphoreKind::Binary)
                }
                .unwrap();
                assert!(standin::last_call("cuImportExternalSemaphore").contains("type=1"));
                standin::clear_log();
                // Bug caught: a value given to a binary semaphore silently ignored.
                assert_eq!(invalid_name(first.signal_semaphore(&binary, 3)), "value");
                assert!(standin::calls("cuSignalExternalSemaphoresAsync").is_empty());
                first.signal_semaphore(&binary, 0).unwrap();
                // Bug caught: a stream of another context than the import's.
                let own = Context::create(device, ContextFlags::default()).unwrap();
                let other = own.create_stream(StreamOptions::default()).unwrap();
                assert_eq!(invalid_name(other.wait_semaphore(&binary, 0)), "stream");

                standin::clear_log();
                let clone = timeline.clone();
                drop(timeline);
                // Bug caught: a clone's drop releasing the shared import.
                assert!(standin::calls("cuDestroyExternalSemaphore").is_empty());
                drop(clone);
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bug caught: the semaphore destroyed while a stream's signal or wait may be
                // pending (the driver requires them complete).
                let destroy = line_of(&log, "cuDestroyExternalSemaphore", 0);
                let syncs = log[..destroy]
                    .iter()
                    .filter(|l| l.contains("cuStreamSynchronize"))
                    .count();
                assert_eq!(syncs, 2, "{}", log.join("\n"));
                assert!(!is_open(raw));

                // A stream dropped after its signal: the semaphore kept it alive before (a
                // capture of it then never ended); now the release waits for the context.
                // SAFETY: as above.
                let third = unsafe {
                    ExternalSemaphore::import_fd(device, exported(0), SemaphoreKind::Timeline)
                }
                .unwrap();
                let passing = device.create_stream(StreamOptions::default()).unwrap();
                passing.signal_semaphore(&third, 1).unwrap();
                standin::clear_log();
                drop(passing);
                drop(third);
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bugs caught: the semaphore holding the stream (it would synchronise that
                // stream, alive, instead), or destroyed without waiting for its signal.
                let sync = line_of(&log, "cuCtxSynchronize", 0);
                assert!(
                    !log[..sync]
                        .iter()
                        .any(|l| l.contains("cuStreamSynchronize")),
                    "{}",
                    log.join("\n")
                );
                line_of(&log, "cuDestroyExternalSemaphore", sync);

                // Dropped while a stream that used it captures (what it did there was before
                // the capture): the release waits for that capture's end.
                // SAFETY: as above.
                let fourth = unsafe {
                    ExternalSemaphore::import_fd(device, exported(0), SemaphoreKind::Timeline)
                }
                .unwrap();
                first.signal_semaphore(&fourth, 1).unwrap();
                // SAFETY: the capture records no memory work.
                unsafe { first.begin_capture(CaptureMode::Global) }.unwrap();
                standin::clear_log();
                drop(fourth);
                // Bug caught: the release waiting for the capturing stream at once, which the
                // driver refuses, invalidating the capture (its end would then fail).
                assert!(standin::calls("cuStreamSynchronize").is_empty());
                assert!(standin::calls("cuDestroyExternalSemaphore").is_empty());
                drop(first.end_capture().unwrap());
                // Bug caught: a release put off for good.
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                let end = line_of(&log, "cuStreamEndCapture", 0);
                let sync = line_of(&log, "cuStreamSynchronize", end);
                line_of(&log, "cuDestroyExternalSemaphore", sync);

                // In a capture: the graph keeps the signal, so the semaphore is never destroyed.
                // SAFETY: the capture records no memory work.
                unsafe { first.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
                first.signal_semaphore(&binary, 0).unwrap();
                let graph = first.end_capture().unwrap();
                standin::clear_log();
                drop(binary);
                // Bug caught: a semaphore destroyed while a graph can still signal it.
                assert!(standin::calls("cuDestroyExternalSemaphore").is_empty());
                drop(graph);
            },
        );
    }
}

/// A mapped OpenGL buffer is a buffer at the driver's mapped address, one mapping at a time;
/// dropping it unmaps on its stream after that stream's work, and the registration outlives
/// the mapping.
#[test]
fn gl_buffers_map_as_buffers_and_unmap_when_dropped() {
    for abi in ["12", "13"] {
        standin::run(
            module_path!(),
            "gl_buffers_map_as_buffers_and_unmap_when_dropped",
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi), ("STANDIN_GL_BYTES", "8192")],
            || {
                let device = Device::new(0).unwrap();
                let stream = device.create_stream(StreamOptions::default()).unwrap();
                // SAFETY: the stand-in has no OpenGL; it takes any name.
                let gl = unsafe { GlBuffer::register(device, 17, GlRegisterFlags::WRITE_DISCARD) }
                    .unwrap();
                // Bug caught: the name or flags sent wrong.
                assert!(
                    standin::last_call("cuGraphicsGLRegisterBuffer").contains("buffer=17 flags=2")
                );
                let mut mapped = gl.map(&stream).unwrap();
                let pointer = standin::last_call("cuGraphicsResourceGetMappedPointer");
                // Bugs caught: the buffer at another address or of another size than mapped.
                assert!(pointer.contains(&format!("{:#x} size=8192", mapped.ptr().0)));
                assert_eq!(mapped.size(), 8192);
                mapped.fill(1u8, &stream).unwrap();
                // Bug caught: a second mapping (the driver's ALREADY_MAPPED) reaching it.
                standin::clear_log();
                assert_eq!(invalid_name(gl.map(&stream)), "self");
                assert!(standin::calls("cuGraphicsMapResources").is_empty());
                // The registration goes first: the mapping keeps it.
                drop(gl);
                assert!(standin::calls("cuGraphicsUnregisterResource").is_empty());
                drop(mapped);
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bugs caught: unmapped before the stream's work is done, never unmapped,
                // unregistered while mapped.
                let sync = line_of(&log, "cuStreamSynchronize", 0);
                let unmap = line_of(&log, "cuGraphicsUnmapResources", sync);
                line_of(&log, "cuGraphicsUnregisterResource", unmap);
                assert!(!log.iter().any(|l| l.contains("!unregister-mapped")));

                // A mapping dropped while its stream captures: unmapped after the capture.
                // SAFETY: as above.
                let gl =
                    unsafe { GlBuffer::register(device, 18, GlRegisterFlags::empty()) }.unwrap();
                let mapped = gl.map(&stream).unwrap();
                // SAFETY: the capture records no memory work.
                unsafe { stream.begin_capture(CaptureMode::Global) }.unwrap();
                standin::clear_log();
                drop(mapped);
                drop(gl);
                // Bug caught: the unmap (or a wait for it) made during the capture, which the
                // driver refuses, invalidating it.
                assert!(standin::calls("cuGraphicsUnmapResources").is_empty());
                assert!(standin::calls("cuStreamSynchronize").is_empty());
                drop(stream.end_capture().unwrap());
                let log = standin::log();
                let log: Vec<&str> = log.lines().collect();
                // Bug caught: a mapping put off for good.
                let end = line_of(&log, "cuStreamEndCapture", 0);
                let unmap = line_of(&log, "cuGraphicsUnmapResources", end);
                line_of(&log, "cuGraphicsUnregisterResource", unmap);
            },
        );
    }
}

/// A mapped OpenGL image is an array the driver describes, whose bytes copies reach; dropping
/// it unmaps the image (and destroys no array: the driver owns it), and the image maps again.
#[test]
fn gl_images_map_as_arrays_and_unmap_when_dropped() {
    standin::run(
        module_path!(),
        "gl_images_map_as_arrays_and_unmap_when_dropped",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // SAFETY: as for the buffer.
            let gl =
                unsafe { GlImage::register(device, 5, 0x0DE1, GlRegisterFlags::empty()) }.unwrap();
            assert!(standin::last_call("cuGraphicsGLRegisterImage")
                .contains("image=5 target=0xde1 flags=0"));
            let mut array = gl.map(&stream, 0, 0).unwrap();
            // Bug caught: an array described otherwise than the driver's descriptor.
            assert_eq!(array.extent(), [16, 8, 1]);
            assert_eq!(array.options().format, ArrayFormat::U32);
            let data: Vec<u32> = (0..128).map(|i| i * 3 + 1).collect();
            array.copy_from_host(&data, &stream).unwrap();
            // Bug caught: copies reaching another array than the mapped one.
            assert_eq!(array.to_vec::<u32>(&stream).unwrap(), data);
            standin::clear_log();
            drop(array);
            // Bugs caught: the driver's array destroyed by the crate, the image left mapped.
            assert!(standin::calls("cuArrayDestroy").is_empty());
            assert_eq!(standin::calls("cuGraphicsUnmapResources").len(), 1);
            let again = gl.map(&stream, 0, 0).unwrap();
            // Bug caught: a second mapping while the array of the first lives.
            assert!(matches!(
                gl.map(&stream, 0, 0),
                Err(Error::InvalidArgument { .. })
            ));
            drop(again);
            drop(gl);
            assert!(!standin::log().contains("!unregister-mapped"));
        },
    );
}

/// On the GPU, without another API: CUDA's own allocation exported as a POSIX file descriptor
/// (`cuMemExportToShareableHandle`) and imported back as external memory. Bytes written through
/// the allocation's mapping are what a buffer over the import reads, and a kernel's-free write
/// through the import (a fill on another stream) is what the mapping reads: one memory, no
/// copy. Where the driver refuses to import its own descriptor as an opaque one, not run.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_imported_memory_is_the_exporters_memory() {
    use cuda_core::memory::{
        AddressRange, AllocationGranularity, PhysicalMemory, PhysicalMemoryOptions,
        ShareableHandleType,
    };
    let device = crate::common::device();
    let options =
        PhysicalMemoryOptions::default().with_handle_type(ShareableHandleType::PosixFileDescriptor);
    let size =
        PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum).unwrap();
    let physical = PhysicalMemory::new(device, size, &options).unwrap();
    let range = AddressRange::reserve(device, size, None).unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let other = device.create_stream(StreamOptions::default()).unwrap();
    let mut mapped = range
        .map(0, &physical)
        .unwrap()
        .into_buffer(&stream)
        .map_err(|(e, _)| e)
        .unwrap();
    let words = size / 4;
    let data: Vec<u32> = (0..words as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    mapped.copy_from_host(&data, &stream).unwrap();
    stream.sync().unwrap();

    let fd = physical.export_fd().unwrap();
    // SAFETY: the descriptor is CUDA's export of `size` bytes of this device's memory; the
    // crate orders every use of both buffers below (the streams are synchronised between).
    let memory = match unsafe { ExternalMemory::import_fd(device, fd, size as u64, false) } {
        Ok(memory) => memory,
        Err(e) => {
            crate::common::not_run(
                "external-self-import",
                &format!("the driver does not import its own POSIX descriptor as opaque: {e}"),
            );
            return;
        }
    };
    // Bug caught: a buffer over other memory than the import's (or a wrong offset).
    let tail = memory.buffer(size as u64 / 2, size / 2, &other).unwrap();
    assert_eq!(tail.to_vec::<u32>(&other).unwrap(), data[words / 2..]);
    drop(tail);
    let mut imported = memory.buffer(0, size, &other).unwrap();
    assert_eq!(imported.to_vec::<u32>(&other).unwrap(), data);
    // Bug caught: writes through the import landing elsewhere than the exporter's memory.
    imported.fill(0xfeed_beefu32, &other).unwrap();
    other.sync().unwrap();
    assert!(mapped
        .to_vec::<u32>(&stream)
        .unwrap()
        .iter()
        .all(|&w| w == 0xfeed_beef));
    drop(imported);
    drop(memory);
    drop(mapped);
}
