//! Device counting: the counters of whole GPUs, read by a thread of the tool at each
//! context's interval while the context is started, without intercepting a dispatch.
//! Setup configures the SDK's service per GPU (its callback, called as the context starts,
//! picks the GPU's counter configuration); the sampler reads every configured context and
//! sends each read's values as records, with the device metrics AMD-SMI gives of the same
//! GPUs at the same moment. The sampler stops, waiting for a read in progress, before the
//! tool's last flush, so no read reaches an SDK that finalized.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use rocflow_core::abi::{
    CallbackTracingRecord, CounterRecord, DeviceCountingCallback, DeviceCountingSetConfig, Handle,
    Status, UserData, counter_flag, status,
};
use rocflow_core::contexts::{DeviceCountingPlan, SampleAt};
use rocflow_core::record::{CounterInfo, DeviceCounterSample, Meta};
use rocflow_core::smi::{Metric, Smi};
use rocflow_core::wire::RecordsFrame;

use crate::api::{CallError, MissingSymbol};
use crate::gpu::Gpu;
use crate::guard::{entry, locked};
use crate::state::Tool;
use crate::stream;
use crate::warning::warn;

type Configure = unsafe extern "C" fn(
    Handle,
    Handle,
    Handle,
    Option<DeviceCountingCallback>,
    *mut c_void,
) -> Status;
type Sample = unsafe extern "C" fn(Handle, UserData, i32, *mut CounterRecord, *mut usize) -> Status;

/// The service's two entry points, looked up only when a pipeline samples devices: an SDK
/// without them still runs every other context.
#[derive(Clone, Copy)]
struct Service {
    configure: Configure,
    sample: Sample,
}

impl Service {
    fn resolve() -> Result<Service, MissingSymbol> {
        let this = libloading::os::unix::Library::this();
        // SAFETY: each symbol is looked up with the type the SDK's header declares.
        unsafe {
            Ok(Service {
                configure: *this
                    .get::<Configure>(b"rocprofiler_configure_device_counting_service\0")
                    .map_err(|_| MissingSymbol("rocprofiler_configure_device_counting_service"))?,
                sample: *this
                    .get::<Sample>(b"rocprofiler_sample_device_counting_service\0")
                    .map_err(|_| MissingSymbol("rocprofiler_sample_device_counting_service"))?,
            })
        }
    }
}

/// A context whose devices are sampled.
struct Sampled {
    name: String,
    context: Handle,
    /// The agents (rocflow's indexes) whose counters are read.
    agents: Vec<u32>,
    /// The agents whose AMD-SMI metrics are read, each with its GPU's index in AMD-SMI.
    metered: Vec<(u32, usize)>,
    metrics: Vec<Metric>,
    interval: Duration,
    /// Also read when a ROCTx range is pushed or popped.
    at_markers: bool,
    /// Room for one read's values (the SDK says how many when there is too little).
    values: Mutex<Vec<CounterRecord>>,
    /// A read failed: the context is read no more.
    failed: AtomicBool,
}

struct Sampler {
    service: Service,
    contexts: Vec<Sampled>,
    /// Set when the process finalizes: no read starts after it.
    stopped: AtomicBool,
    /// Held for the whole of a round of reads (the SDK refuses a read while another is
    /// under way).
    round: Mutex<()>,
}

/// AMD-SMI, opened once per process as the first context that reads metrics is
/// configured (in the SDK's initialize, before the application's first kernel), or why it
/// could not be.
static SMI: OnceLock<Result<Mutex<Smi>, String>> = OnceLock::new();

/// The frame a read's samples are sent in.
type Frame = RecordsFrame<DeviceCounterSample, rocflow_core::ring::FrameBuffer>;

/// The contexts setup configured, until the sampler takes them.
static CONFIGURED: Mutex<Option<(Service, Vec<Sampled>)>> = Mutex::new(None);
/// The running sampler; leaked, so a reference once stored stays valid.
static SAMPLER: AtomicPtr<Sampler> = AtomicPtr::new(std::ptr::null_mut());

/// The running sampler of this process, if any.
fn sampler() -> Option<&'static Sampler> {
    // SAFETY: samplers are leaked, never freed, so a pointer once stored stays valid.
    unsafe { SAMPLER.load(Ordering::Acquire).as_ref() }
}

