//! A run of several counter passes merged into one, as rocprof-compute merges its runs:
//! the first pass is the run (its traces, processes and dispatches); every later pass only
//! adds its counter values to the first pass's dispatches. A dispatch is matched by its
//! process (the n-th to connect in each pass), its kernel's name and its order among that
//! kernel's dispatches in the process. Passes that disagree (another number of processes
//! or of a kernel's dispatches: the application is not deterministic) are reported, and
//! what has no match is left out.
//!
//! The runner marks each pass in the frames ([`Meta::Pass`]), so a replay of the spool
//! merges the same way. Frames without a marker pass through untouched. Counter values
//! are held until the last pass has ended, then sent, each dispatch's values together,
//! with the counters of every pass described to the first pass's streams first.

use std::collections::BTreeMap;
use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;

use crate::record::{Batch, CounterInfo, CounterSample, Meta};
use crate::source::{Ending, Source, SourceError};
use crate::wire::{Frame, Payload};

/// A process's counter values: per agent and kernel name, its dispatches in order, each
/// with its values.
type Dispatches = BTreeMap<(u32, String), Vec<Vec<CounterSample>>>;

/// Samples per frame of merged values.
const SAMPLES_PER_FRAME: usize = 8192;

/// Merges the passes of a source's frames (see the module's documentation).
pub struct Merge<S> {
    source: S,
    /// The pass the frames belong to now, from 1; `None` until the first marker.
    pass: Option<u32>,
    /// Per stream: its pass and its order among that pass's processes.
    streams: HashMap<u16, (u32, usize)>,
    /// Per pass, how many processes connected.
    processes: BTreeMap<u32, usize>,
    /// Per stream, its kernels' names by id.
    kernels: HashMap<u16, HashMap<u64, String>>,
    /// Per stream, its counters and its values, held until the end.
    counters: HashMap<u16, Vec<CounterInfo>>,
    samples: HashMap<u16, Vec<CounterSample>>,
    /// The merged frames, once the input has ended.
    merged: Option<VecDeque<Frame>>,
    disagreements: Vec<String>,
}

impl<S: Source> Merge<S> {
    pub fn new(source: S) -> Self {
        Merge {
            source,
            pass: None,
            streams: HashMap::default(),
            processes: BTreeMap::new(),
            kernels: HashMap::default(),
            counters: HashMap::default(),
            samples: HashMap::default(),
            merged: None,
            disagreements: Vec::new(),
        }
    }

    /// Where the passes disagreed, once the frames are all read.
    pub fn disagreements(&self) -> &[String] {
        &self.disagreements
    }

