//! What bindgen gives for one header, parsed: its types and its declared functions, which
//! [`bindings`](crate::bindings) and [`per_major`](crate::per_major) both read.

use std::path::{Path, PathBuf};

use crate::headers::Api;

/// What bindgen gives for one header: its text, its type items and its declared functions.
pub(crate) struct Parsed {
    /// The header's text.
    pub text: String,
    /// Every item bindgen gives but the functions.
    pub types: Vec<syn::Item>,
    /// The declared functions, in declaration order.
    pub functions: Vec<syn::ForeignItemFn>,
}

/// What `nccl.h` takes from the CUDA runtime's headers, which it includes: two handle types,
/// `size_t` and the runtime's version (for its `#if`). The runtime's own headers would pull in the
/// toolkit's compiler headers (`crt/`), of yet another wheel; these stand in for them, and
/// make the same two types. (`cuda_fp16.h` and `cuda_bf16.h` give nothing `nccl.h` uses.)
const NCCL_RUNTIME_SHIM: [(&str, &str); 3] = [
    (
        "cuda_runtime.h",
        "/* xtask's stand-in for the CUDA runtime header, for bindgen on nccl.h alone. */\n\
         #include <stddef.h>\n\
         #define CUDART_VERSION 12090\n\
         typedef struct CUstream_st *cudaStream_t;\n\
         typedef struct CUevent_st *cudaEvent_t;\n",
    ),
    ("cuda_fp16.h", "/* nothing nccl.h uses */\n"),
    ("cuda_bf16.h", "/* nothing nccl.h uses */\n"),
];

/// Writes [`NCCL_RUNTIME_SHIM`] into a folder under `cache`, and returns that folder.
fn nccl_runtime_shim(cache: &Path) -> Result<PathBuf, String> {
    let dir = cache.join("nccl-runtime-shim");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for (name, text) in NCCL_RUNTIME_SHIM {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(dir)
}

/// Runs bindgen on `file_name` in the folder `include`, and sorts what it gives.
pub(crate) fn header(
    include: &Path,
    file_name: &str,
    api: Api,
    cache: &Path,
) -> Result<Parsed, String> {
    let header = include.join(file_name);
    let text = std::fs::read_to_string(&header)
        .map_err(|e| format!("reading {}: {e}", header.display()))?;
    let mut builder = bindgen::Builder::default();
    if api == Api::Nccl {
        builder = builder.clang_arg(format!("-I{}", nccl_runtime_shim(cache)?.display()));
    }
    let bindings = builder
        .header(header.to_string_lossy())
        .clang_arg(format!("-I{}", include.display()))
        .allowlist_file(format!(".*{}", file_name.replace('.', "\\.")))
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .derive_default(true)
        .generate_comments(false)
        .layout_tests(true)
        .merge_extern_blocks(true)
        .formatter(bindgen::Formatter::None)
        .generate()
        .map_err(|e| format!("bindgen on {}: {e}", header.display()))?;
    let file: syn::File = syn::parse_str(&bindings.to_string())
        .map_err(|e| format!("parsing bindgen's output for {file_name}: {e}"))?;

    let mut types = Vec::new();
    let mut functions = Vec::new();
    for item in file.items {
        match item {
            syn::Item::ForeignMod(block) => {
                for foreign in block.items {
                    if let syn::ForeignItem::Fn(f) = foreign {
                        // NCCL declares each function twice: `ncclX` and the profiling
                        // interface's `pncclX`, which is the same function.
                        if api == Api::Nccl && f.sig.ident.to_string().starts_with("pnccl") {
                            continue;
                        }
                        functions.push(f);
                    }
                }
            }
            other => types.push(other),
        }
    }
    if functions.is_empty() {
        return Err(format!(
            "bindgen found no functions in {}",
            header.display()
        ));
    }
    Ok(Parsed {
        text,
        types,
        functions,
    })
}
