//! A module's `__device__` and `__constant__` variables, by name.

use std::fmt;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::memory::{DevicePtr, Pod};
use crate::object_code::ObjectCode;
use crate::stream::Stream;

/// A `__device__`, `__constant__` or `__managed__` variable of loaded code, in one device's
/// context: its address and size (`cuLibraryGetGlobal`, `cuLibraryGetManaged`). It keeps its [`ObjectCode`] loaded, so the address
/// stays valid while the value lives.
///
/// Copies from and to the host are made on a stream of the variable's device and waited for.
/// They are not ordered against kernels on other streams that use the variable: order those
/// with events, as for any memory a kernel reads.
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
        managed: bool,
    ) -> Global {
        Global {
            code,
            name,
            ptr,
            size,
            device,
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
        Ok(())
    }

    /// Copies a host slice of the variable's size into it (`cuMemcpyHtoDAsync`) and waits.
    #[doc(alias = "cuMemcpyHtoDAsync")]
    pub fn copy_from_host<T: Pod>(&self, src: &[T], stream: &Stream) -> Result<()> {
        self.check(size_of_val(src), "src", stream)?;
        let (ptr, size) = (self.ptr.0, self.size);
        stream.call_in_context(|driver, handle| {
            driver.memcpy_htod_async(ptr, src.as_ptr().cast(), size, handle)
        })?;
        // `src` is borrowed until the copy is done.
        stream.sync()
    }

    /// Copies the variable into a host slice of its size (`cuMemcpyDtoHAsync`) and waits.
    #[doc(alias = "cuMemcpyDtoHAsync")]
    pub fn copy_to_host<T: Pod>(&self, dst: &mut [T], stream: &Stream) -> Result<()> {
        self.check(size_of_val(dst), "dst", stream)?;
        let (ptr, size) = (self.ptr.0, self.size);
        stream.call_in_context(|driver, handle| {
            driver.memcpy_dtoh_async(dst.as_mut_ptr().cast(), ptr, size, handle)
        })?;
        stream.sync()
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
