//! Memory another library owns, as a [`Buffer`] ([`Buffer::from_foreign`]): a framework's
//! tensor, cudarc's `CudaSlice`, an allocation of a C library.

use std::fmt;
use std::sync::Mutex;

use super::{Buffer, DevicePtr, MemoryResource};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::lifetime::Held;
use crate::stream::Stream;

/// What a buffer over memory the crate did not allocate holds ([`Buffer::from_foreign`], a
/// mapping made a buffer): released once the buffer is freed and its deallocation stream's
/// work is done.
pub(crate) trait Kept: Send {
    /// Whether work on `device`, another than the memory's own, may use the memory.
    fn reachable_from(&self, _device: Device) -> Result<bool> {
        Ok(false)
    }

    /// Releases the memory; the buffer's stream is synchronised already. An error is the
    /// free's.
    fn release(self: Box<Self>) -> Result<()>;
}

/// A caller's owner of foreign memory: released by being dropped.
struct Owner<O>(O);

impl<O: Send> Kept for Owner<O> {
    fn release(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

/// The resource of a buffer over memory it holds a [`Kept`] of.
struct KeptMemory {
    ptr: u64,
    device: Device,
    /// Taken when the buffer is freed.
    kept: Mutex<Option<Box<dyn Kept>>>,
}

impl fmt::Debug for KeptMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeptMemory")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("device", &self.device.ordinal())
            .finish()
    }
}

impl KeptMemory {
    fn kept(&self) -> std::sync::MutexGuard<'_, Option<Box<dyn Kept>>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// SAFETY: its one allocation is the memory its `Kept` holds, which the maker vouches for
// (`Buffer::from_foreign`'s caller; `Mapping::into_buffer`, which checks the device's
// read-write access, unchangeable from then on): memory of `device` that work on its streams
// may use, alive until released. `deallocate` releases it only after the deallocation
// stream's work is done (it synchronises it first, and keeps it for good where that fails);
// other devices are answered by the `Kept`.
unsafe impl MemoryResource for KeptMemory {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "a buffer over memory it did not allocate (Buffer::from_foreign, \
                     Mapping::into_buffer) allocates no other buffers"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        let mut kept = self.kept();
        if ptr.0 != self.ptr || kept.is_none() {
            return Err(Error::InvalidArgument {
                name: "ptr",
                reason: format!("{ptr} is not the live memory of this buffer"),
            });
        }
        if let Err(e) = stream.sync_for_host() {
            // Work may still use the memory: it is kept for good.
            if let Some(kept) = kept.take() {
                std::mem::forget(kept);
            }
            return Err(e);
        }
        match kept.take() {
            Some(kept) => kept.release(),
            None => Ok(()),
        }
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        false
    }

    fn device(&self) -> Option<Device> {
        Some(self.device)
    }

    fn is_accessible_from(&self, device: Device) -> Result<bool> {
        if device == self.device {
            return Ok(true);
        }
        match self.kept().as_ref() {
            Some(kept) => kept.reachable_from(device),
            None => Ok(false),
        }
    }
}

/// A buffer over `size` bytes at `ptr` of `device`'s memory that `kept` holds, freed on
/// `stream`: the caller vouches for the memory as [`Buffer::from_foreign`]'s does.
pub(crate) fn buffer_over(
    ptr: u64,
    size: usize,
    device: Device,
    kept: Box<dyn Kept>,
    stream: &Stream,
) -> Buffer {
    let resource: std::sync::Arc<dyn MemoryResource> = std::sync::Arc::new(KeptMemory {
        ptr,
        device,
        kept: Mutex::new(Some(kept)),
    });
    Buffer::new(ptr, size, Held::counted(resource), stream.clone())
}

