//! Where [`BuildGraph`](super::BuildGraph) adds nodes: a graph or the body of one of its
//! conditional nodes ([`GraphBody`]).

use std::sync::Arc;

use super::id::GraphNode;
use super::node::{check_node, note, NodeKind};
use super::params::{self};
use super::{Graph, GraphState};
use crate::context::Context;
use crate::driver::{GraphHandle, GraphNodeHandle};
use crate::error::Result;
use crate::Buffer;

/// Where [`BuildGraph`]'s methods add nodes: a graph (`graph`), the root graph whose driver
/// references hold what it keeps (`root`), and the root's state. Public in name only (this
/// module is private), so that the sealed trait may return it.
pub struct Target<'a> {
    pub(crate) graph: GraphHandle,
    pub(crate) root: GraphHandle,
    pub(crate) context: &'a Context,
    pub(crate) state: &'a mut GraphState,
}

pub(super) mod seal {
    /// Gives [`BuildGraph`](super::BuildGraph) its target; only the crate's types have one.
    pub trait Buildable {
        #[doc(hidden)]
        fn target(&mut self) -> super::Target<'_>;
    }
}

impl seal::Buildable for Graph {
    fn target(&mut self) -> Target<'_> {
        Target {
            graph: self.handle,
            root: self.handle,
            context: &self.context,
            state: &mut self.state,
        }
    }
}

/// The body of a conditional node: a graph owned by its node, built with [`BuildGraph`](crate::BuildGraph)
/// while the root graph is borrowed. What its nodes refer to is kept alive by the root graph.
pub struct GraphBody<'g> {
    pub(crate) target: Target<'g>,
}

impl std::fmt::Debug for GraphBody<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBody")
            .field("handle", &self.target.graph.0)
            .finish()
    }
}

impl seal::Buildable for GraphBody<'_> {
    fn target(&mut self) -> Target<'_> {
        Target {
            graph: self.target.graph,
            root: self.target.root,
            context: self.target.context,
            state: self.target.state,
        }
    }
}

impl Target<'_> {
    pub(super) fn deps(&self, deps: &[GraphNode]) -> Result<Vec<GraphNodeHandle>> {
        deps.iter()
            .map(|&dep| check_node(self.state, self.graph, dep, "deps").map(|()| dep.handle))
            .collect()
    }

    pub(super) fn node(&mut self, handle: GraphNodeHandle) -> GraphNode {
        note(self.state, self.graph, handle)
    }

    pub(super) fn check_kind(
        &self,
        node: GraphNode,
        wanted: &[NodeKind],
        what: &str,
    ) -> Result<NodeKind> {
        params::check_kind(self.state, self.context, self.graph, node, wanted, what)
    }

    pub(super) fn keep(&mut self, value: impl Send + 'static) {
        self.state.keep.get_mut().push(Box::new(value));
    }

    /// Keeps `buffer` with the graph, orders its launches with the buffer's stream, and, where
    /// its access from the graph's device can be revoked, checks that access at each launch
    /// (`copy`: the node copies it, which some memory allows across devices without access).
    pub(super) fn keep_buffer(&mut self, buffer: &Arc<Buffer>, copy: bool) {
        self.state.add_home(buffer.deallocation_stream());
        super::add_gated(
            &mut self.state.gated,
            buffer.memory_resource(),
            copy,
            self.context.device(),
        );
        self.keep(buffer.clone());
    }
}
