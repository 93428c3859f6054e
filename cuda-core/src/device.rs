//! CUDA devices.

use std::fmt;
use std::sync::Arc;

use crate::context::{Context, ContextOptions};
use crate::driver::{driver, DeviceHandle};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::lifetime::registry::{self, DeviceState, ATTRIBUTE_SLOTS};
use crate::lifetime::Primary;
use crate::memory::{self, MemoryResource};
use crate::sm_resources::DeviceResources;
use crate::stream::{Stream, StreamOptions};

const _: () = assert!(
    attributes::ATTRIBUTE_CODES <= ATTRIBUTE_SLOTS,
    "the registry caches fewer attributes than the header has"
);

/// A CUDA device, by ordinal. `Copy`, and free to make: the device count is read once and every
/// attribute is cached on first use.
///
/// ```no_run
/// use cuda_core::Device;
///
/// for device in Device::all()? {
///     println!(
///         "{}: {} (sm_{}), {} GiB",
///         device.ordinal(),
///         device.name()?,
///         device.arch()?,
///         device.total_memory()? >> 30
///     );
/// }
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "CUdevice")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.ordinal)
    }
}

impl Device {
    /// The device with this ordinal. An ordinal the machine does not have is
    /// [`Error::InvalidArgument`] naming it and the device count. Makes no driver call after
    /// the first.
    #[doc(alias = "cuDeviceGet")]
    pub fn new(ordinal: usize) -> Result<Device> {
        let count = registry::states()?.len();
        if ordinal < count {
            Ok(Device {
                ordinal: ordinal as i32,
            })
        } else {
            Err(Error::InvalidArgument {
                name: "ordinal",
                reason: format!("device {ordinal} does not exist: this machine has {count}"),
            })
        }
    }

    /// How many devices the driver sees.
    #[doc(alias = "cuDeviceGetCount")]
    pub fn count() -> Result<usize> {
        Ok(registry::states()?.len())
    }

    /// Every device, in ordinal order.
    pub fn all() -> Result<Vec<Device>> {
        Ok((0..registry::states()?.len())
            .map(|ordinal| Device {
                ordinal: ordinal as i32,
            })
            .collect())
    }

    /// The device of the calling thread's current context, or device 0 when no context is
    /// current: one `cuCtxGetCurrent`, and, for a context other than a primary one this
    /// process holds, `cuCtxGetDevice` (never asked with no context current, where it fails).
    #[inline]
    #[doc(alias = "cuCtxGetDevice")]
    pub fn current() -> Result<Device> {
        match Device::current_if_any()? {
            Some(device) => Ok(device),
            None => Device::new(0),
        }
    }

    /// The calling thread's current device, else the first whose primary context this
    /// process holds already, else device 0: a device to ask a context-free question in,
    /// without making a context nobody uses.
    pub(crate) fn in_use() -> Result<Device> {
        if let Some(device) = Device::current_if_any()? {
            return Ok(device);
        }
        Ok((0..Device::count()?)
            .map(|ordinal| Device {
                ordinal: ordinal as i32,
            })
            .find(|device| device.primary_if_ready().is_some())
            .unwrap_or(Device { ordinal: 0 }))
    }

    /// The device of the calling thread's current context, `None` when none is current: a
    /// primary context this process holds is found among them; any other is asked of the
    /// driver (`cuCtxGetDevice`, only with a context current).
    #[inline]
    fn current_if_any() -> Result<Option<Device>> {
        let driver = driver()?;
        let Some(ctx) = driver.ctx_current_or_none() else {
            // cuCtxGetCurrent failed: the driver's other answer (an invalid context: none).
            return Ok(driver.ctx_get_device()?.map(|ordinal| Device { ordinal }));
        };
        if ctx.0.is_null() {
            return Ok(None);
        }
        if let Some(ordinal) = registry::states_if_ready().and_then(|states| {
            states.iter().position(|state| {
                state
                    .primary_if_ready()
                    .is_some_and(|primary| primary.handle == ctx)
            })
        }) {
            return Ok(Some(Device {
                ordinal: ordinal as i32,
            }));
        }
        Ok(driver.ctx_get_device()?.map(|ordinal| Device { ordinal }))
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    pub(crate) fn handle(&self) -> DeviceHandle {
        // A CUdevice is its ordinal.
        self.ordinal
    }

    /// The device of a `CUdevice` the driver returned (an ordinal it has).
    #[inline]
    pub(crate) fn from_handle(handle: DeviceHandle) -> Device {
        Device { ordinal: handle }
    }

    fn state(&self) -> Result<&'static DeviceState> {
        registry::state(self.ordinal())
    }