/// Why a context's devices cannot be sampled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Missing(#[from] MissingSymbol),
    #[error(transparent)]
    Sdk(#[from] CallError),
    /// The SDK could not lock the GPU's counters for this process.
    #[error(
        "sampling the counters of {gfx} (agent {agent}) needs the CAP_PERFMON capability, which this process lacks (rocprofiler-sdk: PERMISSION_DENIED); run it as root, grant the capability (`sudo setcap cap_perfmon+ep APP`, or `--cap-add PERFMON` for a container), or count per dispatch with [context.counters] instead"
    )]
    Perfmon { gfx: String, agent: u32 },
}

/// The GPUs of `gpus` whose metrics AMD-SMI reads, each with its index there; each GPU it
/// cannot read is warned of once, with why.
fn metered(context: &str, gpus: &[&Gpu]) -> Vec<(u32, usize)> {
    let smi = SMI.get_or_init(|| Smi::open().map(Mutex::new).map_err(|e| e.to_string()));
    let smi = match smi {
        Ok(smi) => locked(smi.lock()),
        Err(why) => {
            warn(&format!(
                "context `{context}`: no device metric is read: {why}"
            ));
            return Vec::new();
        }
    };
    let mut metered = Vec::new();
    for gpu in gpus {
        match smi.gpu_at(gpu.location) {
            Some(index) => metered.push((gpu.agent, index)),
            None => warn(&format!(
                "context `{context}`: AMD-SMI has no GPU at {} ({}, agent {}); its metrics are not read",
                gpu.location, gpu.gfx, gpu.agent
            )),
        }
    }
    metered
}

/// Configures device counting in `context` on each of `gpus` that has a counter
/// configuration in `configs` (by agent handle).
pub fn configure(
    tool: &Tool,
    context: Handle,
    name: &str,
    plan: &DeviceCountingPlan,
    gpus: &[&Gpu],
    configs: HashMap<u64, Handle>,
) -> Result<(), Error> {
    let service = Service::resolve()?;
    // Leaked: the SDK calls back with it whenever the context starts.
    let configs: &'static HashMap<u64, Handle> = Box::leak(Box::new(configs));
    let mut capacity = 0;
    let mut agents = Vec::new();
    for gpu in gpus
        .iter()
        .filter(|g| configs.contains_key(&g.handle.handle))
    {
        // SAFETY: the callback has the SDK's type; its data lives for the process. No
        // buffer: the values come back from each read.
        let status = unsafe {
            (service.configure)(
                context,
                Handle { handle: 0 },
                gpu.handle,
                Some(choose),
                std::ptr::from_ref(configs).cast_mut().cast(),
            )
        };
        if status == status::PERMISSION_DENIED {
            return Err(Error::Perfmon {
                gfx: gpu.gfx.clone(),
                agent: gpu.agent,
            });
        }
        let what = format!(
            "configuring device counting on {} (agent {})",
            gpu.gfx, gpu.agent
        );
        tool.api.check(&what, status)?;
        capacity += INITIAL_VALUES_PER_AGENT;
        agents.push(gpu.agent);
    }
    let metered = if plan.metrics.is_empty() {
        Vec::new()
    } else {
        metered(name, gpus)
    };
    if capacity == 0 && metered.is_empty() {
        return Ok(());
    }
    // The metrics are counters of one instance to every reader of the samples.
    let described = metered.iter().flat_map(|&(agent, _)| {
        (plan.metrics.iter()).map(move |m| {
            Meta::Counter(CounterInfo {
                id: m.counter_id(agent),
                agent,
                name: m.name().to_owned(),
                description: format!("{} (AMD-SMI), {}", m.name(), m.unit()),
                dimensions: Vec::new(),
            })
        })
    });
    stream::send_meta(described.collect());
    let sampled = Sampled {
        name: name.to_owned(),
        context,
        agents,
        metered,
        metrics: plan.metrics.clone(),
        interval: Duration::from_nanos(plan.interval_ns.max(1)),
        at_markers: plan.at == SampleAt::Markers,
        values: Mutex::new(vec![NO_VALUE; capacity]),
        failed: AtomicBool::new(false),
    };
    let mut configured = locked(CONFIGURED.lock());
    configured
        .get_or_insert_with(|| (service, Vec::new()))
        .1
        .push(sampled);
    Ok(())
}

/// What a read's room holds before the SDK fills it.
const NO_VALUE: CounterRecord = CounterRecord {
    id: 0,
    counter_value: 0.0,
    dispatch_id: 0,
    user_data: UserData { value: 0 },
    agent_id: Handle { handle: 0 },
};

