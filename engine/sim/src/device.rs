//! The simulated device's agents and counters, as the C API hands them out: built once
//! from the scenario, with the C strings they point at kept alive beside them.

use std::ffi::CString;

use rocflow_core::abi::{AgentV0, Dim3, Handle};
use rocflow_core::sdk::{COUNTER_DIMENSIONS, gfx_target_version, limits};

use rocflow_core::scenario::Scenario;

/// Agent handles start here (a CPU agent first, then the scenario's GPUs).
const AGENT_HANDLE_BASE: u64 = 0x3000;

pub struct Device {
    /// The CPU agent, then one per scenario agent.
    pub agents: Vec<AgentV0>,
    pub counters: Vec<Counter>,
    _strings: Vec<CString>,
}

// The raw pointers in the agent structs point into `_strings`, which never changes.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

pub struct Counter {
    pub id: Handle,
    /// Index of the scenario agent (GPU) that has it.
    pub gpu: usize,
    pub name: CString,
    pub description: CString,
    pub block: CString,
    /// Index into `COUNTER_DIMENSIONS`, name, and size, per dimension.
    pub dimensions: Vec<(u64, CString, u32)>,
}

impl Counter {
    pub fn instances(&self) -> u64 {
        self.dimensions.iter().map(|d| u64::from(d.2)).product()
    }

    /// Calls `f` with the id of each of its instances, the last dimension fastest.
    pub fn each_instance(&self, mut f: impl FnMut(u64)) {
        let mut positions: Vec<(u64, u64)> = self.dimensions.iter().map(|d| (d.0, 0)).collect();
        for _ in 0..self.instances() {
            f(instance_id(self.id, positions.iter().copied()));
            for (position, d) in positions.iter_mut().zip(&self.dimensions).rev() {
                position.1 += 1;
                if position.1 < u64::from(d.2) {
                    break;
                }
                position.1 = 0;
            }
        }
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
    pub fn new(scenario: &Scenario) -> Device {
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
        for (gpu, a) in scenario.agents.iter().enumerate() {
            for (i, c) in a.counters.iter().enumerate() {
                let dimensions = c
                    .dimensions
                    .iter()
                    .map(|(name, size)| {
                        let index = COUNTER_DIMENSIONS.iter().position(|d| d == name);
                        let index = index.expect("dimensions are checked on parse") as u64;
                        (
                            index,
                            CString::new(name.as_str()).unwrap_or_default(),
                            *size,
                        )
                    })
                    .collect();
                counters.push(Counter {
                    id: Handle {
                        handle: (gpu as u64 + 1) * 256 + i as u64,
                    },
                    gpu,
                    name: CString::new(c.name.as_str()).unwrap_or_default(),
                    description: CString::new(c.description.as_str()).unwrap_or_default(),
                    block: CString::new(
                        c.block
                            .as_deref()
                            .unwrap_or_else(|| c.name.split('_').next().unwrap_or("")),
                    )
                    .unwrap_or_default(),
                    dimensions,
                });
            }
        }
        Device {
            agents,
            counters,
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
    /// once): no block holds more than the hardware counts at once.
    pub fn fits(&self, counters: &[usize]) -> bool {
        let blocks = counters.iter().map(|&i| self.counters[i].block.to_str());
        limits::exceeded(blocks.map(|b| b.unwrap_or_default())).is_none()
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
        let device = Device::new(&scenario);
        assert_eq!(device.counters[3].block.to_str(), Ok("SQ"));
        assert!(device.fits(&[0, 1, 3]));
        assert!(!device.fits(&[0, 1, 2]), "GRBM counts two at once");
    }
}
