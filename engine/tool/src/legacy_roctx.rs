//! ROCTx without rocprofiler-sdk's marker library. An application whose ROCTx is the
//! legacy library (roctracer's `libroctx64.so`, which PyTorch uses) never reaches the SDK,
//! and in a late start (the SDK started by `rocprofiler_force_configure` after the
//! application's ROCTx registered with rocprofiler-register) neither does the SDK's own.
//! The legacy library hands each call to the one tracer callback a tool registers with
//! `roctxRegisterTracerCallback`, as Triton's Proton takes ROCTx: the tool turns those
//! calls into the records the SDK's `marker_core_range_api` buffers (a mark, a thread
//! range from push to pop, a process range from start to stop), with their messages, and
//! sends them in batches.
//!
//! The legacy library holds one callback: registering replaces another tool's, so the
//! tool registers only where the application's ROCTx is that library and a context traces
//! ROCTx ranges ([`register_for`]); a session registers at its start with [`register`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rocflow_core::record::{Marker, Sym};
use rocflow_core::sdk::Domain;
use rocflow_core::wire::RecordsFrame;

use crate::guard::{entry, locked};
use crate::state::{Tool, tool};
use crate::stream;

/// The legacy library's `activity_domain_t` for ROCTx.
const DOMAIN_ROCTX: u32 = 6;
/// The legacy library's operations (`roctx_api_id_t`).
mod operation {
    pub const MARK: u32 = 0;
    pub const PUSH: u32 = 1;
    pub const POP: u32 = 2;
    pub const START: u32 = 3;
    pub const STOP: u32 = 4;
}
/// `rocprofiler_marker_core_range_api_id_t` of the records made.
mod range_api {
    pub const MARK: i32 = 0;
    pub const THREAD_RANGE: i32 = 1;
    pub const PROCESS_RANGE: i32 = 2;
}
/// The names the legacy library is loaded under.
const LIBRARIES: [&CStr; 2] = [c"libroctx64.so.4", c"libroctx64.so"];
/// Correlation ids of the records made here, apart from the SDK's (which count from 1).
const CORRELATION_BASE: u64 = 1 << 63;
/// Records held before they are sent without waiting for a flush.
const BATCH: usize = 1024;

/// What the legacy library passes with each call (`roctx_api_data_t`): the message, and
/// a process range's id.
#[repr(C)]
struct CallData {
    message: *const c_char,
    id: u64,
}

type TracerCallback = unsafe extern "C" fn(domain: u32, operation: u32, data: *mut c_void) -> c_int;
type RegisterTracer = unsafe extern "C" fn(callback: Option<TracerCallback>);

/// The operations of `marker_core_range_api` the plan traces (`None`: none traced).
static TRACED: OnceLock<Option<Vec<i32>>> = OnceLock::new();
/// Whether calls become records now: while a context tracing ROCTx ranges runs.
static COLLECTING: AtomicBool = AtomicBool::new(false);
static NEXT_CORRELATION: AtomicU64 = AtomicU64::new(CORRELATION_BASE);
/// Records not sent yet, with the threads they name.
static PENDING: Mutex<Vec<Marker>> = Mutex::new(Vec::new());
/// A mark, or a range from its beginning: when, on which thread, and its correlation id.
#[derive(Clone, Copy)]
struct Begun {
    start_ns: u64,
    tid: u32,
    correlation_id: u64,
}

/// Process ranges started and not stopped, by range id.
static PROCESS_RANGES: Mutex<Option<HashMap<u64, Begun>>> = Mutex::new(None);

thread_local! {
    /// This thread's pushed ranges.
    static PUSHED: RefCell<Vec<Begun>> = const { RefCell::new(Vec::new()) };
}

/// `roctxRegisterTracerCallback` of the legacy library in the process, if it is there.
fn legacy_library() -> Option<RegisterTracer> {
    let symbol = c"roctxRegisterTracerCallback";
    // SAFETY: looking up a NUL-terminated name.
    let mut found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) };
    for name in LIBRARIES {
        if !found.is_null() {
            break;
        }
        // SAFETY: NOLOAD opens only a library already loaded.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if !handle.is_null() {
            // SAFETY: a handle just opened; the library stays loaded (the application's).
            found = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
        }
    }
    // SAFETY: the legacy library's function has this type.
    (!found.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, RegisterTracer>(found) })
}

/// Whether the application's `roctxMarkA` is the legacy library's: its ROCTx calls then
/// never reach the SDK.
fn application_roctx_is_legacy() -> bool {
    // SAFETY: looking up NUL-terminated names.
    let (mark, register) = unsafe {
        (
            libc::dlsym(libc::RTLD_DEFAULT, c"roctxMarkA".as_ptr()),
            libc::dlsym(libc::RTLD_DEFAULT, c"roctxRegisterTracerCallback".as_ptr()),
        )
    };
    !mark.is_null() && !register.is_null() && same_object(mark, register)
}

/// Whether two addresses are in the same loaded object.
fn same_object(a: *mut c_void, b: *mut c_void) -> bool {
    let base = |address| {
        // SAFETY: `dladdr` fills a zeroed struct for a code address.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        (unsafe { libc::dladdr(address, &mut info) } != 0).then_some(info.dli_fbase)
    };
    base(a).is_some_and(|a| Some(a) == base(b))
}

