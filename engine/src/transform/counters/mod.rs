//! Whole dispatches of counter samples, and the derived counters computed from them; the
//! same for the reads of device counting, whose values a read gives together as a dispatch
//! does (see [`Counted`]).
//!
//! A dispatch's counter values reach rocflow in buffer order, and a buffer delivery may end
//! in the middle of a dispatch: its values then come in two frames, two chunks. Derived
//! counters and dimension reductions need every value of a dispatch, so this transform
//! holds a dispatch's samples until its last value arrives (the collected counters'
//! dimensions, in the metadata, say how many there are) and puts them, followed by the
//! derived counters, in the chunk that completes the dispatch. Only incomplete dispatches
//! are held; those still incomplete when the run ends pass on as they are, without derived
//! counters, and are reported.

mod derived;

use std::sync::Mutex;

use rocflow_counters::expr::{Coordinates, Dimension, Instance, Tensor};
use rustc_hash::FxHashMap as HashMap;

use crate::catalog::StreamMeta;
use crate::chunk::Chunk;
use crate::record::{CounterInfo, CounterSample, DeviceCounterSample, Meta, RecordKind};

use super::apply::{Apply, At, Failures};
use super::counted::{Counted, Group};
use crate::plan::transform::counters::Plan;

/// The transform a plan of this kind compiled to, ready to run on records of `kinds`: a
/// device counting context's stage takes its reads, a dispatch counting context's its
/// dispatches.
pub(crate) fn build(plan: &Plan, kinds: &[RecordKind]) -> Result<Box<dyn Apply>, String> {
    let (collected, derived) = (plan.collected.clone(), &plan.derived);
    Ok(if kinds == [RecordKind::DeviceCounterSample] {
        Box::new(DeriveCounters::<DeviceCounterSample>::new(
            collected, derived,
        )?)
    } else {
        Box::new(DeriveCounters::<CounterSample>::new(collected, derived)?)
    })
}

impl<C: Counted + std::fmt::Debug + Send + 'static> Apply for DeriveCounters<C> {
    fn apply(&self, chunk: &mut Chunk, at: &At<'_>) {
        let stream = chunk.stream;
        if let Some(samples) = C::of(&mut chunk.batch) {
            let taken = std::mem::take(samples);
            *samples = self.gather(stream, taken, at.meta, at.failures);
            // Added columns no longer line up with the samples.
            chunk.extra.clear();
        }
    }

    /// A dispatch's values may span chunks, which must come in order.
    fn sequential(&self) -> bool {
        true
    }

    fn describe(&self, stream: u16, meta: &StreamMeta) -> Vec<Meta> {
        self.derived_counters(stream, meta)
    }

    fn finish(&self, failures: &Failures) -> Vec<Chunk> {
        self.unfinished(failures)
    }
}
use derived::DerivedCounters;

/// A dispatch (or a device read): its stream and [group](Counted::group).
type DispatchKey = (u16, Group);

/// A counter's dimensions, as its metadata lists them: name and size.
type Dimensions = Vec<(String, u32)>;

#[derive(Debug)]
struct DeriveCounters<C> {
    /// The counters the GPU collects: a dispatch has all their values.
    collected: Vec<String>,
    derived: DerivedCounters,
    /// Per stream, the ids [`DeriveCounters::describe`] gave the derived counters, in
    /// their order: a stream may have a counter of the same name from the SDK.
    ids: Mutex<HashMap<u16, Vec<u32>>>,
    open: Mutex<HashMap<DispatchKey, Open<C>>>,
}

/// A dispatch whose values have not all arrived.
#[derive(Debug)]
struct Open<C> {
    expected: usize,
    samples: Vec<C>,
}

impl<C: Counted> DeriveCounters<C> {
    fn new(collected: Vec<String>, derived: &[(String, String)]) -> Result<Self, String> {
        Ok(DeriveCounters {
            collected,
            derived: DerivedCounters::new(derived)?,
            ids: Mutex::default(),
            open: Mutex::default(),
        })
    }

