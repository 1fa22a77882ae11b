//! Kernel replay as rocprofiler-sdk 1.4.1 runs it: a callback tracing kind whose
//! subscriber chooses, per dispatch, how many times the dispatch runs. The simulated SDK
//! gives the kind a value of its own (the released headers name none) and reports it by
//! name, as the real SDK names every kind, so a tool must look it up as on a GPU. The
//! callback kinds' names and their lookup live here too.

use std::ffi::{CStr, c_char, c_int, c_void};

use rocflow_core::abi::kernel_replay::{CONFIG, KernelReplayData, PASS};
use rocflow_core::abi::{
    CallbackTracingRecord, KernelDispatchInfo, Status, UserData, callback, status,
};
use rocflow_core::sdk::{Domain, KERNEL_REPLAY, SdkVersion};

use crate::sdk::{Subscription, version};

/// The simulated SDK's value of `ROCPROFILER_CALLBACK_TRACING_KERNEL_REPLAY`: past the
/// kinds of SDK 1.0, and deliberately not next to them, so that a tool that guesses the
/// value instead of looking up the name misses it.
pub const KIND: i32 = 40;

/// `rocprofiler_callback_tracing_kind_t` of SDK 1.0 by value, named as the SDK names
/// them.
const KINDS_1_0: [&CStr; 22] = [
    c"NONE",
    c"HSA_CORE_API",
    c"HSA_AMD_EXT_API",
    c"HSA_IMAGE_EXT_API",
    c"HSA_FINALIZE_EXT_API",
    c"HIP_RUNTIME_API",
    c"HIP_COMPILER_API",
    c"MARKER_CORE_API",
    c"MARKER_CONTROL_API",
    c"MARKER_NAME_API",
    c"CODE_OBJECT",
    c"SCRATCH_MEMORY",
    c"KERNEL_DISPATCH",
    c"MEMORY_COPY",
    c"RCCL_API",
    c"OMPT",
    c"MEMORY_ALLOCATION",
    c"RUNTIME_INITIALIZATION",
    c"ROCDECODE_API",
    c"ROCJPEG_API",
    c"HIP_STREAM",
    c"MARKER_CORE_RANGE_API",
];

/// Whether SDK `sdk` replays kernels.
fn available(sdk: SdkVersion) -> bool {
    sdk >= KERNEL_REPLAY.sdk
}

/// A callback tracing kind's name, if SDK `sdk` has the kind.
fn kind_name(kind: i32, sdk: SdkVersion) -> Option<&'static CStr> {
    match kind {
        KIND if available(sdk) => Some(c"KERNEL_REPLAY"),
        crate::graph::KIND if Domain::HipGraph.in_sdk(sdk) => Some(c"HIP_GRAPH"),
        _ => usize::try_from(kind)
            .ok()
            .and_then(|k| KINDS_1_0.get(k).copied()),
    }
}

/// Whether a tool may subscribe to `kind` (`NONE` is no kind).
pub fn subscribable(kind: i32) -> bool {
    kind != 0 && kind_name(kind, version()).is_some()
}

/// `rocprofiler_callback_tracing_kind_cb_t`.
type KindCallback = unsafe extern "C" fn(c_int, *mut c_void) -> c_int;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_iterate_callback_tracing_kinds(
    callback: Option<KindCallback>,
    data: *mut c_void,
) -> Status {
    let Some(callback) = callback else {
        return status::INVALID_ARGUMENT;
    };
    let replay = available(version()).then_some(KIND);
    let graphs = Domain::HipGraph.in_sdk(version()).then_some(crate::graph::KIND);
    for kind in (0..KINDS_1_0.len() as i32).chain(graphs).chain(replay) {
        // SAFETY: the tool's callback with its data; a non-zero return stops, as the SDK.
        if unsafe { callback(kind, data) } != 0 {
            break;
        }
    }
    status::SUCCESS
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn rocprofiler_query_callback_tracing_kind_name(
    kind: c_int,
    name: *mut *const c_char,
    name_len: *mut u64,
) -> Status {
    let found = kind_name(kind, version());
    if !name.is_null() {
        // SAFETY: checked non-null; the caller passes a writable pointer.
        unsafe { *name = found.map_or(std::ptr::null(), CStr::as_ptr) };
    }
    if !name_len.is_null() {
        // SAFETY: as above.
        unsafe { *name_len = found.map_or(0, |n| n.to_bytes().len() as u64) };
    }
    match found {
        Some(_) => status::SUCCESS,
        None => status::KIND_NOT_FOUND,
    }
}

/// How the runtime handed a dispatch to its queue, as the SDK's replay gate sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// One kernel dispatch packet on its own: what the SDK replays.
    Packet,
    /// A kernel node of a HIP graph launch.
    GraphLaunch,
}

