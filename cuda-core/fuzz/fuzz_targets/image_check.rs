//! `image::check`: bytes declared a cubin, a fatbin, PTX, LTO-IR or a static library, checked
//! before the driver follows their headers. Beyond not panicking: bytes are accepted as one
//! kind at most (LTO-IR, never loaded, is never checked), and where they are accepted, every
//! table, segment and section the driver reads lies within them, as an independent walk of
//! the headers finds.

#![no_main]

use cuda_core::fuzzing::image_check;
use cuda_core::CodeType;
use libfuzzer_sys::fuzz_target;

const TYPES: [CodeType; 5] = [
    CodeType::Ptx,
    CodeType::Cubin,
    CodeType::Fatbin,
    CodeType::LtoIr,
    CodeType::Library,
];

fuzz_target!(|bytes: &[u8]| {
    let accepted: Vec<CodeType> = TYPES
        .into_iter()
        .filter(|&declared| image_check(declared, bytes).is_ok())
        .collect();
    assert!(accepted.contains(&CodeType::LtoIr), "LTO-IR is not checked");
    assert!(accepted.len() <= 2, "accepted as {accepted:?}");
    for declared in accepted {
        match declared {
            CodeType::Cubin => elf_within(bytes),
            CodeType::Fatbin => fatbin_within(bytes),
            CodeType::Ptx => {
                assert_eq!(bytes.last(), Some(&0), "PTX without its NUL");
                assert!(!bytes.starts_with(b"\x7fELF") && !bytes.starts_with(b"!<arch>\n"));
                assert!(bytes.len() < 4 || int::<4>(bytes, 0) != 0xBA55_ED50);
            }
            CodeType::Library => assert!(bytes.starts_with(b"!<arch>\n")),
            _ => {}
        }
    }
});

/// A little-endian integer of `N` bytes at `at`, which must lie within `bytes`.
fn int<const N: usize>(bytes: &[u8], at: u128) -> u128 {
    let at = usize::try_from(at).expect("an offset past usize");
    let field = bytes
        .get(at..at + N)
        .unwrap_or_else(|| panic!("{N} bytes at {at} of {} read", bytes.len()));
    field
        .iter()
        .rev()
        .fold(0u128, |value, &b| (value << 8) | u128::from(b))
}

/// Asserts that `[offset, offset + size)` lies within `bytes`.
fn within(bytes: &[u8], offset: u128, size: u128, what: &str) {
    assert!(
        offset + size <= bytes.len() as u128,
        "{what}: {size} bytes at {offset} of {}",
        bytes.len()
    );
}

/// An accepted cubin: a 64-bit little-endian ELF image whose header, program-header and
/// section-header tables, segments and sections (but `SHT_NOBITS` ones) are within it.
fn elf_within(bytes: &[u8]) {
    within(bytes, 0, 64, "the ELF header");
    assert_eq!(bytes[4..6], [2, 1], "not ELF64 little-endian");
    let (phoff, shoff) = (int::<8>(bytes, 32), int::<8>(bytes, 40));
    let (phentsize, phnum) = (int::<2>(bytes, 54), int::<2>(bytes, 56));
    let (shentsize, mut shnum) = (int::<2>(bytes, 58), int::<2>(bytes, 60));
    assert_ne!(phnum, 0xffff, "PN_XNUM accepted");
    if shnum == 0 && shoff != 0 {
        within(bytes, shoff, 64, "section 0, which holds the section count");
        shnum = int::<8>(bytes, shoff + 32);
    }
    if phnum > 0 {
        assert!(phentsize >= 56, "{phentsize}-byte program headers");
        within(bytes, phoff, phnum * phentsize, "the program headers");
        for i in 0..phnum {
            let at = phoff + i * phentsize;
            let (offset, size) = (int::<8>(bytes, at + 8), int::<8>(bytes, at + 32));
            within(bytes, offset, size, &format!("segment {i}"));
        }
    }
    if shnum > 0 {
        assert!(shentsize >= 64, "{shentsize}-byte section headers");
        within(bytes, shoff, shnum * shentsize, "the section headers");
        for i in 0..shnum {
            let at = shoff + i * shentsize;
            let kind = int::<4>(bytes, at + 4);
            let (offset, size) = (int::<8>(bytes, at + 24), int::<8>(bytes, at + 32));
            if kind != 8 {
                within(bytes, offset, size, &format!("section {i}"));
            }
        }
    }
}

/// An accepted fatbin: its 16-byte header, and entries, each of a header of at least 16
/// bytes and a payload, that fill the size the header gives exactly, within the bytes.
fn fatbin_within(bytes: &[u8]) {
    within(bytes, 0, 16, "the fatbin header");
    assert_eq!(int::<4>(bytes, 0), 0xBA55_ED50);
    let header = int::<2>(bytes, 6);
    let size = int::<8>(bytes, 8);
    assert!(header >= 16, "a {header}-byte fatbin header");
    within(bytes, header, size, "the fatbin's entries");
    let end = header + size;
    let mut at = header;
    while at < end {
        within(bytes, at, 16, "an entry's header");
        let (entry_header, payload) = (int::<4>(bytes, at + 4), int::<8>(bytes, at + 8));
        assert!(entry_header >= 16, "a {entry_header}-byte entry header");
        at += entry_header + payload;
        assert!(at <= end, "an entry past the fatbin's entries");
    }
    assert_eq!(at, end);
}
