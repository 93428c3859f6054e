//! A model-based test of the stream-order and capture contract: generated programs of a few
//! threads run streams, events, buffers, captures, graphs and host functions through cuda-core
//! against the stand-in driver in its strict model (`STANDIN_MODEL=1`, described in
//! `tests/standin/libcuda_standin.c`), and the driver calls they make are checked, over the
//! stand-in's log, against invariants that safe code relies on (README, "What safe code can
//! rely on"). Library calls may fail where the contract lets them refuse; they must not panic,
//! and the invariants must hold.
//!
//! A program is 2 to 4 threads and 3 to 6 stream slots, and a list of operations, each on one
//! thread (after a prelude that fills the slots): streams and events made (blocking or not,
//! timing or not; or the legacy default stream, or the thread's per-thread default stream,
//! which other threads then use too) and dropped (so recycled), records, waits,
//! stream-to-stream waits (forks and joins of captures), queries and synchronisations, and
//! their timed forms (`sync_timeout`, `wait_timeout`, `to_vec_timeout`) and futures
//! (`Stream::completion`, `Event::completion`, polled with a waker that does nothing); buffers
//! allocated (small ones, which streams keep, and large ones; vectors registered as buffers,
//! `Buffer::from_host_vec`, and given back; buffers of a pinned pool, whose access is revoked
//! and granted again; buffers over imported external memory, `ExternalMemory::buffer`), filled
//! and copied (through `&mut`, and through shared handles:
//! `&Arc<Buffer>` and `SharedSlice`), passed to a kernel (each whole or as a slice of bytes
//! 64..128; a kernel's buffer as an `Arc<Buffer>`), read back to the host and re-homed on
//! other streams, read by host functions (`launch_host_func_reading`), and dropped; captures
//! begun in each mode and ended (from the thread that began them or another); host functions,
//! and host functions that hold their stream until a later operation lets them go; graphs
//! built node by node (an empty node, a fill of a buffer, a copy between two, a host node), a
//! node removed, instantiated, launched, dropped while a launch is queued; captured graphs
//! instantiated and launched; a replayable region (`Replay`) run with one or two launches over
//! a buffer or a slice of it (built, updated in place, rebuilt, on any stream; some runs with
//! every launch `launch_unchanged`); with the `nccl` feature, groups of the stand-in NCCL (an
//! all-reduce of one rank, and a write of its send buffer in the group's body); signals and
//! waits of an imported timeline semaphore (`Stream::signal_semaphore`, `wait_semaphore`). The
//! stand-in's model counts a kernel node's first argument as used by each launch of its graph,
//! as it counts a launch's, and follows `cuGraphExecKernelNodeSetParams`.
//!
//! The threads interleave between driver calls, deterministically. One baton passes among
//! them ([`Baton`]): operations start in program order, each on its thread, and at each driver
//! call (the stand-in's yield hook) the thread holding the baton takes its operation's next
//! decision from the program's schedule: go on, or hand the baton to a thread paused at a
//! driver call, or start the next operation. So the steps of two threads' operations
//! interleave as the schedule says, and a failing program, schedule and all, replays and
//! shrinks. A thread that stops between two driver calls (on a lock another thread holds
//! inside cuda-core while paused, or in a host function held for a later operation) is taken
//! for blocked once the kernel says it has slept for 2 ms (a running one after 100 ms), and
//! the baton goes on without it; that is the one place where time can change a schedule (a
//! thread that sleeps that long between two driver calls for another reason is taken for
//! blocked too, and then runs alongside the baton's holder until its next driver call; and the
//! crate's release thread always runs alongside). Where every running thread is blocked (one
//! waits for a capture that a later operation of another busy thread would end), held host
//! functions are let go, then the program's captures are ended from the watching thread. By
//! default a capture's begin or end overlaps no other operation on its stream, nor a global
//! capture's begin any other operation. `CUDA_CORE_MODEL_RACES=1` lets the schedule reach
//! those too: the six races it found there are fixed (the `model_race_*` tests), and what it
//! can still reach is a global capture begun while another thread's plain query or
//! synchronisation (`is_done`, `sync`; timed waits and futures ask relaxed always), made in
//! that thread's own mode because no capture was open when it looked, is under way
//! (the driver then invalidates the new capture; the crate does not order every query with
//! every begin, which would cost each query two contended atomic operations).
//!
//! Checked after every program (each check names the bug it catches):
//! - no call on a handle or address that is not live (the stand-in's `!stale`), nor a use of
//!   a pinned pool's memory by a device without access to it (`!noaccess`: a graph launched
//!   after the access was revoked);
//! - no call that an open capture forbids, unless the operation asked for that very call (a
//!   synchronisation or query the test made, say, which the driver may refuse and which then
//!   invalidates the capture: the test asked for it): cuda-core must never make such a call on
//!   its own (`!refused`), nor put a buffer's allocation or free into a capture (`!captured`;
//!   a host function of `launch_host_func`, which runs once, put into one would never run,
//!   which the count below catches; `launch_host_func_repeatable` makes a host node there, as
//!   the driver does). A timed wait's or a future's questions are the crate's own: refused
//!   for another thread's capture, they are a finding; legacy-stream work that reaches the
//!   driver while a blocking stream captures is one too (the crate refuses it before the
//!   driver). Work refused on a stream whose capture is invalidated already (901) is not
//!   counted: that capture is broken already, and the error is returned;
//! - nothing refused that the contract allows: work over a buffer of another stream refused as
//!   a capture's (`Error::Capture`) while neither stream captures;
//! - no failing driver call the operation did not ask for (the README's "no failing driver
//!   call of its own"; the cleanup's own ends of captures, and those of streams' drops,
//!   excepted);
//! - every use of a buffer's memory (fills, copies, kernels, graph launches, collectives) is
//!   ordered after its allocation and before its free, in stream order (records, waits and
//!   host synchronisations, as vector clocks over the log); a registered vector's
//!   unregistration, a synchronous free, after every use as the host knows it;
//! - a host function's read of memory is ordered, one way or the other, with every write of
//!   that memory any operation queued; a collective's send buffer with every write its group's
//!   body queued;
//! - every timed wait returns by its deadline (and 200 ms), and never waits for a host
//!   function held since before it began;
//! - a stream or event handed out (new or recycled) is idle: no work pending, not in a capture;
//! - no two live buffers share an address;
//! - every host function ran as often as the API promises (once per accepted
//!   `launch_host_func`, once per graph launch for a host node);
//! - nothing leaked: once everything is dropped and the program's threads have ended (their
//!   recycled handles destroyed), no stream, event, graph, executable graph, allocation (one
//!   of another thread's per-thread stream, say), user object, queued host work or capture
//!   lives;
//! - once no capture is open, recycling queries again (the crate's count of open captures went
//!   back to zero).
//!
//! What it does not cover: interleavings inside one driver call, or between the crate's calls
//! that are not the driver's (its own locks and atomics: only where they surround driver calls
//! does the schedule reach them), and the crate's release thread, which runs alongside (it is
//! waited for after each operation); what kernels do (the stand-in runs none: a launch is a
//! use of its first argument, the caller's to order); copies from host memory, pools other
//! than the device's default and one pinned pool, managed and virtual memory, several devices,
//! green contexts, conditional nodes, graph updates, clones and child graphs, event nodes and
//! captured allocations (`capture_alloc`); NCCL beyond one rank's all-reduce; the legacy
//! stream's implicit order with blocking streams (the order check knows only explicit waits
//! and synchronisations); the driver's asynchrony beyond host functions (work completes at
//! once, host functions run only at a synchronisation); and what the driver does where its
//! documentation is silent (the stand-in states its assumptions: a model that differs from
//! the driver can hide a bug or invent one). The buffers and events a capture used are kept to
//! the program's end, as `begin_capture`'s safety contract asks, so its violations are not
//! tried; nor is a capture begun, or joined, while another operation allocates, frees or
//! queues host work on that stream (see `claim`); streams a graph's buffers may hold are kept
//! too (see `drop_stream`). Each finding is a regression test at the end of the file (those
//! of the library's open findings ignored until they are fixed).
//!
//! A run is slices of programs (see `slices`): the whole mix, then the family of operations each
//! of the soundness review's findings needs (`w1` to `w9`; `c`: work across streams during
//! captures), the rarest with the most programs, then `g` (`capture_into` with captures and
//! graphs) and `x` (imported memory and semaphores with buffers and host functions): 12,200 in
//! all (12,700 with `nccl`). The
//! programs come from a fixed seed (the same ones on every run); explore others with
//! `CUDA_CORE_MODEL_SEED`; run another number with `CUDA_CORE_MODEL_CASES`, or one family alone
//! with `CUDA_CORE_MODEL_ONLY` (`all` for the whole mix); count failures by kind instead of
//! stopping at the first with `CUDA_CORE_MODEL_TALLY=1`; and count what the programs reached
//! with `CUDA_CORE_MODEL_STATS=1`; a program whose threads are stuck keeps its process alive
//! for ten minutes, for a debugger, with `CUDA_CORE_MODEL_STUCK_WAIT=1`. A failing program is shrunk, then minimised step by step
//! (the prelude's too), and printed as a regression test's `replay` takes it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use cuda_core::interop::{ExternalMemory, ExternalSemaphore, SemaphoreKind};
use cuda_core::memory::{PinnedMemoryPool, PinnedMemoryPoolOptions};
use cuda_core::{
    Buffer, BuildGraph, CaptureMode, Device, Error, Event, EventOptions, Graph, GraphExec,
    GraphOptions, Stream, StreamCompletion, StreamOptions,
};

use crate::common::standin;

/// Slots of each kind a program names (indices are taken modulo the count).
const EVENTS: usize = 6;
const BUFFERS: usize = 6;
const GRAPHS: usize = 3;

/// One operation of a program.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    NewStream {
        s: usize,
        blocking: bool,
    },
    DropStream {
        s: usize,
    },
    Legacy {
        s: usize,
    },
    /// The calling thread's per-thread default stream (`Stream::per_thread_default`), put in
    /// slot `s`: other threads' operations use it too (refused there, but for drops).
    PerThread {
        s: usize,
    },
    NewEvent {
        e: usize,
        timing: bool,
    },
    DropEvent {
        e: usize,
    },
    Record {
        e: usize,
        s: usize,
    },
    Wait {
        s: usize,
        e: usize,
    },
    WaitStream {
        s: usize,
        other: usize,
    },
    QueryEvent {
        e: usize,
    },
    SyncEvent {
        e: usize,
    },
    QueryStream {
        s: usize,
    },
    SyncStream {
        s: usize,
    },
    /// `Stream::sync_timeout` with a deadline of `ms` milliseconds.
    SyncTimeout {
        s: usize,
        ms: u64,
    },
    /// `Event::wait_timeout` with a deadline of `ms` milliseconds.
    WaitTimeout {
        e: usize,
        ms: u64,
    },
    /// `Buffer::to_vec_timeout` on stream `s` with a deadline of `ms` milliseconds.
    ToVecTimeout {
        b: usize,
        s: usize,
        ms: u64,
    },
    /// A `StreamCompletion` of stream `s` made and polled once, then kept; with `again`, a
    /// kept one (the `s`-th, modulo their number) polled once more instead.
    PollStream {
        s: usize,
        again: bool,
    },
    /// An `EventCompletion` polled `polls` times (with a waker that does nothing).
    PollEvent {
        e: usize,
        polls: u8,
    },
    Alloc {
        b: usize,
        s: usize,
        large: bool,
    },
    /// A vector registered as a buffer (`Buffer::from_host_vec`), freed on stream `s`.
    AllocHost {
        b: usize,
        s: usize,
    },
    /// A buffer over the program's imported external memory (`ExternalMemory::buffer`, the
    /// import made on first use), freed on stream `s`.
    AllocExternal {
        b: usize,
        s: usize,
    },
    /// A signal (or with `wait`, a wait) of the program's imported timeline semaphore
    /// (`Stream::signal_semaphore`, `Stream::wait_semaphore`) on stream `s`, at the next value.
    Semaphore {
        s: usize,
        wait: bool,
    },
    /// A buffer of the program's pinned memory pool (`PinnedMemoryPool`, made on first use).
    PoolAlloc {
        b: usize,
        s: usize,
    },
    /// The pinned pool's access granted to the device again, or revoked from every device
    /// (`PinnedMemoryPool::set_access`).
    PoolAccess {
        grant: bool,
    },
    /// A registered vector given back (`Buffer::into_host_vec`); refused for other buffers,
    /// and not tried for one that graphs or captures share.
    GiveBack {
        b: usize,
    },
    /// A host function reading a buffer (`Stream::launch_host_func_reading`): refused but for
    /// host memory of this process (the registered vectors here), and on capturing streams.
    /// (Not tried on the pinned pool's buffers: the stand-in's addresses are no host memory.)
    HostRead {
        b: usize,
        s: usize,
    },
    DropBuffer {
        b: usize,
    },
    /// With `part`, of a slice of the buffer (bytes 64..128) rather than the whole.
    Fill {
        b: usize,
        s: usize,
        part: bool,
    },
    /// A fill of the whole buffer on its own deallocation stream.
    FillOnHome {
        b: usize,
    },
    /// A fill through a shared handle: `Buffer::shared_slice`'s `fill` (of the whole, or of
    /// bytes 64..128).
    SharedFill {
        b: usize,
        s: usize,
        part: bool,
    },
    Kernel {
        b: usize,
        s: usize,
        part: bool,
    },
    /// A replayable region's run of one or two launches of `k1` over the buffer (whole, or
    /// bytes 64..128): built, updated in place or rebuilt as the sequence and buffer change.
    /// With `unchanged`, the second launch is declared unchanged (`launch_unchanged`): kept
    /// as built where its buffer is the one the region's graph has, refused (nothing
    /// launched, in the debug builds the tests run) where it is not.
    Replay {
        b: usize,
        s: usize,
        part: bool,
        twice: bool,
        unchanged: bool,
    },
    /// A run of the same region whose every launch (one or two) is `launch_unchanged`.
    ReplayUnchanged {
        b: usize,
        s: usize,
        part: bool,
        twice: bool,
    },
    Copy {
        from: usize,
        to: usize,
        s: usize,
        part: bool,
    },
    /// A copy into a shared handle: into `&Arc<Buffer>` (`copy_to`), or with `part` into
    /// bytes 64..128 of it through `SharedSlice::copy_from`.
    SharedCopy {
        from: usize,
        to: usize,
        s: usize,
        part: bool,
    },
    ToHost {
        b: usize,
        s: usize,
    },
    SetHome {
        b: usize,
        s: usize,
    },
    Begin {
        s: usize,
        mode: u8,
    },
    End {
        s: usize,
    },
    /// `Stream::capture_into` graph slot `g` (built node by node, or captured) from stream
    /// `s`, of a fill of buffer `b` on it: a capture begun, recorded and ended in one
    /// operation, its graph added to slot `g`'s as a child graph node.
    CaptureInto {
        s: usize,
        g: usize,
        b: usize,
        mode: u8,
    },
    HostFunc {
        s: usize,
    },
    /// `launch_host_func_repeatable`: a host node where the stream captures.
    HostFuncRepeatable {
        s: usize,
    },
    /// A host function that blocks until a later `Release` (or the program's end) lets it go:
    /// work held on its stream for a while.
    HostBlock {
        s: usize,
    },
    /// Lets every blocked host function go.
    Release,
    BuildGraph {
        g: usize,
        fill: Option<usize>,
        host: bool,
    },
    /// A graph of one copy node, from buffer `from` to buffer `to`.
    BuildCopyGraph {
        g: usize,
        from: usize,
        to: usize,
    },
    RemoveNode {
        g: usize,
    },
    Instantiate {
        g: usize,
        x: usize,
    },
    Launch {
        x: usize,
        s: usize,
    },
    DropGraph {
        g: usize,
    },
    DropExec {
        x: usize,
    },
    /// An NCCL group (`nccl::group`, the stand-in NCCL, one rank) of an all-reduce from
    /// buffer `send` (through `&Arc<Buffer>`) into `recv` (taken `&mut`) on stream `s`; with
    /// `write`, the body then fills the send buffer through a `SharedSlice` on its own stream.
    #[cfg(feature = "nccl")]
    Nccl {
        send: usize,
        recv: usize,
        s: usize,
        write: bool,
    },
}

/// A program: its threads and stream slots, its operations (thread, operation), and its
/// schedule: for some operations (by index), the decisions taken at their driver calls (see
/// [`Baton`]).
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub threads: usize,
    pub streams: usize,
    pub steps: Vec<(usize, Op)>,
    pub schedule: Vec<(usize, Vec<u8>)>,
}

impl Program {
    /// The program without step `i` (its schedule's entries renumbered).
    fn without(&self, i: usize) -> Program {
        let mut steps = self.steps.clone();
        steps.remove(i);
        let schedule = self
            .schedule
            .iter()
            .filter(|(op, _)| *op != i)
            .map(|(op, d)| (if *op > i { op - 1 } else { *op }, d.clone()))
            .collect();
        Program {
            steps,
            schedule,
            ..self.clone()
        }
    }

    /// The program as Rust source, for a regression test (`rustfmt` lays it out).
    fn to_rust(&self) -> String {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(t, op)| format!("({t}, Op::{op:?})"))
            .collect();
        let schedule: Vec<String> = self
            .schedule
            .iter()
            .map(|(op, decisions)| format!("({op}, vec!{decisions:?})"))
            .collect();
        format!(
            "Program {{ threads: {}, streams: {}, steps: vec![{}], schedule: vec![{}] }}",
            self.threads,
            self.streams,
            steps.join(", "),
            schedule.join(", ")
        )
    }
}

/// The operations a program draws from, each with its weight in the full mix and the
/// families (`CUDA_CORE_MODEL_ONLY`) it belongs to: the ones a finding of the review needs.
fn op_strategies() -> Vec<(u32, &'static str, BoxedStrategy<Op>)> {
    let i = || 0usize..6;
    let ms = || prop_oneof![Just(0u64), Just(1u64), Just(3u64)];
    let mut all: Vec<(u32, &'static str, BoxedStrategy<Op>)> = vec![
        (
            3,
            "w1 w2 w3 w4 w7 w9 c",
            (i(), any::<bool>())
                .prop_map(|(s, b)| Op::NewStream {
                    s,
                    blocking: b && s == 5,
                })
                .boxed(),
        ),
        (1, "", i().prop_map(|s| Op::DropStream { s }).boxed()),
        (1, "", i().prop_map(|s| Op::Legacy { s }).boxed()),
        (1, "w5", i().prop_map(|s| Op::PerThread { s }).boxed()),
        (
            2,
            "w7",
            (i(), any::<bool>())
                .prop_map(|(e, timing)| Op::NewEvent { e, timing })
                .boxed(),
        ),
        (1, "", i().prop_map(|e| Op::DropEvent { e }).boxed()),
        (
            3,
            "w7",
            (i(), i()).prop_map(|(e, s)| Op::Record { e, s }).boxed(),
        ),
        (
            3,
            "",
            (i(), i()).prop_map(|(s, e)| Op::Wait { s, e }).boxed(),
        ),
        (
            5,
            "w1",
            (i(), i())
                .prop_map(|(s, other)| Op::WaitStream { s, other })
                .boxed(),
        ),
        (1, "", i().prop_map(|e| Op::QueryEvent { e }).boxed()),
        (1, "", i().prop_map(|e| Op::SyncEvent { e }).boxed()),
        (1, "", i().prop_map(|s| Op::QueryStream { s }).boxed()),
        (1, "w9", i().prop_map(|s| Op::SyncStream { s }).boxed()),
        (
            1,
            "w7 w9",
            (i(), ms())
                .prop_map(|(s, ms)| Op::SyncTimeout { s, ms })
                .boxed(),
        ),
        (
            1,
            "w7",
            (i(), ms())
                .prop_map(|(e, ms)| Op::WaitTimeout { e, ms })
                .boxed(),
        ),
        (
            1,
            "w7 w9",
            (i(), i(), ms())
                .prop_map(|(b, s, ms)| Op::ToVecTimeout { b, s, ms })
                .boxed(),
        ),
        (
            1,
            "w7",
            (i(), any::<bool>())
                .prop_map(|(s, again)| Op::PollStream { s, again })
                .boxed(),
        ),
        (
            1,
            "w7",
            (i(), 1u8..4)
                .prop_map(|(e, polls)| Op::PollEvent { e, polls })
                .boxed(),
        ),
        (
            3,
            "w2 w3 w5 w9 c",
            (i(), i(), any::<bool>())
                .prop_map(|(b, s, large)| Op::Alloc { b, s, large })
                .boxed(),
        ),
        (
            1,
            "w1",
            (i(), i()).prop_map(|(b, s)| Op::AllocHost { b, s }).boxed(),
        ),
        (
            1,
            "x",
            (i(), i())
                .prop_map(|(b, s)| Op::AllocExternal { b, s })
                .boxed(),
        ),
        (
            2,
            "x",
            (i(), any::<bool>())
                .prop_map(|(s, wait)| Op::Semaphore { s, wait })
                .boxed(),
        ),
        (
            1,
            "w4",
            (i(), i()).prop_map(|(b, s)| Op::PoolAlloc { b, s }).boxed(),
        ),
        (
            1,
            "w4",
            any::<bool>()
                .prop_map(|grant| Op::PoolAccess { grant })
                .boxed(),
        ),
        (1, "", i().prop_map(|b| Op::GiveBack { b }).boxed()),
        (
            2,
            "w1",
            (i(), i()).prop_map(|(b, s)| Op::HostRead { b, s }).boxed(),
        ),
        (2, "w2 w5", i().prop_map(|b| Op::DropBuffer { b }).boxed()),
        (
            4,
            "w4 c",
            (i(), i(), any::<bool>())
                .prop_map(|(b, s, part)| Op::Fill { b, s, part })
                .boxed(),
        ),
        (
            2,
            "w1",
            (i(), i(), any::<bool>())
                .prop_map(|(b, s, part)| Op::SharedFill { b, s, part })
                .boxed(),
        ),
        (
            3,
            "c",
            (i(), i(), i(), any::<bool>())
                .prop_map(|(from, to, s, part)| Op::Copy { from, to, s, part })
                .boxed(),
        ),
        (
            1,
            "w1",
            (i(), i(), i(), any::<bool>())
                .prop_map(|(from, to, s, part)| Op::SharedCopy { from, to, s, part })
                .boxed(),
        ),
        (
            2,
            "c",
            (i(), i(), any::<bool>())
                .prop_map(|(b, s, part)| Op::Kernel { b, s, part })
                .boxed(),
        ),
        (
            2,
            "w2",
            (i(), i(), any::<bool>(), 0u8..3)
                .prop_map(|(b, s, part, launches)| Op::Replay {
                    b,
                    s,
                    part,
                    twice: launches > 0,
                    unchanged: launches == 2,
                })
                .boxed(),
        ),
        (
            1,
            "w2",
            (i(), i(), any::<bool>(), any::<bool>())
                .prop_map(|(b, s, part, twice)| Op::ReplayUnchanged { b, s, part, twice })
                .boxed(),
        ),
        (
            1,
            "w9",
            (i(), i()).prop_map(|(b, s)| Op::ToHost { b, s }).boxed(),
        ),
        (
            1,
            "",
            (i(), i()).prop_map(|(b, s)| Op::SetHome { b, s }).boxed(),
        ),
        (
            3,
            "w5 w7 c",
            (i(), 0u8..3)
                .prop_map(|(s, mode)| Op::Begin { s, mode })
                .boxed(),
        ),
        (3, "w5 w7 c", i().prop_map(|s| Op::End { s }).boxed()),
        (
            3,
            "g",
            (i(), 0..GRAPHS, i(), 0u8..3)
                .prop_map(|(s, g, b, mode)| Op::CaptureInto { s, g, b, mode })
                .boxed(),
        ),
        (2, "w9", i().prop_map(|s| Op::HostFunc { s }).boxed()),
        (
            1,
            "",
            i().prop_map(|s| Op::HostFuncRepeatable { s }).boxed(),
        ),
        (1, "w9", i().prop_map(|s| Op::HostBlock { s }).boxed()),
        (1, "w9", Just(Op::Release).boxed()),
        (
            2,
            "w4",
            (0..GRAPHS, proptest::option::of(i()), any::<bool>())
                .prop_map(|(g, fill, host)| Op::BuildGraph { g, fill, host })
                .boxed(),
        ),
        (
            1,
            "w4",
            (0..GRAPHS, i(), i())
                .prop_map(|(g, from, to)| Op::BuildCopyGraph { g, from, to })
                .boxed(),
        ),
        (
            1,
            "",
            (0..GRAPHS).prop_map(|g| Op::RemoveNode { g }).boxed(),
        ),
        (
            3,
            "w4",
            (0..GRAPHS, 0..GRAPHS)
                .prop_map(|(g, x)| Op::Instantiate { g, x })
                .boxed(),
        ),
        (
            3,
            "w4",
            (0..GRAPHS, i())
                .prop_map(|(x, s)| Op::Launch { x, s })
                .boxed(),
        ),
        (1, "", (0..GRAPHS).prop_map(|g| Op::DropGraph { g }).boxed()),
        (1, "", (0..GRAPHS).prop_map(|x| Op::DropExec { x }).boxed()),
    ];
    // W6's family: captures of non-blocking streams, which slot 5's blocking stream joins
    // (`WaitStream`), beside work on the legacy stream (put in slots by `Legacy`): records,
    // and fills of buffers allocated on the stream of their slot's number, on their own
    // stream, so that no cross-stream order gets in the way of the legacy stream's gate.
    let w6: Vec<(u32, BoxedStrategy<Op>)> = vec![
        (
            1,
            Just(Op::NewStream {
                s: 5,
                blocking: true,
            })
            .boxed(),
        ),
        (3, (0usize..5).prop_map(|s| Op::Legacy { s }).boxed()),
        (
            4,
            (i(), 0usize..5)
                .prop_map(|(e, s)| Op::Record { e, s })
                .boxed(),
        ),
        (
            2,
            (i(), any::<bool>())
                .prop_map(|(b, large)| Op::Alloc { b, s: b, large })
                .boxed(),
        ),
        (2, i().prop_map(|b| Op::FillOnHome { b }).boxed()),
        (
            3,
            (0usize..5, Just(2u8))
                .prop_map(|(s, mode)| Op::Begin { s, mode })
                .boxed(),
        ),
        (1, (0usize..5).prop_map(|s| Op::End { s }).boxed()),
        (
            4,
            (0usize..5)
                .prop_map(|other| Op::WaitStream { s: 5, other })
                .boxed(),
        ),
    ];
    all.extend(w6.into_iter().map(|(w, op)| (w, "w6", op)));
    #[cfg(feature = "nccl")]
    all.push((
        2,
        "w3",
        (i(), i(), i(), any::<bool>())
            .prop_map(|(send, recv, s, write)| Op::Nccl {
                send,
                recv,
                s,
                write,
            })
            .boxed(),
    ));
    all
}

