//! `serialized-copy`: copies that run between kernels on the one stream a process puts
//! all its work of a GPU on. A stream runs its work in order, so such a copy waits for
//! the kernel before it and holds up the kernel after it, while the GPU's copy engines
//! could have run it beside the kernels from a stream of its own.
//!
//! The exact pattern, per process and GPU, from each dispatch's and copy's HIP stream
//! (work whose stream is unknown is left out), over the copies made by asynchronous calls
//! (a synchronous call's thread waits for its copy on any stream: that is `sync-copy`'s
//! finding):
//! - the process's kernels and those copies on the GPU all went on one stream, so none of
//!   the copies had a stream of their own to overlap from;
//! - a copy overlaps none of the process's kernels on the GPU (it ran serialized), and
//!   runs back to back with one: a kernel ends at most `max_gap_ns` before it starts, or
//!   starts at most `max_gap_ns` after it ends (its adjacent kernel, the one before where
//!   both are).
//!
//! The time at stake is, over those copies, the shorter of each copy's time and its
//! adjacent kernel's: what overlapping the two could win back at most. Whether the copy's
//! data feeds the kernel after it (which would keep them in order) the records do not
//! say; the advice says how to overlap them anyway.

use std::collections::{BTreeMap, BTreeSet};

use super::copy_tally::{ByCall, CopyTally};
use super::finding::{Evidence, Finding, Severity, duration, percent};
use super::rule::{Rule, Setting, Values};
use super::trace::{Dispatch, Total, Trace, Transfer};

pub struct SerializedCopy;

const SETTINGS: &[Setting] = &[
    Setting {
        name: "min_copies",
        default: 10.0,
        about: "serialized copies a process must make on a GPU for a finding",
    },
    Setting {
        name: "max_gap_ns",
        default: 50_000.0,
        about: "the most time between a copy and a kernel next to it on the stream for the \
                two to run back to back",
    },
    Setting {
        name: "warning_share",
        default: 0.1,
        about: "share of the process's time at stake from which the finding is a warning",
    },
];

impl Rule for SerializedCopy {
    fn id(&self) -> &'static str {
        "serialized-copy"
    }

    fn about(&self) -> &'static str {
        "copies that run back to back with kernels on the one stream a process uses for a \
         GPU, where a stream of their own could overlap them with the kernels"
    }

    fn settings(&self) -> &'static [Setting] {
        SETTINGS
    }

    fn check(&self, trace: &Trace, values: &Values) -> Vec<Finding> {
        let max_gap = values.get("max_gap_ns") as u64;
        let mut kernels: BTreeMap<(u32, u32), Vec<&Dispatch>> = BTreeMap::new();
        for d in trace.dispatches.iter().filter(|d| d.stream.is_some()) {
            kernels.entry((d.pid, d.agent)).or_default().push(d);
        }
        let mut copies: BTreeMap<(u32, u32), Vec<&Transfer>> = BTreeMap::new();
        let asynchronous = |c: &Transfer| {
            let call = trace.caller(c.pid, c.correlation_id);
            !call.is_some_and(|call| super::sync_copy::synchronous(call.function))
        };
        for c in trace.copies.iter().filter(|c| c.stream.is_some()) {
            if let Some(gpu) = c.gpu.filter(|_| asynchronous(c)) {
                copies.entry((c.pid, gpu)).or_default().push(c);
            }
        }
        let mut findings = Vec::new();
        for ((pid, gpu), copies) in copies {
            let Some(kernels) = kernels.get_mut(&(pid, gpu)) else {
                continue;
            };
            let streams: BTreeSet<u64> = (kernels.iter().filter_map(|k| k.stream))
                .chain(copies.iter().filter_map(|c| c.stream))
                .collect();
            let [stream] = Vec::from_iter(streams)[..] else {
                continue;
            };
            kernels.sort_by_key(|k| k.span.start_ns);
            let adjacent = Adjacent::new(kernels, max_gap);
            let serialized: Vec<(&Transfer, &Dispatch)> = (copies.iter())
                .filter_map(|&c| Some((c, adjacent.to(c)?)))
                .collect();
            if (serialized.len() as f64) < values.get("min_copies") {
                continue;
            }
            findings.push(self.finding(trace, values, (pid, gpu, stream), &serialized));
        }
        findings
    }
}

