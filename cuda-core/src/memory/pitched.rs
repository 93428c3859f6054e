//! Memory laid out in rows ([`PitchedBuffer`], `cuMemAllocPitch`), and 2D and 3D copies
//! between it, buffers and host slices ([`copy_2d`], [`copy_3d`]).

use std::fmt;
use std::mem::size_of_val;

use super::{Buffer, DevicePtr, FillPattern, Pod};
use crate::device::Device;
use crate::driver::{PitchedCopy, PitchedMemory, PitchedSide};
use crate::error::{Error, Result};
use crate::order::in_stream_order;
use crate::stream::Stream;

/// Device memory laid out in rows (`cuMemAllocPitch`): `height` rows of `width` bytes per
/// slice, `depth` slices, each row starting `pitch` bytes after the one before (the driver
/// picks the pitch, at least `width`, so that rows are aligned for fast 2D copies and texture
/// reads). Copy to and from it with [`copy_2d`] and [`copy_3d`], or whole with
/// [`copy_from_host`](Self::copy_from_host) and [`copy_to_host`](Self::copy_to_host).
///
/// The allocation is synchronous, in the stream's context; the buffer is freed when dropped,
/// after the work queued on its deallocation stream (the allocation stream unless changed),
/// which work on other streams is ordered before, as for a [`Buffer`].
///
/// ```no_run
/// use cuda_core::memory::{copy_2d, CopyRegion, PitchedBuffer, PitchedDst, PitchedSrc};
/// use cuda_core::{Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// // 100 rows of 30 f32 values.
/// let mut image = PitchedBuffer::new(&stream, 30 * 4, 100, 4)?;
/// assert!(image.pitch() >= 120);
/// let rows: Vec<f32> = (0..3000).map(|i| i as f32).collect();
/// image.copy_from_host(&rows, &stream)?;
/// // Rows 10 to 19, values 5 to 14 of each, back to the host, packed.
/// let mut part = vec![0f32; 100];
/// copy_2d(
///     PitchedSrc::from(&image),
///     PitchedDst::host(&mut part, 10 * 4, 10),
///     &CopyRegion::new(10 * 4, 10).with_src_origin([5 * 4, 10, 0]),
///     &stream,
/// )?;
/// assert_eq!(part[0], 305.0);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("cuMemAllocPitch", "CUDA_MEMCPY2D"))]
pub struct PitchedBuffer {
    ptr: u64,
    pitch: usize,
    width: usize,
    height: usize,
    depth: usize,
    stream: Stream,
}

impl fmt::Debug for PitchedBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PitchedBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("pitch", &self.pitch)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("depth", &self.depth)
            .field("device", &self.stream.device().ordinal())
            .finish()
    }
}

impl Drop for PitchedBuffer {
    fn drop(&mut self) {
        let freed = self.stream.sync_for_host().and_then(|()| {
            self.stream
                .context()
                .with_current(|driver| crate::order::relaxed(driver, || driver.mem_free(self.ptr)))
        });
        if let Err(e) = freed {
            log::error!(
                "freeing a pitched buffer of {} bytes (left allocated): {e}",
                self.size()
            );
        }
    }
}

impl PitchedBuffer {
    /// `height` rows of `width` bytes, whose elements are `element_bytes` wide (4, 8 or 16:
    /// the driver aligns rows for that access size); on `stream`'s device, freed on `stream`.
    /// A zero size, a row wider than the device's largest pitch, more bytes than the device has
    /// and a capturing stream are [`Error::InvalidArgument`], before the driver.
    #[doc(alias = "cuMemAllocPitch")]
    pub fn new(
        stream: &Stream,
        width: usize,
        height: usize,
        element_bytes: u32,
    ) -> Result<PitchedBuffer> {
        PitchedBuffer::new_3d(stream, width, height, 1, element_bytes)
    }