/// The operations of a program: every kind (`family` "all"), or those of one family (`w1` to
/// `w9`: what a finding of the soundness review needs; `c`: uses across streams during
/// captures; `g`: captures into graphs, `Stream::capture_into`, beside the graph and capture
/// operations of `w4` and `c`), so that a search for one finding spends its programs there.
fn op_strategy(family: &str) -> Union<BoxedStrategy<Op>> {
    let chosen: Vec<(u32, BoxedStrategy<Op>)> = op_strategies()
        .into_iter()
        .filter(|(_, families, _)| {
            let has = |f: &str| families.split(' ').any(|x| x == f);
            match family {
                "all" => true,
                "g" => has("g") || has("w4") || has("c"),
                "x" => has("x") || has("w1") || has("w9"),
                one => has(one),
            }
        })
        .map(|(weight, _, strategy)| (weight, strategy))
        .collect();
    assert!(
        !chosen.is_empty(),
        "no operations of family {family:?} (all, w1 to w9, c, g, x)"
    );
    Union::new_weighted(chosen)
}

/// The decisions of one operation's driver calls: mostly "go on" (0), now and then "hand the
/// baton on" (to the candidate it names, modulo their number); shrunk towards "go on".
fn decisions() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![1 => Just(0u8), 1 => 1u8..=6], 0..6)
}

/// Programs: a prelude that fills the slots (every stream, four events, four buffers of two
/// sizes, on the threads in turn: so that the operations after it have something to act on,
/// and shrinking can still drop what a failure does not need), then up to 40 operations, each
/// with the decisions taken at its driver calls.
fn program_strategy(family: &'static str) -> impl Strategy<Value = Program> {
    (2usize..=4, 3usize..=6).prop_flat_map(move |(threads, streams)| {
        let mut prelude: Vec<(usize, Op)> = (0..streams)
            .map(|s| (s % threads, Op::NewStream { s, blocking: false }))
            .collect();
        prelude.extend((0..4).map(|e| (e % threads, Op::NewEvent { e, timing: false })));
        prelude.extend((0..4).map(|b| {
            let op = Op::Alloc {
                b,
                s: b,
                large: b % 2 == 1,
            };
            (b % threads, op)
        }));
        proptest::collection::vec((0..threads, op_strategy(family), decisions()), 1..40).prop_map(
            move |steps| {
                let first = prelude.len();
                let schedule = steps
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, _, d))| d.iter().any(|&d| d != 0))
                    .map(|(i, (_, _, d))| (first + i, d.clone()))
                    .collect();
                Program {
                    threads,
                    streams,
                    steps: prelude
                        .iter()
                        .cloned()
                        .chain(steps.into_iter().map(|(t, op, _)| (t, op)))
                        .collect(),
                    schedule,
                }
            },
        )
    })
}

// ---- the scheduler: one baton among a program's threads ------------------------------------

/// What one of a program's threads is doing, for the [`Baton`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Doing {
    /// No operation: the next one may start on it.
    Idle,
    /// Running operation `op`, holding the baton (or about to take it).
    Running(usize),
    /// Stopped at a driver call of operation `op`, waiting for the baton.
    Paused(usize),
    /// Running operation `op` without the baton: it went to sleep between two driver calls
    /// (it waits for a lock that a paused thread holds, or runs a host function that waits
    /// for a later operation: see [`BLOCKED_AFTER`]), so the baton went on without it. It
    /// waits for the baton again at its next driver call.
    Blocked(usize),
    /// Ending the captures it began, as the stall watcher asked while it was idle (see
    /// [`unstall`]): no operation starts on it until it is done, and its driver calls go on
    /// without the baton. (Taken for idle meanwhile, it was once given the next operation
    /// while it waited for a lock of the crate's: the watch, seeing it asleep in no wait of
    /// the baton's own, woke it for ever instead of taking it for blocked.)
    Ending,
}

/// Where the baton goes at a decision: a paused thread resumes, or the next operation starts.
#[derive(Clone, Copy, Debug)]
enum Candidate {
    Resume(usize),
    Start(usize),
}

/// How long the thread holding the baton may go without a driver call, asleep (the kernel
/// says so: it waits on a lock, a condition, a sleep), before it counts as blocked and the
/// baton goes on without it; and how long while running (it computes, or waits for a CPU)
/// before it counts as blocked all the same.
const SLEEPING_AFTER: Duration = Duration::from_millis(2);
const BLOCKED_AFTER: Duration = Duration::from_millis(100);
/// How long no thread may hold the baton (every running one blocked) before blocked host
/// functions are let go; then, after [`STALL_CAPTURES`], the program's captures are ended
/// (a thread may wait for another's capture to end: a context's synchronisation does); after
/// [`STALL_FAILS`], the program fails.
const STALL_RELEASES: Duration = Duration::from_millis(5);
const STALL_CAPTURES: Duration = Duration::from_millis(25);
const STALL_FAILS: Duration = Duration::from_secs(10);

/// Over the run: hand-overs at driver calls, threads taken for blocked, stalls undone.
static SWITCHES: AtomicUsize = AtomicUsize::new(0);
static BLOCKED: AtomicUsize = AtomicUsize::new(0);
static STALLS: AtomicUsize = AtomicUsize::new(0);
static STALLS_ENDED: AtomicUsize = AtomicUsize::new(0);

struct BatonState {
    /// The thread holding the baton: the only one of the program's threads that runs (but
    /// for blocked ones).
    holder: Option<usize>,
    doing: Vec<Doing>,
    /// The thread of each operation, the next to start, and each one's decisions and how
    /// many it took.
    threads_of: Vec<usize>,
    next: usize,
    decisions: Vec<Vec<u8>>,
    taken: Vec<usize>,
    /// Each operation's outcome, once it returned.
    results: Vec<Option<Result<(), String>>>,
    /// Counts every step (a driver call, a hand-over, an operation's end), for the watch.
    steps: u64,
    /// No more operations start (one failed).
    failed: bool,
    /// The program's operations are over (or given up): driver calls go on freely.
    over: bool,
    /// Per thread, the time it spent waiting for the baton (a timed wait does not count it).
    paused: Vec<Duration>,
    /// Per thread, its kernel thread id, for the watch's question whether it sleeps.
    tids: Vec<Option<u32>>,
    /// Per thread, whether it sleeps waiting for the baton (given it, it has not woken yet):
    /// asleep so, it is not blocked.
    waiting: Vec<bool>,
    /// Per thread, whether the stall watcher asked it, while idle, to end the captures it
    /// began (a capture in a strict mode is ended only from the thread that began it).
    end_asked: Vec<bool>,
}

/// What a program's thread does next ([`Baton::wait_to_start`]).
enum Next {
    /// Operation `op`.
    Op(usize),
    /// End the captures it began, as the stall watcher asked (see [`unstall`]).
    EndCaptures,
}

/// The scheduler of a program's threads: one baton, held by the one thread that runs.
/// Operations start in program order, each on its thread once that thread is idle. At each
/// driver call (the stand-in's yield hook, [`at_driver_call`]) the thread holding the baton
/// takes its operation's next decision: 0 (or none left) goes on; `d` hands the baton to
/// candidate `(d - 1) % n`, where the candidates are the paused threads (by their operations'
/// order) and the next operation, if its thread is idle. At an operation's end the baton goes
/// to the candidate its next decision names, else to the oldest paused thread, else to the
/// next operation. So a program's schedule is part of the program: it replays and shrinks.
///
/// A thread may stop between driver calls (on a lock that a paused thread holds inside
/// cuda-core, or in a host function that waits for a later operation): the watch
/// ([`Baton::watch`]) then marks it blocked once the kernel says it has slept for
/// [`SLEEPING_AFTER`] (a thread that computes or waits for a CPU runs on, up to
/// [`BLOCKED_AFTER`]), and hands the baton to the oldest paused thread or the next
/// operation. That is the schedule's one dependence on time: a thread that sleeps that long
/// between two driver calls for another reason (a wait of its own) is taken for blocked too,
/// and it then runs alongside the baton's holder until its next driver call.
struct Baton {
    state: Mutex<BatonState>,
    /// Per thread, where it waits for the baton; and where the watch waits.
    wakes: Vec<Condvar>,
    watched: Condvar,
}

impl Baton {
    fn new(program: &Program) -> Baton {
        let n = program.steps.len();
        let mut decisions = vec![Vec::new(); n];
        for (op, list) in &program.schedule {
            if let Some(slot) = decisions.get_mut(*op) {
                slot.clone_from(list);
            }
        }
        Baton {
            state: Mutex::new(BatonState {
                holder: None,
                doing: vec![Doing::Idle; program.threads],
                threads_of: program
                    .steps
                    .iter()
                    .map(|(t, _)| t % program.threads)
                    .collect(),
                next: 0,
                decisions,
                taken: vec![0; n],
                results: (0..n).map(|_| None).collect(),
                steps: 0,
                failed: false,
                over: false,
                paused: vec![Duration::ZERO; program.threads],
                tids: vec![None; program.threads],
                waiting: vec![false; program.threads],
                end_asked: vec![false; program.threads],
            }),
            wakes: (0..program.threads).map(|_| Condvar::new()).collect(),
            watched: Condvar::new(),
        }
    }

    /// Wakes the thread that holds the baton (every one, and the watch, once it is over).
    fn wake(&self, state: &BatonState) {
        if state.over {
            self.wakes.iter().for_each(Condvar::notify_all);
            self.watched.notify_all();
        } else if let Some(holder) = state.holder {
            self.wakes[holder].notify_all();
        }
    }

    fn lock(&self) -> MutexGuard<'_, BatonState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the kernel's id of thread `t` (the calling thread).
    fn note_tid(&self, t: usize) {
        // "/proc/thread-self" links to "/proc/PID/task/TID".
        let tid = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|link| link.file_name()?.to_str()?.parse().ok());
        self.lock().tids[t] = tid;
    }

    /// The time thread `t` has spent waiting for the baton so far.
    fn paused(&self, t: usize) -> Duration {
        self.lock().paused[t]
    }

    /// Waits until thread `t` is to run an operation (its index), or the program is over
    /// (`None`).
    fn wait_to_start(&self, t: usize) -> Option<Next> {
        let mut state = self.lock();
        loop {
            if state.over {
                return None;
            }
            match state.doing[t] {
                Doing::Running(op) if state.holder == Some(t) => {
                    state.waiting[t] = false;
                    return Some(Next::Op(op));
                }
                // Started, then taken for blocked before it woke: it runs without the baton
                // until its first driver call.
                Doing::Blocked(op) => {
                    state.waiting[t] = false;
                    return Some(Next::Op(op));
                }
                Doing::Idle if state.end_asked[t] => {
                    state.end_asked[t] = false;
                    state.waiting[t] = false;
                    state.doing[t] = Doing::Ending;
                    return Some(Next::EndCaptures);
                }
                _ => {}
            }
            state.waiting[t] = true;
            state = self.wakes[t].wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Thread `t` ended the captures it began ([`Next::EndCaptures`]): idle again, and the
    /// baton, if nobody holds it, goes to the oldest paused thread or the next operation.
    /// (No step of the program by itself: counted one, each stall's ends would restart the
    /// watch's clock, and a stall that no end undoes would never be given up.)
    fn ended_captures(&self, t: usize) {
        let mut state = self.lock();
        state.doing[t] = Doing::Idle;
        if state.holder.is_none() {
            match state.candidates().first() {
                Some(&pick) => state.give(pick),
                None => {
                    if state.doing.iter().all(|d| *d == Doing::Idle)
                        && (state.failed || state.next >= state.threads_of.len())
                    {
                        state.over = true;
                    }
                }
            }
        }
        self.wake(&state);
    }

    /// Asks every idle thread to end the captures it began (see [`unstall`]).
    fn ask_idle_to_end_captures(&self) {
        let mut state = self.lock();
        for asked in state.end_asked.iter_mut() {
            *asked = true;
        }
        drop(state);
        for wake in &self.wakes {
            wake.notify_all();
        }
    }

    /// At a driver call of thread `t`: go on, or hand the baton on and wait for it back.
    fn at_call(&self, t: usize) {
        let mut state = self.lock();
        if state.over {
            return;
        }
        state.steps += 1;
        match state.doing[t] {
            Doing::Running(op) if state.holder == Some(t) => {
                let candidates = state.candidates();
                if candidates.is_empty() {
                    return;
                }
                let d = state.decide(op);
                if d == 0 {
                    return;
                }
                let pick = candidates[usize::from(d - 1) % candidates.len()];
                state.doing[t] = Doing::Paused(op);
                state.give(pick);
                SWITCHES.fetch_add(1, Ordering::Relaxed);
            }
            Doing::Blocked(op) => {
                if state.holder.is_none() {
                    // Nobody holds it: every other running thread is blocked.
                    state.holder = Some(t);
                    state.doing[t] = Doing::Running(op);
                    return;
                }
                state.doing[t] = Doing::Paused(op);
            }
            _ => return,
        }
        self.wake(&state);
        let start = Instant::now();
        let mine = |state: &BatonState| {
            state.over || (state.holder == Some(t) && matches!(state.doing[t], Doing::Running(_)))
        };
        state.waiting[t] = true;
        while !mine(&state) {
            state = self.wakes[t].wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.waiting[t] = false;
        state.paused[t] += start.elapsed();
    }

    /// Operation `op` of thread `t` returned `result`: the baton goes on (if `t` held it).
    fn end(&self, t: usize, op: usize, result: Result<(), String>) {
        let mut state = self.lock();
        if result.is_err() {
            state.failed = true;
        }
        state.results[op] = Some(result);
        state.doing[t] = Doing::Idle;
        state.steps += 1;
        if state.holder == Some(t) || state.holder.is_none() {
            state.holder = None;
            let candidates = state.candidates();
            if candidates.is_empty() {
                if state.doing.iter().all(|d| *d == Doing::Idle)
                    && (state.failed || state.next >= state.threads_of.len())
                {
                    state.over = true;
                }
            } else {
                let d = state.decide(op);
                let pick = if d == 0 {
                    candidates[0]
                } else {
                    candidates[usize::from(d - 1) % candidates.len()]
                };
                state.give(pick);
            }
        }
        self.wake(&state);
    }

    /// Starts the program: the first operation gets the baton.
    fn start(&self) {
        let mut state = self.lock();
        match state.candidates().first() {
            Some(&first) => state.give(first),
            None => state.over = true,
        }
        self.wake(&state);
    }

    /// Watches the program until it is over: a thread that holds the baton and reaches no
    /// driver call for [`BLOCKED_AFTER`] is marked blocked, and the baton goes on without it;
    /// while nobody can take the baton, `stalled` is called now and then with how long it has
    /// been so (from [`STALL_RELEASES`] on). Past [`STALL_FAILS`] the program is given up: an
    /// `Err`.
    fn watch(&self, mut stalled: impl FnMut(Duration)) -> Result<(), String> {
        let mut state = self.lock();
        let mut seen = state.steps;
        let mut since = Instant::now();
        let mut stalled_now = false;
        loop {
            if state.over {
                return Ok(());
            }
            state = self
                .watched
                .wait_timeout(state, Duration::from_millis(1))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if state.steps != seen {
                seen = state.steps;
                since = Instant::now();
                stalled_now = false;
                continue;
            }
            let quiet = since.elapsed();
            let asleep = |h: usize| quiet >= SLEEPING_AFTER && sleeping(state.tids[h]);
            match state.holder {
                // Given the baton and not yet woken to take it (the kernel says it sleeps, in
                // the baton's own wait): woken again, not taken for blocked.
                Some(h) if state.waiting[h] && quiet >= SLEEPING_AFTER => {
                    self.wakes[h].notify_all();
                }
                Some(h) if state.waiting[h] => {}
                Some(h) if quiet >= BLOCKED_AFTER || asleep(h) => {
                    BLOCKED.fetch_add(1, Ordering::Relaxed);
                    if let Doing::Running(op) = state.doing[h] {
                        state.doing[h] = Doing::Blocked(op);
                    }
                    state.holder = None;
                    if let Some(&pick) = state.candidates().first() {
                        state.give(pick);
                    }
                    state.steps += 1;
                    self.wake(&state);
                }
                None if quiet >= STALL_FAILS => {
                    state.over = true;
                    self.wake(&state);
                    let doing = format!("{:?}", state.doing);
                    return Err(format!(
                        "the program stalled: no thread reached a driver call for {quiet:?} \
                         (threads: {doing})"
                    ));
                }
                None if quiet >= STALL_RELEASES => {
                    if !stalled_now {
                        stalled_now = true;
                        STALLS.fetch_add(1, Ordering::Relaxed);
                    }
                    drop(state);
                    stalled(quiet);
                    state = self.lock();
                }
                _ => {}
            }
        }
    }

    /// The first failing operation's error (by index).
    fn failure(&self) -> Option<(usize, String)> {
        let state = self.lock();
        state.results.iter().enumerate().find_map(|(i, r)| match r {
            Some(Err(e)) => Some((i, e.clone())),
            _ => None,
        })
    }
}

/// Whether the kernel says thread `tid` (of this process) sleeps: waits on a lock, a condition
/// or a timer (`S`), or in the kernel (`D`).
fn sleeping(tid: Option<u32>) -> bool {
    let Some(tid) = tid else {
        return false;
    };
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // "TID (COMM) STATE ...": the state follows the last ')' (a name may hold one).
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].trim_start().chars().next());
    matches!(state, Some('S' | 'D'))
}

impl BatonState {
    /// Where the baton may go: the paused threads, oldest operation first, then the next
    /// operation if its thread is idle (and none failed).
    fn candidates(&self) -> Vec<Candidate> {
        let mut paused: Vec<(usize, usize)> = self
            .doing
            .iter()
            .enumerate()
            .filter_map(|(t, d)| match d {
                Doing::Paused(op) => Some((*op, t)),
                _ => None,
            })
            .collect();
        paused.sort_unstable();
        let mut candidates: Vec<Candidate> = paused
            .into_iter()
            .map(|(_, t)| Candidate::Resume(t))
            .collect();
        if !self.failed && self.next < self.threads_of.len() {
            let t = self.threads_of[self.next];
            if self.doing[t] == Doing::Idle {
                candidates.push(Candidate::Start(self.next));
            }
        }
        candidates
    }

    /// Operation `op`'s next decision (0 once they are used up).
    fn decide(&mut self, op: usize) -> u8 {
        let taken = self.taken[op];
        match self.decisions[op].get(taken) {
            Some(&d) => {
                self.taken[op] += 1;
                d
            }
            None => 0,
        }
    }

    fn give(&mut self, to: Candidate) {
        let t = match to {
            Candidate::Resume(t) => {
                if let Doing::Paused(op) = self.doing[t] {
                    self.doing[t] = Doing::Running(op);
                }
                t
            }
            Candidate::Start(op) => {
                let t = self.threads_of[op];
                self.doing[t] = Doing::Running(op);
                self.next = op + 1;
                t
            }
        };
        self.holder = Some(t);
        self.steps += 1;
    }
}

thread_local! {
    /// The baton of the program this thread runs operations of, and its number there.
    static ME: RefCell<Option<(Arc<Baton>, usize)>> = const { RefCell::new(None) };
}

/// The stand-in's yield hook: a driver call of the calling thread is about to be made.
unsafe extern "C" fn at_driver_call(_call: *const std::ffi::c_char) {
    let me = ME.try_with(|me| me.borrow().clone()).ok().flatten();
    if let Some((baton, t)) = me {
        baton.at_call(t);
    }
}

// ---- what the operations act on ---------------------------------------------------------------

/// A built graph: its nodes' kinds in order ("empty", "fill", "copy", "host"), and the counter
/// of its host node's runs.
struct Built {
    graph: Graph,
    nodes: Vec<&'static str>,
    counter: Arc<AtomicUsize>,
}

/// An executable graph: how many host nodes it runs per launch, and their counter.
struct Exec {
    exec: GraphExec,
    hosts: usize,
    counter: Arc<AtomicUsize>,
}

/// Everything a program's operations act on, shared by its threads. It is locked only to take
/// values out or put them in, never across a call into cuda-core (whose driver calls are where
/// the threads interleave), and nothing of cuda-core's is dropped while it is locked.
struct World {
    device: Device,
    /// The stand-in's `k1` (one 8-byte parameter), loaded on first use.
    kernel: Option<cuda_core::Kernel>,
    /// The program's replayable region (two graphs kept), made on first use; `None` while an
    /// operation runs it (another one then skips).
    replay: Option<cuda_core::Replay>,
    replay_made: bool,
    /// What each node of the region's graph of `n` launches (index `n`) was last given: the
    /// buffer (held weakly, so that its address names it alone) and whether as its slice. A
    /// launch is declared unchanged only where it gives the same, as `launch_unchanged`'s
    /// contract asks: the debug build's check compares bytes, and a buffer allocated where a
    /// freed one was has its bytes.
    replay_args: [Vec<(std::sync::Weak<Buffer>, bool)>; 3],
    /// The program's pinned memory pool, made on first use, and the addresses of its buffers
    /// (no host function reads them: the stand-in's addresses are no host memory).
    pool: Option<Arc<PinnedMemoryPool>>,
    pool_buffers: Vec<u64>,
    /// The program's imported memory and timeline semaphore, made on first use, and the
    /// semaphore's last value signalled or waited for.
    external: Option<ExternalMemory>,
    semaphore: Option<ExternalSemaphore>,
    semaphore_value: u64,
    /// Stream completions made and still pending.
    completions: Vec<StreamCompletion>,
    /// The program's communicator (one rank), made on first use.
    #[cfg(feature = "nccl")]
    comm: Option<Arc<cuda_core::nccl::Communicator>>,
    streams: Vec<Option<Stream>>,
    events: Vec<Option<Arc<Event>>>,
    buffers: Vec<Option<Arc<Buffer>>>,
    graphs: Vec<Option<Built>>,
    execs: Vec<Option<Exec>>,
    /// Graphs and executable graphs an operation took out of their slots for a while.
    out: usize,
    /// What a capture used, kept to the end (`begin_capture`'s contract), and streams whose
    /// drop was put off while the driver held user objects (so that none drops on the
    /// release thread) or whose captures the stall watcher ended (so that none drops on the
    /// watching thread: see [`unstall`]).
    kept_buffers: Vec<Arc<Buffer>>,
    kept_events: Vec<Arc<Event>>,
    kept_streams: Vec<Stream>,
    /// The streams a capture was begun on (by `Debug` handle), while the test did not end it.
    began: Vec<usize>,
    /// The streams (by handle) that running operations hold, with the operation and how: see
    /// [`claim`].
    claims: Vec<(usize, usize, Hold)>,
    /// Every host function counter, with the runs the API promises.
    promised: Vec<(Arc<AtomicUsize>, usize, String)>,
}

impl World {
    fn new(device: Device, streams: usize) -> World {
        World {
            device,
            kernel: None,
            replay: None,
            replay_made: false,
            replay_args: Default::default(),
            pool: None,
            pool_buffers: Vec::new(),
            external: None,
            semaphore: None,
            semaphore_value: 0,
            completions: Vec::new(),
            #[cfg(feature = "nccl")]
            comm: None,
            streams: (0..streams).map(|_| None).collect(),
            events: (0..EVENTS).map(|_| None).collect(),
            buffers: (0..BUFFERS).map(|_| None).collect(),
            graphs: (0..GRAPHS).map(|_| None).collect(),
            execs: (0..GRAPHS).map(|_| None).collect(),
            out: 0,
            kept_buffers: Vec::new(),
            kept_events: Vec::new(),
            kept_streams: Vec::new(),
            began: Vec::new(),
            claims: Vec::new(),
            promised: Vec::new(),
        }
    }