impl Buffer {
    /// A buffer over `size` bytes of device memory at `ptr` that another library allocated
    /// and owns, with `owner` (whatever keeps that memory allocated: the other library's
    /// handle to it, or `()`) held until the buffer is freed. The buffer is freed on `stream`
    /// like any buffer (dropped, or [closed](Buffer::close)): its deallocation stream is
    /// synchronised, then `owner` is dropped (where that synchronisation fails, `owner` is
    /// kept for good, never dropped). Copies, fills, slices, views, kernel arguments and graph
    /// nodes then take it as any buffer, in its stream order.
    ///
    /// The other library's own work on the memory is not ordered with the crate's: queue it
    /// on `stream`, or order it yourself (an event recorded there, waited on here).
    ///
    /// A null `ptr` or a zero `size`, and a range that wraps, are refused.
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Buffer, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// // Memory another library allocated: here, a buffer of this crate stands for it.
    /// let theirs = device.memory_resource()?.allocate(1024, &stream)?;
    /// // SAFETY: 1024 bytes of device 0's memory, kept allocated by `theirs` (the owner),
    /// // used by no other work while the buffer lives.
    /// let mut ours = unsafe { Buffer::from_foreign(theirs.ptr(), 1024, device, theirs, &stream) }?;
    /// ours.fill(7u8, &stream)?;
    /// assert!(ours.to_vec::<u8>(&stream)?.iter().all(|&b| b == 7));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    ///
    /// # Safety
    ///
    /// `ptr..ptr + size` is memory of `device` that work queued on streams of `device` may
    /// read and write (device memory, or managed memory), allocated at least until `owner` is
    /// dropped, and not freed by anything else; while the buffer lives, nothing outside the
    /// crate's ordering uses it in a way that its own work could race with (the other library's
    /// work on it is ordered with the buffer's stream by the caller).
    pub unsafe fn from_foreign<O: Send + 'static>(
        ptr: DevicePtr,
        size: usize,
        device: Device,
        owner: O,
        stream: &Stream,
    ) -> Result<Buffer> {
        if ptr.0 == 0 || size == 0 || ptr.0.checked_add(size as u64).is_none() {
            return Err(Error::InvalidArgument {
                name: "ptr",
                reason: format!("{size} bytes at {ptr}: null, empty, or wrapping"),
            });
        }
        Ok(buffer_over(
            ptr.0,
            size,
            device,
            Box::new(Owner(owner)),
            stream,
        ))
    }
}

/// `CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP`: page-locked for every
/// context, and mapped into the devices' address space.
const HOST_REGISTER_FLAGS: u32 = 1 | 2;

/// The memory of a vector, registered with the driver ([`Buffer::from_host_vec`]): the
/// resource of the one buffer over it, which unregisters it, then drops the vector, once the
/// buffer is freed and its deallocation stream's work is done (or gives it back:
/// [`Buffer::into_host_vec`]).
///
/// Public in name only, for `memory::Hooks::registered_vec` (out of reach outside the crate).
pub struct RegisteredVec {
    ptr: u64,
    /// The context it was registered in.
    context: crate::context::Context,
    /// The vector, type-erased; taken when the buffer is freed, or given back.
    vec: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

impl fmt::Debug for RegisteredVec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredVec")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .finish()
    }
}

impl RegisteredVec {
    /// Unregisters the memory, made relaxed where another thread captures globally.
    fn unregister(&self) -> Result<()> {
        let ptr = self.ptr as *mut std::ffi::c_void;
        self.context.with_current(|driver| {
            crate::order::relaxed(driver, || driver.mem_host_unregister(ptr))
        })
    }
}

