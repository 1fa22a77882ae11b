//! Every `#[repr(C)]` struct against the layout measured from rocprofiler-sdk's headers.

use super::*;

fn layout() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/abi/layout.json"
    );
    let text = std::fs::read_to_string(path).expect("../shared/data/abi/layout.json is readable");
    serde_json::from_str(&text).unwrap()
}

/// Checks size, alignment, each of our fields by name (offset and size), and that every
/// field the header declares (union members and bitfields included) falls inside one of
/// ours, so no C field is silently missing.
fn check<T: Layout>() {
    let layout = layout();
    for c_name in T::C_NAMES {
        let expected = &layout["structs"][c_name];
        assert!(expected.is_object(), "layout.json has no struct {c_name}");
        assert_eq!(
            expected["size"].as_u64().unwrap() as usize,
            std::mem::size_of::<T>(),
            "size of {c_name}"
        );
        assert_eq!(
            expected["align"].as_u64().unwrap() as usize,
            std::mem::align_of::<T>(),
            "alignment of {c_name}"
        );
        let c_fields = expected["fields"].as_array().unwrap();
        let ours = T::fields();
        for (name, offset, size) in &ours {
            let c_field = c_fields
                .iter()
                .find(|f| f["name"] == *name)
                .unwrap_or_else(|| panic!("{c_name} has no field {name}"));
            assert_eq!(
                c_field["offset"].as_u64().unwrap() as usize,
                *offset,
                "offset of {c_name}.{name}"
            );
            if c_field.get("bitfield_width").is_none() {
                assert_eq!(
                    c_field["size"].as_u64().unwrap() as usize,
                    *size,
                    "size of {c_name}.{name}"
                );
            }
        }
        for c_field in c_fields {
            let at = match c_field.get("bit_offset") {
                Some(bit) => bit.as_u64().unwrap() as usize / 8,
                None => c_field["offset"].as_u64().unwrap() as usize,
            };
            assert!(
                ours.iter()
                    .any(|(_, offset, size)| (*offset..offset + size).contains(&at)),
                "{c_name}.{} at byte {at} is not covered",
                c_field["name"]
            );
        }
    }
}

macro_rules! layout_tests {
    ($($test:ident: $ty:ty,)*) => {$(
        #[test]
        fn $test() {
            check::<$ty>();
        }
    )*};
}

layout_tests! {
    handles: Handle,
    user_data: UserData,
    dim3: Dim3,
    correlation_id: CorrelationId,
    async_correlation_id: AsyncCorrelationId,
    version_triplet: VersionTriplet,
    record_header: RecordHeader,
    client_id: ClientId,
    tool_configure_result: ToolConfigureResult,
    kernel_dispatch_info: KernelDispatchInfo,
    kernel_dispatch_record: KernelDispatchRecord,
    api_record: ApiRecord,
    memory_copy_record: MemoryCopyRecord,
    memory_allocation_record: MemoryAllocationRecord,
    scratch_memory_record: ScratchMemoryRecord,
    callback_tracing_record: CallbackTracingRecord,
    marker_api_data: MarkerApiData,
    code_object_load_data: CodeObjectLoadData,
    kernel_symbol_register_data: KernelSymbolRegisterData,
    agent_v0: AgentV0,
    counter_info_v0: CounterInfoV0,
    counter_dimension_info: CounterDimensionInfo,
    counter_record: CounterRecord,
    dispatch_counting_service_data: DispatchCountingServiceData,
    dispatch_counting_service_record: DispatchCountingServiceRecord,
    pc_sampling_configuration: PcSamplingConfiguration,
    pc: Pc,
    pc_sampling_host_trap_record: PcSamplingHostTrapRecord,
    kfd_event_page_migrate_record: KfdEventPageMigrateRecord,
    kfd_event_page_fault_record: KfdEventPageFaultRecord,
    kfd_event_queue_record: KfdEventQueueRecord,
    kfd_event_unmap_from_gpu_record: KfdEventUnmapFromGpuRecord,
    kfd_event_dropped_events_record: KfdEventDroppedEventsRecord,
    kfd_page_migrate_record: KfdPageMigrateRecord,
    kfd_page_fault_record: KfdPageFaultRecord,
    kfd_queue_record: KfdQueueRecord,
    hip_stream_data: hip_stream::HipStreamData,
}

