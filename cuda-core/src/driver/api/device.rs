//! Initialisation and devices.

use crate::driver::handles::{ContextHandle, DeviceHandle};
use crate::error::Result;

/// Initialisation, device queries and primary contexts.
pub(crate) trait DeviceApi {
    /// `cuInit`.
    fn init(&self, flags: u32) -> Result<()>;
    /// `cuDeviceGetCount`.
    fn device_get_count(&self) -> Result<i32>;
    #[cfg_attr(not(test), allow(dead_code))] // exercised by the ABI tests
    /// `cuDeviceGet`.
    fn device_get(&self, ordinal: i32) -> Result<DeviceHandle>;
    /// `cuDeviceGetName`, into `buf`; returns the bytes before the NUL.
    fn device_get_name(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize>;
    /// `cuDeviceGetAttribute` with the attribute's numeric code (the same in both headers).
    fn device_get_attribute(&self, attribute: i32, device: DeviceHandle) -> Result<i32>;
    /// `cuDeviceGetUuid` (`_v2` in both ABIs).
    fn device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]>;
    /// `cuDeviceGetPCIBusId`, into `buf`; returns the bytes before the NUL.
    fn device_get_pci_bus_id(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize>;
    /// `cuDeviceTotalMem`.
    fn device_total_mem(&self, device: DeviceHandle) -> Result<usize>;
    /// `cuDeviceCanAccessPeer`.
    fn device_can_access_peer(&self, device: DeviceHandle, peer: DeviceHandle) -> Result<bool>;
    /// `cuDevicePrimaryCtxRetain`.
    fn device_primary_ctx_retain(&self, device: DeviceHandle) -> Result<ContextHandle>;
    /// `cuDevicePrimaryCtxRelease`.
    fn device_primary_ctx_release(&self, device: DeviceHandle) -> Result<()>;
}
