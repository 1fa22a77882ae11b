//! SPM, streaming performance monitors (a beta of rocprofiler-sdk since 1.3.0): the
//! hardware counters of each selected dispatch, streamed into the context's buffer at an
//! interval of shader clock cycles. Its functions are looked up only when a pipeline
//! streams SPM, so an SDK without them runs every other context, and one that asks for SPM
//! hears which release has it.

use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;

use rocflow_core::abi::{
    Handle, RecordHeader, SPM_BETA, SpmAvailableConfiguration, SpmConfigurationsCallback,
    SpmCounterRecord, SpmDispatchCallback, SpmDispatchData, SpmParameters, Status, UserData,
    counter_record, spm_parameter, status,
};
use rocflow_core::contexts::SpmPlan;
use rocflow_core::record::SpmSample;
use rocflow_core::sdk::SPM_SINCE;

use crate::api::BetaSetting;
use crate::api::{CallError, MissingSymbol};
use crate::filter::DispatchFilter;
use crate::gpu::Gpu;
use crate::guard::entry;
use crate::state::Tool;

type CreateConfig = unsafe extern "C" fn(
    Handle,
    *mut Handle,
    usize,
    *mut *mut SpmParameters,
    usize,
    *mut Handle,
) -> Status;
type ConfigureBuffer =
    unsafe extern "C" fn(Handle, Handle, Option<SpmDispatchCallback>, *mut c_void) -> Status;
type QueryConfigurations =
    unsafe extern "C" fn(Handle, Option<SpmConfigurationsCallback>, *mut c_void) -> Status;

/// The SDK's SPM entry points the tool calls.
#[derive(Clone, Copy)]
struct Service {
    create_config: CreateConfig,
    configure_buffer: ConfigureBuffer,
    query_configurations: QueryConfigurations,
}

impl Service {
    fn resolve() -> Result<Service, MissingSymbol> {
        let this = libloading::os::unix::Library::this();
        // SAFETY: each symbol is looked up with the type `experimental/spm.h` declares.
        unsafe {
            Ok(Service {
                create_config: *this
                    .get::<CreateConfig>(b"rocprofiler_spm_create_counter_config\0")
                    .map_err(|_| MissingSymbol("rocprofiler_spm_create_counter_config"))?,
                configure_buffer: *this
                    .get::<ConfigureBuffer>(b"rocprofiler_spm_configure_buffer_dispatch_service\0")
                    .map_err(|_| {
                        MissingSymbol("rocprofiler_spm_configure_buffer_dispatch_service")
                    })?,
                query_configurations: *this
                    .get::<QueryConfigurations>(b"rocprofiler_spm_query_agent_configurations\0")
                    .map_err(|_| MissingSymbol("rocprofiler_spm_query_agent_configurations"))?,
            })
        }
    }
}

/// Why a context cannot stream SPM.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}: SPM needs {SPM_SINCE} or later")]
    Missing(#[from] MissingSymbol),
    /// The SDK answers NOT_IMPLEMENTED while its beta is off.
    #[error(
        "SPM is a beta of rocprofiler-sdk, off with {} (`rocflow run` turns it on unless it is set)",
        BetaSetting(SPM_BETA, .0.as_deref())
    )]
    Beta(Option<String>),
    #[error(transparent)]
    Sdk(#[from] CallError),
    #[error("kernel filter: {0}")]
    KernelFilter(#[from] regex::Error),
    /// The agent samples at no such interval.
    #[error(
        "{gfx} (agent {agent}) streams SPM every {min} to {max} shader clock cycles, not every {asked}; set `interval` in [context.spm] within that"
    )]
    Interval {
        gfx: String,
        agent: u32,
        asked: u64,
        min: u64,
        max: u64,
    },
}

