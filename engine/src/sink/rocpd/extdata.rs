//! The `extdata` JSON of agents and kernel symbols, in the form rocprofiler-sdk's cereal
//! serializer gives them in rocprofv3's databases. AMD's converter reads an agent's
//! `extdata` back as the complete `rocprofiler_agent_v0_t` (every field by name, or the
//! conversion fails), and AMD's `kernel_symbols` view reads the kernel names from the
//! symbol's. Fields are declared in the serializer's order; what the run does not know is
//! written as zero or empty, as the SDK leaves fields a device does not report.

use serde::Serialize;

use crate::kernel_names;
use crate::record::{Agent, KernelSymbol};
use crate::sdk::{AgentType, gfx_target_version, gfx_version};
use rocflow_core::abi;

/// `rocprofiler_agent_v0_t` as serialized, with rocprofv3's `gpu_index`.
#[derive(Debug, Serialize)]
pub struct AgentRecord {
    size: u64,
    id: Handle,
    r#type: u32,
    cpu_cores_count: u32,
    simd_count: u32,
    mem_banks_count: u32,
    caches_count: u32,
    io_links_count: u32,
    cpu_core_id_base: u32,
    simd_id_base: u32,
    max_waves_per_simd: u32,
    lds_size_in_kb: u32,
    gds_size_in_kb: u32,
    num_gws: u32,
    wave_front_size: u32,
    num_xcc: u32,
    cu_count: u32,
    array_count: u32,
    num_shader_banks: u32,
    simd_arrays_per_engine: u32,
    cu_per_simd_array: u32,
    simd_per_cu: u32,
    max_slots_scratch_cu: u32,
    gfx_target_version: u32,
    vendor_id: u16,
    device_id: u16,
    location_id: u32,
    domain: u32,
    drm_render_minor: u32,
    num_sdma_engines: u32,
    num_sdma_xgmi_engines: u32,
    num_sdma_queues_per_engine: u32,
    num_cp_queues: u32,
    max_engine_clk_ccompute: u32,
    max_engine_clk_fcompute: u32,
    sdma_fw_version: SdmaFirmware,
    fw_version: Firmware,
    capability: Capability,
    cu_per_engine: u32,
    max_waves_per_cu: u32,
    family_id: u32,
    workgroup_max_size: u32,
    grid_max_size: u32,
    local_mem_size: u64,
    hive_id: u64,
    gpu_id: u64,
    workgroup_max_dim: Dim3,
    grid_max_dim: Dim3,
    name: String,
    vendor_name: String,
    product_name: String,
    model_name: String,
    node_id: u32,
    logical_node_id: i64,
    logical_node_type_id: i64,
    runtime_visibility: Visibility,
    uuid: Uuid,
    /// The agent has none the run knows of: the three lists are empty.
    mem_banks: [(); 0],
    caches: [(); 0],
    io_links: [(); 0],
    /// The agent's index among the GPUs, -1 for other agents.
    gpu_index: i64,
}

#[derive(Debug, Serialize)]
struct Handle {
    handle: u64,
}

#[derive(Debug, Default, Serialize)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

/// `HSA_ENGINE_VERSION`.
#[derive(Debug, Default, Serialize)]
struct SdmaFirmware {
    #[serde(rename = "uCodeSDMA")]
    u_code_sdma: u32,
    #[serde(rename = "uCodeRes")]
    u_code_res: u32,
}

/// `HSA_ENGINE_ID`: the firmware revision and the graphics IP version.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
struct Firmware {
    #[serde(rename = "uCode")]
    u_code: u32,
    major: u32,
    minor: u32,
    stepping: u32,
}