    /// `depth` slices of `height` rows of `width` bytes (one allocation of `height * depth`
    /// rows), as for [`new`](Self::new).
    #[doc(alias = "cuMemAllocPitch")]
    pub fn new_3d(
        stream: &Stream,
        width: usize,
        height: usize,
        depth: usize,
        element_bytes: u32,
    ) -> Result<PitchedBuffer> {
        if !matches!(element_bytes, 4 | 8 | 16) {
            return Err(Error::InvalidArgument {
                name: "element_bytes",
                reason: format!("{element_bytes}: cuMemAllocPitch takes 4, 8 or 16"),
            });
        }
        for (name, value) in [("width", width), ("height", height), ("depth", depth)] {
            if value == 0 {
                return Err(Error::InvalidArgument {
                    name,
                    reason: format!(
                        "cannot be zero: a {width} x {height} x {depth} allocation holds nothing"
                    ),
                });
            }
        }
        if stream.capturing() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: "it is capturing, and cuMemAllocPitch is not a call a capture takes (the \
                         driver would refuse it and invalidate the capture)"
                    .to_owned(),
            });
        }
        let max_pitch = max_pitch(stream.device())?;
        if width > max_pitch {
            return Err(Error::InvalidArgument {
                name: "width",
                reason: format!(
                    "{width} bytes per row is more than device {}'s largest pitch ({max_pitch})",
                    stream.device().ordinal()
                ),
            });
        }
        let rows = height
            .checked_mul(depth)
            .ok_or_else(|| Error::InvalidArgument {
                name: "depth",
                reason: format!("{height} rows times {depth} slices overflows"),
            })?;
        let total = stream.device().total_memory()?;
        if width.checked_mul(rows).is_none_or(|bytes| bytes > total) {
            return Err(Error::InvalidArgument {
                name: "height",
                reason: format!(
                    "{rows} rows of {width} bytes are more than device {} has ({total} bytes)",
                    stream.device().ordinal()
                ),
            });
        }
        let (ptr, pitch) = stream
            .context()
            .with_current(|driver| driver.mem_alloc_pitch(width, rows, element_bytes))?;
        Ok(PitchedBuffer {
            ptr,
            pitch,
            width,
            height,
            depth,
            stream: stream.clone(),
        })
    }

    /// The address of the first row.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The bytes from one row to the next (at least [`width`](Self::width)).
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// The bytes of each row that hold data.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The rows of each slice.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The slices (1 for a 2D allocation).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The bytes allocated: `pitch * height * depth`.
    pub fn size(&self) -> usize {
        self.pitch * self.height * self.depth
    }

    /// The device of the memory.
    pub fn device(&self) -> Device {
        self.stream.device()
    }

    /// The stream the buffer will be freed on.
    pub fn deallocation_stream(&self) -> &Stream {
        &self.stream
    }

    /// Frees the buffer on `stream` instead, ordered after the work queued on the old
    /// deallocation stream so far.
    #[doc(alias = "cuStreamWaitEvent")]
    pub fn set_deallocation_stream(&mut self, stream: &Stream) -> Result<()> {
        stream.wait_for(&self.stream)?;
        self.stream = stream.clone();
        Ok(())
    }

    /// The whole extent, `width` bytes by `height` rows by `depth` slices.
    fn extent(&self) -> CopyRegion {
        CopyRegion::new_3d(self.width, self.height, self.depth)
    }

    /// Copies packed rows from the host (`width` bytes each, `height * depth` of them: `src`
    /// must hold exactly that) into the buffer, and waits for the copy
    /// (`cuMemcpy3DAsync`).
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.packed(size_of_val(src), "src")?;
        let (width, height) = (self.width, self.height);
        let region = self.extent();
        copy_3d(
            PitchedSrc::host(src, width, height),
            PitchedDst::from(self),
            &region,
            stream,
        )
    }

    /// Copies the buffer's rows into packed rows on the host (`dst` must hold exactly
    /// `width * height * depth` bytes), and waits for the copy (`cuMemcpy3DAsync`).
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.packed(size_of_val(dst), "dst")?;
        copy_3d(
            PitchedSrc::from(self),
            PitchedDst::host(dst, self.width, self.height),
            &self.extent(),
            stream,
        )
    }

    /// The buffer's rows, packed, as a new vector (`width` must be a multiple of `T`'s size).
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn to_vec<T: Pod + Default>(&self, stream: &Stream) -> Result<Vec<T>> {
        let width = std::mem::size_of::<T>().max(1);
        let bytes = self.width * self.height * self.depth;
        if self.width % width != 0 {
            return Err(Error::InvalidArgument {
                name: "T",
                reason: format!(
                    "rows of {} bytes are not a whole number of {width}-byte values",
                    self.width
                ),
            });
        }
        let mut out = vec![T::default(); bytes / width];
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }

    /// Fills every row's `width` bytes with a 1, 2 or 4-byte value (`cuMemsetD2D8Async`,
    /// `D16`, `D32`), in order on `stream`, leaving the padding at each row's end as it was:
    /// `cudaMemset2DAsync`. The width must be a multiple of the value's size.
    ///
    /// ```no_run
    /// use cuda_core::memory::PitchedBuffer;
    /// use cuda_core::{Device, StreamOptions};
    ///
    /// let stream = Device::new(0)?.create_stream(StreamOptions::default())?;
    /// let mut image = PitchedBuffer::new(&stream, 64 * 4, 32, 4)?;
    /// image.fill(1.0f32.to_bits(), &stream)?;
    /// assert!(image.to_vec::<f32>(&stream)?.iter().all(|&x| x == 1.0));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias(
        "cuMemsetD2D8Async",
        "cuMemsetD2D16Async",
        "cuMemsetD2D32Async",
        "cudaMemset2DAsync"
    ))]
    pub fn fill<P: FillPattern>(&mut self, value: P, stream: &Stream) -> Result<()> {
        let size = std::mem::size_of::<P>();
        if self.width % size != 0 {
            return Err(Error::InvalidArgument {
                name: "value",
                reason: format!(
                    "a {size}-byte pattern does not tile rows of {} bytes",
                    self.width
                ),
            });
        }
        if stream.device() != self.device() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "the buffer is of device {}, the stream of device {}",
                    self.device().ordinal(),
                    stream.device().ordinal()
                ),
            });
        }
        let (ptr, pitch) = (self.ptr, self.pitch);
        let (width, rows) = (self.width / size, self.height * self.depth);
        let pattern = crate::memory::buffer::pattern_of(value);
        crate::order::in_stream_order(&[&self.stream], stream, || {
            stream.queue_in_context(|driver, handle| {
                driver.memset_2d_async(ptr, pitch, (pattern, size), (width, rows), handle)
            })
        })
    }

    /// The address field, for passing the buffer as a kernel argument.
    pub(crate) fn ptr_ref(&self) -> &u64 {
        &self.ptr
    }

    fn packed(&self, bytes: usize, name: &'static str) -> Result<()> {
        let wanted = self.width * self.height * self.depth;
        if bytes == wanted {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            name,
            reason: format!(
                "it holds {bytes} bytes, and the buffer's rows packed are {wanted} ({} x {} x {})",
                self.width, self.height, self.depth
            ),
        })
    }
}

