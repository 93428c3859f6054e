//! The function table of a library whose exported names carry the API version, as nvJitLink's
//! do: the 13.5 `nvJitLink.h` declares `__nvJitLinkCreate_13_5` and wraps it in a static inline
//! `nvJitLinkCreate`; the 12.9 header declares `__nvJitLinkCreate_12_9` instead.
//!
//! A library exports the names of every minor of its major up to its own (a 13.5 library has
//! `__nvJitLinkCreate_13_0` to `_13_5`, a 13.0 library only `_13_0`), and, from 12.9 and 13.0 on
//! at least, the plain names for callers built with `NVJITLINK_NO_INLINE` (12.0 has none, nor
//! `nvJitLinkVersion`). A suffix promises the behaviour of that header version (which error
//! codes come back, for one), so the table asks for the pinned header's own version first and,
//! in an older library of the same major, for the newest older one it has. The signatures stay
//! the same within a major: the headers of 13.0 and 13.5, and of 12.0 and 12.9, were compared
//! when this was written, and differ only in the constness of `nvJitLinkCreate`'s options.
//!
//! The fields are typed with the pinned header's signatures. Another major's header (the pin's
//! `other_majors`) contributes its names for a function only where its declaration has the same
//! ABI (pointer constness aside), and only when every type both headers define agrees (the
//! newer header may add enum values); otherwise generation fails, so that a new pin is looked at.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, ToTokens};

use crate::headers::{Api, Pin};
use crate::parse::Parsed;

/// Splits `__nvJitLinkCreate_13_5` into `("nvJitLinkCreate", 13, 5)`.
fn split_versioned(name: &str) -> Option<(&str, u32, u32)> {
    let rest = name.strip_prefix("__")?;
    let (rest, minor) = rest.rsplit_once('_')?;
    let (plain, major) = rest.rsplit_once('_')?;
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((plain, number(major)?, number(minor)?))
}

/// One declared function of a header, by its plain name.
struct Declared {
    /// The header version in the declared name's suffix; `None` for an unversioned name.
    version: Option<(u32, u32)>,
    /// The parameter and return types, pointer constness folded: equal keys, equal ABI.
    abi: String,
    /// The parameters as declared, for documentation.
    params: Vec<String>,
    inputs: Vec<syn::FnArg>,
    output: syn::ReturnType,
}

/// A type as Rust source, compactly: `*mut *const ::std::os::raw::c_char`.
fn show(tokens: &impl ToTokens) -> String {
    tokens
        .to_token_stream()
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace("const::", "const ::")
        .replace("mut::", "mut ::")
        .replace(" : ", ": ")
        .replace("* mut ", "*mut ")
        .replace("* const ", "*const ")
}

fn declare(function: &syn::ForeignItemFn) -> (String, Declared) {
    let name = function.sig.ident.to_string();
    let (plain, version) = match split_versioned(&name) {
        Some((plain, major, minor)) => (plain.to_owned(), Some((major, minor))),
        None => (name.clone(), None),
    };
    let mut types = Vec::new();
    let mut params = Vec::new();
    for arg in &function.sig.inputs {
        types.push(match arg {
            syn::FnArg::Typed(typed) => show(&typed.ty),
            syn::FnArg::Receiver(receiver) => show(receiver),
        });
        params.push(show(arg));
    }
    types.push(show(&function.sig.output));
    let abi = types.join(", ").replace("*const ", "*mut ");
    let declared = Declared {
        version,
        abi,
        params,
        inputs: function.sig.inputs.iter().cloned().collect(),
        output: function.sig.output.clone(),
    };
    (plain, declared)
}

/// A header's functions by plain name, in declaration order, and the version its names carry.
fn declarations(
    parsed: &Parsed,
    major: u32,
    what: &str,
) -> Result<(Vec<(String, Declared)>, u32), String> {
    let functions: Vec<(String, Declared)> = parsed.functions.iter().map(declare).collect();
    let mut minors = functions.iter().filter_map(|(_, d)| d.version);
    let Some((found_major, minor)) = minors.next() else {
        return Err(format!("{what} declares no versioned function"));
    };
    if found_major != major || minors.any(|v| v != (found_major, minor)) {
        return Err(format!(
            "{what}: the versioned names do not all carry {major}.{minor}"
        ));
    }
    Ok((functions, minor))
}

