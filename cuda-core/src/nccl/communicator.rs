//! [`Communicator`]: one rank of an NCCL communicator, on one device, and how it is made
//! ([`CommConfig`]), split, waited for, aborted and finalized. The collectives are in
//! `collective.rs`; the calls' serialisation and a thread's open group are here, since every
//! call on a communicator goes through them.

use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use super::unique_id::UniqueId;
use crate::context::Context;
use crate::device::Device;
use crate::driver::nccl::{nccl, CommHandle, ConfigSpec, Nccl, Progress, SPLIT_NO_COLOR};
use crate::error::{Error, Result};
use crate::stream::Stream;

/// How to make a communicator ([`Communicator::init_rank_with`], [`Communicator::split_with`]):
/// `ncclConfig_t`'s fields this crate sets. `None` leaves a field to NCCL (its default, or its
/// `NCCL_*` environment variable).
///
/// ```
/// use std::time::Duration;
/// use cuda_core::nccl::CommConfig;
///
/// let config = CommConfig::default()
///     .with_blocking(false)
///     .with_timeout(Duration::from_secs(30))
///     .with_comm_name("gradients");
/// assert!(!config.blocking);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommConfig {
    /// Whether making the communicator, and each call on it, returns only once NCCL is done
    /// with it (`true`, the default), or at once while NCCL goes on in its own threads
    /// (`blocking = 0`): then [`Communicator::wait_ready`] waits for the communicator with a
    /// deadline, so that a rank that never joins is an error rather than a hang.
    pub blocking: bool,
    /// On a non-blocking communicator, how long a call waits for NCCL to finish it before the
    /// communicator is aborted and the call returns [`Error::Timeout`]; `None` (the default):
    /// as long as it takes. A call NCCL has not finished would queue its work later, after
    /// the buffers it names may be gone: aborting is what ends it.
    pub timeout: Option<Duration>,
    /// `cgaClusterSize`: the thread-block cluster size of NCCL's kernels (Hopper and newer).
    pub cga_cluster_size: Option<u32>,
    /// `minCTAs`: the fewest thread blocks NCCL's kernels use.
    pub min_ctas: Option<u32>,
    /// `maxCTAs`: the most thread blocks NCCL's kernels use.
    pub max_ctas: Option<u32>,
    /// `netName`: the network plugin to use (`"IB"`, `"Socket"`).
    pub net_name: Option<String>,
    /// `commName`: a name for NCCL's logs.
    pub comm_name: Option<String>,
    /// `splitShare`: whether communicators split from this one share its resources.
    pub split_share: Option<bool>,
}

impl Default for CommConfig {
    fn default() -> Self {
        CommConfig {
            blocking: true,
            timeout: None,
            cga_cluster_size: None,
            min_ctas: None,
            max_ctas: None,
            net_name: None,
            comm_name: None,
            split_share: None,
        }
    }
}

crate::options::chainers!(CommConfig {
    with_blocking(blocking: bool);
    with_timeout(timeout: Duration) => some;
    with_cga_cluster_size(cga_cluster_size: u32) => some;
    with_min_ctas(min_ctas: u32) => some;
    with_max_ctas(max_ctas: u32) => some;
    with_net_name(net_name: impl Into<String>) => some;
    with_comm_name(comm_name: impl Into<String>) => some;
    with_split_share(split_share: bool) => some;
});

/// A [`CommConfig`]'s strings as C strings, kept while NCCL reads them.
#[derive(Debug)]
struct ConfigStrings {
    net_name: Option<CString>,
    comm_name: Option<CString>,
}

impl CommConfig {
    fn strings(&self) -> Result<ConfigStrings> {
        let text = |value: &Option<String>, field: &str| -> Result<Option<CString>> {
            value
                .as_deref()
                .map(|text| {
                    CString::new(text).map_err(|_| Error::InvalidArgument {
                        name: "config",
                        reason: format!("its {field} {text:?} holds a NUL byte"),
                    })
                })
                .transpose()
        };
        Ok(ConfigStrings {
            net_name: text(&self.net_name, "net_name")?,
            comm_name: text(&self.comm_name, "comm_name")?,
        })
    }

