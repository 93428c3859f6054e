//! Sub-buffers: a byte range of a [`Buffer`], borrowed ([`BufferSlice`], [`BufferSliceMut`]) or
//! shared through an `Arc` ([`SharedSlice`]), accepted wherever a buffer is.
//!
//! Every operation on a buffer is written once here, over a [`Span`] (a buffer and a range of
//! it): the buffer's own methods are its whole span's, a slice's are its range's. A span keeps
//! its buffer's stream order (its home is the buffer's deallocation stream) and its access
//! checks (the buffer's resource decides which devices reach it).

use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of_val;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Duration;

use super::buffer::{Buffer, FillPattern, Pod};
use super::DevicePtr;
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::view::StridedView;

pub(crate) use sealed::Span;

pub(crate) mod sealed {
    use super::Buffer;

    /// A byte range of a buffer: the buffer (for its stream order, its resource's access
    /// checks, and what keeps the memory allocated) and the range's address and size. The
    /// range lies within the buffer: only [`Buffer::span`](super::Buffer) and
    /// [`Span::sub`] make one.
    #[derive(Clone, Copy)]
    pub struct Span<'a> {
        pub(crate) buffer: &'a Buffer,
        pub(crate) ptr: u64,
        pub(crate) size: usize,
        /// Reached through a shared handle (`Arc<Buffer>`, a `SharedSlice`), which other
        /// threads may hold: a write through it goes through the door on the buffer's own
        /// stream too (`crate::order::writing`).
        pub(crate) shared: bool,
    }

    /// What copies and fills take: a span of memory. Sealed (a copy trusts the span to lie
    /// within a live allocation).
    pub trait Region {
        fn span(&self) -> Span<'_>;
    }

    /// What graph nodes take: a span of a buffer that the graph keeps alive.
    pub trait Kept: Region {
        fn kept(&self) -> &std::sync::Arc<Buffer>;
    }
}

/// Memory a copy can read: a [`Buffer`], an `Arc<Buffer>`, or a slice of one ([`BufferSlice`],
/// [`BufferSliceMut`], [`SharedSlice`]), passed by reference. Sealed.
pub trait CopySource: sealed::Region {}

/// Memory a copy or a fill can write: `&mut Buffer`, a [`BufferSliceMut`], or memory shared
/// through an `Arc` (`&Arc<Buffer>`, `&SharedSlice`), which kernels and graph nodes write
/// through shared handles too. Sealed.
pub trait CopyDestination: sealed::Region {}

/// Memory a graph node takes and keeps alive while the graph may run: an `Arc<Buffer>` or a
/// [`SharedSlice`]. Sealed.
pub trait GraphMemory: sealed::Kept {}

/// Memory borrowed uniquely: `&mut Buffer`, or a [`BufferSliceMut`] (by value or by `&mut`).
/// What [`Stream::launch_host_func_reading`] reads: while the call orders its host function
/// with the memory's stream, no other handle of the memory exists, so no write through one
/// can be queued between its steps, and every write queued later waits for the host
/// function. Sealed.
pub trait UniqueMemory: sealed::Region {}

// A method of `Stream`, here with the memory it reads (the stream module does not depend on
// the memory's).
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
    /// hold: through a shared handle (`&Arc<Buffer>`, a [`SharedSlice`]) another thread could
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

/// The first index of `range` and one past its last, `end` where it has no end; `None` for a
/// bound that overflows.
pub(crate) fn bounds(
    range: &impl RangeBounds<usize>,
    end: usize,
) -> (Option<usize>, Option<usize>) {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(end),
    };
    (start, end)
}

