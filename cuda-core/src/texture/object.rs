//! Texture objects (`cuTexObjectCreate`).

use std::fmt;
use std::sync::Arc;

use super::array::{Array, ArrayKind, MipmappedArray};
use super::{check_channels, settle, ArrayFormat};
use crate::context::Context;
use crate::device::Device;
use crate::driver::{ResourceSpec, TextureSpec};
use crate::error::{Error, Result};
use crate::stream::Stream;
use crate::Buffer;

/// `CU_TRSF_READ_AS_INTEGER`.
const READ_AS_INTEGER: u32 = 0x01;
/// `CU_TRSF_NORMALIZED_COORDINATES`.
const NORMALIZED_COORDINATES: u32 = 0x02;
/// `CU_TRSF_SRGB`.
const SRGB: u32 = 0x10;
/// `CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`.
const DISABLE_TRILINEAR_OPTIMIZATION: u32 = 0x20;
/// `CU_TRSF_SEAMLESS_CUBEMAP`.
const SEAMLESS_CUBEMAP: u32 = 0x40;

/// What a fetch outside the texture reads, per dimension (`CUaddress_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUaddress_mode")]
pub enum AddressMode {
    /// The texture repeats (normalized coordinates only).
    Wrap,
    /// The edge element (the default).
    #[default]
    Clamp,
    /// The texture repeats mirrored (normalized coordinates only).
    Mirror,
    /// The border colour.
    Border,
}

impl AddressMode {
    pub(crate) fn code(self) -> u32 {
        match self {
            AddressMode::Wrap => 0,
            AddressMode::Clamp => 1,
            AddressMode::Mirror => 2,
            AddressMode::Border => 3,
        }
    }
}

/// How a fetch between elements is answered (`CUfilter_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUfilter_mode")]
pub enum FilterMode {
    /// The nearest element (the default).
    #[default]
    Point,
    /// Linear interpolation of the nearest 2 (1D), 4 (2D) or 8 (3D) elements, with 8-bit
    /// fractional weights: for fetches that return floats only.
    Linear,
}

impl FilterMode {
    pub(crate) fn code(self) -> u32 {
        match self {
            FilterMode::Point => 0,
            FilterMode::Linear => 1,
        }
    }
}

/// What a fetch returns for integer data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadMode {
    /// The element as stored (`CU_TRSF_READ_AS_INTEGER`; the default).
    #[default]
    ElementType,
    /// 8 and 16-bit integers as floats in 0 to 1 (-1 to 1 signed): the driver's default,
    /// without `CU_TRSF_READ_AS_INTEGER`. (32-bit integers are never promoted.)
    NormalizedFloat,
}

/// How a texture reads (`CUDA_TEXTURE_DESC`). Checked before the driver: wrap and mirror
/// address modes and mipmapped arrays need normalized coordinates; linear filtering needs a
/// fetch that returns floats (half or float data, or 8 and 16-bit integers read as
/// [`ReadMode::NormalizedFloat`]); a seamless cubemap needs a cubemap array.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(alias = "CUDA_TEXTURE_DESC")]
#[non_exhaustive]
pub struct TextureOptions {
    /// Per dimension (x, y, z).
    pub address_mode: [AddressMode; 3],
    /// Between elements.
    pub filter: FilterMode,
    /// For integer data.
    pub read_mode: ReadMode,
    /// Coordinates from 0 to 1 across each dimension (`CU_TRSF_NORMALIZED_COORDINATES`),
    /// rather than 0 to its size.
    pub normalized_coordinates: bool,
    /// sRGB to linear conversion on fetch (`CU_TRSF_SRGB`).
    pub srgb: bool,
    /// The colour [`AddressMode::Border`] reads, held in the texels' format: with 8-bit
    /// unsigned normalized texels, 0.25 reads back as 64/255 (about 0.25098).
    pub border_color: [f32; 4],
    /// The largest anisotropy ratio (the driver clamps it to 1 to 16).
    pub max_anisotropy: u32,
    /// Between mipmap levels.
    pub mipmap_filter: FilterMode,
    /// Added to the computed mipmap level.
    pub mipmap_level_bias: f32,
    /// The least detailed level fetched from, at most.
    pub min_mipmap_level_clamp: f32,
    /// The most detailed level fetched from, at least.
    pub max_mipmap_level_clamp: f32,
    /// No trilinear optimisation (`CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION`).
    pub disable_trilinear_optimization: bool,
    /// Seamless filtering across cubemap faces (`CU_TRSF_SEAMLESS_CUBEMAP`).
    pub seamless_cubemap: bool,
}

