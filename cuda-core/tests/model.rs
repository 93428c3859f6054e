//! A model-based test of the stream-order and capture contract: generated programs of a few
//! threads run streams, events, buffers, captures, graphs and host functions through cuda-core
//! against the stand-in driver in its strict model (`STANDIN_MODEL=1`, described in
//! `tests/standin/libcuda_standin.c`), and the driver calls they make are checked, over the
//! stand-in's log, against invariants that safe code relies on (README, "What safe code can
//! rely on"). Library calls may fail (refusing is allowed); they must not panic, and the
//! invariants must hold.
//!
//! A program is 2 to 4 threads and 3 to 6 stream slots, and a list of operations, each on one
//! thread (after a prelude that fills the slots): streams and events made (blocking or not,
//! timing or not; or the legacy default stream) and dropped (so recycled),
//! records, waits, stream-to-stream waits (forks and joins of captures), queries and
//! synchronisations; buffers allocated (small ones, which streams keep, and large ones; and
//! vectors registered as buffers, `Buffer::from_host_vec`, and given back), filled,
//! copied, passed to a kernel (each whole or as a slice of bytes 64..128; a kernel's buffer as an
//! `Arc<Buffer>`), read back to the host and re-homed on other streams, read by host
//! functions (`launch_host_func_reading`), and dropped; captures begun in
//! each mode and ended (from the thread that began them or another); host functions; graphs
//! built node by node (an empty node, a fill of a buffer, a host node), a node removed,
//! instantiated, launched, dropped while a launch is queued; captured graphs instantiated and
//! launched; a replayable region (`Replay`) run with one or two launches over a buffer or a
//! slice of it (built, updated in place, rebuilt, on any stream). The stand-in's model counts
//! a kernel node's first argument as used by each launch of its graph, as it counts a launch's,
//! and follows `cuGraphExecKernelNodeSetParams`. Operations run one at a time, in program order, each on its thread (a baton passed
//! over channels), so that a failing program replays and shrinks.
//!
//! Checked after every program (each check names the bug it catches):
//! - no call on a handle or address that is not live (the stand-in's `!stale`);
//! - no call that an open capture forbids, unless the operation asked for that very call (a
//!   synchronisation or query the test made, say, which the driver may refuse and which then
//!   invalidates the capture: the test asked for it): cuda-core must never make such a call on
//!   its own (`!refused`), nor put a buffer's allocation or free into a capture (`!captured`;
//!   a host function of `launch_host_func`, which runs once, put into one would never run,
//!   which the count below catches; `launch_host_func_repeatable` makes a host node there, as
//!   the driver does). Work refused on a stream whose capture is invalidated already
//!   (901) is not counted: that capture is broken already, and the error is returned;
//! - no failing driver call the operation did not ask for (the README's "no failing driver
//!   call of its own"; the cleanup's own ends of captures excepted);
//! - every use of a buffer's memory (fills, copies, graph launches) is ordered after its
//!   allocation and before its free, in stream order (records, waits and host
//!   synchronisations, as vector clocks over the log); a registered vector's unregistration,
//!   a synchronous free, after every use as the host knows it;
//! - a stream or event handed out (new or recycled) is idle: no work pending, not in a capture;
//! - no two live buffers share an address;
//! - every host function ran as often as the API promises (once per accepted
//!   `launch_host_func`, once per graph launch for a host node);
//! - nothing leaked: once everything is dropped and the program's threads have ended (their
//!   recycled handles destroyed), no stream, event, graph, executable graph, allocation, user
//!   object, queued host work or capture lives;
//! - once no capture is open, recycling queries again (the crate's count of open captures went
//!   back to zero).
//!
//! What it does not cover: real concurrency (operations never overlap, so races inside
//! cuda-core are not exercised, and the crate's release thread is waited for after each
//! operation); what kernels do (the stand-in runs none: a launch is a use of its first
//! argument); copies from host memory, pools other than the device's default, managed, pinned
//! and virtual memory, several devices, green contexts, conditional nodes, graph updates,
//! clones and child graphs, event nodes and captured allocations (`capture_alloc`); the
//! per-thread default stream, and the legacy stream's implicit order with blocking streams
//! (the order check knows only explicit waits and synchronisations); the driver's asynchrony
//! beyond host functions (work completes at once, host functions run only at a
//! synchronisation); and what the driver does where its documentation is silent (the stand-in
//! states its assumptions: a model that differs from the driver can hide a bug or invent
//! one). The buffers and events a capture used are kept to the program's end, as
//! `begin_capture`'s safety contract asks, so its violations are not tried; streams a
//! graph's buffers may hold are kept too (see `drop_stream`). Each finding is a regression
//! test at the end of the file. The programs come from a fixed seed (the same ones on every run); explore others with
//! `CUDA_CORE_MODEL_SEED`; run fewer programs with `CUDA_CORE_MODEL_CASES`, and count what
//! they reached with `CUDA_CORE_MODEL_STATS=1`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use cuda_core::{
    Buffer, BuildGraph, CaptureMode, CaptureStatus, Device, Event, EventOptions, Graph, GraphExec,
    GraphOptions, Stream, StreamOptions,
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
    /// A registered vector given back (`Buffer::into_host_vec`); refused for other buffers,
    /// and not tried for one that graphs or captures share.
    GiveBack {
        b: usize,
    },
    /// A host function reading a buffer (`Stream::launch_host_func_reading`): refused but for
    /// host memory of this process (the registered vectors here), and on capturing streams.
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
    Copy {
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
    HostFunc {
        s: usize,
    },
    /// `launch_host_func_repeatable`: a host node where the stream captures.
    HostFuncRepeatable {
        s: usize,
    },
    BuildGraph {
        g: usize,
        fill: Option<usize>,
        host: bool,
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
}

/// A program: its threads and stream slots, and its operations (thread, operation).
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub threads: usize,
    pub streams: usize,
    pub steps: Vec<(usize, Op)>,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let i = || 0usize..6;
    prop_oneof![
        3 => (i(), any::<bool>()).prop_map(|(s, b)| Op::NewStream { s, blocking: b && s == 5 }),
        1 => i().prop_map(|s| Op::DropStream { s }),
        1 => i().prop_map(|s| Op::Legacy { s }),
        2 => (i(), any::<bool>()).prop_map(|(e, timing)| Op::NewEvent { e, timing }),
        1 => i().prop_map(|e| Op::DropEvent { e }),
        3 => (i(), i()).prop_map(|(e, s)| Op::Record { e, s }),
        3 => (i(), i()).prop_map(|(s, e)| Op::Wait { s, e }),
        5 => (i(), i()).prop_map(|(s, other)| Op::WaitStream { s, other }),
        1 => i().prop_map(|e| Op::QueryEvent { e }),
        1 => i().prop_map(|e| Op::SyncEvent { e }),
        1 => i().prop_map(|s| Op::QueryStream { s }),
        1 => i().prop_map(|s| Op::SyncStream { s }),
        3 => (i(), i(), any::<bool>()).prop_map(|(b, s, large)| Op::Alloc { b, s, large }),
        1 => (i(), i()).prop_map(|(b, s)| Op::AllocHost { b, s }),
        1 => i().prop_map(|b| Op::GiveBack { b }),
        2 => (i(), i()).prop_map(|(b, s)| Op::HostRead { b, s }),
        2 => i().prop_map(|b| Op::DropBuffer { b }),
        4 => (i(), i(), any::<bool>()).prop_map(|(b, s, part)| Op::Fill { b, s, part }),
        3 => (i(), i(), i(), any::<bool>())
            .prop_map(|(from, to, s, part)| Op::Copy { from, to, s, part }),
        2 => (i(), i(), any::<bool>()).prop_map(|(b, s, part)| Op::Kernel { b, s, part }),
        2 => (i(), i(), any::<bool>(), 0u8..3).prop_map(|(b, s, part, launches)| Op::Replay {
            b,
            s,
            part,
            twice: launches > 0,
            unchanged: launches == 2,
        }),
        1 => (i(), i()).prop_map(|(b, s)| Op::ToHost { b, s }),
        1 => (i(), i()).prop_map(|(b, s)| Op::SetHome { b, s }),
        3 => (i(), 0u8..3).prop_map(|(s, mode)| Op::Begin { s, mode }),
        3 => i().prop_map(|s| Op::End { s }),
        2 => i().prop_map(|s| Op::HostFunc { s }),
        1 => i().prop_map(|s| Op::HostFuncRepeatable { s }),
        2 => (0..GRAPHS, proptest::option::of(i()), any::<bool>())
            .prop_map(|(g, fill, host)| Op::BuildGraph { g, fill, host }),
        1 => (0..GRAPHS).prop_map(|g| Op::RemoveNode { g }),
        3 => (0..GRAPHS, 0..GRAPHS).prop_map(|(g, x)| Op::Instantiate { g, x }),
        3 => (0..GRAPHS, i()).prop_map(|(x, s)| Op::Launch { x, s }),
        1 => (0..GRAPHS).prop_map(|g| Op::DropGraph { g }),
        1 => (0..GRAPHS).prop_map(|x| Op::DropExec { x }),
    ]
}