/// Room for this many values per agent at first; a read that needs more says so, and is
/// made again with room for them.
const INITIAL_VALUES_PER_AGENT: usize = 4096;

/// `rocprofiler_device_counting_service_cb_t`: sets the agent's configuration.
unsafe extern "C" fn choose(
    context: Handle,
    agent: Handle,
    set_config: DeviceCountingSetConfig,
    data: *mut c_void,
) {
    entry("device_counting::choose", (), || {
        // SAFETY: the map `configure` leaked.
        let configs = unsafe { &*data.cast::<HashMap<u64, Handle>>() };
        if let Some(&config) = configs.get(&agent.handle) {
            // SAFETY: the SDK's function, during the start it called us from.
            let status = unsafe { set_config(context, config) };
            if status != status::SUCCESS {
                warn(&format!(
                    "device counting: the SDK refused agent {}'s counters (status {status})",
                    agent.handle
                ));
            }
        }
    });
}

/// Starts the sampler thread, if setup configured device counting.
pub fn start(tool: &'static Tool) {
    let Some((service, contexts)) = locked(CONFIGURED.lock()).take() else {
        return;
    };
    let sampler: &'static Sampler = Box::leak(Box::new(Sampler {
        service,
        contexts,
        stopped: AtomicBool::new(false),
        round: Mutex::new(()),
    }));
    SAMPLER.store(std::ptr::from_ref(sampler).cast_mut(), Ordering::Release);
    let spawned = std::thread::Builder::new()
        .name("rocflow-sample".into())
        .spawn(move || sampler.run(tool));
    if let Err(e) = spawned {
        warn(&format!(
            "cannot start the device sampling thread ({e}); no device counter is read"
        ));
    }
}

