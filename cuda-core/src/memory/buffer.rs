//! Buffers: one allocation of a memory resource.

use std::fmt;
use std::sync::Arc;

use super::slice::sealed::Region;
use super::slice::{CopyDestination, CopySource};
use super::{DevicePtr, MemoryResource};
use crate::args::sealed::{Arg, ArgBytes};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::lifetime::Held;
use crate::stream::Stream;

/// Plain data: any bit pattern is a valid value and the type has no padding, so it can be
/// copied to and from device memory as bytes.
///
/// With the `bytemuck` feature (on by default) this is `bytemuck::Pod`'s: every type that is
/// `bytemuck::Pod` (and `Send + Sync`) is `Pod`, so a struct that derives it is a buffer
/// element with no more code, and so are the primitives, arrays of any length, `DevicePtr` and
/// (with the `half` feature) `half::f16` and `half::bf16`:
///
/// ```
/// # #[cfg(feature = "bytemuck")] {
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Particle {
///     position: [f32; 3],
///     mass: f32,
/// }
///
/// fn is_pod<T: cuda_core::Pod>() {}
/// is_pod::<Particle>();
/// # }
/// ```
///
/// Without the feature the crate implements it for the primitives, arrays of them and the
/// `half` types, and a type of your own implements it by hand. (Both at once cannot be: where
/// the feature is on, a type that is `bytemuck::Pod` must not implement `Pod` by hand too.)
///
/// # Safety
///
/// Implement it only for `Copy` types with no padding bytes and no invalid bit patterns (no
/// `bool`, `char`, references or enums).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

// SAFETY: `bytemuck::Pod` promises what `Pod` asks (`Copy`, no padding, every bit pattern a
// value); `Send + Sync` are required here as well.
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
unsafe impl<T: bytemuck::Pod + Send + Sync> Pod for T {}

#[cfg(not(feature = "bytemuck"))]
macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: primitive integers and floats: every bit pattern is a value, no padding.
        unsafe impl Pod for $t {}
    )*};
}
#[cfg(not(feature = "bytemuck"))]
pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of plain data is plain data.
#[cfg(not(feature = "bytemuck"))]
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// A value [`Buffer::fill`] can repeat: `u8`, `u16` or `u32` (`cuMemsetD8Async`, `D16`, `D32`).
/// Sealed: the fill itself is the crate's.
#[doc(alias = "cuMemsetD8Async")]
pub trait FillPattern: Copy + private::Fill {}

mod private {
    /// The fill of one width, out of users' sight.
    pub trait Fill {
        /// The value as the driver's memset takes it (the low bytes of a `u32`).
        fn pattern(self) -> u32;
    }
}

macro_rules! fill_pattern {
    ($($t:ty),*) => {$(
        impl FillPattern for $t {}

        impl private::Fill for $t {
            fn pattern(self) -> u32 {
                u32::from(self)
            }
        }
    )*};
}
fill_pattern!(u8, u16, u32);

/// The value as the driver's memsets take it (the low bytes of a `u32`).
pub(crate) fn pattern_of<P: FillPattern>(value: P) -> u32 {
    private::Fill::pattern(value)
}

/// Queues the memset of `count` values of `value` at `ptr` (`cuMemsetD8Async`, `D16` or `D32`,
/// by the value's width).
pub(crate) fn fill_raw<P: FillPattern>(
    driver: &'static dyn crate::driver::Driver,
    ptr: u64,
    value: P,
    count: usize,
    stream: crate::driver::StreamHandle,
) -> Result<()> {
    let pattern = private::Fill::pattern(value);
    match std::mem::size_of::<P>() {
        1 => driver.memset_d8_async(ptr, pattern as u8, count, stream),
        2 => driver.memset_d16_async(ptr, pattern as u16, count, stream),
        _ => driver.memset_d32_async(ptr, pattern, count, stream),
    }
}

