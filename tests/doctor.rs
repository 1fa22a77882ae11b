//! `rocflow doctor` on fake machines laid out under a directory (`--root`: dev/kfd, the KFD
//! topology, DRM cards, Yama's ptrace scope, /opt/rocm, a virtual environment with ROCm's
//! wheels, the user in proc/self/status) and on the simulated device: each check's passing
//! and failing findings, the JSON document, and the exit codes (0 nothing failed, 1 a check
//! failed, 2 the doctor could not examine).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Output;

use serde_json::Value;
use support::{assert_says, repo, rocflow_exe, text};

/// A user who owns nothing in the fake machine.
const UID: u32 = 4242;

/// A node of the KFD topology: an MI300X (gfx942) as AMD's kit fakes it, or another
/// architecture.
fn gpu_properties(target_version: u32, unique_id: u64, render_minor: u32) -> String {
    format!(
        "cpu_cores_count 0\nsimd_count 1216\nmax_waves_per_simd 8\nwave_front_size 64\n\
         gfx_target_version {target_version}\nvendor_id 4098\ndrm_render_minor {render_minor}\n\
         unique_id {unique_id}\nnum_xcc 8\n"
    )
}

const CPU_PROPERTIES: &str = "cpu_cores_count 2\nsimd_count 0\ngfx_target_version 0\n";

/// Counter definitions with counters for gfx942 only.
const DEFINITIONS: &str = "SQ_WAVES:\n  architectures:\n    gfx942: {block: SQ, event: 4}\n  description: waves\n\
GRBM_COUNT:\n  architectures:\n    gfx942: {block: GRBM, event: 0}\n  description: cycles\n";

struct Machine {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Machine {
    /// A healthy machine: ROCm in /opt/rocm, two gfx942 GPUs at `profile_standard`, the
    /// user in /dev/kfd's group, ptrace scope 0.
    fn healthy() -> Machine {
        let machine = Machine {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        };
        machine.write("dev/kfd", "");
        machine.chmod("dev/kfd", 0o660);
        let kfd_gid = std::fs::metadata(machine.at("dev/kfd")).unwrap().gid();
        machine.write(
            "etc/passwd",
            &format!("root:x:0:0::/root:/bin/sh\nalice:x:{UID}:{UID}::/home/alice:/bin/sh\n"),
        );
        machine.write(
            "etc/group",
            &format!("render:x:{kfd_gid}:alice\nalice:x:{UID}:\n"),
        );
        machine.user(UID, &[kfd_gid]);
        let nodes = "sys/class/kfd/kfd/topology/nodes";
        machine.write(&format!("{nodes}/0/properties"), CPU_PROPERTIES);
        machine.write(
            &format!("{nodes}/1/properties"),
            &gpu_properties(90402, 1234567890, 128),
        );
        machine.write(
            &format!("{nodes}/2/properties"),
            &gpu_properties(90402, 0xabcdef12, 136),
        );
        machine.card(0, 128, "profile_standard");
        machine.card(1, 136, "profile_standard");
        machine.write("proc/sys/kernel/yama/ptrace_scope", "0\n");
        machine.write("opt/rocm/lib/librocprofiler-sdk.so.1.0.0", "\x7fELF");
        machine.write(
            "opt/rocm/share/rocprofiler-sdk/counter_defs.yaml",
            DEFINITIONS,
        );
        // AMD-SMI: the simulated device's, a real library that answers its calls.
        std::os::unix::fs::symlink(
            support::sim_library(),
            machine.at("opt/rocm/lib/libamd_smi.so"),
        )
        .unwrap();
        machine
    }

