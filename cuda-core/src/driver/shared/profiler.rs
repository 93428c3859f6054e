//! [`ProfilerApi`](crate::driver::api::ProfilerApi) for both ABIs. The two calls are declared
//! in `cudaProfiler.h`, not `cuda.h`, so they are not in the generated table: the driver struct
//! loads them by name beside it (`profiler`: start, then stop).

use super::*;

impl Drv {
    fn profiler_call(&self, which: usize, name: &'static str) -> Result<()> {
        let Some(f) = self.profiler[which] else {
            return Err(self.missing(name));
        };
        // SAFETY: the export's signature is `CUresult f(void)` (cudaProfiler.h).
        let status = unsafe { f() };
        self.check(status, name)
    }
}

impl crate::driver::api::ProfilerApi for Drv {
    fn profiler_start(&self) -> Result<()> {
        self.profiler_call(0, "cuProfilerStart")
    }

    fn profiler_stop(&self) -> Result<()> {
        self.profiler_call(1, "cuProfilerStop")
    }
}