/// Programs: a prelude that fills the slots (every stream, four events, four buffers of two
/// sizes, on the threads in turn: so that the operations after it have something to act on,
/// and shrinking can still drop what a failure does not need), then up to 40 operations.
fn program_strategy() -> impl Strategy<Value = Program> {
    (2usize..=4, 3usize..=6).prop_flat_map(|(threads, streams)| {
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
        proptest::collection::vec((0..threads, op_strategy()), 1..40).prop_map(move |steps| {
            Program {
                threads,
                streams,
                steps: prelude.iter().cloned().chain(steps).collect(),
            }
        })
    })
}

/// A built graph: its nodes' kinds in order ("empty", "fill", "host"), and the counter of its
/// host node's runs.
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

/// Everything a program's operations act on, shared by its threads (one at a time).
struct World {
    device: Device,
    /// The stand-in's `k1` (one 8-byte parameter), loaded on first use.
    kernel: Option<cuda_core::Kernel>,
    /// The program's replayable region (two graphs kept), made on first use.
    replay: Option<cuda_core::Replay>,
    streams: Vec<Option<Stream>>,
    events: Vec<Option<Arc<Event>>>,
    buffers: Vec<Option<Arc<Buffer>>>,
    graphs: Vec<Option<Built>>,
    execs: Vec<Option<Exec>>,
    /// What a capture used, kept to the end (`begin_capture`'s contract), and streams whose
    /// drop was put off while the driver held user objects (so that none drops on the
    /// release thread).
    kept_buffers: Vec<Arc<Buffer>>,
    kept_events: Vec<Arc<Event>>,
    kept_streams: Vec<Stream>,
    /// The streams a capture was begun on (by `Debug` handle), while the test did not end it.
    began: Vec<usize>,
    /// Every host function counter, with the runs the API promises.
    promised: Vec<(Arc<AtomicUsize>, usize, String)>,
}

