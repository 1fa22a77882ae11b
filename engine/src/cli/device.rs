//! The `--device` a command names, as the commands need it: its agents, or its simulated
//! scenario; what fails in starting it worded for the user.

use rocflow_core::scenario::Scenario;

use crate::device::{self, DeviceError};
use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::pipeline::SimulatedGpus;
use crate::runner::{Device, StartError};

/// The device's agents; the user's errors (no SDK, a bad scenario) with a hint.
pub(super) fn list(device: &Device, counters: bool) -> Result<Vec<device::Agent>> {
    device::agents(device, counters).map_err(|e| match e {
        DeviceError::Sdk(e) => Error::user(Diagnostic::error(e.to_string()).hint(
            "install ROCm 7.0 or later, or set ROCM_PATH to its installation; `--device sim` lists the simulated device",
        )),
        DeviceError::Start(StartError::Scenario { .. }) => Error::user(
            Diagnostic::error(e.to_string())
                .hint("`examples/sim/mi300x.toml` is a complete scenario to start from"),
        ),
        other => Error::Runtime(other.to_string()),
    })
}

/// Why the run could not start, as the user is told.
pub(super) fn start_error(e: StartError) -> Error {
    match e {
        StartError::Spawn { .. } => Error::user(
            Diagnostic::error(e.to_string()).hint("give the application's path, after `--`"),
        ),
        StartError::Scenario { .. } => Error::user(Diagnostic::error(e.to_string()).hint(
            "`examples/sim/mi300x.toml` is a complete scenario to start from; `--device sim` uses it",
        )),
        _ => Error::Runtime(e.to_string()),
    }
}

/// The scenario of the simulated device `device` names, with its GPUs as the counter
/// checks see them; `None` for a real GPU.
pub(super) fn simulated(device: &Device) -> Result<Option<(Scenario, SimulatedGpus)>> {
    let scenario = device.scenario().map_err(start_error)?;
    Ok(scenario.map(|s| {
        let gpus = SimulatedGpus::new(device.to_string(), &s);
        (s, gpus)
    }))
}
