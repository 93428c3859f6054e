//! Past one GPU: NCCL's collectives (all-reduce, broadcast, reduce, all-gather,
//! reduce-scatter, and with NCCL 2.28 or newer all-to-all, gather and scatter) and
//! point-to-point calls (send, receive) on this crate's [`Stream`]s and [`Buffer`]s, between
//! the GPUs of one machine or of many (feature `nccl`).
//!
//! NCCL (`libnccl.so.2`, 2.19 or newer) is loaded at run time, on first use: the file
//! `CUDA_CORE_NCCL_PATH` names (then nothing else), else `libnccl.so.2` through the dynamic
//! loader (a system install), else the wheels' `nvidia/nccl/lib/libnccl.so.2` in Python's
//! site-packages (`pip install nvidia-nccl-cu12`, or `nvidia-nccl-cu13`), found as NVRTC's
//! wheels are. Without it every call answers [`Error::NcclNotFound`](crate::Error), naming
//! every place tried; the rest of the crate works.
//!
//! A [`Communicator`] is one rank of a group of ranks, one per device: each process (or
//! thread) joins with [`Communicator::init_rank`] and a [`UniqueId`] that one of them made and
//! sent to the others; one process driving several devices makes them all with
//! [`Communicator::init_all`]. Its collectives take a stream of its device and buffers (or
//! slices of them) of its device, typed by an [`Element`] (`i8`, `u8`, `i32`, `u32`, `i64`,
//! `u64`, `f32`, `f64`, `half::f16`, `half::bf16`).
//!
//! ```no_run
//! use std::time::Duration;
//! use cuda_core::nccl::{Communicator, ReduceOp, UniqueId};
//! use cuda_core::{Allocate, Device, StreamOptions};
//!
//! # fn receive_from_rank_0() -> [u8; 128] { unimplemented!() }
//! let (rank, size) = (1, 2); // as the launcher says (torchrun: RANK, WORLD_SIZE)
//! // Rank 0 made the id with UniqueId::new() and sent its bytes to every other rank.
//! let id = UniqueId::from_bytes(&receive_from_rank_0())?;
//! let device = Device::new(rank)?;
//! let comm = Communicator::init_rank(&id, size, rank, device)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! let mut grads = device.memory_resource()?.allocate(4 << 20, &stream)?;
//! grads.copy_from_host(&vec![1.0f32; 1 << 20], &stream)?;
//! comm.all_reduce_in_place::<f32>(&mut grads, ReduceOp::Sum, &stream)?;
//! comm.wait(&stream, Duration::from_secs(60))?; // a failed peer is an error, not a hang
//! assert!(grads.to_vec::<f32>(&stream)?.iter().all(|&g| g == size as f32));
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! # Across machines
//!
//! The ranks must share the id before they make their communicators. [`TcpBootstrap`] hands it
//! over TCP, as a launcher's `MASTER_ADDR`, `MASTER_PORT`, `RANK` and `WORLD_SIZE` describe the
//! job (torchrun's variables; [`TcpBootstrap::from_env`] names a missing one): rank 0 makes
//! the id and serves it on every interface of its machine until each other rank has it, and
//! the others connect to `MASTER_ADDR`, trying again until rank 0 listens, so that the
//! processes of several machines may start in any order. Each side waits at most its
//! timeout (five minutes unless [`TcpBootstrap::with_timeout`] says otherwise), then fails
//! naming the address. Under torchrun, whose agent listens on `MASTER_PORT` itself, rank 0
//! serves on the port after it (`CUDA_CORE_NCCL_BOOTSTRAP_PORT` chooses another).
//!
//! ```no_run
//! use cuda_core::nccl::{Communicator, TcpBootstrap};
//! use cuda_core::Device;
//!
//! // torchrun --nnodes 2 --node-rank N --nproc-per-node 8 --master-addr 10.0.0.1 ...
//! let bootstrap = TcpBootstrap::from_env()?;
//! let id = bootstrap.unique_id()?;
//! let device = Device::new(bootstrap.rank() % 8)?; // or LOCAL_RANK
//! let comm = Communicator::init_rank(&id, bootstrap.world_size(), bootstrap.rank(), device)?;
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! # What is checked, and what the ranks must agree on
//!
//! Before NCCL is called, each call checks what this rank can see, and refuses it with
//! [`Error::InvalidArgument`](crate::Error) naming the argument: the stream is of the
//! communicator's device; every buffer is memory of that device (not host memory, not another
//! device's), holding a whole number of aligned elements; the counts fit the collective (an
//! all-gather's `recv` holds `size()` times its `send`); two buffers overlap only in NCCL's
//! in-place form; roots and peers are ranks of the communicator; ranks, sizes and colors fit
//! NCCL's `int`s.
//!
//! What no rank can see alone is the caller's to keep: every rank calls the same collectives
//! in the same order, with the same count, element type, operation and root (a send with its
//! receive). NCCL does not check it: a rank that differs leaves the others waiting, or gives
//! them wrong values. Since every buffer is memory of the communicator's device, what a
//! disagreeing peer can write lands in that device's memory only: wrong data there, never
//! undefined behaviour in this process's host memory.
//!
//! # Stream order
//!
//! A collective's buffers keep the crate's stream-order contract
//! ([`crate::guide::concepts`]): on a stream other than a buffer's deallocation stream, the
//! stream first waits for that one (the buffer's allocation and earlier work), and that one
//! waits for the collective after, so the buffer's free cannot overtake it. On the buffer's own
//! stream this costs nothing. The calls in a [`group`] are ordered the same way, their second
//! half at the group's end, when NCCL queues them.
//!
//! # Failures and waiting
//!
//! NCCL's kernels wait for their peers' data: a peer that dies leaves them waiting.
//! [`Communicator::wait`] waits for a stream with a deadline, and asks NCCL for the
//! communicator's asynchronous error as it does, so that a failed peer is an error, not a hang;
//! [`Communicator::abort`] then ends the kernels. A non-blocking communicator
//! ([`CommConfig::blocking`]) bounds the making of the communicator too
//! ([`Communicator::wait_ready`]).
//!
//! # The current context
//!
//! Each call is queued with its stream's context current, as the crate's other calls are: on
//! a thread where another context (or none) is current, that costs a push and a pop of the
//! context around the call. A thread that queues many small collectives makes its device
//! current once ([`Device::set_current`](crate::Device::set_current)), as an NCCL program sets
//! its device: then the call costs one read of the current context more than NCCL's own. The
//! NCCL bench does so: against the stand-in driver and NCCL, the push and pop added about
//! 200 ns to each 4-byte all-reduce (1,045 against 841 ns).
//!
//! # Threads
//!
//! NCCL takes one call on a communicator at a time: a communicator is `Send` and `Sync` and
//! serialises its calls. [`group`] queues calls of several communicators from one thread and
//! launches them together, as a closure: the group cannot be left open, and what its calls use
//! is borrowed until its end.