/// The records of the domains newer SDKs added, against their layout in SDK 1.4.1's
/// `buffer_tracing.h` (x86-64: each field at its natural alignment), which `layout.json`
/// (SDK 1.0's) does not have.
#[test]
fn newer_records_have_the_newer_headers_layout() {
    fn same<T: Layout>(size: usize, fields: &[(&str, usize, usize)]) {
        assert_eq!(std::mem::size_of::<T>(), size, "{}", T::C_NAMES[0]);
        assert_eq!(std::mem::align_of::<T>(), 8, "{}", T::C_NAMES[0]);
        assert_eq!(T::fields(), fields, "{}", T::C_NAMES[0]);
    }
    same::<HipGraphRecord>(
        96,
        &[
            ("size", 0, 8),
            ("kind", 8, 4),
            ("operation", 12, 4),
            ("correlation_id", 16, 24),
            ("thread_id", 40, 8),
            ("start_timestamp", 48, 8),
            ("end_timestamp", 56, 8),
            ("agent_id", 64, 8),
            ("queue_id", 72, 8),
            ("graph_exec_id", 80, 8),
            ("kernel_dispatch_count", 88, 8),
        ],
    );
    same::<HipEventRecord>(
        88,
        &[
            ("size", 0, 8),
            ("kind", 8, 4),
            ("operation", 12, 4),
            ("correlation_id", 16, 16),
            ("thread_id", 32, 8),
            ("start_timestamp", 40, 8),
            ("end_timestamp", 48, 8),
            ("agent_id", 56, 8),
            ("queue_id", 64, 8),
            ("hip_event_handle", 72, 8),
            ("source_queue_id", 80, 8),
        ],
    );
    // The payload of the `HIP_GRAPH` callbacks (SDK 1.3.0's `callback_tracing.h`).
    same::<graph_node::HipGraphData>(
        24,
        &[
            ("size", 0, 8),
            ("graph_exec_id", 8, 8),
            ("graph_exec_value", 16, 8),
        ],
    );
    // rocSHMEM's and hipFile's records are laid out as every host API's.
    same::<ApiRecord>(
        64,
        &[
            ("size", 0, 8),
            ("kind", 8, 4),
            ("operation", 12, 4),
            ("correlation_id", 16, 24),
            ("start_timestamp", 40, 8),
            ("end_timestamp", 48, 8),
            ("thread_id", 56, 8),
        ],
    );
}

