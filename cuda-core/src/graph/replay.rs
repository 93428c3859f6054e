//! Replayable regions ([`Replay`]): a sequence of kernel launches written once, as a closure,
//! run as one executable graph whose changed arguments are updated in place on later runs.

use std::fmt;

use super::{Graph, GraphExec, GraphOptions};
use crate::args::KernelArg;
use crate::context::Context;
use crate::driver::{GraphNodeHandle, KernelHandle};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::LaunchConfig;
use crate::stream::{Stream, WeakStream};

mod nodes;

use nodes::{apply, build};

/// How many executable graphs a [`Replay`] keeps unless told otherwise.
const DEFAULT_CAPACITY: usize = 4;

/// A replayable region: a sequence of kernel launches, written once as a closure, that runs as
/// one executable graph (one `cuGraphLaunch` for all of them) and is updated in place when
/// only the launches' arguments change.
///
/// Each [`run`](Replay::run) calls the body with a [`ReplayRecorder`], whose
/// [`launch`](ReplayRecorder::launch) takes what [`launch`](crate::launch) takes. The first run
/// builds a graph of the launches, one after another, instantiates it and launches it on the
/// stream. A later run whose launches have the same kernels, shapes and argument sizes, in
/// the same order, changes only the kernel nodes whose argument bytes differ
/// (`cuGraphExecKernelNodeSetParams`) and launches the same executable graph again: an
/// inference or solver loop whose scalars and pointers change pays one driver call per changed
/// kernel and one launch, where stream launches pay one call per kernel. A run whose sequence
/// differs uses the executable graph of a recent run with that sequence, or builds one; the
/// region keeps the most recently used few ([`with_capacity`](Replay::with_capacity), 4 by
/// default), each with its graph.
///
/// The launches run as stream launches would: on `run`'s stream, after the work queued there
/// before, one after another, each seeing the previous one's writes. Arguments follow
/// [`launch`](crate::launch)'s stream-order rules (a buffer whose deallocation stream is
/// another stream is ordered with it), and are only borrowed: no later launch of a graph
/// happens without a run that gives its arguments again. The kernels are kept loaded while a
/// launch of a kept or dropped graph may still run them.
///
/// ```no_run
/// use cuda_core::{Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions, Replay};
/// use cuda_core::StreamOptions;
///
/// let device = Device::new(0)?;
/// let code = Program::new(
///     r#"extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned n) {
///            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///            if (i < n) y[i] += a * x[i];
///        }"#,
///     ProgramOptions::default(),
/// )
/// .compile(CodeType::Cubin, &[])?;
/// let axpy = code.get_kernel("axpy")?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let memory = device.memory_resource()?;
/// let n = 1024u32;
/// let mut x = memory.allocate(4 * n as usize, &stream)?;
/// let mut y = memory.allocate(4 * n as usize, &stream)?;
/// x.copy_from_host(&vec![1.0f32; n as usize], &stream)?;
/// y.fill(0u32, &stream)?;
/// let config = LaunchConfig::for_elements(u64::from(n), 256);
/// let mut region = Replay::new();
/// for step in 0..10 {
///     let a = step as f32;
///     // Built on the first run; on later ones only the scalar `a` changes: one node updated.
///     region.run(&stream, |r| {
///         for _ in 0..8 {
///             // SAFETY: the kernel reads and writes `n` floats of `x` and `y`.
///             unsafe { r.launch(&config, &axpy, &[&a, &x, &y, &n])? };
///         }
///         Ok(())
///     })?;
/// }
/// assert_eq!(region.stats().builds, 1);
/// let sum: f32 = (0..10).map(|a| 8.0 * a as f32).sum();
/// assert!(y.to_vec::<f32>(&stream)?.iter().all(|&v| v == sum));
/// # Ok::<(), cuda_core::Error>(())
/// ```
///
/// Comparing a launch's arguments is most of a run's own time (a few nanoseconds per
/// argument). A launch whose arguments stay the same from run to run (weights, fixed buffers,
/// sizes) may be declared so with [`launch_unchanged`](ReplayRecorder::launch_unchanged),
/// whose promise is the caller's: later runs then compare only its kernel and shape, and a
/// pipeline with a few changing launches costs about what a hand-written update of those
/// nodes costs.
///
/// The body may be called more than once in a run: where its sequence differs from the last
/// run's, once more to read the sequence, and once more to update or build the graph that
/// has it. It must make the same launches each time it is called in a run, and should do
/// nothing else with the GPU (work it queues on the stream itself runs before the region's
/// launches, which are queued when the body has returned).
///
/// Graph nodes have no clusters, cooperative launches or launch attributes: launches with
/// them are refused (capture them instead: [`Stream::begin_capture`]). A run on a capturing
/// stream is refused. A region is `Send` (its graphs may move to another thread with it) but
/// not `Sync`.
pub struct Replay {
    /// Most recently used first.
    entries: Vec<Entry>,
    capacity: usize,
    stats: ReplayStats,
    /// The sequence read by a signature pass, reused from run to run.
    signature: Vec<Step>,
    /// The argument sizes of `signature`'s steps, one after another.
    sizes: Vec<usize>,
    /// The deallocation streams of this run's buffer arguments that are not its stream.
    homes: Vec<Stream>,
}

