//! The collectives and point-to-point calls of a [`Communicator`], queued at once; a
//! [`Group`](super::Group) queues the same [`Call`]s at its end. Each is checked before NCCL,
//! each argument named in the error: the stream is of the communicator's device, every buffer
//! is memory of that device holding a whole number of aligned elements, the counts agree with
//! the collective's shape, roots and peers are ranks of the communicator, and two buffers
//! overlap only in NCCL's in-place form. The call is then queued in its buffers' stream order
//! (`order::in_stream_order`): on a stream other than a buffer's deallocation stream, the
//! stream waits for that one first, and that one waits for the call after.

use std::sync::Arc;

use super::communicator::{refuse_in_group, CommInner, Communicator};
use super::element::Element;
use super::op::ReduceOp;
use crate::driver::nccl::{
    nccl, CollectiveKind as Kind, CollectiveSpec, CommHandle, Nccl, Progress,
};
use crate::driver::StreamHandle;
use crate::error::{Error, Result};
use crate::memory::span::Span;
use crate::stream::Stream;

/// One call, checked, in the neutral form the driver layer takes, with the streams its memory
/// is ordered on.
pub(crate) struct Call<'a> {
    spec: CollectiveSpec,
    homes: [Option<&'a Stream>; 2],
}

/// A buffer argument that passed its checks.
struct Memory<'a> {
    ptr: u64,
    bytes: usize,
    count: usize,
    home: &'a Stream,
}

impl Memory<'_> {
    fn end(&self) -> u64 {
        self.ptr + self.bytes as u64
    }

    fn overlaps(&self, other: &Memory<'_>) -> bool {
        self.bytes > 0 && other.bytes > 0 && self.ptr < other.end() && other.ptr < self.end()
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

fn type_name<T: Element>() -> &'static str {
    std::any::type_name::<T>()
}

/// Refuses a stream of another device than the communicator's.
fn check_stream(comm: &CommInner, stream: &Stream) -> Result<()> {
    if stream.device() == comm.device {
        return Ok(());
    }
    Err(invalid(
        "stream",
        format!(
            "a stream of device {}, and the communicator is device {}'s: NCCL's kernels run \
             on the communicator's device",
            stream.device().ordinal(),
            comm.device.ordinal()
        ),
    ))
}

/// Checks one buffer argument: memory of the communicator's device (not host memory, not
/// another device's), a whole number of `T`, aligned for it.
fn memory<'a, T: Element>(
    comm: &CommInner,
    name: &'static str,
    span: Span<'a>,
) -> Result<Memory<'a>> {
    match span.buffer.device() {
        Some(device) if device == comm.device => {}
        Some(device) => {
            return Err(invalid(
                name,
                format!(
                    "memory of device {}, and the communicator is device {}'s: NCCL reads and \
                     writes memory of its own device",
                    device.ordinal(),
                    comm.device.ordinal()
                ),
            ))
        }
        None => {
            return Err(invalid(
                name,
                format!(
                    "host memory: NCCL reads and writes memory of the communicator's device ({})",
                    comm.device.ordinal()
                ),
            ))
        }
    }
    let width = std::mem::size_of::<T>();
    if span.size % width != 0 {
        return Err(invalid(
            name,
            format!(
                "{} bytes are not a whole number of {width}-byte {} values",
                span.size,
                type_name::<T>()
            ),
        ));
    }
    if span.ptr % std::mem::align_of::<T>() as u64 != 0 {
        return Err(invalid(
            name,
            format!(
                "its address {:#x} is not aligned for {}",
                span.ptr,
                type_name::<T>()
            ),
        ));
    }
    Ok(Memory {
        ptr: span.ptr,
        bytes: span.size,
        count: span.size / width,
        home: span.buffer.deallocation_stream(),
    })
}

/// A root or a peer, checked to be a rank of the communicator.
fn rank_of(comm: &CommInner, name: &'static str, rank: usize) -> Result<i32> {
    if rank < comm.size {
        return Ok(rank as i32);
    }
    Err(invalid(
        name,
        format!(
            "rank {rank}, and the communicator has {} ranks (0 to {})",
            comm.size,
            comm.size - 1
        ),
    ))
}

