//! [`EventApi`](crate::driver::api::EventApi) for both ABIs.

macro_rules! impl_event_api {
    ($name:ident, $sys:ident) => {
        impl $crate::driver::api::EventApi for $name {
            fn event_synchronize(&self, event: EventHandle) -> Result<()> {
                call!(self.cuEventSynchronize(event.0.cast()))
            }

            fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
                let mut ms = 0.0f32;
                call!(self.cuEventElapsedTime(&mut ms, start.0.cast(), end.0.cast()))?;
                Ok(ms)
            }
        }
    };
}
pub(in crate::driver) use impl_event_api;
