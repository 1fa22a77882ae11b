//! The tool's state for the life of the process: the SDK's entry points, the Plan, and
//! what the SDK told the tool about agents, kernels, code objects and counters. Every
//! callback reads it through [`tool`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{OnceLock, RwLock};

use rustc_hash::FxHashMap;

use rocflow_core::abi::Handle;
use rocflow_core::contexts::PlanContexts;
use rocflow_core::record::{Meta, Process};

use crate::api::Api;
use crate::guard::locked;

/// Kernel id → (arch VGPRs, SGPRs, name), from kernel symbol registration.
pub type Kernels = FxHashMap<u64, (u32, u32, String)>;

/// The tool's state for the life of the process.
pub struct Tool {
    pub api: Api,
    pub plan: PlanContexts,
    pub socket: PathBuf,
    /// Which of the counters' passes this run of the application counts (`ROCFLOW_PASS`,
    /// from 0; the runner runs the application once per pass).
    pub pass: usize,
    /// Agent handles in rocflow's agent index order (set in initialize, read-only after).
    pub agents: OnceLock<Vec<u64>>,
    pub kernels: RwLock<Kernels>,
    /// Code object id → agent index.
    pub code_objects: RwLock<HashMap<u64, u32>>,
    /// Counter id → the dimension ids of its instances (set in initialize).
    pub counter_dimensions: OnceLock<HashMap<u64, Vec<u64>>>,
}

/// Set once, by `rocprofiler_configure`.
pub static TOOL: OnceLock<Tool> = OnceLock::new();

pub fn tool() -> Option<&'static Tool> {
    TOOL.get()
}

impl Tool {
    pub fn agent_index(&self, handle: Handle) -> u32 {
        // A node has a handful of agents: a scan beats hashing.
        self.agents
            .get()
            .and_then(|a| a.iter().position(|h| *h == handle.handle))
            .map_or(u32::MAX, |i| i as u32)
    }

    pub fn kernel_name(&self, kernel_id: u64) -> Option<String> {
        locked(self.kernels.read())
            .get(&kernel_id)
            .map(|k| k.2.clone())
    }

    pub fn code_object_agent(&self, id: u64) -> u32 {
        locked(self.code_objects.read())
            .get(&id)
            .copied()
            .unwrap_or(u32::MAX)
    }

    pub fn counter_dimensions(&self, counter: Handle) -> &[u64] {
        self.counter_dimensions
            .get()
            .and_then(|d| d.get(&counter.handle))
            .map_or(&[], Vec::as_slice)
    }

    /// This process, as the runner's metadata describes it.
    pub fn process(&self) -> Meta {
        let command = std::fs::read("/proc/self/cmdline")
            .map(|bytes| {
                bytes
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let world = rocflow_core::mpi::world(|v| std::env::var(v).ok());
        Meta::Process(Process {
            pid: std::process::id(),
            // SAFETY: getppid has no preconditions.
            ppid: unsafe { libc::getppid() } as u32,
            hostname: hostname(),
            command,
            start_ns: self.api.timestamp(),
            rank: world.as_ref().map(|w| w.rank),
            world_size: world.as_ref().and_then(|w| w.size),
            rank_variable: world.map(|w| w.variable),
            start_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_nanos() as u64),
            kernel_start: kernel_start(),
        })
    }
}

/// When the kernel started this process (`starttime`, the 22nd field of
/// `/proc/self/stat`, which follows the command name in parentheses).
fn kernel_start() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().nth(19)?.parse().ok()
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: a writable buffer of the given length.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
