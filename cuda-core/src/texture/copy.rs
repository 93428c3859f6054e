//! Copies between arrays and host slices, buffers and other arrays (`cuMemcpy3DAsync`), each
//! region and linear layout checked against both sides before the driver. A copy into an
//! array takes it by `&mut`, as a copy into a [`Buffer`] does: two threads' copies into one
//! array from different streams would otherwise run at the same time.

use std::mem::size_of_val;

use super::array::Array;
use crate::driver::{Copy3dSpec, CopyEnd, CopySide};
use crate::error::{Error, Result};
use crate::memory::{Buffer, Pod};
use crate::order::in_stream_order;
use crate::stream::Stream;

/// A box of an array: from `origin` (element, row, slice or layer), `extent` elements, rows
/// and slices (each at least 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ArrayRegion {
    /// The first element, row and slice (or layer).
    pub origin: [usize; 3],
    /// Elements, rows and slices.
    pub extent: [usize; 3],
}

crate::options::chainers!(ArrayRegion {
    with_origin(origin: [usize; 3]);
    with_extent(extent: [usize; 3]);
});

impl ArrayRegion {
    /// The whole of an array of `extent` ([`Array::extent`]).
    pub fn whole(extent: [usize; 3]) -> ArrayRegion {
        ArrayRegion {
            origin: [0; 3],
            extent,
        }
    }

    /// `extent` from `origin`.
    pub fn new(origin: [usize; 3], extent: [usize; 3]) -> ArrayRegion {
        ArrayRegion { origin, extent }
    }
}

/// How linear memory (a host slice or a buffer) holds a region: from `offset` bytes, rows
/// `row_pitch` bytes apart, slices `rows_per_slice` rows apart. The default is packed: rows of
/// the region's width, slices of its height, from the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    /// Where the region starts, in bytes.
    pub offset: usize,
    /// Bytes from one row to the next; 0: the region's row, packed.
    pub row_pitch: usize,
    /// Rows from one slice to the next; 0: the region's rows, packed.
    pub rows_per_slice: usize,
}

crate::options::chainers!(LinearLayout {
    with_offset(offset: usize);
    with_row_pitch(row_pitch: usize);
    with_rows_per_slice(rows_per_slice: usize);
});

/// A region checked against an array of `extent` with `element_bytes`-byte elements.
pub(crate) fn check_region(
    region: &ArrayRegion,
    extent: [usize; 3],
    name: &'static str,
) -> Result<()> {
    if region.extent.contains(&0) {
        return Err(Error::InvalidArgument {
            name,
            reason: format!("the region {:?} is empty", region.extent),
        });
    }
    for axis in 0..3 {
        let end = region.origin[axis].checked_add(region.extent[axis]);
        if end.is_none_or(|end| end > extent[axis]) {
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "the region from {:?} of {:?} reaches past the array's extent {extent:?} \
                     along {}",
                    region.origin,
                    region.extent,
                    ["x (elements)", "y (rows)", "z (slices or layers)"][axis]
                ),
            });
        }
    }
    Ok(())
}

/// A linear layout of `region` checked against `available` bytes: the pitch and rows per
/// slice it resolves to.
pub(crate) fn check_linear(
    region: &ArrayRegion,
    element_bytes: usize,
    layout: &LinearLayout,
    available: usize,
    name: &'static str,
) -> Result<(usize, usize)> {
    let [w, h, d] = region.extent;
    let invalid = |reason: String| Error::InvalidArgument { name, reason };
    let row = w
        .checked_mul(element_bytes)
        .ok_or_else(|| invalid(format!("a row of {w} elements overflows")))?;
    let pitch = if layout.row_pitch == 0 {
        row
    } else {
        layout.row_pitch
    };
    if pitch < row {
        return Err(invalid(format!(
            "the row pitch {pitch} is less than a row of the region ({w} elements, {row} bytes)"
        )));
    }
    let rows = if layout.rows_per_slice == 0 {
        h
    } else {
        layout.rows_per_slice
    };
    if rows < h {
        return Err(invalid(format!(
            "{rows} rows per slice are fewer than the region's {h}"
        )));
    }
    let needed = (|| {
        let last_row = (d - 1).checked_mul(rows)?.checked_add(h - 1)?;
        last_row
            .checked_mul(pitch)?
            .checked_add(row)?
            .checked_add(layout.offset)
    })();
    match needed {
        Some(needed) if needed <= available => Ok((pitch, rows)),
        _ => Err(invalid(format!(
            "the region {:?} laid out from offset {} with a pitch of {pitch} bytes and {rows} \
             rows per slice needs {} bytes; {available} are there",
            region.extent,
            layout.offset,
            needed.map_or("more than 2^64".to_owned(), |n| n.to_string())
        ))),
    }
}

impl Array {
    fn array_side(&self, origin: [usize; 3]) -> CopySide {
        CopySide {
            end: CopyEnd::Array(self.handle()),
            x_bytes: origin[0] * self.options().element_bytes(),
            y: origin[1],
            z: origin[2],
            pitch: 0,
            height: 0,
        }
    }

