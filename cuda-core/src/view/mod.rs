//! Strided views: typed, shaped windows on memory that CUDA devices can access.
//!
//! A [`StridedView`] is a pointer to its first element, a shape, strides (in elements, as
//! DLPack and NumPy count them) and an element type, over memory of one of three kinds
//! ([`ViewMemory`]): a device's, pinned host memory, or managed memory. It is made from a
//! [`Buffer`] (borrowed, or shared through an `Arc`) with its whole extent checked to lie
//! within the buffer, from a DLPack tensor ([`DlpackTensor`](crate::dlpack::DlpackTensor)),
//! or from a foreign pointer (`unsafe`). It is passed to a kernel as its pointer.

pub mod dlpack;
mod layout;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use self::dlpack::DlpackTensor;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::memory::{Buffer, DevicePtr, Pod};
use crate::stream::Stream;

pub(crate) use layout::Dims;

/// The kind of memory a view looks at, as DLPack names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ViewMemory {
    /// Memory of one device (DLPack `kDLCUDA`).
    #[doc(alias = "kDLCUDA")]
    Device(Device),
    /// Page-locked host memory, mapped for every device (`kDLCUDAHost`).
    #[doc(alias = "kDLCUDAHost")]
    Pinned,
    /// Managed (unified) memory (`kDLCUDAManaged`).
    #[doc(alias = "kDLCUDAManaged")]
    Managed,
}

impl ViewMemory {
    /// Whether the host may read the memory at its address (pinned and managed memory).
    pub fn is_host_accessible(self) -> bool {
        !matches!(self, ViewMemory::Device(_))
    }

    /// The memory kind of a buffer, refused where kernels cannot use it or its kind cannot be
    /// told from its resource's answers.
    fn of_buffer(buffer: &Buffer) -> Result<ViewMemory> {
        if !buffer.is_device_accessible() {
            return Err(invalid(
                "buffer",
                format!(
                    "{:?} memory is not accessible from devices: a view is of memory kernels can use",
                    buffer.memory_resource()
                ),
            ));
        }
        match (buffer.device(), buffer.is_host_accessible()) {
            (Some(device), false) => Ok(ViewMemory::Device(device)),
            (None, true) => Ok(ViewMemory::Pinned),
            (Some(_), true) => Ok(ViewMemory::Managed),
            (None, false) => Err(invalid(
                "buffer",
                format!(
                    "{:?} memory belongs to no device and is not host-accessible: neither \
                     device, pinned nor managed memory",
                    buffer.memory_resource()
                ),
            )),
        }
    }
}

/// What keeps a view's memory allocated.
#[derive(Clone)]
pub(crate) enum Owner<'a> {
    /// A buffer borrowed for the view's life.
    Borrowed(&'a Buffer),
    /// A buffer shared with the view.
    Shared(Arc<Buffer>),
    /// A DLPack tensor of another producer, released when the last view of it goes.
    Imported { _tensor: Arc<DlpackTensor> },
    /// Memory the creator vouched for (a foreign pointer, a borrowed DLPack tensor).
    Foreign,
}

impl Owner<'_> {
    /// The stream the memory is ordered on: a buffer's deallocation stream.
    fn home(&self) -> Option<&Stream> {
        match self {
            Owner::Borrowed(buffer) => Some(buffer.deallocation_stream()),
            Owner::Shared(buffer) => Some(buffer.deallocation_stream()),
            Owner::Imported { .. } | Owner::Foreign => None,
        }
    }

    fn buffer(&self) -> Option<&Buffer> {
        match self {
            Owner::Borrowed(buffer) => Some(buffer),
            Owner::Shared(buffer) => Some(buffer),
            Owner::Imported { .. } | Owner::Foreign => None,
        }
    }
}