/// Refuses `b` where it overlaps `a` other than in NCCL's in-place form (`in_place`).
fn apart_or_in_place(
    name: &'static str,
    a: &Memory<'_>,
    b: &Memory<'_>,
    in_place: bool,
    form: &str,
) -> Result<()> {
    if !a.overlaps(b) || in_place {
        return Ok(());
    }
    Err(invalid(
        name,
        format!(
            "bytes {:#x}..{:#x} overlap the other buffer's {:#x}..{:#x} other than in NCCL's \
             in-place form ({form})",
            b.ptr,
            b.end(),
            a.ptr,
            a.end()
        ),
    ))
}

/// `count × ranks`, refused where it overflows.
fn times_ranks(comm: &CommInner, name: &'static str, count: usize) -> Result<usize> {
    count.checked_mul(comm.size).ok_or_else(|| {
        invalid(
            name,
            format!("{count} values × {} ranks overflows", comm.size),
        )
    })
}

/// Refuses a whole buffer that does not hold one part per rank: `whole` and `part` with their
/// argument names, `what` the collective ("an all-gather"), `gathers` whether the parts go
/// into the whole (from each rank, written) or out of it (to each rank, read).
fn parts_per_rank<T: Element>(
    comm: &CommInner,
    (whole_name, whole): (&'static str, &Memory<'_>),
    (part_name, part): (&'static str, &Memory<'_>),
    what: &str,
    gathers: bool,
) -> Result<()> {
    let wanted = times_ranks(comm, part_name, part.count)?;
    if whole.count == wanted {
        return Ok(());
    }
    let (each, does) = if gathers {
        ("from", "writes")
    } else {
        ("to", "reads")
    };
    Err(invalid(
        whole_name,
        format!(
            "it holds {} {} values; {what} of {} {each} each of {} ranks {does} {wanted}",
            whole.count,
            type_name::<T>(),
            part.count,
            comm.size
        ),
    ))
}