/// The largest pitch the device's copies take.
fn max_pitch(device: Device) -> Result<usize> {
    Ok(device.properties().max_pitch()? as usize)
}

/// The source of a 2D or 3D copy: a [`PitchedBuffer`], or a buffer or host slice seen as rows
/// of `pitch` bytes, `height` rows to a slice.
#[derive(Clone, Copy)]
pub struct PitchedSrc<'a> {
    memory: SrcMemory<'a>,
    pitch: usize,
    height: usize,
}

#[derive(Clone, Copy)]
enum SrcMemory<'a> {
    Pitched(&'a PitchedBuffer),
    Buffer(&'a Buffer),
    Host(&'a [u8]),
}

impl fmt::Debug for PitchedSrc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.memory {
            SrcMemory::Pitched(_) => "pitched buffer",
            SrcMemory::Buffer(_) => "buffer",
            SrcMemory::Host(_) => "host",
        };
        f.debug_struct("PitchedSrc")
            .field("memory", &kind)
            .field("pitch", &self.pitch)
            .field("height", &self.height)
            .finish()
    }
}

impl<'a> PitchedSrc<'a> {
    /// A buffer as rows of `pitch` bytes, `height` rows to a slice.
    pub fn buffer(buffer: &'a Buffer, pitch: usize, height: usize) -> PitchedSrc<'a> {
        PitchedSrc {
            memory: SrcMemory::Buffer(buffer),
            pitch,
            height,
        }
    }

    /// A host slice as rows of `pitch` bytes, `height` rows to a slice.
    pub fn host<T: Pod>(data: &'a [T], pitch: usize, height: usize) -> PitchedSrc<'a> {
        PitchedSrc {
            memory: SrcMemory::Host(pod_bytes(data)),
            pitch,
            height,
        }
    }
}

impl<'a> From<&'a PitchedBuffer> for PitchedSrc<'a> {
    fn from(buffer: &'a PitchedBuffer) -> PitchedSrc<'a> {
        PitchedSrc {
            memory: SrcMemory::Pitched(buffer),
            pitch: buffer.pitch,
            height: buffer.height,
        }
    }
}

/// The destination of a 2D or 3D copy: a [`PitchedBuffer`], or a buffer or host slice seen as
/// rows of `pitch` bytes, `height` rows to a slice.
pub struct PitchedDst<'a> {
    memory: DstMemory<'a>,
    pitch: usize,
    height: usize,
}

enum DstMemory<'a> {
    Pitched(&'a mut PitchedBuffer),
    Buffer(&'a mut Buffer),
    Host(&'a mut [u8]),
}

impl fmt::Debug for PitchedDst<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.memory {
            DstMemory::Pitched(_) => "pitched buffer",
            DstMemory::Buffer(_) => "buffer",
            DstMemory::Host(_) => "host",
        };
        f.debug_struct("PitchedDst")
            .field("memory", &kind)
            .field("pitch", &self.pitch)
            .field("height", &self.height)
            .finish()
    }
}

impl<'a> PitchedDst<'a> {
    /// A buffer as rows of `pitch` bytes, `height` rows to a slice.
    pub fn buffer(buffer: &'a mut Buffer, pitch: usize, height: usize) -> PitchedDst<'a> {
        PitchedDst {
            memory: DstMemory::Buffer(buffer),
            pitch,
            height,
        }
    }

    /// A host slice as rows of `pitch` bytes, `height` rows to a slice.
    pub fn host<T: Pod>(data: &'a mut [T], pitch: usize, height: usize) -> PitchedDst<'a> {
        PitchedDst {
            memory: DstMemory::Host(pod_bytes_mut(data)),
            pitch,
            height,
        }
    }
}

impl<'a> From<&'a mut PitchedBuffer> for PitchedDst<'a> {
    fn from(buffer: &'a mut PitchedBuffer) -> PitchedDst<'a> {
        let (pitch, height) = (buffer.pitch, buffer.height);
        PitchedDst {
            memory: DstMemory::Pitched(buffer),
            pitch,
            height,
        }
    }
}

/// Plain data as its bytes.
fn pod_bytes<T: Pod>(data: &[T]) -> &[u8] {
    // SAFETY: `Pod` types have no padding, so every byte of the slice is initialised; `u8` has
    // no alignment; the length is the slice's size in bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

/// Plain data as its bytes, writable.
fn pod_bytes_mut<T: Pod>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `pod_bytes`; any bytes written are a valid `T` (`Pod`), and the borrow is
    // unique.
    unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), size_of_val(data)) }
}