impl Default for TextureOptions {
    fn default() -> TextureOptions {
        TextureOptions {
            address_mode: [AddressMode::Clamp; 3],
            filter: FilterMode::Point,
            read_mode: ReadMode::ElementType,
            normalized_coordinates: false,
            srgb: false,
            border_color: [0.0; 4],
            max_anisotropy: 0,
            mipmap_filter: FilterMode::Point,
            mipmap_level_bias: 0.0,
            min_mipmap_level_clamp: 0.0,
            max_mipmap_level_clamp: 0.0,
            disable_trilinear_optimization: false,
            seamless_cubemap: false,
        }
    }
}

crate::options::chainers!(TextureOptions {
    with_address_mode(address_mode: [AddressMode; 3]);
    with_filter(filter: FilterMode);
    with_read_mode(read_mode: ReadMode);
    with_normalized_coordinates(normalized_coordinates: bool);
    with_srgb(srgb: bool);
    with_border_color(border_color: [f32; 4]);
    with_max_anisotropy(max_anisotropy: u32);
    with_mipmap_filter(mipmap_filter: FilterMode);
    with_mipmap_level_bias(mipmap_level_bias: f32);
    with_min_mipmap_level_clamp(min_mipmap_level_clamp: f32);
    with_max_mipmap_level_clamp(max_mipmap_level_clamp: f32);
    with_disable_trilinear_optimization(disable_trilinear_optimization: bool);
    with_seamless_cubemap(seamless_cubemap: bool);
});

impl TextureOptions {
    /// The same address mode in every dimension.
    #[must_use]
    pub fn with_address_mode_all(self, mode: AddressMode) -> TextureOptions {
        self.with_address_mode([mode; 3])
    }

    pub(crate) fn spec(&self) -> TextureSpec {
        let mut flags = 0;
        if self.read_mode == ReadMode::ElementType {
            flags |= READ_AS_INTEGER;
        }
        if self.normalized_coordinates {
            flags |= NORMALIZED_COORDINATES;
        }
        if self.srgb {
            flags |= SRGB;
        }
        if self.disable_trilinear_optimization {
            flags |= DISABLE_TRILINEAR_OPTIMIZATION;
        }
        if self.seamless_cubemap {
            flags |= SEAMLESS_CUBEMAP;
        }
        TextureSpec {
            address: self.address_mode.map(AddressMode::code),
            filter: self.filter.code(),
            flags,
            max_anisotropy: self.max_anisotropy,
            mipmap_filter: self.mipmap_filter.code(),
            mipmap_level_bias: self.mipmap_level_bias,
            min_mipmap_level_clamp: self.min_mipmap_level_clamp,
            max_mipmap_level_clamp: self.max_mipmap_level_clamp,
            border_color: self.border_color,
        }
    }
}

/// Linear memory a texture reads: `width` elements of `format` and `channels` from `offset`
/// bytes into a buffer, and for a 2D texture (`height` above 0) `height` rows `pitch` bytes
/// apart (`CU_RESOURCE_TYPE_LINEAR`, `CU_RESOURCE_TYPE_PITCH2D`). Checked before the driver:
/// the address aligned to the device's texture alignment, the pitch to its texture pitch
/// alignment, the 2D sizes within its linear limits, and the elements within the buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "CU_RESOURCE_TYPE_LINEAR")]
pub struct TextureLinear {
    /// Where the elements start in the buffer, in bytes.
    pub offset: usize,
    /// The type of each channel.
    pub format: ArrayFormat,
    /// Channels per element: 1, 2 or 4 (0 counts as 1).
    pub channels: u32,
    /// Elements per row (a 1D texture's elements).
    pub width: usize,
    /// Rows; 0 for a 1D texture.
    pub height: usize,
    /// Bytes from one row to the next (2D textures).
    pub pitch: usize,
}

