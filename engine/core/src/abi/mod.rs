//! rocprofiler-sdk's C ABI: the `#[repr(C)]` structs, handles and callback types the tool
//! library and the simulated SDK exchange. Names follow the C types without the
//! `rocprofiler_` prefix and `_t` suffix. Every struct is checked field by field against
//! the layout measured from the real headers (`../shared/data/abi/layout.json`).

use std::ffi::{c_char, c_int, c_void};

#[cfg(test)]
mod tests;

/// `rocprofiler_status_t`: 0 is success; the other values the tool and the simulated SDK
/// use are named in [`status`].
pub type Status = c_int;

/// The `rocprofiler_status_t` values rocflow produces or reacts to.
pub mod status {
    use super::Status;
    pub const SUCCESS: Status = 0;
    pub const ERROR: Status = 1;
    pub const CONTEXT_NOT_FOUND: Status = 2;
    pub const BUFFER_NOT_FOUND: Status = 3;
    pub const KIND_NOT_FOUND: Status = 4;
    pub const OPERATION_NOT_FOUND: Status = 5;
    pub const AGENT_NOT_FOUND: Status = 7;
    pub const COUNTER_NOT_FOUND: Status = 8;
    pub const CONTEXT_ERROR: Status = 9;
    pub const CONTEXT_INVALID: Status = 10;
    pub const CONTEXT_NOT_STARTED: Status = 11;
    pub const CONTEXT_CONFLICT: Status = 12;
    pub const SERVICE_ALREADY_CONFIGURED: Status = 15;
    pub const CONFIGURATION_LOCKED: Status = 16;
    pub const NOT_IMPLEMENTED: Status = 17;
    pub const INCOMPATIBLE_ABI: Status = 18;
    pub const INVALID_ARGUMENT: Status = 19;
    pub const METRIC_NOT_VALID_FOR_AGENT: Status = 20;
    pub const FINALIZED: Status = 21;
    pub const HSA_NOT_LOADED: Status = 22;
    pub const OUT_OF_RESOURCES: Status = 29;
    pub const PROFILE_NOT_FOUND: Status = 30;
    pub const AGENT_DISPATCH_CONFLICT: Status = 31;
    pub const AGENT_MISMATCH: Status = 36;
    pub const NOT_AVAILABLE: Status = 37;
    pub const EXCEEDS_HW_LIMIT: Status = 38;
    pub const AGENT_ARCH_NOT_SUPPORTED: Status = 39;
    pub const PERMISSION_DENIED: Status = 40;
}

/// `rocprofiler_counter_flag_t`.
pub mod counter_flag {
    pub const NONE: i32 = 0;
    /// Return before the values are read (into the buffer only).
    pub const ASYNC: i32 = 1;
}

/// `rocprofiler_buffer_category_t`.
pub mod category {
    pub const TRACING: u32 = 1;
    pub const PC_SAMPLING: u32 = 2;
    pub const COUNTERS: u32 = 3;
}

/// `rocprofiler_counter_record_kind_t`.
pub mod counter_record {
    pub const DISPATCH_HEADER: u32 = 1;
    pub const VALUE: u32 = 2;
}

/// `rocprofiler_pc_sampling_record_kind_t`.
pub mod pc_record {
    pub const HOST_TRAP_V0: u32 = 2;
    pub const STOCHASTIC_V0: u32 = 3;
}

