//! `StridedMemoryView` (in `cudacore_rs.utils`, as cuda.core's): the metadata of a strided
//! array another library produced, read through DLPack (`__dlpack__`, `__dlpack_device__`),
//! the CUDA Array Interface (`__cuda_array_interface__`, v3) or NumPy's `__array_interface__`
//! (v3), without copying its data. `args_viewable_as_strided_memory` and its proxy are Python
//! (`python/cudacore_rs/_memoryview.py`), on top of this class.
//!
//! A DLPack tensor is consumed as the protocol says: the capsule is renamed
//! ("used_dltensor_versioned" / "used_dltensor") when the view takes the tensor, and the
//! tensor's deleter is called exactly once, when the view is collected (a versioned tensor is
//! held in cuda-core's `DlpackTensor`, whose drop calls it; a legacy one in `LegacyTensor`
//! below). A tensor taken and then refused (a bad version, a negative extent) is released
//! before the error returns.
//!
//! An interface's values are checked before they are believed: its number of dimensions (at
//! most 64, NumPy's bound), extents (non-negative, and their product an `i64`), strides (as
//! many as extents, whole elements) and the bytes they reach from the address (inside the
//! address space); each refusal is a `ValueError` (a wrong type, `TypeError`), never an
//! overflow or a panic.

use std::ffi::{c_char, c_void, CStr};
use std::ptr::NonNull;

use cuda_core::dlpack::{
    DLDataType, DLDeviceType, DLTensor, DlpackTensor, DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION,
};
use pyo3::exceptions::{PyBufferError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::*;

/// The most dimensions an interface's array may have here (NumPy 2's `NPY_MAXDIMS`).
const MAX_NDIM: usize = 64;

const VERSIONED_NAME: &CStr = c"dltensor_versioned";
const VERSIONED_USED_NAME: &CStr = c"used_dltensor_versioned";
const LEGACY_NAME: &CStr = c"dltensor";
const LEGACY_USED_NAME: &CStr = c"used_dltensor";

/// `DLManagedTensor`, DLPack's legacy (pre-1.0) tensor, `#[repr(C)]` as `dlpack.h` has it.
#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// A producer's legacy tensor, taken from its capsule: its deleter is called on drop.
struct LegacyTensor(NonNull<DLManagedTensor>);

// SAFETY: the tensor is only read here (its fields, once, when the view is made) and released
// once, on drop; DLPack lets a consumer release a tensor from any thread (producers that need
// the GIL, as NumPy's, take it in their deleter; the view is dropped with the GIL held anyway).
unsafe impl Send for LegacyTensor {}
// SAFETY: as above: shared, it is never touched.
unsafe impl Sync for LegacyTensor {}

impl Drop for LegacyTensor {
    fn drop(&mut self) {
        // SAFETY: a live tensor taken from a capsule this module renamed (so its owner),
        // released only here, once.
        unsafe {
            if let Some(deleter) = self.0.as_ref().deleter {
                deleter(self.0.as_ptr());
            }
        }
    }
}

/// What keeps a view's memory valid: the DLPack tensor it consumed, released on drop.
enum Held {
    Versioned(DlpackTensor),
    Legacy(LegacyTensor),
    Nothing,
}

impl Held {
    /// The tensor's description, while it is held.
    fn dl_tensor(&self) -> Option<&DLTensor> {
        match self {
            // SAFETY: the tensor the `DlpackTensor` owns: live and unchanged while held, and
            // the reference borrows the holder.
            Held::Versioned(t) => Some(unsafe { &(*t.as_raw()).dl_tensor }),
            // SAFETY: as above, the legacy tensor `LegacyTensor` owns.
            Held::Legacy(t) => Some(unsafe { &t.0.as_ref().dl_tensor }),
            Held::Nothing => None,
        }
    }
}

/// The element type, as the producer described it.
#[derive(Clone)]
enum ElementType {
    /// A DLPack data type.
    Dlpack(DLDataType),
    /// An interface's `typestr`, with its item size.
    Typestr(String),
    /// An empty view's.
    Unknown,
}

/// A view of a strided array another library produced: its address, shape, strides, data
/// type and device, read through DLPack (preferred), the CUDA Array Interface (v3), or, with
/// `from_array_interface`, NumPy's array interface. The data is not copied; the view holds the
/// producer (`exporting_obj`) and the DLPack tensor it took until it is collected, when the
/// tensor's deleter is called (exactly once).
///
/// `stream_ptr` is the consumer's stream (a `CUstream` as an int). For DLPack it is passed to
/// `__dlpack__` (`-1` opts out of ordering; for host memory it then passes None); `None` is
/// refused (`BufferError`) for host (`kDLCPU`) and device (`kDLCUDA`) tensors, accepted for
/// pinned and managed ones. For the CUDA Array Interface, where the producer names a stream
/// other than `stream_ptr`, the consumer's stream is made to wait for the producer's work (an
/// event recorded on the producer's stream); `-1` opts out; `None` is refused. The streams are
/// raw handles, of the same raw power as `Stream.from_handle`: they must be valid `CUstream`s.
///
/// An object with neither DLPack nor the CUDA Array Interface raises `TypeError`.
#[pyclass(name = "StridedMemoryView", module = "cudacore_rs.utils", frozen)]
pub(crate) struct PyStridedMemoryView {
    ptr: u64,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    element: ElementType,
    itemsize: usize,
    device_id: i32,
    is_device_accessible: bool,
    readonly: bool,
    exporting_obj: Option<PyObject>,
    /// The interface's dict (CUDA Array Interface, array interface), kept as cuda.core does.
    _metadata: Option<PyObject>,
    dtype: GILOnceCell<PyObject>,
    /// The DLPack tensor taken, released (its deleter called) when the view is dropped.
    held: Held,
}

impl Drop for PyStridedMemoryView {
    fn drop(&mut self) {
        // The tensor first, while the producer (`exporting_obj`, dropped with the other
        // fields after this) is still held.
        drop(std::mem::replace(&mut self.held, Held::Nothing));
    }
}

impl PyStridedMemoryView {
    fn empty() -> Self {
        PyStridedMemoryView {
            ptr: 0,
            shape: Vec::new(),
            strides: None,
            element: ElementType::Unknown,
            itemsize: 0,
            device_id: 0,
            is_device_accessible: false,
            readonly: false,
            exporting_obj: None,
            _metadata: None,
            dtype: GILOnceCell::new(),
            held: Held::Nothing,
        }
    }
}

/// The consumer stream argument: None, -1, or a handle (`0 <= s < 2**64`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum StreamArg {
    None,
    OptOut,
    Handle(u64),
}

