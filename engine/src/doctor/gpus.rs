//! The `gpus` check: the GPUs of the KFD topology (or of the simulated device), and those
//! of them ROCr and HIP each see. `ROCR_VISIBLE_DEVICES` picks among the topology's GPUs
//! (by index or `GPU-<uuid>`); `HIP_VISIBLE_DEVICES` (or else `CUDA_VISIBLE_DEVICES`) then
//! picks among those ROCr sees, counted anew from 0. rocprofiler-sdk profiles the GPUs
//! ROCr sees; the application runs on those HIP sees.

use std::path::Path;

use crate::device::Agent;
use crate::sdk::{AgentType, gfx_name};

use super::finding::{Check, Finding};
use super::machine::Machine;

const NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// A GPU as the doctor judges it.
#[derive(Debug, Clone)]
pub struct Gpu {
    /// Its KFD topology node.
    pub node: u32,
    /// Its architecture, `gfx942`.
    pub arch: String,
    /// `unique_id`, which `GPU-<uuid>` names in hexadecimal.
    pub unique_id: Option<u64>,
    /// The minor number of its DRM render node (`renderD128`).
    pub render_minor: Option<u32>,
    /// What its SDK answered for it (the simulated device's); `None` where the doctor
    /// judges from the architecture.
    pub agent: Option<Agent>,
}

impl Gpu {
    pub fn describe(&self) -> String {
        format!("{} (node {})", self.arch, self.node)
    }
}

/// The GPUs there are, and those ROCr sees (the ones rocprofiler-sdk profiles).
#[derive(Debug, Default)]
pub struct Gpus {
    pub all: Vec<Gpu>,
    pub seen_by_rocr: Vec<Gpu>,
}

/// The KFD topology's GPUs.
pub(super) fn on_rocm(machine: &Machine) -> (Finding, Gpus) {
    let dir = machine.path(NODES);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        let found = format!("no KFD topology at {NODES}: the amdgpu driver is not loaded");
        let hint = "load the driver (`sudo modprobe amdgpu`); in a container, mount /sys";
        return (Finding::fail(Check::Gpus, found, hint), Gpus::default());
    };
    let mut nodes: Vec<(u32, std::path::PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    nodes.sort();
    let count = nodes.len();
    let all: Vec<Gpu> = nodes
        .into_iter()
        .filter_map(|(node, path)| gpu(node, &path))
        .collect();
    if all.is_empty() {
        let found = format!("the KFD topology has {count} node(s), none of them a GPU");
        let hint = "check that the GPU is installed and not hidden from this container or cgroup (`rocm_agent_enumerator` lists what ROCr finds)";
        return (Finding::fail(Check::Gpus, found, hint), Gpus::default());
    }
    visibility(machine, all, "in the KFD topology")
}

/// A topology node that is a GPU. A CPU has no SIMDs; a node hidden by a cgroup has an
/// empty `properties`.
fn gpu(node: u32, dir: &Path) -> Option<Gpu> {
    let text = std::fs::read_to_string(dir.join("properties")).ok()?;
    let property = |key: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == key).then(|| value.trim().parse().ok())?
        })
    };
    (property("simd_count")? > 0).then(|| Gpu {
        node,
        arch: gfx_name(property("gfx_target_version").unwrap_or(0) as u32),
        unique_id: property("unique_id").filter(|&id| id != 0),
        render_minor: property("drm_render_minor").map(|m| m as u32),
        agent: None,
    })
}

/// The simulated device's GPUs, as its SDK lists them.
pub(super) fn on_sim(machine: &Machine, agents: &[Agent]) -> (Finding, Gpus) {
    let all: Vec<Gpu> = agents
        .iter()
        .filter(|a| a.agent_type == AgentType::Gpu)
        .map(|a| Gpu {
            node: a.node_id,
            arch: a.name.clone(),
            unique_id: None,
            render_minor: None,
            agent: Some(a.clone()),
        })
        .collect();
    if all.is_empty() {
        let found = "the simulated device has no GPU";
        let hint = "give the scenario an [[agent]]; `examples/sim/mi300x.toml` is a complete one";
        return (Finding::fail(Check::Gpus, found, hint), Gpus::default());
    }
    visibility(machine, all, "on the simulated device")
}