/// `rocprofiler_callback_tracing_kind_t` and the operations rocflow subscribes to.
pub mod callback {
    pub const MARKER_CORE_API: i32 = 7;
    pub const MARKER_CONTROL_API: i32 = 8;
    pub const MARKER_CORE_RANGE_API: i32 = 21;
    pub const CODE_OBJECT: i32 = 10;
    /// `rocprofiler_code_object_operation_t`.
    pub const CODE_OBJECT_LOAD: i32 = 1;
    pub const CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER: i32 = 2;
    /// `rocprofiler_marker_control_api_id_t`.
    pub const ROCTX_PROFILER_PAUSE: i32 = 0;
    pub const ROCTX_PROFILER_RESUME: i32 = 1;
    /// The ROCTx calls that carry a message: `rocprofiler_marker_core_api_id_t`'s
    /// `roctxMarkA`, `roctxRangePushA`, `roctxRangeStartA`…
    pub const MARKER_CORE_MESSAGES: [i32; 3] = [0, 1, 3];
    /// …and `rocprofiler_marker_core_range_api_id_t`'s `roctxMarkA`, `roctxThreadRangeA`,
    /// `roctxProcessRangeA`.
    pub const MARKER_CORE_RANGE_MESSAGES: [i32; 3] = [0, 1, 2];
    /// `roctxThreadRangeA`: a range pushed (enter) and popped (exit) on a thread.
    pub const ROCTX_THREAD_RANGE: i32 = 1;
    /// `rocprofiler_callback_phase_t`.
    pub const PHASE_ENTER: i32 = 1;
    pub const PHASE_LOAD: i32 = 1;
    pub const PHASE_EXIT: i32 = 2;
}

/// `rocprofiler_agent_version_t`: the agent struct version the tool asks for.
pub const AGENT_INFO_VERSION_0: c_int = 1;
/// `rocprofiler_counter_info_version_id_t`.
pub const COUNTER_INFO_VERSION_0: c_int = 1;

/// The oldest rocprofiler-sdk whose API and layouts rocflow's tool uses (ROCm 7.0's), as
/// major, minor, patch: the runner refuses an older installation, the tool an older SDK.
pub const MIN_SDK_VERSION: (u32, u32, u32) = (1, 0, 0);

/// The SDK version as `rocprofiler_configure` receives it: major * 10000 + minor * 100 + patch.
pub const fn version(major: u32, minor: u32, patch: u32) -> u32 {
    major * 10_000 + minor * 100 + patch
}

/// A struct whose layout the tests check against the real headers.
pub trait Layout {
    /// The C type names this struct stands for (one layout can serve several records).
    const C_NAMES: &'static [&'static str];
    /// Each field's C name, offset and size.
    fn fields() -> Vec<(&'static str, usize, usize)>;
}

