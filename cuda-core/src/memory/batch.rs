//! Many copies in one driver call: [`CopyBatch`] (`cuMemcpyBatchAsync`).

use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of_val;
use std::sync::atomic::{AtomicU64, Ordering};

use super::managed::MemoryLocation;
use super::{Buffer, Pod};
use crate::driver::{MemLocation, MemcpyAttributes};
use crate::error::{Error, Result};
use crate::order::in_stream_order;
use crate::stream::Stream;

/// How the copies of a batch may read their sources (`CUmemcpySrcAccessOrder`); the
/// destinations are always written in stream order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUmemcpySrcAccessOrder")]
pub enum SrcAccessOrder {
    /// In stream order, after the work queued before the batch (`_STREAM`): the default.
    #[default]
    Stream,
    /// Out of stream order, every read done before the submitting call returns
    /// (`_DURING_API_CALL`): for host memory that lives only through the call, which then
    /// needs no synchronisation. Earlier work on the stream must not be writing the source.
    DuringCall,
    /// Out of stream order, possibly after the call returns (`_ANY`): for host memory the
    /// driver did not allocate, which must then stay unchanged until the copy is done.
    /// Earlier work on the stream must not be writing the source.
    Any,
}

impl SrcAccessOrder {
    /// The `CUmemcpySrcAccessOrder` code.
    pub(crate) fn code(self) -> u32 {
        match self {
            SrcAccessOrder::Stream => 1,
            SrcAccessOrder::DuringCall => 2,
            SrcAccessOrder::Any => 3,
        }
    }
}

/// The attributes of copies in a [`CopyBatch`] (`CUmemcpyAttributes`): how the source is read,
/// where the operands are likely to be (hints the driver uses for managed memory and memory it
/// did not allocate, and ignores for the rest), and whether to prefer copy engines that
/// overlap with kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "CUmemcpyAttributes")]
pub struct CopyAttributes {
    /// How the source is read.
    pub src_access_order: SrcAccessOrder,
    /// Where the source probably is; `None` for no hint.
    pub src_location_hint: Option<MemoryLocation>,
    /// Where the destination probably is; `None` for no hint.
    pub dst_location_hint: Option<MemoryLocation>,
    /// `CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE`: let the copy overlap with kernels on the
    /// SMs where it can.
    pub prefer_overlap_with_compute: bool,
}

crate::options::chainers!(CopyAttributes {
    with_src_access_order(src_access_order: SrcAccessOrder);
    with_src_location_hint(src_location_hint: MemoryLocation) => some;
    with_dst_location_hint(dst_location_hint: MemoryLocation) => some;
    with_prefer_overlap_with_compute(prefer_overlap_with_compute: bool);
});

impl CopyAttributes {
    /// The attributes as the driver takes them.
    fn raw(&self) -> Result<MemcpyAttributes> {
        let hint = |hint: Option<MemoryLocation>, name| match hint {
            Some(location) => location.raw(name),
            None => Ok(MemLocation::NONE),
        };
        Ok(MemcpyAttributes {
            src_access_order: self.src_access_order.code(),
            src_hint: hint(self.src_location_hint, "attributes.src_location_hint")?,
            dst_hint: hint(self.dst_location_hint, "attributes.dst_location_hint")?,
            flags: u32::from(self.prefer_overlap_with_compute),
        })
    }
}

/// What one side of a batched copy is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Operand {
    Buffer,
    Host,
}

