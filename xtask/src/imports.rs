//! `cargo xtask import-graph [--crate DIR] [--check]`: which files of a crate's `src/` import
//! which, and the circles among them. For cuda-core, a circle that is not made of factories
//! and children holding their parents ([`CUDA_CORE_FAMILY`]) fails `--check`.
//!
//! Each file is a node, named by its module path (`memory::ipc`). An edge `a -> b` is a path in
//! `a` (a `use` or any other path, `crate::`, `super::` or `self::`) that names module `b` or an
//! item of it: the longest module prefix of the path wins. A module's `mod` declarations are not
//! edges, nor are paths in items compiled only for tests (`#[cfg(test)]`). The circles reported are the strongly connected components of more than one file once
//! the edges from a child module to one of its ancestors are left out, since a parent and the
//! children it declares may refer to each other by design; the count with them is given too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// cuda-core's objects and what each is made by or holds (its parents): an edge from an object
/// to one of its ancestors is a child holding its parent (a stream its context), an edge to
/// one of its descendants a factory (a device making streams). A name covers its child
/// modules (`memory` is every resource file), the longest name winning.
pub const CUDA_CORE_FAMILY: &[(&str, &[&str])] = &[
    ("context", &["device", "sm_resources"]),
    ("sm_resources", &["device"]),
    ("system", &["device"]),
    ("stream", &["context"]),
    ("event", &["context", "stream"]),
    ("memory", &["device", "context"]),
    ("memory::buffer", &["memory", "stream"]),
    ("order", &["stream"]),
    ("ipc", &["memory", "event"]),
    ("kernel", &["object_code"]),
    ("global", &["object_code"]),
];

/// Runs the command: prints the report; with `--check`, fails where a circle is left once
/// factories and children holding their parents are left out.
pub fn run(args: &[String], root: &Path) -> Result<(), String> {
    let check = args.iter().any(|a| a == "--check");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--check").collect();
    let (src, family) = match args.as_slice() {
        [] => (root.join("cuda-core/src"), CUDA_CORE_FAMILY),
        [flag, dir] if *flag == "--crate" => (PathBuf::from(dir).join("src"), &[][..]),
        _ => return Err(format!("unexpected arguments {args:?}")),
    };
    let mut graph = Graph::of(&src)?;
    graph.family = family;
    print!("{}", graph.report());
    let left = graph.components(Edges::Objects).len();
    if check && left > 0 {
        return Err(format!(
            "{left} circle(s) besides factories and children holding their parents"
        ));
    }
    Ok(())
}

/// Which edges the circles are made of.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Edges {
    /// Every edge.
    All,
    /// All but a child module's edges to its ancestors.
    Modules,
    /// All but those, and an object's edges to its ancestors and descendants in the family.
    Objects,
}

/// Files and their imports.
#[derive(Debug, Default)]
pub struct Graph {
    /// Module path of each file.
    pub modules: BTreeSet<String>,
    /// `from -> {to}`.
    pub edges: BTreeMap<String, BTreeSet<String>>,
    /// The names each module's `use` items bring in, and the paths they stand for.
    uses: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// The objects' family tree ([`CUDA_CORE_FAMILY`]'s shape).
    pub family: &'static [(&'static str, &'static [&'static str])],
}

impl Graph {
    /// Reads every `.rs` file under `src`.
    pub fn of(src: &Path) -> Result<Graph, String> {
        let mut files = Vec::new();
        collect(src, &mut files).map_err(|e| format!("{}: {e}", src.display()))?;
        let mut sources = Vec::new();
        for file in &files {
            let rel = file.strip_prefix(src).map_err(|e| e.to_string())?;
            let text =
                std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
            sources.push((module_of(rel), text));
        }
        Graph::from_sources(&sources)
    }

    /// The graph of `(module path, source)` pairs.
    pub fn from_sources(sources: &[(String, String)]) -> Result<Graph, String> {
        let mut graph = Graph {
            modules: sources.iter().map(|(m, _)| m.clone()).collect(),
            ..Graph::default()
        };
        let mut found = Vec::new();
        for (module, text) in sources {
            let file = syn::parse_file(text).map_err(|e| format!("{module}: {e}"))?;
            let mut paths = Paths::default();
            paths.visit_file(&file);
            graph
                .uses
                .insert(module.clone(), paths.names.into_iter().collect());
            found.push((module, paths.found));
        }
        for (module, paths) in found {
            for path in paths {
                if let Some(target) = graph.resolve(module, &path, 0) {
                    if target != *module {
                        graph
                            .edges
                            .entry(module.clone())
                            .or_default()
                            .insert(target);
                    }
                }
            }
        }
        Ok(graph)
    }

