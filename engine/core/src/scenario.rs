//! Scenario files: what the simulated device has (agents, their counters and PC-sampling
//! configurations) and what each process of the application does on it (threads, and per
//! iteration of each thread: kernels, copies, allocations, other API calls and a marker
//! range). Every count
//! in a run follows from the file, so tests can compute what a run must deliver.

use crate::record::RecordKind;
use crate::sdk::Domain;
use serde::{Deserialize, Deserializer};

/// The scenario used when `ROCFLOW_SIM_SCENARIO` names none.
pub const DEFAULT: &str = include_str!("../../../examples/sim/mi300x.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub scenario: Settings,
    /// The GPUs. None is a node without a GPU driver, where rocprofiler-sdk reports no
    /// agent at all (not even the CPU) and still traces host APIs.
    #[serde(rename = "agent", default)]
    pub agents: Vec<Agent>,
    #[serde(rename = "kernel", default)]
    pub kernels: Vec<Kernel>,
    #[serde(rename = "copy", default)]
    pub copies: Vec<Copy>,
    #[serde(rename = "allocation", default)]
    pub allocations: Vec<Allocation>,
    #[serde(rename = "call", default)]
    pub calls: Vec<Call>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub name: String,
    /// Seeds the counter values.
    #[serde(default)]
    pub seed: u64,
    /// Host threads issuing work in each process.
    pub threads: u32,
    /// Iterations of each thread.
    pub iterations: u32,
    /// Spreads each thread's iterations evenly over this much real time: iteration `i`
    /// starts `i * duration_ms / iterations` after its thread (or when the one before it
    /// ends, if later), and every operation waits for the real clock to reach its time.
    /// Without it the work is done at once (its timestamps still follow the durations),
    /// which is what most runs want; with it, collection periods and other time-based
    /// features see the work where its timestamps say it is.
    #[serde(default)]
    pub duration_ms: Option<std::num::NonZeroU64>,
    /// A marker range (`roctxThreadRangeA`) around each iteration.
    #[serde(default)]
    pub marker_ranges: bool,
    /// The ranges' message (`roctxRangePushA`'s argument); without one they are nameless.
    #[serde(default)]
    pub marker_message: Option<std::ffi::CString>,
    /// Thread 0 calls `roctxProfilerPause` before this iteration…
    #[serde(default)]
    pub pause_at: Option<u32>,
    /// …and `roctxProfilerResume` before this one.
    #[serde(default)]
    pub resume_at: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    /// Architecture, e.g. `gfx942`.
    pub name: String,
    pub product: String,
    pub cu_count: u32,
    #[serde(default = "four")]
    pub simd_per_cu: u32,
    #[serde(default = "one")]
    pub xcc: u32,
    #[serde(default = "one")]
    pub shader_engines: u32,
    #[serde(default = "wave64")]
    pub wave_front_size: u32,
    #[serde(default = "eight")]
    pub max_waves_per_simd: u32,
    #[serde(default)]
    pub lds_kb: u32,
    #[serde(default)]
    pub max_engine_clk_mhz: u32,
    #[serde(rename = "counter", default)]
    pub counters: Vec<Counter>,
    #[serde(default)]
    pub pc_sampling: Vec<PcSampling>,
}

fn one() -> u32 {
    1
}
fn four() -> u32 {
    4
}
fn eight() -> u32 {
    8
}
fn wave64() -> u32 {
    64
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counter {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The hardware block that counts it, as the SDK's definitions say; by default the
    /// name's first part (`SQ` for `SQ_WAVES`), which `SQC_*` counters (block SQ) need.
    pub block: Option<String>,
    /// Dimension name (`DIMENSION_XCC`, …) and size, in the SDK's dimension order.
    #[serde(default, deserialize_with = "sdk_dimensions")]
    pub dimensions: Vec<(String, u32)>,
}

/// Counter dimensions, each one of the SDK's (an error here is reported at its place).
fn sdk_dimensions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, u32)>, D::Error> {
    let dimensions = Vec::<(String, u32)>::deserialize(d)?;
    match (dimensions.iter()).find(|(d, _)| !crate::sdk::COUNTER_DIMENSIONS.contains(&d.as_str())) {
        Some((unknown, _)) => Err(serde::de::Error::custom(format!(
            "unknown dimension `{unknown}`; the SDK's are {}",
            crate::sdk::COUNTER_DIMENSIONS.join(", ")
        ))),
        None => Ok(dimensions),
    }
}