/// Registers the tool's callback with the legacy ROCTx library, if the process has it and
/// the plan traces ROCTx ranges: for a session started late, where the SDK's marker
/// library never hears of the application's ROCTx. Calls become records only while
/// [`collect`] says so. `true` when registered.
pub fn register(tool: &Tool) -> bool {
    let traced = TRACED.get_or_init(|| {
        (tool.plan.contexts.iter())
            .flat_map(|c| &c.tracing)
            .find(|t| t.domain == Domain::MarkerCoreRangeApi)
            .map(|t| t.operations.clone().unwrap_or_else(|| vec![0, 1, 2]))
    });
    let Some(register) = traced.as_ref().and(legacy_library()) else {
        return false;
    };
    // SAFETY: the library's function, with a callback of the type it calls.
    unsafe { register(Some(on_call)) };
    true
}

/// [`register`], where the application's ROCTx is the legacy library (its calls never
/// reach the SDK, however it started); called as the tool initializes.
pub fn register_for(tool: &Tool) -> bool {
    application_roctx_is_legacy() && register(tool)
}

/// Starts or stops turning calls into records, with the context that traces ROCTx ranges.
pub fn collect(on: bool) {
    COLLECTING.store(on, Ordering::Release);
}

/// Whether the plan's context `name` traces ROCTx ranges (and so decides [`collect`]).
pub fn traced_by(tool: &Tool, name: &str) -> bool {
    (tool.plan.contexts.iter())
        .filter(|c| c.name == name)
        .flat_map(|c| &c.tracing)
        .any(|t| t.domain == Domain::MarkerCoreRangeApi)
}

/// Sends the records held, after the threads and messages they name.
pub fn flush() {
    let markers = std::mem::take(&mut *locked(PENDING.lock()));
    if markers.is_empty() {
        return;
    }
    let _pin = stream::pin();
    let pid = std::process::id();
    let mut tids: Vec<u64> = markers.iter().map(|m| u64::from(m.tid)).collect();
    tids.dedup();
    let (tids, _) = stream::unseen(&tids, &[]);
    stream::send_meta(
        (tids.into_iter())
            .map(|tid| crate::records::thread(pid, tid))
            .collect(),
    );
    crate::messages::send();
    let mut frame = RecordsFrame::new(stream::frame_buffer());
    markers.into_iter().for_each(|m| frame.push(m));
    stream::send([frame.finish(0)]);
}

/// The legacy library's tracer callback: one ROCTx call, on the caller's thread.
unsafe extern "C" fn on_call(domain: u32, operation: u32, data: *mut c_void) -> c_int {
    if domain != DOMAIN_ROCTX || !COLLECTING.load(Ordering::Acquire) {
        return 0;
    }
    entry("the ROCTx tracer callback", 0, || {
        let Some(tool) = tool() else { return 0 };
        // SAFETY: the library passes its call data, alive during the call.
        let data = unsafe { data.cast::<CallData>().as_ref() };
        call(tool, operation, data);
        0
    })
}

/// Turns one call into the record it completes, if any.
fn call(tool: &Tool, operation: u32, data: Option<&CallData>) {
    let now = tool.api.timestamp();
    // SAFETY: a syscall with no arguments.
    let tid = unsafe { libc::gettid() } as u32;
    let message = data.map_or(std::ptr::null(), |d| d.message);
    let begin = || Begun {
        start_ns: now,
        tid,
        correlation_id: hold(message),
    };
    let record = match operation {
        operation::MARK => Some((range_api::MARK, begin())),
        operation::PUSH => {
            let begun = begin();
            PUSHED.with(|p| p.borrow_mut().push(begun));
            None
        }
        operation::POP => PUSHED
            .with(|p| p.borrow_mut().pop())
            .map(|begun| (range_api::THREAD_RANGE, begun)),
        operation::START => {
            let begun = begin();
            let id = data.map_or(0, |d| d.id);
            let mut ranges = locked(PROCESS_RANGES.lock());
            ranges.get_or_insert_default().insert(id, begun);
            None
        }
        operation::STOP => {
            let id = data.map_or(0, |d| d.id);
            let begun = locked(PROCESS_RANGES.lock())
                .as_mut()
                .and_then(|r| r.remove(&id));
            begun.map(|begun| (range_api::PROCESS_RANGE, begun))
        }
        _ => None,
    };
    let Some((operation_id, begun)) = record else {
        return;
    };
    let traced = TRACED.get().and_then(Option::as_ref);
    if !traced.is_some_and(|ops| ops.contains(&operation_id)) {
        return;
    }
    let full = {
        let mut pending = locked(PENDING.lock());
        pending.push(Marker {
            pid: std::process::id(),
            tid: begun.tid,
            start_ns: begun.start_ns,
            end_ns: now,
            correlation_id: begun.correlation_id,
            external_id: 0,
            domain_id: Domain::MarkerCoreRangeApi.sdk_value() as u8,
            operation_id,
            message: Sym(0),
        });
        pending.len() >= BATCH
    };
    if full {
        flush();
    }
}

/// A correlation id for a record to come, with `message` held for it.
fn hold(message: *const c_char) -> u64 {
    let correlation = NEXT_CORRELATION.fetch_add(1, Ordering::Relaxed);
    if !message.is_null() {
        // SAFETY: ROCTx messages are NUL-terminated strings, alive during the call.
        crate::messages::hold(correlation, unsafe { CStr::from_ptr(message) });
    }
    correlation
}

/// Takes the tool's callback back, so the library calls no tool that has finalized.
pub fn unregister() {
    if TRACED.get().is_some_and(Option::is_some)
        && let Some(register) = legacy_library()
    {
        // SAFETY: the library's function; null unregisters.
        unsafe { register(None) };
    }
}
