//! Kernels: their attributes, parameter layout and occupancy.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::context::Context;
use crate::device::Device;
use crate::driver::{Driver, FunctionHandle, KernelHandle, LaunchParams};
use crate::error::{Error, Result};
use crate::launch::{ClusterSchedulingPolicy, LaunchConfig};
use crate::object_code::ObjectCode;
use crate::stream::Stream;

/// `CU_FUNC_ATTRIBUTE_*` codes (the same in both headers).
mod attr {
    pub(super) const MAX_THREADS_PER_BLOCK: i32 = 0;
    pub(super) const SHARED_SIZE_BYTES: i32 = 1;
    pub(super) const CONST_SIZE_BYTES: i32 = 2;
    pub(super) const LOCAL_SIZE_BYTES: i32 = 3;
    pub(super) const NUM_REGS: i32 = 4;
    pub(super) const PTX_VERSION: i32 = 5;
    pub(super) const BINARY_VERSION: i32 = 6;
    pub(super) const MAX_DYNAMIC_SHARED_SIZE_BYTES: i32 = 8;
}

/// A kernel's attributes on one device, read once and cached (`cuKernelGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[doc(alias = "cuKernelGetAttribute")]
pub struct KernelAttributes {
    /// The most threads a block of this kernel can have.
    pub max_threads_per_block: u32,
    /// Registers per thread.
    pub num_regs: u32,
    /// Static shared memory per block, in bytes.
    pub shared_size_bytes: u32,
    /// Constant memory, in bytes.
    pub const_size_bytes: u32,
    /// Local memory per thread, in bytes.
    pub local_size_bytes: u32,
    /// The PTX virtual architecture it was compiled for, as `major * 10 + minor`.
    pub ptx_version: u32,
    /// The binary architecture, as `major * 10 + minor`.
    pub binary_version: u32,
    /// The dynamic shared memory a launch may ask for, in bytes (raise it with
    /// [`Kernel::set_max_dynamic_shared_memory`]).
    pub max_dynamic_shared_size_bytes: u32,
}

/// A kernel attribute (`CUfunction_attribute`): every one both headers have, to read with
/// [`Kernel::attribute`]. The settable ones have a setter each on [`Kernel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "CUfunction_attribute")]
pub enum KernelAttribute {
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    MaxThreadsPerBlock,
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: static shared memory per block.
    SharedSizeBytes,
    /// `CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`.
    ConstSizeBytes,
    /// `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: local memory per thread.
    LocalSizeBytes,
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`.
    NumRegs,
    /// `CU_FUNC_ATTRIBUTE_PTX_VERSION` (`major * 10 + minor`).
    PtxVersion,
    /// `CU_FUNC_ATTRIBUTE_BINARY_VERSION` (`major * 10 + minor`).
    BinaryVersion,
    /// `CU_FUNC_ATTRIBUTE_CACHE_MODE_CA`: 1 when compiled with `-Xptxas --dlcm=ca`.
    CacheModeCa,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (set with
    /// [`Kernel::set_max_dynamic_shared_memory`]).
    MaxDynamicSharedSizeBytes,
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`: percent of the unified L1/shared
    /// memory preferred as shared memory, -1 for no preference (set with
    /// [`Kernel::set_preferred_shared_memory_carveout`]).
    PreferredSharedMemoryCarveout,
    /// `CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET`: 1 when launches must name a cluster.
    ClusterSizeMustBeSet,
    /// `CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH` (set with
    /// [`Kernel::set_required_cluster_shape`]; 0 when none is required).
    RequiredClusterWidth,
    /// `CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT`.
    RequiredClusterHeight,
    /// `CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH`.
    RequiredClusterDepth,
    /// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED` (set with
    /// [`Kernel::set_non_portable_cluster_size_allowed`]).
    NonPortableClusterSizeAllowed,
    /// `CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE` (set with
    /// [`Kernel::set_cluster_scheduling_policy`]).
    ClusterSchedulingPolicyPreference,
}

