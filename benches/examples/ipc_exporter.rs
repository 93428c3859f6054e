//! The other process of the overhead suite's `ipc_import` case: it makes a shareable device
//! pool on device 0, allocates one 64 KiB buffer, and sends the pool (its file descriptor, over
//! the Unix socket) and the buffer's descriptor to the bench, then keeps both until the bench
//! closes the socket.
//!
//! ```text
//! ipc_exporter                  print what it is for, and exit (so that a script that
//!                               runs every example without arguments passes)
//! ipc_exporter SOCKET           connect to the bench's Unix socket at SOCKET
//! ```
//!
//! With a socket but without a CUDA GPU, it fails with the reason.

use std::error::Error;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use cuda_core::{
    Allocate, Device, DeviceMemoryResource, DeviceMemoryResourceOptions, StreamOptions,
};

/// Bytes of the exported buffer.
const BYTES: usize = 64 << 10;

fn main() -> Result<(), Box<dyn Error>> {
    let Some(path) = std::env::args().nth(1) else {
        println!(
            "ipc_exporter: the other process of the overhead bench's ipc_import case \
             (ipc_exporter SOCKET); nothing to do alone"
        );
        return Ok(());
    };
    let mut socket = UnixStream::connect(path)?;
    let device = Device::new(0)?;
    let stream = device.create_stream(StreamOptions::default())?;
    let pool = DeviceMemoryResource::new(
        device,
        DeviceMemoryResourceOptions::default().with_shareable(true),
    )?;
    let mut buffer = pool.allocate(BYTES, &stream)?;
    buffer.fill(1u8, &stream)?;
    // The allocation and the fill are done before the bench imports the buffer.
    stream.sync()?;
    pool.share()?.send(&socket)?;
    socket.write_all(&pool.export_buffer(&buffer)?.to_bytes())?;
    // Until the bench is done with the buffer: it closes the socket (or sends a byte).
    let mut byte = [0u8; 1];
    let _ = socket.read(&mut byte);
    drop(buffer);
    stream.sync()?;
    Ok(())
}
