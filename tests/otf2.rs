//! The OTF2 sink as users run it: `rocflow replay` into an archive, read back with
//! `otf2-print` (Debian's `otf2-tools`) and checked against the records in the spool.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};

use rocflow::record::Batch;
use rocflow::spool::SpoolReader;
use rocflow::wire::Payload;
use support::cxxfilt::Demangler;
use support::names::Names;
use support::{assert_fails, assert_says, otf2_print, output_and_most_threads, text};

const PIPELINE: &str = concat!(
    support::generated_pipeline!("otf2", "t"),
    support::sink!("trace", "otf2", "out/trace"),
    support::sink!("tables", "csv", "out/tables"),
);

fn command(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rocflow"));
    command
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir);
    command
}

fn rocflow(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    command(args, dir, env).output().expect("rocflow runs")
}

/// A generated run of two processes, and the pipeline.
fn setup() -> tempfile::TempDir {
    let args = ["--records", "40000", "--processes", "2", "--seed", "11"];
    support::generated("otf2.toml", PIPELINE, &args)
}

/// The text between `"` after `key` in `line`.
fn quoted<'a>(line: &'a str, key: &str) -> &'a str {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    let rest = &rest[rest.find('"').unwrap() + 1..];
    &rest[..rest.find('"').unwrap()]
}

/// The number after `key` in `line` (up to `,`, `)` or the end).
fn number(line: &str, key: &str) -> String {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    rest.trim_start()
        .split([',', ')', ' '])
        .next()
        .unwrap()
        .to_owned()
}

/// An attribute's value on an attribute line: `("name" <id>; UINT64; value)`.
fn attribute(line: &str, name: &str) -> Option<u64> {
    let at = line.find(&format!("(\"{name}\""))?;
    let value = line[at..].split(';').nth(2)?.split(')').next()?;
    Some(value.trim().parse().unwrap())
}

/// A location as the global definitions describe it.
#[derive(Debug)]
struct Location {
    /// The name without its lane suffix.
    track: String,
    kind: String,
    events: u64,
    /// The process it belongs to: its group's name, or that of the group's creator.
    process: String,
    group_kind: String,
}

struct Definitions {
    locations: HashMap<u64, Location>,
    offset: u64,
    length: u64,
}

fn definitions(archive: &Path) -> Definitions {
    let text = otf2_print(&["-G"], archive);
    let mut groups: HashMap<String, (String, String)> = HashMap::new();
    let mut locations = HashMap::new();
    let (mut offset, mut length) = (0, 0);
    for line in text.lines() {
        let id = || number(line, line.split_whitespace().next().unwrap());
        if line.starts_with("CLOCK_PROPERTIES") {
            assert_eq!(number(line, "Ticks per Seconds:"), "1000000000");
            offset = number(line, "Global Offset:").parse().unwrap();
            length = number(line, "Length:").parse().unwrap();
        } else if line.starts_with("LOCATION_GROUP ") {
            let kind = number(line, "Type:");
            let process = match kind.as_str() {
                "PROCESS" => quoted(line, "Name:").to_owned(),
                _ => quoted(line, "Creator:").to_owned(),
            };
            groups.insert(id(), (process, kind));
        } else if line.starts_with("LOCATION ") {
            let group = &line[line.rfind('<').unwrap() + 1..line.rfind('>').unwrap()];
            let (process, group_kind) = groups[group].clone();
            let name = quoted(line, "Name:");
            locations.insert(
                id().parse().unwrap(),
                Location {
                    track: name.split(", lane ").next().unwrap().to_owned(),
                    kind: number(line, "Type:"),
                    events: number(line, "# Events:").parse().unwrap(),
                    process,
                    group_kind,
                },
            );
        }
    }
    Definitions {
        locations,
        offset,
        length,
    }
}