/// Where a 2D or 3D copy reads and writes, and how much: `src_origin` and `dst_origin` are the
/// first byte of a row (`x`), the first row of a slice (`y`) and the first slice (`z`) on each
/// side; `extent` is the bytes of each row, the rows of each slice and the slices copied. A 2D
/// copy takes `z` 0 and a depth of 1.
///
/// ```
/// use cuda_core::memory::CopyRegion;
///
/// let region = CopyRegion::new(64, 8).with_dst_origin([128, 2, 0]);
/// assert_eq!(region.extent, [64, 8, 1]);
/// assert_eq!(region.src_origin, [0, 0, 0]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CopyRegion {
    /// `[x in bytes, y in rows, z in slices]` of the source.
    pub src_origin: [usize; 3],
    /// `[x in bytes, y in rows, z in slices]` of the destination.
    pub dst_origin: [usize; 3],
    /// `[width in bytes, height in rows, depth in slices]`.
    pub extent: [usize; 3],
}

crate::options::chainers!(CopyRegion {
    with_src_origin(src_origin: [usize; 3]);
    with_dst_origin(dst_origin: [usize; 3]);
    with_extent(extent: [usize; 3]);
});

impl CopyRegion {
    /// `width` bytes by `height` rows, from the origin to the origin.
    pub fn new(width: usize, height: usize) -> CopyRegion {
        CopyRegion::new_3d(width, height, 1)
    }

