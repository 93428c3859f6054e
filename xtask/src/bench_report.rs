//! `cargo xtask bench-report [--criterion DIR] [--out FILE] [--plot FILE]`: one markdown
//! table of the overhead suites' results, and the scaling suite's table and plot.
//!
//! It reads criterion's estimates, `<DIR>/<case>/<variant>/new/estimates.json`, for the
//! variants `raw`, `cuda-core` and `cudarc` of each case, takes the median's point estimate (in
//! nanoseconds), and prints and writes a table of case, the three medians, cuda-core/raw and
//! cudarc/cuda-core. A variant not measured shows as `n/a`, with a footnote saying why.
//!
//! Cases named `<family>_n<size>` (the `scaling` suite's) are left out of that table: they are
//! grouped by family into a table of case, size, raw, cuda-core and their ratio after it, and
//! plotted against their size, a panel per family, into an SVG file (see [`scaling`]).
//!
//! `DIR` defaults to `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the
//! workspace's `target/criterion`; `FILE` to `bench-report.md` in that target directory, and
//! the plot's to `bench-scaling.svg` there (written only where a scaled case was measured).
//!
//! `--save FILE --gpu NAME --driver VERSION [--date YYYY-MM-DD] [--commit C] [--note TEXT]`
//! also stores the table's numbers as data ([`results`]: `benches/results/*.csv` in the
//! repository). `cargo xtask bench-report --readme [--results FILE] [--check]` writes the
//! table of `benches/README.md`, between its `bench-report:begin` and `end` lines, from the
//! newest stored file (or `FILE`); `--check` fails where the document differs instead.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::main_table::{notes, render_table, CASES, VARIANTS};
use crate::report_table::{Row, Summary};
use crate::results::{self, Results};
use crate::scaling;

/// Runs the command with its arguments (after `bench-report`).
pub(crate) fn run(args: &[String], workspace: &Path) -> Result<(), String> {
    let args = parse_args(args)?;
    if args.readme {
        return readme(&args, workspace);
    }
    let target = target_dir(workspace);
    let criterion = args
        .criterion
        .clone()
        .unwrap_or_else(|| default_criterion_dir(&target));
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target.join("bench-report.md"));
    let plot_file = args
        .plot
        .clone()
        .unwrap_or_else(|| target.join("bench-scaling.svg"));
    let rows = collect(&criterion)?;
    let report = render(&rows);
    print!("{report}");
    write(&out, &report)?;
    eprintln!("bench-report: wrote {}", out.display());
    if let Some(svg) = scaling::plot(&rows, "How cost grows with work: cuda-core and raw") {
        write(&plot_file, &svg)?;
        eprintln!("bench-report: wrote {}", plot_file.display());
    }
    if let Some(file) = &args.save {
        let results = save(&args, &rows);
        write(file, &results.to_text())?;
        eprintln!(
            "bench-report: wrote {} ({} cases)",
            file.display(),
            results.cases.len()
        );
    }
    Ok(())
}

/// The stored results of `rows`' cases that are not scaled, with the run's metadata from the
/// arguments (`--gpu` and `--driver` are there: [`parse_args`] checks).
fn save(args: &Args, rows: &[Row]) -> Results {
    let mut meta = vec![
        ("gpu".to_owned(), args.gpu.clone().unwrap_or_default()),
        ("driver".to_owned(), args.driver.clone().unwrap_or_default()),
        (
            "date".to_owned(),
            args.date.clone().unwrap_or_else(results::today),
        ),
    ];
    for (key, value) in [("commit", &args.commit), ("note", &args.note)] {
        if let Some(value) = value {
            meta.push((key.to_owned(), value.clone()));
        }
    }
    Results {
        meta,
        cases: rows
            .iter()
            .filter(|row| scaling::split(&row.case).is_none())
            .map(Summary::of)
            .collect(),
    }
}