/// One event as `otf2-print` shows it.
#[derive(Debug, Clone)]
struct Event {
    kind: String,
    location: u64,
    time: u64,
    /// The region (enter, leave) or metric member (metric) name.
    name: String,
    value: Option<f64>,
    attributes: String,
}

fn events(archive: &Path) -> Vec<Event> {
    let text = otf2_print(&[], archive);
    let mut events: Vec<Event> = Vec::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some(kind @ ("ENTER" | "LEAVE" | "METRIC")) => {
                let location = fields.next().unwrap().parse().unwrap();
                let time = fields.next().unwrap().parse().unwrap();
                let (name, value) = if kind == "METRIC" {
                    let value = line[line.find("DOUBLE;").unwrap() + 7..].trim();
                    let value = value.trim_end_matches(')').parse().unwrap();
                    (quoted(line, "Value: ("), Some(value))
                } else {
                    (quoted(line, "Region:"), None)
                };
                events.push(Event {
                    kind: kind.to_owned(),
                    location,
                    time,
                    name: name.to_owned(),
                    value,
                    attributes: String::new(),
                });
            }
            Some("ADDITIONAL") => events.last_mut().unwrap().attributes = line.to_owned(),
            Some(other) if other.chars().all(|c| c.is_ascii_uppercase() || c == '_') => {
                panic!("an event rocflow does not write: {line}")
            }
            _ => {}
        }
    }
    events
}

/// What the spool holds, computed from its records: per (process, track) the spans a
/// location of that track must show, by region name and with their ids.
#[derive(Default)]
struct Expected {
    /// (process group name, track name) -> region name -> count.
    enters: BTreeMap<(String, String), BTreeMap<String, u64>>,
    /// (process, dispatch id, correlation id, kernel name) of every dispatch.
    dispatches: Vec<(String, u64, u64, String)>,
    /// (process, track, dispatch, counter) -> summed value.
    counters: BTreeMap<(String, String, u64, String), f64>,
    first: u64,
    last: u64,
}

fn expected(spool: &Path) -> Expected {
    let mut e = Expected {
        first: u64::MAX,
        ..Expected::default()
    };
    let mut names = Names::default();
    let mut demangler = Demangler::default();
    let process = |stream: u16| format!("app (pid {})", 4000 + stream);
    for frame in SpoolReader::open(spool).unwrap() {
        let frame = frame.unwrap();
        let s = frame.stream;
        let span = |e: &mut Expected, track: String, name: String, start: u64, end: u64| {
            *e.enters
                .entry((process(s), track))
                .or_default()
                .entry(name)
                .or_default() += 1;
            e.first = e.first.min(start);
            e.last = e.last.max(end);
        };
        match frame.payload {
            Payload::Meta(items) => names.learn(s, items),
            Payload::Records(Batch::Api(records)) => {
                for r in records {
                    let track = format!("thread {}", r.tid);
                    let name = match r.operation_id {
                        id if Some(id) == op("hipLaunchKernel") => "hipLaunchKernel",
                        _ => "hipMemcpyAsync",
                    };
                    span(&mut e, track, name.into(), r.start_ns, r.end_ns);
                }
            }
            Payload::Records(Batch::Marker(records)) => {
                for r in records {
                    let track = format!("thread {} markers", r.tid);
                    let message = names.string(s, r.message).to_owned();
                    span(&mut e, track, message, r.start_ns, r.end_ns);
                }
            }
            Payload::Records(Batch::KernelDispatch(records)) => {
                for r in records {
                    let track = format!("GPU {} queue {}", r.agent, r.queue);
                    let name = demangler.name(names.kernel(s, r.kernel_id));
                    span(&mut e, track, name.clone(), r.start_ns, r.end_ns);
                    e.dispatches
                        .push((process(s), r.dispatch_id, r.correlation_id, name));
                }
            }
            Payload::Records(Batch::MemoryCopy(records)) => {
                for r in records {
                    // Host to device: the destination GPU's copy engines.
                    let track = format!("GPU {} copies", r.dst_agent);
                    span(&mut e, track, "HOST_TO_DEVICE".into(), r.start_ns, r.end_ns);
                }
            }
            Payload::Records(Batch::CounterSample(records)) => {
                for r in records {
                    let key = (
                        process(s),
                        format!("GPU {} counters", r.agent),
                        r.dispatch_id,
                        names.counter(s, r.counter_id).to_owned(),
                    );
                    *e.counters.entry(key).or_default() += r.value;
                    e.first = e.first.min(r.timestamp_ns);
                    e.last = e.last.max(r.timestamp_ns);
                }
            }
            Payload::Records(_) | Payload::Args(_) | Payload::Trace(_) => {}
        }
    }
    e
}