    /// The file module a path written in `module` names, if it names one of this crate,
    /// following `use` re-exports (`crate::Buffer` through the root's `pub use` names the file
    /// that defines it) up to `depth` 8.
    fn resolve(&self, module: &str, path: &[String], depth: usize) -> Option<String> {
        let mut base: Vec<&str> = if module.is_empty() {
            Vec::new()
        } else {
            module.split("::").collect()
        };
        let mut rest = path;
        let child = |name: &str| {
            let candidate = if module.is_empty() {
                name.to_owned()
            } else {
                format!("{module}::{name}")
            };
            self.modules.contains(&candidate)
        };
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("super") => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some("self") => rest = &rest[1..],
            // A child module or a name this module imported, written without `self::`.
            Some(first)
                if child(first) || self.uses.get(module).is_some_and(|u| u.contains_key(first)) => {
            }
            _ => return None,
        }
        let mut full: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
        full.extend(rest.iter().cloned());
        let (n, found) = (0..=full.len())
            .rev()
            .map(|n| (n, full[..n].join("::")))
            .find(|(_, candidate)| self.modules.contains(candidate))?;
        if depth < 8 {
            if let Some(next) = full
                .get(n)
                .and_then(|name| self.uses.get(&found)?.get(name))
            {
                if next.as_slice() != &full[n..=n] || found != module {
                    let mut target = next.clone();
                    target.extend(full[n + 1..].iter().cloned());
                    if let Some(deeper) = self.resolve(&found, &target, depth + 1) {
                        return Some(deeper);
                    }
                }
            }
        }
        Some(found)
    }

    /// The circles that matter: strongly connected components of more than one file once the
    /// edges from a child module to one of its ancestors are left out (a parent and the
    /// children it declares may refer to each other by design). Each sorted, largest first.
    pub fn circles(&self) -> Vec<Vec<String>> {
        self.components(Edges::Modules)
    }

    /// The family entry that covers `module`: its own name or the longest enclosing one.
    fn owner(&self, module: &str) -> Option<&'static str> {
        self.family
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| module == *name || is_ancestor(name, module))
            .max_by_key(|name| name.len())
    }

    /// The objects `module` descends from in the family (made by, or holding).
    fn object_ancestors(&self, module: &str) -> BTreeSet<&'static str> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<&'static str> = self.owner(module).into_iter().collect();
        let mut seen = BTreeSet::new();
        while let Some(entry) = todo.pop() {
            if !seen.insert(entry) {
                continue;
            }
            let parents = self.family.iter().find(|(name, _)| *name == entry);
            for parent in parents.map(|(_, p)| *p).unwrap_or_default() {
                out.insert(*parent);
                todo.extend(self.owner(parent));
            }
        }
        out
    }

    /// Whether `from -> to` is a child holding an ancestor or a factory of a descendant.
    fn is_family(&self, from: &str, to: &str) -> bool {
        let covers = |objects: BTreeSet<&str>, module: &str| {
            objects
                .iter()
                .any(|object| *object == module || is_ancestor(object, module))
        };
        covers(self.object_ancestors(from), to) || covers(self.object_ancestors(to), from)
    }

    /// Whether the circles of `edges` count `from -> to`.
    fn counts(&self, edges: Edges, from: &str, to: &str) -> bool {
        match edges {
            Edges::All => true,
            Edges::Modules => !is_ancestor(to, from),
            Edges::Objects => !is_ancestor(to, from) && !self.is_family(from, to),
        }
    }

    /// The strongly connected components of more than one file, of the `edges` counted.
    pub fn components(&self, edges: Edges) -> Vec<Vec<String>> {
        let nodes: Vec<&String> = self.modules.iter().collect();
        let index: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let adjacency: Vec<Vec<usize>> = nodes
            .iter()
            .map(|n| {
                self.edges
                    .get(*n)
                    .map(|to| {
                        to.iter()
                            .filter(|t| self.counts(edges, n, t))
                            .filter_map(|t| index.get(t).copied())
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let mut out: Vec<Vec<String>> = tarjan(&adjacency)
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut names: Vec<String> = c.into_iter().map(|i| nodes[i].clone()).collect();
                names.sort();
                names
            })
            .collect();
        out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        out
    }

    /// The report: counts, then each circle with its edges: first those left once factories
    /// and children holding their parents are left out, then the module circles (their
    /// members only).
    pub fn report(&self) -> String {
        let edges: usize = self.edges.values().map(BTreeSet::len).sum();
        let circles = self.circles();
        let objects = self.components(Edges::Objects);
        let mut out = format!(
            "{} files, {} import edges, {} circle(s) (not counting a child's edges to its \
             ancestors; {} counting them)\n",
            self.modules.len(),
            edges,
            circles.len(),
            self.components(Edges::All).len()
        );
        if !self.family.is_empty() {
            let _ = writeln!(
                out,
                "{} circle(s) once factories and children holding their parents are left out \
                 (object: its parents):",
                objects.len()
            );
            for (object, parents) in self.family {
                let _ = writeln!(out, "  {object}: {}", parents.join(", "));
            }
        }
        for (n, circle) in objects.iter().enumerate() {
            let members: BTreeSet<&String> = circle.iter().collect();
            let _ = writeln!(
                out,
                "\ncircle {} ({} files, not of factories and parents): {}",
                n + 1,
                circle.len(),
                circle.join(", ")
            );
            for from in circle {
                for to in self.edges.get(from).into_iter().flatten() {
                    if members.contains(to) && self.counts(Edges::Objects, from, to) {
                        let _ = writeln!(out, "  {} -> {}", name(from), name(to));
                    }
                }
            }
        }
        if self.family.is_empty() {
            return self.module_circles(out, &circles);
        }
        for (n, circle) in circles.iter().enumerate() {
            let _ = writeln!(
                out,
                "\nmodule circle {} ({} files, of factories and parents): {}",
                n + 1,
                circle.len(),
                circle.join(", ")
            );
        }
        out
    }

    /// Each module circle with its edges.
    fn module_circles(&self, mut out: String, circles: &[Vec<String>]) -> String {
        for (n, circle) in circles.iter().enumerate() {
            let members: BTreeSet<&String> = circle.iter().collect();
            let _ = writeln!(
                out,
                "\ncircle {} ({} files): {}",
                n + 1,
                circle.len(),
                circle.join(", ")
            );
            for from in circle {
                for to in self.edges.get(from).into_iter().flatten() {
                    if members.contains(to) && !is_ancestor(to, from) {
                        let _ = writeln!(out, "  {} -> {}", name(from), name(to));
                    }
                }
            }
        }
        out
    }
}

/// How the report names the crate root.
fn name(module: &str) -> &str {
    if module.is_empty() {
        "(lib)"
    } else {
        module
    }
}

/// Whether `ancestor` contains `module` (the root contains everything).
fn is_ancestor(ancestor: &str, module: &str) -> bool {
    ancestor.is_empty() || module.starts_with(&format!("{ancestor}::"))
}

/// The module path of a file relative to `src/`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_owned();
        if stem != "mod" && !(parts.is_empty() && (stem == "lib" || stem == "main")) {
            parts.push(stem);
        }
    }
    parts.join("::")
}

