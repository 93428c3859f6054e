//! The device's default memory resource is kept for the rest of the process, so its buffers
//! count no references to it. In a process of its own: the count is the process's, and tests
//! running beside it in one process would change it.

use crate::common;

use std::sync::Arc;

use cuda_core::{Allocate, DeviceMemoryResource, DeviceMemoryResourceOptions, StreamOptions};

#[test]
#[ignore = "needs a CUDA GPU"]
fn buffers_of_the_default_resource_count_no_references_to_it() {
    common::alone(
        module_path!(),
        "buffers_of_the_default_resource_count_no_references_to_it",
        || {
            let device = common::device();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            // The device's default resource lives as long as the process: its buffers need not keep
            // it alive, so allocating from it leaves its reference count alone.
            let default = device.memory_resource().unwrap();
            let before = Arc::strong_count(&default);
            let buffers: Vec<_> = (0..4)
                .map(|_| default.allocate(1024, &stream).unwrap())
                .collect();
            assert_eq!(Arc::strong_count(&default), before);
            drop(buffers);
            // A pool of the caller's own is kept alive by each of its buffers.
            let own =
                DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
            let buffer = own.allocate(1024, &stream).unwrap();
            assert_eq!(Arc::strong_count(&own), 2);
            drop(buffer);
            assert_eq!(Arc::strong_count(&own), 1);
            // So is a second handle to the default pool, which the process does not keep.
            let other = DeviceMemoryResource::default_pool(device).unwrap();
            let buffer = other.allocate(1024, &stream).unwrap();
            assert_eq!(Arc::strong_count(&other), 2);
            drop(buffer);
            stream.sync().unwrap();
        },
    );
}