/// Named type items and enum constants, each with its tokens, to compare two headers' types.
fn type_items(types: &[syn::Item]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for item in types {
        let (name, tokens) = match item {
            syn::Item::Struct(s) => (s.ident.to_string(), s.to_token_stream()),
            syn::Item::Union(u) => (u.ident.to_string(), u.to_token_stream()),
            syn::Item::Enum(e) => (e.ident.to_string(), e.to_token_stream()),
            syn::Item::Type(t) => (t.ident.to_string(), t.to_token_stream()),
            syn::Item::Const(c) if c.ident != "_" => (c.ident.to_string(), c.to_token_stream()),
            syn::Item::Impl(block) if block.trait_.is_none() => {
                let owner = show(&block.self_ty);
                for member in &block.items {
                    if let syn::ImplItem::Const(c) = member {
                        out.insert(
                            format!("{owner}::{}", c.ident),
                            c.to_token_stream().to_string(),
                        );
                    }
                }
                continue;
            }
            _ => continue,
        };
        out.insert(name, tokens.to_string());
    }
    out
}

/// Fails unless every type and constant `older` defines is defined the same way in `newer`.
fn check_types_agree(newer: &Parsed, older: &Parsed, what: &str) -> Result<(), String> {
    let newer = type_items(&newer.types);
    let differing: Vec<String> = type_items(&older.types)
        .into_iter()
        .filter(|(name, tokens)| newer.get(name) != Some(tokens))
        .map(|(name, _)| name)
        .collect();
    if differing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what} defines these differently from the pinned header, so the table cannot load \
             its library with the pinned header's types: {differing:?}"
        ))
    }
}

/// The names one field is looked up by in a library of one major, best first.
fn names_for(plain: &str, version: Option<(u32, u32)>) -> Vec<String> {
    match version {
        Some((major, minor)) => (0..=minor)
            .rev()
            .map(|m| format!("__{plain}_{major}_{m}"))
            .collect(),
        None => vec![plain.to_owned()],
    }
}

/// How the documentation names the lookups of one field in a library of `major`.
fn describe(plain: &str, version: Option<(u32, u32)>, major: u32) -> String {
    match version {
        None => format!("in a {major}.x library `{plain}`"),
        Some((_, 0)) => format!("in a {major}.x library `__{plain}_{major}_0`"),
        Some((_, 1)) => {
            format!("in a {major}.x library `__{plain}_{major}_1`, or else `__{plain}_{major}_0`")
        }
        Some((_, minor)) => format!(
            "in a {major}.x library `__{plain}_{major}_{minor}`, or else the newest of \
             `__{plain}_{major}_{}` down to `_{major}_0` that it has",
            minor - 1
        ),
    }
}

