//! How many threads rocflow works on: one setting, `--threads N`, else `RAYON_NUM_THREADS`,
//! else a thread per core. The command line sizes rayon's global pool from it once, and
//! each part that starts threads of its own (the rocpd reader, the spool's compressor, the
//! rocpd writer, outputs per process) starts no more than [`count`], so that a machine
//! shared with others, or a job's rank given a few cores, is held to what it was given.

use std::ffi::OsStr;
use std::num::NonZeroUsize;
use std::sync::OnceLock;

/// The variable rayon reads, read here the same way, save that a value that is no number
/// is an error rather than ignored.
pub const VARIABLE: &str = "RAYON_NUM_THREADS";

/// The name of the global pool's threads (what `/proc/PID/task/*/comm` shows).
pub const POOL_THREAD: &str = "rocflow-pool";

/// The setting, once the command line has made it.
static SETTING: OnceLock<usize> = OnceLock::new();

/// The threads to work on: the `option` given, else `variable` (the value of
/// [`VARIABLE`], where 0 means a thread per core, as rayon takes it), else a thread per
/// core. The error says what is wrong with the variable.
pub fn resolve(option: Option<NonZeroUsize>, variable: Option<&OsStr>) -> Result<usize, String> {
    let per_core = || std::thread::available_parallelism().map_or(1, usize::from);
    let n = match (option, variable) {
        (Some(n), _) => n.get(),
        (None, Some(value)) => parse(value)?,
        (None, None) => 0,
    };
    Ok(if n == 0 { per_core() } else { n })
}

fn parse(value: &OsStr) -> Result<usize, String> {
    (value.to_str())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "{VARIABLE}={} is not a number of threads",
                value.to_string_lossy()
            )
        })
}

/// Makes `threads` the setting and sizes rayon's global pool with it. Only the first call
/// counts: the pool cannot be resized.
pub fn init(threads: usize) {
    if SETTING.set(threads).is_ok() {
        // Fails only if something used rayon already, which then sized its pool the way
        // rayon does: from the same variable, or a thread per core.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|_| POOL_THREAD.to_owned())
            .build_global();
    }
}

/// How many threads a part may work on at once: the setting, or where nothing made one
/// (rocflow as a library) the size of rayon's global pool.
pub fn count() -> usize {
    match SETTING.get() {
        Some(&threads) => threads,
        None => rayon::current_num_threads(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_wins_over_the_variable_and_a_bad_variable_is_an_error() {
        let two = NonZeroUsize::new(2);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(resolve(two, Some(OsStr::new("7"))), Ok(2));
        assert_eq!(resolve(two, Some(OsStr::new("many"))), Ok(2));
        assert_eq!(resolve(None, Some(OsStr::new("7"))), Ok(7));
        assert_eq!(resolve(None, Some(OsStr::new("0"))), Ok(cores));
        assert_eq!(resolve(None, None), Ok(cores));
        assert_eq!(
            resolve(None, Some(OsStr::new("-3"))),
            Err("RAYON_NUM_THREADS=-3 is not a number of threads".to_owned())
        );
    }
}
