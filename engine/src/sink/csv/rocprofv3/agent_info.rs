//! `PREFIX_agent_info.csv`: each agent's `rocprofiler_agent_v0_t` in rocprofv3's columns.
//! rocprofv3 writes the same columns whatever `--agent-index` says.

use crate::catalog::StreamMeta;
use crate::sink::rocpd::extdata::AgentRecord;

use super::format::{Line, type_index};

/// The columns of `agent_info.csv`: `rocprofiler_agent_v0_t`'s fields.
pub(super) const AGENT_INFO: &[&str] = &[
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
];

/// The rows of `agent_info.csv` of the agents of every process in `metas`, by node id; an
/// agent that two processes (of one node) describe alike is written once. Each agent is
/// as the rocpd sink describes it in full (`rocprofiler_agent_v0_t`), in rocprofv3's
/// columns.
pub(super) fn agent_rows<'a>(metas: impl Iterator<Item = &'a StreamMeta>) -> Vec<u8> {
    let mut rows: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut line = Line::default();
    for meta in metas {
        for a in &meta.agents {
            let record = AgentRecord::new(a, type_index(meta, a));
            let record = serde_json::to_value(record).expect("agent records serialize");
            for column in AGENT_INFO {
                match agent_field(&record, column) {
                    serde_json::Value::String(s) => line.text(&s),
                    value => line.int(value.as_u64().unwrap_or_default()),
                };
            }
            let mut row = Vec::new();
            line.end(&mut row);
            rows.push((a.node_id, row));
        }
    }
    rows.sort();
    rows.dedup();
    rows.into_iter().flat_map(|(_, row)| row).collect()
}

/// The value of an `agent_info.csv` column in an agent's record: the field of the
/// column's name, the 32-bit value of the firmware and capability bit fields, the agent
/// type by name.
fn agent_field(record: &serde_json::Value, column: &str) -> serde_json::Value {
    use serde_json::Value;
    let field = column.to_ascii_lowercase();
    let bits = |value: &Value, fields: &[(&str, u32)]| {
        let mut packed = 0u64;
        let mut shift = 0;
        for (name, width) in fields {
            let v = value[name].as_u64().unwrap_or_default() & ((1 << width) - 1);
            packed |= v << shift;
            shift += width;
        }
        Value::from(packed)
    };
    match field.as_str() {
        "agent_type" => Value::from(match record["type"].as_u64() {
            Some(1) => "CPU",
            Some(2) => "GPU",
            _ => "UNK",
        }),
        // `HSA_ENGINE_VERSION` and `HSA_ENGINE_ID`.
        "sdma_fw_version" => bits(&record[&field], &[("uCodeSDMA", 10), ("uCodeRes", 10)]),
        "fw_version" => bits(
            &record[&field],
            &[("uCode", 10), ("Major", 6), ("Minor", 8), ("Stepping", 8)],
        ),
        // rocflow does not learn the capability bits.
        "capability" => Value::from(0),
        _ => match field.rsplit_once("_dim_") {
            Some((dim, axis)) => record[format!("{dim}_dim")][axis].clone(),
            None => record[&field].clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each column of `agent_info.csv` is read from a field of the agent's record, none
    /// falls back to nothing.
    #[test]
    fn every_agent_info_column_is_a_field_of_the_agent_record() {
        let agent = crate::generate::mi300x(1);
        let record = serde_json::to_value(AgentRecord::new(&agent, 0)).unwrap();
        for column in AGENT_INFO {
            assert!(!agent_field(&record, column).is_null(), "{column}");
        }
        assert_eq!(agent_field(&record, "Agent_Type"), "GPU");
        assert_eq!(
            agent_field(&record, "Workgroup_Max_Dim_X"),
            record["workgroup_max_dim"]["x"]
        );
    }
}
