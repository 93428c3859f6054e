//! DLPack: zero-copy exchange of tensors with other frameworks (PyTorch, CuPy, JAX, ...) and
//! C code, through DLPack 1.x's `DLManagedTensorVersioned`.
//!
//! - Export: [`StridedView::to_dlpack`] (or [`DlpackTensor::from_buffer`]) makes a tensor
//!   whose deleter keeps the view's memory (its `Arc<Buffer>`, or the tensor it was imported
//!   from) alive until the consumer calls it; [`DlpackTensor::into_raw`] hands it over.
//! - Import: [`DlpackTensor::from_raw`] takes a producer's tensor, checks its version, and
//!   calls its deleter when dropped; [`DlpackTensor::view`] and [`DlpackTensor::into_view`]
//!   check its device, data type, shape, strides and offset against the element type and
//!   give a [`StridedView`].
//!
//! The ABI types here are `#[repr(C)]` copies of `dlpack.h`'s, with the C enums' fields kept
//! as plain integers, so that a producer's device type or type code unknown to this crate is
//! refused with an error rather than read as an invalid Rust enum. (The `dlpark` crate's
//! types hold them as Rust enums, which makes reading such a tensor undefined behaviour, and
//! its safe wrapper hands out the data of a CUDA tensor as a host slice; so it is not used.)
//!
//! ```no_run
//! use std::sync::Arc;
//! use cuda_core::dlpack::DlpackTensor;
//! use cuda_core::{Allocate, Device, StreamOptions, StridedView};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut buffer = device.memory_resource()?.allocate(4 * 6, &stream)?;
//! buffer.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &stream)?;
//! let view = StridedView::<f32>::shared(Arc::new(buffer), 0, &[2, 3], None)?;
//! let tensor = view.to_dlpack(Some(&stream))?;
//! assert_eq!(tensor.shape(), [2, 3]);
//! // Hand `tensor.into_raw()` to a consumer; here, read it back as a view.
//! let back = tensor.into_view::<f32>()?;
//! assert_eq!(back.to_vec(&stream)?, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::graph::CaptureStatus;
use crate::memory::{Buffer, DevicePtr, Pod};
use crate::stream::Stream;
use crate::view::{Owner, StridedView, ViewMemory};

/// The DLPack major version this crate reads and writes.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version this crate writes.
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the data.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the data is a copy the consumer may keep.
pub const FLAG_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded to a byte each.
pub const FLAG_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLPackVersion {
    /// The major version: a consumer reads a tensor only of its own major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

/// `DLDeviceType`, as its integer: a C enum's value may be one this crate does not know.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`: ordinary host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// `kDLCUDA`: memory of a CUDA device.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// `kDLOpenCL`.
    pub const OPENCL: DLDeviceType = DLDeviceType(4);
    /// `kDLVulkan`.
    pub const VULKAN: DLDeviceType = DLDeviceType(7);
    /// `kDLMetal`.
    pub const METAL: DLDeviceType = DLDeviceType(8);
    /// `kDLVPI`.
    pub const VPI: DLDeviceType = DLDeviceType(9);
    /// `kDLROCM`.
    pub const ROCM: DLDeviceType = DLDeviceType(10);
    /// `kDLROCMHost`.
    pub const ROCM_HOST: DLDeviceType = DLDeviceType(11);
    /// `kDLExtDev`.
    pub const EXT_DEV: DLDeviceType = DLDeviceType(12);
    /// `kDLCUDAManaged`: managed memory (`cudaMallocManaged`).
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);
    /// `kDLOneAPI`.
    pub const ONE_API: DLDeviceType = DLDeviceType(14);
    /// `kDLWebGPU`.
    pub const WEB_GPU: DLDeviceType = DLDeviceType(15);
    /// `kDLHexagon`.
    pub const HEXAGON: DLDeviceType = DLDeviceType(16);
    /// `kDLMAIA`.
    pub const MAIA: DLDeviceType = DLDeviceType(17);

    fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "kDLCPU",
            2 => "kDLCUDA",
            3 => "kDLCUDAHost",
            4 => "kDLOpenCL",
            7 => "kDLVulkan",
            8 => "kDLMetal",
            9 => "kDLVPI",
            10 => "kDLROCM",
            11 => "kDLROCMHost",
            12 => "kDLExtDev",
            13 => "kDLCUDAManaged",
            14 => "kDLOneAPI",
            15 => "kDLWebGPU",
            16 => "kDLHexagon",
            17 => "kDLMAIA",
            _ => return None,
        })
    }
}

impl fmt::Debug for DLDeviceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "device type {}", self.0),
        }
    }
}

