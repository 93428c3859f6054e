//! DLPack export of a `Buffer` (`Buffer.__dlpack__`, `Buffer.__dlpack_device__`), as
//! cuda.core exports it: a 1-D tensor of `size` int8 elements (stride 1) at the buffer's
//! address, of its memory kind (`kDLCUDA` with the device's ordinal, `kDLCUDAHost`,
//! `kDLCUDAManaged`, or `kDLCPU`).
//!
//! The tensor is cuda-core's (`DlpackTensor::from_buffer`): its deleter holds the buffer's
//! memory (an `Arc<Buffer>`) until the consumer releases it, so a `Buffer.close()` meanwhile
//! does not free memory the consumer still reads. It travels in a capsule named
//! "dltensor_versioned" (DLPack 1.x, where the consumer's `max_version` is at least (1, 0)) or
//! "dltensor" (the legacy `DLManagedTensor`, built here around the versioned one). The
//! capsule's destructor calls the tensor's deleter only while the capsule still has its
//! unused name: a consumer renames it ("used_dltensor...") when it takes the tensor, and then
//! calls the deleter itself. So the tensor is released exactly once, consumed or not.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use cuda_core::dlpack::{DLDevice, DLDeviceType, DLManagedTensorVersioned, DLTensor, DlpackTensor};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;

use crate::errors::*;

/// The capsule names of DLPack: unused tensors.
const VERSIONED_NAME: &[u8] = b"dltensor_versioned\0";
const LEGACY_NAME: &[u8] = b"dltensor\0";

/// `(device_type, device_id)` of a buffer's memory, as cuda.core's `__dlpack_device__`.
pub(crate) fn dlpack_device(buffer: &cuda_core::Buffer, is_managed: bool) -> (i32, i32) {
    let (device, host) = (buffer.is_device_accessible(), buffer.is_host_accessible());
    match (device, host) {
        (true, false) => (
            DLDeviceType::CUDA.0,
            buffer.device().map_or(0, |d| d.ordinal() as i32),
        ),
        (true, true) if is_managed => (DLDeviceType::CUDA_MANAGED.0, 0),
        (true, true) => (DLDeviceType::CUDA_HOST.0, 0),
        _ => (DLDeviceType::CPU.0, 0),
    }
}

/// `DLManagedTensor`, DLPack's legacy (pre-1.0) tensor, `#[repr(C)]` as `dlpack.h` has it.
#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    /// The versioned tensor this one wraps (its arrays and its hold on the memory).
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// Calls a versioned tensor's deleter.
///
/// # Safety
///
/// `tensor` is a live tensor, released once.
unsafe fn release_versioned(tensor: *mut DLManagedTensorVersioned) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: live (the caller's promise).
    if let Some(deleter) = unsafe { (*tensor).deleter } {
        // SAFETY: the tensor's own deleter, called once on it.
        unsafe { deleter(tensor) }
    }
}

/// The legacy tensor's deleter: frees the wrapper and releases the versioned tensor inside.
unsafe extern "C" fn release_legacy(tensor: *mut DLManagedTensor) {
    if tensor.is_null() {
        return;
    }
    // SAFETY: a legacy tensor made by `export` (a leaked box), whose deleter the consumer (or
    // the capsule) calls once.
    let wrapper = unsafe { Box::from_raw(tensor) };
    let inner = wrapper.manager_ctx.cast::<DLManagedTensorVersioned>();
    drop(wrapper);
    // SAFETY: the versioned tensor the wrapper owned, released once, here.
    unsafe { release_versioned(inner) }
}

/// The destructor of a "dltensor_versioned" capsule: releases the tensor unless a consumer
/// took it (and renamed the capsule).
unsafe extern "C" fn destroy_versioned_capsule(capsule: *mut ffi::PyObject) {
    let name = VERSIONED_NAME.as_ptr().cast::<c_char>();
    // SAFETY: Python calls the destructor with the capsule, holding the GIL; `IsValid` only
    // compares the name (it sets no exception).
    if unsafe { ffi::PyCapsule_IsValid(capsule, name) } != 1 {
        return;
    }
    // SAFETY: a valid capsule of that name, whose pointer is the tensor `export` put there,
    // not taken by a consumer (the name is unchanged), so released once, here.
    unsafe {
        let tensor = ffi::PyCapsule_GetPointer(capsule, name).cast::<DLManagedTensorVersioned>();
        release_versioned(tensor);
    }
}

