//! The counters a simulated agent offers, as rocprofiler-sdk lists an agent's counters:
//! those its scenario lists by hand (`[[agent.counter]]`, which describe or override),
//! then, where counter definitions are found, every other counter AMD's definitions give
//! its architecture: hardware counters of the blocks it has, with the dimensions the SDK
//! gives them there ([`crate::sdk::blocks`]), and derived counters whose inputs it has,
//! computed by their expressions as the SDK computes them.

use std::path::{Path, PathBuf};

use rocflow_counters::expr::{Dimension, Tensor};
use rocflow_counters::{DefinitionKind, Definitions, Resolved};

use crate::scenario::{Agent, Scenario};
use crate::sdk::COUNTER_DIMENSIONS;
use crate::sdk::blocks::{self, Topology};

/// Where the definitions' counters of GPU `g` start: `0x8000 + g * 0x400`, above the
/// hand-listed ones (`(g + 1) * 256 + i`), and within the 16 bits an instance id keeps.
const DEFINED_BASE: u64 = 0x8000;
const DEFINED_PER_GPU: u64 = 0x400;
/// GPUs that get the definitions' counters (the handles of more would not fit).
const DEFINED_GPUS: usize = 32;

/// One counter of an agent.
#[derive(Debug, Clone)]
pub struct AgentCounter {
    /// The SDK's counter id.
    pub handle: u64,
    pub name: String,
    pub description: String,
    /// The hardware block; empty for a derived counter.
    pub block: String,
    /// Index into [`COUNTER_DIMENSIONS`] and size, per dimension, the last varying fastest.
    pub dimensions: Vec<(u64, u32)>,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Counted by the hardware: one value per instance, from the scenario's generator.
    Hardware,
    /// Computed from hardware counters and agent properties by its expression.
    Derived { expression: String },
}

impl AgentCounter {
    pub fn instances(&self) -> u64 {
        self.dimensions.iter().map(|d| u64::from(d.1)).product()
    }

    /// The dimensions as the expression language names them, for a [`Tensor`].
    pub fn shape(&self) -> Vec<(Dimension, u32)> {
        (self.dimensions.iter())
            .map(|&(id, size)| (Dimension::ALL[id as usize], size))
            .collect()
    }
}

/// The counter definitions the simulated SDK reads, as the real one finds its
/// `counter_defs.yaml`: the scenario's `counter_definitions`, else
/// `$ROCPROFILER_METRICS_PATH/counter_defs.yaml` where it exists; none without either.
pub fn definitions_path(scenario: &Scenario) -> Option<PathBuf> {
    if let Some(path) = &scenario.scenario.counter_definitions {
        return Some(path.clone());
    }
    let metrics = std::env::var_os("ROCPROFILER_METRICS_PATH")?;
    Some(Path::new(&metrics).join("counter_defs.yaml")).filter(|p| p.is_file())
}

/// The definitions at [`definitions_path`], loaded.
pub fn definitions(scenario: &Scenario) -> Result<Option<Definitions>, DefinitionsError> {
    let Some(path) = definitions_path(scenario) else {
        return Ok(None);
    };
    Definitions::load(&path).map(Some).map_err(DefinitionsError)
}

/// Counter definitions that did not load (the error names the file).
#[derive(Debug, thiserror::Error)]
#[error("its counter definitions: {0}")]
pub struct DefinitionsError(pub rocflow_counters::Error);

