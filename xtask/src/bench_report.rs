//! `cargo xtask bench-report [--criterion DIR] [--out FILE]`: one markdown table of the
//! overhead suites' results.
//!
//! It reads criterion's estimates, `<DIR>/<case>/<variant>/new/estimates.json`, for the
//! variants `raw`, `cuda-core` and `cudarc` of each case, takes the median's point estimate (in
//! nanoseconds), and prints and writes a table of case, the three medians, cuda-core/raw and
//! cudarc/cuda-core. A variant not measured shows as `n/a`, with a footnote saying why.
//!
//! `DIR` defaults to `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the
//! workspace's `target/criterion`; `FILE` to `bench-report.md` in that target directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The variants of a case, in column order.
const VARIANTS: [&str; 3] = ["raw", "cuda-core", "cudarc"];

/// The suites' cases, in the order the report lists them; other cases follow, sorted.
const CASES: &[&str] = &[
    "device_current",
    "device_by_ordinal",
    "set_current",
    "stream_create_destroy",
    "event_create_destroy",
    "event_record",
    "event_query",
    "stream_sync_idle",
    "launch_0",
    "launch_4",
    "launch_16",
    "launch_cluster",
    "alloc_free_1k",
    "copy_htod_4k",
    "copy_dtoh_4k",
    "compile_saxpy",
    "cache_hit_memory",
    "cache_hit_file",
    "first_launch",
];

/// Why a variant has no equivalent: `(case, variant, reason)`.
const NO_EQUIVALENT: &[(&str, &str, &str)] = &[
    (
        "device_current",
        "cudarc",
        "cudarc has no device type and no current-device query.",
    ),
    (
        "device_by_ordinal",
        "cudarc",
        "cudarc has no device handle; its nearest, `CudaContext::new`, also retains the primary \
         context.",
    ),
    (
        "launch_cluster",
        "cudarc",
        "cudarc's launch builder has no `cuLaunchKernelEx`, so no thread-block clusters.",
    ),
    (
        "compile_saxpy",
        "cudarc",
        "cudarc's NVRTC API returns PTX only (no cubin); loading it adds a driver JIT compile, \
         which is other work.",
    ),
    (
        "cache_hit_memory",
        "raw",
        "No program cache outside cuda-core.",
    ),
    (
        "cache_hit_memory",
        "cudarc",
        "No program cache outside cuda-core.",
    ),
    (
        "cache_hit_file",
        "raw",
        "No program cache outside cuda-core.",
    ),
    (
        "cache_hit_file",
        "cudarc",
        "No program cache outside cuda-core.",
    ),
];

/// The footnote of a variant missing for a reason not listed above.
const NOT_MEASURED: &str = "Not measured in this run: the bench printed why (no equivalent, a \
                            device without the feature, or a failed child run).";

/// Notes printed under every table.
const NOTES: &[&str] = &[
    "Times are criterion's median point estimates in nanoseconds, per operation. Launches, \
     `event_record` and `alloc_free_1k` queue 256 operations per timed batch and synchronise the \
     stream between batches, outside the timed part. `first_launch` is a whole child process, \
     spawn to exit.",
    "`raw` is the sys crate's driver table called directly (the limit); cudarc 0.19 runs with its \
     defaults, so event tracking is on: each buffer argument, allocation and copy also records \
     or waits on events.",
    "`set_current`/cudarc is `CudaContext::bind_to_thread`, which reads the current context and \
     skips `cuCtxSetCurrent` when it already is current (as in the bench).",
];

/// The medians of one case, in nanoseconds, by variant (`None`: not measured).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) case: String,
    pub(crate) medians: [Option<f64>; 3],
}

/// Runs the command with its arguments (after `bench-report`).
pub(crate) fn run(args: &[String], workspace: &Path) -> Result<(), String> {
    let (criterion, out) = parse_args(args)?;
    let target = target_dir(workspace);
    let criterion = criterion.unwrap_or_else(|| default_criterion_dir(&target));
    let out = out.unwrap_or_else(|| target.join("bench-report.md"));
    let report = render(&collect(&criterion)?);
    print!("{report}");
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    std::fs::write(&out, &report).map_err(|e| format!("writing {}: {e}", out.display()))?;
    eprintln!("bench-report: wrote {}", out.display());
    Ok(())
}

/// `--criterion DIR` and `--out FILE`, each optional, in any order.
pub(crate) fn parse_args(args: &[String]) -> Result<(Option<PathBuf>, Option<PathBuf>), String> {
    let (mut criterion, mut out) = (None, None);
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let slot = match flag.as_str() {
            "--criterion" => &mut criterion,
            "--out" => &mut out,
            other => return Err(format!("bench-report: unexpected argument {other:?}")),
        };
        let value = rest
            .next()
            .ok_or_else(|| format!("bench-report: {flag} needs a value"))?;
        *slot = Some(PathBuf::from(value));
    }
    Ok((criterion, out))
}

