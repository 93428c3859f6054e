//! Stream capture: work queued on a stream recorded into a [`Graph`] instead of run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::{Gated, Graph};
use crate::error::{DriverCode, Error, Result};
use crate::memory::MemoryResource;
use crate::stream::{Stream, WeakStream};
use crate::DevicePtr;

/// How a stream capture treats calls that could not be captured safely
/// (`CUstreamCaptureMode`), such as a synchronous `cuMemAlloc` made while it captures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUstreamCaptureMode")]
pub enum CaptureMode {
    /// Such calls are refused from every thread while any thread captures in this mode
    /// (`CU_STREAM_CAPTURE_MODE_GLOBAL`).
    Global,
    /// Such calls are refused from the capturing thread only
    /// (`CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`).
    #[default]
    ThreadLocal,
    /// No call is refused for this capture (`CU_STREAM_CAPTURE_MODE_RELAXED`).
    Relaxed,
}

/// Whether a stream is capturing (`CUstreamCaptureStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUstreamCaptureStatus")]
pub enum CaptureStatus {
    /// Not capturing: work runs (`CU_STREAM_CAPTURE_STATUS_NONE`).
    None,
    /// Capturing: work is recorded into a graph (`CU_STREAM_CAPTURE_STATUS_ACTIVE`).
    Active,
    /// Capturing, but invalidated by a call the capture could not take; ending it fails
    /// (`CU_STREAM_CAPTURE_STATUS_INVALIDATED`).
    Invalidated,
}

impl Stream {
    /// Starts capturing this stream (`cuStreamBeginCapture`): until [`Stream::end_capture`],
    /// work queued on it (launches, copies, fills, event records and waits) is recorded into a
    /// graph instead of run, and so is work on streams that wait on an event recorded here
    /// during the capture (they join the capture and must be joined back before it ends).
    ///
    /// A synchronisation or query of a capturing stream fails and invalidates the capture;
    /// [`Stream::end_capture`] then says so. A stream dropped while its capture is open ends
    /// it, discarding the graph. In [`CaptureMode::Global`], other threads' calls that the
    /// capture forbids (such as stream-ordered allocations and synchronisations) fail until
    /// it ends, and invalidate it (as the 580 driver does). A synchronisation of the stream's
    /// whole context ([`Context::sync`](crate::Context::sync), [`Device::sync`](crate::Device::sync)),
    /// which the driver refuses while any stream of the context captures, waits in another
    /// thread for the capture to end; a capture begins only once such a synchronisation under
    /// way has returned.
    ///
    /// A launch captured with a [`Buffer`](crate::Buffer) argument whose deallocation stream
    /// is another stream is captured without the cross-stream ordering that [`launch`](crate::launch)
    /// adds outside a capture (that ordering belongs to the graph's launches, which the
    /// caller orders; see below).
    ///
    /// # Safety
    ///
    /// A captured graph refers to what the captured work used without keeping it alive (a
    /// graph built node by node does keep it: see [`BuildGraph`](crate::BuildGraph)). So:
    ///
    /// - everything the captured work uses must outlive every launch of the graph made from
    ///   this capture (and of its clones and executable graphs): the buffers and raw addresses
    ///   its kernels, copies and fills were given, the host memory its copies read or write,
    ///   the kernels' code ([`ObjectCode`](crate::ObjectCode) or [`Kernel`](crate::Kernel)
    ///   values), events recorded or waited on, and executable graphs launched into it;
    ///   buffers must not be freed, or used by other work, while a launch of the graph may
    ///   use them;
    /// - while the stream captures, no [`Buffer`](crate::Buffer) may be allocated on a stream
    ///   that joined the capture (on the capturing stream itself it is refused), and none
    ///   dropped whose deallocation stream is one of them: a stream-ordered allocation in a
    ///   capture gives memory that exists only while the graph runs, and a free would be
    ///   recorded into the graph instead of made. Allocate graph memory in a capture with
    ///   [`Stream::capture_alloc`] and free it with [`Stream::capture_free`];
    /// - no host function may be queued ([`Stream::launch_host_func`]) on a stream that joined
    ///   the capture (on the capturing stream itself it is refused): its closure runs once,
    ///   and a graph may run it many times. Use a host node
    ///   ([`BuildGraph::add_host`](crate::BuildGraph::add_host)) instead.
    #[doc(alias = "cuStreamBeginCapture")]
    pub unsafe fn begin_capture(&self, mode: CaptureMode) -> Result<()> {
        let code = match mode {
            CaptureMode::Global => 0,
            CaptureMode::ThreadLocal => 1,
            CaptureMode::Relaxed => 2,
        };
        self.begin_capture_code(code)
    }

