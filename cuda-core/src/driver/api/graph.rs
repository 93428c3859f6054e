//! CUDA graphs: stream capture, graphs and their executable forms.

use std::ffi::CStr;

use crate::driver::{GraphExecHandle, GraphHandle, StreamHandle};
use crate::error::Result;

/// Stream capture, graphs and executable graphs.
pub(crate) trait GraphApi {
    /// `cuStreamBeginCapture` with a `CUstreamCaptureMode`.
    fn stream_begin_capture(&self, stream: StreamHandle, mode: u32) -> Result<()>;
    /// `cuStreamEndCapture`: the captured graph.
    fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle>;
    /// `cuStreamIsCapturing`: the raw `CUstreamCaptureStatus`.
    fn stream_is_capturing(&self, stream: StreamHandle) -> Result<u32>;
    /// `cuGraphCreate` (no flags).
    fn graph_create(&self) -> Result<GraphHandle>;
    /// `cuGraphClone`.
    fn graph_clone(&self, graph: GraphHandle) -> Result<GraphHandle>;
    /// `cuGraphDestroy`.
    fn graph_destroy(&self, graph: GraphHandle) -> Result<()>;
    /// `cuGraphGetNodes` with no array: how many nodes the graph has.
    fn graph_node_count(&self, graph: GraphHandle) -> Result<usize>;
    /// `cuGraphDebugDotPrint` with `CUgraphDebugDot_flags`.
    fn graph_debug_dot_print(&self, graph: GraphHandle, path: &CStr, flags: u32) -> Result<()>;
    /// `cuGraphInstantiateWithFlags` with `CUgraphInstantiate_flags`, in the current context.
    fn graph_instantiate(&self, graph: GraphHandle, flags: u64) -> Result<GraphExecHandle>;
    /// `cuGraphExecDestroy`.
    fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()>;
    /// `cuGraphLaunch`.
    fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
    /// `cuGraphUpload`.
    fn graph_upload(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()>;
}
