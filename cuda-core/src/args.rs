//! Kernel arguments, for launches and graph nodes alike: [`DeviceRepr`] values, and the one
//! sealed [`Arg`](sealed::Arg) every kind of argument implements in its own file (a value
//! here; a buffer, a slice, a strided view, a tensor map, a texture, a surface and a
//! conditional handle beside their types, each made a [`KernelArg`] with [`wrapper_arg!`]).
//! [`KernelArg`] and [`GraphArg`] say which kinds a launch and a graph node take. This layer
//! sits below memory: it names no buffer.

use std::ffi::c_void;

use crate::stream::Stream;

/// A value passed to a kernel by copy: `#[repr(C)]` plain data whose layout matches the
/// kernel's parameter type. Integers, floats, `bool` (C++'s one-byte `bool`), arrays of them
/// and [`DevicePtr`](crate::DevicePtr) implement it,
/// and with the `half` feature `half::f16` and `half::bf16` (CUDA's `__half` and
/// `__nv_bfloat16`), with the `float8` feature `float8::F8E4M3` and `float8::F8E5M2`
/// (`__nv_fp8_e4m3` and `__nv_fp8_e5m2`, one byte each). A TF32 parameter is a `float`: pass
/// an `f32`.
///
/// A struct that derives `bytemuck::Pod` becomes one with the safe
/// [`device_repr!`](crate::device_repr) (feature `bytemuck`), which checks that it is `Pod`.
/// (Not by a blanket implementation for every `bytemuck::Pod` type: that would make graph
/// nodes' `Arc<Buffer>` arguments overlap with it under Rust's coherence rules.) Any
/// alignment is fine, a `#[repr(C, align(64))]` type's too: the driver copies the bytes.
///
/// # Safety
///
/// The type must be `#[repr(C)]` (or a primitive), with no pointers to host memory the kernel
/// would follow, and its layout must be what the kernel's C++ parameter type expects.
pub unsafe trait DeviceRepr: Copy + 'static {}

macro_rules! device_repr {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive passes to a kernel as the same C type.
        unsafe impl DeviceRepr for $t {}
    )*};
}
device_repr!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64);

// SAFETY: a `bool` is one byte, 0 or 1, as C++'s `bool` parameter is on the device (a kernel
// only reads it: no bit pattern comes back).
unsafe impl DeviceRepr for bool {}

// SAFETY: a C array of plain data is plain data, laid out alike.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}

/// Anything that can be a kernel argument of [`launch`](crate::launch): [`DeviceRepr`]
/// values, [`Buffer`](crate::Buffer)s and `Arc<Buffer>`s (passed as their device address), slices of them
/// ([`BufferSlice`](crate::memory::BufferSlice), [`BufferSliceMut`](crate::memory::BufferSliceMut), [`SharedSlice`](crate::memory::SharedSlice): the address of their first byte,
/// `d_data + 256` in CUDA C), a [`PitchedBuffer`](crate::memory::PitchedBuffer) or a
/// virtual-memory [`Mapping`](crate::memory::Mapping) (its first byte's address), graph
/// allocations (`GraphAllocation`, `CapturedAllocation`: their address), [`StridedView`](crate::StridedView)s
/// (their first element's address), [`TensorMap`](crate::tensor_map::TensorMap)s (their 128-byte
/// descriptor), and [`Texture`](crate::texture::Texture) and [`Surface`](crate::texture::Surface) objects (their
/// 64-bit handle). It is sealed: make a type of your own an argument by implementing
/// [`DeviceRepr`] for it.
pub trait KernelArg: sealed::Arg {}

impl<T: DeviceRepr> KernelArg for T {}

/// A kernel argument of a graph node: a [`DeviceRepr`] value (copied into the node), an
/// `Arc<Buffer>` or a [`SharedSlice`](crate::memory::SharedSlice) of one (passed as its address, and kept alive by the
/// graph: a borrowed buffer or slice cannot be, so a graph takes none), a
/// [`ConditionalHandle`](crate::ConditionalHandle) (passed as its raw handle), a tensor map,
/// a texture or a surface (kept alive by the graph with what they read). Sealed.
pub trait GraphArg: sealed::Arg {}

