//! The scaling part of `cargo xtask bench-report`: the cases named `<family>_n<size>` (the
//! `scaling` suite's), grouped by family into one table of case, size, raw, cuda-core and their
//! ratio, and an SVG plot of each family's raw and cuda-core against the size (log-scale x).
//!
//! The plot is written by hand (a few hundred bytes of SVG per panel): a plotting crate would
//! bring a font stack and dozens of dependencies into the workspace for four lines per panel.

use std::fmt::Write as _;

use crate::report_table::{format_ns, ratio, Row};

/// What a family's value is, from criterion's time per iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    /// The time per iteration, in nanoseconds.
    Time,
    /// The time per iteration over the size: per node, say.
    PerUnit,
    /// Iterations per second: the inverse of the time.
    Rate,
}

/// A family of scaled cases: its name, what its size counts, what its value is, the unit the
/// table gives, and one line on what one iteration does.
pub(crate) struct Family {
    pub(crate) name: &'static str,
    /// What the size counts, for a size of 1 and for others.
    pub(crate) count_one: &'static str,
    pub(crate) counts: &'static str,
    pub(crate) measure: Measure,
    pub(crate) unit: &'static str,
    pub(crate) what: &'static str,
}

/// The `scaling` suite's families, in the order the report lists them; others follow, sorted,
/// as times per iteration.
pub(crate) const FAMILIES: &[Family] = &[
    Family {
        name: "cache_hit_file",
        count_one: "entry",
        counts: "entries",
        measure: Measure::Time,
        unit: "ns per hit",
        what: "a hit in a file program cache of that many 4 KiB entries: cuda-core's \
               `FileStreamProgramCache::get` (entry checked as the user's regular file, header \
               and SHA-256 checked, use marked) against `std::fs::read` of the entry's file by \
               its key's name (no checks: more work for cuda-core by design).",
    },
    Family {
        name: "cache_put_file",
        count_one: "entry",
        counts: "entries",
        measure: Measure::Time,
        unit: "ns per put",
        what: "a put, again, of an entry a file program cache of that many 4 KiB entries \
               holds: cuda-core's `FileStreamProgramCache::put` (a temporary file written and \
               flushed, renamed, the directory flushed, the bound enforced) against the same \
               write, flush, rename and flush by hand (no bound).",
    },
    Family {
        name: "graph_build_empty",
        count_one: "node",
        counts: "nodes",
        measure: Measure::PerUnit,
        unit: "ns per node",
        what: "make a graph, add that many empty nodes, each after the one before, instantiate \
               it and destroy both; the time over the nodes.",
    },
    Family {
        name: "graph_build_kernel",
        count_one: "node",
        counts: "nodes",
        measure: Measure::PerUnit,
        unit: "ns per node",
        what: "the same with kernel nodes of an empty kernel (cuda-core checks each launch and \
               keeps the kernel alive with the graph).",
    },
    Family {
        name: "alloc_free_live",
        count_one: "live buffer",
        counts: "live buffers",
        measure: Measure::Time,
        unit: "ns per alloc+free",
        what: "allocate and free one more 1 KiB buffer, stream-ordered, while that many are \
               live, the same driver work in both (cuda-core's pool wrapped with `from_raw`, \
               which keeps no small buffers).",
    },
    Family {
        name: "alloc_churn_live",
        count_one: "live buffer",
        counts: "live buffers",
        measure: Measure::Time,
        unit: "ns per alloc+free",
        what: "the same through the default resource, whose stream keeps the freed buffer for \
               the next allocation (faster than raw by design).",
    },
    Family {
        name: "launch_threads",
        count_one: "thread",
        counts: "threads",
        measure: Measure::Rate,
        unit: "launches/s",
        what: "that many threads launching an empty kernel at once, each on its own stream: \
               the launches of all of them per second of wall clock.",
    },
    Family {
        name: "event_churn_threads",
        count_one: "thread",
        counts: "threads",
        measure: Measure::Time,
        unit: "ns per event",
        what: "that many threads creating and dropping events at once: wall-clock time per \
               event of all of them (cuda-core recycles; faster than raw by design).",
    },
    Family {
        name: "stream_churn_threads",
        count_one: "thread",
        counts: "threads",
        measure: Measure::Time,
        unit: "ns per stream",
        what: "that many threads creating and dropping non-blocking streams at once: \
               wall-clock time per stream of all of them (cuda-core recycles; faster than raw \
               by design).",
    },
];

/// The family of any other scaled case.
const OTHER: Family = Family {
    name: "",
    count_one: "",
    counts: "",
    measure: Measure::Time,
    unit: "ns",
    what: "",
};

