//! The main table of `cargo xtask bench-report`: what the report knows of each case of the
//! overhead, compile and startup suites (the order it lists them in, why a variant has no
//! equivalent, which cases do less or more work than raw, which are meant to beat raw) and the
//! table, footnotes and counts it prints from their [`Summary`]s.

use std::fmt::Write as _;

use crate::report_table::{format_ns, ratio, Summary};

/// The variants of a case, in column order.
pub(crate) const VARIANTS: [&str; 3] = ["raw", "cuda-core", "cudarc"];

/// The suites' cases, in the order the report lists them; other cases follow, sorted.
pub(crate) const CASES: &[&str] = &[
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

/// The table of the cases that are not scaled, its footnotes and the count of equal-work cases
/// within target.
pub(crate) fn render_table(rows: &[Summary]) -> String {
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
            .map(|v| (row.ns[v], VARIANTS[v]))
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
        let core_raw = row.core_raw;
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
            row.cudarc_core
                .map_or_else(|| "n/a".to_owned(), |r| format!("{r:.2}")),
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
    out
}

/// The notes printed under the table of a criterion report.
pub(crate) fn notes() -> String {
    NOTES.iter().map(|note| format!("- {note}\n")).collect()
}
