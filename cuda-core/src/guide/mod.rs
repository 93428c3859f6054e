//! Chapters that are not about one type: read them once, on docs.rs or with `cargo doc`.
//!
//! - [`threat_model`]: who can reach a process that uses this crate, and what the crate
//!   guarantees against each.

#[doc = include_str!("threat_model.md")]
pub mod threat_model {}
