//! Code images as the driver reads them, checked before it does.
//!
//! `cuLibraryLoadData` takes no length: the driver follows the image's own headers (an ELF's
//! section and program-header tables, a fatbin's header and entry sizes) or reads PTX up to its
//! NUL. So every offset and size those headers give must lie within the bytes we hold, and the
//! image must be of the kind declared: PTX passed as a cubin would be read as a C string past
//! the end of its buffer.

use crate::error::{Error, Result};

/// The kinds of code the driver, NVRTC and the linker deal in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeType {
    /// PTX assembly text, compiled by the driver for the device at load time.
    Ptx,
    /// A cubin: machine code for one architecture.
    Cubin,
    /// A fat binary: cubins and PTX for several architectures.
    Fatbin,
    /// LTO-IR: intermediate code for link-time optimisation (nvJitLink only).
    LtoIr,
    /// A static library (an `ar` archive, `.a`, such as the device runtime `libcudadevrt.a`):
    /// a linker input only (`NVJITLINK_INPUT_LIBRARY`, `CU_JIT_INPUT_LIBRARY`), never loaded
    /// alone.
    Library,
}

impl CodeType {
    /// The usual file extension: `ptx`, `cubin`, `fatbin`, `ltoir`, `a`.
    pub fn extension(self) -> &'static str {
        match self {
            CodeType::Ptx => "ptx",
            CodeType::Cubin => "cubin",
            CodeType::Fatbin => "fatbin",
            CodeType::LtoIr => "ltoir",
            CodeType::Library => "a",
        }
    }

    /// The type as a phrase: "a cubin", "PTX".
    pub(crate) fn describe(self) -> &'static str {
        match self {
            CodeType::Ptx => "PTX",
            CodeType::Cubin => "a cubin",
            CodeType::Fatbin => "a fatbin",
            CodeType::LtoIr => "LTO-IR",
            CodeType::Library => "a static library",
        }
    }

    pub(crate) fn from_extension(extension: &str) -> Option<CodeType> {
        match extension {
            "ptx" => Some(CodeType::Ptx),
            "cubin" => Some(CodeType::Cubin),
            "fatbin" => Some(CodeType::Fatbin),
            "ltoir" => Some(CodeType::LtoIr),
            "a" => Some(CodeType::Library),
            _ => None,
        }
    }
}

/// `\x7fELF`.
const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
/// An `ar` archive's first bytes (a static library).
pub(crate) const AR_MAGIC: [u8; 8] = *b"!<arch>\n";
/// A fatbin's magic number (little-endian).
const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// `SHT_NOBITS`: a section that takes no bytes of the file.
const SHT_NOBITS: u32 = 8;
/// `PN_XNUM`: the program-header count is elsewhere (in section 0).
const PN_XNUM: u16 = 0xffff;

/// What an image's first bytes say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Elf,
    Fatbin,
    Archive,
    Text,
}

impl Kind {
    /// What the bytes say they are.
    pub(crate) fn of(bytes: &[u8]) -> Kind {
        if bytes.starts_with(&ELF_MAGIC) {
            Kind::Elf
        } else if bytes.len() >= 4 && u32_at(bytes, 0) == Some(FATBIN_MAGIC) {
            Kind::Fatbin
        } else if bytes.starts_with(&AR_MAGIC) {
            Kind::Archive
        } else {
            Kind::Text
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Elf => "an ELF image (a cubin)",
            Kind::Fatbin => "a fatbin",
            Kind::Archive => "an ar archive (a static library)",
            Kind::Text => {
                "neither an ELF image, a fatbin nor an ar archive (PTX text, or something else)"
            }
        }
    }
}

/// Checks that `bytes` are an image of `declared` type whose headers stay within them. A
/// static library is checked for its `ar` magic only (the linkers that take it read its
/// members with the length they are given).
pub(crate) fn check(declared: CodeType, bytes: &[u8]) -> Result<()> {
    let found = Kind::of(bytes);
    let expected = match declared {
        CodeType::Cubin => Kind::Elf,
        CodeType::Fatbin => Kind::Fatbin,
        CodeType::Ptx => Kind::Text,
        CodeType::Library => Kind::Archive,
        // Never loaded: linked first.
        CodeType::LtoIr => return Ok(()),
    };
    if found != expected {
        let declared = match declared {
            CodeType::Library => "a static library, an ar archive (starting with !<arch>)",
            other => other.describe(),
        };
        return Err(bad(format!(
            "the code is declared {declared}, but its bytes are {}",
            found.describe()
        )));
    }
    match found {
        Kind::Elf => check_elf(bytes),
        Kind::Fatbin => check_fatbin(bytes),
        Kind::Archive => Ok(()),
        Kind::Text if bytes.last() == Some(&0) => Ok(()),
        Kind::Text => Err(bad("PTX must end in a NUL byte".to_owned())),
    }
}

fn bad(reason: String) -> Error {
    Error::InvalidArgument {
        name: "code",
        reason,
    }
}

