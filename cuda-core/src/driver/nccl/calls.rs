//! Each call the `nccl` module makes, in neutral types, through `nccl_call!`: the
//! communicator's life, its queries, registrations and custom operations, the group, and every
//! collective and point-to-point call through one [`Nccl::collective`] taking a
//! [`CollectiveSpec`].

use std::ffi::{c_void, CStr};

use super::generated::{
    self, ncclComm_t, ncclConfig_t, ncclDataType_t, ncclRedOp_t, ncclResult_t,
    ncclScalarResidence_t, ncclUniqueId,
};
use super::{result_name, CommHandle, Nccl, Progress, RegistrationHandle, UNIQUE_ID_BYTES};
use crate::driver::StreamHandle;
use crate::error::{Error, Result};

/// `NCCL_CONFIG_UNDEF_INT` (`INT_MIN` in `nccl.h`, which bindgen cannot read): a field of
/// `ncclConfig_t` left to NCCL.
const UNDEF: i32 = i32::MIN;

/// A communicator's configuration in neutral form (`ncclConfig_t`'s fields the `nccl` module
/// sets; `None` leaves one to NCCL).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConfigSpec<'a> {
    pub(crate) blocking: bool,
    pub(crate) cga_cluster_size: Option<i32>,
    pub(crate) min_ctas: Option<i32>,
    pub(crate) max_ctas: Option<i32>,
    pub(crate) net_name: Option<&'a CStr>,
    pub(crate) comm_name: Option<&'a CStr>,
    pub(crate) split_share: Option<bool>,
}

impl ConfigSpec<'_> {
    /// `NCCL_CONFIG_INITIALIZER` with this spec's fields set. The struct is the pinned
    /// header's: an older NCCL reads no more of it than its own size says (2.19 and newer
    /// compare `size` with theirs), and takes `version` to mean the fields it knows.
    fn to_raw(self) -> ncclConfig_t {
        let int = |value: Option<i32>| value.unwrap_or(UNDEF);
        let text = |value: Option<&CStr>| value.map_or(std::ptr::null(), CStr::as_ptr);
        ncclConfig_t {
            size: std::mem::size_of::<ncclConfig_t>(),
            magic: generated::NCCL_API_MAGIC,
            version: generated::NCCL_VERSION_CODE,
            blocking: i32::from(self.blocking),
            cgaClusterSize: int(self.cga_cluster_size),
            minCTAs: int(self.min_ctas),
            maxCTAs: int(self.max_ctas),
            netName: text(self.net_name),
            splitShare: int(self.split_share.map(i32::from)),
            trafficClass: UNDEF,
            commName: text(self.comm_name),
            collnetEnable: UNDEF,
            CTAPolicy: UNDEF,
            shrinkShare: UNDEF,
            nvlsCTAs: UNDEF,
            nChannelsPerNetPeer: UNDEF,
            nvlinkCentricSched: UNDEF,
            graphUsageMode: UNDEF,
            numRmaCtx: UNDEF,
            maxP2pPeers: UNDEF,
            graphStreamOrdering: UNDEF,
            launchOrderImplicit: UNDEF,
            numRmaSig: UNDEF,
            rmaEagerInit: UNDEF,
            hostCftMode: UNDEF,
            nvlsHostMode: UNDEF,
        }
    }
}

/// What a collective or point-to-point call does: which NCCL function [`Nccl::collective`]
/// calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CollectiveKind {
    AllReduce,
    Broadcast,
    Reduce,
    AllGather,
    ReduceScatter,
    /// NCCL 2.28 and newer.
    AllToAll,
    /// NCCL 2.28 and newer.
    Gather,
    /// NCCL 2.28 and newer.
    Scatter,
    Send,
    Recv,
}

