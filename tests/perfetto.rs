//! The Perfetto sink as users run it: `rocflow replay` into a `.pftrace`, decoded with
//! Perfetto's official protobuf schema (the PyPI `perfetto` package, through
//! `perfetto_decode.py`) and checked against the records in the spool.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rocflow::record::{Batch, Meta};
use rocflow::spool::{SpoolReader, SpoolWriter};
use rocflow::wire::Payload;
use serde_json::Value;
use support::cxxfilt::Demangler;
use support::names::Names;

const CONTEXT: &str = concat!(
    support::generated_pipeline!("perfetto", "t"),
    support::sink!("trace", "perfetto", "out/trace.pftrace"),
);

/// A generated run of two processes, replayed with `options` for the sink; returns the
/// directory and the files the sink wrote.
fn replay(options: &str) -> (tempfile::TempDir, Vec<PathBuf>) {
    let pipeline = format!("{CONTEXT}options = {{ {options} }}\n");
    let args = ["--records", "40000", "--processes", "2", "--seed", "11"];
    let dir = support::generated("pipeline.toml", &pipeline, &args);
    let out = support::rocflow(&["replay", "run.rfraw", "pipeline.toml"], dir.path(), &[]);
    support::assert_success(&out);
    let stdout = support::text(&out.stdout);
    let files: Vec<PathBuf> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with(".pftrace"))
        .map(|l| dir.path().join(l))
        .collect();
    assert!(!files.is_empty(), "{stdout}");
    (dir, files)
}

/// The files decoded with the official schema: per file, its tracks and events, on the
/// boot time clock.
fn decode(files: &[PathBuf]) -> Vec<Value> {
    let decoded = support::decode_perfetto(files);
    for file in &decoded {
        let clocks = &file["clocks"][0];
        assert_eq!(clocks["primary"], 6, "the boot time clock");
    }
    decoded
}

/// A slice as a reader pairs it: the track it is on, its times, name and annotations.
#[derive(Debug, Clone)]
struct Slice {
    pid: u64,
    /// The track's name without its lane, or `thread TID` for a thread track.
    track: String,
    /// The name of the track's parent (an agent for device tracks).
    group: String,
    start: u64,
    end: u64,
    name: String,
    category: String,
    args: HashMap<String, u64>,
    flows: Vec<u64>,
    terminating: Vec<u64>,
}

/// A counter value: process, agent group, track name, time, value.
type Count = (u64, String, String, u64, String);

