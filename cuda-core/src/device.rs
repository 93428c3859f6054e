//! CUDA devices.

use crate::driver::{driver, DeviceHandle};
use crate::error::{Error, Result};

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` (the same code in every header).
const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
const COMPUTE_CAPABILITY_MINOR: i32 = 76;

/// A CUDA device, by ordinal.
///
/// ```no_run
/// use cuda_core::Device;
///
/// for device in Device::all()? {
///     let (major, minor) = device.compute_capability()?;
///     println!("{}: {} (sm_{major}{minor})", device.ordinal(), device.name()?);
/// }
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
    handle: DeviceHandle,
}

impl Device {
    /// The device with this ordinal; an ordinal the driver does not have is
    /// [`Error::InvalidArgument`] naming it and the device count.
    pub fn new(ordinal: usize) -> Result<Device> {
        let driver = driver()?;
        let invalid = |count: Result<i32>| Error::InvalidArgument {
            name: "ordinal",
            reason: match count {
                Ok(count) => format!("device {ordinal} does not exist: this machine has {count}"),
                Err(e) => format!("device {ordinal} does not exist ({e})"),
            },
        };
        let ordinal = i32::try_from(ordinal).map_err(|_| invalid(driver.device_get_count()))?;
        match driver.device_get(ordinal) {
            Ok(handle) => Ok(Device { ordinal, handle }),
            // CUDA_ERROR_INVALID_DEVICE
            Err(e) if e.driver_code() == Some(101) => Err(invalid(driver.device_get_count())),
            Err(e) => Err(e),
        }
    }

    /// How many devices the driver sees.
    pub fn count() -> Result<usize> {
        Ok(driver()?.device_get_count()?.max(0) as usize)
    }

    /// Every device, in ordinal order.
    pub fn all() -> Result<Vec<Device>> {
        (0..Self::count()?).map(Device::new).collect()
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    /// The device's name, such as `NVIDIA H200`.
    pub fn name(&self) -> Result<String> {
        let mut buf = [0u8; 256];
        let len = driver()?.device_get_name(self.handle, &mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
    }

    /// The compute capability, `(major, minor)`: `(9, 0)` on an H100 or H200.
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let driver = driver()?;
        let major = driver.device_get_attribute(COMPUTE_CAPABILITY_MAJOR, self.handle)?;
        let minor = driver.device_get_attribute(COMPUTE_CAPABILITY_MINOR, self.handle)?;
        Ok((major as u32, minor as u32))
    }
}
