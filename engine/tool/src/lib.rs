//! rocflow's tool library. rocprofiler-sdk (or rocflow's simulated SDK) finds it through
//! `ROCP_TOOL_LIBRARIES` and calls [`rocprofiler_configure`]; in the initialize callback
//! it creates the contexts of the Plan the runner left in `ROCFLOW_PLAN`, and from then on
//! every buffered record is converted and streamed to the runner's socket
//! (`ROCFLOW_SOCKET`). It decodes, interns and formats nothing, which is the runner's
//! job, except API call arguments: only the SDK in the process can read them, so the tool
//! interns their names, types and texts (each distinct one once).
//!
//! When something is wrong (an SDK too old or missing a symbol, no runner to talk to) it
//! says what on stderr and stays out of the application's way; when the tool itself is
//! wrong (a panic), [`guard`] switches it off and lets the application go on.

mod api;
mod callback_kind;
mod coexist;
mod context;
mod control;
mod correlation_request;
mod crash;
mod device_counting;
mod filter;
mod flusher;
mod gpu;
mod graph;
mod graph_node;
mod guard;
mod hip_stream;
mod kernel_replay;
mod kfd;
mod late_start;
mod legacy_roctx;
mod messages;
mod records;
pub mod session;
mod setup;
mod spm;
mod state;
mod stream;
mod strings;
mod thread_trace;
mod warning;

use std::ffi::{CStr, c_char, c_void};
use std::path::PathBuf;
use std::sync::{OnceLock, RwLock};
use std::time::Duration;

use rocflow_core::abi::{self, ClientFinalize, ClientId, ToolConfigureResult};
use rocflow_core::contexts::{FORMAT_VERSION, PlanContexts};
use rocflow_core::record::Meta;
use rocflow_core::sdk::SdkVersion;

use api::Api;
use guard::entry;
use state::{TOOL, Tool, tool};
use warning::{unprofiled, warn};

/// The oldest rocprofiler-sdk whose API and layouts the tool uses.
const MIN_VERSION: u32 = {
    let (major, minor, patch) = abi::MIN_SDK_VERSION;
    abi::version(major, minor, patch)
};
/// How long finalize waits for the last frames to reach the runner.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// The entry point rocprofiler-sdk looks for: checks the SDK, loads the Plan, and returns
/// the tool's initialize and finalize callbacks (or null to stay out of the run).
///
/// # Safety
/// Called by rocprofiler-sdk with the arguments its headers declare.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_configure(
    version: u32,
    runtime_version: *const c_char,
    _priority: u32,
    client: *mut ClientId,
) -> *mut ToolConfigureResult {
    entry("rocprofiler_configure", std::ptr::null_mut(), || {
        // SAFETY: the caller's contract.
        unsafe { configure_tool(version, runtime_version, client) }
    })
}

/// [`rocprofiler_configure`]'s body.
///
/// # Safety
/// As [`rocprofiler_configure`].
unsafe fn configure_tool(
    version: u32,
    runtime_version: *const c_char,
    client: *mut ClientId,
) -> *mut ToolConfigureResult {
    // The SDK configures each tool once: a second call comes from a second copy of it.
    static CONFIGURED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if CONFIGURED.swap(true, std::sync::atomic::Ordering::AcqRel) {
        warn(&coexist::configured_again());
        return std::ptr::null_mut();
    }
    if version < MIN_VERSION {
        let found = if runtime_version.is_null() {
            format!("{version}")
        } else {
            // SAFETY: the SDK passes a NUL-terminated version string.
            unsafe { CStr::from_ptr(runtime_version) }
                .to_string_lossy()
                .into_owned()
        };
        warn(&format!(
            "rocprofiler-sdk {found} is too old (rocflow needs {}.{}.{} or later); profiling is off",
            abi::MIN_SDK_VERSION.0,
            abi::MIN_SDK_VERSION.1,
            abi::MIN_SDK_VERSION.2
        ));
        return std::ptr::null_mut();
    }
    match configure() {
        // A domain this SDK lacks is never asked for: AMD's SDK 1.0.0 throws out of
        // `rocprofiler_configure_buffer_tracing_service` for such a kind, which aborts the
        // application. The process stays unprofiled, which fails the run, and says which
        // release has the domain.
        Ok(tool) => {
            thread_trace::running_on(SdkVersion::from_encoded(version));
            match rocflow_core::availability::unavailable(
                &tool.plan.contexts,
                SdkVersion::from_encoded(version),
            ) {
                Some(missing) => {
                    unprofiled(missing);
                    return std::ptr::null_mut();
                }
                None => {
                    let _ = TOOL.set(tool);
                    coexist::check_copies().iter().for_each(|m| warn(m));
                }
            }
        }
        Err(e) => {
            unprofiled(e);
            return std::ptr::null_mut();
        }
    }
    if !client.is_null() {
        // SAFETY: the SDK passes its client id for the tool to name.
        unsafe { (*client).name = c"rocflow".as_ptr() };
    }
    let result = ToolConfigureResult {
        size: size_of::<ToolConfigureResult>(),
        initialize: Some(initialize),
        finalize: Some(finalize),
        tool_data: std::ptr::null_mut(),
    };
    Box::into_raw(Box::new(result))
}