fn stream_arg(stream_ptr: Option<&Bound<'_, PyAny>>) -> PyResult<StreamArg> {
    let Some(stream_ptr) = stream_ptr.filter(|s| !s.is_none()) else {
        return Ok(StreamArg::None);
    };
    let wide: i128 = stream_ptr.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "stream_ptr takes None, -1 or a stream handle (an int), not {}",
            type_name(stream_ptr)
        ))
    })?;
    match wide {
        -1 => Ok(StreamArg::OptOut),
        _ => u64::try_from(wide).map(StreamArg::Handle).map_err(|_| {
            PyValueError::new_err(format!("stream_ptr={wide} is not a stream handle"))
        }),
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

fn ambiguous() -> PyErr {
    PyBufferError::new_err(
        "stream_ptr=None is ambiguous with view(): pass the consumer stream's handle, or -1 to \
         opt out of stream ordering",
    )
}

/// Which protocol `obj` offers, as cuda.core chooses: DLPack (both methods), else the CUDA
/// Array Interface; `TypeError` where it has neither.
fn has_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.hasattr(intern!(obj.py(), "__dlpack__"))?
        && obj.hasattr(intern!(obj.py(), "__dlpack_device__"))?
    {
        return Ok(true);
    }
    if obj.hasattr(intern!(obj.py(), "__cuda_array_interface__"))? {
        return Ok(false);
    }
    Err(PyTypeError::new_err(format!(
        "a {} supports no data exchange protocol StridedMemoryView reads (__dlpack__ with \
         __dlpack_device__, or __cuda_array_interface__; for __array_interface__ use \
         StridedMemoryView.from_array_interface)",
        type_name(obj)
    )))
}

