//! Stored results of the overhead suite: `benches/results/*.csv`, one file per run, that
//! `cargo xtask bench-report --save FILE` writes from criterion's output and
//! `cargo xtask bench-report --readme` turns into the table of `benches/README.md`.
//!
//! A file is a few `# key: value` lines saying where and when the run was made (`gpu`,
//! `driver` and `date` are required; `commit`, `note`, `plot` and `plot_caption` are
//! optional), then comma-separated values with a header line: each case's times and ratios as
//! the report computes them ([`Summary`]). An empty field is a value not measured.

use std::path::{Path, PathBuf};

use crate::report_table::{Ratio, Summary};

/// The header line of a results file's values.
const COLUMNS: &str =
    "case,raw_ns,cuda_core_ns,cudarc_ns,cuda_core_over_raw,cuda_core_over_raw_min,\
                       cuda_core_over_raw_max,rounds,cudarc_over_cuda_core,cuda_core_minus_raw_ns";

/// The metadata a results file must have.
const REQUIRED: [&str; 3] = ["gpu", "driver", "date"];

/// The lines that enclose the generated part of a document.
pub(crate) const BEGIN: &str = "<!-- bench-report:begin -->";
pub(crate) const END: &str = "<!-- bench-report:end -->";

/// One run's stored results.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Results {
    /// `(key, value)` in file order.
    pub(crate) meta: Vec<(String, String)>,
    pub(crate) cases: Vec<Summary>,
}

impl Results {
    /// A metadata value, where the file has it and it is not empty.
    pub(crate) fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Reads a results file's text; `name` is for the errors.
    pub(crate) fn parse(text: &str, name: &str) -> Result<Results, String> {
        let mut meta = Vec::new();
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let mut header = None;
        for (n, line) in lines.by_ref() {
            match line.strip_prefix('#') {
                Some(rest) => {
                    let (key, value) = rest.split_once(':').ok_or_else(|| {
                        format!("{name}:{}: a `# key: value` line was expected", n + 1)
                    })?;
                    meta.push((key.trim().to_owned(), value.trim().to_owned()));
                }
                None => {
                    header = Some((n, line));
                    break;
                }
            }
        }
        match header {
            Some((_, line)) if line.trim() == COLUMNS => {}
            Some((n, _)) => {
                return Err(format!(
                    "{name}:{}: the header line must be {COLUMNS}",
                    n + 1
                ));
            }
            None => return Err(format!("{name}: no values (the header line {COLUMNS})")),
        }
        let results = Results {
            meta,
            cases: lines
                .map(|(n, line)| case(line).map_err(|e| format!("{name}:{}: {e}", n + 1)))
                .collect::<Result<_, _>>()?,
        };
        if let Some(key) = REQUIRED.iter().find(|key| results.meta(key).is_none()) {
            return Err(format!("{name}: no `# {key}: ...` line"));
        }
        Ok(results)
    }

    /// The file's text.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for (key, value) in &self.meta {
            out.push_str(&format!("# {key}: {value}\n"));
        }
        out.push_str(COLUMNS);
        out.push('\n');
        let num = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
        for s in &self.cases {
            let r = s.core_raw;
            let fields = [
                s.case.clone(),
                num(s.ns[0]),
                num(s.ns[1]),
                num(s.ns[2]),
                num(r.map(|r| r.median)),
                num(r.map(|r| r.min)),
                num(r.map(|r| r.max)),
                r.map_or_else(String::new, |r| r.rounds.to_string()),
                num(s.cudarc_core),
                num(s.extra_ns),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }
}

/// One line of values.
fn case(line: &str) -> Result<Summary, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [case, raw, core, cudarc, median, min, max, rounds, cudarc_core, extra] = fields[..] else {
        return Err(format!("10 fields were expected, not {}", fields.len()));
    };
    let num = |field: &str| -> Result<Option<f64>, String> {
        if field.is_empty() {
            return Ok(None);
        }
        field
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(Some)
            .ok_or_else(|| format!("{field:?} is not a number"))
    };
    if case.is_empty() {
        return Err("a case has no name".to_owned());
    }
    let core_raw = match num(median)? {
        None => None,
        Some(median) => Some(Ratio {
            median,
            min: num(min)?.unwrap_or(median),
            max: num(max)?.unwrap_or(median),
            rounds: match rounds {
                "" => 1,
                n => n
                    .parse()
                    .map_err(|_| format!("{n:?} is not a number of rounds"))?,
            },
        }),
    };
    Ok(Summary {
        case: case.to_owned(),
        ns: [num(raw)?, num(core)?, num(cudarc)?],
        core_raw,
        cudarc_core: num(cudarc_core)?,
        extra_ns: num(extra)?,
    })
}

/// The newest results file in `dir`: the latest `date`, then the last name.
pub(crate) fn newest(dir: &Path) -> Result<(PathBuf, Results), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut best: Option<(String, PathBuf, Results)> = None;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("reading {}: {e}", dir.display()))?
            .path();
        if path.extension().is_none_or(|ext| ext != "csv") {
            continue;
        }
        let results = read(&path)?;
        let key = format!(
            "{} {}",
            results.meta("date").unwrap_or_default(),
            path.display()
        );
        if best.as_ref().is_none_or(|(best, ..)| key > *best) {
            best = Some((key, path, results));
        }
    }
    best.map(|(_, path, results)| (path, results))
        .ok_or_else(|| format!("no results file (*.csv) in {}", dir.display()))
}

