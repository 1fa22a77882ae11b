//! The archive's global definitions, gathered while events are written and written at the
//! end: strings, regions, metrics, the system tree, location groups and locations, each
//! numbered densely from 0 in the order it was first needed (readers expect that order).
//! Locations are needed at the end, timeline by timeline in the order the timelines
//! began, so their numbers do not depend on how the timelines' work was spread over
//! threads.
//!
//! The system tree is a machine with a node per host and, below it, a node per GPU (of
//! OTF2 3.0's accelerator-device domain). Each process is a process location group on its
//! host; each GPU a process uses is an accelerator location group on the GPU's node,
//! created by the process's group, holding the GPU's queue and copy-engine streams and its
//! counters. Host threads are CPU-thread locations of the process.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use super::archive::{GlobalDefs, LocationId};
use super::attributes::{ATTRIBUTES, FIRST_ARGUMENT};
use super::ffi;
use crate::catalog::StreamMeta;
use crate::record::{Agent, Sym};
use crate::sdk::AgentType;
use crate::sink::SinkError;

/// Timestamps are nanoseconds.
const TICKS_PER_SECOND: u64 = 1_000_000_000;

/// What a region stands for, before its name is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegionKey {
    /// An API function: domain and operation.
    Api(u8, i32),
    /// A kernel of a stream.
    Kernel(u16, u64),
    /// A marker range by its message in a stream; marks without one use the operation.
    Marker(u16, Sym, i32),
    /// A copy direction.
    Copy(u8),
    /// A memory allocation operation.
    Allocation(u8),
}

/// What a region is, for its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegionKind {
    pub role: u8,
    pub paradigm: u8,
}

/// The thing a timeline shows, within one stream (process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    /// A host thread's API calls.
    Thread(u32),
    /// A host thread's marker ranges.
    Markers(u32),
    /// A host thread's memory allocations and frees.
    Memory(u32),
    /// Kernels on a GPU queue: agent, queue.
    Queue(u32, u64),
    /// Copies a GPU's copy engines ran.
    Copies(u32),
    /// A GPU's counter values.
    Counters(u32),
}

/// A timeline's identity: a track of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrackKey {
    pub stream: u16,
    pub track: Track,
}

/// The earliest and latest of the times added, if any.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extent(Option<(u64, u64)>);

impl Extent {
    #[inline]
    pub fn add(&mut self, time: u64) {
        self.0 = Some(match self.0 {
            Some((first, last)) => (first.min(time), last.max(time)),
            None => (time, time),
        });
    }

    pub fn merge(&mut self, other: Extent) {
        if let Some((first, last)) = other.0 {
            self.add(first);
            self.add(last);
        }
    }
}

/// A system tree node: its name and class strings, parent node and domain.
struct Node {
    name: u32,
    class: u32,
    parent: Option<u32>,
    domain: u8,
}

/// A location group: a process, or a GPU as a process uses it (created by the process).
struct Group {
    name: u32,
    kind: u8,
    node: u32,
    creator: Option<u32>,
}

struct Location {
    name: u32,
    kind: u8,
    group: u32,
    events: u64,
}

#[derive(Default)]
pub struct Definitions {
    strings: Vec<String>,
    string_ids: HashMap<String, u32>,
    /// (name, canonical name, kind) by region id.
    regions: Vec<(u32, u32, RegionKind)>,
    region_ids: HashMap<(u32, u32, RegionKind), u32>,
    region_keys: HashMap<RegionKey, u32>,
    /// (name, description) by metric id.
    metrics: Vec<(u32, u32)>,
    metric_ids: HashMap<String, u32>,
    metric_keys: HashMap<(u16, u32), u32>,
    recorders: BTreeSet<(u32, LocationId)>,
    nodes: Vec<Node>,
    node_ids: HashMap<String, u32>,
    groups: Vec<Group>,
    /// By stream, and agent for a GPU's group.
    group_ids: HashMap<(u16, Option<u32>), u32>,
    locations: Vec<Location>,
    /// The earliest and latest event times.
    span: Extent,
    /// The argument attributes, by (name, type) string ids, in id order.
    arguments: Vec<(u32, u32)>,
    argument_ids: HashMap<(u32, u32), u32>,
}

impl Definitions {
    /// The attribute of the API call arguments named `name` of type `type_name`.
    pub fn argument(&mut self, name: &str, type_name: &str) -> u32 {
        let key = (self.string(name), self.string(type_name));
        let next = FIRST_ARGUMENT + self.arguments.len() as u32;
        let id = *self.argument_ids.entry(key).or_insert(next);
        if id == next {
            self.arguments.push(key);
        }
        id
    }

    pub fn string(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(text.to_owned());
        self.string_ids.insert(text.to_owned(), id);
        id
    }

    /// The region `key` stands for; `name` gives its name the first time. Regions of the
    /// same name and kind are one region, whichever stream they came from.
    pub fn region(
        &mut self,
        key: RegionKey,
        kind: RegionKind,
        name: impl FnOnce() -> String,
    ) -> u32 {
        self.named_region(key, kind, || {
            let name = name();
            (name.clone(), name)
        })
    }

