//! Device-side graph launch: an executable graph instantiated with
//! [`GraphOptions::device_launch`](crate::GraphOptions::device_launch) and uploaded, launched by
//! a kernel of another graph with the device runtime's `cudaGraphLaunch`.

use super::GraphExec;
use crate::args::DeviceRepr;
use crate::error::{Error, Result};

/// An executable graph as device code launches it: the `cudaGraphExec_t` that a kernel gives
/// `cudaGraphLaunch(exec, stream)`, from [`GraphExec::device_handle`]. A kernel argument
/// ([`DeviceRepr`]): a plain identifier, which does not keep the executable graph alive.
///
/// Device code launches it with `cudaStreamGraphFireAndForget` (it runs beside the launching
/// graph, which is complete only once it is) or `cudaStreamGraphTailLaunch` (it runs after
/// the launching graph). The launching kernel must itself run in a graph, on the executable
/// graph's device; the executable graph must have been uploaded ([`GraphExec::upload`]) before
/// it, and the driver allows only kernel, copy and fill nodes in it. `cudaGraphLaunch` is the
/// device runtime's: declare it in the source as `cuda_device_runtime_api.h` does (with
/// `cudaStreamGraphFireAndForget` as `(cudaStream_t)0x0200000000000000` and
/// `cudaStreamGraphTailLaunch` as `(cudaStream_t)0x0100000000000000`), or compile with
/// [`ProgramOptions::extensible_whole_program`](crate::ProgramOptions::extensible_whole_program),
/// or with [`ProgramOptions::relocatable_device_code`](crate::ProgramOptions::relocatable_device_code)
/// and link.
///
/// Keeping the executable graph alive, and not changing it, while a kernel may launch it is
/// the caller's duty, under the safety contract of the kernel launch or node that passes it
/// ([`BuildGraph::add_kernel`](crate::BuildGraph::add_kernel)): to the crate it is a raw
/// handle argument.
///
/// ```no_run
/// use std::sync::Arc;
/// use cuda_core::{Allocate, BuildGraph, CodeType, Device, Graph, GraphOptions, LaunchConfig};
/// use cuda_core::{Program, ProgramOptions, StreamOptions};
///
/// // The device runtime's entry point and stream names, as cuda_device_runtime_api.h has
/// // them (or compile with `relocatable_device_code` and link, or `extensible_whole_program`).
/// const SOURCE: &str = r#"
/// extern "C" __device__ cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t);
/// #define cudaStreamGraphFireAndForget ((cudaStream_t)0x0200000000000000)
/// extern "C" __global__ void start(cudaGraphExec_t exec) {
///     cudaGraphLaunch(exec, cudaStreamGraphFireAndForget);
/// }
/// extern "C" __global__ void bump(unsigned* x) { atomicAdd(x, 1u); }
/// "#;
/// let device = Device::new(0)?;
/// let code = Program::new(SOURCE, ProgramOptions::default()).compile(CodeType::Cubin, &[])?;
/// let (start, bump) = (code.get_kernel("start")?, code.get_kernel("bump")?);
/// let stream = device.create_stream(StreamOptions::default())?;
/// let mut counter = device.memory_resource()?.allocate(4, &stream)?;
/// counter.fill(0u32, &stream)?;
/// let counter = Arc::new(counter);
/// let one = LaunchConfig::new([1, 1, 1], [1, 1, 1]);
///
/// let mut work = Graph::new(device)?;
/// // SAFETY: one thread adds to the 4-byte counter.
/// unsafe { work.add_kernel(&[], &one, &bump, &[&counter])? };
/// let work = work.instantiate(GraphOptions::default().with_device_launch(true))?;
/// work.upload(&stream)?;
///
/// let mut launcher = Graph::new(device)?;
/// // SAFETY: `work` outlives every launch of `launcher` (synchronised below).
/// unsafe { launcher.add_kernel(&[], &one, &start, &[&work.device_handle()?])? };
/// let launcher = launcher.instantiate(GraphOptions::default())?;
/// launcher.launch(&stream)?;
/// assert_eq!(counter.to_vec::<u32>(&stream)?, [1]);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "cudaGraphExec_t")]
pub struct DeviceGraphExec(u64);

impl DeviceGraphExec {
    /// The raw `CUgraphExec`, as a 64-bit integer.
    pub fn as_raw(&self) -> u64 {
        self.0
    }
}

// SAFETY: a `CUgraphExec` is a pointer, which a kernel takes as its pointer-sized
// `cudaGraphExec_t` parameter; device code does not follow it as host memory (the device
// runtime looks it up).
unsafe impl DeviceRepr for DeviceGraphExec {}

impl GraphExec {
    /// The handle by which device code launches this executable graph (see
    /// [`DeviceGraphExec`]): it must have been instantiated with
    /// [`GraphOptions::device_launch`](crate::GraphOptions::device_launch).
    pub fn device_handle(&self) -> Result<DeviceGraphExec> {
        if !self.device_launch {
            return Err(Error::InvalidArgument {
                name: "self",
                reason: "the executable graph was not instantiated for device launch \
                         (GraphOptions::device_launch)"
                    .to_owned(),
            });
        }
        Ok(DeviceGraphExec(self.handle.0 as usize as u64))
    }
}
