//! Resolution of derived counters to hardware counters, and `check`'s findings.

use rocflow_counters::expr::{self, Dimension, Tensor};
use rocflow_counters::{Definitions, Requirements, ResolveError, check};
use support::counters::{LEGACY, STANDARD, shared, short, source};

const DEFS: &str = "schema-version: 1
SQ_WAVES:
  architectures:
    gfx942/gfx90a: {block: SQ, event: 4}
  description: Waves.
GRBM_GUI_ACTIVE:
  architectures:
    gfx942/gfx90a: {block: GRBM, event: 2}
  description: GUI active.
TCC_HIT:
  architectures:
    gfx942: {block: TCC, event: 17}
  description: Hits.
CU_NUM:
  architectures:
    gfx942/gfx90a: {expression: simd_count/simd_per_cu}
  description: Compute units.
WAVES_PER_CU:
  architectures:
    gfx942/gfx90a:
      expression: reduce(SQ_WAVES,sum)/CU_NUM
  description: Waves per CU.
HITS_PER_WAVE:
  architectures:
    gfx942/gfx90a:
      expression: reduce(TCC_HIT,sum)/WAVES_PER_CU
  description: Hits per wave.
";

fn defs(text: &str) -> Definitions {
    Definitions::parse(&source(text)).unwrap()
}

/// What `counter` needs on `arch`, by [`DEFS`].
fn requirements(arch: &str, counter: &str) -> Result<Requirements, ResolveError> {
    defs(DEFS).resolver(arch).requirements(counter)
}

#[test]
fn derived_counters_resolve_to_hardware_counters_and_agent_properties() {
    let needs = requirements("gfx942", "HITS_PER_WAVE").unwrap();
    assert_eq!(
        needs.hardware.iter().collect::<Vec<_>>(),
        ["SQ_WAVES", "TCC_HIT"]
    );
    assert_eq!(
        needs.agent_properties.iter().collect::<Vec<_>>(),
        ["simd_count", "simd_per_cu"]
    );
    let needs = requirements("gfx942", "SQ_WAVES").unwrap();
    assert_eq!(needs.hardware.iter().collect::<Vec<_>>(), ["SQ_WAVES"]);
}

#[test]
fn a_missing_counter_says_which_chain_needed_it() {
    let err = requirements("gfx90a", "HITS_PER_WAVE").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`TCC_HIT` is not defined for gfx90a (needed by HITS_PER_WAVE)"
    );
    let err = requirements("gfx1100", "WAVES_PER_CU").unwrap_err();
    assert_eq!(err.to_string(), "`WAVES_PER_CU` is not defined for gfx1100");
}

#[test]
fn counters_declared_by_a_caller_resolve_and_cycles_print_the_cycle() {
    let defs = defs(DEFS);
    let mut resolver = defs.resolver("gfx942");
    resolver.add_derived(
        "MINE",
        expr::parse("HITS_PER_WAVE*GRBM_GUI_ACTIVE").unwrap(),
    );
    let needs = resolver.requirements("MINE").unwrap();
    assert_eq!(needs.hardware.len(), 3);

    resolver.add_derived("LOOP_A", expr::parse("LOOP_B+1").unwrap());
    resolver.add_derived(
        "LOOP_B",
        expr::parse("reduce(SQ_WAVES,sum)*LOOP_C").unwrap(),
    );
    resolver.add_derived("LOOP_C", expr::parse("LOOP_A").unwrap());
    let err = resolver.requirements("LOOP_A").unwrap_err();
    assert_eq!(
        err,
        ResolveError::Cycle {
            cycle: ["LOOP_A", "LOOP_B", "LOOP_C", "LOOP_A"]
                .map(String::from)
                .to_vec()
        }
    );
    assert_eq!(
        err.to_string(),
        "derived counters form a cycle: LOOP_A -> LOOP_B -> LOOP_C -> LOOP_A"
    );
}

#[test]
fn derived_counters_evaluate_from_their_inputs() {
    let defs = defs(DEFS);
    let resolver = defs.resolver("gfx942");
    let mut inputs = |name: &str| match name {
        "SQ_WAVES" => Some(Tensor::from_shape(
            &[(Dimension::ShaderEngine, 4)],
            &[10.0, 20.0, 30.0, 40.0],
        )),
        "TCC_HIT" => Some(Tensor::from_shape(
            &[(Dimension::Instance, 2)],
            &[500.0, 700.0],
        )),
        "simd_count" => Some(Tensor::scalar(1216.0)),
        "simd_per_cu" => Some(Tensor::scalar(4.0)),
        _ => None,
    };
    // CU_NUM = 1216/4 = 304; WAVES_PER_CU = 100/304; HITS_PER_WAVE = 1200/(100/304).
    let value = resolver.evaluate("HITS_PER_WAVE", &mut inputs).unwrap();
    assert_eq!(value.values(), [1200.0 / (100.0 / 304.0)]);
    let err = resolver
        .evaluate("HITS_PER_WAVE", &mut |_| None)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot evaluate `HITS_PER_WAVE`: no value for `TCC_HIT`"
    );
}