/// Whether the SDK replays a dispatch submitted as `submission`. It replays single-packet
/// kernel dispatches outside HIP graph launches only; any other submission runs once on
/// the ordinary path, without asking the subscriber for passes, and the SDK warns once.
pub fn replays(submission: Submission) -> bool {
    static WARNED: std::sync::Once = std::sync::Once::new();
    match submission {
        Submission::Packet => true,
        Submission::GraphLaunch => {
            WARNED.call_once(|| {
                crate::warn("kernel replay does not replay the dispatches of a HIP graph launch: they run once")
            });
            false
        }
    }
}

/// Runs a dispatch as the subscriber of kernel replay asks: CONFIG (where it may set the
/// pass count and continue callbacks), then `run` once per pass between PASS's enter and
/// exit, all on this thread. A dispatch the subscriber does not replay runs once, outside
/// any pass. One user data value goes with the dispatch through every callback.
///
/// `run` is given when its pass runs, in passes from the dispatch's own time: the SDK
/// fires the application's completion once, after the last pass, and leaves memory as the
/// last pass wrote it, so the last pass is the application's own execution and runs at
/// the dispatch's time, the passes before it earlier (a fixed loop's length is known when
/// it starts). An open-ended loop's last pass is not known while it runs: its passes follow
/// one another from the dispatch's time.
pub fn run(
    replayer: &Subscription,
    info: &KernelDispatchInfo,
    record: CallbackTracingRecord,
    mut run: impl FnMut(i64),
) {
    let mut data = KernelReplayData::config(*info);
    let mut user = UserData { value: 0 };
    let call = |data: &mut KernelReplayData, user: &mut UserData, operation, phase| {
        let record = CallbackTracingRecord {
            kind: KIND,
            operation,
            phase,
            payload: (data as *mut KernelReplayData).cast(),
            ..record
        };
        // SAFETY: the tool's callback with the arguments the SDK passes.
        unsafe { (replayer.callback)(record, user, replayer.data) };
    };
    call(&mut data, &mut user, CONFIG, callback::PHASE_ENTER);
    call(&mut data, &mut user, CONFIG, callback::PHASE_EXIT);
    let (count, proceed) = (data.replay_pass_count, data.replay_continue);
    // SAFETY: the tool's callback, with the dispatch and its user data.
    let passes = count.map_or(1, |count| unsafe { count(*info, user) });
    // An open-ended loop needs a way out; the SDK warns and runs the dispatch once.
    if passes == 1 || (passes == 0 && proceed.is_none()) {
        run(0);
        return;
    }
    let mut pass = 0;
    loop {
        let mut data = KernelReplayData {
            current_pass: pass,
            total_passes: passes,
            ..KernelReplayData::config(*info)
        };
        call(&mut data, &mut user, PASS, callback::PHASE_ENTER);
        run(match passes {
            0 => pass as i64,
            n => -((n - 1 - pass) as i64),
        });
        call(&mut data, &mut user, PASS, callback::PHASE_EXIT);
        pass += 1;
        let last = passes != 0 && pass == passes;
        // The continue callback decides whether a further pass follows, never past the
        // count.
        // SAFETY: the tool's callback, with the pass that ended.
        let further = !last
            && proceed.is_none_or(|proceed| unsafe { proceed(*info, pass - 1, passes, user) } != 0);
        if !further {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_is_named_from_1_4_1_on_and_the_kinds_of_1_0_always() {
        assert_eq!(kind_name(KIND, SdkVersion(1, 4, 1)), Some(c"KERNEL_REPLAY"));
        assert_eq!(kind_name(KIND, SdkVersion(1, 3, 5)), None);
        assert_eq!(kind_name(KIND, SdkVersion(1, 0, 0)), None);
        let range = callback::MARKER_CORE_RANGE_API;
        assert_eq!(
            kind_name(range, SdkVersion(1, 0, 0)),
            Some(c"MARKER_CORE_RANGE_API")
        );
        assert_eq!(
            kind_name(callback::CODE_OBJECT, SdkVersion(1, 4, 1)),
            Some(c"CODE_OBJECT")
        );
        assert_eq!(kind_name(22, SdkVersion(1, 4, 1)), None);
    }
}