/// The family and size of a scaled case's name, `<family>_n<size>`; `None` for other cases.
pub(crate) fn split(case: &str) -> Option<(&str, u64)> {
    let (family, size) = case.rsplit_once("_n")?;
    if family.is_empty() || size.is_empty() || !size.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((family, size.parse().ok()?))
}

/// Column indices of the variants in a [`Row`].
const RAW: usize = 0;
const CORE: usize = 1;

/// One family's measured sizes, smallest first.
pub(crate) struct Series<'r> {
    pub(crate) family: &'r Family,
    /// The family's name (that of [`OTHER`] families is their own).
    pub(crate) name: &'r str,
    pub(crate) points: Vec<(u64, &'r Row)>,
}

/// The scaled rows of `rows`, grouped into families in report order.
pub(crate) fn series(rows: &[Row]) -> Vec<Series<'_>> {
    let mut out: Vec<Series<'_>> = Vec::new();
    for row in rows {
        let Some((name, size)) = split(&row.case) else {
            continue;
        };
        match out.iter_mut().find(|s| s.name == name) {
            Some(series) => series.points.push((size, row)),
            None => out.push(Series {
                family: FAMILIES.iter().find(|f| f.name == name).unwrap_or(&OTHER),
                name,
                points: vec![(size, row)],
            }),
        }
    }
    for series in &mut out {
        series.points.sort_by_key(|&(size, _)| size);
    }
    out.sort_by_key(|s| {
        let known = FAMILIES.iter().position(|f| f.name == s.name);
        (known.unwrap_or(FAMILIES.len()), s.name.to_owned())
    });
    out
}

impl Series<'_> {
    /// A variant's value at a size, from its time (the median of its rounds).
    fn value(&self, size: u64, row: &Row, variant: usize) -> Option<f64> {
        convert(self.family.measure, size, row.median(variant)?)
    }

    /// The smallest and largest value of a variant's rounds at a size, for the plot's whiskers.
    fn spread(&self, size: u64, row: &Row, variant: usize) -> Option<(f64, f64)> {
        let values: Vec<f64> = row.runs[variant]
            .iter()
            .filter_map(|&ns| convert(self.family.measure, size, ns))
            .collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo <= hi).then_some((lo, hi))
    }
}

/// A time per iteration (ns) as the family's value.
fn convert(measure: Measure, size: u64, ns: f64) -> Option<f64> {
    match measure {
        Measure::Time => Some(ns),
        Measure::PerUnit => (size > 0).then(|| ns / size as f64),
        Measure::Rate => (ns > 0.0).then(|| 1e9 / ns),
    }
}

/// A value in the table: nanoseconds as the main table gives them, a rate whole with its
/// thousands separated.
fn format_value(measure: Measure, value: f64) -> String {
    match measure {
        Measure::Time | Measure::PerUnit => format_ns(value),
        Measure::Rate => format_count(value.round() as u64),
    }
}

/// The markdown of the scaling table, with a line per family on what it measures; empty where
/// no case is scaled.
pub(crate) fn render(rows: &[Row]) -> String {
    let all = series(rows);
    if all.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    out.push_str(
        "| case | size | unit | raw | cuda-core | cuda-core/raw | by round | growth raw / \
         cuda-core |\n",
    );
    out.push_str("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for s in &all {
        let first = s
            .points
            .first()
            .map(|&(size, row)| (s.value(size, row, RAW), s.value(size, row, CORE)));
        for &(size, row) in &s.points {
            let cell = |variant| {
                s.value(size, row, variant)
                    .map_or_else(|| "n/a".to_owned(), |v| format_value(s.family.measure, v))
            };
            let core_raw = row.ratio(CORE, RAW);
            let by_round = match core_raw {
                Some(r) if r.rounds > 1 => format!("{:.2}-{:.2} ({})", r.min, r.max, r.rounds),
                Some(_) => "one run".to_owned(),
                None => "n/a".to_owned(),
            };
            let growth =
                |variant: usize, base: Option<f64>| match (s.value(size, row, variant), base) {
                    (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
                    _ => "n/a".to_owned(),
                };
            let (raw0, core0) = first.unwrap_or((None, None));
            let counts = match (size, s.family.counts) {
                (_, "") => String::new(),
                (1, _) => format!(" {}", s.family.count_one),
                (_, many) => format!(" {many}"),
            };
            let _ = writeln!(
                out,
                "| {} | {}{counts} | {} | {} | {} | {} | {by_round} | {} / {} |",
                s.name,
                format_count(size),
                s.family.unit,
                cell(RAW),
                cell(CORE),
                ratio(core_raw),
                growth(RAW, raw0),
                growth(CORE, core0),
            );
        }
    }
    out.push('\n');
    for s in all.iter().filter(|s| !s.family.what.is_empty()) {
        let _ = writeln!(out, "- `{}`: {}", s.name, s.family.what);
    }
    out.push_str(
        "- `cuda-core/raw` is the ratio of the times (above 1.00 cuda-core is slower, also \
         where the unit is a rate), the median of the rounds' ratios; `growth` is the value \
         at a size over the value at the family's smallest size (1.00 throughout: flat).\n",
    );
    out
}

/// A whole number with its thousands separated: `100,000`.
fn format_count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        // Whole, with its thousands separated, from 1000 up.
        format_ns(n as f64)
    }
}

