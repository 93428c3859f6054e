//! The collectives and point-to-point calls of a [`Communicator`] and of a [`Group`], written
//! once: each is one row of the `collectives!` table below, from which both faces are made. A
//! communicator's method checks its call ([`Call`]) and queues it at once; a group's checks
//! the same call, names its communicator, borrows what it uses for the group's life (`'g`) and
//! queues it at the group's end.

use super::collective::Call;
use super::communicator::Communicator;
use super::element::Element;
use super::group::Group;
use super::op::ReduceOp;
use crate::error::Result;
use crate::memory::slice::{CopyDestination, CopySource};
use crate::stream::Stream;

/// A parameter's type in each face, from the kind a row of `collectives!` gives it: what a
/// group's call uses is borrowed for `'g`.
macro_rules! param {
    (Communicator CopySource) => { impl CopySource };
    (Group CopySource) => { impl CopySource + 'g };
    (Communicator CopyDestination) => { impl CopyDestination };
    (Group CopyDestination) => { impl CopyDestination + 'g };
    (Communicator ReduceOp) => { ReduceOp<'_> };
    (Group ReduceOp) => { ReduceOp<'g> };
    ($face:ident usize) => { usize };
}

/// Writes every collective twice, as a [`Communicator`]'s method and as a [`Group`]'s, from one
/// table in which each is one row:
///
/// ```text
/// #[doc(alias = "ncclName")]
/// /// rustdoc of the communicator's method
/// fn name(param: Kind, ...)
///     => constructor(argument, ...);
/// ```
///
/// - `ncclName` is the NCCL function it calls, the alias of both methods.
/// - The rustdoc is the communicator's method's; the group's says it is that method, launched
///   at the group's end.
/// - Each `param: Kind` is a parameter after the communicator and before the stream, whose
///   `Kind` is `CopySource`, `CopyDestination` (buffers), `ReduceOp` or `usize` (roots and
///   peers); a group's buffers and operations are borrowed for `'g` (see `param!`).
/// - `constructor(argument, ...)` is the [`Call`] that checks it, `Call::constructor::<T>`,
///   given the communicator before the arguments and the stream after them.
///
/// Made for each row:
///
/// ```text
/// impl Communicator {
///     pub fn name<T: Element>(&self, param: Type, ..., stream: &Stream) -> Result<()>;
/// }
/// impl<'g> Group<'g> {
///     pub fn name<T: Element>(&mut self, comm: &'g Communicator, param: Type + 'g, ...,
///         stream: &Stream) -> Result<()>;
/// }
/// ```
macro_rules! collectives {
    ($(
        #[doc(alias = $alias:literal)]
        $(#[$doc:meta])*
        fn $name:ident($($param:ident: $kind:ident),*)
            => $constructor:ident($($arg:expr),*);
    )*) => {
        impl Communicator {
            $(
                $(#[$doc])*
                #[doc(alias = $alias)]
                pub fn $name<T: Element>(
                    &self,
                    $($param: param!(Communicator $kind),)*
                    stream: &Stream,
                ) -> Result<()> {
                    let call = Call::$constructor::<T>(&self.inner, $($arg,)* stream)?;
                    self.queue(call, stream)
                }
            )*
        }

        impl<'g> Group<'g> {
            $(
                #[doc = concat!("[`Communicator::", stringify!($name), "`], launched at the group's end.")]
                #[doc(alias = $alias)]
                pub fn $name<T: Element>(
                    &mut self,
                    comm: &'g Communicator,
                    $($param: param!(Group $kind),)*
                    stream: &Stream,
                ) -> Result<()> {
                    let call = Call::$constructor::<T>(&comm.inner, $($arg,)* stream)?;
                    self.add(comm, call, stream)
                }
            )*
        }
    };
}

collectives! {
    #[doc(alias = "ncclAllReduce")]
    /// Reduces every rank's `send` with `op` into every rank's `recv` (`ncclAllReduce`), on
    /// `stream`: both hold the same count of `T`, on this communicator's device. `send` and
    /// `recv` are buffers or slices of them (`&buffer`, `&mut buffer`, `&Arc<Buffer>`,
    /// `buffer.slice(..)?`, `&shared_slice`); the same memory as both works in place (see
    /// [`all_reduce_in_place`](Communicator::all_reduce_in_place)), other overlaps are refused.
    ///
    /// Every rank calls it with the same count, `T` and `op` (see the module's "What the ranks
    /// must agree on").
    ///
    /// ```no_run
    /// use cuda_core::nccl::{Communicator, ReduceOp};
    /// use cuda_core::{Allocate, Stream};
    ///
    /// fn sum(comm: &Communicator, stream: &Stream) -> cuda_core::Result<Vec<f32>> {
    ///     let memory = comm.device().memory_resource()?;
    ///     let mut local = memory.allocate(4 * 1024, stream)?;
    ///     local.copy_from_host(&vec![comm.rank() as f32; 1024], stream)?;
    ///     let mut total = memory.allocate(4 * 1024, stream)?;
    ///     comm.all_reduce::<f32>(&local, &mut total, ReduceOp::Sum, stream)?;
    ///     total.to_vec::<f32>(stream)
    /// }
    /// ```
    fn all_reduce(send: CopySource, recv: CopyDestination, op: ReduceOp)
        => all_reduce(send.span(), recv.span(), op);

    #[doc(alias = "ncclAllReduce")]
    /// [`all_reduce`](Communicator::all_reduce) in place: `buf` holds this rank's values, then
    /// the reduction.
    fn all_reduce_in_place(buf: CopyDestination, op: ReduceOp)
        => all_reduce(buf.span(), buf.span(), op);

    #[doc(alias = "ncclBroadcast")]
    /// Copies `root`'s `send` into every rank's `recv` (`ncclBroadcast`); both hold the same
    /// count of `T`. NCCL reads `send` on the root only; the other ranks may use
    /// [`broadcast_in_place`](Communicator::broadcast_in_place).
    fn broadcast(send: CopySource, recv: CopyDestination, root: usize)
        => broadcast(send.span(), recv.span(), root);

    #[doc(alias = "ncclBroadcast")]
    /// [`broadcast`](Communicator::broadcast) in place: `buf` holds the root's values on the
    /// root, and receives them on the other ranks.
    fn broadcast_in_place(buf: CopyDestination, root: usize)
        => broadcast(buf.span(), buf.span(), root);

    #[doc(alias = "ncclReduce")]
    /// Reduces every rank's `send` with `op` into `root`'s `recv` (`ncclReduce`); both hold
    /// the same count of `T`. A rank other than the root may call
    /// [`reduce_to_root`](Communicator::reduce_to_root) instead, with no `recv`.
    fn reduce(send: CopySource, recv: CopyDestination, op: ReduceOp, root: usize)
        => reduce(send.span(), Some(recv.span()), op, root);

    #[doc(alias = "ncclReduce")]
    /// [`reduce`](Communicator::reduce) in place: `buf` holds this rank's values, then (on the
    /// root) the reduction.
    fn reduce_in_place(buf: CopyDestination, op: ReduceOp, root: usize)
        => reduce(buf.span(), Some(buf.span()), op, root);

    #[doc(alias = "ncclReduce")]
    /// [`reduce`](Communicator::reduce) on a rank other than the root: it sends its values and
    /// receives nothing (refused on the root).
    fn reduce_to_root(send: CopySource, op: ReduceOp, root: usize)
        => reduce(send.span(), None, op, root);

    #[doc(alias = "ncclAllGather")]
    /// Gathers every rank's `send` into every rank's `recv` (`ncclAllGather`): `recv` holds
    /// `size()` times `send`'s count, rank `i`'s values from element `i × count`. `send` may be
    /// this rank's part of `recv` (in place: see
    /// [`all_gather_in_place`](Communicator::all_gather_in_place)).
    fn all_gather(send: CopySource, recv: CopyDestination)
        => all_gather(send.span(), recv.span());

    #[doc(alias = "ncclAllGather")]
    /// [`all_gather`](Communicator::all_gather) in place: `buf` holds `size()` equal parts, and
    /// this rank's values in part `rank()`; every part is filled.
    fn all_gather_in_place(buf: CopyDestination)
        => all_gather_in_place(buf.span());

    #[doc(alias = "ncclReduceScatter")]
    /// Reduces every rank's `send` with `op` and leaves part `i` of the result in rank `i`'s
    /// `recv` (`ncclReduceScatter`): `send` holds `size()` times `recv`'s count. `recv` may be
    /// this rank's part of `send` (in place: see
    /// [`reduce_scatter_in_place`](Communicator::reduce_scatter_in_place)).
    fn reduce_scatter(send: CopySource, recv: CopyDestination, op: ReduceOp)
        => reduce_scatter(send.span(), recv.span(), op);

    #[doc(alias = "ncclReduceScatter")]
    /// [`reduce_scatter`](Communicator::reduce_scatter) in place: `buf` holds `size()` equal
    /// parts; part `rank()` gets its reduction.
    fn reduce_scatter_in_place(buf: CopyDestination, op: ReduceOp)
        => reduce_scatter_in_place(buf.span(), op);

    #[doc(alias = "ncclAlltoAll")]
    /// Exchanges a part with every rank (`ncclAlltoAll`, NCCL 2.28 and newer): `send` and
    /// `recv` hold the same count of `T`, `size()` equal parts each; part `j` of `send` goes to
    /// rank `j`, and part `i` of `recv` comes from rank `i`. The two may not overlap (NCCL
    /// documents no in-place form of it).
    fn all_to_all(send: CopySource, recv: CopyDestination)
        => all_to_all(send.span(), recv.span());

    #[doc(alias = "ncclGather")]
    /// Gathers every rank's `send` into `root`'s `recv` (`ncclGather`, NCCL 2.28 and newer):
    /// `recv` holds `size()` times `send`'s count, rank `i`'s values from element
    /// `i × count`; the two may not overlap (NCCL documents no in-place form of it). A rank
    /// other than the root may call [`gather_to_root`](Communicator::gather_to_root) instead,
    /// with no `recv`.
    fn gather(send: CopySource, recv: CopyDestination, root: usize)
        => gather(send.span(), Some(recv.span()), root);

    #[doc(alias = "ncclGather")]
    /// [`gather`](Communicator::gather) on a rank other than the root: it sends its values and
    /// receives nothing (refused on the root).
    fn gather_to_root(send: CopySource, root: usize)
        => gather(send.span(), None, root);

    #[doc(alias = "ncclScatter")]
    /// Scatters `root`'s `send` to every rank's `recv` (`ncclScatter`, NCCL 2.28 and newer):
    /// `send` holds `size()` times `recv`'s count, and rank `i` gets part `i`; the two may not
    /// overlap (NCCL documents no in-place form of it). A rank other than the root may call
    /// [`scatter_from_root`](Communicator::scatter_from_root) instead, with no `send`.
    fn scatter(send: CopySource, recv: CopyDestination, root: usize)
        => scatter(Some(send.span()), recv.span(), root);

    #[doc(alias = "ncclScatter")]
    /// [`scatter`](Communicator::scatter) on a rank other than the root: it receives its part
    /// and sends nothing (refused on the root).
    fn scatter_from_root(recv: CopyDestination, root: usize)
        => scatter(None, recv.span(), root);

    #[doc(alias = "ncclSend")]
    /// Sends `buf` to rank `peer` (`ncclSend`), which receives the same count of `T`
    /// ([`recv`](Communicator::recv)). A send and its receive block each other's stream until
    /// both run: exchanges between two ranks go in one [`group`](super::group).
    fn send(buf: CopySource, peer: usize)
        => send(buf.span(), peer);

    #[doc(alias = "ncclRecv")]
    /// Receives into `buf` from rank `peer` (`ncclRecv`), which sends the same count of `T`.
    fn recv(buf: CopyDestination, peer: usize)
        => recv(buf.span(), peer);
}