/// Many copies submitted in one driver call (`cuMemcpyBatchAsync`, drivers 12.8 and newer): a
/// list of copies between buffers (whole or in part) and host slices, each with its
/// [`CopyAttributes`], queued on one stream. The batch as a whole runs in stream order; its
/// copies run in no order among themselves, so no copy may write what another reads or writes.
///
/// Each copy is checked when added, before any driver call, and refused with
/// [`Error::InvalidArgument`] naming its index: a zero size, a range beyond its buffer, a
/// buffer the stream's device cannot reach. [`submit`](Self::submit) then refuses an empty
/// batch, the legacy default stream and a capturing stream (the driver takes neither, and has
/// no graph node of a batch), and copies whose destination overlaps another copy's source or
/// destination (or its own source), naming both. A batch can be submitted again, as built:
/// it is checked once.
///
/// Buffers keep the stream-order rules of every buffer operation: where a buffer's
/// deallocation stream is another stream than the batch's, the batch waits for the work
/// queued there so far, and that stream waits for the batch before its free.
///
/// A destination buffer is borrowed exclusively (`&mut Buffer`) for as long as the batch
/// lives, as every writer of a buffer is: [`destination`](Self::destination) hands the batch
/// the buffer once and gives back a [`BatchDestination`], which any number of the batch's copies
/// then write parts of (the overlap check keeps them apart), and
/// [`copy_within`](Self::copy_within) copies between parts of it. No other thread can then use
/// the buffer while the batch may write it. Sources are borrowed shared. Host slices are
/// borrowed for as long as the batch lives, and `submit` waits for the copies before
/// returning when the driver may still use host memory afterwards (see
/// [`submit`](Self::submit)).
///
/// ```no_run
/// use cuda_core::memory::CopyBatch;
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let memory = device.memory_resource()?;
/// let mut src = memory.allocate(64 * 1000, &stream)?;
/// let mut dst = memory.allocate(64 * 1000, &stream)?;
/// src.fill(7u8, &stream)?;
/// let mut batch = CopyBatch::with_capacity(&stream, 1000);
/// let to = batch.destination(&mut dst);
/// for i in 0..1000 {
///     // Copy i moves the 64 bytes at i * 64 to the mirrored place.
///     batch.copy(&src, i * 64, to, (999 - i) * 64, 64)?;
/// }
/// batch.submit()?;
/// drop(batch);
/// assert!(dst.to_vec::<u8>(&stream)?.iter().all(|&b| b == 7));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuMemcpyBatchAsync")]
pub struct CopyBatch<'a> {
    stream: &'a Stream,
    /// This batch's number, which its [`BatchDestination`]s carry.
    id: u64,
    /// The destination buffers, each borrowed `&'a mut` by [`CopyBatch::destination`].
    destinations: Vec<&'a Buffer>,
    dsts: Vec<u64>,
    srcs: Vec<u64>,
    sizes: Vec<usize>,
    attributes: Vec<MemcpyAttributes>,
    attribute_starts: Vec<usize>,
    current: CopyAttributes,
    current_raw: MemcpyAttributes,
    /// The deallocation streams of the buffers, once each.
    homes: Vec<&'a Stream>,
    /// Whether the driver may use host memory after the call (a host destination, or a host
    /// source not read during the call).
    host_after_call: bool,
    /// The first copy that reads a buffer out of stream order.
    unordered_buffer_read: Option<usize>,
    /// Whether the copies as they are now passed the overlap check.
    checked: bool,
    /// The buffers whose memory's access can change (memory used from another device, or
    /// host memory): checked again, within their access gates, when the batch is queued.
    gated: Vec<&'a Buffer>,
    /// The host slices are borrowed for `'a`.
    _host: PhantomData<&'a mut [u8]>,
}

/// A destination buffer of a [`CopyBatch`], which holds it borrowed exclusively
/// ([`CopyBatch::destination`]): it names the buffer in that batch's copies. A destination of
/// another batch is refused by the copy it is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchDestination {
    batch: u64,
    index: usize,
}

impl fmt::Debug for CopyBatch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopyBatch")
            .field("stream", self.stream)
            .field("copies", &self.sizes.len())
            .field("attribute_runs", &self.attributes.len())
            .finish()
    }
}

