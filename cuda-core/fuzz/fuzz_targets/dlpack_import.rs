//! DLPack import: a producer's `DLManagedTensorVersioned`, built from the input (its
//! version, flags, device, data type, data address, byte offset, and up to 12 dimensions whose
//! shape and strides this harness owns, either of them possibly null), taken with
//! `DlpackTensor::from_raw` and viewed as one of a few element types (`view`, or `into_view`).
//!
//! Beyond not panicking: a refusal is `Error::InvalidArgument` (nothing here asks the driver);
//! the producer's deleter is called exactly once, when the tensor (or the view that took it)
//! is dropped, or before a refusal of `from_raw` returns; and an accepted view has the
//! tensor's shape, its strides (or compact row-major ones), its first element at `data` plus
//! `byte_offset`, aligned, non-null unless empty, and every element it reaches within the
//! address space, as computed here independently.
//!
//! A `kDLCUDA` tensor of a device index that is not negative would ask the driver whether the
//! device exists: it is made `kDLCUDAHost` here, so that the rest of its checks run without
//! one. A negative index is refused before any driver call, and is kept.

#![no_main]

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuda_core::dlpack::{
    DLDataType, DLDevice, DLDeviceType, DLManagedTensorVersioned, DLPackVersion, DLTensor,
    DlpackTensor, Element, FLAG_READ_ONLY,
};
use cuda_core::{Error, StridedView};
use libfuzzer_sys::fuzz_target;

/// Calls of the deleter for the tensor of this run.
static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn deleter(_tensor: *mut DLManagedTensorVersioned) {
    DELETED.fetch_add(1, Ordering::Relaxed);
}

/// The input read in order; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        out
    }
    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.bytes())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let choice = input.u8();
    let (null_shape, null_strides, no_deleter, into_view) = (
        choice & 1 != 0,
        choice & 2 != 0,
        choice & 4 != 0,
        choice & 8 != 0,
    );
    let element = choice >> 4;
    let version = DLPackVersion {
        major: input.u32(),
        minor: input.u32(),
    };
    let flags = input.u64();
    let mut device = DLDevice {
        device_type: DLDeviceType(input.i32()),
        device_id: input.i32(),
    };
    if device.device_type == DLDeviceType::CUDA && device.device_id >= 0 {
        device.device_type = DLDeviceType::CUDA_HOST;
    }
    let dtype = DLDataType {
        code: input.u8(),
        bits: input.u8(),
        lanes: input.u16(),
    };
    let data_ptr = input.u64();
    let byte_offset = input.u64();
    // -128 to 12 dimensions: a negative count is refused, and no more than 12 are owned here.
    let ndim = i32::from(input.u8() as i8);
    let ndim = if ndim > 12 { ndim % 13 } else { ndim };
    let dims = usize::try_from(ndim).unwrap_or(0);
    let mut shape: Vec<i64> = (0..dims).map(|_| input.i64()).collect();
    let mut strides: Vec<i64> = (0..dims).map(|_| input.i64()).collect();
    let managed = Box::new(DLManagedTensorVersioned {
        version,
        manager_ctx: std::ptr::null_mut(),
        deleter: if no_deleter { None } else { Some(deleter) },
        flags,
        dl_tensor: DLTensor {
            data: data_ptr as *mut c_void,
            device,
            ndim,
            dtype,
            shape: if null_shape {
                std::ptr::null_mut()
            } else {
                shape.as_mut_ptr()
            },
            strides: if null_strides {
                std::ptr::null_mut()
            } else {
                strides.as_mut_ptr()
            },
            byte_offset,
        },
    });
    let raw = Box::into_raw(managed);
    let tensor = Tensor {
        version,
        flags,
        dtype,
        ndim,
        data: data_ptr,
        byte_offset,
        shape: (!null_shape).then(|| shape.clone()),
        strides: (!null_strides).then(|| strides.clone()),
    };
    DELETED.store(0, Ordering::Relaxed);
    let deletions = usize::from(!no_deleter);
    // SAFETY: `raw` is a tensor valid as DLPack says: `ndim` extents at `shape` and strides
    // at `strides` (or null), owned here and unchanged until the deleter is called; its data
    // is never read (no driver), only its address checked.
    match unsafe { DlpackTensor::from_raw(raw) } {
        Err(e) => {
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
            assert_eq!(DELETED.load(Ordering::Relaxed), deletions, "refused: {e}");
            assert!(
                version.major != 1 || ndim < 0 || (ndim > 0 && null_shape),
                "refused a well-formed tensor: {e}"
            );
        }
        Ok(held) => {
            assert!(version.major == 1 && ndim >= 0 && !(ndim > 0 && null_shape));
            assert_eq!(held.shape(), tensor.shape());
            let _ = format!("{held:?}");
            match element % 6 {
                0 => view::<u8>(held, &tensor, into_view),
                1 => view::<i16>(held, &tensor, into_view),
                2 => view::<u32>(held, &tensor, into_view),
                3 => view::<f32>(held, &tensor, into_view),
                4 => view::<f64>(held, &tensor, into_view),
                _ => view::<i64>(held, &tensor, into_view),
            }
            assert_eq!(DELETED.load(Ordering::Relaxed), deletions, "after the drop");
        }
    }
    // SAFETY: the box made above; the deleter here frees nothing.
    drop(unsafe { Box::from_raw(raw) });
});