/// One allocation from a [`MemoryResource`], freed through it when dropped: in stream order,
/// on its deallocation stream (the allocation stream unless changed), or explicitly with
/// [`Buffer::close`]. A buffer whose deallocation stream is a per-thread default stream
/// ([`Stream::per_thread_default`]), dropped on another thread, waits for that stream's whole
/// context first (that thread's stream cannot be named from this one), then frees on the
/// dropping thread's own per-thread stream.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let memory = device.memory_resource()?;
/// let mut a = memory.allocate(1 << 20, &stream)?;
/// let mut b = memory.allocate(1 << 20, &stream)?;
/// a.fill(7u32, &stream)?;
/// a.copy_to(&mut b, &stream)?;
/// let mut host = vec![0u32; 1 << 18];
/// b.copy_to_host(&mut host, &stream)?;
/// assert!(host.iter().all(|&x| x == 7));
/// # Ok::<(), cuda_core::Error>(())
/// ```
pub struct Buffer {
    ptr: u64,
    size: usize,
    /// Uncounted for a resource the process keeps for good (a device's default resource).
    resource: Held<dyn MemoryResource>,
    stream: Stream,
}

// Kernel arguments: the buffer's address, ordered on its deallocation stream; an
// `Arc<Buffer>` is a graph node's too, which keeps it alive.
crate::args::wrapper_arg!(Buffer);
crate::args::wrapper_arg!(Arc<Buffer>);
impl crate::args::GraphArg for Arc<Buffer> {}

/// An address in `buffer` (its own, or a slice's, at `ptr`), ordered on its deallocation
/// stream.
#[inline]
pub(crate) fn buffer_arg<'a>(ptr: &'a u64, buffer: &'a Buffer) -> ArgBytes<'a> {
    crate::args::address_arg(ptr, Some(buffer.deallocation_stream()))
}

impl Arg for Buffer {
    #[inline]
    fn arg(&self) -> ArgBytes<'_> {
        buffer_arg(self.ptr_ref(), self)
    }
}

impl Arg for Arc<Buffer> {
    #[inline]
    fn arg(&self) -> ArgBytes<'_> {
        buffer_arg(self.ptr_ref(), self)
    }

    fn buffer(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("size", &self.size)
            .field("resource", self.resource.arc())
            .finish()
    }
}

/// What [`Buffer::check_reachable`] found: the memory's device, and the place in its access
/// gate that the work must be queued within.
pub(crate) struct Reach<'a> {
    pub(crate) device: Option<Device>,
    pub(crate) inside: Option<super::access::Inside<'a>>,
}

/// Refuses work on `stream` over memory of `resource` (of `device`, `None` for host memory)
/// used from another device than its own: memory not accessible from the stream's device
/// (for a copy, unless the driver copies it across devices anyway). Where the resource's
/// access can be revoked, gives a place in its access gate, entered before the check: hold it
/// until the work is queued (see `memory::access`). Also what a graph's launch checks for the
/// memory its nodes, or its captured work, used.
pub(crate) fn reach_from_elsewhere<'a>(
    resource: &'a Arc<dyn MemoryResource>,
    device: Option<Device>,
    stream: &Stream,
    name: &'static str,
    copy: bool,
) -> Result<Option<super::access::Inside<'a>>> {
    let inside = resource.access_gate().map(super::access::AccessGate::enter);
    if (device.is_some() && copy && resource.copies_across_devices())
        || resource.is_accessible_from(stream.device())?
    {
        return Ok(inside);
    }
    let reason = match device {
        Some(own) => format!(
            "its memory is on device {} and not accessible from the stream's device {}; \
             grant access with DeviceMemoryResource::set_peer_access, or use a stream of \
             device {}",
            own.ordinal(),
            stream.device().ordinal(),
            own.ordinal()
        ),
        None => format!(
            "its host memory ({resource:?}) is not accessible from the stream's device {}; \
             grant access with PinnedMemoryPool::set_access, or use a stream of a device \
             that has it",
            stream.device().ordinal()
        ),
    };
    Err(Error::InvalidArgument { name, reason })
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if self.stream.is_other_threads() {
            // Sent away from the thread whose per-thread default stream frees it: that stream
            // cannot be named here (nor asked whether it captures: the question would be this
            // thread's own stream's), so wait for its whole context (every thread's per-thread
            // stream with it; the wait waits for other threads' captures in it to end) and
            // free on this thread's own. Asked first: a capture open elsewhere is no reason
            // to put the free off (it is not queued on the capturing stream).
            self.free_after_context();
            return;
        }
        if self.stream.capturing() {
            // A free queued now would be captured (the graph would free the memory on every
            // launch, and never now): it is put off until the stream captures no more. (A
            // graph's release drops its buffers whenever the driver lets them go, so this
            // can happen while the caller keeps to `begin_capture`'s rules.)
            self.defer_free();
            return;
        }
        self.stream.drain_deferred();
        // SAFETY: the allocation came from this resource and is freed only here or in `close`,
        // which zeroes `ptr`.
        match unsafe {
            self.resource
                .deallocate(DevicePtr(self.ptr), self.size, &self.stream)
        } {
            Ok(()) => {}
            // Refused for a capture that began since the question above (on the legacy
            // stream: a blocking stream that joined one): put off as above, nothing queued.
            Err(Error::Capture { .. }) => self.defer_free(),
            Err(e) => log::error!("freeing a buffer of {} bytes: {e}", self.size),
        }
    }
}