/// Panel layout of the plot, in SVG user units.
const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 270.0;
const COLUMNS: usize = 2;
/// Margins inside a panel: left (the y labels), right, top (the title), bottom (the x labels).
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 45.0;
/// The legend's band above the panels.
const LEGEND_H: f64 = 30.0;
/// Colours and dashes of the variants: raw grey and dashed, cuda-core blue and solid.
const STYLES: [(&str, &str, &str); 2] =
    [("raw", "#7f7f7f", "6 4"), ("cuda-core", "#1f5fbf", "none")];

/// An SVG plot of every family, a panel each: raw and cuda-core against the size, the size on
/// a log scale (ticks at the sizes measured), the value on a linear scale from 0 (so that a
/// flat line reads as flat), whiskers from the smallest to the largest round. `None` where no
/// case is scaled.
pub(crate) fn plot(rows: &[Row], title: &str) -> Option<String> {
    let all = series(rows);
    if all.is_empty() {
        return None;
    }
    let panel_rows = all.len().div_ceil(COLUMNS);
    let columns = all.len().min(COLUMNS);
    let width = PANEL_W * columns as f64;
    let height = LEGEND_H + PANEL_H * panel_rows as f64;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        svg,
        r#"<title>{}</title><rect width="100%" height="100%" fill="white"/>"#,
        escape(title)
    );
    for (i, (name, colour, dash)) in STYLES.iter().enumerate() {
        let x = 20.0 + 130.0 * i as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{x}" y1="15" x2="{}" y2="15" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/><circle cx="{}" cy="15" r="3" fill="{colour}"/><text x="{}" y="19">{name}</text>"#,
            x + 30.0,
            x + 15.0,
            x + 38.0
        );
    }
    for (k, s) in all.iter().enumerate() {
        let x0 = PANEL_W * (k % COLUMNS) as f64;
        let y0 = LEGEND_H + PANEL_H * (k / COLUMNS) as f64;
        panel(&mut svg, s, x0, y0);
    }
    svg.push_str("</svg>\n");
    Some(svg)
}

/// One family's panel, its top left corner at `(x0, y0)`.
fn panel(svg: &mut String, s: &Series<'_>, x0: f64, y0: f64) {
    let (left, right) = (x0 + LEFT, x0 + PANEL_W - RIGHT);
    let (top, bottom) = (y0 + TOP, y0 + PANEL_H - BOTTOM);
    let sizes: Vec<u64> = s.points.iter().map(|&(size, _)| size).collect();
    let logs: Vec<f64> = sizes.iter().map(|&n| (n.max(1) as f64).log10()).collect();
    let (lo, hi) = logs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    // A margin of a tenth of the range (half a decade for one size) each side.
    let pad = if hi > lo { (hi - lo) * 0.1 } else { 0.5 };
    let (lo, hi) = (lo - pad, hi + pad);
    let x_of = |n: u64| left + ((n.max(1) as f64).log10() - lo) / (hi - lo) * (right - left);
    let mut top_value: f64 = 0.0;
    for &(size, row) in &s.points {
        for variant in [RAW, CORE] {
            if let Some((_, high)) = s.spread(size, row, variant) {
                top_value = top_value.max(high);
            }
        }
    }
    let (step, scale, unit) = y_ticks(s.family.measure, top_value, s.family.unit);
    let y_max = (top_value / step).ceil().max(1.0) * step;
    let y_of = |v: f64| bottom - v / y_max * (bottom - top);
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{}</text><text x="{}" y="{}" fill="#444">{}</text>"##,
        x0 + 10.0,
        y0 + 18.0,
        escape(s.name),
        x0 + 10.0,
        y0 + 32.0,
        escape(&unit)
    );
    // Axes, gridlines and ticks.
    let mut v = 0.0;
    while v <= y_max * (1.0 + 1e-9) {
        let y = y_of(v);
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 6.0,
            y + 4.0,
            tick_label(v / scale)
        );
        v += step;
    }
    for &n in &sizes {
        let x = x_of(n);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#e4e4e4"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 16.0,
            format_count(n)
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/><text x="{}" y="{}" text-anchor="middle" fill="#444">{} (log scale)</text>"##,
        (left + right) / 2.0,
        bottom + 34.0,
        escape(if s.family.counts.is_empty() {
            "size"
        } else {
            s.family.counts
        })
    );
    // The variants: a line through the medians, a dot and a whisker at each size.
    for (variant, (_, colour, dash)) in [RAW, CORE].into_iter().zip(STYLES) {
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|&(size, row)| Some((x_of(size), y_of(s.value(size, row, variant)?))))
            .collect();
        if points.len() > 1 {
            let path: Vec<String> = points
                .iter()
                .map(|(x, y)| format!("{x:.1},{y:.1}"))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
                path.join(" ")
            );
        }
        for &(size, row) in &s.points {
            let Some(value) = s.value(size, row, variant) else {
                continue;
            };
            let x = x_of(size);
            if let Some((low, high)) = s.spread(size, row, variant).filter(|(l, h)| h > l) {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{colour}"/>"#,
                    y_of(low),
                    y_of(high)
                );
            }
            let _ = writeln!(
                svg,
                r#"<circle cx="{x:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>{} at {}: {}</title></circle>"#,
                y_of(value),
                STYLES[variant].0,
                format_count(size),
                format_value(s.family.measure, value)
            );
        }
    }
}