/// Why the tool stays out of a process.
#[derive(Debug, thiserror::Error)]
enum ConfigureError {
    #[error("{0} is not set (run the application with `rocflow run`)")]
    Unset(&'static str),
    #[error("cannot read the plan {}: {source}", .path.display())]
    ReadPlan {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the plan is not readable: {0}")]
    Plan(#[source] serde_json::Error),
    #[error(
        "the plan has format {0}, this tool library reads {FORMAT_VERSION} (is it from another rocflow?)"
    )]
    Format(u32),
    #[error("ROCFLOW_PASS is `{0}`, not a pass number")]
    Pass(String),
    #[error(transparent)]
    Api(#[from] api::MissingSymbol),
}

fn configure() -> Result<Tool, ConfigureError> {
    let var = |name| std::env::var_os(name).ok_or(ConfigureError::Unset(name));
    let (socket, plan_path) = match late_start::link() {
        Some(link) => (link.socket.clone().into_os_string(), link.plan.clone()),
        None => (var("ROCFLOW_SOCKET")?, PathBuf::from(var("ROCFLOW_PLAN")?)),
    };
    let text = std::fs::read_to_string(&plan_path).map_err(|source| ConfigureError::ReadPlan {
        path: plan_path,
        source,
    })?;
    let mut plan: PlanContexts = serde_json::from_str(&text).map_err(ConfigureError::Plan)?;
    if late_start::link().is_some() {
        late_start::adapt(&mut plan);
        late_start::turn_on_betas(&plan);
    }
    if plan.format != FORMAT_VERSION {
        return Err(ConfigureError::Format(plan.format));
    }
    let pass = match std::env::var("ROCFLOW_PASS") {
        Ok(text) => text.parse().map_err(|_| ConfigureError::Pass(text))?,
        Err(_) => 0,
    };
    Ok(Tool {
        api: Api::resolve()?,
        plan,
        socket: socket.into(),
        pass,
        agents: OnceLock::new(),
        kernels: RwLock::default(),
        code_objects: RwLock::default(),
        counter_dimensions: OnceLock::new(),
    })
}

/// `rocprofiler_tool_initialize_t`: connect, describe the process, set up the contexts.
/// Non-zero tells the SDK the tool failed.
unsafe extern "C" fn initialize(_finalize: ClientFinalize, _data: *mut c_void) -> i32 {
    entry("initialize", 1, initialize_tool)
}

fn initialize_tool() -> i32 {
    let Some(tool) = tool() else { return 1 };
    // Switching the tool off closes the stream, so the records that reached the runner
    // are kept.
    guard::on_disable(|| stream::close(CLOSE_TIMEOUT));
    if let Err(e) = stream::open(&tool.socket) {
        unprofiled(e);
        return 1;
    }
    stream::send_meta(vec![
        tool.process(),
        Meta::Strings {
            first: 0,
            values: vec![String::new()],
        },
    ]);
    if let Err(e) = setup::run(tool) {
        warn(&format!("{e}; profiling is off"));
        stream::close(CLOSE_TIMEOUT);
        return 1;
    }
    // SAFETY: plain C functions with no preconditions.
    unsafe {
        libc::pthread_atfork(
            Some(stream::before_fork),
            Some(stream::after_fork),
            Some(after_fork_child),
        );
        libc::pthread_atfork(
            Some(strings::before_fork),
            Some(strings::after_fork),
            Some(strings::after_fork),
        );
        libc::pthread_atfork(
            Some(hip_stream::before_fork),
            Some(hip_stream::after_fork),
            Some(hip_stream::after_fork),
        );
        // Registered last, so its prepare handler runs first.
        libc::pthread_atfork(
            Some(filter::before_fork),
            Some(filter::after_fork),
            Some(filter::after_fork),
        );
    }
    crash::install();
    legacy_roctx::register_for(tool);
    control::start(tool);
    flusher::start(tool);
    device_counting::start(tool);
    0
}

extern "C" fn after_fork_child() {
    entry("after_fork_child", (), || {
        if late_start::link().is_some() {
            // A child does not inherit a live session.
            stream::forget_in_child();
        } else if let Some(tool) = tool() {
            stream::reopen_in_child(&tool.socket, tool.process());
            flusher::restart_in_child(tool);
        }
        device_counting::forget_in_child();
    });
    // Whether or not the tool is on, the metadata log's lock taken before the fork is let go.
    stream::after_fork();
}

/// `rocprofiler_tool_finalize_t`.
unsafe extern "C" fn finalize(_data: *mut c_void) {
    entry("finalize", (), || {
        let _no_more_reads = device_counting::stop(CLOSE_TIMEOUT);
        legacy_roctx::unregister();
        legacy_roctx::flush();
        flusher::flush_and_close(CLOSE_TIMEOUT);
        late_start::finalize();
    });
}