impl<'a> Call<'a> {
    fn new<T: Element>(
        kind: Kind,
        send: Option<&Memory<'a>>,
        recv: Option<&Memory<'a>>,
        count: usize,
        op: i32,
        rank: i32,
    ) -> Call<'a> {
        Call {
            spec: CollectiveSpec {
                kind,
                send: send.map_or(0, |m| m.ptr),
                recv: recv.map_or(0, |m| m.ptr),
                count,
                data_type: T::DATA_TYPE.code(),
                op,
                rank,
            },
            homes: [send.map(|m| m.home), recv.map(|m| m.home)],
        }
    }

    /// The NCCL function it calls.
    pub(crate) fn name(&self) -> &'static str {
        self.spec.kind.name()
    }

    /// The streams its memory is ordered on, each once; `stream` (the work's own, a no-op to
    /// the order) in the place of a second buffer's that is the first's, or of one it lacks.
    pub(crate) fn homes(&self, stream: &'a Stream) -> [&'a Stream; 2] {
        let first = self.homes[0].unwrap_or(stream);
        let second = self.homes[1].filter(|home| !home.same_as(first));
        [first, second.unwrap_or(stream)]
    }

    /// Makes the call.
    pub(crate) fn issue(
        &self,
        nccl: &Nccl,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        nccl.collective(&self.spec, comm, on)
    }

    /// An all-reduce of `send` into `recv` (the same memory: in place).
    pub(crate) fn all_reduce<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Span<'a>,
        op: ReduceOp<'_>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let (sn, rn) = names(send, recv);
        let (s, r) = (memory::<T>(comm, sn, send)?, memory::<T>(comm, rn, recv)?);
        same_count::<T>(&s, &r, "an all-reduce")?;
        apart_or_in_place(
            "recv",
            &s,
            &r,
            s.ptr == r.ptr,
            "the same memory: all_reduce_in_place",
        )?;
        let op = op.code_for(comm, T::DATA_TYPE)?;
        Ok(Call::new::<T>(
            Kind::AllReduce,
            Some(&s),
            Some(&r),
            s.count,
            op,
            0,
        ))
    }

    /// A broadcast from `root`'s `send` into every rank's `recv`.
    pub(crate) fn broadcast<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Span<'a>,
        root: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let root = rank_of(comm, "root", root)?;
        let (sn, rn) = names(send, recv);
        let (s, r) = (memory::<T>(comm, sn, send)?, memory::<T>(comm, rn, recv)?);
        same_count::<T>(&s, &r, "a broadcast")?;
        apart_or_in_place(
            "recv",
            &s,
            &r,
            s.ptr == r.ptr,
            "the same memory: broadcast_in_place",
        )?;
        Ok(Call::new::<T>(
            Kind::Broadcast,
            Some(&s),
            Some(&r),
            s.count,
            0,
            root,
        ))
    }

    /// A reduction of every rank's `send` into `root`'s `recv` (`None`: a rank other than the
    /// root, which receives nothing).
    pub(crate) fn reduce<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Option<Span<'a>>,
        op: ReduceOp<'_>,
        root: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let root_code = rank_of(comm, "root", root)?;
        let (sn, rn) = recv.map_or(("send", "recv"), |recv| names(send, recv));
        let s = memory::<T>(comm, sn, send)?;
        let r = match recv {
            Some(recv) => {
                let r = memory::<T>(comm, rn, recv)?;
                same_count::<T>(&s, &r, "a reduction")?;
                apart_or_in_place(
                    "recv",
                    &s,
                    &r,
                    s.ptr == r.ptr,
                    "the same memory: reduce_in_place",
                )?;
                Some(r)
            }
            None if root == comm.rank => {
                return Err(invalid(
                    "root",
                    format!(
                        "rank {root} is this rank, which receives the result: give it a \
                         buffer (reduce, reduce_in_place)"
                    ),
                ))
            }
            None => None,
        };
        let op = op.code_for(comm, T::DATA_TYPE)?;
        Ok(Call::new::<T>(
            Kind::Reduce,
            Some(&s),
            r.as_ref(),
            s.count,
            op,
            root_code,
        ))
    }

    /// An all-gather of every rank's `send` into `recv`, rank `i`'s at element `i × count`.
    pub(crate) fn all_gather<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Span<'a>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let (s, r) = (
            memory::<T>(comm, "send", send)?,
            memory::<T>(comm, "recv", recv)?,
        );
        parts_per_rank::<T>(comm, ("recv", &r), ("send", &s), "an all-gather", true)?;
        let own = r.ptr + (comm.rank * s.bytes) as u64;
        apart_or_in_place(
            "recv",
            &s,
            &r,
            s.ptr == own,
            "send is this rank's part of recv: all_gather_in_place",
        )?;
        Ok(Call::new::<T>(
            Kind::AllGather,
            Some(&s),
            Some(&r),
            s.count,
            0,
            0,
        ))
    }

    /// An all-gather in place: `buf` holds every rank's part, this rank's at its place.
    pub(crate) fn all_gather_in_place<T: Element>(
        comm: &Arc<CommInner>,
        buf: Span<'a>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let b = memory::<T>(comm, "buf", buf)?;
        let part = parts::<T>(comm, &b)?;
        let own = Memory {
            ptr: b.ptr + (comm.rank * part * std::mem::size_of::<T>()) as u64,
            bytes: part * std::mem::size_of::<T>(),
            count: part,
            home: b.home,
        };
        Ok(Call::new::<T>(
            Kind::AllGather,
            Some(&own),
            Some(&b),
            part,
            0,
            0,
        ))
    }

    /// A reduce-scatter of every rank's `send` into each rank's `recv`: rank `i` gets the
    /// reduction of part `i`.
    pub(crate) fn reduce_scatter<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Span<'a>,
        op: ReduceOp<'_>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let (s, r) = (
            memory::<T>(comm, "send", send)?,
            memory::<T>(comm, "recv", recv)?,
        );
        parts_per_rank::<T>(comm, ("send", &s), ("recv", &r), "a reduce-scatter", false)?;
        let own = s.ptr + (comm.rank * r.bytes) as u64;
        apart_or_in_place(
            "recv",
            &s,
            &r,
            r.ptr == own,
            "recv is this rank's part of send: reduce_scatter_in_place",
        )?;
        let op = op.code_for(comm, T::DATA_TYPE)?;
        Ok(Call::new::<T>(
            Kind::ReduceScatter,
            Some(&s),
            Some(&r),
            r.count,
            op,
            0,
        ))
    }

    /// A reduce-scatter in place: `buf` holds every part, and this rank's part gets its
    /// reduction.
    pub(crate) fn reduce_scatter_in_place<T: Element>(
        comm: &Arc<CommInner>,
        buf: Span<'a>,
        op: ReduceOp<'_>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let b = memory::<T>(comm, "buf", buf)?;
        let part = parts::<T>(comm, &b)?;
        let own = Memory {
            ptr: b.ptr + (comm.rank * part * std::mem::size_of::<T>()) as u64,
            bytes: part * std::mem::size_of::<T>(),
            count: part,
            home: b.home,
        };
        let op = op.code_for(comm, T::DATA_TYPE)?;
        Ok(Call::new::<T>(
            Kind::ReduceScatter,
            Some(&b),
            Some(&own),
            part,
            op,
            0,
        ))
    }

    /// An all-to-all of `send`'s parts into `recv`'s: part `j` of `send` goes to rank `j`,
    /// part `i` of `recv` comes from rank `i`.
    pub(crate) fn all_to_all<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Span<'a>,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let (s, r) = (
            memory::<T>(comm, "send", send)?,
            memory::<T>(comm, "recv", recv)?,
        );
        same_count::<T>(&s, &r, "an all-to-all")?;
        let part = parts_of::<T>(comm, "send", &s)?;
        apart_or_in_place("recv", &s, &r, false, "none documented for an all-to-all")?;
        Ok(Call::new::<T>(
            Kind::AllToAll,
            Some(&s),
            Some(&r),
            part,
            0,
            0,
        ))
    }

    /// A gather of every rank's `send` into `root`'s `recv` (`None`: a rank other than the root,
    /// which receives nothing), rank `i`'s at part `i`.
    pub(crate) fn gather<T: Element>(
        comm: &Arc<CommInner>,
        send: Span<'a>,
        recv: Option<Span<'a>>,
        root: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let root_code = rank_of(comm, "root", root)?;
        let s = memory::<T>(comm, "send", send)?;
        let r = match recv {
            Some(recv) => {
                let r = memory::<T>(comm, "recv", recv)?;
                parts_per_rank::<T>(comm, ("recv", &r), ("send", &s), "a gather", true)?;
                // NCCL documents no in-place form of a gather: any overlap is refused.
                apart_or_in_place("recv", &s, &r, false, "none documented for a gather")?;
                Some(r)
            }
            None if root == comm.rank => {
                return Err(invalid(
                    "root",
                    format!(
                        "rank {root} is this rank, which receives the gather: give it a buffer \
                         (gather)"
                    ),
                ))
            }
            None => None,
        };
        Ok(Call::new::<T>(
            Kind::Gather,
            Some(&s),
            r.as_ref(),
            s.count,
            0,
            root_code,
        ))
    }

    /// A scatter of `root`'s `send` (`None`: a rank other than the root, which sends nothing)
    /// into every rank's `recv`, part `i` to rank `i`.
    pub(crate) fn scatter<T: Element>(
        comm: &Arc<CommInner>,
        send: Option<Span<'a>>,
        recv: Span<'a>,
        root: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let root_code = rank_of(comm, "root", root)?;
        let r = memory::<T>(comm, "recv", recv)?;
        let s = match send {
            Some(send) => {
                let s = memory::<T>(comm, "send", send)?;
                parts_per_rank::<T>(comm, ("send", &s), ("recv", &r), "a scatter", false)?;
                // NCCL documents no in-place form of a scatter: any overlap is refused.
                apart_or_in_place("recv", &s, &r, false, "none documented for a scatter")?;
                Some(s)
            }
            None if root == comm.rank => {
                return Err(invalid(
                    "root",
                    format!(
                        "rank {root} is this rank, which sends the scatter: give it a buffer \
                         (scatter)"
                    ),
                ))
            }
            None => None,
        };
        Ok(Call::new::<T>(
            Kind::Scatter,
            s.as_ref(),
            Some(&r),
            r.count,
            0,
            root_code,
        ))
    }

    /// A send of `buf` to `peer`.
    pub(crate) fn send<T: Element>(
        comm: &Arc<CommInner>,
        buf: Span<'a>,
        peer: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let peer = rank_of(comm, "peer", peer)?;
        let b = memory::<T>(comm, "buf", buf)?;
        Ok(Call::new::<T>(Kind::Send, Some(&b), None, b.count, 0, peer))
    }

    /// A receive into `buf` from `peer`.
    pub(crate) fn recv<T: Element>(
        comm: &Arc<CommInner>,
        buf: Span<'a>,
        peer: usize,
        stream: &Stream,
    ) -> Result<Call<'a>> {
        check_stream(comm, stream)?;
        let peer = rank_of(comm, "peer", peer)?;
        let b = memory::<T>(comm, "buf", buf)?;
        Ok(Call::new::<T>(Kind::Recv, None, Some(&b), b.count, 0, peer))
    }
}

