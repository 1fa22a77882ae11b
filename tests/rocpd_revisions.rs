//! rocpd databases of schema 3.0.1 to 3.0.4 (rocprofiler-sdk 1.3.5 to 1.4.1), and ones
//! whose JSON cells are LZ4-compressed blobs (its writer's default since 1.4): each reads
//! as the 3.0.0 database it was revised from, record for record, with the graph launches,
//! HIP events and SPM values a revision adds as records of their own, and the graph nodes
//! of dispatches and copies in those records' graph columns; what a revision adds
//! that no rocflow record holds is counted in one note, never taken for something else.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use rocflow::record::{Batch, GraphLaunch, HipEventBarrier, RecordKind};
use rocflow::sdk::{AgentType, Domain};
use rocflow::source::{Rocpd, Source};
use rocflow::wire::Payload;
use support::{assert_success, rocflow, rocprofv3_db, text};

/// The records of a database by kind, the GPUs it describes, and its source's note.
fn read(path: &Path) -> (BTreeMap<RecordKind, Vec<Batch>>, usize, Option<String>) {
    let mut source = Rocpd::open(&[path.to_owned()]).unwrap();
    let note = source.note().map(str::to_owned);
    let mut batches: BTreeMap<RecordKind, Vec<Batch>> = BTreeMap::new();
    let mut agents = Vec::new();
    while let Some(frame) = source.next_frame() {
        match frame.payload {
            Payload::Meta(items) => agents.extend(items.into_iter().filter_map(|m| match m {
                rocflow::record::Meta::Agent(a) => Some(a),
                _ => None,
            })),
            Payload::Records(batch) => batches.entry(batch.kind()).or_default().push(batch),
            Payload::Args(_) | Payload::Trace(_) => {}
        }
    }
    source.finish().unwrap();
    let gpus = agents
        .iter()
        .filter(|a| a.agent_type == AgentType::Gpu)
        .count();
    (batches, gpus, note)
}

#[test]
fn every_revision_of_schema_3_reads_as_the_database_it_revised() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("3.0.0.db");
    rocprofv3_db::write(&base, 41, "node-r", 8);
    let (records, gpus, note) = read(&base);
    assert_eq!(note, None);
    assert_eq!(gpus, 1);
    assert!(records.contains_key(&RecordKind::CounterSample));
    for version in rocprofv3_db::REVISIONS {
        let path = dir.path().join(format!("{version}.db"));
        rocprofv3_db::write(&path, 41, "node-r", 8);
        rocprofv3_db::revise(&path, 41, version);
        let (mut revised, revised_gpus, note) = read(&path);
        // The graph nodes of 3.0.2 are the dispatches' own; once checked, the dispatches
        // are those of 3.0.0.
        let nodes = graph_nodes(revised.get_mut(&RecordKind::KernelDispatch).unwrap());
        let graph_dispatches = match *version >= "3.0.2" {
            true => rocprofv3_db::GRAPH_DISPATCHES as usize,
            false => 0,
        };
        let mut ids: Vec<u64> = nodes.keys().copied().collect();
        ids.sort_unstable();
        let in_graph: BTreeMap<u64, (u64, u64)> = (ids.iter().take(graph_dispatches))
            .map(|&id| (id, (1 + id % 3, id % 2)))
            .collect();
        let want = ids
            .iter()
            .map(|&id| (id, in_graph.get(&id).copied().unwrap_or((0, 0))))
            .collect();
        assert_eq!(nodes, want, "{version}");
        // Graph launches (3.0.2) and HIP events (3.0.4) are records of their own.
        let launches = graph_launches(revised.remove(&RecordKind::GraphLaunch));
        let barriers = hip_event_barriers(revised.remove(&RecordKind::HipEventBarrier));
        // The SPM values of 3.0.3 are SPM samples at their sample's time, of no dispatch.
        let spm: Vec<(u64, u16, u16, u16, f64)> = (revised.remove(&RecordKind::SpmSample))
            .unwrap_or_default()
            .into_iter()
            .flat_map(|batch| match batch {
                Batch::SpmSample(samples) => samples,
                _ => unreachable!("a batch of its kind"),
            })
            .map(|s| (s.timestamp_ns, s.xcc, s.shader_engine, s.instance, s.value))
            .collect();
        let expected_spm = match *version >= "3.0.3" {
            true => (0..rocprofv3_db::SPM_VALUES)
                .map(|xcc| (5000, xcc as u16, 0, 0, 10.0 * (xcc + 1) as f64))
                .collect(),
            false => Vec::new(),
        };
        assert_eq!(spm, expected_spm, "{version}");
        // The NIC of 3.0.1 is no GPU, and the SPM values of 3.0.3 no dispatch's counters.
        assert_eq!(revised_gpus, gpus, "{version}");
        assert_eq!(revised, records, "{version}");
        let launched = if *version >= "3.0.2" {
            rocprofv3_db::GRAPH_LAUNCHES
        } else {
            0
        };
        assert_eq!(launches.len() as u64, launched, "{version}");
        for (n, launch) in (1..).zip(&launches) {
            let span = (launch.start_ns, launch.end_ns);
            assert_eq!(span, (1000 * n, 1000 * n + 500), "{version}");
            assert_eq!(
                (launch.graph_exec_id, launch.dispatch_count),
                (n, 2),
                "{version}"
            );
            assert_eq!((launch.agent, launch.queue), (1, 0), "{version}");
        }
        let recorded = if *version >= "3.0.4" {
            rocprofv3_db::HIP_EVENTS
        } else {
            0
        };
        assert_eq!(barriers.len() as u64, recorded, "{version}");
        for (n, barrier) in (1..).zip(&barriers) {
            let operation = Domain::HipEvent.operation_name(barrier.operation_id);
            let want = if n % 2 == 0 { "WAIT" } else { "RECORD" };
            assert_eq!(operation, Some(want), "{version}");
            assert_eq!(barrier.event, 0xe000 + n / 2, "{version}");
            assert_eq!(barrier.start_ns, 2000 * n, "{version}");
        }
        let note = note.unwrap_or_default();
        assert!(!note.contains("does not know"), "{version}: {note}");
        assert!(!note.contains("rocpd_graph_launch"), "{version}: {note}");
        assert!(!note.contains("rocpd_hip_event"), "{version}: {note}");
        assert!(!note.contains("SPM"), "{version}: {note}");
        // The graph nodes are read, so no note counts them.
        assert!(!note.contains("HIP graph nodes"), "{version}: {note}");
    }
}