crate::options::chainers!(TextureLinear {
    with_offset(offset: usize);
    with_format(format: ArrayFormat);
    with_channels(channels: u32);
    with_width(width: usize);
    with_height(height: usize);
    with_pitch(pitch: usize);
});

impl TextureLinear {
    /// `width` elements of one channel.
    pub fn one_d(format: ArrayFormat, width: usize) -> TextureLinear {
        TextureLinear {
            format,
            channels: 1,
            width,
            ..Default::default()
        }
    }

    /// `height` rows of `width` elements of one channel, `pitch` bytes apart.
    pub fn two_d(format: ArrayFormat, width: usize, height: usize, pitch: usize) -> TextureLinear {
        TextureLinear {
            height,
            pitch,
            ..TextureLinear::one_d(format, width)
        }
    }

    fn element_bytes(&self) -> usize {
        self.format.bytes() * self.channels.max(1) as usize
    }
}

/// What a texture reads, and keeps alive.
enum Source {
    Array(Arc<Array>),
    Mipmapped(Arc<MipmappedArray>),
    Linear(Arc<Buffer>),
    Pitched(Arc<crate::memory::PitchedBuffer>),
}

/// The texture object, destroyed (after its home stream's work) when the last clone drops.
struct Object {
    handle: u64,
    source: Source,
    home: Stream,
    context: Context,
}

impl Drop for Object {
    fn drop(&mut self) {
        if !settle(&self.home, &self.context, "a texture object") {
            return;
        }
        let handle = self.handle;
        if let Err(e) = self
            .context
            .with_current(|driver| driver.tex_object_destroy(handle))
        {
            log::error!("destroying a texture object: {e}");
        }
    }
}

/// A texture object (`CUtexObject`) over an [`Array`], a [`MipmappedArray`] or linear memory
/// of a [`Buffer`], which it keeps alive. Cheap to clone (the object is shared).
///
/// A kernel argument: the kernel takes a `cudaTextureObject_t` (64 bits) and reads with
/// `tex1D`, `tex2D`, `tex3D`, `tex2DLayered`, `tex2DLod`, `tex1Dfetch` (or the `tex.*` PTX
/// instructions). In a [`launch`](crate::launch) it is ordered as a buffer of its home stream
/// (the array's, or the buffer's deallocation stream); a graph's kernel node keeps it alive.
/// The object is destroyed when the last clone drops, after the work queued on its home
/// stream.
///
/// Texture objects are of their context: use them in kernels on the device they were made
/// for.
#[derive(Clone)]
#[repr(C)]
#[doc(alias = "CUtexObject")]
pub struct Texture {
    /// First: the argument's bytes.
    handle: u64,
    object: Arc<Object>,
}

impl fmt::Debug for Texture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.object.source {
            Source::Array(array) => format!("{array:?}"),
            Source::Mipmapped(array) => format!("{array:?}"),
            Source::Linear(buffer) => format!("{buffer:?}"),
            Source::Pitched(buffer) => format!("{buffer:?}"),
        };
        f.debug_struct("Texture")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("source", &source)
            .finish()
    }
}

/// What the checks of a texture need of its source.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reads {
    /// An array of `kind`, mipmapped or not.
    Array {
        format: ArrayFormat,
        kind: ArrayKind,
        mipmapped: bool,
    },
    /// Linear memory, 1D (`height` 0) or pitched 2D.
    Linear { format: ArrayFormat, height: usize },
}

