//! C programs and libraries the tests build with the system's `cc`, as users build theirs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{assert_success, repo, tool_library};

/// The example session program (`examples/session/window.c`) built into `dir` against the
/// tool library `cargo test` built (the one `rocflow run` gives the SDK: under a run, the
/// program's session is the run's tool). `window PIPELINE OUTPUT_DIR PERIOD_MS` profiles
/// iterations 3 to 5 of a scenario paced at one iteration every `PERIOD_MS`.
pub fn session_window(dir: &Path) -> PathBuf {
    session_program("examples/session/window.c", dir)
}

/// The C program `source` (a path in the repository) built into `dir`, named after its
/// file, against the session header and the tool library `cargo test` built.
pub fn session_program(source: &str, dir: &Path) -> PathBuf {
    let source = repo().join(source);
    let program = dir.join(source.file_stem().expect("a C file"));
    let tool = tool_library();
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&program)
        .arg(&source)
        .arg("-I")
        .arg(repo().join("plugins/include"))
        .arg(&tool)
        .arg(format!("-Wl,-rpath,{}", tool.parent().unwrap().display()))
        .output()
        .expect("cc runs");
    assert_success(&cc);
    program
}

/// `tests/apps/legacy_roctx.c` built into `dir` as `libroctx64.so`: a stand-in for
/// roctracer's legacy ROCTx library, whose calls reach only the tracer callback a tool
/// registered.
pub fn legacy_roctx(dir: &Path) -> PathBuf {
    let library = dir.join("libroctx64.so");
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(repo().join("tests/apps/legacy_roctx.c"))
        .output()
        .expect("cc runs");
    assert_success(&cc);
    library
}
