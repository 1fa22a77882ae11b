//! The SDK facts above against the layout measured from rocprofiler-sdk's real headers
//! (`../shared/data/abi/layout.json`).

use super::*;

fn enum_values(name: &str) -> Vec<(String, i64)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/abi/layout.json"
    );
    let text = std::fs::read_to_string(path).expect("../shared/data/abi/layout.json is readable");
    let layout: serde_json::Value = serde_json::from_str(&text).unwrap();
    let values = layout["enums"][name]["values"]
        .as_object()
        .unwrap_or_else(|| panic!("layout.json has enum {name}"));
    values
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect()
}

fn value_of(values: &[(String, i64)], constant: &str) -> Option<i64> {
    values.iter().find(|(k, _)| k == constant).map(|(_, v)| *v)
}

#[test]
fn domains_have_the_sdk_values() {
    let values = enum_values("rocprofiler_buffer_tracing_kind_t");
    let of_1_0: Vec<Domain> = Domain::ALL
        .iter()
        .copied()
        .filter(|d| d.since().is_none())
        .collect();
    for d in &of_1_0 {
        let constant = format!(
            "ROCPROFILER_BUFFER_TRACING_{}",
            d.name().to_ascii_uppercase()
        );
        assert_eq!(
            value_of(&values, &constant),
            Some(i64::from(d.sdk_value())),
            "{constant}"
        );
    }
    // Every real domain is offered, except the SDK's internal bookkeeping kind.
    let offered = values
        .iter()
        .filter(|(k, _)| !k.ends_with("_NONE") && !k.ends_with("_LAST"))
        .filter(|(k, _)| !k.ends_with("CORRELATION_ID_RETIREMENT"))
        .count();
    assert_eq!(offered, of_1_0.len());
}

/// `rocprofiler_buffer_tracing_kind_t` as the SDK 1.4.1 header (`fwd.h`) declares it past
/// SDK 1.0's last kind: the newer domains keep these values.
#[test]
fn newer_domains_have_the_values_of_the_newer_headers() {
    let after_1_0 = [
        "HIP_GRAPH",
        "ROCSHMEM_API",
        "ROCSHMEM_API_EXT",
        "HIPFILE_API",
        "HIPFILE_API_EXT",
        "HIP_EVENT",
    ];
    let last_of_1_0 = Domain::MarkerCoreRangeApi.sdk_value();
    for d in Domain::ALL.iter().filter(|d| d.since().is_some()) {
        let at = after_1_0
            .iter()
            .position(|c| *c == d.name().to_ascii_uppercase())
            .unwrap_or_else(|| panic!("{} is not a newer kind", d.name()));
        assert_eq!(d.sdk_value(), last_of_1_0 + 1 + at as i32, "{}", d.name());
        assert_eq!(Domain::from_sdk_value(d.sdk_value()), Some(*d));
    }
    // The releases as the CHANGELOG has them; the simulated SDK has every domain.
    let since = |d: Domain| d.since().unwrap().sdk;
    assert_eq!(since(Domain::HipGraph), SdkVersion(1, 3, 0));
    assert_eq!(since(Domain::RocshmemApi), SdkVersion(1, 3, 0));
    assert_eq!(since(Domain::HipfileApi), SdkVersion(1, 3, 5));
    assert_eq!(since(Domain::HipEvent), SdkVersion(1, 4, 1));
    assert!(Domain::ALL.iter().all(|d| d.in_sdk(SIMULATED)));
    assert!(!Domain::HipEvent.in_sdk(SdkVersion(1, 3, 5)));
    assert!(Domain::KernelDispatch.in_sdk(SdkVersion(1, 0, 0)));
    assert_eq!(SdkVersion::from_encoded(10401), SdkVersion(1, 4, 1));
    assert_eq!(
        Domain::HipfileApi.since().unwrap().to_string(),
        "rocprofiler-sdk 1.3.5 (ROCm 10.0)"
    );
}

#[test]
fn newer_operation_tables_are_sorted_and_named() {
    for d in Domain::ALL.iter().filter(|d| d.since().is_some()) {
        let ops = d.operations();
        assert!(ops.windows(2).all(|w| w[0].0 < w[1].0), "{}", d.name());
        assert_eq!(d.operation_name(ops[0].0), Some(ops[0].1));
    }
    assert_eq!(Domain::HipEvent.operation_name(2), Some("WAIT"));
    assert_eq!(Domain::HipGraph.operation_name(3), Some("EXEC_LAUNCH"));
    assert_eq!(
        Domain::RocshmemApi.operation_name(6),
        Some("rocshmem_putmem_on_stream")
    );
    assert_eq!(Domain::HipfileApi.operation_name(5), Some("hipFileRead"));
}