/// The byte range `range` of `size` bytes, checked.
fn resolve(range: &impl RangeBounds<usize>, size: usize, unit: usize) -> Result<(usize, usize)> {
    let (start, end) = bounds(range, size / unit);
    let describe = || {
        format!(
            "{:?}..{:?} of {} {}",
            range.start_bound(),
            range.end_bound(),
            size / unit,
            if unit == 1 { "bytes" } else { "elements" }
        )
    };
    let (Some(start), Some(end)) = (start, end) else {
        return Err(invalid("range", format!("{} overflows", describe())));
    };
    let bytes = |n: usize| n.checked_mul(unit);
    match (bytes(start), bytes(end)) {
        (Some(first), Some(last)) if start <= end && last <= size => Ok((first, last - first)),
        _ if start > end => Err(invalid(
            "range",
            format!("{}: it starts after it ends", describe()),
        )),
        _ => Err(invalid(
            "range",
            format!("{}: it ends past the end", describe()),
        )),
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

/// The number of `T` in `bytes` bytes at `ptr`, refused unless whole and aligned.
fn elements<T>(ptr: u64, bytes: usize) -> Result<usize> {
    let width = std::mem::size_of::<T>().max(1);
    if bytes % width != 0 || ptr % std::mem::align_of::<T>() as u64 != 0 {
        return Err(invalid(
            "T",
            format!(
                "{bytes} bytes at {ptr:#x} are not a whole, aligned number of {width}-byte \
                 values of {}",
                std::any::type_name::<T>()
            ),
        ));
    }
    Ok(bytes / width)
}

impl<'a> Span<'a> {
    /// The sub-range `range` (in bytes, or elements of `unit` bytes), checked.
    pub(crate) fn sub(self, range: &impl RangeBounds<usize>, unit: usize) -> Result<Span<'a>> {
        let (offset, size) = resolve(range, self.size, unit)?;
        Ok(Span {
            buffer: self.buffer,
            ptr: self.ptr + offset as u64,
            size,
            shared: self.shared,
        })
    }

    /// The sub-range of `range` in elements of `T`, whose start must be aligned for `T`.
    fn sub_of<T>(self, range: &impl RangeBounds<usize>) -> Result<Span<'a>> {
        let width = std::mem::size_of::<T>();
        if width == 0 {
            return Err(invalid(
                "T",
                format!("{} has no size", std::any::type_name::<T>()),
            ));
        }
        let span = self.sub(range, width)?;
        elements::<T>(span.ptr, span.size)?;
        Ok(span)
    }

    /// The offset of this span's first byte in its buffer.
    fn offset(&self) -> usize {
        (self.ptr - self.buffer.ptr().0) as usize
    }

    fn same_size(&self, other_bytes: usize, name: &'static str) -> Result<()> {
        if other_bytes == self.size {
            return Ok(());
        }
        Err(invalid(
            name,
            format!(
                "it holds {other_bytes} bytes and the {} {}; copies need equal sizes",
                if self.size == self.buffer.size() {
                    "buffer"
                } else {
                    "slice"
                },
                self.size
            ),
        ))
    }

    /// Copies this span into `dst` on `stream` (`cuMemcpyAsync`); errors name the two as
    /// `names` (the source's and the destination's).
    pub(crate) fn copy_to(
        self,
        dst: Span<'_>,
        stream: &Stream,
        (src_name, dst_name): (&'static str, &'static str),
    ) -> Result<()> {
        // Described from the side that is `self` to the caller.
        if src_name == "self" {
            self.same_size(dst.size, dst_name)?;
        } else {
            dst.same_size(self.size, src_name)?;
        }
        if self.size > 0
            && self.ptr < dst.ptr + dst.size as u64
            && dst.ptr < self.ptr + self.size as u64
        {
            // cuMemcpyAsync's result is undefined for overlapping memory: two slices of one
            // buffer, or a shared buffer copied into itself.
            return Err(invalid(
                dst_name,
                format!(
                    "bytes {:#x}..{:#x} overlap the source's {:#x}..{:#x}",
                    dst.ptr,
                    dst.ptr + dst.size as u64,
                    self.ptr,
                    self.ptr + self.size as u64
                ),
            ));
        }
        let _reach = self.buffer.check_reachable(stream, src_name, true)?;
        let _dst_reach = dst.buffer.check_reachable(stream, dst_name, true)?;
        let homes = [
            self.buffer.deallocation_stream(),
            dst.buffer.deallocation_stream(),
        ];
        crate::order::writing(&homes, stream, dst.shared, || {
            stream.queue_in_context(|driver, handle| {
                driver.memcpy_async(dst.ptr, self.ptr, self.size, handle)
            })
        })
    }

    /// Queues a copy between this span and the raw device memory at `other` (into the span
    /// where `into_span`), in this span's buffer's stream order (`cuMemcpyAsync`).
    ///
    /// # Safety
    ///
    /// As [`Buffer::copy_from_device_ptr`] (into the span) and
    /// [`Buffer::copy_to_device_ptr`] (out of it) ask of `other`.
    pub(crate) unsafe fn copy_raw(
        self,
        other: DevicePtr,
        into_span: bool,
        stream: &Stream,
    ) -> Result<()> {
        let (name, span_name) = if into_span {
            ("src", "self")
        } else {
            ("dst", "self")
        };
        let Some(end) = other
            .0
            .checked_add(self.size as u64)
            .filter(|_| other.0 != 0)
        else {
            return Err(invalid(
                name,
                format!(
                    "{other} cannot hold {} bytes: null, or they would wrap",
                    self.size
                ),
            ));
        };
        if self.size > 0 && other.0 < self.ptr + self.size as u64 && self.ptr < end {
            return Err(invalid(
                name,
                format!(
                    "bytes {other}..{end:#x} overlap this memory's {:#x}..{:#x}",
                    self.ptr,
                    self.ptr + self.size as u64
                ),
            ));
        }
        let _reach = self.buffer.check_reachable(stream, span_name, true)?;
        let (dst, src) = if into_span {
            (self.ptr, other.0)
        } else {
            (other.0, self.ptr)
        };
        let home = [self.buffer.deallocation_stream()];
        crate::order::writing(&home, stream, into_span && self.shared, || {
            stream
                .queue_in_context(|driver, handle| driver.memcpy_async(dst, src, self.size, handle))
        })
    }

    /// Queues a copy of `src` into this span.
    ///
    /// # Safety
    ///
    /// `src` stays alive and unmodified until the copy is done.
    pub(crate) unsafe fn copy_from_host_async<T: Pod>(
        self,
        src: &[T],
        stream: &Stream,
    ) -> Result<()> {
        self.same_size(size_of_val(src), "src")?;
        let reach = self.buffer.check_reachable(stream, "self", true)?;
        let host_memory = reach.device.is_none();
        let from = src.as_ptr().cast();
        let home = [self.buffer.deallocation_stream()];
        crate::order::writing(&home, stream, self.shared, || {
            stream.queue_in_context(|driver, handle| {
                if host_memory {
                    // Host memory of a pool is no device pointer to cuMemcpyHtoDAsync
                    // (CUDA_ERROR_INVALID_VALUE on the 580 driver): the unified copy infers it.
                    driver.memcpy_async(self.ptr, from as u64, self.size, handle)
                } else {
                    driver.memcpy_htod_async(self.ptr, from, self.size, handle)
                }
            })
        })
    }

    /// Queues a copy of this span into `dst`.
    ///
    /// # Safety
    ///
    /// `dst` stays alive, unread and unwritten, until the copy is done.
    pub(crate) unsafe fn copy_to_host_async<T: Pod>(
        self,
        dst: &mut [T],
        stream: &Stream,
    ) -> Result<()> {
        self.same_size(size_of_val(dst), "dst")?;
        let reach = self.buffer.check_reachable(stream, "self", true)?;
        let host_memory = reach.device.is_none();
        let to = dst.as_mut_ptr().cast();
        crate::order::in_stream_order(&[self.buffer.deallocation_stream()], stream, || {
            stream.queue_in_context(|driver, handle| {
                if host_memory {
                    // As in `copy_from_host_async`.
                    driver.memcpy_async(to as u64, self.ptr, self.size, handle)
                } else {
                    driver.memcpy_dtoh_async(to, self.ptr, self.size, handle)
                }
            })
        })
    }

    /// Copies `src` into this span and waits for the copy.
    pub(crate) fn copy_from_host<T: Pod>(self, src: &[T], stream: &Stream) -> Result<()> {
        // SAFETY: `src` outlives the copy: the stream is synchronised before returning.
        unsafe { self.copy_from_host_async(src, stream)? };
        stream.sync_for_host()
    }

    /// Copies this span into `dst` and waits for the copy.
    pub(crate) fn copy_to_host<T: Pod>(self, dst: &mut [T], stream: &Stream) -> Result<()> {
        // SAFETY: `dst` outlives the copy: the stream is synchronised before returning.
        unsafe { self.copy_to_host_async(dst, stream)? };
        stream.sync_for_host()
    }

    /// Queues `f` on `stream` to read this span of host memory as `T`s, in the memory's stream
    /// order (see [`Stream::launch_host_func_reading`]).
    pub(crate) fn host_func_reading<T: Pod, F: FnMut(&[T]) + Send + 'static>(
        self,
        stream: &Stream,
        mut f: F,
    ) -> Result<()> {
        let buffer = self.buffer;
        let resource = buffer.memory_resource();
        if buffer.device().is_some()
            || !buffer.is_host_accessible()
            || !resource.is_private_host_memory()
        {
            return Err(invalid(
                "memory",
                format!(
                    "{resource:?} is not host memory of this process's alone (pinned memory, a \
                     pinned pool that is not shareable, a registered vector): device and \
                     managed memory may not be read by the host while kernels run, and memory \
                     another process maps may be written by it meanwhile"
                ),
            ));
        }
        let len = self.whole_values::<T>()?;
        if self.ptr % std::mem::align_of::<T>() as u64 != 0 {
            return Err(invalid(
                "T",
                format!(
                    "{:#x} is not aligned to {} bytes",
                    self.ptr,
                    std::mem::align_of::<T>()
                ),
            ));
        }
        let ptr = self.ptr as usize;
        crate::order::in_stream_order(&[buffer.deallocation_stream()], stream, || {
            stream.launch_host_func(move || {
                // SAFETY: `len` whole, aligned `T`s of host memory at `ptr` (checked), which any
                // bytes are (`Pod`). The host function is a use of the memory in its stream
                // order, as a copy's source is: every use queued before it is done, every use
                // and the free queued after it wait for it to return, so nothing the crate
                // queues writes the memory or frees it while the slice lives (kernels of
                // `unsafe` launches are their callers' to order).
                let values = unsafe { std::slice::from_raw_parts(ptr as *const T, len) };
                f(values);
            })
        })
    }

    /// Copies this span to a new vector and waits for the copy.
    pub(crate) fn to_vec<T: Pod + Default>(self, stream: &Stream) -> Result<Vec<T>> {
        let mut out = vec![T::default(); self.whole_values::<T>()?];
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }

    /// Copies this span to a new vector, waiting at most `timeout` for the work the copy
    /// follows (on `stream`, and on the memory's deallocation stream): see
    /// [`Buffer::to_vec_timeout`]. No call blocks on device work: the copy goes first into
    /// scratch device memory allocated on a stream of the crate's own (`scratch`), queued on
    /// `stream` in the memory's stream order (so `scratch`, as the scratch memory's home,
    /// waits for it, and for nothing queued on `stream` later); `scratch` is awaited with the
    /// deadline, and the scratch memory, complete then, is copied to the host on it.
    pub(crate) fn to_vec_timeout<T: Pod + Default>(
        self,
        stream: &Stream,
        timeout: Duration,
    ) -> Result<Vec<T>> {
        let len = self.whole_values::<T>()?;
        if stream.capturing() {
            return Err(invalid(
                "stream",
                "it is capturing: the copy would be captured, not run".to_owned(),
            ));
        }
        if self.size == 0 {
            crate::wait::until("the work before the copy to the host", timeout, || {
                stream.is_done()
            })?;
            return Ok(Vec::new());
        }
        let start = std::time::Instant::now();
        let scratch = Stream::create(stream.context().clone(), Default::default())?;
        let staged =
            crate::Allocate::allocate(&stream.device().memory_resource()?, self.size, &scratch)?;
        self.copy_to(staged.span(), stream, ("self", "scratch"))?;
        let waited = crate::wait::until(
            "the work before the copy to the host",
            timeout.saturating_sub(start.elapsed()),
            || scratch.is_done(),
        );
        if let Err(e) = waited {
            // The copy into the scratch memory is still queued: the memory goes once it has
            // run, from a host function behind it (a free that waits, as a synchronous
            // resource's does, then waits on the crate's thread, not here; the scratch stream
            // goes with it there, and that thread keeps no stream for reuse).
            if let Err(queued) = scratch.launch_host_func(move || {
                let _kept = &staged;
            }) {
                log::warn!("keeping a copy's scratch memory until it has run: {queued}");
            }
            return Err(e);
        }
        let mut out = vec![T::default(); len];
        staged.span().copy_to_host(&mut out, &scratch)?;
        Ok(out)
    }

    /// Copies `src` into this span as bytes 0 and 1 (C++'s one-byte `bool`), waiting.
    pub(crate) fn copy_from_bools(self, src: &[bool], stream: &Stream) -> Result<()> {
        // SAFETY: `bool` is one byte, 0 or 1, each a valid `u8`; the slice is borrowed as long.
        let bytes = unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<u8>(), src.len()) };
        self.copy_from_host(bytes, stream)
    }

    /// This span's bytes as `bool`s, waiting for the copy: refused, naming the first, where a
    /// byte is neither 0 nor 1 (no `bool` has it).
    pub(crate) fn to_vec_bools(self, stream: &Stream) -> Result<Vec<bool>> {
        let bytes = self.to_vec::<u8>(stream)?;
        if let Some(at) = bytes.iter().position(|&b| b > 1) {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: format!(
                    "byte {at} is {}, no bool (a bool on the device is one byte, 0 or 1)",
                    bytes[at]
                ),
            });
        }
        Ok(bytes.into_iter().map(|b| b == 1).collect())
    }

    fn whole_values<T>(&self) -> Result<usize> {
        let width = std::mem::size_of::<T>().max(1);
        if self.size % width != 0 {
            return Err(invalid(
                "T",
                format!(
                    "{} bytes are not a whole number of {width}-byte values",
                    self.size
                ),
            ));
        }
        Ok(self.size / width)
    }

    /// Fills this span with `value` repeated, on `stream`.
    pub(crate) fn fill<P: FillPattern>(self, value: P, stream: &Stream) -> Result<()> {
        let width = std::mem::size_of::<P>();
        if self.size % width != 0 {
            return Err(invalid(
                "value",
                format!("a {width}-byte pattern does not tile {} bytes", self.size),
            ));
        }
        if self.ptr % width as u64 != 0 {
            return Err(invalid(
                "value",
                format!("a {width}-byte pattern needs a {width}-byte aligned address"),
            ));
        }
        let _reach = self.buffer.check_reachable(stream, "self", false)?;
        let home = [self.buffer.deallocation_stream()];
        crate::order::writing(&home, stream, self.shared, || {
            stream.queue_in_context(|driver, handle| {
                super::buffer::fill_raw(driver, self.ptr, value, self.size / width, handle)
            })
        })
    }
}