#[test]
fn check_finds_unresolved_names_per_architecture_at_their_column() {
    let findings = check(&defs(DEFS));
    let lines: Vec<String> = findings.iter().map(short).collect();
    assert_eq!(lines, ["26:26: `TCC_HIT` is not defined for gfx90a"]);
    assert_eq!(findings[0].notes, ["used by `HITS_PER_WAVE`"]);
}

#[test]
fn check_reports_parse_errors_cycles_and_accumulate_misuse() {
    let text = "rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: SQ_LEVEL_WAVES
    description: Level.
    definitions:
    - {architectures: [gfx942], block: SQ, event: 3}
  - name: TA_BUSY
    description: Busy.
    definitions:
    - {architectures: [gfx942], block: TA, event: 7}
  - name: BAD_SYNTAX
    description: x
    definitions:
    - {architectures: [gfx942], expression: 'reduce(SQ_LEVEL_WAVES,avg)'}
  - name: A
    description: x
    definitions:
    - {architectures: [gfx942, gfx950], expression: B*2}
  - name: B
    description: x
    definitions:
    - {architectures: [gfx942, gfx950], expression: A+SQ_LEVL_WAVES}
  - name: LEVEL
    description: x
    definitions:
    - {architectures: [gfx942], expression: 'accumulate(TA_BUSY,HIGH_RES)'}
";
    let findings = check(&defs(text));
    let lines: Vec<String> = findings.iter().map(short).collect();
    assert_eq!(
        lines,
        [
            "15:68: the expression of `BAD_SYNTAX` does not parse: unknown reduce operation `avg`; rocprofiler-sdk knows sum, avr, min and max",
            "16:11: derived counters form a cycle: A -> B -> A",
            "23:55: `SQ_LEVL_WAVES` is not defined for gfx942, gfx950",
            "24:11: `accumulate(TA_BUSY, …)` in `LEVEL`: LOW_RES and HIGH_RES apply only to counters of the SQ block",
        ]
    );
    assert_eq!(findings[0].hint.as_deref(), Some("did you mean `avr`?"));
    assert_eq!(findings[1].notes, ["on gfx942, gfx950"]);
    assert_eq!(
        findings[2].hint.as_deref(),
        Some("did you mean `SQ_LEVEL_WAVES`?")
    );
}

#[test]
fn the_real_files_check_clean() {
    for file in [LEGACY, STANDARD] {
        let defs = Definitions::load(&shared(file)).unwrap();
        let findings: Vec<String> = check(&defs).iter().map(ToString::to_string).collect();
        assert_eq!(findings, Vec::<String>::new(), "{file}");
    }
}

/// A chain of 20,000 derived counters, each the one before plus one, from one hardware
/// counter: `check` resolves each once (it walked the chain again from every counter, and a
/// 393 KB file took 98 s), and neither it nor resolving the chain's end runs out of stack.
/// The chain closed into a loop is one cycle, of all of them.
#[test]
fn a_long_chain_of_derived_counters_resolves_each_once() {
    const LENGTH: usize = 20_000;
    let chain = |first: &str| {
        let mut text = String::from(
            "schema-version: 1\nSQ_WAVES:\n  architectures: {gfx942: {block: SQ, event: 4}}\n  \
             description: Waves.\n",
        );
        for i in 0..LENGTH {
            let previous = if i == 0 {
                first.to_owned()
            } else {
                format!("D{}", i - 1)
            };
            text += &format!(
                "D{i}:\n  architectures: {{gfx942: {{expression: {previous}+1}}}}\n  description: x.\n"
            );
        }
        text
    };
    let (done, finished) = std::sync::mpsc::channel();
    // On a thread of the usual 2 MiB stack, and given a minute: it takes well under a second.
    std::thread::spawn(move || {
        let straight = defs(&chain("SQ_WAVES"));
        let findings: Vec<String> = check(&straight).iter().map(short).collect();
        let needs = straight
            .resolver("gfx942")
            .requirements(&format!("D{}", LENGTH - 1));
        let looped: Vec<String> = check(&defs(&chain(&format!("D{}", LENGTH - 1))))
            .iter()
            .map(|d| d.message.clone())
            .collect();
        done.send((findings, needs, looped)).unwrap();
    });
    let (findings, needs, looped) = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("check of the chain finished in a minute");
    assert_eq!(findings, Vec::<String>::new());
    let needs = needs.unwrap();
    assert_eq!(needs.hardware.into_iter().collect::<Vec<_>>(), ["SQ_WAVES"]);
    assert!(needs.agent_properties.is_empty());
    let [cycle] = looped.as_slice() else {
        panic!("{looped:?}")
    };
    let members: Vec<&str> = cycle
        .strip_prefix("derived counters form a cycle: ")
        .unwrap()
        .split(" -> ")
        .collect();
    assert_eq!(members.len(), LENGTH + 1, "{}", &cycle[..200]);
    assert_eq!(members[0], members[LENGTH]);
}
