//! What the tool tells the user: a line on stderr, and for a process it cannot profile, a
//! word to the runner too.

use std::path::PathBuf;

pub fn warn(message: &str) {
    eprintln!("rocflow: {message}");
}

/// Says that this process is not profiled, and why, on stderr and to the runner, which
/// cannot know of a process that never reached it: the pid becomes a directory in the
/// run's `ROCFLOW_UNPROFILED` (made, not opened: descriptors may be what is short).
pub fn unprofiled(why: impl std::fmt::Display) {
    warn(&format!("{why}; profiling is off"));
    if let Some(dir) = std::env::var_os("ROCFLOW_UNPROFILED") {
        let _ = std::fs::create_dir(PathBuf::from(dir).join(std::process::id().to_string()));
    }
}
