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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::scaling;

/// The variants of a case, in column order.
const VARIANTS: [&str; 3] = ["raw", "cuda-core", "cudarc"];

/// The suites' cases, in the order the report lists them; other cases follow, sorted.
const CASES: &[&str] = &[
    "device_current",
    "device_by_ordinal",
    "set_current",
    "stream_churn",
    "event_churn",
    "event_record",
    "event_query",
    "stream_sync_idle",
    "launch_0",
    "seed_call",
    "launch_4",
    "launch_16",
    "launch_cluster",
    "launch_attrs",
    "pdl_chain",
    "pdl_chain_plain",
    "graph_launch",
    "graph_chain_100",
    "stream_chain_100",
    "graph_instantiate",
    "alloc_free_1k",
    "alloc_churn",
    "alloc_free_1k_device_pool",
    "alloc_free_1k_pinned_pool",
    "alloc_free_1k_pinned_numa_pool",
    "alloc_free_1k_managed_pool",
    "ipc_import",
    "copy_htod_4k",
    "copy_dtoh_4k",
    "copy_htod_4k_other_stream",
    "copy_single_1000",
    "copy_batch_1000",
    "copy_batch_1000_build",
    "compile_saxpy",
    "cache_hit_memory",
    "cache_hit_file",
    "cache_hit_file_10_headers",
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
        "launch_attrs",
        "cudarc",
        "cudarc's launch builder has no `cuLaunchKernelEx`, so no launch attributes.",
    ),
    (
        "pdl_chain",
        "cudarc",
        "cudarc's launch builder has no `cuLaunchKernelEx`, so no programmatic dependent launch.",
    ),
    (
        "pdl_chain_plain",
        "cudarc",
        "Left out with `pdl_chain`, its control.",
    ),
    (
        "graph_instantiate",
        "cudarc",
        "cudarc instantiates a graph only at the end of its capture.",
    ),
    (
        "alloc_free_1k_device_pool",
        "cudarc",
        "cudarc 0.19 makes no memory pools of its own: it allocates from the device's default pool.",
    ),
    (
        "alloc_free_1k_pinned_pool",
        "cudarc",
        "cudarc 0.19 makes no memory pools of its own: it allocates from the device's default pool.",
    ),
    (
        "alloc_free_1k_pinned_numa_pool",
        "cudarc",
        "cudarc 0.19 makes no memory pools of its own: it allocates from the device's default pool.",
    ),
    (
        "alloc_free_1k_managed_pool",
        "cudarc",
        "cudarc 0.19 makes no memory pools of its own: it allocates from the device's default pool.",
    ),
    (
        "ipc_import",
        "cudarc",
        "cudarc 0.19 has no interprocess memory.",
    ),
    (
        "compile_saxpy",
        "cudarc",
        "cudarc's NVRTC API returns PTX only (no cubin); loading it adds a driver JIT compile, \
         which is other work.",
    ),
    (
        "copy_single_1000",
        "cudarc",
        "Left out with the copy batch cases, whose control it is (cudarc has no batched copy).",
    ),
    (
        "copy_batch_1000",
        "cudarc",
        "cudarc has no `cuMemcpyBatchAsync`.",
    ),
    (
        "copy_batch_1000_build",
        "cudarc",
        "cudarc has no `cuMemcpyBatchAsync`.",
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
    (
        "cache_hit_file_10_headers",
        "raw",
        "No program cache outside cuda-core.",
    ),
    (
        "cache_hit_file_10_headers",
        "cudarc",
        "No program cache outside cuda-core.",
    ),
    ("tensor_map_encode", "cudarc", "cudarc has no tensor maps."),
];

/// The cases where cuda-core is meant to beat the raw driver, by recycling what raw makes
/// afresh: `(case, the largest cuda-core/raw ratio that meets the target, what it does)`. They
/// are counted apart from the overhead target.
const BEAT_RAW: &[(&str, f64, &str)] = &[
    (
        "event_churn",
        0.2,
        "cuda-core reuses the dropped event's handle (no driver call); raw creates and \
         destroys one.",
    ),
    (
        "stream_churn",
        0.2,
        "cuda-core reuses the dropped stream, given no work, without a driver call (one given \
         work, once `cuStreamQuery` says it is idle); raw creates and destroys one.",
    ),
    (
        "alloc_churn",
        1.0,
        "cuda-core's stream keeps the freed 1 KiB buffer and hands it to the next allocation \
         (no driver call); raw allocates and frees from the pool.",
    ),
    (
        "seed_call",
        1.0,
        "cuda-core's two events come from its recycling; raw creates and destroys two per call.",
    ),
];

/// Whether cuda-core's variant of a case makes fewer driver calls than raw's or more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Less than raw: the row is no comparison of equal work, and is left out of the count of
    /// cases within target.
    Less,
    /// More than raw: the row says which, and counts.
    More,
}