/// `DLDevice`: a device type and an index.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDevice {
    /// The kind of device or memory.
    pub device_type: DLDeviceType,
    /// The device's index; 0 for host, pinned and managed memory.
    pub device_id: i32,
}

/// `DLDataType`: an element type as a code, a width in bits and a number of lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// The kind (`DLDataTypeCode`): [`DLDataType::INT`], [`DLDataType::FLOAT`], ...
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes per element (1 but for vector types).
    pub lanes: u16,
}

impl DLDataType {
    /// `kDLInt`: signed integers.
    pub const INT: u8 = 0;
    /// `kDLUInt`: unsigned integers.
    pub const UINT: u8 = 1;
    /// `kDLFloat`: IEEE floating point.
    pub const FLOAT: u8 = 2;
    /// `kDLOpaqueHandle`.
    pub const OPAQUE_HANDLE: u8 = 3;
    /// `kDLBfloat`: bfloat16.
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`: complex numbers (two floats, real first).
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`.
    pub const BOOL: u8 = 6;
    /// `kDLFloat8_e3m4`: 8-bit floats, 3 exponent and 4 mantissa bits, with infinities.
    pub const FLOAT8_E3M4: u8 = 7;
    /// `kDLFloat8_e4m3`: 8-bit floats, 4 exponent and 3 mantissa bits, with infinities.
    pub const FLOAT8_E4M3: u8 = 8;
    /// `kDLFloat8_e4m3b11fnuz`: E4M3 of exponent bias 11, finite, one unsigned zero.
    pub const FLOAT8_E4M3B11FNUZ: u8 = 9;
    /// `kDLFloat8_e4m3fn`: E4M3, finite (NaN but no infinity): CUDA's `__nv_fp8_e4m3`,
    /// `float8::F8E4M3` (feature `float8`).
    ///
    /// ```
    /// use cuda_core::dlpack::DLDataType;
    ///
    /// let e4m3 = DLDataType::scalar(DLDataType::FLOAT8_E4M3FN, 8);
    /// assert_eq!(e4m3.to_string(), "float8_e4m3fn");
    /// assert_eq!(e4m3.size(), Some(1));
    /// ```
    pub const FLOAT8_E4M3FN: u8 = 10;
    /// `kDLFloat8_e4m3fnuz`: E4M3, finite, one unsigned zero.
    pub const FLOAT8_E4M3FNUZ: u8 = 11;
    /// `kDLFloat8_e5m2`: 8-bit floats, 5 exponent and 2 mantissa bits (IEEE-like): CUDA's
    /// `__nv_fp8_e5m2`, `float8::F8E5M2` (feature `float8`).
    pub const FLOAT8_E5M2: u8 = 12;
    /// `kDLFloat8_e5m2fnuz`: E5M2, finite, one unsigned zero.
    pub const FLOAT8_E5M2FNUZ: u8 = 13;
    /// `kDLFloat8_e8m0fnu`: 8-bit powers of two (MX block scales), unsigned.
    pub const FLOAT8_E8M0FNU: u8 = 14;
    /// `kDLFloat6_e2m3fn`: 6-bit floats, 2 exponent and 3 mantissa bits, finite.
    pub const FLOAT6_E2M3FN: u8 = 15;
    /// `kDLFloat6_e3m2fn`: 6-bit floats, 3 exponent and 2 mantissa bits, finite.
    pub const FLOAT6_E3M2FN: u8 = 16;
    /// `kDLFloat4_e2m1fn`: 4-bit floats, 2 exponent bits and 1 mantissa bit, finite.
    pub const FLOAT4_E2M1FN: u8 = 17;

    /// One lane of `bits` bits of kind `code`.
    pub const fn scalar(code: u8, bits: u8) -> DLDataType {
        DLDataType {
            code,
            bits,
            lanes: 1,
        }
    }

    /// The bytes of one element, where it is a whole number of them.
    pub fn size(self) -> Option<usize> {
        let bits = usize::from(self.bits) * usize::from(self.lanes);
        (bits % 8 == 0).then_some(bits / 8)
    }
}