#[test]
fn operation_tables_match_the_headers() {
    let checks: &[(Domain, &str, &str)] = &[
        (
            Domain::HipRuntimeApi,
            "rocprofiler_hip_runtime_api_id_t",
            "ROCPROFILER_HIP_RUNTIME_API_ID_",
        ),
        (
            Domain::HsaCoreApi,
            "rocprofiler_hsa_core_api_id_t",
            "ROCPROFILER_HSA_CORE_API_ID_",
        ),
        (
            Domain::MemoryCopy,
            "rocprofiler_memory_copy_operation_t",
            "ROCPROFILER_MEMORY_COPY_",
        ),
        (
            Domain::MarkerCoreApi,
            "rocprofiler_marker_core_api_id_t",
            "ROCPROFILER_MARKER_CORE_API_ID_",
        ),
        (
            Domain::RcclApi,
            "rocprofiler_rccl_api_id_t",
            "ROCPROFILER_RCCL_API_ID_",
        ),
        (
            Domain::KernelDispatch,
            "rocprofiler_kernel_dispatch_operation_t",
            "ROCPROFILER_KERNEL_DISPATCH_",
        ),
    ];
    for (domain, enum_name, prefix) in checks {
        let values = enum_values(enum_name);
        let real = values
            .iter()
            .filter(|(k, v)| *v >= 0 && !k.ends_with("_NONE") && !k.ends_with("_LAST"))
            .count();
        assert_eq!(domain.operations().len(), real, "{enum_name}");
        for (id, name) in domain.operations() {
            let constant = format!("{prefix}{name}");
            assert_eq!(
                value_of(&values, &constant),
                Some(i64::from(*id)),
                "{constant}"
            );
        }
    }
    assert!(
        Domain::HipRuntimeApi
            .operations()
            .iter()
            .any(|(_, n)| *n == "hipMemcpyAsync")
    );
}

#[test]
fn enums_have_the_sdk_values() {
    let policy = enum_values("rocprofiler_buffer_policy_t");
    assert_eq!(
        value_of(&policy, "ROCPROFILER_BUFFER_POLICY_DISCARD"),
        Some(BufferPolicy::Discard as i64)
    );
    assert_eq!(
        value_of(&policy, "ROCPROFILER_BUFFER_POLICY_LOSSLESS"),
        Some(BufferPolicy::Lossless as i64)
    );
    let method = enum_values("rocprofiler_pc_sampling_method_t");
    assert_eq!(
        value_of(&method, "ROCPROFILER_PC_SAMPLING_METHOD_STOCHASTIC"),
        Some(PcSamplingMethod::Stochastic as i64)
    );
    assert_eq!(
        value_of(&method, "ROCPROFILER_PC_SAMPLING_METHOD_HOST_TRAP"),
        Some(PcSamplingMethod::HostTrap as i64)
    );
    let unit = enum_values("rocprofiler_pc_sampling_unit_t");
    assert_eq!(
        value_of(&unit, "ROCPROFILER_PC_SAMPLING_UNIT_INSTRUCTIONS"),
        Some(PcSamplingUnit::Instructions as i64)
    );
    assert_eq!(
        value_of(&unit, "ROCPROFILER_PC_SAMPLING_UNIT_CYCLES"),
        Some(PcSamplingUnit::Cycles as i64)
    );
    assert_eq!(
        value_of(&unit, "ROCPROFILER_PC_SAMPLING_UNIT_TIME"),
        Some(PcSamplingUnit::Time as i64)
    );
    let agent = enum_values("rocprofiler_agent_type_t");
    assert_eq!(
        value_of(&agent, "ROCPROFILER_AGENT_TYPE_CPU"),
        Some(AgentType::Cpu as i64)
    );
    assert_eq!(
        value_of(&agent, "ROCPROFILER_AGENT_TYPE_GPU"),
        Some(AgentType::Gpu as i64)
    );
}

#[test]
fn architecture_names_give_the_graphics_ip_version() {
    assert_eq!(gfx_version("gfx942"), Some((9, 4, 2)));
    assert_eq!(gfx_version("gfx90a"), Some((9, 0, 10)));
    assert_eq!(gfx_version("gfx1100"), Some((11, 0, 0)));
    assert_eq!(gfx_version("Simulated host CPU"), None);
    assert_eq!(gfx_target_version("gfx942"), Some(90402));
}

#[test]
fn target_versions_name_their_architecture_and_back() {
    for name in [
        "gfx942", "gfx90a", "gfx1100", "gfx1030", "gfx1201", "gfx950",
    ] {
        assert_eq!(gfx_name(gfx_target_version(name).unwrap()), name);
    }
}
