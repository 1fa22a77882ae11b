//! The scenario's `[[kfd]]` events, as the driver reports them to the SDK: each a record
//! of its domain's layout, on the first GPU, about a page range of the thread's own.

use rocflow_core::abi::{
    Handle, KfdEventDroppedEventsRecord, KfdEventPageFaultRecord, KfdEventPageMigrateRecord,
    KfdEventQueueRecord, KfdEventUnmapFromGpuRecord, KfdPageFaultRecord, KfdPageMigrateRecord,
    KfdQueueRecord,
};
use rocflow_core::scenario::Kfd;
use rocflow_core::sdk::Domain;

/// Where the events go: the workload's emitter hands a record to the contexts that
/// trace its domain.
pub trait Trace {
    fn trace<T: Copy>(&self, domain: Domain, operation: i32, record: &T);
}

/// How long a paired record (a migration, fault or eviction from start to end) lasts.
pub const KFD_NS: u64 = 1_000;

/// A migration's operation when it is a prefetch, in both migration domains.
const PREFETCH: i32 = 0;

/// The bytes of the page range an event is about.
const RANGE: u64 = 2 << 20;

/// Where an event happens: when, on which agents, about which page range.
pub struct At {
    pub timestamp: u64,
    pub cpu: Handle,
    pub gpu: Handle,
    pub address: u64,
}

/// Hands one event of `kfd` to the contexts that trace its domain.
pub fn emit(emitter: &impl Trace, kfd: &Kfd, at: &At) {
    let (kind, operation) = (kfd.domain.sdk_value(), kfd.operation);
    let pid = std::process::id();
    let (start, end) = (at.timestamp, at.timestamp + KFD_NS);
    let (start_address, end_address) = (at.address, at.address + RANGE);
    // A prefetch names the agent it prefetches to; the other migrations none.
    let prefetch_agent = match operation {
        PREFETCH => at.gpu,
        _ => Handle { handle: 0 },
    };
    macro_rules! send {
        ($ty:ident { $($field:ident $(: $value:expr)?),* $(,)? }) => {
            emitter.trace(kfd.domain, operation, &$ty {
                size: size_of::<$ty>() as u64,
                kind,
                operation,
                pid,
                $($field $(: $value)?,)*
            })
        };
    }
    match kfd.domain {
        Domain::KfdEventPageMigrate => send!(KfdEventPageMigrateRecord {
            timestamp: start,
            start_address,
            end_address,
            src_agent: at.cpu,
            dst_agent: at.gpu,
            prefetch_agent,
            preferred_agent: at.gpu,
            error_code: 0,
        }),
        Domain::KfdEventPageFault => send!(KfdEventPageFaultRecord {
            timestamp: start,
            agent_id: at.gpu,
            address: start_address,
        }),
        Domain::KfdEventQueue => send!(KfdEventQueueRecord {
            timestamp: start,
            agent_id: at.gpu,
        }),
        Domain::KfdEventUnmapFromGpu => send!(KfdEventUnmapFromGpuRecord {
            timestamp: start,
            agent_id: at.gpu,
            start_address,
            end_address,
        }),
        Domain::KfdEventDroppedEvents => send!(KfdEventDroppedEventsRecord {
            timestamp: start,
            count: 1,
        }),
        Domain::KfdPageMigrate => send!(KfdPageMigrateRecord {
            start_timestamp: start,
            end_timestamp: end,
            start_address,
            end_address,
            src_agent: at.cpu,
            dst_agent: at.gpu,
            prefetch_agent,
            preferred_agent: at.gpu,
            error_code: 0,
        }),
        Domain::KfdPageFault => send!(KfdPageFaultRecord {
            start_timestamp: start,
            end_timestamp: end,
            agent_id: at.gpu,
            address: start_address,
        }),
        Domain::KfdQueue => send!(KfdQueueRecord {
            start_timestamp: start,
            end_timestamp: end,
            agent_id: at.gpu,
        }),
        // The scenario admits KFD domains only.
        _ => {}
    }
}

/// The page range thread `thread`'s `n`th event of `iteration` is about.
pub fn address(thread: u32, iteration: u32, n: u32) -> u64 {
    let at = (u64::from(thread) << 36) + (u64::from(iteration) << 24);
    0x7c00_0000_0000 + at + u64::from(n % 8) * RANGE
}