    /// Refuses work on a stream of another device than the array's.
    fn check_stream(&self, stream: &Stream) -> Result<()> {
        if stream.device() != self.device() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "the array is on device {}, the stream on device {}",
                    self.device().ordinal(),
                    stream.device().ordinal()
                ),
            });
        }
        Ok(())
    }

    /// Queues a copy with this array on one side, in order on `stream` around the homes.
    ///
    /// # Safety
    ///
    /// As for [`crate::driver::Driver`]'s `array_memcpy_3d_async`: host memory valid until done.
    unsafe fn queue(&self, copy: &Copy3dSpec, homes: &[&Stream], stream: &Stream) -> Result<()> {
        in_stream_order(homes, stream, || {
            stream.queue_in_context(|driver, handle| {
                // SAFETY: the caller's promise for host memory; regions and layouts checked.
                unsafe { driver.array_memcpy_3d_async(copy, handle) }
            })
        })
    }

    /// The copy of `region` of this array and linear memory `linear` laid out by `pitch` and
    /// `rows`, in either direction.
    fn linear_copy(
        &self,
        region: &ArrayRegion,
        linear: CopyEnd,
        layout: &LinearLayout,
        (pitch, rows): (usize, usize),
        into_array: bool,
    ) -> Copy3dSpec {
        let [w, h, d] = region.extent;
        let linear = CopySide {
            end: match linear {
                CopyEnd::Host(ptr) => CopyEnd::Host(ptr.wrapping_byte_add(layout.offset)),
                CopyEnd::Device(ptr) => CopyEnd::Device(ptr + layout.offset as u64),
                other => other,
            },
            x_bytes: 0,
            y: 0,
            z: 0,
            pitch,
            height: rows,
        };
        let array = self.array_side(region.origin);
        let (src, dst) = if into_array {
            (linear, array)
        } else {
            (array, linear)
        };
        Copy3dSpec {
            src,
            dst,
            width_bytes: w * self.options().element_bytes(),
            height: h,
            depth: d,
        }
    }

    /// Copies a host slice holding the whole array, packed (rows of its width, slices of its
    /// height), into it, and waits for the copy.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_from_host<T: Pod>(&mut self, src: &[T], stream: &Stream) -> Result<()> {
        self.copy_region_from_host(
            &ArrayRegion::whole(self.extent()),
            src,
            &LinearLayout::default(),
            stream,
        )
    }

    /// Copies the whole array into a host slice, packed, and waits for the copy.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.copy_region_to_host(
            &ArrayRegion::whole(self.extent()),
            dst,
            &LinearLayout::default(),
            stream,
        )
    }

    /// Copies the whole array to a new vector, packed, and waits for the copy. The element
    /// size must be a multiple of `T`'s.
    pub fn to_vec<T: Pod + Default>(&self, stream: &Stream) -> Result<Vec<T>> {
        let bytes = self
            .options()
            .bytes()
            .ok_or_else(|| Error::InvalidArgument {
                name: "self",
                reason: "the array's size overflows".to_owned(),
            })?;
        let width = std::mem::size_of::<T>().max(1);
        if bytes % width != 0 {
            return Err(Error::InvalidArgument {
                name: "T",
                reason: format!("{bytes} bytes are not a whole number of {width}-byte values"),
            });
        }
        let mut out = vec![T::default(); bytes / width];
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }

    /// Copies the whole of `src`'s start, packed, into the array, in order on `stream`.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_from_buffer(&mut self, src: &Buffer, stream: &Stream) -> Result<()> {
        self.copy_region_from_buffer(
            &ArrayRegion::whole(self.extent()),
            src,
            &LinearLayout::default(),
            stream,
        )
    }

    /// Copies the whole array into `dst`'s start, packed, in order on `stream`.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_to_buffer(&self, dst: &mut Buffer, stream: &Stream) -> Result<()> {
        self.copy_region_to_buffer(
            &ArrayRegion::whole(self.extent()),
            dst,
            &LinearLayout::default(),
            stream,
        )
    }

    /// Copies `region` of the array from a host slice laid out by `layout`, and waits for the
    /// copy.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_region_from_host<T: Pod>(
        &mut self,
        region: &ArrayRegion,
        src: &[T],
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        // SAFETY: `src` outlives the copy: the stream is synchronised before returning.
        unsafe { self.copy_region_from_host_async(region, src, layout, stream)? };
        stream.sync_for_host()
    }

    /// Copies `region` of the array into a host slice laid out by `layout`, and waits for the
    /// copy.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_region_to_host<T: Pod>(
        &self,
        region: &ArrayRegion,
        dst: &mut [T],
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        // SAFETY: `dst` outlives the copy: the stream is synchronised before returning.
        unsafe { self.copy_region_to_host_async(region, dst, layout, stream)? };
        stream.sync_for_host()
    }

    /// Queues a copy of `region` of the array from a host slice laid out by `layout`.
    ///
    /// # Safety
    ///
    /// `src` must stay alive and unmodified until the copy is done (synchronise `stream`).
    #[doc(alias = "cuMemcpy3DAsync")]
    pub unsafe fn copy_region_from_host_async<T: Pod>(
        &mut self,
        region: &ArrayRegion,
        src: &[T],
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        self.check_stream(stream)?;
        check_region(region, self.extent(), "region")?;
        let resolved = check_linear(
            region,
            self.options().element_bytes(),
            layout,
            size_of_val(src),
            "src",
        )?;
        let end = CopyEnd::Host(src.as_ptr().cast_mut().cast());
        let copy = self.linear_copy(region, end, layout, resolved, true);
        // SAFETY: the caller keeps `src` alive until the copy is done.
        unsafe { self.queue(&copy, &[self.home_stream()], stream) }
    }

    /// Queues a copy of `region` of the array into a host slice laid out by `layout`.
    ///
    /// # Safety
    ///
    /// `dst` must stay alive, and must not be read or written, until the copy is done.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub unsafe fn copy_region_to_host_async<T: Pod>(
        &self,
        region: &ArrayRegion,
        dst: &mut [T],
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        self.check_stream(stream)?;
        check_region(region, self.extent(), "region")?;
        let resolved = check_linear(
            region,
            self.options().element_bytes(),
            layout,
            size_of_val(dst),
            "dst",
        )?;
        let end = CopyEnd::Host(dst.as_mut_ptr().cast());
        let copy = self.linear_copy(region, end, layout, resolved, false);
        // SAFETY: the caller keeps `dst` alive and untouched until the copy is done.
        unsafe { self.queue(&copy, &[self.home_stream()], stream) }
    }

    /// Copies `region` of the array from `src` laid out by `layout`, in order on `stream`
    /// (and around the homes of both, as for [`Buffer::copy_to`]).
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_region_from_buffer(
        &mut self,
        region: &ArrayRegion,
        src: &Buffer,
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        self.check_stream(stream)?;
        // The buffer's own check (another device's memory without access, a pool's host
        // memory without access), held until the copy is queued (see `memory::access`).
        let _reach = src.check_reachable(stream, "src", true)?;
        check_region(region, self.extent(), "region")?;
        let resolved = check_linear(
            region,
            self.options().element_bytes(),
            layout,
            src.size(),
            "src",
        )?;
        let copy = self.linear_copy(region, CopyEnd::Device(src.ptr().0), layout, resolved, true);
        // SAFETY: device memory of the buffer, checked to hold the layout; no host memory.
        unsafe {
            self.queue(
                &copy,
                &[self.home_stream(), src.deallocation_stream()],
                stream,
            )
        }
    }

    /// Copies `region` of the array into `dst` laid out by `layout`, in order on `stream`.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_region_to_buffer(
        &self,
        region: &ArrayRegion,
        dst: &mut Buffer,
        layout: &LinearLayout,
        stream: &Stream,
    ) -> Result<()> {
        self.check_stream(stream)?;
        // As in `copy_region_from_buffer`.
        let _reach = dst.check_reachable(stream, "dst", true)?;
        check_region(region, self.extent(), "region")?;
        let resolved = check_linear(
            region,
            self.options().element_bytes(),
            layout,
            dst.size(),
            "dst",
        )?;
        let copy = self.linear_copy(
            region,
            CopyEnd::Device(dst.ptr().0),
            layout,
            resolved,
            false,
        );
        // SAFETY: as in `copy_region_from_buffer`.
        unsafe {
            self.queue(
                &copy,
                &[self.home_stream(), dst.deallocation_stream()],
                stream,
            )
        }
    }

    /// Copies `region` of this array into `dst` from `dst_origin`, in order on `stream`. Both
    /// arrays must have elements of the same size and be on the stream's device.
    #[doc(alias = "cuMemcpy3DAsync")]
    pub fn copy_region_to_array(
        &self,
        region: &ArrayRegion,
        dst: &mut Array,
        dst_origin: [usize; 3],
        stream: &Stream,
    ) -> Result<()> {
        self.check_stream(stream)?;
        dst.check_stream(stream)?;
        let (from, to) = (
            self.options().element_bytes(),
            dst.options().element_bytes(),
        );
        if from != to {
            return Err(Error::InvalidArgument {
                name: "dst",
                reason: format!("its elements are {to} bytes, this array's {from}"),
            });
        }
        check_region(region, self.extent(), "region")?;
        check_region(
            &ArrayRegion::new(dst_origin, region.extent),
            dst.extent(),
            "dst_origin",
        )?;
        let copy = Copy3dSpec {
            src: self.array_side(region.origin),
            dst: dst.array_side(dst_origin),
            width_bytes: region.extent[0] * from,
            height: region.extent[1],
            depth: region.extent[2],
        };
        // SAFETY: two arrays, regions checked; no host memory.
        unsafe { self.queue(&copy, &[self.home_stream(), dst.home_stream()], stream) }
    }
}