impl fmt::Display for DLDataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.code {
            DLDataType::INT => "int",
            DLDataType::UINT => "uint",
            DLDataType::FLOAT => "float",
            DLDataType::OPAQUE_HANDLE => "handle",
            DLDataType::BFLOAT => "bfloat",
            DLDataType::COMPLEX => "complex",
            DLDataType::BOOL => "bool",
            code => match minifloat_name(code) {
                // Named with their width: `float8_e4m3fn`, or where the bits are not that
                // width (which DLPack leaves unspecified), `float8_e4m3fn of 16 bits`.
                Some((name, width)) if width == self.bits => name,
                Some((name, _)) => return write!(f, "{name} of {} bits", self.bits),
                None => return write!(f, "type code {code} of {} bits", self.bits),
            },
        };
        if minifloat_name(self.code).is_some() {
            f.write_str(kind)?;
        } else {
            write!(f, "{kind}{}", self.bits)?;
        }
        if self.lanes != 1 {
            write!(f, "x{}", self.lanes)?;
        }
        Ok(())
    }
}

/// The name and width in bits of DLPack's FP8, FP6 and FP4 type codes.
fn minifloat_name(code: u8) -> Option<(&'static str, u8)> {
    Some(match code {
        DLDataType::FLOAT8_E3M4 => ("float8_e3m4", 8),
        DLDataType::FLOAT8_E4M3 => ("float8_e4m3", 8),
        DLDataType::FLOAT8_E4M3B11FNUZ => ("float8_e4m3b11fnuz", 8),
        DLDataType::FLOAT8_E4M3FN => ("float8_e4m3fn", 8),
        DLDataType::FLOAT8_E4M3FNUZ => ("float8_e4m3fnuz", 8),
        DLDataType::FLOAT8_E5M2 => ("float8_e5m2", 8),
        DLDataType::FLOAT8_E5M2FNUZ => ("float8_e5m2fnuz", 8),
        DLDataType::FLOAT8_E8M0FNU => ("float8_e8m0fnu", 8),
        DLDataType::FLOAT6_E2M3FN => ("float6_e2m3fn", 6),
        DLDataType::FLOAT6_E3M2FN => ("float6_e3m2fn", 6),
        DLDataType::FLOAT4_E2M1FN => ("float4_e2m1fn", 4),
        _ => return None,
    })
}

/// `DLTensor`: the description of a tensor (not its ownership).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The data's address (a device address for `kDLCUDA`).
    pub data: *mut c_void,
    /// Where the data is.
    pub device: DLDevice,
    /// The number of dimensions.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for a compact row-major tensor.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensorVersioned`: a tensor, its version and flags, and how to release it.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The DLPack version of the struct.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Releases the tensor (called once by its consumer); may be null.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `FLAG_*` bits.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// An element type with a DLPack data type: the integers, floats (and with the `half`
/// feature `f16` and `bf16`, with the `float8` feature `F8E4M3` as `kDLFloat8_e4m3fn` and
/// `F8E5M2` as `kDLFloat8_e5m2`). TF32 data are `f32` elements (`kDLFloat`, 32 bits): TF32 is
/// how tensor cores read them, not how they are stored. Implement it for a type of your own of the same layout (a
/// `#[repr(C)]` pair of floats as `kDLComplex`, say); its [`DATA_TYPE`](Element::DATA_TYPE)
/// must be as wide as the type, which is checked.
pub trait Element: Pod {
    /// The element's DLPack type.
    const DATA_TYPE: DLDataType;
}

macro_rules! element {
    ($($(#[$attr:meta])* $t:ty => $code:ident),*) => {$(
        $(#[$attr])*
        impl Element for $t {
            const DATA_TYPE: DLDataType =
                DLDataType::scalar(DLDataType::$code, (std::mem::size_of::<$t>() * 8) as u8);
        }
    )*};
}
element!(
    u8 => UINT, u16 => UINT, u32 => UINT, u64 => UINT, usize => UINT,
    i8 => INT, i16 => INT, i32 => INT, i64 => INT, isize => INT,
    f32 => FLOAT, f64 => FLOAT
);

#[cfg(feature = "half")]
element!(
    #[cfg_attr(docsrs, doc(cfg(feature = "half")))] half::f16 => FLOAT,
    #[cfg_attr(docsrs, doc(cfg(feature = "half")))] half::bf16 => BFLOAT
);

#[cfg(feature = "float8")]
element!(
    #[cfg_attr(docsrs, doc(cfg(feature = "float8")))] float8::F8E4M3 => FLOAT8_E4M3FN,
    #[cfg_attr(docsrs, doc(cfg(feature = "float8")))] float8::F8E5M2 => FLOAT8_E5M2
);

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

/// `T`'s data type, checked to be as wide as `T`.
fn data_type_of<T: Element>() -> Result<DLDataType> {
    let dtype = T::DATA_TYPE;
    if dtype.size() != Some(std::mem::size_of::<T>()) {
        return Err(invalid(
            "T",
            format!(
                "{}'s DLPack type {dtype} ({} bits x {} lanes) is not its {} bytes",
                std::any::type_name::<T>(),
                dtype.bits,
                dtype.lanes,
                std::mem::size_of::<T>()
            ),
        ));
    }
    Ok(dtype)
}

/// A DLPack tensor held by this crate: a producer's, taken with [`DlpackTensor::from_raw`],
/// or one exported here. Dropping it calls its deleter; [`DlpackTensor::into_raw`] hands it
/// to a consumer instead, which then calls it.
pub struct DlpackTensor {
    raw: NonNull<DLManagedTensorVersioned>,
}

// SAFETY: the tensor is only read here, and released once; `from_raw`'s contract has it
// readable and releasable from any thread (this crate's exports are: their context is
// `Send + Sync`).
unsafe impl Send for DlpackTensor {}
// SAFETY: as above: shared, it is only read.
unsafe impl Sync for DlpackTensor {}

impl fmt::Debug for DlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DlpackTensor")
            .field("version", &self.version())
            .field("device", &self.device())
            .field("dtype", &format_args!("{}", self.data_type()))
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("byte_offset", &self.byte_offset())
            .field("flags", &self.flags())
            .finish()
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        // SAFETY: the tensor is held here, and released only here (`into_raw` forgets it).
        unsafe { release(self.raw) }
    }
}

