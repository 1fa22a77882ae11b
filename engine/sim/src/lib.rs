//! A simulated rocprofiler-sdk, for running rocflow's tool library end to end without an
//! AMD GPU. Preloaded into an application (`LD_PRELOAD`), it plays rocprofiler-register
//! and rocprofiler-sdk: it loads the tools named by `ROCP_TOOL_LIBRARIES`, calls their
//! `rocprofiler_configure` and initialize callbacks, replays the scenario named by
//! `ROCFLOW_SIM_SCENARIO` (or the built-in MI300X one) on threads of its own while the
//! application runs, and at exit completes the scenario, flushes every buffer and calls
//! the tools' finalize. A forked child replays the scenario as a process of its own.
//!
//! It exports the C API subset the tool uses, with the real headers' layouts and status
//! codes, and rejects what the real SDK rejects (see [`api`]).

mod activity;
mod api;
mod args;
mod attach;
mod buffer;
mod clients;
mod device;
mod device_counting;
mod device_trace;
mod external_correlation;
mod graph;
mod kernel_replay;
mod kfd;
mod ledger;
mod legacy_roctx;
mod roctx;
mod sdk;
mod smi;
mod spm;
mod stderr;
mod stream;
mod thread_trace;
mod traced;
mod workload;

use std::ffi::CString;
use std::sync::Mutex;
use std::thread::JoinHandle;

use rocflow_core::abi::{self, ClientId, Configure, ToolConfigureResult};

use sdk::Phase;
use stderr::warn;

/// The value the simulated SDK gives a counter in a dispatch at a point (coordinates in
/// `rocflow_core::sdk::COUNTER_DIMENSIONS` order), for the scenario's seed: what tests
/// check collected values against.
pub fn counter_value(seed: u64, dispatch_id: u64, counter_id: u64, coordinates: [u16; 7]) -> f64 {
    let positions = (0..).zip(coordinates.map(u64::from));
    let id = device::instance_id(abi::Handle { handle: counter_id }, positions);
    workload::counter_value(seed, dispatch_id, id)
}

/// Runs when the library is loaded, before the application's `main`.
#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = on_load;

/// The tools that took part, with their configure results.
static TOOLS: Mutex<Vec<Tool>> = Mutex::new(Vec::new());
/// The scenario's threads of this process.
static WORKERS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

struct Tool {
    result: *mut ToolConfigureResult,
    /// Its client id's handle: the contexts it created are its own.
    client: u32,
    /// It finalized early (through the client finalize it was given).
    finalized: bool,
}

// The configure result is the tool's, valid for the life of the process.
unsafe impl Send for Tool {}

extern "C" fn on_load() {
    if let Ok(tools) = std::env::var("ROCP_TOOL_LIBRARIES") {
        initialize(None, &tools);
    } else if attach::enabled() {
        attach::listen(attach::Hooks {
            attach: attach_tool,
            detach: detach_tools,
        });
    }
}

/// Loads and starts the tool an attach requests, on the scenario's schedule begun at
/// `origin`; says why not.
fn attach_tool(request: &rocflow_core::attach::Request, origin: u64) -> Result<(), String> {
    if sdk::phase() != Phase::Loaded {
        return Err(
            "the process was attached before; the simulated SDK, as AMD's without its experimental reattach, configures a tool once"
                .into(),
        );
    }
    for (name, value) in &request.env {
        // SAFETY: as rocprofiler-register sets the profiler's environment on attach: the
        // application's threads may read the environment meanwhile, which the C library
        // tolerates for variables they do not use.
        unsafe { std::env::set_var(name, value) };
    }
    let configure = entry_point(&request.tool).ok_or_else(|| {
        format!(
            "cannot load the tool {} (the process's stderr says why)",
            request.tool
        )
    })?;
    match start(&[configure], Some(origin)) {
        None => Err("the simulated device has no scenario (the process's stderr says why)".into()),
        Some(0) => Err("the tool did not start (the process's stderr says why)".into()),
        Some(_) => Ok(()),
    }
}

/// Detaches: stops the tool's contexts, delivers what they buffered and finalizes the
/// tool; the scenario goes on untraced.
fn detach_tools() {
    stop_contexts(|_| true);
    if let Some(running) = sdk::sdk().and_then(sdk::Sdk::running) {
        running.buffers.iter().for_each(buffer::Buffer::flush);
    }
    finalize_tools();
}

/// `rocprofiler_force_configure`: starts the SDK with `configure` as a tool (and those of
/// `ROCP_TOOL_LIBRARIES`), as tools that start it without preloading do. Like the real SDK
/// it refuses once the SDK is initialized, which under `rocflow run` it already is: the
/// tool is then configured once, not twice.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_force_configure(configure: Option<Configure>) -> abi::Status {
    let Some(configure) = configure else {
        return abi::status::INVALID_ARGUMENT;
    };
    if sdk::phase() != Phase::Loaded || sdk::sdk().is_some() {
        return abi::status::CONFIGURATION_LOCKED;
    }
    initialize(
        Some(configure),
        &std::env::var("ROCP_TOOL_LIBRARIES").unwrap_or_default(),
    );
    abi::status::SUCCESS
}

