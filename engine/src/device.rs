//! The device as its rocprofiler-sdk lists it: agents, their properties, PC sampling
//! configurations and counters with their dimensions (`rocflow agents`, and `rocflow
//! counters list` where no definitions file is found).
//!
//! The SDK answers these queries in a process no tool configured, as `rocprofv3-avail`
//! asks it; rocflow asks from a process of its own (`rocflow device-query`, hidden), so
//! that the SDK is loaded with the environment it needs (the scenario of the simulated
//! device, the PC sampling beta) and a fault inside it ends that process, not rocflow.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use rocflow_core::abi::{self, AgentV0, Handle, Status};
use rocflow_core::query::{Queries, text};

use crate::runner::{self, Device, StartError};
use crate::sdk::{AgentType, PC_SAMPLING_BETA, PcSamplingMethod, PcSamplingUnit};

/// An agent, with what `rocprofv3 -L` and `rocprofv3-avail` show of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub node_id: u32,
    pub logical_node_id: i32,
    #[serde(rename = "type")]
    pub agent_type: AgentType,
    /// The architecture of a GPU (`gfx942`); a CPU's model name.
    pub name: String,
    pub product: String,
    pub vendor: String,
    /// `gfx_target_version`: 90402 for gfx942.
    pub gfx_target_version: u32,
    pub cpu_cores: u32,
    pub compute_units: u32,
    pub simds: u32,
    pub simds_per_cu: u32,
    pub xccs: u32,
    pub shader_engines: u32,
    pub wave_front_size: u32,
    pub max_waves_per_simd: u32,
    pub lds_kib: u32,
    /// The compute engine's highest clock, MHz (a CPU's, for a CPU).
    pub max_clock_mhz: u32,
    /// The device's own memory, bytes (0 where it has none of its own: a CPU, an APU).
    pub local_memory_bytes: u64,
    pub pc_sampling: PcSampling,
    /// The counters, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Vec<Counter>>,
}

