//! The statistics files, `PREFIX_kernel_stats.csv`, … and `PREFIX_domain_stats.csv`: a
//! row per name, the longest total first.

use std::collections::{BTreeMap, HashMap};

use crate::stats::Accumulator;

use super::format::Line;
use super::table::Table;

/// The statistics of one process, per table, per name.
pub(super) type Statistics = BTreeMap<Table, HashMap<String, Accumulator>>;

/// The rows of a statistics file, the longest total first, and the statistics of all of
/// them together.
pub fn stats_rows(rows: &[(&str, &Accumulator)]) -> (Accumulator, Vec<u8>) {
    let mut total = Accumulator::default();
    rows.iter().for_each(|(_, acc)| total.merge(acc));
    let mut sorted = rows.to_vec();
    sorted.sort_by(|a, b| b.1.sum().total_cmp(&a.1.sum()).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    let mut line = Line::default();
    for (name, acc) in sorted {
        line.text(name)
            .int(acc.count())
            .int(acc.sum() as u64)
            .stat(acc.mean())
            .percent(100.0 * acc.sum() / total.sum())
            .int(acc.min() as u64)
            .int(acc.max() as u64)
            .stat(acc.stddev());
        line.end(&mut out);
    }
    (total, out)
}