impl CollectiveKind {
    /// The NCCL function it calls.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "ncclAllReduce",
            CollectiveKind::Broadcast => "ncclBroadcast",
            CollectiveKind::Reduce => "ncclReduce",
            CollectiveKind::AllGather => "ncclAllGather",
            CollectiveKind::ReduceScatter => "ncclReduceScatter",
            CollectiveKind::AllToAll => "ncclAlltoAll",
            CollectiveKind::Gather => "ncclGather",
            CollectiveKind::Scatter => "ncclScatter",
            CollectiveKind::Send => "ncclSend",
            CollectiveKind::Recv => "ncclRecv",
        }
    }
}

/// A collective or point-to-point call in neutral form, as the `nccl` module checked it: the
/// arguments of the NCCL function `kind` names, those it does not take left at 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CollectiveSpec {
    pub(crate) kind: CollectiveKind,
    /// The sending buffer's device address (0: none, on a scatter's rank other than the root;
    /// unused by a receive).
    pub(crate) send: u64,
    /// The receiving buffer's device address (0: none, on a reduction's or a gather's rank other
    /// than the root; unused by a send).
    pub(crate) recv: u64,
    /// The count NCCL takes: per rank for all-gather (sent), reduce-scatter (received),
    /// all-to-all (each way), gather (sent) and scatter (received).
    pub(crate) count: usize,
    /// The `ncclDataType_t` code.
    pub(crate) data_type: i32,
    /// The `ncclRedOp_t` code, for the reductions.
    pub(crate) op: i32,
    /// The root, or the peer.
    pub(crate) rank: i32,
}

/// A device address as the pointer NCCL takes: an address of the device's, never dereferenced
/// on the host.
fn device_ptr(address: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(address as usize)
}

fn data_type(code: i32) -> ncclDataType_t {
    ncclDataType_t(code as u32)
}

fn red_op(code: i32) -> ncclRedOp_t {
    ncclRedOp_t(code as u32)
}

fn stream(handle: StreamHandle) -> generated::cudaStream_t {
    handle.0.cast()
}

fn raw_id(id: &[u8; UNIQUE_ID_BYTES]) -> ncclUniqueId {
    ncclUniqueId {
        internal: id.map(|b| b as std::ffi::c_char),
    }
}

impl Nccl {
    /// `ncclGetUniqueId`: a new unique id, whose maker is this process's bootstrap root.
    pub(crate) fn get_unique_id(&self) -> Result<[u8; UNIQUE_ID_BYTES]> {
        let mut id = ncclUniqueId {
            internal: [0; UNIQUE_ID_BYTES],
        };
        nccl_call!(self.ncclGetUniqueId(&mut id), None)?;
        Ok(id.internal.map(|b| b as u8))
    }

    /// `ncclCommInitRank`, with the device current.
    pub(crate) fn comm_init_rank(
        &self,
        nranks: i32,
        id: &[u8; UNIQUE_ID_BYTES],
        rank: i32,
    ) -> Result<CommHandle> {
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let status = nccl_call!(
            self.ncclCommInitRank(&mut comm, nranks, raw_id(id), rank),
            Some(CommHandle(comm.cast()))
        );
        let handle = CommHandle(comm.cast());
        self.after_init("ncclCommInitRank", status, handle)
            .map(|_| handle)
    }

    /// `ncclCommInitRankConfig`, with the device current: the handle, and whether its
    /// initialisation goes on (non-blocking). The configuration (and the strings it points to)
    /// is read during the call: NCCL copies what it keeps.
    pub(crate) fn comm_init_rank_config(
        &self,
        nranks: i32,
        id: &[u8; UNIQUE_ID_BYTES],
        rank: i32,
        config: ConfigSpec<'_>,
    ) -> Result<(CommHandle, Progress)> {
        let mut comm: ncclComm_t = std::ptr::null_mut();
        let mut raw = config.to_raw();
        let status = nccl_call!(
            self.ncclCommInitRankConfig(&mut comm, nranks, raw_id(id), rank, &mut raw),
            Some(CommHandle(comm.cast()))
        );
        let handle = CommHandle(comm.cast());
        self.after_init("ncclCommInitRankConfig", status, handle)
            .map(|progress| (handle, progress))
    }