/// Plays rocprofiler-register and the SDK's initialization: configures each tool once (the
/// forced one first), initializes them and starts the scenario.
fn initialize(forced: Option<Configure>, tools: &str) {
    if sdk::installed().is_none() {
        return;
    }
    let mut entry_points: Vec<Configure> = forced.into_iter().collect();
    for path in clients::tool_list(tools) {
        // A tool found twice (forced and listed, or listed twice) is configured once.
        match entry_point(path) {
            Some(f) if !entry_points.iter().any(|e| std::ptr::fn_addr_eq(*e, f)) => {
                entry_points.push(f);
            }
            _ => {}
        }
    }
    start(&entry_points, None);
}

/// Configures and initializes the tools of `entry_points`, then starts the scenario's
/// threads on the schedule begun at `origin` (now, by default); gives how many tools took
/// part and initialized, or `None` when the simulated device has no scenario.
fn start(entry_points: &[Configure], origin: Option<u64>) -> Option<usize> {
    let sdk = sdk::installed()?;
    // As the real SDK: each tool is told its place in the order as its priority.
    for (priority, configure) in (0..).zip(entry_points) {
        if let Some(tool) = configure_tool(*configure, priority) {
            TOOLS.lock().unwrap().push(tool);
        }
    }
    sdk::set_phase(Phase::Initializing);
    let mut initialized = 0;
    // Copied out: a tool may finalize itself early from its initialize.
    let tools: Vec<(u32, *mut ToolConfigureResult)> = (TOOLS.lock().unwrap().iter())
        .map(|t| (t.client, t.result))
        .collect();
    for (client, result) in tools {
        // SAFETY: the result the tool returned from `rocprofiler_configure`.
        let result = unsafe { &*result };
        if let Some(initialize) = result.initialize {
            // SAFETY: the tool's entry point, with its own data.
            let failed = clients::initializing_as(client, || unsafe {
                initialize(client_finalize, result.tool_data)
            });
            if failed != 0 {
                warn("a tool's initialize failed");
                continue;
            }
        }
        initialized += 1;
    }
    sdk::set_phase(Phase::Running);
    let running = sdk.freeze();
    for (index, ctx) in (running.contexts.iter().enumerate())
        .filter(|(_, c)| c.active.load(std::sync::atomic::Ordering::Acquire))
    {
        workload::report_code_objects(sdk, ctx);
        // Started while the tool initialized: the SDK starts its device counting once the
        // runtime is up, which is now.
        let handle = abi::Handle {
            handle: sdk::CONTEXT_HANDLE_BASE + index as u64,
        };
        device_counting::start(handle, ctx);
    }
    // SAFETY: plain C functions with no preconditions; registered after the tools', so a
    // forked child's tool reconnects before this replays work into it, and at exit this
    // runs before anything the tools registered.
    unsafe {
        libc::pthread_atfork(
            Some(before_fork),
            Some(after_fork_parent),
            Some(after_fork_child),
        );
        libc::atexit(at_exit);
    }
    start_workers(origin);
    Some(initialized)
}

/// Loads one tool library and finds its `rocprofiler_configure`.
fn entry_point(path: &str) -> Option<Configure> {
    // SAFETY: loading a tool library runs its initializers, as rocprofiler-register does.
    let library = match unsafe { libloading::Library::new(path) } {
        Ok(l) => l,
        Err(e) => {
            warn(&format!("cannot load tool {path}: {e}"));
            return None;
        }
    };
    // SAFETY: the symbol has the type rocprofiler-sdk declares.
    let configure = match unsafe { library.get::<Configure>(b"rocprofiler_configure\0") } {
        Ok(f) => *f,
        Err(_) => {
            warn(&format!("{path} exports no rocprofiler_configure"));
            return None;
        }
    };
    // Tools stay loaded for the life of the process.
    std::mem::forget(library);
    Some(configure)
}

/// Calls a tool's `rocprofiler_configure`; `None` when the tool stays out.
fn configure_tool(configure: Configure, priority: u32) -> Option<Tool> {
    let rocflow_core::sdk::SdkVersion(major, minor, patch) = sdk::version();
    let runtime = CString::new(format!("{major}.{minor}.{patch}")).unwrap_or_default();
    let handle = 1 + priority;
    let mut client = ClientId {
        size: size_of::<ClientId>(),
        name: std::ptr::null(),
        handle,
    };
    // SAFETY: the entry point with the arguments rocprofiler-register passes.
    let result = unsafe {
        configure(
            abi::version(major, minor, patch),
            runtime.as_ptr(),
            priority,
            &mut client,
        )
    };
    (!result.is_null()).then_some(Tool {
        result,
        client: handle,
        finalized: false,
    })
}

