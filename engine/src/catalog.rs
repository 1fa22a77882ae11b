//! The metadata of a run, per stream (one stream per process): strings, agents, kernels,
//! counters, processes, threads. Records refer to it by id; it only grows, and a record
//! never refers to metadata sent after it, so readers see all they need.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap as HashMap;

use crate::kernel_names::KernelNames;
use crate::record::{
    Agent, CodeObject, CounterInfo, Exit, KernelSymbol, Marker, Meta, Process, Queue, RecordKind,
    Stream, Sym, Thread, ToolCost,
};

/// All streams' metadata.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    streams: Vec<StreamMeta>,
    /// The plan the run was recorded with (JSON), if the spool holds one.
    pub plan: Option<String>,
    /// How the application ended, for runs recorded by `rocflow run`.
    pub exit: Option<Exit>,
    /// The form kernels' names take (see [`crate::kernel_names`]).
    pub naming: KernelNames,
    /// Why the input may hold only part of the run (a spool cut short), once it has ended:
    /// outputs with a place for it say so.
    pub partial: Option<String>,
}

/// One process's metadata.
#[derive(Debug, Default, Clone)]
pub struct StreamMeta {
    pub strings: Vec<String>,
    pub process: Option<Process>,
    pub agents: Vec<Agent>,
    pub code_objects: HashMap<u64, CodeObject>,
    /// The kernels, by the code object's (usually mangled) name.
    pub kernels: HashMap<u64, KernelSymbol>,
    /// The names kernels go by in every output, in the run's form.
    kernel_names: HashMap<u64, String>,
    pub counters: HashMap<u32, CounterInfo>,
    pub threads: Vec<Thread>,
    pub queues: Vec<Queue>,
    pub hip_streams: Vec<Stream>,
    /// Records the tool reported lost, per kind.
    pub dropped: BTreeMap<RecordKind, u64>,
    /// What the tool library cost the process, when it finished cleanly.
    pub tool_cost: Option<ToolCost>,
    /// Dispatch records of kernel replay's passes left out, the application's kept.
    pub replayed_passes: u64,
    /// Dispatches a context with kernel replay counted that the SDK ran once, by kernel
    /// id: they lack the counters of every pass but the first.
    pub unreplayed: BTreeMap<u64, u64>,
}

const UNKNOWN: &str = "<unknown>";

impl Catalog {
    /// An empty catalog that names kernels in `naming`'s form.
    pub fn named(naming: KernelNames) -> Catalog {
        Catalog {
            naming,
            ..Catalog::default()
        }
    }

    /// Adds metadata items of `stream`.
    pub fn apply(&mut self, stream: u16, items: Vec<Meta>) {
        let index = usize::from(stream);
        if self.streams.len() <= index {
            self.streams.resize_with(index + 1, StreamMeta::default);
        }
        let naming = self.naming;
        let meta = &mut self.streams[index];
        for item in items {
            match item {
                // Strings continue the stream's numbering or repeat part of it; an item that
                // would leave a gap (readers refuse one) is not taken.
                Meta::Strings { first, values } if first as usize <= meta.strings.len() => {
                    meta.strings.truncate(first as usize);
                    meta.strings.extend(values);
                }
                Meta::Strings { .. } => {}
                // They name records, not the run: see [`MarkerMessages`].
                Meta::MarkerMessages { .. } => {}
                Meta::Process(p) => meta.process = Some(p),
                Meta::Agent(a) => meta.agents.push(a),
                Meta::CodeObject(c) => {
                    meta.code_objects.insert(c.id, c);
                }
                Meta::KernelSymbol(k) => {
                    meta.kernel_names.insert(k.kernel_id, naming.name(&k.name));
                    meta.kernels.insert(k.kernel_id, k);
                }
                Meta::Counter(c) => {
                    meta.counters.insert(c.id, c);
                }
                Meta::Thread(t) => meta.threads.push(t),
                Meta::Queue(q) => meta.queues.push(q),
                Meta::Stream(s) => meta.hip_streams.push(s),
                Meta::Dropped { kind, count } => {
                    let dropped = meta.dropped.entry(kind).or_default();
                    *dropped = dropped.saturating_add(count);
                }
                Meta::ReplayedPasses { count, unreplayed } => {
                    meta.replayed_passes = meta.replayed_passes.saturating_add(count);
                    for (kernel_id, dispatches) in unreplayed {
                        let n = meta.unreplayed.entry(kernel_id).or_default();
                        *n = n.saturating_add(dispatches);
                    }
                }
                Meta::Plan { json } => self.plan = Some(json),
                Meta::Exit(exit) => self.exit = Some(exit),
                // The passes are merged before the stages (see `crate::merge`).
                Meta::Pass { .. } => {}
                Meta::ToolCost(cost) => meta.tool_cost = Some(cost),
            }
        }
    }

