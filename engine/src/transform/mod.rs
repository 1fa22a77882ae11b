//! The transforms of a pipeline at run time: each built from its compiled form in the Plan
//! (see `crate::plan::transform`, which owns each kind's options, checks and explanation)
//! and applied to chunks.
//!
//! Most transforms look at one record at a time and run on many chunks in parallel; those
//! that count (kernel iterations, samples), gather (a dispatch's counter values, which may
//! span chunks) or call plugins see chunks one at a time in arrival order, and hand what
//! they still hold over when the records end. A record an expression fails on is dropped
//! (filter) or gets no value (derive), a chunk a plugin fails on goes on as it came; the
//! first failures are kept for the run's report, and a strict transform's first failure
//! stops the run.

mod aggregate;
mod apply;
mod counted;
mod counters;
mod derive;
mod expr;
mod filter;
mod kernel_filter;
mod kernel_name;
mod plugin;
mod reduce;
mod rename;
mod sample;
mod time_window;

use std::sync::atomic::Ordering;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::plan::{TransformOpPlan, TransformPlan};
use crate::record::{Meta, RecordKind};
use crate::table::Table;
use apply::{Apply, At};

pub use apply::Failures;
pub use expr::Expression;
pub use rename::Rename;

/// One transform, ready to run.
#[derive(Debug)]
pub struct Transform {
    pub name: String,
    kinds: Vec<RecordKind>,
    op: Box<dyn Apply>,
    strict: bool,
    failures: Failures,
}

impl Transform {
    /// Compiles a planned transform.
    pub fn new(plan: &TransformPlan) -> Result<Transform, String> {
        Ok(Transform {
            name: plan.name.clone(),
            kinds: plan.kinds.clone(),
            op: build(&plan.op, &plan.kinds)?,
            strict: plan.strict,
            failures: Failures::default(),
        })
    }

    pub fn applies_to(&self, kind: RecordKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// Whether chunks must come one at a time, in arrival order.
    pub fn sequential(&self) -> bool {
        self.op.sequential()
    }

    /// Metadata for the records the transform makes (derived counters), given a stream's
    /// metadata as it grows; applied to the stream before any of its later records.
    pub fn describe(&self, stream: u16, meta: &StreamMeta) -> Vec<Meta> {
        self.op.describe(stream, meta)
    }

    /// Records the transform still holds when the run's records end, for the transforms
    /// after it and the sinks.
    pub fn finish(&self) -> Vec<Chunk> {
        self.op.finish(&self.failures)
    }

    /// The renaming a kernel-name transform applies to kernel symbols, if this is one.
    pub fn rename(&self) -> Option<&Rename> {
        self.op.rename()
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
        let at = At {
            meta,
            origin_ns,
            failures: &self.failures,
        };
        self.op.apply(chunk, &at);
    }

    /// The aggregate table, for an aggregate transform, once every chunk has passed.
    pub fn table(&self) -> Option<Table> {
        self.op.table(&self.name)
    }
}

/// What a compiled transform does, by its kind, on records of `kinds`.
fn build(op: &TransformOpPlan, kinds: &[RecordKind]) -> Result<Box<dyn Apply>, String> {
    match op {
        TransformOpPlan::Filter(plan) => filter::build(plan),
        TransformOpPlan::Derive(plan) => derive::build(plan),
        TransformOpPlan::KernelName(plan) => kernel_name::build(plan),
        TransformOpPlan::KernelFilter(plan) => kernel_filter::build(plan),
        TransformOpPlan::TimeWindow(plan) => time_window::build(plan),
        TransformOpPlan::ReduceDimensions(plan) => reduce::build(plan),
        TransformOpPlan::Aggregate(plan) => aggregate::build(plan),
        TransformOpPlan::Sample(plan) => sample::build(plan),
        TransformOpPlan::Plugin(plan) => plugin::build(plan),
        TransformOpPlan::DeriveCounters(plan) => counters::build(plan, kinds),
    }
}
