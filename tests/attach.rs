//! `rocflow attach PID`: a process of the simulated device, started attachable and running
//! a paced scenario, is attached to for a while; the outputs hold only what it did while
//! attached, in whole iterations the scenario's truth accounts for, and it goes on after.
//! Each process that cannot be attached to is refused with why and what to do.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::kit::Kit;
use support::scenario::scenario_with;
use support::truth::{self, Collects, Part, Scenario};
use support::{
    Spawned, assert_fails, assert_success, rocflow, rocflow_command, sim_library, text, wait_until,
    write_file,
};

/// Kernel dispatches and HIP runtime calls, to CSV tables in `out`.
const PIPELINE: &str = "[[context]]\nname = \"trace\"\ntracing = [\"kernel_dispatch\", \"hip_runtime_api\"]\n\
                        [[sink]]\nname = \"csv\"\nkind = \"csv\"\npath = \"out\"\n";

/// A process of the simulated device running `scenario` under `program`, started
/// attachable (`ROCP_TOOL_ATTACH=1`) or not; returns once its SDK has loaded.
fn target(scenario: &Path, attachable: bool, program: &[&str]) -> Spawned {
    let mut command = Command::new(program[0]);
    command
        .args(&program[1..])
        .env("LD_PRELOAD", sim_library())
        .env("ROCFLOW_SIM_SCENARIO", scenario)
        .env_remove("ROCP_TOOL_LIBRARIES");
    match attachable {
        true => command.env("ROCP_TOOL_ATTACH", "1"),
        false => command.env_remove("ROCP_TOOL_ATTACH"),
    };
    let spawned = Spawned::start(&mut command);
    let maps = format!("/proc/{}/maps", spawned.0.id());
    wait_until("the target loads the simulated SDK", || {
        std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("librocflow_sim.so"))
    });
    if attachable {
        wait_until("the target runs its attach thread", || {
            threads(&spawned).contains(&"rocp-bg-attach".to_owned())
        });
    }
    spawned
}

fn threads(target: &Spawned) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{}/task", target.0.id())).unwrap();
    (tasks.flatten())
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|c| c.trim_end().to_owned())
        .collect()
}

/// Nanoseconds of `CLOCK_BOOTTIME`, the SDK's clock.
fn boottime() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn attach(pid: u32, args: &[&str], dir: &Path) -> Output {
    let pid = pid.to_string();
    rocflow(&[&["attach", &pid][..], args].concat(), dir, &[])
}

fn running(target: &mut Spawned) -> bool {
    target.0.try_wait().unwrap().is_none()
}

/// The case: a long-running process (one thread, an iteration every 100 ms for
/// 30 s) is attached to a second after it started, for a second. Its outputs hold whole
/// iterations, exactly what the scenario's truth says so many iterations make, all of
/// them done while rocflow was attached; the process goes on.
#[test]
fn an_attach_records_only_the_attached_span_and_leaves_the_process_running() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("threads", 1), ("iterations", 300), ("duration_ms", 30_000)];
    let (mut doc, path) = scenario_with(dir.path(), "long.toml", &settings);
    write_file(dir.path(), "p.toml", PIPELINE);
    let mut target = target(&path, true, &["/bin/sleep", "60"]);
    std::thread::sleep(Duration::from_secs(1));

    let before = boottime();
    let output = attach(target.0.id(), &["p.toml", "--duration", "1s"], dir.path());
    let after = boottime();
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the duration ended; detached, the process goes on"),
        "{stderr}"
    );
    assert!(running(&mut target), "the target goes on after the detach");

    let tables = dir.path().join("out");
    let (seen, dispatches) = truth::csv_tables(&tables);
    let rows = truth::csv_table(&tables, "kernel_dispatch");
    assert!(!rows.is_empty(), "{stderr}");
    for row in &rows {
        let (start, end): (u64, u64) = (
            row["start_ns"].parse().unwrap(),
            row["end_ns"].parse().unwrap(),
        );
        assert!(
            before <= start && end <= after,
            "a dispatch of {start}..{end} is outside the attach, {before}..{after}"
        );
    }
    // The iterations the attach saw: whole ones, fewer than the process had done.
    let kernels = Scenario::of(&doc).kernels.len();
    assert_eq!(
        rows.len() % kernels,
        0,
        "whole iterations: {} dispatches",
        rows.len()
    );
    let iterations = rows.len() / kernels;
    let most = (after - before).div_ceil(100_000_000) as usize + 1;
    assert!(
        (1..=most).contains(&iterations),
        "{iterations} iterations in {most} periods"
    );
    doc["scenario"]["iterations"] = toml::Value::Integer(iterations as i64);
    let collects = Collects {
        dispatches: true,
        api: vec![("hip_runtime_api", vec![], vec![])],
        ..Collects::default()
    };
    let want = Scenario::of(&doc).truth(&collects, 1, &dispatches);
    let differences = want.differences(&seen, &[Part::Kernels, Part::KernelTime, Part::Api], 0.0);
    assert!(differences.is_empty(), "{}", differences.join("\n"));

    // Attached once, as AMD's SDK without its experimental reattach: a second attach is
    // refused by the process, which still goes on.
    let again = attach(
        target.0.id(),
        &["p.toml", "--duration", "100ms"],
        dir.path(),
    );
    assert_fails(
        &again,
        1,
        &["the process refused: the process was attached before"],
    );
    assert!(running(&mut target));
}