/// The cases whose variants do not do the same work: `(case, how, what cuda-core does)`.
const UNEQUAL_WORK: &[(&str, Work, &str)] = &[
    (
        "device_current",
        Work::Less,
        "cuda-core makes one `cuCtxGetDevice` where raw makes `cuCtxGetCurrent` and \
         `cuCtxGetDevice`.",
    ),
    (
        "device_by_ordinal",
        Work::Less,
        "cuda-core checks a cached device count where raw calls `cuDeviceGet`.",
    ),
    (
        "set_current",
        Work::Less,
        "cuda-core reads the current context and skips `cuCtxSetCurrent` when it already is \
         current, as here; raw sets it.",
    ),
    (
        "ipc_import",
        Work::More,
        "cuda-core also reads the exporter's record of its live buffers (one `pread`), \
         checks the descriptor's size against the import's extent (`cuPointerGetAttributes`) \
         and reads the current context (`cuCtxGetCurrent`); it waits for the previous release \
         at the next import, where raw waits after each.",
    ),
    (
        "copy_htod_4k",
        Work::More,
        "cuda-core also reads the current context (`cuCtxGetCurrent`), which copies of pool \
         memory need current.",
    ),
    (
        "copy_dtoh_4k",
        Work::More,
        "cuda-core also reads the current context (`cuCtxGetCurrent`), which copies of pool \
         memory need current.",
    ),
    (
        "copy_htod_4k_other_stream",
        Work::More,
        "cuda-core also reads the current context (`cuCtxGetCurrent`), which copies of pool \
         memory need current.",
    ),
    (
        "copy_single_1000",
        Work::More,
        "cuda-core also reads the current context (`cuCtxGetCurrent`) for each copy, which \
         copies of pool memory need current.",
    ),
    (
        "copy_batch_1000",
        Work::More,
        "cuda-core also reads the current context (`cuCtxGetCurrent`) once, which copies of \
         pool memory need current.",
    ),
    (
        "replay_100_checked",
        Work::More,
        "cuda-core compares every argument of the 100 launches with its node's (the \
         hand-written loop knows which one changed); `replay_100` declares the 99 unchanged \
         ones (`launch_unchanged`).",
    ),
    (
        "copy_batch_1000_build",
        Work::More,
        "cuda-core also reads the current context once, and checks every copy (bounds, \
         devices, overlaps) as it builds the batch.",
    ),
];

/// The footnote of a variant missing for a reason not listed above.
const NOT_MEASURED: &str = "Not measured in this run: the bench printed why (no equivalent, a \
                            device without the feature, or a failed child run).";

/// Notes printed under every table.
const NOTES: &[&str] = &[
    "Times are criterion's median point estimates in nanoseconds, per operation. A case measured \
     in rounds (the overhead suite) runs its variants back to back in each round, in an order \
     that changes from round to round; a time is then the median of the variant's rounds, a \
     ratio the median of the ratios within each round, and `by round` gives the smallest and \
     largest of those ratios and the number of rounds.",
    "`target met`: cuda-core/raw at most 1.03, or cuda-core at most 20 ns over raw.",
    "Launches, \
     `event_record` and `alloc_free_1k` queue 256 operations per timed batch and synchronise the \
     stream between batches, outside the timed part. `first_launch` is a whole child process, \
     spawn to exit.",
    "`raw` is the sys crate's driver table called directly (the limit); cudarc 0.19 runs with its \
     defaults, so event tracking is on: each buffer argument, allocation and copy also records \
     or waits on events.",
    "`set_current`/cudarc is `CudaContext::bind_to_thread`, which reads the current context and \
     skips `cuCtxSetCurrent` when it already is current (as in the bench).",
];

/// One case's measurements, in nanoseconds, by variant: the medians of its rounds
/// (`<case>/<variant>/r<k>`, in round order), or the one median of a case measured once
/// (`<case>/<variant>`); empty when the variant was not measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) case: String,
    pub(crate) runs: [Vec<f64>; 3],
}

/// A ratio of two variants of a case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ratio {
    /// The median over rounds of the ratio within each round (or the ratio of the medians).
    pub(crate) median: f64,
    /// The smallest and largest ratio within a round (both `median` without rounds).
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// Rounds compared (1 without rounds).
    pub(crate) rounds: usize,
}

impl Row {
    /// The variant's time: the median of its rounds' medians.
    pub(crate) fn median(&self, variant: usize) -> Option<f64> {
        median_of(&self.runs[variant])
    }