fn u16_at(bytes: &[u8], at: u64) -> Option<u16> {
    let at = usize::try_from(at).ok()?;
    Some(u16::from_le_bytes(
        bytes.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(bytes: &[u8], at: u64) -> Option<u32> {
    let at = usize::try_from(at).ok()?;
    Some(u32::from_le_bytes(
        bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(bytes: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u64::from_le_bytes(
        bytes.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Whether `[offset, offset + size)` lies within `len` bytes.
fn within(offset: u64, size: u64, len: usize) -> bool {
    offset
        .checked_add(size)
        .is_some_and(|end| end <= len as u64)
}

/// A 64-bit little-endian ELF image (every cubin of a 64-bit toolchain): its header, its
/// program-header and section-header tables, and every segment and every section but
/// `SHT_NOBITS` ones lie within the bytes.
fn check_elf(bytes: &[u8]) -> Result<()> {
    let len = bytes.len();
    let truncated = |what: &str| bad(format!("the ELF image ({len} bytes) is cut short: {what}"));
    if len < 64 {
        return Err(truncated("its 64-byte header"));
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err(bad(format!(
            "the ELF image is not 64-bit little-endian (class {}, data {}), as CUDA images are",
            bytes[4], bytes[5]
        )));
    }
    let field = |at| u64_at(bytes, at).ok_or_else(|| truncated("its header"));
    let half = |at| u16_at(bytes, at).ok_or_else(|| truncated("its header"));
    let (phoff, shoff) = (field(32)?, field(40)?);
    let (phentsize, phnum) = (half(54)?, half(56)?);
    let (shentsize, mut shnum, shstrndx) = (half(58)?, u64::from(half(60)?), half(62)?);
    if shnum == 0 && shoff != 0 {
        // Extended numbering: section 0's size holds the count.
        if !within(shoff, 64, len) {
            return Err(truncated("its first section header"));
        }
        shnum = field(shoff + 32)?;
    }
    if phnum == PN_XNUM {
        return Err(bad(
            "the ELF image counts its program headers elsewhere (PN_XNUM), which a \
                        cubin does not"
                .to_owned(),
        ));
    }
    if phnum > 0 {
        if phentsize < 56 {
            return Err(bad(format!(
                "the ELF image's program headers are {phentsize} bytes"
            )));
        }
        let table = u64::from(phnum) * u64::from(phentsize);
        if !within(phoff, table, len) {
            return Err(truncated(&format!(
                "its {phnum} program headers at {phoff} end past it"
            )));
        }
        for i in 0..u64::from(phnum) {
            let at = phoff + i * u64::from(phentsize);
            let (offset, size) = (field(at + 8)?, field(at + 32)?);
            if !within(offset, size, len) {
                return Err(truncated(&format!(
                    "segment {i} ({size} bytes at {offset}) ends past it"
                )));
            }
        }
    }
    if shnum > 0 {
        if shentsize < 64 {
            return Err(bad(format!(
                "the ELF image's section headers are {shentsize} bytes"
            )));
        }
        let table = shnum
            .checked_mul(u64::from(shentsize))
            .ok_or_else(|| truncated("its section count overflows"))?;
        if !within(shoff, table, len) {
            return Err(truncated(&format!(
                "its {shnum} section headers at {shoff} end past it"
            )));
        }
        if u64::from(shstrndx) >= shnum && shstrndx != 0 && shstrndx != 0xffff {
            return Err(bad(format!(
                "the ELF image names section {shstrndx} of {shnum} as its string table"
            )));
        }
        for i in 0..shnum {
            let at = shoff + i * u64::from(shentsize);
            let kind = u32_at(bytes, at + 4).ok_or_else(|| truncated("a section header"))?;
            let (offset, size) = (field(at + 24)?, field(at + 32)?);
            if kind != SHT_NOBITS && !within(offset, size, len) {
                return Err(truncated(&format!(
                    "section {i} ({size} bytes at {offset}) ends past it"
                )));
            }
        }
    }
    Ok(())
}

/// A fatbin: a 16-byte header (magic, version, header size, size of the entries after it) and
/// entries, each a header of its own size followed by its payload; the header and every entry
/// lie within the bytes, and the entries fill the size the header gives exactly.
fn check_fatbin(bytes: &[u8]) -> Result<()> {
    let len = bytes.len();
    let truncated = |what: String| bad(format!("the fatbin ({len} bytes) is cut short: {what}"));
    let header_size = u16_at(bytes, 6).ok_or_else(|| truncated("its header".to_owned()))?;
    let fat_size = u64_at(bytes, 8).ok_or_else(|| truncated("its header".to_owned()))?;
    let header_size = u64::from(header_size);
    if header_size < 16 {
        return Err(bad(format!(
            "the fatbin's header claims {header_size} bytes"
        )));
    }
    if !within(header_size, fat_size, len) {
        return Err(truncated(format!(
            "its header claims {fat_size} bytes of entries after {header_size}"
        )));
    }
    let end = header_size + fat_size;
    let mut at = header_size;
    let mut index = 0;
    while at < end {
        if end - at < 16 {
            return Err(truncated(format!("entry {index}'s header at {at}")));
        }
        let entry_header = u64::from(
            u32_at(bytes, at + 4).ok_or_else(|| truncated(format!("entry {index}'s header")))?,
        );
        let payload =
            u64_at(bytes, at + 8).ok_or_else(|| truncated(format!("entry {index}'s header")))?;
        if entry_header < 16 {
            return Err(bad(format!(
                "the fatbin's entry {index} claims a {entry_header}-byte header"
            )));
        }
        let next = at
            .checked_add(entry_header)
            .and_then(|a| a.checked_add(payload))
            .filter(|&next| next <= end)
            .ok_or_else(|| {
                truncated(format!(
                    "entry {index} ({payload} bytes after a {entry_header}-byte header at {at}) \
                     ends past the {fat_size} bytes of entries"
                ))
            })?;
        at = next;
        index += 1;
    }
    Ok(())
}

/// How many parameters `kernel` (its symbol) takes, as the image itself says, or `None` where
/// it does not say: a cubin's `.nv.info.<kernel>` section holds one `EIATTR_KPARAM_INFO`
/// record per parameter; PTX declares them in the kernel's `.entry`; a fatbin says what its
/// first cubin that is stored whole (not compressed: it starts as an ELF image does) and has
/// the kernel's section says, the count being the same for every architecture. A fatbin of
/// compressed cubins or PTX only, or a section this reading does not follow to its end, says
/// nothing.
pub(crate) fn param_count(code_type: CodeType, bytes: &[u8], kernel: &str) -> Option<usize> {
    match code_type {
        CodeType::Cubin => elf_param_count(bytes, kernel),
        CodeType::Ptx => ptx_param_count(bytes, kernel),
        CodeType::Fatbin => fatbin_elf_entries(bytes)
            .into_iter()
            .find_map(|cubin| elf_param_count(cubin, kernel)),
        _ => None,
    }
}

/// A fatbin entry's kind for a cubin (1 is PTX).
const FATBIN_ENTRY_ELF: u16 = 2;

/// The payloads of a fatbin's cubin entries that are ELF images as stored (a compressed one is
/// not), in order; nothing where the fatbin does not hold together ([`check_fatbin`]'s rules).
fn fatbin_elf_entries(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    if check(CodeType::Fatbin, bytes).is_err() {
        return out;
    }
    let (Some(header), Some(size)) = (u16_at(bytes, 6), u64_at(bytes, 8)) else {
        return out;
    };
    let mut at = u64::from(header);
    let end = at + size;
    while at < end {
        let (Some(kind), Some(entry_header), Some(payload)) = (
            u16_at(bytes, at),
            u32_at(bytes, at + 4),
            u64_at(bytes, at + 8),
        ) else {
            break;
        };
        let start = at + u64::from(entry_header);
        let stop = start + payload;
        if kind == FATBIN_ENTRY_ELF {
            if let Some(image) = usize::try_from(start)
                .ok()
                .zip(usize::try_from(stop).ok())
                .and_then(|(start, stop)| bytes.get(start..stop))
                .filter(|image| check_elf(image).is_ok())
            {
                out.push(image);
            }
        }
        at = stop;
    }
    out
}

/// `EIATTR_KPARAM_INFO`: one record per kernel parameter.
const EIATTR_KPARAM_INFO: u8 = 0x17;

fn elf_param_count(bytes: &[u8], kernel: &str) -> Option<usize> {
    check(CodeType::Cubin, bytes).ok()?;
    let shoff = u64_at(bytes, 40)?;
    let shentsize = u64::from(u16_at(bytes, 58)?);
    let shnum = u64::from(u16_at(bytes, 60)?);
    let shstrndx = u64::from(u16_at(bytes, 62)?);
    let section = |i: u64| -> Option<(u32, u64, u64)> {
        let at = shoff + i * shentsize;
        Some((
            u32_at(bytes, at)?,
            u64_at(bytes, at + 24)?,
            u64_at(bytes, at + 32)?,
        ))
    };
    let (_, names_at, names_len) = section(shstrndx)?;
    // A section `check` passed may still be `SHT_NOBITS`, of any offset and size.
    let range = |offset: u64, size: u64| -> Option<&[u8]> {
        let end = usize::try_from(offset.checked_add(size)?).ok()?;
        bytes.get(usize::try_from(offset).ok()?..end)
    };
    let names = range(names_at, names_len)?;
    let wanted = format!(".nv.info.{kernel}");
    for i in 0..shnum {
        let (name, offset, size) = section(i)?;
        let name = names.get(name as usize..)?;
        let name = &name[..name.iter().position(|&b| b == 0)?];
        if name != wanted.as_bytes() {
            continue;
        }
        return count_records(range(offset, size)?, EIATTR_KPARAM_INFO);
    }
    // No section of its own: the kernel takes no parameters only if it has none to record; the
    // image does not say which.
    None
}

/// Counts the `attribute` records of an `.nv.info` section: each a format byte, an attribute
/// byte, then by format two bytes (`EIFMT_NVAL` 1, `EIFMT_BVAL` 2, `EIFMT_HVAL` 3: no value,
/// a byte, a half-word, in a 4-byte record, as NVRTC's cubins lay them out) or a 2-byte size
/// and that many bytes (`EIFMT_SVAL`, 4). Any other format, or records that do not end where
/// the section does, say nothing.
fn count_records(records: &[u8], attribute: u8) -> Option<usize> {
    let mut at = 0usize;
    let mut count = 0;
    while at < records.len() {
        let format = *records.get(at)?;
        let attr = *records.get(at + 1)?;
        at += 2;
        match format {
            1..=3 => at += 2,
            4 => {
                let size = u16::from_le_bytes(records.get(at..at + 2)?.try_into().ok()?);
                at += 2 + usize::from(size);
            }
            _ => return None,
        }
        if attr == attribute {
            count += 1;
        }
    }
    (at == records.len()).then_some(count)
}

/// The count of `kernel`'s parameters in PTX text: the `.param`s of its `.entry`, read in the
/// code alone (comments and string literals blanked, so that an old signature in a comment or
/// a `.file` path counts for nothing), the name matched whole. Every `.entry` of that name (a
/// definition, or a declaration of it) must declare the same count; where they disagree, or
/// none is found, the text says nothing. Nor does text with a preprocessor directive in its
/// code (`#define`, `#include`, `#if`, ...): the text is read as written, not expanded, so a
/// macro could hide parameters from the count (`.entry k(.param .u64 a, MORE)`).
fn ptx_param_count(bytes: &[u8], kernel: &str) -> Option<usize> {
    let code = ptx_code(bytes.strip_suffix(&[0]).unwrap_or(bytes));
    if has_directive(&code) {
        return None;
    }
    let mut found = None;
    let mut at = 0;
    while let Some(next) = find_token(&code, at, b".entry") {
        at = next + b".entry".len();
        let rest = &code[at..];
        let declared = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
        let name_len = declared
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b'(')
            .unwrap_or(declared.len());
        if &declared[..name_len] != kernel.as_bytes() {
            continue;
        }
        let after = &declared[name_len..];
        let after = &after[after
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(after.len())..];
        let Some(params) = after.strip_prefix(b"(") else {
            continue;
        };
        let params = &params[..params.iter().position(|&b| b == b')')?];
        let count = count_tokens(params, b".param");
        match found {
            None => found = Some(count),
            Some(earlier) if earlier == count => {}
            Some(_) => return None,
        }
    }
    found
}

/// Whether a line of `code` (PTX with its comments and strings blanked) begins with `#`,
/// after any blanks: a preprocessor directive.
fn has_directive(code: &[u8]) -> bool {
    code.split(|&b| b == b'\n')
        .any(|line| line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'#'))
}

/// PTX text with its `//` and `/* */` comments and its `"..."` string literals each replaced
/// by one space. Only ASCII delimiters are looked at, so the rest keeps its bytes as they were.
fn ptx_code(text: &[u8]) -> Vec<u8> {
    let mut code = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let skip = if rest.starts_with(b"//") {
            // To the end of the line; the newline stays.
            rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            rest[2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |end| end + 4)
        } else if rest[0] == b'"' {
            let mut end = 1;
            while end < rest.len() && rest[end] != b'"' {
                end += if rest[end] == b'\\' { 2 } else { 1 };
            }
            (end + 1).min(rest.len())
        } else {
            code.push(rest[0]);
            at += 1;
            continue;
        };
        code.push(b' ');
        at += skip;
    }
    code
}

/// Whether `b` may be part of a PTX identifier. A `.` ends a word, so that `.param.u64`
/// counts as a `.param` (a count too low would let too few arguments through).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'%')
}

/// Where the next `token` at or after `from` is, standing alone (no word character next to it).
fn find_token(code: &[u8], from: usize, token: &[u8]) -> Option<usize> {
    let mut at = from;
    while at + token.len() <= code.len() {
        let found = at + code[at..].windows(token.len()).position(|w| w == token)?;
        let end = found + token.len();
        let alone_before = found == 0 || !is_word(code[found - 1]);
        let alone_after = end == code.len() || !is_word(code[end]);
        if alone_before && alone_after {
            return Some(found);
        }
        at = found + 1;
    }
    None
}

/// How many times `token` stands alone in `code`.
fn count_tokens(code: &[u8], token: &[u8]) -> usize {
    let mut count = 0;
    let mut at = 0;
    while let Some(found) = find_token(code, at, token) {
        count += 1;
        at = found + token.len();
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header with the given tables.
    fn elf(phnum: u16, shnum: u16, len: usize) -> Vec<u8> {
        let mut e = vec![0u8; len.max(64)];
        e[..4].copy_from_slice(&ELF_MAGIC);
        e[4] = 2;
        e[5] = 1;
        e[52] = 64;
        e[54] = 56;
        e[56..58].copy_from_slice(&phnum.to_le_bytes());
        e[58] = 64;
        e[60..62].copy_from_slice(&shnum.to_le_bytes());
        e
    }

    fn set_u64(bytes: &mut [u8], at: usize, value: u64) {
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    /// An ELF with one section of `size` bytes at `offset`, its table at 64.
    fn elf_with_section(kind: u32, offset: u64, size: u64) -> Vec<u8> {
        let mut e = elf(0, 1, 64 + 64 + 16);
        set_u64(&mut e, 40, 64);
        e[64 + 4..64 + 8].copy_from_slice(&kind.to_le_bytes());
        set_u64(&mut e, 64 + 24, offset);
        set_u64(&mut e, 64 + 32, size);
        e
    }

    /// A fatbin of entries `(kind, payload)`, each with a 64-byte header.
    fn fatbin_holding(entries: &[(u16, &[u8])]) -> Vec<u8> {
        let mut f = vec![0u8; 16];
        f[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        f[4..6].copy_from_slice(&1u16.to_le_bytes());
        f[6..8].copy_from_slice(&16u16.to_le_bytes());
        for (kind, payload) in entries {
            let mut header = [0u8; 64];
            header[..2].copy_from_slice(&kind.to_le_bytes());
            header[4..8].copy_from_slice(&64u32.to_le_bytes());
            header[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            f.extend_from_slice(&header);
            f.extend_from_slice(payload);
        }
        let size = (f.len() - 16) as u64;
        set_u64(&mut f, 8, size);
        f
    }

    fn fatbin(entries: &[(u32, u64)], claimed: Option<u64>, len: usize) -> Vec<u8> {
        let size: u64 = entries.iter().map(|(h, p)| u64::from(*h) + p).sum();
        let mut f = vec![0u8; len.max(16)];
        f[..4].copy_from_slice(&FATBIN_MAGIC.to_le_bytes());
        f[4..6].copy_from_slice(&1u16.to_le_bytes());
        f[6..8].copy_from_slice(&16u16.to_le_bytes());
        set_u64(&mut f, 8, claimed.unwrap_or(size));
        let mut at = 16usize;
        for (header, payload) in entries {
            if at + 16 <= len {
                f[at..at + 2].copy_from_slice(&2u16.to_le_bytes());
                f[at + 4..at + 8].copy_from_slice(&header.to_le_bytes());
                set_u64(&mut f, at + 8, *payload);
            }
            at += *header as usize + *payload as usize;
        }
        f.truncate(len);
        f
    }

    fn refused(declared: CodeType, bytes: &[u8], needle: &str) {
        match check(declared, bytes) {
            Err(Error::InvalidArgument {
                name: "code",
                reason,
            }) => {
                assert!(reason.contains(needle), "{reason:?} lacks {needle:?}")
            }
            other => panic!("{declared:?} of {} bytes: {other:?}", bytes.len()),
        }
    }

    #[test]
    fn an_elf_image_is_checked_against_its_own_tables() {
        assert_eq!(check(CodeType::Cubin, &elf(0, 0, 64)), Ok(()));
        // Cut short: the header, a section past the end, a table past the end.
        refused(CodeType::Cubin, &elf(0, 0, 64)[..40], "64-byte header");
        refused(
            CodeType::Cubin,
            &elf_with_section(1, 100, 1 << 30),
            "section 0 (1073741824 bytes at 100)",
        );
        refused(
            CodeType::Cubin,
            &elf_with_section(1, u64::MAX, 2),
            "section 0",
        );
        let mut short_table = elf(0, 3, 64 + 64);
        set_u64(&mut short_table, 40, 64);
        refused(CodeType::Cubin, &short_table, "3 section headers");
        // A NOBITS section takes no bytes of the file: any size.
        assert_eq!(
            check(CodeType::Cubin, &elf_with_section(SHT_NOBITS, 0, 1 << 40)),
            Ok(())
        );
        assert_eq!(
            check(CodeType::Cubin, &elf_with_section(1, 128, 16)),
            Ok(())
        );
        // A program header whose segment ends past the bytes.
        let mut segment = elf(1, 0, 64 + 56);
        set_u64(&mut segment, 32, 64);
        set_u64(&mut segment, 64 + 8, 64);
        set_u64(&mut segment, 64 + 32, 4096);
        refused(CodeType::Cubin, &segment, "segment 0");
        set_u64(&mut segment, 64 + 32, 56);
        assert_eq!(check(CodeType::Cubin, &segment), Ok(()));
        // 32-bit images are not CUDA's.
        let mut elf32 = elf(0, 0, 64);
        elf32[4] = 1;
        refused(CodeType::Cubin, &elf32, "64-bit");
    }

    #[test]
    fn a_fatbin_is_checked_against_its_header_and_entries() {
        let good = fatbin(&[(64, 128), (64, 32)], None, 16 + 64 + 128 + 64 + 32);
        assert_eq!(check(CodeType::Fatbin, &good), Ok(()));
        // A 16-byte header claiming 1 GiB of entries.
        refused(
            CodeType::Fatbin,
            &fatbin(&[], Some(1 << 30), 16),
            "claims 1073741824 bytes",
        );
        // An entry whose payload ends past the entries.
        let mut long_entry = good.clone();
        set_u64(&mut long_entry, 16 + 8, 1 << 20);
        refused(CodeType::Fatbin, &long_entry, "entry 0");
        // Entries that do not fill the size exactly: a cut header at the end.
        refused(
            CodeType::Fatbin,
            &fatbin(&[(64, 128)], Some(64 + 128 + 8), 16 + 64 + 128 + 8),
            "entry 1's header",
        );
        refused(CodeType::Fatbin, &fatbin(&[], None, 8), "its header");
    }

    #[test]
    fn nv_info_records_are_counted_and_odd_ones_say_nothing() {
        // EIATTR_PARAM_CBANK (SVAL, 8 bytes), two KPARAM_INFO (SVAL, 12), MAXREG_COUNT (HVAL).
        let mut records = vec![4, 0x0a, 8, 0];
        records.extend([0; 8]);
        for _ in 0..2 {
            records.extend([4, EIATTR_KPARAM_INFO, 12, 0]);
            records.extend([0; 12]);
        }
        records.extend([3, 0x1b, 0xff, 0]);
        assert_eq!(count_records(&records, EIATTR_KPARAM_INFO), Some(2));
        // A byte value in its 4-byte record, as NVRTC writes them.
        assert_eq!(count_records(&[2, 0x6d, 0, 0], EIATTR_KPARAM_INFO), Some(0));
        // A format this does not know, or records cut short, give no count.
        assert_eq!(count_records(&[7, 0x17, 1, 0], EIATTR_KPARAM_INFO), None);
        assert_eq!(
            count_records(&records[..records.len() - 1], EIATTR_KPARAM_INFO),
            None
        );
    }

    #[test]
    // Miri runs no foreign code, and NVRTC is loaded with dlopen.
    #[cfg_attr(miri, ignore = "loads NVRTC (dlopen), which Miri cannot run")]
    fn nvrtcs_images_say_how_many_parameters_each_kernel_takes() {
        use crate::program::{Program, ProgramOptions};
        let source = r#"
            extern "C" __global__ void none() {}
            extern "C" __global__ void one(float* x) { *x = 1; }
            struct Pair { double a; char b; };
            extern "C" __global__ void four(float* x, int n, Pair p, char c) { x[n] = p.a + c; }
            extern "C" __global__ void sixteen(int a0, int a1, int a2, int a3, int a4, int a5,
                int a6, int a7, int a8, int a9, int a10, int a11, int a12, int a13, int a14,
                long long* out) { *out = a0 + a15_unused(); }
        "#
        .replace(
            "a15_unused()",
            "a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14",
        );
        let program = Program::new(source, ProgramOptions::default().with_arch("90"));
        for target in [CodeType::Cubin, CodeType::Ptx] {
            let code = match program.compile(target, &[]) {
                Ok(code) => code,
                Err(e @ Error::NvrtcNotFound { .. }) => {
                    return crate::test_support::not_run("nvrtc", &format!("no NVRTC: {e}"));
                }
                Err(e) => panic!("{e}"),
            };
            for (kernel, count) in [("none", 0), ("one", 1), ("four", 4), ("sixteen", 16)] {
                let found = param_count(target, code.code(), kernel);
                // The same cubin in a fatbin, after a PTX entry and a compressed-looking one
                // (not an ELF image as stored): counted from the cubin alone.
                if target == CodeType::Cubin {
                    let fat = fatbin_holding(&[
                        (1, b"garbage".as_slice()),
                        (2, b"zzzzzzzz"),
                        (2, code.code()),
                    ]);
                    assert_eq!(
                        param_count(CodeType::Fatbin, &fat, kernel),
                        found,
                        "{kernel} in a fatbin"
                    );
                    let no_cubin = fatbin_holding(&[(1, code.code()), (2, b"zzzzzzzz")]);
                    assert_eq!(param_count(CodeType::Fatbin, &no_cubin, kernel), None);
                }
                // A cubin gives no count for a kernel without parameters' records only where
                // it has no section of its own; otherwise the count is exact.
                if !(target == CodeType::Cubin && count == 0 && found.is_none()) {
                    assert_eq!(found, Some(count), "{kernel} in {target:?}");
                }
            }
        }
    }

    /// An ELF image of three sections: none, the section names (section 1) and
    /// `.nv.info.k` (section 2) with one `EIATTR_KPARAM_INFO` record.
    fn elf_with_nv_info() -> Vec<u8> {
        let names = b"\0.shstrtab\0.nv.info.k\0";
        let mut record = vec![4, EIATTR_KPARAM_INFO, 12, 0];
        record.extend([0; 12]);
        let mut e = elf(0, 3, 64 + 3 * 64);
        set_u64(&mut e, 40, 64);
        e[62] = 1;
        for (i, name, bytes) in [(1, 1u32, &names[..]), (2, 11, &record[..])] {
            let header = 64 + i * 64;
            e[header..header + 4].copy_from_slice(&name.to_le_bytes());
            e[header + 4] = 1;
            let at = e.len() as u64;
            set_u64(&mut e, header + 24, at);
            set_u64(&mut e, header + 32, bytes.len() as u64);
            e.extend_from_slice(bytes);
        }
        e
    }

    /// Found by the image_param_count fuzz target: bytes laid out as a cubin but for the ELF
    /// magic were counted, though `check` refuses them as a cubin (and a fatbin entry that
    /// does not start as an ELF image is compressed, not a cubin to read).
    #[test]
    fn only_an_elf_image_gives_a_cubins_count() {
        let e = elf_with_nv_info();
        assert_eq!(param_count(CodeType::Cubin, &e, "k"), Some(1));
        let fat = fatbin_holding(&[(2, &e)]);
        assert_eq!(param_count(CodeType::Fatbin, &fat, "k"), Some(1));
        let mut not_elf = e;
        not_elf[1] = b'/';
        assert!(check(CodeType::Cubin, &not_elf).is_err());
        assert_eq!(param_count(CodeType::Cubin, &not_elf, "k"), None);
        let fat = fatbin_holding(&[(2, &not_elf)]);
        assert_eq!(param_count(CodeType::Fatbin, &fat, "k"), None);
    }

    /// Found by the image_param_count fuzz target: a fatbin's count was read after
    /// check_fatbin alone, which does not look at the magic, so bytes laid out as a fatbin
    /// but for it were counted, though `check` refuses them as a fatbin.
    #[test]
    fn only_a_fatbin_gives_a_fatbins_count() {
        let mut fat = fatbin_holding(&[(2, &elf_with_nv_info())]);
        assert_eq!(param_count(CodeType::Fatbin, &fat, "k"), Some(1));
        fat[1] = 0x3d;
        assert!(check(CodeType::Fatbin, &fat).is_err());
        assert_eq!(param_count(CodeType::Fatbin, &fat, "k"), None);
    }

    /// Found by the image_param_count fuzz target: a `SHT_NOBITS` section, which `check`
    /// lets have any offset and size, as the section names or the kernel's `.nv.info`, made
    /// the offset plus the size overflow (a panic in a debug build).
    #[test]
    fn a_nobits_section_past_the_address_space_gives_no_count() {
        let names = elf_with_section(SHT_NOBITS, u64::MAX, 2);
        assert_eq!(check(CodeType::Cubin, &names), Ok(()));
        assert_eq!(param_count(CodeType::Cubin, &names, "k"), None);
        let mut info = elf_with_nv_info();
        info[2 * 64 + 64 + 4] = SHT_NOBITS as u8;
        set_u64(&mut info, 2 * 64 + 64 + 24, u64::MAX);
        assert_eq!(check(CodeType::Cubin, &info), Ok(()));
        assert_eq!(param_count(CodeType::Cubin, &info, "k"), None);
    }

    #[test]
    fn ptx_entries_declare_their_parameters() {
        let ptx = b".visible .entry other(\n.param .u64 a\n)\n.visible .entry saxpy(\n\t.param .f32 saxpy_param_0,\n\t.param .u64 saxpy_param_1,\n\t.param .u32 saxpy_param_2\n)\n{\n}\n.entry none()\n{}\0";
        assert_eq!(param_count(CodeType::Ptx, ptx, "saxpy"), Some(3));
        assert_eq!(param_count(CodeType::Ptx, ptx, "other"), Some(1));
        assert_eq!(param_count(CodeType::Ptx, ptx, "none"), Some(0));
        assert_eq!(param_count(CodeType::Ptx, ptx, "sax"), None);
        assert_eq!(param_count(CodeType::Fatbin, ptx, "saxpy"), None);
    }

    #[test]
    fn an_entry_in_a_ptx_comment_or_string_is_not_the_kernels() {
        let real =
            ".visible .entry k(\n.param .u64 a,\n.param .u64 b,\n.param .u32 c\n)\n{\nret;\n}\n";
        // A commented old signature above the real one.
        let line = format!("// old signature: .entry k(.param .u64 x)\n{real}\0");
        assert_eq!(param_count(CodeType::Ptx, line.as_bytes(), "k"), Some(3));
        // A block comment, across lines, and one inside the parameter list itself.
        let block = "/* was:\n.entry k(\n.param .u64 x\n)\n*/\n.visible .entry k(\n.param .u64 a, /* .param .u64 gone ) */\n.param .u64 b,\n// .param .u64 old)\n.param .u32 c\n)\n{\n}\n\0".to_string();
        assert_eq!(param_count(CodeType::Ptx, block.as_bytes(), "k"), Some(3));
        // A string (a `.file` path) holding a comment opener or an `.entry`.
        let string = format!(
            ".file 1 \"/src//a.cu /* \\\" .entry k(.param .u64 x)\"\n{real}.file 2 \"*/\"\n\0"
        );
        assert_eq!(param_count(CodeType::Ptx, string.as_bytes(), "k"), Some(3));
        // An `.entry` whose name begins with the kernel's, before the kernel's own; and the
        // other way round.
        let prefixed =
            format!(".entry k_old(\n.param .u64 x\n)\n{{}}\n.entry kk(\n)\n{{}}\n{real}\0");
        assert_eq!(
            param_count(CodeType::Ptx, prefixed.as_bytes(), "k"),
            Some(3)
        );
        assert_eq!(
            param_count(CodeType::Ptx, prefixed.as_bytes(), "k_old"),
            Some(1)
        );
        assert_eq!(
            param_count(CodeType::Ptx, prefixed.as_bytes(), "kk"),
            Some(0)
        );
        // A word that merely contains `.entry` or `.param` is neither.
        let words =
            ".entryx k(.param .u64 x)\n.visible .entry k(.param.u64 a, .param .u64 a.params)\n{}\0"
                .to_string();
        assert_eq!(param_count(CodeType::Ptx, words.as_bytes(), "k"), Some(2));
        // Only a comment names the kernel: the text says nothing.
        assert_eq!(
            param_count(CodeType::Ptx, b"// .entry k(.param .u64 x)\n\0", "k"),
            None
        );
        // Two entries of one name that disagree: nothing either.
        let twice = format!(".entry k(.param .u64 x)\n{{}}\n{real}\0");
        assert_eq!(param_count(CodeType::Ptx, twice.as_bytes(), "k"), None);
    }

    /// Review W10: the PTX text is not expanded, so a macro can hide parameters from the
    /// count. Text with any preprocessor directive says nothing; a `#` in a comment or a
    /// string, or past a line's start, is no directive.
    #[test]
    fn ptx_with_a_preprocessor_directive_says_no_count() {
        let hidden = "#define MORE .param .u64 b, .param .u64 c\n\
                      .visible .entry k(.param .u64 a, MORE)\n{\nret;\n}\n\0";
        // Bug caught: the count read 1 (the one `.param` in sight) for a kernel of three.
        assert_eq!(param_count(CodeType::Ptx, hidden.as_bytes(), "k"), None);
        // Any directive, anywhere, indented or after a comment on its line: the text may mean
        // something else than it reads (an `#include`, an `#if` around an entry).
        let real = ".visible .entry k(.param .u64 a, .param .u64 b)\n{\nret;\n}\n";
        for directive in [
            "#include \"more.ptx\"\n",
            "  \t#if 0\n.entry k(.param .u64 x)\n#endif\n",
            "/* a comment */ #undef X\n",
            "#\n",
        ] {
            let text = format!("{directive}{real}\0");
            assert_eq!(
                param_count(CodeType::Ptx, text.as_bytes(), "k"),
                None,
                "{directive:?}"
            );
            let after = format!("{real}{directive}\0");
            assert_eq!(
                param_count(CodeType::Ptx, after.as_bytes(), "k"),
                None,
                "{directive:?} after the entry"
            );
        }
        // A `#` in a comment, across a block comment's lines, or in a string is no directive
        // (catches a check that gives up on every `#`): the count stands.
        for harmless in [
            "// #define MORE .param .u64 c\n",
            "/* notes:\n#define MORE .param .u64 c\n*/\n",
            ".file 1 \"/src/#a.cu\"\n",
        ] {
            let text = format!("{harmless}{real}\0");
            assert_eq!(
                param_count(CodeType::Ptx, text.as_bytes(), "k"),
                Some(2),
                "{harmless:?}"
            );
        }
    }

    #[test]
    fn the_declared_type_must_be_the_found_one() {
        let ptx = b".version 8.0\n.target sm_90\n.address_size 64\n\0";
        assert_eq!(check(CodeType::Ptx, ptx), Ok(()));
        // PTX passed as a cubin or a fatbin: the driver would read it as a string.
        refused(
            CodeType::Cubin,
            ptx,
            "declared a cubin, but its bytes are neither",
        );
        refused(CodeType::Fatbin, ptx, "declared a fatbin");
        refused(CodeType::Ptx, &elf(0, 0, 64), "its bytes are an ELF image");
        refused(
            CodeType::Cubin,
            &fatbin(&[], None, 16),
            "its bytes are a fatbin",
        );
        refused(CodeType::Ptx, b".version 8.0", "NUL");
        assert_eq!(check(CodeType::LtoIr, b"anything"), Ok(()));
    }
}