    /// `width` bytes by `height` rows by `depth` slices, from the origin to the origin.
    pub fn new_3d(width: usize, height: usize, depth: usize) -> CopyRegion {
        CopyRegion {
            extent: [width, height, depth],
            ..CopyRegion::default()
        }
    }
}

/// One side of a pitched copy, as checked: its memory, layout and size in bytes, and what
/// bounds its rows (the pitched buffer's width, or the pitch).
struct Side<'s> {
    memory: PitchedMemory,
    pitch: usize,
    height: usize,
    size: usize,
    row_bytes: usize,
    buffer: Option<&'s Buffer>,
    home: Option<&'s Stream>,
}

/// Checks that `extent` at `origin` lies within a side, naming it; `height` bounds the rows of
/// a slice, `slices` the slices where known.
fn check_side(
    side: &Side<'_>,
    origin: [usize; 3],
    extent: [usize; 3],
    max_pitch: usize,
    name: &'static str,
) -> Result<()> {
    let bad = |reason: String| Error::InvalidArgument { name, reason };
    if side.pitch == 0 || side.height == 0 {
        return Err(bad(format!(
            "a pitch of {} bytes and {} rows to a slice hold nothing",
            side.pitch, side.height
        )));
    }
    if side.pitch > max_pitch {
        return Err(bad(format!(
            "a pitch of {} bytes is more than the device's copies take ({max_pitch})",
            side.pitch
        )));
    }
    let [x, y, z] = origin;
    let [width, height, depth] = extent;
    if x.checked_add(width).is_none_or(|end| end > side.row_bytes) {
        return Err(bad(format!(
            "{width} bytes at x = {x} reach beyond a row's {} bytes",
            side.row_bytes
        )));
    }
    if y.checked_add(height).is_none_or(|end| end > side.height) {
        return Err(bad(format!(
            "{height} rows at y = {y} reach beyond a slice's {} rows",
            side.height
        )));
    }
    // The byte after the last one copied: row (z + depth - 1) * height + y + height - 1, then
    // x + width into it.
    let end = z
        .checked_add(depth - 1)
        .and_then(|last_slice| last_slice.checked_mul(side.height))
        .and_then(|rows| rows.checked_add(y + height - 1))
        .and_then(|last_row| last_row.checked_mul(side.pitch))
        .and_then(|start| start.checked_add(x + width));
    match end {
        Some(end) if end <= side.size => Ok(()),
        _ => Err(bad(format!(
            "{width} x {height} x {depth} bytes at ({x}, {y}, {z}) with a pitch of {} and {} \
             rows to a slice reach beyond its {} bytes",
            side.pitch, side.height, side.size
        ))),
    }
}