/// What the visibility variables leave of `all`.
fn visibility(machine: &Machine, all: Vec<Gpu>, place: &str) -> (Finding, Gpus) {
    let mut problems: Vec<String> = Vec::new();
    let listed = |gpus: &[&Gpu]| {
        let names: Vec<String> = gpus.iter().map(|g| g.describe()).collect();
        names.join(", ")
    };
    let every: Vec<&Gpu> = all.iter().collect();
    let mut found = format!("{} GPU(s) {place}: {}", all.len(), listed(&every));

    let rocr: Vec<&Gpu> = match machine.var("ROCR_VISIBLE_DEVICES") {
        None => every.clone(),
        Some(value) => {
            let picked = pick("ROCR_VISIBLE_DEVICES", value, &every, &mut problems);
            found.push_str(&format!(
                "; ROCr sees {} (ROCR_VISIBLE_DEVICES={value}){}",
                picked.len(),
                colon_list(&listed(&picked))
            ));
            picked
        }
    };
    let hip_var = ["HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
        .into_iter()
        .find_map(|name| Some((name, machine.var(name)?)));
    if let (Some(hip), Some(cuda)) = (
        machine.var("HIP_VISIBLE_DEVICES"),
        machine.var("CUDA_VISIBLE_DEVICES"),
    ) {
        if hip != cuda {
            problems.push(format!(
                "CUDA_VISIBLE_DEVICES={cuda} is ignored: HIP_VISIBLE_DEVICES={hip} comes first"
            ));
        }
    }
    let hip: Vec<&Gpu> = match hip_var {
        None => {
            if rocr.len() < all.len() {
                found.push_str("; HIP sees the same");
            } else {
                found.push_str("; ROCr and HIP see them all");
            }
            rocr.clone()
        }
        Some((name, value)) => {
            let picked = pick(name, value, &rocr, &mut problems);
            found.push_str(&format!(
                "; HIP sees {} ({name}={value}, counted among ROCr's){}",
                picked.len(),
                colon_list(&listed(&picked))
            ));
            picked
        }
    };
    let seen_by_rocr: Vec<Gpu> = rocr.iter().map(|&g| g.clone()).collect();
    let hint = "unset ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES, or name GPUs that exist: ROCr counts the topology's GPUs from 0, HIP counts those ROCr sees from 0";
    let finding = if hip.is_empty() {
        problems.insert(0, "the application would see no GPU".into());
        Finding::fail(
            Check::Gpus,
            format!("{found}: {}", problems.join("; ")),
            hint,
        )
    } else if !problems.is_empty() {
        Finding::warn(
            Check::Gpus,
            format!("{found}: {}", problems.join("; ")),
            hint,
        )
    } else {
        Finding::ok(Check::Gpus, found)
    };
    (finding, Gpus { all, seen_by_rocr })
}

/// ` : a, b` for a non-empty list.
fn colon_list(list: &str) -> String {
    if list.is_empty() {
        String::new()
    } else {
        format!(": {list}")
    }
}

/// The GPUs of `from` that the variable `name` set to `value` picks, in its order. As
/// ROCr and HIP read these lists, an entry that names no GPU ends it: it and the entries
/// after it are ignored. An empty value hides every GPU.
fn pick<'a>(name: &str, value: &str, from: &[&'a Gpu], problems: &mut Vec<String>) -> Vec<&'a Gpu> {
    let mut picked: Vec<&Gpu> = Vec::new();
    if value.trim().is_empty() {
        problems.push(format!("{name} is set but empty, which hides every GPU"));
        return picked;
    }
    for entry in value.split(',').map(str::trim) {
        let index = match entry.strip_prefix("GPU-") {
            Some(uuid) => u64::from_str_radix(uuid, 16)
                .ok()
                .and_then(|id| from.iter().position(|g| g.unique_id == Some(id))),
            None => entry.parse::<usize>().ok().filter(|&i| i < from.len()),
        };
        match index.map(|i| from[i]) {
            Some(gpu) if !picked.iter().any(|p| std::ptr::eq(*p, gpu)) => picked.push(gpu),
            _ => {
                problems.push(format!(
                    "{name} names `{entry}`, which is none of the {} GPU(s) it counts among; it and the entries after it are ignored",
                    from.len()
                ));
                break;
            }
        }
    }
    picked
}
