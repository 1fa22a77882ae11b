//! rocprofiler-sdk's kernel replay (1.4.1, experimental): a callback tracing kind whose
//! callbacks let a tool run one dispatch several times, one pass each, in a single run
//! of the application. No released header gives the kind's enum value, so a tool finds
//! it by its name ([`KIND_NAME`]) among the kinds the SDK in the process lists.

use std::ffi::c_int;

use super::{Handle, KernelDispatchInfo, Layout, Status, UserData};

/// The kind's name as `rocprofiler_query_callback_tracing_kind_name` gives it: the SDK
/// names each kind by its enum name without the `ROCPROFILER_CALLBACK_TRACING_` prefix.
pub const KIND_NAME: &str = "KERNEL_REPLAY";

/// `rocprofiler_kernel_replay_operation_t`: once per dispatch, before its passes, the
/// tool says how many passes it wants.
pub const CONFIG: i32 = 1;
/// Around each pass.
pub const PASS: i32 = 2;

/// `rocprofiler_kernel_replay_pass_count_cb_t`: how many passes a dispatch runs; 1 (or
/// none set) runs it once, unreplayed.
pub type PassCountFn = unsafe extern "C" fn(KernelDispatchInfo, UserData) -> u64;
/// `rocprofiler_kernel_replay_continue_cb_t`: after a pass, whether another follows.
pub type ContinueFn = unsafe extern "C" fn(KernelDispatchInfo, u64, u64, UserData) -> c_int;
/// `rocprofiler_kernel_replay_context_cb_t`: starts or stops a context for the passes
/// that follow, within this dispatch's replay only.
pub type ContextFn = unsafe extern "C" fn(Handle) -> Status;

abi! {
    /// `rocprofiler_callback_tracing_kernel_replay_data_t`, the payload of both
    /// operations. The tool writes the two callbacks at CONFIG's enter; the SDK writes the
    /// pass fields and the context callbacks for PASS.
    pub struct KernelReplayData = ["rocprofiler_callback_tracing_kernel_replay_data_t"] {
        size: u64,
        dispatch_info: KernelDispatchInfo,
        /// From 0.
        current_pass: u64,
        /// 0 while a loop runs until `replay_continue` ends it.
        total_passes: u64,
        replay_pass_count: Option<PassCountFn>,
        replay_continue: Option<ContinueFn>,
        replay_start_context: Option<ContextFn>,
        replay_stop_context: Option<ContextFn>,
    }
}

impl KernelReplayData {
    /// The payload of a dispatch's CONFIG: nothing chosen yet, no pass.
    pub fn config(dispatch_info: KernelDispatchInfo) -> KernelReplayData {
        KernelReplayData {
            size: size_of::<KernelReplayData>() as u64,
            dispatch_info,
            current_pass: 0,
            total_passes: 0,
            replay_pass_count: None,
            replay_continue: None,
            replay_start_context: None,
            replay_stop_context: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout AMD's ABI test pins (`size` first, `dispatch_info` right after it, then
    /// the pass fields and the four callbacks in this order, none overlapping, no tail
    /// reserve), with `rocprofiler_kernel_dispatch_info_t`'s size from the measured 1.0
    /// headers, which the kernel-replay header reuses unchanged.
    #[test]
    fn layout_is_the_one_amd_pins() {
        let info = size_of::<KernelDispatchInfo>();
        assert_eq!(info, 128, "rocprofiler_kernel_dispatch_info_t");
        let expected = [
            ("size", 0, 8),
            ("dispatch_info", 8, info),
            ("current_pass", 8 + info, 8),
            ("total_passes", 16 + info, 8),
            ("replay_pass_count", 24 + info, 8),
            ("replay_continue", 32 + info, 8),
            ("replay_start_context", 40 + info, 8),
            ("replay_stop_context", 48 + info, 8),
        ];
        let fields = KernelReplayData::fields();
        assert_eq!(fields, expected.to_vec());
        assert_eq!(size_of::<KernelReplayData>(), 56 + info, "no tail reserve");
        assert_eq!(align_of::<KernelReplayData>(), align_of::<u64>());
    }

    /// A zeroed payload opts out of replay: no pass count, no callbacks.
    #[test]
    fn a_fresh_config_payload_replays_nothing() {
        let info = KernelDispatchInfo {
            size: size_of::<KernelDispatchInfo>() as u64,
            agent_id: Handle { handle: 1 },
            queue_id: Handle { handle: 2 },
            kernel_id: 3,
            dispatch_id: 4,
            private_segment_size: 0,
            group_segment_size: 0,
            workgroup_size: super::super::Dim3 { x: 1, y: 1, z: 1 },
            grid_size: super::super::Dim3 { x: 1, y: 1, z: 1 },
            reserved_padding: [0; 56],
        };
        let data = KernelReplayData::config(info);
        assert_eq!(data.size as usize, size_of::<KernelReplayData>());
        assert!(data.replay_pass_count.is_none() && data.replay_continue.is_none());
        assert_eq!((data.current_pass, data.total_passes), (0, 0));
        assert_eq!(data.dispatch_info.dispatch_id, 4);
    }
}
