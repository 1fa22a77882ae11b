//! The `counters` and `pc-sampling` checks: what each GPU rocprofiler-sdk profiles can
//! collect. On a real GPU, its counters are those the definitions rocflow finds give its
//! architecture, and PC sampling is what rocprofiler-sdk offers on it (gfx90a and later
//! Instinct GPUs: host-trap, and stochastic from gfx942 on); on the simulated device its
//! SDK answers both.

use std::path::PathBuf;

use rocflow_counters::{self as counters, Definitions};

use crate::device::PcSampling;
use crate::runner::sdk::Sdk;
use crate::sdk::{PcSamplingMethod, gfx_version};

use super::finding::{Check, Finding};
use super::gpus::Gpu;
use super::machine::Machine;

/// The counters of each GPU (each architecture once).
pub(super) fn counters(machine: &Machine, sdk: Option<&Sdk>, gpus: &[Gpu]) -> Finding {
    let gpus = distinct(gpus);
    if gpus.is_empty() {
        return Finding::skip(Check::Counters, "no GPU to check");
    }
    // The simulated SDK answers for its GPUs.
    if gpus.iter().all(|g| g.agent.is_some()) {
        let counts: Vec<(String, usize)> = (gpus.iter())
            .map(|g| {
                (
                    g.arch.clone(),
                    g.agent
                        .as_ref()
                        .and_then(|a| a.counters.as_ref())
                        .map_or(0, Vec::len),
                )
            })
            .collect();
        return verdict(
            &counts,
            "the simulated SDK's",
            "give the scenario's agent counters ([[agent.counter]])",
        );
    }
    let places = definition_places(machine, sdk);
    let Some(file) = places.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = places.iter().map(|p| machine.shown(p)).collect();
        return Finding::warn(
            Check::Counters,
            format!(
                "no counter definitions found (looked at {})",
                looked.join(", ")
            ),
            "install rocprofiler-sdk, or set ROCPROFILER_METRICS_PATH to the directory of a counter_defs.yaml",
        );
    };
    let shown = machine.shown(file);
    let defs = match Definitions::load(file) {
        Ok(defs) => defs,
        Err(e) => {
            return Finding::warn(
                Check::Counters,
                format!("the counter definitions at {shown} do not load: {e}"),
                format!("`rocflow counters check {shown}` says what is wrong"),
            );
        }
    };
    let counts: Vec<(String, usize)> = (gpus.iter())
        .map(|g| {
            let defined = defs
                .counters()
                .iter()
                .filter(|c| c.definition_for(&g.arch).is_some());
            (g.arch.clone(), defined.count())
        })
        .collect();
    verdict(
        &counts,
        &shown,
        "use the counter definitions of a rocprofiler-sdk that knows this GPU (ROCPROFILER_METRICS_PATH names their directory)",
    )
}

/// ok when every architecture has counters, else a warning naming those without.
fn verdict(counts: &[(String, usize)], from: &str, hint: &str) -> Finding {
    let listed: Vec<String> = counts
        .iter()
        .map(|(arch, n)| format!("{arch} {n} counters"))
        .collect();
    let found = format!("{} ({from})", listed.join(", "));
    let without: Vec<&str> = counts
        .iter()
        .filter(|(_, n)| *n == 0)
        .map(|(a, _)| a.as_str())
        .collect();
    if without.is_empty() {
        Finding::ok(Check::Counters, found)
    } else {
        Finding::warn(
            Check::Counters,
            format!(
                "{found}: no counter can be collected on {}",
                without.join(", ")
            ),
            hint,
        )
    }
}

/// Where the counter definitions are, in the order rocprofiler-sdk reads them:
/// `ROCPROFILER_METRICS_PATH`, then those installed beside the SDK, then rocflow's own
/// default places (`ROCM_PATH`, `/opt/rocm`).
fn definition_places(machine: &Machine, sdk: Option<&Sdk>) -> Vec<PathBuf> {
    let env = |name: &str| machine.var(name).map(Into::into);
    let mut places: Vec<PathBuf> = counters::locations_with(env)
        .iter()
        .map(|p| machine.path(p))
        .collect();
    let beside =
        sdk.and_then(|sdk| Some(sdk.path.parent()?.parent()?.join(counters::INSTALLED_PATH)));
    if let Some(beside) = beside.filter(|b| !places.contains(b)) {
        let after_metrics = usize::from(machine.var("ROCPROFILER_METRICS_PATH").is_some());
        places.insert(after_metrics.min(places.len()), beside);
    }
    places
}

/// PC sampling on each GPU (each architecture once).
pub(super) fn pc_sampling(gpus: &[Gpu]) -> Finding {
    let gpus = distinct(gpus);
    if gpus.is_empty() {
        return Finding::skip(Check::PcSampling, "no GPU to check");
    }
    let methods: Vec<(String, Result<Vec<&'static str>, String>)> = gpus
        .iter()
        .map(|g| {
            let methods = match g.agent.as_ref().map(|a| &a.pc_sampling) {
                Some(PcSampling::Configurations(configs)) => {
                    let mut names: Vec<&str> = configs.iter().map(|c| method(c.method)).collect();
                    names.sort_unstable();
                    names.dedup();
                    Ok(names)
                }
                Some(PcSampling::Unavailable(why)) => Err(why.clone()),
                None => Ok(by_architecture(&g.arch)),
            };
            (g.arch.clone(), methods)
        })
        .collect();
    let listed: Vec<String> = methods
        .iter()
        .map(|(arch, m)| match m {
            Ok(m) if m.is_empty() => format!("{arch} none"),
            Ok(m) => format!("{arch} {}", m.join(", ")),
            Err(why) => format!("{arch} unknown ({why})"),
        })
        .collect();
    let found = listed.join("; ");
    if methods
        .iter()
        .any(|(_, m)| m.as_ref().is_ok_and(|m| !m.is_empty()))
    {
        Finding::ok(Check::PcSampling, found)
    } else {
        Finding::warn(
            Check::PcSampling,
            format!("{found}: no GPU here can sample PCs"),
            "rocprofiler-sdk samples PCs on Instinct GPUs from gfx90a (MI200) on; collect counters or traces instead",
        )
    }
}

/// The PC sampling methods rocprofiler-sdk offers on an architecture.
fn by_architecture(arch: &str) -> Vec<&'static str> {
    match gfx_version(arch) {
        Some((9, minor, stepping)) if (minor, stepping) >= (4, 0) => {
            vec!["host_trap", "stochastic"]
        }
        Some((9, minor, stepping)) if (minor, stepping) >= (0, 10) => vec!["host_trap"],
        _ => Vec::new(),
    }
}

fn method(method: PcSamplingMethod) -> &'static str {
    match method {
        PcSamplingMethod::HostTrap => "host_trap",
        PcSamplingMethod::Stochastic => "stochastic",
    }
}

/// The GPUs, each architecture once.
fn distinct(gpus: &[Gpu]) -> Vec<&Gpu> {
    let mut seen: Vec<&Gpu> = Vec::new();
    for gpu in gpus {
        if !seen.iter().any(|s| s.arch == gpu.arch) {
            seen.push(gpu);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_sampling_follows_rocprofiler_sdks_architectures() {
        assert_eq!(by_architecture("gfx942"), ["host_trap", "stochastic"]);
        assert_eq!(by_architecture("gfx950"), ["host_trap", "stochastic"]);
        assert_eq!(by_architecture("gfx90a"), ["host_trap"]);
        assert!(by_architecture("gfx908").is_empty());
        assert!(by_architecture("gfx1100").is_empty());
    }
}