/// Calls a tensor's deleter, if it has one.
///
/// # Safety
///
/// `raw` is a live tensor, released once.
unsafe fn release(raw: NonNull<DLManagedTensorVersioned>) {
    // SAFETY: live (the caller's promise); the deleter field is at the same place in every
    // DLPack 1.x (and later, the header promises) version.
    if let Some(deleter) = unsafe { raw.as_ref() }.deleter {
        // SAFETY: the producer's own deleter, called once on its tensor.
        unsafe { deleter(raw.as_ptr()) }
    }
}

impl DlpackTensor {
    /// Takes a producer's tensor. Checked: non-null, of DLPack major version 1, a
    /// non-negative number of dimensions, a shape where it has dimensions. A tensor that is
    /// refused is released (its deleter called) before the error returns, as a consumer must.
    ///
    /// # Safety
    ///
    /// `tensor` is a `DLManagedTensorVersioned` whose ownership passes to the result: a
    /// tensor of major version 1 is valid as DLPack says (its `shape` holds `ndim` extents,
    /// `strides` null or `ndim` strides, and `data`, at `byte_offset`, the elements they
    /// reach, of its `device`), stays unchanged and allocated until its deleter is called,
    /// and may be read, and its deleter called, from any thread. Its data must be ready for
    /// the work the caller queues on it (DLPack's stream exchange is the caller's: ask the
    /// producer to make it ready on the stream to be used).
    #[doc(alias = "from_dlpack")]
    pub unsafe fn from_raw(tensor: *mut DLManagedTensorVersioned) -> Result<DlpackTensor> {
        let Some(raw) = NonNull::new(tensor) else {
            return Err(invalid("tensor", "null".to_owned()));
        };
        let held = DlpackTensor { raw };
        // SAFETY: a live tensor (the caller's promise); `version` is read before any field a
        // later major version may move.
        let version = unsafe { raw.as_ref() }.version;
        if version.major != DLPACK_MAJOR_VERSION {
            return Err(invalid(
                "tensor",
                format!(
                    "DLPack version {}.{}; this crate reads major version {DLPACK_MAJOR_VERSION}",
                    version.major, version.minor
                ),
            ));
        }
        let tensor = &held.managed().dl_tensor;
        if tensor.ndim < 0 {
            return Err(invalid("tensor", format!("{} dimensions", tensor.ndim)));
        }
        if tensor.ndim > 0 && tensor.shape.is_null() {
            return Err(invalid(
                "tensor",
                format!("{} dimensions and a null shape", tensor.ndim),
            ));
        }
        Ok(held)
    }

    /// Hands the tensor over: the receiver calls its deleter (a DLPack consumer; or
    /// [`DlpackTensor::from_raw`] to take it back).
    pub fn into_raw(self) -> *mut DLManagedTensorVersioned {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }

    /// The tensor, still held here.
    pub fn as_raw(&self) -> *const DLManagedTensorVersioned {
        self.raw.as_ptr()
    }

    fn managed(&self) -> &DLManagedTensorVersioned {
        // SAFETY: live while held (`from_raw`'s contract, or made here), and unchanged.
        unsafe { self.raw.as_ref() }
    }

    /// The DLPack version the producer wrote.
    pub fn version(&self) -> DLPackVersion {
        self.managed().version
    }

    /// The device (or memory kind) of the data.
    pub fn device(&self) -> DLDevice {
        self.managed().dl_tensor.device
    }