/// A view through DLPack.
fn view_dlpack(
    obj: &Bound<'_, PyAny>,
    stream_ptr: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyStridedMemoryView> {
    let py = obj.py();
    let stream = stream_arg(stream_ptr)?;
    let device = obj.call_method0(intern!(py, "__dlpack_device__"))?;
    let (device_type, device_id): (i32, i32) = device.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "__dlpack_device__() must return a (device_type, device_id) tuple of ints, got {}",
            device.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    // The stream passed on to __dlpack__, as cuda.core does: `None` where the argument is
    // None or 0, -1 for host memory becomes None, any other value is passed as is.
    let pass = |s: StreamArg| match s {
        StreamArg::None | StreamArg::Handle(0) => None,
        StreamArg::OptOut => Some(-1i128),
        StreamArg::Handle(h) => Some(i128::from(h)),
    };
    let (view_device, accessible, passed) = match DLDeviceType(device_type) {
        DLDeviceType::CPU => {
            if device_id != 0 {
                return Err(PyBufferError::new_err(format!(
                    "__dlpack_device__() says host memory (kDLCPU) of device {device_id}, not 0"
                )));
            }
            match stream {
                StreamArg::None => return Err(ambiguous()),
                StreamArg::OptOut => (-1, false, None),
                s => (-1, false, pass(s)),
            }
        }
        DLDeviceType::CUDA => {
            if device_id < 0 {
                return Err(PyBufferError::new_err(format!(
                    "__dlpack_device__() says device {device_id}"
                )));
            }
            if stream == StreamArg::None {
                return Err(ambiguous());
            }
            (device_id, true, pass(stream))
        }
        DLDeviceType::CUDA_HOST | DLDeviceType::CUDA_MANAGED => (device_id, true, pass(stream)),
        other => {
            return Err(PyBufferError::new_err(format!(
                "device not supported: {other:?}"
            )))
        }
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", passed)?;
    kwargs.set_item("max_version", (DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION))?;
    let dlpack = obj.getattr(intern!(py, "__dlpack__"))?;
    let capsule = match dlpack.call((), Some(&kwargs)) {
        Ok(capsule) => capsule,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            // A producer of DLPack before 1.0 takes no max_version.
            let kwargs = PyDict::new(py);
            kwargs.set_item("stream", passed)?;
            dlpack.call((), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let (held, readonly) = take_capsule(&capsule)?;
    let Some(tensor) = held.dl_tensor() else {
        return Err(PyBufferError::new_err("no DLPack tensor was taken"));
    };
    let data = tensor.data as u64;
    let dtype = tensor.dtype;
    let byte_offset = tensor.byte_offset;
    let (shape, strides) = tensor_layout(tensor)?;
    let bits = u32::from(dtype.bits) * u32::from(dtype.lanes);
    if bits % 8 != 0 || bits == 0 {
        return Err(PyValueError::new_err(format!(
            "the tensor's elements are {bits} bits, not a whole number of bytes"
        )));
    }
    let ptr = data.checked_add(byte_offset).ok_or_else(|| {
        PyValueError::new_err(format!(
            "the tensor's address {data:#x} plus its byte_offset {byte_offset} overflows"
        ))
    })?;
    let mut view = PyStridedMemoryView::empty();
    view.ptr = ptr;
    view.shape = shape;
    view.strides = strides;
    view.element = ElementType::Dlpack(dtype);
    view.itemsize = (bits / 8) as usize;
    view.device_id = view_device;
    view.is_device_accessible = accessible;
    view.readonly = readonly;
    view.exporting_obj = Some(obj.clone().unbind());
    view.held = held;
    Ok(view)
}

/// Takes the tensor out of a DLPack capsule: checks its name, renames it "used_...", and
/// returns the tensor (released on drop) and whether it is read-only.
fn take_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<(Held, bool)> {
    let py = capsule.py();
    let raw = capsule.as_ptr();
    // SAFETY: a live object (borrowed for the call); CheckExact only reads its type.
    if unsafe { ffi::PyCapsule_CheckExact(raw) } == 0 {
        return Err(PyTypeError::new_err(format!(
            "__dlpack__() must return a PyCapsule, not {}",
            type_name(capsule)
        )));
    }
    for (name, used, versioned) in [
        (VERSIONED_NAME, VERSIONED_USED_NAME, true),
        (LEGACY_NAME, LEGACY_USED_NAME, false),
    ] {
        // SAFETY: a capsule; IsValid only compares its name (and sets no exception).
        if unsafe { ffi::PyCapsule_IsValid(raw, name.as_ptr()) } != 1 {
            continue;
        }
        // SAFETY: a valid capsule of that name: its pointer is the producer's tensor.
        let pointer = unsafe { ffi::PyCapsule_GetPointer(raw, name.as_ptr()) };
        if pointer.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a capsule; the name is a static C string, which outlives it.
        if unsafe { ffi::PyCapsule_SetName(raw, used.as_ptr()) } != 0 {
            // Not renamed: the tensor stays the capsule's, released by its destructor.
            return Err(PyErr::fetch(py));
        }
        // Renamed: the tensor is ours now, to release exactly once.
        if versioned {
            // SAFETY: a `DLManagedTensorVersioned` from an unused "dltensor_versioned"
            // capsule, whose ownership this consumer took by renaming the capsule; DLPack's
            // rules make it valid and unchanged until its deleter is called (the same
            // contract as `from_raw`'s). `from_raw` releases it where it refuses it.
            let tensor = unsafe { DlpackTensor::from_raw(pointer.cast()) }.or_py(py)?;
            let readonly = tensor.is_read_only();
            return Ok((Held::Versioned(tensor), readonly));
        }
        let Some(raw_tensor) = NonNull::new(pointer.cast::<DLManagedTensor>()) else {
            return Err(PyBufferError::new_err(
                "the DLPack capsule holds a null tensor",
            ));
        };
        let held = LegacyTensor(raw_tensor);
        // SAFETY: a live legacy tensor, owned by `held` (released if refused below).
        let tensor = unsafe { &raw_tensor.as_ref().dl_tensor };
        if tensor.ndim < 0 || (tensor.ndim > 0 && tensor.shape.is_null()) {
            return Err(PyValueError::new_err(format!(
                "the DLPack tensor has {} dimensions and a {} shape",
                tensor.ndim,
                if tensor.shape.is_null() {
                    "null"
                } else {
                    "non-null"
                }
            )));
        }
        return Ok((Held::Legacy(held), false));
    }
    // SAFETY: a capsule; GetName returns its name (which may be null) without failing.
    let name = unsafe { ffi::PyCapsule_GetName(raw) };
    let name = if name.is_null() {
        "no name".to_owned()
    } else {
        // SAFETY: a capsule's name is a C string that lives as long as the capsule.
        format!("{:?}", unsafe { CStr::from_ptr(name as *const c_char) })
    };
    Err(PyBufferError::new_err(format!(
        "the DLPack capsule ({name}) was already consumed or holds no DLPack tensor"
    )))
}

/// The shape and strides of a tensor held by the caller, checked: non-negative extents.
fn tensor_layout(tensor: &DLTensor) -> PyResult<(Vec<i64>, Option<Vec<i64>>)> {
    let ndim = usize::try_from(tensor.ndim)
        .map_err(|_| PyValueError::new_err(format!("{} dimensions", tensor.ndim)))?;
    if ndim == 0 {
        return Ok((Vec::new(), (!tensor.strides.is_null()).then(Vec::new)));
    }
    // SAFETY: `ndim` extents at a non-null `shape` (checked when taken; DLPack's rule), and as
    // many strides where `strides` is not null, valid while the caller holds the tensor.
    let shape = unsafe { std::slice::from_raw_parts(tensor.shape, ndim) }.to_vec();
    let strides = (!tensor.strides.is_null())
        // SAFETY: as above.
        .then(|| unsafe { std::slice::from_raw_parts(tensor.strides, ndim) }.to_vec());
    if let Some(bad) = shape.iter().find(|&&e| e < 0) {
        return Err(PyValueError::new_err(format!(
            "the DLPack tensor has a negative extent ({bad}) in its shape {shape:?}"
        )));
    }
    Ok((shape, strides))
}

/// Reads a required key of an interface dict.
fn required<'py>(dict: &Bound<'py, PyDict>, key: &str, what: &str) -> PyResult<Bound<'py, PyAny>> {
    dict.get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("{what} has no {key:?}")))
}