    /// The frame as the merged run has it, if it has it.
    fn take(&mut self, frame: Frame) -> Option<Frame> {
        if let Payload::Meta(items) = &frame.payload
            && let Some(number) = items.iter().find_map(|m| match m {
                Meta::Pass { number } => Some(*number),
                _ => None,
            })
        {
            self.pass = Some(number);
            // The runner's own stream is the first pass's first process.
            if number == 1 {
                self.stream(frame.stream);
            }
            return None;
        }
        if self.pass.is_none() {
            return Some(frame);
        }
        let (pass, _) = self.stream(frame.stream);
        let first = pass == 1;
        match frame.payload {
            Payload::Meta(items) => {
                let mut kept = Vec::new();
                for item in items {
                    match item {
                        Meta::Counter(info) => {
                            self.counters.entry(frame.stream).or_default().push(info)
                        }
                        Meta::KernelSymbol(symbol) => {
                            let names = self.kernels.entry(frame.stream).or_default();
                            names.insert(symbol.kernel_id, symbol.name.clone());
                            kept.extend(first.then_some(Meta::KernelSymbol(symbol)));
                        }
                        // The runner's items (the plan, each pass's exit) are on the first
                        // pass's first stream.
                        other => kept.extend(first.then_some(other)),
                    }
                }
                (!kept.is_empty()).then_some(Frame {
                    stream: frame.stream,
                    payload: Payload::Meta(kept),
                })
            }
            Payload::Records(Batch::CounterSample(samples)) => {
                self.samples
                    .entry(frame.stream)
                    .or_default()
                    .extend(samples);
                None
            }
            // The other records, and API calls' arguments, as the first pass has them.
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) if first => Some(frame),
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) => None,
        }
    }

    /// A stream's pass and order, given when it first sends a frame.
    fn stream(&mut self, stream: u16) -> (u32, usize) {
        let pass = self.pass.unwrap_or(1);
        *self.streams.entry(stream).or_insert_with(|| {
            let order = self.processes.entry(pass).or_default();
            *order += 1;
            (pass, *order - 1)
        })
    }

    /// The held values, merged into the first pass's dispatches.
    fn merge(&mut self) -> VecDeque<Frame> {
        let mut out = VecDeque::new();
        if self.pass.is_none() {
            return out;
        }
        let first = self.processes.get(&1).copied().unwrap_or(0);
        for (&pass, &processes) in &self.processes {
            if processes != first {
                self.disagreements.push(format!(
                    "pass {pass} had {processes} processes, pass 1 had {first}: the processes \
                     beyond the fewer have no counters from the other passes"
                ));
            }
        }
        let mut streams: Vec<(u16, (u32, usize))> =
            self.streams.iter().map(|(&s, &p)| (s, p)).collect();
        streams.sort_unstable_by_key(|&(stream, (pass, order))| (order, pass, stream));
        for (stream, (pass, order)) in streams.iter().copied().filter(|(_, (p, _))| *p == 1) {
            let mut dispatches = self.dispatches(stream);
            let mut counters = self.counters.remove(&stream).unwrap_or_default();
            for &(other, (other_pass, _)) in
                (streams.iter()).filter(|(_, (p, o))| *p != 1 && *o == order)
            {
                let their_counters = self.counters.remove(&other).unwrap_or_default();
                let agents: Vec<u32> = their_counters.iter().map(|c| c.agent).collect();
                let theirs = self.dispatches(other);
                self.add(&mut dispatches, theirs, &agents, (pass, other_pass), order);
                counters.extend(their_counters);
            }
            if !counters.is_empty() {
                let items = counters.into_iter().map(Meta::Counter).collect();
                out.push_back(Frame {
                    stream,
                    payload: Payload::Meta(items),
                });
            }
            let mut samples: Vec<CounterSample> = dispatches
                .into_values()
                .flat_map(|of_kernel| of_kernel.into_iter().flatten())
                .collect();
            samples.sort_by_key(|s| s.dispatch_id);
            for chunk in samples.chunks(SAMPLES_PER_FRAME) {
                out.push_back(Frame {
                    stream,
                    payload: Payload::Records(Batch::CounterSample(chunk.to_vec())),
                });
            }
        }
        out
    }

    /// A stream's held values by kernel name, then by dispatch in order.
    fn dispatches(&mut self, stream: u16) -> Dispatches {
        let mut samples = self.samples.remove(&stream).unwrap_or_default();
        // Stable: each dispatch's values keep their order.
        samples.sort_by_key(|s| s.dispatch_id);
        let names = self.kernels.get(&stream);
        let mut by_kernel: Dispatches = BTreeMap::new();
        for dispatch in samples.chunk_by(|a, b| a.dispatch_id == b.dispatch_id) {
            let kernel = dispatch[0].kernel_id;
            let name = names
                .and_then(|n| n.get(&kernel))
                .map_or_else(|| format!("kernel {kernel}"), Clone::clone);
            let key = (dispatch[0].agent, name);
            by_kernel.entry(key).or_default().push(dispatch.to_vec());
        }
        by_kernel
    }

    /// Adds a later pass's values to the first pass's dispatches they match, as the first
    /// pass's dispatch (its id, kernel id, process and time). `agents` are those the later
    /// pass counts on: a pass without counters for an agent has none of its dispatches.
    fn add(
        &mut self,
        ours: &mut Dispatches,
        theirs: Dispatches,
        agents: &[u32],
        (first, pass): (u32, u32),
        order: usize,
    ) {
        let missing: Vec<(u32, String)> = (ours.keys())
            .filter(|k| agents.contains(&k.0) && !theirs.contains_key(*k))
            .cloned()
            .collect();
        let theirs = (theirs.into_iter()).chain(missing.into_iter().map(|k| (k, Vec::new())));
        for (key, dispatches) in theirs {
            let mine = ours.get_mut(&key).map_or(&mut [][..], |d| &mut d[..]);
            let (agent, kernel) = key;
            if mine.len() != dispatches.len() {
                self.disagreements.push(format!(
                    "process {} ran kernel `{kernel}` on agent {agent} {} times in pass {pass}, {} in \
                     pass {first}: the application is not deterministic; only the first {} \
                     dispatches are merged",
                    order + 1,
                    dispatches.len(),
                    mine.len(),
                    mine.len().min(dispatches.len()),
                ));
            }
            for (into, values) in mine.iter_mut().zip(dispatches) {
                let at = into[0];
                into.extend(values.into_iter().map(|s| CounterSample {
                    pid: at.pid,
                    dispatch_id: at.dispatch_id,
                    kernel_id: at.kernel_id,
                    timestamp_ns: at.timestamp_ns,
                    ..s
                }));
            }
        }
    }
}

impl<S: Source> Source for Merge<S> {
    fn next_frame(&mut self) -> Option<Frame> {
        loop {
            if let Some(merged) = &mut self.merged {
                return merged.pop_front();
            }
            match self.source.next_frame() {
                Some(frame) => {
                    if let Some(frame) = self.take(frame) {
                        return Some(frame);
                    }
                }
                None => self.merged = Some(self.merge()),
            }
        }
    }

    fn finish(&mut self) -> Result<Ending, SourceError> {
        self.source.finish()
    }
}
