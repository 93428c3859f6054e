//! The parts of `cuda-core` derived from the driver header rather than written by hand: the
//! typed device attribute accessors (from `CUdevice_attribute`) and the named driver result
//! codes (from `CUresult`). Both come from the CUDA 13 header; the 12.9 header says which
//! attributes a 12.x driver knows.
//!
//! The header gives each attribute's name, code and doc comment, not its value type. The type is
//! read from the name and the doc: a yes-or-no attribute (a name ending in `_SUPPORTED` or
//! starting with `CAN_`, or a doc saying what the device supports, can, is or has) is `bool`; an
//! id that may be -1 (the [`SIGNED`] list) is `i32`; any other is `u32`. [`BOOLEAN`] names the
//! few yes-or-no attributes the rules miss.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

/// Yes-or-no attributes whose name and doc do not say so.
const BOOLEAN: &[&str] = &["COOPERATIVE_MULTI_DEVICE_LAUNCH"];

/// Attributes that may be negative (`-1` for "none").
const SIGNED: &[&str] = &["MULTI_GPU_BOARD_GROUP_ID", "NUMA_ID", "HOST_NUMA_ID"];

/// Doc openings that mean the attribute is yes or no.
const BOOLEAN_DOCS: &[&str] = &[
    "device supports",
    "device suports",
    "device can",
    "device is ",
    "device has",
    "device shares",
    "device accesses",
    "indicates",
    "specifies whether",
    "the host can",
];

/// One enumerator of a C enum: its name, value and doc comment (as one line of text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enumerator {
    pub name: String,
    pub value: i64,
    pub doc: String,
}

/// The enumerators of `typedef enum ... { ... } <name>;` in `header`, with the doc comment of
/// each: a `/** ... */` block before it or a `/**< ... */` after it on its line.
pub fn enumerators(header: &str, name: &str) -> Result<Vec<Enumerator>, String> {
    let end = header
        .find(&format!("}} {name};"))
        .ok_or_else(|| format!("the header has no enum {name}"))?;
    let start = header[..end]
        .rfind("typedef enum")
        .ok_or_else(|| format!("no `typedef enum` before {name}"))?;
    let body = &header[header[start..end]
        .find('{')
        .map(|i| start + i + 1)
        .unwrap_or(end)..end];
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut in_block = false;
    for line in body.lines() {
        let trimmed = line.trim();
        if in_block {
            let (text, closed) = match trimmed.find("*/") {
                Some(i) => (&trimmed[..i], true),
                None => (trimmed, false),
            };
            pending.push(' ');
            pending.push_str(text.trim_start_matches('*').trim());
            in_block = !closed;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("/**") {
            if !rest.starts_with('<') {
                pending.clear();
                match rest.find("*/") {
                    Some(i) => pending.push_str(&rest[..i]),
                    None => {
                        pending.push_str(rest);
                        in_block = true;
                    }
                }
                continue;
            }
        }
        let Some(first) = trimmed.chars().next() else {
            continue;
        };
        if !(first.is_ascii_uppercase() || first == '_') {
            continue;
        }
        let (code, trailing) = match trimmed.find("/**<") {
            Some(i) => {
                let doc = &trimmed[i + 4..];
                (&trimmed[..i], doc.split("*/").next().unwrap_or(doc))
            }
            None => (trimmed, ""),
        };
        let code = code.trim().trim_end_matches(',').trim();
        let Some((ident, value)) = code.split_once('=') else {
            // `CU_DEVICE_ATTRIBUTE_MAX` and the like: no value, not an enumerator to keep.
            pending.clear();
            continue;
        };
        let value = value.trim();
        let value = match value.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16),
            None => value.parse::<i64>(),
        }
        .map_err(|e| format!("{name}: the value of {} ({value}): {e}", ident.trim()))?;
        let doc = if trailing.trim().is_empty() {
            std::mem::take(&mut pending)
        } else {
            pending.clear();
            trailing.to_owned()
        };
        out.push(Enumerator {
            name: ident.trim().to_owned(),
            value,
            doc: doc.split_whitespace().collect::<Vec<_>>().join(" "),
        });
    }
    if out.is_empty() {
        return Err(format!("no enumerators found in {name}"));
    }
    Ok(out)
}