    /// Takes a chunk's samples in arrival order; gives back those of complete dispatches,
    /// each followed by its derived counters, and of agents without collected counters.
    fn gather(
        &self,
        stream: u16,
        samples: Vec<C>,
        meta: &StreamMeta,
        failures: &Failures,
    ) -> Vec<C> {
        let ids = self.ids.lock().expect("no poison").get(&stream).cloned();
        let ids = ids.as_deref().unwrap_or_default();
        // Values per dispatch, per agent: the metadata does not change during a chunk.
        let mut expected: Vec<(u32, usize)> = Vec::new();
        let mut expected = |agent: u32| match expected.iter().find(|(a, _)| *a == agent) {
            Some(&(_, n)) => n,
            None => {
                let n = self.values_per_dispatch(meta, agent);
                expected.push((agent, n));
                n
            }
        };
        // Values of other counters (the device metrics a read takes with its counters)
        // pass on as they are, ahead of the chunk's gathered values.
        let mut decided: Vec<(u32, bool)> = Vec::new();
        let mut gathers = |id: u32| match decided.iter().find(|(d, _)| *d == id) {
            Some(&(_, yes)) => yes,
            None => {
                let yes = self.collected.iter().any(|c| c == meta.counter_name(id));
                decided.push((id, yes));
                yes
            }
        };
        let (samples, mut out): (Vec<C>, Vec<C>) =
            samples.into_iter().partition(|s| gathers(s.counter_id()));
        let mut open = self.open.lock().expect("no poison");
        out.reserve(samples.len());
        let mut rest = &samples[..];
        // A dispatch's values arrive together: most dispatches are whole in one chunk.
        while let Some(first) = rest.first() {
            let run = rest
                .iter()
                .take_while(|s| s.group() == first.group())
                .count();
            let (dispatch, tail) = rest.split_at(run);
            rest = tail;
            let key = (stream, first.group());
            let values = expected(first.agent());
            // Nothing says how many values to wait for.
            if values == 0 {
                out.extend_from_slice(dispatch);
                continue;
            }
            if run == values && !open.contains_key(&key) {
                let at = out.len();
                out.extend_from_slice(dispatch);
                let derived = self.derive(&out[at..], ids, meta, failures);
                out.extend(derived);
                continue;
            }
            for &sample in dispatch {
                // Not sized by `values`: a spool's metadata may promise more than comes.
                let held = open.entry(key).or_insert_with(|| Open {
                    expected: values,
                    samples: Vec::new(),
                });
                held.samples.push(sample);
                if held.samples.len() == held.expected {
                    let samples = open.remove(&key).expect("just filled").samples;
                    let derived = self.derive(&samples, ids, meta, failures);
                    out.extend(samples);
                    out.extend(derived);
                }
            }
        }
        out
    }

    /// The samples of the dispatches still incomplete at the end of the run, a chunk per
    /// stream; each such dispatch is reported.
    fn unfinished(&self, failures: &Failures) -> Vec<Chunk> {
        let mut left: Vec<(DispatchKey, Open<C>)> =
            std::mem::take(&mut *self.open.lock().expect("no poison"))
                .into_iter()
                .collect();
        left.sort_unstable_by_key(|(key, _)| *key);
        let mut chunks: Vec<Chunk> = Vec::new();
        for ((stream, (_, agent, group)), open) in left {
            failures.record_many(open.samples.len() as u64, || {
                format!(
                    "{} {group} on agent {agent}: {} of its {} counter values arrived; they pass on without derived counters",
                    C::GROUP,
                    open.samples.len(),
                    open.expected
                )
            });
            match chunks.last_mut() {
                Some(last) if last.stream == stream => C::of(&mut last.batch)
                    .expect("chunks of this kind")
                    .extend(open.samples),
                _ => chunks.push(Chunk::new(stream, C::batch(open.samples))),
            }
        }
        chunks
    }

    /// Describes the derived counters to a stream once its collected counters are
    /// described, so that sinks can name them: each gets an id no counter of the stream
    /// has, and the dimensions its values vary along on the first agent that computes it.
    fn derived_counters(&self, stream: u16, meta: &StreamMeta) -> Vec<Meta> {
        let mut ids = self.ids.lock().expect("no poison");
        if self.derived.is_empty() || ids.contains_key(&stream) {
            return Vec::new();
        }
        let mut agents = meta.agents.iter().map(|a| a.index).filter(|&agent| {
            (self.collected.iter()).any(|name| counter(meta, name, agent).is_some())
        });
        let Some(first) = agents.next() else {
            return Vec::new();
        };
        let mut shapes: Vec<Option<(u32, Dimensions)>> =
            self.derived.iter().map(|_| None).collect();
        for agent in std::iter::once(first).chain(agents) {
            let outcomes = self.derived.evaluate(|name| shape(meta, name, agent));
            for (shape, outcome) in shapes.iter_mut().zip(outcomes) {
                if let (None, Some(Ok(tensor))) = (&shape, outcome) {
                    *shape = Some((agent, dimensions(&tensor)));
                }
            }
        }
        let mut free_ids = (0..=u32::MAX)
            .rev()
            .filter(|id| !meta.counters.contains_key(id));
        let described: Vec<Meta> = self
            .derived
            .iter()
            .zip(shapes)
            .map(|(d, shape)| {
                let (agent, dimensions) = shape.unwrap_or((first, Vec::new()));
                Meta::Counter(CounterInfo {
                    id: free_ids.next().expect("far fewer counters than ids"),
                    agent,
                    name: d.name.clone(),
                    description: format!("{} (derived by the pipeline)", d.expression),
                    dimensions,
                })
            })
            .collect();
        let given = described.iter().map(|m| match m {
            Meta::Counter(info) => info.id,
            _ => unreachable!("counters only"),
        });
        ids.insert(stream, given.collect());
        described
    }

    /// How many values a dispatch on `agent` has: the instances of every collected counter
    /// the agent has (the product of the counter's dimension sizes).
    fn values_per_dispatch(&self, meta: &StreamMeta, agent: u32) -> usize {
        self.collected
            .iter()
            .filter_map(|name| counter(meta, name, agent))
            .map(|c| c.instances() as usize)
            .sum()
    }

