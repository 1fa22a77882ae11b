//! The trace's tracks: what each shows, its stable id, its place in the tree the UI draws,
//! and its descriptor.
//!
//! Each process (stream) is a process track. Its host threads are thread tracks holding API
//! calls, with a child track for marker ranges. Each agent the process used is a group under
//! the process, holding a track per queue (kernels), per copy direction (copies), per counter
//! (a dispatch's values, and apart the device's samples), for allocated and scratch
//! memory, for HIP graph launches and per queue for HIP event barriers. A slice track whose spans overlap without nesting
//! spills into lanes: sibling tracks named `…, lane 2` and on.

use std::hash::{Hash, Hasher};

use super::proto::{Encoder, TRACE_PACKET, packet, track};
use crate::catalog::StreamMeta;
use crate::record::{Agent, MemoryCopy, Process};
use crate::sdk::{AgentType, Domain};

/// The thing a track shows, within one stream (process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Track {
    Process,
    /// A host thread's API calls.
    Thread(u32),
    /// A host thread's marker ranges.
    Markers(u32),
    /// An agent's group.
    Agent(u32),
    /// Kernels on a queue: agent, queue.
    Queue(u32, u64),
    /// Copies an agent's engines ran: agent, direction (the copy operation).
    Copies(u32, u8),
    /// A counter's values on an agent: agent, counter.
    Counter(u32, u32),
    /// A counter's device-wide samples on an agent: agent, counter.
    DeviceCounter(u32, u32),
    /// A counter's SPM samples on an agent, its instances summed: agent, counter.
    Spm(u32, u32),
    /// Memory allocated on an agent.
    Allocated(u32),
    /// Scratch memory held on an agent.
    Scratch(u32),
    /// HIP graphs launched on an agent (the SDK names no queue for them).
    Graphs(u32),
    /// HIP event barriers on a queue: agent, queue.
    Barriers(u32, u64),
}

/// A track of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TrackKey {
    pub stream: u16,
    pub track: Track,
}

impl TrackKey {
    /// The uuid of the track's lane `lane` (0 is the track itself): a hash, so that every
    /// sequence and every file of a split trace names a track alike.
    pub fn uuid(self, lane: usize) -> u64 {
        // SipHash with fixed keys: stable across runs and builds of one Rust release line.
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new();
        (self, lane).hash(&mut hasher);
        hasher.finish() | 1
    }

    /// The track this one is drawn under.
    fn parent(self) -> Option<TrackKey> {
        let track = match self.track {
            Track::Process => return None,
            Track::Thread(_) | Track::Agent(_) => Track::Process,
            Track::Markers(tid) => Track::Thread(tid),
            Track::Queue(agent, _)
            | Track::Copies(agent, _)
            | Track::Counter(agent, _)
            | Track::DeviceCounter(agent, _)
            | Track::Spm(agent, _)
            | Track::Allocated(agent)
            | Track::Scratch(agent)
            | Track::Graphs(agent)
            | Track::Barriers(agent, _) => Track::Agent(agent),
        };
        Some(TrackKey { track, ..self })
    }

    /// Writes the descriptor packets of lane `lane` of this track and of the tracks above
    /// it that `described` does not hold yet, outermost first; `described` learns them.
    pub fn describe(
        self,
        lane: usize,
        meta: &StreamMeta,
        sequence: u32,
        described: &mut rustc_hash::FxHashSet<u64>,
        out: &mut Encoder,
    ) {
        let uuid = self.uuid(lane);
        if described.contains(&uuid) {
            return;
        }
        // Lanes of a thread's calls hang under the thread; other lanes beside their track.
        let parent = match (lane, self.track) {
            (1.., Track::Thread(_)) => Some(self),
            _ => self.parent(),
        };
        if let Some(parent) = parent {
            parent.describe(0, meta, sequence, described, out);
        }
        described.insert(uuid);
        out.message(TRACE_PACKET, |p| {
            p.uint(packet::TRUSTED_PACKET_SEQUENCE_ID, u64::from(sequence));
            p.message(packet::TRACK_DESCRIPTOR, |d| {
                d.uint(track::UUID, uuid);
                if let Some(parent) = parent {
                    d.uint(track::PARENT_UUID, parent.uuid(0));
                }
                self.fields(lane, meta, d);
            });
        });
    }

