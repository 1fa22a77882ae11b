//! Shell completions complete what rocflow finds (template names, counter names, devices)
//! by asking `rocflow __complete`, run here through bash's own completion of a command
//! line; the manual pages carry examples, files and environment besides the `--help` text.

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{assert_says_each, repo, rocflow, rocflow_exe, text, write_file};

/// Counter definitions with two counters.
const DEFINITIONS: &str = "SQ_WAVES:\n  architectures:\n    gfx942: {block: SQ, event: 4}\n  description: waves\n\
GRBM_COUNT:\n  architectures:\n    gfx942: {block: GRBM, event: 0}\n  description: cycles\n";

/// A user's setup: a team template directory and counter definitions, and the bash script.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("team")).unwrap();
        write_file(
            &dir.path().join("team"),
            "solver.toml",
            "[pipeline]\nname = \"solver\"\nextends = [\"kernel-trace\"]\n",
        );
        std::fs::create_dir_all(dir.path().join("metrics")).unwrap();
        write_file(
            &dir.path().join("metrics"),
            "counter_defs.yaml",
            DEFINITIONS,
        );
        let script = rocflow(&["completions", "bash"], dir.path(), &[]);
        assert!(script.status.success(), "{}", text(&script.stderr));
        write_file(dir.path(), "rocflow.bash", &text(&script.stdout));
        Setup { dir }
    }

    /// What bash offers at the end of `line` (as typed, in the repository).
    fn complete(&self, line: &str) -> Vec<String> {
        const COMPLETE: &str = r#"source "$SCRIPT"
COMP_WORDBREAKS=$' \t\n"'"'"'><=;|&(:'
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_rocflow rocflow "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
        let bin: PathBuf = rocflow_exe().parent().unwrap().to_path_buf();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .args(["-c", COMPLETE, "bash", line])
            .current_dir(repo())
            .env("PATH", path)
            .env("SCRIPT", self.dir.path().join("rocflow.bash"))
            .env("ROCFLOW_PIPELINE_PATH", self.dir.path().join("team"))
            .env("ROCPROFILER_METRICS_PATH", self.dir.path().join("metrics"))
            .env_remove("ROCM_PATH")
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {}", text(&out.stderr));
        let mut offered: Vec<String> = text(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        offered.sort();
        offered
    }
}

#[test]
fn bash_completes_templates_counters_and_devices_from_what_rocflow_finds() {
    let setup = Setup::new();
    // Templates: the shipped library's and the team's, then files.
    assert_eq!(
        setup.complete("rocflow run kernel-"),
        ["kernel-hotspots", "kernel-trace"]
    );
    assert_eq!(setup.complete("rocflow validate sol"), ["solver"]);
    assert_eq!(
        setup.complete("rocflow templates show counters-r"),
        ["counters-rdna"]
    );
    let files = setup.complete("rocflow explain pipelines/kernel-t");
    assert_eq!(files, ["pipelines/kernel-trace.toml"]);
    // Counters of the definitions found, for --pmc and `counters show`.
    assert_eq!(setup.complete("rocflow run --pmc SQ"), ["SQ_WAVES"]);
    assert_eq!(
        setup.complete("rocflow run --pmc "),
        ["GRBM_COUNT", "SQ_WAVES"]
    );
    assert_eq!(setup.complete("rocflow counters show GR"), ["GRBM_COUNT"]);
    // Devices, and scenario files after `sim:` (bash completes after the colon).
    assert_eq!(
        setup.complete("rocflow agents --device "),
        ["rocm", "sim", "sim:"]
    );
    assert_eq!(
        setup.complete("rocflow doctor --device si"),
        ["sim", "sim:"]
    );
    assert_eq!(
        setup.complete("rocflow run --device sim:examples/sim/mi"),
        ["examples/sim/mi300x-rccl.toml", "examples/sim/mi300x.toml"]
    );
    // Everything else is clap's: options, and the application's arguments after `--`.
    assert!(
        setup
            .complete("rocflow run --sp")
            .contains(&"--spool".to_string())
    );
    assert!(
        setup
            .complete("rocflow run kernel-trace -- kernel-")
            .is_empty()
    );
}