/// The destructor of a "dltensor" capsule, as above for the legacy tensor.
unsafe extern "C" fn destroy_legacy_capsule(capsule: *mut ffi::PyObject) {
    let name = LEGACY_NAME.as_ptr().cast::<c_char>();
    // SAFETY: as in `destroy_versioned_capsule`.
    if unsafe { ffi::PyCapsule_IsValid(capsule, name) } != 1 {
        return;
    }
    // SAFETY: as in `destroy_versioned_capsule`, of a legacy tensor made by `export`.
    unsafe {
        let tensor = ffi::PyCapsule_GetPointer(capsule, name).cast::<DLManagedTensor>();
        if let Some(deleter) = (*tensor).deleter {
            deleter(tensor);
        }
    }
}

/// Whether `max_version` (None, or a `(major, minor)` tuple) asks for a versioned tensor.
fn wants_versioned(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let Some(max_version) = max_version.filter(|v| !v.is_none()) else {
        return Ok(false);
    };
    let (major, minor): (i64, i64) = max_version.extract().map_err(|_| {
        PyBufferError::new_err(format!(
            "__dlpack__ takes max_version=None or a (major, minor) tuple of ints, got {max_version}"
        ))
    })?;
    Ok((major, minor) >= (1, 0))
}

/// `Buffer.__dlpack__`: see the module's documentation. `stream` is not used (as in
/// cuda.core, the data is exported as it stands: ordering the consumer's stream after the
/// work queued on the buffer is the caller's); `dl_device` must be None, the buffer's own
/// device, or `(kDLCPU, 0)` for host-accessible memory; `copy=True` is refused (no copies are
/// made).
pub(crate) fn export(
    py: Python<'_>,
    buffer: Arc<cuda_core::Buffer>,
    is_managed: bool,
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<&Bound<'_, PyAny>>,
    dl_device: Option<&Bound<'_, PyAny>>,
    copy: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    if let Some(stream) = stream.filter(|s| !s.is_none()) {
        if stream.extract::<i64>().is_err() {
            return Err(PyTypeError::new_err(format!(
                "__dlpack__ takes stream=None or an int, got {}",
                stream.get_type().name()?
            )));
        }
    }
    let mut device = dlpack_device(&buffer, is_managed);
    if let Some(wanted) = dl_device.filter(|d| !d.is_none()) {
        let wanted: (i32, i32) = wanted.extract().map_err(|_| {
            PyBufferError::new_err("__dlpack__ takes dl_device=None or a (type, id) tuple")
        })?;
        let cpu = (DLDeviceType::CPU.0, 0);
        if wanted == cpu && buffer.is_host_accessible() {
            // Pinned and managed memory is the host's too: exported as kDLCPU where asked.
            device = cpu;
        } else if wanted != device {
            return Err(PyBufferError::new_err(format!(
                "__dlpack__ cannot export to device {wanted:?}: the buffer is on {device:?} and \
                 is not copied"
            )));
        }
    }
    if let Some(copy) = copy.filter(|c| !c.is_none()) {
        if copy.is_truthy()? {
            return Err(PyBufferError::new_err(
                "__dlpack__(copy=True) is not supported: the buffer is exported without a copy",
            ));
        }
    }
    let versioned = wants_versioned(max_version)?;
    let size = buffer.size();
    let tensor = DlpackTensor::from_buffer::<i8>(buffer, &[size], None).or_py(py)?;
    let raw = tensor.into_raw();
    // SAFETY: a tensor just made, owned here (handed to no one yet): writing its device is
    // writing memory this function owns.
    unsafe {
        (*raw).dl_tensor.device = DLDevice {
            device_type: DLDeviceType(device.0),
            device_id: device.1,
        };
    }
    let (pointer, name, destructor): (*mut c_void, &[u8], ffi::PyCapsule_Destructor) = if versioned
    {
        (
            raw.cast(),
            VERSIONED_NAME,
            destroy_versioned_capsule as ffi::PyCapsule_Destructor,
        )
    } else {
        // SAFETY: `raw` is the live tensor owned here; its `dl_tensor` (whose arrays it
        // owns) is copied into the wrapper, which owns `raw` from now on.
        let dl_tensor = unsafe { (*raw).dl_tensor };
        let legacy = Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx: raw.cast(),
            deleter: Some(release_legacy),
        });
        (
            Box::into_raw(legacy).cast(),
            LEGACY_NAME,
            destroy_legacy_capsule as ffi::PyCapsule_Destructor,
        )
    };
    // SAFETY: a non-null pointer, a name that is a static C string (it outlives the capsule),
    // and a destructor that releases the tensor unless a consumer took it.
    let capsule = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr().cast(), Some(destructor)) };
    if capsule.is_null() {
        // The capsule was not made: the tensor is still ours to release.
        // SAFETY: `pointer` is the tensor made above, handed to no one, released once.
        unsafe {
            if versioned {
                release_versioned(pointer.cast());
            } else {
                release_legacy(pointer.cast());
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference PyCapsule_New returned.
    Ok(unsafe { PyObject::from_owned_ptr(py, capsule) })
}
