//! A module's `__device__` and `__constant__` variables, by name.

use std::fmt;

use crate::device::Device;
use crate::driver::ContextHandle;
use crate::error::{Error, Result};
use crate::memory::{DevicePtr, Pod};
use crate::object_code::ObjectCode;
use crate::stream::Stream;

/// A `__device__`, `__constant__` or `__managed__` variable of loaded code, in one device's
/// context: its address and size (`cuLibraryGetGlobal`, `cuLibraryGetManaged`). It keeps its [`ObjectCode`] loaded, so the address
/// stays valid while the value lives.
///
/// Copies from and to the host are made on a stream of the variable's context (the device's
/// primary context, where [`ObjectCode::global`] looks it up) and waited for. A stream of
/// another context, a green context's among them, is refused: each context has its own
/// instance of a module's variables, so a copy there would reach another instance than the
/// one the stream's kernels use.
///
/// The copies take `&self`: a variable is shared by every kernel of its module and every
/// clone of this value, and the driver's copies and kernels race on it like on any memory
/// they share. Nothing here orders them against kernels on other streams, or against copies
/// from other threads: order those with events, as for any memory a kernel reads or writes.
/// The bytes are [`Pod`], so a race gives a wrong value, never an invalid one.
///
/// ```no_run
/// use cuda_core::{CodeType, Device, Program, ProgramOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let code = Program::new("__constant__ float table[4];", ProgramOptions::default())
///     .compile(CodeType::Cubin, &[])?;
/// let table = code.global("table", device)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// table.copy_from_host(&[1.0f32, 2.0, 3.0, 4.0], &stream)?;
/// assert_eq!(table.to_vec::<f32>(&stream)?, [1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuLibraryGetGlobal")]
#[derive(Clone)]
pub struct Global {
    code: ObjectCode,
    name: String,
    ptr: DevicePtr,
    size: usize,
    device: Device,
    /// The context the variable was looked up in.
    context: ContextHandle,
    managed: bool,
}

impl fmt::Debug for Global {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Global")
            .field("name", &self.name)
            .field("ptr", &self.ptr)
            .field("size", &self.size)
            .field("device", &self.device.ordinal())
            .field("managed", &self.managed)
            .finish()
    }
}

impl Global {
    pub(crate) fn new(
        code: ObjectCode,
        name: String,
        ptr: DevicePtr,
        size: usize,
        device: Device,
        context: ContextHandle,
        managed: bool,
    ) -> Global {
        Global {
            code,
            name,
            ptr,
            size,
            device,
            context,
            managed,
        }
    }

    /// Whether it is a `__managed__` variable (from [`ObjectCode::managed`]), whose address
    /// the host and every device share.
    pub fn is_managed(&self) -> bool {
        self.managed
    }

    /// The variable's name, as asked for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Its device address, for a kernel argument (valid while this value lives).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// The device whose context holds it.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The code it belongs to.
    pub fn object_code(&self) -> &ObjectCode {
        &self.code
    }

    fn check(&self, bytes: usize, name: &'static str, stream: &Stream) -> Result<()> {
        if bytes != self.size {
            return Err(Error::InvalidArgument {
                name,
                reason: format!(
                    "it holds {bytes} bytes and {} {}; copies need equal sizes",
                    self.name, self.size
                ),
            });
        }
        if stream.device() != self.device {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "it is device {}'s, and {} is device {}'s",
                    stream.device().ordinal(),
                    self.name,
                    self.device.ordinal()
                ),
            });
        }
        if stream.context().handle() != self.context {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "it is of another context than the one {} was looked up in (device {}'s \
                     primary context); each context has its own instance of a module's \
                     variables, so a copy there would miss the one this value names",
                    self.name,
                    self.device.ordinal()
                ),
            });
        }
        Ok(())
    }

    /// Copies a host slice of the variable's size into it (`cuMemcpyHtoDAsync`) and waits,
    /// also through a synchronisation refused during another thread's capture (as
    /// [`Buffer`](crate::Buffer)'s host copies do). A stream of another device or context
    /// than the variable's is [`Error::InvalidArgument`].
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub fn copy_from_host<T: Pod>(&self, src: &[T], stream: &Stream) -> Result<()> {
        self.check(size_of_val(src), "src", stream)?;
        let (ptr, size) = (self.ptr.0, self.size);
        stream.queue_in_context(|driver, handle| {
            driver.memcpy_htod_async(ptr, src.as_ptr().cast(), size, handle)
        })?;
        // `src` is borrowed until the copy is done, through a capture's refusal too.
        stream.sync_for_host()
    }

    /// Copies the variable into a host slice of its size (`cuMemcpyDtoHAsync`) and waits, as
    /// [`copy_from_host`](Self::copy_from_host) does.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.check(size_of_val(dst), "dst", stream)?;
        let (ptr, size) = (self.ptr.0, self.size);
        stream.queue_in_context(|driver, handle| {
            driver.memcpy_dtoh_async(dst.as_mut_ptr().cast(), ptr, size, handle)
        })?;
        // As in `copy_from_host`, for `dst`.
        stream.sync_for_host()
    }

    /// The variable's contents as `T`s (its size must be a whole number of them).
    pub fn to_vec<T: Pod + Default>(&self, stream: &Stream) -> Result<Vec<T>> {
        let each = size_of::<T>().max(1);
        if self.size % each != 0 {
            return Err(Error::InvalidArgument {
                name: "T",
                reason: format!(
                    "{} holds {} bytes, not a whole number of {each}-byte values",
                    self.name, self.size
                ),
            });
        }
        let mut out = vec![T::default(); self.size / each];
        self.copy_to_host(&mut out, stream)?;
        Ok(out)
    }
}
