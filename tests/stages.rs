//! The stage runtime on real frames: round trips through the spool, each transform against
//! hand-computed results, and sinks that fail alone.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rocflow::catalog::Catalog;
use rocflow::chunk::Chunk;
use rocflow::generate;
use rocflow::pipeline::{self, Options};
use rocflow::plan::{Plan, SinkPlan};
use rocflow::record::{
    Batch, CounterInfo, CounterSample, KernelDispatch, KernelSymbol, Meta, RecordKind,
};
use rocflow::sink::{Placeholders, Sink, SinkError};
use rocflow::source::Frames;
use rocflow::spool::{Ending, SpoolReader};
use rocflow::stage::{self, Report};
use rocflow::table::Table;
use rocflow::wire::{Frame, Payload};

/// What a collecting sink received.
#[derive(Default)]
struct Received {
    chunks: Vec<Chunk>,
    tables: Vec<Table>,
}

struct Collect(Arc<Mutex<Received>>);

impl Sink for Collect {
    fn write(&mut self, window: &[Arc<Chunk>], _: &Catalog) -> Result<(), SinkError> {
        let mut received = self.0.lock().unwrap();
        received
            .chunks
            .extend(window.iter().map(|c| Chunk::clone(c)));
        Ok(())
    }
    fn table(&mut self, table: &Table) -> Result<(), SinkError> {
        self.0.lock().unwrap().tables.push(table.clone());
        Ok(())
    }
    fn finish(self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        Ok(Vec::new())
    }
}

struct Fail;

impl Sink for Fail {
    fn write(&mut self, _: &[Arc<Chunk>], _: &Catalog) -> Result<(), SinkError> {
        Err(SinkError::Io {
            context: "writing".into(),
            source: std::io::Error::other("disk full"),
        })
    }
    fn table(&mut self, _: &Table) -> Result<(), SinkError> {
        Ok(())
    }
    fn finish(self: Box<Self>, _: &Catalog) -> Result<Vec<PathBuf>, SinkError> {
        Ok(Vec::new())
    }
}

fn compile(text: &str) -> Plan {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    // The stages run on frames made here: no SDK is configured with the plan.
    let options = Options {
        records_only: true,
        ..Options::default()
    };
    match pipeline::compile_file(&path, &options) {
        Ok(compiled) => compiled.plan,
        Err(errors) => panic!(
            "{:#?}",
            errors.iter().map(ToString::to_string).collect::<Vec<_>>()
        ),
    }
}

/// Runs the plan with a collecting sink for every sink named `collect*`, failing others.
fn run(plan: &Plan, frames: Vec<Frame>) -> (Report, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let open = |sink: &SinkPlan, _: &Placeholders| -> Result<Box<dyn Sink>, SinkError> {
        if sink.name.starts_with("collect") {
            Ok(Box::new(Collect(Arc::clone(&received))))
        } else {
            Ok(Box::new(Fail))
        }
    };
    let report = stage::run(plan, &mut Frames(frames.into_iter()), &open).unwrap();
    (report, received)
}

