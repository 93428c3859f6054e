//! CUDA arrays and mipmapped arrays.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{check_channels, settle, ArrayFormat};
use crate::device::Device;
use crate::driver::{ArrayHandle, ArraySpec, MipmappedArrayHandle};
use crate::error::{Error, Result};
use crate::stream::Stream;

/// `CUDA_ARRAY3D_LAYERED`.
const LAYERED: u32 = 0x01;
/// `CUDA_ARRAY3D_SURFACE_LDST`.
const SURFACE_LDST: u32 = 0x02;
/// `CUDA_ARRAY3D_CUBEMAP`.
const CUBEMAP: u32 = 0x04;
/// `CUDA_ARRAY3D_TEXTURE_GATHER`.
const TEXTURE_GATHER: u32 = 0x08;

/// An array's shape and what it may be used for (`CUDA_ARRAY3D_DESCRIPTOR`). Sizes are in
/// elements; `height` is 0 for a 1D (or 1D layered) array and `depth` 0 for a 1D or 2D one;
/// for a layered array `depth` counts the layers, for a cubemap the faces (6, or a multiple
/// of 6 when layered). Checked before the driver against these rules and the device's limits
/// (`CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE*` and, with `surface`, `*_SURFACE*`).
///
/// ```
/// use cuda_core::texture::{ArrayFormat, ArrayKind, ArrayOptions};
///
/// let layers = ArrayOptions::layered_2d(ArrayFormat::U8, 640, 480, 3).with_channels(4);
/// assert_eq!(layers.kind(), Ok(ArrayKind::Layered2d));
/// assert_eq!(layers.element_bytes(), 4);
/// assert_eq!(layers.extent(), [640, 480, 3]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[doc(alias = "CUDA_ARRAY3D_DESCRIPTOR")]
#[non_exhaustive]
pub struct ArrayOptions {
    /// The type of each channel.
    pub format: ArrayFormat,
    /// Channels per element: 1, 2 or 4 (0 counts as 1).
    pub channels: u32,
    /// Width in elements, at least 1.
    pub width: usize,
    /// Height in elements; 0 for 1D arrays.
    pub height: usize,
    /// Depth in elements, layers or cubemap faces; 0 for 1D and 2D arrays.
    pub depth: usize,
    /// A layered array (`CUDA_ARRAY3D_LAYERED`): `depth` counts its layers.
    pub layered: bool,
    /// Surfaces may write it (`CUDA_ARRAY3D_SURFACE_LDST`): needed for a [`Surface`](super::Surface).
    pub surface: bool,
    /// A cubemap (`CUDA_ARRAY3D_CUBEMAP`): width and height equal, `depth` 6 (a multiple of
    /// 6 when layered).
    pub cubemap: bool,
    /// For texture gather (`CUDA_ARRAY3D_TEXTURE_GATHER`): 2D arrays only.
    pub texture_gather: bool,
}

crate::options::chainers!(ArrayOptions {
    with_format(format: ArrayFormat);
    with_channels(channels: u32);
    with_width(width: usize);
    with_height(height: usize);
    with_depth(depth: usize);
    with_layered(layered: bool);
    with_surface(surface: bool);
    with_cubemap(cubemap: bool);
    with_texture_gather(texture_gather: bool);
});

/// What an [`ArrayOptions`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArrayKind {
    /// A row of `width` elements.
    OneD,
    /// `width` by `height`.
    TwoD,
    /// `width` by `height` by `depth`.
    ThreeD,
    /// `depth` rows of `width`.
    Layered1d,
    /// `depth` layers of `width` by `height`.
    Layered2d,
    /// Six faces of `width` by `width`.
    Cubemap,
    /// `depth / 6` cubemaps.
    LayeredCubemap,
}

impl ArrayOptions {
    /// A 1D array of `width` elements of one channel.
    pub fn one_d(format: ArrayFormat, width: usize) -> ArrayOptions {
        ArrayOptions {
            format,
            channels: 1,
            width,
            ..Default::default()
        }
    }

