//! `rocflow migrate-counters` and `rocflow counters …` as users and CI scripts run them:
//! exit codes, what is written where, and diagnostics with their place.

use std::path::Path;
use std::process::Output;
use support::counters::{LEGACY, STANDARD};
use support::{
    assert_fails, assert_says, assert_says_each, rocflow, rocflow_without_rocm as without_rocm,
    text, with_file,
};

/// A counter definition file of `../shared/data`, as a command-line argument.
fn shared(name: &str) -> String {
    support::counters::shared(name).display().to_string()
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited")
}

#[test]
fn migrate_check_tells_ci_whether_a_file_needs_migrating() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = rocflow(
        &["migrate-counters", "-i", &shared(LEGACY), "--check"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&legacy), 1, "{}", text(&legacy.stderr));
    assert!(text(&legacy.stderr).contains("needs migrating: 789 counters"));
    assert!(legacy.stdout.is_empty());
    let standard = rocflow(
        &["migrate-counters", "-i", &shared(STANDARD), "--check"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&standard), 0, "{}", text(&standard.stderr));
}

#[test]
fn migrate_writes_the_output_file_which_then_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    let out = rocflow(
        &["migrate-counters", "-i", &shared(LEGACY), "-o", "out.yaml"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let written = std::fs::read_to_string(dir.path().join("out.yaml")).unwrap();
    assert!(written.starts_with("rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n"));
    assert_eq!(written.matches("\n  - name: ").count(), 789);

    let again = rocflow(
        &["migrate-counters", "-i", "out.yaml", "--check"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&again), 0);
    let checked = rocflow(&["counters", "check", "out.yaml"], dir.path(), &[]);
    assert_eq!(code(&checked), 0, "{}", text(&checked.stdout));
    assert_eq!(
        text(&checked.stdout),
        "out.yaml: 789 counters, no problems found\n"
    );

    // Without -o the result goes to standard output, the same text.
    let stdout = rocflow(
        &["migrate-counters", "-i", &shared(LEGACY)],
        dir.path(),
        &[],
    );
    assert_eq!(text(&stdout.stdout), written);
}

#[test]
fn migrate_in_place_replaces_the_file() {
    let (dir, file) = with_file(
        "defs.yaml",
        "A:\n  architectures:\n    gfx942/gfx90a: {block: SQ, event: 1}\n  description: x\n",
    );
    let out = rocflow(
        &["migrate-counters", "-i", "defs.yaml", "--in-place"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&out), 0);
    assert_says(&out.stderr, "warning: no `schema-version`");
    let migrated = std::fs::read_to_string(&file).unwrap();
    assert!(
        migrated
            .contains("    - architectures:\n      - gfx90a\n      - gfx942\n      block: SQ\n")
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["defs.yaml"], "no temporary file is left behind");
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// `rocflow migrate-counters args…` in `dir`, under `umask`.
fn migrate_under_umask(args: &[&str], dir: &Path, umask: libc::mode_t) -> Output {
    use std::os::unix::process::CommandExt;
    let mut command = support::rocflow_command(args, dir, &[]);
    // SAFETY: between fork and exec the closure calls only umask, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            libc::umask(umask);
            Ok(())
        });
    }
    command.output().expect("rocflow runs")
}

/// A file migrated in place keeps its mode, as an edit would; a new file gets the
/// umask's, as the shell's `>` gives.
#[test]
fn migrate_keeps_the_mode_of_the_file_it_replaces_and_new_files_get_the_umasks() {
    use std::os::unix::fs::PermissionsExt;
    let legacy = "A:\n  architectures:\n    gfx942: {block: SQ, event: 1}\n  description: x\n";
    let (dir, file) = with_file("defs.yaml", legacy);
    for kept in [0o644, 0o640, 0o755] {
        std::fs::write(&file, legacy).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(kept)).unwrap();
        let args = ["migrate-counters", "-i", "defs.yaml", "--in-place"];
        let out = migrate_under_umask(&args, dir.path(), 0o077);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("counters:")
        );
        assert_eq!(mode(&file), kept, "{kept:o}");
    }
    for (umask, wanted) in [(0o022, 0o644), (0o027, 0o640)] {
        let out_file = format!("out-{umask:o}.yaml");
        let args = ["migrate-counters", "-i", "defs.yaml", "-o", &out_file];
        let out = migrate_under_umask(&args, dir.path(), umask);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        assert_eq!(mode(&dir.path().join(&out_file)), wanted, "umask {umask:o}");
    }
}