    /// The device's primary context. The first call retains it (`cuDevicePrimaryCtxRetain`);
    /// the process keeps it retained from then on, as the CUDA runtime does, so that making
    /// streams, events and buffers never pays for it again, and this call (and cloning its
    /// result) counts no reference.
    #[doc(alias = "cuDevicePrimaryCtxRetain")]
    #[inline]
    pub fn primary_context(&self) -> Result<Context> {
        Ok(Context::primary(self.primary_entry()?))
    }

    /// The primary context with its handle and driver at hand, retained on first use.
    #[inline]
    pub(crate) fn primary_entry(&self) -> Result<&'static Primary> {
        self.state()?.primary(self.handle())
    }

    /// Makes this device's primary context current on the calling thread.
    #[doc(alias = "cuCtxSetCurrent")]
    #[inline]
    pub fn set_current(&self) -> Result<()> {
        // The common case inline, in a few instructions: the context exists and already is
        // current. Everything else (first use, a switch, an error) is out of line.
        if let Some(primary) = self.primary_if_ready() {
            if primary.driver.ctx_current_or_none() == Some(primary.handle) {
                return Ok(());
            }
        }
        self.set_current_slow()
    }

    #[cold]
    #[inline(never)]
    fn set_current_slow(&self) -> Result<()> {
        self.primary_context()?.set_current()
    }

    /// Waits for all work on this device's primary context if the process holds it (nothing
    /// can be queued there otherwise), without making one: before a device loses access to
    /// memory, so that no kernel or copy already queued loses it midway.
    pub(crate) fn sync_if_held(&self) -> Result<()> {
        match self.primary_if_ready() {
            Some(primary) => {
                crate::lifetime::captures::sync_context(primary.driver, primary.handle)
            }
            None => Ok(()),
        }
    }

    /// The primary context if the process holds it already; `None` otherwise (and on any
    /// error, which [`Device::primary_context`] reports).
    #[inline]
    fn primary_if_ready(&self) -> Option<&'static Primary> {
        registry::states_if_ready()?
            .get(self.ordinal())?
            .primary_if_ready()
    }

    /// Waits for all work on this device's primary context; another thread's capture open
    /// in it is waited out first, as [`Context::sync`](crate::Context::sync) says.
    #[doc(alias = "cuCtxSynchronize")]
    pub fn sync(&self) -> Result<()> {
        self.primary_context()?.sync()
    }

    /// The device's name, such as `NVIDIA H200`.
    #[doc(alias = "cuDeviceGetName")]
    pub fn name(&self) -> Result<String> {
        let mut buf = [0u8; 256];
        let len = driver()?.device_get_name(self.handle(), &mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
    }

    /// The device's UUID (`cuDeviceGetUuid_v2`).
    #[doc(alias("cuDeviceGetUuid", "cuDeviceGetUuid_v2"))]
    pub fn uuid(&self) -> Result<Uuid> {
        Ok(Uuid(driver()?.device_get_uuid(self.handle())?))
    }

    /// The PCI bus id, such as `0000:1B:00.0`.
    #[doc(alias = "cuDeviceGetPCIBusId")]
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut buf = [0u8; 64];
        let len = driver()?.device_get_pci_bus_id(self.handle(), &mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
    }

    /// The compute capability, `(major, minor)`: `(9, 0)` on an H100 or H200.
    #[doc(alias = "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")]
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        let major = self.attribute(COMPUTE_CAPABILITY_MAJOR)?;
        let minor = self.attribute(COMPUTE_CAPABILITY_MINOR)?;
        Ok((major as u32, minor as u32))
    }

    /// The architecture as NVRTC and `nvcc` spell it after `sm_`: `"90"` on an H200.
    pub fn arch(&self) -> Result<String> {
        let (major, minor) = self.compute_capability()?;
        Ok(format!("{major}{minor}"))
    }

    /// Total device memory in bytes (`cuDeviceTotalMem`).
    #[doc(alias = "cuDeviceTotalMem")]
    pub fn total_memory(&self) -> Result<usize> {
        let state = self.state()?;
        if let Some(&bytes) = state.total_memory.get() {
            return Ok(bytes);
        }
        let bytes = driver()?.device_total_mem(self.handle())?;
        Ok(*state.total_memory.get_or_init(|| bytes))
    }

    /// Free and total memory of the device now, in bytes (`cuMemGetInfo`).
    #[doc(alias = "cuMemGetInfo")]
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.primary_context()?
            .with_current(|driver| driver.mem_get_info())
    }

    /// Every device attribute, typed and cached.
    #[doc(alias = "cuDeviceGetAttribute")]
    #[must_use]
    pub fn properties(&self) -> DeviceProperties {
        DeviceProperties { device: *self }
    }

    /// Whether this device can access `peer`'s memory directly.
    #[doc(alias = "cuDeviceCanAccessPeer")]
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        if peer == self {
            return Ok(true);
        }
        driver()?.device_can_access_peer(self.handle(), peer.handle())
    }

    /// The stream priorities this device supports, `(least, greatest)`; numerically, greatest
    /// is the lower number (on an H200, `(0, -5)`).
    #[doc(alias = "cuCtxGetStreamPriorityRange")]
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let state = self.state()?;
        if let Some(&range) = state.priority_range.get() {
            return Ok(range);
        }
        let range = self
            .primary_context()?
            .with_current(|driver| driver.ctx_get_stream_priority_range())?;
        Ok(*state.priority_range.get_or_init(|| range))
    }

    /// The device's default memory resource: its default memory pool
    /// ([`DeviceMemoryResource`](crate::DeviceMemoryResource)) where the device supports
    /// pools, else synchronous allocation ([`SyncMemoryResource`](crate::memory::SyncMemoryResource)).
    /// The process keeps it for good, so its buffers count no reference to it.
    #[doc(alias = "cuDeviceGetDefaultMemPool")]
    pub fn memory_resource(&self) -> Result<Arc<dyn MemoryResource>> {
        Ok(memory::default_resource(*self)?.clone())
    }

    /// Makes `resource` the device's default resource, what
    /// [`memory_resource`](Self::memory_resource) hands out from now on (buffers allocated
    /// before keep their own resource). The process keeps every resource made a default for
    /// good, as it keeps the first, so that their buffers hold them without counting: replace
    /// the default at setup, not in a loop. A resource of another device
    /// ([`MemoryResource::device`]) is [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    ///
    /// ```no_run
    /// use cuda_core::{Device, DeviceMemoryResource, DeviceMemoryResourceOptions};
    ///
    /// let device = Device::new(0)?;
    /// let pool = DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default().with_release_threshold(u64::MAX))?;
    /// device.set_memory_resource(pool.clone())?;
    /// assert_eq!(format!("{:?}", device.memory_resource()?), format!("{pool:?}"));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn set_memory_resource(&self, resource: Arc<dyn MemoryResource>) -> Result<()> {
        memory::set_default_resource(*self, resource)
    }

    /// The default stream of this device's primary context: the legacy default stream (the
    /// `NULL` stream), or, where the environment variable
    /// `CUDA_CORE_PER_THREAD_DEFAULT_STREAM` is `1`, the calling thread's per-thread default
    /// stream ([`Stream::per_thread_default`]), as Python's cuda.core does with
    /// `CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`. The variable is read once, at the first
    /// call in the process: unset, empty or `0` is the legacy stream; any other value is
    /// [`Error::Config`] from every call (streams of their own and
    /// [`Stream::per_thread_default`] are not affected).
    ///
    /// The legacy stream waits for, and is waited for by, every blocking stream of the context
    /// (`StreamOptions::non_blocking: false`), so the driver refuses work on it while such a
    /// stream captures, invalidating the capture. So while a capture of a blocking stream in
    /// the context is open (begun through this crate, on any thread), work on it and its
    /// synchronisation are refused before the driver, with [`Error::InvalidArgument`], and the
    /// capture stays valid; captures begun meanwhile wait for its calls to return.
    ///
    /// A per-thread default stream waits for no other stream; it belongs to the thread that
    /// asked for it: used from another thread, every operation on it is
    /// [`Error::InvalidArgument`] (ask for the default stream on each thread).
    ///
    /// Seen on the 580 driver (CUDA 13.0): while green contexts are being created on the
    /// device, synchronising a default stream can return before an event recorded on it reads
    /// done. Synchronise the event itself where that matters.
    ///
    /// ```no_run
    /// use cuda_core::Device;
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.default_stream()?;
    /// // 1: CU_STREAM_LEGACY; 2: CU_STREAM_PER_THREAD (CUDA_CORE_PER_THREAD_DEFAULT_STREAM=1)
    /// println!("default stream {:?}", stream.as_raw());
    /// stream.sync()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("CU_STREAM_LEGACY", "CU_STREAM_PER_THREAD"))]
    pub fn default_stream(&self) -> Result<Stream> {
        if per_thread_default_chosen()? {
            return Stream::per_thread_default(*self);
        }
        Ok(Stream::legacy_default(self.primary_context()?))
    }

    /// Creates a stream in this device's primary context.
    #[doc(alias = "cuStreamCreate")]
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        let primary = self.primary_entry()?;
        Stream::create_in(
            primary.driver,
            primary.handle,
            Context::primary(primary),
            options,
        )
    }

    /// Creates an event in this device's primary context.
    #[doc(alias = "cuEventCreate")]
    #[inline]
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        let primary = self.primary_entry()?;
        Event::create_in(
            primary.driver,
            primary.handle,
            Context::primary(primary),
            options,
        )
    }

    /// This device as NVML sees it, matched by UUID (NVML's numbering is the machine's, not
    /// this process's: `CUDA_VISIBLE_DEVICES` reorders CUDA's only).
    #[cfg(feature = "nvml")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nvml")))]
    pub fn system_device(&self) -> Result<crate::system::SystemDevice<'static>> {
        let uuid = self.uuid()?.to_nvml_string();
        crate::system::System::get()?.device_by_uuid(&uuid)
    }

    /// The device's resources, for green contexts.
    #[must_use]
    pub fn resources(&self) -> DeviceResources {
        DeviceResources::new(*self)
    }

    /// Creates a green context on SM groups split from this device's SMs.
    ///
    /// ```no_run
    /// use cuda_core::{ContextOptions, Device, SmSplitOptions};
    ///
    /// let device = Device::new(0)?;
    /// let sms = device.resources().sm()?;
    /// let split = sms.split(SmSplitOptions::groups_of(sms.sm_count() / 2).with_groups(2))?;
    /// let half = device.create_context(ContextOptions::default().with_resources(vec![split.groups[0].clone()]))?;
    /// assert!(half.is_green());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuGreenCtxCreate")]
    pub fn create_context(&self, options: ContextOptions) -> Result<Context> {
        Context::create_green(driver()?, *self, &options)
    }

    /// One attribute, read once and cached.
    pub(crate) fn attribute(&self, code: i32) -> Result<i32> {
        self.state()?.attribute(code, self.handle())
    }
}

