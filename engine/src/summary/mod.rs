//! Run statistics, as rocprofv3's `--stats` gives them and more: per kernel, API function,
//! copy direction and size class, allocation operation and marker range, the calls, total,
//! mean, extremes, standard deviation, percentiles and share of the section's time; counter
//! values per kernel, with each kernel's share of the counter's total; per HIP graph, its
//! launches, their time and the dispatches they enqueued. Optionally broken
//! down per process and per agent. And rocprofv3's summary tables of its tracing domains.

mod collect;
mod device_series;
mod domains;
mod render;
mod timeline;

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::catalog::Catalog;
use crate::stats::Accumulator;
use crate::table::Table;

pub use collect::Collecting;
pub use device_series::DeviceSeries;
pub use domains::SummaryDomain;
pub use render::{Format, cell, csv, number, render, render_of_run, terminal, write_files};
pub use timeline::{AgentKey, Timeline};

/// Which extra key columns the statistics are split by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Per node (its hostname): runs of many nodes, merged.
    pub node: bool,
    pub process: bool,
    pub agent: bool,
}

/// One section's statistics: a key to the durations of its records, in nanoseconds.
#[derive(Debug, Default)]
struct Section {
    rows: FxHashMap<Key, Row>,
}

/// A row's key: where its records ran (when the breakdown asks) and its own key columns,
/// as ids of interned names, so adding a record allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    /// The node's hostname, interned.
    node: Option<u32>,
    process: Option<u32>,
    agent: Option<u32>,
    /// The section's own columns ([`Kind::key_columns`]; unused slots are 0).
    own: [u32; 2],
}

#[derive(Debug, Default, Clone)]
struct Row {
    durations: Accumulator,
    /// What the section's records add up besides time ([`Kind::amount`]).
    amount: u64,
}

/// The sections, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Kernels,
    Api,
    Copies,
    Allocations,
    Scratch,
    Markers,
    Counters,
    /// HIP graph launches, per executable graph.
    Graphs,
}

impl Kind {
    const ALL: [Kind; 8] = [
        Kind::Kernels,
        Kind::Api,
        Kind::Copies,
        Kind::Allocations,
        Kind::Scratch,
        Kind::Markers,
        Kind::Counters,
        Kind::Graphs,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Kernels => "kernels",
            Kind::Api => "api",
            Kind::Copies => "memory_copies",
            Kind::Allocations => "memory_allocations",
            Kind::Scratch => "scratch_memory",
            Kind::Markers => "markers",
            Kind::Counters => "counters",
            Kind::Graphs => "hip_graphs",
        }
    }

    /// The section's own key columns.
    fn key_columns(self) -> &'static [&'static str] {
        match self {
            Kind::Kernels => &["kernel"],
            Kind::Api => &["domain", "function"],
            Kind::Copies => &["direction", "size_class"],
            Kind::Allocations | Kind::Scratch => &["operation"],
            Kind::Markers => &["range"],
            Kind::Counters => &["kernel", "counter"],
            Kind::Graphs => &["graph"],
        }
    }

    /// The column of what the section's records add up besides time, if they do: bytes
    /// moved or allocated, dispatches a graph's launches enqueued.
    fn amount(self) -> Option<&'static str> {
        match self {
            Kind::Copies | Kind::Allocations | Kind::Scratch => Some("bytes"),
            Kind::Graphs => Some("dispatches"),
            Kind::Kernels | Kind::Api | Kind::Markers | Kind::Counters => None,
        }
    }

    /// Whether records of the section run on an agent (host-side ones have none).
    fn on_agent(self) -> bool {
        matches!(
            self,
            Kind::Kernels
                | Kind::Copies
                | Kind::Allocations
                | Kind::Scratch
                | Kind::Counters
                | Kind::Graphs
        )
    }
}

/// The statistics of a run.
#[derive(Debug, Default)]
pub struct Summary {
    breakdown: Breakdown,
    sections: BTreeMap<Kind, Section>,
    /// The names keys refer to, and their ids.
    names: Vec<String>,
    name_ids: FxHashMap<String, u32>,
    /// The node the records being added ran on (see [`Summary::at_node`]).
    node: u32,
    /// GPU busy time per agent over the run.
    pub timeline: Timeline,
    /// Device counter reads per GPU over the run.
    pub device: DeviceSeries,
    /// The run's metadata: processes, agents, kernels; and why its records may be only
    /// part of the run's (its `partial`), which each output made of it says.
    pub catalog: Catalog,
}

