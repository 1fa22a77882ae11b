//! The buffer records of the KFD domains: the driver's events as they happen
//! (`KFD_EVENT_*`: a migration's start and end, a fault's, a queue's eviction and restore,
//! an unmap, a count of events the driver dropped) and the SDK's pairs of them
//! (`KFD_PAGE_MIGRATE`, `KFD_PAGE_FAULT`, `KFD_QUEUE`: one record from start to end).

use super::{Handle, Layout};

abi! {
    /// A page migration's start or end.
    pub struct KfdEventPageMigrateRecord =
        ["rocprofiler_buffer_tracing_kfd_event_page_migrate_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        timestamp: u64,
        pid: u32,
        start_address: u64,
        end_address: u64,
        src_agent: Handle,
        dst_agent: Handle,
        prefetch_agent: Handle,
        preferred_agent: Handle,
        error_code: i32,
    }

    /// A GPU page fault's start or end.
    pub struct KfdEventPageFaultRecord =
        ["rocprofiler_buffer_tracing_kfd_event_page_fault_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        timestamp: u64,
        pid: u32,
        agent_id: Handle,
        address: u64,
    }

    /// A queue's eviction or restore.
    pub struct KfdEventQueueRecord = ["rocprofiler_buffer_tracing_kfd_event_queue_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        timestamp: u64,
        pid: u32,
        agent_id: Handle,
    }

    /// A range of memory unmapped from a GPU.
    pub struct KfdEventUnmapFromGpuRecord =
        ["rocprofiler_buffer_tracing_kfd_event_unmap_from_gpu_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        timestamp: u64,
        pid: u32,
        agent_id: Handle,
        start_address: u64,
        end_address: u64,
    }

    /// Events the driver dropped, `count` of them.
    pub struct KfdEventDroppedEventsRecord =
        ["rocprofiler_buffer_tracing_kfd_event_dropped_events_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        timestamp: u64,
        pid: u32,
        count: u32,
    }

    /// A page migration from start to end.
    pub struct KfdPageMigrateRecord = ["rocprofiler_buffer_tracing_kfd_page_migrate_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        start_timestamp: u64,
        end_timestamp: u64,
        pid: u32,
        start_address: u64,
        end_address: u64,
        src_agent: Handle,
        dst_agent: Handle,
        prefetch_agent: Handle,
        preferred_agent: Handle,
        error_code: i32,
    }

    /// A GPU page fault from start to end.
    pub struct KfdPageFaultRecord = ["rocprofiler_buffer_tracing_kfd_page_fault_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        start_timestamp: u64,
        end_timestamp: u64,
        pid: u32,
        agent_id: Handle,
        address: u64,
    }

    /// A queue from its eviction to its restore.
    pub struct KfdQueueRecord = ["rocprofiler_buffer_tracing_kfd_queue_record_t"] {
        size: u64,
        kind: i32,
        operation: i32,
        start_timestamp: u64,
        end_timestamp: u64,
        pid: u32,
        agent_id: Handle,
    }
}