#[test]
fn complete_lists_only_what_is_found_and_never_fails() {
    let dir = tempfile::tempdir().unwrap();
    let listed = |args: &[&str], dir: &Path| {
        let mut all = vec!["__complete"];
        all.extend_from_slice(args);
        let out = rocflow(&all, dir, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(
        listed(&["devices", "sim:examples/sim/w"], &repo()),
        "sim:examples/sim/w7900.toml\n"
    );
    assert_eq!(
        listed(&["devices", "sim:examples/s"], &repo()),
        "sim:examples/session/\nsim:examples/sim/\n"
    );
    // No definitions anywhere: no counter, and no error.
    let metrics = dir.path().join("none");
    let out = rocflow(
        &["__complete", "counters"],
        dir.path(),
        &[
            ("ROCPROFILER_METRICS_PATH", &metrics),
            ("ROCM_PATH", &metrics),
        ],
    );
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert_eq!(listed(&["templates", "trace-"], dir.path()), "trace-all\n");
}

#[test]
fn zsh_and_fish_ask_rocflow_for_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let script = |shell: &str| text(&rocflow(&["completions", shell], dir.path(), &[]).stdout);
    let zsh = script("zsh");
    // zsh calls the file's function, `_rocflow`: it wraps clap's, renamed.
    assert!(zsh.starts_with("#compdef rocflow"));
    let wrapper = zsh.find("\n_rocflow() {").expect("the wrapper");
    assert!(zsh.contains("\n_rocflow_static() {"));
    assert!(wrapper < zsh.find("if [ \"$funcstack[1]\" = \"_rocflow\" ]").unwrap());
    assert_says_each(
        &zsh,
        &[
            "__complete $kind \"$cur\"",
            "--pmc) kind=counters",
            "--device) kind=devices",
        ],
    );
    let fish = script("fish");
    assert_says_each(
        &fish,
        &[
            "complete -c rocflow -n \"__fish_rocflow_using_subcommand run\" -l pmc -x -a \"(rocflow __complete counters (commandline -ct))\"",
            "complete -c rocflow -n \"__fish_rocflow_using_subcommand doctor\" -l device -x -a \"(rocflow __complete devices (commandline -ct))\"",
            "complete -c rocflow -n \"__fish_rocflow_using_subcommand templates; and __fish_seen_subcommand_from show\" -a \"(rocflow __complete templates (commandline -ct))\"",
            "complete -c rocflow -n \"__fish_rocflow_using_subcommand counters; and __fish_seen_subcommand_from show\" -x -a \"(rocflow __complete counters (commandline -ct))\"",
        ],
    );
}

#[test]
fn manual_pages_have_examples_files_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let page = |args: &[&str]| {
        let mut all = vec!["man"];
        all.extend_from_slice(args);
        let out = rocflow(&all, dir.path(), &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let run = page(&["run"]);
    assert_says_each(
        &run,
        &[
            ".TH rocflow-run 1",
            ".SH EXAMPLES",
            "rocflow run kernel\\-trace \\-\\- ./app \\-\\-its\\-args",
            ".SH FILES",
            ".I /opt/rocm/share/rocprofiler\\-sdk/counter_defs.yaml",
            ".SH ENVIRONMENT",
            ".B ROCFLOW_PIPELINE_PATH",
            ".B ROCPROFILER_METRICS_PATH",
            ".B ROCFLOW_AMD_SMI_LIBRARY",
        ],
    );
    // Each page its own examples; rocflow's page all of them.
    assert!(!run.contains("rocflow doctor \\-\\-format json"));
    assert_says_each(page(&["doctor"]), &["rocflow doctor \\-\\-format json"]);
    assert_says_each(
        page(&[]),
        &[
            ".TH rocflow 1",
            "rocflow doctor",
            "rocflow run kernel\\-trace",
        ],
    );
    assert_says_each(
        page(&["counters", "list"]),
        &[
            ".TH rocflow-counters-list 1",
            "rocflow counters list \\-\\-arch gfx942",
        ],
    );
    let unknown = rocflow(&["man", "nope"], dir.path(), &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(unknown.stdout.is_empty());

    // The pages --dir writes are the same, and man shows the sections.
    let out = rocflow(&["man", "--dir", "man1"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(dir.path().join("man1/rocflow-run.1")).unwrap();
    assert_eq!(written, run);
    assert!(dir.path().join("man1/rocflow-counters-list.1").is_file());
    let shown = Command::new("man")
        .args(["-l", "man1/rocflow-run.1"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "200")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert_says_each(
        &shown.stdout,
        &[
            "EXAMPLES",
            "rocflow run kernel-trace -- ./app --its-args",
            "FILES",
            "ENVIRONMENT",
            "ROCFLOW_PLUGIN_PATH",
        ],
    );
}
