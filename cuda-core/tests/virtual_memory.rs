//! Virtual memory: address ranges, physical memory, mappings and access, the
//! `VirtualMemoryResource`, growable buffers, and export and import through a file descriptor.
//!
//! On the stand-in driver (no GPU, both ABIs): what reaches the driver and in which order
//! (sizes rounded to the granularity it reports, unmap before release before address free, the
//! stream synchronised first), and what is refused before it (misaligned sizes and offsets,
//! maps past a range or over a mapped part, zero and overflowing sizes, devices that cannot
//! reach the memory), each refused call making no driver call and every made thing released.
//! On the GPU: a buffer grown four times in place with a kernel writing and checking every byte,
//! nothing leaked; memory exported and imported mapped at a second address, each write seen
//! through the other; bad inputs refused with the real granularity named, nothing leaked; and,
//! on two GPUs, access granted to a peer.

use crate::common;
use crate::common::standin;

use std::os::fd::AsFd;
use std::sync::OnceLock;

use cuda_core::{
    launch,
    memory::{
        AddressRange, AllocationGranularity, MemoryAccess, PhysicalMemory, PhysicalMemoryOptions,
        ShareableHandleType, VirtualMemoryResource, VirtualMemoryResourceOptions,
    },
    Allocate, CodeType, Device, DevicePtr, Error, Kernel, LaunchConfig, MemoryResource, ObjectCode,
    Program, ProgramOptions, StreamOptions,
};

/// The stand-in's minimum granularity (its recommended one is twice it).
const G: usize = 2 << 20;

/// The reason of an `InvalidArgument` named `name`, or a panic saying what came instead.
fn refused(result: Result<impl std::fmt::Debug, Error>, name: &str) -> String {
    match result {
        Err(Error::InvalidArgument { name: got, reason }) if got == name => reason,
        other => panic!("expected InvalidArgument {{ name: {name:?} }}, got {other:?}"),
    }
}

/// The calls logged since the last clear whose line starts with `call`.
fn count(call: &str) -> usize {
    standin::log()
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(call))
        .count()
}

/// The index of the first logged line at or after `from` that starts with `prefix`.
fn position(log: &[&str], from: usize, prefix: &str) -> usize {
    log[from..]
        .iter()
        .position(|l| l.starts_with(prefix))
        .map(|i| i + from)
        .unwrap_or_else(|| panic!("no {prefix:?} after line {from} in:\n{}", log.join("\n")))
}

/// Every handle made was released, every range freed and every mapping unmapped (counted in
/// the log since its last clear).
fn assert_all_released() {
    let text = standin::log();
    let made = count("cuMemCreate")
        + count("cuMemImportFromShareableHandle")
        + count("cuMemRetainAllocationHandle");
    assert_eq!(
        made,
        count("cuMemRelease"),
        "handles made and released:\n{text}"
    );
    assert_eq!(
        count("cuMemAddressReserve"),
        count("cuMemAddressFree"),
        "ranges reserved and freed:\n{text}"
    );
    assert_eq!(
        count("cuMemMap"),
        count("cuMemUnmap"),
        "maps and unmaps:\n{text}"
    );
}

/// Runs `body` on the stand-in under the 13 ABI and again under the 12 ABI.
fn on_both_abis(function: &str, settings: &[(&str, &str)], body: fn()) {
    for abi in ["13", "12"] {
        let mut all = vec![("CUDA_CORE_DRIVER_ABI", abi)];
        all.extend_from_slice(settings);
        standin::run(module_path!(), function, &[], &all, || {
            let info = cuda_core::info::driver_info().unwrap();
            assert_eq!(info.abi.major().to_string(), abi, "{info:?}");
            body();
        });
    }
}

#[test]
fn a_resource_rounds_sizes_to_the_granularity_and_frees_after_its_stream_in_order() {
    on_both_abis(
        "a_resource_rounds_sizes_to_the_granularity_and_frees_after_its_stream_in_order",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let minimum = VirtualMemoryResource::new(
                device,
                VirtualMemoryResourceOptions::default()
                    .with_granularity(AllocationGranularity::Minimum),
            )
            .unwrap();
            assert_eq!(minimum.granularity(), G);
            standin::clear_log();
            let memory =
                VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())
                    .unwrap();
            // The recommended granularity by default (the stand-in's is twice the minimum).
            assert_eq!(memory.granularity(), 2 * G);
            assert!(
                standin::log()
                    .contains("cuMemGetAllocationGranularity device=0 handle-types=0 option=1"),
                "{}",
                standin::log()
            );
            standin::clear_log();
            let buffer = memory.allocate(1000, &stream).unwrap();
            assert_eq!(buffer.size(), 1000);
            assert_eq!(memory.mapped_bytes(), 2 * G);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let ptr = buffer.ptr();
            let reserve = position(
                &log,
                0,
                &format!("cuMemAddressReserve {ptr} size={}", 2 * G),
            );
            assert!(
                log[reserve].ends_with(&format!("alignment={}", 2 * G)),
                "{text}"
            );
            let create = position(&log, reserve, "cuMemCreate h");
            assert!(
                log[create].contains(&format!("size={} device=0 handle-types=0", 2 * G)),
                "{text}"
            );
            let map = position(
                &log,
                create,
                &format!("cuMemMap {ptr} size={} offset=0", 2 * G),
            );
            // Read-write (3) for the resource's own device only, over the whole mapping.
            let access = position(&log, map, &format!("cuMemSetAccess {ptr} size={}", 2 * G));
            assert!(log[access].ends_with(" device0=3"), "{text}");
            assert!(memory.is_accessible_from(device).unwrap());
            assert!(!memory.is_accessible_from(Device::new(1).unwrap()).unwrap());

            // Freed after its stream is done: synchronise, unmap, release, free the range.
            standin::clear_log();
            drop(buffer);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let sync = position(&log, 0, "cuStreamSynchronize s");
            let unmap = position(&log, sync, &format!("cuMemUnmap {ptr} size={}", 2 * G));
            let release = position(&log, unmap, "cuMemRelease h");
            position(
                &log,
                release,
                &format!("cuMemAddressFree {ptr} size={}", 2 * G),
            );
            assert_eq!(memory.mapped_bytes(), 0);

            // Many at once, each a range of its own; a size of a whole number of granules is
            // not rounded further.
            standin::clear_log();
            let buffers: Vec<_> = [1, 2 * G, 2 * G + 1, 7 * G]
                .iter()
                .map(|&n| memory.allocate(n, &stream).unwrap())
                .collect();
            assert_eq!(memory.mapped_bytes(), (2 + 2 + 4 + 8) * G);
            let mut starts: Vec<u64> = buffers.iter().map(|b| b.ptr().0).collect();
            starts.dedup();
            assert_eq!(starts.len(), 4);
            drop(buffers);
            assert_eq!(memory.mapped_bytes(), 0);
            assert_all_released();
        },
    );
}

