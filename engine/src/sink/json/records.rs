//! rocflow's records in the shape rocprofv3's JSON gives rocprofiler-sdk's: each record's
//! fields by the SDK's names, in the order its serializer writes them, nested as the SDK's
//! structs nest (`correlation_id.internal`, `dispatch_info.grid_size.x`, agents and queues
//! as `{"handle": …}`). `size` is the SDK struct's. What rocflow's records do not hold is
//! written as the SDK leaves an absent value: the HIP stream (`stream_id`) and a
//! correlation's `ancestor` are 0.

use serde::Serialize;

use crate::catalog::StreamMeta;
use crate::record::{
    ApiCall, KernelDispatch, Marker, MemoryAllocation, MemoryCopy, PcSample, ScratchMemory,
};
use crate::sdk::Domain;
use crate::sink::csv::rocprofv3::{INSTRUCTION_TYPES, NOT_ISSUED_REASONS};
use rocflow_core::abi;

/// `rocprofiler_kernel_dispatch_operation_t`'s `COMPLETE`: a buffered dispatch record's.
const DISPATCH_COMPLETE: i32 = 2;

/// An SDK handle (`rocprofiler_agent_id_t`, `rocprofiler_queue_id_t`, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Handle {
    pub handle: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

/// `rocprofiler_async_correlation_id_t`: the correlation of device work.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AsyncCorrelation {
    internal: u64,
    external: u64,
}

/// `rocprofiler_correlation_id_t`: the correlation of host calls.
#[derive(Debug, Clone, Copy, Serialize)]
struct Correlation {
    internal: u64,
    external: u64,
    ancestor: u64,
}

impl Correlation {
    fn of(internal: u64, external: u64) -> Correlation {
        Correlation {
            internal,
            external,
            ancestor: 0,
        }
    }
}

/// The SDK's handle of the agent rocflow numbers `index` in the process (0 when the
/// process did not describe it).
pub fn agent_handle(meta: &StreamMeta, index: u32) -> Handle {
    let agent = meta.agents.iter().find(|a| a.index == index);
    Handle {
        handle: agent.map_or(0, |a| a.handle),
    }
}

/// `rocprofiler_kernel_dispatch_info_t`.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct DispatchInfo {
    size: u64,
    agent_id: Handle,
    queue_id: Handle,
    kernel_id: u64,
    dispatch_id: u64,
    private_segment_size: u32,
    group_segment_size: u32,
    workgroup_size: Dim3,
    grid_size: Dim3,
}

impl DispatchInfo {
    fn of(meta: &StreamMeta, r: &KernelDispatch) -> DispatchInfo {
        DispatchInfo {
            size: size_of::<abi::KernelDispatchInfo>() as u64,
            agent_id: agent_handle(meta, r.agent),
            queue_id: Handle { handle: r.queue },
            kernel_id: r.kernel_id,
            dispatch_id: r.dispatch_id,
            private_segment_size: r.scratch_bytes,
            group_segment_size: r.lds_bytes,
            workgroup_size: Dim3 {
                x: r.workgroup_x,
                y: r.workgroup_y,
                z: r.workgroup_z,
            },
            grid_size: Dim3 {
                x: r.grid_x,
                y: r.grid_y,
                z: r.grid_z,
            },
        }
    }
}

/// What a dispatch's counter entry takes from its dispatch record: the dispatch as the
/// counting service describes it (`rocprofiler_dispatch_counting_service_data_t`), and the
/// thread that dispatched it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct DispatchData {
    size: u64,
    correlation_id: AsyncCorrelation,
    start_timestamp: u64,
    end_timestamp: u64,
    dispatch_info: DispatchInfo,
    #[serde(skip)]
    thread_id: u64,
}

impl DispatchData {
    pub fn of(meta: &StreamMeta, r: &KernelDispatch) -> DispatchData {
        DispatchData {
            size: size_of::<abi::DispatchCountingServiceData>() as u64,
            correlation_id: AsyncCorrelation {
                internal: r.correlation_id,
                external: r.external_id,
            },
            start_timestamp: r.start_ns,
            end_timestamp: r.end_ns,
            dispatch_info: DispatchInfo::of(meta, r),
            thread_id: r.tid.into(),
        }
    }

