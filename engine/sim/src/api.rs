//! The SDK's C API. Like rocprofiler-sdk, contexts, buffers and services can only be set
//! up while the tool's initialize callback runs; after that the setup is frozen and only
//! starting, stopping and flushing remain. Wrong calls get the real status codes.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::Ordering;

use rocflow_core::abi::{
    self, AgentsCallback, BufferCallback, CounterInfoV0, CountersCallback, DeviceCountingCallback,
    DimensionsCallback, DispatchCountingCallback, Handle, PcConfigurationsCallback,
    PcSamplingConfiguration, Status, TracingCallback, status,
};
use rocflow_core::sdk::{BufferPolicy, Domain};

use crate::buffer::BufferDef;
use crate::device;
use crate::sdk::{
    BUFFER_HANDLE_BASE, CONFIG_HANDLE_BASE, CONTEXT_HANDLE_BASE, ContextSetup, Counting, PcService,
    Phase, Sdk, Subscription, buffer_index, configure, context_index, installed, now, phase, sdk,
    slice, version,
};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_version(
    major: *mut u32,
    minor: *mut u32,
    patch: *mut u32,
) -> Status {
    // SAFETY: the caller passes writable pointers (null ones are skipped).
    unsafe {
        let version = version();
        for (ptr, value) in [(major, version.0), (minor, version.1), (patch, version.2)] {
            if !ptr.is_null() {
                *ptr = value;
            }
        }
    }
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_get_timestamp(ts: *mut u64) -> Status {
    if ts.is_null() {
        return status::INVALID_ARGUMENT;
    }
    // SAFETY: checked non-null; the caller passes a writable pointer.
    unsafe { *ts = now() };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_get_status_string(code: Status) -> *const c_char {
    // The real SDK's texts, which users see in the tool's messages.
    let text: &'static CStr = match code {
        status::SUCCESS => c"Success",
        status::CONTEXT_NOT_FOUND => c"Context ID not found",
        status::BUFFER_NOT_FOUND => c"Buffer ID not found",
        status::KIND_NOT_FOUND => c"Kind ID not found",
        status::OPERATION_NOT_FOUND => c"Operation ID not found",
        status::AGENT_NOT_FOUND => c"Agent ID not found",
        status::COUNTER_NOT_FOUND => c"HW counter not found",
        status::CONTEXT_CONFLICT => c"Context has a conflict with another context",
        status::SERVICE_ALREADY_CONFIGURED => {
            c"Service configuration request would overwrite existing service configuration values"
        }
        status::CONFIGURATION_LOCKED => {
            c"Configuration request occurred outside of valid rocprofiler configuration period"
        }
        status::NOT_IMPLEMENTED => c"API function is defined but not implemented",
        status::INCOMPATIBLE_ABI => {
            c"Data structure provided by user has a incompatible binary interface with this version of rocprofiler"
        }
        status::INVALID_ARGUMENT => c"Function invoked with one or more invalid arguments",
        status::NOT_AVAILABLE => {
            c"The service is not available. Please refer to API functions that return this status code for more information."
        }
        status::EXCEEDS_HW_LIMIT => c"Request exceeds the capabilities of the hardware to collect",
        status::CONTEXT_ERROR => c"General context error",
        status::HSA_NOT_LOADED => c"Function call requires that HSA is loaded",
        status::CONTEXT_INVALID => c"Context configuration is not valid",
        status::CONTEXT_NOT_STARTED => c"Context failed to start",
        status::FINALIZED => c"Invalid request because rocprofiler has finalized",
        status::OUT_OF_RESOURCES => c"The given resources are insufficient to complete operation",
        status::PROFILE_NOT_FOUND => c"Could not find counter profile",
        status::AGENT_DISPATCH_CONFLICT => {
            c"Cannot have both an agent counter collection and a dispatch counter in the same context"
        }
        status::AGENT_MISMATCH => {
            c"Counter profile agent does not match the agent in the context"
        }
        status::PERMISSION_DENIED => {
            c"Required permission (CAP_PERFMON) is not set, permission denied"
        }
        _ => c"General error",
    };
    text.as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_context(id: *mut Handle) -> Status {
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    if id.is_null() {
        return status::INVALID_ARGUMENT;
    }
    if phase() != Phase::Initializing {
        return status::CONFIGURATION_LOCKED;
    }
    let mut setup = sdk.setup.lock().unwrap();
    setup.0.push(ContextSetup {
        client: crate::clients::initializing(),
        ..ContextSetup::default()
    });
    // SAFETY: checked non-null.
    unsafe {
        *id = Handle {
            handle: CONTEXT_HANDLE_BASE + setup.0.len() as u64 - 1,
        }
    };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_buffer(
    context: Handle,
    size: usize,
    watermark: usize,
    policy: c_int,
    callback: Option<BufferCallback>,
    data: *mut c_void,
    id: *mut Handle,
) -> Status {
    let policy = match policy {
        1 => BufferPolicy::Discard,
        2 => BufferPolicy::Lossless,
        _ => return status::INVALID_ARGUMENT,
    };
    let (Some(callback), false) = (callback, id.is_null()) else {
        return status::INVALID_ARGUMENT;
    };
    if size == 0 || watermark > size {
        return status::INVALID_ARGUMENT;
    }
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    if phase() != Phase::Initializing {
        return status::CONFIGURATION_LOCKED;
    }
    let mut setup = sdk.setup.lock().unwrap();
    if context_index(context) >= setup.0.len() {
        return status::CONTEXT_NOT_FOUND;
    }
    let handle = Handle {
        handle: BUFFER_HANDLE_BASE + setup.1.len() as u64,
    };
    let def = BufferDef {
        context,
        size,
        watermark: watermark.max(1),
        policy,
        callback,
        data,
    };
    setup.1.push((handle, def));
    // SAFETY: checked non-null.
    unsafe { *id = handle };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_buffer_tracing_service(
    context: Handle,
    kind: c_int,
    operations: *const i32,
    count: usize,
    buffer: Handle,
) -> Status {
    // SAFETY: the caller passes `count` operations.
    let operations = unsafe { slice(operations, count) }.to_vec();
    configure(context, |contexts, index, buffers| {
        // An older SDK has no kind of the domains added since.
        let Some(domain) = Domain::from_sdk_value(kind).filter(|d| d.in_sdk(version())) else {
            return status::KIND_NOT_FOUND;
        };
        let known = domain.operations();
        if !known.is_empty()
            && let Some(_) = operations
                .iter()
                .find(|op| known.binary_search_by_key(op, |(id, _)| id).is_err())
        {
            return status::OPERATION_NOT_FOUND;
        }
        let buffer = buffer_index(buffer);
        if buffer >= buffers {
            return status::BUFFER_NOT_FOUND;
        }
        let ctx = &mut contexts[index];
        if ctx.tracing.iter().any(|(d, _, _)| *d == kind) {
            return status::SERVICE_ALREADY_CONFIGURED;
        }
        let operations = (!operations.is_empty()).then_some(operations);
        ctx.tracing.push((kind, operations, buffer));
        status::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_callback_tracing_service(
    context: Handle,
    kind: c_int,
    operations: *const i32,
    count: usize,
    callback: Option<TracingCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    // SAFETY: the caller passes `count` operations.
    let operations = unsafe { slice(operations, count) }.to_vec();
    configure(context, |contexts, index, _| {
        if !crate::kernel_replay::subscribable(kind) {
            return status::KIND_NOT_FOUND;
        }
        // Kernel replay has one driver in a process: a second context may not subscribe.
        let others = match kind {
            crate::kernel_replay::KIND => &contexts[..],
            _ => std::slice::from_ref(&contexts[index]),
        };
        if (others.iter()).any(|c| c.subscriptions.iter().any(|s| s.kind == kind)) {
            return status::SERVICE_ALREADY_CONFIGURED;
        }
        let ctx = &mut contexts[index];
        ctx.subscriptions.push(Subscription {
            kind,
            operations: (!operations.is_empty()).then_some(operations),
            callback,
            data,
        });
        status::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_available_agents(
    version: c_int,
    callback: Option<AgentsCallback>,
    agent_size: usize,
    data: *mut c_void,
) -> Status {
    let (Some(sdk), Some(callback)) = (installed(), callback) else {
        return status::INVALID_ARGUMENT;
    };
    if version != abi::AGENT_INFO_VERSION_0 {
        return status::INVALID_ARGUMENT;
    }
    // As the real SDK: a caller built against older, smaller headers is served, one that
    // expects more than the SDK has is not.
    if agent_size > std::mem::size_of::<abi::AgentV0>() {
        return status::INCOMPATIBLE_ABI;
    }
    let mut agents: Vec<*const c_void> = sdk
        .device
        .agents
        .iter()
        .map(|a| (a as *const abi::AgentV0).cast())
        .collect();
    // SAFETY: the tool's callback, with the agents alive for the call.
    unsafe { callback(version, agents.as_mut_ptr(), agents.len(), data) }
}

fn set_active(context: Handle, active: bool) -> Status {
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    // As the real SDK: no start once finalizing began (a tool's timer thread may try as
    // the process exits), and a stop after finalization has nothing left to stop.
    match phase() {
        Phase::Finalizing | Phase::Finalized if active => {
            return match sdk
                .running()
                .and_then(|r| r.contexts.get(context_index(context)))
            {
                Some(_) => status::CONFIGURATION_LOCKED,
                None => status::CONTEXT_NOT_FOUND,
            };
        }
        Phase::Finalized => return status::SUCCESS,
        _ => {}
    }
    if phase() == Phase::Initializing {
        let mut setup = sdk.setup.lock().unwrap();
        let index = context_index(context);
        let conflict = (setup.0.get(index)).is_some_and(|c| c.counting.is_some() && !c.started)
            && counting_started(setup.0.iter().filter(|c| c.started));
        return match setup.0.get_mut(index) {
            Some(_) if active && conflict => status::CONTEXT_CONFLICT,
            // As the real SDK: a context that samples devices starts, and says its device
            // counting waits for the HSA runtime, which loads after the tools initialize.
            Some(ctx) if active && !ctx.device_counting.is_empty() => {
                ctx.started = true;
                status::HSA_NOT_LOADED
            }
            Some(ctx) => {
                ctx.started = active;
                status::SUCCESS
            }
            None => status::CONTEXT_NOT_FOUND,
        };
    }
    let Some(running) = sdk.running() else {
        return status::CONTEXT_NOT_FOUND;
    };
    match running.contexts.get(context_index(context)) {
        Some(ctx)
            if active
                && ctx.setup.counting.is_some()
                && !ctx.active.load(Ordering::Acquire)
                && counting_started(
                    running
                        .contexts
                        .iter()
                        .filter_map(|c| c.active.load(Ordering::Acquire).then_some(&c.setup)),
                ) =>
        {
            status::CONTEXT_CONFLICT
        }
        Some(ctx) => {
            if active && !ctx.active.load(Ordering::Acquire) {
                crate::device_counting::start(context, ctx);
                crate::device_trace::start(ctx);
            }
            let was_active = ctx.active.swap(active, Ordering::AcqRel);
            if was_active && !active {
                crate::device_trace::stop(ctx);
            }
            if active {
                crate::workload::report_code_objects(sdk, ctx);
            }
            status::SUCCESS
        }
        None => status::CONTEXT_NOT_FOUND,
    }
}

/// Whether a started context of `started` counts dispatches: as the real SDK, whichever
/// tool's it is, a second counting context does not start beside it.
fn counting_started<'a>(started: impl IntoIterator<Item = &'a ContextSetup>) -> bool {
    started.into_iter().any(|c| c.counting.is_some())
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_start_context(context: Handle) -> Status {
    set_active(context, true)
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_stop_context(context: Handle) -> Status {
    set_active(context, false)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_context_is_active(context: Handle, out: *mut c_int) -> Status {
    let Some(running) = sdk().and_then(Sdk::running) else {
        return status::CONTEXT_NOT_FOUND;
    };
    match (running.contexts.get(context_index(context)), out.is_null()) {
        (Some(ctx), false) => {
            // SAFETY: checked non-null.
            unsafe { *out = c_int::from(ctx.active.load(Ordering::Acquire)) };
            status::SUCCESS
        }
        (None, _) => status::CONTEXT_NOT_FOUND,
        (_, true) => status::INVALID_ARGUMENT,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_flush_buffer(buffer: Handle) -> Status {
    let Some(running) = sdk().and_then(Sdk::running) else {
        return status::BUFFER_NOT_FOUND;
    };
    match running.buffers.get(buffer_index(buffer)) {
        Some(b) => {
            b.flush();
            status::SUCCESS
        }
        None => status::BUFFER_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_agent_supported_counters(
    agent: Handle,
    callback: Option<CountersCallback>,
    data: *mut c_void,
) -> Status {
    // SAFETY: the caller's arguments, passed on.
    unsafe { iterate_counters(agent, callback, data, |_| true, None) }
}

/// Hands `callback` the ids of `agent`'s counters that `offered` keeps, as each of the
/// SDK's counter listings does; `when_none` is the answer for an agent with none of them
/// (`None`: the callback gets the empty list).
///
/// # Safety
/// `callback` is the tool's, to be called with `data`.
pub(crate) unsafe fn iterate_counters(
    agent: Handle,
    callback: Option<CountersCallback>,
    data: *mut c_void,
    offered: impl Fn(&device::Counter) -> bool,
    when_none: Option<Status>,
) -> Status {
    let (Some(sdk), Some(callback)) = (installed(), callback) else {
        return status::INVALID_ARGUMENT;
    };
    let Some(gpu) = sdk.device.gpu(agent) else {
        return status::AGENT_NOT_FOUND;
    };
    let mut ids: Vec<Handle> = (sdk.device.counters.iter())
        .filter(|c| c.gpu == gpu && offered(c))
        .map(|c| c.id)
        .collect();
    match when_none {
        Some(answer) if ids.is_empty() => answer,
        // SAFETY: the tool's callback, with the ids alive for the call.
        _ => unsafe { callback(agent, ids.as_mut_ptr(), ids.len(), data) },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_counter_info(
    counter: Handle,
    version: c_int,
    info: *mut c_void,
) -> Status {
    let Some(c) = installed().and_then(|s| s.device.counter(counter)) else {
        return status::COUNTER_NOT_FOUND;
    };
    if version != abi::COUNTER_INFO_VERSION_0 || info.is_null() {
        return status::INVALID_ARGUMENT;
    }
    let out = CounterInfoV0 {
        id: c.id,
        name: c.name.as_ptr(),
        description: c.description.as_ptr(),
        block: c.block.as_ptr(),
        expression: c.expression.as_ptr(),
        is_constant: 0,
    };
    // SAFETY: the caller passes room for a `rocprofiler_counter_info_v0_t`.
    unsafe { info.cast::<CounterInfoV0>().write(out) };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_counter_dimensions(
    counter: Handle,
    callback: Option<DimensionsCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    let Some(c) = installed().and_then(|s| s.device.counter(counter)) else {
        return status::COUNTER_NOT_FOUND;
    };
    let dims: Vec<abi::CounterDimensionInfo> = (c.counter.dimensions.iter())
        .zip(&c.dimension_names)
        .map(|(&(id, size), name)| abi::CounterDimensionInfo {
            name: name.as_ptr(),
            instance_size: size as usize,
            id,
        })
        .collect();
    // SAFETY: the tool's callback, with the dimensions alive for the call.
    unsafe { callback(counter, dims.as_ptr(), dims.len(), data) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_record_counter_id(
    id: u64,
    counter: *mut Handle,
) -> Status {
    if counter.is_null() {
        return status::INVALID_ARGUMENT;
    }
    // SAFETY: checked non-null.
    unsafe { *counter = device::instance_counter(id) };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_record_dimension_position(
    id: u64,
    dimension: u64,
    position: *mut usize,
) -> Status {
    if position.is_null() || dimension > 6 {
        return status::INVALID_ARGUMENT;
    }
    // SAFETY: checked non-null.
    unsafe { *position = device::instance_position(id, dimension) as usize };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_create_counter_config(
    agent: Handle,
    counters: *mut Handle,
    count: usize,
    config: *mut Handle,
) -> Status {
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    let Some(gpu) = sdk.device.gpu(agent) else {
        return status::AGENT_NOT_FOUND;
    };
    if config.is_null() || count == 0 {
        return status::INVALID_ARGUMENT;
    }
    let mut indexes = Vec::new();
    // SAFETY: the caller passes `count` counter ids.
    for id in unsafe { slice(counters, count) } {
        match sdk
            .device
            .counters
            .iter()
            .position(|c| c.id.handle == id.handle)
        {
            Some(i) if sdk.device.counters[i].gpu == gpu => indexes.push(i),
            Some(_) => return status::INVALID_ARGUMENT,
            None => return status::COUNTER_NOT_FOUND,
        }
    }
    indexes.sort_unstable();
    indexes.dedup();
    if !sdk.device.fits(&indexes) {
        return status::EXCEEDS_HW_LIMIT;
    }
    let mut configs = sdk.configs.lock().unwrap();
    configs.push((gpu, indexes));
    // SAFETY: checked non-null.
    unsafe {
        *config = Handle {
            handle: CONFIG_HANDLE_BASE + configs.len() as u64 - 1,
        }
    };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_buffer_dispatch_counting_service(
    context: Handle,
    buffer: Handle,
    callback: Option<DispatchCountingCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    configure(context, |contexts, index, buffers| {
        let buffer = buffer_index(buffer);
        if buffer >= buffers {
            return status::BUFFER_NOT_FOUND;
        }
        // A context counts dispatches once, and not beside PC sampling. Other contexts
        // (another tool's too) may count as well: they conflict when started together.
        let ctx = &contexts[index];
        if ctx.counting.is_some() || !ctx.pc_sampling.is_empty() {
            return status::CONTEXT_CONFLICT;
        }
        contexts[index].counting = Some(Counting {
            buffer,
            callback,
            data,
        });
        status::SUCCESS
    })
}

/// Whether a beta's variable (`ROCPROFILER_PC_SAMPLING_BETA_ENABLED`,
/// `ROCPROFILER_SPM_BETA_ENABLED`) turns it on, read as the real SDK reads a boolean: a
/// number is on unless 0, and `off`, `false`, `no`, `n` and `f` (any case) are off, as is
/// an empty value (which the real SDK refuses outright).
pub(crate) fn beta_enabled(variable: &str) -> bool {
    let Ok(value) = std::env::var(variable) else {
        return false;
    };
    if let Ok(number) = value.parse::<u64>() {
        return number != 0;
    }
    let value = value.to_ascii_lowercase();
    !["", "off", "false", "no", "n", "f"].contains(&value.as_str())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_pc_sampling_agent_configurations(
    agent: Handle,
    callback: Option<PcConfigurationsCallback>,
    data: *mut c_void,
) -> Status {
    // PC sampling is a beta of the real SDK, off unless asked for.
    if !beta_enabled(rocflow_core::sdk::PC_SAMPLING_BETA) {
        return status::NOT_IMPLEMENTED;
    }
    let (Some(sdk), Some(callback)) = (installed(), callback) else {
        return status::INVALID_ARGUMENT;
    };
    let Some(gpu) = sdk.device.gpu(agent) else {
        return status::AGENT_NOT_FOUND;
    };
    let configs = pc_configurations(sdk, gpu);
    // SAFETY: the tool's callback, with the configurations alive for the call.
    unsafe { callback(configs.as_ptr(), configs.len(), data) }
}

fn pc_configurations(sdk: &Sdk, gpu: usize) -> Vec<PcSamplingConfiguration> {
    let method = |m: &str| match m {
        "stochastic" => 1,
        "host_trap" => 2,
        _ => 0,
    };
    let unit = |u: &str| match u {
        "instructions" => 1,
        "cycles" => 2,
        "time" => 3,
        _ => 0,
    };
    sdk.scenario.agents[gpu]
        .pc_sampling
        .iter()
        .map(|p| PcSamplingConfiguration {
            size: std::mem::size_of::<PcSamplingConfiguration>() as u64,
            method: method(&p.method),
            unit: unit(&p.unit),
            min_interval: p.min_interval as usize,
            max_interval: p.max_interval as usize,
            flags: 0,
        })
        .collect()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_pc_sampling_service(
    context: Handle,
    agent: Handle,
    method: c_int,
    unit: c_int,
    interval: u64,
    buffer: Handle,
    _flags: c_int,
) -> Status {
    if !beta_enabled(rocflow_core::sdk::PC_SAMPLING_BETA) {
        return status::NOT_IMPLEMENTED;
    }
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    let Some(gpu) = sdk.device.gpu(agent) else {
        return status::AGENT_NOT_FOUND;
    };
    let supported = pc_configurations(sdk, gpu);
    let Some(config) = supported
        .iter()
        .find(|c| c.method == method && c.unit == unit)
    else {
        return status::NOT_AVAILABLE;
    };
    if !(config.min_interval as u64..=config.max_interval as u64).contains(&interval) {
        return status::INVALID_ARGUMENT;
    }
    configure(context, |contexts, index, buffers| {
        let buffer = buffer_index(buffer);
        if buffer >= buffers {
            return status::BUFFER_NOT_FOUND;
        }
        let conflict = contexts
            .iter()
            .enumerate()
            .any(|(i, c)| c.counting.is_some() || (i != index && !c.pc_sampling.is_empty()));
        if conflict {
            return status::CONTEXT_CONFLICT;
        }
        let ctx = &mut contexts[index];
        if ctx.pc_sampling.iter().any(|p| p.gpu == gpu) {
            return status::SERVICE_ALREADY_CONFIGURED;
        }
        ctx.pc_sampling.push(PcService { gpu, buffer });
        status::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_device_counting_service(
    context: Handle,
    buffer: Handle,
    agent: Handle,
    callback: Option<DeviceCountingCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    configure(context, |contexts, index, buffers| {
        let ctx = &mut contexts[index];
        if ctx.counting.is_some() {
            return status::AGENT_DISPATCH_CONFLICT;
        }
        if !ctx.pc_sampling.is_empty() {
            return status::CONTEXT_CONFLICT;
        }
        let buffer = match buffer.handle {
            0 => None,
            _ if buffer_index(buffer) < buffers => Some(buffer_index(buffer)),
            _ => return status::BUFFER_NOT_FOUND,
        };
        if ctx
            .device_counting
            .iter()
            .any(|s| s.agent.handle == agent.handle)
        {
            return status::INVALID_ARGUMENT;
        }
        // Where the real SDK cannot lock the GPU's counters for the process (no
        // CAP_PERFMON), and refuses rather than sample counters others may reset.
        if sdk.scenario.scenario.deny_perfmon {
            return status::PERMISSION_DENIED;
        }
        ctx.device_counting.push(crate::sdk::DeviceService {
            agent,
            gpu: sdk.device.gpu(agent),
            buffer,
            callback,
            data,
        });
        status::SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_sample_device_counting_service(
    context: Handle,
    user_data: abi::UserData,
    flags: c_int,
    output: *mut abi::CounterRecord,
    count: *mut usize,
) -> Status {
    // SAFETY: the caller's arguments, as the SDK documents them.
    unsafe { crate::device_counting::sample(context, user_data, flags, output, count) }
}

#[cfg(test)]
mod tests {
    //! The rules the real SDK enforces, called through the exported C functions.

    use rocflow_core::scenario::Scenario;

    use std::ptr::null_mut;

    use rocflow_core::abi::{ErasedShaderDataFn, ShaderDataBundle, ShaderDataCallback};
    use rocflow_core::thread_trace::{Parameter, parameter};

    use super::*;
    use crate::sdk::{install, set_phase};

    unsafe extern "C" fn ignore(
        _: Handle,
        _: Handle,
        _: *mut *mut abi::RecordHeader,
        _: usize,
        _: *mut c_void,
        _: u64,
    ) {
    }

    unsafe extern "C" fn no_callback(
        _: abi::CallbackTracingRecord,
        _: *mut abi::UserData,
        _: *mut c_void,
    ) {
    }

    unsafe extern "C" fn no_config(
        _: abi::DispatchCountingServiceData,
        _: *mut Handle,
        _: *mut abi::UserData,
        _: *mut c_void,
    ) {
    }

    /// The simulated SDK reports the newest version: it calls the bundled form.
    unsafe extern "C" fn no_shader(_: ShaderDataBundle, _: abi::UserData) {}

    fn no_shader_erased() -> ErasedShaderDataFn {
        ShaderDataCallback::Bundled(no_shader).erase()
    }

    unsafe extern "C" fn no_dispatch(
        _: Handle,
        _: Handle,
        _: abi::AsyncCorrelationId,
        _: u64,
        _: u64,
        _: *mut c_void,
        _: *mut abi::UserData,
    ) -> i32 {
        0
    }

    unsafe extern "C" fn no_spm_config(
        _: *const abi::SpmDispatchData,
        _: *mut Handle,
        _: *mut abi::UserData,
        _: *mut c_void,
    ) {
    }

    /// One test walks the phases in order, as a process does.
    #[test]
    fn setup_is_only_allowed_while_the_tool_initializes() {
        install(Scenario::parse(rocflow_core::scenario::DEFAULT).unwrap());
        let mut context = Handle { handle: 0 };
        // SAFETY: valid pointers throughout.
        unsafe {
            assert_eq!(
                rocprofiler_create_context(&mut context),
                status::CONFIGURATION_LOCKED
            );
            set_phase(Phase::Initializing);
            assert_eq!(rocprofiler_create_context(&mut context), status::SUCCESS);
            let mut buffer = Handle { handle: 0 };
            let create = |policy, out: &mut Handle| {
                rocprofiler_create_buffer(
                    context,
                    4096,
                    2048,
                    policy,
                    Some(ignore),
                    std::ptr::null_mut(),
                    out,
                )
            };
            assert_eq!(
                create(7, &mut buffer),
                status::INVALID_ARGUMENT,
                "unknown policy"
            );
            assert_eq!(create(2, &mut buffer), status::SUCCESS);
            let trace = |kind, ops: &[i32], buffer| {
                rocprofiler_configure_buffer_tracing_service(
                    context,
                    kind,
                    ops.as_ptr(),
                    ops.len(),
                    buffer,
                )
            };
            assert_eq!(trace(99, &[], buffer), status::KIND_NOT_FOUND);
            assert_eq!(trace(5, &[100_000], buffer), status::OPERATION_NOT_FOUND);
            assert_eq!(
                trace(5, &[], Handle { handle: 12345 }),
                status::BUFFER_NOT_FOUND
            );
            assert_eq!(trace(5, &[214], buffer), status::SUCCESS);
            assert_eq!(trace(5, &[], buffer), status::SERVICE_ALREADY_CONFIGURED);
            let stray = Handle { handle: 0xdead };
            assert_eq!(trace(11, &[], buffer), status::SUCCESS);
            assert_eq!(
                rocprofiler_configure_buffer_tracing_service(
                    stray,
                    11,
                    std::ptr::null(),
                    0,
                    buffer
                ),
                status::CONTEXT_NOT_FOUND
            );
            let count = |ctx| {
                rocprofiler_configure_buffer_dispatch_counting_service(
                    ctx,
                    buffer,
                    Some(no_config),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(count(context), status::SUCCESS);
            let mut second = Handle { handle: 0 };
            assert_eq!(rocprofiler_create_context(&mut second), status::SUCCESS);
            assert_eq!(
                count(second),
                status::SUCCESS,
                "a second counting context (another tool's, say): they conflict when started"
            );
            // Kernel replay: found by its name, driven by one context only.
            let replay = crate::kernel_replay::KIND;
            let mut name: *const c_char = std::ptr::null();
            let mut length = 0;
            assert_eq!(
                crate::kernel_replay::rocprofiler_query_callback_tracing_kind_name(
                    replay,
                    &mut name,
                    &mut length
                ),
                status::SUCCESS
            );
            assert_eq!(CStr::from_ptr(name), c"KERNEL_REPLAY");
            assert_eq!(length, 13);
            let subscribe = |ctx| {
                rocprofiler_configure_callback_tracing_service(
                    ctx,
                    replay,
                    std::ptr::null(),
                    0,
                    Some(no_callback),
                    null_mut(),
                )
            };
            assert_eq!(subscribe(context), status::SUCCESS);
            assert_eq!(
                subscribe(second),
                status::SERVICE_ALREADY_CONFIGURED,
                "a second context replaying kernels"
            );
            let gpu = sdk().unwrap().device.gpu_handle(0);
            // Device counting: not beside dispatch counting, once per agent and context.
            let mut device = Handle { handle: 0 };
            assert_eq!(rocprofiler_create_context(&mut device), status::SUCCESS);
            let mut config = Handle { handle: 0 };
            let mut counter = [sdk().unwrap().device.counters[0].id];
            assert_eq!(
                rocprofiler_create_counter_config(gpu, counter.as_mut_ptr(), 1, &mut config),
                status::SUCCESS
            );
            let config: *mut c_void = Box::into_raw(Box::new(config)).cast();
            let sample_on = |ctx, buffer| {
                rocprofiler_configure_device_counting_service(
                    ctx,
                    buffer,
                    gpu,
                    Some(choose),
                    config,
                )
            };
            let none = Handle { handle: 0 };
            assert_eq!(sample_on(context, none), status::AGENT_DISPATCH_CONFLICT);
            assert_eq!(sample_on(device, stray), status::BUFFER_NOT_FOUND);
            assert_eq!(sample_on(device, none), status::SUCCESS);
            assert_eq!(
                sample_on(device, none),
                status::INVALID_ARGUMENT,
                "the agent again"
            );
            // PC sampling is a beta the real SDK leaves off unless asked for.
            let query = || {
                rocprofiler_query_pc_sampling_agent_configurations(
                    gpu,
                    Some(no_configurations),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(query(), status::NOT_IMPLEMENTED);
            assert_eq!(
                rocprofiler_configure_pc_sampling_service(second, gpu, 2, 3, 1000, buffer, 0),
                status::NOT_IMPLEMENTED
            );
            // SAFETY: this crate's only test; nothing else reads the environment meanwhile.
            std::env::set_var(rocflow_core::sdk::PC_SAMPLING_BETA, "on");
            assert_eq!(query(), status::SUCCESS);
            assert_eq!(
                rocprofiler_configure_pc_sampling_service(second, gpu, 1, 2, 1024, buffer, 0),
                status::NOT_AVAILABLE,
                "stochastic sampling is not in the scenario"
            );
            assert_eq!(
                rocprofiler_configure_pc_sampling_service(second, gpu, 2, 3, 1000, buffer, 0),
                status::CONTEXT_CONFLICT,
                "PC sampling next to dispatch counting"
            );
            // The device thread-trace service: the dispatch service's parameters but
            // serialize_all, a shader callback, and not beside the dispatch service.
            let mut traced = Handle { handle: 0 };
            assert_eq!(rocprofiler_create_context(&mut traced), status::SUCCESS);
            let device_trace = |ctx, serialize: u64, shader: Option<ErasedShaderDataFn>| {
                let mut parameters = [
                    Parameter::value(parameter::SHADER_ENGINE_MASK, 0x3),
                    Parameter::value(parameter::SERIALIZE_ALL, serialize),
                ];
                let user = abi::UserData { value: 0 };
                crate::device_trace::rocprofiler_configure_device_thread_trace_service(
                    ctx,
                    gpu,
                    parameters.as_mut_ptr(),
                    parameters.len(),
                    shader,
                    user,
                )
            };
            assert_eq!(
                device_trace(traced, 1, Some(no_shader_erased())),
                status::INVALID_ARGUMENT
            );
            assert_eq!(device_trace(traced, 0, None), status::INVALID_ARGUMENT);
            assert_eq!(
                device_trace(stray, 0, Some(no_shader_erased())),
                status::CONTEXT_NOT_FOUND
            );
            assert_eq!(
                device_trace(traced, 0, Some(no_shader_erased())),
                status::SUCCESS
            );
            let mut parameters = [Parameter::value(parameter::SHADER_ENGINE_MASK, 0x1)];
            assert_eq!(
                crate::thread_trace::rocprofiler_configure_dispatch_thread_trace_service(
                    traced,
                    gpu,
                    parameters.as_mut_ptr(),
                    parameters.len(),
                    Some(no_dispatch),
                    Some(no_shader_erased()),
                    null_mut(),
                ),
                status::CONTEXT_INVALID,
                "the dispatch service beside the device one"
            );
            // SPM is a beta too; a configuration takes an interval in the agent's range,
            // and a context streams SPM alone.
            let mut interval = abi::SpmParameters {
                size: size_of::<abi::SpmParameters>() as u64,
                r#type: abi::spm_parameter::SAMPLE_INTERVAL_SCLK_CYCLES,
                value: crate::spm::INTERVAL_CYCLES.0,
            };
            let parameter = &raw mut interval;
            let spm_config = move |out: &mut Handle| {
                let (mut counters, mut parameters) = (counter, [parameter]);
                crate::spm::rocprofiler_spm_create_counter_config(
                    gpu,
                    counters.as_mut_ptr(),
                    1,
                    parameters.as_mut_ptr(),
                    1,
                    out,
                )
            };
            let mut streamed = Handle { handle: 0 };
            assert_eq!(rocprofiler_create_context(&mut streamed), status::SUCCESS);
            let stream_in = |ctx| {
                crate::spm::rocprofiler_spm_configure_buffer_dispatch_service(
                    ctx,
                    buffer,
                    Some(no_spm_config),
                    null_mut(),
                )
            };
            let mut spm = Handle { handle: 0 };
            assert_eq!(spm_config(&mut spm), status::NOT_IMPLEMENTED);
            assert_eq!(stream_in(streamed), status::NOT_IMPLEMENTED);
            // SAFETY: as above.
            std::env::set_var(abi::SPM_BETA, "1");
            assert_eq!(spm_config(&mut spm), status::SUCCESS);
            assert_eq!(
                crate::spm::rocprofiler_spm_destroy_counter_config(spm),
                status::SUCCESS
            );
            assert_eq!(
                crate::spm::rocprofiler_spm_destroy_counter_config(spm),
                status::PROFILE_NOT_FOUND
            );
            // The SDK reads the parameter where the pointer says.
            (*parameter).value = 0;
            let mut spm = Handle { handle: 0 };
            assert_eq!(
                spm_config(&mut spm),
                status::INVALID_ARGUMENT,
                "below the range"
            );
            assert_eq!(
                stream_in(context),
                status::CONTEXT_CONFLICT,
                "beside counting"
            );
            assert_eq!(stream_in(streamed), status::SUCCESS);
            set_phase(Phase::Running);
            sdk().unwrap().freeze();
            assert_eq!(
                device_trace(traced, 0, Some(no_shader_erased())),
                status::CONFIGURATION_LOCKED
            );
            assert_eq!(
                rocprofiler_create_context(&mut second),
                status::CONFIGURATION_LOCKED
            );
            assert_eq!(trace(10, &[], buffer), status::CONFIGURATION_LOCKED);
            assert_eq!(rocprofiler_start_context(context), status::SUCCESS);
            assert_eq!(
                rocprofiler_start_context(second),
                status::CONTEXT_CONFLICT,
                "two counting contexts at once"
            );
            assert_eq!(rocprofiler_stop_context(context), status::SUCCESS);
            assert_eq!(rocprofiler_start_context(second), status::SUCCESS);
            assert_eq!(rocprofiler_stop_context(second), status::SUCCESS);
            assert_eq!(rocprofiler_start_context(context), status::SUCCESS);
            assert_eq!(rocprofiler_start_context(stray), status::CONTEXT_NOT_FOUND);
            assert_eq!(rocprofiler_flush_buffer(stray), status::BUFFER_NOT_FOUND);
            let agents = |size| {
                rocprofiler_query_available_agents(
                    abi::AGENT_INFO_VERSION_0,
                    Some(no_agents),
                    size,
                    std::ptr::null_mut(),
                )
            };
            let size = std::mem::size_of::<abi::AgentV0>();
            assert_eq!(agents(size), status::SUCCESS);
            assert_eq!(agents(size - 8), status::SUCCESS, "older, smaller headers");
            assert_eq!(agents(size + 8), status::INCOMPATIBLE_ABI);
            // Reads: of a started context only, into room the caller says it has.
            let mut records = [EMPTY; 64];
            let read = |flags, output: *mut abi::CounterRecord, count: *mut usize| {
                rocprofiler_sample_device_counting_service(
                    device,
                    abi::UserData { value: 7 },
                    flags,
                    output,
                    count,
                )
            };
            assert_eq!(read(0, null_mut(), null_mut()), status::CONTEXT_NOT_STARTED);
            assert_eq!(rocprofiler_start_context(device), status::SUCCESS);
            assert_eq!(
                *CHOSEN.lock().unwrap(),
                [status::PROFILE_NOT_FOUND, status::SUCCESS],
                "the callback's configurations, bad then good"
            );
            let set_config = SET_CONFIG.lock().unwrap().expect("the callback ran");
            let late = *config.cast::<Handle>();
            assert_eq!(set_config(device, late), status::CONFIGURATION_LOCKED);
            assert_eq!(read(0, null_mut(), null_mut()), status::SUCCESS);
            let mut count = 0;
            let output = records.as_mut_ptr();
            assert_eq!(read(0, output, &mut count), status::OUT_OF_RESOURCES);
            count = 1;
            assert_eq!(
                read(1, output, &mut count),
                status::INVALID_ARGUMENT,
                "async"
            );
            let instances = sdk().unwrap().device.counters[0].instances() as usize;
            assert_eq!(read(0, output, &mut count), status::OUT_OF_RESOURCES);
            assert_eq!(count, instances, "the room needed");
            count = records.len();
            assert_eq!(read(0, output, &mut count), status::SUCCESS);
            assert_eq!(count, instances);
            assert!(records[..count].iter().all(|r| {
                r.agent_id.handle == gpu.handle && r.dispatch_id == 0 && r.user_data.value == 7
            }));
            assert_eq!(
                rocprofiler_sample_device_counting_service(
                    Handle { handle: 0 },
                    abi::UserData { value: 0 },
                    0,
                    output,
                    &mut count
                ),
                status::CONTEXT_NOT_FOUND
            );
            // At exit: a start from a tool's thread comes too late, a stop is still a stop.
            set_phase(Phase::Finalizing);
            assert_eq!(
                rocprofiler_start_context(context),
                status::CONFIGURATION_LOCKED
            );
            assert_eq!(rocprofiler_start_context(stray), status::CONTEXT_NOT_FOUND);
            assert_eq!(rocprofiler_stop_context(context), status::SUCCESS);
            assert_eq!(rocprofiler_flush_buffer(buffer), status::SUCCESS);
            assert_eq!(read(0, null_mut(), null_mut()), status::FINALIZED);
            set_phase(Phase::Finalized);
            assert_eq!(
                rocprofiler_start_context(context),
                status::CONFIGURATION_LOCKED
            );
            assert_eq!(rocprofiler_stop_context(context), status::SUCCESS);
            // The SDK is initialized: forcing configuration again is refused.
            assert_eq!(
                crate::rocprofiler_force_configure(Some(never_configured)),
                status::CONFIGURATION_LOCKED
            );
        }
    }

    const EMPTY: abi::CounterRecord = abi::CounterRecord {
        id: 0,
        counter_value: 0.0,
        dispatch_id: 0,
        user_data: abi::UserData { value: 0 },
        agent_id: Handle { handle: 0 },
    };

    /// What the device counting callback's `set_config` answered, in order.
    static CHOSEN: std::sync::Mutex<Vec<Status>> = std::sync::Mutex::new(Vec::new());
    static SET_CONFIG: std::sync::Mutex<Option<abi::DeviceCountingSetConfig>> =
        std::sync::Mutex::new(None);

    /// Offers a configuration that does not exist, then the one in `data`.
    unsafe extern "C" fn choose(
        context: Handle,
        _: Handle,
        set_config: abi::DeviceCountingSetConfig,
        data: *mut c_void,
    ) {
        // SAFETY: the SDK's function, during the start that called us; our data.
        let statuses = unsafe {
            [
                set_config(context, Handle { handle: 0xbad }),
                set_config(context, *data.cast::<Handle>()),
            ]
        };
        CHOSEN.lock().unwrap().extend(statuses);
        *SET_CONFIG.lock().unwrap() = Some(set_config);
    }

    unsafe extern "C" fn no_agents(
        _: c_int,
        _: *mut *const c_void,
        _: usize,
        _: *mut c_void,
    ) -> Status {
        status::SUCCESS
    }

    unsafe extern "C" fn no_configurations(
        _: *const PcSamplingConfiguration,
        _: usize,
        _: *mut c_void,
    ) -> Status {
        status::SUCCESS
    }

    unsafe extern "C" fn never_configured(
        _: u32,
        _: *const c_char,
        _: u32,
        _: *mut abi::ClientId,
    ) -> *mut abi::ToolConfigureResult {
        panic!("the SDK is initialized: no tool is configured again")
    }
}