/// A typed, strided view of memory that kernels can use: the address of its first element
/// (element `[0, 0, ...]`), a shape, strides in elements (any sign; 0 repeats an element) and
/// the memory's kind. cuda.core's `StridedMemoryView`.
///
/// Made from a [`Buffer`] ([`Buffer::view`], [`StridedView::new`], [`StridedView::shared`]),
/// every element it reaches is checked to lie within the buffer and the first element to be
/// aligned for `T`; the view borrows the buffer (or shares it), so the buffer outlives it.
/// Made from a DLPack tensor ([`DlpackTensor::view`], [`DlpackTensor::into_view`]) it keeps
/// the tensor; from a raw pointer ([`StridedView::from_raw_parts`]) its creator vouches for
/// the memory.
///
/// # As a kernel argument
///
/// A view passes to a kernel as the address of its first element: a pointer parameter,
/// whose size (8 bytes) [`launch`](crate::launch) checks against the kernel's. The element
/// type is not checked against the kernel's parameter type: the driver describes parameters
/// by size alone, so `T` matching the kernel's pointee (`f32` for `float*`) is the caller's
/// promise, part of `launch`'s safety contract. Pass the shape and strides as further
/// arguments where the kernel needs them ([`StridedView::shape`], [`StridedView::strides`]).
///
/// A view of a buffer is kept in stream order as the buffer itself is: launched on another
/// stream than the buffer's deallocation stream, the launch waits for the work queued there
/// so far and that stream waits for the launch. A view of an imported tensor or a foreign
/// pointer has no stream: the memory must stay allocated until the kernel is done (keep the
/// view, or its tensor, until the stream has passed the kernel).
///
/// ```no_run
/// use cuda_core::{launch, Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions};
/// use cuda_core::StreamOptions;
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let code = Program::new(
///     r#"extern "C" __global__ void column_sums(const float* m, long long row_stride,
///                                             unsigned rows, unsigned cols, float* out) {
///         unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
///         if (c >= cols) return;
///         float s = 0;
///         for (unsigned r = 0; r < rows; r++) s += m[r * row_stride + c];
///         out[c] = s;
///     }"#,
///     ProgramOptions::default(),
/// )
/// .compile(CodeType::Cubin, &[])?;
/// let memory = device.memory_resource()?;
/// let mut matrix = memory.allocate(4 * 8 * 8, &stream)?;
/// matrix.copy_from_host(&[1.0f32; 64], &stream)?;
/// // The right half of an 8 x 8 matrix: 8 rows of 4, rows 8 floats apart, from float 4.
/// let half = cuda_core::StridedView::<f32>::new(&matrix, 16, &[8, 4], Some(&[8, 1]))?;
/// let out = memory.allocate(4 * 4, &stream)?;
/// let [rows, cols] = [half.shape()[0] as u32, half.shape()[1] as u32];
/// // SAFETY: the kernel reads the view's 8 x 4 floats and writes 4 floats of `out`.
/// unsafe {
///     launch(&stream, &LaunchConfig::for_elements(4, 32), &code.get_kernel("column_sums")?,
///            &[&half, &(half.strides()[0] as i64), &rows, &cols, &out])?;
/// }
/// assert_eq!(out.to_vec::<f32>(&stream)?, [8.0; 4]);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "StridedMemoryView")]
pub struct StridedView<'a, T> {
    /// The first element's address.
    ptr: u64,
    dims: Dims,
    memory: ViewMemory,
    read_only: bool,
    owner: Owner<'a>,
    _element: PhantomData<T>,
}

impl<T> Clone for StridedView<'_, T> {
    fn clone(&self) -> Self {
        StridedView {
            ptr: self.ptr,
            dims: self.dims.clone(),
            memory: self.memory,
            read_only: self.read_only,
            owner: self.owner.clone(),
            _element: PhantomData,
        }
    }
}

impl<T> fmt::Debug for StridedView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StridedView")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("element", &std::any::type_name::<T>())
            .field("shape", &self.dims.shape())
            .field("strides", &self.dims.strides())
            .field("memory", &self.memory)
            .field("read_only", &self.read_only)
            .finish()
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