/// `--readme`: writes (or with `--check`, compares) the results table of `benches/README.md`
/// from a stored results file: `--results FILE`, else the newest in `benches/results`.
fn readme(args: &Args, workspace: &Path) -> Result<(), String> {
    let benches = workspace.join("benches");
    let (file, results) = match &args.results {
        Some(file) => (file.clone(), results::read(file)?),
        None => results::newest(&benches.join("results"))?,
    };
    let doc_path = benches.join("README.md");
    let doc = std::fs::read_to_string(&doc_path)
        .map_err(|e| format!("reading {}: {e}", doc_path.display()))?;
    let link = relative_link(&benches, &file);
    let block = readme_block(&results, &link, |plot| benches.join(plot).is_file());
    let new =
        results::replace_block(&doc, &block).map_err(|e| format!("{}: {e}", doc_path.display()))?;
    if args.check {
        if new != doc {
            return Err(format!(
                "{}'s results table is not what {link} gives: run cargo xtask bench-report \
                 --readme",
                doc_path.display()
            ));
        }
        eprintln!("bench-report: {} is up to date", doc_path.display());
    } else if new != doc {
        write(&doc_path, &new)?;
        eprintln!("bench-report: wrote {} from {link}", doc_path.display());
    } else {
        eprintln!("bench-report: {} was up to date", doc_path.display());
    }
    Ok(())
}

/// `file` as a link from a document in `dir`: relative where it lies under `dir`.
fn relative_link(dir: &Path, file: &Path) -> String {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    file.strip_prefix(&dir)
        .unwrap_or(&file)
        .to_string_lossy()
        .into_owned()
}

/// What lies between the markers of `benches/README.md`: where and when the run was made, its
/// table, and the scaling plot the file names (where `exists` finds it).
fn readme_block(results: &Results, link: &str, exists: impl Fn(&str) -> bool) -> String {
    let meta = |key| results.meta(key).unwrap_or("n/a");
    let mut out = format!(
        "<!-- Written by `cargo xtask bench-report --readme` from {link}: edit that file (or \
         store a new run), not this table. -->\n\n"
    );
    let _ = write!(
        out,
        "Measured on {} (driver {}) on {}",
        meta("gpu"),
        meta("driver"),
        meta("date")
    );
    if let Some(commit) = results.meta("commit") {
        let _ = write!(out, ", at commit {commit}");
    }
    if let Some(note) = results.meta("note") {
        let _ = write!(out, "; {note}");
    }
    let _ = writeln!(out, ". The data: [{link}]({link}).\n");
    out.push_str(&render_table(&results.cases));
    out.push_str(
        "- Times are per operation, the median of each variant's rounds; ratios are the median \
         of the ratios within each round, `by round` their range and the number of rounds; \
         `target met`: cuda-core/raw at most 1.03, or cuda-core at most 20 ns over raw.\n",
    );
    if let Some(plot) = results.meta("plot").filter(|plot| exists(plot)) {
        let caption = results
            .meta("plot_caption")
            .unwrap_or("How cost grows with work");
        let _ = writeln!(out, "\n{caption}:\n\n![{caption}]({plot})");
    }
    out
}

/// Writes `text` to `file`, making its directory first.
fn write(file: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    std::fs::write(file, text).map_err(|e| format!("writing {}: {e}", file.display()))
}

/// The command's arguments, each optional.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Args {
    /// `--criterion DIR`: where criterion's results are.
    pub(crate) criterion: Option<PathBuf>,
    /// `--out FILE`: the markdown report.
    pub(crate) out: Option<PathBuf>,
    /// `--plot FILE`: the scaling plot (SVG).
    pub(crate) plot: Option<PathBuf>,
    /// `--save FILE`: the run's results, stored (with `--gpu`, `--driver` and optionally
    /// `--date`, `--commit` and `--note`).
    pub(crate) save: Option<PathBuf>,
    pub(crate) gpu: Option<String>,
    pub(crate) driver: Option<String>,
    pub(crate) date: Option<String>,
    pub(crate) commit: Option<String>,
    pub(crate) note: Option<String>,
    /// `--readme`: the table of `benches/README.md` from stored results instead.
    pub(crate) readme: bool,
    /// `--results FILE`: which stored results (with `--readme`).
    pub(crate) results: Option<PathBuf>,
    /// `--check`: compare, do not write (with `--readme`).
    pub(crate) check: bool,
}