#[test]
fn bad_sizes_maps_and_devices_are_refused_before_the_driver_naming_the_granularity() {
    on_both_abis(
        "bad_sizes_maps_and_devices_are_refused_before_the_driver_naming_the_granularity",
        &[("STANDIN_PEER_ACCESS", "0")],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let options = PhysicalMemoryOptions::default();
            let stream = d0.create_stream(StreamOptions::default()).unwrap();
            standin::clear_log();

            // Physical memory: a size that is not a multiple, and zero.
            let why = refused(PhysicalMemory::new(d0, G + 1, &options), "size");
            assert!(why.contains("granularity, 2097152 bytes (2 MiB)"), "{why}");
            assert!(why.contains("4194304"), "the next multiple: {why}");
            let why = refused(PhysicalMemory::new(d0, 0, &options), "size");
            assert!(why.contains("zero"), "{why}");
            // Ranges: a size that is not a multiple, an alignment that is not a power of two.
            let why = refused(AddressRange::reserve(d0, G / 2, None), "size");
            assert!(why.contains("2 MiB"), "{why}");
            refused(AddressRange::reserve(d0, 4 * G, Some(3 * G)), "alignment");
            assert_eq!(count("cuMemCreate") + count("cuMemAddressReserve"), 0);

            // Maps: past the end, off the granularity, over a mapped part.
            let range = AddressRange::reserve(d0, 4 * G, None).unwrap();
            let memory = PhysicalMemory::new(d0, 2 * G, &options).unwrap();
            assert_eq!(memory.min_granularity(), G);
            let why = refused(range.map(3 * G, &memory), "offset");
            assert!(
                why.contains("past the end") && why.contains("8388608 bytes (8 MiB)"),
                "{why}"
            );
            assert!(why.contains("granularity is 2097152 bytes"), "{why}");
            let why = refused(range.map(G / 2, &memory), "offset");
            assert!(
                why.contains("1048576 bytes (1 MiB)") && why.contains("2 MiB"),
                "{why}"
            );
            refused(range.map(usize::MAX - G + 1, &memory), "offset");
            let mapping = range.map(G, &memory).unwrap();
            assert_eq!(mapping.ptr().0, range.ptr().0 + G as u64);
            assert_eq!(range.mapped_bytes(), 2 * G);
            let other = PhysicalMemory::new(d0, G, &options).unwrap();
            let why = refused(range.map(2 * G, &other), "offset");
            assert!(
                why.contains("overlap") && why.contains("mapped already"),
                "{why}"
            );
            let beside = range.map(0, &other).unwrap();
            assert_eq!(count("cuMemMap"), 2, "{}", standin::log());

            // Access: an empty list, a device twice, a device that cannot reach the memory.
            refused(mapping.set_access(&[]), "access");
            refused(
                mapping.set_access(&[(d0, MemoryAccess::ReadWrite), (d0, MemoryAccess::Read)]),
                "access",
            );
            let why = refused(mapping.set_access(&[(d1, MemoryAccess::Read)]), "access");
            assert!(why.contains("device 1 cannot access device 0"), "{why}");
            assert_eq!(count("cuMemSetAccess"), 0, "{}", standin::log());
            // No access needs no reach; the own device and it in one call.
            mapping
                .set_access(&[(d0, MemoryAccess::ReadWrite), (d1, MemoryAccess::None)])
                .unwrap();
            assert_eq!(mapping.access(d0).unwrap(), MemoryAccess::ReadWrite);
            assert_eq!(mapping.access(d1).unwrap(), MemoryAccess::None);
            assert!(
                standin::log().contains(" device0=3 device1=0"),
                "{}",
                standin::log()
            );
            // A right taken away waits for the device's queued work first; one given does not.
            // (The log is read from here on, not cleared: the accounting below counts it all.)
            let from = standin::log().len();
            mapping.set_access(&[(d0, MemoryAccess::Read)]).unwrap();
            let log = standin::log()[from..].to_owned();
            let synced = log.find("cuCtxSynchronize");
            let set = log.find("cuMemSetAccess");
            assert!(
                matches!((synced, set), (Some(a), Some(b)) if a < b),
                "device 0 lost write access before its work was waited for: {log}"
            );
            let from = standin::log().len();
            mapping
                .set_access(&[(d0, MemoryAccess::ReadWrite)])
                .unwrap();
            let log = standin::log()[from..].to_owned();
            assert!(!log.contains("cuCtxSynchronize"), "a grant waited: {log}");

            // A resource: its own device as a peer, a peer that cannot reach it.
            let peers = |peers| VirtualMemoryResourceOptions::default().with_peers(peers);
            let why = refused(
                VirtualMemoryResource::new(d0, peers(vec![(d0, MemoryAccess::Read)])),
                "options.peers",
            );
            assert!(why.contains("own"), "{why}");
            let why = refused(
                VirtualMemoryResource::new(d0, peers(vec![(d1, MemoryAccess::ReadWrite)])),
                "options.peers",
            );
            assert!(why.contains("device 1 cannot access device 0"), "{why}");
            // Allocations: zero, overflowing, on another device's stream.
            let resource =
                VirtualMemoryResource::new(d0, VirtualMemoryResourceOptions::default()).unwrap();
            refused(resource.allocate(0, &stream), "size");
            let why = refused(resource.allocate(usize::MAX - 3, &stream), "size");
            assert!(why.contains("overflows"), "{why}");
            let s1 = d1.create_stream(StreamOptions::default()).unwrap();
            refused(resource.allocate(4096, &s1), "stream");
            refused(resource.growable(4 * G, &s1), "stream");
            refused(resource.growable(0, &stream), "capacity");
            // Exporting memory made without a handle type.
            refused(memory.export_fd(), "self");

            // A growable buffer: past its capacity, or smaller.
            let mut growable = resource.growable(8 * G, &stream).unwrap();
            assert_eq!(growable.capacity(), 8 * G);
            let why = refused(growable.grow(8 * G + 1), "new_size");
            assert!(
                why.contains("capacity") && why.contains("4194304 bytes (4 MiB)"),
                "{why}"
            );
            growable.grow(3 * G).unwrap();
            refused(growable.grow(G), "new_size");
            refused(growable.shrink(4 * G), "new_size");
            // Its memory resource allocates nothing else.
            refused(growable.memory_resource().allocate(64, &stream), "self");
            let creates = count("cuMemCreate");
            refused(growable.grow(9 * G), "new_size");
            assert_eq!(count("cuMemCreate"), creates);

            drop((mapping, beside, memory, other, range, growable, resource));
            assert_all_released();
        },
    );
}

