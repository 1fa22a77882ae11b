//! The simulated device's agents and counters, as the C API hands them out: built once
//! from the scenario, with the C strings they point at kept alive beside them.

use std::ffi::CString;

use rocflow_core::abi::{AgentV0, Dim3, Handle};
use rocflow_core::sdk::{COUNTER_DIMENSIONS, gfx_target_version, limits};

use rocflow_core::agent_counters::{self, AgentCounter, Kind};
use rocflow_core::scenario::Scenario;
use rocflow_counters::Definitions;

/// Agent handles start here (a CPU agent first, then the scenario's GPUs).
const AGENT_HANDLE_BASE: u64 = 0x3000;

pub struct Device {
    /// The CPU agent, then one per scenario agent.
    pub agents: Vec<AgentV0>,
    pub counters: Vec<Counter>,
    /// The definitions derived counters are computed by.
    pub definitions: Option<Definitions>,
    /// Each GPU's architecture, which its derived counters resolve on.
    gfx: Vec<String>,
    _strings: Vec<CString>,
}

// The raw pointers in the agent structs point into `_strings`, which never changes.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

/// A counter as the C API hands it out: the agent's counter, with its strings as C
/// strings.
pub struct Counter {
    pub id: Handle,
    /// Index of the scenario agent (GPU) that has it.
    pub gpu: usize,
    pub name: CString,
    pub description: CString,
    pub block: CString,
    pub expression: CString,
    /// Dimension names, in the order of `counter.dimensions`.
    pub dimension_names: Vec<CString>,
    pub counter: AgentCounter,
}

impl Counter {
    fn new(gpu: usize, counter: AgentCounter) -> Counter {
        let c = |s: &str| CString::new(s).unwrap_or_default();
        let expression = match &counter.kind {
            Kind::Hardware => "",
            Kind::Derived { expression } => expression,
        };
        Counter {
            id: Handle {
                handle: counter.handle,
            },
            gpu,
            name: c(&counter.name),
            description: c(&counter.description),
            block: c(&counter.block),
            expression: c(expression),
            dimension_names: (counter.dimensions.iter())
                .map(|&(id, _)| c(COUNTER_DIMENSIONS[id as usize]))
                .collect(),
            counter,
        }
    }

    pub fn instances(&self) -> u64 {
        self.counter.instances()
    }
}

/// Counter instance ids pack the counter id above bit 48 and 6 bits per dimension below.
pub fn instance_id(counter: Handle, positions: impl Iterator<Item = (u64, u64)>) -> u64 {
    positions.fold(counter.handle << 48, |id, (dimension, position)| {
        id | position << (dimension * 6)
    })
}

pub fn instance_counter(id: u64) -> Handle {
    Handle { handle: id >> 48 }
}

pub fn instance_position(id: u64, dimension: u64) -> u64 {
    (id >> (dimension * 6)) & 0x3f
}

impl Device {
    /// The device of `scenario`, its agents offering the counters `definitions` give
    /// their architectures besides those they list.
    pub fn new(scenario: &Scenario, definitions: Option<Definitions>) -> Device {
        let mut strings = Vec::new();
        let mut keep = |s: &str| {
            let c = CString::new(s).unwrap_or_default();
            let ptr = c.as_ptr();
            strings.push(c);
            ptr
        };
        // SAFETY: every field of the agent struct is an integer or a nullable pointer.
        let mut cpu: AgentV0 = unsafe { std::mem::zeroed() };
        cpu.size = std::mem::size_of::<AgentV0>() as u64;
        cpu.id = Handle {
            handle: AGENT_HANDLE_BASE,
        };
        // As the real SDK describes a CPU node: named after the processor's model, its
        // cores as compute units, one XCC.
        cpu.r#type = 1;
        cpu.cpu_cores_count = 2;
        cpu.cu_count = cpu.cpu_cores_count;
        cpu.num_xcc = 1;
        cpu.name = keep("Simulated host CPU");
        cpu.vendor_name = keep("CPU");
        cpu.product_name = cpu.name;
        cpu.model_name = keep("");
        // KFD describes the CPU too: a node without a GPU driver has no agent at all.
        let mut agents: Vec<AgentV0> = (!scenario.agents.is_empty())
            .then_some(cpu)
            .into_iter()
            .collect();
        for (i, a) in scenario.agents.iter().enumerate() {
            // SAFETY: as above.
            let mut gpu: AgentV0 = unsafe { std::mem::zeroed() };
            gpu.size = std::mem::size_of::<AgentV0>() as u64;
            gpu.id = Handle {
                handle: AGENT_HANDLE_BASE + 1 + i as u64,
            };
            gpu.r#type = 2;
            gpu.simd_count = a.cu_count * a.simd_per_cu;
            gpu.simd_per_cu = a.simd_per_cu;
            gpu.cu_count = a.cu_count;
            gpu.num_xcc = a.xcc;
            gpu.num_shader_banks = a.shader_engines;
            gpu.wave_front_size = a.wave_front_size;
            gpu.max_waves_per_simd = a.max_waves_per_simd;
            gpu.lds_size_in_kb = a.lds_kb;
            gpu.max_engine_clk_fcompute = a.max_engine_clk_mhz;
            gpu.workgroup_max_size = 1024;
            gpu.workgroup_max_dim = Dim3 {
                x: 1024,
                y: 1024,
                z: 1024,
            };
            gpu.grid_max_dim = Dim3 {
                x: u32::MAX,
                y: u32::MAX,
                z: u32::MAX,
            };
            gpu.gfx_target_version = gfx_target_version(&a.name).unwrap_or_default();
            gpu.node_id = 1 + i as u32;
            gpu.logical_node_id = 1 + i as i32;
            gpu.logical_node_type_id = i as i32;
            gpu.name = keep(&a.name);
            gpu.vendor_name = keep("AMD");
            gpu.product_name = keep(&a.product);
            gpu.model_name = keep("");
            agents.push(gpu);
        }
        let mut counters = Vec::new();
        for gpu in 0..scenario.agents.len() {
            let offered = agent_counters::agent_counters(scenario, gpu, definitions.as_ref());
            counters.extend(offered.into_iter().map(|c| Counter::new(gpu, c)));
        }
        Device {
            agents,
            counters,
            definitions,
            gfx: scenario.agents.iter().map(|a| a.name.clone()).collect(),
            _strings: strings,
        }
    }

