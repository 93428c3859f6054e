//! [`CoredumpApi`](crate::driver::api::CoredumpApi) for both ABIs. The four calls have the
//! same signature in both headers; which generation flags a header names is the ABI file's
//! (`abi_coredump_flags_named`).

use super::*;

impl crate::driver::api::CoredumpApi for Drv {
    fn coredump_get_attribute(&self, attribute: u32, value: &mut [u8]) -> Result<usize> {
        let mut size = value.len();
        call!(self.cuCoredumpGetAttribute(
            sys::CUcoredumpSettings(attribute),
            value.as_mut_ptr().cast(),
            &mut size
        ))?;
        Ok(size)
    }

    fn coredump_get_attribute_global(&self, attribute: u32, value: &mut [u8]) -> Result<usize> {
        let mut size = value.len();
        call!(self.cuCoredumpGetAttributeGlobal(
            sys::CUcoredumpSettings(attribute),
            value.as_mut_ptr().cast(),
            &mut size
        ))?;
        Ok(size)
    }

    fn coredump_set_attribute(&self, attribute: u32, value: &mut [u8]) -> Result<()> {
        let mut size = value.len();
        call!(self.cuCoredumpSetAttribute(
            sys::CUcoredumpSettings(attribute),
            value.as_mut_ptr().cast(),
            &mut size
        ))
    }

    fn coredump_set_attribute_global(&self, attribute: u32, value: &mut [u8]) -> Result<()> {
        let mut size = value.len();
        call!(self.cuCoredumpSetAttributeGlobal(
            sys::CUcoredumpSettings(attribute),
            value.as_mut_ptr().cast(),
            &mut size
        ))
    }

    fn coredump_flags_named(&self) -> u32 {
        self.abi_coredump_flags_named()
    }
}