    /// The element type.
    pub fn data_type(&self) -> DLDataType {
        self.managed().dl_tensor.dtype
    }

    /// The extents, one per dimension.
    pub fn shape(&self) -> &[i64] {
        let tensor = &self.managed().dl_tensor;
        if tensor.ndim <= 0 {
            return &[];
        }
        // SAFETY: `ndim` extents at a non-null `shape` (checked on entry, DLPack's rule),
        // unchanged while the tensor is held.
        unsafe { std::slice::from_raw_parts(tensor.shape, tensor.ndim as usize) }
    }

    /// The strides in elements, one per dimension; `None` where the producer gave none (a
    /// compact row-major tensor).
    pub fn strides(&self) -> Option<&[i64]> {
        let tensor = &self.managed().dl_tensor;
        if tensor.strides.is_null() {
            return None;
        }
        if tensor.ndim <= 0 {
            return Some(&[]);
        }
        // SAFETY: `ndim` strides at a non-null `strides` (DLPack's rule), unchanged while held.
        Some(unsafe { std::slice::from_raw_parts(tensor.strides, tensor.ndim as usize) })
    }

    /// The data's address, before [`byte_offset`](DlpackTensor::byte_offset).
    pub fn data(&self) -> *mut c_void {
        self.managed().dl_tensor.data
    }

    /// Bytes from [`data`](DlpackTensor::data) to the first element.
    pub fn byte_offset(&self) -> u64 {
        self.managed().dl_tensor.byte_offset
    }

    /// The `FLAG_*` bits.
    pub fn flags(&self) -> u64 {
        self.managed().flags
    }

    /// Whether the producer marked the data read-only ([`FLAG_READ_ONLY`]).
    pub fn is_read_only(&self) -> bool {
        self.flags() & FLAG_READ_ONLY != 0
    }

    /// A view of the tensor's elements as `T`, borrowing the tensor. Checked before any
    /// driver call: the memory is a CUDA device's (`kDLCUDA`, of a device this machine has),
    /// pinned (`kDLCUDAHost`) or managed (`kDLCUDAManaged`); the data type is `T`'s; the
    /// extents are non-negative; the first element (`data` plus `byte_offset`) is aligned for
    /// `T`, non-null unless the tensor is empty, and the elements reached lie within the
    /// address space. Each refusal is [`Error::InvalidArgument`] saying which.
    pub fn view<T: Element>(&self) -> Result<StridedView<'_, T>> {
        self.view_with(Owner::Foreign)
    }

    /// [`view`](DlpackTensor::view), keeping the tensor: the producer's deleter is called when
    /// the view and its clones are dropped (and any DLPack tensor exported from them is
    /// released).
    pub fn into_view<T: Element>(self) -> Result<StridedView<'static, T>> {
        let held = Arc::new(self);
        let owner = Owner::Imported {
            _tensor: Arc::clone(&held),
        };
        held.view_with(owner)
    }

    fn view_with<'a, T: Element>(&self, owner: Owner<'a>) -> Result<StridedView<'a, T>> {
        let dtype = data_type_of::<T>()?;
        if self.data_type() != dtype {
            return Err(invalid(
                "T",
                format!(
                    "the tensor holds {} (code {}, {} bits, {} lanes); {} is {dtype}",
                    self.data_type(),
                    self.data_type().code,
                    self.data_type().bits,
                    self.data_type().lanes,
                    std::any::type_name::<T>()
                ),
            ));
        }
        let memory = self.memory()?;
        let shape = self
            .shape()
            .iter()
            .map(|&e| usize::try_from(e))
            .collect::<std::result::Result<Vec<usize>, _>>()
            .map_err(|_| {
                invalid(
                    "tensor",
                    format!("its shape {:?} has a negative extent", self.shape()),
                )
            })?;
        let strides = match self.strides() {
            None => None,
            Some(strides) => Some(
                strides
                    .iter()
                    .map(|&s| isize::try_from(s))
                    .collect::<std::result::Result<Vec<isize>, _>>()
                    .map_err(|_| {
                        invalid(
                            "tensor",
                            format!("its strides {strides:?} do not fit this machine's isize"),
                        )
                    })?,
            ),
        };
        let first = (self.data() as u64)
            .checked_add(self.byte_offset())
            .ok_or_else(|| {
                invalid(
                    "tensor",
                    format!(
                        "data {:p} plus byte_offset {} passes 2^64",
                        self.data(),
                        self.byte_offset()
                    ),
                )
            })?;
        // SAFETY: the tensor's producer vouched for its memory (`from_raw`'s contract): its
        // elements are of `memory`'s kind and stay allocated while it is held, which `owner`
        // (the tensor, or the borrow of it for `'a`) ensures.
        unsafe {
            StridedView::foreign(
                DevicePtr(first),
                &shape,
                strides.as_deref(),
                memory,
                owner,
                self.is_read_only(),
            )
        }
        .map_err(|e| match e {
            Error::InvalidArgument { name, reason } => invalid(
                if name == "T" { "T" } else { "tensor" },
                format!("{name}: {reason}"),
            ),
            other => other,
        })
    }

    /// The memory kind of the tensor, refused where kernels cannot use it.
    fn memory(&self) -> Result<ViewMemory> {
        let device = self.device();
        match device.device_type {
            DLDeviceType::CUDA => {
                let ordinal = usize::try_from(device.device_id).map_err(|_| {
                    invalid("tensor", format!("kDLCUDA device id {}", device.device_id))
                })?;
                Ok(ViewMemory::Device(Device::new(ordinal)?))
            }
            DLDeviceType::CUDA_HOST => Ok(ViewMemory::Pinned),
            DLDeviceType::CUDA_MANAGED => Ok(ViewMemory::Managed),
            other => Err(invalid(
                "tensor",
                format!(
                    "its memory is {other:?}, not CUDA memory: a view is of kDLCUDA, \
                     kDLCUDAHost or kDLCUDAManaged memory (copy other memory into a buffer)"
                ),
            )),
        }
    }

    /// Exports `shape` elements of `T` from the start of `buffer`, row-major: see
    /// [`StridedView::to_dlpack`].
    pub fn from_buffer<T: Element>(
        buffer: Arc<Buffer>,
        shape: &[usize],
        stream: Option<&Stream>,
    ) -> Result<DlpackTensor> {
        StridedView::<T>::shared(buffer, 0, shape, None)?.to_dlpack(stream)
    }
}

