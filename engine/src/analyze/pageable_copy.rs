//! `pageable-copy`: copies between a GPU and host memory that is not pinned. The driver
//! cannot hand pageable memory to the GPU's copy engines: it stages the data through a
//! pinned buffer of its own, a chunk at a time, so the copy runs slower and an "async"
//! copy waits for the host.
//!
//! A copy's record gives its host address (rocprofiler-sdk's memory copy record has the
//! source and destination addresses); pinned memory is what the process allocated from a
//! CPU agent's memory (`hipHostMalloc`, seen by memory allocation tracing) or registered
//! (`hipHostRegister`, seen through its HIP API arguments). An address in none of those
//! is pageable. A process that pinned nothing at all is passed over: without allocation
//! tracing or the API arguments, pinned memory looks the same as pageable.

use std::collections::BTreeMap;

use super::copy_tally::{ByCall, CopyTally};
use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Total, Trace};

pub struct PageableCopy;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_copies",
        default: 10.0,
        about: "copies from pageable memory a process must make for a finding",
    },
    Setting {
        name: "warning_share",
        default: 0.1,
        about: "share of the process's time its pageable copies take from which the finding \
                is a warning",
    },
];

impl Rule for PageableCopy {
    fn id(&self) -> &'static str {
        "pageable-copy"
    }

    fn about(&self) -> &'static str {
        "copies between a GPU and host memory that is not pinned, which the driver stages \
         through a buffer of its own"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        // Per process, per (function, direction): copies, bytes, copy time.
        let mut by_process: BTreeMap<u32, ByCall<CopyTally>> = BTreeMap::new();
        for copy in &trace.copies {
            let Some(address) = copy.host_address else {
                continue;
            };
            if !trace.pins(copy.pid) || trace.is_pinned(copy.pid, address) {
                continue;
            }
            let function = trace
                .caller(copy.pid, copy.correlation_id)
                .map_or("<unknown>", |call| call.function);
            (by_process.entry(copy.pid).or_default())
                .entry((function, copy.direction))
                .or_default()
                .add(copy);
        }
        let mut findings = Vec::new();
        for (pid, rows) in by_process {
            let copies: u64 = rows.values().map(|r| r.copies).sum();
            if (copies as f64) < values.get("min_copies") {
                continue;
            }
            let bytes = rows.values().map(|r| r.bytes).total();
            let time = rows.values().map(|r| r.ns).total();
            let whole = trace.span_of(pid).map_or(0, |s| s.len()) as f64;
            let mut evidence: Vec<(u64, Evidence)> = rows
                .iter()
                .map(|(&(function, direction), r)| (r.ns, r.evidence(function, direction)))
                .collect();
            evidence.sort_by_key(|e| std::cmp::Reverse(e.0));
            findings.push(Finding {
                rule: self.id(),
                severity: if time as f64 >= values.get("warning_share") * whole {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                statement: format!(
                    "process {pid} made {copies} copies of {bytes} bytes between a GPU and \
                     pageable host memory, which took {} ({} of its time)",
                    duration(time),
                    percent(time as f64, whole)
                ),
                evidence: evidence.into_iter().map(|(_, e)| e).collect(),
                at_stake_ns: time,
                advice: "allocate the host buffers a GPU copies from and to with hipHostMalloc, \
                         or pin them once with hipHostRegister, so the copy engines reach them \
                         directly instead of the driver staging them",
            });
        }
        findings
    }
}
