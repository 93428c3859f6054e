//! CUDA devices.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::context::{Context, ContextOptions, ContextRef};
use crate::driver::{driver, ContextHandle, DeviceHandle, Driver};
use crate::error::{Error, Result};
use crate::event::{Event, EventOptions};
use crate::memory::{DeviceMemoryResource, MemoryResource, SyncMemoryResource};
use crate::resources::DeviceResources;
use crate::stream::{Stream, StreamOptions};

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
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: i32,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.ordinal)
    }
}

/// What the process keeps per device: its primary context, once retained, and its attributes.
pub(crate) struct DeviceState {
    primary: OnceLock<Primary>,
    attributes: [AtomicI64; ATTRIBUTE_SLOTS],
    total_memory: OnceLock<usize>,
    priority_range: OnceLock<(i32, i32)>,
    memory_resource: OnceLock<Arc<dyn MemoryResource>>,
}

/// The primary context, with copies of its handle and driver beside it: the hot paths (event
/// and stream creation, `set_current`) read them here, one dependent load sooner than through
/// the context's shared allocation. After a driver call has pushed the caller's data out of the
/// CPU's first-level cache, each load in that chain is a miss; one fewer measured 7 ns less per
/// event created on the stand-in driver.
pub(crate) struct Primary {
    pub(crate) handle: ContextHandle,
    pub(crate) driver: &'static dyn Driver,
    pub(crate) context: Context,
}

/// One slot per attribute code of the 13.x header; a newer code is read without caching.
const ATTRIBUTE_SLOTS: usize = attributes::ATTRIBUTE_CODES;
/// An attribute slot not read yet.
const UNREAD: i64 = i64::MIN;

static DEVICES: OnceLock<Result<Box<[DeviceState]>>> = OnceLock::new();

/// The per-device state, sized by the device count on first use.
fn states() -> Result<&'static [DeviceState]> {
    DEVICES
        .get_or_init(|| {
            let count = driver()?.device_get_count()?.max(0) as usize;
            Ok((0..count)
                .map(|_| DeviceState {
                    primary: OnceLock::new(),
                    attributes: std::array::from_fn(|_| AtomicI64::new(UNREAD)),
                    total_memory: OnceLock::new(),
                    priority_range: OnceLock::new(),
                    memory_resource: OnceLock::new(),
                })
                .collect())
        })
        .as_deref()
        .map_err(Clone::clone)
}

impl Device {
    /// The device with this ordinal. An ordinal the machine does not have is
    /// [`Error::InvalidArgument`] naming it and the device count. Makes no driver call after
    /// the first.
    pub fn new(ordinal: usize) -> Result<Device> {
        let count = states()?.len();
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
    pub fn count() -> Result<usize> {
        Ok(states()?.len())
    }

    /// Every device, in ordinal order.
    pub fn all() -> Result<Vec<Device>> {
        Ok((0..states()?.len())
            .map(|ordinal| Device {
                ordinal: ordinal as i32,
            })
            .collect())
    }

    /// The device of the calling thread's current context, or device 0 when no context is
    /// current: one `cuCtxGetDevice` (whose invalid-context answer means "none current").
    #[inline]
    pub fn current() -> Result<Device> {
        match driver()?.ctx_get_device()? {
            Some(ordinal) => Ok(Device { ordinal }),
            None => Device::new(0),
        }
    }

    /// The ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal as usize
    }

    pub(crate) fn handle(&self) -> DeviceHandle {
        // A CUdevice is its ordinal.
        self.ordinal
    }