    fn stream(&self, s: usize) -> Option<Stream> {
        self.streams[s % self.streams.len()].clone()
    }

    fn event(&self, e: usize) -> Option<Arc<Event>> {
        self.events[e % EVENTS].clone()
    }

    fn buffer(&self, b: usize) -> Option<Arc<Buffer>> {
        self.buffers[b % BUFFERS].clone()
    }
}

/// An operation's context: the world, the baton, and the thread and operation running.
struct Cx<'a> {
    world: &'a Mutex<World>,
    baton: &'a Baton,
    thread: usize,
    op: usize,
}

impl Cx<'_> {
    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stream(&self, s: usize) -> Option<Stream> {
        self.world().stream(s)
    }

    fn event(&self, e: usize) -> Option<Arc<Event>> {
        self.world().event(e)
    }

    fn buffer(&self, b: usize) -> Option<Arc<Buffer>> {
        self.world().buffer(b)
    }
}

/// Whether `stream` is in a capture, as the stand-in's model says (a question that is no
/// driver call, so no place where the threads interleave).
fn capturing(stream: &Stream) -> bool {
    standin::model_capture(handle_of(stream)) != 0
}

/// The handle a stream's or event's `Debug` shows (`as_raw` would mark it handed out).
fn handle_of(value: &impl std::fmt::Debug) -> usize {
    let text = format!("{value:?}");
    let start = text.find("handle: 0x").expect("Debug shows the handle") + "handle: 0x".len();
    let hex: String = text[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    usize::from_str_radix(&hex, 16).expect("a hexadecimal handle")
}

/// How a running operation holds a stream (see [`claim`]).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hold {
    /// It allocates or frees memory there, or queues host work (`begin_capture`'s contract:
    /// no capture may begin on the stream, or join it, meanwhile).
    Contract,
    /// It queues work there, or orders work with it (by default no capture begins or ends on
    /// it meanwhile).
    Use,
    /// It begins a capture there, or may join the stream to one.
    Capture,
    /// It ends the stream's capture (by default, while nothing else runs on it).
    End,
}

/// A handle no stream has: what recycling holds (`Use`), and a global capture's begin (`End`).
const RECYCLING: usize = usize::MAX;

impl Hold {
    /// Whether the hold counts: the contract's always; the others by default (not with
    /// `CUDA_CORE_MODEL_RACES` set).
    fn counts(self) -> bool {
        matches!(self, Hold::Contract | Hold::Capture) || !races()
    }

    /// Whether the hold excludes every other on its stream.
    fn exclusive(self) -> bool {
        matches!(self, Hold::Capture | Hold::End)
    }

    fn conflicts(self, other: Hold) -> bool {
        self.counts() && other.counts() && (self.exclusive() || other.exclusive())
    }
}

/// Whether the schedule may overlap a capture's begin or end with other work on its stream
/// (`CUDA_CORE_MODEL_RACES` set): races of the crate's of their own (see the ignored
/// regression tests `model_race_*`).
fn races() -> bool {
    static RACES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RACES.get_or_init(|| std::env::var_os("CUDA_CORE_MODEL_RACES").is_some())
}

/// A claim of streams by a running operation ([`claim`]), given up when dropped.
struct Claim<'a> {
    world: &'a Mutex<World>,
    op: usize,
    holds: Vec<(usize, Hold)>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut world = self.world.lock().unwrap_or_else(|e| e.into_inner());
        for &(handle, hold) in &self.holds {
            let mine = (handle, self.op, hold);
            if let Some(at) = world.claims.iter().position(|&c| c == mine) {
                world.claims.swap_remove(at);
            }
        }
    }
}

/// The handle of `stream`, for a claim.
fn held(stream: &Stream, hold: Hold) -> (usize, Hold) {
    (handle_of(stream), hold)
}

/// Claims streams (by handle) for the running operation, or `None` where another running
/// operation holds one of them in a way that conflicts (see [`Hold`]); the operation then does
/// nothing. This is how the test keeps `begin_capture`'s contract while operations interleave:
/// no buffer is allocated or dropped, and no host function queued, on a stream that begins a
/// capture or joins one meanwhile (the crate refuses those on a stream that captures already;
/// between its check and its call, a capture begun by another thread would get them). By
/// default it also keeps a capture's begin or end from overlapping other work on its stream,
/// and a global capture's begin from overlapping the recycling of handles: races of their own
/// (see [`races`]). The default streams (which never capture) are not claimed.
fn claim<'a>(cx: &Cx<'a>, holds: &[(usize, Hold)]) -> Option<Claim<'a>> {
    let holds: Vec<(usize, Hold)> = holds
        .iter()
        .copied()
        .filter(|&(h, hold)| h > 2 && hold.counts())
        .collect();
    let mut world = cx.world();
    let conflict = world.claims.iter().any(|&(h, op, theirs)| {
        op != cx.op
            && holds
                .iter()
                .any(|&(mine, hold)| mine == h && hold.conflicts(theirs))
    });
    if conflict {
        return None;
    }
    world
        .claims
        .extend(holds.iter().map(|&(h, hold)| (h, cx.op, hold)));
    Some(Claim {
        world: cx.world,
        op: cx.op,
        holds,
    })
}

/// Whether work queued between [`Watch::new`] and [`Watch::captured`] on some streams may have
/// gone into a capture: one of them captured at either end, or a capture began meanwhile.
struct Watch {
    was: bool,
    begun: u64,
}

impl Watch {
    fn new(streams: &[&Stream]) -> Watch {
        Watch {
            was: streams.iter().any(|s| capturing(s)),
            begun: standin::model_count(5),
        }
    }

    fn captured(&self, streams: &[&Stream]) -> bool {
        self.was || streams.iter().any(|s| capturing(s)) || standin::model_count(5) != self.begun
    }
}

/// Catches a refusal the contract does not allow: work on `stream` over memory of `homes`
/// refused with [`Error::Capture`] while neither `stream` nor any home captures (a crate that
/// refused every cross-stream use while an unrelated capture is open, say).
fn refused_without_capture<T>(
    result: &cuda_core::Result<T>,
    stream: &Stream,
    homes: &[&Stream],
) -> Result<(), String> {
    if let Err(Error::Capture { reason }) = result {
        // (The legacy stream cannot be ordered with while a blocking stream captures: a
        // refusal of it is a capture's.)
        let legacy = |s: &Stream| handle_of(s) == 1;
        if !capturing(stream)
            && homes.iter().all(|home| !capturing(home))
            && !legacy(stream)
            && !homes.iter().any(|home| legacy(home))
        {
            return Err(format!(
                "work on {stream:?} was refused as a capture's ({reason}), though neither it \
                 nor the memory's stream captures"
            ));
        }
    }
    Ok(())
}

// ---- host functions held until a later operation -------------------------------------------

/// A held host function's latch ([`Op::HostBlock`]), and its place among them.
struct Latch {
    open: Mutex<bool>,
    opened: Condvar,
    seq: u64,
}

static LATCHES: Mutex<Vec<Arc<Latch>>> = Mutex::new(Vec::new());
static LATCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs of repeatable host functions (for the stats only).
static REPEATABLE_RUNS: AtomicUsize = AtomicUsize::new(0);

/// How long a held host function waits at most, should nothing let it go (a stuck test).
const HELD_AT_MOST: Duration = Duration::from_secs(5);

/// Lets every held host function go.
fn release_latches() {
    let latches = std::mem::take(&mut *LATCHES.lock().unwrap_or_else(|e| e.into_inner()));
    for latch in latches {
        *latch.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        latch.opened.notify_all();
    }
}