    /// `a / b`, round by round when both variants ran the same rounds (each round's variants
    /// ran back to back, so the machine's drift cancels), else as the ratio of the medians.
    pub(crate) fn ratio(&self, a: usize, b: usize) -> Option<Ratio> {
        let ratios = self.paired(a, b, |x, y| (y > 0.0).then(|| x / y))?;
        Some(Ratio {
            median: median_of(&ratios)?,
            min: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            max: ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            rounds: ratios.len(),
        })
    }

    /// `f(a, b)` for each round where both variants ran the same rounds, else once, on the
    /// medians; `None` where the variants were not measured or `f` has no answer.
    fn paired(&self, a: usize, b: usize, f: impl Fn(f64, f64) -> Option<f64>) -> Option<Vec<f64>> {
        let (ra, rb) = (&self.runs[a], &self.runs[b]);
        if ra.len() > 1 && ra.len() == rb.len() {
            let rounds: Option<Vec<f64>> = ra.iter().zip(rb).map(|(&x, &y)| f(x, y)).collect();
            if rounds.is_some() {
                return rounds;
            }
        }
        Some(vec![f(self.median(a)?, self.median(b)?)?])
    }

    /// Whether cuda-core meets the overhead target against raw: at most 3% slower, or at
    /// most 20 ns slower where that allows more. Both are read as the ratio is: round by
    /// round where there are rounds (the median of the within-round differences), else from
    /// the medians.
    pub(crate) fn meets_target(&self) -> Option<bool> {
        let ratio = self.ratio(CORE, RAW)?;
        Some(ratio.median <= TARGET_RATIO || self.extra_ns(CORE, RAW)? <= TARGET_NS)
    }

    /// `a - b` in nanoseconds, round by round as [`Row::ratio`] pairs them.
    pub(crate) fn extra_ns(&self, a: usize, b: usize) -> Option<f64> {
        median_of(&self.paired(a, b, |x, y| Some(x - y))?)
    }
}

/// Column indices of [`VARIANTS`].
const RAW: usize = 0;
const CORE: usize = 1;
const CUDARC: usize = 2;