/// Without a duration, the attach lasts until the process exits: what it did until then
/// is the profile, and rocflow says the process ended.
#[test]
fn an_attach_without_a_duration_ends_with_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("threads", 1), ("iterations", 20), ("duration_ms", 2000)];
    let (_, path) = scenario_with(dir.path(), "short.toml", &settings);
    write_file(dir.path(), "p.toml", PIPELINE);
    let target = target(&path, true, &["/bin/sleep", "0.5"]);
    let output = attach(target.0.id(), &["p.toml"], dir.path());
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("the process exited"), "{stderr}");
    assert!(!truth::csv_table(&dir.path().join("out"), "kernel_dispatch").is_empty());
}

/// Ctrl-C detaches: what was collected until then is the profile, and the process goes
/// on.
#[test]
fn ctrl_c_detaches_and_leaves_the_process_running() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("threads", 1), ("iterations", 300), ("duration_ms", 30_000)];
    let (_, path) = scenario_with(dir.path(), "long.toml", &settings);
    write_file(dir.path(), "p.toml", PIPELINE);
    let mut target = target(&path, true, &["/bin/sleep", "60"]);
    let pid = target.0.id().to_string();
    let attached = rocflow_command(&["attach", &pid, "p.toml"], dir.path(), &[])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the tool is loaded", || {
        threads(&target).contains(&"rocflow-flush".to_owned())
    });
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the rocflow this test started.
    unsafe { libc::kill(attached.id() as i32, libc::SIGINT) };
    let output = attached.wait_with_output().unwrap();
    assert_success(&output);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("interrupted; detached, the process goes on"),
        "{stderr}"
    );
    assert!(!truth::csv_table(&dir.path().join("out"), "kernel_dispatch").is_empty());
    assert!(running(&mut target));
}

/// A process whose work was over before the attach: the attach collected nothing, which
/// fails and writes no outputs; the process goes on.
#[test]
fn an_attach_that_collects_nothing_fails() {
    let dir = tempfile::tempdir().unwrap();
    let settings = [("threads", 1), ("iterations", 4), ("duration_ms", 200)];
    let (_, path) = scenario_with(dir.path(), "over.toml", &settings);
    write_file(dir.path(), "p.toml", PIPELINE);
    let mut target = target(&path, true, &["/bin/sleep", "60"]);
    std::thread::sleep(Duration::from_millis(600));
    let output = attach(
        target.0.id(),
        &["p.toml", "--duration", "300ms"],
        dir.path(),
    );
    assert_fails(
        &output,
        1,
        &[&format!(
            "error: no records were collected while attached to process {}",
            target.0.id()
        )],
    );
    let written = std::fs::read_dir(dir.path().join("out"))
        .into_iter()
        .flatten()
        .count();
    assert_eq!(written, 0, "no outputs that look like a profile");
    assert!(running(&mut target));
}