/// Checks `range` against this many bytes: `start <= end <= len`.
macro_rules! range_doc {
    () => {
        "Refused ([`Error::InvalidArgument`]) where the range ends past the end or starts \
         after it ends."
    };
}

/// A borrowed byte range of a [`Buffer`] ([`Buffer::slice`]): `d_data + 256` as CUDA C writes
/// it. It is accepted wherever the buffer is: as a kernel argument (its first byte's
/// address, kept in the buffer's stream order as the buffer is), as a copy source, and as a
/// strided view's memory ([`BufferSlice::view`]). It reads; [`BufferSliceMut`] writes too.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let mut buffer = device.memory_resource()?.allocate(1024 * 4, &stream)?;
/// buffer.copy_from_host(&(0..1024u32).collect::<Vec<_>>(), &stream)?;
/// // Elements 256 to 259, read back alone.
/// let part = buffer.slice_of::<u32>(256..260)?;
/// assert_eq!(part.to_vec::<u32>(&stream)?, [256, 257, 258, 259]);
/// // Bytes are the unit of `slice`: the same four elements.
/// assert_eq!(buffer.slice(1024..1040)?.ptr(), part.ptr());
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct BufferSlice<'a> {
    span: Span<'a>,
}

/// A uniquely borrowed byte range of a [`Buffer`] ([`Buffer::slice_mut`]): what a
/// [`BufferSlice`] does, and a copy destination and fill target too.
///
/// ```no_run
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let mut buffer = device.memory_resource()?.allocate(64, &stream)?;
/// buffer.fill(0u8, &stream)?;
/// buffer.slice_mut(16..32)?.fill(0xffu8, &stream)?; // cudaMemsetAsync(d + 16, 0xff, 16)
/// buffer.slice_mut(..4)?.copy_from_host(&[1u8, 2, 3, 4], &stream)?;
/// let bytes = buffer.to_vec::<u8>(&stream)?;
/// assert_eq!(&bytes[..4], [1, 2, 3, 4]);
/// assert!(bytes[16..32].iter().all(|&b| b == 0xff));
/// # Ok::<(), cuda_core::Error>(())
/// ```
pub struct BufferSliceMut<'a> {
    span: Span<'a>,
    _unique: PhantomData<&'a mut Buffer>,
}