/// What a [`Replay`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayStats {
    /// Runs that launched a graph.
    pub runs: u64,
    /// Graphs built and instantiated (a run whose sequence no kept graph had).
    pub builds: u64,
    /// Kernel nodes updated in place because their arguments changed.
    pub updated_nodes: u64,
}

/// One kept executable graph, with its graph and what each of its kernel nodes was last
/// given.
struct Entry {
    exec: GraphExec,
    /// Kept with its executable graph (whose nodes it names), and for its kernels.
    _graph: Graph,
    nodes: Vec<Node>,
    /// Every node's arguments now, one node after another (compared in one sweep).
    args: Args,
    /// The arguments of the pass under way that differ, for the nodes in `staged_nodes`, in
    /// that order: applied once the whole sequence is known to match, dropped otherwise.
    staged: Args,
    staged_nodes: Vec<usize>,
    /// The deallocation streams of the buffer arguments its nodes were given (by the run that
    /// built the graph, its own stream included where one is, and by each run that read
    /// arguments since, with that run's stream): a run with launches declared unchanged,
    /// whose arguments it does not read, orders its launch with these (but its own stream).
    /// Held weakly: a region must not keep a stream alive (one dropped while it captured
    /// would stay open, and its capture with it, where nothing could reach it). A stream gone
    /// is the home of no argument an unchanged launch may give, since such a buffer must be
    /// alive and keeps its deallocation stream.
    built_homes: Vec<WeakStream>,
}

/// A kernel node: its kernel's handle, its shape, and where the bytes of its arguments now
/// are. What an update pass compares, in one cache line: a node has no cluster, cooperative
/// launch or attribute (a launch with one is refused where the node is built), so its shape is
/// its grid, block and shared memory. Its kernel stays loaded with the entry's executable
/// graph, which keeps it until its last launch is done.
#[repr(align(64))]
struct Node {
    handle: GraphNodeHandle,
    function: KernelHandle,
    shape: Shape,
    /// Its arguments' places in the entry's `args`: `first..first + count`.
    first: usize,
    count: usize,
}

/// A kernel node's launch shape: what a plain [`LaunchConfig`] holds.
#[derive(Clone, Copy)]
struct Shape {
    grid: [u32; 3],
    block: [u32; 3],
    shared_memory_bytes: u32,
}

impl Shape {
    /// Whether `config`'s grid, block and shared memory are this shape's.
    #[inline(always)]
    fn is_of(&self, config: &LaunchConfig) -> bool {
        config.grid == self.grid
            && config.block == self.block
            && config.shared_memory_bytes == self.shared_memory_bytes
    }

    fn of(config: &LaunchConfig) -> Shape {
        Shape {
            grid: config.grid,
            block: config.block,
            shared_memory_bytes: config.shared_memory_bytes,
        }
    }
}

/// The most arguments a node's update passes to the driver from the stack.
const FEW_ARGS: usize = 16;

/// Kernel arguments' bytes, each at a 16-byte aligned place (so that a pointer to one may be
/// read as its type).
#[derive(Default)]
struct Args {
    words: Vec<u128>,
    /// Each argument's first word and size in bytes.
    places: Vec<(usize, usize)>,
}

impl Args {
    fn clear(&mut self) {
        self.words.clear();
        self.places.clear();
    }

