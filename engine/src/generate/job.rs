//! Simulated MPI jobs, for campaigns: one spool per rank of a job spread over nodes, as
//! `rocflow run` under a Slurm launcher would leave them, with faults injected at known
//! places so that a campaign's recipes can be held against what was injected.
//!
//! Every rank runs the same steps. A step opens a ROCTx range (`step N`), launches the
//! same kernels (HIP API calls and their dispatches on the rank's GPU), then enters the
//! step's RCCL collectives in the same order as every other rank. A collective ends for
//! all ranks together, when the last has arrived: the next step starts in step on every
//! rank, so a rank that arrives late at one collective is late at that one alone. Ranks
//! arrive within [`JITTER_NS`] of each other (twice that at a collective), and a kernel's
//! dispatches vary by under 4% across ranks; the faults are:
//!
//! - a straggler: rank R arrives at the job's collective K (counted from 0 over the
//!   whole job) late by D nanoseconds;
//! - a slow rank: rank R's dispatches of kernel X take F times as long;
//! - a clock offset: every timestamp node N's processes record is shifted by D (their
//!   SDK clock, not their wall clock: a campaign's clock alignment takes it out).
//!
//! Times are a pure function of the seed, the rank, the step and the record, so each
//! rank's spool is written apart from the others, in parallel.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{KERNEL_NAMES, agents, operation};
use crate::record::hip_stream::NULL_STREAM;
use crate::record::{
    ApiCall, Batch, KernelDispatch, KernelSymbol, Marker, Meta, Process, Queue, Sym, Thread,
};
use crate::sdk::Domain;
use crate::spool::SpoolWriter;
use crate::wire;

/// What the hosts' clocks read when the job starts: the SDK's (time since boot) and the
/// wall clock's (Unix epoch, in 2026).
const BOOT_NS: i64 = 3_600_000_000_000;
const UNIX_NS: u64 = 1_780_000_000_000_000_000;

/// How far apart ranks arrive where nothing is injected: at a step's start, and again at
/// each collective.
pub const JITTER_NS: u64 = 20_000;
/// The host's time from a step's start to its first collective (its kernels are launched
/// in the first 700 µs).
const HOST_NS: u64 = 800_000;
/// A collective's time once the last rank arrived, and the host's time between two.
const COLLECTIVE_NS: u64 = 40_000;
const BETWEEN_NS: u64 = 10_000;
/// GPUs per node: rank R's GPU is its place on its node modulo this.
const GPUS: u32 = 8;

/// The kernels every rank launches in each step, in order, by index into
/// [`KERNEL_NAMES`], with their durations where nothing is injected.
const KERNELS: [(usize, u64); 6] = [
    (0, 120_000),
    (5, 80_000),
    (4, 20_000),
    (3, 15_000),
    (8, 8_000),
    (15, 30_000),
];

/// A job to simulate.
#[derive(Debug, Clone)]
pub struct Job {
    pub ranks: u32,
    pub nodes: u32,
    pub steps: u32,
    pub seed: u64,
    pub stragglers: Vec<Straggler>,
    pub slow_ranks: Vec<SlowRank>,
    pub clock_offsets: Vec<ClockOffset>,
}

/// Rank `rank` arrives at the job's collective `collective` late by `delay_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Straggler {
    pub rank: u32,
    pub collective: u32,
    pub delay_ns: u64,
}

/// Rank `rank`'s dispatches of kernel `kernel` (an index into the job's kernels) take
/// `factor` times as long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowRank {
    pub rank: u32,
    pub kernel: usize,
    pub factor: f64,
}

/// Every timestamp of node `node`'s processes is shifted by `offset_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOffset {
    pub node: u32,
    pub offset_ns: i64,
}

/// A collective of the job: what every rank calls, in the job's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Collective {
    step: u32,
    name: &'static str,
    /// The how-manieth call of this operation on each rank.
    occurrence: u32,
}

/// Why a job cannot be generated as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadJob(pub String);