/// A header doc comment as rustdoc: `::cuFoo()` and `::CU_BAR` in code spans, Doxygen commands
/// spelled out, bare links in angle brackets, a full stop at the end.
pub fn rustdoc(doc: &str) -> String {
    let mut out = String::new();
    for word in doc.split_whitespace() {
        if word == "\\ref" || word == "\\p" || word == "\\e" {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        if word == "\\deprecated" {
            out.push_str("Deprecated.");
        } else if let Some(rest) = word.strip_prefix("::") {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '(' || c == ')'))
                .unwrap_or(rest.len());
            let _ = write!(out, "`{}`{}", &rest[..end], &rest[end..]);
        } else if word.starts_with("http") {
            let end = word.trim_end_matches([')', '.', ',']).len();
            let _ = write!(out, "<{}>{}", &word[..end], &word[end..]);
        } else {
            out.push_str(&word.replace('<', "&lt;").replace('>', "&gt;"));
        }
    }
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// The value type of an attribute accessor.
fn attribute_type(short: &str, doc: &str) -> &'static str {
    let lower = doc.to_ascii_lowercase();
    if SIGNED.contains(&short) {
        "i32"
    } else if BOOLEAN.contains(&short)
        || short.ends_with("_SUPPORTED")
        || short.starts_with("CAN_")
        || BOOLEAN_DOCS.iter().any(|d| lower.starts_with(d))
    {
        "bool"
    } else {
        "u32"
    }
}

/// Whether a doc comment marks an enumerator as an old name of another.
fn is_alias(doc: &str) -> bool {
    doc.to_ascii_lowercase().starts_with("deprecated, use")
}

/// Formats generated source as the other generated files are (prettyplease), so that the same
/// header gives the same bytes anywhere.
pub fn format(source: &str, what: &str) -> Result<String, String> {
    let file: syn::File =
        syn::parse_str(source).map_err(|e| format!("the generated {what} does not parse: {e}"))?;
    Ok(prettyplease::unparse(&file))
}

