//! [`InteropApi`](crate::driver::api::InteropApi) for both ABIs: the external memory and
//! semaphore structures are laid out alike in both headers. The two OpenGL registrations are
//! declared in `cudaGL.h`, not `cuda.h`, so they are not in the generated table: the driver
//! struct loads them by name beside it (`gl`: buffer, then image).

use super::*;
use crate::driver::api::ArrayHandle;
use crate::driver::handles::{ExternalMemoryHandle, ExternalSemaphoreHandle, GraphicsHandle};

impl crate::driver::api::InteropApi for Drv {
    fn import_external_memory(
        &self,
        handle_type: u32,
        fd: i32,
        size: u64,
        dedicated: bool,
    ) -> Result<ExternalMemoryHandle> {
        // SAFETY: a plain C structure (integers and a union of a descriptor and pointers), for
        // which all zeroes is the "nothing set" the header asks reserved fields to be.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = sys::CUexternalMemoryHandleType(handle_type);
        desc.handle.fd = fd;
        desc.size = size;
        desc.flags = u32::from(dedicated);
        let mut memory = std::ptr::null_mut();
        call!(self.cuImportExternalMemory(&mut memory, &desc))?;
        Ok(ExternalMemoryHandle(memory.cast()))
    }

    fn external_memory_buffer(
        &self,
        memory: ExternalMemoryHandle,
        offset: u64,
        size: u64,
    ) -> Result<DevicePtr> {
        // SAFETY: integers only; zero is each reserved field's required value.
        let mut desc: sys::CUDA_EXTERNAL_MEMORY_BUFFER_DESC = unsafe { std::mem::zeroed() };
        desc.offset = offset;
        desc.size = size;
        let mut ptr = 0;
        call!(self.cuExternalMemoryGetMappedBuffer(&mut ptr, memory.0.cast(), &desc))?;
        Ok(ptr)
    }

    fn destroy_external_memory(&self, memory: ExternalMemoryHandle) -> Result<()> {
        call!(self.cuDestroyExternalMemory(memory.0.cast()))
    }

    fn import_external_semaphore(
        &self,
        handle_type: u32,
        fd: i32,
    ) -> Result<ExternalSemaphoreHandle> {
        // SAFETY: as for the memory's descriptor.
        let mut desc: sys::CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC = unsafe { std::mem::zeroed() };
        desc.type_ = sys::CUexternalSemaphoreHandleType(handle_type);
        desc.handle.fd = fd;
        let mut semaphore = std::ptr::null_mut();
        call!(self.cuImportExternalSemaphore(&mut semaphore, &desc))?;
        Ok(ExternalSemaphoreHandle(semaphore.cast()))
    }

    fn signal_external_semaphore(
        &self,
        semaphore: ExternalSemaphoreHandle,
        value: u64,
        stream: StreamHandle,
    ) -> Result<()> {
        // SAFETY: integers and a union of a pointer and an integer; zero is "none".
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        let handle: sys::CUexternalSemaphore = semaphore.0.cast();
        call!(self.cuSignalExternalSemaphoresAsync(&handle, &params, 1, stream.0.cast()))
    }

    fn wait_external_semaphore(
        &self,
        semaphore: ExternalSemaphoreHandle,
        value: u64,
        stream: StreamHandle,
    ) -> Result<()> {
        // SAFETY: as for the signal's parameters.
        let mut params: sys::CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS = unsafe { std::mem::zeroed() };
        params.params.fence.value = value;
        let handle: sys::CUexternalSemaphore = semaphore.0.cast();
        call!(self.cuWaitExternalSemaphoresAsync(&handle, &params, 1, stream.0.cast()))
    }

    fn destroy_external_semaphore(&self, semaphore: ExternalSemaphoreHandle) -> Result<()> {
        call!(self.cuDestroyExternalSemaphore(semaphore.0.cast()))
    }

    fn graphics_gl_register_buffer(&self, buffer: u32, flags: u32) -> Result<GraphicsHandle> {
        let Some(register) = self.gl.register_buffer else {
            return Err(self.missing("cuGraphicsGLRegisterBuffer"));
        };
        let mut resource = std::ptr::null_mut();
        // SAFETY: the export's signature is cudaGL.h's; the out-pointer is writable.
        let status = unsafe { register(&mut resource, buffer, flags) };
        self.check(status, "cuGraphicsGLRegisterBuffer")?;
        Ok(GraphicsHandle(resource.cast()))
    }

    fn graphics_gl_register_image(
        &self,
        image: u32,
        target: u32,
        flags: u32,
    ) -> Result<GraphicsHandle> {
        let Some(register) = self.gl.register_image else {
            return Err(self.missing("cuGraphicsGLRegisterImage"));
        };
        let mut resource = std::ptr::null_mut();
        // SAFETY: the export's signature is cudaGL.h's; the out-pointer is writable.
        let status = unsafe { register(&mut resource, image, target, flags) };
        self.check(status, "cuGraphicsGLRegisterImage")?;
        Ok(GraphicsHandle(resource.cast()))
    }

    fn graphics_unregister(&self, resource: GraphicsHandle) -> Result<()> {
        call!(self.cuGraphicsUnregisterResource(resource.0.cast()))
    }

    fn graphics_map(&self, resource: GraphicsHandle, stream: StreamHandle) -> Result<()> {
        let mut one: sys::CUgraphicsResource = resource.0.cast();
        call!(self.cuGraphicsMapResources(1, &mut one, stream.0.cast()))
    }

    fn graphics_unmap(&self, resource: GraphicsHandle, stream: StreamHandle) -> Result<()> {
        let mut one: sys::CUgraphicsResource = resource.0.cast();
        call!(self.cuGraphicsUnmapResources(1, &mut one, stream.0.cast()))
    }

    fn graphics_mapped_pointer(&self, resource: GraphicsHandle) -> Result<(DevicePtr, usize)> {
        let mut ptr = 0;
        let mut size = 0;
        call!(self.cuGraphicsResourceGetMappedPointer(&mut ptr, &mut size, resource.0.cast()))?;
        Ok((ptr, size))
    }

    fn graphics_mapped_array(
        &self,
        resource: GraphicsHandle,
        index: u32,
        level: u32,
    ) -> Result<ArrayHandle> {
        let mut array = std::ptr::null_mut();
        call!(self.cuGraphicsSubResourceGetMappedArray(
            &mut array,
            resource.0.cast(),
            index,
            level
        ))?;
        Ok(ArrayHandle(array.cast()))
    }
}