/// A byte range of a buffer shared through an `Arc` ([`Buffer::shared_slice`]), which it keeps
/// alive: what graph nodes take, like `Arc<Buffer>`, and what a launch, a copy or a fill takes
/// as a slice. Clones share the buffer.
///
/// Writes through a shared slice (as a copy destination or fill target) are allowed as they are
/// through a kernel given an `Arc<Buffer>`: device memory is not host memory that Rust's
/// borrows guard, and its order is the stream's.
#[derive(Clone)]
pub struct SharedSlice {
    buffer: Arc<Buffer>,
    ptr: u64,
    size: usize,
}

impl fmt::Debug for BufferSlice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_span(f, "BufferSlice", self.span)
    }
}

impl fmt::Debug for BufferSliceMut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_span(f, "BufferSliceMut", self.span)
    }
}

impl fmt::Debug for SharedSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_span(f, "SharedSlice", sealed::Region::span(self))
    }
}

fn debug_span(f: &mut fmt::Formatter<'_>, name: &str, span: Span<'_>) -> fmt::Result {
    f.debug_struct(name)
        .field("ptr", &format_args!("{:#x}", span.ptr))
        .field("size", &span.size)
        .field("offset", &span.offset())
        .field("buffer", span.buffer)
        .finish()
}

impl Buffer {
    /// The whole buffer as a span.
    #[inline]
    pub(crate) fn span(&self) -> Span<'_> {
        Span {
            buffer: self,
            ptr: self.ptr().0,
            size: self.size(),
            shared: false,
        }
    }

    /// The bytes `range` of the buffer, borrowed: a kernel argument (the address of its first
    /// byte), a copy source, a strided view's memory. See [`BufferSlice`].
    #[doc = range_doc!()]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<BufferSlice<'_>> {
        Ok(BufferSlice {
            span: self.span().sub(&range, 1)?,
        })
    }

    /// The elements `range` of the buffer read as `T` (element `i` at byte
    /// `i * size_of::<T>()`); the first must be aligned for `T`. See [`BufferSlice`].
    #[doc = range_doc!()]
    pub fn slice_of<T: Pod>(&self, range: impl RangeBounds<usize>) -> Result<BufferSlice<'_>> {
        Ok(BufferSlice {
            span: self.span().sub_of::<T>(&range)?,
        })
    }

    /// The bytes `range` of the buffer, borrowed uniquely: a [`BufferSlice`] that is a copy
    /// destination and a fill target too. See [`BufferSliceMut`].
    #[doc = range_doc!()]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<BufferSliceMut<'_>> {
        Ok(BufferSliceMut {
            span: self.span().sub(&range, 1)?,
            _unique: PhantomData,
        })
    }

    /// [`slice_mut`](Buffer::slice_mut) in elements of `T`, as [`slice_of`](Buffer::slice_of).
    #[doc = range_doc!()]
    pub fn slice_of_mut<T: Pod>(
        &mut self,
        range: impl RangeBounds<usize>,
    ) -> Result<BufferSliceMut<'_>> {
        Ok(BufferSliceMut {
            span: self.span().sub_of::<T>(&range)?,
            _unique: PhantomData,
        })
    }

    /// The bytes `range` of a shared buffer, keeping it alive: for graph nodes, and anywhere a
    /// slice is taken. See [`SharedSlice`].
    #[doc = range_doc!()]
    pub fn shared_slice(self: &Arc<Buffer>, range: impl RangeBounds<usize>) -> Result<SharedSlice> {
        let span = self.span().sub(&range, 1)?;
        Ok(SharedSlice {
            ptr: span.ptr,
            size: span.size,
            buffer: Arc::clone(self),
        })
    }
}

