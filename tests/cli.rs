//! The `rocflow` binary as users and CI scripts run it: exit codes, messages, JSON output.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::{
    assert_fails, assert_says, assert_says_each, assert_success, rocflow, text, with_file,
    write_file,
};

#[test]
fn version_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(&["--version"], dir.path(), &[]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout).trim(),
        format!("rocflow {}", env!("CARGO_PKG_VERSION"))
    );
    let help = text(&rocflow(&["--help"], dir.path(), &[]).stdout);
    for command in [
        "validate",
        "explain",
        "init",
        "templates",
        "migrate-counters",
        "counters",
    ] {
        assert!(help.contains(command), "--help lacks {command}:\n{help}");
    }
}

#[test]
fn validate_reports_position_snippet_and_hint_with_exit_code_2() {
    let (dir, _) = with_file(
        "bad.toml",
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispach\"]\n",
    );
    write_file(
        dir.path(),
        "good.toml",
        "[pipeline]\nextends = [\"kernel-trace\"]\n",
    );
    let out = rocflow(&["validate", "good.toml", "bad.toml"], dir.path(), &[]);
    let stderr = assert_fails(
        &out,
        2,
        &[
            "error: unknown tracing domain `kernel_dispach`",
            "bad.toml:3:12",
        ],
    );
    assert!(
        stderr.contains("tracing = [\"kernel_dispach\"]"),
        "the snippet is shown:\n{stderr}"
    );
    assert_says(&stderr, "help: did you mean `kernel_dispatch`?");
    assert_eq!(text(&out.stdout), "good.toml: ok\nbad.toml: invalid\n");
    let ok = rocflow(&["validate", "good.toml"], dir.path(), &[]);
    assert_eq!(ok.status.code(), Some(0));
}

#[test]
fn validate_json_for_ci() {
    let (dir, _) = with_file(
        "bad.toml",
        "[[sink]]\nname = \"s\"\nkind = \"rocpd\"\npath = \"x/{hostnme}.db\"\n",
    );
    let out = rocflow(
        &["validate", "--format", "json", "bad.toml"],
        dir.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["valid"], false);
    let d = &report["files"][0]["diagnostics"][0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["message"], "unknown placeholder `{hostnme}`");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(4), Some(11))
    );
    assert_eq!(d["snippet"], "{hostnme}");
    assert_eq!(d["hint"], "did you mean `hostname`?");
}

