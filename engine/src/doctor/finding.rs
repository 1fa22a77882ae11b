//! What a check finds: its status, what it found and a hint to fix it.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// Works, but something a user may want is missing or may be off.
    Warn,
    /// Keeps profiling from working.
    Fail,
    /// Does not apply here (a driver check on the simulated device, or nothing to check).
    Skip,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// The checks, in the order they run and print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// rocprofiler-sdk found, as `rocflow run` finds it.
    Sdk,
    /// `/dev/kfd` there and open to the user.
    Kfd,
    /// The GPUs of the KFD topology, and those ROCr and HIP see of them.
    Gpus,
    /// Counters defined for each GPU.
    Counters,
    /// PC sampling on each GPU.
    PcSampling,
    /// AMD-SMI reading each GPU's metrics.
    AmdSmi,
    /// Each GPU's performance level.
    PerformanceLevel,
    /// Whether a running process can be attached to.
    Ptrace,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Sdk => "sdk",
            Check::Kfd => "kfd",
            Check::Gpus => "gpus",
            Check::Counters => "counters",
            Check::PcSampling => "pc-sampling",
            Check::AmdSmi => "amd-smi",
            Check::PerformanceLevel => "performance-level",
            Check::Ptrace => "ptrace",
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: Check,
    pub status: Status,
    /// What was found.
    pub found: String,
    /// How to fix it; none where there is nothing to fix.
    pub hint: Option<String>,
}

impl Finding {
    pub(super) fn ok(check: Check, found: impl Into<String>) -> Finding {
        Finding::new(check, Status::Ok, found, None)
    }

    pub(super) fn warn(check: Check, found: impl Into<String>, hint: impl Into<String>) -> Finding {
        Finding::new(check, Status::Warn, found, Some(hint.into()))
    }

    pub(super) fn fail(check: Check, found: impl Into<String>, hint: impl Into<String>) -> Finding {
        Finding::new(check, Status::Fail, found, Some(hint.into()))
    }

    pub(super) fn skip(check: Check, why: impl Into<String>) -> Finding {
        Finding::new(check, Status::Skip, why, None)
    }

    fn new(check: Check, status: Status, found: impl Into<String>, hint: Option<String>) -> Self {
        Finding {
            check,
            status,
            found: found.into(),
            hint,
        }
    }
}