/// Each dispatch's graph node by dispatch id, taken off the dispatches (left outside any
/// graph).
fn graph_nodes(batches: &mut [Batch]) -> BTreeMap<u64, (u64, u64)> {
    let each = batches.iter_mut().flat_map(|batch| match batch {
        Batch::KernelDispatch(dispatches) => dispatches,
        other => panic!("a {:?} batch of dispatches", other.kind()),
    });
    each.map(|d| {
        let node = (d.graph_exec_id, d.graph_node_id);
        (d.graph_exec_id, d.graph_node_id) = (0, 0);
        (d.dispatch_id, node)
    })
    .collect()
}

/// The graph launches of a database's batches, in order.
fn graph_launches(batches: Option<Vec<Batch>>) -> Vec<GraphLaunch> {
    let each = batches.into_iter().flatten().map(|batch| match batch {
        Batch::GraphLaunch(launches) => launches,
        other => panic!("a {:?} batch of graph launches", other.kind()),
    });
    each.flatten().collect()
}

/// The HIP event barriers of a database's batches, in order.
fn hip_event_barriers(batches: Option<Vec<Batch>>) -> Vec<HipEventBarrier> {
    let each = batches.into_iter().flatten().map(|batch| match batch {
        Batch::HipEventBarrier(barriers) => barriers,
        other => panic!("a {:?} batch of HIP event barriers", other.kind()),
    });
    each.flatten().collect()
}

#[test]
fn a_revised_database_has_nothing_left_out_to_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    rocprofv3_db::write(&path, 42, "node-s", 4);
    rocprofv3_db::revise(&path, 42, "3.0.4");
    let out = rocflow(&["inspect", "--json", "new.db"], dir.path(), &[]);
    assert_success(&out);
    let stderr = text(&out.stderr);
    // The dispatches' graph nodes are read into their records.
    assert!(!stderr.contains("HIP graph nodes"), "{stderr}");
    assert!(!stderr.contains("does not know"), "{stderr}");
    assert!(!stderr.contains("rocpd_graph_launch"), "{stderr}");
    assert!(!stderr.contains("rocpd_hip_event"), "{stderr}");
    // Its SPM values are read, so no note counts them.
    assert!(!stderr.contains("SPM"), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["records"]["kernel_dispatch"], 4);
    assert_eq!(
        json["records"]["graph_launch"],
        rocprofv3_db::GRAPH_LAUNCHES
    );
    assert_eq!(
        json["records"]["hip_event_barrier"],
        rocprofv3_db::HIP_EVENTS
    );
    assert_eq!(json["records"]["spm_sample"], rocprofv3_db::SPM_VALUES);
}

/// Every JSON cell compressed, half as LZ4 frames and half as sized LZ4 blocks: the
/// database reads as its plain self, marker messages and agents' properties included.
#[test]
fn lz4_compressed_cells_read_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, packed) = (dir.path().join("plain.db"), dir.path().join("lz4.db"));
    rocprofv3_db::write(&plain, 43, "node-z", 8);
    rocprofv3_db::write(&packed, 43, "node-z", 8);
    let conn = rusqlite::Connection::open(&packed).unwrap();
    let tables: Vec<String> = conn
        .prepare(
            "SELECT m.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c \
                  WHERE m.type = 'table' AND c.name = 'extdata'",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(tables.len() > 10, "{tables:?}");
    let mut compressed = 0;
    for table in tables {
        let rows: Vec<(i64, String)> = conn
            .prepare(&format!("SELECT rowid, extdata FROM `{table}`"))
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for (rowid, json) in rows {
            let blob = if rowid % 2 == 0 {
                lz4_flex::block::compress_prepend_size(json.as_bytes())
            } else {
                let mut frame = lz4_flex::frame::FrameEncoder::new(Vec::new());
                frame.write_all(json.as_bytes()).unwrap();
                frame.finish().unwrap()
            };
            conn.execute(
                &format!("UPDATE `{table}` SET extdata = ?1 WHERE rowid = ?2"),
                rusqlite::params![blob, rowid],
            )
            .unwrap();
            compressed += 1;
        }
    }
    drop(conn);
    assert!(compressed > 50, "{compressed}");
    let (records, gpus, note) = read(&plain);
    let (unpacked, unpacked_gpus, unpacked_note) = read(&packed);
    assert_eq!((unpacked_gpus, unpacked_note), (gpus, note));
    assert_eq!(unpacked, records);
    // The messages came from the blobs: a database whose blobs are not LZ4 has none.
    let markers = |batches: &[Batch]| -> usize {
        batches
            .iter()
            .map(|b| match b {
                Batch::Marker(m) => m.iter().filter(|m| m.message != Default::default()).count(),
                _ => 0,
            })
            .sum()
    };
    assert!(markers(&unpacked[&RecordKind::Marker]) > 0);
}
