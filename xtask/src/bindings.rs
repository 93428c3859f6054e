//! Generating the committed bindings: bindgen for the types, and a function table of our own.
//!
//! bindgen parses the header and gives every declaration; the `extern "C"` block it emits is not
//! kept (nothing links to the library at build time). Its functions become the fields of a table
//! filled through libloading by the exact exported name each declaration carries after the
//! header's version macros (`cuCtxCreate` is declared as `cuCtxCreate_v2` in 12.9 and
//! `cuCtxCreate_v4` in 13.x). A field is named after the plain name the header maps to that
//! export, so the safe layer can write `table.cuCtxCreate`, and documents the export it holds.
//!
//! nvJitLink's exports also differ by library major (`__nvJitLinkCreate_13_5`,
//! `__nvJitLinkCreate_12_9`): its table is made by [`per_major`], which picks the names at load
//! time from the library's major.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::core_gen;
use crate::headers::{self, Api, Header, Pin, PINS};
use crate::parse;
use crate::per_major;

/// One generated file: its path relative to the workspace root and its contents.
struct Output {
    path: PathBuf,
    text: String,
}

/// `cargo xtask regenerate-bindings`: writes every crate's generated files.
pub fn regenerate(root: &Path, local: Option<&Path>) -> Result<(), String> {
    for output in generate_all(root, local)? {
        let path = root.join(&output.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, output.text)
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!("xtask: wrote {}", output.path.display());
    }
    Ok(())
}

/// `cargo xtask check-bindings`: regenerates into a temporary directory and compares.
pub fn check(root: &Path) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("xtask-check-bindings-{}", std::process::id()));
    let result = check_into(root, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn check_into(root: &Path, scratch: &Path) -> Result<(), String> {
    let mut drifted = Vec::new();
    for output in generate_all(root, None)? {
        let committed_path = root.join(&output.path);
        let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
        if committed == output.text {
            continue;
        }
        let fresh = scratch.join(&output.path);
        if let Some(parent) = fresh.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::write(&fresh, &output.text)
            .map_err(|e| format!("writing {}: {e}", fresh.display()))?;
        show_difference(&committed_path, &fresh);
        drifted.push(output.path.display().to_string());
    }
    if drifted.is_empty() {
        eprintln!("xtask: committed bindings match the pinned headers");
        Ok(())
    } else {
        Err(format!(
            "committed bindings differ from what the pinned headers give: {}\n\
             run `cargo xtask regenerate-bindings` and commit the result",
            drifted.join(", ")
        ))
    }
}

/// Prints a unified diff (the first 200 lines) of a committed file against its regeneration.
fn show_difference(committed: &Path, fresh: &Path) {
    match std::process::Command::new("diff")
        .arg("-u")
        .arg(committed)
        .arg(fresh)
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            for line in text.lines().take(200) {
                eprintln!("{line}");
            }
        }
        Err(e) => eprintln!(
            "xtask: {} differs (diff unavailable: {e})",
            committed.display()
        ),
    }
}

fn generate_all(root: &Path, local: Option<&Path>) -> Result<Vec<Output>, String> {
    let cache = root.join("target").join("xtask-headers");
    let local_major = match local {
        Some(dir) => {
            let text = std::fs::read_to_string(dir.join("cuda.h"))
                .map_err(|e| format!("reading {}: {e}", dir.join("cuda.h").display()))?;
            let version = headers::cuda_version(&text)
                .ok_or_else(|| format!("no CUDA_VERSION in {}", dir.join("cuda.h").display()))?;
            Some(version / 1000)
        }
        None => None,
    };
    // A local toolkit replaces the headers of its own major; the rest still come from pip.
    let resolve = |header: &Header| -> Result<Source, String> {
        let local_dir = local
            .filter(|dir| local_major == Some(header.major) && dir.join(header.file).is_file());
        Ok(match local_dir {
            Some(dir) => Source {
                header: *header,
                include: dir.to_path_buf(),
                origin: format!("a local {} (not the pinned wheel)", header.file),
            },
            None => Source {
                header: *header,
                include: headers::fetch(header, &cache)?,
                origin: format!(
                    "{} of the {} {} wheel",
                    header.file, header.wheel, header.version
                ),
            },
        })
    };
    let mut outputs = Vec::new();
    let mut driver_headers = BTreeMap::new();
    for pin in &PINS {
        let source = resolve(&pin.header)?;
        let others = pin
            .other_majors
            .iter()
            .map(resolve)
            .collect::<Result<Vec<_>, _>>()?;
        outputs.extend(generate(pin, &source, &others, &cache)?);
        if pin.api == Api::Driver {
            driver_headers.insert(pin.header.major, source);
        }
    }
    outputs.extend(generate_core(&driver_headers)?);
    Ok(outputs)
}

