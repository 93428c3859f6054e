//! [`DevicePtr`]: a device address.

use std::fmt;

/// A device address (a `CUdeviceptr`): what [`Buffer::ptr`](super::Buffer::ptr) gives and a
/// [`MemoryResource`](super::MemoryResource) hands out, and a pointer parameter when passed
/// to a kernel. For host-accessible memory it is also the host address.
#[doc(alias = "CUdeviceptr")]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    /// The null address.
    pub const NULL: DevicePtr = DevicePtr(0);

    /// The address as the driver's integer.
    #[inline]
    pub fn as_raw(self) -> u64 {
        self.0
    }

    /// Whether this is the null address.
    #[inline]
    pub fn is_null(self) -> bool {
        self.0 == 0
    }
}

// SAFETY: a device address passes as a pointer-sized parameter.
unsafe impl crate::args::DeviceRepr for DevicePtr {}

impl fmt::Debug for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePtr({:#x})", self.0)
    }
}

impl fmt::Display for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl From<DevicePtr> for u64 {
    fn from(ptr: DevicePtr) -> u64 {
        ptr.0
    }
}
