//! `cargo xtask import-graph [--crate DIR] [--check]`: which files of a crate's `src/` import
//! which, and the circles among them.
//!
//! For cuda-core, the floor plan in [`PLAN`] says which circles are allowed: its family of
//! objects (factories and children holding their parents) may import each other, and each
//! module circle has a largest size. `--check` prints the circles' sizes and fails on a circle
//! that is not made of the family, on a module circle grown past its size, and on a module
//! circle the plan does not name.
//!
//! Each file is a node, named by its module path (`memory::ipc`). An edge `a -> b` is a path in
//! `a` (a `use` or any other path, `crate::`, `super::` or `self::`) that names module `b` or an
//! item of it: the longest module prefix of the path wins. A module's `mod` declarations are not
//! edges, nor are paths in items compiled only for tests (`#[cfg(test)]`). The circles reported
//! are the strongly connected components of more than one file once the edges from a child
//! module to one of its ancestors are left out, since a parent and the children it declares may
//! refer to each other by design; the count with them is given too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// cuda-core's floor plan, from the workspace root: its tables `family` ([`family`]) and
/// `circles` ([`circle_limits`]) are what `--check` holds the crate to.
pub const PLAN: &str = "docs/architecture-notes.md";

/// Objects and their parents (what makes each, or what each holds): an edge from an object to
/// one of its ancestors is a child holding its parent (a stream its context), an edge to one
/// of its descendants a factory (a device making streams). A name covers its child modules
/// (`memory` is every resource file), the longest name winning.
pub type Family = Vec<(String, Vec<String>)>;

/// The largest size (in files) of each module circle, named by one file it holds.
pub type CircleLimits = Vec<(String, usize)>;

/// Runs the command: prints the report; with `--check`, prints the circles' sizes and fails
/// where a circle is left once factories and children holding their parents are left out, or
/// (for cuda-core) where a module circle passes the size [`PLAN`] gives it.
pub fn run(args: &[String], root: &Path) -> Result<(), String> {
    let check = args.iter().any(|a| a == "--check");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--check").collect();
    match args.as_slice() {
        [] => run_cuda_core(root, check),
        [flag, dir] if *flag == "--crate" => {
            let graph = Graph::of(&PathBuf::from(dir).join("src"))?;
            print!("{}", graph.report());
            let left = graph.circles().len();
            if check && left > 0 {
                return Err(format!("{left} circle(s)"));
            }
            Ok(())
        }
        _ => Err(format!("unexpected arguments {args:?}")),
    }
}

/// cuda-core's graph held to the plan: the full report, or with `check` the counts and any
/// circle the family leaves; then the module circles' sizes.
fn run_cuda_core(root: &Path, check: bool) -> Result<(), String> {
    let plan_path = root.join(PLAN);
    let plan = std::fs::read_to_string(&plan_path).map_err(|e| {
        format!(
            "{}: {e} (the floor plan import-graph reads)",
            plan_path.display()
        )
    })?;
    let in_plan = |e: String| format!("{PLAN}: {e}");
    let family = family(&plan).map_err(in_plan)?;
    let limits = circle_limits(&plan).map_err(in_plan)?;
    let mut graph = Graph::of(&root.join("cuda-core/src"))?;
    graph.family = family;
    graph.names_modules(&limits).map_err(in_plan)?;
    let sizes = graph.sizes(&limits);
    let objects = graph.components(Edges::Objects);
    if check {
        print!("{}", graph.summary());
        print!("{}", graph.object_circles(&objects));
    } else {
        println!("{}", graph.report());
    }
    print!("{}", sizes.lines);
    let mut failures = sizes.failures;
    if !objects.is_empty() {
        failures.insert(
            0,
            format!(
                "{} circle(s) besides factories and children holding their parents (above): \
                 move what closes each to the lower file, or, for a new object that makes or \
                 holds another, add it to the family table of {PLAN}",
                objects.len()
            ),
        );
    }
    if check && !failures.is_empty() {
        return Err(failures.join("\n"));
    }
    Ok(())
}

