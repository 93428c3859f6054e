//! Writes the seed corpus of each fuzz target to `corpus/<target>/seed-*`: valid inputs, made
//! with the crate's own writers where it has them, each checked by the crate's reader. Real
//! PTX and cubins come from NVRTC where it is found; without it those seeds are left as they
//! are. It needs the fuzz targets' entry points (`--cfg fuzzing`):
//!
//! ```text
//! RUSTFLAGS="--cfg fuzzing" cargo run --manifest-path cuda-core/fuzz/Cargo.toml --example seeds
//! ```

use std::path::{Path, PathBuf};

use cuda_core::cache::{CacheKey, FileStreamProgramCache, ProgramCache};
use cuda_core::dlpack::{DLDataType, DLDeviceType};
use cuda_core::fuzzing::{cache_entry_decode, cache_entry_encode, image_check, image_param_count};
use cuda_core::ipc::{
    BufferDescriptor, IpcEventHandle, IpcMemHandle, SharedPhysicalMemory, SharedPoolHandle,
};
use cuda_core::{CodeType, ObjectCode, Program, ProgramOptions};

const SOURCE: &str = r#"
struct Pair { double a; char b; };
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void none() {}
extern "C" __global__ void pair(float* out, Pair p, char c) { *out = p.a + p.b + c; }
template <int N> __global__ void scaled(float* x) { x[threadIdx.x] *= N; }
"#;

/// PTX written by hand: comments, a string and two entries.
const HAND_PTX: &[u8] = b"\
    //\n\
    // written by hand\n\
    //\n\
    .version 8.0\n\
    .target sm_90\n\
    .address_size 64\n\
    .file 1 \"/src/a.cu /* \\\" .entry k(.param .u64 x)\"\n\
    /* old:\n\
    .entry k(.param .u64 x)\n\
    */\n\
    .visible .entry k(\n\
    \t.param .u64 k_param_0, // .param .u32 gone\n\
    \t.param .u32 k_param_1\n\
    )\n\
    {\n\
    \tret;\n\
    }\n\
    .visible .entry other()\n\
    {\n\
    \tret;\n\
    }\n\
    \0";

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let compiled = compile();
    image_seeds(&root, compiled.as_ref());
    cache_seeds(&root, compiled.as_ref());
    dlpack_seeds(&root);
    ipc_seeds(&root);
}

fn write(root: &Path, target: &str, name: &str, bytes: &[u8]) {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
}

/// The source's cubin and PTX, compiled for sm_90 by NVRTC, if it is found.
struct Compiled {
    cubin: ObjectCode,
    ptx: ObjectCode,
}

fn compile() -> Option<Compiled> {
    let program = Program::new(SOURCE, ProgramOptions::default().with_arch("90"));
    match program.compile(CodeType::Cubin, &["scaled<2>"]) {
        Ok(cubin) => Some(Compiled {
            cubin,
            ptx: program.compile(CodeType::Ptx, &["scaled<2>"]).unwrap(),
        }),
        Err(e) => {
            eprintln!("no NVRTC ({e}): the seeds of compiled code are left as they are");
            None
        }
    }
}