/// A PC-sampling configuration the agent supports.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcSampling {
    /// `host_trap` or `stochastic`.
    pub method: String,
    /// `time`, `cycles` or `instructions`.
    pub unit: String,
    pub min_interval: u64,
    pub max_interval: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// The (mangled) symbol name.
    pub name: String,
    #[serde(default)]
    pub agent: u32,
    pub duration_ns: u64,
    pub grid: [u32; 3],
    pub workgroup: [u32; 3],
    #[serde(default)]
    pub lds_bytes: u32,
    #[serde(default)]
    pub scratch_bytes: u32,
    #[serde(default)]
    pub vgpr: u32,
    #[serde(default)]
    pub sgpr: u32,
    /// PC samples per dispatch while PC sampling is on.
    #[serde(default)]
    pub pc_samples: u32,
    /// The instructions a thread trace shows the kernel's waves run, in order; empty for
    /// the simulated device's default listing.
    #[serde(default)]
    pub isa: Vec<Instruction>,
}

/// An instruction of a simulated kernel, as the scenario lists it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Instruction {
    /// Its disassembly, as the decoder's ISA look-up returns it.
    pub text: String,
    /// Cycles it takes to issue, once it stops stalling.
    pub latency: u32,
    /// Cycles it stalls first.
    #[serde(default)]
    pub stall: u32,
}

/// The most instructions a simulated kernel has: its code fits its slot in the code
/// object.
pub const MAX_INSTRUCTIONS: usize = 64;
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Copy {
    /// `host_to_device`, `device_to_host`, `device_to_device` or `host_to_host`.
    pub direction: String,
    pub bytes: u64,
    pub duration_ns: u64,
    #[serde(default)]
    pub agent: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allocation {
    pub bytes: u64,
    #[serde(default)]
    pub agent: u32,
}

/// Host API calls each iteration makes besides the launches, copies and allocations:
/// the application's API mix (synchronizations, queries, HSA calls, RCCL, …).
#[derive(Debug, Deserialize)]
#[serde(try_from = "CallEntry")]
pub struct Call {
    /// The tracing domain, e.g. `hip_runtime_api` or `hsa_core_api`.
    pub domain: Domain,
    /// The function's operation id in its domain (the SDK's).
    pub operation: i32,
    /// Calls per iteration.
    pub count: u32,
    pub duration_ns: u64,
}

/// A `[[call]]` table as written: a domain and a function name, checked together (so a
/// wrong one is reported at its table's place in the file).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallEntry {
    domain: String,
    function: String,
    #[serde(default = "one")]
    count: u32,
    #[serde(default = "call_ns")]
    duration_ns: u64,
}

fn call_ns() -> u64 {
    1_000
}

/// What is wrong with a `[[call]]` table.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("`{0}` is not an API tracing domain")]
    NotApiDomain(String),
    #[error("`{function}` is not a function of {}", .domain.name())]
    UnknownFunction { function: String, domain: Domain },
}

impl TryFrom<CallEntry> for Call {
    type Error = CallError;

    fn try_from(entry: CallEntry) -> Result<Call, CallError> {
        let domain = Domain::from_name(&entry.domain)
            .filter(|d| d.record_kind() == RecordKind::Api)
            .ok_or(CallError::NotApiDomain(entry.domain))?;
        let operation = domain
            .operations()
            .iter()
            .find(|(_, name)| *name == entry.function)
            .map(|(id, _)| *id)
            .ok_or(CallError::UnknownFunction {
                function: entry.function,
                domain,
            })?;
        Ok(Call {
            domain,
            operation,
            count: entry.count,
            duration_ns: entry.duration_ns,
        })
    }
}

/// What is wrong with a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not TOML, or not a scenario's fields; the error says where.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error(
        "kernels, copies and allocations need a GPU: add an [[agent]], or leave them out to simulate a node without one"
    )]
    NoAgent,
    /// A kernel runs on an agent the scenario does not have.
    #[error("{}kernel `{kernel}` runs on agent {agent} of {agents}", Place(*.place))]
    KernelAgent {
        kernel: String,
        agent: u32,
        agents: u32,
        /// Where its `agent` is written: line and column, from 1.
        place: Option<(usize, usize)>,
    },
    #[error(
        "kernel `{kernel}` lists {instructions} instructions; a simulated kernel has at most {}",
        MAX_INSTRUCTIONS
    )]
    LongIsa { kernel: String, instructions: usize },
}

/// `line L, column C: ` where a place is known, as TOML errors say where they are.
struct Place(Option<(usize, usize)>);

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, column)) => write!(f, "line {line}, column {column}: "),
            None => Ok(()),
        }
    }
}

impl Scenario {
    /// Parses and checks a scenario.
    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        let agents = scenario.agents.len() as u32;
        let device_work = !(scenario.kernels.is_empty()
            && scenario.copies.is_empty()
            && scenario.allocations.is_empty());
        if agents == 0 && device_work {
            return Err(ScenarioError::NoAgent);
        }
        if let Some((k, kernel)) =
            (scenario.kernels.iter().enumerate()).find(|(_, k)| k.agent >= agents)
        {
            return Err(ScenarioError::KernelAgent {
                kernel: kernel.name.clone(),
                agent: kernel.agent,
                agents,
                place: kernel_agent_place(text, k),
            });
        }
        if let Some(kernel) = (scenario.kernels.iter()).find(|k| k.isa.len() > MAX_INSTRUCTIONS) {
            return Err(ScenarioError::LongIsa {
                kernel: kernel.name.clone(),
                instructions: kernel.isa.len(),
            });
        }
        Ok(scenario)
    }
}