/// The methods every slice has, each over its span.
macro_rules! slice_reads {
    () => {
        /// The address of the slice's first byte.
        #[inline]
        pub fn ptr(&self) -> DevicePtr {
            DevicePtr(self.span().ptr)
        }

        /// The size in bytes.
        #[inline]
        pub fn size(&self) -> usize {
            self.span().size
        }

        /// Where the slice starts in its buffer, in bytes.
        pub fn offset(&self) -> usize {
            self.span().offset()
        }

        /// The buffer the slice is of.
        pub fn buffer(&self) -> &Buffer {
            self.span().buffer
        }

        /// Copies the slice into `dst` (a buffer or a slice of the same size), in order on
        /// `stream` (`cuMemcpyAsync`): a device-to-device copy of part of a buffer. Devices as
        /// for [`Buffer::copy_to`].
        #[doc(alias = "cuMemcpyAsync")]
        pub fn copy_to(&self, dst: impl CopyDestination, stream: &Stream) -> Result<()> {
            self.span()
                .copy_to(sealed::Region::span(&dst), stream, ("self", "dst"))
        }

        /// Copies the slice into a host slice of its size and waits for the copy.
        #[doc(alias = "cuMemcpyDtoHAsync")]
        pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
            self.span().copy_to_host(dst, stream)
        }

        /// Queues a copy of the slice into a host slice of its size (`cuMemcpyDtoHAsync`).
        ///
        /// # Safety
        ///
        /// `dst` must stay alive, and must not be read or written, until the copy is done.
        #[doc(alias = "cuMemcpyDtoHAsync")]
        pub unsafe fn copy_to_host_async<T: Pod>(
            &self,
            dst: &mut [T],
            stream: &Stream,
        ) -> Result<()> {
            // SAFETY: the caller's promise.
            unsafe { self.span().copy_to_host_async(dst, stream) }
        }

        /// Queues a copy of the slice into the raw device memory at `dst`, as
        /// [`Buffer::copy_to_device_ptr`] does for a whole buffer.
        ///
        /// # Safety
        ///
        /// As for [`Buffer::copy_to_device_ptr`], for the slice's size.
        #[doc(alias = "cuMemcpyAsync")]
        pub unsafe fn copy_to_device_ptr(&self, dst: DevicePtr, stream: &Stream) -> Result<()> {
            // SAFETY: the caller's promise.
            unsafe { self.span().copy_raw(dst, false, stream) }
        }

        /// Copies the slice to a new vector and waits for the copy; its size must be a
        /// multiple of `T`'s.
        #[doc(alias = "cuMemcpyDtoHAsync")]
        pub fn to_vec<T: Pod + Default>(&self, stream: &Stream) -> Result<Vec<T>> {
            self.span().to_vec(stream)
        }

        /// [`to_vec`](Self::to_vec), waiting at most `timeout` for the work it follows (on
        /// `stream`, and on the buffer's deallocation stream): past it,
        /// [`Error::Timeout`](crate::Error::Timeout) (see [`Buffer::to_vec_timeout`]).
        pub fn to_vec_timeout<T: Pod + Default>(
            &self,
            stream: &Stream,
            timeout: Duration,
        ) -> Result<Vec<T>> {
            self.span().to_vec_timeout(stream, timeout)
        }

        /// The slice's bytes as `bool`s (C++'s one-byte `bool`), waiting for the copy: see
        /// [`Buffer::to_vec_bools`].
        pub fn to_vec_bools(&self, stream: &Stream) -> Result<Vec<bool>> {
            self.span().to_vec_bools(stream)
        }

        /// A strided view of the slice's memory: `shape` and `strides` (in elements; `None`:
        /// compact row-major) from its first byte, every element checked to lie within the
        /// slice. See [`StridedView::new`].
        pub fn view<T: Pod>(
            &self,
            shape: &[usize],
            strides: Option<&[isize]>,
        ) -> Result<StridedView<'_, T>> {
            let span = self.span();
            StridedView::within(span.buffer, span.offset(), span.size, shape, strides)
        }
    };
}