/// The target directory: `$CARGO_TARGET_DIR`, else the workspace's `target`.
fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .filter(|v| !v.is_empty())
        .map(|dir| workspace.join(dir))
        .unwrap_or_else(|| workspace.join("target"))
}

/// Where criterion writes: `$CRITERION_HOME`, else `<target>/criterion`.
fn default_criterion_dir(target: &Path) -> PathBuf {
    std::env::var_os("CRITERION_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("criterion"))
}

/// Every case under `dir` that has at least one variant's estimates, in report order.
pub(crate) fn collect(dir: &Path) -> Result<Vec<Row>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut rows = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", dir.display()))?;
        if !entry.path().is_dir() {
            continue;
        }
        let case = entry.file_name().to_string_lossy().into_owned();
        let mut medians = [None; 3];
        for (slot, variant) in medians.iter_mut().zip(VARIANTS) {
            let file = entry
                .path()
                .join(variant)
                .join("new")
                .join("estimates.json");
            if file.is_file() {
                *slot = Some(median_ns(&file)?);
            }
        }
        if medians.iter().any(Option::is_some) {
            rows.push(Row { case, medians });
        }
    }
    if rows.is_empty() {
        return Err(format!(
            "no criterion results in {} (run the benches first: cargo bench -p benches)",
            dir.display()
        ));
    }
    rows.sort_by_key(|row| {
        let known = CASES.iter().position(|c| *c == row.case);
        (known.unwrap_or(CASES.len()), row.case.clone())
    });
    Ok(rows)
}

/// The median's point estimate in an `estimates.json`.
fn median_ns(file: &Path) -> Result<f64, String> {
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    json["median"]["point_estimate"]
        .as_f64()
        .ok_or_else(|| format!("{} has no median.point_estimate", file.display()))
}

/// The markdown report: the table, its footnotes, the notes.
pub(crate) fn render(rows: &[Row]) -> String {
    let mut footnotes: Vec<&str> = Vec::new();
    let mut out = String::new();
    out.push_str(
        "| case | raw (ns) | cuda-core (ns) | cudarc (ns) | cuda-core/raw | cudarc/cuda-core |\n",
    );
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for row in rows {
        let cells: Vec<String> = row
            .medians
            .iter()
            .zip(VARIANTS)
            .map(|(median, variant)| match median {
                Some(ns) => format_ns(*ns),
                None => {
                    let reason = NO_EQUIVALENT
                        .iter()
                        .find(|(c, v, _)| *c == row.case && *v == variant)
                        .map_or(NOT_MEASURED, |(_, _, reason)| reason);
                    let number = match footnotes.iter().position(|f| *f == reason) {
                        Some(i) => i + 1,
                        None => {
                            footnotes.push(reason);
                            footnotes.len()
                        }
                    };
                    format!("n/a[^{number}]")
                }
            })
            .collect();
        let [raw, core, cudarc] = row.medians;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            row.case,
            cells[0],
            cells[1],
            cells[2],
            ratio(core, raw),
            ratio(cudarc, core)
        );
    }
    out.push('\n');
    for (i, footnote) in footnotes.iter().enumerate() {
        let _ = writeln!(out, "[^{}]: {footnote}", i + 1);
    }
    if !footnotes.is_empty() {
        out.push('\n');
    }
    for note in NOTES {
        let _ = writeln!(out, "- {note}");
    }
    out
}

/// `a / b` to two decimals, or `n/a`.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "n/a".to_owned(),
    }
}