    /// A 2D array.
    pub fn two_d(format: ArrayFormat, width: usize, height: usize) -> ArrayOptions {
        ArrayOptions {
            height,
            ..ArrayOptions::one_d(format, width)
        }
    }

    /// A 3D array.
    pub fn three_d(format: ArrayFormat, width: usize, height: usize, depth: usize) -> ArrayOptions {
        ArrayOptions {
            depth,
            ..ArrayOptions::two_d(format, width, height)
        }
    }

    /// A layered 1D array: `layers` rows of `width`.
    pub fn layered_1d(format: ArrayFormat, width: usize, layers: usize) -> ArrayOptions {
        ArrayOptions {
            depth: layers,
            layered: true,
            ..ArrayOptions::one_d(format, width)
        }
    }

    /// A layered 2D array.
    pub fn layered_2d(
        format: ArrayFormat,
        width: usize,
        height: usize,
        layers: usize,
    ) -> ArrayOptions {
        ArrayOptions {
            layered: true,
            ..ArrayOptions::three_d(format, width, height, layers)
        }
    }

    /// A cubemap of faces `width` by `width`.
    pub fn cubemap(format: ArrayFormat, width: usize) -> ArrayOptions {
        ArrayOptions {
            cubemap: true,
            ..ArrayOptions::three_d(format, width, width, 6)
        }
    }

    /// Channels per element (0 counts as 1).
    pub fn channel_count(&self) -> u32 {
        self.channels.max(1)
    }

    /// The bytes of one element: the format's times the channels.
    pub fn element_bytes(&self) -> usize {
        self.format.bytes() * self.channel_count() as usize
    }

    /// The array's extent as copies address it: elements, rows, and slices or layers (each
    /// at least 1).
    pub fn extent(&self) -> [usize; 3] {
        [self.width, self.height.max(1), self.depth.max(1)]
    }

    /// The bytes of the whole array, packed.
    pub fn bytes(&self) -> Option<usize> {
        let [w, h, d] = self.extent();
        w.checked_mul(h)?
            .checked_mul(d)?
            .checked_mul(self.element_bytes())
    }

    /// What these options make, or why they make nothing.
    pub fn kind(&self) -> Result<ArrayKind> {
        let invalid = |reason: String| Error::InvalidArgument {
            name: "options",
            reason,
        };
        check_channels(self.channel_count(), "options.channels")?;
        if self.width == 0 {
            return Err(invalid(
                "the width is 0; an array is at least 1 wide".to_owned(),
            ));
        }
        let (h, d) = (self.height, self.depth);
        let kind = if self.cubemap {
            if h != self.width {
                return Err(invalid(format!(
                    "a cubemap's faces are square: width {} and height {h}",
                    self.width
                )));
            }
            if self.layered {
                if d == 0 || d % 6 != 0 {
                    return Err(invalid(format!(
                        "a layered cubemap has a multiple of 6 faces; depth is {d}"
                    )));
                }
                ArrayKind::LayeredCubemap
            } else {
                if d != 6 {
                    return Err(invalid(format!("a cubemap has 6 faces; depth is {d}")));
                }
                ArrayKind::Cubemap
            }
        } else if self.layered {
            match (h, d) {
                (_, 0) => {
                    return Err(invalid(
                        "a layered array's depth is its layer count, and 0 is given".to_owned(),
                    ))
                }
                (0, _) => ArrayKind::Layered1d,
                _ => ArrayKind::Layered2d,
            }
        } else {
            match (h, d) {
                (0, 0) => ArrayKind::OneD,
                (_, 0) => ArrayKind::TwoD,
                (0, _) => {
                    return Err(invalid(format!(
                        "a depth ({d}) without a height: a 3D array has both, and layers of \
                         1D arrays need `layered`"
                    )))
                }
                _ => ArrayKind::ThreeD,
            }
        };
        if self.texture_gather && kind != ArrayKind::TwoD {
            return Err(invalid(format!(
                "texture gather is for 2D arrays; this is {kind:?}"
            )));
        }
        Ok(kind)
    }

