//! The version-neutral values that cross the seam: raw handles (the driver's pointers, owned by
//! the safe types above), and the few structures whose layout differs between the headers, held
//! here in a form both ABIs read.

use std::ffi::c_void;
use std::fmt;

macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub(crate) struct $name(pub(crate) *mut c_void);

        // SAFETY: driver handles are plain identifiers that the driver allows any thread to use.
        unsafe impl Send for $name {}
        // SAFETY: as above; the driver synchronises its own state.
        unsafe impl Sync for $name {}

        #[allow(dead_code)]
        impl $name {
            /// The null handle (the legacy default stream, for a stream).
            pub(crate) const NULL: Self = Self(std::ptr::null_mut());
        }
    )*};
}

impl StreamHandle {
    /// `CU_STREAM_LEGACY`: the legacy default stream of the current context.
    pub(crate) const LEGACY: Self = Self(std::ptr::without_provenance_mut(1));
    /// `CU_STREAM_PER_THREAD`: the calling thread's per-thread default stream.
    pub(crate) const PER_THREAD: Self = Self(std::ptr::without_provenance_mut(2));
}

handles! {
    /// A `CUcontext`.
    ContextHandle;
    /// A `CUstream`.
    StreamHandle;
    /// A `CUevent`.
    EventHandle;
    /// A `CUmemoryPool`.
    PoolHandle;
    /// A `CUgreenCtx`.
    GreenContextHandle;
    /// A `CUlibrary`.
    LibraryHandle;
    /// A `CUkernel`.
    KernelHandle;
    /// A `CUfunction`.
    FunctionHandle;
    /// A `CUmodule`.
    ModuleHandle;
    /// A `CUgraph`.
    GraphHandle;
    /// A `CUgraphExec`.
    GraphExecHandle;
    /// A `CUgraphNode`.
    GraphNodeHandle;
    /// A `CUuserObject`.
    UserObjectHandle;
    /// A `CUexternalMemory`.
    ExternalMemoryHandle;
    /// A `CUexternalSemaphore`.
    ExternalSemaphoreHandle;
    /// A `CUgraphicsResource`.
    GraphicsHandle;
}

/// A kernel node's parameters (`CUDA_KERNEL_NODE_PARAMS_v2` with a `CUkernel` and its context).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelNodeSpec {
    pub(crate) kernel: KernelHandle,
    pub(crate) context: ContextHandle,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
    /// One pointer per parameter to its bytes (copied by the driver); null when reading.
    pub(crate) args: *mut *mut c_void,
}

/// One copy of a memcpy node: bytes between two addresses, each a device (unified) address or,
/// for `src_host`, host memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopySpec {
    pub(crate) dst: DevicePtr,
    pub(crate) src: DevicePtr,
    pub(crate) src_host: bool,
    pub(crate) bytes: usize,
}

/// A memset node: `count` elements of `element_size` (1, 2 or 4) bytes set to `value`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemsetSpec {
    pub(crate) dst: DevicePtr,
    pub(crate) value: u32,
    pub(crate) element_size: u32,
    pub(crate) count: usize,
}

/// A memcpy node's ends as the driver holds them: each end's `CUmemorytype` and address
/// (the device address, or the host pointer as an integer; 0 for an array), and its size in
/// bytes (width times height times depth).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyNodeInfo {
    pub(crate) src_type: u32,
    pub(crate) src: u64,
    pub(crate) dst_type: u32,
    pub(crate) dst: u64,
    pub(crate) bytes: usize,
}

/// What `cuGraphExecUpdate` said: its `CUgraphExecUpdateResult` and the node it names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UpdateResult {
    pub(crate) code: u32,
    pub(crate) node: GraphNodeHandle,
}

/// A `CUdevice`: an ordinal in both ABIs.
pub(crate) type DeviceHandle = i32;

/// A `CUdeviceptr`.
pub(crate) type DevicePtr = u64;

/// A launch, in version-neutral terms (`CUlaunchConfig` and its attributes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchParams {
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared_mem_bytes: u32,
    pub(crate) stream: StreamHandle,
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
    pub(crate) cluster: Option<[u32; 3]>,
    /// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
    pub(crate) cooperative: bool,
    /// The other launch attributes.
    pub(crate) extras: LaunchExtras,
}