/// The variable that makes [`Device::default_stream`] the per-thread default stream.
const PER_THREAD_VARIABLE: &str = "CUDA_CORE_PER_THREAD_DEFAULT_STREAM";

/// Whether `CUDA_CORE_PER_THREAD_DEFAULT_STREAM` chooses the per-thread default stream, read
/// once for the process; a value it cannot take is [`Error::Config`] from each call.
fn per_thread_default_chosen() -> Result<bool> {
    static CHOSEN: std::sync::OnceLock<std::result::Result<bool, String>> =
        std::sync::OnceLock::new();
    CHOSEN
        .get_or_init(|| per_thread_choice(std::env::var_os(PER_THREAD_VARIABLE).as_deref()))
        .clone()
        .map_err(|value| Error::Config {
            variable: PER_THREAD_VARIABLE,
            value,
            reason: "expected 1 (the per-thread default stream) or 0 (the legacy default \
                     stream, as when it is unset)"
                .to_owned(),
        })
}

/// What a value of `CUDA_CORE_PER_THREAD_DEFAULT_STREAM` chooses: `true` for the per-thread
/// default stream; unset, empty (once trimmed) or `0` the legacy one; anything else, the value
/// as the error.
fn per_thread_choice(value: Option<&std::ffi::OsStr>) -> std::result::Result<bool, String> {
    let Some(value) = value else {
        return Ok(false);
    };
    let value = value.to_string_lossy();
    match value.trim() {
        "" | "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(value.into_owned()),
    }
}

