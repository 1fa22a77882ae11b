//! Initialize: the Plan's contexts become SDK contexts, buffers and services. A context the
//! SDK refuses is reported and left out; the others still collect.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use rocflow_core::abi::{
    self, AgentV0, CallbackTracingRecord, CodeObjectLoadData, DispatchCountingServiceData, Handle,
    KernelSymbolRegisterData, PcSamplingConfiguration, UserData, callback,
};
use rocflow_core::contexts::{
    AgentSelector, ContextPlan, CounterPlan, PcSamplingPlan, Replay, SampleAt,
};
use rocflow_core::query::{self, text};
use rocflow_core::record::{Agent, CodeObject, CounterInfo, KernelSymbol, Meta, RecordKind};
use rocflow_core::sdk::{
    AgentType, COUNTER_DIMENSIONS, PC_SAMPLING_BETA, PcSamplingMethod, PcSamplingUnit,
};
use rocflow_core::smi::PciLocation;

use crate::api::{BetaSetting, CallError};
use crate::context::{self, Context};
use crate::filter::DispatchFilter;
use crate::gpu::{Gpu, supported_counters};
use crate::guard::{entry, locked};
use crate::records::{BufferState, on_buffer};
use crate::state::{Tool, tool};
use crate::stream;
use crate::warning::warn;

/// Why the tool, or one of its contexts, cannot collect.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Sdk(#[from] CallError),
    #[error(transparent)]
    DeviceCounting(#[from] crate::device_counting::Error),
    #[error("kernel filter: {0}")]
    KernelFilter(#[from] regex::Error),
    #[error(transparent)]
    ThreadTrace(#[from] crate::thread_trace::TraceError),
    #[error(transparent)]
    KernelReplay(#[from] crate::kernel_replay::ReplayError),
    #[error(transparent)]
    Spm(#[from] crate::spm::Error),
    /// The SDK's PC sampling beta is off; `beta` is what its variable is set to.
    #[error(
        "PC sampling on {gfx} is a beta of rocprofiler-sdk, off with {} (`rocflow run` turns it on unless it is set)",
        BetaSetting(PC_SAMPLING_BETA, .beta.as_deref())
    )]
    PcBeta { gfx: String, beta: Option<String> },
    #[error(
        "PC sampling on {gfx} needs the GPU driver's {KFD}, which this process cannot open: {source}"
    )]
    NoDriver { gfx: String, source: std::io::Error },
    #[error(
        "PC sampling {method:?} in {unit:?} is not supported on {gfx} (agent {agent}); it supports: {}",
        Supported(.supported)
    )]
    PcUnsupported {
        method: PcSamplingMethod,
        unit: PcSamplingUnit,
        gfx: String,
        agent: u32,
        supported: Vec<PcSamplingConfiguration>,
    },
    #[error("PC sampling interval {interval} is outside {min}..={max} on {gfx} (agent {agent})")]
    PcInterval {
        interval: u64,
        min: usize,
        max: usize,
        gfx: String,
        agent: u32,
    },
}

/// The PC sampling configurations an agent supports, as [`SetupError::PcUnsupported`]
/// words them.
struct Supported<'a>(&'a [PcSamplingConfiguration]);

impl std::fmt::Display for Supported<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, c) in self.0.iter().enumerate() {
            let apart = if i == 0 { "" } else { "; " };
            write!(
                f,
                "{apart}method {} unit {} interval {}..={}",
                c.method, c.unit, c.min_interval, c.max_interval
            )?;
        }
        Ok(())
    }
}