/// A tool asks to be finalized early: nothing more reaches it. As the real SDK, the only
/// tool of a process stops every context; one of several stops its own contexts and is
/// finalized, and the other tools go on.
unsafe extern "C" fn client_finalize(client: ClientId) {
    let mut tools = TOOLS.lock().unwrap();
    if tools.len() < 2 {
        drop(tools);
        return stop_contexts(|_| true);
    }
    let Some(tool) = tools
        .iter_mut()
        .find(|t| t.client == client.handle && !t.finalized)
    else {
        return;
    };
    tool.finalized = true;
    let result = tool.result;
    drop(tools);
    stop_contexts(|owner| owner == client.handle);
    // SAFETY: the result the tool returned from `rocprofiler_configure`.
    let result = unsafe { &*result };
    if let Some(finalize) = result.finalize {
        // SAFETY: the tool's entry point with its own data.
        unsafe { finalize(result.tool_data) };
    }
}

/// Stops the started contexts of the clients `owned` picks.
fn stop_contexts(owned: impl Fn(u32) -> bool) {
    if let Some(running) = sdk::sdk().and_then(sdk::Sdk::running) {
        for ctx in running.contexts.iter().filter(|c| owned(c.setup.client)) {
            // As the real SDK's finalization stops a started context, which ends its
            // device thread trace.
            if ctx.active.swap(false, std::sync::atomic::Ordering::AcqRel) {
                device_trace::stop(ctx);
            }
        }
    }
}

/// Starts the scenario's threads, on the schedule begun at `origin` (see
/// [`workload::run_thread`]).
fn start_workers(origin: Option<u64>) {
    let Some(sdk) = sdk::sdk() else { return };
    let Some(running) = sdk.running() else { return };
    let mut workers = WORKERS.lock().unwrap();
    for index in 0..sdk.scenario.scenario.threads {
        let spawned = std::thread::Builder::new()
            .name(format!("sim-thread-{index}"))
            .spawn(move || workload::run_thread(sdk, running, index, origin));
        match spawned {
            Ok(handle) => workers.push(handle),
            Err(e) => warn(&format!("cannot start a scenario thread: {e}")),
        }
    }
}

/// At exit: the scenario completes, then the SDK finalizes as the real one does: from then
/// on no context starts, every buffer is flushed and the tools finalize.
extern "C" fn at_exit() {
    for worker in std::mem::take(&mut *WORKERS.lock().unwrap()) {
        let _ = worker.join();
    }
    sdk::set_phase(Phase::Finalizing);
    if let Some(running) = sdk::sdk().and_then(sdk::Sdk::running) {
        running.buffers.iter().for_each(buffer::Buffer::flush);
    }
    stop_contexts(|_| true);
    finalize_tools();
    sdk::set_phase(Phase::Finalized);
}

/// Calls each tool's finalize, once: nothing more reaches them.
fn finalize_tools() {
    // Taken out first: a tool's finalize may call back into the SDK.
    let tools = std::mem::take(&mut *TOOLS.lock().unwrap());
    for tool in tools {
        if tool.finalized {
            continue;
        }
        // SAFETY: the result the tool returned from `rocprofiler_configure`.
        let result = unsafe { &*tool.result };
        if let Some(finalize) = result.finalize {
            // SAFETY: the tool's entry point with its own data.
            unsafe { finalize(result.tool_data) };
        }
    }
}

thread_local! {
    /// Buffer and ledger locks held across a fork, so the child finds nothing half done.
    static HELD: std::cell::RefCell<Vec<Box<dyn std::any::Any>>> = const { std::cell::RefCell::new(Vec::new()) };
}

extern "C" fn before_fork() {
    let Some(running) = sdk::sdk().and_then(sdk::Sdk::running) else {
        return;
    };
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        for buffer in &running.buffers {
            held.push(Box::new(buffer.hold_for_fork()));
        }
        // A device read or a dispatch entering the ledger holds no other lock meanwhile.
        for ledger in running.ledger.lock_all() {
            held.push(Box::new(ledger));
        }
    });
}

extern "C" fn after_fork_parent() {
    HELD.with(|held| held.borrow_mut().clear());
}

/// The child is a process of its own: it keeps the setup, drops the parent's pending
/// records and threads, and replays the scenario.
extern "C" fn after_fork_child() {
    if sdk::sdk().and_then(sdk::Sdk::running).is_none() {
        return;
    }
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        for guard in held.drain(..) {
            if let Ok(buffer) = guard.downcast::<buffer::HeldForFork<'static>>() {
                buffer.forget_the_parent();
            }
        }
    });
    // The parent's threads do not exist here; their handles must not be joined.
    std::mem::forget(std::mem::take(&mut *WORKERS.lock().unwrap()));
    start_workers(None);
}
