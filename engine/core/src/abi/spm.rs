//! SPM, streaming performance monitors (`rocprofiler-sdk/experimental/spm.h`, a beta since
//! rocprofiler-sdk 1.3.0): a dispatch's counters streamed at an interval of shader clock
//! cycles. A buffered dispatch's samples arrive in the counters category, as dispatch
//! counting's do: a header ([`SpmDispatchData`]) then one [`SpmCounterRecord`] per
//! sample and instance.

use std::ffi::c_void;

use super::{AsyncCorrelationId, Handle, KernelDispatchInfo, Layout, Status, UserData};

/// The environment variable without which every SPM call answers NOT_IMPLEMENTED.
pub const SPM_BETA: &str = "ROCPROFILER_SPM_BETA_ENABLED";

/// `rocprofiler_spm_parameter_type_t`.
pub mod spm_parameter {
    /// The sampling interval in shader clock (SCLK) cycles.
    pub const SAMPLE_INTERVAL_SCLK_CYCLES: u32 = 1;
}

/// `rocprofiler_spm_record_flag_t`.
pub mod spm_flag {
    pub const DATA: u32 = 1;
    pub const DATA_LOSS: u32 = 1 << 1;
}

abi! {
    /// A parameter of an SPM counter configuration.
    pub struct SpmParameters = ["rocprofiler_spm_parameters_t"] {
        size: u64,
        r#type: u32,
        value: u64,
    }

    /// A parameter an agent supports, with its range (the one type there is, an interval,
    /// takes the union's only member).
    pub struct SpmAvailableConfiguration = ["rocprofiler_spm_available_configuration_t"] {
        size: u64,
        r#type: u32,
        min_interval: u64,
        max_interval: u64,
    }

    /// What the SPM dispatch callback receives, and what heads a dispatch's samples in a
    /// buffer.
    pub struct SpmDispatchData = ["rocprofiler_spm_dispatch_counting_service_data_t"] {
        size: u64,
        correlation_id: AsyncCorrelationId,
        dispatch_info: KernelDispatchInfo,
    }

    /// One sample of one counter instance; `id` packs the counter and its XCC, shader
    /// engine and instance.
    pub struct SpmCounterRecord = ["rocprofiler_spm_counter_record_t"] {
        size: u64,
        dispatch_id: u64,
        id: u64,
        agent_id: Handle,
        timestamp: u64,
        value: f64,
    }
}

/// `rocprofiler_spm_dispatch_counting_service_cb_t`: picks a dispatch's SPM configuration.
pub type SpmDispatchCallback = unsafe extern "C" fn(
    dispatch: *const SpmDispatchData,
    config: *mut Handle,
    user_data: *mut UserData,
    data: *mut c_void,
);

/// `rocprofiler_spm_available_configurations_cb_t`.
pub type SpmConfigurationsCallback = unsafe extern "C" fn(
    configs: *const *const SpmAvailableConfiguration,
    count: usize,
    data: *mut c_void,
) -> Status;

#[cfg(test)]
mod tests {
    use super::*;

    /// Against SDK 1.3.0's `experimental/spm.h` (x86-64: each field at its natural
    /// alignment), which `layout.json` (SDK 1.0's) does not have.
    #[test]
    fn spm_structs_have_the_headers_layout() {
        fn same<T: Layout>(size: usize, fields: &[(&str, usize, usize)]) {
            assert_eq!(std::mem::size_of::<T>(), size, "{}", T::C_NAMES[0]);
            assert_eq!(std::mem::align_of::<T>(), 8, "{}", T::C_NAMES[0]);
            assert_eq!(T::fields(), fields, "{}", T::C_NAMES[0]);
        }
        same::<SpmParameters>(24, &[("size", 0, 8), ("type", 8, 4), ("value", 16, 8)]);
        same::<SpmAvailableConfiguration>(
            32,
            &[
                ("size", 0, 8),
                ("type", 8, 4),
                ("min_interval", 16, 8),
                ("max_interval", 24, 8),
            ],
        );
        same::<SpmDispatchData>(
            152,
            &[
                ("size", 0, 8),
                ("correlation_id", 8, 16),
                ("dispatch_info", 24, 128),
            ],
        );
        same::<SpmCounterRecord>(
            48,
            &[
                ("size", 0, 8),
                ("dispatch_id", 8, 8),
                ("id", 16, 8),
                ("agent_id", 24, 8),
                ("timestamp", 32, 8),
                ("value", 40, 8),
            ],
        );
    }
}