pub fn run(tool: &'static Tool) -> Result<(), SetupError> {
    let api = &tool.api;
    let agents = query_agents(tool)?;
    let mut gpus = Vec::new();
    let mut handles = Vec::new();
    let mut items = Vec::new();
    for (index, a) in agents.iter().enumerate() {
        let index = index as u32;
        let agent_type = if a.r#type == 2 {
            AgentType::Gpu
        } else {
            AgentType::Cpu
        };
        handles.push(a.id.handle);
        if agent_type == AgentType::Gpu {
            gpus.push(Gpu {
                handle: a.id,
                index: gpus.len() as u32,
                agent: index,
                gfx: text(a.name),
                location: PciLocation::of_agent(a.domain, a.location_id),
            });
        }
        items.push(Meta::Agent(Agent {
            index,
            handle: a.id.handle,
            agent_type,
            node_id: a.node_id,
            logical_node_id: a.logical_node_id.max(0) as u32,
            name: text(a.name),
            product_name: text(a.product_name),
            cu_count: a.cu_count,
            simd_count: a.simd_count,
            xcc_count: a.num_xcc,
            wave_front_size: a.wave_front_size,
            max_waves_per_simd: a.max_waves_per_simd,
            lds_bytes_per_cu: a.lds_size_in_kb * 1024,
            max_engine_clk_mhz: a.max_engine_clk_fcompute,
        }));
    }
    let _ = tool.agents.set(handles);
    stream::send_meta(items);

    // One context that is never stopped: kernel names and ROCTx profiler control must
    // reach the tool even while the Plan's contexts are paused.
    let mut control = Handle { handle: 0 };
    // SAFETY: a writable handle.
    api.check("creating the control context", unsafe {
        (api.create_context)(&mut control)
    })?;
    if tool.plan.contexts.iter().any(|c| c.code_objects) {
        // SAFETY: the callback has the SDK's signature.
        let status = unsafe {
            (api.configure_callback_tracing)(
                control,
                callback::CODE_OBJECT,
                std::ptr::null(),
                0,
                Some(on_code_object),
                std::ptr::null_mut(),
            )
        };
        api.check("tracing code objects", status)?;
    }
    let at_markers = (tool.plan.contexts.iter())
        .any(|c| (c.device_counting.as_ref()).is_some_and(|d| d.at == SampleAt::Markers));
    if at_markers {
        let ranges = [callback::ROCTX_THREAD_RANGE];
        // SAFETY: `ranges` outlives the call; the callback has the SDK's signature.
        let status = unsafe {
            (api.configure_callback_tracing)(
                control,
                callback::MARKER_CORE_RANGE_API,
                ranges.as_ptr(),
                ranges.len(),
                Some(crate::device_counting::on_range),
                std::ptr::null_mut(),
            )
        };
        api.check("tracing ROCTx ranges to sample devices at", status)?;
    }
    // SAFETY: as above.
    let status = unsafe {
        (api.configure_callback_tracing)(
            control,
            callback::MARKER_CONTROL_API,
            std::ptr::null(),
            0,
            Some(crate::control::on_marker_control),
            std::ptr::null_mut(),
        )
    };
    api.check("tracing ROCTx profiler control", status)?;
    // Graph nodes and streams are asked for where a context traces dispatches or copies.
    let requesting =
        (tool.plan.contexts.iter()).any(|c| !crate::correlation_request::kinds(c).is_empty());
    let graphs = requesting
        && crate::graph_node::subscribe(tool, control).unwrap_or_else(|e| {
            warn(&format!(
                "dispatches and copies are given no HIP graph node: {e}"
            ));
            false
        });
    let streams = requesting
        && crate::hip_stream::subscribe(tool, control)
            .map_err(|e| {
                warn(&format!(
                    "dispatches and copies are given no HIP stream: {e}"
                ))
            })
            .is_ok();
    let ids = Requests { graphs, streams };
    // SAFETY: a context the tool created.
    api.check("starting the control context", unsafe {
        (api.start_context)(control)
    })?;

    let mut contexts = Vec::new();
    let mut dimensions = HashMap::new();
    for plan in &tool.plan.contexts {
        match context(tool, plan, &gpus, &mut dimensions, ids) {
            Ok(c) => contexts.push(c),
            Err(e) => warn(&format!(
                "context `{}`: {e}; it collects nothing",
                plan.name
            )),
        }
    }
    let _ = tool.counter_dimensions.set(dimensions);
    context::set(contexts);
    Ok(())
}

fn query_agents(tool: &Tool) -> Result<Vec<AgentV0>, CallError> {
    let agents = tool.api.queries().agents();
    agents.map_err(|status| tool.api.failed("querying agents", status))
}

/// What the contexts learn of each dispatch and copy they trace, through the external
/// correlation id request (see [`crate::correlation_request`]).
#[derive(Clone, Copy)]
struct Requests {
    /// The HIP graph node it ran as.
    graphs: bool,
    /// The HIP stream it went on.
    streams: bool,
}

