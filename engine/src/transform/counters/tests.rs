use std::sync::atomic::Ordering;

use super::*;
use crate::catalog::Catalog;
use crate::record::{Agent, Batch};
use crate::sdk::{AgentType, COUNTER_DIMENSIONS};

fn agent(index: u32, gfx: &str) -> Meta {
    Meta::Agent(Agent {
        index,
        handle: u64::from(index),
        agent_type: AgentType::Gpu,
        node_id: index,
        logical_node_id: index,
        name: gfx.into(),
        product_name: String::new(),
        cu_count: 2,
        simd_count: 8,
        xcc_count: 2,
        wave_front_size: 64,
        max_waves_per_simd: 8,
        lds_bytes_per_cu: 64 << 10,
        max_engine_clk_mhz: 2100,
    })
}

fn counter(id: u32, agent: u32, name: &str, dimensions: &[(&str, u32)]) -> Meta {
    Meta::Counter(CounterInfo {
        id,
        agent,
        name: name.into(),
        description: String::new(),
        dimensions: dimensions.iter().map(|&(d, n)| (d.into(), n)).collect(),
    })
}

const XCC_SE: &[(&str, u32)] = &[("DIMENSION_XCC", 2), ("DIMENSION_SHADER_ENGINE", 2)];

/// Agent 1 (gfx942) collects SQ_WAVES and SQ_INSTS_VALU over 2 XCCs x 2 shader engines;
/// agent 2 (gfx942 too) shares their ids, as agents of one architecture may.
fn catalog(transform: &DeriveCounters<CounterSample>) -> Catalog {
    let mut catalog = Catalog::default();
    catalog.apply(
        0,
        vec![agent(0, "cpu"), agent(1, "gfx942"), agent(2, "gfx942")],
    );
    assert!(
        transform.derived_counters(0, catalog.stream(0)).is_empty(),
        "no counters yet"
    );
    catalog.apply(
        0,
        vec![
            counter(1, 2, "SQ_WAVES", XCC_SE),
            counter(2, 2, "SQ_INSTS_VALU", XCC_SE),
        ],
    );
    let described = transform.derived_counters(0, catalog.stream(0));
    catalog.apply(0, described);
    assert!(
        transform.derived_counters(0, catalog.stream(0)).is_empty(),
        "described once"
    );
    catalog
}

fn transform() -> DeriveCounters<CounterSample> {
    DeriveCounters::new(
        vec!["SQ_WAVES".into(), "SQ_INSTS_VALU".into()],
        &[
            ("PER_WAVE".into(), "SQ_INSTS_VALU/SQ_WAVES".into()),
            (
                "PER_WAVE_TOTAL".into(),
                "reduce(SQ_INSTS_VALU,sum)/reduce(SQ_WAVES,sum)".into(),
            ),
            ("PER_SIMD".into(), "reduce(SQ_WAVES,sum)/simd_count".into()),
        ],
    )
    .unwrap()
}

/// One dispatch's samples on an agent: waves 1, 2, 3, 4 and VALU 10 times that.
fn dispatch(agent: u32, dispatch_id: u64) -> Vec<CounterSample> {
    let mut samples = Vec::new();
    for (counter_id, scale) in [(1, 1.0), (2, 10.0)] {
        for (xcc, se) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            samples.push(CounterSample {
                agent,
                dispatch_id,
                kernel_id: 7,
                timestamp_ns: 100 * dispatch_id,
                counter_id,
                xcc,
                shader_engine: se,
                value: scale * f64::from(1 + 2 * xcc + se),
                ..Default::default()
            });
        }
    }
    samples
}

/// (counter, xcc, shader engine, value) of each sample.
fn values(meta: &StreamMeta, samples: &[CounterSample]) -> Vec<(String, u16, u16, f64)> {
    samples
        .iter()
        .map(|s| {
            let name = meta.counter_name(s.counter_id).to_owned();
            (name, s.xcc, s.shader_engine, s.value)
        })
        .collect()
}

#[test]
fn derived_counters_are_described_with_the_dimensions_they_vary_along() {
    let transform = transform();
    let catalog = catalog(&transform);
    let meta = catalog.stream(0);
    let mut derived: Vec<&CounterInfo> = meta.counters.values().filter(|c| c.id > 2).collect();
    derived.sort_by_key(|c| std::cmp::Reverse(c.id));
    let described: Vec<(u32, &str, Dimensions)> = derived
        .iter()
        .map(|c| (c.id, c.name.as_str(), c.dimensions.clone()))
        .collect();
    let dims =
        |d: &[(&str, u32)]| -> Dimensions { d.iter().map(|&(n, s)| (n.to_owned(), s)).collect() };
    assert_eq!(
        described,
        [
            (u32::MAX, "PER_WAVE", dims(XCC_SE)),
            (u32::MAX - 1, "PER_WAVE_TOTAL", dims(&[])),
            (u32::MAX - 2, "PER_SIMD", dims(&[])),
        ]
    );
    assert!(
        derived.iter().all(|c| c.agent == 1),
        "the first agent with counters"
    );
}