    fn push(&mut self, bytes: &[u8]) {
        let first = self.words.len();
        self.words.resize(first + bytes.len().div_ceil(16), 0);
        // SAFETY: the words from `first` on are at least `bytes.len()` bytes, owned here;
        // any bytes are a valid `u128`'s.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.words[first..].as_mut_ptr().cast::<u8>(),
                bytes.len(),
            );
        }
        self.places.push((first, bytes.len()));
    }

    fn len(&self) -> usize {
        self.places.len()
    }

    /// A pointer to the bytes of each argument of `range`, for the driver, into `out`, which
    /// holds one per argument of `range`.
    fn pointers_into(&mut self, range: std::ops::Range<usize>, out: &mut [*mut std::ffi::c_void]) {
        for (to, &(first, _)) in out.iter_mut().zip(&self.places[range]) {
            *to = self.words[first..].as_mut_ptr().cast();
        }
    }
}

/// A launch as a signature pass reads it: what must match for an update in place.
struct Step {
    kernel: KernelHandle,
    config: LaunchConfig,
    /// Its argument sizes: `sizes[first..first + count]` of the pass.
    first: usize,
    count: usize,
}

impl Node {
    /// Whether a launch declared unchanged is this node's: its kernel, grid, block, shared
    /// memory and argument count. That its configuration has no cluster, cooperative launch
    /// or attribute is its caller's promise (checked in debug builds): 9 of the comparison's
    /// 25 branches per launch, for what no node can have.
    #[inline(always)]
    fn same_shape(&self, kernel: &Kernel, config: &LaunchConfig, args: usize) -> bool {
        self.function == kernel.handle() && self.shape.is_of(config) && self.count == args
    }

    /// Whether `config` is this node's: its shape the same, and no cluster, cooperative
    /// launch or attribute (which a node has none of). The derived comparison of whole
    /// configurations, not inlined, was a sixth of a replay's own time.
    #[inline(always)]
    fn plain_and_same(&self, config: &LaunchConfig) -> bool {
        self.shape.is_of(config)
            && config.cluster.is_none()
            && !config.cooperative
            && !config.attributes.any()
    }
}

impl Entry {
    fn has(&self, signature: &[Step], sizes: &[usize], context: &Context) -> bool {
        self.exec.context.handle() == context.handle()
            && self.nodes.len() == signature.len()
            && self.nodes.iter().zip(signature).all(|(node, step)| {
                node.function == step.kernel
                    && node.plain_and_same(&step.config)
                    && node.count == step.count
                    && (0..step.count)
                        .all(|i| self.args.places[node.first + i].1 == sizes[step.first + i])
            })
    }
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay")
            .field("graphs", &self.entries.len())
            .field("capacity", &self.capacity)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Default for Replay {
    fn default() -> Replay {
        Replay::new()
    }
}

/// What a pass of the body does with each launch.
enum Mode<'p> {
    /// Compare with a kept graph's nodes, updating those whose arguments changed.
    Update {
        entry: &'p mut Entry,
        /// The sequence differs from the entry's: the rest of the pass does nothing.
        diverged: bool,
        updated: u64,
        /// The launches declared unchanged so far: their arguments were not read.
        unread: usize,
    },
    /// Read the sequence only.
    Signature {
        steps: &'p mut Vec<Step>,
        sizes: &'p mut Vec<usize>,
    },
    /// Add each launch to a new graph, after the one before.
    Build {
        graph: &'p mut Graph,
        nodes: &'p mut Vec<Node>,
        args: &'p mut Args,
        /// Its kernels, one of each, kept with its executable graph.
        kernels: &'p mut Vec<Kernel>,
    },
}

/// What a [`Replay`]'s body launches through: see [`Replay::run`].
pub struct ReplayRecorder<'p> {
    mode: Mode<'p>,
    stream: &'p Stream,
    homes: &'p mut Vec<Stream>,
    index: usize,
    /// A launch of this pass was refused: nothing is launched, whatever the body returns.
    refused: bool,
    /// A buffer argument of this pass is ordered on the run's own stream (which `homes`
    /// leaves out): a graph built now orders later runs on other streams with it too.
    stream_home: bool,
}

impl fmt::Debug for ReplayRecorder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayRecorder")
            .field("launches", &self.index)
            .finish()
    }
}