/// An interface's layout, checked (see the module's documentation): `(ptr, readonly, shape,
/// strides in elements, typestr, itemsize)`.
struct InterfaceLayout {
    ptr: u64,
    readonly: bool,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    typestr: String,
    itemsize: usize,
}

fn interface_layout(dict: &Bound<'_, PyDict>, what: &str) -> PyResult<InterfaceLayout> {
    let py = dict.py();
    let version = required(dict, "version", what)?;
    let version: i64 = version.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}'s version must be an int, not {}",
            type_name(&version)
        ))
    })?;
    if version < 3 {
        return Err(PyBufferError::new_err(format!(
            "only {what} v3 or above is supported, got v{version}"
        )));
    }
    if let Some(mask) = dict.get_item("mask")? {
        if !mask.is_none() {
            return Err(PyBufferError::new_err("mask is not supported"));
        }
    }
    let data = required(dict, "data", what)?;
    let (ptr, readonly): (Bound<'_, PyAny>, Bound<'_, PyAny>) = data.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}'s data must be a (pointer, readonly) tuple, not {}",
            type_name(&data)
        ))
    })?;
    let ptr: i128 = ptr
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what}'s data pointer must be an int")))?;
    let ptr = u64::try_from(ptr).map_err(|_| {
        PyValueError::new_err(format!("{what}'s data pointer {ptr} is not an address"))
    })?;
    let readonly = readonly.is_truthy()?;
    let typestr_obj = required(dict, "typestr", what)?;
    let typestr: String = typestr_obj
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what}'s typestr must be a str")))?;
    let itemsize = itemsize_of(py, &typestr)?;
    if itemsize == 0 {
        return Err(PyValueError::new_err(format!(
            "{what}'s typestr {typestr:?} has elements of 0 bytes"
        )));
    }
    let shape_obj = required(dict, "shape", what)?;
    let shape = int_tuple(&shape_obj, what, "shape")?;
    if let Some(bad) = shape.iter().find(|&&e| e < 0) {
        return Err(PyValueError::new_err(format!(
            "{what}'s shape has a negative extent ({bad})"
        )));
    }
    let strides = match dict.get_item("strides")? {
        Some(s) if !s.is_none() => Some(int_tuple(&s, what, "strides")?),
        _ => None,
    };
    let count = shape.iter().try_fold(1i64, |n, &e| n.checked_mul(e));
    let Some(count) = count else {
        return Err(PyValueError::new_err(format!(
            "{what}'s shape {shape:?} has more elements than an i64 counts"
        )));
    };
    let item = i128::try_from(itemsize).unwrap_or(i128::MAX);
    // The bytes the elements reach, from the first: [low, high] relative to `ptr`.
    let (mut low, mut high) = (0i128, 0i128);
    let strides_in_elements = match &strides {
        Some(bytes) => {
            if bytes.len() != shape.len() {
                return Err(PyValueError::new_err(format!(
                    "{what} has {} strides for {} dimensions",
                    bytes.len(),
                    shape.len()
                )));
            }
            let mut elements = Vec::with_capacity(bytes.len());
            for &b in bytes {
                if i128::from(b) % item != 0 {
                    return Err(PyValueError::new_err(format!(
                        "{what}'s strides {bytes:?} are not whole elements of {itemsize} bytes"
                    )));
                }
                elements.push((i128::from(b) / item) as i64);
            }
            if count > 0 {
                for (&e, &b) in shape.iter().zip(bytes) {
                    // |e - 1| < 2**63 and |b| < 2**63: the product fits an i128.
                    let reach = i128::from(e - 1) * i128::from(b);
                    if reach < 0 {
                        low += reach;
                    } else {
                        high += reach;
                    }
                }
            }
            Some(elements)
        }
        None => None,
    };
    if count > 0 {
        if strides.is_none() {
            high = i128::from(count - 1) * item;
        }
        high += item - 1;
        let start = i128::from(ptr) + low;
        let end = i128::from(ptr) + high;
        if start < 0 || end > i128::from(u64::MAX) {
            return Err(PyValueError::new_err(format!(
                "{what}'s elements at {ptr:#x} reach beyond the address space (bytes {low} to \
                 {high} from it)"
            )));
        }
    }
    Ok(InterfaceLayout {
        ptr,
        readonly,
        shape,
        strides: strides_in_elements,
        typestr,
        itemsize,
    })
}