macro_rules! abi {
    ($(
        $(#[$doc:meta])*
        pub struct $name:ident = [$($cname:literal),+] {
            $($(#[$fdoc:meta])* $field:ident: $ty:ty,)*
        }
    )*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl Layout for $name {
            const C_NAMES: &'static [&'static str] = &[$($cname),+];
            fn fields() -> Vec<(&'static str, usize, usize)> {
                vec![$((
                    stringify!($field).trim_start_matches("r#"),
                    std::mem::offset_of!($name, $field),
                    std::mem::size_of::<$ty>(),
                ),)*]
            }
        }
    )*};
}

abi! {
    /// An opaque handle (context, buffer, agent, queue, counter, counter configuration).
    pub struct Handle = [
        "rocprofiler_context_id_t", "rocprofiler_buffer_id_t", "rocprofiler_agent_id_t",
        "rocprofiler_queue_id_t", "rocprofiler_counter_id_t", "rocprofiler_counter_config_id_t",
        "rocprofiler_stream_id_t"
    ] {
        handle: u64,
    }

    /// `rocprofiler_user_data_t`, a union of a value and a pointer; rocflow uses the value.
    pub struct UserData = ["rocprofiler_user_data_t"] {
        value: u64,
    }

    pub struct Dim3 = ["rocprofiler_dim3_t"] {
        x: u32,
        y: u32,
        z: u32,
    }

    pub struct CorrelationId = ["rocprofiler_correlation_id_t"] {
        internal: u64,
        external: UserData,
        ancestor: u64,
    }

    pub struct AsyncCorrelationId = ["rocprofiler_async_correlation_id_t"] {
        internal: u64,
        external: UserData,
    }

    pub struct VersionTriplet = ["rocprofiler_version_triplet_t"] {
        major: u32,
        minor: u32,
        patch: u32,
    }

    /// Heads every buffered record: its category and kind, and where the payload is.
    pub struct RecordHeader = ["rocprofiler_record_header_t"] {
        category: u32,
        kind: u32,
        payload: *mut c_void,
    }

    pub struct ClientId = ["rocprofiler_client_id_t"] {
        size: usize,
        name: *const c_char,
        handle: u32,
    }

    /// What `rocprofiler_configure` returns: the tool's entry points.
    pub struct ToolConfigureResult = ["rocprofiler_tool_configure_result_t"] {
        size: usize,
        initialize: Option<ToolInitialize>,
        finalize: Option<ToolFinalize>,
        tool_data: *mut c_void,
    }

    pub struct KernelDispatchInfo = ["rocprofiler_kernel_dispatch_info_t"] {
        size: u64,
        agent_id: Handle,
        queue_id: Handle,
        kernel_id: u64,
        dispatch_id: u64,
        private_segment_size: u32,
        group_segment_size: u32,
        workgroup_size: Dim3,
        grid_size: Dim3,
        reserved_padding: [u8; 56],
    }

    pub struct KernelDispatchRecord = ["rocprofiler_buffer_tracing_kernel_dispatch_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: AsyncCorrelationId,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        dispatch_info: KernelDispatchInfo,
    }

    /// The record of every host API domain (HSA, HIP, marker, RCCL, rocDecode, rocJPEG).
    pub struct ApiRecord = [
        "rocprofiler_buffer_tracing_hip_api_record_t", "rocprofiler_buffer_tracing_hsa_api_record_t",
        "rocprofiler_buffer_tracing_marker_api_record_t", "rocprofiler_buffer_tracing_rccl_api_record_t",
        "rocprofiler_buffer_tracing_rocdecode_api_record_t", "rocprofiler_buffer_tracing_rocjpeg_api_record_t"
    ] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: CorrelationId,
        start_timestamp: u64,
        end_timestamp: u64,
        thread_id: u64,
    }

    pub struct MemoryCopyRecord = ["rocprofiler_buffer_tracing_memory_copy_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: AsyncCorrelationId,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        dst_agent_id: Handle,
        src_agent_id: Handle,
        bytes: u64,
        dst_address: u64,
        src_address: u64,
    }

    pub struct MemoryAllocationRecord = ["rocprofiler_buffer_tracing_memory_allocation_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: CorrelationId,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        agent_id: Handle,
        address: u64,
        allocation_size: u64,
    }

    pub struct ScratchMemoryRecord = ["rocprofiler_buffer_tracing_scratch_memory_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: CorrelationId,
        agent_id: Handle,
        queue_id: Handle,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        flags: u32,
        allocation_size: u64,
    }

    /// One `hipGraphLaunch` (SDK 1.3.0; its layout is checked against the newer header in
    /// the tests, as `layout.json` is SDK 1.0's).
    pub struct HipGraphRecord = ["rocprofiler_buffer_tracing_hip_graph_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: CorrelationId,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        agent_id: Handle,
        queue_id: Handle,
        graph_exec_id: Handle,
        kernel_dispatch_count: u64,
    }

    /// The GPU barrier of a `hipEventRecord` or `hipStreamWaitEvent` (SDK 1.4.1; checked
    /// as [`HipGraphRecord`] is).
    pub struct HipEventRecord = ["rocprofiler_buffer_tracing_hip_event_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        correlation_id: AsyncCorrelationId,
        thread_id: u64,
        start_timestamp: u64,
        end_timestamp: u64,
        agent_id: Handle,
        queue_id: Handle,
        hip_event_handle: u64,
        source_queue_id: Handle,
    }

    /// What a callback-tracing callback receives.
    pub struct CallbackTracingRecord = ["rocprofiler_callback_tracing_record_t"] {
        context_id: Handle,
        thread_id: u64,
        correlation_id: CorrelationId,
        kind: i32,
        operation: i32,
        phase: i32,
        payload: *mut c_void,
    }

    /// The payload of a marker API callback.
    pub struct MarkerApiData = ["rocprofiler_callback_tracing_marker_api_data_t"] {
        size: u64,
        /// `rocprofiler_marker_api_args_t`, a union: each of its members that has a
        /// message (a mark's, a range's) has it first.
        args: [*const c_char; 2],
        retval: u64,
    }

    pub struct CodeObjectLoadData = ["rocprofiler_callback_tracing_code_object_load_data_t"] {
        size: u64,
        code_object_id: u64,
        agent_id: Handle,
        hsa_agent: u64,
        uri: *const c_char,
        load_base: u64,
        load_size: u64,
        load_delta: i64,
        storage_type: i32,
        memory_base: u64,
        memory_size: u64,
    }

    pub struct KernelSymbolRegisterData = [
        "rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t"
    ] {
        size: u64,
        kernel_id: u64,
        code_object_id: u64,
        kernel_name: *const c_char,
        kernel_object: u64,
        kernarg_segment_size: u32,
        kernarg_segment_alignment: u32,
        group_segment_size: u32,
        private_segment_size: u32,
        sgpr_count: u32,
        arch_vgpr_count: u32,
        accum_vgpr_count: u32,
        kernel_code_entry_byte_offset: i64,
        kernel_address: u64,
    }

    /// `rocprofiler_agent_v0_t`: what the SDK knows of a CPU or GPU.
    pub struct AgentV0 = ["rocprofiler_agent_v0_t"] {
        size: u64,
        id: Handle,
        r#type: i32,
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
        sdma_fw_version: u32,
        fw_version: u32,
        capability: u32,
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
        mem_banks: *const c_void,
        caches: *const c_void,
        io_links: *const c_void,
        name: *const c_char,
        vendor_name: *const c_char,
        product_name: *const c_char,
        model_name: *const c_char,
        node_id: u32,
        logical_node_id: i32,
        logical_node_type_id: i32,
        runtime_visibility: u32,
        uuid: [u8; 16],
    }

    /// `rocprofiler_counter_info_v0_t`; `flags` holds the `is_constant` (bit 0) and
    /// `is_derived` (bit 1) bitfields.
    pub struct CounterInfoV0 = ["rocprofiler_counter_info_v0_t"] {
        id: Handle,
        name: *const c_char,
        description: *const c_char,
        block: *const c_char,
        expression: *const c_char,
        is_constant: u8,
    }

    pub struct CounterDimensionInfo = ["rocprofiler_counter_record_dimension_info_t"] {
        name: *const c_char,
        instance_size: usize,
        id: u64,
    }

    /// One counter value of a dispatch; `id` packs the counter and its dimension position.
    pub struct CounterRecord = ["rocprofiler_counter_record_t"] {
        id: u64,
        counter_value: f64,
        dispatch_id: u64,
        user_data: UserData,
        agent_id: Handle,
    }

    /// What the per-dispatch counting callback receives.
    pub struct DispatchCountingServiceData = ["rocprofiler_dispatch_counting_service_data_t"] {
        size: u64,
        correlation_id: AsyncCorrelationId,
        start_timestamp: u64,
        end_timestamp: u64,
        dispatch_info: KernelDispatchInfo,
    }

    /// Heads a dispatch's counter records in a buffer.
    pub struct DispatchCountingServiceRecord = ["rocprofiler_dispatch_counting_service_record_t"] {
        size: u64,
        num_records: u64,
        correlation_id: AsyncCorrelationId,
        start_timestamp: u64,
        end_timestamp: u64,
        dispatch_info: KernelDispatchInfo,
    }

    pub struct PcSamplingConfiguration = ["rocprofiler_pc_sampling_configuration_t"] {
        size: u64,
        method: i32,
        unit: i32,
        min_interval: usize,
        max_interval: usize,
        flags: u64,
    }

    pub struct Pc = ["rocprofiler_pc_t"] {
        code_object_id: u64,
        code_object_offset: u64,
    }

    /// A host-trap PC sample; `hw_id` packs chiplet (bits 0-5), wave (6-12) and more.
    pub struct PcSamplingHostTrapRecord = ["rocprofiler_pc_sampling_record_host_trap_v0_t"] {
        size: u64,
        hw_id: u64,
        pc: Pc,
        exec_mask: u64,
        timestamp: u64,
        dispatch_id: u64,
        correlation_id: AsyncCorrelationId,
        workgroup_id: Dim3,
        wave_in_group: u32,
    }
}