/// The methods of slices that write, each over its span.
macro_rules! slice_writes {
    ($self:ty) => {
        /// Copies `src` (a buffer or a slice of the same size) into the slice, in order on
        /// `stream` (`cuMemcpyAsync`).
        #[doc(alias = "cuMemcpyAsync")]
        pub fn copy_from(self: $self, src: impl CopySource, stream: &Stream) -> Result<()> {
            sealed::Region::span(&src).copy_to(self.span(), stream, ("src", "self"))
        }

        /// Copies a host slice of the slice's size into it and waits for the copy.
        #[doc(alias = "cuMemcpyHtoDAsync")]
        pub fn copy_from_host<T: Pod>(self: $self, src: &[T], stream: &Stream) -> Result<()> {
            self.span().copy_from_host(src, stream)
        }

        /// Queues a copy of a host slice of the slice's size into it (`cuMemcpyHtoDAsync`).
        ///
        /// # Safety
        ///
        /// `src` must stay alive and unmodified until the copy is done.
        #[doc(alias = "cuMemcpyHtoDAsync")]
        pub unsafe fn copy_from_host_async<T: Pod>(
            self: $self,
            src: &[T],
            stream: &Stream,
        ) -> Result<()> {
            // SAFETY: the caller's promise.
            unsafe { self.span().copy_from_host_async(src, stream) }
        }

        /// Queues a copy of the raw device memory at `src` into the slice, as
        /// [`Buffer::copy_from_device_ptr`] does for a whole buffer.
        ///
        /// # Safety
        ///
        /// As for [`Buffer::copy_from_device_ptr`], for the slice's size.
        #[doc(alias = "cuMemcpyAsync")]
        pub unsafe fn copy_from_device_ptr(
            self: $self,
            src: DevicePtr,
            stream: &Stream,
        ) -> Result<()> {
            // SAFETY: the caller's promise.
            unsafe { self.span().copy_raw(src, true, stream) }
        }

        /// Copies `bool`s into the slice as bytes 0 and 1 and waits: see
        /// [`Buffer::copy_from_bools`].
        pub fn copy_from_bools(self: $self, src: &[bool], stream: &Stream) -> Result<()> {
            self.span().copy_from_bools(src, stream)
        }

        /// Fills the slice with a 1, 2 or 4-byte value, in order on `stream`
        /// (`cuMemsetD8Async`, `D16`, `D32`): `cudaMemsetAsync` of a range. Its size must be a
        /// multiple of the value's, and its address aligned to it.
        #[doc(alias("cuMemsetD8Async", "cuMemsetD16Async", "cuMemsetD32Async"))]
        pub fn fill<P: FillPattern>(self: $self, value: P, stream: &Stream) -> Result<()> {
            self.span().fill(value, stream)
        }
    };
}