    /// The scenario agent index of a GPU agent handle.
    pub fn gpu(&self, agent: Handle) -> Option<usize> {
        let index = agent.handle.checked_sub(AGENT_HANDLE_BASE + 1)? as usize;
        (index + 1 < self.agents.len()).then_some(index)
    }

    /// The handle of a scenario agent.
    pub fn gpu_handle(&self, gpu: usize) -> Handle {
        self.agents[gpu + 1].id
    }

    /// Whether one configuration may count these counters (indexes into `counters`, each
    /// once): no block holds more distinct hardware counters, a derived counter's inputs
    /// included, than the hardware counts at once.
    pub fn fits(&self, counters: &[usize]) -> bool {
        let mut hardware: Vec<usize> = counters
            .iter()
            .flat_map(|&i| self.hardware_inputs(i))
            .collect();
        hardware.sort_unstable();
        hardware.dedup();
        let blocks = hardware
            .iter()
            .map(|&i| self.counters[i].counter.block.as_str());
        limits::exceeded(blocks).is_none()
    }

    /// The hardware counters (indexes into `counters`) counter `i` is computed from: itself
    /// if it is one, else its derived counter's inputs on its agent.
    fn hardware_inputs(&self, i: usize) -> Vec<usize> {
        let counter = &self.counters[i];
        let Kind::Derived { .. } = counter.counter.kind else {
            return vec![i];
        };
        let (Some(definitions), Some(arch)) = (&self.definitions, self.gfx.get(counter.gpu)) else {
            return Vec::new();
        };
        let needs = definitions
            .resolver(arch)
            .requirements(&counter.counter.name);
        (needs.map(|n| n.hardware).unwrap_or_default().iter())
            .filter_map(|name| self.position(counter.gpu, name))
            .collect()
    }

    /// The index into `counters` of GPU `gpu`'s counter `name`.
    pub fn position(&self, gpu: usize, name: &str) -> Option<usize> {
        (self.counters.iter()).position(|c| c.gpu == gpu && c.counter.name == name)
    }

    pub fn counter(&self, id: Handle) -> Option<&Counter> {
        self.counters.iter().find(|c| c.id.handle == id.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_fits_while_each_block_is_within_its_limit() {
        let scenario = Scenario::parse(
            "[scenario]\nname = \"t\"\nseed = 1\nthreads = 1\niterations = 1\n\
             [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = 304\n\
             [[agent.counter]]\nname = \"GRBM_COUNT\"\n\
             [[agent.counter]]\nname = \"GRBM_GUI_ACTIVE\"\n\
             [[agent.counter]]\nname = \"GRBM_CP_BUSY\"\n\
             [[agent.counter]]\nname = \"SQC_ICACHE_HITS\"\nblock = \"SQ\"\n",
        )
        .unwrap();
        let device = Device::new(&scenario, None);
        assert_eq!(device.counters[3].block.to_str(), Ok("SQ"));
        assert!(device.fits(&[0, 1, 3]));
        assert!(!device.fits(&[0, 1, 2]), "GRBM counts two at once");
    }

    #[test]
    fn a_derived_counter_fits_while_its_inputs_do() {
        let definitions = "schema-version: 1
GRBM_COUNT:
  architectures:
    gfx942:
      block: GRBM
      event: 1
  description: x
GRBM_GUI_ACTIVE:
  architectures:
    gfx942:
      block: GRBM
      event: 2
  description: x
GRBM_CP_BUSY:
  architectures:
    gfx942:
      block: GRBM
      event: 3
  description: x
BUSY2:
  architectures:
    gfx942:
      expression: GRBM_COUNT+GRBM_GUI_ACTIVE
  description: x
BUSY3:
  architectures:
    gfx942:
      expression: BUSY2+GRBM_CP_BUSY
  description: x
";
        let definitions =
            Definitions::parse(&rocflow_counters::Source::new("d.yaml", definitions)).unwrap();
        let scenario = Scenario::parse(
            "[scenario]\nname = \"t\"\nthreads = 1\niterations = 1\n\
             [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = 304\n",
        )
        .unwrap();
        let device = Device::new(&scenario, Some(definitions));
        let at = |name: &str| device.position(0, name).unwrap();
        assert!(device.fits(&[at("BUSY2")]));
        assert!(
            device.fits(&[at("BUSY2"), at("GRBM_COUNT")]),
            "shared inputs count once"
        );
        assert!(!device.fits(&[at("BUSY3")]), "three GRBM counters");
        assert!(!device.fits(&[at("BUSY2"), at("GRBM_CP_BUSY")]));
    }
}