/// A tuple of ints (at most `MAX_NDIM`, each an `i64`).
fn int_tuple(obj: &Bound<'_, PyAny>, what: &str, key: &str) -> PyResult<Vec<i64>> {
    let tuple = obj.downcast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}'s {key} must be a tuple, not {}",
            type_name(obj)
        ))
    })?;
    if tuple.len() > MAX_NDIM {
        return Err(PyValueError::new_err(format!(
            "{what}'s {key} has {} entries; at most {MAX_NDIM} dimensions are supported",
            tuple.len()
        )));
    }
    tuple
        .iter()
        .map(|item| {
            let wide: i128 = item.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{what}'s {key} must hold ints, not {}",
                    type_name(&item)
                ))
            })?;
            i64::try_from(wide).map_err(|_| {
                PyValueError::new_err(format!("{what}'s {key} entry {wide} is out of range"))
            })
        })
        .collect()
}

/// NumPy, where it is importable.
fn numpy(py: Python<'_>) -> Option<Bound<'_, PyModule>> {
    py.import("numpy").ok()
}

/// The bytes of one element of `typestr`: NumPy's answer where NumPy is importable, else read
/// from the string (`<f4`: byte order, kind, bytes).
fn itemsize_of(py: Python<'_>, typestr: &str) -> PyResult<usize> {
    if let Some(np) = numpy(py) {
        let dtype = np.getattr("dtype")?.call1((typestr,)).map_err(|e| {
            PyValueError::new_err(format!("typestr {typestr:?} is not a data type: {e}"))
        })?;
        return dtype.getattr("itemsize")?.extract();
    }
    let digits = typestr.get(2..).unwrap_or("");
    digits
        .parse::<usize>()
        .map_err(|_| PyValueError::new_err(format!("typestr {typestr:?} is not a data type")))
}

/// The device of an interface's memory, as cuda.core finds it: the driver's device of the
/// address (`CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL`), or, for the null address, the current one.
fn device_of_address(py: Python<'_>, ptr: u64) -> PyResult<i32> {
    if ptr != 0 {
        let info = cuda_core::DevicePtr(ptr).info().or_py(py)?;
        if let Some(device) = info.device {
            return Ok(device.ordinal() as i32);
        }
        if info.kind.is_none() {
            return Err(PyValueError::new_err(format!(
                "the CUDA Array Interface's address {ptr:#x} is not memory the CUDA driver knows"
            )));
        }
    }
    Ok(cuda_core::Device::current().or_py(py)?.ordinal() as i32)
}

/// A view through the CUDA Array Interface.
fn view_cai(
    obj: &Bound<'_, PyAny>,
    stream_ptr: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyStridedMemoryView> {
    let py = obj.py();
    let what = "the CUDA Array Interface";
    let dict_obj = obj.getattr(intern!(py, "__cuda_array_interface__"))?;
    let dict = dict_obj.downcast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__cuda_array_interface__ must be a dict, not {}",
            type_name(&dict_obj)
        ))
    })?;
    let layout = interface_layout(dict, what)?;
    let stream = stream_arg(stream_ptr)?;
    if stream == StreamArg::None {
        return Err(ambiguous());
    }
    let producer = match dict.get_item("stream")? {
        Some(s) if !s.is_none() => {
            let wide: i128 = s.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}'s stream must be None or an int"))
            })?;
            match u64::try_from(wide) {
                Ok(h) if h > 0 => Some(h),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "{what}'s stream {wide} is not a stream (0 is disallowed; 1 is the \
                         legacy default stream, 2 the per-thread one)"
                    )))
                }
            }
        }
        _ => None,
    };
    let device_id = device_of_address(py, layout.ptr)?;
    if let (StreamArg::Handle(consumer), Some(producer)) = (stream, producer) {
        if consumer != producer {
            order_after(py, producer, consumer)?;
        }
    }
    let mut view = PyStridedMemoryView::empty();
    view.ptr = layout.ptr;
    view.readonly = layout.readonly;
    view.shape = layout.shape;
    view.strides = layout.strides;
    view.element = ElementType::Typestr(layout.typestr);
    view.itemsize = layout.itemsize;
    view.device_id = device_id;
    view.is_device_accessible = true;
    view.exporting_obj = Some(obj.clone().unbind());
    view._metadata = Some(dict_obj.clone().unbind());
    Ok(view)
}