    pub(crate) fn state(&self) -> Result<&'static DeviceState> {
        states()?
            .get(self.ordinal())
            .ok_or_else(|| Error::InvalidArgument {
                name: "device",
                reason: format!("device {} does not exist", self.ordinal),
            })
    }

    /// The device's primary context. The first call retains it (`cuDevicePrimaryCtxRetain`);
    /// the process keeps it retained from then on, as the CUDA runtime does, so that making
    /// streams, events and buffers never pays for it again.
    pub fn primary_context(&self) -> Result<Context> {
        Ok(self.primary()?.clone())
    }

    /// The primary context as the process keeps it, retained on first use.
    #[inline]
    pub(crate) fn primary(&self) -> Result<&'static Context> {
        Ok(&self.primary_entry()?.context)
    }

    /// The primary context with its handle and driver at hand, retained on first use.
    #[inline]
    pub(crate) fn primary_entry(&self) -> Result<&'static Primary> {
        let state = self.state()?;
        if let Some(primary) = state.primary.get() {
            return Ok(primary);
        }
        self.retain_primary(state)
    }

    #[cold]
    #[inline(never)]
    fn retain_primary(&self, state: &'static DeviceState) -> Result<&'static Primary> {
        let driver = driver()?;
        let context = Context::retain_primary(driver, *self)?;
        // A racing thread may have set it first: keep theirs, and drop ours (a release).
        Ok(state.primary.get_or_init(|| Primary {
            handle: context.inner.handle,
            driver,
            context,
        }))
    }

    /// Makes this device's primary context current on the calling thread.
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
        self.primary()?.set_current()
    }

    /// The primary context if the process holds it already; `None` otherwise (and on any
    /// error, which [`Device::primary`] reports).
    #[inline]
    fn primary_if_ready(&self) -> Option<&'static Primary> {
        match DEVICES.get() {
            Some(Ok(states)) => states.get(self.ordinal())?.primary.get(),
            _ => None,
        }
    }

    /// Waits for all work on this device's primary context.
    pub fn sync(&self) -> Result<()> {
        self.primary()?.sync()
    }

    /// The device's name, such as `NVIDIA H200`.
    pub fn name(&self) -> Result<String> {
        let mut buf = [0u8; 256];
        let len = driver()?.device_get_name(self.handle(), &mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
    }

    /// The device's UUID (`cuDeviceGetUuid_v2`).
    pub fn uuid(&self) -> Result<Uuid> {
        Ok(Uuid(driver()?.device_get_uuid(self.handle())?))
    }

    /// The PCI bus id, such as `0000:1B:00.0`.
    pub fn pci_bus_id(&self) -> Result<String> {
        let mut buf = [0u8; 64];
        let len = driver()?.device_get_pci_bus_id(self.handle(), &mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
    }

    /// The compute capability, `(major, minor)`: `(9, 0)` on an H100 or H200.
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
    pub fn total_memory(&self) -> Result<usize> {
        let state = self.state()?;
        if let Some(&bytes) = state.total_memory.get() {
            return Ok(bytes);
        }
        let bytes = driver()?.device_total_mem(self.handle())?;
        Ok(*state.total_memory.get_or_init(|| bytes))
    }

    /// Free and total memory of the device now, in bytes (`cuMemGetInfo`).
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.primary_context()?
            .with_current(|driver| driver.mem_get_info())
    }

    /// Every device attribute, typed and cached.
    pub fn properties(&self) -> DeviceProperties {
        DeviceProperties { device: *self }
    }

    /// Whether this device can access `peer`'s memory directly.
    pub fn can_access_peer(&self, peer: &Device) -> Result<bool> {
        if peer == self {
            return Ok(true);
        }
        driver()?.device_can_access_peer(self.handle(), peer.handle())
    }

    /// The stream priorities this device supports, `(least, greatest)`; numerically, greatest
    /// is the lower number (on an H200, `(0, -5)`).
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
    /// ([`DeviceMemoryResource`]) where the device supports pools, else synchronous
    /// allocation ([`SyncMemoryResource`]).
    pub fn memory_resource(&self) -> Result<Arc<dyn MemoryResource>> {
        let state = self.state()?;
        if let Some(resource) = state.memory_resource.get() {
            return Ok(resource.clone());
        }
        if self.properties().memory_pools_supported()? {
            let pool = DeviceMemoryResource::default_pool(*self)?;
            let kept = state.memory_resource.get_or_init(|| pool.clone());
            // A racing thread may have kept its own: that one is marked by that thread.
            pool.keep_forever(kept);
            Ok(kept.clone())
        } else {
            let resource: Arc<dyn MemoryResource> = SyncMemoryResource::new(*self)?;
            Ok(state.memory_resource.get_or_init(|| resource).clone())
        }
    }

    /// The legacy default stream (the `NULL` stream) of this device's primary context.
    ///
    /// Seen on the 580 driver (CUDA 13.0): while green contexts are being created on the
    /// device, synchronising a default stream can return before an event recorded on it reads
    /// done. Synchronise the event itself where that matters.
    pub fn default_stream(&self) -> Result<Stream> {
        Ok(Stream::legacy_default(ContextRef::Static(self.primary()?)))
    }

    /// Creates a stream in this device's primary context.
    pub fn create_stream(&self, options: StreamOptions) -> Result<Stream> {
        let primary = self.primary_entry()?;
        Stream::create_in(
            primary.driver,
            primary.handle,
            ContextRef::Static(&primary.context),
            options,
        )
    }

    /// Creates an event in this device's primary context.
    #[inline]
    pub fn create_event(&self, options: EventOptions) -> Result<Event> {
        let primary = self.primary_entry()?;
        Event::create_in(
            primary.driver,
            primary.handle,
            ContextRef::Static(&primary.context),
            options,
        )
    }

    /// The device's resources, for green contexts.
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
    /// let split = sms.split(SmSplitOptions::groups_of(sms.sm_count() / 2).count(2))?;
    /// let half = device.create_context(ContextOptions { resources: vec![split.groups[0].clone()] })?;
    /// assert!(half.is_green());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn create_context(&self, options: ContextOptions) -> Result<Context> {
        Context::create_green(driver()?, *self, &options)
    }

    /// One attribute, read once and cached.
    pub(crate) fn attribute(&self, code: i32) -> Result<i32> {
        let slot = usize::try_from(code)
            .ok()
            .and_then(|c| self.state().ok()?.attributes.get(c));
        if let Some(slot) = slot {
            let cached = slot.load(Ordering::Relaxed);
            if cached != UNREAD {
                return Ok(cached as i32);
            }
        }
        let value = driver()?.device_get_attribute(code, self.handle())?;
        if let Some(slot) = slot {
            slot.store(i64::from(value), Ordering::Relaxed);
        }
        Ok(value)
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