/// What an exported tensor keeps: the struct the consumer receives, the arrays it points to,
/// and the view's memory with its stream order.
struct Exported {
    managed: DLManagedTensorVersioned,
    shape: Box<[i64]>,
    strides: Box<[i64]>,
    /// Held for its drop: the view's memory.
    _keep: Owner<'static>,
    /// The consumer's stream and the memory's, where they differ.
    order: Option<(Stream, Stream)>,
}

// The deleter may run on any thread: what an export keeps (beside its own arrays) must be
// sendable and shareable, as `DlpackTensor`'s `Send` and `Sync` say.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Owner<'static>>();
    send_and_sync::<Option<(Stream, Stream)>>();
};

/// The deleter of exported tensors: the memory's stream waits for the work queued on the
/// consumer's so far, then the memory is let go; where that order cannot be made, the memory
/// is kept for good (see [`ordered_release`]). It never unwinds into its C caller.
unsafe extern "C" fn release_exported(tensor: *mut DLManagedTensorVersioned) {
    if tensor.is_null() {
        return;
    }
    let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: an exported tensor's context is its `Exported` box, taken back once (the
        // deleter is called once).
        let exported = unsafe { Box::from_raw((*tensor).manager_ctx.cast::<Exported>()) };
        let ordered = exported
            .order
            .as_ref()
            .is_none_or(|(consumer, home)| ordered_release(consumer, home));
        if ordered {
            drop(exported);
        } else {
            // The consumer's work may still use the memory: never let it go.
            std::mem::forget(exported);
        }
    }));
    if released.is_err() {
        // Unwinding into C is undefined behaviour; a panic here is a bug of this crate.
        std::process::abort();
    }
}

/// Orders `home` (the memory's stream) after the work queued on `consumer` so far, before a
/// released export lets its memory go: by an event, or failing that by waiting for the
/// consumer's stream or, should that fail too (a per-thread default stream released on
/// another thread than its own), for its whole context. `false` where none of these could be
/// done, or the consumer's stream captures a graph (whose work queued before the capture
/// cannot be waited for then, and must not be overtaken by the free): the memory must then
/// be kept, and the log says so. Whether it captures is asked of the driver too, for a capture
/// this value did not begin (another wrapper of the stream, or a capture it joined), where an
/// event recorded on it would pull the memory's stream, and its free, into the capture.
fn ordered_release(consumer: &Stream, home: &Stream) -> bool {
    let capturing = consumer.capturing()
        || matches!(
            consumer.capture_status(),
            Ok(CaptureStatus::Active | CaptureStatus::Invalidated)
        );
    if capturing {
        log::error!(
            "a released DLPack tensor's memory is kept (leaked): its consumer's stream captures \
             a graph, so the work queued there before cannot be waited for"
        );
        return false;
    }
    let Err(first) = crate::order::order_homes_after(&[home], consumer) else {
        return true;
    };
    match consumer.context().sync() {
        Ok(()) => true,
        Err(e) => {
            log::error!(
                "a released DLPack tensor's memory is kept (leaked): ordering it after its \
                 consumer's stream failed ({first}), and so did waiting for the context ({e})"
            );
            false
        }
    }
}