#[test]
fn a_growable_buffer_grows_in_place_and_unmaps_in_reverse_after_its_streams() {
    on_both_abis(
        "a_growable_buffer_grows_in_place_and_unmaps_in_reverse_after_its_streams",
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let stream = d0.create_stream(StreamOptions::default()).unwrap();
            let other = d0.create_stream(StreamOptions::default()).unwrap();
            let memory = VirtualMemoryResource::new(
                d0,
                VirtualMemoryResourceOptions::default()
                    .with_granularity(AllocationGranularity::Minimum)
                    .with_peers(vec![(d1, MemoryAccess::Read)]),
            )
            .unwrap();
            standin::clear_log();
            let mut buffer = memory.growable(10 * G - 5, &stream).unwrap();
            assert_eq!(buffer.capacity(), 10 * G, "rounded up to the granularity");
            assert_eq!((buffer.size(), buffer.mapped()), (0, 0));
            let ptr = buffer.ptr();
            assert!(
                standin::log().contains(&format!("cuMemAddressReserve {ptr} size={}", 10 * G)),
                "{}",
                standin::log()
            );
            assert_eq!(count("cuMemCreate"), 0, "reserving maps nothing");

            // Four growths: each maps one more piece at the end, and sets access on it alone.
            let mut offset = 0;
            for (size, piece) in [(1, G), (G + 1, G), (3 * G, G), (7 * G + 5, 5 * G)] {
                standin::clear_log();
                buffer.grow(size).unwrap();
                assert_eq!(buffer.ptr(), ptr, "the address never changes");
                assert_eq!(buffer.size(), size);
                assert_eq!(buffer.as_buffer().size(), size);
                assert_eq!(buffer.as_buffer().ptr(), ptr);
                assert_eq!(buffer.mapped(), offset + piece);
                let text = standin::log();
                let log: Vec<&str> = text.lines().collect();
                let create = position(&log, 0, "cuMemCreate h");
                assert!(
                    log[create].contains(&format!("size={piece} device=0")),
                    "{text}"
                );
                let at = DevicePtr(ptr.0 + offset as u64);
                let map = position(
                    &log,
                    create,
                    &format!("cuMemMap {at} size={piece} offset=0"),
                );
                let access = position(&log, map, &format!("cuMemSetAccess {at} size={piece}"));
                assert!(log[access].ends_with(" device0=3 device1=1"), "{text}");
                assert_eq!(count("cuMemMap"), 1, "{text}");
                offset += piece;
            }
            // The same size again: nothing to do.
            standin::clear_log();
            buffer.grow(7 * G + 5).unwrap();
            assert_eq!(standin::log(), "");
            // A read-only peer: not accessible for the buffer's checks (fills and kernels write).
            assert!(!buffer.memory_resource().is_accessible_from(d1).unwrap());
            assert!(buffer.memory_resource().is_accessible_from(d0).unwrap());

            // Shrinking is refused while its memory resource is held elsewhere.
            let held = buffer.memory_resource().clone();
            refused(buffer.shrink(G + 1), "self");
            drop(held);
            // A view freed on another stream: that stream is synchronised before any unmap.
            let mut view = std::mem::replace(
                buffer.as_buffer_mut(),
                d0.memory_resource().unwrap().allocate(64, &stream).unwrap(),
            );
            refused(buffer.shrink(G + 1), "self");
            view.set_deallocation_stream(&other).unwrap();
            drop(view);
            buffer.grow(7 * G + 6).unwrap();
            standin::clear_log();
            buffer.shrink(G + 1).unwrap();
            assert_eq!(
                (buffer.size(), buffer.mapped(), buffer.ptr()),
                (G + 1, 2 * G, ptr)
            );
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let first_unmap = position(&log, 0, "cuMemUnmap");
            let syncs = log[..first_unmap]
                .iter()
                .filter(|l| l.starts_with("cuStreamSynchronize"))
                .count();
            assert_eq!(syncs, 2, "its own stream and the other view's: {text}");
            // From the end: the 5-granule piece, then the one at 2G.
            let last = DevicePtr(ptr.0 + 3 * G as u64);
            assert!(log[first_unmap].starts_with(&format!("cuMemUnmap {last} size={}", 5 * G)));
            let release = position(&log, first_unmap, "cuMemRelease");
            let second = DevicePtr(ptr.0 + 2 * G as u64);
            position(&log, release, &format!("cuMemUnmap {second} size={G}"));
            assert_eq!(count("cuMemUnmap"), 2, "{text}");
            assert_eq!(count("cuMemAddressFree"), 0, "{text}");
            // Grown again from there, at the same place.
            buffer.grow(4 * G).unwrap();
            assert_eq!((buffer.mapped(), buffer.ptr()), (4 * G, ptr));

            // Dropped: synchronised, every piece unmapped and released, the range freed last.
            standin::clear_log();
            drop(buffer);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let sync = position(&log, 0, "cuStreamSynchronize");
            let unmap = position(&log, sync, "cuMemUnmap");
            assert_eq!(count("cuMemUnmap"), 3, "{text}");
            assert_eq!(count("cuMemRelease"), 3, "{text}");
            let free = position(
                &log,
                unmap,
                &format!("cuMemAddressFree {ptr} size={}", 10 * G),
            );
            assert!(
                log[free + 1..].iter().all(|l| l.starts_with("cuCtx")),
                "the range is freed last: {text}"
            );
        },
    );
}

#[test]
fn physical_memory_goes_out_as_a_file_descriptor_and_comes_back_as_the_same_memory() {
    on_both_abis(
        "physical_memory_goes_out_as_a_file_descriptor_and_comes_back_as_the_same_memory",
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let stream = d0.create_stream(StreamOptions::default()).unwrap();
            let exportable = PhysicalMemoryOptions::default()
                .with_handle_type(ShareableHandleType::PosixFileDescriptor);
            standin::clear_log();
            let memory = VirtualMemoryResource::new(
                d0,
                VirtualMemoryResourceOptions::default().with_physical(exportable),
            )
            .unwrap();
            let buffer = memory.allocate(3 * G, &stream).unwrap();
            assert!(
                standin::log().contains("handle-types=1"),
                "{}",
                standin::log()
            );
            let physical = memory.physical_memory(&buffer).unwrap();
            assert_eq!(physical.size(), 4 * G);
            assert_eq!(physical.device(), d0);
            assert_eq!(
                physical.handle_type(),
                ShareableHandleType::PosixFileDescriptor
            );
            let created = standin::calls("cuMemCreate").pop().unwrap();
            assert!(created.starts_with(&format!("cuMemCreate h{} ", physical.as_raw())));
            // A buffer of another resource is not its.
            let pooled = d0.memory_resource().unwrap().allocate(64, &stream).unwrap();
            refused(memory.physical_memory(&pooled), "buffer");

            let fd = physical.export_fd().unwrap();
            // The stand-in's descriptor is not close-on-exec (the driver does not promise it);
            // the exported one is, so that a program this process starts does not inherit it.
            assert!(common::close_on_exec(fd.as_fd()), "the exported descriptor");
            // SAFETY: the descriptor is of memory of that size.
            let imported =
                unsafe { PhysicalMemory::import_fd(d0, fd.as_fd(), physical.size()) }.unwrap();
            assert_ne!(imported.as_raw(), physical.as_raw());
            assert_eq!(imported.device(), d0);
            assert_eq!(
                imported.handle_type(),
                ShareableHandleType::PosixFileDescriptor
            );
            assert!(
                standin::log().contains(&format!(
                    "cuMemImportFromShareableHandle -> h{} of h{}",
                    imported.as_raw(),
                    physical.as_raw()
                )),
                "{}",
                standin::log()
            );
            let range = AddressRange::reserve(d0, imported.size(), None).unwrap();
            let second = range.map(0, &imported).unwrap();
            assert_ne!(second.ptr(), buffer.ptr());
            // The handle mapped at an address, retained from any address of the mapping.
            // SAFETY: the mapping's memory is of that size.
            let retained = unsafe {
                PhysicalMemory::retain(d0, DevicePtr(second.ptr().0 + 12345), imported.size())
            }
            .unwrap();
            assert_eq!(retained.as_raw(), imported.as_raw());

            // Refused and released: an import on the wrong device, or of a size off the
            // granularity.
            let releases = count("cuMemRelease");
            // SAFETY: refused before any map.
            let why = refused(
                unsafe { PhysicalMemory::import_fd(d1, fd.as_fd(), 4 * G) },
                "device",
            );
            assert!(why.contains("on device 0"), "{why}");
            // SAFETY: as above.
            refused(
                unsafe { PhysicalMemory::import_fd(d0, fd.as_fd(), G + 7) },
                "size",
            );
            assert_eq!(count("cuMemRelease"), releases + 2, "{}", standin::log());
            drop(fd);
            drop((retained, second, range, imported, physical, buffer, pooled));
            assert_all_released();
        },
    );
}

#[test]
fn a_growable_buffer_shrinks_to_nothing_and_grows_again_at_the_same_place() {
    on_both_abis(
        "a_growable_buffer_shrinks_to_nothing_and_grows_again_at_the_same_place",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = VirtualMemoryResource::new(
                device,
                VirtualMemoryResourceOptions::default()
                    .with_granularity(AllocationGranularity::Minimum),
            )
            .unwrap();
            let mut buffer = memory.growable(4 * G, &stream).unwrap();
            let ptr = buffer.ptr();
            buffer.grow(G).unwrap();
            buffer.grow(3 * G - 1).unwrap();
            assert_eq!(buffer.mapped(), 3 * G);
            standin::clear_log();
            // Size 0, which a growable buffer starts at: every piece is unmapped and released.
            buffer.shrink(0).unwrap();
            assert_eq!((buffer.size(), buffer.mapped()), (0, 0));
            assert_eq!(buffer.as_buffer().size(), 0);
            assert_eq!(count("cuMemUnmap"), 2, "{}", standin::log());
            assert_eq!(count("cuMemRelease"), 2, "{}", standin::log());
            assert_eq!(count("cuMemAddressFree"), 0, "{}", standin::log());
            // And grown again from the start of its range.
            standin::clear_log();
            buffer.grow(G + 1).unwrap();
            assert_eq!((buffer.ptr(), buffer.mapped()), (ptr, 2 * G));
            assert!(
                standin::log().contains(&format!("cuMemMap {ptr} size={}", 2 * G)),
                "{}",
                standin::log()
            );
        },
    );
}