thread_local! {
    /// Set while this thread runs a timed wait: the held host functions made before it began.
    static TIMED: Cell<Option<u64>> = const { Cell::new(None) };
    /// Held host functions made before the timed wait that ran on this thread within it, and
    /// the time spent in those made after it began (another operation's work, which the wait
    /// may have to wait for).
    static HELD_RAN: Cell<u32> = const { Cell::new(0) };
    static EXCUSED: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// A host function that waits for its latch: work held on its stream until a later operation.
fn held_host_function(latch: Arc<Latch>, counter: Arc<AtomicUsize>) -> impl FnMut() + Send {
    move || {
        let start = Instant::now();
        let mut open = latch.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open && start.elapsed() < HELD_AT_MOST {
            open = latch
                .opened
                .wait_timeout(open, HELD_AT_MOST - start.elapsed())
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(open);
        if let Some(began) = TIMED.with(Cell::get) {
            if latch.seq < began {
                HELD_RAN.with(|n| n.set(n.get() + 1));
            } else {
                EXCUSED.with(|t| t.set(t.get() + start.elapsed()));
            }
        }
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

/// How far past its deadline a timed wait may return (scheduling, sleeps between questions).
const TIMED_SLACK: Duration = Duration::from_millis(200);

/// Runs `wait`, a wait with a deadline of `ms` milliseconds, and checks that it kept it.
/// Catches a timed wait that waits for work without its deadline (the stand-in completes
/// everything at once but host functions): one that ran a host function a `HostBlock` held
/// before the wait began (it would wait for that host function for as long as it is held), or
/// that returned later than its deadline and the slack (the time it waited for the baton, and
/// in host functions held after it began, not counted).
fn timed<T>(cx: &Cx<'_>, what: &str, ms: u64, wait: impl FnOnce() -> T) -> Result<T, String> {
    TIMED.with(|t| t.set(Some(LATCH_SEQ.load(Ordering::SeqCst))));
    HELD_RAN.with(|n| n.set(0));
    EXCUSED.with(|t| t.set(Duration::ZERO));
    let paused = cx.baton.paused(cx.thread);
    let start = Instant::now();
    let value = wait();
    let took = start.elapsed();
    TIMED.with(|t| t.set(None));
    let paused = cx.baton.paused(cx.thread).saturating_sub(paused);
    if HELD_RAN.with(Cell::get) > 0 {
        return Err(format!(
            "{what} with a deadline of {ms} ms waited for a host function that another \
             operation holds (it would wait for as long as that one is held)"
        ));
    }
    let spent = took
        .saturating_sub(paused)
        .saturating_sub(EXCUSED.with(Cell::get));
    if spent > Duration::from_millis(ms) + TIMED_SLACK {
        return Err(format!(
            "{what} with a deadline of {ms} ms returned after {spent:?}"
        ));
    }
    Ok(value)
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    let mut context = TaskContext::from_waker(Waker::noop());
    std::pin::Pin::new(future).poll(&mut context)
}

// ---- the operations ---------------------------------------------------------------------------

/// The stand-in's kernel `k1`, loaded once per program.
fn kernel(cx: &Cx<'_>) -> Option<cuda_core::Kernel> {
    let loaded = cx.world().kernel.clone();
    if loaded.is_some() {
        return loaded;
    }
    let code = cuda_core::ObjectCode::from_cubin(standin::cubin());
    let kernel = code.get_kernel("k1").ok()?;
    let mut world = cx.world();
    Some(world.kernel.get_or_insert(kernel).clone())
}

/// Puts buffer `buffer` back in slot `b` after an operation took it out, unless the slot was
/// filled meanwhile (it is dropped then).
fn put_back(cx: &Cx<'_>, b: usize, buffer: Arc<Buffer>) {
    let extra = {
        let mut world = cx.world();
        let slot = &mut world.buffers[b % BUFFERS];
        if slot.is_none() {
            *slot = Some(buffer);
            None
        } else {
            Some(buffer)
        }
    };
    drop_buffer(cx, extra);
}

/// Puts `buffer` in slot `b`, dropping the one there.
fn store_buffer(cx: &Cx<'_>, b: usize, buffer: Buffer) -> Result<(), String> {
    let old = {
        let mut world = cx.world();
        // Catches an allocation handed out twice (a stream's small-buffer cache giving one
        // address to two buffers).
        let live = world.buffers.iter().flatten().chain(&world.kept_buffers);
        if let Some(other) = live.into_iter().find(|o| o.ptr() == buffer.ptr()) {
            let other = format!("{other:?}");
            drop(world);
            drop_buffer(cx, Some(Arc::new(buffer)));
            return Err(format!("two live buffers at one address: {other}"));
        }
        world.buffers[b % BUFFERS].replace(Arc::new(buffer))
    };
    drop_buffer(cx, old);
    Ok(())
}

/// The deallocation stream of the buffer in slot `b`, for a claim.
fn home_of(cx: &Cx<'_>, b: usize) -> Option<Stream> {
    cx.world()
        .buffer(b)
        .map(|buffer| buffer.deallocation_stream().clone())
}

/// The streams an operation queues work on or orders work with (its stream's and its
/// buffers' deallocation streams), a capture's end, and the recycling of handles, as it holds
/// them for its whole run (see [`claim`]; what it allocates, frees, queues host work on or
/// begins a capture on, it claims itself).
fn holds(cx: &Cx<'_>, op: &Op) -> Vec<(usize, Hold)> {
    let world = cx.world();
    let stream = |s: usize| world.stream(s).map(|s| held(&s, Hold::Use));
    let home = |b: usize| {
        world
            .buffer(b)
            .map(|b| held(b.deallocation_stream(), Hold::Use))
    };
    let holds: Vec<Option<(usize, Hold)>> = match *op {
        Op::Fill { b, s, .. }
        | Op::SharedFill { b, s, .. }
        | Op::Kernel { b, s, .. }
        | Op::ToHost { b, s }
        | Op::ToVecTimeout { b, s, .. }
        | Op::SetHome { b, s } => vec![stream(s), home(b)],
        Op::FillOnHome { b } => vec![home(b)],
        Op::Copy { from, to, s, .. } | Op::SharedCopy { from, to, s, .. } => {
            vec![stream(s), home(from), home(to)]
        }
        #[cfg(feature = "nccl")]
        Op::Nccl { send, recv, s, .. } => vec![stream(s), home(send), home(recv)],
        Op::End { s } => vec![world.stream(s).map(|s| held(&s, Hold::End))],
        _ => Vec::new(),
    };
    // Whatever an operation does may recycle a handle (an order event made on first use, a
    // clone's drop), which a global capture's begin must not overlap by default.
    let recycling = Some((RECYCLING, Hold::Use));
    holds.into_iter().chain([recycling]).flatten().collect()
}

/// Runs one operation on the calling thread; an `Err` is a broken invariant.
fn apply(cx: &Cx<'_>, op: &Op) -> Result<(), String> {
    let Some(_claim) = claim(cx, &holds(cx, op)) else {
        return Ok(());
    };
    let device = cx.world().device;
    let streams = cx.world().streams.len();
    match *op {
        Op::NewStream { s, blocking } => {
            let options = StreamOptions::default().with_non_blocking(!blocking);
            if let Ok(stream) = device.create_stream(options) {
                // Catches a recycled stream handed out with work pending or in a capture.
                if standin::model_busy(handle_of(&stream)) {
                    return Err(format!("a new stream is busy: {stream:?}"));
                }
                let old = {
                    let mut world = cx.world();
                    // Its handle may be a dropped stream's, whose capture the drop ended.
                    world.began.retain(|&h| h != handle_of(&stream));
                    world.streams[s % streams].replace(stream)
                };
                drop_stream(cx, old);
            }
        }
        Op::Legacy { s } => {
            if let Ok(stream) = device.default_stream() {
                let old = cx.world().streams[s % streams].replace(stream);
                drop_stream(cx, old);
            }
        }
        Op::PerThread { s } => {
            if let Ok(stream) = Stream::per_thread_default(device) {
                let old = cx.world().streams[s % streams].replace(stream);
                drop_stream(cx, old);
            }
        }
        Op::DropStream { s } => {
            let old = cx.world().streams[s % streams].take();
            drop_stream(cx, old);
        }
        Op::NewEvent { e, timing } => {
            let options = EventOptions::default().with_timing(timing);
            if let Ok(event) = device.create_event(options) {
                // Catches a recycled event handed out while its last record is pending (or in
                // a capture): it would not be done, as a fresh event is.
                if standin::model_busy(handle_of(&event)) {
                    return Err(format!("a new event is busy: {event:?}"));
                }
                let old = cx.world().events[e % EVENTS].replace(Arc::new(event));
                drop(old);
            }
        }
        Op::DropEvent { e } => {
            let old = cx.world().events[e % EVENTS].take();
            drop(old);
        }
        Op::Record { e, s } | Op::Wait { s, e } => {
            let (event, stream) = {
                let world = cx.world();
                (world.event(e), world.stream(s))
            };
            if let (Some(event), Some(stream)) = (event, stream) {
                // A wait may join the stream to a capture (see `claim`).
                let hold = if matches!(op, Op::Wait { .. }) {
                    Hold::Capture
                } else {
                    Hold::Use
                };
                let Some(_claim) = claim(cx, &[held(&stream, hold)]) else {
                    return Ok(());
                };
                let watch = Watch::new(&[&stream]);
                let _ = if matches!(op, Op::Record { .. }) {
                    stream.record(&event)
                } else {
                    stream.wait(&event)
                };
                if watch.captured(&[&stream]) {
                    cx.world().kept_events.push(event);
                }
            }
        }
        Op::WaitStream { s, other } => {
            let (stream, other) = {
                let world = cx.world();
                (world.stream(s), world.stream(other))
            };
            if let (Some(stream), Some(other)) = (stream, other) {
                let holds = [held(&stream, Hold::Capture), held(&other, Hold::Use)];
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                let _ = stream.wait_stream(&other);
            }
        }
        Op::QueryEvent { e } => {
            if let Some(event) = cx.event(e) {
                let _ = event.is_done();
            }
        }
        Op::SyncEvent { e } => {
            if let Some(event) = cx.event(e) {
                let _ = event.sync();
            }
        }
        Op::QueryStream { s } => {
            if let Some(stream) = cx.stream(s) {
                let _ = stream.is_done();
            }
        }
        Op::SyncStream { s } => {
            if let Some(stream) = cx.stream(s) {
                let _ = stream.sync();
            }
        }
        Op::SyncTimeout { s, ms } => {
            if let Some(stream) = cx.stream(s) {
                let timeout = Duration::from_millis(ms);
                let _ = timed(cx, "Stream::sync_timeout", ms, || {
                    stream.sync_timeout(timeout)
                })?;
            }
        }
        Op::WaitTimeout { e, ms } => {
            if let Some(event) = cx.event(e) {
                let timeout = Duration::from_millis(ms);
                let _ = timed(cx, "Event::wait_timeout", ms, || {
                    event.wait_timeout(timeout)
                })?;
            }
        }
        Op::ToVecTimeout { b, s, ms } => {
            let (stream, buffer) = {
                let world = cx.world();
                (world.stream(s), world.buffer(b))
            };
            if let (Some(stream), Some(buffer)) = (stream, buffer) {
                let watch = Watch::new(&[&stream]);
                let timeout = Duration::from_millis(ms);
                let _ = timed(cx, "Buffer::to_vec_timeout", ms, || {
                    buffer.to_vec_timeout::<u8>(&stream, timeout)
                })?;
                if watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer);
                }
            }
        }
        Op::PollStream { s, again } => {
            if again {
                let kept = {
                    let mut world = cx.world();
                    let n = world.completions.len();
                    (n > 0).then(|| world.completions.remove(s % n))
                };
                if let Some(mut completion) = kept {
                    if poll_once(&mut completion).is_pending() {
                        cx.world().completions.push(completion);
                    }
                }
            } else if let Some(stream) = cx.stream(s) {
                // Its host function: claimed (see `claim`).
                let Some(_claim) = claim(cx, &[held(&stream, Hold::Contract)]) else {
                    return Ok(());
                };
                if let Ok(mut completion) = stream.completion() {
                    let pending = poll_once(&mut completion).is_pending();
                    let extra = {
                        let mut world = cx.world();
                        if pending && world.completions.len() < 4 {
                            world.completions.push(completion);
                            None
                        } else {
                            Some(completion)
                        }
                    };
                    drop(extra);
                }
            }
        }
        Op::PollEvent { e, polls } => {
            if let Some(event) = cx.event(e) {
                let mut completion = event.completion();
                for _ in 0..polls {
                    if poll_once(&mut completion).is_ready() {
                        break;
                    }
                }
            }
        }
        Op::Alloc { b, s, large } => {
            let stream = cx.stream(s);
            if let Some(stream) = stream {
                let mut holds = vec![held(&stream, Hold::Contract)];
                holds.extend(home_of(cx, b).map(|home| held(&home, Hold::Contract)));
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                let size = if large { 128 << 10 } else { 256 };
                let memory = device.memory_resource().map_err(|e| e.to_string())?;
                if let Ok(buffer) = cuda_core::Allocate::allocate(&memory, size, &stream) {
                    store_buffer(cx, b, buffer)?;
                }
            }
        }
        Op::AllocHost { b, s } => {
            let stream = cx.stream(s);
            if let Some(stream) = stream {
                let mut holds = vec![held(&stream, Hold::Contract)];
                holds.extend(home_of(cx, b).map(|home| held(&home, Hold::Contract)));
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                if let Ok(buffer) = Buffer::from_host_vec(vec![0u32; 256], &stream) {
                    store_buffer(cx, b, buffer)?;
                }
            }
        }
        Op::AllocExternal { b, s } => {
            let stream = cx.stream(s);
            if let Some(stream) = stream {
                let mut holds = vec![held(&stream, Hold::Contract)];
                holds.extend(home_of(cx, b).map(|home| held(&home, Hold::Contract)));
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                let Some(memory) = external(cx) else {
                    return Ok(());
                };
                // Slot `b`'s own bytes: a live buffer of the same slot (kept by a capture,
                // say) refuses the overlap, as the contract says.
                let offset = (b % BUFFERS) as u64 * 256;
                if let Ok(buffer) = memory.buffer(offset, 256, &stream) {
                    store_buffer(cx, b, buffer)?;
                }
            }
        }
        Op::Semaphore { s, wait } => {
            if let Some(stream) = cx.stream(s) {
                let Some(semaphore) = semaphore(cx) else {
                    return Ok(());
                };
                let value = {
                    let mut world = cx.world();
                    world.semaphore_value += 1;
                    world.semaphore_value
                };
                // Refusals (a capture of the stream invalidated, the legacy stream while a
                // blocking stream captures) are the contract's; a failure is checked over
                // the log.
                let _ = if wait {
                    stream.wait_semaphore(&semaphore, value)
                } else {
                    stream.signal_semaphore(&semaphore, value)
                };
            }
        }
        Op::PoolAlloc { b, s } => {
            let stream = cx.stream(s);
            if let Some(stream) = stream {
                let mut holds = vec![held(&stream, Hold::Contract)];
                holds.extend(home_of(cx, b).map(|home| held(&home, Hold::Contract)));
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                let Some(pool) = pool(cx) else {
                    return Ok(());
                };
                if let Ok(buffer) = cuda_core::Allocate::allocate(&pool, 256, &stream) {
                    cx.world().pool_buffers.push(buffer.ptr().0);
                    store_buffer(cx, b, buffer)?;
                }
            }
        }
        Op::PoolAccess { grant } => {
            if let Some(pool) = pool(cx) {
                let devices = [device];
                let _ = pool.set_access(if grant { &devices[..] } else { &[] });
            }
        }
        Op::GiveBack { b } => {
            let Some(home) = home_of(cx, b) else {
                return Ok(());
            };
            let Some(_claim) = claim(cx, &[held(&home, Hold::Contract)]) else {
                return Ok(());
            };
            let Some(slot) = cx.world().buffers[b % BUFFERS].take() else {
                return Ok(());
            };
            match Arc::try_unwrap(slot) {
                Ok(buffer) => match buffer.into_host_vec::<u32>() {
                    // Catches a vector given back short, or another's.
                    Ok(vec) if vec.len() != 256 => {
                        return Err(format!("a vector of {} given back", vec.len()));
                    }
                    Ok(_) => {}
                    Err((_, buffer)) => put_back(cx, b, Arc::new(buffer)),
                },
                Err(shared) => put_back(cx, b, shared),
            }
        }
        Op::HostRead { b, s } => {
            // Read through a unique borrow (`launch_host_func_reading` takes one): the buffer
            // is taken out of its slot for the call, and not read while a graph, a capture or
            // another operation shares it.
            let Some(stream) = cx.stream(s) else {
                return Ok(());
            };
            let Some(mut buffer) = cx.world().buffers[b % BUFFERS].take() else {
                return Ok(());
            };
            if cx.world().pool_buffers.contains(&buffer.ptr().0) {
                put_back(cx, b, buffer);
                return Ok(());
            }
            let home = buffer.deallocation_stream().clone();
            let holds = [held(&stream, Hold::Contract), held(&home, Hold::Use)];
            let Some(_claim) = claim(cx, &holds) else {
                put_back(cx, b, buffer);
                return Ok(());
            };
            let watch = Watch::new(&[&stream]);
            let (ptr, size) = (buffer.ptr().0, buffer.size());
            if let Some(exclusive) = Arc::get_mut(&mut buffer) {
                let read = stream.launch_host_func_reading(exclusive, |values: &[u32]| {
                    std::hint::black_box(values.iter().fold(0u32, |a, v| a.wrapping_add(*v)));
                });
                if read.is_ok() {
                    // The memory the host function just queued reads, for the order check
                    // (which takes it as a read at that host function's place in its stream).
                    standin::mark(&format!("host-read {ptr:#x} size={size}"));
                }
                refused_without_capture(&read, &stream, &[&home])?;
                if watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer.clone());
                }
            }
            put_back(cx, b, buffer);
        }
        Op::DropBuffer { b } => {
            let old = cx.world().buffers[b % BUFFERS].take();
            drop_buffer(cx, old);
        }
        Op::Fill { b, s, part } => {
            let stream = cx.stream(s);
            let Some(stream) = stream else {
                return Ok(());
            };
            let Some(mut buffer) = cx.world().buffers[b % BUFFERS].take() else {
                return Ok(());
            };
            let watch = Watch::new(&[&stream]);
            if watch.was {
                // Kept: a fill through `&mut` is then not tried.
                cx.world().kept_buffers.push(buffer.clone());
            }
            let home = buffer.deallocation_stream().clone();
            if let Some(exclusive) = Arc::get_mut(&mut buffer) {
                let filled = if part {
                    exclusive
                        .slice_mut(64..128)
                        .and_then(|mut range| range.fill(7u32, &stream))
                } else {
                    exclusive.fill(7u32, &stream)
                };
                refused_without_capture(&filled, &stream, &[&home])?;
                if !watch.was && watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer.clone());
                }
            }
            put_back(cx, b, buffer);
        }
        Op::FillOnHome { b } => {
            let Some(mut buffer) = cx.world().buffers[b % BUFFERS].take() else {
                return Ok(());
            };
            let stream = buffer.deallocation_stream().clone();
            let watch = Watch::new(&[&stream]);
            if watch.was {
                cx.world().kept_buffers.push(buffer.clone());
            }
            if let Some(exclusive) = Arc::get_mut(&mut buffer) {
                let _ = exclusive.fill(7u32, &stream);
                if !watch.was && watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer.clone());
                }
            }
            put_back(cx, b, buffer);
        }
        Op::SharedFill { b, s, part } => {
            let (stream, buffer) = {
                let world = cx.world();
                (world.stream(s), world.buffer(b))
            };
            if let (Some(stream), Some(buffer)) = (stream, buffer) {
                let watch = Watch::new(&[&stream]);
                let range = if part { 64..128 } else { 0..buffer.size() };
                let filled = buffer
                    .shared_slice(range)
                    .and_then(|slice| slice.fill(7u32, &stream));
                refused_without_capture(&filled, &stream, &[buffer.deallocation_stream()])?;
                if watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer);
                }
            }
        }
        Op::Kernel { b, s, part } => {
            let (stream, buffer) = {
                let world = cx.world();
                (world.stream(s), world.buffer(b))
            };
            if let (Some(stream), Some(buffer), Some(kernel)) = (stream, buffer, kernel(cx)) {
                let watch = Watch::new(&[&stream]);
                let config = cuda_core::LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                let slice = buffer.slice(64..128).expect("buffers have 128 bytes");
                let arg: &dyn cuda_core::KernelArg = if part { &slice } else { &buffer };
                // SAFETY: the stand-in runs no kernel.
                let launched = unsafe { cuda_core::launch(&stream, &config, &kernel, &[arg]) };
                refused_without_capture(&launched, &stream, &[buffer.deallocation_stream()])?;
                if watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer);
                }
            }
        }
        Op::Replay {
            b,
            s,
            part,
            twice,
            unchanged,
        } => replay_run(cx, b, s, part, if twice { 2 } else { 1 }, unchanged, false),
        Op::ReplayUnchanged { b, s, part, twice } => {
            replay_run(cx, b, s, part, if twice { 2 } else { 1 }, true, true)
        }
        Op::Copy { from, to, s, part } => {
            let (from, to) = (from % BUFFERS, to % BUFFERS);
            if from == to {
                return Ok(());
            }
            let (stream, src) = {
                let world = cx.world();
                (world.stream(s), world.buffers[from].clone())
            };
            let (Some(stream), Some(src)) = (stream, src) else {
                return Ok(());
            };
            let Some(mut dst) = cx.world().buffers[to].take() else {
                return Ok(());
            };
            let watch = Watch::new(&[&stream]);
            if watch.was {
                let mut world = cx.world();
                world.kept_buffers.push(src.clone());
                world.kept_buffers.push(dst.clone());
            }
            let dst_home = dst.deallocation_stream().clone();
            if let Some(exclusive) = Arc::get_mut(&mut dst) {
                let copied = if part {
                    let (from, to) = (src.slice(0..64), exclusive.slice_mut(64..128));
                    from.and_then(|from| from.copy_to(to?, &stream))
                } else {
                    src.copy_to(exclusive, &stream)
                };
                refused_without_capture(&copied, &stream, &[src.deallocation_stream(), &dst_home])?;
                if !watch.was && watch.captured(&[&stream]) {
                    let mut world = cx.world();
                    world.kept_buffers.push(src.clone());
                    world.kept_buffers.push(dst.clone());
                }
            }
            put_back(cx, to, dst);
        }
        Op::SharedCopy { from, to, s, part } => {
            let (from, to) = (from % BUFFERS, to % BUFFERS);
            if from == to {
                return Ok(());
            }
            let (stream, src, dst) = {
                let world = cx.world();
                (
                    world.stream(s),
                    world.buffers[from].clone(),
                    world.buffers[to].clone(),
                )
            };
            if let (Some(stream), Some(src), Some(dst)) = (stream, src, dst) {
                let watch = Watch::new(&[&stream]);
                let copied = if part {
                    dst.shared_slice(64..128).and_then(|into| {
                        let from = src.slice(0..64)?;
                        into.copy_from(from, &stream)
                    })
                } else {
                    src.copy_to(&dst, &stream)
                };
                let homes = [src.deallocation_stream(), dst.deallocation_stream()];
                refused_without_capture(&copied, &stream, &homes)?;
                if watch.captured(&[&stream]) {
                    let mut world = cx.world();
                    world.kept_buffers.push(src);
                    world.kept_buffers.push(dst);
                }
            }
        }
        Op::ToHost { b, s } => {
            let (stream, buffer) = {
                let world = cx.world();
                (world.stream(s), world.buffer(b))
            };
            if let (Some(stream), Some(buffer)) = (stream, buffer) {
                let watch = Watch::new(&[&stream]);
                let _ = buffer.to_vec::<u8>(&stream);
                if watch.captured(&[&stream]) {
                    cx.world().kept_buffers.push(buffer);
                }
            }
        }
        Op::SetHome { b, s } => {
            let stream = cx.stream(s);
            let Some(stream) = stream else {
                return Ok(());
            };
            let Some(mut buffer) = cx.world().buffers[b % BUFFERS].take() else {
                return Ok(());
            };
            if let Some(exclusive) = Arc::get_mut(&mut buffer) {
                if exclusive.set_deallocation_stream(&stream).is_ok() {
                    // Its stream changed: no launch of it is declared unchanged until one reads
                    // it again (`launch_unchanged` asks for the same deallocation stream).
                    let mut world = cx.world();
                    for nodes in &mut world.replay_args {
                        if nodes
                            .iter()
                            .any(|(node, _)| std::ptr::eq(node.as_ptr(), Arc::as_ptr(&buffer)))
                        {
                            nodes.clear();
                        }
                    }
                }
            }
            put_back(cx, b, buffer);
        }
        Op::Begin { s, mode } => {
            if let Some(stream) = cx.stream(s) {
                // A global capture makes the driver refuse other threads' questions: by
                // default it does not begin while a handle's recycling asks one.
                let mut holds = vec![held(&stream, Hold::Capture)];
                if mode == 0 {
                    holds.push((RECYCLING, Hold::End));
                }
                let Some(_claim) = claim(cx, &holds) else {
                    return Ok(());
                };
                let mode = match mode {
                    0 => CaptureMode::Global,
                    1 => CaptureMode::ThreadLocal,
                    _ => CaptureMode::Relaxed,
                };
                // SAFETY: the test keeps what a capture uses to the program's end, allocates
                // and frees no buffer on a stream in a capture (drops of such buffers are put
                // off; see `claim` for those under way), and queues host functions only where
                // the crate lets it.
                if unsafe { stream.begin_capture(mode) }.is_ok() {
                    cx.world().began.push(handle_of(&stream));
                }
            }
        }
        Op::CaptureInto { s, g, b, mode } => {
            let Some(stream) = cx.stream(s) else {
                return Ok(());
            };
            // Claimed as a capture's begin and end are (see `Op::Begin`).
            let mut holds = vec![held(&stream, Hold::Capture)];
            if mode == 0 {
                holds.push((RECYCLING, Hold::End));
            }
            let Some(_claim) = claim(cx, &holds) else {
                return Ok(());
            };
            let Some(mut built) = cx.world().graphs[g % GRAPHS].take() else {
                return Ok(());
            };
            let mode = match mode {
                0 => CaptureMode::Global,
                1 => CaptureMode::ThreadLocal,
                _ => CaptureMode::Relaxed,
            };
            let mut filled = None;
            // SAFETY: as for `Op::Begin`; the buffer the capture fills is kept to the
            // program's end (below), before the graph can be launched.
            let captured = unsafe {
                stream.capture_into(&mut built.graph, &[], mode, |c| {
                    let buffer = cx.world().buffers[b % BUFFERS].take();
                    if let Some(mut buffer) = buffer {
                        let home = buffer.deallocation_stream().clone();
                        if let Some(exclusive) = Arc::get_mut(&mut buffer) {
                            let result = exclusive.fill(7u32, c);
                            filled = Some(refused_without_capture(&result, c, &[&home]));
                        }
                        cx.world().kept_buffers.push(buffer.clone());
                        put_back(cx, b, buffer);
                    }
                    Ok(())
                })
            };
            // Catches a capture left open by capture_into.
            if capturing(&stream) && captured.is_ok() {
                return Err(format!("{stream:?} still captures after capture_into"));
            }
            let old = cx.world().graphs[g % GRAPHS].replace(built);
            drop(old);
            if let Some(problem) = filled {
                problem?;
            }
        }
        Op::End { s } => {
            if let Some(stream) = cx.stream(s) {
                // Any stream, one that only joined a capture too (see
                // `model_ending_a_joined_stream_keeps_no_capture_open`).
                let handle = handle_of(&stream);
                cx.world().began.retain(|&h| h != handle);
                if let Ok(graph) = stream.end_capture() {
                    let counter = Arc::new(AtomicUsize::new(0));
                    let built = Built {
                        graph,
                        nodes: Vec::new(),
                        counter,
                    };
                    let old = cx.world().graphs[s % GRAPHS].replace(built);
                    drop(old);
                }
            }
        }
        Op::HostFunc { s } | Op::HostFuncRepeatable { s } | Op::HostBlock { s } => {
            if let Some(stream) = cx.stream(s) {
                let Some(_claim) = claim(cx, &[held(&stream, Hold::Contract)]) else {
                    return Ok(());
                };
                let counter = Arc::new(AtomicUsize::new(0));
                let theirs = counter.clone();
                let (queued, what) = match op {
                    Op::HostFunc { .. } => (
                        stream.launch_host_func(move || {
                            theirs.fetch_add(1, Ordering::SeqCst);
                        }),
                        "host function",
                    ),
                    // Its closure captures nothing (its runs are not counted, but for the
                    // stats): should the crate free it while the driver may still run it (see
                    // `check_log`), the run reads no freed memory.
                    Op::HostFuncRepeatable { .. } => (
                        stream.launch_host_func_repeatable(|| {
                            REPEATABLE_RUNS.fetch_add(1, Ordering::Relaxed);
                        }),
                        "repeatable host function",
                    ),
                    _ => {
                        let latch = Arc::new(Latch {
                            open: Mutex::new(false),
                            opened: Condvar::new(),
                            seq: LATCH_SEQ.fetch_add(1, Ordering::SeqCst),
                        });
                        LATCHES
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(latch.clone());
                        let f = held_host_function(latch, theirs);
                        (stream.launch_host_func(f), "held host function")
                    }
                };
                // A repeatable one is not counted (in a capture it runs once per launch of
                // the graphs made of it; outside one it is `launch_host_func`).
                let repeatable = matches!(op, Op::HostFuncRepeatable { .. });
                if !repeatable {
                    let what = format!("{what} on {stream:?}");
                    cx.world()
                        .promised
                        .push((counter, usize::from(queued.is_ok()), what));
                }
            }
        }
        Op::Release => release_latches(),
        Op::BuildGraph { g, fill, host } => {
            let Ok(mut graph) = Graph::new(device) else {
                return Ok(());
            };
            let mut nodes = Vec::new();
            let counter = Arc::new(AtomicUsize::new(0));
            if graph.add_empty(&[]).is_ok() {
                nodes.push("empty");
            }
            if let Some(buffer) = fill.and_then(|b| cx.buffer(b)) {
                if graph.add_fill(&[], &buffer, 3u32).is_ok() {
                    nodes.push("fill");
                    // The graph may drop the buffer, its deallocation stream's last clone
                    // with it, on the release thread: see `drop_stream`. The graph's drop of
                    // the buffer may come while a capture is open on its stream (see
                    // `model_a_graphs_buffer_is_never_freed_into_a_capture` below).
                    cx.world()
                        .kept_streams
                        .push(buffer.deallocation_stream().clone());
                }
            }
            if host {
                let theirs = counter.clone();
                let added = graph.add_host(&[], move || {
                    theirs.fetch_add(1, Ordering::SeqCst);
                });
                if added.is_ok() {
                    nodes.push("host");
                }
            }
            let built = Built {
                graph,
                nodes,
                counter,
            };
            let old = cx.world().graphs[g % GRAPHS].replace(built);
            drop(old);
        }
        Op::BuildCopyGraph { g, from, to } => {
            let (src, dst) = {
                let world = cx.world();
                (world.buffer(from), world.buffer(to))
            };
            let (Some(src), Some(dst)) = (src, dst) else {
                return Ok(());
            };
            let Ok(mut graph) = Graph::new(device) else {
                return Ok(());
            };
            let mut nodes = Vec::new();
            if graph.add_copy(&[], &src, &dst).is_ok() {
                nodes.push("copy");
                let mut world = cx.world();
                world.kept_streams.push(src.deallocation_stream().clone());
                world.kept_streams.push(dst.deallocation_stream().clone());
            }
            let built = Built {
                graph,
                nodes,
                counter: Arc::new(AtomicUsize::new(0)),
            };
            let old = cx.world().graphs[g % GRAPHS].replace(built);
            drop(old);
        }
        Op::RemoveNode { g } => {
            let Some(mut built) = take_graph(cx, g) else {
                return Ok(());
            };
            if let Ok(nodes) = built.graph.nodes() {
                // The node added last (the driver's order of nodes is not promised: the
                // stand-in's is the order of adding).
                if let Some(&last) = nodes.last() {
                    if built.graph.remove_node(last).is_ok() {
                        built.nodes.pop();
                    }
                }
            }
            put_graph(cx, g, built);
        }
        Op::Instantiate { g, x } => {
            let Some(built) = take_graph(cx, g) else {
                return Ok(());
            };
            let made = built.graph.instantiate(GraphOptions::default());
            let hosts = built.nodes.iter().filter(|&&k| k == "host").count();
            let counter = built.counter.clone();
            put_graph(cx, g, built);
            if let Ok(exec) = made {
                let exec = Exec {
                    exec,
                    hosts,
                    counter,
                };
                let old = cx.world().execs[x % GRAPHS].replace(exec);
                drop(old);
            }
        }
        Op::Launch { x, s } => {
            let Some(stream) = cx.stream(s) else {
                return Ok(());
            };
            // Its host nodes' work: claimed (see `claim`).
            let Some(_claim) = claim(cx, &[held(&stream, Hold::Contract)]) else {
                return Ok(());
            };
            let exec = {
                let mut world = cx.world();
                let exec = world.execs[x % GRAPHS].take();
                world.out += usize::from(exec.is_some());
                exec
            };
            let Some(exec) = exec else {
                return Ok(());
            };
            // A launch into a capture would need the executable graph kept for the
            // capture's launches: not tried.
            if !capturing(&stream) && exec.exec.launch(&stream).is_ok() && exec.hosts > 0 {
                let counter = exec.counter.clone();
                let what = format!("a graph's host node (launched on {stream:?})");
                cx.world().promised.push((counter, exec.hosts, what));
            }
            let extra = {
                let mut world = cx.world();
                world.out -= 1;
                let slot = &mut world.execs[x % GRAPHS];
                if slot.is_none() {
                    *slot = Some(exec);
                    None
                } else {
                    Some(exec)
                }
            };
            drop(extra);
        }
        Op::DropGraph { g } => {
            let old = cx.world().graphs[g % GRAPHS].take();
            drop(old);
        }
        Op::DropExec { x } => {
            let old = cx.world().execs[x % GRAPHS].take();
            drop(old);
        }
        #[cfg(feature = "nccl")]
        Op::Nccl {
            send,
            recv,
            s,
            write,
        } => nccl_group(cx, send, recv, s, write)?,
    }
    Ok(())
}

/// The program's pinned pool, made on first use.
/// The program's imported external memory (a file standing for another API's export), made on
/// first use.
fn external(cx: &Cx<'_>) -> Option<ExternalMemory> {
    let made = cx.world().external.clone();
    if made.is_some() {
        return made;
    }
    let device = cx.world().device;
    let file = tempfile::tempfile().ok()?;
    file.set_len(1 << 20).ok()?;
    // SAFETY: the stand-in reads nothing of the file but its size.
    let made = unsafe { ExternalMemory::import_fd(device, file.into(), 1 << 20, false) }.ok()?;
    let mut world = cx.world();
    Some(world.external.get_or_insert(made).clone())
}

/// The program's imported timeline semaphore, made on first use.
fn semaphore(cx: &Cx<'_>) -> Option<ExternalSemaphore> {
    let made = cx.world().semaphore.clone();
    if made.is_some() {
        return made;
    }
    let device = cx.world().device;
    let file = tempfile::tempfile().ok()?;
    // SAFETY: the stand-in keeps the descriptor and nothing else.
    let made =
        unsafe { ExternalSemaphore::import_fd(device, file.into(), SemaphoreKind::Timeline) }
            .ok()?;
    let mut world = cx.world();
    Some(world.semaphore.get_or_insert(made).clone())
}

fn pool(cx: &Cx<'_>) -> Option<Arc<PinnedMemoryPool>> {
    let made = cx.world().pool.clone();
    if made.is_some() {
        return made;
    }
    let device = cx.world().device;
    let made = PinnedMemoryPool::new(device, PinnedMemoryPoolOptions::default()).ok()?;
    let mut world = cx.world();
    Some(world.pool.get_or_insert(made).clone())
}

/// Takes graph `g` out of its slot for an operation.
fn take_graph(cx: &Cx<'_>, g: usize) -> Option<Built> {
    let mut world = cx.world();
    let built = world.graphs[g % GRAPHS].take();
    world.out += usize::from(built.is_some());
    built
}

/// Puts graph `g` back, unless its slot was filled meanwhile (it is dropped then).
fn put_graph(cx: &Cx<'_>, g: usize, built: Built) {
    let extra = {
        let mut world = cx.world();
        world.out -= 1;
        let slot = &mut world.graphs[g % GRAPHS];
        if slot.is_none() {
            *slot = Some(built);
            None
        } else {
            Some(built)
        }
    };
    drop(extra);
}

/// A run of the program's replayable region: `launches` launches of `k1` over buffer `b`
/// (whole, or bytes 64..128) on stream `s`; with `unchanged`, the second (with `every`, every
/// one) declared unchanged.
fn replay_run(
    cx: &Cx<'_>,
    b: usize,
    s: usize,
    part: bool,
    launches: usize,
    unchanged: bool,
    every: bool,
) {
    let (stream, buffer) = {
        let world = cx.world();
        (world.stream(s), world.buffer(b))
    };
    let (Some(stream), Some(buffer), Some(kernel)) = (stream, buffer, kernel(cx)) else {
        return;
    };
    // Its launch: claimed, as a graph's (see `claim`).
    let holds = [
        held(&stream, Hold::Contract),
        held(buffer.deallocation_stream(), Hold::Use),
    ];
    let Some(_claim) = claim(cx, &holds) else {
        return;
    };
    let region = {
        let mut world = cx.world();
        if world.replay.is_none() && world.replay_made {
            return; // another operation runs it
        }
        world.replay_made = true;
        world
            .replay
            .take()
            .unwrap_or_else(|| cuda_core::Replay::with_capacity(2))
    };
    let mut region = region;
    let config = cuda_core::LaunchConfig::new([1, 1, 1], [32, 1, 1]);
    let slice = buffer.slice(64..128).expect("buffers have 128 bytes");
    let arg: &dyn cuda_core::KernelArg = if part { &slice } else { &buffer };
    let given = |(node, as_part): &(std::sync::Weak<Buffer>, bool)| {
        *as_part == part && std::ptr::eq(node.as_ptr(), Arc::as_ptr(&buffer))
    };
    let same: Vec<bool> = {
        let world = cx.world();
        let nodes = &world.replay_args[launches];
        (0..launches)
            .map(|i| nodes.get(i).is_some_and(given))
            .collect()
    };
    // Refused on a capturing stream; otherwise one graph launch on `stream`.
    let ran = region.run(&stream, |r| {
        for (i, &given_before) in same.iter().enumerate() {
            // Only where debug assertions check the promise (a release build would keep the
            // built buffer without a word), and only where the node was given this buffer
            // (a buffer at a freed one's address passes the check).
            let declared = unchanged && (every || i == 1) && cfg!(debug_assertions) && given_before;
            if declared {
                // SAFETY: the stand-in runs no kernel; the node was last given this buffer,
                // alive, and so with the same deallocation stream.
                unsafe { r.launch_unchanged(&config, &kernel, &[arg])? };
            } else {
                // SAFETY: the stand-in runs no kernel.
                unsafe { r.launch(&config, &kernel, &[arg])? };
            }
        }
        Ok(())
    });
    let mut world = cx.world();
    // A run that failed may have changed the nodes or not: none is declared until one reads.
    world.replay_args[launches] = match ran {
        Ok(()) => vec![(Arc::downgrade(&buffer), part); launches],
        Err(_) => Vec::new(),
    };
    world.replay = Some(region);
}

/// An NCCL group: an all-reduce of `send` into `recv` on stream `s`, and with `write` a fill of
/// the send buffer through a `SharedSlice` on its own stream, in the group's body.
#[cfg(feature = "nccl")]
fn nccl_group(cx: &Cx<'_>, send: usize, recv: usize, s: usize, write: bool) -> Result<(), String> {
    use cuda_core::nccl::{group, Communicator, ReduceOp};
    let (send, recv) = (send % BUFFERS, recv % BUFFERS);
    if send == recv {
        return Ok(());
    }
    let made = cx.world().comm.clone();
    let comm = match made {
        Some(comm) => comm,
        None => {
            let device = cx.world().device;
            let Ok(mut comms) = Communicator::init_all(&[device]) else {
                return Ok(());
            };
            let made = Arc::new(comms.remove(0));
            cx.world().comm.get_or_insert(made).clone()
        }
    };
    let (stream, source) = {
        let world = cx.world();
        (world.stream(s), world.buffers[send].clone())
    };
    let (Some(stream), Some(source)) = (stream, source) else {
        return Ok(());
    };
    if source.size() % 4 != 0 {
        return Ok(());
    }
    let Some(mut target) = cx.world().buffers[recv].take() else {
        return Ok(());
    };
    let watch = Watch::new(&[&stream, source.deallocation_stream()]);
    if watch.was {
        let mut world = cx.world();
        world.kept_buffers.push(source.clone());
        world.kept_buffers.push(target.clone());
    }
    if let Some(exclusive) = Arc::get_mut(&mut target) {
        if exclusive.size() == source.size() {
            let _ = group(|g| {
                g.all_reduce::<f32>(&comm, &source, &mut *exclusive, ReduceOp::Sum, &stream)?;
                if write {
                    let home = source.deallocation_stream();
                    source.shared_slice(..)?.fill(2u32, home)?;
                }
                Ok(())
            });
        }
        if !watch.was && watch.captured(&[&stream, source.deallocation_stream()]) {
            let mut world = cx.world();
            world.kept_buffers.push(source.clone());
            world.kept_buffers.push(target.clone());
        }
    }
    put_back(cx, recv, target);
    Ok(())
}