/// Creates one context with its buffer and services; it asks for the graph node and the
/// stream of each dispatch and copy it traces, as `ids` says.
fn context(
    tool: &Tool,
    plan: &ContextPlan,
    gpus: &[Gpu],
    dimensions: &mut HashMap<u64, Vec<u64>>,
    ids: Requests,
) -> Result<Context, SetupError> {
    let api = &tool.api;
    let mut handle = Handle { handle: 0 };
    // SAFETY: a writable handle.
    api.check("creating the context", unsafe {
        (api.create_context)(&mut handle)
    })?;
    let kind = plan
        .record_kinds()
        .next()
        .unwrap_or(RecordKind::KernelDispatch);
    let state = BufferState::new(kind, plan.spm.is_some());
    let state: &'static BufferState = Box::leak(Box::new(state));
    let mut buffer = Handle { handle: 0 };
    // SAFETY: the callback matches the SDK's type; its data lives for the process.
    let status = unsafe {
        (api.create_buffer)(
            handle,
            plan.buffer.size_bytes as usize,
            plan.buffer.watermark_bytes as usize,
            plan.buffer.policy as c_int,
            Some(on_buffer),
            (state as *const BufferState).cast_mut().cast(),
            &mut buffer,
        )
    };
    api.check("creating the buffer", status)?;
    for t in &plan.tracing {
        let operations = t.operations.as_deref().unwrap_or_default();
        // SAFETY: `operations` outlives the call.
        let status = unsafe {
            (api.configure_buffer_tracing)(
                handle,
                t.domain.sdk_value(),
                operations.as_ptr(),
                operations.len(),
                buffer,
            )
        };
        api.check(&format!("tracing {}", t.domain.name()), status)?;
        crate::messages::trace(tool, handle, t);
    }
    if ids.graphs || ids.streams {
        let streams = ids.streams.then_some(&state.streams);
        streams.inspect(|s| s.register());
        crate::correlation_request::request(tool, handle, plan, streams)?;
    }
    let selected = |own: &[AgentSelector]| -> Vec<&Gpu> {
        let selectors = plan.service_agents(own);
        gpus.iter()
            .filter(|g| AgentSelector::any_selects_gpu(selectors, g.index, &g.gfx))
            .collect()
    };
    if let Some(counters) = &plan.counters {
        let profiled = selected(plan.counter_agents());
        if profiled.is_empty() {
            none_selected(&plan.name, gpus, "no counters are collected");
        }
        count(tool, handle, buffer, counters, &profiled, dimensions)?;
    } else if plan.serialize {
        serialize(tool, handle, buffer)?;
    }
    if let Some(pc) = &plan.pc_sampling {
        sample(tool, handle, buffer, pc, &selected(&pc.agents))?;
    }
    if let Some(device) = &plan.device_counting {
        let sampled = selected(plan.device_counting_agents());
        if sampled.is_empty() {
            none_selected(&plan.name, gpus, "no device counters are sampled");
        }
        let names: Vec<&String> = device.counters.counted().collect();
        let configs = counter_configs(tool, &names, &sampled, dimensions)?;
        crate::device_counting::configure(tool, handle, &plan.name, device, &sampled, configs)?;
    }
    if let Some(trace) = &plan.thread_trace {
        crate::thread_trace::configure(tool, handle, trace, &selected(&trace.agents))?;
    }
    if let Some(spm) = &plan.spm {
        let streamed = selected(&spm.agents);
        if streamed.is_empty() {
            none_selected(&plan.name, gpus, "no SPM counters are streamed");
        }
        let names: Vec<&String> = spm.counters.iter().collect();
        let counters = chosen_counters(tool, &names, &streamed, dimensions)?;
        crate::spm::configure(tool, handle, buffer, spm, counters, &streamed)?;
    }
    Ok(Context {
        name: plan.name.clone(),
        handle,
        buffer,
        state,
        start: plan.start,
        flush_interval: std::time::Duration::from_nanos(plan.buffer.flush_interval_ns),
    })
}

