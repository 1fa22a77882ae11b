//! The `sdk` check: the rocprofiler-sdk a run would load, found as `rocflow run` finds it
//! (ROCm's system packages, `ROCM_PATH`, `LD_LIBRARY_PATH`, or ROCm's Python wheels in the
//! active virtual environment), or the simulated one answering.

use std::path::Path;

use crate::device::DeviceError;
use crate::runner::Device;
use crate::runner::sdk::{self, Sdk, SdkError};

use super::finding::{Check, Finding};
use super::gpus::Gpu;
use super::machine::Machine;

/// Where ROCm comes from, for the hints.
const INSTALL: &str = "install ROCm 7.0 or later (or ROCm's Python wheels: `pip install rocm[libraries]` in a virtual environment, then activate it), or set ROCM_PATH to an installation";

/// The installed SDK, as `rocflow run` would find it on `machine`.
pub(super) fn rocm(machine: &Machine) -> (Finding, Option<Sdk>) {
    let env = |name: &str| machine.var(name).map(str::to_owned);
    match sdk::find_under(machine.root(), env) {
        Ok(sdk) => {
            let version = sdk
                .version
                .map_or("of an unnamed version".to_string(), |v| v.to_string());
            let found = format!(
                "rocprofiler-sdk {version} at {}, found by {}",
                machine.shown(&sdk.path),
                sdk.found_by
            );
            (Finding::ok(Check::Sdk, found), Some(sdk))
        }
        Err(SdkError::Missing { searched }) => {
            let looked: Vec<String> = (searched.iter())
                .map(|place| machine.shown(Path::new(place)))
                .collect();
            let found = format!("no rocprofiler-sdk (looked at {})", looked.join(", "));
            (Finding::fail(Check::Sdk, found, INSTALL), None)
        }
        Err(SdkError::TooOld { found, path }) => {
            let found = format!(
                "rocprofiler-sdk {found} at {} is older than rocflow supports ({} or later)",
                machine.shown(&path),
                sdk::MIN
            );
            (Finding::fail(Check::Sdk, found, INSTALL), None)
        }
    }
}

/// The simulated SDK answered for `gpus`.
pub(super) fn sim(device: &Device, gpus: &[Gpu]) -> Finding {
    Finding::ok(
        Check::Sdk,
        format!(
            "the simulated rocprofiler-sdk of `{device}` answers, with {} GPU(s)",
            gpus.len()
        ),
    )
}

/// The simulated SDK did not answer.
pub(super) fn sim_failed(error: &DeviceError) -> Finding {
    Finding::fail(
        Check::Sdk,
        format!("the simulated rocprofiler-sdk did not answer: {error}"),
        "install rocflow with the README's command, which puts librocflow_sim.so beside the binary",
    )
}
