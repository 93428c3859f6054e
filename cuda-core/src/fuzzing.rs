//! The crate's parsers of untrusted bytes, reachable by the fuzz targets in `cuda-core/fuzz`.
//!
//! Built only with `--cfg fuzzing` (as `cargo fuzz` builds): not part of the API. Each function
//! calls the crate's own parser, unchanged. The parsers that are public already (DLPack's
//! [`DlpackTensor::from_raw`](crate::dlpack::DlpackTensor::from_raw) and its views, the IPC
//! forms' `from_bytes` and `from_parts`, [`CacheKey::from_hex`](crate::cache::CacheKey::from_hex),
//! and a file cache's reads) are fuzzed through the API itself.

use crate::{CodeType, ObjectCode, Result};

/// Checks `bytes` as an image of the `declared` type, as a load does before the driver reads it.
pub fn image_check(declared: CodeType, bytes: &[u8]) -> Result<()> {
    crate::image::check(declared, bytes)
}

/// The number of parameters `kernel` takes, as the image of `code_type` says, if it says.
pub fn image_param_count(code_type: CodeType, bytes: &[u8], kernel: &str) -> Option<usize> {
    crate::image::param_count(code_type, bytes, kernel)
}

/// A program-cache payload decoded into code; `None` for a malformed one.
pub fn cache_entry_decode(bytes: &[u8]) -> Option<ObjectCode> {
    crate::cache::entry::decode(bytes)
}

/// The program-cache payload of `code`.
pub fn cache_entry_encode(code: &ObjectCode) -> Vec<u8> {
    crate::cache::entry::encode(code)
}
