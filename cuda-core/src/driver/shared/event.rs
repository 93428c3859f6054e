//! [`EventApi`](crate::driver::api::EventApi) for both ABIs.

use super::*;

impl crate::driver::api::EventApi for Drv {
    fn event_synchronize(&self, event: EventHandle) -> Result<()> {
        call!(self.cuEventSynchronize(event.0.cast()))
    }

    fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        let mut ms = 0.0f32;
        call!(self.cuEventElapsedTime(&mut ms, start.0.cast(), end.0.cast()))?;
        Ok(ms)
    }
}
