//! `replay = "kernel"` in `[context.counters]`: rocprofiler-sdk's kernel replay runs each
//! counted dispatch once per pass in one run of the application. A service that works
//! per dispatch would see each replayed dispatch as several, or inject into every pass
//! (thread trace and SPM instrument the dispatch; PC sampling is agent-wide and keeps
//! sampling every pass), so a pipeline that replays kernels may not use one, in any
//! context: rocprofv3 refuses the same combinations.

use rocflow_core::contexts::{ContextPlan, Replay};

use super::compiler::Compiler;
use crate::diag::Step;

/// The per-dispatch services of a context that kernel replay conflicts with: the key that
/// configures each, and what the context does with it. (PC sampling is refused beside any
/// counted dispatches already, by [`Compiler::check_exclusive_services`].)
fn per_dispatch_services(c: &ContextPlan) -> Vec<(&'static str, &'static str)> {
    let mut services = Vec::new();
    if c.thread_trace.is_some() {
        services.push(("thread_trace", "traces threads"));
    }
    if c.spm.is_some() {
        services.push(("spm", "streams counters with SPM"));
    }
    services
}

impl Compiler<'_> {
    /// Refuses a pipeline that replays kernels and uses a service that cannot share the
    /// run with it; the error is on `replay`, with a note where the other service is.
    pub(super) fn check_kernel_replay(&mut self, contexts: &[ContextPlan]) {
        if self.records_only {
            return;
        }
        let replaying = (contexts.iter().enumerate())
            .find(|(_, c)| (c.counters.as_ref()).is_some_and(|k| k.replay == Replay::Kernel));
        let Some((i, replayer)) = replaying else {
            return;
        };
        for (j, other) in contexts.iter().enumerate() {
            for (key, what) in per_dispatch_services(other) {
                let service_at = self.span(path!["context", j, key]).map(|s| s.position());
                let d = self.error(
                    path!["context", i, "counters", "replay"],
                    format!(
                        "context `{}` replays kernels, and context `{}` {what}: kernel replay runs each dispatch once per pass, which {key} cannot share",
                        replayer.name, other.name
                    ),
                );
                d.hint = Some(format!(
                    "drop `replay = \"kernel\"` (the application then runs once per pass), or move `[context.{key}]` to a pipeline of its own"
                ));
                if let Some(at) = service_at {
                    d.notes
                        .push(format!("context `{}` {what} at {at}", other.name));
                }
            }
        }
    }
}