/// The table for `pin`, whose header is `primary`, also loading libraries of `others`' majors.
pub fn table(pin: &Pin, primary: &Parsed, others: &[(u32, Parsed)]) -> Result<TokenStream, String> {
    let header = pin.header;
    let own = format!("the {} {} header", header.file, header.version);
    let (functions, own_minor) = declarations(primary, header.major, &own)?;
    // Per major, best first: (major, header minor, that header's functions by plain name).
    let mut majors: Vec<(u32, u32, BTreeMap<String, Declared>)> = Vec::new();
    for (major, parsed) in others {
        let what = format!("the {}.x {}", major, header.file);
        check_types_agree(primary, parsed, &what)?;
        let (declared, minor) = declarations(parsed, *major, &what)?;
        majors.push((*major, minor, declared.into_iter().collect()));
    }

    let library = match pin.api {
        Api::NvJitLink => "nvJitLink (`libnvJitLink.so.*`)",
        Api::Driver | Api::Nvrtc | Api::Nvvm | Api::Nccl => "the library",
    };
    let majors_text: Vec<String> = std::iter::once(format!("{}.{own_minor}", header.major))
        .chain(majors.iter().map(|(m, n, _)| format!("{m}.{n}")))
        .collect();
    let struct_doc = format!(
        " Every function `{file}` declares, as an optional pointer into {library}.\n\n \
         The library exports each function under a name that carries the API version a caller \
         was built for (`__nvJitLinkCreate_{major}_{own_minor}`); the header's static inline \
         functions of the plain names call those. A field is named after the plain name and \
         typed with the signature of the {version} header. [`load`](Self::load) fills it from \
         the first of [`export_names`](Self::export_names) for the library's major that the \
         library exports (the headers of {majors} give those names), records that name in \
         [`exports`](Self::exports), and leaves the field `None` when it has none of them.",
        file = header.file,
        major = header.major,
        version = header.version,
        majors = majors_text.join(" and "),
    );

    let count = Literal::usize_unsuffixed(functions.len());
    let mut fields = Vec::new();
    let mut loads = Vec::new();
    let mut entries = Vec::new();
    // Per major (own first, then others), per field: the names to try.
    let mut per_major: Vec<(u32, Vec<Vec<String>>)> = vec![(header.major, Vec::new())];
    per_major.extend(majors.iter().map(|(m, _, _)| (*m, Vec::new())));
    let mut unversioned: Vec<Vec<String>> = Vec::new();
    for (index, (plain, own_decl)) in functions.iter().enumerate() {
        let mut doc = vec![describe(plain, own_decl.version, header.major)];
        let mut notes = Vec::new();
        per_major[0].1.push(names_for(plain, own_decl.version));
        for (slot, (major, minor, declared)) in majors.iter().enumerate() {
            let what = format!("the {major}.{minor} header");
            let names = match declared.get(plain) {
                Some(other) if other.abi == own_decl.abi => {
                    if other.params != own_decl.params {
                        notes.push(format!(
                            " The {major}.{minor} header declares it as `({})`, which differs \
                             only in pointer constness: the same ABI.",
                            other.params.join(", ")
                        ));
                    }
                    doc.push(describe(plain, other.version, *major));
                    names_for(plain, other.version)
                }
                Some(other) => {
                    notes.push(format!(
                        " Not loaded from a {major}.x library: {what} declares it with another \
                         signature, `{}`.",
                        other.params.join(", ")
                    ));
                    Vec::new()
                }
                None => {
                    doc.push(format!(
                        "never from a {major}.x library ({what} does not declare it)"
                    ));
                    Vec::new()
                }
            };
            per_major[slot + 1].1.push(names);
        }
        unversioned.push(match own_decl.version {
            None => vec![plain.clone()],
            Some(_) => Vec::new(),
        });
        let everywhere = own_decl.version.is_none()
            && per_major
                .iter()
                .all(|(_, names)| names[index] == [plain.clone()]);
        if everywhere {
            doc = vec![format!(
                "exported under this unversioned name by a library of any major"
            )];
        }

        let mut text = format!(" `{plain}`: {}.", doc.join("; "));
        if !notes.is_empty() {
            text.push_str("\n\n");
            text.push_str(&notes.join("\n\n"));
        }
        let field = format_ident!("{plain}");
        let inputs = &own_decl.inputs;
        let output = &own_decl.output;
        fields.push(quote! {
            #[doc = #text]
            pub #field: ::core::option::Option<unsafe extern "C" fn(#(#inputs),*) #output>,
        });
        let at = Literal::usize_unsuffixed(index);
        loads.push(quote! { #field: lookup(library, names[#at], &mut found[#at]), });
        entries.push(quote! {
            Symbol {
                field: #plain,
                export: self.exports[#at],
                address: self.#field.map(|f| f as *const ::core::ffi::c_void),
            },
        });
    }

    let list = |names: &[Vec<String>]| {
        let each = names.iter().map(|n| quote! { &[#(#n),*] });
        quote! { [#(#each),*] }
    };
    let arms = per_major.iter().map(|(major, names)| {
        let major = Literal::u32_unsuffixed(*major);
        let body = list(names);
        quote! { #major => #body, }
    });
    let fallback = list(&unversioned);
    let known: Vec<TokenStream> = std::iter::once((header.major, own_minor))
        .chain(majors.iter().map(|(m, n, _)| (*m, *n)))
        .map(|(m, n)| {
            let (m, n) = (Literal::u32_unsuffixed(m), Literal::u32_unsuffixed(n));
            quote! { (#m, #n) }
        })
        .collect();
    let known_count = Literal::usize_unsuffixed(known.len());
    let field_names = functions.iter().map(|(plain, _)| plain);
    let name = format_ident!("{}", pin.table);

    Ok(quote! {
        #[doc = #struct_doc]
        #[derive(Clone, Copy)]
        pub struct #name {
            #(#fields)*
            /// The symbol each field was filled from, in field order; `None` where the library
            /// exports none of the names tried.
            pub exports: [::core::option::Option<&'static str>; #count],
        }

        /// One entry of the table: its field, the symbol it was loaded from, the address found.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Symbol {
            /// The table field's name, the function's plain name.
            pub field: &'static str,
            /// The exported symbol the field was filled from; `None` when none was found.
            pub export: ::core::option::Option<&'static str>,
            /// The loaded address, `None` when the library lacks every name tried.
            pub address: ::core::option::Option<*const ::core::ffi::c_void>,
        }

        impl #name {
            /// How many functions the table holds.
            pub const LEN: usize = #count;

            /// The fields' names, in declaration order: the order of
            /// [`export_names`](Self::export_names), [`exports`](Self::exports) and
            /// [`symbols`](Self::symbols).
            pub const FIELDS: [&'static str; #count] = [#(#field_names),*];

            /// The library majors whose exported names the table knows, best first, each with
            /// the minor of the header the names come from. In a library of another major only
            /// the functions exported under an unversioned name are looked up.
            pub const MAJORS: [(u32, u32); #known_count] = [#(#known),*];

            /// Fills the table from a loaded library of CUDA `major`; a function the library
            /// lacks leaves its field `None`.
            ///
            /// # Safety
            ///
            /// `library` must be the library the header describes, of CUDA `major` (each name
            /// found is taken to have the signature of its field), and must stay loaded while
            /// the table or any pointer copied out of it is in use.
            pub unsafe fn load(library: &::libloading::Library, major: u32) -> Self {
                let names = Self::export_names(major);
                let mut found: [::core::option::Option<&'static str>; #count] = [None; #count];
                Self {
                    #(#loads)*
                    exports: found,
                }
            }

            /// The names each field is looked up by in a library of CUDA `major`, in field
            /// order, each best first (empty where that major's header has no such function).
            pub fn export_names(major: u32) -> [&'static [&'static str]; #count] {
                match major {
                    #(#arms)*
                    _ => #fallback,
                }
            }

            /// Every entry, in declaration order, with the symbol and address it was loaded with.
            pub fn symbols(&self) -> [Symbol; #count] {
                [ #(#entries)* ]
            }
        }

        /// Looks a function up by the first of `names` the library exports, and records that
        /// name in `found`; `None` when it exports none of them.
        ///
        /// # Safety
        ///
        /// `T` must be the function pointer type of the real signature of every one of `names`.
        unsafe fn lookup<T: Copy>(
            library: &::libloading::Library,
            names: &[&'static str],
            found: &mut ::core::option::Option<&'static str>,
        ) -> ::core::option::Option<T> {
            for name in names {
                // SAFETY: the caller vouches for `T`; libloading adds the terminating NUL.
                if let Ok(symbol) = unsafe { library.get::<T>(name.as_bytes()) } {
                    *found = Some(*name);
                    return Some(*symbol);
                }
            }
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{names_for, split_versioned};

    #[test]
    fn versioned_names_split_into_plain_name_and_version() {
        assert_eq!(
            split_versioned("__nvJitLinkCreate_13_5"),
            Some(("nvJitLinkCreate", 13, 5))
        );
        assert_eq!(
            split_versioned("__nvJitLinkGetLinkedLTOIRSize_12_10"),
            Some(("nvJitLinkGetLinkedLTOIRSize", 12, 10))
        );
        assert_eq!(split_versioned("nvJitLinkVersion"), None);
        assert_eq!(split_versioned("__nvJitLinkAPI"), None);
        assert_eq!(split_versioned("__a_b_1"), None);
    }

    #[test]
    fn names_go_from_the_header_minor_down_to_zero() {
        assert_eq!(
            names_for("nvJitLinkCreate", Some((13, 2))),
            [
                "__nvJitLinkCreate_13_2",
                "__nvJitLinkCreate_13_1",
                "__nvJitLinkCreate_13_0"
            ]
        );
        assert_eq!(names_for("nvJitLinkVersion", None), ["nvJitLinkVersion"]);
    }
}