/// Makes the `consumer` stream wait for the work queued so far on the `producer` stream: an
/// event recorded on the producer's stream, waited on by the consumer's (as cuda.core does,
/// with `cuEventRecord` and `cuStreamWaitEvent`). Both are foreign handles, wrapped without
/// being owned, with the raw power of `Stream.from_handle` (see the class's documentation).
fn order_after(py: Python<'_>, producer: u64, consumer: u64) -> PyResult<()> {
    let producer_stream =
        crate::context::foreign_stream(py, &producer.into_pyobject(py)?.into_any(), None)?;
    let consumer_stream =
        crate::context::foreign_stream(py, &consumer.into_pyobject(py)?.into_any(), None)?;
    let (producer_stream, consumer_stream) = (producer_stream.get()?, consumer_stream.get()?);
    let event = producer_stream
        .record_new(cuda_core::EventOptions::default())
        .or_py(py)?;
    consumer_stream.wait(&event).or_py(py)
}

/// A view through NumPy's array interface (host memory).
fn view_array_interface(obj: &Bound<'_, PyAny>) -> PyResult<PyStridedMemoryView> {
    let py = obj.py();
    let what = "the array interface";
    let dict_obj = obj.getattr(intern!(py, "__array_interface__"))?;
    let dict = dict_obj.downcast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "__array_interface__ must be a dict, not {}",
            type_name(&dict_obj)
        ))
    })?;
    if let Some(data) = dict.get_item("data")? {
        if data.is_none() {
            return Err(PyBufferError::new_err(
                "an __array_interface__ whose data is None (the buffer protocol's) is not \
                 supported",
            ));
        }
    }
    let layout = interface_layout(dict, what)?;
    let device_id = cuda_core::Device::current().or_py(py)?.ordinal() as i32;
    let mut view = PyStridedMemoryView::empty();
    view.ptr = layout.ptr;
    view.readonly = layout.readonly;
    view.shape = layout.shape;
    view.strides = layout.strides;
    view.element = ElementType::Typestr(layout.typestr);
    view.itemsize = layout.itemsize;
    view.device_id = device_id;
    view.is_device_accessible = false;
    view.exporting_obj = Some(obj.clone().unbind());
    view._metadata = Some(dict_obj.clone().unbind());
    Ok(view)
}