/// `cuda-core`'s generated files, from the CUDA 13 driver header (and the 12 one, for which
/// attributes are new in 13): see [`core_gen`].
fn generate_core(headers: &BTreeMap<u32, Source>) -> Result<Vec<Output>, String> {
    let read = |major: u32| -> Result<(String, &Source), String> {
        let source = headers
            .get(&major)
            .ok_or_else(|| format!("no CUDA {major} driver header is pinned"))?;
        let path = source.include.join(source.header.file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok((text, source))
    };
    let (header13, source13) = read(13)?;
    let (header12, source12) = read(12)?;
    let banner = |origin: &str| {
        format!(
            "// @generated by `cargo xtask regenerate-bindings` from {origin}.\n\
             // Do not edit: `cargo xtask check-bindings` fails when this file drifts.\n\n"
        )
    };
    let dir = PathBuf::from("cuda-core").join("src").join("generated");
    let (attributes, table) = core_gen::device_attributes(&header13, &header12)?;
    let codes = core_gen::driver_codes(&header13)?;
    Ok(vec![
        Output {
            path: dir.join("device_attributes.rs"),
            text: format!(
                "{}{}",
                banner(&format!("{} and {}", source13.origin, source12.origin)),
                core_gen::format(&attributes, "device attributes")?
            ),
        },
        Output {
            path: PathBuf::from("cuda-core")
                .join("tests")
                .join("generated")
                .join("attribute_codes.rs"),
            text: format!(
                "{}{}",
                banner(&format!("{} and {}", source13.origin, source12.origin)),
                core_gen::format(&table, "the attribute code table")?
            ),
        },
        Output {
            path: dir.join("driver_codes.rs"),
            text: format!(
                "{}{}",
                banner(&source13.origin),
                core_gen::format(&codes, "driver codes")?
            ),
        },
    ])
}

/// A header to generate from: the pin, the directory it was found in, and how to name it.
struct Source {
    header: Header,
    include: PathBuf,
    origin: String,
}

/// One declared function: the name of its table field, its exported symbol, its signature.
struct Function {
    field: String,
    export: String,
    inputs: Vec<syn::FnArg>,
    output: syn::ReturnType,
}

fn generate(
    pin: &Pin,
    source: &Source,
    others: &[Source],
    cache: &Path,
) -> Result<Vec<Output>, String> {
    let parsed = parse::header(&source.include, source.header.file, pin.api, cache)?;
    let table_tokens = match pin.api {
        Api::Driver | Api::Nvrtc | Api::Nvvm | Api::Nccl => {
            let declared: HashSet<String> = parsed
                .functions
                .iter()
                .map(|f| f.sig.ident.to_string())
                .collect();
            let plain_names = match pin.api {
                Api::Driver => versioned_exports(&parsed.text, &declared),
                _ => BTreeMap::new(),
            };
            let functions: Vec<Function> = parsed
                .functions
                .iter()
                .map(|f| {
                    let export = f.sig.ident.to_string();
                    Function {
                        field: plain_names
                            .get(&export)
                            .cloned()
                            .unwrap_or_else(|| export.clone()),
                        export,
                        inputs: f.sig.inputs.iter().cloned().collect(),
                        output: f.sig.output.clone(),
                    }
                })
                .collect();
            table(pin, &functions)
        }
        Api::NvJitLink => {
            let other_parsed = others
                .iter()
                .map(|other| {
                    parse::header(&other.include, other.header.file, pin.api, cache)
                        .map(|p| (other.header.major, p))
                })
                .collect::<Result<Vec<_>, _>>()?;
            per_major::table(pin, &parsed, &other_parsed)?
        }
    };

    // NCCL's header is NVIDIA's, under the Apache License 2.0 (its SPDX line), which lets
    // what bindgen derives from it be committed; the files say so.
    let license = match pin.api {
        Api::Nccl => "// nccl.h: Copyright NVIDIA CORPORATION & AFFILIATES, Apache-2.0.\n",
        _ => "",
    };
    let banner = |origin: &str| {
        format!(
            "// @generated by `cargo xtask regenerate-bindings` from {origin}.\n\
             // Do not edit: `cargo xtask check-bindings` fails when this file drifts.\n\
             {license}\n"
        )
    };
    let mut table_origin = source.origin.clone();
    for other in others {
        table_origin.push_str(" and ");
        table_origin.push_str(&other.origin);
    }
    let types_file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: parsed.types,
    };
    let table_file: syn::File = syn::parse2(table_tokens)
        .map_err(|e| format!("building the table for {}: {e}", pin.header.file))?;
    let dir = PathBuf::from(pin.crate_dir).join(pin.dir);
    Ok(vec![
        Output {
            path: dir.join(format!("{}bindings.rs", pin.prefix)),
            text: format!(
                "{}{}",
                banner(&source.origin),
                prettyplease::unparse(&types_file)
            ),
        },
        Output {
            path: dir.join(format!("{}table.rs", pin.prefix)),
            text: format!(
                "{}{}",
                banner(&table_origin),
                prettyplease::unparse(&table_file)
            ),
        },
    ])
}