/// The error of a synchronisation that the stand-in fails (an illegal address, as work that
/// failed on the device gives).
const SYNC_FAILED: i32 = 700;

/// Whether `result` is the stand-in's failed synchronisation.
fn sync_failed(result: Result<impl std::fmt::Debug, Error>) -> bool {
    match result {
        Err(e) => e.driver_code() == Some(cuda_core::DriverCode(SYNC_FAILED)),
        Ok(_) => false,
    }
}

#[test]
fn memory_whose_stream_does_not_synchronise_stays_mapped_for_good() {
    on_both_abis(
        "memory_whose_stream_does_not_synchronise_stays_mapped_for_good",
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory =
                VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())
                    .unwrap();
            let buffer = memory.allocate(1000, &stream).unwrap();
            let options = PhysicalMemoryOptions::default();
            let range = AddressRange::reserve(device, 2 * G, None).unwrap();
            let physical = PhysicalMemory::new(device, 2 * G, &options).unwrap();
            let mapping = range.map(0, &physical).unwrap();
            let mut growable = memory.growable(4 * G, &stream).unwrap();
            growable.grow(3 * G).unwrap();
            standin::clear_log();
            // From here the stream's work "failed": it may still use its memory.
            standin::set_sync_status(SYNC_FAILED);

            // A buffer of the resource, freed: the sync fails, nothing is unmapped, and the
            // resource dropping after it unmaps nothing either.
            drop(buffer);
            assert_eq!(count("cuStreamSynchronize"), 1, "{}", standin::log());
            assert_eq!(count("cuMemUnmap"), 0, "{}", standin::log());

            // A mapping unmapped after the stream: the error, and nothing unmapped.
            assert!(sync_failed(mapping.unmap_after(Some(&stream))));
            assert_eq!(count("cuMemUnmap"), 0, "{}", standin::log());
            assert_eq!(range.mapped_bytes(), 2 * G, "still mapped");

            // A growable buffer: shrinking fails before any unmap, and so does its drop.
            assert!(sync_failed(growable.shrink(G)));
            assert_eq!((growable.size(), growable.mapped()), (3 * G, 4 * G));
            drop(growable);

            drop((range, physical, memory));
            let text = standin::log();
            for call in ["cuMemUnmap", "cuMemRelease", "cuMemAddressFree"] {
                assert_eq!(
                    count(call),
                    0,
                    "{call} while work may use the memory:\n{text}"
                );
            }
        },
    );
}

/// A mapping made a buffer: refused without read-write access for its device (the mapping
/// handed back), then freed by unmapping after its stream; another device reaches it only with
/// read-write access; a failed synchronisation keeps it mapped.
#[test]
fn a_mapping_becomes_a_buffer_unmapped_after_its_stream() {
    on_both_abis(
        "a_mapping_becomes_a_buffer_unmapped_after_its_stream",
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let stream = d0.create_stream(StreamOptions::default()).unwrap();
            let s1 = d1.create_stream(StreamOptions::default()).unwrap();
            let options = PhysicalMemoryOptions::default();
            let range = AddressRange::reserve(d0, 4 * G, None).unwrap();
            let physical = PhysicalMemory::new(d0, 2 * G, &options).unwrap();
            let mapping = range.map(G * 2, &physical).unwrap();
            standin::clear_log();

            // No access yet: refused, and the mapping comes back mapped (catches a conversion
            // that makes a buffer its device cannot write, or that drops the mapping).
            let (error, mapping) = mapping.into_buffer(&stream).unwrap_err();
            let why = refused(Err::<(), _>(error), "self");
            assert!(why.contains("set_access") && why.contains("None"), "{why}");
            assert_eq!(mapping.ptr().0, range.ptr().0 + 2 * G as u64);
            assert_eq!(count("cuMemUnmap"), 0, "{}", standin::log());
            // Read access for device 1 only: device 1 does not reach the buffer.
            mapping
                .set_access(&[(d0, MemoryAccess::ReadWrite), (d1, MemoryAccess::Read)])
                .unwrap();
            let mut buffer = mapping.into_buffer(&stream).unwrap();
            assert_eq!(buffer.ptr().0, range.ptr().0 + 2 * G as u64);
            assert_eq!((buffer.size(), buffer.device()), (2 * G, Some(d0)));
            let resource = buffer.memory_resource().clone();
            assert!(resource.is_accessible_from(d0).unwrap());
            assert!(!resource.is_accessible_from(d1).unwrap());
            // It allocates nothing else.
            refused(resource.allocate(64, &stream), "self");
            // A buffer's operations, at the mapping's address.
            buffer.fill(7u32, &stream).unwrap();
            assert!(
                standin::log().contains(&format!("cuMemsetD32Async {:#x}", buffer.ptr().0)),
                "{}",
                standin::log()
            );
            let mut other = d1.memory_resource().unwrap().allocate(2 * G, &s1).unwrap();
            let before = standin::log().matches("cuMemcpy").count();
            let e = buffer.copy_to(&mut other, &s1).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            assert_eq!(standin::log().matches("cuMemcpy").count(), before);
            drop(other);

            // Freed: the stream synchronised, then unmapped; the range's part free again.
            standin::clear_log();
            drop(buffer);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let synced = position(&log, 0, "cuStreamSynchronize");
            let unmapped = position(&log, 0, "cuMemUnmap");
            assert!(synced < unmapped, "unmapped before its stream:\n{text}");
            assert_eq!(range.mapped_bytes(), 0);
            // The resource outlives its buffer: it answers, and frees nothing twice.
            assert!(!resource.is_accessible_from(d1).unwrap());
            drop(resource);
            assert_eq!(count("cuMemUnmap"), 1, "{}", standin::log());

            // Mapped again and made a buffer whose stream fails to synchronise: kept mapped.
            let mapping = range.map(0, &physical).unwrap();
            mapping
                .set_access(&[(d0, MemoryAccess::ReadWrite)])
                .unwrap();
            let buffer = mapping.into_buffer(&stream).unwrap();
            standin::clear_log();
            standin::set_sync_status(SYNC_FAILED);
            drop(buffer);
            assert_eq!(count("cuMemUnmap"), 0, "{}", standin::log());
            assert_eq!(range.mapped_bytes(), 2 * G, "still mapped");
        },
    );
}