/// The strides given, or a compact row-major array's, checked to be one per dimension.
fn strides_for(shape: &[usize], strides: Option<&[isize]>) -> Result<Vec<isize>> {
    match strides {
        Some(strides) if strides.len() != shape.len() => Err(invalid(
            "strides",
            format!(
                "{} strides for {} dimensions (shape {shape:?})",
                strides.len(),
                shape.len()
            ),
        )),
        Some(strides) => Ok(strides.to_vec()),
        None => layout::row_major(shape).ok_or_else(|| {
            invalid(
                "shape",
                format!("{shape:?} has more elements than an address space holds"),
            )
        }),
    }
}

/// Refuses element types a view cannot address (of no size).
fn check_element<T>() -> Result<()> {
    if std::mem::size_of::<T>() == 0 {
        return Err(invalid(
            "T",
            format!(
                "{} has no size: a view's elements must have bytes",
                std::any::type_name::<T>()
            ),
        ));
    }
    Ok(())
}

fn check_alignment<T>(ptr: u64, name: &'static str) -> Result<()> {
    let align = std::mem::align_of::<T>() as u64;
    if ptr % align != 0 {
        return Err(invalid(
            name,
            format!(
                "the first element's address {ptr:#x} is not {align}-byte aligned for {}",
                std::any::type_name::<T>()
            ),
        ));
    }
    Ok(())
}

/// The span of a layout, refused where it has no count of elements or passes 128 bits.
fn span_of<T>(shape: &[usize], strides: &[isize]) -> Result<Option<(i128, i128)>> {
    if layout::element_count(shape).is_none() {
        return Err(invalid(
            "shape",
            format!("{shape:?} has more elements than an address space holds"),
        ));
    }
    layout::span(shape, strides, std::mem::size_of::<T>())
        .map_err(|reason| invalid("strides", reason))
}

impl<'a, T: Pod> StridedView<'a, T> {
    /// A view of `buffer` whose first element is `byte_offset` bytes into it, of `shape`, with
    /// `strides` in elements (`None`: compact row-major, C order). Refused before any driver
    /// call where an element it reaches lies outside the buffer, the first element is not
    /// aligned for `T`, the strides are not one per dimension, or the buffer's memory is not
    /// accessible from devices. An empty shape (an extent of 0) reaches nothing; no
    /// dimensions (`&[]`) is one element.
    pub fn new(
        buffer: &'a Buffer,
        byte_offset: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<StridedView<'a, T>> {
        StridedView::in_buffer(buffer, Owner::Borrowed(buffer), byte_offset, shape, strides)
    }

    /// A view of the `len` bytes of `buffer` from `base` (a slice of it), whose first element
    /// is at `base`: every element checked to lie within those bytes.
    pub(crate) fn within(
        buffer: &'a Buffer,
        base: usize,
        len: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<StridedView<'a, T>> {
        let owner = Owner::Borrowed(buffer);
        StridedView::in_window(buffer, owner, (base, len), 0, shape, strides)
    }

    fn in_buffer(
        buffer: &Buffer,
        owner: Owner<'a>,
        byte_offset: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<StridedView<'a, T>> {
        let window = (0, buffer.size());
        StridedView::in_window(buffer, owner, window, byte_offset, shape, strides)
    }

    /// A view of the bytes `window` (start and length) of `buffer`, from `byte_offset` bytes
    /// into the window.
    fn in_window(
        buffer: &Buffer,
        owner: Owner<'a>,
        (base, len): (usize, usize),
        byte_offset: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<StridedView<'a, T>> {
        check_element::<T>()?;
        let memory = ViewMemory::of_buffer(buffer)?;
        let strides_given = strides.is_some();
        let strides = strides_for(shape, strides)?;
        let what = if len == buffer.size() {
            "buffer"
        } else {
            "slice"
        };
        if byte_offset > len {
            return Err(invalid(
                "byte_offset",
                format!("{byte_offset} is past the end of a {len}-byte {what}"),
            ));
        }
        let ptr = buffer.ptr().0 + (base + byte_offset) as u64;
        check_alignment::<T>(ptr, "byte_offset")?;
        if let Some((low, end)) = span_of::<T>(shape, &strides)? {
            let first = byte_offset as i128 + low;
            let last = byte_offset as i128 + end;
            if first < 0 || last > len as i128 {
                return Err(invalid(
                    if strides_given { "strides" } else { "shape" },
                    format!(
                        "the view reaches bytes {first}..{last} of a {len}-byte {what} (shape \
                         {shape:?}, strides {strides:?} of {}-byte elements, from byte \
                         {byte_offset})",
                        std::mem::size_of::<T>()
                    ),
                ));
            }
        }
        Ok(StridedView {
            ptr,
            dims: Dims::new(shape, &strides),
            memory,
            read_only: false,
            owner,
            _element: PhantomData,
        })
    }