/// The names of a call's two buffers in errors: the arguments', or `buf` for both in place.
fn names(send: Span<'_>, recv: Span<'_>) -> (&'static str, &'static str) {
    if send.ptr == recv.ptr && send.size == recv.size && std::ptr::eq(send.buffer, recv.buffer) {
        ("buf", "buf")
    } else {
        ("send", "recv")
    }
}

/// Refuses a receiving buffer of another count than the sending one's.
fn same_count<T: Element>(send: &Memory<'_>, recv: &Memory<'_>, what: &str) -> Result<()> {
    if send.count == recv.count {
        return Ok(());
    }
    Err(invalid(
        "recv",
        format!(
            "it holds {} {} values and send {}: {what} writes as many as it reads",
            recv.count,
            type_name::<T>(),
            send.count
        ),
    ))
}

/// The values of each rank's part of `buf`, which must split evenly among the ranks.
fn parts<T: Element>(comm: &CommInner, buf: &Memory<'_>) -> Result<usize> {
    parts_of::<T>(comm, "buf", buf)
}

/// [`parts`] of the argument `name`.
fn parts_of<T: Element>(comm: &CommInner, name: &'static str, buf: &Memory<'_>) -> Result<usize> {
    if buf.count % comm.size == 0 {
        return Ok(buf.count / comm.size);
    }
    Err(invalid(
        name,
        format!(
            "it holds {} {} values, which do not split evenly among {} ranks",
            buf.count,
            type_name::<T>(),
            comm.size
        ),
    ))
}

impl Communicator {
    /// Queues `call` on `stream` now, in its buffers' stream order, serialised with the
    /// communicator's other calls. The homes wait for the stream after the call whatever NCCL
    /// answered: a call that failed halfway may have queued work.
    pub(super) fn queue(&self, call: Call<'_>, stream: &Stream) -> Result<()> {
        refuse_in_group(call.name())?;
        let nccl = nccl()?;
        let inner = &self.inner;
        let mut calls = inner.lock();
        let handle = inner.live(&mut calls, nccl)?;
        let homes = call.homes(stream);
        crate::order::in_stream_order(&homes, stream, || {
            Ok(stream
                .queue_in_context(|_, raw| call.issue(nccl, handle, raw))
                .and_then(|progress| inner.settle(&mut calls, nccl, handle, progress)))
        })?
    }
}