impl<'a> CopyBatch<'a> {
    /// An empty batch for `stream`, whose copies get the default [`CopyAttributes`] until
    /// [`set_attributes`](Self::set_attributes) changes them.
    pub fn new(stream: &'a Stream) -> CopyBatch<'a> {
        CopyBatch::with_capacity(stream, 0)
    }

    /// An empty batch with room for `copies` copies (or for none, where that much room cannot
    /// be had: the copies are then made room for as they come).
    pub fn with_capacity(stream: &'a Stream, copies: usize) -> CopyBatch<'a> {
        let current = CopyAttributes::default();
        // Numbers for batches; 2^64 of them are not made in a process's life.
        static BATCHES: AtomicU64 = AtomicU64::new(0);
        CopyBatch {
            stream,
            id: BATCHES.fetch_add(1, Ordering::Relaxed),
            destinations: Vec::new(),
            dsts: room_for(copies),
            srcs: room_for(copies),
            sizes: room_for(copies),
            attributes: Vec::new(),
            attribute_starts: Vec::new(),
            current,
            current_raw: MemcpyAttributes {
                src_access_order: current.src_access_order.code(),
                ..MemcpyAttributes::default()
            },
            homes: Vec::new(),
            host_after_call: false,
            unordered_buffer_read: None,
            checked: false,
            gated: Vec::new(),
            _host: PhantomData,
        }
    }

    /// The stream the batch is queued on.
    pub fn stream(&self) -> &'a Stream {
        self.stream
    }

    /// How many copies the batch holds.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether the batch holds no copy.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// How many runs of equal attributes the batch passes the driver (one entry each).
    pub fn attribute_runs(&self) -> usize {
        self.attributes.len()
    }

    /// The attributes the copies added from now on get. A host NUMA node beyond the driver's
    /// integer is [`Error::InvalidArgument`].
    pub fn set_attributes(&mut self, attributes: CopyAttributes) -> Result<&mut Self> {
        self.current_raw = attributes.raw()?;
        self.current = attributes;
        Ok(self)
    }

    /// The attributes copies added now get.
    pub fn attributes(&self) -> CopyAttributes {
        self.current
    }

    /// Takes `buffer` as a destination of this batch, borrowed exclusively for the batch's
    /// life: the [`BatchDestination`] names it in the batch's copies, as many as write disjoint
    /// parts of it.
    pub fn destination(&mut self, buffer: &'a mut Buffer) -> BatchDestination {
        let buffer: &'a Buffer = buffer;
        self.home(buffer);
        self.destinations.push(buffer);
        BatchDestination {
            batch: self.id,
            index: self.destinations.len() - 1,
        }
    }

    /// The buffer `dst` names; one of another batch is [`Error::InvalidArgument`].
    fn held(&self, dst: BatchDestination, name: &'static str) -> Result<&'a Buffer> {
        match self.destinations.get(dst.index) {
            Some(&buffer) if dst.batch == self.id => Ok(buffer),
            _ => Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "copy {}: a destination of another batch; take the buffer with this \
                     batch's destination()",
                    self.len()
                ),
            }),
        }
    }

    /// Adds a copy of `bytes` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    pub fn copy(
        &mut self,
        src: &'a Buffer,
        src_offset: usize,
        dst: BatchDestination,
        dst_offset: usize,
        bytes: usize,
    ) -> Result<&mut Self> {
        let index = self.len();
        let dst = self.held(dst, "dst")?;
        let src_ptr = self.buffer_part(src, src_offset, bytes, "src", index)?;
        let dst_ptr = self.buffer_part(dst, dst_offset, bytes, "dst", index)?;
        self.push(src_ptr, Operand::Buffer, dst_ptr, Operand::Buffer, bytes);
        self.home(src);
        Ok(self)
    }

    /// Adds a copy of `bytes` bytes from the destination `src` at `src_offset` to the
    /// destination `dst` at `dst_offset`: between parts of one buffer the batch holds (which
    /// must not overlap: [`submit`](Self::submit) refuses that, as any overlap), or between two.
    pub fn copy_within(
        &mut self,
        src: BatchDestination,
        src_offset: usize,
        dst: BatchDestination,
        dst_offset: usize,
        bytes: usize,
    ) -> Result<&mut Self> {
        let index = self.len();
        let src = self.held(src, "src")?;
        let dst = self.held(dst, "dst")?;
        let src_ptr = self.buffer_part(src, src_offset, bytes, "src", index)?;
        let dst_ptr = self.buffer_part(dst, dst_offset, bytes, "dst", index)?;
        self.push(src_ptr, Operand::Buffer, dst_ptr, Operand::Buffer, bytes);
        Ok(self)
    }

    /// Adds a copy of the whole of `src` to the whole of `dst`, which must be of its size and
    /// is taken as a [`destination`](Self::destination) of the batch (only where the sizes
    /// match).
    pub fn copy_whole(&mut self, src: &'a Buffer, dst: &'a mut Buffer) -> Result<&mut Self> {
        if src.size() != dst.size() {
            return Err(Error::InvalidArgument {
                name: "dst",
                reason: format!(
                    "copy {}: the source holds {} bytes and the destination {}; whole copies \
                     need equal sizes",
                    self.len(),
                    src.size(),
                    dst.size()
                ),
            });
        }
        let dst = self.destination(dst);
        self.copy(src, 0, dst, 0, src.size())
    }

    /// Adds a copy of the host slice `src` into `dst` at `dst_offset`.
    pub fn copy_from_host<T: Pod>(
        &mut self,
        src: &'a [T],
        dst: BatchDestination,
        dst_offset: usize,
    ) -> Result<&mut Self> {
        let index = self.len();
        let dst = self.held(dst, "dst")?;
        let bytes = host_bytes(size_of_val(src), "src", index)?;
        let dst_ptr = self.buffer_part(dst, dst_offset, bytes, "dst", index)?;
        self.push(
            src.as_ptr() as u64,
            Operand::Host,
            dst_ptr,
            Operand::Buffer,
            bytes,
        );
        Ok(self)
    }

    /// Adds a copy of `dst.len()` elements' bytes from `src` at `src_offset` into the host
    /// slice `dst`.
    pub fn copy_to_host<T: Pod>(
        &mut self,
        src: &'a Buffer,
        src_offset: usize,
        dst: &'a mut [T],
    ) -> Result<&mut Self> {
        let index = self.len();
        let bytes = host_bytes(size_of_val(dst), "dst", index)?;
        let src_ptr = self.buffer_part(src, src_offset, bytes, "src", index)?;
        self.push(
            src_ptr,
            Operand::Buffer,
            dst.as_mut_ptr() as u64,
            Operand::Host,
            bytes,
        );
        self.home(src);
        Ok(self)
    }

    /// The address of `bytes` bytes of `buffer` at `offset`, checked against its size and
    /// the stream's device.
    fn buffer_part(
        &mut self,
        buffer: &'a Buffer,
        offset: usize,
        bytes: usize,
        name: &'static str,
        index: usize,
    ) -> Result<u64> {
        if bytes == 0 {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: format!("copy {index}: a copy of zero bytes"),
            });
        }
        match offset.checked_add(bytes) {
            Some(end) if end <= buffer.size() => {}
            _ => {
                return Err(Error::InvalidArgument {
                    name,
                    reason: format!(
                        "copy {index}: {bytes} bytes at offset {offset} reach beyond the \
                         {}-byte buffer",
                        buffer.size()
                    ),
                })
            }
        }
        let reach = buffer
            .check_reachable(self.stream, name, true)
            .map_err(|e| at_copy(e, index))?;
        if reach.inside.is_some() && !self.gated.iter().any(|b| std::ptr::eq(*b, buffer)) {
            self.gated.push(buffer);
        }
        Ok(buffer.ptr().0 + offset as u64)
    }

    /// Appends a checked copy under the current attributes.
    fn push(&mut self, src: u64, src_is: Operand, dst: u64, dst_is: Operand, bytes: usize) {
        let index = self.len();
        let order = self.current.src_access_order;
        if src_is == Operand::Buffer
            && order != SrcAccessOrder::Stream
            && self.unordered_buffer_read.is_none()
        {
            self.unordered_buffer_read = Some(index);
        }
        if dst_is == Operand::Host
            || (src_is == Operand::Host && order != SrcAccessOrder::DuringCall)
        {
            self.host_after_call = true;
        }
        if self.attributes.last() != Some(&self.current_raw) {
            self.attributes.push(self.current_raw);
            self.attribute_starts.push(index);
        }
        self.srcs.push(src);
        self.dsts.push(dst);
        self.sizes.push(bytes);
        self.checked = false;
    }

    /// Notes a buffer's deallocation stream, once.
    fn home(&mut self, buffer: &'a Buffer) {
        let home = buffer.deallocation_stream();
        if !self.homes.iter().any(|h| h.same_as(home)) {
            self.homes.push(home);
        }
    }

    /// Queues the batch on its stream (`cuMemcpyBatchAsync`), and where the driver may use
    /// host memory after the call (a host destination, or a host source read otherwise than
    /// [`SrcAccessOrder::DuringCall`]) waits for the stream before returning, so that the host
    /// slices are free again. Batches of buffers only, or whose host sources are read during
    /// the call, return without waiting.
    ///
    /// Besides the checks of [`CopyBatch`], a buffer source read out of stream order
    /// ([`SrcAccessOrder::DuringCall`] or [`Any`](SrcAccessOrder::Any)) is refused: the driver
    /// would read it without waiting for the work queued before, its allocation among it. Use
    /// [`submit_async`](Self::submit_async) to take that on your word. Drivers older than 12.8
    /// answer [`Error::NotSupported`].
    #[doc(alias = "cuMemcpyBatchAsync")]
    pub fn submit(&mut self) -> Result<()> {
        if let Some(index) = self.unordered_buffer_read {
            return Err(Error::InvalidArgument {
                name: "attributes",
                reason: format!(
                    "copy {index} reads a buffer out of stream order, which may read it before \
                     the work queued before it (its allocation among it) is done; use \
                     SrcAccessOrder::Stream, or submit_async with that promise"
                ),
            });
        }
        // SAFETY: host memory the driver may use after the call is waited for below; buffer
        // sources are read in stream order (checked above).
        unsafe { self.queue()? };
        if self.host_after_call {
            self.stream.sync_for_host()?;
        }
        Ok(())
    }

    /// Queues the batch without waiting for it, whatever its memory, and takes buffer sources
    /// read out of stream order.
    ///
    /// # Safety
    ///
    /// The host slices of the batch must stay alive and, for destinations, unread and
    /// unwritten until the copies are done (synchronise the stream or an event recorded after
    /// it); a host source read with [`SrcAccessOrder::Any`] must stay unchanged as long. A
    /// buffer source read out of stream order must be allocated, and written by no work that
    /// may still run, when this is called (synchronise the streams that touched it first).
    #[doc(alias = "cuMemcpyBatchAsync")]
    pub unsafe fn submit_async(&mut self) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { self.queue() }
    }

    /// The checks of `submit`, then the driver call, with the buffers' streams ordered around
    /// it. Where the call fails and the driver may hold host memory, the stream is waited for
    /// anyway, so that nothing it queued before failing outlives the borrows.
    ///
    /// # Safety
    ///
    /// As for [`submit_async`](Self::submit_async), or the caller waits for the stream.
    unsafe fn queue(&mut self) -> Result<()> {
        self.check()?;
        let stream = self.stream;
        // Access may have been revoked since the copies were added: checked again, within
        // the access gates until the call has queued the work.
        let _reach = self
            .gated
            .iter()
            .map(|buffer| buffer.check_reachable(stream, "self", true))
            .collect::<Result<Vec<_>>>()?;
        let result = in_stream_order(&self.homes, stream, || {
            stream.queue_in_context(|driver, handle| {
                driver.memcpy_batch_async(
                    &self.dsts,
                    &self.srcs,
                    &self.sizes,
                    &self.attributes,
                    &self.attribute_starts,
                    handle,
                )
            })
        });
        if result.is_err() && self.host_after_call {
            if let Err(e) = stream.sync_for_host() {
                log::error!("synchronising after a failed copy batch: {e}");
            }
        }
        result
    }

    /// Refuses what the driver does not take, or runs in no defined order.
    fn check(&mut self) -> Result<()> {
        if self.is_empty() {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the batch holds no copy".to_owned(),
            });
        }
        if self.stream.is_legacy() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: "cuMemcpyBatchAsync does not take the legacy default stream; use a \
                         stream of your own or the per-thread default stream"
                    .to_owned(),
            });
        }
        if self.stream.capturing() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: "the stream is capturing, and a copy batch has no graph node; add the \
                         copies to the graph one by one"
                    .to_owned(),
            });
        }
        if !self.checked {
            check_overlaps(&self.dsts, &self.srcs, &self.sizes)?;
            self.checked = true;
        }
        Ok(())
    }
}