/// Review W11: two mappings of one physical memory, each made a buffer, would be two buffers
/// over the same bytes; a copy between them passes the overlap check, which compares
/// addresses, and reaches cuMemcpyAsync with overlapping memory. One physical memory backs one
/// live buffer at a time: a second `into_buffer` is refused (the mapping handed back, still
/// mapped) until the first buffer is freed, and so is a mapping of a resource's buffer's
/// memory (`VirtualMemoryResource::physical_memory`) while that buffer lives.
#[test]
fn one_physical_memory_backs_one_live_buffer_at_a_time() {
    on_both_abis(
        "one_physical_memory_backs_one_live_buffer_at_a_time",
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let stream = d0.create_stream(StreamOptions::default()).unwrap();
            let read_write = [(d0, MemoryAccess::ReadWrite)];
            let physical = PhysicalMemory::new(d0, G, &PhysicalMemoryOptions::default()).unwrap();
            let (r1, r2) = (
                AddressRange::reserve(d0, G, None).unwrap(),
                AddressRange::reserve(d0, G, None).unwrap(),
            );
            let first = r1.map(0, &physical).unwrap();
            let second = r2.map(0, &physical).unwrap();
            first.set_access(&read_write).unwrap();
            second.set_access(&read_write).unwrap();
            let mut a = first.into_buffer(&stream).unwrap();
            standin::clear_log();
            // Bug caught: a second buffer over the same bytes, which a copy from the first then
            // reached the driver overlapping.
            let (error, second) = second.into_buffer(&stream).unwrap_err();
            let why = refused(Err::<(), _>(error), "self");
            assert!(why.contains("live buffer"), "{why}");
            assert_eq!(count("cuMemUnmap"), 0, "{}", standin::log());
            assert_eq!(second.ptr(), r2.ptr());
            a.fill(1u8, &stream).unwrap();
            // Once the first buffer is freed, the memory may back another (catches a claim that
            // outlives its buffer).
            drop(a);
            let b = second.into_buffer(&stream).unwrap();
            assert_eq!(b.ptr(), r2.ptr());
            drop(b);
            // Mappings that stay mappings share it freely: they are raw addresses.
            let raw = r1.map(0, &physical).unwrap();
            let again = r2.map(0, &physical).unwrap();
            again.set_access(&read_write).unwrap();
            let c = again.into_buffer(&stream).unwrap();
            drop((c, raw));

            // A resource's buffer: its physical memory mapped elsewhere is no second buffer while
            // the buffer lives.
            let memory =
                VirtualMemoryResource::new(d0, VirtualMemoryResourceOptions::default()).unwrap();
            let buffer = memory.allocate(G, &stream).unwrap();
            let behind = memory.physical_memory(&buffer).unwrap();
            let range = AddressRange::reserve(d0, behind.size(), None).unwrap();
            let elsewhere = range.map(0, &behind).unwrap();
            elsewhere.set_access(&read_write).unwrap();
            // Bug caught: the resource's buffer and this one aliased.
            let (error, elsewhere) = elsewhere.into_buffer(&stream).unwrap_err();
            assert!(refused(Err::<(), _>(error), "self").contains("live buffer"));
            drop(buffer);
            let freed_first = elsewhere.into_buffer(&stream).unwrap();
            drop(freed_first);
        },
    );
}

// ---- on the GPU -----------------------------------------------------------------------------

const SOURCE: &str = r#"
__device__ unsigned char pattern(unsigned long long i, unsigned round) {
    return (unsigned char)(((i * 2654435761ull) >> 13) + round * 29u + (i >> 21));
}

// Every byte below n: checked against the previous round's pattern where it was written
// (below old_n), counting mismatches in *bad, then written with this round's.
extern "C" __global__ void touch(unsigned char* p, unsigned long long n,
                                 unsigned long long old_n, unsigned round,
                                 unsigned long long* bad) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += stride) {
        if (i < old_n && p[i] != pattern(i, round - 1)) atomicAdd(bad, 1ull);
        p[i] = pattern(i, round);
    }
}

extern "C" __global__ void copy_words(unsigned* dst, const unsigned* src, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += stride)
        dst[i] = src[i];
}

extern "C" __global__ void xor_words(unsigned* p, unsigned mask, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += stride)
        p[i] ^= mask;
}
"#;

/// The host's copy of the kernel's pattern.
fn pattern(i: u64, round: u32) -> u8 {
    ((i.wrapping_mul(2_654_435_761) >> 13)
        .wrapping_add(u64::from(round) * 29)
        .wrapping_add(i >> 21)) as u8
}

/// The kernels, compiled once per process for device 0's architecture (named, so that no
/// context is made current) and loaded context-independently.
fn kernel(name: &str) -> Kernel {
    static CODE: OnceLock<ObjectCode> = OnceLock::new();
    CODE.get_or_init(|| {
        let (major, minor) = common::device().compute_capability().unwrap();
        let options = ProgramOptions::default().with_arch(format!("{major}{minor}"));
        Program::new(SOURCE, options)
            .with_name("virtual_memory.cu")
            .compile(CodeType::Cubin, &[])
            .unwrap()
    })
    .get_kernel(name)
    .unwrap()
}

/// A grid-stride launch's shape.
fn grid() -> LaunchConfig {
    LaunchConfig::new([264, 1, 1], [256, 1, 1])
}

/// A buffer grown four times in place, every byte written by a kernel and checked by the next
/// round's kernel and by the host; returns the bytes mapped at its largest.
fn grow_four_times(memory: &std::sync::Arc<VirtualMemoryResource>, device: Device) -> usize {
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let g = memory.granularity();
    let touch = kernel("touch");
    // The counter from the same resource: freed as it is dropped, nothing kept by a pool.
    let mut bad = memory.allocate(8, &stream).unwrap();
    let mut buffer = memory.growable(16 * g, &stream).unwrap();
    let ptr = buffer.ptr();
    let mut old_n = 0u64;
    for (round, size) in [
        (1u32, g / 2 + 3),
        (2, 3 * g + 1),
        (3, 5 * g + 4097),
        (4, 11 * g + 7),
    ] {
        buffer.grow(size).unwrap();
        assert_eq!(buffer.ptr(), ptr, "round {round}: the address changed");
        assert_eq!(buffer.mapped(), size.div_ceil(g) * g, "round {round}");
        bad.fill(0u8, &stream).unwrap();
        let n = size as u64;
        // SAFETY: the kernel touches the buffer's `n` bytes and one counter.
        unsafe {
            launch(
                &stream,
                &grid(),
                &touch,
                &[buffer.as_buffer(), &n, &old_n, &round, &bad],
            )
        }
        .unwrap();
        let mismatches = bad.to_vec::<u64>(&stream).unwrap()[0];
        assert_eq!(
            mismatches, 0,
            "round {round}: bytes lost their values in growing"
        );
        let bytes = buffer.to_vec::<u8>(&stream).unwrap();
        assert_eq!(bytes.len(), size);
        let wrong = (0..size)
            .filter(|&i| bytes[i] != pattern(i as u64, round))
            .count();
        assert_eq!(
            wrong, 0,
            "round {round}: of {size} bytes written by the kernel"
        );
        old_n = n;
    }
    // The control: checked against a pattern it does not hold, every byte mismatches, so the
    // kernel's check above saw every byte.
    bad.fill(0u8, &stream).unwrap();
    // SAFETY: as above.
    unsafe {
        launch(
            &stream,
            &grid(),
            &touch,
            &[buffer.as_buffer(), &old_n, &old_n, &6u32, &bad],
        )
    }
    .unwrap();
    assert_eq!(bad.to_vec::<u64>(&stream).unwrap()[0], old_n);
    buffer.mapped()
}

