//! `CacheKey`: a SHA-256 over everything that changes a compiled program.

use std::fmt;

use sha2::{Digest, Sha256};

/// Hashed before the first field, so that keys of this scheme never equal the plain SHA-256 of
/// some other data, and a future change of the scheme can change the tag.
const DOMAIN: &[u8] = b"cuda-core program cache key v1\0";

/// A strong hash (SHA-256) over everything that changes a compiled program.
///
/// Build one with [`CacheKey::builder`], adding one named field for each input: the source,
/// the compiler options, the target architecture, the compiler's version, and so on. Fields are
/// domain-separated and length-prefixed, so no two different lists of fields give the same key
/// (short of a SHA-256 collision): `("ab", "c")` and `("a", "bc")` differ, and so do the same
/// fields in another order.
///
/// ```
/// use cuda_core::cache::CacheKey;
///
/// let key = CacheKey::builder()
///     .field("source", b"extern \"C\" __global__ void k() {}")
///     .field("options", b"--gpu-architecture=sm_90")
///     .finish();
/// let hex = key.to_hex();
/// assert_eq!(hex.len(), 64);
/// assert_eq!(CacheKey::from_hex(&hex), Some(key));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CacheKey(pub [u8; 32]);

impl CacheKey {
    /// Starts a key with no fields.
    #[must_use]
    pub fn builder() -> CacheKeyBuilder {
        let mut hasher = Sha256::new();
        hasher.update(DOMAIN);
        CacheKeyBuilder { hasher, fields: 0 }
    }

    /// The key as 64 lowercase hexadecimal digits (the file name of a
    /// [`FileStreamProgramCache`](crate::cache::FileStreamProgramCache) entry).
    pub fn to_hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
        }
        hex
    }

    /// Parses 64 hexadecimal digits (either case); `None` for anything else.
    pub fn from_hex(s: &str) -> Option<CacheKey> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut key = [0u8; 32];
        for (out, pair) in key.iter_mut().zip(bytes.chunks_exact(2)) {
            *out = (hex_digit(pair[0])? << 4) | hex_digit(pair[1])?;
        }
        Some(CacheKey(key))
    }
}

impl fmt::Display for CacheKey {
    /// Writes [`CacheKey::to_hex`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Builds a [`CacheKey`] from named fields, in order. Made by [`CacheKey::builder`].
pub struct CacheKeyBuilder {
    hasher: Sha256,
    fields: usize,
}

impl fmt::Debug for CacheKeyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheKeyBuilder")
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl CacheKeyBuilder {
    /// Adds one named field; fields are domain-separated and length-prefixed, so
    /// `("ab", "c")` and `("a", "bc")` differ, and field order matters.
    #[must_use]
    pub fn field(mut self, name: &str, value: &[u8]) -> Self {
        // Each field is a tag byte, then the name and the value, each after its length as a
        // little-endian u64: an encoding no other list of fields shares.
        self.hasher.update([b'F']);
        self.hasher.update((name.len() as u64).to_le_bytes());
        self.hasher.update(name.as_bytes());
        self.hasher.update((value.len() as u64).to_le_bytes());
        self.hasher.update(value);
        self.fields += 1;
        self
    }

    /// The key of the fields added so far.
    #[must_use]
    pub fn finish(self) -> CacheKey {
        CacheKey(self.hasher.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builder_shows_how_many_fields_it_holds() {
        let builder = CacheKey::builder();
        assert_eq!(format!("{builder:?}"), "CacheKeyBuilder { fields: 0, .. }");
        let builder = builder.field("a", b"1").field("b", b"2").field("c", b"3");
        assert_eq!(format!("{builder:?}"), "CacheKeyBuilder { fields: 3, .. }");
    }

    #[test]
    fn hex_round_trips_and_rejects_bad_input() {
        let key = CacheKey(std::array::from_fn(|i| (i * 37 + 5) as u8));
        let hex = key.to_hex();
        assert_eq!(hex.len(), 64);
        assert!(hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
        assert_eq!(CacheKey::from_hex(&hex), Some(key));
        assert_eq!(CacheKey::from_hex(&hex.to_uppercase()), Some(key));
        assert_eq!(key.to_string(), hex);
        assert_eq!(CacheKey::from_hex(&hex[..63]), None);
        assert_eq!(CacheKey::from_hex(&format!("{hex}0")), None);
        assert_eq!(CacheKey::from_hex(&format!("{}g", &hex[..63])), None);
        assert_eq!(CacheKey::from_hex(""), None);
        // 64 bytes but not 64 ASCII characters.
        assert_eq!(CacheKey::from_hex(&"é".repeat(32)), None);
    }

    /// Pins the encoding (values checked against Python's hashlib over the bytes the
    /// comment in `field` describes): a change here changes every key, and so invalidates
    /// every cache.
    #[test]
    fn known_keys() {
        assert_eq!(
            CacheKey::builder().finish().to_hex(),
            "c7230c2b939a6b46ce4376daf2a31b29ba44ca0d1eb4e9836fe479a14317b434"
        );
        assert_eq!(
            CacheKey::builder()
                .field("source", b"__global__ void k() {}")
                .finish()
                .to_hex(),
            "3cf315cc3e5f7b92baaa001ebbdd3ec2f76f21e7ebabcaa33a0266c42b4410a0"
        );
    }

    #[test]
    fn boundaries_matter() {
        let a = CacheKey::builder().field("ab", b"c").finish();
        let b = CacheKey::builder().field("a", b"bc").finish();
        assert_ne!(a, b);
        let c = CacheKey::builder()
            .field("x", b"ab")
            .field("y", b"c")
            .finish();
        let d = CacheKey::builder()
            .field("x", b"a")
            .field("y", b"bc")
            .finish();
        assert_ne!(c, d);
        let e = CacheKey::builder()
            .field("y", b"c")
            .field("x", b"ab")
            .finish();
        assert_ne!(c, e);
        assert_ne!(
            CacheKey::builder().finish(),
            CacheKey::builder().field("", b"").finish()
        );
    }
}
