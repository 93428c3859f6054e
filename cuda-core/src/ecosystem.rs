//! The Rust ecosystem's plain-data types as buffer elements and kernel arguments: `half`'s
//! `f16` and `bf16` (feature `half`), `float8`'s `F8E4M3` and `F8E5M2` (feature `float8`),
//! `float4`'s `F4E2M1` and packed `F4E2M1x2` (feature `float4`; kernel arguments always,
//! host-copied elements without the `bytemuck` feature, their bytes with it), and
//! `bytemuck::Pod` types (feature `bytemuck`: the [`Pod`](crate::Pod) bridge is in
//! `memory::buffer`, [`device_repr!`] here).
//!
//! TF32 has no type here: it is not a storage format. A TF32 tensor is an `f32` buffer (and a
//! `kDLFloat` 32-bit DLPack tensor) whose values tensor cores read with a 10-bit mantissa.

#[cfg(feature = "half")]
mod half_types {
    use crate::args::DeviceRepr;

    // SAFETY: `f16` and `bf16` are `#[repr(transparent)]` 16-bit values, passed to a kernel
    // as CUDA's `__half` and `__nv_bfloat16` (two bytes, aligned to two).
    #[cfg_attr(docsrs, doc(cfg(feature = "half")))]
    unsafe impl DeviceRepr for half::f16 {}
    // SAFETY: as above.
    #[cfg_attr(docsrs, doc(cfg(feature = "half")))]
    unsafe impl DeviceRepr for half::bf16 {}

    // With `bytemuck`, `half`'s own `bytemuck::Pod` implementations make them `Pod`.
    // SAFETY: 16 bits, every pattern a value (NaNs included), no padding.
    #[cfg(not(feature = "bytemuck"))]
    unsafe impl crate::Pod for half::f16 {}
    // SAFETY: as above.
    #[cfg(not(feature = "bytemuck"))]
    unsafe impl crate::Pod for half::bf16 {}
}

#[cfg(feature = "float8")]
mod float8_types {
    use crate::args::DeviceRepr;

    // SAFETY: `F8E4M3` and `F8E5M2` are `#[repr(transparent)]` bytes, passed to a kernel as
    // CUDA's `__nv_fp8_e4m3` and `__nv_fp8_e5m2` (one byte, aligned to one).
    #[cfg_attr(docsrs, doc(cfg(feature = "float8")))]
    unsafe impl DeviceRepr for float8::F8E4M3 {}
    // SAFETY: as above.
    #[cfg_attr(docsrs, doc(cfg(feature = "float8")))]
    unsafe impl DeviceRepr for float8::F8E5M2 {}

    // With `bytemuck`, `float8`'s own `bytemuck::Pod` implementations make them `Pod`.
    // SAFETY: 8 bits, every pattern a value (NaNs included), no padding.
    #[cfg(not(feature = "bytemuck"))]
    unsafe impl crate::Pod for float8::F8E4M3 {}
    // SAFETY: as above.
    #[cfg(not(feature = "bytemuck"))]
    unsafe impl crate::Pod for float8::F8E5M2 {}
}

#[cfg(feature = "float4")]
mod float4_types {
    use crate::args::DeviceRepr;

    // SAFETY: `F4E2M1` and `F4E2M1x2` are `#[repr(transparent)]` bytes, passed to a kernel as
    // CUDA's `__nv_fp4_e2m1` (one value in the low four bits) and `__nv_fp4x2_e2m1` (two
    // values, the first in the low four bits): one byte, aligned to one.
    #[cfg_attr(docsrs, doc(cfg(feature = "float4")))]
    unsafe impl DeviceRepr for float4::F4E2M1 {}
    // SAFETY: as above.
    #[cfg_attr(docsrs, doc(cfg(feature = "float4")))]
    unsafe impl DeviceRepr for float4::F4E2M1x2 {}

    // Host copies of them as elements need `Pod`, which the `bytemuck` feature's blanket
    // implementation (every `bytemuck::Pod` type) leaves to `float4` (which has no bytemuck
    // support): with that feature, copy them as their bytes (`u8`, `to_bits`/`from_bits`).
    // SAFETY: 8 bits, every pattern a value (the high four bits of an `F4E2M1` are not read),
    // no padding.
    #[cfg(not(feature = "bytemuck"))]
    #[cfg_attr(docsrs, doc(cfg(all(feature = "float4", not(feature = "bytemuck")))))]
    unsafe impl crate::Pod for float4::F4E2M1 {}
    // SAFETY: as above (two values, every pattern).
    #[cfg(not(feature = "bytemuck"))]
    #[cfg_attr(docsrs, doc(cfg(all(feature = "float4", not(feature = "bytemuck")))))]
    unsafe impl crate::Pod for float4::F4E2M1x2 {}
}

// SAFETY: a `#[repr(transparent)]` `u64`: zero is its null value and every bit pattern is an
// address, with no padding.
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
unsafe impl bytemuck::Zeroable for crate::DevicePtr {}
// SAFETY: as above.
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
unsafe impl bytemuck::Pod for crate::DevicePtr {}

// SAFETY: as above (`bytemuck` makes it `Pod` through the bridge instead).
#[cfg(not(feature = "bytemuck"))]
unsafe impl crate::Pod for crate::DevicePtr {}

/// Makes types that are `bytemuck::Pod` kernel arguments ([`DeviceRepr`](crate::DeviceRepr))
/// without `unsafe`: `bytemuck`'s derive has checked what `DeviceRepr` asks of the layout
/// (`#[repr(C)]` or transparent, no padding, plain fields), and the macro checks at compile
/// time that each type is `bytemuck::Pod`. The layout matching the kernel's parameter type,
/// and what any address in it points to, are still the launch's promise, as for every
/// argument. Use it on types of your own crate.
///
/// ```
/// use cuda_core::{device_repr, DeviceRepr, KernelArg};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Params {
///     scale: f32,
///     offset: f32,
///     count: u32,
///     flags: u32,
/// }
/// device_repr!(Params);
///
/// let params = Params { scale: 2.0, offset: 1.0, count: 1024, flags: 0 };
/// let args: [&dyn KernelArg; 1] = [&params];
/// # let _ = args;
/// ```
///
/// A type that is not `bytemuck::Pod` does not compile:
///
/// ```compile_fail
/// #[derive(Clone, Copy)]
/// #[repr(C)]
/// struct Padded {
///     a: u8,
///     b: u32,
/// }
/// cuda_core::device_repr!(Padded);
/// ```
#[cfg(feature = "bytemuck")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytemuck")))]
#[macro_export]
macro_rules! device_repr {
    ($($t:ty),+ $(,)?) => {$(
        const _: () = {
            const fn is_pod<T: $crate::__private::bytemuck::Pod>() {}
            is_pod::<$t>();
        };
        // SAFETY: the type is `bytemuck::Pod` (checked above): `Copy`, `'static`, of a
        // `#[repr(C)]` or transparent layout without padding, with plain fields.
        unsafe impl $crate::DeviceRepr for $t {}
    )+};
}