    /// An initialisation's `status`: a failure aborts the communicator NCCL may have made (as
    /// NCCL's own examples do), so that nothing is left of it.
    fn after_init(
        &self,
        call: &'static str,
        status: Result<Progress>,
        handle: CommHandle,
    ) -> Result<Progress> {
        match status {
            Ok(progress) if !handle.0.is_null() => Ok(progress),
            Ok(_) => Err(Error::Nccl {
                call,
                code: 3,
                name: result_name(3),
                message: "NCCL reported success and made no communicator".to_owned(),
            }),
            Err(e) => {
                if !handle.0.is_null() {
                    if let Err(abort) = self.comm_abort(handle) {
                        log::warn!("aborting a communicator whose initialisation failed: {abort}");
                    }
                }
                Err(e)
            }
        }
    }

    /// `ncclCommInitAll`: one communicator per device ordinal, rank `i` on `devices[i]`.
    pub(crate) fn comm_init_all(&self, devices: &[i32]) -> Result<Vec<CommHandle>> {
        let count = i32::try_from(devices.len()).map_err(|_| Error::InvalidArgument {
            name: "devices",
            reason: format!("{} devices are more than NCCL counts", devices.len()),
        })?;
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        let status = nccl_call!(
            self.ncclCommInitAll(comms.as_mut_ptr(), count, devices.as_ptr()),
            None
        );
        let handles: Vec<CommHandle> = comms.into_iter().map(|c| CommHandle(c.cast())).collect();
        if let Err(e) = status {
            for handle in handles.iter().filter(|h| !h.0.is_null()) {
                if let Err(abort) = self.comm_abort(*handle) {
                    log::warn!("aborting a communicator whose initialisation failed: {abort}");
                }
            }
            return Err(e);
        }
        Ok(handles)
    }

    /// `ncclCommSplit`: the new communicator (`None` for a rank of no color) and whether its
    /// initialisation goes on. The configuration (`None`: inherit the parent's) is read
    /// during the call.
    pub(crate) fn comm_split(
        &self,
        comm: CommHandle,
        color: i32,
        key: i32,
        config: Option<ConfigSpec<'_>>,
    ) -> Result<(Option<CommHandle>, Progress)> {
        let mut new: ncclComm_t = std::ptr::null_mut();
        let mut raw = config.map(ConfigSpec::to_raw);
        let config = raw
            .as_mut()
            .map_or(std::ptr::null_mut(), |c| c as *mut ncclConfig_t);
        let progress = nccl_call!(
            self.ncclCommSplit(comm.raw(), color, key, &mut new, config),
            Some(comm)
        )?;
        Ok(((!new.is_null()).then_some(CommHandle(new.cast())), progress))
    }

    /// `ncclCommFinalize`.
    pub(crate) fn comm_finalize(&self, comm: CommHandle) -> Result<Progress> {
        nccl_call!(self.ncclCommFinalize(comm.raw()), Some(comm))
    }

    /// `ncclCommDestroy`: the handle is gone after it, whatever it returns.
    pub(crate) fn comm_destroy(&self, comm: CommHandle) -> Result<()> {
        nccl_call!(self.ncclCommDestroy(comm.raw()), None)?;
        Ok(())
    }

    /// `ncclCommAbort` of a communicator of this library (live, or whose initialisation
    /// failed): the handle is gone after it, whatever it returns.
    pub(crate) fn comm_abort(&self, comm: CommHandle) -> Result<()> {
        nccl_call!(self.ncclCommAbort(comm.raw()), None)?;
        Ok(())
    }

