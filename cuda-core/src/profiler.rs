//! Telling a profiler which part of a program to capture (`cuProfilerStart`, `cuProfilerStop`).
//!
//! Nsight Systems captures only between the two calls when run with `--capture-range=cudaProfilerApi`
//! (`nsys profile --capture-range=cudaProfilerApi ./app`), and Nsight Compute with
//! `--profile-from-start off`; without a profiler attached the calls do nothing. A
//! [`Session`] starts capturing and stops when dropped:
//!
//! ```no_run
//! use cuda_core::{profiler, Device};
//!
//! let device = Device::new(0)?;
//! // ... warm-up, not captured ...
//! {
//!     let _capture = profiler::Session::start(device)?;
//!     // ... the part to profile ...
//! } // cuProfilerStop
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! Both calls act in a context: the crate makes the device's primary context current around
//! each, and restores the caller's. A driver without them answers [`Error::NotSupported`]
//! naming the call.
//!
//! [`Error::NotSupported`]: crate::Error::NotSupported

use crate::device::Device;
use crate::error::Result;
use crate::lifetime::current::with_current;

/// Starts the profiler's capture (`cuProfilerStart`, what `cudaProfilerStart` does), in
/// `device`'s primary context. Starting again while it captures does nothing.
///
/// ```no_run
/// use cuda_core::{profiler, Device};
///
/// let device = Device::new(0)?;
/// profiler::start(device)?;
/// // ... the part to profile ...
/// profiler::stop(device)?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuProfilerStart")]
#[doc(alias = "cudaProfilerStart")]
pub fn start(device: Device) -> Result<()> {
    let primary = device.primary_entry()?;
    with_current(primary.driver, primary.handle, |driver| {
        driver.profiler_start()
    })
}

/// Stops the profiler's capture (`cuProfilerStop`, what `cudaProfilerStop` does), in
/// `device`'s primary context, after flushing what the profiler has collected. Stopping when
/// it does not capture does nothing.
///
/// ```no_run
/// use cuda_core::{profiler, Device};
///
/// let device = Device::new(0)?;
/// profiler::start(device)?;
/// profiler::stop(device)?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuProfilerStop")]
#[doc(alias = "cudaProfilerStop")]
pub fn stop(device: Device) -> Result<()> {
    let primary = device.primary_entry()?;
    with_current(primary.driver, primary.handle, |driver| {
        driver.profiler_stop()
    })
}

/// A profiler capture: [`start`]ed when made, [`stop`]ped when dropped (a failure to stop is
/// logged through the `log` crate). [`Session::stop`] stops it and gives the error.
///
/// ```no_run
/// use cuda_core::{profiler::Session, Device};
///
/// let device = Device::new(0)?;
/// let capture = Session::start(device)?;
/// // ... the part to profile ...
/// capture.stop()?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "cuProfilerStart")]
#[doc(alias = "cuProfilerStop")]
#[derive(Debug)]
#[must_use = "the capture stops when the session is dropped"]
pub struct Session {
    device: Device,
    stopped: bool,
}

impl Session {
    /// Starts a capture in `device`'s primary context (`cuProfilerStart`).
    #[doc(alias = "cuProfilerStart")]
    pub fn start(device: Device) -> Result<Session> {
        start(device)?;
        Ok(Session {
            device,
            stopped: false,
        })
    }

    /// The device whose context the capture was started in.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Stops the capture now (`cuProfilerStop`), giving the driver's error if it fails.
    #[doc(alias = "cuProfilerStop")]
    pub fn stop(mut self) -> Result<()> {
        self.stopped = true;
        stop(self.device)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.stopped {
            if let Err(e) = stop(self.device) {
                log::error!("stopping the profiler's capture: {e}");
            }
        }
    }
}