/// The NumPy name of a DLPack data type, as cuda.core maps them.
fn numpy_name(dtype: DLDataType) -> PyResult<&'static str> {
    if dtype.lanes != 1 {
        return Err(PyNotImplementedError::new_err(format!(
            "vector dtypes (lanes={}) are not supported",
            dtype.lanes
        )));
    }
    let name = match (dtype.code, dtype.bits) {
        (DLDataType::INT, 8) => "int8",
        (DLDataType::INT, 16) => "int16",
        (DLDataType::INT, 32) => "int32",
        (DLDataType::INT, 64) => "int64",
        (DLDataType::UINT, 8) => "uint8",
        (DLDataType::UINT, 16) => "uint16",
        (DLDataType::UINT, 32) => "uint32",
        (DLDataType::UINT, 64) => "uint64",
        (DLDataType::FLOAT, 16) => "float16",
        (DLDataType::FLOAT, 32) => "float32",
        (DLDataType::FLOAT, 64) => "float64",
        (DLDataType::COMPLEX, 64) => "complex64",
        (DLDataType::COMPLEX, 128) => "complex128",
        (DLDataType::BOOL, 8) => "bool",
        (DLDataType::BFLOAT, 16) => "bfloat16",
        _ => {
            return Err(PyTypeError::new_err(format!(
                "unsupported DLPack data type {dtype} (code {}, {} bits)",
                dtype.code, dtype.bits
            )))
        }
    };
    Ok(name)
}

fn dtype_of(py: Python<'_>, element: &ElementType) -> PyResult<PyObject> {
    let name = match element {
        ElementType::Unknown => return Ok(py.None()),
        ElementType::Dlpack(dtype) => numpy_name(*dtype)?.to_owned(),
        ElementType::Typestr(typestr) => typestr.clone(),
    };
    let Some(np) = numpy(py) else {
        // Without NumPy, the name (or the interface's typestr).
        return Ok(name.into_pyobject(py)?.into_any().unbind());
    };
    if name == "bfloat16" {
        // NumPy knows bfloat16 once ml_dtypes registered it.
        if py.import("ml_dtypes").is_err() {
            return Err(PyNotImplementedError::new_err(
                "bfloat16 tensors need the ml_dtypes package for their NumPy dtype",
            ));
        }
    }
    Ok(np.getattr("dtype")?.call1((name,))?.unbind())
}

#[pymethods]
impl PyStridedMemoryView {
    /// A view of `obj` (DLPack preferred, else the CUDA Array Interface); `StridedMemoryView()`
    /// is an empty view. See the class's documentation for `stream_ptr`.
    #[new]
    #[pyo3(signature = (obj = None, stream_ptr = None))]
    fn new(
        obj: Option<&Bound<'_, PyAny>>,
        stream_ptr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        match obj.filter(|o| !o.is_none()) {
            None => Ok(PyStridedMemoryView::empty()),
            Some(obj) => {
                if has_dlpack(obj)? {
                    view_dlpack(obj, stream_ptr)
                } else {
                    view_cai(obj, stream_ptr)
                }
            }
        }
    }