/// Every `.rs` file under `dir`, sorted.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The paths a file writes: `use` trees flattened, and every other path.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
    /// `(name, path)` of each name a `use` brings in (globs bring none).
    names: Vec<(String, Vec<String>)>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                if let Some(name) = path.last() {
                    self.names.push((name.clone(), path.clone()));
                }
                self.found.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.names.push((r.rename.to_string(), path.clone()));
                self.found.push(path);
            }
            syn::UseTree::Glob(_) => self.found.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

/// Whether an item is compiled only for tests (`#[cfg(test)]`): a unit test may use any part
/// of the crate without that part being a dependency of the code it tests.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if !test_only(&item.attrs) {
            self.use_tree(&mut Vec::new(), &item.tree);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !test_only(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !test_only(&item.attrs) {
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.found
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Paths inside macro calls (`call!(...)`, `format!`) are tokens: read the plain ones.
        let mut tokens = Vec::new();
        flatten(mac.tokens.clone(), &mut tokens);
        let mut i = 0;
        while i < tokens.len() {
            if matches!(tokens[i].as_str(), "crate" | "super" | "self") {
                let mut path = vec![tokens[i].clone()];
                let mut j = i + 1;
                while tokens.get(j).map(String::as_str) == Some(":")
                    && tokens.get(j + 1).map(String::as_str) == Some(":")
                {
                    match tokens.get(j + 2) {
                        Some(segment) => path.push(segment.clone()),
                        None => break,
                    }
                    j += 3;
                }
                self.found.push(path);
                i = j;
            } else {
                i += 1;
            }
        }
        syn::visit::visit_macro(self, mac);
    }
}

/// The tokens of a stream as text, groups opened.
fn flatten(stream: proc_macro2::TokenStream, out: &mut Vec<String>) {
    for token in stream {
        match token {
            proc_macro2::TokenTree::Group(group) => flatten(group.stream(), out),
            other => out.push(other.to_string()),
        }
    }
}