/// Says why a context counts on no GPU: counters for another architecture
/// (counters-rdna on an Instinct node) would otherwise give nothing, and no word why.
fn none_selected(context: &str, gpus: &[Gpu], outcome: &str) {
    let here: Vec<&str> = gpus.iter().map(|g| g.gfx.as_str()).collect();
    let why = if here.is_empty() {
        "the SDK reports no GPU on this node".to_owned()
    } else {
        format!(
            "no GPU of this node ({}) is among its counters' agents",
            here.join(", ")
        )
    };
    warn(&format!("context `{context}`: {why}; {outcome}"));
}

/// What the per-dispatch counting callback decides with.
struct Counting {
    /// Agent handle → its counter configuration of each pass this run counts: the one
    /// of `ROCFLOW_PASS`, or under kernel replay every pass with counters on the agent.
    configs: HashMap<u64, Vec<Handle>>,
    filter: &'static DispatchFilter,
}

impl crate::kernel_replay::Passes for Counting {
    /// A pass per configuration of the dispatch's agent.
    fn passes(&self, info: &rocflow_core::abi::KernelDispatchInfo) -> (Option<bool>, usize) {
        let Some(configs) = self.configs.get(&info.agent_id.handle) else {
            return (None, 1);
        };
        let taken = self.filter.select(info.kernel_id);
        (Some(taken), if taken { configs.len().max(1) } else { 1 })
    }
}

fn count(
    tool: &Tool,
    context: Handle,
    buffer: Handle,
    plan: &CounterPlan,
    gpus: &[&Gpu],
    dimensions: &mut HashMap<u64, Vec<u64>>,
) -> Result<(), SetupError> {
    let api = &tool.api;
    let passes: Vec<usize> = match plan.replay {
        Replay::Application => vec![tool.pass],
        Replay::Kernel => (0..plan.pass_count()).collect(),
    };
    let mut configs: HashMap<u64, Vec<Handle>> = HashMap::new();
    for pass in passes {
        for (agent, config) in counter_configs(tool, &plan.pass(pass), gpus, dimensions)? {
            configs.entry(agent).or_default().push(config);
        }
    }
    let filter =
        DispatchFilter::leak(&plan.kernel_include, &plan.kernel_exclude, &plan.iterations)?;
    let counting: &'static Counting = Box::leak(Box::new(Counting { configs, filter }));
    if plan.replay == Replay::Kernel {
        crate::kernel_replay::subscribe(tool, context, counting)?;
    }
    // SAFETY: the callback matches the SDK's type; its data lives for the process.
    let status = unsafe {
        (api.configure_buffer_dispatch_counting)(
            context,
            buffer,
            Some(on_dispatch),
            (counting as *const Counting).cast_mut().cast(),
        )
    };
    Ok(api.check("counting dispatches", status)?)
}

/// Each GPU's counter configuration of the counters `names` it has (by agent handle).
fn counter_configs(
    tool: &Tool,
    names: &[&String],
    gpus: &[&Gpu],
    dimensions: &mut HashMap<u64, Vec<u64>>,
) -> Result<HashMap<u64, Handle>, SetupError> {
    let api = &tool.api;
    let mut configs = HashMap::new();
    for (agent, mut chosen) in chosen_counters(tool, names, gpus, dimensions)? {
        let gpu = gpus
            .iter()
            .find(|g| g.handle.handle == agent)
            .expect("chosen on it");
        let mut config = Handle { handle: 0 };
        // SAFETY: `chosen` outlives the call; a writable handle.
        let status = unsafe {
            (api.create_counter_config)(gpu.handle, chosen.as_mut_ptr(), chosen.len(), &mut config)
        };
        api.check(
            &format!("creating the counter configuration for {}", gpu.gfx),
            status,
        )?;
        configs.insert(agent, config);
    }
    Ok(configs)
}