mod bootstrap;
mod collective;
mod communicator;
mod element;
mod group;
mod methods;
mod op;
mod registration;
mod resource;
mod unique_id;

use std::path::PathBuf;

pub use bootstrap::{TcpBootstrap, UniqueIdServer};
pub use communicator::{CommConfig, Communicator};
pub use element::{DataType, Element};
pub use group::{group, Group};
pub use op::{PreMulSum, ReduceOp};
pub use registration::Registration;
pub use resource::NcclMemoryResource;
pub use unique_id::UniqueId;

use crate::driver::nccl::nccl;
use crate::error::Result;

#[cfg(doc)]
use crate::{Buffer, Stream};

/// The loaded NCCL's version, `(major, minor, patch)` (`ncclGetVersion`), loading it if no
/// call has yet.
///
/// ```no_run
/// match cuda_core::nccl::version() {
///     Ok((major, minor, patch)) => println!("NCCL {major}.{minor}.{patch}"),
///     Err(e) => println!("no NCCL: {e}"),
/// }
/// ```
#[doc(alias = "ncclGetVersion")]
pub fn version() -> Result<(u32, u32, u32)> {
    let code = nccl()?.version() as u32;
    Ok((code / 10000, code / 100 % 100, code % 100))
}

/// Where the loaded NCCL came from: its file, or the name the dynamic loader found
/// (`libnccl.so.2`).
pub fn library_path() -> Result<PathBuf> {
    Ok(nccl()?.location().to_path_buf())
}
