//! The SDK's state: its phase, the contexts and buffers a tool sets up while it
//! initializes, frozen into the running state after, and the one SDK of the process with
//! its device. The C API ([`crate::api`]) changes it; the workload reads it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rocflow_core::abi::ShaderDataCallback;
use rocflow_core::abi::{
    DeviceCountingCallback, DispatchCountingCallback, Handle, Status, TracingCallback, UserData,
    status,
};
use rocflow_core::agent_counters;
use rocflow_core::scenario::{self, Scenario};
use rocflow_core::sdk::SdkVersion;
use rocflow_core::thread_trace::DispatchCallback;

use crate::activity::Activity;
use crate::buffer::{Buffer, BufferDef};
use crate::device::Device;
use crate::ledger::Ledger;
use crate::stderr::warn;

/// The version the simulated SDK reports: its scenario's, by default that of the newest
/// headers whose domains it traces (its other layouts, SDK 1.0's, are unchanged since).
pub fn version() -> SdkVersion {
    installed().map_or(rocflow_core::sdk::SIMULATED, |sdk| {
        sdk.scenario.sdk_version()
    })
}

pub const CONTEXT_HANDLE_BASE: u64 = 0x1000;
pub const BUFFER_HANDLE_BASE: u64 = 0x2000;
pub const CONFIG_HANDLE_BASE: u64 = 0x4000;
/// SPM configurations' handles start here, apart from dispatch counting's.
pub const SPM_CONFIG_HANDLE_BASE: u64 = 0x5000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Phase {
    /// Loaded; no tool initialized yet.
    Loaded = 0,
    /// The tool's initialize callback is running: setup calls are allowed.
    Initializing = 1,
    Running = 2,
    /// The SDK is finalizing (the process exits): tools are being finalized.
    Finalizing = 3,
    Finalized = 4,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::Loaded as u8);

pub fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::Loaded,
        1 => Phase::Initializing,
        2 => Phase::Running,
        3 => Phase::Finalizing,
        _ => Phase::Finalized,
    }
}

pub fn set_phase(phase: Phase) {
    PHASE.store(phase as u8, Ordering::Release);
}

/// A callback-tracing subscription.
#[derive(Clone)]
pub struct Subscription {
    pub kind: i32,
    /// The operations it asked for (`None`: all).
    pub operations: Option<Vec<i32>>,
    pub callback: TracingCallback,
    pub data: *mut c_void,
}

#[derive(Clone, Copy)]
pub struct Counting {
    pub buffer: usize,
    pub callback: DispatchCountingCallback,
    pub data: *mut c_void,
}

#[derive(Clone, Copy)]
pub struct PcService {
    pub gpu: usize,
    pub buffer: usize,
}

/// A device counting service of a context, as configured for one agent.
#[derive(Clone, Copy)]
pub struct DeviceService {
    pub agent: Handle,
    /// The agent's GPU; the SDK takes any agent, and samples none that is not a GPU.
    pub gpu: Option<usize>,
    /// Where reads also put their values (`None`: returned to the caller only).
    pub buffer: Option<usize>,
    pub callback: DeviceCountingCallback,
    pub data: *mut c_void,
}

/// A context's device counting while the application runs.
#[derive(Default)]
pub struct Sampling {
    /// Per service, the counters its callback chose when the context last started.
    pub chosen: Mutex<Vec<Option<Vec<usize>>>>,
    /// When the context last started: reads count from then.
    pub started_at: AtomicU64,
    /// A read or a start is under way (the real SDK's LOCKED state).
    pub busy: AtomicBool,
}

/// The dispatch thread-trace service as configured on one agent of a context.
#[derive(Clone, Copy)]
pub struct TraceService {
    pub agent: Handle,
    pub target_cu: u8,
    pub simd_select: u8,
    pub shader_engine_mask: u64,
    pub serialize_all: bool,
    pub dispatch: DispatchCallback,
    pub shader: ShaderDataCallback,
    pub data: *mut c_void,
}