/// The family of objects: the `family` table of the plan, whose first two columns are an
/// object's module (`` `stream` ``) and its parents' (`` `device`, `context` ``).
pub fn family(plan: &str) -> Result<Family, String> {
    let mut out: Family = Vec::new();
    for (line, cells) in table(plan, "family", 2)? {
        let object = module_cell(line, &cells[0])?;
        let parents = cells[1]
            .split(',')
            .map(|parent| module_cell(line, parent.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        if out.iter().any(|(name, _)| *name == object) {
            return Err(format!("line {line}: `{object}` has a second row"));
        }
        out.push((object, parents));
    }
    Ok(out)
}

/// The module circles' largest sizes: the `circles` table of the plan, two columns: a file of
/// the circle (`` `stream` ``) and the most files the circle may have.
pub fn circle_limits(plan: &str) -> Result<CircleLimits, String> {
    let mut out: CircleLimits = Vec::new();
    for (line, cells) in table(plan, "circles", 2)? {
        let module = module_cell(line, &cells[0])?;
        let most = cells[1]
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 2)
            .ok_or_else(|| {
                format!(
                    "line {line}: `{}` is not a number of files (2 or more: a circle has two)",
                    cells[1]
                )
            })?;
        if out.iter().any(|(name, _)| *name == module) {
            return Err(format!("line {line}: `{module}` has a second row"));
        }
        out.push((module, most));
    }
    Ok(out)
}

/// The rows of the markdown table between the lines `<!-- import-graph NAME: begin -->` and
/// `<!-- import-graph NAME: end -->`, each with its line number (from 1) and its cells,
/// trimmed, at least `columns` of them (the columns after those are prose); the header and the
/// separator row are left out.
fn table(doc: &str, name: &str, columns: usize) -> Result<Vec<(usize, Vec<String>)>, String> {
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    let find = |marker: String| -> Result<usize, String> {
        let hits: Vec<usize> = (0..lines.len()).filter(|i| lines[*i] == marker).collect();
        match hits.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "no line `{marker}`: the {name} table is read between its `begin` and `end` \
                 comment lines"
            )),
            _ => Err(format!("`{marker}` is there {} times", hits.len())),
        }
    };
    let begin = find(format!("<!-- import-graph {name}: begin -->"))?;
    let end = find(format!("<!-- import-graph {name}: end -->"))?;
    if end < begin {
        return Err(format!(
            "the {name} table ends (line {}) before it begins (line {})",
            end + 1,
            begin + 1
        ));
    }
    let mut rows = Vec::new();
    for (i, text) in lines.iter().enumerate().take(end).skip(begin + 1) {
        if text.is_empty() {
            continue;
        }
        let cells = text
            .strip_prefix('|')
            .and_then(|row| row.strip_suffix('|'))
            .map(|row| {
                row.split('|')
                    .map(|c| c.trim().to_owned())
                    .collect::<Vec<_>>()
            })
            .ok_or_else(|| format!("line {}: not a table row (`| ... |`): {text}", i + 1))?;
        if cells.len() < columns {
            return Err(format!(
                "line {}: {} cell(s) where the {name} table needs {columns}",
                i + 1,
                cells.len()
            ));
        }
        rows.push((i + 1, cells));
    }
    let separator = |cells: &[String]| {
        cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
    };
    match rows.get(1) {
        Some((_, cells)) if separator(cells) => {}
        Some((line, _)) => {
            return Err(format!(
                "line {line}: the {name} table's second row is not `| --- | --- |`"
            ))
        }
        None => {}
    }
    if rows.len() < 3 {
        return Err(format!(
            "the {name} table (lines {}-{}) has no rows under its header",
            begin + 1,
            end + 1
        ));
    }
    Ok(rows.split_off(2))
}