    /// The descriptor's own fields: name, and what kind of track it is.
    fn fields(self, lane: usize, meta: &StreamMeta, d: &mut Encoder) {
        let pid = meta.process.as_ref().map_or(0, |p| p.pid);
        let name = match self.track {
            Track::Process => {
                d.message(track::PROCESS, |p| {
                    p.uint(track::PROCESS_PID, u64::from(pid));
                    if let Some(process) = &meta.process {
                        for arg in &process.command {
                            p.str(track::PROCESS_CMDLINE, arg);
                        }
                        if let Some(name) = process_name(process) {
                            p.str(track::PROCESS_NAME, &name);
                        }
                    }
                });
                return;
            }
            Track::Thread(tid) if lane == 0 => {
                d.message(track::THREAD, |t| {
                    t.uint(track::THREAD_PID, u64::from(pid));
                    t.uint(track::THREAD_TID, u64::from(tid));
                    let name = meta.threads.iter().find(|t| t.tid == tid);
                    if let Some(name) = name.and_then(|t| t.name.as_deref()) {
                        t.str(track::THREAD_NAME, name);
                    }
                });
                return;
            }
            Track::Thread(_) => "API calls".to_owned(),
            Track::Markers(_) => "markers".to_owned(),
            Track::Agent(agent) => agent_name(meta, agent),
            Track::Queue(_, queue) => format!("queue {queue}"),
            Track::Copies(_, direction) => {
                let name = Domain::MemoryCopy.operation_name(i32::from(direction));
                let name = name.unwrap_or("<unknown>").to_lowercase();
                format!("copies {}", name.replace('_', " "))
            }
            Track::Counter(_, counter) => meta.counter_name(counter).to_owned(),
            Track::DeviceCounter(_, counter) => {
                format!("{} (device)", meta.counter_name(counter))
            }
            Track::Spm(_, counter) => format!("{} (SPM)", meta.counter_name(counter)),
            Track::Allocated(_) => "allocated memory".to_owned(),
            Track::Scratch(_) => "scratch memory".to_owned(),
            Track::Graphs(_) => "HIP graph launches".to_owned(),
            Track::Barriers(_, queue) => format!("queue {queue} HIP event barriers"),
        };
        match lane {
            0 => d.str(track::NAME, &name),
            _ => d.str(track::NAME, &format!("{name}, lane {}", lane + 1)),
        }
        if matches!(
            self.track,
            Track::Counter(..)
                | Track::DeviceCounter(..)
                | Track::Spm(..)
                | Track::Allocated(_)
                | Track::Scratch(_)
        ) {
            d.message(track::COUNTER, |c| {
                if matches!(self.track, Track::Allocated(_) | Track::Scratch(_)) {
                    c.uint(track::COUNTER_UNIT, track::UNIT_SIZE_BYTES);
                }
            });
        }
    }
}

/// The agent `index` of a stream, if its metadata has it.
pub fn agent(meta: &StreamMeta, index: u32) -> Option<&Agent> {
    meta.agents.iter().find(|a| a.index == index)
}

/// `GPU 1: AMD Instinct MI300X (gfx942)`.
fn agent_name(meta: &StreamMeta, index: u32) -> String {
    match agent(meta, index) {
        Some(a) => {
            let kind = match a.agent_type {
                AgentType::Gpu => "GPU",
                AgentType::Cpu => "CPU",
            };
            format!("{kind} {index}: {} ({})", a.product_name, a.name)
        }
        None => format!("agent {index}"),
    }
}

/// The agent whose engines ran a copy: the destination's, unless it is the host.
pub fn copy_agent(r: &MemoryCopy, meta: &StreamMeta) -> u32 {
    let is_gpu = |index| agent(meta, index).is_some_and(|a| a.agent_type == AgentType::Gpu);
    if is_gpu(r.dst_agent) || !is_gpu(r.src_agent) {
        r.dst_agent
    } else {
        r.src_agent
    }
}

/// A process's name in the trace: its program, and its place in its MPI job where the
/// launcher gave one (`app [rank 3/1024]`), so the ranks of a job tell apart in the UI.
fn process_name(process: &Process) -> Option<String> {
    let program = process.command.first()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    Some(match (process.rank, process.world_size) {
        (Some(rank), Some(size)) => format!("{name} [rank {rank}/{size}]"),
        (Some(rank), None) => format!("{name} [rank {rank}]"),
        (None, _) => name.to_owned(),
    })
}