    /// The neutral form, borrowing `strings`; counts past `i32::MAX` refused.
    fn spec<'a>(&self, strings: &'a ConfigStrings) -> Result<ConfigSpec<'a>> {
        let count = |value: Option<u32>, field: &str| -> Result<Option<i32>> {
            value
                .map(|v| {
                    i32::try_from(v).map_err(|_| Error::InvalidArgument {
                        name: "config",
                        reason: format!("its {field} {v} is more than NCCL's int holds"),
                    })
                })
                .transpose()
        };
        Ok(ConfigSpec {
            blocking: self.blocking,
            cga_cluster_size: count(self.cga_cluster_size, "cga_cluster_size")?,
            min_ctas: count(self.min_ctas, "min_ctas")?,
            max_ctas: count(self.max_ctas, "max_ctas")?,
            net_name: strings.net_name.as_deref(),
            comm_name: strings.comm_name.as_deref(),
            split_share: self.split_share,
        })
    }
}

thread_local! {
    /// Whether this thread is inside [`group`](super::group) (NCCL's groups are per thread).
    static GROUP_OPEN: Cell<bool> = const { Cell::new(false) };
    /// What was dropped while this thread's group was open, to be done at its end: a
    /// communicator's destruction, a registration's or an operation's release.
    static DEFERRED: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

/// Whether a group is open on this thread.
pub(crate) fn group_open() -> bool {
    GROUP_OPEN.with(Cell::get)
}

pub(crate) fn set_group_open(open: bool) {
    GROUP_OPEN.with(|cell| cell.set(open));
}

/// Runs `f` now, or, inside a group on this thread, at the group's end: a call NCCL would put
/// in the group, or one on a communicator the group holds.
pub(crate) fn now_or_after_group(f: impl FnOnce() + 'static) {
    if group_open() {
        DEFERRED.with(|deferred| deferred.borrow_mut().push(Box::new(f)));
    } else {
        f();
    }
}

/// Runs what was put off while the group was open (the group has ended).
pub(crate) fn run_deferred() {
    loop {
        let next = DEFERRED.with(|deferred| {
            let mut deferred = deferred.borrow_mut();
            (!deferred.is_empty()).then(|| deferred.remove(0))
        });
        match next {
            Some(f) => f(),
            None => return,
        }
    }
}

/// Refuses `what` inside a group on this thread: NCCL would defer it to the group's end,
/// while this crate would use its result now.
pub(crate) fn refuse_in_group(what: &'static str) -> Result<()> {
    if !group_open() {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        name: "self",
        reason: format!(
            "{what} inside nccl::group: NCCL would put it off to the group's end; queue \
             collectives through the Group, and make, split or finalize communicators outside it"
        ),
    })
}

/// One rank of an NCCL communicator (`ncclComm_t`), on one device: what the collectives
/// (`all_reduce`, `broadcast`, `reduce`, `all_gather`, `reduce_scatter`) and the point-to-point
/// calls (`send`, `recv`) are called on, with a [`Stream`] of its device.
///
/// Made by [`Communicator::init_rank`] (each rank in its own process or thread, meeting by a
/// [`UniqueId`]), [`Communicator::init_all`] (one rank per device, in this process) or
/// [`Communicator::split`]. It keeps its device's primary context alive.
///
/// NCCL takes one call on a communicator at a time: the communicator is `Send` and `Sync`, and
/// serialises its calls itself (a [`group`](super::group) holds the communicators it queues on
/// until its end). Dropping it destroys it (`ncclCommDestroy`) after the work it queued, and
/// NCCL's destruction waits for the other ranks' as well; a communicator whose work failed (an
/// error that [`Communicator::wait`] or a call reported) is aborted instead, which does not
/// wait. [`Communicator::finalize`] reports what dropping would only log, and
/// [`Communicator::abort`] leaves at once.
#[doc(alias = "ncclComm_t")]
pub struct Communicator {
    pub(crate) inner: Arc<CommInner>,
}