/// The device service as configured on one agent of a context.
#[derive(Clone, Copy)]
pub struct DeviceTraceService {
    pub agent: Handle,
    pub target_cu: u8,
    pub simd_select: u8,
    pub shader_engine_mask: u64,
    pub shader: ShaderDataCallback,
    pub data: UserData,
}

/// The dispatches a started context's device traces have seen: the scenario's kernel
/// index and when each started.
#[derive(Default)]
pub struct Window {
    pub ran: Mutex<Vec<(usize, u64)>>,
    /// The context's traces started: it was started once the runtime had loaded.
    pub tracing: AtomicBool,
}

/// The buffered dispatch SPM service of a context.
#[derive(Clone, Copy)]
pub struct SpmService {
    pub buffer: usize,
    pub callback: rocflow_core::abi::SpmDispatchCallback,
    pub data: *mut c_void,
}

/// One context's services.
#[derive(Default)]
pub struct ContextSetup {
    /// Buffer tracing: domain value, the operations traced (`None`: all), buffer index.
    pub tracing: Vec<(i32, Option<Vec<i32>>, usize)>,
    pub subscriptions: Vec<Subscription>,
    pub counting: Option<Counting>,
    pub pc_sampling: Vec<PcService>,
    pub device_counting: Vec<DeviceService>,
    /// The dispatch thread-trace service, per agent it was configured on.
    pub thread_trace: Vec<TraceService>,
    /// The device thread-trace service, per agent it was configured on.
    pub device_thread_trace: Vec<DeviceTraceService>,
    /// The buffered dispatch SPM service.
    pub spm: Option<SpmService>,
    /// The external correlation id request service.
    pub requests: Option<Requests>,
    pub started: bool,
    /// The client that created it (its client id's handle).
    pub client: u32,
}

// The tool's callback data pointers are only handed back to the tool.
unsafe impl Send for ContextSetup {}
unsafe impl Sync for ContextSetup {}

impl ContextSetup {
    /// The subscription to callbacks of `kind`, `operation`, if any.
    pub fn subscribed(&self, kind: i32, operation: i32) -> Option<&Subscription> {
        self.subscriptions.iter().find(|s| {
            s.kind == kind
                && s.operations
                    .as_ref()
                    .is_none_or(|ops| ops.contains(&operation))
        })
    }

    /// Whether the SDK runs one dispatch at a time on each agent while the context runs:
    /// it counts dispatches, or traces threads with `serialize_all`.
    pub fn serializes(&self) -> bool {
        self.counting.is_some() || self.thread_trace.iter().any(|t| t.serialize_all)
    }

    /// Whether either thread-trace service is configured: the tool then needs the code
    /// objects' bytes.
    pub fn traces_threads(&self) -> bool {
        !self.thread_trace.is_empty() || !self.device_thread_trace.is_empty()
    }

    /// The buffer receiving records of `domain`, `operation`, if traced.
    pub fn traces(&self, domain: i32, operation: i32) -> Option<usize> {
        self.tracing.iter().find_map(|(d, ops, buffer)| {
            (*d == domain && ops.as_ref().is_none_or(|ops| ops.contains(&operation)))
                .then_some(*buffer)
        })
    }
}

pub struct Context {
    pub setup: ContextSetup,
    pub active: AtomicBool,
    /// Code objects are reported to a context once, when it first starts.
    pub code_objects_sent: AtomicBool,
    pub sampling: Sampling,
    /// What the device thread-trace service has seen since the context last started.
    pub device_trace: Window,
}

/// The frozen setup, after initialize.
pub struct Running {
    pub contexts: Vec<Context>,
    pub buffers: Vec<Buffer>,
    /// Per GPU, when its last serialized dispatch ends: while a context counting
    /// dispatches is started, the SDK runs one dispatch at a time on each agent, whatever
    /// its queue (and whether or not the callback picks counters for it).
    pub serialized_until: Vec<AtomicU64>,
    /// The dispatches of the GPUs whose counters are sampled.
    pub ledger: Ledger,
}