/// Each GPU's ids of the counters `names` it has (by agent handle, none where it has
/// none), the counters described to the runner; a counter a GPU lacks is warned of.
/// Counters the pipeline derives itself are computed by the runner from the collected
/// ones.
fn chosen_counters(
    tool: &Tool,
    names: &[&String],
    gpus: &[&Gpu],
    dimensions: &mut HashMap<u64, Vec<u64>>,
) -> Result<HashMap<u64, Vec<Handle>>, SetupError> {
    let mut chosen_on = HashMap::new();
    let mut items = Vec::new();
    for gpu in gpus {
        let available = supported_counters(tool, gpu.handle)?;
        let mut chosen = Vec::new();
        for &name in names {
            match available.iter().find(|c| c.name == *name) {
                Some(counter) => {
                    let dims = counter_dimensions(tool, counter.id)?;
                    dimensions.insert(counter.id.handle, dims.iter().map(|d| d.id).collect());
                    items.push(Meta::Counter(CounterInfo {
                        id: counter.id.handle as u32,
                        agent: gpu.agent,
                        name: counter.name.clone(),
                        description: counter.description.clone(),
                        dimensions: dims.into_iter().map(|d| (d.name, d.size as u32)).collect(),
                    }));
                    chosen.push(counter.id);
                }
                None => warn(&format!(
                    "counter `{name}` is not available on {} (agent {})",
                    gpu.gfx, gpu.agent
                )),
            }
        }
        if !chosen.is_empty() {
            chosen_on.insert(gpu.handle.handle, chosen);
        }
    }
    stream::send_meta(items);
    Ok(chosen_on)
}

/// Serializes the context's kernel dispatches without counting them. rocprofiler-sdk has
/// no switch for serialization alone: it runs one dispatch at a time on each agent while a
/// dispatch-counting service is started, whether or not its callback picks counters, so
/// the context gets one whose callback never does.
fn serialize(tool: &Tool, context: Handle, buffer: Handle) -> Result<(), CallError> {
    // SAFETY: the callback matches the SDK's type and uses no data.
    let status = unsafe {
        (tool.api.configure_buffer_dispatch_counting)(
            context,
            buffer,
            Some(count_nothing),
            std::ptr::null_mut(),
        )
    };
    tool.api.check("serializing kernel dispatches", status)
}

/// `rocprofiler_dispatch_counting_service_cb_t` that leaves every dispatch uncounted. Empty,
/// so it cannot panic: the one callback that needs no guard.
unsafe extern "C" fn count_nothing(
    _dispatch: DispatchCountingServiceData,
    _config: *mut Handle,
    _user_data: *mut UserData,
    _data: *mut c_void,
) {
}

/// A counter's dimensions, those rocflow's records have a place for.
fn counter_dimensions(tool: &Tool, counter: Handle) -> Result<Vec<query::Dimension>, CallError> {
    let mut dims = (tool.api.queries().dimensions(counter))
        .map_err(|status| tool.api.failed("listing a counter's dimensions", status))?;
    dims.retain(|d| (d.id as usize) < COUNTER_DIMENSIONS.len());
    Ok(dims)
}

/// `rocprofiler_dispatch_counting_service_cb_t`: counts a dispatch when its kernel passes
/// the filters and the dispatch is in the iteration ranges.
unsafe extern "C" fn on_dispatch(
    dispatch: DispatchCountingServiceData,
    config: *mut Handle,
    _user_data: *mut UserData,
    data: *mut c_void,
) {
    entry("on_dispatch", (), || {
        // SAFETY: `data` is the leaked `Counting` given at configuration; the SDK passes
        // a writable config or null.
        unsafe { choose(&*data.cast::<Counting>(), &dispatch, config) }
    });
}

/// Points `config` at the dispatch's counters, if it is to be counted.
///
/// # Safety
/// `config` is null or writable.
unsafe fn choose(counting: &Counting, dispatch: &DispatchCountingServiceData, config: *mut Handle) {
    let info = &dispatch.dispatch_info;
    let Some(configs) = counting.configs.get(&info.agent_id.handle) else {
        return;
    };
    // A replayed dispatch was taken or left when the SDK asked for its passes.
    let taken = crate::kernel_replay::decided(info.dispatch_id)
        .unwrap_or_else(|| counting.filter.select(info.kernel_id));
    if !taken || config.is_null() {
        return;
    }
    let pass = crate::kernel_replay::counting_pass(info, configs.len());
    if let Some(&chosen) = configs.get(pass) {
        // SAFETY: checked non-null; the SDK passes a writable config.
        unsafe { *config = chosen };
    }
}

/// The GPU driver's device, through which the SDK samples PCs.
const KFD: &str = "/dev/kfd";

