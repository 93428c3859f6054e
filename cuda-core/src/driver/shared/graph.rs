//! [`GraphApi`](crate::driver::api::GraphApi) for both ABIs (every call it makes has the same
//! signature in both headers).

macro_rules! impl_graph_api {
    ($name:ident, $sys:ident) => {
        impl $crate::driver::api::GraphApi for $name {
            fn stream_begin_capture(&self, stream: StreamHandle, mode: u32) -> Result<()> {
                call!(self.cuStreamBeginCapture(stream.0.cast(), $sys::CUstreamCaptureMode(mode)))
            }

            fn stream_end_capture(&self, stream: StreamHandle) -> Result<GraphHandle> {
                let mut graph = std::ptr::null_mut();
                call!(self.cuStreamEndCapture(stream.0.cast(), &mut graph))?;
                Ok(GraphHandle(graph.cast()))
            }

            fn stream_is_capturing(&self, stream: StreamHandle) -> Result<u32> {
                let mut status = $sys::CUstreamCaptureStatus(0);
                call!(self.cuStreamIsCapturing(stream.0.cast(), &mut status))?;
                Ok(status.0)
            }

            fn graph_create(&self) -> Result<GraphHandle> {
                let mut graph = std::ptr::null_mut();
                call!(self.cuGraphCreate(&mut graph, 0))?;
                Ok(GraphHandle(graph.cast()))
            }

            fn graph_clone(&self, graph: GraphHandle) -> Result<GraphHandle> {
                let mut clone = std::ptr::null_mut();
                call!(self.cuGraphClone(&mut clone, graph.0.cast()))?;
                Ok(GraphHandle(clone.cast()))
            }

            fn graph_destroy(&self, graph: GraphHandle) -> Result<()> {
                call!(self.cuGraphDestroy(graph.0.cast()))
            }

            fn graph_node_count(&self, graph: GraphHandle) -> Result<usize> {
                let mut count = 0;
                call!(self.cuGraphGetNodes(graph.0.cast(), std::ptr::null_mut(), &mut count))?;
                Ok(count)
            }

            fn graph_debug_dot_print(
                &self,
                graph: GraphHandle,
                path: &std::ffi::CStr,
                flags: u32,
            ) -> Result<()> {
                call!(self.cuGraphDebugDotPrint(graph.0.cast(), path.as_ptr(), flags))
            }

            fn graph_instantiate(&self, graph: GraphHandle, flags: u64) -> Result<GraphExecHandle> {
                let mut exec = std::ptr::null_mut();
                call!(self.cuGraphInstantiateWithFlags(&mut exec, graph.0.cast(), flags))?;
                Ok(GraphExecHandle(exec.cast()))
            }

            fn graph_exec_destroy(&self, exec: GraphExecHandle) -> Result<()> {
                call!(self.cuGraphExecDestroy(exec.0.cast()))
            }

            fn graph_launch(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
                call!(self.cuGraphLaunch(exec.0.cast(), stream.0.cast()))
            }

            fn graph_upload(&self, exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
                call!(self.cuGraphUpload(exec.0.cast(), stream.0.cast()))
            }
        }
    };
}
pub(in crate::driver) use impl_graph_api;