impl std::fmt::Display for BadJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What was injected, named as a campaign's recipes name it: the file `injected.json`
/// beside the spools, for tests and users to hold the findings against.
#[derive(Debug, Serialize)]
pub struct Injected {
    pub ranks: u32,
    pub nodes: u32,
    pub steps: u32,
    pub seed: u64,
    /// The hosts, `node-00` on, and the ranks each holds.
    pub hosts: Vec<Host>,
    /// The kernels each rank runs, demangled as rocflow writes them, in the order
    /// `--slow-rank` counts them.
    pub kernels: Vec<String>,
    /// The collectives each rank enters, in the job's order (`--straggler` counts them).
    pub collectives: u32,
    pub stragglers: Vec<InjectedStraggler>,
    pub slow_ranks: Vec<InjectedSlowRank>,
    pub clock_offsets: Vec<InjectedOffset>,
}

#[derive(Debug, Serialize)]
pub struct Host {
    pub host: String,
    pub first_rank: u32,
    pub last_rank: u32,
}

#[derive(Debug, Serialize)]
pub struct InjectedStraggler {
    pub rank: u32,
    pub host: String,
    pub collective: u32,
    /// The operation, as the stragglers recipe names it (`ncclAllReduce`).
    pub name: String,
    /// Its occurrence on each rank (0 for the operation's first call).
    pub occurrence: u32,
    pub delay_ns: u64,
}

#[derive(Debug, Serialize)]
pub struct InjectedSlowRank {
    pub rank: u32,
    pub host: String,
    pub kernel: String,
    pub factor: f64,
}

#[derive(Debug, Serialize)]
pub struct InjectedOffset {
    pub node: u32,
    pub host: String,
    pub offset_ns: i64,
}

impl Job {
    /// Checks the job's shape and that every fault names a rank, node, kernel and
    /// collective the job has.
    pub fn check(&self) -> Result<(), BadJob> {
        let bad = |what: String| Err(BadJob(what));
        if self.ranks == 0 || self.nodes == 0 || self.steps == 0 {
            return bad("a job has at least one rank, one node and one step".into());
        }
        if self.nodes > self.ranks {
            return bad(format!(
                "{} nodes for {} ranks: every node runs a rank at least",
                self.nodes, self.ranks
            ));
        }
        let collectives = self.collectives().len() as u32;
        let rank = |rank: u32| match rank < self.ranks {
            true => Ok(()),
            false => Err(BadJob(format!(
                "rank {rank} is not in a job of {} ranks (0 to {})",
                self.ranks,
                self.ranks - 1
            ))),
        };
        for s in &self.stragglers {
            rank(s.rank)?;
            if s.collective >= collectives {
                return bad(format!(
                    "collective {} is not in the job: its {} steps enter {collectives} \
                     collectives (0 to {})",
                    s.collective,
                    self.steps,
                    collectives - 1
                ));
            }
        }
        for s in &self.slow_ranks {
            rank(s.rank)?;
            if s.kernel >= KERNELS.len() {
                return bad(format!(
                    "kernel {} is not in the job: its ranks run {} kernels (0 to {})",
                    s.kernel,
                    KERNELS.len(),
                    KERNELS.len() - 1
                ));
            }
        }
        for offset in &self.clock_offsets {
            if offset.node >= self.nodes {
                return bad(format!(
                    "node {} is not in a job of {} nodes (0 to {})",
                    offset.node,
                    self.nodes,
                    self.nodes - 1
                ));
            }
            if offset.offset_ns.unsigned_abs() >= BOOT_NS as u64 {
                return bad(format!(
                    "a clock offset of {} ns would put node {}'s clock before its boot: \
                     keep it under {BOOT_NS} ns either way",
                    offset.offset_ns, offset.node
                ));
            }
        }
        Ok(())
    }

    /// The node rank `rank` runs on: ranks fill the nodes in order, as many on each as
    /// fit evenly (the last may hold fewer).
    fn node(&self, rank: u32) -> u32 {
        rank / self.ranks.div_ceil(self.nodes)
    }

    /// The name of node `node`: `node-00`, two digits or as many as the last needs.
    pub fn host(&self, node: u32) -> String {
        let width = (self.nodes - 1).to_string().len().max(2);
        format!("node-{node:0width$}")
    }

    /// Where rank `rank`'s spool goes in `dir`.
    pub fn spool(dir: &Path, rank: u32) -> PathBuf {
        dir.join(format!("rank-{rank}.rfraw"))
    }