/// A virtual buffer grows four times in place (the same address each time) and a kernel writes
/// and checks every byte; this process's device memory grows by what is mapped and comes back
/// whole once it is dropped, cycle after cycle.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_virtual_buffer_grows_four_times_in_place_and_a_kernel_touches_every_byte() {
    // In a process of its own: the free memory it reads is its own.
    common::alone(
        module_path!(),
        "a_virtual_buffer_grows_four_times_in_place_and_a_kernel_touches_every_byte",
        || {
            let device = common::device();
            let memory =
                VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())
                    .unwrap();
            let g = memory.granularity();
            println!("granularity {g} bytes (minimum {})", {
                PhysicalMemory::granularity(
                    device,
                    &PhysicalMemoryOptions::default(),
                    AllocationGranularity::Minimum,
                )
                .unwrap()
            });
            // Loaded once before counting (the module, the first launch's state).
            let mapped = grow_four_times(&memory, device);
            assert_eq!(mapped, 12 * g);
            let Some(before) = common::own_memory(device) else {
                return;
            };
            let mut after = Vec::new();
            for _ in 0..3 {
                grow_four_times(&memory, device);
                after.push(common::own_memory(device).unwrap());
            }
            println!("this process's memory: {before} before, {after:?} after each cycle");
            for (cycle, &used) in after.iter().enumerate() {
                assert!(
                    used.saturating_sub(before) < g,
                    "cycle {cycle}: {} bytes not given back",
                    used.saturating_sub(before)
                );
            }
            // The control: while a buffer is mapped this process's memory shows it.
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let mut held = memory.growable(16 * g, &stream).unwrap();
            held.grow(12 * g).unwrap();
            let during = common::own_memory(device).unwrap();
            println!("while 12 granules are mapped: {during}");
            assert!(
                during.saturating_sub(before) >= 11 * g,
                "12 granules mapped, yet this process's memory went from {before} to {during}"
            );
        },
    );
}

/// Buffers of the resource copy and fill as any; the memory behind one, exported as a file
/// descriptor and imported, maps at a second address where each address sees what was written
/// through the other; the handle is retained from an address; access can be lowered to read;
/// all on a thread with no context current, which none of it leaves current.
#[test]
#[ignore = "needs a CUDA GPU"]
fn exported_memory_imported_maps_the_same_bytes_at_a_second_address() {
    let device = common::device();
    // Compiled here, so that the thread below starts with no context current.
    let (copy, xor) = (kernel("copy_words"), kernel("xor_words"));
    std::thread::spawn(move || {
        let context = device.primary_context().unwrap();
        assert!(!context.is_current().unwrap());
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        if !device
            .properties()
            .handle_type_posix_file_descriptor_supported()
            .unwrap()
        {
            common::not_run(
                "gpu",
                "the device cannot export memory as a file descriptor",
            );
            return;
        }
        let exportable = PhysicalMemoryOptions::default()
            .with_handle_type(ShareableHandleType::PosixFileDescriptor);
        let memory = VirtualMemoryResource::new(
            device,
            VirtualMemoryResourceOptions::default().with_physical(exportable),
        )
        .unwrap();
        let g = memory.granularity();
        let size = 3 * g + 4096;
        let words = (size / 4) as u64;
        let data = common::random_u32(13, size / 4);
        let mut a = memory.allocate(size, &stream).unwrap();
        let mut b = memory.allocate(size, &stream).unwrap();
        a.copy_from_host(&data, &stream).unwrap();
        b.fill(0u32, &stream).unwrap();
        a.copy_to(&mut b, &stream).unwrap();
        assert_eq!(b.to_vec::<u32>(&stream).unwrap(), data);
        assert_eq!(memory.mapped_bytes(), 2 * 4 * g);

        let physical = memory.physical_memory(&a).unwrap();
        assert_eq!(physical.size(), 4 * g);
        let fd = physical.export_fd().unwrap();
        // SAFETY: the descriptor is of memory of that size.
        let imported =
            unsafe { PhysicalMemory::import_fd(device, fd.as_fd(), physical.size()) }.unwrap();
        drop(fd);
        let range = AddressRange::reserve(device, imported.size(), None).unwrap();
        let second = range.map(0, &imported).unwrap();
        second
            .set_access(&[(device, MemoryAccess::ReadWrite)])
            .unwrap();
        assert_eq!(second.access(device).unwrap(), MemoryAccess::ReadWrite);
        assert_ne!(second.ptr(), a.ptr());

        // Read through the second address what was written through the first.
        b.fill(0u32, &stream).unwrap();
        // SAFETY: `words` words at each address.
        unsafe { launch(&stream, &grid(), &copy, &[&b, &second.ptr(), &words]) }.unwrap();
        assert_eq!(
            b.to_vec::<u32>(&stream).unwrap(),
            data,
            "read through the import"
        );
        // Written through the second address, read through the first.
        let mask = 0x5A5A_F00Fu32;
        // SAFETY: as above.
        unsafe { launch(&stream, &grid(), &xor, &[&second.ptr(), &mask, &words]) }.unwrap();
        let flipped: Vec<u32> = data.iter().map(|w| w ^ mask).collect();
        assert_eq!(
            a.to_vec::<u32>(&stream).unwrap(),
            flipped,
            "written through the import"
        );

        // The handle mapped at an address, from any address of the mapping.
        // SAFETY: the mapping's memory is of that size.
        let retained = unsafe {
            PhysicalMemory::retain(device, DevicePtr(second.ptr().0 + 4096), imported.size())
        }
        .unwrap();
        assert_eq!(retained.as_raw(), imported.as_raw());
        drop(retained);
        // Lowered to read: the driver says so.
        second.set_access(&[(device, MemoryAccess::Read)]).unwrap();
        assert_eq!(second.access(device).unwrap(), MemoryAccess::Read);

        // Unmapped after the stream's work, then the rest dropped in any order.
        second.unmap_after(Some(&stream)).unwrap();
        assert_eq!(range.mapped_bytes(), 0);
        drop((range, physical, imported));
        assert_eq!(
            a.to_vec::<u32>(&stream).unwrap(),
            flipped,
            "the first address still maps it"
        );
        drop((a, b));
        assert_eq!(memory.mapped_bytes(), 0);
        assert!(
            !context.is_current().unwrap(),
            "the library left a context current"
        );
    })
    .join()
    .unwrap();
}

/// Bad inputs on the real driver: refused with its granularity named, before anything is made,
/// and what was made on the way is given back (this process's device memory after many rounds
/// is what it was).
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_virtual_memory_inputs_give_clear_errors_and_leak_nothing() {
    common::alone(
        module_path!(),
        "bad_virtual_memory_inputs_give_clear_errors_and_leak_nothing",
        || {
            let device = common::device();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let options = PhysicalMemoryOptions::default();
            let g = PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum)
                .unwrap();
            let named = format!("{g} bytes");
            let round = || {
                let why = refused(PhysicalMemory::new(device, g + 1, &options), "size");
                assert!(why.contains(&named), "{why}");
                let why = refused(AddressRange::reserve(device, 4 * g + 4096, None), "size");
                assert!(why.contains(&named), "{why}");
                let range = AddressRange::reserve(device, 4 * g, None).unwrap();
                let memory = PhysicalMemory::new(device, 2 * g, &options).unwrap();
                let why = refused(range.map(3 * g, &memory), "offset");
                assert!(
                    why.contains("past the end") && why.contains(&named),
                    "{why}"
                );
                refused(range.map(g / 2, &memory), "offset");
                let mapping = range.map(0, &memory).unwrap();
                refused(range.map(g, &memory), "offset");
                mapping
                    .set_access(&[(device, MemoryAccess::ReadWrite)])
                    .unwrap();
                refused(mapping.set_access(&[]), "access");
                refused(memory.export_fd(), "self");
                let resource =
                    VirtualMemoryResource::new(device, VirtualMemoryResourceOptions::default())
                        .unwrap();
                refused(resource.allocate(0, &stream), "size");
                refused(resource.allocate(usize::MAX, &stream), "size");
                refused(
                    VirtualMemoryResource::new(
                        device,
                        VirtualMemoryResourceOptions::default()
                            .with_peers(vec![(device, MemoryAccess::ReadWrite)]),
                    ),
                    "options.peers",
                );
                let mut growable = resource.growable(4 * g, &stream).unwrap();
                let why = refused(growable.grow(64 * g), "new_size");
                assert!(why.contains("capacity"), "{why}");
                growable.grow(2 * g).unwrap();
                refused(growable.grow(g), "new_size");
                // Memory that was made, then mapped nowhere: released.
                let unused = PhysicalMemory::new(device, 4 * g, &options).unwrap();
                drop((unused, mapping, growable));
            };
            round();
            let Some(before) = common::own_memory(device) else {
                return;
            };
            for _ in 0..8 {
                round();
            }
            let after = common::own_memory(device).unwrap();
            println!(
                "this process's memory: {before} before, {after} after 8 rounds of bad inputs"
            );
            assert!(
                after.saturating_sub(before) < g,
                "{} bytes not given back",
                after.saturating_sub(before)
            );
        },
    );
}