impl Running {
    /// When a dispatch ready at `ready` on GPU `gpu` starts: then, or after the agent's
    /// previous dispatch while dispatches are serialized.
    pub fn dispatch_start(&self, gpu: usize, ready: u64, duration_ns: u64) -> u64 {
        let serializing = self
            .contexts
            .iter()
            .any(|c| c.setup.serializes() && c.active.load(Ordering::Acquire));
        if !serializing {
            return ready;
        }
        let previous = self.serialized_until[gpu]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |until| {
                Some(ready.max(until) + duration_ns)
            })
            .expect("the update always succeeds");
        ready.max(previous)
    }
}

/// Contexts and buffers as initialize creates them.
pub type Setup = (Vec<ContextSetup>, Vec<(Handle, BufferDef)>);

pub struct Sdk {
    pub scenario: Scenario,
    pub device: Device,
    pub setup: Mutex<Setup>,
    running: OnceLock<Running>,
    /// Counter configurations: the GPU and its counters' indexes into `device.counters`.
    pub configs: Mutex<Vec<(usize, Vec<usize>)>>,
    /// When each GPU runs kernels, which the simulated AMD-SMI's readings follow.
    pub activity: Activity,
}

static SDK: OnceLock<Sdk> = OnceLock::new();

pub fn install(scenario: Scenario) -> &'static Sdk {
    SDK.get_or_init(|| Sdk {
        device: Device::new(&scenario, definitions(&scenario)),
        activity: Activity::new(scenario.agents.len()),
        scenario,
        setup: Mutex::new((Vec::new(), Vec::new())),
        running: OnceLock::new(),
        configs: Mutex::new(Vec::new()),
    })
}

pub fn sdk() -> Option<&'static Sdk> {
    SDK.get()
}

/// Why the simulated device has no scenario.
#[derive(Debug, thiserror::Error)]
enum ScenarioFileError {
    #[error("{path}: {source}")]
    File {
        path: String,
        source: scenario::ReadError,
    },
    #[error(transparent)]
    BuiltIn(#[from] scenario::ScenarioError),
}

/// The scenario `ROCFLOW_SIM_SCENARIO` names, or the built-in one, as this process's MPI
/// rank replays it.
fn scenario() -> Result<Scenario, ScenarioFileError> {
    let rank = rocflow_core::mpi::world(|v| std::env::var(v).ok()).map(|w| w.rank);
    let Ok(path) = std::env::var("ROCFLOW_SIM_SCENARIO") else {
        return Ok(Scenario::parse(scenario::DEFAULT)?.for_rank(rank));
    };
    let scenario = Scenario::read(path.as_ref());
    Ok(scenario
        .map_err(|source| ScenarioFileError::File { path, source })?
        .for_rank(rank))
}

/// The counter definitions the scenario's agents take their counters from, if any; ones
/// that do not load are said, and the agents keep the counters they list.
fn definitions(scenario: &Scenario) -> Option<rocflow_counters::Definitions> {
    agent_counters::definitions(scenario).unwrap_or_else(|e| {
        warn(&format!(
            "{e}; the agents offer only the counters their scenario lists"
        ));
        None
    })
}

/// The SDK with its device, installed from the scenario if nothing did yet: as the real
/// SDK reads the device's topology when first asked, the queries of the device answer in a
/// process no tool configured (`rocflow agents` asks so, as `rocprofv3-avail` does). `None`
/// when the scenario does not read, which is said once.
pub fn installed() -> Option<&'static Sdk> {
    static FAILED: OnceLock<()> = OnceLock::new();
    if let Some(sdk) = SDK.get() {
        return Some(sdk);
    }
    if FAILED.get().is_some() {
        return None;
    }
    match scenario() {
        Ok(scenario) => Some(install(scenario)),
        Err(e) => {
            FAILED.get_or_init(|| warn(&format!("scenario {e}; the simulated device stays off")));
            None
        }
    }
}