/// Pairs each file's begin and end events per track in time order, as trace_processor
/// does (ties in file order), checking that they nest; returns the slices and counter
/// values of all files.
fn slices(decoded: &[Value]) -> (Vec<Slice>, Vec<Count>) {
    let mut slices: Vec<Slice> = Vec::new();
    // Each slice's enclosing slice on its track.
    let mut outer: Vec<Option<usize>> = Vec::new();
    let mut counts = Vec::new();
    for file in decoded {
        let tracks = file["tracks"].as_object().unwrap();
        let track = |uuid: u64| &tracks[&uuid.to_string()];
        let pid = |mut uuid: u64| loop {
            let t = track(uuid);
            if let Some(pid) = t["pid"].as_u64() {
                return pid;
            }
            uuid = t["parent"].as_u64().expect("a track under a process");
        };
        let label = |uuid: u64| {
            let t = track(uuid);
            match t["tid"].as_u64() {
                Some(tid) => format!("thread {tid}"),
                None => {
                    let name = t["name"].as_str().unwrap();
                    let name = name.split(", lane ").next().unwrap();
                    match name {
                        // A lane of a thread's calls hangs under the thread.
                        "API calls" => label_of_thread(track(t["parent"].as_u64().unwrap())),
                        _ => name.to_owned(),
                    }
                }
            }
        };
        let group = |uuid: u64| {
            let parent = track(uuid)["parent"].as_u64().unwrap();
            track(parent)["name"].as_str().unwrap_or("").to_owned()
        };
        let mut by_track: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
        for event in file["events"].as_array().unwrap() {
            by_track
                .entry(event["track"].as_u64().unwrap())
                .or_default()
                .push(event);
        }
        for (uuid, mut events) in by_track {
            events.sort_by_key(|e| e["ts"].as_u64().unwrap());
            // Open slices: (index in `slices`, start).
            let mut open: Vec<usize> = Vec::new();
            for e in events {
                let ts = e["ts"].as_u64().unwrap();
                match e["type"].as_str().unwrap() {
                    "B" => {
                        let text = |key: &str| e[key].as_str().unwrap_or("").to_owned();
                        let ids = |key: &str| -> Vec<u64> {
                            e[key].as_array().map_or(Vec::new(), |a| {
                                a.iter().map(|v| v.as_u64().unwrap()).collect()
                            })
                        };
                        slices.push(Slice {
                            pid: pid(uuid),
                            track: label(uuid),
                            group: group(uuid),
                            start: ts,
                            end: 0,
                            name: text("name"),
                            category: text("category"),
                            args: e["args"].as_object().map_or(HashMap::new(), |a| {
                                a.iter()
                                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                                    .collect()
                            }),
                            flows: ids("flows"),
                            terminating: ids("terminating"),
                        });
                        outer.push(open.last().copied());
                        open.push(slices.len() - 1);
                    }
                    "E" => {
                        let index = open.pop().expect("an end without a begin");
                        slices[index].end = ts;
                    }
                    "C" => counts.push((
                        pid(uuid),
                        group(uuid),
                        track(uuid)["name"].as_str().unwrap().to_owned(),
                        ts,
                        format!("{:.1}", e["value"].as_f64().unwrap()),
                    )),
                    other => panic!("an event rocflow does not write: {other}"),
                }
            }
            assert!(open.is_empty(), "track {uuid} leaves slices open");
        }
    }
    // Each slice lies within the one around it.
    for (inner, outer) in outer.iter().enumerate() {
        if let Some(outer) = *outer {
            let (a, b) = (&slices[outer], &slices[inner]);
            assert!(a.start <= b.start && b.end <= a.end, "{b:?} crosses {a:?}");
        }
    }
    (slices, counts)
}

fn label_of_thread(thread: &Value) -> String {
    format!("thread {}", thread["tid"].as_u64().unwrap())
}

/// What the spool holds, per kind: the slices a trace of it must show, as
/// (pid, track, start, end, name, detail) with the detail a kind-specific id.
#[derive(Default)]
struct Expected {
    kernels: Vec<(u64, String, u64, u64, String, u64)>,
    api: Vec<(u64, String, u64, u64, String, u64)>,
    markers: Vec<(u64, String, u64, u64, String, u64)>,
    copies: Vec<(u64, String, u64, u64, String, u64)>,
    counts: Vec<Count>,
}

fn expected(spool: &Path) -> Expected {
    let mut e = Expected::default();
    let mut names = Names::default();
    let mut demangler = Demangler::default();
    // (pid, agent, dispatch, counter) -> (time, sum)
    let mut sums: BTreeMap<(u64, u32, u64, String), (u64, f64)> = BTreeMap::new();
    for frame in SpoolReader::open(spool).unwrap() {
        let frame = frame.unwrap();
        let s = frame.stream;
        match frame.payload {
            Payload::Meta(items) => names.learn(s, items),
            Payload::Records(Batch::Api(records)) => e.api.extend(records.iter().map(|r| {
                let name = rocflow::sdk::Domain::HipRuntimeApi
                    .operation_name(r.operation_id)
                    .unwrap();
                let track = format!("thread {}", r.tid);
                let (pid, name) = (r.pid.into(), name.to_owned());
                (pid, track, r.start_ns, r.end_ns, name, r.correlation_id)
            })),
            Payload::Records(Batch::Marker(records)) => e.markers.extend(records.iter().map(|r| {
                let message = names.string(s, r.message).to_owned();
                let pid = r.pid.into();
                (pid, "markers".into(), r.start_ns, r.end_ns, message, 0)
            })),
            Payload::Records(Batch::KernelDispatch(records)) => {
                e.kernels.extend(records.iter().map(|r| {
                    let track = format!("GPU {}/queue {}", r.agent, r.queue);
                    let name = demangler.name(names.kernel(s, r.kernel_id));
                    let pid = r.pid.into();
                    (pid, track, r.start_ns, r.end_ns, name, r.dispatch_id)
                }))
            }
            Payload::Records(Batch::MemoryCopy(records)) => {
                e.copies.extend(records.iter().map(|r| {
                    // Host to device: the destination GPU's engines.
                    let track = format!("GPU {}/copies host to device", r.dst_agent);
                    let pid = r.pid.into();
                    (
                        pid,
                        track,
                        r.start_ns,
                        r.end_ns,
                        "HOST_TO_DEVICE".into(),
                        r.bytes,
                    )
                }))
            }
            Payload::Records(Batch::CounterSample(records)) => {
                for r in records {
                    let name = names.counter(s, r.counter_id).to_owned();
                    let key = (r.pid.into(), r.agent, r.dispatch_id, name);
                    let sum = sums.entry(key).or_insert((r.timestamp_ns, 0.0));
                    sum.1 += r.value;
                }
            }
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) => {}
        }
    }
    e.counts = sums
        .into_iter()
        .map(|((pid, agent, _, name), (time, value))| {
            let group = format!("GPU {agent}");
            (pid, group, name, time, format!("{value:.1}"))
        })
        .collect();
    for list in [&mut e.kernels, &mut e.api, &mut e.markers, &mut e.copies] {
        list.sort();
    }
    e.counts.sort();
    e
}