    /// Ends this stream's capture (`cuStreamEndCapture`), giving the captured graph. A
    /// capture the driver invalidated, or one that left another stream's work unjoined, is
    /// [`Error::Capture`]; so is ending a stream that was not capturing.
    #[doc(alias = "cuStreamEndCapture")]
    pub fn end_capture(&self) -> Result<Graph> {
        // No capture begins or ends on another thread from the question below to the flag's
        // update: a begin between them would be counted ended (or left counted open).
        let ending = crate::lifetime::captures::ending();
        // A stream the driver says captures nothing is refused before the end, which would
        // fail (a failed call compute-sanitizer reports as the caller's error).
        if let Ok(0) = self.capture_query(|driver, handle| driver.stream_is_capturing(handle)) {
            self.set_capturing(false);
            drop(ending);
            return Err(Error::Capture {
                reason: "the stream was not capturing (end_capture: cuStreamIsCapturing says \
                         no capture is open on it)"
                    .to_owned(),
            });
        }
        // Only a capture begun here can stay open by the crate's flag: a stream that joined
        // another's capture (whose end is refused, the driver still saying it captures) is no
        // origin, and stays unflagged (the model test found it flagged for good).
        let began = self.began_capture();
        let noted = if GATED_ANY.load(Ordering::Acquire) {
            self.capture_now()
        } else {
            self.capture_id_if_noted()
        };
        let flagged = self.lower_capturing();
        let ended = self.queue(|driver, handle| driver.stream_end_capture(handle));
        // The resources of revocable access, and the streams of other streams' buffers, that
        // its work used, for the graph's launches.
        let gated = noted.map(take_captured_gated);
        let homes = noted.map(crate::stream::take_captured_homes);
        let own = self.take_own_captured();
        // A refused end may or may not have ended the capture (an invalidated or unjoined one
        // ends with its error; one ended from another thread than its own stays open by the
        // documentation, and the 580 driver ends a thread-local one): the driver says which.
        let open = began
            && ended.is_err()
            && !matches!(
                self.capture_query(|driver, handle| driver.stream_is_capturing(handle)),
                Ok(0)
            );
        self.capture_end_done(flagged, open);
        drop(ending);
        // What was freed while the stream captured is freed now, in order after the work
        // queued before the capture (nothing, while a capture is still open on it).
        self.drain_deferred();
        let handle = ended.map_err(|e| capture_error(e, "end_capture"))?;
        let mut graph = Graph::from_handle(handle, self.context().clone());
        // Its own stream where its work used a buffer of it: a launch on another stream is
        // then ordered with the work queued here before the capture (that allocation).
        if own {
            graph.state.add_captured_homes(&[self.downgrade()]);
        }
        if let Some(homes) = homes {
            graph.state.add_captured_homes(&homes);
        }
        if let Some(gated) = gated {
            let device = graph.context.device();
            graph.state.add_captured_gated(&gated, device);
        }
        Ok(graph)
    }

    /// Whether this stream is capturing (`cuStreamIsCapturing`).
    #[doc(alias = "cuStreamIsCapturing")]
    pub fn capture_status(&self) -> Result<CaptureStatus> {
        let status = self.capture_query(|driver, handle| driver.stream_is_capturing(handle))?;
        Ok(match status {
            1 => CaptureStatus::Active,
            2 => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        })
    }
}

/// Device memory allocated inside a stream capture ([`Stream::capture_alloc`]): a memory
/// allocation node of the captured graph. It exists while the graph runs, from that node until
/// the free node that [`Stream::capture_free`] records, and has the same address on every
/// launch; pass [`CapturedAllocation::ptr`] to the work captured between the two.
///
/// Without a free in the capture, the memory stays allocated after each launch (the driver
/// then refuses to launch the graph again unless it was instantiated with
/// [`GraphOptions::auto_free_on_launch`](crate::GraphOptions::auto_free_on_launch)).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CapturedAllocation {
    ptr: DevicePtr,
    size: usize,
    capture: u64,
}

// A kernel argument of launches on the capturing streams (and graph nodes): its address,
// valid in the graph's work between its allocation and its free.
crate::args::wrapper_arg!(CapturedAllocation);
impl crate::args::GraphArg for CapturedAllocation {}

impl crate::args::sealed::Arg for CapturedAllocation {
    #[inline]
    fn arg(&self) -> crate::args::sealed::ArgBytes<'_> {
        crate::args::address_arg(&self.ptr.0, None)
    }
}