impl Sdk {
    /// Ends setup: what initialize configured becomes the running state.
    pub fn freeze(&self) -> &Running {
        self.running.get_or_init(|| {
            let (contexts, buffers) = std::mem::take(&mut *self.setup.lock().unwrap());
            let contexts: Vec<Context> = contexts
                .into_iter()
                .map(|setup| Context {
                    active: AtomicBool::new(setup.started),
                    code_objects_sent: AtomicBool::new(false),
                    sampling: Default::default(),
                    device_trace: Default::default(),
                    setup,
                })
                .collect();
            Running {
                ledger: Ledger::new(self.device.agents.len().saturating_sub(1), |gpu| {
                    (contexts.iter())
                        .any(|c| c.setup.device_counting.iter().any(|s| s.gpu == Some(gpu)))
                }),
                contexts,
                buffers: buffers
                    .into_iter()
                    .map(|(id, def)| Buffer::new(id, def))
                    .collect(),
                serialized_until: (1..self.device.agents.len())
                    .map(|_| AtomicU64::new(0))
                    .collect(),
            }
        })
    }

    pub fn running(&self) -> Option<&Running> {
        self.running.get()
    }
}

pub fn context_index(id: Handle) -> usize {
    id.handle.wrapping_sub(CONTEXT_HANDLE_BASE) as usize
}

pub fn buffer_index(id: Handle) -> usize {
    id.handle.wrapping_sub(BUFFER_HANDLE_BASE) as usize
}

/// Nanoseconds of `CLOCK_BOOTTIME`, the SDK's clock.
pub fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The configuration a counting callback picked, if it is valid.
pub fn counter_config(sdk: &Sdk, config: Handle) -> Option<(usize, Vec<usize>)> {
    let index = config.handle.checked_sub(CONFIG_HANDLE_BASE)? as usize;
    sdk.configs.lock().unwrap().get(index).cloned()
}

/// An SPM counter configuration: its GPU, counters (indexes into the device's) and
/// interval.
#[derive(Clone)]
pub struct SpmConfig {
    pub gpu: usize,
    pub counters: Vec<usize>,
    pub interval_cycles: u64,
}

/// Every SPM configuration created, `None` once destroyed.
pub static SPM_CONFIGS: Mutex<Vec<Option<SpmConfig>>> = Mutex::new(Vec::new());

/// The SPM configuration a handle names, unless it was destroyed.
pub fn spm_config(handle: Handle) -> Option<SpmConfig> {
    let index = handle.handle.checked_sub(SPM_CONFIG_HANDLE_BASE)? as usize;
    SPM_CONFIGS.lock().unwrap().get(index).cloned().flatten()
}

/// Runs a setup call: only during initialize, on an existing context.
pub(crate) fn configure(
    context: Handle,
    f: impl FnOnce(&mut Vec<ContextSetup>, usize, usize) -> Status,
) -> Status {
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    if phase() != Phase::Initializing {
        return status::CONFIGURATION_LOCKED;
    }
    let mut setup = sdk.setup.lock().unwrap();
    let (contexts, buffers) = &mut *setup;
    let index = context_index(context);
    if index >= contexts.len() {
        return status::CONTEXT_NOT_FOUND;
    }
    let buffers = buffers.len();
    f(contexts, index, buffers)
}

/// Reads a C array argument (null with a zero count is an empty list).
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, count: usize) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `count` valid elements at `ptr`.
        unsafe { std::slice::from_raw_parts(ptr, count) }
    }
}

/// A context's request service.
#[derive(Clone)]
pub struct Requests {
    /// The request kinds it asks for (`None`: all).
    pub kinds: Option<Vec<i32>>,
    pub callback: rocflow_core::abi::graph_node::RequestCallback,
    pub data: *mut std::ffi::c_void,
}

impl Requests {
    /// Whether the context asks for ids of request kind `kind`.
    pub fn asks(&self, kind: i32) -> bool {
        self.kinds
            .as_ref()
            .is_none_or(|kinds| kinds.contains(&kind))
    }
}