impl<'a> PitchedSrc<'a> {
    fn side(&self, rows_of_pitched: impl Fn(&PitchedBuffer) -> usize) -> Side<'a> {
        match self.memory {
            SrcMemory::Pitched(p) => Side {
                memory: PitchedMemory::Unified(p.ptr),
                pitch: p.pitch,
                height: rows_of_pitched(p),
                size: p.size(),
                row_bytes: p.width,
                buffer: None,
                home: Some(&p.stream),
            },
            SrcMemory::Buffer(b) => Side {
                memory: PitchedMemory::Unified(b.ptr().0),
                pitch: self.pitch,
                height: self.height,
                size: b.size(),
                row_bytes: self.pitch,
                buffer: Some(b),
                home: Some(b.deallocation_stream()),
            },
            SrcMemory::Host(h) => Side {
                // The driver only reads a source.
                memory: PitchedMemory::Host(h.as_ptr().cast_mut().cast()),
                pitch: self.pitch,
                height: self.height,
                size: h.len(),
                row_bytes: self.pitch,
                buffer: None,
                home: None,
            },
        }
    }
}

impl PitchedDst<'_> {
    fn side(&mut self, rows_of_pitched: impl Fn(&PitchedBuffer) -> usize) -> Side<'_> {
        let (pitch, height) = (self.pitch, self.height);
        match &mut self.memory {
            DstMemory::Pitched(p) => Side {
                memory: PitchedMemory::Unified(p.ptr),
                pitch: p.pitch,
                height: rows_of_pitched(p),
                size: p.size(),
                row_bytes: p.width,
                buffer: None,
                home: Some(&p.stream),
            },
            DstMemory::Buffer(b) => Side {
                memory: PitchedMemory::Unified(b.ptr().0),
                pitch,
                height,
                size: b.size(),
                row_bytes: pitch,
                buffer: Some(&**b),
                home: Some(b.deallocation_stream()),
            },
            DstMemory::Host(h) => Side {
                memory: PitchedMemory::Host(h.as_mut_ptr().cast()),
                pitch,
                height,
                size: h.len(),
                row_bytes: pitch,
                buffer: None,
                home: None,
            },
        }
    }
}

/// Copies `region` from `src` to `dst` in order on `stream` (`cuMemcpy2DAsync`), and where
/// either side is a host slice waits for the copy before returning (so such a copy refuses a
/// capturing stream, which cannot be waited for).
///
/// Checked before the driver, each [`Error::InvalidArgument`] naming the side: a zero extent,
/// a depth or `z` other than 0 and 1, a pitch of zero or larger than the device's
/// [`max_pitch`](crate::DeviceProperties::max_pitch), rows reaching beyond the pitch (beyond
/// the width, for a [`PitchedBuffer`]) or beyond `height` rows (for a pitched buffer, all its
/// rows), and any byte beyond the memory. A buffer of another device that the stream's device
/// cannot reach is refused as by [`Buffer::copy_to`]. Buffers and pitched buffers keep the
/// stream-order rules of [`Buffer`].
///
/// Between two device sides, the driver may refuse pitches that
/// [`cuMemAllocPitch`](PitchedBuffer) did not give (its `cuMemcpy2D` rule); copies with the host
/// take any pitch.
#[doc(alias = "cuMemcpy2DAsync")]
pub fn copy_2d(
    src: PitchedSrc<'_>,
    dst: PitchedDst<'_>,
    region: &CopyRegion,
    stream: &Stream,
) -> Result<()> {
    // SAFETY: a host side is waited for before returning.
    unsafe { pitched_copy(src, dst, region, stream, false, true) }
}

/// [`copy_2d`] without waiting for host memory.
///
/// # Safety
///
/// A host slice must stay alive until the copy is done (synchronise `stream` or an event
/// recorded after it), a destination slice unread and unwritten, a source slice unchanged.
#[doc(alias = "cuMemcpy2DAsync")]
pub unsafe fn copy_2d_async(
    src: PitchedSrc<'_>,
    dst: PitchedDst<'_>,
    region: &CopyRegion,
    stream: &Stream,
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { pitched_copy(src, dst, region, stream, false, false) }
}

