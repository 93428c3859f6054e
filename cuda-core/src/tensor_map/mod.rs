//! Tensor maps: descriptors of a tensor in global memory that the Tensor Memory Accelerator
//! (compute capability 9.0 and newer) copies tiles of, to and from shared memory
//! (`cp.async.bulk.tensor`).
//!
//! A [`TensorMap`] is encoded from a [`Buffer`] and a byte offset into it, with the tensor's
//! dimensions and strides and the shape of what each copy moves: a box ([`TiledOptions`],
//! `cuTensorMapEncodeTiled`), or im2col pixels ([`Im2colOptions`], `cuTensorMapEncodeIm2col`;
//! [`Im2colWideOptions`], `cuTensorMapEncodeIm2colWide`). It keeps its buffer alive and is a
//! kernel argument by value: the kernel takes a `const __grid_constant__ CUtensorMap`, a type
//! NVRTC lacks: [`NVRTC_HEADER`] declares it, as a header given in memory (see [`TensorMap`]).
//! Every
//! rule the driver documents is checked before the driver, each refusal naming the rule; and
//! the tensor must lie within the buffer.
//!
//! Dimensions run innermost first, as the driver takes them: a row-major `rows` by `cols`
//! matrix has `dims = [cols, rows]`, and `strides` (in bytes, one per dimension after the
//! first) `[row_pitch]`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_core::{Allocate, Device, StreamOptions, tensor_map::{TensorDataType, TensorMap, TensorMapSwizzle}};
//! use cuda_core::tensor_map::TiledOptions;
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let matrix = Arc::new(device.memory_resource()?.allocate(1024 * 1024 * 4, &stream)?);
//! let options = TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32])
//!     .with_swizzle(TensorMapSwizzle::B128);
//! let map = TensorMap::tiled(&matrix, 0, &options)?;
//! // `&map` is then a kernel argument: `__global__ void k(const __grid_constant__ CUtensorMap m)`.
//! # let _ = map;
//! # Ok::<(), cuda_core::Error>(())
//! ```

mod options;
mod rules;
mod types;

use std::fmt;
use std::sync::Arc;

pub use options::{Im2colOptions, Im2colWideOptions, TiledOptions};
use rules::{check, fast_check_into, Checked, Kind, Layout, Shape};
pub use types::{
    Im2colWideMode, TensorDataType, TensorMapInterleave, TensorMapL2Promotion, TensorMapOobFill,
    TensorMapSwizzle,
};

use crate::args::DeviceRepr;
use crate::context::Context;
use crate::device::Device;
use crate::driver::{Im2colSpec, Im2colWideSpec, TensorMapBytes, TensorSpec};
use crate::error::{Error, Result};
use crate::memory::{Buffer, DevicePtr};

/// The name [`NVRTC_HEADER`] is included by: `#include "cuda_core/tensor_map.h"`.
pub const NVRTC_HEADER_NAME: &str = "cuda_core/tensor_map.h";

