//! Metadata: what gives records meaning (agents, kernels, counters, processes, threads,
//! strings). It is small and rare next to records, so it travels as JSON in meta frames
//! sent before the records that use it.

use serde::{Deserialize, Serialize};

use super::RecordKind;
use crate::sdk::AgentType;

/// One metadata item of a stream (one process).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Meta {
    /// Interned strings, numbered consecutively from `first` (see [`super::Sym`]).
    Strings {
        first: u32,
        values: Vec<String>,
    },
    /// ROCTx messages by the correlation id of the marker record they belong to, each a
    /// string of the stream's table: buffered marker records carry none, so the tool
    /// takes them from the marker API's callbacks and sends them before the records, one
    /// pair per call: in frames of integers of their own, not as JSON (see [`crate::wire`]).
    MarkerMessages {
        messages: Vec<(u64, u32)>,
    },
    Process(Process),
    Agent(Agent),
    CodeObject(CodeObject),
    KernelSymbol(KernelSymbol),
    Counter(CounterInfo),
    Thread(Thread),
    Queue(Queue),
    Stream(Stream),
    /// Records lost before they reached rocflow (a full buffer under the discard policy).
    Dropped {
        kind: RecordKind,
        count: u64,
    },
    /// Dispatch records of kernel replay's passes that were not the application's own
    /// execution: the tool leaves them out, so that a replayed dispatch counts once. With
    /// them, the dispatches the SDK did not replay (a HIP graph launch's, a multi-packet
    /// submission's) as (kernel id, dispatches): they have the first pass's counters only.
    ReplayedPasses {
        count: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unreplayed: Vec<(u64, u64)>,
    },
    /// The compiled plan the run was recorded with (JSON), so a replay can reuse it.
    Plan {
        json: String,
    },
    /// How the application ended; the runner adds it once the application has exited.
    Exit(Exit),
    /// The runner starts the application for pass `number` (from 1) of a counters
    /// context's passes: the streams that connect from now on belong to it.
    Pass {
        number: u32,
    },
    /// What the tool library cost the process: CPU time in buffer callbacks and in its
    /// writer thread, for the records it sent. The tool's last item.
    ToolCost(ToolCost),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCost {
    pub records: u64,
    pub callback_ns: u64,
    pub writer_ns: u64,
}

impl ToolCost {
    /// CPU nanoseconds per record, callbacks and writer together; none without records.
    pub fn ns_per_record(&self) -> Option<f64> {
        let ns = self.callback_ns as f64 + self.writer_ns as f64;
        (self.records > 0).then(|| ns / self.records as f64)
    }
}

/// An application's end: its exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// The status a shell reports: the code, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            Exit::Code(code) => code,
            Exit::Signal(signal) => 128 + signal,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub pid: u32,
    pub ppid: u32,
    pub hostname: String,
    pub command: Vec<String>,
    /// When the process was described, on rocprofiler-sdk's clock (boot time), as records'
    /// times are.
    pub start_ns: u64,
    /// MPI rank, when the launcher says.
    pub rank: Option<u32>,
    /// The number of ranks of its MPI job, when the launcher says.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// The launcher's variable the rank was read from (`SLURM_PROCID`, …): a rocpd
    /// database keeps the rank in the process's environment, as rocprofv3 does.
    #[serde(default)]
    pub rank_variable: Option<String>,
    /// When the process was described, by the wall clock (nanoseconds since the Unix
    /// epoch): when its run started, for `{timestamp}`. Spools written before rocflow kept
    /// it have none.
    #[serde(default)]
    pub start_unix_ns: Option<u64>,
    /// When the kernel started the process, in clock ticks since boot (`starttime` of
    /// `/proc/PID/stat`): an `exec` keeps it, as it keeps the pid, while a process that
    /// later gets the same pid has another. Spools written before rocflow kept it, and
    /// databases from elsewhere, have none.
    #[serde(default)]
    pub kernel_start: Option<u64>,
}

impl Process {
    /// Whether `other` describes the same process, perhaps running another program: one
    /// that `exec`s loads the tool anew and describes itself again, under its pid.
    pub fn is_same_as(&self, other: &Process) -> bool {
        let started_together = match (self.kernel_start, other.kernel_start) {
            (Some(a), Some(b)) => a == b,
            // Nothing tells an exec from a pid used again: one host, one pid, one process.
            _ => true,
        };
        self.pid == other.pid && self.hostname == other.hostname && started_together
    }
}

