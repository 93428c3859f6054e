//! The profiler's capture range (`cuProfilerStart`, `cuProfilerStop`, of `cudaProfiler.h`).

use crate::error::Result;

/// Starting and stopping a profiler's capture.
pub(crate) trait ProfilerApi {
    /// `cuProfilerStart`, in the current context.
    fn profiler_start(&self) -> Result<()>;
    /// `cuProfilerStop`, in the current context.
    fn profiler_stop(&self) -> Result<()>;
}
