//! `atomic-contention`: kernels whose atomics wait on each other (AMD's
//! `SerializedAtomicRatio`: cycles serialized on conflicting atomics over all cycles spent
//! on atomics; AMD calls above 0.10 high).

use super::finding::{Finding, Severity};
use super::kernel_counters::{MIN_TIME_SHARE, evidence, who};
use super::rule::{Rule, Setting, Values};
use super::trace::Trace;

pub struct AtomicContention;

const COUNTER: &str = "SerializedAtomicRatio";

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_ratio",
        default: 0.10,
        about: "share of atomic cycles serialized on conflicts from which a kernel is reported",
    },
    Setting {
        name: "warning_ratio",
        default: 0.30,
        about: "share from which the finding is a warning",
    },
    MIN_TIME_SHARE,
];

impl Rule for AtomicContention {
    fn id(&self) -> &'static str {
        "atomic-contention"
    }

    fn about(&self) -> &'static str {
        "kernels whose atomics serialize on the same addresses (SerializedAtomicRatio)"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let limit = values.get("min_ratio");
        let flagged = trace.flagged_kernels(COUNTER, values.get("min_time_share"), |ratio| {
            ratio >= limit
        });
        flagged
            .map(|(c, own_ns)| Finding {
                rule: self.id(),
                severity: if c.mean >= values.get("warning_ratio") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "{}'s atomics spent {:.0}% of their cycles serialized on conflicts over {} \
                     dispatches",
                    who(trace, c),
                    100.0 * c.mean,
                    c.dispatches
                ),
                evidence: evidence(trace, c, own_ns, &[COUNTER]),
                // The kernel's time in proportion to the atomic cycles lost to conflicts.
                at_stake_ns: (own_ns as f64 * c.mean.clamp(0.0, 1.0)) as u64,
                advice: "spread the atomics over more addresses: reduce within a wavefront \
                         or workgroup first (LDS, cross-lane operations) and issue one atomic \
                         per group, or give each group its own slot to combine afterwards",
            })
            .collect()
    }
}
