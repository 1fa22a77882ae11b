//! The transforms of a pipeline, compiled from the Plan and applied to chunks.
//!
//! Most transforms look at one record at a time and run on many chunks in parallel; those
//! that count (kernel iterations), gather (a dispatch's counter values, which may span
//! chunks) or call plugins see chunks one at a time in arrival order, and hand what they
//! still hold over when the records end. A record an expression fails on is dropped
//! (filter) or gets no value (derive), a chunk a plugin fails on goes on as it came; the
//! first failures are kept for the run's report, and a strict transform's first failure
//! stops the run.

mod aggregate;
mod counters;
mod expr;
mod kernels;
mod reduce;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use evalexpr::Value;
use regex::Regex;

use crate::catalog::StreamMeta;
use crate::chunk::{Chunk, Extra};
use crate::column::row;
use crate::plan::{TransformOpPlan, TransformPlan};
use crate::plugin::{Plugin, PluginTransform};
use crate::record::{Batch, Meta, RecordKind};

pub use aggregate::Table;
pub use expr::{ARGS, Expression};
pub use kernels::{Rename, demangle};

/// How many failures of one transform are kept with their record for the report.
const KEPT_FAILURES: usize = 5;

/// One transform, ready to run.
#[derive(Debug)]
pub struct Transform {
    pub name: String,
    kinds: Vec<RecordKind>,
    op: Op,
    strict: bool,
    failures: Failures,
}

#[derive(Debug)]
enum Op {
    Filter(Expression),
    Derive {
        column: Arc<str>,
        expression: Expression,
    },
    KernelName(Rename),
    KernelFilter(kernels::KernelFilter),
    TimeWindow {
        start_ns: u64,
        end_ns: Option<u64>,
    },
    DeriveCounters(counters::DeriveCounters),
    Reduce(reduce::Reduce),
    Aggregate(aggregate::Aggregate),
    /// An instance is called by one thread at a time, and sees chunks in arrival order.
    Plugin(Mutex<PluginTransform>),
}

/// Failures of a transform on individual records.
#[derive(Debug, Default)]
pub struct Failures {
    /// Records failed on.
    pub count: AtomicU64,
    /// Failures (each of one or more records), for the first messages.
    failures: AtomicU64,
    pub first: Mutex<Vec<String>>,
}

impl Failures {
    fn record(&self, message: impl FnOnce() -> String) {
        self.record_many(1, message);
    }

    /// A failure that concerns `records` records.
    fn record_many(&self, records: u64, message: impl FnOnce() -> String) {
        self.count.fetch_add(records, Ordering::Relaxed);
        if self.failures.fetch_add(1, Ordering::Relaxed) < KEPT_FAILURES as u64 {
            self.first
                .lock()
                .expect("no panics while holding the lock")
                .push(message());
        }
    }
}

impl Transform {
    /// Compiles a planned transform. The plan was validated, so failures here mean the
    /// plan was edited by hand; they are reported as such.
    pub fn new(plan: &TransformPlan) -> Result<Transform, String> {
        let regex = |pattern: &Option<String>| {
            pattern
                .as_deref()
                .map(Regex::new)
                .transpose()
                .map_err(|e| e.to_string())
        };
        let op = match &plan.op {
            TransformOpPlan::Filter { predicate } => Op::Filter(Expression::compile(predicate)?),
            TransformOpPlan::Derive { column, expression } => Op::Derive {
                column: column.as_str().into(),
                expression: Expression::compile(expression)?,
            },
            TransformOpPlan::KernelName {
                demangle,
                truncate,
                rename,
            } => Op::KernelName(Rename {
                demangle: *demangle,
                truncate: *truncate,
                rules: rename
                    .iter()
                    .map(|(p, r)| Ok((Regex::new(p).map_err(|e| e.to_string())?, r.clone())))
                    .collect::<Result<_, String>>()?,
            }),
            TransformOpPlan::KernelFilter {
                include,
                exclude,
                iterations,
            } => Op::KernelFilter(kernels::KernelFilter::new(
                regex(include)?,
                regex(exclude)?,
                iterations.clone(),
            )),
            TransformOpPlan::TimeWindow { start_ns, end_ns } => Op::TimeWindow {
                start_ns: *start_ns,
                end_ns: *end_ns,
            },
            TransformOpPlan::DeriveCounters { collected, derived } => {
                Op::DeriveCounters(counters::DeriveCounters::new(collected.clone(), derived)?)
            }
            TransformOpPlan::ReduceDimensions {
                counters,
                dimensions,
                op,
            } => Op::Reduce(reduce::Reduce::new(counters.clone(), dimensions, *op)),
            TransformOpPlan::Aggregate { group_by, metrics } => {
                Op::Aggregate(aggregate::Aggregate::new(group_by.clone(), metrics.clone()))
            }
            TransformOpPlan::Plugin { plugin, options } => {
                let plugin = Plugin::load(&plugin.library).map_err(|e| e.explain())?;
                let instance = PluginTransform::create(plugin, options).map_err(|e| e.explain())?;
                Op::Plugin(Mutex::new(instance))
            }
        };
        Ok(Transform {
            name: plan.name.clone(),
            kinds: plan.kinds.clone(),
            op,
            strict: plan.strict,
            failures: Failures::default(),
        })
    }