/// The line and column of the `agent` of the `k`th `[[kernel]]`, if it can be found.
fn kernel_agent_place(text: &str, k: usize) -> Option<(usize, usize)> {
    #[derive(Deserialize)]
    struct Kernels {
        #[serde(default)]
        kernel: Vec<Placed>,
    }
    #[derive(Deserialize)]
    struct Placed {
        agent: Option<toml::Spanned<u32>>,
    }
    let kernels = toml::from_str::<Kernels>(text).ok()?;
    let agent = kernels.kernel.get(k)?.agent.as_ref()?;
    let before = &text[..agent.span().start];
    let line = before.lines().count().max(1) + usize::from(before.ends_with('\n'));
    let column = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    Some((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the error the default scenario with `extra` is refused with.
    fn refused(extra: &str) -> String {
        let scenario = Scenario::parse(&format!("{DEFAULT}\n{extra}"));
        scenario.unwrap_err().to_string()
    }

    #[test]
    fn shipped_scenario_reads_with_its_api_mix() {
        let scenario = Scenario::parse(DEFAULT).unwrap();
        assert!(
            scenario
                .calls
                .iter()
                .any(|c| c.domain == Domain::HsaCoreApi)
        );
    }

    #[test]
    fn calls_name_real_functions_of_api_domains() {
        let e = refused("[[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipLaunchKernal\"\n");
        assert!(
            e.contains("`hipLaunchKernal` is not a function of hip_runtime_api"),
            "{e}"
        );
        assert!(e.contains("line "), "the error says where: {e}");
        let e = refused("[[call]]\ndomain = \"kernel_dispatch\"\nfunction = \"x\"\n");
        assert!(
            e.contains("`kernel_dispatch` is not an API tracing domain"),
            "{e}"
        );
    }

    #[test]
    fn kernels_and_counters_are_checked_where_they_are_written() {
        let kernel = "[[kernel]]\nname = \"k\"\nagent = 7\nduration_ns = 1\ngrid = [1, 1, 1]\nworkgroup = [1, 1, 1]\n";
        let text = format!("{DEFAULT}\n{kernel}");
        let line = text.lines().position(|l| l == "agent = 7").unwrap() + 1;
        let e = Scenario::parse(&text).unwrap_err();
        assert!(
            matches!(&e, ScenarioError::KernelAgent { kernel, agent: 7, place, .. } if kernel == "k" && *place == Some((line, 9))),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("kernel `k` runs on agent 7 of"), "{e}");
        assert!(e.starts_with(&format!("line {line}, column 9: ")), "{e}");
        let e = refused(
            "[[agent]]\nname = \"gfx942\"\n[[agent.counter]]\nname = \"X\"\ndimensions = [[\"DIMENSION_NOPE\", 2]]\n",
        );
        assert!(e.contains("unknown dimension `DIMENSION_NOPE`"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
    }

    #[test]
    fn pacing_takes_a_duration_of_a_millisecond_or_more() {
        let paced = |duration: &str| {
            Scenario::parse(&DEFAULT.replace(
                "iterations = 100\n",
                &format!("iterations = 100\nduration_ms = {duration}\n"),
            ))
        };
        let scenario = paced("2000").unwrap();
        assert_eq!(scenario.scenario.duration_ms.map(|d| d.get()), Some(2000));
        assert_eq!(Scenario::parse(DEFAULT).unwrap().scenario.duration_ms, None);
        let e = paced("0").unwrap_err().to_string();
        assert!(e.contains("expected a nonzero u64"), "{e}");
        assert!(e.contains("line "), "the error says where: {e}");
    }

    /// What rocprofiler-sdk sees on a node without a GPU driver: host API calls, no agent.
    const NO_GPU: &str = "[scenario]\nname = \"no-gpu\"\nthreads = 1\niterations = 2\nmarker_ranges = true\n\n[[call]]\ndomain = \"hip_runtime_api\"\nfunction = \"hipGetDeviceCount\"\n";

    #[test]
    fn a_node_without_a_gpu_has_host_calls_only() {
        let scenario = Scenario::parse(NO_GPU).unwrap();
        assert!(scenario.agents.is_empty());
        assert_eq!(scenario.calls.len(), 1);
        let allocation = format!("{NO_GPU}[[allocation]]\nbytes = 4096\n");
        let e = Scenario::parse(&allocation).unwrap_err();
        assert!(matches!(e, ScenarioError::NoAgent), "{e:?}");
        assert!(e.to_string().contains("need a GPU"), "{e}");
    }
}