impl CapturedAllocation {
    /// The address it has while the graph runs.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Stream {
    /// Allocates `bytes` of device memory in this stream's capture (`cuMemAllocAsync`,
    /// captured): the captured graph gets a memory allocation node, after the work captured
    /// on this stream so far, and allocates from the device's graph memory each time it runs.
    /// The stream must be capturing, itself or as a stream that joined a capture; otherwise
    /// this is [`Error::Capture`].
    ///
    /// ```no_run
    /// use cuda_core::{CaptureMode, Device, GraphOptions, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// // SAFETY: no buffer is allocated or freed on the stream while it captures.
    /// unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
    /// let scratch = stream.capture_alloc(1 << 20)?;
    /// // ... capture kernels that use `scratch.ptr()` ...
    /// stream.capture_free(scratch)?;
    /// let exec = stream.end_capture()?.instantiate(GraphOptions::default())?;
    /// exec.launch(&stream)?;
    /// exec.launch(&stream)?;
    /// stream.sync()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemAllocAsync")]
    pub fn capture_alloc(&self, bytes: usize) -> Result<CapturedAllocation> {
        if bytes == 0 {
            return Err(Error::InvalidArgument {
                name: "bytes",
                reason: "cannot allocate zero bytes".to_owned(),
            });
        }
        let capture = self.capture_id("capture_alloc")?;
        let ptr: u64 =
            self.queue_in_context(|driver, handle| driver.mem_alloc_async(bytes, handle))?;
        Ok(CapturedAllocation {
            ptr: DevicePtr(ptr),
            size: bytes,
            capture,
        })
    }

    /// Frees `allocation` in this stream's capture (`cuMemFreeAsync`, captured): the graph
    /// gets a memory free node after the work captured on this stream so far. The stream must
    /// be in the capture that made the allocation (the stream that allocated it, or one
    /// joined to that capture); otherwise this is [`Error::Capture`] and nothing is recorded.
    #[doc(alias = "cuMemFreeAsync")]
    pub fn capture_free(&self, allocation: CapturedAllocation) -> Result<()> {
        let capture = self.capture_id("capture_free")?;
        if capture != allocation.capture {
            return Err(Error::Capture {
                reason: "capture_free: the allocation was made in another capture (a captured \
                         allocation is freed in its own capture)"
                    .to_owned(),
            });
        }
        self.queue_in_context(|driver, handle| driver.mem_free_async(allocation.ptr.0, handle))
    }

    /// The id of the capture this stream is in (`cuStreamGetCaptureInfo`); a stream that is
    /// not capturing, or whose capture was invalidated, is [`Error::Capture`].
    fn capture_id(&self, during: &str) -> Result<u64> {
        let (status, id) =
            self.capture_query(|driver, handle| driver.stream_capture_info(handle))?;
        match status {
            1 => Ok(id),
            2 => Err(Error::Capture {
                reason: format!(
                    "{during}: the stream's capture was invalidated (a call made during it \
                     could not be captured)"
                ),
            }),
            _ => Err(Error::Capture {
                reason: format!(
                    "{during}: the stream is not capturing (begin a capture on it, or make it \
                     wait on an event recorded in one)"
                ),
            }),
        }
    }
}

/// The driver's capture codes as [`Error::Capture`], saying what each means.
fn capture_error(error: Error, during: &str) -> Error {
    let Some(code) = error.driver_code() else {
        return error;
    };
    let reason = match code {
        DriverCode::STREAM_CAPTURE_INVALIDATED => {
            "the driver invalidated it: a call made during it could not be captured (a \
             synchronisation or query of a capturing stream, or a call the capture mode \
             forbids), and failed with its own error then"
        }
        DriverCode::STREAM_CAPTURE_UNJOINED => {
            "work forked into another stream (through an event recorded in the capture) was \
             not joined back: make the capturing stream wait on an event recorded after it"
        }
        DriverCode::STREAM_CAPTURE_UNMATCHED | DriverCode::ILLEGAL_STATE => {
            "the stream was not capturing"
        }
        DriverCode::STREAM_CAPTURE_WRONG_THREAD => {
            "a global or thread-local capture must be ended by the thread that began it"
        }
        _ => return error,
    };
    Error::Capture {
        reason: format!("{reason} ({during}: {error})"),
    }
}