    pub fn applies_to(&self, kind: RecordKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// Whether chunks must come one at a time, in arrival order.
    pub fn sequential(&self) -> bool {
        matches!(
            self.op,
            Op::KernelFilter(_) | Op::DeriveCounters(_) | Op::Plugin(_)
        )
    }

    /// Metadata for the records the transform makes (derived counters), given a stream's
    /// metadata as it grows; applied to the stream before any of its later records.
    pub fn describe(&self, stream: u16, meta: &StreamMeta) -> Vec<Meta> {
        match &self.op {
            Op::DeriveCounters(derive) => derive.describe(stream, meta),
            _ => Vec::new(),
        }
    }

    /// Records the transform still holds when the run's records end, for the transforms
    /// after it and the sinks.
    pub fn finish(&self) -> Vec<Chunk> {
        match &self.op {
            Op::DeriveCounters(derive) => derive.finish(&self.failures),
            _ => Vec::new(),
        }
    }

    /// The renaming a kernel-name transform applies to kernel symbols, if this is one.
    pub fn rename(&self) -> Option<&Rename> {
        match &self.op {
            Op::KernelName(rename) => Some(rename),
            _ => None,
        }
    }

    pub fn failures(&self) -> &Failures {
        &self.failures
    }

    /// For a strict transform that failed on a record: what it failed on.
    pub fn strict_failure(&self) -> Option<String> {
        if !self.strict || self.failures.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let first = self.failures.first.lock().expect("no poison");
        Some(format!(
            "transform `{}` is strict and failed on a record: {}",
            self.name,
            first.first().map_or("", String::as_str)
        ))
    }

    /// Applies the transform to a chunk of a kind it takes. `origin_ns` is the run's first
    /// timestamp, for time windows.
    pub fn apply(&self, chunk: &mut Chunk, meta: &StreamMeta, origin_ns: u64) {
        match &self.op {
            Op::Filter(expression) => {
                let mut scratch = Vec::new();
                let keep: Vec<bool> = (0..chunk.len())
                    .map(|i| match expression.eval(chunk, i, meta, &mut scratch) {
                        Ok(Value::Boolean(keep)) => keep,
                        // A call without an argument the filter reads (see `expr`).
                        Ok(Value::Empty) => false,
                        Ok(other) => {
                            self.failures.record(|| {
                                format!(
                                    "{}: the filter gave {other}, not true or false",
                                    describe(chunk, i)
                                )
                            });
                            false
                        }
                        Err(e) => {
                            self.failures
                                .record(|| format!("{}: {e}", describe(chunk, i)));
                            false
                        }
                    })
                    .collect();
                chunk.retain(&keep);
            }
            Op::Derive { column, expression } => {
                let mut scratch = Vec::new();
                let values = (0..chunk.len())
                    .map(|i| {
                        expression
                            .eval(chunk, i, meta, &mut scratch)
                            .unwrap_or_else(|e| {
                                self.failures
                                    .record(|| format!("{}: {e}", describe(chunk, i)));
                                Value::Empty
                            })
                    })
                    .collect();
                chunk.extra.push(Extra {
                    name: Arc::clone(column),
                    values,
                });
            }
            // Applied to the kernel symbols as they arrive (see `rename`).
            Op::KernelName(_) => {}
            Op::KernelFilter(filter) => {
                let keep = filter.keep(chunk, meta);
                chunk.retain(&keep);
            }
            Op::TimeWindow { start_ns, end_ns } => {
                let keep: Vec<bool> = (0..chunk.len())
                    .map(|i| {
                        let at = row(&chunk.batch, i).start_ns().saturating_sub(origin_ns);
                        at >= *start_ns && end_ns.is_none_or(|end| at < end)
                    })
                    .collect();
                chunk.retain(&keep);
            }
            Op::DeriveCounters(derive) => {
                let stream = chunk.stream;
                if let Batch::CounterSample(samples) = &mut chunk.batch {
                    let taken = std::mem::take(samples);
                    *samples = derive.apply(stream, taken, meta, &self.failures);
                    // Added columns no longer line up with the samples.
                    chunk.extra.clear();
                }
            }
            Op::Reduce(reduce) => {
                if let Batch::CounterSample(samples) = &chunk.batch {
                    chunk.batch = Batch::CounterSample(reduce.apply(samples, meta));
                    // Added columns no longer line up with the reduced samples.
                    chunk.extra.clear();
                }
            }
            Op::Aggregate(aggregate) => aggregate.add(chunk, meta),
            Op::Plugin(plugin) => {
                let mut plugin = plugin.lock().expect("plugin calls catch their panics");
                if let Err(e) = plugin.apply(chunk, meta) {
                    // The records go on as they came.
                    self.failures.record_many(chunk.len() as u64, || {
                        format!(
                            "{} records of stream {}: {e}",
                            chunk.batch.kind().name(),
                            chunk.stream
                        )
                    });
                }
            }
        }
    }

    /// The aggregate table, for an aggregate transform, once every chunk has passed.
    pub fn table(&self) -> Option<Table> {
        match &self.op {
            Op::Aggregate(aggregate) => Some(aggregate.finish(&self.name)),
            _ => None,
        }
    }
}

/// Names a record in a failure message.
fn describe(chunk: &Chunk, i: usize) -> String {
    format!(
        "{} record #{i} of stream {}",
        chunk.batch.kind().name(),
        chunk.stream
    )
}
