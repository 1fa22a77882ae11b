//! Row ids, as rocprofv3 writes them: a thing's row id is its own number, the one the
//! records and the SDK give it (a process's pid, a thread's tid, an agent's node id, a
//! kernel's, code object's or counter's SDK id, a queue's or HIP stream's handle), so that
//! a database says what the run said and AMD's tools print the SDK's ids. An id is handed
//! out when a record first refers to its thing, keyed by the stream (process) that sent it
//! and its id there; rocpd ids are unique within one database (its views join on id and
//! `guid`), so where processes sharing a database have a number in common, the later one
//! gets the next id above all those taken, and the row's `extdata` keeps its own number.
//! Strings, nodes, tracks and events have no number of their own and are numbered from 1.
//! The rows themselves are written when the run ends (see `info`), one for every id
//! handed out.

use std::borrow::Borrow;
use std::hash::Hash;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The ids of one table's rows, handed out from 1 in order of first reference.
#[derive(Debug)]
pub struct Registry<K> {
    ids: HashMap<K, i64>,
}

impl<K> Default for Registry<K> {
    fn default() -> Self {
        Registry {
            ids: HashMap::default(),
        }
    }
}

impl<K: Hash + Eq> Registry<K> {
    /// The id of `key`, handing out the next one if it has none yet.
    #[inline]
    pub fn id<Q>(&mut self, key: &Q) -> i64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = self.ids.len() as i64 + 1;
        self.ids.insert(key.to_owned(), id);
        id
    }

    /// The id `key` was given, if it was.
    pub fn get<Q>(&self, key: &Q) -> Option<i64>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.ids.get(key).copied()
    }

    /// Every key with its id, in id order.
    pub fn entries(&self) -> Vec<(&K, i64)> {
        let mut entries: Vec<(&K, i64)> = self.ids.iter().map(|(k, &id)| (k, id)).collect();
        entries.sort_unstable_by_key(|&(_, id)| id);
        entries
    }
}

/// Ids that are the things' own numbers (OS pids, tids, SDK ids); a number another key
/// already holds (the same pid on two hosts of one database, kernel 1 of two processes), or
/// none (a number SQLite's integers cannot hold), gets the next id above all those taken.
#[derive(Debug)]
pub struct Own<K> {
    ids: HashMap<K, i64>,
    taken: HashSet<i64>,
    highest: i64,
}