    /// The derived counters' samples for one whole dispatch.
    /// `ids` are the derived counters' ids in the dispatch's stream (none before they
    /// were described).
    fn derive(
        &self,
        dispatch: &[C],
        ids: &[u32],
        meta: &StreamMeta,
        failures: &Failures,
    ) -> Vec<C> {
        let Some(&first) = dispatch.first() else {
            return Vec::new();
        };
        if self.derived.is_empty() {
            return Vec::new();
        }
        let values = tensors(dispatch, meta);
        let agent = meta.agents.iter().find(|a| a.index == first.agent());
        let inputs = |name: &str| {
            let collected = values.iter().find(|(n, _)| *n == name);
            collected
                .map(|(_, tensor)| tensor.clone())
                .or_else(|| agent?.property(name).map(Tensor::scalar))
        };
        let mut out = Vec::new();
        let outcomes = self.derived.evaluate(inputs);
        for (d, (counter, outcome)) in self.derived.iter().zip(outcomes).enumerate() {
            // The dispatch's values go on without the counter.
            let fail = |why: String| {
                failures.record_many(dispatch.len() as u64, || {
                    format!(
                        "{} {} on agent {}: cannot compute `{}`: {why}",
                        C::GROUP,
                        first.group().2,
                        first.agent(),
                        counter.name
                    )
                })
            };
            match (outcome, ids.get(d).copied()) {
                (None, _) => {}
                (Some(Err(error)), _) => fail(error.to_string()),
                (Some(Ok(_)), None) => fail("the stream never described its counters".into()),
                (Some(Ok(tensor)), Some(id)) => {
                    out.extend(tensor.instances().iter().map(|instance| {
                        first.with(id, sample_coordinates(instance.coordinates), instance.value)
                    }));
                }
            }
        }
        out
    }
}

/// The counter `name` as `agent` collects it. Agents of one architecture may share counter
/// ids, and the metadata keeps one description per id, so a description for another agent
/// of the same architecture is as good.
fn counter<'m>(meta: &'m StreamMeta, name: &str, agent: u32) -> Option<&'m CounterInfo> {
    let arch = |index: u32| {
        meta.agents
            .iter()
            .find(|a| a.index == index)
            .map(|a| &a.name)
    };
    meta.counters.values().find(|c| {
        c.name == name
            && (c.agent == agent || arch(c.agent).is_some_and(|g| Some(g) == arch(agent)))
    })
}

/// A tensor of zeros in the shape of counter `name` on `agent` (or an agent property):
/// what a derived counter is evaluated on to learn its dimensions.
fn shape(meta: &StreamMeta, name: &str, agent: u32) -> Option<Tensor> {
    let Some(info) = counter(meta, name, agent) else {
        let agent = meta.agents.iter().find(|a| a.index == agent)?;
        return agent.property(name).map(Tensor::scalar);
    };
    let shape: Vec<(Dimension, u32)> = info
        .dimensions
        .iter()
        .filter_map(|(d, size)| Some((Dimension::from_name(d)?, *size)))
        .collect();
    let points = shape.iter().map(|&(_, size)| size as usize).product();
    Some(Tensor::from_shape(&shape, &vec![0.0; points]))
}

/// The dimensions a tensor's instances vary along, with their sizes.
fn dimensions(tensor: &Tensor) -> Dimensions {
    Dimension::ALL
        .into_iter()
        .filter_map(|d| {
            let last = tensor
                .instances()
                .iter()
                .map(|i| i.coordinates.get(d))
                .max()?;
            (last > 0).then(|| (d.name().to_owned(), last + 1))
        })
        .collect()
}

/// A dispatch's values as a tensor per counter, named, in order of first appearance.
fn tensors<'m, C: Counted>(dispatch: &[C], meta: &'m StreamMeta) -> Vec<(&'m str, Tensor)> {
    let mut instances: Vec<(u32, Vec<Instance>)> = Vec::new();
    for sample in dispatch {
        let instance = Instance {
            coordinates: coordinates(sample),
            value: sample.value(),
        };
        match instances
            .iter_mut()
            .find(|(id, _)| *id == sample.counter_id())
        {
            Some((_, of_counter)) => of_counter.push(instance),
            None => instances.push((sample.counter_id(), vec![instance])),
        }
    }
    instances
        .into_iter()
        .map(|(id, of_counter)| (meta.counter_name(id), Tensor::new(of_counter)))
        .collect()
}

fn coordinates(sample: &impl Counted) -> Coordinates {
    let mut coordinates = Coordinates::default();
    for (dimension, index) in Dimension::ALL.into_iter().zip(sample.coordinates()) {
        coordinates.set(dimension, u32::from(index));
    }
    coordinates
}

/// A result's coordinates as a sample's: they come from samples (or are 0), so they fit.
fn sample_coordinates(coordinates: Coordinates) -> [u16; 7] {
    Dimension::ALL.map(|d| u16::try_from(coordinates.get(d)).expect("coordinates of samples"))
}

#[cfg(test)]
mod tests;
