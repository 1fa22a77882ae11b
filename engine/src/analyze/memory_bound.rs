//! `memory-bound`: kernels whose memory unit is busy most of their time while the vector
//! ALU is not (AMD's `MemUnitBusy` against `VALUBusy`), with the L2 hit rate that says
//! whether the traffic reaches HBM.

use super::finding::{Finding, Severity};
use super::kernel_counters::{MIN_TIME_SHARE, evidence, l2_hit_percent, who};
use super::rule::{Rule, Setting, Values};
use super::trace::Trace;

pub struct MemoryBound;

const COUNTER: &str = "MemUnitBusy";

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_busy_percent",
        default: 70.0,
        about: "memory unit busy (percent of the kernel's time) from which a kernel is reported, \
                when its VALU is less busy",
    },
    Setting {
        name: "warning_l2_hit_percent",
        default: 50.0,
        about: "L2 hit rate (percent) below which the finding is a warning: the traffic goes \
                to HBM",
    },
    MIN_TIME_SHARE,
];

impl Rule for MemoryBound {
    fn id(&self) -> &'static str {
        "memory-bound"
    }

    fn about(&self) -> &'static str {
        "kernels bound by memory rather than compute (MemUnitBusy against VALUBusy, L2 hit)"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let limit = values.get("min_busy_percent");
        let flagged =
            trace.flagged_kernels(COUNTER, values.get("min_time_share"), |busy| busy >= limit);
        flagged
            .filter_map(|(c, own_ns)| {
                // Compute-bound, or both: the memory unit is not what holds the kernel.
                let valu = trace.counter_of(c, "VALUBusy");
                if valu.is_some_and(|valu| valu >= c.mean) {
                    return None;
                }
                let hit = l2_hit_percent(trace, c);
                let mut counters = vec![COUNTER, "VALUBusy", "MemUnitStalled", "L2CacheHit"];
                if trace.counter_of(c, "L2CacheHit").is_none() {
                    counters.extend(["TCC_HIT", "TCC_MISS"]);
                }
                Some(Finding {
                    rule: self.id(),
                    severity: match hit {
                        Some(hit) if hit < values.get("warning_l2_hit_percent") => {
                            Severity::Warning
                        }
                        _ => Severity::Info,
                    },
                    statement: format!(
                        "{} is memory-bound: its memory unit was busy {:.1}% of its time{}{}",
                        who(trace, c),
                        c.mean,
                        valu.map_or(String::new(), |v| format!(", its VALU {v:.1}%")),
                        hit.map_or(String::new(), |h| format!(", L2 hit rate {h:.1}%"))
                    ),
                    evidence: evidence(trace, c, own_ns, &counters),
                    // The time the memory unit is busy beyond the VALU.
                    at_stake_ns: (own_ns as f64 * (c.mean - valu.unwrap_or(0.0)) / 100.0) as u64,
                    advice: "move fewer bytes per FLOP: reuse data from LDS or registers \
                             (tiling), coalesce accesses so each wavefront reads whole cache \
                             lines, use narrower types, and fuse kernels that reread the same \
                             buffers",
                })
            })
            .collect()
    }
}