/// A declaration of `CUtensorMap` for NVRTC sources, which have no `cuda.h`: the type as the
/// CUDA 13 `cuda.h` declares it (`struct CUtensorMap_st`, 16 opaque 64-bit words aligned to 128
/// bytes: the layout of [`TensorMapDescriptor`]), and `CU_TENSOR_MAP_NUM_QWORDS`. Given to a
/// program as a header in memory under [`NVRTC_HEADER_NAME`]
/// ([`ProgramOptions::with_header`](crate::ProgramOptions::with_header)), a kernel takes
/// `const __grid_constant__ CUtensorMap` parameters, which a [`TensorMap`] fills. A source that
/// includes `cuda.h` first keeps `cuda.h`'s declaration (this one steps aside).
///
/// ```
/// use cuda_core::tensor_map::{NVRTC_HEADER, NVRTC_HEADER_NAME};
///
/// assert_eq!(NVRTC_HEADER_NAME, "cuda_core/tensor_map.h");
/// assert!(NVRTC_HEADER.contains("alignas(128) unsigned long long opaque["));
/// assert!(NVRTC_HEADER.contains("#define CU_TENSOR_MAP_NUM_QWORDS 16"));
/// ```
pub const NVRTC_HEADER: &str = "\
// cuda-core: CUtensorMap as cuda.h declares it, for NVRTC sources.
#ifndef CUDA_CORE_TENSOR_MAP_H
#define CUDA_CORE_TENSOR_MAP_H
#ifndef CU_TENSOR_MAP_NUM_QWORDS
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {
    alignas(128) unsigned long long opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
#endif
#endif
";

/// The most dimensions a tensor map has.
pub const TENSOR_MAP_MAX_RANK: usize = 5;

/// The 128 bytes of a tensor map (`CUtensorMap`), as a kernel takes it by value (a
/// [`DeviceRepr`]): aligned to 128 bytes, as the CUDA 13 header declares it (the driver needs
/// 64). It refers to global memory by address and keeps nothing alive: see [`TensorMap`] for
/// one that keeps its buffer.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "CUtensorMap")]
pub struct TensorMapDescriptor(TensorMapBytes);

const _: () = {
    assert!(std::mem::size_of::<TensorMapDescriptor>() == 128);
    assert!(std::mem::align_of::<TensorMapDescriptor>() == 128);
};

// SAFETY: `#[repr(C)]` plain data of the `CUtensorMap` layout (128 bytes, aligned beyond the
// 64 bytes kernels read it at), with no host pointers.
unsafe impl DeviceRepr for TensorMapDescriptor {}

impl fmt::Debug for TensorMapDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TensorMapDescriptor(")?;
        for word in &self.0 .0 {
            write!(f, "{word:016x}")?;
        }
        f.write_str(")")
    }
}

impl TensorMapDescriptor {
    /// Encodes a tiled map of the tensor at `address`, for kernels on `device`, after every
    /// check of [`TensorMap::tiled`] but that the tensor lies within a buffer (nothing here
    /// knows the memory at `address`: a kernel that uses the map may only reach memory that
    /// the tensor does cover).
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tiled(
        device: Device,
        address: DevicePtr,
        options: &TiledOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_tiled(options), RAW, None).map(|(d, _)| d)
    }

    /// Encodes an im2col map of the tensor at `address`: see [`TensorMapDescriptor::tiled`].
    #[doc(alias = "cuTensorMapEncodeIm2col")]
    pub fn im2col(
        device: Device,
        address: DevicePtr,
        options: &Im2colOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_im2col(options), RAW, None).map(|(d, _)| d)
    }

    /// Encodes a wide im2col map of the tensor at `address`: see
    /// [`TensorMapDescriptor::tiled`].
    #[doc(alias = "cuTensorMapEncodeIm2colWide")]
    pub fn im2col_wide(
        device: Device,
        address: DevicePtr,
        options: &Im2colWideOptions,
    ) -> Result<TensorMapDescriptor> {
        encode(device, address, &Layout::of_im2col_wide(options), RAW, None).map(|(d, _)| d)
    }

    /// The opaque words, as the driver wrote them.
    pub fn as_words(&self) -> &[u64; 16] {
        &self.0 .0
    }

    /// A descriptor of these words (made elsewhere, by the driver).
    pub fn from_words(words: [u64; 16]) -> TensorMapDescriptor {
        TensorMapDescriptor(TensorMapBytes(words))
    }
}

