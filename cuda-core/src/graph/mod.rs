//! CUDA graphs: work captured from a stream into a [`Graph`], instantiated once as a
//! [`GraphExec`] and launched many times, each launch one driver call for all of its work.
//!
//! ```no_run
//! use cuda_core::{launch, Allocate, CaptureMode, CodeType, Device, GraphOptions, LaunchConfig};
//! use cuda_core::{Program, ProgramOptions, StreamOptions};
//!
//! let device = Device::new(0)?;
//! let code = Program::new(
//!     r#"extern "C" __global__ void bump(unsigned* x) { atomicAdd(x, 1u); }"#,
//!     ProgramOptions::default(),
//! )
//! .compile(CodeType::Cubin, &[])?;
//! let bump = code.get_kernel("bump")?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut counter = device.memory_resource()?.allocate(4, &stream)?;
//! counter.fill(0u32, &stream)?;
//! let at = counter.ptr();
//! // SAFETY: nothing is allocated or freed on `stream` while it captures.
//! unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
//! for _ in 0..3 {
//!     // SAFETY: the kernel adds to the 4-byte counter.
//!     unsafe { launch(&stream, &LaunchConfig::new([1, 1, 1], [32, 1, 1]), &bump, &[&at])? };
//! }
//! let graph = stream.end_capture()?;
//! assert_eq!(graph.node_count()?, 3);
//! let exec = graph.instantiate(GraphOptions::default())?;
//! // SAFETY: the counter and the kernel outlive both launches.
//! unsafe {
//!     exec.launch(&stream)?;
//!     exec.launch(&stream)?;
//! }
//! assert_eq!(counter.to_vec::<u32>(&stream)?, [2 * 3 * 32]);
//! # Ok::<(), cuda_core::Error>(())
//! ```

use std::ffi::CString;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use crate::context::Context;
use crate::device::Device;
use crate::driver::{GraphExecHandle, GraphHandle};
use crate::error::{DriverCode, Error, Result};
use crate::stream::Stream;

/// How a stream capture treats calls that could not be captured safely
/// (`CUstreamCaptureMode`), such as a synchronous `cuMemAlloc` made while it captures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUstreamCaptureMode")]
pub enum CaptureMode {
    /// Such calls are refused from every thread while any thread captures in this mode
    /// (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Such calls are refused from the capturing thread only
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    #[default]
    ThreadLocal,
    /// No call is refused for this capture (`CU_STREAM_CAPTURE_MODE_RELAXED`).
    Relaxed,
}

/// Whether a stream is capturing (`CUstreamCaptureStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUstreamCaptureStatus")]
pub enum CaptureStatus {
    /// Not capturing: work runs (`CU_STREAM_CAPTURE_STATUS_NONE`).
    None,
    /// Capturing: work is recorded into a graph (`CU_STREAM_CAPTURE_STATUS_ACTIVE`).
    Active,
    /// Capturing, but invalidated by a call the capture could not take; ending it fails
    /// (`CU_STREAM_CAPTURE_STATUS_INVALIDATED`).
    Invalidated,
}

impl Stream {
    /// Starts capturing this stream (`cuStreamBeginCapture`): until [`Stream::end_capture`],
    /// work queued on it (launches, copies, fills, event records and waits) is recorded into a
    /// graph instead of run, and so is work on streams that wait on an event recorded here
    /// during the capture (they join the capture and must be joined back before it ends).
    ///
    /// A synchronisation or query of a capturing stream fails and invalidates the capture;
    /// [`Stream::end_capture`] then says so. A stream dropped while its capture is open ends
    /// it, discarding the graph. In [`CaptureMode::Global`], other threads' calls that the
    /// capture forbids (such as stream-ordered allocations and synchronisations) fail until
    /// it ends, and invalidate it (as the 580 driver does).
    ///
    /// # Safety
    ///
    /// While the stream captures, no buffer may be allocated on it or dropped whose
    /// deallocation stream it is: a stream-ordered allocation in a capture gives memory that
    /// exists only while the graph runs, and a free would be recorded into the graph instead
    /// of made. Work captured from host memory (copies from a `Vec`) reads that memory each
    /// time the graph runs, so it must outlive every launch of the graph.
    #[doc(alias = "cuStreamBeginCapture")]
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let code = match mode {
            CaptureMode::Global => 0,
            CaptureMode::ThreadLocal => 1,
            CaptureMode::Relaxed => 2,
        };
        self.call(|driver, handle| driver.stream_begin_capture(handle, code))?;
        self.set_capturing(true);
        Ok(())
    }

    /// Ends this stream's capture (`cuStreamEndCapture`), giving the captured graph. A
    /// capture the driver invalidated, or one that left another stream's work unjoined, is
    /// [`Error::Capture`]; so is ending a stream that was not capturing.
    #[doc(alias = "cuStreamEndCapture")]
    pub fn end_capture(&self) -> Result<Graph> {
        // The capture ends here whatever the driver answers (an invalidated one too).
        let ended = self.call(|driver, handle| driver.stream_end_capture(handle));
        self.set_capturing(false);
        let handle = ended.map_err(|e| capture_error(e, "end_capture"))?;
        Ok(Graph::from_handle(handle, self.context().clone()))
    }

    /// Whether this stream is capturing (`cuStreamIsCapturing`).
    #[doc(alias = "cuStreamIsCapturing")]
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let status = self.call(|driver, handle| driver.stream_is_capturing(handle))?;
        Ok(match status {
            1 => CaptureStatus::Active,
            2 => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        })
    }
}