/// Devices 0 and 1, or `None` (after saying so) when the machine has fewer than two.
fn two_devices() -> Option<(Device, Device)> {
    match Device::count() {
        Ok(count) if count >= 2 => Some((Device::new(0).unwrap(), Device::new(1).unwrap())),
        Ok(count) => {
            common::not_run(
                "two-gpus",
                &format!("needs two CUDA devices (found {count})"),
            );
            None
        }
        Err(e) => {
            common::not_run(
                "two-gpus",
                &format!("needs two CUDA devices (found 0: {e})"),
            );
            None
        }
    }
}

/// Device 0's virtual memory used by device 1: refused before the driver without access;
/// with read-write access granted (to a resource's buffers and to a growable buffer's every
/// piece), device 1's kernels write it; with read access, the driver reports read.
#[test]
#[ignore = "needs two CUDA GPUs"]
fn virtual_memory_of_one_device_is_used_by_a_peer_given_access() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    if !d1.can_access_peer(&d0).unwrap() {
        common::not_run("two-gpus", "device 1 cannot access device 0's memory");
        return;
    }
    let xor = kernel("xor_words");
    let (s0, s1) = (
        d0.create_stream(StreamOptions::default()).unwrap(),
        d1.create_stream(StreamOptions::default()).unwrap(),
    );
    // Without access: refused by the buffer's checks, and none per the driver.
    let private = VirtualMemoryResource::new(d0, VirtualMemoryResourceOptions::default()).unwrap();
    let mut alone = private.allocate(1 << 20, &s0).unwrap();
    assert!(!private.is_accessible_from(d1).unwrap());
    refused(alone.fill(1u8, &s1), "self");
    alone.fill(1u8, &s0).unwrap();

    let shared = VirtualMemoryResource::new(
        d0,
        VirtualMemoryResourceOptions::default().with_peers(vec![(d1, MemoryAccess::ReadWrite)]),
    )
    .unwrap();
    assert!(shared.is_accessible_from(d1).unwrap());
    let g = shared.granularity();
    let mut buffer = shared.allocate(g, &s0).unwrap();
    buffer.fill(0x0101_0101u32, &s0).unwrap();
    s0.sync().unwrap();
    let words = (g / 4) as u64;
    // SAFETY: `words` words of the buffer, accessible from device 1.
    unsafe { launch(&s1, &grid(), &xor, &[&buffer, &0x0300_0000u32, &words]) }.unwrap();
    s1.sync().unwrap();
    assert!(buffer
        .to_vec::<u32>(&s0)
        .unwrap()
        .iter()
        .all(|&w| w == 0x0201_0101));

    // A growable buffer: each new piece is given the peer's access too.
    let mut growable = shared.growable(8 * g, &s0).unwrap();
    for size in [g, 3 * g, 8 * g] {
        growable.grow(size).unwrap();
        growable.as_buffer_mut().fill(0u32, &s0).unwrap();
        s0.sync().unwrap();
        let words = (size / 4) as u64;
        // SAFETY: as above.
        unsafe { launch(&s1, &grid(), &xor, &[growable.as_buffer(), &7u32, &words]) }.unwrap();
        s1.sync().unwrap();
        assert!(growable.to_vec::<u32>(&s0).unwrap().iter().all(|&w| w == 7));
    }
    s1.sync().unwrap();
    drop(growable);

    // Read access, set and read back on a mapping of the low-level pieces.
    let options = PhysicalMemoryOptions::default();
    let memory = PhysicalMemory::new(d0, g, &options).unwrap();
    let range = AddressRange::reserve(d0, g, None).unwrap();
    let mapping = range.map(0, &memory).unwrap();
    mapping
        .set_access(&[(d0, MemoryAccess::ReadWrite), (d1, MemoryAccess::Read)])
        .unwrap();
    assert_eq!(mapping.access(d1).unwrap(), MemoryAccess::Read);
    assert_eq!(mapping.access(d0).unwrap(), MemoryAccess::ReadWrite);
    s0.sync().unwrap();
}

/// Exported physical memory crosses a Unix socket with the crate's helper (as a pool does),
/// is imported into its GPU, mapped at a second address and used there by a kernel that takes
/// the `Mapping` itself as its argument; an import into the wrong GPU is refused.
#[cfg(feature = "fd-passing")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn shared_physical_memory_crosses_a_socket_and_maps_as_a_kernel_argument() {
    use cuda_core::ipc::SharedPhysicalMemory;
    use std::os::unix::net::UnixStream;

    let device = common::device();
    if !device
        .properties()
        .handle_type_posix_file_descriptor_supported()
        .unwrap()
    {
        return common::not_run(
            "gpu",
            "the device cannot export memory as a file descriptor",
        );
    }
    let (copy, xor) = (kernel("copy_words"), kernel("xor_words"));
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let options =
        PhysicalMemoryOptions::default().with_handle_type(ShareableHandleType::PosixFileDescriptor);
    let size =
        PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum).unwrap();
    let memory = PhysicalMemory::new(device, size, &options).unwrap();
    let range = AddressRange::reserve(device, size, None).unwrap();
    let first = range.map(0, &memory).unwrap();
    first
        .set_access(&[(device, MemoryAccess::ReadWrite)])
        .unwrap();
    let words = (size / 4) as u64;
    let data = common::random_u32(29, size / 4);
    let mut staging = device
        .memory_resource()
        .unwrap()
        .allocate(size, &stream)
        .unwrap();
    staging.copy_from_host(&data, &stream).unwrap();
    // SAFETY: `words` words at each address; `first` stays mapped until synchronised below.
    unsafe { launch(&stream, &grid(), &copy, &[&first, &staging, &words]) }.unwrap();

    let (here, there) = UnixStream::pair().unwrap();
    SharedPhysicalMemory::new(&memory)
        .unwrap()
        .send(&here)
        .unwrap();
    let received = SharedPhysicalMemory::recv(&there).unwrap();
    // Catches the size or the GPU lost on the way.
    assert_eq!(received.size(), size);
    assert_eq!(received.gpu(), device.uuid().unwrap());
    // SAFETY: the size came from this crate's send of the memory, in this process.
    let imported = unsafe { received.import(device) }.unwrap();
    let second_range = AddressRange::reserve(device, size, None).unwrap();
    let second = second_range.map(0, &imported).unwrap();
    second
        .set_access(&[(device, MemoryAccess::ReadWrite)])
        .unwrap();
    // The Mapping is the kernel's argument (its address): flip every word through it.
    // SAFETY: `words` words at `second`, mapped until the stream is synchronised below.
    unsafe { launch(&stream, &grid(), &xor, &[&second, &0xFFFF_FFFFu32, &words]) }.unwrap();
    // Read back through the first mapping: the same memory (catches an import of other memory,
    // or a Mapping passed as anything but its address).
    // SAFETY: as above.
    unsafe { launch(&stream, &grid(), &copy, &[&staging, &first, &words]) }.unwrap();
    let flipped: Vec<u32> = data.iter().map(|w| !w).collect();
    assert_eq!(staging.to_vec::<u32>(&stream).unwrap(), flipped);
    stream.sync().unwrap();
}