fn dispatches(received: &Received) -> Vec<KernelDispatch> {
    received
        .chunks
        .iter()
        .flat_map(|c| match &c.batch {
            Batch::KernelDispatch(r) => r.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn kernels(names: &[&str]) -> Frame {
    let items = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            Meta::KernelSymbol(KernelSymbol {
                kernel_id: i as u64 + 1,
                code_object_id: 1,
                name: (*name).into(),
                lds_bytes: 0,
                scratch_bytes: 0,
                arch_vgpr_count: 0,
                sgpr_count: 0,
                kernarg_bytes: 0,
            })
        })
        .collect();
    Frame {
        stream: 0,
        payload: Payload::Meta(items),
    }
}

fn records(batch: Batch) -> Frame {
    Frame {
        stream: 0,
        payload: Payload::Records(batch),
    }
}

/// Dispatches of kernel `kernel` with the given (start, duration) pairs.
fn launches(kernel: u64, times: &[(u64, u64)]) -> Batch {
    Batch::KernelDispatch(
        times
            .iter()
            .enumerate()
            .map(|(i, &(start, duration))| KernelDispatch {
                kernel_id: kernel,
                dispatch_id: kernel * 1000 + i as u64,
                start_ns: start,
                end_ns: start + duration,
                ..Default::default()
            })
            .collect(),
    )
}

const TRACE: &str = "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\"]\n";
const COLLECT: &str = "[[sink]]\nname = \"collect\"\nkind = \"csv\"\npath = \"unused\"\n";

#[test]
fn generated_records_round_trip_through_spool_and_stages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.rfraw");
    let options = generate::Options {
        records: 60_000,
        processes: 2,
        seed: 7,
        plan: None,
    };
    let counts = generate::to_spool(&options, &path).unwrap();

    // What the spool holds, decoded directly, per kind and stream in order.
    let mut reader = SpoolReader::open(&path).unwrap();
    let frames: Vec<Frame> = reader.by_ref().map(Result::unwrap).collect();
    assert_eq!(reader.ending(), Some(&Ending::Complete));
    // Each batch comes out in start-time order.
    let direct: Vec<(u16, Batch)> = frames
        .iter()
        .filter_map(|f| match &f.payload {
            Payload::Records(b) => {
                let mut sorted = b.clone();
                sorted.sort_by_start();
                Some((f.stream, sorted))
            }
            Payload::Meta(_) | Payload::Args(_) | Payload::Trace(_) => None,
        })
        .collect();
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    assert_eq!(
        direct.iter().map(|(_, b)| b.len() as u64).sum::<u64>(),
        total
    );

    let plan = compile(&format!(
        "[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\", \"hip_runtime_api\", \"memory_copy\", \"marker_core_api\"]\ncounters.collect = [\"SQ_WAVES\"]\npc_sampling.method = \"host_trap\"\n{COLLECT}"
    ));
    let (report, received) = run(&plan, frames);
    let received = received.lock().unwrap();
    let through: Vec<(u16, Batch)> = received
        .chunks
        .iter()
        .map(|c| (c.stream, c.batch.clone()))
        .collect();
    assert_eq!(
        through, direct,
        "every record arrives unchanged, each batch in start order"
    );
    let reported: u64 = report.records_in.iter().map(|(_, n)| n).sum();
    assert_eq!(reported, total);
}

#[test]
fn filter_derive_and_time_window() {
    let plan = compile(&format!(
        r#"{TRACE}
[[transform]]
name = "long"
kind = "filter"
predicate = "duration_ns >= 100 && str::regex_matches(kernel_name, \"^gemm\")"
[[transform]]
name = "ratio"
kind = "derive"
column = "us"
expression = "duration_ns / 100"
[[transform]]
name = "window"
kind = "time_window"
start = "1us"
end = "5us"
{COLLECT}"#
    ));
    let frames = vec![
        kernels(&["gemm_f32", "copy"]),
        // Starts relative to the first record (t=1000): 0, 500, 1000, 4000, 6000 ns.
        records(launches(
            1,
            &[
                (1_000, 500),
                (1_500, 50),
                (2_000, 300),
                (5_000, 200),
                (7_000, 900),
            ],
        )),
        records(launches(2, &[(3_000, 1_000)])),
    ];
    let (report, received) = run(&plan, frames);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let received = received.lock().unwrap();
    let kept: Vec<(u64, u64)> = dispatches(&received)
        .iter()
        .map(|d| (d.start_ns, d.end_ns - d.start_ns))
        .collect();
    // duration >= 100 drops 50; gemm only drops kernel 2; the window [1us, 5us) drops t=0 and t=6000.
    assert_eq!(kept, [(2_000, 300), (5_000, 200)]);
    let chunk = received.chunks.iter().find(|c| !c.is_empty()).unwrap();
    let us = chunk
        .extra("us")
        .expect("the derived column travels with the records");
    assert_eq!(
        us.values,
        [evalexpr::Value::Int(3), evalexpr::Value::Int(2)]
    );
}