/// A tensor map over a [`Buffer`] (from a byte offset into it), which it keeps alive: a
/// kernel argument passed by value, as the kernel's `const __grid_constant__ CUtensorMap`
/// parameter takes it (128 bytes). In a [`launch`](crate::launch) it is ordered as its buffer
/// is (see there), and a graph's kernel node keeps its buffer.
///
/// NVRTC has no `cuda.h`, so no `CUtensorMap`: a source includes [`NVRTC_HEADER`], given to
/// the program as a header in memory, for the type.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_core::tensor_map::{
///     TensorDataType, TensorMap, TiledOptions, NVRTC_HEADER, NVRTC_HEADER_NAME,
/// };
/// use cuda_core::{launch, Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions};
/// use cuda_core::StreamOptions;
///
/// let source = r#"
/// #include "cuda_core/tensor_map.h"
/// extern "C" __global__ void prefetch(const __grid_constant__ CUtensorMap map) {
///     asm volatile("prefetch.tensormap [%0];" :: "l"(&map) : "memory");
/// }"#;
/// let options = ProgramOptions::default().with_header(NVRTC_HEADER_NAME, NVRTC_HEADER);
/// let code = Program::new(source, options).compile(CodeType::Cubin, &[])?;
/// let kernel = code.get_kernel("prefetch")?;
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let matrix = Arc::new(device.memory_resource()?.allocate(1024 * 1024 * 4, &stream)?);
/// let tiled = TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32]);
/// let map = TensorMap::tiled(&matrix, 0, &tiled)?;
/// // SAFETY: the kernel takes one tensor map and reads nothing through it.
/// unsafe { launch(&stream, &LaunchConfig::new([1, 1, 1], [32, 1, 1]), &kernel, &[&map]) }?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
///
/// Checked before the driver: every rule of `cuTensorMapEncode*` (rank, alignment of the
/// address to 16 bytes, or 32 with [`TensorMapInterleave::B32`] and the 16-byte-aligned packed
/// types; strides; box and element-stride limits; swizzle, interleave and data-type
/// combinations; im2col corners and pixel counts), the device's compute capability (9.0; 10.0
/// for wide im2col), and that the tensor (from the offset, as far as its dimensions and
/// strides reach) lies within the buffer. Each refusal is [`Error::InvalidArgument`] naming
/// the field and the rule.
#[repr(C)]
pub struct TensorMap {
    /// First, so that the map's leading bytes are its kernel argument.
    descriptor: TensorMapDescriptor,
    buffer: Arc<Buffer>,
    offset: usize,
    /// The alignment the tensor's address needs, and the bytes the tensor spans.
    align: u64,
    span: u64,
}

impl Clone for TensorMap {
    fn clone(&self) -> TensorMap {
        TensorMap {
            descriptor: self.descriptor,
            buffer: self.buffer.clone(),
            offset: self.offset,
            align: self.align,
            span: self.span,
        }
    }
}

impl fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TensorMap")
            .field("address", &format_args!("{:#x}", self.address().0))
            .field("span", &self.span)
            .field("buffer", &self.buffer)
            .finish()
    }
}

