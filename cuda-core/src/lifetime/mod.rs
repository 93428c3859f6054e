//! The process-lifetime layer: what the process keeps for good, how objects hold what they
//! depend on, and the current-context rule. Everything above (devices, contexts, streams,
//! events, memory) is built on it; it depends on none of them, only on the driver seam.
//!
//! - [`Held`]: how an object holds what it depends on: by a plain copy that counts nothing
//!   when the process keeps the thing for good (a device's primary context, its default memory
//!   resource), by reference count otherwise. One type, whatever is held.
//! - [`registry`]: the per-device state, sized by the device count on first use: the primary
//!   context once retained, the cached attributes, and [`PerDevice`] slots for what layers
//!   above keep per device (the default memory resources).
//! - [`ContextCore`]: a context's handle and what releases it, primary or green.
//! - [`current`]: making a context current around a driver call and restoring the caller's.
//! - [`ipc_registry`]: the interprocess events this process opened, one open per handle.
//! - [`small`]: the small buffers of a device's default pool that a stream keeps for its next
//!   allocations of their size.
//!
//! The hot paths read this layer after a driver call has pushed their data out of the CPU's
//! nearest cache, so it keeps their chains of dependent loads short: the primary context's
//! handle and driver sit beside it in the registry, and a held value is its pointer, not a
//! pointer to one.

pub(crate) mod captures;
mod context;
pub(crate) mod current;
mod held;
pub(crate) mod ipc_registry;
pub(crate) mod recycle;
pub(crate) mod registry;
pub(crate) mod small;

pub(crate) use self::context::{ContextCore, ContextKind};
pub(crate) use self::held::{is_kept, keep_for_good, Held};
pub(crate) use self::registry::{PerDevice, Primary};
