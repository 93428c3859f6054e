//! Sub-buffers: a byte range of a [`Buffer`], borrowed ([`BufferSlice`], [`BufferSliceMut`]) or
//! shared through an `Arc` ([`SharedSlice`]), accepted wherever a buffer is; and the ends of
//! copies and graph nodes that buffers and slices are ([`CopySource`], [`CopyDestination`],
//! [`GraphMemory`], [`UniqueMemory`]). Each slice's operations are its [`Span`]'s.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Duration;

use super::buffer::{Buffer, FillPattern, Pod};
use super::span::Span;
use super::DevicePtr;
use crate::error::Result;
use crate::stream::Stream;
use crate::view::StridedView;

pub(crate) mod sealed {
    use super::{Buffer, Span};

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

/// Checks `range` against this many bytes: `start <= end <= len`.
macro_rules! range_doc {
    () => {
        "Refused ([`Error::InvalidArgument`](crate::Error::InvalidArgument)) where the range \
         ends past the end or starts after it ends."
    };
}

/// How a split treats `mid`.
macro_rules! split_doc {
    () => {
        "Refused ([`Error::InvalidArgument`](crate::Error::InvalidArgument) named `mid`) where \
         `mid` is past the end. At either end (`mid` 0, or the size) one half is empty: a slice \
         of no bytes at the cut's address, as an empty range gives (`slice(size..)`), which \
         copies and fills take as they take any slice."
    };
}

/// A half of a split: a unique borrow of `span`, which the caller has made of a unique
/// borrow (of a buffer or a slice) that no other half overlaps.
fn unique(span: Span<'_>) -> BufferSliceMut<'_> {
    BufferSliceMut {
        span,
        _unique: PhantomData,
    }
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

    /// The buffer cut in two at byte `mid`, read-only: bytes `..mid` and `mid..`, as
    /// [`slice`](Buffer::slice) would give them. See [`split_at_mut`](Buffer::split_at_mut).
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(64, &stream)?;
    /// let (head, tail) = buffer.split_at(16)?;
    /// assert_eq!((head.size(), tail.size()), (16, 48));
    /// assert_eq!(tail.ptr().0, buffer.ptr().0 + 16);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn split_at(&self, mid: usize) -> Result<(BufferSlice<'_>, BufferSlice<'_>)> {
        let (head, tail) = self.span().split_at(mid, 1)?;
        Ok((BufferSlice { span: head }, BufferSlice { span: tail }))
    }

    /// The buffer cut in two at byte `mid`, each half borrowed uniquely: bytes `..mid` and
    /// `mid..`, two [`BufferSliceMut`]s usable at once (`slice.split_at_mut(mid)` in Rust, `d`
    /// and `d + mid` in CUDA C). Each half is what [`slice_mut`](Buffer::slice_mut) gives for
    /// its range: a kernel argument (both may be arguments of one launch), a copy source and
    /// destination (one half may be copied into the other), a fill target, each kept in the
    /// buffer's stream order. Split a half again with [`BufferSliceMut::split_at_mut`].
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(8, &stream)?;
    /// let (mut front, mut back) = buffer.split_at_mut(4)?;
    /// front.copy_from_host(&[1u8, 2, 3, 4], &stream)?;
    /// back.copy_from(&front, &stream)?; // one half into the other: they share no byte
    /// assert_eq!(buffer.to_vec::<u8>(&stream)?, [1, 2, 3, 4, 1, 2, 3, 4]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// The halves borrow the buffer: it cannot be used while one lives,
    ///
    /// ```compile_fail,E0499
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(8, &stream)?;
    /// let (mut front, _back) = buffer.split_at_mut(4)?;
    /// buffer.fill(0u8, &stream)?; // a write over both halves' bytes
    /// front.fill(1u8, &stream)?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// nor be dropped (its memory freed) while one lives,
    ///
    /// ```compile_fail,E0505
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(8, &stream)?;
    /// let (_front, mut back) = buffer.split_at_mut(4)?;
    /// drop(buffer);
    /// back.fill(1u8, &stream)?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// and a half cannot be split into pieces that overlap the other half: the pieces borrow
    /// the half they come from, so a second split of the buffer waits for them all.
    ///
    /// ```compile_fail,E0499
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(8, &stream)?;
    /// let (mut front, _back) = buffer.split_at_mut(4)?;
    /// let (_whole, mut again) = buffer.split_at_mut(2)?; // bytes 2..8 overlap `front`
    /// front.fill(1u8, &stream)?;
    /// again.fill(2u8, &stream)?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "split_at")]
    pub fn split_at_mut(&mut self, mid: usize) -> Result<(BufferSliceMut<'_>, BufferSliceMut<'_>)> {
        let (head, tail) = self.span().split_at(mid, 1)?;
        Ok((unique(head), unique(tail)))
    }

    /// [`split_at`](Buffer::split_at) at element `mid` of `T` (byte `mid * size_of::<T>()`).
    /// The buffer must hold a whole number of `T` (else
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) named `T`), so that both
    /// halves do.
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(10 * 4, &stream)?;
    /// let (head, tail) = buffer.split_at_of::<u32>(3)?;
    /// assert_eq!((head.size(), tail.offset()), (12, 12));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn split_at_of<T: Pod>(&self, mid: usize) -> Result<(BufferSlice<'_>, BufferSlice<'_>)> {
        let (head, tail) = self.span().split_at_of::<T>(mid)?;
        Ok((BufferSlice { span: head }, BufferSlice { span: tail }))
    }

    /// [`split_at_mut`](Buffer::split_at_mut) at element `mid` of `T`, as
    /// [`split_at_of`](Buffer::split_at_of).
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(4 * 4, &stream)?;
    /// let (mut low, mut high) = buffer.split_at_of_mut::<u32>(1)?;
    /// low.fill(7u32, &stream)?;
    /// high.fill(9u32, &stream)?;
    /// assert_eq!(buffer.to_vec::<u32>(&stream)?, [7, 9, 9, 9]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn split_at_of_mut<T: Pod>(
        &mut self,
        mid: usize,
    ) -> Result<(BufferSliceMut<'_>, BufferSliceMut<'_>)> {
        let (head, tail) = self.span().split_at_of::<T>(mid)?;
        Ok((unique(head), unique(tail)))
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

    /// This slice cut in two at byte `mid` (of the slice): its bytes `..mid` and `mid..`.
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(64, &stream)?;
    /// let (head, tail) = buffer.slice(16..)?.split_at(8)?;
    /// assert_eq!((head.offset(), tail.offset(), tail.size()), (16, 24, 40));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn split_at(&self, mid: usize) -> Result<(BufferSlice<'a>, BufferSlice<'a>)> {
        let (head, tail) = self.span.split_at(mid, 1)?;
        Ok((BufferSlice { span: head }, BufferSlice { span: tail }))
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

    /// This slice cut in two at byte `mid` (of the slice), each half borrowed uniquely for as
    /// long as this slice is: its bytes `..mid` and `mid..`, as
    /// [`Buffer::split_at_mut`] gives a buffer's (kernel arguments, copy ends and fill
    /// targets at once, in the buffer's stream order). To keep the halves as long as the
    /// buffer's borrow instead, see [`into_split_at_mut`](Self::into_split_at_mut).
    #[doc = split_doc!()]
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(12, &stream)?;
    /// let (mut a, mut rest) = buffer.split_at_mut(4)?;
    /// let (mut b, mut c) = rest.split_at_mut(4)?; // thirds: bytes 0..4, 4..8, 8..12
    /// a.fill(1u8, &stream)?;
    /// b.fill(2u8, &stream)?;
    /// c.fill(3u8, &stream)?;
    /// assert_eq!(buffer.to_vec::<u8>(&stream)?, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn split_at_mut(&mut self, mid: usize) -> Result<(BufferSliceMut<'_>, BufferSliceMut<'_>)> {
        let (head, tail) = self.span.split_at(mid, 1)?;
        Ok((unique(head), unique(tail)))
    }

    /// [`split_at_mut`](Self::split_at_mut), taking this slice: the halves borrow the buffer
    /// for as long as it did (`<&mut [T]>::split_at_mut` in Rust), so that a slice can be cut
    /// into many pieces in a loop. Refused as `split_at_mut` is; the slice is gone either way.
    ///
    /// ```no_run
    /// use cuda_core::memory::BufferSliceMut;
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut buffer = device.memory_resource()?.allocate(4 * 256, &stream)?;
    /// // Four quarters, each filled with its number.
    /// let mut rest = buffer.slice_mut(..)?;
    /// let mut quarters: Vec<BufferSliceMut<'_>> = Vec::new();
    /// for _ in 0..3 {
    ///     let (quarter, tail) = rest.into_split_at_mut(256)?;
    ///     quarters.push(quarter);
    ///     rest = tail;
    /// }
    /// quarters.push(rest);
    /// for (i, quarter) in quarters.iter_mut().enumerate() {
    ///     quarter.fill(i as u8, &stream)?;
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn into_split_at_mut(self, mid: usize) -> Result<(BufferSliceMut<'a>, BufferSliceMut<'a>)> {
        let (head, tail) = self.span.split_at(mid, 1)?;
        Ok((unique(head), unique(tail)))
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