/// Copies `region` from `src` to `dst` in order on `stream` (`cuMemcpy3DAsync`), and where
/// either side is a host slice waits for the copy before returning. Checked as [`copy_2d`] is,
/// with slices of `height` rows (a pitched buffer's own height) and `z` and the depth bounded
/// by the memory's size.
#[doc(alias = "cuMemcpy3DAsync")]
pub fn copy_3d(
    src: PitchedSrc<'_>,
    dst: PitchedDst<'_>,
    region: &CopyRegion,
    stream: &Stream,
) -> Result<()> {
    // SAFETY: a host side is waited for before returning.
    unsafe { pitched_copy(src, dst, region, stream, true, true) }
}

/// [`copy_3d`] without waiting for host memory.
///
/// # Safety
///
/// As for [`copy_2d_async`].
#[doc(alias = "cuMemcpy3DAsync")]
pub unsafe fn copy_3d_async(
    src: PitchedSrc<'_>,
    dst: PitchedDst<'_>,
    region: &CopyRegion,
    stream: &Stream,
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { pitched_copy(src, dst, region, stream, true, false) }
}

/// The checks and the call of the four pitched copies.
///
/// # Safety
///
/// Unless `wait_for_host`, as for [`copy_2d_async`].
unsafe fn pitched_copy(
    src: PitchedSrc<'_>,
    mut dst: PitchedDst<'_>,
    region: &CopyRegion,
    stream: &Stream,
    three_d: bool,
    wait_for_host: bool,
) -> Result<()> {
    let extent = region.extent;
    if extent.contains(&0) {
        return Err(Error::InvalidArgument {
            name: "region",
            reason: format!("an extent of {extent:?} copies nothing"),
        });
    }
    if !three_d && (extent[2] != 1 || region.src_origin[2] != 0 || region.dst_origin[2] != 0) {
        return Err(Error::InvalidArgument {
            name: "region",
            reason: format!(
                "a 2D copy takes a depth of 1 and z = 0 (extent {extent:?}, origins {:?} and \
                 {:?}); use copy_3d",
                region.src_origin, region.dst_origin
            ),
        });
    }
    // A 2D copy sees every row of a pitched buffer; a 3D copy its slices of `height` rows.
    let rows = |p: &PitchedBuffer| {
        if three_d {
            p.height
        } else {
            p.height * p.depth
        }
    };
    let max_pitch = max_pitch(stream.device())?;
    let src_side = src.side(rows);
    let dst_side = dst.side(rows);
    check_side(&src_side, region.src_origin, extent, max_pitch, "src")?;
    check_side(&dst_side, region.dst_origin, extent, max_pitch, "dst")?;
    let _src_reach = src_side
        .buffer
        .map(|buffer| buffer.check_reachable(stream, "src", true))
        .transpose()?;
    let _dst_reach = dst_side
        .buffer
        .map(|buffer| buffer.check_reachable(stream, "dst", true))
        .transpose()?;
    let host = src_side.home.is_none() || dst_side.home.is_none();
    if host && wait_for_host && stream.capturing() {
        return Err(Error::InvalidArgument {
            name: "stream",
            reason: "it is capturing, and a copy with host memory is waited for before \
                     returning, which a capture does not allow (the wait would invalidate it); \
                     capture the copy with copy_2d_async or copy_3d_async"
                .to_owned(),
        });
    }
    let copy = PitchedCopy {
        src: PitchedSide {
            memory: src_side.memory,
            x: region.src_origin[0],
            y: region.src_origin[1],
            z: region.src_origin[2],
            pitch: src_side.pitch,
            height: src_side.height,
        },
        dst: PitchedSide {
            memory: dst_side.memory,
            x: region.dst_origin[0],
            y: region.dst_origin[1],
            z: region.dst_origin[2],
            pitch: dst_side.pitch,
            height: dst_side.height,
        },
        width: extent[0],
        height: extent[1],
        depth: extent[2],
    };
    // The sides' deallocation streams, each once.
    let pair;
    let homes: &[&Stream] = match (src_side.home, dst_side.home) {
        (Some(a), Some(b)) if !a.same_as(b) => {
            pair = [a, b];
            &pair
        }
        (Some(a), _) | (None, Some(a)) => {
            pair = [a, a];
            &pair[..1]
        }
        (None, None) => &[],
    };
    let result = in_stream_order(homes, stream, || {
        stream.queue_in_context(|driver, handle| {
            if three_d {
                driver.memcpy_3d_async(&copy, handle)
            } else {
                driver.memcpy_2d_async(&copy, handle)
            }
        })
    });
    if host && (wait_for_host || result.is_err()) {
        let synced = stream.sync_for_host();
        result?;
        return synced;
    }
    result
}

