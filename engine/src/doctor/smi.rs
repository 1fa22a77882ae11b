//! The `amd-smi` check: AMD-SMI found where ROCm's tools look for it, and reading the GPUs'
//! metrics (power, temperature, clocks, utilization, VRAM in use) that rocflow samples
//! beside device counters; or the simulated device's AMD-SMI. Profiling works without it,
//! only without those metrics: its problems are warnings.

use std::ffi::OsString;
use std::path::Path;

use rocflow_core::smi::{self, LIBRARY_VAR};

use crate::device::{self, DeviceError};
use crate::smi::{Answer, query};

use super::finding::{Check, Finding};
use super::machine::Machine;

/// Without AMD-SMI, device metrics are not sampled.
const UNSAMPLED: &str = "device metrics (power, temperature, clocks, utilization) are not sampled";

/// The installed AMD-SMI, as the tool would find it on `machine`.
pub(super) fn on_rocm(machine: &Machine) -> Finding {
    let env = |name: &str| machine.var(name).map(str::to_owned);
    match smi::find(env, |path| machine.path(path)) {
        Ok(found) => {
            let what = format!(
                "AMD-SMI at {}, found by {}",
                machine.shown(&found.path),
                found.found_by
            );
            read(&what, &found.path, Vec::new())
        }
        Err(searched) => {
            let looked: Vec<String> = searched.iter().map(|p| machine.shown(p)).collect();
            Finding::warn(
                Check::AmdSmi,
                format!("no AMD-SMI (looked at {}): {UNSAMPLED}", looked.join(", ")),
                format!(
                    "install ROCm's AMD-SMI (the amd-smi-lib package), or set {LIBRARY_VAR} to its libamd_smi.so"
                ),
            )
        }
    }
}

/// The simulated device's AMD-SMI, for `scenario`.
pub(super) fn on_sim(scenario: Option<&Path>) -> Finding {
    match device::sim(scenario) {
        Ok((library, env)) => read("the simulated AMD-SMI", &library, env.into_iter().collect()),
        Err(e) => unread("the simulated AMD-SMI", &e),
    }
}

/// What `what`, the AMD-SMI at `library`, reads with `env`.
fn read(what: &str, library: &Path, env: Vec<(OsString, OsString)>) -> Finding {
    match query(library, env) {
        Ok(Ok(answer)) => readings(what, &answer),
        Ok(Err(reason)) => Finding::warn(
            Check::AmdSmi,
            format!("{what} cannot be read: {reason}"),
            format!("until it reads, {UNSAMPLED}"),
        ),
        Err(e) => unread(what, &e),
    }
}

fn unread(what: &str, error: &DeviceError) -> Finding {
    Finding::warn(
        Check::AmdSmi,
        format!("{what} did not answer: {error}"),
        format!("until it answers, {UNSAMPLED}"),
    )
}

/// Each GPU's metrics, and those it could not read: a GPU that reads none is a warning.
fn readings(what: &str, answer: &Answer) -> Finding {
    let gpus: Vec<String> = (answer.gpus.iter())
        .map(|gpu| {
            let mut said: Vec<String> = (gpu.values.iter())
                .map(|(metric, value)| format!("{metric} {value}"))
                .collect();
            said.extend((gpu.failures.iter()).map(|(metric, why)| format!("no {metric} ({why})")));
            format!("{} {}", gpu.location, said.join(", "))
        })
        .collect();
    let found = format!(
        "{what}: version {}, {} GPU(s): {}",
        answer.version,
        answer.gpus.len(),
        gpus.join("; ")
    );
    match answer.gpus.iter().any(|gpu| gpu.values.is_empty()) {
        false => Finding::ok(Check::AmdSmi, found),
        true => Finding::warn(
            Check::AmdSmi,
            found,
            "a GPU that reads no metric gives no device metrics: `amd-smi metric` shows what AMD-SMI says of it",
        ),
    }
}
