//! What a rule concludes: a finding, how much it matters, and the records that back it;
//! and the wording of its numbers.

use serde::Serialize;

/// How much a finding matters; ordered, so gates can compare (`severity >= warning`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Where a finding was seen: records, not prose, so tools can link and check them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Evidence {
    /// A stretch of time, on a GPU of a process (`agent`) or a host thread (`tid`).
    Span {
        what: &'static str,
        pid: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tid: Option<u32>,
        start_ns: u64,
        end_ns: u64,
    },
    /// A kernel's dispatches that the finding is about.
    Kernel {
        name: String,
        dispatches: u64,
        total_ns: u64,
    },
    /// Calls of one API function that the finding is about.
    Api {
        function: String,
        calls: u64,
        total_ns: u64,
    },
    /// Memory copies of one direction.
    Copy {
        direction: &'static str,
        /// The API function that made them.
        function: String,
        copies: u64,
        bytes: u64,
        total_ns: u64,
    },
    /// Kernels that run one after the other, in this order, `times` times.
    Sequence { kernels: Vec<String>, times: u64 },
    /// A ROCTx range (all its instances).
    Range {
        label: String,
        instances: u64,
        total_ns: u64,
    },
    /// A counter's value for a kernel.
    Counter {
        kernel: String,
        counter: String,
        value: f64,
    },
    /// A metric derived from a kernel's counters, per dispatch, against the peak of the GPU
    /// it ran on where its properties give one.
    Metric {
        kernel: String,
        metric: &'static str,
        value: f64,
        unit: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        peak: Option<f64>,
        /// `value` as a percentage of `peak`.
        #[serde(skip_serializing_if = "Option::is_none")]
        percent_of_peak: Option<f64>,
    },
    /// A HIP stream of a process on a GPU (`agent`), as the SDK numbers a process's
    /// streams (0 the null stream).
    Stream { pid: u32, agent: u32, stream: u64 },
    /// A figure of one process or MPI rank.
    Rank { rank: u32, value: f64 },
}

/// A conclusion of a rule, with what backs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    /// One line, with the numbers.
    pub statement: String,
    pub evidence: Vec<Evidence>,
    /// The time a fix could win back, at most.
    pub at_stake_ns: u64,
    pub advice: &'static str,
}

/// A duration for people: three significant figures and a unit.
pub fn duration(ns: u64) -> String {
    let ns = ns as f64;
    let (value, unit) = match ns {
        n if n >= 1e9 => (n / 1e9, "s"),
        n if n >= 1e6 => (n / 1e6, "ms"),
        n if n >= 1e3 => (n / 1e3, "us"),
        n => (n, "ns"),
    };
    let decimals = match value {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    };
    format!("{value:.decimals$} {unit}")
}

/// A share as a percentage for people.
pub fn percent(part: f64, whole: f64) -> String {
    if whole <= 0.0 {
        return "0%".into();
    }
    format!("{:.0}%", 100.0 * part / whole)
}

/// A metric's value with its unit for people: rates span decades (scientific notation), a
/// percentage or a ratio reads as it is.
pub fn amount(value: f64, unit: &str) -> String {
    match unit {
        "%" => format!("{value:.1}%"),
        rate if rate.ends_with("/s") => format!("{value:.3e} {unit}"),
        _ => format!("{value:.2} {unit}"),
    }
}
