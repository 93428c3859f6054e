//! Shared parts of the overhead bench suites in `benches/`: the raw driver and NVRTC calls they
//! measure cuda-core against ([`raw`], [`raw_nvrtc`]), the kernels they launch ([`kernels`]),
//! and how the whole-process suite finds its child program ([`locate`]).
//!
//! The suites (see the crate's `README.md`):
//!
//! - `overhead`: per-call cost of devices, contexts, streams, events, launches, stream-ordered
//!   memory and copies: raw table call, cuda-core and cudarc, in the same run;
//! - `compile`: an NVRTC compile of SAXPY, and program-cache hits;
//! - `startup`: a whole process, from loading the driver to its first launch done (it runs the
//!   `first_launch` example as a child);
//! - `scaling`: how cost grows with work (cache entries, graph nodes, live buffers, threads),
//!   raw and cuda-core at three sizes each.
//!
//! Without a CUDA driver and device each suite prints one line saying so and exits with
//! status 0 (the scaling suite after its cache cases, which need no GPU).

pub mod kernels;
pub mod locate;
pub mod raw;
pub mod raw_nvrtc;

/// The repository's README, its code blocks compiled as doctests against cuda-core so that its
/// usage sample stays true. Here rather than in cuda-core, whose published package does not
/// carry that file (it has a README of its own).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
