//! `rocflow run --session-host`: the runner an in-process session starts (see the tool's
//! `session` module). It is `rocflow run` in all but what it starts: a relay that hands the
//! session the socket and Plan, so what a session cannot do is refused before that.

use crate::diag::Diagnostic;
use crate::error::{Error, Result};
use crate::plan::Plan;

/// Refuses what a session cannot collect: counters over several passes rerun the
/// application, and a session's process runs once.
pub fn check<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Result<()> {
    for plan in plans {
        let passes = plan.passes();
        if passes > 1 {
            return Err(Error::user(
                Diagnostic::error(format!(
                    "the pipeline's counters need {passes} passes, each a run of the application; a session profiles one process once"
                ))
                .hint("collect fewer counters, so that they fit one pass, or profile the application with `rocflow run`"),
            ));
        }
    }
    Ok(())
}
