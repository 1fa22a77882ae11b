//! `rocflow analyze`: deterministic rules over a run's records that draw conclusions a
//! profile leaves to the reader (the GPU waited on the host, copies blocked it, …), each
//! a [`Finding`] with its evidence, the time at stake and what to do about it.
//!
//! A rule is a module named after it: its id, its thresholds as [`Setting`]s (which
//! `--set rule.option=value` changes) and a check over the [`Trace`] that every rule reads.

mod call_index;
mod finding;
mod gate;
mod render;
mod roofline;
mod rule;
mod sol_table;
mod trace;

mod cdna3;
mod copy_tally;
mod kernel_counters;

mod atomic_contention;
mod collective_straggler;
mod gpu_idle;
mod launch_bound;
mod low_occupancy;
mod low_utilization;
mod memory_bound;
mod pageable_copy;
mod rank_imbalance;
mod serialized_copy;
mod speed_of_light;
mod steady_allocation;
mod sync_copy;
mod sync_hot_spot;
mod valu_utilization;

pub use finding::{Evidence, Finding, Severity, duration, percent};
pub use gate::{Gate, GateError};
pub use render::{Format, evidence, json, markdown, text};
pub use roofline::{Point as RooflinePoint, points as roofline};
pub use rule::{Rule, Setting, Values};
pub use sol_table::{Table as SpeedOfLightTable, table as speed_of_light_table};
pub use trace::{
    Allocation, Call, Collecting, Dispatch, Input, KernelCounter, Name, Pinned, Range, Span, Trace,
    Transfer, merged,
};

use rayon::prelude::*;

/// Every rule, in the order `rocflow analyze --help` lists them.
pub const RULES: &[&dyn Rule] = &[
    &gpu_idle::GpuIdle,
    &low_utilization::LowUtilization,
    &sync_copy::SyncCopy,
    &pageable_copy::PageableCopy,
    &serialized_copy::SerializedCopy,
    &launch_bound::LaunchBound,
    &sync_hot_spot::SyncHotSpot,
    &steady_allocation::SteadyAllocation,
    &low_occupancy::LowOccupancy,
    &valu_utilization::ValuUtilization,
    &memory_bound::MemoryBound,
    &atomic_contention::AtomicContention,
    &speed_of_light::SpeedOfLight,
    &rank_imbalance::RankImbalance,
    &collective_straggler::CollectiveStraggler,
];

/// Which of the rules run: where a campaign's analysis is split between its ranks (each
/// rank's rules on a worker of its own) and the ranks together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scope {
    /// Every rule.
    #[default]
    All,
    /// The rules that look at each process alone.
    Process,
    /// The rules that compare processes (ranks) with each other.
    Ranks,
}

impl Scope {
    fn holds(self, rule: &dyn Rule) -> bool {
        match self {
            Scope::All => true,
            Scope::Process => !rule.across_processes(),
            Scope::Ranks => rule.across_processes(),
        }
    }
}

/// Which rules run, with which settings.
#[derive(Debug)]
pub struct Selection {
    rules: Vec<(&'static dyn Rule, Values)>,
}

/// Why a selection of rules or a setting was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SelectionError {
    #[error("no rule `{0}` (the rules: {names})", names = rule_names())]
    UnknownRule(String),
    #[error("`{0}` is not RULE.OPTION=VALUE")]
    NotASetting(String),
    #[error("rule `{rule}` has no option `{option}` (its options: {options})")]
    UnknownOption {
        rule: String,
        option: String,
        options: String,
    },
    #[error("`{value}` for {rule}.{option} is not a number{unit}")]
    NotANumber {
        rule: String,
        option: String,
        value: String,
        unit: &'static str,
    },
}

fn rule_names() -> String {
    let names: Vec<&str> = RULES.iter().map(|r| r.id()).collect();
    names.join(", ")
}

fn rule(id: &str) -> Result<&'static dyn Rule, SelectionError> {
    RULES
        .iter()
        .copied()
        .find(|r| r.id() == id)
        .ok_or_else(|| SelectionError::UnknownRule(id.to_owned()))
}

impl Selection {
    /// Every rule, with its defaults: what the report shows.
    pub fn every_rule() -> Selection {
        Selection::new(&[], &[]).expect("every rule's defaults are valid")
    }

