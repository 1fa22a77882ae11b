//! Where the tool library and the simulated SDK are: next to the `rocflow` binary (an
//! installed rocflow, or a build tree after `cargo build --workspace`), or in the build
//! tree's `deps/` (where `cargo test` puts them, as the tests' dependencies). In a build
//! tree that has both, the newer one is the one just built.

use std::path::{Path, PathBuf};

pub const TOOL: &str = "librocflow_tool.so";
pub const SIM: &str = "librocflow_sim.so";
/// The simulated device's trace decoder (AMD's is `librocprof-trace-decoder.so`).
pub const SIM_DECODER: &str = "librocprof_trace_decoder.so";

/// Why a library of rocflow's is not found.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot locate rocflow itself: {0}")]
    Exe(#[source] std::io::Error),
    #[error(
        "{name} is not installed next to rocflow (looked in {}); install rocflow with the README's command, which copies the libraries beside the binary",
        .dir.display()
    )]
    Missing { name: &'static str, dir: PathBuf },
}

/// The library `name`, or an error saying where it was looked for.
pub fn find(name: &'static str) -> Result<PathBuf, LibraryError> {
    let exe = std::env::current_exe().map_err(LibraryError::Exe)?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join(name), dir.join("deps").join(name)];
    candidates
        .iter()
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max_by_key(|(modified, _)| *modified)
        .map(|(_, p)| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .ok_or_else(|| LibraryError::Missing {
            name,
            dir: dir.to_owned(),
        })
}