    /// The region of `key`, with its name and its canonical name (a kernel's mangled one).
    pub fn named_region(
        &mut self,
        key: RegionKey,
        kind: RegionKind,
        names: impl FnOnce() -> (String, String),
    ) -> u32 {
        if let Some(&id) = self.region_keys.get(&key) {
            return id;
        }
        let (name, canonical) = names();
        let (name, canonical) = (self.string(&name), self.string(&canonical));
        let next = self.regions.len() as u32;
        let id = *self
            .region_ids
            .entry((name, canonical, kind))
            .or_insert(next);
        if id == next {
            self.regions.push((name, canonical, kind));
        }
        self.region_keys.insert(key, id);
        id
    }

    /// The metric of counter `counter` of `stream`: one per counter name.
    pub fn metric(&mut self, stream: u16, counter: u32, meta: &StreamMeta) -> u32 {
        if let Some(&id) = self.metric_keys.get(&(stream, counter)) {
            return id;
        }
        let info = meta.counters.get(&counter);
        let name = meta.counter_name(counter).to_owned();
        let next = self.metrics.len() as u32;
        let id = match self.metric_ids.get(&name) {
            Some(&id) => id,
            None => {
                let description = info.map_or("", |c| c.description.as_str());
                let entry = (self.string(&name), self.string(description));
                self.metrics.push(entry);
                self.metric_ids.insert(name, next);
                next
            }
        };
        self.metric_keys.insert((stream, counter), id);
        id
    }

    /// Notes that `location` records `metric`.
    pub fn recorder(&mut self, metric: u32, location: LocationId) {
        self.recorders.insert((metric, location));
    }

    /// Notes events at the times of `extent`.
    pub fn times(&mut self, extent: Extent) {
        self.span.merge(extent);
    }

    /// Defines the next location: lane `lane` of `key`'s timeline, with `events` events.
    pub fn location(
        &mut self,
        key: TrackKey,
        lane: usize,
        events: u64,
        meta: &StreamMeta,
    ) -> LocationId {
        let (mut name, kind, group) = match key.track {
            Track::Thread(tid) => (
                thread_name(meta, tid),
                ffi::LOCATION_TYPE_CPU_THREAD,
                self.process_group(key.stream, meta),
            ),
            Track::Markers(tid) => (
                format!("{} markers", thread_name(meta, tid)),
                ffi::LOCATION_TYPE_CPU_THREAD,
                self.process_group(key.stream, meta),
            ),
            Track::Memory(tid) => (
                format!("{} memory", thread_name(meta, tid)),
                ffi::LOCATION_TYPE_CPU_THREAD,
                self.process_group(key.stream, meta),
            ),
            Track::Queue(agent, queue) => (
                format!("{} queue {queue}", agent_name(meta, agent)),
                ffi::LOCATION_TYPE_ACCELERATOR_STREAM,
                self.agent_group(key.stream, agent, meta),
            ),
            Track::Copies(agent) => (
                format!("{} copies", agent_name(meta, agent)),
                ffi::LOCATION_TYPE_ACCELERATOR_STREAM,
                self.agent_group(key.stream, agent, meta),
            ),
            Track::Counters(agent) => (
                format!("{} counters", agent_name(meta, agent)),
                ffi::LOCATION_TYPE_METRIC,
                self.agent_group(key.stream, agent, meta),
            ),
        };
        if lane > 0 {
            name = format!("{name}, lane {}", lane + 1);
        }
        let name = self.string(&name);
        self.locations.push(Location {
            name,
            kind,
            group,
            events,
        });
        LocationId(self.locations.len() as u64 - 1)
    }

    fn process_group(&mut self, stream: u16, meta: &StreamMeta) -> u32 {
        if let Some(&id) = self.group_ids.get(&(stream, None)) {
            return id;
        }
        let host = self.host_node(meta);
        let name = match &meta.process {
            Some(p) => {
                let program = p
                    .command
                    .first()
                    .map_or("process", |c| c.rsplit('/').next().unwrap_or(c));
                format!("{program} (pid {})", p.pid)
            }
            None => format!("process {stream}"),
        };
        let group = Group {
            name: self.string(&name),
            kind: ffi::LOCATION_GROUP_TYPE_PROCESS,
            node: host,
            creator: None,
        };
        self.add_group((stream, None), group)
    }

    fn agent_group(&mut self, stream: u16, agent: u32, meta: &StreamMeta) -> u32 {
        if let Some(&id) = self.group_ids.get(&(stream, Some(agent))) {
            return id;
        }
        let process = self.process_group(stream, meta);
        let host = self.host_node(meta);
        let label = agent_name(meta, agent);
        let device = format!("{} {label}", hostname(meta));
        let node = match self.node_ids.get(&device) {
            Some(&id) => id,
            None => {
                let name = match agent_info(meta, agent) {
                    Some(a) => format!("{label} ({})", a.product_name),
                    None => label.clone(),
                };
                let node = Node {
                    name: self.string(&name),
                    class: self.string("accelerator"),
                    parent: Some(host),
                    domain: ffi::SYSTEM_TREE_DOMAIN_ACCELERATOR_DEVICE,
                };
                self.add_node(device, node)
            }
        };
        let group = Group {
            name: self.string(&label),
            kind: ffi::LOCATION_GROUP_TYPE_ACCELERATOR,
            node,
            creator: Some(process),
        };
        self.add_group((stream, Some(agent)), group)
    }