/// `generated/device_attributes.rs`: a typed accessor per attribute of the 13 header (old
/// aliases left out), each noting when the 12.9 header lacks it; and the test table of
/// `tests/generated/attribute_codes.rs`: each accessor beside its attribute's constant in the
/// bindings (bindgen's reading of the same header), which a stand-in driver test compares
/// with the code each accessor asks the driver for.
pub fn device_attributes(header13: &str, header12: &str) -> Result<(String, String), String> {
    const PREFIX: &str = "CU_DEVICE_ATTRIBUTE_";
    let attributes = enumerators(header13, "CUdevice_attribute")?;
    let known12: HashSet<String> = enumerators(header12, "CUdevice_attribute")?
        .into_iter()
        .map(|e| e.name)
        .collect();
    let mut seen = HashSet::new();
    let mut out = String::new();
    let mut end = 0;
    out.push_str(
        "use super::DeviceProperties;\nuse crate::error::Result;\n\n\
         /// One past the largest attribute code: the size of the per-device attribute cache.\n\
         /// Read by a compile-time check alone, which Rust before 1.86 does not count as a use.\n\
         #[allow(dead_code)]\n\
         pub(crate) const ATTRIBUTE_CODES: usize = ",
    );
    let mut methods = String::new();
    let mut table = String::from(
        "use cuda_core::{DeviceProperties, Result};\n\
         use cuda_sys13::CUdevice_attribute_enum as A;\n\n\
         /// An accessor's reading as a number (a `bool` as 0 or 1).\n\
         pub type Accessor = fn(&DeviceProperties) -> Result<i64>;\n\n\
         /// Every accessor: the attribute's name, its code in the bindings, the accessor.\n\
         pub const ACCESSORS: &[(&str, u32, Accessor)] = &[\n",
    );
    for attribute in &attributes {
        let short = attribute
            .name
            .strip_prefix(PREFIX)
            .ok_or_else(|| format!("{} lacks the prefix {PREFIX}", attribute.name))?;
        if is_alias(&attribute.doc) || !seen.insert(attribute.value) {
            continue;
        }
        end = end.max(attribute.value + 1);
        let ty = attribute_type(short, &attribute.doc);
        let method = short.to_ascii_lowercase();
        let convert = match ty {
            "bool" => ".map(|v| v != 0)",
            "i32" => "",
            _ => ".map(|v| v as u32)",
        };
        let _ = writeln!(methods, "    /// {}", rustdoc(&attribute.doc));
        let _ = writeln!(methods, "    ///");
        if known12.contains(&attribute.name) {
            let _ = writeln!(
                methods,
                "    /// `{}` (code {}).",
                attribute.name, attribute.value
            );
        } else {
            let _ = writeln!(
                methods,
                "    /// `{}` (code {}), new in the CUDA 13 header: 12.x drivers answer with an error.",
                attribute.name, attribute.value
            );
        }
        let _ = writeln!(methods, "    #[doc(alias = \"{}\")]", attribute.name);
        let _ = writeln!(methods, "    pub fn {method}(&self) -> Result<{ty}> {{");
        let _ = writeln!(methods, "        self.read({}){convert}", attribute.value);
        let _ = writeln!(methods, "    }}\n");
        let widen = if ty == "bool" {
            "i64::from"
        } else {
            "|v| v as i64"
        };
        let _ = writeln!(
            table,
            "    (\"{name}\", A::{name}.0, |p| p.{method}().map({widen})),",
            name = attribute.name
        );
    }
    let _ = writeln!(out, "{end};\n\nimpl DeviceProperties {{");
    out.push_str(methods.trim_end());
    out.push_str("\n}\n");
    table.push_str("];\n");
    Ok((out, table))
}