impl Buffer {
    /// [`Drop`]'s free put off until the deallocation stream captures no more (see
    /// `Stream::defer_free`).
    #[cold]
    fn defer_free(&mut self) {
        let (resource, ptr, size) = (self.resource.clone(), self.ptr, self.size);
        let free = move |stream: &Stream| {
            // SAFETY: the memory of a dropped Buffer of `resource`, whose free this replaces
            // (the Buffer frees nothing); `stream` is its deallocation stream (the stream that
            // keeps this free runs it on itself).
            unsafe { resource.arc().deallocate(DevicePtr(ptr), size, stream) }
        };
        self.stream.defer_free((Box::new(free), size));
    }
}

impl Buffer {
    /// [`Drop`] of a buffer whose deallocation stream is another thread's per-thread default
    /// stream: the free goes on this thread's own, once the context is synchronised.
    #[cold]
    fn free_after_context(&mut self) {
        let (resource, ptr, size) = (self.resource.clone(), self.ptr, self.size);
        let context = self.stream.context().clone();
        let free = move || {
            let own = match context
                .sync()
                .and_then(|()| Stream::per_thread_default(context.device()))
            {
                Ok(stream) => stream,
                Err(e) => {
                    log::error!(
                        "a buffer of {size} bytes is kept (leaked): its deallocation stream is \
                         another thread's per-thread default stream, and waiting for its \
                         context failed ({e})"
                    );
                    return;
                }
            };
            // SAFETY: the allocation came from this resource and is freed only here (the
            // Buffer frees nothing); a stream other than its own is used only after the whole
            // context (its own stream with it) was waited for.
            if let Err(e) = unsafe { resource.arc().deallocate(DevicePtr(ptr), size, &own) } {
                log::error!("freeing a buffer of {size} bytes: {e}");
            }
        };
        if crate::lifetime::captures::this_thread_captures_in(self.stream.context().handle()) {
            // The context cannot be waited for while this thread's own capture in it is open
            // (the driver would refuse it, invalidating the capture, and the capture cannot end
            // while this thread waits): freed once no capture is open, by the thread that ends
            // the last one, on its own per-thread stream.
            crate::lifetime::captures::after_captures_run(Box::new(free));
            return;
        }
        free();
    }
}

impl Buffer {
    /// Takes ownership of an allocation.
    ///
    /// # Safety
    ///
    /// `ptr` is an allocation of `size` bytes made by `resource` (through its
    /// [`allocate_raw`](MemoryResource::allocate_raw), which for the default pool rounds small
    /// sizes up: see [`DeviceMemoryResource`](crate::DeviceMemoryResource)'s "Small buffers")
    /// and owned by no one else.
    pub unsafe fn from_raw_parts(
        ptr: DevicePtr,
        size: usize,
        resource: Arc<dyn MemoryResource>,
        stream: Stream,
    ) -> Buffer {
        Buffer::new(ptr.0, size, Held::counted(resource), stream)
    }

    #[inline]
    pub(crate) fn new(
        ptr: u64,
        size: usize,
        resource: Held<dyn MemoryResource>,
        stream: Stream,
    ) -> Buffer {
        Buffer {
            ptr,
            size,
            resource,
            stream,
        }
    }