    fn flags(&self) -> u32 {
        let mut flags = 0;
        if self.layered {
            flags |= LAYERED;
        }
        if self.surface {
            flags |= SURFACE_LDST;
        }
        if self.cubemap {
            flags |= CUBEMAP;
        }
        if self.texture_gather {
            flags |= TEXTURE_GATHER;
        }
        flags
    }

    pub(crate) fn spec(&self) -> ArraySpec {
        ArraySpec {
            width: self.width,
            height: self.height,
            depth: self.depth,
            format: self.format.code(),
            channels: self.channel_count(),
            flags: self.flags(),
        }
    }
}

/// The device limits an array of `kind` must meet: sets of `[width, height, depth]` maxima
/// (`None` where the dimension is fixed or unused), with what they are; within every entry,
/// the array must meet one of the sets (3D textures have an alternate set).
pub(crate) type LimitSets = Vec<(&'static str, Vec<[Option<u64>; 3]>)>;

/// The device attributes behind [`LimitSets`] for `kind`, read (and cached) from the device.
pub(crate) fn device_limits(
    device: Device,
    kind: ArrayKind,
    options: &ArrayOptions,
    mipmapped: bool,
) -> Result<LimitSets> {
    let a = |code: i32| -> Result<Option<u64>> {
        Ok(Some(u64::try_from(device.attribute(code)?).unwrap_or(0)))
    };
    let texture = match kind {
        ArrayKind::OneD if mipmapped => [a(77)?, None, None],
        ArrayKind::OneD => [a(21)?, None, None],
        ArrayKind::TwoD if mipmapped => [a(73)?, a(74)?, None],
        ArrayKind::TwoD if options.texture_gather => [a(45)?, a(46)?, None],
        ArrayKind::TwoD => [a(22)?, a(23)?, None],
        ArrayKind::ThreeD => [a(24)?, a(25)?, a(26)?],
        ArrayKind::Layered1d => [a(42)?, None, a(43)?],
        ArrayKind::Layered2d => [a(27)?, a(28)?, a(29)?],
        ArrayKind::Cubemap => [a(52)?, a(52)?, None],
        ArrayKind::LayeredCubemap => [a(53)?, a(53)?, a(54)?],
    };
    let mut texture_sets = vec![texture];
    if kind == ArrayKind::ThreeD {
        texture_sets.push([a(47)?, a(48)?, a(49)?]);
    }
    let mut sets = vec![("texture", texture_sets)];
    if options.surface {
        let surface = match kind {
            ArrayKind::OneD => [a(55)?, None, None],
            ArrayKind::TwoD => [a(56)?, a(57)?, None],
            ArrayKind::ThreeD => [a(58)?, a(59)?, a(60)?],
            ArrayKind::Layered1d => [a(61)?, None, a(62)?],
            ArrayKind::Layered2d => [a(63)?, a(64)?, a(65)?],
            ArrayKind::Cubemap => [a(66)?, a(66)?, None],
            ArrayKind::LayeredCubemap => [a(67)?, a(67)?, a(68)?],
        };
        sets.push(("surface", vec![surface]));
    }
    Ok(sets)
}

/// Refuses an array larger than the device's limits allow.
pub(crate) fn check_limits(
    options: &ArrayOptions,
    kind: ArrayKind,
    sets: &LimitSets,
    device: usize,
) -> Result<()> {
    let sizes = [options.width, options.height, options.depth].map(|s| s as u64);
    for (what, alternatives) in sets {
        let fits = |limits: &[Option<u64>; 3]| {
            sizes
                .iter()
                .zip(limits)
                .all(|(&s, limit)| limit.is_none_or(|limit| s <= limit))
        };
        if !alternatives.iter().any(fits) {
            let limits: Vec<String> = alternatives
                .iter()
                .map(|l| {
                    let show = |v: &Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
                    format!("{} x {} x {}", show(&l[0]), show(&l[1]), show(&l[2]))
                })
                .collect();
            return Err(Error::InvalidArgument {
                name: "options",
                reason: format!(
                    "a {kind:?} array of {} x {} x {} is past device {device}'s {what} limits \
                     ({})",
                    sizes[0],
                    sizes[1],
                    sizes[2],
                    limits.join(" or ")
                ),
            });
        }
    }
    Ok(())
}

/// Who destroys an array's handle.
enum Owner {
    /// The array itself, when dropped.
    Own,
    /// Its mipmapped array, which this level keeps alive.
    Level {
        mipmapped: Arc<MipmappedArray>,
        level: u32,
    },
    /// Another API's image mapped into CUDA: dropping what is held (once the home stream's
    /// work is done) unmaps it; the handle is the driver's, valid until then.
    Mapped(Option<Box<dyn Send + Sync>>),
}

/// A CUDA array (`CUarray`): memory laid out for the texture hardware, read by [`Texture`]s,
/// written by [`Surface`]s, and copied to and from host slices, buffers and other arrays
/// (see [`Array::copy_from_host`] and the region copies).
///
/// An array belongs to the context of the stream it was made on, its home: copies and kernel
/// launches (through its textures and surfaces) on other streams are ordered around that
/// stream, as for a buffer's deallocation stream, and dropping the array waits for it before
/// `cuArrayDestroy`. Share it as an `Arc<Array>`: textures and surfaces hold one.
///
/// [`Texture`]: super::Texture
/// [`Surface`]: super::Surface
#[doc(alias = "CUarray")]
pub struct Array {
    handle: ArrayHandle,
    options: ArrayOptions,
    kind: ArrayKind,
    home: Stream,
    owner: Owner,
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Array");
        s.field("kind", &self.kind)
            .field("extent", &self.options.extent())
            .field("format", &self.options.format)
            .field("channels", &self.options.channel_count());
        if let Owner::Level { level, .. } = self.owner {
            s.field("mipmap_level", &level);
        }
        s.finish()
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        if let Owner::Level { mipmapped, level } = &self.owner {
            mipmapped
                .taken
                .fetch_and(!(1u64 << level), Ordering::AcqRel);
            return;
        }
        let context = self.home.context();
        if let Owner::Mapped(unmap) = &mut self.owner {
            let unmap = unmap.take();
            if settle(&self.home, context, "a mapped image") {
                drop(unmap);
            } else {
                std::mem::forget(unmap);
            }
            return;
        }
        if !settle(&self.home, context, "a CUDA array") {
            return;
        }
        if let Err(e) = context.with_current(|driver| driver.array_destroy(self.handle)) {
            log::error!("destroying a CUDA array: {e}");
        }
    }
}