/// `HSA_CAPABILITY`'s bit fields, by their names in the serializer.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "PascalCase")]
struct Capability {
    hot_pluggable: u32,
    #[serde(rename = "HSAMMUPresent")]
    hsammu_present: u32,
    shared_with_graphics: u32,
    queue_size_power_of_two: u32,
    #[serde(rename = "QueueSize32bit")]
    queue_size_32bit: u32,
    queue_idle_event: u32,
    #[serde(rename = "VALimit")]
    va_limit: u32,
    watch_points_supported: u32,
    watch_points_total_bits: u32,
    doorbell_type: u32,
    #[serde(rename = "AQLQueueDoubleMap")]
    aql_queue_double_map: u32,
    debug_trap_supported: u32,
    wave_launch_trap_override_supported: u32,
    wave_launch_mode_supported: u32,
    precise_memory_operations_supported: u32,
    #[serde(rename = "DEPRECATED_SRAM_EDCSupport")]
    deprecated_sram_edc_support: u32,
    #[serde(rename = "Mem_EDCSupport")]
    mem_edc_support: u32,
    #[serde(rename = "RASEventNotify")]
    ras_event_notify: u32,
    #[serde(rename = "ASICRevision")]
    asic_revision: u32,
    #[serde(rename = "SRAM_EDCSupport")]
    sram_edc_support: u32,
    #[serde(rename = "SVMAPISupported")]
    svm_api_supported: u32,
    coherent_host_access: u32,
    debug_supported_firmware: u32,
}

/// `rocprofiler_agent_runtime_visiblity_t`.
#[derive(Debug, Serialize)]
struct Visibility {
    hsa: u32,
    hip: u32,
    rccl: u32,
    rocdecode: u32,
}

#[derive(Debug, Default, Serialize)]
struct Uuid {
    bytes: [u8; 16],
}

impl AgentRecord {
    /// The record of `agent`, the `type_index`-th agent of its type in its process.
    pub fn new(agent: &Agent, type_index: u32) -> AgentRecord {
        let gpu = agent.agent_type == AgentType::Gpu;
        let (major, minor, stepping) = gfx_version(&agent.name).unwrap_or_default();
        let simd_per_cu = agent.simd_count.checked_div(agent.cu_count).unwrap_or(0);
        let (ccompute, fcompute) = match gpu {
            true => (0, agent.max_engine_clk_mhz),
            false => (agent.max_engine_clk_mhz, 0),
        };
        AgentRecord {
            size: size_of::<abi::AgentV0>() as u64,
            id: Handle {
                handle: agent.handle,
            },
            r#type: agent.agent_type as u32,
            cpu_cores_count: if gpu { 0 } else { agent.cu_count },
            simd_count: agent.simd_count,
            mem_banks_count: 0,
            caches_count: 0,
            io_links_count: 0,
            cpu_core_id_base: 0,
            simd_id_base: 0,
            max_waves_per_simd: agent.max_waves_per_simd,
            lds_size_in_kb: agent.lds_bytes_per_cu / 1024,
            gds_size_in_kb: 0,
            num_gws: 0,
            wave_front_size: agent.wave_front_size,
            num_xcc: agent.xcc_count,
            cu_count: agent.cu_count,
            array_count: 0,
            num_shader_banks: 0,
            simd_arrays_per_engine: 0,
            cu_per_simd_array: 0,
            simd_per_cu,
            max_slots_scratch_cu: 0,
            gfx_target_version: gfx_target_version(&agent.name).unwrap_or_default(),
            vendor_id: 0,
            device_id: 0,
            location_id: 0,
            domain: 0,
            drm_render_minor: 0,
            num_sdma_engines: 0,
            num_sdma_xgmi_engines: 0,
            num_sdma_queues_per_engine: 0,
            num_cp_queues: 0,
            max_engine_clk_ccompute: ccompute,
            max_engine_clk_fcompute: fcompute,
            sdma_fw_version: SdmaFirmware::default(),
            fw_version: Firmware {
                u_code: 0,
                major,
                minor,
                stepping,
            },
            capability: Capability::default(),
            cu_per_engine: 0,
            max_waves_per_cu: agent.max_waves_per_simd * simd_per_cu,
            family_id: 0,
            workgroup_max_size: 0,
            grid_max_size: 0,
            local_mem_size: 0,
            hive_id: 0,
            gpu_id: 0,
            workgroup_max_dim: Dim3::default(),
            grid_max_dim: Dim3::default(),
            name: agent.name.clone(),
            vendor_name: if gpu { "AMD" } else { "CPU" }.to_owned(),
            product_name: agent.product_name.clone(),
            model_name: String::new(),
            node_id: agent.node_id,
            logical_node_id: agent.logical_node_id.into(),
            logical_node_type_id: type_index.into(),
            // The runtime reported the agent, so HSA saw it, and HIP and what is built on
            // it see every GPU HSA sees unless the environment hid some, which the run
            // does not record.
            runtime_visibility: Visibility {
                hsa: 1,
                hip: gpu.into(),
                rccl: gpu.into(),
                rocdecode: gpu.into(),
            },
            uuid: Uuid::default(),
            mem_banks: [],
            caches: [],
            io_links: [],
            gpu_index: if gpu { type_index.into() } else { -1 },
        }
    }

