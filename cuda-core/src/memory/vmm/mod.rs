//! Virtual memory management: address ranges reserved once, physical memory made in
//! granularity-sized pieces, mapped into the ranges and made accessible to chosen devices.
//!
//! The pieces, lowest first:
//!
//! - [`AddressRange`]: a reserved range of device addresses (`cuMemAddressReserve`), backed by
//!   nothing until memory is mapped into it;
//! - [`PhysicalMemory`]: device memory with no address (`cuMemCreate`), a whole number of the
//!   device's [allocation granularity](PhysicalMemory::granularity); exportable as a POSIX file
//!   descriptor where made so, and importable from one;
//! - [`Mapping`]: physical memory mapped at an offset of a range (`cuMemMap`), with its access
//!   set per device (`cuMemSetAccess`);
//! - [`VirtualMemoryResource`]: a [`MemoryResource`](super::MemoryResource) whose buffers are
//!   each a range of their own with memory mapped into it, and which makes [`GrowableBuffer`]s:
//!   a large range reserved once, into which more memory is mapped as the buffer grows, at the
//!   same address.
//!
//! Lifetimes are structural: a mapping holds its physical memory and its range, so it is
//! unmapped before either is released (`cuMemUnmap`, then `cuMemRelease` and
//! `cuMemAddressFree`), whatever order the values are dropped in. Sizes and offsets that are
//! not multiples of the granularity, maps past the end of a range or over a mapped part of it,
//! zero sizes and sizes that overflow are refused before any driver call, the granularity named
//! in the message.
//!
//! Every call is made with the device's primary context current (and the caller's restored).

mod checks;
mod mapping;
mod physical;
mod resource;

use crate::driver::HANDLE_TYPE_POSIX_FD;

pub use mapping::{AddressRange, Mapping};
pub use physical::{PhysicalMemory, PhysicalMemoryOptions};
pub use resource::{GrowableBuffer, VirtualMemoryResource, VirtualMemoryResourceOptions};

/// What a device may do with mapped memory (`CUmemAccess_flags`).
#[doc(alias = "CUmemAccess_flags")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryAccess {
    /// No access (`CU_MEM_ACCESS_FLAGS_PROT_NONE`).
    None,
    /// Read only (`CU_MEM_ACCESS_FLAGS_PROT_READ`).
    Read,
    /// Read and write (`CU_MEM_ACCESS_FLAGS_PROT_READWRITE`).
    ReadWrite,
}

impl MemoryAccess {
    fn flags(self) -> u32 {
        match self {
            MemoryAccess::None => 0,
            MemoryAccess::Read => 1,
            MemoryAccess::ReadWrite => 3,
        }
    }

    fn from_flags(flags: u32) -> MemoryAccess {
        match flags {
            0 => MemoryAccess::None,
            1 => MemoryAccess::Read,
            _ => MemoryAccess::ReadWrite,
        }
    }
}

/// The kind of operating-system handle physical memory can be exported as
/// (`CUmemAllocationHandleType`).
#[doc(alias = "CUmemAllocationHandleType")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShareableHandleType {
    /// Not exportable (`CU_MEM_HANDLE_TYPE_NONE`).
    #[default]
    None,
    /// A POSIX file descriptor (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`), which can be sent
    /// to another process over a Unix socket.
    PosixFileDescriptor,
}

impl ShareableHandleType {
    fn bits(self) -> u32 {
        match self {
            ShareableHandleType::None => 0,
            ShareableHandleType::PosixFileDescriptor => HANDLE_TYPE_POSIX_FD,
        }
    }

    fn from_bits(bits: u32) -> ShareableHandleType {
        if bits & HANDLE_TYPE_POSIX_FD != 0 {
            ShareableHandleType::PosixFileDescriptor
        } else {
            ShareableHandleType::None
        }
    }
}

/// Which allocation granularity to ask for (`CUmemAllocationGranularity_flags`).
#[doc(alias = "CUmemAllocationGranularity_flags")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllocationGranularity {
    /// The smallest the driver accepts (`CU_MEM_ALLOC_GRANULARITY_MINIMUM`): sizes, offsets
    /// and addresses must be multiples of it.
    Minimum,
    /// The driver's recommendation for performance (`CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`).
    #[default]
    Recommended,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_and_handle_types_are_the_headers_values() {
        assert_eq!(MemoryAccess::None.flags(), 0);
        assert_eq!(MemoryAccess::Read.flags(), 1);
        assert_eq!(MemoryAccess::ReadWrite.flags(), 3);
        for access in [
            MemoryAccess::None,
            MemoryAccess::Read,
            MemoryAccess::ReadWrite,
        ] {
            assert_eq!(MemoryAccess::from_flags(access.flags()), access);
        }
        assert_eq!(ShareableHandleType::None.bits(), 0);
        assert_eq!(ShareableHandleType::PosixFileDescriptor.bits(), 1);
        assert_eq!(
            ShareableHandleType::from_bits(1),
            ShareableHandleType::PosixFileDescriptor
        );
        assert_eq!(ShareableHandleType::from_bits(0), ShareableHandleType::None);
    }
}