// A kernel argument: its first row's address (a pointer parameter), ordered on its
// deallocation stream as a buffer is; the kernel takes the pitch as a further argument.
crate::args::wrapper_arg!(PitchedBuffer);

impl crate::args::sealed::Arg for PitchedBuffer {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::address_arg(self.ptr_ref(), Some(&self.stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(pitch: usize, height: usize, size: usize, row_bytes: usize) -> Side<'static> {
        Side {
            memory: PitchedMemory::Unified(0x1000),
            pitch,
            height,
            size,
            row_bytes,
            buffer: None,
            home: None,
        }
    }

    #[test]
    fn pitched_sides_are_bounded_by_row_slice_and_size() {
        const MAX: usize = 1 << 20;
        // 4 slices of 10 rows of 512 bytes, 100 of them data.
        let s = side(512, 10, 512 * 10 * 4, 100);
        check_side(&s, [0, 0, 0], [100, 10, 4], MAX, "src").unwrap();
        check_side(&s, [60, 9, 3], [40, 1, 1], MAX, "src").unwrap();
        let err = |origin, extent| match check_side(&s, origin, extent, MAX, "dst") {
            Err(Error::InvalidArgument {
                name: "dst",
                reason,
            }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(err([61, 0, 0], [40, 1, 1]).contains("beyond a row's 100 bytes"));
        assert!(err([0, 5, 0], [1, 6, 1]).contains("beyond a slice's 10 rows"));
        assert!(err([0, 0, 1], [1, 1, 4]).contains("reach beyond its 20480 bytes"));
        assert!(err([usize::MAX, 0, 0], [1, 1, 1]).contains("beyond a row"));
        assert!(err([0, 0, usize::MAX], [1, 1, 2]).contains("beyond its"));
        // Packed host data: the last row needs no padding after it.
        let packed = side(30, 4, 30 * 3 + 10, 30);
        check_side(&packed, [0, 0, 0], [10, 4, 1], MAX, "src").unwrap();
        check_side(&packed, [0, 0, 0], [11, 4, 1], MAX, "src").unwrap_err();
        // A pitch of zero, or beyond the device's.
        check_side(&side(0, 4, 100, 0), [0, 0, 0], [1, 1, 1], MAX, "src").unwrap_err();
        let r = match check_side(
            &side(MAX + 1, 1, MAX + 1, MAX + 1),
            [0; 3],
            [1, 1, 1],
            MAX,
            "src",
        ) {
            Err(Error::InvalidArgument { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(r.contains("more than the device's copies take"), "{r}");
    }

    #[test]
    fn copy_regions_chain() {
        let r = CopyRegion::new_3d(8, 4, 2)
            .with_src_origin([1, 2, 3])
            .with_dst_origin([4, 5, 6]);
        assert_eq!(
            r,
            CopyRegion {
                src_origin: [1, 2, 3],
                dst_origin: [4, 5, 6],
                extent: [8, 4, 2]
            }
        );
        assert_eq!(CopyRegion::new(3, 2).extent, [3, 2, 1]);
        assert_eq!(
            CopyRegion::default().with_extent([1, 1, 1]).extent,
            [1, 1, 1]
        );
    }

    #[test]
    fn pod_slices_are_their_bytes() {
        let values = [0x0403_0201u32, 0x0807_0605];
        assert_eq!(pod_bytes(&values), &[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut out = [0u16; 2];
        pod_bytes_mut(&mut out).copy_from_slice(&[1, 0, 2, 0]);
        assert_eq!(out, [1, 2]);
    }
}
