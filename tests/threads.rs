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
fn the_stages_yield_the_processor_to_the_application() {
    // The application (a shell) waits until the runner's main thread, the one the stages
    // decode on, took the lowest priority, then says its own and each runner thread's.
    let script = r#"nice_of() { sed 's/.*) //' "$1" | cut -d' ' -f17; }
        for i in $(seq 250); do [ "$(nice_of /proc/$PPID/stat)" = 19 ] && break; sleep 0.02; done
        echo "application $(nice_of /proc/$$/stat)"
        echo "main $(nice_of /proc/$PPID/task/$PPID/stat)"
        for t in /proc/$PPID/task/*; do echo "$(tr ' ' _ < $t/comm) $(nice_of $t/stat)"; done"#;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipeline = "[pipeline]\nname = \"yield\"\n[[context]]\nname = \"trace\"\n\
                    tracing = [\"kernel_dispatch\"]\n";
    write_file(d, "p.toml", pipeline);
    let args = [
        "run", "p.toml", "--device", "sim", "--", "/bin/sh", "-c", script,
    ];
    let out = rocflow(&args, d, &[]);
    assert_success(&out);
    // SAFETY: a plain system call; the runner, and so the application, inherited this
    // thread's priority.
    let own = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }.to_string();
    let own = own.as_str();
    let said = support::text(&out.stdout);
    let lines: Vec<Vec<&str>> = (said.lines())
        .map(|l| l.split(' ').collect())
        .filter(|l: &Vec<&str>| l.len() == 2)
        .collect();
    let nice_of = |name: &str| -> Vec<&str> {
        (lines.iter())
            .filter(|l| l[0].starts_with(name))
            .map(|l| l[1])
            .collect()
    };
    // The application keeps the priority it was started with, as do the threads taking
    // its frames in; the stages' thread and the pool's take the lowest.
    assert_eq!(nice_of("application"), [own], "{said}");
    assert_eq!(nice_of("main"), ["19"], "{said}");
    let pool = nice_of("rocflow-pool");
    assert!(
        !pool.is_empty() && pool.iter().all(|&n| n == "19"),
        "{said}"
    );
    let streams = nice_of("stream-");
    assert!(
        !streams.is_empty() && streams.iter().all(|&n| n == own),
        "{said}"
    );
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
