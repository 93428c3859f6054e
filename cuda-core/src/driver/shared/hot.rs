//! [`HotPath`](crate::driver::api::HotPath) for both ABIs, and the launch-configuration helpers
//! that `cuLaunchKernelEx` and `cuOccupancyMaxActiveClusters` share.

use super::*;

/// The most launch attributes one launch carries.
pub(super) const MAX_ATTRIBUTES: usize = 9;

/// Room for a launch's attributes, written from the front.
pub(super) type Attributes = [std::mem::MaybeUninit<sys::CUlaunchAttribute>; MAX_ATTRIBUTES];

/// An empty [`Attributes`], for a caller's stack: nothing written, so nothing copied.
pub(super) const NO_ATTRIBUTES: Attributes =
    [const { std::mem::MaybeUninit::uninit() }; MAX_ATTRIBUTES];

/// The launch attributes a launch asks for, and how many: cluster dimensions,
/// cooperative, programmatic stream serialization, priority, memory synchronisation
/// domain, cluster scheduling policy, preferred cluster, access-policy window,
/// programmatic event.
///
/// Only the first `count` entries of `attributes` are written (the driver reads no more),
/// each zeroed before its fields are set. The caller's room is written in place: returned by
/// value, the room (9 attributes of 72 bytes) was copied on every attributed launch.
#[inline]
fn launch_attributes(p: &LaunchParams, attributes: &mut Attributes) -> u32 {
    use sys::CUlaunchAttributeID as Id;
    let mut count = 0;
    // The next attribute, zeroed, with its id set.
    #[inline(always)]
    fn push<'a>(
        attributes: &'a mut Attributes,
        count: &mut usize,
        id: sys::CUlaunchAttributeID,
    ) -> &'a mut sys::CUlaunchAttributeValue {
        let attribute = attributes[*count].write(
            // SAFETY: the attribute struct is integers and a union of plain data;
            // all-zero is a valid value.
            unsafe { std::mem::zeroed() },
        );
        *count += 1;
        attribute.id = id;
        &mut attribute.value
    }
    if let Some([x, y, z]) = p.cluster {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        );
        value.clusterDim.x = x;
        value.clusterDim.y = y;
        value.clusterDim.z = z;
    }
    if p.cooperative {
        let value = push(attributes, &mut count, Id::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
        value.cooperative = 1;
    }
    let extras = p.extras;
    if extras.programmatic_serialization {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        );
        value.programmaticStreamSerializationAllowed = 1;
    }
    if let Some(priority) = extras.priority {
        let value = push(attributes, &mut count, Id::CU_LAUNCH_ATTRIBUTE_PRIORITY);
        value.priority = priority;
    }
    if let Some(domain) = extras.mem_sync_domain {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
        );
        value.memSyncDomain = sys::CUlaunchMemSyncDomain(domain);
    }
    if let Some(policy) = extras.cluster_scheduling_policy {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
        );
        value.clusterSchedulingPolicyPreference = sys::CUclusterSchedulingPolicy(policy);
    }
    if let Some([x, y, z]) = extras.preferred_cluster {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
        );
        value.preferredClusterDim.x = x;
        value.preferredClusterDim.y = y;
        value.preferredClusterDim.z = z;
    }
    if let Some(window) = extras.access_policy_window {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
        );
        value.accessPolicyWindow = sys::CUaccessPolicyWindow {
            base_ptr: window.base as usize as *mut std::ffi::c_void,
            num_bytes: window.bytes,
            hitRatio: f32::from_bits(window.hit_ratio_bits),
            hitProp: sys::CUaccessProperty(window.hit),
            missProp: sys::CUaccessProperty(window.miss),
        };
    }
    if let Some((event, at_block_start)) = extras.programmatic_event {
        let value = push(
            attributes,
            &mut count,
            Id::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT,
        );
        value.programmaticEvent.event = event.0.cast();
        value.programmaticEvent.flags = 0;
        value.programmaticEvent.triggerAtBlockStart = i32::from(at_block_start);
    }
    count as u32
}

