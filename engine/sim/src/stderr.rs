//! The simulated SDK's own lines on stderr, labelled so that they stand apart from the
//! application's.

/// Writes `rocflow-sim: MESSAGE`: something the simulated SDK could not do.
pub fn warn(message: &str) {
    eprintln!("rocflow-sim: {message}");
}