    /// Every collective of the job, in the order every rank enters them: a broadcast
    /// before the first step's reduction, an all-reduce in every step and an all-gather
    /// after it in every fourth.
    fn collectives(&self) -> Vec<Collective> {
        let mut all = Vec::new();
        let mut seen: Vec<(&'static str, u32)> = Vec::new();
        for step in 0..self.steps {
            let mut names = Vec::with_capacity(3);
            if step == 0 {
                names.push("ncclBroadcast");
            }
            names.push("ncclAllReduce");
            if step % 4 == 3 {
                names.push("ncclAllGather");
            }
            for name in names {
                let occurrence = match seen.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => {
                        *count += 1;
                        *count - 1
                    }
                    None => {
                        seen.push((name, 1));
                        0
                    }
                };
                all.push(Collective {
                    step,
                    name,
                    occurrence,
                });
            }
        }
        all
    }

    /// What the job injects, as `injected.json` says it.
    pub fn injected(&self) -> Injected {
        let collectives = self.collectives();
        let per_node = self.ranks.div_ceil(self.nodes);
        Injected {
            ranks: self.ranks,
            nodes: self.nodes,
            steps: self.steps,
            seed: self.seed,
            hosts: (0..self.nodes)
                .map(|node| Host {
                    host: self.host(node),
                    first_rank: node * per_node,
                    last_rank: ((node + 1) * per_node).min(self.ranks) - 1,
                })
                .collect(),
            kernels: KERNELS
                .iter()
                .map(|(name, _)| crate::kernel_names::demangle(KERNEL_NAMES[*name]))
                .collect(),
            collectives: collectives.len() as u32,
            stragglers: self
                .stragglers
                .iter()
                .map(|s| {
                    let c = collectives[s.collective as usize];
                    InjectedStraggler {
                        rank: s.rank,
                        host: self.host(self.node(s.rank)),
                        collective: s.collective,
                        name: c.name.into(),
                        occurrence: c.occurrence,
                        delay_ns: s.delay_ns,
                    }
                })
                .collect(),
            slow_ranks: self
                .slow_ranks
                .iter()
                .map(|s| InjectedSlowRank {
                    rank: s.rank,
                    host: self.host(self.node(s.rank)),
                    kernel: crate::kernel_names::demangle(KERNEL_NAMES[KERNELS[s.kernel].0]),
                    factor: s.factor,
                })
                .collect(),
            clock_offsets: self
                .clock_offsets
                .iter()
                .map(|o| InjectedOffset {
                    node: o.node,
                    host: self.host(o.node),
                    offset_ns: o.offset_ns,
                })
                .collect(),
        }
    }

    /// The job's timeline, shared by all ranks: when each step starts and when each
    /// collective ends (when its last rank arrived, and the collective ran).
    fn schedule(&self) -> Schedule {
        let collectives = self.collectives();
        let mut ends = Vec::with_capacity(collectives.len());
        let mut starts = Vec::with_capacity(self.steps as usize);
        let mut clock = 1_000_000;
        for (index, c) in collectives.iter().enumerate() {
            let first = starts.len() <= c.step as usize;
            if first {
                starts.push(clock);
            }
            let last = (0..self.ranks)
                .map(|rank| self.arrival(rank, index as u32, c.step, first, clock))
                .max()
                .expect("a job has ranks");
            clock = last + COLLECTIVE_NS;
            ends.push(clock);
            // The next step starts once the last collective of this one ended.
            if collectives.get(index + 1).is_none_or(|n| n.step != c.step) {
                clock += BETWEEN_NS;
            }
        }
        Schedule {
            collectives,
            starts,
            ends,
        }
    }

    /// When rank `rank` arrives at collective `index` of step `step`, from `since`: the
    /// step's start for its first collective, else the previous collective's end.
    fn arrival(&self, rank: u32, index: u32, step: u32, first: bool, since: u64) -> u64 {
        let before = match first {
            true => self.noise(rank, Slot::Step(step)) % JITTER_NS + HOST_NS,
            false => BETWEEN_NS,
        };
        let delay: u64 = (self.stragglers.iter())
            .filter(|s| s.rank == rank && s.collective == index)
            .map(|s| s.delay_ns)
            .sum();
        since + before + self.noise(rank, Slot::Collective(index)) % JITTER_NS + delay
    }

