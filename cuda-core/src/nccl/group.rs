//! [`group`]: NCCL calls queued together and launched at the group's end (`ncclGroupStart`,
//! `ncclGroupEnd`), as a scope that cannot be left open.

use std::marker::PhantomData;
use std::sync::MutexGuard;

use super::collective::Call;
use super::communicator::{
    group_open, poll, run_deferred, set_group_open, Calls, CommInner, Communicator,
};
use crate::driver::nccl::{nccl, CommHandle, Nccl, Progress};
use crate::error::{Error, Result};
use crate::stream::Stream;

/// Runs `body`, whose NCCL calls ([`Group`]'s methods) are launched together when it returns
/// (`ncclGroupStart`, then `ncclGroupEnd`): one thread driving several communicators (one per
/// device of [`Communicator::init_all`]), sends and receives that must progress together, or
/// several collectives fused into one launch.
///
/// The group cannot be left open: it ends when `body` returns, with an error too (the calls
/// queued before it are launched all the same: NCCL cannot take them back), and when it
/// panics. What the calls name is borrowed until then (the `'g` of [`Group`]), so no buffer
/// they use can be freed, nor a custom operation destroyed, before its work is queued; a
/// buffer made inside `body` cannot be given to a call:
///
/// ```compile_fail,E0597
/// use cuda_core::nccl::{group, Communicator, ReduceOp};
/// use cuda_core::{Allocate, Stream};
///
/// fn leaks(comm: &Communicator, stream: &Stream) -> cuda_core::Result<()> {
///     group(|g| {
///         let temporary = comm.device().memory_resource()?.allocate(1024, stream)?;
///         // Freed before the group's end would launch the work: refused by the compiler.
///         g.all_reduce_in_place::<f32>(comm, &temporary, ReduceOp::Sum, stream)
///     })
/// }
/// ```
///
/// While it is open, the communicators it queued on are held by it (another thread's calls on
/// them wait for its end), this thread's calls outside it (a communicator's own
/// `all_reduce`, `split`, `finalize`, another `group`) are refused, and what is dropped
/// meanwhile (a communicator, a custom operation, a registration) is released at its end.
/// Two threads that group the same communicators in opposite orders wait for each other.
///
/// Each call is ordered with its buffers' deallocation streams at the end, as a kernel's
/// arguments are: just before NCCL queues it, its stream waits for the work queued on theirs,
/// the work `body` queued there included (a write of a send buffer through `&Arc<Buffer>` on
/// its own stream comes before the collective), and theirs wait for it after.
///
/// ```no_run
/// use cuda_core::nccl::{group, Communicator, ReduceOp};
/// use cuda_core::{Allocate, Device, StreamOptions};
///
/// // One thread, every device: rank i on device i.
/// let devices = Device::all()?;
/// let comms = Communicator::init_all(&devices)?;
/// let streams = devices
///     .iter()
///     .map(|d| d.create_stream(StreamOptions::default()))
///     .collect::<Result<Vec<_>, _>>()?;
/// let mut buffers = Vec::new();
/// for (device, stream) in devices.iter().zip(&streams) {
///     let mut buffer = device.memory_resource()?.allocate(4 << 20, stream)?;
///     buffer.fill(0x3f80_0000u32, stream)?; // 1.0f32
///     buffers.push(buffer);
/// }
/// group(|g| {
///     for ((comm, buffer), stream) in comms.iter().zip(&mut buffers).zip(&streams) {
///         g.all_reduce_in_place::<f32>(comm, buffer, ReduceOp::Sum, stream)?;
///     }
///     Ok(())
/// })?;
/// let sums = buffers[0].to_vec::<f32>(&streams[0])?;
/// assert!(sums.iter().all(|&x| x == devices.len() as f32));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias("ncclGroupStart", "ncclGroupEnd"))]
pub fn group<'g, R>(body: impl FnOnce(&mut Group<'g>) -> Result<R>) -> Result<R> {
    if group_open() {
        return Err(Error::InvalidArgument {
            name: "body",
            reason: "a group is already open on this thread: the calls of one inside it would \
                     be launched only at the outer one's end, after what they borrowed was \
                     given back"
                .to_owned(),
        });
    }
    let nccl = nccl()?;
    nccl.group_start()?;
    set_group_open(true);
    let mut open = Open {
        group: Group {
            nccl,
            held: Vec::new(),
            after: Vec::new(),
            _invariant: PhantomData,
        },
        ended: false,
    };
    let value = body(&mut open.group);
    let ended = open.end();
    let value = value?;
    ended.map(|()| value)
}

/// The calls of an open [`group`], each queued by NCCL when the group ends. Its methods are
/// a [`Communicator`]'s collectives, each naming its communicator, with what they use borrowed
/// for `'g`, the group's whole life.
pub struct Group<'g> {
    nccl: &'static Nccl,
    /// The communicators the group queued on, locked until its end.
    held: Vec<Held<'g>>,
    /// Each call's stream and the streams its memory is ordered on: at the end, the stream
    /// waits for them before NCCL queues the call, and they wait for it after.
    after: Vec<(Stream, [Stream; 2])>,
    /// `'g` may neither shrink nor grow: what is borrowed for it outlives the group's end.
    _invariant: PhantomData<fn(&'g ()) -> &'g ()>,
}

