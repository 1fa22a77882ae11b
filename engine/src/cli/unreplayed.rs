//! The dispatches a context with kernel replay counted that the SDK did not replay: it
//! replays single-packet dispatches outside HIP graph launches only, and runs the others
//! once, so they have the first pass's counters alone. The run says so once.

use std::collections::BTreeMap;

use crate::catalog::Catalog;
use crate::plan::{CounterPlan, Plan};
use rocflow_core::contexts::Replay;

/// Dispatches not replayed, by the name their kernel goes by, across the run's processes.
pub(super) fn by_kernel(catalog: &Catalog) -> BTreeMap<&str, u64> {
    let mut kernels: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, stream) in catalog.streams() {
        for (&kernel_id, &n) in &stream.unreplayed {
            let total = kernels.entry(stream.kernel_name(kernel_id)).or_default();
            *total = total.saturating_add(n);
        }
    }
    kernels
}

/// The warning for the dispatches not replayed, if there were any: how many, of which
/// kernels, why, and the counters they lack.
pub(super) fn warning(plan: &Plan, catalog: &Catalog) -> Option<String> {
    let kernels = by_kernel(catalog);
    let total: u64 = kernels.values().sum();
    if total == 0 {
        return None;
    }
    let of: Vec<String> = (kernels.iter())
        .map(|(name, n)| format!("{n} of `{name}`"))
        .collect();
    let lacking: Vec<String> = (plan.contexts.iter())
        .filter_map(|c| c.counters.as_ref())
        .filter(|counters| counters.replay == Replay::Kernel)
        .flat_map(later_passes)
        .map(|name| format!("`{name}`"))
        .collect();
    Some(format!(
        "kernel replay did not replay {total} dispatch{} ({}): the SDK replays only single-packet dispatches outside HIP graph launches and ran these once, so they have the first pass's counters alone and lack {} (and what is derived from them); the outputs hold no values of those for them",
        if total == 1 { "" } else { "es" },
        of.join(", "),
        lacking.join(", ")
    ))
}

/// The counters of every pass but the first.
fn later_passes(counters: &CounterPlan) -> impl Iterator<Item = &String> {
    (1..counters.pass_count()).flat_map(|pass| counters.pass(pass))
}