/// A communicator's state, shared with what must outlive its calls (its custom operations, its
/// registrations) and destroyed with the last of them.
pub(crate) struct CommInner {
    /// Held across each NCCL call on the communicator, and by a group until its end.
    calls: Mutex<Calls>,
    /// The handle; `None` once aborted or finalized. Read alone for `ncclCommGetAsyncError`
    /// (which NCCL allows during another call); written only with `calls` held, together
    /// with the copy [`Calls`] keeps for the calls made under it.
    handle: RwLock<Option<CommHandle>>,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) device: Device,
    /// The device's primary context, kept alive (NCCL's work runs in it).
    pub(crate) context: Context,
    /// Made here (destroyed on drop), rather than wrapped by `from_raw`.
    owned: bool,
    /// Made non-blocking: its calls may return before NCCL is done with them.
    blocking: bool,
    /// [`CommConfig::timeout`].
    timeout: Option<Duration>,
}

/// What the calls lock guards.
pub(crate) struct Calls {
    /// A call returned before NCCL was done with it (a non-blocking initialisation): the next
    /// call asks NCCL first.
    in_progress: bool,
    /// The handle as [`CommInner`]'s `handle` holds it (both are written under this lock):
    /// a call, which holds this lock, reads it here without taking the read lock.
    handle: Option<CommHandle>,
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("rank", &self.inner.rank)
            .field("size", &self.inner.size)
            .field("device", &self.inner.device.ordinal())
            .finish_non_exhaustive()
    }
}

/// Checks a rank and a count of ranks before NCCL, as its `int`s.
fn ranks(size: usize, rank: usize) -> Result<(i32, i32)> {
    let nranks =
        i32::try_from(size)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::InvalidArgument {
                name: "size",
                reason: format!("{size} ranks: a communicator has 1 to {} ranks", i32::MAX),
            })?;
    if rank >= size {
        return Err(Error::InvalidArgument {
            name: "rank",
            reason: format!(
                "rank {rank} of a communicator of {size} ranks (0 to {})",
                size - 1
            ),
        });
    }
    Ok((nranks, rank as i32))
}