/// The arguments, in any order: `--criterion DIR`, `--out FILE`, `--plot FILE`, `--save FILE`
/// with its metadata; or `--readme` with `--results FILE` and `--check`.
pub(crate) fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let mut path = None;
        let mut text = None;
        match flag.as_str() {
            "--readme" => parsed.readme = true,
            "--check" => parsed.check = true,
            "--criterion" => path = Some(&mut parsed.criterion),
            "--out" => path = Some(&mut parsed.out),
            "--plot" => path = Some(&mut parsed.plot),
            "--save" => path = Some(&mut parsed.save),
            "--results" => path = Some(&mut parsed.results),
            "--gpu" => text = Some(&mut parsed.gpu),
            "--driver" => text = Some(&mut parsed.driver),
            "--date" => text = Some(&mut parsed.date),
            "--commit" => text = Some(&mut parsed.commit),
            "--note" => text = Some(&mut parsed.note),
            other => return Err(format!("bench-report: unexpected argument {other:?}")),
        }
        if path.is_some() || text.is_some() {
            let value = rest
                .next()
                .ok_or_else(|| format!("bench-report: {flag} needs a value"))?;
            if let Some(slot) = path {
                *slot = Some(PathBuf::from(value));
            }
            if let Some(slot) = text {
                *slot = Some(value.clone());
            }
        }
    }
    let criterion_mode = parsed.criterion.is_some()
        || parsed.out.is_some()
        || parsed.plot.is_some()
        || parsed.save.is_some();
    let metadata = parsed.gpu.is_some()
        || parsed.driver.is_some()
        || parsed.date.is_some()
        || parsed.commit.is_some()
        || parsed.note.is_some();
    if parsed.readme && (criterion_mode || metadata) {
        return Err("bench-report: --readme takes only --results and --check".to_owned());
    }
    if !parsed.readme && (parsed.check || parsed.results.is_some()) {
        return Err("bench-report: --check and --results go with --readme".to_owned());
    }
    if parsed.save.is_some() && (parsed.gpu.is_none() || parsed.driver.is_none()) {
        return Err(
            "bench-report: --save needs --gpu NAME and --driver VERSION (the run's)".to_owned(),
        );
    }
    if parsed.save.is_none() && metadata {
        return Err(
            "bench-report: --gpu, --driver, --date, --commit and --note go with --save".to_owned(),
        );
    }
    Ok(parsed)
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
        let mut runs: [Vec<f64>; 3] = Default::default();
        for (slot, variant) in runs.iter_mut().zip(VARIANTS) {
            *slot = variant_runs(&entry.path().join(variant))?;
        }
        if runs.iter().any(|r| !r.is_empty()) {
            rows.push(Row { case, runs });
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

/// The medians of one variant's directory: of its rounds `r0`, `r1`, ... in order where it
/// has rounds, else its own; empty where it has neither.
fn variant_runs(dir: &Path) -> Result<Vec<f64>, String> {
    let estimates = |d: &Path| d.join("new").join("estimates.json");
    let mut rounds = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let round = name.strip_prefix('r').and_then(|k| k.parse::<usize>().ok());
            if let Some(round) = round {
                let file = estimates(&entry.path());
                if file.is_file() {
                    rounds.push((round, median_ns(&file)?));
                }
            }
        }
    }
    if !rounds.is_empty() {
        rounds.sort_by_key(|&(round, _)| round);
        return Ok(rounds.into_iter().map(|(_, ns)| ns).collect());
    }
    let file = estimates(dir);
    Ok(if file.is_file() {
        vec![median_ns(&file)?]
    } else {
        Vec::new()
    })
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

