//! The tracing domains rocprofiler-sdk added after 1.0 (ROCm 7.0), whose headers the
//! generated tables come from: each domain's operations and the release that added it,
//! from AMD's newer headers (`fwd.h`, `buffer_tracing.h`, `rocshmem/api_id.h`,
//! `hipfile/api_id.h`) and its CHANGELOG.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Domain;

/// A rocprofiler-sdk version, ordered as releases are; written `1.4.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SdkVersion(pub u32, pub u32, pub u32);

impl std::str::FromStr for SdkVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<SdkVersion, String> {
        let numbers: Option<Vec<u32>> = text.split('.').map(|n| n.parse().ok()).collect();
        match numbers.as_deref() {
            Some(&[major, minor, patch]) => Ok(SdkVersion(major, minor, patch)),
            _ => Err(format!("`{text}` is not a version such as 1.4.1")),
        }
    }
}

impl TryFrom<String> for SdkVersion {
    type Error = String;

    fn try_from(text: String) -> Result<SdkVersion, String> {
        text.parse()
    }
}

impl From<SdkVersion> for String {
    fn from(version: SdkVersion) -> String {
        version.to_string()
    }
}

impl SdkVersion {
    /// The version as `rocprofiler_configure` receives it (major * 10000 + minor * 100 +
    /// patch).
    pub const fn from_encoded(encoded: u32) -> SdkVersion {
        SdkVersion(encoded / 10_000, encoded / 100 % 100, encoded % 100)
    }
}

impl fmt::Display for SdkVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The version the simulated SDK reports unless its scenario names an older one: that of
/// the newest headers rocflow knows, so that every domain here runs on it.
pub const SIMULATED: SdkVersion = SdkVersion(1, 4, 1);

/// A rocprofiler-sdk release and the ROCm release that ships it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub sdk: SdkVersion,
    pub rocm: &'static str,
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rocprofiler-sdk {} (ROCm {})", self.sdk, self.rocm)
    }
}

const SDK_1_3_0: Release = Release {
    sdk: SdkVersion(1, 3, 0),
    rocm: "7.13",
};
const SDK_1_3_2: Release = Release {
    sdk: SdkVersion(1, 3, 2),
    rocm: "7.14",
};
const SDK_1_3_5: Release = Release {
    sdk: SdkVersion(1, 3, 5),
    rocm: "10.0",
};
const SDK_1_4_1: Release = Release {
    sdk: SdkVersion(1, 4, 1),
    rocm: "10.1",
};

/// The release whose SDK replays kernels (`ROCPROFILER_CALLBACK_TRACING_KERNEL_REPLAY`,
/// experimental).
pub const KERNEL_REPLAY: Release = SDK_1_4_1;

/// The release whose thread-trace shader-data callback takes the chunk's flags before its
/// user data (with `ROCPROFILER_THREAD_TRACE_PARAMETER_BUFFERING_MODE`).
pub const THREAD_TRACE_FLAGS: Release = SDK_1_3_2;

/// The release whose shader-data callback takes one `rocprofiler_thread_trace_shader_data_t`
/// by value (with `ROCPROFILER_THREAD_TRACE_PARAMETER_NUM_BUFFERS` in place of the
/// buffering mode).
pub const THREAD_TRACE_BUNDLE: Release = SDK_1_3_5;
/// The release that added SPM, streaming performance monitors (`experimental/spm.h`).
pub const SPM_SINCE: Release = SDK_1_3_0;

impl Domain {
    /// The release that added this domain; `None` for the domains of SDK 1.0.
    pub fn since(self) -> Option<Release> {
        match self {
            Domain::HipGraph | Domain::RocshmemApi => Some(SDK_1_3_0),
            Domain::HipfileApi => Some(SDK_1_3_5),
            Domain::HipEvent => Some(SDK_1_4_1),
            _ => None,
        }
    }

    /// Whether this domain's records are of work on a GPU's queue (a graph launch, a HIP
    /// event's barrier), though the calls that make them are host API calls.
    pub fn on_gpu(self) -> bool {
        matches!(self, Domain::HipGraph | Domain::HipEvent)
    }

    /// Whether rocprofiler-sdk `version` has this domain.
    pub fn in_sdk(self, version: SdkVersion) -> bool {
        self.since().is_none_or(|release| release.sdk <= version)
    }
}

/// `rocprofiler_hip_graph_operation_t`: a buffered record is one graph launch.
pub const HIP_GRAPH: &[(i32, &str)] =
    &[(1, "EXEC_CREATE"), (2, "EXEC_DESTROY"), (3, "EXEC_LAUNCH")];

/// `rocprofiler_hip_event_operation_t`: a GPU barrier of `hipEventRecord` or
/// `hipStreamWaitEvent`.
pub const HIP_EVENT: &[(i32, &str)] = &[(1, "RECORD"), (2, "WAIT")];

/// `rocprofiler_rocshmem_api_id_t`, named by the functions (the ids drop their
/// `rocshmem_` prefix).
pub const ROCSHMEM_API: &[(i32, &str)] = &[
    (0, "rocshmem_barrier_all_on_stream"),
    (1, "rocshmem_quiet_on_stream"),
    (2, "rocshmem_sync_all_on_stream"),
    (3, "rocshmem_alltoallmem_on_stream"),
    (4, "rocshmem_broadcastmem_on_stream"),
    (5, "rocshmem_getmem_on_stream"),
    (6, "rocshmem_putmem_on_stream"),
    (7, "rocshmem_putmem_signal_on_stream"),
    (8, "rocshmem_signal_wait_until_on_stream"),
];

/// `rocprofiler_hipfile_api_id_t`.
pub const HIPFILE_API: &[(i32, &str)] = &[
    (0, "hipFileGetOpErrorString"),
    (1, "hipFileHandleRegister"),
    (2, "hipFileHandleDeregister"),
    (3, "hipFileBufRegister"),
    (4, "hipFileBufDeregister"),
    (5, "hipFileRead"),
    (6, "hipFileWrite"),
    (7, "hipFileDriverOpen"),
    (8, "hipFileDriverClose"),
    (9, "hipFileUseCount"),
    (10, "hipFileDriverGetProperties"),
    (11, "hipFileDriverSetPollMode"),
    (12, "hipFileDriverSetMaxDirectIOSize"),
    (13, "hipFileDriverSetMaxCacheSize"),
    (14, "hipFileDriverSetMaxPinnedMemSize"),
    (15, "hipFileBatchIOSetUp"),
    (16, "hipFileBatchIOSubmit"),
    (17, "hipFileBatchIOGetStatus"),
    (18, "hipFileBatchIOCancel"),
    (19, "hipFileBatchIODestroy"),
    (20, "hipFileReadAsync"),
    (21, "hipFileWriteAsync"),
    (22, "hipFileStreamRegister"),
    (23, "hipFileStreamDeregister"),
    (24, "hipFileGetVersion"),
    (25, "hipFileGetParameterSizeT"),
    (26, "hipFileGetParameterBool"),
    (27, "hipFileGetParameterString"),
    (28, "hipFileSetParameterSizeT"),
    (29, "hipFileSetParameterBool"),
    (30, "hipFileSetParameterString"),
];