/// The range of sample intervals an agent supports, as the SDK says; `None` where it
/// gives none.
fn interval_range(tool: &Tool, service: &Service, gpu: &Gpu) -> Result<Option<(u64, u64)>, Error> {
    unsafe extern "C" fn collect(
        configs: *const *const SpmAvailableConfiguration,
        count: usize,
        data: *mut c_void,
    ) -> Status {
        entry("spm::interval_range", status::SUCCESS, || {
            // SAFETY: the range `interval_range` passes; the SDK's `count` configurations.
            let range = unsafe { &mut *data.cast::<Option<(u64, u64)>>() };
            let configs = match configs.is_null() {
                true => &[][..],
                // SAFETY: as above.
                false => unsafe { std::slice::from_raw_parts(configs, count) },
            };
            for &config in configs {
                // SAFETY: each pointer the SDK passes is valid for the call.
                let Some(config) = (unsafe { config.as_ref() }) else {
                    continue;
                };
                if config.r#type == spm_parameter::SAMPLE_INTERVAL_SCLK_CYCLES {
                    *range = Some((config.min_interval, config.max_interval));
                }
            }
            status::SUCCESS
        })
    }
    let mut range: Option<(u64, u64)> = None;
    // SAFETY: the callback has the SDK's type and writes `range`, alive for the call.
    let status = unsafe {
        (service.query_configurations)(gpu.handle, Some(collect), (&raw mut range).cast())
    };
    let what = format!("querying the SPM configurations of {}", gpu.gfx);
    tool.api.check(&what, status)?;
    Ok(range)
}

/// What the dispatch callback decides with.
struct Streaming {
    /// Agent handle → its SPM configuration.
    configs: HashMap<u64, Handle>,
    filter: &'static DispatchFilter,
}

/// The beta is off: the error says how its variable is set.
fn beta_off() -> Error {
    Error::Beta(std::env::var(SPM_BETA).ok())
}

/// Configures SPM in `context` on each of `gpus` that has the plan's counters, into
/// `buffer`. `counters` gives each GPU's counter ids by agent handle (described to the
/// runner by the caller).
pub fn configure(
    tool: &Tool,
    context: Handle,
    buffer: Handle,
    plan: &SpmPlan,
    counters: HashMap<u64, Vec<Handle>>,
    gpus: &[&Gpu],
) -> Result<(), Error> {
    let service = Service::resolve()?;
    let mut configs = HashMap::new();
    for gpu in gpus {
        let Some(ids) = counters.get(&gpu.handle.handle) else {
            continue;
        };
        if let Some((min, max)) = interval_range(tool, &service, gpu)?
            && !(min..=max).contains(&plan.interval_cycles)
        {
            return Err(Error::Interval {
                gfx: gpu.gfx.clone(),
                agent: gpu.agent,
                asked: plan.interval_cycles,
                min,
                max,
            });
        }
        let mut ids = ids.clone();
        let mut interval = SpmParameters {
            size: size_of::<SpmParameters>() as u64,
            r#type: spm_parameter::SAMPLE_INTERVAL_SCLK_CYCLES,
            value: plan.interval_cycles,
        };
        let mut parameters = [&raw mut interval];
        let mut config = Handle { handle: 0 };
        // SAFETY: the ids and parameters outlive the call; a writable handle, zero so
        // that no configuration is copied.
        let status = unsafe {
            (service.create_config)(
                gpu.handle,
                ids.as_mut_ptr(),
                ids.len(),
                parameters.as_mut_ptr(),
                parameters.len(),
                &mut config,
            )
        };
        if status == status::NOT_IMPLEMENTED {
            return Err(beta_off());
        }
        let what = format!("creating the SPM configuration for {}", gpu.gfx);
        tool.api.check(&what, status)?;
        configs.insert(gpu.handle.handle, config);
    }
    let filter =
        DispatchFilter::leak(&plan.kernel_include, &plan.kernel_exclude, &plan.iterations)?;
    let streaming: &'static Streaming = Box::leak(Box::new(Streaming { configs, filter }));
    // SAFETY: the callback matches the SDK's type; its data lives for the process.
    let status = unsafe {
        (service.configure_buffer)(
            context,
            buffer,
            Some(on_dispatch),
            std::ptr::from_ref(streaming).cast_mut().cast(),
        )
    };
    if status == status::NOT_IMPLEMENTED {
        return Err(beta_off());
    }
    Ok(tool.api.check("streaming SPM", status)?)
}

