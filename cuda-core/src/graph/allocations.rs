//! Graph allocations as the ends of a graph's copy and fill nodes: the memory a node takes
//! ([`NodeMemory`]), a range of an allocation ([`GraphAllocationRange`]), and the check, at
//! each instantiation and update, that every node using an allocation runs after its
//! allocation node and before its free node ([`AllocationUses`]).
//!
//! A graph allocation exists only between its two nodes, in each launch of the graph: a copy
//! or fill node that the graph's edges do not put between them would touch memory that is not
//! allocated, or is another allocation's. The edges can change after a node is added
//! ([`BuildGraph::remove_dependencies`](super::BuildGraph::remove_dependencies), a node
//! removed), so the order is checked on the graph as it is handed to the driver.

use std::collections::{HashMap, HashSet};
use std::ops::RangeBounds;
use std::sync::Arc;

use super::id::GraphNode;
use super::node::GraphAllocation;
use crate::driver::{Driver, GraphHandle, GraphNodeHandle};
use crate::error::{Error, Result};
use crate::memory::span::{bounds, Span};
use crate::memory::{Buffer, GraphMemory};

/// A range of bytes of a [`GraphAllocation`] ([`GraphAllocation::range`]), as the end of a
/// copy or fill node of the graph that allocates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GraphAllocationRange<'a> {
    allocation: &'a GraphAllocation,
    offset: usize,
    size: usize,
}

impl GraphAllocationRange<'_> {
    /// The allocation node.
    pub fn node(&self) -> GraphNode {
        self.allocation.node
    }

    /// Its first byte's offset in the allocation.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl GraphAllocation {
    /// Bytes `range` of the allocation, to copy to or from, or to fill, with the graph's copy
    /// and fill nodes ([`BuildGraph::add_copy`](super::BuildGraph::add_copy),
    /// [`add_fill`](super::BuildGraph::add_fill)); the whole allocation is taken as it is.
    /// A range past the allocation's end is refused.
    pub fn range(&self, range: impl RangeBounds<usize>) -> Result<GraphAllocationRange<'_>> {
        match bounds(&range, self.size) {
            (Some(start), Some(end)) if start <= end && end <= self.size => {
                Ok(GraphAllocationRange {
                    allocation: self,
                    offset: start,
                    size: end - start,
                })
            }
            _ => Err(Error::InvalidArgument {
                name: "range",
                reason: format!(
                    "{:?}..{:?} is not within the allocation's {} bytes",
                    range.start_bound(),
                    range.end_bound(),
                    self.size
                ),
            }),
        }
    }
}

/// One end of a copy or fill node, resolved. Public in name only (this module is private), so
/// that the sealed trait may return it.
#[doc(hidden)]
pub enum End<'a> {
    /// Memory of a buffer the graph keeps alive.
    Kept(Span<'a>, &'a Arc<Buffer>),
    /// Memory of one of the graph's allocations: `size` bytes at `ptr`, allocated by `node`.
    Allocation {
        node: GraphNode,
        ptr: u64,
        size: usize,
    },
}

pub(crate) mod sealed {
    /// Gives a [`NodeMemory`](super::NodeMemory) its end.
    pub trait NodeEnd {
        #[doc(hidden)]
        fn end(&self) -> super::End<'_>;
    }
}

/// Memory a graph's copy and fill nodes take: a buffer the graph keeps alive (an
/// `Arc<Buffer>` or a [`SharedSlice`](crate::memory::SharedSlice): see [`GraphMemory`]), or
/// memory of one of the graph's own allocation nodes (a [`GraphAllocation`], or a
/// [`GraphAllocationRange`] of one), which the graph must order its node after the allocation
/// node and before the free node, checked when it is instantiated. Sealed.
pub trait NodeMemory: sealed::NodeEnd {}

impl<T: GraphMemory> sealed::NodeEnd for T {
    fn end(&self) -> End<'_> {
        End::Kept(self.span(), self.kept())
    }
}

impl<T: GraphMemory> NodeMemory for T {}

impl sealed::NodeEnd for GraphAllocation {
    fn end(&self) -> End<'_> {
        End::Allocation {
            node: self.node,
            ptr: self.ptr.0,
            size: self.size,
        }
    }
}

impl NodeMemory for GraphAllocation {}

impl sealed::NodeEnd for GraphAllocationRange<'_> {
    fn end(&self) -> End<'_> {
        End::Allocation {
            node: self.allocation.node,
            ptr: self.allocation.ptr.0 + self.offset as u64,
            size: self.size,
        }
    }
}

impl NodeMemory for GraphAllocationRange<'_> {}

/// One allocation node's uses by copy and fill nodes, and its free node.
#[derive(Clone, Debug, Default)]
struct Uses {
    users: Vec<GraphNodeHandle>,
    free: Option<GraphNodeHandle>,
    /// The allocation node was removed while nodes used its memory.
    removed: bool,
}