impl TensorMap {
    /// A tiled map of the tensor at `offset` bytes into `buffer` (`cuTensorMapEncodeTiled`),
    /// for kernels on the device of the buffer's deallocation stream.
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn tiled(buffer: &Arc<Buffer>, offset: usize, options: &TiledOptions) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_tiled(options))
    }

    /// An im2col map of the tensor at `offset` bytes into `buffer`
    /// (`cuTensorMapEncodeIm2col`).
    #[doc(alias = "cuTensorMapEncodeIm2col")]
    pub fn im2col(
        buffer: &Arc<Buffer>,
        offset: usize,
        options: &Im2colOptions,
    ) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_im2col(options))
    }

    /// A wide im2col map of the tensor at `offset` bytes into `buffer`
    /// (`cuTensorMapEncodeIm2colWide`, compute capability 10.0 and newer).
    #[doc(alias = "cuTensorMapEncodeIm2colWide")]
    pub fn im2col_wide(
        buffer: &Arc<Buffer>,
        offset: usize,
        options: &Im2colWideOptions,
    ) -> Result<TensorMap> {
        TensorMap::encode_in(buffer, offset, &Layout::of_im2col_wide(options))
    }

    #[inline]
    fn encode_in(buffer: &Arc<Buffer>, offset: usize, layout: &Layout<'_>) -> Result<TensorMap> {
        let address = address_in(buffer, offset)?;
        let stream = buffer.deallocation_stream();
        let mut checked = Checked::EMPTY;
        prepare(
            stream.device(),
            address,
            layout,
            ("offset", "buffer"),
            Some((buffer, offset)),
            &mut checked,
        )?;
        TensorMap::encoded(buffer, offset, address, layout, &checked)
    }

    /// The map of a layout that passed its checks (`checked`) at `offset` bytes into `buffer`,
    /// its descriptor zero until it is encoded in place.
    #[inline]
    fn unencoded(buffer: &Arc<Buffer>, offset: usize, checked: &Checked) -> TensorMap {
        TensorMap {
            descriptor: TensorMapDescriptor(TensorMapBytes::ZERO),
            buffer: buffer.clone(),
            offset,
            align: checked.align,
            span: checked.span,
        }
    }

    /// The map of a layout that passed its checks at `offset` bytes (`address`) into
    /// `buffer`, encoded in place into the map returned, in the buffer's stream's context.
    #[inline]
    fn encoded(
        buffer: &Arc<Buffer>,
        offset: usize,
        address: DevicePtr,
        layout: &Layout<'_>,
        checked: &Checked,
    ) -> Result<TensorMap> {
        let mut map = TensorMap::unencoded(buffer, offset, checked);
        encode_into(
            buffer.deallocation_stream().context(),
            address,
            layout,
            checked,
            &mut map.descriptor,
        )?;
        Ok(map)
    }

    /// A map of the tensor at `offset` bytes into `buffer` with a layout checked once
    /// ([`TensorMapLayout`]): only what depends on the buffer is checked here (its device is
    /// the layout's, the address's alignment, that the tensor lies within the buffer) before
    /// the driver encodes it. For maps made often with one layout over changing buffers.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorMapLayout, TiledOptions};
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let layout = TensorMapLayout::tiled(
    ///     device,
    ///     &TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32]),
    /// )?;
    /// for _ in 0..3 {
    ///     let matrix = Arc::new(device.memory_resource()?.allocate(1024 * 1024 * 4, &stream)?);
    ///     let map = TensorMap::with_layout(&matrix, 0, &layout)?;
    ///     # let _ = map;
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col"))]
    #[inline]
    pub fn with_layout(
        buffer: &Arc<Buffer>,
        offset: usize,
        layout: &TensorMapLayout,
    ) -> Result<TensorMap> {
        let address = layout_address(buffer, offset, layout)?;
        let mut map = TensorMap::unencoded(buffer, offset, &layout.checked);
        encode_with(buffer, address, layout, &mut map.descriptor)?;
        Ok(map)
    }

    /// Encodes the map again, in place, for the tensor at `offset` bytes into `buffer` with
    /// `layout`: [`TensorMap::with_layout`]'s checks and encoding, into this map, which then
    /// keeps `buffer` (where it is the buffer it kept, no reference count changes). For a
    /// map kept as a kernel's argument while the tensor it points at changes: no new map is
    /// made or dropped per encoding. On an error the map is left as it was.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_core::tensor_map::{TensorDataType, TensorMap, TensorMapLayout, TiledOptions};
    /// use cuda_core::{Allocate, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let layout = TensorMapLayout::tiled(
    ///     device,
    ///     &TiledOptions::new(TensorDataType::F32, &[1024, 1024], &[32, 32]),
    /// )?;
    /// let pool = device.memory_resource()?;
    /// let first = Arc::new(pool.allocate(1024 * 1024 * 4, &stream)?);
    /// let mut map = TensorMap::with_layout(&first, 0, &layout)?;
    /// for _ in 0..3 {
    ///     let next = Arc::new(pool.allocate(1024 * 1024 * 4, &stream)?);
    ///     map.reencode(&next, 0, &layout)?;
    ///     // ... launch kernels taking `&map` ...
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuTensorMapEncodeTiled")]
    pub fn reencode(
        &mut self,
        buffer: &Arc<Buffer>,
        offset: usize,
        layout: &TensorMapLayout,
    ) -> Result<()> {
        let address = layout_address(buffer, offset, layout)?;
        // Into a copy: a failed encoding must not leave the map pointing where it keeps
        // nothing alive.
        let mut descriptor = TensorMapDescriptor(TensorMapBytes::ZERO);
        encode_with(buffer, address, layout, &mut descriptor)?;
        self.descriptor = descriptor;
        if !Arc::ptr_eq(&self.buffer, buffer) {
            self.buffer = buffer.clone();
        }
        self.offset = offset;
        self.align = layout.checked.align;
        self.span = layout.checked.span;
        Ok(())
    }

    /// Points the map at the same tensor layout at `offset` bytes into `buffer`
    /// (`cuTensorMapReplaceAddress`), which it then keeps instead. Checked before the driver:
    /// the buffer is of the device the map was encoded for (its deallocation stream's, as for
    /// the encoding), the address's alignment, as for the map's encoding, and that the tensor
    /// lies within the buffer. On an error the map is left as it was.
    #[doc(alias = "cuTensorMapReplaceAddress")]
    pub fn replace_address(&mut self, buffer: &Arc<Buffer>, offset: usize) -> Result<()> {
        let (own, new) = (
            self.buffer.deallocation_stream().device(),
            buffer.deallocation_stream().device(),
        );
        if own != new {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "the map was encoded for device {}, and the buffer is of device {}'s \
                     stream; encode a map for it",
                    own.ordinal(),
                    new.ordinal()
                ),
            });
        }
        let address = address_in(buffer, offset)?;
        check_alignment(address, self.align, "offset")?;
        fits(buffer, offset, self.span)?;
        let mut descriptor = self.descriptor;
        let context = buffer.deallocation_stream().context();
        context.with_current(|driver| {
            driver.tensor_map_replace_address(&mut descriptor.0, address.0)
        })?;
        self.descriptor = descriptor;
        self.buffer = buffer.clone();
        self.offset = offset;
        Ok(())
    }

    /// The descriptor, as a kernel receives it.
    pub fn descriptor(&self) -> &TensorMapDescriptor {
        &self.descriptor
    }

    /// The buffer the map points into.
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The tensor's offset into the buffer, in bytes.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The tensor's address.
    pub fn address(&self) -> DevicePtr {
        DevicePtr(self.buffer.ptr().0 + self.offset as u64)
    }

    /// The bytes the tensor spans from its address, as far as its dimensions and strides
    /// reach.
    pub fn span_bytes(&self) -> u64 {
        self.span
    }
}