    /// The node of the stream's host, below the machine's.
    fn host_node(&mut self, meta: &StreamMeta) -> u32 {
        const MACHINE: &str = "";
        let machine = match self.node_ids.get(MACHINE) {
            Some(&id) => id,
            None => {
                let node = Node {
                    name: self.string("machine"),
                    class: self.string("machine"),
                    parent: None,
                    domain: ffi::SYSTEM_TREE_DOMAIN_MACHINE,
                };
                self.add_node(MACHINE.into(), node)
            }
        };
        let host = hostname(meta);
        match self.node_ids.get(host) {
            Some(&id) => id,
            None => {
                let node = Node {
                    name: self.string(host),
                    class: self.string("node"),
                    parent: Some(machine),
                    domain: ffi::SYSTEM_TREE_DOMAIN_SHARED_MEMORY,
                };
                self.add_node(host.into(), node)
            }
        }
    }

    fn add_node(&mut self, key: String, node: Node) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(node);
        self.node_ids.insert(key, id);
        id
    }

    fn add_group(&mut self, key: (u16, Option<u32>), group: Group) -> u32 {
        let id = self.groups.len() as u32;
        self.groups.push(group);
        self.group_ids.insert(key, id);
        id
    }

    /// Writes every definition.
    pub fn write(&mut self, out: &mut GlobalDefs<'_>) -> Result<(), SinkError> {
        // Record timestamps are rocprofiler-sdk's (CLOCK_BOOTTIME nanoseconds); the run
        // holds no offset to wall-clock time, so the realtime stamp stays undefined.
        let (first, last) = self.span.0.unwrap_or((0, 0));
        out.clock_properties(TICKS_PER_SECOND, first, last - first, None)?;
        let hip = self.string("HIP");
        let attributes: Vec<(u32, u32, u32)> = ATTRIBUTES
            .iter()
            .map(|&(id, name, description)| (id, self.string(name), self.string(description)))
            .collect();
        let empty = self.string("");
        for (id, text) in self.strings.iter().enumerate() {
            out.string(id as u32, text)?;
        }
        out.paradigm(ffi::PARADIGM_HIP, hip, ffi::PARADIGM_CLASS_ACCELERATOR)?;
        for (id, name, description) in attributes {
            out.attribute(id, name, description, ffi::TYPE_UINT64)?;
        }
        for (id, &(name, type_name)) in (FIRST_ARGUMENT..).zip(&self.arguments) {
            out.attribute(id, name, type_name, ffi::TYPE_STRING)?;
        }
        for (id, n) in self.nodes.iter().enumerate() {
            out.system_tree_node(id as u32, n.name, n.class, n.parent, n.domain)?;
        }
        for (id, g) in self.groups.iter().enumerate() {
            out.location_group(id as u32, g.name, g.kind, g.node, g.creator)?;
        }
        for (id, l) in self.locations.iter().enumerate() {
            out.location(LocationId(id as u64), l.name, l.kind, l.events, l.group)?;
        }
        for (id, &(name, canonical, kind)) in self.regions.iter().enumerate() {
            out.region(id as u32, name, canonical, kind.role, kind.paradigm)?;
        }
        for (id, &(name, description)) in self.metrics.iter().enumerate() {
            out.metric(id as u32, name, description, empty)?;
        }
        for &(metric, location) in &self.recorders {
            out.metric_recorder(metric, location)?;
        }
        Ok(())
    }
}

fn hostname(meta: &StreamMeta) -> &str {
    meta.process
        .as_ref()
        .map_or("localhost", |p| p.hostname.as_str())
}

fn thread_name(meta: &StreamMeta, tid: u32) -> String {
    let name = meta
        .threads
        .iter()
        .find(|t| t.tid == tid)
        .and_then(|t| t.name.as_deref());
    match name {
        Some(name) => format!("thread {tid} ({name})"),
        None => format!("thread {tid}"),
    }
}

/// `GPU 1`, `CPU 0`: the agent's type and rocflow index, as records name it.
pub fn agent_name(meta: &StreamMeta, agent: u32) -> String {
    match agent_info(meta, agent).map(|a| a.agent_type) {
        Some(AgentType::Gpu) => format!("GPU {agent}"),
        Some(AgentType::Cpu) => format!("CPU {agent}"),
        None => format!("agent {agent}"),
    }
}

pub fn agent_info(meta: &StreamMeta, agent: u32) -> Option<&Agent> {
    meta.agents.iter().find(|a| a.index == agent)
}
