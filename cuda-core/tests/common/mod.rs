//! Helpers shared by the GPU tests.
#![allow(dead_code)]

use std::sync::mpsc;

use cuda_core::{Device, Stream};

/// Device 0, whose tests are all `#[ignore = "needs a CUDA GPU"]`.
pub fn device() -> Device {
    Device::new(0).expect("a CUDA device")
}

/// Deterministic pseudo-random values (xorshift64*), different per seed.
pub fn random_u32(seed: u64, n: usize) -> Vec<u32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
        })
        .collect()
}

/// Holds a stream at a host function until released: work queued after it cannot start.
pub struct Gate(mpsc::Sender<()>);

impl Gate {
    pub fn close(stream: &Stream) -> Gate {
        let (tx, rx) = mpsc::channel::<()>();
        stream
            .launch_host_func(move || {
                let _ = rx.recv();
            })
            .expect("cuLaunchHostFunc");
        Gate(tx)
    }

    pub fn open(self) {
        let _ = self.0.send(());
    }
}