crate::args::wrapper_arg!(TensorMap);
impl crate::args::GraphArg for TensorMap {}

impl crate::args::sealed::Arg for TensorMap {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (&self.descriptor as *const TensorMapDescriptor).cast(),
            size: std::mem::size_of::<TensorMapDescriptor>(),
            home: Some(self.buffer.deallocation_stream()),
        }
    }

    fn buffer(&self) -> Option<&dyn std::any::Any> {
        Some(&self.buffer)
    }
}

/// A tensor map's layout checked once, for one device: every rule of the encoding and the
/// device's compute capability, so that [`TensorMap::with_layout`] checks only what depends on
/// the buffer (its device, the address's alignment and the tensor's extent).
#[derive(Clone, Debug)]
pub struct TensorMapLayout {
    device: Device,
    options: LayoutOptions,
    checked: Checked,
    /// A tiled layout's driver arguments gathered once, beside the checked arrays: the
    /// encoding reads no option's heap storage ([`TensorMap::with_layout`]'s path).
    tiled: Option<TiledArgs>,
}

/// What `cuTensorMapEncodeTiled` takes besides the address and [`Checked`]'s arrays.
#[derive(Clone, Copy, Debug)]
struct TiledArgs {
    data_type: u32,
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
    box_dims: [u32; TENSOR_MAP_MAX_RANK],
}

impl TiledArgs {
    fn of(options: &TiledOptions) -> TiledArgs {
        let mut box_dims = [0; TENSOR_MAP_MAX_RANK];
        for (to, from) in box_dims.iter_mut().zip(&options.box_dims) {
            *to = *from;
        }
        TiledArgs {
            data_type: options.data_type.code(),
            interleave: options.interleave.code(),
            swizzle: options.swizzle.code(),
            l2_promotion: options.l2_promotion.code(),
            oob_fill: options.oob_fill.code(),
            box_dims,
        }
    }
}

/// The options a [`TensorMapLayout`] was checked from.
#[derive(Clone, Debug)]
enum LayoutOptions {
    Tiled(TiledOptions),
    Im2col(Im2colOptions),
    Wide(Im2colWideOptions),
}