/// Launch attributes beyond clusters and cooperative launches, by their values' codes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LaunchExtras {
    /// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`.
    pub(crate) programmatic_serialization: bool,
    /// `CU_LAUNCH_ATTRIBUTE_PRIORITY`.
    pub(crate) priority: Option<i32>,
    /// `CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN` (`CUlaunchMemSyncDomain`).
    pub(crate) mem_sync_domain: Option<u32>,
    /// `CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE` (`CUclusterSchedulingPolicy`).
    pub(crate) cluster_scheduling_policy: Option<u32>,
    /// `CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`.
    pub(crate) preferred_cluster: Option<[u32; 3]>,
    /// `CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW`.
    pub(crate) access_policy_window: Option<AccessWindow>,
    /// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`: the event, and whether it triggers at block
    /// start.
    pub(crate) programmatic_event: Option<(EventHandle, bool)>,
}

/// A `CUaccessPolicyWindow` by its values' codes; the hit ratio as its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AccessWindow {
    pub(crate) base: u64,
    pub(crate) bytes: usize,
    pub(crate) hit_ratio_bits: u32,
    /// `CUaccessProperty`.
    pub(crate) hit: u32,
    /// `CUaccessProperty`.
    pub(crate) miss: u32,
}

/// One input of the driver's linker (`cuLinkAddData`), by `CUjitInputType` code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkInput<'a> {
    /// `CU_JIT_INPUT_CUBIN` 0, `_PTX` 1, `_FATBINARY` 2, `_OBJECT` 3, `_LIBRARY` 4.
    pub(crate) kind: u32,
    pub(crate) data: &'a [u8],
    pub(crate) name: &'a std::ffi::CStr,
}

/// The options of the driver's linker (`cuLinkCreate`) and of its JIT compile of PTX at load
/// time (`cuLibraryLoadData`), in neutral form: each is one `CUjit_option`, left out when
/// unset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LinkOptions {
    /// `CU_JIT_OPTIMIZATION_LEVEL` (0 to 4).
    pub(crate) optimization_level: Option<u32>,
    /// `CU_JIT_MAX_REGISTERS`.
    pub(crate) max_registers: Option<u32>,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    pub(crate) debug: bool,
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub(crate) line_info: bool,
    /// `CU_JIT_LOG_VERBOSE`.
    pub(crate) verbose: bool,
    /// `CU_JIT_WALL_TIME`: the link's wall time, in milliseconds, appended to the info log.
    pub(crate) wall_time: bool,
}

/// The logs the driver's JIT wrote while it loaded code (`CU_JIT_INFO_LOG_BUFFER` and
/// `CU_JIT_ERROR_LOG_BUFFER`), up to their first NUL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct JitLogs {
    pub(crate) info: String,
    pub(crate) error: String,
}

/// A `CUdevResource`, held as bytes large enough for either header's layout (the 13 header
/// appends fields); each ABI reads it as its own struct.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct DevResource(pub(crate) [u8; 256]);

impl DevResource {
    pub(crate) const ZERO: DevResource = DevResource([0; 256]);
}

impl fmt::Debug for DevResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DevResource")
    }
}

/// What an SM resource reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SmInfo {
    pub(crate) sm_count: u32,
    /// The 13 header's `minSmPartitionSize`, `None` through the 12 ABI.
    pub(crate) min_partition_size: Option<u32>,
    /// The 13 header's `smCoscheduledAlignment`, `None` through the 12 ABI.
    pub(crate) coscheduled_alignment: Option<u32>,
    /// The 13 header's `flags` (`CUdevSmResourceGroup_flags`), `None` through the 12 ABI.
    pub(crate) flags: Option<u32>,
}

/// A work-queue configuration resource's fields (`CUdevWorkqueueConfigResource`, 13 header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WorkqueueInfo {
    /// The device ordinal.
    pub(crate) device: i32,
    /// `wqConcurrencyLimit`.
    pub(crate) concurrency_limit: u32,
    /// `sharingScope` (`CUdevWorkqueueConfigScope`).
    pub(crate) scope: u32,
}