impl ReplayRecorder<'_> {
    /// Adds a kernel launch to the region, after the ones before it: the launch of
    /// [`launch`](crate::launch), run when the region's graph is launched, once the body has
    /// returned. Its configuration is checked as a graph kernel node's (no clusters,
    /// cooperative launches or launch attributes) and its arguments against the kernel's
    /// parameters where the graph is built; a refused launch fails the run (nothing of it is
    /// launched, even where the body goes on).
    ///
    /// # Safety
    ///
    /// As for [`launch`](crate::launch): the kernel must only access memory its arguments
    /// make valid for it, which they must be when the run launches the graph (the borrowed
    /// arguments outlive the run's queued work by the stream order the crate keeps for
    /// buffers; raw addresses are the caller's to keep valid until it is done).
    #[doc(alias = "cuGraphExecKernelNodeSetParams")]
    #[inline]
    pub unsafe fn launch(
        &mut self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        let index = self.index;
        self.index += 1;
        if let Mode::Update {
            entry,
            diverged,
            updated,
            ..
        } = &mut self.mode
        {
            // The hot path, inlined into the body: one read of each argument, compared where
            // it lies.
            if !*diverged {
                match compare(entry, index, config, kernel, args, self.stream, self.homes) {
                    Some(changed) => *updated += u64::from(changed),
                    None => *diverged = true,
                }
            }
            return Ok(());
        }
        // SAFETY: the caller's promise.
        unsafe { self.read_or_build(config, kernel, args) }
    }

    /// [`launch`](Self::launch) for a launch whose arguments never change: where the region
    /// updates a kept graph, only the launch's kernel, shape (grid, block and shared memory)
    /// and argument count are compared with its node, and its arguments are not read, nor its
    /// configuration's cluster, cooperative flag and attributes (where it builds a graph, or
    /// reads a changed sequence, they are read as `launch` reads them). For the launches of a
    /// pipeline whose arguments stay the same from run to run (weights, fixed buffers, sizes)
    /// beside a few that change: their comparison is most of a run's own time.
    ///
    /// In builds with debug assertions the arguments and the rest of the configuration are
    /// checked all the same, and a run whose unchanged launch changed is refused (nothing
    /// launched); so is one whose buffer has a deallocation stream that neither the region's
    /// graph was given nor is the run's (what a buffer allocated where a freed one was, the
    /// same bytes, would have).
    ///
    /// ```no_run
    /// # use cuda_core::{Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions};
    /// # use cuda_core::{Replay, StreamOptions};
    /// # let device = Device::new(0)?;
    /// # let stream = device.create_stream(StreamOptions::default())?;
    /// # let code = Program::new(
    /// #     r#"extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned n) {
    /// #            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    /// #            if (i < n) y[i] += a * x[i];
    /// #        }"#,
    /// #     ProgramOptions::default(),
    /// # )
    /// # .compile(CodeType::Cubin, &[])?;
    /// # let axpy = code.get_kernel("axpy")?;
    /// # let n = 1024u32;
    /// # let x = device.memory_resource()?.allocate(4 * n as usize, &stream)?;
    /// # let y = device.memory_resource()?.allocate(4 * n as usize, &stream)?;
    /// let config = LaunchConfig::for_elements(u64::from(n), 256);
    /// let one = 1.0f32;
    /// let mut region = Replay::new();
    /// for step in 0..100 {
    ///     let a = step as f32;
    ///     region.run(&stream, |r| {
    ///         // SAFETY: each launch reads and writes `n` floats of `x` and `y`.
    ///         unsafe {
    ///             // `a` changes: compared, and its node updated.
    ///             r.launch(&config, &axpy, &[&a, &x, &y, &n])?;
    ///             // The same `one`, `x`, `y` and `n` at every run: only the shape is compared.
    ///             r.launch_unchanged(&config, &axpy, &[&one, &x, &y, &n])
    ///         }
    ///     })?;
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// As for [`launch`](Self::launch); and at every run of the region that makes this launch,
    /// its arguments must be the same, byte for byte, as when the region first made it in this
    /// sequence of launches (a buffer the same buffer, alive, with the same deallocation
    /// stream; a scalar the same value): a changed argument would not reach the graph, whose
    /// kernel would then use the old one, and a run on any stream is ordered with the streams
    /// the buffers had then (a deallocation stream changed since would not be waited for, nor
    /// wait for the run). Its configuration must have no cluster, cooperative launch or launch attribute, as
    /// where the region builds a graph (a node has none of them; where the region updates a
    /// kept graph they are not read).
    #[inline]
    pub unsafe fn launch_unchanged(
        &mut self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        let index = self.index;
        self.index += 1;
        if let Mode::Update {
            entry,
            diverged,
            unread,
            ..
        } = &mut self.mode
        {
            if !*diverged {
                match entry.nodes.get(index) {
                    Some(node) if node.same_shape(kernel, config, args.len()) => *unread += 1,
                    _ => *diverged = true,
                }
                #[cfg(debug_assertions)]
                if !*diverged {
                    let same = entry.nodes[index].plain_and_same(config)
                        && unchanged(entry, index, args, self.stream);
                    if !same {
                        self.refused = true;
                        return Err(changed_unchanged(index));
                    }
                }
            }
            return Ok(());
        }
        // SAFETY: the caller's promise.
        unsafe { self.read_or_build(config, kernel, args) }
    }

    /// [`launch`](Self::launch) in a signature or build pass, out of the update's line.
    ///
    /// # Safety
    ///
    /// As for [`launch`](Self::launch).
    #[inline(never)]
    unsafe fn read_or_build(
        &mut self,
        config: &LaunchConfig,
        kernel: &Kernel,
        args: &[&dyn KernelArg],
    ) -> Result<()> {
        for arg in args {
            if let Some(home) = arg.arg().home {
                if home.same_as(self.stream) {
                    self.stream_home = true;
                } else {
                    note_home(self.homes, home, self.stream);
                }
            }
        }
        let result = match &mut self.mode {
            Mode::Update { .. } => Ok(()),
            Mode::Signature { steps, sizes } => {
                let first = sizes.len();
                sizes.extend(args.iter().map(|arg| arg.arg().size));
                steps.push(Step {
                    kernel: kernel.handle(),
                    config: *config,
                    first,
                    count: args.len(),
                });
                Ok(())
            }
            Mode::Build {
                graph,
                nodes,
                args: kept,
                kernels,
            } => {
                // SAFETY: the caller's promise.
                unsafe { build(graph, nodes, kept, kernels, config, kernel, args) }
            }
        };
        if result.is_err() {
            self.refused = true;
        }
        result
    }
}