/// A device UUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Uuid(pub [u8; 16]);

impl fmt::Display for Uuid {
    /// As `nvidia-smi` shows it, without its `GPU-` prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl Uuid {
    /// As NVML and `nvidia-smi -L` write it: `GPU-` and the hex digits in groups.
    #[must_use]
    pub fn to_nvml_string(&self) -> String {
        format!("GPU-{self}")
    }
}

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` (the same code in every header).
const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
const COMPUTE_CAPABILITY_MINOR: i32 = 76;

/// Every attribute of a device, typed and cached: each is read from the driver once per process
/// (`cuDeviceGetAttribute`) and answered from memory after. Codes are the same in the 12 and 13
/// headers; the ones marked "13.x drivers" fail with the driver's error on older ones.
///
/// ```no_run
/// let props = cuda_core::Device::new(0)?.properties();
/// println!("{} SMs, {} threads per block", props.multiprocessor_count()?, props.max_threads_per_block()?);
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "cuDeviceGetAttribute")]
pub struct DeviceProperties {
    device: Device,
}

impl DeviceProperties {
    /// The device these properties describe.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Any attribute by its `CUdevice_attribute` code, for codes newer than this crate.
    #[doc(alias = "cuDeviceGetAttribute")]
    pub fn raw(&self, code: i32) -> Result<i32> {
        self.device.attribute(code)
    }