    /// Gives kernel `kernel_id` of `stream` the name it goes by in every output.
    pub fn name_kernel(&mut self, stream: u16, kernel_id: u64, name: String) {
        if let Some(meta) = self.streams.get_mut(usize::from(stream)) {
            meta.kernel_names.insert(kernel_id, name);
        }
    }

    /// The metadata of `stream` (empty if it sent none).
    pub fn stream(&self, stream: u16) -> &StreamMeta {
        static EMPTY: std::sync::OnceLock<StreamMeta> = std::sync::OnceLock::new();
        self.streams
            .get(usize::from(stream))
            .unwrap_or_else(|| EMPTY.get_or_init(StreamMeta::default))
    }

    pub fn streams(&self) -> impl Iterator<Item = (u16, &StreamMeta)> {
        self.streams.iter().enumerate().map(|(i, s)| (i as u16, s))
    }

    /// The metadata of `streams` only, the others' left empty (streams keep their
    /// numbers), with the run's plan and exit: what an output of some of the run's
    /// processes describes.
    pub fn only(&self, streams: &[u16]) -> Catalog {
        Catalog {
            streams: (self.streams())
                .map(|(stream, meta)| match streams.contains(&stream) {
                    true => meta.clone(),
                    false => StreamMeta::default(),
                })
                .collect(),
            plan: self.plan.clone(),
            exit: self.exit,
            naming: self.naming,
            partial: self.partial.clone(),
        }
    }
}

impl StreamMeta {
    pub fn string(&self, sym: Sym) -> &str {
        self.strings
            .get(sym.0 as usize)
            .map_or(UNKNOWN, String::as_str)
    }

    /// The name the kernel goes by in every output, in the run's form.
    pub fn kernel_name(&self, kernel_id: u64) -> &str {
        self.kernel_names
            .get(&kernel_id)
            .map_or_else(|| self.mangled_kernel_name(kernel_id), String::as_str)
    }

    /// The kernel's name as the code object gives it (usually mangled).
    pub fn mangled_kernel_name(&self, kernel_id: u64) -> &str {
        self.kernels
            .get(&kernel_id)
            .map_or(UNKNOWN, |k| k.name.as_str())
    }

    pub fn counter_name(&self, counter_id: u32) -> &str {
        self.counters
            .get(&counter_id)
            .map_or(UNKNOWN, |c| c.name.as_str())
    }
}

/// ROCTx messages, per stream and correlation id, until their marker records arrive. Kept
/// apart from the catalog: sinks read the catalog while the decoder names records.
#[derive(Debug, Default)]
pub struct MarkerMessages {
    streams: HashMap<u16, Waiting>,
}

/// One stream's messages waiting for their records, in the order of their ids: the tool
/// numbers calls and sends their messages in that order, and the records follow them in
/// it, a buffer's worth behind (hundreds of thousands). So a message joins at the back and
/// is given from near the front, and both are found by halving a slice that stays in
/// cache: a map ordered by id (a B-tree) spent 6 % of a ROCTx replay's time on the
/// decoding thread, which the others wait for, inserting and removing.
#[derive(Debug, Default)]
struct Waiting {
    /// Messages by id; `None` once given, until every message before it is given too.
    messages: VecDeque<(u64, Option<Sym>)>,
    /// How many of them are given.
    given: usize,
}