#[test]
fn a_pid_of_no_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Past the kernel's largest pid (2^22).
    let output = attach(4_194_305, &[], dir.path());
    assert_fails(
        &output,
        2,
        &[
            "error: no process has pid 4194305",
            "give the pid of a running process",
        ],
    );
}

/// A process that loads no SDK, and one that loads it without `ROCP_TOOL_ATTACH=1`: each
/// refused with what is missing and how to restart it.
#[test]
fn a_process_not_started_attachable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = scenario_with(dir.path(), "s.toml", &[]);
    let plain = Spawned::start(Command::new("/bin/sleep").arg("30"));
    wait_until("sleep runs", || {
        std::fs::read_link(format!("/proc/{}/exe", plain.0.id()))
            .is_ok_and(|exe| exe.ends_with("sleep"))
    });
    let output = attach(plain.0.id(), &[], dir.path());
    assert_fails(
        &output,
        2,
        &[
            &format!(
                "process {} was not started attachable: it loads no rocprofiler-sdk",
                plain.0.id()
            ),
            "restart it with ROCP_TOOL_ATTACH=1 and LD_PRELOAD=librocprofiler-register.so",
        ],
    );

    let unmarked = target(&path, false, &["/bin/sleep", "30"]);
    let output = attach(unmarked.0.id(), &[], dir.path());
    assert_fails(
        &output,
        2,
        &[&format!(
            "process {} was not started attachable: it was started without ROCP_TOOL_ATTACH=1",
            unmarked.0.id()
        )],
    );
}

/// ptrace's rule, applied by the kernel: a user may not attach to another user's process.
/// rocflow runs here as `nobody` against a process of root's (the tests run as root; as
/// anyone else, the case cannot be made and the test says so).
#[test]
fn another_users_process_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: cannot run rocflow as another user; nothing checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, path) = scenario_with(dir.path(), "s.toml", &[]);
    let target = target(&path, true, &["/bin/sleep", "30"]);
    let pid = target.0.id().to_string();
    let rocflow = rocflow_command(&["attach", &pid], dir.path(), &[]);
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(rocflow.get_program())
        .args(rocflow.get_args())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_fails(
        &output,
        2,
        &[
            &format!(
                "error: process {pid} cannot be traced: it belongs to user 0, not to you (user 65534)"
            ),
            "run rocflow attach as that user, or as root",
        ],
    );
}

/// A process on AMD's real SDK kit (`../shared/realsdk`), started as AMD's attachment asks
/// (`ROCP_TOOL_ATTACH=1`, rocprofiler-register preloaded): the kit's rocprofiler-register
/// 0.5.0 exports neither of the functions an attach calls in the target, so the process
/// cannot be attached to, and the refusal names them and the release that brought them.
#[test]
fn a_process_on_the_real_sdk_kit_is_refused_for_its_registers_missing_entry_points() {
    let kit = Kit::get();
    let register = kit.root.join("lib/librocprofiler-register.so.0.5.0");
    let mut command = Command::new("/bin/sleep");
    command
        .arg("30")
        .env("LD_PRELOAD", &register)
        .env("LD_LIBRARY_PATH", kit.library_path())
        .env("ROCP_TOOL_ATTACH", "1")
        .env_remove("ROCP_TOOL_LIBRARIES");
    let target = Spawned::start(&mut command);
    let maps = format!("/proc/{}/maps", target.0.id());
    wait_until("the target loads the kit's rocprofiler-register", || {
        std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("librocprofiler-register.so"))
    });
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "p.toml", PIPELINE);
    let output = attach(target.0.id(), &["p.toml"], dir.path());
    assert_fails(
        &output,
        2,
        &[
            &format!(
                "process {} was not started attachable: its rocprofiler-register 0.5.0 ({}) has no attach entry point: it exports no `rocprofiler_register_attach` or `rocprofiler_register_detach`, which AMD's process attachment calls in the target and which came with rocprofiler-sdk 1.1 (ROCm 7.1)",
                target.0.id(),
                register.display()
            ),
            "no restart makes it attachable on this ROCm: profile it from its start with `rocflow run`",
        ],
    );
    assert!(!dir.path().join("out").exists(), "no outputs");
}
