//! The import graph's tests: the plan's tables, the graph and its circles.

use super::*;

fn graph(files: &[(&str, &str)]) -> Graph {
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
        .collect();
    Graph::from_sources(&sources).unwrap()
}

fn family_of(rows: &[(&str, &[&str])]) -> Family {
    rows.iter()
        .map(|(object, parents)| {
            let parents = parents.iter().map(|p| (*p).to_owned()).collect();
            ((*object).to_owned(), parents)
        })
        .collect()
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
    g.family = family_of(&[("stream", &["device"]), ("memory", &["device"])]);
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
    g.family = family_of(&[("stream", &["device"]), ("memory", &["device", "stream"])]);
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

/// A plan with the two tables, as the document writes them.
const PLAN_TEXT: &str = "\
# Plan

Prose, and a table that is not read:

| object | parents |
| --- | --- |
| `nothing` | `here` |

<!-- import-graph family: begin -->
| object | its parents |
| --- | --- |
| `stream` | `device` |
| `memory::buffer` | `memory`, `stream` |
<!-- import-graph family: end -->

<!-- import-graph circles: begin -->
| the module circle holding | at most (files) |
| :--- | ---: |
| `stream` | 3 |
<!-- import-graph circles: end -->
";

#[test]
fn the_plan_gives_the_family_and_the_circle_limits() {
    assert_eq!(
        family(PLAN_TEXT).unwrap(),
        family_of(&[
            ("stream", &["device"]),
            ("memory::buffer", &["memory", "stream"])
        ])
    );
    assert_eq!(
        circle_limits(PLAN_TEXT).unwrap(),
        vec![("stream".to_owned(), 3)]
    );
}

#[test]
fn a_missing_or_ill_formed_table_is_an_error_naming_the_line() {
    let error = |plan: &str| family(plan).unwrap_err();
    let without = PLAN_TEXT.replace("<!-- import-graph family: begin -->\n", "");
    assert!(
        error(&without).contains("no line `<!-- import-graph family: begin -->`"),
        "{}",
        error(&without)
    );
    assert!(error("no tables at all").contains("the family table is read between"));
    let swapped = PLAN_TEXT
        .replace("family: begin", "family: BEGIN")
        .replace("family: end", "family: begin")
        .replace("family: BEGIN", "family: end");
    assert!(
        error(&swapped).contains("ends (line 9) before it begins (line 14)"),
        "{}",
        error(&swapped)
    );
    let cases = [
        (
            "| `memory::buffer` | `memory`, `stream` |",
            "| `memory::buffer` |",
            "line 13: 1 cell(s) where the family table needs 2",
        ),
        (
            "| `stream` | `device` |",
            "stream | device",
            "line 12: not a table row",
        ),
        (
            "| `stream` | `device` |",
            "| stream | `device` |",
            "line 12: not a module path in backquotes (`memory::buffer`): stream",
        ),
        (
            "| `stream` | `device` |",
            "| `stream` | `device` `context` |",
            "backquotes (`memory::buffer`): `device` `context`",
        ),
        (
            "| `stream` | `device` |",
            "| `memory::buffer` | `device` |",
            "line 13: `memory::buffer` has a second row",
        ),
        (
            "| --- | --- |\n| `stream`",
            "| `stream`",
            "line 11: the family table's second row is not",
        ),
    ];
    for (from, to, expected) in cases {
        let plan = PLAN_TEXT.replacen(from, to, 1);
        assert_ne!(plan, PLAN_TEXT, "{from}");
        assert!(
            error(&plan).contains(expected),
            "{expected}: {}",
            error(&plan)
        );
    }
    let empty = PLAN_TEXT
        .replace("| `stream` | `device` |\n", "")
        .replace("| `memory::buffer` | `memory`, `stream` |\n", "");
    assert!(
        error(&empty).contains("the family table (lines 9-12) has no rows"),
        "{}",
        error(&empty)
    );
    let not_a_size = PLAN_TEXT.replace("| `stream` | 3 |", "| `stream` | 1 |");
    assert!(
        circle_limits(&not_a_size)
            .unwrap_err()
            .contains("`1` is not a number of files"),
        "{:?}",
        circle_limits(&not_a_size)
    );
}

#[test]
fn the_repository_plan_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let plan = std::fs::read_to_string(root.join(PLAN)).unwrap();
    let family = family(&plan).unwrap();
    assert!(
        family.iter().any(|(object, _)| object == "stream"),
        "{family:?}"
    );
    assert!(!circle_limits(&plan).unwrap().is_empty());
}

#[test]
fn a_module_circle_past_its_size_or_unnamed_fails() {
    let mut g = graph(&[
        ("a", "fn f(_: crate::b::B) {}"),
        ("b", "pub struct B; fn g(_: crate::c::C) {}"),
        ("c", "pub struct C; fn h(_: crate::a::A) {}"),
        ("x", "pub struct X; fn f(_: crate::y::Y) {}"),
        ("y", "pub struct Y; fn g(_: crate::x::X) {}"),
    ]);
    g.family = family_of(&[("b", &["a"]), ("c", &["b"]), ("a", &["c"]), ("x", &["y"])]);
    let limits = |rows: &[(&str, usize)]| -> CircleLimits {
        rows.iter().map(|(m, n)| ((*m).to_owned(), *n)).collect()
    };
    let sizes = g.sizes(&limits(&[("b", 3), ("x", 2)]));
    assert!(sizes.failures.is_empty(), "{:?}", sizes.failures);
    assert!(
        sizes
            .lines
            .contains("  3 files (at most 3): the circle holding `b`\n"),
        "{}",
        sizes.lines
    );
    let sizes = g.sizes(&limits(&[("b", 4), ("x", 2)]));
    assert!(
        sizes.lines.contains("lower its limit to 3"),
        "{}",
        sizes.lines
    );
    let sizes = g.sizes(&limits(&[("a", 2), ("y", 2)]));
    assert_eq!(sizes.failures.len(), 1, "{:?}", sizes.failures);
    assert!(
        sizes.failures[0].contains("holding `a` has 3 files, more than the 2"),
        "{}",
        sizes.failures[0]
    );
    let sizes = g.sizes(&limits(&[("a", 3), ("c", 3), ("z", 2)]));
    assert_eq!(sizes.failures.len(), 2, "{:?}", sizes.failures);
    assert!(
        sizes.failures[0].contains("holds `a` and `c`"),
        "{}",
        sizes.failures[0]
    );
    assert!(
        sizes.failures[1].contains("a module circle of 2 files that"),
        "{}",
        sizes.failures[1]
    );
    assert!(
        sizes.lines.contains("no circle holds `z`"),
        "{}",
        sizes.lines
    );
    assert!(g.names_modules(&limits(&[("a", 3)])).is_ok());
    assert!(g
        .names_modules(&limits(&[("z", 3)]))
        .unwrap_err()
        .contains("`z`, which is no file"));
    g.family.push(("w".to_owned(), vec!["a".to_owned()]));
    assert!(g
        .names_modules(&limits(&[]))
        .unwrap_err()
        .contains("names `w`"));
}