impl LayoutOptions {
    #[inline]
    fn layout(&self) -> Layout<'_> {
        match self {
            LayoutOptions::Tiled(o) => Layout::of_tiled(o),
            LayoutOptions::Im2col(o) => Layout::of_im2col(o),
            LayoutOptions::Wide(o) => Layout::of_im2col_wide(o),
        }
    }
}

impl TensorMapLayout {
    /// A tiled layout for maps on `device`, checked as [`TensorMap::tiled`] checks it.
    pub fn tiled(device: Device, options: &TiledOptions) -> Result<TensorMapLayout> {
        TensorMapLayout::checked(device, LayoutOptions::Tiled(options.clone()))
    }

    /// An im2col layout for maps on `device`, checked as [`TensorMap::im2col`] checks it.
    pub fn im2col(device: Device, options: &Im2colOptions) -> Result<TensorMapLayout> {
        TensorMapLayout::checked(device, LayoutOptions::Im2col(options.clone()))
    }

    /// A wide im2col layout for maps on `device` (compute capability 10.0 and newer), checked
    /// as [`TensorMap::im2col_wide`] checks it.
    pub fn im2col_wide(device: Device, options: &Im2colWideOptions) -> Result<TensorMapLayout> {
        TensorMapLayout::checked(device, LayoutOptions::Wide(options.clone()))
    }

    fn checked(device: Device, options: LayoutOptions) -> Result<TensorMapLayout> {
        let layout = options.layout();
        let checked = check(&layout)?;
        check_device(device, layout.kind, "device")?;
        let tiled = match &options {
            LayoutOptions::Tiled(o) => Some(TiledArgs::of(o)),
            _ => None,
        };
        Ok(TensorMapLayout {
            device,
            options,
            checked,
            tiled,
        })
    }

    /// The device its maps are for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The bytes a tensor of this layout spans from its address.
    pub fn span_bytes(&self) -> u64 {
        self.checked.span
    }

    /// The alignment in bytes its tensors' addresses need (16, or 32).
    pub fn alignment(&self) -> u64 {
        self.checked.align
    }
}

/// The address of the tensor at `offset` bytes into `buffer`, after the checks of a layout
/// checked once that depend on the buffer: its device is the layout's, the address's
/// alignment, the tensor's extent ([`TensorMap::with_layout`], [`TensorMap::reencode`]).
#[inline]
fn layout_address(
    buffer: &Arc<Buffer>,
    offset: usize,
    layout: &TensorMapLayout,
) -> Result<DevicePtr> {
    let device = buffer.deallocation_stream().device();
    if device != layout.device {
        return Err(other_device(layout.device, device));
    }
    let address = address_in(buffer, offset)?;
    check_alignment(address, layout.checked.align, "offset")?;
    fits(buffer, offset, layout.checked.span)?;
    Ok(address)
}

/// Encodes the tensor at `address` in `buffer` (checked by [`layout_address`]) with `layout`
/// into `descriptor`, in the buffer's stream's context.
#[inline]
fn encode_with(
    buffer: &Arc<Buffer>,
    address: DevicePtr,
    layout: &TensorMapLayout,
    descriptor: &mut TensorMapDescriptor,
) -> Result<()> {
    let Some(args) = &layout.tiled else {
        return encode_im2col_with(buffer, address, layout, descriptor);
    };
    // A tiled layout: its arguments as gathered once, the context's handle and the driver
    // from the stream (no load through its context).
    let checked = &layout.checked;
    let rank = checked.rank;
    let tensor = TensorSpec {
        data_type: args.data_type,
        address: address.0,
        dims: &checked.dims[..rank],
        strides: &checked.strides[..rank - 1],
        element_strides: &checked.element_strides[..rank],
        interleave: args.interleave,
        swizzle: args.swizzle,
        l2_promotion: args.l2_promotion,
        oob_fill: args.oob_fill,
    };
    let (driver, context) = buffer.deallocation_stream().driver_and_context();
    crate::lifetime::current::with_current(driver, context, |driver| {
        driver.tensor_map_encode_tiled(&mut descriptor.0, &tensor, &args.box_dims[..rank])
    })
}

