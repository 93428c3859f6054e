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

/// Attribute codes run to 161 in the 13.x header; slots past them stay unused.
const ATTRIBUTE_SLOTS: usize = 192;
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

macro_rules! properties {
    ($($(#[$doc:meta])* $name:ident: $ty:ident = $code:literal;)*) => {
        impl DeviceProperties {
            /// The device these properties describe.
            pub fn device(&self) -> Device {
                self.device
            }

            /// Any attribute by its `CUdevice_attribute` code, for codes newer than this crate.
            pub fn raw(&self, code: i32) -> Result<i32> {
                self.device.attribute(code)
            }

            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<$ty> {
                    self.device.attribute($code).map(properties!(@convert $ty))
                }
            )*
        }
    };
    (@convert bool) => { |v: i32| v != 0 };
    (@convert u32) => { |v: i32| v as u32 };
    (@convert i32) => { |v: i32| v };
}

properties! {
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    max_threads_per_block: u32 = 1;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X`.
    max_block_dim_x: u32 = 2;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y`.
    max_block_dim_y: u32 = 3;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z`.
    max_block_dim_z: u32 = 4;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X`.
    max_grid_dim_x: u32 = 5;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y`.
    max_grid_dim_y: u32 = 6;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z`.
    max_grid_dim_z: u32 = 7;
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`.
    max_shared_memory_per_block: u32 = 8;
    /// `CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY`.
    total_constant_memory: u32 = 9;
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
    warp_size: u32 = 10;
    /// `CU_DEVICE_ATTRIBUTE_MAX_PITCH`.
    max_pitch: u32 = 11;
    /// `CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK`.
    max_registers_per_block: u32 = 12;
    /// `CU_DEVICE_ATTRIBUTE_CLOCK_RATE`.
    clock_rate: u32 = 13;
    /// `CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT`.
    texture_alignment: u32 = 14;
    /// `CU_DEVICE_ATTRIBUTE_GPU_OVERLAP`.
    gpu_overlap: bool = 15;
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    multiprocessor_count: u32 = 16;
    /// `CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT`.
    kernel_exec_timeout: bool = 17;
    /// `CU_DEVICE_ATTRIBUTE_INTEGRATED`.
    integrated: bool = 18;
    /// `CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY`.
    can_map_host_memory: bool = 19;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_MODE`.
    compute_mode: u32 = 20;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH`.
    maximum_texture1d_width: u32 = 21;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH`.
    maximum_texture2d_width: u32 = 22;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT`.
    maximum_texture2d_height: u32 = 23;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH`.
    maximum_texture3d_width: u32 = 24;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT`.
    maximum_texture3d_height: u32 = 25;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH`.
    maximum_texture3d_depth: u32 = 26;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH`.
    maximum_texture2d_layered_width: u32 = 27;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT`.
    maximum_texture2d_layered_height: u32 = 28;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS`.
    maximum_texture2d_layered_layers: u32 = 29;
    /// `CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT`.
    surface_alignment: u32 = 30;
    /// `CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS`.
    concurrent_kernels: bool = 31;
    /// `CU_DEVICE_ATTRIBUTE_ECC_ENABLED`.
    ecc_enabled: bool = 32;
    /// `CU_DEVICE_ATTRIBUTE_PCI_BUS_ID`.
    pci_bus_id: u32 = 33;
    /// `CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID`.
    pci_device_id: u32 = 34;
    /// `CU_DEVICE_ATTRIBUTE_TCC_DRIVER`.
    tcc_driver: bool = 35;
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`.
    memory_clock_rate: u32 = 36;
    /// `CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH`.
    global_memory_bus_width: u32 = 37;
    /// `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`.
    l2_cache_size: u32 = 38;
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`.
    max_threads_per_multiprocessor: u32 = 39;
    /// `CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT`.
    async_engine_count: u32 = 40;
    /// `CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING`.
    unified_addressing: bool = 41;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH`.
    maximum_texture1d_layered_width: u32 = 42;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS`.
    maximum_texture1d_layered_layers: u32 = 43;
    /// `CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER`.
    can_tex2d_gather: bool = 44;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH`.
    maximum_texture2d_gather_width: u32 = 45;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT`.
    maximum_texture2d_gather_height: u32 = 46;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE`.
    maximum_texture3d_width_alternate: u32 = 47;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE`.
    maximum_texture3d_height_alternate: u32 = 48;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE`.
    maximum_texture3d_depth_alternate: u32 = 49;
    /// `CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID`.
    pci_domain_id: u32 = 50;
    /// `CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT`.
    texture_pitch_alignment: u32 = 51;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH`.
    maximum_texturecubemap_width: u32 = 52;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH`.
    maximum_texturecubemap_layered_width: u32 = 53;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS`.
    maximum_texturecubemap_layered_layers: u32 = 54;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH`.
    maximum_surface1d_width: u32 = 55;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH`.
    maximum_surface2d_width: u32 = 56;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT`.
    maximum_surface2d_height: u32 = 57;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH`.
    maximum_surface3d_width: u32 = 58;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT`.
    maximum_surface3d_height: u32 = 59;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH`.
    maximum_surface3d_depth: u32 = 60;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH`.
    maximum_surface1d_layered_width: u32 = 61;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS`.
    maximum_surface1d_layered_layers: u32 = 62;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH`.
    maximum_surface2d_layered_width: u32 = 63;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT`.
    maximum_surface2d_layered_height: u32 = 64;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS`.
    maximum_surface2d_layered_layers: u32 = 65;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH`.
    maximum_surfacecubemap_width: u32 = 66;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH`.
    maximum_surfacecubemap_layered_width: u32 = 67;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS`.
    maximum_surfacecubemap_layered_layers: u32 = 68;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH`.
    maximum_texture1d_linear_width: u32 = 69;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH`.
    maximum_texture2d_linear_width: u32 = 70;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT`.
    maximum_texture2d_linear_height: u32 = 71;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH`.
    maximum_texture2d_linear_pitch: u32 = 72;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH`.
    maximum_texture2d_mipmapped_width: u32 = 73;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT`.
    maximum_texture2d_mipmapped_height: u32 = 74;
    /// `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH`.
    maximum_texture1d_mipmapped_width: u32 = 77;
    /// `CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED`.
    stream_priorities_supported: bool = 78;
    /// `CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED`.
    global_l1_cache_supported: bool = 79;
    /// `CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED`.
    local_l1_cache_supported: bool = 80;
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`.
    max_shared_memory_per_multiprocessor: u32 = 81;
    /// `CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR`.
    max_registers_per_multiprocessor: u32 = 82;
    /// `CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY`.
    managed_memory: bool = 83;
    /// `CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD`.
    multi_gpu_board: bool = 84;
    /// `CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID`.
    multi_gpu_board_group_id: i32 = 85;
    /// `CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED`.
    host_native_atomic_supported: bool = 86;
    /// `CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO`.
    single_to_double_precision_perf_ratio: u32 = 87;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`.
    pageable_memory_access: bool = 88;
    /// `CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS`.
    concurrent_managed_access: bool = 89;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED`.
    compute_preemption_supported: bool = 90;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM`.
    can_use_host_pointer_for_registered_mem: bool = 91;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1`.
    can_use_stream_mem_ops_v1: bool = 92;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1`.
    can_use_64_bit_stream_mem_ops_v1: bool = 93;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1`.
    can_use_stream_wait_value_nor_v1: bool = 94;
    /// `CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`.
    cooperative_launch: bool = 95;
    /// `CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH`.
    cooperative_multi_device_launch: bool = 96;
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
    max_shared_memory_per_block_optin: u32 = 97;
    /// `CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES`.
    can_flush_remote_writes: bool = 98;
    /// `CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED`.
    host_register_supported: bool = 99;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES`.
    pageable_memory_access_uses_host_page_tables: bool = 100;
    /// `CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST`.
    direct_managed_mem_access_from_host: bool = 101;
    /// `CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`.
    virtual_memory_management_supported: bool = 102;
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED`.
    handle_type_posix_file_descriptor_supported: bool = 103;
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED`.
    handle_type_win32_handle_supported: bool = 104;
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED`.
    handle_type_win32_kmt_handle_supported: bool = 105;
    /// `CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR`.
    max_blocks_per_multiprocessor: u32 = 106;
    /// `CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED`.
    generic_compression_supported: bool = 107;
    /// `CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE`.
    max_persisting_l2_cache_size: u32 = 108;
    /// `CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE`.
    max_access_policy_window_size: u32 = 109;
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED`.
    gpu_direct_rdma_with_cuda_vmm_supported: bool = 110;
    /// `CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK`.
    reserved_shared_memory_per_block: u32 = 111;
    /// `CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED`.
    sparse_cuda_array_supported: bool = 112;
    /// `CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED`.
    read_only_host_register_supported: bool = 113;
    /// `CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED`.
    timeline_semaphore_interop_supported: bool = 114;
    /// `CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`.
    memory_pools_supported: bool = 115;
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED`.
    gpu_direct_rdma_supported: bool = 116;
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS`.
    gpu_direct_rdma_flush_writes_options: u32 = 117;
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING`.
    gpu_direct_rdma_writes_ordering: bool = 118;
    /// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`.
    mempool_supported_handle_types: u32 = 119;
    /// `CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH`.
    cluster_launch: bool = 120;
    /// `CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED`.
    deferred_mapping_cuda_array_supported: bool = 121;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS`.
    can_use_64_bit_stream_mem_ops: bool = 122;
    /// `CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR`.
    can_use_stream_wait_value_nor: bool = 123;
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED`.
    dma_buf_supported: bool = 124;
    /// `CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED`.
    ipc_event_supported: bool = 125;
    /// `CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT`.
    mem_sync_domain_count: u32 = 126;
    /// `CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED`.
    tensor_map_access_supported: bool = 127;
    /// `CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED`.
    handle_type_fabric_supported: bool = 128;
    /// `CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS`.
    unified_function_pointers: bool = 129;
    /// `CU_DEVICE_ATTRIBUTE_NUMA_CONFIG`.
    numa_config: u32 = 130;
    /// `CU_DEVICE_ATTRIBUTE_NUMA_ID`.
    numa_id: i32 = 131;
    /// `CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED`.
    multicast_supported: bool = 132;
    /// `CU_DEVICE_ATTRIBUTE_MPS_ENABLED`.
    mps_enabled: bool = 133;
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID`.
    host_numa_id: i32 = 134;
    /// `CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED`.
    d3d12_cig_supported: bool = 135;
    /// `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK`.
    mem_decompress_algorithm_mask: u32 = 136;
    /// `CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH`.
    mem_decompress_maximum_length: u32 = 137;
    /// `CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED`.
    vulkan_cig_supported: bool = 138;
    /// `CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID`.
    gpu_pci_device_id: u32 = 139;
    /// `CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID`.
    gpu_pci_subsystem_id: u32 = 140;
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`.
    host_numa_virtual_memory_management_supported: bool = 141;
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED`.
    host_numa_memory_pools_supported: bool = 142;
    /// `CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED`.
    host_numa_multinode_ipc_supported: bool = 143;
    /// `CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED` (13.x drivers).
    host_memory_pools_supported: bool = 144;
    /// `CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED` (13.x drivers).
    host_virtual_memory_management_supported: bool = 145;
    /// `CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED` (13.x drivers).
    host_alloc_dma_buf_supported: bool = 146;
    /// `CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED` (13.x drivers).
    only_partial_host_native_atomic_supported: bool = 147;
    /// `CU_DEVICE_ATTRIBUTE_ATOMIC_REDUCTION_SUPPORTED` (13.x drivers).
    atomic_reduction_supported: bool = 148;
    /// `CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_COUNT` (13.x drivers).
    locality_domain_count: u32 = 149;
    /// `CU_DEVICE_ATTRIBUTE_MAX_OVERSIZED_SHARED_MEMORY_PER_BLOCK` (13.x drivers).
    max_oversized_shared_memory_per_block: u32 = 150;
    /// `CU_DEVICE_ATTRIBUTE_D3D12_CIG_STREAMS_SUPPORTED` (13.x drivers).
    d3d12_cig_streams_supported: bool = 151;
    /// `CU_DEVICE_ATTRIBUTE_DMA_BUF_MMAP_SUPPORTED` (13.x drivers).
    dma_buf_mmap_supported: bool = 152;
    /// `CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_SUPPORTED` (13.x drivers).
    logical_endpoint_unicast_supported: bool = 153;
    /// `CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_MULTICAST_SUPPORTED` (13.x drivers).
    logical_endpoint_multicast_supported: bool = 154;
    /// `CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_COUNTED_OPS_SUPPORTED` (13.x drivers).
    logical_endpoint_counted_ops_supported: bool = 155;
    /// `CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_UNICAST_ACCESS_ON_OWNER_DEVICE_SUPPORTED` (13.x drivers).
    logical_endpoint_unicast_access_on_owner_device_supported: bool = 156;
    /// `CU_DEVICE_ATTRIBUTE_LOCALITY_DOMAIN_MULTIPROCESSOR_COUNT` (13.x drivers).
    locality_domain_multiprocessor_count: u32 = 157;
    /// `CU_DEVICE_ATTRIBUTE_LOGICAL_ENDPOINT_SUPPORTED_HANDLE_TYPES` (13.x drivers).
    logical_endpoint_supported_handle_types: u32 = 158;
    /// `CU_DEVICE_ATTRIBUTE_VULKAN_CIG_STREAMS_SUPPORTED` (13.x drivers).
    vulkan_cig_streams_supported: bool = 159;
    /// `CU_DEVICE_ATTRIBUTE_TENSOR_MAP_LARGE_TENSOR_MIN_SIZE` (13.x drivers).
    tensor_map_large_tensor_min_size: u32 = 160;
    /// `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_LOCALIZED_MEMORY_SUPPORTED` (13.x drivers).
    gpu_direct_rdma_with_localized_memory_supported: bool = 161;
}
