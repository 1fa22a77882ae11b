//! Kernel replay: every dispatch a counter context counts runs once per counter pass, in
//! one run of the application (rocprofiler-sdk 1.4.1's experimental callback tracing
//! kind). The kind has no released enum value, so it is found by its name among the
//! kinds the SDK lists. At each dispatch's CONFIG the tool hands the SDK its pass-count
//! callback; each pass runs on the submitting thread between PASS's enter and exit, so a
//! thread-local pass tells the counting callback which pass's counters to choose.
//!
//! The SDK writes a dispatch trace record and a counter record set for every pass, all
//! with the dispatch's id, each with its pass's times. It fires the application's
//! completion once, after the last pass, and leaves device memory as the last pass wrote
//! it: the last pass is the application's own execution. The tool keeps that pass's
//! dispatch record and leaves out the others, counting them ([`PassRecords`]), and merges
//! the passes' counter values into one set with the last pass's time, so every output
//! counts a replayed dispatch once (rocprofv3 writes a dispatch row per pass).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::{LazyLock, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use rocflow_core::abi::kernel_replay::{CONFIG, KIND_NAME, KernelReplayData, PASS};
use rocflow_core::abi::{CallbackTracingRecord, Handle, KernelDispatchInfo, UserData, callback};
use rocflow_core::sdk::KERNEL_REPLAY;

use crate::api::{CallError, MissingSymbol};
use crate::guard::{entry, locked};
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

/// The passes of each dispatch the SDK replays, by dispatch id, set when the SDK asks for
/// them, before any pass runs: the buffers' records of the passes come after. Entries
/// stay for the process, as every buffer that holds the dispatch's records reads them; 16
/// bytes are nothing beside the copy of the GPU's memory each replayed dispatch costs.
static REPLAYS: LazyLock<Mutex<FxHashMap<u64, u64>>> = LazyLock::new(Mutex::default);

/// Dispatches the replaying context counts that the SDK ran once, outside any pass, by
/// kernel id: it replays single-packet dispatches outside HIP graph launches only, so
/// these have the first pass's counters alone. Taken by each buffer delivery.
static UNREPLAYED: LazyLock<Mutex<FxHashMap<u64, u64>>> = LazyLock::new(Mutex::default);

/// How many passes the SDK runs dispatch `dispatch_id` for, if it replays it.
pub fn passes_of(dispatch_id: u64) -> Option<u64> {
    // Most runs replay nothing: their records skip the lock.
    REPLAYED.get()?;
    locked(REPLAYS.lock()).get(&dispatch_id).copied()
}

/// A buffer's dispatch records of replayed dispatches: which one is the application's own
/// execution (the last pass's), and how many passes' records were left out.
#[derive(Default)]
pub struct PassRecords {
    /// Records seen so far of dispatches whose last pass's has not come yet.
    seen: FxHashMap<u64, u64>,
    /// Records left out since [`PassRecords::take_left_out`].
    left_out: u64,
}

impl PassRecords {
    /// Whether to keep a dispatch record of dispatch `dispatch_id`: every record of a
    /// dispatch run once, and the last pass's of a replayed one. The SDK writes a
    /// dispatch's passes in order, on the thread that runs them.
    pub fn keep(&mut self, dispatch_id: u64) -> bool {
        let Some(passes) = passes_of(dispatch_id) else {
            return true;
        };
        let seen = self.seen.entry(dispatch_id).or_default();
        *seen += 1;
        if *seen < passes {
            self.left_out += 1;
            return false;
        }
        self.seen.remove(&dispatch_id);
        true
    }

    /// The records left out since the last call.
    pub fn take_left_out(&mut self) -> u64 {
        std::mem::take(&mut self.left_out)
    }
}

/// The pass whose counters a dispatch counted in `passes` passes gets: the one under way
/// on this thread, else the first. One of several passes counted outside any pass was not
/// replayed: it is noted for [`take_unreplayed`], and its records are those of one run
/// even if the SDK had asked for its passes.
pub fn counting_pass(info: &KernelDispatchInfo, passes: usize) -> usize {
    CURRENT_PASS.get().unwrap_or_else(|| {
        if passes > 1 {
            *locked(UNREPLAYED.lock()).entry(info.kernel_id).or_default() += 1;
            locked(REPLAYS.lock()).remove(&info.dispatch_id);
        }
        0
    })
}

/// The dispatches counted without replay since the last call, by kernel id.
pub fn take_unreplayed() -> Vec<(u64, u64)> {
    if REPLAYED.get().is_none() {
        return Vec::new();
    }
    let mut taken: Vec<(u64, u64)> = locked(UNREPLAYED.lock()).drain().collect();
    taken.sort_unstable();
    taken
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
    let kind = crate::callback_kind::find(KIND_NAME)?.ok_or(ReplayError::NoKind)?;
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
        if passes > 1 {
            locked(REPLAYS.lock()).insert(info.dispatch_id, passes as u64);
        }
        passes as u64
    })
}