/// Drops a stream now, or keeps it to the program's end while a graph, an executable graph or
/// a user object of the driver's may hold a buffer of it: that buffer's drop, on the crate's
/// release thread, would then drop the stream's last clone there, and the release thread keeps
/// its recycled handles for good (so the leak check could not tell them from a leak).
/// A stream that joined a capture it did not begin is dropped like any other (see
/// `model_a_joined_stream_dropped_mid_capture_*` below).
fn drop_stream(cx: &Cx<'_>, stream: Option<Stream>) {
    if let Some(stream) = stream {
        let mut world = cx.world();
        let graphs = world.graphs.iter().flatten().count()
            + world.execs.iter().flatten().count()
            + world.out;
        if graphs > 0 || standin::model_live(5) > 0 {
            world.kept_streams.push(stream);
        } else {
            drop(world);
            drop(stream);
        }
    }
}

/// Drops a buffer now, or keeps it while its deallocation stream is in a capture (where its
/// free would be captured: `begin_capture`'s contract forbids that drop), or may begin one
/// (another running operation claims it: see `claim`).
fn drop_buffer(cx: &Cx<'_>, buffer: Option<Arc<Buffer>>) {
    if let Some(buffer) = buffer {
        let home = buffer.deallocation_stream().clone();
        let claimed = claim(cx, &[held(&home, Hold::Contract)]);
        if claimed.is_none() || capturing(&home) {
            cx.world().kept_buffers.push(buffer);
            return;
        }
        drop(buffer);
        drop(claimed);
    }
}

/// The driver calls whose capture refusals and failures an operation asked for itself.
fn direct_calls(op: &Op) -> &'static [&'static str] {
    match op {
        Op::SyncStream { .. } => &["cuStreamSynchronize"],
        Op::QueryStream { .. } => &["cuStreamQuery"],
        Op::SyncEvent { .. } => &["cuEventSynchronize"],
        Op::QueryEvent { .. } => &["cuEventQuery"],
        Op::Wait { .. } => &["cuStreamWaitEvent"],
        Op::WaitStream { .. } => &["cuEventRecord", "cuStreamWaitEvent"],
        Op::Record { .. } => &["cuEventRecord"],
        Op::Begin { .. } => &["cuStreamBeginCapture"],
        Op::End { .. } => &["cuStreamEndCapture"],
        Op::CaptureInto { .. } => &[
            "cuStreamBeginCapture",
            "cuStreamEndCapture",
            "cuMemsetD32Async",
        ],
        Op::Fill { .. } | Op::FillOnHome { .. } | Op::SharedFill { .. } => &["cuMemsetD32Async"],
        Op::Kernel { .. } => &["cuLaunchKernel"],
        // Dropping a stream whose capture is open ends it (refused from another thread).
        Op::NewStream { .. } | Op::DropStream { .. } | Op::Legacy { .. } | Op::PerThread { .. } => {
            &["cuStreamEndCapture"]
        }
        Op::Copy { .. } | Op::SharedCopy { .. } => &["cuMemcpyAsync"],
        // A read back synchronises the stream: refused in a capture, or under another thread's
        // global capture (then retried with this thread relaxed, as documented).
        Op::ToHost { .. } => &["cuMemcpyDtoHAsync", "cuStreamSynchronize"],
        // A timed wait's own questions are the crate's (README: no failing driver call of its
        // own), but for those about the stream or event it was given, which a capture of
        // that very stream or event refuses (see `refusal_allowed`).
        Op::SyncTimeout { .. } => &["cuStreamQuery"],
        Op::WaitTimeout { .. } | Op::PollEvent { .. } => &["cuEventQuery"],
        Op::ToVecTimeout { .. } => &["cuStreamQuery", "cuMemcpyDtoHAsync", "cuStreamSynchronize"],
        Op::HostFunc { .. } | Op::HostFuncRepeatable { .. } | Op::HostBlock { .. } => {
            &["cuLaunchHostFunc"]
        }
        Op::Launch { .. } | Op::Replay { .. } | Op::ReplayUnchanged { .. } => &["cuGraphLaunch"],
        Op::Alloc { .. } | Op::PoolAlloc { .. } => &["cuMemAllocFromPoolAsync"],
        // Registering is synchronous: refused during a capture of its own thread (the crate
        // makes it relaxed, so only a capture of this very thread in a strict mode refuses).
        Op::AllocHost { .. } => &["cuMemHostRegister"],
        Op::AllocExternal { .. } => &[],
        Op::Semaphore { wait: false, .. } => &["cuSignalExternalSemaphoresAsync"],
        Op::Semaphore { wait: true, .. } => &["cuWaitExternalSemaphoresAsync"],
        // Giving a vector back synchronises its stream, as a read back does.
        Op::GiveBack { .. } => &["cuStreamSynchronize"],
        // Revoking access waits for the device's work: refused during this thread's own
        // capture, as a device synchronisation is.
        Op::PoolAccess { .. } => &["cuCtxSynchronize"],
        // The stand-in NCCL asks the current device itself (`cudaGetDevice` in NCCL), with no
        // context current on a thread that made none.
        #[cfg(feature = "nccl")]
        Op::Nccl { .. } => &["cuMemsetD32Async", "cuCtxGetDevice"],
        _ => &[],
    }
}

/// Whether `line`, a refusal (`!refused CODE CALL WHAT: WHY`) made in operation `op`, is one
/// the contract allows; `others`: it invalidated a capture another thread began.
fn refusal_allowed(op: Option<&Op>, words: &[&str], line: &str, others: bool) -> bool {
    if words.first() != Some(&"!refused") {
        return false;
    }
    // Work refused on a stream whose capture is invalidated already (901): that capture is
    // broken already (by a call the test asked for), and the crate returns the driver's error.
    if words.get(1) == Some(&"901") {
        return true;
    }
    // Catches legacy-stream work that reached the driver while a blocking stream captures:
    // the crate promises to refuse it before the driver (the driver invalidates the capture).
    if line.contains("the legacy stream while a blocking stream captures") {
        return false;
    }
    let Some(op) = op else {
        return false;
    };
    if !direct_calls(op).iter().any(|c| words.get(2) == Some(c)) {
        return false;
    }
    let timed = matches!(
        op,
        Op::SyncTimeout { .. }
            | Op::WaitTimeout { .. }
            | Op::ToVecTimeout { .. }
            | Op::PollEvent { .. }
    );
    // Catches a timed wait's or a poll's question refused for another thread's capture (a
    // global one, which it invalidates): a wait the crate makes on its own must be one no
    // capture of another thread forbids.
    !(timed && others && line.contains("a potentially unsafe call"))
}

type Job = Box<dyn FnOnce() + Send>;

/// A thread of a program, running the jobs it is handed in turn.
struct Worker {
    jobs: mpsc::Sender<Job>,
    thread: std::thread::JoinHandle<()>,
}

impl Worker {
    fn start() -> Worker {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::spawn(move || {
            for job in queue {
                job();
            }
        });
        Worker { jobs, thread }
    }

    /// Runs `f` on this worker and waits for it; a panic is an `Err`. `None` where it did
    /// not return within 10 s (its thread is stuck).
    fn run(
        &self,
        f: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Option<Result<(), String>> {
        let (done, result) = mpsc::sync_channel(1);
        self.send(move || {
            let _ = done.send(caught(f));
        });
        match result.recv_timeout(Duration::from_secs(10)) {
            Ok(result) => Some(result),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Err("a worker ended".to_owned())),
        }
    }

    /// Hands `f` to this worker.
    fn send(&self, f: impl FnOnce() + Send + 'static) {
        let _ = self.jobs.send(Box::new(f));
    }

    fn end(self) {
        drop(self.jobs);
        // Joined: its thread-local recycled handles are destroyed by then.
        let _ = self.thread.join();
    }
}

/// `f`'s result, a panic as an `Err`.
fn caught(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let text = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        Err(format!("panicked: {text}"))
    })
}

/// Waits until the crate's release thread has taken every batch the stand-in gave it (host
/// functions' closures and user objects' values, once they returned), so that its driver calls
/// come before the next operation's. `base` is (host functions returned, destructors
/// returned, releases) at the program's start.
fn settle(base: (u64, u64, u64)) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let due = (standin::model_count(3) - base.0) + (standin::model_count(4) - base.1);
        let released = cuda_core::graph_releases() - base.2;
        if released >= due {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the release thread got {released} of {due} batches within 3 s"
            ));
        }
        // Asleep, so that the watch sees it wait (for a release thread that waits for a lock
        // a paused thread holds, say) and hands the baton on.
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// The program phase of thread `t`: the operations the baton gives it, each marked in the
/// log, applied and settled.
fn run_ops(
    baton: &Arc<Baton>,
    world: &Arc<Mutex<World>>,
    program: &Program,
    t: usize,
    base: (u64, u64, u64),
) {
    ME.with(|me| *me.borrow_mut() = Some((baton.clone(), t)));
    baton.note_tid(t);
    while let Some(next) = baton.wait_to_start(t) {
        let index = match next {
            Next::Op(index) => index,
            Next::EndCaptures => {
                standin::mark(&format!("stall: thread {t} ends the captures it began"));
                end_captures(world);
                baton.ended_captures(t);
                continue;
            }
        };
        let op = &program.steps[index].1;
        standin::mark(&format!("op {index}: {op:?}"));
        let cx = Cx {
            world,
            baton,
            thread: t,
            op: index,
        };
        let result = caught(|| apply(&cx, op)).and_then(|()| settle(base));
        baton.end(t, index, result);
    }
    ME.with(|me| *me.borrow_mut() = None);
}

/// What a stalled program is undone with (see [`Baton::watch`]): held host functions let go,
/// then the program's captures ended from the watching thread (a thread may wait for
/// another's capture to end, which a later operation of a busy thread would have ended), their
/// streams kept to the program's end.
fn unstall(world: &Mutex<World>, baton: Option<&Baton>, quiet: Duration, ended: &mut bool) {
    release_latches();
    if quiet < STALL_CAPTURES {
        *ended = false; // a new stall
    } else if !*ended {
        *ended = true;
        STALLS_ENDED.fetch_add(1, Ordering::Relaxed);
        // A capture in a strict mode is ended only from the thread that began it: each idle
        // thread ends its own (the watcher's ends below reach the relaxed ones).
        if let Some(baton) = baton {
            baton.ask_idle_to_end_captures();
        }
        standin::mark("stall: end the program's captures");
        end_captures(world);
    }
}

/// Runs `program` and checks it; `Err` says which invariant broke, with the log.
pub(crate) fn run_program(device: Device, program: &Program) -> Result<(), String> {
    standin::clear_log();
    standin::set_yield(at_driver_call);
    let live: Vec<i32> = (0..8).map(standin::model_live).collect();
    let base = (
        standin::model_count(3),
        standin::model_count(4),
        cuda_core::graph_releases(),
    );
    let world = Arc::new(Mutex::new(World::new(device, program.streams)));
    let workers: Vec<Worker> = (0..program.threads).map(|_| Worker::start()).collect();
    let baton = Arc::new(Baton::new(program));
    let shared = Arc::new(program.clone());
    let (phase_done, phases) = mpsc::channel();
    for (t, worker) in workers.iter().enumerate() {
        let (baton, world, program, done) = (
            baton.clone(),
            world.clone(),
            shared.clone(),
            phase_done.clone(),
        );
        worker.send(move || {
            run_ops(&baton, &world, &program, t, base);
            let _ = done.send(t);
        });
    }
    baton.start();
    let mut ended = false;
    let watching = baton.clone();
    let watched = baton.watch(|quiet| unstall(&world, Some(&watching), quiet, &mut ended));
    if let Err(e) = watched {
        stuck(program, &e);
    }
    for _ in 0..program.threads {
        if phases.recv_timeout(Duration::from_secs(10)).is_err() {
            stuck(program, "a thread's operations never returned");
        }
    }
    let mut failure = None;
    if let Some((index, e)) = baton.failure() {
        failure.get_or_insert_with(|| {
            format!("operation {index} ({:?}): {e}", program.steps[index].1)
        });
    }
    let ops: Vec<&Op> = program.steps.iter().map(|(_, op)| op).collect();
    let cleaned = cleanup(&world, &workers, base).unwrap_or_else(|| {
        // Catches a capture the crate counts open for good (the cleanup's device
        // synchronisation waits for it) where the driver has none open any more.
        stuck(program, "the cleanup did not return within 10 s")
    });
    for worker in workers {
        worker.end();
    }
    let probe = if failure.is_none() && cleaned.is_ok() {
        probe_recycling(device)
    } else {
        Ok(())
    };
    let log = standin::log();
    count_lines(&log);
    // (The log's findings before the cleanup's and the end's: they say what went wrong first.)
    let checked = failure
        .map_or(Ok(()), Err)
        .and_then(|()| check_log(&log, &ops))
        .and(cleaned)
        .and(probe)
        .and_then(|()| check_end(&world, &live));
    checked.map_err(|e| format!("{e}\n--- the stand-in's log:\n{log}"))
}

/// The streams the program can reach: its slots, those it keeps, and the deallocation
/// streams of its buffers (a stream dropped by the program lives on in them).
fn reachable_streams(world: &World) -> Vec<Stream> {
    let mut streams: Vec<Stream> = world.streams.iter().flatten().cloned().collect();
    streams.extend(world.kept_streams.iter().cloned());
    for buffer in world.buffers.iter().flatten().chain(&world.kept_buffers) {
        streams.push(buffer.deallocation_stream().clone());
    }
    streams
}

/// A program whose threads are stuck: the process can run no other (what they hold, captures
/// the crate counts open among it, would hold the next programs up), so it ends here, saying
/// why.
fn stuck(program: &Program, why: &str) -> ! {
    println!(
        "{}\n{why}\n--- the stand-in's log:\n{}",
        program.to_rust(),
        standin::log()
    );
    println!("model: a program's threads are stuck; no more programs can run in this process");
    if std::env::var_os("CUDA_CORE_MODEL_STUCK_WAIT").is_some() {
        // For a debugger: `gdb -p PID -batch -ex "thread apply all bt"` shows who waits on what.
        println!(
            "model: process {} waits 10 minutes before it ends",
            std::process::id()
        );
        std::thread::sleep(Duration::from_secs(600));
    }
    std::process::exit(101)
}

/// Ends every capture still open on a stream the program can reach.
fn end_captures(world: &Mutex<World>) {
    // Only captures begun on it (see `Op::End`). Collected with the world locked, ended
    // without it: an end may wait for a lock of the crate's that a thread paused at a driver
    // call holds (a capture's begin holds the capture gate through the driver's call), and
    // that thread, or the watch that would let it go on, may need the world first.
    let streams = {
        let world = world.lock().unwrap_or_else(|e| e.into_inner());
        let mut streams = reachable_streams(&world);
        // (Clones left out here are dropped while the world, which holds the stream too,
        // is locked: never the last.)
        streams.retain(|s| world.began.contains(&handle_of(s)) && capturing(s));
        streams
    };
    for stream in &streams {
        if capturing(stream) {
            let _ = stream.end_capture();
        }
    }
    // Kept to the program's end, not dropped here: a thread that an end lets go runs on
    // alongside this one and may drop its own clone meanwhile (a slot replaced), and the
    // last clone dropped here would be recycled into this thread's own list (the crate
    // keeps a dropped handle for reuse per thread), which outlives the program, so the
    // leak check would count it (see `the_stall_watcher_drops_no_stream_of_the_program`).
    let mut world = world.lock().unwrap_or_else(|e| e.into_inner());
    world.kept_streams.extend(streams);
}

/// Ends what the program left (`None`: a step did not return): held host functions, captures (from each thread in turn, so
/// that the one that began a capture ends it where it still can), graphs, then a
/// synchronisation of the device, then buffers, events and streams, on the first thread.
fn cleanup(
    world: &Arc<Mutex<World>>,
    workers: &[Worker],
    base: (u64, u64, u64),
) -> Option<Result<(), String>> {
    release_latches();
    for (thread, worker) in workers.iter().enumerate() {
        let world = world.clone();
        let ended = worker.run(move || {
            standin::mark(&format!("cleanup: end captures from thread {thread}"));
            end_captures(&world);
            Ok(())
        })?;
        if ended.is_err() {
            return Some(ended);
        }
    }
    let world = world.clone();
    workers[0].run(move || {
        standin::mark("cleanup: drop graphs and executable graphs, synchronise");
        let mut guard = world.lock().unwrap_or_else(|e| e.into_inner());
        guard.execs.iter_mut().for_each(|x| *x = None);
        guard.graphs.iter_mut().for_each(|g| *g = None);
        guard.replay = None;
        guard.completions.clear();
        drop(guard);
        settle(base)?;
        end_captures(&world);
        // (Without the world locked: a wait for the crate's locks must not hold it.)
        let device = world.lock().unwrap_or_else(|e| e.into_inner()).device;
        let synced = device.sync();
        settle(base)?;
        synced.map_err(|e| format!("the device's synchronisation at the end failed: {e}"))?;
        standin::mark("cleanup: drop buffers, events and streams");
        let mut guard = world.lock().unwrap_or_else(|e| e.into_inner());
        guard.buffers.iter_mut().for_each(|b| *b = None);
        guard.kept_buffers.clear();
        guard.events.iter_mut().for_each(|e| *e = None);
        guard.kept_events.clear();
        guard.streams.iter_mut().for_each(|s| *s = None);
        guard.kept_streams.clear();
        guard.pool = None;
        // The semaphore holds the streams that used it until it is released.
        guard.semaphore = None;
        guard.external = None;
        #[cfg(feature = "nccl")]
        {
            guard.comm = None;
        }
        drop(guard);
        settle(base)
    })
}

/// Once no capture is open, a recorded and dropped event is reused after one query: catches a
/// count of open captures left above zero (by an end refused from another thread, say), which
/// turns recycling of busy handles off for good.
fn probe_recycling(device: Device) -> Result<(), String> {
    std::thread::spawn(move || -> Result<(), String> {
        standin::mark("probe: recycling after the program");
        let stream = device
            .create_stream(StreamOptions::default())
            .map_err(|e| e.to_string())?;
        let event = device
            .create_event(EventOptions::default())
            .map_err(|e| e.to_string())?;
        stream.record(&event).map_err(|e| e.to_string())?;
        drop(event);
        let since = standin::log().len();
        let again = device
            .create_event(EventOptions::default())
            .map_err(|e| e.to_string())?;
        let log = standin::log();
        let made = log[since..].contains("cuEventCreate");
        drop((again, stream));
        if made {
            return Err(
                "after the program, with no capture open, a recorded event was not \
                        reused (the crate counts a capture open that is not)"
                    .to_owned(),
            );
        }
        Ok(())
    })
    .join()
    .unwrap_or_else(|_| Err("the probe panicked".to_owned()))
}

/// What lives once the program and its threads ended, and the host functions' runs.
fn check_end(world: &Arc<Mutex<World>>, before: &[i32]) -> Result<(), String> {
    let world = world.lock().unwrap_or_else(|e| e.into_inner());
    // Catches a host function run twice or never (a closure freed early, or run per launch
    // of a graph it was captured into), and a graph host node not run once per launch.
    let mut promised: Vec<(&Arc<AtomicUsize>, usize, &str)> = Vec::new();
    for (counter, runs, what) in &world.promised {
        match promised
            .iter_mut()
            .find(|(c, _, _)| Arc::ptr_eq(c, counter))
        {
            Some(entry) => entry.1 += runs,
            None => promised.push((counter, *runs, what)),
        }
    }
    for (counter, promised, what) in promised {
        let ran = counter.load(Ordering::SeqCst);
        if ran != promised {
            return Err(format!("{what} ran {ran} times, promised {promised}"));
        }
    }
    // Catches leaks: handles neither destroyed nor kept by a live thread, allocations never
    // freed (a buffer of another thread's per-thread stream dropped during a capture, say),
    // user objects never released (a graph's values kept for good), host work queued for
    // ever, captures left open.
    let names = [
        "streams",
        "events",
        "graphs",
        "executable graphs",
        "allocations",
        "user objects",
        "queued host works",
        "open captures",
    ];
    // (Counted against what lived before the program: a failed program's leak is its own.)
    for (what, name) in names.iter().enumerate() {
        let live = standin::model_live(what as i32) - before[what];
        if live != 0 {
            return Err(format!(
                "{live} more {name} live after the program than before"
            ));
        }
    }
    if standin::log_full() {
        return Err("the stand-in's log overflowed".to_owned());
    }
    Ok(())
}

/// A vector clock: how much of each stream's work (by stream number) is known to come before.
#[derive(Clone, Default, Debug)]
struct Clock(Vec<u32>);

impl Clock {
    fn get(&self, stream: usize) -> u32 {
        self.0.get(stream).copied().unwrap_or(0)
    }

    fn join(&mut self, other: &Clock) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (mine, theirs) in self.0.iter_mut().zip(&other.0) {
            *mine = (*mine).max(*theirs);
        }
    }

    fn tick(&mut self, stream: usize) -> u32 {
        if self.0.len() <= stream {
            self.0.resize(stream + 1, 0);
        }
        self.0[stream] += 1;
        self.0[stream]
    }
}

/// How a use touches memory, for the checks of reads that the crate promises are ordered with
/// every write of theirs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Access {
    /// A fill, a copy's destination, a graph's fill or copy node's, a collective's receive
    /// buffer.
    Write,
    /// A copy's source, a graph's copy node's.
    Read,
    /// A host function's read (`launch_host_func_reading`): ordered with every write queued by
    /// any operation.
    HostRead,
    /// A collective's send buffer: ordered with the writes its group's body queued.
    Collective,
    /// A kernel's argument: the kernel's reads and writes are its caller's to order.
    Kernel,
}

/// A use of memory: its stream and place there, its operation, how it touches which bytes.
struct Use {
    stream: usize,
    point: u32,
    op: Option<usize>,
    access: Access,
    bytes: (u64, u64),
}

/// An allocation as the log shows it: where, made on which stream at which point (by which
/// operation), and its uses so far.
struct Allocation {
    ptr: u64,
    size: u64,
    made: (usize, u32, Option<usize>),
    uses: Vec<Use>,
}

/// The stream order of the log: each stream's clock, each event's at its last record, what
/// the host knows complete.
#[derive(Default)]
struct Order {
    streams: HashMap<String, usize>,
    clocks: Vec<Clock>,
    events: HashMap<String, Clock>,
    host: Clock,
    allocations: Vec<Allocation>,
}

/// An operation's kind, as its `Debug` names it.
fn op_name(op: &Op) -> String {
    let text = format!("{op:?}");
    text.split([' ', '{']).next().unwrap_or("").to_owned()
}

/// An operation's number in an error ("?" for a thread of the crate's).
fn name_op(op: Option<usize>) -> String {
    op.map_or_else(|| "?".to_owned(), |op| op.to_string())
}

impl Order {
    /// The stream number of `name`'s current life.
    fn stream(&mut self, name: &str) -> usize {
        if let Some(&s) = self.streams.get(name) {
            return s;
        }
        self.born(name)
    }

    fn born(&mut self, name: &str) -> usize {
        let s = self.clocks.len();
        self.clocks.push(Clock::default());
        self.streams.insert(name.to_owned(), s);
        s
    }

    /// Work queued on `name`: after what the host knows complete; its point.
    fn queue(&mut self, name: &str) -> (usize, u32) {
        let s = self.stream(name);
        let host = self.host.clone();
        self.clocks[s].join(&host);
        let at = self.clocks[s].tick(s);
        (s, at)
    }

    fn find(&mut self, ptr: u64) -> Option<&mut Allocation> {
        self.allocations
            .iter_mut()
            .find(|a| ptr >= a.ptr && ptr < a.ptr + a.size)
    }

    /// The free of the allocation at `ptr` (its `what`, by operation `op`) where `clock`
    /// says what is done: refused where a use of it may not be.
    fn free(
        &mut self,
        ptr: u64,
        clock: &Clock,
        op: Option<usize>,
        what: &str,
    ) -> Result<(), String> {
        let Some(i) = self.allocations.iter().position(|a| a.ptr == ptr) else {
            return Ok(());
        };
        let allocation = self.allocations.remove(i);
        match allocation
            .uses
            .iter()
            .find(|u| clock.get(u.stream) < u.point)
        {
            Some(u) => Err(format!(
                "the {what} of {ptr:#x} (operation {}) is not ordered after its use by \
                 operation {}",
                name_op(op),
                name_op(u.op)
            )),
            None => Ok(()),
        }
    }