impl<'a> BufferSlice<'a> {
    #[inline]
    fn span(&self) -> Span<'a> {
        self.span
    }

    slice_reads!();

    /// The sub-slice `range` (in bytes) of this slice.
    #[doc = range_doc!()]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<BufferSlice<'a>> {
        Ok(BufferSlice {
            span: self.span.sub(&range, 1)?,
        })
    }
}

impl<'a> BufferSliceMut<'a> {
    #[inline]
    fn span(&self) -> Span<'a> {
        self.span
    }

    slice_reads!();
    slice_writes!(&mut Self);

    /// This slice, read-only, for as long as it is borrowed.
    pub fn as_slice(&self) -> BufferSlice<'_> {
        BufferSlice { span: self.span }
    }

    /// The sub-slice `range` (in bytes) of this slice, borrowed uniquely.
    #[doc = range_doc!()]
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<BufferSliceMut<'_>> {
        Ok(BufferSliceMut {
            span: self.span.sub(&range, 1)?,
            _unique: PhantomData,
        })
    }
}

impl SharedSlice {
    #[inline]
    fn span(&self) -> Span<'_> {
        Span {
            buffer: &self.buffer,
            ptr: self.ptr,
            size: self.size,
            shared: true,
        }
    }

    slice_reads!();
    slice_writes!(&Self);

    /// The shared buffer.
    pub fn shared_buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The sub-slice `range` (in bytes) of this slice, sharing the buffer.
    #[doc = range_doc!()]
    pub fn shared_slice(&self, range: impl RangeBounds<usize>) -> Result<SharedSlice> {
        let span = self.span().sub(&range, 1)?;
        Ok(SharedSlice {
            ptr: span.ptr,
            size: span.size,
            buffer: Arc::clone(&self.buffer),
        })
    }
}