mod kfd;
pub use kfd::*;
mod shader_data;
pub use shader_data::*;
pub mod graph_node;
pub mod hip_stream;
pub mod kernel_replay;
mod spm;
pub use spm::*;

/// `rocprofiler_tool_initialize_t`.
pub type ToolInitialize =
    unsafe extern "C" fn(finalize: ClientFinalize, tool_data: *mut c_void) -> c_int;
/// `rocprofiler_tool_finalize_t`.
pub type ToolFinalize = unsafe extern "C" fn(tool_data: *mut c_void);
/// `rocprofiler_client_finalize_t`: lets a tool finalize itself early.
pub type ClientFinalize = unsafe extern "C" fn(client: ClientId);
/// `rocprofiler_configure`, the symbol a tool library exports.
pub type Configure = unsafe extern "C" fn(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client: *mut ClientId,
) -> *mut ToolConfigureResult;
/// `rocprofiler_buffer_tracing_cb_t`: a buffer delivers its records.
pub type BufferCallback = unsafe extern "C" fn(
    context: Handle,
    buffer: Handle,
    headers: *mut *mut RecordHeader,
    count: usize,
    data: *mut c_void,
    drop_count: u64,
);
/// `rocprofiler_buffer_tracing_operation_args_cb_t`: one argument of a traced call
/// (kind, operation, position, value address, indirection count, typeid name, name,
/// value text, data); non-zero stops the iteration.
pub type BufferArgsCallback = unsafe extern "C" fn(
    kind: i32,
    operation: i32,
    arg_number: u32,
    arg_value_addr: *const c_void,
    arg_indirection_count: i32,
    arg_type: *const c_char,
    arg_name: *const c_char,
    arg_value_str: *const c_char,
    data: *mut c_void,
) -> c_int;
/// `rocprofiler_callback_tracing_cb_t`.
pub type TracingCallback = unsafe extern "C" fn(
    record: CallbackTracingRecord,
    user_data: *mut UserData,
    data: *mut c_void,
);
/// `rocprofiler_query_available_agents_cb_t`.
pub type AgentsCallback = unsafe extern "C" fn(
    version: c_int,
    agents: *mut *const c_void,
    count: usize,
    data: *mut c_void,
) -> Status;
/// `rocprofiler_available_counters_cb_t`.
pub type CountersCallback = unsafe extern "C" fn(
    agent: Handle,
    counters: *mut Handle,
    count: usize,
    data: *mut c_void,
) -> Status;
/// `rocprofiler_available_dimensions_cb_t`.
pub type DimensionsCallback = unsafe extern "C" fn(
    counter: Handle,
    dimensions: *const CounterDimensionInfo,
    count: usize,
    data: *mut c_void,
) -> Status;
/// `rocprofiler_dispatch_counting_service_cb_t`: picks the counters of one dispatch.
pub type DispatchCountingCallback = unsafe extern "C" fn(
    dispatch: DispatchCountingServiceData,
    config: *mut Handle,
    user_data: *mut UserData,
    data: *mut c_void,
);
/// `rocprofiler_device_counting_agent_cb_t`: sets an agent's counter configuration, from
/// within [`DeviceCountingCallback`] only.
pub type DeviceCountingSetConfig = unsafe extern "C" fn(context: Handle, config: Handle) -> Status;
/// `rocprofiler_device_counting_service_cb_t`: called as the context starts, for each agent
/// it samples, to pick the agent's counters.
pub type DeviceCountingCallback = unsafe extern "C" fn(
    context: Handle,
    agent: Handle,
    set_config: DeviceCountingSetConfig,
    data: *mut c_void,
);
/// `rocprofiler_available_pc_sampling_configurations_cb_t`.
pub type PcConfigurationsCallback = unsafe extern "C" fn(
    configs: *const PcSamplingConfiguration,
    count: usize,
    data: *mut c_void,
) -> Status;