impl World {
    fn new(device: Device, streams: usize) -> World {
        World {
            device,
            kernel: None,
            replay: None,
            streams: (0..streams).map(|_| None).collect(),
            events: (0..EVENTS).map(|_| None).collect(),
            buffers: (0..BUFFERS).map(|_| None).collect(),
            graphs: (0..GRAPHS).map(|_| None).collect(),
            execs: (0..GRAPHS).map(|_| None).collect(),
            kept_buffers: Vec::new(),
            kept_events: Vec::new(),
            kept_streams: Vec::new(),
            began: Vec::new(),
            promised: Vec::new(),
        }
    }

    fn stream(&self, s: usize) -> Option<Stream> {
        self.streams[s % self.streams.len()].clone()
    }

    fn event(&self, e: usize) -> Option<Arc<Event>> {
        self.events[e % EVENTS].clone()
    }
}

/// Whether `stream` is in a capture, as the crate says (an error counts as yes).
fn capturing(stream: &Stream) -> bool {
    !matches!(stream.capture_status(), Ok(CaptureStatus::None))
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

/// Runs one operation on the calling thread (`thread`); an `Err` is a broken invariant.
fn apply(world: &mut World, op: &Op) -> Result<(), String> {
    let n = world.streams.len();
    match *op {
        Op::NewStream { s, blocking } => {
            let options = StreamOptions::default().with_non_blocking(!blocking);
            if let Ok(stream) = world.device.create_stream(options) {
                // Catches a recycled stream handed out with work pending or in a capture.
                if standin::model_busy(handle_of(&stream)) {
                    return Err(format!("a new stream is busy: {stream:?}"));
                }
                // Its handle may be a dropped stream's, whose capture the drop ended.
                world.began.retain(|&h| h != handle_of(&stream));
                let old = world.streams[s % n].replace(stream);
                drop_stream(world, old);
            }
        }
        Op::Legacy { s } => {
            if let Ok(stream) = world.device.default_stream() {
                let old = world.streams[s % n].replace(stream);
                drop_stream(world, old);
            }
        }
        Op::DropStream { s } => {
            let old = world.streams[s % n].take();
            drop_stream(world, old);
        }
        Op::NewEvent { e, timing } => {
            let options = EventOptions::default().with_timing(timing);
            if let Ok(event) = world.device.create_event(options) {
                // Catches a recycled event handed out while its last record is pending (or in
                // a capture): it would not be done, as a fresh event is.
                if standin::model_busy(handle_of(&event)) {
                    return Err(format!("a new event is busy: {event:?}"));
                }
                world.events[e % EVENTS] = Some(Arc::new(event));
            }
        }
        Op::DropEvent { e } => world.events[e % EVENTS] = None,
        Op::Record { e, s } => {
            if let (Some(event), Some(stream)) = (world.event(e), world.stream(s)) {
                if capturing(&stream) {
                    world.kept_events.push(event.clone());
                }
                let _ = stream.record(&event);
            }
        }
        Op::Wait { s, e } => {
            if let (Some(event), Some(stream)) = (world.event(e), world.stream(s)) {
                if capturing(&stream) {
                    world.kept_events.push(event.clone());
                }
                let _ = stream.wait(&event);
            }
        }
        Op::WaitStream { s, other } => {
            if let (Some(stream), Some(other)) = (world.stream(s), world.stream(other)) {
                let _ = stream.wait_stream(&other);
            }
        }
        Op::QueryEvent { e } => {
            if let Some(event) = world.event(e) {
                let _ = event.is_done();
            }
        }
        Op::SyncEvent { e } => {
            if let Some(event) = world.event(e) {
                let _ = event.sync();
            }
        }
        Op::QueryStream { s } => {
            if let Some(stream) = world.stream(s) {
                let _ = stream.is_done();
            }
        }
        Op::SyncStream { s } => {
            if let Some(stream) = world.stream(s) {
                let _ = stream.sync();
            }
        }
        Op::Alloc { b, s, large } => {
            if let Some(stream) = world.stream(s) {
                let size = if large { 128 << 10 } else { 256 };
                let memory = world.device.memory_resource().map_err(|e| e.to_string())?;
                if let Ok(buffer) = cuda_core::Allocate::allocate(&memory, size, &stream) {
                    // Catches an allocation handed out twice (a stream's small-buffer cache
                    // giving one address to two buffers).
                    let live = world.buffers.iter().flatten().chain(&world.kept_buffers);
                    if let Some(other) = live.into_iter().find(|o| o.ptr() == buffer.ptr()) {
                        return Err(format!("two live buffers at one address: {other:?}"));
                    }
                    let old = world.buffers[b % BUFFERS].replace(Arc::new(buffer));
                    drop_buffer(world, old);
                }
            }
        }
        Op::AllocHost { b, s } => {
            if let Some(stream) = world.stream(s) {
                if let Ok(buffer) = Buffer::from_host_vec(vec![0u32; 256], &stream) {
                    let live = world.buffers.iter().flatten().chain(&world.kept_buffers);
                    if let Some(other) = live.into_iter().find(|o| o.ptr() == buffer.ptr()) {
                        return Err(format!("two live buffers at one address: {other:?}"));
                    }
                    let old = world.buffers[b % BUFFERS].replace(Arc::new(buffer));
                    drop_buffer(world, old);
                }
            }
        }
        Op::GiveBack { b } => {
            if let Some(slot) = world.buffers[b % BUFFERS].take() {
                world.buffers[b % BUFFERS] = match Arc::try_unwrap(slot) {
                    Ok(buffer) => match buffer.into_host_vec::<u32>() {
                        // Catches a vector given back short, or another's.
                        Ok(vec) if vec.len() != 256 => {
                            return Err(format!("a vector of {} given back", vec.len()));
                        }
                        Ok(_) => None,
                        Err((_, buffer)) => Some(Arc::new(buffer)),
                    },
                    Err(shared) => Some(shared),
                };
            }
        }
        Op::HostRead { b, s } => {
            // Read through a unique borrow: refused (not tried) while a graph or a capture
            // shares the buffer.
            let stream = world.stream(s);
            if let (Some(stream), Some(buffer)) = (
                stream,
                world.buffers[b % BUFFERS].as_mut().and_then(Arc::get_mut),
            ) {
                let ptr = buffer.ptr().0;
                let read = stream.launch_host_func_reading(buffer, |values: &[u32]| {
                    std::hint::black_box(values.iter().sum::<u32>());
                });
                if read.is_ok() {
                    // The memory the host function just queued reads, for the order check
                    // (which takes it as a use at that host function's place in its stream).
                    standin::mark(&format!("host-read {ptr:#x}"));
                }
            }
        }
        Op::DropBuffer { b } => {
            let old = world.buffers[b % BUFFERS].take();
            drop_buffer(world, old);
        }
        Op::Fill { b, s, part } => {
            if let Some(stream) = world.stream(s) {
                let captured = capturing(&stream);
                if let Some(slot) = world.buffers[b % BUFFERS].as_mut() {
                    if captured {
                        world.kept_buffers.push(slot.clone());
                    }
                    if let Some(buffer) = Arc::get_mut(slot) {
                        let _ = if part {
                            buffer
                                .slice_mut(64..128)
                                .and_then(|mut range| range.fill(7u32, &stream))
                        } else {
                            buffer.fill(7u32, &stream)
                        };
                    }
                }
            }
        }
        Op::Kernel { b, s, part } => {
            if world.kernel.is_none() {
                let code = cuda_core::ObjectCode::from_cubin(standin::cubin());
                world.kernel = code.get_kernel("k1").ok();
            }
            if let (Some(stream), Some(buffer), Some(kernel)) = (
                world.stream(s),
                world.buffers[b % BUFFERS].clone(),
                world.kernel.clone(),
            ) {
                if capturing(&stream) {
                    world.kept_buffers.push(buffer.clone());
                }
                let config = cuda_core::LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                let slice = buffer.slice(64..128).expect("buffers have 128 bytes");
                let arg: &dyn cuda_core::KernelArg = if part { &slice } else { &buffer };
                // SAFETY: the stand-in runs no kernel.
                let _ = unsafe { cuda_core::launch(&stream, &config, &kernel, &[arg]) };
            }
        }
        Op::Replay {
            b,
            s,
            part,
            twice,
            unchanged,
        } => {
            if world.kernel.is_none() {
                let code = cuda_core::ObjectCode::from_cubin(standin::cubin());
                world.kernel = code.get_kernel("k1").ok();
            }
            if let (Some(stream), Some(buffer), Some(kernel)) = (
                world.stream(s),
                world.buffers[b % BUFFERS].clone(),
                world.kernel.clone(),
            ) {
                let config = cuda_core::LaunchConfig::new([1, 1, 1], [32, 1, 1]);
                let slice = buffer.slice(64..128).expect("buffers have 128 bytes");
                let arg: &dyn cuda_core::KernelArg = if part { &slice } else { &buffer };
                let region = world
                    .replay
                    .get_or_insert_with(|| cuda_core::Replay::with_capacity(2));
                // Refused on a capturing stream; otherwise one graph launch on `stream`.
                let _ = region.run(&stream, |r| {
                    // SAFETY: the stand-in runs no kernel.
                    unsafe { r.launch(&config, &kernel, &[arg])? };
                    // Only where debug assertions check the promise: a release build would
                    // keep the built buffer without a word.
                    if twice && unchanged && cfg!(debug_assertions) {
                        // SAFETY: as above; where its buffer is not the one of the region's
                        // graph, the debug build's check refuses the run.
                        unsafe { r.launch_unchanged(&config, &kernel, &[arg])? };
                    } else if twice {
                        // SAFETY: as above.
                        unsafe { r.launch(&config, &kernel, &[arg])? };
                    }
                    Ok(())
                });
            }
        }
        Op::Copy { from, to, s, part } => {
            let (from, to) = (from % BUFFERS, to % BUFFERS);
            if from == to {
                return Ok(());
            }
            if let (Some(stream), Some(src)) = (world.stream(s), world.buffers[from].clone()) {
                if capturing(&stream) {
                    world.kept_buffers.push(src.clone());
                    if let Some(dst) = &world.buffers[to] {
                        world.kept_buffers.push(dst.clone());
                    }
                }
                if let Some(dst) = world.buffers[to].as_mut().and_then(Arc::get_mut) {
                    let _ = if part {
                        let (from, to) = (src.slice(0..64), dst.slice_mut(64..128));
                        from.and_then(|from| from.copy_to(to?, &stream))
                    } else {
                        src.copy_to(dst, &stream)
                    };
                }
            }
        }
        Op::ToHost { b, s } => {
            if let (Some(stream), Some(buffer)) =
                (world.stream(s), world.buffers[b % BUFFERS].clone())
            {
                if capturing(&stream) {
                    world.kept_buffers.push(buffer.clone());
                }
                let _ = buffer.to_vec::<u8>(&stream);
            }
        }
        Op::SetHome { b, s } => {
            if let Some(stream) = world.stream(s) {
                if let Some(buffer) = world.buffers[b % BUFFERS].as_mut().and_then(Arc::get_mut) {
                    let _ = buffer.set_deallocation_stream(&stream);
                }
            }
        }
        Op::Begin { s, mode } => {
            if let Some(stream) = world.stream(s) {
                let mode = match mode {
                    0 => CaptureMode::Global,
                    1 => CaptureMode::ThreadLocal,
                    _ => CaptureMode::Relaxed,
                };
                // SAFETY: the test keeps what a capture uses to the program's end, allocates
                // and frees no buffer on a stream in a capture (drops of such buffers are put
                // off), and queues host functions only where the crate lets it.
                if unsafe { stream.begin_capture(mode) }.is_ok() {
                    world.began.push(handle_of(&stream));
                }
            }
        }
        Op::End { s } => {
            if let Some(stream) = world.stream(s) {
                // Any stream, one that only joined a capture too (see
                // `model_ending_a_joined_stream_keeps_no_capture_open`).
                let handle = handle_of(&stream);
                world.began.retain(|&h| h != handle);
                if let Ok(graph) = stream.end_capture() {
                    let counter = Arc::new(AtomicUsize::new(0));
                    let built = Built {
                        graph,
                        nodes: Vec::new(),
                        counter,
                    };
                    world.graphs[s % GRAPHS] = Some(built);
                }
            }
        }
        Op::HostFunc { s } => {
            if let Some(stream) = world.stream(s) {
                let counter = Arc::new(AtomicUsize::new(0));
                let theirs = counter.clone();
                let queued = stream.launch_host_func(move || {
                    theirs.fetch_add(1, Ordering::SeqCst);
                });
                let what = format!("host function on {stream:?}");
                world
                    .promised
                    .push((counter, usize::from(queued.is_ok()), what));
            }
        }
        Op::HostFuncRepeatable { s } => {
            if let Some(stream) = world.stream(s) {
                let captured = capturing(&stream);
                let counter = Arc::new(AtomicUsize::new(0));
                let theirs = counter.clone();
                let queued = stream.launch_host_func_repeatable(move || {
                    theirs.fetch_add(1, Ordering::SeqCst);
                });
                // In a capture it runs once per launch of the graphs made of it, which the
                // model does not count; outside one, once.
                if !captured {
                    let what = format!("repeatable host function on {stream:?}");
                    world
                        .promised
                        .push((counter, usize::from(queued.is_ok()), what));
                }
            }
        }
        Op::BuildGraph { g, fill, host } => {
            let Ok(mut graph) = Graph::new(world.device) else {
                return Ok(());
            };
            let mut nodes = Vec::new();
            let counter = Arc::new(AtomicUsize::new(0));
            if graph.add_empty(&[]).is_ok() {
                nodes.push("empty");
            }
            if let Some(buffer) = fill.and_then(|b| world.buffers[b % BUFFERS].clone()) {
                if graph.add_fill(&[], &buffer, 3u32).is_ok() {
                    nodes.push("fill");
                    // The graph may drop the buffer, its deallocation stream's last clone
                    // with it, on the release thread: see `drop_stream`. The graph's drop of
                    // the buffer may come while a capture is open on its stream (see
                    // `model_a_graphs_buffer_is_never_freed_into_a_capture` below).
                    world
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
            world.graphs[g % GRAPHS] = Some(Built {
                graph,
                nodes,
                counter,
            });
        }
        Op::RemoveNode { g } => {
            if let Some(built) = world.graphs[g % GRAPHS].as_mut() {
                if let Ok(nodes) = built.graph.nodes() {
                    // The node added last (the driver's order of nodes is not promised: the
                    // stand-in's is the order of adding).
                    if let Some(&last) = nodes.last() {
                        if built.graph.remove_node(last).is_ok() {
                            built.nodes.pop();
                        }
                    }
                }
            }
        }
        Op::Instantiate { g, x } => {
            if let Some(built) = world.graphs[g % GRAPHS].as_ref() {
                if let Ok(exec) = built.graph.instantiate(GraphOptions::default()) {
                    let hosts = built.nodes.iter().filter(|&&k| k == "host").count();
                    let counter = built.counter.clone();
                    world.execs[x % GRAPHS] = Some(Exec {
                        exec,
                        hosts,
                        counter,
                    });
                }
            }
        }
        Op::Launch { x, s } => {
            if let (Some(exec), Some(stream)) = (world.execs[x % GRAPHS].as_ref(), world.stream(s))
            {
                // A launch into a capture would need the executable graph kept for the
                // capture's launches: not tried.
                if !capturing(&stream) && exec.exec.launch(&stream).is_ok() && exec.hosts > 0 {
                    let counter = exec.counter.clone();
                    let what = format!("a graph's host node (launched on {stream:?})");
                    world.promised.push((counter, exec.hosts, what));
                }
            }
        }
        Op::DropGraph { g } => world.graphs[g % GRAPHS] = None,
        Op::DropExec { x } => world.execs[x % GRAPHS] = None,
    }
    Ok(())
}

/// Drops a stream now, or keeps it to the program's end while a graph, an executable graph or
/// a user object of the driver's may hold a buffer of it: that buffer's drop, on the crate's
/// release thread, would then drop the stream's last clone there, and the release thread keeps
/// its recycled handles for good (so the leak check could not tell them from a leak).
/// A stream that joined a capture it did not begin is dropped like any other (see
/// `model_a_joined_stream_dropped_mid_capture_*` below).
fn drop_stream(world: &mut World, stream: Option<Stream>) {
    if let Some(stream) = stream {
        let graphs = world.graphs.iter().flatten().count() + world.execs.iter().flatten().count();
        if graphs > 0 || standin::model_live(5) > 0 {
            world.kept_streams.push(stream);
        }
    }
}

/// Drops a buffer now, or keeps it while its deallocation stream is in a capture (where its
/// free would be captured: `begin_capture`'s contract forbids that drop).
fn drop_buffer(world: &mut World, buffer: Option<Arc<Buffer>>) {
    if let Some(buffer) = buffer {
        if capturing(buffer.deallocation_stream()) {
            world.kept_buffers.push(buffer);
        }
    }
}

/// The driver calls whose capture refusals an operation asked for itself.
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
        Op::Fill { .. } => &["cuMemsetD32Async"],
        Op::Kernel { .. } => &["cuLaunchKernel"],
        // Dropping a stream whose capture is open ends it (refused from another thread).
        Op::NewStream { .. } | Op::DropStream { .. } | Op::Legacy { .. } => &["cuStreamEndCapture"],
        Op::Copy { .. } => &["cuMemcpyAsync"],
        // A read back synchronises the stream: refused in a capture, or under another thread's
        // global capture (then retried with this thread relaxed, as documented).
        Op::ToHost { .. } => &["cuMemcpyDtoHAsync", "cuStreamSynchronize"],
        Op::HostFunc { .. } | Op::HostFuncRepeatable { .. } => &["cuLaunchHostFunc"],
        Op::Launch { .. } | Op::Replay { .. } => &["cuGraphLaunch"],
        Op::Alloc { .. } => &["cuMemAllocFromPoolAsync"],
        // Registering is synchronous: refused during a capture of its own thread (the crate
        // makes it relaxed, so only a capture of this very thread in a strict mode refuses).
        Op::AllocHost { .. } => &["cuMemHostRegister"],
        // Giving a vector back synchronises its stream, as a read back does.
        Op::GiveBack { .. } => &["cuStreamSynchronize"],
        _ => &[],
    }
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

    /// Runs `f` on this worker and waits for it (the baton); a panic is an `Err`.
    fn run(&self, f: impl FnOnce() -> Result<(), String> + Send + 'static) -> Result<(), String> {
        let (done, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
                    let text = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    Err(format!("panicked: {text}"))
                });
            let _ = done.send(outcome);
        });
        self.jobs
            .send(job)
            .map_err(|_| "a worker ended".to_owned())?;
        result.recv().map_err(|_| "a worker ended".to_owned())?
    }

    fn end(self) {
        drop(self.jobs);
        // Joined: its thread-local recycled handles are destroyed by then.
        let _ = self.thread.join();
    }
}