/// The `CUlaunchConfig` of a launch, its attributes written into `attributes` (the caller's
/// room, [`NO_ATTRIBUTES`] on its stack) and pointed at.
#[inline]
pub(super) fn launch_config(p: &LaunchParams, attributes: &mut Attributes) -> sys::CUlaunchConfig {
    let count = launch_attributes(p, attributes);
    sys::CUlaunchConfig {
        gridDimX: p.grid[0],
        gridDimY: p.grid[1],
        gridDimZ: p.grid[2],
        blockDimX: p.block[0],
        blockDimY: p.block[1],
        blockDimZ: p.block[2],
        sharedMemBytes: p.shared_mem_bytes,
        hStream: p.stream.0.cast(),
        // The first `count` entries are written (`launch_attributes`).
        attrs: attributes.as_mut_ptr().cast(),
        numAttrs: count,
    }
}

impl crate::driver::api::HotPath for Drv {
    #[inline]
    fn ctx_current_or_none(&self) -> Option<ContextHandle> {
        let f = self.table.cuCtxGetCurrent?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: a writable out-pointer.
        let status = unsafe { f(&mut ctx) };
        (status == CUresult::CUDA_SUCCESS).then_some(ContextHandle(ctx.cast()))
    }

    fn event_create(&self, flags: u32) -> Result<EventHandle> {
        let mut event = std::ptr::null_mut();
        call!(self.cuEventCreate(&mut event, flags))?;
        Ok(EventHandle(event.cast()))
    }

    fn event_destroy(&self, event: EventHandle) -> Result<()> {
        call!(self.cuEventDestroy(event.0.cast()))
    }

    fn event_record(&self, event: EventHandle, stream: StreamHandle) -> Result<()> {
        call!(self.cuEventRecord(event.0.cast(), stream.0.cast()))
    }

    fn event_query(&self, event: EventHandle) -> Result<bool> {
        let f = crate::driver::shared::function!(self.cuEventQuery);
        // SAFETY: the handle is passed by value; the driver validates it.
        let status = unsafe { f(event.0.cast()) };
        match ready(status) {
            Some(done) => Ok(done),
            None => Err(self.error(status, "cuEventQuery")),
        }
    }

    fn stream_synchronize(&self, stream: StreamHandle) -> Result<()> {
        call!(self.cuStreamSynchronize(stream.0.cast()))
    }

    unsafe fn launch_kernel(
        &self,
        kernel: KernelHandle,
        p: &LaunchParams,
        args: *mut *mut std::ffi::c_void,
    ) -> Result<()> {
        call!(self.cuLaunchKernel(
            kernel.0.cast(),
            p.grid[0],
            p.grid[1],
            p.grid[2],
            p.block[0],
            p.block[1],
            p.block[2],
            p.shared_mem_bytes,
            p.stream.0.cast(),
            args,
            std::ptr::null_mut()
        ))
    }

    unsafe fn launch_kernel_ex(
        &self,
        kernel: KernelHandle,
        params: &LaunchParams,
        args: *mut *mut std::ffi::c_void,
    ) -> Result<()> {
        let mut attributes = NO_ATTRIBUTES;
        let config = launch_config(params, &mut attributes);
        call!(self.cuLaunchKernelEx(&config, kernel.0.cast(), args, std::ptr::null_mut()))
    }

    fn mem_alloc_from_pool_async(
        &self,
        size: usize,
        pool: PoolHandle,
        stream: StreamHandle,
    ) -> Result<DevicePtr> {
        let mut ptr = 0;
        call!(self.cuMemAllocFromPoolAsync(&mut ptr, size, pool.0.cast(), stream.0.cast()))?;
        Ok(ptr)
    }

    fn mem_free_async(&self, ptr: DevicePtr, stream: StreamHandle) -> Result<()> {
        call!(self.cuMemFreeAsync(ptr, stream.0.cast()))
    }

    fn memcpy_htod_async(
        &self,
        dst: DevicePtr,
        src: *const std::ffi::c_void,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemcpyHtoDAsync(dst, src, size, stream.0.cast()))
    }

    fn memcpy_dtoh_async(
        &self,
        dst: *mut std::ffi::c_void,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemcpyDtoHAsync(dst, src, size, stream.0.cast()))
    }

    fn memcpy_async(
        &self,
        dst: DevicePtr,
        src: DevicePtr,
        size: usize,
        stream: StreamHandle,
    ) -> Result<()> {
        call!(self.cuMemcpyAsync(dst, src, size, stream.0.cast()))
    }
}
