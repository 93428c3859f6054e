//! The numbers of `cargo xtask bench-report`'s tables: one case's measurements as criterion
//! gives them ([`Row`]), the ratios between its variants, the overhead target, and the
//! summary a results file keeps of each case ([`Summary`]); how the tables print them.

/// Column indices of the variants, in the tables' order: `raw`, `cuda-core`, `cudarc`.
pub(crate) const RAW: usize = 0;
pub(crate) const CORE: usize = 1;
pub(crate) const CUDARC: usize = 2;

/// The overhead target: cuda-core/raw at most this, or ...
pub(crate) const TARGET_RATIO: f64 = 1.03;
/// ... cuda-core at most this many nanoseconds over raw.
pub(crate) const TARGET_NS: f64 = 20.0;

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

    /// `a - b` in nanoseconds, round by round as [`Row::ratio`] pairs them.
    pub(crate) fn extra_ns(&self, a: usize, b: usize) -> Option<f64> {
        median_of(&self.paired(a, b, |x, y| Some(x - y))?)
    }
}

/// What the main table shows of a case, and what a results file keeps of it: the variants'
/// times and the ratios between them, as computed from criterion's rounds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Summary {
    pub(crate) case: String,
    /// Each variant's time in nanoseconds (the median of its rounds), in [`RAW`], [`CORE`],
    /// [`CUDARC`] order.
    pub(crate) ns: [Option<f64>; 3],
    /// cuda-core/raw.
    pub(crate) core_raw: Option<Ratio>,
    /// cudarc/cuda-core: its median.
    pub(crate) cudarc_core: Option<f64>,
    /// cuda-core's time less raw's, in nanoseconds: the median of the differences within a
    /// round. `None` in a results file that does not keep it.
    pub(crate) extra_ns: Option<f64>,
}

impl Summary {
    /// The summary of a case's measurements.
    pub(crate) fn of(row: &Row) -> Summary {
        Summary {
            case: row.case.clone(),
            ns: [row.median(RAW), row.median(CORE), row.median(CUDARC)],
            core_raw: row.ratio(CORE, RAW),
            cudarc_core: row.ratio(CUDARC, CORE).map(|r| r.median),
            extra_ns: row.extra_ns(CORE, RAW),
        }
    }

    /// Whether cuda-core meets the overhead target against raw: at most 3% slower, or at
    /// most 20 ns slower where that allows more. Both are read round by round where there are
    /// rounds (the median of the within-round ratios, or differences), else from the medians;
    /// without the difference, the ratio alone decides.
    pub(crate) fn meets_target(&self) -> Option<bool> {
        let ratio = self.core_raw?;
        Some(ratio.median <= TARGET_RATIO || self.extra_ns.is_some_and(|ns| ns <= TARGET_NS))
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
pub(crate) fn median_of(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
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

    #[test]
    fn the_target_allows_twenty_nanoseconds_or_three_percent() {
        let row = |raw: f64, core: f64| {
            Summary::of(&Row {
                case: "x".to_owned(),
                runs: [vec![raw], vec![core], vec![]],
            })
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
    fn a_summary_without_the_difference_is_judged_by_its_ratio() {
        let mut summary = Summary::of(&Row {
            case: "x".to_owned(),
            runs: [vec![10.0], vec![29.0], vec![]],
        });
        assert_eq!(summary.extra_ns, Some(19.0));
        assert_eq!(summary.meets_target(), Some(true));
        summary.extra_ns = None;
        assert_eq!(summary.meets_target(), Some(false));
        summary.core_raw = None;
        assert_eq!(summary.meets_target(), None);
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
