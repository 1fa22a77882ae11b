//! What a tool that an in-process session started reads instead of the environment
//! `rocflow run` gives the processes it starts: the session's runner, and the session's
//! say in the Plan and in finalizing. Below both the entry points and [`crate::session`].

use std::path::PathBuf;
use std::sync::OnceLock;

use rocflow_core::contexts::{self, PlanContexts, StartPlan};

/// Where the tool finds the session's runner and its Plan.
#[derive(Debug, Clone)]
pub struct Link {
    pub socket: PathBuf,
    pub plan: PathBuf,
}

static LINK: OnceLock<Link> = OnceLock::new();
/// What the session does when the SDK finalizes the tool.
static ON_FINALIZE: OnceLock<fn()> = OnceLock::new();

/// Sets the runner the tool is to stream to, before the session starts the SDK.
pub fn set(link: Link, on_finalize: fn()) {
    let _ = LINK.set(link);
    let _ = ON_FINALIZE.set(on_finalize);
}

/// The session's runner, when a session started the tool.
pub fn link() -> Option<&'static Link> {
    LINK.get()
}

/// A session's Plan: contexts start stopped whatever the pipeline's timing, and kernel
/// names are traced throughout.
pub fn adapt(plan: &mut PlanContexts) {
    for context in &mut plan.contexts {
        context.start = StartPlan {
            paused: true,
            ..StartPlan::default()
        };
        context.code_objects = true;
    }
}

/// The betas a session turned on itself, by their variables.
static TURNED_ON: OnceLock<Vec<&'static str>> = OnceLock::new();

/// Turns on the SDK's betas that the Plan's contexts need and the environment leaves
/// unset, as `rocflow run` does for the processes it starts: here, before the contexts are
/// set up, which is when the SDK reads them; an SDK that read them earlier refuses the
/// service, and its error says so (see [`turned_on`]).
pub fn turn_on_betas(plan: &PlanContexts) {
    let mut turned_on = Vec::new();
    for (variable, value) in contexts::betas(&plan.contexts) {
        if std::env::var_os(variable).is_none() {
            // SAFETY: set once, while the SDK configures the tool, before any context
            // exists whose services would read it; as `rocflow run` sets it for the
            // processes it starts.
            unsafe { std::env::set_var(variable, value) };
            turned_on.push(variable);
        }
    }
    let _ = TURNED_ON.set(turned_on);
}

/// Whether the session turned on the beta of `variable` itself.
pub fn turned_on(variable: &str) -> bool {
    TURNED_ON.get().is_some_and(|v| v.contains(&variable))
}

/// The SDK finalizes the tool: the session, if one started it, ends its last phase.
pub fn finalize() {
    if let Some(hook) = ON_FINALIZE.get() {
        hook();
    }
}