    /// A view of memory the caller vouches for: the first element at `ptr`, of `shape` and
    /// `strides` (in elements; `None`: compact row-major), of memory of kind `memory`.
    /// Checked: the strides are one per dimension, the first element is aligned for `T`, and
    /// a nonempty view has a non-null address and reaches no address below 0 or past 2^64.
    ///
    /// # Safety
    ///
    /// For `'a`, every element the view reaches is memory of kind `memory` (of that device,
    /// for [`ViewMemory::Device`]) that stays allocated and that kernels may use; where the
    /// host may access the kind, the host too.
    pub unsafe fn from_raw_parts(
        ptr: DevicePtr,
        shape: &[usize],
        strides: Option<&[isize]>,
        memory: ViewMemory,
    ) -> Result<StridedView<'a, T>> {
        // SAFETY: the caller's promise.
        unsafe { StridedView::foreign(ptr, shape, strides, memory, Owner::Foreign, false) }
    }

    /// [`from_raw_parts`](StridedView::from_raw_parts), keeping `owner`.
    ///
    /// # Safety
    ///
    /// As for `from_raw_parts`, with `owner` keeping the memory allocated.
    pub(crate) unsafe fn foreign(
        ptr: DevicePtr,
        shape: &[usize],
        strides: Option<&[isize]>,
        memory: ViewMemory,
        owner: Owner<'a>,
        read_only: bool,
    ) -> Result<StridedView<'a, T>> {
        check_element::<T>()?;
        let strides = strides_for(shape, strides)?;
        check_alignment::<T>(ptr.0, "ptr")?;
        if let Some((low, end)) = span_of::<T>(shape, &strides)? {
            if ptr.is_null() {
                return Err(invalid(
                    "ptr",
                    "null, for a view of at least one element".to_owned(),
                ));
            }
            let first = ptr.0 as i128 + low;
            let last = ptr.0 as i128 + end;
            if first < 0 || last > 1i128 << 64 {
                return Err(invalid(
                    "strides",
                    format!(
                        "from {ptr}, shape {shape:?} with strides {strides:?} of {}-byte \
                         elements reaches bytes {first:#x}..{last:#x}, outside the address \
                         space",
                        std::mem::size_of::<T>()
                    ),
                ));
            }
        }
        Ok(StridedView {
            ptr: ptr.0,
            dims: Dims::new(shape, &strides),
            memory,
            read_only,
            owner,
            _element: PhantomData,
        })
    }
}

impl<T: Pod> StridedView<'static, T> {
    /// [`StridedView::new`] over a shared buffer, which the view (and its clones, and a DLPack
    /// tensor exported from it) keeps alive.
    pub fn shared(
        buffer: Arc<Buffer>,
        byte_offset: usize,
        shape: &[usize],
        strides: Option<&[isize]>,
    ) -> Result<StridedView<'static, T>> {
        let owner = Owner::Shared(Arc::clone(&buffer));
        StridedView::in_buffer(&buffer, owner, byte_offset, shape, strides)
    }
}

impl<'a, T> StridedView<'a, T> {
    /// The address of the first element (element `[0, 0, ...]`), which a kernel receives.
    pub fn ptr(&self) -> DevicePtr {
        DevicePtr(self.ptr)
    }

