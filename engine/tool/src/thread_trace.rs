//! Thread trace: rocprofiler-sdk's dispatch or device thread-trace service on a context's
//! agents. With the dispatch service, the dispatch callback starts a trace of the
//! dispatches the context's filter takes; with the device service, the agent is traced
//! whole while the context is started, and each stop hands over the window's trace. The
//! shader-data callback sends each shader engine's trace to the runner, in pieces no
//! larger than a frame. The decoder needs the code objects the traces point into, so
//! while a context traces, each loaded code object's bytes are sent too.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use rocflow_core::abi::{
    AsyncCorrelationId, CodeObjectLoadData, Handle, SHADER_DATA_END, ShaderDataBundle,
    ShaderDataCallback, ShaderDataForm, UserData,
};
use rocflow_core::query::text;
use rocflow_core::sdk::SdkVersion;
use rocflow_core::thread_trace::{
    ConfigureDeviceFn, ConfigureDispatchFn, MAX_TRACE_BYTES, PIECE_BYTES, ThreadTracePlan,
    TraceData, TraceMode, TracePart, Traced, control,
};
use rocflow_core::wire;

use crate::api::CallError;
use crate::api::MissingSymbol;
use crate::filter::DispatchFilter;
use crate::gpu::{Gpu, supported_counters};
use crate::guard::entry;
use crate::state::{Tool, tool};
use crate::stream;
use crate::warning::warn;

const CONFIGURE: &str = "rocprofiler_configure_dispatch_thread_trace_service";
const CONFIGURE_DEVICE: &str = "rocprofiler_configure_device_thread_trace_service";
/// `ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_MEMORY`.
const IN_MEMORY: i32 = 2;

/// Whether a context traces threads: code objects' bytes are sent then.
static TRACING: AtomicBool = AtomicBool::new(false);

/// The form of shader-data callback the SDK calls, from its version.
static FORM: OnceLock<ShaderDataForm> = OnceLock::new();

/// Tells the services the version of the SDK the tool runs on (`rocprofiler_configure`'s).
pub fn running_on(version: SdkVersion) {
    let _ = FORM.set(ShaderDataForm::of(version));
}