/// The slices of one category, in the shape of [`Expected`]: device tracks are named
/// `GPU n/track`, and `detail` is read from the annotation `arg`.
fn of(slices: &[Slice], category: &str, arg: &str) -> Vec<(u64, String, u64, u64, String, u64)> {
    let mut list: Vec<_> = slices
        .iter()
        .filter(|s| s.category == category)
        .map(|s| {
            let track = match s.group.split(':').next() {
                Some(gpu) if gpu.starts_with("GPU ") => format!("{gpu}/{}", s.track),
                _ => s.track.clone(),
            };
            let detail = s.args.get(arg).copied().unwrap_or(0);
            (s.pid, track, s.start, s.end, s.name.clone(), detail)
        })
        .collect();
    list.sort();
    list
}

#[test]
fn the_trace_holds_every_record_once_with_its_ids_and_flows() {
    let (dir, files) = replay("");
    assert_eq!(files, [dir.path().join("out/trace.pftrace")]);
    let decoded = decode(&files);
    let (slices, mut counts) = slices(&decoded);
    let want = expected(&dir.path().join("run.rfraw"));

    // Every kernel, API call, marker range and copy once, on its track, with its times.
    assert_eq!(of(&slices, "kernel_dispatch", "dispatch_id"), want.kernels);
    assert_eq!(of(&slices, "hip_runtime_api", "correlation_id"), want.api);
    assert_eq!(
        of(&slices, "marker_core_api", "correlation_id"),
        want.markers
    );
    assert_eq!(of(&slices, "memory_copy", "bytes"), want.copies);
    assert_eq!(
        slices.len(),
        want.kernels.len() + want.api.len() + want.markers.len() + want.copies.len()
    );

    // Kernels carry their launch parameters.
    let kernel = slices
        .iter()
        .find(|s| s.category == "kernel_dispatch")
        .unwrap();
    for arg in [
        "correlation_id",
        "dispatch_id",
        "kernel_id",
        "queue",
        "grid_size",
        "workgroup_size",
        "lds_bytes",
        "scratch_bytes",
        "vgpr_count",
        "sgpr_count",
    ] {
        assert!(kernel.args.contains_key(arg), "{arg} in {kernel:?}");
    }

    // Each API call starts a flow that the kernel or copy it launched ends.
    let mut starts: HashMap<u64, &Slice> = HashMap::new();
    for s in slices.iter().filter(|s| !s.flows.is_empty()) {
        assert_eq!(s.category, "hip_runtime_api");
        assert!(starts.insert(s.flows[0], s).is_none(), "a flow id twice");
    }
    let mut ends = 0;
    for s in slices.iter().filter(|s| !s.terminating.is_empty()) {
        let start = starts
            .get(&s.terminating[0])
            .unwrap_or_else(|| panic!("a flow without its start: {s:?}"));
        assert_eq!(start.args["correlation_id"], s.args["correlation_id"]);
        assert_eq!(start.pid, s.pid);
        assert!(start.start <= s.start);
        ends += 1;
    }
    assert_eq!(ends, starts.len(), "a flow without its end");
    assert_eq!(ends, want.kernels.len() + want.copies.len());

    // Counter values: one per dispatch and counter, summed over dimensions.
    for count in &mut counts {
        count.1 = count.1.split(':').next().unwrap().to_owned();
    }
    counts.sort();
    assert_eq!(counts, want.counts);
}

