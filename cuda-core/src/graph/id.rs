//! [`GraphNode`], a plain identifier: a leaf below the graph code, so that errors can name
//! the node they are about.

use std::ffi::c_void;

use crate::driver::handles::{GraphHandle, GraphNodeHandle};

/// A node of a graph (`CUgraphNode`): a plain identifier, valid with the graph it belongs to.
/// The methods that take one check that it is a node of the graph they are called on, as
/// handed out by it and not removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "CUgraphNode")]
pub struct GraphNode {
    pub(crate) handle: GraphNodeHandle,
    pub(crate) graph: GraphHandle,
    /// Which handing-out this is ([`serial`](crate::graph::serial)): a node removed, or of a graph
    /// dropped, never matches a later one at the same address.
    pub(crate) serial: u64,
}

impl GraphNode {
    /// The raw `CUgraphNode`.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle.0
    }
}