impl KernelAttribute {
    /// Every attribute, in the header's order.
    pub const ALL: [KernelAttribute; 16] = [
        KernelAttribute::MaxThreadsPerBlock,
        KernelAttribute::SharedSizeBytes,
        KernelAttribute::ConstSizeBytes,
        KernelAttribute::LocalSizeBytes,
        KernelAttribute::NumRegs,
        KernelAttribute::PtxVersion,
        KernelAttribute::BinaryVersion,
        KernelAttribute::CacheModeCa,
        KernelAttribute::MaxDynamicSharedSizeBytes,
        KernelAttribute::PreferredSharedMemoryCarveout,
        KernelAttribute::ClusterSizeMustBeSet,
        KernelAttribute::RequiredClusterWidth,
        KernelAttribute::RequiredClusterHeight,
        KernelAttribute::RequiredClusterDepth,
        KernelAttribute::NonPortableClusterSizeAllowed,
        KernelAttribute::ClusterSchedulingPolicyPreference,
    ];

    /// The header's code (`CU_FUNC_ATTRIBUTE_*`), the same in both.
    #[must_use]
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// One kernel parameter: where it sits in the argument buffer and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamInfo {
    /// The offset in bytes.
    pub offset: usize,
    /// The size in bytes.
    pub size: usize,
}

/// A kernel of an [`ObjectCode`], ready to [`launch`](crate::launch). Cheap to clone; it keeps
/// its object code loaded.
#[doc(alias = "CUkernel")]
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
    /// The code that keeps the kernel loaded; `None` for one wrapped by [`Kernel::from_raw`].
    object: Option<ObjectCode>,
}

/// A kernel's handle and what is cached of it, shared by every [`Kernel`] value of it (its
/// [`ObjectCode`] keeps one per name, so asking again costs no driver call). What every launch
/// reads comes first (`repr(C)` keeps the order), so that it shares the allocation's first
/// cache line.
#[repr(C)]
pub(crate) struct KernelInner {
    handle: KernelHandle,
    /// The launch check's limit where the kernel was last launched, without the walk to that
    /// device's entry: `(ordinal + 1) << 32 | max threads per block`, 0 before the first.
    launch_limit: AtomicU64,
    params: OnceLock<Box<[ParamInfo]>>,
    /// Per device ordinal: attributes, and the kernel's function in the primary context.
    per_device: Box<[PerDevice]>,
    driver: &'static dyn Driver,
    name: String,
}