impl Array {
    /// An array over `handle`, another API's image mapped into the context of `home`
    /// (`cuGraphicsSubResourceGetMappedArray`), described by the driver: `unmap` is dropped,
    /// once `home`'s work is done, when the array is.
    pub(crate) fn mapped(
        handle: ArrayHandle,
        home: &Stream,
        unmap: Box<dyn Send + Sync>,
    ) -> Result<Array> {
        let spec = home
            .context()
            .with_current(|driver| driver.array_get_descriptor(handle))?;
        let format = ArrayFormat::from_code(spec.format).ok_or_else(|| Error::InvalidArgument {
            name: "image",
            reason: format!(
                "its CUDA array has format code {:#x}, which no ArrayFormat names",
                spec.format
            ),
        })?;
        let options = ArrayOptions {
            format,
            channels: spec.channels,
            width: spec.width,
            height: spec.height,
            depth: spec.depth,
            layered: spec.flags & LAYERED != 0,
            surface: spec.flags & SURFACE_LDST != 0,
            cubemap: spec.flags & CUBEMAP != 0,
            texture_gather: spec.flags & TEXTURE_GATHER != 0,
        };
        let kind = options.kind()?;
        Ok(Array {
            handle,
            options,
            kind,
            home: home.clone(),
            owner: Owner::Mapped(Some(unmap)),
        })
    }