    /// What the counter samples of a dispatch that has no record say of it: its agent,
    /// kernel and end.
    pub fn of_samples(agent: Handle, dispatch_id: u64, kernel_id: u64, end: u64) -> DispatchData {
        DispatchData {
            size: size_of::<abi::DispatchCountingServiceData>() as u64,
            end_timestamp: end,
            dispatch_info: DispatchInfo {
                size: size_of::<abi::KernelDispatchInfo>() as u64,
                agent_id: agent,
                kernel_id,
                dispatch_id,
                ..DispatchInfo::default()
            },
            ..DispatchData::default()
        }
    }
}

/// One counter value of a dispatch: `tool_counter_value_t`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CounterValue {
    pub counter_id: Handle,
    pub value: f64,
}

/// A dispatch's counter values: rocprofv3's `tool_counter_record_t`.
#[derive(Debug, Serialize)]
pub struct CounterEntry<'a> {
    thread_id: u64,
    dispatch_data: &'a DispatchData,
    records: &'a [CounterValue],
    stream_id: Handle,
}

impl<'a> CounterEntry<'a> {
    pub fn new(dispatch: &'a DispatchData, records: &'a [CounterValue]) -> CounterEntry<'a> {
        CounterEntry {
            thread_id: dispatch.thread_id,
            dispatch_data: dispatch,
            records,
            stream_id: Handle::default(),
        }
    }
}

/// `rocprofiler_buffer_tracing_kernel_dispatch_record_t`, with rocprofv3's `stream_id`.
#[derive(Serialize)]
struct KernelDispatchRecord {
    size: u64,
    kind: i32,
    operation: i32,
    thread_id: u64,
    correlation_id: AsyncCorrelation,
    start_timestamp: u64,
    end_timestamp: u64,
    dispatch_info: DispatchInfo,
    stream_id: Handle,
}

pub fn kernel_dispatch(meta: &StreamMeta, r: &KernelDispatch) -> impl Serialize {
    KernelDispatchRecord {
        size: size_of::<abi::KernelDispatchRecord>() as u64,
        kind: Domain::KernelDispatch.sdk_value(),
        operation: DISPATCH_COMPLETE,
        thread_id: r.tid.into(),
        correlation_id: AsyncCorrelation {
            internal: r.correlation_id,
            external: r.external_id,
        },
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        dispatch_info: DispatchInfo::of(meta, r),
        stream_id: Handle::default(),
    }
}

/// The record of every host API domain (`rocprofiler_buffer_tracing_hip_api_record_t`,
/// `…_hsa_api_record_t`, `…_marker_api_record_t`, …); HIP calls carry rocprofv3's
/// `stream_id`.
#[derive(Serialize)]
struct ApiRecord {
    size: u64,
    kind: i32,
    operation: i32,
    correlation_id: Correlation,
    start_timestamp: u64,
    end_timestamp: u64,
    thread_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_id: Option<Handle>,
}

pub fn api(r: &ApiCall, hip: bool) -> impl Serialize {
    ApiRecord {
        size: size_of::<abi::ApiRecord>() as u64,
        kind: r.domain_id.into(),
        operation: r.operation_id,
        correlation_id: Correlation::of(r.correlation_id, r.external_id),
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        thread_id: r.tid.into(),
        stream_id: hip.then_some(Handle::default()),
    }
}

pub fn marker(r: &Marker) -> impl Serialize {
    ApiRecord {
        size: size_of::<abi::ApiRecord>() as u64,
        kind: r.domain_id.into(),
        operation: r.operation_id,
        correlation_id: Correlation::of(r.correlation_id, r.external_id),
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        thread_id: r.tid.into(),
        stream_id: None,
    }
}

/// A ROCTx message by its marker's correlation id: an entry of a C++ map as rocprofv3's
/// serializer writes one.
#[derive(Serialize)]
pub struct MapEntry<'a> {
    pub key: u64,
    pub value: &'a str,
}

/// `rocprofiler_buffer_tracing_memory_copy_record_t`, with rocprofv3's `stream_id`.
#[derive(Serialize)]
struct MemoryCopyRecord {
    size: u64,
    kind: i32,
    operation: i32,
    thread_id: u64,
    correlation_id: AsyncCorrelation,
    start_timestamp: u64,
    end_timestamp: u64,
    dst_agent_id: Handle,
    src_agent_id: Handle,
    bytes: u64,
    stream_id: Handle,
}