/// A cell naming a module: its path in backquotes (`` `memory::buffer` ``).
fn module_cell(line: usize, cell: &str) -> Result<String, String> {
    let path = cell
        .strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .filter(|path| {
            path.split("::").all(|segment| {
                segment.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
        })
        .ok_or_else(|| {
            format!("line {line}: not a module path in backquotes (`memory::buffer`): {cell}")
        })?;
    Ok(path.to_owned())
}

/// A crate's module circles held to their largest sizes: a line for each, and what fails.
#[derive(Debug, Default)]
pub struct Sizes {
    /// One line per module circle and per limit no circle reaches.
    pub lines: String,
    /// Each circle past its size, or that no limit names.
    pub failures: Vec<String>,
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
    /// The objects' family tree (none outside cuda-core).
    pub family: Family,
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
    fn owner(&self, module: &str) -> Option<&str> {
        self.family
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| module == *name || is_ancestor(name, module))
            .max_by_key(|name| name.len())
    }

    /// The objects `module` descends from in the family (made by, or holding).
    fn object_ancestors(&self, module: &str) -> BTreeSet<&str> {
        let mut out = BTreeSet::new();
        let mut todo: Vec<&str> = self.owner(module).into_iter().collect();
        let mut seen = BTreeSet::new();
        while let Some(entry) = todo.pop() {
            if !seen.insert(entry) {
                continue;
            }
            let parents = self.family.iter().find(|(name, _)| name == entry);
            for parent in parents.map(|(_, p)| p.as_slice()).unwrap_or_default() {
                out.insert(parent.as_str());
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
        let circles = self.circles();
        let objects = self.components(Edges::Objects);
        let mut out = self.summary();
        if !self.family.is_empty() {
            let _ = writeln!(out, "the family (object: its parents):");
            for (object, parents) in &self.family {
                let _ = writeln!(out, "  {object}: {}", parents.join(", "));
            }
        }
        out += &self.object_circles(&objects);
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

    /// The counts: files, edges, circles, and with a family the circles it leaves.
    pub fn summary(&self) -> String {
        let edges: usize = self.edges.values().map(BTreeSet::len).sum();
        let mut out = format!(
            "{} files, {} import edges, {} circle(s) (not counting a child's edges to its \
             ancestors; {} counting them)\n",
            self.modules.len(),
            edges,
            self.circles().len(),
            self.components(Edges::All).len()
        );
        if !self.family.is_empty() {
            let _ = writeln!(
                out,
                "{} circle(s) once factories and children holding their parents are left out \
                 ({} objects in the family)",
                self.components(Edges::Objects).len(),
                self.family.len()
            );
        }
        out
    }

    /// Each circle of `objects` (those left once the family's edges are left out), with the
    /// edges that close it.
    pub fn object_circles(&self, objects: &[Vec<String>]) -> String {
        let mut out = String::new();
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
        out
    }

    /// Fails where the family or `limits` names a module that is no file of the crate (nor a
    /// folder of files, for the family).
    pub fn names_modules(&self, limits: &CircleLimits) -> Result<(), String> {
        let covers = |name: &str| {
            self.modules
                .iter()
                .any(|m| m == name || is_ancestor(name, m))
        };
        for (object, parents) in &self.family {
            for module in std::iter::once(object).chain(parents) {
                if !covers(module) {
                    return Err(format!(
                        "the family names `{module}`, which is no module of the crate"
                    ));
                }
            }
        }
        for (module, _) in limits {
            if !self.modules.contains(module) {
                return Err(format!(
                    "the circles table names `{module}`, which is no file of the crate"
                ));
            }
        }
        Ok(())
    }

    /// The module circles held to `limits`: each must hold exactly one file a limit names, and
    /// have no more files than that limit.
    pub fn sizes(&self, limits: &CircleLimits) -> Sizes {
        let mut sizes = Sizes::default();
        let circles = self.circles();
        let _ = writeln!(
            sizes.lines,
            "module circles (of factories and children holding their parents), largest sizes \
             from {PLAN}:"
        );
        for circle in &circles {
            let named: Vec<&(String, usize)> =
                limits.iter().filter(|(m, _)| circle.contains(m)).collect();
            let files = circle.len();
            match named.as_slice() {
                [(module, most)] => {
                    let _ = write!(
                        sizes.lines,
                        "  {files} files (at most {most}): the circle holding `{module}`"
                    );
                    if files < *most {
                        let _ = write!(
                            sizes.lines,
                            "; lower its limit to {files} in {PLAN} to keep the gain"
                        );
                    }
                    sizes.lines.push('\n');
                    if files > *most {
                        sizes.failures.push(format!(
                            "the module circle holding `{module}` has {files} files, more than \
                             the {most} of {PLAN}: {}. Take out the file that joined it (its \
                             import moves to the lower file), or raise the limit there if the \
                             growth is meant",
                            circle.join(", ")
                        ));
                    }
                }
                [] => {
                    let _ = writeln!(
                        sizes.lines,
                        "  {files} files (no limit): {}",
                        circle.join(", ")
                    );
                    sizes.failures.push(format!(
                        "a module circle of {files} files that {PLAN} does not name: {}. Break \
                         it, or add a row naming one of its files to the circles table there",
                        circle.join(", ")
                    ));
                }
                several => {
                    let names: Vec<String> =
                        several.iter().map(|(m, _)| format!("`{m}`")).collect();
                    let _ = writeln!(
                        sizes.lines,
                        "  {files} files (one circle holding {})",
                        names.join(" and ")
                    );
                    sizes.failures.push(format!(
                        "one module circle of {files} files holds {}, which {PLAN} gives \
                         circles of their own: {}",
                        names.join(" and "),
                        circle.join(", ")
                    ));
                }
            }
        }
        for (module, most) in limits {
            if !circles.iter().any(|c| c.contains(module)) {
                let _ = writeln!(
                    sizes.lines,
                    "  no circle holds `{module}` (at most {most}): its row in {PLAN} can go"
                );
            }
        }
        sizes
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
mod tests;