/// Waits until the crate's release thread has taken every batch the stand-in gave it (host
/// functions' closures and user objects' values), so that its driver calls belong to the
/// operation that caused them. `base` is (host functions run, destructors run, releases) at
/// the program's start.
fn settle(base: (u64, u64, u64)) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let due = (standin::model_count(0) - base.0) + (standin::model_count(2) - base.1);
        let released = cuda_core::graph_releases() - base.2;
        if released >= due {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the release thread got {released} of {due} batches within 10 s"
            ));
        }
        std::thread::yield_now();
    }
}

/// Runs `program` and checks it; `Err` says which invariant broke, with the log.
pub(crate) fn run_program(device: Device, program: &Program) -> Result<(), String> {
    standin::clear_log();
    let live: Vec<i32> = (0..8).map(standin::model_live).collect();
    let base = (
        standin::model_count(0),
        standin::model_count(2),
        cuda_core::graph_releases(),
    );
    let world = Arc::new(Mutex::new(World::new(device, program.streams)));
    let workers: Vec<Worker> = (0..program.threads).map(|_| Worker::start()).collect();
    let mut ops: Vec<&Op> = Vec::new();
    let mut failure = None;
    for (index, (thread, op)) in program.steps.iter().enumerate() {
        let (thread, op) = (*thread % program.threads, op.clone());
        ops.push(&program.steps[index].1);
        let world = world.clone();
        let ran = workers[thread].run(move || {
            standin::mark(&format!("op {index}: {op:?}"));
            let mut world = world.lock().unwrap_or_else(|e| e.into_inner());
            let applied = apply(&mut world, &op);
            drop(world);
            settle(base)?;
            applied
        });
        if let Err(e) = ran {
            failure = Some(format!(
                "operation {index} ({:?}): {e}",
                program.steps[index].1
            ));
            break;
        }
    }
    let cleaned = cleanup(&world, &workers, base);
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
    let checked = failure
        .map_or(Ok(()), Err)
        .and(cleaned)
        .and(probe)
        .and_then(|()| check_end(&world, &live))
        .and_then(|()| check_log(&log, &ops));
    checked.map_err(|e| format!("{e}\n--- the stand-in's log:\n{log}"))
}

