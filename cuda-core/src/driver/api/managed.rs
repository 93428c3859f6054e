//! Managed (unified) memory: prefetch, advice, discard, and range attribute queries.

use crate::driver::api::copy::MemLocation;
use crate::driver::handles::{DevicePtr, StreamHandle};
use crate::error::Result;

/// Operations on ranges of managed memory.
pub(crate) trait ManagedApi {
    /// `cuMemPrefetchAsync` of `bytes` at `ptr` to `location` (the 12 header's `_v2`, or its
    /// first form on drivers without it, which takes devices and the host only).
    fn mem_prefetch_async(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        location: MemLocation,
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemAdvise` of a `CUmem_advise` for `location` (the 12 header's `_v2`, or its first
    /// form on drivers without it).
    fn mem_advise(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        advice: u32,
        location: MemLocation,
    ) -> Result<()>;
    /// `cuMemRangeGetAttribute` of a `CUmem_range_attribute` whose value is one or more 32-bit
    /// integers, written into `out` (its length gives the data size).
    fn mem_range_get_attribute(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        attribute: u32,
        out: &mut [i32],
    ) -> Result<()>;
    /// `cuMemDiscardBatchAsync` (the 13 header only).
    fn mem_discard_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemPrefetchBatchAsync` (the 13 header only): range `i` goes to `locations[k]` for
    /// the last `k` whose `location_starts[k] <= i`.
    fn mem_prefetch_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        locations: &[MemLocation],
        location_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()>;
    /// `cuMemDiscardAndPrefetchBatchAsync` (the 13 header only), locations as for
    /// `mem_prefetch_batch_async`.
    fn mem_discard_and_prefetch_batch_async(
        &self,
        ptrs: &[DevicePtr],
        sizes: &[usize],
        locations: &[MemLocation],
        location_starts: &[usize],
        stream: StreamHandle,
    ) -> Result<()>;
}
