//! What the simulated GPU does for a traced dispatch: it asks the thread-trace service's
//! dispatch callback, and hands the traced shader engines' data to its shader-data
//! callback; and the code object a trace points into, in memory as a loaded one is.

use std::sync::OnceLock;

use rocflow_core::abi::{AsyncCorrelationId, KernelDispatchInfo, UserData};
use rocflow_core::scenario::Kernel;
use rocflow_core::sim_trace::{self, ShaderData};
use rocflow_core::thread_trace::control;

use crate::sdk::{Sdk, TraceService};

/// Asks the service whether to trace a dispatch of the scenario's `k`th kernel and, if
/// it says so, hands the tool each traced shader engine's data.
pub fn trace_dispatch(
    sdk: &Sdk,
    service: &TraceService,
    kernel: &Kernel,
    k: usize,
    info: &KernelDispatchInfo,
    correlation: AsyncCorrelationId,
) {
    if service.agent.handle != info.agent_id.handle {
        return;
    }
    let mut user = UserData { value: 0 };
    // SAFETY: the tool's callback with its data, as configured.
    let flag = unsafe {
        (service.dispatch)(
            info.agent_id,
            info.queue_id,
            correlation,
            info.kernel_id,
            info.dispatch_id,
            service.data,
            &mut user,
        )
    };
    if flag != control::START_AND_STOP {
        return;
    }
    let gpu = kernel.agent as usize;
    let agent = &sdk.scenario.agents[gpu];
    for se in sim_trace::traced_shader_engines(agent, service.shader_engine_mask) {
        let data = ShaderData::simulate(
            kernel,
            k,
            agent,
            gpu as u64 + 1,
            se,
            service.target_cu,
            service.simd_select,
        );
        let mut bytes = data.encode();
        // SAFETY: the tool's callback; the data lives until it returns.
        unsafe { service.shader.call(info.agent_id, se, &mut bytes, user) };
    }
}

/// The code object of GPU `gpu`'s kernels, in memory for the process's life, as a loaded
/// code object is: the tool reads it from its `memory://` URI.
pub fn code_object_image(sdk: &Sdk, gpu: usize) -> &'static [u8] {
    static IMAGES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let images = IMAGES.get_or_init(|| {
        let kernels = &sdk.scenario.kernels;
        (0..sdk.scenario.agents.len())
            .map(|g| {
                sim_trace::code_object(
                    (kernels.iter().enumerate()).filter(|(_, k)| k.agent as usize == g),
                )
            })
            .collect()
    });
    &images[gpu]
}