/// How an agent can sample PCs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcSampling {
    Configurations(Vec<PcConfiguration>),
    /// The SDK could not say, and why.
    Unavailable(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PcConfiguration {
    pub method: PcSamplingMethod,
    pub unit: PcSamplingUnit,
    pub min_interval: u64,
    pub max_interval: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counter {
    pub name: String,
    pub kind: CounterKind,
    pub description: String,
    pub block: String,
    /// The expression of a derived counter; empty for a hardware one.
    pub expression: String,
    /// Name and size, in the SDK's order.
    pub dimensions: Vec<(String, u64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// Counted by a hardware block.
    Hardware,
    /// Computed from other counters by an expression.
    Derived,
    /// A property of the agent (`wave_front_size`).
    Constant,
}

impl CounterKind {
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Hardware => "hardware",
            CounterKind::Derived => "derived",
            CounterKind::Constant => "constant",
        }
    }
}

/// Where the answers come from: an SDK library, and the environment it is loaded with.
struct Source {
    library: PathBuf,
    env: Vec<(OsString, OsString)>,
}

/// Why the device could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// rocflow's side: no SDK installed, a scenario that does not read.
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Sdk(#[from] runner::sdk::SdkError),
    /// The query process failed; what it said.
    #[error("{0}")]
    Query(String),
}

/// The agents of `device`, with their counters if asked for.
pub fn agents(device: &Device, counters: bool) -> Result<Vec<Agent>, DeviceError> {
    let source = source(device)?;
    let mut args = vec![source.library.clone().into_os_string()];
    args.extend(counters.then(|| "--counters".into()));
    ask("device-query", &source.library, &args, source.env)
}

/// Runs the hidden command `command` (with `args`) in a process of its own with `env`
/// added to rocflow's, and reads the JSON answer it writes; `library` is what it loads,
/// for the message when it fails.
pub(crate) fn ask<T: serde::de::DeserializeOwned>(
    command: &str,
    library: &Path,
    args: &[OsString],
    env: Vec<(OsString, OsString)>,
) -> Result<T, DeviceError> {
    // The answer comes back in a file: the library writes to stdout as it likes.
    let answer = tempfile::NamedTempFile::new()
        .map_err(|e| DeviceError::Query(format!("cannot create the query's answer file: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| DeviceError::Query(format!("cannot locate rocflow itself: {e}")))?;
    let status = Command::new(exe)
        .arg(command)
        .args(args)
        .arg("--answer")
        .arg(answer.path())
        // The SDK loaded for the queries configures no tool.
        .env_remove("ROCP_TOOL_LIBRARIES")
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| DeviceError::Query(format!("cannot start the device query: {e}")))?;
    if !status.success() {
        return Err(DeviceError::Query(format!(
            "the device query in {} failed ({status}); what the library said is above",
            library.display()
        )));
    }
    let text = std::fs::read(answer.path())
        .map_err(|e| DeviceError::Query(format!("reading the device query's answer: {e}")))?;
    serde_json::from_slice(&text)
        .map_err(|e| DeviceError::Query(format!("the device query answered badly: {e}")))
}

/// The SDK of `device` and its environment.
fn source(device: &Device) -> Result<Source, DeviceError> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    // As `rocflow run` does: PC sampling is the SDK's beta, off unless asked for.
    if std::env::var_os(PC_SAMPLING_BETA).is_none() {
        env.push((PC_SAMPLING_BETA.into(), "ON".into()));
    }
    let library = match device {
        Device::Rocm => runner::sdk::find(|name| std::env::var(name).ok())?.path,
        Device::Sim(scenario) => {
            let (library, scenario) = sim(scenario.as_deref())?;
            env.extend(scenario);
            library
        }
    };
    Ok(Source { library, env })
}

/// The simulated SDK's library, and the variable that gives it `scenario` (checked).
pub(crate) fn sim(
    scenario: Option<&Path>,
) -> Result<(PathBuf, Option<(OsString, OsString)>), DeviceError> {
    let scenario = match scenario {
        Some(path) => Some(runner::checked_scenario(path)?),
        None => None,
    };
    let library = runner::libraries::find(runner::libraries::SIM)
        .map_err(|e| DeviceError::Start(StartError::Library(e)))?;
    Ok((
        library,
        scenario.map(|path| ("ROCFLOW_SIM_SCENARIO".into(), path.into())),
    ))
}

/// Why the SDK in the query process could not answer.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("cannot load {}: {source}", .library.display())]
    Load {
        library: PathBuf,
        source: libloading::Error,
    },
    #[error("this rocprofiler-sdk has no `{0}`")]
    MissingSymbol(&'static str),
    /// A query failed: what it asked, and the SDK's message for its status.
    #[error("{query}: {message} (status {status})")]
    Failed {
        query: String,
        message: String,
        status: Status,
    },
}

/// Asks the SDK in `library` (loaded into this process) for the agents: the query
/// process's side.
pub fn query(library: &Path, counters: bool) -> Result<Vec<Agent>, QueryError> {
    // SAFETY: loading the SDK runs its initializers, which is what it is for.
    let sdk = unsafe { libloading::Library::new(library) }.map_err(|source| QueryError::Load {
        library: library.to_owned(),
        source,
    })?;
    let queries = resolve(&sdk)?;
    let failed = |query: &str, status: Status| {
        let described: Result<unsafe extern "C" fn(Status) -> *const std::ffi::c_char, _> =
            symbol(&sdk, "rocprofiler_get_status_string");
        // SAFETY: the SDK returns a static string for every status.
        let message = described.map_or(String::new(), |f| text(unsafe { f(status) }));
        QueryError::Failed {
            query: query.into(),
            message,
            status,
        }
    };
    let agents = queries
        .agents()
        .map_err(|s| failed("querying the agents", s))?;
    agents
        .iter()
        .map(|a| {
            let mut agent = describe(a);
            if agent.agent_type == AgentType::Gpu {
                agent.pc_sampling = match queries.pc_sampling(a.id) {
                    Ok(configs) => PcSampling::Configurations(
                        configs.iter().filter_map(configuration).collect(),
                    ),
                    Err(s) => {
                        PcSampling::Unavailable(unsampled(s, failed("querying", s).to_string()))
                    }
                };
                if counters {
                    agent.counters = Some(agent_counters(&queries, a.id).map_err(|s| {
                        failed(&format!("listing the counters of {}", agent.name), s)
                    })?);
                }
            } else if counters {
                agent.counters = Some(Vec::new());
            }
            Ok(agent)
        })
        .collect()
}

/// Why PC sampling is unavailable: the SDK says only "error" when it cannot open the GPU
/// driver, through which it samples.
fn unsampled(status: Status, said: String) -> String {
    const KFD: &str = "/dev/kfd";
    let driver = std::fs::OpenOptions::new().read(true).write(true).open(KFD);
    match driver {
        Err(e) if status == abi::status::ERROR => format!("it needs {KFD}: {e}"),
        _ => said,
    }
}

/// A function of the SDK's, by name.
fn symbol<T: Copy>(sdk: &libloading::Library, name: &'static str) -> Result<T, QueryError> {
    let mut c_name = name.as_bytes().to_vec();
    c_name.push(0);
    // SAFETY: each caller names the type the SDK's headers declare for `name`.
    unsafe { sdk.get::<T>(&c_name) }
        .map(|f| *f)
        .map_err(|_| QueryError::MissingSymbol(name))
}

fn resolve(sdk: &libloading::Library) -> Result<Queries, QueryError> {
    // SAFETY: the entry points of those names, with their types.
    Ok(unsafe {
        Queries::new(
            symbol(sdk, "rocprofiler_query_available_agents")?,
            symbol(sdk, "rocprofiler_iterate_agent_supported_counters")?,
            symbol(sdk, "rocprofiler_query_counter_info")?,
            symbol(sdk, "rocprofiler_iterate_counter_dimensions")?,
            symbol(sdk, "rocprofiler_query_pc_sampling_agent_configurations")?,
        )
    })
}

/// An agent's properties.
fn describe(a: &AgentV0) -> Agent {
    let gpu = a.r#type == AgentType::Gpu as i32;
    Agent {
        node_id: a.node_id,
        logical_node_id: a.logical_node_id,
        agent_type: if gpu { AgentType::Gpu } else { AgentType::Cpu },
        name: text(a.name),
        product: text(a.product_name),
        vendor: text(a.vendor_name),
        gfx_target_version: a.gfx_target_version,
        cpu_cores: a.cpu_cores_count,
        compute_units: a.cu_count,
        simds: a.simd_count,
        simds_per_cu: a.simd_per_cu,
        xccs: a.num_xcc,
        shader_engines: a.num_shader_banks,
        wave_front_size: a.wave_front_size,
        max_waves_per_simd: a.max_waves_per_simd,
        lds_kib: a.lds_size_in_kb,
        max_clock_mhz: if gpu {
            a.max_engine_clk_fcompute
        } else {
            a.max_engine_clk_ccompute
        },
        local_memory_bytes: a.local_mem_size,
        pc_sampling: PcSampling::Configurations(Vec::new()),
        counters: None,
    }
}

/// A PC sampling configuration, if its method and unit are ones rocflow knows.
fn configuration(c: &abi::PcSamplingConfiguration) -> Option<PcConfiguration> {
    let method = match c.method {
        1 => PcSamplingMethod::Stochastic,
        2 => PcSamplingMethod::HostTrap,
        _ => return None,
    };
    let unit = match c.unit {
        1 => PcSamplingUnit::Instructions,
        2 => PcSamplingUnit::Cycles,
        3 => PcSamplingUnit::Time,
        _ => return None,
    };
    Some(PcConfiguration {
        method,
        unit,
        min_interval: c.min_interval as u64,
        max_interval: c.max_interval as u64,
    })
}

fn agent_counters(queries: &Queries, agent: Handle) -> Result<Vec<Counter>, Status> {
    let mut counters: Vec<Counter> = queries
        .counters(agent)?
        .into_iter()
        .map(|c| {
            let dimensions = queries.dimensions(c.id)?;
            let kind = if c.constant {
                CounterKind::Constant
            } else if c.derived || !c.expression.is_empty() {
                CounterKind::Derived
            } else {
                CounterKind::Hardware
            };
            Ok(Counter {
                name: c.name,
                kind,
                description: c.description,
                block: c.block,
                expression: c.expression,
                dimensions: dimensions.into_iter().map(|d| (d.name, d.size)).collect(),
            })
        })
        .collect::<Result<_, Status>>()?;
    counters.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(counters)
}

/// The agents as text: one block per agent, its counters after it when listed.
pub fn render(agents: &[Agent]) -> String {
    let mut out = String::new();
    for a in agents {
        let kind = match a.agent_type {
            AgentType::Cpu => "CPU",
            AgentType::Gpu => "GPU",
        };
        out.push_str(&format!(
            "node {} (logical {}): {kind} {}",
            a.node_id, a.logical_node_id, a.name
        ));
        if !a.product.is_empty() && a.product != a.name {
            out.push_str(&format!(", {}", a.product));
        }
        out.push('\n');
        match a.agent_type {
            AgentType::Cpu => {
                out.push_str(&format!("  cores: {}\n", a.cpu_cores));
                if a.max_clock_mhz > 0 {
                    out.push_str(&format!("  clock: {} MHz\n", a.max_clock_mhz));
                }
            }
            AgentType::Gpu => gpu_lines(a, &mut out),
        }
        if let Some(counters) = &a.counters {
            out.push_str(&format!("  counters: {}\n", counters.len()));
            counter_lines(counters, &mut out);
        }
    }
    out
}

/// A line per counter: name, dimensions (`XCC[8]`) and description, in columns.
fn counter_lines(counters: &[Counter], out: &mut String) {
    let dimensions: Vec<String> = (counters.iter())
        .map(|c| {
            let dims = c.dimensions.iter().map(|(name, size)| {
                let name = name.strip_prefix("DIMENSION_").unwrap_or(name);
                format!("{name}[{size}]")
            });
            dims.collect::<Vec<_>>().join(" ")
        })
        .collect();
    let name_width = counters.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let dims_width = dimensions.iter().map(String::len).max().unwrap_or(0);
    for (c, dims) in counters.iter().zip(&dimensions) {
        let line = format!(
            "    {:name_width$}  {dims:dims_width$}  {}",
            c.name, c.description
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn gpu_lines(a: &Agent, out: &mut String) {
    out.push_str(&format!("  gfx target version: {}\n", a.gfx_target_version));
    out.push_str(&format!(
        "  compute units: {}, SIMDs: {} ({} per CU), XCCs: {}, shader engines: {}\n",
        a.compute_units, a.simds, a.simds_per_cu, a.xccs, a.shader_engines
    ));
    out.push_str(&format!(
        "  wave size: {}, waves per SIMD: {}, LDS: {} KiB per CU\n",
        a.wave_front_size, a.max_waves_per_simd, a.lds_kib
    ));
    out.push_str(&format!("  clock: {} MHz\n", a.max_clock_mhz));
    let memory = match a.local_memory_bytes {
        0 => "not reported".to_owned(),
        bytes => format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30)),
    };
    out.push_str(&format!("  memory: {memory}\n"));
    let sampling = match &a.pc_sampling {
        PcSampling::Configurations(configs) if configs.is_empty() => "none".to_owned(),
        PcSampling::Configurations(configs) => (configs.iter())
            .map(|c| {
                format!(
                    "{} in {}, interval {}..={}",
                    snake(&c.method),
                    snake(&c.unit),
                    c.min_interval,
                    c.max_interval
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        PcSampling::Unavailable(why) => format!("unavailable ({why})"),
    };
    out.push_str(&format!("  PC sampling: {sampling}\n"));
}

/// An enum value by its name in pipelines (`host_trap`).
fn snake(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}