/// [`encode_with`]'s encoding of an im2col layout, out of the tiled one's way.
#[inline(never)]
fn encode_im2col_with(
    buffer: &Arc<Buffer>,
    address: DevicePtr,
    layout: &TensorMapLayout,
    descriptor: &mut TensorMapDescriptor,
) -> Result<()> {
    encode_into(
        buffer.deallocation_stream().context(),
        address,
        &layout.options.layout(),
        &layout.checked,
        descriptor,
    )
}

fn other_device(own: Device, buffer: Device) -> Error {
    Error::InvalidArgument {
        name: "buffer",
        reason: format!(
            "the layout was checked for device {}, and the buffer is of device {}'s stream; \
             check a layout for it",
            own.ordinal(),
            buffer.ordinal()
        ),
    }
}

/// The address `offset` bytes into `buffer`, refused past its end.
#[inline]
fn address_in(buffer: &Buffer, offset: usize) -> Result<DevicePtr> {
    if offset >= buffer.size() {
        return Err(past_end(offset, buffer.size()));
    }
    Ok(DevicePtr(buffer.ptr().0 + offset as u64))
}

#[cold]
#[inline(never)]
fn past_end(offset: usize, size: usize) -> Error {
    Error::InvalidArgument {
        name: "offset",
        reason: format!("{offset} bytes is at or past the end of the {size}-byte buffer"),
    }
}