/// A fatbin of `(kind, payload)` entries (1 PTX, 2 a cubin), each after a 64-byte header.
fn fatbin(entries: &[(u16, &[u8])]) -> Vec<u8> {
    let mut fat = Vec::new();
    fat.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fat.extend_from_slice(&1u16.to_le_bytes());
    fat.extend_from_slice(&16u16.to_le_bytes());
    fat.extend_from_slice(&0u64.to_le_bytes());
    for (kind, payload) in entries {
        let mut header = [0u8; 64];
        header[..2].copy_from_slice(&kind.to_le_bytes());
        header[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        header[4..8].copy_from_slice(&64u32.to_le_bytes());
        header[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        fat.extend_from_slice(&header);
        fat.extend_from_slice(payload);
    }
    let size = (fat.len() - 16) as u64;
    fat[8..16].copy_from_slice(&size.to_le_bytes());
    fat
}

/// A minimal ELF64 image: a header, one program header, a section-header string table and a
/// `.nv.info.k` section of two `EIATTR_KPARAM_INFO` records.
fn small_elf() -> Vec<u8> {
    let names = b"\0.shstrtab\0.nv.info.k\0";
    let mut info = Vec::new();
    for _ in 0..2 {
        info.extend_from_slice(&[4, 0x17, 12, 0]);
        info.extend_from_slice(&[0; 12]);
    }
    let names_at = 64 + 56;
    let info_at = names_at + names.len();
    let shoff = info_at + info.len();
    let mut e = vec![0u8; shoff + 3 * 64];
    e[..4].copy_from_slice(b"\x7fELF");
    e[4] = 2;
    e[5] = 1;
    e[6] = 1;
    e[32..40].copy_from_slice(&64u64.to_le_bytes());
    e[40..48].copy_from_slice(&(shoff as u64).to_le_bytes());
    e[52] = 64;
    e[54] = 56;
    e[56] = 1;
    e[58] = 64;
    e[60] = 3;
    e[62] = 1;
    // The program header: a segment of the whole image.
    let len = e.len() as u64;
    e[64 + 32..64 + 40].copy_from_slice(&len.to_le_bytes());
    e[names_at..info_at].copy_from_slice(names);
    e[info_at..shoff].copy_from_slice(&info);
    let section = |e: &mut Vec<u8>, i: usize, name: u32, kind: u32, at: usize, size: usize| {
        let h = shoff + i * 64;
        e[h..h + 4].copy_from_slice(&name.to_le_bytes());
        e[h + 4..h + 8].copy_from_slice(&kind.to_le_bytes());
        e[h + 24..h + 32].copy_from_slice(&(at as u64).to_le_bytes());
        e[h + 32..h + 40].copy_from_slice(&(size as u64).to_le_bytes());
    };
    section(&mut e, 1, 1, 3, names_at, names.len());
    section(&mut e, 2, 11, 0x7000_0000, info_at, info.len());
    e
}

fn image_seeds(root: &Path, compiled: Option<&Compiled>) {
    let elf = small_elf();
    let mut images: Vec<(&str, CodeType, Vec<u8>, Vec<&str>)> = vec![
        (
            "ptx-by-hand",
            CodeType::Ptx,
            HAND_PTX.to_vec(),
            vec!["k", "other"],
        ),
        ("elf-small", CodeType::Cubin, elf.clone(), vec!["k"]),
        (
            "fatbin-small",
            CodeType::Fatbin,
            fatbin(&[(1, HAND_PTX), (2, &elf)]),
            vec!["k"],
        ),
        (
            "archive",
            CodeType::Library,
            b"!<arch>\n/               0           0     0     0       4         `\n\0\0\0\0"
                .to_vec(),
            vec![],
        ),
    ];
    if let Some(c) = compiled {
        let scaled = c.cubin.lowered_name("scaled<2>").unwrap();
        let kernels = vec!["saxpy", "none", "pair", scaled];
        images.push((
            "cubin-nvrtc",
            CodeType::Cubin,
            c.cubin.code().to_vec(),
            kernels.clone(),
        ));
        images.push((
            "ptx-nvrtc",
            CodeType::Ptx,
            c.ptx.code().to_vec(),
            kernels.clone(),
        ));
        images.push((
            "fatbin-nvrtc",
            CodeType::Fatbin,
            fatbin(&[(1, c.ptx.code()), (2, c.cubin.code())]),
            kernels,
        ));
    }
    for (name, code_type, bytes, kernels) in images {
        image_check(code_type, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        write(root, "image_check", name, &bytes);
        let kind = match code_type {
            CodeType::Ptx => 0,
            CodeType::Cubin => 1,
            CodeType::Fatbin => 2,
            _ => 4,
        };
        for kernel in kernels {
            let mut input = vec![kind, kernel.len() as u8];
            input.extend_from_slice(kernel.as_bytes());
            input.extend_from_slice(&bytes);
            assert!(
                code_type == CodeType::Library
                    || image_param_count(code_type, &bytes, kernel).is_some()
                    || kernel == "none",
                "{name}: no count for {kernel}"
            );
            let kernel = if kernel.starts_with("_Z") {
                "scaled"
            } else {
                kernel
            };
            write(
                root,
                "image_param_count",
                &format!("{name}-{kernel}"),
                &input,
            );
        }
    }
}

fn cache_seeds(root: &Path, compiled: Option<&Compiled>) {
    let mut codes = vec![
        ObjectCode::from_bytes(CodeType::Ptx, HAND_PTX.to_vec()),
        ObjectCode::from_bytes(CodeType::Cubin, small_elf()),
        ObjectCode::from_bytes(CodeType::Library, b"!<arch>\n".to_vec()),
    ];
    if let Some(c) = compiled {
        codes.push(c.cubin.clone());
    }
    let dir = std::env::temp_dir().join(format!("cuda-core-fuzz-seeds-{}", std::process::id()));
    let cache = FileStreamProgramCache::new(&dir, 1 << 30).unwrap();
    for (i, code) in codes.iter().enumerate() {
        let payload = cache_entry_encode(code);
        assert!(cache_entry_decode(&payload).is_some());
        let name = format!("{:?}-{i}", code.code_type()).to_lowercase();
        // Odd first byte: the payload, in a header the target makes.
        let mut input = vec![1];
        input.extend_from_slice(&payload);
        write(root, "cache_entry", &format!("payload-{name}"), &input);
        // Even: a whole file, as the file cache wrote it.
        let key = CacheKey::builder().field("seed", name.as_bytes()).finish();
        cache.put_code(&key, code);
        let mut input = vec![0];
        input.extend_from_slice(&std::fs::read(dir.join(key.to_hex())).unwrap());
        assert_eq!(cache.get(&key).as_deref(), Some(&payload[..]));
        write(root, "cache_entry", &format!("file-{name}"), &input);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let key = CacheKey::builder().field("seed", b"name").finish();
    write(root, "cache_entry", "file-name", key.to_hex().as_bytes());
}

/// A tensor in the layout the `dlpack_import` target reads.
struct Tensor {
    choice: u8,
    device_type: DLDeviceType,
    device_id: i32,
    dtype: DLDataType,
    data: u64,
    byte_offset: u64,
    flags: u64,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

impl Tensor {
    fn bytes(&self) -> Vec<u8> {
        let mut b = vec![self.choice];
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&self.flags.to_le_bytes());
        b.extend_from_slice(&self.device_type.0.to_le_bytes());
        b.extend_from_slice(&self.device_id.to_le_bytes());
        b.extend_from_slice(&[self.dtype.code, self.dtype.bits]);
        b.extend_from_slice(&self.dtype.lanes.to_le_bytes());
        b.extend_from_slice(&self.data.to_le_bytes());
        b.extend_from_slice(&self.byte_offset.to_le_bytes());
        b.push(self.shape.len() as u8);
        for v in self.shape.iter().chain(&self.strides) {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }
}

fn dlpack_seeds(root: &Path) {
    // The element types by the target's choice >> 4: u8, i16, u32, f32, f64, i64.
    let f32 = DLDataType::scalar(DLDataType::FLOAT, 32);
    let f64 = DLDataType::scalar(DLDataType::FLOAT, 64);
    let u8 = DLDataType::scalar(DLDataType::UINT, 8);
    let i16 = DLDataType::scalar(DLDataType::INT, 16);
    let seeds = [
        // A compact 2 x 3 f32 tensor of pinned memory, no strides given; borrowed.
        (
            "pinned-f32-2x3",
            3 << 4 | 2,
            DLDeviceType::CUDA_HOST,
            0,
            f32,
            0x7f00_0000_1000,
            0,
            0,
            vec![2, 3],
            vec![],
        ),
        // Managed f64, transposed strides and a byte offset, read-only; taken.
        (
            "managed-f64-transposed",
            4 << 4 | 8,
            DLDeviceType::CUDA_MANAGED,
            0,
            f64,
            0x7f00_0000_0000,
            64,
            1,
            vec![3, 4],
            vec![1, 3],
        ),
        // Device memory (read as pinned by the target), u8, negative strides.
        (
            "cuda-u8-negative",
            0,
            DLDeviceType::CUDA,
            0,
            u8,
            0x10_0000,
            15,
            0,
            vec![4, 4],
            vec![-4, -1],
        ),
        // A kDLCUDA tensor of a negative device index (refused before any driver call).
        (
            "cuda-negative-id",
            1 << 4,
            DLDeviceType::CUDA,
            -1,
            i16,
            0x2000,
            0,
            0,
            vec![8],
            vec![1],
        ),
        // No dimensions: one element.
        (
            "scalar",
            3 << 4,
            DLDeviceType::CUDA_HOST,
            0,
            f32,
            0x4000,
            0,
            0,
            vec![],
            vec![],
        ),
        // An empty tensor at address 0.
        (
            "empty",
            3 << 4 | 2,
            DLDeviceType::CUDA_HOST,
            0,
            f32,
            0,
            0,
            0,
            vec![0, 5],
            vec![],
        ),
        // Broadcast: a stride of 0.
        (
            "broadcast",
            1 << 4,
            DLDeviceType::CUDA_MANAGED,
            0,
            i16,
            0x8000,
            0,
            0,
            vec![5, 7],
            vec![0, 1],
        ),
        // CPU memory: refused.
        (
            "cpu",
            3 << 4 | 2,
            DLDeviceType::CPU,
            0,
            f32,
            0x8000,
            0,
            0,
            vec![2],
            vec![],
        ),
    ];
    for (name, choice, device_type, device_id, dtype, data, byte_offset, flags, shape, strides) in
        seeds
    {
        let strides = if strides.is_empty() {
            vec![0; shape.len()]
        } else {
            strides
        };
        let tensor = Tensor {
            choice,
            device_type,
            device_id,
            dtype,
            data,
            byte_offset,
            flags,
            shape,
            strides,
        };
        write(root, "dlpack_import", name, &tensor.bytes());
    }
}

/// A form's bytes: its magic, version 1, three zeros, then `fields` at their offsets.
fn form(len: usize, magic: &[u8; 4], fields: &[(usize, &[u8])]) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    bytes[..4].copy_from_slice(magic);
    bytes[4] = 1;
    for (at, field) in fields {
        bytes[*at..at + field.len()].copy_from_slice(field);
    }
    bytes
}

fn ipc_seeds(root: &Path) {
    let uuid: Vec<u8> = (1..=16).collect();
    let handle: Vec<u8> = (0..64).map(|i| i * 3).collect();
    let buffer = form(
        BufferDescriptor::BYTES,
        b"CCBF",
        &[
            (8, &[7; 16]),
            (24, &(1u64 << 20).to_le_bytes()),
            (32, &handle),
            (96, &3u32.to_le_bytes()),
            (104, &9u64.to_le_bytes()),
        ],
    );
    assert_eq!(
        BufferDescriptor::from_bytes(&buffer).unwrap().to_bytes()[..],
        buffer[..]
    );
    write(root, "ipc_form", "buffer-descriptor", &buffer);
    let event = form(IpcEventHandle::BYTES, b"CCEV", &[(8, &uuid), (24, &handle)]);
    assert_eq!(
        IpcEventHandle::from_bytes(&event).unwrap().to_bytes()[..],
        event[..]
    );
    write(root, "ipc_form", "event-handle", &event);
    let legacy = form(
        IpcMemHandle::BYTES,
        b"CCIM",
        &[(8, &uuid), (24, &4096u64.to_le_bytes()), (32, &handle)],
    );
    assert_eq!(
        IpcMemHandle::from_bytes(&legacy).unwrap().to_bytes()[..],
        legacy[..]
    );
    write(root, "ipc_form", "legacy-mem-handle", &legacy);
    let fd = || -> std::os::fd::OwnedFd {
        std::fs::File::open(std::env::current_exe().unwrap())
            .unwrap()
            .into()
    };
    for (name, kind, numa) in [("pool-device", 1u8, 0i32), ("pool-pinned", 2, 1)] {
        let pool = form(
            SharedPoolHandle::INFO_BYTES,
            b"CCPL",
            &[
                (8, &[5; 16]),
                (24, &[kind]),
                (28, &uuid),
                (44, &numa.to_le_bytes()),
            ],
        );
        let handle = SharedPoolHandle::from_parts(fd(), fd(), &pool).unwrap();
        assert_eq!(handle.into_parts().info[..], pool[..]);
        write(root, "ipc_form", name, &pool);
    }
    let physical = form(
        SharedPhysicalMemory::INFO_BYTES,
        b"CCPM",
        &[(8, &(2u64 << 20).to_le_bytes()), (16, &uuid)],
    );
    let memory = SharedPhysicalMemory::from_parts(fd(), &physical).unwrap();
    assert_eq!(memory.into_parts().1[..], physical[..]);
    write(root, "ipc_form", "physical-memory", &physical);
}
