//! `rocflow doctor`: what stands between this machine and a profiled run, in the checks
//! AMD's `rocprofv3-doctor` makes: the SDK found, `/dev/kfd` open to the user, the GPUs
//! ROCr and HIP see, counters and PC sampling on them, AMD-SMI reading their metrics, the
//! performance level and the ptrace scope. Each check gives one [`Finding`]: what was found and how to fix it. The
//! checks read the machine through [`Machine`], so a machine laid out under a directory is
//! examined as a real one is; on the simulated device its SDK answers for the GPUs.

mod counters;
mod finding;
mod gpus;
mod install;
mod kfd;
mod machine;
mod performance;
mod ptrace;
mod smi;

use crate::device::{self, DeviceError};
use crate::runner::{Device, StartError};

pub use finding::{Check, Finding, Status};
pub use machine::Machine;

/// Every check's finding, in order.
#[derive(Debug)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    /// How many findings came out `status`.
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }

    pub fn failed(&self) -> bool {
        self.count(Status::Fail) > 0
    }
}

/// Examines `machine` for profiling on `device`. Only the simulated device's scenario can
/// keep the doctor from answering (it is the user's input); everything else is a finding.
pub fn examine(machine: &Machine, device: &Device) -> Result<Report, StartError> {
    let findings = match device {
        Device::Rocm => on_rocm(machine),
        Device::Sim(scenario) => on_sim(machine, device, scenario.as_deref())?,
    };
    Ok(Report { findings })
}

fn on_rocm(machine: &Machine) -> Vec<Finding> {
    let (sdk_finding, sdk) = install::rocm(machine);
    let (gpus_finding, gpus) = gpus::on_rocm(machine);
    vec![
        sdk_finding,
        kfd::check(machine),
        gpus_finding,
        counters::counters(machine, sdk.as_ref(), &gpus.seen_by_rocr),
        counters::pc_sampling(&gpus.seen_by_rocr),
        smi::on_rocm(machine),
        performance::check(machine, &gpus.all),
        ptrace::check(machine),
    ]
}

fn on_sim(
    machine: &Machine,
    device: &Device,
    scenario: Option<&std::path::Path>,
) -> Result<Vec<Finding>, StartError> {
    let no_driver = "the simulated device needs no GPU driver";
    let agents = match device::agents(device, true) {
        Ok(agents) => agents,
        Err(DeviceError::Start(e @ StartError::Scenario { .. })) => return Err(e),
        Err(e) => {
            let why = "the simulated SDK did not answer";
            return Ok(vec![
                install::sim_failed(&e),
                Finding::skip(Check::Kfd, no_driver),
                Finding::skip(Check::Gpus, why),
                Finding::skip(Check::Counters, why),
                Finding::skip(Check::PcSampling, why),
                Finding::skip(Check::AmdSmi, why),
                Finding::skip(Check::PerformanceLevel, no_driver),
                ptrace::check(machine),
            ]);
        }
    };
    let (gpus_finding, gpus) = gpus::on_sim(machine, &agents);
    Ok(vec![
        install::sim(device, &gpus.all),
        Finding::skip(Check::Kfd, no_driver),
        gpus_finding,
        counters::counters(machine, None, &gpus.seen_by_rocr),
        counters::pc_sampling(&gpus.seen_by_rocr),
        smi::on_sim(scenario),
        Finding::skip(Check::PerformanceLevel, no_driver),
        ptrace::check(machine),
    ])
}