#[test]
fn bad_set_is_a_user_error() {
    let (dir, _) = with_file("p.toml", "[pipeline]\nextends = [\"base\"]\n");
    let out = rocflow(&["validate", "p.toml", "--set", "tpo=3"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown parameter `tpo`"));
    assert!(text(&out.stderr).contains("did you mean `top`?"));
    let shipped = rocflow(&["explain", "--json", "trace-all"], dir.path(), &[]);
    assert!(
        shipped.status.success(),
        "a template name is a pipeline: {}",
        text(&shipped.stderr)
    );
    let missing = rocflow(&["explain", "nope.toml"], dir.path(), &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("cannot read pipeline `nope.toml`"));
}

#[test]
fn explain_json_is_the_plan() {
    let (dir, _) = with_file("p.toml", "[pipeline]\nextends = [\"pc-sampling\"]\n");
    let out = rocflow(
        &["explain", "--json", "p.toml", "--set", "interval=500"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = rocflow::plan::Plan::from_json(&text(&out.stdout)).expect("the JSON is a Plan");
    let pc = plan.contexts[0].pc_sampling.as_ref().unwrap();
    assert_eq!(
        (pc.interval, pc.method),
        (500, rocflow::sdk::PcSamplingMethod::HostTrap)
    );
    let human = text(&rocflow(&["explain", "p.toml"], dir.path(), &[]).stdout);
    assert_says(&human, "ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH = 11");
    assert_says(
        &human,
        "pc sampling: HostTrap method, Time unit, interval 1000",
    );
    // rocflow run turns AMD's beta on for PC sampling, and says so; only for it.
    let env = "application environment (a value already set wins)\n  ROCPROFILER_PC_SAMPLING_BETA_ENABLED=ON\n";
    assert_says(&human, env);
    let traced = text(&rocflow(&["explain", "kernel-trace"], dir.path(), &[]).stdout);
    assert!(!traced.contains("application environment"), "{traced}");
}

#[test]
fn explain_shows_the_time_limit_of_sql_steps() {
    let dir = tempfile::tempdir().unwrap();
    let step = |name: &str, timeout: &str| {
        format!(
            "[[post]]\nname = \"{name}\"\nkind = \"sql\"\ndatabase = \"run.db\"\nquery = \"select 1\"\npath = \"{name}.csv\"\n{timeout}"
        )
    };
    let pipeline = format!(
        "[pipeline]\nextends = [\"kernel-trace\"]\n{}{}",
        step("quick", "timeout = \"1.5s\"\n"),
        step("default", "")
    );
    write_file(dir.path(), "p.toml", &pipeline);
    let out = rocflow(&["explain", "p.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let human = text(&out.stdout);
    assert_says(
        &human,
        "quick: sql `select 1` -> quick.csv (stops after 1.5s)",
    );
    assert_says(
        &human,
        "default: sql `select 1` -> default.csv (stops after 60s)",
    );
}

#[test]
fn resolved_pipeline_is_a_valid_standalone_pipeline() {
    let (dir, _) = with_file(
        "p.toml",
        "[pipeline]\nname = \"mine\"\nextends = [\"counters-basic\"]\n",
    );
    let out = rocflow(
        &["explain", "--resolved", "p.toml", "--set", "top=3"],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let resolved = text(&out.stdout);
    assert!(!resolved.contains("extends"), "{resolved}");
    assert_says(&resolved, "[context.counters]");
    assert!(
        resolved.contains("name = \"per-dispatch\""),
        "the template's transform: {resolved}"
    );
    write_file(dir.path(), "resolved.toml", &resolved);
    let a = rocflow(
        &["explain", "--json", "p.toml", "--set", "top=3"],
        dir.path(),
        &[],
    );
    let b = rocflow(&["explain", "--json", "resolved.toml"], dir.path(), &[]);
    let a = rocflow::plan::Plan::from_json(&text(&a.stdout)).unwrap();
    let b = rocflow::plan::Plan::from_json(&text(&b.stdout)).unwrap();
    assert_eq!(a.contexts, b.contexts);
    assert_eq!(a.sinks, b.sinks);
    assert_eq!(a.posts, b.posts);
}

#[test]
fn templates_list_shows_origins_and_shadowing() {
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("team");
    let later = dir.path().join("later");
    std::fs::create_dir_all(team.join("gpu")).unwrap();
    std::fs::create_dir_all(&later).unwrap();
    write_file(&team, "base.toml", "[params]\nout = \"team\"\n");
    write_file(&later, "base.toml", "[params]\nout = \"later\"\n");
    write_file(
        &team.join("gpu"),
        "mi300.toml",
        "[pipeline]\nextends = [\"base\"]\n",
    );
    let path = std::env::join_paths([&team, &later]).unwrap();
    let env = [("ROCFLOW_PIPELINE_PATH", Path::new(&path))];
    let out = rocflow(&["templates", "list"], dir.path(), &env);
    assert!(out.status.success());
    let listing = text(&out.stdout);
    let base = listing
        .lines()
        .position(|l| l.starts_with("base "))
        .expect("base is listed");
    let lines: Vec<&str> = listing.lines().collect();
    let canonical = |p: &Path| p.canonicalize().unwrap().display().to_string();
    assert!(
        lines[base].contains(&canonical(&team.join("base.toml"))),
        "{listing}"
    );
    assert_eq!(
        lines[base + 1].trim(),
        format!("shadows {}", canonical(&later.join("base.toml"))),
        "{listing}"
    );
    assert_eq!(
        lines[base + 2].trim(),
        "shadows pipelines/base.toml (shipped)",
        "{listing}"
    );
    assert!(
        listing.lines().any(|l| l.starts_with("gpu/mi300 ")),
        "{listing}"
    );
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("kernel-trace ") && l.contains("(shipped)")),
        "{listing}"
    );

    let show = rocflow(&["templates", "show", "base"], dir.path(), &env);
    let shown = text(&show.stdout);
    assert!(
        shown.starts_with(&format!(
            "# {}\n# shadows {}\n# shadows pipelines/base.toml (shipped)\n[params]",
            canonical(&team.join("base.toml")),
            canonical(&later.join("base.toml"))
        )),
        "{shown}"
    );
    let show = rocflow(&["templates", "show", "kernel-trace"], dir.path(), &[]);
    assert!(text(&show.stdout).contains("name = \"kernel-trace\""));
    let unknown = rocflow(&["templates", "show", "kernel-trce"], dir.path(), &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("did you mean `kernel-trace`?"));
    let team_typo = rocflow(&["templates", "show", "gpu/mi30"], dir.path(), &env);
    assert!(
        text(&team_typo.stderr).contains("did you mean `gpu/mi300`?"),
        "team templates are suggested too: {}",
        text(&team_typo.stderr)
    );
}

/// A fresh directory with a team's template library, `team`, holding `text` as the
/// template file `name`: the directory and the library.
fn with_team_template(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("team");
    std::fs::create_dir_all(&team).unwrap();
    write_file(&team, name, text);
    (dir, team)
}

#[test]
fn using_a_shadowing_team_template_prints_a_note() {
    let (dir, team) = with_team_template(
        "kernel-trace.toml",
        "[pipeline]\nextends = [\"base\"]\n[[context]]\nname = \"k\"\ntracing = [\"kernel_dispatch\"]\n",
    );
    write_file(
        dir.path(),
        "app.toml",
        "[pipeline]\nextends = [\"kernel-trace\"]\n",
    );
    let env = [("ROCFLOW_PIPELINE_PATH", team.as_path())];
    let out = rocflow(&["validate", "app.toml"], dir.path(), &env);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    let team_template = team.join("kernel-trace.toml").canonicalize().unwrap();
    assert_says_each(
        &stderr,
        &[
            &format!(
                "note: template `kernel-trace` is {} (on ROCFLOW_PIPELINE_PATH)",
                team_template.display()
            ),
            "app.toml:2:12",
            "it shadows pipelines/kernel-trace.toml (shipped)",
        ],
    );
    // Run by name, the template itself is what shadows.
    let by_name = rocflow(&["explain", "kernel-trace"], dir.path(), &env);
    assert!(by_name.status.success(), "{}", text(&by_name.stderr));
    assert_says(&by_name.stderr, "note: template `kernel-trace` is");
    let without = rocflow(&["validate", "app.toml"], dir.path(), &[]);
    assert_eq!(
        text(&without.stderr),
        "",
        "no team template, nothing to note"
    );
}

#[test]
fn explain_lists_the_domains_with_the_release_that_added_the_newer_ones() {
    let dir = tempfile::tempdir().unwrap();
    let output = support::rocflow(&["explain", "--domains"], dir.path(), &[]);
    assert_success(&output);
    let listing = text(&output.stdout);
    let line = |name: &str| {
        (listing.lines())
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{listing}"))
            .to_owned()
    };
    assert!(
        line("hip_event")
            .ends_with("2 operations  -> api records (since rocprofiler-sdk 1.4.1 (ROCm 10.1))"),
        "{listing}"
    );
    assert!(line("hipfile_api").contains("(since rocprofiler-sdk 1.3.5 (ROCm 10.0))"));
    assert!(line("kernel_dispatch").ends_with("kernel_dispatch records"));
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rocflow"))
        .args(["explain", "--domains"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before rocflow writes
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "");
}

/// The binary allocates with jemalloc, which reads the settings it is built with: freed
/// pages go back after 200 ms, and four arenas hold them, not four per core, so that a long
/// run's peak is a short one's (README, "Memory stays bounded"). jemalloc prints the
/// settings in effect when asked to at exit.
#[test]
fn the_binary_allocates_with_jemalloc_in_four_arenas_returning_freed_pages_after_200_ms() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rocflow"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stats = text(&out.stderr);
    for setting in [
        "opt.narenas: 4\n",
        "opt.dirty_decay_ms: 200",
        "opt.muzzy_decay_ms: 0",
    ] {
        assert!(stats.contains(setting), "{setting} not in:\n{stats}");
    }
}

/// Uncomments the settings of a starter pipeline: its parameters and the example entries.
fn uncomment_settings(starter: &str) -> String {
    let setting = regex::Regex::new(r"^# (\[\[\w+\]\]|\w+ = .*)$").unwrap();
    starter
        .lines()
        .map(|line| match setting.is_match(line) {
            true => &line[2..],
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn init_writes_a_starter_for_every_shipped_template_that_validates_as_written_and_edited() {
    let dir = tempfile::tempdir().unwrap();
    for template in rocflow::pipeline::template::builtin_names() {
        let file = format!("my-{}.toml", template.replace('/', "-"));
        let out = rocflow(&["init", template, "-o", &file], dir.path(), &[]);
        assert!(out.status.success(), "{template}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            format!(
                "wrote {file}, a pipeline that extends `{template}`\n  rocflow run {file} -- ./app\n"
            )
        );
        let starter = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert_says(&starter, &format!("extends = [\"{template}\"]"));
        let validate = rocflow(&["validate", &file], dir.path(), &[]);
        assert!(
            validate.status.success(),
            "{template}: {}",
            text(&validate.stderr)
        );
        // Every parameter the template has is listed with its default, and uncommenting the
        // parameters and the examples gives a pipeline that still validates.
        let resolved = rocflow(&["explain", "--json", &file], dir.path(), &[]);
        let plan = rocflow::plan::Plan::from_json(&text(&resolved.stdout)).unwrap();
        assert!(!plan.params.is_empty(), "{template}: no parameters");
        for (name, default) in &plan.params {
            let toml = toml::Value::try_from(default).unwrap();
            assert!(
                starter.contains(&format!("\n# {name} = {toml}\n")),
                "{template}: `{name}` is not listed with its default {toml}:\n{starter}"
            );
        }
        let edited = format!("edited-{file}");
        write_file(dir.path(), &edited, &uncomment_settings(&starter));
        let validate = rocflow(&["validate", &edited], dir.path(), &[]);
        assert!(
            validate.status.success(),
            "{template}, uncommented: {}\n{}",
            text(&validate.stderr),
            uncomment_settings(&starter)
        );
    }
}

#[test]
fn an_edited_starter_overrides_what_its_examples_say() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(&["init"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let starter = std::fs::read_to_string(dir.path().join("pipeline.toml")).unwrap();
    assert!(
        starter.contains("extends = [\"kernel-trace\"]"),
        "kernel-trace is the default"
    );
    write_file(dir.path(), "pipeline.toml", &uncomment_settings(&starter));
    let out = rocflow(&["explain", "--json", "pipeline.toml"], dir.path(), &[]);
    let plan = rocflow::plan::Plan::from_json(&text(&out.stdout)).unwrap();
    assert_eq!(plan.contexts[0].name, "kernels");
    assert_eq!(plan.contexts[0].start.delay_ns, 10_000_000_000);
    let sinks: Vec<&str> = plan.sinks.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        sinks,
        ["rocpd", "csv-tables"],
        "perfetto removed, csv added"
    );
    assert_eq!(plan.sinks[1].path, "rocflow-out/csv-{hostname}-{pid}");
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let (dir, _) = with_file("pipeline.toml", "# mine\n");
    let out = rocflow(&["init", "trace-all"], dir.path(), &[]);
    assert_fails(
        &out,
        2,
        &[
            "error: `pipeline.toml` already exists",
            "pass --force to overwrite it",
        ],
    );
    let kept = std::fs::read_to_string(dir.path().join("pipeline.toml")).unwrap();
    assert_eq!(kept, "# mine\n");
    let itself = rocflow(
        &["init", "trace-all", "-o", "trace-all.toml"],
        dir.path(),
        &[],
    );
    assert_fails(&itself, 2, &["`trace-all.toml` would extend itself"]);
    let forced = rocflow(&["init", "trace-all", "--force"], dir.path(), &[]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    let written = std::fs::read_to_string(dir.path().join("pipeline.toml")).unwrap();
    assert_says(&written, "extends = [\"trace-all\"]");
}

#[test]
fn init_of_an_unknown_template_suggests_one_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(&["init", "kernel-trce"], dir.path(), &[]);
    assert_fails(
        &out,
        2,
        &[
            "error: template `kernel-trce` not found",
            "did you mean `kernel-trace`?",
        ],
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A name like no template's: a name on the command line is relative to no file.
    let out = rocflow(&["init", "NONEXISTENT"], dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_says(
        &stderr,
        "help: `rocflow templates list` shows the templates",
    );
    assert!(!stderr.contains("relative to this file"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn init_extends_team_templates_and_lists_their_parameters() {
    let (dir, team) = with_team_template(
        "cfd.toml",
        "[pipeline]\nextends = [\"kernel-trace\"]\n[params]\nproject = \"cfd\"\noutput_dir = \"/scratch/{project}\"\n",
    );
    let env = [("ROCFLOW_PIPELINE_PATH", team.as_path())];
    let out = rocflow(&["init", "cfd", "-o", "runs/solver.toml"], dir.path(), &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let starter = std::fs::read_to_string(dir.path().join("runs/solver.toml")).unwrap();
    assert_says(&starter, "name = \"solver\"");
    assert!(
        starter
            .contains("# output_dir = \"/scratch/{project}\"\n# top = 10\n# project = \"cfd\"\n"),
        "parameters in merge order, as written:\n{starter}"
    );
    let validate = rocflow(&["validate", "runs/solver.toml"], dir.path(), &env);
    assert!(validate.status.success(), "{}", text(&validate.stderr));
}

#[test]
fn completions_for_each_shell_and_manual_pages_come_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let script = |shell: &str| {
        let out = rocflow(&["completions", shell], dir.path(), &[]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let bash = script("bash");
    assert!(
        bash.contains("--kernel-include-regex"),
        "run's flags: {bash}"
    );
    assert!(script("zsh").starts_with("#compdef rocflow"));
    assert!(script("fish").contains("complete -c rocflow"));
    // bash reads the script and completes rocflow with it.
    write_file(dir.path(), "rocflow.bash", &bash);
    let registered = Command::new("bash")
        .args(["-c", "source ./rocflow.bash && complete -p rocflow"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(registered.status.success(), "{}", text(&registered.stderr));
    assert!(text(&registered.stdout).contains("_rocflow"));
    let unknown = rocflow(&["completions", "tcsh"], dir.path(), &[]);
    assert_eq!(unknown.status.code(), Some(2));

    let page = text(&rocflow(&["man"], dir.path(), &[]).stdout);
    assert_says(&page, ".TH rocflow 1");
    let out = rocflow(&["man", "--dir", "man1"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for page in [
        "rocflow.1",
        "rocflow-run.1",
        "rocflow-explain.1",
        "rocflow-completions.1",
    ] {
        assert!(dir.path().join("man1").join(page).is_file(), "{page}");
    }
    // The pages are the options' doc comments: none shows a reader Rust's links to code.
    for page in std::fs::read_dir(dir.path().join("man1")).unwrap() {
        let page = page.unwrap().path();
        let roff = std::fs::read_to_string(&page).unwrap();
        for link in ["[`", "crate::", "super::"] {
            assert!(!roff.contains(link), "{}: {link}", page.display());
        }
    }
    // The run page, as man shows it, has rocprofv3's options.
    let shown = Command::new("man")
        .args(["-l", "man1/rocflow-run.1"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(text(&shown.stdout).contains("--kernel-iteration-range"));
}

#[test]
fn templates_and_starters_name_the_schema_for_editors() {
    let repo = support::repo();
    for template in rocflow::pipeline::template::builtin_names() {
        let path = repo.join("pipelines").join(format!("{template}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let schema = text.lines().next().unwrap().strip_prefix("#:schema ");
        let schema = schema.unwrap_or_else(|| panic!("{template}: no #:schema first line"));
        assert!(
            path.parent().unwrap().join(schema).canonicalize().unwrap()
                == repo
                    .join("schemas/pipeline.schema.json")
                    .canonicalize()
                    .unwrap(),
            "{template}: {schema}"
        );
    }
    // What `templates show` prints is a pipeline rocflow reads (the line is a comment).
    let dir = tempfile::tempdir().unwrap();
    for template in rocflow::pipeline::template::builtin_names() {
        let shown = rocflow(&["templates", "show", template], dir.path(), &[]);
        let file = format!("shown-{template}.toml");
        write_file(dir.path(), &file, &text(&shown.stdout));
        let out = rocflow(&["validate", &file], dir.path(), &[]);
        assert!(out.status.success(), "{template}: {}", text(&out.stderr));
    }
    // A starter names the schema where the README's install puts it.
    let data = dir.path().join("data");
    let out = rocflow(
        &["init", "-o", "mine.toml"],
        dir.path(),
        &[("XDG_DATA_HOME", &data)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let starter = std::fs::read_to_string(dir.path().join("mine.toml")).unwrap();
    assert_eq!(
        starter.lines().next().unwrap(),
        format!(
            "#:schema {}",
            data.join("rocflow/pipeline.schema.json").display()
        )
    );
}