impl Stream {
    /// Runs `f` on a driver thread when the stream reaches this point, as
    /// [`Stream::launch_host_func`] does, but `f` may run more than once: on a stream that
    /// captures (itself, or as a stream that joined a capture) it becomes a host node of the
    /// graph, run on each launch of it, as `cudaLaunchHostFunc` in a capture does.
    ///
    /// In a capture, the graph being captured takes `f` (as a CUDA user object, through
    /// `cuStreamGetCaptureInfo` and `cuGraphRetainUserObject`), so the graph, its clones and
    /// executable graphs keep it for as long as any of them can run it; it is dropped on a
    /// thread of the crate's once none can. Outside a capture it runs once and is dropped
    /// after, off the driver's thread.
    ///
    /// `f` must not call CUDA (the driver forbids it in host functions); a panic in `f` aborts
    /// the process. A capture that the driver has invalidated already refuses it with
    /// [`Error::Capture`].
    ///
    /// ```no_run
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use std::sync::Arc;
    /// use cuda_core::{CaptureMode, Device, GraphOptions, StreamOptions};
    ///
    /// let stream = Device::new(0)?.create_stream(StreamOptions::default())?;
    /// let steps = Arc::new(AtomicUsize::new(0));
    /// // SAFETY: the capture records no memory work.
    /// unsafe { stream.begin_capture(CaptureMode::ThreadLocal)? };
    /// let counted = steps.clone();
    /// stream.launch_host_func_repeatable(move || {
    ///     counted.fetch_add(1, Ordering::Relaxed);
    /// })?;
    /// let exec = stream.end_capture()?.instantiate(GraphOptions::default())?;
    /// exec.launch(&stream)?;
    /// exec.launch(&stream)?;
    /// stream.sync()?;
    /// assert_eq!(steps.load(Ordering::Relaxed), 2);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuLaunchHostFunc", "cudaLaunchHostFunc"))]
    pub fn launch_host_func_repeatable<F: Fn() + Send + Sync + 'static>(&self, f: F) -> Result<()> {
        if !self.capturing() {
            return self.launch_host_func(f);
        }
        // No capture ends between the question below and the launch: a host node whose closure
        // the capture's graph owns must not be queued as plain work on a stream whose capture
        // ended meanwhile (it would run after the graph, and its closure, are gone).
        let _steady = crate::lifetime::captures::steady();
        if !self.capturing() {
            return self.launch_host_func(f);
        }
        let graph = self
            .capture_query(|driver, handle| driver.stream_capture_graph(handle))?
            .ok_or_else(|| Error::Capture {
                reason: "the stream's capture is invalidated (or ended): a host function \
                         cannot join it"
                    .to_owned(),
            })?;
        let (boxed, (entry, data)) = super::keep::host_fn(f);
        let driver = self.context().driver();
        // The graph owns the closure from here on (released with the graph, its clones and
        // executable graphs), before the driver can run it.
        let mut keep = super::keep::Keep::default();
        keep.push(boxed);
        keep.flush(driver, graph)?;
        // `entry` reads `data` as the closure `host_fn` boxed, which the capturing graph keeps
        // alive for as long as any node made from this call can run.
        self.queue(|driver, handle| driver.launch_host_func(handle, entry, data))
    }
}

/// Capture ids with the memory resources of revocable access (a pinned pool's host memory,
/// another device's memory) that work captured in them used, each with whether only copies
/// used it, and the stream that noted them first: a launch of the captured graph checks their
/// access again, as a graph built node by node does for its nodes' buffers (after a pool's
/// `set_access(&[])` the driver would fault on the graph's work rather than refuse it). An
/// entry whose stream is gone is forgotten (its capture ended with that stream's drop).
type Noted = Vec<(u64, WeakStream, Vec<Gated>)>;
static GATED: Mutex<Noted> = Mutex::new(Vec::new());

/// Whether `GATED` may hold anything: a capture's end asks for its id only then.
static GATED_ANY: AtomicBool = AtomicBool::new(false);

fn gated() -> std::sync::MutexGuard<'static, Noted> {
    GATED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes `resource` (whose access can be revoked; `copy`: used by a copy), used by work
/// queued on `stream`, for the capture `stream` is in, for the graph it ends in. Nothing where
/// the driver says it is in none.
#[cold]
#[inline(never)]
pub(crate) fn note_captured_gated(stream: &Stream, resource: &Arc<dyn MemoryResource>, copy: bool) {
    let Some(id) = stream.capture_now() else {
        return;
    };
    let mut noted = gated();
    noted.retain(|(_, noter, _)| noter.alive());
    let at = match noted.iter().position(|(capture, _, _)| *capture == id) {
        Some(at) => at,
        None => {
            noted.push((id, stream.downgrade(), Vec::new()));
            noted.len() - 1
        }
    };
    super::merge_gated(&mut noted[at].2, resource, copy);
    GATED_ANY.store(true, Ordering::Release);
}

/// Takes the resources noted for capture `id` (nothing where none were), once it has ended.
fn take_captured_gated(id: u64) -> Vec<Gated> {
    let mut noted = gated();
    let taken = match noted.iter().position(|(capture, _, _)| *capture == id) {
        Some(at) => noted.swap_remove(at).2,
        None => Vec::new(),
    };
    if noted.is_empty() {
        GATED_ANY.store(false, Ordering::Release);
    }
    taken
}