// SAFETY: its one allocation is a vector's memory, page-locked and mapped for every device by
// `from_host_vec` (portable, so pinned in every context), at the address the host and the
// devices share: host memory that the host and every device may use, alive while the
// resource holds the vector. `deallocate` drops the vector only after the deallocation
// stream's work is done (it synchronises it first) and the memory is unregistered; where
// either fails, the vector is kept for good.
unsafe impl MemoryResource for RegisteredVec {
    fn allocate_raw(&self, _size: usize, _stream: &Stream) -> Result<DevicePtr> {
        Err(Error::InvalidArgument {
            name: "self",
            reason: "a buffer over a registered vector (Buffer::from_host_vec) allocates no \
                     other buffers"
                .to_owned(),
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _size: usize, stream: &Stream) -> Result<()> {
        let mut vec = self.vec.lock().unwrap_or_else(|e| e.into_inner());
        if ptr.0 != self.ptr {
            return Err(Error::InvalidArgument {
                name: "ptr",
                reason: format!("{ptr} is not the memory of this buffer"),
            });
        }
        if vec.is_none() {
            // Given back (`into_host_vec`), unregistered already.
            return Ok(());
        }
        let done = stream.sync_for_host().and_then(|()| self.unregister());
        if done.is_err() {
            // Work may still use the memory, or the driver still holds it: kept for good.
            if let Some(vec) = vec.take() {
                std::mem::forget(vec);
            }
            return done;
        }
        drop(vec.take());
        Ok(())
    }

    fn is_device_accessible(&self) -> bool {
        true
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn is_private_host_memory(&self) -> bool {
        // A vector of this process's heap, which no other process maps.
        true
    }

    fn device(&self) -> Option<Device> {
        None
    }
}

impl Buffer {
    /// The memory of `vec`, page-locked and mapped for every device (`cuMemHostRegister`,
    /// portable and device-mapped: what `cudaHostRegister` does), as a buffer of host memory
    /// that holds the vector, freed on `stream`. Copies to and from it are DMA transfers that
    /// run asynchronously, as pinned memory's do, and kernels may read and write it through
    /// its address; the vector is neither copied nor moved. Freeing the buffer synchronises
    /// its deallocation stream, unregisters the memory, then drops the vector (where either
    /// fails, the vector is kept for good, never dropped).
    ///
    /// Registering takes time (the pages are locked, and mapped for each device): it is for
    /// data a program already has in a large `Vec` (read from a file, made by another
    /// library) and copies many times. For memory allocated to be pinned, a pinned pool or
    /// [`PinnedMemoryResource`](crate::memory::PinnedMemoryResource) is cheaper. The vector's elements
    /// are read back with [`to_vec`](Buffer::to_vec), as from any buffer.
    ///
    /// Refused: an empty vector (or one of zero-sized elements); memory the driver refuses to
    /// register, an error naming its code (`CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED` where
    /// part of its pages are registered already, as a small vector sharing a page with
    /// another registered one may be); and a system where the devices do not see the memory
    /// at the host's address (no unified addressing).
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Buffer, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let data: Vec<f32> = (0..1 << 20).map(|i| i as f32).collect();
    /// let host = Buffer::from_host_vec(data, &stream)?;
    /// let mut on_device = device.memory_resource()?.allocate(host.size(), &stream)?;
    /// on_device.copy_from(&host, &stream)?;
    /// assert_eq!(on_device.to_vec::<f32>(&stream)?[7], 7.0);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias("cuMemHostRegister", "cudaHostRegister", "cuMemHostGetDevicePointer"))]
    pub fn from_host_vec<T: super::Pod>(vec: Vec<T>, stream: &Stream) -> Result<Buffer> {
        let size = std::mem::size_of_val(vec.as_slice());
        if size == 0 {
            return Err(Error::InvalidArgument {
                name: "vec",
                reason: "an empty vector (or one of zero-sized elements) has no memory to \
                         register"
                    .to_owned(),
            });
        }
        let host = vec.as_ptr() as *mut std::ffi::c_void;
        let context = stream.context().clone();
        context.with_current(|driver| {
            crate::order::relaxed(driver, || {
                driver.mem_host_register(host, size, HOST_REGISTER_FLAGS)
            })
        })?;
        let resource = RegisteredVec {
            ptr: host as u64,
            context,
            vec: Mutex::new(Some(Box::new(vec))),
        };
        // From here on, an error drops `resource`, which unregisters through `deallocate`'s
        // path only once a buffer exists: unregister by hand before it.
        let device_ptr = match resource
            .context
            .with_current(|driver| driver.mem_host_get_device_pointer(host))
        {
            Ok(ptr) if ptr == host as u64 => ptr,
            other => {
                let e = match other {
                    Ok(ptr) => Error::InvalidArgument {
                        name: "vec",
                        reason: format!(
                            "registered host memory at {host:p} is at {ptr:#x} for the \
                             devices: a buffer over a vector needs the address the host and \
                             the devices share (unified addressing)"
                        ),
                    },
                    Err(e) => e,
                };
                if resource.unregister().is_err() {
                    // Still registered: never freed.
                    if let Some(vec) = resource
                        .vec
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                    {
                        std::mem::forget(vec);
                    }
                }
                return Err(e);
            }
        };
        let resource: std::sync::Arc<dyn MemoryResource> = std::sync::Arc::new(resource);
        Ok(Buffer::new(
            device_ptr,
            size,
            Held::counted(resource),
            stream.clone(),
        ))
    }

    /// The vector of a buffer made by [`from_host_vec`](Buffer::from_host_vec), given back
    /// without a copy: once the work queued on the buffer's deallocation stream is done (and
    /// with it, by the stream order every buffer keeps, its uses on other streams), and the
    /// memory unregistered (`cuMemHostUnregister`). It holds what the copies and kernels wrote.
    ///
    /// Refused, the buffer handed back as it was: a buffer that is not a registered vector's,
    /// a `T` other than the vector's element type, and a synchronisation or unregistration that
    /// fails.
    ///
    /// ```no_run
    /// use cuda_core::{Allocate, Buffer, Device, StreamOptions};
    ///
    /// let device = Device::new(0)?;
    /// let stream = device.create_stream(StreamOptions::default())?;
    /// let mut on_device = device.memory_resource()?.allocate(4 << 20, &stream)?;
    /// on_device.fill(7u32, &stream)?;
    /// let mut results = Buffer::from_host_vec(vec![0u32; 1 << 20], &stream)?;
    /// results.copy_from(&on_device, &stream)?; // a DMA copy, queued
    /// let results: Vec<u32> = results.into_host_vec().map_err(|(e, _)| e)?;
    /// assert!(results.iter().all(|&v| v == 7));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    #[doc(alias = "cuMemHostUnregister")]
    pub fn into_host_vec<T: super::Pod>(self) -> std::result::Result<Vec<T>, (Error, Buffer)> {
        let resource = std::sync::Arc::clone(self.memory_resource());
        let Some(registered) = resource.registered_vec() else {
            let e = Error::InvalidArgument {
                name: "self",
                reason: "the buffer is not a registered vector's (Buffer::from_host_vec)"
                    .to_owned(),
            };
            return Err((e, self));
        };
        let mut slot = registered.vec.lock().unwrap_or_else(|e| e.into_inner());
        let vec = match slot.take().map(|vec| vec.downcast::<Vec<T>>()) {
            Some(Ok(vec)) => vec,
            other => {
                *slot = other.and_then(|other| other.err());
                drop(slot);
                let e = Error::InvalidArgument {
                    name: "T",
                    reason: format!(
                        "the registered vector's elements are not {}",
                        std::any::type_name::<T>()
                    ),
                };
                return Err((e, self));
            }
        };
        if let Err(e) = self
            .deallocation_stream()
            .sync_for_host()
            .and_then(|()| registered.unregister())
        {
            // Still registered, and used by the buffer as before.
            *slot = Some(vec);
            drop(slot);
            return Err((e, self));
        }
        drop(slot);
        // Its free finds the vector given back, and does nothing more.
        drop(self);
        Ok(*vec)
    }
}