    /// The address (a `CUdeviceptr`; for host memory, also the host address).
    #[inline]
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The address field itself, for passing the buffer as a kernel argument.
    pub(crate) fn ptr_ref(&self) -> &u64 {
        &self.ptr
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The device of the memory; `None` for host memory.
    pub fn device(&self) -> Option<Device> {
        self.resource.arc().device()
    }

    /// The resource that made it and frees it.
    pub fn memory_resource(&self) -> &Arc<dyn MemoryResource> {
        self.resource.arc()
    }

    /// Whether kernels can access the memory.
    pub fn is_device_accessible(&self) -> bool {
        self.resource.arc().is_device_accessible()
    }

    /// Whether the host can access the memory directly.
    pub fn is_host_accessible(&self) -> bool {
        self.resource.arc().is_host_accessible()
    }

    /// The stream the buffer will be freed on.
    pub fn deallocation_stream(&self) -> &Stream {
        &self.stream
    }

    /// Frees the buffer on `stream` instead, after the work queued there. `stream` is ordered
    /// after the work queued on the old deallocation stream so far (an event recorded there,
    /// waited on here), so the free cannot overtake it.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn set_deallocation_stream(&mut self, stream: &Stream) -> Result<()> {
        stream.wait_for(&self.stream)?;
        self.stream = stream.clone();
        Ok(())
    }

    /// Frees the buffer now, in order on `stream` (or its deallocation stream), reporting an
    /// error that dropping would only log. A `stream` other than the deallocation stream is
    /// ordered after the work queued there first; if that fails, the buffer is freed on its
    /// deallocation stream as on drop, and the error returned.
    #[doc(alias = "cuMemFreeAsync")]
    pub fn close(mut self, stream: Option<&Stream>) -> Result<()> {
        if let Some(other) = stream {
            other.wait_for(&self.stream)?;
        }
        let ptr = std::mem::replace(&mut self.ptr, 0);
        let stream = stream.unwrap_or(&self.stream);
        // SAFETY: as in `drop`; `ptr` is zeroed so drop does nothing.
        unsafe { self.resource.deallocate(DevicePtr(ptr), self.size, stream) }
    }