/// The enum values named in this module against the header's.
#[test]
fn constants_have_the_sdk_values() {
    let layout = layout();
    let value = |e: &str, c: &str| {
        layout["enums"][e]["values"][c]
            .as_i64()
            .unwrap_or_else(|| panic!("{e}::{c}"))
    };
    let status_t = "rocprofiler_status_t";
    for (c, ours) in [
        ("ROCPROFILER_STATUS_SUCCESS", status::SUCCESS),
        ("ROCPROFILER_STATUS_ERROR", status::ERROR),
        (
            "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND",
            status::CONTEXT_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND",
            status::BUFFER_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND",
            status::KIND_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND",
            status::OPERATION_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_AGENT_NOT_FOUND",
            status::AGENT_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_COUNTER_NOT_FOUND",
            status::COUNTER_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_CONTEXT_INVALID",
            status::CONTEXT_INVALID,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_CONTEXT_CONFLICT",
            status::CONTEXT_CONFLICT,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_SERVICE_ALREADY_CONFIGURED",
            status::SERVICE_ALREADY_CONFIGURED,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED",
            status::CONFIGURATION_LOCKED,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_NOT_IMPLEMENTED",
            status::NOT_IMPLEMENTED,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI",
            status::INCOMPATIBLE_ABI,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_INVALID_ARGUMENT",
            status::INVALID_ARGUMENT,
        ),
        ("ROCPROFILER_STATUS_ERROR_FINALIZED", status::FINALIZED),
        (
            "ROCPROFILER_STATUS_ERROR_PROFILE_NOT_FOUND",
            status::PROFILE_NOT_FOUND,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_NOT_AVAILABLE",
            status::NOT_AVAILABLE,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT",
            status::EXCEEDS_HW_LIMIT,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_CONTEXT_ERROR",
            status::CONTEXT_ERROR,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_STARTED",
            status::CONTEXT_NOT_STARTED,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_HSA_NOT_LOADED",
            status::HSA_NOT_LOADED,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_OUT_OF_RESOURCES",
            status::OUT_OF_RESOURCES,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_AGENT_DISPATCH_CONFLICT",
            status::AGENT_DISPATCH_CONFLICT,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_AGENT_MISMATCH",
            status::AGENT_MISMATCH,
        ),
        (
            "ROCPROFILER_STATUS_ERROR_PERMISSION_DENIED",
            status::PERMISSION_DENIED,
        ),
    ] {
        assert_eq!(value(status_t, c), i64::from(ours), "{c}");
    }
    let cat = "rocprofiler_buffer_category_t";
    assert_eq!(
        value(cat, "ROCPROFILER_BUFFER_CATEGORY_TRACING"),
        i64::from(category::TRACING)
    );
    assert_eq!(
        value(cat, "ROCPROFILER_BUFFER_CATEGORY_PC_SAMPLING"),
        i64::from(category::PC_SAMPLING)
    );
    assert_eq!(
        value(cat, "ROCPROFILER_BUFFER_CATEGORY_COUNTERS"),
        i64::from(category::COUNTERS)
    );
    let rec = "rocprofiler_counter_record_kind_t";
    assert_eq!(
        value(
            rec,
            "ROCPROFILER_COUNTER_RECORD_PROFILE_COUNTING_DISPATCH_HEADER"
        ),
        i64::from(counter_record::DISPATCH_HEADER)
    );
    assert_eq!(
        value(rec, "ROCPROFILER_COUNTER_RECORD_VALUE"),
        i64::from(counter_record::VALUE)
    );
    let pc = "rocprofiler_pc_sampling_record_kind_t";
    assert_eq!(
        value(pc, "ROCPROFILER_PC_SAMPLING_RECORD_HOST_TRAP_V0_SAMPLE"),
        i64::from(pc_record::HOST_TRAP_V0)
    );
    assert_eq!(
        value(pc, "ROCPROFILER_PC_SAMPLING_RECORD_STOCHASTIC_V0_SAMPLE"),
        i64::from(pc_record::STOCHASTIC_V0)
    );
    let request = "rocprofiler_external_correlation_id_request_kind_t";
    for (c, ours) in [
        ("MEMORY_COPY", graph_node::REQUEST_MEMORY_COPY),
        ("KERNEL_DISPATCH", graph_node::REQUEST_KERNEL_DISPATCH),
    ] {
        let c = format!("ROCPROFILER_EXTERNAL_CORRELATION_REQUEST_{c}");
        assert_eq!(value(request, &c), i64::from(ours), "{c}");
    }
    let cb = "rocprofiler_callback_tracing_kind_t";
    for (c, ours) in [
        ("MARKER_CORE_API", callback::MARKER_CORE_API),
        ("MARKER_CONTROL_API", callback::MARKER_CONTROL_API),
        ("MARKER_CORE_RANGE_API", callback::MARKER_CORE_RANGE_API),
    ] {
        let c = format!("ROCPROFILER_CALLBACK_TRACING_{c}");
        assert_eq!(value(cb, &c), i64::from(ours), "{c}");
    }
    for (e, prefix, ours, names) in [
        (
            "rocprofiler_marker_core_api_id_t",
            "ROCPROFILER_MARKER_CORE_API_ID_",
            callback::MARKER_CORE_MESSAGES,
            ["roctxMarkA", "roctxRangePushA", "roctxRangeStartA"],
        ),
        (
            "rocprofiler_marker_core_range_api_id_t",
            "ROCPROFILER_MARKER_CORE_RANGE_API_ID_",
            callback::MARKER_CORE_RANGE_MESSAGES,
            ["roctxMarkA", "roctxThreadRangeA", "roctxProcessRangeA"],
        ),
    ] {
        for (ours, name) in ours.into_iter().zip(names) {
            assert_eq!(
                value(e, &format!("{prefix}{name}")),
                i64::from(ours),
                "{name}"
            );
        }
    }
    assert_eq!(
        value(cb, "ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT"),
        i64::from(callback::CODE_OBJECT)
    );
    let co = "rocprofiler_code_object_operation_t";
    assert_eq!(
        value(co, "ROCPROFILER_CODE_OBJECT_LOAD"),
        i64::from(callback::CODE_OBJECT_LOAD)
    );
    assert_eq!(
        value(co, "ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER"),
        i64::from(callback::CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER)
    );
    let control = "rocprofiler_marker_control_api_id_t";
    assert_eq!(
        value(
            control,
            "ROCPROFILER_MARKER_CONTROL_API_ID_roctxProfilerPause"
        ),
        i64::from(callback::ROCTX_PROFILER_PAUSE)
    );
    assert_eq!(
        value(
            control,
            "ROCPROFILER_MARKER_CONTROL_API_ID_roctxProfilerResume"
        ),
        i64::from(callback::ROCTX_PROFILER_RESUME)
    );
    let phase = "rocprofiler_callback_phase_t";
    assert_eq!(
        value(phase, "ROCPROFILER_CALLBACK_PHASE_ENTER"),
        i64::from(callback::PHASE_ENTER)
    );
    assert_eq!(
        value(phase, "ROCPROFILER_CALLBACK_PHASE_LOAD"),
        i64::from(callback::PHASE_LOAD)
    );
    assert_eq!(
        value(phase, "ROCPROFILER_CALLBACK_PHASE_EXIT"),
        i64::from(callback::PHASE_EXIT)
    );
    assert_eq!(
        value(
            "rocprofiler_agent_version_t",
            "ROCPROFILER_AGENT_INFO_VERSION_0"
        ),
        i64::from(AGENT_INFO_VERSION_0)
    );
    assert_eq!(
        value(
            "rocprofiler_counter_info_version_id_t",
            "ROCPROFILER_COUNTER_INFO_VERSION_0"
        ),
        i64::from(COUNTER_INFO_VERSION_0)
    );
}

/// The thread-trace shader-data bundle against its layout in SDK 1.3.5's
/// `experimental/thread-trace/core.h` (x86-64), which `layout.json` (SDK 1.0's) does not
/// have: passed by value, so every field must sit where the SDK writes it.
#[test]
fn shader_data_bundle_has_the_1_3_5_layout() {
    assert_eq!(std::mem::size_of::<ShaderDataBundle>(), 64);
    assert_eq!(std::mem::align_of::<ShaderDataBundle>(), 8);
    assert_eq!(
        ShaderDataBundle::fields(),
        [
            ("size", 0, 8),
            ("data", 8, 8),
            ("data_size", 16, 8),
            ("shader_engine_id", 24, 8),
            ("chunk_index", 32, 8),
            ("read_offset", 40, 8),
            ("agent", 48, 8),
            ("flags", 56, 4),
        ]
    );
}
