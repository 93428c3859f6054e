//! [`Stream::launch_host_func_reading`]: a host function reading memory in the memory's stream
//! order (a method of `Stream`, here with the memory it reads: the stream module does not
//! depend on the memory's).

use super::buffer::Pod;
use super::slice::UniqueMemory;
use crate::error::Result;
use crate::stream::Stream;

impl Stream {
    /// Runs `f` on a driver thread with the values of `memory`, host memory (a buffer of
    /// [`PinnedMemoryResource`](crate::memory::PinnedMemoryResource) or of a pinned pool that
    /// is not shareable, a registered vector from
    /// [`Buffer::from_host_vec`](crate::Buffer::from_host_vec), or a slice of one), once the
    /// work queued before it is done, holding back the work queued after it until `f` returns
    /// (`cuLaunchHostFunc`). It is what `cudaStreamAddCallback` is
    /// used for: checking, on the host, what a copy brought back, without a thread waiting.
    ///
    /// The memory is borrowed uniquely (`&mut buffer`, or a mutable slice:
    /// [`UniqueMemory`](crate::memory::UniqueMemory)) for the call, and is in the crate's stream order as a copy's source is: `f` runs after
    /// every use of it queued before this call, on any stream, and every use queued after this
    /// call, on any stream, waits for `f` to return, as does the memory's free. So nothing the
    /// crate queues writes the memory while `f` reads it (kernels given it through `unsafe`
    /// launches are their callers' to order, as always). The unique borrow is what makes that
    /// hold: through a shared handle (`&Arc<Buffer>`, a [`SharedSlice`](super::SharedSlice)) another thread could
    /// queue a write between the steps that order `f` on another stream than the memory's,
    /// while `f` holds a `&[T]` of it.
    ///
    /// As for [`launch_host_func`](Stream::launch_host_func): `f` must not call CUDA, a panic in
    /// it aborts the process, what it captured is dropped off the driver's thread, and it is
    /// refused on a stream that captures. Refused too: memory that is not host memory (device
    /// memory, and managed memory, which the host may not read while kernels run on some
    /// systems), host memory another process may map and write meanwhile (a shareable or
    /// wrapped pool's, an import: see
    /// [`MemoryResource::is_private_host_memory`](crate::MemoryResource::is_private_host_memory)),
    /// a size that is not a whole number of `T`s, an address not aligned to `T`.
    ///
    /// ```no_run
    /// use std::sync::mpsc;
    /// use cuda_core::{memory::PinnedMemoryResource, Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut on_device = device.memory_resource()?.allocate(4096, &stream)?;
    /// on_device.fill(7u32, &stream)?;
    /// let mut host = PinnedMemoryResource::new(device)?.allocate(4096, &stream)?;
    /// host.copy_from(&on_device, &stream)?;
    /// let (tx, rx) = mpsc::channel();
    /// stream.launch_host_func_reading(&mut host, move |values: &[u32]| {
    ///     let _ = tx.send(values.iter().all(|&v| v == 7));
    /// })?;
    /// assert!(rx.recv().unwrap());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// A shared handle, which another thread could write through meanwhile, is refused by the
    /// compiler:
    ///
    /// ```compile_fail,E0277
    /// use std::sync::Arc;
    /// use cuda_core::{memory::PinnedMemoryResource, Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let host = Arc::new(PinnedMemoryResource::new(device)?.allocate(4096, &stream)?);
    /// stream.launch_host_func_reading(&host, |_: &[u32]| {})?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuLaunchHostFunc", "cudaStreamAddCallback"))]
    pub fn launch_host_func_reading<T, F>(&self, memory: impl UniqueMemory, f: F) -> Result<()>
    where
        T: Pod,
        F: FnMut(&[T]) + Send + 'static,
    {
        memory.span().host_func_reading(self, f)
    }
}