/// Nanoseconds: one decimal below 1000, else whole with thousands separated by commas.
fn format_ns(ns: f64) -> String {
    if ns < 1000.0 {
        return format!("{ns:.1}");
    }
    let digits = format!("{:.0}", ns);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a criterion-shaped `estimates.json` with this median.
    fn estimate(dir: &Path, case: &str, variant: &str, median: f64) {
        let new = dir.join(case).join(variant).join("new");
        std::fs::create_dir_all(&new).unwrap();
        let json = format!(
            r#"{{"mean":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":{mean},"standard_error":0.1}},"median":{{"confidence_interval":{{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0}},"point_estimate":{median},"standard_error":0.1}},"median_abs_dev":null,"slope":null,"std_dev":null}}"#,
            mean = median * 1.01
        );
        std::fs::write(new.join("estimates.json"), json).unwrap();
    }

    fn fake_results() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (variant, ns) in [("raw", 2000.0), ("cuda-core", 2060.0), ("cudarc", 3090.0)] {
            estimate(d, "launch_4", variant, ns);
        }
        estimate(d, "device_current", "raw", 21.5);
        estimate(d, "device_current", "cuda-core", 22.25);
        estimate(d, "cache_hit_file", "cuda-core", 45_678.9);
        estimate(d, "zz_extra", "cuda-core", 5.0);
        estimate(d, "first_launch", "raw", 312_456_789.0);
        // Criterion's other output beside the cases is ignored.
        std::fs::create_dir_all(d.join("report")).unwrap();
        std::fs::write(d.join("stray.txt"), "x").unwrap();
        dir
    }

    #[test]
    fn cases_are_read_in_report_order() {
        let dir = fake_results();
        let rows = collect(dir.path()).unwrap();
        let cases: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
        assert_eq!(
            cases,
            [
                "device_current",
                "launch_4",
                "cache_hit_file",
                "first_launch",
                "zz_extra"
            ]
        );
        assert_eq!(rows[1].medians, [Some(2000.0), Some(2060.0), Some(3090.0)]);
        assert_eq!(rows[0].medians, [Some(21.5), Some(22.25), None]);
    }

    #[test]
    fn the_table_has_medians_ratios_and_footnotes() {
        let dir = fake_results();
        let report = render(&collect(dir.path()).unwrap());
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(
            lines[0],
            "| case | raw (ns) | cuda-core (ns) | cudarc (ns) | cuda-core/raw | cudarc/cuda-core |"
        );
        assert_eq!(lines[1], "| --- | ---: | ---: | ---: | ---: | ---: |");
        assert_eq!(
            lines[2],
            "| device_current | 21.5 | 22.2 | n/a[^1] | 1.03 | n/a |"
        );
        assert_eq!(
            lines[3],
            "| launch_4 | 2,000 | 2,060 | 3,090 | 1.03 | 1.50 |"
        );
        // Both missing variants of a cache case share one footnote.
        assert_eq!(
            lines[4],
            "| cache_hit_file | n/a[^2] | 45,679 | n/a[^2] | n/a | n/a |"
        );
        assert_eq!(
            lines[5],
            "| first_launch | 312,456,789 | n/a[^3] | n/a[^3] | n/a | n/a |"
        );
        assert_eq!(
            lines[6],
            "| zz_extra | n/a[^3] | 5.0 | n/a[^3] | n/a | n/a |"
        );
        assert!(
            report.contains("[^1]: cudarc has no device type"),
            "{report}"
        );
        assert!(report.contains("[^2]: No program cache outside cuda-core."));
        assert!(report.contains("[^3]: Not measured in this run"));
        assert!(report.contains("- Times are criterion's median point estimates"));
    }

    #[test]
    fn the_report_is_written_where_asked() {
        let dir = fake_results();
        let out = dir.path().join("out/report.md");
        let args = [
            "--out".to_owned(),
            out.display().to_string(),
            "--criterion".to_owned(),
            dir.path().display().to_string(),
        ];
        run(&args, dir.path()).unwrap();
        let written = std::fs::read_to_string(&out).unwrap();
        assert!(written.starts_with("| case |"));
        assert!(written.contains("| launch_4 |"));
    }

    #[test]
    fn a_broken_estimate_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("launch_0/raw/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(new.join("estimates.json"), "{ not json").unwrap();
        let err = collect(dir.path()).unwrap_err();
        assert!(err.contains("launch_0/raw/new/estimates.json"), "{err}");
        std::fs::write(new.join("estimates.json"), r#"{"mean":{}}"#).unwrap();
        let err = collect(dir.path()).unwrap_err();
        assert!(err.contains("no median.point_estimate"), "{err}");
    }

    #[test]
    fn no_results_is_an_error_saying_what_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let err = collect(dir.path()).unwrap_err();
        assert!(err.contains("run the benches first"), "{err}");
        let err = collect(&dir.path().join("missing")).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }

    #[test]
    fn arguments_are_parsed_in_any_order() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(parse_args(&[]).unwrap(), (None, None));
        assert_eq!(
            parse_args(&args(&["--out", "r.md", "--criterion", "c"])).unwrap(),
            (Some(PathBuf::from("c")), Some(PathBuf::from("r.md")))
        );
        assert!(parse_args(&args(&["--out"]))
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse_args(&args(&["--bogus", "x"]))
            .unwrap_err()
            .contains("unexpected argument"));
    }

    #[test]
    fn nanoseconds_are_readable() {
        assert_eq!(format_ns(0.5), "0.5");
        assert_eq!(format_ns(999.94), "999.9");
        assert_eq!(format_ns(1234.4), "1,234");
        assert_eq!(format_ns(1_234_567.0), "1,234,567");
        assert_eq!(ratio(Some(3.0), Some(2.0)), "1.50");
        assert_eq!(ratio(Some(3.0), None), "n/a");
        assert_eq!(ratio(Some(3.0), Some(0.0)), "n/a");
    }
}