/// Notes `home` among the run's streams to order, unless it is the run's stream or noted.
#[inline]
fn note_home(homes: &mut Vec<Stream>, home: &Stream, stream: &Stream) {
    if !home.same_as(stream) && !homes.iter().any(|h| h.same_as(home)) {
        homes.push(home.clone());
    }
}

/// Notes each of `built` among the run's streams to order, as [`note_home`] does. Out of line
/// and apart from `note_home`: a second caller of `note_home` changed how `launch`'s
/// comparison compiled (its argument loop unrolled), 5% slower against the stand-in.
#[inline(never)]
fn note_built_homes(homes: &mut Vec<Stream>, built: &[WeakStream], stream: &Stream) {
    for home in built {
        if !home.is(stream) && !homes.iter().any(|h| home.is(h)) {
            // A stream gone has no live buffer left to order (`Entry::built_homes`).
            if let Some(home) = home.upgrade() {
                homes.push(home);
            }
        }
    }
}

/// Adds this run's `homes` and its `stream` to an entry's `built` streams, each once, and
/// forgets the streams gone when it adds one (so that a program making a stream per run does
/// not grow the list). Out of line: runs that read their arguments pay a call, not the loop's code in the
/// body.
#[inline(never)]
fn note_read_homes(built: &mut Vec<WeakStream>, homes: &[Stream], stream: &Stream) {
    for home in homes.iter().chain([stream]) {
        if !built.iter().any(|b| b.is(home)) {
            // Only where one is added: pruning at every run cost the 100-launch row of the
            // stand-in overhead example 200 ns.
            built.retain(WeakStream::alive);
            built.push(home.downgrade());
        }
    }
}

/// Whether the `size` bytes at `a` and `b` are equal; `b` is 16-byte aligned.
#[inline(always)]
fn same_bytes(a: *const u8, b: *const u8, size: usize) -> bool {
    // SAFETY: both hold `size` readable bytes (an argument's, and its copy in `Args`).
    unsafe {
        match size {
            4 => a.cast::<u32>().read_unaligned() == b.cast::<u32>().read(),
            8 => a.cast::<u64>().read_unaligned() == b.cast::<u64>().read(),
            _ => std::slice::from_raw_parts(a, size) == std::slice::from_raw_parts(b, size),
        }
    }
}