impl<K> Default for Own<K> {
    fn default() -> Self {
        Own {
            ids: HashMap::default(),
            taken: HashSet::default(),
            highest: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> Own<K> {
    /// The id of `key`, `own` if it has none yet and `own` is free.
    #[inline]
    pub fn id(&mut self, key: &K, own: Option<u64>) -> i64 {
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        let id = match own.and_then(|own| i64::try_from(own).ok()) {
            Some(own) if !self.taken.contains(&own) => own,
            _ => self.highest + 1,
        };
        self.taken.insert(id);
        self.highest = self.highest.max(id);
        self.ids.insert(key.clone(), id);
        id
    }

    /// The id `key` was given, if it was.
    pub fn get(&self, key: &K) -> Option<i64> {
        self.ids.get(key).copied()
    }

    /// Every key, in id order, apart from the ids: for giving ids to what they refer to.
    pub fn keys(&self) -> Vec<K> {
        self.entries()
            .into_iter()
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Every key with its id, in id order.
    pub fn entries(&self) -> Vec<(&K, i64)> {
        let mut entries: Vec<(&K, i64)> = self.ids.iter().map(|(k, &id)| (k, id)).collect();
        entries.sort_unstable_by_key(|&(_, id)| id);
        entries
    }
}

/// Every id one database has handed out, by table. Keys start with the stream (process)
/// whose records used them.
#[derive(Debug, Default)]
pub struct Ids {
    /// Nodes by host name.
    pub nodes: Registry<String>,
    /// Processes by stream, with their pids as ids.
    pub processes: Own<u16>,
    /// Threads by stream and tid, with their tids as ids.
    pub threads: Own<(u16, u32)>,
    /// Agents by their index in the process, with their node ids as ids.
    pub agents: Own<(u16, u32)>,
    /// Queues by handle, with it as id.
    pub queues: Own<(u16, u64)>,
    /// HIP streams by handle, with it as id; 0 is the default stream, which records
    /// without a stream use.
    pub streams: Own<(u16, u64)>,
    /// Code objects, kernels and counters by their SDK ids, with them as ids.
    pub code_objects: Own<(u16, u64)>,
    pub kernels: Own<(u16, u64)>,
    pub counters: Own<(u16, u32)>,
    /// Tracks of instants, by thread and name (a string id).
    pub tracks: Registry<(u16, u32, i64)>,
    pub strings: Registry<String>,
    pub events: Events,
    /// Operations by domain and operation id (SDK values), named in the string table.
    pub operations: HashMap<(u8, i32), Operation>,
    /// What the records showed of each process.
    pub seen: HashMap<u16, Seen>,
}

/// An operation's category (its domain) and name, as string ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct Operation {
    pub category: i64,
    pub name: i64,
}

/// A process as its records show it: useful when its metadata is missing, and for when its
/// activity ended.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub pid: u32,
    pub last_ns: u64,
}

impl Ids {
    /// The id of the process of `stream`, whose pid is `pid` where known.
    pub fn process(&mut self, stream: u16, pid: Option<u32>) -> i64 {
        self.processes.id(&stream, pid.map(u64::from))
    }

    /// The id of thread `tid` of the process of `stream`.
    pub fn thread(&mut self, stream: u16, tid: u32) -> i64 {
        self.threads.id(&(stream, tid), Some(tid.into()))
    }

    /// The id of agent `index` of the process of `stream`: its node id, which
    /// [`Ids::agent_node`] gave it, where that came first.
    pub fn agent(&mut self, stream: u16, index: u32) -> i64 {
        self.agents.id(&(stream, index), None)
    }

    /// Gives agent `index` of the process of `stream` its node id, if it has no id yet.
    pub fn agent_node(&mut self, stream: u16, index: u32, node_id: u32) -> i64 {
        self.agents.id(&(stream, index), Some(node_id.into()))
    }

    pub fn queue(&mut self, stream: u16, handle: u64) -> i64 {
        self.queues.id(&(stream, handle), Some(handle))
    }

    pub fn hip_stream(&mut self, stream: u16, handle: u64) -> i64 {
        self.streams.id(&(stream, handle), Some(handle))
    }

    pub fn code_object(&mut self, stream: u16, id: u64) -> i64 {
        self.code_objects.id(&(stream, id), Some(id))
    }

    pub fn kernel(&mut self, stream: u16, id: u64) -> i64 {
        self.kernels.id(&(stream, id), Some(id))
    }

    pub fn counter(&mut self, stream: u16, id: u32) -> i64 {
        self.counters.id(&(stream, id), Some(id.into()))
    }

    /// Notes records of `stream` from process `pid` active until `last_ns`.
    pub fn saw(&mut self, stream: u16, pid: u32, last_ns: u64) {
        let seen = self.seen.entry(stream).or_insert(Seen { pid, last_ns });
        seen.last_ns = seen.last_ns.max(last_ns);
    }
}

/// Where rows find the ids of what they refer to. Runs of records are built in parallel
/// against the ids handed out before them (`Known`), which notes whether any was missing;
/// a run that missed one is built again, in order, handing out the ids it refers to first
/// (`Assign`). An id once handed out never changes, so a run that missed none has the rows
/// it would have had built in order.
pub enum Resolver<'a> {
    Known { ids: &'a Ids, missed: bool },
    Assign(&'a mut Ids),
}

impl Resolver<'_> {
    /// What `known` finds, noting a miss (and giving a stand-in) where it finds nothing;
    /// or what `assign` hands out.
    #[inline]
    pub fn find<T: Default>(
        &mut self,
        known: impl FnOnce(&Ids) -> Option<T>,
        assign: impl FnOnce(&mut Ids) -> T,
    ) -> T {
        match self {
            Resolver::Known { ids, missed } => known(ids).unwrap_or_else(|| {
                *missed = true;
                T::default()
            }),
            Resolver::Assign(ids) => assign(ids),
        }
    }

    /// Whether an id was missing, and the rows built are to be built again.
    pub fn missed(&self) -> bool {
        matches!(self, Resolver::Known { missed: true, .. })
    }

    pub fn process(&mut self, stream: u16, pid: Option<u32>) -> i64 {
        self.find(|i| i.processes.get(&stream), |i| i.process(stream, pid))
    }

    pub fn node(&mut self, host: &str) -> i64 {
        self.find(|i| i.nodes.get(host), |i| i.nodes.id(host))
    }

    pub fn string(&mut self, text: &str) -> i64 {
        self.find(|i| i.strings.get(text), |i| i.strings.id(text))
    }

    pub fn track(&mut self, track: (u16, u32, i64)) -> i64 {
        self.find(|i| i.tracks.get(&track), |i| i.tracks.id(&track))
    }

    pub fn thread(&mut self, stream: u16, tid: u32) -> i64 {
        self.find(|i| i.threads.get(&(stream, tid)), |i| i.thread(stream, tid))
    }

    pub fn agent(&mut self, stream: u16, index: u32) -> i64 {
        self.find(
            |i| i.agents.get(&(stream, index)),
            |i| i.agent(stream, index),
        )
    }

    pub fn agent_node(&mut self, stream: u16, index: u32, node_id: u32) -> i64 {
        let key = (stream, index);
        self.find(
            |i| i.agents.get(&key),
            |i| i.agent_node(stream, index, node_id),
        )
    }

    pub fn queue(&mut self, stream: u16, handle: u64) -> i64 {
        self.find(
            |i| i.queues.get(&(stream, handle)),
            |i| i.queue(stream, handle),
        )
    }

    pub fn hip_stream(&mut self, stream: u16, handle: u64) -> i64 {
        let key = (stream, handle);
        self.find(|i| i.streams.get(&key), |i| i.hip_stream(stream, handle))
    }

    pub fn code_object(&mut self, stream: u16, id: u64) -> i64 {
        let key = (stream, id);
        self.find(|i| i.code_objects.get(&key), |i| i.code_object(stream, id))
    }

    pub fn kernel(&mut self, stream: u16, id: u64) -> i64 {
        self.find(|i| i.kernels.get(&(stream, id)), |i| i.kernel(stream, id))
    }

    pub fn counter(&mut self, stream: u16, id: u32) -> i64 {
        self.find(|i| i.counters.get(&(stream, id)), |i| i.counter(stream, id))
    }
}

/// Events of dispatches take ids from this range, computed from the process and the
/// dispatch id: counter samples name their dispatch's event without a table of every
/// dispatch seen (which would grow with the run), whichever of the two arrives first.
const DISPATCH_EVENTS: i64 = 1 << 62;
/// Bits of a dispatch id in its event id; the process's id takes the bits above.
const DISPATCH_BITS: u32 = 40;

/// The ids of events: dispatches' computed from them, the others in order.
#[derive(Debug, Default)]
pub struct Events {
    last: i64,
}

impl Events {
    /// Takes the next `count` ids; returns the id before them.
    pub fn take(&mut self, count: usize) -> i64 {
        let before = self.last;
        self.last += count as i64;
        before
    }

    /// The event id of dispatch `dispatch_id` of process `process` (a row id), or `None`
    /// if it is beyond the range (2^40 dispatches in one process).
    pub fn dispatch(process: i64, dispatch_id: u64) -> Option<i64> {
        let dispatch = i64::try_from(dispatch_id)
            .ok()
            .filter(|&d| d < 1 << DISPATCH_BITS)?;
        if process >= 1 << (62 - DISPATCH_BITS) {
            return None;
        }
        Some(DISPATCH_EVENTS | process << DISPATCH_BITS | dispatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registries_number_keys_in_order_of_first_reference() {
        let mut names: Registry<String> = Registry::default();
        assert_eq!(names.id("KERNEL_DISPATCH"), 1);
        assert_eq!(names.id(""), 2);
        assert_eq!(names.id("KERNEL_DISPATCH"), 1);
        let entries: Vec<(&str, i64)> = names
            .entries()
            .into_iter()
            .map(|(k, id)| (&**k, id))
            .collect();
        assert_eq!(entries, [("KERNEL_DISPATCH", 1), ("", 2)]);
    }

    #[test]
    fn processes_and_threads_keep_their_own_numbers_unless_taken() {
        let mut ids = Ids::default();
        assert_eq!(ids.process(0, Some(4242)), 4242);
        assert_eq!(
            ids.process(1, Some(4242)),
            4243,
            "the same pid on another host"
        );
        assert_eq!(ids.process(2, None), 4244);
        assert_eq!(ids.process(0, Some(7)), 4242, "an id once given stays");
        assert_eq!(ids.thread(0, 4242), 4242);
        assert_eq!(ids.thread(0, 4250), 4250);
        let order: Vec<u16> = ids.processes.entries().iter().map(|&(&s, _)| s).collect();
        assert_eq!(order, [0, 1, 2]);
    }

    #[test]
    fn things_keep_the_sdks_ids_unless_taken_or_too_large() {
        let mut ids = Ids::default();
        assert_eq!(ids.kernel(0, 3), 3);
        assert_eq!(ids.kernel(0, 1), 1);
        assert_eq!(ids.kernel(1, 1), 4, "kernel 1 of another process");
        assert_eq!(ids.kernel(0, 3), 3);
        assert_eq!(ids.queue(0, 0x7f00_0000_1000), 0x7f00_0000_1000);
        assert_eq!(
            ids.queue(0, u64::MAX),
            0x7f00_0000_1001,
            "beyond SQLite's integers"
        );
        assert_eq!(ids.agent_node(0, 1, 2), 2);
        assert_eq!(ids.agent(0, 1), 2, "the node id given first");
        assert_eq!(ids.agent(0, 7), 3, "an agent without a node id");
    }

    #[test]
    fn a_resolver_finds_the_ids_handed_out_and_notes_what_it_misses() {
        let mut ids = Ids::default();
        assert_eq!(Resolver::Assign(&mut ids).thread(0, 42), 42);
        let mut known = Resolver::Known {
            ids: &ids,
            missed: false,
        };
        assert_eq!(known.thread(0, 42), 42);
        assert!(!known.missed());
        known.kernel(0, 3);
        assert!(known.missed(), "kernel 3 has no id yet");
        assert_eq!(ids.kernels.get(&(0, 3)), None, "finding hands nothing out");
    }

    #[test]
    fn dispatch_events_are_distinct_per_process_and_apart_from_the_others() {
        let a = Events::dispatch(1, 7).unwrap();
        let b = Events::dispatch(2, 7).unwrap();
        assert_ne!(a, b);
        assert!(a > i64::from(u32::MAX) << 20 && b > 0);
        assert_eq!(Events::dispatch(1, 1 << 40), None);
        assert_eq!(Events::dispatch(1 << 22, 1), None);
    }
}