#[test]
fn a_dispatch_split_across_chunks_comes_out_whole_with_its_derived_counters() {
    let transform = transform();
    let catalog = catalog(&transform);
    let meta = catalog.stream(0);
    let failures = Failures::default();
    let (first, second) = (dispatch(1, 5), dispatch(2, 6));
    // Dispatch 5's first values, then the rest of it with the start of dispatch 6.
    let held = transform.gather(0, first[..3].to_vec(), meta, &failures);
    assert!(held.is_empty(), "{held:?}");
    let rest: Vec<CounterSample> = first[3..].iter().chain(&second[..4]).copied().collect();
    let out = transform.gather(0, rest, meta, &failures);
    let mut expected: Vec<(String, u16, u16, f64)> = values(meta, &first);
    for (xcc, se) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
        expected.push(("PER_WAVE".into(), xcc, se, 10.0));
    }
    expected.push(("PER_WAVE_TOTAL".into(), 0, 0, 10.0));
    expected.push(("PER_SIMD".into(), 0, 0, 10.0 / 8.0));
    assert_eq!(values(meta, &out), expected);
    assert!(
        out.iter()
            .all(|s| s.dispatch_id == 5 && s.kernel_id == 7 && s.timestamp_ns == 500)
    );
    // Dispatch 6 completes in a later chunk, on the agent that shares the ids.
    let out = transform.gather(0, second[4..].to_vec(), meta, &failures);
    assert_eq!(out.len(), 8 + 4 + 1 + 1);
    assert!(out.iter().all(|s| s.agent == 2 && s.dispatch_id == 6));
    assert_eq!(failures.count.load(Ordering::Relaxed), 0);
    assert!(transform.unfinished(&failures).is_empty());
}

#[test]
fn whole_dispatches_in_one_chunk_get_the_ids_their_derived_counters_were_given() {
    let transform = transform();
    let mut catalog = Catalog::default();
    catalog.apply(0, vec![agent(1, "gfx942")]);
    // The stream also has an SDK counter named as a derived one, as a run recorded while
    // collecting it would: the derived values must not take its id.
    catalog.apply(
        0,
        vec![
            counter(1, 1, "SQ_WAVES", XCC_SE),
            counter(2, 1, "SQ_INSTS_VALU", XCC_SE),
            counter(3, 1, "PER_WAVE", &[]),
        ],
    );
    let described = transform.derived_counters(0, catalog.stream(0));
    assert_eq!(described.len(), 3);
    catalog.apply(0, described);
    let meta = catalog.stream(0);
    let failures = Failures::default();
    let chunk: Vec<CounterSample> = dispatch(1, 5).into_iter().chain(dispatch(1, 6)).collect();
    let out = transform.gather(0, chunk, meta, &failures);
    assert_eq!(out.len(), 2 * (8 + 4 + 1 + 1));
    let per_wave: Vec<&CounterSample> = out.iter().filter(|s| s.counter_id == u32::MAX).collect();
    assert_eq!(per_wave.len(), 8, "four per dispatch");
    assert!(per_wave.iter().all(|s| s.value == 10.0));
    assert!(out.iter().all(|s| s.counter_id != 3));
    assert_eq!(
        (out[..14].iter())
            .map(|s| s.dispatch_id)
            .collect::<Vec<_>>(),
        [5; 14],
        "each dispatch followed by its derived values"
    );
    assert_eq!(failures.count.load(Ordering::Relaxed), 0);
}

#[test]
fn incomplete_dispatches_pass_on_at_the_end_and_are_reported() {
    let transform = transform();
    let catalog = catalog(&transform);
    let meta = catalog.stream(0);
    let failures = Failures::default();
    let samples = dispatch(1, 9);
    assert!(
        transform
            .gather(3, samples[..5].to_vec(), meta, &failures)
            .is_empty()
    );
    // An agent whose counters were never described is not waited for.
    let unknown = dispatch(7, 10);
    assert_eq!(
        transform.gather(0, unknown.clone(), meta, &failures),
        unknown
    );
    let left = transform.unfinished(&failures);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].stream, 3);
    assert_eq!(left[0].batch, Batch::CounterSample(samples[..5].to_vec()));
    assert_eq!(
        *failures.first.lock().unwrap(),
        [
            "dispatch 9 on agent 1: 5 of its 8 counter values arrived; they pass on without derived counters"
        ]
    );
}

#[test]
fn failures_name_the_dispatch_and_the_counter() {
    let transform = DeriveCounters::new(
        vec!["SQ_WAVES".into(), "SQ_INSTS_VALU".into()],
        &[(
            "ODD".into(),
            "SQ_WAVES/select(SQ_INSTS_VALU,[DIMENSION_XCC=[1]])".into(),
        )],
    )
    .unwrap();
    let catalog = catalog(&transform);
    let failures = Failures::default();
    let out = transform.gather(0, dispatch(1, 4), catalog.stream(0), &failures);
    assert_eq!(out, dispatch(1, 4), "the collected values pass on");
    assert_eq!(
        *failures.first.lock().unwrap(),
        [
            "dispatch 4 on agent 1: cannot compute `ODD`: `/` of 4 and 2 instances: the counts must be equal or one of them 1"
        ]
    );
}

#[test]
fn dimensions_are_in_the_sdk_order() {
    let names: Vec<&str> = Dimension::ALL.iter().map(|d| d.name()).collect();
    assert_eq!(names, COUNTER_DIMENSIONS);
}