    /// Refuses, before any driver call, work on `stream` that this buffer's memory cannot be
    /// used by: memory of another device that is not accessible from the stream's device (and
    /// for a copy, that the driver does not copy across devices anyway). Returns the memory's
    /// device (`None` for host memory), asked of the resource once, and, for memory used from
    /// another device (or host memory), a place in its resource's access gate: hold it until
    /// the work is queued, so that no revocation of access comes between the check and the
    /// work (see `memory::access`).
    #[inline]
    pub(crate) fn check_reachable(
        &self,
        stream: &Stream,
        name: &'static str,
        copy: bool,
    ) -> Result<Reach<'_>> {
        let device = self.device();
        let inside = match device {
            Some(own) if own == stream.device() => None,
            _ => self.reach_elsewhere(device, stream, name, copy)?,
        };
        Ok(Reach { device, inside })
    }

    /// [`Buffer::check_reachable`] for memory used from another device than its own (or host
    /// memory): the check, and, where the work may be captured, the note of its resource for
    /// the capture's graph, whose launches check the access again.
    #[cold]
    #[inline(never)]
    fn reach_elsewhere(
        &self,
        device: Option<Device>,
        stream: &Stream,
        name: &'static str,
        copy: bool,
    ) -> Result<Option<super::access::Inside<'_>>> {
        let resource = self.resource.arc();
        let inside = reach_from_elsewhere(resource, device, stream, name, copy)?;
        if inside.is_some() && crate::lifetime::captures::captures_open() {
            crate::graph::capture::note_captured_gated(stream, resource, copy);
        }
        Ok(inside)
    }

    /// Copies this buffer into `dst`, in order on `stream` (`cuMemcpyAsync`). Sizes must match.
    /// `dst` is a buffer (`&mut Buffer`, or `&Arc<Buffer>`) or a slice of one
    /// ([`slice_mut`](Buffer::slice_mut), [`shared_slice`](Buffer::shared_slice)). The memory
    /// may be on different devices where it allows it: see
    /// [`MemoryResource::is_accessible_from`] and
    /// [`DeviceMemoryResource::set_peer_access`](crate::DeviceMemoryResource::set_peer_access).
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_to(&self, dst: impl CopyDestination, stream: &Stream) -> Result<()> {
        self.span()
            .copy_to(Region::span(&dst), stream, ("self", "dst"))
    }

    /// Copies `src` (a buffer or a slice of one, see [`Buffer::slice`]) into this buffer, in
    /// order on `stream`. Sizes must match; devices as for [`copy_to`](Buffer::copy_to).
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_from(&mut self, src: impl CopySource, stream: &Stream) -> Result<()> {
        Region::span(&src).copy_to(self.span(), stream, ("src", "self"))
    }

    /// Queues a copy of the buffer's size from the raw device memory at `src` into the buffer,
    /// in order on `stream` (`cuMemcpyAsync`): memory another library allocated (a framework's
    /// tensor, an exported pointer), read without owning it. A null `src`, a range that wraps
    /// and one that overlaps the buffer are refused before the driver; the buffer's side is
    /// checked and ordered as [`copy_from`](Buffer::copy_from) checks it. Part of the buffer:
    /// [`BufferSliceMut::copy_from_device_ptr`](super::BufferSliceMut::copy_from_device_ptr).
    ///
    /// # Safety
    ///
    /// `src..src + size` is memory that work on `stream` may read (device memory of its
    /// device or accessible from it, or registered or managed host memory), and stays
    /// allocated and unwritten by other work until the copy is done: the crate orders this
    /// buffer, not memory it does not know.
    #[doc(alias = "cuMemcpyAsync")]
    pub unsafe fn copy_from_device_ptr(&mut self, src: DevicePtr, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.span().copy_raw(src, true, stream) }
    }

    /// Queues a copy of the buffer into the raw device memory at `dst`, in order on `stream`
    /// (`cuMemcpyAsync`): see [`copy_from_device_ptr`](Buffer::copy_from_device_ptr). Part of
    /// the buffer: [`BufferSlice::copy_to_device_ptr`](super::BufferSlice::copy_to_device_ptr).
    ///
    /// # Safety
    ///
    /// `dst..dst + size` is memory that work on `stream` may write, that nothing else reads
    /// or writes, and that stays allocated, until the copy is done; it is not memory that
    /// safe code reads as Rust values (a host slice or a buffer's host view).
    #[doc(alias = "cuMemcpyAsync")]
    pub unsafe fn copy_to_device_ptr(&self, dst: DevicePtr, stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.span().copy_raw(dst, false, stream) }
    }

    /// Copies a host slice of the buffer's size into it and waits for the copy. Part of the
    /// buffer is written through a slice of it: [`Buffer::slice_mut`].
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.span().copy_from_host(src, stream)
    }

    /// Queues a copy of a host slice of the buffer's size into it (`cuMemcpyHtoDAsync`).
    ///
    /// # Safety
    ///
    /// `src` must stay alive and unmodified until the copy is done (synchronise `stream` or an
    /// event recorded after it). With pageable host memory the driver may finish the copy
    /// before returning; with pinned memory it does not.
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub unsafe fn copy_from_host_async<T: Pod>(
        &mut self,
        src: &[T],
        stream: &Stream,
    ) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.span().copy_from_host_async(src, stream) }
    }

    /// Copies the buffer into a host slice of its size and waits for the copy. Part of the
    /// buffer is read through a slice of it: [`Buffer::slice`].
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.span().copy_to_host(dst, stream)
    }

    /// Queues a copy of the buffer into a host slice of its size (`cuMemcpyDtoHAsync`).
    ///
    /// # Safety
    ///
    /// `dst` must stay alive, and must not be read or written, until the copy is done.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub unsafe fn copy_to_host_async<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.span().copy_to_host_async(dst, stream) }
    }

    /// Copies the whole buffer to a new vector and waits for the copy. The size must be a
    /// multiple of `T`'s.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn to_vec<T: Pod + Default>(&self, stream: &Stream) -> Result<Vec<T>> {
        self.span().to_vec(stream)
    }

    /// [`to_vec`](Buffer::to_vec), waiting at most `timeout` for the work it follows: the work
    /// queued on `stream` before it, and, where the buffer's deallocation stream is another,
    /// the work queued there (the copy is in the buffer's stream order). Past it, the result
    /// is [`Error::Timeout`]. Nothing blocks past the deadline, whatever other threads queue
    /// meanwhile: the copy goes first into scratch device memory of `stream`'s device,
    /// queued on `stream`, and its completion is awaited as [`Stream::sync_timeout`] waits
    /// (a copy into pageable host memory would return only once it had run); only then is it
    /// copied to the host, from a stream of its own. On a timeout that first copy stays
    /// queued and runs on, and its scratch memory is freed after it. Refused on a capturing
    /// stream (the copy would be captured, not run).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::{Allocate, Device, Error, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(4096, &stream)?;
    /// match buffer.to_vec_timeout::<u32>(&stream, Duration::from_secs(1)) {
    ///     Ok(values) => println!("{} values", values.len()),
    ///     Err(Error::Timeout { .. }) => println!("the stream is still busy"),
    ///     Err(other) => return Err(other),
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn to_vec_timeout<T: Pod + Default>(
        &self,
        stream: &Stream,
        timeout: std::time::Duration,
    ) -> Result<Vec<T>> {
        self.span().to_vec_timeout(stream, timeout)
    }

    /// Copies `bool`s into the buffer, one byte each (0 or 1, as C++'s `bool` on the device),
    /// and waits for the copy; the buffer holds `src.len()` bytes. (`bool` is no [`Pod`]: not
    /// every byte is a `bool`, so reading back goes through [`to_vec_bools`](Buffer::to_vec_bools).)
    /// A kernel takes a `bool` argument by value as well ([`DeviceRepr`](crate::DeviceRepr)).
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut flags = device.memory_resource()?.allocate(3, &stream)?;
    /// flags.copy_from_bools(&[true, false, true], &stream)?;
    /// assert_eq!(flags.to_vec_bools(&stream)?, [true, false, true]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub fn copy_from_bools(&mut self, src: &[bool], stream: &Stream) -> Result<()> {
        self.span().copy_from_bools(src, stream)
    }

    /// The buffer's bytes as `bool`s, waiting for the copy. A byte that is neither 0 nor 1
    /// (which a kernel may have written) is refused, naming it: reading it as a `bool` would
    /// be undefined behaviour.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn to_vec_bools(&self, stream: &Stream) -> Result<Vec<bool>> {
        self.span().to_vec_bools(stream)
    }

    /// Fills the buffer with a 1, 2 or 4-byte value, in order on `stream` (`cuMemsetD8Async`,
    /// `D16`, `D32`); the size must be a multiple of the value's. Part of it is filled through
    /// a slice: [`Buffer::slice_mut`].
    #[doc(alias("cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async"))]
    pub fn fill<P: FillPattern>(&mut self, value: P, stream: &Stream) -> Result<()> {
        self.span().fill(value, stream)
    }

    fn host_view<T: Pod>(&self) -> Result<usize> {
        if !self.is_host_accessible() {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!("{:?} memory is not host-accessible", self.resource.arc()),
            });
        }
        let width = std::mem::size_of::<T>().max(1);
        if self.size % width != 0 || self.ptr % std::mem::align_of::<T>() as u64 != 0 {
            return Err(Error::InvalidArgument {
                name: "T",
                reason: format!(
                    "a {}-byte buffer at {:#x} is not a whole, aligned number of {width}-byte values",
                    self.size, self.ptr
                ),
            });
        }
        Ok(self.size / width)
    }

    /// The memory as a host slice, for host-accessible memory (pinned or managed).
    ///
    /// # Safety
    ///
    /// No work on any stream may write the buffer while the slice is in use: synchronise the
    /// streams that touched it first. For memory shared with another process (imported, or
    /// exported: see [`ipc`](crate::ipc)), that process may not write it
    /// meanwhile either.
    pub unsafe fn as_slice<T: Pod>(&self) -> Result<&[T]> {
        let len = self.host_view::<T>()?;
        // SAFETY: host-accessible memory of `size` bytes at `ptr`, aligned and a whole number
        // of `T` (checked); any bytes are a valid `T` (`Pod`); the caller excludes device
        // writes while it is borrowed.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as *const T, len) })
    }

    /// The memory as a mutable host slice, for host-accessible memory.
    ///
    /// # Safety
    ///
    /// No work on any stream may read or write the buffer while the slice is in use, nor, for
    /// memory shared with another process, that process.
    pub unsafe fn as_mut_slice<T: Pod>(&mut self) -> Result<&mut [T]> {
        let len = self.host_view::<T>()?;
        // SAFETY: as in `as_slice`, and `&mut self` makes the borrow unique on the host.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, len) })
    }
}