    /// The record of an agent the records name but the run did not describe: of no
    /// type (`ROCPROFILER_AGENT_TYPE_NONE`), seen by no runtime.
    pub fn unknown(index: u32) -> AgentRecord {
        let agent = Agent {
            index,
            handle: 0,
            agent_type: AgentType::Cpu,
            node_id: index,
            logical_node_id: index,
            name: String::new(),
            product_name: String::new(),
            cu_count: 0,
            simd_count: 0,
            xcc_count: 0,
            wave_front_size: 0,
            max_waves_per_simd: 0,
            lds_bytes_per_cu: 0,
            max_engine_clk_mhz: 0,
        };
        AgentRecord {
            r#type: 0,
            vendor_name: String::new(),
            runtime_visibility: Visibility {
                hsa: 0,
                hip: 0,
                rccl: 0,
                rocdecode: 0,
            },
            ..AgentRecord::new(&agent, 0)
        }
    }

    pub fn vendor_name(&self) -> &str {
        &self.vendor_name
    }
}

/// A kernel symbol as serialized (`…_kernel_symbol_register_data_t`), with the three
/// names rocprofv3 derives from the mangled one.
#[derive(Debug, Serialize)]
pub struct KernelSymbolRecord {
    size: u64,
    kernel_id: u64,
    code_object_id: u64,
    kernel_name: String,
    kernel_object: u64,
    kernarg_segment_size: u32,
    kernarg_segment_alignment: u32,
    group_segment_size: u32,
    private_segment_size: u32,
    sgpr_count: u32,
    arch_vgpr_count: u32,
    accum_vgpr_count: u32,
    kernel_code_entry_byte_offset: i64,
    kernel_address: Handle,
    formatted_kernel_name: String,
    demangled_kernel_name: String,
    truncated_kernel_name: String,
}

impl KernelSymbolRecord {
    pub fn new(symbol: &KernelSymbol) -> KernelSymbolRecord {
        let names = KernelNames::of(&symbol.name);
        KernelSymbolRecord {
            size: size_of::<abi::KernelSymbolRegisterData>() as u64,
            kernel_id: symbol.kernel_id,
            code_object_id: symbol.code_object_id,
            kernel_name: symbol.name.clone(),
            kernel_object: 0,
            kernarg_segment_size: symbol.kernarg_bytes,
            kernarg_segment_alignment: 0,
            group_segment_size: symbol.lds_bytes,
            private_segment_size: symbol.scratch_bytes,
            sgpr_count: symbol.sgpr_count,
            arch_vgpr_count: symbol.arch_vgpr_count,
            accum_vgpr_count: 0,
            kernel_code_entry_byte_offset: 0,
            kernel_address: Handle { handle: 0 },
            formatted_kernel_name: names.formatted,
            demangled_kernel_name: names.demangled,
            truncated_kernel_name: names.truncated,
        }
    }

