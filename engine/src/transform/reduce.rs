//! `reduce_dimensions`: combines the values of one counter of one dispatch across the
//! listed dimensions (the coordinates of reduced dimensions become 0). A counter context's
//! `reduce` entries compile into the same stage; a device counting context's reduce the
//! values of one read the same way.
//!
//! This is what it does to records; its options, checks and explanation are the Plan's
//! ([`crate::plan::transform::reduce`]).

use rustc_hash::FxHashMap as HashMap;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::record::Batch;
use crate::sdk::COUNTER_DIMENSIONS;
use rocflow_core::contexts::ReduceOp;

use super::apply::{Apply, At};
use super::counted::{Counted, Group};
use crate::plan::transform::reduce::Plan;

/// The transform a plan of this kind compiled to, ready to run.
pub(super) fn build(plan: &Plan) -> Result<Box<dyn Apply>, String> {
    Ok(Box::new(Reduce::new(
        plan.counters.clone(),
        &plan.dimensions,
        plan.op,
    )))
}

impl Apply for Reduce {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let reduced = match &chunk.batch {
            Batch::CounterSample(samples) => Batch::CounterSample(self.reduce(samples, at.meta)),
            Batch::DeviceCounterSample(samples) => {
                Batch::DeviceCounterSample(self.reduce(samples, at.meta))
            }
            _ => return,
        };
        chunk.batch = reduced;
        // Added columns no longer line up with the reduced samples.
        chunk.extra.clear();
    }
}

#[derive(Debug)]
struct Reduce {
    /// Counter names the reduction applies to; empty means all.
    counters: Vec<String>,
    /// For each dimension of [`COUNTER_DIMENSIONS`], whether it is reduced.
    reduced: [bool; 7],
    op: ReduceOp,
}

impl Reduce {
    fn new(counters: Vec<String>, dimensions: &[String], op: ReduceOp) -> Reduce {
        let reduced =
            std::array::from_fn(|i| dimensions.iter().any(|d| d == COUNTER_DIMENSIONS[i]));
        Reduce {
            counters,
            reduced,
            op,
        }
    }

    /// Reduces the samples of a chunk; samples of other counters pass unchanged. Groups
    /// keep the order of their first sample.
    fn reduce<C: Counted>(&self, samples: &[C], meta: &StreamMeta) -> Vec<C> {
        let mut out: Vec<C> = Vec::with_capacity(samples.len());
        let mut counts: Vec<u32> = Vec::with_capacity(samples.len());
        let mut groups: HashMap<(Group, u32, [u16; 7]), usize> = HashMap::default();
        // Whether each counter id is reduced, decided once per chunk: a chunk holds few
        // counters and many samples.
        let mut decided: Vec<(u32, bool)> = Vec::new();
        let mut applies = |id: u32| match decided.iter().find(|(d, _)| *d == id) {
            Some(&(_, yes)) => yes,
            None => {
                let name = meta.counter_name(id);
                let yes = self.counters.is_empty() || self.counters.iter().any(|c| c == name);
                decided.push((id, yes));
                yes
            }
        };
        for sample in samples {
            if !applies(sample.counter_id()) {
                out.push(*sample);
                counts.push(1);
                continue;
            }
            let mut coords = sample.coordinates();
            for (coord, reduced) in coords.iter_mut().zip(self.reduced) {
                if reduced {
                    *coord = 0;
                }
            }
            let key = (sample.group(), sample.counter_id(), coords);
            match groups.get(&key) {
                Some(&at) => {
                    let (target, value) = (out[at].value_mut(), sample.value());
                    *target = match self.op {
                        ReduceOp::Sum | ReduceOp::Avg => *target + value,
                        ReduceOp::Min => target.min(value),
                        ReduceOp::Max => target.max(value),
                    };
                    counts[at] += 1;
                }
                None => {
                    groups.insert(key, out.len());
                    out.push(sample.with(sample.counter_id(), coords, sample.value()));
                    counts.push(1);
                }
            }
        }
        if self.op == ReduceOp::Avg {
            for (sample, &count) in out.iter_mut().zip(&counts) {
                *sample.value_mut() /= f64::from(count);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{CounterInfo, CounterSample, Meta};

    /// SQ_WAVES over 2 XCCs x 2 shader engines, and one GRBM value, hand-computed.
    fn samples() -> Vec<CounterSample> {
        let mut out = Vec::new();
        for (xcc, se, value) in [(0, 0, 1.0), (0, 1, 2.0), (1, 0, 3.0), (1, 1, 10.0)] {
            out.push(CounterSample {
                counter_id: 1,
                dispatch_id: 7,
                xcc,
                shader_engine: se,
                value,
                ..Default::default()
            });
        }
        out.push(CounterSample {
            counter_id: 2,
            dispatch_id: 7,
            value: 5.0,
            ..Default::default()
        });
        out
    }

    fn meta() -> StreamMeta {
        let mut catalog = crate::catalog::Catalog::default();
        let counter = |id, name: &str| {
            Meta::Counter(CounterInfo {
                id,
                agent: 0,
                name: name.into(),
                description: String::new(),
                dimensions: Vec::new(),
            })
        };
        catalog.apply(0, vec![counter(1, "SQ_WAVES"), counter(2, "GRBM_COUNT")]);
        catalog.stream(0).clone()
    }

    fn values(out: &[CounterSample]) -> Vec<(u32, u16, u16, f64)> {
        out.iter()
            .map(|s| (s.counter_id, s.xcc, s.shader_engine, s.value))
            .collect()
    }

    #[test]
    fn every_op_over_one_and_two_dimensions() {
        let dims = |d: &[&str]| d.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = Reduce::new(
            vec!["SQ_WAVES".into()],
            &dims(&["DIMENSION_XCC", "DIMENSION_SHADER_ENGINE"]),
            ReduceOp::Sum,
        );
        assert_eq!(
            values(&all.reduce(&samples(), &meta())),
            [(1, 0, 0, 16.0), (2, 0, 0, 5.0)]
        );
        // Over XCCs, by each operation: the first dispatch's two XCCs, the second's one.
        for (op, (first, second)) in [
            (ReduceOp::Sum, (4.0, 12.0)),
            (ReduceOp::Avg, (2.0, 6.0)),
            (ReduceOp::Min, (1.0, 2.0)),
            (ReduceOp::Max, (3.0, 10.0)),
        ] {
            let xcc = Reduce::new(Vec::new(), &dims(&["DIMENSION_XCC"]), op);
            assert_eq!(
                values(&xcc.reduce(&samples(), &meta())),
                [(1, 0, 0, first), (1, 0, 1, second), (2, 0, 0, 5.0)],
                "{op:?}"
            );
        }
    }
}
