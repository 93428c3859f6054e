//! GPU core-dump settings (`cuCoredumpGetAttribute`, `cuCoredumpSetAttribute` and their
//! `Global` forms, drivers 12.1 and newer).

use crate::error::Result;

/// Reading and changing the core-dump settings of the current context or of the process.
///
/// `attribute` is a `CUcoredumpSettings` value (the same in both headers); `value` is the
/// setting's bytes as the driver takes them (a C `bool`, an `int`, or a string with its NUL),
/// and its length is the `size` the driver is given.
pub(crate) trait CoredumpApi {
    /// `cuCoredumpGetAttribute` of the current context: fills `value`, and answers the size
    /// the driver wrote back.
    fn coredump_get_attribute(&self, attribute: u32, value: &mut [u8]) -> Result<usize>;
    /// `cuCoredumpGetAttributeGlobal`: as [`coredump_get_attribute`](Self::coredump_get_attribute),
    /// for the process.
    fn coredump_get_attribute_global(&self, attribute: u32, value: &mut [u8]) -> Result<usize>;
    /// `cuCoredumpSetAttribute` of the current context.
    fn coredump_set_attribute(&self, attribute: u32, value: &mut [u8]) -> Result<()>;
    /// `cuCoredumpSetAttributeGlobal`.
    fn coredump_set_attribute_global(&self, attribute: u32, value: &mut [u8]) -> Result<()>;
    /// The `CUCoredumpGenerationFlags` bits this ABI's header names (no driver call): the 13
    /// header names more than the 12.9 one.
    fn coredump_flags_named(&self) -> u32;
}
