//! Events (creation, record and query are hot paths).

use crate::driver::handles::EventHandle;
use crate::error::Result;

/// Event management.
pub(crate) trait EventApi {
    /// `cuEventSynchronize`.
    fn event_synchronize(&self, event: EventHandle) -> Result<()>;
    /// `cuEventElapsedTime` in milliseconds (12: the 12.9 header's `cuEventElapsedTime`;
    /// 13: `cuEventElapsedTime_v2`).
    fn event_elapsed_time(&self, start: EventHandle, end: EventHandle) -> Result<f32>;
}