    /// A use of `bytes` (from an address in the allocation) on `stream` at `at`, where
    /// `clock` says what is done, by operation `op`: after the allocation, and ordered with
    /// the uses it must be ordered with (see [`Access`]).
    fn use_at(
        &mut self,
        bytes: (u64, u64),
        (stream, at): (usize, u32),
        clock: &Clock,
        op: Option<usize>,
        access: Access,
    ) -> Result<(), String> {
        let ptr = bytes.0;
        let Some(allocation) = self.find(ptr) else {
            return Ok(()); // The stand-in says "!stale use".
        };
        let (made_on, made_at, made_op) = allocation.made;
        if clock.get(made_on) < made_at {
            return Err(format!(
                "a use of {ptr:#x} (operation {}) is not ordered after its allocation \
                 (operation {})",
                name_op(op),
                name_op(made_op)
            ));
        }
        let overlaps = |u: &Use| u.bytes.0 < bytes.1 && bytes.0 < u.bytes.1;
        let unordered = allocation.uses.iter().find(|u| {
            overlaps(u)
                && clock.get(u.stream) < u.point
                && match (access, u.access) {
                    // Catches a host function whose `&[T]` changes under it (a write queued by
                    // another operation, through a shared handle, that the read is not
                    // ordered with either way: the crate's three steps of cross-stream order
                    // interleaved with another thread's).
                    (Access::Write, Access::HostRead) | (Access::HostRead, Access::Write) => true,
                    // Catches a collective not ordered with a write its group's body queued
                    // on the send buffer's own stream (NCCL queues the collective at the
                    // group's end; its stream waited for the buffer's stream when the call
                    // was added).
                    (Access::Collective, Access::Write) | (Access::Write, Access::Collective) => {
                        u.op == op
                    }
                    _ => false,
                }
        });
        if let Some(u) = unordered {
            return Err(format!(
                "a {access:?} of {ptr:#x} (operation {}) is not ordered with a {:?} of it \
                 (operation {}): the two may run at once",
                name_op(op),
                u.access,
                name_op(u.op)
            ));
        }
        allocation.uses.push(Use {
            stream,
            point: at,
            op,
            access,
            bytes,
        });
        Ok(())
    }
}

/// The word after "on": the stream a logged call queued on.
fn on<'a>(words: &[&'a str]) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == "on")
        .and_then(|i| words.get(i + 1).copied())
}

fn hex(text: &str) -> Option<u64> {
    u64::from_str_radix(text.strip_prefix("0x")?, 16).ok()
}

/// The value of `key=VALUE` among `words`.
fn value<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
}

/// The log's name of a stream queued on by thread `thread`: the per-thread default streams of
/// two threads are two streams.
fn qualified(name: &str, thread: &str) -> String {
    if name == "per-thread" {
        format!("per-thread@{thread}")
    } else {
        name.to_owned()
    }
}

/// Whom a thread's lines belong to: an operation, or the cleanup after the program.
#[derive(Clone, Copy)]
enum Whose {
    Op(usize),
    Cleanup,
}

/// A collective queued in a group, which NCCL queues on its stream at the group's end:
/// stream, send and receive buffers, bytes, operation.
type Pending = (String, Option<u64>, Option<u64>, u64, Option<usize>);

/// The bytes of NCCL's type `code` (ncclDataType_t).
fn nccl_width(code: &str) -> u64 {
    match code {
        "0" | "1" => 1,
        "6" | "9" => 2,
        "4" | "5" | "8" => 8,
        _ => 4,
    }
}

/// The log's checks: forbidden calls, stale handles, and the memory's stream order. Each line
/// belongs to the operation its thread marked last ("tN ## op K"); lines of the crate's own
/// threads belong to none.
fn check_log(log: &str, ops: &[&Op]) -> Result<(), String> {
    let mut order = Order::default();
    let mut whose: HashMap<&str, Whose> = HashMap::new();
    let mut cleanup = false;
    let mut problems = String::new();
    // Per thread: the stream, place and clock of the last host function queued outside a
    // capture, and the collectives of its open group.
    let mut last_host: HashMap<&str, (usize, u32, Clock)> = HashMap::new();
    let mut groups: HashMap<&str, Vec<Pending>> = HashMap::new();
    // The thread that began each capture (by id), and per thread the captures its calls
    // invalidated since its last refusal.
    let mut began: HashMap<&str, &str> = HashMap::new();
    // Per thread: a repeatable host function's closure was just given to a capture's graph.
    let mut kept_by_graph: HashMap<&str, usize> = HashMap::new();
    let mut invalidated: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in log.lines() {
        let Some((thread, text)) = line.split_once(' ') else {
            continue;
        };
        let mine = whose.get(thread).copied();
        let op = match mine {
            Some(Whose::Op(i)) => Some(i),
            _ => None,
        };
        let in_cleanup = matches!(mine, Some(Whose::Cleanup)) || (mine.is_none() && cleanup);
        let at = match op {
            Some(i) => format!("{i} ({})", op_name(ops[i])),
            None => "?".to_owned(),
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        if let Some(marker) = text.strip_prefix("## ") {
            let result = if let Some(rest) = marker.strip_prefix("host-read ") {
                // A host function's read: a use at the place of the last host function queued
                // by this thread. Catches a read not ordered after the memory's earlier uses,
                // or a free not ordered after it, or a write not ordered with it either way.
                let rest: Vec<&str> = rest.split_whitespace().collect();
                let ptr = rest.first().and_then(|p| hex(p));
                let size: u64 = value(&rest, "size")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                match (ptr, last_host.get(thread)) {
                    (Some(ptr), Some((s, point, clock))) => {
                        let (s, point, clock) = (*s, *point, clock.clone());
                        order.use_at((ptr, ptr + size), (s, point), &clock, op, Access::HostRead)
                    }
                    _ => Err(format!(
                        "a host read with no host function before it: {line}"
                    )),
                }
            } else if let Some(number) = marker.strip_prefix("op ") {
                if let Some(i) = number.split(':').next().and_then(|n| n.parse().ok()) {
                    whose.insert(thread, Whose::Op(i));
                }
                Ok(())
            } else if marker.starts_with("cleanup") || marker.starts_with("probe") {
                whose.insert(thread, Whose::Cleanup);
                cleanup = true;
                Ok(())
            } else if marker.starts_with("stall") {
                whose.insert(thread, Whose::Cleanup);
                Ok(())
            } else if marker.starts_with("nccl") && value(&words, "stream").is_some() {
                // A collective: queued now outside a group, at the group's end inside one.
                let stream = qualified(value(&words, "stream").unwrap_or("null"), thread);
                let count: u64 = value(&words, "count")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let bytes = count * nccl_width(value(&words, "type").unwrap_or("7"));
                let send = value(&words, "send").and_then(hex);
                let recv = value(&words, "recv").and_then(hex);
                let call = (stream, send, recv, bytes, op);
                if value(&words, "group").is_some_and(|g| g != "0") {
                    groups.entry(thread).or_default().push(call);
                    Ok(())
                } else {
                    collective(&mut order, &call)
                }
            } else if marker.starts_with("ncclGroupEnd") && value(&words, "depth") == Some("1") {
                let calls = groups.remove(thread).unwrap_or_default();
                calls
                    .iter()
                    .map(|call| collective(&mut order, call))
                    .collect::<Result<Vec<()>, String>>()
                    .map(|_| ())
            } else {
                Ok(())
            };
            if let Err(problem) = result {
                let _ = writeln!(problems, "{problem}: {line}");
            }
            continue;
        }
        if let (Some(&"cuStreamBeginCapture"), Some(id)) =
            (words.first(), value(&words, "captured"))
        {
            began.insert(id, thread);
        }
        if let (Some(&"capture"), Some(id), Some(&"invalidated")) =
            (words.first(), words.get(1), words.get(2))
        {
            invalidated.entry(thread).or_default().push(id);
        }
        if text.starts_with('!') {
            // `!refused CODE CALL`: allowed where the operation asked for that call itself
            // (see `refusal_allowed`); every other `!` line is a finding.
            let others = invalidated
                .remove(thread)
                .unwrap_or_default()
                .iter()
                .any(|id| began.get(id).is_some_and(|t| *t != thread));
            if !refusal_allowed(op.map(|i| ops[i]), &words, text, others) {
                let _ = writeln!(problems, "operation {at}: {line}");
            }
            continue;
        }
        // "CALL ... -> CODE": a failing call (600, not ready, is an answer). Catches a
        // failing driver call the crate makes of its own (README: "No failing driver call
        // of its own"), as an end of a capture that is not open.
        if let Some((_, code)) = text.rsplit_once(" -> ") {
            let code = code.split_whitespace().next().unwrap_or("");
            if !code.is_empty() && code.chars().all(|c| c.is_ascii_digit()) && code != "600" {
                // The cleanup's own ends of captures may fail as they like; and a stream's
                // drop ends its capture (refused from another thread), which may come at the
                // end of any operation that held its last clone.
                let allowed = in_cleanup
                    || words.first() == Some(&"cuStreamEndCapture")
                    || op.is_some_and(|i| {
                        direct_calls(ops[i])
                            .iter()
                            .any(|c| words.first() == Some(c))
                    });
                if !allowed {
                    let _ = writeln!(problems, "operation {at}: a failing call: {line}");
                }
                continue;
            }
        }
        if text.contains("captured=") {
            continue; // Recorded into a graph: not run.
        }
        let stream_on = |words: &[&str]| qualified(on(words).unwrap_or("null"), thread);
        let result = match words.first().copied() {
            Some("cuStreamCreate") => {
                order.born(words[1]);
                Ok(())
            }
            Some("cuEventCreate") => {
                order.events.insert(words[1].to_owned(), Clock::default());
                Ok(())
            }
            Some("cuEventRecord") => {
                let s = order.stream(&qualified(words[3], thread));
                let host = order.host.clone();
                order.clocks[s].join(&host);
                let clock = order.clocks[s].clone();
                order.events.insert(words[1].to_owned(), clock);
                Ok(())
            }
            Some("cuStreamWaitEvent") if words.len() == 5 => {
                let s = order.stream(&qualified(words[1], thread));
                let event = order.events.get(words[4]).cloned().unwrap_or_default();
                let host = order.host.clone();
                order.clocks[s].join(&host);
                order.clocks[s].join(&event);
                Ok(())
            }
            Some("cuStreamSynchronize") => {
                let s = order.stream(&qualified(words[1], thread));
                let clock = order.clocks[s].clone();
                order.host.join(&clock);
                Ok(())
            }
            Some("cuEventSynchronize") => {
                let event = order.events.get(words[1]).cloned().unwrap_or_default();
                order.host.join(&event);
                Ok(())
            }
            Some("cuCtxSynchronize") => {
                for clock in order.clocks.clone() {
                    order.host.join(&clock);
                }
                Ok(())
            }
            Some("cuMemAllocFromPoolAsync") => {
                let (ptr, size) = (hex(words[1]), value(&words, "size"));
                let (s, point) = order.queue(&stream_on(&words));
                if let (Some(ptr), Some(size)) = (ptr, size.and_then(|n| n.parse().ok())) {
                    order.allocations.push(Allocation {
                        ptr,
                        size,
                        made: (s, point, op),
                        uses: Vec::new(),
                    });
                }
                Ok(())
            }
            Some("cuMemHostRegister") => {
                // Host memory registered: made by the host, before every use queued after it
                // in program order (no stream's clock bounds it).
                let (ptr, size) = (hex(words[1]), value(&words, "size"));
                if let (Some(ptr), Some(size)) = (ptr, size.and_then(|n| n.parse().ok())) {
                    order.allocations.push(Allocation {
                        ptr,
                        size,
                        made: (0, 0, op),
                        uses: Vec::new(),
                    });
                }
                Ok(())
            }
            Some("cuMemHostUnregister") => {
                // A synchronous free: every use must be done as the host knows it. Catches an
                // unregistration while work queued on the memory may still run: its free did
                // not wait for the streams that used it.
                let ptr = hex(words[1]).unwrap_or(0);
                let host = order.host.clone();
                order.free(ptr, &host, op, "unregistration")
            }
            Some("cuMemFreeAsync") => {
                // Catches a free that can overtake a use on another stream: the buffer's
                // memory reused while work still reads or writes it.
                let ptr = hex(words[1]).unwrap_or(0);
                let (s, _) = order.queue(&stream_on(&words));
                let clock = order.clocks[s].clone();
                order.free(ptr, &clock, op, "free")
            }
            Some(call)
                if call.starts_with("cuMemset")
                    || call.starts_with("cuMemcpy")
                    || call == "cuLaunchKernel" =>
            {
                let place = order.queue(&stream_on(&words));
                let clock = order.clocks[place.0].clone();
                // Bytes: a fill's count of its width, a copy's size, a kernel's first byte.
                let width = match call {
                    "cuMemsetD8Async" => 1,
                    "cuMemsetD16Async" => 2,
                    _ => 4,
                };
                let bytes = value(&words, "count")
                    .and_then(|n| n.parse::<u64>().ok())
                    .map(|n| n * width)
                    .or_else(|| value(&words, "size").and_then(|n| n.parse().ok()))
                    .unwrap_or(1);
                let mut checked = Ok(());
                let addresses = words[1..]
                    .iter()
                    .filter_map(|w| hex(w.strip_prefix("arg0=").unwrap_or(w)));
                for (i, ptr) in addresses.enumerate() {
                    let access = match call {
                        "cuLaunchKernel" => Access::Kernel,
                        "cuMemcpyDtoHAsync" => Access::Read,
                        _ if i == 0 => Access::Write,
                        _ => Access::Read,
                    };
                    checked =
                        checked.and(order.use_at((ptr, ptr + bytes), place, &clock, op, access));
                }
                checked
            }
            Some("cuGraphLaunch") => {
                order.queue(&stream_on(&words));
                Ok(())
            }
            Some("cuLaunchHostFunc") if words.get(2) == Some(&"->") => {
                // Catches a repeatable host function whose closure the crate gave to a
                // capture's graph (freed with the graph), queued outside the capture: the
                // capture ended between the crate's question and its call, and the driver runs
                // the host function after the graph (and the closure) may be gone.
                if op.is_some() && kept_by_graph.get(thread) == op.as_ref() {
                    let _ = writeln!(
                        problems,
                        "operation {at}: a repeatable host function's closure was kept by a \
                         capture's graph, and the host function queued outside the capture \
                         (its closure is freed with the graph while it may still run): {line}"
                    );
                }
                // Work on its stream: its place there and its clock, for a host read that
                // follows.
                let (s, point) = order.queue(&qualified(words[1], thread));
                last_host.insert(thread, (s, point, order.clocks[s].clone()));
                Ok(())
            }
            Some("cuGraphRetainUserObject") => {
                if let Some(i) = op.filter(|&i| matches!(ops[i], Op::HostFuncRepeatable { .. })) {
                    kept_by_graph.insert(thread, i);
                }
                Ok(())
            }
            Some("graph-use") => {
                let s = order.stream(&stream_on(&words));
                let point = order.clocks[s].get(s);
                let clock = order.clocks[s].clone();
                let size: u64 = value(&words, "size")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                let access = match value(&words, "kind") {
                    Some("fill" | "copy-to") => Access::Write,
                    Some("copy-from") => Access::Read,
                    _ => Access::Kernel,
                };
                match hex(words[1]) {
                    Some(ptr) => order.use_at((ptr, ptr + size), (s, point), &clock, op, access),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            let _ = writeln!(problems, "{e}: {line}");
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// A collective queued on its stream: a use of its send buffer (a read its group's writes
/// must be ordered with) and of its receive buffer (a write).
fn collective(order: &mut Order, (stream, send, recv, bytes, op): &Pending) -> Result<(), String> {
    let place = order.queue(stream);
    let clock = order.clocks[place.0].clone();
    let mut checked = Ok(());
    if let Some(send) = send {
        let bytes = (*send, send + (*bytes).max(1));
        checked = checked.and(order.use_at(bytes, place, &clock, *op, Access::Collective));
    }
    if let Some(recv) = recv {
        let bytes = (*recv, recv + (*bytes).max(1));
        checked = checked.and(order.use_at(bytes, place, &clock, *op, Access::Write));
    }
    checked
}

/// With `CUDA_CORE_MODEL_STATS` set: how often each kind of logged line came, over the run
/// (what the programs reached: ended captures, joins, refusals, graph launches...).
static STATS: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);

fn count_lines(log: &str) {
    if std::env::var_os("CUDA_CORE_MODEL_STATS").is_none() {
        return;
    }
    let mut stats = STATS.lock().unwrap_or_else(|e| e.into_inner());
    let stats = stats.get_or_insert_with(HashMap::new);
    for line in log.lines() {
        let Some((_, text)) = line.split_once(' ') else {
            continue;
        };
        let words: Vec<&str> = text.split_whitespace().take(3).collect();
        let key = match words.as_slice() {
            ["##", ..] => continue,
            ["!refused", code, call, ..] => format!("!refused {code} {call}"),
            [call, ..] if text.contains("(joins)") => format!("{call} (joins)"),
            [call, ..] if text.contains("captured=") => format!("{call} captured"),
            [call, ..] if text.contains(" -> 9") => {
                format!(
                    "{call} -> {}",
                    text.rsplit(" -> ").next().unwrap_or("")[..3].to_owned()
                )
            }
            [call, ..] => (*call).to_owned(),
            [] => continue,
        };
        *stats.entry(key).or_insert(0) += 1;
    }
}

/// `program`, shrunk further: steps proptest's shrinking cannot drop (the prelude's among
/// them) left out one at a time while the program still fails as `error` did (its kind).
fn minimise(device: Device, mut program: Program, error: &str) -> Program {
    let kind = kind_of(error);
    let mut i = 0;
    while i < program.steps.len() {
        let smaller = program.without(i);
        match run_program(device, &smaller) {
            Err(e) if kind_of(&e) == kind => program = smaller,
            _ => i += 1,
        }
    }
    program
}

/// A failure's kind: its first line, numbers and addresses left out.
fn kind_of(error: &str) -> String {
    let line = error.lines().next().unwrap_or("");
    let mut kind = String::new();
    for word in line.split(' ') {
        if !kind.is_empty() {
            kind.push(' ');
        }
        if let Some(at) = word.find("0x") {
            kind.push_str(&word[..at]);
            kind.push('#');
            continue;
        }
        for c in word.chars() {
            let c = if c.is_ascii_digit() { '#' } else { c };
            if !(c == '#' && kind.ends_with('#')) {
                kind.push(c);
            }
        }
    }
    kind
}

/// The seed of the generated programs: `CUDA_CORE_MODEL_SEED`, else a fixed one.
fn model_seed() -> u64 {
    std::env::var("CUDA_CORE_MODEL_SEED")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(28)
}

/// The run's slices: each a family of operations (see [`op_strategy`]) and its number of
/// programs. By default the whole mix, then each finding's family, the rarest with the most
/// (W6's race shows in about one program of its family in a thousand, W1's and W4's in one
/// in a few hundred): 12,200 programs (12,700 with the `nccl` feature). `CUDA_CORE_MODEL_ONLY=FAMILY` runs one family alone;
/// `CUDA_CORE_MODEL_CASES=N` runs N programs (of that family, or across the slices in their
/// proportions).
fn slices() -> Vec<(&'static str, u32)> {
    const FAMILIES: [&str; 12] = [
        "all", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w9", "c", "g", "x",
    ];
    let cases: Option<u32> = std::env::var("CUDA_CORE_MODEL_CASES")
        .ok()
        .and_then(|n| n.trim().parse().ok());
    if let Ok(only) = std::env::var("CUDA_CORE_MODEL_ONLY") {
        let family = FAMILIES
            .iter()
            .copied()
            .find(|f| *f == only.trim())
            .unwrap_or_else(|| panic!("CUDA_CORE_MODEL_ONLY={only}: no such family"));
        return vec![(family, cases.unwrap_or(10_000))];
    }
    let mut slices = vec![
        ("all", 4_000),
        ("w1", 1_000),
        ("w2", 500),
        ("w4", 1_000),
        ("w5", 500),
        ("w6", 3_000),
        ("w7", 300),
        ("w9", 300),
        ("c", 400),
        ("g", 600),
        ("x", 600),
    ];
    if cfg!(feature = "nccl") {
        slices.push(("w3", 500));
    }
    if let Some(cases) = cases {
        let total: u32 = slices.iter().map(|(_, n)| n).sum();
        for (_, n) in &mut slices {
            *n = (u64::from(*n) * u64::from(cases) / u64::from(total)).max(1) as u32;
        }
    }
    slices
}

/// Runs `body` in a stand-in child of its own with the strict model (and with the `nccl`
/// feature, the stand-in NCCL).
fn in_standin(function: &str, settings: &[(&str, &str)], body: impl FnOnce()) {
    let mut all = vec![("STANDIN_MODEL", "1")];
    all.extend_from_slice(settings);
    #[cfg(feature = "nccl")]
    standin::run_with_nccl(module_path!(), function, &[], &all, body);
    #[cfg(not(feature = "nccl"))]
    standin::run(module_path!(), function, &[], &all, body);
}

/// Runs `program` in a stand-in child of its own with the strict model, for a regression test.
fn replay(function: &str, program: Program) {
    replay_in(function, &[], program);
}

/// [`replay`] with the schedule free to overlap a capture's begin or end with other work on
/// its stream (`CUDA_CORE_MODEL_RACES`: see [`races`]).
fn replay_racing(function: &str, program: Program) {
    replay_in(function, &[("CUDA_CORE_MODEL_RACES", "1")], program);
}

fn replay_in(function: &str, settings: &[(&str, &str)], program: Program) {
    in_standin(function, settings, move || {
        std::thread::spawn(move || {
            let device = Device::new(0).unwrap();
            if let Err(e) = run_program(device, &program) {
                panic!("{}\n{e}", program.to_rust());
            }
        })
        .join()
        .unwrap();
    });
}

/// The model's run: generated programs, each checked; a failure is shrunk and shown with its
/// log (replay it as a regression test below with [`replay`]).
#[test]
fn generated_programs_keep_the_invariants() {
    in_standin("generated_programs_keep_the_invariants", &[], || {
        let device = Device::new(0).unwrap();
        let started = Instant::now();
        // A fixed seed by default, so that a run's pass does not depend on chance (CI
        // checks the same programs each time); CUDA_CORE_MODEL_SEED explores others.
        let seed = model_seed();
        println!("model: seed {seed} (CUDA_CORE_MODEL_SEED)");
        // The first failing program as generated: what a failure leaves behind in the
        // process (a count, a kept handle) can make the shrunk ones fail for it.
        let first: Mutex<Option<String>> = Mutex::new(None);
        // The last failing program (the shrunk one, once shrinking is over), and its error.
        let last: Mutex<Option<(Program, String)>> = Mutex::new(None);
        let runs = AtomicUsize::new(0);
        let found_at = AtomicUsize::new(0);
        // With CUDA_CORE_MODEL_TALLY set, failures are counted by kind (with the first program
        // of each) instead of stopping the run: what a crate with several findings fails on.
        let tally = std::env::var_os("CUDA_CORE_MODEL_TALLY").is_some();
        let tallied: Mutex<Vec<(String, usize, usize)>> = Mutex::new(Vec::new());
        let mut result = Ok(());
        for (index, (family, cases)) in slices().into_iter().enumerate() {
            let config = Config {
                cases,
                failure_persistence: None,
                max_shrink_iters: 2048,
                ..Config::default()
            };
            // XorShift: ChaCha, unoptimised as the tests build it, took most of the time.
            let mut bytes = [0x5au8; 16];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            bytes[8] = index as u8;
            let rng = TestRng::from_seed(RngAlgorithm::XorShift, &bytes);
            let mut runner = TestRunner::new_with_rng(config, rng);
            let slice_start = runs.load(Ordering::Relaxed);
            let slice = runner.run(&program_strategy(family), |program| {
                let run = runs.fetch_add(1, Ordering::Relaxed) + 1;
                let checked = run_program(device, &program);
                if tally {
                    if let Err(e) = checked {
                        let kind = kind_of(&e);
                        let mut tallied = tallied.lock().unwrap_or_else(|e| e.into_inner());
                        match tallied.iter_mut().find(|(k, _, _)| *k == kind) {
                            Some(entry) => entry.2 += 1,
                            None => {
                                let lines: Vec<&str> = e.lines().take(4).collect();
                                println!(
                                    "model: program {run} ({family}) fails first so: {}\n{}",
                                    lines.join("\n"),
                                    program.to_rust()
                                );
                                tallied.push((kind, run, 1));
                            }
                        }
                    }
                    return Ok(());
                }
                checked.map_err(|e| {
                    let mut first = first.lock().unwrap_or_else(|e| e.into_inner());
                    if first.is_none() {
                        found_at.store(run, Ordering::Relaxed);
                        // Shown now, not only at the end: a shrunk program may then get stuck
                        // on what this failure left behind, which ends the process.
                        println!(
                            "model: program {run} failed first, {} of the {family} slice \
                             ({:?}):\n{}\n{e}",
                            run - slice_start,
                            started.elapsed(),
                            program.to_rust()
                        );
                    }
                    first.get_or_insert_with(|| format!("{program:#?}\n{e}"));
                    *last.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((program.clone(), e.clone()));
                    TestCaseError::fail(e)
                })
            });
            println!(
                "model: slice {family}: {cases} programs, {:?} so far",
                started.elapsed()
            );
            if let Err(e) = slice {
                result = Err(e);
                break;
            }
        }
        println!(
            "model: {} programs run in {:?} (the first failure, if any, at program {}); {} \
             hand-overs at driver calls, {} threads taken for blocked, {} stalls undone ({} \
             by ending captures)",
            runs.load(Ordering::Relaxed),
            started.elapsed(),
            found_at.load(Ordering::Relaxed),
            SWITCHES.load(Ordering::Relaxed),
            BLOCKED.load(Ordering::Relaxed),
            STALLS.load(Ordering::Relaxed),
            STALLS_ENDED.load(Ordering::Relaxed),
        );
        for (kind, first, count) in tallied.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            println!("model: {count:>6} failures (the first at program {first}): {kind}");
        }
        if let Some(stats) = STATS.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let mut stats: Vec<_> = stats.iter().collect();
            stats.sort();
            for (line, count) in stats {
                println!("model: {count:>8} {line}");
            }
        }
        if let Err(e) = result {
            let first = first.lock().unwrap_or_else(|e| e.into_inner()).take();
            let last = last.lock().unwrap_or_else(|e| e.into_inner()).take();
            let last = last.map(|(program, error)| minimise(device, program, &error).to_rust());
            panic!(
                "{e}\n--- the first failing program, as generated:\n{}\n--- the shrunk one, \
                 as a regression test's `replay` takes it:\n{}",
                first.unwrap_or_default(),
                last.unwrap_or_default()
            );
        }
    });
}

// ---- the model's findings, as regression tests -------------------------------------------
// ---- the model's findings, as regression tests -------------------------------------------

/// A stream dropped on another thread than the one that began its (thread-local) capture:
/// the end is refused (`CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`) and the driver ends the
/// capture all the same; the crate counted it open for good, which turned recycling of busy
/// handles off for the rest of the process (the probe after the program sees it).
#[test]
fn model_a_capture_dropped_on_another_thread_is_not_counted_open() {
    replay(
        "model_a_capture_dropped_on_another_thread_is_not_counted_open",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 1 }),
                (1, Op::DropStream { s: 0 }),
            ],
            schedule: vec![],
        },
    );
}