/// The driver's capture codes as [`Error::Capture`], saying what each means.
fn capture_error(error: Error, during: &str) -> Error {
    let Some(code) = error.driver_code() else {
        return error;
    };
    let reason = match code {
        DriverCode::STREAM_CAPTURE_INVALIDATED => {
            "the driver invalidated it: a call made during it could not be captured (a \
             synchronisation or query of a capturing stream, or a call the capture mode \
             forbids), and failed with its own error then"
        }
        DriverCode::STREAM_CAPTURE_UNJOINED => {
            "work forked into another stream (through an event recorded in the capture) was \
             not joined back: make the capturing stream wait on an event recorded after it"
        }
        DriverCode::STREAM_CAPTURE_UNMATCHED | DriverCode::ILLEGAL_STATE => {
            "the stream was not capturing"
        }
        DriverCode::STREAM_CAPTURE_WRONG_THREAD => {
            "a global or thread-local capture must be ended by the thread that began it"
        }
        _ => return error,
    };
    Error::Capture {
        reason: format!("{reason} ({during}: {error})"),
    }
}

/// Options of [`Graph::instantiate`] (`CUgraphInstantiate_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphInstantiate_flags")]
pub struct GraphOptions {
    /// Free the graph's unfreed memory allocations before each launch
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`).
    pub auto_free_on_launch: bool,
    /// Instantiate for launches from the device (`CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`).
    pub device_launch: bool,
    /// Run the nodes with their own launch priorities
    /// (`CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`).
    pub use_node_priority: bool,
}

crate::options::chainers!(GraphOptions {
    with_auto_free_on_launch(auto_free_on_launch: bool);
    with_device_launch(device_launch: bool);
    with_use_node_priority(use_node_priority: bool);
});

/// What [`Graph::write_dot`] includes (`CUgraphDebugDot_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUgraphDebugDot_flags")]
pub struct DotOptions {
    /// Everything the driver can say of each node (`CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE`);
    /// otherwise each node's kind and name.
    pub verbose: bool,
    /// Kernel nodes' parameters (`CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS`).
    pub kernel_params: bool,
    /// Nodes' handles (`CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES`).
    pub handles: bool,
}

crate::options::chainers!(DotOptions {
    with_verbose(verbose: bool);
    with_kernel_params(kernel_params: bool);
    with_handles(handles: bool);
});

/// A CUDA graph (`CUgraph`), destroyed on drop: made empty by [`Graph::new`] or captured by
/// [`Stream::end_capture`]. It is `Send` but not `Sync` (the driver does not synchronise a
/// graph's use from two threads).
pub struct Graph {
    handle: GraphHandle,
    context: Context,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("handle", &self.handle.0)
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        if let Err(e) = self.context.driver().graph_destroy(self.handle) {
            log::error!("destroying a graph: {e}");
        }
    }
}

impl Graph {
    fn from_handle(handle: GraphHandle, context: Context) -> Graph {
        Graph {
            handle,
            context,
            _not_sync: PhantomData,
        }
    }

    /// An empty graph for `device`'s primary context (`cuGraphCreate`).
    #[doc(alias = "cuGraphCreate")]
    pub fn new(device: Device) -> Result<Graph> {
        let context = device.primary_context()?;
        let handle = context.with_current(|driver| driver.graph_create())?;
        Ok(Graph::from_handle(handle, context))
    }

    /// How many nodes the graph has (`cuGraphGetNodes`).
    #[doc(alias = "cuGraphGetNodes")]
    pub fn node_count(&self) -> Result<usize> {
        self.context.driver().graph_node_count(self.handle)
    }