#[test]
fn invalid_input_exits_2_with_the_place_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = "schema-version: 1\nA:\n  architectures:\n    gfx942: {block: SQ, event: 1}\n  description: x\nA:\n  architectures:\n    gfx90a: {expression: B}\n  description: y\n";
    std::fs::write(dir.path().join("bad.yaml"), bad).unwrap();
    let out = rocflow(
        &["migrate-counters", "-i", "bad.yaml", "-o", "out.yaml"],
        dir.path(),
        &[],
    );
    assert_fails(
        &out,
        2,
        &[
            "error: counter `A` is defined twice",
            "bad.yaml:6:1",
            "first defined at bad.yaml:2:1",
        ],
    );
    assert!(!dir.path().join("out.yaml").exists());

    let missing = rocflow(&["migrate-counters", "-i", "nope.yaml"], dir.path(), &[]);
    assert_eq!(code(&missing), 1);
    assert!(text(&missing.stderr).contains("reading nope.yaml"));
}

#[test]
fn check_prints_each_finding_with_its_place_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let defs = "schema-version: 1\nA:\n  architectures:\n    gfx942:\n      expression: reduce(SQ_WAVE,sum)*2\n  description: x\nSQ_WAVES:\n  architectures:\n    gfx942: {block: SQ, event: 4}\n  description: y\n";
    std::fs::write(dir.path().join("defs.yaml"), defs).unwrap();
    let out = rocflow(&["counters", "check", "defs.yaml"], dir.path(), &[]);
    assert_eq!(code(&out), 1);
    let stdout = text(&out.stdout);
    assert_says_each(
        &stdout,
        &[
            "error: `SQ_WAVE` is not defined for gfx942",
            "defs.yaml:5:26",
            "did you mean `SQ_WAVES`?",
        ],
    );
    assert!(
        stdout.ends_with("defs.yaml: 2 counters, 1 problem(s) found\n"),
        "{stdout}"
    );

    for file in [LEGACY, STANDARD] {
        let out = rocflow(&["counters", "check", &shared(file)], dir.path(), &[]);
        assert_eq!(code(&out), 0, "{}", text(&out.stdout));
    }
}