/// The counters of the scenario's GPU `gpu`: its listed ones, then those `definitions`
/// give its architecture that it has and that are not listed, in the file's order.
pub fn agent_counters(
    scenario: &Scenario,
    gpu: usize,
    definitions: Option<&Definitions>,
) -> Vec<AgentCounter> {
    let agent = &scenario.agents[gpu];
    let mut counters: Vec<AgentCounter> = (agent.counters.iter().enumerate())
        .map(|(i, c)| AgentCounter {
            handle: (gpu as u64 + 1) * 256 + i as u64,
            name: c.name.clone(),
            description: c.description.clone(),
            block: c
                .block
                .clone()
                .unwrap_or_else(|| c.name.split('_').next().unwrap_or("").to_owned()),
            dimensions: (c.dimensions.iter())
                .map(|(name, size)| {
                    let id = COUNTER_DIMENSIONS.iter().position(|d| d == name);
                    (id.expect("dimensions are checked on parse") as u64, *size)
                })
                .collect(),
            kind: Kind::Hardware,
        })
        .collect();
    let Some(definitions) = definitions.filter(|_| gpu < DEFINED_GPUS) else {
        return counters;
    };
    let arch = agent.name.as_str();
    let topology = topology(agent);
    let base = DEFINED_BASE + gpu as u64 * DEFINED_PER_GPU;
    let mut next = base;
    let mut add = |counters: &mut Vec<AgentCounter>, counter: AgentCounter| {
        counters.push(AgentCounter {
            handle: next,
            ..counter
        });
        next += 1;
    };
    let listed: Vec<String> = counters.iter().map(|c| c.name.clone()).collect();
    let unlisted = (definitions.counters().iter()).filter(|c| !listed.contains(&c.name));
    let mut derived = Vec::new();
    for counter in unlisted {
        let Some(definition) = counter.definition_for(arch) else {
            continue;
        };
        match &definition.kind {
            DefinitionKind::Hardware { block, .. } => {
                if let Some(dimensions) = blocks::dimensions(arch, block, &topology) {
                    let hardware = AgentCounter {
                        handle: 0,
                        name: counter.name.clone(),
                        description: counter.description.clone(),
                        block: block.clone(),
                        dimensions,
                        kind: Kind::Hardware,
                    };
                    add(&mut counters, hardware);
                }
            }
            DefinitionKind::Derived { expression } => {
                derived.push((counter, expression.text.clone()));
            }
        }
    }
    // A derived counter is offered where its inputs are, with the shape its expression
    // gives them.
    for (counter, expression) in derived {
        let shape = evaluate(definitions, agent, &counter.name, &mut |name| {
            let input = counters.iter().find(|c| c.name == name)?;
            let zeros = vec![0.0; input.instances() as usize];
            Some(Tensor::from_shape(&input.shape(), &zeros))
        });
        if let Some(shape) = shape {
            let derived = AgentCounter {
                handle: 0,
                name: counter.name.clone(),
                description: counter.description.clone(),
                block: String::new(),
                dimensions: dimensions_of(&shape),
                kind: Kind::Derived { expression },
            };
            add(&mut counters, derived);
        }
    }
    counters
}

/// The layout of a scenario agent, as the SDK reads it from KFD.
pub fn topology(agent: &Agent) -> Topology {
    Topology::of(&agent.name, agent.xcc, agent.shader_engines, agent.cu_count)
}

/// The value of derived counter `name` on `agent`, from the values `hardware` gives its
/// hardware inputs and the agent's properties; `None` if an input is missing or the
/// values do not combine.
pub fn evaluate(
    definitions: &Definitions,
    agent: &Agent,
    name: &str,
    hardware: &mut dyn FnMut(&str) -> Option<Tensor>,
) -> Option<Tensor> {
    let resolver = definitions.resolver(&agent.name);
    let mut inputs = |input: &str| match resolver.lookup(input) {
        Ok(Some(Resolved::AgentProperty)) => property(agent, input).map(Tensor::scalar),
        _ => hardware(input),
    };
    resolver.evaluate(name, &mut inputs).ok()
}

/// An agent property the SDK gives expressions, of a scenario agent (as the simulated
/// SDK fills its agent struct).
pub fn property(agent: &Agent, name: &str) -> Option<f64> {
    let arrays = blocks::shader_arrays_per_engine(&agent.name);
    let value = match name {
        "simd_count" => agent.cu_count * agent.simd_per_cu,
        "simd_per_cu" => agent.simd_per_cu,
        "num_xcc" => agent.xcc,
        "wave_front_size" => agent.wave_front_size,
        "max_waves_per_simd" => agent.max_waves_per_simd,
        "lds_size_in_kb" => agent.lds_kb,
        "simd_arrays_per_engine" => arrays,
        "array_count" => agent.shader_engines * arrays,
        "cu_per_simd_array" => agent.cu_count / (agent.shader_engines * arrays).max(1),
        "max_engine_clk_fcompute" => agent.max_engine_clk_mhz,
        _ => return None,
    };
    Some(f64::from(value))
}