    /// `ncclCommGetAsyncError`: `Done` where the communicator is healthy and idle in NCCL's
    /// threads, `InProgress` where a non-blocking call goes on, the error where its work failed.
    /// NCCL allows it while another thread is inside a call on the communicator.
    pub(crate) fn comm_async_error(&self, comm: CommHandle) -> Result<Progress> {
        let mut state = ncclResult_t::ncclSuccess;
        nccl_call!(
            self.ncclCommGetAsyncError(comm.raw(), &mut state),
            Some(comm)
        )?;
        self.status("ncclCommGetAsyncError", state, Some(comm))
    }

    /// `ncclCommCount`.
    pub(crate) fn comm_count(&self, comm: CommHandle) -> Result<i32> {
        let mut value = 0;
        nccl_call!(self.ncclCommCount(comm.raw(), &mut value), Some(comm))?;
        Ok(value)
    }

    /// `ncclCommCuDevice`.
    pub(crate) fn comm_cu_device(&self, comm: CommHandle) -> Result<i32> {
        let mut value = 0;
        nccl_call!(self.ncclCommCuDevice(comm.raw(), &mut value), Some(comm))?;
        Ok(value)
    }

    /// `ncclCommUserRank`.
    pub(crate) fn comm_user_rank(&self, comm: CommHandle) -> Result<i32> {
        let mut value = 0;
        nccl_call!(self.ncclCommUserRank(comm.raw(), &mut value), Some(comm))?;
        Ok(value)
    }

    /// `ncclCommRegister` of `size` bytes at `address`: device memory of the communicator's
    /// device, which the caller keeps allocated until it deregisters.
    pub(crate) fn comm_register(
        &self,
        comm: CommHandle,
        address: u64,
        size: usize,
    ) -> Result<RegistrationHandle> {
        let mut handle = std::ptr::null_mut();
        nccl_call!(
            self.ncclCommRegister(comm.raw(), device_ptr(address), size, &mut handle),
            Some(comm)
        )?;
        Ok(RegistrationHandle(handle))
    }

    /// `ncclCommDeregister` of a handle `comm` gave, once.
    pub(crate) fn comm_deregister(
        &self,
        comm: CommHandle,
        handle: RegistrationHandle,
    ) -> Result<()> {
        nccl_call!(self.ncclCommDeregister(comm.raw(), handle.0), Some(comm))?;
        Ok(())
    }

    /// `ncclMemAlloc` of `size` bytes on the current device.
    pub(crate) fn mem_alloc(&self, size: usize) -> Result<u64> {
        let mut ptr = std::ptr::null_mut();
        nccl_call!(self.ncclMemAlloc(&mut ptr, size), None)?;
        Ok(ptr as u64)
    }

    /// `ncclMemFree` of an allocation of `ncclMemAlloc`, once, that no work uses any more (the
    /// caller's).
    pub(crate) fn mem_free(&self, address: u64) -> Result<()> {
        nccl_call!(self.ncclMemFree(device_ptr(address)), None)?;
        Ok(())
    }

    /// `ncclRedOpCreatePreMulSum` with a scalar read before the call returns
    /// (`ncclScalarHostImmediate`): the new operation's code. The scalar is one value of the
    /// data type (the caller's).
    pub(crate) fn red_op_create_pre_mul_sum(
        &self,
        comm: CommHandle,
        scalar: &[u8],
        data_type_code: i32,
    ) -> Result<i32> {
        let mut op = ncclRedOp_t(0);
        nccl_call!(
            self.ncclRedOpCreatePreMulSum(
                &mut op,
                scalar.as_ptr().cast_mut().cast(),
                data_type(data_type_code),
                ncclScalarResidence_t::ncclScalarHostImmediate,
                comm.raw(),
            ),
            Some(comm)
        )?;
        Ok(op.0 as i32)
    }

    /// `ncclRedOpDestroy` of an operation this communicator made, once, after the last call
    /// given it returned.
    pub(crate) fn red_op_destroy(&self, op: i32, comm: CommHandle) -> Result<()> {
        nccl_call!(self.ncclRedOpDestroy(red_op(op), comm.raw()), Some(comm))?;
        Ok(())
    }