// What copies and fills take, by reference or (for the borrowed slices) by value.
macro_rules! region {
    ($($t:ty),*) => {$(
        impl sealed::Region for $t {
            #[inline]
            fn span(&self) -> Span<'_> {
                sealed::Region::span(&**self)
            }
        }
        impl CopySource for $t {}
    )*};
}
region!(
    &Buffer,
    &mut Buffer,
    &Arc<Buffer>,
    &BufferSlice<'_>,
    &BufferSliceMut<'_>
);
region!(&mut BufferSliceMut<'_>, &SharedSlice);
impl CopyDestination for &mut Buffer {}
impl CopyDestination for &mut BufferSliceMut<'_> {}
impl UniqueMemory for &mut Buffer {}
impl UniqueMemory for &mut BufferSliceMut<'_> {}
impl UniqueMemory for BufferSliceMut<'_> {}
impl CopyDestination for &Arc<Buffer> {}
impl CopyDestination for &SharedSlice {}

impl sealed::Region for Buffer {
    #[inline]
    fn span(&self) -> Span<'_> {
        Buffer::span(self)
    }
}

impl sealed::Region for BufferSlice<'_> {
    #[inline]
    fn span(&self) -> Span<'_> {
        self.span
    }
}
impl CopySource for BufferSlice<'_> {}

impl sealed::Region for BufferSliceMut<'_> {
    #[inline]
    fn span(&self) -> Span<'_> {
        self.span
    }
}
impl CopySource for BufferSliceMut<'_> {}
impl CopyDestination for BufferSliceMut<'_> {}

impl sealed::Region for Arc<Buffer> {
    #[inline]
    fn span(&self) -> Span<'_> {
        Span {
            shared: true,
            ..Buffer::span(self)
        }
    }
}
impl sealed::Kept for Arc<Buffer> {
    fn kept(&self) -> &Arc<Buffer> {
        self
    }
}
impl GraphMemory for Arc<Buffer> {}

impl sealed::Region for SharedSlice {
    #[inline]
    fn span(&self) -> Span<'_> {
        SharedSlice::span(self)
    }
}
impl sealed::Kept for SharedSlice {
    fn kept(&self) -> &Arc<Buffer> {
        &self.buffer
    }
}
impl GraphMemory for SharedSlice {}

// Kernel arguments: the address of the slice's first byte, ordered on its buffer's
// deallocation stream; a shared slice is graph memory too, kept by the graph.
crate::args::wrapper_arg!(BufferSlice<'_>);
crate::args::wrapper_arg!(BufferSliceMut<'_>);
crate::args::wrapper_arg!(SharedSlice);
impl crate::args::GraphArg for SharedSlice {}

impl crate::args::sealed::Arg for BufferSlice<'_> {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        super::buffer::buffer_arg(&self.span.ptr, self.span.buffer)
    }
}

impl crate::args::sealed::Arg for BufferSliceMut<'_> {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        super::buffer::buffer_arg(&self.span.ptr, self.span.buffer)
    }
}

impl crate::args::sealed::Arg for SharedSlice {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        super::buffer::buffer_arg(&self.ptr, &self.buffer)
    }

    fn buffer(&self) -> Option<&dyn std::any::Any> {
        Some(&self.buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn ranges_resolve_to_byte_offsets_and_sizes_within_the_size() {
        assert_eq!(resolve(&(..), 100, 1).unwrap(), (0, 100));
        assert_eq!(resolve(&(10..20), 100, 1).unwrap(), (10, 10));
        assert_eq!(resolve(&(10..=19), 100, 1).unwrap(), (10, 10));
        assert_eq!(resolve(&(90..), 100, 1).unwrap(), (90, 10));
        assert_eq!(resolve(&(100..), 100, 1).unwrap(), (100, 0));
        // In elements of 4 bytes: the end is the last whole element.
        assert_eq!(resolve(&(1..3), 100, 4).unwrap(), (4, 8));
        assert_eq!(resolve(&(..), 102, 4).unwrap(), (0, 100));
    }

    #[test]
    fn ranges_past_the_end_reversed_or_overflowing_are_refused() {
        let (twenty, ten) = (20, 10);
        for (range, why) in [
            (resolve(&(0..101), 100, 1), "past the end"),
            (resolve(&(101..), 100, 1), "after it ends"),
            (resolve(&(twenty..ten), 100, 1), "after it ends"),
            (resolve(&(0..=usize::MAX), 100, 1), "overflows"),
            (resolve(&(0..26), 100, 4), "past the end"),
            (resolve(&(0..usize::MAX / 2), 100, 4), "past the end"),
        ] {
            let e = range.unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }
}