    /// Makes an array in the context of `stream`, its home (`cuArray3DCreate`), after
    /// checking `options` (see [`ArrayOptions`]).
    #[doc(alias("cuArray3DCreate", "cuArrayCreate"))]
    pub fn new(stream: &Stream, options: &ArrayOptions) -> Result<Array> {
        let kind = options.kind()?;
        let device = stream.device();
        let limits = device_limits(device, kind, options, false)?;
        check_limits(options, kind, &limits, device.ordinal())?;
        let spec = options.spec();
        let handle = stream
            .context()
            .with_current(|driver| driver.array_create(&spec))?;
        Ok(Array {
            handle,
            options: ArrayOptions {
                channels: options.channel_count(),
                ..*options
            },
            kind,
            home: stream.clone(),
            owner: Owner::Own,
        })
    }

    /// What the array was made with (for a mipmap level, its own extent).
    pub fn options(&self) -> &ArrayOptions {
        &self.options
    }

    /// Its kind.
    pub fn kind(&self) -> ArrayKind {
        self.kind
    }

    /// The extent copies address: elements, rows, and slices or layers.
    pub fn extent(&self) -> [usize; 3] {
        self.options.extent()
    }

    /// The device it is on.
    pub fn device(&self) -> Device {
        self.home.device()
    }

    /// Its home stream: see [`Array`].
    pub fn home_stream(&self) -> &Stream {
        &self.home
    }

    /// The mipmap level this array is, of a [`MipmappedArray`]; `None` for an array of its own.
    pub fn mipmap_level(&self) -> Option<u32> {
        match self.owner {
            Owner::Own | Owner::Mapped(_) => None,
            Owner::Level { level, .. } => Some(level),
        }
    }

    /// The raw `CUarray`, valid while this array lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    pub(crate) fn handle(&self) -> ArrayHandle {
        self.handle
    }
}

/// A mipmapped array (`CUmipmappedArray`): `levels` arrays, each half the size of the one
/// before (rounded down, at least 1) in every dimension but the layers. Textures read it
/// whole ([`Texture::from_mipmapped`](super::Texture::from_mipmapped)); each level is an
/// [`Array`] ([`MipmappedArray::level`]) for copies and surfaces. Its home stream is as an
/// array's.
#[doc(alias = "CUmipmappedArray")]
pub struct MipmappedArray {
    handle: MipmappedArrayHandle,
    options: ArrayOptions,
    kind: ArrayKind,
    levels: u32,
    home: Stream,
    /// One bit per level held by an [`Array`] now (levels are at most 64): a level is handed
    /// out once at a time, so that its `&mut` copies exclude every other writer.
    taken: AtomicU64,
}

impl fmt::Debug for MipmappedArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MipmappedArray")
            .field("kind", &self.kind)
            .field("extent", &self.options.extent())
            .field("levels", &self.levels)
            .finish()
    }
}

impl Drop for MipmappedArray {
    fn drop(&mut self) {
        let context = self.home.context();
        if !settle(&self.home, context, "a mipmapped CUDA array") {
            return;
        }
        if let Err(e) = context.with_current(|driver| driver.mipmapped_array_destroy(self.handle)) {
            log::error!("destroying a mipmapped CUDA array: {e}");
        }
    }
}

/// The most levels an array of `options` (level 0's extent) has: one per halving of its
/// largest dimension (the layers not among them) until 1.
pub(crate) fn max_levels(options: &ArrayOptions, kind: ArrayKind) -> u32 {
    let largest = match kind {
        ArrayKind::ThreeD => options.width.max(options.height).max(options.depth),
        _ => options.width.max(options.height),
    }
    .max(1);
    usize::BITS - largest.leading_zeros()
}

/// Level `level`'s options: each sized dimension halved `level` times (at least 1), the
/// layers (or faces) kept.
pub(crate) fn level_options(options: &ArrayOptions, kind: ArrayKind, level: u32) -> ArrayOptions {
    let shrink = |size: usize| {
        if size == 0 {
            0
        } else {
            (size >> level.min(usize::BITS - 1)).max(1)
        }
    };
    let depth = if kind == ArrayKind::ThreeD {
        shrink(options.depth)
    } else {
        options.depth
    };
    ArrayOptions {
        width: shrink(options.width),
        height: shrink(options.height),
        depth,
        ..*options
    }
}