/// `generated/driver_codes.rs`: a constant per `CUresult` of the 13 header, named without its
/// `CUDA_ERROR_` prefix, and the name of each code.
pub fn driver_codes(header13: &str) -> Result<String, String> {
    let codes = enumerators(header13, "CUresult")?;
    let mut constants = String::new();
    let mut names = BTreeMap::new();
    for code in &codes {
        let short = code
            .name
            .strip_prefix("CUDA_ERROR_")
            .or_else(|| code.name.strip_prefix("CUDA_"))
            .ok_or_else(|| format!("{} is not a CUDA_ code", code.name))?;
        let _ = writeln!(constants, "    /// {}", rustdoc(&code.doc));
        let _ = writeln!(constants, "    ///");
        let _ = writeln!(constants, "    /// `{}` ({}).", code.name, code.value);
        let _ = writeln!(constants, "    #[doc(alias = \"{}\")]", code.name);
        let _ = writeln!(
            constants,
            "    pub const {short}: DriverCode = DriverCode({});\n",
            code.value
        );
        names.entry(code.value).or_insert_with(|| code.name.clone());
    }
    let mut out = String::from("use super::DriverCode;\n\nimpl DriverCode {\n");
    out.push_str(&constants);
    out.push_str(
        "    /// The code's name in the CUDA 13 header (`CUDA_ERROR_OUT_OF_MEMORY`), or `None` for a\n    \
         /// code it does not define.\n    pub fn name(self) -> Option<&'static str> {\n        \
         Some(match self.0 {\n",
    );
    for (value, name) in &names {
        let _ = writeln!(out, "            {value} => \"{name}\",");
    }
    out.push_str("            _ => return None,\n        })\n    }\n}\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"
typedef enum other_enum { OTHER_A = 1 } other;
typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,                          /**< Maximum number of threads per block */
    CU_DEVICE_ATTRIBUTE_SHARED_MEMORY_PER_BLOCK = 1,                        /**< Deprecated, use CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
    CU_DEVICE_ATTRIBUTE_NUMA_ID = 131,                                      /**< NUMA node ID of the GPU memory */
    CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120,                               /**< Indicates device supports cluster launch */
    CU_DEVICE_ATTRIBUTE_MAX
} CUdevice_attribute;
typedef enum cudaError_enum {
    /**
     * The API call returned with no errors (see
     * ::cuEventQuery()).
     */
    CUDA_SUCCESS                              = 0,

    /**
     * \deprecated
     * Out of memory.
     */
    CUDA_ERROR_OUT_OF_MEMORY                  = 2,
    CUDA_ERROR_UNKNOWN                        = 999
} CUresult;
"#;

    #[test]
    fn enumerators_take_leading_and_trailing_docs_and_skip_valueless_entries() {
        let attributes = enumerators(HEADER, "CUdevice_attribute").unwrap();
        assert_eq!(attributes.len(), 4);
        assert_eq!(attributes[0].doc, "Maximum number of threads per block");
        assert_eq!(attributes[2].value, 131);
        let codes = enumerators(HEADER, "CUresult").unwrap();
        assert_eq!(
            codes
                .iter()
                .map(|c| (c.name.as_str(), c.value))
                .collect::<Vec<_>>(),
            [
                ("CUDA_SUCCESS", 0),
                ("CUDA_ERROR_OUT_OF_MEMORY", 2),
                ("CUDA_ERROR_UNKNOWN", 999)
            ]
        );
        assert_eq!(
            codes[0].doc,
            "The API call returned with no errors (see ::cuEventQuery())."
        );
        assert_eq!(codes[2].doc, "");
        assert!(enumerators(HEADER, "CUmissing").is_err());
    }

    #[test]
    fn docs_become_rustdoc() {
        assert_eq!(
            rustdoc("see ::cuEventQuery() and ::CU_X, \\ref CUDA_MEMOP; https://x.y/z)"),
            "see `cuEventQuery()` and `CU_X`, CUDA_MEMOP; <https://x.y/z>)."
        );
        assert_eq!(rustdoc("\\deprecated Gone"), "Deprecated. Gone.");
    }

    #[test]
    fn types_come_from_names_and_docs() {
        assert_eq!(
            attribute_type("MAX_THREADS_PER_BLOCK", "Maximum number"),
            "u32"
        );
        assert_eq!(attribute_type("NUMA_ID", "NUMA node ID"), "i32");
        assert_eq!(
            attribute_type("CLUSTER_LAUNCH", "Indicates device supports"),
            "bool"
        );
        assert_eq!(attribute_type("MEMORY_POOLS_SUPPORTED", "anything"), "bool");
        assert_eq!(attribute_type("INTEGRATED", "Device is integrated"), "bool");
    }

    #[test]
    fn aliases_are_left_out_and_new_attributes_are_marked() {
        let header12 = HEADER.replace(
            "CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH",
            "CU_DEVICE_ATTRIBUTE_GONE",
        );
        let (text, table) = device_attributes(HEADER, &header12).unwrap();
        assert!(table.contains(
            "(\"CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK\", A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK.0, |p| p.max_threads_per_block().map(|v| v as i64)),"
        ), "{table}");
        assert!(text.contains("pub fn max_threads_per_block(&self) -> Result<u32>"));
        assert!(!text.contains("shared_memory_per_block"));
        assert!(text.contains("pub fn numa_id(&self) -> Result<i32>"));
        assert!(text.contains("pub(crate) const ATTRIBUTE_CODES: usize = 132;"));
        let cluster = text.find("fn cluster_launch").unwrap();
        assert!(
            text[..cluster].rfind("new in the CUDA 13 header")
                > text[..cluster].rfind("fn numa_id")
        );
    }

    #[test]
    fn codes_are_named_without_their_prefix() {
        let text = driver_codes(HEADER).unwrap();
        assert!(text.contains("pub const SUCCESS: DriverCode = DriverCode(0);"));
        assert!(text.contains("pub const OUT_OF_MEMORY: DriverCode = DriverCode(2);"));
        assert!(text.contains("2 => \"CUDA_ERROR_OUT_OF_MEMORY\","));
        assert!(text.contains("/// Deprecated. Out of memory."));
    }
}