/// The dimensions of a computed value: each the SDK's along which its instances differ,
/// and `DIMENSION_INSTANCE` always (of size 1 where it does not vary), as the SDK reports
/// a reduced counter; in the order it lists them (see [`blocks::dimensions`]).
fn dimensions_of(value: &Tensor) -> Vec<(u64, u32)> {
    (Dimension::ALL.iter().enumerate().rev())
        .filter_map(|(id, &dimension)| {
            let extent = (value.instances().iter())
                .map(|i| i.coordinates.get(dimension) + 1)
                .max()
                .unwrap_or(1);
            (extent > 1 || dimension == Dimension::Instance).then_some((id as u64, extent))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &str = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: SQ_WAVES
    description: waves
    properties: []
    definitions:
    - architectures: [gfx942, gfx1100]
      block: SQ
      event: 4
  - name: SQ_BUSY_CYCLES
    description: busy
    properties: []
    definitions:
    - architectures: [gfx942]
      block: SQ
      event: 3
  - name: GL2C_HIT
    description: hits
    properties: []
    definitions:
    - architectures: [gfx942]
      block: GL2C
      event: 1
  - name: WAVES_PER_SIMD
    description: derived
    properties: []
    definitions:
    - architectures: [gfx942]
      expression: reduce(SQ_WAVES,sum)/simd_count
  - name: BUSY_PER_SE
    description: derived, per shader engine
    properties: []
    definitions:
    - architectures: [gfx942]
      expression: SQ_BUSY_CYCLES*2
";

    fn scenario() -> Scenario {
        Scenario::parse(
            "[scenario]\nname = \"t\"\nthreads = 1\niterations = 1\n\
             [[agent]]\nname = \"gfx942\"\nproduct = \"MI300X\"\ncu_count = 304\nxcc = 8\nshader_engines = 32\n\
             [[agent.counter]]\nname = \"SQ_WAVES\"\ndimensions = [[\"DIMENSION_XCC\", 8]]\n",
        )
        .unwrap()
    }

    #[test]
    fn the_definitions_add_what_the_agent_has_after_its_listed_counters() {
        let defs = Definitions::parse(&rocflow_counters::Source::new("d.yaml", DEFS)).unwrap();
        let counters = agent_counters(&scenario(), 0, Some(&defs));
        let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
        // GL2C is no block of gfx942; the listed SQ_WAVES keeps its place and shape.
        assert_eq!(
            names,
            [
                "SQ_WAVES",
                "SQ_BUSY_CYCLES",
                "WAVES_PER_SIMD",
                "BUSY_PER_SE"
            ]
        );
        let handles: Vec<u64> = counters.iter().map(|c| c.handle).collect();
        assert_eq!(handles, [256, 0x8000, 0x8001, 0x8002]);
        assert_eq!(counters[0].dimensions, [(0, 8)]);
        assert_eq!(counters[1].dimensions, [(6, 1), (2, 4), (0, 8)]);
        assert_eq!(counters[2].dimensions, [(6, 1)]);
        assert_eq!(counters[3].dimensions, [(6, 1), (2, 4), (0, 8)]);
        assert!(agent_counters(&scenario(), 0, None).len() == 1);
    }

    #[test]
    fn a_derived_counter_is_computed_from_its_inputs_and_the_agents_properties() {
        let defs = Definitions::parse(&rocflow_counters::Source::new("d.yaml", DEFS)).unwrap();
        let scenario = scenario();
        let waves = Tensor::from_shape(&[(Dimension::Xcc, 8)], &[4.0; 8]);
        let value = evaluate(&defs, &scenario.agents[0], "WAVES_PER_SIMD", &mut |name| {
            (name == "SQ_WAVES").then(|| waves.clone())
        });
        assert_eq!(value.unwrap().values(), [32.0 / 1216.0]);
    }
}
