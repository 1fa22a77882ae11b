//! AMD-SMI's device metrics as rocflow's commands read them (`rocflow doctor`): from a
//! process of its own (`rocflow smi-query`, hidden), as the device's queries are, so that
//! the library is loaded with the environment it needs (the simulated device's scenario)
//! and a fault inside it ends that process, not rocflow.

use std::ffi::OsString;
use std::path::Path;

use serde::{Deserialize, Serialize};

use rocflow_core::smi::Smi;

use crate::device::{DeviceError, ask};

/// What AMD-SMI read: its version, and each GPU's metrics once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub version: String,
    pub gpus: Vec<GpuReading>,
}

/// One GPU's metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// Its PCI location, `0000:c1:00.0`.
    pub location: String,
    /// Each metric it reported, by name (`power_w`), in its unit.
    pub values: Vec<(String, f64)>,
    /// Each metric it could not report, with AMD-SMI's reason.
    pub failures: Vec<(String, String)>,
}

/// Opens the AMD-SMI at `library` and reads every GPU once: the query process's side.
/// `Err` is why AMD-SMI cannot be read.
pub fn read(library: &Path) -> Result<Answer, String> {
    let smi = Smi::open_library(library).map_err(|e| e.to_string())?;
    let (major, minor, release) = smi.version();
    let gpus = (smi.gpus().iter().enumerate())
        .map(|(index, gpu)| {
            let reading = smi.read(index);
            GpuReading {
                location: gpu.location.to_string(),
                values: (reading.values.iter())
                    .map(|(metric, value)| (metric.name().to_string(), *value))
                    .collect(),
                failures: (reading.failures.iter())
                    .map(|(metric, failure)| (metric.name().to_string(), failure.to_string()))
                    .collect(),
            }
        })
        .collect();
    Ok(Answer {
        version: format!("{major}.{minor}.{release}"),
        gpus,
    })
}

/// [`read`] in a process of its own, with `env` added to rocflow's environment.
pub fn query(
    library: &Path,
    env: Vec<(OsString, OsString)>,
) -> Result<Result<Answer, String>, DeviceError> {
    ask("smi-query", library, &[library.into()], env)
}