    fn at(&self, path: &str) -> std::path::PathBuf {
        self.dir.path().join(path)
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.at(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn remove(&self, path: &str) {
        let path = self.at(path);
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }

    fn chmod(&self, path: &str, mode: u32) {
        std::fs::set_permissions(self.at(path), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Who runs rocflow: `uid`, in `groups`.
    fn user(&self, uid: u32, groups: &[u32]) {
        let groups: Vec<String> = groups.iter().map(u32::to_string).collect();
        self.write(
            "proc/self/status",
            &format!(
                "Name:\trocflow\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{uid}\t{uid}\t{uid}\t{uid}\nGroups:\t{}\n",
                groups.join(" ")
            ),
        );
    }

    /// DRM card `n`, whose render node is `renderD<minor>`, at `level`.
    fn card(&self, n: u32, minor: u32, level: &str) {
        let device = format!("sys/class/drm/card{n}/device");
        self.write(
            &format!("{device}/power_dpm_force_performance_level"),
            &format!("{level}\n"),
        );
        std::fs::create_dir_all(self.at(&format!("{device}/drm/renderD{minor}"))).unwrap();
    }

    /// One RDNA 3 GPU (gfx1100) in place of the MI300Xs.
    fn with_only_a_w7900(self, level: &str) -> Machine {
        let nodes = "sys/class/kfd/kfd/topology/nodes";
        self.remove(&format!("{nodes}/2"));
        self.remove("sys/class/drm/card1");
        self.write(
            &format!("{nodes}/1/properties"),
            &gpu_properties(110000, 77, 128),
        );
        self.card(0, 128, level);
        self
    }

    fn env(mut self, name: &str, value: &str) -> Machine {
        self.env.push((name.into(), value.into()));
        self
    }

    /// `rocflow doctor --root DIR args…`, with nothing of this machine's environment.
    fn doctor(&self, args: &[&str]) -> Output {
        let mut command = std::process::Command::new(rocflow_exe());
        command
            .arg("doctor")
            .arg("--root")
            .arg(self.dir.path())
            .args(args)
            .current_dir(repo())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command.output().expect("rocflow runs")
    }

    /// The findings as JSON, with the exit code.
    fn findings(&self, args: &[&str]) -> (i32, Findings) {
        let mut all = vec!["--format", "json"];
        all.extend_from_slice(args);
        let out = self.doctor(&all);
        (code(&out), Findings::parse(&out))
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited")
}

/// The JSON document `rocflow doctor --format json` prints.
struct Findings(Value);

impl Findings {
    fn parse(out: &Output) -> Findings {
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: stdout:\n{}\nstderr:\n{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
        Findings(json)
    }

    /// The finding of `check`: its status and what it found, hint included.
    fn of(&self, check: &str) -> (String, String) {
        let finding = (self.0["checks"].as_array().unwrap().iter())
            .find(|f| f["check"] == check)
            .unwrap_or_else(|| panic!("no {check} in {:#}", self.0));
        let said = format!(
            "{} hint: {}",
            finding["found"].as_str().unwrap(),
            finding["hint"].as_str().unwrap_or("")
        );
        (finding["status"].as_str().unwrap().to_string(), said)
    }

    fn assert(&self, check: &str, status: &str, says: &[&str]) {
        let (got, said) = self.of(check);
        assert_eq!(got, status, "{check}: {said}");
        for needle in says {
            assert!(said.contains(needle), "{check}: no {needle:?} in {said:?}");
        }
    }
}

#[test]
fn a_healthy_machine_passes_every_check_and_exits_0() {
    let machine = Machine::healthy();
    let out = machine.doctor(&[]);
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    let printed = text(&out.stdout);
    let lines: Vec<&str> = printed.lines().collect();
    let checks = [
        "sdk",
        "kfd",
        "gpus",
        "counters",
        "pc-sampling",
        "amd-smi",
        "performance-level",
        "ptrace",
    ];
    assert_eq!(lines.len(), checks.len() + 1, "{printed}");
    for (line, check) in lines.iter().zip(checks) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[..2], ["ok", check], "{line}");
    }
    assert_eq!(
        lines[checks.len()],
        "8 ok, 0 warning(s), 0 failed, 0 skipped"
    );

    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    assert_eq!(findings.0["device"], "rocm");
    assert_eq!(
        findings.0["summary"],
        serde_json::json!({"ok": 8, "warn": 0, "fail": 0, "skip": 0})
    );
    findings.assert(
        "sdk",
        "ok",
        &[
            "rocprofiler-sdk 1.0.0 at /opt/rocm/lib/librocprofiler-sdk.so.1.0.0",
            "found by /opt/rocm",
        ],
    );
    findings.assert(
        "kfd",
        "ok",
        &["/dev/kfd (mode 660, group render) is readable and writable"],
    );
    findings.assert(
        "gpus",
        "ok",
        &[
            "2 GPU(s) in the KFD topology: gfx942 (node 1), gfx942 (node 2)",
            "ROCr and HIP see them all",
        ],
    );
    findings.assert(
        "counters",
        "ok",
        &["gfx942 2 counters (/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml)"],
    );
    findings.assert("pc-sampling", "ok", &["gfx942 host_trap, stochastic"]);
    // The simulated AMD-SMI answers with its built-in scenario's GPUs, idle.
    let scenario =
        rocflow_core::scenario::Scenario::parse(rocflow_core::scenario::DEFAULT).unwrap();
    let idle = |gpu: usize| {
        let smi = scenario.agents[gpu].smi.as_ref().unwrap();
        format!(
            "{} power_w {}, temperature_c {}, gfx_clock_mhz {}, mem_clock_mhz {}, gfx_busy_percent 0, mem_busy_percent {}, vram_used_bytes {}",
            scenario.agents[gpu].pci(gpu),
            smi.power_w[0],
            smi.temperature_c[0],
            smi.gfx_clock_mhz[0],
            smi.mem_clock_mhz[0],
            smi.mem_busy_percent[0],
            smi.vram_used_bytes
        )
    };
    findings.assert(
        "amd-smi",
        "ok",
        &[
            "AMD-SMI at /opt/rocm/lib/libamd_smi.so, found by /opt/rocm: version 26.5.0, 2 GPU(s): ",
            &idle(0),
            &idle(1),
        ],
    );
    findings.assert(
        "performance-level",
        "ok",
        &["card0 (gfx942) profile_standard, card1 (gfx942) profile_standard"],
    );
    findings.assert("ptrace", "ok", &["ptrace scope 0"]);
}

#[test]
fn sdk_missing_or_too_old_fails_and_rocms_python_wheels_in_a_virtual_environment_are_found() {
    let machine = Machine::healthy();
    machine.remove("opt/rocm");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert(
        "sdk",
        "fail",
        &[
            "no rocprofiler-sdk (looked at /opt/rocm/lib/librocprofiler-sdk.so)",
            "pip install rocm[libraries]",
        ],
    );
    findings.assert(
        "counters",
        "warn",
        &[
            "no counter definitions found",
            "/opt/rocm/share/rocprofiler-sdk/counter_defs.yaml",
        ],
    );
    findings.assert(
        "amd-smi",
        "warn",
        &[
            "no AMD-SMI (looked at /opt/rocm/lib/libamd_smi.so): device metrics (power, temperature, clocks, utilization) are not sampled",
            "amd-smi-lib",
            "ROCFLOW_AMD_SMI_LIBRARY",
        ],
    );

    machine.write("opt/rocm/lib/librocprofiler-sdk.so.0.6.0", "\x7fELF");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert("sdk", "fail", &["rocprofiler-sdk 0.6.0 at /opt/rocm/lib/librocprofiler-sdk.so.0.6.0 is older than rocflow supports"]);
    machine.remove("opt/rocm");

    // ROCm's wheels: the soname only, and the counter definitions beside the library.
    let core = "home/alice/venv/lib/python3.12/site-packages/_rocm_sdk_core";
    machine.write(&format!("{core}/lib/librocprofiler-sdk.so.1"), "\x7fELF");
    machine.write(
        &format!("{core}/share/rocprofiler-sdk/counter_defs.yaml"),
        DEFINITIONS,
    );
    let (code, findings) = machine.findings(&[]);
    assert_eq!(
        code, 1,
        "without the environment active, the wheels are not found"
    );
    findings.assert("sdk", "fail", &["no rocprofiler-sdk"]);
    let machine = machine.env("VIRTUAL_ENV", "/home/alice/venv");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    findings.assert(
        "sdk",
        "ok",
        &[&format!(
            "at /{core}/lib/librocprofiler-sdk.so.1, found by ROCm's Python wheels in VIRTUAL_ENV"
        )],
    );
    findings.assert(
        "counters",
        "ok",
        &[&format!(
            "gfx942 2 counters (/{core}/share/rocprofiler-sdk/counter_defs.yaml)"
        )],
    );
}

#[test]
fn kfd_missing_or_closed_to_the_user_fails_with_the_groups_to_join() {
    let machine = Machine::healthy();
    let kfd_gid = std::fs::metadata(machine.at("dev/kfd")).unwrap().gid();

    // Listed in render, but this session lacks the group: log in again, not usermod.
    machine.user(UID, &[]);
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert(
        "kfd",
        "fail",
        &[
            "/dev/kfd (mode 660, group render) is not readable and writable by alice",
            "newgrp render",
        ],
    );

    // Not in the group at all.
    machine.write("etc/group", &format!("render:x:{kfd_gid}:\n"));
    let (_, findings) = machine.findings(&[]);
    findings.assert("kfd", "fail", &["sudo usermod -aG render $USER"]);

    // Open to everyone.
    machine.chmod("dev/kfd", 0o666);
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    findings.assert("kfd", "ok", &["mode 666"]);

    machine.remove("dev/kfd");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert(
        "kfd",
        "fail",
        &["no /dev/kfd", "sudo modprobe amdgpu", "--device /dev/kfd"],
    );
}

#[test]
fn gpus_follow_rocr_then_hip_visibility_and_fail_when_none_is_left() {
    let machine = Machine::healthy()
        .env("ROCR_VISIBLE_DEVICES", "1")
        .env("HIP_VISIBLE_DEVICES", "0");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    findings.assert(
        "gpus",
        "ok",
        &[
            "ROCr sees 1 (ROCR_VISIBLE_DEVICES=1): gfx942 (node 2)",
            "HIP sees 1 (HIP_VISIBLE_DEVICES=0, counted among ROCr's): gfx942 (node 2)",
        ],
    );

    // HIP counts among the GPUs ROCr sees: there is no second one.
    let machine = Machine::healthy()
        .env("ROCR_VISIBLE_DEVICES", "1")
        .env("HIP_VISIBLE_DEVICES", "1");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert(
        "gpus",
        "fail",
        &[
            "HIP sees 0",
            "the application would see no GPU",
            "HIP_VISIBLE_DEVICES names `1`",
            "unset ROCR_VISIBLE_DEVICES",
        ],
    );

    // A UUID picks the GPU whose unique_id it names; a bad entry ends the list.
    let machine = Machine::healthy().env("ROCR_VISIBLE_DEVICES", "GPU-abcdef12,7,0");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    findings.assert(
        "gpus",
        "warn",
        &[
            "ROCr sees 1 (ROCR_VISIBLE_DEVICES=GPU-abcdef12,7,0): gfx942 (node 2)",
            "names `7`",
        ],
    );

    let machine = Machine::healthy().env("CUDA_VISIBLE_DEVICES", "");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert(
        "gpus",
        "fail",
        &["CUDA_VISIBLE_DEVICES is set but empty, which hides every GPU"],
    );

    let machine = Machine::healthy();
    machine.remove("sys/class/kfd");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 1);
    findings.assert("gpus", "fail", &["no KFD topology"]);
    findings.assert("counters", "skip", &["no GPU"]);
    findings.assert("pc-sampling", "skip", &["no GPU"]);
}

#[test]
fn an_rdna_gpu_warns_of_missing_counters_pc_sampling_and_the_auto_performance_level() {
    let machine = Machine::healthy().with_only_a_w7900("auto");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0, "warnings do not fail");
    findings.assert(
        "gpus",
        "ok",
        &["1 GPU(s) in the KFD topology: gfx1100 (node 1)"],
    );
    findings.assert(
        "counters",
        "warn",
        &[
            "gfx1100 0 counters",
            "no counter can be collected on gfx1100",
            "ROCPROFILER_METRICS_PATH",
        ],
    );
    findings.assert(
        "pc-sampling",
        "warn",
        &["gfx1100 none", "no GPU here can sample PCs"],
    );
    findings.assert("performance-level", "warn", &[
        "card0 (gfx1100) auto",
        "counters may read 0",
        "echo profile_standard | sudo tee /sys/class/drm/card0/device/power_dpm_force_performance_level",
    ]);

    // `auto` is fine on CDNA, and profile_standard on RDNA.
    let machine = Machine::healthy();
    machine.card(0, 128, "auto");
    let (_, findings) = machine.findings(&[]);
    findings.assert("performance-level", "ok", &["card0 (gfx942) auto"]);
    let machine = Machine::healthy().with_only_a_w7900("profile_standard");
    let (_, findings) = machine.findings(&[]);
    findings.assert(
        "performance-level",
        "ok",
        &["card0 (gfx1100) profile_standard"],
    );
    machine.remove("sys/class/drm");
    let (_, findings) = machine.findings(&[]);
    findings.assert(
        "performance-level",
        "skip",
        &["no GPU performance level to read"],
    );
}

#[test]
fn a_restricted_ptrace_scope_warns_unless_root() {
    let machine = Machine::healthy();
    machine.write("proc/sys/kernel/yama/ptrace_scope", "1\n");
    let (code, findings) = machine.findings(&[]);
    assert_eq!(code, 0);
    findings.assert(
        "ptrace",
        "warn",
        &[
            "ptrace scope 1 (restricted)",
            "echo 0 | sudo tee /proc/sys/kernel/yama/ptrace_scope",
        ],
    );
    machine.write("proc/sys/kernel/yama/ptrace_scope", "3\n");
    let (_, findings) = machine.findings(&[]);
    findings.assert("ptrace", "warn", &["ptrace scope 3", "restart"]);
    machine.write("proc/sys/kernel/yama/ptrace_scope", "2\n");
    machine.user(0, &[0]);
    let (_, findings) = machine.findings(&[]);
    findings.assert("ptrace", "ok", &["ptrace scope 2: you are root"]);
    machine.remove("proc/sys/kernel/yama");
    let (_, findings) = machine.findings(&[]);
    findings.assert("ptrace", "ok", &["no Yama ptrace scope"]);
}

#[test]
fn on_the_simulated_device_its_sdk_answers_for_the_scenarios_gpus() {
    let machine = Machine::healthy();
    let (code, findings) = machine.findings(&["--device", "sim"]);
    assert_eq!(code, 0);
    assert_eq!(findings.0["device"], "sim");
    findings.assert(
        "sdk",
        "ok",
        &["the simulated rocprofiler-sdk of `sim` answers"],
    );
    findings.assert("kfd", "skip", &["needs no GPU driver"]);
    findings.assert("gpus", "ok", &["on the simulated device: gfx942"]);
    findings.assert("counters", "ok", &["gfx942", "(the simulated SDK's)"]);
    findings.assert("pc-sampling", "ok", &["gfx942 host_trap"]);
    findings.assert(
        "amd-smi",
        "ok",
        &["the simulated AMD-SMI: version 26.5.0, 2 GPU(s): 0000:0c:00.0 power_w "],
    );
    findings.assert("performance-level", "skip", &["needs no GPU driver"]);
    findings.assert("ptrace", "ok", &["ptrace scope 0"]);

    // The W7900 scenario's GPU samples no PCs; its counters are the scenario's.
    let w7900 = repo().join("examples/sim/w7900.toml");
    let device = format!("sim:{}", w7900.display());
    let (code, findings) = machine.findings(&["--device", &device]);
    assert_eq!(code, 0);
    findings.assert("gpus", "ok", &["1 GPU(s) on the simulated device: gfx1100"]);
    findings.assert(
        "pc-sampling",
        "warn",
        &["gfx1100", "no GPU here can sample PCs"],
    );
    // Its GPU has no [agent.smi]: AMD-SMI lists it, and it reads no metric.
    findings.assert(
        "amd-smi",
        "warn",
        &[
            "1 GPU(s): 0000:0c:00.0 no power_w (not supported by this GPU (AMD-SMI status 2))",
            "`amd-smi metric`",
        ],
    );

    let hidden = Machine::healthy().env("ROCR_VISIBLE_DEVICES", "");
    let (code, findings) = hidden.findings(&["--device", &device]);
    assert_eq!(code, 1);
    findings.assert("gpus", "fail", &["ROCR_VISIBLE_DEVICES is set but empty"]);
}

#[test]
fn what_keeps_the_doctor_from_examining_exits_2_and_prints_nothing() {
    let machine = Machine::healthy();
    let (dir, scenario) = support::with_file("bad.toml", "[scenario]\nname = 3\n");
    let out = machine.doctor(&["--device", &format!("sim:{}", scenario.display())]);
    assert_eq!(code(&out), 2, "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert_says(&out.stderr, "bad.toml");
    drop(dir);

    let out = support::rocflow(&["doctor", "--root", "/no/such/dir"], &repo(), &[]);
    assert_eq!(code(&out), 2);
    assert!(out.stdout.is_empty());
    assert_says(&out.stderr, "--root /no/such/dir is not a directory");

    let out = machine.doctor(&["--device", "gpu"]);
    assert_eq!(code(&out), 2);
    assert!(out.stdout.is_empty());
}

/// On AMD's kit (`../shared/realsdk`) with its fake gfx942 (the KFD topology its real SDK
/// enumerates, in a private mount namespace), the doctor finds the kit's real SDK, the
/// GPU, and as many counters for it as the kit's real definitions give gfx942.
#[test]
fn on_amds_fake_gfx942_the_real_sdk_gpu_and_counter_definitions_are_found() {
    use support::kit::{Kit, Node};
    let kit = Kit::get();
    let dir = tempfile::tempdir().unwrap();
    let out = kit
        .rocflow(Node::FakeGfx942, dir.path())
        .args(["doctor", "--format", "json"])
        .env_remove("ROCM_PATH")
        .env_remove("ROCR_VISIBLE_DEVICES")
        .env_remove("HIP_VISIBLE_DEVICES")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .output()
        .expect("rocflow runs");
    // The kit has no driver: /dev/kfd is missing, and that fails.
    assert_eq!(code(&out), 1, "{}", text(&out.stderr));
    let findings = Findings::parse(&out);
    findings.assert(
        "sdk",
        "ok",
        &["rocprofiler-sdk 1.0.0", "found by LD_LIBRARY_PATH"],
    );
    findings.assert("kfd", "fail", &["no /dev/kfd"]);
    findings.assert(
        "gpus",
        "ok",
        &["1 GPU(s) in the KFD topology: gfx942 (node 1)"],
    );
    let definitions = kit.metrics().join("counter_defs.yaml");
    let defs = rocflow_counters::Definitions::load(&definitions).unwrap();
    let gfx942 = (defs.counters().iter())
        .filter(|c| c.definition_for("gfx942").is_some())
        .count();
    assert!(gfx942 > 100, "{gfx942}");
    findings.assert(
        "counters",
        "ok",
        &[&format!(
            "gfx942 {gfx942} counters ({})",
            definitions.display()
        )],
    );
    findings.assert("pc-sampling", "ok", &["gfx942 host_trap, stochastic"]);
}