/// The rules of a texture's options against what it reads.
pub(crate) fn check_options(options: &TextureOptions, reads: Reads) -> Result<()> {
    let invalid = |name: &'static str, reason: String| Err(Error::InvalidArgument { name, reason });
    let (format, linear_1d) = match reads {
        Reads::Array { format, .. } => (format, false),
        Reads::Linear { format, height } => (format, height == 0),
    };
    // A 1D linear texture ignores address and filter modes (it is fetched by index).
    if !linear_1d {
        if !options.normalized_coordinates {
            if let Some(mode) = options
                .address_mode
                .iter()
                .find(|m| matches!(m, AddressMode::Wrap | AddressMode::Mirror))
            {
                return invalid(
                    "options.address_mode",
                    format!("{mode:?} needs normalized coordinates"),
                );
            }
        }
        let float = format.is_float()
            || (format.normalizes() && options.read_mode == ReadMode::NormalizedFloat);
        if options.filter == FilterMode::Linear && !float {
            return invalid(
                "options.filter",
                format!(
                    "linear filtering returns floats: {format:?} data read as {:?} does not \
                     (use half or float data, or read 8 and 16-bit integers as \
                     ReadMode::NormalizedFloat)",
                    options.read_mode
                ),
            );
        }
    }
    if let Reads::Array {
        mipmapped, kind, ..
    } = reads
    {
        if mipmapped && !options.normalized_coordinates {
            return invalid(
                "options.normalized_coordinates",
                "a mipmapped array is read with normalized coordinates".to_owned(),
            );
        }
        if options.seamless_cubemap
            && !matches!(kind, ArrayKind::Cubemap | ArrayKind::LayeredCubemap)
        {
            return invalid(
                "options.seamless_cubemap",
                format!("seamless cubemap filtering is for cubemap arrays; this is {kind:?}"),
            );
        }
    } else if options.seamless_cubemap {
        return invalid(
            "options.seamless_cubemap",
            "seamless cubemap filtering is for cubemap arrays, not linear memory".to_owned(),
        );
    }
    Ok(())
}

/// The device's texture alignments and linear limits: `[alignment, pitch alignment, 2D
/// width, 2D height, 2D pitch, 1D width]` (widths in elements).
pub(crate) type LinearLimits = [u64; 6];

fn linear_limits(device: Device) -> Result<LinearLimits> {
    let a = |code: i32| -> Result<u64> { Ok(u64::try_from(device.attribute(code)?).unwrap_or(0)) };
    Ok([a(14)?, a(51)?, a(70)?, a(71)?, a(72)?, a(69)?])
}

/// Linear memory for a texture checked against the buffer's `size` and `address` and the
/// device's limits.
pub(crate) fn check_linear_memory(
    linear: &TextureLinear,
    address: u64,
    size: usize,
    limits: &LinearLimits,
) -> Result<()> {
    let invalid = |reason: String| {
        Err(Error::InvalidArgument {
            name: "linear",
            reason,
        })
    };
    check_channels(linear.channels.max(1), "linear.channels")?;
    let [alignment, pitch_alignment, max_width, max_height, max_pitch, max_width_1d] = *limits;
    if linear.width == 0 {
        return invalid("the width is 0 elements".to_owned());
    }
    if linear.offset >= size {
        return invalid(format!(
            "the offset {} is at or past the end: the buffer holds {size} bytes",
            linear.offset
        ));
    }
    // Within the buffer: no overflow.
    let start = address + linear.offset as u64;
    if alignment > 0 && start % alignment != 0 {
        return invalid(format!(
            "the texture's address {start:#x} (offset {}) is not aligned to the device's \
             texture alignment of {alignment} bytes",
            linear.offset
        ));
    }
    let element = linear.element_bytes();
    let row = linear.width.checked_mul(element);
    let needed = if linear.height == 0 {
        if max_width_1d > 0 && linear.width as u64 > max_width_1d {
            return invalid(format!(
                "{} elements is past the device's 1D linear texture limit of {max_width_1d}",
                linear.width
            ));
        }
        row
    } else {
        if linear.width as u64 > max_width || linear.height as u64 > max_height {
            return invalid(format!(
                "{} x {} elements is past the device's 2D linear texture limit of {max_width} \
                 x {max_height}",
                linear.width, linear.height
            ));
        }
        if linear.pitch as u64 > max_pitch {
            return invalid(format!(
                "the pitch {} is past the device's limit of {max_pitch} bytes",
                linear.pitch
            ));
        }
        if pitch_alignment > 0 && linear.pitch as u64 % pitch_alignment != 0 {
            return invalid(format!(
                "the pitch {} is not a multiple of the device's texture pitch alignment of \
                 {pitch_alignment} bytes",
                linear.pitch
            ));
        }
        if row.is_none_or(|row| linear.pitch < row) {
            return invalid(format!(
                "the pitch {} is less than a row of {} elements of {element} bytes",
                linear.pitch, linear.width
            ));
        }
        row.and_then(|row| {
            (linear.height - 1)
                .checked_mul(linear.pitch)?
                .checked_add(row)
        })
    };
    let available = size.saturating_sub(linear.offset);
    match needed {
        Some(needed) if linear.offset < size && needed <= available => Ok(()),
        _ => invalid(format!(
            "the texture needs {} bytes from offset {}; the buffer holds {size}",
            needed.map_or("more than 2^64".to_owned(), |n| n.to_string()),
            linear.offset
        )),
    }
}