fn op(name: &str) -> Option<i32> {
    let domain = rocflow::sdk::Domain::HipRuntimeApi;
    domain
        .operations()
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(id, _)| *id)
}

#[test]
fn the_archive_holds_every_record_in_order_with_its_definitions() {
    let dir = setup();
    let out = rocflow(&["replay", "run.rfraw", "otf2.toml"], dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let archive = dir.path().join("out/trace/traces.otf2");
    assert_says(&out.stdout, "out/trace/traces.otf2");
    let defs = definitions(&archive);
    let events = events(&archive);
    let want = expected(&dir.path().join("run.rfraw"));

    // Per location: time order, enter and leave balanced and nested, the count defined.
    let mut by_location: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
    for event in &events {
        by_location.entry(event.location).or_default().push(event);
    }
    assert_eq!(
        by_location.len(),
        defs.locations.len(),
        "a location without events"
    );
    let mut enters: BTreeMap<(String, String), BTreeMap<String, u64>> = BTreeMap::new();
    for (id, list) in &by_location {
        let location = &defs.locations[id];
        assert_eq!(location.events, list.len() as u64, "{location:?}");
        assert!(
            list.windows(2).all(|w| w[0].time <= w[1].time),
            "{location:?}"
        );
        let mut open: Vec<&str> = Vec::new();
        for event in list {
            match event.kind.as_str() {
                "ENTER" => {
                    open.push(&event.name);
                    *enters
                        .entry((location.process.clone(), location.track.clone()))
                        .or_default()
                        .entry(event.name.clone())
                        .or_default() += 1;
                }
                "LEAVE" => assert_eq!(open.pop(), Some(event.name.as_str()), "{location:?}"),
                _ => {}
            }
        }
        assert!(open.is_empty(), "{location:?} leaves regions open");
        assert!(event_kinds_fit(location), "{location:?}");
    }
    assert_eq!(enters, want.enters);

    // Kernels carry their dispatch and correlation ids.
    let mut dispatches: Vec<(String, u64, u64, String)> = events
        .iter()
        .filter(|e| e.kind == "ENTER" && defs.locations[&e.location].track.contains("queue"))
        .map(|e| {
            (
                defs.locations[&e.location].process.clone(),
                attribute(&e.attributes, "dispatch_id").unwrap(),
                attribute(&e.attributes, "correlation_id").unwrap(),
                e.name.clone(),
            )
        })
        .collect();
    dispatches.sort();
    let mut want_dispatches = want.dispatches.clone();
    want_dispatches.sort();
    assert_eq!(dispatches, want_dispatches);

    // Counters: one value per dispatch and counter, the sum over its dimensions.
    let counters: BTreeMap<(String, String, u64, String), f64> = events
        .iter()
        .filter(|e| e.kind == "METRIC")
        .map(|e| {
            let location = &defs.locations[&e.location];
            let dispatch = attribute(&e.attributes, "dispatch_id").unwrap();
            let key = (
                location.process.clone(),
                location.track.clone(),
                dispatch,
                e.name.clone(),
            );
            (key, e.value.unwrap())
        })
        .collect();
    assert_eq!(counters, want.counters);
    assert!(!counters.is_empty());

    // The clock spans every event, in nanoseconds.
    assert_eq!(defs.offset, want.first);
    assert_eq!(defs.offset + defs.length, want.last);
}

/// Host threads are CPU threads of a process; GPU work is on accelerator streams of an
/// accelerator group the process created; counters are metric locations.
fn event_kinds_fit(location: &Location) -> bool {
    match location.kind.as_str() {
        "CPU_THREAD" => location.track.starts_with("thread") && location.group_kind == "PROCESS",
        "ACCELERATOR_STREAM" => {
            location.track.starts_with("GPU") && location.group_kind == "ACCELERATOR"
        }
        "METRIC" => location.track.ends_with("counters") && location.group_kind == "ACCELERATOR",
        _ => false,
    }
}

/// Timelines place their spans in parallel: the archive's definitions and events do not
/// depend on how many threads did the work.
/// On eight threads, the two busiest locations are written while the run goes on, each by
/// a thread of its own; on one, every location at the end: the archive is the same.
#[test]
fn the_archive_is_the_same_on_any_number_of_threads() {
    // Long enough for a host thread's events to outgrow what is left for the end.
    let args = ["--records", "1000000", "--seed", "11"];
    let dir = support::generated("otf2.toml", PIPELINE, &args);
    // The archive's files, and the most threads writing locations live at once (a live
    // writer is named after its location).
    let archive = |threads: &str| {
        let env = [("RAYON_NUM_THREADS", threads)];
        let mut replay = command(&["replay", "run.rfraw", "otf2.toml"], dir.path(), &env);
        let (out, most) = output_and_most_threads(&mut replay, &["otf2 location *"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        // The anchor file holds the archive's random id; the rest is the archive's content.
        let trace = dir.path().join("out/trace");
        let events = std::fs::read_dir(trace.join("traces")).unwrap();
        let mut files: BTreeMap<String, Vec<u8>> = (events.map(|e| e.unwrap().path()))
            .map(|path| {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read(path).unwrap())
            })
            .collect();
        files.insert(
            "traces.def".into(),
            std::fs::read(trace.join("traces.def")).unwrap(),
        );
        (files, most[0])
    };
    let (one, live) = archive("1");
    assert!(
        one.len() > 10,
        "an event file per location: {:?}",
        one.keys()
    );
    assert_eq!(live, 0, "one thread writes no location live");
    // Eight threads give two live writers, taken by the host threads' API calls.
    let (eight, live) = archive("8");
    assert_eq!(live, 2, "locations written live at once");
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        eight.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &one {
        assert!(
            *bytes == eight[name],
            "{name} differs between 1 and 8 threads"
        );
    }
}

#[test]
fn without_the_library_the_sink_says_what_to_install_and_the_others_go_on() {
    let dir = setup();
    let out = rocflow(
        &["replay", "run.rfraw", "otf2.toml"],
        dir.path(),
        &[("ROCFLOW_OTF2_LIBRARY", "/nonexistent/libotf2.so")],
    );
    assert_fails(
        &out,
        1,
        &["sink `trace`", "apt-get install libotf2-trace-dev"],
    );
    assert!(dir.path().join("out/tables/kernel_dispatch.csv").is_file());
    let names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["tables"], "nothing of the OTF2 sink is left");
}

#[test]
fn a_directory_that_is_not_an_archive_is_left_alone() {
    let dir = setup();
    let target = dir.path().join("out/trace");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join("notes.txt"), "mine").unwrap();
    let out = rocflow(&["replay", "run.rfraw", "otf2.toml"], dir.path(), &[]);
    assert_fails(&out, 1, &["is not an earlier output"]);
    let names: Vec<String> = std::fs::read_dir(&target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["notes.txt"]);
    // A second replay over an earlier archive replaces it.
    std::fs::remove_dir_all(&target).unwrap();
    for _ in 0..2 {
        let out = rocflow(&["replay", "run.rfraw", "otf2.toml"], dir.path(), &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let hidden = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(hidden, 0);
}
