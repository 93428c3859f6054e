//! [`DeviceApi`](crate::driver::api::DeviceApi) for both ABIs.

use super::*;

impl crate::driver::api::DeviceApi for Drv {
    fn init(&self, flags: u32) -> Result<()> {
        call!(self.cuInit(flags))
    }

    fn device_get_count(&self) -> Result<i32> {
        let mut count = 0;
        call!(self.cuDeviceGetCount(&mut count))?;
        Ok(count)
    }

    fn device_get(&self, ordinal: i32) -> Result<DeviceHandle> {
        let mut device = 0;
        call!(self.cuDeviceGet(&mut device, ordinal))?;
        Ok(device)
    }

    fn device_get_name(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize> {
        let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
        call!(self.cuDeviceGetName(buf.as_mut_ptr().cast(), len, device))?;
        Ok(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()))
    }

    fn device_get_attribute(&self, attribute: i32, device: DeviceHandle) -> Result<i32> {
        let mut value = 0;
        let attribute = sys::CUdevice_attribute(attribute as _);
        call!(self.cuDeviceGetAttribute(&mut value, attribute, device))?;
        Ok(value)
    }

    fn device_get_uuid(&self, device: DeviceHandle) -> Result<[u8; 16]> {
        self.abi_device_get_uuid(device)
    }

    fn device_get_pci_bus_id(&self, device: DeviceHandle, buf: &mut [u8]) -> Result<usize> {
        let len = i32::try_from(buf.len()).unwrap_or(i32::MAX);
        call!(self.cuDeviceGetPCIBusId(buf.as_mut_ptr().cast(), len, device))?;
        Ok(buf.iter().position(|&b| b == 0).unwrap_or(buf.len()))
    }

    fn device_total_mem(&self, device: DeviceHandle) -> Result<usize> {
        let mut bytes = 0;
        call!(self.cuDeviceTotalMem(&mut bytes, device))?;
        Ok(bytes)
    }

    fn device_can_access_peer(&self, device: DeviceHandle, peer: DeviceHandle) -> Result<bool> {
        let mut can = 0;
        call!(self.cuDeviceCanAccessPeer(&mut can, device, peer))?;
        Ok(can != 0)
    }

    fn device_primary_ctx_retain(&self, device: DeviceHandle) -> Result<ContextHandle> {
        let mut ctx = std::ptr::null_mut();
        call!(self.cuDevicePrimaryCtxRetain(&mut ctx, device))?;
        Ok(ContextHandle(ctx.cast()))
    }

    fn device_primary_ctx_release(&self, device: DeviceHandle) -> Result<()> {
        call!(self.cuDevicePrimaryCtxRelease(device))
    }
}