/// The y axis: a step of 1, 2 or 5 times a power of ten giving four to eight ticks up to
/// `top`, the factor its labels are divided by, and the unit those labels are in.
fn y_ticks(measure: Measure, top: f64, unit: &str) -> (f64, f64, String) {
    let top = if top > 0.0 { top } else { 1.0 };
    let raw_step = top / 5.0;
    let power = 10f64.powf(raw_step.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&s| s >= raw_step)
        .unwrap_or(10.0 * power);
    let (scale, prefix) = match measure {
        Measure::Rate if top >= 1e6 => (1e6, "millions of "),
        Measure::Rate if top >= 1e3 => (1e3, "thousands of "),
        Measure::Rate => (1.0, ""),
        _ if top >= 1e6 => (1e6, "ms"),
        _ if top >= 1e3 => (1e3, "µs"),
        _ => (1.0, "ns"),
    };
    let unit = match measure {
        Measure::Rate => format!("{prefix}{unit}"),
        _ => unit.replacen("ns", prefix, 1),
    };
    (step, scale, unit)
}

/// A tick's number: no decimals where it is whole, else as few as show it.
fn tick_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round())
    } else if (v * 10.0 - (v * 10.0).round()).abs() < 1e-9 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Text escaped for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str, raw: &[f64], core: &[f64]) -> Row {
        Row {
            case: case.to_owned(),
            runs: [raw.to_vec(), core.to_vec(), vec![]],
        }
    }

    #[test]
    fn scaled_names_split_into_family_and_size() {
        assert_eq!(
            split("cache_hit_file_n10000"),
            Some(("cache_hit_file", 10_000))
        );
        assert_eq!(split("launch_threads_n1"), Some(("launch_threads", 1)));
        // The overhead suite's names are not scaled ones.
        for case in [
            "launch_0",
            "graph_chain_100",
            "alloc_free_1k",
            "x_n",
            "_n10",
            "a_n1x",
        ] {
            assert_eq!(split(case), None, "{case}");
        }
    }

    #[test]
    fn families_are_grouped_in_order_with_their_sizes_sorted() {
        let rows = [
            row("launch_threads_n64", &[100.0], &[110.0]),
            row("cache_hit_file_n1000", &[5000.0], &[9000.0]),
            row("zz_other_n5", &[1.0], &[1.0]),
            row("cache_hit_file_n10", &[4000.0], &[8000.0]),
            row("launch_threads_n8", &[200.0], &[210.0]),
            row("launch_0", &[3000.0], &[3100.0]),
        ];
        let all = series(&rows);
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        assert_eq!(names, ["cache_hit_file", "launch_threads", "zz_other"]);
        let sizes: Vec<u64> = all[0].points.iter().map(|p| p.0).collect();
        assert_eq!(sizes, [10, 1000]);
        assert_eq!(all[2].family.unit, "ns");
    }

    #[test]
    fn the_table_gives_values_in_each_familys_unit_and_growth() {
        let rows = [
            row("graph_build_empty_n10", &[20_000.0], &[25_000.0]),
            row("graph_build_empty_n1000", &[2_000_000.0], &[2_600_000.0]),
            // Rounds: 2 ns per launch raw, 2.5 ns (0.4e9/s) for cuda-core.
            row("launch_threads_n1", &[500.0, 500.0], &[520.0, 540.0]),
            row("launch_threads_n64", &[250.0, 250.0], &[260.0, 300.0]),
        ];
        let table = render(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| case | size | unit | raw | cuda-core | cuda-core/raw | by round | growth raw / \
             cuda-core |"
        );
        // Per node: 2,000 and 2,500 ns, then 2,000 and 2,600.
        assert_eq!(
            lines[2],
            "| graph_build_empty | 10 nodes | ns per node | 2,000 | 2,500 | 1.25 | one run | \
             1.00 / 1.00 |"
        );
        assert_eq!(
            lines[3],
            "| graph_build_empty | 1,000 nodes | ns per node | 2,000 | 2,600 | 1.30 | one run | \
             1.00 / 1.04 |"
        );
        // A rate: 1e9 / 500 ns = 2,000,000 launches/s; cuda-core's median time is 530 ns.
        assert_eq!(
            lines[4],
            "| launch_threads | 1 thread | launches/s | 2,000,000 | 1,886,792 | 1.06 | \
             1.04-1.08 (2) | 1.00 / 1.00 |"
        );
        assert_eq!(
            lines[5],
            "| launch_threads | 64 threads | launches/s | 4,000,000 | 3,571,429 | 1.12 | \
             1.04-1.20 (2) | 2.00 / 1.89 |"
        );
        assert!(table.contains("- `launch_threads`: that many threads launching"));
        assert!(table.contains("- `cuda-core/raw` is the ratio of the times"));
        assert_eq!(render(&[row("launch_0", &[1.0], &[1.0])]), "");
    }

    #[test]
    fn a_missing_variant_is_not_available() {
        let table = render(&[row("cache_hit_file_n10", &[], &[8000.0])]);
        assert!(
            table.contains("| cache_hit_file | 10 entries | ns per hit | n/a | 8,000 | n/a | n/a | n/a / 1.00 |"),
            "{table}"
        );
    }

    #[test]
    fn the_plot_has_a_panel_per_family_a_line_per_variant_and_a_dot_per_point() {
        let rows = [
            row("cache_hit_file_n10", &[4000.0, 4100.0], &[8000.0, 8200.0]),
            row("cache_hit_file_n1000", &[5000.0, 5200.0], &[9000.0, 9100.0]),
            row(
                "cache_hit_file_n10000",
                &[6000.0, 6100.0],
                &[9500.0, 9900.0],
            ),
            row("launch_threads_n1", &[500.0], &[520.0]),
            row("launch_threads_n8", &[300.0], &[310.0]),
        ];
        let svg = plot(&rows, "scaling <test>").unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<title>scaling &lt;test&gt;</title>"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        // Two legend dots, and a dot per variant per size.
        assert_eq!(svg.matches("<circle").count(), 2 + 2 * 5);
        assert!(svg.contains(">cache_hit_file</text>"));
        assert!(svg.contains(">µs per hit</text>"), "{svg}");
        assert!(svg.contains(">millions of launches/s</text>"), "{svg}");
        assert!(svg.contains(">10,000</text>"));
        assert!(
            svg.contains("<title>cuda-core at 1,000: 9,050</title>"),
            "{svg}"
        );
        // Whiskers where the rounds differ: the cache's six points.
        assert!(svg.matches("<line x1=").count() > 6);
        assert_eq!(plot(&[row("launch_0", &[1.0], &[1.0])], "t"), None);
    }

    #[test]
    fn the_y_axis_has_round_steps_and_a_readable_unit() {
        assert_eq!(
            y_ticks(Measure::Time, 9_900.0, "ns per hit"),
            (2000.0, 1e3, "µs per hit".to_owned())
        );
        assert_eq!(
            y_ticks(Measure::Time, 420.0, "ns per node"),
            (100.0, 1.0, "ns per node".to_owned())
        );
        assert_eq!(
            y_ticks(Measure::Rate, 3_500_000.0, "launches/s"),
            (1_000_000.0, 1e6, "millions of launches/s".to_owned())
        );
        assert_eq!(tick_label(2.0), "2");
        assert_eq!(tick_label(0.5), "0.5");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(format_count(100_000), "100,000");
        assert_eq!(format_count(64), "64");
        assert_eq!(format_value(Measure::Rate, 812.6), "813");
        assert_eq!(format_value(Measure::Rate, 2_000_000.4), "2,000,000");
    }
}