impl MipmappedArray {
    /// Makes a mipmapped array of `levels` levels, level 0 as `options` describes, in the
    /// context of `stream`, its home (`cuMipmappedArrayCreate`). Checked before the driver:
    /// the options as for [`Array::new`] (with the device's mipmap limits for 1D and 2D), and
    /// `levels` from 1 to one more than the halvings of the largest dimension.
    #[doc(alias = "cuMipmappedArrayCreate")]
    pub fn new(stream: &Stream, options: &ArrayOptions, levels: u32) -> Result<MipmappedArray> {
        let kind = options.kind()?;
        let most = max_levels(options, kind);
        if levels == 0 || levels > most {
            return Err(Error::InvalidArgument {
                name: "levels",
                reason: format!(
                    "{levels} levels; an array of {:?} has 1 to {most}",
                    options.extent()
                ),
            });
        }
        let device = stream.device();
        let limits = device_limits(device, kind, options, true)?;
        check_limits(options, kind, &limits, device.ordinal())?;
        let spec = options.spec();
        let handle = stream
            .context()
            .with_current(|driver| driver.mipmapped_array_create(&spec, levels))?;
        Ok(MipmappedArray {
            handle,
            options: ArrayOptions {
                channels: options.channel_count(),
                ..*options
            },
            kind,
            levels,
            home: stream.clone(),
            taken: AtomicU64::new(0),
        })
    }

    /// Level `level` (`cuMipmappedArrayGetLevel`), as an array that keeps this one alive.
    /// Its extent is the driver's (`cuArray3DGetDescriptor`). One array at a time holds a
    /// level, so that copies into it (which take the array by `&mut`) have no other writer:
    /// while it lives, asking for the level again is [`Error::InvalidArgument`].
    #[doc(alias("cuMipmappedArrayGetLevel", "cuArray3DGetDescriptor"))]
    pub fn level(self: &Arc<Self>, level: u32) -> Result<Array> {
        if level >= self.levels {
            return Err(Error::InvalidArgument {
                name: "level",
                reason: format!(
                    "level {level} of a mipmapped array of {} levels",
                    self.levels
                ),
            });
        }
        let bit = 1u64 << level;
        if self.taken.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return Err(Error::InvalidArgument {
                name: "level",
                reason: format!(
                    "level {level} is held by another Array now; drop it (or use that one) \
                     first: one array at a time writes a level"
                ),
            });
        }
        let got = self.home.context().with_current(|driver| {
            let handle = driver.mipmapped_array_get_level(self.handle, level)?;
            Ok((handle, driver.array_get_descriptor(handle)?))
        });
        let (handle, spec) = got.inspect_err(|_| {
            self.taken.fetch_and(!bit, Ordering::AcqRel);
        })?;
        let options = ArrayOptions {
            width: spec.width,
            height: spec.height,
            depth: spec.depth,
            ..self.options
        };
        Ok(Array {
            handle,
            options,
            kind: self.kind,
            home: self.home.clone(),
            owner: Owner::Level {
                mipmapped: self.clone(),
                level,
            },
        })
    }

    /// The number of levels.
    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Level 0's options.
    pub fn options(&self) -> &ArrayOptions {
        &self.options
    }

    /// Its kind.
    pub fn kind(&self) -> ArrayKind {
        self.kind
    }

    /// The extent level `level` has by the halving rule (at least 1 in each sized dimension);
    /// `None` past the last level.
    pub fn level_extent(&self, level: u32) -> Option<[usize; 3]> {
        (level < self.levels).then(|| level_options(&self.options, self.kind, level).extent())
    }

    /// The device it is on.
    pub fn device(&self) -> Device {
        self.home.device()
    }

    /// Its home stream.
    pub fn home_stream(&self) -> &Stream {
        &self.home
    }

    /// The raw `CUmipmappedArray`, valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    pub(crate) fn handle(&self) -> MipmappedArrayHandle {
        self.handle
    }
}