impl<T: Element> StridedView<'static, T> {
    /// Exports the view as a DLPack tensor: its address as `data` (with `byte_offset` 0), its
    /// shape and strides, its memory as `kDLCUDA` with the device's index, `kDLCUDAHost` or
    /// `kDLCUDAManaged` (index 0), `T`'s data type, and `FLAG_READ_ONLY` where the view is
    /// read-only. The tensor keeps what keeps the view (its `Arc<Buffer>`, or the tensor it
    /// was imported from) until its deleter is called.
    ///
    /// `stream` is the stream the consumer will use the data on (DLPack's `stream` argument);
    /// `None`: the view's buffer's deallocation stream, or no stream at all. For a view of a
    /// buffer and another stream, `stream` waits now for the work queued on the buffer's
    /// stream so far, and when the tensor is released the buffer's stream waits for the work
    /// queued on `stream` by then, so that the buffer's free cannot overtake the consumer's
    /// work there. (A consumer that uses other streams orders them itself. A per-thread
    /// default `stream` released on another thread than its own is waited for through its
    /// whole context instead. Released while `stream` captures a graph, the buffer is kept
    /// for good, and the log says so: the work queued there before the capture cannot be
    /// ordered then.)
    ///
    /// Refused: more dimensions than DLPack's `i32` counts, or an extent (of a broadcast
    /// view) past `i64::MAX`.
    #[doc(alias = "__dlpack__")]
    pub fn to_dlpack(&self, stream: Option<&Stream>) -> Result<DlpackTensor> {
        let dtype = data_type_of::<T>()?;
        let ndim = i32::try_from(self.ndim()).map_err(|_| {
            invalid(
                "self",
                format!("{} dimensions, more than DLPack's i32", self.ndim()),
            )
        })?;
        let shape = self
            .shape()
            .iter()
            .map(|&e| i64::try_from(e))
            .collect::<std::result::Result<Box<[i64]>, _>>()
            .map_err(|_| {
                invalid(
                    "self",
                    format!(
                        "shape {:?} has an extent past i64::MAX, which DLPack's shape cannot hold",
                        self.shape()
                    ),
                )
            })?;
        let strides: Box<[i64]> = self.strides().iter().map(|&s| s as i64).collect();
        let device = match self.memory() {
            ViewMemory::Device(device) => DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: device.ordinal() as i32,
            },
            ViewMemory::Pinned => DLDevice {
                device_type: DLDeviceType::CUDA_HOST,
                device_id: 0,
            },
            ViewMemory::Managed => DLDevice {
                device_type: DLDeviceType::CUDA_MANAGED,
                device_id: 0,
            },
        };
        let mut order = None;
        if let (Some(consumer), Some(home)) = (stream, self.home()) {
            if !consumer.same_as(home) {
                if !consumer.capturing() {
                    consumer.wait_for(home)?;
                }
                order = Some((consumer.clone(), home.clone()));
            }
        }
        let exported = Box::new(Exported {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion {
                    major: DLPACK_MAJOR_VERSION,
                    minor: DLPACK_MINOR_VERSION,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(release_exported),
                flags: if self.is_read_only() {
                    FLAG_READ_ONLY
                } else {
                    0
                },
                dl_tensor: DLTensor {
                    data: self.ptr().0 as *mut c_void,
                    device,
                    ndim,
                    dtype,
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            shape,
            strides,
            _keep: self.owner().clone(),
            order,
        });
        let raw = Box::into_raw(exported);
        // SAFETY: `raw` is the box just leaked, owned here until the deleter takes it back;
        // the arrays' heap memory stays where it is while the box lives.
        let managed = unsafe {
            (*raw).managed.manager_ctx = raw.cast();
            (*raw).managed.dl_tensor.shape = (*raw).shape.as_mut_ptr();
            (*raw).managed.dl_tensor.strides = (*raw).strides.as_mut_ptr();
            NonNull::new_unchecked(std::ptr::addr_of_mut!((*raw).managed))
        };
        Ok(DlpackTensor { raw: managed })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its calls in the `AtomicUsize` that the tensor's context points to.
    unsafe extern "C" fn count_release(tensor: *mut DLManagedTensorVersioned) {
        // SAFETY: the tests' tensors point their context at a live counter.
        let released = unsafe { &*(*tensor).manager_ctx.cast::<AtomicUsize>() };
        released.fetch_add(1, Ordering::Relaxed);
    }

    /// A producer's tensor of pinned memory at `data`, its shape and strides owned by the
    /// caller, released into `released`.
    fn producer_tensor(
        data: u64,
        dtype: DLDataType,
        shape: &mut [i64],
        strides: Option<&mut [i64]>,
        released: &AtomicUsize,
    ) -> Box<DLManagedTensorVersioned> {
        Box::new(DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_MAJOR_VERSION,
                minor: 0,
            },
            manager_ctx: std::ptr::from_ref(released).cast_mut().cast(),
            deleter: Some(count_release),
            flags: FLAG_READ_ONLY,
            dl_tensor: DLTensor {
                data: std::ptr::without_provenance_mut(data as usize),
                device: DLDevice {
                    device_type: DLDeviceType::CUDA_HOST,
                    device_id: 0,
                },
                ndim: shape.len() as i32,
                dtype,
                shape: shape.as_mut_ptr(),
                strides: strides.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
                byte_offset: 8,
            },
        })
    }

    /// A producer's tensor is read as it says and released once, by the view that took it
    /// or on refusal (bugs caught: a field misread, a deleter called twice or never).
    #[test]
    fn a_producers_tensor_is_viewed_as_it_says_and_released_once() {
        let released = AtomicUsize::new(0);
        let (mut shape, mut strides) = ([2i64, 3], [1i64, 2]);
        let f32 = DLDataType::scalar(DLDataType::FLOAT, 32);
        let mut raw = producer_tensor(0x1000, f32, &mut shape, Some(&mut strides), &released);
        // SAFETY: a valid tensor (its arrays outlive it), released only through `tensor`.
        let tensor = unsafe { DlpackTensor::from_raw(&mut *raw) }.unwrap();
        assert_eq!(
            (tensor.shape(), tensor.strides()),
            (&[2, 3][..], Some(&[1, 2][..]))
        );
        let view = tensor.view::<f32>().unwrap();
        assert_eq!((view.shape(), view.strides()), (&[2, 3][..], &[1, 2][..]));
        assert_eq!(view.ptr(), DevicePtr(0x1008));
        assert_eq!(view.memory(), ViewMemory::Pinned);
        assert!(view.is_read_only());
        assert_eq!(view.element_ptr(&[1, 2]), Some(DevicePtr(0x1008 + 4 * 5)));
        assert!(tensor.view::<u32>().is_err(), "another element type");
        drop(view);
        let view = tensor.into_view::<f32>().unwrap();
        let copy = view.clone();
        drop(view);
        assert_eq!(released.load(Ordering::Relaxed), 0, "released while viewed");
        drop(copy);
        assert_eq!(released.load(Ordering::Relaxed), 1);
        // Refused: another major version, a negative number of dimensions.
        raw.version.major = 2;
        // SAFETY: as above; refused, it is released before the error returns.
        assert!(unsafe { DlpackTensor::from_raw(&mut *raw) }.is_err());
        assert_eq!(released.load(Ordering::Relaxed), 2);
        raw.version.major = DLPACK_MAJOR_VERSION;
        raw.dl_tensor.ndim = -1;
        // SAFETY: as above.
        assert!(unsafe { DlpackTensor::from_raw(&mut *raw) }.is_err());
        assert_eq!(released.load(Ordering::Relaxed), 3);
    }

    /// A view of bytes may span nearly the whole 64-bit space: each of its elements has an
    /// address (found by the dlpack_import fuzz target: `element_ptr` said that an element
    /// past `isize::MAX` bytes from the first was out of range).
    #[test]
    fn every_element_of_a_view_spanning_past_isize_max_has_its_address() {
        let released = AtomicUsize::new(0);
        let stride = 3 << 61;
        let (mut shape, mut strides) = ([2i64, 2], [stride, stride]);
        let u8 = DLDataType::scalar(DLDataType::UINT, 8);
        let mut raw = producer_tensor(0, u8, &mut shape, Some(&mut strides), &released);
        // SAFETY: as in the test above; its data is never read.
        let tensor = unsafe { DlpackTensor::from_raw(&mut *raw) }.unwrap();
        let view = tensor.view::<u8>().unwrap();
        assert_eq!(view.element_ptr(&[1, 1]), Some(DevicePtr(8 + (3 << 62))));
        assert_eq!(view.element_ptr(&[2, 0]), None);
    }
}