    /// A pseudo-random number of the job's seed, a rank and a slot.
    fn noise(&self, rank: u32, slot: Slot) -> u64 {
        let slot = match slot {
            Slot::Step(step) => u64::from(step) << 2,
            Slot::Collective(index) => u64::from(index) << 2 | 1,
            Slot::Dispatch(step, kernel) => (u64::from(step) << 8 | kernel as u64) << 2 | 2,
        };
        let seeded = mix(self.seed ^ u64::from(rank).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        mix(seeded ^ slot)
    }
}

/// splitmix64's finaliser: every bit of the result depends on every bit of `z`.
fn mix(z: u64) -> u64 {
    let z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a pseudo-random number is for.
#[derive(Clone, Copy)]
enum Slot {
    Step(u32),
    Collective(u32),
    Dispatch(u32, usize),
}

/// The timeline every rank shares (see [`Job::schedule`]).
struct Schedule {
    collectives: Vec<Collective>,
    starts: Vec<u64>,
    ends: Vec<u64>,
}

/// Writes every rank's spool into `dir` (created if need be), each under a temporary name
/// renamed when complete, on as many threads as the machine has cores; returns what was
/// injected and the records written.
pub fn write(job: &Job, dir: &Path) -> std::io::Result<(Injected, u64)> {
    std::fs::create_dir_all(dir)?;
    let schedule = job.schedule();
    let records = for_each_rank(job.ranks, |rank| {
        let path = Job::spool(dir, rank);
        let partial = path.with_extension("rfraw.partial");
        let mut writer = SpoolWriter::create(&partial)?;
        let mut frames = Vec::with_capacity(1 << 20);
        let records = rank_frames(job, &schedule, rank, &mut frames);
        writer.write(&frames)?;
        writer.finish()?;
        std::fs::rename(&partial, &path)?;
        Ok(records)
    })?;
    Ok((job.injected(), records))
}

/// Runs `each` for every rank on as many threads as rocflow works on; returns the
/// sum of what they return, or the first error.
pub fn for_each_rank(
    ranks: u32,
    each: impl Fn(u32) -> std::io::Result<u64> + Sync,
) -> std::io::Result<u64> {
    let next = std::sync::atomic::AtomicU32::new(0);
    let threads = crate::threads::count();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(ranks as usize))
            .map(|_| {
                scope.spawn(|| {
                    let mut sum = 0;
                    loop {
                        let rank = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if rank >= ranks {
                            return Ok(sum);
                        }
                        sum += each(rank)?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a rank's writer does not panic"))
            .sum()
    })
}

/// Rank `rank`'s whole run as wire frames appended to `frames`; returns its records.
fn rank_frames(job: &Job, schedule: &Schedule, rank: u32, frames: &mut Vec<u8>) -> u64 {
    let node = job.node(rank);
    let local = rank - node * job.ranks.div_ceil(job.nodes);
    let offset = (job.clock_offsets.iter())
        .filter(|o| o.node == node)
        .map(|o| o.offset_ns)
        .sum::<i64>();
    // The node's SDK clock: boot time, shifted by the offset injected.
    let sdk = |t: u64| (BOOT_NS + offset + t as i64) as u64;
    // Unique across the job, so that a summary by process tells every rank apart.
    let pid = 20_000 + rank;
    let gpu = 1 + local % GPUS;
    let started = job.noise(rank, Slot::Step(u32::MAX)) % 500_000;
    let mut meta = vec![Meta::Process(Process {
        pid,
        ppid: 19_999,
        hostname: job.host(node),
        command: vec!["./app".into(), "--steps".into(), job.steps.to_string()],
        start_ns: sdk(started),
        rank: Some(rank),
        world_size: Some(job.ranks),
        rank_variable: Some("SLURM_PROCID".into()),
        start_unix_ns: Some(UNIX_NS + started),
        kernel_start: None,
    })];
    meta.extend(agents(GPUS));
    meta.push(Meta::Thread(Thread {
        pid,
        tid: pid,
        name: None,
    }));
    meta.push(Meta::Queue(Queue {
        id: 1,
        agent: gpu,
        pid,
    }));
    meta.extend(KERNELS.iter().enumerate().map(|(i, (name, _))| {
        Meta::KernelSymbol(KernelSymbol {
            kernel_id: i as u64 + 1,
            code_object_id: 1,
            name: KERNEL_NAMES[*name].to_owned(),
            lds_bytes: 0,
            scratch_bytes: 0,
            arch_vgpr_count: 64,
            sgpr_count: 32,
            kernarg_bytes: 64,
        })
    }));
    meta.push(Meta::Strings {
        first: 0,
        values: (0..job.steps).map(|s| format!("step {s}")).collect(),
    });
    wire::encode_meta(0, &meta, frames);

    let hip = Domain::HipRuntimeApi.sdk_value() as u8;
    let rccl = Domain::RcclApi.sdk_value() as u8;
    let launch = operation(Domain::HipRuntimeApi, "hipLaunchKernel");
    let push = operation(Domain::MarkerCoreApi, "roctxRangePushA");
    let (mut calls, mut dispatches, mut markers) = (Vec::new(), Vec::new(), Vec::new());
    let mut correlation = 0;
    let mut gpu_free = 0;
    let mut collectives = schedule.collectives.iter().enumerate().peekable();
    for step in 0..job.steps {
        let start = schedule.starts[step as usize] + job.noise(rank, Slot::Step(step)) % JITTER_NS;
        let mut host = start + 10_000;
        for (k, (_, base)) in KERNELS.iter().enumerate() {
            correlation += 1;
            let call_end = host + 5_000;
            calls.push(ApiCall {
                pid,
                tid: pid,
                start_ns: sdk(host),
                end_ns: sdk(call_end),
                correlation_id: correlation,
                external_id: 0,
                domain_id: hip,
                operation_id: launch,
            });
            let factor: f64 = (job.slow_ranks.iter())
                .filter(|s| s.rank == rank && s.kernel == k)
                .map(|s| s.factor)
                .product();
            let spread = 1.0 + (job.noise(rank, Slot::Dispatch(step, k)) % 40) as f64 / 1000.0;
            let duration = (*base as f64 * spread * factor) as u64;
            let begin = gpu_free.max(call_end + 8_000);
            gpu_free = begin + duration;
            dispatches.push(KernelDispatch {
                pid,
                tid: pid,
                agent: gpu,
                queue: 1,
                dispatch_id: correlation,
                kernel_id: k as u64 + 1,
                start_ns: sdk(begin),
                end_ns: sdk(gpu_free),
                correlation_id: correlation,
                external_id: 0,
                grid_x: 65536,
                grid_y: 1,
                grid_z: 1,
                workgroup_x: 256,
                workgroup_y: 1,
                workgroup_z: 1,
                lds_bytes: 0,
                scratch_bytes: 0,
                vgpr_count: 64,
                sgpr_count: 32,
                graph_exec_id: 0,
                graph_node_id: 0,
                hip_stream: NULL_STREAM,
            });
            host = call_end + 100_000;
        }
        let mut since = schedule.starts[step as usize];
        let mut first = true;
        while let Some((index, c)) = collectives.next_if(|(_, c)| c.step == step) {
            let arrival = job.arrival(rank, index as u32, step, first, since);
            correlation += 1;
            calls.push(ApiCall {
                pid,
                tid: pid,
                start_ns: sdk(arrival),
                end_ns: sdk(schedule.ends[index]),
                correlation_id: correlation,
                external_id: 0,
                domain_id: rccl,
                operation_id: operation(Domain::RcclApi, c.name),
            });
            since = schedule.ends[index];
            first = false;
        }
        markers.push(Marker {
            pid,
            tid: pid,
            start_ns: sdk(start),
            end_ns: sdk(since),
            correlation_id: 0,
            external_id: 0,
            domain_id: Domain::MarkerCoreApi.sdk_value() as u8,
            operation_id: push,
            message: Sym(step),
        });
    }
    let records = (calls.len() + dispatches.len() + markers.len()) as u64;
    for batch in [
        Batch::Api(calls),
        Batch::KernelDispatch(dispatches),
        Batch::Marker(markers),
    ] {
        encode(batch, frames);
    }
    records
}

/// Encodes a batch as frames of at most [`super::BATCH`] records, as buffers flush them.
fn encode(batch: Batch, frames: &mut Vec<u8>) {
    let mut rest = batch;
    while !rest.is_empty() {
        let tail = rest.split_off(super::BATCH.min(rest.len()));
        wire::encode_records(0, &rest, frames);
        rest = tail;
    }
}