pub fn memory_copy(meta: &StreamMeta, r: &MemoryCopy) -> impl Serialize {
    MemoryCopyRecord {
        size: size_of::<abi::MemoryCopyRecord>() as u64,
        kind: Domain::MemoryCopy.sdk_value(),
        operation: r.operation_id.into(),
        thread_id: r.tid.into(),
        correlation_id: AsyncCorrelation {
            internal: r.correlation_id,
            external: r.external_id,
        },
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        dst_agent_id: agent_handle(meta, r.dst_agent),
        src_agent_id: agent_handle(meta, r.src_agent),
        bytes: r.bytes,
        stream_id: Handle::default(),
    }
}

/// `rocprofiler_buffer_tracing_memory_allocation_record_t`, with rocprofv3's `stream_id`;
/// the address in hexadecimal, as the SDK's serializer writes it.
#[derive(Serialize)]
struct MemoryAllocationRecord {
    size: u64,
    kind: i32,
    operation: i32,
    thread_id: u64,
    correlation_id: Correlation,
    start_timestamp: u64,
    end_timestamp: u64,
    agent_id: Handle,
    address: String,
    allocation_size: u64,
    stream_id: Handle,
}

pub fn memory_allocation(meta: &StreamMeta, r: &MemoryAllocation) -> impl Serialize {
    MemoryAllocationRecord {
        size: size_of::<abi::MemoryAllocationRecord>() as u64,
        kind: Domain::MemoryAllocation.sdk_value(),
        operation: r.operation_id.into(),
        thread_id: r.tid.into(),
        correlation_id: Correlation::of(r.correlation_id, r.external_id),
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        agent_id: agent_handle(meta, r.agent),
        address: format!("0x{:016x}", r.address),
        allocation_size: r.bytes,
        stream_id: Handle::default(),
    }
}

/// `rocprofiler_buffer_tracing_scratch_memory_record_t`.
#[derive(Serialize)]
struct ScratchMemoryRecord {
    size: u64,
    kind: i32,
    operation: i32,
    agent_id: Handle,
    queue_id: Handle,
    thread_id: u64,
    start_timestamp: u64,
    end_timestamp: u64,
    correlation_id: Correlation,
    flags: u32,
    allocation_size: u64,
}

pub fn scratch_memory(meta: &StreamMeta, r: &ScratchMemory) -> impl Serialize {
    ScratchMemoryRecord {
        size: size_of::<abi::ScratchMemoryRecord>() as u64,
        kind: Domain::ScratchMemory.sdk_value(),
        operation: r.operation_id.into(),
        agent_id: agent_handle(meta, r.agent),
        queue_id: Handle { handle: r.queue },
        thread_id: r.tid.into(),
        start_timestamp: r.start_ns,
        end_timestamp: r.end_ns,
        correlation_id: Correlation::of(r.correlation_id, r.external_id),
        flags: r.flags,
        allocation_size: r.bytes,
    }
}

/// `rocprofiler_pc_sampling_hw_id_v0_t`'s fields that lie in the 32 bits rocflow keeps;
/// the others (from `workgroup_id` on) are 0. One field's name ends in a space, as the
/// SDK's serializer spells it.
#[derive(Serialize)]
struct HwId {
    chiplet: u64,
    wave_id: u64,
    simd_id: u64,
    pipe_id: u64,
    cu_or_wgp_id: u64,
    shader_array_id: u64,
    shader_engine_id: u64,
    #[serde(rename = "workgroup_id ")]
    workgroup_id: u64,
    vm_id: u64,
    queue_id: u64,
    microengine_id: u64,
}

impl HwId {
    fn of(bits: u32) -> HwId {
        let field = |from: u32, width: u32| u64::from((bits >> from) & ((1 << width) - 1));
        HwId {
            chiplet: field(0, 6),
            wave_id: field(6, 7),
            simd_id: field(13, 2),
            pipe_id: field(15, 4),
            cu_or_wgp_id: field(19, 4),
            shader_array_id: field(23, 1),
            shader_engine_id: field(24, 5),
            workgroup_id: 0,
            vm_id: 0,
            queue_id: 0,
            microengine_id: 0,
        }
    }
}