/// The graph allocations that a graph's copy and fill nodes use, by allocation node, to be
/// checked against the graph's edges whenever the graph is handed to the driver.
#[derive(Clone, Debug, Default)]
pub(crate) struct AllocationUses {
    by_allocation: HashMap<GraphNodeHandle, Uses>,
}

impl AllocationUses {
    /// Notes that `user` reads or writes the memory of `allocation`'s node.
    pub(crate) fn used(&mut self, allocation: GraphNodeHandle, user: GraphNodeHandle) {
        self.by_allocation
            .entry(allocation)
            .or_default()
            .users
            .push(user);
    }

    /// Notes `free` as the node that frees `allocation`'s memory.
    pub(crate) fn freed(&mut self, allocation: GraphNodeHandle, free: GraphNodeHandle) {
        self.by_allocation.entry(allocation).or_default().free = Some(free);
    }

    /// Forgets `node`, removed from the graph: as a user, as a free node (the memory then
    /// outlives the launch), and, as an allocation node, marks the memory its users use as
    /// never allocated.
    pub(crate) fn forget(&mut self, node: GraphNodeHandle) {
        for (&allocation, uses) in &mut self.by_allocation {
            uses.users.retain(|&user| user != node);
            if uses.free == Some(node) {
                uses.free = None;
            }
            if allocation == node {
                uses.removed = true;
            }
        }
        self.by_allocation
            .retain(|_, uses| !uses.users.is_empty() || (uses.free.is_some() && !uses.removed));
    }

    /// The same uses in a clone of the graph, each node mapped by `find` (the clone's copy of
    /// it, `cuGraphNodeFindInClone`).
    pub(crate) fn mapped(
        &self,
        mut find: impl FnMut(GraphNodeHandle) -> Result<GraphNodeHandle>,
    ) -> Result<AllocationUses> {
        let mut mapped = AllocationUses::default();
        for (&allocation, uses) in &self.by_allocation {
            if uses.users.is_empty() {
                continue;
            }
            let allocation = if uses.removed {
                // Not in the clone either; the clone refuses to instantiate as this graph does.
                allocation
            } else {
                find(allocation)?
            };
            let mut users = Vec::with_capacity(uses.users.len());
            for &user in &uses.users {
                users.push(find(user)?);
            }
            let free = uses.free.map(&mut find).transpose()?;
            mapped.by_allocation.insert(
                allocation,
                Uses {
                    users,
                    free,
                    removed: uses.removed,
                },
            );
        }
        Ok(mapped)
    }

    /// Refuses `graph` where a node uses an allocation's memory outside the allocation's
    /// life: not after the allocation node in the graph's edges, or not before its free node.
    /// Nothing is asked of the driver where no node uses an allocation.
    pub(crate) fn check(&self, driver: &'static dyn Driver, graph: GraphHandle) -> Result<()> {
        if self
            .by_allocation
            .values()
            .all(|uses| uses.users.is_empty())
        {
            return Ok(());
        }
        let mut after: HashMap<GraphNodeHandle, Vec<GraphNodeHandle>> = HashMap::new();
        let mut before: HashMap<GraphNodeHandle, Vec<GraphNodeHandle>> = HashMap::new();
        for (from, to) in driver.graph_edges(graph)? {
            after.entry(from).or_default().push(to);
            before.entry(to).or_default().push(from);
        }
        for (&allocation, uses) in &self.by_allocation {
            if uses.users.is_empty() {
                continue;
            }
            if uses.removed {
                return Err(refused(
                    "the allocation node of memory that copy or fill nodes use was removed",
                ));
            }
            let allocated = reachable(allocation, &after);
            if uses.users.iter().any(|user| !allocated.contains(user)) {
                return Err(refused(
                    "a copy or fill node uses a graph allocation's memory but does not depend, \
                     directly or through other nodes, on its allocation node",
                ));
            }
            if let Some(free) = uses.free {
                let freed_after = reachable(free, &before);
                if uses.users.iter().any(|user| !freed_after.contains(user)) {
                    return Err(refused(
                        "a copy or fill node uses a graph allocation's memory but its free node \
                         does not depend, directly or through other nodes, on it",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The nodes reached from `start` (not itself) along `edges`.
fn reachable(
    start: GraphNodeHandle,
    edges: &HashMap<GraphNodeHandle, Vec<GraphNodeHandle>>,
) -> HashSet<GraphNodeHandle> {
    let mut seen = HashSet::new();
    let mut todo = vec![start];
    while let Some(node) = todo.pop() {
        for &next in edges.get(&node).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(next) {
                todo.push(next);
            }
        }
    }
    seen
}

fn refused(reason: &str) -> Error {
    Error::InvalidArgument {
        name: "graph",
        reason: format!(
            "{reason}: the memory exists only between a graph allocation's allocation and free \
             nodes, in each launch, so the graph is not instantiated"
        ),
    }
}
