//! Kernel replay: every dispatch a counter context counts runs once per counter pass, in
//! one run of the application (rocprofiler-sdk 1.4.1's experimental callback tracing
//! kind). The kind has no released enum value, so it is found by its name among the
//! kinds the SDK lists. At each dispatch's CONFIG the tool hands the SDK its pass-count
//! callback; each pass runs on the submitting thread between PASS's enter and exit, so a
//! thread-local pass tells the counting callback which pass's counters to choose.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use rocflow_core::abi::kernel_replay::{CONFIG, KIND_NAME, KernelReplayData, PASS};
use rocflow_core::abi::{CallbackTracingRecord, Handle, KernelDispatchInfo, Status, UserData};
use rocflow_core::abi::{callback, status};
use rocflow_core::sdk::KERNEL_REPLAY;

use crate::api::{CallError, MissingSymbol};
use crate::guard::entry;
use crate::state::Tool;

/// Why a context cannot replay its dispatches.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Missing(#[from] MissingSymbol),
    #[error(
        "the rocprofiler-sdk in this process has no kernel replay (it lists no callback tracing kind `{KIND_NAME}`); {KERNEL_REPLAY} added it"
    )]
    NoKind,
    #[error("a second context asks for kernel replay, which one context only may drive")]
    Twice,
    #[error(transparent)]
    Sdk(#[from] CallError),
}

/// How a context that replays decides a dispatch's passes.
pub trait Passes: Sync {
    /// Whether the context takes the dispatch (`None` where it counts nothing on the
    /// dispatch's agent), and how many passes run it: 1 when it is not taken.
    fn passes(&self, info: &KernelDispatchInfo) -> (Option<bool>, usize);
}

/// The context that replays (the SDK lets one context replay).
static REPLAYED: OnceLock<&'static dyn Passes> = OnceLock::new();

thread_local! {
    /// The pass under way on this thread, from PASS's enter to its exit.
    static CURRENT_PASS: Cell<Option<usize>> = const { Cell::new(None) };
    /// The last dispatch this thread was asked passes for, and whether the context's
    /// filter takes it: decided once, as the dispatch counts once however often it runs.
    static DECIDED: Cell<Option<(u64, bool)>> = const { Cell::new(None) };
}

/// The pass of a replayed dispatch under way on this thread, if any.
pub fn current_pass() -> Option<usize> {
    CURRENT_PASS.get()
}

/// Whether the context takes dispatch `dispatch_id`, if this thread decided it when the
/// SDK asked for its passes.
pub fn decided(dispatch_id: u64) -> Option<bool> {
    DECIDED
        .get()
        .and_then(|(id, taken)| (id == dispatch_id).then_some(taken))
}

/// Subscribes `context` to kernel replay, its dispatches' passes decided by `passes`.
pub fn subscribe(
    tool: &Tool,
    context: Handle,
    passes: &'static dyn Passes,
) -> Result<(), ReplayError> {
    let kind = find_kind()?.ok_or(ReplayError::NoKind)?;
    REPLAYED.set(passes).map_err(|_| ReplayError::Twice)?;
    // SAFETY: all operations; the callback has the SDK's signature and uses no data.
    let status = unsafe {
        (tool.api.configure_callback_tracing)(
            context,
            kind,
            std::ptr::null(),
            0,
            Some(on_replay),
            std::ptr::null_mut(),
        )
    };
    Ok(tool.api.check("subscribing to kernel replay", status)?)
}

/// `rocprofiler_callback_tracing_kind_cb_t`.
type KindCallback = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;
type IterateKinds = unsafe extern "C" fn(Option<KindCallback>, *mut c_void) -> Status;
type KindName = unsafe extern "C" fn(c_int, *mut *const c_char, *mut u64) -> Status;

/// The value of the kind named [`KIND_NAME`] in this process's SDK, if it has one.
fn find_kind() -> Result<Option<c_int>, MissingSymbol> {
    const ITERATE: &str = "rocprofiler_iterate_callback_tracing_kinds";
    const NAME: &str = "rocprofiler_query_callback_tracing_kind_name";
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbols have the types the SDK's header declares.
    let (iterate, name) = unsafe {
        (
            *this
                .get::<IterateKinds>(b"rocprofiler_iterate_callback_tracing_kinds\0")
                .map_err(|_| MissingSymbol(ITERATE))?,
            *this
                .get::<KindName>(b"rocprofiler_query_callback_tracing_kind_name\0")
                .map_err(|_| MissingSymbol(NAME))?,
        )
    };
    let mut kinds: Vec<c_int> = Vec::new();
    // SAFETY: `kinds` outlives the call; the callback matches.
    unsafe { iterate(Some(list_kind), (&mut kinds as *mut Vec<c_int>).cast()) };
    Ok(kinds.into_iter().find(|&kind| {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: writable out-parameters; the length is not asked for.
        let status = unsafe { name(kind, &mut text, std::ptr::null_mut()) };
        // SAFETY: the SDK's names are static NUL-terminated strings.
        status == status::SUCCESS
            && !text.is_null()
            && unsafe { CStr::from_ptr(text) }.to_bytes() == KIND_NAME.as_bytes()
    }))
}

/// Adds a kind the SDK lists to the `Vec<c_int>` at `data`.
unsafe extern "C" fn list_kind(kind: c_int, data: *mut c_void) -> c_int {
    entry("kernel_replay::list_kind", 1, || {
        // SAFETY: `data` is the vector `find_kind` passed.
        unsafe { (*data.cast::<Vec<c_int>>()).push(kind) };
        0
    })
}

/// The kernel replay kind's callback: the pass count at CONFIG, the pass under way
/// between PASS's enter and exit.
unsafe extern "C" fn on_replay(
    record: CallbackTracingRecord,
    _user: *mut UserData,
    _data: *mut c_void,
) {
    entry("kernel_replay::on_replay", (), || {
        let data = record.payload.cast::<KernelReplayData>();
        if data.is_null() {
            return;
        }
        // SAFETY: the SDK's payload for the kind, valid for the call.
        let data = unsafe { &mut *data };
        match (record.operation, record.phase) {
            (CONFIG, callback::PHASE_ENTER) => {
                // An SDK with a shorter payload has no place for the callback.
                let end =
                    std::mem::offset_of!(KernelReplayData, replay_pass_count) + size_of::<usize>();
                if data.size as usize >= end {
                    data.replay_pass_count = Some(pass_count);
                }
            }
            (PASS, callback::PHASE_ENTER) => CURRENT_PASS.set(Some(data.current_pass as usize)),
            (PASS, callback::PHASE_EXIT) => CURRENT_PASS.set(None),
            _ => {}
        }
    });
}

/// `rocprofiler_kernel_replay_pass_count_cb_t`: the passes of the dispatch's agent if
/// the context takes the dispatch, else 1 (it runs once, unreplayed).
unsafe extern "C" fn pass_count(info: KernelDispatchInfo, _user: UserData) -> u64 {
    entry("kernel_replay::pass_count", 1, || {
        let Some(replayed) = REPLAYED.get() else {
            return 1;
        };
        let (taken, passes) = replayed.passes(&info);
        DECIDED.set(taken.map(|taken| (info.dispatch_id, taken)));
        passes as u64
    })
}
