//! [`ContextCore`]: a context's handle, and what releases it.

use crate::driver::{ContextHandle, DeviceHandle, Driver, GreenContextHandle};

/// A context as the driver knows it: its handle, its device and driver, and what kind it is,
/// which says how it is released when the last holder drops it. The user-facing `Context`
/// holds one through a [`Held`](super::Held).
pub(crate) struct ContextCore {
    pub(crate) handle: ContextHandle,
    pub(crate) device: DeviceHandle,
    pub(crate) driver: &'static dyn Driver,
    pub(crate) kind: ContextKind,
}

/// How a context was made, and so how it is released.
pub(crate) enum ContextKind {
    /// A device's primary context, retained once (`cuDevicePrimaryCtxRetain`).
    Primary,
    /// A green context on `sm_count` SMs, destroyed with its core (`cuGreenCtxDestroy`);
    /// `shares` is the context whose work queue it was made with, kept alive as long.
    Green {
        green: GreenContextHandle,
        sm_count: u32,
        #[allow(dead_code)] // held, not read: dropped after the green context is destroyed
        shares: Option<Box<dyn std::any::Any + Send + Sync>>,
    },
    /// A context made here by `cuCtxCreate` (`Context::create`), destroyed with its core
    /// (`cuCtxDestroy`).
    Created,
    /// A context made elsewhere (`Context::from_raw`), released by whoever made it.
    Borrowed,
}

impl Drop for ContextCore {
    fn drop(&mut self) {
        let result = match &self.kind {
            ContextKind::Primary => self.driver.device_primary_ctx_release(self.device),
            ContextKind::Green { green, .. } => self.driver.green_ctx_destroy(*green),
            ContextKind::Created => self.driver.ctx_destroy(self.handle),
            ContextKind::Borrowed => Ok(()),
        };
        if let Err(e) = result {
            log::error!("releasing the context of device {}: {e}", self.device);
        }
    }
}