/// Whether the arguments of launch `index` are the bytes its node has (its shape matched),
/// and each buffer's deallocation stream is `stream` or one the entry orders its unread
/// launches with (a buffer allocated where a freed one was has its bytes, not its stream).
#[cfg(debug_assertions)]
fn unchanged(entry: &Entry, index: usize, args: &[&dyn KernelArg], stream: &Stream) -> bool {
    let node = &entry.nodes[index];
    let words = entry.args.words.as_ptr().cast::<u8>();
    let places = &entry.args.places[node.first..node.first + node.count];
    args.iter().zip(places).all(|(arg, &(first, size))| {
        let bytes = arg.arg();
        bytes.size == size
            && same_bytes(bytes.ptr.cast(), words.wrapping_add(16 * first), size)
            && bytes.home.is_none_or(|home| {
                home.same_as(stream) || entry.built_homes.iter().any(|built| built.is(home))
            })
    })
}

#[cfg(debug_assertions)]
#[cold]
fn changed_unchanged(index: usize) -> Error {
    Error::InvalidArgument {
        name: "args",
        reason: format!(
            "launch {index} of the region was declared unchanged (launch_unchanged) but its \
             arguments differ from its node's, a buffer's deallocation stream is none the \
             region's graph was given, or its configuration has a cluster, a cooperative \
             launch or an attribute; use launch for arguments that change"
        ),
    }
}

/// Compares launch `index` with the entry's node, staging its arguments where only their
/// bytes differ: `Some(true)` staged, `Some(false)` the same, `None` a launch the entry has
/// no node of that shape for.
#[inline(always)]
fn compare(
    entry: &mut Entry,
    index: usize,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    stream: &Stream,
    homes: &mut Vec<Stream>,
) -> Option<bool> {
    let node = entry.nodes.get(index)?;
    if !node.same_shape(kernel, config, args.len()) {
        return None;
    }
    let mut same = true;
    let words = entry.args.words.as_ptr().cast::<u8>();
    let places = &entry.args.places[node.first..node.first + node.count];
    for (arg, &(first, size)) in args.iter().zip(places) {
        let bytes = crate::launch::arg_bytes(*arg, Some(size));
        if bytes.size != size {
            return None;
        }
        if let Some(home) = bytes.home {
            note_home(homes, home, stream);
        }
        // `first` words into the copy: within it (its place was made there).
        same &= same_bytes(bytes.ptr.cast(), words.wrapping_add(16 * first), size);
    }
    if same {
        return Some(false);
    }
    entry.staged_nodes.push(index);
    for arg in args {
        entry.staged.push(arg_bytes(arg));
    }
    Some(true)
}

/// An argument's bytes, as the driver copies them into a node.
fn arg_bytes<'a>(arg: &'a &dyn KernelArg) -> &'a [u8] {
    let bytes = arg.arg();
    // SAFETY: an argument's bytes are `size` readable bytes at `ptr`, borrowed from it.
    unsafe { std::slice::from_raw_parts(bytes.ptr.cast::<u8>(), bytes.size) }
}