impl SerializedCopy {
    fn finding(
        &self,
        trace: &Trace,
        values: &Values,
        (pid, gpu, stream): (u32, u32, u64),
        serialized: &[(&Transfer, &Dispatch)],
    ) -> Finding {
        let at_stake = (serialized.iter())
            .map(|(c, k)| c.span.len().min(k.span.len()))
            .total();
        let bytes = serialized.iter().map(|(c, _)| c.bytes).total();
        let time = serialized.iter().map(|(c, _)| c.span.len()).total();
        // Per (function, direction): copies, bytes, time; per adjacent kernel: copies
        // next to it, its time.
        let mut by_call: ByCall<CopyTally> = BTreeMap::new();
        let mut by_kernel: BTreeMap<&str, [u64; 2]> = BTreeMap::new();
        for (c, k) in serialized {
            let function =
                (trace.caller(c.pid, c.correlation_id)).map_or("<unknown>", |call| call.function);
            by_call.entry((function, c.direction)).or_default().add(c);
            let row = by_kernel.entry(trace.name(k.kernel)).or_default();
            row[0] += 1;
            row[1] = row[1].saturating_add(k.span.len());
        }
        let mut evidence = vec![Evidence::Stream {
            pid,
            agent: gpu,
            stream,
        }];
        evidence.extend(
            by_call
                .into_iter()
                .map(|((function, direction), r)| r.evidence(function, direction)),
        );
        evidence.extend(by_kernel.into_iter().map(|(name, r)| Evidence::Kernel {
            name: name.to_owned(),
            dispatches: r[0],
            total_ns: r[1],
        }));
        let whole = trace.span_of(pid).map_or(0, |s| s.len()) as f64;
        let copies = serialized.len();
        Finding {
            rule: self.id(),
            severity: if at_stake as f64 >= values.get("warning_share") * whole {
                Severity::Warning
            } else {
                Severity::Info
            },
            statement: format!(
                "process {pid} ran {copies} copies of {bytes} bytes ({}) back to back with its \
                 kernels on stream {stream}, its only stream on GPU {gpu}: up to {} ({} of \
                 its time) could overlap",
                duration(time),
                duration(at_stake),
                percent(at_stake as f64, whole)
            ),
            evidence,
            at_stake_ns: at_stake,
            advice: "issue the copies with hipMemcpyAsync on a stream of their own (and \
                     hipHostMalloc'd host memory) so the copy engines run them while the \
                     kernels run; order them against the kernels that need their data with \
                     hipEventRecord and hipStreamWaitEvent, double-buffering across \
                     iterations where the next kernel needs the copy",
        }
    }
}

/// A process's kernels on a GPU, by start, for the kernel a copy runs back to back with.
struct Adjacent<'a> {
    kernels: &'a [&'a Dispatch],
    /// For each `i`, the kernel that ends last among the first `i` (`None` for 0).
    last_ended: Vec<Option<&'a Dispatch>>,
    max_gap: u64,
}

impl<'a> Adjacent<'a> {
    fn new(kernels: &'a [&'a Dispatch], max_gap: u64) -> Adjacent<'a> {
        let mut last_ended = Vec::with_capacity(kernels.len() + 1);
        last_ended.push(None);
        for &k in kernels {
            let last: Option<&Dispatch> = *last_ended.last().expect("starts with None");
            let later = last.is_none_or(|l| k.span.end_ns > l.span.end_ns);
            last_ended.push(if later { Some(k) } else { last });
        }
        Adjacent {
            kernels,
            last_ended,
            max_gap,
        }
    }

    /// The kernel `copy` runs back to back with, if it overlaps none.
    fn to(&self, copy: &Transfer) -> Option<&'a Dispatch> {
        let span = copy.span;
        // The kernels that start before the copy ends; any that ends after it starts
        // overlaps it.
        let i = self
            .kernels
            .partition_point(|k| k.span.start_ns < span.end_ns);
        let before = self.last_ended[i];
        if before.is_some_and(|k| k.span.end_ns > span.start_ns) {
            return None;
        }
        let close = |gap: u64| gap <= self.max_gap;
        let before = before.filter(|k| close(span.start_ns - k.span.end_ns));
        let after = (self.kernels.get(i).copied())
            .filter(|k| close(k.span.start_ns.saturating_sub(span.end_ns)));
        before.or(after)
    }
}