/// The markdown report: the table of the cases that are not scaled (with its footnotes, the
/// count of equal-work cases within target and the notes), then the scaling table, each where
/// it has rows.
pub(crate) fn render(rows: &[Row]) -> String {
    let plain: Vec<Summary> = rows
        .iter()
        .filter(|row| scaling::split(&row.case).is_none())
        .map(Summary::of)
        .collect();
    let mut out = if plain.is_empty() {
        String::new()
    } else {
        render_table(&plain) + &notes()
    };
    let scaled = scaling::render(rows);
    if !scaled.is_empty() {
        if !out.is_empty() {
            out.push_str(
                "
### How cost grows with work

",
            );
        }
        out.push_str(&scaled);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a criterion-shaped `estimates.json` with this median.
    fn estimate(dir: &Path, case: &str, variant: &str, median: f64) {
        estimate_at(&dir.join(case).join(variant), median);
    }

    /// Writes the estimates of round `round` of a variant.
    fn round(dir: &Path, case: &str, variant: &str, round: usize, median: f64) {
        estimate_at(
            &dir.join(case).join(variant).join(format!("r{round}")),
            median,
        );
    }

    fn estimate_at(benchmark: &Path, median: f64) {
        let new = benchmark.join("new");
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
        assert_eq!(rows[1].runs, [vec![2000.0], vec![2060.0], vec![3090.0]]);
        assert_eq!(rows[0].runs, [vec![21.5], vec![22.25], vec![]]);
    }

    #[test]
    fn the_table_has_medians_ratios_and_footnotes() {
        let dir = fake_results();
        let report = render(&collect(dir.path()).unwrap());
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(
            lines[0],
            "| case | raw (ns) | cuda-core (ns) | cudarc (ns) | cuda-core/raw | cudarc/cuda-core \
             | cuda-core/raw by round | target met |"
        );
        assert_eq!(
            lines[1],
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |"
        );
        // Less work than raw: said in a footnote, and no verdict.
        assert_eq!(
            lines[2],
            "| device_current[^1] | 21.5 | 22.2 | n/a[^2] | 1.03 | n/a | one run | n/a (less work) |"
        );
        assert_eq!(
            lines[3],
            "| launch_4 | 2,000 | 2,060 | 3,090 | 1.03 | 1.50 | one run | yes |"
        );
        // Both missing variants of a cache case share one footnote.
        assert_eq!(
            lines[4],
            "| cache_hit_file | n/a[^3] | 45,679 | n/a[^3] | n/a | n/a | n/a | n/a |"
        );
        assert_eq!(
            lines[5],
            "| first_launch | 312,456,789 | n/a[^4] | n/a[^4] | n/a | n/a | n/a | n/a |"
        );
        assert_eq!(
            lines[6],
            "| zz_extra | n/a[^4] | 5.0 | n/a[^4] | n/a | n/a | n/a | n/a |"
        );
        assert!(
            report.contains("[^1]: Less work than raw: cuda-core makes one `cuCtxGetDevice`"),
            "{report}"
        );
        assert!(
            report.contains("[^2]: cudarc has no device type"),
            "{report}"
        );
        assert!(report.contains("[^3]: No program cache outside cuda-core."));
        assert!(report.contains("[^4]: Not measured in this run"));
        // The count leaves the less-work row out: launch_4 alone is counted.
        assert!(
            report.contains("- Within target: 1 of the 1 cases"),
            "{report}"
        );
        assert!(report.contains("- Times are criterion's median point estimates"));
    }

    #[test]
    fn recycling_cases_are_judged_by_their_own_target_and_counted_apart() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for (case, raw, core) in [
            ("event_churn", 200.0, 10.0),
            ("stream_churn", 6000.0, 1500.0),
            ("launch_0", 3000.0, 3010.0),
        ] {
            estimate(d, case, "raw", raw);
            estimate(d, case, "cuda-core", core);
        }
        let report = render(&collect(d).unwrap());
        assert!(
            report.contains("| event_churn[^3] | 200.0 | 10.0 | n/a[^2] | 0.05 | n/a | one run | yes (at most 0.20) |"),
            "{report}"
        );
        assert!(
            report.contains("| stream_churn[^1] | 6,000 | 1,500 | n/a[^2] | 0.25 | n/a | one run | **no** (at most 0.20) |"),
            "{report}"
        );
        assert!(report.contains("Faster than raw by design: cuda-core reuses the dropped event"));
        assert!(
            report.contains("- Faster than raw by design: 1 of the 2 recycling cases"),
            "{report}"
        );
        assert!(
            report.contains("- Within target: 1 of the 1 cases"),
            "{report}"
        );
    }

    #[test]
    fn rounds_are_compared_within_each_round() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // The machine drifts: raw's rounds differ by 4x, and cuda-core's first round ran
        // during a slow spell. Within a round cuda-core is 5%, 2.5% and 200% over raw.
        for (k, (raw, core)) in [(100.0, 300.0), (200.0, 210.0), (400.0, 410.0)]
            .into_iter()
            .enumerate()
        {
            round(d, "launch_0", "raw", k, raw);
            round(d, "launch_0", "cuda-core", k, core);
        }
        // A stale single result beside the rounds is not used.
        estimate(d, "launch_0", "raw", 1.0);
        let rows = collect(d).unwrap();
        assert_eq!(rows[0].runs[0], [100.0, 200.0, 400.0]);
        assert_eq!(rows[0].median(0), Some(200.0));
        assert_eq!(rows[0].median(1), Some(300.0));
        let ratio = rows[0].ratio(1, 0).unwrap();
        // The median of 3.0, 1.05 and 1.025, not 300 / 200.
        assert!((ratio.median - 1.05).abs() < 1e-9, "{ratio:?}");
        assert!((ratio.min - 1.025).abs() < 1e-9 && (ratio.max - 3.0).abs() < 1e-9);
        assert_eq!(ratio.rounds, 3);
        // 5% is over 3%, but the within-round differences are 200, 10 and 10 ns: their
        // median, 10 ns, is within 20 ns (the medians' difference, 100 ns, is not).
        assert_eq!(rows[0].extra_ns(1, 0), Some(10.0));
        assert_eq!(Summary::of(&rows[0]).meets_target(), Some(true));
        let report = render(&rows);
        assert!(
            report.contains(
                "| launch_0 | 200.0 | 300.0 | n/a[^1] | 1.05 | n/a | 1.02-3.00 (3) | yes |"
            ),
            "{report}"
        );
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
    fn a_saved_run_gives_the_same_table_as_its_criterion_results() {
        let dir = fake_results();
        let d = dir.path();
        estimate(d, "launch_threads_n8", "raw", 250.0);
        estimate(d, "launch_threads_n8", "cuda-core", 260.0);
        let saved = d.join("stored/run.csv");
        let args = [
            "--criterion",
            &d.display().to_string(),
            "--out",
            &d.join("report.md").display().to_string(),
            "--save",
            &saved.display().to_string(),
            "--gpu",
            "NVIDIA H200",
            "--driver",
            "580.159.04",
            "--note",
            "one round",
        ]
        .map(str::to_owned);
        run(&args, d).unwrap();
        let results = results::read(&saved).unwrap();
        assert_eq!(results.meta("gpu"), Some("NVIDIA H200"));
        assert_eq!(results.meta("note"), Some("one round"));
        assert_eq!(results.meta("date").map(str::len), Some(10));
        // The scaled case has its own table, and is not stored.
        assert_eq!(results.cases.len(), 5, "{results:?}");
        let report = std::fs::read_to_string(d.join("report.md")).unwrap();
        let main = report.split("\n### How cost").next().unwrap();
        assert_eq!(render_table(&results.cases) + &notes(), main);
    }

    #[test]
    fn stored_results_write_the_readme_table_between_its_markers() {
        let ws = tempfile::tempdir().unwrap();
        let benches = ws.path().join("benches");
        std::fs::create_dir_all(benches.join("results")).unwrap();
        std::fs::create_dir_all(benches.join("plots")).unwrap();
        std::fs::write(benches.join("plots/s.svg"), "<svg/>").unwrap();
        let file = "# gpu: NVIDIA H200\n# driver: 580\n# date: 2026-12-05\n# commit: c4c198e\n\
                    # plot: plots/s.svg\n# plot_caption: The scaling suite\n\
                    case,raw_ns,cuda_core_ns,cudarc_ns,cuda_core_over_raw,cuda_core_over_raw_min,\
                    cuda_core_over_raw_max,rounds,cudarc_over_cuda_core,cuda_core_minus_raw_ns\n\
                    launch_4,4300,4335,6967,1.01,1,1.03,4,1.6,\n\
                    event_record,355.8,373.9,399.3,1.05,1.02,1.07,4,1.06,\n";
        std::fs::write(benches.join("results/2026-12-05.csv"), file).unwrap();
        let readme = benches.join("README.md");
        let doc =
            "# benches\n\n<!-- bench-report:begin -->\nold\n<!-- bench-report:end -->\n\nafter\n";
        std::fs::write(&readme, doc).unwrap();
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let check = args(&["--readme", "--check"]);
        assert!(run(&check, ws.path()).unwrap_err().contains("not what"));
        run(&args(&["--readme"]), ws.path()).unwrap();
        let written = std::fs::read_to_string(&readme).unwrap();
        assert!(written.starts_with("# benches\n\n<!-- bench-report:begin -->\n<!-- Written by"));
        assert!(
            written.ends_with("<!-- bench-report:end -->\n\nafter\n"),
            "{written}"
        );
        assert!(
            written.contains(
                "Measured on NVIDIA H200 (driver 580) on 2026-12-05, at commit c4c198e. The \
                 data: [results/2026-12-05.csv](results/2026-12-05.csv)."
            ),
            "{written}"
        );
        assert!(written
            .contains("| launch_4 | 4,300 | 4,335 | 6,967 | 1.01 | 1.60 | 1.00-1.03 (4) | yes |"));
        // Without the difference within rounds, 1.05 is judged by the ratio alone.
        assert!(written.contains(
            "| event_record | 355.8 | 373.9 | 399.3 | 1.05 | 1.06 | 1.02-1.07 (4) | **no** |"
        ));
        assert!(
            written.contains("![The scaling suite](plots/s.svg)"),
            "{written}"
        );
        run(&check, ws.path()).unwrap();
        // Written again, nothing changes.
        run(&args(&["--readme"]), ws.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&readme).unwrap(), written);
    }

    #[test]
    fn scaled_cases_have_a_table_of_their_own_after_the_main_one() {
        let dir = fake_results();
        let d = dir.path();
        for (case, raw, core) in [
            ("cache_hit_file_n10", 4000.0, 8000.0),
            ("cache_hit_file_n1000", 5000.0, 9000.0),
        ] {
            estimate(d, case, "raw", raw);
            estimate(d, case, "cuda-core", core);
        }
        let report = render(&collect(d).unwrap());
        let (main, scaled) = report
            .split_once("\n### How cost grows with work\n\n")
            .expect("a scaling section");
        assert!(main.starts_with("| case | raw (ns) |"), "{report}");
        assert!(!main.contains("cache_hit_file_n"), "{report}");
        assert!(
            main.contains("- Within target: 1 of the 1 cases"),
            "{report}"
        );
        assert!(scaled.starts_with("| case | size | unit |"), "{report}");
        assert!(
            scaled.contains(
                "| cache_hit_file | 1,000 entries | ns per hit | 5,000 | 9,000 | 1.80 | one run \
                 | 1.25 / 1.12 |"
            ),
            "{report}"
        );
        // Scaled cases alone: their table alone.
        let only = tempfile::tempdir().unwrap();
        estimate(only.path(), "launch_threads_n8", "raw", 250.0);
        estimate(only.path(), "launch_threads_n8", "cuda-core", 260.0);
        let report = render(&collect(only.path()).unwrap());
        assert!(report.starts_with("| case | size | unit |"), "{report}");
        assert!(
            report.contains(
                "| launch_threads | 8 threads | launches/s | 4,000,000 | 3,846,154 | 1.04 |"
            ),
            "{report}"
        );
    }

    #[test]
    fn the_scaling_plot_is_written_where_asked_and_only_for_scaled_cases() {
        let dir = fake_results();
        let plot = dir.path().join("plots/scaling.svg");
        let args = |criterion: &Path| {
            [
                "--criterion",
                &criterion.display().to_string(),
                "--out",
                &dir.path().join("report.md").display().to_string(),
                "--plot",
                &plot.display().to_string(),
            ]
            .map(str::to_owned)
        };
        run(&args(dir.path()), dir.path()).unwrap();
        assert!(!plot.exists(), "no scaled case, yet a plot");
        estimate(dir.path(), "graph_build_empty_n10", "raw", 20_000.0);
        estimate(dir.path(), "graph_build_empty_n10", "cuda-core", 21_000.0);
        run(&args(dir.path()), dir.path()).unwrap();
        let svg = std::fs::read_to_string(&plot).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains(">graph_build_empty</text>"), "{svg}");
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
        assert_eq!(parse_args(&[]).unwrap(), Args::default());
        assert_eq!(
            parse_args(&args(&[
                "--out",
                "r.md",
                "--criterion",
                "c",
                "--plot",
                "p.svg"
            ]))
            .unwrap(),
            Args {
                criterion: Some(PathBuf::from("c")),
                out: Some(PathBuf::from("r.md")),
                plot: Some(PathBuf::from("p.svg")),
                ..Args::default()
            }
        );
        let readme = parse_args(&args(&["--check", "--readme", "--results", "f.csv"])).unwrap();
        assert!(readme.readme && readme.check);
        assert_eq!(readme.results, Some(PathBuf::from("f.csv")));
        let save = parse_args(&args(&["--save", "s.csv", "--gpu", "G", "--driver", "580"]));
        assert_eq!(save.unwrap().gpu.as_deref(), Some("G"));
        for wrong in [
            &["--readme", "--out", "r.md"][..],
            &["--check"],
            &["--save", "s.csv", "--gpu", "G"],
            &["--gpu", "G"],
        ] {
            assert!(parse_args(&args(wrong)).is_err(), "{wrong:?}");
        }
        assert!(parse_args(&args(&["--out"]))
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse_args(&args(&["--bogus", "x"]))
            .unwrap_err()
            .contains("unexpected argument"));
    }
}