/// `rocprofiler_spm_dispatch_counting_service_cb_t`: streams a dispatch when its kernel
/// passes the filters and the dispatch is in the iteration ranges.
unsafe extern "C" fn on_dispatch(
    dispatch: *const SpmDispatchData,
    config: *mut Handle,
    _user_data: *mut UserData,
    data: *mut c_void,
) {
    entry("spm::on_dispatch", (), || {
        // SAFETY: `data` is the leaked `Streaming` given at configuration; the SDK passes
        // its dispatch data, and a writable config or null.
        let (streaming, dispatch) = unsafe { (&*data.cast::<Streaming>(), dispatch.as_ref()) };
        let Some(info) = dispatch.map(|d| &d.dispatch_info) else {
            return;
        };
        let Some(&chosen) = streaming.configs.get(&info.agent_id.handle) else {
            return;
        };
        if streaming.filter.select(info.kernel_id) && !config.is_null() {
            // SAFETY: checked non-null.
            unsafe { *config = chosen };
        }
    });
}

/// The dispatches whose samples may still come, newest last: a header is followed by its
/// samples, though another thread's may come between where the SDK stages records.
#[derive(Default)]
pub struct Dispatches(VecDeque<(u64, u64, u64)>);

/// How many dispatches' headers are kept for their samples.
const KEPT_HEADERS: usize = 256;

impl Dispatches {
    /// The kernel and correlation id of a dispatch whose header came.
    fn of(&self, dispatch_id: u64) -> (u64, u64) {
        (self.0.iter().rev())
            .find(|d| d.0 == dispatch_id)
            .map_or((0, 0), |d| (d.1, d.2))
    }
}

/// Converts a record of an SPM context's buffer: a dispatch's header is kept, a sample
/// becomes an [`SpmSample`] of the instance's XCC, shader engine and instance.
///
/// # Safety
/// `header.payload` points at the record its category and kind say.
pub unsafe fn convert(
    tool: &Tool,
    pid: u32,
    header: &RecordHeader,
    dispatches: &mut Dispatches,
    out: impl FnOnce(SpmSample),
) {
    match header.kind {
        counter_record::DISPATCH_HEADER => {
            // SAFETY: the caller's contract.
            let r = unsafe { &*header.payload.cast::<SpmDispatchData>() };
            if dispatches.0.len() == KEPT_HEADERS {
                dispatches.0.pop_front();
            }
            let info = &r.dispatch_info;
            let header = (info.dispatch_id, info.kernel_id, r.correlation_id.internal);
            dispatches.0.push_back(header);
        }
        counter_record::VALUE => {
            // SAFETY: the caller's contract.
            let r = unsafe { &*header.payload.cast::<SpmCounterRecord>() };
            let (kernel_id, correlation_id) = dispatches.of(r.dispatch_id);
            let (counter, at) = crate::gpu::coordinates(tool, r.id);
            // SPM streams per XCC, shader engine and instance; the other dimensions are 0.
            let [xcc, _aid, shader_engine, _agent, _array, _wgp, instance] = at;
            out(SpmSample {
                pid,
                agent: tool.agent_index(r.agent_id),
                dispatch_id: r.dispatch_id,
                kernel_id,
                correlation_id,
                timestamp_ns: r.timestamp,
                counter_id: counter.handle as u32,
                xcc,
                shader_engine,
                instance,
                value: r.value,
            });
        }
        _ => {}
    }
}
