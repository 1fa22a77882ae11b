//! What a rule is: an id, its settings and a check of a trace.

use std::collections::BTreeMap;

use super::finding::Finding;
use super::trace::Trace;

/// A threshold of a rule, which `--set rule.name=value` changes.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub default: f64,
    pub about: &'static str,
}

/// A rule's settings, defaults overridden by the user's.
#[derive(Debug, Clone, Default)]
pub struct Values(pub(super) BTreeMap<&'static str, f64>);

impl Values {
    /// The value of one of the rule's own settings.
    pub fn get(&self, name: &str) -> f64 {
        match self.0.get(name) {
            Some(&value) => value,
            None => panic!("`{name}` is not a declared setting of the rule"),
        }
    }
}

/// A rule: a check of a run for one pattern.
pub trait Rule: Sync {
    /// Its name on the command line and in findings (`sync-copy`).
    fn id(&self) -> &'static str;
    /// What it finds, in a sentence.
    fn about(&self) -> &'static str;
    fn settings(&self) -> &'static [Setting];
    /// Whether it compares processes (MPI ranks) with each other: the others find what
    /// they find in each process alone, so a campaign runs them rank by rank.
    fn across_processes(&self) -> bool {
        false
    }
    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding>;
}

impl std::fmt::Debug for dyn Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The time of process `pid`'s threads among `threads` (process, thread) together: its
/// run's span once per thread, which a share of blocked time is of.
pub fn thread_time(
    trace: &Trace,
    pid: u32,
    threads: &std::collections::BTreeSet<(u32, u32)>,
) -> f64 {
    let span = trace.span_of(pid).map_or(0, |s| s.len()) as f64;
    let count = threads.range((pid, 0)..=(pid, u32::MAX)).count();
    span * count.max(1) as f64
}