#[derive(Serialize)]
struct Pc {
    code_object_id: u64,
    code_object_offset: u64,
}

/// `rocprofiler_pc_sampling_record_stochastic_header_t`.
#[derive(Serialize)]
struct StochasticFlags {
    has_mem_cnt: u8,
}

/// The part of `rocprofiler_pc_sampling_snapshot_v0_t` rocflow keeps: why the wave did
/// not issue; the arbiter's state is not kept, so every pipe reads 0.
#[derive(Default, Serialize)]
struct Snapshot {
    stall_reason: String,
    dual_issue_valu: u8,
    arb_state_issue_valu: u8,
    arb_state_issue_matrix: u8,
    arb_state_issue_lds: u8,
    arb_state_issue_lds_direct: u8,
    arb_state_issue_scalar: u8,
    arb_state_issue_vmem_tex: u8,
    arb_state_issue_flat: u8,
    arb_state_issue_exp: u8,
    arb_state_issue_misc: u8,
    arb_state_issue_brmsg: u8,
    arb_state_stall_valu: u8,
    arb_state_stall_matrix: u8,
    arb_state_stall_lds: u8,
    arb_state_stall_lds_direct: u8,
    arb_state_stall_scalar: u8,
    arb_state_stall_vmem_tex: u8,
    arb_state_stall_flat: u8,
    arb_state_stall_exp: u8,
    arb_state_stall_misc: u8,
    arb_state_stall_brmsg: u8,
}

/// A PC sample as the SDK's serializer writes `rocprofiler_pc_sampling_record_host_trap_v0_t`
/// or, with the fields after `flags`, `…_stochastic_v0_t`.
#[derive(Serialize)]
struct PcRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    flags: Option<StochasticFlags>,
    hw_id: HwId,
    pc: Pc,
    exec_mask: u64,
    timestamp: u64,
    dispatch_id: u64,
    corr_id: AsyncCorrelation,
    wrkgrp_id: Dim3,
    wave_in_grp: u32,
    #[serde(flatten)]
    stochastic: Option<Stochastic>,
}

#[derive(Serialize)]
struct Stochastic {
    wave_issued: u8,
    inst_type: String,
    wave_cnt: u32,
    snapshot: Snapshot,
}

/// rocprofv3's PC sample entry: the record, and its instruction's index in
/// `strings.pc_sample_instructions` (-1: rocflow does not disassemble).
#[derive(Serialize)]
struct PcSampleEntry {
    record: PcRecord,
    inst_index: i64,
}

/// `rocprofiler_pc_sampling_method_t`'s stochastic method.
pub const STOCHASTIC: u8 = 1;

pub fn pc_sample(r: &PcSample) -> impl Serialize {
    let name = |names: &[&'static str], i: u8| *names.get(usize::from(i)).unwrap_or(&"NONE");
    let stochastic = (r.method == STOCHASTIC).then(|| Stochastic {
        // rocflow keeps no issued flag: a sample with no reason for not issuing issued.
        wave_issued: u8::from(r.stall_reason == 0),
        inst_type: format!(
            "ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_{}",
            name(INSTRUCTION_TYPES, r.instruction_type)
        ),
        wave_cnt: 0,
        snapshot: Snapshot {
            stall_reason: format!(
                "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_{}",
                name(NOT_ISSUED_REASONS, r.stall_reason)
            ),
            ..Snapshot::default()
        },
    });
    PcSampleEntry {
        record: PcRecord {
            flags: stochastic
                .as_ref()
                .map(|_| StochasticFlags { has_mem_cnt: 0 }),
            hw_id: HwId::of(r.hw_id),
            pc: Pc {
                code_object_id: r.code_object_id,
                code_object_offset: r.code_object_offset,
            },
            exec_mask: r.exec_mask,
            timestamp: r.timestamp_ns,
            dispatch_id: r.dispatch_id,
            corr_id: AsyncCorrelation {
                internal: r.correlation_id,
                external: 0,
            },
            wrkgrp_id: Dim3::default(),
            wave_in_grp: 0,
            stochastic,
        },
        inst_index: -1,
    }
}