fn sample(
    tool: &Tool,
    context: Handle,
    buffer: Handle,
    plan: &PcSamplingPlan,
    gpus: &[&Gpu],
) -> Result<(), SetupError> {
    let api = &tool.api;
    let (method, unit) = (plan.method as i32, plan.unit as i32);
    for gpu in gpus {
        let (configs, status) = match api.queries().pc_sampling(gpu.handle) {
            Ok(configs) => (configs, abi::status::SUCCESS),
            Err(status) => (Vec::new(), status),
        };
        if status == abi::status::NOT_IMPLEMENTED {
            // The SDK's own text ("not implemented") would send users looking for another
            // SDK; what it means is that AMD's beta is off.
            return Err(SetupError::PcBeta {
                gfx: gpu.gfx.clone(),
                beta: std::env::var(PC_SAMPLING_BETA).ok(),
            });
        }
        if status == abi::status::ERROR {
            // The SDK samples through the GPU driver, and only says why it cannot in its
            // log; the usual reason is one the tool can name.
            let kfd = std::fs::OpenOptions::new().read(true).write(true).open(KFD);
            if let Err(source) = kfd {
                return Err(SetupError::NoDriver {
                    gfx: gpu.gfx.clone(),
                    source,
                });
            }
        }
        api.check(&format!("querying PC sampling on {}", gpu.gfx), status)?;
        let Some(config) = configs
            .iter()
            .find(|c| c.method == method && c.unit == unit)
        else {
            return Err(SetupError::PcUnsupported {
                method: plan.method,
                unit: plan.unit,
                gfx: gpu.gfx.clone(),
                agent: gpu.agent,
                supported: configs,
            });
        };
        if !(config.min_interval as u64..=config.max_interval as u64).contains(&plan.interval) {
            return Err(SetupError::PcInterval {
                interval: plan.interval,
                min: config.min_interval,
                max: config.max_interval,
                gfx: gpu.gfx.clone(),
                agent: gpu.agent,
            });
        }
        // SAFETY: handles the tool created or the SDK gave.
        let status = unsafe {
            (api.configure_pc_sampling)(context, gpu.handle, method, unit, plan.interval, buffer, 0)
        };
        api.check(&format!("PC sampling on {}", gpu.gfx), status)?;
    }
    Ok(())
}

/// `rocprofiler_callback_tracing_cb_t` for code objects: loads and kernel symbols become
/// metadata (kernel names, register counts, which agent a code object is on).
unsafe extern "C" fn on_code_object(
    record: CallbackTracingRecord,
    _user: *mut UserData,
    _data: *mut c_void,
) {
    entry("on_code_object", (), || {
        // SAFETY: the SDK's record for the call.
        unsafe { describe_code_object(&record) }
    });
}

/// Sends what a code-object callback says.
///
/// # Safety
/// `record` is a code-object callback's.
unsafe fn describe_code_object(record: &CallbackTracingRecord) {
    let Some(tool) = tool() else { return };
    if record.phase != callback::PHASE_LOAD || record.payload.is_null() {
        return;
    }
    let item = match record.operation {
        callback::CODE_OBJECT_LOAD => {
            // SAFETY: the payload of a code-object load.
            let d = unsafe { &*record.payload.cast::<CodeObjectLoadData>() };
            let agent = tool.agent_index(d.agent_id);
            locked(tool.code_objects.write()).insert(d.code_object_id, agent);
            crate::thread_trace::code_object_loaded(d, agent);
            Meta::CodeObject(CodeObject {
                id: d.code_object_id,
                agent,
                uri: text(d.uri),
                load_base: d.load_base,
                load_size: d.load_size,
            })
        }
        callback::CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER => {
            // SAFETY: the payload of a kernel symbol registration.
            let d = unsafe { &*record.payload.cast::<KernelSymbolRegisterData>() };
            let name = text(d.kernel_name);
            locked(tool.kernels.write())
                .insert(d.kernel_id, (d.arch_vgpr_count, d.sgpr_count, name.clone()));
            Meta::KernelSymbol(KernelSymbol {
                kernel_id: d.kernel_id,
                code_object_id: d.code_object_id,
                name,
                lds_bytes: d.group_segment_size,
                scratch_bytes: d.private_segment_size,
                arch_vgpr_count: d.arch_vgpr_count,
                sgpr_count: d.sgpr_count,
                kernarg_bytes: d.kernarg_segment_size,
            })
        }
        _ => return,
    };
    stream::send_meta(vec![item]);
}