/// Why a context's thread trace cannot be configured.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Sdk(#[from] CallError),
    #[error(transparent)]
    Missing(#[from] MissingSymbol),
    #[error("thread-trace kernel filter: {0}")]
    KernelFilter(#[from] regex::Error),
}

/// The SDK's entry point of a plan's service, with what its callbacks need.
#[derive(Clone, Copy)]
enum Service {
    Dispatch(ConfigureDispatchFn, &'static DispatchFilter),
    Device(ConfigureDeviceFn),
}

/// Configures the plan's service on `gpus` for the context `context`.
pub fn configure(
    tool: &Tool,
    context: Handle,
    plan: &ThreadTracePlan,
    gpus: &[&Gpu],
) -> Result<(), TraceError> {
    let this = libloading::os::unix::Library::this();
    // `rocprofiler_configure` names the version before any context is configured.
    let (major, minor, patch) = rocflow_core::abi::MIN_SDK_VERSION;
    let form = *FORM.get_or_init(|| ShaderDataForm::of(SdkVersion(major, minor, patch)));
    let service = match plan.mode {
        TraceMode::Dispatch => {
            // SAFETY: the symbol has the type the SDK's header declares.
            let configure = unsafe {
                this.get::<ConfigureDispatchFn>(
                    b"rocprofiler_configure_dispatch_thread_trace_service\0",
                )
            }
            .map_err(|_| MissingSymbol(CONFIGURE))?;
            let filter =
                DispatchFilter::leak(&plan.kernel_include, &plan.kernel_exclude, &plan.iterations)?;
            Service::Dispatch(*configure, filter)
        }
        TraceMode::Device => {
            // SAFETY: as above.
            let configure = unsafe {
                this.get::<ConfigureDeviceFn>(
                    b"rocprofiler_configure_device_thread_trace_service\0",
                )
            }
            .map_err(|_| MissingSymbol(CONFIGURE_DEVICE))?;
            Service::Device(*configure)
        }
    };
    for gpu in gpus {
        let mut ids = Vec::new();
        if !plan.perfcounters.is_empty() {
            let available = supported_counters(tool, gpu.handle)?;
            for counter in &plan.perfcounters {
                match available.iter().find(|c| c.name == counter.name) {
                    Some(found) => ids.push((found.id.handle, counter.simd_mask)),
                    None => warn(&format!(
                        "thread-trace perfcounter `{}` is not available on {} (agent {})",
                        counter.name, gpu.gfx, gpu.agent
                    )),
                }
            }
        }
        let mut parameters = plan.parameters(&ids);
        let (pointer, count) = (parameters.as_mut_ptr(), parameters.len());
        // SAFETY: the parameters outlive the call; the callbacks have the SDK's types and
        // their data lives for the process.
        let status = unsafe {
            match service {
                Service::Dispatch(configure, filter) => configure(
                    context,
                    gpu.handle,
                    pointer,
                    count,
                    Some(on_dispatch),
                    Some(shader_callback::<Dispatched>(form).erase()),
                    (filter as *const DispatchFilter).cast_mut().cast(),
                ),
                Service::Device(configure) => configure(
                    context,
                    gpu.handle,
                    pointer,
                    count,
                    Some(shader_callback::<Windowed>(form).erase()),
                    UserData { value: 0 },
                ),
            }
        };
        tool.api
            .check(&format!("thread trace on {}", gpu.gfx), status)?;
    }
    TRACING.store(true, Ordering::Release);
    Ok(())
}

/// `rocprofiler_thread_trace_dispatch_callback_t`: traces the dispatch when the filter
/// takes it, and has its traces carry its dispatch id.
unsafe extern "C" fn on_dispatch(
    _agent: Handle,
    _queue: Handle,
    _correlation: AsyncCorrelationId,
    kernel_id: u64,
    dispatch_id: u64,
    filter: *mut c_void,
    shader: *mut UserData,
) -> i32 {
    entry("thread_trace::on_dispatch", control::NONE, || {
        // SAFETY: the leaked filter given at configuration.
        let filter = unsafe { &*filter.cast::<DispatchFilter>() };
        if !filter.select(kernel_id) || shader.is_null() {
            return control::NONE;
        }
        // SAFETY: checked non-null; the SDK's user data for the dispatch's traces.
        unsafe { (*shader).value = dispatch_id };
        control::START_AND_STOP
    })
}

/// What a service's traces are of: the dispatch service's, of the dispatch whose id the
/// dispatch callback set as the user data; the device service's, of the window its
/// context's stop ended.
trait Traces {
    /// The name [`entry`] reports a panic under.
    const CALLBACK: &'static str;
    fn traced(user: UserData, agent: u32, shader_engine: u32) -> Traced;
}

enum Dispatched {}

impl Traces for Dispatched {
    const CALLBACK: &'static str = "thread_trace::on_shader_data";
    fn traced(user: UserData, _: u32, _: u32) -> Traced {
        Traced::Dispatch(user.value)
    }
}

enum Windowed {}

impl Traces for Windowed {
    const CALLBACK: &'static str = "thread_trace::on_device_data";
    /// The SDK says nothing of the window, so each shader engine's traces are numbered as
    /// they come.
    fn traced(_: UserData, agent: u32, shader_engine: u32) -> Traced {
        static WINDOWS: Mutex<BTreeMap<(u32, u32), u64>> = Mutex::new(BTreeMap::new());
        let mut windows = WINDOWS.lock().unwrap_or_else(|e| e.into_inner());
        let next = windows.entry((agent, shader_engine)).or_insert(0);
        *next += 1;
        Traced::Device { window: *next - 1 }
    }
}

/// `rocprofiler_thread_trace_shader_data_callback_t` in the form `form`, sending each
/// shader engine's trace of what `T` says.
fn shader_callback<T: Traces>(form: ShaderDataForm) -> ShaderDataCallback {
    match form {
        ShaderDataForm::Arguments => ShaderDataCallback::Arguments(on_arguments::<T>),
        ShaderDataForm::Flagged => ShaderDataCallback::Flagged(on_flagged::<T>),
        ShaderDataForm::Bundled => ShaderDataCallback::Bundled(on_bundle::<T>),
    }
}

/// SDK 1.0's form.
unsafe extern "C" fn on_arguments<T: Traces>(
    agent: Handle,
    shader_engine: i64,
    data: *mut c_void,
    size: usize,
    user: UserData,
) {
    entry(T::CALLBACK, (), || {
        // SAFETY: the SDK's data for the call.
        unsafe { send_shader_data::<T>(agent, shader_engine, data, size, user, Chunk::WHOLE) };
    });
}

/// SDK 1.3.2's form: the flags say nothing the runner keeps.
unsafe extern "C" fn on_flagged<T: Traces>(
    agent: Handle,
    shader_engine: i64,
    data: *mut c_void,
    size: usize,
    _flags: i32,
    user: UserData,
) {
    // SAFETY: the SDK's arguments, passed on.
    unsafe { on_arguments::<T>(agent, shader_engine, data, size, user) };
}

/// SDK 1.3.5's form: the valid bytes start `read_offset` into the data, and a chunk after
/// a trace's first continues it.
unsafe extern "C" fn on_bundle<T: Traces>(bundle: ShaderDataBundle, user: UserData) {
    entry(T::CALLBACK, (), || {
        let skip = bundle.read_offset.min(bundle.data_size);
        let data = match bundle.data.is_null() {
            true => bundle.data,
            // SAFETY: `read_offset` is within the SDK's `data_size` bytes.
            false => unsafe { bundle.data.cast::<u8>().add(skip as usize).cast() },
        };
        let size = (bundle.data_size - skip) as usize;
        let (agent, shader_engine) = (bundle.agent, bundle.shader_engine_id);
        // SAFETY: the SDK's data for the call.
        unsafe {
            let chunk = Chunk {
                index: bundle.chunk_index,
                last: bundle.flags & SHADER_DATA_END != 0,
            };
            send_shader_data::<T>(agent, shader_engine, data, size, user, chunk)
        };
    });
}

/// Where a chunk stands in its trace: the bundled form numbers a trace's chunks from 0
/// and flags the last.
#[derive(Clone, Copy)]
struct Chunk {
    index: u64,
    last: bool,
}

impl Chunk {
    /// A trace handed over in one call, as the forms before 1.3.5 hand each.
    const WHOLE: Chunk = Chunk {
        index: 0,
        last: true,
    };
}

/// Sends the `size` bytes at `data`, chunk `chunk` of one shader engine's trace of what
/// `T` says for `user`: a chunk after the first continues its trace where the chunks
/// before it ended.
///
/// # Safety
/// `data` holds `size` bytes, or is null.
unsafe fn send_shader_data<T: Traces>(
    agent: Handle,
    shader_engine: i64,
    data: *mut c_void,
    size: usize,
    user: UserData,
    chunk: Chunk,
) {
    /// A trace by agent, shader engine and user data (a dispatch's id: traces of
    /// dispatches on several queues interleave).
    type Key = (u32, u32, u64);
    /// The traces whose last chunk is still to come: what each is of and the bytes sent.
    static OPEN: Mutex<BTreeMap<Key, (Traced, u64)>> = Mutex::new(BTreeMap::new());
    let Some(tool) = tool() else { return };
    if data.is_null() {
        return;
    }
    // SAFETY: the SDK hands `size` bytes at `data` for the call.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    let (agent, shader_engine) = (
        tool.agent_index(agent),
        shader_engine.clamp(0, i64::from(u32::MAX)) as u32,
    );
    let (traced, offset) = {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        let key = (agent, shader_engine, user.value);
        let (traced, offset) = match (chunk.index, open.remove(&key)) {
            (1.., Some(sent)) => sent,
            _ => (T::traced(user, agent, shader_engine), 0),
        };
        if !chunk.last {
            open.insert(key, (traced, offset + bytes.len() as u64));
        }
        (traced, offset)
    };
    let what = TracePart::ShaderData {
        agent,
        shader_engine,
        traced,
    };
    send(what, bytes, offset);
}

/// Sends a code object's bytes when a context traces threads.
pub fn code_object_loaded(d: &CodeObjectLoadData, agent: u32) {
    if !TRACING.load(Ordering::Acquire) {
        return;
    }
    let what = TracePart::CodeObject {
        id: d.code_object_id,
        agent,
        load_base: d.load_base,
        load_size: d.load_size,
    };
    match code_object_bytes(d) {
        Ok(bytes) => send(what, &bytes, 0),
        Err(why) => warn(&format!(
            "code object {} ({}): {why}; its thread traces decode without it",
            d.code_object_id,
            text(d.uri)
        )),
    }
}

/// A loaded code object's bytes: in memory, or in the file part its URI names.
fn code_object_bytes(d: &CodeObjectLoadData) -> Result<Vec<u8>, String> {
    if d.memory_size > MAX_TRACE_BYTES {
        return Err(format!(
            "{} bytes is more than rocflow keeps",
            d.memory_size
        ));
    }
    if d.storage_type == IN_MEMORY {
        if d.memory_base == 0 {
            return Err("it has no memory".into());
        }
        // SAFETY: the SDK's code object, loaded in this process for the call at least.
        let bytes = unsafe {
            std::slice::from_raw_parts(d.memory_base as *const u8, d.memory_size as usize)
        };
        return Ok(bytes.to_vec());
    }
    let uri = text(d.uri);
    let (path, part) = uri
        .strip_prefix("file://")
        .map(|rest| rest.split_once('#').unwrap_or((rest, "")))
        .ok_or("its URI is neither a file nor memory")?;
    let field = |name: &str| {
        (part.split('&'))
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => v.parse().ok(),
            })
    };
    let file = std::fs::read(path).map_err(|e| e.to_string())?;
    let offset = field("offset").unwrap_or(0) as usize;
    let size = field("size").map_or(file.len().saturating_sub(offset), |s| s as usize);
    file.get(offset..offset.saturating_add(size))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| format!("the file holds no bytes {offset}..{}", offset + size))
}

/// Sends `bytes` in pieces, the first at `offset` of its trace or code object.
fn send(what: TracePart, bytes: &[u8], mut offset: u64) {
    // One runner gets every piece, even across a session's phase switch.
    let _pin = stream::pin();
    // An empty trace is sent too: the runner then knows the dispatch was traced.
    let pieces = bytes
        .chunks(PIECE_BYTES)
        .map(Some)
        .chain(bytes.is_empty().then_some(None));
    for piece in pieces {
        let piece = piece.unwrap_or_default();
        let data = TraceData {
            what,
            offset,
            bytes: piece.to_vec(),
        };
        let mut frame = Vec::with_capacity(piece.len() + 64);
        wire::encode_trace(0, &data, &mut frame);
        stream::send([frame.into()]);
        offset += piece.len() as u64;
    }
}
