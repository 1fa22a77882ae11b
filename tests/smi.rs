//! AMD-SMI's reader (`rocflow_core::smi`) against the simulated device's AMD-SMI, in a
//! process of its own as `rocflow doctor` reads it (`rocflow smi-query`): each GPU at its
//! PCI location with its scenario's values, a GPU that reports nothing, and the reason
//! given when the library is absent.

use std::path::Path;

use rocflow::smi::Answer;
use rocflow_core::scenario::Scenario;
use rocflow_core::smi::Metric;
use support::{repo, rocflow_command, sim_library, with_file};

/// An MI300X with AMD-SMI metrics at a location of its own, and an MI210 without them.
const SCENARIO: &str = "[scenario]\nname = \"smi\"\nthreads = 1\niterations = 1\n\n\
[[agent]]\nname = \"gfx942\"\nproduct = \"AMD Instinct MI300X\"\ncu_count = 304\npci = \"0003:c1:00.4\"\n\n\
[agent.smi]\npower_w = [151, 702]\ntemperature_c = [41, 79]\ngfx_clock_mhz = [141, 2099]\n\
mem_clock_mhz = [1299, 1301]\nmem_busy_percent = [3, 47]\nvram_used_bytes = 123456789\n\n\
[[agent]]\nname = \"gfx90a\"\nproduct = \"AMD Instinct MI210\"\ncu_count = 104\n";

/// What `rocflow smi-query LIBRARY` answers, the simulated device playing `scenario`.
fn query(library: &Path, scenario: &Path) -> Result<Answer, String> {
    let dir = tempfile::tempdir().unwrap();
    let answer = dir.path().join("answer.json");
    let library = library.to_str().unwrap();
    let out = rocflow_command(
        &["smi-query", library, "--answer", answer.to_str().unwrap()],
        &repo(),
        &[("ROCFLOW_SIM_SCENARIO", scenario)],
    )
    // No tool: the simulated SDK replays no work, and every GPU stays idle.
    .env_remove("ROCP_TOOL_LIBRARIES")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    serde_json::from_slice(&std::fs::read(answer).unwrap()).unwrap()
}

#[test]
fn each_simulated_gpu_reads_at_its_pci_location_with_its_scenarios_idle_values() {
    let (_dir, path) = with_file("smi.toml", SCENARIO);
    let scenario = Scenario::parse(SCENARIO).unwrap();
    let answer = query(&sim_library(), &path).unwrap();
    assert_eq!(answer.version, "26.5.0");
    assert_eq!(answer.gpus.len(), 2);

    // No kernel runs in the query's process: every GPU is idle.
    let mi300x = &answer.gpus[0];
    assert_eq!(mi300x.location, "0003:c1:00.4");
    let smi = scenario.agents[0].smi.as_ref().unwrap();
    let idle = [
        (Metric::PowerW, f64::from(smi.power_w[0])),
        (Metric::TemperatureC, smi.temperature_c[0] as f64),
        (Metric::GfxClockMhz, f64::from(smi.gfx_clock_mhz[0])),
        (Metric::MemClockMhz, f64::from(smi.mem_clock_mhz[0])),
        (Metric::GfxBusyPercent, 0.0),
        (Metric::MemBusyPercent, f64::from(smi.mem_busy_percent[0])),
        (Metric::VramUsedBytes, smi.vram_used_bytes as f64),
    ];
    let idle: Vec<(String, f64)> = idle.map(|(m, v)| (m.name().to_string(), v)).into();
    assert_eq!(mi300x.values, idle);
    assert!(mi300x.failures.is_empty(), "{:?}", mi300x.failures);

    // Without an [agent.smi] table, the GPU is listed (by its index's default location)
    // and reports no metric, each with AMD-SMI's reason.
    let mi210 = &answer.gpus[1];
    assert_eq!(mi210.location, scenario.agents[1].pci(1).to_string());
    assert!(mi210.values.is_empty(), "{:?}", mi210.values);
    let failed: Vec<&str> = mi210.failures.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(failed, Metric::ALL.map(Metric::name));
    for (metric, why) in &mi210.failures {
        assert_eq!(
            why, "not supported by this GPU (AMD-SMI status 2)",
            "{metric}"
        );
    }
}

#[test]
fn a_library_that_is_not_there_is_named_with_the_reason() {
    let (_dir, path) = with_file("smi.toml", SCENARIO);
    let missing = Path::new("/no/such/dir/libamd_smi.so");
    let e = query(missing, &path).unwrap_err();
    assert!(
        e.starts_with("cannot load AMD-SMI from /no/such/dir/libamd_smi.so: "),
        "{e}"
    );
}

#[test]
fn a_run_on_the_simulated_device_names_its_amd_smi_to_the_application() {
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("named");
    let script = format!(
        "printf %s \"$ROCFLOW_AMD_SMI_LIBRARY\" > {}; /bin/sleep 0.2",
        named.display()
    );
    let pipeline = repo().join("pipelines/kernel-trace.toml");
    let out = support::run_on(
        "sim",
        pipeline.to_str().unwrap(),
        &["/bin/sh", "-c", &script],
        dir.path(),
        &[],
    );
    support::assert_success(&out);
    // What the tool will find there is the simulated device's AMD-SMI.
    let library = std::fs::read_to_string(&named).unwrap();
    let scenario = repo().join("examples/sim/mi300x.toml");
    let answer = query(Path::new(&library), &scenario).unwrap();
    let locations: Vec<&str> = answer.gpus.iter().map(|g| g.location.as_str()).collect();
    assert_eq!(locations, ["0000:0c:00.0", "0000:23:00.0"]);
}