#[test]
fn list_filters_by_architecture_kind_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let defs = shared(STANDARD);
    let list = |extra: &[&str]| {
        let mut args = vec!["counters", "list", "--counters", &defs];
        args.extend(extra);
        let out = rocflow(&args, dir.path(), &[]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(list(&[]).lines().count(), 797);
    let derived = list(&["--arch", "gfx942", "--derived", "--grep", "GPU_UTIL"]);
    assert_eq!(
        derived.split_whitespace().take(2).collect::<Vec<_>>(),
        ["GPU_UTIL", "derived"]
    );
    let hardware = list(&["--arch", "gfx942", "--hardware"]);
    assert!(hardware.lines().all(|l| l.contains(" hardware ")));
    assert!(hardware.lines().any(|l| l.starts_with("GRBM_GUI_ACTIVE ")));
    assert!(!hardware.contains("GPU_UTIL"));
}

#[test]
fn show_prints_the_definition_tree_and_needs() {
    let dir = tempfile::tempdir().unwrap();
    let defs = shared(STANDARD);
    let out = rocflow(
        &[
            "counters",
            "show",
            "--counters",
            &defs,
            "GPU_UTIL",
            "--arch",
            "gfx942",
        ],
        dir.path(),
        &[],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_says_each(
        &stdout,
        &[
            "  on gfx942:\n    expression: 100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max)\n",
            "      └── reduce(max)\n          └── GRBM_COUNT\n",
            "    needs on gfx942: GRBM_COUNT, GRBM_GUI_ACTIVE\n",
        ],
    );

    let typo = rocflow(
        &["counters", "show", "--counters", &defs, "GPU_UTL"],
        dir.path(),
        &[],
    );
    assert_eq!(code(&typo), 2);
    assert!(text(&typo.stderr).contains("did you mean `GPU_UTIL`?"));
}

#[test]
fn without_definitions_the_error_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let out = without_rocm(&["counters", "list"], dir.path());
    assert_eq!(code(&out), 2);
    let stderr = text(&out.stderr);
    assert_says(&stderr, "no counter definitions found");
    for looked in [
        dir.path().join("metrics/counter_defs.yaml"),
        dir.path()
            .join("rocm/share/rocprofiler-sdk/counter_defs.yaml"),
        "/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml".into(),
    ] {
        assert_says(&stderr, looked.to_str().unwrap());
    }
}

#[test]
fn without_definitions_validate_warns_of_counters_no_simulated_gpu_has() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.toml"),
        "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\", \"SQ_INSTS_VALUU\", \"TCP_TOTAL_CACHE_ACCESSES_sum\"]\n",
    )
    .unwrap();
    let out = without_rocm(&["validate", "p.toml"], dir.path());
    // A real GPU may have what the simulated ones lack: a warning, not an error.
    assert_eq!(code(&out), 0);
    let stderr = text(&out.stderr);
    assert_says_each(
        &stderr,
        &[
            "warning: `SQ_INSTS_VALUU` is not checked: no counter definitions were found, and no simulated GPU has this counter",
            "p.toml:4:24",
            "did you mean `SQ_INSTS_VALU`?",
            "warning: `TCP_TOTAL_CACHE_ACCESSES_sum` is not checked",
            "--counters FILE",
        ],
    );
    assert!(
        !stderr.contains("`SQ_WAVES`"),
        "a simulated GPU has it: {stderr}"
    );
    // With the GPU's definitions the typo is an error.
    let defs = shared(STANDARD);
    let out = rocflow(
        &["validate", "p.toml", "--counters", &defs],
        dir.path(),
        &[],
    );
    assert_eq!(code(&out), 2);
    assert!(text(&out.stderr).contains("error: unknown counter `SQ_INSTS_VALUU`"));
}

/// A 400-byte "billion laughs" (nine levels of nine aliases of the level before) given to
/// each command that reads YAML: one error at the alias past the bound, exit 2, nothing
/// written, in a moment instead of gigabytes.
#[test]
fn every_yaml_reader_refuses_alias_bombs() {
    let dir = tempfile::tempdir().unwrap();
    let mut laughs = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (level, previous) in ('b'..='i').zip('a'..) {
        let aliases = vec![format!("*{previous}"); 9].join(", ");
        laughs += &format!("{level}: &{level} [{aliases}]\n");
    }
    std::fs::write(dir.path().join("laughs.yaml"), &laughs).unwrap();
    let pipeline = "[[context]]\nname = \"c\"\n[context.counters]\ncollect = [\"SQ_WAVES\"]\n";
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let commands: [&[&str]; 4] = [
        &["counters", "check", "laughs.yaml"],
        &["migrate-counters", "-i", "laughs.yaml", "-o", "out.yaml"],
        &["validate", "p.toml", "--counters", "laughs.yaml"],
        &["import-rocprofv3", "laughs.yaml", "-o", "out.toml"],
    ];
    for args in commands {
        let out = rocflow(args, dir.path(), &[]);
        let stderr = assert_fails(
            &out,
            2,
            // `validate` names the file and the place its own way.
            &["the YAML expands to more than 1048576 nodes", "7:8"],
        );
        assert_eq!(stderr.matches("error").count(), 1, "{args:?}: {stderr}");
        let mut written: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        written.sort();
        assert_eq!(written, ["laughs.yaml", "p.toml"], "{args:?}");
    }
}
