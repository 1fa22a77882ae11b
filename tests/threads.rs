//! One setting of how many threads rocflow works on (`--threads N`, else
//! `RAYON_NUM_THREADS`): every part that starts threads of its own keeps to it, whatever
//! the machine's cores.

use std::path::Path;

use support::{
    assert_fails, assert_success, generated, launches_scenario, output_and_most_threads, rocflow,
    rocflow_command, sim_app, write_file,
};

/// The threads that work: rayon's pool, the rocpd source's readers, the rocpd sink's
/// writers, the spool's compressor (its name cut to the 15 bytes a thread's name keeps).
const WORKERS: [&str; 4] = ["rocflow-pool", "rocpd-read", "rocpd", "rocflow-compres"];

/// Runs rocflow with `args` and `env` in `dir` to its success; returns the most threads of
/// each of [`WORKERS`] it had at once.
fn most_workers(args: &[&str], dir: &Path, env: &[(&str, &Path)]) -> Vec<usize> {
    let mut command = rocflow_command(args, dir, &[]);
    command.env_remove("RAYON_NUM_THREADS");
    for (key, value) in env {
        command.env(key, value);
    }
    let (out, most) = output_and_most_threads(&mut command, &WORKERS);
    assert_success(&out);
    most
}

#[test]
fn reading_databases_and_writing_them_keeps_to_the_threads_given() {
    // Eight databases (pieces enough for any number of readers here), read and written
    // again a database per process: readers and writers are each as many as the setting,
    // one or three on this machine's cores alike, the option winning over the variable.
    let write = concat!(
        support::generated_pipeline!("per-process", "t"),
        support::sink!("databases", "rocpd", "db/{pid}.db"),
    );
    let read = concat!(
        support::generated_pipeline!("per-process", "t"),
        support::sink!("databases", "rocpd", "again/{pid}.db"),
    );
    let args = ["--records", "80000", "--processes", "8", "--seed", "3"];
    let dir = generated("write.toml", write, &args);
    let d = dir.path();
    write_file(d, "read.toml", read);
    assert_success(&rocflow(&["replay", "run.rfraw", "write.toml"], d, &[]));
    let again = ["replay", "db", "read.toml"];
    let with = |threads: &'static str| [&again[..], &["--threads", threads]].concat();
    let variable = [("RAYON_NUM_THREADS", Path::new("3"))];
    assert_eq!(most_workers(&with("1"), d, &[]), [1, 1, 1, 0]);
    assert_eq!(most_workers(&with("3"), d, &[]), [3, 3, 3, 0]);
    assert_eq!(most_workers(&again, d, &variable), [3, 3, 3, 0]);
    assert_eq!(most_workers(&with("1"), d, &variable), [1, 1, 1, 0]);
    let databases = |dir: &str| std::fs::read_dir(d.join(dir)).unwrap().count();
    assert_eq!(databases("again"), 8);
}

#[test]
fn the_spools_compressor_works_on_half_the_threads_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    launches_scenario(d, 3000);
    let pipeline = "[pipeline]\nname = \"spool\"\n[[context]]\nname = \"trace\"\n\
                    tracing = [\"kernel_dispatch\", \"hip_runtime_api\"]\n";
    write_file(d, "p.toml", pipeline);
    let app = sim_app();
    let run = |threads: &str| {
        let args = [
            "run",
            "p.toml",
            "--device",
            "sim:launches.toml",
            "--threads",
            threads,
        ];
        let rest = [
            "--spool-compression",
            "zstd",
            "--",
            app.to_str().unwrap(),
            "exit",
            "0",
        ];
        most_workers(&[&args[..], &rest].concat(), d, &[])
    };
    assert_eq!(run("1"), [1, 0, 0, 1]);
    assert_eq!(run("4"), [4, 0, 0, 2]);
}

#[test]
fn a_number_of_threads_that_is_none_is_one_error() {
    let dir = generated("p.toml", support::generated_pipeline!("p", "t"), &[]);
    let d = dir.path();
    let inspect = ["inspect", "run.rfraw"];
    let out = rocflow(&["inspect", "run.rfraw", "--threads", "0"], d, &[]);
    assert_fails(&out, 2, &["invalid value '0' for '--threads <N>'"]);
    assert!(out.stdout.is_empty());
    let many = [("RAYON_NUM_THREADS", Path::new("many"))];
    let out = rocflow(&inspect, d, &many);
    let stderr = assert_fails(
        &out,
        2,
        &["RAYON_NUM_THREADS=many is not a number of threads"],
    );
    assert_eq!(stderr.matches("error").count(), 1, "{stderr}");
    assert!(out.stdout.is_empty());
    // The option is the setting, whatever the variable says.
    let given = ["inspect", "run.rfraw", "--threads", "2"];
    assert_success(&rocflow(&given, d, &many));
}