    /// The rules named (all of them when none is), with `sets` (`rule.option=value`)
    /// applied. A duration option (`…_ns`) also takes a unit: `min_gap_ns=50us`.
    pub fn new(only: &[String], sets: &[String]) -> Result<Selection, SelectionError> {
        let chosen: Vec<&'static dyn Rule> = if only.is_empty() {
            RULES.to_vec()
        } else {
            only.iter().map(|id| rule(id)).collect::<Result<_, _>>()?
        };
        let mut rules: Vec<(&'static dyn Rule, Values)> = chosen
            .into_iter()
            .map(|r| {
                let defaults = r.settings().iter().map(|s| (s.name, s.default));
                (r, Values(defaults.collect()))
            })
            .collect();
        for set in sets {
            let (key, value) = set
                .split_once('=')
                .ok_or_else(|| SelectionError::NotASetting(set.clone()))?;
            let (id, option) = key
                .trim()
                .split_once('.')
                .ok_or_else(|| SelectionError::NotASetting(set.clone()))?;
            let target = rule(id)?;
            let setting = (target.settings().iter())
                .find(|s| s.name == option)
                .ok_or_else(|| SelectionError::UnknownOption {
                    rule: id.to_owned(),
                    option: option.to_owned(),
                    options: (target.settings().iter())
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            let value = value.trim();
            let is_duration = setting.name.ends_with("_ns");
            let parsed = value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .or_else(|| {
                    is_duration
                        .then(|| crate::units::parse_duration(value).ok().map(|ns| ns as f64))
                        .flatten()
                });
            let parsed = parsed.ok_or_else(|| SelectionError::NotANumber {
                rule: id.to_owned(),
                option: option.to_owned(),
                value: value.to_owned(),
                unit: if is_duration {
                    " or a duration (50us, 2ms)"
                } else {
                    ""
                },
            })?;
            // A setting of a rule not selected changes nothing, and is no error.
            if let Some((_, values)) = rules.iter_mut().find(|(r, _)| r.id() == id) {
                values.0.insert(setting.name, parsed);
            }
        }
        Ok(Selection { rules })
    }

    /// Keeps the rules of `scope` only.
    pub fn within(mut self, scope: Scope) -> Selection {
        self.rules.retain(|(rule, _)| scope.holds(*rule));
        self
    }

    /// Runs the rules over a trace: findings with the most time at stake first.
    pub fn check(&self, trace: &Trace) -> Vec<Finding> {
        // Each rule walks the whole trace: one after another they were most of what a
        // 20 M-record `trace-all`'s report waited for after the sinks ended.
        let mut findings: Vec<Finding> = (self.rules.par_iter())
            .flat_map_iter(|(rule, values)| rule.check(trace, values))
            .collect();
        findings.sort_by(|a, b| {
            (b.at_stake_ns, b.severity)
                .cmp(&(a.at_stake_ns, a.severity))
                .then_with(|| a.rule.cmp(b.rule))
                .then_with(|| a.statement.cmp(&b.statement))
        });
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_applied() {
        let selection =
            Selection::new(&["gpu-idle".into()], &["gpu-idle.min_gap_ns=50us".into()]).unwrap();
        assert_eq!(selection.rules.len(), 1);
        assert_eq!(selection.rules[0].1.get("min_gap_ns"), 50_000.0);
        assert_eq!(
            Selection::new(&["nope".into()], &[]).unwrap_err(),
            SelectionError::UnknownRule("nope".into())
        );
        assert!(matches!(
            Selection::new(&[], &["gpu-idle.nope=1".into()]),
            Err(SelectionError::UnknownOption { .. })
        ));
        assert!(matches!(
            Selection::new(&[], &["gpu-idle.min_gap_ns=soon".into()]),
            Err(SelectionError::NotANumber { .. })
        ));
        assert_eq!(
            Selection::new(&[], &["gpu-idle".into()]).unwrap_err(),
            SelectionError::NotASetting("gpu-idle".into())
        );
    }

    #[test]
    fn every_rule_has_a_unique_id_and_documented_settings() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
        for rule in RULES {
            assert!(!rule.about().is_empty());
            for s in rule.settings() {
                assert!(!s.about.is_empty(), "{}.{}", rule.id(), s.name);
            }
        }
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_500), "1.50 us");
        assert_eq!(duration(33_812_000), "33.8 ms");
        assert_eq!(duration(250_000_000), "250 ms");
    }
}
