//! `rocflow run` on the simulated SDK: 8 M records (two threads, eight kernels, a
//! hipLaunchKernel and a dispatch each) from the tool library in a real process into the
//! runner's spool under the lossless policy. Prints the records per second from launch to
//! the end of the run, the spool's bytes per record, the records lost, and the tool's own
//! CPU cost per record (buffer callbacks plus its writer thread, as the tool measures and
//! reports it), with the API calls' arguments (`args = true`: 6 per hipLaunchKernel, half
//! the records) and without, in turns so that all see the same machine. The run ends once
//! its spool is on disk, so the disk can set the pace: without arguments, the spool is
//! stored compressed and as it is, and as it is in memory (`/dev/shm`, where there is one),
//! to tell the disk's share from rocflow's.
//! Run with `cargo bench -p rocflow --bench run`.

#[allow(dead_code)]
mod sim;

use std::path::Path;

/// The pipeline, with `args = ARGS` in its context.
const PIPELINE: &str = r#"
[pipeline]
name = "spool-only"
[[context]]
name = "trace"
tracing = ["kernel_dispatch", "hip_runtime_api"]
args = ARGS
buffer = { size = "64MiB", watermark = "50%", policy = "lossless" }
"#;

fn field<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"))
}

/// A directory in `parent` with the pipelines and the scenario.
fn setup(parent: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir_in(parent).unwrap();
    for args in ["false", "true"] {
        let pipeline = PIPELINE.replace("ARGS", args);
        std::fs::write(dir.path().join(format!("args-{args}.toml")), pipeline).unwrap();
    }
    sim::scenario(dir.path(), 250_000);
    dir
}

fn main() {
    let disk = setup(&std::env::temp_dir());
    let shm = Path::new("/dev/shm");
    let memory = shm.is_dir().then(|| setup(shm));
    let runs = (1..=3).flat_map(|run| {
        [
            (run, "false", &disk, "disk", "zstd"),
            (run, "false", &disk, "disk", "none"),
            (run, "true", &disk, "disk", "auto"),
        ]
        .into_iter()
        .chain((memory.as_ref()).map(|dir| (run, "false", dir, "memory", "none")))
    });
    for (run, args, dir, place, compression) in runs {
        let options = ["--spool-compression", compression];
        let stdout = sim::run(dir.path(), &format!("args-{args}.toml"), &options).stdout;
        let line = stdout
            .lines()
            .find(|l| l.contains(" records from "))
            .unwrap();
        let records: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
        let seconds: f64 = line
            .split(" in ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" s")
            .parse()
            .unwrap();
        let spool = std::fs::metadata(dir.path().join("run.rfraw"))
            .unwrap()
            .len();
        println!(
            "run {run}, args = {args:5}, spool on {place:6} compression {compression}: {records:.0} records in {seconds:.2} s = {:.2} M records/s into the spool, {:.1} bytes each; dropped {}; tool cost {}",
            records / seconds / 1e6,
            spool as f64 / records,
            field(&stdout, "dropped: "),
            field(&stdout, "tool cost: ")
        );
    }
}
