//! `image::param_count`: how many parameters a kernel takes, as a cubin's `.nv.info`
//! records, a PTX `.entry` or a fatbin's cubins say. The input is a code type (one byte), a
//! kernel name (a length byte, then that many bytes) and the image. Beyond not panicking: a
//! count comes only from an image that passes its check; a count is no more than the image
//! could hold; PTX says the same with or without its NUL; and a cubin stored whole in a
//! fatbin gives the fatbin the cubin's count.

#![no_main]

use cuda_core::fuzzing::{image_check, image_param_count};
use cuda_core::CodeType;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let Some((&name_len, rest)) = rest.split_first() else {
        return;
    };
    let name_len = usize::from(name_len % 64).min(rest.len());
    let (name, image) = rest.split_at(name_len);
    let kernel = String::from_utf8_lossy(name);
    let code_type = match kind % 5 {
        0 => CodeType::Ptx,
        1 => CodeType::Cubin,
        2 => CodeType::Fatbin,
        3 => CodeType::LtoIr,
        _ => CodeType::Library,
    };
    let count = image_param_count(code_type, image, &kernel);
    match code_type {
        CodeType::Cubin | CodeType::Fatbin => {
            if let Some(n) = count {
                assert!(
                    image_check(code_type, image).is_ok(),
                    "a count of {n} from {code_type:?} that fails its check"
                );
                // Each EIATTR_KPARAM_INFO record takes at least 4 bytes.
                assert!(
                    n <= image.len() / 4,
                    "{n} parameters in {} bytes",
                    image.len()
                );
            }
        }
        CodeType::Ptx => {
            if let Some(n) = count {
                // The first byte alone before the rest: libFuzzer traces every comparison
                // of slices, which would cost more than the count itself.
                let params = image
                    .windows(6)
                    .filter(|w| w[0] == b'.' && w[1..] == *b"param")
                    .count();
                assert!(n <= params, "{n} parameters from {params} `.param`s");
            }
            if image.last() != Some(&0) {
                let mut with_nul = image.to_vec();
                with_nul.push(0);
                assert_eq!(
                    image_param_count(CodeType::Ptx, &with_nul, &kernel),
                    count,
                    "PTX counted otherwise with its NUL"
                );
            }
        }
        _ => assert_eq!(count, None, "a count from {code_type:?}"),
    }
    if code_type == CodeType::Cubin && image_check(CodeType::Cubin, image).is_ok() {
        assert_eq!(
            image_param_count(CodeType::Fatbin, &fatbin_of(image), &kernel),
            count,
            "the cubin counted otherwise in a fatbin"
        );
    }
});

/// A fatbin of one cubin entry (kind 2) holding `cubin` after a 64-byte entry header.
fn fatbin_of(cubin: &[u8]) -> Vec<u8> {
    let mut fat = Vec::with_capacity(16 + 64 + cubin.len());
    fat.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&(64 + cubin.len() as u64).to_le_bytes());
    let mut entry = [0u8; 64];
    entry[..2].copy_from_slice(&2u16.to_le_bytes());
    entry[4..8].copy_from_slice(&64u32.to_le_bytes());
    entry[8..16].copy_from_slice(&(cubin.len() as u64).to_le_bytes());
    fat.extend_from_slice(&entry);
    fat.extend_from_slice(cubin);
    fat
}
