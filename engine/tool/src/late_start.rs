//! What a tool that an in-process session started reads instead of the environment
//! `rocflow run` gives the processes it starts: the session's runner, and the session's
//! say in the Plan and in finalizing. Below both the entry points and [`crate::session`].

use std::path::PathBuf;
use std::sync::OnceLock;

use rocflow_core::contexts::{PlanContexts, StartPlan};

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

/// The SDK finalizes the tool: the session, if one started it, ends its last phase.
pub fn finalize() {
    if let Some(hook) = ON_FINALIZE.get() {
        hook();
    }
}