    /// The extent of each dimension.
    pub fn shape(&self) -> &[usize] {
        self.dims.shape()
    }

    /// The stride of each dimension, in elements.
    pub fn strides(&self) -> &[isize] {
        self.dims.strides()
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.dims.shape().len()
    }

    /// The number of elements (the product of the shape; 1 for no dimensions).
    pub fn len(&self) -> usize {
        // Checked when the view was made.
        layout::element_count(self.dims.shape()).unwrap_or(usize::MAX)
    }

    /// Whether the view has no elements (an extent of 0).
    pub fn is_empty(&self) -> bool {
        self.dims.shape().contains(&0)
    }

    /// The kind of memory.
    pub fn memory(&self) -> ViewMemory {
        self.memory
    }

    /// The device of the memory: its own for device memory, `None` for pinned and managed
    /// memory (which DLPack files under device 0).
    pub fn device(&self) -> Option<Device> {
        match self.memory {
            ViewMemory::Device(device) => Some(device),
            ViewMemory::Pinned | ViewMemory::Managed => None,
        }
    }

    /// Whether the producer marked the memory read-only (a DLPack tensor's
    /// `DLPACK_FLAG_BITMASK_READ_ONLY`): kernels must then not write it. Views of buffers are
    /// writable.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the elements are laid out as a compact row-major (C-order) array: one after
    /// another, the last index fastest.
    pub fn is_contiguous(&self) -> bool {
        layout::is_row_major(self.dims.shape(), self.dims.strides())
    }

    /// The buffer the view is of, if it is of one.
    pub fn buffer(&self) -> Option<&Buffer> {
        self.owner.buffer()
    }

    /// The address of the element at `index` (one index per dimension); `None` where an
    /// index is out of range or their number is wrong.
    pub fn element_ptr(&self, index: &[usize]) -> Option<DevicePtr> {
        let offset = layout::offset_of(self.dims.shape(), self.dims.strides(), index)?;
        let bytes = offset.checked_mul(std::mem::size_of::<T>() as i128)?;
        // Within the span the view was checked for: an address of the 64-bit space.
        let address = i128::from(self.ptr).checked_add(bytes)?;
        u64::try_from(address).ok().map(DevicePtr)
    }

    /// The address field, for passing the view as a kernel argument.
    pub(crate) fn ptr_ref(&self) -> &u64 {
        &self.ptr
    }

    /// The stream its memory is ordered on (a buffer's deallocation stream), if any.
    pub(crate) fn home(&self) -> Option<&Stream> {
        self.owner.home()
    }

    pub(crate) fn owner(&self) -> &Owner<'a> {
        &self.owner
    }
}

