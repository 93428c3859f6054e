//! The IPC wire forms, as another process sends them: a `BufferDescriptor`, an
//! `IpcEventHandle`, a legacy `IpcMemHandle`, a shared pool's bytes
//! (`SharedPoolHandle::from_parts`) and shared physical memory's
//! (`SharedPhysicalMemory::from_parts`), all read by one `Reader` and written by one `Writer`.
//! Every input is offered to each. Beyond not panicking: bytes are one form at most; a form
//! that is accepted has its length, magic, version and zero padding, and is written back to
//! exactly the bytes it was read from; and what its accessors say is what its bytes hold.

#![no_main]

use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::OnceLock;

use cuda_core::ipc::{
    BufferDescriptor, IpcEventHandle, IpcMemHandle, SharedPhysicalMemory, SharedPoolHandle,
};
use cuda_core::Error;
use libfuzzer_sys::fuzz_target;

/// A regular file's descriptor, duplicated for each form that takes descriptors (a pool's
/// record must be a regular file's; nothing else is asked of them).
fn fd() -> OwnedFd {
    static FILE: OnceLock<File> = OnceLock::new();
    let file = FILE.get_or_init(|| {
        File::open(std::env::current_exe().expect("the fuzzer's path")).expect("a regular file")
    });
    file.try_clone().expect("a duplicate descriptor").into()
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// The bytes' header as every form has it.
fn header(bytes: &[u8], len: usize, magic: &[u8; 4]) {
    assert_eq!(bytes.len(), len);
    assert_eq!(&bytes[..4], magic);
    assert_eq!(bytes[4..8], [1, 0, 0, 0], "version and padding");
}

/// A refusal says what was wrong with the bytes.
fn refused(result: Result<(), Error>) -> bool {
    match result {
        Ok(()) => false,
        Err(Error::InvalidArgument { .. }) => true,
        Err(e) => panic!("refused otherwise: {e:?}"),
    }
}

fuzz_target!(|bytes: &[u8]| {
    let mut accepted = 0;
    if !refused(BufferDescriptor::from_bytes(bytes).map(|descriptor| {
        header(bytes, BufferDescriptor::BYTES, b"CCBF");
        assert_eq!(descriptor.to_bytes()[..], bytes[..]);
        assert_eq!(
            descriptor.size() as u64,
            u64_at(bytes, 24).min(usize::MAX as u64)
        );
    })) {
        accepted += 1;
    }
    if !refused(IpcEventHandle::from_bytes(bytes).map(|handle| {
        header(bytes, IpcEventHandle::BYTES, b"CCEV");
        assert_eq!(handle.to_bytes()[..], bytes[..]);
        assert_eq!(handle.gpu().0[..], bytes[8..24]);
    })) {
        accepted += 1;
    }
    if !refused(IpcMemHandle::from_bytes(bytes).map(|handle| {
        header(bytes, IpcMemHandle::BYTES, b"CCIM");
        assert_eq!(handle.to_bytes()[..], bytes[..]);
        assert_eq!(handle.gpu().0[..], bytes[8..24]);
        assert_eq!(
            handle.size() as u64,
            u64_at(bytes, 24).min(usize::MAX as u64)
        );
    })) {
        accepted += 1;
    }
    if !refused(SharedPoolHandle::from_parts(fd(), fd(), bytes).map(|pool| {
        header(bytes, SharedPoolHandle::INFO_BYTES, b"CCPL");
        let numa = i32::from_le_bytes(bytes[44..48].try_into().unwrap());
        match bytes[24] {
            1 => {
                assert_eq!(
                    pool.gpu().map(|g| g.0.to_vec()),
                    Some(bytes[28..44].to_vec())
                );
                assert_eq!(pool.numa_node(), None);
            }
            2 => {
                assert_eq!(pool.gpu(), None);
                assert_eq!(pool.numa_node(), u32::try_from(numa).ok());
            }
            kind => panic!("a pool of kind {kind}"),
        }
        let copy = pool.try_clone().expect("a second handle");
        assert_eq!(copy.into_parts().info[..], bytes[..]);
        assert_eq!(pool.into_parts().info[..], bytes[..]);
    })) {
        accepted += 1;
    }
    if !refused(SharedPhysicalMemory::from_parts(fd(), bytes).map(|memory| {
        header(bytes, SharedPhysicalMemory::INFO_BYTES, b"CCPM");
        assert_ne!(u64_at(bytes, 8), 0, "memory of no size");
        assert_eq!(memory.gpu().0[..], bytes[16..32]);
        assert_eq!(memory.into_parts().1[..], bytes[..]);
    })) {
        accepted += 1;
    }
    assert!(accepted <= 1, "bytes read as {accepted} forms");
});