/// A kind of transform lives in one module (`transform/sample.rs`): the schema, the
/// compiler, `explain` and the stages all know it from there.
#[test]
fn a_sample_transform_keeps_one_record_in_every_n() {
    let plan = compile(&format!(
        "{TRACE}[[transform]]\nname = \"thin\"\nkind = \"sample\"\nevery = 2\n{COLLECT}"
    ));
    assert!(
        rocflow::plan::explain(&plan).contains(
            "[0] thin on kernel_dispatch: keep one record in 2 of each kind of each process"
        ),
        "{}",
        rocflow::plan::explain(&plan)
    );
    let times: Vec<(u64, u64)> = (0..5).map(|i| (i * 20, 10)).collect();
    let frames = vec![kernels(&["k"]), records(launches(1, &times))];
    let (_, received) = run(&plan, frames);
    let starts: Vec<u64> = dispatches(&received.lock().unwrap())
        .iter()
        .map(|d| d.start_ns)
        .collect();
    assert_eq!(starts, [0, 40, 80]);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(
        &path,
        format!("{TRACE}[[transform]]\nname = \"thin\"\nkind = \"sample\"\nevery = 0\n"),
    )
    .unwrap();
    let errors = pipeline::compile_file(&path, &Options::default()).unwrap_err();
    assert!(
        (errors.iter())
            .any(|e| e.message == "`transform[0].every`: value is less than the minimum of 1"),
        "{errors:#?}"
    );
}

#[test]
fn kernel_filter_with_iteration_ranges_and_demangled_names() {
    let plan = compile(&format!(
        r#"{TRACE}
[[transform]]
name = "hot"
kind = "kernel_filter"
include = "^gemm\\("
iterations = "[2-3],[20-]"
{COLLECT}"#
    ));
    let times: Vec<(u64, u64)> = (0..25).map(|i| (i * 10, 5)).collect();
    let frames = vec![
        kernels(&["_Z4gemmPfS_S_i", "_Z4copyPvS_m"]),
        // Split across frames: iterations are counted across chunks, in order.
        records(launches(1, &times[..10])),
        records(launches(2, &times[..5])),
        records(launches(1, &times[10..])),
    ];
    let (_, received) = run(&plan, frames);
    let iterations: Vec<u64> = dispatches(&received.lock().unwrap())
        .iter()
        .map(|d| {
            assert_eq!(d.kernel_id, 1, "copy is not included");
            d.start_ns / 10 + 1
        })
        .collect();
    assert_eq!(iterations, [2, 3, 20, 21, 22, 23, 24, 25]);
}