    /// A copy of the graph and its nodes (`cuGraphClone`).
    #[doc(alias = "cuGraphClone")]
    pub fn try_clone(&self) -> Result<Graph> {
        let handle = self.context.driver().graph_clone(self.handle)?;
        Ok(Graph::from_handle(handle, self.context.clone()))
    }

    /// The context it was made in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The raw `CUgraph`, borrowed: valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    /// Writes the graph as Graphviz DOT to `path` (`cuGraphDebugDotPrint`).
    #[doc(alias = "cuGraphDebugDotPrint")]
    pub fn write_dot(&self, path: impl AsRef<Path>, options: DotOptions) -> Result<()> {
        let path = path.as_ref();
        let path_c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            Error::InvalidArgument {
                name: "path",
                reason: format!("{} contains a NUL byte", path.display()),
            }
        })?;
        let mut flags = 0;
        if options.verbose {
            flags |= 1;
        }
        if options.kernel_params {
            flags |= 1 << 2;
        }
        if options.handles {
            flags |= 1 << 10;
        }
        self.context
            .driver()
            .graph_debug_dot_print(self.handle, &path_c, flags)
    }

    /// The graph as Graphviz DOT text (written through a temporary file).
    pub fn to_dot(&self, options: DotOptions) -> Result<String> {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "cuda-core-graph-{}-{:p}.dot",
            std::process::id(),
            self.handle.0
        ));
        let written = self.write_dot(&path, options).and_then(|()| {
            std::fs::read_to_string(&path).map_err(|e| Error::Io {
                path: path.clone(),
                source: crate::error::Cause::new(e),
            })
        });
        let _ = std::fs::remove_file(&path);
        written
    }

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`). The executable
    /// graph is independent of this one afterwards: changing or dropping this graph leaves it
    /// as instantiated.
    #[doc(alias = "cuGraphInstantiateWithFlags")]
    pub fn instantiate(&self, options: GraphOptions) -> Result<GraphExec> {
        let mut flags = 0u64;
        if options.auto_free_on_launch {
            flags |= 1;
        }
        if options.device_launch {
            flags |= 4;
        }
        if options.use_node_priority {
            flags |= 8;
        }
        let handle = self
            .context
            .with_current(|driver| driver.graph_instantiate(self.handle, flags))?;
        Ok(GraphExec {
            handle,
            context: self.context.clone(),
            _not_sync: PhantomData,
        })
    }
}

/// An executable graph (`CUgraphExec`), destroyed on drop: launched with one driver call
/// for all of its work. `Send` but not `Sync`.
pub struct GraphExec {
    handle: GraphExecHandle,
    context: Context,
    _not_sync: PhantomData<std::cell::Cell<()>>,
}

impl fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("handle", &self.handle.0)
            .field("device", &self.context.device().ordinal())
            .finish()
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        if let Err(e) = self.context.driver().graph_exec_destroy(self.handle) {
            log::error!("destroying an executable graph: {e}");
        }
    }
}

impl GraphExec {
    /// Launches the graph's work on `stream` (`cuGraphLaunch`), after the work queued there
    /// before, as one unit: a later launch of the same graph starts after this one ends.
    ///
    /// # Safety
    ///
    /// Everything the graph's work uses must be alive until it is done: the buffers and
    /// raw addresses its kernels, copies and fills were given (as for [`launch`](crate::launch)),
    /// the host memory its copies read or write, and the kernels' code (their
    /// [`ObjectCode`](crate::ObjectCode) or [`Kernel`](crate::Kernel) values). Dropping the
    /// executable graph itself while a launch is queued is allowed.
    #[doc(alias = "cuGraphLaunch")]
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        stream.call(|driver, handle| driver.graph_launch(self.handle, handle))
    }

    /// Makes the graph's device-side setup ahead of its first launch, in `stream`'s order
    /// (`cuGraphUpload`), so that the first launch costs no more than later ones.
    #[doc(alias = "cuGraphUpload")]
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.check_stream(stream)?;
        stream.call(|driver, handle| driver.graph_upload(self.handle, handle))
    }

    /// The raw `CUgraphExec`, borrowed: valid while this value lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.handle.0
    }

    fn check_stream(&self, stream: &Stream) -> Result<()> {
        if stream.device() != self.context.device() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: format!(
                    "it is device {}'s, and the graph was instantiated for device {}",
                    stream.device().ordinal(),
                    self.context.device().ordinal()
                ),
            });
        }
        Ok(())
    }
}