impl Texture {
    /// A texture over `array` (`cuTexObjectCreate`, `CU_RESOURCE_TYPE_ARRAY`), in its context.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_array(array: &Arc<Array>, options: &TextureOptions) -> Result<Texture> {
        check_options(
            options,
            Reads::Array {
                format: array.options().format,
                kind: array.kind(),
                mipmapped: false,
            },
        )?;
        Texture::create(
            ResourceSpec::Array(array.handle()),
            options,
            Source::Array(array.clone()),
            array.home_stream(),
        )
    }

    /// A texture over all levels of `array` (`CU_RESOURCE_TYPE_MIPMAPPED_ARRAY`); it needs
    /// normalized coordinates. Fetches reach the levels from
    /// [`min_mipmap_level_clamp`](TextureOptions::min_mipmap_level_clamp) to
    /// [`max_mipmap_level_clamp`](TextureOptions::max_mipmap_level_clamp) (both 0 by default:
    /// level 0 only).
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_mipmapped(
        array: &Arc<MipmappedArray>,
        options: &TextureOptions,
    ) -> Result<Texture> {
        check_options(
            options,
            Reads::Array {
                format: array.options().format,
                kind: array.kind(),
                mipmapped: true,
            },
        )?;
        Texture::create(
            ResourceSpec::Mipmapped(array.handle()),
            options,
            Source::Mipmapped(array.clone()),
            array.home_stream(),
        )
    }

    /// A texture over linear memory of `buffer` (`CU_RESOURCE_TYPE_LINEAR` for a 1D
    /// [`TextureLinear`], `CU_RESOURCE_TYPE_PITCH2D` for a 2D one), in the context of its
    /// deallocation stream, its home.
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_linear(
        buffer: &Arc<Buffer>,
        linear: &TextureLinear,
        options: &TextureOptions,
    ) -> Result<Texture> {
        let home = buffer.deallocation_stream();
        if !buffer.is_device_accessible() {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: "its memory is not accessible from devices".to_owned(),
            });
        }
        if let Some(own) = buffer.device() {
            if own != home.device() {
                return Err(Error::InvalidArgument {
                    name: "buffer",
                    reason: format!(
                        "its memory is on device {}, its deallocation stream on device {}",
                        own.ordinal(),
                        home.device().ordinal()
                    ),
                });
            }
        }
        check_options(
            options,
            Reads::Linear {
                format: linear.format,
                height: linear.height,
            },
        )?;
        let limits = linear_limits(home.device())?;
        check_linear_memory(linear, buffer.ptr().0, buffer.size(), &limits)?;
        let ptr = buffer.ptr().0 + linear.offset as u64;
        let (format, channels) = (linear.format.code(), linear.channels.max(1));
        let resource = if linear.height == 0 {
            ResourceSpec::Linear {
                ptr,
                format,
                channels,
                bytes: linear.width * linear.element_bytes(),
            }
        } else {
            ResourceSpec::Pitch2d {
                ptr,
                format,
                channels,
                width: linear.width,
                height: linear.height,
                pitch: linear.pitch,
            }
        };
        Texture::create(resource, options, Source::Linear(buffer.clone()), home)
    }

    /// A 2D texture over a [`PitchedBuffer`](crate::memory::PitchedBuffer)'s rows
    /// (`CU_RESOURCE_TYPE_PITCH2D`): elements of `channels` channels of `format` (a row's
    /// width must hold a whole number of them), its height in rows and its pitch, in the
    /// context of its deallocation stream, its home; the texture keeps the buffer.
    /// `cudaMallocPitch` memory bound to a texture, as CUDA C does it.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use cuda_core::memory::PitchedBuffer;
    /// use cuda_core::texture::{ArrayFormat, Texture, TextureOptions};
    /// use cuda_core::{Device, StreamOptions};
    ///
    /// let stream = Device::new(0)?.create_stream(StreamOptions::default())?;
    /// let image = Arc::new(PitchedBuffer::new(&stream, 640 * 4, 480, 4)?);
    /// let texture = Texture::from_pitched(&image, ArrayFormat::F32, 1, &TextureOptions::default())?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuTexObjectCreate")]
    pub fn from_pitched(
        buffer: &Arc<crate::memory::PitchedBuffer>,
        format: ArrayFormat,
        channels: u32,
        options: &TextureOptions,
    ) -> Result<Texture> {
        let home = buffer.deallocation_stream();
        let element = format.bytes() * channels.max(1) as usize;
        if buffer.width() % element != 0 || buffer.depth() != 1 {
            return Err(Error::InvalidArgument {
                name: "buffer",
                reason: format!(
                    "a 2D texture of {element}-byte elements needs one slice of rows of a whole \
                     number of them; the buffer has {} slices of rows of {} bytes",
                    buffer.depth(),
                    buffer.width()
                ),
            });
        }
        let linear = TextureLinear::two_d(
            format,
            buffer.width() / element,
            buffer.height(),
            buffer.pitch(),
        )
        .with_channels(channels);
        check_options(
            options,
            Reads::Linear {
                format,
                height: linear.height,
            },
        )?;
        let limits = linear_limits(home.device())?;
        let size = buffer.pitch() * buffer.height();
        check_linear_memory(&linear, buffer.ptr().0, size, &limits)?;
        let resource = ResourceSpec::Pitch2d {
            ptr: buffer.ptr().0,
            format: format.code(),
            channels: channels.max(1),
            width: linear.width,
            height: linear.height,
            pitch: linear.pitch,
        };
        Texture::create(resource, options, Source::Pitched(buffer.clone()), home)
    }

    fn create(
        resource: ResourceSpec,
        options: &TextureOptions,
        source: Source,
        home: &Stream,
    ) -> Result<Texture> {
        let spec = options.spec();
        let context = home.context().clone();
        let handle = context.with_current(|driver| driver.tex_object_create(&resource, &spec))?;
        Ok(Texture {
            handle,
            object: Arc::new(Object {
                handle,
                source,
                home: home.clone(),
                context,
            }),
        })
    }

    /// The raw `CUtexObject`, valid while this texture (or a clone) lives.
    pub fn as_raw(&self) -> u64 {
        self.handle
    }

    /// The array it reads, if it reads one.
    pub fn array(&self) -> Option<&Arc<Array>> {
        match &self.object.source {
            Source::Array(array) => Some(array),
            _ => None,
        }
    }

    /// The mipmapped array it reads, if it reads one.
    pub fn mipmapped_array(&self) -> Option<&Arc<MipmappedArray>> {
        match &self.object.source {
            Source::Mipmapped(array) => Some(array),
            _ => None,
        }
    }

    /// The buffer it reads, if it reads linear memory.
    pub fn buffer(&self) -> Option<&Arc<Buffer>> {
        match &self.object.source {
            Source::Linear(buffer) => Some(buffer),
            _ => None,
        }
    }

    /// Its home stream: see [`Texture`].
    pub fn home_stream(&self) -> &Stream {
        &self.object.home
    }
}

crate::args::wrapper_arg!(Texture);
impl crate::args::GraphArg for Texture {}

impl crate::args::sealed::Arg for Texture {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::sealed::ArgBytes {
            ptr: (&self.handle as *const u64).cast(),
            size: std::mem::size_of::<u64>(),
            home: Some(&self.object.home),
        }
    }

    fn buffer(&self) -> Option<&dyn std::any::Any> {
        Texture::buffer(self).map(|buffer| buffer as &dyn std::any::Any)
    }

    fn keep(&self) -> Option<Box<dyn Send>> {
        Some(Box::new(self.clone()))
    }
}