impl Summary {
    /// Adds one record (or one dispatch's counter total): its section, where it ran, its
    /// own key columns, its duration (or value) and its [amount](Kind::amount).
    fn add(
        &mut self,
        kind: Kind,
        (pid, agent): (u32, Option<u32>),
        own: &[&str],
        value: f64,
        amount: u64,
    ) {
        let mut ids = [0; 2];
        for (id, name) in ids.iter_mut().zip(own) {
            *id = self.intern(name);
        }
        let key = Key {
            node: self.breakdown.node.then_some(self.node),
            process: self.breakdown.process.then_some(pid),
            agent: agent.filter(|_| self.breakdown.agent && kind.on_agent()),
            own: ids,
        };
        let row = self
            .sections
            .entry(kind)
            .or_default()
            .rows
            .entry(key)
            .or_default();
        row.durations.add(value);
        row.amount = row.amount.saturating_add(amount);
    }

    /// Says which node the records added next ran on: the hostname of their process.
    fn at_node(&mut self, hostname: &str) {
        self.node = self.intern(hostname);
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.name_ids.insert(name.to_owned(), id);
        id
    }

    /// A key's columns as text, in table order.
    fn key_text(&self, kind: Kind, key: &Key) -> Vec<String> {
        let mut text = Vec::with_capacity(4);
        if self.breakdown.node {
            text.extend(key.node.map(|n| self.names[n as usize].clone()));
        }
        if self.breakdown.process {
            text.extend(key.process.map(|p| p.to_string()));
        }
        if self.breakdown.agent && kind.on_agent() {
            text.push(key.agent.map_or_else(String::new, |a| a.to_string()));
        }
        let own = kind.key_columns().len();
        text.extend(
            key.own[..own]
                .iter()
                .map(|&id| self.names[id as usize].clone()),
        );
        text
    }

    /// The sections as tables, most time first.
    pub fn tables(&self) -> Vec<Table> {
        Kind::ALL
            .iter()
            .filter_map(|&kind| Some((kind, self.sections.get(&kind)?)))
            .map(|(kind, section)| self.table(kind, section))
            .collect()
    }

    fn table(&self, kind: Kind, section: &Section) -> Table {
        use evalexpr::Value::{Float, Int, String as Text};
        let mut columns: Vec<String> = Vec::new();
        if self.breakdown.node {
            columns.push("node".into());
        }
        if self.breakdown.process {
            columns.push("process".into());
        }
        if self.breakdown.agent && kind.on_agent() {
            columns.push("agent".into());
        }
        columns.extend(kind.key_columns().iter().map(|c| (*c).to_owned()));
        let measure = if kind == Kind::Counters {
            "value"
        } else {
            "ns"
        };
        let count = if kind == Kind::Counters {
            "dispatches"
        } else {
            "calls"
        };
        columns.push(count.into());
        for stat in [
            "total", "percent", "mean", "min", "max", "stddev", "p50", "p95", "p99",
        ] {
            columns.push(match stat {
                "percent" => stat.to_owned(),
                _ => format!("{stat}_{measure}"),
            });
        }
        columns.extend(kind.amount().map(str::to_owned));
        // A share is of the section's time; for counters, of that counter's total over the
        // kernels (values of different counters do not add up).
        let whole = |key: &Key| {
            if kind == Kind::Counters {
                key.own[1]
            } else {
                0
            }
        };
        let mut totals: FxHashMap<u32, f64> = FxHashMap::default();
        for (key, row) in &section.rows {
            *totals.entry(whole(key)).or_default() += row.durations.sum();
        }
        let mut rows: Vec<(Vec<String>, &Row, f64)> = section
            .rows
            .iter()
            .map(|(key, row)| (self.key_text(kind, key), row, totals[&whole(key)]))
            .collect();
        rows.sort_by(|a, b| {
            b.1.durations
                .sum()
                .total_cmp(&a.1.durations.sum())
                .then_with(|| a.0.cmp(&b.0))
        });
        let rows = rows
            .into_iter()
            .map(|(key, row, total)| {
                let d = &row.durations;
                let share = if total > 0.0 {
                    100.0 * d.sum() / total
                } else {
                    0.0
                };
                let mut values: Vec<evalexpr::Value> = key.into_iter().map(Text).collect();
                values.push(Int(d.count() as i64));
                values.extend(
                    [
                        d.sum(),
                        share,
                        d.mean(),
                        d.min(),
                        d.max(),
                        d.stddev(),
                        d.quantile(0.50),
                        d.quantile(0.95),
                        d.quantile(0.99),
                    ]
                    .map(Float),
                );
                if kind.amount().is_some() {
                    values.push(Int(i64::try_from(row.amount).unwrap_or(i64::MAX)));
                }
                values
            })
            .collect();
        Table {
            name: kind.name().to_owned(),
            columns,
            rows,
        }
    }
}

/// The size class of a copy, in the powers of 1024 engineers reason in.
fn size_class(bytes: u64) -> &'static str {
    match bytes {
        0..4096 => "<4KiB",
        4096..1_048_576 => "4KiB-1MiB",
        1_048_576..67_108_864 => "1MiB-64MiB",
        _ => ">=64MiB",
    }
}