    /// The record with the name rocprofv3 shows as `formatted`: the run's form of it
    /// (mangled with its `-M`, truncated with its `-T`).
    pub fn formatted(self, name: &str) -> KernelSymbolRecord {
        KernelSymbolRecord {
            formatted_kernel_name: name.to_owned(),
            ..self
        }
    }

    /// What rocprofv3 writes for a kernel id no symbol registered: every field 0 and
    /// every name `name`.
    pub fn unregistered(name: &str) -> KernelSymbolRecord {
        KernelSymbolRecord {
            size: 0,
            kernel_id: 0,
            code_object_id: 0,
            kernel_name: String::new(),
            kernel_object: 0,
            kernarg_segment_size: 0,
            kernarg_segment_alignment: 0,
            group_segment_size: 0,
            private_segment_size: 0,
            sgpr_count: 0,
            arch_vgpr_count: 0,
            accum_vgpr_count: 0,
            kernel_code_entry_byte_offset: 0,
            kernel_address: Handle { handle: 0 },
            formatted_kernel_name: name.to_owned(),
            demangled_kernel_name: name.to_owned(),
            truncated_kernel_name: name.to_owned(),
        }
    }
}

/// The names rocprofv3 gives a kernel: demangled as it is; formatted as its tool shows it
/// by default (demangled, without the `.kd` descriptor suffix); truncated to the bare
/// function name, without scopes, template and call arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct KernelNames {
    pub demangled: String,
    pub formatted: String,
    pub truncated: String,
}

impl KernelNames {
    pub fn of(mangled: &str) -> KernelNames {
        let demangled = kernel_names::demangle(mangled);
        let formatted = kernel_names::formatted(mangled);
        let truncated = kernel_names::truncate(&demangled).to_owned();
        KernelNames {
            demangled,
            formatted,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_are_those_rocprofv3_derives() {
        let names = KernelNames::of("_ZN6solver6smoothILi8EEEvPKdPdiii");
        assert_eq!(
            names.demangled,
            "void solver::smooth<8>(double const*, double*, int, int, int)"
        );
        assert_eq!(names.formatted, names.demangled);
        assert_eq!(names.truncated, "smooth");
        let kd = KernelNames::of("_Z9vectorAddPKfS0_Pfi.kd");
        assert_eq!(
            kd.formatted,
            "vectorAdd(float const*, float const*, float*, int)"
        );
        let plain = KernelNames::of("copy_kernel");
        assert_eq!(
            (plain.formatted.as_str(), plain.truncated.as_str()),
            ("copy_kernel", "copy_kernel")
        );
    }

    #[test]
    fn an_agent_record_has_every_field_of_the_sdk_struct_in_its_order() {
        let agent = Agent {
            handle: 7,
            node_id: 2,
            logical_node_id: 2,
            ..crate::generate::mi300x(1)
        };
        let text = serde_json::to_string(&AgentRecord::new(&agent, 0)).unwrap();
        assert!(
            text.starts_with(r#"{"size":312,"id":{"handle":7},"type":2,"#),
            "{text}"
        );
        assert!(text.ends_with(r#""mem_banks":[],"caches":[],"io_links":[],"gpu_index":0}"#));
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json.as_object().unwrap().len(), 61);
        assert_eq!(json["id"]["handle"], 7);
        assert_eq!(json["gfx_target_version"], 90402);
        assert_eq!(json["simd_per_cu"], 4);
        assert_eq!(json["lds_size_in_kb"], 64);
        assert_eq!(json["max_engine_clk_fcompute"], 2100);
        assert_eq!(json["capability"]["HSAMMUPresent"], 0);
        assert_eq!(json["fw_version"]["Major"], 9);
        assert_eq!(json["sdma_fw_version"]["uCodeSDMA"], 0);
        assert_eq!(json["uuid"]["bytes"].as_array().unwrap().len(), 16);
        assert_eq!(json["gpu_index"], 0);
        assert_eq!(json["mem_banks"], serde_json::json!([]));
    }
}
