//! Memory and semaphores another API made (`cuImportExternalMemory`,
//! `cuImportExternalSemaphore`, their stream-ordered signals and waits) and OpenGL objects
//! registered with CUDA (`cuGraphicsGLRegister*`, of `cudaGL.h`, and the `cuGraphics*` map
//! calls of `cuda.h`).

use crate::driver::api::ArrayHandle;
use crate::driver::handles::{
    DevicePtr, ExternalMemoryHandle, ExternalSemaphoreHandle, GraphicsHandle, StreamHandle,
};
use crate::error::Result;

/// `CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD`.
pub(crate) const EXTERNAL_MEMORY_OPAQUE_FD: u32 = 1;
/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD`: a binary semaphore.
pub(crate) const EXTERNAL_SEMAPHORE_OPAQUE_FD: u32 = 1;
/// `CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD`.
pub(crate) const EXTERNAL_SEMAPHORE_TIMELINE_FD: u32 = 9;

/// Importing, mapping and ordering another API's memory and semaphores; OpenGL registration.
pub(crate) trait InteropApi {
    /// `cuImportExternalMemory` of `fd` (a handle of type `handle_type`), `size` bytes,
    /// `CUDA_EXTERNAL_MEMORY_DEDICATED` where `dedicated`, in the current context. On success
    /// the driver owns `fd`.
    fn import_external_memory(
        &self,
        handle_type: u32,
        fd: i32,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemoryHandle>;
    /// `cuExternalMemoryGetMappedBuffer`: `size` bytes from `offset`, freed by `cuMemFree`.
    fn external_memory_buffer(
        &self,
        memory: ExternalMemoryHandle,
        offset: u64,
        size: u64,
    ) -> Result<DevicePtr>;
    /// `cuDestroyExternalMemory`.
    fn destroy_external_memory(&self, memory: ExternalMemoryHandle) -> Result<()>;
    /// `cuImportExternalSemaphore` of `fd` (a handle of type `handle_type`), in the current
    /// context. On success the driver owns `fd`.
    fn import_external_semaphore(
        &self,
        handle_type: u32,
        fd: i32,
    ) -> Result<ExternalSemaphoreHandle>;
    /// `cuSignalExternalSemaphoresAsync` of one semaphore to `value` (a timeline's; a binary
    /// semaphore ignores it).
    fn signal_external_semaphore(
        &self,
        semaphore: ExternalSemaphoreHandle,
        value: u64,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuWaitExternalSemaphoresAsync` of one semaphore for `value`.
    fn wait_external_semaphore(
        &self,
        semaphore: ExternalSemaphoreHandle,
        value: u64,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuDestroyExternalSemaphore`.
    fn destroy_external_semaphore(&self, semaphore: ExternalSemaphoreHandle) -> Result<()>;
    /// `cuGraphicsGLRegisterBuffer`, in the current context (and the thread's current OpenGL
    /// context).
    fn graphics_gl_register_buffer(&self, buffer: u32, flags: u32) -> Result<GraphicsHandle>;
    /// `cuGraphicsGLRegisterImage`.
    fn graphics_gl_register_image(
        &self,
        image: u32,
        target: u32,
        flags: u32,
    ) -> Result<GraphicsHandle>;
    /// `cuGraphicsUnregisterResource`.
    fn graphics_unregister(&self, resource: GraphicsHandle) -> Result<()>;
    /// `cuGraphicsMapResources` of one resource.
    fn graphics_map(&self, resource: GraphicsHandle, stream: StreamHandle) -> Result<()>;
    /// `cuGraphicsUnmapResources` of one resource.
    fn graphics_unmap(&self, resource: GraphicsHandle, stream: StreamHandle) -> Result<()>;
    /// `cuGraphicsResourceGetMappedPointer`: the address and size of a mapped buffer.
    fn graphics_mapped_pointer(&self, resource: GraphicsHandle) -> Result<(DevicePtr, usize)>;
    /// `cuGraphicsSubResourceGetMappedArray`: a mapped image's array of `index` and `level`.
    fn graphics_mapped_array(
        &self,
        resource: GraphicsHandle,
        index: u32,
        level: u32,
    ) -> Result<ArrayHandle>;
}
