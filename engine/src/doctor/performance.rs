//! The `performance-level` check: each GPU's power management level
//! (`/sys/class/drm/card*/device/power_dpm_force_performance_level`). Under `auto`, some
//! RDNA GPUs read their counters as 0; `profile_standard` holds the clocks steady for
//! profiling.

use std::path::Path;

use crate::sdk::gfx_version;

use super::finding::{Check, Finding};
use super::gpus::Gpu;
use super::machine::Machine;

const DRM: &str = "/sys/class/drm";
const LEVEL: &str = "device/power_dpm_force_performance_level";

pub(super) fn check(machine: &Machine, gpus: &[Gpu]) -> Finding {
    let mut cards: Vec<(u32, String)> = std::fs::read_dir(machine.path(DRM))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((name.strip_prefix("card")?.parse().ok()?, name))
        })
        .collect();
    cards.sort();
    let mut levels: Vec<String> = Vec::new();
    let mut at_auto: Vec<String> = Vec::new();
    for (_, card) in &cards {
        let path = Path::new(DRM).join(card).join(LEVEL);
        let Some(level) = machine.read(&path) else {
            continue;
        };
        let level = level.trim();
        let gpu = card_gpu(machine, card, gpus);
        let arch = gpu.map_or("an unknown GPU", |g| g.arch.as_str());
        levels.push(format!("{card} ({arch}) {level}"));
        // RDNA (gfx10 and later) reads counters as 0 under `auto` on some parts.
        let rdna = gpu
            .and_then(|g| gfx_version(&g.arch))
            .is_some_and(|(major, ..)| major >= 10);
        if level == "auto" && rdna {
            at_auto.push(format!(
                "echo profile_standard | sudo tee {}",
                path.display()
            ));
        }
    }
    if levels.is_empty() {
        return Finding::skip(
            Check::PerformanceLevel,
            format!("no GPU performance level to read ({DRM}/card*/{LEVEL})"),
        );
    }
    let found = levels.join(", ");
    if at_auto.is_empty() {
        Finding::ok(Check::PerformanceLevel, found)
    } else {
        Finding::warn(
            Check::PerformanceLevel,
            format!("{found}: counters may read 0 under `auto` on RDNA GPUs"),
            format!("hold the clocks for profiling: `{}`", at_auto.join("`, `")),
        )
    }
}

/// The GPU of a DRM card: the render node beside it (`cardN/device/drm/renderD128`) is the
/// one the KFD topology names.
fn card_gpu<'a>(machine: &Machine, card: &str, gpus: &'a [Gpu]) -> Option<&'a Gpu> {
    let dir = machine.path(Path::new(DRM).join(card).join("device/drm"));
    let minor: u32 = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("renderD")?
                .parse()
                .ok()
        })?;
    gpus.iter().find(|g| g.render_minor == Some(minor))
}