impl Waiting {
    /// Holds `message` for the record of `id`, in place of one it held already.
    fn hold(&mut self, id: u64, message: Sym) {
        if self.messages.back().is_none_or(|&(last, _)| last < id) {
            self.messages.push_back((id, Some(message)));
            return;
        }
        let at = self.messages.partition_point(|&(held, _)| held < id);
        match self.messages.get_mut(at) {
            Some((held, kept)) if *held == id => {
                self.given -= usize::from(kept.is_none());
                *kept = Some(message);
            }
            _ => self.messages.insert(at, (id, Some(message))),
        }
    }

    /// The message of the record of `id`, forgotten once given: each belongs to one record.
    fn give(&mut self, id: u64) -> Option<Sym> {
        // The front is never given: records in the order of their ids find theirs there,
        // or, without one (a range's pop), none before it.
        let at = match self.messages.front() {
            Some(&(first, _)) if first >= id => 0,
            _ => self.messages.partition_point(|&(held, _)| held < id),
        };
        let message = match self.messages.get_mut(at) {
            Some((held, kept)) if *held == id => kept.take()?,
            _ => return None,
        };
        self.given += 1;
        while self
            .messages
            .front()
            .is_some_and(|(_, kept)| kept.is_none())
        {
            self.messages.pop_front();
            self.given -= 1;
        }
        // Messages whose records never came hold the front: the given ones behind them
        // go once they are half of what is kept.
        if self.given > self.messages.len() / 2 {
            self.messages.retain(|(_, kept)| kept.is_some());
            self.given = 0;
        }
        Some(message)
    }
}

impl MarkerMessages {
    /// Takes the messages among `stream`'s metadata items.
    pub fn take(&mut self, stream: u16, items: &mut Vec<Meta>) {
        items.retain_mut(|item| match item {
            Meta::MarkerMessages { messages } => {
                let waiting = self.streams.entry(stream).or_default();
                for (id, message) in messages.drain(..) {
                    waiting.hold(id, Sym(message));
                }
                false
            }
            _ => true,
        });
    }

    /// Gives `stream`'s marker records their messages.
    pub fn name(&mut self, stream: u16, markers: &mut [Marker]) {
        let Some(waiting) = self.streams.get_mut(&stream) else {
            return;
        };
        for marker in markers.iter_mut().filter(|m| m.message == Sym(0)) {
            if let Some(message) = waiting.give(marker.correlation_id) {
                marker.message = message;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages come mostly in the order of their ids and now and then out of it (a
    /// forked child's, a late batch); each is given to its record once, in whatever order
    /// the records come, and a message whose record never comes keeps only itself.
    #[test]
    fn waiting_messages_are_given_once_whatever_the_order() {
        let mut waiting = Waiting::default();
        for id in [10, 20, 30, 40] {
            waiting.hold(id, Sym(id as u32));
        }
        waiting.hold(25, Sym(25));
        waiting.hold(5, Sym(5));
        waiting.hold(30, Sym(31));
        assert_eq!(waiting.give(30), Some(Sym(31)));
        assert_eq!(waiting.give(30), None);
        assert_eq!(waiting.give(15), None);
        assert_eq!(waiting.give(50), None);
        for id in [25, 10, 40, 20] {
            assert_eq!(waiting.give(id), Some(Sym(id as u32)));
        }
        // Only 5, never given, still has its message; the given ones behind it are at
        // most as many as those held.
        let held: Vec<_> = waiting
            .messages
            .iter()
            .filter(|(_, m)| m.is_some())
            .collect();
        assert_eq!(held, [&(5, Some(Sym(5)))]);
        assert!(waiting.messages.len() <= 2, "{:?}", waiting.messages);
        for id in 100..1100 {
            waiting.hold(id, Sym(1));
            assert_eq!(waiting.give(id), Some(Sym(1)));
        }
        assert!(waiting.messages.len() <= 3, "{:?}", waiting.messages);
        assert_eq!(waiting.give(5), Some(Sym(5)));
        assert!(waiting.messages.is_empty());
    }
}