impl<T: Pod> StridedView<'_, T> {
    fn check_contiguous(&self, name: &'static str, len: usize) -> Result<()> {
        if !self.is_contiguous() {
            return Err(invalid(
                "self",
                format!(
                    "shape {:?} with strides {:?} is not a compact row-major array",
                    self.shape(),
                    self.strides()
                ),
            ));
        }
        if len != self.len() {
            return Err(invalid(
                name,
                format!("{len} elements for a view of {}", self.len()),
            ));
        }
        Ok(())
    }

    /// Copies a contiguous view ([`is_contiguous`](StridedView::is_contiguous)) into a host
    /// slice of as many elements, in order on `stream`, and waits for the copy. Device
    /// memory is copied on a stream of its own device; a view of a buffer is ordered after
    /// the work queued on the buffer's deallocation stream, and refused where the buffer's
    /// own copies are (memory the stream's device cannot reach, such as a pinned pool's
    /// without access granted to it). A view of any layout is read by
    /// [`to_vec`](StridedView::to_vec).
    #[doc(alias = "cuMemcpyAsync")]
    pub fn copy_to_host(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.check_contiguous("dst", dst.len())?;
        let bytes = std::mem::size_of_val(dst);
        if bytes == 0 {
            return Ok(());
        }
        let out = dst.as_mut_ptr() as u64;
        // The unified copy: the view may be of host memory (a pool's is no device pointer to
        // cuMemcpyDtoHAsync).
        self.read_on(stream, |driver, handle| {
            driver.memcpy_async(out, self.ptr, bytes, handle)
        })
    }

    /// Queues `copy`, a read of the view's memory into host memory, in order on `stream`,
    /// after the checks a buffer's own copies make, and waits for it.
    fn read_on(
        &self,
        stream: &Stream,
        copy: impl FnOnce(&'static dyn crate::driver::Driver, crate::driver::StreamHandle) -> Result<()>,
    ) -> Result<()> {
        // A buffer's own check, as for its copies: a pool's host memory that the stream's
        // device was not granted must not reach the driver, which crashed on it. (Device
        // memory is checked against the stream's device below, naming the stream.)
        let _reach = match (
            self.owner.buffer(),
            matches!(self.memory, ViewMemory::Device(_)),
        ) {
            (Some(buffer), false) => Some(buffer.check_reachable(stream, "self", true)?),
            _ => None,
        };
        if let ViewMemory::Device(device) = self.memory {
            if device != stream.device() {
                return Err(invalid(
                    "stream",
                    format!(
                        "the view is of device {}'s memory, the stream of device {}",
                        device.ordinal(),
                        stream.device().ordinal()
                    ),
                ));
            }
        }
        let homes: &[&Stream] = match self.home() {
            Some(home) => &[home],
            None => &[],
        };
        crate::order::in_stream_order(homes, stream, || stream.queue_in_context(copy))?;
        stream.sync_for_host()
    }

    /// The elements of the view in row-major order (the last index fastest), copied to a new
    /// vector, in order on `stream`, waiting for the copy. A contiguous view is one copy
    /// ([`copy_to_host`](StridedView::copy_to_host)). A view of rows (`[rows, cols]` with
    /// unit column stride and rows at least `cols` apart, or `[n]` of any positive stride) is
    /// one 2D copy (`cuMemcpy2DAsync`) of just its elements: a sub-matrix, a column. Any
    /// other layout (negative or zero strides, more dimensions) copies the bytes the view
    /// spans and picks its elements on the host.
    #[doc(alias("cuMemcpyAsync", "cuMemcpy2DAsync"))]
    pub fn to_vec(&self, stream: &Stream) -> Result<Vec<T>>
    where
        T: Default,
    {
        let mut out = vec![T::default(); self.len()];
        if self.is_contiguous() {
            self.copy_to_host(&mut out, stream)?;
            return Ok(out);
        }
        if out.is_empty() {
            return Ok(out);
        }
        let size = std::mem::size_of::<T>();
        // Dimensions of one element add nothing to the layout.
        let dims: Vec<(usize, isize)> = self
            .shape()
            .iter()
            .zip(self.strides())
            .map(|(&e, &s)| (e, s))
            .filter(|&(e, _)| e != 1)
            .collect();
        let rows = match *dims.as_slice() {
            // Rows of `cols` elements, `pitch` elements apart.
            [(rows, pitch), (cols, 1)] if pitch > 0 && pitch as usize >= cols => {
                Some((rows, cols * size, pitch as usize * size))
            }
            // One element a row: a column, or every n-th element.
            [(n, stride)] if stride > 0 => Some((n, size, stride as usize * size)),
            _ => None,
        };
        if let Some((height, width, pitch)) = rows {
            use crate::driver::{PitchedCopy, PitchedMemory, PitchedSide};
            let side = |memory, pitch| PitchedSide {
                memory,
                x: 0,
                y: 0,
                z: 0,
                pitch,
                height,
            };
            let copy = PitchedCopy {
                src: side(PitchedMemory::Unified(self.ptr), pitch),
                dst: side(PitchedMemory::Host(out.as_mut_ptr().cast()), width),
                width,
                height,
                depth: 1,
            };
            self.read_on(stream, |driver, handle| {
                driver.memcpy_2d_async(&copy, handle)
            })?;
            return Ok(out);
        }
        let Some((low, end)) = layout::span(self.shape(), self.strides(), size)
            .map_err(|reason| invalid("self", reason))?
        else {
            return Ok(out);
        };
        let spanned = usize::try_from(end - low).map_err(|_| {
            invalid(
                "self",
                format!("the view spans {} bytes, more than memory holds", end - low),
            )
        })?;
        let mut bytes = vec![0u8; spanned];
        let first = self.ptr.wrapping_add_signed(low as i64);
        let into = bytes.as_mut_ptr() as u64;
        self.read_on(stream, |driver, handle| {
            driver.memcpy_async(into, first, spanned, handle)
        })?;
        let (shape, strides) = (self.shape(), self.strides());
        let mut index = vec![0usize; shape.len()];
        for slot in out.iter_mut() {
            let offset: i128 = index
                .iter()
                .zip(strides)
                .map(|(&i, &s)| i as i128 * s as i128)
                .sum::<i128>()
                * size as i128
                - low;
            let at = offset as usize;
            // SAFETY: `at..at + size` lies within `bytes` (every element lies in the span
            // `low..end` that `bytes` holds); any bytes are a `T` (`Pod`), read unaligned.
            *slot = unsafe { std::ptr::read_unaligned(bytes.as_ptr().add(at).cast::<T>()) };
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(out)
    }

    fn check_host(&self) -> Result<()> {
        if !self.memory.is_host_accessible() {
            return Err(invalid(
                "self",
                format!("{:?} memory is not host-accessible", self.memory),
            ));
        }
        Ok(())
    }

    /// The element at `index`, read by the host, for pinned and managed memory.
    ///
    /// # Safety
    ///
    /// No work on any stream may write the element meanwhile (synchronise the streams that
    /// wrote it first).
    pub unsafe fn host_element(&self, index: &[usize]) -> Result<T> {
        self.check_host()?;
        let ptr = self.element_ptr(index).ok_or_else(|| {
            invalid(
                "index",
                format!("{index:?} is outside shape {:?}", self.shape()),
            )
        })?;
        // SAFETY: host-accessible memory (checked) holding this element (in range, within the
        // span the view was checked or vouched for), aligned (the first element is, and
        // strides count whole elements); any bytes are a `T` (`Pod`); the caller excludes
        // device writes.
        Ok(unsafe { std::ptr::read(ptr.0 as *const T) })
    }

    /// A contiguous view as a host slice, for pinned and managed memory.
    ///
    /// # Safety
    ///
    /// No work on any stream may write the memory while the slice is in use.
    pub unsafe fn as_host_slice(&self) -> Result<&[T]> {
        self.check_host()?;
        self.check_contiguous("self", self.len())?;
        if self.is_empty() {
            return Ok(&[]);
        }
        // SAFETY: host-accessible memory of `len` contiguous, aligned elements from `ptr`
        // (checked), kept allocated by the view's owner while `self` is borrowed; any bytes
        // are a `T`; the caller excludes device writes.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len()) })
    }
}

crate::args::wrapper_arg!(impl<T> StridedView<'_, T>, sized as StridedView<'static, u8>);

impl<T> crate::args::sealed::Arg for StridedView<'_, T> {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (self.ptr_ref() as *const u64).cast(),
            size: std::mem::size_of::<u64>(),
            home: self.home(),
        }
    }
}

impl Buffer {
    /// A compact row-major (C-order) view of `shape` from the buffer's start: see
    /// [`StridedView::new`].
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let buffer = device.memory_resource()?.allocate(4 * 6, &stream)?;
    /// let matrix = buffer.view::<f32>(&[2, 3])?;
    /// assert_eq!(matrix.strides(), [3, 1]);
    /// assert!(buffer.view::<f32>(&[3, 3]).is_err()); // 36 bytes of a 24-byte buffer
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn view<T: Pod>(&self, shape: &[usize]) -> Result<StridedView<'_, T>> {
        StridedView::new(self, 0, shape, None)
    }
}