/// A communicator held by a group.
struct Held<'g> {
    comm: &'g CommInner,
    calls: MutexGuard<'g, Calls>,
    handle: CommHandle,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("communicators", &self.held.len())
            .field("calls", &self.after.len())
            .finish()
    }
}

/// The group while it is open: ends it when dropped (a panic in the body), if nothing has.
struct Open<'g> {
    group: Group<'g>,
    ended: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.ended {
            if let Err(e) = self.end() {
                log::error!("ending an NCCL group left by a panic: {e}");
            }
        }
    }
}

impl Open<'_> {
    /// Through the door of every call's memory streams (so no other thread's ordering on them
    /// comes between): each call's stream waits for its homes' work so far, which includes
    /// what the body queued on them (NCCL queues the calls only now); then `ncclGroupEnd`
    /// (with the first communicator's context current: NCCL switches devices and restores the
    /// one it found), then, on a non-blocking communicator, the wait for NCCL to launch the
    /// calls; then each call's homes wait for its stream (whatever NCCL answered: what it took
    /// may be queued), the communicators are let go, and what was dropped meanwhile is
    /// released.
    fn end(&mut self) -> Result<()> {
        self.ended = true;
        let group = &mut self.group;
        let nccl = group.nccl;
        let every_stream: Vec<&Stream> = group
            .after
            .iter()
            .flat_map(|(stream, homes)| std::iter::once(stream).chain(homes))
            .collect();
        let door = crate::order::Door::enter(&every_stream);
        let mut before = Ok(());
        for (stream, homes) in &group.after {
            let homes = [&homes[0], &homes[1]];
            if let Err(e) = crate::order::order_after_homes(&homes, stream) {
                // NCCL queues the call all the same: wait for the homes' work on the host
                // instead, so that the call cannot overtake it.
                log::warn!("ordering an NCCL call after its buffers' streams failed ({e}); waiting for them instead");
                for home in homes {
                    if let Err(e) = home.sync() {
                        before = before.and(Err(e));
                    }
                }
            }
        }
        let ended = match group.held.first() {
            Some(first) => first.comm.context.with_current(|_| nccl.group_end()),
            None => nccl.group_end(),
        };
        set_group_open(false);
        let mut result = ended.and_then(|progress| match progress {
            Progress::Done => Ok(()),
            Progress::InProgress => group.settle(),
        });
        for (stream, homes) in &group.after {
            let homes = [&homes[0], &homes[1]];
            if let Err(e) = crate::order::order_homes_after(&homes, stream) {
                result = result.and(Err(e));
            }
        }
        drop(door);
        group.after.clear();
        group.held.clear();
        result = before.and(result);
        run_deferred();
        result
    }
}

impl<'g> Group<'g> {
    /// Waits for NCCL to launch a non-blocking group's calls on each communicator, within its
    /// timeout; one past it is aborted (its calls are not launched).
    fn settle(&mut self) -> Result<()> {
        let nccl = self.nccl;
        let mut result = Ok(());
        for held in &mut self.held {
            let timeout = held.comm.timeout();
            match poll(nccl, held.handle, timeout) {
                Ok(true) => {}
                Ok(false) => {
                    if let Err(e) = held.comm.abort_locked(&mut held.calls, nccl) {
                        log::error!("aborting a communicator whose group timed out: {e}");
                    }
                    result = result.and(Err(Error::Timeout {
                        what: "NCCL's launch of a group on a non-blocking communicator (which \
                               was aborted)",
                        after: timeout.unwrap_or(std::time::Duration::MAX),
                    }));
                }
                Err(e) => result = result.and(Err(e)),
            }
        }
        result
    }

    /// Holds `comm` for the group (once), and gives its handle.
    fn hold(&mut self, comm: &'g Communicator) -> Result<CommHandle> {
        let inner: &'g CommInner = &comm.inner;
        if let Some(held) = self.held.iter().find(|h| std::ptr::eq(h.comm, inner)) {
            return Ok(held.handle);
        }
        let mut calls = inner.lock();
        let handle = inner.live(&mut calls, self.nccl)?;
        self.held.push(Held {
            comm: inner,
            calls,
            handle,
        });
        Ok(handle)
    }

    /// Puts `call` in NCCL's group, to be ordered with its memory's streams at the end (see
    /// [`Open::end`]): its stream waits for them just before NCCL queues it, and they wait for
    /// it after. Refused now where a memory's stream captures and `stream` does not.
    pub(super) fn add(
        &mut self,
        comm: &'g Communicator,
        call: Call<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let handle = self.hold(comm)?;
        let homes = call.homes(stream);
        if !stream.capturing() {
            crate::order::check_homes(&homes, stream)?;
        }
        let nccl = self.nccl;
        let result = stream.queue_in_context(|_, raw| call.issue(nccl, handle, raw));
        self.after
            .push((stream.clone(), [homes[0].clone(), homes[1].clone()]));
        result.map(|_| ())
    }
}