/// An empty vector with room for `n` values, or with none where that is more than can be had
/// (a capacity is a hint: `Vec::with_capacity` would panic).
fn room_for<T>(n: usize) -> Vec<T> {
    let mut v = Vec::new();
    // Refused room leaves the vector empty, as wanted.
    let _ = v.try_reserve_exact(n);
    v
}

/// The bytes of a host slice, which must not be empty.
fn host_bytes(bytes: usize, name: &'static str, index: usize) -> Result<usize> {
    if bytes == 0 {
        return Err(Error::InvalidArgument {
            name,
            reason: format!("copy {index}: an empty host slice"),
        });
    }
    Ok(bytes)
}

/// An error about one copy, with its index in the reason.
fn at_copy(e: Error, index: usize) -> Error {
    match e {
        Error::InvalidArgument { name, reason } => Error::InvalidArgument {
            name,
            reason: format!("copy {index}: {reason}"),
        },
        other => other,
    }
}

/// Refuses copies whose destination overlaps another copy's source or destination, or its
/// own source (sources may overlap each other): the copies of a batch run in no order. The
/// destinations and the sources are sorted by start apart (each in linear time where the copies
/// come in address order already, as they often do), then swept together in start order,
/// keeping the furthest end of the destinations and of the sources seen so far.
pub(crate) fn check_overlaps(dsts: &[u64], srcs: &[u64], sizes: &[usize]) -> Result<()> {
    // (start, end, copy), by start.
    let spans = |starts: &[u64]| {
        let mut spans: Vec<(u64, u64, usize)> = starts
            .iter()
            .zip(sizes)
            .enumerate()
            .map(|(i, (&start, &bytes))| (start, start.saturating_add(bytes as u64), i))
            .collect();
        spans.sort_unstable_by_key(|&(start, ..)| start);
        spans
    };
    let (dst_spans, src_spans) = (spans(dsts), spans(srcs));
    let (mut d, mut s) = (dst_spans.iter().peekable(), src_spans.iter().peekable());
    // The furthest end so far among the destinations and among the sources, and its copy.
    let mut dst_end: Option<(u64, usize)> = None;
    let mut src_end: Option<(u64, usize)> = None;
    loop {
        let is_dst = match (d.peek(), s.peek()) {
            (Some(dst), Some(src)) => dst.0 <= src.0,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return Ok(()),
        };
        let next = if is_dst { d.next() } else { s.next() };
        let Some(&(start, end, copy)) = next else {
            return Ok(());
        };
        if let Some((end_so_far, other)) = dst_end {
            if start < end_so_far {
                return Err(overlap(other, true, copy, is_dst));
            }
        }
        if is_dst {
            if let Some((end_so_far, other)) = src_end {
                if start < end_so_far {
                    return Err(overlap(other, false, copy, true));
                }
            }
        }
        let furthest = if is_dst { &mut dst_end } else { &mut src_end };
        if furthest.is_none_or(|(e, _)| end > e) {
            *furthest = Some((end, copy));
        }
    }
}

