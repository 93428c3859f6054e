//! [`ManagedApi`](crate::driver::api::ManagedApi) for both ABIs. `cuMemRangeGetAttribute` is
//! the same in both headers; prefetch and advice take a location under the same plain name in
//! the 13 header and under `_v2` in the 12 header, and the batched prefetch and discard calls
//! exist in the 13 header only: those go through the ABI file's `abi_mem_prefetch_async`,
//! `abi_mem_advise` and `abi_mem_batch_async`.

use super::*;

impl crate::driver::api::ManagedApi for Drv {
    fn mem_prefetch_async(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        location: crate::driver::MemLocation,
        stream: StreamHandle,
    ) -> Result<()> {
        self.abi_mem_prefetch_async(ptr, bytes, location, stream)
    }

    fn mem_advise(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        advice: u32,
        location: crate::driver::MemLocation,
    ) -> Result<()> {
        self.abi_mem_advise(ptr, bytes, sys::CUmem_advise(advice as _), location)
    }

    fn mem_range_get_attribute(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        attribute: u32,
        out: &mut [i32],
    ) -> Result<()> {
        call!(self.cuMemRangeGetAttribute(
            out.as_mut_ptr().cast(),
            std::mem::size_of_val(out),
            sys::CUmem_range_attribute(attribute as _),
            ptr,
            bytes
        ))
    }

    fn mem_discard_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        stream: StreamHandle,
    ) -> Result<()> {
        debug_assert_eq!(ptrs.len(), sizes.len());
        self.abi_mem_batch_async(BatchKind::Discard, ptrs, sizes, &[], &[], stream)
    }

    fn mem_prefetch_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        locations: &[crate::driver::MemLocation],
        location_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()> {
        debug_assert_eq!(ptrs.len(), sizes.len());
        debug_assert_eq!(locations.len(), location_starts.len());
        self.abi_mem_batch_async(
            BatchKind::Prefetch,
            ptrs,
            sizes,
            locations,
            location_starts,
            stream,
        )
    }

    fn mem_discard_and_prefetch_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        locations: &[crate::driver::MemLocation],
        location_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()> {
        debug_assert_eq!(ptrs.len(), sizes.len());
        debug_assert_eq!(locations.len(), location_starts.len());
        self.abi_mem_batch_async(
            BatchKind::DiscardAndPrefetch,
            ptrs,
            sizes,
            locations,
            location_starts,
            stream,
        )
    }
}

/// Which batched managed-memory call `abi_mem_batch_async` makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)]
pub(super) enum BatchKind {
    /// `cuMemDiscardBatchAsync` (no locations).
    Discard,
    /// `cuMemPrefetchBatchAsync`.
    Prefetch,
    /// `cuMemDiscardAndPrefetchBatchAsync`.
    DiscardAndPrefetch,
}

impl BatchKind {
    /// The driver function's name.
    #[allow(dead_code)]
    fn function(self) -> &'static str {
        match self {
            BatchKind::Discard => "cuMemDiscardBatchAsync",
            BatchKind::Prefetch => "cuMemPrefetchBatchAsync",
            BatchKind::DiscardAndPrefetch => "cuMemDiscardAndPrefetchBatchAsync",
        }
    }
}