    /// The collective or point-to-point call `spec` names, on `comm`, queued on `on`.
    ///
    /// The caller's: `on` is a stream of the communicator's device, and each buffer of the
    /// spec is device memory of that device, kept in stream order on `on`, holding `count`
    /// values (per rank where the spec's `count` says so) of its data type; a null buffer only
    /// where the spec allows one, on a rank other than the root.
    pub(crate) fn collective(
        &self,
        spec: &CollectiveSpec,
        comm: CommHandle,
        on: StreamHandle,
    ) -> Result<Progress> {
        let (send, recv, n) = (device_ptr(spec.send), device_ptr(spec.recv), spec.count);
        let (t, op, rank) = (data_type(spec.data_type), red_op(spec.op), spec.rank);
        let (c, s) = (comm.raw(), stream(on));
        let comm = Some(comm);
        match spec.kind {
            CollectiveKind::AllReduce => {
                nccl_call!(self.ncclAllReduce(send, recv, n, t, op, c, s), comm)
            }
            CollectiveKind::Broadcast => {
                nccl_call!(self.ncclBroadcast(send, recv, n, t, rank, c, s), comm)
            }
            CollectiveKind::Reduce => {
                nccl_call!(self.ncclReduce(send, recv, n, t, op, rank, c, s), comm)
            }
            CollectiveKind::AllGather => {
                nccl_call!(self.ncclAllGather(send, recv, n, t, c, s), comm)
            }
            CollectiveKind::ReduceScatter => {
                nccl_call!(self.ncclReduceScatter(send, recv, n, t, op, c, s), comm)
            }
            CollectiveKind::AllToAll => {
                nccl_call!(self.ncclAlltoAll(send, recv, n, t, c, s), comm)
            }
            CollectiveKind::Gather => {
                nccl_call!(self.ncclGather(send, recv, n, t, rank, c, s), comm)
            }
            CollectiveKind::Scatter => {
                nccl_call!(self.ncclScatter(send, recv, n, t, rank, c, s), comm)
            }
            CollectiveKind::Send => nccl_call!(self.ncclSend(send, n, t, rank, c, s), comm),
            CollectiveKind::Recv => nccl_call!(self.ncclRecv(recv, n, t, rank, c, s), comm),
        }
    }

    /// `ncclGroupStart`: opens the calling thread's group.
    pub(crate) fn group_start(&self) -> Result<()> {
        nccl_call!(self.ncclGroupStart(), None)?;
        Ok(())
    }

    /// `ncclGroupEnd`: ends the calling thread's group.
    pub(crate) fn group_end(&self) -> Result<Progress> {
        nccl_call!(self.ncclGroupEnd(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_initialiser_is_the_headers() {
        let raw = ConfigSpec::default().to_raw();
        assert_eq!(raw.size, std::mem::size_of::<ncclConfig_t>());
        assert_eq!(raw.magic, 0xcafe_beef);
        assert_eq!(raw.version, 23203);
        // INT_MIN is NCCL_CONFIG_UNDEF_INT, as the header's own enums say.
        assert_eq!(UNDEF, generated::ncclHostCftMode_t::ncclHostCftDefault.0);
        assert_eq!(raw.cgaClusterSize, UNDEF);
        assert_eq!(raw.nvlsHostMode, UNDEF);
        assert_eq!(raw.blocking, 0);
        assert!(raw.netName.is_null() && raw.commName.is_null());
        let name = c"eth0";
        let set = ConfigSpec {
            blocking: true,
            cga_cluster_size: Some(2),
            max_ctas: Some(8),
            net_name: Some(name),
            split_share: Some(false),
            ..ConfigSpec::default()
        }
        .to_raw();
        assert_eq!((set.blocking, set.cgaClusterSize, set.maxCTAs), (1, 2, 8));
        assert_eq!((set.minCTAs, set.splitShare), (UNDEF, 0));
        assert_eq!(set.netName, name.as_ptr());
    }
}
