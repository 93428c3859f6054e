//! Record, wait, sync, query, stream-ordered allocate and free, Device::current and a launch
//! of 16 arguments allocate nothing on the heap: a counting global allocator watches them. It
//! counts the calling thread's allocations only, so other tests of this binary running
//! meanwhile do not count.

use crate::common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cuda_core::{
    launch, Allocate, CodeType, Device, EventOptions, KernelArg, LaunchConfig, Program,
    ProgramOptions, StreamOptions,
};

struct Counting;

thread_local! {
    /// This thread's allocations (`alloc` and `realloc` calls). A const-initialised cell
    /// without a destructor: reading it from the allocator allocates nothing itself.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: during a thread's teardown the cell may be gone; then nothing counts.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
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
    let code = Program::new(
        "extern \"C\" __global__ void k16(float* a, float* b, float* c, float* d, int e0, int e1, \
         int e2, int e3, int e4, int e5, int e6, int e7, int e8, int e9, int e10, int e11) {}",
        ProgramOptions::default(),
    )
    .compile(CodeType::Cubin, &[])
    .unwrap();
    let kernel = code.get_kernel("k16").unwrap();
    let buffers: Vec<_> = (0..4)
        .map(|_| memory.allocate(64, &stream).unwrap())
        .collect();
    let ints: Vec<i32> = (0..12).collect();
    let mut args: Vec<&dyn KernelArg> = buffers.iter().map(|b| b as &dyn KernelArg).collect();
    args.extend(ints.iter().map(|i| i as &dyn KernelArg));
    let config = LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    // Warm up: first uses fill caches (attributes, parameter layout, the pool).
    drop(memory.allocate(1024, &stream).unwrap());
    // SAFETY: an empty kernel.
    unsafe { launch(&stream, &config, &kernel, &args) }.unwrap();
    stream.sync().unwrap();
    let before = allocations();
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
        // SAFETY: an empty kernel of 16 parameters.
        unsafe { launch(&stream, &config, &kernel, &args) }.unwrap();
    }
    let during = allocations() - before;
    assert_eq!(during, 0, "heap allocations on hot paths");
    // The counter works: a Vec is one allocation.
    let v = vec![1u8; 10];
    assert!(allocations() > before, "{v:?}");
}