impl KernelInner {
    pub(crate) fn new(
        handle: KernelHandle,
        name: String,
        driver: &'static dyn Driver,
    ) -> Result<Arc<KernelInner>> {
        let devices = Device::count()?;
        Ok(Arc::new(KernelInner {
            handle,
            launch_limit: AtomicU64::new(0),
            params: OnceLock::new(),
            per_device: (0..devices).map(|_| PerDevice::default()).collect(),
            driver,
            name,
        }))
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

struct PerDevice {
    /// Everything but the dynamic shared memory limit, which can change.
    attributes: OnceLock<KernelAttributes>,
    max_dynamic_shared: AtomicU32,
    function: OnceLock<FunctionHandle>,
}

impl Default for PerDevice {
    fn default() -> Self {
        PerDevice {
            attributes: OnceLock::new(),
            max_dynamic_shared: AtomicU32::new(UNREAD),
            function: OnceLock::new(),
        }
    }
}

/// A limit not read yet.
const UNREAD: u32 = u32::MAX;

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl Kernel {
    pub(crate) fn from_parts(inner: Arc<KernelInner>, object: ObjectCode) -> Kernel {
        Kernel {
            inner,
            object: Some(object),
        }
    }

    /// Wraps a kernel loaded elsewhere (by another library, or through the driver directly)
    /// without keeping its library loaded. Its name is the driver's (`cuKernelGetName`).
    ///
    /// # Safety
    ///
    /// `handle` must be a valid `CUkernel`, and its library must stay loaded for as long as
    /// the result, or any launch of it, is used.
    #[doc(alias = "cuKernelGetName")]
    pub unsafe fn from_raw(handle: *mut std::ffi::c_void) -> Result<Kernel> {
        let driver = crate::driver::driver()?;
        let handle = KernelHandle(handle);
        let name = driver.kernel_get_name(handle)?;
        Ok(Kernel {
            inner: KernelInner::new(handle, name, driver)?,
            object: None,
        })
    }

    /// The kernel's symbol name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The most threads per block on `device`, cached (the launch check).
    #[inline]
    pub(crate) fn max_threads_per_block(&self, device: Device) -> Result<u32> {
        let word = self.inner.launch_limit.load(Ordering::Relaxed);
        if word >> 32 == device.ordinal() as u64 + 1 {
            return Ok(word as u32);
        }
        self.read_max_threads_per_block(device)
    }

    /// [`Kernel::max_threads_per_block`] on a device other than the last one's (or the
    /// first time): from the device's entry, which then becomes the last one.
    #[cold]
    #[inline(never)]
    fn read_max_threads_per_block(&self, device: Device) -> Result<u32> {
        let threads = match self.per_device(device)?.attributes.get() {
            Some(attributes) => attributes.max_threads_per_block,
            None => self.attributes(device)?.max_threads_per_block,
        };
        let word = (device.ordinal() as u64 + 1) << 32 | u64::from(threads);
        self.inner.launch_limit.store(word, Ordering::Relaxed);
        Ok(threads)
    }

    /// The raw `CUkernel`, for calling other CUDA libraries or the driver directly; valid
    /// while this value (or its object code) lives.
    pub fn as_raw(&self) -> *mut std::ffi::c_void {
        self.inner.handle.0
    }

    pub(crate) fn handle(&self) -> KernelHandle {
        self.inner.handle
    }

    /// The raw `CUfunction` of this kernel in `context` (`cuKernelGetFunction`, with
    /// `context` made current for the call and the caller's context restored; for a primary
    /// context, asked once per device and cached), for code written against `CUfunction`
    /// (`cuLaunchKernel`, `cuFuncGetAttribute`, the occupancy calls). It stays valid while
    /// this kernel (or its object code) lives and `context` does.
    ///
    /// ```no_run
    /// use cuda_core::{Device, ObjectCode};
    ///
    /// let context = Device::new(0)?.primary_context()?;
    /// let kernel = ObjectCode::from_file("kernels.cubin", None)?.get_kernel("scale")?;
    /// let function = kernel.as_raw_function(&context)?; // a CUfunction
    /// assert_eq!(kernel.as_raw_function(&context)?, function);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuKernelGetFunction", "CUfunction"))]
    pub fn as_raw_function(&self, context: &Context) -> Result<*mut std::ffi::c_void> {
        if context.is_primary() {
            return Ok(self.function(context.device())?.0);
        }
        let handle = self.inner.handle;
        Ok(context
            .with_current(|driver| driver.kernel_get_function(handle))?
            .0)
    }

    fn per_device(&self, device: Device) -> Result<&PerDevice> {
        self.inner
            .per_device
            .get(device.ordinal())
            .ok_or_else(|| Error::InvalidArgument {
                name: "device",
                reason: format!("device {} does not exist", device.ordinal()),
            })
    }

    /// The kernel's attributes on `device` (read once per device, then cached).
    #[inline]
    #[doc(alias = "cuKernelGetAttribute")]
    pub fn attributes(&self, device: Device) -> Result<KernelAttributes> {
        let slot = self.per_device(device)?;
        if let Some(attributes) = slot.attributes.get() {
            return Ok(KernelAttributes {
                max_dynamic_shared_size_bytes: self.max_dynamic_shared(device)?,
                ..*attributes
            });
        }
        let get = |code| -> Result<u32> {
            let value =
                self.inner
                    .driver
                    .kernel_get_attribute(code, self.inner.handle, device.handle())?;
            Ok(value.max(0) as u32)
        };
        let attributes = KernelAttributes {
            max_threads_per_block: get(attr::MAX_THREADS_PER_BLOCK)?,
            num_regs: get(attr::NUM_REGS)?,
            shared_size_bytes: get(attr::SHARED_SIZE_BYTES)?,
            const_size_bytes: get(attr::CONST_SIZE_BYTES)?,
            local_size_bytes: get(attr::LOCAL_SIZE_BYTES)?,
            ptx_version: get(attr::PTX_VERSION)?,
            binary_version: get(attr::BINARY_VERSION)?,
            max_dynamic_shared_size_bytes: 0,
        };
        let attributes = *slot.attributes.get_or_init(|| attributes);
        Ok(KernelAttributes {
            max_dynamic_shared_size_bytes: self.max_dynamic_shared(device)?,
            ..attributes
        })
    }

    /// Raises (or lowers) the dynamic shared memory a launch on `device` may ask for
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    #[doc(alias = "cuKernelSetAttribute")]
    pub fn set_max_dynamic_shared_memory(&self, device: Device, bytes: u32) -> Result<()> {
        let value = i32::try_from(bytes).map_err(|_| Error::InvalidArgument {
            name: "bytes",
            reason: format!("{bytes} is more than any device has"),
        })?;
        self.inner.driver.kernel_set_attribute(
            attr::MAX_DYNAMIC_SHARED_SIZE_BYTES,
            value,
            self.inner.handle,
            device.handle(),
        )?;
        self.per_device(device)?
            .max_dynamic_shared
            .store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// The dynamic shared memory a launch on `device` may ask for, cached.
    #[inline]
    pub(crate) fn max_dynamic_shared(&self, device: Device) -> Result<u32> {
        let slot = self.per_device(device)?;
        let cached = slot.max_dynamic_shared.load(Ordering::Relaxed);
        if cached != UNREAD {
            return Ok(cached);
        }
        let value = self.inner.driver.kernel_get_attribute(
            attr::MAX_DYNAMIC_SHARED_SIZE_BYTES,
            self.inner.handle,
            device.handle(),
        )?;
        let value = value.max(0) as u32;
        // Keep a value a concurrent setter stored.
        let _ = slot.max_dynamic_shared.compare_exchange(
            UNREAD,
            value,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        Ok(slot.max_dynamic_shared.load(Ordering::Relaxed))
    }

    /// The kernel's parameters, in order: offset and size of each (`cuKernelGetParamInfo`,
    /// CUDA 12.4 and newer drivers). Their count comes from `cuKernelGetParamCount` where the
    /// driver has it (13.1 and newer), else from the image (a cubin's `.nv.info` records, a
    /// PTX `.entry`), so no call asks past the last parameter; only for a kernel of neither
    /// (wrapped by [`Kernel::from_raw`], or from a fatbin), or from PTX with a preprocessor
    /// directive (`#define`: the text is not expanded, so its count is not trusted), on an
    /// older driver is the count found by asking until the driver answers "past the last", a
    /// failing call that compute-sanitizer reports. Read once, then cached; the first read is made in a
    /// primary context, which the driver wants for it (the layout is the same on every
    /// device): the calling thread's current device's, else one this process uses already,
    /// so that no device's context is made for the question; device 0's only where the
    /// process uses none yet.
    #[doc(alias = "cuKernelGetParamInfo")]
    #[inline]
    pub fn params(&self) -> Result<&[ParamInfo]> {
        if let Some(params) = self.inner.params.get() {
            return Ok(params);
        }
        self.read_params(Device::in_use()?)
    }

    /// [`Kernel::params`], read (the first time) in `device`'s primary context: what launches
    /// and occupancy queries on `device` use, so that they never touch another device's
    /// context.
    #[inline]
    pub(crate) fn params_on(&self, device: Device) -> Result<&[ParamInfo]> {
        if let Some(params) = self.inner.params.get() {
            return Ok(params);
        }
        self.read_params(device)
    }

    /// The first read of the parameters, out of line: launches check the cached answer.
    #[cold]
    #[inline(never)]
    fn read_params(&self, device: Device) -> Result<&[ParamInfo]> {
        // The driver wants a current context for this query (seen on the 580 driver: an
        // invalid-context error otherwise); the layout is the same in every context.
        let handle = self.inner.handle;
        let params = device.primary_context()?.with_current(|driver| {
            // The count first, so that no call asks past the last parameter (a failing call
            // that compute-sanitizer would report as the caller's): from the driver where it
            // has cuKernelGetParamCount (13.1+), else from the image the kernel came from.
            let count = match driver.kernel_get_param_count(handle) {
                Ok(count) => Some(count),
                Err(Error::NotSupported { .. }) => self.object.as_ref().and_then(|code| {
                    crate::image::param_count(code.code_type(), code.code(), &self.inner.name)
                }),
                Err(e) => return Err(e),
            };
            let mut params = Vec::with_capacity(count.unwrap_or(0));
            // Without a count (a kernel wrapped by from_raw, a fatbin's, on a driver before
            // 13.1), asking until the driver answers "past the last" is the only way.
            while count.is_none_or(|count| params.len() < count) {
                match driver.kernel_get_param_info(handle, params.len())? {
                    Some((offset, size)) => params.push(ParamInfo { offset, size }),
                    None => break,
                }
            }
            Ok(params)
        })?;
        Ok(self.inner.params.get_or_init(|| params.into_boxed_slice()))
    }

    /// The kernel as a `CUfunction` of `device`'s primary context, for the occupancy API.
    fn function(&self, device: Device) -> Result<FunctionHandle> {
        let slot = self.per_device(device)?;
        if let Some(function) = slot.function.get() {
            return Ok(*function);
        }
        let handle = self.inner.handle;
        let function = device
            .primary_context()?
            .with_current(|driver| driver.kernel_get_function(handle))?;
        Ok(*slot.function.get_or_init(|| function))
    }

    /// One attribute on `device`, read from the driver now (`cuKernelGetAttribute`).
    #[doc(alias = "cuKernelGetAttribute")]
    pub fn attribute(&self, device: Device, attribute: KernelAttribute) -> Result<i32> {
        self.per_device(device)?;
        self.inner
            .driver
            .kernel_get_attribute(attribute.code(), self.inner.handle, device.handle())
    }

    fn set(&self, device: Device, attribute: KernelAttribute, value: i32) -> Result<()> {
        self.per_device(device)?;
        self.inner.driver.kernel_set_attribute(
            attribute.code(),
            value,
            self.inner.handle,
            device.handle(),
        )
    }

    /// Sets this kernel's preference between L1 cache and shared memory on `device`
    /// (`cuKernelSetCacheConfig`), which wins over its context's
    /// ([`Context::set_cache_config`]). A hint: the driver may choose otherwise, and keeps
    /// it without effect on devices whose split is fixed.
    ///
    /// ```no_run
    /// use cuda_core::{CacheConfig, Device, ObjectCode};
    ///
    /// let device = Device::new(0)?;
    /// let kernel = ObjectCode::from_file("kernels.cubin", None)?.get_kernel("scale")?;
    /// // cudaFuncSetCacheConfig(scale, cudaFuncCachePreferL1)
    /// kernel.set_cache_config(device, CacheConfig::PreferL1)?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias(
        "cuKernelSetCacheConfig",
        "cuFuncSetCacheConfig",
        "cudaFuncSetCacheConfig"
    ))]
    pub fn set_cache_config(
        &self,
        device: Device,
        config: crate::context::CacheConfig,
    ) -> Result<()> {
        self.per_device(device)?;
        self.inner
            .driver
            .kernel_set_cache_config(self.inner.handle, config.code(), device.handle())
    }

    /// Prefers `percent` of the unified L1/shared memory as shared memory on `device` (`None`:
    /// no preference); more than 100 is refused. A hint: the driver may choose otherwise.
    #[doc(alias = "CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT")]
    pub fn set_preferred_shared_memory_carveout(
        &self,
        device: Device,
        percent: Option<u8>,
    ) -> Result<()> {
        let value = match percent {
            None => -1,
            Some(p) if p <= 100 => i32::from(p),
            Some(p) => {
                return Err(Error::InvalidArgument {
                    name: "percent",
                    reason: format!("{p} is more than 100%"),
                })
            }
        };
        self.set(
            device,
            KernelAttribute::PreferredSharedMemoryCarveout,
            value,
        )
    }

    /// Requires every launch on `device` to use clusters of `shape` (each dimension at least
    /// 1). A kernel compiled with `__cluster_dims__` already has one, and the driver refuses
    /// a change (`CUDA_ERROR_NOT_PERMITTED`).
    #[doc(alias = "CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH")]
    pub fn set_required_cluster_shape(&self, device: Device, shape: [u32; 3]) -> Result<()> {
        let dims = shape.map(i32::try_from);
        let [Ok(width), Ok(height), Ok(depth)] = dims else {
            return Err(Error::InvalidArgument {
                name: "shape",
                reason: format!("{shape:?} has a dimension past i32"),
            });
        };
        if shape.contains(&0) {
            return Err(Error::InvalidArgument {
                name: "shape",
                reason: format!("{shape:?} has a zero dimension"),
            });
        }
        self.set(device, KernelAttribute::RequiredClusterWidth, width)?;
        self.set(device, KernelAttribute::RequiredClusterHeight, height)?;
        self.set(device, KernelAttribute::RequiredClusterDepth, depth)
    }

    /// Allows clusters of more than the portable 8 blocks on `device` (up to the device's
    /// own limit, 16 on an H100 or H200).
    #[doc(alias = "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED")]
    pub fn set_non_portable_cluster_size_allowed(
        &self,
        device: Device,
        allowed: bool,
    ) -> Result<()> {
        self.set(
            device,
            KernelAttribute::NonPortableClusterSizeAllowed,
            i32::from(allowed),
        )
    }

    /// How the blocks of this kernel's clusters are spread on `device`.
    #[doc(alias = "CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE")]
    pub fn set_cluster_scheduling_policy(
        &self,
        device: Device,
        policy: ClusterSchedulingPolicy,
    ) -> Result<()> {
        self.set(
            device,
            KernelAttribute::ClusterSchedulingPolicyPreference,
            policy.code() as i32,
        )
    }

    /// The dynamic shared memory each block can have when `blocks_per_sm` blocks of
    /// `block_size` threads share an SM of `device` (`cuOccupancyAvailableDynamicSMemPerBlock`).
    #[doc(alias = "cuOccupancyAvailableDynamicSMemPerBlock")]
    pub fn available_dynamic_shared_memory(
        &self,
        device: Device,
        blocks_per_sm: u32,
        block_size: u32,
    ) -> Result<usize> {
        let function = self.function(device)?;
        let blocks = i32::try_from(blocks_per_sm).unwrap_or(i32::MAX);
        let block_size = i32::try_from(block_size).unwrap_or(i32::MAX);
        device.primary_context()?.with_current(|driver| {
            driver.occupancy_available_dynamic_smem(function, blocks, block_size)
        })
    }

    /// The largest cluster a launch of `config`'s grid, block and shared memory could use on
    /// `stream`'s device (`cuOccupancyMaxPotentialClusterSize`; the cluster shape in `config`
    /// is not read).
    #[doc(alias = "cuOccupancyMaxPotentialClusterSize")]
    pub fn max_potential_cluster_size(
        &self,
        config: &LaunchConfig,
        stream: &Stream,
    ) -> Result<u32> {
        let function = self.function(stream.device())?;
        let params = occupancy_shape(config, None);
        let size = stream.device().primary_context()?.with_current(|driver| {
            driver.occupancy_max_potential_cluster_size(function, &params)
        })?;
        Ok(size.max(0) as u32)
    }

    /// How many blocks of `block_size` threads, each with `dynamic_shared_memory` bytes, can
    /// be resident on one SM of `device` at once.
    #[doc(alias = "cuOccupancyMaxActiveBlocksPerMultiprocessor")]
    pub fn max_active_blocks_per_sm(
        &self,
        device: Device,
        block_size: u32,
        dynamic_shared_memory: usize,
    ) -> Result<u32> {
        let function = self.function(device)?;
        let block_size = i32::try_from(block_size).unwrap_or(i32::MAX);
        // The occupancy API wants the function's context current.
        let blocks = device.primary_context()?.with_current(|driver| {
            driver.occupancy_max_active_blocks(function, block_size, dynamic_shared_memory)
        })?;
        Ok(blocks.max(0) as u32)
    }

    /// The block size that maximises occupancy on `device`, and the least grid that reaches
    /// it: `(min_grid_size, block_size)`. `block_size_limit` 0 means no limit.
    #[doc(alias = "cuOccupancyMaxPotentialBlockSize")]
    pub fn max_potential_block_size(
        &self,
        device: Device,
        dynamic_shared_memory: usize,
        block_size_limit: u32,
    ) -> Result<(u32, u32)> {
        let function = self.function(device)?;
        let limit = i32::try_from(block_size_limit).unwrap_or(i32::MAX);
        let (grid, block) = device.primary_context()?.with_current(|driver| {
            driver.occupancy_max_potential_block_size(function, dynamic_shared_memory, limit)
        })?;
        Ok((grid.max(0) as u32, block.max(0) as u32))
    }

    /// How many clusters of `config`'s shape can be resident at once on `stream`'s device
    /// (`cuOccupancyMaxActiveClusters`); `config` must name a cluster.
    #[doc(alias = "cuOccupancyMaxActiveClusters")]
    pub fn max_active_clusters(&self, config: &LaunchConfig, stream: &Stream) -> Result<u32> {
        let Some(cluster) = config.cluster else {
            return Err(Error::InvalidArgument {
                name: "config.cluster",
                reason: "max_active_clusters needs a cluster shape".to_owned(),
            });
        };
        let function = self.function(stream.device())?;
        let params = occupancy_shape(config, Some(cluster));
        let clusters = stream
            .device()
            .primary_context()?
            .with_current(|driver| driver.occupancy_max_active_clusters(function, &params))?;
        Ok(clusters.max(0) as u32)
    }
}

/// The launch shape the occupancy calls read: `config`'s grid, block and shared memory, with
/// `cluster`, on no stream and with no other attribute.
fn occupancy_shape(config: &LaunchConfig, cluster: Option<[u32; 3]>) -> LaunchParams {
    LaunchParams {
        grid: config.grid,
        block: config.block,
        shared_mem_bytes: config.shared_memory_bytes,
        stream: crate::driver::StreamHandle::NULL,
        cluster,
        cooperative: false,
        extras: crate::driver::LaunchExtras::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::KernelAttribute;

    #[test]
    fn attribute_codes_are_the_headers() {
        use cuda_sys12::CUfunction_attribute as C12;
        use cuda_sys13::CUfunction_attribute as C13;
        let codes12 = [
            C12::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            C12::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            C12::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
            C12::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            C12::CU_FUNC_ATTRIBUTE_NUM_REGS,
            C12::CU_FUNC_ATTRIBUTE_PTX_VERSION,
            C12::CU_FUNC_ATTRIBUTE_BINARY_VERSION,
            C12::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
            C12::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            C12::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            C12::CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
            C12::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
            C12::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
            C12::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
            C12::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            C12::CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        ];
        let codes13 = [
            C13::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            C13::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            C13::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
            C13::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            C13::CU_FUNC_ATTRIBUTE_NUM_REGS,
            C13::CU_FUNC_ATTRIBUTE_PTX_VERSION,
            C13::CU_FUNC_ATTRIBUTE_BINARY_VERSION,
            C13::CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
            C13::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            C13::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            C13::CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
            C13::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
            C13::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
            C13::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
            C13::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            C13::CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        ];
        for ((attribute, c12), c13) in KernelAttribute::ALL.iter().zip(codes12).zip(codes13) {
            assert_eq!(
                attribute.code() as u32,
                c12.0,
                "{attribute:?} (12.9 header)"
            );
            assert_eq!(attribute.code() as u32, c13.0, "{attribute:?} (13 header)");
        }
    }
}
