//! [`Span`]: a byte range of a buffer, and every operation on a buffer, written once over it:
//! the buffer's own methods are its whole span's, a slice's are its range's. A span keeps its
//! buffer's stream order (its home is the buffer's deallocation stream) and its access checks
//! (the buffer's resource decides which devices reach it).

use std::mem::size_of_val;
use std::ops::{Bound, RangeBounds};
use std::time::Duration;

use super::buffer::{Buffer, FillPattern, Pod};
use super::DevicePtr;
use crate::error::{Error, Result};
use crate::stream::Stream;

/// A byte range of a buffer: the buffer (for its stream order, its resource's access checks,
/// and what keeps the memory allocated) and the range's address and size. The range lies
/// within the buffer: only [`Buffer::span`](Buffer) and [`Span::sub`] make one.
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
    pub(crate) fn sub_of<T>(self, range: &impl RangeBounds<usize>) -> Result<Span<'a>> {
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

    /// This span cut at `mid` (in bytes, or elements of `unit` bytes): the bytes before it and
    /// those from it on, which together are the whole span and share no byte. `mid` past the
    /// end is refused; at either end, one half is empty (at the cut's address).
    pub(crate) fn split_at(self, mid: usize, unit: usize) -> Result<(Span<'a>, Span<'a>)> {
        let cut = match mid.checked_mul(unit) {
            Some(cut) if cut <= self.size => cut,
            _ => {
                return Err(invalid(
                    "mid",
                    format!(
                        "{mid} is past the end of {} {}",
                        self.size / unit,
                        if unit == 1 { "bytes" } else { "elements" }
                    ),
                ))
            }
        };
        let at = |ptr: u64, size: usize| Span { ptr, size, ..self };
        Ok((
            at(self.ptr, cut),
            at(self.ptr + cut as u64, self.size - cut),
        ))
    }

    /// [`split_at`](Self::split_at) in elements of `T`: the span must hold a whole, aligned
    /// number of them, so that both halves do too.
    pub(crate) fn split_at_of<T>(self, mid: usize) -> Result<(Span<'a>, Span<'a>)> {
        let width = std::mem::size_of::<T>();
        if width == 0 {
            return Err(invalid(
                "T",
                format!("{} has no size", std::any::type_name::<T>()),
            ));
        }
        elements::<T>(self.ptr, self.size)?;
        self.split_at(mid, width)
    }

    /// The offset of this span's first byte in its buffer.
    pub(crate) fn offset(&self) -> usize {
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
                stream.is_done_relaxed()
            })?;
            return Ok(Vec::new());
        }
        let start = std::time::Instant::now();
        // The scratch stream and memory are the crate's, not the caller's: made, used and let
        // go with this thread's capture mode relaxed (whether or not a capture seems open: one
        // may begin meanwhile), so that another thread's global capture neither refuses their
        // allocation (a stream-ordered allocation is a call it forbids) nor is invalidated by
        // it. Nothing of it is queued on a capturing stream (`stream` is not one; the ordering
        // with the memory's deallocation stream refuses a capturing one).
        let driver = stream.driver_and_context().0;
        crate::order::relaxed(driver, || {
            self.to_vec_through_scratch(stream, len, timeout, start)
        })
    }

    /// [`Span::to_vec_timeout`]'s copy through scratch memory on a stream of its own.
    fn to_vec_through_scratch<T: Pod + Default>(
        self,
        stream: &Stream,
        len: usize,
        timeout: Duration,
        start: std::time::Instant,
    ) -> Result<Vec<T>> {
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