/// Stops the sampler, waiting up to `timeout` for a read in progress; the guard holds off
/// later reads for as long as it lives.
pub fn stop(timeout: Duration) -> Option<MutexGuard<'static, ()>> {
    let sampler = sampler()?;
    sampler.stopped.store(true, Ordering::Release);
    let deadline = Instant::now() + timeout;
    loop {
        match sampler.round.try_lock() {
            Ok(guard) => return Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// `rocprofiler_callback_tracing_cb_t` for ROCTx ranges: reads the contexts that sample
/// at markers, on the thread that pushed or popped the range.
pub unsafe extern "C" fn on_range(
    _record: CallbackTracingRecord,
    _user: *mut UserData,
    _data: *mut c_void,
) {
    entry("device_counting::on_range", (), || {
        if let (Some(sampler), Some(tool)) = (sampler(), crate::state::tool()) {
            sampler.round(tool, |sampled| sampled.at_markers);
        }
    });
}

/// In a forked child: the parent's sampler is not this process's (its thread is gone and
/// its lock may be held forever), and the child reads no device; the parent does.
pub fn forget_in_child() {
    SAMPLER.store(std::ptr::null_mut(), Ordering::Release);
}

/// Why a context's reads end.
enum Ended {
    /// The SDK finalized: nothing more is read anywhere.
    Finalized,
    Failed(CallError),
}

impl Sampler {
    /// Reads at each context's interval until the process finalizes.
    fn run(&self, tool: &Tool) {
        let started = Instant::now();
        let mut due: Vec<Duration> = vec![Duration::ZERO; self.contexts.len()];
        loop {
            let Some(next) = due.iter().min().copied() else {
                return;
            };
            std::thread::sleep(next.saturating_sub(started.elapsed()));
            let now = started.elapsed();
            let is_due: Vec<bool> = due.iter().map(|&d| d <= now).collect();
            let index =
                |sampled: &Sampled| (self.contexts.iter()).position(|c| std::ptr::eq(c, sampled));
            let go_on = entry("the device sampling thread", false, || {
                self.round(tool, |sampled| index(sampled).is_some_and(|i| is_due[i]))
            });
            if !go_on {
                return;
            }
            for ((due, sampled), was_due) in due.iter_mut().zip(&self.contexts).zip(is_due) {
                if was_due {
                    *due = now + sampled.interval;
                }
            }
        }
    }

    /// Reads the contexts `which` picks, unless the process finalizes; false once it does.
    fn round(&self, tool: &Tool, which: impl Fn(&Sampled) -> bool) -> bool {
        let _round = locked(self.round.lock());
        if self.stopped.load(Ordering::Acquire) {
            return false;
        }
        let picked =
            (self.contexts.iter()).filter(|s| which(s) && !s.failed.load(Ordering::Acquire));
        for sampled in picked {
            match self.read(tool, sampled) {
                Ok(()) => {}
                Err(Ended::Finalized) => {
                    self.stopped.store(true, Ordering::Release);
                    return false;
                }
                Err(Ended::Failed(e)) => {
                    sampled.failed.store(true, Ordering::Release);
                    warn(&format!(
                        "context `{}`: {e}; its devices are no longer sampled",
                        sampled.name
                    ));
                }
            }
        }
        true
    }

    /// Reads a context's devices once and sends the values: its counters, then the
    /// metrics of its GPUs at the counters' moment.
    fn read(&self, tool: &Tool, sampled: &Sampled) -> Result<(), Ended> {
        let _pin = stream::pin();
        let mut frame = RecordsFrame::new(stream::frame_buffer());
        let timestamp_ns = if sampled.agents.is_empty() {
            tool.api.timestamp()
        } else {
            match self.read_counters(tool, sampled, &mut frame)? {
                Some(timestamp_ns) => timestamp_ns,
                None => return Ok(()),
            }
        };
        read_metrics(sampled, timestamp_ns, &mut frame);
        stream::send([frame.finish(0)]);
        Ok(())
    }

    /// Reads a context's counters into `frame`; the read's time, or `None` where there is
    /// nothing to read yet.
    fn read_counters(
        &self,
        tool: &Tool,
        sampled: &Sampled,
        frame: &mut Frame,
    ) -> Result<Option<u64>, Ended> {
        let mut values = locked(sampled.values.lock());
        let read = |values: &mut Vec<CounterRecord>| {
            let mut count = values.len();
            // SAFETY: `values` holds `count` records.
            let status = unsafe {
                (self.service.sample)(
                    sampled.context,
                    UserData { value: 0 },
                    counter_flag::NONE,
                    values.as_mut_ptr(),
                    &mut count,
                )
            };
            (status, count)
        };
        let (mut status, mut count) = read(&mut values);
        // Too little room: the SDK said how much it needs, and the read is made again
        // with it (the values count from the context's start, so nothing is lost).
        if status == status::OUT_OF_RESOURCES && count > values.len() {
            values.resize(count, NO_VALUE);
            (status, count) = read(&mut values);
        }
        // After the read: every dispatch the read counted ended before this time.
        let timestamp_ns = tool.api.timestamp();
        match status {
            status::SUCCESS => {}
            // Nothing to read yet: the context is stopped, or the application has not
            // loaded the HSA runtime (the SDK starts device counting once it has).
            status::CONTEXT_NOT_STARTED | status::HSA_NOT_LOADED => return Ok(None),
            status::FINALIZED => return Err(Ended::Finalized),
            _ => {
                let what = "reading the device counters";
                return Err(Ended::Failed(tool.api.failed(what, status)));
            }
        }
        let pid = std::process::id();
        for r in &values[..count] {
            let (counter, at) = crate::gpu::coordinates(tool, r.id);
            let sample = DeviceCounterSample {
                pid,
                agent: tool.agent_index(r.agent_id),
                timestamp_ns,
                counter_id: counter.handle as u32,
                value: r.counter_value,
                ..DeviceCounterSample::default()
            };
            frame.push(sample.at(at));
        }
        Ok(Some(timestamp_ns))
    }
}

/// Reads the AMD-SMI metrics of a context's GPUs into `frame`, as samples at
/// `timestamp_ns`; a metric a GPU does not report is left out of its samples.
fn read_metrics(sampled: &Sampled, timestamp_ns: u64, frame: &mut Frame) {
    let Some(Ok(smi)) = SMI.get() else {
        return;
    };
    let smi = locked(smi.lock());
    let pid = std::process::id();
    for &(agent, gpu) in &sampled.metered {
        let reading = smi.read(gpu);
        let wanted = (reading.values.iter()).filter(|(m, _)| sampled.metrics.contains(m));
        for &(metric, value) in wanted {
            frame.push(DeviceCounterSample {
                pid,
                agent,
                timestamp_ns,
                counter_id: metric.counter_id(agent),
                value,
                ..DeviceCounterSample::default()
            });
        }
    }
}