/// What the driver does with an import whose claimed size exceeds the exported memory: the
/// question whether `PhysicalMemory::import_fd` (and `SharedPhysicalMemory::import`) could be
/// safe. They stay `unsafe` until this shows that `cuMemMap` refuses to map more than there is
/// (a smaller size maps a prefix, which is harmless).
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_import_claiming_more_than_was_exported_is_refused_at_map() {
    let device = common::device();
    if !device
        .properties()
        .handle_type_posix_file_descriptor_supported()
        .unwrap()
    {
        return common::not_run(
            "gpu",
            "the device cannot export memory as a file descriptor",
        );
    }
    let options =
        PhysicalMemoryOptions::default().with_handle_type(ShareableHandleType::PosixFileDescriptor);
    let g = PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum).unwrap();
    let memory = PhysicalMemory::new(device, g, &options).unwrap();
    let fd = memory.export_fd().unwrap();
    // SAFETY: deliberately not: the claimed size is twice the memory's. The result is only
    // mapped, which the driver is expected to refuse; it is never accessed.
    let imported = unsafe { PhysicalMemory::import_fd(device, fd.as_fd(), 2 * g) }.unwrap();
    let range = AddressRange::reserve(device, 2 * g, None).unwrap();
    let result = range.map(0, &imported);
    eprintln!("cuMemMap of 2 x {g} bytes of a {g}-byte import: {result:?}");
    // Catches a driver that maps past the end of physical memory (then import stays unsafe).
    assert!(
        result.as_ref().is_err_and(|e| e.driver_code().is_some()),
        "the driver mapped more than was exported: {result:?}"
    );
    assert_eq!(range.mapped_bytes(), 0);
    // The true size maps.
    // SAFETY: the size is the memory's.
    let honest = unsafe { PhysicalMemory::import_fd(device, fd.as_fd(), g) }.unwrap();
    let mapping = range.map(0, &honest).unwrap();
    mapping
        .set_access(&[(device, MemoryAccess::ReadWrite)])
        .unwrap();
}

/// A mapping made a buffer is read and written as one, without `unsafe`: host copies, slices,
/// a graph that keeps it, raw-pointer copies out of it; freed, it is unmapped.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_mapping_made_a_buffer_is_copied_launched_and_kept_by_graphs() {
    use cuda_core::BuildGraph;
    use std::sync::Arc;
    let device = common::device();
    let xor = kernel("xor_words");
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let options = PhysicalMemoryOptions::default();
    let size =
        PhysicalMemory::granularity(device, &options, AllocationGranularity::Minimum).unwrap();
    let physical = PhysicalMemory::new(device, size, &options).unwrap();
    let range = AddressRange::reserve(device, 2 * size, None).unwrap();
    let mapping = range.map(size, &physical).unwrap();
    // The driver's own record of access is what is checked: none yet.
    let (_, mapping) = mapping.into_buffer(&stream).unwrap_err();
    mapping
        .set_access(&[(device, MemoryAccess::ReadWrite)])
        .unwrap();
    let mut buffer = mapping.into_buffer(&stream).unwrap();
    let data = common::random_u32(31, size / 4);
    buffer.copy_from_host(&data, &stream).unwrap();
    // A part read back alone (catches a buffer at the range's start, not the mapping's).
    assert_eq!(
        buffer
            .slice_of::<u32>(1000..1010)
            .unwrap()
            .to_vec::<u32>(&stream)
            .unwrap(),
        &data[1000..1010]
    );
    // A graph keeps it: the kernel flips every word on each launch, after the caller dropped
    // its handle (catches a graph holding the address only, or a buffer unmapped under it).
    let shared = Arc::new(buffer);
    let weak = Arc::downgrade(&shared);
    let mut graph = cuda_core::Graph::new(device).unwrap();
    let words = (size / 4) as u64;
    // SAFETY: `words` words of a buffer of that many, kept alive by the graph.
    unsafe { graph.add_kernel(&[], &grid(), &xor, &[&shared, &0xFFFF_FFFFu32, &words]) }.unwrap();
    let exec = graph
        .instantiate(cuda_core::GraphOptions::default())
        .unwrap();
    drop(graph);
    let keep = Arc::clone(&shared);
    drop(shared);
    exec.launch(&stream).unwrap();
    let flipped: Vec<u32> = data.iter().map(|w| !w).collect();
    assert_eq!(keep.to_vec::<u32>(&stream).unwrap(), flipped);
    // Out through a raw pointer, as to another library's memory.
    let mut foreign = device
        .memory_resource()
        .unwrap()
        .allocate(size, &stream)
        .unwrap();
    foreign.fill(0u32, &stream).unwrap();
    // SAFETY: `foreign` is a live allocation of `size` bytes, read only after the copy (in
    // stream order on the same stream).
    unsafe { keep.copy_to_device_ptr(foreign.ptr(), &stream) }.unwrap();
    assert_eq!(foreign.to_vec::<u32>(&stream).unwrap(), flipped);
    // And back into a part of it.
    // SAFETY: as above; 16 bytes of `foreign`.
    unsafe {
        Arc::clone(&keep)
            .shared_slice(0..16)
            .unwrap()
            .copy_from_device_ptr(DevicePtr(foreign.ptr().0 + 16), &stream)
    }
    .unwrap();
    assert_eq!(
        keep.slice_of::<u32>(0..4)
            .unwrap()
            .to_vec::<u32>(&stream)
            .unwrap(),
        &flipped[4..8]
    );
    let since = cuda_core::graph_releases();
    drop(exec);
    drop(keep);
    // Every holder gone: unmapped, the range free for another map. The driver releases what
    // an executable graph kept when it lets its user objects go, after the drop: wait for it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut seen = since;
    while weak.upgrade().is_some() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(
            cuda_core::wait_for_graph_releases(seen, left),
            "the mapping was not released within 30 s of its last holder"
        );
        seen = cuda_core::graph_releases();
    }
    assert_eq!(range.mapped_bytes(), 0);
    let again = range.map(0, &physical).unwrap();
    assert_eq!(again.size(), size);
}

/// The crate's socket helper carries physical memory to an import of the same memory, into
/// its own GPU only (the stand-in's devices have distinct UUIDs).
#[cfg(feature = "fd-passing")]
#[test]
fn shared_physical_memory_imports_into_its_own_gpu_only() {
    on_both_abis(
        "shared_physical_memory_imports_into_its_own_gpu_only",
        &[],
        || {
            use cuda_core::ipc::SharedPhysicalMemory;
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let exportable = PhysicalMemoryOptions::default()
                .with_handle_type(ShareableHandleType::PosixFileDescriptor);
            let memory = PhysicalMemory::new(d0, 2 * G, &exportable).unwrap();
            let (here, there) = std::os::unix::net::UnixStream::pair().unwrap();
            SharedPhysicalMemory::new(&memory)
                .unwrap()
                .send(&here)
                .unwrap();
            let received = SharedPhysicalMemory::recv(&there).unwrap();
            assert_eq!(received.size(), 2 * G);
            assert_eq!(received.gpu(), d0.uuid().unwrap());
            // Catches an import into another GPU than the memory's.
            // SAFETY: the size came from this crate's send, in this process.
            refused(unsafe { received.import(d1) }, "device");
            standin::clear_log();
            // SAFETY: as above.
            let imported = unsafe { received.import(d0) }.unwrap();
            assert_eq!(imported.size(), 2 * G);
            assert!(standin::log().contains("cuMemImportFromShareableHandle"));
            // Memory made without a descriptor handle cannot be shared.
            let plain = PhysicalMemory::new(d0, G, &PhysicalMemoryOptions::default()).unwrap();
            refused(SharedPhysicalMemory::new(&plain), "self");
        },
    );
}