#[test]
fn dimension_reduction_and_aggregate_tables() {
    let plan = compile(&format!(
        r#"[[context]]
name = "c"
tracing = ["kernel_dispatch"]
counters.collect = ["SQ_WAVES"]
[[transform]]
name = "per-agent"
kind = "reduce_dimensions"
records = ["counter_sample"]
dimensions = ["DIMENSION_XCC", "DIMENSION_SHADER_ENGINE"]
op = "sum"
[[transform]]
name = "per-kernel"
kind = "aggregate"
records = ["kernel_dispatch"]
group_by = ["kernel_name"]
metrics = {{ calls = "count()", total = "sum(duration_ns)", longest = "max(duration_ns)", mean = "mean(duration_ns)" }}
{COLLECT}"#
    ));
    let counter = Meta::Counter(CounterInfo {
        id: 0,
        agent: 1,
        name: "SQ_WAVES".into(),
        description: String::new(),
        dimensions: Vec::new(),
    });
    let samples: Vec<CounterSample> = (0..8u16)
        .flat_map(|xcc| (0..4u16).map(move |se| (xcc, se)))
        .map(|(xcc, se)| CounterSample {
            dispatch_id: 9,
            xcc,
            shader_engine: se,
            value: f64::from(xcc * 4 + se),
            ..Default::default()
        })
        .collect();
    let frames = vec![
        kernels(&["gemm", "copy"]),
        Frame {
            stream: 0,
            payload: Payload::Meta(vec![counter]),
        },
        records(Batch::CounterSample(samples)),
        records(launches(1, &[(0, 100), (200, 300)])),
        records(launches(2, &[(600, 40)])),
    ];
    let (_, received) = run(&plan, frames);
    let received = received.lock().unwrap();
    let reduced: Vec<f64> = received
        .chunks
        .iter()
        .filter_map(|c| match &c.batch {
            Batch::CounterSample(s) => Some(s.iter().map(|s| s.value)),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        reduced,
        [(0..32).sum::<u16>() as f64],
        "32 instances summed into one"
    );
    let table = &received.tables[0];
    assert_eq!(
        table.columns,
        ["kernel_name", "calls", "total", "longest", "mean"]
    );
    use evalexpr::Value::{Float, Int, String as S};
    assert_eq!(
        table.rows,
        [
            vec![
                S("copy".into()),
                Int(1),
                Float(40.0),
                Float(40.0),
                Float(40.0)
            ],
            vec![
                S("gemm".into()),
                Int(2),
                Float(400.0),
                Float(300.0),
                Float(200.0)
            ],
        ]
    );
}

#[test]
fn aggregates_group_by_added_columns_as_their_text() {
    let plan = compile(&format!(
        r#"[[context]]
name = "c"
tracing = ["kernel_dispatch"]
[[transform]]
name = "size"
kind = "derive"
column = "size"
expression = "if(duration_ns > 50, \"long\", \"short\")"
[[transform]]
name = "per-size"
kind = "aggregate"
group_by = ["size"]
metrics = {{ calls = "count()" }}
{COLLECT}"#
    ));
    let frames = vec![
        kernels(&["gemm"]),
        records(launches(1, &[(0, 100), (200, 10), (300, 20)])),
    ];
    let (_, received) = run(&plan, frames);
    use evalexpr::Value::{Int, String as S};
    assert_eq!(
        received.lock().unwrap().tables[0].rows,
        [
            vec![S("long".into()), Int(1)],
            vec![S("short".into()), Int(2)]
        ]
    );
}

#[test]
fn a_failing_sink_stops_alone_and_failing_records_are_reported() {
    let mut plan = compile(&format!(
        "{TRACE}[[transform]]\nname = \"f\"\nkind = \"filter\"\npredicate = \"duration_ns > 0\"\n{COLLECT}[[sink]]\nname = \"broken\"\nkind = \"csv\"\npath = \"other\"\n"
    ));
    // An expression that validates but fails on every record at run time.
    plan.stages.transforms[0].op =
        rocflow::plan::TransformOpPlan::Filter(rocflow::plan::transform::filter::Options {
            predicate: "duration_ns / (end_ns - end_ns) > 1".into(),
        });
    let frames = vec![kernels(&["k"]), records(launches(1, &[(0, 10), (20, 10)]))];
    let (report, received) = run(&plan, frames);
    assert!(dispatches(&received.lock().unwrap()).is_empty());
    let (name, count, first) = &report.failures[0];
    assert_eq!((name.as_str(), *count), ("f", 2));
    assert!(first[0].contains("kernel_dispatch record #0"), "{first:?}");

    plan.stages.transforms.clear();
    plan.stages
        .routes
        .iter_mut()
        .for_each(|r| r.transforms.clear());
    let frames = vec![kernels(&["k"]), records(launches(1, &[(0, 10), (20, 10)]))];
    let (report, received) = run(&plan, frames);
    assert_eq!(
        dispatches(&received.lock().unwrap()).len(),
        2,
        "the healthy sink got everything"
    );
    let broken = report.sinks.iter().find(|s| s.name == "broken").unwrap();
    assert!(
        broken
            .outcome
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("disk full")
    );
    assert!(
        report
            .sinks
            .iter()
            .find(|s| s.name == "collect")
            .unwrap()
            .outcome
            .is_ok()
    );
    assert_eq!(report.records_in, [(RecordKind::KernelDispatch, 2)]);
}

/// The SDK fills a buffer as operations complete, so an enclosing call comes after the
/// calls it encloses; sinks get each chunk in start-time order.
#[test]
fn records_reach_sinks_in_start_order() {
    let plan = compile(&format!("{TRACE}{COLLECT}"));
    let completed_order = launches(1, &[(50, 10), (10, 5), (30, 100), (10, 1), (0, 200)]);
    let frames = vec![kernels(&["k"]), records(completed_order)];
    let (_, received) = run(&plan, frames);
    let got: Vec<(u64, u64)> = dispatches(&received.lock().unwrap())
        .iter()
        .map(|d| (d.start_ns, d.dispatch_id))
        .collect();
    // Equal starts keep their arrival order.
    assert_eq!(
        got,
        [(0, 1004), (10, 1001), (10, 1003), (30, 1002), (50, 1000)]
    );
}