impl<T: DeviceRepr> GraphArg for T {}

pub(crate) mod sealed {
    use std::any::Any;
    use std::ffi::c_void;

    use crate::stream::Stream;

    /// Where an argument's bytes are and how many, and for memory ordered on a stream that
    /// stream (a buffer's deallocation stream).
    pub struct ArgBytes<'a> {
        pub ptr: *const c_void,
        pub size: usize,
        pub home: Option<&'a Stream>,
    }

    /// Only the implementations in this crate: a launch relies on a value argument's bytes
    /// being the value itself and on memory naming its stream, a graph on being told what to
    /// keep alive.
    pub trait Arg {
        /// The bytes the kernel gets, and the stream the memory behind them is ordered on.
        fn arg(&self) -> ArgBytes<'_>;
        /// The buffer a graph node keeps alive (and checks is usable from its device): an
        /// `Arc<Buffer>`, which the graph downcasts (this layer, below memory, names no
        /// buffer).
        fn buffer(&self) -> Option<&dyn Any> {
            None
        }
        /// Anything else a graph must keep alive for the argument (a texture or surface
        /// object).
        fn keep(&self) -> Option<Box<dyn Send>> {
            None
        }
    }
}

use sealed::{Arg, ArgBytes};

/// Whether `size` is that of a kernel-argument wrapper (a buffer, a slice, a strided view, a
/// tensor map, a texture or surface object, ...), whose bytes are not itself, so that a
/// launch's shortcut for plain values ([`arg_bytes`](crate::launch::arg_bytes)) asks it
/// through the trait instead: asking every argument through the trait object costs 3-5 ns
/// more on a launch of 16 arguments against the stand-in driver (`standin_overhead`), over
/// the overhead rule.
///
/// A list of sizes, not of types, so that this file names no wrapper: each wrapper's file
/// checks at compile time that its size is here ([`wrapper_arg!`]). A plain value of one of
/// these sizes is asked through the trait too, and is still its own bytes.
#[inline(always)]
pub(crate) const fn is_wrapper_size(size: usize) -> bool {
    matches!(size, 8 | 16 | 24 | 32 | 40 | 48 | 144 | 256)
}

/// Makes a type whose [`Arg`](sealed::Arg) its own file implements a [`KernelArg`], and fails
/// to compile, in that file, where the type's size is missing from [`is_wrapper_size`]:
/// `wrapper_arg!(Type)`. A generic type names one of its instances for the size, which must
/// not depend on the parameters:
/// `wrapper_arg!(impl<T> View<'_, T>, sized as View<'static, u8>)`.
macro_rules! wrapper_arg {
    (impl<$($g:ident),+> $t:ty, sized as $sized:ty) => {
        impl<$($g),+> $crate::args::KernelArg for $t {}
        $crate::args::wrapper_arg!(@size $sized);
    };
    (@size $t:ty) => {
        const _: () = assert!(
            $crate::args::is_wrapper_size(::std::mem::size_of::<$t>()),
            concat!("the size of `", stringify!($t), "` is missing from args::is_wrapper_size")
        );
    };
    ($t:ty) => {
        impl $crate::args::KernelArg for $t {}
        $crate::args::wrapper_arg!(@size $t);
    };
}
pub(crate) use wrapper_arg;

impl<T: DeviceRepr> Arg for T {
    #[inline]
    fn arg(&self) -> ArgBytes<'_> {
        ArgBytes {
            ptr: (self as *const T).cast(),
            size: std::mem::size_of::<T>(),
            home: None,
        }
    }
}

/// An address argument: the 8 bytes at `ptr` (a pointer parameter), of memory ordered on
/// `home` where it has one.
#[inline]
pub(crate) fn address_arg<'a>(ptr: &'a u64, home: Option<&'a Stream>) -> ArgBytes<'a> {
    ArgBytes {
        ptr: (ptr as *const u64).cast::<c_void>(),
        size: std::mem::size_of::<u64>(),
        home,
    }
}