impl CommInner {
    /// The calls lock (a panic while it was held leaves nothing half-done on the host side).
    pub(crate) fn lock(&self) -> MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn handle(&self) -> Option<CommHandle> {
        *self.handle.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The handle for a call made under `calls`: refused once aborted or finalized, and while
    /// NCCL is still busy with a call that returned early.
    pub(crate) fn live(&self, calls: &mut Calls, nccl: &Nccl) -> Result<CommHandle> {
        let handle = calls.handle.ok_or_else(|| Error::InvalidArgument {
            name: "self",
            reason: "the communicator was aborted (by a call that timed out, or a group's)"
                .to_owned(),
        })?;
        if calls.in_progress {
            match nccl.comm_async_error(handle)? {
                Progress::Done => calls.in_progress = false,
                Progress::InProgress => {
                    return Err(Error::Nccl {
                        call: "ncclCommGetAsyncError",
                        code: 7,
                        name: crate::driver::nccl::result_name(7),
                        message: "the communicator is still being made (it is \
                                  non-blocking): wait for it with Communicator::wait_ready"
                            .to_owned(),
                    })
                }
            }
        }
        Ok(handle)
    }

    /// After `call` returned `progress`: on a non-blocking communicator still busy with it,
    /// waits for NCCL to finish (within [`CommConfig::timeout`]; past it, aborts the
    /// communicator: see there).
    pub(crate) fn settle(
        &self,
        calls: &mut Calls,
        nccl: &Nccl,
        handle: CommHandle,
        progress: Progress,
    ) -> Result<()> {
        if progress == Progress::Done {
            return Ok(());
        }
        match poll(nccl, handle, self.timeout) {
            Ok(true) => Ok(()),
            Ok(false) => {
                let after = self.timeout.unwrap_or(Duration::MAX);
                if let Err(e) = self.abort_locked(calls, nccl) {
                    log::error!("aborting a communicator whose call timed out: {e}");
                }
                Err(Error::Timeout {
                    what: "NCCL's call on a non-blocking communicator (which was aborted)",
                    after,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// `ncclCommAbort`, under `calls`.
    pub(crate) fn abort_locked(&self, calls: &mut Calls, nccl: &Nccl) -> Result<()> {
        calls.handle = None;
        let taken = self
            .handle
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match taken {
            Some(handle) => self.context.with_current(|_| nccl.comm_abort(handle)),
            None => Ok(()),
        }
    }

    /// How long a group waits for this communicator after its end.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

/// Asks NCCL until the communicator's call is done (`true`), it failed (the error), or
/// `timeout` has passed (`false`).
pub(crate) fn poll(nccl: &Nccl, handle: CommHandle, timeout: Option<Duration>) -> Result<bool> {
    let limit = timeout.unwrap_or(Duration::MAX);
    match crate::wait::until("NCCL's call", limit, || {
        Ok(nccl.comm_async_error(handle)? == Progress::Done)
    }) {
        Ok(()) => Ok(true),
        Err(Error::Timeout { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

impl Drop for CommInner {
    fn drop(&mut self) {
        let Some(handle) = self
            .handle
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if !self.owned {
            return;
        }
        let busy = self
            .calls
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .in_progress;
        let context = self.context.clone();
        now_or_after_group(move || {
            let Ok(nccl) = nccl() else { return };
            // Destroying waits for the communicator's work, and for the other ranks: that of a
            // communicator whose work failed (or is still being made) never ends.
            let healthy = !busy && matches!(nccl.comm_async_error(handle), Ok(Progress::Done));
            let result = context.with_current(|_| {
                if healthy {
                    nccl.comm_destroy(handle)
                } else {
                    nccl.comm_abort(handle)
                }
            });
            if let Err(e) = result {
                log::error!("destroying an NCCL communicator: {e}");
            }
        });
    }
}

impl Communicator {
    fn adopt(
        handle: CommHandle,
        rank: usize,
        size: usize,
        device: Device,
        context: Context,
        in_progress: bool,
        config: (bool, Option<Duration>),
    ) -> Communicator {
        Communicator {
            inner: Arc::new(CommInner {
                calls: Mutex::new(Calls {
                    in_progress,
                    handle: Some(handle),
                }),
                handle: RwLock::new(Some(handle)),
                rank,
                size,
                device,
                context,
                owned: true,
                blocking: config.0,
                timeout: config.1,
            }),
        }
    }

    /// Joins the communicator of `size` ranks that `id` names, as rank `rank`, on `device`
    /// (`ncclCommInitRank`, with the device's primary context current): every rank calls it
    /// with the same id and size, each with its own rank, in its own process or thread. It
    /// returns once every rank has joined (a rank that never does leaves it waiting: use a
    /// non-blocking [`init_rank_with`](Communicator::init_rank_with) and
    /// [`wait_ready`](Communicator::wait_ready) for a deadline).
    ///
    /// `size` and `rank` are checked before NCCL. NCCL refuses two ranks of one communicator
    /// on one device.
    #[doc(alias = "ncclCommInitRank")]
    pub fn init_rank(
        id: &UniqueId,
        size: usize,
        rank: usize,
        device: Device,
    ) -> Result<Communicator> {
        Communicator::init(id, size, rank, device, None)
    }

    /// [`init_rank`](Communicator::init_rank) with a configuration (`ncclCommInitRankConfig`).
    /// A non-blocking one (`config.blocking` false) returns at once, while NCCL goes on joining:
    /// [`wait_ready`](Communicator::wait_ready) waits for it with a deadline, and the calls
    /// made before it is ready are refused.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::{nccl::{CommConfig, Communicator, UniqueId}, Device};
    ///
    /// # fn id_from_rank_0() -> UniqueId { unimplemented!() }
    /// let id = id_from_rank_0();
    /// let config = CommConfig::default().with_blocking(false);
    /// let comm = Communicator::init_rank_with(&id, 2, 1, Device::new(1)?, &config)?;
    /// if let Err(e) = comm.wait_ready(Duration::from_secs(60)) {
    ///     comm.abort()?; // rank 0 never came
    ///     return Err(e);
    /// }
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "ncclCommInitRankConfig")]
    pub fn init_rank_with(
        id: &UniqueId,
        size: usize,
        rank: usize,
        device: Device,
        config: &CommConfig,
    ) -> Result<Communicator> {
        Communicator::init(id, size, rank, device, Some(config))
    }

    fn init(
        id: &UniqueId,
        size: usize,
        rank: usize,
        device: Device,
        config: Option<&CommConfig>,
    ) -> Result<Communicator> {
        refuse_in_group("making a communicator")?;
        let (nranks, rank_code) = ranks(size, rank)?;
        let strings = config.map(CommConfig::strings).transpose()?;
        let spec = match (config, &strings) {
            (Some(config), Some(strings)) => Some(config.spec(strings)?),
            _ => None,
        };
        let nccl = nccl()?;
        let context = device.primary_context()?;
        let (handle, progress) = context.with_current(|_| match spec {
            None => nccl
                .comm_init_rank(nranks, id.as_bytes(), rank_code)
                .map(|handle| (handle, Progress::Done)),
            Some(spec) => nccl.comm_init_rank_config(nranks, id.as_bytes(), rank_code, spec),
        })?;
        let settings = config.map_or((true, None), |c| (c.blocking, c.timeout));
        Ok(Communicator::adopt(
            handle,
            rank,
            size,
            device,
            context,
            progress == Progress::InProgress,
            settings,
        ))
    }

    /// One communicator over `devices`, made in this process (`ncclCommInitAll`): rank `i` on
    /// `devices[i]`. Each device may appear once (checked before NCCL: NCCL does not take two
    /// ranks on one device).
    #[doc(alias = "ncclCommInitAll")]
    pub fn init_all(devices: &[Device]) -> Result<Vec<Communicator>> {
        refuse_in_group("making communicators")?;
        if devices.is_empty() {
            return Err(Error::InvalidArgument {
                name: "devices",
                reason: "no devices: a communicator has at least one rank".to_owned(),
            });
        }
        for (i, device) in devices.iter().enumerate() {
            if devices[..i].contains(device) {
                return Err(Error::InvalidArgument {
                    name: "devices",
                    reason: format!(
                        "device {} appears twice: NCCL takes one rank per device",
                        device.ordinal()
                    ),
                });
            }
        }
        let ordinals = devices
            .iter()
            .map(|d| {
                i32::try_from(d.ordinal()).map_err(|_| Error::InvalidArgument {
                    name: "devices",
                    reason: format!("device {} is past NCCL's int", d.ordinal()),
                })
            })
            .collect::<Result<Vec<i32>>>()?;
        let nccl = nccl()?;
        let contexts = devices
            .iter()
            .map(|d| d.primary_context())
            .collect::<Result<Vec<Context>>>()?;
        // NCCL makes each device current in turn and then restores the one it found: with the
        // first device's context pushed, the caller's is what remains after.
        let handles = contexts[0].with_current(|_| nccl.comm_init_all(&ordinals))?;
        Ok(handles
            .into_iter()
            .zip(contexts)
            .zip(devices)
            .enumerate()
            .map(|(rank, ((handle, context), &device))| {
                Communicator::adopt(
                    handle,
                    rank,
                    devices.len(),
                    device,
                    context,
                    false,
                    (true, None),
                )
            })
            .collect())
    }

    /// Wraps a communicator made elsewhere (a framework's), without owning it: dropping the
    /// value leaves it alive, and [`abort`](Communicator::abort) and
    /// [`finalize`](Communicator::finalize) are refused. Its rank, size and device are asked of
    /// NCCL once.
    ///
    /// # Safety
    ///
    /// `handle` is a live communicator made by the same NCCL library this crate loaded (see
    /// [`library_path`](super::library_path)), ready (not being made), that stays alive while
    /// this value and anything made from it (custom operations, registrations, split
    /// communicators) live, and on which no one else calls NCCL while this value does.
    pub unsafe fn from_raw(handle: *mut std::ffi::c_void) -> Result<Communicator> {
        refuse_in_group("wrapping a communicator")?;
        let nccl = nccl()?;
        let handle = CommHandle(handle);
        let rank = nccl.comm_user_rank(handle)?;
        let size = nccl.comm_count(handle)?;
        let ordinal = nccl.comm_cu_device(handle)?;
        let device =
            Device::new(
                usize::try_from(ordinal).map_err(|_| Error::InvalidArgument {
                    name: "handle",
                    reason: format!("NCCL says its device is {ordinal}"),
                })?,
            )?;
        let mut communicator = Communicator::adopt(
            handle,
            rank as usize,
            size as usize,
            device,
            device.primary_context()?,
            false,
            (true, None),
        );
        if let Some(inner) = Arc::get_mut(&mut communicator.inner) {
            inner.owned = false;
        }
        Ok(communicator)
    }

    /// The raw `ncclComm_t`, for calling NCCL directly (null once aborted); valid while this
    /// value lives. Calls made through it are not serialised with this value's.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.inner.handle().map_or(std::ptr::null_mut(), |h| h.0)
    }

    /// This rank's number, from 0 (`ncclCommUserRank`).
    #[doc(alias = "ncclCommUserRank")]
    pub fn rank(&self) -> usize {
        self.inner.rank
    }

    /// How many ranks the communicator has (`ncclCommCount`).
    #[doc(alias = "ncclCommCount")]
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// The device this rank works on (`ncclCommCuDevice`).
    #[doc(alias = "ncclCommCuDevice")]
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether the communicator was made blocking (see [`CommConfig::blocking`]).
    pub fn is_blocking(&self) -> bool {
        self.inner.blocking
    }

    /// NCCL's state of the communicator (`ncclCommGetAsyncError`): `Ok` while it is healthy
    /// (or still being made), the error where its work failed after its call returned (a peer
    /// that left or failed is `ncclRemoteError`). Safe to call while another thread is inside
    /// a call on the communicator, or a group holds it.
    #[doc(alias = "ncclCommGetAsyncError")]
    pub fn check_async_error(&self) -> Result<()> {
        self.state().map(|_| ())
    }

    fn state(&self) -> Result<Progress> {
        let nccl = nccl()?;
        let guard = self.inner.handle.read().unwrap_or_else(|e| e.into_inner());
        let handle = guard.ok_or_else(|| Error::InvalidArgument {
            name: "self",
            reason: "the communicator was aborted".to_owned(),
        })?;
        nccl.comm_async_error(handle)
    }

    /// Whether the communicator is made and ready for calls (a non-blocking one may still be
    /// joining); its failure to join is the error.
    pub fn is_ready(&self) -> Result<bool> {
        Ok(self.state()? == Progress::Done)
    }

    /// Waits for the communicator to be ready (a non-blocking one joining its peers), asking
    /// NCCL until it is, it failed (its error), or `timeout` has passed ([`Error::Timeout`]:
    /// it goes on joining; [`abort`](Communicator::abort) it to give up).
    pub fn wait_ready(&self, timeout: Duration) -> Result<()> {
        crate::wait::until("the communicator's making", timeout, || self.is_ready())
    }

    /// Waits for the work queued on `stream` so far (this communicator's collectives among
    /// it), for at most `timeout`, asking both the stream (`cuStreamQuery`) and NCCL
    /// (`ncclCommGetAsyncError`) until the work is done, NCCL reports an error (a peer that
    /// failed or left: `ncclRemoteError`, a network error), or the time is up
    /// ([`Error::Timeout`]). A peer that dies leaves this rank's kernels waiting for its data:
    /// this ends in NCCL's error where NCCL notices, and in the timeout where it does not; the
    /// work stays queued in both cases, and [`abort`](Communicator::abort) ends it (the
    /// buffers it uses are freed after it, in their stream order, either way).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::nccl::{Communicator, ReduceOp};
    /// use cuda_core::{Buffer, Stream};
    ///
    /// fn step(comm: Communicator, grads: &mut Buffer, stream: &Stream) -> cuda_core::Result<Communicator> {
    ///     comm.all_reduce_in_place::<f32>(grads, ReduceOp::Avg, stream)?;
    ///     if let Err(e) = comm.wait(stream, Duration::from_secs(60)) {
    ///         comm.abort()?; // a rank failed or hangs: leave, and start again without it
    ///         return Err(e);
    ///     }
    ///     Ok(comm)
    /// }
    /// ```
    pub fn wait(&self, stream: &Stream, timeout: Duration) -> Result<()> {
        crate::wait::until("the stream's work with the communicator", timeout, || {
            let done = stream.is_done()?;
            self.check_async_error()?;
            Ok(done)
        })
    }

    /// Splits the communicator (`ncclCommSplit`): every rank calls it; those of one `color`
    /// make one new communicator, ranked by `key` (then by their rank here); a rank of color
    /// `None` joins none and gets `None`. The new communicator inherits this one's
    /// configuration; a non-blocking one is waited for (within its timeout).
    #[doc(alias = "ncclCommSplit")]
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<Communicator>> {
        self.split_inner(color, key, None)
    }

    /// [`split`](Communicator::split) with a configuration of its own for the new
    /// communicator.
    pub fn split_with(
        &self,
        color: Option<u32>,
        key: i32,
        config: &CommConfig,
    ) -> Result<Option<Communicator>> {
        self.split_inner(color, key, Some(config))
    }

    fn split_inner(
        &self,
        color: Option<u32>,
        key: i32,
        config: Option<&CommConfig>,
    ) -> Result<Option<Communicator>> {
        refuse_in_group("splitting a communicator")?;
        let color_code = match color {
            None => SPLIT_NO_COLOR,
            Some(color) => i32::try_from(color).map_err(|_| Error::InvalidArgument {
                name: "color",
                reason: format!("{color} is past NCCL's colors (0 to {})", i32::MAX),
            })?,
        };
        let strings = config.map(CommConfig::strings).transpose()?;
        let spec = match (config, &strings) {
            (Some(config), Some(strings)) => Some(config.spec(strings)?),
            _ => None,
        };
        let settings = config.map_or((self.inner.blocking, self.inner.timeout), |c| {
            (c.blocking, c.timeout)
        });
        let nccl = nccl()?;
        let mut calls = self.inner.lock();
        let handle = self.inner.live(&mut calls, nccl)?;
        let (new, progress) = self
            .inner
            .context
            .with_current(|_| nccl.comm_split(handle, color_code, key, spec))?;
        let Some(new) = new else {
            self.inner.settle(&mut calls, nccl, handle, progress)?;
            return Ok(None);
        };
        let made = (|| {
            if progress == Progress::InProgress && !poll(nccl, new, settings.1)? {
                return Err(Error::Timeout {
                    what: "the split communicator's making (it was aborted)",
                    after: settings.1.unwrap_or(Duration::MAX),
                });
            }
            let rank = nccl.comm_user_rank(new)?;
            let size = nccl.comm_count(new)?;
            Ok((rank as usize, size as usize))
        })();
        match made {
            Ok((rank, size)) => Ok(Some(Communicator::adopt(
                new,
                rank,
                size,
                self.inner.device,
                self.inner.context.clone(),
                false,
                settings,
            ))),
            Err(e) => {
                if let Err(abort) = self.inner.context.with_current(|_| nccl.comm_abort(new)) {
                    log::error!("aborting a split communicator that failed: {abort}");
                }
                Err(e)
            }
        }
    }

    /// Leaves at once (`ncclCommAbort`): the communicator's kernels still running end, its
    /// queued work is dropped, and the other ranks' calls with it fail. Its custom operations
    /// and registrations go with it. Inside a [`group`](super::group), it is aborted at the
    /// group's end.
    #[doc(alias = "ncclCommAbort")]
    pub fn abort(self) -> Result<()> {
        self.owned("abort")?;
        let inner = Arc::clone(&self.inner);
        if group_open() {
            now_or_after_group(move || {
                if let Ok(nccl) = nccl() {
                    let mut calls = inner.lock();
                    if let Err(e) = inner.abort_locked(&mut calls, nccl) {
                        log::error!("aborting an NCCL communicator at its group's end: {e}");
                    }
                }
            });
            return Ok(());
        }
        let nccl = nccl()?;
        let mut calls = inner.lock();
        inner.abort_locked(&mut calls, nccl)
    }

    /// Ends the communicator after its work (`ncclCommFinalize`, then `ncclCommDestroy`),
    /// reporting what dropping it would only log. NCCL's finalization waits for the work this
    /// rank queued and for the other ranks' finalization. Refused inside a group.
    #[doc(alias("ncclCommFinalize", "ncclCommDestroy"))]
    pub fn finalize(self) -> Result<()> {
        self.owned("finalize")?;
        refuse_in_group("finalizing a communicator")?;
        let nccl = nccl()?;
        let inner = &self.inner;
        let mut calls = inner.lock();
        let handle = inner.live(&mut calls, nccl)?;
        let progress = inner.context.with_current(|_| nccl.comm_finalize(handle))?;
        inner.settle(&mut calls, nccl, handle, progress)?;
        calls.handle = None;
        let taken = inner
            .handle
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match taken {
            Some(handle) => inner.context.with_current(|_| nccl.comm_destroy(handle)),
            None => Ok(()),
        }
    }

    fn owned(&self, what: &str) -> Result<()> {
        if self.inner.owned {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            name: "self",
            reason: format!(
                "it wraps a communicator made elsewhere (from_raw), which its maker must {what}"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_sizes_are_checked_before_nccl() {
        assert_eq!(ranks(4, 3).unwrap(), (4, 3));
        for (size, rank, name) in [
            (0, 0, "size"),
            (usize::MAX, 0, "size"),
            (2, 2, "rank"),
            (1, 5, "rank"),
        ] {
            let e = ranks(size, rank).unwrap_err();
            assert!(
                matches!(e, Error::InvalidArgument { name: n, .. } if n == name),
                "{e}"
            );
        }
    }

    #[test]
    fn configurations_refuse_what_nccl_cannot_take() {
        let strings = CommConfig::default().with_net_name("IB").strings().unwrap();
        let spec = CommConfig::default()
            .with_max_ctas(16)
            .spec(&strings)
            .unwrap();
        assert_eq!(spec.max_ctas, Some(16));
        assert_eq!(spec.net_name, Some(c"IB"));
        assert!(spec.blocking);
        let e = CommConfig::default()
            .with_comm_name("a\0b")
            .strings()
            .unwrap_err();
        assert!(e.to_string().contains("comm_name"), "{e}");
        let e = CommConfig::default()
            .with_min_ctas(u32::MAX)
            .spec(&strings)
            .unwrap_err();
        assert!(e.to_string().contains("min_ctas"), "{e}");
    }

    #[test]
    fn what_is_dropped_in_a_group_waits_for_its_end() {
        use std::rc::Rc;
        let done = Rc::new(Cell::new(0));
        let seen = Rc::clone(&done);
        now_or_after_group(move || seen.set(seen.get() + 1));
        assert_eq!(done.get(), 1, "outside a group: at once");
        set_group_open(true);
        let seen = Rc::clone(&done);
        now_or_after_group(move || seen.set(seen.get() + 10));
        assert!(refuse_in_group("splitting a communicator").is_err());
        assert_eq!(done.get(), 1, "inside a group: later");
        set_group_open(false);
        run_deferred();
        assert_eq!(done.get(), 11);
        assert!(refuse_in_group("splitting a communicator").is_ok());
    }
}
