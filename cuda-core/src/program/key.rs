//! The cache key of a program, for each kind: what [`Program::cache_key`] hashes, or why a
//! program has no key.

use super::headers::{self, Reached};
use super::sources::{self, ProgramKind, Source};
use super::{Program, ProgramOptions};
use crate::cache::CacheKey;
use crate::driver;
use crate::error::Result;
use crate::object_code::CodeType;

/// A program's cache key, or why it has none (an include the header scan cannot follow).
#[derive(Debug)]
pub(super) enum Keyed {
    /// The key of compiling the program.
    Key(CacheKey),
    /// Why the program cannot be cached: it is compiled without its cache.
    Uncacheable(String),
}

/// The key of compiling `program` for `target` with these name expressions (see
/// [`Program::cache_key`]), or why it has none; an error where the key's inputs cannot be
/// found (no device for the architecture, a compiler's library, refused name expressions).
pub(super) fn keyed(
    program: &Program,
    target: CodeType,
    name_expressions: &[&str],
) -> Result<Keyed> {
    let Source::Cxx(source) = program.source_of_kind() else {
        return compiled_elsewhere(program, target, name_expressions).map(Keyed::Key);
    };
    let options = program.options().resolved()?.with_toolkit_dirs()?;
    let (include_dirs, pre_includes) = options.header_search();
    let headers = match headers::reached(source, &include_dirs, &pre_includes, &options.headers) {
        Ok(headers) => headers,
        Err(why) => return Ok(Keyed::Uncacheable(why)),
    };
    Ok(Keyed::Key(cxx(
        source,
        // The name NVRTC compiles under, which it records in the code's line information.
        &program.nvrtc_name(&options)?,
        &options,
        target,
        name_expressions,
        &driver::nvrtc_identity()?,
        &headers,
    )))
}

/// The key of one NVRTC compilation; every field that changes NVRTC's output is in it.
fn cxx(
    source: &str,
    name: &str,
    options: &ProgramOptions,
    target: CodeType,
    name_expressions: &[&str],
    nvrtc: &str,
    headers: &Reached,
) -> CacheKey {
    let mut key = CacheKey::builder()
        .field("source", source.as_bytes())
        .field("name", name.as_bytes())
        .field("target", target.extension().as_bytes())
        .field("arch", options.arch.as_deref().unwrap_or("").as_bytes())
        .field("nvrtc", nvrtc.as_bytes());
    // One field per option, expression and header: fields are length-prefixed, so no two
    // lists give the same key.
    for arg in options.to_args(target) {
        key = key.field("option", arg.as_bytes());
    }
    for expression in name_expressions {
        key = key.field("name_expression", expression.as_bytes());
    }
    for (path, hash) in &headers.files {
        let mut field = path.as_os_str().as_encoded_bytes().to_vec();
        field.extend_from_slice(hash);
        key = key.field("header", &field);
    }
    for name in &headers.unresolved {
        key = key.field("builtin_header", name.as_bytes());
    }
    for (name, contents) in &options.headers {
        key = key
            .field("memory_header_name", name.as_bytes())
            .field("memory_header", contents.as_bytes());
    }
    key.finish()
}

/// The key of a PTX or NVVM IR program: its kind, name and source (each module's name,
/// laziness and bytes), the target and architecture, every option as passed, and the exact
/// libNVVM and linker that compile it.
fn compiled_elsewhere(
    program: &Program,
    target: CodeType,
    name_expressions: &[&str],
) -> Result<CacheKey> {
    let kind = program.kind();
    sources::no_name_expressions(kind, name_expressions)?;
    let (options, arch) = sources::resolved(program)?;
    let mut key = CacheKey::builder()
        .field("kind", kind.to_string().as_bytes())
        .field("name", program.name().as_bytes())
        .field("target", target.extension().as_bytes())
        .field("arch", arch.as_bytes());
    match program.source_of_kind() {
        Source::Cxx(_) => {}
        Source::Ptx(ptx) => key = key.field("source", ptx.as_bytes()),
        Source::Nvvm(modules) => {
            for module in modules {
                key = key
                    .field("module_name", module.name().as_bytes())
                    .field("module_lazy", &[u8::from(module.is_lazy())])
                    .field("module_ir", module.ir());
            }
            let nvvm_target = if target == CodeType::LtoIr {
                CodeType::LtoIr
            } else {
                CodeType::Ptx
            };
            for arg in options.nvvm_args(nvvm_target) {
                key = key.field("nvvm_option", arg.as_bytes());
            }
            key = key.field("nvvm", driver::nvvm_identity()?.as_bytes());
        }
    }
    if target == CodeType::Cubin {
        let link_args = match kind {
            ProgramKind::Ptx => sources::ptx_link_args(&options),
            _ => options.link_args(),
        };
        for arg in link_args {
            key = key.field("link_option", arg.as_bytes());
        }
        key = key.field("linker", driver::linker_identity().as_bytes());
    }
    Ok(key.finish())
}
