//! The device thread-trace service, with rocprofiler-sdk's rules and statuses: it takes the
//! dispatch service's parameters but `serialize_all`, not in a context that traces
//! dispatches; while its context is started the agent's shader engines trace whatever the
//! agent runs, and each stop hands every traced shader engine's data to the shader-data
//! callback, with the user data given at configuration. As in SDK 1.0, a trace is readied
//! when the HSA runtime loads, after the tools initialized: a context started while they
//! initialize traces nothing until it starts again (the SDK warns that no trace is
//! present for the agent).

use std::sync::atomic::Ordering;

use rocflow_core::abi::ErasedShaderDataFn;
use rocflow_core::abi::{Handle, Status, UserData, status};
use rocflow_core::scenario::Kernel;
use rocflow_core::sim_trace::{self, ShaderData};
use rocflow_core::thread_trace::{Parameter, parameter};

use crate::sdk::{Context, DeviceTraceService, configure, sdk, slice};
use crate::thread_trace::TraceParameters;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure_device_thread_trace_service(
    context: Handle,
    agent: Handle,
    parameters: *mut Parameter,
    count: usize,
    shader: Option<ErasedShaderDataFn>,
    data: UserData,
) -> Status {
    // SAFETY: the caller passes `count` parameters.
    let parameters = unsafe { slice(parameters, count) };
    configure(context, |contexts, index, _| {
        if !contexts[index].thread_trace.is_empty() {
            return status::CONTEXT_INVALID;
        }
        // The device service traces all the agent runs: it serializes nothing.
        let serializes = |p: &Parameter| p.kind == parameter::SERIALIZE_ALL && p.value != 0;
        if parameters.iter().any(serializes) {
            return status::INVALID_ARGUMENT;
        }
        let p = match TraceParameters::read(parameters, shader) {
            Ok(p) => p,
            Err(status) => return status,
        };
        let services = &mut contexts[index].device_thread_trace;
        services.retain(|s| s.agent.handle != agent.handle);
        services.push(DeviceTraceService {
            agent,
            target_cu: p.target_cu,
            simd_select: p.simd_select,
            shader_engine_mask: p.shader_engine_mask,
            shader: p.shader,
            data,
        });
        status::SUCCESS
    })
}

/// `ctx` started, once the runtime had loaded: its device traces start.
pub fn start(ctx: &Context) {
    let tracing = !ctx.setup.device_thread_trace.is_empty();
    ctx.device_trace.tracing.store(tracing, Ordering::Release);
}

/// A dispatch of the scenario's `k`th kernel started at `start` while `ctx` was started.
pub fn ran(ctx: &Context, kernel: &Kernel, k: usize, start: u64) {
    if !ctx.device_trace.tracing.load(Ordering::Acquire) {
        return;
    }
    let Some(sdk) = sdk() else { return };
    let agent = sdk.device.gpu_handle(kernel.agent as usize);
    let services = &ctx.setup.device_thread_trace;
    if services.iter().any(|s| s.agent.handle == agent.handle) {
        ctx.device_trace.ran.lock().unwrap().push((k, start));
    }
}

/// `ctx` stopped: each of its device traces hands the tool every traced shader engine's
/// data of the window that ends, its dispatches placed from the window's first one on.
pub fn stop(ctx: &Context) {
    if !ctx.device_trace.tracing.swap(false, Ordering::AcqRel) {
        return;
    }
    let services = &ctx.setup.device_thread_trace;
    let Some(sdk) = sdk() else { return };
    let ran = std::mem::take(&mut *ctx.device_trace.ran.lock().unwrap());
    let first = ran.iter().map(|&(_, start)| start).min().unwrap_or(0);
    let kernels = &sdk.scenario.kernels;
    for service in services {
        let Some(gpu) = (0..sdk.scenario.agents.len())
            .find(|&g| sdk.device.gpu_handle(g).handle == service.agent.handle)
        else {
            continue;
        };
        let agent = &sdk.scenario.agents[gpu];
        for se in sim_trace::traced_shader_engines(agent, service.shader_engine_mask) {
            let dispatches = (ran.iter())
                .filter(|&&(k, _)| kernels[k].agent as usize == gpu)
                .map(|&(k, start)| {
                    let data = ShaderData::simulate(
                        &kernels[k],
                        k,
                        agent,
                        gpu as u64 + 1,
                        se,
                        service.target_cu,
                        service.simd_select,
                    );
                    // The simulated shader clock ticks once a nanosecond.
                    ((start - first) as i64, data)
                });
            let mut bytes = ShaderData::window(se, dispatches).encode();
            // SAFETY: the tool's callback; the data lives until it returns.
            unsafe {
                service
                    .shader
                    .call(service.agent, se, &mut bytes, service.data)
            };
        }
    }
}
