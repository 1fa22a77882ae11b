//! The KFD domains' records read into [`KfdEvent`]s: when, where (the agent and the first
//! address the event is about) and what (domain and operation). A paired record
//! (`KFD_PAGE_MIGRATE`, `KFD_PAGE_FAULT`, `KFD_QUEUE`) is an event at its start.

use std::ffi::c_void;

use rocflow_core::abi::{
    Handle, KfdEventDroppedEventsRecord, KfdEventPageFaultRecord, KfdEventPageMigrateRecord,
    KfdEventQueueRecord, KfdEventUnmapFromGpuRecord, KfdPageFaultRecord, KfdPageMigrateRecord,
    KfdQueueRecord,
};
use rocflow_core::record::KfdEvent;
use rocflow_core::sdk::Domain;

/// The event a KFD domain's record is, its agent's index given by `agent`; none for a
/// domain that is not KFD's. A migration is placed on the agent the pages move to, and a
/// dropped-events record, which names none, on no agent (`u32::MAX`).
///
/// # Safety
/// `payload` points to a record of `domain` as the SDK delivers it.
pub unsafe fn event(
    domain: Domain,
    payload: *const c_void,
    pid: u32,
    agent: impl Fn(Handle) -> u32,
) -> Option<KfdEvent> {
    /// The payload as the record of its domain.
    ///
    /// # Safety
    /// As [`event`]'s.
    unsafe fn read<'a, R>(payload: *const c_void) -> &'a R {
        // SAFETY: the caller's contract.
        unsafe { &*payload.cast::<R>() }
    }
    // SAFETY (each `read`): the caller's contract, the record type being the domain's.
    let (operation, timestamp_ns, agent, address) = match domain {
        Domain::KfdEventPageMigrate => {
            let r = unsafe { read::<KfdEventPageMigrateRecord>(payload) };
            (
                r.operation,
                r.timestamp,
                agent(r.dst_agent),
                r.start_address,
            )
        }
        Domain::KfdEventPageFault => {
            let r = unsafe { read::<KfdEventPageFaultRecord>(payload) };
            (r.operation, r.timestamp, agent(r.agent_id), r.address)
        }
        Domain::KfdEventQueue => {
            let r = unsafe { read::<KfdEventQueueRecord>(payload) };
            (r.operation, r.timestamp, agent(r.agent_id), 0)
        }
        Domain::KfdEventUnmapFromGpu => {
            let r = unsafe { read::<KfdEventUnmapFromGpuRecord>(payload) };
            (r.operation, r.timestamp, agent(r.agent_id), r.start_address)
        }
        Domain::KfdEventDroppedEvents => {
            let r = unsafe { read::<KfdEventDroppedEventsRecord>(payload) };
            (r.operation, r.timestamp, u32::MAX, 0)
        }
        Domain::KfdPageMigrate => {
            let r = unsafe { read::<KfdPageMigrateRecord>(payload) };
            let to = agent(r.dst_agent);
            (r.operation, r.start_timestamp, to, r.start_address)
        }
        Domain::KfdPageFault => {
            let r = unsafe { read::<KfdPageFaultRecord>(payload) };
            let at = agent(r.agent_id);
            (r.operation, r.start_timestamp, at, r.address)
        }
        Domain::KfdQueue => {
            let r = unsafe { read::<KfdQueueRecord>(payload) };
            (r.operation, r.start_timestamp, agent(r.agent_id), 0)
        }
        _ => return None,
    };
    Some(KfdEvent {
        pid,
        agent,
        timestamp_ns,
        address,
        domain_id: domain.sdk_value() as u8,
        operation_id: operation,
    })
}