/// What the harness gave the tensor.
struct Tensor {
    version: DLPackVersion,
    flags: u64,
    dtype: DLDataType,
    ndim: i32,
    data: u64,
    byte_offset: u64,
    shape: Option<Vec<i64>>,
    strides: Option<Vec<i64>>,
}

impl Tensor {
    fn shape(&self) -> &[i64] {
        match &self.shape {
            Some(shape) if self.ndim > 0 => shape,
            _ => &[],
        }
    }
}

/// Views `held` as `T` (borrowed, or taking it), and checks the view.
fn view<T: Element>(held: DlpackTensor, tensor: &Tensor, into_view: bool) {
    assert_eq!(held.version(), tensor.version);
    assert_eq!(held.flags(), tensor.flags);
    let deletions = DELETED.load(Ordering::Relaxed);
    if into_view {
        match held.into_view::<T>() {
            Ok(view) => {
                check_view(&view, tensor);
                let copy = view.clone();
                drop(view);
                assert_eq!(DELETED.load(Ordering::Relaxed), deletions, "a clone lives");
                drop(copy);
            }
            Err(e) => assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}"),
        }
    } else {
        match held.view::<T>() {
            Ok(view) => check_view(&view, tensor),
            Err(e) => assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}"),
        }
        assert_eq!(
            DELETED.load(Ordering::Relaxed),
            deletions,
            "released while held"
        );
        drop(held);
    }
}

/// An accepted view is the tensor's, and every element it reaches is within the address
/// space.
fn check_view<T: Element>(view: &StridedView<'_, T>, tensor: &Tensor) {
    let size = std::mem::size_of::<T>();
    assert_eq!(tensor.dtype, T::DATA_TYPE, "a view of another type");
    let shape: Vec<usize> = tensor.shape().iter().map(|&e| e as usize).collect();
    assert!(tensor.shape().iter().all(|&e| e >= 0));
    assert_eq!(view.shape(), shape);
    match &tensor.strides {
        Some(strides) if tensor.ndim > 0 => {
            let strides: Vec<isize> = strides.iter().map(|&s| s as isize).collect();
            assert_eq!(view.strides(), strides);
        }
        Some(_) => assert!(view.strides().is_empty()),
        None => {
            // Compact row-major: each stride the product of the extents after it.
            let mut step = 1i128;
            for (&stride, &extent) in view.strides().iter().zip(&shape).rev() {
                assert_eq!(stride as i128, step);
                step *= extent.max(1) as i128;
            }
        }
    }
    let first = u128::from(tensor.data) + u128::from(tensor.byte_offset);
    assert_eq!(u128::from(view.ptr().0), first, "the first element moved");
    assert_eq!(
        view.ptr().0 % std::mem::align_of::<T>() as u64,
        0,
        "misaligned"
    );
    assert_eq!(view.is_read_only(), tensor.flags & FLAG_READ_ONLY != 0);
    if shape.contains(&0) {
        return;
    }
    assert_ne!(view.ptr().0, 0, "a null view of elements");
    let (mut low, mut high) = (0i128, 0i128);
    let mut count = 1u128;
    for (&extent, &stride) in shape.iter().zip(view.strides()) {
        let reach = (extent as i128 - 1) * stride as i128;
        low += reach.min(0);
        high += reach.max(0);
        count *= extent as u128;
    }
    assert!(count <= usize::MAX as u128);
    assert_eq!(view.len() as u128, count);
    let start = first as i128 + low * size as i128;
    let end = first as i128 + (high + 1) * size as i128;
    assert!(
        start >= 0 && end <= 1i128 << 64,
        "elements at {start}..{end}"
    );
    // The last element, by the view's own arithmetic, is where the strides put it.
    let last: Vec<usize> = shape.iter().map(|&e| e - 1).collect();
    let at = view.element_ptr(&last).expect("the last element");
    let offset: i128 = shape
        .iter()
        .zip(view.strides())
        .map(|(&e, &s)| (e as i128 - 1) * s as i128)
        .sum();
    assert_eq!(i128::from(at.0), first as i128 + offset * size as i128);
}