/// Reads one results file.
pub(crate) fn read(path: &Path) -> Result<Results, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    Results::parse(&text, &path.display().to_string())
}

/// `doc` with what lies between its [`BEGIN`] and [`END`] lines replaced by `block`.
pub(crate) fn replace_block(doc: &str, block: &str) -> Result<String, String> {
    let start = doc.find(BEGIN).ok_or_else(|| format!("no {BEGIN} line"))?;
    let after = start + BEGIN.len();
    let end = doc[after..]
        .find(END)
        .map(|i| after + i)
        .ok_or_else(|| format!("no {END} line after {BEGIN}"))?;
    let block = block.trim_end_matches('\n');
    Ok(format!("{}\n{block}\n{}", &doc[..after], &doc[end..]))
}

/// Today's date in UTC, as `YYYY-MM-DD`.
pub(crate) fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date(secs / 86_400)
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> String {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# gpu: NVIDIA H200\n# driver: 580\n# date: 2026-12-05\n\
                        # note: 4 rounds\n\n\
                        case,raw_ns,cuda_core_ns,cudarc_ns,cuda_core_over_raw,cuda_core_over_raw_min,\
                        cuda_core_over_raw_max,rounds,cudarc_over_cuda_core,cuda_core_minus_raw_ns\n\
                        launch_4,4300,4335,6967,1.01,1,1.03,4,1.6,\n\
                        cache_hit_file,,18735,,,,,,,\n\
                        event_record,355.8,373.9,399.3,1.05,,,,1.06,18.1\n";

    #[test]
    fn a_results_file_is_read_and_written_back_the_same() {
        let results = Results::parse(FILE, "f").unwrap();
        assert_eq!(results.meta("gpu"), Some("NVIDIA H200"));
        assert_eq!(results.meta("commit"), None);
        assert_eq!(results.cases.len(), 3);
        let launch = &results.cases[0];
        assert_eq!(launch.ns, [Some(4300.0), Some(4335.0), Some(6967.0)]);
        assert_eq!(
            launch.core_raw,
            Some(Ratio {
                median: 1.01,
                min: 1.0,
                max: 1.03,
                rounds: 4
            })
        );
        assert_eq!(launch.cudarc_core, Some(1.6));
        assert_eq!(launch.extra_ns, None);
        assert_eq!(results.cases[1].ns, [None, Some(18735.0), None]);
        assert_eq!(results.cases[1].core_raw, None);
        // A ratio without its range is one of one round.
        let event = results.cases[2].core_raw.unwrap();
        assert_eq!((event.min, event.max, event.rounds), (1.05, 1.05, 1));
        let again = Results::parse(&results.to_text(), "again").unwrap();
        assert_eq!(again.meta, results.meta);
        assert_eq!(again.cases[0], results.cases[0]);
        assert_eq!(again.cases[1], results.cases[1]);
    }

    #[test]
    fn a_broken_results_file_says_where() {
        let err = Results::parse(&FILE.replace("# driver: 580\n", ""), "f").unwrap_err();
        assert!(err.contains("no `# driver: ...` line"), "{err}");
        let err = Results::parse(&FILE.replace("6967", "fast"), "f").unwrap_err();
        assert!(err.starts_with("f:7: "), "{err}");
        let err = Results::parse(&FILE.replace(",1.6,", ",1.6"), "f").unwrap_err();
        assert!(err.contains("10 fields"), "{err}");
        let err = Results::parse(&FILE.replace("cudarc_ns,", ""), "f").unwrap_err();
        assert!(err.contains("the header line must be"), "{err}");
        let err = Results::parse("# gpu: x\n", "f").unwrap_err();
        assert!(err.contains("no values"), "{err}");
    }

    #[test]
    fn the_block_between_the_markers_is_replaced() {
        let doc = format!("# T\n\nbefore\n{BEGIN}\nold\nlines\n{END}\nafter\n");
        let new = replace_block(&doc, "new\n").unwrap();
        assert_eq!(new, format!("# T\n\nbefore\n{BEGIN}\nnew\n{END}\nafter\n"));
        assert_eq!(replace_block(&new, "new").unwrap(), new);
        assert!(replace_block("no markers", "x").is_err());
        assert!(replace_block(&format!("{BEGIN} only"), "x").is_err());
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_792), "2026-12-05");
        assert_eq!(today().len(), 10);
    }

    #[test]
    fn the_newest_file_is_the_latest_date() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("b.csv"), FILE).unwrap();
        std::fs::write(d.join("a.csv"), FILE.replace("2026-12-05", "2026-12-06")).unwrap();
        std::fs::write(d.join("notes.txt"), "not a results file").unwrap();
        let (path, results) = newest(d).unwrap();
        assert_eq!(path, d.join("a.csv"));
        assert_eq!(results.meta("date"), Some("2026-12-06"));
        let empty = tempfile::tempdir().unwrap();
        assert!(newest(empty.path())
            .unwrap_err()
            .contains("no results file"));
    }
}