/// One executable graph launched twice, and its graph instantiated again in between: its host
/// node runs once per launch (a check of the model's own accounting, shrunk from a false
/// alarm: runs are counted per graph, not per launch).
#[test]
fn model_a_graph_launched_twice_runs_its_host_node_twice() {
    replay(
        "model_a_graph_launched_twice_runs_its_host_node_twice",
        Program {
            threads: 2,
            streams: 4,
            steps: vec![
                (
                    0,
                    Op::BuildGraph {
                        g: 0,
                        fill: None,
                        host: true,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 5,
                        blocking: false,
                    },
                ),
                (0, Op::Instantiate { g: 0, x: 1 }),
                (0, Op::Launch { x: 1, s: 5 }),
                (0, Op::Instantiate { g: 0, x: 2 }),
                (0, Op::Launch { x: 1, s: 5 }),
            ],
            schedule: vec![],
        },
    );
}

/// A buffer re-homed on a stream that captures, from a home that does not: the crate records
/// the old home's order event outside the capture and makes the capturing stream wait on it,
/// which the driver refuses (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`) and which invalidates the
/// caller's capture; the other way round, the wait would pull the new home into the capture.
/// Fixed: such a wait (`Stream::wait_for`, under `set_deallocation_stream`, `close` and the
/// DLPack export) is refused with `Error::Capture` before any driver call.
#[test]
fn model_a_buffer_rehomed_across_a_capture_breaks_no_capture() {
    replay(
        "model_a_buffer_rehomed_across_a_capture_breaks_no_capture",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: true,
                    },
                ),
                (0, Op::Begin { s: 1, mode: 2 }),
                (0, Op::SetHome { b: 0, s: 1 }),
            ],
            schedule: vec![],
        },
    );
}

/// A blocking stream (never recycled) that joined another's capture (by waiting on an event
/// recorded in it) dropped while the capture is open: the crate destroyed it as if it were
/// idle (`cuStreamDestroy` of a stream in a capture, which the stand-in refuses: the driver's
/// behaviour there is not documented), and the capture could no longer be joined back.
/// Fixed: such a stream's destruction (and its kept buffers' frees) wait until no capture the
/// crate counts is open (`order::after_captures`).
#[test]
fn model_a_joined_stream_dropped_mid_capture_is_not_destroyed_in_it() {
    replay(
        "model_a_joined_stream_dropped_mid_capture_is_not_destroyed_in_it",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: true,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 1 }),
                (0, Op::WaitStream { s: 1, other: 0 }),
                (0, Op::DropStream { s: 1 }),
            ],
            schedule: vec![],
        },
    );
}

/// As above, with a small buffer kept by the joined stream's cache: its drop frees the kept
/// buffer with `cuMemFreeAsync` on the capturing stream, which records the free into the
/// graph instead of making it (the memory leaks now, and each launch of the graph would free
/// it again), the stand-in's `!captured`. Fixed with the finding above.
#[test]
fn model_a_joined_stream_dropped_mid_capture_frees_nothing_into_it() {
    replay(
        "model_a_joined_stream_dropped_mid_capture_frees_nothing_into_it",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 1,
                        large: false,
                    },
                ),
                (0, Op::DropBuffer { b: 0 }),
                (0, Op::Begin { s: 0, mode: 1 }),
                (0, Op::WaitStream { s: 1, other: 0 }),
                (0, Op::DropStream { s: 1 }),
            ],
            schedule: vec![],
        },
    );
}

/// A fill on one stream of a buffer of another, neither capturing, while a capture of a third
/// stream is open: the fill is ordered across the two streams, not refused. Catches a crate
/// that refuses every cross-stream use while an unrelated capture is open (`check_homes`
/// with `||` for `&&` passed every other test).
#[test]
fn model_cross_stream_work_beside_an_unrelated_capture_is_not_refused() {
    replay(
        "model_cross_stream_work_beside_an_unrelated_capture_is_not_refused",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 5,
                        s: 4,
                        large: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 0 }),
                (
                    0,
                    Op::Fill {
                        b: 5,
                        s: 2,
                        part: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

// ---- the checks themselves, on logs written by hand ----------------------------------------

/// A log of `lines` (each "tN ..."), checked as the log of `ops`.
fn check(ops: &[Op], lines: &[&str]) -> Result<(), String> {
    let log: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let ops: Vec<&Op> = ops.iter().collect();
    check_log(&log, &ops)
}

/// The stream-order check: a use on another stream than the allocation's needs a wait for it,
/// and the free a wait for the use (or a host synchronisation after it).
#[test]
fn the_order_check_sees_unordered_uses_and_frees() {
    let ops = [Op::Fill {
        b: 0,
        s: 1,
        part: false,
    }];
    let alloc = "t1 cuMemAllocFromPoolAsync 0x10000000 size=256 from p0 on s1";
    let fill = "t1 cuMemsetD32Async 0x10000000 value=7 count=64 on s2";
    let free = "t1 cuMemFreeAsync 0x10000000 on s1";
    let mark = "t1 ## op 0: Fill";
    let err = check(&ops, &[mark, alloc, fill]).unwrap_err();
    assert!(err.contains("not ordered after its allocation"), "{err}");
    let ordered_use = [
        mark,
        alloc,
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s2 waits for e1",
        fill,
    ];
    check(&ops, &ordered_use).unwrap();
    let err = check(&ops, &[&ordered_use[..], &[free]].concat()).unwrap_err();
    assert!(err.contains("is not ordered after its use"), "{err}");
    let joined = [
        "t1 cuEventRecord e2 on s2",
        "t1 cuStreamWaitEvent s1 waits for e2",
        free,
    ];
    check(&ops, &[&ordered_use[..], &joined].concat()).unwrap();
    let synced = ["t1 cuStreamSynchronize s2", free];
    check(&ops, &[&ordered_use[..], &synced].concat()).unwrap();
    // A stream made again under the same name is another stream: its old waits do not count.
    let reborn = [
        mark,
        alloc,
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s2 waits for e1",
        "t1 cuStreamDestroy s2",
        "t1 cuStreamCreate s2 in c0 flags=1",
        fill,
    ];
    assert!(check(&ops, &reborn).is_err());
}

/// Refusals and failures: allowed where the operation asked for the call itself, a finding
/// elsewhere; stale handles and captured host work always are.
#[test]
fn the_log_check_tells_asked_refusals_from_the_crates_own() {
    let refused = "t1 !refused 900 cuEventQuery e1: a potentially unsafe call";
    check(
        &[Op::QueryEvent { e: 1 }],
        &["t1 ## op 0: QueryEvent", refused],
    )
    .unwrap();
    let err = check(
        &[Op::NewEvent {
            e: 1,
            timing: false,
        }],
        &["t1 ## op 0: NewEvent", refused],
    )
    .unwrap_err();
    assert!(err.contains("operation 0"), "{err}");
    let stale = "t1 !stale cuEventRecord e1";
    assert!(check(&[Op::Record { e: 1, s: 0 }], &["t1 ## op 0: Record", stale]).is_err());
    let failed = "t1 cuStreamWaitEvent s1 waits for e2 -> 400";
    check(&[Op::Wait { s: 1, e: 2 }], &["t1 ## op 0: Wait", failed]).unwrap();
    assert!(check(
        &[Op::SyncStream { s: 1 }],
        &["t1 ## op 0: SyncStream", failed]
    )
    .is_err());
    let not_ready = "t1 cuStreamQuery s1 -> 600";
    check(
        &[Op::NewStream {
            s: 1,
            blocking: false,
        }],
        &["t1 ## op 0: NewStream", not_ready],
    )
    .unwrap();
    // A stream's last clone may go with any operation that held it, and its drop ends the
    // stream's capture (refused from another thread): allowed anywhere.
    let ended = "t1 cuStreamEndCapture s1 -> 908 (capture 1 ended, from t2)";
    check(
        &[Op::Fill {
            b: 0,
            s: 1,
            part: false,
        }],
        &["t1 ## op 0: Fill", ended],
    )
    .unwrap();
}

/// The checks of what the crate queries and waits for on its own: a timed wait's or a
/// future's question refused for another thread's capture is a finding, one refused for the
/// waiting thread's own is the caller's; legacy-stream work refused by the driver is a finding
/// wherever it comes from.
#[test]
fn the_log_check_tells_a_timed_waits_own_capture_from_another_threads() {
    let ops = [Op::Begin { s: 0, mode: 0 }, Op::SyncTimeout { s: 1, ms: 0 }];
    let lines = |who: &str| {
        vec![
            format!("{who} ## op 0: Begin"),
            format!("{who} cuStreamBeginCapture s1 mode=0 captured=1"),
            "t2 ## op 1: SyncTimeout".to_owned(),
            "t2 capture 1 invalidated by cuStreamQuery".to_owned(),
            "t2 !refused 900 cuStreamQuery s2: a potentially unsafe call while a capture \
             forbids it"
                .to_owned(),
        ]
    };
    let theirs = lines("t1");
    let theirs: Vec<&str> = theirs.iter().map(String::as_str).collect();
    let err = check(&ops, &theirs).unwrap_err();
    assert!(err.contains("operation 1 (SyncTimeout)"), "{err}");
    let own = lines("t2");
    let own: Vec<&str> = own.iter().map(String::as_str).collect();
    check(&ops, &own).unwrap();
    // The same refusal of a plain query the operation asked for: the caller's.
    let asked = [Op::Begin { s: 0, mode: 0 }, Op::QueryStream { s: 1 }];
    check(&asked, &theirs).unwrap();
    let legacy = "t2 !refused 906 cuMemsetD32Async legacy: the legacy stream while a blocking \
                  stream captures";
    let fill = [Op::Fill {
        b: 0,
        s: 1,
        part: false,
    }];
    assert!(check(&fill, &["t2 ## op 0: Fill", legacy]).is_err());
}

/// The check of reads the crate promises are ordered with writes: a host function's read
/// with every write, either way; a collective's send buffer with its group's writes.
#[test]
fn the_order_check_sees_reads_unordered_with_writes() {
    let ops = [
        Op::HostRead { b: 0, s: 1 },
        Op::SharedFill {
            b: 0,
            s: 2,
            part: false,
        },
    ];
    let head = [
        "t1 ## op 0: HostRead",
        "t1 cuMemHostRegister 0x7f0000 size=1024",
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s2 waits for e1",
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s3 waits for e1",
        "t1 cuLaunchHostFunc s2 -> h1",
        "t1 ## host-read 0x7f0000 size=1024",
    ];
    let write = "t2 cuMemsetD32Async 0x7f0000 value=7 count=256 on s3";
    let race = [&head[..], &["t2 ## op 1: SharedFill", write]].concat();
    let err = check(&ops, &race).unwrap_err();
    assert!(err.contains("not ordered with a HostRead"), "{err}");
    // Ordered after the read (s3 waits for the host function's stream): no finding.
    let after = [
        "t1 cuEventRecord e2 on s2",
        "t1 cuStreamWaitEvent s1 waits for e2",
        "t2 ## op 1: SharedFill",
        "t2 cuEventRecord e3 on s1",
        "t2 cuStreamWaitEvent s3 waits for e3",
        write,
    ];
    check(&ops, &[&head[..], &after].concat()).unwrap();
    // A write first, the read not after it.
    let before = [
        "t2 ## op 1: SharedFill",
        "t1 cuMemHostRegister 0x7f0000 size=1024",
        write,
        "t1 ## op 0: HostRead",
        "t1 cuLaunchHostFunc s2 -> h1",
        "t1 ## host-read 0x7f0000 size=1024",
    ];
    assert!(check(&ops, &before).is_err());

    // A collective queued at its group's end, its stream having waited for the send buffer's
    // stream before the body's write there.
    let nccl = [Op::Fill {
        b: 0,
        s: 1,
        part: false,
    }];
    let group = [
        "t1 ## op 0: Fill",
        "t1 cuMemAllocFromPoolAsync 0x10000000 size=256 from p0 on s1",
        "t1 cuMemAllocFromPoolAsync 0x10001000 size=256 from p0 on s1",
        "t1 ## ncclGroupStart depth=1",
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s2 waits for e1",
        "t1 ## ncclAllReduce send=0x10000000 recv=0x10001000 count=64 type=7 op=0 root=-1 \
         rank=0 stream=s2 dev=0 group=1",
        "t1 cuMemsetD32Async 0x10000000 value=2 count=64 on s1",
    ];
    let end = "t1 ## ncclGroupEnd depth=1 dev=0";
    let err = check(&nccl, &[&group[..], &[end]].concat()).unwrap_err();
    assert!(err.contains("Collective"), "{err}");
    // The call's stream waits for the send buffer's stream at the end: ordered.
    let waited = [
        "t1 cuEventRecord e1 on s1",
        "t1 cuStreamWaitEvent s2 waits for e1",
        end,
    ];
    check(&nccl, &[&group[..], &waited].concat()).unwrap();
}

/// A buffer that only an executable graph keeps (its fill node's), whose deallocation stream
/// then begins a capture: when the executable graph is dropped, the driver releases its user
/// object, and the crate's release thread drops the buffer, which frees it with
/// `cuMemFreeAsync` on its stream, into the capture (the stand-in's `!captured`): the memory
/// leaks, and each launch of the captured graph would free it again. The caller cannot keep
/// to `begin_capture`'s contract ("no buffer dropped whose deallocation stream is in the
/// capture") here: the release comes when the driver lets the graph's values go, after a
/// launch too. Fixed: a buffer dropped while its deallocation stream captures is freed once
/// the stream captures no more (at its `end_capture`, the next drop of a buffer on it, or its
/// last value's drop).
#[test]
fn model_a_graphs_buffer_is_never_freed_into_a_capture() {
    replay(
        "model_a_graphs_buffer_is_never_freed_into_a_capture",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::BuildGraph {
                        g: 0,
                        fill: Some(0),
                        host: false,
                    },
                ),
                (0, Op::Instantiate { g: 0, x: 0 }),
                (0, Op::DropBuffer { b: 0 }),
                (0, Op::DropGraph { g: 0 }),
                (0, Op::Begin { s: 0, mode: 1 }),
                (0, Op::DropExec { x: 0 }),
            ],
            schedule: vec![],
        },
    );
}

/// `end_capture` on a stream that joined another's capture (it did not begin one): refused
/// (`CUDA_ERROR_STREAM_CAPTURE_UNMATCHED`), and since the driver then says the stream is
/// capturing, the crate notes it as a stream whose own capture is open. Once the origin ends
/// the capture, the crate still takes the stream for a capturing one, for good: work on it over
/// a buffer of another stream is queued without the cross-stream order (here a fill that does
/// not wait for its buffer's allocation, and that the buffer's free would not wait for). Fixed:
/// `end_capture` keeps the stream's flag open only where `begin_capture` set it.
#[test]
fn model_ending_a_joined_stream_keeps_no_capture_open() {
    replay(
        "model_ending_a_joined_stream_keeps_no_capture_open",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 2,
                        large: true,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 2 }),
                (0, Op::WaitStream { s: 1, other: 0 }),
                (0, Op::End { s: 1 }),
                (0, Op::End { s: 0 }),
                (
                    0,
                    Op::Fill {
                        b: 0,
                        s: 1,
                        part: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// Found by the model (seed 1) after a change to `sync_for_host`: a host copy from a buffer
/// on a stream that captures (here relaxed) was captured into the graph, and returning an
/// error without the refused synchronisation left the capture valid, so the graph's launch
/// wrote to host memory the caller had got back (`!stale use cuGraphLaunch`). Fixed: on a
/// capturing stream the wait is still made, and the driver's refusal invalidates the capture.
#[test]
fn model_a_host_copy_on_a_capturing_stream_leaves_no_graph_with_it() {
    replay(
        "model_a_host_copy_on_a_capturing_stream_leaves_no_graph_with_it",
        Program {
            threads: 1,
            streams: 1,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 2 }),
                (0, Op::ToHost { b: 0, s: 5 }),
                (0, Op::End { s: 0 }),
                (0, Op::Instantiate { g: 0, x: 2 }),
                (0, Op::Launch { x: 2, s: 0 }),
            ],
            schedule: vec![],
        },
    );
}

// ---- the stall watcher -------------------------------------------------------------------

/// What the watcher's driver call runs, once (see [`watcher_call`]).
static AT_WATCHER_CALL: Mutex<Option<Job>> = Mutex::new(None);

/// A yield hook that runs [`AT_WATCHER_CALL`]'s job at the first `cuStreamEndCapture` (the
/// stand-in names a call by its model's function).
unsafe extern "C" fn watcher_call(call: *const std::ffi::c_char) {
    // SAFETY: the stand-in passes the call's name, a C string.
    let name = unsafe { std::ffi::CStr::from_ptr(call) };
    if name.to_bytes() != b"m_end_capture" {
        return;
    }
    let job = AT_WATCHER_CALL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(job) = job {
        job();
    }
}

/// The stall watcher ([`unstall`]) ends a program's captures holding clones of their streams,
/// and a thread that an end lets go (one that waited for the capture, taken for blocked) runs
/// on alongside it. Bug caught: where that thread dropped its own clone meanwhile (its slot
/// replaced), the watcher's went last, on the watching thread, which keeps the handle for
/// reuse (the crate recycles per thread) and outlives the program: "1 more streams live after
/// the program than before" (seed 28, under load). The drop is made here at the watcher's
/// end of the capture, where the load let it come.
#[test]
fn the_stall_watcher_drops_no_stream_of_the_program() {
    in_standin(
        "the_stall_watcher_drops_no_stream_of_the_program",
        &[],
        || {
            // The watcher on a thread of its own, whose kept handles are counted live until it
            // ends (as those of the process's watching thread are for good).
            std::thread::spawn(watch_a_program_drop_its_stream)
                .join()
                .unwrap();
        },
    );
}

/// [`the_stall_watcher_drops_no_stream_of_the_program`], on the watching thread.
fn watch_a_program_drop_its_stream() {
    let device = Device::new(0).unwrap();
    let live = standin::model_live(0);
    let world = Arc::new(Mutex::new(World::new(device, 1)));
    let program = Worker::start();
    let made = world.clone();
    let began = program.run(move || {
        let stream = device
            .create_stream(StreamOptions::default())
            .map_err(|e| e.to_string())?;
        // SAFETY: nothing is queued in the capture, and the stream outlives it.
        unsafe { stream.begin_capture(CaptureMode::Relaxed) }.map_err(|e| e.to_string())?;
        let mut world = made.lock().unwrap_or_else(|e| e.into_inner());
        world.began.push(handle_of(&stream));
        world.streams[0] = Some(stream);
        Ok(())
    });
    began.expect("the program's thread returns").unwrap();
    let handle = handle_of(world.lock().unwrap().streams[0].as_ref().unwrap());
    // The slot's clone dropped while the watcher ends the capture, on another thread
    // (as the program's thread, let go by an end, drops it under load).
    let slot = world.clone();
    *AT_WATCHER_CALL.lock().unwrap() = Some(Box::new(move || {
        std::thread::spawn(move || {
            let stream = slot.lock().unwrap().streams[0].take();
            drop(stream);
        })
        .join()
        .unwrap();
    }));
    standin::set_yield(watcher_call);
    unstall(&world, None, STALL_CAPTURES, &mut false);
    assert!(
        AT_WATCHER_CALL.lock().unwrap().is_none(),
        "the watcher did not end the capture"
    );
    assert_eq!(standin::model_capture(handle), 0, "the capture is open");
    // The program's end: its thread drops what the world keeps, then ends.
    let kept = world.clone();
    program
        .run(move || {
            let mut world = kept.lock().unwrap_or_else(|e| e.into_inner());
            let streams = std::mem::take(&mut world.kept_streams);
            drop(world);
            drop(streams);
            Ok(())
        })
        .expect("the program's thread returns")
        .unwrap();
    program.end();
    assert_eq!(
        standin::model_live(0),
        live,
        "a stream of the program lives on after it, kept by the watching thread"
    );
}

// ---- the soundness review's findings, as the model finds them (open) ---------------------
//
// Each fails until its finding is fixed in the library (then its `ignore` goes).

/// W1: a host function reading a registered vector (`launch_host_func_reading`) on one
/// thread, and a fill of the same memory through a `SharedSlice` on another. The three steps
/// of each one's cross-stream order interleave (the reader's stream waits for the buffer's
/// stream; the fill's does too, before the host function is queued), so neither is ordered
/// after the other: the slice the host function borrows changes while it reads it.
#[test]

fn model_a_host_functions_read_is_ordered_with_another_threads_shared_write() {
    replay(
        "model_a_host_functions_read_is_ordered_with_another_threads_shared_write",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (0, Op::AllocHost { b: 2, s: 0 }),
                (0, Op::HostRead { b: 2, s: 2 }),
                (
                    1,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::SharedFill {
                        b: 2,
                        s: 0,
                        part: false,
                    },
                ),
            ],
            schedule: vec![(3, vec![1, 1, 1]), (5, vec![1])],
        },
    );
}

/// W2: a replayable region built on the buffer's stream, then run on another stream with every
/// launch `launch_unchanged`: the run waits for none of the buffer's stream's work (the build's
/// stream is left out of the streams an unchanged launch is ordered with), and the buffer's
/// free on its stream does not wait for the run.
#[test]

fn model_a_replay_whose_launches_are_all_unchanged_keeps_its_buffers_stream_order() {
    replay(
        "model_a_replay_whose_launches_are_all_unchanged_keeps_its_buffers_stream_order",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::Replay {
                        b: 1,
                        s: 0,
                        part: false,
                        twice: true,
                        unchanged: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Replay {
                        b: 3,
                        s: 0,
                        part: false,
                        twice: true,
                        unchanged: false,
                    },
                ),
                (
                    0,
                    Op::ReplayUnchanged {
                        b: 3,
                        s: 0,
                        part: false,
                        twice: true,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 3,
                        s: 0,
                        large: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// W3: an NCCL group's all-reduce from a buffer shared through `&Arc<Buffer>`, then, in the
/// group's body, a fill of that buffer on its own stream: the collective's stream waited for
/// the buffer's stream when the call was added, before the fill, and NCCL queues the
/// collective at the group's end, so the fill and the collective's read are not ordered.
#[cfg(feature = "nccl")]
#[test]

fn model_a_write_in_an_nccl_groups_body_is_ordered_with_its_collective() {
    replay(
        "model_a_write_in_an_nccl_groups_body_is_ordered_with_its_collective",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Nccl {
                        send: 3,
                        recv: 1,
                        s: 0,
                        write: true,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// W4: a graph with a fill node over a pinned pool's buffer, instantiated while the device
/// has access, then the access revoked (`set_access(&[])`) and the graph launched: the launch
/// reaches the driver (`!noaccess`), where a buffer's own fill is refused.
#[test]

fn model_a_graph_launched_after_its_pools_access_was_revoked_is_refused() {
    replay(
        "model_a_graph_launched_after_its_pools_access_was_revoked_is_refused",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::PoolAlloc { b: 5, s: 0 }),
                (
                    0,
                    Op::BuildGraph {
                        g: 2,
                        fill: Some(5),
                        host: false,
                    },
                ),
                (0, Op::Instantiate { g: 2, x: 0 }),
                (0, Op::PoolAccess { grant: false }),
                (0, Op::Launch { x: 0, s: 0 }),
            ],
            schedule: vec![],
        },
    );
}

/// W5: a buffer of thread 1's per-thread default stream, dropped on thread 0 while thread 0's
/// capture (of another stream) is open: the question whether the buffer's stream captures
/// fails on the wrong thread and is read as "captures", so the free is put off on that
/// stream, whose last clone goes with the buffer: the memory is never freed.
#[test]

fn model_a_buffer_of_another_threads_per_thread_stream_dropped_in_a_capture_is_freed() {
    replay(
        "model_a_buffer_of_another_threads_per_thread_stream_dropped_in_a_capture_is_freed",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 1 }),
                (1, Op::PerThread { s: 0 }),
                (
                    1,
                    Op::Alloc {
                        b: 5,
                        s: 0,
                        large: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 5,
                        s: 1,
                        large: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// W6: a relaxed capture of a non-blocking stream is open; thread 1 records an event on the
/// legacy stream, and between the gate's question (no blocking stream captures) and the
/// record, thread 0 joins a blocking stream to the capture (`WaitStream`): the record reaches
/// the driver, which refuses it (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`) and invalidates the
/// capture.
#[test]

fn model_legacy_work_racing_a_blocking_streams_join_never_reaches_the_driver() {
    replay(
        "model_legacy_work_racing_a_blocking_streams_join_never_reaches_the_driver",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 0,
                        timing: false,
                    },
                ),
                (0, Op::Legacy { s: 4 }),
                (
                    0,
                    Op::NewStream {
                        s: 5,
                        blocking: true,
                    },
                ),
                (0, Op::Begin { s: 3, mode: 2 }),
                (1, Op::Record { e: 0, s: 4 }),
                (0, Op::WaitStream { s: 5, other: 3 }),
            ],
            schedule: vec![(5, vec![1, 1]), (6, vec![1])],
        },
    );
}

/// W7: thread 0 begins a global capture; thread 1's `sync_timeout` of another stream asks
/// `cuStreamQuery` in its own (global) mode, which the driver refuses, invalidating thread
/// 0's capture (`to_vec` waits in relaxed mode and leaves it valid).
#[test]

fn model_a_timed_wait_leaves_another_threads_global_capture_valid() {
    replay(
        "model_a_timed_wait_leaves_another_threads_global_capture_valid",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 0 }),
                (1, Op::SyncTimeout { s: 1, ms: 0 }),
            ],
            schedule: vec![],
        },
    );
}