/// An agent as `rocprofiler_agent_v0_t` describes it (the fields tools use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// rocflow's index of the agent within its process (records refer to agents by it).
    pub index: u32,
    /// The SDK's agent handle.
    pub handle: u64,
    pub agent_type: AgentType,
    pub node_id: u32,
    pub logical_node_id: u32,
    /// Architecture name, e.g. `gfx942`.
    pub name: String,
    pub product_name: String,
    pub cu_count: u32,
    pub simd_count: u32,
    pub xcc_count: u32,
    pub wave_front_size: u32,
    pub max_waves_per_simd: u32,
    pub lds_bytes_per_cu: u32,
    pub max_engine_clk_mhz: u32,
}

/// Reads one agent property.
type Property = fn(&Agent) -> Option<u32>;

impl Agent {
    /// The agent properties counter expressions may read (`reduce(SQ_WAVES,sum)/simd_count`),
    /// by rocprofiler-sdk's names: those the agent's metadata carries.
    pub const PROPERTIES: &[(&str, Property)] = &[
        ("simd_count", |a| Some(a.simd_count)),
        ("simd_per_cu", |a| a.simd_count.checked_div(a.cu_count)),
        ("num_xcc", |a| Some(a.xcc_count)),
        ("wave_front_size", |a| Some(a.wave_front_size)),
        ("max_waves_per_simd", |a| Some(a.max_waves_per_simd)),
        ("lds_size_in_kb", |a| Some(a.lds_bytes_per_cu / 1024)),
    ];

    /// The value of the agent property `name`, if it is one of [`Agent::PROPERTIES`].
    pub fn property(&self, name: &str) -> Option<f64> {
        let (_, read) = Self::PROPERTIES.iter().find(|(n, _)| *n == name)?;
        read(self).map(f64::from)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeObject {
    pub id: u64,
    pub agent: u32,
    pub uri: String,
    pub load_base: u64,
    pub load_size: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSymbol {
    pub kernel_id: u64,
    pub code_object_id: u64,
    /// The kernel's (usually mangled) name.
    pub name: String,
    pub lds_bytes: u32,
    pub scratch_bytes: u32,
    pub arch_vgpr_count: u32,
    pub sgpr_count: u32,
    pub kernarg_bytes: u32,
}

/// A counter an agent collects, with its dimensions (name, size) in the order of
/// `rocflow_core::sdk::COUNTER_DIMENSIONS` that apply to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterInfo {
    pub id: u32,
    pub agent: u32,
    pub name: String,
    pub description: String,
    pub dimensions: Vec<(String, u32)>,
}

impl CounterInfo {
    /// The values a dispatch has of this counter, one per instance: the product of its
    /// dimensions' sizes (`u64::MAX` when that does not fit).
    pub fn instances(&self) -> u64 {
        (self.dimensions.iter()).fold(1, |n, &(_, size)| n.saturating_mul(u64::from(size)))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    pub pid: u32,
    pub tid: u32,
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub id: u64,
    pub agent: u32,
    pub pid: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stream {
    pub id: u64,
    pub pid: u32,
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_passes_of_a_spool_written_before_unreplayed_dispatches_read_as_none() {
        let older: Meta = serde_json::from_str(r#"{"type":"replayed_passes","count":3}"#).unwrap();
        let none = Meta::ReplayedPasses {
            count: 3,
            unreplayed: Vec::new(),
        };
        assert_eq!(older, none);
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"type":"replayed_passes","count":3}"#
        );
        let some = Meta::ReplayedPasses {
            count: 0,
            unreplayed: vec![(7, 3)],
        };
        let json = serde_json::to_string(&some).unwrap();
        assert_eq!(serde_json::from_str::<Meta>(&json).unwrap(), some);
    }

    #[test]
    fn a_process_is_itself_across_exec_and_not_a_later_one_with_its_pid() {
        let launcher = Process {
            pid: 7,
            ppid: 1,
            hostname: "node".into(),
            command: vec!["launcher".into()],
            start_ns: 10,
            rank: None,
            world_size: None,
            rank_variable: None,
            start_unix_ns: None,
            kernel_start: Some(500),
        };
        let exec = |command: &str, kernel_start| Process {
            command: vec![command.into()],
            start_ns: 20,
            kernel_start,
            ..launcher.clone()
        };
        assert!(exec("app", Some(500)).is_same_as(&launcher));
        assert!(
            !exec("app", Some(900)).is_same_as(&launcher),
            "pid used again"
        );
        // Without the kernel's start time, one host and one pid are one process.
        assert!(exec("app", None).is_same_as(&launcher));
        let elsewhere = Process {
            hostname: "other".into(),
            ..exec("app", Some(500))
        };
        assert!(!elsewhere.is_same_as(&launcher));
    }
}