    /// One attribute, cached: what every generated accessor reads.
    #[inline]
    fn read(&self, code: i32) -> Result<i32> {
        self.device.attribute(code)
    }
}

/// The accessors, generated from the header's `CUdevice_attribute` by
/// `cargo xtask regenerate-bindings`.
mod attributes {
    include!("generated/device_attributes.rs");
}

#[cfg(test)]
mod per_thread_tests {
    use super::per_thread_choice;
    use std::ffi::OsStr;

    #[test]
    fn the_per_thread_variable_takes_0_1_or_nothing() {
        let choice = |v: Option<&str>| per_thread_choice(v.map(OsStr::new));
        // Catches the variable ignored, or read as set whatever its value.
        assert_eq!(choice(Some("1")), Ok(true));
        assert_eq!(choice(Some(" 1\n")), Ok(true));
        assert_eq!(choice(None), Ok(false));
        assert_eq!(choice(Some("0")), Ok(false));
        assert_eq!(choice(Some("")), Ok(false));
        // Catches a value the crate cannot read taken as either stream (cuda.core's strtol
        // would read "yes" as 0 and "2" as set), and the value lost from the error.
        for bad in ["yes", "2", "true", "01", "-1"] {
            assert_eq!(choice(Some(bad)), Err(bad.to_owned()), "{bad}");
        }
    }
}