/// Tarjan's strongly connected components.
fn tarjan(adjacency: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        adjacency: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn strong(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.adjacency[v] {
            match s.index[w] {
                None => {
                    strong(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let n = adjacency.len();
    let mut state = State {
        adjacency,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            strong(&mut state, v);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
            .collect();
        Graph::from_sources(&sources).unwrap()
    }

    #[test]
    fn module_paths_follow_the_file_layout() {
        assert_eq!(module_of(Path::new("lib.rs")), "");
        assert_eq!(module_of(Path::new("launch.rs")), "launch");
        assert_eq!(module_of(Path::new("memory/mod.rs")), "memory");
        assert_eq!(
            module_of(Path::new("memory/ipc/socket.rs")),
            "memory::ipc::socket"
        );
    }

    #[test]
    fn paths_resolve_to_the_longest_module_and_circles_are_found() {
        let g = graph(&[
            ("", "mod a; mod b; mod c; pub use a::X;"),
            ("a", "use crate::b::{Y, inner::Z}; pub struct X;"),
            ("b", "pub struct Y; pub fn f() -> crate::c::W { todo!() }"),
            ("b::inner", "pub struct Z(super::Y);"),
            ("c", "pub struct W; fn g() { let _ = crate::a::X; }"),
            ("d", "fn h() { call!(self.f(crate::c::W)); }"),
        ]);
        let to = |m: &str| g.edges.get(m).cloned().unwrap_or_default();
        assert_eq!(to("a"), ["b", "b::inner"].map(String::from).into());
        assert_eq!(to("b::inner"), ["b"].map(String::from).into());
        assert_eq!(
            to("d"),
            ["c"].map(String::from).into(),
            "a path in a macro call"
        );
        // The root names a only through `pub use`: an edge, but no circle through the root.
        assert_eq!(
            g.circles(),
            vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
        );
        let report = g.report();
        assert!(report.contains("1 circle(s)"), "{report}");
        assert!(report.contains("  c -> a\n"), "{report}");
    }

    #[test]
    fn factories_and_children_holding_parents_close_no_object_circle() {
        let mut g = graph(&[
            ("device", "fn f() -> crate::stream::Stream { todo!() }"),
            (
                "stream",
                "struct S(crate::device::Device); fn g(_: crate::memory::M) {}",
            ),
            ("memory", "pub struct M; fn h(_: &crate::stream::Stream) {}"),
        ]);
        g.family = &[("stream", &["device"]), ("memory", &["device"])];
        // device -> stream is a factory, stream -> device a child holding its parent: only
        // stream <-> memory, neither's ancestor, is a circle of objects.
        assert_eq!(g.circles().len(), 1);
        assert_eq!(
            g.components(Edges::Objects),
            vec![vec!["memory".to_owned(), "stream".to_owned()]]
        );
        let report = g.report();
        assert!(report.contains("1 circle(s) once factories"), "{report}");
        assert!(report.contains("  stream -> memory\n"), "{report}");
        assert!(!report.contains("  stream -> device\n"), "{report}");
        // With memory a child of stream, stream -> memory is a factory: no circle is left.
        g.family = &[("stream", &["device"]), ("memory", &["device", "stream"])];
        assert!(g.components(Edges::Objects).is_empty());
    }

    #[test]
    fn paths_in_test_only_items_are_no_edges() {
        let g = graph(&[
            ("a", "#[cfg(test)] mod tests { use crate::b::Y; }"),
            (
                "b",
                "pub struct Y; #[cfg(test)] fn t() { let _ = crate::a::X; }",
            ),
            (
                "c",
                "#[cfg(test)] use crate::a::X; #[cfg(not(test))] use crate::b::Y;",
            ),
        ]);
        let to = |m: &str| g.edges.get(m).cloned().unwrap_or_default();
        // A test module, a test-only function and a test-only `use` name nothing; an item
        // under another cfg still does.
        assert!(to("a").is_empty(), "{:?}", to("a"));
        assert!(to("b").is_empty(), "{:?}", to("b"));
        assert_eq!(to("c"), ["b"].map(String::from).into());
    }

    #[test]
    fn a_name_the_root_re_exports_is_its_defining_file() {
        let g = graph(&[
            (
                "",
                "mod a; mod b; mod deep; pub use a::X; pub use deep::inner;",
            ),
            ("a", "pub struct X;"),
            (
                "b",
                "use crate::X; use crate::inner::Y; fn f() -> crate::X { X }",
            ),
            ("deep", "pub mod inner;"),
            ("deep::inner", "pub struct Y;"),
        ]);
        assert_eq!(g.edges["b"], ["a", "deep::inner"].map(String::from).into());
    }

    #[test]
    fn a_child_holding_its_parent_is_no_circle() {
        let g = graph(&[
            ("p", "use self::child::C; pub struct P;"),
            ("p::child", "use super::P; pub struct C;"),
        ]);
        assert!(g.edges["p::child"].contains("p") && g.edges["p"].contains("p::child"));
        assert!(g.circles().is_empty());
        let report = g.report();
        assert!(
            report.contains(
                "0 circle(s) (not counting a child's edges to its ancestors; 1 counting them)"
            ),
            "{report}"
        );
    }
}
