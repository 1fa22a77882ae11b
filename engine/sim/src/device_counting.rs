//! rocprofiler-sdk's device counting service on the simulated GPUs. A read returns what a
//! GPU counted since the sampling context was started: the values of the dispatches that
//! ended on it in between, each dispatch's values being those dispatch counting would
//! give it. Every dispatch of a sampled GPU is kept in its ledger, and a dispatch never
//! ends before the GPU's last read (the device cannot finish work in the past), so that
//! each read is exactly the sum over the dispatch records whose end is in its window
//! (see [`crate::ledger`]).

use std::cell::Cell;
use std::sync::atomic::Ordering;

use rocflow_core::abi::{
    CounterRecord, Handle, Status, UserData, category, counter_flag, counter_record, status,
};

use crate::sdk::{Context, Phase, Running, Sdk, context_index, counter_config, phase};
use crate::workload::counter_values;

thread_local! {
    /// The context whose start is asking its callbacks for configurations: the only time
    /// the SDK accepts one.
    static STARTING: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Starts a context's device counting: each service's callback picks its GPU's counters,
/// and counting starts from now.
pub fn start(context: Handle, ctx: &Context) {
    let services = &ctx.setup.device_counting;
    if services.is_empty() {
        return;
    }
    let index = context_index(context);
    *ctx.sampling.chosen.lock().unwrap() = vec![None; services.len()];
    STARTING.set(Some(index));
    for service in services.iter().filter(|s| s.gpu.is_some()) {
        // SAFETY: the tool's callback with the arguments the SDK passes.
        unsafe { (service.callback)(context, service.agent, set_config, service.data) };
    }
    STARTING.set(None);
    ctx.sampling
        .started_at
        .store(crate::sdk::now(), Ordering::Release);
}

/// `rocprofiler_device_counting_agent_cb_t`, which the SDK hands the tool's callback.
unsafe extern "C" fn set_config(context: Handle, config: Handle) -> Status {
    let Some(sdk) = crate::sdk::sdk() else {
        return status::ERROR;
    };
    let Some(ctx) = sdk
        .running()
        .and_then(|r| r.contexts.get(context_index(context)))
    else {
        return status::CONTEXT_INVALID;
    };
    let Some((gpu, _)) = counter_config(sdk, config) else {
        return status::PROFILE_NOT_FOUND;
    };
    if ctx.setup.device_counting.is_empty() {
        return status::CONTEXT_INVALID;
    }
    if STARTING.get() != Some(context_index(context)) {
        return status::CONFIGURATION_LOCKED;
    }
    let Some(at) = (ctx.setup.device_counting.iter()).position(|s| s.gpu == Some(gpu)) else {
        return status::AGENT_MISMATCH;
    };
    let (_, counters) = counter_config(sdk, config).expect("found above");
    ctx.sampling.chosen.lock().unwrap()[at] = Some(counters);
    status::SUCCESS
}

/// `rocprofiler_sample_device_counting_service`, with the real SDK's checks in its order.
///
/// # Safety
/// `output` holds `*count` records where not null.
pub unsafe fn sample(
    context: Handle,
    user_data: UserData,
    flags: i32,
    output: *mut CounterRecord,
    count: *mut usize,
) -> Status {
    if context.handle == 0 {
        return status::CONTEXT_NOT_FOUND;
    }
    if matches!(phase(), Phase::Finalizing | Phase::Finalized) {
        return status::FINALIZED;
    }
    let Some(sdk) = crate::sdk::sdk() else {
        return status::ERROR;
    };
    let Some(running) = sdk.running() else {
        // Tools still initialize: a context started meanwhile waits for the runtime.
        let setup = sdk.setup.lock().unwrap();
        return match setup.0.get(context_index(context)) {
            Some(ctx) if ctx.started => status::HSA_NOT_LOADED,
            _ => status::CONTEXT_NOT_STARTED,
        };
    };
    let Some(ctx) = running.contexts.get(context_index(context)) else {
        return status::CONTEXT_NOT_STARTED;
    };
    if !ctx.active.load(Ordering::Acquire) {
        return status::CONTEXT_NOT_STARTED;
    }
    if !output.is_null() {
        if count.is_null() || flags & counter_flag::ASYNC != 0 {
            return status::INVALID_ARGUMENT;
        }
        // SAFETY: checked non-null.
        if unsafe { *count } == 0 {
            return status::OUT_OF_RESOURCES;
        }
    }
    if ctx.setup.device_counting.is_empty() {
        return status::CONTEXT_INVALID;
    }
    if ctx.sampling.busy.swap(true, Ordering::AcqRel) {
        return status::CONTEXT_ERROR;
    }
    let records = read(sdk, running, ctx, user_data);
    ctx.sampling.busy.store(false, Ordering::Release);
    if output.is_null() {
        return status::SUCCESS;
    }
    // SAFETY: checked non-null; the caller's capacity.
    let capacity = unsafe { *count };
    // SAFETY: as above.
    unsafe { *count = records.len() };
    if records.len() > capacity {
        return status::OUT_OF_RESOURCES;
    }
    // SAFETY: the caller holds `capacity` records at `output`.
    unsafe { std::ptr::copy_nonoverlapping(records.as_ptr(), output, records.len()) };
    status::SUCCESS
}

/// Reads every service of a started context: one record per counter instance, into its
/// buffer if it has one.
fn read(sdk: &Sdk, running: &Running, ctx: &Context, user_data: UserData) -> Vec<CounterRecord> {
    let now = crate::sdk::now();
    let from = ctx.sampling.started_at.load(Ordering::Acquire);
    let seed = sdk.scenario.scenario.seed;
    let chosen = ctx.sampling.chosen.lock().unwrap().clone();
    let mut records = Vec::new();
    for (service, counters) in ctx.setup.device_counting.iter().zip(chosen) {
        let (Some(gpu), Some(counters)) = (service.gpu, counters) else {
            continue;
        };
        let dispatches = running.ledger.read(gpu, from, now);
        let agent_id = service.agent;
        let first = records.len();
        for counter in counters.iter().map(|&i| &sdk.device.counters[i]) {
            let values = counter_values(sdk, counter, seed, &dispatches);
            records.extend(values.into_iter().map(|(id, counter_value)| CounterRecord {
                id,
                counter_value,
                dispatch_id: 0,
                user_data,
                agent_id,
            }));
        }
        if let Some(buffer) = service.buffer {
            let mut staged = crate::buffer::Staged::default();
            for record in &records[first..] {
                staged.push(category::COUNTERS, counter_record::VALUE, record);
            }
            running.buffers[buffer].push(&mut staged);
        }
    }
    records
}