impl Replay {
    /// An empty region that keeps up to 4 executable graphs.
    pub fn new() -> Replay {
        Replay::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty region that keeps up to `graphs` executable graphs (at least one), one per
    /// sequence of launches most recently run: a body that alternates between a few
    /// sequences (a solver's even and odd steps, a last partial batch) rebuilds nothing.
    pub fn with_capacity(graphs: usize) -> Replay {
        Replay {
            entries: Vec::new(),
            capacity: graphs.max(1),
            stats: ReplayStats::default(),
            signature: Vec::new(),
            sizes: Vec::new(),
            homes: Vec::new(),
        }
    }

    /// What the region did so far.
    pub fn stats(&self) -> ReplayStats {
        self.stats
    }

    /// How many executable graphs it keeps now.
    pub fn graphs(&self) -> usize {
        self.entries.len()
    }

    /// Runs the region on `stream`: calls `body` with a recorder of its launches, then
    /// launches them as one graph, after the work queued on `stream` before (see [`Replay`]).
    /// A body that launches nothing queues nothing. An error of the body, or a refused
    /// launch, is returned with nothing launched; graphs of the stream's device and context
    /// only (a green context's stream gets graphs of its green context).
    #[doc(alias("cuGraphLaunch", "cuGraphExecKernelNodeSetParams"))]
    pub fn run<F>(&mut self, stream: &Stream, body: F) -> Result<()>
    where
        F: FnMut(&mut ReplayRecorder<'_>) -> Result<()>,
    {
        let result = self.run_passes(stream, body);
        // The streams noted for this run's order are not held past it.
        self.homes.clear();
        result
    }

    fn run_passes<F>(&mut self, stream: &Stream, mut body: F) -> Result<()>
    where
        F: FnMut(&mut ReplayRecorder<'_>) -> Result<()>,
    {
        if stream.capturing() {
            return Err(Error::InvalidArgument {
                name: "stream",
                reason: "it is capturing: a region launches its own graph; run it outside the \
                         capture"
                    .to_owned(),
            });
        }
        let context = stream.context();
        if self.entries.is_empty() {
            return self.build_and_launch(stream, &mut body);
        }
        // The graph of the last run, updated where only arguments changed: one pass.
        if self
            .entries
            .first()
            .is_some_and(|e| e.exec.context.handle() == context.handle())
            && self.update_pass(0, stream, &mut body)?
        {
            return self.launch(0, stream);
        }
        // Another sequence: read it, then update the kept graph that has it, or build one.
        self.homes.clear();
        self.signature.clear();
        self.sizes.clear();
        let mut recorder = ReplayRecorder {
            mode: Mode::Signature {
                steps: &mut self.signature,
                sizes: &mut self.sizes,
            },
            stream,
            homes: &mut self.homes,
            index: 0,
            refused: false,
            stream_home: false,
        };
        finish(body(&mut recorder), recorder.refused)?;
        if self.signature.is_empty() {
            return Ok(());
        }
        if let Some(at) = self
            .entries
            .iter()
            .position(|e| e.has(&self.signature, &self.sizes, context))
        {
            let entry = self.entries.remove(at);
            self.entries.insert(0, entry);
            if self.update_pass(0, stream, &mut body)? {
                return self.launch(0, stream);
            }
        }
        self.build_and_launch(stream, &mut body)
    }

    fn build_and_launch<F>(&mut self, stream: &Stream, body: &mut F) -> Result<()>
    where
        F: FnMut(&mut ReplayRecorder<'_>) -> Result<()>,
    {
        if self.build_pass(stream, body)? {
            self.launch(0, stream)?;
        }
        Ok(())
    }

    /// Calls `body` against entry `at`, updating its changed nodes: whether the whole sequence
    /// matched it.
    fn update_pass<F>(&mut self, at: usize, stream: &Stream, body: &mut F) -> Result<bool>
    where
        F: FnMut(&mut ReplayRecorder<'_>) -> Result<()>,
    {
        self.homes.clear();
        let nodes = self.entries[at].nodes.len();
        let mut recorder = ReplayRecorder {
            mode: Mode::Update {
                entry: &mut self.entries[at],
                diverged: false,
                updated: 0,
                unread: 0,
            },
            stream,
            homes: &mut self.homes,
            index: 0,
            refused: false,
            stream_home: false,
        };
        let returned = body(&mut recorder);
        let (launches, refused) = (recorder.index, recorder.refused);
        let Mode::Update {
            diverged,
            updated,
            unread,
            ..
        } = recorder.mode
        else {
            unreachable!("an update pass's recorder updates")
        };
        let entry = &mut self.entries[at];
        let finished = finish(returned, refused);
        if finished.is_err() || diverged || launches != nodes || launches == 0 {
            // Another sequence, or a failed body: the graph stays as it was.
            entry.staged.clear();
            entry.staged_nodes.clear();
            finished?;
            return Ok(false);
        }
        // SAFETY: the staged arguments were given to `ReplayRecorder::launch`, whose caller
        // vouched for them.
        unsafe { apply(entry) }?;
        if unread < launches {
            // Arguments read now may be the nodes' from now on, and unread in a later run:
            // their streams join those the entry orders such runs with (this run's own among
            // them, where a buffer's stream may be; one more wait is all it can cost).
            note_read_homes(&mut entry.built_homes, &self.homes, stream);
        }
        if unread > 0 {
            // The unread arguments are those some run before gave, ordered as they were then.
            note_built_homes(&mut self.homes, &entry.built_homes, stream);
        }
        self.stats.updated_nodes += updated;
        Ok(true)
    }

    /// Calls `body` to build a new graph of its launches, instantiated and kept first; false
    /// where it launched nothing (no graph is then made).
    fn build_pass<F>(&mut self, stream: &Stream, body: &mut F) -> Result<bool>
    where
        F: FnMut(&mut ReplayRecorder<'_>) -> Result<()>,
    {
        self.homes.clear();
        let context = stream.context().clone();
        let handle = context.with_current(|driver| driver.graph_create())?;
        let mut graph = Graph::from_handle(handle, context);
        let mut nodes = Vec::new();
        let mut args = Args::default();
        let mut kernels = Vec::new();
        let mut recorder = ReplayRecorder {
            mode: Mode::Build {
                graph: &mut graph,
                nodes: &mut nodes,
                args: &mut args,
                kernels: &mut kernels,
            },
            stream,
            homes: &mut self.homes,
            index: 0,
            refused: false,
            stream_home: false,
        };
        let returned = body(&mut recorder);
        let (refused, stream_home) = (recorder.refused, recorder.stream_home);
        finish(returned, refused)?;
        if nodes.is_empty() {
            return Ok(false);
        }
        let mut exec = graph.instantiate(GraphOptions::default())?;
        // Unloaded no sooner than the last launch of `exec` is done, whenever the region, or
        // the caller's kernels, go.
        exec.keep_until_last_launch(Box::new(kernels));
        self.stats.builds += 1;
        // Every stream the build's buffer arguments are ordered on, its own included: a later
        // run on another stream orders its unread launches with each (`note_built_homes`
        // leaves out that run's own).
        let mut built_homes: Vec<WeakStream> = self.homes.iter().map(Stream::downgrade).collect();
        if stream_home {
            built_homes.push(stream.downgrade());
        }
        self.entries.insert(
            0,
            Entry {
                exec,
                _graph: graph,
                nodes,
                args,
                staged: Args::default(),
                staged_nodes: Vec::new(),
                built_homes,
            },
        );
        // The least recently used go: their launches queued so far keep running (an
        // executable graph destroyed while launched finishes those launches first).
        self.entries.truncate(self.capacity);
        Ok(true)
    }

    /// Launches entry `at` on `stream`, in the stream order of this run's buffers.
    fn launch(&mut self, at: usize, stream: &Stream) -> Result<()> {
        let exec = &self.entries[at].exec;
        if self.homes.is_empty() {
            exec.launch(stream)?;
        } else {
            let homes: Vec<&Stream> = self.homes.iter().collect();
            crate::order::in_stream_order(&homes, stream, || exec.launch(stream))?;
        }
        self.stats.runs += 1;
        Ok(())
    }
}

/// The body's result, or a refusal of one of its launches where the body went on.
fn finish(returned: Result<()>, refused: bool) -> Result<()> {
    returned?;
    if refused {
        return Err(Error::InvalidArgument {
            name: "body",
            reason: "a launch of the region was refused (its error was returned to the body, \
                     which went on); nothing was launched"
                .to_owned(),
        });
    }
    Ok(())
}

// A region moves between threads with its graphs.
const _: () = {
    const fn send<T: Send>() {}
    send::<Replay>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_kept_aligned_and_compared_by_their_bytes() {
        let mut args = Args::default();
        args.push(&7u32.to_ne_bytes());
        args.push(&0x0102_0304_0506_0708u64.to_ne_bytes());
        args.push(&[9u8; 20]);
        args.push(&[]);
        assert_eq!(args.len(), 4);
        let mut pointers = [std::ptr::null_mut(); 4];
        args.pointers_into(0..4, &mut pointers);
        // Catches places that overlap or lose 16-byte alignment (a pointer read as its type).
        for pointer in &pointers {
            assert_eq!(*pointer as usize % 16, 0);
        }
        // SAFETY: the pointers are to the pushed bytes, alive in `args`.
        unsafe {
            assert_eq!(pointers[0].cast::<u32>().read(), 7);
            assert_eq!(pointers[1].cast::<u64>().read(), 0x0102_0304_0506_0708);
            assert_eq!(
                std::slice::from_raw_parts(pointers[2].cast::<u8>(), 20),
                [9u8; 20]
            );
        }
        let words = args.words.as_ptr().cast::<u8>();
        let at = |i: usize| words.wrapping_add(16 * args.places[i].0);
        // Each width's comparison: equal, and one byte off (catches a width compared short).
        assert!(same_bytes(7u32.to_ne_bytes().as_ptr(), at(0), 4));
        assert!(!same_bytes(8u32.to_ne_bytes().as_ptr(), at(0), 4));
        let wide = 0x0102_0304_0506_0708u64.to_ne_bytes();
        assert!(same_bytes(wide.as_ptr(), at(1), 8));
        let mut off = wide;
        off[7] ^= 1;
        assert!(!same_bytes(off.as_ptr(), at(1), 8));
        let mut long = [9u8; 20];
        assert!(same_bytes(long.as_ptr(), at(2), 20));
        long[19] = 0;
        assert!(!same_bytes(long.as_ptr(), at(2), 20));
        args.clear();
        assert_eq!((args.len(), args.words.len()), (0, 0));
    }
}