/// W7 (futures): a `StreamCompletion` made and polled, then its stream begins a capture, and
/// the completion is polled again: the poll asks `cuStreamQuery` of the capturing stream,
/// which the driver refuses, invalidating the capture.
#[test]

fn model_a_completion_polled_after_its_stream_began_capturing_leaves_the_capture_valid() {
    replay(
        "model_a_completion_polled_after_its_stream_began_capturing_leaves_the_capture_valid",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::PollStream { s: 0, again: false }),
                (0, Op::Begin { s: 0, mode: 0 }),
                (0, Op::PollStream { s: 0, again: true }),
            ],
            schedule: vec![],
        },
    );
}

/// W9: a host function holds the buffer's stream until a later operation lets it go, and
/// `to_vec_timeout` on another stream waits for the buffer's stream without a deadline (its
/// copy is ordered after it, and its synchronisation runs the held host function).
#[test]

fn model_to_vec_timeout_on_another_stream_keeps_its_deadline() {
    replay(
        "model_to_vec_timeout_on_another_stream_keeps_its_deadline",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (0, Op::HostBlock { s: 3 }),
                (0, Op::ToVecTimeout { b: 3, s: 1, ms: 0 }),
            ],
            schedule: vec![],
        },
    );
}

// ---- races of the crate's own that the default schedule leaves out (open) ------------------
//
// Found with `CUDA_CORE_MODEL_RACES=1`, where a capture's begin or end may overlap other work
// on its stream (see `races`). Each fails until its race is closed in the library.

/// A copy across streams on thread 0 (its buffers' streams record events that its stream
/// waits for, then wait for its work), and thread 1 begins a global capture on the source's
/// stream between the two halves: that stream's wait for the copy is a capturing stream's
/// wait for an event recorded outside its capture, which the driver refuses
/// (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`), invalidating thread 1's capture. The crate's check
/// of the homes (`order::check_homes`) and its waits are not one step with respect to a
/// capture's begin.
#[test]
fn model_race_a_capture_begun_amid_a_cross_stream_copy_stays_valid() {
    replay_racing(
        "model_race_a_capture_begun_amid_a_cross_stream_copy_stays_valid",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::Copy {
                        from: 0,
                        to: 1,
                        s: 2,
                        part: true,
                    },
                ),
                (1, Op::Begin { s: 0, mode: 0 }),
            ],
            schedule: vec![(5, vec![1])],
        },
    );
}

/// Thread 0 makes a stream, and its recycling asks `cuStreamQuery` of a kept handle given
/// work before (no capture begun through the crate was open when it looked); thread 1 begins
/// a global capture between the look and the question, which the driver then refuses,
/// invalidating the capture. The recycling's check of open captures and its query are not one
/// step with respect to a capture's begin.
#[test]
fn model_race_recycling_leaves_a_global_capture_begun_meanwhile_valid() {
    replay_racing(
        "model_race_recycling_leaves_a_global_capture_begun_meanwhile_valid",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 0,
                        timing: false,
                    },
                ),
                (0, Op::Record { e: 0, s: 0 }),
                (0, Op::DropStream { s: 0 }),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (1, Op::Begin { s: 2, mode: 0 }),
            ],
            schedule: vec![(5, vec![1])],
        },
    );
}

/// Thread 1 waits for an event with a deadline (`wait_timeout`, which asks `cuEventQuery`);
/// no capture begun through the crate was open when the door looked, so the question was made
/// in the thread's own capture mode; thread 2 began a global capture between the look and the
/// question, which the driver then refused, invalidating the capture. A timed wait's (and a
/// future's) questions are now made relaxed always. (A plain `is_done` or `sync` keeps the
/// look: see `crate::order`.)
#[test]
fn model_race_a_query_leaves_a_global_capture_begun_meanwhile_valid() {
    replay_racing(
        "model_race_a_query_leaves_a_global_capture_begun_meanwhile_valid",
        Program {
            threads: 3,
            streams: 1,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 0,
                        timing: false,
                    },
                ),
                (1, Op::WaitTimeout { e: 0, ms: 0 }),
                (2, Op::Begin { s: 0, mode: 0 }),
            ],
            schedule: vec![(2, vec![1])],
        },
    );
}

/// Thread 0 fills, on a capturing stream, a buffer of another stream (through a shared
/// handle); the crate sees the capture and records the fill into it with no cross-stream
/// order (a capture cannot wait across its boundary); thread 1 ends the capture between that
/// look and the fill, which then ran as plain work, ordered neither after the buffer's
/// allocation nor before its free. The look and the work are now one step for any end (the
/// ends' lock held for reading, the look asked again under it).
#[test]
fn model_race_work_taken_for_captured_is_never_queued_unordered() {
    replay_racing(
        "model_race_work_taken_for_captured_is_never_queued_unordered",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::Begin { s: 3, mode: 0 }),
                (
                    0,
                    Op::SharedFill {
                        b: 0,
                        s: 0,
                        part: false,
                    },
                ),
                (1, Op::End { s: 3 }),
            ],
            schedule: vec![(4, vec![1])],
        },
    );
}

/// Thread 1 queues a repeatable host function on a stream whose capture is open: the crate
/// gives the closure to the capture's graph, then thread 0 ends the capture before the
/// `cuLaunchHostFunc`, which then queues the host function outside any capture, with a
/// closure that lives only as long as the graph: dropped before the host function runs, its
/// run reads freed memory (the model's closure captures nothing, so the run survives; the log
/// check sees the closure kept by a graph and the host function queued outside the capture).
#[test]
fn model_race_a_repeatable_host_function_is_never_queued_with_a_graphs_closure() {
    replay_racing(
        "model_race_a_repeatable_host_function_is_never_queued_with_a_graphs_closure",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 2 }),
                (1, Op::HostFuncRepeatable { s: 0 }),
                (0, Op::End { s: 0 }),
            ],
            schedule: vec![(2, vec![0, 0, 1])],
        },
    );
}

/// Thread 0 ends a stream's capture just as thread 2 begins one on it (the end's first
/// question saw none, the begin came before the end's call, which the driver refuses from
/// another thread and ends the capture): between the end and the crate's flag's update,
/// thread 1 fills a buffer of another stream on it, which the stale flag takes for capturing,
/// so the fill is queued without the cross-stream order (not after the buffer's allocation,
/// and not before its free).
#[test]
fn model_race_work_during_a_captures_end_keeps_its_stream_order() {
    replay_racing(
        "model_race_work_during_a_captures_end_keeps_its_stream_order",
        Program {
            threads: 3,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (0, Op::End { s: 0 }),
                (2, Op::Begin { s: 0, mode: 0 }),
                (
                    1,
                    Op::Fill {
                        b: 1,
                        s: 0,
                        part: true,
                    },
                ),
            ],
            schedule: vec![(3, vec![3, 0, 6, 0, 0])],
        },
    );
}

/// W5's question, read as "captures" where it fails: a fill on thread 0 of a buffer of thread
/// 1's per-thread default stream, while thread 0's capture of another stream is open, is
/// refused as a capture's (`Error::Capture`) though neither stream captures (the work cannot
/// be ordered with another thread's per-thread stream: the refusal should say that).
#[test]

fn model_work_over_another_threads_per_thread_buffer_is_not_refused_as_a_captures() {
    replay(
        "model_work_over_another_threads_per_thread_buffer_is_not_refused_as_a_captures",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (1, Op::PerThread { s: 1 }),
                (
                    1,
                    Op::Alloc {
                        b: 0,
                        s: 1,
                        large: false,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 1 }),
                (
                    0,
                    Op::Fill {
                        b: 0,
                        s: 2,
                        part: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// W5 on the legacy default stream: a buffer of the legacy stream dropped while a blocking
/// stream captures. The question whether the legacy stream captures fails
/// (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`) and is read as "captures", so the free is put off
/// on the legacy stream's value, whose last clone goes with the buffer: the memory is never
/// freed (found by W6's family of operations).
#[test]

fn model_a_legacy_buffer_dropped_while_a_blocking_stream_captures_is_freed() {
    replay(
        "model_a_legacy_buffer_dropped_while_a_blocking_stream_captures_is_freed",
        Program {
            threads: 2,
            streams: 3,
            steps: vec![
                (0, Op::Legacy { s: 1 }),
                (
                    0,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: true,
                    },
                ),
                (0, Op::Begin { s: 0, mode: 0 }),
                (
                    0,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: false,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// Programs other seeds reached in the `g` slice: work captured over a buffer of another
/// stream than the capture's (the first), or of the capture's own stream with the graph
/// launched on another (the second; the third through `capture_into`), recorded no order
/// with that stream's work before the capture, so the graph's launch used the buffer before
/// its allocation. A captured graph now orders its launches with those streams.
#[test]
fn model_a_captured_graph_is_ordered_with_its_buffers_streams() {
    let programs = [
        vec![
            (
                0,
                Op::NewStream {
                    s: 0,
                    blocking: false,
                },
            ),
            (
                1,
                Op::NewStream {
                    s: 1,
                    blocking: false,
                },
            ),
            (
                1,
                Op::Alloc {
                    b: 1,
                    s: 1,
                    large: true,
                },
            ),
            (0, Op::Begin { s: 3, mode: 2 }),
            (
                0,
                Op::Kernel {
                    b: 1,
                    s: 0,
                    part: false,
                },
            ),
            (0, Op::End { s: 0 }),
            (0, Op::Instantiate { g: 0, x: 2 }),
            (0, Op::Launch { x: 2, s: 0 }),
        ],
        vec![
            (
                1,
                Op::NewStream {
                    s: 1,
                    blocking: false,
                },
            ),
            (
                0,
                Op::NewStream {
                    s: 2,
                    blocking: false,
                },
            ),
            (
                1,
                Op::Alloc {
                    b: 1,
                    s: 1,
                    large: true,
                },
            ),
            (0, Op::Begin { s: 4, mode: 0 }),
            (
                0,
                Op::Kernel {
                    b: 1,
                    s: 1,
                    part: false,
                },
            ),
            (0, Op::End { s: 1 }),
            (0, Op::Instantiate { g: 1, x: 0 }),
            (0, Op::Launch { x: 0, s: 2 }),
        ],
        vec![
            (
                1,
                Op::NewStream {
                    s: 1,
                    blocking: false,
                },
            ),
            (
                0,
                Op::NewStream {
                    s: 2,
                    blocking: false,
                },
            ),
            (
                1,
                Op::Alloc {
                    b: 1,
                    s: 1,
                    large: true,
                },
            ),
            (
                0,
                Op::BuildGraph {
                    g: 2,
                    fill: None,
                    host: false,
                },
            ),
            (
                0,
                Op::CaptureInto {
                    s: 1,
                    g: 2,
                    b: 1,
                    mode: 0,
                },
            ),
            (0, Op::Instantiate { g: 2, x: 2 }),
            (0, Op::Launch { x: 2, s: 2 }),
        ],
    ];
    for steps in programs {
        replay(
            "model_a_captured_graph_is_ordered_with_its_buffers_streams",
            Program {
                threads: 2,
                streams: 3,
                steps,
                schedule: vec![],
            },
        );
    }
}

/// Found with seed 108: a stream's completion (`Stream::completion`, a future) held the
/// stream to ask it whether it failed; kept pending while the stream began a capture and its
/// last other value was dropped, it kept the capture open where nothing could end it, and a
/// pool revocation (which waits for other threads' captures) waited for ever. The future now
/// asks an event recorded after its host function instead, and holds no stream.
#[test]
fn model_a_pending_completion_keeps_no_capture_open() {
    replay(
        "model_a_pending_completion_keeps_no_capture_open",
        Program {
            threads: 2,
            streams: 2,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::PollStream { s: 0, again: false }),
                (0, Op::Begin { s: 0, mode: 2 }),
                (0, Op::Legacy { s: 0 }),
                (1, Op::PoolAccess { grant: false }),
            ],
            schedule: vec![],
        },
    );
}

/// A pinned pool's buffer captured into a graph (`capture_into`), the pool's access then
/// revoked (`set_access(&[])`), and the graph launched: a graph built node by node checked
/// its revocable buffers at each launch, but a captured graph did not know its buffers, and
/// the launch reached memory the device no longer had access to (the driver faults). The
/// capture now notes the resources of revocable access its work used, as it notes their
/// streams, and the launch is refused.
#[test]
fn model_a_captured_graph_checks_revoked_access_at_launch() {
    replay(
        "model_a_captured_graph_checks_revoked_access_at_launch",
        Program {
            threads: 4,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (0, Op::PoolAlloc { b: 4, s: 0 }),
                (
                    0,
                    Op::BuildGraph {
                        g: 2,
                        fill: None,
                        host: false,
                    },
                ),
                (
                    0,
                    Op::CaptureInto {
                        s: 0,
                        g: 2,
                        b: 4,
                        mode: 0,
                    },
                ),
                (0, Op::PoolAccess { grant: false }),
                (0, Op::Instantiate { g: 2, x: 0 }),
                (0, Op::Launch { x: 0, s: 0 }),
            ],
            schedule: vec![],
        },
    );
}

/// A program of the model that broke `launch_unchanged`'s contract, found by other seeds: a
/// region built over buffer 4, which is freed; buffer 1, allocated on another stream at the
/// same address, is then given to a launch declared unchanged. The debug build's check
/// compares bytes and passed it, and the graph ran unordered with buffer 1's stream. The model
/// now declares a launch unchanged only where its node was given that very buffer.
#[test]
fn model_declares_unchanged_only_the_buffer_its_node_was_given() {
    replay(
        "model_declares_unchanged_only_the_buffer_its_node_was_given",
        Program {
            threads: 3,
            streams: 3,
            steps: vec![
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    2,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 4,
                        s: 0,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::Replay {
                        b: 4,
                        s: 0,
                        part: false,
                        twice: true,
                        unchanged: false,
                    },
                ),
                (0, Op::DropBuffer { b: 4 }),
                (
                    0,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::ReplayUnchanged {
                        b: 1,
                        s: 2,
                        part: false,
                        twice: true,
                    },
                ),
            ],
            schedule: vec![],
        },
    );
}

/// A hang the whole mix reached once it drew `capture_into` (its programs shifted): thread 2
/// begins a thread-local capture of slot 1's stream (op 28, invalidated by op 31), then puts
/// that stream out of its slot (op 34, `Legacy`, slot 4 of 3). The replayable region that ran
/// on that stream (op 18) kept a clone of it among its entry's homes (the streams a later
/// unchanged launch orders with), so the drop did not end the capture, and thread 3's pool
/// revocation (op 40) waited, as documented, for a capture nothing could reach. A region now
/// holds those streams weakly (a buffer an unchanged launch gives must be alive, and keeps its
/// own stream), so the drop ends the capture and the revocation goes on.
#[test]
fn model_a_pool_revocation_waits_for_a_capture_no_thread_can_end() {
    replay(
        "model_a_pool_revocation_waits_for_a_capture_no_thread_can_end",
        Program {
            threads: 4,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    2,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 0,
                        timing: false,
                    },
                ),
                (
                    1,
                    Op::NewEvent {
                        e: 1,
                        timing: false,
                    },
                ),
                (
                    2,
                    Op::NewEvent {
                        e: 2,
                        timing: false,
                    },
                ),
                (
                    3,
                    Op::NewEvent {
                        e: 3,
                        timing: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    2,
                    Op::Alloc {
                        b: 2,
                        s: 2,
                        large: false,
                    },
                ),
                (
                    3,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (
                    0,
                    Op::SharedFill {
                        b: 0,
                        s: 0,
                        part: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 5,
                        s: 5,
                        large: false,
                    },
                ),
                (2, Op::Legacy { s: 0 }),
                (
                    2,
                    Op::NewStream {
                        s: 4,
                        blocking: false,
                    },
                ),
                (3, Op::WaitStream { s: 5, other: 3 }),
                (1, Op::Release),
                (3, Op::Instantiate { g: 1, x: 1 }),
                (
                    1,
                    Op::Replay {
                        b: 2,
                        s: 1,
                        part: true,
                        twice: false,
                        unchanged: false,
                    },
                ),
                (0, Op::GiveBack { b: 2 }),
                (2, Op::WaitStream { s: 5, other: 4 }),
                (1, Op::WaitStream { s: 3, other: 3 }),
                (
                    3,
                    Op::Kernel {
                        b: 0,
                        s: 2,
                        part: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 2,
                        s: 2,
                        large: false,
                    },
                ),
                (2, Op::Record { e: 3, s: 1 }),
                (2, Op::WaitStream { s: 5, other: 4 }),
                (
                    1,
                    Op::Kernel {
                        b: 3,
                        s: 3,
                        part: false,
                    },
                ),
                (1, Op::Record { e: 4, s: 1 }),
                (2, Op::Begin { s: 1, mode: 1 }),
                (1, Op::WaitStream { s: 4, other: 1 }),
                (
                    1,
                    Op::Fill {
                        b: 4,
                        s: 4,
                        part: true,
                    },
                ),
                (2, Op::Wait { s: 1, e: 3 }),
                (
                    3,
                    Op::Kernel {
                        b: 5,
                        s: 2,
                        part: false,
                    },
                ),
                (0, Op::DropStream { s: 0 }),
                (2, Op::Legacy { s: 4 }),
                (
                    0,
                    Op::NewStream {
                        s: 5,
                        blocking: false,
                    },
                ),
                (1, Op::WaitStream { s: 4, other: 0 }),
                (
                    1,
                    Op::Copy {
                        from: 4,
                        to: 1,
                        s: 4,
                        part: false,
                    },
                ),
                (3, Op::Record { e: 5, s: 0 }),
                (2, Op::QueryEvent { e: 2 }),
                (3, Op::PoolAccess { grant: false }),
                (2, Op::Begin { s: 3, mode: 2 }),
                (1, Op::End { s: 4 }),
                (3, Op::WaitTimeout { e: 2, ms: 3 }),
                (0, Op::Record { e: 5, s: 5 }),
                (2, Op::Record { e: 5, s: 1 }),
                (1, Op::Wait { s: 0, e: 1 }),
                (2, Op::Instantiate { g: 1, x: 2 }),
                (
                    0,
                    Op::NewStream {
                        s: 5,
                        blocking: true,
                    },
                ),
            ],
            schedule: vec![
                (11, vec![0, 0, 1]),
                (12, vec![3, 0]),
                (13, vec![3, 2, 0, 6]),
                (16, vec![6, 0, 0, 0, 5]),
                (17, vec![0, 2]),
                (19, vec![2]),
                (20, vec![6, 3, 0, 0]),
                (21, vec![5, 2, 1]),
                (22, vec![0, 0, 4, 3]),
                (23, vec![0, 0, 4]),
                (24, vec![0, 0, 0, 6, 1]),
                (27, vec![0, 0, 5, 2]),
                (28, vec![0, 2, 0, 2]),
                (29, vec![1, 4, 0]),
                (30, vec![5, 0, 0]),
                (31, vec![6, 2]),
                (32, vec![0, 3, 0, 4, 0]),
                (33, vec![2, 4, 0, 3, 0]),
                (34, vec![3, 0, 5, 0, 4]),
                (35, vec![0, 0, 0, 3, 4]),
                (36, vec![0, 2]),
                (37, vec![4]),
                (39, vec![1, 6, 0]),
                (40, vec![1, 6]),
                (42, vec![4, 1]),
                (43, vec![2, 3, 3]),
                (45, vec![0, 2, 0]),
                (46, vec![1]),
            ],
        },
    );
}

/// An imported semaphore held the streams that signalled it: a stream dropped while it
/// captured (op 29) stayed alive, its capture open, and the cleanup waited for it for good.
/// The semaphore now holds its streams weakly (and waits for their context once one is gone).
#[test]
fn model_a_semaphore_keeps_no_stream_alive() {
    replay(
        "model_a_semaphore_keeps_no_stream_alive",
        Program {
            threads: 3,
            streams: 3,
            steps: vec![
                (
                    0,
                    Op::NewStream {
                        s: 0,
                        blocking: false,
                    },
                ),
                (
                    1,
                    Op::NewStream {
                        s: 1,
                        blocking: false,
                    },
                ),
                (
                    2,
                    Op::NewStream {
                        s: 2,
                        blocking: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 0,
                        timing: false,
                    },
                ),
                (
                    1,
                    Op::NewEvent {
                        e: 1,
                        timing: false,
                    },
                ),
                (
                    2,
                    Op::NewEvent {
                        e: 2,
                        timing: false,
                    },
                ),
                (
                    0,
                    Op::NewEvent {
                        e: 3,
                        timing: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 0,
                        s: 0,
                        large: false,
                    },
                ),
                (
                    1,
                    Op::Alloc {
                        b: 1,
                        s: 1,
                        large: true,
                    },
                ),
                (
                    2,
                    Op::Alloc {
                        b: 2,
                        s: 2,
                        large: false,
                    },
                ),
                (
                    0,
                    Op::Alloc {
                        b: 3,
                        s: 3,
                        large: true,
                    },
                ),
                (1, Op::Semaphore { s: 4, wait: false }),
                (0, Op::WaitStream { s: 5, other: 3 }),
                (1, Op::WaitTimeout { e: 2, ms: 3 }),
                (
                    0,
                    Op::NewStream {
                        s: 5,
                        blocking: true,
                    },
                ),
                (
                    2,
                    Op::NewEvent {
                        e: 2,
                        timing: false,
                    },
                ),
                (0, Op::Launch { x: 1, s: 5 }),
                (0, Op::DropGraph { g: 0 }),
                (2, Op::WaitStream { s: 5, other: 2 }),
                (2, Op::HostFunc { s: 1 }),
                (0, Op::NewEvent { e: 4, timing: true }),
                (0, Op::WaitStream { s: 5, other: 1 }),
                (1, Op::HostBlock { s: 0 }),
                (1, Op::Begin { s: 2, mode: 1 }),
                (
                    0,
                    Op::Kernel {
                        b: 1,
                        s: 2,
                        part: true,
                    },
                ),
                (1, Op::HostRead { b: 4, s: 4 }),
                (0, Op::Semaphore { s: 5, wait: false }),
                (2, Op::Record { e: 1, s: 1 }),
                (0, Op::Launch { x: 1, s: 0 }),
                (2, Op::DropStream { s: 2 }),
                (1, Op::WaitStream { s: 2, other: 2 }),
                (
                    2,
                    Op::Fill {
                        b: 2,
                        s: 1,
                        part: false,
                    },
                ),
                (1, Op::Record { e: 1, s: 1 }),
            ],
            schedule: vec![
                (11, vec![3, 4]),
                (13, vec![0, 3, 4, 0]),
                (17, vec![0, 0, 0, 6]),
                (18, vec![2, 0]),
                (19, vec![2, 4]),
                (20, vec![2]),
                (22, vec![0, 6]),
                (23, vec![6]),
                (24, vec![0, 2, 5]),
                (26, vec![0, 2]),
                (27, vec![0, 1]),
                (28, vec![6, 0]),
                (29, vec![5, 4, 0, 0]),
                (30, vec![4, 1, 5, 3, 2]),
                (32, vec![0, 0, 4, 1]),
            ],
        },
    );
}