#[cold]
fn overlap(a: usize, a_is_dst: bool, b: usize, b_is_dst: bool) -> Error {
    let side = |is_dst| if is_dst { "destination" } else { "source" };
    let reason = if a == b {
        format!("copy {a}'s source and destination overlap")
    } else {
        format!(
            "copy {a}'s {} overlaps copy {b}'s {}; the copies of a batch run in no order, so \
             none may write what another reads or writes",
            side(a_is_dst),
            side(b_is_dst)
        )
    };
    Error::InvalidArgument {
        name: "copies",
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(copies: &[(u64, u64, usize)]) -> Result<()> {
        let dsts: Vec<u64> = copies.iter().map(|c| c.0).collect();
        let srcs: Vec<u64> = copies.iter().map(|c| c.1).collect();
        let sizes: Vec<usize> = copies.iter().map(|c| c.2).collect();
        check_overlaps(&dsts, &srcs, &sizes)
    }

    fn reason(result: Result<()>) -> String {
        match result {
            Err(Error::InvalidArgument {
                name: "copies",
                reason,
            }) => reason,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn disjoint_copies_and_shared_sources_pass_the_overlap_check() {
        // 1000 adjacent destinations, all reading one source span.
        let copies: Vec<(u64, u64, usize)> = (0..1000)
            .map(|i| (0x10_0000 + 64 * i, 0x20_0000, 64))
            .collect();
        spans(&copies).unwrap();
        // In reverse order, and touching end to start.
        let reversed: Vec<_> = copies.iter().rev().copied().collect();
        spans(&reversed).unwrap();
        spans(&[(100, 200, 100), (200, 300, 100)]).unwrap_err();
        spans(&[(100, 300, 100), (200, 400, 100)]).unwrap();
    }

    #[test]
    fn an_overlap_names_both_copies_and_sides() {
        // Two destinations overlapping by one byte.
        let r = reason(spans(&[
            (0x1000, 0x9000, 64),
            (0x5000, 0x9000, 8),
            (0x103f, 0xa000, 8),
        ]));
        assert!(
            r.contains("copy 0's destination overlaps copy 2's destination"),
            "{r}"
        );
        // A destination inside another copy's source, either way round in address order.
        let r = reason(spans(&[(0x1000, 0x2000, 64), (0x2010, 0x3000, 8)]));
        assert!(
            r.contains("copy 0's source overlaps copy 1's destination"),
            "{r}"
        );
        let r = reason(spans(&[(0x2010, 0x3000, 64), (0x1000, 0x2000, 64)]));
        assert!(
            r.contains("copy 1's source overlaps copy 0's destination")
                || r.contains("copy 0's destination overlaps copy 1's source"),
            "{r}"
        );
        // A copy onto itself, shifted.
        let r = reason(spans(&[(0x1008, 0x1000, 64)]));
        assert!(r.contains("copy 0's source and destination overlap"), "{r}");
        // A long early destination covering a later, short one.
        let r = reason(spans(&[
            (0x1000, 0x9000, 0x1000),
            (0x1100, 0xa000, 8),
            (0x3000, 0xb000, 8),
        ]));
        assert!(
            r.contains("copy 0's destination overlaps copy 1's destination"),
            "{r}"
        );
    }

    /// Whether any destination overlaps another copy's source or destination, or its own
    /// source, by comparing every pair.
    fn overlaps_by_pairs(copies: &[(u64, u64, usize)]) -> bool {
        let meet = |a: u64, m: usize, b: u64, n: usize| a < b + n as u64 && b < a + m as u64;
        copies.iter().enumerate().any(|(i, &(d, s, n))| {
            meet(d, n, s, n)
                || copies
                    .iter()
                    .enumerate()
                    .any(|(j, &(e, t, m))| i != j && (meet(d, n, e, m) || meet(d, n, t, m)))
        })
    }

    proptest::proptest! {
        #[test]
        fn the_overlap_check_agrees_with_comparing_every_pair(
            copies in proptest::collection::vec((0u64..400, 0u64..400, 1usize..40), 1..12)
        ) {
            proptest::prop_assert_eq!(spans(&copies).is_err(), overlaps_by_pairs(&copies));
        }
    }

    #[test]
    fn room_beyond_what_can_be_had_is_none_rather_than_a_panic() {
        assert!(room_for::<u64>(100).capacity() >= 100);
        for n in [usize::MAX, usize::MAX / 8 + 1, isize::MAX as usize] {
            let v = room_for::<u64>(n);
            assert_eq!((v.len(), v.capacity()), (0, 0), "{n}");
        }
    }

    #[test]
    fn attributes_have_the_driver_codes() {
        let raw = CopyAttributes::default().raw().unwrap();
        assert_eq!(
            raw,
            MemcpyAttributes {
                src_access_order: 1,
                src_hint: MemLocation::NONE,
                dst_hint: MemLocation::NONE,
                flags: 0
            }
        );
        let raw = CopyAttributes::default()
            .with_src_access_order(SrcAccessOrder::DuringCall)
            .with_src_location_hint(MemoryLocation::Host)
            .with_dst_location_hint(MemoryLocation::HostNuma(1))
            .with_prefer_overlap_with_compute(true)
            .raw()
            .unwrap();
        assert_eq!(raw.src_access_order, 2);
        assert_eq!(raw.src_hint, MemLocation { kind: 2, id: 0 });
        assert_eq!(raw.dst_hint, MemLocation { kind: 3, id: 1 });
        assert_eq!(raw.flags, 1);
        assert_eq!(SrcAccessOrder::Any.code(), 3);
        let err = CopyAttributes::default()
            .with_dst_location_hint(MemoryLocation::HostNuma(u32::MAX))
            .raw()
            .unwrap_err();
        assert!(matches!(
            err,
            Error::InvalidArgument {
                name: "attributes.dst_location_hint",
                ..
            }
        ));
    }
}
