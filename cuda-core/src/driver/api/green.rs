//! Device resources and green contexts.

use crate::driver::handles::{
    ContextHandle, DevResource, DeviceHandle, GreenContextHandle, SmInfo, StreamHandle,
    WorkqueueInfo,
};
use crate::error::Result;

/// SM resources and green contexts.
pub(crate) trait GreenContextApi {
    /// `cuDeviceGetDevResource` of the SMs.
    fn device_get_sm_resource(&self, device: DeviceHandle) -> Result<DevResource>;
    /// `cuCtxGetDevResource` of the SMs.
    fn ctx_get_sm_resource(&self, ctx: ContextHandle) -> Result<DevResource>;
    /// Reads an SM resource's fields.
    fn sm_resource_info(&self, resource: &DevResource) -> SmInfo;
    /// `cuDevSmResourceSplitByCount`: fills `groups` (as many as it holds, or fewer) with
    /// `min_count` SMs each; returns how many groups and the remainder.
    fn sm_resource_split_by_count(
        &self,
        input: &DevResource,
        groups: &mut [DevResource],
        flags: u32,
        min_count: u32,
    ) -> Result<(usize, DevResource)>;
    /// `cuDevResourceGenerateDesc` then `cuGreenCtxCreate` (with its default stream) then
    /// `cuCtxFromGreenCtx`.
    fn green_ctx_create(
        &self,
        resources: &[DevResource],
        device: DeviceHandle,
    ) -> Result<(GreenContextHandle, ContextHandle)>;
    /// `cuDeviceGetDevResource` of the work-queue configuration (13 ABI, 13.1+ drivers).
    fn device_get_workqueue_config(&self, device: DeviceHandle) -> Result<WorkqueueInfo>;
    /// `cuCtxGetDevResource` of the context's work queue (13 ABI, 13.1+ drivers).
    fn ctx_get_workqueue(&self, ctx: ContextHandle) -> Result<DevResource>;
    /// A work-queue configuration resource holding `info`, for `green_ctx_create`.
    fn workqueue_config_resource(&self, info: WorkqueueInfo) -> Result<DevResource>;
    /// `cuGreenCtxDestroy`.
    fn green_ctx_destroy(&self, green: GreenContextHandle) -> Result<()>;
    /// `cuGreenCtxStreamCreate`.
    fn green_ctx_stream_create(
        &self,
        green: GreenContextHandle,
        flags: u32,
        priority: i32,
    ) -> Result<StreamHandle>;
}
