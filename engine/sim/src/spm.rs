//! SPM (streaming performance monitors, `experimental/spm.h`, rocprofiler-sdk 1.3.0 on)
//! on the simulated GPUs: a dispatch's hardware counters streamed at an interval of shader
//! clock cycles. A dispatch's samples of a counter instance split exactly what dispatch
//! counting would count for it over the intervals of its span (the generator's values are
//! whole numbers, split as whole numbers), so every sample sums to a known truth.
//!
//! The SDK's calls answer as the real ones do: each needs the beta's variable
//! ([`SPM_BETA`]), a configuration takes hardware counters of its agent only, and a context
//! streams SPM alone (no dispatch counting, device counting or PC sampling beside it).
//! The workload streams each dispatch's samples ([`crate::workload`]).

use std::ffi::c_void;

use rocflow_core::abi::{
    CountersCallback, Handle, SPM_BETA, SpmAvailableConfiguration, SpmConfigurationsCallback,
    SpmDispatchCallback, SpmParameters, Status, spm_parameter, status,
};
use rocflow_core::agent_counters::Kind;

use crate::device::Counter;
use crate::sdk::{SPM_CONFIG_HANDLE_BASE, SPM_CONFIGS, SpmConfig, SpmService, installed, sdk};
use crate::sdk::{configure, slice};

/// The shortest and longest interval, in SCLK cycles, the simulated GPUs stream at.
pub const INTERVAL_CYCLES: (u64, u64) = (32, 1 << 20);

/// Whether the beta's variable turns SPM on, read as the SDK reads a boolean.
fn enabled() -> bool {
    crate::api::beta_enabled(SPM_BETA)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_spm_query_agent_configurations(
    agent: Handle,
    callback: Option<SpmConfigurationsCallback>,
    data: *mut c_void,
) -> Status {
    let (Some(sdk), Some(callback)) = (installed(), callback) else {
        return status::INVALID_ARGUMENT;
    };
    if sdk.device.gpu(agent).is_none() {
        return status::AGENT_NOT_FOUND;
    }
    let interval = SpmAvailableConfiguration {
        size: size_of::<SpmAvailableConfiguration>() as u64,
        r#type: spm_parameter::SAMPLE_INTERVAL_SCLK_CYCLES,
        min_interval: INTERVAL_CYCLES.0,
        max_interval: INTERVAL_CYCLES.1,
    };
    let configs = [&raw const interval];
    // SAFETY: the tool's callback, with the configurations alive for the call.
    unsafe { callback(configs.as_ptr(), configs.len(), data) };
    status::SUCCESS
}

/// Whether SPM streams a counter: the hardware ones do.
fn streams(counter: &Counter) -> bool {
    matches!(counter.counter.kind, Kind::Hardware)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_spm_iterate_agent_supported_counters(
    agent: Handle,
    callback: Option<CountersCallback>,
    data: *mut c_void,
) -> Status {
    let none = Some(status::AGENT_ARCH_NOT_SUPPORTED);
    // SAFETY: the caller's arguments, passed on.
    unsafe { crate::api::iterate_counters(agent, callback, data, streams, none) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_spm_create_counter_config(
    agent: Handle,
    counters: *mut Handle,
    count: usize,
    parameters: *mut *mut SpmParameters,
    parameter_count: usize,
    config: *mut Handle,
) -> Status {
    let Some(sdk) = sdk() else {
        return status::ERROR;
    };
    if counters.is_null() || parameters.is_null() && parameter_count > 0 || config.is_null() {
        return status::INVALID_ARGUMENT;
    }
    if !enabled() {
        return status::NOT_IMPLEMENTED;
    }
    let Some(gpu) = sdk.device.gpu(agent) else {
        return status::AGENT_NOT_FOUND;
    };
    let mut indexes = Vec::new();
    // SAFETY: the caller passes `count` counter ids.
    for id in unsafe { slice(counters, count) } {
        let Some(i) = (sdk.device.counters.iter()).position(|c| c.id.handle == id.handle) else {
            return status::COUNTER_NOT_FOUND;
        };
        let counter = &sdk.device.counters[i];
        if counter.gpu != gpu || !streams(counter) {
            return status::METRIC_NOT_VALID_FOR_AGENT;
        }
        indexes.push(i);
    }
    let mut interval_cycles = INTERVAL_CYCLES.0;
    // SAFETY: the caller passes `parameter_count` pointers.
    for &parameter in unsafe { slice(parameters, parameter_count) } {
        // SAFETY: the SDK reads each parameter the caller points at.
        let Some(parameter) = (unsafe { parameter.as_ref() }) else {
            return status::INVALID_ARGUMENT;
        };
        let (min, max) = INTERVAL_CYCLES;
        match parameter.r#type {
            spm_parameter::SAMPLE_INTERVAL_SCLK_CYCLES
                if (min..=max).contains(&parameter.value) =>
            {
                interval_cycles = parameter.value;
            }
            _ => return status::INVALID_ARGUMENT,
        }
    }
    let mut configs = SPM_CONFIGS.lock().unwrap();
    // SAFETY: checked non-null; an existing configuration's counters are added.
    let base = unsafe { *config };
    if base.handle != 0 {
        let existing = (base.handle.checked_sub(SPM_CONFIG_HANDLE_BASE))
            .and_then(|i| configs.get(i as usize).cloned().flatten());
        indexes.extend(existing.into_iter().flat_map(|c| c.counters));
    }
    indexes.sort_unstable();
    indexes.dedup();
    if !sdk.device.fits(&indexes) {
        return status::EXCEEDS_HW_LIMIT;
    }
    configs.push(Some(SpmConfig {
        gpu,
        counters: indexes,
        interval_cycles,
    }));
    // SAFETY: checked non-null.
    unsafe {
        *config = Handle {
            handle: SPM_CONFIG_HANDLE_BASE + configs.len() as u64 - 1,
        }
    };
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_spm_destroy_counter_config(config: Handle) -> Status {
    let mut configs = SPM_CONFIGS.lock().unwrap();
    let slot = (config.handle.checked_sub(SPM_CONFIG_HANDLE_BASE))
        .and_then(|i| configs.get_mut(i as usize))
        .filter(|slot| slot.is_some());
    match slot {
        Some(slot) => {
            *slot = None;
            status::SUCCESS
        }
        None => status::PROFILE_NOT_FOUND,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_spm_configure_buffer_dispatch_service(
    context: Handle,
    buffer: Handle,
    callback: Option<SpmDispatchCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    configure(context, |contexts, index, buffers| {
        if !enabled() {
            return status::NOT_IMPLEMENTED;
        }
        let buffer = crate::sdk::buffer_index(buffer);
        if buffer >= buffers {
            return status::BUFFER_NOT_FOUND;
        }
        let ctx = &mut contexts[index];
        if !ctx.pc_sampling.is_empty() || ctx.counting.is_some() || !ctx.device_counting.is_empty()
        {
            return status::CONTEXT_CONFLICT;
        }
        ctx.spm = Some(SpmService {
            buffer,
            callback,
            data,
        });
        status::SUCCESS
    })
}