/// Maps each versioned export to the plain name the header's macros give it, from lines such as
/// `#define cuCtxCreate cuCtxCreate_v2` or `#define cuMemcpyHtoD __CUDA_API_PTDS(cuMemcpyHtoD_v2)`.
///
/// Only a pure version suffix (`_v` and digits) is mapped, and only when the plain name is not a
/// declared function of its own; aliases to other functions (`cuGraphInstantiate` to
/// `cuGraphInstantiateWithFlags`) keep the real name.
fn versioned_exports(header: &str, declared: &HashSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in header.lines() {
        let mut words = line.split_whitespace();
        let (Some("#define"), Some(plain), Some(target), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        let target = target
            .strip_prefix("__CUDA_API_PTDS(")
            .or_else(|| target.strip_prefix("__CUDA_API_PTSZ("))
            .and_then(|t| t.strip_suffix(')'))
            .unwrap_or(target);
        let Some(suffix) = target
            .strip_prefix(plain)
            .and_then(|s| s.strip_prefix("_v"))
        else {
            continue;
        };
        if suffix.is_empty()
            || !suffix.bytes().all(|b| b.is_ascii_digit())
            || declared.contains(plain)
            || !declared.contains(target)
        {
            continue;
        }
        // Several plain names can map to one export (`cuStreamGetCaptureInfo` and
        // `cuStreamGetCaptureInfo_v2`); the shortest is the plain one.
        map.entry(target.to_owned())
            .and_modify(|existing: &mut String| {
                if plain.len() < existing.len() {
                    *existing = plain.to_owned();
                }
            })
            .or_insert_with(|| plain.to_owned());
    }
    map
}

/// The function table: a struct of optional function pointers, its loader and its symbol list.
fn table(pin: &Pin, functions: &[Function]) -> TokenStream {
    let name = format_ident!("{}", pin.table);
    let library = match pin.api {
        Api::Driver => "the CUDA driver (`libcuda.so.1`)",
        Api::Nvrtc => "NVRTC (`libnvrtc.so.*`)",
        Api::NvJitLink => "nvJitLink (`libnvJitLink.so.*`)",
        Api::Nvvm => "libNVVM (`libnvvm.so.4`)",
        Api::Nccl => "NCCL (`libnccl.so.2`)",
    };
    let struct_doc = format!(
        " Every function `{}` declares, as an optional pointer into {library}.\n\n \
         Each field is filled from the exact symbol the header's version macros name (its doc \
         says which) and is `None` when the loaded library does not export it.",
        pin.header.file
    );
    let count = functions.len();
    let fields = functions.iter().map(|f| {
        let field = format_ident!("{}", f.field);
        let doc = format!(" `{}`, exported as `{}`.", f.field, f.export);
        let inputs = &f.inputs;
        let output = &f.output;
        quote! {
            #[doc = #doc]
            pub #field: ::core::option::Option<unsafe extern "C" fn(#(#inputs),*) #output>,
        }
    });
    let loads = functions.iter().map(|f| {
        let field = format_ident!("{}", f.field);
        let symbol = Literal::byte_string(format!("{}\0", f.export).as_bytes());
        quote! { #field: symbol(library, #symbol), }
    });
    let entries = functions.iter().map(|f| {
        let field_name = &f.field;
        let export = &f.export;
        let field = format_ident!("{}", f.field);
        quote! {
            Symbol {
                field: #field_name,
                export: #export,
                address: self.#field.map(|f| f as *const ::core::ffi::c_void),
            },
        }
    });
    quote! {
        #[doc = #struct_doc]
        #[derive(Clone, Copy)]
        pub struct #name {
            #(#fields)*
        }

        /// One entry of a table: its field, the symbol it was loaded from, and the address found.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Symbol {
            /// The table field's name.
            pub field: &'static str,
            /// The exported symbol the field is filled from.
            pub export: &'static str,
            /// The loaded address, `None` when the library lacks the symbol.
            pub address: ::core::option::Option<*const ::core::ffi::c_void>,
        }

        impl #name {
            /// How many functions the table holds.
            pub const LEN: usize = #count;

            /// Fills the table from a loaded library; a symbol it lacks leaves its field `None`.
            ///
            /// # Safety
            ///
            /// `library` must be the library the header describes (each found symbol is taken
            /// to have the header's signature), and must stay loaded while the table or any
            /// pointer copied out of it is in use.
            pub unsafe fn load(library: &::libloading::Library) -> Self {
                Self { #(#loads)* }
            }

            /// Every entry, in declaration order, with the address it was loaded with.
            pub fn symbols(&self) -> [Symbol; #count] {
                [ #(#entries)* ]
            }
        }

        /// Looks one symbol up; `None` when the library does not export it.
        ///
        /// # Safety
        ///
        /// `T` must be the function pointer type of the symbol's real signature.
        unsafe fn symbol<T: Copy>(library: &::libloading::Library, name: &[u8]) -> ::core::option::Option<T> {
            // SAFETY: the caller vouches for `T`; `name` is NUL-terminated.
            unsafe { library.get::<T>(name) }.ok().map(|found| *found)
        }
    }
}
