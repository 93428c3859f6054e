//! The cache's entry format, both layers: the header a cache file puts around its payload
//! (the format's magic, the payload's length and its SHA-256), and the payload itself, an
//! [`ObjectCode`]'s type, name, log, lowered names and bytes. A file cache writes both; the
//! in-memory cache keeps payloads.

use sha2::{Digest, Sha256};

use crate::image::CodeType;
use crate::object_code::ObjectCode;

/// The first bytes of a cache file (its format's version is the last byte).
pub(super) const MAGIC: [u8; 8] = *b"cucache\x01";
/// The magic, the payload's length (u64, little-endian) and its SHA-256.
pub(super) const HEADER_LEN: usize = 8 + 8 + 32;
/// The first bytes of a payload (its format's version is the last byte).
const CODE_MAGIC: &[u8] = b"cuobj\x01";

/// The header of a file holding `payload`.
pub(super) fn header(payload: &[u8]) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    header[16..].copy_from_slice(&Sha256::digest(payload));
    header
}

/// Why `header` is not one of a file of `payload_len` payload bytes, if it is not.
pub(super) fn check_header(
    header: &[u8; HEADER_LEN],
    payload_len: u64,
) -> Result<(), &'static str> {
    if header[..8] != MAGIC {
        return Err("not an entry of this format version");
    }
    let mut declared = [0u8; 8];
    declared.copy_from_slice(&header[8..16]);
    if u64::from_le_bytes(declared) != payload_len {
        return Err("its length is not the one in its header");
    }
    Ok(())
}

/// Whether `payload` has the checksum `header` gives.
pub(super) fn checksum_matches(header: &[u8; HEADER_LEN], payload: &[u8]) -> bool {
    Sha256::digest(payload)[..] == header[16..]
}

/// The payload of `code`: its type, name, log, lowered names and bytes.
pub(crate) fn encode(code: &ObjectCode) -> Vec<u8> {
    let bytes = code.code();
    let (name, log) = (code.name(), code.compile_log());
    let lowered = code.name_expressions();
    let mut out = Vec::with_capacity(bytes.len() + log.len() + 64);
    out.extend_from_slice(CODE_MAGIC);
    out.push(match code.code_type() {
        CodeType::Ptx => 0,
        CodeType::Cubin => 1,
        CodeType::Fatbin => 2,
        CodeType::LtoIr => 3,
        // Never a compile's output, but an `ObjectCode` all the same; an older reader of
        // this format takes the byte it does not know for a miss.
        CodeType::Library => 4,
    });
    let mut put = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    put(name.as_bytes());
    put(log.as_bytes());
    put(&(lowered.len() as u64).to_le_bytes());
    for (expression, lowered) in lowered {
        put(expression.as_bytes());
        put(lowered.as_bytes());
    }
    put(bytes);
    out
}

/// Code from a payload; `None` for anything malformed (a miss, never a panic).
pub(crate) fn decode(bytes: &[u8]) -> Option<ObjectCode> {
    let mut rest = bytes.strip_prefix(CODE_MAGIC)?;
    let (&kind, tail) = rest.split_first()?;
    rest = tail;
    let code_type = match kind {
        0 => CodeType::Ptx,
        1 => CodeType::Cubin,
        2 => CodeType::Fatbin,
        3 => CodeType::LtoIr,
        4 => CodeType::Library,
        _ => return None,
    };
    let mut take = || -> Option<&[u8]> {
        let (len, tail) = rest.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        if tail.len() < len {
            return None;
        }
        let (value, tail) = tail.split_at(len);
        rest = tail;
        Some(value)
    };
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).ok();
    let name = text(take()?)?;
    let log = text(take()?)?;
    let count = u64::from_le_bytes(take()?.try_into().ok()?);
    let mut lowered = Vec::new();
    for _ in 0..count {
        lowered.push((text(take()?)?, text(take()?)?));
    }
    let code = take()?.to_vec();
    if !rest.is_empty() {
        return None;
    }
    Some(ObjectCode::new(code_type, code, name, log, lowered))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part of the code comes back (bugs caught: a field dropped or two swapped, the
    /// type not kept), and anything but a whole payload is a miss (bugs caught: trailing or
    /// missing bytes accepted, another version's payload read as this one's).
    #[test]
    fn a_payload_round_trips_and_a_damaged_one_is_a_miss() {
        let code = ObjectCode::new(
            CodeType::Fatbin,
            b"fatbin bytes".to_vec(),
            "kernels.cu".to_owned(),
            "warning: unused".to_owned(),
            vec![("f<1>".to_owned(), "_Z1fILi1EEvv".to_owned())],
        );
        let bytes = encode(&code);
        let back = decode(&bytes).unwrap();
        assert_eq!(back.code_type(), CodeType::Fatbin);
        assert_eq!(back.code(), b"fatbin bytes");
        assert_eq!(back.name(), "kernels.cu");
        assert_eq!(back.compile_log(), "warning: unused");
        assert_eq!(back.lowered_name("f<1>"), Some("_Z1fILi1EEvv"));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        assert!(decode(&bytes[..bytes.len() - 1]).is_none());
        let mut other_version = bytes.clone();
        other_version[CODE_MAGIC.len() - 1] = 2;
        assert!(decode(&other_version).is_none());
        let mut other_kind = bytes;
        other_kind[CODE_MAGIC.len()] = 9;
        assert!(decode(&other_kind).is_none());
    }

    /// Each code type keeps the byte it was stored with, so that entries written before the
    /// static library type was added read as before (bugs caught: a type renumbered, which
    /// would turn old entries into misses or into another type; the library type not kept).
    #[test]
    fn each_code_type_has_its_stored_byte_and_comes_back() {
        let types = [
            (CodeType::Ptx, 0),
            (CodeType::Cubin, 1),
            (CodeType::Fatbin, 2),
            (CodeType::LtoIr, 3),
            (CodeType::Library, 4),
        ];
        for (code_type, byte) in types {
            let code = ObjectCode::from_bytes(code_type, b"!<arch>\nbytes".to_vec());
            let bytes = encode(&code);
            assert_eq!(bytes[CODE_MAGIC.len()], byte, "{code_type:?}");
            let back = decode(&bytes).unwrap();
            assert_eq!(back.code_type(), code_type);
            assert_eq!(back.code(), code.code());
        }
    }

    /// A header names its payload's length and checksum (bugs caught: a length or a checksum
    /// not checked, another format version accepted).
    #[test]
    fn a_header_holds_its_payload_to_its_length_and_checksum() {
        let header = header(b"payload");
        assert_eq!(check_header(&header, 7), Ok(()));
        assert!(check_header(&header, 8).is_err());
        assert!(checksum_matches(&header, b"payload"));
        assert!(!checksum_matches(&header, b"payloaD"));
        let mut old = header;
        old[7] = 0;
        assert!(check_header(&old, 7).is_err());
    }
}