/// Ends every capture still open on a stream the program can reach (its slots, and the
/// deallocation streams of its buffers: a stream dropped by the program lives on in them).
fn end_captures(world: &World) {
    let mut streams: Vec<Stream> = world.streams.iter().flatten().cloned().collect();
    streams.extend(world.kept_streams.iter().cloned());
    for buffer in world.buffers.iter().flatten().chain(&world.kept_buffers) {
        streams.push(buffer.deallocation_stream().clone());
    }
    for stream in streams {
        // Only captures begun on it (see `Op::End`).
        if capturing(&stream) && world.began.contains(&handle_of(&stream)) {
            let _ = stream.end_capture();
        }
    }
}

/// Ends what the program left: captures (from each thread in turn, so that the one that
/// began a capture ends it where it still can), graphs, then a synchronisation of the device,
/// then buffers, events and streams, on the first thread.
fn cleanup(
    world: &Arc<Mutex<World>>,
    workers: &[Worker],
    base: (u64, u64, u64),
) -> Result<(), String> {
    for (thread, worker) in workers.iter().enumerate() {
        let world = world.clone();
        worker.run(move || {
            standin::mark(&format!("cleanup: end captures from thread {thread}"));
            end_captures(&world.lock().unwrap_or_else(|e| e.into_inner()));
            Ok(())
        })?;
    }
    let world = world.clone();
    workers[0].run(move || {
        standin::mark("cleanup: drop graphs and executable graphs, synchronise");
        let mut guard = world.lock().unwrap_or_else(|e| e.into_inner());
        guard.execs.iter_mut().for_each(|x| *x = None);
        guard.graphs.iter_mut().for_each(|g| *g = None);
        guard.replay = None;
        drop(guard);
        settle(base)?;
        let guard = world.lock().unwrap_or_else(|e| e.into_inner());
        end_captures(&guard);
        let synced = guard.device.sync();
        drop(guard);
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
    // freed, user objects never released (a graph's values kept for good), host work queued
    // for ever, captures left open.
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

/// An allocation as the log shows it: where, made on which stream at which point, and its
/// uses so far (stream, point, operation).
struct Allocation {
    ptr: u64,
    size: u64,
    made: (usize, u32, usize),
    uses: Vec<(usize, u32, usize)>,
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

    /// A use of `ptr` on `stream` at `at` (operation `op`): after the allocation.
    /// The free of the allocation at `ptr` (its `what`, by operation `op`) where `clock`
    /// says what is done: refused where a use of it may not be.
    fn free(&mut self, ptr: u64, clock: &Clock, op: usize, what: &str) -> Result<(), String> {
        let Some(i) = self.allocations.iter().position(|a| a.ptr == ptr) else {
            return Ok(());
        };
        let allocation = self.allocations.remove(i);
        match allocation
            .uses
            .iter()
            .find(|(u, point, _)| clock.get(*u) < *point)
        {
            Some((_, _, use_op)) => Err(format!(
                "the {what} of {ptr:#x} (operation {op}) is not ordered after its use by \
                 operation {use_op}"
            )),
            None => Ok(()),
        }
    }

    fn use_at(&mut self, ptr: u64, stream: usize, at: u32, op: usize) -> Result<(), String> {
        let clock = self.clocks[stream].clone();
        let Some(allocation) = self.find(ptr) else {
            return Ok(()); // The stand-in says "!stale use".
        };
        let (made_on, made_at, made_op) = allocation.made;
        if clock.get(made_on) < made_at {
            return Err(format!(
                "a use of {ptr:#x} (operation {op}) is not ordered after its allocation \
                 (operation {made_op})"
            ));
        }
        allocation.uses.push((stream, at, op));
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

/// The log's checks: forbidden calls, stale handles, and the memory's stream order.
fn check_log(log: &str, ops: &[&Op]) -> Result<(), String> {
    let mut order = Order::default();
    let mut op: Option<usize> = None;
    let mut problems = String::new();
    // The stream and place of the last host function queued outside a capture.
    let mut last_host: Option<(usize, u32)> = None;
    for line in log.lines() {
        let Some((_thread, text)) = line.split_once(' ') else {
            continue;
        };
        if let Some(ptr) = text.strip_prefix("## host-read ") {
            // A host function's read: a use at the place of the last host function queued
            // (by this same operation). Catches a read not ordered after the memory's earlier
            // uses, or a free not ordered after it.
            let result = match (hex(ptr), last_host) {
                (Some(ptr), Some((s, point))) => order.use_at(ptr, s, point, op.unwrap_or(0)),
                _ => Err(format!(
                    "a host read with no host function before it: {line}"
                )),
            };
            if let Err(problem) = result {
                let _ = writeln!(problems, "{problem}: {line}");
            }
            continue;
        }
        if let Some(marker) = text.strip_prefix("## ") {
            op = marker
                .strip_prefix("op ")
                .and_then(|m| m.split(':').next())
                .and_then(|n| n.parse().ok());
            continue;
        }
        let at = op.unwrap_or(usize::MAX);
        let words: Vec<&str> = text.split_whitespace().collect();
        if text.starts_with('!') {
            // `!refused CODE CALL`: allowed where the operation asked for that call itself,
            // and for work on a stream whose capture is invalidated already (901): the
            // capture is broken already (by a call the test asked for), and the crate
            // returns the driver's error.
            let asked = |i: usize| direct_calls(ops[i]).iter().any(|c| words.get(2) == Some(c));
            let allowed =
                words[0] == "!refused" && (words.get(1) == Some(&"901") || op.is_some_and(asked));
            if !allowed {
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
                // The cleanup's own ends of captures (op None) may fail as they like.
                let allowed = op.is_none_or(|i| {
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
                let stream = words[3];
                let s = order.stream(stream);
                let host = order.host.clone();
                order.clocks[s].join(&host);
                let clock = order.clocks[s].clone();
                order.events.insert(words[1].to_owned(), clock);
                Ok(())
            }
            Some("cuStreamWaitEvent") if words.len() == 5 => {
                let s = order.stream(words[1]);
                let event = order.events.get(words[4]).cloned().unwrap_or_default();
                let host = order.host.clone();
                order.clocks[s].join(&host);
                order.clocks[s].join(&event);
                Ok(())
            }
            Some("cuStreamSynchronize") => {
                let s = order.stream(words[1]);
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
                let (ptr, size) = (hex(words[1]), words[2].strip_prefix("size="));
                let (s, point) = order.queue(on(&words).unwrap_or("null"));
                if let (Some(ptr), Some(size)) = (ptr, size.and_then(|n| n.parse().ok())) {
                    order.allocations.push(Allocation {
                        ptr,
                        size,
                        made: (s, point, at),
                        uses: Vec::new(),
                    });
                }
                Ok(())
            }
            Some("cuMemHostRegister") => {
                // Host memory registered: made by the host, before every use queued after it
                // in program order (no stream's clock bounds it).
                let (ptr, size) = (hex(words[1]), words[2].strip_prefix("size="));
                if let (Some(ptr), Some(size)) = (ptr, size.and_then(|n| n.parse().ok())) {
                    order.allocations.push(Allocation {
                        ptr,
                        size,
                        made: (0, 0, at),
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
                order.free(ptr, &host, at, "unregistration")
            }
            Some("cuMemFreeAsync") => {
                // Catches a free that can overtake a use on another stream: the buffer's
                // memory reused while work still reads or writes it.
                let ptr = hex(words[1]).unwrap_or(0);
                let (s, _) = order.queue(on(&words).unwrap_or("null"));
                let clock = order.clocks[s].clone();
                order.free(ptr, &clock, at, "free")
            }
            Some(call)
                if call.starts_with("cuMemset")
                    || call.starts_with("cuMemcpy")
                    || call == "cuLaunchKernel" =>
            {
                let (s, point) = order.queue(on(&words).unwrap_or("null"));
                let mut checked = Ok(());
                for word in &words[1..] {
                    if let Some(ptr) = hex(word) {
                        checked = checked.and(order.use_at(ptr, s, point, at));
                    }
                }
                checked
            }
            Some("cuGraphLaunch") => {
                order.queue(on(&words).unwrap_or("null"));
                Ok(())
            }
            Some("cuLaunchHostFunc") if words.get(2) == Some(&"->") => {
                // Work on its stream: its place there, for a host read that follows.
                last_host = Some(order.queue(words[1]));
                Ok(())
            }
            Some("graph-use") => {
                let s = order.stream(on(&words).unwrap_or("null"));
                let point = order.clocks[s].get(s);
                match hex(words[1]) {
                    Some(ptr) => order.use_at(ptr, s, point, at),
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

/// How many programs to run: `CUDA_CORE_MODEL_CASES`, else 10,000.
/// The seed of the generated programs: `CUDA_CORE_MODEL_SEED`, else a fixed one.
fn model_seed() -> u64 {
    std::env::var("CUDA_CORE_MODEL_SEED")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(28)
}

fn cases() -> u32 {
    std::env::var("CUDA_CORE_MODEL_CASES")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(10_000)
}

/// Runs `program` in a stand-in child of its own with the strict model, for a regression test.
fn replay(function: &str, program: Program) {
    standin::run(
        module_path!(),
        function,
        &[],
        &[("STANDIN_MODEL", "1")],
        move || {
            std::thread::spawn(move || {
                let device = Device::new(0).unwrap();
                if let Err(e) = run_program(device, &program) {
                    panic!("{program:#?}\n{e}");
                }
            })
            .join()
            .unwrap();
        },
    );
}

/// The model's run: generated programs, each checked; a failure is shrunk and shown with its
/// log (replay it as a regression test below with [`replay`]).
#[test]
fn generated_programs_keep_the_invariants() {
    standin::run(
        module_path!(),
        "generated_programs_keep_the_invariants",
        &[],
        &[("STANDIN_MODEL", "1")],
        || {
            let device = Device::new(0).unwrap();
            let started = Instant::now();
            let config = Config {
                cases: cases(),
                failure_persistence: None,
                max_shrink_iters: 2048,
                ..Config::default()
            };
            // A fixed seed by default, so that a run's pass does not depend on chance (CI
            // checks the same 10,000 programs each time); CUDA_CORE_MODEL_SEED explores others.
            let seed = model_seed();
            println!("model: seed {seed} (CUDA_CORE_MODEL_SEED)");
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
            let mut runner = TestRunner::new_with_rng(config, rng);
            // The first failing program as generated: what a failure leaves behind in the
            // process (a count, a kept handle) can make the shrunk ones fail for it.
            let first: Mutex<Option<String>> = Mutex::new(None);
            let result = runner.run(&program_strategy(), |program| {
                run_program(device, &program).map_err(|e| {
                    let mut first = first.lock().unwrap_or_else(|e| e.into_inner());
                    first.get_or_insert_with(|| format!("{program:#?}\n{e}"));
                    TestCaseError::fail(e)
                })
            });
            println!("model: {} programs in {:?}", cases(), started.elapsed());
            if let Some(stats) = STATS.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                let mut stats: Vec<_> = stats.iter().collect();
                stats.sort();
                for (line, count) in stats {
                    println!("model: {count:>8} {line}");
                }
            }
            if let Err(e) = result {
                let first = first.lock().unwrap_or_else(|e| e.into_inner()).take();
                panic!(
                    "{e}\n--- the first failing program, as generated:\n{}",
                    first.unwrap_or_default()
                );
            }
        },
    );
}

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
    let failed = "t1 cuStreamEndCapture s1 -> 903";
    check(&[Op::End { s: 1 }], &["t1 ## op 0: End", failed]).unwrap();
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
        },
    );
}
