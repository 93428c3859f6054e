//! Chapters that are not about one type: read them once, on docs.rs or with `cargo doc`.
//!
//! - [`concepts`]: what the crate does for you that the CUDA APIs leave to you: the
//!   stream-order contract, what keeps what alive, recycled handles, captures, the driver
//!   ABI probe and errors.
//! - [`from_cuda_runtime`]: the CUDA runtime calls a CUDA C++ program makes, each with its
//!   equivalent here, the rules that differ, and a vector add written both ways.
//! - [`from_cuda_core_python`]: NVIDIA's Python `cuda.core`, class by class, with SAXPY and
//!   green contexts written both ways.
//! - [`from_cudarc`]: cudarc's objects mapped to this crate's, and both crates in one program
//!   through raw handles.
//! - [`threat_model`]: who can reach a process that uses this crate, and what the crate
//!   guarantees against each.
//!
//! The chapters' code compiles as doctests (`cargo test -p cuda-core --doc guide`); examples
//! that need a GPU are compiled, not run.

// The chapters' links name the crate's items as its root does (`Buffer`, `memory::CopyBatch`):
// they resolve in this module's scope.
#[allow(unused_imports)]
use crate::*;

#[doc = include_str!("concepts.md")]
pub mod concepts {}

#[doc = include_str!("from_cuda_runtime.md")]
pub mod from_cuda_runtime {}

#[doc = include_str!("from_cuda_core_python.md")]
pub mod from_cuda_core_python {}

#[doc = include_str!("from_cudarc.md")]
pub mod from_cudarc {}

#[doc = include_str!("threat_model.md")]
pub mod threat_model {}
