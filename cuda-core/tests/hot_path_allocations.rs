//! Record, wait, sync, query, stream-ordered allocate and free, and Device::current allocate
//! nothing on the heap: a counting global allocator watches them. One test in this binary, so
//! that no other test allocates meanwhile.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::{Allocate, Device, EventOptions, StreamOptions};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
#[ignore = "needs a CUDA GPU"]
fn hot_paths_do_not_allocate() {
    let device = common::device();
    device.set_current().unwrap();
    let stream = device.create_stream(StreamOptions::default()).unwrap();
    let other = device.create_stream(StreamOptions::default()).unwrap();
    let event = device.create_event(EventOptions::default()).unwrap();
    let memory = device.memory_resource().unwrap();
    // Warm up: first uses fill caches.
    drop(memory.allocate(1024, &stream).unwrap());
    stream.sync().unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..1000 {
        stream.record(&event).unwrap();
        other.wait(&event).unwrap();
        assert!(event.is_done().is_ok());
        assert!(stream.is_done().is_ok());
        let buffer = memory.allocate(1024, &stream).unwrap();
        drop(buffer);
        event.sync().unwrap();
        stream.sync().unwrap();
        assert_eq!(Device::current().unwrap(), device);
    }
    let during = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(during, 0, "heap allocations on hot paths");
    // The counter works: a Vec is one allocation.
    let v = vec![1u8; 10];
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before, "{v:?}");
}