#[test]
fn split_files_each_stand_alone_and_options_choose_what_is_shown() {
    let (dir, files) = replay(
        r#"split_size = "64KiB", tracks = ["kernel", "api"], flows = false, annotations = false"#,
    );
    assert!(files.len() >= 3, "{files:?}");
    for (i, file) in files.iter().enumerate().skip(1) {
        assert_eq!(file, &dir.path().join(format!("out/trace.{i}.pftrace")));
    }
    for file in &files {
        let size = std::fs::metadata(file).unwrap().len();
        assert!(size > 0, "{} is empty", file.display());
    }
    // Each file decodes alone: its own descriptors and interning, slices closed.
    let decoded = decode(&files);
    let (slices, counts) = slices(&decoded);
    let want = expected(&dir.path().join("run.rfraw"));
    assert_eq!(of(&slices, "kernel_dispatch", "none"), {
        let mut kernels = want.kernels.clone();
        kernels.iter_mut().for_each(|k| k.5 = 0);
        kernels
    });
    assert_eq!(slices.len(), want.kernels.len() + want.api.len());
    assert!(counts.is_empty(), "counters were not asked for");
    assert!(
        slices
            .iter()
            .all(|s| s.args.is_empty() && s.flows.is_empty())
    );
    // No stale hidden files are left beside the trace.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

#[test]
fn a_coarser_time_unit_puts_every_event_at_its_time_rounded_down() {
    let (dir, files) = replay(r#"time_unit = "us""#);
    let decoded = decode(&files);
    // The trace's own clock counts microseconds, tied to the boot time clock.
    let snapshot = &decoded[0]["clocks"][0];
    assert_eq!(snapshot["clocks"], serde_json::json!([6, 128]));
    assert_eq!(snapshot["units"], serde_json::json!([0, 1000]));
    // Read back in boot time nanoseconds, every slice is where it was, rounded down to
    // its microsecond; rounding down keeps every slice nested in its parent.
    let (slices, _) = slices(&decoded);
    let want = expected(&dir.path().join("run.rfraw"));
    let rounded = |list: &[(u64, String, u64, u64, String, u64)]| {
        let mut list = list.to_vec();
        for slice in &mut list {
            (slice.2, slice.3) = (slice.2 / 1000 * 1000, slice.3 / 1000 * 1000);
        }
        list.sort();
        list
    };
    assert_eq!(
        of(&slices, "kernel_dispatch", "dispatch_id"),
        rounded(&want.kernels)
    );
    assert_eq!(
        of(&slices, "hip_runtime_api", "correlation_id"),
        rounded(&want.api)
    );
    assert_eq!(of(&slices, "memory_copy", "bytes"), rounded(&want.copies));
    assert!(
        want.kernels.iter().any(|k| k.2 % 1000 != 0),
        "the run has times that are not whole microseconds"
    );
}

#[test]
fn memory_over_time_follows_allocations_and_scratch() {
    use rocflow::record::{MemoryAllocation, ScratchMemory};
    use rocflow::wire;

    let dir = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    let gpu = rocflow::generate::mi300x(1);
    let process = rocflow::generate::process(7, 0);
    wire::encode_meta(0, &[Meta::Process(process), Meta::Agent(gpu)], &mut frames);
    // Allocate A (1000 B) and B (500 B), free A, then free memory never seen allocated.
    let allocation = |start: u64, address: u64, bytes: u64, operation_id: u8| MemoryAllocation {
        pid: 7,
        tid: 7,
        agent: 1,
        start_ns: start,
        end_ns: start + 10,
        address,
        bytes,
        operation_id,
        ..Default::default()
    };
    let allocations = vec![
        allocation(100, 0xa000, 1000, 1),
        allocation(200, 0xb000, 500, 1),
        allocation(300, 0xa000, 0, 3),
        allocation(400, 0xc000, 0, 3),
    ];
    wire::encode_records(0, &Batch::MemoryAllocation(allocations), &mut frames);
    let scratch = |start: u64, bytes: u64, operation_id: u8| ScratchMemory {
        pid: 7,
        tid: 7,
        agent: 1,
        start_ns: start,
        end_ns: start + 10,
        bytes,
        operation_id,
        ..Default::default()
    };
    let scratch = vec![scratch(150, 4096, 1), scratch(350, 0, 2)];
    wire::encode_records(0, &Batch::ScratchMemory(scratch), &mut frames);
    let mut writer = SpoolWriter::create(&dir.path().join("run.rfraw")).unwrap();
    writer.write(&frames).unwrap();
    writer.finish().unwrap();
    let pipeline = CONTEXT.replace(
        r#"tracing = ["kernel_dispatch", "hip_runtime_api", "memory_copy", "marker_core_api"]"#,
        r#"tracing = ["memory_allocation", "scratch_memory"]"#,
    );
    std::fs::write(dir.path().join("pipeline.toml"), pipeline).unwrap();
    let out = support::rocflow(&["replay", "run.rfraw", "pipeline.toml"], dir.path(), &[]);
    support::assert_success(&out);

    let decoded = decode(&[dir.path().join("out/trace.pftrace")]);
    let (slices, mut counts) = slices(&decoded);
    assert!(slices.is_empty());
    counts.sort_by_key(|c| (c.2.clone(), c.3));
    let group = "GPU 1: AMD Instinct MI300X (gfx942)".to_owned();
    let count = |name: &str, time: u64, value: f64| {
        (
            7,
            group.clone(),
            name.to_owned(),
            time,
            format!("{value:.1}"),
        )
    };
    assert_eq!(
        counts,
        [
            count("allocated memory", 110, 1000.0),
            count("allocated memory", 210, 1500.0),
            count("allocated memory", 310, 500.0),
            count("scratch memory", 160, 4096.0),
            count("scratch memory", 360, 0.0),
        ]
    );
    let tracks = decoded[0]["tracks"].as_object().unwrap();
    let bytes_tracks = tracks.values().filter(|t| t["unit"] == 3).count();
    assert_eq!(bytes_tracks, 2, "memory tracks count bytes");
}

/// `rocflow run` of the test application with a Perfetto sink; returns the decoded trace.
fn run_app(app_args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = "[pipeline]\nname = \"p\"\n[[context]]\nname = \"t\"\ntracing = [\"kernel_dispatch\", \"hip_runtime_api\"]\n[[sink]]\nname = \"trace\"\nkind = \"perfetto\"\npath = \"trace.pftrace\"\n";
    std::fs::write(dir.path().join("p.toml"), pipeline).unwrap();
    let app = support::sim_app();
    let app = [&[app.to_str().unwrap()], app_args].concat();
    let out = support::run_on("sim", "p.toml", &app, dir.path(), &[]);
    let trace = dir.path().join("trace.pftrace");
    assert!(trace.is_file(), "{}", String::from_utf8_lossy(&out.stderr));
    decode(&[trace]).remove(0)
}

#[test]
fn a_run_the_application_crashed_in_ends_with_a_marker_saying_so() {
    let instants = |trace: &Value| -> Vec<Value> {
        let events = trace["events"].as_array().unwrap();
        events
            .iter()
            .filter(|e| e["type"] == "I")
            .cloned()
            .collect()
    };
    assert_eq!(instants(&run_app(&["exit", "0"])), Vec::<Value>::new());

    let trace = run_app(&["crash"]);
    let marks = instants(&trace);
    assert_eq!(marks.len(), 1, "one process, one marker: {marks:?}");
    let mark = &marks[0];
    assert!(
        mark["name"]
            .as_str()
            .unwrap()
            .contains("killed by signal 11"),
        "{mark}"
    );
    let track = &trace["tracks"][mark["track"].as_u64().unwrap().to_string()];
    assert!(
        track["pid"].is_u64() && track["tid"].is_null(),
        "a process track: {track}"
    );
    let last_begin = trace["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "B")
        .map(|e| e["ts"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(
        mark["ts"].as_u64().unwrap(),
        last_begin,
        "at the last record received"
    );
}
