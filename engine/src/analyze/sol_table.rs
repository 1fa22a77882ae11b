//! The speed-of-light table, as ROCm Compute Profiler lays its panel out: a row per kernel
//! that `speed-of-light` measured, a column per metric any of them has, each cell the
//! metric's value and its share of the GPU's peak.

use super::finding::{Evidence, Finding, amount};
use super::speed_of_light::METRICS;

/// The table of `speed-of-light`'s findings, in their order; none without any.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The metrics some kernel has, in [`METRICS`]'s order.
    pub metrics: Vec<&'static str>,
    pub rows: Vec<Row>,
}

/// A kernel's metrics, one cell per column of its table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kernel: String,
    pub cells: Vec<Option<Cell>>,
}

/// A metric of a kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub value: f64,
    pub unit: &'static str,
    pub percent_of_peak: Option<f64>,
}

impl Cell {
    /// The value, then its share of the peak or that it has none: `5.120e13 FLOP/s (62.7%)`.
    pub fn text(&self) -> String {
        let share = self
            .percent_of_peak
            .map_or_else(|| "no peak".to_owned(), |p| format!("{p:.1}%"));
        format!("{} ({share})", amount(self.value, self.unit))
    }
}

/// The speed-of-light table of `findings`, if `speed-of-light` found anything.
pub fn table(findings: &[Finding]) -> Option<Table> {
    let measured: Vec<Vec<(&'static str, String, Cell)>> = (findings.iter())
        .filter(|f| f.rule == "speed-of-light")
        .map(|f| f.evidence.iter().filter_map(cell).collect())
        .filter(|cells: &Vec<_>| !cells.is_empty())
        .collect();
    let metrics: Vec<&'static str> = (METRICS.iter().copied())
        .filter(|m| measured.iter().flatten().any(|(metric, ..)| metric == m))
        .collect();
    let rows: Vec<Row> = (measured.iter())
        .map(|cells| Row {
            kernel: cells[0].1.clone(),
            cells: (metrics.iter())
                .map(|m| (cells.iter()).find(|(metric, ..)| metric == m).map(|c| c.2))
                .collect(),
        })
        .collect();
    (!rows.is_empty()).then_some(Table { metrics, rows })
}

/// A metric's cell, with its name and kernel.
fn cell(e: &Evidence) -> Option<(&'static str, String, Cell)> {
    match e {
        Evidence::Metric {
            kernel,
            metric,
            value,
            unit,
            percent_of_peak,
            ..
        } => Some((
            *metric,
            kernel.clone(),
            Cell {
                value: *value,
                unit,
                percent_of_peak: *percent_of_peak,
            },
        )),
        _ => None,
    }
}