    /// A view of `obj` through DLPack (`__dlpack__` and `__dlpack_device__`).
    #[classmethod]
    #[pyo3(signature = (obj, stream_ptr = None))]
    fn from_dlpack(
        _cls: &Bound<'_, pyo3::types::PyType>,
        obj: &Bound<'_, PyAny>,
        stream_ptr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        view_dlpack(obj, stream_ptr)
    }

    /// A view of `obj` through the CUDA Array Interface (v3).
    #[classmethod]
    #[pyo3(signature = (obj, stream_ptr = None))]
    fn from_cuda_array_interface(
        _cls: &Bound<'_, pyo3::types::PyType>,
        obj: &Bound<'_, PyAny>,
        stream_ptr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        view_cai(obj, stream_ptr)
    }

    /// A view of a host array through NumPy's `__array_interface__` (v3); its `device_id` is
    /// the current device's, as cuda.core's.
    #[classmethod]
    fn from_array_interface(
        _cls: &Bound<'_, pyo3::types::PyType>,
        obj: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        view_array_interface(obj)
    }

    /// A view of `obj` through DLPack where it has it, else the CUDA Array Interface.
    #[classmethod]
    #[pyo3(signature = (obj, stream_ptr = None))]
    fn from_any_interface(
        _cls: &Bound<'_, pyo3::types::PyType>,
        obj: &Bound<'_, PyAny>,
        stream_ptr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if has_dlpack(obj)? {
            view_dlpack(obj, stream_ptr)
        } else {
            view_cai(obj, stream_ptr)
        }
    }

    /// The address of the first element (an int): a DLPack tensor's data plus its byte offset.
    #[getter]
    fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The extents, one per dimension (a tuple).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// The strides in elements (not bytes), a tuple; None where the producer gave none (a
    /// C-contiguous array).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.strides
            .as_ref()
            .map(|s| PyTuple::new(py, s))
            .transpose()
    }

    /// The number of elements (the product of the extents).
    #[getter]
    fn size(&self) -> i64 {
        self.shape.iter().product()
    }

    /// The element type: a `numpy.dtype` (where NumPy is importable; else its name), None for
    /// an empty view. bfloat16 needs `ml_dtypes` (`NotImplementedError` without it).
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<PyObject> {
        if let Some(dtype) = self.dtype.get(py) {
            return Ok(dtype.clone_ref(py));
        }
        let dtype = dtype_of(py, &self.element)?;
        Ok(self.dtype.get_or_init(py, || dtype).clone_ref(py))
    }

    /// The device of the memory; -1 for host memory (a DLPack `kDLCPU` tensor).
    #[getter]
    fn device_id(&self) -> i32 {
        self.device_id
    }

    /// Whether the GPU can read the memory (device, pinned or managed memory).
    #[getter]
    fn is_device_accessible(&self) -> bool {
        self.is_device_accessible
    }

    /// Whether the producer marked the data read-only.
    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    /// The object viewed (the producer), held as long as the view.
    #[getter]
    fn exporting_obj(&self, py: Python<'_>) -> PyObject {
        self.exporting_obj
            .as_ref()
            .map_or_else(|| py.None(), |o| o.clone_ref(py))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let strides = self
            .strides
            .as_ref()
            .map_or_else(|| "None".to_owned(), |s| tuple_repr(s));
        let dtype = match self.dtype(py) {
            Ok(d) => d
                .bind(py)
                .str()
                .map(|s| s.to_string())
                .unwrap_or_else(|_| "?".to_owned()),
            Err(_) => "unsupported".to_owned(),
        };
        let exporting = match &self.exporting_obj {
            None => "None".to_owned(),
            Some(o) => {
                let ty = o.bind(py).get_type();
                let module = ty
                    .module()
                    .map(|m| m.to_string())
                    .unwrap_or_else(|_| "builtins".to_owned());
                let name = ty.name().map(|n| n.to_string()).unwrap_or_default();
                if module == "builtins" {
                    name
                } else {
                    format!("{module}.{name}")
                }
            }
        };
        format!(
            "StridedMemoryView(ptr={:#x}, shape={}, strides={strides}, itemsize={}, \
             dtype={dtype}, device_id={}, is_device_accessible={}, readonly={}, \
             exporting_obj={exporting})",
            self.ptr,
            tuple_repr(&self.shape),
            self.itemsize,
            self.device_id,
            py_bool(self.is_device_accessible),
            py_bool(self.readonly),
        )
    }
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn tuple_repr(values: &[i64]) -> String {
    match values {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Adds `StridedMemoryView` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyStridedMemoryView>()?;
    Ok(())
}