/// Refuses a tensor that reaches past the end of its buffer.
#[inline]
fn fits(buffer: &Buffer, offset: usize, span: u64) -> Result<()> {
    let available = (buffer.size() - offset) as u64;
    if span > available {
        return Err(too_long(span, offset, buffer.size(), available));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn too_long(span: u64, offset: usize, size: usize, available: u64) -> Error {
    Error::InvalidArgument {
        name: "buffer",
        reason: format!(
            "the tensor spans {span} bytes from offset {offset}, past the end of the \
             {size}-byte buffer ({available} bytes from the offset)"
        ),
    }
}

#[inline]
fn check_alignment(address: DevicePtr, align: u64, name: &'static str) -> Result<()> {
    // `align` is 16 or 32: a mask, not a division (this is on the encode's path).
    if address.0 & (align - 1) != 0 {
        return Err(misaligned(address, align, name));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn misaligned(address: DevicePtr, align: u64, name: &'static str) -> Error {
    Error::InvalidArgument {
        name,
        reason: format!(
            "the tensor's address {:#x} is not aligned to {align} bytes, as tensor maps \
             need{}",
            address.0,
            if align > 16 {
                " with 32-byte interleave or a 16-byte-aligned packed type"
            } else {
                ""
            }
        ),
    }
}

/// The names [`TensorMapDescriptor`]'s encodings give the address and the device in errors.
const RAW: (&str, &str) = ("address", "device");

/// Checks the layout, the device and that the tensor lies `within` its buffer (from an
/// offset) where it has one, then encodes; `names` are what errors call the address and the
/// device.
#[inline]
fn encode(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
) -> Result<(TensorMapDescriptor, Checked)> {
    let mut checked = Checked::EMPTY;
    prepare(device, address, layout, names, within, &mut checked)?;
    let mut descriptor = TensorMapDescriptor(TensorMapBytes::ZERO);
    encode_into(
        &device.primary_context()?,
        address,
        layout,
        &checked,
        &mut descriptor,
    )?;
    Ok((descriptor, checked))
}

/// [`encode`]'s checks, filling `checked` in place (moving it out of an `Option` and
/// `Result`s was a quarter of cuda-core's own time on the encode, by perf against the stand-in
/// driver): every rule as one condition without messages, and where one fails,
/// [`prepare_detailed`] for the error (or, should every rule hold after all, its answer).
/// `within`'s offset is within its buffer.
#[inline]
fn prepare(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
    checked: &mut Checked,
) -> Result<()> {
    let passed = fast_check_into(layout, checked)
        && address.0 & (checked.align - 1) == 0
        && within.is_none_or(|(buffer, offset)| checked.span <= (buffer.size() - offset) as u64)
        && device_can_encode(device, layout.kind);
    if passed {
        return Ok(());
    }
    *checked = prepare_detailed(device, address, layout, names, within)?;
    Ok(())
}

/// [`prepare`]'s checks one by one: the error of the first rule broken.
#[cold]
#[inline(never)]
fn prepare_detailed(
    device: Device,
    address: DevicePtr,
    layout: &Layout<'_>,
    names: (&'static str, &'static str),
    within: Option<(&Buffer, usize)>,
) -> Result<Checked> {
    let checked = check(layout)?;
    check_alignment(address, checked.align, names.0)?;
    check_device(device, layout.kind, names.1)?;
    if let Some((buffer, offset)) = within {
        fits(buffer, offset, checked.span)?;
    }
    Ok(checked)
}

/// Whether `device`'s compute capability takes maps of `kind` ([`check_device`] without the
/// message; `false` where the attribute cannot be read).
#[inline]
fn device_can_encode(device: Device, kind: Kind) -> bool {
    let needed = if kind == Kind::Wide { 10 } else { 9 };
    device
        .attribute(COMPUTE_CAPABILITY_MAJOR)
        .is_ok_and(|major| major >= needed)
}

/// [`encode`]'s driver call in `context` (made current for it), writing `descriptor`, for a
/// layout [`prepare`] passed.
#[inline]
fn encode_into(
    context: &Context,
    address: DevicePtr,
    layout: &Layout<'_>,
    checked: &Checked,
    descriptor: &mut TensorMapDescriptor,
) -> Result<()> {
    let rank = checked.rank;
    let tensor = TensorSpec {
        data_type: layout.tensor.data_type.code(),
        address: address.0,
        dims: &checked.dims[..rank],
        strides: &checked.strides[..rank - 1],
        element_strides: &checked.element_strides[..rank],
        interleave: layout.tensor.interleave.code(),
        swizzle: layout.tensor.swizzle.code(),
        l2_promotion: layout.tensor.l2_promotion.code(),
        oob_fill: layout.tensor.oob_fill.code(),
    };
    let out = &mut descriptor.0;
    context.with_current(|driver| match &layout.shape {
        Shape::Tiled { box_dims } => {
            driver.tensor_map_encode_tiled(out, &tensor, &box_dims[..rank])
        }
        Shape::Im2col {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
        } => driver.tensor_map_encode_im2col(
            out,
            &tensor,
            &Im2colSpec {
                lower,
                upper,
                channels_per_pixel: *channels_per_pixel,
                pixels_per_column: *pixels_per_column,
            },
        ),
        Shape::Wide {
            lower,
            upper,
            channels_per_pixel,
            pixels_per_column,
            mode,
        } => driver.tensor_map_encode_im2col_wide(
            out,
            &tensor,
            &Im2colWideSpec {
                lower: *lower,
                upper: *upper,
                channels_per_pixel: *channels_per_pixel,
                pixels_per_column: *pixels_per_column,
                mode: mode.code(),
            },
        ),
    })
}

/// Tensor maps need compute capability 9.0, wide im2col 10.0.
#[inline]
fn check_device(device: Device, kind: Kind, name: &'static str) -> Result<()> {
    // The major alone on the encode's path; the minor only for the message.
    let major = device.attribute(COMPUTE_CAPABILITY_MAJOR)?;
    let needed = if kind == Kind::Wide { 10 } else { 9 };
    if major < needed {
        return Err(too_old(device, kind, name, needed));
    }
    Ok(())
}

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const COMPUTE_CAPABILITY_MAJOR: i32 = 75;

#[cold]
fn too_old(device: Device, kind: Kind, name: &'static str, needed: i32) -> Error {
    match device.compute_capability() {
        Err(e) => e,
        Ok((major, minor)) => Error::InvalidArgument {
            name,
            reason: format!(
                "{} need compute capability {needed}.0; device {} is {major}.{minor}",
                if kind == Kind::Wide {
                    "wide im2col tensor maps"
                } else {
                    "tensor maps"
                },
                device.ordinal()
            ),
        },
    }
}
#[cfg(test)]
mod tests;
