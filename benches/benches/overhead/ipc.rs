//! `ipc_import`.

use super::*;

/// `ipc_import`: a buffer of another process (the `ipc_exporter` example), imported and
/// released, per buffer.
pub(super) fn ipc_import_case<R: RawDriver>(c: &mut Criterion, d: &R, core: &Core, raw: &RawState) {
    use std::io::Read;
    use std::os::unix::net::UnixListener;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use cuda_core::ipc::{BufferDescriptor, ImportedPool, SharedPoolHandle};

    let exporter = match benches::locate::example("ipc_exporter") {
        Ok(path) => path,
        Err(why) => {
            println!(
                "overhead: ipc_import: {why} (build it with `cargo build --release -p benches \
                 --example ipc_exporter`); skipped"
            );
            return;
        }
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("socket");
    let listener = UnixListener::bind(&path).expect("a Unix socket");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let mut child = Command::new(&exporter)
        .arg(&path)
        .stdin(Stdio::null())
        .spawn()
        .expect("the exporter starts");
    // Wait for it to connect, or to fail.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut socket = loop {
        match listener.accept() {
            Ok((socket, _)) => break socket,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Ok(Some(status)) = child.try_wait() {
                    println!("overhead: ipc_import: the exporter ended ({status}); skipped");
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    println!("overhead: ipc_import: the exporter never connected; skipped");
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accepting the exporter: {e}"),
        }
    };
    socket.set_nonblocking(false).expect("a blocking socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout");
    let handle = SharedPoolHandle::recv(&socket).expect("the exporter's pool");
    let mut bytes = [0u8; BufferDescriptor::BYTES];
    socket
        .read_exact(&mut bytes)
        .expect("the buffer's descriptor");
    let descriptor = BufferDescriptor::from_bytes(&bytes).expect("a descriptor");
    let pool = ImportedPool::import(core.device, handle).expect("importing the pool");
    let export_data: [u8; 64] = bytes[32..96].try_into().expect("64 bytes of export data");
    let raw_pool = pool.as_raw();
    Case::new("ipc_import")
        .variant("raw", |b| {
            let mut data = export_data;
            b.iter(|| {
                let mut ptr = 0;
                // SAFETY: a writable out-pointer, the imported pool, 64 bytes of export data
                // the driver made; the import is released once, and the release waited for
                // before the next import.
                unsafe {
                    check(
                        d.cuMemPoolImportPointer(&mut ptr, raw_pool, data.as_mut_ptr()),
                        "cuMemPoolImportPointer",
                    );
                    check(d.cuMemFreeAsync(ptr, raw.stream), "cuMemFreeAsync");
                }
                raw_sync(d, raw.stream);
            });
        })
        .variant("cuda-core", |b| {
            b.iter(|| drop(pool.import_buffer(&descriptor, &core.stream).unwrap()));
            // The last release done before raw imports the same buffer.
            core.stream.sync().unwrap();
        })
        .run(c);
    drop(pool);
    drop(socket);
    let _ = child.wait();
}