/// The overhead target: cuda-core/raw at most this, or ...
const TARGET_RATIO: f64 = 1.03;
/// ... cuda-core at most this many nanoseconds over raw.
const TARGET_NS: f64 = 20.0;

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
fn median_of(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Runs the command with its arguments (after `bench-report`).
pub(crate) fn run(args: &[String], workspace: &Path) -> Result<(), String> {
    let args = parse_args(args)?;
    let target = target_dir(workspace);
    let criterion = args
        .criterion
        .unwrap_or_else(|| default_criterion_dir(&target));
    let out = args.out.unwrap_or_else(|| target.join("bench-report.md"));
    let plot_file = args
        .plot
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
    Ok(())
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
}

/// `--criterion DIR`, `--out FILE` and `--plot FILE`, each optional, in any order.
pub(crate) fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let slot = match flag.as_str() {
            "--criterion" => &mut parsed.criterion,
            "--out" => &mut parsed.out,
            "--plot" => &mut parsed.plot,
            other => return Err(format!("bench-report: unexpected argument {other:?}")),
        };
        let value = rest
            .next()
            .ok_or_else(|| format!("bench-report: {flag} needs a value"))?;
        *slot = Some(PathBuf::from(value));
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
    let plain: Vec<Row> = rows
        .iter()
        .filter(|row| scaling::split(&row.case).is_none())
        .cloned()
        .collect();
    let mut out = if plain.is_empty() {
        String::new()
    } else {
        render_table(&plain)
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

/// The table of the cases that are not scaled, its footnotes, the count of equal-work cases
/// within target, the notes.
fn render_table(rows: &[Row]) -> String {
    let mut footnotes: Vec<String> = Vec::new();
    let mut footnote = |text: &str| -> usize {
        match footnotes.iter().position(|f| f == text) {
            Some(i) => i + 1,
            None => {
                footnotes.push(text.to_owned());
                footnotes.len()
            }
        }
    };
    let (mut counted, mut within) = (0usize, 0usize);
    let (mut beat_counted, mut beat_met) = (0usize, 0usize);
    let mut out = String::new();
    out.push_str(
        "| case | raw (ns) | cuda-core (ns) | cudarc (ns) | cuda-core/raw | cudarc/cuda-core \
         | cuda-core/raw by round | target met |\n",
    );
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |\n");
    for row in rows {
        let work = UNEQUAL_WORK.iter().find(|(case, ..)| *case == row.case);
        let beat = BEAT_RAW.iter().find(|(case, ..)| *case == row.case);
        let case = match (work, beat) {
            (_, Some((_, _, what))) => format!(
                "{}[^{}]",
                row.case,
                footnote(&format!("Faster than raw by design: {what}"))
            ),
            (Some((_, how, what)), None) => {
                let how = match how {
                    Work::Less => "Less work than raw",
                    Work::More => "More work than raw",
                };
                format!("{}[^{}]", row.case, footnote(&format!("{how}: {what}")))
            }
            (None, None) => row.case.clone(),
        };
        let cells: Vec<String> = (0..VARIANTS.len())
            .map(|v| (row.median(v), VARIANTS[v]))
            .map(|(median, variant)| match median {
                Some(ns) => format_ns(ns),
                None => {
                    let reason = NO_EQUIVALENT
                        .iter()
                        .find(|(c, v, _)| *c == row.case && *v == variant)
                        .map_or(NOT_MEASURED, |(_, _, reason)| reason);
                    format!("n/a[^{}]", footnote(reason))
                }
            })
            .collect();
        let core_raw = row.ratio(CORE, RAW);
        let by_round = match core_raw {
            Some(r) if r.rounds > 1 => format!("{:.2}-{:.2} ({})", r.min, r.max, r.rounds),
            Some(_) => "one run".to_owned(),
            None => "n/a".to_owned(),
        };
        let less = work.is_some_and(|(_, how, _)| *how == Work::Less);
        let beaten = beat.and_then(|(_, limit, _)| Some((*limit, core_raw?.median)));
        let beat_cell;
        let target = match (less, row.meets_target()) {
            _ if beaten.is_some() => {
                let (limit, median) = beaten.unwrap_or_default();
                beat_counted += 1;
                beat_met += usize::from(median <= limit);
                beat_cell = format!(
                    "{} (at most {limit:.2})",
                    if median <= limit { "yes" } else { "**no**" }
                );
                beat_cell.as_str()
            }
            (true, Some(_)) => "n/a (less work)",
            (false, Some(met)) => {
                counted += 1;
                within += usize::from(met);
                if met {
                    "yes"
                } else {
                    "**no**"
                }
            }
            (_, None) => "n/a",
        };
        let _ = writeln!(
            out,
            "| {case} | {} | {} | {} | {} | {} | {by_round} | {target} |",
            cells[0],
            cells[1],
            cells[2],
            ratio(core_raw),
            ratio(row.ratio(CUDARC, CORE)),
        );
    }
    out.push('\n');
    for (i, footnote) in footnotes.iter().enumerate() {
        let _ = writeln!(out, "[^{}]: {footnote}", i + 1);
    }
    if !footnotes.is_empty() {
        out.push('\n');
    }
    if beat_counted > 0 {
        let _ = writeln!(
            out,
            "- Faster than raw by design: {beat_met} of the {beat_counted} recycling cases meet \
             their target (cuda-core/raw at most the ratio in their row); they are not counted \
             below."
        );
    }
    let _ = writeln!(
        out,
        "- Within target: {within} of the {counted} cases with a raw variant whose cuda-core \
         variant does the same driver work as raw or more (rows of less work are left out)."
    );
    for note in NOTES {
        let _ = writeln!(out, "- {note}");
    }
    out
}

/// A ratio's median to two decimals, or `n/a`.
pub(crate) fn ratio(r: Option<Ratio>) -> String {
    r.map_or_else(|| "n/a".to_owned(), |r| format!("{:.2}", r.median))
}

/// Nanoseconds: one decimal below 1000, else whole with thousands separated by commas.
pub(crate) fn format_ns(ns: f64) -> String {
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
        assert_eq!(rows[0].meets_target(), Some(true));
        let report = render(&rows);
        assert!(
            report.contains(
                "| launch_0 | 200.0 | 300.0 | n/a[^1] | 1.05 | n/a | 1.02-3.00 (3) | yes |"
            ),
            "{report}"
        );
    }

    #[test]
    fn the_target_allows_twenty_nanoseconds_or_three_percent() {
        let row = |raw: f64, core: f64| Row {
            case: "x".to_owned(),
            runs: [vec![raw], vec![core], vec![]],
        };
        assert_eq!(row(10.0, 29.0).meets_target(), Some(true));
        assert_eq!(row(10.0, 31.0).meets_target(), Some(false));
        assert_eq!(row(3000.0, 3090.0).meets_target(), Some(true));
        assert_eq!(row(3000.0, 3100.0).meets_target(), Some(false));
        assert_eq!(row(3000.0, 2000.0).meets_target(), Some(true));
        assert_eq!(median_of(&[]), None);
        assert_eq!(median_of(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
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
            }
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
        let row = |raw: Vec<f64>, core: Vec<f64>| Row {
            case: "x".to_owned(),
            runs: [raw, core, vec![]],
        };
        assert_eq!(ratio(row(vec![2.0], vec![3.0]).ratio(1, 0)), "1.50");
        assert_eq!(ratio(row(vec![], vec![3.0]).ratio(1, 0)), "n/a");
        assert_eq!(ratio(row(vec![0.0], vec![3.0]).ratio(1, 0)), "n/a");
    }
}
